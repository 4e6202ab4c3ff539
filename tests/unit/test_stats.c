/*
 * test_stats: t and normal quantiles against tables, binomial tails against exact sums, Wilson, mean/sd, the
 * generator's determinism and the moments of its draws.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "stats.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void assert_close(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.10g, want %.10g (tol %.3g)", got, want, tol);
}

static void test_t_quantile(void **state)
{
	/* Values from standard t tables (R: qt(p, df)). */
	static const struct {
		double p, df, want;
	} cases[] = {
		{0.95, 1, 6.313752}, {0.95, 2, 2.919986}, {0.95, 3, 2.353363}, {0.95, 4, 2.131847},
		{0.95, 5, 2.015048}, {0.95, 7, 1.894579}, {0.95, 9, 1.833113}, {0.95, 10, 1.812461},
		{0.95, 15, 1.753050}, {0.95, 30, 1.697261}, {0.95, 100, 1.660234}, {0.975, 1, 12.706205},
		{0.975, 4, 2.776445}, {0.975, 10, 2.228139}, {0.99, 5, 3.364930}, {0.99, 10, 2.763769},
		{0.995, 1, 63.656741}, {0.995, 10, 3.169273}, {0.8, 7, 0.896030}, {0.05, 7, -1.894579},
		{0.5, 7, 0.0},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		double q = stats_t_quantile(cases[i].p, cases[i].df);

		assert_close(q, cases[i].want, 2e-6 * fmax(1.0, fabs(cases[i].want)));
		assert_close(stats_t_cdf(q, cases[i].df), cases[i].p, 1e-9);
	}
	assert_true(isnan(stats_t_quantile(0.0, 5)));
	assert_true(isnan(stats_t_quantile(0.9, 0)));
	assert_true(isnan(stats_t_quantile(NAN, 5)));
}

static void test_norm(void **state)
{
	static const struct {
		double p, want;
	} cases[] = {
		{0.5, 0.0}, {0.8, 0.841621}, {0.95, 1.644854}, {0.975, 1.959964}, {0.99, 2.326348}, {0.999, 3.090232},
		{0.001, -3.090232}, {1e-10, -6.361341},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		assert_close(stats_norm_quantile(cases[i].p), cases[i].want, 2e-6);
	assert_close(stats_norm_cdf(1.959964), 0.975, 1e-7);
	assert_true(isnan(stats_norm_quantile(1.0)));
}

static void test_binom(void **state)
{
	/* Exact sums (Python fractions). */
	static const struct {
		uint64_t k, n;
		double p, want;
	} cases[] = {
		{8, 8, 0.5, 0.00390625}, {7, 8, 0.5, 0.03515625}, {6, 8, 0.5, 0.14453125},
		{3, 10, 0.1, 0.0701908264}, {5, 20, 0.25, 0.5851584974698198}, {40, 100, 0.3, 0.02098857600392468},
		{1, 50, 0.01, 0.39499393286246337}, {0, 10, 0.3, 1.0}, {11, 10, 0.3, 0.0}, {1, 1, 0.0, 0.0},
		{3, 3, 1.0, 1.0},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		assert_close(stats_binom_tail(cases[i].k, cases[i].n, cases[i].p), cases[i].want,
			     1e-9 * fmax(1e-3, cases[i].want));
	assert_close(stats_sign_test(7, 1), 0.03515625, 1e-12);
	assert_close(stats_sign_test(0, 0), 1.0, 0);
	/* Large n: the normal approximation is close; the exact tail is finite and monotonic. */
	assert_close(stats_binom_tail(501000, 1000000, 0.5), 1.0 - stats_norm_cdf((1000.0 - 0.5) / 500.0), 2e-4);
	assert_true(stats_binom_tail(502000, 1000000, 0.5) < stats_binom_tail(501000, 1000000, 0.5));
	assert_true(isnan(stats_binom_tail(1, 2, 1.5)));
}

static void test_wilson(void **state)
{
	static const struct {
		uint64_t x, n;
		double lo, hi;
	} cases[] = {
		{5, 100, 0.021543679017992166, 0.1117504698741045},
		{0, 100, 0.0, 0.03699349876899627},
		{50, 100, 0.40383152963549296, 0.596168470364507},
	};
	double lo, hi;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(stats_wilson(cases[i].x, cases[i].n, 1.959964, &lo, &hi), 0);
		assert_close(lo, cases[i].lo, 1e-9);
		assert_close(hi, cases[i].hi, 1e-9);
	}
	assert_int_equal(stats_wilson(1, 0, 1.96, &lo, &hi), -EINVAL);
	assert_int_equal(stats_wilson(3, 2, 1.96, &lo, &hi), -EINVAL);
}

static void test_mean_sd(void **state)
{
	static const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
	double bad[] = {1, NAN};
	double m, sd;

	(void)state;
	assert_int_equal(stats_mean_sd(x, ARRAY_LEN(x), &m, &sd), 0);
	assert_close(m, 5.0, 1e-12);
	assert_close(sd, sqrt(32.0 / 7.0), 1e-12);
	assert_int_equal(stats_mean_sd(x, 1, &m, &sd), 0);
	assert_close(sd, 0.0, 0);
	assert_int_equal(stats_mean_sd(x, 0, &m, &sd), -EINVAL);
	assert_int_equal(stats_mean_sd(bad, 2, &m, &sd), -EINVAL);
}

static void test_rng(void **state)
{
	struct stats_rng a, b;
	double sum = 0, sum2 = 0, e = 0, pois = 0, pois_small = 0;
	const int n = 200000;

	(void)state;
	stats_rng_seed(&a, 42);
	stats_rng_seed(&b, 42);
	for (int i = 0; i < 100; i++)
		assert_true(stats_rng_next(&a) == stats_rng_next(&b));
	stats_rng_seed(&b, 43);
	assert_true(stats_rng_next(&a) != stats_rng_next(&b));
	for (int i = 0; i < n; i++) {
		double z = stats_rng_normal(&a), u = stats_rng_uniform(&a);

		assert_true(u > 0.0 && u < 1.0);
		sum += z;
		sum2 += z * z;
		e += stats_rng_exp(&a, 3.0);
		pois += (double)stats_rng_poisson(&a, 250.0);
		pois_small += (double)stats_rng_poisson(&a, 2.5);
		assert_true(stats_rng_pareto(&a, 2.0, 3.0) >= 2.0);
		assert_true(stats_rng_below(&a, 7) < 7);
	}
	assert_close(sum / n, 0.0, 0.01);
	assert_close(sum2 / n, 1.0, 0.02);
	assert_close(e / n, 3.0, 0.03);
	assert_close(pois / n, 250.0, 0.2);
	assert_close(pois_small / n, 2.5, 0.02);
	assert_int_equal(stats_rng_poisson(&a, 0.0), 0);
	assert_int_equal(stats_rng_poisson(&a, NAN), 0);
	assert_int_equal(stats_rng_below(&a, 0), 0);
}

/* Poisson tails against the direct sum of the probability mass function (Python's math.lgamma, 2000 terms). */
static void test_poisson_tail(void **state)
{
	static const struct {
		uint64_t k;
		double mean, want;
	} cases[] = {
		{0, 3.0, 1.0},
		{1, 3.0, 0.950212931632136},
		{5, 3.0, 0.1847367554762278},
		{10, 3.0, 0.0011024881301154817},
		{30, 8.0, 2.1025836307149444e-09},
		{20, 25.0, 0.86642516591435},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double got = stats_poisson_tail(cases[i].k, cases[i].mean);

		if (!(fabs(got - cases[i].want) <= 1e-9 * cases[i].want))
			fail_msg("P(X >= %llu | %g) = %.12g, want %.12g", (unsigned long long)cases[i].k, cases[i].mean,
				 got, cases[i].want);
	}
	assert_true(stats_poisson_tail(3, 0.0) == 0.0);
	/* The approximation branch: k = 20000 at most its mean 20100 (the direct sum: 0.76062). */
	assert_true(fabs(stats_poisson_tail(20000, 20100.0) - 0.76062) < 0.005);
	assert_true(isnan(stats_poisson_tail(3, -1.0)));
	assert_true(isnan(stats_poisson_tail(3, INFINITY)));
}

/* The sequential t-test's Bayes factor against the normal-prior Bayes factor of the one-sample t-test written in
 * t (Gonen, Johnson, Lu and Westfall, "The Bayesian two-sample t test", Am. Stat. 2005, one-sample form):
 * BF = (1 + n tau^2)^(-1/2) [(1 + t^2 / nu) / (1 + t^2 / (nu (1 + n tau^2)))]^((nu + 1) / 2), nu = n - 1. */
static void test_seq_t_logbf(void **state)
{
	static const double y[] = {0.21, 0.15, 0.33, 0.02, 0.19, 0.27, 0.11, 0.25};
	double tau = 2.0, big[3] = {5.0, 5.0, 5.0}, m, sd;

	(void)state;
	for (size_t n = 2; n <= 8; n++) {
		double t, nu = (double)n - 1.0, g = 1.0 + (double)n * tau * tau, want;

		assert_int_equal(stats_mean_sd(y, n, &m, &sd), 0);
		t = m / (sd / sqrt((double)n));
		want = -0.5 * log(g) + (nu + 1.0) / 2.0 * (log1p(t * t / nu) - log1p(t * t / (nu * g)));
		assert_true(fabs(stats_seq_t_logbf(y, n, 0.0, 0.0, tau) - want) < 1e-9);
	}
	/* One value and no prior knowledge of the noise: no evidence at all. */
	assert_true(fabs(stats_seq_t_logbf(y, 1, 0.0, 0.0, tau)) < 1e-12);
	/* Without a calibration, identical values are capped at (1 + n tau^2)^((n - 1) / 2): 13 for n = 3, tau = 2. */
	assert_true(fabs(stats_seq_t_logbf(big, 3, 0.0, 0.0, tau) - log(13.0)) < 1e-9);
	/* A calibration adds its degrees of freedom: the same pairs give more evidence with a quiet one. */
	assert_true(stats_seq_t_logbf(y, 3, 3 * 0.01 * 0.01, 3, tau) > stats_seq_t_logbf(y, 3, 0.0, 0.0, tau) + 1.0);
	/* A noisy calibration gives less. */
	assert_true(stats_seq_t_logbf(y, 3, 3 * 1.0, 3, tau) < stats_seq_t_logbf(y, 3, 0.0, 0.0, tau));
	assert_true(isnan(stats_seq_t_logbf(y, 0, 0.0, 0.0, tau)));
	assert_true(isnan(stats_seq_t_logbf(y, 3, 0.0, 0.0, 0.0)));
	assert_true(isnan(stats_seq_t_logbf(y, 3, -1.0, 0.0, tau)));
	big[1] = NAN;
	assert_true(isnan(stats_seq_t_logbf(big, 3, 0.0, 0.0, tau)));
}

/* The Bayes factor with the canary's prior, by brute force: the likelihood ratio integrated over the effect and over
 * ln sigma (the Haar prior is flat there) on a grid, for the derivation in stats.c to be checked against. */
static double brute_logbf_prior(const double *y, size_t n, double prior_ss, double prior_df, double tau, double m)
{
	double num = 0.0, den = 0.0, ls_lo = -8.0, ls_hi = 6.0, dl = (ls_hi - ls_lo) / 1400, dd = 16.0 * tau / 800;

	for (int i = 0; i <= 1400; i++) {
		double sigma = exp(ls_lo + dl * i), null = -(prior_df + (double)n) * log(sigma), ss0 = prior_ss, alt = 0.0;

		for (size_t k = 0; k < n; k++)
			ss0 += y[k] * y[k];
		null -= ss0 / (2.0 * sigma * sigma);
		for (int j = 0; j <= 800; j++) {
			double d = m - 8.0 * tau + dd * j, ss = prior_ss;

			for (size_t k = 0; k < n; k++)
				ss += (y[k] - d * sigma) * (y[k] - d * sigma);
			alt += exp(-(prior_df + (double)n) * log(sigma) - ss / (2.0 * sigma * sigma) + 300.0 -
				   (d - m) * (d - m) / (2.0 * tau * tau)) / sqrt(2.0 * M_PI * tau * tau) * dd;
		}
		num += alt;
		den += exp(null + 300.0);
	}
	return log(num / den);
}

static void test_seq_t_logbf_prior(void **state)
{
	static const double y[] = {0.21, 0.15, 0.33, 0.02, 0.19, 0.27, 0.11, 0.25};
	static const double gross[] = {1.9, 2.1, 2.0, 1.8, 2.2, 2.0};
	struct stats_rng rng;
	double sum = 0.0;
	unsigned with = 0, without = 0;

	(void)state;
	/* M = 0 is the closed form, and so is its limit. */
	for (size_t n = 2; n <= 8; n++) {
		assert_true(fabs(stats_seq_t_logbf_prior(y, n, 0.0, 0.0, 2.0, 0.0) - stats_seq_t_logbf(y, n, 0.0, 0.0, 2.0)) <
			    1e-12);
		assert_true(fabs(stats_seq_t_logbf_prior(y, n, 0.02, 4.0, 2.0, 1e-9) -
				 stats_seq_t_logbf(y, n, 0.02, 4.0, 2.0)) < 1e-6);
	}
	/* Against the integral done by brute force, with and without a calibration, either sign of M. */
	assert_true(fabs(stats_seq_t_logbf_prior(y, 4, 0.0, 0.0, 0.8, 1.2) - brute_logbf_prior(y, 4, 0.0, 0.0, 0.8, 1.2)) <
		    1e-3);
	assert_true(fabs(stats_seq_t_logbf_prior(y, 3, 0.05, 3.0, 0.5, 2.0) -
			 brute_logbf_prior(y, 3, 0.05, 3.0, 0.5, 2.0)) < 1e-3);
	assert_true(fabs(stats_seq_t_logbf_prior(y, 5, 0.0, 0.0, 1.0, -1.0) -
			 brute_logbf_prior(y, 5, 0.0, 0.0, 1.0, -1.0)) < 1e-3);
	/* A prior where the effect is finds it sooner: the gross pairs pass 20 at 2 with a gross canary's prior (its
	 * effect at judge.h's most, 8, over 4 pairs: judge_set_prior's spread 3.04), not before 4 with the default one. */
	for (size_t n = 2; n <= 6; n++) {
		if (!with && stats_seq_t_logbf_prior(gross, n, 0.0, 0.0, sqrt(33.0 / 4 + 1.0), 8.0) >= log(20.0))
			with = (unsigned)n;
		if (!without && stats_seq_t_logbf(gross, n, 0.0, 0.0, 2.0) >= log(20.0))
			without = (unsigned)n;
	}
	assert_int_equal(with, 2);
	assert_true(without >= 4);
	/* A prior on the wrong side gives less evidence than none. */
	assert_true(stats_seq_t_logbf_prior(y, 6, 0.0, 0.0, 0.7, -2.0) < stats_seq_t_logbf(y, 6, 0.0, 0.0, 0.7));
	/* Under the null its mean is 1, whatever M says (an e-value: a hostile canary cannot make a keep likelier). */
	stats_rng_seed(&rng, 7);
	for (int r = 0; r < 20000; r++) {
		double x[3];

		for (int k = 0; k < 3; k++)
			x[k] = stats_rng_normal(&rng);
		sum += exp(stats_seq_t_logbf_prior(x, 3, 0.0, 0.0, 0.7, 1.5));
	}
	assert_true(fabs(sum / 20000 - 1.0) < 0.05);
	assert_true(isnan(stats_seq_t_logbf_prior(y, 3, 0.0, 0.0, 2.0, NAN)));
	assert_true(isnan(stats_seq_t_logbf_prior(y, 0, 0.0, 0.0, 2.0, 1.0)));
	assert_true(isnan(stats_seq_t_logbf_prior(y, 3, 0.0, 0.0, 0.0, 1.0)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_t_quantile), cmocka_unit_test(test_norm),    cmocka_unit_test(test_binom),
		cmocka_unit_test(test_wilson),     cmocka_unit_test(test_mean_sd), cmocka_unit_test(test_rng),
		cmocka_unit_test(test_seq_t_logbf), cmocka_unit_test(test_poisson_tail), cmocka_unit_test(test_seq_t_logbf_prior),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
