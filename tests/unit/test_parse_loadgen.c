/*
 * test_parse_loadgen: the summaries of real wrk and ab runs (tests/fixtures/loadgen/, captured from nginx 1.22 on
 * Debian 12), and what is not one.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parse.h"

static char *slurp(const char *name, size_t *len)
{
	const char *srcdir = getenv("srcdir");
	char path[512];
	FILE *f;
	char *buf = malloc(1 << 16);

	assert_non_null(buf);
	snprintf(path, sizeof(path), "%s/tests/fixtures/loadgen/%s", srcdir ? srcdir : ".", name);
	f = fopen(path, "r");
	assert_non_null(f);
	*len = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

struct want {
	const char *file;
	const char *tool;
	double rps, requests, duration_s, p50, p90, p99, errors, read_errors, timeouts;
};

static const struct want wants[] = {
	{"wrk-latency.txt", "wrk", 60037.64, 120829, 2.01, 0.563, 1.90, 4.74, 0, 0, 0},
	{"wrk-plain.txt", "wrk", 39838.67, 39865, 1.00, NAN, NAN, NAN, 0, 0, 0},
	{"wrk-non2xx.txt", "wrk", 35927.81, 39529, 1.10, 0.183, 0.433, 3.70, 39529, 0, 0},
	{"wrk-errors.txt", "wrk", 2196.61, 6819, 3.10, 33.83, 61.61, 163.93, 0, 28854, 0},
	{"ab.txt", "ab", 6982.63, 2000, 0.286, 3, 4, 5, 0, 0, 0},
	{"ab-non2xx.txt", "ab", 8786.42, 500, 0.057, 1, 1, 2, 500, 0, 0},
};

static void near(double got, double want)
{
	if (isnan(want)) {
		if (!isnan(got))
			fail_msg("got %g, want NAN", got);
		return;
	}
	if (!(fabs(got - want) <= 1e-6 * fmax(1.0, fabs(want))))
		fail_msg("got %g, want %g", got, want);
}

static void test_fixtures(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		const struct want *w = &wants[i];
		struct loadgen_result r;
		char err[256];
		size_t len;
		char *buf = slurp(w->file, &len);

		print_message("%s\n", w->file);
		assert_int_equal(parse_loadgen(buf, len, &r, err, sizeof(err)), 0);
		assert_string_equal(r.tool, w->tool);
		near(r.rps, w->rps);
		near(r.requests, w->requests);
		if (!isnan(w->duration_s))
			near(r.duration_s, w->duration_s);
		near(r.p50_ms, w->p50);
		near(r.p90_ms, w->p90);
		near(r.p99_ms, w->p99);
		near(r.errors, w->errors);
		near(r.read_errors, w->read_errors);
		near(r.timeouts, w->timeouts);
		free(buf);
	}
}

static void test_bad(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{"", "not the output of wrk or ab"},
		{"hello\nRequests/sec: 5\n", "not the output of wrk or ab"},
		{"unable to connect to 127.0.0.1:18999 Connection refused\n", "not the output of wrk or ab"},
		{"Running 2s test @ http://x/\n  2 threads and 50 connections\n", "wrk printed no requests per second"},
		{"Running 2s test @ http://x/\nRequests/sec:  -5\n  12 requests in 1.00s, 1KB read\n",
		 "wrk printed no requests per second"},
		{"Running 2s test @ http://x/\nRequests/sec:  nan\n", "wrk printed no requests per second"},
		{"This is ApacheBench, Version 2.3\nRequests per second:    1 [#/sec] (mean)\n", "ab printed no request count"},
	};
	struct loadgen_result r;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(parse_loadgen(bad[i].text, strlen(bad[i].text), &r, err, sizeof(err)), -EBADMSG);
		if (!strstr(err, bad[i].why))
			fail_msg("case %zu: '%s' does not say '%s'", i, err, bad[i].why);
	}
	assert_int_equal(parse_loadgen(NULL, 0, &r, err, sizeof(err)), -EBADMSG);
}

/* A very long line, NULs and CRs, and a percentile line with no number: no crash, and what can be read is read. */
static void test_hostile(void **state)
{
	size_t n = 100000;
	char *buf = malloc(n + 200), err[256];
	struct loadgen_result r;
	int len;

	(void)state;
	assert_non_null(buf);
	len = snprintf(buf, 200, "Running 1s test @ http://x/\r\n     99%%\n     50%% 12xs\n");
	memset(buf + len, 'a', n);
	len += (int)n;
	buf[len++] = '\n';
	buf[len++] = '\0';
	len += snprintf(buf + len, 200, "Requests/sec: 10\r\n  10 requests in 1.00s, 1KB read\n");
	assert_int_equal(parse_loadgen(buf, (size_t)len, &r, err, sizeof(err)), 0);
	near(r.rps, 10);
	near(r.p99_ms, NAN);
	near(r.p50_ms, NAN);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
