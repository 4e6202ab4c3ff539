/*
 * Unit tests for the doctor's parsers: parse_host.c (/proc/PID/limits, /proc/net/dev, /proc/meminfo, the THP
 * mode) on texts captured from Debian 12 (kernel 6.1), with hostile variants, and parse_access_upstreams (the
 * per-upstream times of a JSON access-log line).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parse.h"

static const char limits_61[] =
	"Limit                     Soft Limit           Hard Limit           Units     \n"
	"Max cpu time              unlimited            unlimited            seconds   \n"
	"Max file size             unlimited            unlimited            bytes     \n"
	"Max data size             unlimited            unlimited            bytes     \n"
	"Max stack size            8388608              unlimited            bytes     \n"
	"Max core file size        0                    unlimited            bytes     \n"
	"Max resident set          unlimited            unlimited            bytes     \n"
	"Max processes             7645                 7645                 processes \n"
	"Max open files            1024                 524288               files     \n"
	"Max locked memory         8388608              8388608              bytes     \n"
	"Max address space         unlimited            unlimited            bytes     \n"
	"Max file locks            unlimited            unlimited            locks     \n"
	"Max pending signals       7645                 7645                 signals   \n"
	"Max msgqueue size         819200               819200               bytes     \n"
	"Max nice priority         0                    0                    \n"
	"Max realtime priority     0                    0                    \n"
	"Max realtime timeout      unlimited            unlimited            us        \n";

static void test_limits(void **state)
{
	int64_t soft = 0, hard = 0;
	char buf[sizeof(limits_61)];

	(void)state;
	assert_int_equal(parse_limits_nofile(limits_61, sizeof(limits_61) - 1, &soft, &hard), 0);
	assert_int_equal(soft, 1024);
	assert_int_equal(hard, 524288);
	assert_int_equal(parse_limits_nofile("Max open files  unlimited unlimited files\n", 42, &soft, &hard), 0);
	assert_true(soft == PARSE_UNLIMITED && hard == PARSE_UNLIMITED);
	/* No such line, a word where a number belongs, one column only, a NUL, "Max open filesX". */
	assert_int_equal(parse_limits_nofile("Max cpu time 1 2 s\n", 19, &soft, &hard), -EBADMSG);
	assert_int_equal(parse_limits_nofile("Max open files  many 2 files\n", 29, &soft, &hard), -EBADMSG);
	assert_int_equal(parse_limits_nofile("Max open files  1024\n", 21, &soft, &hard), -EBADMSG);
	assert_int_equal(parse_limits_nofile("Max open filesX 1 2\n", 20, &soft, &hard), -EBADMSG);
	assert_int_equal(parse_limits_nofile("Max open files  99999999999999999999 1\n", 39, &soft, &hard), -EBADMSG);
	memcpy(buf, limits_61, sizeof(buf));
	buf[10] = '\0';
	assert_int_equal(parse_limits_nofile(buf, sizeof(buf) - 1, &soft, &hard), -EBADMSG);
	assert_int_equal(parse_limits_nofile(NULL, 0, &soft, &hard), -EBADMSG);
}

static const char netdev_61[] =
	"Inter-|   Receive                                                |  Transmit\n"
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
	"carrier compressed\n"
	"    lo: 9263843   93012    0    0    0     0          0         0  9263843   93012    0    0    0     0 "
	"      0          0\n"
	"  eth0: 2412512011 1849931    0  117    3     0          0         0 70129321  633241    0    0    0     0 "
	"      0          0\n"
	"veth-ngxat-1:0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

static void test_netdev(void **state)
{
	struct netdev_row rows[4];
	size_t n = 9;
	char bad[512];

	(void)state;
	assert_int_equal(parse_netdev(netdev_61, sizeof(netdev_61) - 1, rows, 4, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].name, "lo");
	assert_string_equal(rows[1].name, "eth0");
	assert_true(rows[1].rx_bytes == 2412512011ull && rows[1].rx_packets == 1849931);
	assert_int_equal(rows[1].rx_drop, 117);
	assert_int_equal(rows[1].rx_fifo, 3);
	/* No blank after the colon, as the kernel prints long names. */
	assert_string_equal(rows[2].name, "veth-ngxat-1");
	assert_int_equal(parse_netdev(netdev_61, sizeof(netdev_61) - 1, rows, 2, &n), -E2BIG);
	/* 15 numbers, a missing colon, a name with a blank, no header. */
	snprintf(bad, sizeof(bad), "a|\nb|\n eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n");
	assert_int_equal(parse_netdev(bad, strlen(bad), rows, 4, &n), -EBADMSG);
	snprintf(bad, sizeof(bad), "a|\nb|\n eth0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n");
	assert_int_equal(parse_netdev(bad, strlen(bad), rows, 4, &n), -EBADMSG);
	snprintf(bad, sizeof(bad), "a|\nb|\n et h0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n");
	assert_int_equal(parse_netdev(bad, strlen(bad), rows, 4, &n), -EBADMSG);
	snprintf(bad, sizeof(bad), " eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n");
	assert_int_equal(parse_netdev(bad, strlen(bad), rows, 4, &n), -EBADMSG);
	snprintf(bad, sizeof(bad), "a|\nb|\n eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n");
	assert_int_equal(parse_netdev(bad, strlen(bad), rows, 4, &n), -EBADMSG);
	snprintf(bad, sizeof(bad), "a|\nb|\n");
	assert_int_equal(parse_netdev(bad, strlen(bad), rows, 4, &n), 0);
	assert_int_equal(n, 0);
}

static void test_meminfo_thp(void **state)
{
	static const char mem[] = "MemTotal:        4005520 kB\nMemFree:          251232 kB\n";
	uint64_t kb = 0;
	char mode[16];

	(void)state;
	assert_int_equal(parse_meminfo_total(mem, sizeof(mem) - 1, &kb), 0);
	assert_int_equal(kb, 4005520);
	assert_int_equal(parse_meminfo_total("MemFree: 1 kB\n", 14, &kb), -EBADMSG);
	assert_int_equal(parse_meminfo_total("MemTotal: 1 MB\n", 15, &kb), -EBADMSG);
	assert_int_equal(parse_meminfo_total("MemTotal: x kB\n", 15, &kb), -EBADMSG);

	assert_int_equal(parse_thp_mode("always [madvise] never\n", 23, mode, sizeof(mode)), 0);
	assert_string_equal(mode, "madvise");
	assert_int_equal(parse_thp_mode("[always] madvise never\n", 23, mode, sizeof(mode)), 0);
	assert_string_equal(mode, "always");
	assert_int_equal(parse_thp_mode("always madvise never\n", 21, mode, sizeof(mode)), -EBADMSG);
	assert_int_equal(parse_thp_mode("[always] [never]\n", 17, mode, sizeof(mode)), -EBADMSG);
	assert_int_equal(parse_thp_mode("[alw\"ys] never\n", 15, mode, sizeof(mode)), -EBADMSG);
	assert_int_equal(parse_thp_mode("[always] never\nmore\n", 20, mode, sizeof(mode)), -EBADMSG);
	assert_int_equal(parse_thp_mode("[always]\n", 9, mode, 4), -EBADMSG);
	assert_int_equal(parse_thp_mode("", 0, mode, sizeof(mode)), -EBADMSG);
}

struct ups {
	char out[512];
	size_t n;
	int stop_at;
};

static int on_upstream(void *ctx, const char *addr, size_t len, uint32_t ms)
{
	struct ups *u = ctx;
	int k = snprintf(u->out + strlen(u->out), sizeof(u->out) - strlen(u->out), "%.*s=%u;", (int)len, addr, ms);

	(void)k;
	u->n++;
	return u->stop_at && (int)u->n == u->stop_at ? 9 : 0;
}

struct up_case {
	const char *line;
	int rc;
	const char *want;
};

static const struct up_case up_cases[] = {
	{ "{\"status\":200,\"request_time\":0.120,\"upstream_response_time\":\"0.100\",\"upstream_addr\":"
	  "\"10.0.0.5:8080\"}", 0, "10.0.0.5:8080=100;" },
	/* Two servers tried, then an internal redirect to another group; one try without a time. */
	{ "{\"upstream_addr\":\"10.0.0.5:8080, [::1]:81 : unix:/run/app.sock\",\"upstream_response_time\":"
	  "\"0.002, - : 1.5\"}", 0, "10.0.0.5:8080=2;unix:/run/app.sock=1500;" },
	/* A bare number, keys in any order, nested values skipped. */
	{ "{\"upstream_response_time\":0.25,\"x\":{\"a\":[1,2]},\"upstream_addr\":\"b:1\"}", 0, "b:1=250;" },
	/* No upstream: "-" or "". */
	{ "{\"upstream_addr\":\"-\",\"upstream_response_time\":\"-\"}", 0, "" },
	{ "{\"upstream_addr\":\"\",\"upstream_response_time\":\"\"}", 0, "" },
	/* The combined format and JSON without the key. */
	{ "127.0.0.1 - - [01/Jan/2024:00:00:00 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"-\" 0.001 -", -EBADMSG, "" },
	{ "{\"status\":200,\"request_time\":0.1}", -ENOENT, "" },
	{ "{}", -ENOENT, "" },
	/* Lists of different lengths, a bad time, a repeated key, trailing garbage, a blank in an address. */
	{ "{\"upstream_addr\":\"a:1, b:2\",\"upstream_response_time\":\"0.1\"}", -EBADMSG, "" },
	{ "{\"upstream_addr\":\"a:1\",\"upstream_response_time\":\"0.1, 0.2\"}", -EBADMSG, "" },
	{ "{\"upstream_addr\":\"a:1\",\"upstream_response_time\":\"1e3\"}", -EBADMSG, "" },
	{ "{\"upstream_addr\":\"a:1\",\"upstream_addr\":\"a:1\",\"upstream_response_time\":\"1\"}", -EBADMSG, "" },
	{ "{\"upstream_addr\":\"a:1\",\"upstream_response_time\":\"1\"} x", -EBADMSG, "" },
	{ "{\"upstream_addr\":\"a :1\",\"upstream_response_time\":\"1\"}", -EBADMSG, "" },
	{ "{\"upstream_addr\":\"a:1\"}", -EBADMSG, "" },
	{ "{\"upstream_addr\":\"a:1\",\"upstream_response_time\":\"1\"", -EBADMSG, "" },
};

static void test_upstreams(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(up_cases) / sizeof(up_cases[0]); i++) {
		struct ups u = { "", 0, 0 };
		int r = parse_access_upstreams(up_cases[i].line, strlen(up_cases[i].line), on_upstream, &u);

		if (r != up_cases[i].rc || strcmp(u.out, up_cases[i].want) != 0)
			fail_msg("case %zu: %d '%s', want %d '%s'", i, r, u.out, up_cases[i].rc, up_cases[i].want);
	}
	/* The callback's non-zero return stops the walk and comes back. */
	{
		struct ups u = { "", 0, 1 };
		const char *l = up_cases[1].line;

		assert_int_equal(parse_access_upstreams(l, strlen(l), on_upstream, &u), 9);
		assert_int_equal(u.n, 1);
	}
	/* Every prefix of a good line is refused (or, for "{", has no key), never read past. */
	for (size_t cut = 0; cut < strlen(up_cases[1].line); cut++) {
		struct ups u = { "", 0, 0 };
		char *p = malloc(cut ? cut : 1);

		assert_non_null(p);
		memcpy(p, up_cases[1].line, cut);
		assert_true(parse_access_upstreams(p, cut, on_upstream, &u) < 0);
		assert_int_equal(u.n, 0);
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_netdev),
		cmocka_unit_test(test_meminfo_thp),
		cmocka_unit_test(test_upstreams),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
