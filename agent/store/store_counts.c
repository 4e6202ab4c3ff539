/*
 * store_counts: counts over the change journal and the audit trail, for /metrics. See store.h.
 *
 * Read-only. The statements are kept once prepared: parsing them was a third of a scrape's cost.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <string.h>

enum { C_CHANGES, C_VERDICTS, C_AUDIT, C_COUNT };

_Static_assert(C_COUNT == sizeof(((struct store *)0)->cstmt) / sizeof(sqlite3_stmt *), "a slot per statement");

#define VERDICT_MARK "\"verdict\":\""

static const char *const csql[C_COUNT] = {
	[C_CHANGES] = "SELECT kind, state, count(*) FROM changes GROUP BY kind, state",
	/* The verdict is a key of the judge's evidence (JSON after the controller's free text); its name is 1 to 32
	 * characters, so a damaged detail cannot make a label of any length. */
	[C_VERDICTS] = "SELECT substr(rest, 1, instr(rest, '\"') - 1) AS v, count(*) FROM"
		       " (SELECT substr(detail, instr(detail, '" VERDICT_MARK "') + length('" VERDICT_MARK "')) AS rest"
		       "  FROM changes WHERE kind = 'change' AND instr(detail, '" VERDICT_MARK "') > 0)"
		       " WHERE instr(rest, '\"') BETWEEN 2 AND 33 GROUP BY v ORDER BY v",
	[C_AUDIT] = "SELECT coalesce(sum(count), 0) FROM audit WHERE action = ?1",
};

static int prepare(struct store *st, int which, sqlite3_stmt **s)
{
	int rc = SQLITE_OK;

	if (!st->cstmt[which])
		rc = sqlite3_prepare_v3(st->db, csql[which], -1, SQLITE_PREPARE_PERSISTENT, &st->cstmt[which], NULL);
	*s = st->cstmt[which];
	return rc == SQLITE_OK ? 0 : store_sqlite_errno(st->db, rc);
}

int store_change_counts(struct store *st, int64_t counts[2][CHANGE_STATE_COUNT])
{
	sqlite3_stmt *s;
	int rc, r;

	memset(counts, 0, sizeof(int64_t) * 2 * CHANGE_STATE_COUNT);
	r = prepare(st, C_CHANGES, &s);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const unsigned char *kind = sqlite3_column_text(s, 0), *state = sqlite3_column_text(s, 1);
		enum change_state cs;

		/* A row written by something else is not ours to count (the journal never acts on one either). */
		if (!kind || !state || change_state_parse((const char *)state, &cs) < 0)
			continue;
		if (strcmp((const char *)kind, "change") == 0)
			counts[CHANGE_KIND_CHANGE][cs] += sqlite3_column_int64(s, 2);
		else if (strcmp((const char *)kind, "revert") == 0)
			counts[CHANGE_KIND_REVERT][cs] += sqlite3_column_int64(s, 2);
	}
	return store_read_end(st, s, rc, 0);
}

int store_verdict_counts(struct store *st, store_count_cb cb, void *ctx)
{
	sqlite3_stmt *s;
	int rc, r;

	r = prepare(st, C_VERDICTS, &s);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(s, 0);

		if (!v)
			continue;
		r = cb(ctx, (const char *)v, sqlite3_column_int64(s, 1));
		if (r)
			break;
	}
	return store_read_end(st, s, rc, r);
}

int store_audit_count(struct store *st, const char *action, int64_t *n)
{
	sqlite3_stmt *s;
	int rc, r;

	*n = 0;
	r = prepare(st, C_AUDIT, &s);
	if (r < 0)
		return r;
	sqlite3_bind_text(s, 1, action, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*n = sqlite3_column_int64(s, 0);
		rc = sqlite3_step(s);
	}
	return store_read_end(st, s, rc, 0);
}
