/*
 * plan: from a detect report, the policies and the knobs' current values, one proposal or the reason for none.
 *
 * Owns the choice of the knob (the policies whose trigger names an active detector, in a documented order), the
 * next value by the policy's step rule toward its bound, the trial plan the proposal carries, and the memory of
 * what was tried: a cooldown per knob after a revert, reverted values that are not proposed again and directions
 * that are not climbed again until conditions change. It must not write knobs, run trials or judge them (the
 * controller and the judge do), and must not read files. Pure: no I/O, no clock (NOW is an argument), and the same
 * inputs give the same proposal.
 *
 * Order (documented in one place, here): causes first (struct plan_cause: the doctor's findings whose fix the agent
 * can make, demand before limits), then the symptoms' knobs. A knob's trigger must fire on a valid, sustained
 * reading of an actionable report, and while causes are in play (plan_next's CAUSES) nothing is proposed before
 * they were checked under the load of now. Candidates are ranked by (1) their detector, in the order of enum
 * detect_id (files out, lost connections, then lost packets, then CPU placement and latency, then efficiency and
 * leaks), (2) policies with approval = auto first (their authors marked them safe to try alone), (3) knob name,
 * byte order. Two causes
 * hold others back, also on a reading that is not valid yet but saw an event in the last ticks (recent): while
 * nginx is out of files (file_limit) only file_limit's knobs are tried (the fix or nothing); while the workers
 * run out of connections, the listen-overflow knobs are passed over (the queue fills behind workers that cannot
 * take a connection: the cause is worker_connections, the overflows its symptom). The CPU maps of RPS and IRQ
 * affinity step from where the NET_RX load is (the report's cpus): the knob POLICY.DEV of the busiest receiver,
 * the hot CPU taken out of RPS sets that hold it or the idlest CPU added, an IRQ on the hot CPU moved to the
 * idlest CPU (ngx-autotune.policy(5) has the rules). The first
 * candidate that is not blocked (disabled, no step rule, unknown value, at its bound, cooling down, a remembered
 * failure, refused by policy_check, not the binding limit) is proposed.
 */
#ifndef NGXAT_PLAN_H
#define NGXAT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detect.h"
#include "knobval.h"
#include "policy.h"

#define PLAN_REVERTED_MAX 4   /* reverted values remembered per knob (the oldest is forgotten first) */
#define PLAN_SKIPPED_MAX 16   /* candidates whose reason for being passed over is reported */
#define PLAN_REASON_MAX 320
#define PLAN_EVIDENCE_MAX 400 /* a proposal's evidence (a reading or a finding); the journal keeps 400 */
#define PLAN_CAUSES_MAX 32    /* causes one plan_next weighs */
#define PLAN_CAUSE_ID_MAX 48

/* Which way a knob moves to fix its trigger's symptom. */
enum plan_dir {
	PLAN_UP,    /* raise (a longer queue, a bigger budget): most knobs */
	PLAN_DOWN,  /* lower (a shorter slice, a shorter FIN timeout) */
	PLAN_APART, /* a range: element 0 down and element 1 up (ip_local_port_range) */
};

/* How a trial of a proposal ended, as the controller tells the planner. */
enum plan_result {
	PLAN_KEPT,          /* the change stays */
	PLAN_HARM,          /* reverted: the objective got worse */
	PLAN_INCONCLUSIVE,  /* reverted: no gain large enough to keep */
	PLAN_ABORTED,       /* reverted: a guardrail tripped */
	PLAN_ERROR,         /* reverted: the measurement failed (collector errors); says nothing of the knob */
	PLAN_REJECTED,      /* an operator said no */
};

struct plan_config {
	unsigned pairs;             /* K: A/B pairs of a trial */
	int64_t measure_ms;         /* measured part of a block, after the policy's settle time */
	int64_t cooldown_ms;        /* a knob waits this long after a revert or rejection */
	int64_t memory_ms;          /* a remembered failure is forgotten after this long (load and time of day move) */
	double worse_factor;        /* the symptom this many times worse than at the failure counts as changed */
};

struct plan_trial {
	unsigned pairs;
	int64_t block_ms;           /* settle_ms + measure time */
	int64_t settle_ms;          /* dropped at the start of each block */
	int64_t settle_min_ms;      /* the policy's settle_min (its settle when unset): for blocks sized by the signal */
	struct policy_metric objective;
	struct policy_metric guardrails[POLICY_GUARDRAILS_MAX];
	size_t nguardrails;
	int64_t duration_ms;        /* expected: pairs x 2 blocks */
	double prior_effect;        /* a peer's standardized effect of the same change, the sequential rule's prior */
	unsigned prior_pairs;       /* (judge_set_prior) over that many pairs; 0: none */
};

/*
 * A cause: a finding of the doctor whose fix is a change the agent can make (core/doctor.h: the finding's
 * remedy), handed to the planner by the caller. Causes are tried before every symptom's knob: a symptom knob only
 * moves the failure elsewhere while its cause is open.
 */
enum plan_cause_kind {
	PLAN_CAUSE_DEMAND, /* the fix removes work or connections (upstream keepalive, a cheaper gzip level, the CPUs
			    * nginx uses): tried first */
	PLAN_CAUSE_LIMIT,  /* the fix raises a limit the load meets (worker_connections, the file limit, local ports) */
};

struct plan_cause {
	char id[PLAN_CAUSE_ID_MAX];           /* the finding ("nginx.worker_connections") */
	char knob[POLICY_NAME_MAX];           /* the knob that fixes it */
	char to[KNOBVAL_TEXT_MAX];            /* the value that fixes it; "" for one step of the knob's own rule */
	enum plan_cause_kind kind;
	int severity;                         /* the finding's: 0 info, 1 warning, 2 critical */
	char evidence[PLAN_EVIDENCE_MAX];     /* the finding's evidence, with its figures */
	bool while_fires;                     /* a cause only while SYMPTOM fires in the report plan_next is given
					       * (what the pool proved for that symptom: weighed in the very tick the
					       * symptom starts, before its own knob) */
	enum detect_id symptom;
	double prior_effect;                  /* what the pool's canary measured of it: the trial's prior */
	unsigned prior_pairs;                 /* (plan_trial.prior_*); 0: none */
};

/* The causes of one plan_next. FRESH: they were checked under the load of now (since the report became actionable);
 * while not fresh nothing is proposed, cause or symptom (plan_outcome.wants_causes asks for a check). */
struct plan_causes {
	const struct plan_cause *v;
	size_t n;
	bool fresh;
};

struct plan_proposal {
	char knob[POLICY_NAME_MAX];
	char from[KNOBVAL_TEXT_MAX];
	char to[KNOBVAL_TEXT_MAX];
	enum plan_dir dir;
	enum detect_id detector;    /* the symptom; DETECT_COUNT for a cause or an operator's proposal */
	char cause[PLAN_CAUSE_ID_MAX]; /* the cause's finding, "" for a symptom */
	double value;               /* the detector's value */
	enum policy_cmp op;         /* the policy's trigger: value OP threshold */
	double threshold;
	char evidence[PLAN_EVIDENCE_MAX];
	bool approval_required;     /* by the policy; the controller's mode may still ask */
	struct plan_trial trial;
};

struct plan_skip {
	char knob[POLICY_NAME_MAX];
	char reason[PLAN_REASON_MAX];
};

struct plan_outcome {
	bool proposed;
	bool wants_causes;          /* the causes were not checked under this load: the caller should have them
				     * checked (the doctor) before anything is proposed */
	struct plan_proposal prop;
	char reason[PLAN_REASON_MAX];           /* why nothing is proposed, or what is: one sentence */
	struct plan_skip skipped[PLAN_SKIPPED_MAX]; /* triggered knobs passed over, in rank order */
	size_t nskipped;
};

/* What a remembered failure was measured under, to tell when conditions have changed. */
struct plan_when {
	int64_t at_ms;
	uint64_t generation;        /* kept changes on the host before it */
	double symptom;             /* the detector's value */
	char from[KNOBVAL_TEXT_MAX];/* the knob's value it started from */
};

struct plan_knob_memory {
	char knob[POLICY_NAME_MAX];
	int64_t cooldown_until_ms;
	bool failed[3];             /* by enum plan_dir */
	struct plan_when failed_when[3];
	char reverted[PLAN_REVERTED_MAX][KNOBVAL_TEXT_MAX];
	struct plan_when reverted_when[PLAN_REVERTED_MAX];
	size_t nreverted, next_reverted;
};

struct plan_memory {
	struct plan_knob_memory *k;
	size_t n, cap;
	uint64_t generation;        /* changes kept so far */
};

/* CFG filled with the defaults: 8 pairs, 90 s measured per block, 1 h cooldown, 24 h memory, 2x worse. */
void plan_config_default(struct plan_config *cfg);
/* An empty memory. */
void plan_memory_init(struct plan_memory *mem);
/* Release MEM's memory; it is empty again. */
void plan_memory_free(struct plan_memory *mem);
/*
 * Remember how the trial of PROP ended at NOW_MS. Kept: a new generation (conditions changed for every knob).
 * Harm and aborted: the value is reverted and its direction failed. Inconclusive and rejected: the value is
 * reverted. Every result but kept starts the knob's cooldown; error only that. 0, -EINVAL (a bad result or
 * knob name), -ENOMEM or -ENOSPC (more than POLICY_KNOBS_MAX knobs).
 */
int plan_memory_record(struct plan_memory *mem, const struct plan_config *cfg, const struct plan_proposal *prop,
		       enum plan_result result, int64_t now_ms);

/*
 * The next proposal for REP under SET at NOW_MS, or none, into OUT (fully overwritten). CAUSES (NULL: none, and
 * symptoms need no check of them) are tried first: demand before limits, then by severity, then in their order;
 * each moves its knob to the cause's value, or as far toward it as the policy's largest step allows, under the
 * same rules as a symptom's knob (enabled, readable, not frozen, cooling down, remembered failures, policy_check).
 * VALUE_OF gives a knob's current (or planned) value as text, as policy_check's: 0, -ENOENT (absent or disabled
 * on this host), -EBUSY (frozen by a conflict) or another -errno; it is also handed to policy_check for
 * constraints. MEM may be NULL (nothing remembered). Returns 0 (OUT->proposed says whether there is a proposal), or
 * -EINVAL for a bad CFG.
 */
int plan_next(const struct policy_set *set, const struct detect_report *rep, const struct plan_causes *causes,
	      int (*value_of)(const char *knob, char *out, size_t outlen, void *ctx), void *ctx,
	      const struct plan_memory *mem, const struct plan_config *cfg, int64_t now_ms, struct plan_outcome *out);

/* OUT: an operator's proposal of KNOB FROM -> TO (already checked against its policy by the caller) with the trial
 * plan of its policy, as if the planner had made it; its detector is DETECT_COUNT (none) and its evidence WHY.
 * 0, -ENOENT (no policy for KNOB), -ERANGE (a value too long) or -EINVAL. */
int plan_operator(const struct policy_set *set, const char *knob, const char *from, const char *to, const char *why,
		  const struct plan_config *cfg, struct plan_proposal *out);

#define PLAN_LOADGEN_RPS "loadgen.rps"    /* saturated requests/s of the load generator's run */
#define PLAN_LOADGEN_P99 "loadgen.p99_ms" /* its p99 latency */

/* T's guardrails completed with what clients get (good responses per second, the synthetic client's failures and
 * median, the 5xx share), each one not named already and as room allows, marked implied: they end a trial on
 * clear harm only, and a shown gain of good responses outweighs the internal figures (judge.h). */
void plan_trial_outcomes(struct plan_trial *t);

/* T for loadgen mode: a cost-per-request objective becomes the load generator's saturated requests/s (higher), a
 * latency objective its p99 (lower); a loss objective (overflows, drops) stays. The generator's p99 guards what it
 * does not judge, and the policy's objective and guardrails stay as guardrails, as many as fit. */
void plan_loadgen_trial(struct plan_trial *t);

/* ENV for detect_evaluate from the knobs of SET that carry it (nginx keepalive_requests, ip_local_port_range);
 * NAN where there is no such knob or its value is unknown. */
void plan_detect_env(const struct policy_set *set,
		     int (*value_of)(const char *knob, char *out, size_t outlen, void *ctx), void *ctx,
		     struct detect_env *env);
/* The direction P moves to fix its trigger's symptom. */
enum plan_dir plan_direction(const struct knob_policy *p);
/* "kept", "harm", ... */
const char *plan_result_name(enum plan_result r);

#endif
