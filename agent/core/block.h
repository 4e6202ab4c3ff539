/*
 * block: reduce the frames of one trial block to one number per objective and guardrail metric.
 *
 * Owns how a metric named by a policy becomes a block value: counters and per-tick amounts are summed and divided
 * by the block's requests (per 1000 http.requests, so that load drift between blocks cancels); derived metrics
 * (policy_derived_at) are ratios of sums, never means of per-tick ratios; http.pNN_ms comes from the summed
 * latency histogram (http.lat.bN), client.pNN_ms from the synthetic client's (client.total.lat.bN), with p95 kept
 * beside p99 for blocks under BLOCK_QUANTILE_MIN_REQUESTS observations; gauges are means over the ticks; a load generator's figures (loadgen.*, one value in the frame where
 * a run ended) are means over the runs that ended in the window, void when none did. It also sums the counts behind the judge's hard guardrails (listen
 * overflows, accepts - handled, 5xx) with their exposures. The first settle milliseconds of a block are dropped.
 * A tick counts for a metric only when every input of that metric is present and finite in its frame, so a
 * numerator and its denominator always cover the same ticks; a metric whose ticks fall short of
 * (1 - max_missing) of the window is void (loadgen.* excepted), and a block whose objective (the first metric) is void is void.
 * A count per 1000 requests whose block counted no requests (a host blind to them) is measured per second instead,
 * as the same block's seconds are its exposure (block_value.per_second; the judge compares only like with like).
 * Must not: decide anything (that is judge.c), allocate, read clocks or files. Metric names with a wildcard are
 * refused (-EOPNOTSUPP): a block value is one series.
 */
#ifndef NGXAT_BLOCK_H
#define NGXAT_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "metrics.h"
#include "policy.h"

#define BLOCK_METRICS_MAX (1 + POLICY_GUARDRAILS_MAX) /* the objective, then the guardrails */
#define BLOCK_INPUTS_MAX 6                            /* frame metrics one block metric reads */
#define BLOCK_MAX_MISSING_DEFAULT 0.25                /* share of a window's ticks that may be missing */
#define BLOCK_QUANTILE_MIN_REQUESTS 1000              /* below this, p99 is compared as p95 */
#define BLOCK_DEN_SECONDS (-2)                        /* block_def.den of a rate: per second */

enum block_kind {
	BLOCK_PER_KREQ,  /* a counter or per-tick amount: its sum per 1000 http.requests */
	BLOCK_RATIO,     /* a derived metric: ratio of two sums (or a sum per second: http.good_rate) */
	BLOCK_MEAN,      /* a gauge: mean over the ticks */
	BLOCK_QUANTILE,  /* a latency percentile of the summed histogram */
	BLOCK_RUN,       /* a load generator's figure (loadgen.*): the mean over the runs that ended in the window */
};

struct block_spec {
	size_t n;                                          /* metrics: [0] the objective, then guardrails */
	char names[BLOCK_METRICS_MAX][POLICY_METRIC_MAX];
	int64_t tick_ms;                                   /* sampling interval: the window's expected ticks */
	double max_missing;                                /* BLOCK_MAX_MISSING_DEFAULT unless set */
};

struct block_value {
	char name[POLICY_METRIC_MAX];
	enum block_kind kind;
	bool count;        /* the numerator counts events (errors, drops): the judge compares it conditionally */
	bool is_void;      /* too few good ticks, or nothing to divide by */
	uint32_t ticks;    /* ticks that had every input */
	double num, den;   /* value = num / den; the judge reads the raw counts for its binomial tests */
	double value;      /* NAN when void; quantiles: the named percentile in ms */
	double value_p95;  /* quantiles: p95 of the same histogram (the fallback under 1000 requests); else value */
	double nobs;       /* quantiles: requests in the histogram */
	bool per_second;   /* a count per 1000 requests measured per second instead: the block counted no requests
			    * (a host blind to them: no access log nginx writes) */
};

/* A count with its exposure, for the hard guardrails: NAN when the inputs were never present. */
struct block_count {
	double events;
	double exposure;
	uint32_t ticks;
	uint32_t event_ticks; /* ticks with at least one event: the occurrences of a count that comes in bursts */
	uint32_t run;         /* ticks with events in a row up to the last one added (0: none in the last) */
};

struct block_summary {
	int64_t from_ms, to_ms;   /* the measured window: settle dropped */
	uint32_t expected;        /* ticks the window should hold */
	uint32_t frames;          /* frames that fell in the window (in time order) */
	bool is_void;             /* the objective is void */
	double requests;          /* http.requests over the ticks where it was present */
	uint32_t requests_ticks;  /* ticks where it was present */
	bool requests_seen;       /* present in enough of the window's ticks (as for a metric not to be void) */
	struct block_count overflows; /* tcp.listen_overflows per http.requests */
	struct block_count unhandled; /* nginx.accepts - nginx.handled (less what can be in flight) per nginx.accepts */
	struct block_count errors;    /* http.5xx per http.requests */
	size_t n;
	struct block_value v[BLOCK_METRICS_MAX];
};

/* The accumulator's view of one frame metric: resolved to an id lazily, since the sampler interns names late. */
struct block_input {
	char name[POLICY_METRIC_MAX];
	uint32_t id;  /* 0: not interned yet */
	double v;     /* this tick's value; NAN when absent */
};

struct block_def {
	enum block_kind kind;
	bool count;
	bool cpu;                     /* inputs are CPU percent: converted to ms with sys.cpus and the tick length */
	double q;                     /* quantiles */
	bool client;                  /* a quantile of the synthetic client's histogram (client.total.lat.bN, us) */
	size_t nnum;
	int num[BLOCK_INPUTS_MAX];    /* input indexes; a negative sign is kept in num_sign */
	int num_sign[BLOCK_INPUTS_MAX];
	int den;                      /* input index, -1 for the tick count (means), BLOCK_DEN_SECONDS for the
				       * ticks' seconds (rates) */
	double den_scale;
};

/* Running sums of one block; fill with block_acc_start. Fixed size, no allocation. */
struct block_acc {
	struct block_spec spec;
	struct block_def def[BLOCK_METRICS_MAX];
	struct block_input in[BLOCK_METRICS_MAX * BLOCK_INPUTS_MAX + 8];
	size_t nin;
	int i_req, i_5xx, i_ovf, i_acc, i_hnd, i_cpus, i_wrk, i_creq;
	uint32_t bucket_id[HIST_NBUCKETS], cbucket_id[HIST_NBUCKETS];
	struct { uint32_t id; uint16_t slot; } map[BLOCK_METRICS_MAX * BLOCK_INPUTS_MAX + 8 + 2 * HIST_NBUCKETS];
	size_t nmap;
	uint32_t reg_max;          /* metric_max_id when ids were last resolved */
	int64_t from_ms, to_ms, last_ts;
	bool any_frame;
	uint32_t frames;
	double num[BLOCK_METRICS_MAX], den[BLOCK_METRICS_MAX];
	double num_s[BLOCK_METRICS_MAX], den_s[BLOCK_METRICS_MAX]; /* BLOCK_PER_KREQ: the sums per second */
	uint32_t ticks_s[BLOCK_METRICS_MAX];
	uint32_t ticks[BLOCK_METRICS_MAX];
	struct hist lat, clat;     /* nginx's request times (ms); the synthetic client's (us) */
	uint32_t lat_ticks, clat_ticks;
	double requests;
	uint32_t requests_ticks;
	struct block_count overflows, unhandled, errors;
	double workers;            /* the most nginx workers seen in the block (nginx.workers) */
};

/* Whether metric NAME is an outcome: what clients get (good responses served, error responses, failed and
 * timed-out connections: the synthetic client's, the kernel's overflows and drops, nginx's logged failures; and
 * latency where it is measured). Every other metric is internal to the host (CPU per request, run-queue wait,
 * softirq share, sockets held): it explains a verdict and guards against cost, and a shown gain of outcomes
 * outweighs it (judge.h). */
bool block_metric_outcome(const char *name);
/* Fill SPEC with NAMES[0..N) (the objective first) and TICK_MS. 0; -EINVAL (N is 0 or above BLOCK_METRICS_MAX, a
 * name empty or too long, TICK_MS not positive); -EOPNOTSUPP for a wildcard name. */
int block_spec_init(struct block_spec *spec, const char *const *names, size_t n, int64_t tick_ms);
/* SPEC from policy P: its objective, then its guardrails. Same errors as block_spec_init. */
int block_spec_from_policy(struct block_spec *spec, const struct knob_policy *p, int64_t tick_ms);
/* How metric NAME is reduced (for docs and the judge's choice of test); -EINVAL for a bad name. */
int block_metric_kind(const char *name, enum block_kind *kind, bool *count);
/* Whether NAME is a latency the synthetic client timed (client.pNN_ms): from its connect to the answer's end, so it
 * holds the wait to be accepted, which nginx's request times never see. */
bool block_metric_client_timed(const char *name);

/* Begin a block over [START_MS, END_MS) whose first SETTLE_MS are dropped. 0 or -EINVAL (a bad spec, an empty
 * window after settle, a window of more than 2^31 ticks). */
int block_acc_start(struct block_acc *acc, const struct block_spec *spec, int64_t start_ms, int64_t end_ms,
		    int64_t settle_ms);
/* Add one frame. Frames outside the window, or not later than the last one taken, are ignored. REG names the
 * frame's ids. 0 or -EINVAL. */
int block_acc_add(struct block_acc *acc, const struct metric_registry *reg, const struct frame *fr);
/* The block's summary from the sums so far. */
void block_acc_finish(const struct block_acc *acc, struct block_summary *out);
/* All at once: reduce FRAMES[0..N) (a scratch accumulator of the caller's, ACC, avoids a large stack frame). */
int block_reduce(struct block_acc *acc, const struct block_spec *spec, const struct metric_registry *reg,
		 const struct frame *frames, size_t n, int64_t start_ms, int64_t end_ms, int64_t settle_ms,
		 struct block_summary *out);

#endif
