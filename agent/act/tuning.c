#include "act/tuning.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/controller.h"
#include "core/doctor.h"
#include "core/judge.h"
#include "core/plan.h"
#include "act/engine.h"
#include "fleet/fleet.h"
#include "api/events.h"
#include "api/verdict_json.h"
#include "store/store.h"
#include "log.h"
#include "proto.h"

#define EVIDENCE_MAX 4096

struct tuning {
	struct controller *ctl;
	struct engine *e;
	const struct policy_set *set; /* what the controller was given last */
	uint64_t prop_id;             /* the controller's proposal ... */
	int64_t change_id;            /* ... and its journal row (one at a time: invariant 1) */
	char knob[POLICY_NAME_MAX];
	int64_t now_ms;
	struct plan_config plan;      /* the controller's: an operator's proposal gets the same trial plan */
	struct store *st;
	int64_t calib_max_age_ms;     /* the controller's: older calibrations are not read back */
	uint64_t calib_gen;           /* calibrations already kept in the audit trail */
	int64_t causes_checked_ms;    /* the doctor's check the controller was last given */
	char from[KNOBVAL_TEXT_MAX], to[KNOBVAL_TEXT_MAX]; /* the proposal's, and the symptom it is for ("") */
	char symptom[32];
	struct tuning_verdict last;   /* the last verdict carried out (tuning_last_verdict) */
	struct plan_cause doctor[PLAN_CAUSES_MAX]; /* the causes of the doctor's last check */
	struct plan_cause pool[PLAN_CAUSES_MAX];   /* what the pool proved (tuning_pool) */
	size_t ndoctor, npool;
};

/* A symptom's knob waits for a check of its causes made once the symptom has lasted this long, so that every probe
 * has seen it (the socket states, connections established to nginx among them, are counted every 10 s); the doctor
 * runs when asked. */
#define CAUSES_WAIT_MS 10000
_Static_assert(CONFIG_WINDOW_TICKS_MAX <= DETECT_WINDOW_MAX, "[tuning] window: more ticks than a detector holds");

static int value_of(const char *knob, char *out, size_t outlen, void *ctx)
{
	struct tuning *t = ctx;

	return engine_value(t->e, knob, out, outlen);
}

#define RECALL_MAX 256 /* journal rows read back at start for the planner's memory */

struct recall {
	char knob[STORE_KNOB_MAX];
	char from[STORE_VALUE_MAX], to[STORE_VALUE_MAX];
	enum plan_result result;
	int64_t at_ms;
};

struct recall_list {
	struct recall *v;
	size_t n;
	int64_t since_ms;
};

/* How a journal row's trial ended, for the planner; -1 when it says nothing about the value (a withdrawal, a revert
 * at stop or after a restart). The verdict's evidence names it; the reason tells an operator's end from a trip. */
static int result_of(const struct change_row *row)
{
	const char *d = row->detail;

	switch (row->state) {
	case CHANGE_KEPT:
		return PLAN_KEPT;
	case CHANGE_REVERTED:
		if (strstr(d, "\"verdict\":\"revert\""))
			return PLAN_HARM;
		if (strstr(d, "\"verdict\":\"inconclusive\""))
			return PLAN_INCONCLUSIVE;
		return -1;
	case CHANGE_ABORTED:
		if (strstr(d, "reverted by an operator"))
			return PLAN_REJECTED;
		return strstr(d, "stopped inside the block") ? PLAN_ABORTED : PLAN_ERROR;
	case CHANGE_REJECTED:
		return strncmp(d, "rejected by ", 12) == 0 ? PLAN_REJECTED : -1;
	case CHANGE_FAILED:
		return PLAN_ERROR;
	default:
		return -1;
	}
}

static int recall_cb(void *ctx, const struct change_row *row)
{
	struct recall_list *l = ctx;
	struct recall *r;
	int res;

	if (row->updated_ms < l->since_ms)
		return 0;
	res = result_of(row);
	if (row->kind != CHANGE_KIND_CHANGE || res < 0 || l->n >= RECALL_MAX)
		return 0;
	r = &l->v[l->n++];
	snprintf(r->knob, sizeof(r->knob), "%s", row->knob);
	snprintf(r->from, sizeof(r->from), "%s", row->old_value);
	snprintf(r->to, sizeof(r->to), "%s", row->new_value);
	r->result = (enum plan_result)res;
	r->at_ms = row->updated_ms;
	return 0;
}

/* The planner's memory from the journal: what was kept, reverted or rejected within its memory, oldest first, so
 * that a restart does not make the agent propose again a value the judge just reverted. */
static void recall(struct tuning *t, struct store *st, int64_t now_ms)
{
	struct recall_list l = {.since_ms = now_ms - t->plan.memory_ms};
	size_t kept = 0;

	l.v = calloc(RECALL_MAX, sizeof(*l.v));
	if (!l.v)
		return;
	if (store_changes_query(st, "", 0, 0, 4 * RECALL_MAX, recall_cb, &l) < 0)
		log_warn("tuning: the journal could not be read back: the planner starts without memory");
	for (size_t i = l.n; i-- > 0;) {
		struct plan_proposal prop;

		if (plan_operator(t->set, l.v[i].knob, l.v[i].from, l.v[i].to, "", &t->plan, &prop) < 0)
			continue; /* its policy is gone */
		if (controller_remember(t->ctl, &prop, l.v[i].result, l.v[i].at_ms) == 0)
			kept++;
	}
	if (kept)
		log_info("tuning: the planner remembers %zu trial%s of the last %lld h from the journal", kept,
			 kept == 1 ? "" : "s", (long long)(t->plan.memory_ms / 3600000));
	free(l.v);
}

#define CALIB_ACTION "calibrate"

/* A calibration is kept as an audit row of the agent (action "calibrate"): the operator sees what the noise of an
 * objective was found to be, and a restart reads it back instead of measuring it again. */
static void keep_calibration(struct tuning *t, int64_t now_ms)
{
	struct judge_calibration cal;
	struct audit_row *row;
	char metric[POLICY_METRIC_MAX];
	int64_t at_ms;
	uint64_t gen = controller_last_calibration(t->ctl, metric, sizeof(metric), &at_ms, &cal);

	if (gen == t->calib_gen)
		return;
	t->calib_gen = gen;
	if (!(row = calloc(1, sizeof(*row))))
		return;
	if (verdict_json_calibration_row(metric, at_ms, &cal, row->detail, sizeof(row->detail)) < 0) {
		free(row);
		return;
	}
	row->ts = now_ms;
	snprintf(row->actor, sizeof(row->actor), "agent");
	snprintf(row->action, sizeof(row->action), CALIB_ACTION);
	snprintf(row->knob, sizeof(row->knob), "%s", t->knob);
	snprintf(row->outcome, sizeof(row->outcome), "%s", cal.refuse ? "refused" : "ok");
	if (store_audit_append(t->st, row) < 0)
		log_warn("tuning: the calibration of %s could not be kept: it is measured again after a restart", metric);
	else
		events_audit(row);
	free(row);
}

static int calib_cb(void *ctx, const struct audit_row *row)
{
	struct tuning *t = ctx;
	struct judge_calibration cal;
	char metric[POLICY_METRIC_MAX];
	int64_t at_ms;

	if (strcmp(row->action, CALIB_ACTION) != 0 ||
	    verdict_json_calibration_read(row->detail, metric, sizeof(metric), &at_ms, &cal) < 0)
		return 0;
	if (controller_restore_calibration(t->ctl, metric, at_ms, &cal) == 0)
		log_info("tuning: the noise of %s is known from a calibration of %lld h ago: %s", metric,
			 (long long)((t->now_ms - at_ms) / 3600000), cal.reason);
	return 0;
}

int tuning_new(const struct config *cfg, struct engine *e, struct store *st, int64_t now_ms, struct tuning **out,
	       char *err, size_t errlen)
{
	struct tuning *t = calloc(1, sizeof(*t));
	struct controller_config cc;
	int r;

	if (!t)
		return -ENOMEM;
	controller_config_default(&cc);
	if (controller_mode_parse(cfg->mode, &cc.mode) < 0) {
		snprintf(err, errlen, "[tuning] mode: '%s'", cfg->mode);
		free(t);
		return -EINVAL;
	}
	cc.changes_per_hour = (unsigned)cfg->changes_per_hour;
	cc.cooldown_ms = cfg->cooldown_ms;
	if (cfg->window_ms) { /* in ticks (config_load bounds it); a reading is valid from half of it */
		cc.detect.window_ticks = (size_t)(cfg->window_ms / cfg->tick_ms);
		cc.detect.min_ticks = cc.detect.window_ticks / 2;
	}
	cc.plan.pairs = (unsigned)cfg->pairs;
	cc.plan.measure_ms = cfg->block_ms;
	cc.calibrate_pairs = (unsigned)cfg->calibrate_pairs;
	cc.causes_wait_ms = CAUSES_WAIT_MS;
	cc.tick_ms = cfg->tick_ms;
	cc.loadgen = strcmp(cfg->measure, "loadgen") == 0;
	cc.rollout = cfg->fleet_endpoints[0] && cfg->fleet_rollout;
	/* In a pool, each trial pair waits for its peers' figures over its two blocks (the control group). */
	cc.control_wait_ms = cfg->fleet_endpoints[0] ? FLEET_CONTROL_WAIT_MS : 0;
	/* A new order of blocks each run: a fixed seed gave every run the same order (at 500 ms ticks, AB eight times
	 * in a row), which a periodic load could line up with. Logged, so a run can be replayed. */
	cc.seed = ((uint64_t)now_ms * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)cfg->tick_ms;
	t->e = e;
	t->plan = cc.plan;
	t->set = engine_policies(e);
	r = controller_new(&cc, t->set, value_of, t, &t->ctl);
	if (r < 0) {
		snprintf(err, errlen, "the tuning controller refused its settings: %s", strerror(-r));
		free(t);
		return r;
	}
	t->st = st;
	t->now_ms = now_ms;
	t->calib_max_age_ms = cc.calibrate_max_age_ms;
	log_info("tuning: block order seed %llu", (unsigned long long)cc.seed);
	recall(t, st, now_ms);
	if (cc.calibrate_pairs &&
	    store_audit_query(st, now_ms - t->calib_max_age_ms, 0, "", "agent", 0, 2000, calib_cb, t) < 0)
		log_warn("tuning: the audit trail could not be read back: objectives are calibrated again");
	t->calib_gen = 0;
	*out = t;
	return 0;
}

void tuning_free(struct tuning *t)
{
	if (!t)
		return;
	controller_free(t->ctl);
	free(t);
}

static void on_arm_done(void *ctx, bool ok)
{
	struct tuning *t = ctx;

	controller_write_done(t->ctl, ok);
}

static enum change_state final_state(const struct controller_intent *in)
{
	if (in->kind == INTENT_KEEP)
		return CHANGE_KEPT;
	switch (in->verdict) {
	case VERDICT_ABORTED: return CHANGE_ABORTED;
	case VERDICT_ERROR: return CHANGE_FAILED;
	default: return CHANGE_REVERTED; /* revert or inconclusive: the old value stays */
	}
}

/* The proposal's values and symptom, for its verdict's record. */
static void remember(struct tuning *t, const char *from, const char *to, const char *symptom)
{
	snprintf(t->from, sizeof(t->from), "%s", from);
	snprintf(t->to, sizeof(t->to), "%s", to);
	snprintf(t->symptom, sizeof(t->symptom), "%s", symptom);
}

const struct tuning_verdict *tuning_last_verdict(const struct tuning *t)
{
	return t->last.change_id ? &t->last : NULL;
}

static void carry_out(struct tuning *t, const struct controller_intent *in)
{
	char err[512];
	int r = 0;

	switch (in->kind) {
	case INTENT_PROPOSE: {
		/* The planner checked the value against its policy and the live values (plan.c): it is carried as is. */
		struct engine_checked c;
		char why[512];
		int64_t id = 0;

		snprintf(c.knob, sizeof(c.knob), "%s", in->knob);
		snprintf(c.from, sizeof(c.from), "%s", in->prop ? in->prop->from : "");
		snprintf(c.to, sizeof(c.to), "%s", in->prop ? in->prop->to : "");
		snprintf(why, sizeof(why), "%.400s", in->prop ? in->prop->evidence : in->text);
		r = engine_journal_proposal(t->e, &c, "agent", why, NULL, t->now_ms, &id, err, sizeof(err));
		if (r < 0) {
			log_warn("tuning: proposal for %s not journaled: %s", in->knob, err);
			controller_rejected(t->ctl, in->id);
			return;
		}
		/* One id for people: the controller's texts name the journal's row. */
		t->prop_id = controller_set_id(t->ctl, (uint64_t)id) == 0 ? (uint64_t)id : in->id;
		t->change_id = id;
		snprintf(t->knob, sizeof(t->knob), "%s", in->knob);
		remember(t, c.from, c.to, in->prop && in->prop->detector < DETECT_COUNT ? detect_name(in->prop->detector) : "");
		events_proposal(id, in->knob, in->prop ? in->prop->from : "", in->prop ? in->prop->to : "", API_PROPOSAL_MADE,
				"agent", why, t->now_ms);
		break;
	}
	case INTENT_WITHDRAW:
		if (t->change_id) {
			engine_close_proposal(t->e, t->change_id, CHANGE_REJECTED, "agent", in->text, t->now_ms);
			events_proposal(t->change_id, t->knob, NULL, NULL, API_PROPOSAL_WITHDRAWN, "agent", in->text, t->now_ms);
		}
		t->change_id = 0;
		break;
	case INTENT_SET_ARM: {
		struct controller_report rep;

		controller_report(t->ctl, &rep);
		events_trial_arm(t->change_id, t->knob, controller_arm_name(in->arm), in->value, &rep, t->now_ms);
		r = engine_set_arm(t->e, t->change_id, in->value, controller_arm_name(in->arm), t->now_ms, on_arm_done, t,
				   err, sizeof(err));
		if (r < 0) {
			log_warn("tuning: arm %s of change %lld not written: %s", controller_arm_name(in->arm),
				 (long long)t->change_id, err);
			controller_write_done(t->ctl, false);
		}
		break;
	}
	case INTENT_KEEP:
	case INTENT_REVERT: {
		char *ev = malloc(EVIDENCE_MAX);

		if (ev) {
			int n = snprintf(ev, EVIDENCE_MAX, "%s; ", in->text);
			json_t *evj = in->ev ? verdict_json_evidence(in->ev) : NULL;

			/* The verdict's sentence, then its evidence when it fits in the row: without the figures of
			 * each pair when the whole does not (a trial of many pairs and guardrails). */
			if (evj && verdict_json_text(evj, ev + n, EVIDENCE_MAX - (size_t)n) == -ENOSPC)
				json_object_del(evj, API_K_PAIRS_DETAIL);
			if (!evj || (!ev[n] && verdict_json_text(evj, ev + n, EVIDENCE_MAX - (size_t)n) < 0))
				ev[n > 2 ? n - 2 : 0] = '\0';
			json_decref(evj);
		}
		r = engine_end_trial(t->e, t->change_id, final_state(in), in->write ? in->value : NULL, ev ? ev : in->text,
				     t->now_ms);
		events_verdict(t->change_id, t->knob, judge_verdict_name(in->verdict), change_state_name(final_state(in)),
			       in->text, in->ev, t->now_ms);
		if (r < 0 && r != -EALREADY)
			log_err("tuning: the verdict on change %lld could not be carried out: %s", (long long)t->change_id,
				strerror(-r));
		free(ev);
		/* What the pool hears of it ([fleet]): the controller forgets its proposal at the verdict. */
		t->last.change_id = t->change_id;
		t->last.verdict = in->verdict;
		snprintf(t->last.knob, sizeof(t->last.knob), "%s", t->knob);
		snprintf(t->last.from, sizeof(t->last.from), "%s", t->from);
		snprintf(t->last.to, sizeof(t->last.to), "%s", t->to);
		snprintf(t->last.symptom, sizeof(t->last.symptom), "%s", t->symptom);
		snprintf(t->last.reason, sizeof(t->last.reason), "%s", in->ev && in->ev->reason[0] ? in->ev->reason : in->text);
		t->last.effect = in->ev ? in->ev->seq_effect : NAN;
		t->last.pairs = in->ev ? in->ev->nvalid : 0;
		t->last.harm = in->harm;
		t->change_id = 0;
		break;
	}
	case INTENT_NOTE:
		log_info("tuning: %s", in->text);
		break;
	case INTENT_APPROVED: {
		char detail[300];

		snprintf(detail, sizeof(detail), "approved by the pool's rollout ([fleet] rollout = yes): %.200s",
			 in->text);
		if (t->change_id) {
			engine_close_proposal(t->e, t->change_id, CHANGE_APPROVED, "pool", detail, t->now_ms);
			events_proposal(t->change_id, t->knob, NULL, NULL, API_PROPOSAL_APPROVED, "pool", detail,
					t->now_ms);
		}
		break;
	}
	}
}

void tuning_tick(struct tuning *t, int64_t now_ms, const struct metric_registry *reg, const struct frame *fr)
{
	struct controller_intents *in = malloc(sizeof(*in));

	if (!in)
		return;
	t->now_ms = now_ms;
	if (engine_policies(t->e) != t->set) {
		t->set = engine_policies(t->e);
		controller_set_policies(t->ctl, t->set);
	}
	/* What happened to the trial's knob outside the controller: a conflict, or an operator's revert. */
	if (t->change_id) {
		enum change_state st;

		if (engine_knob_in_conflict(t->e, t->knob))
			controller_conflict(t->ctl, t->knob);
		else if (engine_change_state(t->e, t->change_id, &st) == 0 &&
			 (st == CHANGE_REVERTED || st == CHANGE_ABORTED || st == CHANGE_FAILED)) {
			/* Ended outside the controller: an operator's revert (POST /v1/changes/ID/revert or /v1/revert).
			 * The engine has put the value back; the trial ends without another write. */
			controller_operator_revert(t->ctl, t->knob);
		}
	}
	if (controller_tick(t->ctl, now_ms, reg, fr, in) == 0) {
		struct controller_report rep;

		/* Before the intents: a verdict in this tick ends the trial, and its last pair is published first. */
		controller_report(t->ctl, &rep);
		if (t->change_id && (rep.state == CONTROLLER_TRIAL || rep.state == CONTROLLER_VERDICT))
			events_trial_progress(t->change_id, t->knob, controller_evidence(t->ctl), now_ms);
		for (size_t i = 0; i < in->n; i++)
			carry_out(t, &in->v[i]);
	}
	keep_calibration(t, now_ms);
	free(in);
}

int tuning_decide(struct tuning *t, int64_t change_id, bool approve, const char *actor, const char *comment,
		  int64_t now_ms, char *err, size_t errlen)
{
	char detail[300];
	int r;

	if (!t->change_id || change_id != t->change_id) {
		snprintf(err, errlen, "change %lld is not the proposal waiting for a decision", (long long)change_id);
		return -ENOENT;
	}
	r = approve ? controller_approved(t->ctl, t->prop_id) : controller_rejected(t->ctl, t->prop_id);
	if (r < 0) {
		snprintf(err, errlen, "change %lld is no longer waiting (%s)", (long long)change_id, strerror(-r));
		return r;
	}
	snprintf(detail, sizeof(detail), "%s by %s%s%.200s", approve ? "approved" : "rejected", actor,
		 comment && comment[0] ? ": " : "", comment ? comment : "");
	engine_close_proposal(t->e, change_id, approve ? CHANGE_APPROVED : CHANGE_REJECTED, actor, detail, now_ms);
	events_proposal(change_id, t->knob, NULL, NULL, approve ? API_PROPOSAL_APPROVED : API_PROPOSAL_REJECTED, actor,
			comment, now_ms);
	if (!approve)
		t->change_id = 0;
	return 0;
}

int tuning_operator_propose(struct tuning *t, const char *knob, const char *value, const char *actor, const char *why,
			    int64_t now_ms, int64_t *change_id, char *err, size_t errlen)
{
	struct plan_proposal prop;
	struct engine_checked c;
	char detail[300];
	struct controller_report rep;
	int64_t id = 0;
	int r;

	controller_report(t->ctl, &rep);
	/* A verdict is over once it is journaled: its one tick of state need not refuse the operator. */
	if (rep.state != CONTROLLER_OBSERVE && rep.state != CONTROLLER_COOLDOWN && rep.state != CONTROLLER_VERDICT) {
		snprintf(err, errlen, "the tuning loop is %s%s%s: one trial on the host at a time",
			 controller_state_name(rep.state), rep.id ? " with proposal of " : "", rep.id ? rep.knob : "");
		return -EBUSY;
	}
	if (rep.mode == CONTROLLER_MODE_OBSERVE) {
		snprintf(err, errlen, "the tuning loop is in observe mode: it runs no trial (apply at once with \"now\")");
		return -ENOTSUP;
	}
	/* The one validation of the value (invariant 4); from here it is carried checked to the journal and the write. */
	r = engine_check(t->e, knob, value, &c, err, errlen);
	if (r < 0)
		return r;
	r = plan_operator(engine_policies(t->e), knob, c.from, c.to, why, &t->plan, &prop);
	if (r < 0) {
		snprintf(err, errlen, "no trial plan for %s: %s", knob, strerror(-r));
		return r;
	}
	/* Approved by being asked for: journaled as proposed and approved in one step. */
	snprintf(detail, sizeof(detail), "approved by %s: an operator's proposal, tried against the judge", actor);
	r = engine_journal_proposal(t->e, &c, actor, prop.evidence, detail, now_ms, &id, err, errlen);
	if (r < 0)
		return r;
	/* Refused only for a state checked above in this same call: the row is closed again if it ever is. */
	r = controller_operator_propose(t->ctl, &prop, (uint64_t)id, err, errlen);
	if (r < 0) {
		engine_close_proposal(t->e, id, CHANGE_REJECTED, actor, err, now_ms);
		return r;
	}
	events_proposal(id, knob, c.from, c.to, API_PROPOSAL_APPROVED, actor, why, now_ms);
	t->prop_id = (uint64_t)id;
	t->change_id = id;
	snprintf(t->knob, sizeof(t->knob), "%s", knob);
	remember(t, c.from, c.to, "");
	*change_id = id;
	return 0;
}

/* The controller's causes: the pool's first (what another host proved is tried before a finding here), then the
 * doctor's, as of the doctor's last check. */
static void apply_causes(struct tuning *t)
{
	struct plan_cause *c = calloc(PLAN_CAUSES_MAX, sizeof(*c));
	size_t n = 0;

	if (!c)
		return; /* the causes stay as they were given last */
	for (size_t i = 0; i < t->npool && n < PLAN_CAUSES_MAX; i++)
		c[n++] = t->pool[i];
	for (size_t i = 0; i < t->ndoctor && n < PLAN_CAUSES_MAX; i++)
		c[n++] = t->doctor[i];
	controller_set_causes(t->ctl, c, n, t->causes_checked_ms);
	free(c);
}

void tuning_causes(struct tuning *t, const struct doctor_state *st)
{
	size_t n = 0;

	if (!st || st->checked_ms == t->causes_checked_ms)
		return;
	for (size_t i = 0; i < st->n && n < PLAN_CAUSES_MAX; i++) {
		const struct doctor_finding *f = &st->v[i].f;
		struct plan_cause *c = &t->doctor[n];

		if (!f->remedy.knob[0] || f->severity == DOCTOR_INFO)
			continue;
		memset(c, 0, sizeof(*c));
		snprintf(c->id, sizeof(c->id), "%s", f->id);
		snprintf(c->knob, sizeof(c->knob), "%s", f->remedy.knob);
		snprintf(c->to, sizeof(c->to), "%s", f->remedy.value);
		c->kind = f->remedy.limit ? PLAN_CAUSE_LIMIT : PLAN_CAUSE_DEMAND;
		c->severity = (int)f->severity;
		snprintf(c->evidence, sizeof(c->evidence), "%.*s", (int)sizeof(c->evidence) - 1, f->evidence);
		n++;
	}
	t->ndoctor = n;
	t->causes_checked_ms = st->checked_ms;
	apply_causes(t);
}

void tuning_pool(struct tuning *t, const struct plan_cause *pool, size_t n)
{
	t->npool = n < PLAN_CAUSES_MAX ? n : PLAN_CAUSES_MAX;
	memcpy(t->pool, pool, t->npool * sizeof(*pool));
	apply_causes(t);
}

const struct detect_report *tuning_detect_report(const struct tuning *t)
{
	return controller_detect_report(t->ctl);
}



bool tuning_wants_causes(const struct tuning *t)
{
	struct controller_report rep;

	controller_report(t->ctl, &rep);
	return rep.wants_causes;
}

void tuning_gate(struct tuning *t, bool open, const char *why)
{
	controller_set_gate(t->ctl, open, why);
}

int tuning_control(struct tuning *t, unsigned pair, double d, unsigned peers, bool all)
{
	return controller_set_control(t->ctl, pair, d, peers, all);
}

void tuning_pause(struct tuning *t, bool pause, const char *actor, int64_t now_ms)
{
	(void)now_ms;
	if (pause)
		controller_pause(t->ctl);
	else
		controller_resume(t->ctl);
	log_notice("tuning %s by %s", pause ? "paused" : "resumed", actor);
}

void tuning_report(const struct tuning *t, struct controller_report *out, int64_t *change_id)
{
	controller_report(t->ctl, out);
	*change_id = t->change_id;
}

const struct judge_evidence *tuning_evidence(const struct tuning *t)
{
	return controller_evidence(t->ctl);
}

bool tuning_block(const struct tuning *t, int64_t *start_ms, int64_t *end_ms, int64_t *settle_ms)
{
	const struct plan_proposal *p = controller_proposal(t->ctl);
	struct controller_report rep;

	controller_report(t->ctl, &rep);
	if ((rep.state != CONTROLLER_TRIAL && rep.state != CONTROLLER_CALIBRATING) || rep.arm == CONTROLLER_ARM_NONE ||
	    !rep.until_ms || !p)
		return false;
	*end_ms = rep.until_ms;
	*start_ms = rep.until_ms - p->trial.block_ms;
	*settle_ms = p->trial.settle_ms;
	return true;
}
