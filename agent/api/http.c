/*
 * http: what every handler of the API shares: the answers (JSON, problem objects, the common headers), who is
 * asking (the request being handled), times in a query, and libmicrohttpd driven from the libuv loop. See http.h.
 */
#include "build-config.h"

#include "api/http.h"

#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "api/wire_text.h"
#include "proto.h"
#include "strutil.h"

/* The request being handled (one thread; handlers do not nest): who asked, and what they were answered. */
static struct api_req *current;

void api_http_begin(struct api_req *req)
{
	current = req;
}

void api_http_end(void)
{
	current = NULL;
}

/* ---- responses ------------------------------------------------------------------------------------------- */

/*
 * One request per connection: every answer closes it. Only a connection's first head is read by the agent and held
 * to http_frame's rules (api_conn.c); libmicrohttpd (0.9.75) parses the next ones itself, and took "Content-Length :
 * 38" for no length (its body then ran as a request of its own), folded headers and bare CRs (issue 22, R8). A fresh
 * connection costs about 0.35 ms of the agent's CPU (bench/README.md); ngxctl and curl open one per request anyway.
 */
void api_common_headers(struct MHD_Response *r)
{
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
}

static json_t *problem_json(unsigned status, const char *detail);

static enum MHD_Result queue_body(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
				  size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	api_common_headers(r);
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"ngx-autotune\"");
	if (current)
		current->status = status;
	api_conn_answering(c);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Every answer is charged to the bytes of answers not yet written (API_OUT_MAX) until it ends: past them, a client
 * is answered a short 503 instead (issue 22, R2: 128 clients that asked and did not read held 765 MiB). */
enum MHD_Result api_send_body(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
			      size_t len)
{
	char detail[160];
	json_t *o;
	char *s;
	enum MHD_Result ret;

	if (api_conn_out_charge(c, len))
		return queue_body(c, status, type, body, len);
	snprintf(detail, sizeof(detail), "the API is busy: its answers not yet read by their clients are at their limit "
		 "(%u MiB); try again", API_OUT_MAX >> 20);
	if (current)
		snprintf(current->problem, sizeof(current->problem), "%s", detail);
	o = problem_json(503, detail);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!s)
		return MHD_NO;
	ret = queue_body(c, 503, "application/problem+json", s, strlen(s));
	free(s);
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
	ret = api_send_body(c, status, type, s, strlen(s));
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
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

/* The problem object (RFC 9457) for STATUS with DETAIL. */
static json_t *problem_json(unsigned status, const char *detail)
{
	/* A detail may quote what a client sent (jansson's error near a byte that is not UTF-8): wire_text. */
	return json_pack("{s:s, s:s, s:i, s:o}", API_K_ERR_TYPE, "about:blank", API_K_ERR_TITLE, status_title(status),
			 API_K_ERR_STATUS, (int)status, API_K_ERR_DETAIL, wire_text(detail));
}

enum MHD_Result api_send_problem(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (current)
		snprintf(current->problem, sizeof(current->problem), "%.255s", detail);
	return api_send_json(c, status, problem_json(status, detail), "application/problem+json");
}

int api_problem_message(unsigned status, const char *detail, char *out, size_t outlen, size_t *len)
{
	json_t *o = problem_json(status, detail);
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	int n;

	json_decref(o);
	if (!body)
		return -ENOMEM;
	n = snprintf(out, outlen, "HTTP/1.1 %u %s\r\nContent-Type: application/problem+json\r\nContent-Length: %zu\r\n"
		     "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n%s\r\n%s",
		     status, status_title(status), strlen(body), status == 503 ? "Retry-After: 1\r\n" : "", body);
	free(body);
	if (n < 0 || (size_t)n >= outlen)
		return -ENOBUFS;
	*len = (size_t)n;
	return 0;
}

/* A time in the query: ms since the epoch, or a negative number of seconds relative to now. */
int api_parse_time(struct agent *a, const char *s, int64_t *out)
{
	int64_t v;
	int r = str_to_i64(s, -(int64_t)10 * 366 * 86400, INT64_MAX / 2, &v);

	if (r < 0)
		return r;
	*out = v <= 0 ? agent_now_ms(a) + v * 1000 : v;
	return 0;
}

/* ---- who is asking ---------------------------------------------------------------------------------------- */

void api_actor(struct MHD_Connection *c, char *out, size_t outlen)
{
	(void)c;
	snprintf(out, outlen, "%s", current && current->actor[0] ? current->actor : "unknown");
}

/* ---- loop integration ------------------------------------------------------------------------------------ */

static void rearm(struct api_listener *l);

static void on_mhd_timer(uv_timer_t *t)
{
	struct api_listener *l = t->data;

	MHD_run(l->mhd);
	rearm(l);
}

static void on_mhd_poll(uv_poll_t *p, int status, int events)
{
	struct api_listener *l = p->data;

	(void)status;
	(void)events;
	MHD_run(l->mhd);
	rearm(l);
}

static void rearm(struct api_listener *l)
{
	MHD_UNSIGNED_LONG_LONG t;

	if (MHD_get_timeout(l->mhd, &t) == MHD_YES)
		uv_timer_start(&l->timer, on_mhd_timer, t, 0);
	else
		uv_timer_stop(&l->timer);
}

void api_kick(struct api_listener *l)
{
	if (l->mhd)
		uv_timer_start(&l->kick, on_mhd_timer, 0, 0);
}

void api_http_watch(struct api_listener *l)
{
	uv_poll_start(&l->poll, UV_READABLE, on_mhd_poll);
	rearm(l);
}
