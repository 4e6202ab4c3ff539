/*
 * store_internal: what the files of the store module share (store.c: frames and roll-ups; store_journal.c: the
 * change journal, knob records and the audit trail). Nothing outside the store module includes this, nor
 * sqlite3.h.
 */
#ifndef NGXAT_STORE_INTERNAL_H
#define NGXAT_STORE_INTERNAL_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_STMT_MAX 32
#define STORE_JSTMT_MAX 16

/* One metric's running sum over a minute's frames. */
struct acc {
	uint32_t id;
	uint32_t n; /* ticks where the value was present and not NaN */
	double sum;
};

struct store {
	sqlite3_stmt *jstmt[STORE_JSTMT_MAX]; /* store_journal.c's statements, prepared on first use */
	sqlite3_stmt *cstmt[3];               /* store_counts.c's, prepared on first use (store.c finalizes) */
	sqlite3 *db;
	sqlite3_stmt *stmt[STORE_STMT_MAX]; /* store.c's, by its S_ enum */
	struct store_options opt;
	int opened_version;
	bool in_query;          /* a query callback is running: the statements are in use */
	uint32_t names_stored;  /* highest metric id in the metrics table */
	bool have_last;
	int64_t last_ts;        /* the previous frame stored: a new minute completes its minute */
	struct frame scratch;   /* decoded rows */
	struct frame rollup;    /* the means being written */
	struct acc *acc, *acc_tmp;
	size_t acc_n, acc_cap;
	struct store_health h;
	int degraded_err;          /* -errno of the write that made the store degraded (0 when it is not) */
	struct store_batch *batch; /* frames not yet written (store.c) */
	struct audit_row *audit_held; /* audit rows not yet written, oldest first (store_journal.c) */
	size_t audit_nheld;
	char path[512];            /* the database file; "" in memory */
};

/* Mark the store degraded by a failed write of OP (sqlite's RC); the -errno. */
int store_degrade(struct store *st, const char *op, int rc);
/* Make sure the originals file holds every original the knobs table has (a store from before the file). */
int store_originals_backfill(struct store *st, char *err, size_t errlen);
/* A write committed: the store is writable; the audit rows held are written now, oldest first. */
void store_writable(struct store *st);

/* -errno for a failed sqlite call (ENOSPC, EROFS, EBUSY, ENOMEM, EACCES, else EIO). */
int store_sqlite_errno(sqlite3 *db, int rc);
/* sqlite's message for RC, with the OS reason for I/O errors. */
void store_describe(sqlite3 *db, int rc, char *buf, size_t len);
/* Step a statement that returns no rows we need, and reset it. */
int store_run(sqlite3_stmt *s);
/* End a read of S whose last step returned RC, R being what stopped it early (a callback's answer) or 0: reset S
 * and clear its bindings for the next read. R; else 0 if RC is SQLITE_DONE or SQLITE_ROW (stopped at a limit);
 * else -errno. */
int store_read_end(struct store *st, sqlite3_stmt *s, int rc, int r);

#endif
