/*
 * fleet: see fleet.h.
 */
#include "build-config.h"

#include "fleet/fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "fleet/etcd.h"
#include "log.h"

struct fleet {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	/* the loop's, under MU */
	bool want, canary;
	uint64_t want_seq;      /* one more at each change of WANT: a round's view says which it saw */
	char state[16], knob[FLEET_NAME_MAX], to[KNOBVAL_TEXT_MAX];
	struct fleet_view view; /* published at the end of each round, under MU */
	/* the thread's own */
	struct etcd *etcd;
	char prefix[160];       /* /ngx-autotune/pools/POOL/ */
	char pool[FLEET_NAME_MAX]; /* POOL (set once, before the threads) */
	char host[FLEET_NAME_MAX];
	int64_t ttl_s, period_ms, max_in_trial;
	int64_t lease;          /* 0: none */
	int64_t lease_ok_ms;    /* when etcd last renewed it (CLOCK_MONOTONIC) */
	bool slow_said;         /* a round slower than a third of the lease logged, until one is not */
	bool known_put;         /* known/HOST written since the start */
	char member_value[512]; /* members/HOST as last put under LEASE ("" after a new lease) */
	int slot;               /* held, or -1 */
	bool canary_held;       /* the pool's canary key (slot_step) */
	char canary_by[FLEET_NAME_MAX]; /* who holds it, when this host's canary waits for it ... */
	bool canary_proven;     /* ... or who has just proven its value */
	int64_t proven_since_ms; /* since when this host's canary waits for its planner to take that proof (0: not) */
	char kernel[64];
	int64_t cpus;
	struct fleet_view next; /* being made by the round */
	struct pool_verdict pending[8]; /* fleet_publish's, under MU, each with its number */
	uint64_t pending_seq[8], next_seq;
	size_t npending;
	struct fleet_round rd;  /* what the round's range found of this host's (own_slot_seen, stale) */
	int64_t ttl_ms;
	/* The control group: the loop's ask and answers, and what was read, under MU */
	bool asking;
	struct fleet_ask ask;
	struct fleet_answer_q {
		char host[FLEET_NAME_MAX];
		int64_t change;
		unsigned pair;
		double d;
	} answers[FLEET_ASKS_MAX];
	size_t nanswers;
	uint64_t wake_seq;      /* one more at each ask or answer: the thread goes at once */
	struct fleet_control control;
	/* ... and the thread's own */
	char ask_put[512];      /* control/HOST as last put ("" none) */
	struct fleet_control next_control;
	/* The watch of the pool's keys: a thread of its own on a client of its own (a watch blocks as long as it
	 * lasts); under MU: */
	pthread_t watcher;
	bool watcher_started;
	pthread_cond_t wcv;     /* the watcher's pause between two watches: fleet_free ends it */
	bool watching;          /* etcd confirmed the watch, and it has not ended */
	int64_t watch_lease;    /* the round's lease, for the watcher to know this host's own puts */
	int64_t wakes;          /* rounds a change woke */
	/* the watcher's own */
	struct etcd *wetcd;
	bool watch_said;        /* "watching" logged since the last failure ... */
	bool watch_failed_said; /* ... and its end since it last worked */
	int64_t watch_backoff_ms; /* the pause before the next watch: 1 s, doubled to 30 s while it fails */
};

static int read_password(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f) {
		snprintf(err, errlen, "[fleet] password_file %s: %s", path, strerror(errno));
		return -errno;
	}
	n = fread(out, 1, outlen - 1, f);
	fclose(f);
	out[n] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
	if (!out[0]) {
		snprintf(err, errlen, "[fleet] password_file %s is empty", path);
		return -EINVAL;
	}
	return 0;
}

/* ---- one round with etcd (the thread's) ------------------------------------------------------------------- */

static int64_t mono_ms(void);

static int lease_alive(struct fleet *f, char *err, size_t errlen)
{
	int64_t ttl;
	int r;

	if (f->lease) {
		r = etcd_keepalive(f->etcd, f->lease, &ttl, err, errlen);
		if (r == 0)
			f->lease_ok_ms = mono_ms();
		if (r != -ENOENT)
			return r;
		/* Expired (etcd was away longer than its TTL): what it bound is gone, a slot too. */
		log_warn("fleet: %s: joining %s again", err, f->prefix);
		f->lease = 0;
		f->slot = -1;
		f->canary_held = false;
	}
	r = etcd_grant(f->etcd, f->ttl_s, &f->lease, err, errlen);
	if (r == 0) {
		f->lease_ok_ms = mono_ms();
		pthread_mutex_lock(&f->mu);
		f->watch_lease = f->lease; /* before its first put: the watcher knows this host's own puts */
		pthread_mutex_unlock(&f->mu);
		f->member_value[0] = '\0';
		f->ask_put[0] = '\0'; /* control/HOST went with the old lease */
		log_info("fleet: %s joined pool %s through %s (lease %" PRId64 ", %" PRId64 " s)", f->host,
			 f->next.pool, etcd_endpoint(f->etcd), f->lease, f->ttl_s);
	}
	return r;
}

/* members/HOST: put when it changed (etcd keeps every revision: a put each round would grow it for nothing). */
static int put_member(struct fleet *f, const char *state, const char *knob, char *err, size_t errlen)
{
	char key[256], *v;
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:I}", "host", f->host, "agent", PACKAGE_VERSION,
			      "kernel", f->kernel, "cpus", (json_int_t)f->cpus, "state", state, "knob", knob,
			      "max_in_trial", (json_int_t)f->max_in_trial);
	int r = 0;

	v = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	if (!v || strlen(v) >= sizeof(f->member_value)) {
		free(v);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(key, sizeof(key), "%smembers/%s", f->prefix, f->host);
	if (strcmp(v, f->member_value) != 0 && (r = etcd_put(f->etcd, key, v, f->lease, err, errlen)) == 0)
		strcpy(f->member_value, v);
	free(v);
	if (r == 0 && !f->known_put) {
		snprintf(key, sizeof(key), "%sknown/%s", f->prefix, f->host);
		if ((r = etcd_put(f->etcd, key, f->host, 0, err, errlen)) == 0)
			f->known_put = true;
	}
	return r;
}

struct holder {
	const char *key;            /* the canary key itself (a range on it also finds .../canaryX) */
	char value[512];            /* as read, for a delete that checks it; "?" when longer */
	int64_t lease;
};

/* The holder of the canary key into CTX (a struct holder). */
static int canary_holder(void *ctx, const char *key, const char *value, int64_t lease)
{
	struct holder *h = ctx;

	if (strcmp(key, h->key) != 0)
		return 0;
	snprintf(h->value, sizeof(h->value), "%s", strlen(value) < sizeof(h->value) ? value : "?");
	h->lease = lease;
	return 1;
}

/* The pool's canary key given back, if held. */
static int canary_release(struct fleet *f, char *err, size_t errlen)
{
	char key[256];
	bool ok;
	int r;

	if (!f->canary_held)
		return 0;
	snprintf(key, sizeof(key), "%scanary", f->prefix);
	r = etcd_delete_if(f->etcd, key, f->host, &ok, err, errlen);
	if (r < 0)
		return r;
	f->canary_held = false;
	return 0;
}

/* A peer's verdict in this round's read that proves KNOB = TO here as the planner takes it (pool_proves: kept under
 * this host's facts, with its trial's effect, refuted by none): its host, or NULL. */
static const char *proven_by(const struct fleet *f, const char *knob, const char *to)
{
	struct pool_facts self = {f->host, f->kernel, f->cpus};

	for (size_t i = 0; i < f->next.nverdicts; i++) {
		const struct pool_verdict *v = &f->next.verdicts[i];

		if (strcmp(v->knob, knob) == 0 && strcmp(v->to, to) == 0 &&
		    pool_proves(&self, f->next.verdicts, f->next.nverdicts, v))
			return v->host;
	}
	return NULL;
}

/*
 * With more than one slot, a change no host of the pool has proven yet (a canary: CANARY) is tried on one host at a
 * time: beside its slot it takes the pool's canary key (created only where none is, bound to the lease). Confirmations
 * of a value the pool proved fill the other slots: canary, then waves. A canary of KNOB = TO that a peer has just
 * proven (its verdict read this round, before the planner here made it a confirmation) takes nothing for up to
 * FLEET_PROVEN_WAIT_MS (a time, not rounds: a change of the pool wakes a round at once): the canary key the prover
 * gave back at its verdict would go to a second canary of the same value (found by bench/fleet.sh). 0 when this host's canary may take a slot; 1 when it waits (canary_by
 * says for whom).
 */
static int canary_step(struct fleet *f, bool want, bool canary, const char *knob, const char *to, char *err,
		       size_t errlen)
{
	const char *by;

	struct holder h = {NULL, "", 0};
	char key[256];
	bool ok;
	int r;

	f->canary_by[0] = '\0';
	f->canary_proven = false;
	if (!want || !canary)
		f->proven_since_ms = 0;
	if (!want || !canary || f->next.max_in_trial <= 1) {
		/* Kept while its trial holds a slot; given back otherwise (a proposal that became a confirmation). */
		return f->slot >= 0 && want && canary ? 0 : canary_release(f, err, errlen);
	}
	if (f->canary_held || f->slot >= 0)
		return 0;
	if ((by = proven_by(f, knob, to)) && !f->proven_since_ms)
		f->proven_since_ms = mono_ms();
	if (by && mono_ms() - f->proven_since_ms < FLEET_PROVEN_WAIT_MS) {
		fleet_copy_clean(f->canary_by, sizeof(f->canary_by), by);
		f->canary_proven = true;
		return 1;
	}
	snprintf(key, sizeof(key), "%scanary", f->prefix);
	r = etcd_create(f->etcd, key, f->host, f->lease, &ok, err, errlen);
	if (r < 0)
		return r;
	if (ok) {
		f->canary_held = true;
		return 0;
	}
	h.key = key;
	r = etcd_range_prefix(f->etcd, key, canary_holder, &h, err, errlen);
	if (r < 0)
		return r;
	if (strcmp(h.value, f->host) == 0 && h.lease == f->lease) {
		/* This host's own, on its live lease: a create that committed while its answer was lost (a timeout, then
		 * the request again on another endpoint). */
		f->canary_held = true;
		return 0;
	}
	if (h.value[0] && h.lease == 0) {
		/* Without a lease (written by hand, or by something that is not an agent) it would hold for ever. */
		r = etcd_delete_if(f->etcd, key, h.value, &ok, err, errlen);
		if (r < 0)
			return r;
		if (ok)
			log_warn("fleet: the canary key of pool %s was held by '%s' without a lease: deleted", f->next.pool,
				 h.value);
	}
	fleet_copy_clean(f->canary_by, sizeof(f->canary_by), h.value[0] ? h.value : "?");
	return 1;
}

/* A slot taken where none is held (the first free of max_in_trial), or the one held given back; with more than
 * one, a canary's only beside the pool's canary key (canary_step). */
static int slot_step(struct fleet *f, bool want, bool canary, const char *knob, const char *to, char *err,
		     size_t errlen)
{
	char key[256];
	bool ok;
	int r;

	/* A slot key without a lease (written by hand, or by something that is not an agent) would be taken for ever:
	 * deleted, only if it still holds what was seen. */
	for (int i = 0; i < 16; i++) {
		if (!f->rd.stale[i][0])
			continue;
		snprintf(key, sizeof(key), "%sslots/%d", f->prefix, i);
		r = etcd_delete_if(f->etcd, key, f->rd.stale[i], &ok, err, errlen);
		if (r < 0)
			return r;
		if (ok)
			log_warn("fleet: trial slot %d of pool %s was held by '%s' without a lease: deleted", i, f->next.pool,
				 f->rd.stale[i]);
		f->rd.stale[i][0] = '\0';
	}
	r = canary_step(f, want, canary, knob, to, err, errlen);
	if (r != 0)
		return r < 0 ? r : 0;
	if (want && f->slot < 0) {
		for (int i = 0; i < f->next.max_in_trial; i++) {
			snprintf(key, sizeof(key), "%sslots/%d", f->prefix, i);
			r = etcd_create(f->etcd, key, f->host, f->lease, &ok, err, errlen);
			if (r < 0)
				return r;
			if (ok) {
				f->slot = i;
				log_info("fleet: %s took trial slot %d of pool %s%s", f->host, i, f->next.pool,
					 f->canary_held ? " (the pool's canary)" : "");
				return 0;
			}
		}
		/* No slot: the canary key is no use without one. */
		return canary_release(f, err, errlen);
	} else if (!want && f->slot >= 0) {
		snprintf(key, sizeof(key), "%sslots/%d", f->prefix, f->slot);
		r = etcd_delete_if(f->etcd, key, f->host, &ok, err, errlen);
		if (r < 0)
			return r;
		log_info("fleet: %s gave back trial slot %d of pool %s%s", f->host, f->slot, f->next.pool,
			 ok ? "" : " (it was no longer its own)");
		f->slot = -1;
	}
	return 0;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* verdicts/KNOB/HOST of the verdicts published since the last round (kept in the queue until etcd took them). */
static int put_verdicts(struct fleet *f, char *err, size_t errlen)
{
	for (;;) {
		struct pool_verdict v;
		char key[320], *val;
		json_t *j;
		int r;

		uint64_t seq;

		pthread_mutex_lock(&f->mu);
		if (!f->npending) {
			pthread_mutex_unlock(&f->mu);
			return 0;
		}
		v = f->pending[0];
		seq = f->pending_seq[0];
		pthread_mutex_unlock(&f->mu);
		j = json_pack("{s:s, s:s, s:s, s:b, s:s, s:s, s:s, s:I, s:I}", "knob", v.knob, "from", v.from, "to", v.to,
			      "kept", v.kept, "symptom", v.symptom, "summary", v.summary, "kernel", v.kernel, "cpus",
			      (json_int_t)v.cpus, "at_ms", (json_int_t)v.at_ms);
		/* What its trial measured, for the confirming trials' prior (none when it stopped before two pairs). */
		if (j && isfinite(v.effect) && v.pairs >= 2) {
			json_object_set_new(j, "effect", json_real(v.effect));
			json_object_set_new(j, "pairs", json_integer(v.pairs));
		}
		val = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(j);
		if (!val) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		snprintf(key, sizeof(key), "%sverdicts/%s/%s", f->prefix, v.knob, f->host);
		r = etcd_put(f->etcd, key, val, 0, err, errlen);
		free(val);
		if (r < 0)
			return r;
		log_info("fleet: %s's verdict on %s = %s published to pool %s: %s", f->host, v.knob, v.to, f->next.pool,
			 v.kept ? "kept" : "refuted");
		/* The one sent, if fleet_publish has not dropped it meanwhile (the queue full). */
		pthread_mutex_lock(&f->mu);
		for (size_t i = 0; i < f->npending; i++)
			if (f->pending_seq[i] == seq) {
				memmove(f->pending + i, f->pending + i + 1, (f->npending - i - 1) * sizeof(f->pending[0]));
				memmove(f->pending_seq + i, f->pending_seq + i + 1,
					(f->npending - i - 1) * sizeof(f->pending_seq[0]));
				f->npending--;
				break;
			}
		pthread_mutex_unlock(&f->mu);
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The lease renewed between a round's requests once a third of it passed: a round that etcd or this host makes slow
 * (found in fleet.sh: two wrk of 400 clients on the 2 CPUs of six agents and etcd, each request 300 ms, a round of
 * them 3 s and more) must not let it expire, and the host's slot and membership with it. */
static int lease_due(struct fleet *f, char *err, size_t errlen)
{
	int64_t ttl;
	int r;

	if (!f->lease || mono_ms() - f->lease_ok_ms < f->ttl_ms / 3)
		return 0;
	r = etcd_keepalive(f->etcd, f->lease, &ttl, err, errlen);
	if (r == 0)
		f->lease_ok_ms = mono_ms();
	return r;
}

/* The pool's keys under PREFIX/WHAT through on_key (the lease first, when due). */
static int range(struct fleet *f, const char *what, char *err, size_t errlen)
{
	char p[256];
	int r = lease_due(f, err, errlen);

	if (r < 0)
		return r;
	snprintf(p, sizeof(p), "%s%s", f->prefix, what);
	f->rd.prefix = f->prefix;
	f->rd.host = f->host;
	f->rd.slot = f->slot;
	f->rd.lease = f->lease;
	f->rd.next = &f->next;
	return etcd_range_prefix(f->etcd, p, fleet_take_key, &f->rd, err, errlen);
}

/* The control group's keys: this host's ask put or deleted as the loop says, its answers to the peers' asks put, and
 * the peers' asks and the answers to its own read. */
static int control_round(struct fleet *f, char *err, size_t errlen)
{
	struct fleet_control *c = &f->next_control;
	char key[400], *v = NULL;
	struct fleet_ask ask;
	bool asking;
	int r = 0;

	pthread_mutex_lock(&f->mu);
	asking = f->asking;
	ask = f->ask;
	pthread_mutex_unlock(&f->mu);
	snprintf(key, sizeof(key), "%scontrol/%s", f->prefix, f->host);
	if (asking && !(v = fleet_ask_json(&ask))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (v && strlen(v) < sizeof(f->ask_put) && strcmp(v, f->ask_put) != 0) {
		r = etcd_put(f->etcd, key, v, f->lease, err, errlen);
		if (r == 0)
			strcpy(f->ask_put, v);
	} else if (!v && f->ask_put[0]) {
		bool ok;

		r = etcd_delete_if(f->etcd, key, f->ask_put, &ok, err, errlen);
		if (r == 0)
			f->ask_put[0] = '\0';
	}
	free(v);
	while (r == 0) {
		struct fleet_answer_q a;
		json_t *j;

		pthread_mutex_lock(&f->mu);
		if (!f->nanswers) {
			pthread_mutex_unlock(&f->mu);
			break;
		}
		a = f->answers[0];
		pthread_mutex_unlock(&f->mu);
		j = json_pack("{s:I, s:I, s:o}", "change", (json_int_t)a.change, "pair", (json_int_t)a.pair, "d",
			      isfinite(a.d) ? json_real(a.d) : json_null());
		v = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(j);
		if (!v) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		snprintf(key, sizeof(key), "%sanswers/%s/%s", f->prefix, a.host, f->host);
		r = etcd_put(f->etcd, key, v, f->lease, err, errlen);
		free(v);
		if (r < 0)
			break;
		pthread_mutex_lock(&f->mu);
		if (f->nanswers && strcmp(f->answers[0].host, a.host) == 0 && f->answers[0].change == a.change &&
		    f->answers[0].pair == a.pair) {
			memmove(f->answers, f->answers + 1, (f->nanswers - 1) * sizeof(f->answers[0]));
			f->nanswers--;
		}
		pthread_mutex_unlock(&f->mu);
	}
	memset(c, 0, sizeof(*c));
	if (asking) {
		c->change = ask.change;
		c->pair = ask.pair;
	}
	f->rd.control = c;
	if (r == 0)
		r = range(f, "control/", err, errlen);
	if (r == 0 && asking) {
		char what[FLEET_NAME_MAX + 16];

		snprintf(what, sizeof(what), "answers/%s/", f->host);
		r = range(f, what, err, errlen);
	}
	f->rd.control = NULL;
	for (size_t i = 0; i < f->next.n; i++)
		if (f->next.m[i].alive && strcmp(f->next.m[i].host, f->host) != 0 && !fleet_member_in_trial(&f->next.m[i]))
			c->expected++;
	return r;
}

/* Whether a host of the pool other than this one is in trial (its pairs wait for their peers' figures). */
static bool peer_in_trial(const struct fleet *f)
{
	for (size_t i = 0; i < f->view.n; i++)
		if (f->view.m[i].alive && strcmp(f->view.m[i].host, f->host) != 0 &&
		    strcmp(f->view.m[i].state, "trial") == 0)
			return true;
	return false;
}

static void round_once(struct fleet *f)
{
	char err[512] = "", state[16], knob[FLEET_NAME_MAX], to[KNOBVAL_TEXT_MAX];
	bool want, canary;
	int r;

	pthread_mutex_lock(&f->mu);
	want = f->want;
	canary = f->canary;
	f->next.want_seq = f->want_seq;
	strcpy(state, f->state);
	strcpy(knob, f->knob);
	strcpy(to, f->to);
	pthread_mutex_unlock(&f->mu);
	f->next.n = 0;
	f->next.nverdicts = 0;
	f->next.rounds++;
	f->rd.own_slot_seen = false;
	/* What the gate rests on: the lease, the member, the slots (this host's checked to be still its own). */
	r = lease_alive(f, err, sizeof(err));
	if (r == 0)
		r = put_member(f, state, knob, err, sizeof(err));
	/* The members first: the pool's max_in_trial is the smallest its alive hosts set. A host that took a slot above
	 * it before it learnt of it keeps it to its verdict (a trial is never cut for this); no one takes another. */
	if (r == 0)
		r = range(f, "members/", err, sizeof(err));
	if (r == 0) {
		char by[FLEET_NAME_MAX];

		f->next.max_in_trial = fleet_pool_max(&f->next, f->max_in_trial, by, sizeof(by));
		if (strcmp(by, f->next.max_in_trial_by) != 0 && by[0])
			log_warn("fleet: %s sets max_in_trial %" PRId64 " for pool %s, below this host's %" PRId64
				 ": at most %" PRId64 " in trial", by, f->next.max_in_trial, f->next.pool, f->max_in_trial,
				 f->next.max_in_trial);
		strcpy(f->next.max_in_trial_by, by);
	}
	/* What the pool judged, and who was ever in it (before the slots: a canary of a value a peer has just proven
	 * takes none, canary_step). A failure here closes no gate (a pool grown large with verdicts must not stop every
	 * trial); the last verdicts read stay. */
	if (r == 0) {
		char err2[512];
		int r2 = put_verdicts(f, err2, sizeof(err2));

		if (r2 == 0)
			r2 = range(f, "known/", err2, sizeof(err2));
		if (r2 == 0)
			r2 = range(f, "verdicts/", err2, sizeof(err2));
		if (r2 < 0) {
			log_warn("fleet: the pool's verdicts not read: %s", err2);
			memcpy(f->next.verdicts, f->view.verdicts, sizeof(f->next.verdicts));
			f->next.nverdicts = f->view.nverdicts;
		}
	}
	if (r == 0)
		r = lease_due(f, err, sizeof(err));
	if (r == 0)
		r = slot_step(f, want, canary, knob, to, err, sizeof(err));
	if (r == 0)
		r = range(f, "slots/", err, sizeof(err));
	f->next.canary[0] = '\0';
	if (r == 0 && f->next.max_in_trial > 1) {
		/* Who the pool's canary is, for people (ngxctl fleet); nothing rests on it. */
		char key[256];
		struct holder h = {key, "", 0};

		snprintf(key, sizeof(key), "%scanary", f->prefix);
		if (etcd_range_prefix(f->etcd, key, canary_holder, &h, err, sizeof(err)) == 0)
			fleet_copy_clean(f->next.canary, sizeof(f->next.canary), h.value);
		err[0] = '\0';
	}
	/* The control group: a failure closes no gate (a pair judged on its own is a trial as on a single host). */
	if (r == 0) {
		char err2[512];

		if (control_round(f, err2, sizeof(err2)) < 0) {
			log_warn("fleet: the pool's control group not read: %s", err2);
			f->next_control = f->control;
		}
	}
	if (r == 0 && f->slot >= 0 && !f->rd.own_slot_seen) {
		log_warn("fleet: trial slot %d of pool %s is no longer %s's (deleted, or etcd lost its data): given up",
			 f->slot, f->next.pool, f->host);
		f->slot = -1;
	}
	f->next.reachable = r == 0;
	if (r == 0)
		f->next.ok_mono_ms = mono_ms();
	f->next.want = want;
	f->next.held = f->slot >= 0;
	f->next.slot = f->slot;
	fleet_copy(f->next.endpoint, sizeof(f->next.endpoint), etcd_endpoint(f->etcd));
	if (r < 0) {
		f->next.failures++;
		snprintf(f->next.why, sizeof(f->next.why), "etcd unreachable: %.230s", err);
		fleet_copy_clean(f->next.why, sizeof(f->next.why), f->next.why);
		if (strcmp(f->next.why, f->view.why) != 0) /* said once, not each round */
			log_warn("fleet: %s: no trial starts until it answers", f->next.why);
	} else if (want && f->slot < 0 && f->canary_proven) {
		snprintf(f->next.why, sizeof(f->next.why), "%.40s has just proven %.48s = %.32s in pool %.40s: this host "
			 "confirms it once its planner has the pool's verdict", f->canary_by, knob, to, f->next.pool);
	} else if (want && f->slot < 0 && f->canary_by[0]) {
		snprintf(f->next.why, sizeof(f->next.why), "the canary of pool %.40s is %.40s's: a change no host of the pool "
			 "has proven yet is tried on one host at a time", f->next.pool, f->canary_by);
	} else if (want && f->slot < 0) {
		char *p = f->next.why;
		size_t left = sizeof(f->next.why);
		int n = snprintf(p, left, "all %" PRId64 " trial slots of pool %s are taken:", f->next.max_in_trial,
				 f->next.pool);

		for (size_t i = 0; i < f->next.n && n > 0 && (size_t)n < left; i++) {
			if (f->next.m[i].slot < 0)
				continue;
			p += n;
			left -= (size_t)n;
			n = snprintf(p, left, " %s%s%s%s", f->next.m[i].host, f->next.m[i].knob[0] ? " (" : "",
				     f->next.m[i].knob, f->next.m[i].knob[0] ? ")" : "");
		}
	} else {
		f->next.why[0] = '\0';
	}
	if (r < 0) { /* what was read of the pool before the error is not the pool: the last whole one is kept */
		memcpy(f->next.verdicts, f->view.verdicts, sizeof(f->next.verdicts));
		f->next.nverdicts = f->view.nverdicts;
	}
	if (f->next.nverdicts != f->view.nverdicts ||
	    memcmp(f->next.verdicts, f->view.verdicts, f->next.nverdicts * sizeof(f->next.verdicts[0])) != 0)
		f->next.verdicts_gen++;
	pthread_mutex_lock(&f->mu);
	f->next.watching = f->watching;
	f->next.wakes = f->wakes;
	f->view = f->next;
	if (r == 0)
		f->control = f->next_control;
	f->watch_lease = f->lease;
	pthread_mutex_unlock(&f->mu);
}

/* ---- the watch (the watcher's thread) ---------------------------------------------------------------------- */

static bool watch_stop(void *arg)
{
	struct fleet *f = arg;
	bool stop;

	pthread_mutex_lock(&f->mu);
	stop = f->stop;
	pthread_mutex_unlock(&f->mu);
	return stop;
}

/* An event of the watch (an etcd_event_fn): a round at once for a change this host reads; KEY NULL: the watch is
 * made, and a round at once reads what changed before it. */
static int watch_event(void *arg, const char *key, int64_t lease, bool deleted)
{
	struct fleet *f = arg;

	if (!key && !f->watch_said) {
		log_info("fleet: watching pool %s through %s: a change wakes this host's round", f->pool,
			 etcd_endpoint(f->wetcd));
		f->watch_said = true;
	}
	if (key) {
		char k[256];

		fleet_copy_clean(k, sizeof(k), key); /* etcd's: anyone's who may write there */
		log_debug("fleet: %s %s%s", deleted ? "deleted" : "put", k, lease ? " (leased)" : "");
	} else {
		f->watch_failed_said = false;
		f->watch_backoff_ms = 0;
	}
	pthread_mutex_lock(&f->mu);
	if (!key || fleet_watch_wakes(f->prefix, f->host, f->watch_lease, key, lease, deleted)) {
		f->watching = true;
		f->wake_seq++;
		f->wakes += key != NULL;
		pthread_cond_signal(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static void *watch_run(void *arg)
{
	struct fleet *f = arg;

	for (;;) {
		struct timespec until;
		char err[512] = "";
		bool stop;
		int64_t at;
		int r = etcd_watch(f->wetcd, f->prefix, FLEET_WATCH_MAX_MS, watch_event, watch_stop, f, err, sizeof(err));

		pthread_mutex_lock(&f->mu);
		if (f->watching) {
			/* The rounds poll again from now: one at once reads what the watch may have missed. */
			f->watching = false;
			f->wake_seq++;
			pthread_cond_signal(&f->cv);
		}
		stop = f->stop;
		pthread_mutex_unlock(&f->mu);
		if (stop)
			break;
		if (r == 0)
			continue; /* made anew after FLEET_WATCH_MAX_MS */
		/* Said once until it works again (with several endpoints each says another error): while etcd is away
		 * the rounds say so each time they fail. */
		if (!f->watch_failed_said)
			log_info("fleet: the watch of pool %s ended: %s (its rounds ask etcd each second while a host is "
				 "in trial or this one waits for a slot, until it watches again)", f->pool, err);
		f->watch_failed_said = true;
		f->watch_said = false;
		/* Each watch authenticates anew (a bcrypt on etcd): not each second for as long as it fails. */
		f->watch_backoff_ms = f->watch_backoff_ms ? f->watch_backoff_ms * 2 : 1000;
		if (f->watch_backoff_ms > FLEET_WATCH_BACKOFF_MAX_MS)
			f->watch_backoff_ms = FLEET_WATCH_BACKOFF_MAX_MS;
		at = mono_ms() + f->watch_backoff_ms;
		until.tv_sec = at / 1000;
		until.tv_nsec = at % 1000 * 1000000;
		pthread_mutex_lock(&f->mu);
		while (!f->stop && pthread_cond_timedwait(&f->wcv, &f->mu, &until) == 0)
			;
		stop = f->stop;
		pthread_mutex_unlock(&f->mu);
		if (stop)
			break;
	}
	return NULL;
}

static void *run(void *arg)
{
	struct fleet *f = arg;
	char err[256];

	for (;;) {
		struct timespec until;
		int64_t period, t0 = mono_ms(), took;
		uint64_t seen, wseen;

		pthread_mutex_lock(&f->mu);
		wseen = f->wake_seq; /* before the round: an ask or an answer queued during it wakes the next at once */
		pthread_mutex_unlock(&f->mu);
		round_once(f);
		took = mono_ms() - t0;
		if (took > f->ttl_ms / 3 && !f->slow_said)
			log_warn("fleet: a round with etcd took %" PRId64 " ms, more than a third of the lease (%" PRId64
				 " ms): etcd or this host is slow; the lease is renewed between its requests", took, f->ttl_ms);
		f->slow_said = took > f->ttl_ms / 3;
		/* A host that waits for a slot asks again each second: a slot given back is taken within one, not within
		 * a third of the lease (the pool's hosts behind one another each waited that much more). */
		pthread_mutex_lock(&f->mu);
		period = ((f->view.want && !f->view.held) || f->asking || peer_in_trial(f)) && f->view.reachable &&
				 !f->watching && f->period_ms > FLEET_WAIT_POLL_MS
			 ? FLEET_WAIT_POLL_MS
			 : f->period_ms;
		pthread_mutex_unlock(&f->mu);
		/* From the round's start: a slow round shortens the wait (lease_due renews the lease within a round), but
		 * a quarter of the period stays between two rounds, so that an etcd already slow is not asked back to
		 * back. */
		t0 = t0 + period > mono_ms() + period / 4 ? t0 + period : mono_ms() + period / 4;
		until.tv_sec = t0 / 1000;
		until.tv_nsec = t0 % 1000 * 1000000;
		pthread_mutex_lock(&f->mu);
		seen = f->next.want_seq; /* the one the round used: a change during the round wakes it at once */
		/* Until the period ends, or sooner when the controller's want changed (a slot to take or to give, a
		 * canary become a confirmation), or an ask or an answer waits to be put. */
		while (!f->stop && f->want_seq == seen && f->wake_seq == wseen &&
		       pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0)
			;
		if (f->stop) {
			pthread_mutex_unlock(&f->mu);
			break;
		}
		pthread_mutex_unlock(&f->mu);
	}
	/* Leaving: the lease's keys (the member and a slot) go with it. */
	if (f->lease && etcd_revoke(f->etcd, f->lease, err, sizeof(err)) < 0)
		log_warn("fleet: leaving pool %s: %s (its keys end with the lease)", f->view.pool, err);
	return NULL;
}

/* ---- the loop's side -------------------------------------------------------------------------------------- */

int fleet_new(const struct config *cfg, struct fleet **out, char *err, size_t errlen)
{
	struct fleet *f = calloc(1, sizeof(*f));
	struct etcd_opts o = {.endpoints = cfg->fleet_endpoints, .ca = cfg->fleet_ca, .cert = cfg->fleet_cert,
			      .key = cfg->fleet_key, .user = cfg->fleet_user, .timeout_ms = 2000};
	pthread_condattr_t ca;
	struct utsname u;
	char password[256] = "";
	int r;

	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (cfg->fleet_user[0] &&
	    (r = read_password(cfg->fleet_password_file, password, sizeof(password), err, errlen)) < 0) {
		free(f);
		return r;
	}
	o.password = password;
	r = etcd_new(&o, &f->etcd);
	if (r == 0 && (r = etcd_new(&o, &f->wetcd)) < 0)
		etcd_free(f->etcd);
	memset(password, 0, sizeof(password));
	if (r < 0) {
		snprintf(err, errlen, "[fleet] endpoints: %s", r == -EINVAL ? "none" : strerror(-r));
		free(f);
		return r;
	}
	if (cfg->fleet_host[0])
		fleet_copy(f->host, sizeof(f->host), cfg->fleet_host);
	else if (gethostname(f->host, sizeof(f->host) - 1) < 0 || !f->host[0])
		strcpy(f->host, "localhost");
	/* A hostname with a dot is fine; one with a slash would name another key. */
	for (char *p = f->host; *p; p++)
		if (*p == '/')
			*p = '_';
	snprintf(f->prefix, sizeof(f->prefix), "/ngx-autotune/pools/%s/", cfg->fleet_pool);
	fleet_copy(f->pool, sizeof(f->pool), cfg->fleet_pool);
	f->ttl_s = (cfg->fleet_lease_ttl_ms + 999) / 1000;
	f->ttl_ms = cfg->fleet_lease_ttl_ms;
	f->period_ms = cfg->fleet_lease_ttl_ms / 3 > 500 ? cfg->fleet_lease_ttl_ms / 3 : 500;
	f->max_in_trial = cfg->fleet_max_in_trial;
	f->slot = -1;
	f->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	fleet_copy(f->kernel, sizeof(f->kernel), uname(&u) == 0 ? u.release : "");
	strcpy(f->state, "observe");
	fleet_copy(f->next.pool, sizeof(f->next.pool), cfg->fleet_pool);
	fleet_copy(f->next.host, sizeof(f->next.host), f->host);
	f->next.max_in_trial = f->next.max_in_trial_set = f->max_in_trial;
	f->next.slot = -1;
	snprintf(f->next.why, sizeof(f->next.why), "etcd not asked yet");
	f->view = f->next;
	pthread_mutex_init(&f->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cv, &ca);
	pthread_cond_init(&f->wcv, &ca);
	pthread_condattr_destroy(&ca);
	r = pthread_create(&f->thread, NULL, run, f);
	if (r != 0) {
		snprintf(err, errlen, "the fleet's thread: %s", strerror(r));
		pthread_cond_destroy(&f->cv);
		pthread_cond_destroy(&f->wcv);
		pthread_mutex_destroy(&f->mu);
		etcd_free(f->etcd);
		etcd_free(f->wetcd);
		free(f);
		return -r;
	}
	/* Without a watch the rounds poll as they did: a pool works the same, only with more requests. */
	r = pthread_create(&f->watcher, NULL, watch_run, f);
	if (r != 0)
		log_warn("fleet: no watch of pool %s (%s): its rounds poll etcd", cfg->fleet_pool, strerror(r));
	f->watcher_started = r == 0;
	*out = f;
	return 0;
}

void fleet_free(struct fleet *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_signal(&f->cv);
	pthread_cond_signal(&f->wcv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thread, NULL);
	if (f->watcher_started)
		pthread_join(f->watcher, NULL); /* within a second: libcurl asks watch_stop at least that often */
	pthread_cond_destroy(&f->cv);
	pthread_cond_destroy(&f->wcv);
	pthread_mutex_destroy(&f->mu);
	etcd_free(f->etcd);
	etcd_free(f->wetcd);
	free(f);
}

void fleet_tell(struct fleet *f, bool want, bool canary, const char *state, const char *knob, const char *to)
{
	pthread_mutex_lock(&f->mu);
	if (want != f->want || (want && canary != f->canary)) {
		f->want_seq++;
		pthread_cond_signal(&f->cv);
	}
	f->want = want;
	f->canary = canary;
	fleet_copy(f->state, sizeof(f->state), state);
	fleet_copy(f->knob, sizeof(f->knob), knob);
	fleet_copy(f->to, sizeof(f->to), to);
	pthread_mutex_unlock(&f->mu);
}

bool fleet_gate(struct fleet *f, char *why, size_t whylen)
{
	bool open;

	int64_t age;

	pthread_mutex_lock(&f->mu);
	age = mono_ms() - f->view.ok_mono_ms;
	/* Held as of a round that saw the controller's want as it is now, and recent: a round blocked on an etcd that
	 * went away (its lease may have ended, its slot be another's) or one that gave the slot back meanwhile does
	 * not open it. */
	open = f->view.reachable && f->view.held && f->view.want_seq == f->want_seq && age < f->ttl_ms / 2;
	if (open)
		snprintf(why, whylen, "%s", "");
	else if (f->view.reachable && f->view.held && age >= f->ttl_ms / 2)
		snprintf(why, whylen, "etcd has not answered for %lld ms", (long long)age);
	else
		snprintf(why, whylen, "%s", f->view.why[0] ? f->view.why : "waiting for a trial slot");
	pthread_mutex_unlock(&f->mu);
	return open;
}

uint64_t fleet_verdicts_gen(struct fleet *f)
{
	uint64_t g;

	pthread_mutex_lock(&f->mu);
	g = f->view.verdicts_gen;
	pthread_mutex_unlock(&f->mu);
	return g;
}

void fleet_publish(struct fleet *f, const struct pool_verdict *v)
{
	pthread_mutex_lock(&f->mu);
	if (f->npending == sizeof(f->pending) / sizeof(f->pending[0])) {
		memmove(f->pending, f->pending + 1, (f->npending - 1) * sizeof(f->pending[0]));
		memmove(f->pending_seq, f->pending_seq + 1, (f->npending - 1) * sizeof(f->pending_seq[0]));
		f->npending--;
	}
	f->pending_seq[f->npending] = ++f->next_seq;
	f->pending[f->npending] = *v;
	fleet_copy(f->pending[f->npending].host, sizeof(v->host), f->host);
	fleet_copy(f->pending[f->npending].kernel, sizeof(v->kernel), f->kernel);
	f->pending[f->npending].cpus = f->cpus;
	f->pending[f->npending].at_ms = wall_ms();
	f->npending++;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void fleet_ask(struct fleet *f, const struct fleet_ask *ask)
{
	pthread_mutex_lock(&f->mu);
	if ((ask != NULL) != f->asking || (ask && memcmp(ask, &f->ask, sizeof(*ask)) != 0)) {
		f->asking = ask != NULL;
		if (ask)
			f->ask = *ask;
		f->wake_seq++;
		pthread_cond_signal(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
}

void fleet_answer(struct fleet *f, const char *host, int64_t change, unsigned pair, double d)
{
	struct fleet_answer_q *a;

	pthread_mutex_lock(&f->mu);
	if (f->nanswers == FLEET_ASKS_MAX) { /* the oldest dropped: its pair was judged long since */
		memmove(f->answers, f->answers + 1, (f->nanswers - 1) * sizeof(f->answers[0]));
		f->nanswers--;
	}
	a = &f->answers[f->nanswers++];
	fleet_copy(a->host, sizeof(a->host), host);
	a->change = change;
	a->pair = pair;
	a->d = d;
	f->wake_seq++;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void fleet_control(struct fleet *f, struct fleet_control *out)
{
	pthread_mutex_lock(&f->mu);
	*out = f->control;
	pthread_mutex_unlock(&f->mu);
}

void fleet_facts(struct fleet *f, struct pool_facts *out)
{
	out->host = f->host;
	out->kernel = f->kernel;
	out->cpus = f->cpus;
}

void fleet_view(struct fleet *f, struct fleet_view *out)
{
	pthread_mutex_lock(&f->mu);
	*out = f->view;
	pthread_mutex_unlock(&f->mu);
}
