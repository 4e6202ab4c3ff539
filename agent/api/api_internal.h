/*
 * api_internal: what the files of the API module share (api.c: the listeners, who may do what, status, frames;
 * api_knobs.c: knobs, changes, proposals, reverts, audit; api_events.c: GET /v1/events; api_console.c: the
 * console page; api_auth.c: tokens and credentials; api_conn.c: accepting, the connection shares, deadlines).
 * Only the API module includes libmicrohttpd's header.
 */
#ifndef NGXAT_API_INTERNAL_H
#define NGXAT_API_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "api/admit.h"
#include "api/api_auth.h"
#include "config.h"

#define API_BODY_MAX 16384        /* request bodies are small JSON objects */
#define API_SSE_CLIENTS_MAX 16    /* event streams open at once, over both listeners */
#define API_SSE_LAG_MAX 256       /* events a stream may fall behind before it is dropped */
#define API_SSE_TIMEOUT_S 60      /* a stream that cannot be written to for this long is closed */
#define API_SSE_SNDBUF 32768      /* a stream's socket send buffer (the kernel doubles it) */
#define API_SSE_END_PASSES 8      /* MHD runs at stop to write the streams' last events and terminating chunks */
#define API_HEARTBEAT_MS 15000    /* a status event this often */
#define API_REQUEST_MS 10000      /* a whole request (line, headers, body) arrives within this of its connection's
				   * accept or last answer, or the connection is closed (408 if a request began) */
#define API_STALL_S 10            /* MHD closes a connection whose answer cannot be written for this long */
#define API_OUT_MAX (16u << 20)   /* bytes of answers queued and not yet written, all connections together (a
				   * client that asks and does not read holds its answer until API_STALL_S) */
#define API_OUT_SNDBUF 65536      /* an answer's socket send buffer (the kernel doubles it): what the kernel holds
				   * for a client that does not read, charged to the agent's memory like the answer */
#define API_BACKLOG 512           /* a burst of connects waits here for the next accept, not in the client */
#define API_ACCEPT_BATCH 64       /* connections accepted per wake-up of a listener, so that the loop ticks on */
#define API_DENIED_WINDOW_MS 60000 /* of the requests refused for who sent them, the first of each kind (the same
				    * audit row: actor, peer, status, path and problem) in this window is an audit
				    * row; the others are counted into it */
#define API_DENIED_KINDS 16       /* kinds sampled at once; refusals of further kinds share one row a window */

struct agent;
struct api;
struct api_conn;
struct sse_client;

/* One kind of refused request in its sampling window (api.c). */
struct api_denied_kind {
	bool used;
	uint64_t hash;            /* of its audit row's actor, peer, outcome and detail */
	char actor[64], peer[64], outcome[32];
	int64_t since_ms;         /* the window's start: the refusal that was written */
	int64_t last_ms;          /* the window's last refusal */
	int64_t row_id;           /* the audit row written (0: held while the store fails) */
	uint64_t more;            /* refusals after it in the window, to be counted into the row */
};

/* One listening socket and its MHD daemon, driven by the loop. */
struct api_listener {
	struct api *api;
	bool tcp;                 /* the TCP listener: tokens, Host and Origin checks */
	struct MHD_Daemon *mhd;   /* NULL: not started */
	int fd;
	uv_poll_t poll;           /* MHD's epoll fd */
	uv_poll_t *accept_poll;   /* the listening socket (fd): accepted here, never by MHD; NULL: none now (a reload
				   * closed the TCP listener, or moves it: a new socket gets a new watch) */
	uv_timer_t timer;         /* MHD's own timeout */
	uv_timer_t kick;          /* runs MHD soon after an event stream was resumed */
	struct api_hosts hosts;   /* TCP: the Host values it answers to */
};

struct api {
	struct agent *a;
	struct api_listener unix_l, tcp_l;
	struct sockaddr_storage tcp_sa; /* the address tcp_l's socket is bound to */
	unsigned tcp_salen;
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
	/* api_conn.c: every connection of both listeners, from accept to close (admit.h: its shares). */
	struct admit_limits lim;
	size_t nslots;
	struct admit_entry *adm;  /* nslots, parallel to conns */
	struct api_conn *conns;
	struct api_conn *adding;  /* the connection being handed to MHD (its NOTIFY_STARTED) */
	uv_timer_t deadlines;     /* the earliest deadline of a connection */
	int head_epfd;            /* epoll set (edge-triggered) of the connections whose head is not complete yet */
	uv_poll_t heads;          /* the loop's watch of head_epfd */
	int reserve_fd;           /* given up to accept (and refuse) a connection when the agent is out of files */
	uint64_t refused, evicted, expired;
	size_t out_held;          /* bytes of answers queued and not yet written (API_OUT_MAX) */
	uint64_t out_refused;     /* answers refused 503 because they would have passed API_OUT_MAX */
	/* api.c: requests refused for who sent them (401, 403) since the start, and their sampling into the audit
	 * trail: [API_DENIED_KINDS] is the row shared by the kinds beyond the others. */
	uint64_t denied_401, denied_403;
	struct api_denied_kind denied[API_DENIED_KINDS + 1];
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


/* api.c: one of API's uv handles has closed; the last one frees API. */
void api_handle_closed(struct api *api);

/* api_conn.c: the connection table, sized from the file limit. 0 or -ENOMEM. */
int api_conns_init(struct api *api);
/* api_conn.c: accept on L's listening socket (admitted, or refused with 503 at once). 0 or -ENOMEM. */
int api_conns_listen(struct api_listener *l);
/* api_conn.c: stop accepting on L (its watch is closed, not its socket); close the connections still being read
 * before MHD had them. */
void api_conns_stop(struct api_listener *l);
/* api_conn.c: free the table (all connections are closed). */
void api_conns_free(struct api *api);
/* api_conn.c: MHD_OPTION_NOTIFY_CONNECTION: a connection handed to MHD starts or is closed. */
void api_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		     enum MHD_ConnectionNotificationCode toe);
/* api_conn.c: MHD_OPTION_URI_LOG_CALLBACK: a request line arrived on a connection kept alive. */
void *api_conn_uri_log(void *cls, const char *uri, struct MHD_Connection *c);
/* api_conn.c: C's request was read whole: it is being answered (no deadline, never evicted). */
void api_conn_answering(struct MHD_Connection *c);
/* api_conn.c: C's answer ended: the next request must arrive whole within API_REQUEST_MS. */
void api_conn_answered(struct MHD_Connection *c);
/* api_conn.c: a request on C showed a valid token: C leaves the tokenless share. */
void api_conn_tokened(struct MHD_Connection *c);
/* api_conn.c: the bytes an answer on C may still hold, of API_OUT_MAX (all of it for a connection MHD does not
 * know of). */
size_t api_conn_out_room(struct MHD_Connection *c);
/* api_conn.c: charge an answer of LEN bytes on C to API_OUT_MAX until C's answer ends; false (nothing charged) when
 * it would pass it. */
bool api_conn_out_charge(struct MHD_Connection *c, size_t len);

/* api_events.c: GET /v1/events on listener L. */
enum MHD_Result api_events_get(struct api *api, struct api_listener *l, struct MHD_Connection *c);
/* api_events.c: after a publish: wake the streams waiting for it, drop those too far behind. */
void api_events_notify(void *api);
/* api_events.c: the streams of listener L send what they have left and end with the terminating chunk, as MHD
 * writes them (a reload closed or moved L's socket: its clients reconnect to where it is now, or learn it is gone). */
void api_events_end(struct api *api, struct api_listener *l);
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
