/*
 * engine: every write to a knob goes through here, journal first.
 *
 * Owns the knobs (instantiated from the policy set), what the agent knows of each (original value, last value it
 * wrote, ok / conflict / unsupported), the one change in flight on the host (invariant 1), recovery at start
 * (invariant 3), conflict detection each tick (invariant 5), stop (invariant 6) and reverts (invariant 7: the
 * same code runs in the offline `ngx-autotune --revert`). Invariant 4: a new value is validated in full once, where
 * it enters (engine_check for an operator's; the planner, core/plan.c, for the agent's own), and is carried from
 * there as a struct engine_checked to the journal and the write; just before the write, one guard in the write
 * path asserts again that a change's new value is within its policy's bounds. Every write commits its change row
 * first (invariant 2), with one exception: when the journal cannot take a row (the store full, read-only or gone),
 * putting back a value the journal already holds as a change's old value (recovery at start, the trial at stop, a
 * trial the store can no longer record) is written without a row of its own, and journaled when the store can be
 * written again; until then the engine makes no change. Before the agent's first write of a knob its original goes
 * to the store's originals file too. Driver errors are sorted by errno class: retry, unsupported (that knob), read-only (stop
 * writing anything: observe-only). When the store cannot be written the engine does not write knobs either
 * (invariant 8). It never reads a clock: "now" is handed in. A change applied at once (engine_apply_now, an
 * operator's "now") ends as kept once the policy's settle time has passed; a trial of the tuning loop
 * (engine_set_arm) ends by the judge's verdict (engine_end_trial).
 */
#ifndef NGXAT_ENGINE_H
#define NGXAT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "act/knob.h"
#include "store/store.h"

struct engine;
struct policy_set;

enum engine_knob_state { ENGINE_KNOB_OK, ENGINE_KNOB_CONFLICT, ENGINE_KNOB_UNSUPPORTED, ENGINE_KNOB_DISABLED };

struct engine_knob_report {
	char name[KNOB_NAME_MAX];
	const char *kind;
	const struct knob_policy *pol;
	enum engine_knob_state state;
	char why[KNOB_WHY_MAX];
	bool live_ok;
	char live[KNOB_VALUE_MAX];
	bool has_original, has_written;
	char original[KNOB_VALUE_MAX];
	char last_written[KNOB_VALUE_MAX];
	int64_t change_id; /* the change in flight on this knob, 0 if none */
};

/* An engine writing through ENV, journaling into ST. Takes ownership of SET (freed with the engine). */
int engine_new(struct store *st, struct knob_env *env, struct policy_set *set, struct engine **out, char *err,
	       size_t errlen);
/* Free; NULL is fine. Does not revert anything (see engine_stop). */
void engine_free(struct engine *e);
/* Swap in a new policy set (reload): knobs are instantiated again; a knob with a change in flight keeps its old
 * policy until the change ends. Takes ownership of SET. */
int engine_set_policies(struct engine *e, struct policy_set *set, char *err, size_t errlen);

/* Before READY=1 (invariant 3): put back every change left in applying or trial and verify it; finish any revert
 * left half done; re-apply kept changes only where the live value still equals the recorded original, else mark a
 * conflict. Synchronous drivers only complete here; asynchronous ones (nginx) complete in later ticks. Returns
 * the number of knobs it wrote, or -errno when the journal cannot be read. */
int engine_recover(struct engine *e, int64_t now_ms);
/* Whether recovery has put the host back: no recovery write queued, under way, or failed (READY=1 waits for it). */
bool engine_recovered(const struct engine *e);
/* Once per tick: conflicts, the trial's settle time, retries (recovery too: a knob that did not go back, rows not
 * journaled once the store takes them); a trial in flight goes back when the store cannot be written. */
void engine_tick(struct engine *e, int64_t now_ms);

/* A new value of a knob, validated against its policy: the live value it goes from and the canonical value it goes
 * to. engine_check makes one from an operator's text; the tuning loop fills one from the planner's proposal,
 * which core/plan.c validated the same way (policy_check against the live values). */
struct engine_checked {
	char knob[KNOB_NAME_MAX];
	char from[KNOB_VALUE_MAX];
	char to[KNOB_VALUE_MAX];
};

/* The one validation of an operator's KNOB = VALUE (invariant 4): a usable knob, nothing in flight (invariant 1),
 * VALUE parses as the knob's type and differs from the live value, and the policy allows it (bounds, step from the
 * live value, cross-knob constraints). 0 with OUT; -ENOENT (unknown knob), -EBUSY (a change in flight, or the knob
 * in conflict), -ENOTSUP (unusable knob), -EROFS (observe-only), -ERANGE / -EINVAL / -EPERM (the value or the
 * policy), -EALREADY (already that value); ERR says why. */
int engine_check(struct engine *e, const char *knob, const char *value, struct engine_checked *out, char *err,
		 size_t errlen);
/* An operator's own change applied at once, without a trial: checked (engine_check), journaled and written now
 * (the operator approved it by asking). engine_check's errors, -EIO when the write failed and was undone. */
int engine_apply_now(struct engine *e, const char *knob, const char *value, const char *actor, const char *why,
		     int64_t now_ms, int64_t *change_id, char *err, size_t errlen);
/* What a revert did to one knob. */
enum engine_revert_outcome {
	ENGINE_REVERT_DONE,    /* written and read back */
	ENGINE_REVERT_PENDING, /* its write is queued or under way (an nginx -t and reload), perhaps behind a write of
				* the same knob that was under way when the revert was asked for */
	ENGINE_REVERT_ALREADY, /* the knob already read the value: nothing to write */
	ENGINE_REVERT_SKIPPED, /* in conflict: someone else's value is not written over (invariant 5) */
	ENGINE_REVERT_FAILED   /* the write failed (why) */
};
#define ENGINE_REVERT_CHANGES 8 /* changes named per knob */
#define ENGINE_REVERT_KNOBS 64  /* knobs named per revert; the rest are counted */
struct engine_revert_item {
	char knob[KNOB_NAME_MAX];
	int64_t changes[ENGINE_REVERT_CHANGES]; /* the changes it undoes, newest first */
	size_t nchanges;
	int64_t row; /* the revert row journaled for it, 0 if none */
	char to[KNOB_VALUE_MAX];
	enum engine_revert_outcome outcome;
	char why[KNOB_WHY_MAX];
};
struct engine_revert_report {
	size_t n, more;   /* knobs named in items, knobs beyond those */
	int writes;       /* revert rows journaled and their writes queued by this revert */
	int pending;      /* knobs whose revert is still queued or under way when engine_revert returns */
	struct engine_revert_item items[ENGINE_REVERT_KNOBS];
};
/* Name of a revert outcome ("done", "pending", ...). */
const char *engine_revert_outcome_name(enum engine_revert_outcome o);
/* Revert change ID (0: every knob the agent changed, back to its original), in whatever state it is: kept, in
 * trial, or being applied (a write of the knob queued or under way is not recalled halfway: the revert goes behind
 * it and puts the value back once it is done). Journaled as revert rows. REP (NULL: not wanted) says what it did,
 * knob by knob. The number of writes started, or -errno with ERR. */
int engine_revert(struct engine *e, int64_t change_id, const char *actor, int64_t now_ms,
		  struct engine_revert_report *rep, char *err, size_t errlen);
/* An operator says a conflict is settled: the live value becomes the knob's original, the agent may act again. */
int engine_clear_conflict(struct engine *e, const char *knob, const char *actor, int64_t now_ms, char *err,
			  size_t errlen);
/* SIGTERM (invariant 6): put back the change in flight only (in trial, or its write under way); with REVERT_ALL,
 * every change (revert_on_stop). */
void engine_stop(struct engine *e, bool revert_all, int64_t now_ms);
/* Whether a write is still under way (an asynchronous driver has not completed). */
bool engine_busy(const struct engine *e);

/* ---- trials run by the controller (the tuning loop) ---- */

/* Told when a trial arm's write completes: OK false when it failed (the row is failed, the old value restored). */
typedef void (*engine_write_cb)(void *ctx, bool ok);
/* The live value of KNOB for the planner: 0, -ENOENT (unusable here), -EBUSY (in conflict). */
int engine_value(struct engine *e, const char *knob, char *out, size_t outlen);
/* Whether KNOB is frozen by a conflict. */
bool engine_knob_in_conflict(struct engine *e, const char *knob);
/* Journal C as a proposal of ACTOR with WHY (state proposed; nothing is written). APPROVED (NULL: none) is the
 * approval of a proposal approved by being asked for (an operator's): the row goes on to approved with it. */
int engine_journal_proposal(struct engine *e, const struct engine_checked *c, const char *actor, const char *why,
			    const char *approved, int64_t now_ms, int64_t *id, char *err, size_t errlen);
/* The journal state of change ID: 0, -ENOENT or -errno. */
int engine_change_state(struct engine *e, int64_t id, enum change_state *st);
/* An operator approved (CHANGE_APPROVED) or rejected (CHANGE_REJECTED, also a withdrawal) proposal ID. */
int engine_close_proposal(struct engine *e, int64_t id, enum change_state st, const char *actor, const char *detail,
			  int64_t now_ms);
/* Put VALUE (the change's old or new value) in force as trial arm ARM ("A"/"B"): the first arm starts the trial;
 * every arm is noted in the row before its write. CB is told when it is done. */
int engine_set_arm(struct engine *e, int64_t id, const char *value, const char *arm, int64_t now_ms,
		   engine_write_cb cb, void *ctx, char *err, size_t errlen);
/* End trial ID in FINAL (kept, reverted, aborted, failed) with DETAIL (the judge's evidence), writing VALUE first
 * when it is not in force (NULL: write nothing, e.g. after a conflict). -EALREADY when the trial already ended. */
int engine_end_trial(struct engine *e, int64_t id, enum change_state final, const char *value, const char *detail,
		     int64_t now_ms);

/* The policy set in force (it changes on a reload). */
const struct policy_set *engine_policies(const struct engine *e);

/* Reports for the API. */
size_t engine_knob_count(const struct engine *e);
/* Knob I's report; its live value is read at most once per engine tick (kept until the next tick or a write). */
void engine_knob_report(struct engine *e, size_t i, struct engine_knob_report *out);
/* Whether knob I is in conflict (someone else changed it); if so *NAME and *WHY point into the engine (valid
 * until its next call). Reads nothing live: status lines use it. */
bool engine_knob_conflict(const struct engine *e, size_t i, const char **name, const char **why);
/* Whether the engine stopped writing, and why (EPERM/EROFS from a driver, or the store). */
bool engine_observe_only(const struct engine *e, char *why, size_t whylen);
/* Name of a knob state ("ok", "conflict", ...). */
const char *engine_knob_state_name(enum engine_knob_state s);

#endif
