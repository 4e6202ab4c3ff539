/*
 * hist: a latency histogram with log-spaced buckets, good for p50/p90/p99 of nginx request times.
 *
 * nginx logs times with 1 ms resolution, so values are whole milliseconds. Buckets 0..15 hold exactly 0..15 ms;
 * above that each power of two is split into 8 buckets (relative error <= 6.25%), up to HIST_MAX_MS, beyond which
 * values land in the last bucket. Histograms add, so block percentiles come from summing tick histograms.
 * Pure: no I/O.
 */
#ifndef NGXAT_HIST_H
#define NGXAT_HIST_H

#include <stdint.h>

#define HIST_MAX_MS (1u << 22) /* about 70 minutes */
#define HIST_NBUCKETS (16 + 8 * 18 + 1)

struct hist {
	uint64_t count;
	uint64_t sum_ms;
	uint32_t b[HIST_NBUCKETS];
};

/* Zero H. */
void hist_reset(struct hist *h);
/* Bucket index of MS. */
unsigned hist_bucket(uint32_t ms);
/* Smallest value (ms) that falls in bucket I. */
uint32_t hist_bucket_lo(unsigned i);
/* Add one observation. */
void hist_add(struct hist *h, uint32_t ms);
/* Add N observations to bucket I (decoding a stored histogram); sum_ms is left to the caller, a bad I is ignored. */
void hist_add_bucket(struct hist *h, unsigned i, uint32_t n);
/* DST += SRC. */
void hist_merge(struct hist *dst, const struct hist *src);
/* Quantile Q in [0,1] (clamped), in ms (linear within a bucket). Returns NAN on an empty histogram or a NAN Q. */
double hist_quantile(const struct hist *h, double q);

#endif
