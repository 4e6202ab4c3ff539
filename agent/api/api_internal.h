/*
 * api_internal: what the files of the API module share (api.c: the listeners, who may do what, status, frames;
 * api_knobs.c: knobs, changes, proposals, reverts, audit; api_events.c: GET /v1/events; api_console.c: the
 * console page; api_auth.c: tokens and credentials). Only the API module includes libmicrohttpd's header.
 */
#ifndef NGXAT_API_INTERNAL_H
#define NGXAT_API_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "api/api_auth.h"
#include "config.h"

#define API_BODY_MAX 16384        /* request bodies are small JSON objects */
#define API_SSE_CLIENTS_MAX 16    /* event streams open at once, over both listeners */
#define API_SSE_LAG_MAX 256       /* events a stream may fall behind before it is dropped */
#define API_SSE_TIMEOUT_S 60      /* a stream that cannot be written to for this long is closed */
#define API_SSE_SNDBUF 32768      /* a stream's socket send buffer (the kernel doubles it) */
#define API_SSE_END_PASSES 8      /* MHD runs at stop to write the streams' last events and terminating chunks */
#define API_HEARTBEAT_MS 15000    /* a status event this often */

struct agent;
struct api;
struct sse_client;

/* One listening socket and its MHD daemon, driven by the loop. */
struct api_listener {
	struct api *api;
	bool tcp;                 /* the TCP listener: tokens, Host and Origin checks */
	struct MHD_Daemon *mhd;   /* NULL: not started */
	int fd;
	uv_poll_t poll;
	uv_timer_t timer;         /* MHD's own timeout */
	uv_timer_t kick;          /* runs MHD soon after an event stream was resumed */
	struct api_hosts hosts;   /* TCP: the Host values it answers to */
};

struct api {
	struct agent *a;
	struct api_listener unix_l, tcp_l;
	char path[CONFIG_PATH_MAX];
	gid_t group;              /* the socket's group: its members may act */
	char group_name[64];
	struct api_tokens *tokens; /* NULL: no token file, POST on TCP is refused */
	char no_tokens[256];      /* why there are none */
	struct sse_client *clients;
	unsigned nclients;
	bool streams_ending;      /* the API stops: the streams end, no new one starts */
	uv_timer_t heartbeat;
	int open_handles;         /* uv handles not yet closed: API is freed when this reaches 0 */
};

/* A request being read: its body, who sent it, and what it was answered. */
struct api_req {
	char *body;
	size_t len;
	bool too_big;
	bool get;           /* a GET or HEAD that passed the first call's checks: answered on the next call */
	char actor[64];     /* the user (Unix socket) or "token:NAME" (TCP); "" until a POST is allowed */
	char peer[64];      /* "unix:pid=N,uid=N" or "ADDRESS:PORT" */
	unsigned status;    /* of the answer queued */
	char problem[256];  /* its problem detail, if any */
};



/* api_events.c: GET /v1/events on listener L. */
enum MHD_Result api_events_get(struct api *api, struct api_listener *l, struct MHD_Connection *c);
/* api_events.c: after a publish: wake the streams waiting for it, drop those too far behind. */
void api_events_notify(void *api);
/* api_events.c: before the daemons stop: every stream sends what it has left and ends with its terminating chunk. */
void api_events_close_all(struct api *api);

/* api_console.c: GET / and /console: the console page, with its Content-Security-Policy. */
enum MHD_Result api_console_get(struct MHD_Connection *c);

/* api_knobs.c: GET routes it owns (NULL result: not one of them). */
enum MHD_Result api_knobs_get(struct api *api, struct MHD_Connection *c, const char *url, bool *handled);
/* api_knobs.c: whether URL is a POST route. */
bool api_knobs_is_post(const char *url);
/* api_knobs.c: a complete POST request. */
enum MHD_Result api_knobs_post(struct api *api, struct MHD_Connection *c, const char *url, const char *body,
			       size_t len);

#endif
