/*
 * fleet: this agent as a member of a pool of hosts ([fleet] in agent.conf), coordinated through etcd (etcd.h).
 *
 * Owns a thread of its own that talks to etcd, never the loop: the loop tells it each tick what the controller
 * wants (a trial slot) and what it does (its state, its knob), and reads back whether a trial may start (the gate)
 * and the pool as last seen. Keys, under /ngx-autotune/pools/POOL/:
 *   members/HOST  this host's facts (JSON: agent, kernel, CPUs, state, knob), bound to its lease (alive while kept)
 *   known/HOST    the same host's name and when it joined, without a lease (so that one gone is still listed)
 *   slots/I       the host in trial on slot I (0 <= I < max_in_trial), made only where none is (a transaction on
 *                 its create revision) and bound to the lease: a host that dies frees its slot when its lease ends
 *   verdicts/KNOB/HOST  HOST's last verdict on KNOB (kept, or refuted: harm shown) with the facts it was judged
 *                 under, without a lease: what the others may propose first (core/pool.h)
 *   control/HOST  HOST's trial pair that waits for its peers' figures: the objective and the two measured windows
 *                 (fleet_ask), bound to its lease
 *   answers/HOST/PEER  PEER's figure for that pair: the objective's signed log ratio between the same two windows on
 *                 PEER, or none (blind, or in trial itself), bound to PEER's lease
 * Fail closed: without etcd (unreachable, refused, a lease lost) no trial starts; a trial under way goes on as its
 * policy says. It joins again by itself when etcd answers.
 */
#ifndef NGXAT_FLEET_H
#define NGXAT_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "core/pool.h"

#define FLEET_MEMBERS_MAX 64
#define FLEET_NAME_MAX 64
#define FLEET_PROVEN_WAIT_MS 5000 /* a canary waits this long for its planner to take a peer's proof of its value */
#define FLEET_WAIT_POLL_MS 1000 /* a host waiting for a trial slot asks etcd this often (else every third of the lease);
				  * so do all while a host of the pool is in trial (its pairs wait for their peers); not
				  * while it watches the pool's keys: a change wakes its round then */
#define FLEET_WATCH_MAX_MS 300000 /* a watch is made anew this often (a stream that went quiet for good is ended) */
#define FLEET_WATCH_BACKOFF_MAX_MS 30000 /* a watch that fails is tried again after 1 s, then twice as long, to this */
#define FLEET_CONTROL_WAIT_MS 5000 /* a trial pair waits this long for its peers' figures (controller_set_control) */
#define FLEET_ASKS_MAX 8
#define FLEET_ASK_MAX_AGE_MS 60000 /* a peer's ask whose later window ended longer ago than this gets no figure */

struct fleet_member {
	char host[FLEET_NAME_MAX];
	bool alive;            /* its lease lives (members/HOST exists) */
	char state[16];        /* its controller's state ("observe", "trial", ...) */
	char knob[FLEET_NAME_MAX]; /* the knob of its proposal or trial, "" for none */
	char agent[32];        /* its version */
	char kernel[64];
	int64_t cpus;
	int slot;              /* the trial slot it holds, -1 for none */
	int64_t max_in_trial;  /* its [fleet] max_in_trial, 0: not said (an older agent) */
};

struct fleet_view {
	char pool[FLEET_NAME_MAX], host[FLEET_NAME_MAX];
	char endpoint[CONFIG_PATH_MAX]; /* the one that answered last */
	bool reachable;        /* the last round reached etcd and holds a lease */
	char why[256];         /* why not, or why the gate is closed; "" when open */
	int64_t rounds, failures; /* rounds with etcd, and those that failed */
	int64_t max_in_trial;  /* the pool's: the smallest its alive members set (fleet_pool_max) */
	int64_t max_in_trial_set; /* this host's [fleet] max_in_trial */
	char max_in_trial_by[FLEET_NAME_MAX]; /* the host that set the pool's, when it is below this host's */
	char canary[FLEET_NAME_MAX]; /* the host whose trial holds the pool's canary key ("" none, or max_in_trial 1) */
	bool want, held;       /* the controller wants a slot; this host holds one */
	int slot;
	size_t n;              /* members, this host's included */
	struct fleet_member m[FLEET_MEMBERS_MAX];
	size_t nverdicts;      /* each host's last verdict on each knob (verdicts/KNOB/HOST), cleaned */
	struct pool_verdict verdicts[POOL_VERDICTS_MAX];
	uint64_t verdicts_gen; /* one more each time they changed */
	uint64_t want_seq;     /* the loop's want as this round saw it (fleet_tell's count of changes) */
	int64_t ok_mono_ms;    /* when a round last reached etcd wholly (CLOCK_MONOTONIC) */
	bool watching;         /* etcd streams the pool's changes to this host (its rounds go when one comes) */
	int64_t wakes;         /* changes of the pool that woke its round (several at once wake one) */
};

/* A trial host's ask for its peers' figures over one pair's two blocks (control/HOST). */
struct fleet_ask {
	char host[FLEET_NAME_MAX];      /* who asks (read back; this host's own says "") */
	int64_t change;                 /* its trial: the journal's change id */
	unsigned pair;                  /* 1-based */
	char metric[POLICY_METRIC_MAX]; /* the trial's objective ... */
	enum policy_direction dir;      /* ... and which way is better */
	int64_t a_ms[2], b_ms[2];       /* the measured windows [from, to) of its A and B blocks, ms since the epoch */
};

/* The control group as the last round read it. */
struct fleet_control {
	size_t nasks;                   /* the peers' asks (control/PEER), this host's not among them */
	struct fleet_ask asks[FLEET_ASKS_MAX];
	int64_t change;                 /* this host's ask the answers below are to (0: none asked) */
	unsigned pair;
	unsigned answered;              /* peers that answered it ... */
	unsigned peers;                 /* ... of them those with a figure, whose figures sum to D_SUM */
	double d_sum;
	unsigned expected;              /* the pool's alive hosts not in trial, this one not counted: who may answer
					 * (answers from others are not counted) */
};

struct fleet;

/* What one round reads of the pool's keys (fleet_take_key): this host's identity in, the round's view and what it
 * found of this host's out. */
struct fleet_round {
	const char *prefix;     /* the pool's keys: /ngx-autotune/pools/POOL/ */
	const char *host;       /* this host */
	int slot;               /* the slot it holds, or -1 */
	int64_t lease;          /* its lease, 0: none */
	struct fleet_view *next; /* the round's view: members and verdicts added */
	bool own_slot_seen;     /* slots/SLOT found as this host's, under its lease */
	char stale[16][FLEET_NAME_MAX]; /* slots/I (I < 16) held without a lease: never freed by themselves */
	struct fleet_control *control;  /* the peers' asks and the answers to this host's CHANGE and PAIR added */
};
/* One key of the pool and its value read back (an etcd_kv_fn; CTX a struct fleet_round): a member, a host known,
 * a slot, a verdict, a peer's ask, an answer to this host's; anything else ignored. Always 0. */
int fleet_take_key(void *ctx, const char *key, const char *value, int64_t lease);
/* Whether a change of KEY (put under LEASE, or DELETED) in pool PREFIX wakes HOST's round, whose lease is OWN: not
 * its own keys' puts (under its lease, or known/HOST and verdicts/KNOB/HOST), nor the answers to another host's asks (each peer's answer would wake every host of the pool:
 * a round of each per answer); everything else of the pool it reads. */
bool fleet_watch_wakes(const char *prefix, const char *host, int64_t own, const char *key, int64_t lease, bool deleted);
/* SRC (NULL: "") into DST of LEN bytes, cut to fit; the _clean one with anything but printable ASCII made '?' (the
 * API's JSON must stay valid UTF-8, a terminal's text free of escapes). */
void fleet_copy(char *dst, size_t len, const char *src);
/* The pool's max_in_trial: the smallest of OWN and of what V's alive members set (a member that says none counts as
 * agreeing), so that hosts that disagree never put more in trial than the most careful of them allows; BY (WHOLEN
 * bytes) gets the host that set it when it is below OWN, "" otherwise. */
int64_t fleet_pool_max(const struct fleet_view *v, int64_t own, char *by, size_t bylen);
void fleet_copy_clean(char *dst, size_t len, const char *src);

/* Join CFG's pool ([fleet] endpoints set): the thread started; it reaches etcd in the background. 0, or -errno with
 * ERR (a password file that cannot be read, no memory). */
int fleet_new(const struct config *cfg, struct fleet **out, char *err, size_t errlen);
/* Leave: the thread stopped, the lease revoked (the member key and a slot freed at once, when etcd answers within
 * its timeout). NULL is fine. */
void fleet_free(struct fleet *f);
/* What the loop says each tick: whether the controller WANTs a slot (a proposal ready to start, a calibration or
 * trial under way, a write of one in flight), whether its change is a CANARY (no host of the pool proved it: with
 * max_in_trial above 1, one canary at a time), its STATE, KNOB and the value TO it tries. A change of WANT (or
 * CANARY) wakes the thread. */
void fleet_tell(struct fleet *f, bool want, bool canary, const char *state, const char *knob, const char *to);
/* Whether a trial may start: this host holds a slot, as of a round that saw the controller's want as it is now
 * and reached etcd less than half a lease ago. WHY says why not. */
bool fleet_gate(struct fleet *f, char *why, size_t whylen);
/* The pool as last seen. */
void fleet_view(struct fleet *f, struct fleet_view *out);
/* The view's verdicts_gen, cheaply: whether fleet_view is worth copying. */
uint64_t fleet_verdicts_gen(struct fleet *f);
/* This host's verdict V (its knob, values, kept, symptom, summary; host, facts and time are filled here) published
 * at the next round. Up to 8 wait; more are dropped (the oldest kept). */
void fleet_publish(struct fleet *f, const struct pool_verdict *v);
/* This host's trial pair that waits for its peers' figures (ASK; NULL: none): put at the next round, at once. */
void fleet_ask(struct fleet *f, const struct fleet_ask *ask);
/* This host's figure D (NAN: none: blind, or in trial itself) for HOST's ask of CHANGE and PAIR: put at once. */
void fleet_answer(struct fleet *f, const char *host, int64_t change, unsigned pair, double d);
/* The control group as last read. */
void fleet_control(struct fleet *f, struct fleet_control *out);
/* Whether member M is in a trial or calibration (its pairs are not a control; it answers no figure). */
bool fleet_member_in_trial(const struct fleet_member *m);
/* The ask's JSON value (control/HOST), and one read back (HOST set by the caller): 0, or -EINVAL for a value that
 * is not a valid ask (windows empty, reversed, overlapping, longer than an hour or more than an hour apart, a pair
 * outside 1..JUDGE_PAIRS_MAX, a metric's name of other characters than a registry's: [a-z0-9._]). */
char *fleet_ask_json(const struct fleet_ask *ask);
int fleet_ask_parse(const char *value, struct fleet_ask *out);
/* This host's facts, as its verdicts carry them (for pool_causes). Valid while F lives. */
void fleet_facts(struct fleet *f, struct pool_facts *out);

#endif
