/*
 * Unit tests for core/client.c: outcomes, a tick's counts and histograms, percentiles in milliseconds with
 * sub-millisecond resolution (expected values from numpy.percentile, R's type 7, on exact buckets), and the budget.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/client.h"

static void test_classify(void **state)
{
	(void)state;
	assert_int_equal(client_classify(0, 200), CLIENT_OK);
	assert_int_equal(client_classify(0, 204), CLIENT_OK);
	assert_int_equal(client_classify(0, 301), CLIENT_OK);
	assert_int_equal(client_classify(0, 399), CLIENT_OK);
	assert_int_equal(client_classify(0, 404), CLIENT_FAILED);
	assert_int_equal(client_classify(0, 503), CLIENT_FAILED);
	assert_int_equal(client_classify(0, 199), CLIENT_FAILED);
	assert_int_equal(client_classify(0, 0), CLIENT_FAILED);
	assert_int_equal(client_classify(-ECONNREFUSED, 0), CLIENT_FAILED);
	assert_int_equal(client_classify(-ECONNRESET, 0), CLIENT_FAILED);
	assert_int_equal(client_classify(-EPROTO, 0), CLIENT_FAILED);  /* not HTTP, or closed mid-answer */
	assert_int_equal(client_classify(-EMSGSIZE, 200), CLIENT_FAILED);
	assert_int_equal(client_classify(-ETIMEDOUT, 0), CLIENT_TIMEOUT);
}

/* Four answered requests on exact buckets (< 16 us), one refused, one timed out after connecting. */
static void test_tick(void **state)
{
	struct client_tick t;
	static const struct client_request rq[] = {
		{0, 200, true, 1, 3, 3},
		{0, 200, true, 2, 4, 5},
		{0, 200, false, 0, 6, 7}, /* the kept-alive connection: no connect */
		{0, 200, true, 4, 8, 9},
		{-ECONNREFUSED, 0, false, 0, 0, 40},
		{-ETIMEDOUT, 0, true, 13, 0, 500000},
		{0, 502, true, 3, 10, 11},
	};

	(void)state;
	client_tick_reset(&t);
	assert_true(isnan(client_quantile_ms(&t.total, 0.5)));
	for (size_t i = 0; i < sizeof(rq) / sizeof(rq[0]); i++)
		client_tick_add(&t, &rq[i]);
	assert_int_equal(t.requests, 7);
	assert_int_equal(t.failures, 2);
	assert_int_equal(t.timeouts, 1);
	/* Connect: every connection made, the timed-out and the 502 ones included: {1, 2, 4, 13, 3}. */
	assert_int_equal(t.connect.count, 5);
	assert_int_equal(t.connect.sum_ms, 23);
	/* numpy.percentile([1, 2, 3, 4, 13], 50) = 3; 99 -> 12.64 (us). */
	assert_true(fabs(client_quantile_ms(&t.connect, 0.50) - 0.003) < 1e-12);
	assert_true(fabs(client_quantile_ms(&t.connect, 0.99) - 0.01264) < 1e-12);
	/* Totals of the answered and of the timed out at their timeout: {3, 5, 7, 9, 500000}: p50 7 us; p99
	 * numpy.percentile(..., 99) = 480000.36 us, within the histogram's 6.25% at that size. The refused and the 502
	 * are failures, not times. */
	assert_int_equal(t.total.count, 5);
	assert_true(fabs(client_quantile_ms(&t.total, 0.50) - 0.007) < 1e-12);
	assert_true(fabs(client_quantile_ms(&t.total, 0.99) - 480.00036) <= 480.0 * 0.0625);
	/* TTFB {3, 4, 6, 8}: p99 = 6 + 0.97 * 2 = 7.94 us. */
	assert_true(fabs(client_quantile_ms(&t.ttfb, 0.99) - 0.00794) < 1e-12);
}

/* Loopback answers take tens of microseconds: never 0 ms. Larger values are within core/hist's 6.25%. */
static void test_resolution(void **state)
{
	struct client_tick t;
	struct client_request rq = {0, 200, true, 80, 80, 80};

	(void)state;
	client_tick_reset(&t);
	client_tick_add(&t, &rq);
	/* 80 us falls in [80, 88): read as its midpoint, 83.5 us. */
	assert_true(fabs(client_quantile_ms(&t.total, 0.99) - 0.0835) < 1e-12);
	client_tick_reset(&t);
	rq.total_us = 1200;
	client_tick_add(&t, &rq);
	assert_true(fabs(client_quantile_ms(&t.total, 0.5) - 1.2) <= 1.2 * 0.0625);
	client_tick_reset(&t);
	rq.total_us = 480000; /* a 480 ms answer */
	client_tick_add(&t, &rq);
	assert_true(fabs(client_quantile_ms(&t.total, 0.5) - 480.0) <= 480.0 * 0.0625);
}

static void test_budget(void **state)
{
	(void)state;
	assert_int_equal(client_budget_ms(1000), 800);
	assert_int_equal(client_budget_ms(100), 80);
	assert_int_equal(client_budget_ms(0), 0);
	/* One request's timeout: [client] timeout, at most the budget (a 500 ms tick has 400 ms for its requests). */
	assert_int_equal(client_timeout_ms(500, 800), 500);
	assert_int_equal(client_timeout_ms(500, 400), 400);
	assert_int_equal(client_timeout_ms(4000, 800), 800);
	assert_int_equal(client_timeout_ms(0, 800), 0);
	assert_int_equal(client_timeout_ms(500, 0), 0);
	/* Each request gets it, or what the budget has left (whole ms, rounded against the request). */
	assert_int_equal(client_request_timeout_ms(500, 800, 0), 500);
	assert_int_equal(client_request_timeout_ms(500, 800, 300000), 500);
	assert_int_equal(client_request_timeout_ms(500, 800, 500000), 300);
	assert_int_equal(client_request_timeout_ms(500, 800, 500001), 299);
	assert_int_equal(client_request_timeout_ms(500, 800, 799001), 0);
	assert_int_equal(client_request_timeout_ms(500, 800, 900000), 0);
	assert_int_equal(client_request_timeout_ms(4000, 800, 0), 800);
	assert_int_equal(client_request_timeout_ms(500, 0, 0), 0);
	assert_int_equal(client_request_timeout_ms(0, 800, 0), 0);
	/* A timeout cut short by the budget is left out; an answer or a failure within it counts; a request given the
	 * whole of what the budget allows is never cut short: the 500 ms ticks of the tests give the first request of
	 * a tick 400 ms of a [client] timeout of 500 ms, and its timeout counts. */
	assert_true(client_cut_short(-ETIMEDOUT, 300, 500, 800));
	assert_false(client_cut_short(-ETIMEDOUT, 500, 500, 800));
	assert_false(client_cut_short(0, 300, 500, 800));
	assert_false(client_cut_short(-ECONNREFUSED, 300, 500, 800));
	assert_false(client_cut_short(-ETIMEDOUT, client_request_timeout_ms(500, 400, 0), 500, 400));
	assert_true(client_cut_short(-ETIMEDOUT, client_request_timeout_ms(500, 400, 1000), 500, 400));
	/* A run starts into the slack beside one whole timeout, so that its first request keeps all of it: at 1 Hz and
	 * a 500 ms timeout, anywhere in the first 300 ms of the tick; none where the timeout takes the budget. */
	assert_int_equal(client_start_delay_ms(500, 800, 0.0), 0);
	assert_int_equal(client_start_delay_ms(500, 800, 0.5), 150);
	assert_int_equal(client_start_delay_ms(500, 800, 0.999999), 299);
	assert_int_equal(client_start_delay_ms(500, 800, 1.0), 300);
	assert_int_equal(client_start_delay_ms(500, 800, -1.0), 0);
	assert_int_equal(client_start_delay_ms(500, 800, NAN), 0);
	assert_int_equal(client_start_delay_ms(500, 400, 0.9), 0);
	assert_int_equal(client_start_delay_ms(4000, 800, 0.9), 0);
	assert_int_equal(client_start_delay_ms(500, 0, 0.9), 0);
	for (double u = 0; u < 1; u += 0.01) {
		int64_t d = client_start_delay_ms(500, 800, u), left = 800 - d;

		assert_int_equal(client_request_timeout_ms(500, left, 0), 500);
		assert_false(client_cut_short(-ETIMEDOUT, client_request_timeout_ms(500, left, 0), 500, left));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_tick),
		cmocka_unit_test(test_resolution),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
