/*
 * prom: the Prometheus text exposition format (version 0.0.4), and what the agent's frames become in it.
 *
 * Owns three pure pieces. The writer emits families: HELP and TYPE once, before the family's samples; a family
 * never repeated; metric and label names checked; help text and label values escaped; labels written sorted by
 * name; values as Prometheus reads them (NaN, +Inf, -Inf, the shortest decimal that reads back exactly). The map
 * turns frame metric names ("softnet.1.time_squeeze") into a family and labels
 * (ngxat_softnet_time_squeeze_total{cpu="1"}). The totals turn per-tick frames into what a scraper wants, which
 * sees one scrape in many ticks: running totals for what the sampler reports per tick (counter deltas, log lines,
 * CPU shares), the last value of levels, and cumulative histograms (request time from the access log, the synthetic
 * client's connect, first-byte and total times) with exact bucket counts.
 *
 * It must not do I/O or read a clock: frames carry their time, and the caller decides what is too old to show.
 */
#ifndef NGXAT_PROM_H
#define NGXAT_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "metrics.h"

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define PROM_NAME_MAX 128  /* a family name and its NUL */
#define PROM_VALUE_MAX 32  /* a formatted value and its NUL */
#define PROM_LABELS_MAX 8  /* labels of one sample */

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

struct prom_label {
	const char *name;
	const char *value; /* any bytes but NUL: escaped on output */
};

/* Text under construction. The first error sticks: later calls return it and write nothing. */
struct prom_writer {
	char *buf;
	size_t len, cap;
	int err;
	char fam[PROM_NAME_MAX]; /* the family being written ("" before the first) */
	enum prom_type type;
	char **names;            /* every family written so far */
	size_t nnames, names_cap;
};

/* Zero W (nothing allocated yet). */
void prom_writer_init(struct prom_writer *w);
/* Release W's memory; W may be used again after prom_writer_init. */
void prom_writer_free(struct prom_writer *w);
/* Start family NAME of TYPE with HELP (one line: newlines and backslashes are escaped). 0; -EINVAL for a bad
 * name, a counter not named *_total, or a gauge or histogram named so; -EEXIST when NAME was written before. */
int prom_family(struct prom_writer *w, const char *name, enum prom_type type, const char *help);
/* One sample of the current family: its name plus SUFFIX ("" for counters and gauges; "_bucket", "_sum" or
 * "_count" for a histogram, whose buckets must have an "le" label), N LABELS in any order. 0; -EINVAL (no family,
 * a bad suffix or label name, a name repeated, too many labels, "le" outside a bucket), -EDOM for a counter that
 * is NaN or negative, -ENOMEM. */
int prom_sample(struct prom_writer *w, const char *suffix, const struct prom_label *labels, size_t n, double v);
/* The text (NUL-terminated, owned by the caller, free()) and its length; W is freed. 0 or W's first error. */
int prom_writer_take(struct prom_writer *w, char **text, size_t *len);

/* V as the format spells it: "NaN", "+Inf", "-Inf", integers below 2^53 in full, else the shortest %g that reads
 * back as V. OUTLEN >= PROM_VALUE_MAX. */
void prom_format_value(double v, char *out, size_t outlen);
/* S escaped for a label value (backslash, double quote, newline) into OUT. 0, or -ENOSPC when OUT is too small. */
int prom_escape_label(const char *s, char *out, size_t outlen);
/* Whether NAME is a valid metric name: [a-zA-Z_:][a-zA-Z0-9_:]*, shorter than PROM_NAME_MAX. */
bool prom_valid_name(const char *name);
/* Whether NAME is a valid label name: [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__". */
bool prom_valid_label(const char *name);

/* What a frame metric becomes: family FAMILY (index into the family table, see prom_family_name) with up to two
 * labels. IGNORED when the metric is left out on purpose (an aggregate of per-CPU series, say). */
struct prom_mapped {
	bool ignored;
	unsigned family;
	size_t nlabels;
	struct prom_label labels[2];
	char values[2][METRIC_NAME_MAX];
};
/* Map frame metric NAME. 0, or -ENOENT when no rule knows it (it is then not exported). */
int prom_map(const char *name, struct prom_mapped *out);
/* Name of family index I of the map ("ngxat_..."), or NULL past the end. */
const char *prom_family_name(unsigned i);

/* The request-time histogram's bucket bounds, in ms: each is one below an edge of core/hist's buckets, so every
 * bucket count is exact. PROM_LAT_BOUNDS of them, increasing. */
#define PROM_LAT_BOUNDS 13
/* Bound I (0..PROM_LAT_BOUNDS-1) in ms. */
uint32_t prom_lat_bound_ms(unsigned i);
/* Bound I (0..PROM_LAT_BOUNDS-1) in us, for the synthetic client's microsecond histograms, exact the same way. */
uint32_t prom_lat_bound_us(unsigned i);

/* One metric id's running state. */
struct prom_cell {
	double v;      /* running total (counters) or last value (gauges) */
	int64_t ts;    /* ts of the last frame that had it; 0: never seen */
	int32_t rule;  /* the map rule that applies; -1 none, -2 not looked up yet */
};

/* Totals of every frame observed since the agent started (zero-initialised is a valid empty state). */
struct prom_totals {
	struct prom_cell *cells; /* indexed by metric id */
	size_t cap;
	int64_t last_ts;         /* ts of the newest frame observed */
	uint64_t frames;
	uint32_t unmapped;       /* metric ids seen that no rule maps */
};

/* An empty T. */
void prom_totals_init(struct prom_totals *t);
/* Release T's memory. */
void prom_totals_free(struct prom_totals *t);
/* Fold frame FR of registry REG into T. 0, -EINVAL (an id above METRIC_ID_MAX: nothing folded) or -ENOMEM (T keeps
 * what it had). */
int prom_totals_observe(struct prom_totals *t, const struct metric_registry *reg, const struct frame *fr);
/* Write T's families into W: every series seen within MAX_AGE_MS of the newest frame (a probe that stopped, an
 * interface that went away, drop out), in the family table's order. 0 or the writer's error. */
int prom_totals_write(const struct prom_totals *t, const struct metric_registry *reg, int64_t max_age_ms,
		      struct prom_writer *w);

#endif
