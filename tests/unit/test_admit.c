/* Unit tests for agent/api/admit.c: the limits from the file limit, and who is admitted, who gives way and who is
 * refused, on tables built case by case (the numbers are the shares' definitions, counted by hand). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/admit.h"

#define N 64

static const struct admit_limits lim = {.total = 8, .per_peer = 4, .per_addr = 2, .tokenless = 3};

static struct admit_key unix_key(uint32_t uid)
{
	return (struct admit_key){.tcp = false, .uid = uid};
}

static struct admit_key tcp_key(uint8_t last)
{
	struct admit_key k = {.tcp = true};

	k.addr[10] = k.addr[11] = 0xff;
	k.addr[12] = 127;
	k.addr[15] = last;
	return k;
}

static void put(struct admit_entry *e, size_t i, struct admit_key k, int64_t since, bool busy)
{
	e[i] = (struct admit_entry){.used = true, .busy = busy, .since_ms = since, .key = k};
}

static void decide(struct admit_entry *e, size_t n, struct admit_key k, struct admit_decision *d)
{
	admit_decide(e, n, &lim, &k, d);
}

static void test_limits(void **state)
{
	struct admit_limits l;

	(void)state;
	admit_limits_for(1024, &l);
	assert_int_equal(l.total, 448); /* (1024 - 128) / 2 */
	assert_int_equal(l.per_peer, 56);
	assert_int_equal(l.per_addr, 28);
	assert_int_equal(l.tokenless, 56);
	admit_limits_for(65536, &l);
	assert_int_equal(l.total, ADMIT_TOTAL_MAX);
	assert_int_equal(l.per_peer, 64);
	assert_int_equal(l.per_addr, 32);
	assert_int_equal(l.tokenless, 64);
	assert_int_equal(admit_slots(&l), 1024);
	admit_limits_for(100, &l);
	assert_int_equal(l.total, ADMIT_TOTAL_MIN);
	assert_int_equal(l.per_peer, 4);
	assert_int_equal(l.per_addr, 2);
}

static void test_accept_and_own_share(void **state)
{
	struct admit_entry e[N] = {0};
	struct admit_decision d;
	struct admit_key root = unix_key(0), other = unix_key(1000);

	(void)state;
	admit_decide(e, N, &lim, &root, &d);
	assert_int_equal(d.verdict, ADMIT_ACCEPT);
	assert_int_equal(d.slot, 0);
	/* uid 1000 holds its 4: its fifth replaces its oldest idle one (slot 2, since 5), never a busy one (slot 1). */
	put(e, 0, other, 10, false);
	put(e, 1, other, 1, true);
	put(e, 2, other, 5, false);
	put(e, 3, other, 7, false);
	admit_decide(e, N, &lim, &other, &d);
	assert_int_equal(d.verdict, ADMIT_EVICT);
	assert_int_equal(d.victim, 2);
	assert_true(e[2].closing);
	assert_int_equal(d.slot, 4);
	/* The closing one no longer counts: root is admitted beside them. */
	admit_decide(e, N, &lim, &root, &d);
	assert_int_equal(d.verdict, ADMIT_ACCEPT);
	/* Every one of a client's connections busy: the newcomer is refused, nothing is evicted. */
	put(e, 2, other, 5, true);
	e[0].busy = e[3].busy = true;
	admit_decide(e, N, &lim, &other, &d);
	assert_int_equal(d.verdict, ADMIT_REFUSE);
	assert_string_equal(d.why, "this user's share is taken");
	for (size_t i = 0; i < 4; i++)
		assert_false(e[i].closing);
}

static void test_tokenless(void **state)
{
	struct admit_entry e[N] = {0};
	struct admit_decision d;
	struct admit_key a = tcp_key(1), b = tcp_key(2), c = tcp_key(3);

	(void)state;
	/* The tokenless share (3) full: two of .1 and one of .2. A newcomer from .3 takes .1's oldest. */
	put(e, 0, a, 4, false);
	put(e, 1, a, 2, false);
	put(e, 2, b, 1, false);
	admit_decide(e, N, &lim, &c, &d);
	assert_int_equal(d.verdict, ADMIT_EVICT);
	assert_int_equal(d.victim, 1);
	/* Now .1, .2 and .3 hold one each: a fourth address would become no lighter than any, so none gives way; it
	 * waits pending for its head (test_pending). */
	put(e, 1, c, 9, false);
	decide(e, N, tcp_key(4), &d);
	assert_int_equal(d.verdict, ADMIT_ACCEPT);
	assert_true(d.pending);
	/* A connection that showed a token leaves the share: room again, and a Unix peer never counts in it. */
	e[0].tokened = true;
	decide(e, N, tcp_key(4), &d);
	assert_int_equal(d.verdict, ADMIT_ACCEPT);
	assert_false(d.pending);
	assert_int_equal(d.slot, 3);
}

/* Over the tokenless share with no place to take, a TCP newcomer waits pending for its head (as many as the share
 * again): a token holder's connection is not refused because others hold the share (issue 22: 64 slow readers). */
static void test_pending(void **state)
{
	struct admit_entry e[N] = {0};
	struct admit_decision d;
	size_t slot;

	(void)state;
	put(e, 0, tcp_key(1), 1, true);
	put(e, 1, tcp_key(2), 2, true);
	put(e, 2, tcp_key(3), 3, true);
	decide(e, N, tcp_key(4), &d);
	assert_int_equal(d.verdict, ADMIT_ACCEPT);
	assert_true(d.pending);
	slot = d.slot;
	e[slot] = (struct admit_entry){.used = true, .pending = true, .since_ms = 4, .key = tcp_key(4)};
	/* Its head shows a token: admitted, out of the tokenless share. */
	assert_true(admit_head(e, N, &lim, slot, true));
	assert_true(e[slot].tokened);
	assert_false(e[slot].pending);
	/* Another with no token while the share is still full: refused. */
	decide(e, N, tcp_key(5), &d);
	assert_true(d.pending);
	e[d.slot] = (struct admit_entry){.used = true, .pending = true, .since_ms = 5, .key = tcp_key(5)};
	assert_false(admit_head(e, N, &lim, d.slot, false));
	/* With room in the share by then (one left), it joins it. */
	e[0] = (struct admit_entry){0};
	assert_true(admit_head(e, N, &lim, d.slot, false));
	assert_false(e[d.slot].pending);
	assert_false(e[d.slot].tokened);
	/* Not pending (the Unix socket, or in the share from the start): its head changes nothing but the token. */
	assert_true(admit_head(e, N, &lim, 1, false));
	/* The pending share full: one more is refused at once. */
	for (uint8_t a = 10; a < 13; a++) {
		decide(e, N, tcp_key(a), &d);
		assert_int_equal(d.verdict, ADMIT_ACCEPT);
		assert_true(d.pending);
		e[d.slot] = (struct admit_entry){.used = true, .pending = true, .since_ms = a, .key = tcp_key(a)};
	}
	decide(e, N, tcp_key(20), &d);
	assert_int_equal(d.verdict, ADMIT_REFUSE);
	assert_string_equal(d.why, "the share of connections without a token is taken");
	/* A Unix peer never waits pending. */
	decide(e, N, unix_key(7), &d);
	assert_false(d.pending);
}

static void test_total(void **state)
{
	struct admit_entry e[N] = {0};
	struct admit_decision d;

	(void)state;
	/* 8 = total: uid 1 holds 4 (one busy), uids 2 and 3 two each. uid 4's first takes uid 1's oldest idle. */
	put(e, 0, unix_key(1), 3, true);
	put(e, 1, unix_key(1), 8, false);
	put(e, 2, unix_key(1), 6, false);
	put(e, 3, unix_key(1), 9, false);
	put(e, 4, unix_key(2), 1, false);
	put(e, 5, unix_key(2), 2, false);
	put(e, 6, unix_key(3), 0, false);
	put(e, 7, unix_key(3), 0, false);
	decide(e, N, unix_key(4), &d);
	assert_int_equal(d.verdict, ADMIT_EVICT);
	assert_int_equal(d.victim, 2);
	assert_int_equal(d.slot, 8);
	/* uid 2 (2 held) may not take from uid 3 (2 held): it would hold the most. */
	put(e, 2, unix_key(4), 10, false);
	e[2].closing = false;
	e[1].busy = e[3].busy = true;
	decide(e, N, unix_key(2), &d);
	assert_int_equal(d.verdict, ADMIT_REFUSE);
	assert_string_equal(d.why, "every connection is taken");
}

static void test_no_free_slot(void **state)
{
	struct admit_entry e[4] = {0};
	struct admit_decision d;

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		put(e, i, unix_key(7), 0, false);
		e[i].closing = true;
	}
	decide(e, 4, unix_key(0), &d);
	assert_int_equal(d.verdict, ADMIT_REFUSE);
	assert_string_equal(d.why, "every slot is taken by connections still closing");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_accept_and_own_share),
		cmocka_unit_test(test_tokenless),
		cmocka_unit_test(test_pending),
		cmocka_unit_test(test_total),
		cmocka_unit_test(test_no_free_slot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
