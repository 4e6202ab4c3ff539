/*
 * evfmt: evidence as text in each metric's unit. See evfmt.h for the rules.
 */
#include "evfmt.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "block.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define FACTOR_MAX 11.0   /* beyond this factor a change is written as a factor: +1000% is the largest percentage */
#define UNCHANGED 0.0005  /* |B/A - 1| below this rounds to 0.0%: "unchanged" */

static const struct {
	const char *metric, *label;
} labels[] = {
	{"client.failure_rate", "client failure share"},
	{"client.p50_ms", "client p50 latency"},
	{"client.p99_ms", "client p99 latency"},
	{"client.total_p99_ms", "client p99 latency"},
	{"cpu.busy_per_kreq", "busy CPU"},
	{"cpu.softirq_per_kreq", "softirq CPU"},
	{"http.4xx_rate", "4xx share"},
	{"http.5xx_rate", "5xx share"},
	{"http.good_rate", "good responses"},
	{"http.mean_ms", "mean latency"},
	{"http.p50_ms", "p50 latency"},
	{"http.p90_ms", "p90 latency"},
	{"http.p99_ms", "p99 latency"},
	{"http.timeouts", "upstream timeouts"},
	{"http.upstream_share", "upstream share of request time"},
	{"loadgen.p50_ms", "load generator p50"},
	{"loadgen.p90_ms", "load generator p90"},
	{"loadgen.p99_ms", "load generator p99"},
	{"loadgen.rps", "load generator throughput"},
	{"nginx.active", "connections in nginx"},
	{"nginx.err.addr_not_avail", "address-not-available errors"},
	{"nginx.err.too_many_files", "too-many-open-files errors"},
	{"nginx.err.upstream_timeout", "upstream timeout errors"},
	{"nginx.err.worker_connections", "worker_connections errors"},
	{"nginx.unhandled", "unhandled connections"},
	{"nginx.worker_imbalance", "busiest worker / mean"},
	{"nginx.worker_wait_ratio", "worker run-queue wait"},
	{"softnet.drop_rate", "softnet drop share"},
	{"softnet.dropped", "softnet drops"},
	{"softnet.time_squeeze", "softnet time squeezes"},
	{"tcp.abort_on_memory", "TCP aborts on memory"},
	{"tcp.accept_wait", "wait for accept"},
	{"tcp.estab_resets", "TCP resets"},
	{"tcp.listen_drops", "listen drops"},
	{"tcp.listen_overflows", "listen overflows"},
	{"tcp.reqq_full_drop", "SYN queue drops"},
	{"tcp.retrans_rate", "TCP retransmit share"},
	{"tcp.sockstat.mem_pages", "TCP memory"},
	{"tcp.sockstat.orphan", "orphan sockets"},
	{"tcp.syncookies_sent", "SYN cookies sent"},
};

/* Text appended to a caller's buffer; a cut is remembered and reported once at the end. */
struct out {
	char *buf;
	size_t len, pos;
	bool cut;
};

static void out_init(struct out *o, char *buf, size_t len)
{
	o->buf = buf;
	o->len = len;
	o->pos = 0;
	o->cut = len == 0;
	if (len)
		buf[0] = '\0';
}

__attribute__((format(printf, 2, 3))) static void add(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->cut)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->pos) {
		o->cut = true;
		o->pos = o->len - 1;
		return;
	}
	o->pos += (size_t)n;
}

static int out_end(const struct out *o)
{
	return o->cut ? -ENOSPC : 0;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Milliseconds: the access log logs whole ms, everything else (schedstat, a client, a load generator) is finer. */
static enum evfmt_unit ms_unit(const char *metric)
{
	return starts(metric, "http.") ? EVFMT_UNIT_MS_COARSE : EVFMT_UNIT_MS;
}

enum evfmt_unit evfmt_unit_of(const char *metric)
{
	enum block_kind kind;
	bool count;

	if (!metric || block_metric_kind(metric, &kind, &count) < 0)
		return EVFMT_UNIT_NUMBER;
	switch (kind) {
	case BLOCK_QUANTILE:
		return ms_unit(metric);
	case BLOCK_RATIO:
		/* block.c's derived table: what each one is divided by. */
		if (ends(metric, "_per_kreq"))
			return EVFMT_UNIT_CPU_PER_KREQ;
		if (ends(metric, "_ms"))
			return ms_unit(metric);
		if (strcmp(metric, "nginx.unhandled") == 0)
			return EVFMT_UNIT_PER_KCONN;
		if (strcmp(metric, "http.timeouts") == 0)
			return EVFMT_UNIT_PER_KREQ;
		if (strcmp(metric, "http.good_rate") == 0)
			return EVFMT_UNIT_REQ_PER_S;
		if (strcmp(metric, "tcp.accept_wait") == 0)
			return EVFMT_UNIT_MS_PER_KREQ;
		return EVFMT_UNIT_SHARE;
	case BLOCK_PER_KREQ:
		return strstr(metric, "_ms") ? EVFMT_UNIT_MS_PER_KREQ : EVFMT_UNIT_PER_KREQ;
	case BLOCK_RUN:
		if (strcmp(metric, "loadgen.rps") == 0)
			return EVFMT_UNIT_REQ_PER_S;
		return ends(metric, "_ms") ? EVFMT_UNIT_MS : EVFMT_UNIT_PER_RUN;
	case BLOCK_MEAN:
		break;
	}
	if (ends(metric, "_ms"))
		return ms_unit(metric);
	if (ends(metric, "_pct"))
		return EVFMT_UNIT_PERCENT;
	if (ends(metric, "_rate") || ends(metric, "_ratio") || ends(metric, "_share"))
		return EVFMT_UNIT_SHARE;
	if (ends(metric, "mem_pages"))
		return EVFMT_UNIT_PAGES;
	return EVFMT_UNIT_NUMBER;
}

const char *evfmt_label(const char *metric)
{
	if (!metric)
		return "";
	for (size_t i = 0; i < COUNT(labels); i++)
		if (strcmp(metric, labels[i].metric) == 0)
			return labels[i].label;
	return metric;
}

enum evfmt_sense evfmt_sense_of(enum policy_direction dir)
{
	return dir == POLICY_HIGHER_IS_BETTER ? EVFMT_SENSE_HIGHER_BETTER : EVFMT_SENSE_LOWER_BETTER;
}

/* A figure to three significant digits, in plain decimals where that stays short. */
static void number(struct out *o, double v)
{
	double m = fabs(v);

	if (v == 0)
		add(o, "0");
	else if (m < 0.001)
		add(o, v < 0 ? "> -0.001" : "< 0.001");
	else if (m < 999.5)
		add(o, "%.3g", v);
	else if (m < 1e15)
		add(o, "%.0f", v);
	else
		add(o, "%.3g", v);
}

static void millis(struct out *o, double ms)
{
	if (ms >= 9999.5) {
		number(o, ms / 1000.0);
		add(o, " s");
	} else {
		number(o, ms);
		add(o, " ms");
	}
}

int evfmt_value(const char *metric, double v, char *buf, size_t len)
{
	return evfmt_value_unit(evfmt_unit_of(metric), v, buf, len);
}

int evfmt_value_unit(enum evfmt_unit unit, double v, char *buf, size_t len)
{
	static const char *const suffix[] = {
		[EVFMT_UNIT_PER_KREQ] = "/1k req",       [EVFMT_UNIT_MS_PER_KREQ] = " ms/1k req",
		[EVFMT_UNIT_CPU_PER_KREQ] = " CPU ms/1k req", [EVFMT_UNIT_PER_KCONN] = "/1k conn",
		[EVFMT_UNIT_REQ_PER_S] = " req/s",       [EVFMT_UNIT_PER_RUN] = " per run",
		[EVFMT_UNIT_PAGES] = " pages",           [EVFMT_UNIT_PER_S] = "/s",
	};
	struct out o;
	double pct;

	out_init(&o, buf, len);
	if (!isfinite(v)) {
		add(&o, "n/a");
		return out_end(&o);
	}
	switch (unit) {
	case EVFMT_UNIT_MS_COARSE:
		if (v < 1.0)
			add(&o, "< 1 ms");
		else
			millis(&o, v);
		break;
	case EVFMT_UNIT_MS:
		millis(&o, v);
		break;
	case EVFMT_UNIT_SHARE:
	case EVFMT_UNIT_PERCENT:
		/* Above 1000% (a wait ratio can pass 1) it is a factor, as changes are. */
		pct = unit == EVFMT_UNIT_SHARE ? 100.0 * v : v;
		if (pct > 1000.0) {
			number(&o, pct / 100.0);
			add(&o, "x");
		} else {
			number(&o, pct);
			add(&o, "%%");
		}
		break;
	case EVFMT_UNIT_NUMBER:
		number(&o, v);
		break;
	default:
		number(&o, v);
		add(&o, "%s", suffix[unit]);
		break;
	}
	return out_end(&o);
}

int evfmt_arms(const char *metric, double a, double b, char *buf, size_t len)
{
	char va[48], vb[48];
	struct out o;

	evfmt_value(metric, a, va, sizeof(va));
	evfmt_value(metric, b, vb, sizeof(vb));
	out_init(&o, buf, len);
	add(&o, "%s %s -> %s", evfmt_label(metric), va, vb);
	return out_end(&o);
}

/* X with one decimal, ".0" dropped: "4.2", "3". */
static void one_decimal(struct out *o, double x)
{
	char s[32];
	size_t n;

	snprintf(s, sizeof(s), "%.1f", x);
	n = strlen(s);
	if (n > 2 && strcmp(s + n - 2, ".0") == 0)
		s[n - 2] = '\0';
	add(o, "%s", s);
}

/* A percentage magnitude: one decimal under 10 ("4.2%", "3%"), whole above. */
static void percent(struct out *o, double pct)
{
	if (pct < 9.95)
		one_decimal(o, pct);
	else
		add(o, "%.0f", pct);
	add(o, "%%");
}

/* A factor F >= 1 to two significant digits: "5.2", "38", "120", "2000", "1.2e9". */
static void factor(struct out *o, double f)
{
	int e;
	double m;

	if (f < 9.95) {
		one_decimal(o, f);
		return;
	}
	e = (int)floor(log10(f));
	if (f < 1e6) {
		double p = pow(10.0, e - 1);

		add(o, "%.0f", round(f / p) * p);
		return;
	}
	m = round(f / pow(10.0, e) * 10.0) / 10.0;
	if (m >= 10.0) {
		m = 1.0;
		e++;
	}
	one_decimal(o, m);
	add(o, "e%d", e);
}

/* A rise R >= 1 or a fall R <= 1 as a magnitude in the chosen notation (no sign, no word). */
static void magnitude(struct out *o, double r, bool rise, bool factors)
{
	if (rise) {
		if (factors) {
			factor(o, r);
			add(o, "x");
		} else {
			percent(o, 100.0 * (r - 1.0));
		}
	} else if (factors) {
		add(o, "1/");
		factor(o, 1.0 / r);
	} else {
		percent(o, 100.0 * (1.0 - r));
	}
}

/* A bound of an interval across no change: signed against A, a factor beyond 11x. */
static void signed_bound(struct out *o, double r)
{
	if (fabs(r - 1.0) < UNCHANGED) {
		add(o, "0%%");
	} else if (r >= 1.0) {
		if (r > FACTOR_MAX) {
			magnitude(o, r, true, true);
		} else {
			add(o, "+");
			magnitude(o, r, true, false);
		}
	} else if (1.0 / r > FACTOR_MAX) {
		magnitude(o, r, false, true);
	} else {
		add(o, "-");
		magnitude(o, r, false, false);
	}
}

static double spread(double r)
{
	return r >= 1.0 ? r : 1.0 / r;
}

static bool ratio_ok(double r)
{
	return isfinite(r) && r > 0.0;
}

int evfmt_change(double ratio, double lo, double hi, enum evfmt_sense sense, char *buf, size_t len)
{
	bool interval = !(isnan(lo) && isnan(hi)), same, factors, above, below;
	bool rise = ratio > 1.0, unchanged = fabs(ratio - 1.0) < UNCHANGED;
	struct out o;

	out_init(&o, buf, len);
	if (!ratio_ok(ratio) || (interval && !(ratio_ok(lo) && ratio_ok(hi))))
		return -EDOM;
	if (interval && lo > hi)
		return -EINVAL;
	same = interval && !unchanged && (rise ? lo >= 1.0 : hi <= 1.0);
	factors = spread(ratio) > FACTOR_MAX || (same && (spread(lo) > FACTOR_MAX || spread(hi) > FACTOR_MAX));
	if (unchanged) {
		add(&o, "unchanged");
	} else {
		add(&o, rise ? "rose " : factors ? "fell to " : "fell ");
		magnitude(&o, ratio, rise, factors);
	}
	if (same) {
		add(&o, " [");
		magnitude(&o, rise ? lo : hi, rise, factors);
		add(&o, ", ");
		magnitude(&o, rise ? hi : lo, rise, factors);
		add(&o, "]");
	} else if (interval) {
		add(&o, " [");
		signed_bound(&o, lo);
		add(&o, ", ");
		signed_bound(&o, hi);
		add(&o, "]");
	}
	above = interval ? lo > 1.0 : rise && !unchanged;
	below = interval ? hi < 1.0 : !rise && !unchanged;
	if (sense != EVFMT_SENSE_NONE && (above || below))
		add(&o, (above == (sense == EVFMT_SENSE_HIGHER_BETTER)) ? " (better)" : " (worse)");
	return out_end(&o);
}

int evfmt_objective_change(enum policy_direction dir, double mean_d, double lower_d, double upper_d, char *buf,
			   size_t len)
{
	/* d = ln(B/A) when higher is better and ln(A/B) when lower is: B/A = exp(+-d), and for lower-is-better the
	 * lower bound of d is the upper bound of B/A. */
	double s = dir == POLICY_HIGHER_IS_BETTER ? 1.0 : -1.0;
	double lo = exp(s * (s > 0 ? lower_d : upper_d)), hi = exp(s * (s > 0 ? upper_d : lower_d));

	if (len)
		buf[0] = '\0';
	if (!isfinite(mean_d))
		return -EDOM;
	return evfmt_change(exp(s * mean_d), lo, hi, evfmt_sense_of(dir), buf, len);
}

int evfmt_metric_change(const char *metric, enum policy_direction dir, double mean_d, double lower_d, double upper_d,
			char *buf, size_t len)
{
	char change[EVFMT_TEXT_MAX];
	struct out o;
	int rc = evfmt_objective_change(dir, mean_d, lower_d, upper_d, change, sizeof(change));

	out_init(&o, buf, len);
	if (rc == -EDOM || rc == -EINVAL)
		return rc;
	add(&o, "%s %s", evfmt_label(metric), change);
	return rc < 0 ? rc : out_end(&o);
}

int evfmt_summary(const char *metric, enum policy_direction dir, double a, double b, double mean_d, double lower_d,
		  double upper_d, char *buf, size_t len)
{
	char arms[EVFMT_TEXT_MAX], change[EVFMT_TEXT_MAX];
	struct out o;
	int rc;

	evfmt_arms(metric, a, b, arms, sizeof(arms));
	out_init(&o, buf, len);
	add(&o, "%s", arms);
	rc = a == 0 || b == 0 ? -EDOM : evfmt_objective_change(dir, mean_d, lower_d, upper_d, change, sizeof(change));
	if (rc == 0) {
		add(&o, ", %s", change);
	} else if (isfinite(a) && isfinite(b) && a != b) {
		/* A zero side: the values say it all, the word says which way that is. */
		add(&o, (b > a) == (dir == POLICY_HIGHER_IS_BETTER) ? " (better)" : " (worse)");
	}
	return out_end(&o);
}

int evfmt_uncorrect(const char *metric, double judged, double requests, double *value)
{
	enum evfmt_unit unit = evfmt_unit_of(metric);
	enum block_kind kind;
	double den, half;
	bool count;

	*value = judged;
	if (!metric || block_metric_kind(metric, &kind, &count) < 0 || !count || !(requests > 0) || !isfinite(judged))
		return -ENOENT;
	/* The counts whose block value is divided by http.requests (per 1000, or per request for http.*_rate). */
	if (unit == EVFMT_UNIT_PER_KREQ)
		den = requests * 1e-3;
	else if (unit == EVFMT_UNIT_SHARE && starts(metric, "http."))
		den = requests;
	else
		return -ENOENT;
	half = 0.5 / den;
	/* What is left of a zero count is rounding: below a millionth of the half event it is 0. */
	*value = judged - half < half * 1e-6 ? 0.0 : judged - half;
	return 0;
}
