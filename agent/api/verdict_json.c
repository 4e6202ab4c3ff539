/*
 * verdict_json: the judge's evidence and calibration as JSON. See verdict_json.h.
 */
#include "build-config.h"

#include "api/verdict_json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/evfmt.h"
#include "proto.h"

/* The journal's figures have always been "%.6g": the value is that text read back, so that the API and the
 * events show the same number as the journal, and one that reads as an integer stays an integer. */
static json_t *num(double x)
{
	char s[32];

	if (!isfinite(x))
		return json_null();
	snprintf(s, sizeof(s), "%.6g", x);
	if (!strpbrk(s, ".e"))
		return json_integer(strtoll(s, NULL, 10));
	return json_real(strtod(s, NULL));
}

/* jansson refuses a string that is not UTF-8; a byte above ASCII is shown as the code point of its value, so any
 * reason or metric name renders (these are ASCII in practice). */
static json_t *str(const char *s)
{
	char out[2 * JUDGE_REASON_MAX];
	size_t n = 0;

	for (; *s && n + 3 <= sizeof(out); s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x80) {
			out[n++] = (char)c;
		} else {
			out[n++] = (char)(0xc0 | c >> 6);
			out[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	out[n] = '\0';
	return json_string(out);
}

static void put(json_t *o, const char *key, json_t *v)
{
	json_object_set_new(o, key, v);
}

/* Text of evfmt into a JSON string: "" where evfmt has nothing to say (-EDOM), a cut line as it was cut. */
static json_t *text(int rc, const char *buf)
{
	return str(rc == -EDOM || rc == -EINVAL ? "" : buf);
}

/* The readable keys, the same for the objective and each guardrail. */
static void readable(json_t *o, const char *metric, const char *a, const char *b, json_t *change, json_t *line)
{
	put(o, API_K_LABEL, str(evfmt_label(metric)));
	put(o, API_K_ARM_A, str(a));
	put(o, API_K_ARM_B, str(b));
	put(o, API_K_CHANGE_TEXT, change);
	put(o, API_K_SUMMARY, line);
}

/* The readable fields of a guardrail: a binomial one's arms are its pooled events over their exposure (the
 * block value's own unit), a non-inferiority one has only its log ratios, so no arms. Every key is there, "" for
 * what is not known. */
static void guard_text(json_t *o, const struct judge_guard_ev *ge)
{
	char a[EVFMT_TEXT_MAX] = "", b[EVFMT_TEXT_MAX] = "", change[EVFMT_TEXT_MAX] = "", line[EVFMT_TEXT_MAX] = "";
	int rc_change = -EDOM, rc_line = -EDOM;
	double ra = NAN, rb = NAN;

	if (ge->available && ge->test == JUDGE_TEST_BINOMIAL && ge->exposure_a > 0 && ge->exposure_b > 0) {
		double d;

		ra = ge->events_a / ge->exposure_a;
		rb = ge->events_b / ge->exposure_b;
		d = (ge->dir == POLICY_HIGHER_IS_BETTER ? 1.0 : -1.0) * log(rb / ra);
		evfmt_value(ge->metric, ra, a, sizeof(a));
		evfmt_value(ge->metric, rb, b, sizeof(b));
		if (ra > 0 && rb > 0)
			rc_change = evfmt_objective_change(ge->dir, d, NAN, NAN, change, sizeof(change));
		rc_line = evfmt_summary(ge->metric, ge->dir, ra, rb, d, NAN, NAN, line, sizeof(line));
	} else if (ge->available && ge->test == JUDGE_TEST_NONINF) {
		rc_change = evfmt_objective_change(ge->dir, ge->mean, ge->lower, ge->upper, change, sizeof(change));
		rc_line = evfmt_metric_change(ge->metric, ge->dir, ge->mean, ge->lower, ge->upper, line, sizeof(line));
	}
	readable(o, ge->metric, a, b, text(rc_change, change), text(rc_line, line));
}

static json_t *guard_json(const struct judge_guard_ev *ge)
{
	json_t *o = json_object();
	bool binomial = ge->test == JUDGE_TEST_BINOMIAL;

	put(o, API_K_METRIC, str(ge->metric));
	put(o, API_K_TEST, json_string(binomial ? API_TEST_BINOMIAL : API_TEST_NONINF));
	put(o, API_K_AVAILABLE, json_boolean(ge->available));
	put(o, API_K_FAILED, json_boolean(ge->failed));
	put(o, API_K_FAILED_PAIR, json_integer(ge->failed_pair));
	put(o, API_K_IMPLIED, json_boolean(ge->implied));
	put(o, API_K_LEDGER, json_boolean(ge->ledger));
	put(o, API_K_INTERNAL, json_boolean(ge->internal));
	put(o, API_K_OUTWEIGHED, json_boolean(ge->outweighed));
	/* Only where the clients' time ledger weighed a latency (judge.c). */
	if (ge->latency && isfinite(ge->saved_ms) && isfinite(ge->cost_ms)) {
		put(o, API_K_SAVED_MS, num(ge->saved_ms));
		put(o, API_K_COST_MS, num(ge->cost_ms));
	}
	if (binomial) {
		put(o, API_K_EVENTS_A, num(ge->events_a));
		put(o, API_K_EVENTS_B, num(ge->events_b));
		put(o, API_K_P, num(ge->p));
	} else {
		put(o, API_K_MEAN, num(ge->mean));
		put(o, API_K_LOWER, num(ge->lower));
		put(o, API_K_UPPER, num(ge->upper));
		put(o, API_K_SHOWN, json_boolean(ge->noninf_shown));
	}
	guard_text(o, ge);
	return o;
}

static json_t *pair_json(const struct judge_pair_ev *pe, size_t nguard)
{
	json_t *o = json_object();

	put(o, API_K_ORDER, json_string(pe->b_first ? API_ORDER_BA : API_ORDER_AB));
	put(o, API_K_VOID, json_boolean(pe->is_void));
	put(o, API_K_A, num(pe->a));
	put(o, API_K_B, num(pe->b));
	put(o, API_K_D, num(pe->d));
	/* Only when it happened: most pairs have enough requests for p99. */
	if (pe->p95)
		put(o, API_K_P95, json_true());
	if (pe->outage == 'a' || pe->outage == 'b')
		put(o, API_K_OUTAGE, json_string(pe->outage == 'a' ? "a" : "b"));
	/* Only when the pool's peers were its control: d is then the host's less theirs. */
	if (pe->control_peers) {
		put(o, API_K_CONTROL, num(pe->control));
		put(o, API_K_CONTROL_PEERS, json_integer(pe->control_peers));
	}
	put(o, API_K_REQ_A, num(pe->requests_a));
	put(o, API_K_REQ_B, num(pe->requests_b));
	if (nguard) {
		json_t *g = json_array();

		for (size_t i = 0; i < nguard; i++)
			json_array_append_new(g, num(pe->g[i]));
		put(o, API_K_G, g);
	}
	return o;
}

/* Each arm's figure over the valid pairs: the mean of the block values, a count's half event taken back. An
 * outage pair (judge.h: a block that served nothing) has no figure of its blocks; OUT_A and OUT_B count them. */
static void arm_means(const struct judge_evidence *ev, double *a, double *b, unsigned *out_a, unsigned *out_b)
{
	double sa = 0, sb = 0;
	unsigned n = 0;

	*out_a = *out_b = 0;
	for (unsigned i = 0; i < ev->npairs && i < JUDGE_PAIRS_MAX; i++) {
		const struct judge_pair_ev *pe = &ev->pair[i];
		double va, vb;

		*out_a += pe->outage == 'a';
		*out_b += pe->outage == 'b';
		if (pe->is_void || pe->outage || !isfinite(pe->a) || !isfinite(pe->b))
			continue;
		/* Per second (no requests counted), the half event stays in: its share is unknown here. */
		if (ev->per_second) {
			va = pe->a;
			vb = pe->b;
		} else {
			evfmt_uncorrect(ev->objective, pe->a, pe->requests_a, &va);
			evfmt_uncorrect(ev->objective, pe->b, pe->requests_b, &vb);
		}
		sa += va;
		sb += vb;
		n++;
	}
	*a = n ? sa / n : NAN;
	*b = n ? sb / n : NAN;
}

/* "outage in N pair(s)" after an arm's figure, when that arm served nothing in some pairs. */
static void outage_note(char *buf, size_t len, unsigned n)
{
	size_t k = strlen(buf);

	if (n && k < len)
		snprintf(buf + k, len - k, "%soutage in %u pair%s", k ? ", " : "", n, n == 1 ? "" : "s");
}

/* The objective's readable fields; empty before the first valid pair (nothing is known of the arms yet). */
static void evidence_text(json_t *o, const struct judge_evidence *ev)
{
	char a[EVFMT_TEXT_MAX] = "", b[EVFMT_TEXT_MAX] = "", change[EVFMT_TEXT_MAX] = "", line[2 * EVFMT_TEXT_MAX] = "";
	int rc_change = -EDOM, rc_line = -EDOM;
	unsigned out_a, out_b;
	double ma, mb;

	arm_means(ev, &ma, &mb, &out_a, &out_b);
	if (ev->objective[0] && isfinite(ma) && isfinite(mb)) {
		evfmt_value_unit(ev->per_second ? EVFMT_UNIT_PER_S : evfmt_unit_of(ev->objective), ma, a, sizeof(a));
		evfmt_value_unit(ev->per_second ? EVFMT_UNIT_PER_S : evfmt_unit_of(ev->objective), mb, b, sizeof(b));
		/* With a zero arm the judge's ratio is its half-event correction's: the values say what happened. */
		if (ma != 0 && mb != 0)
			rc_change = evfmt_objective_change(ev->dir, ev->mean, ev->lower, ev->upper, change,
							   sizeof(change));
		if (ev->per_second) {
			/* The arms in their own unit (per second), then the change as evfmt_summary says it (a line cut
			 * short is still readable). */
			int k = snprintf(line, sizeof(line), "%s %s -> %s%s%s", evfmt_label(ev->objective), a, b,
					 rc_change == 0 ? ", " : "", rc_change == 0 ? change : "");

			rc_line = k >= 0 && (size_t)k < sizeof(line) ? 0 : -ENOSPC;
		} else {
			rc_line = evfmt_summary(ev->objective, ev->dir, ma, mb, ev->mean, ev->lower, ev->upper, line,
						sizeof(line));
		}
	} else if (ev->objective[0] && (out_a || out_b)) {
		rc_change = evfmt_objective_change(ev->dir, ev->mean, ev->lower, ev->upper, change, sizeof(change));
		snprintf(line, sizeof(line), "%s", evfmt_label(ev->objective));
	}
	if (out_a || out_b) {
		size_t k = strlen(line);

		/* The judge counts an outage as the worst block: say so, the figures do not show it. */
		snprintf(line + k, sizeof(line) - k, "%s%s%s%s", isfinite(ma) ? "; " : ": ",
			 out_a ? "outage in A" : "", out_a && out_b ? " and " : "", out_b ? "outage in B" : "");
		rc_line = 0;
	}
	outage_note(a, sizeof(a), out_a);
	outage_note(b, sizeof(b), out_b);
	readable(o, ev->objective, a, b, text(rc_change, change), text(rc_line, line));
}

json_t *verdict_json_evidence(const struct judge_evidence *ev)
{
	json_t *o = json_object(), *sign = json_object(), *halves = json_array(), *trips = json_object();
	json_t *guards = json_array(), *pairs = json_array();
	size_t nguard = ev->nguard < POLICY_GUARDRAILS_MAX ? ev->nguard : POLICY_GUARDRAILS_MAX;

	if (!o || !sign || !halves || !trips || !guards || !pairs) {
		json_decref(o);
		json_decref(sign);
		json_decref(halves);
		json_decref(trips);
		json_decref(guards);
		json_decref(pairs);
		return NULL;
	}
	put(o, API_K_VERDICT, json_string(judge_verdict_name(ev->verdict)));
	put(o, API_K_REASON, str(ev->reason));
	put(o, API_K_OBJECTIVE, str(ev->objective));
	put(o, API_K_BETTER, json_string(ev->dir == POLICY_HIGHER_IS_BETTER ? API_BETTER_HIGHER : API_BETTER_LOWER));
	evidence_text(o, ev);
	put(o, API_K_DELTA, num(ev->delta));
	put(o, API_K_ALPHA, num(ev->alpha));
	put(o, API_K_PLANNED, json_integer(ev->planned));
	put(o, API_K_PAIRS, json_integer(ev->npairs));
	put(o, API_K_VALID, json_integer(ev->nvalid));
	put(o, API_K_VOID, json_integer(ev->nvoid));
	put(o, API_K_MEAN, num(ev->mean));
	put(o, API_K_SD, num(ev->sd));
	put(o, API_K_T, num(ev->t_crit));
	put(o, API_K_LOWER, num(ev->lower));
	put(o, API_K_UPPER, num(ev->upper));
	put(o, API_K_EFFECT, num(ev->effect));
	put(o, API_K_EFFECT_LO, num(ev->effect_lo));
	put(o, API_K_EFFECT_HI, num(ev->effect_hi));
	put(sign, API_K_BETTER, json_integer(ev->sign_pos));
	put(sign, API_K_WORSE, json_integer(ev->sign_neg));
	put(sign, API_K_P, num(ev->sign_p));
	put(o, API_K_SIGN, sign);
	json_array_append_new(halves, num(ev->half1));
	json_array_append_new(halves, num(ev->half2));
	put(o, API_K_HALVES, halves);
	put(trips, API_K_TRIP_OVERFLOW, json_boolean(ev->trip_overflow));
	put(trips, API_K_TRIP_UNHANDLED, json_boolean(ev->trip_unhandled));
	put(trips, API_K_TRIP_ERRORS, json_boolean(ev->trip_errors));
	put(o, API_K_TRIPS, trips);
	put(o, API_K_EARLY, json_boolean(ev->early));
	put(o, API_K_OUTCOME_KEEP, json_boolean(ev->outcome_keep));
	put(o, API_K_PER_SECOND, json_boolean(ev->per_second));
	put(o, API_K_BAYES_FACTOR, num(exp(ev->log_bf)));
	put(o, API_K_NOISE_SD, num(ev->noise_sd));
	put(o, API_K_NOISE_PAIRS, json_integer(ev->noise_n));
	put(o, API_K_SEQ_EFFECT, num(ev->seq_effect));
	put(o, API_K_PRIOR_EFFECT, num(ev->prior_effect));
	put(o, API_K_PRIOR_PAIRS, json_integer(ev->prior_pairs));
	put(o, API_K_CONTROLLED, json_integer(ev->ncontrolled));
	put(o, API_K_A_EVENTS, num(ev->a_events));
	put(o, API_K_A_SECONDS, num(ev->a_seconds));
	for (size_t g = 0; g < nguard; g++)
		json_array_append_new(guards, guard_json(&ev->guard[g]));
	put(o, API_K_GUARDRAILS, guards);
	for (unsigned i = 0; i < ev->npairs && i < JUDGE_PAIRS_MAX; i++)
		json_array_append_new(pairs, pair_json(&ev->pair[i], nguard));
	put(o, API_K_PAIRS_DETAIL, pairs);
	return o;
}

json_t *verdict_json_calibration(const struct judge_calibration *cal)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	put(o, API_K_REFUSE, json_boolean(cal->refuse));
	put(o, API_K_REASON, str(cal->reason));
	put(o, API_K_AA_PAIRS, json_integer(cal->n));
	put(o, API_K_MEAN, num(cal->mean));
	put(o, API_K_SD, num(cal->sd));
	put(o, API_K_PAIRS, json_integer(cal->pairs));
	put(o, API_K_FLOOR, num(cal->floor));
	put(o, API_K_NEEDED, num(cal->needed));
	return o;
}

int verdict_json_text(const json_t *o, char *buf, size_t len)
{
	/* Six digits give back the figures num() kept; ASCII only, as the journal's text has always been. */
	size_t n;

	if (!buf || len == 0)
		return -ENOSPC;
	buf[0] = '\0';
	if (!o)
		return -ENOMEM;
	n = json_dumpb(o, buf, len - 1, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6));
	if (n == 0)
		return -ENOMEM;
	if (n > len - 1) {
		buf[0] = '\0';
		return -ENOSPC;
	}
	buf[n] = '\0';
	return 0;
}

int verdict_json_calibration_row(const char *metric, int64_t at_ms, const struct judge_calibration *cal, char *buf,
				 size_t len)
{
	json_t *o = json_pack("{s:o, s:I, s:o}", API_K_METRIC, str(metric), API_K_AT_MS, (json_int_t)at_ms,
			      API_K_CALIBRATION, verdict_json_calibration(cal));
	int r = verdict_json_text(o, buf, len);

	json_decref(o);
	return r;
}

int verdict_json_calibration_read(const char *detail, char *metric, size_t metriclen, int64_t *at_ms,
				  struct judge_calibration *cal)
{
	json_t *o = json_loads(detail, 0, NULL), *c = json_object_get(o, API_K_CALIBRATION);
	const char *m = json_string_value(json_object_get(o, API_K_METRIC));
	json_t *at = json_object_get(o, API_K_AT_MS);

	memset(cal, 0, sizeof(*cal));
	if (!m || !json_is_object(c) || !json_is_integer(at)) {
		json_decref(o);
		return -EINVAL;
	}
	snprintf(metric, metriclen, "%s", m);
	*at_ms = json_integer_value(at);
	cal->refuse = json_is_true(json_object_get(c, API_K_REFUSE));
	snprintf(cal->reason, sizeof(cal->reason), "%s", json_string_value(json_object_get(c, API_K_REASON)) ?: "");
	cal->n = (unsigned)json_integer_value(json_object_get(c, API_K_AA_PAIRS));
	cal->mean = json_number_value(json_object_get(c, API_K_MEAN));
	cal->sd = json_number_value(json_object_get(c, API_K_SD));
	cal->pairs = (unsigned)json_integer_value(json_object_get(c, API_K_PAIRS));
	cal->floor = json_number_value(json_object_get(c, API_K_FLOOR));
	cal->needed = json_number_value(json_object_get(c, API_K_NEEDED));
	json_decref(o);
	return 0;
}
