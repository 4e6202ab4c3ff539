/*
 * store: the agent's SQLite database. See store.h.
 */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store_internal.h"
#include "strutil.h"

#define STORE_APPLICATION_ID 0x4e475841 /* "NGXA": tells our files from other SQLite databases */
#define BUSY_TIMEOUT_MS 500             /* a tick is 1 s; waiting longer only delays the next one */
#define MINUTE_MS 60000
#define TS_MAX ((int64_t)1 << 53)       /* far beyond any wall clock; keeps minute arithmetic in range */
#define BATCH_DEFAULT_MS 5000
#define BATCH_MAX_MS 60000
#define HELD_MAX 300 /* frames kept while writes fail: 5 minutes at 1 Hz, about 300 KiB */

/* A frame waiting for the next write, encoded. */
struct held_frame {
	int64_t ts;
	double dt;
	uint32_t ok, bad;
	uint8_t *data;
	size_t len;
};

/* A metric name interned since the last write. */
struct held_name {
	uint32_t id;
	char *name;
};

struct store_batch {
	struct held_frame *f;
	size_t n, cap;
	struct held_name *names;
	size_t nnames, names_cap;
	uint32_t names_held;  /* highest id stored or held */
	bool tried;           /* a write was attempted since open */
	int64_t tried_ts;     /* ts of the frame that made the last attempt */
	int err;              /* the last attempt's error, while the store is degraded */
};

/*
 * Forward migrations: entry N-1 takes a file from user_version N-1 to N, in one transaction with the version bump.
 * Never edit a shipped entry; append one. v1 uses IF NOT EXISTS so a pre-release file (user_version 0) holding some
 * of these tables is adopted with its rows; the closing SELECTs compile only if every column the agent uses exists,
 * so an incompatible layout fails the migration and the file keeps its old version.
 */
static const char *const migrations[] = {
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE IF NOT EXISTS metrics(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);"
	"CREATE TABLE IF NOT EXISTS frames(ts INTEGER PRIMARY KEY, dt REAL, probes_ok INTEGER, probes_bad INTEGER,"
	" data BLOB);"
	"CREATE TABLE IF NOT EXISTS rollups(ts INTEGER PRIMARY KEY, n INTEGER, data BLOB);"
	"INSERT OR IGNORE INTO meta(key, value) VALUES('application', 'ngx-autotune');"
	"PRAGMA application_id = 1313298497;"
	"SELECT key, value FROM meta LIMIT 0;"
	"SELECT id, name FROM metrics LIMIT 0;"
	"SELECT ts, dt, probes_ok, probes_bad, data FROM frames LIMIT 0;"
	"SELECT ts, n, data FROM rollups LIMIT 0;",
	/* v2: the change journal (a row per knob write, committed before the write), what the agent knows of each
	 * knob (its original value, what it last wrote, conflict/unsupported), and the append-only audit trail. */
	"CREATE TABLE changes(id INTEGER PRIMARY KEY AUTOINCREMENT, knob TEXT NOT NULL, kind TEXT NOT NULL,"
	" reverts INTEGER NOT NULL DEFAULT 0, old_value TEXT NOT NULL, new_value TEXT NOT NULL, state TEXT NOT NULL,"
	" actor TEXT NOT NULL, why TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '', created_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL);"
	"CREATE INDEX changes_knob ON changes(knob, id);"
	"CREATE INDEX changes_state ON changes(state);"
	"CREATE TABLE knobs(name TEXT PRIMARY KEY, original TEXT, last_written TEXT, state TEXT NOT NULL DEFAULT 'ok',"
	" why TEXT NOT NULL DEFAULT '', updated_ms INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE audit(id INTEGER PRIMARY KEY AUTOINCREMENT, ts INTEGER NOT NULL, last_ts INTEGER NOT NULL,"
	" actor TEXT NOT NULL, peer TEXT NOT NULL DEFAULT '', action TEXT NOT NULL, knob TEXT NOT NULL DEFAULT '',"
	" change_id INTEGER NOT NULL DEFAULT 0, outcome TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '',"
	" count INTEGER NOT NULL DEFAULT 1);"
	"CREATE INDEX audit_ts ON audit(ts);",
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == STORE_SCHEMA_VERSION, "one migration per version");
_Static_assert(STORE_APPLICATION_ID == 1313298497, "application_id in migration v1");

static const char *const our_tables[] = { "meta", "metrics", "frames", "rollups", "changes", "knobs", "audit" };

enum {
	S_BEGIN,
	S_COMMIT,
	S_ROLLBACK,
	S_NAME_INSERT,
	S_FRAME_EXISTS,
	S_FRAME_INSERT,
	S_MINUTE_FRAMES,
	S_ROLLUP_EXISTS,
	S_ROLLUP_INSERT,
	S_TRIM_FRAMES,
	S_TRIM_ROLLUPS,
	S_TRIM_AUDIT,
	S_TRIM_DENIED,
	S_QUERY_FRAMES,
	S_QUERY_ROLLUPS,
	S_BYTES,
	S_COUNT
};

_Static_assert(S_COUNT <= STORE_STMT_MAX, "room for every statement");

static const char *const stmt_sql[S_COUNT] = {
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_NAME_INSERT] = "INSERT INTO metrics(id, name) VALUES(?1, ?2)",
	[S_FRAME_EXISTS] = "SELECT 1 FROM frames WHERE ts = ?1",
	[S_FRAME_INSERT] = "INSERT OR REPLACE INTO frames(ts, dt, probes_ok, probes_bad, data)"
			   " VALUES(?1, ?2, ?3, ?4, ?5)",
	[S_MINUTE_FRAMES] = "SELECT data FROM frames WHERE ts >= ?1 AND ts < ?2",
	[S_ROLLUP_EXISTS] = "SELECT 1 FROM rollups WHERE ts = ?1",
	[S_ROLLUP_INSERT] = "INSERT OR REPLACE INTO rollups(ts, n, data) VALUES(?1, ?2, ?3)",
	/* Oldest first, at most ?2 rows: ts is the rowid, so this is a short range scan whatever the backlog. */
	[S_TRIM_FRAMES] = "DELETE FROM frames WHERE ts IN (SELECT ts FROM frames WHERE ts < ?1 ORDER BY ts LIMIT ?2)",
	[S_TRIM_ROLLUPS] = "DELETE FROM rollups WHERE ts IN"
			   " (SELECT ts FROM rollups WHERE ts < ?1 ORDER BY ts LIMIT ?2)",
	/* By the index on ts; a row whose last event is newer (a repeat collapsed into it) stays. */
	[S_TRIM_AUDIT] = "DELETE FROM audit WHERE id IN"
			 " (SELECT id FROM audit WHERE ts < ?1 AND last_ts < ?1 ORDER BY ts LIMIT ?2)",
	[S_TRIM_DENIED] = "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE ts < ?1 AND last_ts < ?1"
			  " AND action = '" STORE_AUDIT_DENIED "' ORDER BY ts LIMIT ?2)",
	[S_QUERY_FRAMES] = "SELECT ts, dt, probes_ok, probes_bad, data FROM frames WHERE ts >= ?1 AND ts < ?2"
			   " ORDER BY ts LIMIT ?3",
	[S_QUERY_ROLLUPS] = "SELECT ts, n, data FROM rollups WHERE ts >= ?1 AND ts < ?2 ORDER BY ts LIMIT ?3",
	[S_BYTES] = "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
};

void store_options_default(struct store_options *opt)
{
	opt->frames_retention_s = 48 * 3600;
	opt->rollups_retention_s = 90 * 24 * 3600;
	opt->audit_retention_s = 365 * 24 * 3600;
	opt->denied_retention_s = 7 * 24 * 3600;
	opt->delete_batch = 500;
	opt->batch_ms = BATCH_DEFAULT_MS;
}

/* -errno for a failed sqlite call, so callers can sort full disks from read-only files from the rest. */
int store_sqlite_errno(sqlite3 *db, int rc)
{
	switch (rc & 0xff) {
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		switch (sqlite3_system_errno(db)) {
		case EROFS:
			return -EROFS;
		case ENOSPC:
		case EDQUOT:
			return -ENOSPC;
		case EACCES:
		case EPERM:
			return -EACCES;
		}
		break;
	}
	return -EIO;
}

/* sqlite's message for RC, with the OS reason when sqlite only says "disk I/O error". */
void store_describe(sqlite3 *db, int rc, char *buf, size_t len)
{
	const char *msg = (sqlite3_errcode(db) & 0xff) == (rc & 0xff) ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
	int sys = sqlite3_system_errno(db);

	if (((rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_CANTOPEN) && sys != 0)
		snprintf(buf, len, "%s (%s)", msg, strerror(sys));
	else
		snprintf(buf, len, "%s", msg);
}

/* Step a statement that returns no rows we need, and reset it. */
int store_run(sqlite3_stmt *s)
{
	int rc;

	do
		rc = sqlite3_step(s);
	while (rc == SQLITE_ROW);
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int store_read_end(struct store *st, sqlite3_stmt *s, int rc, int r)
{
	if (!r && rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = store_sqlite_errno(st->db, rc);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return r;
}

/* Whether a statement (bound by the caller) returns a row. */
static int exists(sqlite3_stmt *s, bool *found)
{
	int rc = sqlite3_step(s);

	*found = rc == SQLITE_ROW;
	sqlite3_reset(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* One integer from SQL (0 when there is no row or it is NULL). */
static int query_int(sqlite3 *db, const char *sql, int64_t *out, bool *is_null)
{
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);

	*out = 0;
	if (is_null)
		*is_null = true;
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		if (is_null)
			*is_null = sqlite3_column_type(s, 0) == SQLITE_NULL;
		*out = sqlite3_column_int64(s, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return rc;
}

static int64_t minute_of(int64_t ts)
{
	return ts - ts % MINUTE_MS; /* ts >= 0 */
}

/* mkdir -p of PATH's directory, so a fresh state directory needs no install step. */
int store_make_parents(const char *path)
{
	char *p = strdup(path);
	int rc = 0;

	if (!p)
		return -ENOMEM;
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (*p && mkdir(p, 0750) < 0 && errno != EEXIST) {
			struct stat sb;

			/* Some filesystems answer EROFS or EACCES before EEXIST for a directory that exists. */
			rc = -errno;
			if (stat(p, &sb) < 0 || !S_ISDIR(sb.st_mode))
				break;
			rc = 0;
		}
		*s = '/';
	}
	free(p);
	return rc;
}

/*
 * sqlite opens an unwritable file read-only without a word, and a WAL file on a read-only mount fails with a bare
 * "unable to open database file"; ask the kernel first so the message says what is wrong. The directory matters
 * too: the -wal and -shm files live beside the database.
 */
static int check_writable(const char *path)
{
	char *dir = strdup(path), *slash;
	int rc = 0;

	if (!dir)
		return 0; /* sqlite will say it */
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) < 0 && errno != ENOENT)
		rc = -errno;
	else if (faccessat(AT_FDCWD, slash ? dir : ".", W_OK, AT_EACCESS) < 0)
		rc = -errno;
	free(dir);
	return rc == -EROFS || rc == -EACCES || rc == -EPERM ? rc : 0;
}

static void drop_held(struct store_batch *b, size_t nframes)
{
	if (nframes == 0)
		return;
	for (size_t i = 0; i < nframes; i++)
		free(b->f[i].data);
	memmove(b->f, b->f + nframes, (b->n - nframes) * sizeof(*b->f));
	b->n -= nframes;
}

static void free_batch(struct store_batch *b)
{
	if (!b)
		return;
	drop_held(b, b->n);
	for (size_t i = 0; i < b->nnames; i++)
		free(b->names[i].name);
	free(b->names);
	free(b->f);
	free(b);
}

static void store_free(struct store *st)
{
	free_batch(st->batch);
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	/* The journal's and the counts' statements too: the store owns every statement it holds (finalizing NULL
	 * is a no-op), so that it calls into none of the files built on it. */
	for (size_t i = 0; i < sizeof(st->jstmt) / sizeof(st->jstmt[0]); i++)
		sqlite3_finalize(st->jstmt[i]);
	for (size_t i = 0; i < sizeof(st->cstmt) / sizeof(st->cstmt[0]); i++)
		sqlite3_finalize(st->cstmt[i]);
	sqlite3_close_v2(st->db);
	frame_free(&st->scratch);
	frame_free(&st->rollup);
	free(st->audit_held);
	free(st->acc);
	free(st->acc_tmp);
	free(st);
}

/* A read while opening that ended at RC: ERR is "WHAT: sqlite's reason". -errno. */
static int read_failed(struct store *st, int rc, const char *what, char *err, size_t errlen)
{
	char msg[200];

	store_describe(st->db, rc, msg, sizeof(msg));
	str_err(err, errlen, "%s: %s", what, msg);
	return store_sqlite_errno(st->db, rc);
}

/* Refuse files that are not ours or are newer than we understand; never touch them. */
static int check_identity(struct store *st, int64_t version, int64_t app_id, char *err, size_t errlen)
{
	sqlite3_stmt *s;
	int rc, r;

	if (version > STORE_SCHEMA_VERSION) {
		str_err(err, errlen,
			"schema version %lld is newer than this agent supports (%d); refusing to downgrade",
			(long long)version, STORE_SCHEMA_VERSION);
		return -ENOTSUP;
	}
	if (version < 0) {
		str_err(err, errlen, "invalid schema version %lld", (long long)version);
		return -EIO;
	}
	if (app_id != STORE_APPLICATION_ID && (app_id != 0 || version != 0)) {
		str_err(err, errlen, "not an ngx-autotune store (application_id 0x%llx)", (unsigned long long)app_id);
		return -EIO;
	}
	if (version > 0)
		return 0;
	/* An unversioned file is adopted only if every table in it is one of ours. */
	rc = sqlite3_prepare_v2(st->db,
				"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'", -1,
				&s, NULL);
	for (rc = rc == SQLITE_OK ? sqlite3_step(s) : rc; rc == SQLITE_ROW; rc = sqlite3_step(s)) {
		const char *name = (const char *)sqlite3_column_text(s, 0);
		bool ours = false;

		for (size_t i = 0; name && i < sizeof(our_tables) / sizeof(our_tables[0]); i++)
			ours = ours || strcmp(name, our_tables[i]) == 0;
		if (!ours) {
			str_err(err, errlen, "not an ngx-autotune store (unknown table '%.64s')", name ? name : "");
			sqlite3_finalize(s);
			return -EIO;
		}
	}
	r = rc == SQLITE_DONE ? 0 : read_failed(st, rc, "read schema", err, errlen);
	sqlite3_finalize(s);
	return r;
}

static int migrate(struct store *st, char *err, size_t errlen)
{
	char msg[200];

	for (int v = st->opened_version + 1; v <= STORE_SCHEMA_VERSION; v++) {
		char bump[48];
		char *emsg = NULL;
		int64_t now_v;
		int rc;

		rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			goto fail;
		/* Another process may have migrated while we waited for the lock. */
		rc = query_int(st->db, "PRAGMA user_version", &now_v, NULL);
		if (rc != SQLITE_OK)
			goto fail;
		if (now_v < v) {
			snprintf(bump, sizeof(bump), "PRAGMA user_version = %d", v);
			rc = sqlite3_exec(st->db, migrations[v - 1], NULL, NULL, &emsg);
			if (rc == SQLITE_OK)
				rc = sqlite3_exec(st->db, bump, NULL, NULL, &emsg);
			if (rc != SQLITE_OK) {
				str_err(err, errlen, "migrate to schema v%d: %s", v, emsg ? emsg : sqlite3_errstr(rc));
				sqlite3_free(emsg);
				sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
				return store_sqlite_errno(st->db, rc);
			}
		}
		rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			goto fail;
		continue;
fail:
		store_describe(st->db, rc, msg, sizeof(msg));
		str_err(err, errlen, "migrate to schema v%d: %s", v, msg);
		if (!sqlite3_get_autocommit(st->db))
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return store_sqlite_errno(st->db, rc);
	}
	return 0;
}

static int load_names(struct store *st, struct metric_registry *reg, char *err, size_t errlen)
{
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(st->db, "SELECT id, name FROM metrics ORDER BY id", -1, &s, NULL);
	int r;

	for (rc = rc == SQLITE_OK ? sqlite3_step(s) : rc; rc == SQLITE_ROW; rc = sqlite3_step(s)) {
		sqlite3_int64 id = sqlite3_column_int64(s, 0);
		const char *name = (const char *)sqlite3_column_text(s, 1);

		if (id < 1 || id > METRIC_ID_MAX || !name || (size_t)sqlite3_column_bytes(s, 1) != strlen(name))
			r = -EINVAL;
		else
			r = reg ? metric_register(reg, name, (uint32_t)id) : 0;
		if (r < 0) {
			if (r == -EEXIST)
				str_err(err, errlen, "metrics table: '%.96s' = %lld conflicts with the registry", name,
					(long long)id);
			else if (r == -EINVAL)
				str_err(err, errlen, "metrics table: invalid row (id %lld)", (long long)id);
			else
				str_err(err, errlen, "metrics table: %s", strerror(-r));
			sqlite3_finalize(s);
			return r == -ENOMEM ? r : -EIO;
		}
		st->names_stored = (uint32_t)id;
	}
	r = rc == SQLITE_DONE ? 0 : read_failed(st, rc, "load metric names", err, errlen);
	sqlite3_finalize(s);
	return r;
}

/* Counts kept in memory from here on, so health is cheap. */
static int load_counts(struct store *st, char *err, size_t errlen)
{
	bool none;
	int rc;

	rc = query_int(st->db, "SELECT count(*) FROM frames", &st->h.frames, NULL);
	if (rc == SQLITE_OK)
		rc = query_int(st->db, "SELECT count(*) FROM rollups", &st->h.rollups, NULL);
	if (rc == SQLITE_OK)
		rc = query_int(st->db, "SELECT max(ts) FROM frames", &st->last_ts, &none);
	if (rc != SQLITE_OK)
		return read_failed(st, rc, "count rows", err, errlen);
	st->have_last = !none && st->last_ts >= 0 && st->last_ts <= TS_MAX;
	st->h.last_write_ms = st->have_last ? st->last_ts : 0;
	return 0;
}

/* SQLite re-prepares the pragma functions on every run (0.15 ms here), so the size is refreshed once a minute. */
static void refresh_bytes(struct store *st)
{
	sqlite3_stmt *s = st->stmt[S_BYTES];

	if (s && sqlite3_step(s) == SQLITE_ROW)
		st->h.bytes = sqlite3_column_int64(s, 0);
	if (s)
		sqlite3_reset(s);
}

/* What an operator can do about a store that existed and cannot be used: ERR gets it after the reason. */
static void recovery_hint(const char *path, char *err, size_t errlen)
{
	size_t n = strlen(err);

	str_err(err + n, errlen - n,
		". The change history and the knobs' originals are in this file: restore it from a backup; or put every "
		"knob back from the copy of the originals with 'ngx-autotune --revert all' (it reads %.200s%s), then move "
		"the file aside to start a new store",
		path, STORE_ORIGINALS_SUFFIX);
}

/* A store file that is there but empty, or gone while its originals file says it existed: never a fresh start. */
static int check_lost(const char *path, char *err, size_t errlen)
{
	char orig[600];
	struct stat sb, ob;

	snprintf(orig, sizeof(orig), "%s%s", path, STORE_ORIGINALS_SUFFIX);
	if (stat(path, &sb) == 0) {
		if (S_ISREG(sb.st_mode) && sb.st_size == 0) {
			/* sqlite writes the first page when it turns WAL on: an agent never leaves an empty file. */
			str_err(err, errlen, "%s: the store is empty (0 bytes), but an empty store is never left by the agent",
				path);
			recovery_hint(path, err, errlen);
			return -ENODATA;
		}
		return 0;
	}
	if (errno == ENOENT && stat(orig, &ob) == 0 && ob.st_size > 0) {
		str_err(err, errlen, "%s: the store is gone, but %s says it existed", path, orig);
		recovery_hint(path, err, errlen);
		return -ENODATA;
	}
	return 0;
}

/* The journal's tables are read whole at start (recovery): a damaged page there is an error now, not a surprise in
 * the middle of a revert. Frames are checked by their writes. */
static int check_journal_pages(struct store *st, char *err, size_t errlen)
{
	static const char *const tables[] = {"changes", "knobs", "audit", "meta", "metrics"};

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		char sql[64];
		sqlite3_stmt *s;
		const char *t;
		int rc;

		snprintf(sql, sizeof(sql), "PRAGMA quick_check(%s)", tables[i]);
		rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(s);
		if (rc != SQLITE_ROW) {
			char what[600];
			int r;

			snprintf(what, sizeof(what), "%s: check the journal", st->path);
			r = read_failed(st, rc, what, err, errlen);

			sqlite3_finalize(s);
			return r;
		}
		t = (const char *)sqlite3_column_text(s, 0);
		if (!t || strcmp(t, "ok") != 0) {
			str_err(err, errlen, "%s: table %s is damaged (%.120s)", st->path, tables[i], t ? t : "?");
			sqlite3_finalize(s);
			return -EIO;
		}
		sqlite3_finalize(s);
	}
	return 0;
}

/* MEMORY: a scratch store in memory (PATH is ignored), for the revert of a store that is gone. */
static int open_db(const char *path, bool memory, const struct store_options *opt, struct metric_registry *reg,
		   struct store **out, char *err, size_t errlen)
{
	struct store_options def;
	struct store *st;
	int64_t version, app_id;
	char msg[200];
	const char *step;
	bool existed;
	int rc, ret;

	*out = NULL;
	str_err(err, errlen, "%s", "");
	if (!opt) {
		store_options_default(&def);
		opt = &def;
	}
	if (!path || !*path) {
		str_err(err, errlen, "no database path");
		return -EINVAL;
	}
	if (opt->frames_retention_s < 1 || opt->frames_retention_s > INT64_MAX / 1000 || opt->rollups_retention_s < 1 ||
	    opt->rollups_retention_s > INT64_MAX / 1000 || opt->audit_retention_s < 1 ||
	    opt->audit_retention_s > INT64_MAX / 1000 || opt->denied_retention_s < 1 ||
	    opt->denied_retention_s > INT64_MAX / 1000 || opt->delete_batch < 1 || opt->batch_ms < 0 ||
	    opt->batch_ms > BATCH_MAX_MS) {
		str_err(err, errlen, "invalid retention options");
		return -EINVAL;
	}
	if (strlen(path) >= sizeof(((struct store *)0)->path)) {
		str_err(err, errlen, "database path too long");
		return -ENAMETOOLONG;
	}
	existed = false;
	if (!memory) {
		ret = check_lost(path, err, errlen);
		if (ret < 0)
			return ret;
		existed = access(path, F_OK) == 0;
		ret = store_make_parents(path);
		if (ret < 0) {
			str_err(err, errlen, "create directory for %s: %s", path, strerror(-ret));
			return ret;
		}
		ret = check_writable(path);
		if (ret < 0) {
			str_err(err, errlen, "%s: database is read-only (%s)", path, strerror(-ret));
			return -EROFS;
		}
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		str_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	st->opt = *opt;
	snprintf(st->path, sizeof(st->path), "%s", memory ? "" : path);
	st->batch = calloc(1, sizeof(*st->batch));
	if (!st->batch) {
		free(st);
		str_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	frame_init(&st->scratch);
	frame_init(&st->rollup);

	step = "open";
	rc = sqlite3_open_v2(memory ? ":memory:" : path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
					    SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, NULL);
	if (rc != SQLITE_OK)
		goto sqlfail;
	/* The file is untrusted: no schema tricks, no functions with side effects from views or triggers. */
	sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(st->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);

	step = "read header";
	rc = query_int(st->db, "PRAGMA user_version", &version, NULL);
	if (rc == SQLITE_OK)
		rc = query_int(st->db, "PRAGMA application_id", &app_id, NULL);
	if (rc != SQLITE_OK)
		goto sqlfail;
	ret = check_identity(st, version, app_id, err, errlen);
	if (ret < 0)
		goto fail;
	/* sqlite falls back to read-only silently; every tick would fail, so say it now. */
	if (sqlite3_db_readonly(st->db, "main") == 1) {
		str_err(err, errlen, "%s: database is read-only", path);
		ret = -EROFS;
		goto fail;
	}
	st->opened_version = (int)version;

	step = "enable WAL";
	if (!memory) {
		sqlite3_stmt *s;

		rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s, NULL);
		if (rc != SQLITE_OK)
			goto sqlfail;
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW && sqlite3_stricmp((const char *)sqlite3_column_text(s, 0), "wal") != 0) {
			const char *mode = (const char *)sqlite3_column_text(s, 0);

			str_err(err, errlen, "%s: cannot use WAL mode (journal_mode is %s)", path, mode ? mode : "?");
			sqlite3_finalize(s);
			ret = -EIO;
			goto fail;
		}
		sqlite3_finalize(s);
		if (rc != SQLITE_ROW)
			goto sqlfail;
	}
	step = "set pragmas";
	/* NORMAL: a power cut may lose the last ticks but never corrupts a WAL database. */
	/* journal_size_limit: the WAL file shrinks back to 4 MiB after a checkpoint instead of keeping its peak. */
	rc = sqlite3_exec(st->db, "PRAGMA synchronous = NORMAL; PRAGMA cell_size_check = ON;"
				  "PRAGMA journal_size_limit = 4194304;", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		goto sqlfail;

	if (version > 0) {
		ret = check_journal_pages(st, err, errlen);
		if (ret < 0)
			goto fail;
	}
	ret = migrate(st, err, errlen);
	if (ret < 0)
		goto fail;

	step = "prepare";
	for (int i = 0; i < S_COUNT; i++) {
		rc = sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[i], NULL);
		if (rc != SQLITE_OK)
			goto sqlfail;
	}
	ret = load_names(st, reg, err, errlen);
	if (ret < 0)
		goto fail;
	st->batch->names_held = st->names_stored;
	ret = load_counts(st, err, errlen);
	if (ret < 0)
		goto fail;
	refresh_bytes(st);
	/* A copy: a disk too full for it now must not keep the agent from starting (and recovering); the next open
	 * tries again. */
	if (!memory)
		store_originals_backfill(st, msg, sizeof(msg));
	*out = st;
	return 0;

sqlfail:
	if (st->db) {
		store_describe(st->db, rc, msg, sizeof(msg));
		ret = store_sqlite_errno(st->db, rc);
	} else {
		snprintf(msg, sizeof(msg), "%s", sqlite3_errstr(rc));
		ret = -ENOMEM;
	}
	str_err(err, errlen, "%s %s: %s", step, path, msg);
fail:
	/* A file that was there and is not readable as ours (damaged, truncated): say what can be done. */
	if (ret == -EIO && existed && !strstr(err, "not an ngx-autotune"))
		recovery_hint(path, err, errlen);
	store_free(st);
	return ret;
}

int store_open(const char *path, const struct store_options *opt, struct metric_registry *reg,
	       struct store **out, char *err, size_t errlen)
{
	return open_db(path, false, opt, reg, out, err, errlen);
}

int store_open_memory(struct store **out, char *err, size_t errlen)
{
	return open_db(":memory:", true, NULL, NULL, out, err, errlen);
}

static int write_held(struct store *st);

void store_close(struct store *st)
{
	if (!st)
		return;
	if (!st->in_query)
		write_held(st);
	store_free(st);
}

int store_opened_version(const struct store *st)
{
	return st->opened_version;
}

/* Add one decoded frame into the minute's sums: both lists are sorted by id, so this is a merge. */
static int acc_merge(struct store *st, const struct frame *fr)
{
	size_t need = st->acc_n + fr->n, i = 0, j = 0, k = 0;
	struct acc *t;

	if (need > st->acc_cap) {
		size_t ncap = st->acc_cap ? st->acc_cap : 256;

		while (ncap < need) {
			if (ncap > SIZE_MAX / 2 / sizeof(*t))
				return -ENOMEM;
			ncap *= 2;
		}
		t = realloc(st->acc, ncap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		st->acc = t;
		t = realloc(st->acc_tmp, ncap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		st->acc_tmp = t;
		st->acc_cap = ncap;
	}
	t = st->acc_tmp;
	while (i < st->acc_n || j < fr->n) {
		if (j >= fr->n || (i < st->acc_n && st->acc[i].id < fr->vals[j].id)) {
			t[k++] = st->acc[i++];
			continue;
		}
		if (i >= st->acc_n || st->acc[i].id > fr->vals[j].id)
			t[k] = (struct acc){ fr->vals[j].id, 0, 0 };
		else
			t[k] = st->acc[i++];
		if (!isnan(fr->vals[j].v)) {
			t[k].n++;
			t[k].sum += fr->vals[j].v;
		}
		j++;
		k++;
	}
	st->acc_tmp = st->acc;
	st->acc = t;
	st->acc_n = k;
	return 0;
}

/* Roll up MINUTE from the frames table; the table, not memory, is the truth, so restarts and failed ticks are
 * handled alike. Sets *ADDED when the roll-up row is new. Returns a sqlite code. */
static int write_rollup(struct store *st, int64_t minute, bool *added)
{
	sqlite3_stmt *s = st->stmt[S_MINUTE_FRAMES];
	int64_t n = 0;
	uint8_t *buf;
	size_t len;
	bool found;
	int rc;

	*added = false;
	st->acc_n = 0;
	sqlite3_bind_int64(s, 1, minute);
	sqlite3_bind_int64(s, 2, minute + MINUTE_MS);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int r = frame_decode(sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0), &st->scratch);

		if (r == -EBADMSG)
			continue; /* a damaged row is a missed tick, not a reason to stop storing */
		if (r == 0)
			r = acc_merge(st, &st->scratch);
		if (r < 0) {
			sqlite3_reset(s);
			return SQLITE_NOMEM;
		}
		n++;
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return rc;
	if (n == 0)
		return SQLITE_OK;
	frame_clear(&st->rollup);
	for (size_t i = 0; i < st->acc_n; i++)
		if (frame_put(&st->rollup, st->acc[i].id, st->acc[i].n ? st->acc[i].sum / st->acc[i].n : NAN) < 0)
			return SQLITE_NOMEM;
	if (frame_encode(&st->rollup, &buf, &len) < 0)
		return SQLITE_NOMEM;
	s = st->stmt[S_ROLLUP_EXISTS];
	sqlite3_bind_int64(s, 1, minute);
	rc = exists(s, &found);
	if (rc == SQLITE_OK) {
		s = st->stmt[S_ROLLUP_INSERT];
		sqlite3_bind_int64(s, 1, minute);
		sqlite3_bind_int64(s, 2, n);
		sqlite3_bind_blob64(s, 3, buf, len, SQLITE_STATIC);
		rc = store_run(s);
		sqlite3_clear_bindings(s);
	}
	free(buf);
	*added = rc == SQLITE_OK && !found;
	return rc;
}

/* Delete at most LIMIT rows older than CUTOFF. */
static int trim(struct store *st, int which, int64_t cutoff, int64_t limit, int64_t *deleted)
{
	sqlite3_stmt *s = st->stmt[which];
	int rc;

	*deleted = 0;
	sqlite3_bind_int64(s, 1, cutoff);
	sqlite3_bind_int64(s, 2, limit);
	rc = store_run(s);
	if (rc == SQLITE_OK)
		*deleted = sqlite3_changes(st->db);
	return rc;
}

int store_degrade(struct store *st, const char *op, int rc)
{
	char msg[200];
	int ret = store_sqlite_errno(st->db, rc);

	store_describe(st->db, rc, msg, sizeof(msg));
	snprintf(st->h.reason, sizeof(st->h.reason), "%s: %s", op, msg);
	st->h.degraded = true;
	st->h.write_errors++;
	st->degraded_err = ret;
	return ret;
}

/* Roll back the tick, remember why, and tell the caller what kind of failure it was. */
static int tick_failed(struct store *st, const char *op, int rc)
{
	int ret;

	if (st->db && !sqlite3_get_autocommit(st->db))
		store_run(st->stmt[S_ROLLBACK]);
	ret = store_degrade(st, op, rc);
	st->batch->err = ret;
	return ret;
}

/*
 * Write every held name and frame in one transaction, as the ticks did one by one: names first (a frame never
 * refers to an id the file cannot name), then each frame after the roll-up of the minute it completes, then one
 * retention step sized to the number of frames. On failure nothing is written and everything stays held.
 */
static int write_held(struct store *st)
{
	struct store_batch *b = st->batch;
	int64_t last_ts = st->last_ts, added = 0, rollups_added = 0, del_frames = 0, del_rollups = 0, del_audit = 0;
	uint32_t names_max = st->names_stored;
	bool have_last = st->have_last, minute_passed = false;
	sqlite3_stmt *s;
	int rc;

	if (b->n == 0 && b->nnames == 0)
		return 0;
	rc = store_run(st->stmt[S_BEGIN]);
	if (rc != SQLITE_OK)
		return tick_failed(st, "append frame (begin)", rc);
	s = st->stmt[S_NAME_INSERT];
	for (size_t i = 0; i < b->nnames; i++) {
		sqlite3_bind_int64(s, 1, b->names[i].id);
		sqlite3_bind_text(s, 2, b->names[i].name, -1, SQLITE_STATIC);
		rc = store_run(s);
		if (rc != SQLITE_OK) {
			sqlite3_clear_bindings(s);
			return tick_failed(st, "append frame (metric names)", rc);
		}
		names_max = b->names[i].id;
	}
	sqlite3_clear_bindings(s);

	for (size_t i = 0; i < b->n; i++) {
		const struct held_frame *f = &b->f[i];
		bool replaced = false, rollup_added = false;

		if (have_last && minute_of(last_ts) != minute_of(f->ts)) {
			minute_passed = true;
			rc = write_rollup(st, minute_of(last_ts), &rollup_added);
			if (rc != SQLITE_OK)
				return tick_failed(st, "append frame (roll-up)", rc);
			rollups_added += rollup_added;
		}
		/* A clock stepped back can repeat a ts; the newer tick wins and the row count stays true. */
		if (have_last && f->ts <= last_ts) {
			s = st->stmt[S_FRAME_EXISTS];
			sqlite3_bind_int64(s, 1, f->ts);
			rc = exists(s, &replaced);
			if (rc != SQLITE_OK)
				return tick_failed(st, "append frame", rc);
		}
		s = st->stmt[S_FRAME_INSERT];
		sqlite3_bind_int64(s, 1, f->ts);
		sqlite3_bind_double(s, 2, f->dt);
		sqlite3_bind_int64(s, 3, f->ok);
		sqlite3_bind_int64(s, 4, f->bad);
		sqlite3_bind_blob64(s, 5, f->data, f->len, SQLITE_STATIC);
		rc = store_run(s);
		sqlite3_clear_bindings(s);
		if (rc != SQLITE_OK)
			return tick_failed(st, "append frame", rc);
		added += replaced ? 0 : 1;
		have_last = true;
		last_ts = f->ts;
	}

	if (have_last) {
		int64_t limit = (int64_t)st->opt.delete_batch * (int64_t)(b->n ? b->n : 1);

		rc = trim(st, S_TRIM_FRAMES, last_ts - st->opt.frames_retention_s * 1000, limit, &del_frames);
		if (rc == SQLITE_OK)
			rc = trim(st, S_TRIM_ROLLUPS, last_ts - st->opt.rollups_retention_s * 1000, limit, &del_rollups);
		/* The audit trail once a minute: its rows come at the pace of acts, not of ticks. */
		if (rc == SQLITE_OK && minute_passed)
			rc = trim(st, S_TRIM_AUDIT, last_ts - st->opt.audit_retention_s * 1000, limit, &del_audit);
		if (rc == SQLITE_OK && minute_passed)
			rc = trim(st, S_TRIM_DENIED, last_ts - st->opt.denied_retention_s * 1000, limit, &del_audit);
		if (rc != SQLITE_OK)
			return tick_failed(st, "append frame (retention)", rc);
	}

	rc = store_run(st->stmt[S_COMMIT]);
	if (rc != SQLITE_OK)
		return tick_failed(st, "append frame (commit)", rc);

	st->names_stored = names_max;
	st->have_last = have_last;
	st->last_ts = last_ts;
	st->h.frames += added - del_frames;
	st->h.rollups += rollups_added - del_rollups;
	if (have_last)
		st->h.last_write_ms = last_ts;
	b->err = 0;
	for (size_t i = 0; i < b->nnames; i++)
		free(b->names[i].name);
	b->nnames = 0;
	drop_held(b, b->n);
	if (rollups_added || st->h.bytes == 0)
		refresh_bytes(st);
	store_writable(st); /* a transaction committed: whatever failed before can be tried again */
	return 0;
}

/* Copy the names REG interned since the last one stored or held. */
static int hold_names(struct store *st, const struct metric_registry *reg)
{
	struct store_batch *b = st->batch;
	uint32_t max = reg ? metric_max_id(reg) : 0;

	for (uint32_t id = b->names_held + 1; id <= max; id++) {
		const char *name = metric_name(reg, id);

		if (!name)
			continue;
		if (b->nnames == b->names_cap) {
			size_t cap = b->names_cap ? b->names_cap * 2 : 64;
			struct held_name *t = realloc(b->names, cap * sizeof(*t));

			if (!t)
				return -ENOMEM;
			b->names = t;
			b->names_cap = cap;
		}
		b->names[b->nnames].name = strdup(name);
		if (!b->names[b->nnames].name)
			return -ENOMEM;
		b->names[b->nnames++].id = id;
		b->names_held = id;
	}
	return 0;
}

/* Hold FR, encoded in DATA (taken); past HELD_MAX the oldest held frame is dropped. */
static int hold_frame(struct store *st, const struct frame *fr, uint8_t *data, size_t len)
{
	struct store_batch *b = st->batch;

	if (b->n == HELD_MAX)
		drop_held(b, 1);
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		struct held_frame *t = realloc(b->f, cap * sizeof(*t));

		if (!t) {
			free(data);
			return -ENOMEM;
		}
		b->f = t;
		b->cap = cap;
	}
	b->f[b->n++] = (struct held_frame){fr->ts_ms, fr->dt_s, fr->probes_ok, fr->probes_bad, data, len};
	return 0;
}

int store_append_frame(struct store *st, const struct metric_registry *reg, struct frame *fr)
{
	struct store_batch *b;
	uint8_t *buf;
	size_t len;
	int rc;

	if (!st || !fr || fr->ts_ms < 0 || fr->ts_ms > TS_MAX)
		return -EINVAL;
	if (st->in_query)
		return -EBUSY;
	rc = frame_encode(fr, &buf, &len);
	if (rc == -EINVAL)
		return rc; /* ids the caller wrote by hand: its bug, not the store's health */
	if (rc == 0)
		rc = hold_frame(st, fr, buf, len);
	if (rc == 0)
		rc = hold_names(st, reg);
	if (rc < 0)
		return tick_failed(st, "append frame", SQLITE_NOMEM);
	/* The first frame is written at once (it tells whether the store can be written at all); later ones once
	 * batch_ms has passed since the last attempt, by the frames' own clock; a clock stepped back writes too. While
	 * degraded (by a frame or a journal write), a held frame returns the standing error: only a write that commits
	 * says that the store is writable again. */
	b = st->batch;
	if (st->opt.batch_ms > 0 && b->tried && fr->ts_ms >= b->tried_ts && fr->ts_ms - b->tried_ts < st->opt.batch_ms)
		return st->h.degraded ? st->degraded_err : 0;
	b->tried = true;
	b->tried_ts = fr->ts_ms;
	return write_held(st);
}

static int query(struct store *st, int which, int64_t since_ms, int64_t until_ms, size_t limit, store_frame_cb cb,
		 void *ctx)
{
	sqlite3_stmt *s;
	int rc, ret = 0;

	if (!st || !cb)
		return -EINVAL;
	if (st->in_query)
		return -EBUSY; /* the callback would reset the statement it is called from */
	/* Held frames first, so a query sees every tick; a degraded store retries on its own schedule only. */
	if (!st->h.degraded)
		write_held(st);
	s = st->stmt[which];
	sqlite3_bind_int64(s, 1, since_ms);
	sqlite3_bind_int64(s, 2, until_ms);
	sqlite3_bind_int64(s, 3, limit == 0 || limit > INT64_MAX ? -1 : (int64_t)limit);
	st->in_query = true;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int r = frame_decode(sqlite3_column_blob(s, which == S_QUERY_FRAMES ? 4 : 2),
				     (size_t)sqlite3_column_bytes(s, which == S_QUERY_FRAMES ? 4 : 2), &st->scratch);

		if (r == -EBADMSG)
			continue; /* a damaged row reads as a missed tick */
		if (r < 0) {
			ret = r;
			break;
		}
		st->scratch.ts_ms = sqlite3_column_int64(s, 0);
		if (which == S_QUERY_FRAMES) {
			sqlite3_int64 ok = sqlite3_column_int64(s, 2), bad = sqlite3_column_int64(s, 3);

			/* NaN is stored as NULL by sqlite. */
			st->scratch.dt_s = sqlite3_column_type(s, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 1);
			st->scratch.probes_ok = ok >= 0 && ok <= UINT32_MAX ? (uint32_t)ok : 0;
			st->scratch.probes_bad = bad >= 0 && bad <= UINT32_MAX ? (uint32_t)bad : 0;
		} else {
			st->scratch.dt_s = (double)sqlite3_column_int64(s, 1);
			st->scratch.probes_ok = 0;
			st->scratch.probes_bad = 0;
		}
		ret = cb(ctx, &st->scratch);
		if (ret != 0)
			break;
	}
	ret = store_read_end(st, s, rc, ret);
	st->in_query = false;
	return ret;
}

int store_query_frames(struct store *st, int64_t since_ms, int64_t until_ms, size_t limit, store_frame_cb cb,
		       void *ctx)
{
	return query(st, S_QUERY_FRAMES, since_ms, until_ms, limit, cb, ctx);
}

int store_query_rollups(struct store *st, int64_t since_ms, int64_t until_ms, size_t limit, store_frame_cb cb,
			void *ctx)
{
	return query(st, S_QUERY_ROLLUPS, since_ms, until_ms, limit, cb, ctx);
}

void store_get_health(struct store *st, struct store_health *h)
{
	if (!st) {
		memset(h, 0, sizeof(*h));
		return;
	}
	*h = st->h;
	/* Held frames count as stored while writes succeed (queries write them first); not while they fail. */
	if (!h->degraded && st->batch->n) {
		h->frames += (int64_t)st->batch->n;
		h->last_write_ms = st->batch->f[st->batch->n - 1].ts;
	}
}
