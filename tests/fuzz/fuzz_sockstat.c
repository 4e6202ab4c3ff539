/* /proc/net/sockstat: parse_sockstat. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

static int on_value(void *ctx, const char *prefix, const char *name, int64_t value)
{
	size_t *n = ctx;

	(void)value;
	FUZZ_CHECK(prefix && name);
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0;
	int r = parse_sockstat((const char *)data, size, on_value, &n);

	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	return 0;
}
