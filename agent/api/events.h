/*
 * events: what happens in the agent, as a stream for the API's GET /v1/events (server-sent events).
 *
 * Owns a bounded ring of the recent events (at most EVENTS_RING events and EVENTS_RING_BYTES bytes: the oldest go
 * first), each kept in its wire form ("id: N\nevent: TYPE\ndata: {json}\n\n"), the id sequence, and the peer of
 * the API request being handled, so that the audit rows and events it causes record who asked. Publishers (the
 * engine, the tuning loop, the API) make one call each; the API registers one listener, told after every
 * publish, and reads events back by id. It does no I/O and reads no clock: ids start from a number the caller
 * gives (the start time in ms times 1000), so the ids of a later run are larger than those of an earlier one and
 * a client's Last-Event-ID from before a restart is known to be stale. The loop thread only; no locks.
 */
#ifndef NGXAT_EVENTS_H
#define NGXAT_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define EVENTS_RING 1024                /* events kept for Last-Event-ID replays */
#define EVENTS_RING_BYTES (512 * 1024)  /* and at most this many bytes of them */
#define EVENTS_DATA_MAX 16384           /* an event's JSON above this is cut to {"truncated": true, ...} */

struct json_t;
struct judge_evidence;
struct controller_report;

/* One event in its wire form, valid until the next publish. */
struct events_view {
	uint64_t id;
	const char *type;
	const char *wire; /* "id: ...\n\n" */
	size_t len;
};

/* Start (or restart) with an empty ring; the first event gets id FIRST_ID (>= 1). */
void events_init(uint64_t first_id);
/* Free the ring; publishing afterwards does nothing until events_init. */
void events_reset(void);
/* FN(CTX) is called after each publish (NULL: nobody). */
void events_set_listener(void (*fn)(void *ctx), void *ctx);

/* Publish DATA (consumed; an object) as an event of TYPE (a static string). 0, -ENOMEM, -EINVAL, -ENODEV when
 * not initialised. */
int events_publish(const char *type, struct json_t *data);
/* The id of the newest event, or first_id - 1 before any. */
uint64_t events_last_id(void);
/* The id of the oldest event still in the ring (last_id + 1 when empty). */
uint64_t events_oldest_id(void);
/* Event ID into OUT: 0, or -ENOENT when it is not (or no longer) in the ring. */
int events_get(uint64_t id, struct events_view *out);

/* The peer of the API request being handled ("" between requests). */
void events_set_peer(const char *peer);
/* See events_set_peer. */
const char *events_peer(void);
/* How many audit rows were written (events_audit) since the start: whether an act left a row of its own. */
uint64_t events_audit_count(void);

/* ---- one call per publishing site ---- */

/* A proposal made, approved, rejected or withdrawn (STATE one of API_PROPOSAL_*). WHY: the evidence (made), the
 * operator's comment (approved, rejected: sent as "comment"), the reason (withdrawn). FROM, TO, ACTOR, WHY may be
 * NULL. */
void events_proposal(int64_t id, const char *knob, const char *from, const char *to, const char *state,
		     const char *actor, const char *why, int64_t now_ms);
/* A trial's arm ARM ("A"/"B") with VALUE is being written; REP tells the pair. */
void events_trial_arm(int64_t id, const char *knob, const char *arm, const char *value,
		      const struct controller_report *rep, int64_t now_ms);
/* The trial's evidence EV: published once per completed pair (a repeated call with no new pair does nothing). */
void events_trial_progress(int64_t id, const char *knob, const struct judge_evidence *ev, int64_t now_ms);
/* A trial ended: VERDICT (judge_verdict_name), the change's final STATE, REASON, and EV (may be NULL). */
void events_verdict(int64_t id, const char *knob, const char *verdict, const char *state, const char *reason,
		    const struct judge_evidence *ev, int64_t now_ms);
/* Journal row ID moved to STATE with DETAIL. */
void events_change(int64_t id, enum change_state state, const char *detail, int64_t now_ms);
/* An audit row was written: an "audit" event, and a "conflict" event when it reports one. */
void events_audit(const struct audit_row *row);

#endif
