/*
 * test_verdict_json: the judge's evidence and calibration on the wire (agent/api/verdict_json.c).
 *
 * The reference is the text the judge used to print itself (core/judge.c's own JSON writer, removed when core
 * stopped writing JSON): every key of that text read back by jansson, which is what GET /v1/trials/current and
 * the verdict event served, must be there with the same value; the only keys added since are the readable ones
 * (core/evfmt.h: label, arm_a, arm_b, change_text, summary) and a guardrail's upper bound. The journal's text may
 * differ from the old one only there and where jansson prints the same value its own way (the exponent, "-0",
 * "\t", the case of \u escapes). The readable keys are pinned on realistic trials.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/verdict_json.h"

/* An evidence with every shape the wire has: a binomial and a non-inferiority guardrail, a void pair, a p95 pair,
 * numbers that print as integers, with exponents, negative, tiny and not finite. */
static void fixture(struct judge_evidence *ev, struct judge_calibration *cal)
{
	memset(ev, 0, sizeof(*ev));
	ev->verdict = VERDICT_KEEP;
	snprintf(ev->reason, sizeof(ev->reason), "cpu \"busy\" fell\t20%%\\ \x01 caf\xc3\xa9");
	snprintf(ev->objective, sizeof(ev->objective), "cpu.busy_per_kreq");
	ev->dir = POLICY_LOWER_IS_BETTER;
	ev->delta = 0.05;
	ev->alpha = 0.05;
	ev->planned = 8;
	ev->npairs = 3;
	ev->nvalid = 2;
	ev->nvoid = 1;
	ev->mean = 0.2231435513142097;
	ev->sd = 1.5e-05;
	ev->t_crit = 6.313751514675041;
	ev->lower = -0.0;
	ev->upper = 1234567.0;
	ev->effect = 0.25;
	ev->effect_lo = 1e-300;
	ev->effect_hi = 3.0;
	ev->sign_pos = 2;
	ev->sign_neg = 0;
	ev->sign_p = 0.25;
	ev->half1 = 0.1;
	ev->half2 = NAN;
	ev->trip_overflow = false;
	ev->trip_unhandled = true;
	ev->trip_errors = false;
	ev->nguard = 2;
	snprintf(ev->guard[0].metric, sizeof(ev->guard[0].metric), "http.5xx_rate");
	ev->guard[0].test = JUDGE_TEST_BINOMIAL;
	ev->guard[0].available = true;
	ev->guard[0].events_a = 12;
	ev->guard[0].events_b = 1e6;
	ev->guard[0].exposure_a = 4000;
	ev->guard[0].exposure_b = 4100;
	ev->guard[0].p = 0.000123456789;
	snprintf(ev->guard[1].metric, sizeof(ev->guard[1].metric), "http.p99_ms");
	ev->guard[1].test = JUDGE_TEST_NONINF;
	ev->guard[1].available = true;
	ev->guard[1].failed = true;
	ev->guard[1].failed_pair = 2;
	ev->guard[1].mean = -0.5;
	ev->guard[1].lower = -123456.7;
	ev->guard[1].upper = 0.03;
	ev->guard[1].noninf_shown = false;
	ev->pair[0] = (struct judge_pair_ev){.b_first = false, .a = 100, .b = 80, .d = 0.2231435513142097,
					     .requests_a = 4000, .requests_b = 4100, .g = {0.5, 0.01}};
	ev->pair[1] = (struct judge_pair_ev){.b_first = true, .is_void = true, .a = NAN, .b = INFINITY, .d = NAN,
					     .requests_a = 0, .requests_b = 3, .g = {NAN, 1}};
	ev->pair[2] = (struct judge_pair_ev){.b_first = true, .p95 = true, .a = 99.99999, .b = 1e-7, .d = -2.5e+20,
					     .requests_a = 999, .requests_b = 1000, .g = {-1, 2.000001}};

	memset(cal, 0, sizeof(*cal));
	cal->n = 8;
	cal->mean = -0.00123;
	cal->sd = 0.35;
	cal->pairs = 32;
	cal->floor = 0.1234567;
	cal->needed = 0.04879016416943205;
	cal->refuse = true;
	snprintf(cal->reason, sizeof(cal->reason), "noise floor too high: \"12%%\"");
}

/* core/judge.c's judge_evidence_json and judge_calibration_json on fixture(), before they were removed. */
static const char old_evidence[] =
	"{\"verdict\":\"keep\",\"reason\":\"cpu \\\"busy\\\" fell\\u000920%\\\\ \\u0001 caf\\u00c3\\u00a9\","
	"\"objective\":\"cpu.busy_per_kreq\",\"better\":\"lower\",\"delta\":0.05,\"alpha\":0.05,"
	"\"planned\":8,\"pairs\":3,\"valid\":2,\"void\":1,\"mean\":0.223144,\"sd\":1.5e-05,\"t\":6.31375,"
	"\"lower\":-0,\"upper\":1.23457e+06,\"effect\":0.25,\"effect_lo\":1e-300,\"effect_hi\":3,"
	"\"sign\":{\"better\":2,\"worse\":0,\"p\":0.25},\"halves\":[0.1,null],\"trips\":{\"overflow\":false,"
	"\"unhandled\":true,\"errors\":false},\"guardrails\":[{\"metric\":\"http.5xx_rate\","
	"\"test\":\"binomial\",\"available\":true,\"failed\":false,\"failed_pair\":0,\"events_a\":12,"
	"\"events_b\":1e+06,\"p\":0.000123457},{\"metric\":\"http.p99_ms\",\"test\":\"noninferiority\","
	"\"available\":true,\"failed\":true,\"failed_pair\":2,\"mean\":-0.5,\"lower\":-123457,"
	"\"shown\":false}],\"pairs_detail\":[{\"order\":\"AB\",\"void\":false,\"a\":100,\"b\":80,"
	"\"d\":0.223144,\"req_a\":4000,\"req_b\":4100,\"g\":[0.5,0.01]},{\"order\":\"BA\",\"void\":true,"
	"\"a\":null,\"b\":null,\"d\":null,\"req_a\":0,\"req_b\":3,\"g\":[null,1]},{\"order\":\"BA\","
	"\"void\":false,\"a\":100,\"b\":1e-07,\"d\":-2.5e+20,\"p95\":true,\"req_a\":999,\"req_b\":1000,"
	"\"g\":[-1,2]}]}";
static const char old_calibration[] =
	"{\"refuse\":true,\"reason\":\"noise floor too high: \\\"12%\\\"\",\"aa_pairs\":8,\"mean\":-0.00123,"
	"\"sd\":0.35,\"pairs\":32,\"floor\":0.123457,\"needed\":0.0487902}";

/* old_evidence as the journal keeps it now. */
static const char new_evidence[] =
	"{\"verdict\":\"keep\",\"reason\":\"cpu \\\"busy\\\" fell\\t20%\\\\ \\u0001 caf\\u00C3\\u00A9\",\"objective\""
	":\"cpu.busy_per_kreq\",\"better\":\"lower\",\"label\":\"busy CPU\",\"arm_a\":\"100 CPU ms/1k req\",\"arm_b\""
	":\"40 CPU ms/1k req\",\"change_text\":\"\",\"summary\":\"busy CPU 100 CPU ms/1k req -> 40 CPU ms/1k req (bet"
	"ter)\",\"delta\":0.05,\"alpha\":0.05,\"planned\":8,\"pairs\":3,\"valid\":2,\"void\":1,\"mean\":0.223144,\"sd"
	"\":1.5e-5,\"t\":6.31375,\"lower\":0,\"upper\":1.23457e6,\"effect\":0.25,\"effect_lo\":1e-300,\"effect_hi\":3"
	",\"sign\":{\"better\":2,\"worse\":0,\"p\":0.25},\"halves\":[0.1,null],\"trips\":{\"overflow\":false,\"unhand"
	"led\":true,\"errors\":false},\"early\":false,\"outcome_keep\":false,\"per_second\":false,\"bayes_factor\":1,\"noise_sd\":0,\"noise_pairs\":0,\"seq_effect\":0,\"prior_effect\":0,\"prior_pairs\":0,\"controlled\":0,\"a_events\":0,\"a_seconds\":0,"
	"\"guardrails\":[{\"metric\":\"http.5xx_rate\",\"test\":\"binomial\",\"available"
	"\":true,\"failed\":false,\"failed_pair\":0,\"implied\":false,\"ledger\":false,\"internal\":false,\"outweighed\":false,\"events_a\":12,\"events_b\":1e6,\"p\":0.000123457,\"label\":\"5x"
	"x share\",\"arm_a\":\"0.3%\",\"arm_b\":\"244x\",\"change_text\":\"rose 81000x (worse)\",\"summary\":\"5xx sh"
	"are 0.3% -> 244x, rose 81000x (worse)\"},{\"metric\":\"http.p99_ms\",\"test\":\"noninferiority\",\"available"
	"\":true,\"failed\":true,\"failed_pair\":2,\"implied\":false,\"ledger\":false,\"internal\":false,\"outweighed\":false,\"mean\":-0.5,\"lower\":-123457,\"upper\":0.03,\"shown\":false,\"l"
	"abel\":\"p99 latency\",\"arm_a\":\"\",\"arm_b\":\"\",\"change_text\":\"\",\"summary\":\"\"}],\"pairs_detail"
	"\":[{\"order\":\"AB\",\"void\":false,\"a\":100,\"b\":80,\"d\":0.223144,\"req_a\":4000,\"req_b\":4100,\"g\":["
	"0.5,0.01]},{\"order\":\"BA\",\"void\":true,\"a\":null,\"b\":null,\"d\":null,\"req_a\":0,\"req_b\":3,\"g\":[n"
	"ull,1]},{\"order\":\"BA\",\"void\":false,\"a\":100,\"b\":1e-7,\"d\":-2.5e20,\"p95\":true,\"req_a\":999,\"req"
	"_b\":1000,\"g\":[-1,2]}]}";

static void assert_same(json_t *got, const char *want_text)
{
	json_error_t jerr;
	json_t *want = json_loads(want_text, 0, &jerr);
	char *g, *w;

	if (!want)
		fail_msg("the reference does not parse: %s", jerr.text);
	assert_non_null(got);
	g = json_dumps(got, JSON_COMPACT);
	w = json_dumps(want, JSON_COMPACT);
	/* The API dumps with JSON_COMPACT: equal text there is the wire unchanged, integers and reals apart. */
	assert_string_equal(g, w);
	assert_true(json_equal(got, want));
	free(g);
	free(w);
	json_decref(want);
	json_decref(got);
}

/* Every key of WANT is in GOT with the same value (objects and arrays compared the same way, member by member);
 * what GOT has beside is one of the readable keys added since. */
static void assert_grown_from(json_t *got, json_t *want, const char *where)
{
	static const char *const added[] = {"label",	  "arm_a",	 "arm_b",	"change_text",
					    "summary",	  "upper",	 "early",	"bayes_factor",
					    "noise_sd",	  "noise_pairs", "a_events",	"a_seconds",
					    "outage",	  "implied",	 "internal",	"outweighed",
					    "outcome_keep", "per_second", "saved_ms",	"cost_ms",
					    "ledger", "seq_effect", "prior_effect", "prior_pairs",
					    "controlled", "control", "control_peers"};
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_object(want)) {
		if (!json_is_object(got))
			fail_msg("%s: not an object", where);
		json_object_foreach(want, key, v)
		{
			if (!json_object_get(got, key))
				fail_msg("%s: key %s is gone", where, key);
			assert_grown_from(json_object_get(got, key), v, key);
		}
		json_object_foreach(got, key, v)
		{
			bool known = json_object_get(want, key) != NULL;

			for (i = 0; !known && i < sizeof(added) / sizeof(added[0]); i++)
				known = strcmp(key, added[i]) == 0;
			if (!known)
				fail_msg("%s: key %s is new and not one of the readable keys", where, key);
		}
	} else if (json_is_array(want)) {
		if (!json_is_array(got) || json_array_size(got) != json_array_size(want))
			fail_msg("%s: not the same array", where);
		json_array_foreach(want, i, v)
			assert_grown_from(json_array_get(got, i), v, where);
	} else if (!json_equal(got, want) || json_typeof(got) != json_typeof(want)) {
		char *g = json_dumps(got, JSON_ENCODE_ANY), *w = json_dumps(want, JSON_ENCODE_ANY);

		fail_msg("%s: %s, was %s", where, g, w);
	}
}

static void test_evidence_as_before(void **state)
{
	struct judge_evidence *ev = malloc(sizeof(*ev));
	struct judge_calibration cal;
	json_t *got, *want;

	(void)state;
	assert_non_null(ev);
	fixture(ev, &cal);
	got = verdict_json_evidence(ev);
	want = json_loads(old_evidence, 0, NULL);
	assert_non_null(got);
	assert_non_null(want);
	assert_grown_from(got, want, "evidence");
	json_decref(got);
	json_decref(want);
	assert_same(verdict_json_calibration(&cal), old_calibration);
	free(ev);
}

static void test_text(void **state)
{
	struct judge_evidence *ev = malloc(sizeof(*ev));
	struct judge_calibration cal;
	json_t *o;
	char buf[4096], tiny[40];

	(void)state;
	assert_non_null(ev);
	fixture(ev, &cal);
	o = verdict_json_evidence(ev);
	assert_int_equal(verdict_json_text(o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, new_evidence);
	/* Read back, the journal's text is the object the API serves. */
	{
		json_t *back = json_loads(buf, 0, NULL), *served = verdict_json_evidence(ev);

		assert_true(json_equal(back, served));
		json_decref(back);
		json_decref(served);
	}
	assert_int_equal(verdict_json_text(o, tiny, sizeof(tiny)), -ENOSPC);
	assert_string_equal(tiny, "");
	/* Exactly the length needed fits: one byte is the NUL. */
	assert_int_equal(verdict_json_text(o, buf, strlen(new_evidence) + 1), 0);
	assert_int_equal(verdict_json_text(o, buf, strlen(new_evidence)), -ENOSPC);
	json_decref(o);

	o = verdict_json_calibration(&cal);
	assert_int_equal(verdict_json_text(o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, old_calibration);
	json_decref(o);
	assert_int_equal(verdict_json_text(NULL, buf, sizeof(buf)), -ENOMEM);
	free(ev);
}

/* A calibration's audit row reads back as it was written; anything else is refused. */
static void test_calibration_row(void **state)
{
	struct judge_evidence *ev = malloc(sizeof(*ev));
	struct judge_calibration cal, back;
	char buf[1024], metric[POLICY_METRIC_MAX];
	int64_t at_ms = 0;

	(void)state;
	assert_non_null(ev);
	fixture(ev, &cal);
	assert_int_equal(verdict_json_calibration_row("http.p99_ms", 1796047167279, &cal, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "{\"metric\":\"http.p99_ms\",\"at_ms\":1796047167279,\"calibration\":"
				 "{\"refuse\":true,\"reason\":\"noise floor too high: \\\"12%\\\"\",\"aa_pairs\":8,"
				 "\"mean\":-0.00123,\"sd\":0.35,\"pairs\":32,\"floor\":0.123457,\"needed\":0.0487902}}");
	assert_int_equal(verdict_json_calibration_read(buf, metric, sizeof(metric), &at_ms, &back), 0);
	assert_string_equal(metric, "http.p99_ms");
	assert_int_equal(at_ms, 1796047167279);
	assert_true(back.refuse);
	assert_string_equal(back.reason, cal.reason);
	assert_int_equal(back.n, 8);
	assert_int_equal(back.pairs, 32);
	assert_true(back.mean == -0.00123 && back.sd == 0.35 && back.floor == 0.123457 && back.needed == 0.0487902);
	assert_int_equal(verdict_json_calibration_read("{\"metric\":\"m\",\"at_ms\":1.5,\"calibration\":{}}", metric,
							sizeof(metric), &at_ms, &back),
			 -EINVAL);
	assert_int_equal(verdict_json_calibration_read("not json", metric, sizeof(metric), &at_ms, &back), -EINVAL);
	assert_int_equal(verdict_json_calibration_read("", metric, sizeof(metric), &at_ms, &back), -EINVAL);
	free(ev);
}

/* Before any trial the evidence is all zeros: "running", empty lists, figures 0 (docs/api.md shows it). */
static void test_empty(void **state)
{
	struct judge_evidence *ev = calloc(1, sizeof(*ev));
	json_t *o;
	char buf[1024];

	(void)state;
	assert_non_null(ev);
	o = verdict_json_evidence(ev);
	assert_int_equal(verdict_json_text(o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "{\"verdict\":\"running\",\"reason\":\"\",\"objective\":\"\",\"better\":\"lower\","
				 "\"label\":\"\",\"arm_a\":\"\",\"arm_b\":\"\",\"change_text\":\"\",\"summary\":\"\","
				 "\"delta\":0,\"alpha\":0,\"planned\":0,\"pairs\":0,\"valid\":0,\"void\":0,\"mean\":0,"
				 "\"sd\":0,\"t\":0,\"lower\":0,\"upper\":0,\"effect\":0,\"effect_lo\":0,\"effect_hi\":0,"
				 "\"sign\":{\"better\":0,\"worse\":0,\"p\":0},\"halves\":[0,0],\"trips\":{\"overflow\":"
				 "false,\"unhandled\":false,\"errors\":false},\"early\":false,\"outcome_keep\":false,\"per_second\":false,\"bayes_factor\":1,\"noise_sd\":0,\"noise_pairs\":0,\"seq_effect\":0,\"prior_effect\":0,\"prior_pairs\":0,\"controlled\":0,\"a_events\":0,\"a_seconds\":0,"
				 "\"guardrails\":[],\"pairs_detail\":[]}");
	json_decref(o);
	free(ev);
}

/* The objective of a trial of NPAIRS pairs, every pair (A, B) with REQ requests in each block. */
static void trial(struct judge_evidence *ev, const char *objective, enum policy_direction dir, unsigned npairs,
		  double a, double b, double req, double mean, double lower, double upper)
{
	memset(ev, 0, sizeof(*ev));
	ev->verdict = VERDICT_KEEP;
	snprintf(ev->objective, sizeof(ev->objective), "%s", objective);
	ev->dir = dir;
	ev->planned = ev->npairs = ev->nvalid = npairs;
	ev->mean = mean;
	ev->lower = lower;
	ev->upper = upper;
	for (unsigned i = 0; i < npairs; i++)
		ev->pair[i] = (struct judge_pair_ev){.b_first = i % 2, .a = a, .b = b, .requests_a = req,
						     .requests_b = req};
}

static const char *field(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	if (!v)
		fail_msg("no string %s", key);
	return v;
}

/* What people read: each arm in the metric's unit, the change with its interval, one line; for a listen-overflow
 * trial that ended the overflows (a zero arm: the values, not a ratio), and for a latency trial. */
static void test_readable(void **state)
{
	struct judge_evidence *ev = malloc(sizeof(*ev));
	json_t *o, *g;

	(void)state;
	assert_non_null(ev);
	/* 4860 overflows in each A block of 10000 requests, none in B: the judge saw (n + 0.5) / 10 per 1k */
	trial(ev, "tcp.listen_overflows", POLICY_LOWER_IS_BETTER, 8, 4860.5 / 10, 0.5 / 10, 10000, log(9721.0), 9.0,
	      9.3);
	ev->nguard = 2;
	snprintf(ev->guard[0].metric, sizeof(ev->guard[0].metric), "http.p99_ms");
	ev->guard[0].test = JUDGE_TEST_NONINF;
	ev->guard[0].available = true;
	ev->guard[0].mean = -log(1.03);
	ev->guard[0].lower = -log(1.07);
	ev->guard[0].upper = -log(0.99);
	snprintf(ev->guard[1].metric, sizeof(ev->guard[1].metric), "http.5xx_rate");
	ev->guard[1].test = JUDGE_TEST_BINOMIAL;
	ev->guard[1].available = true;
	ev->guard[1].events_a = 3;
	ev->guard[1].events_b = 5;
	ev->guard[1].exposure_a = ev->guard[1].exposure_b = 80000;
	o = verdict_json_evidence(ev);
	assert_string_equal(field(o, "label"), "listen overflows");
	assert_string_equal(field(o, "arm_a"), "486/1k req");
	assert_string_equal(field(o, "arm_b"), "0/1k req");
	assert_string_equal(field(o, "change_text"), "");
	assert_string_equal(field(o, "summary"), "listen overflows 486/1k req -> 0/1k req (better)");
	g = json_array_get(json_object_get(o, "guardrails"), 0);
	assert_string_equal(field(g, "label"), "p99 latency");
	assert_string_equal(field(g, "arm_a"), "");
	assert_string_equal(field(g, "change_text"), "rose 3% [-1%, +7%]");
	assert_string_equal(field(g, "summary"), "p99 latency rose 3% [-1%, +7%]");
	g = json_array_get(json_object_get(o, "guardrails"), 1);
	assert_string_equal(field(g, "arm_a"), "0.00375%");
	assert_string_equal(field(g, "arm_b"), "0.00625%");
	assert_string_equal(field(g, "change_text"), "rose 67% (worse)");
	assert_string_equal(field(g, "summary"), "5xx share 0.00375% -> 0.00625%, rose 67% (worse)");
	json_decref(o);

	/* p99 from 40 ms to 12 ms: d = ln(A/B) since lower is better */
	trial(ev, "http.p99_ms", POLICY_LOWER_IS_BETTER, 8, 40, 12, 10000, log(40.0 / 12), -log(0.35), -log(0.25));
	o = verdict_json_evidence(ev);
	assert_string_equal(field(o, "arm_a"), "40 ms");
	assert_string_equal(field(o, "arm_b"), "12 ms");
	assert_string_equal(field(o, "change_text"), "fell 70% [65%, 75%] (better)");
	assert_string_equal(field(o, "summary"), "p99 latency 40 ms -> 12 ms, fell 70% [65%, 75%] (better)");
	json_decref(o);

	/* an outage in B (judge.h: the block served nothing, the worst block there is): not in the arms' means, said */
	trial(ev, "http.p99_ms", POLICY_LOWER_IS_BETTER, 3, 20, 18, 10000, -0.5, -1, 0.1);
	ev->pair[1].outage = 'b';
	ev->pair[1].b = NAN;
	o = verdict_json_evidence(ev);
	assert_string_equal(field(o, "arm_a"), "20 ms");
	assert_string_equal(field(o, "arm_b"), "18 ms, outage in 1 pair");
	assert_string_equal(field(o, "change_text"), "rose 65% [-9.5%, +172%]");
	assert_string_equal(field(o, "summary"), "p99 latency 20 ms -> 18 ms, rose 65% [-9.5%, +172%]; outage in B");
	json_decref(o);
	trial(ev, "http.p99_ms", POLICY_LOWER_IS_BETTER, 1, 20, NAN, 10000, -log(1000.0), NAN, NAN);
	ev->pair[0].outage = 'b';
	o = verdict_json_evidence(ev);
	assert_string_equal(field(o, "arm_a"), "");
	assert_string_equal(field(o, "arm_b"), "outage in 1 pair");
	assert_string_equal(field(o, "change_text"), "rose 1000x (worse)");
	assert_string_equal(field(o, "summary"), "p99 latency: outage in B");
	json_decref(o);

	/* throughput of a load generator, higher is better, after one pair: no interval yet */
	trial(ev, "loadgen.rps", POLICY_HIGHER_IS_BETTER, 1, 20000, 23000, 0, log(1.15), NAN, NAN);
	o = verdict_json_evidence(ev);
	assert_string_equal(field(o, "summary"), "load generator throughput 20000 req/s -> 23000 req/s, rose 15% (better)");
	json_decref(o);
	free(ev);
}

/* The journal keeps "reason; evidence" in 4 KiB (act/tuning.c): a full trial of K = 8 with its 4 void pairs
 * replaced and three guardrails still fits with a long reason. */
static void test_fits_the_journal(void **state)
{
	struct judge_evidence *ev = malloc(sizeof(*ev));
	json_t *o;
	char buf[4096];

	(void)state;
	assert_non_null(ev);
	trial(ev, "cpu.softirq_per_kreq", POLICY_LOWER_IS_BETTER, 12, 12.3456789, 10.1234567, 123456, 0.198765,
	      0.1234567, 0.2345678);
	ev->nvoid = 4;
	snprintf(ev->reason, sizeof(ev->reason), "%0*d", JUDGE_REASON_MAX - 1, 0);
	ev->nguard = 3;
	for (size_t g = 0; g < 3; g++) {
		snprintf(ev->guard[g].metric, sizeof(ev->guard[g].metric), g ? "nginx.worker_wait_ratio" : "http.p99_ms");
		ev->guard[g].test = JUDGE_TEST_NONINF;
		ev->guard[g].available = true;
		ev->guard[g].mean = -0.0123456;
		ev->guard[g].lower = -0.0456789;
		ev->guard[g].upper = 0.0234567;
	}
	for (unsigned i = 0; i < 12; i++) {
		ev->pair[i].d = 0.1987654321;
		for (size_t g = 0; g < 3; g++)
			ev->pair[i].g[g] = -0.0123456789;
	}
	o = verdict_json_evidence(ev);
	assert_int_equal(verdict_json_text(o, buf, sizeof(buf) - JUDGE_REASON_MAX - 2), 0);
	json_decref(o);
	free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evidence_as_before),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_calibration_row),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_readable),
		cmocka_unit_test(test_fits_the_journal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
