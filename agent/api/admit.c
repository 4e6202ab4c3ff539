/*
 * admit: the shares of the API's connection table. See admit.h.
 */
#include "build-config.h"

#include "api/admit.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS_MAX (2 * ADMIT_TOTAL_MAX)

static unsigned at_least(unsigned v, unsigned min)
{
	return v < min ? min : v;
}

void admit_limits_for(unsigned long nofile, struct admit_limits *out)
{
	/* Each connection is one file; a connection closing keeps its file until MHD lets go: half of what is left. */
	unsigned long room = nofile > ADMIT_FDS_KEPT ? (nofile - ADMIT_FDS_KEPT) / 2 : 0;
	unsigned total = room > ADMIT_TOTAL_MAX ? ADMIT_TOTAL_MAX : (unsigned)room;

	out->total = at_least(total, ADMIT_TOTAL_MIN);
	out->per_peer = at_least(out->total / 8, 4);
	/* Above the event streams' cap (16): on loopback every local client shares 127.0.0.1. */
	out->per_addr = at_least(out->total / 16, 2);
	out->tokenless = at_least(out->total / 8, 4);
}

size_t admit_slots(const struct admit_limits *lim)
{
	size_t n = 2 * (size_t)lim->total;

	return n > SLOTS_MAX ? SLOTS_MAX : n;
}

static int key_cmp(const struct admit_key *a, const struct admit_key *b)
{
	if (a->tcp != b->tcp)
		return a->tcp ? 1 : -1;
	if (!a->tcp)
		return a->uid < b->uid ? -1 : a->uid > b->uid;
	return memcmp(a->addr, b->addr, sizeof(a->addr));
}

bool admit_key_eq(const struct admit_key *a, const struct admit_key *b)
{
	return key_cmp(a, b) == 0;
}

enum scope { SCOPE_CLIENT, SCOPE_TOKENLESS, SCOPE_PENDING, SCOPE_ALL };

static bool live(const struct admit_entry *e)
{
	return e->used && !e->closing;
}

static bool in_scope(const struct admit_entry *e, enum scope s, const struct admit_key *k)
{
	if (!live(e))
		return false;
	switch (s) {
	case SCOPE_CLIENT: return admit_key_eq(&e->key, k);
	case SCOPE_TOKENLESS: return e->key.tcp && !e->tokened && !e->pending;
	case SCOPE_PENDING: return e->key.tcp && e->pending;
	default: return true;
	}
}

struct sorted {
	const struct admit_entry *e;
	size_t i;
};

static int sorted_cmp(const void *pa, const void *pb)
{
	const struct sorted *a = pa, *b = pb;

	return key_cmp(&a->e->key, &b->e->key);
}

/*
 * The victim in scope S: an entry not being answered, of the client holding the most entries in S, provided it
 * holds more than MORE_THAN; the oldest of that client's. Marked closing. False: none may go.
 */
static bool evict(struct admit_entry *e, size_t n, enum scope s, const struct admit_key *k, unsigned more_than,
		  size_t *victim)
{
	struct sorted v[SLOTS_MAX];
	size_t m = 0, best = n, best_count = 0;

	for (size_t i = 0; i < n && m < SLOTS_MAX; i++)
		if (in_scope(&e[i], s, k))
			v[m++] = (struct sorted){&e[i], i};
	qsort(v, m, sizeof(v[0]), sorted_cmp);
	for (size_t g = 0, end; g < m; g = end) {
		size_t oldest = n;

		for (end = g; end < m && sorted_cmp(&v[g], &v[end]) == 0; end++)
			if (!v[end].e->busy && (oldest == n || v[end].e->since_ms < e[oldest].since_ms))
				oldest = v[end].i;
		if (oldest == n || end - g <= more_than)
			continue;
		if (end - g > best_count || (end - g == best_count && e[oldest].since_ms < e[best].since_ms)) {
			best = oldest;
			best_count = end - g;
		}
	}
	if (best == n)
		return false;
	e[best].closing = true;
	*victim = best;
	return true;
}

static size_t count(const struct admit_entry *e, size_t n, enum scope s, const struct admit_key *k)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += in_scope(&e[i], s, k);
	return c;
}

void admit_decide(struct admit_entry *e, size_t n, const struct admit_limits *lim, const struct admit_key *k,
		  struct admit_decision *out)
{
	size_t mine = count(e, n, SCOPE_CLIENT, k);
	bool evicted = false;

	*out = (struct admit_decision){.verdict = ADMIT_REFUSE, .slot = n, .victim = n};
	for (size_t i = 0; i < n && out->slot == n; i++)
		if (!e[i].used)
			out->slot = i;
	if (out->slot == n) {
		out->why = "every slot is taken by connections still closing";
		return;
	}
	/* Over its own share, a client's newest connection replaces its own oldest idle one. */
	if (mine >= (k->tcp ? lim->per_addr : lim->per_peer)) {
		if (!evict(e, n, SCOPE_CLIENT, k, 0, &out->victim)) {
			out->why = k->tcp ? "this address's share is taken" : "this user's share is taken";
			return;
		}
		evicted = true;
	}
	/* Whether a TCP newcomer has a token its head will show. Over the tokenless share it takes a place from an
	 * address holding more than it, else it waits pending for its head (as many as the share again: a token
	 * holder's connection is not refused because others hold the share, found with 64 slow readers). */
	if (!evicted && k->tcp && count(e, n, SCOPE_TOKENLESS, k) >= lim->tokenless) {
		if (evict(e, n, SCOPE_TOKENLESS, k, (unsigned)mine + 1, &out->victim)) {
			evicted = true;
		} else if (count(e, n, SCOPE_PENDING, k) < lim->tokenless) {
			out->pending = true;
		} else {
			out->why = "the share of connections without a token is taken";
			return;
		}
	}
	if (!evicted && count(e, n, SCOPE_ALL, k) >= lim->total) {
		if (!evict(e, n, SCOPE_ALL, k, (unsigned)mine + 1, &out->victim)) {
			out->why = "every connection is taken";
			return;
		}
		evicted = true;
	}
	out->verdict = evicted ? ADMIT_EVICT : ADMIT_ACCEPT;
	out->why = NULL;
}

bool admit_head(struct admit_entry *e, size_t n, const struct admit_limits *lim, size_t slot, bool tokened)
{
	struct admit_entry *x = &e[slot];

	if (tokened)
		x->tokened = true;
	if (!x->pending)
		return true;
	x->pending = false;
	/* Counted in the share now, itself included. */
	if (tokened || count(e, n, SCOPE_TOKENLESS, &x->key) <= lim->tokenless)
		return true;
	x->pending = true;
	return false;
}
