/*
 * controller: the tuning loop's state machine. See controller.h.
 */
#include "controller.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_MS 3600000LL
#define DAY_MS (24 * HOUR_MS)
#define SETTING_MAX_MS (365 * DAY_MS)
#define CALIB_PAIRS_MIN 3 /* judge_calibrate needs three d values */
#define CONTROLLER_ENV_MS 10000 /* the detectors' knob-derived thresholds are read this often */

struct controller_calib {
	char metric[POLICY_METRIC_MAX];
	int64_t at_ms;
	struct judge_calibration cal;
};

struct controller {
	struct controller_config cfg;
	const struct policy_set *set;
	controller_value_fn value_of;
	void *value_ctx;
	const struct metric_registry *reg;
	struct detect *det;
	struct detect_report rep;
	struct plan_memory mem;
	struct stats_rng rng;
	enum controller_state state;
	bool paused, approved, have_now;
	bool gate_closed;               /* controller_set_gate */
	char gate_why[CONTROLLER_TEXT_MAX / 2];
	bool prop_gross;            /* the proposal's symptom is gross (detect.h): no calibration before its trial */
	double prop_rate;           /* its events per second before the trial */
	bool sized;                 /* the trial's blocks were sized by the signal (size_blocks) */
	int64_t now_ms, since_ms, until_ms;
	uint64_t next_id;
	struct plan_proposal prop;           /* the current or last proposal */
	uint64_t id;                         /* its id while current, else 0 */
	char reason[CONTROLLER_TEXT_MAX];
	char advice[CONTROLLER_TEXT_MAX];    /* observe mode: the last advice noted */
	int64_t starts[CONTROLLER_RATE_MAX]; /* trial start times, a ring */
	size_t nstarts, next_start;
	/* The calibration or trial under way. */
	struct block_spec spec;
	struct block_acc acc;
	struct judge judge;
	struct block_summary sum[2];         /* [0] A, [1] B of the pair being measured */
	struct block_summary partial;        /* the B block so far, for the in-block trips */
	bool block_active, writing, tried, b_first;
	enum controller_arm in_force, want;
	int64_t block_end_ms, write_deadline_ms;
	int64_t measure_from_ms;    /* the block's measured part starts here (after its settle, its old workers) */
	int64_t measure_to_ms;      /* ... and ends before this (its accumulator's window) */
	int64_t drain_until_ms;     /* ... waiting for a reload's old workers no later than this */
	uint32_t old_id;            /* the id of nginx.workers_old, 0 until seen */
	bool reloads;               /* a write of the trial's knob reloads nginx (policy_kind_reloads_nginx) */
	bool block_written;         /* the block began with a write of its arm */
	unsigned beside_old;        /* this trial's blocks measured beside old workers that outlived the wait */
	unsigned pair, blk, pairs;           /* 1-based pair, its block (0 or 1), K */
	int64_t win[2][2];          /* the measured windows [from, to) of the pair's A [0] and B [1] blocks */
	unsigned control_pair;      /* the trial pair measured that waits for the peers' figures (0: none) ... */
	struct block_summary pend_sum[2]; /* ... its blocks, order and windows (the next pair runs meanwhile) */
	bool pend_b_first;
	int64_t pend_win[2][2];
	int64_t control_until_ms;   /* ... judged on what came by then */
	double control_d;           /* ... what came: the peers' mean d, over that many peers */
	unsigned control_peers;
	bool control_all;           /* ... every peer asked has answered */
	double a_overflows, a_unhandled, a_5xx_share; /* this trial's A blocks, for the in-block trips */
	double a_seconds;           /* ... and the seconds they measured */
	double a_requests;          /* ... and the requests they served, while each one's were read ... */
	bool a_requests_unread;     /* ... or one's were not */
	unsigned a_blocks;
	bool base_no_overflows, base_no_unhandled; /* the detectors' window before the trial had none ... */
	double base_ovf_s, base_unh_s;             /* ... over these seconds */
	double base_overflow_rate;  /* ... listen overflows/s (0: none or unknown): B's trip only above it */
	double base_rate;           /* the objective's events/s before the trial, when a detector counts it */
	double calib_d[JUDGE_PAIRS_MAX];
	unsigned calib_n, calib_void;
	struct judge_evidence ev;            /* the last trial's evidence */
	bool have_ev;
	struct controller_calib calib[CONTROLLER_CALIB_MAX];
	size_t ncalib;
	struct controller_calib *last_calib; /* the newest calibration, and how many were made */
	uint64_t calib_gen;
	struct controller_intents queue;     /* intents of reports between ticks, for the next tick */
	struct detect_env env;               /* the detectors' thresholds from knob values, and when they were read */
	int64_t env_at_ms;
	bool have_env;
	struct plan_cause causes[PLAN_CAUSES_MAX]; /* the caller's causes (the doctor's findings with a fix) */
	size_t ncauses;
	int64_t causes_checked_ms;           /* when they were checked; 0: never */
	bool wants_causes;                   /* the last plan held a symptom back for a check of its causes */
	int64_t actionable_since_ms;         /* since when the report has been actionable without a break (0: it is not) */
};

void controller_config_default(struct controller_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = CONTROLLER_MODE_PROPOSE;
	cfg->changes_per_hour = 2;
	cfg->cooldown_ms = 60000;
	cfg->proposal_ttl_ms = HOUR_MS;
	cfg->write_timeout_ms = 120000;
	cfg->tick_ms = 1000;
	cfg->calibrate_pairs = 4;
	cfg->calibrate_max_age_ms = 7 * DAY_MS;
	cfg->signal_events = 100;
	cfg->measure_min_ms = 8000;
	cfg->seed = 1;
	cfg->first_id = 1;
	cfg->control_wait_ms = 0;
	detect_config_default(&cfg->detect);
	plan_config_default(&cfg->plan);
	judge_config_default(&cfg->judge);
}

static bool ms_ok(int64_t v, int64_t lo)
{
	return v >= lo && v <= SETTING_MAX_MS;
}

static bool config_ok(const struct controller_config *c)
{
	struct judge_config jc = c->judge;

	if ((unsigned)c->mode > CONTROLLER_MODE_AUTO || c->changes_per_hour < 1 ||
	    c->changes_per_hour > CONTROLLER_RATE_MAX)
		return false;
	if (!ms_ok(c->cooldown_ms, 0) || !ms_ok(c->proposal_ttl_ms, 1) || !ms_ok(c->write_timeout_ms, 1) ||
	    !ms_ok(c->tick_ms, 1) || c->tick_ms > HOUR_MS || !ms_ok(c->calibrate_max_age_ms, 0))
		return false;
	if (c->calibrate_pairs && (c->calibrate_pairs < CALIB_PAIRS_MIN || c->calibrate_pairs > 16))
		return false;
	if (!(c->signal_events >= 0 && c->signal_events <= 1e9) || !ms_ok(c->measure_min_ms, 0) ||
	    !ms_ok(c->causes_wait_ms, 0) || !ms_ok(c->control_wait_ms, 0))
		return false;
	/* Every K the controller may hand the judge lies in 2..pairs_max. */
	jc.pairs = jc.pairs_max;
	return judge_config_check(&c->judge) == 0 && judge_config_check(&jc) == 0;
}

int controller_new(const struct controller_config *cfg, const struct policy_set *set, controller_value_fn value_of,
		   void *ctx, struct controller **out)
{
	struct controller *ctl;
	int rc;

	*out = NULL;
	if (!cfg || !set || !value_of || !config_ok(cfg))
		return -EINVAL;
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	ctl->cfg = *cfg;
	rc = detect_new(&cfg->detect, &ctl->det);
	if (rc < 0) {
		free(ctl);
		return rc;
	}
	ctl->set = set;
	ctl->value_of = value_of;
	ctl->value_ctx = ctx;
	plan_memory_init(&ctl->mem);
	stats_rng_seed(&ctl->rng, cfg->seed);
	ctl->state = CONTROLLER_OBSERVE;
	ctl->next_id = cfg->first_id ? cfg->first_id : 1;
	ctl->ev.verdict = VERDICT_NONE;
	snprintf(ctl->reason, sizeof(ctl->reason), "starting: no frame yet");
	*out = ctl;
	return 0;
}

void controller_free(struct controller *ctl)
{
	if (!ctl)
		return;
	detect_free(ctl->det);
	plan_memory_free(&ctl->mem);
	free(ctl);
}

void controller_set_policies(struct controller *ctl, const struct policy_set *set)
{
	if (set)
		ctl->set = set;
	ctl->have_env = false;
}

/* ---- intents ---------------------------------------------------------------------------------------------- */

/* Text that may be cut short: reasons are for people, and a long value must not make them fail. */
__attribute__((format(printf, 3, 4))) static void put(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* A new intent at the end of the queue. The queue is sized for the most one tick makes (see CONTROLLER_INTENTS_MAX:
 * at most one final intent and one note from reports, then a set_arm or propose and a note), so only notes can be
 * lost, and they are dropped rather than anything else. */
static struct controller_intent *emit(struct controller *ctl, enum controller_intent_kind kind)
{
	struct controller_intents *q = &ctl->queue;
	struct controller_intent *in;

	if (q->n >= CONTROLLER_INTENTS_MAX) {
		size_t i;

		for (i = 0; i < q->n && q->v[i].kind != INTENT_NOTE; i++)
			;
		if (i == q->n)
			return NULL;
		memmove(&q->v[i], &q->v[i + 1], (q->n - i - 1) * sizeof(q->v[0]));
		q->n--;
	}
	in = &q->v[q->n++];
	memset(in, 0, sizeof(*in));
	in->kind = kind;
	in->id = ctl->id;
	snprintf(in->knob, sizeof(in->knob), "%s", ctl->id ? ctl->prop.knob : "");
	in->verdict = VERDICT_NONE;
	return in;
}

__attribute__((format(printf, 2, 3))) static void note(struct controller *ctl, const char *fmt, ...)
{
	struct controller_intent *in = emit(ctl, INTENT_NOTE);
	va_list ap;

	if (!in)
		return;
	va_start(ap, fmt);
	vsnprintf(in->text, sizeof(in->text), fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3))) static void set_reason(struct controller *ctl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctl->reason, sizeof(ctl->reason), fmt, ap);
	va_end(ap);
}

static void enter(struct controller *ctl, enum controller_state st, int64_t until_ms)
{
	ctl->state = st;
	ctl->since_ms = ctl->now_ms;
	ctl->until_ms = until_ms;
}

/* ---- rate limit ------------------------------------------------------------------------------------------- */

static unsigned starts_last_hour(const struct controller *ctl)
{
	unsigned n = 0;

	for (size_t i = 0; i < ctl->nstarts; i++)
		n += ctl->starts[i] > ctl->now_ms - HOUR_MS && ctl->starts[i] <= ctl->now_ms;
	return n;
}

/* When the oldest start within the hour leaves it: the next time one more trial fits. */
static int64_t rate_free_at(const struct controller *ctl)
{
	int64_t oldest = INT64_MAX;

	for (size_t i = 0; i < ctl->nstarts; i++)
		if (ctl->starts[i] > ctl->now_ms - HOUR_MS && ctl->starts[i] < oldest)
			oldest = ctl->starts[i];
	return oldest == INT64_MAX ? ctl->now_ms : oldest + HOUR_MS;
}

static void record_start(struct controller *ctl)
{
	size_t cap = ctl->cfg.changes_per_hour;

	ctl->starts[ctl->next_start] = ctl->now_ms;
	ctl->next_start = (ctl->next_start + 1) % cap;
	if (ctl->nstarts < cap)
		ctl->nstarts++;
}

/* ---- ending ----------------------------------------------------------------------------------------------- */

static enum plan_result plan_result_of(enum judge_verdict v)
{
	switch (v) {
	case VERDICT_KEEP:
		return PLAN_KEPT;
	case VERDICT_REVERT:
		return PLAN_HARM;
	case VERDICT_INCONCLUSIVE:
		return PLAN_INCONCLUSIVE;
	case VERDICT_ABORTED:
		return PLAN_ABORTED;
	default:
		return PLAN_ERROR;
	}
}

static void remember(struct controller *ctl, enum plan_result r)
{
	/* Only -ENOMEM or a full table can fail here; the proposal is then merely not remembered. */
	(void)plan_memory_record(&ctl->mem, &ctl->cfg.plan, &ctl->prop, r, ctl->now_ms);
}

static void clear_trial(struct controller *ctl)
{
	ctl->control_pair = 0;
	ctl->block_active = false;
	ctl->writing = false;
	ctl->approved = false;
	ctl->id = 0;
}

/* The proposal ends without a trial: nothing of it was written. R is what the planner remembers (none: -1). */
static void withdraw(struct controller *ctl, enum judge_verdict v, int r, const char *why)
{
	struct controller_intent *in = emit(ctl, INTENT_WITHDRAW);

	if (in) {
		in->verdict = v;
		snprintf(in->text, sizeof(in->text), "%s", why);
	}
	if (r >= 0)
		remember(ctl, (enum plan_result)r);
	set_reason(ctl, "proposal %llu (%s) withdrawn: %s", (unsigned long long)ctl->id, ctl->prop.knob, why);
	clear_trial(ctl);
	enter(ctl, CONTROLLER_OBSERVE, 0);
}

/*
 * The trial ends with V and WHY; the planner remembers R. The final intent says which value stays and whether it
 * must be written: it must unless the arm that stays is known to be in force, and never when NO_WRITE (a conflict
 * or an operator's revert: the live value is someone else's).
 */
static void end_trial(struct controller *ctl, enum judge_verdict v, enum plan_result r, bool no_write, const char *why)
{
	bool keep = v == VERDICT_KEEP;
	struct controller_intent *in;

	if (ctl->state == CONTROLLER_CALIBRATING) {
		withdraw(ctl, v, (int)r, why);
		return;
	}
	ctl->ev = *judge_evidence(&ctl->judge);
	ctl->ev.verdict = v;
	if (ctl->beside_old) {
		/* The note goes wherever the reason goes. */
		snprintf(ctl->ev.reason, sizeof(ctl->ev.reason), "%u block%s measured beside old nginx workers that "
			 "outlived a block's wait; %s", ctl->beside_old, ctl->beside_old == 1 ? "" : "s", why);
		why = ctl->ev.reason;
	} else {
		snprintf(ctl->ev.reason, sizeof(ctl->ev.reason), "%s", why);
	}
	ctl->have_ev = true;
	in = emit(ctl, keep ? INTENT_KEEP : INTENT_REVERT);
	if (in) {
		in->arm = keep ? CONTROLLER_ARM_B : CONTROLLER_ARM_A;
		snprintf(in->value, sizeof(in->value), "%s", keep ? ctl->prop.to : ctl->prop.from);
		in->write = !no_write && (ctl->writing || ctl->in_force != in->arm);
		in->tried = ctl->tried;
		in->verdict = v;
		in->harm = r == PLAN_HARM || r == PLAN_ABORTED;
		snprintf(in->text, sizeof(in->text), "%s", why);
		in->ev = &ctl->ev;
	}
	remember(ctl, r);
	/* In a pool, which pairs had the peers as their control group, and why the others had not. */
	if (ctl->cfg.control_wait_ms && ctl->ev.nvalid)
		note(ctl, "change %llu (%s): %u of %u valid pairs judged against the pool's peers%s",
		     (unsigned long long)ctl->id, ctl->prop.knob, ctl->ev.ncontrolled, ctl->ev.nvalid,
		     ctl->ev.ncontrolled < ctl->ev.nvalid ? "; the others on their own (fewer than 2 peers not in trial "
							    "had a figure over their two blocks in time, or their mean moved "
							    "more than 4x)" : "");
	/* The windows hold the host before and during the trial, not the host that stays. */
	detect_reset(ctl->det);
	set_reason(ctl, "%s %s -> %s: %s: %s", ctl->prop.knob, ctl->prop.from, ctl->prop.to, judge_verdict_name(v),
		   why);
	clear_trial(ctl);
	ctl->in_force = CONTROLLER_ARM_NONE;
	enter(ctl, CONTROLLER_VERDICT, 0);
}

/* ---- blocks ----------------------------------------------------------------------------------------------- */

static void start_block(struct controller *ctl)
{
	int rc = block_acc_start(&ctl->acc, &ctl->spec, ctl->now_ms, ctl->now_ms + ctl->prop.trial.block_ms,
				 ctl->prop.trial.settle_ms);

	if (rc < 0) {
		end_trial(ctl, VERDICT_ERROR, PLAN_ERROR, false, "the block cannot be measured (bad block length)");
		return;
	}
	ctl->block_active = true;
	ctl->block_end_ms = ctl->now_ms + ctl->prop.trial.block_ms;
	ctl->measure_from_ms = ctl->now_ms + ctl->prop.trial.settle_ms;
	ctl->measure_to_ms = ctl->block_end_ms;
	ctl->drain_until_ms = ctl->block_end_ms;
	ctl->block_written = false; /* controller_write_done says otherwise */
}

/* Workers of a reload's previous generation in frame FR (nginx.workers_old), 0 when none or not measured. */
static double old_workers(struct controller *ctl, const struct metric_registry *reg, const struct frame *fr)
{
	double v;

	if (!ctl->old_id && metric_lookup(reg, "nginx.workers_old", &ctl->old_id) < 0)
		return 0;
	return frame_get(fr, ctl->old_id, &v) && isfinite(v) && v > 0 ? v : 0;
}

/*
 * A block measures one generation of nginx workers. A reload's old workers finish their connections after the
 * switch; on a saturated CPU they may outlive the settle (found on CI: gzip_comp_level 9 -> 5 under two busy loops,
 * the level-9 workers still compressing 1 MB answers for seconds into each B block, the new workers' accepts
 * stalled behind them, and B was stopped on overflows that were A's). Only a block that began with a write of its
 * arm that reloaded nginx: its old workers are that switch's (nginx_ctl lets an earlier generation go before it
 * reloads), and no other knob's write makes any (an operator's reload an hour ago that left a websocket's worker
 * behind is no switch of this trial's). While frame FR shows them, the measured part starts after it, its length
 * unchanged; no later than one measured length after the settle (a long download keeps an old worker for as long
 * as it lasts): then it measures beside them, and the trial's count says so. False when the block was moved
 * (nothing of FR counts).
 */
static bool block_one_generation(struct controller *ctl, const struct metric_registry *reg, const struct frame *fr)
{
	int64_t measure = ctl->prop.trial.block_ms - ctl->prop.trial.settle_ms;
	double old;

	if (!fr || !ctl->block_written || !ctl->reloads || fr->ts_ms < ctl->measure_from_ms || ctl->acc.frames > 0)
		return true;
	old = old_workers(ctl, reg, fr);
	if (old == 0 || ctl->drain_until_ms == INT64_MIN)
		return true;
	if (ctl->now_ms >= ctl->drain_until_ms) {
		ctl->beside_old++;
		ctl->drain_until_ms = INT64_MIN; /* counted once per block */
		return true;
	}
	if (block_acc_start(&ctl->acc, &ctl->spec, ctl->now_ms + 1, ctl->now_ms + 1 + measure, 0) < 0)
		return true;
	ctl->measure_from_ms = ctl->now_ms + 1;
	ctl->measure_to_ms = ctl->now_ms + 1 + measure;
	ctl->block_end_ms = ctl->now_ms + measure;
	set_reason(ctl, "trial of %s %s -> %s: pair %u, block %u waits for %.0f old nginx worker%s of the switch to "
		   "finish", ctl->prop.knob, ctl->prop.from, ctl->prop.to, ctl->pair, ctl->blk + 1, old,
		   old == 1 ? "" : "s");
	return false;
}

/* The next block of the pair: write its arm when another one is in force, else start measuring now. */
static void next_block(struct controller *ctl)
{
	enum controller_arm arm = CONTROLLER_ARM_A;
	struct controller_intent *in;

	if (ctl->state == CONTROLLER_TRIAL && (ctl->blk == 0) == ctl->b_first)
		arm = CONTROLLER_ARM_B;
	ctl->want = arm;
	if (arm == ctl->in_force) {
		start_block(ctl);
		return;
	}
	in = emit(ctl, INTENT_SET_ARM);
	if (in) {
		in->arm = arm;
		snprintf(in->value, sizeof(in->value), "%s", arm == CONTROLLER_ARM_B ? ctl->prop.to : ctl->prop.from);
		put(in->text, sizeof(in->text), "pair %u of %u, block %u: arm %s", ctl->pair, ctl->pairs, ctl->blk + 1,
		    controller_arm_name(arm));
	}
	ctl->writing = true;
	ctl->block_active = false;
	ctl->write_deadline_ms = ctl->now_ms + ctl->cfg.write_timeout_ms;
}

static void begin_pair(struct controller *ctl)
{
	ctl->pair++;
	ctl->blk = 0;
	ctl->b_first = stats_rng_next(&ctl->rng) & 1;
	next_block(ctl);
}

static struct controller_calib *calib_find(struct controller *ctl, const char *metric)
{
	for (size_t i = 0; i < ctl->ncalib; i++)
		if (strcmp(ctl->calib[i].metric, metric) == 0)
			return &ctl->calib[i];
	return NULL;
}

static void calib_store(struct controller *ctl, const struct judge_calibration *cal)
{
	struct controller_calib *c = calib_find(ctl, ctl->prop.trial.objective.metric);

	if (!c) {
		if (ctl->ncalib < CONTROLLER_CALIB_MAX) {
			c = &ctl->calib[ctl->ncalib++];
		} else {
			c = &ctl->calib[0];
			for (size_t i = 1; i < ctl->ncalib; i++)
				if (ctl->calib[i].at_ms < c->at_ms)
					c = &ctl->calib[i];
		}
	}
	snprintf(c->metric, sizeof(c->metric), "%s", ctl->prop.trial.objective.metric);
	c->at_ms = ctl->now_ms;
	c->cal = *cal;
	ctl->last_calib = c;
	ctl->calib_gen++;
}

static unsigned clamp_pairs(const struct controller *ctl, unsigned k)
{
	if (k < 2)
		k = 2;
	return k > ctl->cfg.judge.pairs_max ? ctl->cfg.judge.pairs_max : k;
}

static int start_judge(struct controller *ctl, unsigned k)
{
	struct judge_config jc = ctl->cfg.judge;

	jc.pairs = clamp_pairs(ctl, k);
	ctl->pairs = jc.pairs;
	if (judge_start(&ctl->judge, &jc, &ctl->prop.trial.objective, ctl->prop.trial.guardrails,
			ctl->prop.trial.nguardrails) < 0)
		return -EINVAL;
	/* A change the pool proved: the canary's effect centres the sequential rule's prior (a bad one is ignored). */
	if (ctl->prop.trial.prior_pairs)
		(void)judge_set_prior(&ctl->judge, ctl->prop.trial.prior_effect, ctl->prop.trial.prior_pairs);
	return 0;
}

/* K from a calibration: it may raise the plan's K for a noisy objective but never lower it, since the calibration
 * measured the objective only and the continuous guardrails need their pairs to show non-inferiority. */
static unsigned trial_pairs(const struct controller *ctl, const struct judge_calibration *cal)
{
	return cal->pairs > ctl->prop.trial.pairs ? cal->pairs : ctl->prop.trial.pairs;
}

/* The trial's judge, told the objective's noise when a calibration measured it (its sequential rule then needs
 * fewer pairs for the same evidence). */
static void begin_trial(struct controller *ctl, unsigned k, const struct judge_calibration *cal)
{
	if (start_judge(ctl, k) < 0 || (cal && cal->n >= 2 && judge_set_noise(&ctl->judge, cal->sd, cal->n) < 0)) {
		end_trial(ctl, VERDICT_ERROR, PLAN_ERROR, false, "the judge refuses the trial plan");
		return;
	}
	judge_set_baseline(&ctl->judge, ctl->base_rate, ctl->base_overflow_rate);
	/* The change starts here (a calibration writes nothing); a proposal was only made when this one fits. */
	record_start(ctl);
	enter(ctl, CONTROLLER_TRIAL, 0);
	ctl->pair = 0;
	ctl->a_blocks = 0;
	ctl->a_overflows = ctl->a_unhandled = ctl->a_5xx_share = ctl->a_seconds = ctl->a_requests = 0;
	ctl->a_requests_unread = false;
	ctl->beside_old = 0;
	if (ctl->sized)
		set_reason(ctl, "trial of %s %s -> %s: %u pairs of %.1f s blocks (%.1f s settle; sized by the signal: "
				"%.3g events/s before the trial)", ctl->prop.knob, ctl->prop.from, ctl->prop.to, ctl->pairs,
			   (double)ctl->prop.trial.block_ms / 1000.0, (double)ctl->prop.trial.settle_ms / 1000.0,
			   ctl->prop_rate);
	else
		set_reason(ctl, "trial of %s %s -> %s: %u pairs of %lld s blocks", ctl->prop.knob, ctl->prop.from,
			   ctl->prop.to, ctl->pairs, (long long)(ctl->prop.trial.block_ms / 1000));
	note(ctl, "%s", ctl->reason);
	begin_pair(ctl);
}

/*
 * Blocks sized by the signal: a gross symptom's events come fast, so a block holds signal_events of them (at the
 * rate the detector saw) long before the policy's block is over. The length is fixed for the whole trial before
 * it starts, the same for both arms (no block stops on its own data), within measure_min_ms and the policy's
 * measured time. The settle becomes the policy's settle_min: how long the knob's effect takes once its write is
 * verified live, which only the policy's author knows (a queue limit acts on the next packet; a change whose
 * effect ramps in needs its whole settle: with a 2 s settle the simulator's 4 s ramps hid a tripled p99 from the
 * first pair, tests/sim/test_loop_sim, regression).
 */
static void size_blocks(struct controller *ctl)
{
	struct plan_trial *t = &ctl->prop.trial;
	int64_t settle = t->settle_ms, measure = t->block_ms - settle, want;

	ctl->sized = false;
	/* In loadgen mode a block is one run of the load generator, whose length is the operator's. */
	if (!ctl->prop_gross || ctl->cfg.loadgen || !(ctl->cfg.signal_events > 0) || !(ctl->prop_rate > 0))
		return;
	want = (int64_t)ceil(1000.0 * ctl->cfg.signal_events / ctl->prop_rate);
	if (want < ctl->cfg.measure_min_ms)
		want = ctl->cfg.measure_min_ms;
	if (want < ctl->cfg.tick_ms)
		want = ctl->cfg.tick_ms;
	if (want >= measure && t->settle_min_ms >= settle)
		return;
	if (want < measure)
		measure = want;
	if (t->settle_min_ms > 0 && t->settle_min_ms < settle)
		settle = t->settle_min_ms;
	t->settle_ms = settle;
	t->block_ms = settle + measure;
	t->duration_ms = 2 * (int64_t)t->pairs * t->block_ms;
	ctl->sized = true;
}

/* The pool's cause that proves the proposal's value (the same knob and value, for its symptom, with a peer's
 * trial effect), or NULL. */
static const struct plan_cause *proven_by_pool(const struct controller *ctl)
{
	const struct knob_policy *p = policy_find(ctl->set, ctl->prop.knob);

	if (!p)
		return NULL;
	for (size_t i = 0; i < ctl->ncauses; i++) {
		const struct plan_cause *c = &ctl->causes[i];

		if (c->prior_pairs >= 2 && strcmp(c->knob, ctl->prop.knob) == 0 &&
		    knobval_text_equal(p->type, c->to, ctl->prop.to) &&
		    !(ctl->prop.detector < DETECT_COUNT && c->while_fires && c->symptom != ctl->prop.detector))
			return c;
	}
	return NULL;
}

/* The pool's cause the proposal confirms (its trial has that peer's prior), or NULL. */
static const struct plan_cause *confirms(const struct controller *ctl)
{
	return ctl->prop.trial.prior_pairs >= 2 ? proven_by_pool(ctl) : NULL;
}

/* Approved by the pool's rollout: [fleet] rollout, and the value still proven there. */
static bool rollout_approves(const struct controller *ctl)
{
	return ctl->cfg.rollout && confirms(ctl);
}

/* The approved proposal starts: calibration first when its objective's noise is unknown. */
static void start(struct controller *ctl)
{
	const char *names[BLOCK_METRICS_MAX];
	const struct plan_trial *t = &ctl->prop.trial;
	const struct detect_reading *ovf, *unh;
	struct controller_calib *c;
	const struct knob_policy *kp = policy_find(ctl->set, ctl->prop.knob);
	char why[CONTROLLER_TEXT_MAX];
	size_t n = 0;

	ctl->reloads = kp && policy_kind_reloads_nginx(kp->kind);
	if (!ctl->approved && !(ctl->cfg.mode == CONTROLLER_MODE_AUTO && !ctl->prop.approval_required)) {
		/* Started by the pool's rollout (may_start_here): the approval is the pool's, journaled as such. */
		const struct plan_cause *pc = confirms(ctl);
		struct controller_intent *in = emit(ctl, INTENT_APPROVED);

		ctl->approved = true;
		if (in)
			snprintf(in->text, sizeof(in->text), "%.300s", pc ? pc->evidence : "");
		note(ctl, "proposal %llu (%s %s -> %s) starts without an approval here: [fleet] rollout = yes, and the pool "
		     "proved it (%s)", (unsigned long long)ctl->id, ctl->prop.knob, ctl->prop.from, ctl->prop.to,
		     pc ? pc->evidence : "");
	}
	size_blocks(ctl);
	names[n++] = t->objective.metric;
	for (size_t i = 0; i < t->nguardrails && n < BLOCK_METRICS_MAX; i++)
		names[n++] = t->guardrails[i].metric;
	if (block_spec_init(&ctl->spec, names, n, ctl->cfg.tick_ms) < 0 || t->block_ms <= t->settle_ms ||
	    t->settle_ms < 0) {
		withdraw(ctl, VERDICT_ERROR, PLAN_ERROR, "its objective or guardrails cannot be measured in blocks");
		return;
	}
	ctl->in_force = CONTROLLER_ARM_A;
	ovf = &ctl->rep.r[DETECT_LISTEN_OVERFLOWS];
	unh = &ctl->rep.r[DETECT_WORKER_CONNECTIONS_EXHAUSTED];
	ctl->base_no_overflows = ovf->valid && ovf->value == 0;
	ctl->base_ovf_s = ovf->valid ? ovf->window_s : 0;
	ctl->base_overflow_rate = ovf->valid && ovf->value > 0 ? ovf->value : 0;
	ctl->base_rate = NAN;
	if (ctl->prop.detector < DETECT_COUNT) {
		const char *m = detect_counted_metric(ctl->prop.detector);
		const struct detect_reading *r = &ctl->rep.r[ctl->prop.detector];

		if (m && strcmp(m, t->objective.metric) == 0 && r->valid)
			ctl->base_rate = r->value;
	}
	ctl->base_no_unhandled = unh->valid && unh->value == 0;
	ctl->base_unh_s = unh->valid ? unh->window_s : 0;
	ctl->tried = false;
	ctl->writing = false;
	ctl->block_active = false;
	ctl->ev.verdict = VERDICT_NONE;
	ctl->have_ev = false;
	c = calib_find(ctl, t->objective.metric);
	if (c && ctl->now_ms - c->at_ms > ctl->cfg.calibrate_max_age_ms)
		c = NULL;
	/* A gross symptom is not calibrated first: four A/A pairs would be four pairs more of the fault. */
	if (ctl->cfg.calibrate_pairs && !c && !ctl->prop_gross) {
		if (start_judge(ctl, ctl->cfg.judge.pairs) < 0) {
			withdraw(ctl, VERDICT_ERROR, PLAN_ERROR, "the judge refuses the objective");
			return;
		}
		enter(ctl, CONTROLLER_CALIBRATING, 0);
		ctl->calib_n = ctl->calib_void = 0;
		ctl->pair = 0;
		set_reason(ctl, "calibrating %s: %u A/A pairs before the trial of %s", t->objective.metric,
			   ctl->cfg.calibrate_pairs, ctl->prop.knob);
		note(ctl, "%s", ctl->reason);
		begin_pair(ctl);
		return;
	}
	if (c && c->cal.refuse) {
		put(why, sizeof(why), "%s cannot be judged on this host: %s", t->objective.metric, c->cal.reason);
		withdraw(ctl, VERDICT_INCONCLUSIVE, PLAN_ERROR, why);
		return;
	}
	begin_trial(ctl, c ? trial_pairs(ctl, &c->cal) : t->pairs, c ? &c->cal : NULL);
}

/* A/A pair done: keep its d; after enough, size K or refuse. */
static void calib_pair_done(struct controller *ctl)
{
	struct judge_calibration cal;
	char why[CONTROLLER_TEXT_MAX];
	double d;

	if (judge_pair_effect(&ctl->judge, &ctl->sum[0], &ctl->sum[1], &d) == 0 && ctl->calib_n < JUDGE_PAIRS_MAX) {
		ctl->calib_d[ctl->calib_n++] = d;
	} else if (++ctl->calib_void > ctl->cfg.judge.max_void_pairs) {
		withdraw(ctl, VERDICT_ERROR, PLAN_ERROR, "A/A calibration: too many blocks without data");
		return;
	}
	if (ctl->calib_n < ctl->cfg.calibrate_pairs) {
		begin_pair(ctl);
		return;
	}
	if (judge_calibrate(&ctl->cfg.judge, ctl->calib_d, ctl->calib_n, &cal) < 0) {
		withdraw(ctl, VERDICT_ERROR, PLAN_ERROR, "A/A calibration failed");
		return;
	}
	calib_store(ctl, &cal);
	if (cal.refuse) {
		put(why, sizeof(why), "%s cannot be judged on this host: %s", ctl->prop.trial.objective.metric,
		    cal.reason);
		withdraw(ctl, VERDICT_INCONCLUSIVE, PLAN_ERROR, why);
		return;
	}
	note(ctl, "calibrated %s: %s", ctl->prop.trial.objective.metric, cal.reason);
	begin_trial(ctl, trial_pairs(ctl, &cal), &cal);
}

static void judge_pair(struct controller *ctl, const struct block_summary *sum, bool b_first, bool next);

/* The pair that waits for its peers' figures judged with what came (judge_set_control judges it on its own with too
 * few); the next pair, when none runs yet, begun if the judge wants one. */
static void judge_pending(struct controller *ctl)
{
	bool running = ctl->pair > ctl->control_pair;

	ctl->control_pair = 0;
	(void)judge_set_control(&ctl->judge, ctl->control_d, ctl->control_peers);
	judge_pair(ctl, ctl->pend_sum, ctl->pend_b_first, !running);
}

/*
 * A trial pair measured: judged now, or, in a pool (control_wait_ms), once its peers' figures over the same two
 * windows came or the wait ended (run_blocks). Meanwhile the next pair runs (its blocks watched by the trips as
 * any): the wait costs the trial no time, and the arm in force is never left unwatched; only after the planned
 * last pair does the trial hold, its arm in force, for the verdict.
 */
static void trial_pair_measured(struct controller *ctl)
{
	if (!ctl->cfg.control_wait_ms) {
		judge_pair(ctl, ctl->sum, ctl->b_first, true);
		return;
	}
	if (ctl->control_pair) {
		/* The next pair measured before its predecessor's figures came (blocks shorter than the wait). */
		judge_pending(ctl);
		if (ctl->state != CONTROLLER_TRIAL)
			return;
	}
	ctl->control_pair = ctl->pair;
	ctl->control_until_ms = ctl->now_ms + ctl->cfg.control_wait_ms;
	ctl->control_d = NAN;
	ctl->control_peers = 0;
	ctl->control_all = false;
	memcpy(ctl->pend_sum, ctl->sum, sizeof(ctl->pend_sum));
	memcpy(ctl->pend_win, ctl->win, sizeof(ctl->pend_win));
	ctl->pend_b_first = ctl->b_first;
	if (ctl->pair < ctl->pairs)
		begin_pair(ctl);
	else
		set_reason(ctl, "trial of %s %s -> %s: pair %u of %u measured; waiting up to %lld s for the pool's "
			   "peers' figures over its two blocks", ctl->prop.knob, ctl->prop.from, ctl->prop.to, ctl->pair,
			   ctl->pairs, (long long)((ctl->cfg.control_wait_ms + 999) / 1000));
}

int controller_set_control(struct controller *ctl, unsigned pair, double d, unsigned peers, bool all)
{
	if (ctl->state != CONTROLLER_TRIAL || !ctl->control_pair || pair != ctl->control_pair)
		return -ESTALE;
	ctl->control_d = d;
	ctl->control_peers = peers;
	ctl->control_all = all;
	return 0;
}

/* The pair SUM ([0] A, [1] B; B first when B_FIRST) judged: the verdict, or the next pair begun when NEXT. */
static void judge_pair(struct controller *ctl, const struct block_summary *sum, bool b_first, bool next)
{
	const struct judge_evidence *ev;
	bool done = false;

	if (judge_add_pair(&ctl->judge, &sum[0], &sum[1], b_first, &done) < 0) {
		end_trial(ctl, VERDICT_ERROR, PLAN_ERROR, false, "the judge refused a pair");
		return;
	}
	ev = judge_evidence(&ctl->judge);
	if (done) {
		end_trial(ctl, ev->verdict, plan_result_of(ev->verdict), false, ev->reason);
		return;
	}
	set_reason(ctl, "%s", ev->reason);
	if (next)
		begin_pair(ctl);
}

/* The A block just measured: the counts the in-block trips compare B against. */
static void note_a_block(struct controller *ctl, const struct block_summary *s)
{
	ctl->a_blocks++;
	/* As B's inside a block: the seconds measured, frames by the tick (frames lost under load are no exposure). */
	ctl->a_seconds += (double)s->frames * (double)ctl->cfg.tick_ms / 1000.0;
	if (s->requests_seen)
		ctl->a_requests += s->requests;
	else
		ctl->a_requests_unread = true;
	if (isfinite(s->overflows.events))
		ctl->a_overflows += s->overflows.events;
	if (isfinite(s->unhandled.events))
		ctl->a_unhandled += s->unhandled.events;
	if (isfinite(s->errors.events) && s->errors.exposure > 0)
		ctl->a_5xx_share = fmax(ctl->a_5xx_share, s->errors.events / s->errors.exposure);
}

/* Whether C's events came in every tick of the last CONTROLLER_TRIP_SUSTAIN_MS (two ticks at least). */
static bool sustained(const struct controller *ctl, const struct block_count *c)
{
	int64_t need = (CONTROLLER_TRIP_SUSTAIN_MS + ctl->cfg.tick_ms - 1) / ctl->cfg.tick_ms;

	return c->run >= (uint32_t)(need < 2 ? 2 : need);
}

/*
 * The judge's hard trips, on the B block so far: new listen overflows or unhandled connections while no A block of
 * the trial had any, more than chance puts in B (judge_new_events_shown), or a 5xx share above the ceiling while
 * the A blocks stayed under it. Before the first A block of the trial, the detectors' window before it stands in for
 * A for the two counts (it says "none" or not, over its seconds); the two counts only while they last (sustained);
 * the 5xx share waits for an A block (the pair's verdict comes one block later anyway). WHY gets the reason.
 */
static bool in_block_trip(struct controller *ctl, char *why, size_t len)
{
	const struct block_summary *b = &ctl->partial;
	bool no_ovf = ctl->a_blocks ? ctl->a_overflows == 0 : ctl->base_no_overflows;
	bool no_unh = ctl->a_blocks ? ctl->a_unhandled == 0 : ctl->base_no_unhandled;
	double b_s, xb, xa_ovf = ctl->a_blocks ? ctl->a_seconds : ctl->base_ovf_s;
	double xa_unh = ctl->a_blocks ? ctl->a_seconds : ctl->base_unh_s;
	const struct judge_config *jc = &ctl->judge.cfg;

	if (!ctl->a_blocks && !no_ovf && !no_unh)
		return false;
	block_acc_finish(&ctl->acc, &ctl->partial);
	b_s = (double)b->frames * (double)ctl->cfg.tick_ms / 1000.0; /* measured so far, not the block's plan */
	/* The requests each arm served where they were read, as the judge's hard trips (hard_trips): an arm that
	 * serves more accepts more connections (scenario-cpu here: gzip_comp_level 9 -> 5, about 3 times the requests,
	 * 13 overflows in a B block beside none in A, stopped a change that cut CPU per request 65%). */
	if (ctl->a_blocks && !ctl->a_requests_unread && ctl->a_requests > 0 && b->requests_seen && b->requests > 0) {
		xa_ovf = xa_unh = ctl->a_requests;
		xb = b->requests;
	} else {
		xb = b_s;
	}
	/* Overflows and dropped connections trip inside the block only while they last: a burst that came and went
	 * (found on CI: 6 overflows in one burst of a B block of gzip_comp_level 9 -> 5, none in A's 16 s, tripped the
	 * trial on a transient of the switch) is the pair's to weigh, over all its B and A blocks (hard_trips). */
	if (no_ovf && sustained(ctl, &b->overflows) &&
	    judge_new_events_shown(&ctl->judge, b->overflows.events, b->overflows.event_ticks, xa_ovf, xb) &&
	    judge_overflows_beyond_base(&ctl->judge, b->overflows.events, b_s)) {
		put(why, len, "new listen overflows: %.0f in the B block of pair %u, none in A (stopped inside the "
			      "block)", b->overflows.events, ctl->pair);
		return true;
	}
	if (no_unh && sustained(ctl, &b->unhandled) &&
	    judge_new_events_shown(&ctl->judge, b->unhandled.events, b->unhandled.event_ticks, xa_unh, xb)) {
		put(why, len, "accepts != handled: %.0f connections dropped in the B block of pair %u, none in A "
			      "(stopped inside the block)", b->unhandled.events, ctl->pair);
		return true;
	}
	if (ctl->a_blocks && isfinite(b->errors.events) && b->errors.events >= CONTROLLER_TRIP_MIN_5XX &&
	    b->errors.exposure > 0 && b->errors.events / b->errors.exposure > jc->error_ceiling &&
	    ctl->a_5xx_share <= jc->error_ceiling) {
		put(why, len, "5xx share %.2f%% in the B block of pair %u is above the %.2f%% ceiling (stopped inside "
			      "the block)", 100.0 * b->errors.events / b->errors.exposure, ctl->pair,
		    100.0 * jc->error_ceiling);
		return true;
	}
	return false;
}

/* One tick of a calibration or trial. */
static void run_blocks(struct controller *ctl, const struct metric_registry *reg, const struct frame *fr)
{
	char why[CONTROLLER_TEXT_MAX];
	struct block_summary *s;

	/* A pair whose peers' figures came (or whose wait ended) is judged whatever the next one does: a verdict does
	 * not wait for the next arm's write. */
	if (ctl->control_pair && (ctl->control_all || ctl->now_ms >= ctl->control_until_ms)) {
		judge_pending(ctl);
		if (ctl->state != CONTROLLER_TRIAL)
			return;
	}
	if (ctl->writing) {
		if (ctl->now_ms >= ctl->write_deadline_ms) {
			put(why, sizeof(why), "the write of arm %s was not done within %lld s",
			    controller_arm_name(ctl->want), (long long)(ctl->cfg.write_timeout_ms / 1000));
			end_trial(ctl, VERDICT_ERROR, PLAN_ERROR, false, why);
		}
		return;
	}
	if (!ctl->block_active)
		return;
	if (!block_one_generation(ctl, reg, fr))
		return;
	if (fr && block_acc_add(&ctl->acc, reg, fr) < 0) {
		end_trial(ctl, VERDICT_ERROR, PLAN_ERROR, false, "a frame could not be added to the block");
		return;
	}
	if (ctl->state == CONTROLLER_TRIAL && ctl->in_force == CONTROLLER_ARM_B &&
	    in_block_trip(ctl, why, sizeof(why))) {
		end_trial(ctl, VERDICT_ABORTED, PLAN_ABORTED, false, why);
		return;
	}
	if (ctl->now_ms < ctl->block_end_ms)
		return;
	ctl->block_active = false;
	s = &ctl->sum[ctl->in_force == CONTROLLER_ARM_B ? 1 : 0];
	if (ctl->state == CONTROLLER_CALIBRATING)
		s = &ctl->sum[ctl->blk];
	block_acc_finish(&ctl->acc, s);
	ctl->win[ctl->in_force == CONTROLLER_ARM_B][0] = ctl->measure_from_ms;
	ctl->win[ctl->in_force == CONTROLLER_ARM_B][1] = ctl->measure_to_ms;
	if (ctl->state == CONTROLLER_TRIAL && ctl->in_force == CONTROLLER_ARM_A)
		note_a_block(ctl, s);
	if (ctl->blk == 0) {
		ctl->blk = 1;
		next_block(ctl);
		return;
	}
	if (ctl->state == CONTROLLER_CALIBRATING)
		calib_pair_done(ctl);
	else
		trial_pair_measured(ctl);
}

/* ---- observing -------------------------------------------------------------------------------------------- */

/*
 * Before the window is full, only gross symptoms count (detect.h: a counter in every tick of the last few, far
 * above its threshold's rate): REP (a copy for the planner) keeps those sustained and active and nothing else,
 * and is actionable when those last ticks alone put the bottleneck here (requests every tick, most of their time
 * not upstream's). False when none is.
 */
static bool gross_only(struct detect_report *rep)
{
	bool any = false;

	for (size_t i = 0; i < DETECT_COUNT; i++) {
		rep->r[i].sustained = rep->r[i].sustained && rep->r[i].gross;
		rep->r[i].active = rep->r[i].active && rep->r[i].gross;
		any = any || rep->r[i].active;
	}
	if (!any || !rep->gross_here)
		return false;
	rep->actionable = true;
	return true;
}

static void observe(struct controller *ctl)
{
	const struct detect_report *rep = &ctl->rep;
	struct plan_causes causes;
	struct detect_report early;
	struct detect_env env;
	struct plan_outcome out;
	struct controller_intent *in;
	unsigned used;

	/* The knobs that set the detectors' thresholds (keepalive_requests, ip_local_port_range) are read every 10 s,
	 * not every tick: a read may enter nginx's network namespace (0.14 ms, measured), and they change rarely. */
	if (!ctl->have_env || ctl->now_ms - ctl->env_at_ms >= CONTROLLER_ENV_MS || ctl->now_ms < ctl->env_at_ms) {
		plan_detect_env(ctl->set, ctl->value_of, ctl->value_ctx, &ctl->env);
		ctl->env_at_ms = ctl->now_ms;
		ctl->have_env = true;
	}
	env = ctl->env;
	detect_evaluate(ctl->det, &env, &ctl->rep);
	if (ctl->paused) {
		set_reason(ctl, "paused by an operator; %s", ctl->rep.status);
		return;
	}
	ctl->prop_gross = false;
	if (ctl->rep.ticks < ctl->cfg.detect.window_ticks) {
		/* A proposal rests on a full window: at min_ticks one missing access-log tick is enough for the
		 * detectors to take request times as absent, and an upstream-bound host would look actionable. */
		early = ctl->rep;
		if (!gross_only(&early)) {
			set_reason(ctl, "watching: %zu of %zu ticks in the window; %s", ctl->rep.ticks,
				   ctl->cfg.detect.window_ticks, ctl->rep.status);
			ctl->actionable_since_ms = 0;
			return;
		}
		rep = &early;
	}
	/* Busy since the start of the ticks that made the report actionable (a full window, or a gross finding's last
	 * ticks): a check of the causes made after that start plus the wait has seen the load. */
	if (!rep->actionable)
		ctl->actionable_since_ms = 0;
	else if (!ctl->actionable_since_ms) {
		ctl->actionable_since_ms = ctl->now_ms - (int64_t)(1000.0 * fmin(rep->window_s, 3600.0));
		if (ctl->actionable_since_ms <= 0)
			ctl->actionable_since_ms = 1;
	}
	causes.v = ctl->causes;
	causes.n = ctl->ncauses;
	/* Nothing is proposed on causes checked before the host got busy (the doctor's check at the start sees no
	 * load: no demand on worker_connections, no clients per worker to size upstream keepalive by): the check must
	 * be made once it had been busy for causes_wait_ms (every probe has seen the load by then: the socket states
	 * are counted every 10 s). Without a wait the caller does not check causes on demand, and nothing waits. */
	causes.fresh = !ctl->cfg.causes_wait_ms ||
		       (ctl->actionable_since_ms > 0 &&
			ctl->causes_checked_ms >= ctl->actionable_since_ms + ctl->cfg.causes_wait_ms);
	ctl->wants_causes = false;
	if (plan_next(ctl->set, rep, &causes, ctl->value_of, ctl->value_ctx, &ctl->mem, &ctl->cfg.plan, ctl->now_ms,
		      &out) < 0) {
		set_reason(ctl, "the planner refuses its configuration");
		return;
	}
	if (!out.proposed) {
		set_reason(ctl, "%s", out.reason);
		ctl->advice[0] = '\0';
		ctl->wants_causes = out.wants_causes && ctl->actionable_since_ms > 0 &&
				    ctl->now_ms >= ctl->actionable_since_ms + ctl->cfg.causes_wait_ms;
		return;
	}
	if (ctl->cfg.mode == CONTROLLER_MODE_OBSERVE) {
		char advice[CONTROLLER_TEXT_MAX];

		put(advice, sizeof(advice), "observe mode: would propose %s %s -> %s (%s)", out.prop.knob,
		    out.prop.from, out.prop.to, detect_name(out.prop.detector));
		set_reason(ctl, "%s", out.reason);
		if (strcmp(advice, ctl->advice) != 0) {
			snprintf(ctl->advice, sizeof(ctl->advice), "%s", advice);
			note(ctl, "%s", advice);
		}
		return;
	}
	used = starts_last_hour(ctl);
	if (used >= ctl->cfg.changes_per_hour) {
		set_reason(ctl, "rate limit: %u changes in the last hour (at most %u), the next may start in %lld s; "
				"waiting: %s", used, ctl->cfg.changes_per_hour,
			   (long long)((rate_free_at(ctl) - ctl->now_ms + 999) / 1000), out.reason);
		return;
	}
	ctl->prop = out.prop;
	ctl->prop_gross = out.prop.detector < DETECT_COUNT && ctl->rep.r[out.prop.detector].gross;
	ctl->prop_rate = ctl->prop_gross ? ctl->rep.r[out.prop.detector].value : NAN;
	if (ctl->cfg.loadgen)
		plan_loadgen_trial(&ctl->prop.trial);
	ctl->id = ctl->next_id++;
	ctl->approved = false;
	in = emit(ctl, INTENT_PROPOSE);
	if (in) {
		snprintf(in->value, sizeof(in->value), "%s", ctl->prop.to);
		snprintf(in->text, sizeof(in->text), "%s", out.reason);
		in->prop = &ctl->prop;
	}
	set_reason(ctl, "proposal %llu: %s", (unsigned long long)ctl->id, out.reason);
	enter(ctl, CONTROLLER_PROPOSED, 0);
}

/* Whether the proposal may start as far as the operator and the mode say (the pool's gate aside). */
static bool may_start_here(const struct controller *ctl)
{
	if (ctl->paused || ctl->cfg.mode == CONTROLLER_MODE_OBSERVE)
		return false;
	return ctl->approved || (ctl->cfg.mode == CONTROLLER_MODE_AUTO && !ctl->prop.approval_required) ||
	       rollout_approves(ctl);
}

static bool may_start(const struct controller *ctl)
{
	return may_start_here(ctl) && !ctl->gate_closed;
}

/* The reason of a proposal that waits: for the end of the pause, an approval, or the pool's gate. */
static void waits(struct controller *ctl)
{
	char gate[sizeof(ctl->gate_why) + 48];

	snprintf(gate, sizeof(gate), "a trial slot of the pool (%s)", ctl->gate_why);
	set_reason(ctl, "proposal %llu (%s %s -> %s) waits for %s", (unsigned long long)ctl->id, ctl->prop.knob,
		   ctl->prop.from, ctl->prop.to, ctl->paused ? "the end of the pause" : may_start_here(ctl) ? gate :
		   "an operator's approval");
}

void controller_set_gate(struct controller *ctl, bool open, const char *why)
{
	ctl->gate_closed = !open;
	snprintf(ctl->gate_why, sizeof(ctl->gate_why), "%s", why ? why : "");
}

/* ---- the tick --------------------------------------------------------------------------------------------- */

int controller_tick(struct controller *ctl, int64_t now_ms, const struct metric_registry *reg, const struct frame *fr,
		    struct controller_intents *out)
{
	bool measuring;

	if (!ctl || !reg || !out || (ctl->reg && ctl->reg != reg))
		return -EINVAL;
	out->n = 0;
	if (fr && detect_push(ctl->det, reg, fr) < 0)
		return -EINVAL;
	ctl->reg = reg;
	measuring = ctl->state == CONTROLLER_CALIBRATING || ctl->state == CONTROLLER_TRIAL;
	if (ctl->have_now && now_ms < ctl->now_ms && measuring) {
		/* Blocks are windows of time: one that runs backwards measures nothing. */
		ctl->now_ms = now_ms;
		end_trial(ctl, VERDICT_ERROR, PLAN_ERROR, false, "time went backwards during the trial");
		goto done;
	}
	ctl->now_ms = now_ms;
	ctl->have_now = true;

	switch (ctl->state) {
	case CONTROLLER_OBSERVE:
		observe(ctl);
		break;
	case CONTROLLER_PROPOSED:
	case CONTROLLER_AWAITING:
		if (may_start(ctl)) {
			start(ctl);
		} else if (ctl->state == CONTROLLER_PROPOSED) {
			enter(ctl, CONTROLLER_AWAITING, now_ms + ctl->cfg.proposal_ttl_ms);
			waits(ctl);
		} else if (now_ms >= ctl->until_ms) {
			withdraw(ctl, VERDICT_NONE, PLAN_ERROR,
				 may_start_here(ctl) ? "not started in time (no trial slot of the pool)"
				 : ctl->approved ? "not started in time (paused)" : "not approved in time");
		} else if (may_start_here(ctl)) {
			waits(ctl); /* the pool's why may have changed */
		}
		break;
	case CONTROLLER_CALIBRATING:
	case CONTROLLER_TRIAL:
		run_blocks(ctl, reg, fr);
		break;
	case CONTROLLER_VERDICT:
		enter(ctl, CONTROLLER_COOLDOWN, now_ms + ctl->cfg.cooldown_ms);
		break;
	case CONTROLLER_COOLDOWN:
		if (now_ms >= ctl->until_ms) {
			enter(ctl, CONTROLLER_OBSERVE, 0);
			observe(ctl);
		}
		break;
	}
done:
	out->n = ctl->queue.n;
	memcpy(out->v, ctl->queue.v, ctl->queue.n * sizeof(out->v[0]));
	ctl->queue.n = 0;
	return 0;
}

/* ---- reports from the caller ------------------------------------------------------------------------------ */

static bool waiting(const struct controller *ctl)
{
	return ctl->state == CONTROLLER_PROPOSED || ctl->state == CONTROLLER_AWAITING;
}

int controller_approved(struct controller *ctl, uint64_t id)
{
	if (!waiting(ctl) || id == 0 || id != ctl->id)
		return -ENOENT;
	ctl->approved = true;
	set_reason(ctl, "proposal %llu approved%s", (unsigned long long)id, ctl->paused ? "; it starts on resume" : "");
	return 0;
}

int controller_rejected(struct controller *ctl, uint64_t id)
{
	if (!waiting(ctl) || id == 0 || id != ctl->id)
		return -ENOENT;
	remember(ctl, PLAN_REJECTED);
	set_reason(ctl, "proposal %llu (%s) rejected by an operator", (unsigned long long)id, ctl->prop.knob);
	clear_trial(ctl);
	enter(ctl, CONTROLLER_OBSERVE, 0);
	return 0;
}

int controller_write_done(struct controller *ctl, bool ok)
{
	char why[CONTROLLER_TEXT_MAX];

	if (!ctl->writing)
		return -EALREADY;
	ctl->writing = false;
	if (!ok) {
		ctl->in_force = CONTROLLER_ARM_NONE;
		put(why, sizeof(why), "the write of arm %s (%s) failed", controller_arm_name(ctl->want),
		    ctl->want == CONTROLLER_ARM_B ? ctl->prop.to : ctl->prop.from);
		end_trial(ctl, VERDICT_ERROR, PLAN_ERROR, false, why);
		return 0;
	}
	ctl->in_force = ctl->want;
	if (ctl->want == CONTROLLER_ARM_B)
		ctl->tried = true;
	start_block(ctl);
	ctl->block_written = true;
	return 0;
}

int controller_operator_propose(struct controller *ctl, const struct plan_proposal *prop, uint64_t id, char *err,
				size_t errlen)
{
	if (!prop || !id) {
		put(err, errlen, "no proposal");
		return -EINVAL;
	}
	if (ctl->cfg.mode == CONTROLLER_MODE_OBSERVE) {
		put(err, errlen, "the tuning loop is in observe mode: it runs no trial (apply at once instead)");
		return -EPERM;
	}
	if (ctl->state != CONTROLLER_OBSERVE && ctl->state != CONTROLLER_COOLDOWN && ctl->state != CONTROLLER_VERDICT) {
		if (ctl->id)
			put(err, errlen, "proposal %llu (%s %s -> %s) is %s: one trial on the host at a time",
			    (unsigned long long)ctl->id, ctl->prop.knob, ctl->prop.from, ctl->prop.to,
			    controller_state_name(ctl->state));
		else
			put(err, errlen, "the tuning loop is %s: one trial on the host at a time",
			    controller_state_name(ctl->state));
		return -EBUSY;
	}
	/* The operator's request is its approval; the rate limit is for the agent's own proposals, but the trial
	 * counts toward it like any other start. */
	ctl->prop = *prop;
	ctl->prop_gross = false;
	ctl->prop.approval_required = true;
	if (ctl->cfg.loadgen)
		plan_loadgen_trial(&ctl->prop.trial);
	ctl->id = id;
	if (ctl->next_id <= id)
		ctl->next_id = id + 1;
	ctl->approved = true;
	set_reason(ctl, "proposal %llu by an operator: %s %s -> %s%s", (unsigned long long)id, prop->knob, prop->from,
		   prop->to, ctl->paused ? "; it starts on resume" : "");
	enter(ctl, CONTROLLER_AWAITING, ctl->now_ms + ctl->cfg.proposal_ttl_ms);
	return 0;
}

int controller_remember(struct controller *ctl, const struct plan_proposal *prop, enum plan_result result,
			int64_t at_ms)
{
	return plan_memory_record(&ctl->mem, &ctl->cfg.plan, prop, result, at_ms);
}

uint64_t controller_last_calibration(const struct controller *ctl, char *metric, size_t metriclen, int64_t *at_ms,
				     struct judge_calibration *cal)
{
	if (!ctl->last_calib)
		return 0;
	snprintf(metric, metriclen, "%s", ctl->last_calib->metric);
	*at_ms = ctl->last_calib->at_ms;
	*cal = ctl->last_calib->cal;
	return ctl->calib_gen;
}

int controller_restore_calibration(struct controller *ctl, const char *metric, int64_t at_ms,
				   const struct judge_calibration *cal)
{
	struct controller_calib *c;

	if (!metric || !metric[0] || strlen(metric) >= POLICY_METRIC_MAX || !cal || cal->n < CALIB_PAIRS_MIN ||
	    cal->pairs < 2 || cal->pairs > ctl->cfg.judge.pairs_max || !isfinite(cal->sd) || cal->sd < 0)
		return -EINVAL;
	c = calib_find(ctl, metric);
	if (c && c->at_ms >= at_ms)
		return 0;
	if (!c) {
		if (ctl->ncalib == CONTROLLER_CALIB_MAX)
			return -ENOSPC;
		c = &ctl->calib[ctl->ncalib++];
	}
	snprintf(c->metric, sizeof(c->metric), "%s", metric);
	c->at_ms = at_ms;
	c->cal = *cal;
	return 0;
}

int controller_set_id(struct controller *ctl, uint64_t id)
{
	const char *rest;
	char prefix[40];

	if (ctl->state != CONTROLLER_PROPOSED || !ctl->id || !id)
		return -EALREADY;
	/* The reason names the proposal: keep it in step with the id the caller's journal gave it. */
	snprintf(prefix, sizeof(prefix), "proposal %llu: ", (unsigned long long)ctl->id);
	rest = strncmp(ctl->reason, prefix, strlen(prefix)) == 0 ? ctl->reason + strlen(prefix) : NULL;
	if (rest) {
		char tail[CONTROLLER_TEXT_MAX];

		snprintf(tail, sizeof(tail), "%s", rest);
		set_reason(ctl, "proposal %llu: %s", (unsigned long long)id, tail);
	}
	ctl->id = id;
	if (ctl->next_id <= id)
		ctl->next_id = id + 1;
	return 0;
}

/* End whatever is under way on KNOB: withdraw a proposal, or end a calibration or trial without a write. */
static void end_on_knob(struct controller *ctl, const char *knob, enum plan_result r, const char *who)
{
	char why[CONTROLLER_TEXT_MAX];

	if (!knob || !ctl->id || strcmp(knob, ctl->prop.knob) != 0)
		return;
	put(why, sizeof(why), "%s %s", ctl->prop.knob, who);
	if (waiting(ctl) || ctl->state == CONTROLLER_CALIBRATING)
		withdraw(ctl, VERDICT_ABORTED, (int)r, why);
	else if (ctl->state == CONTROLLER_TRIAL)
		end_trial(ctl, VERDICT_ABORTED, r, true, why);
}

int controller_conflict(struct controller *ctl, const char *knob)
{
	end_on_knob(ctl, knob, PLAN_ERROR, "was changed by someone else (a conflict): the agent leaves it alone");
	return 0;
}

int controller_operator_revert(struct controller *ctl, const char *knob)
{
	end_on_knob(ctl, knob, PLAN_REJECTED, "was reverted by an operator");
	return 0;
}

/* Roll back a calibration or trial under way, for a pause or the observe mode. */
static void stop_acting(struct controller *ctl, const char *why)
{
	if (ctl->state == CONTROLLER_TRIAL)
		end_trial(ctl, VERDICT_ABORTED, PLAN_ERROR, false, why);
	else if (ctl->state == CONTROLLER_CALIBRATING)
		withdraw(ctl, VERDICT_ABORTED, PLAN_ERROR, why);
}

/* A proposal not started yet (it waits for an approval or for the pool's slot) of the very value a peer has since
 * proved for the same symptom takes that peer's effect as its trial's prior: in a pool whose hosts met the same fault
 * at once, each proposed its own before the first verdict, and then waited behind the canary (bench/fleet.sh).
 * Only the prior: the proposal, its evidence and its approval stay as they were. */
static void adopt_prior(struct controller *ctl)
{
	const struct plan_cause *c;

	if ((ctl->state != CONTROLLER_PROPOSED && ctl->state != CONTROLLER_AWAITING) || ctl->prop.trial.prior_pairs ||
	    !(c = proven_by_pool(ctl)) || !isfinite(c->prior_effect))
		return;
	ctl->prop.trial.prior_effect = c->prior_effect;
	ctl->prop.trial.prior_pairs = c->prior_pairs;
	note(ctl, "proposal %llu (%s -> %s): a peer proved the same value since; its trial's effect is this trial's "
	     "prior (%s)", (unsigned long long)ctl->id, ctl->prop.knob, ctl->prop.to, c->evidence);
}

void controller_set_causes(struct controller *ctl, const struct plan_cause *causes, size_t n, int64_t checked_ms)
{
	ctl->ncauses = n < PLAN_CAUSES_MAX ? n : PLAN_CAUSES_MAX;
	if (ctl->ncauses)
		memcpy(ctl->causes, causes, ctl->ncauses * sizeof(ctl->causes[0]));
	ctl->causes_checked_ms = checked_ms;
	adopt_prior(ctl);
}

void controller_pause(struct controller *ctl)
{
	if (ctl->paused)
		return;
	ctl->paused = true;
	stop_acting(ctl, "paused by an operator");
	note(ctl, "paused by an operator");
}

void controller_resume(struct controller *ctl)
{
	if (!ctl->paused)
		return;
	ctl->paused = false;
	note(ctl, "resumed by an operator");
}

int controller_set_mode(struct controller *ctl, enum controller_mode mode)
{
	if ((unsigned)mode > CONTROLLER_MODE_AUTO)
		return -EINVAL;
	if (mode == ctl->cfg.mode)
		return 0;
	ctl->cfg.mode = mode;
	note(ctl, "mode %s", controller_mode_name(mode));
	if (mode == CONTROLLER_MODE_OBSERVE) {
		stop_acting(ctl, "the mode was set to observe");
		if (waiting(ctl))
			withdraw(ctl, VERDICT_NONE, -1, "the mode was set to observe");
	}
	return 0;
}

/* ---- reports ---------------------------------------------------------------------------------------------- */

void controller_report(const struct controller *ctl, struct controller_report *out)
{
	const struct judge_evidence *ev = controller_evidence(ctl);
	bool measuring = ctl->state == CONTROLLER_CALIBRATING || ctl->state == CONTROLLER_TRIAL;

	memset(out, 0, sizeof(*out));
	out->state = ctl->state;
	out->mode = ctl->cfg.mode;
	out->paused = ctl->paused;
	out->approved = ctl->approved;
	out->wants_slot = (ctl->state == CONTROLLER_PROPOSED || ctl->state == CONTROLLER_AWAITING) && may_start_here(ctl);
	out->id = ctl->id;
	out->confirming = ctl->id && confirms(ctl);
	if (ctl->id) {
		snprintf(out->knob, sizeof(out->knob), "%s", ctl->prop.knob);
		snprintf(out->from, sizeof(out->from), "%s", ctl->prop.from);
		snprintf(out->to, sizeof(out->to), "%s", ctl->prop.to);
	}
	out->writing = ctl->writing;
	out->arm = measuring && !ctl->writing ? ctl->in_force : CONTROLLER_ARM_NONE;
	if (ctl->state == CONTROLLER_TRIAL) {
		out->pair = ctl->pair;
		out->pairs = ctl->pairs;
	} else if (ctl->state == CONTROLLER_CALIBRATING) {
		out->calib_pair = ctl->pair;
		out->calib_pairs = ctl->cfg.calibrate_pairs;
	}
	out->since_ms = ctl->since_ms;
	out->until_ms = measuring ? (ctl->block_active ? ctl->block_end_ms : 0) : ctl->until_ms;
	out->nvalid = ctl->state == CONTROLLER_TRIAL || ctl->have_ev ? ev->nvalid : 0;
	out->effect = out->effect_lo = out->effect_hi = NAN;
	if (ctl->state == CONTROLLER_TRIAL || ctl->have_ev) {
		out->effect = ev->effect;
		out->effect_lo = ev->effect_lo;
		out->effect_hi = ev->effect_hi;
	}
	out->verdict = ctl->have_ev ? ctl->ev.verdict : VERDICT_NONE;
	out->changes_last_hour = starts_last_hour(ctl);
	out->changes_per_hour = ctl->cfg.changes_per_hour;
	snprintf(out->reason, sizeof(out->reason), "%s", ctl->reason);
	out->wants_causes = ctl->wants_causes && ctl->state == CONTROLLER_OBSERVE;
	out->causes_checked_ms = ctl->causes_checked_ms;
	out->ncauses = ctl->ncauses;
	if (ctl->state == CONTROLLER_TRIAL && ctl->control_pair) {
		out->control_pair = ctl->control_pair;
		memcpy(out->control_a_ms, ctl->pend_win[0], sizeof(out->control_a_ms));
		memcpy(out->control_b_ms, ctl->pend_win[1], sizeof(out->control_b_ms));
		out->control_until_ms = ctl->control_until_ms;
		snprintf(out->control_metric, sizeof(out->control_metric), "%s", ctl->prop.trial.objective.metric);
		out->control_dir = ctl->prop.trial.objective.dir;
	}
}

const struct plan_proposal *controller_proposal(const struct controller *ctl)
{
	return ctl->id ? &ctl->prop : NULL;
}

const struct judge_evidence *controller_evidence(const struct controller *ctl)
{
	return ctl->state == CONTROLLER_TRIAL ? judge_evidence(&ctl->judge) : &ctl->ev;
}

const struct detect_report *controller_detect_report(const struct controller *ctl)
{
	return &ctl->rep;
}

const char *controller_mode_name(enum controller_mode mode)
{
	switch (mode) {
	case CONTROLLER_MODE_OBSERVE:
		return "observe";
	case CONTROLLER_MODE_PROPOSE:
		return "propose";
	case CONTROLLER_MODE_AUTO:
		return "auto";
	}
	return "?";
}

int controller_mode_parse(const char *name, enum controller_mode *mode)
{
	for (int m = CONTROLLER_MODE_OBSERVE; m <= CONTROLLER_MODE_AUTO; m++) {
		if (name && strcmp(name, controller_mode_name((enum controller_mode)m)) == 0) {
			*mode = (enum controller_mode)m;
			return 0;
		}
	}
	return -EINVAL;
}

const char *controller_state_name(enum controller_state state)
{
	static const char *const names[] = {
		[CONTROLLER_OBSERVE] = "observe",     [CONTROLLER_PROPOSED] = "proposed",
		[CONTROLLER_AWAITING] = "awaiting",   [CONTROLLER_CALIBRATING] = "calibrating",
		[CONTROLLER_TRIAL] = "trial",         [CONTROLLER_VERDICT] = "verdict",
		[CONTROLLER_COOLDOWN] = "cooldown",
	};

	return (unsigned)state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

const char *controller_intent_name(enum controller_intent_kind kind)
{
	static const char *const names[] = {
		[INTENT_PROPOSE] = "propose", [INTENT_SET_ARM] = "set_arm",   [INTENT_KEEP] = "keep",
		[INTENT_REVERT] = "revert",   [INTENT_WITHDRAW] = "withdraw", [INTENT_NOTE] = "note",
		[INTENT_APPROVED] = "approved",
	};

	return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

const char *controller_arm_name(enum controller_arm arm)
{
	switch (arm) {
	case CONTROLLER_ARM_A:
		return "A";
	case CONTROLLER_ARM_B:
		return "B";
	default:
		return "none";
	}
}
