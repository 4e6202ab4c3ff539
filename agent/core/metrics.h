/*
 * metrics: metric names, their ids, and one tick's frame of values.
 *
 * Owns the interning of metric names ("tcp.listen_overflows", "cpu.1.softirq") into dense ids starting at 1,
 * the sparse per-tick vector of values, and the counter tracker that turns raw kernel counters into per-tick
 * deltas. A value of NAN means "missing for this tick" (probe failed, counter went backwards, first sample).
 * Pure: no I/O, no clock; callers hand in the time.
 */
#ifndef NGXAT_METRICS_H
#define NGXAT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METRIC_NAME_MAX 96       /* a name and its NUL fit in char[METRIC_NAME_MAX] */
#define METRIC_ID_MAX (1u << 20) /* ids are 1..METRIC_ID_MAX, which bounds every array indexed by id */

struct metric_registry;

/* Create an empty registry. Returns 0 or -ENOMEM. */
int metric_registry_new(struct metric_registry **out);
/* Free a registry; NULL is fine. */
void metric_registry_free(struct metric_registry *reg);
/* Id of NAME, adding it when unknown. -EINVAL for an empty, too long or non-printable name (only ASCII 0x21..0x7e:
 * no spaces or control bytes to escape in logs and JSON); -ENOSPC when all ids are taken. */
int metric_intern(struct metric_registry *reg, const char *name, uint32_t *id);
/* Add NAME under a known ID (used when loading a store); -EEXIST if either is taken differently, -EINVAL for a bad
 * name or an id outside 1..METRIC_ID_MAX. */
int metric_register(struct metric_registry *reg, const char *name, uint32_t id);
/* Id of NAME if known: 0 or -ENOENT. */
int metric_lookup(const struct metric_registry *reg, const char *name, uint32_t *id);
/* Name of ID, or NULL. */
const char *metric_name(const struct metric_registry *reg, uint32_t id);
/* Highest id in use (ids are 1..max). */
uint32_t metric_max_id(const struct metric_registry *reg);

struct frame_value {
	uint32_t id;
	double v; /* NAN: missing */
};

struct frame {
	int64_t ts_ms;       /* wall-clock time of the tick, ms since the epoch */
	double dt_s;         /* seconds since the previous tick (0 on the first) */
	uint32_t probes_ok;  /* bit (1u << enum probe_id) per probe that succeeded */
	uint32_t probes_bad; /* bit per probe that failed this tick */
	struct frame_value *vals; /* kept sorted by id, ids unique; after writing vals directly, call frame_sort() */
	size_t n, cap;
};

/* Zero a frame (no allocation yet). */
void frame_init(struct frame *fr);
/* Drop values, keep capacity. */
void frame_clear(struct frame *fr);
/* Release memory. */
void frame_free(struct frame *fr);
/* Set ID to V (replaces an earlier value of the same id). 0, -EINVAL (id outside 1..METRIC_ID_MAX) or -ENOMEM. */
int frame_put(struct frame *fr, uint32_t id, double v);
/* Intern NAME and set it. 0, -EINVAL or -ENOMEM. */
int frame_set(struct frame *fr, struct metric_registry *reg, const char *name, double v);
/* Value of ID: true if present (v may still be NAN for "present but missing"). */
bool frame_get(const struct frame *fr, uint32_t id, double *v);
/* Restore the sorted, unique order after direct writes to vals (of duplicate ids one survives). */
void frame_sort(struct frame *fr);

/*
 * Counter tracker: last raw value per metric id. counter_delta() returns 0 and the delta when the counter moved
 * forward (or stayed), -ENODATA on the first sample of an id, -ERANGE when it went backwards (reset, wrap, process
 * restart). In both error cases the caller records NAN for that tick and the new raw value becomes the base.
 */
struct counters {
	uint64_t *last;
	uint8_t *seen;
	size_t cap;
};

/* Zero a tracker. */
void counters_init(struct counters *c);
/* Release memory. */
void counters_free(struct counters *c);
/* Feed RAW for ID; see above. *DELTA is 0 on errors. -ENOMEM, or -EINVAL for an id above METRIC_ID_MAX. */
int counters_delta(struct counters *c, uint32_t id, uint64_t raw, uint64_t *delta);
/* Forget ID (its source went away); the next sample is a first sample again. */
void counters_forget(struct counters *c, uint32_t id);

/*
 * Frame encoding for the store: values sorted by id, each as a LEB128 varint of the id delta (from the previous id,
 * starting at 0) followed by an IEEE float32, little endian. Missing values are stored as a quiet NaN. Every value
 * in the frame is encoded: an id absent from a decoded frame was not sampled in that tick. float32 keeps 24 bits of
 * mantissa: per-tick deltas and gauges fit; magnitudes beyond float range are stored as infinities.
 */
/* Encode FR (sorts it) into a malloc'd buffer. 0, -ENOMEM, or -EINVAL for an id written directly outside
 * 1..METRIC_ID_MAX. */
int frame_encode(struct frame *fr, uint8_t **buf, size_t *len);
/* Decode BUF into FR (its values are cleared first; ts and probe bits are the caller's). 0, -EBADMSG (truncated,
 * non-minimal or oversized varint, ids not strictly increasing or above METRIC_ID_MAX), -ENOMEM. On error FR
 * holds no values. */
int frame_decode(const uint8_t *buf, size_t len, struct frame *fr);

#endif
