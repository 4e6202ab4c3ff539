/* /proc/stat: parse_stat, with room for every CPU and with too little. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cpu_times cpus[PARSE_MAX_CPUS];
	struct proc_stat st = {.cpus = cpus};
	int r = parse_stat((const char *)data, size, &st, PARSE_MAX_CPUS);

	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -E2BIG);
	if (r == 0)
		FUZZ_CHECK(st.ncpu <= PARSE_MAX_CPUS);
	st = (struct proc_stat){.cpus = cpus};
	r = parse_stat((const char *)data, size, &st, 2);
	if (r == 0)
		FUZZ_CHECK(st.ncpu <= 2);
	return 0;
}
