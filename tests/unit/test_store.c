/*
 * Unit tests for agent/store.c against real SQLite files in a temporary directory.
 *
 * The disk-full case mounts a 512 KiB tmpfs when run as root; otherwise (or with NGXAT_TEST_NO_MOUNT=1) it emulates
 * a full disk with PRAGMA max_page_count on the store's own connection, reached through an sqlite auto-extension.
 * The read-only cases use a read-only bind mount as root (chmod 0444 otherwise) and a database file moved away
 * under the open store, which sqlite reports as read-only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/store.h"
#include "testskip.h"

#define T0 INT64_C(1699999980000) /* a minute start */

static char tmpdir[64];
static char mounted[2][256]; /* unmounted by teardown if a test fails half-way */

static const char *srcdir(void)
{
	const char *s = getenv("srcdir");

	return s && *s ? s : ".";
}

static void path_in(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", tmpdir, name);

	assert_true(n > 0 && (size_t)n < len);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p) < 0 ? -1 : 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_store.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 1; i >= 0; i--) {
		/* Lazy as a last resort: a failed assertion may have left the store open on it. */
		if (mounted[i][0])
			sh("umount '%s' 2>/dev/null || umount -l '%s'", mounted[i], mounted[i]);
		mounted[i][0] = '\0';
	}
	/* FTW_MOUNT: never walk into a mount that failed to come down. */
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return 0;
}

/* The test's own connection, to look at and tamper with files behind the store's back. */
static void sql_exec(const char *path, const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg);
	sqlite3_close(db);
}

static int64_t sql_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	int64_t v = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

struct row {
	int64_t ts;
	double dt;
	uint32_t ok, bad;
	size_t n;
	struct frame_value v[8];
};

struct rows {
	struct row r[256];
	size_t n;
	int stop_after; /* return 99 after this many rows (0: never) */
	struct store *st;
};

static int collect(void *ctx, const struct frame *fr)
{
	struct rows *rs = ctx;
	struct row *r;

	assert_true(rs->n < 256);
	r = &rs->r[rs->n++];
	r->ts = fr->ts_ms;
	r->dt = fr->dt_s;
	r->ok = fr->probes_ok;
	r->bad = fr->probes_bad;
	r->n = fr->n;
	for (size_t i = 0; i < fr->n && i < 8; i++)
		r->v[i] = fr->vals[i];
	if (rs->st) {
		struct frame f2;

		frame_init(&f2);
		f2.ts_ms = T0;
		assert_int_equal(store_append_frame(rs->st, NULL, &f2), -EBUSY);
		assert_int_equal(store_query_frames(rs->st, 0, INT64_MAX, 0, collect, rs), -EBUSY);
	}
	return rs->stop_after && (int)rs->n >= rs->stop_after ? 99 : 0;
}

/* Open PATH; OPT NULL: the defaults, but each frame written at once (test_batch covers batching). */
static struct store *open_ok(const char *path, const struct store_options *opt, struct metric_registry *reg)
{
	struct store_options unbatched;
	struct store *st = NULL;
	char err[256];
	int rc;

	if (!opt) {
		store_options_default(&unbatched);
		unbatched.batch_ms = 0;
		opt = &unbatched;
	}
	rc = store_open(path, opt, reg, &st, err, sizeof(err));

	if (rc != 0)
		fail_msg("store_open(%s): %d %s", path, rc, err);
	return st;
}

/* Append a frame at TS with N name=value pairs. */
static int append(struct store *st, struct metric_registry *reg, int64_t ts, int n, ...)
{
	struct frame fr;
	va_list ap;
	int rc;

	frame_init(&fr);
	fr.ts_ms = ts;
	fr.dt_s = 1.0;
	fr.probes_ok = 3;
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		const char *name = va_arg(ap, const char *);
		double v = va_arg(ap, double);

		assert_int_equal(frame_set(&fr, reg, name, v), 0);
	}
	va_end(ap);
	rc = store_append_frame(st, reg, &fr);
	frame_free(&fr);
	return rc;
}

static void assert_counts(struct store *st, const char *path)
{
	struct store_health h;

	store_get_health(st, &h);
	assert_int_equal(h.frames, sql_int(path, "SELECT count(*) FROM frames"));
	assert_int_equal(h.rollups, sql_int(path, "SELECT count(*) FROM rollups"));
}

static void test_create_reopen(void **state)
{
	struct metric_registry *reg;
	struct store *st;
	struct store_health h;
	char path[256], wal[300];
	uint32_t id;

	(void)state;
	path_in(path, sizeof(path), "state/sub/store.db"); /* parents do not exist yet */
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	assert_int_equal(store_opened_version(st), 0);
	assert_int_equal(append(st, reg, T0, 3, "tcp.listen_overflows", 1.0, "nginx.active", 2.0, "cpu.0.softirq",
				3.0), 0);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	assert_int_equal(access(wal, F_OK), 0);
	store_get_health(st, &h);
	assert_false(h.degraded);
	assert_int_equal(h.frames, 1);
	assert_int_equal(h.rollups, 0);
	assert_int_equal(h.write_errors, 0);
	assert_int_equal(h.last_write_ms, T0);
	assert_true(h.bytes >= 4 * 4096);
	store_close(st);
	metric_registry_free(reg);

	assert_int_equal(sql_int(path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM metrics"), 3);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM pragma_journal_mode() WHERE journal_mode = 'wal'"), 1);

	/* A fresh registry gets the same ids back, and new names continue after them. */
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	assert_int_equal(store_opened_version(st), STORE_SCHEMA_VERSION);
	assert_int_equal(metric_max_id(reg), 3);
	assert_int_equal(metric_lookup(reg, "tcp.listen_overflows", &id), 0);
	assert_int_equal(id, 1);
	assert_int_equal(metric_lookup(reg, "cpu.0.softirq", &id), 0);
	assert_int_equal(id, 3);
	assert_int_equal(append(st, reg, T0 + 1000, 2, "nginx.active", 5.0, "nginx.waiting", 6.0), 0);
	store_get_health(st, &h);
	assert_int_equal(h.frames, 2);
	assert_int_equal(h.last_write_ms, T0 + 1000);
	store_close(st);
	metric_registry_free(reg);
	assert_int_equal(sql_int(path, "SELECT id FROM metrics WHERE name = 'nginx.waiting'"), 4);

	/* A registry that disagrees with the file is refused rather than silently renumbered. */
	assert_int_equal(metric_registry_new(&reg), 0);
	assert_int_equal(metric_register(reg, "nginx.active", 9), 0);
	{
		char err[256];

		st = NULL;
		assert_true(store_open(path, NULL, reg, &st, err, sizeof(err)) < 0);
		assert_null(st);
		assert_non_null(strstr(err, "nginx.active"));
	}
	metric_registry_free(reg);
	store_close(NULL);
}

static void test_roundtrip_nan(void **state)
{
	struct metric_registry *reg;
	struct store *st;
	struct rows rs = { 0 };
	struct frame fr;
	char path[256];

	(void)state;
	path_in(path, sizeof(path), "store.db");
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	frame_init(&fr);
	fr.ts_ms = T0 + 5;
	fr.dt_s = 0.998;
	fr.probes_ok = 0x80000005u;
	fr.probes_bad = 0x2;
	assert_int_equal(frame_set(&fr, reg, "b", NAN), 0);
	assert_int_equal(frame_set(&fr, reg, "a", -0.25), 0);
	assert_int_equal(frame_set(&fr, reg, "c", 1e6), 0);
	assert_int_equal(store_append_frame(st, reg, &fr), 0);
	frame_clear(&fr); /* an empty tick (every probe failed) is still a tick */
	fr.ts_ms = T0 + 1005;
	fr.dt_s = NAN;
	fr.probes_ok = 0;
	fr.probes_bad = 7;
	assert_int_equal(store_append_frame(st, reg, &fr), 0);
	frame_free(&fr);

	assert_int_equal(store_query_frames(st, 0, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 2);
	assert_true(rs.r[0].ts == T0 + 5);
	assert_true(rs.r[0].dt == 0.998);
	assert_int_equal(rs.r[0].ok, 0x80000005u);
	assert_int_equal(rs.r[0].bad, 2);
	assert_int_equal(rs.r[0].n, 3);
	assert_int_equal(rs.r[0].v[0].id, 1);
	assert_true(isnan(rs.r[0].v[0].v));
	assert_int_equal(rs.r[0].v[1].id, 2);
	assert_true(rs.r[0].v[1].v == -0.25);
	assert_int_equal(rs.r[0].v[2].id, 3);
	assert_true(rs.r[0].v[2].v == 1e6);
	assert_true(rs.r[1].ts == T0 + 1005);
	assert_true(isnan(rs.r[1].dt));
	assert_int_equal(rs.r[1].ok, 0);
	assert_int_equal(rs.r[1].bad, 7);
	assert_int_equal(rs.r[1].n, 0);

	/* Same ts again (clock stepped back): replaced, and the count stays true. */
	assert_int_equal(append(st, reg, T0 + 5, 1, "a", 4.0), 0);
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(store_query_frames(st, T0, T0 + 6, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.r[0].n, 1);
	assert_true(rs.r[0].v[0].v == 4.0);
	assert_counts(st, path);

	/* Callbacks cannot re-enter the store. */
	memset(&rs, 0, sizeof(rs));
	rs.st = st;
	assert_int_equal(store_query_frames(st, 0, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 2);
	store_close(st);
	metric_registry_free(reg);
}

static void test_query_ranges(void **state)
{
	const struct {
		int64_t since, until;
		size_t limit;
		int stop_after;
		int rc;
		int first, count; /* seconds after T0 of the first row, rows */
	} cases[] = {
		{ 0, INT64_MAX, 0, 0, 0, 0, 20 },
		{ T0, T0 + 20000, 0, 0, 0, 0, 20 },
		{ T0 + 5000, T0 + 8000, 0, 0, 0, 5, 3 },    /* until is exclusive */
		{ T0 + 4500, T0 + 8001, 0, 0, 0, 5, 4 },
		{ T0 + 5000, INT64_MAX, 4, 0, 0, 5, 4 },    /* limit */
		{ T0, INT64_MAX, 1, 0, 0, 0, 1 },
		{ T0 + 19000, INT64_MAX, 10, 0, 0, 19, 1 },
		{ T0 + 20000, INT64_MAX, 0, 0, 0, 0, 0 },
		{ T0 + 8000, T0 + 5000, 0, 0, 0, 0, 0 },    /* empty range */
		{ 0, INT64_MAX, 0, 3, 99, 0, 3 },           /* callback stops the query */
		{ 0, INT64_MAX, SIZE_MAX, 0, 0, 0, 20 },
	};
	struct metric_registry *reg;
	struct store *st;
	char path[256];

	(void)state;
	path_in(path, sizeof(path), "store.db");
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	for (int i = 0; i < 20; i++)
		assert_int_equal(append(st, reg, T0 + i * 1000, 1, "x", (double)i), 0);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct rows rs = { .stop_after = cases[c].stop_after };

		assert_int_equal(store_query_frames(st, cases[c].since, cases[c].until, cases[c].limit, collect, &rs),
				 cases[c].rc);
		assert_int_equal(rs.n, cases[c].count);
		for (size_t i = 0; i < rs.n; i++) {
			assert_true(rs.r[i].ts == T0 + (cases[c].first + (int64_t)i) * 1000);
			assert_true(rs.r[i].v[0].v == cases[c].first + (double)i);
		}
	}
	assert_int_equal(store_query_frames(st, 0, INT64_MAX, 0, NULL, NULL), -EINVAL);
	store_close(st);
	metric_registry_free(reg);
}

static void test_rollup_minute(void **state)
{
	struct metric_registry *reg;
	struct store *st;
	struct rows rs = { 0 };
	char path[256];
	uint32_t a, b, c, d, e;

	(void)state;
	path_in(path, sizeof(path), "store.db");
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	/* Minute 0: a = i, b only on even ticks, c NaN on every third tick, d always NaN. */
	for (int i = 0; i < 60; i++) {
		struct frame fr;

		frame_init(&fr);
		fr.ts_ms = T0 + i * 1000 + 7;
		assert_int_equal(frame_set(&fr, reg, "a", i), 0);
		if (i % 2 == 0)
			assert_int_equal(frame_set(&fr, reg, "b", i), 0);
		assert_int_equal(frame_set(&fr, reg, "c", i % 3 == 0 ? NAN : 10.0), 0);
		assert_int_equal(frame_set(&fr, reg, "d", NAN), 0);
		assert_int_equal(store_append_frame(st, reg, &fr), 0);
		frame_free(&fr);
	}
	assert_int_equal(store_query_rollups(st, 0, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 0); /* minute 0 is not complete yet */

	/* Minute 1 begins: minute 0 is rolled up in the same transaction. */
	assert_int_equal(append(st, reg, T0 + 60000, 2, "a", 1000.0, "e", 5.0), 0);
	assert_int_equal(append(st, reg, T0 + 61000, 2, "a", 2000.0, "e", 7.0), 0);
	/* A gap: minute 3 completes minute 1; minute 2 had no frames and gets no row. */
	assert_int_equal(append(st, reg, T0 + 180000, 1, "a", 1.0), 0);
	assert_counts(st, path);

	assert_int_equal(metric_lookup(reg, "a", &a), 0);
	assert_int_equal(metric_lookup(reg, "b", &b), 0);
	assert_int_equal(metric_lookup(reg, "c", &c), 0);
	assert_int_equal(metric_lookup(reg, "d", &d), 0);
	assert_int_equal(metric_lookup(reg, "e", &e), 0);
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(store_query_rollups(st, 0, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 2);
	assert_true(rs.r[0].ts == T0);
	assert_true(rs.r[0].dt == 60); /* ticks averaged */
	assert_int_equal(rs.r[0].n, 4);
	assert_int_equal(rs.r[0].v[0].id, a);
	assert_true(rs.r[0].v[0].v == 29.5);
	assert_int_equal(rs.r[0].v[1].id, b);
	assert_true(rs.r[0].v[1].v == 29.0);
	assert_int_equal(rs.r[0].v[2].id, c);
	assert_true(rs.r[0].v[2].v == 10.0);
	assert_int_equal(rs.r[0].v[3].id, d);
	assert_true(isnan(rs.r[0].v[3].v)); /* sampled but never valid: present and NaN */
	assert_true(rs.r[1].ts == T0 + 60000);
	assert_true(rs.r[1].dt == 2);
	assert_int_equal(rs.r[1].n, 2);
	assert_int_equal(rs.r[1].v[0].id, a);
	assert_true(rs.r[1].v[0].v == 1500.0);
	assert_int_equal(rs.r[1].v[1].id, e);
	assert_true(rs.r[1].v[1].v == 6.0);

	memset(&rs, 0, sizeof(rs));
	assert_int_equal(store_query_rollups(st, T0 + 1, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 1);
	store_close(st);

	/* After a restart the half-done minute 3 is rolled up from the frames table. */
	st = open_ok(path, NULL, reg);
	assert_int_equal(append(st, reg, T0 + 181000, 1, "a", 3.0), 0);
	assert_int_equal(append(st, reg, T0 + 240000, 1, "a", 0.0), 0);
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(store_query_rollups(st, T0 + 180000, T0 + 180001, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 1);
	assert_true(rs.r[0].dt == 2);
	assert_true(rs.r[0].v[0].v == 2.0);
	assert_counts(st, path);
	store_close(st);
	metric_registry_free(reg);
}

static void test_retention(void **state)
{
	struct store_options opt;
	struct metric_registry *reg;
	struct store *st;
	struct store_health h;
	struct rows rs = { 0 };
	char path[256], sql[128];
	int64_t now;

	(void)state;
	path_in(path, sizeof(path), "store.db");
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	for (int i = 0; i < 100; i++)
		assert_int_equal(append(st, reg, T0 + i * 1000, 1, "x", (double)i), 0);
	store_close(st);

	/* A backlog of 90 expired frames is trimmed 7 per tick, oldest first, never a fresh one. */
	store_options_default(&opt);
	opt.frames_retention_s = 10;
	opt.delete_batch = 7;
	opt.batch_ms = 0;
	st = open_ok(path, &opt, reg);
	store_get_health(st, &h);
	assert_int_equal(h.frames, 100);
	now = T0 + 100000;
	for (int tick = 1; tick <= 20; tick++, now += 1000) {
		int64_t expired = (now - 10000 - T0) / 1000;     /* frames before the cutoff, before this tick */
		int64_t left = expired - 7 * tick;                /* expired frames left after this tick */

		assert_int_equal(append(st, reg, now, 1, "x", 0.0), 0);
		if (left < 0)
			left = 0;
		store_get_health(st, &h);
		assert_int_equal(h.frames, sql_int(path, "SELECT count(*) FROM frames"));
		assert_int_equal(h.frames, 11 + left);
		assert_int_equal(sql_int(path, "SELECT min(ts) FROM frames"), now - 10000 - left * 1000);
		/* Frames inside the window are all there. */
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM frames WHERE ts >= %lld", (long long)(now - 10000));
		assert_int_equal(sql_int(path, sql), 11);
	}
	store_close(st);

	/* Roll-ups: 19 complete minutes, kept 5 minutes, trimmed 4 per tick. */
	path_in(path, sizeof(path), "store2.db");
	st = open_ok(path, NULL, reg);
	for (int m = 0; m < 20; m++)
		assert_int_equal(append(st, reg, T0 + m * 60000, 1, "x", (double)m), 0);
	store_get_health(st, &h);
	assert_int_equal(h.rollups, 19);
	store_close(st);
	store_options_default(&opt);
	opt.rollups_retention_s = 300;
	opt.delete_batch = 4;
	opt.batch_ms = 0;
	st = open_ok(path, &opt, reg);
	assert_int_equal(append(st, reg, T0 + 20 * 60000, 1, "x", 20.0), 0);
	store_get_health(st, &h);
	assert_int_equal(h.rollups, 20 - 4);
	assert_int_equal(h.frames, 21); /* frames are within their 48 h */
	assert_int_equal(store_query_rollups(st, 0, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 16);
	assert_true(rs.r[0].ts == T0 + 4 * 60000);
	assert_true(rs.r[15].ts == T0 + 19 * 60000);
	assert_true(rs.r[15].v[0].v == 19.0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(append(st, reg, T0 + 20 * 60000 + (i + 1) * 1000, 1, "x", 0.0), 0);
	/* Cutoff is now 15:05 (minute start ts): minutes 16..19 stay. */
	assert_int_equal(sql_int(path, "SELECT count(*) FROM rollups"), 4);
	assert_int_equal(sql_int(path, "SELECT min(ts) FROM rollups"), T0 + 16 * 60000);
	assert_counts(st, path);
	store_close(st);
	metric_registry_free(reg);
}

#define STR(x) #x
#define XSTR(x) STR(x)
#define STORE_SCHEMA_VERSION_NEXT 3 /* STORE_SCHEMA_VERSION + 1, as a token the preprocessor can quote */
_Static_assert(STORE_SCHEMA_VERSION_NEXT == STORE_SCHEMA_VERSION + 1, "bump with the schema");

static void test_newer_and_foreign(void **state)
{
	const struct {
		const char *what;
		const char *sql;
		int rc;
		const char *msg;
		int64_t version_after;
	} cases[] = {
		{ "newer schema", "PRAGMA user_version = " XSTR(STORE_SCHEMA_VERSION_NEXT), -ENOTSUP, "newer",
		  STORE_SCHEMA_VERSION + 1 },
		{ "much newer", "PRAGMA user_version = 77", -ENOTSUP, "77", 77 },
		{ "other application", "PRAGMA application_id = 42; PRAGMA user_version = 1", -EIO,
		  "not an ngx-autotune store", 1 },
		{ "unversioned, unknown table", "CREATE TABLE users(id INTEGER)", -EIO, "users", 0 },
	};
	char path[256], name[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct store *st = NULL;
		char err[256] = "";
		int rc;

		snprintf(name, sizeof(name), "db%zu", i);
		path_in(path, sizeof(path), name);
		sql_exec(path, cases[i].sql);
		rc = store_open(path, NULL, NULL, &st, err, sizeof(err));
		if (rc != cases[i].rc || !strstr(err, cases[i].msg))
			fail_msg("%s: rc %d, '%s'", cases[i].what, rc, err);
		assert_null(st);
		/* Refused files are left alone: no downgrade, no WAL switch, no tables added. */
		assert_int_equal(sql_int(path, "PRAGMA user_version"), cases[i].version_after);
		assert_int_equal(sql_int(path, "SELECT count(*) FROM pragma_journal_mode() WHERE journal_mode = 'wal'"),
				 0);
		assert_int_equal(sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'frames'"), 0);
	}
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void test_corrupt(void **state)
{
	uint8_t junk[8192];
	char path[256];
	uint32_t x = 99;
	const struct {
		const char *what;
		const char *name;
		size_t len; /* bytes of junk; 0: a short text */
		const char *msg;
	} cases[] = {
		{ "garbage", "garbage.db", sizeof(junk), "not a database" },
		{ "short text", "text.db", 0, "not a database" },
		{ "directory", "dir.db", 1, "unable to open" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(junk); i++) {
		x = x * 1664525u + 1013904223u;
		junk[i] = (uint8_t)(x >> 24);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct store *st = NULL;
		char err[256] = "";
		int rc;

		path_in(path, sizeof(path), cases[i].name);
		if (cases[i].len == 0)
			write_file(path, "hello, this is not sqlite\n", 26);
		else if (cases[i].len == 1)
			assert_int_equal(mkdir(path, 0700), 0);
		else
			write_file(path, junk, cases[i].len);
		rc = store_open(path, NULL, NULL, &st, err, sizeof(err));
		if (rc >= 0 || !strstr(err, cases[i].msg))
			fail_msg("%s: rc %d, '%s'", cases[i].what, rc, err);
		assert_null(st);
	}

	/* A real store with its pages overwritten: whatever sqlite makes of it, nothing crashes. */
	path_in(path, sizeof(path), "damaged.db");
	{
		struct metric_registry *reg;
		struct store *st;
		struct store_health h;
		struct rows rs = { 0 };
		char err[256] = "";
		struct stat sb;
		int fd, rc, failures = 0;

		assert_int_equal(metric_registry_new(&reg), 0);
		st = open_ok(path, NULL, reg);
		for (int i = 0; i < 300; i++)
			assert_int_equal(append(st, reg, T0 + i * 1000, 3, "a", 1.0, "b", 2.0, "c", (double)i), 0);
		store_close(st);
		metric_registry_free(reg);
		assert_int_equal(stat(path, &sb), 0);
		assert_true(sb.st_size > 8 * 4096);
		fd = open(path, O_WRONLY);
		assert_true(fd >= 0);
		for (off_t off = 2 * 4096; off + 4096 < sb.st_size; off += 3 * 4096)
			assert_int_equal(pwrite(fd, junk, 4096, off), 4096);
		close(fd);

		assert_int_equal(metric_registry_new(&reg), 0);
		rc = store_open(path, NULL, reg, &st, err, sizeof(err));
		if (rc < 0) {
			assert_true(err[0] != '\0');
			failures++;
		} else {
			if (store_query_frames(st, 0, INT64_MAX, 0, collect, &rs) < 0)
				failures++;
			if (store_query_rollups(st, 0, INT64_MAX, 0, collect, &rs) < 0)
				failures++;
			for (int i = 0; i < 70; i++)
				if (append(st, reg, T0 + 400000 + i * 1000, 1, "a", 1.0) < 0)
					failures++;
			store_get_health(st, &h);
			if (h.write_errors > 0)
				assert_non_null(strstr(h.reason, "malformed"));
			store_close(st);
		}
		metric_registry_free(reg);
		print_message("damaged store: %d failed operations%s%s\n", failures, err[0] ? ", open: " : "", err);
		assert_true(failures > 0); /* the damage was noticed somewhere */
	}
}

static void test_hostile_rows(void **state)
{
	struct metric_registry *reg;
	struct store *st;
	struct rows rs = { 0 };
	char path[256], err[256] = "";
	int rc;

	(void)state;
	path_in(path, sizeof(path), "store.db");
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	for (int i = 0; i < 30; i++)
		assert_int_equal(append(st, reg, T0 + i * 1000, 2, "a", (double)i, "b", 1.0), 0);
	store_close(st);
	metric_registry_free(reg);

	/* Rows whose data does not decode read as missed ticks, in queries and in roll-ups. Every third frame is
	 * damaged: ticks 0, 3, ..., 27 (10 of them). */
	sql_exec(path, "UPDATE frames SET data = X'80808080808001000000' WHERE (ts / 1000) % 3 = 0;"
		       "UPDATE frames SET data = X'01000080' WHERE ts = 1699999980000 + 1000;");
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	assert_int_equal(store_query_frames(st, 0, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 30 - 10 - 1);
	for (size_t i = 0; i < rs.n; i++)
		assert_true((rs.r[i].ts - T0) / 1000 % 3 != 0 && rs.r[i].ts != T0 + 1000);
	assert_int_equal(append(st, reg, T0 + 60000, 1, "a", 0.0), 0);
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(store_query_rollups(st, 0, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 1);
	assert_true(rs.r[0].dt == 19);
	/* mean of i over 0..29 without multiples of 3 and without 1: (435 - 135 - 1) / 19 */
	assert_float_equal(rs.r[0].v[0].v, 299.0 / 19.0, 1e-5);
	store_close(st);
	metric_registry_free(reg);

	/* A name the registry would never accept is corruption: refused with the row's id. */
	sql_exec(path, "UPDATE metrics SET name = 'bad name' WHERE id = 2");
	assert_int_equal(metric_registry_new(&reg), 0);
	st = NULL;
	rc = store_open(path, NULL, reg, &st, err, sizeof(err));
	if (rc != -EIO || !strstr(err, "metrics table: invalid row (id 2)"))
		fail_msg("rc %d '%s'", rc, err);
	assert_null(st);
	metric_registry_free(reg);
}

static void test_migrate_v0(void **state)
{
	struct metric_registry *reg;
	struct store *st;
	struct rows rs = { 0 };
	char path[256], fixture[512], *sql;
	FILE *f;
	long len;
	uint32_t id;

	(void)state;
	snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/store/v0-prerelease.sql", srcdir());
	f = fopen(fixture, "r");
	if (!f)
		fail_msg("cannot read %s (set srcdir to the repository root)", fixture);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	sql = calloc(1, (size_t)len + 1);
	assert_int_equal(fread(sql, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	path_in(path, sizeof(path), "v0.db");
	sql_exec(path, sql);
	free(sql);
	assert_int_equal(sql_int(path, "PRAGMA user_version"), 0);

	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	assert_int_equal(store_opened_version(st), 0);
	assert_int_equal(metric_max_id(reg), 3);
	assert_int_equal(metric_lookup(reg, "nginx.active", &id), 0);
	assert_int_equal(id, 2);
	assert_int_equal(store_query_frames(st, 0, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.r[0].ok, 7);
	assert_int_equal(rs.r[0].n, 3);
	assert_true(rs.r[0].v[0].v == 1.5);
	assert_true(isnan(rs.r[0].v[1].v));
	assert_true(rs.r[0].v[2].v == 100);
	assert_int_equal(rs.r[1].bad, 2);
	assert_true(rs.r[1].v[1].v == 200);
	/* The new table works: the next minute rolls the old rows up. */
	assert_int_equal(append(st, reg, T0 + 60000, 1, "nginx.waiting", 1.0), 0);
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(store_query_rollups(st, 0, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 1);
	assert_true(rs.r[0].dt == 2);
	assert_true(rs.r[0].v[0].v == 2.0);
	assert_true(isnan(rs.r[0].v[1].v));
	assert_true(rs.r[0].v[2].v == 150);
	store_close(st);
	metric_registry_free(reg);
	assert_int_equal(sql_int(path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	assert_int_equal(sql_int(path, "PRAGMA application_id"), 0x4e475841);
	assert_int_equal(sql_int(path, "SELECT id FROM metrics WHERE name = 'nginx.waiting'"), 4);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM meta"), 1);

	/* An older layout the migration cannot adopt: refused, and the file is untouched. */
	snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/store/v0-incompatible.sql", srcdir());
	f = fopen(fixture, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	sql = calloc(1, (size_t)len + 1);
	assert_int_equal(fread(sql, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	path_in(path, sizeof(path), "v0-bad.db");
	sql_exec(path, sql);
	free(sql);
	{
		char err[256] = "";

		st = NULL;
		assert_int_equal(store_open(path, NULL, NULL, &st, err, sizeof(err)), -EIO);
		assert_null(st);
		if (!strstr(err, "migrate to schema v1") || !strstr(err, "probes_ok"))
			fail_msg("message: '%s'", err);
	}
	assert_int_equal(sql_int(path, "PRAGMA user_version"), 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name IN ('meta', 'rollups')"), 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames"), 1);
}

/* The store's own connection, captured as sqlite opens it, for the emulated failures. */
static sqlite3 *captured_db;

static int capture_db(sqlite3 *db, const char **msg, const struct sqlite3_api_routines *api)
{
	(void)msg;
	(void)api;
	captured_db = db;
	return SQLITE_OK;
}

/* A store of one frame (T0, a = 1) at PATH (a new directory NAME under the test's directory). */
static void one_frame_store(const char *name, char *dir, size_t dirlen, char *path, size_t pathlen,
			    struct metric_registry *reg)
{
	struct store *st;

	path_in(dir, dirlen, name);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, pathlen, "%s/store.db", dir);
	st = open_ok(path, NULL, reg);
	assert_int_equal(append(st, reg, T0, 1, "a", 1.0), 0);
	store_close(st);
}

/* At open: a database the agent cannot write is refused up front. As root, permissions do not stop a write, so
 * the database is seen through a read-only bind mount. */
static void test_readonly_at_open(void **state)
{
	struct metric_registry *reg;
	struct store *st;
	char rw[200], ro[200], path[256], ropath[300], err[256] = "";
	int rc;

	(void)state;
	assert_int_equal(metric_registry_new(&reg), 0);
	one_frame_store("rw", rw, sizeof(rw), path, sizeof(path), reg);
	path_in(ro, sizeof(ro), "ro");
	assert_int_equal(mkdir(ro, 0755), 0);
	if (geteuid() != 0) {
		assert_int_equal(chmod(path, 0444), 0);
		snprintf(ropath, sizeof(ropath), "%s", path);
	} else if (sh("mount --bind '%s' '%s' 2>/dev/null && mount -o remount,bind,ro '%s' 2>/dev/null", rw, ro, ro) ==
		   0) {
		snprintf(mounted[0], sizeof(mounted[0]), "%s", ro);
		snprintf(ropath, sizeof(ropath), "%s/store.db", ro);
	} else {
		sh("umount '%s' 2>/dev/null", ro);
		metric_registry_free(reg);
		testskip("root, and no read-only bind mount (mount --bind needs CAP_SYS_ADMIN)");
	}
	st = NULL;
	rc = store_open(ropath, NULL, reg, &st, err, sizeof(err));
	if (rc != -EROFS || !strstr(err, "read-only"))
		fail_msg("read-only open: rc %d '%s'", rc, err);
	assert_null(st);
	if (mounted[0][0]) {
		assert_int_equal(sh("umount '%s'", ro), 0);
		mounted[0][0] = '\0';
	}
	metric_registry_free(reg);
}

static void test_readonly(void **state)
{
	struct metric_registry *reg;
	struct store *st;
	struct store_health h;
	char rw[200], path[256];
	sqlite3 *locker;

	(void)state;
	assert_int_equal(metric_registry_new(&reg), 0);
	one_frame_store("rw", rw, sizeof(rw), path, sizeof(path), reg);

	/*
	 * While running: a mount cannot turn read-only under open writers (the kernel answers EBUSY), so this part is
	 * EMULATED with PRAGMA query_only on the store's own connection. Lifting it recovers without a restart.
	 */
	captured_db = NULL;
	assert_int_equal(sqlite3_auto_extension((void (*)(void))capture_db), SQLITE_OK);
	st = open_ok(path, NULL, reg);
	sqlite3_cancel_auto_extension((void (*)(void))capture_db);
	assert_non_null(captured_db);
	assert_int_equal(sqlite3_exec(captured_db, "PRAGMA query_only = 1", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(append(st, reg, T0 + 1000, 1, "a", 2.0), -EROFS);
	store_get_health(st, &h);
	assert_true(h.degraded);
	assert_int_equal(h.write_errors, 1);
	assert_non_null(strstr(h.reason, "append frame"));
	assert_non_null(strstr(h.reason, "readonly"));
	assert_int_equal(h.frames, 1);
	assert_int_equal(sqlite3_exec(captured_db, "PRAGMA query_only = 0", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(append(st, reg, T0 + 2000, 1, "a", 3.0), 0);
	store_get_health(st, &h);
	assert_false(h.degraded);
	assert_string_equal(h.reason, "");
	assert_int_equal(h.write_errors, 1);
	/* The frame of the failed tick was kept and is written with this one. */
	assert_int_equal(h.frames, 3);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames WHERE ts = 1699999981000"), 1);

	/* Another process holding the write lock: the tick fails after the busy timeout, then recovers. */
	assert_int_equal(sqlite3_open(path, &locker), SQLITE_OK);
	assert_int_equal(sqlite3_exec(locker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(append(st, reg, T0 + 3000, 1, "a", 4.0), -EBUSY);
	store_get_health(st, &h);
	assert_true(h.degraded);
	assert_non_null(strstr(h.reason, "locked"));
	assert_int_equal(sqlite3_exec(locker, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(locker);
	assert_int_equal(append(st, reg, T0 + 4000, 1, "a", 5.0), 0);
	store_get_health(st, &h);
	assert_false(h.degraded);
	assert_int_equal(h.write_errors, 2);
	assert_int_equal(h.frames, 5);
	assert_counts(st, path);
	store_close(st);
	metric_registry_free(reg);
}

static void test_disk_full(void **state)
{
	struct metric_registry *reg;
	struct store *st;
	struct store_health h;
	char mnt[200], path[256], filler[256], name[32];
	static uint8_t fill[192 * 1024];
	const char *no_mount = getenv("NGXAT_TEST_NO_MOUNT");
	bool real;
	int ok = 0, rc = 0, i;

	(void)state;
	path_in(mnt, sizeof(mnt), "mnt");
	assert_int_equal(mkdir(mnt, 0755), 0);
	real = geteuid() == 0 && !(no_mount && *no_mount == '1') &&
	       sh("mount -t tmpfs -o size=512k ngxat-test '%s' 2>/dev/null", mnt) == 0;
	snprintf(path, sizeof(path), "%s/store.db", mnt);
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	if (real) {
		snprintf(mounted[1], sizeof(mounted[1]), "%s", mnt);
		print_message("disk full: real, on a 512 KiB tmpfs\n");
		memset(fill, 0xa5, sizeof(fill));
		write_file(filler, fill, sizeof(fill));
	} else {
		print_message("disk full: EMULATED with PRAGMA max_page_count (%s)\n",
			      geteuid() != 0 ? "not root" : "tmpfs mount unavailable or disabled");
		captured_db = NULL;
		assert_int_equal(sqlite3_auto_extension((void (*)(void))capture_db), SQLITE_OK);
	}
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	if (!real) {
		assert_non_null(captured_db);
		sqlite3_cancel_auto_extension((void (*)(void))capture_db);
		assert_int_equal(sqlite3_exec(captured_db, "PRAGMA max_page_count = 80", NULL, NULL, NULL), SQLITE_OK);
	}
	/* Frames of 300 metrics (about 1.5 KiB each) until the disk is full. */
	for (i = 0; i < 5000; i++) {
		struct frame fr;

		frame_init(&fr);
		fr.ts_ms = T0 + i * 1000;
		for (int m = 0; m < 300; m++) {
			snprintf(name, sizeof(name), "m.%d", m);
			assert_int_equal(frame_set(&fr, reg, name, i * 1000.0 + m), 0);
		}
		rc = store_append_frame(st, reg, &fr);
		frame_free(&fr);
		if (rc < 0)
			break;
		ok++;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(ok > 10);
	store_get_health(st, &h);
	assert_true(h.degraded);
	assert_non_null(strstr(h.reason, "append frame"));
	assert_non_null(strstr(h.reason, "database or disk is full"));
	assert_int_equal(h.write_errors, 1);
	assert_int_equal(h.frames, ok);
	/* Still full: still failing, names interned meanwhile wait for a tick that commits. */
	assert_int_equal(append(st, reg, T0 + 9000000, 2, "late.one", 1.0, "late.two", 2.0), -ENOSPC);
	store_get_health(st, &h);
	assert_int_equal(h.write_errors, 2);

	/* Space comes back: the next tick succeeds and clears the state; the two frames that failed were kept and are
	 * written with it. */
	if (real)
		assert_int_equal(unlink(filler), 0);
	else
		assert_int_equal(sqlite3_exec(captured_db, "PRAGMA max_page_count = 100000", NULL, NULL, NULL),
				 SQLITE_OK);
	assert_int_equal(append(st, reg, T0 + 9001000, 1, "late.two", 3.0), 0);
	store_get_health(st, &h);
	assert_false(h.degraded);
	assert_string_equal(h.reason, "");
	assert_int_equal(h.frames, ok + 3);
	store_close(st);
	metric_registry_free(reg);

	/* Nothing was lost or half-written: schema, names, every committed frame. */
	assert_int_equal(metric_registry_new(&reg), 0);
	st = open_ok(path, NULL, reg);
	assert_int_equal(store_opened_version(st), STORE_SCHEMA_VERSION);
	assert_int_equal(metric_max_id(reg), 302);
	assert_non_null(metric_name(reg, 301));
	assert_string_equal(metric_name(reg, 301), "late.one");
	store_get_health(st, &h);
	assert_int_equal(h.frames, ok + 3);
	store_close(st);
	metric_registry_free(reg);
	if (real) {
		assert_int_equal(sh("umount '%s'", mnt), 0);
		mounted[1][0] = '\0';
	}
}

/* Frames written in batches (the default): when they are written, what queries and health see, a clock stepped
 * back, failing writes (retried once a batch, frames kept up to a bound) and close. */
static void test_batch(void **state)
{
	struct store_options opt;
	struct metric_registry *reg;
	struct store *st;
	struct store_health h;
	struct rows rs = { 0 };
	char path[256], err[256];
	int64_t before;

	(void)state;
	path_in(path, sizeof(path), "store.db");
	assert_int_equal(metric_registry_new(&reg), 0);
	store_options_default(&opt);
	assert_int_equal(opt.batch_ms, 5000);
	captured_db = NULL;
	assert_int_equal(sqlite3_auto_extension((void (*)(void))capture_db), SQLITE_OK);
	st = open_ok(path, &opt, reg);
	sqlite3_cancel_auto_extension((void (*)(void))capture_db);
	assert_non_null(captured_db);

	/* The first frame is written at once; the next four are held, and the fifth second writes all five. */
	assert_int_equal(append(st, reg, T0, 1, "a", 0.0), 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames"), 1);
	for (int i = 1; i <= 4; i++)
		assert_int_equal(append(st, reg, T0 + i * 1000, 2, "a", (double)i, "b", 1.0), 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames"), 1);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM metrics"), 1); /* "b" waits with its frames */
	store_get_health(st, &h);
	assert_int_equal(h.frames, 5);
	assert_int_equal(h.last_write_ms, T0 + 4000);
	assert_false(h.degraded);
	assert_int_equal(append(st, reg, T0 + 5000, 1, "a", 5.0), 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames"), 6);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM metrics"), 2);
	assert_counts(st, path);

	/* A query writes what is held first, so it sees every tick. */
	assert_int_equal(append(st, reg, T0 + 6000, 1, "a", 6.0), 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames"), 6);
	assert_int_equal(store_query_frames(st, T0 + 6000, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 1);
	assert_true(rs.r[0].v[0].v == 6.0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames"), 7);

	/* A batch across a minute boundary rolls the minute up in the same write. */
	for (int i = 7; i <= 62; i++)
		assert_int_equal(append(st, reg, T0 + i * 1000, 1, "a", (double)i), 0);
	assert_int_equal(store_query_rollups(st, 0, INT64_MAX, 0, collect, (memset(&rs, 0, sizeof(rs)), &rs)), 0);
	assert_int_equal(rs.n, 1);
	assert_true(rs.r[0].dt == 60);
	assert_true(rs.r[0].v[0].v == 29.5);
	assert_counts(st, path);

	/* A clock stepped back writes at once, and the repeated ts replaces the stored frame. */
	before = sql_int(path, "SELECT count(*) FROM frames");
	assert_int_equal(append(st, reg, T0 + 10000, 1, "a", -1.0), 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames"), before);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames WHERE ts = 1699999990000"), 1);
	assert_counts(st, path);

	/* Writes fail: the attempt says so; the frames after it are held without a new attempt until a batch has
	 * passed, returning the standing error; the frames count only what is written. */
	before = sql_int(path, "SELECT count(*) FROM frames");
	assert_int_equal(sqlite3_exec(captured_db, "PRAGMA query_only = 1", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(append(st, reg, T0 + 100000, 1, "a", 1.0), -EROFS);
	store_get_health(st, &h);
	assert_true(h.degraded);
	assert_int_equal(h.write_errors, 1);
	assert_int_equal(h.frames, before);
	for (int i = 1; i <= 4; i++)
		assert_int_equal(append(st, reg, T0 + 100000 + i * 1000, 1, "a", 1.0), -EROFS);
	store_get_health(st, &h);
	assert_int_equal(h.write_errors, 1);
	/* A degraded store does not retry from a query: the query reads what is written. */
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(store_query_frames(st, T0 + 100000, INT64_MAX, 0, collect, &rs), 0);
	assert_int_equal(rs.n, 0);
	store_get_health(st, &h);
	assert_int_equal(h.write_errors, 1);
	/* 400 more failing ticks: retried once a batch (80 times), and only the newest 300 frames are kept. */
	for (int i = 5; i < 405; i++)
		assert_int_equal(append(st, reg, T0 + 100000 + i * 1000, 1, "a", (double)i), -EROFS);
	store_get_health(st, &h);
	assert_int_equal(h.write_errors, 1 + 80);
	assert_int_equal(h.frames, before);
	/* Writable again: the next attempt writes the 300 kept frames, the oldest having been dropped. */
	assert_int_equal(sqlite3_exec(captured_db, "PRAGMA query_only = 0", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(append(st, reg, T0 + 600000, 1, "a", 0.0), 0);
	store_get_health(st, &h);
	assert_false(h.degraded);
	assert_int_equal(h.frames, before + 300);
	assert_int_equal(sql_int(path, "SELECT min(ts) FROM frames WHERE ts >= 1700000080000"), T0 + 100000 + 106 * 1000);
	assert_counts(st, path);

	/* Close writes what is held. */
	assert_int_equal(append(st, reg, T0 + 601000, 1, "a", 1.0), 0);
	assert_int_equal(append(st, reg, T0 + 602000, 1, "late", 1.0), 0);
	store_close(st);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM frames"), before + 302);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM metrics WHERE name = 'late'"), 1);
	metric_registry_free(reg);

	/* batch_ms is bounded. */
	for (int i = 0; i < 2; i++) {
		store_options_default(&opt);
		opt.batch_ms = i ? 60001 : -1;
		st = NULL;
		assert_int_equal(store_open(path, &opt, NULL, &st, err, sizeof(err)), -EINVAL);
		assert_null(st);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip_nan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rollup_minute, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_and_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v0, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readonly_at_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readonly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
