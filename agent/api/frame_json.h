/*
 * frame_json: frames as JSON for the API and --once, and the metric-name filter of ?metrics=.
 *
 * A frame is {"ts": ms, "dt": seconds, "values": {"name": number|null}}. null means missing (probe failed,
 * counter reset, first sample). Counters are deltas over dt; gauges are values at the tick.
 */
#ifndef NGXAT_FRAME_JSON_H
#define NGXAT_FRAME_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/metrics.h"
#include "strutil.h"

#define METRIC_FILTER_MAX 64

struct metric_filter {
	size_t n; /* 0: everything */
	char pat[METRIC_FILTER_MAX][METRIC_NAME_MAX];
	bool prefix[METRIC_FILTER_MAX]; /* pattern ended in '*' */
};

/* Parse "a,b,prefix.*" into F. 0, or -EINVAL / -E2BIG with a message in ERR. */
int metric_filter_parse(const char *s, struct metric_filter *f, char *err, size_t errlen);
/* Whether NAME passes F. */
bool metric_filter_match(const struct metric_filter *f, const char *name);
/* FR as a new JSON object (NULL on OOM). Exact names of F that the frame lacks appear as null. */
json_t *frame_to_json(const struct frame *fr, const struct metric_registry *reg, const struct metric_filter *f);
/* FR appended to B as the text json_dumps(frame_to_json(...), JSON_COMPACT) would give, byte for byte, without
 * building it (the frames API prints thousands of values a request). ROLLUP: FR is a roll-up whose dt is its tick
 * count, printed as {"ts", "dt": 60.0, "values", "ticks"}. */
void frame_json_append(struct sbuf *b, const struct frame *fr, const struct metric_registry *reg,
		       const struct metric_filter *f, bool rollup);
/* V (finite) appended to B as jansson prints a real: "%.17g", ".0" added when that reads as an integer, the
 * exponent without '+' or leading zeros. */
void json_real_append(struct sbuf *b, double v);

#endif
