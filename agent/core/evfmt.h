/*
 * evfmt: the judge's evidence as text people read, in each metric's own unit.
 *
 * Owns how a block value is written for people: the unit a metric's block value is in (derived from its name and
 * from how block.c reduces it: counters per 1000 requests, derived ratios as shares, CPU ms per 1000 requests,
 * latencies in ms), a short human name for the well-known metrics, the arms of a trial ("listen overflows
 * 486/1k req -> 0/1k req"), and a relative change with its interval ("fell 78% [71%, 83%]"). The rules, pinned by
 * tests/unit/test_evfmt.c:
 *
 *  - A change is the ratio R = B/A with its bounds. While R is within a factor of 11 of 1 it is a percentage
 *    ("rose 12%", "fell 78%"); beyond, it is a factor ("rose 38x", "fell to 1/380"), so that no percentage above
 *    1000% is ever written; a fall's percentage is at most 90.9%. A change under 0.05% is "unchanged".
 *  - An interval on the same side as the change is written as magnitudes of that change, smallest first ("fell 78%
 *    [71%, 83%]", "fell to 1/380 [1/50, 1/2000]"); factors are used for all three figures when any one exceeds 11x.
 *    An interval across no change is written as signed changes of B against A, lowest first ("rose 5% [-3%,
 *    +14%]"); there each bound beyond 11x is a factor ("[1/20, +40%]").
 *  - A ratio that is zero, infinite or not a number (a zero side), or an interval with such a bound, is not a
 *    change: the functions that take only ratios refuse it (-EDOM), the ones that have the values show them.
 *  - With a direction the text ends in " (better)" or " (worse)" when the interval (or the change, before there is
 *    an interval) lies wholly on one side; nothing when it straddles no change.
 *  - Latencies of the access log (http.*_ms, 1 ms resolution) below 1 ms are "< 1 ms"; finer sources (client.*,
 *    loadgen.*, schedstat) keep sub-ms digits. Events at zero are "0/1k req", not "< 0.001/1k req". Figures have
 *    three significant digits; a share or percentage above 1000% is a factor of 100% ("25x").
 *
 * Must not: decide anything (that is judge.c), read clocks or files, log, allocate, or write JSON. Every function
 * writes NUL-terminated text into the caller's BUF and returns 0, -ENOSPC (the text was cut) or as documented.
 */
#ifndef NGXAT_EVFMT_H
#define NGXAT_EVFMT_H

#include <stddef.h>

#include "policy.h"

#define EVFMT_TEXT_MAX 160 /* a value, a change, or a line of a well-known metric; 2x for any metric name */

enum evfmt_unit {
	EVFMT_UNIT_NUMBER,       /* a gauge: the plain number */
	EVFMT_UNIT_MS_COARSE,    /* ms from a 1 ms source (the access log): "< 1 ms" below 1 */
	EVFMT_UNIT_MS,           /* ms from a finer source: "0.42 ms" */
	EVFMT_UNIT_SHARE,        /* a fraction shown as a percentage (0.05 -> "5%") */
	EVFMT_UNIT_PERCENT,      /* a figure in percent already (*_pct) */
	EVFMT_UNIT_PER_KREQ,     /* events per 1000 requests */
	EVFMT_UNIT_MS_PER_KREQ,  /* summed ms per 1000 requests */
	EVFMT_UNIT_CPU_PER_KREQ, /* CPU ms per 1000 requests */
	EVFMT_UNIT_PER_KCONN,    /* events per 1000 accepted connections */
	EVFMT_UNIT_REQ_PER_S,    /* a load generator's request rate */
	EVFMT_UNIT_PER_RUN,      /* a load generator's count, the mean over its runs */
	EVFMT_UNIT_PAGES,        /* memory pages (tcp.sockstat.mem_pages) */
	EVFMT_UNIT_PER_S,        /* events per second (a count measured where no request was counted) */
};

/* Which way is better, for the word at the end of a change; EVFMT_SENSE_NONE writes none. */
enum evfmt_sense { EVFMT_SENSE_NONE, EVFMT_SENSE_LOWER_BETTER, EVFMT_SENSE_HIGHER_BETTER };

/* The unit METRIC's block value is in (EVFMT_UNIT_NUMBER for a name block.c does not know). */
enum evfmt_unit evfmt_unit_of(const char *metric);
/* A short human name for a well-known METRIC ("listen overflows"), else METRIC itself. Never NULL. */
const char *evfmt_label(const char *metric);
/* The sense of a policy's direction. */
enum evfmt_sense evfmt_sense_of(enum policy_direction dir);

/* One block value V of METRIC in its unit: "486/1k req", "< 1 ms", "0.42 ms", "0.5%", "41 CPU ms/1k req";
 * "n/a" for a V that is not finite. */
int evfmt_value(const char *metric, double v, char *buf, size_t len);
/* The same in UNIT. */
int evfmt_value_unit(enum evfmt_unit unit, double v, char *buf, size_t len);
/* The arms of METRIC: "listen overflows 486/1k req -> 0/1k req" (its label, then A -> B). */
int evfmt_arms(const char *metric, double a, double b, char *buf, size_t len);
/* The relative change B/A = RATIO with bounds [LO, HI] (both NAN: no interval yet), by the rules above: "fell 78%
 * [71%, 83%] (better)". -EDOM for a RATIO or bound that is zero, negative, infinite or (one bound alone) NAN;
 * -EINVAL when LO > HI. */
int evfmt_change(double ratio, double lo, double hi, enum evfmt_sense sense, char *buf, size_t len);
/* The objective's change from the judge's signed log ratios (judge.h: d = ln(B/A) when higher is better, ln(A/B)
 * when lower is: positive is better): MEAN_D with its bounds LOWER_D and UPPER_D (NAN before two pairs) turned back
 * into B/A and written by evfmt_change with DIR's sense. -EDOM when MEAN_D is not finite. */
int evfmt_objective_change(enum policy_direction dir, double mean_d, double lower_d, double upper_d, char *buf,
			   size_t len);
/* METRIC's label, then its change as in evfmt_objective_change: "p99 latency rose 3% [-1%, +7%]" (a guardrail
 * judged by its log ratios, whose arms the evidence does not keep). -EDOM when MEAN_D is not finite. */
int evfmt_metric_change(const char *metric, enum policy_direction dir, double mean_d, double lower_d, double upper_d,
			char *buf, size_t len);
/* One line for a trial of METRIC: the arms A and B, then the change from the log ratios as in
 * evfmt_objective_change: "listen overflows 486/1k req -> 12/1k req, fell 97% [95%, 98%] (better)". When an arm is
 * zero or the change cannot be written (-EDOM), the arms alone with DIR's word when they differ. */
int evfmt_summary(const char *metric, enum policy_direction dir, double a, double b, double mean_d, double lower_d,
		  double upper_d, char *buf, size_t len);
/* The block value behind the judge's figure of a count over http.requests: the judge adds half an event to each
 * block of a count metric before it divides (judge.c, so that a zero does not make the ratio infinite), which
 * REQUESTS (the block's http.requests) lets this take back. *VALUE = JUDGED less that half event, at least 0;
 * -ENOENT (and *VALUE = JUDGED) when METRIC is not a count over requests or REQUESTS is not positive. */
int evfmt_uncorrect(const char *metric, double judged, double requests, double *value);

#endif
