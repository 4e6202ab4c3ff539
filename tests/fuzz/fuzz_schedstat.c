/* /proc/PID/schedstat (parse_schedstat) and /proc/PID/status (parse_ctxt_switches). */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t run, wait, slices, vol, nonvol;
	int r = parse_schedstat((const char *)data, size, &run, &wait, &slices);

	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	r = parse_ctxt_switches((const char *)data, size, &vol, &nonvol);
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	return 0;
}
