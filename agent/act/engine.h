/*
 * engine: every write to a knob goes through here, journal first.
 *
 * Owns the knobs (instantiated from the policy set), what the agent knows of each (original value, last value it
 * wrote, ok / conflict / unsupported), the one change in flight on the host (invariant 1), recovery at start
 * (invariant 3), conflict detection each tick (invariant 5), stop (invariant 6) and reverts (invariant 7: the
 * same code runs in the offline `ngx-autotune --revert`). Before any write it checks the value against the
 * policy again (invariant 4) and commits the change row (invariant 2). Driver errors are sorted by errno class:
 * retry, unsupported (that knob), read-only (stop writing anything: observe-only). When the store cannot be
 * written the engine does not write knobs either (invariant 8). It never reads a clock: "now" is handed in.
 * A change applied at once (engine_propose, an operator's "now") ends as kept once the policy's settle time has
 * passed; a trial of the tuning loop (engine_set_arm) ends by the judge's verdict (engine_end_trial).
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
/* Once per tick: conflicts, the trial's settle time, retries. */
void engine_tick(struct engine *e, int64_t now_ms);

/* Whether an operator may propose KNOB = VALUE now (usable knob, nothing in flight, a new value the policy allows):
 * 0 with FROM (live) and TO (canonical VALUE), each KNOB_VALUE_MAX bytes; else as engine_propose, with ERR. */
int engine_check_proposal(struct engine *e, const char *knob, const char *value, char *from, char *to, char *err,
			  size_t errlen);
/* An operator's own change applied at once, without a trial: validated like the agent's (policy bounds, step,
 * constraints), journaled, and written now (the operator approved it by asking). -EBUSY when a change is in flight
 * (invariant 1), -ERANGE / -EPERM when the policy refuses (ERR says why), -ENOENT for an unknown knob, -EROFS when
 * observe-only. */
int engine_propose(struct engine *e, const char *knob, const char *value, const char *actor, const char *why,
		   int64_t now_ms, int64_t *change_id, char *err, size_t errlen);
/* Revert change ID (0: every knob the agent changed, back to its original). Ends a change in flight on those
 * knobs. Journaled as revert rows. The number of writes started, or -errno with ERR. */
int engine_revert(struct engine *e, int64_t change_id, const char *actor, int64_t now_ms, char *err, size_t errlen);
/* An operator says a conflict is settled: the live value becomes the knob's original, the agent may act again. */
int engine_clear_conflict(struct engine *e, const char *knob, const char *actor, int64_t now_ms, char *err,
			  size_t errlen);
/* SIGTERM (invariant 6): put back the change in flight only; with REVERT_ALL, every change (revert_on_stop). */
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
/* Journal a proposal of ACTOR (the agent's or an operator's; state proposed; nothing is written). */
int engine_journal_proposal(struct engine *e, const char *knob, const char *from, const char *to, const char *actor,
			    const char *why, int64_t now_ms, int64_t *id, char *err, size_t errlen);
/* The journal state of change ID: 0, -ENOENT or -errno. */
int engine_change_state(struct engine *e, int64_t id, enum change_state *st);
/* An operator approved (CHANGE_APPROVED) or rejected (CHANGE_REJECTED, also a withdrawal) proposal ID. */
int engine_close_proposal(struct engine *e, int64_t id, enum change_state st, const char *actor, const char *detail,
			  int64_t now_ms);
/* Put VALUE (the change's old or new value) in force as trial arm ARM ("A"/"B"): the first arm checks the policy
 * again and starts the trial; every arm is noted in the row before its write. CB is told when it is done. */
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
