/* A load generator's summary (wrk, ab): parse_loadgen. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct loadgen_result res;
	char err[128];
	int r;

	memset(err, 'x', sizeof(err));
	r = parse_loadgen((const char *)data, size, &res, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	if (r == 0)
		FUZZ_CHECK(res.tool && (strcmp(res.tool, "wrk") == 0 || strcmp(res.tool, "ab") == 0));
	else
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0]);
	return 0;
}
