#include "loop.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "agent.h"
#include "api/api.h"
#include "core/controller.h"
#include "core/policy.h"
#include "core/judge.h"
#include "api/events.h"
#include "store/store.h"
#include "core/pool.h"
#include "diagnose/doctor.h"
#include "act/engine.h"
#include "act/loadgen.h"
#include "act/nginx_ctl.h"
#include "report.h"
#include "act/tuning.h"
#include "fleet/control.h"
#include "fleet/fleet.h"
#include "log.h"
#include "notify.h"
#include "priv/wclient.h"
#include "priv/wdump.h"
#include "strutil.h"

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int64_t uptime_s(const struct agent *a)
{
	return (int64_t)((uv_hrtime() / 1000000 - a->start_mono_ms) / 1000);
}

int64_t loop_stub_timeout_ms(int64_t configured, int64_t tick_ms)
{
	int64_t cap = tick_ms * 8 / 10;

	return configured < cap ? configured : cap;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* The median over the recent ticks of their CPU (WHAT 0), of the synthetic client's share (1), of the rest (2): the
 * client's requests cost what any client's connection costs the kernel (a fresh one on loopback carries both ends'
 * handshake), the rest is the agent's own work, the budget's (bench/tick-cost.sh). */
static double tick_cpu_median(const struct agent *a, int what)
{
	double v[AGENT_CPU_RING];
	size_t n = a->cpu_n < AGENT_CPU_RING ? a->cpu_n : AGENT_CPU_RING;

	if (n == 0)
		return NAN;
	for (size_t i = 0; i < n; i++)
		v[i] = what == 0 ? a->cpu_ring[i] : what == 1 ? a->client_ring[i] : a->cpu_ring[i] - a->client_ring[i];
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- status line ----------------------------------------------------------------------------------------- */

static bool frame_value(struct agent *a, const char *name, double *v)
{
	uint32_t id;

	return metric_lookup(a->reg, name, &id) == 0 && frame_get(&a->fr, id, v) && isfinite(*v);
}

static void build_summary(struct agent *a, const struct store_health *sh)
{
	const struct probe_health *bad = NULL;
	const char *bad_name = NULL, *pending = NULL;
	unsigned enabled = 0, ok = 0;
	double req, p99, ovf, cn, cf, ct, c50, c99;
	char rates[256] = "", why[256], m1[16], m2[16];
	size_t off = 0;

	for (int i = 0; i < PROBE_COUNT; i++) {
		const struct probe_health *h = sampler_health(a->sampler, (enum probe_id)i);

		if (!h->enabled)
			continue;
		enabled++;
		if (h->ok)
			ok++;
		else if (h->failures == 0 && !pending)
			/* Not reported yet: the synthetic client's first run ends with the next tick. */
			pending = sampler_probe_name((enum probe_id)i);
		else if (h->failures > 0 && !bad) {
			bad = h;
			bad_name = sampler_probe_name((enum probe_id)i);
		}
	}
	if (a->fr.dt_s > 0) {
		if (frame_value(a, "nginx.requests", &req) || frame_value(a, "http.requests", &req))
			off += (size_t)snprintf(rates + off, sizeof(rates) - off, "%.0f req/s, ", req / a->fr.dt_s);
		/* The access log's is the server's time (after accept, 1 ms resolution): a static answer is "<1",
		 * never 0. Beside it what the synthetic client saw, the accept queue included. */
		if (frame_value(a, "http.p99_ms", &p99)) {
			str_fmt_ms(m1, sizeof(m1), p99, false);
			off += (size_t)snprintf(rates + off, sizeof(rates) - off, "server p99 %s ms, ", m1);
		}
		if (off < sizeof(rates) && frame_value(a, "client.requests", &cn) && cn > 0 &&
		    frame_value(a, "client.failures", &cf) &&
		    frame_value(a, "client.timeouts", &ct)) {
			str_fmt_ms(m1, sizeof(m1), frame_value(a, "client.total_p50_ms", &c50) ? c50 : NAN, true);
			str_fmt_ms(m2, sizeof(m2), frame_value(a, "client.total_p99_ms", &c99) ? c99 : NAN, true);
			off += (size_t)snprintf(rates + off, sizeof(rates) - off,
						"client p50/p99 %s/%s ms (%.0f failed, %.0f timed out of %.0f), ", m1, m2,
						cf, ct, cn);
		}
		if (frame_value(a, "tcp.listen_overflows", &ovf) && off < sizeof(rates))
			snprintf(rates + off, sizeof(rates) - off, "%.0f listen overflows/s, ", ovf / a->fr.dt_s);
	}
	if (sh->degraded)
		snprintf(a->summary, sizeof(a->summary), "degraded: store not writable (%.200s); %sprobes %u/%u ok",
			 sh->reason, rates, ok, enabled);
	else if (a->engine && engine_observe_only(a->engine, why, sizeof(why)))
		snprintf(a->summary, sizeof(a->summary), "observe-only: %.200s; %sprobes %u/%u ok", why, rates, ok,
			 enabled);
	else if (bad)
		snprintf(a->summary, sizeof(a->summary), "observing: %sprobes %u/%u ok; %s %s: %.200s", rates, ok,
			 enabled, bad_name, bad->saturated ? "saturated" : "failing", bad->msg);
	else if (pending)
		snprintf(a->summary, sizeof(a->summary), "observing: %sprobes %u/%u ok; %s: first run under way", rates,
			 ok, enabled, pending);
	else
		snprintf(a->summary, sizeof(a->summary), "observing: %sprobes %u/%u ok", rates, ok, enabled);
}

/* ---- the report ------------------------------------------------------------------------------------------- */

/* What the API renders until the next tick. */
static void publish(struct agent *a, const struct store_health *sh)
{
	struct report *rp = &a->report;

	rp->valid = true;
	rp->start_ms = a->start_ms;
	rp->uptime_s = uptime_s(a);
	rp->tick_ms = a->cfg.tick_ms;
	rp->ticks = a->ticks;
	rp->late = a->late;
	rp->stored = a->stored;
	rp->last_tick_ms = a->last_tick_ms;
	rp->tick_cpu_median_ms = tick_cpu_median(a, 0);
	rp->tick_client_cpu_median_ms = tick_cpu_median(a, 1);
	rp->tick_own_cpu_median_ms = tick_cpu_median(a, 2);
	rp->tick_cpu_last_ms = a->cpu_n ? a->cpu_ring[(a->cpu_n - 1) % AGENT_CPU_RING] : NAN;
	rp->prom_unmapped = a->prom.unmapped;
	rp->store = *sh;
	rp->observe_why[0] = '\0';
	rp->observe_only = a->engine && engine_observe_only(a->engine, rp->observe_why, sizeof(rp->observe_why));
	sampler_nginx(a->sampler, &rp->nginx_pid, &rp->nginx_workers);
	for (int i = 0; i < PROBE_COUNT; i++) {
		rp->probes[i].name = sampler_probe_name((enum probe_id)i);
		rp->probes[i].health = *sampler_health(a->sampler, (enum probe_id)i);
	}
	snprintf(rp->summary, sizeof(rp->summary), "%s", a->summary);
}

/* ---- the tick -------------------------------------------------------------------------------------------- */

static void schedule_next(struct agent *a);

/* The loop's side of the pool: the verdicts it last read, and what it did with them. */
#define FLEET_AUDITED_MAX 64
struct fleet_loop {
	int64_t published;    /* the change whose verdict was published */
	uint64_t gen;         /* fleet_verdicts_gen of VIEW */
	struct fleet_view view;
	struct plan_cause causes[PLAN_CAUSES_MAX]; /* given to the tuning loop last */
	const struct policy_set *set;             /* the policies they were checked against */
	int64_t computed_ms;                      /* when (frame time) */
	size_t ncauses;
	char audited[FLEET_AUDITED_MAX][160]; /* refusals audited already (host, knob, value, time), a ring */
	size_t next_audited;
	bool refused[POOL_VERDICTS_MAX];
	char why[POOL_VERDICTS_MAX][POOL_TEXT_MAX];
	char answered[16][FLEET_NAME_MAX + 48]; /* the peers' asks answered (host, change, pair), a ring */
	size_t next_answered;
	struct {
		char host[FLEET_NAME_MAX];
		int64_t next_ms;              /* frame time before which this asker gets no other figure */
	} askers[FLEET_ASKS_MAX * 2];         /* a ring */
	size_t next_asker;
	int64_t busy_ms;                      /* the last frame in which this host had a trial, calibration or write */
};

/* Whether ASKER may have a figure computed at frame time NOW; if so, none again for LEN ms (a real host's pairs are
 * no closer than their two blocks: what etcd says cannot make this host read its frames faster than it writes
 * them). */
static bool asker_due(struct fleet_loop *fl, const char *asker, int64_t now, int64_t len)
{
	size_t n = sizeof(fl->askers) / sizeof(fl->askers[0]), i;

	for (i = 0; i < n; i++)
		if (strcmp(fl->askers[i].host, asker) == 0)
			break;
	if (i < n && now < fl->askers[i].next_ms && fl->askers[i].next_ms - now <= len)
		return false;
	if (i == n) {
		i = fl->next_asker;
		fl->next_asker = (fl->next_asker + 1) % n;
		snprintf(fl->askers[i].host, sizeof(fl->askers[i].host), "%s", asker);
	}
	fl->askers[i].next_ms = now + len;
	return true;
}

/*
 * The pool's peers as the control group. This host in trial: the pair that waits for its peers' figures is asked for
 * (the controller's report names its windows), and what came is handed back, all of it once every peer not in trial
 * answered; with fewer such peers than a control needs, at once (judged on its own). This host as a peer: each
 * peer's ask is answered once, when both its windows are over here and the later ended at most
 * FLEET_ASK_MAX_AGE_MS ago, with its objective's figure from this host's frames (one a tick), or none when this
 * host cannot tell (a trial, calibration or write of its own in those windows, its frames without that figure, too
 * few requests, asked again too soon). A figure reads the two windows' frames on the loop thread: 0.33 ms for two
 * 90 s windows of a store holding a day of 1 s frames of 200 metrics (measured), against a 1 s tick.
 */
static void control_step(struct agent *a, struct fleet_loop *fl, const struct controller_report *rep, int64_t id)
{
	struct fleet_control fc;

	if (rep->control_pair && id > 0) {
		struct fleet_ask q = {.change = id, .pair = rep->control_pair, .dir = rep->control_dir};

		snprintf(q.metric, sizeof(q.metric), "%s", rep->control_metric);
		memcpy(q.a_ms, rep->control_a_ms, sizeof(q.a_ms));
		memcpy(q.b_ms, rep->control_b_ms, sizeof(q.b_ms));
		fleet_ask(a->fleet, &q);
	} else {
		fleet_ask(a->fleet, NULL);
	}
	fleet_control(a->fleet, &fc);
	if (rep->control_pair && id > 0 && fc.change == id && fc.pair == rep->control_pair) {
		bool few = fc.expected < JUDGE_CONTROL_MIN_PEERS;

		(void)tuning_control(a->tuning, rep->control_pair, fc.peers ? fc.d_sum / fc.peers : NAN, fc.peers,
				     few || fc.answered >= fc.expected);
	}
	if (rep->state == CONTROLLER_TRIAL || rep->state == CONTROLLER_CALIBRATING || rep->writing ||
	    engine_busy(a->engine))
		fl->busy_ms = a->fr.ts_ms;
	for (size_t i = 0, figures = 0; i < fc.nasks; i++) {
		const struct fleet_ask *q = &fc.asks[i];
		int64_t first = q->a_ms[0] < q->b_ms[0] ? q->a_ms[0] : q->b_ms[0];
		int64_t last = q->a_ms[1] > q->b_ms[1] ? q->a_ms[1] : q->b_ms[1];
		bool busy = fl->busy_ms >= first;
		char sig[FLEET_NAME_MAX + 48];
		bool seen = false;
		double d = NAN;
		int r = 0;

		if (last > a->fr.ts_ms)
			continue; /* not over here yet (the clocks of two hosts differ a little) */
		if (!busy && a->fr.ts_ms - last <= FLEET_ASK_MAX_AGE_MS && figures)
			continue; /* one figure a tick: the next tick */
		snprintf(sig, sizeof(sig), "%s %lld %u", q->host, (long long)q->change, q->pair);
		for (size_t k = 0; k < sizeof(fl->answered) / sizeof(fl->answered[0]) && !seen; k++)
			seen = strcmp(fl->answered[k], sig) == 0;
		if (seen)
			continue;
		snprintf(fl->answered[fl->next_answered], sizeof(fl->answered[0]), "%s", sig);
		fl->next_answered = (fl->next_answered + 1) % (sizeof(fl->answered) / sizeof(fl->answered[0]));
		if (busy)
			r = -EBUSY;
		else if (a->fr.ts_ms - last > FLEET_ASK_MAX_AGE_MS)
			r = -ETIME;
		else if (!asker_due(fl, q->host, a->fr.ts_ms, (q->a_ms[1] - q->a_ms[0]) + (q->b_ms[1] - q->b_ms[0])))
			r = -EAGAIN;
		else {
			figures++;
			r = fleet_figure(a->store, a->reg, a->cfg.tick_ms, q, &d);
		}
		fleet_answer(a->fleet, q->host, q->change, q->pair, r < 0 ? NAN : d);
		/* What etcd can repeat at will (stale or too frequent asks) is logged at debug only. */
		log_msg(r == -ETIME || r == -EAGAIN ? LOG_DEBUG : LOG_INFO, "fleet: %s's pair %u of change %lld (%s): %s",
			q->host, q->pair, (long long)q->change, q->metric,
			r == -EBUSY ? "no figure here: this host had a trial, calibration or write of its own in its windows"
			: r == -ETIME ? "no figure here: its windows ended too long ago"
			: r == -EAGAIN ? "no figure here: asked again sooner than its two blocks last"
			: r == -ERANGE ? "no figure here: this host served too few requests in its windows to be a control"
			: r < 0 ? "no figure here: its windows hold no data of it"
				: "this host's figure sent");
	}
}

/* A value of the pool the local policy does not take: audited once (what comes from etcd is refused, never
 * written), and logged. */
static void fleet_refused(struct agent *a, struct fleet_loop *fl, const struct pool_verdict *v, const char *why)
{
	struct audit_row row;
	char sig[160];

	snprintf(sig, sizeof(sig), "%.40s %.40s %.40s %lld", v->host, v->knob, v->to, (long long)v->at_ms);
	for (size_t i = 0; i < FLEET_AUDITED_MAX; i++)
		if (strcmp(fl->audited[i], sig) == 0)
			return;
	snprintf(fl->audited[fl->next_audited], sizeof(fl->audited[0]), "%s", sig);
	fl->next_audited = (fl->next_audited + 1) % FLEET_AUDITED_MAX;
	log_warn("fleet: refused %s's %s = %s from the pool: %s", v->host, v->knob, v->to, why);
	memset(&row, 0, sizeof(row));
	row.ts = a->fr.ts_ms;
	snprintf(row.actor, sizeof(row.actor), "pool:%.58s", v->host);
	snprintf(row.action, sizeof(row.action), "pool-proposal");
	snprintf(row.knob, sizeof(row.knob), "%.*s", (int)sizeof(row.knob) - 1, v->knob);
	snprintf(row.outcome, sizeof(row.outcome), "refused");
	snprintf(row.detail, sizeof(row.detail), "%s kept %.60s = %.60s; refused here: %s", v->host, v->knob, v->to, why);
	if (a->store && store_audit_append(a->store, &row) == 0)
		events_audit(&row);
}

/* [fleet]: the pool hears what the controller wants and does; its gate (a trial slot held, etcd answering) decides
 * whether a trial may start at the next tick. A verdict is published once; what the pool proved is offered to the
 * planner as causes while the planner looks (state observe), and what the local policy refuses is audited. */
static void fleet_step(struct agent *a)
{
	struct fleet_loop *fl = a->fleet_loop;
	struct controller_report rep;
	char why[256];
	bool want, open;
	int64_t id;

	tuning_report(a->tuning, &rep, &id);
	/* A slot is held until the verdict's own write is done too (the engine's queued final write puts arm A back). */
	want = rep.wants_slot || rep.state == CONTROLLER_CALIBRATING || rep.state == CONTROLLER_TRIAL || rep.writing ||
	       engine_busy(a->engine);
	if (!fl)
		fl = a->fleet_loop = calloc(1, sizeof(*fl));
	/* A verdict the pool can use: kept, or refuted: ended on harm shown (the objective worse, a guardrail, a trip
	 * inside a block: the rollout stops at a host where the value does not hold); one that said nothing about the
	 * value (inconclusive, a pause, a conflict, an error, an operator's revert) is not. Queued before
	 * the controller's want is told: a round in between would give the canary key back before the verdict that
	 * proves its value is in etcd. */
	if (fl) {
		const struct tuning_verdict *last = tuning_last_verdict(a->tuning);

		if (last && last->change_id != fl->published) {
			fl->published = last->change_id;
			if (last->verdict == VERDICT_KEEP || last->harm) {
				struct pool_verdict v = {.kept = last->verdict == VERDICT_KEEP};

				snprintf(v.knob, sizeof(v.knob), "%s", last->knob);
				snprintf(v.from, sizeof(v.from), "%s", last->from);
				snprintf(v.to, sizeof(v.to), "%s", last->to);
				snprintf(v.symptom, sizeof(v.symptom), "%s", last->symptom);
				snprintf(v.summary, sizeof(v.summary), "%s", last->reason);
				v.effect = last->effect;
				v.pairs = last->pairs;
				fleet_publish(a->fleet, &v);
			}
		}
	}
	fleet_tell(a->fleet, want, !rep.confirming, controller_state_name(rep.state), rep.id ? rep.knob : "",
		   rep.id ? rep.to : "");
	open = fleet_gate(a->fleet, why, sizeof(why));
	tuning_gate(a->tuning, open, why);
	if (!fl)
		return;
	control_step(a, fl, &rep, id);
	/* The pool's causes when its verdicts or this host's policies change: each holds only while its symptom fires,
	 * which the planner checks in the tick itself (computed here after the tick, a cause came one tick after the
	 * symptom, and the symptom's own knob was proposed first: found on a real nginx, fleet.sh's step 6); and every
	 * 10 s, for the age their evidence gives ("kept on web-3 12 min ago"). */
	if (fleet_verdicts_gen(a->fleet) != fl->gen || engine_policies(a->engine) != fl->set ||
	    a->fr.ts_ms - fl->computed_ms >= 10000 || a->fr.ts_ms < fl->computed_ms) {
		struct plan_cause causes[PLAN_CAUSES_MAX];
		struct pool_facts self;
		size_t n;

		fleet_view(a->fleet, &fl->view);
		fl->gen = fl->view.verdicts_gen;
		fl->set = engine_policies(a->engine);
		fl->computed_ms = a->fr.ts_ms;
		fleet_facts(a->fleet, &self);
		n = pool_causes(fl->set, &self, fl->view.verdicts, fl->view.nverdicts, a->fr.ts_ms, causes,
				POOL_CAUSES_MAX, fl->refused, fl->why);
		for (size_t i = 0; i < fl->view.nverdicts; i++)
			if (fl->refused[i])
				fleet_refused(a, fl, &fl->view.verdicts[i], fl->why[i]);
		if (n != fl->ncauses || memcmp(causes, fl->causes, n * sizeof(causes[0])) != 0) {
			memcpy(fl->causes, causes, n * sizeof(causes[0]));
			fl->ncauses = n;
			tuning_pool(a->tuning, causes, n);
		}
	}
}

static void finish_tick(struct agent *a, double extra_cpu_ms)
{
	static const char *const degraded[] = {"NGXAT_STORE_STATE=degraded", NULL};
	static const char *const writable[] = {"NGXAT_STORE_STATE=ok", NULL};
	double c0 = thread_cpu_ms();
	struct store_health sh;
	bool was_degraded;
	int r;

	/* Said when the store's health changes, whichever write changed it (a frame, or a journal write between
	 * ticks): the log never says writable while a write is failing. */
	was_degraded = a->store_degraded;
	r = store_append_frame(a->store, a->reg, &a->fr);
	store_get_health(a->store, &sh);
	a->store_degraded = sh.degraded;
	if (r == 0)
		a->stored++;
	if (sh.degraded && !was_degraded)
		log_fields(LOG_ERR, degraded, "store write failed, agent degraded: %s", sh.reason);
	else if (!sh.degraded && was_degraded)
		log_fields(LOG_NOTICE, writable, "store writable again: observing normally");
	else if (r < 0 && !sh.degraded)
		log_err("frame not stored: %s", strerror(-r));
	a->ticks++;
	a->last_tick_ms = a->fr.ts_ms;
	prom_totals_observe(&a->prom, a->reg, &a->fr); /* -ENOMEM: the totals miss this tick, nothing else does */
	if (a->engine) {
		pid_t pid;
		unsigned workers;

		sampler_nginx(a->sampler, &pid, &workers);
		if (pid)
			agent_nginx_follow(a, pid);
		engine_tick(a->engine, a->fr.ts_ms);
		if (a->tuning) {
			/* Causes before symptoms: the doctor's findings are the planner's causes, and a symptom that
			 * waits for them has the doctor run now rather than at its next interval. */
			if (a->doctor)
				tuning_causes(a->tuning, doctor_advisories(a->doctor));
			tuning_tick(a->tuning, a->fr.ts_ms, a->reg, &a->fr);
			if (a->fleet)
				fleet_step(a);
			if (a->doctor && tuning_wants_causes(a->tuning) && !doctor_busy(a->doctor))
				doctor_run(a->doctor, a->fr.ts_ms, "a symptom fires: its causes are checked first");
		}
	}
	if (a->loadgen) {
		struct loadgen_block blk = {0};

		blk.active = a->tuning && tuning_block(a->tuning, &blk.start_ms, &blk.end_ms, &blk.settle_ms);
		loadgen_tick(a->loadgen, a->fr.ts_ms, &blk);
	}
	if (a->doctor)
		doctor_tick(a->doctor, &a->fr);
	build_summary(a, &sh);
	/* Ready once a frame is stored; or, when the store cannot be written at all, once the agent knows it runs
	 * degraded (observe-only), so that systemd does not kill an agent doing what it should. Never while recovery
	 * has not put the host back (invariant 3): a trial value left live is not ready, whatever the store says. */
	if (!a->ready && (r == 0 || sh.degraded) &&
	    !(a->engine && (engine_busy(a->engine) || !engine_recovered(a->engine)))) {
		a->ready = true;
		notify_ready(a->summary);
		log_info("%s: ready (%s)", r == 0 ? "first frame stored" : "store not writable", a->summary);
		notify_watchdog(NULL);
	} else {
		notify_watchdog(a->summary);
	}
	a->client_ring[a->cpu_n % AGENT_CPU_RING] = a->client_cpu_ms;
	a->cpu_ring[a->cpu_n++ % AGENT_CPU_RING] = a->tick_cpu_ms + extra_cpu_ms + (thread_cpu_ms() - c0);
	publish(a, &sh);
	a->tick_busy = false;
}

static void stub_work(uv_work_t *w)
{
	struct agent *a = w->data;
	double t0 = thread_cpu_ms();

	sampler_stub_fetch(a->stub_handle, &a->stub_res);
	a->stub_res.cpu_ms = thread_cpu_ms() - t0;
}

static void stub_after(uv_work_t *w, int status);

static void client_work(uv_work_t *w)
{
	struct agent *a = w->data;
	double t0 = thread_cpu_ms();

	sampler_client_run(a->client_handle, &a->client_res);
	a->client_res.cpu_ms = thread_cpu_ms() - t0;
}

/* The client's result waits for the next frame: the tick does not wait for the client. */
static void client_after(uv_work_t *w, int status)
{
	struct agent *a = w->data;

	a->client_busy = false;
	a->client_done = status != UV_ECANCELED && !a->stopping;
}

static void on_client_start(uv_timer_t *t)
{
	struct agent *a = t->data;

	a->client_work.data = a;
	if (a->stopping || uv_queue_work(a->loop, &a->client_work, client_work, client_after) < 0)
		a->client_busy = false;
}

/* A uniform fraction in [0, 1): getrandom, else the clock's low bits. */
static double uniform01(void)
{
	uint32_t x;

	if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x))
		x = (uint32_t)uv_hrtime();
	return (double)x / 4294967296.0;
}

/* agent_collect_frame's hand-off: the work goes to the pool; the stub_status fetch overlaps the other probes. */
static int pool_start(void *ctx, enum agent_pool_job job, void *handle)
{
	struct agent *a = ctx;
	bool client = job == AGENT_POOL_CLIENT;
	uv_work_t *w = client ? &a->client_work : &a->stub_work;
	int r;

	*(client ? &a->client_handle : &a->stub_handle) = handle;
	w->data = a;
	/* The client's run starts at a random moment of its slack, from the loop (a sleep on the pool thread cost
	 * 0.2 ms of CPU a run more, bench/tick-cost.sh). */
	if (client) {
		int64_t d = sampler_client_delay(handle, uniform01());

		if (d > 0 && uv_timer_start(&a->client_timer, on_client_start, (uint64_t)d, 0) == 0) {
			a->client_busy = true;
			return 0;
		}
	}
	r = uv_queue_work(a->loop, w, client ? client_work : stub_work, client ? client_after : stub_after);
	if (r == 0)
		*(client ? &a->client_busy : &a->stub_busy) = true;
	return r;
}

static void stub_after(uv_work_t *w, int status)
{
	struct agent *a = w->data;
	double c0;

	a->stub_busy = false;
	if (status == UV_ECANCELED || a->stopping || !a->tick_busy)
		return;
	c0 = thread_cpu_ms();
	sampler_stub_apply(a->sampler, &a->fr, &a->stub_res);
	a->tick_cpu_ms += thread_cpu_ms() - c0;
	finish_tick(a, a->stub_res.cpu_ms);
}

/* The ticks whose time passed while the loop was held (a stall: a blocking call, the host out of CPU) are skipped,
 * and counted as late like a tick skipped for a busy one (issue 22: a 3.4 s stall was not seen); a hold of a second
 * or more is logged, at most once a minute. */
static void held_past(struct agent *a, int64_t now_wall)
{
	uint64_t now = uv_now(a->loop), step = (uint64_t)a->cfg.tick_ms, missed;

	if (!a->slot_mono_ms || now < a->slot_mono_ms + step)
		return;
	missed = (now - a->slot_mono_ms) / step;
	a->late += missed;
	if (now - a->slot_mono_ms >= 1000 && now_wall - a->stall_logged_ms >= 60000) {
		a->stall_logged_ms = now_wall;
		log_warn("the agent's loop was held %llu ms past a tick's time: %llu tick(s) skipped (tick.late)",
			 (unsigned long long)(now - a->slot_mono_ms), (unsigned long long)missed);
	}
}

/* ---- samples between ticks ---------------------------------------------------------------------------------- */

/* The accept queue is sampled up to BETWEEN_MAX times a tick, once in each of as many equal slots (at least
 * BETWEEN_SLOT_MS), at a random moment of it: the mean of such samples is an unbiased estimate of the queue over the
 * tick, whatever recurs in phase with the tick (a point sample at the tick saw a full queue or none every tick while
 * workers stalled 300 ms of every second, and a deeper queue's trial was aborted on it). Each costs a wake of the
 * loop and a dump of the listening table (0.01-0.04 ms); four a second at 1 Hz added 0.5-0.7 ms of CPU a second
 * (bench/tick-cost.sh), two and the tick's own dump dropped (probe_sockets.c) add about a fifth of that. */
#define BETWEEN_MAX 2
#define BETWEEN_SLOT_MS 200

static unsigned between_slots(int64_t tick_ms)
{
	int64_t k = tick_ms / BETWEEN_SLOT_MS;

	return k < 1 ? 1u : k > BETWEEN_MAX ? BETWEEN_MAX : (unsigned)k;
}

static void on_between(uv_timer_t *t);

static void arm_between(struct agent *a)
{
	unsigned k = between_slots(a->cfg.tick_ms);
	double slot = (double)a->cfg.tick_ms / k;
	uint64_t now = uv_now(a->loop), at;

	if (a->between_i >= k || a->stopping)
		return;
	at = a->between_start + (uint64_t)((a->between_i + uniform01()) * slot);
	uv_timer_start(&a->between, on_between, at > now ? at - now : 0, 0);
}

static void on_between(uv_timer_t *t)
{
	struct agent *a = t->data;

	/* Late past the next tick's time (the loop was held): that tick's instant stands in. */
	if (uv_now(a->loop) >= a->between_start + (uint64_t)a->cfg.tick_ms)
		return;
	sampler_listen_sample(a->sampler);
	a->between_i++;
	arm_between(a);
}

/* ---- the tick ---------------------------------------------------------------------------------------------- */

static void close_all(struct agent *a);

/* The writer died: nothing can be written or put back, so the agent stops at once, without the reverts of a stop
 * (they would fail); the journal keeps a change in trial, which the restart's recovery puts back (systemd restarts
 * the agent on its exit status 1, and the writer with it). */
static void writer_lost(struct agent *a)
{
	if (a->writer_pid > 0)
		log_err("the writer (pid %d) is gone: stopping without reverts; the journal keeps what is in flight for the "
			"next start", (int)a->writer_pid);
	else
		log_err("the writer is gone: stopping without reverts; the journal keeps what is in flight for the next "
			"start");
	a->writer_lost = true;
	a->stopping = true;
	notify_stopping();
	uv_timer_stop(&a->timer);
	uv_timer_stop(&a->between);
	uv_timer_stop(&a->client_timer);
	doctor_stop(a->doctor);
	close_all(a);
}

static void on_tick(uv_timer_t *t)
{
	struct agent *a = t->data;
	int64_t now = wall_ms();
	double c0 = thread_cpu_ms();
	bool was_busy;

	if (wclient_gone(a->wclient)) {
		writer_lost(a);
		return;
	}

	held_past(a, now);
	schedule_next(a);
	a->between_start = uv_now(a->loop);
	a->between_i = 0;
	arm_between(a);
	if (a->tick_busy) {
		a->late++;
		return;
	}
	a->tick_busy = true;
	was_busy = a->stub_busy;
	agent_collect_frame(a, now, a->last_tick_ms ? (double)(now - a->last_tick_ms) / 1000.0 : 0, pool_start, a);
	a->tick_cpu_ms = thread_cpu_ms() - c0 + a->client_cpu_ms;
	/* A fetch this tick started finishes the tick from stub_after. */
	if (was_busy || !a->stub_busy)
		finish_tick(a, 0);
}

/* Ticks are aligned to multiples of the interval since start, so the callback's own delay does not drift. */
static void schedule_next(struct agent *a)
{
	uint64_t now = uv_now(a->loop), step = (uint64_t)a->cfg.tick_ms;
	uint64_t since = now - a->start_mono_ms;
	uint64_t next = (since / step + 1) * step;

	a->slot_mono_ms = a->start_mono_ms + next;
	uv_timer_start(&a->timer, on_tick, next - since, 0);
}

/* ---- signals --------------------------------------------------------------------------------------------- */

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

static void close_all(struct agent *a)
{
	uv_close((uv_handle_t *)&a->timer, on_closed);
	uv_close((uv_handle_t *)&a->between, on_closed);
	uv_close((uv_handle_t *)&a->client_timer, on_closed);
	uv_close((uv_handle_t *)&a->sig_term, on_closed);
	uv_close((uv_handle_t *)&a->sig_int, on_closed);
	uv_close((uv_handle_t *)&a->sig_hup, on_closed);
	loadgen_free(a->loadgen); /* kills a run under way; its handles close on the loop */
	a->loadgen = NULL;
	api_stop(a->api);
	a->api = NULL;
	wdump_cancel(a->wdump); /* answered now, while their callers are there: the client would forget them */
	wclient_close(a->wclient); /* the writer ends when its socket closes */
}

/* Waiting for an asynchronous revert (nginx) before closing; bounded by the stop timer. */
static void on_stop_wait(uv_timer_t *t)
{
	struct agent *a = t->data;

	engine_tick(a->engine, wall_ms());
	if (engine_busy(a->engine) && wall_ms() < a->last_tick_ms + 3 * a->cfg.nginx_timeout_ms)
		return;
	if (engine_busy(a->engine))
		log_err("stopping before a revert completed: the journal keeps it for the next start");
	uv_close((uv_handle_t *)&a->stop_timer, on_closed);
	close_all(a);
}

static void stop(struct agent *a, const char *why)
{
	if (a->stopping)
		return;
	a->stopping = true;
	log_info("%s: stopping", why);
	notify_stopping();
	uv_timer_stop(&a->timer);
	uv_timer_stop(&a->between);
	uv_timer_stop(&a->client_timer);
	doctor_stop(a->doctor);
	if (a->engine) {
		/* Invariant 6: the change in trial goes back; kept ones stay unless revert_on_stop. */
		engine_stop(a->engine, a->cfg.revert_on_stop, wall_ms());
		if (engine_busy(a->engine)) {
			uv_timer_init(a->loop, &a->stop_timer);
			a->stop_timer.data = a;
			uv_timer_start(&a->stop_timer, on_stop_wait, 100, 100);
			return;
		}
	}
	close_all(a);
}

static void writer_reloaded(int result, const char *text, void *ctx)
{
	(void)ctx;
	if (result < 0)
		log_warn("the writer did not take the reload: %s (%s)", text, strerror(-result));
}

/* The writer reads the configuration and the policies again before its next request: asked on its socket (an
 * engine without the capability to signal a root process can still ask), or with a SIGHUP before its client is
 * made. */
static void tell_writer_reload(struct agent *a)
{
	struct wmsg m = {.type = WMSG_RELOAD};
	char why[256];

	if (a->wclient) {
		if (wclient_request(a->wclient, &m, writer_reloaded, a, why, sizeof(why)) < 0)
			log_warn("the writer was not told of the reload: %s", why);
	} else if (a->writer_pid > 0) {
		kill(a->writer_pid, SIGHUP);
	}
}

int loop_reload(struct agent *a)
{
	struct config cfg;
	char err[512];
	int r;

	notify_reloading(uv_hrtime() / 1000);
	tell_writer_reload(a);
	r = config_load(a->config_path, a->config_must_exist, &cfg, err, sizeof(err));
	if (r == 0)
		r = config_check_trust(&cfg, a->config_path, err, sizeof(err));
	if (r < 0) {
		log_err("reload refused, keeping the running configuration: %s", err);
		if (a->ready)
			notify_ready(a->summary);
		return r;
	}
	if (a->root_override[0])
		snprintf(cfg.root, sizeof(cfg.root), "%s", a->root_override);
	cfg.stub_status_timeout_ms = loop_stub_timeout_ms(cfg.stub_status_timeout_ms, cfg.tick_ms);
	if (strcmp(cfg.socket_path, a->cfg.socket_path) != 0 || strcmp(cfg.store_path, a->cfg.store_path) != 0)
		log_warn("reload: a new socket or store path takes effect at the next start");
	snprintf(cfg.socket_path, sizeof(cfg.socket_path), "%s", a->cfg.socket_path);
	snprintf(cfg.store_path, sizeof(cfg.store_path), "%s", a->cfg.store_path);
	if (strcmp(cfg.measure, a->cfg.measure) != 0 || strcmp(cfg.loadgen_command, a->cfg.loadgen_command) != 0 ||
	    cfg.loadgen_run_ms != a->cfg.loadgen_run_ms)
		log_warn("reload: [tuning] measure and [loadgen] take effect at the next start");
	api_reload(a->api, &cfg); /* the token file again; the TCP listener opened, moved or closed */
	a->cfg = cfg;
	log_set_level(cfg.log_level);
	sampler_reconfigure(a->sampler, &a->cfg);
	agent_knob_env(a);
	if (a->engine) {
		struct policy_set *set;

		/* The knobs are probed again below: with nginx's files as they are now, not as a dump of a few
		 * seconds ago saw them (ngxctl setup --apply, then systemctl reload ngx-autotune). */
		nginx_ctl_forget(a->env.nginx);
		/* Parse and validate whole; swap only on success. */
		if (agent_load_policies(a, &set, err, sizeof(err)) < 0) {
			log_err("policies not reloaded, keeping the running ones: %s", err);
		} else if (engine_set_policies(a->engine, set, err, sizeof(err)) < 0) {
			log_err("policies not reloaded: %s", err);
			policy_set_free(set);
			free(set);
		}
	}
	schedule_next(a);
	if (a->doctor)
		doctor_run(a->doctor, wall_ms(), "agent configuration reloaded"); /* [nginx] paths may be new */
	log_info("configuration reloaded from %s", a->config_path);
	if (a->ready)
		notify_ready(a->summary);
	return 0;
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct agent *a = h->data;

	if (signum == SIGHUP)
		loop_reload(a);
	else
		stop(a, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

void loop_clock_init(struct agent *a)
{
	a->clock_ms = wall_ms;
}

int loop_init(struct agent *a)
{
	loop_clock_init(a);
	a->loop = uv_default_loop();
	a->start_ms = wall_ms();
	uv_update_time(a->loop);
	a->start_mono_ms = uv_now(a->loop);
	uv_timer_init(a->loop, &a->timer);
	a->timer.data = a;
	uv_timer_init(a->loop, &a->between);
	a->between.data = a;
	uv_timer_init(a->loop, &a->client_timer);
	a->client_timer.data = a;
	uv_signal_init(a->loop, &a->sig_term);
	uv_signal_init(a->loop, &a->sig_int);
	uv_signal_init(a->loop, &a->sig_hup);
	a->sig_term.data = a->sig_int.data = a->sig_hup.data = a;
	uv_signal_start(&a->sig_term, on_signal, SIGTERM);
	uv_signal_start(&a->sig_int, on_signal, SIGINT);
	uv_signal_start(&a->sig_hup, on_signal, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int loop_run(struct agent *a)
{
	struct store_health sh;

	/* A report before the first tick: the API may be asked before it is done. */
	store_get_health(a->store, &sh);
	publish(a, &sh);
	a->report.valid = false;
	/* What came since the start read first (the writer's sockets of nginx's namespace, asked for at the start:
	 * sampler_prepare_netlink): a timer due now runs before the loop's first look at its sockets. */
	uv_run(a->loop, UV_RUN_NOWAIT);
	/* The first tick right away: READY=1 should not wait a whole interval (unless a SIGTERM came meanwhile). */
	if (!a->stopping)
		uv_timer_start(&a->timer, on_tick, 0, 0);
	uv_run(a->loop, UV_RUN_DEFAULT);
	uv_loop_close(a->loop);
	return a->writer_lost ? 1 : 0;
}
