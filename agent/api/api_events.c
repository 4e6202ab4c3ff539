/*
 * api_events: GET /v1/events, the event ring (events.c) as server-sent events. See api_internal.h.
 *
 * Each stream is an MHD response from a callback that copies events from the ring, starting after the client's
 * Last-Event-ID. With nothing to send it suspends its connection; a publish resumes every suspended stream and
 * kicks MHD from the loop. The ring is every stream's queue: a stream never holds a copy of an event, only the id
 * of the next one, so a stream that falls API_SSE_LAG_MAX events behind (a client that does not read) is dropped,
 * and one that cannot be written to at all is closed by MHD after API_SSE_TIMEOUT_S. Nothing here waits.
 *
 * Only those two are cut (closed without the terminating chunk: a browser reports ERR_INCOMPLETE_CHUNKED_ENCODING).
 * When the agent stops, every stream sends what it has not sent yet and ends with the terminating chunk, so that its
 * client sees a stream that ended (EventSource reconnects after the retry delay), not a broken one.
 */
#include "build-config.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "api/api_internal.h"
#include "api/http.h"
#include "api/events.h"
#include "proto.h"
#include "strutil.h"

struct sse_client {
	struct api *api;
	struct api_listener *l;
	struct MHD_Connection *c;
	uint64_t next;      /* the id of the next event to send */
	size_t off;         /* bytes of event NEXT already sent */
	char head[256];     /* sent first: the reconnection delay, and a reset event when the replay has a gap */
	size_t head_len, head_off;
	bool suspended;
	bool dropped;       /* too slow: the next call cuts the stream */
	bool ending;        /* the agent stops: what is pending goes out, then the stream ends */
	struct sse_client *prev_c, *next_c;
};

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse_client *cl = cls;
	size_t o = 0;

	(void)pos;
	if (cl->dropped)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (cl->head_off < cl->head_len) {
		size_t n = cl->head_len - cl->head_off < max ? cl->head_len - cl->head_off : max;

		memcpy(buf, cl->head + cl->head_off, n);
		cl->head_off += n;
		o += n;
	}
	while (o < max && cl->next <= events_last_id()) {
		struct events_view v;
		size_t n;

		if (events_get(cl->next, &v) < 0) {
			/* Gone from the ring before it was sent: this client is too slow. */
			if (o)
				break;
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		n = v.len - cl->off < max - o ? v.len - cl->off : max - o;
		memcpy(buf + o, v.wire + cl->off, n);
		o += n;
		cl->off += n;
		if (cl->off == v.len) {
			cl->next++;
			cl->off = 0;
		}
	}
	if (o)
		return (ssize_t)o;
	if (cl->ending)
		return MHD_CONTENT_READER_END_OF_STREAM;
	cl->suspended = true;
	MHD_suspend_connection(cl->c);
	return 0;
}

static void free_client(void *cls)
{
	struct sse_client *cl = cls;
	struct api *api = cl->api;

	if (cl->prev_c)
		cl->prev_c->next_c = cl->next_c;
	else
		api->clients = cl->next_c;
	if (cl->next_c)
		cl->next_c->prev_c = cl->prev_c;
	api->nclients--;
	free(cl);
}

/*
 * MHD does not watch a suspended connection, so a client that went away is only noticed at the next write. When
 * the streams are all taken, the suspended ones are asked directly: a peer that hung up frees its place at once.
 */
static unsigned reap(struct api *api)
{
	unsigned live = 0;
	bool kick_unix = false, kick_tcp = false;

	for (struct sse_client *cl = api->clients; cl; cl = cl->next_c) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(cl->c, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct pollfd p = {.fd = ci ? ci->connect_fd : -1, .events = POLLRDHUP};

		if (!cl->dropped && cl->suspended && p.fd >= 0 && poll(&p, 1, 0) > 0 &&
		    (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			cl->dropped = true;
			cl->suspended = false;
			MHD_resume_connection(cl->c);
			kick_tcp = kick_tcp || cl->l->tcp;
			kick_unix = kick_unix || !cl->l->tcp;
		}
		live += !cl->dropped;
	}
	if (kick_unix)
		api_kick(&api->unix_l);
	if (kick_tcp)
		api_kick(&api->tcp_l);
	return live;
}

void api_events_notify(void *arg)
{
	struct api *api = arg;
	uint64_t last = events_last_id();
	bool kick_unix = false, kick_tcp = false;

	for (struct sse_client *cl = api->clients; cl; cl = cl->next_c) {
		if (!cl->dropped && last >= cl->next && last - cl->next >= API_SSE_LAG_MAX)
			cl->dropped = true;
		if (cl->suspended) {
			cl->suspended = false;
			MHD_resume_connection(cl->c);
			if (cl->l->tcp)
				kick_tcp = true;
			else
				kick_unix = true;
		}
	}
	if (kick_unix)
		api_kick(&api->unix_l);
	if (kick_tcp)
		api_kick(&api->tcp_l);
}

void api_events_end(struct api *api, struct api_listener *l)
{
	bool any = false;

	for (struct sse_client *cl = api->clients; cl; cl = cl->next_c) {
		if (cl->l != l)
			continue;
		cl->ending = true;
		any = true;
		if (cl->suspended) {
			cl->suspended = false;
			MHD_resume_connection(cl->c);
		}
	}
	if (any)
		api_kick(l);
}

/*
 * MHD must not be stopped with a suspended connection, and a stream cut here would look broken to its client: each
 * stream is resumed to send what it has left and its terminating chunk, and MHD is run a few times to write them. A
 * pass does not wait (it does what the sockets take at once): what a client has not taken by then is closed by
 * MHD_stop_daemon as before.
 */
void api_events_close_all(struct api *api)
{
	api->streams_ending = true;
	for (struct sse_client *cl = api->clients; cl; cl = cl->next_c) {
		cl->ending = true;
		if (cl->suspended) {
			cl->suspended = false;
			MHD_resume_connection(cl->c);
		}
	}
	for (int i = 0; i < API_SSE_END_PASSES && api->nclients; i++) {
		if (api->unix_l.mhd)
			MHD_run(api->unix_l.mhd);
		if (api->tcp_l.mhd)
			MHD_run(api->tcp_l.mhd);
	}
}

enum MHD_Result api_events_get(struct api *api, struct api_listener *l, struct MHD_Connection *c)
{
	const char *last_s = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
	uint64_t oldest = events_oldest_id(), last = events_last_id();
	struct MHD_Response *r;
	struct sse_client *cl;
	enum MHD_Result ret;
	int64_t seen = -1;
	int n;

	if (last_s && str_to_i64(last_s, 0, INT64_MAX, &seen) < 0)
		return api_send_problem(c, 400, "Last-Event-ID: expected an event id, got '%.40s'", last_s);
	if (api->streams_ending)
		return api_send_problem(c, 503, "the agent is stopping");
	if (api->nclients >= API_SSE_CLIENTS_MAX && reap(api) >= API_SSE_CLIENTS_MAX)
		return api_send_problem(c, 503, "too many event streams open (%d)", API_SSE_CLIENTS_MAX);
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return MHD_NO;
	cl->api = api;
	cl->l = l;
	cl->c = c;
	cl->next = last + 1;
	n = snprintf(cl->head, sizeof(cl->head), "retry: 3000\n\n");
	if (seen >= 0) {
		if ((uint64_t)seen + 1 >= oldest && (uint64_t)seen <= last) {
			cl->next = (uint64_t)seen + 1;
		} else {
			/* Events were missed (too old for the ring, or of another run): the client must read the
			 * state again. What the ring still has of them follows; nothing, for an id from the future. */
			n += snprintf(cl->head + n, sizeof(cl->head) - (size_t)n,
				      "event: " API_EV_RESET "\ndata: {\"" API_K_LAST_EVENT_ID "\":%lld,\"" API_K_OLDEST
				      "\":%llu}\n\n",
				      (long long)seen, (unsigned long long)oldest);
			if ((uint64_t)seen < oldest)
				cl->next = oldest;
		}
	}
	cl->head_len = (size_t)n;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader, cl, free_client);
	if (!r) {
		free(cl);
		return MHD_NO;
	}
	cl->next_c = api->clients;
	if (api->clients)
		api->clients->prev_c = cl;
	api->clients = cl;
	api->nclients++;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	api_common_headers(r);
	/* The kernel would queue megabytes for a client that does not read (send buffer autotuning): a fixed buffer
	 * keeps that queue small, so that such a client falls behind in the ring and is dropped. */
	{
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		int sndbuf = API_SSE_SNDBUF;

		if (ci)
			setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	}
	/* A stream is quiet between events: only one that cannot be written to for this long is closed. */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)API_SSE_TIMEOUT_S);
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}
