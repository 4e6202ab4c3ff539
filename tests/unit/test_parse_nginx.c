/*
 * test_parse_nginx: stub_status, access-log and error-log parsers against lines captured from nginx 1.22
 * (tests/fixtures/nginx/) and against hand-written hostile input.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parse.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- fixtures ---- */

static char *read_fixture(const char *name, size_t *len)
{
	const char *srcdir = getenv("srcdir");
	char path[4096];
	char *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/nginx/%s", srcdir ? srcdir : ".", name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* Split BUF into lines in place (no newline, not NUL-terminated for the parser's sake); returns the count. */
static size_t split_lines(char *buf, size_t len, const char **line, size_t *llen, size_t max)
{
	size_t n = 0, i, start = 0;

	for (i = 0; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		assert_true(n < max);
		line[n] = buf + start;
		llen[n] = i - start;
		n++;
		start = i + 1;
	}
	assert_int_equal(start, len); /* fixtures end with a newline */
	return n;
}

/* Copy of LINE with no terminating NUL after it, so ASan flags any read past LEN. */
static char *exact_copy(const char *line, size_t len)
{
	char *c = malloc(len ? len : 1);

	assert_non_null(c);
	memcpy(c, line, len);
	return c;
}

/* ---- stub_status ---- */

static void test_stub_fixtures(void **state)
{
	static const struct {
		const char *file;
		struct stub_status want;
	} cases[] = {
		{ "stub_status_idle.txt", { 1, 9, 9, 9, 0, 1, 0 } },
		{ "stub_status_busy.txt", { 9, 18, 18, 18, 0, 9, 0 } },
		{ "stub_status_large.txt", { 291, 16630948, 16630948, 31070465, 6, 179, 106 } },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		struct stub_status st;
		size_t len, cut;
		char *buf = read_fixture(cases[i].file, &len);
		char *c = exact_copy(buf, len);

		memset(&st, 0xff, sizeof(st));
		assert_int_equal(parse_stub_status(c, len, &st), 0);
		assert_memory_equal(&st, &cases[i].want, sizeof(st));
		/* every truncation is refused, including one inside the last number */
		for (cut = 0; cut < len; cut++) {
			memset(&st, 0xab, sizeof(st));
			if (parse_stub_status(c, cut, &st) != -EBADMSG)
				fail_msg("%s cut at %zu accepted", cases[i].file, cut);
			assert_int_equal(st.active, 0xababababababababull); /* untouched on failure */
		}
		free(c);
		free(buf);
	}
}

/* A stub_status without an answer in time: saturation when the workers were busy all the tick or the client timed
 * out too. The first case is a tick of a real nginx (worker_processes 1 gzipping 1 MB under wrk -c100, 500 ms
 * ticks): its one worker ran 336 ms and waited 164 ms for a CPU. */
static void test_stub_late(void **state)
{
	static const struct {
		struct stub_late l;
		bool saturated;
		const char *why;
	} cases[] = {
		{{336.2, 163.8, 1, 0.5, 0}, true, "the worker was runnable 100% of the tick"},
		{{1500, 300, 2, 1, NAN}, true, "the workers were each runnable 90% of the tick"},
		{{1400, 300, 2, 1, 0}, false, ""},
		{{100, 10, 2, 1, 2}, true, "2 of the synthetic client's requests timed out too"},
		{{NAN, NAN, NAN, 1, NAN}, false, ""},
		{{300, 200, 0, 0.5, 0}, false, ""},  /* no workers found: nothing to say */
		{{300, 200, 1, 0, 0}, false, ""},    /* a first tick keeps no time */
	};
	char why[96];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		memset(why, 'x', sizeof(why));
		assert_int_equal(stub_late_saturated(&cases[i].l, why, sizeof(why)), cases[i].saturated);
		assert_string_equal(why, cases[i].why);
	}
}

/* The four lines of a page; A (active) and W (waiting) vary. */
#define SA(a) "Active connections: " a " \n"
#define SH "server accepts handled requests\n"
#define S3 " 1 2 3 \n"
#define SR(w) "Reading: 0 Writing: 1 Waiting: " w " \n"

static void test_stub_variants(void **state)
{
	static const struct {
		const char *text;
		int ret;
		uint64_t active, waiting;
	} cases[] = {
		{ SA("3") SH S3 SR("2"), 0, 3, 2 },
		/* CRLF, trimmed trailing blanks and trailing empty lines are forgiven */
		{ "Active connections: 3 \r\n" "server accepts handled requests\r\n 1 2 3 \r\n"
		  "Reading: 0 Writing: 1 Waiting: 2 \r\n", 0, 3, 2 },
		{ "Active connections: 3\n" SH " 1 2 3\n" "Reading: 0 Writing: 1 Waiting: 2\n", 0, 3, 2 },
		{ SA("3") SH S3 SR("2") "\n\n", 0, 3, 2 },
		{ SA("18446744073709551615") SH S3 SR("18446744073709551615"), 0, UINT64_MAX, UINT64_MAX },
		/* one past 2^64 - 1, and far past */
		{ SA("18446744073709551616") SH S3 SR("2"), -EBADMSG, 0, 0 },
		{ SA("3") SH S3 SR("99999999999999999999999999999999"), -EBADMSG, 0, 0 },
		/* Tengine's extra request_time column */
		{ SA("1") "server accepts handled requests request_time\n 1140 1140 1140 75806\n" SR("0"), -EBADMSG, 0,
		  0 },
		{ SA("1") SH " 1 2 3 4 \n" SR("0"), -EBADMSG, 0, 0 },
		{ SA("1") SH " 1 2 \n" SR("0"), -EBADMSG, 0, 0 },
		{ SA("1") SH "1 2 3 \n" SR("0"), -EBADMSG, 0, 0 },
		{ SA("-1") SH S3 SR("0"), -EBADMSG, 0, 0 },
		{ SA("+1") SH S3 SR("0"), -EBADMSG, 0, 0 },
		{ SA("1.5") SH S3 SR("0"), -EBADMSG, 0, 0 },
		{ SA("1") SH S3 "Writing: 1 Reading: 0 Waiting: 0 \n", -EBADMSG, 0, 0 },
		{ SA("1") SH S3 SR("0") "x\n", -EBADMSG, 0, 0 },
		{ "x\n" SA("1") SH S3 SR("0"), -EBADMSG, 0, 0 },
		{ "Active connections: 1 server accepts handled requests 1 2 3 " SR("0"), -EBADMSG, 0, 0 },
		{ "Activeconnections: 1 \n" SH S3 SR("0"), -EBADMSG, 0, 0 },
		{ "<html><head><title>502 Bad Gateway</title></head>\n<body>\n"
		  "<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx/1.22.1</center>\n</body>\n</html>\n",
		  -EBADMSG, 0, 0 },
		{ "", -EBADMSG, 0, 0 },
		{ "\n\n\n", -EBADMSG, 0, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		struct stub_status st = { 0 };
		size_t len = strlen(cases[i].text);
		char *c = exact_copy(cases[i].text, len);
		int r = parse_stub_status(c, len, &st);

		if (r != cases[i].ret)
			fail_msg("case %zu: got %d want %d", i, r, cases[i].ret);
		if (r == 0) {
			assert_int_equal(st.active, cases[i].active);
			assert_int_equal(st.waiting, cases[i].waiting);
			assert_int_equal(st.requests, 3);
		}
		free(c);
	}
}

static void test_stub_nul(void **state)
{
	static const char text[] = "Active connections: 3 \nserver accepts handled requests\n 1 2 3 \n"
				   "Reading: 0 Writing: 1 Waiting: 2 \n";
	char buf[sizeof(text)];
	struct stub_status st;
	size_t i, len = sizeof(text) - 1;

	(void)state;
	assert_int_equal(parse_stub_status(text, len, &st), 0);
	/* a NUL anywhere breaks the page */
	for (i = 0; i < len; i++) {
		memcpy(buf, text, sizeof(text));
		buf[i] = '\0';
		if (parse_stub_status(buf, len, &st) != -EBADMSG)
			fail_msg("NUL at %zu accepted", i);
	}
	assert_int_equal(parse_stub_status(NULL, 0, &st), -EBADMSG);
}

/* ---- access log ---- */

struct access_want {
	int status;
	uint32_t request_ms, upstream_ms;
	int has_upstream;
};

/* $upstream_connect_time of a line: its sum in ms, and whether the line has the key at all. */
struct connect_want {
	uint32_t ms;
	int has;
};

/* FILE's lines against WANT (and CONNECT; NULL: no line has the key); PREFIXES_FAIL: a line cut anywhere is refused. */
static void check_access_fixture(const char *file, const struct access_want *want, size_t nwant, int prefixes_fail,
				 const struct connect_want *connect)
{
	const char *line[64];
	size_t llen[64], n, i, cut;
	size_t len;
	char *buf = read_fixture(file, &len);

	n = split_lines(buf, len, line, llen, ARRAY_LEN(line));
	assert_int_equal(n, nwant);
	for (i = 0; i < n; i++) {
		struct access_rec rec;
		char *c = exact_copy(line[i], llen[i]);
		int r;

		memset(&rec, 0xff, sizeof(rec));
		r = parse_access_line(c, llen[i], &rec);
		if (r != 0)
			fail_msg("%s:%zu: %d", file, i + 1, r);
		if (rec.status != want[i].status || rec.request_ms != want[i].request_ms ||
		    rec.upstream_ms != want[i].upstream_ms || rec.has_upstream != want[i].has_upstream)
			fail_msg("%s:%zu: got %d %u %u %d, want %d %u %u %d", file, i + 1, rec.status, rec.request_ms,
				 rec.upstream_ms, rec.has_upstream, want[i].status, want[i].request_ms,
				 want[i].upstream_ms, want[i].has_upstream);
		if (rec.upstream_connect_ms != (connect ? connect[i].ms : 0) ||
		    rec.has_connect != (connect ? connect[i].has : 0))
			fail_msg("%s:%zu: connect %u ms (key %d), want %u (%d)", file, i + 1, rec.upstream_connect_ms,
				 rec.has_connect, connect ? connect[i].ms : 0, connect ? connect[i].has : 0);
		/* a JSON line cut anywhere is incomplete */
		for (cut = 0; prefixes_fail && cut < llen[i]; cut++)
			if (parse_access_line(c, cut, &rec) != -EBADMSG)
				fail_msg("%s:%zu cut at %zu accepted", file, i + 1, cut);
		free(c);
	}
	free(buf);
}

static void test_access_fixtures(void **state)
{
	static const struct access_want combined[] = {
		{ 200, 0, 0, 0 },	    { 404, 0, 0, 0 },	 /* \x22 inside request, referer and user agent */
		{ 200, 734, 30, 1 },	    { 504, 1002, 1002, 1 }, { 502, 1, 1, 1 },
		{ 200, 1, 1, 1 },	    /* "0.000, 0.001": first server refused */
		{ 404, 1, 0, 1 },	    /* "0.000 : 0.000": X-Accel-Redirect to another upstream */
		{ 401, 0, 0, 0 },	    /* $remote_user with a blank */
		{ 400, 5, 0, 0 },	    /* control and high bytes escaped in $request */
		{ 404, 0, 0, 0 },	    { 404, 0, 0, 0 },	   { 502, 0, 0, 1 }, /* connect() EADDRNOTAVAIL */
		{ 500, 0, 0, 1 },			    /* socket() EMFILE */
		{ 504, 999, 1000, 1 }, { 200, 0, 0, 0 },
	};
	static const struct access_want json[] = {
		{ 400, 5, 0, 0 },    { 400, 5, 0, 0 }, { 404, 0, 0, 0 }, { 404, 0, 0, 0 },
		{ 200, 734, 30, 1 }, { 200, 2, 3, 1 }, { 200, 1, 1, 1 }, { 404, 1, 0, 1 },
		{ 502, 0, 0, 1 },    { 504, 999, 1000, 1 }, { 500, 0, 0, 1 },
	};
	/* extra keys with \u0001, \", \\, raw DEL and UTF-8, nested object with "}" inside a string */
	static const struct access_want json_extra[] = {
		{ 400, 5, 0, 0 },    { 400, 5, 0, 0 }, { 404, 0, 0, 0 }, { 404, 0, 0, 0 },
		{ 200, 290, 52, 1 }, { 200, 2, 3, 1 }, { 200, 1, 1, 1 },
	};

	(void)state;
	check_access_fixture("access_combined.log", combined, ARRAY_LEN(combined), 0, NULL);
	check_access_fixture("access_json.log", json, ARRAY_LEN(json), 1, NULL);
	check_access_fixture("access_json_extra.log", json_extra, ARRAY_LEN(json_extra), 1, NULL);
}

/* The agent's own format with $upstream_connect_time, captured from nginx 1.22 proxying without upstream keepalive
 * in a namespace of 10 local ports: 10 answers (connects of 0 and 1 ms), then connects that fail at once (local
 * ports run out: "-"), a refused port, a group whose two servers refuse ("-, -"), a connect timed out past
 * proxy_connect_timeout 1s (in $upstream_response_time, "-" as a connect time), and a static answer (""). */
static void test_access_upstream_connect(void **state)
{
	static const struct access_want want[] = {
		{ 200, 6, 5, 1 }, { 200, 6, 6, 1 }, { 200, 6, 5, 1 }, { 200, 6, 5, 1 }, { 200, 6, 5, 1 },
		{ 200, 9, 9, 1 }, { 200, 6, 5, 1 }, { 200, 5, 6, 1 }, { 200, 6, 5, 1 }, { 200, 5, 6, 1 },
		{ 502, 0, 0, 1 }, { 502, 0, 0, 1 }, { 502, 0, 0, 1 }, { 502, 0, 0, 1 }, { 502, 0, 0, 1 },
		{ 502, 1, 0, 1 }, { 502, 0, 0, 1 }, { 504, 1004, 1005, 1 }, { 200, 0, 0, 0 },
	};
	static const struct connect_want connect[] = {
		{ 0, 1 }, { 1, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 },
		{ 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 }, { 0, 1 },
	};

	(void)state;
	check_access_fixture("access_json_upstream.log", want, ARRAY_LEN(want), 1, connect);
}

#define CLF "10.1.2.3 - - [01/May/2024:12:00:00 +0200] \"GET /api/v1/items?id=7 HTTP/1.1\" "
#define UA " \"https://example.com/\" \"Mozilla/5.0 (X11; Linux x86_64)\" "

/* What operators have: nginx's predefined combined, and main-style formats with more quoted fields after the user
 * agent. Counted with their status, without times (has_time 0); the same with the two times appended have them. */
static void test_access_untimed(void **state)
{
	static const struct {
		const char *line;
		int ret, status, has_time;
		uint32_t request_ms;
	} cases[] = {
		{ CLF "200 512 \"-\" \"curl/7.88.1\"", 0, 200, 0, 0 },
		{ CLF "404 153 \"https://example.com/\" \"Mozilla/5.0 (X11; Linux x86_64)\"", 0, 404, 0, 0 },
		/* main: "$http_x_forwarded_for" */
		{ CLF "200 512 \"-\" \"curl/7.88.1\" \"10.0.0.1, 10.0.0.2\"", 0, 200, 0, 0 },
		{ CLF "200 512 \"-\" \"curl/7.88.1\" \"-\" \"-\"", 0, 200, 0, 0 },
		/* main with the agent's two times */
		{ CLF "200 512 \"-\" \"curl/7.88.1\" \"-\" 0.123 -", 0, 200, 1, 123 },
		{ CLF "200 512 \"-\" \"curl/7.88.1\" 0.050 0.040", 0, 200, 1, 50 },
		/* not ours: a bare word after the user agent, a trailing blank, an unterminated field */
		{ CLF "200 512 \"-\" \"curl/7.88.1\" example.com", -EBADMSG, 0, 0, 0 },
		{ CLF "200 512 \"-\" \"curl/7.88.1\" ", -EBADMSG, 0, 0, 0 },
		{ CLF "200 512 \"-\" \"curl/7.88.1\" \"open", -EBADMSG, 0, 0, 0 },
		{ CLF "200 512 \"-\" \"curl/7.88.1\"  \"-\"", -EBADMSG, 0, 0, 0 },
		/* JSON always has its request_time */
		{ "{\"status\":200,\"request_time\":0.004}", 0, 200, 1, 4 },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct access_rec rec;
		int r;

		memset(&rec, 0x5a, sizeof(rec));
		r = parse_access_line(cases[i].line, strlen(cases[i].line), &rec);
		if (r != cases[i].ret)
			fail_msg("case %zu: %d, want %d: %s", i, r, cases[i].ret, cases[i].line);
		if (r < 0)
			continue;
		assert_int_equal(rec.status, cases[i].status);
		assert_int_equal(rec.has_time, cases[i].has_time);
		assert_int_equal(rec.request_ms, cases[i].request_ms);
	}
}

static void test_access_synthetic(void **state)
{
	static const struct {
		const char *line;
		int ret;
		struct access_want want;
	} cases[] = {
		/* combined: upstream lists */
		{ CLF "200 512" UA "0.123 0.010, 0.020 : 0.003", 0, { 200, 123, 33, 1 } },
		{ CLF "200 512" UA "0.123 -", 0, { 200, 123, 0, 0 } },
		{ CLF "502 0" UA "3.001 -, 0.500", 0, { 502, 3001, 500, 1 } },
		{ CLF "502 0" UA "3.001 - : -", 0, { 502, 3001, 0, 0 } },
		{ CLF "200 512" UA "12.5 7", 0, { 200, 12500, 7000, 1 } },
		{ "::1 - - [01/May/2024:12:00:00 +0200] \"GET / HTTP/2.0\" 101 0 \"-\" \"-\" 86400.000 86399.999", 0,
		  { 101, 86400000, 86399999, 1 } },
		/* rounding to the nearest ms */
		{ CLF "200 1" UA "0.0005 0.0004", 0, { 200, 1, 0, 1 } },
		{ CLF "200 1" UA "0.9995 1.2344", 0, { 200, 1000, 1234, 1 } },
		{ CLF "200 1" UA "0.1239999999999999 -", 0, { 200, 124, 0, 0 } },
		/* the 1e7 s cap, and saturation above UINT32_MAX ms */
		{ CLF "200 1" UA "10000000.000 -", 0, { 200, UINT32_MAX, 0, 0 } },
		{ CLF "200 1" UA "4294967.295 4294967.296", 0, { 200, UINT32_MAX, UINT32_MAX, 1 } },
		{ CLF "200 1" UA "1.000 4294967.000, 4294967.000", 0, { 200, 1000, UINT32_MAX, 1 } },
		{ CLF "200 1" UA "10000000.001 -", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "99999999999999999999999.0 -", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001 10000000.001", -EBADMSG, { 0 } },
		/* status range */
		{ CLF "100 1" UA "0.001 -", 0, { 100, 1, 0, 0 } },
		{ CLF "599 1" UA "0.001 -", 0, { 599, 1, 0, 0 } },
		{ CLF "099 1" UA "0.001 -", -EBADMSG, { 0 } },
		{ CLF "000 1" UA "0.001 -", -EBADMSG, { 0 } },
		{ CLF "600 1" UA "0.001 -", -EBADMSG, { 0 } },
		{ CLF "2000 1" UA "0.001 -", -EBADMSG, { 0 } },
		{ CLF "20 1" UA "0.001 -", -EBADMSG, { 0 } },
		/* garbage in combined lines */
		{ CLF "200 1" UA "-0.001 -", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001 -0.001", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "1e3 -", -EBADMSG, { 0 } },
		{ CLF "200 1" UA ".5 -", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "5. -", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001 ", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001 0.1,,0.2", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001 0.1, ", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001 0.1 0.2", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001 - \"example.com\"", -EBADMSG, { 0 } }, /* another variable appended */
		{ CLF "200 1" UA "0.001 --", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001 abc", -EBADMSG, { 0 } },
		{ CLF "200 1" UA "0.001\t-", -EBADMSG, { 0 } },
		{ CLF "200 1 \"-\" \"curl\x01\" 0.001 -", -EBADMSG, { 0 } }, /* nginx would write \x01 */
		{ CLF "200 1 \"-\" \"curl\x7f\" 0.001 -", -EBADMSG, { 0 } },
		{ CLF "200 1 \"-\" \"curl\xe2\x98\x83\" 0.001 -", 0, { 200, 1, 0, 0 } }, /* some forks pass UTF-8 */
		{ CLF "200 1x" UA "0.001 -", -EBADMSG, { 0 } },
		{ CLF "200 " UA "0.001 -", -EBADMSG, { 0 } },
		{ CLF "200 1 \"-\" \"unterminated 0.001 -", -EBADMSG, { 0 } },
		{ CLF "200 1 \"-\"", -EBADMSG, { 0 } },
		{ "10.1.2.3 - - [01/May/2024:12:00:00 +0200] \"GET / HTTP/1.1", -EBADMSG, { 0 } },
		{ "10.1.2.3 - - \"GET / HTTP/1.1\" 200 1 \"-\" \"-\" 0.001 -", -EBADMSG, { 0 } },
		{ "\"GET / HTTP/1.1\" 200 1 \"-\" \"-\" 0.001 -", -EBADMSG, { 0 } },
		{ "hello world", -EBADMSG, { 0 } },
		{ " ", -EBADMSG, { 0 } },
		/* JSON: any key order, status and times as strings or numbers, blanks between tokens */
		{ "{\"request_time\":\"0.250\",\"status\":\"301\"}", 0, { 301, 250, 0, 0 } },
		{ "{ \"status\" : 200 , \"request_time\" : 1.5 , \"upstream_response_time\" : \"1.4, 0.05 : -\" }", 0,
		  { 200, 1500, 1450, 1 } },
		{ "{\"status\":200,\"request_time\":0.010,\"upstream_response_time\":0.009}", 0, { 200, 10, 9, 1 } },
		{ "{\"status\":200,\"request_time\":0.010,\"upstream_response_time\":\"-\"}", 0, { 200, 10, 0, 0 } },
		{ "{\"status\":200,\"request_time\":0.010,\"upstream_response_time\":\"\"}", 0, { 200, 10, 0, 0 } },
		/* escapes in other values, including ones that spell our keys */
		{ "{\"ua\":\"\\\",\\\"status\\\":599,\\\"x\\\":\\\"\",\"status\":204,\"request_time\":0.002}", 0,
		  { 204, 2, 0, 0 } },
		{ "{\"u\":\"\\u0022status\\u0022:500\\\\\",\"status\":200,\"request_time\":0.002}", 0,
		  { 200, 2, 0, 0 } },
		{ "{\"a\":\"\\b\\f\\n\\r\\t\\/\\\\\\\"\\uABCD\\uabcd\",\"status\":200,\"request_time\":0.002}", 0,
		  { 200, 2, 0, 0 } },
		{ "{\"a\":[],\"b\":{},\"c\":[true,false,null,-1.5e-3,0,{\"d\":[[\"]\"]]}],"
		  "\"status\":200,\"request_time\":0}",
		  0, { 200, 0, 0, 0 } },
		{ "{\"x\":{\"status\":999},\"status\":200,\"request_time\":0.007}", 0, { 200, 7, 0, 0 } },
		{ "{\"Status\":999,\"status\":200,\"request_time\":0.007,\"request_time_x\":\"bad\"}", 0,
		  { 200, 7, 0, 0 } },
		/* JSON refusals */
		{ "{\"status\":200}", -EBADMSG, { 0 } },
		{ "{\"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{}", -EBADMSG, { 0 } },
		{ "{", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1}x", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1}{}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"status\":200,\"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{\"status\":200.0,\"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{\"status\":0200,\"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{\"status\":\"2x0\",\"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{\"status\":null,\"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{\"status\":[200],\"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":-0.1}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":1e-3}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":\"\"}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":\"0.1 \"}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"upstream_response_time\":-}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"upstream_response_time\":\"0.1,\"}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"upstream_response_time\":\"\\u0030\"}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":\"\\x22\"}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":\"\\u12\"}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":\"\\u12G4\"}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":\"\\", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":\"tab\there\"}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":tru}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":[1,]}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":[1 2]}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":{\"b\"}}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":{\"b\":1]}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":[}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":01}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":1.}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":-}", -EBADMSG, { 0 } },
		{ "{\"status\":200,\"request_time\":0.1,\"a\":1e}", -EBADMSG, { 0 } },
		{ "{\"status\":200 \"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{\"status\" 200,\"request_time\":0.1}", -EBADMSG, { 0 } },
		{ "{status:200,request_time:0.1}", -EBADMSG, { 0 } },
		{ "[\"status\",200]", -EBADMSG, { 0 } },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		struct access_rec rec = { 0 };
		size_t len = strlen(cases[i].line);
		char *c = exact_copy(cases[i].line, len);
		int r = parse_access_line(c, len, &rec);

		if (r != cases[i].ret)
			fail_msg("case %zu (%s): got %d want %d", i, cases[i].line, r, cases[i].ret);
		if (r == 0 && (rec.status != cases[i].want.status || rec.request_ms != cases[i].want.request_ms ||
			       rec.upstream_ms != cases[i].want.upstream_ms ||
			       rec.has_upstream != cases[i].want.has_upstream))
			fail_msg("case %zu (%s): got %d %u %u %d", i, cases[i].line, rec.status, rec.request_ms,
				 rec.upstream_ms, rec.has_upstream);
		free(c);
	}
}

/* Bytes a text file cannot show: NULs (a log preallocated then cut short), raw control bytes. */
static void test_access_binary(void **state)
{
	static const char json[] = "{\"status\":200,\"request_time\":0.1,\"a\":\"x\"}";
	static const char comb[] = CLF "200 1" UA "0.001 -";
	struct access_rec rec = { 0 };
	char buf[256];
	size_t i, len;

	(void)state;
	assert_int_equal(parse_access_line(json, sizeof(json) - 1, &rec), 0);
	assert_int_equal(parse_access_line(comb, sizeof(comb) - 1, &rec), 0);
	/* a NUL anywhere breaks either format */
	for (len = sizeof(json) - 1, i = 0; i < len; i++) {
		memcpy(buf, json, len);
		buf[i] = '\0';
		if (parse_access_line(buf, len, &rec) != -EBADMSG)
			fail_msg("JSON NUL at %zu accepted", i);
	}
	for (len = sizeof(comb) - 1, i = 0; i < len; i++) {
		memcpy(buf, comb, len);
		buf[i] = '\0';
		if (parse_access_line(buf, len, &rec) != -EBADMSG)
			fail_msg("combined NUL at %zu accepted", i);
	}
	{
		/* a backslash escaping a NUL is no JSON escape */
		static const char esc[] = "{\"status\":200,\"request_time\":0.1,\"a\":\"\\\0\"}";

		assert_int_equal(parse_access_line(esc, sizeof(esc) - 1, &rec), -EBADMSG);
	}
	memset(buf, 0, sizeof(buf));
	assert_int_equal(parse_access_line(buf, sizeof(buf), &rec), -EBADMSG);
	assert_int_equal(parse_access_line(buf, 0, &rec), -EBADMSG);
	assert_int_equal(parse_access_line(NULL, 0, &rec), -EBADMSG);
	/* a failed parse leaves *rec alone */
	memset(&rec, 0x5a, sizeof(rec));
	assert_int_equal(parse_access_line("{\"status\":200}", 14, &rec), -EBADMSG);
	assert_int_equal(rec.status, 0x5a5a5a5a);
}

/* Long lines cost time linear in their length and no memory; deep nesting is cut off, not recursed into. */
static void test_access_long(void **state)
{
	const size_t big = 4u << 20;
	const char *head = "{\"status\":200,\"request_time\":0.031,\"ua\":\"";
	const char *tail = "\",\"upstream_response_time\":\"0.030\"}";
	struct access_rec rec = { 0 };
	char *buf = malloc(big + 256), *c;
	size_t hl = strlen(head), tl = strlen(tail), i, n;

	(void)state;
	assert_non_null(buf);
	/* a 4 MiB user agent full of escapes */
	memcpy(buf, head, hl);
	for (i = 0; i < big; i += 6)
		memcpy(buf + hl + i, "\\u00e9", 6);
	memcpy(buf + hl + i, tail, tl);
	n = hl + i + tl;
	c = exact_copy(buf, n);
	assert_int_equal(parse_access_line(c, n, &rec), 0);
	assert_int_equal(rec.request_ms, 31);
	assert_int_equal(rec.upstream_ms, 30);
	/* the same, never closed */
	assert_int_equal(parse_access_line(c, n - tl, &rec), -EBADMSG);
	free(c);
	/* a huge number of digits */
	n = (size_t)sprintf(buf, "{\"status\":200,\"request_time\":");
	memset(buf + n, '9', big);
	n += big;
	buf[n++] = '}';
	c = exact_copy(buf, n);
	assert_int_equal(parse_access_line(c, n, &rec), -EBADMSG);
	free(c);
	/* an upstream list of a million zeros sums to 0 and counts as upstream */
	n = (size_t)sprintf(buf, CLF "200 1" UA "0.001 0.000");
	for (i = 0; i < 1000000 && n + 10 < big; i++)
		n += (size_t)sprintf(buf + n, ", 0.001");
	c = exact_copy(buf, n);
	assert_int_equal(parse_access_line(c, n, &rec), 0);
	assert_int_equal(rec.upstream_ms, i);
	assert_int_equal(rec.has_upstream, 1);
	free(c);
	/* nesting: 64 levels inside the top object are skipped, 65 refused, a million refused fast */
	for (size_t depth = 64; depth <= 65; depth++) {
		n = (size_t)sprintf(buf, "{\"a\":");
		memset(buf + n, '[', depth);
		n += depth;
		memset(buf + n, ']', depth);
		n += depth;
		n += (size_t)sprintf(buf + n, ",\"status\":200,\"request_time\":0.1}");
		assert_int_equal(parse_access_line(buf, n, &rec), depth == 64 ? 0 : -EBADMSG);
	}
	n = (size_t)sprintf(buf, "{\"a\":");
	memset(buf + n, '[', 1000000);
	n += 1000000;
	assert_int_equal(parse_access_line(buf, n, &rec), -EBADMSG);
	free(buf);
}

/* A control byte or an escape at every offset of a string, the line shifted by 0..8 blanks: the word-at-a-time check
 * of the whole line must agree with the byte-wise rules wherever the byte falls in an 8-byte word. */
static void test_access_special_bytes(void **state)
{
	static const char head[] = "{\"status\":200,\"request_time\":0.002,\"ua\":\"";
	const size_t ua = 40;

	(void)state;
	for (size_t shift = 0; shift <= 8; shift++) {
		for (size_t k = 0; k + 1 < ua; k++) {
			static const struct {
				char a, b;
				int rc;
			} muts[] = {
				{'\x01', 'A', -EBADMSG}, {'\x1f', 'A', -EBADMSG}, {'\t', 'A', -EBADMSG}, {'\\', 'n', 0},
				{'\\', '"', 0},        {'\\', 'x', -EBADMSG},  {'\x7f', 'A', 0},      {'\xff', '\x80', 0},
				{' ', 'A', 0},
			};

			for (size_t m = 0; m < ARRAY_LEN(muts); m++) {
				char buf[128];
				struct access_rec rec;
				size_t n = 0;
				int rc;

				memset(buf, ' ', shift);
				n = shift;
				memcpy(buf + n, head, sizeof(head) - 1);
				n += sizeof(head) - 1;
				memset(buf + n, 'A', ua);
				buf[n + k] = muts[m].a;
				buf[n + k + 1] = muts[m].b;
				n += ua;
				memcpy(buf + n, "\"}", 2);
				n += 2;
				rc = parse_access_line(buf + shift, n - shift, &rec);
				if (rc != muts[m].rc)
					fail_msg("shift %zu, offset %zu, bytes %02x %02x: %d, want %d", shift, k,
						 (unsigned char)muts[m].a, (unsigned char)muts[m].b, rc, muts[m].rc);
				if (rc == 0) {
					assert_int_equal(rec.status, 200);
					assert_int_equal(rec.request_ms, 2);
				}
			}
		}
	}
}

/*
 * The fast path for nginx's own JSON lines must agree with the general walk: a line and the same line with a blank
 * after its '{' (which only the general walk takes) give the same verdict and the same record, for the fixtures
 * and a typical line with bytes changed at random.
 */
static void test_access_fast_agrees(void **state)
{
	static const char *const files[] = { "access_json.log", "access_json_extra.log" };
	static const char typical[] = "{\"time\":\"2026-11-30T15:43:31+00:00\",\"status\":200,\"request_time\":0.012,"
				      "\"upstream_response_time\":\"0.010, 0.002 : -\",\"upstream_addr\":\"10.0.0.1:80\","
				      "\"bytes\":17}";
	static const char bytes[] = "\"\\{}[],:- .0123456789eEu+tnr\x00\x01\x1f\x7f\xff";
	uint32_t seed = 99;
	size_t accepted = 0, rejected = 0;

	(void)state;
	for (size_t f = 0; f <= ARRAY_LEN(files); f++) {
		const char *line[64];
		size_t llen[64], n, len = 0;
		char *buf = NULL;

		if (f < ARRAY_LEN(files)) {
			buf = read_fixture(files[f], &len);
			n = split_lines(buf, len, line, llen, ARRAY_LEN(line));
		} else {
			line[0] = typical;
			llen[0] = sizeof(typical) - 1;
			n = 1;
		}
		for (size_t i = 0; i < n; i++) {
			for (size_t k = 0; k < 6000 && llen[i] > 2; k++) {
				char *a = exact_copy(line[i], llen[i]), *b = malloc(llen[i] + 1);
				struct access_rec ra, rb;
				size_t al = llen[i];
				int r1, r2;

				assert_non_null(b);
				for (size_t m = 0; k && m < 1 + k % 3; m++) {
					seed = seed * 1103515245u + 12345u;
					a[1 + (seed >> 8) % (llen[i] - 1)] = bytes[(seed >> 20) % (sizeof(bytes) - 1)];
				}
				if (k % 7 == 3)
					al = 1 + (seed >> 4) % llen[i];
				b[0] = '{';
				b[1] = ' ';
				memcpy(b + 2, a + 1, al - 1);
				memset(&ra, 0x5a, sizeof(ra));
				memset(&rb, 0x5a, sizeof(rb));
				r1 = parse_access_line(a, al, &ra);
				r2 = parse_access_line(b, al + 1, &rb);
				if (r1 != r2 || (r1 == 0 && memcmp(&ra, &rb, sizeof(ra)) != 0))
					fail_msg("fast %d, general %d: %.*s", r1, r2, (int)al, a);
				if (r1 == 0)
					accepted++;
				else
					rejected++;
				free(a);
				free(b);
			}
		}
		free(buf);
	}
	assert_true(accepted > 1000);
	assert_true(rejected > 1000);
}

/* Mutated fixture lines: whatever the parser says, it must not crash or return values out of range. */
static void test_access_mutations(void **state)
{
	static const char *const files[] = { "access_combined.log", "access_json.log", "access_json_extra.log" };
	static const char bytes[] = "\"\\{}[],:- .0123456789eu\x00\x01\xff";
	uint32_t seed = 12345;
	size_t f, accepted = 0, rejected = 0;

	(void)state;
	for (f = 0; f < ARRAY_LEN(files); f++) {
		const char *line[64];
		size_t llen[64], n, i, k, len;
		char *buf = read_fixture(files[f], &len);

		n = split_lines(buf, len, line, llen, ARRAY_LEN(line));
		for (i = 0; i < n; i++) {
			for (k = 0; k < 2000; k++) {
				char *c = exact_copy(line[i], llen[i]);
				size_t m, cl = llen[i];
				struct access_rec rec;

				for (m = 0; m < 1 + k % 4; m++) {
					seed = seed * 1103515245u + 12345u;
					c[(seed >> 8) % llen[i]] = bytes[(seed >> 20) % (sizeof(bytes) - 1)];
				}
				if (k % 3 == 0)
					cl = (seed >> 4) % llen[i];
				if (parse_access_line(c, cl, &rec) == 0) {
					accepted++;
					assert_in_range(rec.status, 100, 599);
					assert_true(rec.has_upstream == 0 || rec.has_upstream == 1);
					if (!rec.has_upstream)
						assert_int_equal(rec.upstream_ms, 0);
				} else {
					rejected++;
				}
				free(c);
			}
		}
		free(buf);
	}
	/* both outcomes happen, so the loop really exercised the parser */
	assert_true(accepted > 1000);
	assert_true(rejected > 1000);
}

/* ---- error log ---- */

static void test_errorlog_fixture(void **state)
{
	static const enum errlog_kind want[] = {
		[10] = ERRLOG_BUFFERED_TEMP,	    [11] = ERRLOG_CONN_REFUSED,	    [13] = ERRLOG_UPSTREAM_TIMEOUT,
		[19] = ERRLOG_UPSTREAM_PREMATURE,
		[22] = ERRLOG_WORKER_CONNECTIONS, [23] = ERRLOG_WORKER_CONNECTIONS, [24] = ERRLOG_TOO_MANY_FILES,
		[25] = ERRLOG_TOO_MANY_FILES,	    [27] = ERRLOG_ADDR_NOT_AVAIL,   [29] = ERRLOG_OTHER,
	};
	unsigned count[ERRLOG_KIND_COUNT] = { 0 };
	const char *line[64];
	size_t llen[64], n, i, len;
	char *buf = read_fixture("error.log", &len);

	(void)state;
	n = split_lines(buf, len, line, llen, ARRAY_LEN(line));
	assert_int_equal(n, ARRAY_LEN(want));
	for (i = 0; i < n; i++) {
		char *c = exact_copy(line[i], llen[i]);
		enum errlog_kind k = parse_errorlog_line(c, llen[i]);

		if (k != want[i])
			fail_msg("error.log:%zu: kind %d, want %d", i + 1, k, want[i]);
		count[k]++;
		free(c);
	}
	assert_int_equal(count[ERRLOG_OTHER], 21); /* including four requests crafted to look like the others */
	assert_int_equal(count[ERRLOG_WORKER_CONNECTIONS], 2);
	assert_int_equal(count[ERRLOG_TOO_MANY_FILES], 2);
	free(buf);
}

/* Connects to upstreams that fail, by errno, captured from nginx 1.22: a refused port (twice, then the group has
 * no live server), a SYN left unanswered past proxy_connect_timeout, local ports run out; and two requests whose
 * paths spell those messages. */
static void test_errorlog_upstream_fixture(void **state)
{
	static const enum errlog_kind want[] = {
		ERRLOG_CONN_REFUSED,	ERRLOG_OTHER, ERRLOG_CONN_REFUSED,   ERRLOG_NO_LIVE_UPSTREAMS,
		ERRLOG_CONNECT_TIMEOUT, ERRLOG_ADDR_NOT_AVAIL, ERRLOG_OTHER, ERRLOG_OTHER,
	};
	const char *line[16];
	size_t llen[16], n, len;
	char *buf = read_fixture("error_upstream.log", &len);

	(void)state;
	n = split_lines(buf, len, line, llen, ARRAY_LEN(line));
	assert_int_equal(n, ARRAY_LEN(want));
	for (size_t i = 0; i < n; i++) {
		char *c = exact_copy(line[i], llen[i]);
		enum errlog_kind k = parse_errorlog_line(c, llen[i]);

		if (k != want[i])
			fail_msg("error_upstream.log:%zu: kind %d, want %d", i + 1, k, want[i]);
		free(c);
	}
	assert_string_equal(errlog_kind_name(ERRLOG_CONN_REFUSED), "conn_refused");
	assert_string_equal(errlog_kind_name(ERRLOG_CONNECT_TIMEOUT), "connect_timeout");
	assert_string_equal(errlog_kind_name(ERRLOG_NO_LIVE_UPSTREAMS), "no_live_upstreams");
	free(buf);
}

#define TS "2024/05/01 12:00:00 "
/* Prefix of a line written while serving connection 9. */
#define C9(level) TS "[" level "] 1234#1234: *9 "

static void test_errorlog_synthetic(void **state)
{
	static const struct {
		const char *line;
		enum errlog_kind kind;
	} cases[] = {
		{ TS "[alert] 1234#1234: 1024 worker_connections are not enough", ERRLOG_WORKER_CONNECTIONS },
		{ TS "[alert] 1234#1234: *88 768 worker_connections are not enough while connecting to upstream, "
		     "client: 10.0.0.1, server: example.com, request: \"GET / HTTP/1.1\", "
		     "upstream: \"http://10.0.0.2:80/\"",
		  ERRLOG_WORKER_CONNECTIONS },
		{ TS "[crit] 1234#1234: accept4() failed (24: Too many open files)", ERRLOG_TOO_MANY_FILES },
		{ TS "[crit] 1234#1234: accept() failed (24: Too many open files) while accepting new connection on "
		     "0.0.0.0:80",
		  ERRLOG_TOO_MANY_FILES },
		{ TS "[crit] 1234#1234: accept4() failed (23: Too many open files in system)", ERRLOG_TOO_MANY_FILES },
		{ C9("alert") "socket() failed (24: Too many open files) while connecting to upstream",
		  ERRLOG_TOO_MANY_FILES },
		{ C9("error") "upstream prematurely closed connection while reading response header from "
		     "upstream, client: 10.0.0.1, server: _, request: \"GET /x HTTP/1.1\", "
		     "upstream: \"http://10.0.0.2:8080/x\"",
		  ERRLOG_UPSTREAM_PREMATURE },
		{ C9("error") "upstream prematurely closed FastCGI stdout while reading response header from "
		     "upstream",
		  ERRLOG_UPSTREAM_PREMATURE },
		{ C9("warn") "an upstream response is buffered to a temporary file "
		     "/var/cache/nginx/proxy_temp/4/01/0000000014 while reading upstream",
		  ERRLOG_BUFFERED_TEMP },
		{ C9("crit") "connect() to 1.2.3.4:80 failed (99: Cannot assign requested address) while "
		     "connecting to upstream",
		  ERRLOG_ADDR_NOT_AVAIL },
		{ C9("crit") "connect() to [2001:db8::1]:443 failed (99: Cannot assign requested address)",
		  ERRLOG_ADDR_NOT_AVAIL },
		{ C9("crit") "connect() to 1.2.3.4:80 failed (126: Cannot assign requested address)",
		  ERRLOG_ADDR_NOT_AVAIL }, /* MIPS numbering */
		{ C9("error") "upstream timed out (110: Connection timed out) while connecting to upstream",
		  ERRLOG_CONNECT_TIMEOUT },
		{ C9("error") "upstream timed out (110: Connection timed out) while sending request to upstream",
		  ERRLOG_UPSTREAM_TIMEOUT },
		{ TS "[error] 4321#4322: *123456789 upstream timed out (110: Connection timed out) while reading "
		     "response header from upstream",
		  ERRLOG_UPSTREAM_TIMEOUT },
		{ TS "[emerg] 1#1: upstream timed out (110: Connection timed out)", ERRLOG_UPSTREAM_TIMEOUT },
		/* near misses */
		{ C9("warn") "a client request body is buffered to a temporary file "
		     "/var/cache/nginx/client_temp/0000000001",
		  ERRLOG_OTHER },
		/* ngx_event_connect_peer's words when connect() itself fails, at level error */
		{ C9("error") "connect() to 1.2.3.4:80 failed (111: Connection refused) while connecting to upstream",
		  ERRLOG_CONN_REFUSED },
		{ C9("error") "connect() to unix:/run/app.sock failed (111: Connection refused)", ERRLOG_CONN_REFUSED },
		{ C9("error") "connect() failed (113: No route to host) while connecting to upstream", ERRLOG_OTHER },
		{ C9("error") "no live upstreams", ERRLOG_OTHER },
		{ C9("crit") "connect() to 1.2.3.4:80 failed (99: Cannot assign requested addres", ERRLOG_OTHER },
		{ TS "[crit] 1234#1234: accept4() failed (11: Resource temporarily unavailable)", ERRLOG_OTHER },
		{ TS "[warn] 1234#1234: 4096 worker_connections exceed open file resource limit: 1024", ERRLOG_OTHER },
		{ C9("error") "upstream timed", ERRLOG_OTHER },
		{ C9("error") "upstream server temporarily disabled while reading response header from upstream",
		  ERRLOG_OTHER },
		{ C9("info") "epoll_wait() reported that client prematurely closed connection, so upstream "
		     "connection is closed too",
		  ERRLOG_OTHER },
		/* client text placed where a substring search would find it */
		{ C9("error") "open() \"/var/www/html/1024 worker_connections are not enough\" failed (2: No "
		     "such file or directory), client: 10.0.0.1",
		  ERRLOG_OTHER },
		{ C9("error") "open() \"/srv/x\" failed (24: Too many open files)\" failed (2: No such file or "
		     "directory), client: 10.0.0.1",
		  ERRLOG_OTHER },
		{ C9("info") "client sent invalid header line: \"accept4() failed (24: Too many open files)\" "
		     "while reading client request headers, client: 10.0.0.1",
		  ERRLOG_OTHER },
		{ C9("error") "\"/var/www/upstream timed out (110: x)/index.html\" is not found (2: No such file "
		     "or directory), client: 10.0.0.1, request: \"GET /upstream%20timed%20out%20(110:%20x)/ HTTP/1.1\"",
		  ERRLOG_OTHER },
		{ C9("error") "access forbidden by rule, client: 10.0.0.1, request: \"GET /upstream timed out "
		     "HTTP/1.1\", host: \"an upstream response is buffered to a temporary file\"",
		  ERRLOG_OTHER },
		/* not shaped like an nginx error-log line */
		{ "nginx: [emerg] 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ "1024 worker_connections are not enough", ERRLOG_OTHER },
		{ "2024-05-01 12:00:00 [alert] 1234#1234: 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[fatal] 1234#1234: 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[err] 1234#1234: 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[] 1234#1234: 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[alert] 1234: 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[alert] 1234#1234 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[alert] #1234: 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[alert]  1234#1234: 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[alert] 1234#1234: * 1024 worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[alert] 1234#1234: worker_connections are not enough", ERRLOG_OTHER },
		{ TS "[alert", ERRLOG_OTHER },
		{ TS, ERRLOG_OTHER },
		{ "", ERRLOG_OTHER },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		size_t len = strlen(cases[i].line), cut;
		char *c = exact_copy(cases[i].line, len);
		enum errlog_kind k = parse_errorlog_line(c, len);

		if (k != cases[i].kind)
			fail_msg("case %zu (%s): kind %d, want %d", i, cases[i].line, k, cases[i].kind);
		/* truncation never crashes and never invents a kind (a connect timeout cut before "while connecting"
		 * is still an upstream timeout) */
		for (cut = 0; cut < len; cut++) {
			k = parse_errorlog_line(c, cut);
			if (k != ERRLOG_OTHER && k != cases[i].kind &&
			    !(k == ERRLOG_UPSTREAM_TIMEOUT && cases[i].kind == ERRLOG_CONNECT_TIMEOUT))
				fail_msg("case %zu cut at %zu: kind %d", i, cut, k);
		}
		free(c);
	}
	assert_int_equal(parse_errorlog_line(NULL, 0), ERRLOG_OTHER);
	{
		/* a NUL inside the matched part breaks the match */
		static const char l[] = TS "[crit] 1234#1234: accept4() failed (24: Too many\0open files)";

		assert_int_equal(parse_errorlog_line(l, sizeof(l) - 1), ERRLOG_OTHER);
	}
}

static void test_errlog_kind_name(void **state)
{
	static const struct {
		enum errlog_kind k;
		const char *name;
	} cases[] = {
		{ ERRLOG_WORKER_CONNECTIONS, "worker_connections" }, { ERRLOG_TOO_MANY_FILES, "too_many_files" },
		{ ERRLOG_UPSTREAM_PREMATURE, "upstream_premature" }, { ERRLOG_BUFFERED_TEMP, "buffered_temp" },
		{ ERRLOG_ADDR_NOT_AVAIL, "addr_not_avail" },	     { ERRLOG_UPSTREAM_TIMEOUT, "upstream_timeout" },
		{ ERRLOG_CONN_REFUSED, "conn_refused" },	     { ERRLOG_CONNECT_TIMEOUT, "connect_timeout" },
		{ ERRLOG_NO_LIVE_UPSTREAMS, "no_live_upstreams" },
	};
	size_t i;

	(void)state;
	assert_int_equal(ARRAY_LEN(cases), ERRLOG_KIND_COUNT - 1);
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		assert_non_null(errlog_kind_name(cases[i].k));
		assert_string_equal(errlog_kind_name(cases[i].k), cases[i].name);
	}
	assert_null(errlog_kind_name(ERRLOG_OTHER));
	assert_null(errlog_kind_name(ERRLOG_KIND_COUNT));
	assert_null(errlog_kind_name((enum errlog_kind)-1));
	assert_null(errlog_kind_name((enum errlog_kind)1000));
}

/* The master's title: nginx's command line joined by blanks. */
static void test_master_title(void **state)
{
	static const struct {
		const char *title;
		int rc;
		const char *conf, *prefix;
	} cases[] = {
		{"nginx: master process /usr/sbin/nginx -g daemon on; master_process on;", 0, "", ""},
		{"nginx: master process nginx -p /tmp/n -c /tmp/n/nginx.conf -e /tmp/n/logs/error.log", 0,
		 "/tmp/n/nginx.conf", "/tmp/n"},
		{"nginx: master process /opt/nginx/sbin/nginx -c conf/site.conf", 0, "conf/site.conf", ""},
		{"nginx: master process nginx -c", -EBADMSG, "", ""},
		{"nginx: worker process", -EINVAL, "", ""},
		/* As nginx's ngx_get_options reads them: a value in the flag's word, flags sharing a word, the last one
		 * winning, -g's value (blanks and all) not taken for flags, an unknown flag ending its word. */
		{"nginx: master process nginx -cx -pp", 0, "x", "p"},
		{"nginx: master process nginx -qc /a.conf -tp/srv -c /b.conf", 0, "/b.conf", "/srv"},
		{"nginx: master process nginx -g daemon off; master_process on; -c /n.conf", 0, "/n.conf", ""},
		{"nginx: master process nginx -e -c -c /n.conf", 0, "/n.conf", ""},
		{"nginx: master process nginx -xc /n.conf", 0, "", ""},
		{"nginx: master process nginx -p", -EBADMSG, "", ""},
	};
	char conf[64], prefix[64], tiny[4];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse_nginx_master_title(cases[i].title, conf, sizeof(conf), prefix, sizeof(prefix)),
				 cases[i].rc);
		if (cases[i].rc == 0) {
			assert_string_equal(conf, cases[i].conf);
			assert_string_equal(prefix, cases[i].prefix);
		}
	}
	assert_int_equal(parse_nginx_master_title("nginx: master process nginx -c /etc/nginx/nginx.conf", tiny,
						  sizeof(tiny), prefix, sizeof(prefix)), -ENAMETOOLONG);
	assert_int_equal(parse_nginx_master_title(NULL, conf, sizeof(conf), prefix, sizeof(prefix)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stub_fixtures),	   cmocka_unit_test(test_stub_variants),
		cmocka_unit_test(test_stub_nul),	   cmocka_unit_test(test_access_fixtures),
		cmocka_unit_test(test_access_synthetic),   cmocka_unit_test(test_access_binary),
		cmocka_unit_test(test_access_untimed),
		cmocka_unit_test(test_access_long),	   cmocka_unit_test(test_access_mutations),
		cmocka_unit_test(test_access_special_bytes),
		cmocka_unit_test(test_access_fast_agrees),
		cmocka_unit_test(test_access_upstream_connect),
		cmocka_unit_test(test_stub_late),
		cmocka_unit_test(test_errorlog_fixture),   cmocka_unit_test(test_errorlog_upstream_fixture),
		cmocka_unit_test(test_errorlog_synthetic),
		cmocka_unit_test(test_errlog_kind_name),   cmocka_unit_test(test_master_title),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
