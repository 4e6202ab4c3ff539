/*
 * sim: a plant model of an nginx host for the judge, and the runs that score the judge against ground truth.
 *
 * The plant has offered load with diurnal drift, on/off bursts and AR(1) noise, heavy-tailed latency spikes,
 * latency that grows as 1 / (1 - utilisation) with a log-normal spread, slowly drifting CPU cost per request,
 * Poisson error counters and listen overflows when load exceeds capacity. Each trial draws a true effect of the
 * new value (60% none, 20% small gain below 2 x delta, 10% large gain, 10% harm, half of the harms also hurting a
 * guardrail); the effect ramps in (time constant 4 s) after every switch. The plant emits per-tick frames (the
 * sampler's metric names, http.lat.bN included) that go through block.c into judge.c, exactly as on a host.
 * The same trial seed also drives a naive before/after judge on the same load, spikes and bursts.
 * Test code: static tables are fine here, core rules do not apply.
 */
#ifndef NGXAT_SIM_H
#define NGXAT_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "judge.h"

enum sim_class { SIM_NONE, SIM_SMALL, SIM_LARGE, SIM_HARM, SIM_CLASSES };
enum sim_guard_harm { SIM_GH_NONE, SIM_GH_5XX, SIM_GH_LATENCY, SIM_GH_CAPACITY };

#define SIM_TIME_BINS 1081 /* 10 s bins: three hours, then one for beyond */

struct sim_options {
	struct judge_config judge;
	int64_t block_ms, settle_ms, tick_ms;
	double miss_prob;         /* chance that a tick's access-log metrics are missing */
	double noise;             /* scales the AR(1) load noise (1 = the default plant) */
	/* Forcing, for scenario tests: class < 0 draws from the prior. */
	int force_class;
	double force_gain;        /* relative gain of the objective (negative: harm) when forcing */
	enum sim_guard_harm force_guard;
	int force_objective;      /* -1 draw, 0 http.p99_ms, 1 cpu.busy_per_kreq */
	int dead_from_pair;       /* the collector dies from this pair on (1-based), 0 never */
	bool aa;                  /* A/A: B is the same value as A (no effect at all) */
	unsigned calibrate_pairs; /* A/A pairs on the same plant before the trial, as the controller does (0: none) */
	/* A pool (issue 24): PEERS more hosts behind the same balancer, never in trial, with the trial host's load,
	 * latency and cost as drawn but noise, bursts and spikes of their own; all of them share a swing of the
	 * pool's traffic, a slow AR(1) of ln load with sd SWING and time constant SWING_TAU_S. With PEER_CONTROL the
	 * judge is told the peers' mean d over each pair's two windows (judge_set_control), calibration pairs too. */
	unsigned peers;
	double swing, swing_tau_s;
	bool peer_control;
	bool verbose;             /* print each verdict with its evidence */
};

struct sim_result {
	uint64_t seed;
	enum sim_class cls;
	double gain;              /* true relative gain of the objective */
	enum sim_guard_harm guard;
	const char *objective;
	enum judge_verdict verdict, naive;
	unsigned pairs;           /* pairs the judge saw */
	int64_t decision_ms;      /* from the start (calibration included) to the verdict */
	bool early;               /* kept by the sequential rule */
	double harm_exposure;     /* %-seconds of harm while the trial ran (B in force x size of harm) */
	double naive_exposure;
	double aa_d[JUDGE_PAIRS_MAX]; /* A/A runs: the pairs' d */
	unsigned naa;
	unsigned controlled;      /* pairs judged against the peers */
};

/* Defaults: judge_config_default, 60 s blocks, 20 s settle, 1 s ticks, 1% missing ticks, 4 calibration pairs. */
void sim_options_default(struct sim_options *o);
/* Run one trial (and the naive judge on the same plant) from SEED. 0 or -errno. */
int sim_run(uint64_t seed, const struct sim_options *o, struct sim_result *r);
/* Run A/A pairs only (no change): their d values for judge_calibrate. 0 or -errno. */
int sim_run_aa(uint64_t seed, const struct sim_options *o, unsigned pairs, struct sim_result *r);

struct sim_tally {
	unsigned n;
	unsigned cls[SIM_CLASSES];
	/* [0] the judge, [1] the naive before/after judge */
	unsigned aa_fp[2], aa_n;                  /* no effect, verdict other than inconclusive */
	unsigned false_keep[2], below_delta;      /* kept while the true gain < delta */
	unsigned false_revert[2], big_gain;       /* not kept while the gain >= 2 delta */
	unsigned kept_harm[2], harm_n;
	double exposure[2];
	unsigned guard_caught[2], guard_n;        /* guardrail harms ended as aborted or revert */
	double pairs_sum;
	/* per class: how many trials decided after N pairs, and within 10 s bins of time (the last bin: beyond) */
	unsigned pairs_at[SIM_CLASSES][JUDGE_PAIRS_MAX + 1];
	unsigned secs_at[SIM_CLASSES][SIM_TIME_BINS];
	unsigned verdicts[2][VERDICT_ERROR + 1];
};

/*
 * A host for closed-loop runs (tests/sim/test_loop_sim.c): the same plant, driven tick by tick, whose knob effects
 * the caller sets (they ramp in as in sim_run) and which also emits softnet.time_squeeze, nginx.requests and the
 * request and upstream time sums that the detectors read; a saturated one (sim_host_options.overload) also what
 * clients got (good responses, the synthetic client's failures) and the workers' CPU and wait. Its load, latency and noise are drawn from SEED as in
 * sim_run; there is no drawn effect (the caller's effects are the truth).
 */
struct sim_effect {
	double lat, cost, e5xx, cap, squeeze; /* multipliers in force: 1 is the plant as drawn */
	double wait;                          /* the workers' run-queue wait per CPU ms (saturated hosts) */
};

struct sim_host_options {
	double squeeze_per_kreq;  /* softnet time_squeeze events per 1000 requests at squeeze 1 */
	double upstream_share;    /* share of request time spent upstream (0: static content) */
	/* A saturated host (0: off, the plant as drawn, open loop below capacity): clients offer OVERLOAD times the
	 * capacity; nginx serves what its capacity allows (http.2xx, http.3xx) and the rest time out (the synthetic
	 * client's failures); the workers report their CPU and run-queue wait (nginx.worker_run_ms, _wait_ms). */
	double overload;
};

struct sim_host;

/* A host from SEED with O's noise and missing ticks. 0, -EINVAL or -ENOMEM. */
int sim_host_new(uint64_t seed, const struct sim_options *o, const struct sim_host_options *ho,
		 struct sim_host **out);
/* Free H; NULL is fine. */
void sim_host_free(struct sim_host *h);
/* The registry of H's frames. */
struct metric_registry *sim_host_registry(struct sim_host *h);
/* The effects in force from now on (they ramp in with the plant's time constant). */
void sim_host_set_effect(struct sim_host *h, const struct sim_effect *e);
/* The collector is down (every probe fails) while DEAD. */
void sim_host_set_dead(struct sim_host *h, bool dead);
/* Advance one tick to TS_MS; *FR is the tick's frame (valid until the next call). 0 or -errno. */
int sim_host_tick(struct sim_host *h, int64_t ts_ms, const struct frame **fr);
/* Add NAME = V to the frame of the last sim_host_tick (metrics the plant does not model: per-CPU shares, links). */
int sim_host_put(struct sim_host *h, const char *name, double v);
/* Requests per second offered at the start (for messages). */
double sim_host_load(const struct sim_host *h);

/* Count R into T. */
void sim_tally_add(struct sim_tally *t, const struct sim_result *r, double delta);
/* Pairs and seconds to a verdict in class C of T at quantile Q (0.5, 0.9); 0 when the class is empty. */
void sim_tally_decision(const struct sim_tally *t, enum sim_class c, double q, unsigned *pairs, double *secs);
/* Print T as a table with Wilson 95% intervals. */
void sim_tally_print(FILE *f, const struct sim_tally *t);
/* Name of a class. */
const char *sim_class_name(enum sim_class c);

#endif
