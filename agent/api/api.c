#include "build-config.h"

#include "api/api.h"
#include "api/api_internal.h"
#include "api/api_prom.h"
#include "api/http.h"
#include "api/http_frame.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <jansson.h>
#include <stdarg.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "diagnose/doctor.h"
#include "api/doctor_json.h"
#include "act/engine.h"
#include "api/events.h"
#include "api/frame_json.h"
#include "fleet/fleet.h"
#include "log.h"
#include "proto.h"
#include "strutil.h"
#include "termsafe.h"
#include "core/controller.h"
#include "act/tuning.h"

#define FRAMES_LIMIT_MAX 3600
#define FRAMES_PAGE_BYTES (1024 * 1024) /* an answer of /v1/frames holds at most this (and at least one frame) */
#define FRAMES_PAGE_MIN (64 * 1024)     /* and a page is not begun with less room than this (API_OUT_MAX) */

/* ---- GET /v1/status -------------------------------------------------------------------------------------- */

/*
 * The loop's summary with the knobs in conflict named and the tuning loop's state in one sentence: a frozen knob
 * waits for an operator (invariant 5), and "the bottleneck is the upstream" is why nothing is proposed, so
 * ngxctl status must show both. Read here, per request, not per tick: a knob report reads its live value.
 */
static void summary_with_conflicts(struct agent *a, char *out, size_t n)
{
	struct controller_report t;
	const char *name, *why;
	int64_t id;
	size_t off = (size_t)snprintf(out, n, "%s", a->summary), count = 0;

	if (a->tuning && off < n) {
		tuning_report(a->tuning, &t, &id);
		if (t.reason[0])
			off += (size_t)snprintf(out + off, n - off, "; tuning: %s", t.reason);
	}

	for (size_t i = 0; a->engine && i < engine_knob_count(a->engine) && off < n; i++) {
		if (!engine_knob_conflict(a->engine, i, &name, &why))
			continue;
		off += (size_t)snprintf(out + off, n - off, "%s %.64s (%.160s)", count ? "," : "; conflict:", name,
					why);
		count++;
	}
}

/* The API's own connections: open now, and since the start refused (no place), closed to make room, timed out;
 * and the requests refused for who sent them. */
static json_t *conns_json(const struct api *api)
{
	size_t open = 0;

	for (size_t i = 0; i < api->nslots; i++)
		open += api->adm[i].used && !api->adm[i].closing;
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", API_K_CONNS_OPEN, (json_int_t)open,
			 API_K_CONNS_REFUSED, (json_int_t)api->refused, API_K_CONNS_EVICTED, (json_int_t)api->evicted,
			 API_K_CONNS_EXPIRED, (json_int_t)api->expired, API_K_CONNS_DENIED,
			 (json_int_t)(api->denied_401 + api->denied_403), API_K_CONNS_OUT_BYTES, (json_int_t)api->out_held,
			 API_K_CONNS_OUT_REFUSED, (json_int_t)api->out_refused);
}

static json_t *fleet_json(struct agent *a, bool members);

static json_t *status_json(struct api *api)
{
	struct agent *a = api->a;
	const struct report *rp = &a->report;
	char summary[1536];
	json_t *probes = json_array();
	json_t *o;

	for (int i = 0; i < PROBE_COUNT; i++) {
		const struct report_probe *p = &rp->probes[i];
		const struct probe_health *h = &p->health;

		json_array_append_new(probes, json_pack("{s:s, s:b, s:b, s:b, s:s?, s:I}", API_K_PROBE_NAME,
							p->name ? p->name : "", API_K_PROBE_ENABLED, h->enabled,
							API_K_PROBE_OK, h->enabled && h->ok, API_K_PROBE_SATURATED,
							h->enabled && h->saturated, API_K_PROBE_ERROR,
							h->msg[0] ? h->msg : NULL, API_K_PROBE_FAILURES,
							(json_int_t)h->failures));
	}
	summary_with_conflicts(a, summary, sizeof(summary));
	o = json_pack("{s:i, s:s, s:s, s:s?, s:s, s:I, s:{s:I, s:I, s:I, s:I, s:o, s:o, s:o}, s:o, "
			 "s:{s:s, s:b, s:s?, s:I, s:I, s:I, s:I}, s:{s:i, s:i}}",
			 API_K_API_VERSION, NGXAT_API_VERSION, API_K_VERSION, PACKAGE_VERSION, API_K_STATE,
			 rp->store.degraded ? "degraded" : rp->observe_only ? "observe-only" : "observing",
			 API_K_OBSERVE_ONLY, rp->observe_only ? rp->observe_why : NULL, API_K_SUMMARY, summary,
			 API_K_UPTIME, (json_int_t)rp->uptime_s, API_K_TICK, API_K_TICK_INTERVAL,
			 (json_int_t)rp->tick_ms, API_K_TICK_COUNT, (json_int_t)rp->ticks, API_K_TICK_LATE,
			 (json_int_t)rp->late, API_K_TICK_LAST_MS, (json_int_t)rp->last_tick_ms, API_K_TICK_CPU_MED,
			 isfinite(rp->tick_cpu_median_ms) ? json_real(rp->tick_cpu_median_ms) : json_null(),
			 API_K_TICK_CLIENT_CPU_MED,
			 isfinite(rp->tick_client_cpu_median_ms) ? json_real(rp->tick_client_cpu_median_ms) : json_null(),
			 API_K_TICK_OWN_CPU_MED,
			 isfinite(rp->tick_own_cpu_median_ms) ? json_real(rp->tick_own_cpu_median_ms) : json_null(),
			 API_K_PROBES, probes, API_K_STORE, API_K_STORE_PATH, a->cfg.store_path, API_K_STORE_DEGRADED,
			 rp->store.degraded, API_K_STORE_REASON, rp->store.degraded ? rp->store.reason : NULL,
			 API_K_STORE_FRAMES, (json_int_t)rp->store.frames, API_K_STORE_ROLLUPS,
			 (json_int_t)rp->store.rollups, API_K_STORE_BYTES, (json_int_t)rp->store.bytes,
			 API_K_STORE_ERRORS, (json_int_t)rp->store.write_errors, API_K_NGINX, API_K_NGINX_PID,
			 (int)rp->nginx_pid, API_K_NGINX_WORKERS, (int)rp->nginx_workers);
	if (o && a->doctor)
		json_object_set_new(o, API_K_ADVISORIES, doctor_counts_json(doctor_advisories(a->doctor)));
	if (o)
		json_object_set_new(o, API_K_CONNS, conns_json(api));
	if (o && a->fleet)
		json_object_set_new(o, API_K_FLEET, fleet_json(a, false));
	return o;
}

/* ---- GET /v1/fleet --------------------------------------------------------------------------------------- */

/* The pool as the fleet's thread last saw it; with MEMBERS, every member too. {"configured": false} alone. */
static json_t *fleet_json(struct agent *a, bool members)
{
	struct fleet_view *v;
	json_t *o, *arr;

	if (!a->fleet)
		return json_pack("{s:b}", API_K_FLEET_CONFIGURED, 0);
	v = malloc(sizeof(*v));
	if (!v)
		return NULL;
	fleet_view(a->fleet, v);
	o = json_pack("{s:b, s:s, s:s, s:b, s:s, s:b, s:i, s:b, s:s, s:I, s:I, s:s, s:s, s:I, s:I, s:b, s:I}",
		      API_K_FLEET_CONFIGURED, 1, API_K_FLEET_POOL, v->pool, API_K_FLEET_HOST, v->host,
		      API_K_FLEET_REACHABLE, v->reachable, API_K_FLEET_WHY, v->why, API_K_FLEET_HELD, v->held,
		      API_K_FLEET_SLOT, v->slot, API_K_FLEET_WANT, v->want, API_K_FLEET_ENDPOINT, v->endpoint,
		      API_K_FLEET_MAX, (json_int_t)v->max_in_trial, API_K_FLEET_MAX_SET, (json_int_t)v->max_in_trial_set,
		      API_K_FLEET_MAX_BY, v->max_in_trial_by, API_K_FLEET_CANARY, v->canary, API_K_FLEET_ROUNDS,
		      (json_int_t)v->rounds, API_K_FLEET_FAILURES, (json_int_t)v->failures, API_K_FLEET_WATCHING,
		      v->watching, API_K_FLEET_WAKES, (json_int_t)v->wakes);
	if (o && members && (arr = json_array())) {
		for (size_t i = 0; i < v->n; i++) {
			const struct fleet_member *m = &v->m[i];

			json_array_append_new(arr, json_pack("{s:s, s:b, s:s, s:s, s:s, s:s, s:I, s:i, s:I}",
							     API_K_FLEET_HOST, m->host, API_K_FLEET_ALIVE, m->alive,
							     API_K_FLEET_STATE, m->state, API_K_FLEET_KNOB, m->knob,
							     API_K_FLEET_AGENT, m->agent, API_K_FLEET_KERNEL, m->kernel,
							     API_K_FLEET_CPUS, (json_int_t)m->cpus, API_K_FLEET_SLOT, m->slot,
							     API_K_FLEET_MAX, (json_int_t)m->max_in_trial));
		}
		json_object_set_new(o, API_K_FLEET_MEMBERS, arr);
		if ((arr = json_array())) {
			for (size_t i = 0; i < v->nverdicts; i++) {
				const struct pool_verdict *d = &v->verdicts[i];
				json_t *vj = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:s, s:I, s:I}", API_K_FLEET_HOST,
						       d->host, API_K_FLEET_KNOB, d->knob, API_K_FLEET_FROM, d->from,
						       API_K_FLEET_TO, d->to, API_K_FLEET_KEPT, d->kept, API_K_FLEET_SYMPTOM,
						       d->symptom, API_K_FLEET_SUMMARY, d->summary, API_K_FLEET_KERNEL,
						       d->kernel, API_K_FLEET_CPUS, (json_int_t)d->cpus, API_K_FLEET_AT,
						       (json_int_t)d->at_ms);

				/* What its trial measured (a confirming trial's prior), when it said so. */
				if (vj && isfinite(d->effect) && d->pairs >= 2) {
					json_object_set_new(vj, API_K_FLEET_EFFECT, json_real(d->effect));
					json_object_set_new(vj, API_K_FLEET_PAIRS, json_integer(d->pairs));
				}
				json_array_append_new(arr, vj);
			}
			json_object_set_new(o, API_K_FLEET_VERDICTS, arr);
		}
	}
	free(v);
	return o;
}

/* ---- GET /v1/frames -------------------------------------------------------------------------------------- */

struct frames_ctx {
	struct agent *a;
	const struct metric_filter *f;
	struct frame_page page; /* the answer, written as the store hands frames over, bounded in bytes */
	bool rollup;
};

static int on_frame(void *arg, const struct frame *fr)
{
	struct frames_ctx *c = arg;

	/* The store hands a roll-up back with dt = the number of ticks; on the wire dt stays seconds. 1: full. */
	return frame_page_add(&c->page, fr, c->a->reg, c->f, c->rollup);
}

static enum MHD_Result get_frames(struct api *api, struct MHD_Connection *c)
{
	struct agent *a = api->a;
	const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_SINCE);
	const char *until = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_UNTIL);
	const char *metrics = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_METRICS);
	const char *limit_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_LIMIT);
	const char *rollup_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, API_Q_ROLLUP);
	struct metric_filter *f = malloc(sizeof(*f));
	struct frames_ctx ctx = {.a = a};
	int64_t t0, t1 = agent_now_ms(a) + 1, limit = FRAMES_LIMIT_MAX;
	size_t room;
	bool rollup = false;
	char err[128];
	int r;

	if (!f)
		return MHD_NO;
	t0 = t1 - 1 - 60000;
	if (since && api_parse_time(a, since, &t0) < 0) {
		free(f);
		return api_send_problem(c, 400, "%s: expected ms since the epoch or negative seconds, got '%s'",
				    API_Q_SINCE, since);
	}
	if (until && api_parse_time(a, until, &t1) < 0) {
		free(f);
		return api_send_problem(c, 400, "%s: expected ms since the epoch or negative seconds, got '%s'",
				    API_Q_UNTIL, until);
	}
	if (limit_s && str_to_i64(limit_s, 1, FRAMES_LIMIT_MAX, &limit) < 0) {
		free(f);
		return api_send_problem(c, 400, "%s: expected 1..%d", API_Q_LIMIT, FRAMES_LIMIT_MAX);
	}
	if (rollup_s && str_to_bool(rollup_s, &rollup) < 0) {
		free(f);
		return api_send_problem(c, 400, "%s: expected 0 or 1", API_Q_ROLLUP);
	}
	if (metric_filter_parse(metrics ? metrics : "", f, err, sizeof(err)) < 0) {
		free(f);
		return api_send_problem(c, 400, "%s: %s", API_Q_METRICS, err);
	}
	ctx.f = f;
	ctx.rollup = rollup;
	/* A page fits the room the answers not yet read leave (API_OUT_MAX); below FRAMES_PAGE_MIN, a 503 at once. */
	room = api_conn_out_room(c);
	if (room < FRAMES_PAGE_MIN) {
		free(f);
		api->out_refused++;
		return api_send_problem(c, 503, "the API is busy: its answers not yet read by their clients are at their "
					"limit (%u MiB); try again", API_OUT_MAX >> 20);
	}
	/* Written directly, not through jansson objects: the same text, at a third of the CPU (bench/README.md). */
	frame_page_init(&ctx.page, room < FRAMES_PAGE_BYTES ? room : FRAMES_PAGE_BYTES);
	r = rollup ? store_query_rollups(a->store, t0, t1, (size_t)limit, on_frame, &ctx)
		   : store_query_frames(a->store, t0, t1, (size_t)limit, on_frame, &ctx);
	free(f);
	if (r < 0) {
		frame_page_free(&ctx.page);
		return r == -ENOMEM ? MHD_NO : api_send_problem(c, 503, "store query failed: %s", strerror(-r));
	}
	if (frame_page_end(&ctx.page, ctx.page.n == (size_t)limit) < 0) {
		frame_page_free(&ctx.page);
		return MHD_NO;
	}
	{
		enum MHD_Result ret = api_send_body(c, 200, "application/json", ctx.page.out.p, ctx.page.out.len);

		frame_page_free(&ctx.page);
		return ret;
	}
}

/* ---- GET /v1/metrics ------------------------------------------------------------------------------------- */

static enum MHD_Result get_metrics(struct api *api, struct MHD_Connection *c)
{
	const struct metric_registry *reg = api->a->reg;
	json_t *arr = json_array();

	for (uint32_t id = 1; id <= metric_max_id(reg); id++) {
		const char *name = metric_name(reg, id);

		if (name && strncmp(name, "http.lat.b", 10) != 0)
			json_array_append_new(arr, json_string(name));
	}
	return api_send_json(c, 200, json_pack("{s:o}", API_K_METRICS, arr), "application/json");
}

/* ---- who may do what ------------------------------------------------------------------------------------- */

static int conn_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

	return ci ? ci->connect_fd : -1;
}

/* "ADDRESS:PORT" of a TCP peer; WITH_PORT false: the address alone (refusals: a flood of them collapses). */
static void tcp_peer(struct MHD_Connection *c, char *out, size_t outlen, bool with_port)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)ci->client_addr;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		port = ntohs(in->sin_port);
		snprintf(out, outlen, with_port ? "%s:%u" : "%s", ip, port);
	} else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)ci->client_addr;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		port = ntohs(in6->sin6_port);
		snprintf(out, outlen, with_port ? "[%s]:%u" : "[%s]", ip, port);
	} else {
		snprintf(out, outlen, "unknown");
	}
}

/* The id in "/v1/proposals/ID/..." or "/v1/changes/ID/...", 0 if none. */
static int64_t url_id(const char *url)
{
	static const char *const prefixes[] = {API_PATH_PROPOSALS "/", API_PATH_CHANGES "/"};

	for (size_t i = 0; i < 2; i++)
		if (strncmp(url, prefixes[i], strlen(prefixes[i])) == 0)
			return strtoll(url + strlen(prefixes[i]), NULL, 10);
	return 0;
}

/* The knob an act names: in the path (clear-conflict) or in the body (a proposal). */
static void url_knob(const char *url, const char *body, size_t len, char *out, size_t outlen)
{
	const char *k = API_PATH_KNOBS "/", *end;

	out[0] = '\0';
	if (strncmp(url, k, strlen(k)) == 0 && (end = strchr(url + strlen(k), '/')))
		snprintf(out, outlen, "%.*s", (int)(end - url - strlen(k)), url + strlen(k));
	else if (strcmp(url, API_PATH_PROPOSALS) == 0 && body) {
		json_t *o = json_loadb(body, len, 0, NULL);

		if (json_is_string(json_object_get(o, API_K_KNOB)))
			snprintf(out, outlen, "%s", json_string_value(json_object_get(o, API_K_KNOB)));
		json_decref(o);
	}
}

/*
 * Requests refused for who sent them are counted, and sampled into the audit trail: each was a synced row and a log
 * line, and an unprivileged user varying the path wrote 2,032 a second (issue 22, R4). The first refusal of each
 * kind (the same row: actor, peer, status, path and problem) in API_DENIED_WINDOW_MS is a row and a log line; the
 * others in that window are counted into the row when the window ends (on the heartbeat, and at stop). Kinds beyond
 * API_DENIED_KINDS at once share one row a window. So refusals add at most API_DENIED_KINDS + 1 rows a minute
 * whoever sends them, kept [store] denied_retention.
 */
static uint64_t row_hash(const struct audit_row *row)
{
	const char *const parts[] = {row->actor, row->peer, row->outcome, row->detail};
	uint64_t h = 14695981039346656037ULL; /* FNV-1a; a collision only merges two kinds' counts */

	for (size_t i = 0; i < 4; i++)
		for (const char *p = parts[i];; p++) {
			h = (h ^ (unsigned char)*p) * 1099511628211ULL;
			if (!*p)
				break;
		}
	return h;
}

/* The refusals sampled out of K's window counted into its row; K is free again. */
static void denied_close(struct api *api, struct api_denied_kind *k)
{
	if (k->more && k->row_id && store_audit_add(api->a->store, k->row_id, (int64_t)k->more, k->last_ms) == 0)
		log_info("%s denied from %s: %llu more requests refused %s in the minute of audit row %lld, counted there",
			 k->actor, k->peer, (unsigned long long)k->more, k->outcome, (long long)k->row_id);
	else if (k->more)
		log_warn("%s denied from %s: %llu more requests refused %s; the audit trail could not count them",
			 k->actor, k->peer, (unsigned long long)k->more, k->outcome);
	*k = (struct api_denied_kind){0};
}

/* Close the windows that have ended (ALL: every one; a clock stepped back ends them too). */
static void denied_flush(struct api *api, bool all)
{
	int64_t now = agent_now_ms(api->a);

	for (size_t i = 0; i <= API_DENIED_KINDS; i++) {
		const struct api_denied_kind *k = &api->denied[i];

		if (k->used && (all || now - k->since_ms >= API_DENIED_WINDOW_MS || now < k->since_ms))
			denied_close(api, &api->denied[i]);
	}
}

/* Whether ROW (a refusal) is written (the first of its kind in a window: *KIND takes its id; *SHARED: as the row of
 * the kinds beyond the others) or only counted into a row written before. */
static bool denied_sample(struct api *api, const struct audit_row *row, struct api_denied_kind **kind,
			  bool *shared)
{
	struct api_denied_kind *k, *slot = NULL;
	int64_t now = agent_now_ms(api->a);
	uint64_t h = row_hash(row);

	denied_flush(api, false);
	for (size_t i = 0; i < API_DENIED_KINDS; i++) {
		k = &api->denied[i];
		if (k->used && k->hash == h) {
			k->more++;
			k->last_ms = now;
			return false;
		}
		if (!k->used && !slot)
			slot = k;
	}
	if (!slot) {
		slot = &api->denied[API_DENIED_KINDS];
		*shared = true;
		if (slot->used) {
			slot->more++;
			slot->last_ms = now;
			return false;
		}
	}
	*slot = (struct api_denied_kind){.used = true, .hash = h, .since_ms = now, .last_ms = now};
	snprintf(slot->actor, sizeof(slot->actor), "%s", *shared ? "*" : row->actor);
	snprintf(slot->peer, sizeof(slot->peer), "%s", *shared ? "*" : row->peer);
	snprintf(slot->outcome, sizeof(slot->outcome), "%s", row->outcome);
	*kind = slot;
	return true;
}

/*
 * Every act leaves an audit row with its actor and peer: the engine's own (propose, approve, revert...), written
 * while the request is handled, or else (pause, resume, an act refused with 4xx) this one: the request and the
 * HTTP status it got. One row per act, so that the same act repeated collapses into one row with a count. Every
 * refusal (401, 403) is a "denied" row. The detail quotes the client's body and the problem it got (which may quote
 * the body too): it is stored escaped as termsafe.h escapes (a byte that is not UTF-8 made every later GET
 * /v1/audit fail, issue 22 R7; raw control bytes reached the log), and cut only between characters.
 */
static void audit_request(struct api *api, struct api_req *req, const char *url, bool denied)
{
	static const char *const fields_fmt[] = {"NGXAT_ACTOR=%s", "NGXAT_PEER=%s", "NGXAT_KNOB=%s"};
	struct audit_row *row = calloc(1, sizeof(*row));
	char fields[3][96], *raw = malloc(sizeof(row->detail));
	const char *fv[] = {fields[0], fields[1], fields[2], NULL};
	struct api_denied_kind *kind = NULL;
	bool shared = false;
	int n;

	if (denied && req->status == 401)
		api->denied_401++;
	else if (denied)
		api->denied_403++;
	if (!row || !raw) {
		free(row);
		free(raw);
		return;
	}
	row->ts = agent_now_ms(api->a);
	snprintf(row->actor, sizeof(row->actor), "%s", req->actor[0] ? req->actor : "unknown");
	snprintf(row->peer, sizeof(row->peer), "%s", req->peer);
	snprintf(row->action, sizeof(row->action), "%s", denied ? STORE_AUDIT_DENIED : "request");
	url_knob(url, req->body, req->len, row->knob, sizeof(row->knob));
	row->change_id = url_id(url);
	if (req->status)
		snprintf(row->outcome, sizeof(row->outcome), "%u", req->status);
	else
		snprintf(row->outcome, sizeof(row->outcome), "error");
	n = snprintf(raw, sizeof(row->detail), "POST %.300s", url);
	if (!denied && req->len)
		n += snprintf(raw + n, sizeof(row->detail) - (size_t)n, " %.1000s%s", req->body,
			      req->len > 1000 ? "..." : "");
	if (req->status >= 400 && req->problem[0])
		snprintf(raw + n, sizeof(row->detail) - (size_t)n, ": %s", req->problem);
	termsafe_escape(raw, strlen(raw), row->detail, sizeof(row->detail));
	if (denied && !denied_sample(api, row, &kind, &shared)) {
		free(raw);
		free(row);
		return;
	}
	if (shared) {
		snprintf(raw, sizeof(row->detail), "the first of the refusals of more than %d kinds in a minute, counted "
			 "in this row: %.3900s", API_DENIED_KINDS, row->detail);
		termsafe_escape(raw, strlen(raw), row->detail, sizeof(row->detail)); /* cut between characters */
	}
	free(raw);
	if (store_audit_append(api->a->store, row) == 0)
		events_audit(row);
	if (kind)
		kind->row_id = row->id;
	for (int i = 0; i < 3; i++)
		snprintf(fields[i], sizeof(fields[i]), fields_fmt[i], i == 0 ? row->actor : i == 1 ? row->peer : row->knob);
	log_fields(denied ? LOG_WARNING : LOG_INFO, fv, "%s %s from %s: %s (%s)", row->actor, row->action, row->peer,
		   row->outcome, row->detail);
	free(row);
}

/* A POST on the Unix socket: root and members of the socket's group may act. */
static enum MHD_Result allow_unix(struct api *api, struct MHD_Connection *c, struct api_req *req, bool *allowed)
{
	struct api_unix_peer p;
	int r = api_unix_peer(conn_fd(c), api->group, &p);

	*allowed = false;
	if (r < 0) {
		snprintf(req->peer, sizeof(req->peer), "unix:unknown");
		return api_send_problem(c, 403, "the peer's credentials cannot be read: %s", strerror(-r));
	}
	snprintf(req->actor, sizeof(req->actor), "%s", p.user);
	if (!p.may_act) {
		/* No pid: refusals from one user collapse into one audit row. */
		snprintf(req->peer, sizeof(req->peer), "unix:uid=%u", (unsigned)p.uid);
		return api_send_problem(c, 403, "%s (uid %u) may read but not act: acting needs root or membership of "
					"group %s", p.user, (unsigned)p.uid, api->group_name);
	}
	snprintf(req->peer, sizeof(req->peer), "unix:pid=%d,uid=%u", (int)p.pid, (unsigned)p.uid);
	*allowed = true;
	return MHD_YES;
}

/* A POST on the TCP listener: its own origin only, and a bearer token from the token file. */
static enum MHD_Result allow_tcp(struct api *api, struct MHD_Connection *c, struct api_req *req, bool *allowed)
{
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *tok, *name;
	size_t len;

	*allowed = false;
	tcp_peer(c, req->peer, sizeof(req->peer), false);
	snprintf(req->actor, sizeof(req->actor), "anonymous");
	if (!api_origin_ok(origin, host))
		return api_send_problem(c, 403, "Origin %.100s is not this listener's (http://%.100s): actions are not "
					"taken from other sites", origin, host ? host : "?");
	if (!api->tokens)
		return api_send_problem(c, 403, "the TCP listener is read-only: %s", api->no_tokens);
	if (!auth)
		return api_send_problem(c, 401, "acting needs Authorization: Bearer TOKEN (a token of the token file)");
	if (api_bearer(auth, &tok, &len) < 0)
		return api_send_problem(c, 401, "the Authorization header is not 'Bearer TOKEN'");
	name = api_tokens_match(api->tokens, tok, len);
	if (!name)
		return api_send_problem(c, 401, "unknown token");
	snprintf(req->actor, sizeof(req->actor), "token:%s", name);
	tcp_peer(c, req->peer, sizeof(req->peer), true);
	api_conn_tokened(c);
	*allowed = true;
	return MHD_YES;
}

/* ---- dispatch -------------------------------------------------------------------------------------------- */

/* The request's Content-Length (checked digits, http_frame.c), 0 when it has none; saturated at INT64_MAX. */
static int64_t content_length(struct MHD_Connection *c)
{
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	int64_t n = 0;

	if (len && str_to_i64(len, 0, INT64_MAX, &n) < 0)
		n = INT64_MAX;
	return n;
}

/* Whether the request announces a body: MHD calls the handler before reading it. */
static bool has_body(struct MHD_Connection *c)
{
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (len && strcmp(len, "0") != 0) ||
	       MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

static enum MHD_Result handle_get(struct api *api, struct api_listener *l, struct MHD_Connection *c,
				  const char *url)
{
	enum MHD_Result r;
	bool handled = false;

	if (strcmp(url, API_PATH_STATUS) == 0)
		return api_send_json(c, 200, status_json(api), "application/json");
	if (strcmp(url, API_PATH_FRAMES) == 0)
		return get_frames(api, c);
	if (strcmp(url, API_PATH_METRICS) == 0)
		return get_metrics(api, c);
	if (strcmp(url, API_PATH_ADVISORIES) == 0 && api->a->doctor)
		return api_send_json(c, 200, doctor_json(doctor_advisories(api->a->doctor), doctor_busy(api->a->doctor)),
				     "application/json");
	if (strcmp(url, API_PATH_PROMETHEUS) == 0)
		return api_prom_get(api, c);
	if (strcmp(url, API_PATH_FLEET) == 0)
		return api_send_json(c, 200, fleet_json(api->a, true), "application/json");
	if (strcmp(url, API_PATH_EVENTS) == 0)
		return api_events_get(api, l, c);
	if (strcmp(url, "/") == 0 || strcmp(url, API_PATH_CONSOLE) == 0)
		return api_console_get(c);
	r = api_knobs_get(api, c, url, &handled);
	if (handled)
		return r;
	return api_send_problem(c, 404, "no such endpoint: %s", url);
}

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	http_framing_add(cls, key, strlen(key), value ? value : "", value ? strlen(value) : 0);
	return MHD_YES;
}

/* The first call for a request (headers read, body not yet): answer it, refuse it, or let its body come. */
static enum MHD_Result first_call(struct api_listener *l, struct MHD_Connection *c, struct api_req *req,
				  const char *url, const char *method, const char *version, size_t upload_size)
{
	struct api *api = l->api;
	struct http_framing f = {0};
	char detail[128];
	enum MHD_Result r;
	bool allowed;

	/* The connection's one request (its head already checked raw, api_conn.c; every answer closes the connection,
	 * http.c), as libmicrohttpd parsed it: an answer queued now closes the connection before any body is read. */
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
	if (http_framing_check(&f, strcmp(version, MHD_HTTP_VERSION_1_0) != 0, detail, sizeof(detail)) < 0)
		return api_send_problem(c, 400, "%s", detail);
	/* A path is echoed in answers and audit rows: %1b and the like stay out. */
	if (!termsafe_clean(url, strlen(url)))
		return api_send_problem(c, 400, "malformed request: a control character in the path");
	if (l->tcp) {
		const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);

		/* A page of another site whose name was pointed at this address (DNS rebinding) reads nothing. */
		if (!api_host_ok(&l->hosts, host))
			return api_send_problem(c, 403, "Host %.100s is not this listener's (%s)", host,
						api->a->cfg.api_listen);
	}
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
			return api_send_problem(c, 405, "%s is not a method of this API", method);
		if (upload_size || has_body(c))
			return api_send_problem(c, 413, "GET requests take no body");
		/* Answered on the next call, once MHD has the whole request (an answer queued with the headers makes
		 * libmicrohttpd 0.9.75 discard the rest of the request). */
		req->get = true;
		return MHD_YES;
	}
	if (!api_knobs_is_post(url))
		return api_send_problem(c, 405, "POST %s: not an action (actions: " API_PATH_PROPOSALS ", "
					API_PATH_PROPOSALS "/ID/approve, " API_PATH_PROPOSALS "/ID/reject, "
					API_PATH_REVERT ", " API_PATH_CHANGES "/ID/revert, " API_PATH_KNOBS
					"/NAME/clear-conflict, " API_PATH_PAUSE ", " API_PATH_RESUME ")", url);
	r = l->tcp ? allow_tcp(api, c, req, &allowed) : allow_unix(api, c, req, &allowed);
	if (!allowed) {
		audit_request(api, req, url, true);
		return r;
	}
	/* A body announced over the limit is refused now: returning without an answer would make libmicrohttpd send
	 * "100 Continue" to a client that asked (Expect), and read a body that is refused anyway. */
	if (content_length(c) > API_BODY_MAX) {
		r = api_send_problem(c, 413, "request bodies are at most %d bytes", API_BODY_MAX);
		audit_request(api, req, url, false);
	}
	return r;
}

/*
 * MHD calls this once with the headers (*con_cls NULL), then once per piece of body, then once more with no data.
 * GET is checked on the first call and answered on the next; POST is checked (who may act), collects its body
 * (bounded) and answers on the last call.
 */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct api_listener *l = cls;
	struct api *api = l->api;
	struct api_req *req = *con_cls;
	enum MHD_Result ret;
	uint64_t rows;

	if (!req) {
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		*con_cls = req;
		api_http_begin(req);
		ret = first_call(l, c, req, url, method, version, *upload_data_size);
		api_http_end();
		return ret;
	}
	if (req->get) {
		*upload_data_size = 0; /* none: refused on the first call */
		api_conn_answering(c);
		api_http_begin(req);
		ret = handle_get(api, l, c, url);
		api_http_end();
		return ret;
	}
	if (*upload_data_size) {
		if (!req->too_big && req->len + *upload_data_size <= API_BODY_MAX) {
			char *p = realloc(req->body, req->len + *upload_data_size + 1);

			if (!p)
				return MHD_NO;
			req->body = p;
			memcpy(req->body + req->len, upload_data, *upload_data_size);
			req->len += *upload_data_size;
			req->body[req->len] = '\0';
		} else {
			req->too_big = true;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	api_conn_answering(c);
	api_http_begin(req);
	events_set_peer(req->peer);
	rows = events_audit_count();
	if (req->too_big)
		ret = api_send_problem(c, 413, "request bodies are at most %d bytes", API_BODY_MAX);
	else
		ret = api_knobs_post(api, c, url, req->body ? req->body : "", req->len);
	if (events_audit_count() == rows)
		audit_request(api, req, url, false);
	events_set_peer(NULL);
	api_http_end();
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
	struct api_req *req = *con_cls;

	(void)cls;
	(void)why;
	api_conn_answered(c);
	if (req) {
		free(req->body);
		free(req);
		*con_cls = NULL;
	}
}

static int bind_socket(struct api *api, const struct config *cfg, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[CONFIG_PATH_MAX], *slash;
	struct stat st;
	int fd, e;

	if (strlen(cfg->socket_path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path too long: %s", cfg->socket_path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, cfg->socket_path);
	snprintf(dir, sizeof(dir), "%s", cfg->socket_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			e = errno;
			snprintf(err, errlen, "mkdir %s: %s", dir, strerror(e));
			return -e;
		}
	}
	/* A socket left by a previous run is ours to replace; anything else at that path is not. */
	if (lstat(cfg->socket_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket", cfg->socket_path);
			return -EEXIST;
		}
		unlink(cfg->socket_path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, API_BACKLOG) < 0) {
		e = errno;
		snprintf(err, errlen, "bind %s: %s", cfg->socket_path, strerror(e));
		close(fd);
		return -e;
	}
	if (chmod(cfg->socket_path, cfg->socket_mode) < 0)
		log_warn("chmod %s: %s", cfg->socket_path, strerror(errno));
	if (cfg->socket_group[0]) {
		struct group *g = getgrnam(cfg->socket_group);

		if (!g)
			log_warn("group '%s' does not exist: %s keeps the agent's group", cfg->socket_group,
				 cfg->socket_path);
		else if ((stat(cfg->socket_path, &st) < 0 || st.st_gid != g->gr_gid) &&
			 chown(cfg->socket_path, (uid_t)-1, g->gr_gid) < 0) /* the engine's unit filters chown out */
			log_warn("chown %s to group %s: %s", cfg->socket_path, cfg->socket_group, strerror(errno));
	}
	/* Whoever is in the socket file's group (as it ended up) may act. */
	api->group = stat(cfg->socket_path, &st) == 0 ? st.st_gid : getegid();
	{
		struct group *g = getgrgid(api->group);

		if (g)
			snprintf(api->group_name, sizeof(api->group_name), "%s", g->gr_name);
		else
			snprintf(api->group_name, sizeof(api->group_name), "gid %u", (unsigned)api->group);
	}
	api->unix_l.fd = fd;
	snprintf(api->path, sizeof(api->path), "%s", cfg->socket_path);
	return 0;
}

/* A listening TCP socket on LISTEN (*FD), the names it answers to (HOSTS) and its address (SA, SALEN): 0, or -errno
 * with ERR and nothing open. */
static int open_tcp(const char *listen_on, bool listen_any, int *fd_out, struct api_hosts *hosts,
		    struct sockaddr_storage *sa, unsigned *salen, char *err, size_t errlen)
{
	bool loopback;
	int fd, e, one = 1;

	if (str_to_listen(listen_on, sa, salen, &loopback) < 0 || api_hosts_init(hosts, listen_on) < 0) {
		snprintf(err, errlen, "[api] listen: '%s' is not ADDRESS:PORT", listen_on);
		return -EINVAL;
	}
	/* The configuration refuses this too; the check is repeated where the socket is bound. */
	if (!loopback && !listen_any) {
		snprintf(err, errlen, "[api] listen: %s is not a loopback address and listen_any is not set", listen_on);
		return -EPERM;
	}
	fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)sa, *salen) < 0 || listen(fd, API_BACKLOG) < 0) {
		e = errno;
		snprintf(err, errlen, "[api] listen: bind %s: %s", listen_on, strerror(e));
		close(fd);
		return -e;
	}
	*fd_out = fd;
	return 0;
}

static int bind_tcp(struct api *api, const struct config *cfg, char *err, size_t errlen)
{
	return open_tcp(cfg->api_listen, cfg->api_listen_any, &api->tcp_l.fd, &api->tcp_l.hosts, &api->tcp_sa,
			&api->tcp_salen, err, errlen);
}

/* Put T (may be NULL) in force in place of the tokens there were, which are wiped. */
static void set_tokens(struct api *api, struct api_tokens *t)
{
	if (api->tokens)
		api_tokens_clear(api->tokens);
	free(api->tokens);
	api->tokens = t;
}

/* The token file as root read it before the engine gave up root (api_tokens_preload), for a start that cannot. */
static struct api_tokens *preloaded;

/* With [api] listen and a token file: its tokens (root's or OWNER's file) into *OUT (NULL otherwise). 0 or -errno. */
static int tokens_of(const struct config *cfg, uid_t owner, struct api_tokens **out, char *err, size_t errlen)
{
	struct api_tokens *t;
	int r;

	*out = NULL;
	if (!cfg->api_listen[0] || !cfg->api_token_file[0])
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	r = api_tokens_load(cfg->api_token_file, owner, t, err, errlen);
	if (r < 0) {
		api_tokens_clear(t);
		free(t);
		return r;
	}
	*out = t;
	return 0;
}

int api_tokens_preload(const struct config *cfg, uid_t engine, char *err, size_t errlen)
{
	/* root's, or the engine's user's (whose file a reload reads again) */
	int r = tokens_of(cfg, engine, &preloaded, err, errlen);

	/* An engine started as its user cannot read root's file: its writer opens it at the API's start. */
	return r == -ENOENT || (r == -EACCES && geteuid() != 0) ? 0 : r;
}

/* The tokens of CFG's token file into API (kept as they were on failure). 0 or -errno with ERR. */
static int load_tokens(struct api *api, const struct config *cfg, char *err, size_t errlen)
{
	struct api_tokens *t;
	int r;

	if (!cfg->api_token_file[0]) {
		snprintf(api->no_tokens, sizeof(api->no_tokens), "[api] token_file is empty");
		set_tokens(api, NULL);
		return 0;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	r = api_tokens_load(cfg->api_token_file, geteuid(), t, err, errlen);
	if (r == -EACCES && !preloaded && api->a->env.open_log) {
		/* root's file (0600), which an engine started as its user never could read: opened by its writer,
		 * judged here by what was opened, at the start and at each reload */
		int fd = api->a->env.open_log(api->a->env.open_log_ctx, cfg->api_token_file);

		if (fd >= 0)
			r = api_tokens_load_fd(fd, cfg->api_token_file, geteuid(), t, err, errlen);
		else
			snprintf(err, errlen, "%s: %s (asked of the writer: its log says why)", cfg->api_token_file,
				 strerror(-(r = fd)));
	}
	if (r == -EACCES && preloaded) {
		/* root's file, which the engine's user may not read: as root read it at start */
		free(t);
		t = preloaded;
		preloaded = NULL;
		r = 0;
	}
	if (preloaded) { /* read now: the start's copy is not needed */
		api_tokens_clear(preloaded);
		free(preloaded);
		preloaded = NULL;
	}
	if (r < 0 && r != -ENOENT) {
		free(t);
		return r;
	}
	if (r == -ENOENT || t->n == 0) {
		snprintf(api->no_tokens, sizeof(api->no_tokens), r == -ENOENT ? "no token file %.200s"
					 : "the token file %.200s has no tokens", cfg->api_token_file);
		free(t);
		t = NULL;
	}
	set_tokens(api, t);
	return 0;
}

int api_check_config(const struct config *cfg, char *err, size_t errlen)
{
	struct api_tokens *t;
	int r = tokens_of(cfg, geteuid(), &t, err, errlen);

	if (t) {
		api_tokens_clear(t);
		free(t);
	}
	/* -n as the engine's user (its unit's ExecStartPre): root's file is for the writer to open at the start. */
	if (r == -EACCES && geteuid() != 0) {
		fprintf(stderr, "ngx-autotune: %s: not readable by uid %d; the engine reads it through its writer at start\n",
			cfg->api_token_file, (int)geteuid());
		return 0;
	}
	return r == -ENOENT ? 0 : r;
}

static int start_listener(struct api *api, struct api_listener *l, const char *what, char *err, size_t errlen);

/* Tokens of CFG for the TCP listener at a reload: the ones in force stay when the file is refused. False when there
 * were none in force before and the file is refused (a listener that would have none must not open). */
static bool reload_tokens(struct api *api, const struct config *cfg, bool had_listener)
{
	char err[512];

	if (load_tokens(api, cfg, err, sizeof(err)) == 0) {
		log_info("API tokens: %s", api->tokens ? "reloaded" : api->no_tokens);
		return true;
	}
	if (!had_listener) {
		log_err("reload: no TCP listener on %s: %s", cfg->api_listen, err);
		return false;
	}
	log_err("reload: the API tokens are kept as they were: %s", err);
	return true;
}

/* The TCP listener stops accepting: its connections not yet handed to MHD are closed, its event streams end (their
 * clients reconnect to where it is now, or learn it is gone), and its socket is closed. Its MHD daemon stays: it
 * finishes the requests it has, and takes a new socket's connections if the listener comes back. */
static void close_tcp(struct api *api)
{
	api_conns_stop(&api->tcp_l);
	api_events_end(api, &api->tcp_l);
	if (api->tcp_l.fd >= 0)
		close(api->tcp_l.fd);
	api->tcp_l.fd = -1;
}

/*
 * [api] listen moved to CFG's (or was set, or emptied) at a reload: bind the new socket before the old one closes,
 * so that a refused address (taken, not loopback) leaves the listener where it was. An address that the old
 * socket holds itself (0.0.0.0:9180 after 127.0.0.1:9180) is bound after the old one closes, and the old one is
 * bound again if that fails. 0, or -errno with the listener as it was.
 */
static int move_tcp(struct api *api, const struct config *cfg)
{
	const struct config *old = &api->a->cfg;
	bool had = api->tcp_l.fd >= 0;
	struct sockaddr_storage sa;
	struct api_hosts hosts;
	unsigned salen;
	char err[512];
	int fd = -1, r;

	if (!cfg->api_listen[0]) {
		close_tcp(api);
		set_tokens(api, NULL);
		log_info("reload: the API's TCP listener on %s is closed", old->api_listen);
		return 0;
	}
	if (!reload_tokens(api, cfg, had))
		return -EACCES;
	/* The same address spelt another way (localhost:9180 for 127.0.0.1:9180): the socket stays. */
	if (had && str_to_listen(cfg->api_listen, &sa, &salen, &(bool){false}) == 0 && salen == api->tcp_salen &&
	    memcmp(&sa, &api->tcp_sa, salen) == 0 && api_hosts_init(&hosts, cfg->api_listen) == 0) {
		api->tcp_l.hosts = hosts;
		return 0;
	}
	r = open_tcp(cfg->api_listen, cfg->api_listen_any, &fd, &hosts, &sa, &salen, err, sizeof(err));
	if (r == -EADDRINUSE && had) {
		close_tcp(api);
		r = open_tcp(cfg->api_listen, cfg->api_listen_any, &fd, &hosts, &sa, &salen, err, sizeof(err));
		if (r < 0) {
			char again[512];

			if (open_tcp(old->api_listen, old->api_listen_any, &api->tcp_l.fd, &api->tcp_l.hosts, &api->tcp_sa,
				     &api->tcp_salen, again, sizeof(again)) < 0 ||
			    api_conns_listen(&api->tcp_l) < 0) {
				log_err("reload: %s; and the old one cannot be bound again: %s: no TCP listener now", err,
					again);
				return 1;
			}
		}
	}
	if (r < 0) {
		log_err("reload: the API stays on %s: %s", had ? old->api_listen : "the Unix socket only", err);
		return r;
	}
	if (had)
		close_tcp(api);
	api->tcp_l.fd = fd;
	api->tcp_l.hosts = hosts;
	api->tcp_sa = sa;
	api->tcp_salen = salen;
	if (api->tcp_l.mhd)
		r = api_conns_listen(&api->tcp_l);
	else
		r = start_listener(api, &api->tcp_l, cfg->api_listen, err, sizeof(err));
	if (r < 0) {
		log_err("reload: no TCP listener: %s", r == -ENOMEM ? strerror(ENOMEM) : err);
		close_tcp(api);
		return 1;
	}
	log_info("reload: API on %s now%s%s: reads for anyone who can connect, actions %s", cfg->api_listen,
		 had ? ", not " : "", had ? old->api_listen : "", api->tokens ? "with a bearer token" : api->no_tokens);
	return 0;
}

void api_reload(struct api *api, struct config *cfg)
{
	const struct config *old;
	int r;

	if (!api)
		return;
	old = &api->a->cfg;
	if (strcmp(cfg->api_listen, old->api_listen) != 0) {
		r = move_tcp(api, cfg);
		if (r > 0) /* neither the new nor the old address: none, and the configuration says so */
			cfg->api_listen[0] = '\0';
		if (r < 0) {
			snprintf(cfg->api_listen, sizeof(cfg->api_listen), "%s", old->api_listen);
			cfg->api_listen_any = old->api_listen_any;
		}
		return;
	}
	if (api->tcp_l.fd >= 0)
		reload_tokens(api, cfg, true);
}

static void free_api(struct api *api)
{
	set_tokens(api, NULL);
	api_conns_free(api);
	free(api);
}

void api_handle_closed(struct api *api)
{
	if (--api->open_handles == 0)
		free_api(api);
}

static void on_closed(uv_handle_t *h)
{
	api_handle_closed(h->data);
}

/* A listener's handles point at the listener, which lives inside the api. */
static void on_listener_closed(uv_handle_t *h)
{
	struct api_listener *l = h->data;

	api_handle_closed(l->api);
}

/* MHD's own messages (a connection it closed on an error of the client's): for debugging only. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	if (n && msg[n - 1] == '\n')
		msg[n - 1] = '\0';
	log_debug("libmicrohttpd: %s", msg);
}

static void on_heartbeat(uv_timer_t *t)
{
	struct api *api = t->data;

	denied_flush(api, false);
	events_publish(API_EV_STATUS, status_json(api));
}

/* Start MHD on L's socket and hook it to the loop. */
static int start_listener(struct api *api, struct api_listener *l, const char *what, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *info;

	l->api = api;
	/* MHD never sees the listening socket (api_conn.c accepts and admits); its own limit is above the table's, so
	 * that it refuses nothing the table admitted. */
	l->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL,
				  handle, l, MHD_OPTION_NOTIFY_COMPLETED, on_completed, api,
				  MHD_OPTION_NOTIFY_CONNECTION, api_conn_notify, api,
				  MHD_OPTION_URI_LOG_CALLBACK, api_conn_uri_log, api,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, api,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)api->nslots + 1,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)API_STALL_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536, MHD_OPTION_END);
	if (!l->mhd) {
		snprintf(err, errlen, "libmicrohttpd failed to start on %s", what);
		return -EIO;
	}
	info = MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		snprintf(err, errlen, "libmicrohttpd has no epoll fd (built without epoll?)");
		return -ENOTSUP;
	}
	uv_poll_init(api->a->loop, &l->poll, info->epoll_fd);
	l->poll.data = l;
	uv_timer_init(api->a->loop, &l->timer);
	l->timer.data = l;
	uv_timer_init(api->a->loop, &l->kick);
	l->kick.data = l;
	api->open_handles += 3;
	api_http_watch(l);
	if (api_conns_listen(l) < 0) {
		snprintf(err, errlen, "%s: %s", what, strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

int api_start(struct agent *a, struct api **out, char *err, size_t errlen)
{
	struct api *api = calloc(1, sizeof(*api));
	int r;

	if (!api)
		return -ENOMEM;
	api->a = a;
	api->unix_l.fd = api->tcp_l.fd = -1;
	api->tcp_l.tcp = true;
	api->reserve_fd = api->head_epfd = -1;
	r = api_conns_init(api);
	if (r < 0)
		snprintf(err, errlen, "the API's connection table: %s", strerror(-r));
	if (r == 0)
		r = bind_socket(api, &a->cfg, err, errlen);
	if (r == 0 && a->cfg.api_listen[0]) {
		r = load_tokens(api, &a->cfg, err, errlen);
		if (r == 0)
			r = bind_tcp(api, &a->cfg, err, errlen);
	}
	if (r == 0)
		r = start_listener(api, &api->unix_l, api->path, err, errlen);
	if (r == 0 && api->tcp_l.fd >= 0)
		r = start_listener(api, &api->tcp_l, a->cfg.api_listen, err, errlen);
	if (r < 0) {
		api_stop(api);
		return r;
	}
	/* Event ids grow across restarts: a Last-Event-ID of an earlier run is older than any of this one. */
	events_init((uint64_t)agent_now_ms(a) * 1000);
	events_set_listener(api_events_notify, api);
	uv_timer_init(a->loop, &api->heartbeat);
	api->heartbeat.data = api;
	api->open_handles++;
	uv_timer_start(&api->heartbeat, on_heartbeat, API_HEARTBEAT_MS, API_HEARTBEAT_MS);
	if (api->tcp_l.mhd)
		log_info("API on %s too: reads for anyone who can connect, actions %s", a->cfg.api_listen,
			 api->tokens ? "with a bearer token" : api->no_tokens);
	*out = api;
	return 0;
}

static void stop_listener(struct api_listener *l)
{
	if (l->mhd) {
		if (l->api->open_handles)
			uv_poll_stop(&l->poll);
		api_conns_stop(l);
		MHD_stop_daemon(l->mhd);
		l->mhd = NULL;
		uv_close((uv_handle_t *)&l->poll, on_listener_closed);
		uv_close((uv_handle_t *)&l->timer, on_listener_closed);
		uv_close((uv_handle_t *)&l->kick, on_listener_closed);
	}
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

void api_stop(struct api *api)
{
	bool handles;

	if (!api)
		return;
	handles = api->open_handles > 0;
	denied_flush(api, true);
	events_set_listener(NULL, NULL);
	/* MHD must not be stopped with a suspended connection: every stream is resumed and ends first. */
	api_events_close_all(api);
	/* The uv handles live inside API: it is freed by the last close callback, when the loop runs them. */
	if (api->heartbeat.data) {
		uv_timer_stop(&api->heartbeat);
		uv_close((uv_handle_t *)&api->heartbeat, on_closed);
	}
	if (api->deadlines.data) {
		uv_timer_stop(&api->deadlines);
		uv_close((uv_handle_t *)&api->deadlines, on_closed);
	}
	if (api->heads.data) {
		uv_poll_stop(&api->heads);
		uv_close((uv_handle_t *)&api->heads, on_closed);
	}
	stop_listener(&api->unix_l);
	stop_listener(&api->tcp_l);
	if (api->path[0])
		unlink(api->path);
	events_reset();
	if (!handles)
		free_api(api);
}
