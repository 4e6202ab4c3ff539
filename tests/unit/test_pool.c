/*
 * pool_causes: what another host of the pool kept becomes a cause here only with matching facts, a symptom (a cause
 * while it fires, test_plan's test_causes), no refutation, and a value the local policy takes; a value it does not
 * take is refused with why.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "act/policy_load.h"
#include "pool.h"

static const char *srcdir(void)
{
	const char *s = getenv("srcdir");

	return s && s[0] ? s : ".";
}

/* The shipped listen.policy (net.core.somaxconn among its knobs). */
static void load_listen(struct policy_set *set)
{
	char path[512], err[512] = "";
	size_t len;
	char *buf = malloc(POLICY_FILE_SIZE_MAX + 1);
	FILE *f;

	assert_non_null(buf);
	snprintf(path, sizeof(path), "%s/policies/listen.policy", srcdir());
	f = fopen(path, "rb");
	assert_non_null(f);
	len = fread(buf, 1, POLICY_FILE_SIZE_MAX, f);
	fclose(f);
	policy_set_init(set);
	if (policy_parse_buffer(set, path, buf, len, err, sizeof(err)) < 0 ||
	    policy_set_validate(set, policy_metric_known, NULL, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	free(buf);
}

static struct pool_verdict verdict(const char *host, const char *knob, const char *to, bool kept, const char *symptom,
				   const char *kernel, int64_t cpus)
{
	struct pool_verdict v = {.kept = kept, .cpus = cpus, .at_ms = 1000000, .effect = 6.0, .pairs = 3};

	snprintf(v.host, sizeof(v.host), "%s", host);
	snprintf(v.knob, sizeof(v.knob), "%s", knob);
	snprintf(v.from, sizeof(v.from), "4096");
	snprintf(v.to, sizeof(v.to), "%s", to);
	snprintf(v.symptom, sizeof(v.symptom), "%s", symptom);
	snprintf(v.summary, sizeof(v.summary), "listen overflows fell to 1/4000");
	snprintf(v.kernel, sizeof(v.kernel), "%s", kernel);
	return v;
}

static void test_facts(void **state)
{
	struct pool_facts self = {.host = "web-1", .kernel = "6.1.0-28-amd64", .cpus = 8};
	struct pool_verdict v = verdict("web-3", "net.core.somaxconn", "8192", true, "", "6.1.0-31-amd64", 8);

	(void)state;
	assert_true(pool_facts_match(&self, &v));  /* the same 6.1 */
	v.cpus = 4;
	assert_false(pool_facts_match(&self, &v)); /* other CPUs */
	v.cpus = 8;
	snprintf(v.kernel, sizeof(v.kernel), "6.10.2");
	assert_false(pool_facts_match(&self, &v)); /* 6.10 is not 6.1 */
	snprintf(v.kernel, sizeof(v.kernel), "%s", "");
	assert_false(pool_facts_match(&self, &v)); /* no kernel said: nothing proven here */
}

static void test_causes(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct pool_facts self = {.host = "web-1", .kernel = "6.1.0-28-amd64", .cpus = 8};
	struct pool_verdict v[] = {
		verdict("web-3", "net.core.somaxconn", "8192", true, "listen_overflows", "6.1.0-28-amd64", 8),
		verdict("web-1", "net.core.somaxconn", "16384", true, "listen_overflows", "6.1.0-28-amd64", 8), /* ours */
		verdict("web-4", "net.core.somaxconn", "16384", true, "listen_overflows", "6.1.0-28-amd64", 2), /* facts */
		verdict("web-5", "net.core.somaxconn", "99999999", true, "", "6.1.0-28-amd64", 8),  /* outside policy */
		verdict("web-6", "/etc/shadow", "1", true, "", "6.1.0-28-amd64", 8),                /* a path */
		verdict("web-7", "net.core.somaxconn", "32768", false, "", "6.1.0-28-amd64", 8),    /* refuted... */
		verdict("web-8", "net.core.somaxconn", "32768", true, "listen_overflows", "6.1.0-28-amd64", 8), /* so not */
		verdict("web-9", "net.core.somaxconn", "65535", true, "", "6.1.0-28-amd64", 8),     /* no symptom: never */
	};
	size_t n = sizeof(v) / sizeof(v[0]), m;
	struct plan_cause c[4];
	bool refused[8];
	char why[8][POOL_TEXT_MAX];

	(void)state;
	load_listen(set);
	/* web-3's change is the cause, citing the canary, while listen_overflows fires (the planner checks it in the
	 * tick itself); nothing else usable. */
	m = pool_causes(set, &self, v, n, 1000000 + 12 * 60000, c, 4, refused, why);
	assert_int_equal(m, 1);
	assert_false(refused[0]);
	assert_false(refused[1]);
	assert_false(refused[2]);
	assert_true(refused[3]);
	assert_non_null(strstr(why[3], "net.core.somaxconn = 99999999"));
	assert_true(refused[4]);
	assert_string_equal(why[4], "/etc/shadow is not a knob of this host's policies");
	assert_false(refused[5]);
	assert_false(refused[6]);
	assert_string_equal(c[0].id, "pool.proven");
	assert_string_equal(c[0].knob, "net.core.somaxconn");
	assert_string_equal(c[0].to, "8192");
	assert_true(c[0].while_fires);
	assert_string_equal(detect_name(c[0].symptom), "listen_overflows");
	assert_string_equal(c[0].evidence, "kept on web-3 12 min ago (4096 -> 8192, for listen_overflows): listen "
					   "overflows fell to 1/4000");
	/* What web-3's trial measured goes with it, the confirming trial's prior. */
	assert_true(c[0].prior_effect == 6.0);
	assert_int_equal(c[0].prior_pairs, 3);
	assert_false(refused[7]);
	/* A time from the network that would overflow: no age, no crash. */
	v[0].at_ms = INT64_MIN;
	m = pool_causes(set, &self, v, n, INT64_MAX, c, 4, refused, why);
	assert_int_equal(m, 1);
	assert_non_null(strstr(c[0].evidence, "kept on web-3 0 s ago"));
	/* An effect from the network out of bounds is bounded, one of too few or too many pairs is no prior (the judge
	 * bounds it again; whatever it says, its error stays its own). */
	v[0].effect = 1e300;
	assert_int_equal(pool_causes(set, &self, v, n, 2000000, c, 4, refused, why), 1);
	assert_true(c[0].prior_effect == 8.0);
	v[0].pairs = 1;
	assert_int_equal(pool_causes(set, &self, v, n, 2000000, c, 4, refused, why), 1);
	assert_int_equal(c[0].prior_pairs, 0);
	v[0].pairs = INT64_MAX;
	assert_int_equal(pool_causes(set, &self, v, n, 2000000, c, 4, refused, why), 1);
	assert_int_equal(c[0].prior_pairs, 0);
	/* Eight hosts that kept one value: one cause, the newest's (the others would fill every place). */
	{
		struct pool_verdict same[10];
		bool refused10[10];
		char why10[10][POOL_TEXT_MAX];

		for (int i = 0; i < 10; i++) {
			char host[16];

			snprintf(host, sizeof(host), "web-%d", 10 + i);
			same[i] = verdict(host, "net.core.somaxconn", "8192", true, "listen_overflows", "6.1.0-28-amd64", 8);
			same[i].at_ms = 1000 + i;
		}
		same[9] = verdict("web-99", "net.core.somaxconn", "16384", true, "listen_overflows", "6.1.0-28-amd64", 8);
		m = pool_causes(set, &self, same, 10, 2000000, c, 4, refused10, why10);
		assert_int_equal(m, 2);
		assert_non_null(strstr(c[0].evidence, "kept on web-18 "));
		assert_string_equal(c[1].to, "16384");
	}
	/* No room: none. */
	assert_int_equal(pool_causes(set, &self, v, n, 1000000, c, 0, refused, why), 0);
	policy_set_free(set);
	free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_facts),
		cmocka_unit_test(test_causes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
