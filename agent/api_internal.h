/*
 * api_internal: what the files of the API module share (api.c: the server, status, frames; api_knobs.c: knobs,
 * changes, proposals, reverts, audit). Only the API module includes libmicrohttpd's header.
 */
#ifndef NGXAT_API_INTERNAL_H
#define NGXAT_API_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"

#define API_BODY_MAX 16384 /* request bodies are small JSON objects */

struct agent;

struct api {
	struct agent *a;
	struct MHD_Daemon *mhd;
	int fd;
	char path[CONFIG_PATH_MAX];
	uv_poll_t poll;
	uv_timer_t timer;
	int open_handles; /* uv handles not yet closed: API is freed when this reaches 0 */
};

/* A request being read: its body, and who sent it. */
struct api_req {
	char *body;
	size_t len;
	bool too_big;
};

/* Send O (consumed) with STATUS and content type application/json. */
enum MHD_Result api_send_json(struct MHD_Connection *c, unsigned status, json_t *o, const char *type);
/* Send a problem object (RFC 9457) with STATUS and a formatted detail. */
enum MHD_Result api_send_problem(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A time in a query: ms since the epoch, or negative seconds relative to now. 0 or -EINVAL/-ERANGE. */
int api_parse_time(struct agent *a, const char *s, int64_t *out);
/* Who is asking: "root", a user name, or "uid:N", from the Unix socket's peer credentials. */
void api_actor(struct MHD_Connection *c, char *out, size_t outlen);

/* api_knobs.c: GET routes it owns (NULL result: not one of them). */
enum MHD_Result api_knobs_get(struct api *api, struct MHD_Connection *c, const char *url, bool *handled);
/* api_knobs.c: whether URL is a POST route. */
bool api_knobs_is_post(const char *url);
/* api_knobs.c: a complete POST request. */
enum MHD_Result api_knobs_post(struct api *api, struct MHD_Connection *c, const char *url, const char *body,
			       size_t len);

#endif
