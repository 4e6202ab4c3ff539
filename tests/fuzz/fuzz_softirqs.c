/* /proc/softirqs: parse_softirqs, with room for every CPU and with too little. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t rx[PARSE_MAX_CPUS], tx[PARSE_MAX_CPUS];
	size_t n = SIZE_MAX, small_n = SIZE_MAX;
	int r = parse_softirqs((const char *)data, size, rx, tx, PARSE_MAX_CPUS, &n);
	int rs = parse_softirqs((const char *)data, size, rx, tx, 2, &small_n);

	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -E2BIG);
	if (r == 0)
		FUZZ_CHECK(n <= PARSE_MAX_CPUS);
	if (rs == 0)
		FUZZ_CHECK(small_n <= 2);
	return 0;
}
