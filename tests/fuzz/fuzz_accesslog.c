/* nginx access-log lines (combined, with times, JSON): parse_access_line and parse_access_upstreams, one line at a
 * time as the log tail hands them over, each compared with the portable scan of the same parser
 * (accesslog_portable.c): the SSE2 path and the portable one must give the same record and the same upstreams. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

/* accesslog_portable.c */
int parse_access_line_portable(const char *line, size_t len, struct access_rec *rec);
int parse_access_upstreams_portable(const char *line, size_t len, parse_upstream_cb cb, void *ctx);

/* What the upstream callback saw: how many, and a digest of their addresses and times in order. */
struct seen {
	size_t n;
	uint64_t digest;
};

static int on_upstream(void *ctx, const char *addr, size_t addrlen, uint32_t ms)
{
	struct seen *s = ctx;

	FUZZ_CHECK(addr != NULL || addrlen == 0);
	for (size_t i = 0; i < addrlen; i++)
		s->digest = (s->digest ^ (unsigned char)addr[i]) * 1099511628211ull;
	s->digest = (s->digest ^ addrlen ^ ((uint64_t)ms << 20)) * 1099511628211ull;
	s->n++;
	return 0;
}

static int stop_first(void *ctx, const char *addr, size_t addrlen, uint32_t ms)
{
	(void)ctx, (void)addr, (void)addrlen, (void)ms;
	return 7;
}

static void one_line(const char *line, size_t len)
{
	struct access_rec rec, prec;
	struct seen s = {0}, ps = {0};
	int r = parse_access_line(line, len, &rec), pr = parse_access_line_portable(line, len, &prec);

	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	FUZZ_CHECK(pr == r);
	if (r == 0) {
		FUZZ_CHECK(rec.status >= 100 && rec.status <= 599);
		FUZZ_CHECK(rec.has_time || rec.request_ms == 0);
		FUZZ_CHECK(rec.status == prec.status && rec.has_time == prec.has_time &&
			   rec.request_ms == prec.request_ms && rec.upstream_ms == prec.upstream_ms &&
			   rec.has_upstream == prec.has_upstream && rec.upstream_connect_ms == prec.upstream_connect_ms &&
			   rec.has_connect == prec.has_connect);
	}
	r = parse_access_upstreams(line, len, on_upstream, &s);
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EBADMSG);
	FUZZ_CHECK(r == 0 || s.n == 0); /* CB runs only for a line that parses whole */
	pr = parse_access_upstreams_portable(line, len, on_upstream, &ps);
	FUZZ_CHECK(pr == r && ps.n == s.n && ps.digest == s.digest);
	r = parse_access_upstreams(line, len, stop_first, NULL);
	FUZZ_CHECK(r == (s.n ? 7 : r));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_each_line(data, size, one_line);
	return 0;
}
