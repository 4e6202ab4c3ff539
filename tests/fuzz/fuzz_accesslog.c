/* nginx access-log lines (combined, with times, JSON): parse_access_line and parse_access_upstreams, one line at a
 * time as the log tail hands them over. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

static int on_upstream(void *ctx, const char *addr, size_t addrlen, uint32_t ms)
{
	size_t *n = ctx;

	(void)ms;
	FUZZ_CHECK(addr != NULL || addrlen == 0);
	(*n)++;
	return 0;
}

static int stop_first(void *ctx, const char *addr, size_t addrlen, uint32_t ms)
{
	(void)ctx, (void)addr, (void)addrlen, (void)ms;
	return 7;
}

static void one_line(const char *line, size_t len)
{
	struct access_rec rec;
	size_t n = 0;
	int r = parse_access_line(line, len, &rec);

	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	if (r == 0) {
		FUZZ_CHECK(rec.status >= 100 && rec.status <= 599);
		FUZZ_CHECK(rec.has_time || rec.request_ms == 0);
	}
	r = parse_access_upstreams(line, len, on_upstream, &n);
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EBADMSG);
	FUZZ_CHECK(r == 0 || n == 0); /* CB runs only for a line that parses whole */
	r = parse_access_upstreams(line, len, stop_first, NULL);
	FUZZ_CHECK(r == (n ? 7 : r));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_each_line(data, size, one_line);
	return 0;
}
