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
#include <sqlite3.h>
#include <sys/stat.h>

#include "store/store.h"
#include "store/originals.h"

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

static int frame_at(struct fx *f, int64_t ts);

/* Issue 22, R4: the audit trail has a retention, checked once a minute (when a frame starts a new minute): a row
 * goes when its last event is older than audit_retention, a refused request's row (denied) older than
 * denied_retention; a repeat collapsed into an old row keeps it. store_audit_add counts sampled refusals in. */
static void test_audit_retention(void **state)
{
	static const struct {
		const char *action, *detail;
		int64_t age_s, last_age_s; /* ts and last_ts before now */
		bool kept;
	} rows[] = {
		{"propose", "an act of 2 h ago", 7200, 7200, false},
		{"denied", "a refusal of 2 h ago", 7200, 7200, false},
		{"propose", "an act of 30 min ago", 1800, 1800, true},
		{"denied", "a refusal of 30 min ago", 1800, 1800, false},
		{"denied", "a refusal of 5 min ago", 300, 300, true},
		{"conflict", "an act of 2 h ago, repeated 1 min ago", 7200, 60, true},
	};
	const int64_t now = 1700000040000; /* a minute's start */
	struct fx *f = *state;
	struct store_options opt;
	struct audit_row r;
	struct aud a = {0};
	int64_t denied_id = 0;
	char err[256];

	store_close(f->st);
	store_options_default(&opt);
	opt.audit_retention_s = 3600;
	opt.denied_retention_s = 600;
	opt.batch_ms = 0;
	assert_int_equal(store_open(f->path, &opt, f->reg, &f->st, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memset(&r, 0, sizeof(r));
		strcpy(r.actor, "bob");
		snprintf(r.action, sizeof(r.action), "%s", rows[i].action);
		snprintf(r.detail, sizeof(r.detail), "%s", rows[i].detail);
		strcpy(r.outcome, "403");
		r.ts = now - rows[i].age_s * 1000;
		assert_int_equal(store_audit_append(f->st, &r), 0);
		if (rows[i].last_age_s != rows[i].age_s) {
			r.ts = now - rows[i].last_age_s * 1000;
			assert_int_equal(store_audit_append(f->st, &r), 0);
		}
		if (i == 4)
			denied_id = r.id;
	}
	assert_int_equal(store_audit_add(f->st, denied_id, 299, now - 240000), 0);
	assert_int_equal(store_audit_add(f->st, 999999, 1, now), -ENOENT);
	/* No frame has started a new minute yet: nothing is trimmed. */
	assert_int_equal(frame_at(f, now - 1000), 0);
	assert_int_equal(store_audit_query(f->st, 0, 0, "", "", 0, 0, collect_audit, &a), 0);
	assert_int_equal(a.n, 6);
	assert_int_equal(frame_at(f, now), 0);
	a.n = 0;
	assert_int_equal(store_audit_query(f->st, 0, 0, "", "", 0, 0, collect_audit, &a), 0);
	assert_int_equal(a.n, 3);
	/* Newest first: the collapsed act, the recent refusal (with its sampled count), the act of 30 min. */
	assert_string_equal(a.r[0].detail, rows[5].detail);
	assert_int_equal(a.r[0].count, 2);
	assert_string_equal(a.r[1].detail, rows[4].detail);
	assert_int_equal(a.r[1].count, 300);
	assert_int_equal(a.r[1].last_ts, now - 240000);
	assert_string_equal(a.r[2].detail, rows[2].detail);
}

/* ---- faults: the store's health, held audit rows, a lost store, the originals file ------------------------- */

static sqlite3 *captured_db;

static int capture_db(sqlite3 *db, const char **msg, const struct sqlite3_api_routines *api)
{
	(void)msg;
	(void)api;
	captured_db = db;
	return SQLITE_OK;
}

/* F's store opened again with its sqlite handle in captured_db, so that a test can make writes fail. */
static void reopen_captured(struct fx *f)
{
	char err[512];

	store_close(f->st);
	captured_db = NULL;
	assert_int_equal(sqlite3_auto_extension((void (*)(void))capture_db), SQLITE_OK);
	assert_int_equal(store_open(f->path, NULL, f->reg, &f->st, err, sizeof(err)), 0);
	sqlite3_cancel_auto_extension((void (*)(void))capture_db);
	assert_non_null(captured_db);
}

static int frame_at(struct fx *f, int64_t ts)
{
	struct frame fr;
	int r;

	frame_init(&fr);
	fr.ts_ms = ts;
	fr.dt_s = 1.0;
	assert_int_equal(frame_set(&fr, f->reg, "a", 1.0), 0);
	r = store_append_frame(f->st, f->reg, &fr);
	frame_free(&fr);
	return r;
}

static void read_only(bool on)
{
	assert_int_equal(sqlite3_exec(captured_db, on ? "PRAGMA query_only = 1" : "PRAGMA query_only = 0", NULL, NULL,
				      NULL), SQLITE_OK);
}

/* Issue 15 item 5: a journal write failed between two frame writes; the frame held after it must not say the store
 * is fine (the loop logged "store writable again" from that), and only a write that commits clears it. */
static void test_degraded_by_journal(void **state)
{
	struct fx *f = *state;
	struct change_row r = mk("net.core.somaxconn", "128", "4096", CHANGE_APPLYING);
	struct store_health h;

	reopen_captured(f);
	assert_int_equal(frame_at(f, 1700000000000), 0); /* the first frame is written at once */
	read_only(true);
	assert_int_equal(store_change_insert(f->st, &r), -EROFS);
	store_get_health(f->st, &h);
	assert_true(h.degraded);
	assert_non_null(strstr(h.reason, "journal change"));
	read_only(false);
	/* Held for the batch: no write was tried, so the store is still degraded and the frame says so. */
	assert_int_equal(frame_at(f, 1700000001000), -EROFS);
	store_get_health(f->st, &h);
	assert_true(h.degraded);
	/* The batch is due: it commits, and only now is the store writable again. */
	assert_int_equal(frame_at(f, 1700000006000), 0);
	store_get_health(f->st, &h);
	assert_false(h.degraded);
	assert_string_equal(h.reason, "");
}

/* Issue 15 item 6: acts audited while the store cannot be written are held, in order, repeats collapsed, and
 * written when a write commits again. */
static void test_audit_held(void **state)
{
	struct fx *f = *state;
	struct audit_row r;
	struct aud a = {0};

	reopen_captured(f);
	assert_int_equal(frame_at(f, 1700000000000), 0);
	memset(&r, 0, sizeof(r));
	strcpy(r.actor, "alice");
	strcpy(r.peer, "unix:pid=10,uid=1000");
	strcpy(r.action, "propose");
	strcpy(r.outcome, "409");
	strcpy(r.detail, "refused: observe-only");
	read_only(true);
	for (int i = 0; i < 3; i++) {
		r.ts = 1000 + i;
		assert_int_equal(store_audit_append(f->st, &r), 0);
		assert_int_equal(r.id, 0);
	}
	strcpy(r.action, "pause");
	strcpy(r.outcome, "200");
	r.ts = 2000;
	assert_int_equal(store_audit_append(f->st, &r), 0);
	assert_int_equal(store_audit_held(f->st), 2);
	assert_int_equal(store_audit_query(f->st, 0, 0, "", "", 0, 0, collect_audit, &a), 0);
	assert_int_equal(a.n, 0);
	read_only(false);
	/* Still held until a write commits (nothing was tried), then written in order. */
	assert_int_equal(store_audit_held(f->st), 2);
	assert_int_equal(frame_at(f, 1700000006000), 0);
	assert_int_equal(store_audit_held(f->st), 0);
	assert_int_equal(store_audit_query(f->st, 0, 0, "", "", 0, 0, collect_audit, &a), 0);
	assert_int_equal(a.n, 2);
	assert_string_equal(a.r[0].action, "pause");
	assert_string_equal(a.r[1].action, "propose");
	assert_int_equal(a.r[1].count, 3);
	assert_int_equal(a.r[1].ts, 1000);
	assert_int_equal(a.r[1].last_ts, 1002);
	/* A held row is written before a new one: the trail keeps the order of events. */
	read_only(true);
	strcpy(r.action, "resume");
	r.ts = 3000;
	assert_int_equal(store_audit_append(f->st, &r), 0);
	read_only(false);
	strcpy(r.action, "approve");
	r.ts = 4000;
	assert_int_equal(store_audit_append(f->st, &r), 0);
	assert_true(r.id > 0);
	a.n = 0;
	assert_int_equal(store_audit_query(f->st, 0, 0, "", "", 0, 2, collect_audit, &a), 0);
	assert_string_equal(a.r[0].action, "approve");
	assert_string_equal(a.r[1].action, "resume");
	/* Bounded: past STORE_AUDIT_HELD_MAX distinct rows the store says no instead of dropping one silently. */
	read_only(true);
	for (int i = 0; i < STORE_AUDIT_HELD_MAX; i++) {
		snprintf(r.detail, sizeof(r.detail), "row %d", i);
		assert_int_equal(store_audit_append(f->st, &r), 0);
	}
	assert_int_equal(store_audit_append(f->st, &r), 0); /* a repeat still collapses */
	strcpy(r.detail, "one too many");
	assert_int_equal(store_audit_append(f->st, &r), -ENOSPC);
	read_only(false);
}

static int64_t file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

/* Issue 15 item 7: a store that existed and is now empty, gone or truncated is an error that names the file and
 * the ways out; never a new store over the lost history and originals. */
static void test_lost_store(void **state)
{
	struct fx *f = *state;
	struct store_options opt;
	struct knob_row k;
	char err[1024], orig[160];
	struct store *st = NULL;

	memset(&k, 0, sizeof(k));
	strcpy(k.name, "net.core.somaxconn");
	k.has_original = true;
	strcpy(k.original, "128");
	strcpy(k.state, "ok");
	assert_int_equal(store_original_note(f->st, k.name, k.original), 0);
	assert_int_equal(store_knob_put(f->st, &k), 0);
	for (int i = 0; i < 300; i++) {
		struct change_row r = mk("net.core.somaxconn", "128", "4096", CHANGE_KEPT);

		memset(r.detail, 'x', 3000);
		assert_int_equal(store_change_insert(f->st, &r), 0);
	}
	store_close(f->st);
	f->st = NULL;
	store_options_default(&opt);

	/* Truncated: the journal's pages are gone. */
	assert_true(file_size(f->path) > 100000);
	assert_int_equal(truncate(f->path, 40960), 0);
	assert_int_equal(store_open(f->path, &opt, NULL, &st, err, sizeof(err)), -EIO);
	assert_null(st);
	assert_non_null(strstr(err, f->path));
	assert_non_null(strstr(err, "--revert all"));
	assert_int_equal(file_size(f->path), 40960); /* not touched */

	/* Emptied. */
	assert_int_equal(truncate(f->path, 0), 0);
	assert_int_equal(store_open(f->path, &opt, NULL, &st, err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "empty"));
	assert_non_null(strstr(err, f->path));
	assert_non_null(strstr(err, "--revert all"));
	assert_int_equal(file_size(f->path), 0);

	/* Gone, while the originals file says it existed. */
	assert_int_equal(unlink(f->path), 0);
	assert_int_equal(store_open(f->path, &opt, NULL, &st, err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "gone"));
	assert_int_equal(file_size(f->path), -1);

	/* Without the originals file, a missing store is a first start. */
	snprintf(orig, sizeof(orig), "%s%s", f->path, STORE_ORIGINALS_SUFFIX);
	assert_int_equal(unlink(orig), 0);
	assert_int_equal(store_open(f->path, &opt, f->reg, &f->st, err, sizeof(err)), 0);
}

struct origs {
	int n;
	char knob[8][64], value[8][64];
};

static int collect_orig(void *ctx, const char *knob, const char *value)
{
	struct origs *o = ctx;

	snprintf(o->knob[o->n], sizeof(o->knob[0]), "%s", knob);
	snprintf(o->value[o->n], sizeof(o->value[0]), "%s", value);
	o->n++;
	return 0;
}

static void test_originals(void **state)
{
	struct fx *f = *state;
	struct origs o = {0};
	struct knob_row k;
	char err[512], orig[160];
	FILE *fp;

	snprintf(orig, sizeof(orig), "%s%s", f->path, STORE_ORIGINALS_SUFFIX);
	assert_int_equal(store_originals_read(f->path, collect_orig, &o, err, sizeof(err)), -ENOENT);
	assert_int_equal(store_original_note(f->st, "net.core.somaxconn", "128"), 0);
	assert_int_equal(store_original_note(f->st, "net.ipv4.tcp_rmem", "4096 131072 6291456"), 0);
	assert_int_equal(store_original_note(f->st, "net.core.somaxconn", "1024"), 0); /* a cleared conflict */
	assert_int_equal(store_original_note(f->st, "bad knob", "1"), -EINVAL);
	assert_int_equal(store_original_note(f->st, "net.core.somaxconn", "1\n2"), -EINVAL);
	assert_int_equal(store_originals_read(f->path, collect_orig, &o, err, sizeof(err)), 0);
	assert_int_equal(o.n, 3);
	assert_string_equal(o.knob[1], "net.ipv4.tcp_rmem");
	assert_string_equal(o.value[1], "4096 131072 6291456");
	assert_string_equal(o.value[2], "1024");
	/* A line cut by a crash (no newline) was never synced: ignored; garbage is an error naming the line. */
	fp = fopen(orig, "a");
	fputs("net.core.netdev_budget 3", fp);
	fclose(fp);
	o.n = 0;
	assert_int_equal(store_originals_read(f->path, collect_orig, &o, err, sizeof(err)), 0);
	assert_int_equal(o.n, 3);
	fp = fopen(orig, "w");
	fputs("nospace\n", fp);
	fclose(fp);
	o.n = 0;
	assert_int_equal(store_originals_read(f->path, collect_orig, &o, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, ":1: not 'KNOB VALUE': 'nospace'"));
	assert_int_equal(o.n, 0);
	/* Issue 22, R9: one damaged line stopped the read, and a lost store's revert put nothing back. Every good line
	 * is read, also after damaged ones; each damaged line is named (a NUL shown as '?'). */
	fp = fopen(orig, "w");
	fputs("net.core.somaxconn 128\nnet.core.rmem_max\nnet.core.netdev_budget 300\nx\001y\n", fp);
	fputc('\0', fp);
	fputs("z 1\nnet.core.netdev_max_backlog 1000\n", fp);
	fclose(fp);
	o.n = 0;
	assert_int_equal(store_originals_read(f->path, collect_orig, &o, err, sizeof(err)), -EBADMSG);
	assert_int_equal(o.n, 3);
	assert_string_equal(o.knob[0], "net.core.somaxconn");
	assert_string_equal(o.knob[1], "net.core.netdev_budget");
	assert_string_equal(o.knob[2], "net.core.netdev_max_backlog");
	assert_string_equal(o.value[2], "1000");
	assert_non_null(strstr(err, ":2: not 'KNOB VALUE': 'net.core.rmem_max'"));
	assert_non_null(strstr(err, ":4: not 'KNOB VALUE': 'x?y'"));
	assert_non_null(strstr(err, ":5: not 'KNOB VALUE': '?z 1'"));
	assert_null(strstr(err, ":1:"));
	/* A store from before the originals file gets one at open, from its knobs table. */
	assert_int_equal(unlink(orig), 0);
	memset(&k, 0, sizeof(k));
	strcpy(k.name, "net.core.netdev_budget");
	k.has_original = true;
	strcpy(k.original, "300");
	strcpy(k.state, "ok");
	assert_int_equal(store_knob_put(f->st, &k), 0);
	store_close(f->st);
	assert_int_equal(store_open(f->path, NULL, f->reg, &f->st, err, sizeof(err)), 0);
	o.n = 0;
	assert_int_equal(store_originals_read(f->path, collect_orig, &o, err, sizeof(err)), 0);
	assert_int_equal(o.n, 1);
	assert_string_equal(o.knob[0], "net.core.netdev_budget");
	assert_string_equal(o.value[0], "300");
}

/* A journal of writes compacted: each knob's last KEEP lines, in the order written; a damaged one left alone. */
static void test_originals_compact(void **state)
{
	static const struct {
		const char *before;
		unsigned keep;
		int r;
		const char *after;
	} cases[] = {
		{"a 1\na 2\nb 1\na 3\nb 2\nb 3\na 4\n", 2, 4, "a 3\nb 2\nb 3\na 4\n"},
		{"a 1\na 2\nb 1\na 3\nb 2\nb 3\na 4\n", 1, 2, "b 3\na 4\n"},
		{"a 1\n", 2, 1, "a 1\n"},
		{"", 2, 0, ""},
		/* values with blanks, and a last line cut by a crash (never synced: not kept) */
		{"rps.eth0 0-3 4\nrps.eth0 \nrps.eth0 1\nrps.eth0 2", 2, 2, "rps.eth0 \nrps.eth0 1\n"},
		/* damaged: left as it was */
		{"a 1\nbroken\na 2\na 3\n", 2, -EBADMSG, "a 1\nbroken\na 2\na 3\n"},
		{"a 1\n", 0, -EINVAL, "a 1\n"},
	};
	struct fx *f = *state;
	char path[200], tmp[220], got[256], err[512];

	snprintf(path, sizeof(path), "%s/originals.written", f->dir);
	snprintf(tmp, sizeof(tmp), "%s.compact", path);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *fp = fopen(path, "w");
		size_t n;

		assert_non_null(fp);
		fputs(cases[i].before, fp);
		fclose(fp);
		assert_int_equal(originals_compact(path, cases[i].keep, err, sizeof(err)), cases[i].r);
		fp = fopen(path, "r");
		assert_non_null(fp);
		n = fread(got, 1, sizeof(got) - 1, fp);
		got[n] = '\0';
		fclose(fp);
		assert_string_equal(got, cases[i].after);
		assert_int_equal(access(tmp, F_OK), -1); /* nothing left beside it */
		if (cases[i].r == -EBADMSG)
			assert_non_null(strstr(err, ":2: not 'KNOB VALUE': 'broken'"));
	}
	assert_int_equal(unlink(path), 0);
	assert_int_equal(originals_compact(path, 2, err, sizeof(err)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_retention, setup, teardown),
		cmocka_unit_test(test_states),
		cmocka_unit_test_setup_teardown(test_knobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_peers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_degraded_by_journal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_originals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_originals_compact, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
