/* /proc/net/softnet_stat: parse_softnet, with room for every row and with too little. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct softnet_cpu rows[PARSE_MAX_CPUS];
	size_t n = SIZE_MAX, small_n = SIZE_MAX;
	int r = parse_softnet((const char *)data, size, rows, PARSE_MAX_CPUS, &n);
	int rs = parse_softnet((const char *)data, size, rows, 2, &small_n);

	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -E2BIG);
	if (r == 0) {
		FUZZ_CHECK(n <= PARSE_MAX_CPUS);
		FUZZ_CHECK(rs == (n > 2 ? -E2BIG : 0));
	}
	if (rs == 0)
		FUZZ_CHECK(small_n <= 2);
	return 0;
}
