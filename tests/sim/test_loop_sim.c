/*
 * test_loop_sim: the whole pure loop (detect, plan, controller, judge) against the plant of sim.c, in auto mode,
 * with the shipped softnet policies, tick by tick; the harness plays the loop's part (it carries out the intents
 * and reports the writes back). Scenarios, each over many seeds (chrony style: a few failures allowed, their seeds
 * printed):
 *   misconfig   netdev_budget 300 makes NET_RX rounds end early: time_squeeze per request falls to 30% at 600 and
 *               12% at 1200, p99 7% and 10% lower. It must be found and kept within two trials.
 *   regression  raising netdev_budget triples p99 (a guardrail): rolled back within one pair, B in force for at
 *               most one block.
 *   upstream    the same misconfiguration behind an upstream that takes 95% of request time: no proposal.
 *   collector   the collector dies in the second pair of the first trial: the trial ends as error and the old
 *               value is back.
 *   rps         a one-queue NIC's IRQ on CPU 0 puts it at 90% softirq while CPUs 1-3 idle, RPS off, with the shipped
 *               rps policy: RPS of eth0 to the idlest CPU (0: -> 0:3) halves CPU 0's share and costs 20% less
 *               CPU per request. It must be proposed and kept in the first trial, and nothing proposed after it.
 *   rps-harm    the same host where steering costs more than it frees (CPU per request +35%): never kept, RPS
 *               off again after the trial (reverted; 1 of 64 seeds measured too little for either way).
 *   irq         the same host with a two-queue NIC whose IRQs 40 and 41 both fire on CPU 0 (their affinity every
 *               CPU, as without irqbalance), with the shipped irq policy: IRQ 41 to the idlest CPU
 *               (40:0-3;41:0-3 -> 40:0-3;41:3) costs 20% less CPU per request; kept in the first trial (a few
 *               seeds measure too little and revert it as inconclusive: one in ten allowed, as for rps).
 *   outcome     outcomes decide, an internal figure worse: a saturated host (clients offer 1.6x what it serves) with
 *               worker_processes 1, the doctor's cause "2" handed in, the shipped nginx policies: the second worker
 *               serves 1.9x the good responses while the workers wait six times longer in the run queue (a
 *               guardrail). It must be kept in the first trial, nothing else proposed.
 *   internal    the opposite: a change whose internal objective improves (keepalive_requests 1000 -> 2000 as the
 *               cause, CPU per request 40% lower) while clients get 40% fewer good responses (capacity x0.6, 1.3x
 *               offered): never kept, the old value in force after the trial.
 *
 *   test_loop_sim [-S MASTER] [-n SEEDS]   run every scenario over SEEDS seeds from MASTER (printed)
 *   test_loop_sim -s SEED [-c SCENARIO]    replay one seed (every scenario, or one), printing every intent
 * Test code: static tables are fine here, core rules do not apply.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller.h"
#include "policy.h"
#include "sim.h"
#include "stats.h"

#define BUDGET "net.core.netdev_budget"

enum scenario {
	SC_MISCONFIG, SC_REGRESSION, SC_UPSTREAM, SC_COLLECTOR, SC_RPS, SC_RPS_HARM, SC_IRQ, SC_OUTCOME, SC_INTERNAL,
	SC_COUNT
};

static const char *const sc_names[SC_COUNT] = {"misconfig", "regression", "upstream", "collector", "rps",
					       "rps-harm", "irq", "outcome", "internal"};

/* The cause scenarios (outcomes decide): a saturated host, the doctor's cause handed to the controller, the knob
 * and its value before the change. */
static bool cause_sc(enum scenario sc)
{
	return sc == SC_OUTCOME || sc == SC_INTERNAL;
}

static const struct {
	const char *knob, *from, *to, *finding;
	double overload;
} cause_def[SC_COUNT] = {
	[SC_OUTCOME] = {"nginx.worker_processes", "1", "2", "nginx.worker_processes", 1.6},
	[SC_INTERNAL] = {"nginx.keepalive_requests", "1000", "2000", "sim.cheaper", 1.3},
};

#define RPS "rps.eth0"
#define IRQ "irq_affinity.eth0"
#define IRQ_FROM "40:0-3;41:0-3"
#define NCPU 4

/* The CPU placement scenarios: the knob's value in w->rps, its first value placed_from(). */
static bool rps_sc(enum scenario sc)
{
	return sc == SC_RPS || sc == SC_RPS_HARM || sc == SC_IRQ;
}

static const char *placed_from(enum scenario sc)
{
	return sc == SC_IRQ ? IRQ_FROM : "0:";
}

struct outcome {
	unsigned trials;          /* verdicts on netdev_budget */
	unsigned trials_to_keep;  /* the trial that first kept a value (0: none) */
	unsigned proposals;
	unsigned other_proposals; /* of other knobs */
	enum judge_verdict first; /* the first trial's verdict */
	unsigned first_pairs;     /* pairs the judge saw in it */
	bool first_write;         /* its final intent asked for a write */
	int64_t b_longest_ms;     /* longest stretch of a new value in force during a trial */
	long budget;              /* netdev_budget at the end */
	char rps[32];             /* the placement knob at the end */
	double hours;             /* simulated time */
	double load;
	char reason[CONTROLLER_TEXT_MAX];
};

struct world {
	struct sim_host *host;
	struct controller *ctl;
	enum scenario sc;
	char budget[32];
	char rps[32];
	char val[32];             /* the cause scenarios' knob */
	const char *knob;         /* the knob the scenario is about */
	struct stats_rng rng;     /* the per-CPU shares' noise */
	bool verbose;
	bool in_trial;
	int64_t now, b_since;
	struct outcome out;
};

static int value_of(const char *knob, char *out, size_t len, void *ctx)
{
	struct world *w = ctx;
	const char *v = NULL;

	if (cause_sc(w->sc) && strcmp(knob, w->knob) == 0)
		v = w->val;
	else if (strcmp(knob, BUDGET) == 0)
		v = w->budget;
	else if (strcmp(knob, w->knob) == 0 && rps_sc(w->sc))
		v = w->rps;
	else if (strcmp(knob, "net.core.netdev_budget_usecs") == 0)
		v = "2000";
	else if (strcmp(knob, "net.core.netdev_max_backlog") == 0)
		v = "1000";
	if (!v)
		return -ENOENT;
	return snprintf(out, len, "%s", v) < (int)len ? 0 : -ENOSPC;
}

/* The ground truth of the scenario for netdev_budget's value. */
static void truth(const struct world *w, struct sim_effect *e)
{
	long b = strtol(w->budget, NULL, 10);

	*e = (struct sim_effect){1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
	if (cause_sc(w->sc)) {
		if (strcmp(w->val, cause_def[w->sc].from) == 0)
			return;
		if (w->sc == SC_OUTCOME)
			e->cap = 1.9, e->wait = 6.0;
		else
			e->cost = 0.6, e->cap = 0.6;
		return;
	}
	if (rps_sc(w->sc)) {
		if (strcmp(w->rps, placed_from(w->sc)) == 0)
			return;
		if (w->sc != SC_RPS_HARM)
			e->cost = 0.80, e->lat = 0.85;
		else
			e->cost = 1.35, e->lat = 1.10;
		return;
	}
	if (w->sc == SC_REGRESSION) {
		if (b > 300)
			e->lat = 3.0;
		return;
	}
	if (b >= 1200)
		e->squeeze = 0.12, e->lat = 0.90;
	else if (b >= 600)
		e->squeeze = 0.30, e->lat = 0.93;
}

/* The per-CPU shares and eth0's packets of the tick: CPU 0 takes eth0's IRQs; with RPS to CPU 3, or IRQ 41 there,
 * the two share the work. */
static int put_cpus(struct world *w, double dt)
{
	static const double soft_off[NCPU] = {90, 8, 8, 7}, idle_off[NCPU] = {5, 40, 45, 60};
	static const double soft_on[NCPU] = {45, 8, 8, 45}, idle_on[NCPU] = {40, 40, 45, 20};
	bool on = strcmp(w->rps, placed_from(w->sc)) != 0;
	char name[64];
	int rc = 0;

	for (int c = 0; c < NCPU && rc == 0; c++) {
		double noise = 4 * stats_rng_uniform(&w->rng) - 2;

		snprintf(name, sizeof(name), "cpu.%d.softirq", c);
		rc = sim_host_put(w->host, name, (on ? soft_on : soft_off)[c] + noise);
		snprintf(name, sizeof(name), "cpu.%d.idle", c);
		if (rc == 0)
			rc = sim_host_put(w->host, name, (on ? idle_on : idle_off)[c] - noise);
	}
	if (rc == 0)
		rc = sim_host_put(w->host, "link.eth0.rx_packets", 200000 * dt);
	if (rc == 0)
		rc = sim_host_put(w->host, "link.lo.rx_packets", 50 * dt);
	return rc;
}

static void write_knob(struct world *w, const char *v)
{
	struct sim_effect e;

	if (cause_sc(w->sc)) {
		bool was = strcmp(w->val, cause_def[w->sc].from) != 0, is = strcmp(v, cause_def[w->sc].from) != 0;

		if (!was && is)
			w->b_since = w->now;
		if (was && !is && w->now - w->b_since > w->out.b_longest_ms)
			w->out.b_longest_ms = w->now - w->b_since;
		snprintf(w->val, sizeof(w->val), "%s", v);
		truth(w, &e);
		sim_host_set_effect(w->host, &e);
		return;
	}
	if (rps_sc(w->sc)) {
		bool was = strcmp(w->rps, placed_from(w->sc)) != 0, is = strcmp(v, placed_from(w->sc)) != 0;

		if (!was && is)
			w->b_since = w->now;
		if (was && !is && w->now - w->b_since > w->out.b_longest_ms)
			w->out.b_longest_ms = w->now - w->b_since;
		snprintf(w->rps, sizeof(w->rps), "%s", v);
		truth(w, &e);
		sim_host_set_effect(w->host, &e);
		return;
	}
	bool was = strcmp(w->budget, "300") != 0, is = strcmp(v, "300") != 0;

	if (!was && is)
		w->b_since = w->now;
	if (was && !is && w->now - w->b_since > w->out.b_longest_ms)
		w->out.b_longest_ms = w->now - w->b_since;
	snprintf(w->budget, sizeof(w->budget), "%s", v);
	truth(w, &e);
	sim_host_set_effect(w->host, &e);
}

/* Load the shipped policies of one family: a few lines of INI, as policy_load reads them. */
static int load_policies(struct policy_set *set, const char *family)
{
	char path[512], line[1024], section[256] = "", err[512] = "";
	const char *srcdir = getenv("srcdir");
	int lineno = 0, rc = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/policies/%s.policy", srcdir && srcdir[0] ? srcdir : ".", family);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return -ENOENT;
	}
	policy_set_init(set);
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		char *eq, *value, *end;

		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '\0' || line[0] == '#' || line[0] == ';')
			continue;
		if (line[0] == '[') {
			end = strchr(line, ']');
			if (!end) {
				rc = -EINVAL;
				break;
			}
			*end = '\0';
			snprintf(section, sizeof(section), "%.200s", line + 1);
			policy_set_section(set, path, lineno, section);
			continue;
		}
		eq = strchr(line, '=');
		if (!eq) {
			rc = -EINVAL;
			break;
		}
		*eq = '\0';
		for (value = eq + 1; *value == ' '; value++)
			;
		for (end = eq; end > line && end[-1] == ' ';)
			*--end = '\0';
		rc = policy_set_add(set, path, lineno, section, line, value, err, sizeof(err));
	}
	fclose(f);
	if (rc == 0)
		rc = policy_set_validate(set, policy_metric_known, NULL, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "%s: %s\n", path, err);
	return rc;
}

static void on_intent(struct world *w, const struct controller_intent *in)
{
	struct outcome *o = &w->out;

	if (w->verbose)
		printf("  %7.1f min  %-8s %-24s %-6s %s\n", (double)w->now / 60000.0, controller_intent_name(in->kind),
		       in->knob, in->kind == INTENT_SET_ARM ? controller_arm_name(in->arm) : in->value,
		       in->kind == INTENT_KEEP || in->kind == INTENT_REVERT || in->kind == INTENT_WITHDRAW
			       ? judge_verdict_name(in->verdict)
			       : "");
	if (w->verbose && in->text[0])
		printf("             %s\n", in->text);
	switch (in->kind) {
	case INTENT_PROPOSE:
		if (strcmp(in->knob, w->knob) == 0)
			o->proposals++;
		else
			o->other_proposals++;
		/* The rps policy asks for approval even in auto mode: the operator approves every proposal. */
		if (in->prop && in->prop->approval_required)
			controller_approved(w->ctl, in->id);
		break;
	case INTENT_SET_ARM:
		if (strcmp(in->knob, w->knob) == 0)
			write_knob(w, in->value);
		controller_write_done(w->ctl, true);
		break;
	case INTENT_KEEP:
	case INTENT_REVERT:
		if (in->write && strcmp(in->knob, w->knob) == 0)
			write_knob(w, in->value);
		if (strcmp(in->knob, w->knob) != 0)
			break;
		o->trials++;
		if (o->trials == 1) {
			o->first = in->verdict;
			o->first_pairs = in->ev ? in->ev->npairs : 0;
			o->first_write = in->write;
		}
		if (in->kind == INTENT_KEEP && !o->trials_to_keep)
			o->trials_to_keep = o->trials;
		break;
	default:
		break;
	}
}

static int run_one(enum scenario sc, uint64_t seed, bool verbose, struct outcome *out)
{
	struct sim_options so;
	struct sim_host_options ho = {.squeeze_per_kreq = 30.0, .upstream_share = 0.3};
	struct controller_config cfg;
	struct controller_intents in;
	struct controller_report rep;
	struct policy_set set;
	struct world w;
	struct plan_cause cause;
	int64_t end = 4 * 3600000LL;
	bool died = false;
	int rc;

	memset(&w, 0, sizeof(w));
	memset(&cause, 0, sizeof(cause));
	w.sc = sc;
	w.verbose = verbose;
	snprintf(w.budget, sizeof(w.budget), "300");
	snprintf(w.rps, sizeof(w.rps), "%s", placed_from(sc));
	w.knob = sc == SC_IRQ ? IRQ : rps_sc(sc) ? RPS : BUDGET;
	if (cause_sc(sc)) {
		w.knob = cause_def[sc].knob;
		snprintf(w.val, sizeof(w.val), "%s", cause_def[sc].from);
		ho.overload = cause_def[sc].overload;
		cause.kind = PLAN_CAUSE_DEMAND;
		cause.severity = 1;
		snprintf(cause.id, sizeof(cause.id), "%s", cause_def[sc].finding);
		snprintf(cause.knob, sizeof(cause.knob), "%s", cause_def[sc].knob);
		snprintf(cause.to, sizeof(cause.to), "%s", cause_def[sc].to);
		snprintf(cause.evidence, sizeof(cause.evidence), "the simulated doctor's finding");
	}
	stats_rng_seed(&w.rng, seed ^ 0x5eed);
	if (sc == SC_UPSTREAM) {
		ho.upstream_share = 0.95;
		end = 2 * 3600000LL; /* the misconfiguration is found within the hour when the upstream share is 30% */
	}
	if (load_policies(&set, cause_sc(sc) ? "nginx" : sc == SC_IRQ ? "irq" : rps_sc(sc) ? "rps" : "softnet") < 0)
		return -EINVAL;
	sim_options_default(&so);
	rc = sim_host_new(seed, &so, &ho, &w.host);
	if (rc < 0) {
		policy_set_free(&set);
		return rc;
	}
	controller_config_default(&cfg);
	cfg.mode = CONTROLLER_MODE_AUTO;
	cfg.seed = seed;
	cfg.changes_per_hour = 4;
	cfg.plan.measure_ms = 60000;
	cfg.detect.cpus_max = 8;
	rc = controller_new(&cfg, &set, value_of, &w, &w.ctl);
	if (rc < 0)
		goto out;
	w.out.load = sim_host_load(w.host);
	if (verbose)
		printf("seed %" PRIu64 " %s: %.0f requests/s offered\n", seed, sc_names[sc], w.out.load);
	for (w.now = 1000; w.now <= end; w.now += 1000) {
		const struct frame *fr;

		/* The doctor's check, every tick: a cause that its fix removes goes (the knob is back at its old
		 * value after a revert, so the finding stands; the planner's memory holds it back). */
		if (cause_sc(sc))
			controller_set_causes(w.ctl, &cause, strcmp(w.val, cause_def[sc].to) != 0, w.now);
		if ((rc = sim_host_tick(w.host, w.now, &fr)) < 0 || (rps_sc(sc) && (rc = put_cpus(&w, 1.0)) < 0) ||
		    (rc = controller_tick(w.ctl, w.now, sim_host_registry(w.host), fr, &in)) < 0)
			goto out;
		for (size_t i = 0; i < in.n; i++)
			on_intent(&w, &in.v[i]);
		controller_report(w.ctl, &rep);
		/* The collector dies at the start of the second pair of the first trial, and comes back after it. */
		if (sc == SC_COLLECTOR && !died && rep.state == CONTROLLER_TRIAL && rep.pair == 2) {
			sim_host_set_dead(w.host, true);
			died = true;
		}
		if (sc == SC_COLLECTOR && died && w.out.trials >= 1)
			sim_host_set_dead(w.host, false);
		/* Each scenario is decided by then: stop early to keep make check fast. */
		if ((sc == SC_REGRESSION || sc == SC_COLLECTOR || cause_sc(sc)) && w.out.trials >= 1 &&
		    rep.state == CONTROLLER_COOLDOWN)
			break;
		if (sc == SC_MISCONFIG && strcmp(w.budget, "1200") == 0 && rep.state == CONTROLLER_COOLDOWN)
			break;
		/* After the trial, an hour more: nothing else is proposed once CPU 0 is below the trigger. */
		if (rps_sc(sc) && w.out.trials >= 1 && rep.state != CONTROLLER_TRIAL && w.now - w.b_since > 3600000 &&
		    w.now > 2 * 3600000LL)
			break;
	}
	if ((rps_sc(sc) ? strcmp(w.rps, placed_from(sc)) : strcmp(w.budget, "300")) != 0 && w.now - w.b_since > w.out.b_longest_ms &&
	    rep.state == CONTROLLER_TRIAL)
		w.out.b_longest_ms = w.now - w.b_since;
	w.out.budget = strtol(w.budget, NULL, 10);
	snprintf(w.out.rps, sizeof(w.out.rps), "%s", cause_sc(sc) ? w.val : w.rps);
	w.out.hours = (double)w.now / 3600000.0;
	snprintf(w.out.reason, sizeof(w.out.reason), "%s", rep.reason);
	*out = w.out;
	rc = 0;
out:
	controller_free(w.ctl);
	sim_host_free(w.host);
	policy_set_free(&set);
	return rc;
}

static uint64_t seed_of(uint64_t master, unsigned i)
{
	struct stats_rng r;

	stats_rng_seed(&r, master + i);
	return stats_rng_next(&r);
}

/* Whether O is what scenario SC must give; WHY gets the failure. */
static bool judge_outcome(enum scenario sc, const struct outcome *o, int64_t block_ms, char *why, size_t len)
{
	why[0] = '\0';
	switch (sc) {
	case SC_MISCONFIG:
		if (!o->trials_to_keep || o->trials_to_keep > 2 || o->budget < 600)
			snprintf(why, len, "not fixed: %u trials, first %s, first keep at trial %u, budget %ld (%s)",
				 o->trials, judge_verdict_name(o->first), o->trials_to_keep, o->budget, o->reason);
		break;
	case SC_REGRESSION:
		if ((o->first != VERDICT_ABORTED && o->first != VERDICT_REVERT) || o->first_pairs != 1 ||
		    o->b_longest_ms > block_ms || o->budget != 300)
			snprintf(why, len, "regression: %s after %u pairs, new value in force %.0f s, budget %ld",
				 judge_verdict_name(o->first), o->first_pairs, o->b_longest_ms / 1000.0, o->budget);
		break;
	case SC_UPSTREAM:
		if (o->proposals || !strstr(o->reason, "upstream"))
			snprintf(why, len, "upstream-bound: %u proposals (%s)", o->proposals, o->reason);
		break;
	case SC_RPS:
		if (o->trials_to_keep != 1 || strcmp(o->rps, "0:3") != 0 || o->proposals != 1 || o->other_proposals)
			snprintf(why, len, "rps: %u proposals (%u of others), first %s, first keep at trial %u, rps %s (%s)",
				 o->proposals, o->other_proposals, judge_verdict_name(o->first), o->trials_to_keep, o->rps,
				 o->reason);
		break;
	case SC_IRQ:
		if (o->trials_to_keep != 1 || strcmp(o->rps, "40:0-3;41:3") != 0 || o->proposals != 1 || o->other_proposals)
			snprintf(why, len, "irq: %u proposals (%u of others), first %s, first keep at trial %u, irqs %s (%s)",
				 o->proposals, o->other_proposals, judge_verdict_name(o->first), o->trials_to_keep, o->rps,
				 o->reason);
		break;
	case SC_RPS_HARM:
		/* Not kept, and RPS off again; inconclusive also reverts (a measurement that missed the harm is not
		 * a keep). */
		if (o->trials < 1 || o->first == VERDICT_KEEP || o->trials_to_keep || strcmp(o->rps, "0:") != 0)
			snprintf(why, len, "rps-harm: first %s after %u pairs, rps %s", judge_verdict_name(o->first),
				 o->first_pairs, o->rps);
		break;
	case SC_OUTCOME:
		if (o->trials_to_keep != 1 || strcmp(o->rps, "2") != 0 || o->proposals != 1 || o->other_proposals)
			snprintf(why, len, "outcome: %u proposals (%u of others), first %s after %u pairs, worker_processes "
				 "%s (%s)", o->proposals, o->other_proposals, judge_verdict_name(o->first), o->first_pairs,
				 o->rps, o->reason);
		break;
	case SC_INTERNAL:
		if (o->trials < 1 || o->trials_to_keep || strcmp(o->rps, "1000") != 0)
			snprintf(why, len, "internal: first %s after %u pairs, keepalive_requests %s (%s)",
				 judge_verdict_name(o->first), o->first_pairs, o->rps, o->reason);
		break;
	case SC_COLLECTOR:
		if (o->first != VERDICT_ERROR || o->budget != 300)
			snprintf(why, len, "collector failure: %s, budget %ld", judge_verdict_name(o->first),
				 o->budget);
		break;
	default:
		break;
	}
	return why[0] == '\0';
}

int main(int argc, char **argv)
{
	uint64_t master = 20240612, one = 0;
	unsigned n = 16, failures = 0;
	int opt, only = -1;
	bool replay = false;
	int64_t block_ms = 30000 + 60000; /* softnet.policy's settle and the measure time set above */

	while ((opt = getopt(argc, argv, "S:s:n:c:")) != -1) {
		switch (opt) {
		case 'S':
			master = strtoull(optarg, NULL, 0);
			break;
		case 's':
			one = strtoull(optarg, NULL, 0);
			replay = true;
			break;
		case 'n':
			n = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			for (int i = 0; i < SC_COUNT; i++)
				if (strcmp(optarg, sc_names[i]) == 0)
					only = i;
			if (only < 0) {
				fprintf(stderr, "unknown scenario %s\n", optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [-S MASTER] [-n SEEDS] | -s SEED [-c SCENARIO]\n", argv[0]);
			return 2;
		}
	}
	if (replay) {
		for (int sc = 0; sc < SC_COUNT; sc++) {
			struct outcome o;
			char why[512];

			if (only >= 0 && sc != only)
				continue;
			if (run_one((enum scenario)sc, one, true, &o) < 0)
				return 1;
			printf("seed %" PRIu64 " %s: %s\n", one, sc_names[sc],
			       judge_outcome((enum scenario)sc, &o, block_ms, why, sizeof(why)) ? "ok" : why);
		}
		return 0;
	}
	printf("master seed %" PRIu64 ", %u seeds per scenario (replay one with -s SEED -c SCENARIO)\n", master, n);
	for (int sc = 0; sc < SC_COUNT; sc++) {
		unsigned ok = 0, keep1 = 0, keep2 = 0, at1200 = 0, allowed;
		double hours = 0, pairs = 0, b_max = 0;

		for (unsigned i = 0; i < n; i++) {
			uint64_t seed = seed_of(master ^ (uint64_t)(sc + 1) << 32, i);
			struct outcome o;
			char why[512];

			if (run_one((enum scenario)sc, seed, false, &o) < 0) {
				printf("seed %" PRIu64 " %s: simulation error\n", seed, sc_names[sc]);
				failures++;
				continue;
			}
			if (judge_outcome((enum scenario)sc, &o, block_ms, why, sizeof(why)))
				ok++;
			else
				printf("seed %" PRIu64 " %s: %s\n", seed, sc_names[sc], why);
			keep1 += o.trials_to_keep == 1;
			keep2 += o.trials_to_keep == 2;
			at1200 += o.budget == 1200;
			hours += o.hours;
			pairs += o.first_pairs;
			b_max = fmax(b_max, o.b_longest_ms / 1000.0);
		}
		/* Rates, not certainties: one failure in ten is allowed where noise decides (misconfig). */
		/* Placement: a gain of 20% missed (inconclusive, reverted: the safe side) in 0 of 64 seeds for rps and
		 * 3 of 64 for irq at the default master seed: one in ten, rounded up. */
		allowed = sc == SC_MISCONFIG ? n / 10 : sc == SC_RPS || sc == SC_IRQ ? (n + 9) / 10 : 0;
		printf("%s %-10s %u of %u seeds as required (%u failures allowed)", ok + allowed >= n ? "ok  " : "FAIL",
		       sc_names[sc], ok, n, allowed);
		if (sc == SC_MISCONFIG)
			printf("; kept at trial 1: %u, at trial 2: %u; reached 1200: %u; %.1f h simulated on average",
			       keep1, keep2, at1200, n ? hours / n : 0);
		if (sc == SC_REGRESSION)
			printf("; mean pairs %.2f, new value in force at most %.0f s (block %lld s)", n ? pairs / n : 0,
			       b_max, (long long)(block_ms / 1000));
		if (sc == SC_COLLECTOR)
			printf("; mean pairs %.2f", n ? pairs / n : 0);
		printf("\n");
		if (ok + allowed < n)
			failures++;
	}
	printf("%s (master seed %" PRIu64 ")\n", failures ? "FAILED" : "PASSED", master);
	return failures ? 1 : 0;
}
