/*
 * sim: the plant, the trial runs and their tally. See sim.h.
 */
#include "sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "hist.h"
#include "metrics.h"
#include "stats.h"

#define CPUS 8
#define SIGMA 0.6  /* log-normal spread of request times: p99 is about 4 x the median */
#define TAU_S 4.0  /* the effect's ramp after a switch */

struct plant {
	struct stats_rng env, meas;
	double t;
	double lam0, cap, amp, period, phase;
	double ar, ar_sd, cost_ar, bg_ar;
	bool burst;
	double burst_mult;
	double spike_left, spike_mult;
	double lat_ms, cost_ms, p5xx;
	/* ground truth */
	bool obj_lat;
	double gain;
	enum sim_guard_harm guard;
	double guard_size;
	double r; /* share of the effect in force */
	int arm;
	double miss_prob;
	bool dead;
	/* sim_host: effects set from outside, and the metrics the detectors read */
	bool host;
	struct sim_effect eff, eff_target;
	double squeeze_per_kreq, upstream_share;
	double overload; /* saturated: offered load over the capacity as drawn (0: off) */
	/* the pool's traffic swing (sim_options.swing): every plant of a run draws it from the same seed */
	struct stats_rng pool;
	double swing, swing_sd, swing_rho;
};

struct ids {
	uint32_t req, e5xx, ovf, acc, hnd, cpus, user, sys, irq, sirq, b[HIST_NBUCKETS];
	uint32_t squeeze, ngx_req, req_ms, up_ms; /* sim_host only */
	uint32_t good2, good3, creq, cfail, run_ms, wait_ms; /* sim_host, saturated */
};

struct ctx {
	struct metric_registry *reg;
	struct ids id;
	struct frame fr;
	struct block_acc acc;
};

void sim_options_default(struct sim_options *o)
{
	memset(o, 0, sizeof(*o));
	judge_config_default(&o->judge);
	o->block_ms = 60000;
	o->settle_ms = 20000;
	o->tick_ms = 1000;
	o->miss_prob = 0.01;
	o->noise = 1.0;
	o->force_class = -1;
	o->force_objective = -1;
	o->calibrate_pairs = 4;
}

const char *sim_class_name(enum sim_class c)
{
	static const char *const names[] = {"none", "small gain", "large gain", "harm"};

	return (unsigned)c < SIM_CLASSES ? names[c] : "?";
}

static double uni(struct stats_rng *r, double lo, double hi)
{
	return lo + (hi - lo) * stats_rng_uniform(r);
}

/* Draw the plant and the truth of one trial from RNG. */
static void plant_init(struct plant *p, struct stats_rng *rng, uint64_t seed, const struct sim_options *o,
		       struct sim_result *r)
{
	double u0, c;

	memset(p, 0, sizeof(*p));
	p->lam0 = uni(rng, 200, 3000);
	u0 = uni(rng, 0.25, 0.5);
	p->cap = p->lam0 / u0;
	p->amp = uni(rng, 0.1, 0.5);
	p->period = 86400.0;
	p->phase = uni(rng, 0, 86400.0);
	p->ar_sd = 0.02 * o->noise;
	p->burst_mult = uni(rng, 1.05, 1.2);
	p->lat_ms = uni(rng, 3, 40);
	p->cost_ms = uni(rng, 0.2, 2.0);
	p->p5xx = uni(rng, 1e-4, 2e-3);
	p->miss_prob = o->miss_prob;
	p->obj_lat = o->force_objective >= 0 ? o->force_objective == 0 : stats_rng_uniform(rng) < 0.5;

	c = stats_rng_uniform(rng);
	r->cls = o->force_class >= 0 ? (enum sim_class)o->force_class
		 : c < 0.6	     ? SIM_NONE
		 : c < 0.8	     ? SIM_SMALL
		 : c < 0.9	     ? SIM_LARGE
				     : SIM_HARM;
	switch (r->cls) {
	case SIM_SMALL:
		r->gain = uni(rng, 0.0, 2.0 * o->judge.delta);
		break;
	case SIM_LARGE:
		r->gain = uni(rng, 2.0 * o->judge.delta, 6.0 * o->judge.delta);
		break;
	case SIM_HARM:
		r->gain = -uni(rng, o->judge.delta, 6.0 * o->judge.delta);
		c = stats_rng_uniform(rng);
		r->guard = c < 0.5 ? SIM_GH_NONE : c < 0.7 ? SIM_GH_5XX : c < 0.9 ? SIM_GH_LATENCY : SIM_GH_CAPACITY;
		break;
	default:
		r->gain = 0.0;
		break;
	}
	if (o->force_class >= 0) {
		r->gain = o->force_gain;
		r->guard = o->force_guard;
	}
	if (o->aa) {
		r->cls = SIM_NONE;
		r->gain = 0.0;
		r->guard = SIM_GH_NONE;
	}
	p->gain = r->gain;
	p->guard = r->guard;
	p->guard_size = uni(rng, 3.0, 10.0);
	r->objective = p->obj_lat ? "http.p99_ms" : "cpu.busy_per_kreq";
	/* Same load, bursts and spikes for the judge and the naive run; measurement draws differ with the arms. */
	stats_rng_seed(&p->env, seed ^ 0x656e76ull);
	stats_rng_seed(&p->meas, seed ^ 0x6d656173ull);
	stats_rng_seed(&p->pool, seed ^ 0x706f6f6cull);
	p->swing_sd = o->swing;
	p->swing_rho = o->swing_tau_s > 0 ? exp(-1.0 / o->swing_tau_s) : 0.0;
}

/* Tables for the plant's hot loop (read-only after the first call): ln of the bucket edges and the normal cdf. */
#define PHI_STEPS 256
#define PHI_RANGE 6
static double ln_edge[HIST_NBUCKETS];
static double phi_tab[2 * PHI_RANGE * PHI_STEPS + 2];

static void tables_init(void)
{
	if (phi_tab[1] > 0)
		return;
	for (unsigned b = 0; b + 1 < HIST_NBUCKETS; b++)
		ln_edge[b] = log((double)hist_bucket_lo(b + 1) - 0.5);
	for (size_t i = 0; i < sizeof(phi_tab) / sizeof(phi_tab[0]); i++)
		phi_tab[i] = stats_norm_cdf((double)i / PHI_STEPS - PHI_RANGE);
}

/* P(request time < upper edge of bucket B) for a log-normal with log-median MU. */
static double bucket_cdf(unsigned b, double mu)
{
	double x = ((ln_edge[b] - mu) / SIGMA + PHI_RANGE) * PHI_STEPS, f;
	size_t i;

	if (x <= 0)
		return 0.0;
	if (x >= 2 * PHI_RANGE * PHI_STEPS)
		return 1.0;
	i = (size_t)x;
	f = x - (double)i;
	return phi_tab[i] + (phi_tab[i + 1] - phi_tab[i]) * f;
}

static int put(struct frame *fr, uint32_t id, double v)
{
	return frame_put(fr, id, v);
}

/* One tick: advance the plant and write its frame. */
static int plant_tick(struct plant *p, struct ctx *cx, int64_t ts_ms)
{
	struct frame *fr = &cx->fr;
	double lam, cap, u, med, mu, gmult, lat_mult = 1.0, cost_mult = 1.0, e5 = 1.0, req = 0.0, busy, pct, n5xx;
	double lo_ms, hi_ms, prev_cdf;
	uint64_t counts[HIST_NBUCKETS] = {0};
	bool miss;
	int rc = 0;

	/* The environment: one fixed set of draws per tick whatever the arm, so that runs stay in step. */
	p->ar = 0.9 * p->ar + p->ar_sd * stats_rng_normal(&p->env);
	p->cost_ar = 0.998 * p->cost_ar + 0.004 * stats_rng_normal(&p->env);
	p->bg_ar = 0.95 * p->bg_ar + 0.02 * stats_rng_normal(&p->env);
	if (stats_rng_uniform(&p->env) < (p->burst ? 1.0 / 30.0 : 1.0 / 1800.0))
		p->burst = !p->burst;
	if (p->spike_left > 0) {
		p->spike_left -= 1.0;
		stats_rng_uniform(&p->env);
		stats_rng_uniform(&p->env);
	} else if (stats_rng_uniform(&p->env) < 1.0 / 3600.0) {
		p->spike_left = 1.0 + stats_rng_exp(&p->env, 2.0);
		p->spike_mult = fmin(stats_rng_pareto(&p->env, 1.2, 2.5), 4.0);
	} else {
		stats_rng_uniform(&p->env);
	}
	miss = stats_rng_uniform(&p->env) < p->miss_prob;
	p->t += 1.0;
	if (p->swing_sd > 0)
		p->swing = p->swing_rho * p->swing +
			   sqrt(1.0 - p->swing_rho * p->swing_rho) * p->swing_sd * stats_rng_normal(&p->pool);

	/* The knob: its effect ramps toward the arm in force. */
	p->r += ((double)p->arm - p->r) * (1.0 - exp(-1.0 / TAU_S));
	if (p->host) {
		double k = 1.0 - exp(-1.0 / TAU_S);

		p->eff.lat += (p->eff_target.lat - p->eff.lat) * k;
		p->eff.cost += (p->eff_target.cost - p->eff.cost) * k;
		p->eff.e5xx += (p->eff_target.e5xx - p->eff.e5xx) * k;
		p->eff.cap += (p->eff_target.cap - p->eff.cap) * k;
		p->eff.squeeze += (p->eff_target.squeeze - p->eff.squeeze) * k;
		p->eff.wait += (p->eff_target.wait - p->eff.wait) * k;
	}
	gmult = exp(-log1p(p->gain) * p->r);
	if (p->obj_lat)
		lat_mult = gmult;
	else
		cost_mult = gmult;
	cap = p->cap;
	switch (p->guard) {
	case SIM_GH_5XX:
		e5 = 1.0 + (p->guard_size - 1.0) * p->r;
		break;
	case SIM_GH_LATENCY:
		lat_mult *= 1.0 + 0.05 * p->guard_size * p->r;
		break;
	case SIM_GH_CAPACITY:
		cap *= 1.0 - 0.6 * p->r;
		break;
	default:
		break;
	}
	if (p->host) {
		lat_mult = p->eff.lat;
		cost_mult = p->eff.cost;
		e5 = p->eff.e5xx;
		cap = p->cap * p->eff.cap;
	}

	lam = p->lam0 * (1.0 + p->amp * sin(2.0 * M_PI * (p->t + p->phase) / p->period)) *
	      (p->burst ? p->burst_mult : 1.0) * exp(p->ar + p->swing);
	u = fmin(lam / cap, 0.95);
	/* Saturated: what is served is what the capacity allows; the rest of the offered load times out. */
	if (p->overload > 0)
		lam = fmin(lam, cap);
	med = p->lat_ms / (1.0 - u) * (p->spike_left > 0 ? p->spike_mult : 1.0) * lat_mult;
	mu = log(med);

	/* Poisson splitting: bucket counts are independent Poisson draws, their sum is the request count. */
	lo_ms = med * exp(-3.5 * SIGMA);
	hi_ms = fmin(med * exp(3.5 * SIGMA), (double)HIST_MAX_MS);
	{
		unsigned b0 = hist_bucket((uint32_t)lo_ms), b1 = hist_bucket((uint32_t)hi_ms);

		prev_cdf = 0.0;
		for (unsigned b = b0; b <= b1; b++) {
			double cdf = b == b1 ? 1.0 : bucket_cdf(b, mu);

			counts[b] = stats_rng_poisson(&p->meas, lam * (cdf - prev_cdf));
			req += (double)counts[b];
			prev_cdf = cdf;
		}
	}

	busy = req * p->cost_ms * exp(p->cost_ar) * cost_mult + CPUS * 1000.0 * 0.03 * exp(p->bg_ar);
	pct = fmin(100.0, busy / (CPUS * 1000.0) * 100.0);

	frame_clear(fr);
	fr->ts_ms = ts_ms;
	fr->dt_s = 1.0;
	if (p->dead) {
		/* The collector is down: every probe failed. */
		rc |= put(fr, cx->id.req, NAN);
		rc |= put(fr, cx->id.cpus, NAN);
		return rc;
	}
	rc |= put(fr, cx->id.req, miss ? NAN : req);
	n5xx = (double)stats_rng_poisson(&p->meas, req * p->p5xx * e5);
	rc |= put(fr, cx->id.e5xx, miss ? NAN : n5xx);
	rc |= put(fr, cx->id.ovf, lam > cap ? (double)stats_rng_poisson(&p->meas, 0.2 * (lam - cap)) : 0.0);
	{
		double acc = (double)stats_rng_poisson(&p->meas, lam / 10.0);

		rc |= put(fr, cx->id.acc, acc);
		rc |= put(fr, cx->id.hnd, acc);
	}
	rc |= put(fr, cx->id.cpus, CPUS);
	rc |= put(fr, cx->id.user, 0.6 * pct);
	rc |= put(fr, cx->id.sys, 0.25 * pct);
	rc |= put(fr, cx->id.irq, 0.0);
	rc |= put(fr, cx->id.sirq, 0.15 * pct);
	if (!miss)
		for (unsigned b = 0; b < HIST_NBUCKETS; b++)
			if (counts[b])
				rc |= put(fr, cx->id.b[b], (double)counts[b]);
	if (p->host) {
		/* Mean of the log-normal request time: median x exp(sigma^2 / 2). */
		double req_ms = req * med * exp(SIGMA * SIGMA / 2.0);

		rc |= put(fr, cx->id.squeeze,
			  (double)stats_rng_poisson(&p->meas, req * p->squeeze_per_kreq / 1000.0 * p->eff.squeeze));
		rc |= put(fr, cx->id.ngx_req, req + 1.0);
		rc |= put(fr, cx->id.req_ms, miss ? NAN : req_ms);
		rc |= put(fr, cx->id.up_ms, miss ? NAN : req_ms * p->upstream_share);
	}
	if (p->host && p->overload > 0) {
		double offered = p->lam0 * (1.0 + p->amp * sin(2.0 * M_PI * (p->t + p->phase) / p->period)) *
				 (p->burst ? p->burst_mult : 1.0) * exp(p->ar + p->swing);
		double lost = offered > lam ? 1.0 - lam / offered : 0.0, run = busy * 0.8;
		unsigned fails = 0;

		for (int k = 0; k < 4; k++)
			fails += stats_rng_uniform(&p->meas) < lost;
		rc |= put(fr, cx->id.good2, miss ? NAN : fmax(0.0, req - n5xx));
		rc |= put(fr, cx->id.good3, miss ? NAN : 0.0);
		rc |= put(fr, cx->id.creq, 4.0);
		rc |= put(fr, cx->id.cfail, (double)fails);
		rc |= put(fr, cx->id.run_ms, run);
		rc |= put(fr, cx->id.wait_ms, run * 0.02 * p->eff.wait * exp(0.1 * stats_rng_normal(&p->meas)));
	}
	return rc;
}

static int ctx_init(struct ctx *cx)
{
	static const char *const names[] = {"http.requests", "http.5xx", "tcp.listen_overflows", "nginx.accepts",
					    "nginx.handled", "sys.cpus", "cpu.all.user", "cpu.all.system",
					    "cpu.all.irq", "cpu.all.softirq"};
	uint32_t *dst[] = {&cx->id.req, &cx->id.e5xx, &cx->id.ovf, &cx->id.acc, &cx->id.hnd, &cx->id.cpus,
			   &cx->id.user, &cx->id.sys, &cx->id.irq, &cx->id.sirq};
	char name[32];
	int rc;

	tables_init();
	memset(cx, 0, sizeof(*cx));
	frame_init(&cx->fr);
	rc = metric_registry_new(&cx->reg);
	for (size_t i = 0; rc == 0 && i < sizeof(names) / sizeof(names[0]); i++)
		rc = metric_intern(cx->reg, names[i], dst[i]);
	for (unsigned b = 0; rc == 0 && b < HIST_NBUCKETS; b++) {
		snprintf(name, sizeof(name), "http.lat.b%u", b);
		rc = metric_intern(cx->reg, name, &cx->id.b[b]);
	}
	return rc;
}

static void ctx_free(struct ctx *cx)
{
	frame_free(&cx->fr);
	metric_registry_free(cx->reg);
}

/* The trial host's peers (sim_options.peers): plants never in trial, ticked in step with it, each block measured
 * over the same window into S[i][the block's slot]. */
#define SIM_PEERS_MAX 16
struct peers {
	unsigned n;
	struct plant p[SIM_PEERS_MAX];
	struct ctx cx[SIM_PEERS_MAX];
	struct block_summary s[SIM_PEERS_MAX][2];
};

/* Run the plant (and PR's peers, measured into their SLOT) for one block of DUR_MS with ARM in force, measuring
 * after SETTLE_MS. */
static int run_block(struct plant *p, struct ctx *cx, const struct block_spec *spec, int64_t *now, int64_t dur_ms,
		     int64_t settle_ms, int64_t tick_ms, int arm, double *exposure, struct block_summary *out,
		     struct peers *pr, int slot)
{
	int rc = block_acc_start(&cx->acc, spec, *now, *now + dur_ms, settle_ms);

	for (unsigned i = 0; rc == 0 && pr && i < pr->n; i++)
		rc = block_acc_start(&pr->cx[i].acc, spec, *now, *now + dur_ms, settle_ms);
	if (rc < 0)
		return rc;
	p->arm = arm;
	for (int64_t t = 0; t < dur_ms; t += tick_ms) {
		rc = plant_tick(p, cx, *now);
		if (rc == 0)
			rc = block_acc_add(&cx->acc, cx->reg, &cx->fr);
		for (unsigned i = 0; rc == 0 && pr && i < pr->n; i++) {
			rc = plant_tick(&pr->p[i], &pr->cx[i], *now);
			if (rc == 0)
				rc = block_acc_add(&pr->cx[i].acc, pr->cx[i].reg, &pr->cx[i].fr);
		}
		if (rc < 0)
			return rc;
		if (p->gain < 0 || p->guard != SIM_GH_NONE)
			*exposure += 100.0 * fmax(-p->gain, p->guard != SIM_GH_NONE ? 0.1 : 0.0) * p->r * tick_ms / 1000.0;
		*now += tick_ms;
	}
	block_acc_finish(&cx->acc, out);
	for (unsigned i = 0; pr && i < pr->n; i++)
		block_acc_finish(&pr->cx[i].acc, &pr->s[i][slot]);
	return 0;
}

/* The peers' mean d over their last two blocks (slot 0 the A window, 1 the B window), signed as the judge's, into
 * *D; the peers that had one returned. */
static unsigned peers_d(const struct judge *j, const struct peers *pr, double *d)
{
	double sum = 0.0, x;
	unsigned n = 0;

	for (unsigned i = 0; pr && i < pr->n; i++)
		if (judge_pair_effect(j, &pr->s[i][0], &pr->s[i][1], &x) == 0 && isfinite(x)) {
			sum += x;
			n++;
		}
	*d = n ? sum / n : NAN;
	return n;
}

static int spec_for(const struct plant *p, struct block_spec *spec, struct policy_metric *obj,
		    struct policy_metric *guard, size_t *nguard, int64_t tick_ms)
{
	const char *names[3];

	if (p->obj_lat) {
		names[0] = "http.p99_ms";
		names[1] = "http.5xx_rate";
		names[2] = "cpu.busy_per_kreq";
	} else {
		names[0] = "cpu.busy_per_kreq";
		names[1] = "http.p99_ms";
		names[2] = "http.5xx_rate";
	}
	memset(obj, 0, sizeof(*obj));
	snprintf(obj->metric, sizeof(obj->metric), "%s", names[0]);
	obj->dir = POLICY_LOWER_IS_BETTER;
	for (size_t i = 0; i < 2; i++) {
		memset(&guard[i], 0, sizeof(guard[i])); /* the policy's own guardrails: not implied */
		snprintf(guard[i].metric, sizeof(guard[i].metric), "%s", names[1 + i]);
		guard[i].dir = POLICY_LOWER_IS_BETTER;
	}
	*nguard = 2;
	return block_spec_init(spec, names, 3, tick_ms);
}

static int warm_up(struct plant *p, struct ctx *cx, int64_t *now, int64_t tick_ms, struct peers *pr)
{
	p->arm = 0;
	for (int i = 0; i < 300; i++) {
		int rc = plant_tick(p, cx, *now);

		for (unsigned k = 0; rc == 0 && pr && k < pr->n; k++)
			rc = plant_tick(&pr->p[k], &pr->cx[k], *now);
		if (rc < 0)
			return rc;
		*now += tick_ms;
	}
	return 0;
}

/* The naive judge: K x L of A, then K x L of B, settle dropped at the start of each; keep above delta. */
static int run_naive(uint64_t seed, const struct sim_options *o, struct ctx *cx, struct sim_result *r)
{
	struct stats_rng rng;
	struct plant p;
	struct block_spec spec;
	struct policy_metric obj, guard[2];
	struct block_summary before, after;
	struct sim_result tmp;
	struct judge j;
	int64_t now = 0, win = (int64_t)o->judge.pairs * o->block_ms;
	double exposure = 0.0, d;
	size_t ng;
	int rc;

	stats_rng_seed(&rng, seed);
	memset(&tmp, 0, sizeof(tmp));
	plant_init(&p, &rng, seed, o, &tmp);
	if ((rc = spec_for(&p, &spec, &obj, guard, &ng, o->tick_ms)) < 0 ||
	    (rc = warm_up(&p, cx, &now, o->tick_ms, NULL)) < 0)
		return rc;
	if ((rc = run_block(&p, cx, &spec, &now, win, o->settle_ms, o->tick_ms, 0, &exposure, &before, NULL, 0)) < 0 ||
	    (rc = run_block(&p, cx, &spec, &now, win, o->settle_ms, o->tick_ms, 1, &exposure, &after, NULL, 0)) < 0)
		return rc;
	if ((rc = judge_start(&j, &o->judge, &obj, guard, ng)) < 0)
		return rc;
	r->naive_exposure = exposure;
	if (judge_pair_effect(&j, &before, &after, &d) < 0)
		r->naive = VERDICT_ERROR;
	else if (d > log1p(o->judge.delta))
		r->naive = VERDICT_KEEP;
	else if (d < -log1p(o->judge.delta))
		r->naive = VERDICT_REVERT;
	else
		r->naive = VERDICT_INCONCLUSIVE;
	return 0;
}

static int run_judge_with(uint64_t seed, const struct sim_options *o, struct ctx *cx, struct sim_result *r,
			  unsigned aa_pairs, struct peers *pr)
{
	struct stats_rng rng, order;
	struct plant p;
	struct block_spec spec;
	struct policy_metric obj, guard[2];
	struct block_summary s[2];
	struct judge j;
	int64_t now = 0, start;
	double exposure = 0.0;
	bool done = false;
	size_t ng;
	int rc;

	stats_rng_seed(&rng, seed);
	plant_init(&p, &rng, seed, o, r);
	stats_rng_seed(&order, seed ^ 0x6f72646572ull);
	if ((rc = spec_for(&p, &spec, &obj, guard, &ng, o->tick_ms)) < 0 ||
	    (rc = warm_up(&p, cx, &now, o->tick_ms, pr)) < 0)
		return rc;
	start = now;
	if ((rc = judge_start(&j, &o->judge, &obj, guard, ng)) < 0)
		return rc;
	if (!aa_pairs && o->calibrate_pairs) {
		/* As the controller: A/A pairs on the same plant size K, or refuse, and tell the judge the noise. */
		struct judge_calibration cal;
		struct judge_config jc = o->judge;
		double d[JUDGE_PAIRS_MAX];
		unsigned n = 0;

		for (unsigned k = 0; k < o->calibrate_pairs && k < JUDGE_PAIRS_MAX; k++) {
			double dp;

			for (int blk = 0; blk < 2; blk++)
				if ((rc = run_block(&p, cx, &spec, &now, o->block_ms, o->settle_ms, o->tick_ms, 0, &exposure,
						    &s[blk], pr, blk)) < 0)
					return rc;
			if (judge_pair_effect(&j, &s[0], &s[1], &d[n]) < 0)
				continue;
			/* The noise the trial will be judged under: against the peers when it will be. */
			if (o->peer_control && peers_d(&j, pr, &dp) >= JUDGE_CONTROL_MIN_PEERS)
				d[n] -= dp;
			n++;
		}
		if (n >= 3 && judge_calibrate(&o->judge, d, n, &cal) == 0) {
			if (cal.refuse) {
				r->verdict = VERDICT_INCONCLUSIVE;
				r->decision_ms = now - start;
				return 0;
			}
			jc.pairs = cal.pairs > jc.pairs ? cal.pairs : jc.pairs;
			if ((rc = judge_start(&j, &jc, &obj, guard, ng)) < 0 || (rc = judge_set_noise(&j, cal.sd, cal.n)) < 0)
				return rc;
		}
	}
	for (unsigned k = 1; !done && k <= (aa_pairs ? aa_pairs : JUDGE_PAIRS_MAX); k++) {
		bool b_first = stats_rng_next(&order) & 1;

		p.dead = o->dead_from_pair && (int)k >= o->dead_from_pair;
		for (int blk = 0; blk < 2; blk++) {
			int arm = (blk == 0) == b_first ? 1 : 0;

			rc = run_block(&p, cx, &spec, &now, o->block_ms, o->settle_ms, o->tick_ms, aa_pairs ? 0 : arm,
				       &exposure, &s[arm], pr, arm);
			if (rc < 0)
				return rc;
		}
		if (aa_pairs) {
			double d;

			if (judge_pair_effect(&j, &s[0], &s[1], &d) == 0 && r->naa < JUDGE_PAIRS_MAX)
				r->aa_d[r->naa++] = d;
			continue;
		}
		if (o->peer_control) {
			double dp;
			unsigned np = peers_d(&j, pr, &dp);

			judge_set_control(&j, dp, np);
		}
		rc = judge_add_pair(&j, &s[0], &s[1], b_first, &done);
		if (rc < 0)
			return rc;
	}
	r->controlled = judge_evidence(&j)->ncontrolled;
	r->verdict = judge_evidence(&j)->verdict;
	r->pairs = judge_evidence(&j)->npairs;
	r->early = judge_evidence(&j)->early;
	r->decision_ms = now - start;
	r->harm_exposure = exposure;
	if (o->verbose && !aa_pairs) {
		const struct judge_evidence *ev = judge_evidence(&j);

		printf("%s after %u pairs (%u void): effect %+.4g [%+.4g, %+.4g]: %s\n", judge_verdict_name(ev->verdict),
		       ev->npairs, ev->nvoid, ev->effect, ev->effect_lo, ev->effect_hi, ev->reason);
	}
	return 0;
}

/* run_judge_with, with O's peers made from the trial's SEED: its plant as drawn, their own noise, no effect. */
static int run_judge(uint64_t seed, const struct sim_options *o, struct ctx *cx, struct sim_result *r,
		     unsigned aa_pairs)
{
	struct peers *pr = NULL;
	int rc = 0;

	if (o->peers > SIM_PEERS_MAX || !(o->swing >= 0) || !(o->swing_tau_s >= 0))
		return -EINVAL;
	if (o->peers && !(pr = calloc(1, sizeof(*pr))))
		return -ENOMEM;
	for (unsigned i = 0; rc == 0 && i < o->peers; i++) {
		struct stats_rng rng;
		struct sim_result tmp;
		uint64_t own = seed ^ (0x9e3779b97f4a7c15ull * (i + 1));

		if ((rc = ctx_init(&pr->cx[i])) < 0)
			break;
		pr->n++;
		stats_rng_seed(&rng, seed);
		memset(&tmp, 0, sizeof(tmp));
		plant_init(&pr->p[i], &rng, seed, o, &tmp);
		stats_rng_seed(&pr->p[i].env, own ^ 0x656e76ull);
		stats_rng_seed(&pr->p[i].meas, own ^ 0x6d656173ull);
		pr->p[i].gain = 0.0;
		pr->p[i].guard = SIM_GH_NONE;
	}
	if (rc == 0)
		rc = run_judge_with(seed, o, cx, r, aa_pairs, pr);
	for (unsigned i = 0; pr && i < pr->n; i++)
		ctx_free(&pr->cx[i]);
	free(pr);
	return rc;
}

int sim_run(uint64_t seed, const struct sim_options *o, struct sim_result *r)
{
	struct ctx cx;
	int rc;

	memset(r, 0, sizeof(*r));
	r->seed = seed;
	rc = ctx_init(&cx);
	if (rc == 0)
		rc = run_judge(seed, o, &cx, r, 0);
	if (rc == 0)
		rc = run_naive(seed, o, &cx, r);
	ctx_free(&cx);
	return rc;
}

int sim_run_aa(uint64_t seed, const struct sim_options *o, unsigned pairs, struct sim_result *r)
{
	struct ctx cx;
	struct sim_options aa = *o;
	int rc;

	if (pairs == 0 || pairs > JUDGE_PAIRS_MAX)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->seed = seed;
	aa.aa = true;
	rc = ctx_init(&cx);
	if (rc == 0)
		rc = run_judge(seed, &aa, &cx, r, pairs);
	ctx_free(&cx);
	return rc;
}

struct sim_host {
	struct plant p;
	struct ctx cx;
	struct sim_result r;
};

int sim_host_new(uint64_t seed, const struct sim_options *o, const struct sim_host_options *ho,
		 struct sim_host **out)
{
	static const struct sim_effect none = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
	struct sim_options opt = *o;
	struct stats_rng rng;
	struct sim_host *h;
	int rc;

	*out = NULL;
	if (!ho || !(ho->squeeze_per_kreq >= 0) || !(ho->upstream_share >= 0 && ho->upstream_share <= 1) ||
	    !(ho->overload >= 0 && ho->overload <= 100))
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	rc = ctx_init(&h->cx);
	if (rc == 0)
		rc = metric_intern(h->cx.reg, "softnet.time_squeeze", &h->cx.id.squeeze);
	if (rc == 0)
		rc = metric_intern(h->cx.reg, "nginx.requests", &h->cx.id.ngx_req);
	if (rc == 0)
		rc = metric_intern(h->cx.reg, "http.request_ms_sum", &h->cx.id.req_ms);
	if (rc == 0)
		rc = metric_intern(h->cx.reg, "http.upstream_ms_sum", &h->cx.id.up_ms);
	if (rc == 0 && ho->overload > 0) {
		static const char *const names[] = {"http.2xx", "http.3xx", "client.requests", "client.failures",
						    "nginx.worker_run_ms", "nginx.worker_wait_ms"};
		uint32_t *dst[] = {&h->cx.id.good2, &h->cx.id.good3, &h->cx.id.creq, &h->cx.id.cfail, &h->cx.id.run_ms,
				   &h->cx.id.wait_ms};

		for (size_t i = 0; rc == 0 && i < sizeof(names) / sizeof(names[0]); i++)
			rc = metric_intern(h->cx.reg, names[i], dst[i]);
	}
	if (rc < 0) {
		sim_host_free(h);
		return rc;
	}
	opt.force_class = SIM_NONE;
	opt.force_gain = 0.0;
	opt.force_guard = SIM_GH_NONE;
	stats_rng_seed(&rng, seed);
	plant_init(&h->p, &rng, seed, &opt, &h->r);
	h->p.host = true;
	h->p.eff = h->p.eff_target = none;
	h->p.squeeze_per_kreq = ho->squeeze_per_kreq;
	h->p.upstream_share = ho->upstream_share;
	h->p.overload = ho->overload;
	/* Saturated all day: the diurnal swing must not take the offered load below the capacity. */
	if (ho->overload > 0) {
		h->p.lam0 = h->p.cap * ho->overload;
		h->p.amp = fmin(h->p.amp, 0.5 * (1.0 - 1.0 / ho->overload));
	}
	*out = h;
	return 0;
}

void sim_host_free(struct sim_host *h)
{
	if (!h)
		return;
	ctx_free(&h->cx);
	free(h);
}

struct metric_registry *sim_host_registry(struct sim_host *h)
{
	return h->cx.reg;
}

void sim_host_set_effect(struct sim_host *h, const struct sim_effect *e)
{
	h->p.eff_target = *e;
}

void sim_host_set_dead(struct sim_host *h, bool dead)
{
	h->p.dead = dead;
}

int sim_host_tick(struct sim_host *h, int64_t ts_ms, const struct frame **fr)
{
	int rc = plant_tick(&h->p, &h->cx, ts_ms);

	*fr = &h->cx.fr;
	return rc;
}

int sim_host_put(struct sim_host *h, const char *name, double v)
{
	return frame_set(&h->cx.fr, h->cx.reg, name, v);
}

double sim_host_load(const struct sim_host *h)
{
	return h->p.lam0;
}

void sim_tally_add(struct sim_tally *t, const struct sim_result *r, double delta)
{
	enum judge_verdict v[2] = {r->verdict, r->naive};

	t->n++;
	t->cls[r->cls]++;
	t->pairs_sum += r->pairs;
	t->pairs_at[r->cls][r->pairs <= JUDGE_PAIRS_MAX ? r->pairs : JUDGE_PAIRS_MAX]++;
	{
		int64_t bin = r->decision_ms / 10000;

		t->secs_at[r->cls][bin >= 0 && bin < SIM_TIME_BINS - 1 ? bin : SIM_TIME_BINS - 1]++;
	}
	for (int k = 0; k < 2; k++)
		if ((unsigned)v[k] <= VERDICT_ERROR)
			t->verdicts[k][v[k]]++;
	if (r->cls == SIM_NONE) {
		t->aa_n++;
		for (int k = 0; k < 2; k++)
			t->aa_fp[k] += v[k] != VERDICT_INCONCLUSIVE;
	}
	if (r->gain < delta) {
		t->below_delta++;
		for (int k = 0; k < 2; k++)
			t->false_keep[k] += v[k] == VERDICT_KEEP;
	}
	if (r->gain >= 2.0 * delta) {
		t->big_gain++;
		for (int k = 0; k < 2; k++)
			t->false_revert[k] += v[k] != VERDICT_KEEP;
	}
	if (r->cls == SIM_HARM) {
		t->harm_n++;
		t->exposure[0] += r->harm_exposure;
		t->exposure[1] += r->naive_exposure;
		for (int k = 0; k < 2; k++)
			t->kept_harm[k] += v[k] == VERDICT_KEEP;
		if (r->guard != SIM_GH_NONE) {
			t->guard_n++;
			for (int k = 0; k < 2; k++)
				t->guard_caught[k] += v[k] == VERDICT_ABORTED || v[k] == VERDICT_REVERT;
		}
	}
}

void sim_tally_decision(const struct sim_tally *t, enum sim_class c, double q, unsigned *pairs, double *secs)
{
	unsigned n = t->cls[c], acc = 0, want;

	*pairs = 0;
	*secs = 0;
	if (n == 0)
		return;
	want = (unsigned)ceil(q * n);
	if (want < 1)
		want = 1;
	for (unsigned k = 0; k <= JUDGE_PAIRS_MAX; k++)
		if ((acc += t->pairs_at[c][k]) >= want) {
			*pairs = k;
			break;
		}
	acc = 0;
	for (unsigned b = 0; b < SIM_TIME_BINS; b++)
		if ((acc += t->secs_at[c][b]) >= want) {
			*secs = 10.0 * (b + 1); /* the bin's upper edge */
			break;
		}
}

static void rate(FILE *f, const char *what, unsigned x[2], unsigned n, const char *target)
{
	fprintf(f, "  %-34s", what);
	for (int k = 0; k < 2; k++) {
		double lo = 0, hi = 1;

		if (n)
			stats_wilson(x[k], n, 1.959964, &lo, &hi);
		fprintf(f, " %5u/%-5u %6.2f%% [%5.2f, %5.2f]", x[k], n, n ? 100.0 * x[k] / n : 0.0, 100.0 * lo,
			100.0 * hi);
	}
	fprintf(f, "  %s\n", target);
}

void sim_tally_print(FILE *f, const struct sim_tally *t)
{
	unsigned x[2];

	fprintf(f, "trials %u: none %u, small gain %u, large gain %u, harm %u; mean pairs %.2f\n", t->n,
		t->cls[SIM_NONE], t->cls[SIM_SMALL], t->cls[SIM_LARGE], t->cls[SIM_HARM],
		t->n ? t->pairs_sum / t->n : 0.0);
	fprintf(f, "  %-34s %-40s %-40s  target\n", "rate (Wilson 95%)", " judge", " naive before/after");
	rate(f, "A/A false positive", (unsigned *)t->aa_fp, t->aa_n, "<= alpha");
	rate(f, "false keep (gain < delta)", (unsigned *)t->false_keep, t->below_delta, "<= 1%, upper <= 2%");
	rate(f, "false revert (gain >= 2 delta)", (unsigned *)t->false_revert, t->big_gain, "<= 10%");
	rate(f, "harm kept", (unsigned *)t->kept_harm, t->harm_n, "");
	rate(f, "guardrail harm caught", (unsigned *)t->guard_caught, t->guard_n, "");
	fprintf(f, "  %-34s %10.0f %%s per harmful trial %15.0f %%s\n", "harm exposure (size x time)",
		t->harm_n ? t->exposure[0] / t->harm_n : 0.0, t->harm_n ? t->exposure[1] / t->harm_n : 0.0);
	fprintf(f, "  to a verdict                        pairs median  p90    seconds median  p90 (calibration included)\n");
	for (int c = 0; c < SIM_CLASSES; c++) {
		unsigned p50, p90;
		double s50, s90;

		sim_tally_decision(t, (enum sim_class)c, 0.5, &p50, &s50);
		sim_tally_decision(t, (enum sim_class)c, 0.9, &p90, &s90);
		fprintf(f, "    %-34s %6u %5u    %11.0f %5.0f\n", sim_class_name((enum sim_class)c), p50, p90, s50, s90);
	}
	for (int k = 0; k < 2; k++) {
		fprintf(f, "  verdicts %-6s", k ? "naive" : "judge");
		for (int v = VERDICT_KEEP; v <= VERDICT_ERROR; v++) {
			x[0] = t->verdicts[k][v];
			fprintf(f, " %s %u", judge_verdict_name((enum judge_verdict)v), x[0]);
		}
		fprintf(f, "\n");
	}
}
