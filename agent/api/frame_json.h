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
/* At least the bytes frame_json_append adds for FR (the same arguments), computed without writing them. */
size_t frame_json_bound(const struct frame *fr, const struct metric_registry *reg, const struct metric_filter *f,
			bool rollup);

/*
 * An answer of GET /v1/frames, {"frames":[...],"truncated":B}, that never holds more than MAX_BYTES (issue 22, R2:
 * one request of an hour of frames on a host of 64 CPUs built 39 MB): a frame is added only when its bound
 * (frame_json_bound) still fits, so the size is known before the text is written; the first frame always goes in.
 * A frame left out makes the page full: the caller stops, and the answer says truncated.
 */
struct frame_page {
	struct sbuf out;
	size_t max_bytes;
	size_t n;     /* frames in the page */
	bool full;    /* a frame did not fit */
};

/* Start P, empty, for at most MAX_BYTES. */
void frame_page_init(struct frame_page *p, size_t max_bytes);
/* FR (as frame_json_append) added to P: 0; 1 when it does not fit (P is full: ask no more); -ENOMEM. */
int frame_page_add(struct frame_page *p, const struct frame *fr, const struct metric_registry *reg,
		   const struct metric_filter *f, bool rollup);
/* Close P's text: truncated when P is full or MORE says more frames may follow. 0 or -ENOMEM. */
int frame_page_end(struct frame_page *p, bool more);
/* Release P's text. */
void frame_page_free(struct frame_page *p);

#endif
