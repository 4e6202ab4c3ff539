/*
 * test_evfmt: the rules of evidence text (agent/core/evfmt.h), as tables of exact expected lines: units per metric
 * family, "< 1 ms" for the access log, zero sides shown as values, percentages below 1000% and factors beyond,
 * both directions of the judge's log ratio (checked against the judge itself), and a sweep of magnitudes from 1e-12
 * to 1e12 (with 0, infinities and NaN) in which no percentage above 1000% may appear.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evfmt.h"
#include "judge.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* True when TEXT holds a number followed by '%' that is above 1000. */
static bool big_percent(const char *text)
{
	for (const char *p = strchr(text, '%'); p; p = strchr(p + 1, '%')) {
		const char *q = p;

		while (q > text && (q[-1] == '.' || (q[-1] >= '0' && q[-1] <= '9')))
			q--;
		if (q < p && strtod(q, NULL) > 1000.0)
			return true;
	}
	return false;
}

static void assert_no_big_percent(const char *text)
{
	if (big_percent(text))
		fail_msg("a percentage above 1000%% in \"%s\"", text);
}

static void test_values(void **state)
{
	static const struct {
		const char *metric;
		double v;
		const char *want;
	} cases[] = {
		/* counters: summed per 1000 http.requests by block.c */
		{"tcp.listen_overflows", 486, "486/1k req"},
		{"tcp.listen_overflows", 0, "0/1k req"},
		{"tcp.listen_overflows", 0.0004, "< 0.001/1k req"},
		{"softnet.dropped", 0, "0/1k req"},
		{"softnet.time_squeeze", 48.63, "48.6/1k req"},
		{"nginx.err.too_many_files", 1.5, "1.5/1k req"},
		{"tcp.syncookies_sent", 123456, "123456/1k req"},
		{"http.timeouts", 2, "2/1k req"},
		{"nginx.unhandled", 3, "3/1k conn"},
		{"nginx.worker_run_ms", 1500, "1500 ms/1k req"},
		{"http.request_ms_sum", 20.5, "20.5 ms/1k req"},
		{"cpu.busy_per_kreq", 41.23, "41.2 CPU ms/1k req"},
		{"cpu.softirq_per_kreq", 0.5, "0.5 CPU ms/1k req"},
		/* the access log's latencies have 1 ms resolution */
		{"http.p99_ms", 0.5, "< 1 ms"},
		{"http.p99_ms", 0, "< 1 ms"},
		{"http.p99_ms", 1, "1 ms"},
		{"http.p99_ms", 12.34, "12.3 ms"},
		{"http.p50_ms", 1234, "1234 ms"},
		{"http.p90_ms", 12345, "12.3 s"},
		{"http.mean_ms", 0.4, "< 1 ms"},
		/* finer sources keep sub-ms digits */
		{"client.total_p99_ms", 0.42, "0.42 ms"},
		{"client.connect_p99_ms", 0.0423, "0.0423 ms"},
		{"client.total_p99_ms", 0, "0 ms"},
		{"loadgen.p99_ms", 0.42, "0.42 ms"},
		{"nginx.worker_wait_max_ms", 2.5, "2.5 ms"},
		/* shares */
		{"http.5xx_rate", 0.005, "0.5%"},
		{"http.5xx_rate", 0, "0%"},
		{"http.5xx_rate", 1, "100%"},
		{"tcp.retrans_rate", 0.0123, "1.23%"},
		{"softnet.drop_rate", 1e-7, "< 0.001%"},
		{"nginx.worker_wait_ratio", 0.12, "12%"},
		{"nginx.worker_wait_ratio", 10, "1000%"},
		{"nginx.worker_wait_ratio", 25, "25x"},
		{"http.upstream_share", 0.9, "90%"},
		{"client.failure_rate", 0.02, "2%"},
		{"client.failures", 3, "3/1k req"},
		/* load generator, gauges */
		{"loadgen.rps", 12345, "12345 req/s"},
		{"loadgen.errors", 3, "3 per run"},
		{"listen.443.fill_pct", 85, "85%"},
		{"listen.443.fill_pct", 1500, "15x"},
		{"tcp.sockstat.mem_pages", 1200, "1200 pages"},
		{"tcp.sockstat.orphan", 12, "12"},
		{"nginx.active", 999.7, "1000"},
		{"no.such_metric", 3.14159, "3.14"},
		{"http.p99_ms", NAN, "n/a"},
		{"tcp.listen_overflows", INFINITY, "n/a"},
	};
	char buf[EVFMT_TEXT_MAX];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(evfmt_value(cases[i].metric, cases[i].v, buf, sizeof(buf)), 0);
		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("%s = %g: \"%s\", want \"%s\"", cases[i].metric, cases[i].v, buf, cases[i].want);
	}
}

static void test_labels_and_arms(void **state)
{
	char buf[EVFMT_TEXT_MAX];

	(void)state;
	assert_string_equal(evfmt_label("tcp.listen_overflows"), "listen overflows");
	assert_string_equal(evfmt_label("http.p99_ms"), "p99 latency");
	assert_string_equal(evfmt_label("client.total_p99_ms"), "client p99 latency");
	assert_string_equal(evfmt_label("client.ttfb_p99_ms"), "client.ttfb_p99_ms");
	assert_string_equal(evfmt_label(NULL), "");
	assert_int_equal(evfmt_arms("tcp.listen_overflows", 486, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "listen overflows 486/1k req -> 0/1k req");
	assert_int_equal(evfmt_arms("http.p99_ms", 40, 0.3, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "p99 latency 40 ms -> < 1 ms");
	assert_int_equal(evfmt_arms("nginx.active", 12, 13, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "connections in nginx 12 -> 13");
	/* a metric without a label keeps its name */
	assert_int_equal(evfmt_arms("nginx.writing", 12, 13, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "nginx.writing 12 -> 13");
	/* too small a buffer: cut, terminated, said so */
	assert_int_equal(evfmt_arms("tcp.listen_overflows", 486, 0, buf, 10), -ENOSPC);
	assert_int_equal(strlen(buf), 9);
	assert_int_equal(evfmt_value("http.p99_ms", 12, buf, 0), -ENOSPC);
}

static void test_change(void **state)
{
	static const struct {
		double r, lo, hi;
		enum evfmt_sense sense;
		const char *want;
	} cases[] = {
		{0.22, 0.17, 0.29, EVFMT_SENSE_NONE, "fell 78% [71%, 83%]"},
		{1.12, 1.03, 1.22, EVFMT_SENSE_NONE, "rose 12% [3%, 22%]"},
		{1.042, NAN, NAN, EVFMT_SENSE_NONE, "rose 4.2%"},
		{1.03, 1.0, 1.06, EVFMT_SENSE_NONE, "rose 3% [0%, 6%]"},
		/* beyond a factor of 11 all three are factors */
		{38, 5.2, 120, EVFMT_SENSE_NONE, "rose 38x [5.2x, 120x]"},
		{5, 2, 40, EVFMT_SENSE_NONE, "rose 5x [2x, 40x]"},
		{1.0 / 380, 1.0 / 2000, 1.0 / 50, EVFMT_SENSE_NONE, "fell to 1/380 [1/50, 1/2000]"},
		{0.3, 0.01, 0.5, EVFMT_SENSE_NONE, "fell to 1/3.3 [1/2, 1/100]"},
		/* the edge: +1000% is the largest percentage, a fall of 1/11 is 91% */
		{11, NAN, NAN, EVFMT_SENSE_NONE, "rose 1000%"},
		{11.01, NAN, NAN, EVFMT_SENSE_NONE, "rose 11x"},
		{1.0 / 11, NAN, NAN, EVFMT_SENSE_NONE, "fell 91%"},
		{1.0 / 11.01, NAN, NAN, EVFMT_SENSE_NONE, "fell to 1/11"},
		{9.97, NAN, NAN, EVFMT_SENSE_NONE, "rose 897%"},
		{1e9, NAN, NAN, EVFMT_SENSE_NONE, "rose 1e9x"},
		{1.234e9, NAN, NAN, EVFMT_SENSE_NONE, "rose 1.2e9x"},
		{9.97e6, NAN, NAN, EVFMT_SENSE_NONE, "rose 1e7x"},
		{1e-9, 1e-10, 1e-8, EVFMT_SENSE_NONE, "fell to 1/1e9 [1/1e8, 1/1e10]"},
		{377463.0, NAN, NAN, EVFMT_SENSE_NONE, "rose 380000x"},
		/* across no change: signed changes of B against A, lowest first */
		{1.05, 0.97, 1.14, EVFMT_SENSE_NONE, "rose 5% [-3%, +14%]"},
		{0.95, 0.88, 1.03, EVFMT_SENSE_NONE, "fell 5% [-12%, +3%]"},
		{1.5, 0.05, 30, EVFMT_SENSE_NONE, "rose 50% [1/20, 30x]"},
		{1.0, 0.98, 1.02, EVFMT_SENSE_NONE, "unchanged [-2%, +2%]"},
		{1.0004, NAN, NAN, EVFMT_SENSE_NONE, "unchanged"},
		{1.0, 1.0, 1.0, EVFMT_SENSE_LOWER_BETTER, "unchanged [0%, 0%]"},
		{1.0, 0.9999, 1.02, EVFMT_SENSE_NONE, "unchanged [0%, +2%]"},
		{1.0006, NAN, NAN, EVFMT_SENSE_NONE, "rose 0.1%"},
		/* the word, only when the interval (or the change, without one) is on one side */
		{0.22, 0.17, 0.29, EVFMT_SENSE_LOWER_BETTER, "fell 78% [71%, 83%] (better)"},
		{0.22, 0.17, 0.29, EVFMT_SENSE_HIGHER_BETTER, "fell 78% [71%, 83%] (worse)"},
		{1.12, 1.03, 1.22, EVFMT_SENSE_LOWER_BETTER, "rose 12% [3%, 22%] (worse)"},
		{1.12, 1.03, 1.22, EVFMT_SENSE_HIGHER_BETTER, "rose 12% [3%, 22%] (better)"},
		{1.05, 0.97, 1.14, EVFMT_SENSE_HIGHER_BETTER, "rose 5% [-3%, +14%]"},
		{1.03, 1.0, 1.06, EVFMT_SENSE_HIGHER_BETTER, "rose 3% [0%, 6%]"},
		{0.5, NAN, NAN, EVFMT_SENSE_LOWER_BETTER, "fell 50% (better)"},
		{1.0, NAN, NAN, EVFMT_SENSE_LOWER_BETTER, "unchanged"},
	};
	char buf[EVFMT_TEXT_MAX];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		int rc = evfmt_change(cases[i].r, cases[i].lo, cases[i].hi, cases[i].sense, buf, sizeof(buf));

		if (rc != 0 || strcmp(buf, cases[i].want) != 0)
			fail_msg("%g [%g, %g]: %d \"%s\", want \"%s\"", cases[i].r, cases[i].lo, cases[i].hi, rc, buf,
				 cases[i].want);
	}
}

/* A zero side, an infinite or NaN ratio or bound is not a change. */
static void test_change_refused(void **state)
{
	static const double bad[] = {0.0, -1.0, INFINITY, -INFINITY, NAN};
	char buf[EVFMT_TEXT_MAX];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		assert_int_equal(evfmt_change(bad[i], NAN, NAN, EVFMT_SENSE_NONE, buf, sizeof(buf)), -EDOM);
		assert_string_equal(buf, "");
		assert_int_equal(evfmt_change(1.2, bad[i], 1.5, EVFMT_SENSE_NONE, buf, sizeof(buf)), -EDOM);
		assert_int_equal(evfmt_change(1.2, 1.1, bad[i], EVFMT_SENSE_NONE, buf, sizeof(buf)), -EDOM);
	}
	assert_int_equal(evfmt_change(1.2, 1.5, 1.1, EVFMT_SENSE_NONE, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(evfmt_objective_change(POLICY_LOWER_IS_BETTER, NAN, 0.1, 0.2, buf, sizeof(buf)), -EDOM);
	assert_int_equal(evfmt_objective_change(POLICY_LOWER_IS_BETTER, 0.1, NAN, 0.2, buf, sizeof(buf)), -EDOM);
	/* exp(1000) is infinite */
	assert_int_equal(evfmt_objective_change(POLICY_HIGHER_IS_BETTER, 1000, 999, 1001, buf, sizeof(buf)), -EDOM);
}

/* d is ln(B/A) when higher is better and ln(A/B) when lower is: the text is about B against A either way. */
static void test_objective_directions(void **state)
{
	char buf[EVFMT_TEXT_MAX];

	(void)state;
	/* B fell to 0.22 of A, the bounds of B/A 0.17 and 0.29 */
	assert_int_equal(evfmt_objective_change(POLICY_LOWER_IS_BETTER, -log(0.22), -log(0.29), -log(0.17), buf,
						sizeof(buf)), 0);
	assert_string_equal(buf, "fell 78% [71%, 83%] (better)");
	assert_int_equal(evfmt_objective_change(POLICY_HIGHER_IS_BETTER, log(0.22), log(0.17), log(0.29), buf,
						sizeof(buf)), 0);
	assert_string_equal(buf, "fell 78% [71%, 83%] (worse)");
	/* B rose 12% [3%, 22%] */
	assert_int_equal(evfmt_objective_change(POLICY_HIGHER_IS_BETTER, log(1.12), log(1.03), log(1.22), buf,
						sizeof(buf)), 0);
	assert_string_equal(buf, "rose 12% [3%, 22%] (better)");
	assert_int_equal(evfmt_objective_change(POLICY_LOWER_IS_BETTER, -log(1.12), -log(1.22), -log(1.03), buf,
						sizeof(buf)), 0);
	assert_string_equal(buf, "rose 12% [3%, 22%] (worse)");
	/* the running estimate after one pair: no bounds yet */
	assert_int_equal(evfmt_objective_change(POLICY_LOWER_IS_BETTER, -log(0.5), NAN, NAN, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fell 50% (better)");
}

static void one_metric(struct block_summary *s, const char *metric, double v)
{
	memset(s, 0, sizeof(*s));
	s->n = 1;
	s->requests = 10000;
	s->expected = s->frames = 40;
	snprintf(s->v[0].name, sizeof(s->v[0].name), "%s", metric);
	s->v[0].kind = BLOCK_QUANTILE;
	s->v[0].ticks = 40;
	s->v[0].nobs = 10000;
	s->v[0].value = s->v[0].value_p95 = s->v[0].num = v;
	s->v[0].den = 1;
}

/* The judge's own d of a pair, turned back into text: B/A must come out as the blocks were, in both directions. */
static void test_against_the_judge(void **state)
{
	static const struct {
		enum policy_direction dir;
		double a, b;
		const char *want;
	} cases[] = {
		{POLICY_LOWER_IS_BETTER, 40, 10, "fell 75% (better)"},
		{POLICY_LOWER_IS_BETTER, 10, 40, "rose 300% (worse)"},
		{POLICY_HIGHER_IS_BETTER, 40, 10, "fell 75% (worse)"},
		{POLICY_HIGHER_IS_BETTER, 10, 40, "rose 300% (better)"},
		{POLICY_LOWER_IS_BETTER, 1000, 2, "fell to 1/500 (better)"},
	};
	struct judge_config cfg;
	char buf[EVFMT_TEXT_MAX];

	(void)state;
	judge_config_default(&cfg);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct policy_metric obj = {.dir = cases[i].dir};
		struct block_summary a, b;
		struct judge j;
		double d;

		snprintf(obj.metric, sizeof(obj.metric), "http.p99_ms");
		assert_int_equal(judge_start(&j, &cfg, &obj, NULL, 0), 0);
		one_metric(&a, "http.p99_ms", cases[i].a);
		one_metric(&b, "http.p99_ms", cases[i].b);
		assert_int_equal(judge_pair_effect(&j, &a, &b, &d), 0);
		assert_int_equal(evfmt_objective_change(cases[i].dir, d, NAN, NAN, buf, sizeof(buf)), 0);
		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("%g -> %g: \"%s\", want \"%s\"", cases[i].a, cases[i].b, buf, cases[i].want);
	}
}

static void test_summary(void **state)
{
	char buf[EVFMT_TEXT_MAX];

	(void)state;
	/* a zero side: the two values, and which way that is */
	assert_int_equal(evfmt_summary("tcp.listen_overflows", POLICY_LOWER_IS_BETTER, 486, 0, log(972.0), log(500.0),
				       log(2000.0), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "listen overflows 486/1k req -> 0/1k req (better)");
	assert_int_equal(evfmt_summary("tcp.listen_overflows", POLICY_LOWER_IS_BETTER, 0, 3, -2, -3, -1, buf,
				       sizeof(buf)), 0);
	assert_string_equal(buf, "listen overflows 0/1k req -> 3/1k req (worse)");
	assert_int_equal(evfmt_summary("tcp.listen_overflows", POLICY_LOWER_IS_BETTER, 0, 0, 0, -0.1, 0.1, buf,
				       sizeof(buf)), 0);
	assert_string_equal(buf, "listen overflows 0/1k req -> 0/1k req");
	/* both sides: the arms and the change */
	assert_int_equal(evfmt_summary("http.p99_ms", POLICY_LOWER_IS_BETTER, 40, 12, -log(0.3), -log(0.35),
				       -log(0.25), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "p99 latency 40 ms -> 12 ms, fell 70% [65%, 75%] (better)");
	/* no pair yet: the arms are not known, nor the change */
	assert_int_equal(evfmt_summary("http.p99_ms", POLICY_LOWER_IS_BETTER, NAN, NAN, NAN, NAN, NAN, buf,
				       sizeof(buf)), 0);
	assert_string_equal(buf, "p99 latency n/a -> n/a");
	/* a guardrail judged by its log ratios alone */
	assert_int_equal(evfmt_metric_change("http.p99_ms", POLICY_LOWER_IS_BETTER, -log(1.03), -log(1.07),
					     -log(0.99), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "p99 latency rose 3% [-1%, +7%]");
	assert_int_equal(evfmt_metric_change("http.p99_ms", POLICY_LOWER_IS_BETTER, NAN, NAN, NAN, buf, sizeof(buf)),
			 -EDOM);
	assert_string_equal(buf, "");
	/* an infinite bound: the values only */
	assert_int_equal(evfmt_summary("cpu.busy_per_kreq", POLICY_LOWER_IS_BETTER, 40, 20, log(2), -INFINITY,
				       INFINITY, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "busy CPU 40 CPU ms/1k req -> 20 CPU ms/1k req (better)");
}

static void test_uncorrect(void **state)
{
	double v;

	(void)state;
	/* 0 events over 10000 requests: the judge saw 0.5 / 10 per 1k */
	assert_int_equal(evfmt_uncorrect("tcp.listen_overflows", 0.5 / 10.0, 10000, &v), 0);
	assert_true(v == 0.0);
	assert_int_equal(evfmt_uncorrect("tcp.listen_overflows", (4860 + 0.5) / 10.0, 10000, &v), 0);
	assert_true(fabs(v - 486.0) < 1e-9);
	assert_int_equal(evfmt_uncorrect("http.5xx_rate", 0.5 / 10000, 10000, &v), 0);
	assert_true(v == 0.0);
	assert_int_equal(evfmt_uncorrect("http.timeouts", (20 + 0.5) / 10.0, 10000, &v), 0);
	assert_true(fabs(v - 2.0) < 1e-9);
	/* not over requests, not a count, no requests: as given */
	assert_int_equal(evfmt_uncorrect("softnet.drop_rate", 0.25, 10000, &v), -ENOENT);
	assert_true(v == 0.25);
	assert_int_equal(evfmt_uncorrect("nginx.unhandled", 0.25, 10000, &v), -ENOENT);
	assert_int_equal(evfmt_uncorrect("http.p99_ms", 12, 10000, &v), -ENOENT);
	assert_true(v == 12);
	assert_int_equal(evfmt_uncorrect("tcp.listen_overflows", 12, 0, &v), -ENOENT);
	assert_int_equal(evfmt_uncorrect("tcp.listen_overflows", NAN, 100, &v), -ENOENT);
}

/* Every magnitude, in every notation: never a percentage above 1000%. */
static void test_sweep(void **state)
{
	static const double specials[] = {0.0, INFINITY, -INFINITY, NAN, 1e-300, 1e300, 1.0};
	static const char *const metrics[] = {"http.5xx_rate", "nginx.worker_wait_ratio", "listen.80.fill_pct",
					      "tcp.listen_overflows", "http.p99_ms"};
	char buf[EVFMT_TEXT_MAX];
	unsigned shown = 0;

	(void)state;
	for (double e = -12.0; e <= 12.0; e += 0.125) {
		double r = pow(10.0, e);
		static const double widths[] = {1.0001, 1.5, 3.0, 30.0, 1e6};

		for (size_t w = 0; w < ARRAY_LEN(widths); w++) {
			const double lo[] = {r / widths[w], r, r / widths[w] / widths[w]};
			const double hi[] = {r * widths[w], r * widths[w] * widths[w], r};

			for (size_t k = 0; k < ARRAY_LEN(lo); k++) {
				assert_int_equal(evfmt_change(r, lo[k], hi[k], EVFMT_SENSE_LOWER_BETTER, buf,
							      sizeof(buf)), 0);
				assert_no_big_percent(buf);
				shown++;
			}
		}
		assert_int_equal(evfmt_objective_change(POLICY_LOWER_IS_BETTER, e, e - 1, e + 1, buf, sizeof(buf)), 0);
		assert_no_big_percent(buf);
		assert_int_equal(evfmt_summary("http.p99_ms", POLICY_HIGHER_IS_BETTER, 10.0, 10.0 * r, log(r),
					       log(r) - 2, log(r) + 2, buf, sizeof(buf)), 0);
		assert_no_big_percent(buf);
		for (size_t m = 0; m < ARRAY_LEN(metrics); m++) {
			assert_int_equal(evfmt_value(metrics[m], r, buf, sizeof(buf)), 0);
			assert_no_big_percent(buf);
		}
	}
	for (size_t i = 0; i < ARRAY_LEN(specials); i++)
		for (size_t m = 0; m < ARRAY_LEN(metrics); m++) {
			assert_int_equal(evfmt_value(metrics[m], specials[i], buf, sizeof(buf)), 0);
			assert_no_big_percent(buf);
			assert_int_equal(evfmt_summary(metrics[m], POLICY_LOWER_IS_BETTER, specials[i], 1.0, 0.5, 0.1,
						       0.9, buf, sizeof(buf)), 0);
			assert_no_big_percent(buf);
		}
	assert_true(shown > 1000);
}

/* The checker itself must see a big percentage (a test that cannot fail checks nothing). */
static void test_checker_fails(void **state)
{
	(void)state;
	assert_false(big_percent("rose 1000% [3.5%, 999.9%]"));
	assert_true(big_percent("estimate +906.6% [-99.6%, +2474970.2%]"));
	assert_true(big_percent("better by +37746.9%"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),         cmocka_unit_test(test_labels_and_arms),
		cmocka_unit_test(test_change),         cmocka_unit_test(test_change_refused),
		cmocka_unit_test(test_objective_directions), cmocka_unit_test(test_against_the_judge),
		cmocka_unit_test(test_summary),        cmocka_unit_test(test_uncorrect),
		cmocka_unit_test(test_sweep),          cmocka_unit_test(test_checker_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
