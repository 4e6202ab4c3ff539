/*
 * store_journal: the change journal, the knob records and the audit trail. See store.h.
 *
 * Journal and knob writes are the write-ahead half of every knob write (invariant 2), so they are committed with
 * synchronous=FULL: the WAL is on disk when the call returns, even though the per-tick frames run at NORMAL.
 */
#include "store/store_internal.h"
#include "store/originals.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
	J_CHANGE_INSERT,
	J_CHANGE_UPDATE,
	J_CHANGE_GET,
	J_CHANGES_QUERY,
	J_KNOB_GET,
	J_KNOB_PUT,
	J_AUDIT_LAST,
	J_AUDIT_BUMP,
	J_AUDIT_ADD,
	J_AUDIT_INSERT,
	J_AUDIT_QUERY,
	J_COUNT
};

_Static_assert(J_COUNT <= STORE_JSTMT_MAX, "room for every journal statement");

#define CHANGE_COLS "id, knob, kind, reverts, old_value, new_value, state, actor, why, detail, created_ms, updated_ms"
#define AUDIT_COLS "id, ts, last_ts, actor, peer, action, knob, change_id, outcome, detail, count"

static const char *const jsql[J_COUNT] = {
	[J_CHANGE_INSERT] = "INSERT INTO changes(knob, kind, reverts, old_value, new_value, state, actor, why, detail,"
			    " created_ms, updated_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)",
	[J_CHANGE_UPDATE] = "UPDATE changes SET state = ?2, detail = coalesce(?3, detail), updated_ms = ?4 WHERE id = ?1",
	[J_CHANGE_GET] = "SELECT " CHANGE_COLS " FROM changes WHERE id = ?1",
	[J_CHANGES_QUERY] = "SELECT " CHANGE_COLS " FROM changes WHERE (?1 = '' OR knob = ?1) AND (?2 = 0 OR id < ?2)"
			    " ORDER BY id DESC",
	[J_KNOB_GET] = "SELECT name, original, last_written, state, why, updated_ms FROM knobs WHERE name = ?1",
	[J_KNOB_PUT] = "INSERT OR REPLACE INTO knobs(name, original, last_written, state, why, updated_ms)"
		       " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
	[J_AUDIT_LAST] = "SELECT id, actor, peer, action, knob, change_id, outcome, detail FROM audit"
			 " ORDER BY id DESC LIMIT 1",
	[J_AUDIT_BUMP] = "UPDATE audit SET count = count + 1, last_ts = ?2 WHERE id = ?1",
	[J_AUDIT_ADD] = "UPDATE audit SET count = count + ?2, last_ts = MAX(last_ts, ?3) WHERE id = ?1",
	[J_AUDIT_INSERT] = "INSERT INTO audit(ts, last_ts, actor, peer, action, knob, change_id, outcome, detail)"
			   " VALUES(?1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[J_AUDIT_QUERY] = "SELECT " AUDIT_COLS " FROM audit WHERE (?1 = 0 OR ts >= ?1) AND (?2 = 0 OR ts < ?2)"
			  " AND (?3 = '' OR knob = ?3) AND (?4 = '' OR actor = ?4) AND (?5 = 0 OR id < ?5)"
			  " ORDER BY id DESC LIMIT ?6",
};

static const char *const state_names[CHANGE_STATE_COUNT] = {
	[CHANGE_PROPOSED] = "proposed", [CHANGE_APPROVED] = "approved", [CHANGE_APPLYING] = "applying",
	[CHANGE_TRIAL] = "trial",       [CHANGE_KEPT] = "kept",         [CHANGE_REVERTED] = "reverted",
	[CHANGE_REJECTED] = "rejected", [CHANGE_FAILED] = "failed",     [CHANGE_ABORTED] = "aborted",
};

const char *change_state_name(enum change_state s)
{
	return s < CHANGE_STATE_COUNT ? state_names[s] : "?";
}

int change_state_parse(const char *s, enum change_state *out)
{
	for (int i = 0; i < CHANGE_STATE_COUNT; i++) {
		if (strcmp(s, state_names[i]) == 0) {
			*out = (enum change_state)i;
			return 0;
		}
	}
	return -EINVAL;
}

static sqlite3_stmt *stmt(struct store *st, int which, int *rc)
{
	if (!st->jstmt[which])
		*rc = sqlite3_prepare_v3(st->db, jsql[which], -1, SQLITE_PREPARE_PERSISTENT, &st->jstmt[which], NULL);
	else
		*rc = SQLITE_OK;
	return st->jstmt[which];
}

static void text(char *dst, size_t n, sqlite3_stmt *s, int col)
{
	const unsigned char *t = sqlite3_column_text(s, col);

	snprintf(dst, n, "%s", t ? (const char *)t : "");
}

/* Run one write durably: synchronous=FULL around it, so the WAL is synced at its commit. */
static int durable(struct store *st, sqlite3_stmt *s)
{
	int rc;

	sqlite3_exec(st->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
	rc = store_run(s);
	sqlite3_exec(st->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
	return rc;
}

static int fail(struct store *st, const char *op, int rc)
{
	return store_degrade(st, op, rc);
}

int store_change_insert(struct store *st, struct change_row *row)
{
	int rc;
	sqlite3_stmt *s = stmt(st, J_CHANGE_INSERT, &rc);

	if (rc != SQLITE_OK)
		return fail(st, "journal change", rc);
	sqlite3_bind_text(s, 1, row->knob, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, row->kind == CHANGE_KIND_REVERT ? "revert" : "change", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, row->reverts);
	sqlite3_bind_text(s, 4, row->old_value, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, row->new_value, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, change_state_name(row->state), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, row->actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 8, row->why, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 9, row->detail, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 10, row->created_ms);
	rc = durable(st, s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_OK)
		return fail(st, "journal change", rc);
	row->id = sqlite3_last_insert_rowid(st->db);
	row->updated_ms = row->created_ms;
	return 0;
}

int store_change_update(struct store *st, int64_t id, enum change_state state, const char *detail, int64_t now_ms)
{
	int rc;
	sqlite3_stmt *s = stmt(st, J_CHANGE_UPDATE, &rc);

	if (rc != SQLITE_OK)
		return fail(st, "journal change state", rc);
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_text(s, 2, change_state_name(state), -1, SQLITE_STATIC);
	if (detail)
		sqlite3_bind_text(s, 3, detail, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 3);
	sqlite3_bind_int64(s, 4, now_ms);
	rc = durable(st, s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_OK)
		return fail(st, "journal change state", rc);
	return sqlite3_changes(st->db) == 1 ? 0 : -ENOENT;
}

static int change_from_row(sqlite3_stmt *s, struct change_row *row)
{
	char buf[32];

	memset(row, 0, sizeof(*row));
	row->id = sqlite3_column_int64(s, 0);
	text(row->knob, sizeof(row->knob), s, 1);
	text(buf, sizeof(buf), s, 2);
	row->kind = strcmp(buf, "revert") == 0 ? CHANGE_KIND_REVERT : CHANGE_KIND_CHANGE;
	row->reverts = sqlite3_column_int64(s, 3);
	text(row->old_value, sizeof(row->old_value), s, 4);
	text(row->new_value, sizeof(row->new_value), s, 5);
	text(buf, sizeof(buf), s, 6);
	if (change_state_parse(buf, &row->state) < 0)
		return -EBADMSG; /* a row written by something else: never act on it */
	text(row->actor, sizeof(row->actor), s, 7);
	text(row->why, sizeof(row->why), s, 8);
	text(row->detail, sizeof(row->detail), s, 9);
	row->created_ms = sqlite3_column_int64(s, 10);
	row->updated_ms = sqlite3_column_int64(s, 11);
	return 0;
}

int store_change_get(struct store *st, int64_t id, struct change_row *row)
{
	int rc, r;
	sqlite3_stmt *s = stmt(st, J_CHANGE_GET, &rc);

	if (rc != SQLITE_OK)
		return store_sqlite_errno(st->db, rc);
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	r = rc == SQLITE_ROW ? change_from_row(s, row) : rc == SQLITE_DONE ? -ENOENT : store_sqlite_errno(st->db, rc);
	sqlite3_reset(s);
	return r;
}

int store_changes_query(struct store *st, const char *knob, unsigned states, int64_t before_id, size_t limit,
			store_change_cb cb, void *ctx)
{
	struct change_row row;
	size_t n = 0;
	int rc, r = 0;
	sqlite3_stmt *s = stmt(st, J_CHANGES_QUERY, &rc);

	if (rc != SQLITE_OK)
		return store_sqlite_errno(st->db, rc);
	sqlite3_bind_text(s, 1, knob ? knob : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, before_id);
	while ((limit == 0 || n < limit) && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (change_from_row(s, &row) < 0 || (states && !(states & (1u << row.state))))
			continue;
		n++;
		r = cb(ctx, &row);
		if (r)
			break;
	}
	return store_read_end(st, s, rc, r);
}

int store_knob_get(struct store *st, const char *name, struct knob_row *row)
{
	int rc, r = 0;
	sqlite3_stmt *s = stmt(st, J_KNOB_GET, &rc);

	if (rc != SQLITE_OK)
		return store_sqlite_errno(st->db, rc);
	sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		memset(row, 0, sizeof(*row));
		text(row->name, sizeof(row->name), s, 0);
		row->has_original = sqlite3_column_type(s, 1) != SQLITE_NULL;
		text(row->original, sizeof(row->original), s, 1);
		row->has_written = sqlite3_column_type(s, 2) != SQLITE_NULL;
		text(row->last_written, sizeof(row->last_written), s, 2);
		text(row->state, sizeof(row->state), s, 3);
		text(row->why, sizeof(row->why), s, 4);
		row->updated_ms = sqlite3_column_int64(s, 5);
	} else {
		r = rc == SQLITE_DONE ? -ENOENT : store_sqlite_errno(st->db, rc);
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return r;
}

int store_knob_put(struct store *st, const struct knob_row *row)
{
	int rc;
	sqlite3_stmt *s = stmt(st, J_KNOB_PUT, &rc);

	if (rc != SQLITE_OK)
		return fail(st, "knob record", rc);
	sqlite3_bind_text(s, 1, row->name, -1, SQLITE_STATIC);
	if (row->has_original)
		sqlite3_bind_text(s, 2, row->original, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 2);
	if (row->has_written)
		sqlite3_bind_text(s, 3, row->last_written, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 3);
	sqlite3_bind_text(s, 4, row->state[0] ? row->state : "ok", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, row->why, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 6, row->updated_ms);
	rc = durable(st, s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_OK ? 0 : fail(st, "knob record", rc);
}

/* Who a peer is, for collapsing: the user of a Unix peer ("unix:pid=N,uid=U" -> "unix:uid=U") and the address of
 * a TCP one ("127.0.0.1:PORT" -> "127.0.0.1"). Each request comes from a new process or port. */
static void peer_key(const char *p, char *out, size_t n)
{
	const char *uid = strstr(p, ",uid="), *colon = strrchr(p, ':');

	if (strncmp(p, "unix:pid=", 9) == 0 && uid)
		snprintf(out, n, "unix:uid=%s", uid + 5);
	else if (strncmp(p, "unix:", 5) != 0 && colon && colon != p && strspn(colon + 1, "0123456789") == strlen(colon + 1))
		snprintf(out, n, "%.*s", (int)(colon - p), p);
	else
		snprintf(out, n, "%s", p);
}

static bool same_peer(sqlite3_stmt *s, int col, const char *v)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	char a[80], b[80];

	peer_key(t ? (const char *)t : "", a, sizeof(a));
	peer_key(v, b, sizeof(b));
	return strcmp(a, b) == 0;
}

static bool same_text(sqlite3_stmt *s, int col, const char *v)
{
	const unsigned char *t = sqlite3_column_text(s, col);

	return strcmp(t ? (const char *)t : "", v) == 0;
}

/* Write ROW now, collapsed into the newest row when it is the same event. */
static int audit_write(struct store *st, struct audit_row *row)
{
	int rc;
	sqlite3_stmt *s = stmt(st, J_AUDIT_LAST, &rc);
	bool same = false;
	int64_t last_id = 0;

	if (rc != SQLITE_OK)
		return fail(st, "audit", rc);
	if (sqlite3_step(s) == SQLITE_ROW) {
		last_id = sqlite3_column_int64(s, 0);
		same = same_text(s, 1, row->actor) && same_peer(s, 2, row->peer) && same_text(s, 3, row->action) &&
		       same_text(s, 4, row->knob) && sqlite3_column_int64(s, 5) == row->change_id &&
		       same_text(s, 6, row->outcome) && same_text(s, 7, row->detail);
	}
	sqlite3_reset(s);
	if (same) {
		s = stmt(st, J_AUDIT_BUMP, &rc);
		if (rc != SQLITE_OK)
			return fail(st, "audit", rc);
		sqlite3_bind_int64(s, 1, last_id);
		sqlite3_bind_int64(s, 2, row->ts);
		rc = durable(st, s);
		row->id = last_id;
	} else {
		s = stmt(st, J_AUDIT_INSERT, &rc);
		if (rc != SQLITE_OK)
			return fail(st, "audit", rc);
		sqlite3_bind_int64(s, 1, row->ts);
		sqlite3_bind_text(s, 2, row->actor, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, row->peer, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 4, row->action, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 5, row->knob, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 6, row->change_id);
		sqlite3_bind_text(s, 7, row->outcome, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 8, row->detail, -1, SQLITE_STATIC);
		rc = durable(st, s);
		row->id = sqlite3_last_insert_rowid(st->db);
	}
	sqlite3_clear_bindings(s);
	return rc == SQLITE_OK ? 0 : fail(st, "audit", rc);
}

/* Whether held row H is the same event as ROW (the collapse of audit_write, for rows not yet written). */
static bool same_held(const struct audit_row *h, const struct audit_row *row)
{
	return strcmp(h->actor, row->actor) == 0 && strcmp(h->peer, row->peer) == 0 &&
	       strcmp(h->action, row->action) == 0 && strcmp(h->knob, row->knob) == 0 && h->change_id == row->change_id &&
	       strcmp(h->outcome, row->outcome) == 0 && strcmp(h->detail, row->detail) == 0;
}

/* Keep ROW for a later write; -ENOSPC when STORE_AUDIT_HELD_MAX rows are held already. */
static int audit_hold(struct store *st, const struct audit_row *row)
{
	struct audit_row *last = st->audit_nheld ? &st->audit_held[st->audit_nheld - 1] : NULL;

	if (last && same_held(last, row)) {
		last->count++;
		last->last_ts = row->ts;
		return 0;
	}
	if (!st->audit_held) {
		st->audit_held = calloc(STORE_AUDIT_HELD_MAX, sizeof(*st->audit_held));
		if (!st->audit_held)
			return -ENOMEM;
	}
	if (st->audit_nheld == STORE_AUDIT_HELD_MAX)
		return -ENOSPC;
	st->audit_held[st->audit_nheld] = *row;
	st->audit_held[st->audit_nheld].id = 0;
	st->audit_held[st->audit_nheld].count = 1;
	st->audit_held[st->audit_nheld].last_ts = row->ts;
	st->audit_nheld++;
	return 0;
}

/* Write the held rows, oldest first, each with its repeats; stop at the first failure (the rest stay held). */
static int audit_flush(struct store *st)
{
	size_t done = 0;
	int r = 0;

	while (done < st->audit_nheld) {
		struct audit_row *h = &st->audit_held[done];

		r = audit_write(st, h);
		if (r < 0)
			break;
		/* Repeats of a held row: counted where it was written, with the last one's time. */
		while (h->count > 1) {
			struct audit_row rep = *h;

			rep.ts = h->last_ts;
			r = audit_write(st, &rep);
			if (r < 0)
				break;
			h->count--;
		}
		if (r < 0)
			break;
		done++;
	}
	memmove(st->audit_held, st->audit_held + done, (st->audit_nheld - done) * sizeof(*st->audit_held));
	st->audit_nheld -= done;
	return r;
}

int store_audit_add(struct store *st, int64_t id, int64_t n, int64_t last_ts)
{
	int rc;
	sqlite3_stmt *s = stmt(st, J_AUDIT_ADD, &rc);

	if (rc != SQLITE_OK)
		return fail(st, "audit", rc);
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, n);
	sqlite3_bind_int64(s, 3, last_ts);
	rc = durable(st, s);
	if (rc != SQLITE_OK)
		return fail(st, "audit", rc);
	return sqlite3_changes(st->db) ? 0 : -ENOENT;
}

size_t store_audit_held(const struct store *st)
{
	return st->audit_nheld;
}

void store_writable(struct store *st)
{
	st->h.degraded = false;
	st->h.reason[0] = '\0';
	st->degraded_err = 0;
	if (st->audit_nheld)
		audit_flush(st);
}

int store_audit_append(struct store *st, struct audit_row *row)
{
	int r = 0;

	/* Held rows first: the trail keeps the order in which things happened. */
	if (st->audit_nheld)
		r = audit_flush(st);
	if (r == 0 && !st->audit_nheld)
		r = audit_write(st, row);
	else
		r = -EAGAIN;
	if (r == 0)
		return 0;
	/* Never lose the record of an act: keep it until the store can be written again. */
	row->id = 0;
	return audit_hold(st, row);
}

int store_audit_query(struct store *st, int64_t since_ms, int64_t until_ms, const char *knob, const char *actor,
		      int64_t before_id, size_t limit, store_audit_cb cb, void *ctx)
{
	struct audit_row row;
	int rc, r = 0;
	sqlite3_stmt *s = stmt(st, J_AUDIT_QUERY, &rc);

	if (rc != SQLITE_OK)
		return store_sqlite_errno(st->db, rc);
	sqlite3_bind_int64(s, 1, since_ms);
	sqlite3_bind_int64(s, 2, until_ms);
	sqlite3_bind_text(s, 3, knob ? knob : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, actor ? actor : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, before_id);
	sqlite3_bind_int64(s, 6, limit ? (int64_t)limit : -1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		memset(&row, 0, sizeof(row));
		row.id = sqlite3_column_int64(s, 0);
		row.ts = sqlite3_column_int64(s, 1);
		row.last_ts = sqlite3_column_int64(s, 2);
		text(row.actor, sizeof(row.actor), s, 3);
		text(row.peer, sizeof(row.peer), s, 4);
		text(row.action, sizeof(row.action), s, 5);
		text(row.knob, sizeof(row.knob), s, 6);
		row.change_id = sqlite3_column_int64(s, 7);
		text(row.outcome, sizeof(row.outcome), s, 8);
		text(row.detail, sizeof(row.detail), s, 9);
		row.count = sqlite3_column_int64(s, 10);
		r = cb(ctx, &row);
		if (r)
			break;
	}
	return store_read_end(st, s, rc, r);
}

/* ---- the originals file ------------------------------------------------------------------------------------ */

static void originals_path(const char *store_path, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", store_path, STORE_ORIGINALS_SUFFIX);
}

_Static_assert(STORE_KNOB_MAX == ORIGINALS_KNOB_MAX && STORE_VALUE_MAX == ORIGINALS_VALUE_MAX,
	       "the originals file's lines fit the knobs table's columns");

int store_original_note(struct store *st, const char *knob, const char *original)
{
	char path[600];

	if (!st->path[0])
		return 0;
	originals_path(st->path, path, sizeof(path));
	return originals_note(path, knob, original);
}

int store_originals_read(const char *store_path, store_original_cb cb, void *ctx, char *err, size_t errlen)
{
	char path[600];

	originals_path(store_path, path, sizeof(path));
	return originals_read(path, cb, ctx, err, errlen);
}

int store_originals_backfill(struct store *st, char *err, size_t errlen)
{
	char path[600];
	sqlite3_stmt *s;
	int rc, r = 0;

	originals_path(st->path, path, sizeof(path));
	if (access(path, F_OK) == 0)
		return 0;
	rc = sqlite3_prepare_v2(st->db, "SELECT name, original FROM knobs WHERE original IS NOT NULL ORDER BY name", -1,
				&s, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "read knobs: %s", sqlite3_errmsg(st->db));
		return -EIO;
	}
	while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		char name[STORE_KNOB_MAX], orig[STORE_VALUE_MAX];

		text(name, sizeof(name), s, 0);
		text(orig, sizeof(orig), s, 1);
		r = store_original_note(st, name, orig);
		if (r < 0)
			snprintf(err, errlen, "%s: cannot keep a copy of the originals: %s", path, strerror(-r));
	}
	sqlite3_finalize(s);
	if (r == 0 && rc != SQLITE_DONE) {
		snprintf(err, errlen, "read knobs: %s", sqlite3_errmsg(st->db));
		r = -EIO;
	}
	return r;
}
