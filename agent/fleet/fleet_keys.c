/*
 * fleet_keys: see fleet.h. The pool's keys as a round reads them back: what etcd holds is anyone's who may write
 * there, so each value is taken field by field, cut to its field and cleaned (tests/fuzz/fuzz_fleet.c). Pure: no
 * network, no clock, no lock.
 */
#include "build-config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/judge.h"
#include "fleet/fleet.h"

/* A copy of a text field that cannot overflow. */
void fleet_copy(char *dst, size_t len, const char *src)
{
	size_t n = src ? strnlen(src, len - 1) : 0;

	if (n && dst != src)
		memmove(dst, src, n);
	dst[n] = '\0';
}

/* The same for what etcd holds, which is anyone's who may write there: printable ASCII only, anything else '?' (the
 * API's JSON must stay valid UTF-8, a terminal's text free of escapes). */
void fleet_copy_clean(char *dst, size_t len, const char *src)
{
	fleet_copy(dst, len, src);
	for (char *p = dst; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
}

static struct fleet_member *member(struct fleet_view *v, const char *raw)
{
	char host[FLEET_NAME_MAX];

	fleet_copy_clean(host, sizeof(host), raw);
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->m[i].host, host) == 0)
			return &v->m[i];
	if (v->n == FLEET_MEMBERS_MAX)
		return NULL;
	memset(&v->m[v->n], 0, sizeof(v->m[0]));
	strcpy(v->m[v->n].host, host);
	v->m[v->n].slot = -1;
	return &v->m[v->n++];
}

/* verdicts/KNOB/HOST read back: the network's, cleaned and bounded. */
static void on_verdict(struct fleet_round *f, const char *rest, const char *value)
{
	const char *slash = strrchr(rest, '/');
	struct pool_verdict *v;
	json_t *j;

	if (!slash || slash == rest || !slash[1] || f->next->nverdicts == POOL_VERDICTS_MAX)
		return;
	j = json_loads(value, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return;
	}
	v = &f->next->verdicts[f->next->nverdicts++];
	memset(v, 0, sizeof(*v));
	fleet_copy_clean(v->host, sizeof(v->host), slash + 1);
	/* The knob as the key names it (what the value says could differ): cut at the slash. */
	fleet_copy_clean(v->knob,
			 (size_t)(slash - rest) + 1 < sizeof(v->knob) ? (size_t)(slash - rest) + 1 : sizeof(v->knob), rest);
	fleet_copy_clean(v->from, sizeof(v->from), json_string_value(json_object_get(j, "from")));
	fleet_copy_clean(v->to, sizeof(v->to), json_string_value(json_object_get(j, "to")));
	v->kept = json_is_true(json_object_get(j, "kept"));
	fleet_copy_clean(v->symptom, sizeof(v->symptom), json_string_value(json_object_get(j, "symptom")));
	fleet_copy_clean(v->summary, sizeof(v->summary), json_string_value(json_object_get(j, "summary")));
	fleet_copy_clean(v->kernel, sizeof(v->kernel), json_string_value(json_object_get(j, "kernel")));
	v->cpus = json_integer_value(json_object_get(j, "cpus"));
	v->at_ms = json_integer_value(json_object_get(j, "at_ms"));
	/* A number within the judge's bounds and its pairs, or none (whatever it says, a confirming trial's error stays
	 * its own; bounded here so that what the API and the console show is what a trial would take). */
	v->effect = json_is_number(json_object_get(j, "effect")) ? json_number_value(json_object_get(j, "effect")) : NAN;
	v->pairs = json_integer_value(json_object_get(j, "pairs"));
	if (!isfinite(v->effect) || v->pairs < 2 || v->pairs > JUDGE_PAIRS_MAX) {
		v->effect = NAN;
		v->pairs = 0;
	} else if (v->effect > JUDGE_PRIOR_EFFECT_MAX) {
		v->effect = JUDGE_PRIOR_EFFECT_MAX;
	} else if (v->effect < -JUDGE_PRIOR_EFFECT_MAX) {
		v->effect = -JUDGE_PRIOR_EFFECT_MAX;
	}
	json_decref(j);
}

char *fleet_ask_json(const struct fleet_ask *q)
{
	json_t *j = json_pack("{s:I, s:I, s:s, s:s, s:[I, I], s:[I, I]}", "change", (json_int_t)q->change, "pair",
			      (json_int_t)q->pair, "metric", q->metric, "better",
			      q->dir == POLICY_HIGHER_IS_BETTER ? "higher" : "lower", "a", (json_int_t)q->a_ms[0],
			      (json_int_t)q->a_ms[1], "b", (json_int_t)q->b_ms[0], (json_int_t)q->b_ms[1]);
	char *v = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(j);
	return v;
}

/* A window [from, to) of J (an array of two integers): 0 or -EINVAL. */
static int window_of(json_t *j, int64_t w[2])
{
	json_t *a = json_array_get(j, 0), *b = json_array_get(j, 1);

	if (json_array_size(j) != 2 || !json_is_integer(a) || !json_is_integer(b))
		return -EINVAL;
	w[0] = json_integer_value(a);
	w[1] = json_integer_value(b);
	/* Since 2001, up to an hour long: what a block is. */
	return w[0] > 1000000000000LL && w[1] > w[0] && w[1] - w[0] <= 3600000 ? 0 : -EINVAL;
}

int fleet_ask_parse(const char *value, struct fleet_ask *out)
{
	json_t *j = json_loads(value, 0, NULL);
	const char *metric = json_string_value(json_object_get(j, "metric"));
	const char *better = json_string_value(json_object_get(j, "better"));
	json_int_t change = json_integer_value(json_object_get(j, "change"));
	json_int_t pair = json_integer_value(json_object_get(j, "pair"));
	int r = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(j) || !metric || !metric[0] || strlen(metric) >= sizeof(out->metric) || !better ||
	    change < 1 || pair < 1 || pair > JUDGE_PAIRS_MAX || window_of(json_object_get(j, "a"), out->a_ms) < 0 ||
	    window_of(json_object_get(j, "b"), out->b_ms) < 0 ||
	    !(out->a_ms[1] <= out->b_ms[0] || out->b_ms[1] <= out->a_ms[0]) ||
	    (out->a_ms[1] <= out->b_ms[0] ? out->b_ms[0] - out->a_ms[1] : out->a_ms[0] - out->b_ms[1]) > 3600000)
		goto out;
	/* A metric's name: what the registry's names are made of, nothing a terminal or a path would take. */
	if (strspn(metric, "abcdefghijklmnopqrstuvwxyz0123456789._") != strlen(metric))
		goto out;
	if (strcmp(better, "lower") == 0)
		out->dir = POLICY_LOWER_IS_BETTER;
	else if (strcmp(better, "higher") == 0)
		out->dir = POLICY_HIGHER_IS_BETTER;
	else
		goto out;
	strcpy(out->metric, metric);
	out->change = change;
	out->pair = (unsigned)pair;
	r = 0;
out:
	json_decref(j);
	return r;
}

/* The alive member HOST of the round's view (its members are read first), or NULL. */
static const struct fleet_member *alive_member(const struct fleet_round *f, const char *host)
{
	for (size_t i = 0; i < f->next->n; i++)
		if (f->next->m[i].alive && strcmp(f->next->m[i].host, host) == 0)
			return &f->next->m[i];
	return NULL;
}

bool fleet_member_in_trial(const struct fleet_member *m)
{
	return strcmp(m->state, "trial") == 0 || strcmp(m->state, "calibrating") == 0;
}

/* control/HOST of a peer, read back: its ask (one per host: the key names it), taken only from an alive member in
 * trial (keys of names that are none would take the places of real asks). */
static void on_ask(struct fleet_round *f, const char *host, const char *value)
{
	struct fleet_control *c = f->control;
	const struct fleet_member *m;
	struct fleet_ask q;

	if (!c || !host[0] || strchr(host, '/') || strcmp(host, f->host) == 0 || c->nasks == FLEET_ASKS_MAX ||
	    !(m = alive_member(f, host)) || strcmp(m->state, "trial") != 0 || fleet_ask_parse(value, &q) < 0)
		return;
	fleet_copy_clean(q.host, sizeof(q.host), host);
	c->asks[c->nasks++] = q;
}

/* answers/HOST/PEER, read back: PEER's figure for this host's ask, counted when it answers the pair asked and PEER
 * is one of those expected to (an alive member not in trial: the same hosts fleet_control.expected counts). A
 * figure beyond the judge's bound of a control (a peer whose objective moved more than JUDGE_CONTROL_MAX between
 * two blocks is no control of anything) counts as none. */
static void on_answer(struct fleet_round *f, const char *rest, const char *value)
{
	struct fleet_control *c = f->control;
	size_t hl = strlen(f->host);
	const struct fleet_member *m;
	json_t *j, *d;

	if (!c || !c->change || strncmp(rest, f->host, hl) != 0 || rest[hl] != '/' || !rest[hl + 1] ||
	    strchr(rest + hl + 1, '/') || strcmp(rest + hl + 1, f->host) == 0 ||
	    !(m = alive_member(f, rest + hl + 1)) || fleet_member_in_trial(m))
		return;
	j = json_loads(value, 0, NULL);
	if (json_is_object(j) && json_integer_value(json_object_get(j, "change")) == c->change &&
	    json_integer_value(json_object_get(j, "pair")) == (json_int_t)c->pair) {
		c->answered++;
		d = json_object_get(j, "d");
		if (json_is_number(d) && isfinite(json_number_value(d)) &&
		    fabs(json_number_value(d)) <= log(JUDGE_CONTROL_MAX)) {
			c->peers++;
			c->d_sum += json_number_value(d);
		}
	}
	json_decref(j);
}

int fleet_take_key(void *ctx, const char *key, const char *value, int64_t lease)
{
	struct fleet_round *f = ctx;
	size_t plen = strlen(f->prefix);
	const char *rest = key + plen;
	struct fleet_member *m;

	if (strncmp(key, f->prefix, plen) != 0)
		return 0;
	if (strncmp(rest, "members/", 8) == 0 && rest[8] && (m = member(f->next, rest + 8))) {
		json_t *j = json_loads(value, 0, NULL);

		m->alive = true;
		fleet_copy_clean(m->state, sizeof(m->state), json_string_value(json_object_get(j, "state")));
		fleet_copy_clean(m->knob, sizeof(m->knob), json_string_value(json_object_get(j, "knob")));
		fleet_copy_clean(m->agent, sizeof(m->agent), json_string_value(json_object_get(j, "agent")));
		fleet_copy_clean(m->kernel, sizeof(m->kernel), json_string_value(json_object_get(j, "kernel")));
		m->cpus = json_integer_value(json_object_get(j, "cpus"));
		m->max_in_trial = json_integer_value(json_object_get(j, "max_in_trial"));
		if (m->max_in_trial < 1 || m->max_in_trial > 64) /* [fleet] max_in_trial's range; else not said */
			m->max_in_trial = 0;
		json_decref(j);
	} else if (strncmp(rest, "known/", 6) == 0 && rest[6]) {
		member(f->next, rest + 6);
	} else if (strncmp(rest, "slots/", 6) == 0 && value[0]) {
		char *end;
		long i = strtol(rest + 6, &end, 10);

		if (*end || i < 0 || i >= 1000)
			return 0;
		if (i == f->slot && lease == f->lease && strcmp(value, f->host) == 0)
			f->own_slot_seen = true;
		if (lease == 0 && i < 16)
			fleet_copy(f->stale[i], sizeof(f->stale[i]), value);
		if ((m = member(f->next, value)))
			m->slot = (int)i;
	} else if (strncmp(rest, "verdicts/", 9) == 0) {
		on_verdict(f, rest + 9, value);
	} else if (strncmp(rest, "control/", 8) == 0) {
		on_ask(f, rest + 8, value);
	} else if (strncmp(rest, "answers/", 8) == 0) {
		on_answer(f, rest + 8, value);
	}
	return 0;
}


int64_t fleet_pool_max(const struct fleet_view *v, int64_t own, char *by, size_t bylen)
{
	int64_t most = own;

	by[0] = '\0';
	for (size_t i = 0; i < v->n; i++)
		if (v->m[i].alive && v->m[i].max_in_trial > 0 && v->m[i].max_in_trial < most) {
			most = v->m[i].max_in_trial;
			fleet_copy(by, bylen, v->m[i].host);
		}
	return most;
}

bool fleet_watch_wakes(const char *prefix, const char *host, int64_t own, const char *key, int64_t lease, bool deleted)
{
	size_t n = strlen(prefix), h = strlen(host);
	const char *rest;

	if (strncmp(key, prefix, n) != 0)
		return false;
	if (!deleted && lease && lease == own)
		return false;
	rest = key + n;
	if (strncmp(rest, "answers/", 8) == 0)
		return strncmp(rest + 8, host, h) == 0 && rest[8 + h] == '/';
	/* This host's own keys without a lease: known/HOST, verdicts/KNOB/HOST. */
	if (!deleted && strncmp(rest, "known/", 6) == 0 && strcmp(rest + 6, host) == 0)
		return false;
	if (!deleted && strncmp(rest, "verdicts/", 9) == 0 && strlen(rest) > h &&
	    strcmp(rest + strlen(rest) - h, host) == 0 && rest[strlen(rest) - h - 1] == '/')
		return false;
	return true;
}
