/*
 * stats: distributions, estimators and the seeded generator. See stats.h.
 */
#include "stats.h"

#include <errno.h>
#include <math.h>

int stats_mean_sd(const double *x, size_t n, double *mean, double *sd)
{
	double m = 0.0, ss = 0.0;

	if (n == 0 || !x)
		return -EINVAL;
	/* Welford: stable for values that are close together, which log ratios near 0 are. */
	for (size_t i = 0; i < n; i++) {
		double delta;

		if (!isfinite(x[i]))
			return -EINVAL;
		delta = x[i] - m;
		m += delta / (double)(i + 1);
		ss += delta * (x[i] - m);
	}
	*mean = m;
	*sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
	return 0;
}

double stats_norm_cdf(double x)
{
	return 0.5 * erfc(-x / M_SQRT2);
}

double stats_norm_quantile(double p)
{
	static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
				   1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
	static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
				   6.680131188771972e+01,  -1.328068155288572e+01};
	static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
				   -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
	static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
				   3.754408661907416e+00};
	double q, r, x, e, u;

	if (!(p > 0.0 && p < 1.0))
		return NAN;
	if (p < 0.02425) {
		q = sqrt(-2.0 * log(p));
		x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
	} else if (p > 1.0 - 0.02425) {
		q = sqrt(-2.0 * log1p(-p));
		x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
	} else {
		q = p - 0.5;
		r = q * q;
		x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
		    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
	}
	/* One Halley step takes the approximation (1e-9 relative) to full double precision. */
	e = stats_norm_cdf(x) - p;
	u = e * sqrt(2.0 * M_PI) * exp(x * x / 2.0);
	return x - u / (1.0 + x * u / 2.0);
}

/* Continued fraction of the incomplete beta (modified Lentz), valid for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0), h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1.0 / d;
	h = d;
	/* Convergence takes O(sqrt(max(a, b))) terms; the cap covers counts up to about 1e9. */
	for (int m = 1; m <= 200000; m++) {
		double m2 = 2.0 * m, aa, del;

		aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
		d = 1.0 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1.0 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1.0 / d;
		h *= d * c;
		aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
		d = 1.0 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1.0 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1.0 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1.0) < 1e-15)
			break;
	}
	return h;
}

double stats_beta_inc(double a, double b, double x)
{
	double lf;

	if (!(a > 0.0 && b > 0.0 && x >= 0.0 && x <= 1.0) || !isfinite(a) || !isfinite(b))
		return NAN;
	if (x == 0.0 || x == 1.0)
		return x;
	lf = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	if (x < (a + 1.0) / (a + b + 2.0))
		return exp(lf) * beta_cf(a, b, x) / a;
	return 1.0 - exp(lf) * beta_cf(b, a, 1.0 - x) / b;
}

double stats_t_cdf(double t, double df)
{
	double tail;

	if (isnan(t) || !(df > 0.0))
		return NAN;
	if (isinf(t))
		return t > 0 ? 1.0 : 0.0;
	/* P(|T| > |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2). */
	tail = 0.5 * stats_beta_inc(df / 2.0, 0.5, df / (df + t * t));
	return t > 0 ? 1.0 - tail : tail;
}

static double t_pdf(double t, double df)
{
	return exp(lgamma((df + 1.0) / 2.0) - lgamma(df / 2.0) - 0.5 * log(df * M_PI) -
		   (df + 1.0) / 2.0 * log1p(t * t / df));
}

double stats_t_quantile(double p, double df)
{
	double lo, hi, x;

	if (!(p > 0.0 && p < 1.0) || !(df > 0.0))
		return NAN;
	if (p < 0.5)
		return -stats_t_quantile(1.0 - p, df);
	if (p == 0.5)
		return 0.0;
	if (df == 1.0)
		return tan(M_PI * (p - 0.5));
	if (df == 2.0)
		return (2.0 * p - 1.0) / sqrt(2.0 * p * (1.0 - p));
	/* Start from the Cornish-Fisher expansion, then Newton steps kept inside a bracket that bisection shrinks. */
	{
		double z = stats_norm_quantile(p), z3 = z * z * z;

		x = z + (z3 + z) / (4.0 * df) + (5.0 * z3 * z * z + 16.0 * z3 + 3.0 * z) / (96.0 * df * df);
	}
	lo = 0.0;
	hi = 1.0;
	while (stats_t_cdf(hi, df) < p && hi < 1e300)
		hi *= 2.0;
	if (!(x > lo && x < hi))
		x = (lo + hi) / 2.0;
	for (int i = 0; i < 200; i++) {
		double f = stats_t_cdf(x, df) - p, nx;

		if (f > 0)
			hi = x;
		else
			lo = x;
		if (fabs(f) < 1e-15)
			break;
		nx = x - f / t_pdf(x, df);
		if (!(nx > lo && nx < hi))
			nx = (lo + hi) / 2.0;
		if (fabs(nx - x) <= 1e-14 * fabs(x))
			return nx;
		x = nx;
	}
	return x;
}

double stats_binom_tail(uint64_t k, uint64_t n, double p)
{
	if (!(p >= 0.0 && p <= 1.0))
		return NAN;
	if (k == 0)
		return 1.0;
	if (k > n)
		return 0.0;
	if (p == 0.0)
		return 0.0;
	if (p == 1.0)
		return 1.0;
	/* P(X >= k) = I_p(k, n - k + 1). */
	return stats_beta_inc((double)k, (double)(n - k) + 1.0, p);
}

double stats_poisson_tail(uint64_t k, double mean)
{
	double lt, sum = 0.0, lmean;

	if (!(mean >= 0.0) || !isfinite(mean))
		return NAN;
	if (k == 0)
		return 1.0;
	if (mean == 0.0)
		return 0.0;
	/* Below the mean the tail is most of the mass: one minus the (short) lower sum. */
	lmean = log(mean);
	if ((double)k <= mean && k > 10000) {
		/* X >= k is a chi-square of 2k degrees of freedom at most 2 mean: Wilson and Hilferty's cube root. */
		double nu = 2.0 * (double)k, h = 2.0 / (9.0 * nu);

		return stats_norm_cdf((cbrt(2.0 * mean / nu) - (1.0 - h)) / sqrt(h));
	}
	if ((double)k <= mean) {
		for (uint64_t i = 0; i < k; i++)
			sum += exp((double)i * lmean - mean - lgamma((double)i + 1.0));
		return fmax(0.0, 1.0 - sum);
	}
	/* Above it the terms fall at least geometrically (ratio mean / (i + 1) < 1): sum until they vanish. */
	for (uint64_t i = k; i < k + 100000; i++) {
		lt = (double)i * lmean - mean - lgamma((double)i + 1.0);
		sum += exp(lt);
		if (lt < -745.0 || exp(lt) < sum * 1e-17)
			break;
	}
	return fmin(1.0, sum);
}

double stats_sign_test(unsigned npos, unsigned nneg)
{
	return stats_binom_tail(npos, (uint64_t)npos + nneg, 0.5);
}

double stats_seq_t_logbf(const double *y, size_t n, double prior_ss, double prior_df, double tau)
{
	double sum = 0.0, ss = 0.0, t2n, total, q;

	if (n == 0 || !y || !(tau > 0.0) || !isfinite(tau) || !(prior_ss >= 0.0) || !isfinite(prior_ss) ||
	    !(prior_df >= 0.0) || !isfinite(prior_df))
		return NAN;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(y[i]))
			return NAN;
		sum += y[i];
		ss += y[i] * y[i];
	}
	t2n = tau * tau * (double)n;
	total = prior_ss + ss;
	/* N^2 tau^2 mean^2 / (1 + N tau^2), with N mean = sum. */
	q = tau * tau * sum * sum / (1.0 + t2n);
	if (!(total > 0.0))
		return -0.5 * log1p(t2n);
	/* total - q = prior_ss + sum (y - mean)^2 + N mean^2 / (1 + N tau^2) > 0; rounding may make it tiny. */
	return -0.5 * log1p(t2n) - 0.5 * (prior_df + (double)n) * log1p(-fmin(q / total, 1.0 - 1e-15));
}

static double log_moment_at(double N, double z, double v)
{
	return (v > 0.0 ? (N - 1.0) * log(v) : (N > 1.0 ? -INFINITY : 0.0)) - 0.5 * v * v + z * v;
}

/* ln of the integral over v > 0 of v^(N - 1) exp(-v^2 / 2 + Z v), N >= 1. The log-integrand is concave (its second
 * derivative is below -1): everything but e^-50 of the integral lies between the points on either side of its peak
 * where it is 50 below (bisection: the right one is within 10 of the peak); Simpson's rule in log space there. */
static double log_gauss_moment(double N, double z)
{
	enum { STEPS = 2000 };
	/* The peak, (N - 1) / v = v - z, in the form that does not cancel for z far below 0. */
	double root = sqrt(z * z + 4.0 * (N - 1.0)), peak = z >= 0.0 ? 0.5 * (z + root) : 2.0 * (N - 1.0) / (root - z);
	double top = log_moment_at(N, z, peak), edge[2], h, sum = 0.0;

	for (int side = 0; side < 2; side++) {
		double near = peak, far = side ? peak + 10.0 : 0.0;

		if (!side && log_moment_at(N, z, 0.0) >= top - 50.0) {
			edge[0] = 0.0;
			continue;
		}
		for (int i = 0; i < 80; i++) {
			double mid = 0.5 * (near + far);

			*(log_moment_at(N, z, mid) >= top - 50.0 ? &near : &far) = mid;
		}
		edge[side] = far;
	}
	h = (edge[1] - edge[0]) / STEPS;
	for (int i = 0; i <= STEPS; i++)
		sum += (i == 0 || i == STEPS ? 1.0 : i % 2 ? 4.0 : 2.0) * exp(log_moment_at(N, z, edge[0] + h * i) - top);
	return top + log(sum * h / 3.0);
}

double stats_seq_t_logbf_prior(const double *y, size_t n, double prior_ss, double prior_df, double tau, double m)
{
	double sum = 0.0, ss = 0.0, t2n, total, rest, N = prior_df + (double)n, z = 0.0, lbf;

	if (!isfinite(m))
		return NAN;
	if (m == 0.0)
		return stats_seq_t_logbf(y, n, prior_ss, prior_df, tau);
	lbf = stats_seq_t_logbf(y, n, prior_ss, prior_df, tau); /* checks the arguments */
	if (isnan(lbf))
		return NAN;
	for (size_t i = 0; i < n; i++) {
		sum += y[i];
		ss += y[i] * y[i];
	}
	t2n = tau * tau * (double)n;
	total = prior_ss + ss;
	/* With u = 1 / sigma the effect integrates out in closed form; what is left over u is a Gaussian moment:
	 *   BF = (1 + n tau^2)^(-1/2) exp(-n m^2 / (2 (1 + n tau^2))) (T / A)^(N / 2) I(N, z) / I(N, 0),
	 *   A = T - tau^2 S^2 / (1 + n tau^2),  z = S m / ((1 + n tau^2) sqrt(A)),  S = sum y,  N = PRIOR_DF + n,
	 * I(N, z) = integral of v^(N - 1) exp(-v^2 / 2 + z v) dv over v > 0, I(N, 0) = 2^(N / 2 - 1) Gamma(N / 2). */
	rest = total > 0.0 ? fmax(total - tau * tau * sum * sum / (1.0 + t2n), total * 1e-15) : 0.0;
	lbf = -0.5 * log1p(t2n) - (double)n * m * m / (2.0 * (1.0 + t2n));
	if (total > 0.0) {
		z = sum * m / ((1.0 + t2n) * sqrt(rest));
		lbf += 0.5 * N * log(total / rest);
	}
	return lbf + log_gauss_moment(N, z) - (lgamma(0.5 * N) + (0.5 * N - 1.0) * log(2.0));
}

int stats_wilson(uint64_t x, uint64_t n, double z, double *lo, double *hi)
{
	double ph, z2n, centre, half, den;

	if (n == 0 || x > n || !(z > 0.0) || !isfinite(z))
		return -EINVAL;
	ph = (double)x / (double)n;
	z2n = z * z / (double)n;
	den = 1.0 + z2n;
	centre = (ph + z2n / 2.0) / den;
	half = z / den * sqrt(ph * (1.0 - ph) / (double)n + z2n / (4.0 * (double)n));
	*lo = x == 0 ? 0.0 : fmax(0.0, centre - half);
	*hi = x == n ? 1.0 : fmin(1.0, centre + half);
	return 0;
}

/* ---- generator ------------------------------------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void stats_rng_seed(struct stats_rng *rng, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&seed);
}

uint64_t stats_rng_next(struct stats_rng *rng)
{
	uint64_t *s = rng->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double stats_rng_uniform(struct stats_rng *rng)
{
	/* 53 random bits, shifted by half a step so that neither 0 nor 1 can come out. */
	return ((double)(stats_rng_next(rng) >> 11) + 0.5) * 0x1.0p-53;
}

uint64_t stats_rng_below(struct stats_rng *rng, uint64_t n)
{
	uint64_t limit, x;

	if (n == 0)
		return 0;
	limit = UINT64_MAX - UINT64_MAX % n;
	do
		x = stats_rng_next(rng);
	while (x >= limit);
	return x % n;
}

double stats_rng_normal(struct stats_rng *rng)
{
	double u = stats_rng_uniform(rng), v = stats_rng_uniform(rng);

	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

double stats_rng_exp(struct stats_rng *rng, double mean)
{
	return -mean * log(stats_rng_uniform(rng));
}

double stats_rng_pareto(struct stats_rng *rng, double xm, double alpha)
{
	if (!(xm > 0.0) || !(alpha > 0.0))
		return NAN;
	return xm / pow(stats_rng_uniform(rng), 1.0 / alpha);
}

uint64_t stats_rng_poisson(struct stats_rng *rng, double mean)
{
	if (!(mean > 0.0))
		return 0;
	if (mean > 1e15)
		mean = 1e15;
	if (mean < 10.0) {
		double limit = exp(-mean), prod = stats_rng_uniform(rng);
		uint64_t k = 0;

		while (prod > limit) {
			prod *= stats_rng_uniform(rng);
			k++;
		}
		return k;
	}
	/* PTRS, W. Hormann, "The transformed rejection method for generating Poisson random variables" (1993). */
	{
		double slam = sqrt(mean), loglam = log(mean), b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
		double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);

		for (;;) {
			double u = stats_rng_uniform(rng) - 0.5, v = stats_rng_uniform(rng), us = 0.5 - fabs(u), k;

			k = floor((2.0 * a / us + b) * u + mean + 0.43);
			if (k < 0.0)
				continue;
			if (us >= 0.07 && v <= vr)
				return (uint64_t)k;
			if (us < 0.013 && v > us)
				continue;
			if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -mean + k * loglam - lgamma(k + 1.0))
				return (uint64_t)k;
		}
	}
}
