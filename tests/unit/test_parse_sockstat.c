/* Unit tests for parse_sockstat: the captured /proc/net/sockstat of kernel 6.18, and hostile inputs. */
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

struct seen {
	int n;
	int64_t used, tcp_inuse, tcp_tw, tcp_mem, udp_inuse;
};

static int on_kv(void *ctx, const char *prefix, const char *name, int64_t value)
{
	struct seen *s = ctx;

	s->n++;
	if (strcmp(prefix, "sockets") == 0 && strcmp(name, "used") == 0)
		s->used = value;
	if (strcmp(prefix, "TCP") == 0 && strcmp(name, "inuse") == 0)
		s->tcp_inuse = value;
	if (strcmp(prefix, "TCP") == 0 && strcmp(name, "tw") == 0)
		s->tcp_tw = value;
	if (strcmp(prefix, "TCP") == 0 && strcmp(name, "mem") == 0)
		s->tcp_mem = value;
	if (strcmp(prefix, "UDP") == 0 && strcmp(name, "inuse") == 0)
		s->udp_inuse = value;
	return 0;
}

static void test_synthetic(void **state)
{
	static const char text[] = "sockets: used 296\nTCP: inuse 5 orphan 0 tw 12 alloc 7 mem 1\nUDP: inuse 2 mem 2\n"
				   "UDPLITE: inuse 0\nRAW: inuse 0\nFRAG: inuse 0 memory 0\n";
	struct seen s = {0};

	(void)state;
	assert_int_equal(parse_sockstat(text, sizeof(text) - 1, on_kv, &s), 0);
	assert_int_equal(s.used, 296);
	assert_int_equal(s.tcp_inuse, 5);
	assert_int_equal(s.tcp_tw, 12);
	assert_int_equal(s.tcp_mem, 1);
	assert_int_equal(s.udp_inuse, 2);
	assert_int_equal(s.n, 12);
}

static void test_fixture(void **state)
{
	const char *srcdir = getenv("srcdir");
	char path[512], buf[4096];
	/* -1: a field the parser never reported cannot pass for the fixture's 0. */
	struct seen s = {.used = -1, .tcp_inuse = -1, .tcp_tw = -1, .tcp_mem = -1, .udp_inuse = -1};
	size_t n;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/fixtures/proc/host-6.18/sockstat", srcdir ? srcdir : ".");
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(parse_sockstat(buf, n, on_kv, &s), 0);
	/* The fixture's own figures (tests/fixtures/proc/host-6.18/sockstat), one callback per name/value pair. */
	assert_int_equal(s.used, 10);
	assert_int_equal(s.tcp_inuse, 1);
	assert_int_equal(s.tcp_tw, 0);
	assert_int_equal(s.tcp_mem, 0);
	assert_int_equal(s.udp_inuse, 0);
	assert_int_equal(s.n, 12);
}

static void test_hostile(void **state)
{
	static const struct {
		const char *text;
		size_t len; /* 0: strlen */
	} bad[] = {
		{"", 0},
		{"\n\n", 0},
		{"TCP inuse 5\n", 0},                   /* no colon */
		{"TCP: inuse\n", 0},                    /* key without value */
		{"TCP: inuse five\n", 0},               /* not a number */
		{"TCP: 5 inuse\n", 0},                  /* number where a key belongs */
		{"TCP: inuse -5\n", 0},                 /* negative */
		{"TCP: inuse 99999999999999999999\n", 0}, /* beyond u64 */
		{"TCP: inuse 9223372036854775808\n", 0},  /* beyond i64 */
		{"TCP: inuse 5\0 tw 3\n", 19},            /* embedded NUL */
		{": inuse 5\n", 0},                       /* empty prefix */
	};
	struct seen s = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);

		s.n = 0;
		if (parse_sockstat(bad[i].text, len, on_kv, &s) != -EBADMSG)
			fail_msg("case %zu accepted", i);
		assert_int_equal(s.n, 0); /* nothing delivered from a bad text */
	}
	/* A good first line does not leak through when a later one is bad. */
	assert_int_equal(parse_sockstat("TCP: inuse 5\nUDP: inuse x\n", 26, on_kv, &s), -EBADMSG);
	assert_int_equal(s.n, 0);
	/* No trailing newline is fine. */
	assert_int_equal(parse_sockstat("TCP: inuse 5 tw 1", 17, on_kv, &s), 0);
	assert_int_equal(s.tcp_tw, 1);
}

static void test_long_line(void **state)
{
	size_t n = 200000, len;
	char *big = malloc(n);

	(void)state;
	assert_non_null(big);
	len = (size_t)snprintf(big, n, "TCP:");
	while (len + 16 < n)
		len += (size_t)snprintf(big + len, n - len, " k %d", 7);
	assert_int_equal(parse_sockstat(big, len, NULL, NULL), 0);
	memset(big + 4, 'a', len - 4); /* one 200 kB key, no value */
	assert_int_equal(parse_sockstat(big, len, NULL, NULL), -EBADMSG);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synthetic),
		cmocka_unit_test(test_fixture),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_long_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
