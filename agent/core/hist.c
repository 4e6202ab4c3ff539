/*
 * hist: log-spaced latency histogram.
 *
 * Bucket layout: 0..15 are exact; bucket 16 + 8 * (e - 4) + s covers [2^e + s * 2^(e-3), 2^e + (s+1) * 2^(e-3))
 * for e in 4..21 and s in 0..7; the last bucket takes everything from HIST_MAX_MS up.
 *
 * Counts saturate instead of wrapping, and count is only raised by what a bucket actually took, so count always
 * equals the sum of the buckets for histograms built through this API. hist_quantile still sums the buckets itself
 * because a struct decoded from a store is not to be trusted to be consistent.
 */
#include "hist.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define EXACT 16u
#define SUB 8u
#define LAST (HIST_NBUCKETS - 1u)

void hist_reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

unsigned hist_bucket(uint32_t ms)
{
	unsigned e;

	if (ms < EXACT)
		return ms;
	if (ms >= HIST_MAX_MS)
		return LAST;
	e = 31u - (unsigned)__builtin_clz(ms); /* 4..21 */
	return EXACT + SUB * (e - 4u) + ((ms >> (e - 3u)) & (SUB - 1u));
}

uint32_t hist_bucket_lo(unsigned i)
{
	unsigned e, s;

	if (i < EXACT)
		return i;
	if (i >= LAST)
		return i == LAST ? HIST_MAX_MS : UINT32_MAX;
	e = 4u + (i - EXACT) / SUB;
	s = (i - EXACT) % SUB;
	return (1u << e) + (s << (e - 3u));
}

/* Add N to bucket I without wrapping; returns how many were taken. */
static uint32_t bucket_add(struct hist *h, unsigned i, uint32_t n)
{
	uint32_t room = UINT32_MAX - h->b[i];

	if (n > room)
		n = room;
	h->b[i] += n;
	h->count += n;
	return n;
}

static uint64_t sat_add64(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void hist_add(struct hist *h, uint32_t ms)
{
	if (bucket_add(h, hist_bucket(ms), 1))
		h->sum_ms = sat_add64(h->sum_ms, ms);
}

void hist_add_bucket(struct hist *h, unsigned i, uint32_t n)
{
	if (i < HIST_NBUCKETS)
		bucket_add(h, i, n);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned i;

	for (i = 0; i < HIST_NBUCKETS; i++)
		if (src->b[i])
			bucket_add(dst, i, src->b[i]);
	dst->sum_ms = sat_add64(dst->sum_ms, src->sum_ms);
}

/*
 * Value of the J-th (0-based) of the N observations in bucket I. They are taken to be spread evenly over the
 * integers the bucket can hold, [lo, next lo - 1], ends included, so exact buckets give exact values and a lone
 * observation reads as the bucket's midpoint (error <= 6.25% of the value). The overflow bucket has no upper end
 * worth guessing: it reads as HIST_MAX_MS.
 */
static double bucket_value(unsigned i, uint64_t j, uint64_t n)
{
	double lo = hist_bucket_lo(i), hi;

	if (i >= LAST)
		return lo;
	hi = (double)hist_bucket_lo(i + 1) - 1.0;
	if (n <= 1)
		return (lo + hi) / 2.0;
	return lo + (hi - lo) * (double)j / (double)(n - 1);
}

/* Value of the observation of global rank K (0-based) among TOTAL. */
static double rank_value(const struct hist *h, uint64_t k)
{
	uint64_t before = 0;
	unsigned i;

	for (i = 0; i < HIST_NBUCKETS; i++) {
		if (k < before + h->b[i])
			return bucket_value(i, k - before, h->b[i]);
		before += h->b[i];
	}
	return NAN; /* not reached: k < total */
}

/*
 * Quantile as "linear interpolation between closest ranks" (numpy's default, R type 7) over the per-bucket
 * values above: exact on small values, monotonic in q, and q=0 / q=1 give the estimated minimum / maximum.
 */
double hist_quantile(const struct hist *h, double q)
{
	uint64_t total = 0, k;
	double pos, frac, a, b;
	unsigned i;

	for (i = 0; i < HIST_NBUCKETS; i++)
		total += h->b[i];
	if (total == 0 || isnan(q))
		return NAN;
	if (q < 0.0)
		q = 0.0;
	if (q > 1.0)
		q = 1.0;
	pos = q * (double)(total - 1);
	k = (uint64_t)pos;
	if (k > total - 1)
		k = total - 1;
	frac = pos - (double)k;
	a = rank_value(h, k);
	if (frac <= 0.0 || k + 1 >= total)
		return a;
	b = rank_value(h, k + 1);
	return a + (b - a) * frac;
}
