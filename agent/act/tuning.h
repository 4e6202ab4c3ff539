/*
 * tuning: carries out the controller's intents (core/controller.c) through the engine, and answers the API about
 * proposals and the trial.
 *
 * The controller decides from frames and time alone; this module turns its proposals into journal rows, its arms
 * and verdicts into engine writes, and tells it back what happened (writes done, approvals, conflicts, operator
 * reverts). It runs on the loop thread once per tick, after the engine's own tick.
 */
#ifndef NGXAT_TUNING_H
#define NGXAT_TUNING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "core/metrics.h"

struct engine;
struct store;
struct tuning;
struct controller_report;
struct judge_evidence;
struct doctor_state;

/* A tuning loop over E's knobs with the [tuning] settings of CFG; its planner remembers the trials ST's journal
 * holds from the planner's memory span before NOW_MS. 0 or -errno with ERR. */
int tuning_new(const struct config *cfg, struct engine *e, struct store *st, int64_t now_ms, struct tuning **out,
	       char *err, size_t errlen);
/* Free; NULL is fine. */
void tuning_free(struct tuning *t);
/* One tick: FR (may be NULL) at NOW_MS of REG. */
void tuning_tick(struct tuning *t, int64_t now_ms, const struct metric_registry *reg, const struct frame *fr);
/* An operator approves or rejects proposal CHANGE_ID. 0, -ENOENT (not the proposal waiting), -errno. */
int tuning_decide(struct tuning *t, int64_t change_id, bool approve, const char *actor, const char *comment,
		  int64_t now_ms, char *err, size_t errlen);
/* An operator proposes KNOB = VALUE: checked by its policy, journaled (actor ACTOR, evidence WHY), approved by
 * being asked for, and tried A/B against the judge like the agent's own proposals. 0 with CHANGE_ID; -EBUSY (a
 * proposal or trial exists), -ENOTSUP (observe mode), or the engine's errors; ERR says why. */
int tuning_operator_propose(struct tuning *t, const char *knob, const char *value, const char *actor, const char *why,
			    int64_t now_ms, int64_t *change_id, char *err, size_t errlen);
/* The doctor's findings ST (checked at ST->checked_ms): those whose fix is one of the agent's knobs become the
 * planner's causes, tried before any symptom's knob. Cheap when nothing was checked since the last call. */
void tuning_causes(struct tuning *t, const struct doctor_state *st);
/* Whether a symptom waits for a check of its causes: the caller should run the doctor. */
bool tuning_wants_causes(const struct tuning *t);
/* The pool's causes ([fleet]: core/pool.h's pool_causes), replacing those before; tried with the doctor's. */
struct plan_cause;
struct detect_report;
void tuning_pool(struct tuning *t, const struct plan_cause *pool, size_t n);
/* The detectors' last evaluation. */
const struct detect_report *tuning_detect_report(const struct tuning *t);
/* The last verdict carried out (the controller forgets its proposal at the verdict), or NULL before any. */
struct tuning_verdict {
	int64_t change_id;
	int verdict;                  /* enum judge_verdict */
	char knob[64], from[1024], to[1024];
	char symptom[32];             /* the detector it was proposed for, "" (a cause's, an operator's) */
	char reason[256];             /* the judge's, one sentence */
	double effect;                /* the sequential rule's standardized effect (judge_evidence.seq_effect) */
	unsigned pairs;               /* ... over that many valid pairs */
	bool harm;                    /* it ended on harm shown (controller_intent.harm) */
};
const struct tuning_verdict *tuning_last_verdict(const struct tuning *t);
/* The pool's gate (controller_set_gate): whether a trial may start now, and why not. */
void tuning_gate(struct tuning *t, bool open, const char *why);
/* The pool's peers' figures for the trial pair that waits for them (controller_set_control). 0 or -ESTALE. */
int tuning_control(struct tuning *t, unsigned pair, double d, unsigned peers, bool all);
/* Pause or resume proposing and trying. */
void tuning_pause(struct tuning *t, bool pause, const char *actor, int64_t now_ms);
/* The controller's report and the journal id of its proposal or trial (0 when none). */
void tuning_report(const struct tuning *t, struct controller_report *out, int64_t *change_id);
/* The block being measured now (a calibration or trial with its arm in force): true with its start, end and
 * settle time; false between blocks and outside trials. */
bool tuning_block(const struct tuning *t, int64_t *start_ms, int64_t *end_ms, int64_t *settle_ms);
/* The trial's running evidence (the last trial's after it; all zeros before any), valid until the next tick. */
const struct judge_evidence *tuning_evidence(const struct tuning *t);

#endif
