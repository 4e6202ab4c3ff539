#include "build-config.h"

#include "api.h"
#include "api_internal.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "doctor.h"
#include "doctor_json.h"
#include "engine.h"
#include "frame_json.h"
#include "log.h"
#include "loop.h"
#include "proto.h"
#include "strutil.h"
#include "core/controller.h"
#include "tuning.h"

#define FRAMES_LIMIT_MAX 3600


/* ---- responses ------------------------------------------------------------------------------------------- */

static enum MHD_Result send_body(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
				 size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result api_send_json(struct MHD_Connection *c, unsigned status, json_t *o, const char *type)
{
	char *s;
	enum MHD_Result ret;

	if (!o)
		return MHD_NO;
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return MHD_NO;
	ret = send_body(c, status, type, s, strlen(s));
	free(s);
	return ret;
}

static const char *status_title(unsigned status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 409: return "Conflict";
	case 405: return "Method Not Allowed";
	case 413: return "Content Too Large";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

enum MHD_Result api_send_problem(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return api_send_json(c, status,
			 json_pack("{s:s, s:s, s:i, s:s}", API_K_ERR_TYPE, "about:blank", API_K_ERR_TITLE,
				   status_title(status), API_K_ERR_STATUS, (int)status, API_K_ERR_DETAIL, detail),
			 "application/problem+json");
}

/* ---- GET /v1/status -------------------------------------------------------------------------------------- */

/*
 * The loop's summary with the knobs in conflict named and the tuning loop's state in one sentence: a frozen knob
 * waits for an operator (invariant 5), and "the bottleneck is the upstream" is why nothing is proposed, so
 * ngxctl status must show both. Read here, per request, not per tick: a knob report reads its live value.
 */
static void summary_with_conflicts(struct agent *a, char *out, size_t n)
{
	struct engine_knob_report r;
	struct controller_report t;
	int64_t id;
	size_t off = (size_t)snprintf(out, n, "%s", a->summary), count = 0;

	if (a->tuning && off < n) {
		tuning_report(a->tuning, &t, &id);
		if (t.reason[0])
			off += (size_t)snprintf(out + off, n - off, "; tuning: %s", t.reason);
	}

	for (size_t i = 0; a->engine && i < engine_knob_count(a->engine) && off < n; i++) {
		engine_knob_report(a->engine, i, &r);
		if (r.state != ENGINE_KNOB_CONFLICT)
			continue;
		off += (size_t)snprintf(out + off, n - off, "%s %.64s (%.160s)", count ? "," : "; conflict:", r.name,
					r.why);
		count++;
	}
}

static json_t *status_json(struct agent *a)
{
	char summary[1536];
	struct store_health sh;
	json_t *probes = json_array();
	double med = agent_tick_cpu_median(a);
	pid_t pid;
	unsigned workers;

	for (int i = 0; i < PROBE_COUNT; i++) {
		const struct probe_health *h = sampler_health(a->sampler, (enum probe_id)i);

		json_array_append_new(probes, json_pack("{s:s, s:b, s:b, s:s?, s:I}", API_K_PROBE_NAME,
							sampler_probe_name((enum probe_id)i), API_K_PROBE_ENABLED,
							h->enabled, API_K_PROBE_OK, h->enabled && h->ok,
							API_K_PROBE_ERROR, h->msg[0] ? h->msg : NULL,
							API_K_PROBE_FAILURES, (json_int_t)h->failures));
	}
	store_get_health(a->store, &sh);
	sampler_nginx(a->sampler, &pid, &workers);
	char why[256] = "";
	bool ro = a->engine && engine_observe_only(a->engine, why, sizeof(why));
	json_t *o;

	summary_with_conflicts(a, summary, sizeof(summary));
	o = json_pack("{s:i, s:s, s:s, s:s?, s:s, s:I, s:{s:I, s:I, s:I, s:I, s:o}, s:o, "
			 "s:{s:s, s:b, s:s?, s:I, s:I, s:I, s:I}, s:{s:i, s:i}}",
			 API_K_API_VERSION, NGXAT_API_VERSION, API_K_VERSION, PACKAGE_VERSION, API_K_STATE,
			 sh.degraded ? "degraded" : ro ? "observe-only" : "observing", API_K_OBSERVE_ONLY,
			 ro ? why : NULL, API_K_SUMMARY, summary, API_K_UPTIME,
			 (json_int_t)loop_uptime_s(a), API_K_TICK, API_K_TICK_INTERVAL, (json_int_t)a->cfg.tick_ms,
			 API_K_TICK_COUNT, (json_int_t)a->ticks, API_K_TICK_LATE, (json_int_t)a->late,
			 API_K_TICK_LAST_MS, (json_int_t)a->last_tick_ms, API_K_TICK_CPU_MED,
			 isfinite(med) ? json_real(med) : json_null(), API_K_PROBES, probes, API_K_STORE,
			 API_K_STORE_PATH, a->cfg.store_path, API_K_STORE_DEGRADED, sh.degraded, API_K_STORE_REASON,
			 sh.degraded ? sh.reason : NULL, API_K_STORE_FRAMES, (json_int_t)sh.frames, API_K_STORE_ROLLUPS,
			 (json_int_t)sh.rollups, API_K_STORE_BYTES, (json_int_t)sh.bytes, API_K_STORE_ERRORS,
			 (json_int_t)sh.write_errors, API_K_NGINX, API_K_NGINX_PID, (int)pid, API_K_NGINX_WORKERS,
			 (int)workers);
	if (o && a->doctor)
		json_object_set_new(o, API_K_ADVISORIES, doctor_counts_json(doctor_advisories(a->doctor)));
	return o;
}

/* ---- GET /v1/frames -------------------------------------------------------------------------------------- */

/* A time in the query: ms since the epoch, or a negative number of seconds relative to now. */
int api_parse_time(struct agent *a, const char *s, int64_t *out)
{
	int64_t v;
	int r = str_to_i64(s, -(int64_t)10 * 366 * 86400, INT64_MAX / 2, &v);

	if (r < 0)
		return r;
	*out = v <= 0 ? loop_wall_ms(a) + v * 1000 : v;
	return 0;
}

struct frames_ctx {
	struct agent *a;
	const struct metric_filter *f;
	json_t *arr;
	bool rollup;
	size_t n;
};

static int on_frame(void *arg, const struct frame *fr)
{
	struct frames_ctx *c = arg;
	json_t *o = frame_to_json(fr, c->a->reg, c->f);

	if (!o)
		return -ENOMEM;
	/* The store hands a roll-up back with dt = the number of ticks; on the wire dt stays seconds. */
	if (c->rollup) {
		json_object_set_new(o, API_K_TICKS, json_integer((json_int_t)fr->dt_s));
		json_object_set_new(o, API_K_DT, json_real(60.0));
	}
	json_array_append_new(c->arr, o);
	c->n++;
	return 0;
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
	int64_t t0, t1 = loop_wall_ms(a) + 1, limit = FRAMES_LIMIT_MAX;
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
	ctx.arr = json_array();
	r = rollup ? store_query_rollups(a->store, t0, t1, (size_t)limit, on_frame, &ctx)
		   : store_query_frames(a->store, t0, t1, (size_t)limit, on_frame, &ctx);
	free(f);
	if (r < 0) {
		json_decref(ctx.arr);
		return api_send_problem(c, 503, "store query failed: %s", strerror(-r));
	}
	return api_send_json(c, 200, json_pack("{s:o, s:b}", API_K_FRAMES, ctx.arr, API_K_TRUNCATED, ctx.n == (size_t)limit),
			 "application/json");
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

/* Whether the request announces a body: MHD calls the handler before reading it. */
static bool has_body(struct MHD_Connection *c)
{
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (len && strcmp(len, "0") != 0) ||
	       MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/* ---- dispatch -------------------------------------------------------------------------------------------- */

void api_actor(struct MHD_Connection *c, char *out, size_t outlen)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct passwd *pw;

	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		snprintf(out, outlen, "unknown");
		return;
	}
	pw = getpwuid(cred.uid);
	if (pw)
		snprintf(out, outlen, "%s", pw->pw_name);
	else
		snprintf(out, outlen, "uid:%u", (unsigned)cred.uid);
}

static enum MHD_Result handle_get(struct api *api, struct MHD_Connection *c, const char *url)
{
	enum MHD_Result r;
	bool handled = false;

	if (strcmp(url, API_PATH_STATUS) == 0)
		return api_send_json(c, 200, status_json(api->a), "application/json");
	if (strcmp(url, API_PATH_FRAMES) == 0)
		return get_frames(api, c);
	if (strcmp(url, API_PATH_METRICS) == 0)
		return get_metrics(api, c);
	if (strcmp(url, API_PATH_ADVISORIES) == 0 && api->a->doctor)
		return api_send_json(c, 200, doctor_json(doctor_advisories(api->a->doctor), doctor_busy(api->a->doctor)),
				     "application/json");
	r = api_knobs_get(api, c, url, &handled);
	if (handled)
		return r;
	return api_send_problem(c, 404, "no such endpoint: %s", url);
}

/*
 * MHD calls this once with the headers (*con_cls NULL), then once per piece of body, then once more with no data.
 * GET answers at once; POST collects its body (bounded) and answers on the last call.
 */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct api *api = cls;
	struct api_req *req = *con_cls;
	bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;

	(void)version;
	if (!post) {
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
			return api_send_problem(c, 405, "%s is not a method of this API", method);
		if (*upload_data_size || has_body(c))
			return api_send_problem(c, 413, "GET requests take no body");
		return handle_get(api, c, url);
	}
	if (!req) {
		if (!api_knobs_is_post(url))
			return api_send_problem(c, 405, "POST %s: not an action (actions: " API_PATH_PROPOSALS ", "
					    API_PATH_PROPOSALS "/ID/approve, " API_PATH_PROPOSALS "/ID/reject, "
					    API_PATH_REVERT ", " API_PATH_CHANGES "/ID/revert, " API_PATH_KNOBS
					    "/NAME/clear-conflict, " API_PATH_PAUSE ", " API_PATH_RESUME ")", url);
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		*con_cls = req;
		return MHD_YES;
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
	if (req->too_big)
		return api_send_problem(c, 413, "request bodies are at most %d bytes", API_BODY_MAX);
	return api_knobs_post(api, c, url, req->body ? req->body : "", req->len);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
	struct api_req *req = *con_cls;

	(void)cls;
	(void)c;
	(void)why;
	if (req) {
		free(req->body);
		free(req);
		*con_cls = NULL;
	}
}

/* ---- loop integration ------------------------------------------------------------------------------------ */

static void rearm(struct api *api);

static void on_mhd_timer(uv_timer_t *t)
{
	struct api *api = t->data;

	MHD_run(api->mhd);
	rearm(api);
}

static void on_mhd_poll(uv_poll_t *p, int status, int events)
{
	struct api *api = p->data;

	(void)status;
	(void)events;
	MHD_run(api->mhd);
	rearm(api);
}

static void rearm(struct api *api)
{
	MHD_UNSIGNED_LONG_LONG t;

	if (MHD_get_timeout(api->mhd, &t) == MHD_YES)
		uv_timer_start(&api->timer, on_mhd_timer, t, 0);
	else
		uv_timer_stop(&api->timer);
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
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
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
		else if (chown(cfg->socket_path, (uid_t)-1, g->gr_gid) < 0)
			log_warn("chown %s to group %s: %s", cfg->socket_path, cfg->socket_group, strerror(errno));
	}
	api->fd = fd;
	snprintf(api->path, sizeof(api->path), "%s", cfg->socket_path);
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	struct api *api = h->data;

	if (--api->open_handles == 0)
		free(api);
}

int api_start(struct agent *a, struct api **out, char *err, size_t errlen)
{
	struct api *api = calloc(1, sizeof(*api));
	const union MHD_DaemonInfo *info;
	int r;

	if (!api)
		return -ENOMEM;
	api->a = a;
	api->fd = -1;
	r = bind_socket(api, &a->cfg, err, errlen);
	if (r < 0) {
		free(api);
		return r;
	}
	api->mhd = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, handle, api, MHD_OPTION_LISTEN_SOCKET, api->fd,
				    MHD_OPTION_NOTIFY_COMPLETED, on_completed, api,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT,
				    (unsigned)10, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536, MHD_OPTION_END);
	if (!api->mhd) {
		snprintf(err, errlen, "libmicrohttpd failed to start on %s", api->path);
		api_stop(api);
		return -EIO;
	}
	info = MHD_get_daemon_info(api->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		snprintf(err, errlen, "libmicrohttpd has no epoll fd (built without epoll?)");
		api_stop(api);
		return -ENOTSUP;
	}
	uv_poll_init(a->loop, &api->poll, info->epoll_fd);
	api->poll.data = api;
	uv_timer_init(a->loop, &api->timer);
	api->timer.data = api;
	api->open_handles = 2;
	uv_poll_start(&api->poll, UV_READABLE, on_mhd_poll);
	rearm(api);
	*out = api;
	return 0;
}

void api_stop(struct api *api)
{
	if (!api)
		return;
	if (api->mhd) {
		if (api->open_handles)
			uv_poll_stop(&api->poll);
		MHD_stop_daemon(api->mhd); /* closes the listen socket it was given */
	} else if (api->fd >= 0) {
		close(api->fd);
	}
	if (api->path[0])
		unlink(api->path);
	/* The uv handles live inside API: it is freed by the last close callback, when the loop runs them. */
	if (api->open_handles) {
		uv_close((uv_handle_t *)&api->poll, on_closed);
		uv_close((uv_handle_t *)&api->timer, on_closed);
	} else {
		free(api);
	}
}
