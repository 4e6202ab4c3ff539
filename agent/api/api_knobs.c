/*
 * api_knobs: the API's knobs, changes, proposals, reverts and audit trail. See api_internal.h and docs/api.md.
 */
#include "build-config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "api/api_internal.h"
#include "api/http.h"
#include "api/http_frame.h"
#include "core/policy.h"
#include "core/controller.h"
#include "core/judge.h"
#include "act/engine.h"
#include "act/tuning.h"
#include "api/verdict_json.h"
#include "proto.h"
#include "strutil.h"
#include "termsafe.h"
#include "api/wire_text.h"

#define LIST_LIMIT_MAX 1000


static json_t *metric_json(const struct policy_metric *m)
{
	return json_pack("{s:s, s:s}", API_K_METRIC, m->metric, API_K_BETTER,
			 m->dir == POLICY_LOWER_IS_BETTER ? API_BETTER_LOWER : API_BETTER_HIGHER);
}

static json_t *policy_json(const struct knob_policy *p)
{
	json_t *o = json_object(), *mins = json_array(), *maxs = json_array(), *g = json_array();
	char bounds[256];

	for (size_t i = 0; i < p->nelem && i < KNOBVAL_VEC_MAX; i++) {
		json_array_append_new(mins, json_integer(p->min[i]));
		json_array_append_new(maxs, json_integer(p->max[i]));
	}
	for (size_t i = 0; i < p->nguardrails; i++)
		json_array_append_new(g, metric_json(&p->guardrails[i]));
	json_object_set_new(o, API_K_KIND, json_string(policy_kind_name(p->kind)));
	json_object_set_new(o, API_K_TARGET, json_string(p->target));
	json_object_set_new(o, API_K_TYPE, json_string(knobval_type_name(p->type)));
	if (policy_bounds_text(p, bounds, sizeof(bounds)) == 0)
		json_object_set_new(o, API_K_BOUNDS, json_string(bounds));
	json_object_set_new(o, API_K_MIN, mins);
	json_object_set_new(o, API_K_MAX, maxs);
	if (p->nvalues) {
		json_t *v = json_array();

		for (size_t i = 0; i < p->nvalues; i++)
			json_array_append_new(v, json_string(p->values[i]));
		json_object_set_new(o, API_K_ALLOWED, v);
	}
	json_object_set_new(o, API_K_STEP, json_real(p->step));
	json_object_set_new(o, API_K_MAX_STEP, json_real(p->max_step));
	json_object_set_new(o, API_K_APPROVAL, json_string(p->approval_required ? "required" : "auto"));
	json_object_set_new(o, API_K_ENABLED, json_boolean(p->enabled));
	json_object_set_new(o, API_K_SETTLE_MS, json_integer(p->settle_ms));
	json_object_set_new(o, API_K_OBJECTIVE, metric_json(&p->objective));
	json_object_set_new(o, API_K_GUARDRAILS, g);
	return o;
}

static enum MHD_Result get_knobs(struct api *api, struct MHD_Connection *c)
{
	struct engine *e = api->a->engine;
	struct engine_knob_report *r = malloc(sizeof(*r));
	json_t *arr = json_array();
	char why[KNOB_WHY_MAX] = "";
	bool ro;

	if (!r)
		return MHD_NO;
	for (size_t i = 0; e && i < engine_knob_count(e); i++) {
		engine_knob_report(e, i, r);
		json_array_append_new(
			arr, json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:I, s:o}", API_K_NAME, r->name,
				       API_K_KIND, r->kind, API_K_KNOB_STATE, engine_knob_state_name(r->state),
				       API_K_WHY, r->why[0] ? r->why : NULL, API_K_VALUE, r->live_ok ? r->live : NULL,
				       API_K_ORIGINAL, r->has_original ? r->original : NULL, API_K_LAST_WRITTEN,
				       r->has_written ? r->last_written : NULL, API_K_CHANGE,
				       (json_int_t)r->change_id, API_K_POLICY,
				       policy_json(r->pol)));
	}
	free(r);
	ro = e && engine_observe_only(e, why, sizeof(why));
	return api_send_json(c, 200,
			     json_pack("{s:o, s:s?}", API_K_KNOBS, arr, API_K_OBSERVE_ONLY, ro ? why : NULL),
			     "application/json");
}

/* Stored rows' text goes through wire_text: one row an older agent stored raw may not fail the whole answer. */
static json_t *change_json(const struct change_row *row)
{
	return json_pack("{s:I, s:o, s:s, s:I, s:o, s:o, s:s, s:o, s:o, s:o, s:I, s:I}", API_K_ID, (json_int_t)row->id,
			 API_K_KNOB, wire_text(row->knob), API_K_CHANGE_KIND,
			 row->kind == CHANGE_KIND_REVERT ? "revert" : "change", API_K_REVERTS,
			 (json_int_t)row->reverts, API_K_FROM, wire_text(row->old_value), API_K_TO,
			 wire_text(row->new_value), API_K_STATE, change_state_name(row->state), API_K_ACTOR,
			 wire_text(row->actor), API_K_WHY, wire_text(row->why), API_K_DETAIL, wire_text(row->detail),
			 API_K_CREATED, (json_int_t)row->created_ms, API_K_UPDATED, (json_int_t)row->updated_ms);
}

static int on_change(void *ctx, const struct change_row *row)
{
	return json_array_append_new(ctx, change_json(row)) == 0 ? 0 : -ENOMEM;
}

static int query_limit(struct MHD_Connection *c, int64_t *limit)
{
	const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_LIMIT);

	*limit = 100;
	return s ? str_to_i64(s, 1, LIST_LIMIT_MAX, limit) : 0;
}

static enum MHD_Result get_changes(struct api *api, struct MHD_Connection *c)
{
	const char *knob = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_KNOB);
	const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_STATE);
	const char *before_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_BEFORE);
	int64_t limit, before = 0;
	unsigned states = 0;
	json_t *arr;
	int r;

	if (query_limit(c, &limit) < 0)
		return api_send_problem(c, 400, "%s: expected 1..%d", API_Q_LIMIT, LIST_LIMIT_MAX);
	if (before_s && str_to_i64(before_s, 1, INT64_MAX, &before) < 0)
		return api_send_problem(c, 400, "%s: expected a change id", API_Q_BEFORE);
	if (state) {
		enum change_state s;

		if (change_state_parse(state, &s) < 0)
			return api_send_problem(c, 400, "%s: '%s' is not a change state", API_Q_STATE, state);
		states = 1u << s;
	}
	arr = json_array();
	r = store_changes_query(api->a->store, knob ? knob : "", states, before, (size_t)limit, on_change, arr);
	if (r < 0) {
		json_decref(arr);
		return api_send_problem(c, 503, "store: %s", strerror(-r));
	}
	return api_send_json(c, 200, json_pack("{s:o}", API_K_CHANGES, arr), "application/json");
}

static int on_audit(void *ctx, const struct audit_row *row)
{
	return json_array_append_new(
		       ctx, json_pack("{s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:I}", API_K_ID,
				      (json_int_t)row->id, API_K_TS, (json_int_t)row->ts, API_K_LAST_TS,
				      (json_int_t)row->last_ts, API_K_ACTOR, wire_text(row->actor), API_K_PEER,
				      wire_text(row->peer), API_K_ACTION, wire_text(row->action), API_K_KNOB,
				      wire_text(row->knob), API_K_CHANGE_ID, (json_int_t)row->change_id, API_K_OUTCOME,
				      wire_text(row->outcome), API_K_DETAIL, wire_text(row->detail), API_K_COUNT,
				      (json_int_t)row->count)) == 0
		       ? 0
		       : -ENOMEM;
}

static enum MHD_Result get_audit(struct api *api, struct MHD_Connection *c)
{
	const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_SINCE);
	const char *until = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_UNTIL);
	const char *knob = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_KNOB);
	const char *actor = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_ACTOR);
	const char *before_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_BEFORE);
	int64_t t0 = 0, t1 = 0, limit, before = 0;
	json_t *arr;
	int r;

	if ((since && api_parse_time(api->a, since, &t0) < 0) || (until && api_parse_time(api->a, until, &t1) < 0))
		return api_send_problem(c, 400, "%s/%s: expected ms since the epoch or negative seconds", API_Q_SINCE,
					API_Q_UNTIL);
	if (query_limit(c, &limit) < 0)
		return api_send_problem(c, 400, "%s: expected 1..%d", API_Q_LIMIT, LIST_LIMIT_MAX);
	if (before_s && str_to_i64(before_s, 1, INT64_MAX, &before) < 0)
		return api_send_problem(c, 400, "%s: expected an audit id", API_Q_BEFORE);
	arr = json_array();
	r = store_audit_query(api->a->store, t0, t1, knob, actor, before, (size_t)limit, on_audit, arr);
	if (r < 0) {
		json_decref(arr);
		return api_send_problem(c, 503, "store: %s", strerror(-r));
	}
	return api_send_json(c, 200, json_pack("{s:o}", API_K_AUDIT, arr), "application/json");
}

/* "/v1/changes/123" or "/v1/changes/123/revert": the id and what follows it. */
static bool change_path(const char *url, int64_t *id, const char **rest)
{
	const char *p = url + strlen(API_PATH_CHANGES);
	char buf[24];
	size_t n = 0;

	if (strncmp(url, API_PATH_CHANGES "/", strlen(API_PATH_CHANGES) + 1) != 0)
		return false;
	p++;
	while (p[n] && p[n] != '/' && n < sizeof(buf) - 1) {
		buf[n] = p[n];
		n++;
	}
	buf[n] = '\0';
	if (str_to_i64(buf, 1, INT64_MAX, id) < 0)
		return false;
	*rest = p + n;
	return true;
}

static enum MHD_Result get_trial(struct api *api, struct MHD_Connection *c)
{
	struct controller_report *r = malloc(sizeof(*r));
	json_t *o, *evj;
	int64_t id = 0;

	if (!r)
		return MHD_NO;
	if (!api->a->tuning) {
		free(r);
		return api_send_problem(c, 409, "no tuning loop (policies not loaded)");
	}
	tuning_report(api->a->tuning, r, &id);
	evj = verdict_json_evidence(tuning_evidence(api->a->tuning));
	o = json_pack("{s:s, s:s, s:b, s:I, s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:s, s:s}", API_K_STATE,
		      controller_state_name(r->state), API_K_MODE, controller_mode_name(r->mode), API_K_PAUSED,
		      r->paused, API_K_CHANGE, (json_int_t)id, API_K_KNOB, r->knob, API_K_FROM, r->from, API_K_TO, r->to,
		      API_K_ARM, controller_arm_name(r->arm), API_K_PAIR, (int)r->pair, API_K_PAIRS, (int)r->pairs,
		      API_K_UNTIL, (json_int_t)r->until_ms, API_K_VERDICT, judge_verdict_name(r->verdict), API_K_REASON,
		      r->reason);
	json_object_set_new(o, API_K_CALIB_PAIR, json_integer(r->calib_pair));
	json_object_set_new(o, API_K_CALIB_PAIRS, json_integer(r->calib_pairs));
	json_object_set_new(o, API_K_EFFECT, isfinite(r->effect) ? json_real(r->effect) : json_null());
	json_object_set_new(o, API_K_EFFECT_LO, isfinite(r->effect_lo) ? json_real(r->effect_lo) : json_null());
	json_object_set_new(o, API_K_EFFECT_HI, isfinite(r->effect_hi) ? json_real(r->effect_hi) : json_null());
	json_object_set_new(o, API_K_EVIDENCE, evj ? evj : json_object());
	free(r);
	return api_send_json(c, 200, o, "application/json");
}

static enum MHD_Result get_proposals(struct api *api, struct MHD_Connection *c)
{
	json_t *arr = json_array();
	int r = store_changes_query(api->a->store, "", (1u << CHANGE_PROPOSED) | (1u << CHANGE_APPROVED), 0, 100,
				    on_change, arr);

	if (r < 0) {
		json_decref(arr);
		return api_send_problem(c, 503, "store: %s", strerror(-r));
	}
	return api_send_json(c, 200, json_pack("{s:o}", API_K_PROPOSALS, arr), "application/json");
}

/* "/v1/proposals/123/approve": the id and the action. */
static bool proposal_path(const char *url, int64_t *id, const char **action)
{
	size_t k = strlen(API_PATH_PROPOSALS "/");
	char buf[24];
	size_t n = 0;

	if (strncmp(url, API_PATH_PROPOSALS "/", k) != 0)
		return false;
	while (url[k + n] && url[k + n] != '/' && n < sizeof(buf) - 1) {
		buf[n] = url[k + n];
		n++;
	}
	buf[n] = '\0';
	if (url[k + n] != '/' || str_to_i64(buf, 1, INT64_MAX, id) < 0)
		return false;
	*action = url + k + n + 1;
	return strcmp(*action, API_ACTION_APPROVE) == 0 || strcmp(*action, API_ACTION_REJECT) == 0;
}

enum MHD_Result api_knobs_get(struct api *api, struct MHD_Connection *c, const char *url, bool *handled)
{
	const char *rest;
	int64_t id;

	*handled = true;
	if (strcmp(url, API_PATH_PROPOSALS) == 0)
		return get_proposals(api, c);
	if (strcmp(url, API_PATH_TRIAL) == 0)
		return get_trial(api, c);
	if (strcmp(url, API_PATH_KNOBS) == 0)
		return get_knobs(api, c);
	if (strcmp(url, API_PATH_CHANGES) == 0)
		return get_changes(api, c);
	if (strcmp(url, API_PATH_AUDIT) == 0)
		return get_audit(api, c);
	if (change_path(url, &id, &rest) && rest[0] == '\0') {
		struct change_row *row = malloc(sizeof(*row));
		enum MHD_Result ret;
		int r;

		if (!row)
			return MHD_NO;
		r = store_change_get(api->a->store, id, row);
		ret = r == 0 ? api_send_json(c, 200, change_json(row), "application/json")
		    : r == -ENOENT ? api_send_problem(c, 404, "no change %lld", (long long)id)
				   : api_send_problem(c, 503, "store: %s", strerror(-r));
		free(row);
		return ret;
	}
	*handled = false;
	return MHD_NO;
}

bool api_knobs_is_post(const char *url)
{
	const char *rest;
	int64_t id;
	size_t k = strlen(API_PATH_KNOBS), a = strlen("/" API_ACTION_CLEAR_CONFLICT), n = strlen(url);

	const char *action;

	if (strcmp(url, API_PATH_PROPOSALS) == 0 || strcmp(url, API_PATH_REVERT) == 0 ||
	    strcmp(url, API_PATH_PAUSE) == 0 || strcmp(url, API_PATH_RESUME) == 0 || proposal_path(url, &id, &action))
		return true;
	if (change_path(url, &id, &rest))
		return strcmp(rest, "/" API_ACTION_REVERT) == 0;
	return strncmp(url, API_PATH_KNOBS "/", k + 1) == 0 && n > k + 1 + a &&
	       strcmp(url + n - a, "/" API_ACTION_CLEAR_CONFLICT) == 0;
}

/* The status for an engine error. -EIO is the store's (nothing was written: 500); a write the host refused or
 * garbled after its row was journaled, and undone, is answered 502 by its caller. */
/* What a revert did: {"started", "pending", "more", "knobs": [{"knob", "changes", "id", "to", "outcome",
 * "detail"}]}; "id" is the revert row (null when none was written). */
static json_t *revert_json(const struct engine_revert_report *rep)
{
	json_t *knobs = json_array();

	for (size_t i = 0; i < rep->n; i++) {
		const struct engine_revert_item *it = &rep->items[i];
		json_t *ids = json_array();

		for (size_t j = 0; j < it->nchanges; j++)
			json_array_append_new(ids, json_integer((json_int_t)it->changes[j]));
		json_array_append_new(knobs, json_pack("{s:s, s:o, s:o, s:s, s:s, s:s}", API_K_KNOB, it->knob,
						       API_K_CHANGES, ids, API_K_ID,
						       it->row ? json_integer((json_int_t)it->row) : json_null(),
						       API_K_TO, it->to, API_K_OUTCOME,
						       engine_revert_outcome_name(it->outcome), API_K_DETAIL, it->why));
	}
	return json_pack("{s:i, s:i, s:I, s:o}", API_K_STARTED, rep->writes, API_K_PENDING, rep->pending, API_K_MORE,
			 (json_int_t)rep->more, API_K_KNOBS, knobs);
}

static unsigned status_of(int r)
{
	switch (r) {
	case -ENOENT: return 404;
	case -EBUSY:
	case -EALREADY:
	case -EROFS:
	case -ENOTSUP: return 409;
	case -ERANGE:
	case -EPERM:
	case -EINVAL: return 400;
	default: return 500;
	}
}

/* Text an operator gives is shown on other operators' terminals (ngxctl history, audit, the console). */
#define CONTROL_DETAIL "%s: control characters (newlines, tabs, escape sequences) and text that is not UTF-8 are " \
		       "not allowed"

static bool has_control(json_t *s)
{
	return json_is_string(s) && !termsafe_clean(json_string_value(s), json_string_length(s));
}

/* Parse BODY as a JSON object whose keys are all in ALLOWED (NULL-terminated). */
static json_t *body_object(struct MHD_Connection *c, const char *body, size_t len, const char *const *allowed,
			   enum MHD_Result *sent)
{
	json_error_t jerr;
	json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr), *v;
	const char *key;

	if (len == 0)
		o = json_object();
	if (!o || !json_is_object(o)) {
		*sent = api_send_problem(c, 400, "the body must be a JSON object%s%s", o ? "" : ": ", o ? "" : jerr.text);
		json_decref(o);
		return NULL;
	}
	json_object_foreach(o, key, v)
	{
		bool ok = false;

		for (size_t i = 0; allowed[i]; i++)
			ok = ok || strcmp(key, allowed[i]) == 0;
		if (!ok) {
			*sent = api_send_problem(c, 400, "unknown field '%s'", key);
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static enum MHD_Result post_proposal(struct api *api, struct MHD_Connection *c, json_t *o, const char *actor)
{
	json_t *knob = json_object_get(o, API_K_KNOB), *value = json_object_get(o, API_K_VALUE);
	json_t *why = json_object_get(o, API_K_WHY), *now = json_object_get(o, API_K_NOW);
	char err[512];
	int64_t id = 0;
	int r;

	if (!json_is_string(knob) || !json_is_string(value) || (why && !json_is_string(why)) ||
	    (now && !json_is_boolean(now)))
		return api_send_problem(c, 400, "expected {\"knob\": string, \"value\": string, \"why\": string, "
						"\"now\": boolean}");
	if (has_control(why) || has_control(knob) || has_control(value))
		return api_send_problem(c, 400, CONTROL_DETAIL, has_control(why) ? API_K_WHY : has_control(knob) ?
					API_K_KNOB : API_K_VALUE);
	if (!api->a->engine)
		return api_send_problem(c, 409, "no knobs: policies are not loaded");
	if (!json_is_true(now)) {
		/* The default: an A/B trial judged like the agent's own proposals. */
		if (!api->a->tuning)
			return api_send_problem(c, 409, "no tuning loop: apply at once with \"now\": true");
		r = tuning_operator_propose(api->a->tuning, json_string_value(knob), json_string_value(value), actor,
					    why ? json_string_value(why) : "", agent_now_ms(api->a), &id, err,
					    sizeof(err));
		if (r < 0)
			return api_send_problem(c, status_of(r), "%s", err);
		return api_send_json(c, 201, json_pack("{s:I, s:s}", API_K_ID, (json_int_t)id, API_K_STATE, "approved"),
				     "application/json");
	}
	r = engine_apply_now(api->a->engine, json_string_value(knob), json_string_value(value), actor,
			     why ? json_string_value(why) : "", agent_now_ms(api->a), &id, err, sizeof(err));
	if (r < 0)
		return api_send_problem(c, r == -EIO && id ? 502 : status_of(r), "%s", err);
	{
		/* 201 once written (in trial); 202 while an asynchronous driver (nginx) is still at it. */
		struct change_row *row = malloc(sizeof(*row));
		bool applying = row && store_change_get(api->a->store, id, row) == 0 && row->state == CHANGE_APPLYING;

		free(row);
		return api_send_json(c, applying ? 202 : 201,
				     json_pack("{s:I, s:s}", API_K_ID, (json_int_t)id, API_K_STATE,
					       applying ? "applying" : "trial"),
				     "application/json");
	}
}

enum MHD_Result api_knobs_post(struct api *api, struct MHD_Connection *c, const char *url, const char *body,
			       size_t len)
{
	static const char *const proposal_keys[] = {API_K_KNOB, API_K_VALUE, API_K_WHY, API_K_NOW, NULL};
	static const char *const comment_keys[] = {API_K_COMMENT, NULL};
	static const char *const no_keys[] = {NULL};
	enum MHD_Result sent = MHD_NO;
	char actor[64], err[512];
	const char *rest, *action;
	int64_t id = 0;
	json_t *o;
	int r;

	api_actor(c, actor, sizeof(actor));
	if (proposal_path(url, &id, &action)) {
		json_t *comment;

		o = body_object(c, body, len, comment_keys, &sent);
		if (!o)
			return sent;
		comment = json_object_get(o, API_K_COMMENT);
		if (comment && !json_is_string(comment)) {
			json_decref(o);
			return api_send_problem(c, 400, "comment: expected a string");
		}
		if (has_control(comment)) {
			json_decref(o);
			return api_send_problem(c, 400, CONTROL_DETAIL, API_K_COMMENT);
		}
		if (!api->a->tuning) {
			json_decref(o);
			return api_send_problem(c, 409, "no tuning loop");
		}
		r = tuning_decide(api->a->tuning, id, strcmp(action, API_ACTION_APPROVE) == 0, actor,
				  comment ? json_string_value(comment) : "", agent_now_ms(api->a), err, sizeof(err));
		json_decref(o);
		if (r < 0)
			return api_send_problem(c, r == -ENOENT ? 404 : 409, "%s", err);
		return api_send_json(c, 200, json_pack("{s:I, s:s}", API_K_ID, (json_int_t)id, API_K_STATE,
						       strcmp(action, API_ACTION_APPROVE) == 0 ? "approved" : "rejected"),
				     "application/json");
	}
	o = body_object(c, body, len, strcmp(url, API_PATH_PROPOSALS) == 0 ? proposal_keys : no_keys, &sent);
	if (!o)
		return sent;
	if (strcmp(url, API_PATH_PAUSE) == 0 || strcmp(url, API_PATH_RESUME) == 0) {
		json_decref(o);
		if (!api->a->tuning)
			return api_send_problem(c, 409, "no tuning loop");
		tuning_pause(api->a->tuning, strcmp(url, API_PATH_PAUSE) == 0, actor, agent_now_ms(api->a));
		return api_send_json(c, 200, json_pack("{s:b}", API_K_PAUSED, strcmp(url, API_PATH_PAUSE) == 0),
				     "application/json");
	}
	if (strcmp(url, API_PATH_PROPOSALS) == 0) {
		sent = post_proposal(api, c, o, actor);
		json_decref(o);
		return sent;
	}
	json_decref(o);
	if (!api->a->engine)
		return api_send_problem(c, 409, "no knobs: policies are not loaded");
	if (strcmp(url, API_PATH_REVERT) == 0 || (change_path(url, &id, &rest))) {
		struct engine_revert_report *rep = malloc(sizeof(*rep));

		if (!rep)
			return api_send_problem(c, 503, "out of memory");
		r = engine_revert(api->a->engine, id, actor, agent_now_ms(api->a), rep, err, sizeof(err));
		if (r < 0) {
			free(rep);
			return api_send_problem(c, status_of(r), "%s", err);
		}
		sent = api_send_json(c, 202, revert_json(rep), "application/json");
		free(rep);
		return sent;
	}
	{
		/* /v1/knobs/NAME/clear-conflict */
		char name[KNOB_NAME_MAX];
		size_t k = strlen(API_PATH_KNOBS "/"), n = strlen(url) - k - strlen("/" API_ACTION_CLEAR_CONFLICT);

		if (n >= sizeof(name))
			return api_send_problem(c, 404, "no such knob");
		memcpy(name, url + k, n);
		name[n] = '\0';
		r = engine_clear_conflict(api->a->engine, name, actor, agent_now_ms(api->a), err, sizeof(err));
		if (r < 0)
			return api_send_problem(c, status_of(r), "%s", err);
		return api_send_json(c, 200, json_pack("{s:s}", API_K_KNOB, name), "application/json");
	}
}
