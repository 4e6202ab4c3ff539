/*
 * stats: the few distributions and estimators the judge needs, and a seeded random generator.
 *
 * Owns Student's t (cdf and quantile), the normal quantile, the regularized incomplete beta function, binomial
 * tails (exact, through the incomplete beta), the sign test, Wilson's score interval, mean and standard deviation,
 * the scale-invariant Bayes factor of the sequential t-test,
 * and xoshiro256** seeded by splitmix64 with uniform, normal, exponential, Pareto and Poisson draws. The generator's
 * state belongs to the caller (the controller, the simulator): this module keeps no state of its own.
 * Must not: read clocks, files or the environment; log; allocate. Functions that return a double return NAN for
 * arguments outside their domain.
 */
#ifndef NGXAT_STATS_H
#define NGXAT_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Mean and sample standard deviation (n - 1) of X[0..N). 0; -EINVAL when N is 0 or a value is not finite. SD is 0
 * for N = 1. */
int stats_mean_sd(const double *x, size_t n, double *mean, double *sd);

/* Standard normal cdf. */
double stats_norm_cdf(double x);
/* Standard normal quantile for P in (0, 1) (Acklam's rational approximation, refined by one Halley step). */
double stats_norm_quantile(double p);
/* Regularized incomplete beta I_x(a, b) for a, b > 0 and x in [0, 1]. */
double stats_beta_inc(double a, double b, double x);
/* Student's t cdf P(T <= t) with DF > 0 degrees of freedom (DF may be fractional). */
double stats_t_cdf(double t, double df);
/* Student's t quantile for P in (0, 1) and DF > 0: the t with P(T <= t) = P. */
double stats_t_quantile(double p, double df);

/* P(X >= K) for X ~ Binomial(N, P): 1 for K = 0, 0 for K > N. */
double stats_binom_tail(uint64_t k, uint64_t n, double p);
/* P(X >= K) for X ~ Poisson(MEAN): 1 for K = 0; NAN for a negative or non-finite MEAN. Exact sums, except for
 * K above 10000 and at most MEAN (a tail near 1: Wilson and Hilferty's approximation). */
double stats_poisson_tail(uint64_t k, double mean);
/* One-sided sign test: P(X >= NPOS) for X ~ Binomial(NPOS + NNEG, 1/2) (ties are dropped by the caller). */
double stats_sign_test(unsigned npos, unsigned nneg);
/* Wilson score interval of X successes in N trials at normal quantile Z (1.96 for 95%). 0 or -EINVAL (N = 0,
 * X > N, Z not positive). */
int stats_wilson(uint64_t x, uint64_t n, double z, double *lo, double *hi);

/*
 * The log Bayes factor of "the mean of Y is not 0" against "it is 0" for normal Y[0..N) of unknown sd sigma, with
 * the effect mean / sigma ~ N(0, TAU^2) under the alternative and the right Haar prior 1 / sigma on sigma: PRIOR_SS
 * is a sum of squares of PRIOR_DF degrees of freedom about a known or estimated mean (an earlier A/A calibration:
 * (n - 1) sd^2 with n - 1 degrees of freedom), 0 and 0 when there is none. Closed form:
 *   BF = (1 + N tau^2)^(-1/2) [T / (T - N^2 tau^2 mean^2 / (1 + N tau^2))]^((PRIOR_DF + N) / 2),  T = PRIOR_SS + sum y^2.
 * Under the null its running value is an e-process (group invariance under scale: Perez-Ortiz, Lardy, de Heide and
 * Grunwald, "E-statistics, group invariance and anytime valid testing", 2022), so stopping the first time it
 * reaches 1 / alpha keeps the error at alpha whatever the stopping time. With PRIOR_DF 0 it is the normal-prior
 * Bayes factor of the one-sample t-test. NAN for N = 0, a value that is not finite, TAU not positive, or a
 * negative PRIOR_SS or PRIOR_DF.
 */
double stats_seq_t_logbf(const double *y, size_t n, double prior_ss, double prior_df, double tau);

/*
 * The same Bayes factor with the effect mean / sigma ~ N(M, TAU^2) under the alternative: a prior centred where an
 * earlier trial (a canary's) found the effect. Not closed form with the Haar prior on sigma: the effect integrates out
 * and the rest is one Gaussian moment in z = S m / ((1 + N tau^2) sqrt(A)) (|z| < |M| / TAU: tests/unit/test_stats.c
 * checks it against a double integral to 1e-3 in ln BF), integrated numerically. Any prior on the effect
 * keeps the running value an e-process under the null (the same group invariance), so whatever M says, stopping at
 * 1 / alpha keeps the error at alpha; a true M only makes the effect found sooner. M = 0 is stats_seq_t_logbf. NAN
 * where that is, and for M not finite.
 */
double stats_seq_t_logbf_prior(const double *y, size_t n, double prior_ss, double prior_df, double tau, double m);

/* xoshiro256**: 256 bits of state, period 2^256 - 1. */
struct stats_rng {
	uint64_t s[4];
};

/* Seed RNG from SEED through splitmix64 (any seed, 0 included, gives a valid state). */
void stats_rng_seed(struct stats_rng *rng, uint64_t seed);
/* The next 64 random bits. */
uint64_t stats_rng_next(struct stats_rng *rng);
/* Uniform in the open interval (0, 1). */
double stats_rng_uniform(struct stats_rng *rng);
/* Uniform integer in [0, N) without modulo bias; 0 when N is 0. */
uint64_t stats_rng_below(struct stats_rng *rng, uint64_t n);
/* Standard normal draw (Box-Muller; no cached spare, so the state alone defines the stream). */
double stats_rng_normal(struct stats_rng *rng);
/* Exponential draw with mean MEAN. */
double stats_rng_exp(struct stats_rng *rng, double mean);
/* Pareto draw with scale XM > 0 and shape ALPHA > 0 (heavy tail: P(X > x) = (XM / x)^ALPHA). */
double stats_rng_pareto(struct stats_rng *rng, double xm, double alpha);
/* Poisson draw with mean MEAN >= 0 (multiplication below 10, Hormann's PTRS above; MEAN is capped at 1e15). */
uint64_t stats_rng_poisson(struct stats_rng *rng, double mean);

#endif
