/*
 * test_hist: bucket layout, quantiles (exact small values, bounded error on large ones), merge, saturation.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hist.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void assert_close(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.6f, want %.6f (tol %.6f)", got, want, tol);
}

static void test_layout(void **state)
{
	static const struct {
		uint32_t ms;
		unsigned bucket;
		uint32_t lo;
	} cases[] = {
		{ 0, 0, 0 },
		{ 1, 1, 1 },
		{ 15, 15, 15 },
		{ 16, 16, 16 },
		{ 17, 16, 16 },
		{ 18, 17, 18 },
		{ 31, 23, 30 },
		{ 32, 24, 32 },
		{ 35, 24, 32 },
		{ 36, 25, 36 },
		{ 63, 31, 60 },
		{ 64, 32, 64 },
		{ 1000, 16 + 8 * 5 + 7, 960 },	  /* 2^9 = 512; 1000 = 512 + 7 * 64 + 40 */
		{ 1u << 21, 16 + 8 * 17, 1u << 21 },
		{ HIST_MAX_MS - 1, 159, (1u << 21) + 7 * (1u << 18) },
		{ HIST_MAX_MS, 160, HIST_MAX_MS },
		{ HIST_MAX_MS + 1, 160, HIST_MAX_MS },
		{ UINT32_MAX, 160, HIST_MAX_MS },
	};
	size_t i;

	(void)state;
	assert_int_equal(HIST_NBUCKETS, 161);
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		unsigned b = hist_bucket(cases[i].ms);

		if (b != cases[i].bucket || hist_bucket_lo(b) != cases[i].lo)
			fail_msg("ms %u: bucket %u lo %u, want %u lo %u", cases[i].ms, b, hist_bucket_lo(b),
				 cases[i].bucket, cases[i].lo);
	}
	/* Every bucket is non-empty, contiguous with the next, and at most 1/8 of its low end wide. */
	for (i = 0; i + 1 < HIST_NBUCKETS; i++) {
		uint32_t lo = hist_bucket_lo((unsigned)i), next = hist_bucket_lo((unsigned)i + 1);

		assert_true(next > lo);
		assert_int_equal(hist_bucket(lo), i);
		assert_int_equal(hist_bucket(next - 1), i);
		if (lo >= 16)
			assert_true((double)(next - lo) <= lo / 8.0);
	}
	assert_int_equal(hist_bucket_lo(HIST_NBUCKETS - 1), HIST_MAX_MS);
	assert_int_equal(hist_bucket_lo(HIST_NBUCKETS), UINT32_MAX);
	assert_int_equal(hist_bucket_lo(100000), UINT32_MAX);
}

/* Small values are exact: quantiles match numpy.percentile (linear) on the raw data. */
static void test_exact_small(void **state)
{
	static const struct {
		uint32_t v[8];
		size_t n;
		double q, want;
	} cases[] = {
		{ { 7 }, 1, 0.0, 7.0 },
		{ { 7 }, 1, 0.5, 7.0 },
		{ { 7 }, 1, 1.0, 7.0 },
		{ { 0 }, 1, 0.99, 0.0 },
		{ { 1, 2, 3, 4 }, 4, 0.0, 1.0 },
		{ { 1, 2, 3, 4 }, 4, 0.25, 1.75 },
		{ { 1, 2, 3, 4 }, 4, 0.5, 2.5 },
		{ { 1, 2, 3, 4 }, 4, 1.0, 4.0 },
		{ { 4, 3, 2, 1 }, 4, 0.5, 2.5 }, /* order of adding does not matter */
		{ { 0, 0, 0, 15 }, 4, 0.9, 10.5 },
		{ { 5, 5, 5, 5, 5 }, 5, 0.99, 5.0 },
		{ { 2, 9, 9, 11, 15, 15, 15, 15 }, 8, 0.5, 13.0 },
		{ { 2, 9, 9, 11, 15, 15, 15, 15 }, 8, 0.1, 6.9 },
	};
	size_t i, j;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		struct hist h;
		uint64_t sum = 0;

		hist_reset(&h);
		for (j = 0; j < cases[i].n; j++) {
			hist_add(&h, cases[i].v[j]);
			sum += cases[i].v[j];
		}
		assert_int_equal(h.count, cases[i].n);
		assert_int_equal(h.sum_ms, sum);
		assert_close(hist_quantile(&h, cases[i].q), cases[i].want, 1e-9);
	}
}

/* A lone large value reads back within 6.25% at any q. */
static void test_relative_error(void **state)
{
	static const uint32_t values[] = { 16,	   17,	   23,	   100,	    999,     1000,    1001,    12345,
					   65535,  65536,  65537,  99999,   262143,  1000000, 3000000, 4194303 };
	static const double qs[] = { 0.0, 0.5, 0.99, 1.0 };
	size_t i, j;
	unsigned b;

	(void)state;
	for (i = 0; i < ARRAY_LEN(values); i++) {
		struct hist h;

		hist_reset(&h);
		hist_add(&h, values[i]);
		for (j = 0; j < ARRAY_LEN(qs); j++) {
			double got = hist_quantile(&h, qs[j]);

			if (fabs(got - values[i]) > 0.0625 * values[i])
				fail_msg("value %u q %.2f: got %.3f", values[i], qs[j], got);
		}
	}
	/* Both ends of every bucket: the worst cases for the midpoint. */
	for (b = 16; b + 1 < HIST_NBUCKETS; b++) {
		uint32_t ends[2] = { hist_bucket_lo(b), hist_bucket_lo(b + 1) - 1 };

		for (j = 0; j < 2; j++) {
			struct hist h;
			double got;

			hist_reset(&h);
			hist_add(&h, ends[j]);
			got = hist_quantile(&h, 0.5);
			if (fabs(got - ends[j]) > 0.0625 * ends[j])
				fail_msg("bucket %u value %u: got %.3f", b, ends[j], got);
		}
	}
}

/* Many values spread over a wide range: percentiles stay within a bucket width (12.5%) of the truth. */
static void test_uniform(void **state)
{
	static const struct {
		double q, want;
	} cases[] = { { 0.0, 1.0 }, { 0.5, 5000.5 }, { 0.9, 9000.1 }, { 0.99, 9900.01 }, { 1.0, 10000.0 } };
	struct hist h;
	uint32_t v;
	size_t i;
	double prev = -1.0;

	(void)state;
	hist_reset(&h);
	for (v = 1; v <= 10000; v++)
		hist_add(&h, v);
	assert_int_equal(h.count, 10000);
	assert_int_equal(h.sum_ms, 50005000);
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		double got = hist_quantile(&h, cases[i].q);

		if (fabs(got - cases[i].want) > 0.125 * cases[i].want)
			fail_msg("q %.2f: got %.3f want %.3f", cases[i].q, got, cases[i].want);
	}
	/* monotonic in q */
	for (i = 0; i <= 1000; i++) {
		double got = hist_quantile(&h, i / 1000.0);

		assert_true(got >= prev);
		prev = got;
	}
}

static void test_merge(void **state)
{
	static const uint32_t a[] = { 0, 3, 3, 17, 250, 251, 9000, HIST_MAX_MS };
	static const uint32_t b[] = { 1, 3, 40, 250, 123456, 7 };
	struct hist ha, hb, hall, empty;
	size_t i;
	double q;

	(void)state;
	hist_reset(&ha);
	hist_reset(&hb);
	hist_reset(&hall);
	hist_reset(&empty);
	for (i = 0; i < ARRAY_LEN(a); i++) {
		hist_add(&ha, a[i]);
		hist_add(&hall, a[i]);
	}
	for (i = 0; i < ARRAY_LEN(b); i++) {
		hist_add(&hb, b[i]);
		hist_add(&hall, b[i]);
	}
	hist_merge(&ha, &hb);
	assert_int_equal(ha.count, ARRAY_LEN(a) + ARRAY_LEN(b));
	assert_int_equal(ha.count, hall.count);
	assert_int_equal(ha.sum_ms, hall.sum_ms);
	assert_memory_equal(ha.b, hall.b, sizeof(ha.b));
	for (q = 0.0; q <= 1.0; q += 0.05)
		assert_close(hist_quantile(&ha, q), hist_quantile(&hall, q), 1e-9);
	/* merging an empty histogram changes nothing; merging into an empty one copies */
	hist_merge(&ha, &empty);
	assert_memory_equal(&ha, &hall, sizeof(ha));
	hist_merge(&empty, &hall);
	assert_memory_equal(&empty, &hall, sizeof(ha));
}

static void test_overflow_bucket(void **state)
{
	struct hist h;

	(void)state;
	hist_reset(&h);
	hist_add(&h, HIST_MAX_MS);
	hist_add(&h, UINT32_MAX);
	assert_int_equal(h.b[HIST_NBUCKETS - 1], 2);
	assert_int_equal(h.count, 2);
	assert_int_equal(h.sum_ms, (uint64_t)HIST_MAX_MS + UINT32_MAX); /* the sum keeps the real values */
	assert_close(hist_quantile(&h, 0.0), HIST_MAX_MS, 0);
	assert_close(hist_quantile(&h, 1.0), HIST_MAX_MS, 0);
	hist_add(&h, 10);
	assert_close(hist_quantile(&h, 0.0), 10.0, 0);
	assert_close(hist_quantile(&h, 0.25), 10.0 + (HIST_MAX_MS - 10.0) / 2, 1e-6);
}

static void test_empty_and_q_edges(void **state)
{
	struct hist h;

	(void)state;
	hist_reset(&h);
	assert_true(isnan(hist_quantile(&h, 0.0)));
	assert_true(isnan(hist_quantile(&h, 0.5)));
	assert_true(isnan(hist_quantile(&h, 1.0)));
	/* quantiles come from the buckets, not from a count that a corrupt store may have got wrong */
	h.count = 5;
	assert_true(isnan(hist_quantile(&h, 0.5)));
	h.b[3] = 1;
	h.b[9] = 1;
	h.count = 1000;
	assert_close(hist_quantile(&h, 1.0), 9.0, 0);
	h.count = 0;
	assert_close(hist_quantile(&h, 0.5), 6.0, 0);
	hist_reset(&h);
	hist_add(&h, 3);
	hist_add(&h, 9);
	assert_close(hist_quantile(&h, 0.0), 3.0, 0);
	assert_close(hist_quantile(&h, 1.0), 9.0, 0);
	assert_close(hist_quantile(&h, -0.5), 3.0, 0);	 /* clamped */
	assert_close(hist_quantile(&h, 7.0), 9.0, 0);	 /* clamped */
	assert_close(hist_quantile(&h, -INFINITY), 3.0, 0);
	assert_close(hist_quantile(&h, INFINITY), 9.0, 0);
	assert_true(isnan(hist_quantile(&h, NAN)));
}

static void test_add_bucket(void **state)
{
	struct hist h, ref;

	(void)state;
	hist_reset(&h);
	hist_reset(&ref);
	hist_add_bucket(&h, hist_bucket(250), 3);
	hist_add_bucket(&h, HIST_NBUCKETS, 5);	/* out of range: ignored */
	hist_add_bucket(&h, 0xffffffffu, 5);	/* ditto */
	hist_add(&ref, 250);
	hist_add(&ref, 250);
	hist_add(&ref, 250);
	assert_int_equal(h.count, 3);
	assert_int_equal(h.sum_ms, 0); /* left to the decoder */
	assert_memory_equal(h.b, ref.b, sizeof(h.b));
	assert_close(hist_quantile(&h, 0.5), hist_quantile(&ref, 0.5), 1e-9);
	/* saturation: a bucket never wraps, and count stays equal to the sum of the buckets */
	hist_reset(&h);
	hist_add_bucket(&h, 20, UINT32_MAX - 1);
	hist_add(&h, hist_bucket_lo(20));
	hist_add(&h, hist_bucket_lo(20));
	hist_add_bucket(&h, 20, 10);
	assert_int_equal(h.b[20], UINT32_MAX);
	assert_int_equal(h.count, UINT32_MAX);
	assert_int_equal(h.sum_ms, hist_bucket_lo(20));
	hist_merge(&h, &h);
	assert_int_equal(h.b[20], UINT32_MAX);
	assert_int_equal(h.count, UINT32_MAX);
	assert_false(isnan(hist_quantile(&h, 0.5)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),	       cmocka_unit_test(test_exact_small),
		cmocka_unit_test(test_relative_error), cmocka_unit_test(test_uniform),
		cmocka_unit_test(test_merge),	       cmocka_unit_test(test_overflow_bucket),
		cmocka_unit_test(test_empty_and_q_edges), cmocka_unit_test(test_add_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
