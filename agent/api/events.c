/*
 * events: the ring of recent events for GET /v1/events. See events.h.
 */
#include "build-config.h"

#include "api/events.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/controller.h"
#include "core/judge.h"
#include "api/verdict_json.h"
#include "api/wire_text.h"
#include "proto.h"

struct item {
	uint64_t id;
	const char *type;
	char *wire;
	size_t len;
};

static struct {
	bool ready;
	struct item ring[EVENTS_RING]; /* event ID is at ring[ID % EVENTS_RING] while oldest <= ID <= last */
	uint64_t oldest, last;         /* last = oldest - 1 when empty */
	size_t bytes;
	void (*listener)(void *ctx);
	void *listener_ctx;
	char peer[64];
	uint64_t audits;     /* audit rows written so far (events_audit) */
	int64_t progress_id; /* events_trial_progress: the trial and pairs last published */
	unsigned progress_pairs;
} ev;

void events_init(uint64_t first_id)
{
	events_reset();
	ev.ready = true;
	ev.oldest = first_id ? first_id : 1;
	ev.last = ev.oldest - 1;
}

static void drop_oldest(void)
{
	struct item *it = &ev.ring[ev.oldest % EVENTS_RING];

	ev.bytes -= it->len;
	free(it->wire);
	memset(it, 0, sizeof(*it));
	ev.oldest++;
}

void events_reset(void)
{
	while (ev.ready && ev.oldest <= ev.last)
		drop_oldest();
	ev.ready = false;
	ev.bytes = 0;
	ev.progress_id = 0;
	ev.progress_pairs = 0;
}

void events_set_listener(void (*fn)(void *ctx), void *ctx)
{
	ev.listener = fn;
	ev.listener_ctx = ctx;
}

/* An event too large for the ring keeps its id and knob and says it was cut; the endpoint it came from has it. */
static char *dump(json_t *data)
{
	char *s = json_dumps(data, JSON_COMPACT);
	json_t *small;

	if (!s || strlen(s) <= EVENTS_DATA_MAX)
		return s;
	free(s);
	small = json_pack("{s:b}", API_K_TRUNCATED, 1);
	if (!small)
		return NULL;
	if (json_object_get(data, API_K_ID))
		json_object_set(small, API_K_ID, json_object_get(data, API_K_ID));
	if (json_is_string(json_object_get(data, API_K_KNOB)))
		json_object_set(small, API_K_KNOB, json_object_get(data, API_K_KNOB));
	s = json_dumps(small, JSON_COMPACT);
	json_decref(small);
	return s;
}

int events_publish(const char *type, json_t *data)
{
	char *s, *wire;
	struct item *it;
	int n;

	if (!ev.ready || !json_is_object(data) || !type) {
		json_decref(data);
		return ev.ready ? -EINVAL : -ENODEV;
	}
	s = dump(data);
	json_decref(data);
	if (!s)
		return -ENOMEM;
	/* JSON_COMPACT escapes newlines inside strings, so the data is one line, as a data: field must be. */
	n = asprintf(&wire, "id: %llu\nevent: %s\ndata: %s\n\n", (unsigned long long)(ev.last + 1), type, s);
	free(s);
	if (n < 0)
		return -ENOMEM;
	if (ev.last - ev.oldest + 1 >= EVENTS_RING)
		drop_oldest();
	while (ev.oldest <= ev.last && ev.bytes + (size_t)n > EVENTS_RING_BYTES)
		drop_oldest();
	ev.last++;
	it = &ev.ring[ev.last % EVENTS_RING];
	it->id = ev.last;
	it->type = type;
	it->wire = wire;
	it->len = (size_t)n;
	ev.bytes += (size_t)n;
	if (ev.listener)
		ev.listener(ev.listener_ctx);
	return 0;
}

uint64_t events_last_id(void)
{
	return ev.last;
}

uint64_t events_oldest_id(void)
{
	return ev.oldest;
}

int events_get(uint64_t id, struct events_view *out)
{
	const struct item *it;

	if (!ev.ready || id < ev.oldest || id > ev.last)
		return -ENOENT;
	it = &ev.ring[id % EVENTS_RING];
	out->id = it->id;
	out->type = it->type;
	out->wire = it->wire;
	out->len = it->len;
	return 0;
}

void events_set_peer(const char *peer)
{
	snprintf(ev.peer, sizeof(ev.peer), "%s", peer ? peer : "");
}

const char *events_peer(void)
{
	return ev.peer;
}

uint64_t events_audit_count(void)
{
	return ev.audits;
}

/* ---- publishing sites ------------------------------------------------------------------------------------ */

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

void events_proposal(int64_t id, const char *knob, const char *from, const char *to, const char *state,
		     const char *actor, const char *why, int64_t now_ms)
{
	/* An operator's decision carries their comment; the agent's own steps their reason. */
	bool decision = strcmp(state, API_PROPOSAL_APPROVED) == 0 || strcmp(state, API_PROPOSAL_REJECTED) == 0;

	events_publish(API_EV_PROPOSAL,
		       json_pack("{s:I, s:s, s:s?, s:s?, s:s, s:o?, s:o?, s:I}", API_K_ID, (json_int_t)id, API_K_KNOB,
				 knob ? knob : "", API_K_FROM, from, API_K_TO, to, API_K_STATE, state, API_K_ACTOR,
				 wire_text(actor), decision ? API_K_COMMENT : API_K_WHY, wire_text(why), API_K_TS,
				 (json_int_t)now_ms));
}

void events_trial_arm(int64_t id, const char *knob, const char *arm, const char *value,
		      const struct controller_report *rep, int64_t now_ms)
{
	events_publish(API_EV_TRIAL,
		       json_pack("{s:s, s:I, s:s, s:s, s:s, s:i, s:i, s:s, s:I}", API_K_PHASE, API_PHASE_ARM, API_K_ID,
				 (json_int_t)id, API_K_KNOB, knob, API_K_ARM, arm, API_K_VALUE, value, API_K_PAIR,
				 (int)rep->pair, API_K_PAIRS, (int)rep->pairs, API_K_STATE,
				 controller_state_name(rep->state), API_K_TS, (json_int_t)now_ms));
}

void events_trial_progress(int64_t id, const char *knob, const struct judge_evidence *e, int64_t now_ms)
{
	const struct judge_pair_ev *p;
	json_t *o;

	if (!e || e->npairs == 0 || e->npairs > JUDGE_PAIRS_MAX ||
	    (id == ev.progress_id && e->npairs == ev.progress_pairs))
		return;
	ev.progress_id = id;
	ev.progress_pairs = e->npairs;
	p = &e->pair[e->npairs - 1];
	o = json_pack("{s:s, s:I, s:s, s:i, s:i, s:i, s:s, s:b, s:I}", API_K_PHASE, API_PHASE_PAIR, API_K_ID,
		      (json_int_t)id, API_K_KNOB, knob, API_K_PAIR, (int)e->npairs, API_K_PAIRS, (int)e->planned,
		      API_K_VALID, (int)e->nvalid, API_K_ORDER, p->b_first ? API_ORDER_BA : API_ORDER_AB, API_K_VOID, p->is_void, API_K_TS,
		      (json_int_t)now_ms);
	if (!o)
		return;
	json_object_set_new(o, API_K_A, num(p->a));
	json_object_set_new(o, API_K_B, num(p->b));
	json_object_set_new(o, API_K_D, num(p->d));
	json_object_set_new(o, API_K_EFFECT, num(e->effect));
	json_object_set_new(o, API_K_EFFECT_LO, num(e->effect_lo));
	json_object_set_new(o, API_K_EFFECT_HI, num(e->effect_hi));
	events_publish(API_EV_TRIAL, o);
}

void events_verdict(int64_t id, const char *knob, const char *verdict, const char *state, const char *reason,
		    const struct judge_evidence *e, int64_t now_ms)
{
	json_t *evj = e ? verdict_json_evidence(e) : NULL;

	events_publish(API_EV_VERDICT,
		       json_pack("{s:I, s:s, s:s, s:s, s:s, s:o, s:I}", API_K_ID, (json_int_t)id, API_K_KNOB, knob,
				 API_K_VERDICT, verdict, API_K_STATE, state, API_K_REASON, reason ? reason : "",
				 API_K_EVIDENCE, evj ? evj : json_object(), API_K_TS, (json_int_t)now_ms));
	/* A new trial may reuse nothing of this one's progress. */
	ev.progress_id = 0;
}

void events_change(int64_t id, enum change_state state, const char *detail, int64_t now_ms)
{
	events_publish(API_EV_CHANGE, json_pack("{s:I, s:s, s:o, s:I}", API_K_ID, (json_int_t)id, API_K_STATE,
						change_state_name(state), API_K_DETAIL, wire_text(detail ? detail : ""),
						API_K_TS, (json_int_t)now_ms));
}

void events_audit(const struct audit_row *row)
{
	ev.audits++;
	events_publish(API_EV_AUDIT,
		       json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:o, s:o}", API_K_ID, (json_int_t)row->id, API_K_TS,
				 (json_int_t)row->ts, API_K_ACTOR, wire_text(row->actor), API_K_PEER, wire_text(row->peer),
				 API_K_ACTION, wire_text(row->action), API_K_KNOB, wire_text(row->knob), API_K_CHANGE_ID,
				 (json_int_t)row->change_id, API_K_OUTCOME, wire_text(row->outcome), API_K_DETAIL,
				 wire_text(row->detail)));
	if (strcmp(row->action, "conflict") == 0)
		events_publish(API_EV_CONFLICT, json_pack("{s:o, s:o, s:o, s:I}", API_K_KNOB, wire_text(row->knob),
							  API_K_OUTCOME, wire_text(row->outcome), API_K_DETAIL,
							  wire_text(row->detail), API_K_TS, (json_int_t)row->ts));
}
