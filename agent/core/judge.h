/*
 * judge: the trial verdict under noise (DESIGN.md, "The judge").
 *
 * Owns the decision of one trial from its pairs of block summaries (block.h): per valid pair the objective's
 * d = ln(B/A), signed so that positive is better (the direction comes from the policy); the verdict keep only
 * when the lower one-sided t bound of mean(d) exceeds ln(1 + delta) AND the one-sided sign test agrees AND both
 * halves of the trial have a positive mean AND every guardrail held (non-inferiority shown for continuous ones);
 * revert when the upper bound is below -ln(1 + delta); otherwise inconclusive (the knob is reverted as well and
 * may be retried later). Before K, the trial stops early toward keep when the evidence is overwhelming: the
 * sequential t-test's Bayes factor (stats_seq_t_logbf on d - ln(1 + delta), with the objective's A/A calibration as
 * prior knowledge of the noise when there is one; a pair better than JUDGE_SEQ_CLIP times counts as that much)
 * reaches 1 / alpha_seq after at least seq_min valid pairs, every
 * valid pair is better, and every guardrail held in every pair; it is always valid, so a large effect ends in a few
 * pairs and a null one runs the full K. A block that served nothing (no requests while its logs were read) while
 * the other block of its pair served is an outage: the worst block, d = -+ln(JUDGE_OUTAGE_FACTOR), not missing
 * data (an outage in B ends the trial as harm). After every pair, in the harm direction only: hard trips (listen overflows or
 * accepts != handled in B while no A block of the trial had any; a 5xx share above the ceiling in B but not in
 * A), counter guardrails compared conditionally (given n events in a pair, B's count is Binomial(n, B's share of
 * the exposure) when there is no effect: an exact one-sided test with a margin, per pair and pooled), continuous
 * guardrails (p99, CPU per request) by their own log ratios; an objective or guardrail that is grossly worse in
 * one pair, or clearly worse over the pairs so far, ends the trial early. The trial never ends early toward keep.
 * A void block (block.h) voids its pair; void pairs are replaced up to max_void_pairs; max_void_run consecutive
 * void blocks end the trial as VERDICT_ERROR. An A/A calibration sizes K and refuses to judge when the noise
 * floor exceeds the smallest effect worth keeping. Every verdict carries its evidence as a struct, which agent/api
 * renders for the wire.
 *
 * Defaults (judge_config_default), chosen with tests/sim: delta 5% (the smallest effect worth keeping), alpha
 * 0.05 (one-sided t bound), K = 8 pairs, sign test at 0.10 (7 of 8 pairs must agree), counter guardrails at
 * 0.001 with a 10% margin, continuous guardrails with a 10% non-inferiority margin, early harm at 0.01, gross
 * harm at 2x in one pair, 5xx ceiling 2%, 3 consecutive void blocks, 4 void pairs, power 0.8 at 2 x delta; the
 * sequential rule at alpha_seq 0.05 with tau 2 (the prior sd of the effect in noise units) from 2 valid pairs.
 *
 * What clients got is witnessed by good responses per second when the trial measures them, else by the synthetic
 * client's failure share (a host blind to its requests still sees its own client fail): "good responses" below.
 * Outcomes decide (DESIGN.md): every trial also watches what clients get (plan_trial_outcomes: good responses per
 * second, the synthetic client's failures and median, the 5xx share), as implied guardrails that end a trial only
 * on clear harm (a counted one by its conditional test, a continuous one by the early harm bound over three pairs
 * or more; never one pair alone, and they need not show non-inferiority to keep). An internal figure
 * (block_metric_outcome: CPU per request, run-queue wait, softirq share...) cannot end or refuse a change that serves
 * clients better: its harm, as a guardrail or as the objective, is outweighed while good responses are better by
 * more than delta in the pair (and over the pairs so far) at no worse client latency, and the trial goes on; at
 * the verdict a gain of good responses shown as a keep is (t bound, sign test, halves) keeps the change whatever an
 * internal objective says, and where an outcome objective did not show harm ("outcome keep": the symptom a policy
 * judges on may not show in a trial, as nginx 1.22 out of connections logs no error while its clients time out).
 * With nothing of what clients got measured, internal figures guard as before. A latency guardrail whose rise cost
 * clients less time than fewer drops and failures saved them (JUDGE_LOST_MS each), summed over the pairs, is
 * outweighed too: the answers of the two arms are not the same requests then.
 *
 * In a pool (issue 24), a change another host kept comes with that trial's standardized effect, which centres the
 * sequential rule's prior (judge_set_prior: confirmed in fewer pairs, never a keep likelier); and the hosts not in
 * trial may be the control group: a pair's d less the peers' mean d over the same two windows (judge_set_control),
 * so that a swing of the whole pool's traffic cancels (tests/sim, bench/judge -P).
 *
 * The order of the blocks of a pair is drawn by the controller; the judge is told it (for the audit trail and
 * the void-run count). Must not: draw random numbers, read clocks or files, log, allocate, or write wire text.
 */
#ifndef NGXAT_JUDGE_H
#define NGXAT_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block.h"
#include "policy.h"

#define JUDGE_PAIRS_MAX 32      /* pairs of one trial, void ones included */
#define JUDGE_REASON_MAX 256
#define JUDGE_OUTAGE_FACTOR 1000.0     /* an outage block is this many times worse than the block that served */
#define JUDGE_OUTAGE_MIN_REQUESTS 50.0 /* the serving block of an outage pair served at least this many */
#define JUDGE_SEQ_CLIP 10.0            /* the sequential rule counts a pair better than 10x as 10x */
#define JUDGE_PRIOR_EFFECT_MAX 8.0     /* a standardized effect is said as at most this (identical pairs: infinite) */
#define JUDGE_PRIOR_SPREAD 1.0         /* how far one host's standardized effect may lie from another's, in sds */
#define JUDGE_CONTROL_MIN_PEERS 2      /* peers a pair's control needs: fewer, and the pair is judged on its own */
#define JUDGE_CONTROL_MAX 4.0          /* a control of more than 4x either way is not taken (the pair on its own) */
/* A client's time lost to one dropped connection (its SYN is sent again after the kernel's initial RTO, 1 s) or to
 * one failed request (it tries again or goes without: no less): the unit in which slower answers are weighed against
 * fewer drops and failures (the clients' time ledger, judge.c). */
#define JUDGE_LOST_MS 1000.0

enum judge_verdict {
	VERDICT_NONE,          /* the trial goes on */
	VERDICT_KEEP,
	VERDICT_REVERT,        /* the objective got worse */
	VERDICT_INCONCLUSIVE,  /* no effect shown either way: revert, may retry later */
	VERDICT_ABORTED,       /* a guardrail failed */
	VERDICT_ERROR,         /* too much missing data */
};

struct judge_config {
	double delta;            /* smallest relative gain worth keeping */
	double alpha;            /* one-sided level of the t bounds of the verdict */
	double alpha_sign;       /* one-sided level of the sign test */
	double alpha_early;      /* one-sided level of the early harm bounds (objective and continuous guardrails) */
	double alpha_guard;      /* one-sided level of the conditional counter tests */
	double guard_margin;     /* relative worsening a guardrail may show and still hold */
	double latency_floor_ms; /* a latency guardrail counts a block's value below this as this: a change within it
				  * is no harm a client notices (sub-millisecond medians move with the CPU the
				  * load generator takes, not with what clients wait for) */
	double gross_harm;       /* one pair worse by this factor - 1 ends the trial (0: off) */
	double error_ceiling;    /* 5xx share that trips in B when A stays under it */
	double power;            /* calibration: power wanted at an effect of 2 x delta */
	double quantile_min_requests; /* fewer requests in a block of the pair: p99 is compared as p95 */
	unsigned pairs;          /* K valid pairs */
	unsigned pairs_min, pairs_max; /* calibration range of K */
	unsigned max_void_pairs; /* void pairs replaced before VERDICT_ERROR */
	unsigned max_void_run;   /* consecutive void blocks that give VERDICT_ERROR */
	unsigned overflow_trip_min; /* listen overflows or unhandled connections in B (the trial's B blocks so far,
				     * inside a block that block) before they may trip when A had none
				     * (judge_new_events_shown) */
	double alpha_seq;        /* level of the sequential early keep (0: off) */
	double seq_tau;          /* its prior sd of the effect, in units of the noise sd */
	unsigned seq_min;        /* valid pairs before it may stop */
};

enum judge_guard_test {
	JUDGE_TEST_BINOMIAL, /* event counters: conditional exact test */
	JUDGE_TEST_NONINF,   /* everything else: per-pair log ratios */
};

struct judge_guard_ev {
	char metric[POLICY_METRIC_MAX];
	enum policy_direction dir;
	enum judge_guard_test test;
	bool implied;         /* added for what clients get (plan_trial_outcomes): ends the trial on clear harm only */
	bool ledger;          /* implied for the clients' time ledger alone: weighed, it ends no trial */
	bool internal;        /* an internal figure (block_metric_outcome): a shown gain of outcomes outweighs it */
	bool outweighed;      /* it showed harm that a gain of good responses outweighed (the trial went on), or a
			       * latency whose rise cost clients less time than fewer drops and failures saved */
	bool latency;         /* a latency quantile (block kind BLOCK_QUANTILE), in ms */
	bool client_timed;    /* latency: the synthetic client's, which holds the wait to be accepted */
	double saved_ms, cost_ms; /* latency: the clients' time ledger per 1000 requests, mean over the valid pairs:
				   * saved by fewer drops and failures, cost by slower answers (NAN: not weighed) */
	bool available;       /* present in at least one valid pair */
	bool failed;
	unsigned failed_pair; /* 1-based pair that failed it, 0 when it held */
	double events_a, events_b, exposure_a, exposure_b; /* binomial: pooled over the valid pairs */
	double p;             /* binomial: pooled one-sided p value */
	double mean, lower, upper; /* non-inferiority: mean signed log ratio and its one-sided alpha bounds */
	bool noninf_shown;    /* lower > -ln(1 + guard_margin) */
};

struct judge_pair_ev {
	bool b_first;
	bool is_void;
	bool p95;             /* the objective p99 was compared as p95 (a block under quantile_min_requests) */
	char outage;          /* 'a' or 'b': that block served nothing while the other served; 0 otherwise */
	double a, b;          /* the objective's block values */
	double d;             /* signed log ratio; NAN for a void pair (against the peers' when CONTROL is) */
	double control;       /* the peers' signed log ratio over the same two blocks, taken from d (NAN: none) */
	unsigned control_peers; /* ... the mean of that many peers' */
	double requests_a, requests_b;
	double g[POLICY_GUARDRAILS_MAX]; /* per guardrail: d (non-inferiority) or the pair's p value (binomial) */
	double gr[POLICY_GUARDRAILS_MAX]; /* binomial guardrails: the signed log ratio of their rates (NAN else) */
	double ga[POLICY_GUARDRAILS_MAX], gb[POLICY_GUARDRAILS_MAX]; /* per guardrail: its block values in A and B (a
					 * count's rate: a share, or events per 1000 requests; a latency in ms, floored
					 * at latency_floor_ms; NAN: none) */
};

struct judge_evidence {
	enum judge_verdict verdict;
	char reason[JUDGE_REASON_MAX];  /* one sentence */
	char objective[POLICY_METRIC_MAX];
	enum policy_direction dir;
	double delta, alpha;
	unsigned planned;               /* K */
	unsigned npairs, nvalid, nvoid;
	struct judge_pair_ev pair[JUDGE_PAIRS_MAX];
	double mean, sd, t_crit;        /* over the valid pairs */
	double lower, upper;            /* one-sided 1 - alpha bounds of mean(d) */
	double effect, effect_lo, effect_hi; /* the same as relative changes: exp(x) - 1 */
	unsigned sign_pos, sign_neg;
	double sign_p;
	double half1, half2;
	double log_bf;                  /* the sequential rule's log Bayes factor over the valid pairs (NAN before 1) */
	double seq_effect;              /* its standardized effect: mean / sd of what it adds up, clipped to
					 * +-JUDGE_PRIOR_EFFECT_MAX (NAN before 2 valid pairs): what a peer's prior takes */
	double prior_effect, prior_tau; /* the prior of the effect it was told (judge_set_prior), NAN: the default one */
	unsigned prior_pairs;           /* ... from a trial of that many pairs (0: none) */
	unsigned ncontrolled;           /* valid pairs judged against the peers' difference (judge_set_control) */
	double noise_sd;                /* the calibration's sd of d it was told (NAN: none) */
	unsigned noise_n;               /* the calibration's pairs */
	bool early;                     /* kept by the sequential rule before K */
	bool measured_on;               /* past K: the bound showed a gain the pairs did not yet agree on (up to
					 * pairs_max pairs) */
	bool objective_internal;        /* the objective is an internal figure (block_metric_outcome) */
	bool per_second;                /* the objective, a count per 1000 requests, was compared per second: the host
					 * counted no requests (block_value.per_second) */
	bool outcome_keep;              /* kept on what clients got (good responses) although the objective did not
					 * show the gain */
	double a_events;                /* harm while judging: the objective's events in the A blocks (a counted
					 * objective; NAN otherwise) and the seconds A was measured */
	double a_seconds;
	bool trip_overflow, trip_unhandled, trip_errors;
	size_t nguard;
	struct judge_guard_ev guard[POLICY_GUARDRAILS_MAX];
};

struct judge {
	struct judge_config cfg;
	struct judge_evidence ev;
	unsigned void_run;
	double a_overflows, a_unhandled; /* events in the trial's A blocks so far */
	double a_seconds;               /* ... and their seconds */
	double b_overflows, b_unhandled, b_seconds; /* the same of its B blocks */
	double a_requests, b_requests;  /* the requests each arm served, while every block's were read ... */
	bool requests_unread;           /* ... or a block's were not: the trips' exposure is then the seconds */
	uint32_t b_overflow_ticks, b_unhandled_ticks; /* ... and their ticks that had any */
	double base_rate;               /* the objective's events per second before the trial (NAN: unknown) */
	double base_overflow_rate;      /* listen overflows/s before the trial (0: none or unknown) */
	bool done;
	double prior_ss, prior_df;      /* the calibration as prior knowledge of the noise (0, 0: none) */
	double control_d;               /* the next pair's control (judge_set_control), NAN: none */
	unsigned control_peers;
};

struct judge_calibration {
	unsigned n;           /* A/A pairs */
	double mean, sd;      /* of their d */
	unsigned pairs;       /* K for the configured power at 2 x delta (pairs_max when out of reach) */
	double floor;         /* one-sided half width of the t interval at pairs_max */
	double needed;        /* ln(1 + delta): the floor must stay below it */
	bool refuse;          /* noise floor too high */
	char reason[JUDGE_REASON_MAX];
};

/* The documented defaults. */
void judge_config_default(struct judge_config *cfg);
/* 0, or -EINVAL when a field is out of range (levels in (0, 0.5], delta in (0, 1], pairs in 2..pairs_max...). */
int judge_config_check(const struct judge_config *cfg);
/* Start judging a trial of OBJECTIVE and GUARD[0..NGUARD) (the order of block_spec's names). 0 or -EINVAL. */
int judge_start(struct judge *j, const struct judge_config *cfg, const struct policy_metric *objective,
		const struct policy_metric *guard, size_t nguard);
/* Start judging a trial of policy P. 0 or -EINVAL. */
int judge_start_policy(struct judge *j, const struct judge_config *cfg, const struct knob_policy *p);

/*
 * What the detectors saw before the trial (after judge_start): RATE, the objective's events per second when it is
 * a counter a detector read (NAN: unknown), and OVERFLOWS, listen overflows per second (0: none). Counts come in
 * bursts (an accept queue overflows hundreds at once, then not for seconds), so an A block without any is no proof
 * that the value in force has none: with overflows before the trial, those in B trip only above OVERFLOWS x
 * (1 + gross_harm), and a counted objective is grossly worse in one pair only when B's rate is also above RATE x
 * (1 + gross_harm) (found
 * on a real nginx at 2000 clients: listen_queue 511 -> 1022 aborted on "435 new overflows in B, none in A" at
 * 109/s, where the old value had made 479/s before the trial).
 */
void judge_set_baseline(struct judge *j, double rate, double overflows);
/* Whether EVENTS listen overflows in SECONDS of a B block are beyond the rate before the trial (any are, when
 * there was none): the hard trip's test, shared with the controller's trip inside a block. */
bool judge_overflows_beyond_base(const struct judge *j, double events, double seconds);
/*
 * Whether EVENTS counted in B_SECONDS of a B block, in EVENT_TICKS of its ticks, none in A_SECONDS without the
 * change (the trial's A blocks, or before the first one the detectors' window), show a new harm. Overflows come in
 * bursts (one stall drops many at once), so the occurrences counted are the ticks that had any (at most EVENTS,
 * which for accepts != handled is what is left past nginx's in-flight slack): at equal rates all n of them would
 * land in B with probability (B_SECONDS / (A_SECONDS + B_SECONDS))^n, and the hard trips need that below
 * alpha_guard (the level of the counter tests) and at least overflow_trip_min events. One listen overflow in B beside none in A is
 * chance (found on a real nginx at 100 clients: gzip_comp_level 9 -> 5 aborted on "1 in the B block of pair 3,
 * none in A"); a listen queue too short makes dozens a second. The judge counts all B blocks of the trial so far
 * (a few in every B block add up), the controller's trip inside a block that block. A_SECONDS unknown (<= 0)
 * counts as B_SECONDS. The judge's exposures are the requests each arm served where every block's were read (an
 * arm that serves more accepts more connections), else the seconds.
 */
bool judge_new_events_shown(const struct judge *j, double events, uint32_t event_ticks, double a_seconds,
			    double b_seconds);
/* Tell the judge the objective's A/A calibration (sd of d over N pairs, N >= 2) before the first pair: the
 * sequential rule counts it as N - 1 degrees of freedom of knowledge of the noise. 0; -EINVAL (a bad sd or N, or
 * pairs already added). */
int judge_set_noise(struct judge *j, double sd, unsigned n);
/* Tell the judge before the first pair what a peer's trial of the same change found (the pool's canary): its
 * standardized effect EFFECT (judge_evidence.seq_effect) over PAIRS valid pairs. The sequential rule's prior of the
 * effect is then centred there, N(EFFECT, tau^2) with tau^2 = (1 + EFFECT^2 / 2) / PAIRS (the estimate's own
 * variance) + JUDGE_PRIOR_SPREAD^2 (hosts differ), instead of N(0, seq_tau^2): a gross effect is confirmed in two
 * pairs. It only moves where the rule looks: its error stays at alpha_seq whatever EFFECT says
 * (stats_seq_t_logbf_prior), and every other rule is as without it. 0; -EINVAL (EFFECT not finite, PAIRS < 2, or
 * pairs already added). */
int judge_set_prior(struct judge *j, double effect, unsigned pairs);
/* The peers as the control group of the next pair (judge_add_pair takes it, once): D is the mean over PEERS hosts
 * of the pool not in trial of the objective's signed log ratio between the same two windows as that pair's blocks
 * (positive: better in B's window, as the pair's d). With at least JUDGE_CONTROL_MIN_PEERS, the pair's d is
 * judged less D: a swing of the whole pool's traffic moves both and cancels, the host's own noise and the peers'
 * mean's remain. With fewer, D not finite or beyond JUDGE_CONTROL_MAX either way, the pair is judged on its own,
 * as it would be without peers, and the evidence counts which pairs had the control (ncontrolled). Gross harm in
 * one pair is judged on the worse of d and d less D: a control never hides harm. The agent's pool hands it the
 * mean of its peers' figures (fleet/control.h); the simulator's pool scenario models it. 0; -EINVAL (no judge). */
int judge_set_control(struct judge *j, double d, unsigned peers);
/* Add the pair (A, B), B measured first when B_FIRST. Sets *DONE when a verdict is reached. 0; -EINVAL (the
 * summaries do not match the judge's metrics); -EALREADY after the verdict. */
int judge_add_pair(struct judge *j, const struct block_summary *a, const struct block_summary *b, bool b_first,
		   bool *done);
/* The evidence so far (the running estimate during the trial, the verdict after it). */
const struct judge_evidence *judge_evidence(const struct judge *j);
/* The objective's signed log ratio of one pair, for A/A calibration runs. 0, or -ENODATA for a void block. */
int judge_pair_effect(const struct judge *j, const struct block_summary *a, const struct block_summary *b,
		      double *d);

/* Size K from A/A pairs' D[0..N) (N >= 3) and decide whether the objective can be judged at all. 0 or -EINVAL. */
int judge_calibrate(const struct judge_config *cfg, const double *d, size_t n, struct judge_calibration *out);

/* "keep", "revert", ... ("running" for VERDICT_NONE). */
const char *judge_verdict_name(enum judge_verdict v);

#endif
