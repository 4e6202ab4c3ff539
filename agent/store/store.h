/*
 * store: the agent's SQLite database (WAL mode).
 *
 * Owns the schema and its forward migrations (PRAGMA user_version), the per-tick frames, the per-minute roll-ups,
 * the metric-name table, and retention. Frames are written in batches: one transaction per batch_ms of frames
 * (5 s by default; a transaction costs 0.15-0.2 ms, more than most probes), so a crash of the agent loses at most
 * that much; a power cut may lose more, as with synchronous=NORMAL before. The journal's writes are not batched.
 * A failed write (disk full, read-only file, corruption) never crashes the agent: the store marks itself degraded
 * with the reason, keeps the unwritten frames (a bounded number) and tries again with every later frame (a freed
 * disk recovers), and the schema is never lost. Degraded is the truth of the last write, frame or journal: it is
 * cleared only by a write that commits, and a degraded store tries every frame at once. Audit rows that cannot be
 * written are held in memory (STORE_AUDIT_HELD_MAX, repeats collapsed) and written, in order, when a write commits
 * again: the record of an act is not lost to a full disk. A store file that existed and is now empty, gone (its
 * originals file says it existed) or damaged in its journal is an error naming the file and the ways out, never a
 * fresh start. Beside the database, FILE.originals keeps an append-only copy of each knob's original value, written
 * (and synced) before the agent's first write of that knob, so that the host can be put back when the database is
 * lost. Only this module includes sqlite3.h.
 */
#ifndef NGXAT_STORE_H
#define NGXAT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/metrics.h"

#define STORE_SCHEMA_VERSION 2

struct store;

/* Every field >= 1. "Now" for retention is the ts of the frame being appended: the store reads no clock. */
struct store_options {
	int64_t frames_retention_s;  /* per-second frames kept this long (default 48 h) */
	int64_t rollups_retention_s; /* per-minute roll-ups kept this long (default 90 days) */
	int64_t audit_retention_s;   /* audit rows kept this long after their last event (default 365 days) */
	int64_t denied_retention_s;  /* audit rows of refused requests (STORE_AUDIT_DENIED) kept this long (default 7
				      * days) */
	int delete_batch;            /* most rows retention deletes per frame written (default 500) */
	int64_t batch_ms;            /* frames are held up to this long and written together (default 5000; 0: each
				      * frame in its own transaction; at most 60000) */
};

struct store_health {
	bool degraded;
	char reason[256];         /* why, when degraded (sqlite's message and the operation) */
	int64_t frames;           /* rows in frames, and frames held for the next batch */
	int64_t rollups;          /* rows in rollups */
	int64_t bytes;            /* database size (page_count * page_size) */
	int64_t write_errors;     /* failed transactions since open */
	int64_t last_write_ms;    /* ts of the last frame stored or held for the next batch */
};

/* Fill OPT with the defaults. */
void store_options_default(struct store_options *opt);
/* The originals file of the store at PATH is PATH STORE_ORIGINALS_SUFFIX. */
#define STORE_ORIGINALS_SUFFIX ".originals"

/* Open (creating the file and any missing parent directory) and migrate to STORE_SCHEMA_VERSION. Loads known
 * metric names into REG (NULL: skip), which must be empty or agree with the file. OPT NULL: defaults. On failure
 * writes a message into ERR and returns -EINVAL (options), -EROFS (not writable), -ENOTSUP (schema newer than
 * ours; the file is not touched), -EIO (not a database, not ours, damaged, or a migration failed and was rolled
 * back), -ENODATA (a store that existed is empty, or gone while its originals file remains) or another -errno;
 * for a store that existed, ERR says how to recover. */
int store_open(const char *path, const struct store_options *opt, struct metric_registry *reg,
	       struct store **out, char *err, size_t errlen);
/* mkdir -p of PATH's directory (0750 each), as store_open makes the store's: 0 or -errno. */
int store_make_parents(const char *path);
/* A scratch store in memory: the schema and nothing else (the revert of a lost store seeds it from the originals
 * file). 0 or -errno with ERR. */
int store_open_memory(struct store **out, char *err, size_t errlen);
/* Write the frames held for the next batch, then close; NULL is fine. */
void store_close(struct store *st);
/* Schema version found in the file at open, before migrating (0 for a new file). */
int store_opened_version(const struct store *st);

/* Store one tick: the frame is held, and written with the frames held before it once the first of them is
 * batch_ms old since the last attempt, or at once when the store has written nothing since open. A write is one
 * transaction: new metric names, the frames in order, the roll-up of each minute they complete, and one bounded
 * retention step. A frame with the ts of a stored one replaces it. When the write fails the store is degraded
 * (see store_health), the frames are kept for the next try (the oldest dropped past 300), and
 * -EIO/-ENOSPC/-EROFS (or -EBUSY: locked by another process past the busy timeout, -ENOMEM) returned; while
 * degraded (by a frame or a journal write) a frame held returns the standing error; the next successful write
 * clears it. Caller errors leave the health alone: -EINVAL (ts outside 0..2^53, ids written into
 * vals by hand outside 1..METRIC_ID_MAX), -EBUSY (called from a query callback). */
int store_append_frame(struct store *st, const struct metric_registry *reg, struct frame *fr);

/* Called once per stored frame by the queries; non-zero stops the query and is returned. FR is valid only during
 * the call. It must not call back into the store (that returns -EBUSY). */
typedef int (*store_frame_cb)(void *ctx, const struct frame *fr);
/* Frames with since_ms <= ts < until_ms in time order, at most LIMIT (0: no limit); frames held for the next batch
 * are written first. A row whose data does not decode is skipped like a missed tick. 0, the callback's value, or
 * -errno. */
int store_query_frames(struct store *st, int64_t since_ms, int64_t until_ms, size_t limit, store_frame_cb cb,
		       void *ctx);
/* Per-minute roll-ups in the same form as frames (frames held are written first): ts is the minute start, dt_s the
 * number of ticks averaged, probe bits 0; each value is the mean over the ticks where it was present and not NaN,
 * NaN if there were none. */
int store_query_rollups(struct store *st, int64_t since_ms, int64_t until_ms, size_t limit, store_frame_cb cb,
			void *ctx);
/* Current health (runs a cheap count). */
void store_get_health(struct store *st, struct store_health *h);

/* ---- the change journal, knob records and the audit trail (store_journal.c) ------------------------------- */

#define STORE_KNOB_MAX 64
#define STORE_VALUE_MAX 1024
#define STORE_AUDIT_HELD_MAX 256 /* audit rows held while writes fail; about 1.1 MiB */

enum change_state {
	CHANGE_PROPOSED,  /* waiting for approval */
	CHANGE_APPROVED,  /* approved, waiting for its turn (one trial on the host at a time) */
	CHANGE_APPLYING,  /* journaled; the write is under way */
	CHANGE_TRIAL,     /* written and verified; being measured */
	CHANGE_KEPT,      /* stays */
	CHANGE_REVERTED,  /* undone (by the judge, an operator, or recovery after a restart) */
	CHANGE_REJECTED,  /* an operator said no */
	CHANGE_FAILED,    /* the write or its verification failed; the knob was put back */
	CHANGE_ABORTED,   /* a guardrail tripped or the trial was ended; put back */
	CHANGE_STATE_COUNT
};

enum change_kind {
	CHANGE_KIND_CHANGE, /* sets new_value; recovery puts old_value back */
	CHANGE_KIND_REVERT  /* puts a knob back; recovery finishes it (writes new_value) */
};

struct change_row {
	int64_t id;
	char knob[STORE_KNOB_MAX];
	enum change_kind kind;
	int64_t reverts; /* revert rows: the change they undo, 0 when several or none */
	char old_value[STORE_VALUE_MAX];
	char new_value[STORE_VALUE_MAX];
	enum change_state state;
	char actor[64];
	char why[256];
	char detail[4096]; /* the last error, or a verdict with its evidence (JSON) */
	int64_t created_ms, updated_ms;
};

/* A knob row's state when it was seeded from the originals file of a lost store: only its original is known. */
#define STORE_KNOB_LOST "lost"

struct knob_row {
	char name[STORE_KNOB_MAX];
	bool has_original;
	char original[STORE_VALUE_MAX];     /* the live value before the agent's first write */
	bool has_written;
	char last_written[STORE_VALUE_MAX]; /* what the agent wrote last */
	char state[16];                     /* "ok", "conflict", "unsupported", STORE_KNOB_LOST */
	char why[256];
	int64_t updated_ms;
};

/* The action of an audit row for a request refused for who sent it (401, 403): kept denied_retention_s. */
#define STORE_AUDIT_DENIED "denied"

struct audit_row {
	int64_t id, ts, last_ts, change_id, count;
	char actor[64];
	char peer[64];
	char action[32];
	char knob[STORE_KNOB_MAX];
	char outcome[32];
	char detail[4096]; /* the last error, or a verdict with its evidence (JSON) */
};

/* "proposed", "applying", ... */
const char *change_state_name(enum change_state s);
/* The state named S: 0 or -EINVAL. */
int change_state_parse(const char *s, enum change_state *out);
/* Journal ROW (its id is set) durably (synchronous=FULL): the row is on disk before this returns. 0 or -errno. */
int store_change_insert(struct store *st, struct change_row *row);
/* Move change ID to STATE, with DETAIL when not NULL, durably. 0, -ENOENT, or -errno. */
int store_change_update(struct store *st, int64_t id, enum change_state state, const char *detail, int64_t now_ms);
/* Change ID into ROW. 0, -ENOENT, -errno. */
int store_change_get(struct store *st, int64_t id, struct change_row *row);
typedef int (*store_change_cb)(void *ctx, const struct change_row *row);
/* Changes newest first: of KNOB ("" = all), in STATES (a bitmask of 1u << state; 0 = all), with id < BEFORE_ID
 * (0 = no bound), at most LIMIT. */
int store_changes_query(struct store *st, const char *knob, unsigned states, int64_t before_id, size_t limit,
			store_change_cb cb, void *ctx);
/* What the store knows of knob NAME. 0, -ENOENT, -errno. */
int store_knob_get(struct store *st, const char *name, struct knob_row *row);
/* Insert or replace ROW, durably. */
int store_knob_put(struct store *st, const struct knob_row *row);
/* Keep a copy of KNOB's ORIGINAL value in the originals file, synced, before the agent's first write of it (a
 * line "KNOB VALUE"; a later line for the same knob replaces it: a cleared conflict moves the original). No-op
 * for a store in memory. 0; -EINVAL (a blank in KNOB, a newline in either); -errno of the file. */
int store_original_note(struct store *st, const char *knob, const char *original);
typedef int (*store_original_cb)(void *ctx, const char *knob, const char *original);
/* The originals file of the store at STORE_PATH, line by line in the order written (the last line of a knob is its
 * original); CB's non-zero stops and is returned. A malformed line is skipped and the lines after it still read:
 * then -EBADMSG at the end, ERR naming each such line (FILE:LINE and its start). 0, -ENOENT (no such file), -errno
 * (ERR says which). */
int store_originals_read(const char *store_path, store_original_cb cb, void *ctx, char *err, size_t errlen);

/* Append ROW (id set), or, when the newest row is the same event (actor, peer, action, knob, change, outcome,
 * detail), count it there and move its last_ts: repeated events are collapsed, not repeated. Peers are compared
 * by who they are (a Unix peer's uid, a TCP peer's address): the row keeps the first one's pid or port. When the
 * write fails, the row is held and written when a write commits again (ROW's id is then 0) and 0 is returned: the
 * act is recorded. -ENOSPC only when STORE_AUDIT_HELD_MAX rows are held already. */
int store_audit_append(struct store *st, struct audit_row *row);
/* N more events (the last at LAST_TS) counted in audit row ID, durably: events sampled out of the trail. 0, -ENOENT
 * (no such row: trimmed, or ID 0), -errno. */
int store_audit_add(struct store *st, int64_t id, int64_t n, int64_t last_ts);
/* Audit rows held in memory, not yet written. */
size_t store_audit_held(const struct store *st);
typedef int (*store_audit_cb)(void *ctx, const struct audit_row *row);
/* Audit rows newest first with since_ms <= ts < until_ms (0 = no bound), of KNOB and ACTOR ("" = any), id <
 * BEFORE_ID (0 = no bound), at most LIMIT. */
int store_audit_query(struct store *st, int64_t since_ms, int64_t until_ms, const char *knob, const char *actor,
		      int64_t before_id, size_t limit, store_audit_cb cb, void *ctx);

/* ---- counts for /metrics (store_counts.c) ------------------------------------------------------------------ */

/* Changes by kind and state, COUNTS[enum change_kind][enum change_state]; rows in a state this build does not know
 * are not counted. 0 or -errno. */
int store_change_counts(struct store *st, int64_t counts[2][CHANGE_STATE_COUNT]);
typedef int (*store_count_cb)(void *ctx, const char *name, int64_t n);
/* Ended trials by verdict, read from the judge's evidence in each change's detail ("verdict":"NAME"): CB once per
 * verdict, in name order; non-zero from CB stops and is returned. 0 or -errno. */
int store_verdict_counts(struct store *st, store_count_cb cb, void *ctx);
/* Audit events with ACTION into *N, collapsed repeats counted. 0 or -errno. */
int store_audit_count(struct store *st, const char *action, int64_t *n);

#endif
