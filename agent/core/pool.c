/*
 * pool: see pool.h.
 */
#include "pool.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "judge.h"

/* The kernel's major.minor ("6.1" of "6.1.0-28-amd64"): its length in S. */
static size_t major_minor(const char *s)
{
	size_t n = strspn(s, "0123456789");

	if (s[n] != '.')
		return n;
	n++;
	return n + strspn(s + n, "0123456789");
}

bool pool_facts_match(const struct pool_facts *self, const struct pool_verdict *v)
{
	size_t a = major_minor(self->kernel), b = major_minor(v->kernel);

	return v->cpus == self->cpus && a > 0 && a == b && strncmp(self->kernel, v->kernel, a) == 0;
}

/* Another knob's value for policy_check's constraints: unknown here, which lets them pass (the local trial's own
 * plan checks them again with the live values). */
static int unknown(const char *knob, char *out, size_t outlen, void *ctx)
{
	(void)knob;
	(void)out;
	(void)outlen;
	(void)ctx;
	return -ENOENT;
}

static bool refuted(const struct pool_facts *self, const struct pool_verdict *v, size_t n, const struct pool_verdict *k)
{
	for (size_t i = 0; i < n; i++)
		if (!v[i].kept && strcmp(v[i].knob, k->knob) == 0 && strcmp(v[i].to, k->to) == 0 &&
		    pool_facts_match(self, &v[i]))
			return true;
	return false;
}

bool pool_proves(const struct pool_facts *self, const struct pool_verdict *v, size_t n, const struct pool_verdict *k)
{
	return k->kept && strcmp(k->host, self->host) != 0 && pool_facts_match(self, k) && isfinite(k->effect) &&
	       k->pairs >= 2 && k->pairs <= JUDGE_PAIRS_MAX && !refuted(self, v, n, k);
}

/* "12 min ago", "40 s ago", "3 h ago". */
static void ago(int64_t now_ms, int64_t at_ms, char *out, size_t outlen)
{
	/* AT_MS is the network's: no arithmetic that can overflow. */
	int64_t s = at_ms > 0 && at_ms < now_ms ? (now_ms - at_ms) / 1000 : 0;

	if (s < 120)
		snprintf(out, outlen, "%lld s ago", (long long)s);
	else if (s < 7200)
		snprintf(out, outlen, "%lld min ago", (long long)(s / 60));
	else
		snprintf(out, outlen, "%lld h ago", (long long)(s / 3600));
}

size_t pool_causes(const struct policy_set *set, const struct pool_facts *self,
		   const struct pool_verdict *v, size_t n, int64_t now_ms, struct plan_cause *causes, size_t max,
		   bool *refused, char (*why)[POOL_TEXT_MAX])
{
	int64_t at[PLAN_CAUSES_MAX];
	size_t m = 0;

	if (max > PLAN_CAUSES_MAX)
		max = PLAN_CAUSES_MAX;
	for (size_t i = 0; i < n; i++) {
		const struct pool_verdict *k = &v[i];
		const struct knob_policy *p;
		char err[POOL_TEXT_MAX], when[32];
		enum detect_id symptom;
		struct plan_cause *c;
		size_t j;

		refused[i] = false;
		why[i][0] = '\0';
		if (!k->kept || strcmp(k->host, self->host) == 0 || !pool_facts_match(self, k))
			continue;
		/* What the local policy does not take is refused, whatever else holds: a value no one here would allow
		 * is never a suggestion. */
		p = policy_find(set, k->knob);
		if (!p) {
			refused[i] = true;
			snprintf(why[i], POOL_TEXT_MAX, "%.64s is not a knob of this host's policies", k->knob);
			continue;
		}
		if (policy_check(set, p, k->to, k->to, unknown, NULL, err, sizeof(err)) < 0) {
			refused[i] = true;
			snprintf(why[i], POOL_TEXT_MAX, "%.64s = %.48s: %.120s", k->knob, k->to, err);
			continue;
		}
		/* None ("": an operator's proposal, a cause's) never: anyone who may write to etcd could otherwise have
		 * every host try any value its policy allows. */
		if (detect_lookup(k->symptom, &symptom) < 0 || refuted(self, v, n, k))
			continue;
		/* One cause per value and symptom, the newest host's: eight hosts that kept the same value must not fill
		 * every place and leave no room for another symptom's proven value (found by a review). */
		for (j = 0; j < m; j++)
			if (causes[j].symptom == symptom && strcmp(causes[j].knob, k->knob) == 0 &&
			    strcmp(causes[j].to, k->to) == 0)
				break;
		if ((j < m && at[j] >= k->at_ms) || (j == m && m == max))
			continue;
		c = &causes[j];
		at[j] = k->at_ms;
		memset(c, 0, sizeof(*c));
		snprintf(c->id, sizeof(c->id), "pool.proven");
		snprintf(c->knob, sizeof(c->knob), "%s", k->knob);
		snprintf(c->to, sizeof(c->to), "%s", k->to);
		/* Tried first: demand before limits, then by severity (plan.c's order of causes). */
		c->kind = PLAN_CAUSE_DEMAND;
		c->severity = 2;
		/* Only while its symptom fires here, weighed by the planner in the tick it starts. */
		c->while_fires = true;
		c->symptom = symptom;
		/* Its trial's effect, the confirming trial's prior: bounded here, the judge clips it again. */
		if (isfinite(k->effect) && k->pairs >= 2 && k->pairs <= JUDGE_PAIRS_MAX) {
			c->prior_effect = fmax(-JUDGE_PRIOR_EFFECT_MAX, fmin(JUDGE_PRIOR_EFFECT_MAX, k->effect));
			c->prior_pairs = (unsigned)k->pairs;
		}
		ago(now_ms, k->at_ms, when, sizeof(when));
		snprintf(c->evidence, sizeof(c->evidence), "kept on %.64s %.24s (%.48s -> %.48s%s%.64s): %.120s",
			 k->host, when, k->from, k->to, k->symptom[0] ? ", for " : "", k->symptom, k->summary);
		if (j == m)
			m++;
	}
	return m;
}
