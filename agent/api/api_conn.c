/*
 * api_conn: every connection of the API from accept to close, under the shares of admit.h.
 *
 * The agent accepts, not libmicrohttpd: MHD 0.9.75 at its connection limit takes its listening socket out of its
 * epoll set and puts it back only on a later MHD_run, which nothing calls once its idle connections have timed out,
 * so the accept queue filled and the API never answered again. Here the listening socket is always polled: every
 * connection is accepted at once and is admitted, takes the place of an idle one (admit_decide), or is answered
 * 503 and closed; a TCP one over the share of connections without a token is admitted pending, and its head
 * decides (admit_head: a token holder is not refused because others hold that share). An admitted connection's
 * first request line and headers are read (peeked) here, held to http_frame's rules and to the request deadline,
 * and only then handed to MHD (MHD_add_connection), which reads them again from the socket. Deadlines: a whole
 * request within API_REQUEST_MS of accept. Every answer closes its connection (http.c), so the head checked here is
 * the only one a connection carries.
 *
 * A head is peeked, not read, so its bytes stay in the socket until MHD reads them: a level-triggered watch of that
 * socket would report it readable again at once, and a connection that sent half a request line spun the loop at
 * 100% of a core until its deadline (issue 22, R1). The sockets of heads not yet complete are therefore in an epoll
 * set of their own, edge-triggered (a connection wakes the loop when more bytes come, or when its peer closes), and
 * only that set's descriptor is watched by the loop.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "api/api_internal.h"
#include "api/http.h"
#include "api/http_frame.h"
#include "log.h"

enum conn_state {
	CONN_HEAD,      /* ours: its first head not complete yet */
	CONN_READING,   /* MHD's: a request being read */
	CONN_ANSWERING, /* MHD's: read whole, being answered */
	CONN_IDLE,      /* MHD's: kept alive between requests */
};

struct api_conn {
	struct api_listener *l;
	int fd;                   /* -1: none (closed, or MHD closed it) */
	enum conn_state state;
	bool mhd;                 /* MHD owns the socket: it closes it */
	bool watched;             /* HEAD: its socket is in api->head_epfd */
	int64_t deadline_ms;      /* 0: none */
	size_t out_bytes;         /* its answer's bytes charged to api->out_held until the answer ends */
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

static size_t slot_of(struct api *api, const struct api_conn *k)
{
	return (size_t)(k - api->conns);
}

static struct api_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void rearm_deadlines(struct api *api);

/* K's answer is written or gone: its bytes leave the total. */
static void out_release(struct api *api, struct api_conn *k)
{
	api->out_held -= k->out_bytes < api->out_held ? k->out_bytes : api->out_held;
	k->out_bytes = 0;
}

/* The slot of K is free once its socket is closed (by us or MHD). */
static void release(struct api *api, struct api_conn *k)
{
	if (k->fd >= 0)
		return;
	out_release(api, k);
	api->adm[slot_of(api, k)] = (struct admit_entry){0};
	k->mhd = false;
	k->deadline_ms = 0;
}

/* K's head is no more ours to wait for: its socket leaves the set of heads. */
static void unwatch(struct api *api, struct api_conn *k)
{
	if (!k->watched)
		return;
	epoll_ctl(api->head_epfd, EPOLL_CTL_DEL, k->fd, NULL);
	k->watched = false;
}

/*
 * Answer STATUS with DETAIL on FD, outside MHD, before it is closed. Best effort: a socket whose buffer is full
 * gets nothing. What the client had sent is read first, so that the close is not a reset that loses the answer.
 */
static void say(int fd, unsigned status, const char *detail)
{
	char msg[1024], sink[4096];
	size_t len;

	if (api_problem_message(status, detail, msg, sizeof(msg), &len) == 0)
		(void)!send(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
}

/* Close K: answered STATUS first when it is nonzero and a request may have begun. */
static void drop(struct api *api, struct api_conn *k, unsigned status, const char *detail)
{
	if (k->fd < 0)
		return;
	if (status && k->state != CONN_IDLE && k->state != CONN_ANSWERING)
		say(k->fd, status, detail);
	api->adm[slot_of(api, k)].closing = true;
	k->deadline_ms = 0;
	if (k->mhd) {
		/* MHD owns the socket: a shut-down socket is an end of input it closes on its next run. */
		shutdown(k->fd, SHUT_RDWR);
		api_kick(k->l);
		return;
	}
	unwatch(api, k);
	close(k->fd);
	k->fd = -1;
	release(api, k);
}

/* Log the Nth event of a kind: the first, then at each power of two, so that a flood leaves a few lines. */
static void count_event(uint64_t *n, const char *what, const char *peer_kind, const char *why)
{
	++*n;
	if ((*n & (*n - 1)) == 0)
		log_warn("API: %s a %s connection (%s); %llu so far", what, peer_kind, why, (unsigned long long)*n);
}

static void hand_to_mhd(struct api *api, struct api_conn *k)
{
	struct api_listener *l = k->l;
	int fd = k->fd;

	unwatch(api, k);
	k->state = CONN_READING;
	k->mhd = true;
	api->adding = k;
	if (MHD_add_connection(l->mhd, fd, (struct sockaddr *)&k->addr, k->addrlen) != MHD_YES) {
		/* MHD closed the socket (and, if it got as far, notified its close). */
		if (k->mhd) {
			k->fd = -1;
			release(api, k);
		}
		api->adding = NULL;
		return;
	}
	api->adding = NULL;
	api_kick(l);
}

/* Whether the complete head BUF (N bytes) shows a token of the token file. */
static bool head_tokened(const struct api *api, const char *buf, size_t n)
{
	char auth[API_TOKEN_SECRET_MAX + 64];
	const char *tok;
	size_t len;

	return api->tokens && http_head_value(buf, n, "Authorization", auth, sizeof(auth)) == 0 &&
	       api_bearer(auth, &tok, &len) == 0 && api_tokens_match(api->tokens, tok, len) != NULL;
}

/* K's socket reported EVENTS (epoll's): its head is complete and handed on, refused, or waited for further. */
static void on_head(struct api *api, struct api_conn *k, uint32_t events)
{
	char buf[HTTP_HEAD_MAX], detail[160];
	ssize_t n;
	int r;

	n = recv(k->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR) && !(events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)))
		return;
	if (n <= 0) {
		drop(api, k, 0, NULL);
		return;
	}
	r = http_head_check(buf, (size_t)n, detail, sizeof(detail));
	if (r == -EAGAIN && !(events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)))
		return; /* edge-triggered: the next bytes wake it again */
	if (r == -EAGAIN) {
		/* The peer closed (or shut its side) before its head was whole: nothing more will come. */
		drop(api, k, 0, NULL);
		return;
	}
	if (r < 0) {
		drop(api, k, r == -EMSGSIZE ? 431 : 400, detail);
		return;
	}
	/* Admitted pending over the tokenless share: its head says whether it had a token. */
	if (api->adm[slot_of(api, k)].pending &&
	    !admit_head(api->adm, api->nslots, &api->lim, slot_of(api, k), head_tokened(api, buf, (size_t)n))) {
		count_event(&api->refused, "refused", "TCP", "the share of connections without a token is taken");
		drop(api, k, 503, "the API is busy: the share of connections without a token is taken; try again");
		return;
	}
	hand_to_mhd(api, k);
}

/* The set of heads has events: each connection's is taken once (edge-triggered), so none is reported again until
 * its socket changes. */
static void on_heads(uv_poll_t *p, int status, int events)
{
	struct api *api = p->data;
	struct epoll_event ev[API_ACCEPT_BATCH];
	int n;

	(void)status;
	(void)events;
	n = epoll_wait(api->head_epfd, ev, API_ACCEPT_BATCH, 0);
	for (int i = 0; i < n; i++) {
		struct api_conn *k = ev[i].data.ptr;

		/* Only K's own event closes K, so a connection in this batch is still the one that was added. */
		if (k->watched && k->fd >= 0 && k->state == CONN_HEAD)
			on_head(api, k, ev[i].events);
	}
	rearm_deadlines(api);
}

static void on_deadline(uv_timer_t *t)
{
	struct api *api = t->data;
	int64_t now = agent_now_ms(api->a);
	char detail[128];

	snprintf(detail, sizeof(detail), "the request did not arrive whole within %d ms", API_REQUEST_MS);
	for (size_t i = 0; i < api->nslots; i++) {
		struct api_conn *k = &api->conns[i];

		if (!api->adm[i].used || api->adm[i].closing || !k->deadline_ms || k->deadline_ms > now)
			continue;
		count_event(&api->expired, "timed out", api->adm[i].key.tcp ? "TCP" : "Unix-socket", detail);
		drop(api, k, k->state == CONN_IDLE ? 0 : 408, detail);
	}
	rearm_deadlines(api);
}

static void rearm_deadlines(struct api *api)
{
	int64_t first = 0, now = agent_now_ms(api->a);

	for (size_t i = 0; i < api->nslots; i++) {
		int64_t d = api->conns[i].deadline_ms;

		if (api->adm[i].used && !api->adm[i].closing && d && (!first || d < first))
			first = d;
	}
	if (!first)
		uv_timer_stop(&api->deadlines);
	else
		uv_timer_start(&api->deadlines, on_deadline, first > now ? (uint64_t)(first - now) : 0, 0);
}

/* Who is connecting on FD: a Unix-socket peer's uid, or a TCP peer's address. */
static void peer_key(const struct api_listener *l, int fd, const struct sockaddr_storage *sa, struct admit_key *k)
{
	*k = (struct admit_key){.tcp = l->tcp};
	if (!l->tcp) {
		struct ucred cr;
		socklen_t len = sizeof(cr);

		/* No credentials (cannot happen on Linux): one shared share, of uid -1. */
		k->uid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 ? (uint32_t)cr.uid : UINT32_MAX;
	} else if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

		k->addr[10] = k->addr[11] = 0xff;
		memcpy(k->addr + 12, &in->sin_addr, 4);
	} else if (sa->ss_family == AF_INET6) {
		memcpy(k->addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	}
}

static void refuse(int fd, const char *why)
{
	char detail[200];

	snprintf(detail, sizeof(detail), "the API is busy: %s; try again", why);
	say(fd, 503, detail);
	close(fd);
}

/* The agent is out of files: give up the reserve to accept one and refuse it, so the queue does not fill. */
static void refuse_out_of_files(struct api *api, int lfd)
{
	int fd;

	if (api->reserve_fd < 0)
		return;
	close(api->reserve_fd);
	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0)
		refuse(fd, "the agent is out of files");
	api->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void admit_one(struct api_listener *l, int fd, const struct sockaddr_storage *sa, socklen_t salen)
{
	struct api *api = l->api;
	struct admit_decision d;
	struct admit_key key;
	struct api_conn *k;
	size_t i;

	peer_key(l, fd, sa, &key);
	admit_decide(api->adm, api->nslots, &api->lim, &key, &d);
	if (d.verdict == ADMIT_REFUSE) {
		count_event(&api->refused, "refused", l->tcp ? "TCP" : "Unix-socket", d.why);
		refuse(fd, d.why);
		return;
	}
	if (d.verdict == ADMIT_EVICT) {
		count_event(&api->evicted, "made room by closing", api->adm[d.victim].key.tcp ? "TCP" : "Unix-socket",
			    "its place went to a newer connection");
		drop(api, &api->conns[d.victim], 503, "this connection gave way to a newer one: the API's connections "
			     "are all taken and this one had not sent a whole request");
	}
	/* What the kernel holds of an answer a client does not read is bounded as the answer is (API_OUT_MAX). */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){API_OUT_SNDBUF}, sizeof(int));
	i = d.slot;
	k = &api->conns[i];
	*k = (struct api_conn){.l = l, .fd = fd, .state = CONN_HEAD, .addrlen = salen};
	memcpy(&k->addr, sa, salen);
	api->adm[i] = (struct admit_entry){
		.used = true, .pending = d.pending, .since_ms = agent_now_ms(api->a), .key = key};
	k->deadline_ms = api->adm[i].since_ms + API_REQUEST_MS;
	/* Added when bytes are already there, the connection is reported at once (epoll checks readiness on ADD). */
	if (epoll_ctl(api->head_epfd, EPOLL_CTL_ADD, fd, &(struct epoll_event){
			.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = k}) < 0) {
		log_warn("API: epoll_ctl: %s", strerror(errno));
		close(fd);
		k->fd = -1;
		release(api, k);
		return;
	}
	k->watched = true;
}

static void on_accept(uv_poll_t *p, int status, int events)
{
	struct api_listener *l = p->data;

	(void)status;
	(void)events;
	for (int i = 0; i < API_ACCEPT_BATCH; i++) {
		struct sockaddr_storage sa;
		socklen_t salen = sizeof(sa);
		int fd = accept4(l->fd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				refuse_out_of_files(l->api, l->fd);
			else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("API: accept: %s", strerror(errno));
			break;
		}
		admit_one(l, fd, &sa, salen);
	}
	rearm_deadlines(l->api);
}

int api_conns_init(struct api *api)
{
	struct rlimit rl = {0};

	getrlimit(RLIMIT_NOFILE, &rl);
	admit_limits_for(rl.rlim_cur == RLIM_INFINITY ? 1UL << 20 : (unsigned long)rl.rlim_cur, &api->lim);
	api->nslots = admit_slots(&api->lim);
	api->adm = calloc(api->nslots, sizeof(*api->adm));
	api->conns = calloc(api->nslots, sizeof(*api->conns));
	api->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!api->adm || !api->conns)
		return -ENOMEM;
	for (size_t i = 0; i < api->nslots; i++)
		api->conns[i].fd = -1;
	api->head_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (api->head_epfd < 0)
		return -errno;
	uv_timer_init(api->a->loop, &api->deadlines);
	api->deadlines.data = api;
	api->open_handles++;
	uv_poll_init(api->a->loop, &api->heads, api->head_epfd);
	api->heads.data = api;
	api->open_handles++;
	uv_poll_start(&api->heads, UV_READABLE, on_heads);
	log_info("API limits: %u connections, %u per user on the socket, %u per TCP address, %u over TCP without a "
		 "token; a whole request within %d ms", api->lim.total, api->lim.per_peer, api->lim.per_addr,
		 api->lim.tokenless, API_REQUEST_MS);
	return 0;
}

/* The closed watch of a listening socket: the listener may have a new one by now. */
static void on_accept_closed(uv_handle_t *h)
{
	struct api *api = ((struct api_listener *)h->data)->api;

	free(h);
	api_handle_closed(api);
}

int api_conns_listen(struct api_listener *l)
{
	l->accept_poll = malloc(sizeof(*l->accept_poll));
	if (!l->accept_poll)
		return -ENOMEM;
	uv_poll_init(l->api->a->loop, l->accept_poll, l->fd);
	l->accept_poll->data = l;
	l->api->open_handles++;
	uv_poll_start(l->accept_poll, UV_READABLE, on_accept);
	return 0;
}

void api_conns_stop(struct api_listener *l)
{
	struct api *api = l->api;

	/* Closing a poll handle stops its watch at once: the socket may be closed (or replaced) right after. */
	if (l->accept_poll)
		uv_close((uv_handle_t *)l->accept_poll, on_accept_closed);
	l->accept_poll = NULL;

	for (size_t i = 0; api->conns && i < api->nslots; i++)
		if (api->adm[i].used && api->conns[i].l == l && !api->conns[i].mhd)
			drop(api, &api->conns[i], 0, NULL);
}

void api_conns_free(struct api *api)
{
	if (api->reserve_fd >= 0)
		close(api->reserve_fd);
	api->reserve_fd = -1;
	if (api->head_epfd >= 0)
		close(api->head_epfd);
	api->head_epfd = -1;
	free(api->adm);
	free(api->conns);
	api->adm = NULL;
	api->conns = NULL;
}

void api_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		     enum MHD_ConnectionNotificationCode toe)
{
	struct api *api = cls;
	struct api_conn *k;

	(void)c;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = api->adding;
		return;
	}
	k = *socket_context;
	if (!k)
		return;
	/* MHD closed the socket: a deadline or an eviction may be pending on it no more. */
	k->fd = -1;
	k->deadline_ms = 0;
	k->mhd = false;
	release(api, k);
	*socket_context = NULL;
}

void *api_conn_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct api_conn *k = conn_of(c);

	(void)cls;
	(void)uri;
	if (k && k->state == CONN_IDLE)
		k->state = CONN_READING;
	return NULL;
}

void api_conn_answering(struct MHD_Connection *c)
{
	struct api_conn *k = conn_of(c);

	if (!k || k->state == CONN_ANSWERING)
		return;
	k->state = CONN_ANSWERING;
	k->deadline_ms = 0;
	k->l->api->adm[slot_of(k->l->api, k)].busy = true;
}

void api_conn_answered(struct MHD_Connection *c)
{
	struct api_conn *k = conn_of(c);
	struct api *api;
	size_t i;

	if (!k || k->fd < 0)
		return;
	api = k->l->api;
	i = slot_of(api, k);
	out_release(api, k);
	k->state = CONN_IDLE;
	api->adm[i].busy = false;
	api->adm[i].since_ms = agent_now_ms(api->a);
	if (!api->adm[i].closing) {
		k->deadline_ms = api->adm[i].since_ms + API_REQUEST_MS;
		rearm_deadlines(api);
	}
}

void api_conn_tokened(struct MHD_Connection *c)
{
	struct api_conn *k = conn_of(c);

	if (k)
		k->l->api->adm[slot_of(k->l->api, k)].tokened = true;
}

size_t api_conn_out_room(struct MHD_Connection *c)
{
	struct api_conn *k = conn_of(c);
	size_t held = k ? k->l->api->out_held : 0;

	return held < API_OUT_MAX ? API_OUT_MAX - held : 0;
}

bool api_conn_out_charge(struct MHD_Connection *c, size_t len)
{
	struct api_conn *k = conn_of(c);
	struct api *api;

	if (!k)
		return true;
	api = k->l->api;
	if (len > API_OUT_MAX - (api->out_held < API_OUT_MAX ? api->out_held : API_OUT_MAX)) {
		api->out_refused++;
		return false;
	}
	api->out_held += len;
	k->out_bytes += len;
	return true;
}
