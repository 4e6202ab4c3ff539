/*
 * controller: the tuning loop's one state machine (invariant 1: one trial on the host at a time).
 *
 * Owns the state (observe -> proposed -> awaiting approval -> calibrating -> trial -> verdict -> cooldown ->
 * observe), the mode (observe, propose, auto), the operator's pause, the rate limit, the order of the blocks of
 * each pair (a seeded xoshiro state of its own, so a run replays from its seed), the block being measured, the
 * judge of the trial, the A/A calibrations of the objectives it has seen, and the planner's memory. Each tick it is
 * handed the time and the frame; it feeds the detectors and the block accumulator, and returns intents for the
 * caller to carry out through the engine: propose (journal it), set an arm (write A = the old value or B = the new
 * one), keep, revert (final), withdraw (a proposal ends without a trial) and notes. The caller reports back:
 * approvals, rejections, the end of each write, conflicts and operator reverts. It must not write knobs, journal,
 * read policies from files or decide a verdict itself (the judge does; the controller only adds the hard trips
 * checked inside a block, so a tripped B is rolled back before its block ends). Pure: no I/O, no clock, no globals.
 *
 * Rules carried here, in one place:
 * - Modes: observe diagnoses and advises (no proposal is made); propose (the default) makes every change wait for
 *   an approval; auto runs the proposals of policies with approval = auto without a human and waits for the rest.
 * - Rate limit: at most changes_per_hour trials start in any hour. A proposal is only made when one more would fit,
 *   and only one proposal exists at a time, so an approval never breaks the limit.
 * - Pause stops proposals and approved starts; a trial or calibration under way is rolled back (ended as aborted:
 *   stop acting is the safe side). Setting the mode to observe does the same and withdraws a waiting proposal.
 * - A write that fails or is not reported within write_timeout_ms ends the trial as error and reverts. A conflict
 *   on the trial's knob ends it as aborted without a write (the agent never fights a human); an operator revert
 *   ends it as aborted without a write (the engine has put the value back); the planner remembers it as rejected.
 * - A/A calibration (calibrate_pairs > 0): before the first trial of an objective, or when its calibration is older
 *   than calibrate_max_age_ms, A/A pairs size K; a noise floor too high withdraws the proposal, and proposals of
 *   that objective are withdrawn at once until the calibration ages out. A calibration raises K above the plan's
 *   for a noisy objective, never below it (the guardrails were not calibrated and need their pairs).
 * - A proposal rests on a full detector window (window_ticks), never on the first min_ticks.
 * - Causes before symptoms (plan.h): the caller's causes are tried first, and nothing is proposed until they were
 *   checked after the host had been busy causes_wait_ms (the report's wants_causes asks the caller for a check).
 * - After a verdict the detectors' windows are reset (they describe the host before or during the trial).
 * - Time must not go backwards during a calibration or trial: that ends it as error.
 */
#ifndef NGXAT_CONTROLLER_H
#define NGXAT_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block.h"
#include "detect.h"
#include "judge.h"
#include "metrics.h"
#include "plan.h"
#include "policy.h"
#include "stats.h"

#define CONTROLLER_INTENTS_MAX 8   /* intents one tick may return */
#define CONTROLLER_TEXT_MAX 320    /* notes and reasons, with their NUL */
#define CONTROLLER_RATE_MAX 64     /* largest changes_per_hour */
#define CONTROLLER_CALIB_MAX 16    /* objectives whose calibration is remembered (the oldest is forgotten) */
#define CONTROLLER_TRIP_MIN_5XX 10 /* 5xx in a B block before its share may trip inside the block */
#define CONTROLLER_TRIP_SUSTAIN_MS 2000 /* overflows or dropped connections in every tick this long: a trip inside the
					  * block; a burst that ended is the pair's to judge */

enum controller_mode {
	CONTROLLER_MODE_OBSERVE, /* diagnose and advise only */
	CONTROLLER_MODE_PROPOSE, /* every change waits for an approval */
	CONTROLLER_MODE_AUTO,    /* approval = auto policies run without a human */
};

enum controller_state {
	CONTROLLER_OBSERVE,     /* watching: detectors and planner every tick */
	CONTROLLER_PROPOSED,    /* a proposal was just made (one tick: the caller journals it) */
	CONTROLLER_AWAITING,    /* waiting for an operator's approval */
	CONTROLLER_CALIBRATING, /* A/A pairs: no change, the objective's noise is measured */
	CONTROLLER_TRIAL,       /* K pairs of A/B blocks */
	CONTROLLER_VERDICT,     /* the trial just ended (one tick) */
	CONTROLLER_COOLDOWN,    /* the host settles before the next proposal */
};

enum controller_arm { CONTROLLER_ARM_NONE, CONTROLLER_ARM_A, CONTROLLER_ARM_B };

enum controller_intent_kind {
	INTENT_PROPOSE,  /* journal the proposal (controller_proposal: knob, from, to, evidence, trial plan) */
	INTENT_SET_ARM,  /* write VALUE (arm A: the old value, B: the new one); answer with controller_write_done */
	INTENT_KEEP,     /* the trial ended: the new value stays (write it when WRITE: A was in force) */
	INTENT_REVERT,   /* the trial ended: the old value stays (write it when WRITE) */
	INTENT_WITHDRAW, /* the proposal ends without a trial (expired, refused by calibration, conflict, mode) */
	INTENT_NOTE,     /* status text for the audit trail */
	INTENT_APPROVED, /* the pool's rollout approved the proposal (TEXT: the peer's verdict): journal the approval */
};

struct controller_intent {
	enum controller_intent_kind kind;
	uint64_t id;                     /* the proposal */
	char knob[POLICY_NAME_MAX];
	enum controller_arm arm;         /* SET_ARM: the arm written; KEEP, REVERT: the arm that stays */
	char value[KNOBVAL_TEXT_MAX];    /* SET_ARM, KEEP, REVERT: the value to be in force */
	bool write;                      /* KEEP, REVERT: VALUE is not (known to be) in force; false after a conflict
					    or an operator revert, when the agent must not write */
	bool tried;                      /* KEEP, REVERT: arm B was written at least once */
	enum judge_verdict verdict;      /* KEEP, REVERT, WITHDRAW */
	bool harm;                       /* REVERT: the trial ended on harm it showed (the objective worse, a guardrail,
					    a trip inside a block), not on an operator, a conflict or an error */
	char text[CONTROLLER_TEXT_MAX];  /* the reason in one sentence */
	const struct plan_proposal *prop;   /* PROPOSE: valid until the next controller call */
	const struct judge_evidence *ev;    /* KEEP, REVERT: valid until the next controller call */
};

struct controller_intents {
	size_t n;
	struct controller_intent v[CONTROLLER_INTENTS_MAX];
};

struct controller_config {
	enum controller_mode mode;
	unsigned changes_per_hour;      /* trials that may start in any hour: 1..CONTROLLER_RATE_MAX */
	int64_t cooldown_ms;            /* after a verdict, before the next proposal */
	int64_t proposal_ttl_ms;        /* a proposal not approved in this time is withdrawn */
	int64_t write_timeout_ms;       /* a write not reported done in this time ends the trial as error */
	int64_t tick_ms;                /* the sampling interval: a block's expected ticks */
	unsigned calibrate_pairs;       /* A/A pairs before an objective's first trial (3..16); 0: no calibration */
	int64_t calibrate_max_age_ms;   /* a calibration older than this is redone */
	uint64_t seed;                  /* of the block order */
	uint64_t first_id;              /* id of the next proposal (the journal's next one); 0 is taken as 1 */
	bool loadgen;                   /* measure = loadgen: trials are judged on the load generator's figures
					   (plan_loadgen_trial) */
	/* Blocks sized by the signal, for a gross symptom (detect.h): each block measures until it may hold
	 * signal_events events at the rate seen before the trial, at least measure_min_ms and at most the policy's
	 * measured time, after the policy's settle. 0 signal_events: off. */
	double signal_events;
	int64_t measure_min_ms;
	/* Causes (controller_set_causes): nothing is proposed until they were checked after the report had been
	 * actionable (the host busy) this long (from then the report asks for a check: wants_causes). 0: the caller
	 * does not check them on demand, and nothing waits (the causes it sets are still tried first). */
	int64_t causes_wait_ms;
	/* [fleet] rollout: a proposal that confirms a value a peer of the pool proved (its cause still holds: no
	 * verdict of a host with matching facts refuted it since) starts without an approval here, in any mode but
	 * observe; the trial judges it as any other. */
	bool rollout;
	/* [fleet]: the pool's peers as the control group (judge_set_control). At each trial pair's end the pair waits
	 * up to this long for the caller's controller_set_control (the report's control_pair names the pair and its two
	 * measured windows), then is judged with what came; the next pair runs meanwhile (after the planned last one
	 * the trial holds its arm for the verdict). 0: judged at once, on its own (a single host). */
	int64_t control_wait_ms;
	struct detect_config detect;
	struct plan_config plan;
	struct judge_config judge;      /* its pairs are replaced by the proposal's or the calibration's K */
};

/* The value of a knob as plan_next's VALUE_OF: 0, -ENOENT, -EBUSY or another -errno. */
typedef int (*controller_value_fn)(const char *knob, char *out, size_t outlen, void *ctx);

struct controller_report {
	enum controller_state state;
	enum controller_mode mode;
	bool paused;
	bool approved;                  /* the waiting proposal was approved (it starts when not paused) */
	bool wants_slot;                /* a proposal would start now but for the gate (controller_set_gate) */
	bool confirming;                /* the proposal confirms a value the pool proves (a peer kept it, none refuted it
					 * since): its trial has that peer's prior */
	uint64_t id;                    /* the proposal, 0 when none */
	char knob[POLICY_NAME_MAX];
	char from[KNOBVAL_TEXT_MAX], to[KNOBVAL_TEXT_MAX];
	enum controller_arm arm;        /* in force during calibration and trial; NONE while a write is under way */
	bool writing;
	unsigned pair, pairs;           /* the pair being measured (1-based) of K */
	unsigned calib_pair, calib_pairs;
	int64_t since_ms;               /* when the state was entered */
	int64_t until_ms;               /* end of the block, cooldown or proposal; 0 when none */
	unsigned nvalid;                /* valid pairs so far */
	double effect, effect_lo, effect_hi; /* the running estimate (judge_evidence); NAN before two valid pairs */
	enum judge_verdict verdict;     /* of the last trial; VERDICT_NONE before the first */
	unsigned changes_last_hour, changes_per_hour;
	char reason[CONTROLLER_TEXT_MAX]; /* why the state is what it is, in one sentence */
	bool wants_causes;              /* a symptom waits for a check of its causes: the caller should run one */
	int64_t causes_checked_ms;      /* when the causes were last checked (controller_set_causes); 0: never */
	size_t ncauses;
	/* A trial pair measured that waits for its peers' figures (control_wait_ms): its number (0: none waits), the
	 * measured windows [from, to) of its A and B blocks (frame time, ms since the epoch), and when it is judged
	 * anyway. */
	unsigned control_pair;
	int64_t control_a_ms[2], control_b_ms[2];
	int64_t control_until_ms;
	char control_metric[POLICY_METRIC_MAX]; /* ... the trial's objective, and which way is better */
	enum policy_direction control_dir;
};

struct controller;

/* CFG filled with the defaults: propose mode, 2 changes per hour, 60 s cooldown, proposals live 1 h, writes 120 s,
 * 1 s ticks, 4 A/A pairs (redone after 7 days), seed 1, and the detect, plan and judge defaults. */
void controller_config_default(struct controller_config *cfg);
/* A controller in state observe over policies SET (the caller's; it must outlive the controller or be replaced by
 * controller_set_policies) and knob values from VALUE_OF. 0, -EINVAL (a bad setting) or -ENOMEM. */
int controller_new(const struct controller_config *cfg, const struct policy_set *set, controller_value_fn value_of,
		   void *ctx, struct controller **out);
/* Free CTL; NULL is fine. */
void controller_free(struct controller *ctl);
/* Use SET from now on (a reload); a trial under way keeps its copied plan. */
void controller_set_policies(struct controller *ctl, const struct policy_set *set);

/* One tick at NOW_MS with frame FR (NULL when the sampler had none) of registry REG (one registry for CTL's
 * life): OUT is overwritten with the intents to carry out, in order. 0, or -EINVAL (a bad argument or another
 * registry; nothing was done). */
int controller_tick(struct controller *ctl, int64_t now_ms, const struct metric_registry *reg, const struct frame *fr,
		    struct controller_intents *out);

/* An operator approved proposal ID. 0, or -ENOENT when ID is not the proposal waiting. */
int controller_approved(struct controller *ctl, uint64_t id);
/* An operator rejected proposal ID: it is withdrawn and remembered as rejected. 0 or -ENOENT. */
int controller_rejected(struct controller *ctl, uint64_t id);
/* An operator proposed PROP (plan_operator), journaled by the caller as ID: it is approved by being asked for and
 * starts at the next tick (on resume when paused; the rate limit is not applied, the start is counted). 0,
 * -EPERM in observe mode, -EBUSY while a proposal, calibration or trial exists (invariant 1), -EINVAL; ERR says
 * why. */
int controller_operator_propose(struct controller *ctl, const struct plan_proposal *prop, uint64_t id, char *err,
				size_t errlen);
/* Tell the planner how an earlier trial of PROP ended at AT_MS (the journal, read back at start, so that a restart
 * does not forget what was reverted). As plan_memory_record. */
int controller_remember(struct controller *ctl, const struct plan_proposal *prop, enum plan_result result,
			int64_t at_ms);
/* The newest A/A calibration (its objective's METRIC, when, and what it found), for the caller to keep: returns how
 * many calibrations were made so far (0: none, nothing filled), so that a change of the count says "a new one". */
uint64_t controller_last_calibration(const struct controller *ctl, char *metric, size_t metriclen, int64_t *at_ms,
				     struct judge_calibration *cal);
/* A calibration of METRIC made at AT_MS (kept by the caller across a restart): used like one made here, until it
 * ages out. An older one than the controller has is ignored. 0, -EINVAL (implausible), -ENOSPC (table full). */
int controller_restore_calibration(struct controller *ctl, const char *metric, int64_t at_ms,
				   const struct judge_calibration *cal);
/* The proposal just made (state proposed) is known to the caller as ID (its journal's): the controller uses that
 * id from now on. 0, or -EALREADY when no proposal was just made. */
int controller_set_id(struct controller *ctl, uint64_t id);
/* The write of the last SET_ARM ended (OK false: it failed). 0, or -EALREADY when no write was awaited. */
int controller_write_done(struct controller *ctl, bool ok);
/* KNOB's live value differs from what the agent wrote. Ends the trial or proposal on KNOB; 0 either way. */
int controller_conflict(struct controller *ctl, const char *knob);
/* An operator reverted KNOB. Ends the trial or proposal on KNOB; 0 either way. */
int controller_operator_revert(struct controller *ctl, const char *knob);
/* The causes checked at CHECKED_MS (the doctor's findings whose fix is a knob: plan.h), replacing those before;
 * tried before any symptom's knob. More than PLAN_CAUSES_MAX are cut. A proposal not started yet of the value a
 * cause from the pool proved for the same symptom takes that cause's prior (plan_cause.prior_*) for its trial. */
void controller_set_causes(struct controller *ctl, const struct plan_cause *causes, size_t n, int64_t checked_ms);
/* Pause: no proposal and no start until controller_resume; a calibration or trial is rolled back. */
void controller_pause(struct controller *ctl);
/* Resume after controller_pause. */
void controller_resume(struct controller *ctl);
/* Switch to MODE. 0, or -EINVAL for a mode outside the enum. */
int controller_set_mode(struct controller *ctl, enum controller_mode mode);
/* The gate of a pool's trials ([fleet]: a slot of the pool's max_in_trial, held by the caller): while closed, no
 * calibration or trial starts (a proposal ready to start waits, its reason "waits for a trial slot of the pool: WHY",
 * and expires as any waiting proposal); one under way goes on. Open by default. */
void controller_set_gate(struct controller *ctl, bool open, const char *why);

/* The peers' figures for trial pair PAIR (the report's control_pair): D, the mean over PEERS hosts of the pool not in
 * trial of the objective's signed log ratio between the pair's B and A windows (judge_set_control); ALL when every
 * peer that was asked has answered (the pair is judged at the next tick; otherwise when the wait ends, on what came
 * last). PEERS 0: none could tell (the pair is judged on its own). 0, or -ESTALE when PAIR does not wait. */
int controller_set_control(struct controller *ctl, unsigned pair, double d, unsigned peers, bool all);
/* The state for the API. */
void controller_report(const struct controller *ctl, struct controller_report *out);
/* The current proposal, or NULL when there is none. */
const struct plan_proposal *controller_proposal(const struct controller *ctl);
/* The trial's evidence: the running estimate during a trial, else the last trial's (verdict NONE before any). */
const struct judge_evidence *controller_evidence(const struct controller *ctl);
/* The detectors' last evaluation (made in state observe). */
const struct detect_report *controller_detect_report(const struct controller *ctl);

/* "observe", "propose", "auto"; "?" outside the enum. */
const char *controller_mode_name(enum controller_mode mode);
/* MODE of NAME: 0 or -EINVAL. */
int controller_mode_parse(const char *name, enum controller_mode *mode);
/* "observe", "proposed", "awaiting", "calibrating", "trial", "verdict", "cooldown". */
const char *controller_state_name(enum controller_state state);
/* "propose", "set_arm", "keep", "revert", "withdraw", "note". */
const char *controller_intent_name(enum controller_intent_kind kind);
/* "none", "A", "B". */
const char *controller_arm_name(enum controller_arm arm);

#endif
