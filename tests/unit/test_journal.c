/* Unit tests for the change journal, knob records and audit trail (agent/store_journal.c) on a real SQLite file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store.h"

struct fx {
	char dir[64];
	char path[128];
	struct metric_registry *reg;
	struct store *st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	strcpy(f->dir, "/tmp/test_journal.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/j.db", f->dir);
	assert_int_equal(metric_registry_new(&f->reg), 0);
	assert_int_equal(store_open(f->path, NULL, f->reg, &f->st, err, sizeof(err)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	store_close(f->st);
	metric_registry_free(f->reg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static struct change_row mk(const char *knob, const char *from, const char *to, enum change_state st)
{
	struct change_row r;

	memset(&r, 0, sizeof(r));
	snprintf(r.knob, sizeof(r.knob), "%s", knob);
	snprintf(r.old_value, sizeof(r.old_value), "%s", from);
	snprintf(r.new_value, sizeof(r.new_value), "%s", to);
	r.state = st;
	strcpy(r.actor, "alice");
	strcpy(r.why, "listen overflows 120/s");
	r.created_ms = 1000;
	return r;
}

struct seen {
	int n;
	int64_t ids[16];
};

static int collect(void *ctx, const struct change_row *row)
{
	struct seen *s = ctx;

	s->ids[s->n++] = row->id;
	return 0;
}

static void test_changes(void **state)
{
	struct fx *f = *state;
	struct change_row a = mk("net.core.somaxconn", "16", "4096", CHANGE_APPLYING), b, got;
	struct seen s = {0};
	char err[256];

	assert_int_equal(store_change_insert(f->st, &a), 0);
	assert_true(a.id > 0);
	b = mk("net.core.netdev_max_backlog", "10", "1000", CHANGE_PROPOSED);
	b.kind = CHANGE_KIND_REVERT;
	b.reverts = a.id;
	assert_int_equal(store_change_insert(f->st, &b), 0);
	assert_int_equal(b.id, a.id + 1);
	assert_int_equal(store_change_update(f->st, a.id, CHANGE_TRIAL, "verified: reads back 4096", 2000), 0);
	assert_int_equal(store_change_update(f->st, 999, CHANGE_TRIAL, NULL, 2000), -ENOENT);
	assert_int_equal(store_change_get(f->st, a.id, &got), 0);
	assert_string_equal(got.knob, "net.core.somaxconn");
	assert_string_equal(got.old_value, "16");
	assert_string_equal(got.new_value, "4096");
	assert_int_equal(got.state, CHANGE_TRIAL);
	assert_string_equal(got.detail, "verified: reads back 4096");
	assert_int_equal(got.created_ms, 1000);
	assert_int_equal(got.updated_ms, 2000);
	assert_int_equal(got.kind, CHANGE_KIND_CHANGE);
	/* A NULL detail keeps the old one. */
	assert_int_equal(store_change_update(f->st, a.id, CHANGE_KEPT, NULL, 3000), 0);
	assert_int_equal(store_change_get(f->st, a.id, &got), 0);
	assert_string_equal(got.detail, "verified: reads back 4096");
	assert_int_equal(store_change_get(f->st, b.id, &got), 0);
	assert_int_equal(got.kind, CHANGE_KIND_REVERT);
	assert_int_equal(got.reverts, a.id);
	assert_int_equal(store_change_get(f->st, 12345, &got), -ENOENT);
	/* Queries: newest first, by knob, by state, paged by id. */
	assert_int_equal(store_changes_query(f->st, "", 0, 0, 0, collect, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.ids[0], b.id);
	s.n = 0;
	assert_int_equal(store_changes_query(f->st, "net.core.somaxconn", 0, 0, 0, collect, &s), 0);
	assert_int_equal(s.n, 1);
	s.n = 0;
	assert_int_equal(store_changes_query(f->st, "", 1u << CHANGE_PROPOSED, 0, 0, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ids[0], b.id);
	s.n = 0;
	assert_int_equal(store_changes_query(f->st, "", 0, b.id, 0, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ids[0], a.id);
	/* Durable across a reopen. */
	store_close(f->st);
	assert_int_equal(store_open(f->path, NULL, f->reg, &f->st, err, sizeof(err)), 0);
	assert_int_equal(store_change_get(f->st, a.id, &got), 0);
	assert_int_equal(got.state, CHANGE_KEPT);
	/* Ids are never reused, even after the newest row is gone. */
	s.n = 0;
	assert_int_equal(store_changes_query(f->st, "", 0, 0, 1, collect, &s), 0);
	assert_int_equal(s.n, 1);
}

static void test_states(void **state)
{
	enum change_state st;

	(void)state;
	for (int i = 0; i < CHANGE_STATE_COUNT; i++) {
		assert_int_equal(change_state_parse(change_state_name((enum change_state)i), &st), 0);
		assert_int_equal(st, i);
	}
	assert_int_equal(change_state_parse("kept ", &st), -EINVAL);
	assert_int_equal(change_state_parse("", &st), -EINVAL);
}

static void test_knobs(void **state)
{
	struct fx *f = *state;
	struct knob_row r, got;

	memset(&r, 0, sizeof(r));
	strcpy(r.name, "net.core.somaxconn");
	assert_int_equal(store_knob_get(f->st, r.name, &got), -ENOENT);
	r.has_original = true;
	strcpy(r.original, "16");
	strcpy(r.state, "ok");
	r.updated_ms = 5;
	assert_int_equal(store_knob_put(f->st, &r), 0);
	assert_int_equal(store_knob_get(f->st, r.name, &got), 0);
	assert_true(got.has_original);
	assert_false(got.has_written);
	assert_string_equal(got.original, "16");
	r.has_written = true;
	strcpy(r.last_written, "4096");
	strcpy(r.state, "conflict");
	strcpy(r.why, "reads 1024, the agent wrote 4096");
	assert_int_equal(store_knob_put(f->st, &r), 0);
	assert_int_equal(store_knob_get(f->st, r.name, &got), 0);
	assert_true(got.has_written);
	assert_string_equal(got.last_written, "4096");
	assert_string_equal(got.state, "conflict");
	assert_string_equal(got.why, "reads 1024, the agent wrote 4096");
}

struct aud {
	int n;
	struct audit_row r[8];
};

static int collect_audit(void *ctx, const struct audit_row *row)
{
	struct aud *a = ctx;

	if (a->n < 8)
		a->r[a->n] = *row;
	a->n++;
	return 0;
}

static void test_audit(void **state)
{
	struct fx *f = *state;
	struct audit_row r;
	struct aud a = {0};

	memset(&r, 0, sizeof(r));
	strcpy(r.actor, "agent");
	strcpy(r.action, "conflict");
	strcpy(r.knob, "net.core.somaxconn");
	strcpy(r.outcome, "frozen");
	strcpy(r.detail, "reads 1024, the agent wrote 4096");
	for (int i = 0; i < 5; i++) {
		r.ts = 100 + i;
		assert_int_equal(store_audit_append(f->st, &r), 0);
	}
	strcpy(r.actor, "bob");
	r.ts = 200;
	assert_int_equal(store_audit_append(f->st, &r), 0);
	assert_int_equal(store_audit_query(f->st, 0, 0, "", "", 0, 0, collect_audit, &a), 0);
	/* Five identical events collapsed into one row with a count; another actor is another row. */
	assert_int_equal(a.n, 2);
	assert_string_equal(a.r[0].actor, "bob");
	assert_int_equal(a.r[1].count, 5);
	assert_int_equal(a.r[1].ts, 100);
	assert_int_equal(a.r[1].last_ts, 104);
	a.n = 0;
	assert_int_equal(store_audit_query(f->st, 0, 0, "", "agent", 0, 0, collect_audit, &a), 0);
	assert_int_equal(a.n, 1);
	a.n = 0;
	assert_int_equal(store_audit_query(f->st, 150, 0, "", "", 0, 0, collect_audit, &a), 0);
	assert_int_equal(a.n, 1);
	a.n = 0;
	assert_int_equal(store_audit_query(f->st, 0, 0, "other.knob", "", 0, 0, collect_audit, &a), 0);
	assert_int_equal(a.n, 0);
	a.n = 0;
	assert_int_equal(store_audit_query(f->st, 0, 0, "", "", 0, 1, collect_audit, &a), 0);
	assert_int_equal(a.n, 1);
}

/* Peers collapse by who they are: a Unix peer's uid (each request is a new process), a TCP peer's address (a new
 * port); the row keeps the first one's pid or port. */
static void test_audit_peers(void **state)
{
	static const struct {
		const char *peer;
		int rows; /* rows after appending it */
	} seq[] = {
		{"unix:pid=10,uid=0", 1},    {"unix:pid=11,uid=0", 1},    {"unix:pid=12,uid=1000", 2},
		{"127.0.0.1:40000", 3},      {"127.0.0.1:40001", 3},      {"127.0.0.2:40001", 4},
		{"[::1]:5000", 5},           {"[::1]:5001", 5},           {"unix:uid=1000", 6},
		{"unix:uid=1000", 6},        {"", 7},                     {"", 7},
	};
	struct fx *f = *state;
	struct audit_row r;
	struct aud a = {0};

	memset(&r, 0, sizeof(r));
	strcpy(r.actor, "root");
	strcpy(r.action, "revert-all");
	strcpy(r.outcome, "ok");
	strcpy(r.detail, "requested");
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		snprintf(r.peer, sizeof(r.peer), "%s", seq[i].peer);
		r.ts = 100 + (int64_t)i;
		assert_int_equal(store_audit_append(f->st, &r), 0);
		a.n = 0;
		assert_int_equal(store_audit_query(f->st, 0, 0, "", "", 0, 0, collect_audit, &a), 0);
		if (a.n != seq[i].rows)
			fail_msg("after %s: %d rows, want %d", seq[i].peer, a.n, seq[i].rows);
	}
	a.n = 0;
	assert_int_equal(store_audit_query(f->st, 0, 0, "", "", 0, 0, collect_audit, &a), 0);
	assert_string_equal(a.r[6].peer, "unix:pid=10,uid=0");
	assert_int_equal(a.r[6].count, 2);
	assert_string_equal(a.r[4].peer, "127.0.0.1:40000");
	assert_int_equal(a.r[4].count, 2);
	assert_int_equal(a.r[0].count, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_changes, setup, teardown),
		cmocka_unit_test(test_states),
		cmocka_unit_test_setup_teardown(test_knobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_peers, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
