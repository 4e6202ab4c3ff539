/*
 * Unit tests for the /proc parsers (parse_netstat.c .. parse_schedstat.c) and parse_util.c.
 *
 * Valid texts come from tests/fixtures/proc/: host-6.18/ was captured on a 2-CPU 6.18 VM (after a listen-queue
 * overflow was provoked, so ListenOverflows is not 0); history/ holds layouts of older kernels written with the
 * kernel's own printf formats. Hostile texts are inline in the tables, or built at run time when they are large.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parse.h"
#include "parse_util.h"

/* A string literal and its length, NULs included: the tables hold texts with embedded NULs. */
#define TXT(s) s, sizeof(s) - 1

static char *load(const char *rel, size_t *len)
{
	const char *dir = getenv("srcdir");
	char path[4096];
	char *buf;
	FILE *f;
	long size = -1;

	snprintf(path, sizeof(path), "%s/tests/fixtures/proc/%s", dir && *dir ? dir : ".", rel);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open fixture %s", path);
	if (fseek(f, 0, SEEK_END) == 0)
		size = ftell(f);
	if (size < 0 || fseek(f, 0, SEEK_SET) != 0)
		fail_msg("cannot size %s", path);
	/* One spare byte, never NUL-terminated: the parsers must not need a terminator. */
	buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	if (fread(buf, 1, (size_t)size, f) != (size_t)size)
		fail_msg("short read on %s", path);
	fclose(f);
	buf[size] = 'X';
	*len = (size_t)size;
	return buf;
}

/* A buffer of exactly LEN bytes with nothing after it, so ASan flags any read past the end. */
static char *exact_copy(const char *s, size_t len)
{
	char *p = malloc(len ? len : 1);

	assert_non_null(p);
	memcpy(p, s, len);
	return p;
}

/* printf into a growing heap buffer, for the large generated texts. */
struct gen {
	char *p;
	size_t len, cap;
};

static void gen_add(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gen_add(struct gen *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	if (g->len + (size_t)n + 1 > g->cap) {
		g->cap = (g->len + (size_t)n + 1) * 2;
		g->p = realloc(g->p, g->cap);
		assert_non_null(g->p);
	}
	va_start(ap, fmt);
	vsnprintf(g->p + g->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	g->len += (size_t)n;
}

/* ---- parse_util ---- */

struct num_case {
	const char *in;
	int rc;
	uint64_t u;
};

static void test_util_u64(void **state)
{
	static const struct num_case cases[] = {
		{ "0", 0, 0 },
		{ "42", 0, 42 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "00000000000000000000000000000018446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -EBADMSG, 0 },
		{ "99999999999999999999", -EBADMSG, 0 },
		{ "", -EBADMSG, 0 },
		{ "-1", -EBADMSG, 0 },
		{ "+1", -EBADMSG, 0 },
		{ "1a", -EBADMSG, 0 },
		{ " 1", -EBADMSG, 0 },
		{ "0x10", -EBADMSG, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 7;
		int rc = parse_u64(cases[i].in, strlen(cases[i].in), &v);

		if (rc != cases[i].rc)
			fail_msg("parse_u64(\"%s\") = %d, want %d", cases[i].in, rc, cases[i].rc);
		if (rc == 0 && v != cases[i].u)
			fail_msg("parse_u64(\"%s\") gave %llu", cases[i].in, (unsigned long long)v);
		if (rc != 0 && v != 7)
			fail_msg("parse_u64(\"%s\") wrote its output on failure", cases[i].in);
	}
}

static void test_util_i64_x64(void **state)
{
	static const struct {
		const char *in;
		int rc;
		int64_t v;
	} icases[] = {
		{ "-1", 0, -1 },
		{ "9223372036854775807", 0, INT64_MAX },
		{ "-9223372036854775808", 0, INT64_MIN },
		{ "9223372036854775808", -EBADMSG, 0 },
		{ "-9223372036854775809", -EBADMSG, 0 },
		{ "-", -EBADMSG, 0 },
		{ "--1", -EBADMSG, 0 },
		{ "1-", -EBADMSG, 0 },
	};
	static const struct num_case xcases[] = {
		{ "0000034a", 0, 0x34a },
		{ "DeadBeef", 0, 0xdeadbeef },
		{ "ffffffffffffffff", 0, UINT64_MAX },
		{ "0000ffffffffffffffff", 0, UINT64_MAX },
		{ "10000000000000000", -EBADMSG, 0 },
		{ "0x10", -EBADMSG, 0 },
		{ "g", -EBADMSG, 0 },
		{ "", -EBADMSG, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(icases) / sizeof(icases[0]); i++) {
		int64_t v = 0;
		int rc = parse_i64(icases[i].in, strlen(icases[i].in), &v);

		if (rc != icases[i].rc || (rc == 0 && v != icases[i].v))
			fail_msg("parse_i64(\"%s\") = %d (%lld)", icases[i].in, rc, (long long)v);
	}
	for (i = 0; i < sizeof(xcases) / sizeof(xcases[0]); i++) {
		uint64_t v = 0;
		int rc = parse_x64(xcases[i].in, strlen(xcases[i].in), &v);

		if (rc != xcases[i].rc || (rc == 0 && v != xcases[i].u))
			fail_msg("parse_x64(\"%s\") = %d (%llx)", xcases[i].in, rc, (unsigned long long)v);
	}
}

static void test_util_lines_tokens(void **state)
{
	static const struct {
		const char *in;
		size_t lines;
	} cases[] = {
		{ "", 0 }, { "a", 1 }, { "a\n", 1 }, { "a\nb", 2 }, { "\n\n", 2 }, { "a\n\nb\n", 3 },
	};
	struct parse_cursor c, line, tok;
	uint64_t v;
	char small[4];
	char *buf;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (parse_count_lines(cases[i].in, strlen(cases[i].in)) != cases[i].lines)
			fail_msg("parse_count_lines(\"%s\") != %zu", cases[i].in, cases[i].lines);
	assert_int_equal(parse_count_lines(NULL, 0), 0);

	buf = exact_copy(TXT(" ab\t 12 \nlast"));
	parse_cursor_init(&c, buf, 13);
	assert_true(parse_next_line(&c, &line));
	assert_int_equal(parse_cursor_len(&line), 8);
	assert_true(parse_next_token(&line, &tok));
	assert_true(parse_token_eq(&tok, "ab"));
	assert_true(parse_token_starts(&tok, "a"));
	assert_false(parse_token_starts(&tok, "abc"));
	assert_false(parse_token_is_digits(&tok));
	assert_int_equal(parse_token_copy(&tok, small, sizeof(small)), 0);
	assert_string_equal(small, "ab");
	assert_int_equal(parse_next_u64(&line, &v), 0);
	assert_int_equal(v, 12);
	assert_true(parse_only_blanks(&line));
	assert_int_equal(parse_next_u64(&line, &v), -ENODATA);
	assert_true(parse_next_line(&c, &line));
	assert_true(parse_next_token(&line, &tok));
	assert_true(parse_token_eq(&tok, "last"));
	assert_int_equal(parse_token_copy(&tok, small, sizeof(small)), -E2BIG);
	assert_string_equal(small, "ab");
	assert_false(parse_next_line(&c, &line));
	free(buf);

	assert_false(parse_has_nul(NULL, 0));
	assert_true(parse_has_nul(TXT("a\0b")));
	assert_int_equal(parse_add_u64(UINT64_MAX - 1, 1, &v), 0);
	assert_int_equal(v, UINT64_MAX);
	assert_int_equal(parse_add_u64(UINT64_MAX, 1, &v), -EBADMSG);
}

/* ---- parse_netstat ---- */

struct kv {
	char prefix[32];
	char name[128];
	int64_t value;
};

struct kv_log {
	struct kv *kv;
	size_t n, cap;
	size_t stop_at; /* return 7 from this call (1-based); 0: never */
};

static int kv_collect(void *ctx, const char *prefix, const char *name, int64_t value)
{
	struct kv_log *log = ctx;

	if (log->n == log->cap) {
		log->cap = log->cap ? log->cap * 2 : 64;
		log->kv = realloc(log->kv, log->cap * sizeof(*log->kv));
		assert_non_null(log->kv);
	}
	assert_true(strlen(prefix) < sizeof(log->kv->prefix));
	assert_true(strlen(name) < sizeof(log->kv->name));
	strcpy(log->kv[log->n].prefix, prefix);
	strcpy(log->kv[log->n].name, name);
	log->kv[log->n].value = value;
	log->n++;
	return log->stop_at && log->n == log->stop_at ? 7 : 0;
}

static int64_t kv_get(const struct kv_log *log, const char *prefix, const char *name)
{
	size_t i;

	for (i = 0; i < log->n; i++)
		if (strcmp(log->kv[i].prefix, prefix) == 0 && strcmp(log->kv[i].name, name) == 0)
			return log->kv[i].value;
	fail_msg("%s %s not reported", prefix, name);
	return 0;
}

struct kv_expect {
	const char *prefix, *name;
	int64_t value;
};

static void test_netstat_fixtures(void **state)
{
	/* Read from host-6.18/netstat and snmp: the listen queue of a backlog-1 socket was overflowed on purpose. */
	static const struct kv_expect netstat[] = {
		{ "TcpExt", "SyncookiesSent", 0 },       { "TcpExt", "TW", 12 },
		{ "TcpExt", "ListenOverflows", 152 },    { "TcpExt", "ListenDrops", 152 },
		{ "TcpExt", "TCPBacklogDrop", 0 },       { "TcpExt", "TCPTimeWaitOverflow", 0 },
		{ "TcpExt", "TCPSynRetrans", 114 },      { "TcpExt", "TCPRcvCoalesce", 362 },
		{ "TcpExt", "TCPAODroppedIcmps", 0 },    { "IpExt", "InOctets", 20734452 },
		{ "IpExt", "InNoECTPkts", 889 },         { "MPTcpExt", "WinProbe", 0 },
	};
	static const struct kv_expect snmp[] = {
		{ "Ip", "DefaultTTL", 64 },   { "Ip", "OutTransmits", 670 }, { "Icmp", "InDestUnreachs", 1 },
		{ "IcmpMsg", "InType3", 1 },  { "Tcp", "MaxConn", -1 },      { "Tcp", "RtoMax", 120000 },
		{ "Tcp", "ActiveOpens", 53 }, { "Tcp", "PassiveOpens", 4 },  { "Tcp", "AttemptFails", 0 },
		{ "Tcp", "EstabResets", 2 },  { "Tcp", "CurrEstab", 0 },     { "Tcp", "OutSegs", 530 },
		{ "Tcp", "RetransSegs", 114 }, { "Tcp", "InSegs", 862 },     { "Udp", "OutDatagrams", 27 },
	};
	struct kv_log log = { 0 };
	size_t len, i;
	char *buf;

	(void)state;
	buf = load("host-6.18/netstat", &len);
	assert_int_equal(parse_netstat(buf, len, kv_collect, &log), 0);
	assert_int_equal(log.n, 135 + 18 + 76);
	assert_string_equal(log.kv[0].name, "SyncookiesSent");
	assert_string_equal(log.kv[log.n - 1].prefix, "MPTcpExt");
	for (i = 0; i < sizeof(netstat) / sizeof(netstat[0]); i++)
		assert_int_equal(kv_get(&log, netstat[i].prefix, netstat[i].name), netstat[i].value);
	free(buf);

	log.n = 0;
	buf = load("host-6.18/snmp", &len);
	assert_int_equal(parse_netstat(buf, len, kv_collect, &log), 0);
	assert_int_equal(log.n, 20 + 29 + 1 + 15 + 9 + 9);
	for (i = 0; i < sizeof(snmp) / sizeof(snmp[0]); i++)
		assert_int_equal(kv_get(&log, snmp[i].prefix, snmp[i].name), snmp[i].value);

	/* A non-zero return from CB stops the walk at once and comes back unchanged. */
	log.n = 0;
	log.stop_at = 3;
	assert_int_equal(parse_netstat(buf, len, kv_collect, &log), 7);
	assert_int_equal(log.n, 3);
	free(buf);
	free(log.kv);
}

struct text_case {
	const char *name;
	const char *in;
	size_t len;
	int rc;
	size_t n; /* netstat: callbacks; others: rows or CPUs on success */
};

static const struct text_case netstat_cases[] = {
	{ "empty", TXT(""), -EBADMSG, 0 },
	{ "blank line", TXT("\n"), -EBADMSG, 0 },
	{ "header without values", TXT("TcpExt: ListenOverflows ListenDrops\n"), -EBADMSG, 0 },
	{ "second header without values", TXT("Ip: A\nIp: 1\nTcp: B C\n"), -EBADMSG, 0 },
	{ "prefix mismatch", TXT("TcpExt: A B\nIpExt: 1 2\n"), -EBADMSG, 0 },
	{ "fewer values", TXT("Tcp: A B\nTcp: 1\n"), -EBADMSG, 0 },
	{ "more values", TXT("Tcp: A\nTcp: 1 2\n"), -EBADMSG, 0 },
	{ "non-numeric", TXT("Tcp: A B\nTcp: 1 x\n"), -EBADMSG, 0 },
	{ "float", TXT("Tcp: A\nTcp: 1.5\n"), -EBADMSG, 0 },
	{ "above int64", TXT("Tcp: A\nTcp: 9223372036854775808\n"), -EBADMSG, 0 },
	{ "above uint64", TXT("Tcp: A\nTcp: 18446744073709551616\n"), -EBADMSG, 0 },
	{ "truncated mid-line", TXT("Tcp: A B C\nTcp: 1 2"), -EBADMSG, 0 },
	{ "truncated in prefix", TXT("Tcp: A B C\nTc"), -EBADMSG, 0 },
	{ "embedded NUL", TXT("Tcp: A B\nTcp: 1\0 2\n"), -EBADMSG, 0 },
	{ "NUL after valid text", TXT("Tcp: A\nTcp: 1\n\0"), -EBADMSG, 0 },
	{ "two value lines", TXT("Tcp: 1 2\nTcp: 3 4\n"), -EBADMSG, 0 },
	{ "no colon", TXT("Tcp A\nTcp 1\n"), -EBADMSG, 0 },
	{ "bare colon", TXT(": A\n: 1\n"), -EBADMSG, 0 },
	{ "blank line between pairs", TXT("Tcp: A\nTcp: 1\n\nUdp: B\nUdp: 2\n"), -EBADMSG, 0 },
	{ "bad second pair", TXT("Tcp: A\nTcp: 1\nUdp: B\nUdp: x\n"), -EBADMSG, 0 },
	{ "no trailing newline", TXT("Tcp: A B\nTcp: 1 2"), 0, 2 },
	{ "negative and extremes", TXT("Tcp: MaxConn Min\nTcp: -1 -9223372036854775808\n"), 0, 2 },
	{ "IcmpMsg pairs of different widths",
	  TXT("IcmpMsg: InType3 OutType3\nIcmpMsg: 1 2\nIcmpMsg: InType8\nIcmpMsg: 5\n"), 0, 3 },
	{ "tabs and extra blanks", TXT("Tcp:\tA  B \nTcp: 1\t2 \n"), 0, 2 },
	{ "long name",
	  TXT("Tcp: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\nTcp: 1\n"),
	  -EBADMSG, 0 },
	{ "long prefix", TXT("TcpExtTcpExtTcpExtTcpExtTcpExtTcpExt: A\nTcpExtTcpExtTcpExtTcpExtTcpExtTcpExt: 1\n"),
	  -EBADMSG, 0 },
};

static void test_netstat_cases(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(netstat_cases) / sizeof(netstat_cases[0]); i++) {
		const struct text_case *c = &netstat_cases[i];
		struct kv_log log = { 0 };
		char *buf = exact_copy(c->in, c->len);
		int rc = parse_netstat(buf, c->len, kv_collect, &log);

		if (rc != c->rc)
			fail_msg("netstat \"%s\": rc %d, want %d", c->name, rc, c->rc);
		/* A bad text reaches CB not at all, a good one once per name. */
		if (log.n != c->n)
			fail_msg("netstat \"%s\": %zu callbacks, want %zu", c->name, log.n, c->n);
		free(buf);
		free(log.kv);
	}
	assert_int_equal(parse_netstat(NULL, 0, kv_collect, NULL), -EBADMSG);
}

static void test_netstat_huge(void **state)
{
	struct gen g = { 0 };
	struct kv_log log = { 0 };
	size_t i;

	(void)state;
	/* 20000 columns on 100k+ character lines are valid: no limit is needed as nothing is allocated. */
	gen_add(&g, "TcpExt:");
	for (i = 0; i < 20000; i++)
		gen_add(&g, " N%zu", i);
	gen_add(&g, "\nTcpExt:");
	for (i = 0; i < 20000; i++)
		gen_add(&g, " %zu", i * 3);
	assert_true(g.len > 200000);
	assert_int_equal(parse_netstat(g.p, g.len, kv_collect, &log), 0);
	assert_int_equal(log.n, 20000);
	assert_int_equal(kv_get(&log, "TcpExt", "N19999"), 59997);

	/* The same with one value missing, and as a header with no value line at all. */
	log.n = 0;
	assert_int_equal(parse_netstat(g.p, g.len - 6, kv_collect, &log), -EBADMSG);
	assert_int_equal(parse_netstat(g.p, (size_t)(strchr(g.p, '\n') - g.p) + 1, kv_collect, &log), -EBADMSG);
	assert_int_equal(log.n, 0);

	/* One 100k-character name. */
	g.len = 0;
	gen_add(&g, "Tcp: ");
	for (i = 0; i < 100000; i++)
		gen_add(&g, "A");
	gen_add(&g, "\nTcp: 1\n");
	assert_int_equal(parse_netstat(g.p, g.len, kv_collect, &log), -EBADMSG);
	assert_int_equal(log.n, 0);
	free(g.p);
	free(log.kv);
}

/* ---- parse_softnet ---- */

struct softnet_expect {
	uint32_t cpu;
	uint64_t processed, dropped, time_squeeze, received_rps, flow_limit, backlog_len;
};

static void check_softnet(const char *rel, const struct softnet_expect *want, size_t nwant)
{
	struct softnet_cpu out[8];
	size_t len, n = 99, i;
	char *buf = load(rel, &len);
	int rc = parse_softnet(buf, len, out, 8, &n);

	if (rc != 0)
		fail_msg("%s: rc %d", rel, rc);
	if (n != nwant)
		fail_msg("%s: %zu rows, want %zu", rel, n, nwant);
	for (i = 0; i < n; i++) {
		const struct softnet_expect *w = &want[i];

		if (out[i].cpu != w->cpu || out[i].processed != w->processed || out[i].dropped != w->dropped ||
		    out[i].time_squeeze != w->time_squeeze || out[i].received_rps != w->received_rps ||
		    out[i].flow_limit != w->flow_limit || out[i].backlog_len != w->backlog_len)
			fail_msg("%s: row %zu differs (cpu %u processed %llx backlog %llx)", rel, i, out[i].cpu,
			         (unsigned long long)out[i].processed, (unsigned long long)out[i].backlog_len);
	}
	free(buf);
}

/* ---- parse_netstat_pick ---- */

static const struct netstat_want pick_want[] = {
	{ "TcpExt", "ListenOverflows" }, { "TcpExt", "ListenDrops" }, { "Tcp", "CurrEstab" }, { "Tcp", "MaxConn" },
	{ "Tcp", "InSegs" },             { "IpExt", "InOctets" },     { "Tcp", "A" },         { "Tcp", "B" },
	{ "Udp", "B" },                  { "TcpExt", "NoSuchName" },  { "Tcp", "Min" },       { "IcmpMsg", "InType8" },
};
#define NPICK (sizeof(pick_want) / sizeof(pick_want[0]))

/* What parse_netstat's callbacks say of the names pick_want asks for: the last value of each, and the set. */
static void expected_picks(const struct kv_log *log, int64_t *vals, uint64_t *found)
{
	*found = 0;
	for (size_t i = 0; i < log->n; i++)
		for (size_t w = 0; w < NPICK; w++)
			if (strcmp(log->kv[i].prefix, pick_want[w].prefix) == 0 &&
			    strcmp(log->kv[i].name, pick_want[w].name) == 0) {
				vals[w] = log->kv[i].value;
				*found |= 1ull << w;
			}
}

/* parse_netstat_pick agrees with parse_netstat on BUF: the same verdict and, on success, the same values. */
static void check_pick_agrees(const char *what, const char *buf, size_t len)
{
	struct kv_log log = { 0 };
	int64_t want_vals[NPICK], got_vals[NPICK];
	uint64_t want_found = 0, got_found = 0;
	int r1 = parse_netstat(buf, len, kv_collect, &log);
	int r2 = parse_netstat_pick(buf, len, pick_want, NPICK, got_vals, &got_found);

	if (r1 != r2)
		fail_msg("%s: parse_netstat %d, parse_netstat_pick %d", what, r1, r2);
	if (r1 == 0) {
		expected_picks(&log, want_vals, &want_found);
		if (want_found != got_found)
			fail_msg("%s: found %#llx, want %#llx", what, (unsigned long long)got_found,
				 (unsigned long long)want_found);
		for (size_t w = 0; w < NPICK; w++)
			if ((want_found >> w & 1) && want_vals[w] != got_vals[w])
				fail_msg("%s: %s %s = %lld, want %lld", what, pick_want[w].prefix, pick_want[w].name,
					 (long long)got_vals[w], (long long)want_vals[w]);
	}
	free(log.kv);
}

static void test_netstat_pick_fixtures(void **state)
{
	int64_t vals[NPICK];
	uint64_t found = 0;
	size_t len;
	char *buf;

	(void)state;
	/* One set filled from two files, as the sampler does. */
	buf = load("host-6.18/netstat", &len);
	assert_int_equal(parse_netstat_pick(buf, len, pick_want, NPICK, vals, &found), 0);
	check_pick_agrees("netstat", buf, len);
	free(buf);
	buf = load("host-6.18/snmp", &len);
	assert_int_equal(parse_netstat_pick(buf, len, pick_want, NPICK, vals, &found), 0);
	check_pick_agrees("snmp", buf, len);
	free(buf);
	assert_int_equal(found, (1u << 0) | (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5));
	assert_int_equal(vals[0], 152);
	assert_int_equal(vals[1], 152);
	assert_int_equal(vals[2], 0);
	assert_int_equal(vals[3], -1);
	assert_int_equal(vals[4], 862);
	assert_int_equal(vals[5], 20734452);
}

static void test_netstat_pick_cases(void **state)
{
	struct gen g = { 0 };
	int64_t vals[NPICK];
	uint64_t found = 0;
	struct netstat_want many[65];

	(void)state;
	for (size_t i = 0; i < sizeof(netstat_cases) / sizeof(netstat_cases[0]); i++) {
		char *buf = exact_copy(netstat_cases[i].in, netstat_cases[i].len);

		check_pick_agrees(netstat_cases[i].name, buf, netstat_cases[i].len);
		free(buf);
	}
	/* Picked from a valid text; one value, then the maximum of a line of 20000. */
	assert_int_equal(parse_netstat_pick(TXT("Tcp: MaxConn Min\nTcp: -1 -9223372036854775808\n"), pick_want, NPICK,
					    vals, &found), 0);
	assert_int_equal(found, 1u << 3 | 1u << 10);
	assert_true(vals[10] == INT64_MIN);
	gen_add(&g, "TcpExt:");
	for (size_t i = 0; i < 20000; i++)
		gen_add(&g, " N%zu", i);
	gen_add(&g, " ListenOverflows\nTcpExt:");
	for (size_t i = 0; i < 20000; i++)
		gen_add(&g, " %zu", i * 3);
	gen_add(&g, " 7\n");
	found = 0;
	assert_int_equal(parse_netstat_pick(g.p, g.len, pick_want, NPICK, vals, &found), 0);
	assert_int_equal(found, 1u << 0);
	assert_int_equal(vals[0], 7);
	free(g.p);

	/* Bad arguments. */
	for (size_t i = 0; i < 65; i++)
		many[i] = (struct netstat_want){ "Tcp", "A" };
	assert_int_equal(parse_netstat_pick(TXT("Tcp: A\nTcp: 1\n"), many, 65, vals, &found), -EINVAL);
	assert_int_equal(parse_netstat_pick(TXT("Tcp: A\nTcp: 1\n"), many, 64, NULL, &found), -EINVAL);
	many[0].name = "";
	assert_int_equal(parse_netstat_pick(TXT("Tcp: A\nTcp: 1\n"), many, 1, vals, &found), -EINVAL);
	assert_int_equal(parse_netstat_pick(NULL, 0, pick_want, NPICK, vals, &found), -EBADMSG);
	/* Nothing wanted: a validation pass. */
	assert_int_equal(parse_netstat_pick(TXT("Tcp: A\nTcp: 1\n"), NULL, 0, NULL, NULL), 0);
	assert_int_equal(parse_netstat_pick(TXT("Tcp: A\nTcp: x\n"), NULL, 0, NULL, NULL), -EBADMSG);
}

/* Cut short anywhere and with bytes changed at random: the fast walk must agree with parse_netstat each time. */
static void test_netstat_pick_differential(void **state)
{
	static const char *const files[] = { "host-6.18/netstat", "host-6.18/snmp" };
	static const char bytes[] = { ' ', '\t', '\n', ':', '-', '0', '9', 'a', 'Z', '_', '.', '\0', '\r', 'T' };
	unsigned seed = 12345;

	(void)state;
	for (size_t f = 0; f < 2; f++) {
		size_t len;
		char *buf = load(files[f], &len);

		for (size_t cut = 0; cut <= len; cut += 7) {
			char *p = exact_copy(buf, cut);

			check_pick_agrees("prefix", p, cut);
			free(p);
		}
		for (int round = 0; round < 3000; round++) {
			char *p = exact_copy(buf, len);
			char what[64];

			for (int k = 0; k < 1 + round % 3; k++) {
				seed = seed * 1103515245u + 12345u;
				p[(seed >> 8) % len] = bytes[(seed >> 20) % sizeof(bytes)];
			}
			snprintf(what, sizeof(what), "%s mutation %d", files[f], round);
			check_pick_agrees(what, p, len);
			free(p);
		}
		free(buf);
	}
}

static void test_softnet_fixtures(void **state)
{
	static const struct softnet_expect host[] = {
		{ 0, 0x31, 0, 0, 0, 0, 0 },
		{ 1, 0x34a, 0, 0, 0, 0, 0 },
	};
	static const struct softnet_expect v3_2[] = {
		{ 0, 0x2a4f13c9, 0, 0x11f, 0, 0, UINT64_MAX },
		{ 1, 0x0c1d22e0, 0x12, 0xa4, 0x1f3a2, 0, UINT64_MAX },
		{ 2, 0x0b9f0a17, 0, 0x98, 0x1e871, 0, UINT64_MAX },
		{ 3, 0x0ba2c4d5, 0, 0x9c, 0x1f009, 0, UINT64_MAX },
	};
	static const struct softnet_expect v4_19[] = {
		{ 0, 0x7f3e21a0, 0x4d2, 0x2b67, 0, 0, UINT64_MAX },
		{ 1, 0x1a2b3c4d, 0, 0xe11, 0x3a1f7, 7, UINT64_MAX },
	};
	static const struct softnet_expect v5_10[] = {
		{ 0, 0x5e1f0c33, 0, 0xa0b, 0, 0, 0 },
		{ 1, 0x5d7a9e01, 2, 0x998, 0, 0, 4 },
		{ 2, 0x5f00d2c8, 0, 0xa71, 0, 0, 0 },
		{ 3, 0x5e88aa10, 0, 0xa22, 0, 0, 1 },
	};
	/* CPU 2 is offline: the third row is CPU 3, which only the index column can tell. */
	static const struct softnet_expect v6_offline[] = {
		{ 0, 0x13a8f2, 0, 0x31, 0, 0, 0 },
		{ 1, 0x24c1e0, 0x2a, 0x4e, 0x105, 3, 9 },
		{ 3, 0x1f0b7d, 0, 0x40, 0xf1, 0, 2 },
	};

	(void)state;
	check_softnet("host-6.18/softnet_stat", host, 2);
	check_softnet("history/softnet_stat-3.2-10col", v3_2, 4);
	check_softnet("history/softnet_stat-4.19-11col", v4_19, 2);
	check_softnet("history/softnet_stat-5.10-13col", v5_10, 4);
	check_softnet("history/softnet_stat-6.x-15col-cpu2-offline", v6_offline, 3);
}

#define SN10 "00000001 00000002 00000003 00000000 00000000 00000000 00000000 00000000 00000000 0000000a"
#define SN13(cpu) SN10 " 0000000b 0000000c " cpu

static const struct text_case softnet_cases[] = {
	{ "empty", TXT(""), -EBADMSG, 0 },
	{ "blank line", TXT("\n"), -EBADMSG, 0 },
	{ "9 columns", TXT("00000001 00000002 00000003 00000000 00000000 00000000 00000000 00000000 00000000\n"),
	  -EBADMSG, 0 },
	{ "12 columns", TXT(SN10 " 0000000b 0000000c\n"), -EBADMSG, 0 },
	{ "14 columns", TXT(SN13("00000000") " 00000000\n"), -EBADMSG, 0 },
	{ "10 columns", TXT(SN10 "\n" SN10 "\n"), 0, 2 },
	{ "17 columns (appended)", TXT(SN13("00000005") " 00000001 00000002 00000003 00000004\n"), 0, 1 },
	{ "33 columns",
	  TXT(SN13("00000000") " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"), -EBADMSG, 0 },
	{ "widths differ", TXT(SN10 "\n" SN10 " 00000000\n"), -EBADMSG, 0 },
	{ "truncated mid-line", TXT(SN10 "\n00000001 00000002 0000"), -EBADMSG, 0 },
	{ "no trailing newline", TXT(SN10 "\n" SN10), 0, 2 },
	{ "non-hex", TXT("0000000g 00000002 00000003 00000000 00000000 00000000 00000000 00000000 00000000 0\n"),
	  -EBADMSG, 0 },
	{ "0x prefix", TXT("0x000001 00000002 00000003 00000000 00000000 00000000 00000000 00000000 00000000 0\n"),
	  -EBADMSG, 0 },
	{ "above uint64",
	  TXT("10000000000000000 0 0 0 0 0 0 0 0 0\n"), -EBADMSG, 0 },
	{ "embedded NUL", TXT(SN10 "\n\0" SN10 "\n"), -EBADMSG, 0 },
	{ "cpu index repeats", TXT(SN13("00000001") "\n" SN13("00000001") "\n"), -EBADMSG, 0 },
	{ "cpu index goes back", TXT(SN13("00000003") "\n" SN13("00000001") "\n"), -EBADMSG, 0 },
	{ "cpu index above uint32", TXT(SN13("100000000") "\n"), -EBADMSG, 0 },
	{ "more rows than max", TXT(SN10 "\n" SN10 "\n" SN10 "\n" SN10 "\n" SN10 "\n"), -E2BIG, 0 },
};

static void test_softnet_cases(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(softnet_cases) / sizeof(softnet_cases[0]); i++) {
		const struct text_case *c = &softnet_cases[i];
		struct softnet_cpu out[4];
		size_t n = 99;
		char *buf = exact_copy(c->in, c->len);
		int rc = parse_softnet(buf, c->len, out, 4, &n);

		if (rc != c->rc)
			fail_msg("softnet \"%s\": rc %d, want %d", c->name, rc, c->rc);
		if (rc == 0 && n != c->n)
			fail_msg("softnet \"%s\": %zu rows, want %zu", c->name, n, c->n);
		if (rc != 0 && n != 99)
			fail_msg("softnet \"%s\": N written on failure", c->name);
		free(buf);
	}
}

static void test_softnet_generated(void **state)
{
	struct softnet_cpu out[4];
	struct gen g = { 0 };
	size_t n, i;

	(void)state;
	/* An appended column seen as CPU 5, received_rps 0xa, backlog 0xc. */
	assert_int_equal(parse_softnet(TXT(SN13("00000005") " 00000001 00000002 00000003 00000004\n"), out, 4, &n), 0);
	assert_int_equal(out[0].cpu, 5);
	assert_int_equal(out[0].received_rps, 0xa);
	assert_int_equal(out[0].flow_limit, 0xb);
	assert_int_equal(out[0].backlog_len, 0xc);
	/* A 100k-character row of 12500 columns. */
	for (i = 0; i < 12500; i++)
		gen_add(&g, "%08x ", (unsigned)i);
	gen_add(&g, "\n");
	assert_int_equal(parse_softnet(g.p, g.len, out, 4, &n), -EBADMSG);
	/* One 100k-digit number of zeros is a valid 0, not an overflow; with a leading 1 it overflows. */
	g.len = 0;
	for (i = 0; i < 100000; i++)
		gen_add(&g, "0");
	gen_add(&g, " 0 0 0 0 0 0 0 0 0\n");
	assert_int_equal(parse_softnet(g.p, g.len, out, 4, &n), 0);
	assert_int_equal(out[0].processed, 0);
	g.p[0] = '1';
	assert_int_equal(parse_softnet(g.p, g.len, out, 4, &n), -EBADMSG);
	free(g.p);
	assert_int_equal(parse_softnet(NULL, 0, out, 4, &n), -EBADMSG);
}

/* ---- parse_softirqs ---- */

static void test_softirqs_fixture(void **state)
{
	uint64_t rx[4] = { 0 }, tx[4] = { 0 };
	size_t len, ncpu = 0;
	char *buf = load("host-6.18/softirqs", &len);

	(void)state;
	assert_int_equal(parse_softirqs(buf, len, rx, tx, 4, &ncpu), 0);
	assert_int_equal(ncpu, 2);
	assert_int_equal(rx[0], 425);
	assert_int_equal(rx[1], 538);
	assert_int_equal(tx[0], 5);
	assert_int_equal(tx[1], 0);
	/* Two CPU columns do not fit in one slot. */
	assert_int_equal(parse_softirqs(buf, len, rx, tx, 1, &ncpu), -E2BIG);
	free(buf);
}

#define SI_HDR "                    CPU0       CPU1       \n"
static const struct text_case softirqs_cases[] = {
	{ "empty", TXT(""), -EBADMSG, 0 },
	{ "header only", TXT(SI_HDR), -EBADMSG, 0 },
	{ "no CPU columns", TXT("   \n      NET_TX: \n      NET_RX: \n"), -EBADMSG, 0 },
	{ "bad header label", TXT("CPU0 CPUx\nNET_TX: 1 2\nNET_RX: 3 4\n"), -EBADMSG, 0 },
	{ "minimal", TXT("CPU0 CPU1\nNET_TX: 1 2\nNET_RX: 3 4"), 0, 2 },
	{ "no NET_TX", TXT(SI_HDR "      NET_RX:        425        538\n"), -EBADMSG, 0 },
	{ "no NET_RX", TXT(SI_HDR "      NET_TX:        425        538\n"), -EBADMSG, 0 },
	{ "NET_RX twice", TXT(SI_HDR "NET_TX: 1 2\nNET_RX: 3 4\nNET_RX: 3 4\n"), -EBADMSG, 0 },
	{ "row too short", TXT(SI_HDR "NET_TX: 1 2\nNET_RX: 3\n"), -EBADMSG, 0 },
	{ "row too long", TXT(SI_HDR "NET_TX: 1 2\nNET_RX: 3 4 5\n"), -EBADMSG, 0 },
	{ "other row too short", TXT(SI_HDR "HI: 0\nNET_TX: 1 2\nNET_RX: 3 4\n"), -EBADMSG, 0 },
	{ "truncated mid-line", TXT(SI_HDR "NET_TX: 1 2\nNET_RX:   3"), -EBADMSG, 0 },
	{ "non-numeric", TXT(SI_HDR "NET_TX: 1 2\nNET_RX: 3 four\n"), -EBADMSG, 0 },
	{ "above uint64", TXT(SI_HDR "NET_TX: 1 2\nNET_RX: 3 18446744073709551616\n"), -EBADMSG, 0 },
	{ "label without colon", TXT(SI_HDR "NET_TX 1 2\nNET_RX: 3 4\n"), -EBADMSG, 0 },
	{ "blank line", TXT(SI_HDR "NET_TX: 1 2\n\nNET_RX: 3 4\n"), -EBADMSG, 0 },
	{ "embedded NUL", TXT(SI_HDR "NET_TX: 1 2\nNET_RX: 3\0 4\n"), -EBADMSG, 0 },
	{ "too many CPUs", TXT("CPU0 CPU1 CPU2 CPU3 CPU4\nNET_TX: 1 2 3 4 5\nNET_RX: 1 2 3 4 5\n"), -E2BIG, 0 },
};

static void test_softirqs_cases(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(softirqs_cases) / sizeof(softirqs_cases[0]); i++) {
		const struct text_case *c = &softirqs_cases[i];
		uint64_t rx[4], tx[4];
		size_t ncpu = 99;
		char *buf = exact_copy(c->in, c->len);
		int rc = parse_softirqs(buf, c->len, rx, tx, 4, &ncpu);

		if (rc != c->rc)
			fail_msg("softirqs \"%s\": rc %d, want %d", c->name, rc, c->rc);
		if (rc == 0 && (ncpu != c->n || rx[0] != 3 || tx[1] != 2))
			fail_msg("softirqs \"%s\": wrong values", c->name);
		free(buf);
	}
}

/* ---- parse_stat ---- */

static void test_stat_fixtures(void **state)
{
	struct cpu_times cpus[8];
	struct proc_stat st = { .cpus = cpus };
	size_t len, i;
	char *buf;

	(void)state;
	buf = load("host-6.18/stat", &len);
	assert_int_equal(parse_stat(buf, len, &st, 8), 0);
	assert_int_equal(st.total.cpu, -1);
	assert_int_equal(st.total.user, 2556);
	assert_int_equal(st.total.system, 2014);
	assert_int_equal(st.total.idle, 66376);
	assert_int_equal(st.total.iowait, 408);
	assert_int_equal(st.total.softirq, 72);
	assert_int_equal(st.total.steal, 160);
	assert_int_equal(st.ncpu, 2);
	assert_int_equal(cpus[1].cpu, 1);
	assert_int_equal(cpus[1].user, 1812);
	assert_int_equal(cpus[1].steal, 86);
	assert_int_equal(st.ctxt, 255923);
	assert_int_equal(st.procs_running, 1);
	assert_int_equal(st.procs_blocked, 0);
	assert_int_equal(parse_stat(buf, len, &st, 1), -E2BIG);
	free(buf);

	/* 2.6.9: seven columns, so steal reads 0; no softirq line. */
	buf = load("history/stat-2.6.9-7col", &len);
	assert_int_equal(parse_stat(buf, len, &st, 8), 0);
	assert_int_equal(st.ncpu, 4);
	assert_int_equal(st.total.user, 6948095);
	assert_int_equal(st.total.irq, 5321);
	assert_int_equal(st.total.softirq, 140259);
	for (i = 0; i < 4; i++) {
		assert_int_equal(cpus[i].cpu, (int)i);
		assert_int_equal(cpus[i].steal, 0);
	}
	assert_int_equal(cpus[3].softirq, 30566);
	assert_int_equal(st.ctxt, 1990473212);
	assert_int_equal(st.procs_running, 3);
	assert_int_equal(st.procs_blocked, 1);
	free(buf);
}

#define ST_TAIL "ctxt 10\nprocs_running 2\nprocs_blocked 3\n"
static const struct text_case stat_cases[] = {
	{ "empty", TXT(""), -EBADMSG, 0 },
	{ "minimal", TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\n" ST_TAIL), 0, 1 },
	{ "offline cpu1", TXT("cpu 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\ncpu2 1 2 3 4 5 6 7 8\n" ST_TAIL), 0, 2 },
	{ "no trailing newline", TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\nctxt 10\nprocs_running 2\nprocs_blocked 3"), 0, 1 },
	{ "blank and unknown lines", TXT("cpu 1 2 3 4\n\ncpu0 1 2 3 4\nfuture_key x y z\n" ST_TAIL), 0, 1 },
	{ "no cpu lines", TXT(ST_TAIL), -EBADMSG, 0 },
	{ "no per-cpu lines", TXT("cpu 1 2 3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "per-cpu before total", TXT("cpu0 1 2 3 4\ncpu 1 2 3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "total twice", TXT("cpu 1 2 3 4\ncpu 1 2 3 4\ncpu0 1 2 3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "3 columns", TXT("cpu 1 2 3\ncpu0 1 2 3\n" ST_TAIL), -EBADMSG, 0 },
	{ "33 columns", TXT("cpu 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 "
	                    "33\ncpu0 1 2 3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "widths differ", TXT("cpu 1 2 3 4 5\ncpu0 1 2 3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "truncated cpu line", TXT("cpu 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\ncpu1 1 2 3 4 5 6 7 8\ncpu2 1 2 3"),
	  -EBADMSG, 0 },
	{ "truncated before procs_blocked", TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\nctxt 10\nprocs_running 2\nprocs_bl"),
	  -EBADMSG, 0 },
	{ "no ctxt", TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\nprocs_running 2\nprocs_blocked 3\n"), -EBADMSG, 0 },
	{ "ctxt twice", TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\nctxt 1\n" ST_TAIL), -EBADMSG, 0 },
	{ "ctxt two values", TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\nctxt 10 11\nprocs_running 2\nprocs_blocked 3\n"),
	  -EBADMSG, 0 },
	{ "ctxt empty", TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\nctxt\nprocs_running 2\nprocs_blocked 3\n"), -EBADMSG, 0 },
	{ "bad cpu label", TXT("cpu 1 2 3 4\ncpux 1 2 3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "cpu id repeats", TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\ncpu0 1 2 3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "cpu id above int", TXT("cpu 1 2 3 4\ncpu2147483648 1 2 3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "non-numeric", TXT("cpu 1 2 3 4\ncpu0 1 2 x 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "negative", TXT("cpu 1 2 3 4\ncpu0 1 2 -3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "above uint64", TXT("cpu 1 2 3 18446744073709551616\ncpu0 1 2 3 4\n" ST_TAIL), -EBADMSG, 0 },
	{ "embedded NUL", TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\nintr 0\0\n" ST_TAIL), -EBADMSG, 0 },
	{ "more cpus than max",
	  TXT("cpu 1 2 3 4\ncpu0 1 2 3 4\ncpu1 1 2 3 4\ncpu2 1 2 3 4\ncpu3 1 2 3 4\ncpu4 1 2 3 4\n" ST_TAIL), -E2BIG, 0 },
};

static void test_stat_cases(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(stat_cases) / sizeof(stat_cases[0]); i++) {
		const struct text_case *c = &stat_cases[i];
		struct cpu_times cpus[4];
		struct proc_stat st = { .cpus = cpus };
		char *buf = exact_copy(c->in, c->len);
		int rc = parse_stat(buf, c->len, &st, 4);

		if (rc != c->rc)
			fail_msg("stat \"%s\": rc %d, want %d", c->name, rc, c->rc);
		if (rc == 0 && (st.ncpu != c->n || st.ctxt != 10 || st.procs_running != 2 || st.procs_blocked != 3 ||
		                cpus[0].system != 3 || st.total.idle != 4))
			fail_msg("stat \"%s\": wrong values", c->name);
		free(buf);
	}
}

static void test_stat_generated(void **state)
{
	struct cpu_times cpus[4];
	struct proc_stat st = { .cpus = cpus };
	struct gen g = { 0 };
	size_t i;

	(void)state;
	/* cpu ids skip over an offline CPU. */
	assert_int_equal(parse_stat(TXT("cpu 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\ncpu2 1 2 3 4 5 6 7 9\n" ST_TAIL),
	                            &st, 4), 0);
	assert_int_equal(cpus[1].cpu, 2);
	assert_int_equal(cpus[1].steal, 9);
	/* A 100k-character intr line is skipped; a 100k-character cpu line is refused. */
	gen_add(&g, "cpu 1 2 3 4\ncpu0 1 2 3 4\nintr");
	for (i = 0; i < 25000; i++)
		gen_add(&g, " %zu", i % 10);
	gen_add(&g, "\n" ST_TAIL);
	assert_int_equal(parse_stat(g.p, g.len, &st, 4), 0);
	g.len = 0;
	gen_add(&g, "cpu");
	for (i = 0; i < 50000; i++)
		gen_add(&g, " 1");
	gen_add(&g, "\ncpu0 1 2 3 4\n" ST_TAIL);
	assert_int_equal(parse_stat(g.p, g.len, &st, 4), -EBADMSG);
	free(g.p);
}

/* ---- parse_interrupts ---- */

static const struct irq_row *irq_find(const struct irq_table *t, const char *id)
{
	size_t i;

	for (i = 0; i < t->nirq; i++)
		if (strcmp(t->rows[i].id, id) == 0)
			return &t->rows[i];
	fail_msg("irq %s not found", id);
	return NULL;
}

static uint64_t irq_count(const struct irq_table *t, const char *id, size_t cpu)
{
	return t->counts[(size_t)(irq_find(t, id) - t->rows) * t->ncpu + cpu];
}

static void test_interrupts_host(void **state)
{
	struct irq_table t;
	size_t len;
	char *buf = load("host-6.18/interrupts", &len);

	(void)state;
	assert_int_equal(parse_interrupts(buf, len, &t), 0);
	assert_int_equal(t.ncpu, 2);
	assert_int_equal(t.nirq, 35);
	assert_string_equal(t.rows[0].id, "24");
	assert_string_equal(t.rows[0].desc, "IO-APIC 5-edge ACPI:Ged");
	assert_string_equal(irq_find(&t, "36")->desc, "PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0");
	assert_int_equal(irq_count(&t, "36", 1), 35981);
	assert_int_equal(irq_count(&t, "38", 1), 477);
	assert_string_equal(irq_find(&t, "38")->desc, "PCI-MSIX-0000:00:03.0 1-edge virtio2-input.0");
	assert_int_equal(irq_count(&t, "41", 0), 1504);
	assert_int_equal(irq_find(&t, "LOC")->total, 15532 + 17906);
	assert_string_equal(irq_find(&t, "LOC")->desc, "Local timer interrupts");
	assert_int_equal(irq_find(&t, "CAL")->total, 26810 + 19011);
	assert_string_equal(irq_find(&t, "ERR")->desc, "");
	assert_string_equal(t.rows[t.nirq - 1].id, "PIW");
	irq_table_free(&t);
	assert_null(t.rows);
	assert_int_equal(t.nirq, 0);
	irq_table_free(&t);
	free(buf);
}

static void test_interrupts_history(void **state)
{
	struct irq_table t;
	size_t len, j;
	uint64_t loc = 0;
	char *buf;

	(void)state;
	buf = load("history/interrupts-5.15-kvm-8cpu", &len);
	assert_int_equal(parse_interrupts(buf, len, &t), 0);
	assert_int_equal(t.ncpu, 8);
	assert_int_equal(t.nirq, 32 + 20);
	assert_string_equal(irq_find(&t, "11")->desc, "IO-APIC 11-fasteoi uhci_hcd:usb1, virtio2");
	assert_string_equal(irq_find(&t, "27")->desc, "PCI-MSI 49155-edge virtio0-input.1");
	assert_int_equal(irq_count(&t, "27", 2), 8813456);
	assert_int_equal(irq_find(&t, "27")->total, 8813456);
	assert_string_equal(irq_find(&t, "37")->desc, "PCI-MSI 81922-edge eth1-TxRx-2");
	assert_int_equal(irq_count(&t, "37", 2), 4410022);
	assert_string_equal(irq_find(&t, "44")->desc, "PCI-MSI 98308-edge mlx5_comp3@pci:0000:00:06.0");
	assert_int_equal(irq_count(&t, "44", 3), 903000);
	for (j = 0; j < 8; j++)
		loc += 88231005 + 1013 * j;
	assert_int_equal(irq_find(&t, "LOC")->total, loc);
	assert_int_equal(irq_count(&t, "LOC", 7), 88238096);
	/* MIS: one global count, the other columns 0. */
	assert_int_equal(irq_find(&t, "MIS")->total, 7);
	assert_int_equal(irq_count(&t, "MIS", 0), 7);
	for (j = 1; j < 8; j++)
		assert_int_equal(irq_count(&t, "MIS", j), 0);
	assert_string_equal(irq_find(&t, "MIS")->desc, "");
	assert_string_equal(irq_find(&t, "PIN")->desc, "Posted-interrupt notification event");
	irq_table_free(&t);
	free(buf);

	/* arm64, CPU 2 offline: three columns; "IPI0:4294967295" has its first count glued to the colon. */
	buf = load("history/interrupts-6.1-arm64-cpu2-offline", &len);
	assert_int_equal(parse_interrupts(buf, len, &t), 0);
	assert_int_equal(t.ncpu, 3);
	assert_int_equal(t.nirq, 10 + 7 + 1);
	assert_int_equal(irq_find(&t, "11")->total, 1887331204ull + 1772003318ull + 1801772590ull);
	assert_string_equal(irq_find(&t, "11")->desc, "GICv3 27 Level arch_timer");
	assert_int_equal(irq_count(&t, "52", 2), 77120368);
	assert_string_equal(irq_find(&t, "52")->desc, "ITS-MSI 1048578 Edge eth0-TxRx-2");
	assert_int_equal(irq_count(&t, "IPI0", 0), 4294967295ull);
	assert_int_equal(irq_count(&t, "IPI0", 1), 912003311);
	assert_int_equal(irq_count(&t, "IPI0", 2), 1000000000);
	assert_string_equal(irq_find(&t, "IPI0")->desc, "Rescheduling interrupts");
	assert_string_equal(irq_find(&t, "IPI3")->desc, "CPU stop (for crash dump) interrupts");
	assert_int_equal(irq_find(&t, "Err")->total, 0);
	irq_table_free(&t);
	free(buf);
}

#define IRQ_HDR "           CPU0       CPU1       \n"
static const struct text_case interrupts_cases[] = {
	{ "empty", TXT(""), -EBADMSG, 0 },
	{ "header only", TXT(IRQ_HDR), -EBADMSG, 0 },
	{ "no CPU columns", TXT("   \n  0: 1 timer\n"), -EBADMSG, 0 },
	{ "bad header label", TXT("CPU0 cpu1\n  0: 1 2 timer\n"), -EBADMSG, 0 },
	{ "minimal", TXT(IRQ_HDR "  0:   1   2  IO-APIC   2-edge      timer"), 0, 1 },
	{ "single count", TXT(IRQ_HDR "ERR:          3\nMIS:          0\n"), 0, 2 },
	{ "row without counts", TXT(IRQ_HDR "NMI:   Non-maskable interrupts\n"), -EBADMSG, 0 },
	{ "row without colon", TXT(IRQ_HDR "  0   1   2  timer\n"), -EBADMSG, 0 },
	{ "empty id", TXT(IRQ_HDR "  :   1   2  timer\n"), -EBADMSG, 0 },
	{ "id too long", TXT(IRQ_HDR "0123456789abcdef: 1 2 timer\n"), -EBADMSG, 0 },
	{ "truncated in id", TXT(IRQ_HDR "  0:   1   2  timer\n  2"), -EBADMSG, 0 },
	{ "blank line", TXT(IRQ_HDR "  0:   1   2  timer\n\n  1:   1   2  i8042\n"), -EBADMSG, 0 },
	{ "above uint64", TXT(IRQ_HDR "  0:   18446744073709551616   2  timer\n"), -EBADMSG, 0 },
	{ "total above uint64", TXT(IRQ_HDR "  0:   18446744073709551615   1  timer\n"), -EBADMSG, 0 },
	{ "embedded NUL", TXT(IRQ_HDR "  0:   1   2  ti\0mer\n"), -EBADMSG, 0 },
	{ "control byte in id", TXT(IRQ_HDR "\x01:   1   2  timer\n"), -EBADMSG, 0 },
};

static void test_interrupts_cases(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(interrupts_cases) / sizeof(interrupts_cases[0]); i++) {
		const struct text_case *c = &interrupts_cases[i];
		struct irq_table t;
		char *buf = exact_copy(c->in, c->len);
		int rc = parse_interrupts(buf, c->len, &t);

		if (rc != c->rc)
			fail_msg("interrupts \"%s\": rc %d, want %d", c->name, rc, c->rc);
		if (rc == 0 && (t.nirq != c->n || t.ncpu != 2))
			fail_msg("interrupts \"%s\": %zu rows", c->name, t.nirq);
		if (rc != 0 && (t.rows || t.counts || t.nirq || t.ncpu))
			fail_msg("interrupts \"%s\": table not zeroed on failure", c->name);
		irq_table_free(&t);
		free(buf);
	}
}

static void test_interrupts_generated(void **state)
{
	struct irq_table t;
	struct gen g = { 0 };
	size_t i;

	(void)state;
	/* Blank runs fold to one space and a long description is cut to fit. */
	gen_add(&g, IRQ_HDR " 16:  5  6   IO-APIC  16-fasteoi   ");
	for (i = 0; i < 20000; i++)
		gen_add(&g, "%sehci_hcd:usb%zu", i ? ",    " : "", i);
	gen_add(&g, "\n");
	assert_true(g.len > 100000);
	assert_int_equal(parse_interrupts(g.p, g.len, &t), 0);
	assert_int_equal(t.rows[0].total, 11);
	/* The 79th byte would be a separator, which is dropped rather than left dangling. */
	assert_string_equal(t.rows[0].desc,
	                    "IO-APIC 16-fasteoi ehci_hcd:usb0, ehci_hcd:usb1, ehci_hcd:usb2, ehci_hcd:usb3,");
	irq_table_free(&t);

	/* More counts than CPUs: the extra digits begin the description. */
	assert_int_equal(parse_interrupts(TXT(IRQ_HDR "  0:  1  2  3  x\n"), &t), 0);
	assert_int_equal(t.rows[0].total, 3);
	assert_string_equal(t.rows[0].desc, "3 x");
	irq_table_free(&t);

	/* 8192 rows fit; 8193 do not. */
	g.len = 0;
	gen_add(&g, IRQ_HDR);
	for (i = 0; i < 8192; i++)
		gen_add(&g, "%zu: %zu 1 x\n", i, i);
	assert_int_equal(parse_interrupts(g.p, g.len, &t), 0);
	assert_int_equal(t.nirq, 8192);
	assert_int_equal(t.counts[8191 * 2], 8191);
	irq_table_free(&t);
	gen_add(&g, "8192: 1 1 x\n");
	assert_int_equal(parse_interrupts(g.p, g.len, &t), -E2BIG);
	assert_null(t.rows);

	/* PARSE_MAX_CPUS columns fit; one more does not. */
	g.len = 0;
	for (i = 0; i < PARSE_MAX_CPUS; i++)
		gen_add(&g, " CPU%zu", i);
	gen_add(&g, "\nLOC:");
	for (i = 0; i < PARSE_MAX_CPUS; i++)
		gen_add(&g, " %zu", i);
	gen_add(&g, " Local timer interrupts\n");
	assert_int_equal(parse_interrupts(g.p, g.len, &t), 0);
	assert_int_equal(t.ncpu, PARSE_MAX_CPUS);
	assert_int_equal(t.rows[0].total, (uint64_t)PARSE_MAX_CPUS * (PARSE_MAX_CPUS - 1) / 2);
	irq_table_free(&t);
	g.len = 0;
	for (i = 0; i <= PARSE_MAX_CPUS; i++)
		gen_add(&g, " CPU%zu", i);
	gen_add(&g, "\nERR: 0\n");
	assert_int_equal(parse_interrupts(g.p, g.len, &t), -E2BIG);
	free(g.p);
	assert_int_equal(parse_interrupts(NULL, 0, &t), -EBADMSG);
}

/* ---- parse_schedstat, parse_ctxt_switches ---- */

static void test_schedstat_fixtures(void **state)
{
	uint64_t run = 0, wait = 0, slices = 0, vol = 0, nonvol = 0;
	size_t len;
	char *buf;

	(void)state;
	buf = load("host-6.18/self_schedstat", &len);
	assert_int_equal(parse_schedstat(buf, len, &run, &wait, &slices), 0);
	assert_int_equal(run, 577872452);
	assert_int_equal(wait, 447338);
	assert_int_equal(slices, 43);
	free(buf);
	buf = load("host-6.18/self_status", &len);
	assert_int_equal(parse_ctxt_switches(buf, len, &vol, &nonvol), 0);
	assert_int_equal(vol, 34);
	assert_int_equal(nonvol, 8);
	free(buf);
}

static const struct text_case schedstat_cases[] = {
	{ "empty", TXT(""), -EBADMSG, 0 },
	{ "valid", TXT("577872452 447338 43\n"), 0, 0 },
	{ "no trailing newline", TXT("577872452 447338 43"), 0, 0 },
	{ "two numbers", TXT("577872452 447338\n"), -EBADMSG, 0 },
	{ "truncated mid-line", TXT("577872452 44"), -EBADMSG, 0 },
	{ "four numbers", TXT("577872452 447338 43 1\n"), -EBADMSG, 0 },
	{ "second line", TXT("577872452 447338 43\n1 2 3\n"), -EBADMSG, 0 },
	{ "non-numeric", TXT("577872452 447338 4x\n"), -EBADMSG, 0 },
	{ "negative", TXT("577872452 -447338 43\n"), -EBADMSG, 0 },
	{ "above uint64", TXT("18446744073709551616 447338 43\n"), -EBADMSG, 0 },
	{ "embedded NUL", TXT("577872452 447338 43\0\n"), -EBADMSG, 0 },
};

static const struct text_case ctxt_cases[] = {
	{ "empty", TXT(""), -EBADMSG, 0 },
	{ "valid", TXT("Name:\tnginx\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t6\n"), 0, 0 },
	{ "no trailing newline", TXT("voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t6"), 0, 0 },
	{ "only voluntary", TXT("voluntary_ctxt_switches:\t5\n"), -EBADMSG, 0 },
	{ "only nonvoluntary", TXT("nonvoluntary_ctxt_switches:\t6\n"), -EBADMSG, 0 },
	{ "truncated mid-line", TXT("voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_swi"), -EBADMSG, 0 },
	{ "twice", TXT("voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t6\nvoluntary_ctxt_switches:\t5\n"),
	  -EBADMSG, 0 },
	{ "not at line start",
	  TXT("Name:\tvoluntary_ctxt_switches: 9\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t6\n"), 0, 0 },
	{ "no value", TXT("voluntary_ctxt_switches:\nnonvoluntary_ctxt_switches:\t6\n"), -EBADMSG, 0 },
	{ "trailing garbage", TXT("voluntary_ctxt_switches:\t5 kB\nnonvoluntary_ctxt_switches:\t6\n"), -EBADMSG, 0 },
	{ "above uint64",
	  TXT("voluntary_ctxt_switches:\t18446744073709551616\nnonvoluntary_ctxt_switches:\t6\n"), -EBADMSG, 0 },
	{ "embedded NUL", TXT("voluntary_ctxt_switches:\t5\n\0nonvoluntary_ctxt_switches:\t6\n"), -EBADMSG, 0 },
};

static void test_schedstat_cases(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(schedstat_cases) / sizeof(schedstat_cases[0]); i++) {
		const struct text_case *c = &schedstat_cases[i];
		uint64_t run = 0, wait = 0, slices = 0;
		char *buf = exact_copy(c->in, c->len);
		int rc = parse_schedstat(buf, c->len, &run, &wait, &slices);

		if (rc != c->rc)
			fail_msg("schedstat \"%s\": rc %d, want %d", c->name, rc, c->rc);
		if (rc == 0 && (run != 577872452 || wait != 447338 || slices != 43))
			fail_msg("schedstat \"%s\": wrong values", c->name);
		free(buf);
	}
	for (i = 0; i < sizeof(ctxt_cases) / sizeof(ctxt_cases[0]); i++) {
		const struct text_case *c = &ctxt_cases[i];
		uint64_t vol = 0, nonvol = 0;
		char *buf = exact_copy(c->in, c->len);
		int rc = parse_ctxt_switches(buf, c->len, &vol, &nonvol);

		if (rc != c->rc)
			fail_msg("ctxt \"%s\": rc %d, want %d", c->name, rc, c->rc);
		if (rc == 0 && (vol != 5 || nonvol != 6))
			fail_msg("ctxt \"%s\": wrong values", c->name);
		free(buf);
	}
}

/*
 * Every proper prefix of every fixture, fed to its parser: a read cut short anywhere must give an error or a
 * correct parse, never a crash (ASan/UBSan builds check the "never"), and interrupts must not leak.
 */
static void test_all_prefixes(void **state)
{
	static const char *const files[] = {
		"host-6.18/netstat", "host-6.18/snmp", "host-6.18/softnet_stat", "host-6.18/softirqs", "host-6.18/stat",
		"host-6.18/interrupts", "host-6.18/self_schedstat", "host-6.18/self_status",
		"history/softnet_stat-6.x-15col-cpu2-offline", "history/stat-2.6.9-7col",
		"history/interrupts-5.15-kvm-8cpu", "history/interrupts-6.1-arm64-cpu2-offline",
	};
	size_t f;

	(void)state;
	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		size_t len, cut;
		char *buf = load(files[f], &len);

		for (cut = 0; cut < len; cut++) {
			char *p = exact_copy(buf, cut);
			struct kv_log log = { 0 };
			struct softnet_cpu sn[8];
			uint64_t a[8], b[8], x, y, z;
			struct cpu_times cpus[8];
			struct proc_stat st = { .cpus = cpus };
			struct irq_table t;
			size_t n;

			(void)parse_netstat(p, cut, kv_collect, &log);
			(void)parse_softnet(p, cut, sn, 8, &n);
			(void)parse_softirqs(p, cut, a, b, 8, &n);
			(void)parse_stat(p, cut, &st, 8);
			if (parse_interrupts(p, cut, &t) == 0)
				irq_table_free(&t);
			(void)parse_schedstat(p, cut, &x, &y, &z);
			(void)parse_ctxt_switches(p, cut, &x, &y);
			free(log.kv);
			free(p);
		}
		free(buf);
	}
}

/* /sys/kernel/irq/N/per_cpu_count, as the kernel prints it ("%u" per possible CPU, comma-separated). */
static void test_irq_counts(void **state)
{
	static const struct {
		const char *text;
		int ret;
		size_t n;
		uint64_t last;
	} cases[] = {
		{"49,0\n", 0, 2, 0},
		{"0,545", 0, 2, 545},
		{"7\n", 0, 1, 7},
		{"1,2,3,4,5,6,7,8\n", 0, 8, 8},
		{"18446744073709551615,0\n", 0, 2, 0},
		{"18446744073709551616,0\n", -EBADMSG, 0, 0},
		{"", -EBADMSG, 0, 0},
		{"\n", -EBADMSG, 0, 0},
		{"1,,2\n", -EBADMSG, 0, 0},
		{"1,2,\n", -EBADMSG, 0, 0},
		{",1\n", -EBADMSG, 0, 0},
		{"1, 2\n", -EBADMSG, 0, 0},
		{"1,2\n3\n", -EBADMSG, 0, 0},
		{"-1,2\n", -EBADMSG, 0, 0},
		{"1,2,3,4,5,6,7,8,9\n", -E2BIG, 0, 0},
	};
	uint64_t v[8];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = 99;
		int r = parse_irq_counts(cases[i].text, strlen(cases[i].text), v, 8, &n);

		if (r != cases[i].ret)
			fail_msg("case %zu '%s': got %d, want %d", i, cases[i].text, r, cases[i].ret);
		if (r == 0 && (n != cases[i].n || v[n - 1] != cases[i].last))
			fail_msg("case %zu: n %zu last %llu", i, n, (unsigned long long)v[n - 1]);
	}
	assert_int_equal(parse_irq_counts("1\0,2", 4, v, 8, &(size_t){0}), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_util_u64),
		cmocka_unit_test(test_util_i64_x64),
		cmocka_unit_test(test_util_lines_tokens),
		cmocka_unit_test(test_netstat_fixtures),
		cmocka_unit_test(test_netstat_cases),
		cmocka_unit_test(test_netstat_huge),
		cmocka_unit_test(test_netstat_pick_fixtures),
		cmocka_unit_test(test_netstat_pick_cases),
		cmocka_unit_test(test_netstat_pick_differential),
		cmocka_unit_test(test_softnet_fixtures),
		cmocka_unit_test(test_softnet_cases),
		cmocka_unit_test(test_softnet_generated),
		cmocka_unit_test(test_softirqs_fixture),
		cmocka_unit_test(test_softirqs_cases),
		cmocka_unit_test(test_stat_fixtures),
		cmocka_unit_test(test_stat_cases),
		cmocka_unit_test(test_stat_generated),
		cmocka_unit_test(test_interrupts_host),
		cmocka_unit_test(test_interrupts_history),
		cmocka_unit_test(test_interrupts_cases),
		cmocka_unit_test(test_interrupts_generated),
		cmocka_unit_test(test_schedstat_fixtures),
		cmocka_unit_test(test_schedstat_cases),
		cmocka_unit_test(test_all_prefixes),
		cmocka_unit_test(test_irq_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
