/*
 * http: the parts of the API every handler shares, below the routes and the listeners (api.c).
 *
 * Owns the answers (api_send_json, api_send_problem and the headers every answer carries), the request being
 * handled (who asks: api_actor; what was answered, for the audit row), times in a query, and the driving of a
 * listener's libmicrohttpd daemon from the libuv loop (its socket polled, its timeout a uv timer). It knows no
 * route and renders no state of the agent. Only the API module includes libmicrohttpd's header.
 */
#ifndef NGXAT_HTTP_H
#define NGXAT_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api_internal.h"

struct agent;

/* The request REQ is being handled (its answer and actor are recorded there) until api_http_end. */
void api_http_begin(struct api_req *req);
/* No request is being handled. */
void api_http_end(void);
/* Send LEN bytes of BODY (copied) with STATUS and content type TYPE. */
enum MHD_Result api_send_body(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
			      size_t len);
/* Send O (consumed) with STATUS and content type TYPE. */
enum MHD_Result api_send_json(struct MHD_Connection *c, unsigned status, json_t *o, const char *type);
/* Send a problem object (RFC 9457) with STATUS and a formatted detail. */
enum MHD_Result api_send_problem(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A whole HTTP/1.1 answer (Connection: close) carrying the problem object for STATUS with DETAIL, written outside
 * libmicrohttpd (a connection refused, evicted or timed out), into OUT; its length in *LEN. 0 or -ENOBUFS/-ENOMEM. */
int api_problem_message(unsigned status, const char *detail, char *out, size_t outlen, size_t *len);
/* Add the headers every answer carries (X-Content-Type-Options, Cache-Control, Connection: close) to R. */
void api_common_headers(struct MHD_Response *r);
/* A time in a query: ms since the epoch, or negative seconds relative to now. 0 or -EINVAL/-ERANGE. */
int api_parse_time(struct agent *a, const char *s, int64_t *out);
/* Who is asking: the actor of the request being handled ("root", a user name, "uid:N", "token:NAME"). */
void api_actor(struct MHD_Connection *c, char *out, size_t outlen);
/* Drive L's daemon from the loop: poll its socket and arm its timeout. */
void api_http_watch(struct api_listener *l);
/* Run L's MHD soon (from the loop, not from inside a handler): a stream was resumed. */
void api_kick(struct api_listener *l);

#endif
