/*
 * plan: one proposal from symptoms, policies and the memory of what was tried. See plan.h.
 */
#include "plan.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAIRS_MAX 1000
#define MEASURE_MAX_MS (24 * 3600 * 1000LL)
#define MEMORY_MAX_MS (365 * 24 * 3600 * 1000LL)

typedef int (*value_fn)(const char *knob, char *out, size_t outlen, void *ctx);

/*
 * Knobs that fix their symptom by going down or apart; every other knob goes up. A shorter scheduler slice lets a
 * woken worker run sooner; a shorter FIN timeout frees orphaned sockets sooner; a wider port range gives more
 * local ports; tcp_tw_reuse 1 lets every outgoing connection take a port still in TIME_WAIT.
 */
static const struct dir_rule {
	enum policy_kind kind;
	const char *target; /* NULL: every knob of the kind */
	enum plan_dir dir;
} dir_rules[] = {
	{POLICY_SCHED_SLICE, NULL, PLAN_DOWN},
	{POLICY_SYSCTL, "net.ipv4.tcp_fin_timeout", PLAN_DOWN},
	{POLICY_SYSCTL, "net.ipv4.ip_local_port_range", PLAN_APART},
	/* 2 (loopback only, the default) -> 1 (every outgoing connection may reuse a port in TIME_WAIT) */
	{POLICY_SYSCTL, "net.ipv4.tcp_tw_reuse", PLAN_DOWN},
};

static const char *const dir_names[] = {[PLAN_UP] = "up", [PLAN_DOWN] = "down", [PLAN_APART] = "apart"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

void plan_config_default(struct plan_config *cfg)
{
	cfg->pairs = 8;
	cfg->measure_ms = 90000;
	cfg->cooldown_ms = 3600000;
	cfg->memory_ms = 24 * 3600000LL;
	cfg->worse_factor = 2;
}

static bool config_ok(const struct plan_config *cfg)
{
	return cfg->pairs >= 1 && cfg->pairs <= PAIRS_MAX && cfg->measure_ms > 0 && cfg->measure_ms <= MEASURE_MAX_MS &&
	       cfg->cooldown_ms >= 0 && cfg->cooldown_ms <= MEMORY_MAX_MS && cfg->memory_ms >= 0 &&
	       cfg->memory_ms <= MEMORY_MAX_MS && isfinite(cfg->worse_factor) && cfg->worse_factor >= 1;
}

enum plan_dir plan_direction(const struct knob_policy *p)
{
	for (size_t i = 0; i < COUNT(dir_rules); i++)
		if (dir_rules[i].kind == p->kind &&
		    (!dir_rules[i].target || strcmp(dir_rules[i].target, p->target) == 0))
			return dir_rules[i].dir;
	return PLAN_UP;
}

const char *plan_result_name(enum plan_result r)
{
	switch (r) {
	case PLAN_KEPT:
		return "kept";
	case PLAN_HARM:
		return "harm";
	case PLAN_INCONCLUSIVE:
		return "inconclusive";
	case PLAN_ABORTED:
		return "aborted";
	case PLAN_ERROR:
		return "error";
	case PLAN_REJECTED:
		return "rejected";
	}
	return "?";
}

/* ---- memory ---------------------------------------------------------------------------------------------- */

void plan_memory_init(struct plan_memory *mem)
{
	memset(mem, 0, sizeof(*mem));
}

void plan_memory_free(struct plan_memory *mem)
{
	free(mem->k);
	plan_memory_init(mem);
}

static const struct plan_knob_memory *memory_find(const struct plan_memory *mem, const char *knob)
{
	if (!mem)
		return NULL;
	for (size_t i = 0; i < mem->n; i++)
		if (strcmp(mem->k[i].knob, knob) == 0)
			return &mem->k[i];
	return NULL;
}

static int memory_get(struct plan_memory *mem, const char *knob, struct plan_knob_memory **out)
{
	struct plan_knob_memory *nk;
	size_t ncap;

	for (size_t i = 0; i < mem->n; i++) {
		if (strcmp(mem->k[i].knob, knob) == 0) {
			*out = &mem->k[i];
			return 0;
		}
	}
	if (mem->n >= POLICY_KNOBS_MAX)
		return -ENOSPC;
	if (mem->n == mem->cap) {
		ncap = mem->cap ? mem->cap * 2 : 8;
		nk = realloc(mem->k, ncap * sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		mem->k = nk;
		mem->cap = ncap;
	}
	nk = &mem->k[mem->n++];
	memset(nk, 0, sizeof(*nk));
	snprintf(nk->knob, sizeof(nk->knob), "%s", knob);
	*out = nk;
	return 0;
}

int plan_memory_record(struct plan_memory *mem, const struct plan_config *cfg, const struct plan_proposal *prop,
		       enum plan_result result, int64_t now_ms)
{
	struct plan_knob_memory *k;
	struct plan_when when;
	size_t len = strnlen(prop->knob, sizeof(prop->knob));
	int rc;

	if (len == 0 || len >= sizeof(prop->knob) || (unsigned)result > PLAN_REJECTED ||
	    (unsigned)prop->dir > PLAN_APART || !config_ok(cfg))
		return -EINVAL;
	if (result == PLAN_KEPT) {
		/* The host is not what earlier failures were measured on: every remembered failure may be retried. */
		mem->generation++;
		return 0;
	}
	rc = memory_get(mem, prop->knob, &k);
	if (rc < 0)
		return rc;
	k->cooldown_until_ms = now_ms > INT64_MAX - cfg->cooldown_ms ? INT64_MAX : now_ms + cfg->cooldown_ms;
	if (result == PLAN_ERROR)
		return 0; /* a failed measurement says nothing about the value */
	memset(&when, 0, sizeof(when));
	when.at_ms = now_ms;
	when.generation = mem->generation;
	when.symptom = prop->value;
	snprintf(when.from, sizeof(when.from), "%s", prop->from);
	if (result == PLAN_HARM || result == PLAN_ABORTED) {
		k->failed[prop->dir] = true;
		k->failed_when[prop->dir] = when;
	}
	snprintf(k->reverted[k->next_reverted], sizeof(k->reverted[0]), "%s", prop->to);
	k->reverted_when[k->next_reverted] = when;
	k->next_reverted = (k->next_reverted + 1) % PLAN_REVERTED_MAX;
	if (k->nreverted < PLAN_REVERTED_MAX)
		k->nreverted++;
	return 0;
}

/* Has anything changed since WHEN that makes a remembered failure of P worth another try? */
static bool conditions_changed(const struct plan_memory *mem, const struct plan_config *cfg,
			       const struct knob_policy *p, const struct plan_when *when, const char *current,
			       double symptom, int64_t now_ms)
{
	bool lower_worse = p->trigger_op == POLICY_LT || p->trigger_op == POLICY_LE;

	if (now_ms - when->at_ms >= cfg->memory_ms || now_ms < when->at_ms)
		return true;
	if (mem->generation != when->generation)
		return true;
	if (!knobval_text_equal(p->type, current, when->from))
		return true;
	if (lower_worse)
		return symptom < when->symptom && symptom * cfg->worse_factor <= when->symptom;
	return symptom > when->symptom && symptom >= when->symptom * cfg->worse_factor;
}

/* ---- choosing ---------------------------------------------------------------------------------------------- */

struct cand {
	const struct knob_policy *p;
	enum detect_id id;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->p->approval_required != y->p->approval_required)
		return x->p->approval_required ? 1 : -1;
	/* Hardware queues spread work better than software steering: IRQ affinity before RPS, whatever the names. */
	if ((x->p->kind == POLICY_IRQ_AFFINITY && y->p->kind == POLICY_RPS) ||
	    (x->p->kind == POLICY_RPS && y->p->kind == POLICY_IRQ_AFFINITY))
		return x->p->kind == POLICY_IRQ_AFFINITY ? -1 : 1;
	return strcmp(x->p->name, y->p->name);
}

static bool fires(enum policy_cmp op, double v, double t)
{
	switch (op) {
	case POLICY_LE:
		return v <= t;
	case POLICY_LT:
		return v < t;
	case POLICY_GE:
		return v >= t;
	case POLICY_GT:
		return v > t;
	}
	return false;
}

static const char *op_text(enum policy_cmp op)
{
	static const char *const t[] = {[POLICY_LE] = "<=", [POLICY_LT] = "<", [POLICY_GE] = ">=", [POLICY_GT] = ">"};

	return (unsigned)op < COUNT(t) ? t[op] : "?";
}

__attribute__((format(printf, 3, 4))) static void skip(struct plan_outcome *out, const char *knob, const char *fmt,
							...)
{
	struct plan_skip *s;
	va_list ap;

	if (out->nskipped >= PLAN_SKIPPED_MAX)
		return;
	s = &out->skipped[out->nskipped++];
	snprintf(s->knob, sizeof(s->knob), "%s", knob);
	va_start(ap, fmt);
	vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
	va_end(ap);
}

/* Text that may be cut short at LEN: reasons are for people, and a long value must not make them fail. */
__attribute__((format(printf, 3, 4))) static void put(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* "at 2026-..." would need a calendar; seconds relative to now say the same to an operator and stay pure. */
static long long secs(int64_t ms)
{
	return (long long)(ms / 1000);
}

/* The next value of P from CUR in direction DIR into OUT: 0, -ERANGE at the bound, -EINVAL without a rule. */
static int next_value(const struct knob_policy *p, const char *cur, enum plan_dir dir, char *out, size_t outlen)
{
	struct knobval lo, hi, v;
	char a[KNOBVAL_TEXT_MAX], b[KNOBVAL_TEXT_MAX];
	int ra, rb;

	if (p->type == KNOB_T_ONOFF) {
		if (knobval_parse(KNOB_T_ONOFF, cur, &v, NULL, 0) < 0)
			return -EINVAL;
		if (v.v[0] == (dir != PLAN_DOWN))
			return -ERANGE;
		return snprintf(out, outlen, "%s", dir != PLAN_DOWN ? "on" : "off") < (int)outlen ? 0 : -ENOSPC;
	}
	if (p->type != KNOB_T_INT && p->type != KNOB_T_INTVEC)
		return -EINVAL;
	if (dir != PLAN_APART)
		return policy_step_value(p, cur, dir == PLAN_UP, out, outlen);
	/* A range widens: its low end steps down and its high end up, each by the step rule. */
	if (p->type != KNOB_T_INTVEC || p->nelem != 2 || knobval_parse(p->type, cur, &v, NULL, 0) < 0 || v.n != 2)
		return -EINVAL;
	ra = policy_step_value(p, cur, false, a, sizeof(a));
	rb = policy_step_value(p, cur, true, b, sizeof(b));
	if ((ra < 0 && ra != -ERANGE) || (rb < 0 && rb != -ERANGE))
		return ra < 0 && ra != -ERANGE ? ra : rb;
	if (ra == 0 && knobval_parse(p->type, a, &lo, NULL, 0) == 0)
		v.v[0] = lo.v[0] < v.v[0] ? lo.v[0] : v.v[0];
	if (rb == 0 && knobval_parse(p->type, b, &hi, NULL, 0) == 0)
		v.v[1] = hi.v[1] > v.v[1] ? hi.v[1] : v.v[1];
	if (ra == -ERANGE && rb == -ERANGE)
		return -ERANGE;
	if (knobval_format(&v, out, outlen) < 0)
		return -ENOSPC;
	return knobval_text_equal(p->type, cur, out) ? -ERANGE : 0;
}

/* CPU placement knobs: per-interface CPU maps (POLICY.DEV) that move NET_RX work between CPUs. */
static bool placement(const struct knob_policy *p)
{
	return p->type == KNOB_T_CPUMAP && (p->kind == POLICY_RPS || p->kind == POLICY_IRQ_AFFINITY);
}

/* Whether the I-th of C's other CPUs may take moved work: it spends less than half of the hot CPU's softirq share
 * (as the detector counts an imbalance) and is within P's bounds. */
static bool may_take(const struct knob_policy *p, const struct detect_cpus *c, size_t i)
{
	return c->softirq[i] < c->hot_softirq / 2 && (int64_t)c->idlest[i] >= p->min[0] &&
	       (int64_t)c->idlest[i] <= p->max[0];
}

/* In how many of V's sets CPU is. */
static size_t sets_with(const struct knobval *v, unsigned cpu)
{
	size_t n = 0;

	for (size_t e = 0; e < v->n; e++)
		n += knobval_cpuset_has(&v->map[e].cpus, cpu);
	return n;
}

/*
 * The next CPU map of placement knob P from CUR, one step, from where the load is (C), into OUT with its direction
 * (down: a CPU taken out of the sets; up: a CPU added or an IRQ moved): 0, -ERANGE with WHY (no step helps),
 * -EINVAL (CUR is no map). C's other CPUs are listed most idle first; the first that may take work is the target.
 * RPS (queue -> CPUs that do its protocol work):
 *   - a set that holds the hot CPU steers packets onto it: the hot CPU comes out of every set (a set of the hot CPU
 *     alone becomes empty: RPS off for that queue, the protocol work stays where the packets arrive);
 *   - else the idlest CPU that is not in every set is added to the sets that lack it (off -> that CPU).
 * IRQ affinity (IRQ -> CPUs that take it): of the device's IRQs on the hot CPU, the highest-numbered moves to the
 * idlest CPU that takes none of its IRQs (the idlest at all when each takes one); a device with one IRQ is left
 * to RPS, since moving its IRQ moves the hot spot along.
 */
static int place_step(const struct knob_policy *p, const char *cur, const struct detect_cpus *c, enum plan_dir *dir,
		      char *out, size_t outlen, char *why, size_t wl)
{
	struct knobval v;
	unsigned hot;
	size_t on_hot = 0, last = 0;
	int cpu = -1;

	if (knobval_parse(KNOB_T_CPUMAP, cur, &v, NULL, 0) < 0 || v.n == 0)
		return -EINVAL;
	if (c->hot < 0)
		return put(why, wl, "no CPU is known to be hot"), -ERANGE;
	hot = (unsigned)c->hot;
	for (size_t e = 0; e < v.n; e++)
		if (knobval_cpuset_has(&v.map[e].cpus, hot))
			on_hot++, last = e;
	*dir = PLAN_UP;
	if (p->kind == POLICY_RPS && on_hot > 0) {
		*dir = PLAN_DOWN;
		for (size_t e = 0; e < v.n; e++)
			v.map[e].cpus.bits[hot / 64] &= ~((uint64_t)1 << (hot % 64));
	} else if (p->kind == POLICY_RPS) {
		for (size_t i = 0; i < c->n && cpu < 0; i++)
			if (may_take(p, c, i) && sets_with(&v, c->idlest[i]) < v.n)
				cpu = c->idlest[i];
		if (cpu < 0)
			return put(why, wl, "every CPU spending less than half of CPU %u's %.0f%% in softirq is in its "
					    "sets already", hot, c->hot_softirq), -ERANGE;
		for (size_t e = 0; e < v.n; e++)
			(void)knobval_cpuset_add(&v.map[e].cpus, (unsigned)cpu);
	} else {
		if (on_hot == 0)
			return put(why, wl, "none of its IRQs is on CPU %u, the hot one", hot), -ERANGE;
		if (v.n == 1)
			return put(why, wl, "its one IRQ would take the hot spot along (RPS spreads one queue)"), -ERANGE;
		for (size_t i = 0; i < c->n && cpu < 0; i++)
			if (may_take(p, c, i) && sets_with(&v, c->idlest[i]) == 0)
				cpu = c->idlest[i];
		for (size_t i = 0; i < c->n && cpu < 0; i++)
			if (may_take(p, c, i))
				cpu = c->idlest[i];
		if (cpu < 0)
			return put(why, wl, "no CPU spends less than half of CPU %u's %.0f%% in softirq", hot,
				   c->hot_softirq), -ERANGE;
		memset(&v.map[last].cpus, 0, sizeof(v.map[last].cpus));
		(void)knobval_cpuset_add(&v.map[last].cpus, (unsigned)cpu);
	}
	if (knobval_format(&v, out, outlen) < 0)
		return -ENOSPC;
	return knobval_text_equal(KNOB_T_CPUMAP, cur, out) ? (put(why, wl, "no step changes it"), -ERANGE) : 0;
}

/* The first policy of KIND in SET that is enabled, or NULL. */
static const struct knob_policy *find_kind(const struct policy_set *set, enum policy_kind kind, const char *target)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct knob_policy *p = &set->knobs[i];

		if (p->kind == kind && p->enabled && (!target || strcmp(p->target, target) == 0))
			return p;
	}
	return NULL;
}

static bool int_value(const struct knob_policy *p, value_fn value_of, void *ctx, int64_t *v)
{
	char buf[KNOBVAL_TEXT_MAX];
	struct knobval kv;

	buf[0] = buf[sizeof(buf) - 1] = '\0';
	if (value_of(p->name, buf, sizeof(buf), ctx) < 0 || (buf[sizeof(buf) - 1] = '\0') != 0 ||
	    knobval_parse(p->type, buf, &kv, NULL, 0) < 0 ||
	    (p->type != KNOB_T_INT && p->type != KNOB_T_INTVEC))
		return false;
	*v = kv.v[0];
	return true;
}

/*
 * somaxconn only caps the listen queue: a socket's limit is min(backlog, somaxconn), fixed when nginx calls
 * listen(). Raising somaxconn changes no socket nginx already listens on (measured on a real nginx: the live limit
 * stayed 16 after somaxconn went 16 -> 4096), so a trial of it measures nothing, whether nginx's backlog is below
 * somaxconn or cut to it. While the listen_queue knob reads a value, it is the one to move: its write raises
 * somaxconn itself when the new backlog needs it. somaxconn is proposed on its own only where nginx's backlog
 * cannot be managed.
 */
static bool not_binding(const struct policy_set *set, const struct knob_policy *p, const char *cur,
			value_fn value_of, void *ctx, char *why, size_t len)
{
	const struct knob_policy *lq;
	struct knobval s;
	int64_t backlog;

	if (p->kind != POLICY_SYSCTL || strcmp(p->target, "net.core.somaxconn") != 0)
		return false;
	lq = find_kind(set, POLICY_LISTEN_QUEUE, NULL);
	if (!lq || !int_value(lq, value_of, ctx, &backlog) || knobval_parse(p->type, cur, &s, NULL, 0) < 0)
		return false;
	if (backlog < s.v[0])
		snprintf(why, len, "nginx's backlog %lld is below somaxconn %lld: the backlog (%s) is the limit",
			 (long long)backlog, (long long)s.v[0], lq->name);
	else
		snprintf(why, len, "somaxconn alone changes no socket nginx already listens on (live limit %lld): %s "
				   "raises it with the backlog", (long long)backlog, lq->name);
	return true;
}

/* What clients get, watched in every trial beside the policy's own metrics (implied guardrails, in this order as
 * room allows): good responses served, the synthetic client's failures, error responses, its median latency, and
 * for the clients' time ledger alone, the time connections waited to be accepted and the connections the kernel
 * refused (found on CI: worker_connections 128 ->
 * 1024 under 1000 clients answered 2.4x the requests and the median of the answered rose 250%; the connections
 * that waited or were refused in arm A were no guardrail of the policy's, and the median alone ended the trial). */
static const struct policy_metric outcomes[] = {
	{"http.good_rate", POLICY_HIGHER_IS_BETTER, true, false},
	{"client.failure_rate", POLICY_LOWER_IS_BETTER, true, false},
	{"http.5xx_rate", POLICY_LOWER_IS_BETTER, true, false},
	{"client.p50_ms", POLICY_LOWER_IS_BETTER, true, false},
	{"tcp.accept_wait", POLICY_LOWER_IS_BETTER, true, true},
	{"tcp.listen_overflows", POLICY_LOWER_IS_BETTER, true, true},
};

void plan_trial_outcomes(struct plan_trial *t)
{
	for (size_t i = 0; i < COUNT(outcomes) && t->nguardrails < POLICY_GUARDRAILS_MAX; i++) {
		bool named = strcmp(t->objective.metric, outcomes[i].metric) == 0;

		for (size_t g = 0; g < t->nguardrails && !named; g++)
			named = strcmp(t->guardrails[g].metric, outcomes[i].metric) == 0;
		if (!named)
			t->guardrails[t->nguardrails++] = outcomes[i];
	}
}

/* The trial plan of P's knob: K pairs of blocks of its settle time plus the measured time, its objective and
 * guardrails, and what clients get. */
static void trial_of(const struct knob_policy *p, const struct plan_config *cfg, struct plan_trial *t)
{
	memset(t, 0, sizeof(*t));
	t->pairs = cfg->pairs;
	t->settle_ms = p->settle_ms;
	t->settle_min_ms = p->settle_min_ms > 0 && p->settle_min_ms < p->settle_ms ? p->settle_min_ms : p->settle_ms;
	t->block_ms = p->settle_ms + cfg->measure_ms;
	t->objective = p->objective;
	t->nguardrails = p->nguardrails < POLICY_GUARDRAILS_MAX ? p->nguardrails : POLICY_GUARDRAILS_MAX;
	memcpy(t->guardrails, p->guardrails, t->nguardrails * sizeof(t->guardrails[0]));
	plan_trial_outcomes(t);
	t->duration_ms = (int64_t)cfg->pairs * 2 * t->block_ms;
}

/* Try P for reading R of REP: 0 and the proposal in OUT, or 1 with a skip recorded. */
static int try_knob(const struct policy_set *set, const struct knob_policy *p, const struct detect_reading *r,
		    const struct detect_report *rep, value_fn value_of, void *ctx, const struct plan_memory *mem,
		    const struct plan_config *cfg, int64_t now_ms, struct plan_outcome *out)
{
	const struct plan_knob_memory *k;
	struct plan_proposal *pr = &out->prop;
	char cur[KNOBVAL_TEXT_MAX], to[KNOBVAL_TEXT_MAX], why[PLAN_REASON_MAX], bounds[128], kn[POLICY_NAME_MAX];
	enum plan_dir dir = plan_direction(p);
	bool place = placement(p);
	const char *dev = NULL;
	int rc, step_rc = 0;

	snprintf(kn, sizeof(kn), "%s", p->name);
	if (!p->enabled)
		return skip(out, kn, "switched off by its policy"), 1;
	if (place) {
		/* Per interface (POLICY.DEV): of the busiest receivers, the first with a knob is the one whose work
		 * moves (lo and virtual ones have none unless an operator named them: a proxy's lo may receive
		 * more than its NIC). */
		if (rep->cpus.nrx == 0)
			return skip(out, kn, "no interface's received packets are known: which one's work to move is "
					     "not"), 1;
		for (size_t i = 0; i < rep->cpus.nrx && !dev; i++) {
			char name[POLICY_NAME_MAX];

			if ((size_t)snprintf(name, sizeof(name), "%s.%s", p->name, rep->cpus.rx_dev[i]) < sizeof(name) &&
			    value_of(name, cur, sizeof(cur), ctx) != -ENOENT) {
				snprintf(kn, sizeof(kn), "%s", name);
				dev = rep->cpus.rx_dev[i];
			}
		}
		if (!dev) {
			put(kn, sizeof(kn), "%s.%s", p->name, rep->cpus.rx_dev[0]);
			if (rep->cpus.nrx == 1)
				return skip(out, kn, "absent on this host"), 1;
			return skip(out, kn, "absent on this host, as on the other %zu busiest receivers", rep->cpus.nrx - 1),
			       1;
		}
	} else if (p->type != KNOB_T_INT && p->type != KNOB_T_INTVEC && p->type != KNOB_T_ONOFF) {
		return skip(out, kn, "a %s value has no step rule: an operator proposes its values",
			    knobval_type_name(p->type)), 1;
	}
	if ((p->type == KNOB_T_INT || p->type == KNOB_T_INTVEC) && p->step <= 0)
		return skip(out, kn, "no step in its policy"), 1;
	k = memory_find(mem, kn);
	cur[0] = '\0';
	rc = value_of(kn, cur, sizeof(cur), ctx);
	cur[sizeof(cur) - 1] = '\0';
	if (rc == -EBUSY)
		return skip(out, kn, "frozen: its live value differs from what the agent wrote (a conflict)"), 1;
	if (rc == -ENOENT)
		return skip(out, kn, "absent on this host"), 1;
	if (rc < 0)
		return skip(out, kn, "its current value cannot be read (%s)", strerror(-rc > 0 ? -rc : EIO)), 1;
	if (k && now_ms < k->cooldown_until_ms)
		return skip(out, kn, "cooling down for %lld s more after its last trial",
			    secs(k->cooldown_until_ms - now_ms + 999)), 1;
	/* A CPU map's step, and its direction, depend on where the load is now. */
	if (place)
		step_rc = place_step(p, cur, &rep->cpus, &dir, to, sizeof(to), why, sizeof(why));
	if (k && k->failed[dir] && !conditions_changed(mem, cfg, p, &k->failed_when[dir], cur, r->value, now_ms))
		return skip(out, kn, "going %s from %s failed %lld s ago and conditions have not changed",
			    dir_names[dir], k->failed_when[dir].from, secs(now_ms - k->failed_when[dir].at_ms)), 1;
	rc = place ? step_rc : next_value(p, cur, dir, to, sizeof(to));
	if (rc == -ERANGE && place)
		return skip(out, kn, "%s: no step from %s: %s", dev, cur, why), 1;
	if (rc == -ERANGE) {
		if (policy_bounds_text(p, bounds, sizeof(bounds)) < 0)
			bounds[0] = '\0';
		return skip(out, kn, "%s is at its bound going %s (%s)", cur, dir_names[dir], bounds), 1;
	}
	if (rc < 0)
		return skip(out, kn, "no next value from %s (%s)", cur, strerror(-rc)), 1;
	if (not_binding(set, p, cur, value_of, ctx, why, sizeof(why)))
		return skip(out, kn, "%s", why), 1;
	for (size_t i = 0; k && i < k->nreverted; i++) {
		if (knobval_text_equal(p->type, to, k->reverted[i]) &&
		    !conditions_changed(mem, cfg, p, &k->reverted_when[i], cur, r->value, now_ms))
			return skip(out, kn, "%s was reverted %lld s ago and conditions have not changed", to,
				    secs(now_ms - k->reverted_when[i].at_ms)), 1;
	}
	if (policy_check(set, p, cur, to, value_of, ctx, why, sizeof(why)) < 0)
		return skip(out, kn, "refused by its policy: %s", why), 1;

	memset(pr, 0, sizeof(*pr));
	snprintf(pr->knob, sizeof(pr->knob), "%s", kn);
	snprintf(pr->from, sizeof(pr->from), "%s", cur);
	snprintf(pr->to, sizeof(pr->to), "%s", to);
	pr->dir = dir;
	pr->detector = r->id;
	pr->value = r->value;
	pr->op = p->trigger_op;
	pr->threshold = p->trigger_threshold;
	snprintf(pr->evidence, sizeof(pr->evidence), "%s", r->evidence);
	pr->approval_required = p->approval_required;
	trial_of(p, cfg, &pr->trial);
	put(out->reason, sizeof(out->reason), "%s %s -> %s: %s = %.3g %s %.3g", pr->knob, pr->from, pr->to,
		 r->name, r->value, op_text(pr->op), pr->threshold);
	out->proposed = true;
	return 0;
}

/* ---- causes ------------------------------------------------------------------------------------------------ */

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * The value of integer knob P one change from CUR toward TARGET into OUT, with its direction: TARGET itself when
 * P's bounds and largest step allow it, else as far as they do (measured from CUR clamped into the bounds, as
 * policy_check measures it). Other types go to TARGET as it is. 0; -ERANGE when CUR is TARGET already or no step
 * moves toward it; -EINVAL when a value does not parse.
 */
static int toward(const struct knob_policy *p, const char *cur, const char *target, enum plan_dir *dir, char *out,
		  size_t outlen)
{
	struct knobval c, t;
	int64_t a, b;

	if (knobval_parse(p->type, target, &t, NULL, 0) < 0 || knobval_parse(p->type, cur, &c, NULL, 0) < 0)
		return -EINVAL;
	if (knobval_text_equal(p->type, cur, target))
		return -ERANGE;
	if (p->type != KNOB_T_INT) {
		*dir = p->type == KNOB_T_ONOFF ? (t.v[0] ? PLAN_UP : PLAN_DOWN) : plan_direction(p);
		return knobval_format(&t, out, outlen) < 0 ? -ENOSPC : 0;
	}
	a = clamp64(c.v[0], p->min[0], p->max[0]);
	b = clamp64(t.v[0], p->min[0], p->max[0]);
	*dir = b < c.v[0] ? PLAN_DOWN : PLAN_UP;
	if (p->max_step > 0 && p->step_mul) {
		double from = a < 1 ? 1 : (double)a;

		if (b > a && (double)b > from * p->max_step)
			b = (int64_t)floor(from * p->max_step);
		else if (b < a && (double)b < from / p->max_step)
			b = (int64_t)ceil(from / p->max_step);
	} else if (p->max_step > 0) {
		if (b > a && (double)(b - a) > p->max_step)
			b = a + (int64_t)p->max_step;
		else if (b < a && (double)(a - b) > p->max_step)
			b = a - (int64_t)p->max_step;
	}
	if (b == c.v[0])
		return -ERANGE;
	c.v[0] = b;
	return knobval_format(&c, out, outlen) < 0 ? -ENOSPC : 0;
}

static int cmp_cause(const void *x, const void *y)
{
	const struct plan_cause *const *a = x, *const *b = y;

	if ((*a)->kind != (*b)->kind)
		return (*a)->kind < (*b)->kind ? -1 : 1;
	if ((*a)->severity != (*b)->severity)
		return (*a)->severity > (*b)->severity ? -1 : 1;
	return *a < *b ? -1 : *a > *b; /* their given order */
}

/* Try cause C: 0 and the proposal in OUT, or 1 with a skip recorded. As try_knob, with the cause's value. */
static int try_cause(const struct policy_set *set, const struct plan_cause *c, value_fn value_of, void *ctx,
		     const struct plan_memory *mem, const struct plan_config *cfg, int64_t now_ms,
		     struct plan_outcome *out)
{
	const struct knob_policy *p = policy_find(set, c->knob);
	const struct plan_knob_memory *k = memory_find(mem, c->knob);
	struct plan_proposal *pr = &out->prop;
	char cur[KNOBVAL_TEXT_MAX], to[KNOBVAL_TEXT_MAX], why[PLAN_REASON_MAX], bounds[128];
	enum plan_dir dir = PLAN_UP;
	int rc;

	if (!p)
		return skip(out, c->knob, "the fix of %s: no policy manages it", c->id), 1;
	if (!p->enabled)
		return skip(out, c->knob, "the fix of %s: switched off by its policy", c->id), 1;
	cur[0] = '\0';
	rc = value_of(c->knob, cur, sizeof(cur), ctx);
	cur[sizeof(cur) - 1] = '\0';
	if (rc == -EBUSY)
		return skip(out, c->knob, "the fix of %s: frozen, its live value differs from what the agent wrote (a "
				       "conflict)", c->id), 1;
	if (rc == -ENOENT)
		return skip(out, c->knob, "the fix of %s: absent on this host", c->id), 1;
	if (rc < 0)
		return skip(out, c->knob, "the fix of %s: its current value cannot be read (%s)", c->id,
			    strerror(-rc > 0 ? -rc : EIO)), 1;
	if (k && now_ms < k->cooldown_until_ms)
		return skip(out, c->knob, "the fix of %s: cooling down for %lld s more after its last trial", c->id,
			    secs(k->cooldown_until_ms - now_ms + 999)), 1;
	if (c->to[0]) {
		rc = toward(p, cur, c->to, &dir, to, sizeof(to));
	} else {
		dir = plan_direction(p);
		rc = (p->type == KNOB_T_INT || p->type == KNOB_T_INTVEC) && p->step <= 0 ? -EINVAL
											  : next_value(p, cur, dir, to,
												       sizeof(to));
	}
	if (rc == -ERANGE && c->to[0] && knobval_text_equal(p->type, cur, c->to))
		return skip(out, c->knob, "the fix of %s: already %s", c->id, cur), 1;
	if (rc == -ERANGE) {
		if (policy_bounds_text(p, bounds, sizeof(bounds)) < 0)
			bounds[0] = '\0';
		return skip(out, c->knob, "the fix of %s: %s is as far toward %s as its policy goes (%s)", c->id, cur,
			    c->to[0] ? c->to : "its fix", bounds), 1;
	}
	if (rc < 0)
		return skip(out, c->knob, "the fix of %s: no value from %s toward %s (%s)", c->id, cur,
			    c->to[0] ? c->to : "its fix", strerror(-rc)), 1;
	if (k && k->failed[dir] && !conditions_changed(mem, cfg, p, &k->failed_when[dir], cur, NAN, now_ms))
		return skip(out, c->knob, "the fix of %s: going %s from %s failed %lld s ago and conditions have not "
				       "changed", c->id, dir_names[dir], k->failed_when[dir].from,
			    secs(now_ms - k->failed_when[dir].at_ms)), 1;
	for (size_t i = 0; k && i < k->nreverted; i++)
		if (knobval_text_equal(p->type, to, k->reverted[i]) &&
		    !conditions_changed(mem, cfg, p, &k->reverted_when[i], cur, NAN, now_ms))
			return skip(out, c->knob, "the fix of %s: %s was reverted %lld s ago and conditions have not "
					       "changed", c->id, to, secs(now_ms - k->reverted_when[i].at_ms)), 1;
	if (policy_check(set, p, cur, to, value_of, ctx, why, sizeof(why)) < 0)
		return skip(out, c->knob, "the fix of %s: refused by its policy: %s", c->id, why), 1;

	memset(pr, 0, sizeof(*pr));
	snprintf(pr->knob, sizeof(pr->knob), "%s", c->knob);
	snprintf(pr->from, sizeof(pr->from), "%s", cur);
	snprintf(pr->to, sizeof(pr->to), "%s", to);
	snprintf(pr->cause, sizeof(pr->cause), "%s", c->id);
	pr->dir = dir;
	pr->detector = DETECT_COUNT;
	pr->value = NAN;
	pr->op = p->trigger_op;
	pr->threshold = p->trigger_threshold;
	put(pr->evidence, sizeof(pr->evidence), "%s: %s", c->id, c->evidence);
	pr->approval_required = p->approval_required;
	trial_of(p, cfg, &pr->trial);
	if (c->prior_pairs >= 2 && isfinite(c->prior_effect)) {
		pr->trial.prior_effect = c->prior_effect;
		pr->trial.prior_pairs = c->prior_pairs;
	}
	put(out->reason, sizeof(out->reason), "%s %s -> %s: the cause %s", pr->knob, pr->from, pr->to, c->id);
	out->proposed = true;
	return 0;
}

/* The causes of CAUSES in the order they are tried (demand before limits, then by severity) into ORDER; one that
 * holds only while its symptom fires, only while it fires in REP. */
static size_t order_causes(const struct plan_causes *causes, const struct detect_report *rep,
			   const struct plan_cause **order)
{
	size_t n = 0;

	for (size_t i = 0; causes && i < causes->n && n < PLAN_CAUSES_MAX; i++) {
		const struct plan_cause *c = &causes->v[i];

		if (!c->knob[0] ||
		    (c->while_fires && !((unsigned)c->symptom < DETECT_COUNT && rep->r[c->symptom].active)))
			continue;
		order[n++] = c;
	}
	qsort(order, n, sizeof(order[0]), cmp_cause);
	return n;
}

/* Whether the workers ran out of connections: in the window (a valid, sustained reading above zero), or in the
 * last few ticks (an error logged then, before the reading is valid). */
static bool exhausted(const struct detect_report *rep)
{
	const struct detect_reading *r = &rep->r[DETECT_WORKER_CONNECTIONS_EXHAUSTED];

	return r->recent || (r->valid && r->sustained && r->value > 0);
}

/* Whether nginx ran out of files: "Too many open files" in the window, or in the last few ticks. */
static bool files_short(const struct detect_report *rep)
{
	const struct detect_reading *r = &rep->r[DETECT_FILE_LIMIT];

	return r->recent || (r->valid && r->sustained && r->value > 0);
}

/* The keepalive_requests policy when nginx closes kept-alive connections after a few requests (its trigger,
 * keepalive_short, fires): each request then costs a handshake and a close. NULL otherwise. */
static const struct knob_policy *churns(const struct policy_set *set, const struct detect_report *rep)
{
	const struct knob_policy *ka = find_kind(set, POLICY_NGINX_DIRECTIVE, "keepalive_requests");
	const struct detect_reading *r = &rep->r[DETECT_KEEPALIVE_SHORT];
	enum detect_id id;

	if (!ka || !ka->trigger[0] || detect_lookup(ka->trigger, &id) < 0 || id != DETECT_KEEPALIVE_SHORT)
		return NULL;
	return r->valid && r->sustained && !isnan(r->value) && fires(ka->trigger_op, r->value, ka->trigger_threshold)
		       ? ka
		       : NULL;
}

/* The symptoms of connection churn: more packets per request (the softirq budget runs out), more handshakes (the
 * SYN queue), more closes on nginx's side (TIME_WAIT, orphans in FIN_WAIT). */
static bool churn_symptom(enum detect_id id)
{
	return id == DETECT_SOFTNET_SQUEEZE || id == DETECT_SYN_QUEUE_OVERFLOW || id == DETECT_TIMEWAIT_PILEUP ||
	       id == DETECT_FINWAIT_PILEUP;
}

int plan_next(const struct policy_set *set, const struct detect_report *rep, const struct plan_causes *causes,
	      value_fn value_of, void *ctx, const struct plan_memory *mem, const struct plan_config *cfg, int64_t now_ms,
	      struct plan_outcome *out)
{
	struct cand cands[POLICY_KNOBS_MAX];
	const struct plan_cause *order[PLAN_CAUSES_MAX];
	const struct knob_policy *ka;
	bool ka_tried = false;
	size_t n = 0, nc;

	memset(out, 0, sizeof(*out));
	if (!config_ok(cfg) || !value_of)
		return -EINVAL;
	if (!rep->actionable) {
		put(out->reason, sizeof(out->reason), "no proposal: %s", rep->status);
		return 0;
	}
	/* Causes before symptoms: the doctor's findings whose fix the agent can make, checked under the load of now
	 * (found on a real nginx: a check at the agent's start sized upstream keepalive for no clients, and a listen
	 * queue would have been raised behind workers out of connections the check had not seen yet). */
	if (causes && !causes->fresh) {
		out->wants_causes = true;
		put(out->reason, sizeof(out->reason), "no proposal yet: the causes are checked under this load first; %s",
		    rep->status);
		return 0;
	}
	nc = order_causes(causes, rep, order);
	for (size_t i = 0; i < nc; i++)
		if (try_cause(set, order[i], value_of, ctx, mem, cfg, now_ms, out) == 0)
			return 0;
	for (size_t i = 0; i < set->n && n < POLICY_KNOBS_MAX; i++) {
		const struct knob_policy *p = &set->knobs[i];
		const struct detect_reading *r;
		enum detect_id id;

		if (!p->trigger[0] || detect_lookup(p->trigger, &id) < 0)
			continue;
		r = &rep->r[id];
		if (!r->valid || !r->sustained || isnan(r->value) ||
		    !fires(p->trigger_op, r->value, p->trigger_threshold))
			continue;
		cands[n].p = p;
		cands[n].id = id;
		n++;
	}
	if (n == 0) {
		if (nc)
			put(out->reason, sizeof(out->reason), "no proposal: no knob's trigger fires, and %zu cause%s cannot "
			    "move (%s: %s)", nc, nc == 1 ? "" : "s", out->skipped[0].knob, out->skipped[0].reason);
		else
			snprintf(out->reason, sizeof(out->reason), "no proposal: no knob's trigger fires");
		return 0;
	}
	/* A symptom's knob waits for a check of its causes: found on a real nginx (issue 21), the listen queue was
	 * raised while the workers' connections, the cause, were never looked at. */
	qsort(cands, n, sizeof(cands[0]), cmp_cand);
	for (size_t i = 0; i < n; i++) {
		/* nginx cannot open files: accepts fail, the accept queue fills, upstream connections fail, and a
		 * reload may not bring workers up. Only the file limit's own fix is proposed while it lasts (found on a
		 * real nginx: worker_rlimit_nofile 256 got listen_queue and keepalive_requests proposed). */
		if (cands[i].id != DETECT_FILE_LIMIT && files_short(rep)) {
			skip(out, cands[i].p->name, "nginx cannot open files (file_limit: %s): only the file limit's fix is "
					      "proposed while it lasts", rep->r[DETECT_FILE_LIMIT].evidence);
			continue;
		}
		/* Causes, not symptoms: while nginx's workers have no free connection, the connections waiting for
		 * them fill the accept queue; a longer queue only holds more of them waiting (found on a real nginx:
		 * worker_connections 128 under 1000 clients got listen_queue 511 -> 1022 proposed first). */
		if (cands[i].id == DETECT_LISTEN_OVERFLOWS && exhausted(rep)) {
			skip(out, cands[i].p->name, "the workers have no free connection (worker_connections_exhausted): the "
					      "accept queue fills behind them");
			continue;
		}
		/* Causes, not symptoms: while nginx closes connections after each few requests, the handshakes and
		 * closes are the cost, and keepalive_requests is tried first (found in CI: keepalive_requests 1 in
		 * nginx.conf got netdev_budget proposed on the squeezes of 28k handshakes a second); the symptom's
		 * own knob only when it cannot move. */
		/* keepalive_requests tried for a churn symptom already: its own candidate would only say it again. */
		if (ka_tried && cands[i].p == churns(set, rep))
			continue;
		ka = churn_symptom(cands[i].id) && !ka_tried ? churns(set, rep) : NULL;
		if (ka) {
			ka_tried = true;
			if (try_knob(set, ka, &rep->r[DETECT_KEEPALIVE_SHORT], rep, value_of, ctx, mem, cfg, now_ms,
				     out) == 0)
				return 0;
		}
		if (try_knob(set, cands[i].p, &rep->r[cands[i].id], rep, value_of, ctx, mem, cfg, now_ms, out) == 0)
			return 0;
	}
	put(out->reason, sizeof(out->reason), "no proposal: %zu knob%s triggered, none can move (%s: %s)", n,
		 n == 1 ? "" : "s", out->skipped[0].knob, out->skipped[0].reason);
	return 0;
}

/* The way FROM -> TO goes: an integer that falls goes down whatever the policy's direction (an operator may move
 * a knob either way, and a failure must be remembered against the direction that was tried); else P's. */
static enum plan_dir move_direction(const struct knob_policy *p, const char *from, const char *to)
{
	struct knobval a, b;

	if (p->type == KNOB_T_INT && knobval_parse(p->type, from, &a, NULL, 0) == 0 &&
	    knobval_parse(p->type, to, &b, NULL, 0) == 0 && a.n == 1 && b.n == 1)
		return b.v[0] < a.v[0] ? PLAN_DOWN : PLAN_UP;
	return plan_direction(p);
}

/* Objectives that are a cost per request: under a closed-loop load generator, the same cost shows as saturated
 * requests per second. Latency objectives show as the generator's p99. Loss objectives (listen overflows, drops,
 * unhandled connections, SYN cookies...) stay as they are: wrk leaves the requests that timed out out of its
 * percentiles, so a fix that ends losses can show as a worse p99 (seen on the listen queue: A blocks of 19-46
 * timeouts each had a lower p99 than B). */
static const char *const cost_objectives[] = {
	"cpu.busy_per_kreq", "cpu.softirq_per_kreq", "softnet.time_squeeze", "nginx.worker_wait_ratio",
};
static const char *const latency_objectives[] = {"http.p99_ms", "http.p90_ms", "http.p50_ms"};

void plan_loadgen_trial(struct plan_trial *t)
{
	struct policy_metric g[POLICY_GUARDRAILS_MAX];
	struct policy_metric obj = t->objective, p99;
	bool cost = false, latency = false;
	size_t n = 0;

	for (size_t i = 0; i < COUNT(cost_objectives); i++)
		cost |= strcmp(obj.metric, cost_objectives[i]) == 0;
	for (size_t i = 0; i < COUNT(latency_objectives); i++)
		latency |= strcmp(obj.metric, latency_objectives[i]) == 0;
	memset(&p99, 0, sizeof(p99));
	snprintf(p99.metric, sizeof(p99.metric), "%s", PLAN_LOADGEN_P99);
	p99.dir = POLICY_LOWER_IS_BETTER;
	if (cost || latency) {
		memset(&t->objective, 0, sizeof(t->objective));
		snprintf(t->objective.metric, sizeof(t->objective.metric), "%s", cost ? PLAN_LOADGEN_RPS : PLAN_LOADGEN_P99);
		t->objective.dir = cost ? POLICY_HIGHER_IS_BETTER : POLICY_LOWER_IS_BETTER;
	}
	/* The generator's p99 guards what it does not judge; the policy's own objective and guardrails still hold,
	 * measured passively under the generated load. */
	if (!latency)
		g[n++] = p99;
	if (cost || latency)
		g[n++] = obj;
	for (size_t i = 0; i < t->nguardrails && n < POLICY_GUARDRAILS_MAX; i++)
		g[n++] = t->guardrails[i];
	memcpy(t->guardrails, g, n * sizeof(g[0]));
	t->nguardrails = n;
}

int plan_operator(const struct policy_set *set, const char *knob, const char *from, const char *to, const char *why,
		  const struct plan_config *cfg, struct plan_proposal *out)
{
	const struct knob_policy *p = NULL;

	memset(out, 0, sizeof(*out));
	if (!config_ok(cfg) || !knob || !from || !to)
		return -EINVAL;
	for (size_t i = 0; i < set->n && !p; i++) {
		const struct knob_policy *q = &set->knobs[i];
		size_t len = strlen(q->name);

		/* Per-interface knobs are named POLICY.DEV (rps.lo, irq_affinity.eth0): their policy is POLICY. */
		if (strcmp(q->name, knob) == 0 ||
		    ((q->kind == POLICY_RPS || q->kind == POLICY_IRQ_AFFINITY) && strncmp(q->name, knob, len) == 0 &&
		     knob[len] == '.' && knob[len + 1]))
			p = q;
	}
	if (!p)
		return -ENOENT;
	if (strlen(knob) >= sizeof(out->knob) || strlen(from) >= sizeof(out->from) || strlen(to) >= sizeof(out->to))
		return -ERANGE;
	snprintf(out->knob, sizeof(out->knob), "%s", knob);
	snprintf(out->from, sizeof(out->from), "%s", from);
	snprintf(out->to, sizeof(out->to), "%s", to);
	out->dir = move_direction(p, from, to);
	out->detector = DETECT_COUNT;
	out->value = NAN;
	out->op = p->trigger_op;
	out->threshold = p->trigger_threshold;
	put(out->evidence, sizeof(out->evidence), "operator proposal%s%s", why && why[0] ? ": " : "", why ? why : "");
	out->approval_required = true;
	trial_of(p, cfg, &out->trial);
	return 0;
}

void plan_detect_env(const struct policy_set *set, value_fn value_of, void *ctx, struct detect_env *env)
{
	const struct knob_policy *ka = find_kind(set, POLICY_NGINX_DIRECTIVE, "keepalive_requests");
	const struct knob_policy *pr = find_kind(set, POLICY_SYSCTL, "net.ipv4.ip_local_port_range");
	char buf[KNOBVAL_TEXT_MAX];
	struct knobval v;
	int64_t n;

	env->keepalive_requests = NAN;
	env->port_range = NAN;
	buf[0] = buf[sizeof(buf) - 1] = '\0';
	if (ka && ka->type == KNOB_T_INT && int_value(ka, value_of, ctx, &n) && n > 0)
		env->keepalive_requests = (double)n;
	if (pr && pr->type == KNOB_T_INTVEC && value_of(pr->name, buf, sizeof(buf), ctx) == 0 &&
	    (buf[sizeof(buf) - 1] = '\0') == 0 && knobval_parse(KNOB_T_INTVEC, buf, &v, NULL, 0) == 0 && v.n == 2 &&
	    v.v[1] >= v.v[0])
		env->port_range = (double)(v.v[1] - v.v[0] + 1);
}
