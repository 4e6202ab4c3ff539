/*
 * wclient: see wclient.h.
 */
#include "build-config.h"

#include "priv/wclient.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct wclient_req {
	uv_timer_t timer; /* its timeout: a timer of the loop's, so that no clock is read here */
	struct wclient *c;
	uint32_t id;      /* 0: a free slot */
	uint64_t seq;     /* its place in the order sent: the writer answers in it */
	wclient_done_fn done;     /* one of the two */
	wclient_fd_fn done_fd;    /* an answer that may pass a descriptor (wclient_request_fd) */
	void *ctx;
};

struct wclient {
	uv_loop_t *loop;
	int fd;
	int timeout_ms;
	uint32_t next_id;
	uint64_t seq;
	bool gone;    /* the writer closed its end: every request since is -EPIPE */
	bool polling; /* the poll handle is started */
	bool closed;  /* wclient_close: the handles are closing or closed */
	bool freeing; /* wclient_free: freed when the last handle is closed */
	int open;     /* handles not yet closed */
	uv_poll_t poll;
	struct wclient_req req[WCLIENT_PENDING_MAX];
};

/* The slot is free before DONE runs: DONE may ask again. */
static void forget(struct wclient_req *r)
{
	if (r->id)
		uv_timer_stop(&r->timer);
	r->id = 0;
	r->done = NULL;
	r->done_fd = NULL;
	r->ctx = NULL;
}

/* FD (-1: none) is DONE_FD's, or closed. */
static void answer(struct wclient_req *r, int result, const char *text, int fd)
{
	wclient_done_fn done = r->done;
	wclient_fd_fn done_fd = r->done_fd;
	void *ctx = r->ctx;

	forget(r);
	if (done_fd) {
		done_fd(result, text, fd, ctx);
		return;
	}
	if (fd >= 0)
		close(fd);
	done(result, text, ctx);
}

static void on_closed(uv_handle_t *h);
static void on_timeout(uv_timer_t *t);

/* The writer answers in the order asked, one at a time: only the oldest request in flight is timed, from when the
 * one before it was answered (a SET behind a DUMP is not charged the DUMP's time). */
static void time_head(struct wclient *c)
{
	struct wclient_req *head = NULL;

	if (c->closed)
		return;
	for (size_t i = 0; i < WCLIENT_PENDING_MAX; i++)
		if (c->req[i].id && (!head || c->req[i].seq < head->seq))
			head = &c->req[i];
	if (head && !uv_is_active((uv_handle_t *)&head->timer))
		uv_timer_start(&head->timer, on_timeout, (uint64_t)c->timeout_ms, 0);
}

static void on_timeout(uv_timer_t *t)
{
	struct wclient_req *r = (struct wclient_req *)t;
	struct wclient *c = r->c;
	char text[96];

	snprintf(text, sizeof(text), "the writer did not answer within %d ms", c->timeout_ms);
	answer(r, -ETIMEDOUT, text, -1);
	time_head(c);
}

/* The writer is gone: no more is read, and the requests in flight are forgotten, not answered. Whether the writer
 * made their writes before it died is not known, as with a process killed in the middle of one: the engine must not
 * journal them as failed (the agent stops, and the restart's recovery puts back what its journal has in flight). */
static void gone(struct wclient *c, int err)
{
	(void)err;
	c->gone = true;
	if (c->polling)
		uv_poll_stop(&c->poll);
	c->polling = false;
	for (size_t i = 0; i < WCLIENT_PENDING_MAX; i++)
		forget(&c->req[i]);
}

/* One datagram into BUF, and the descriptor it passed into *FD (-1: none; any more are closed). recv's return. */
static ssize_t recv_answer(int sock, uint8_t *buf, size_t len, int *fd)
{
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b)};
	ssize_t n;

	*fd = -1;
	n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t nfd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int one;

			memcpy(&one, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = one;
			else
				close(one);
		}
	}
	return n;
}

static void on_readable(uv_poll_t *p, int status, int events)
{
	struct wclient *c = p->data;
	uint8_t buf[WMSG_MAX + 1];
	char err[128];

	(void)events;
	if (status < 0) {
		gone(c, status);
		return;
	}
	for (;;) {
		struct wmsg res;
		int fd;
		ssize_t n = recv_answer(c->fd, buf, sizeof(buf), &fd);
		bool taken = false;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			gone(c, n < 0 ? -errno : 0);
			return;
		}
		/* Not an answer: the writer is not one to trust with the rest either. */
		if (wmsg_decode(buf, (size_t)n, &res, err, sizeof(err)) < 0 || res.type != WMSG_RESULT || res.id == 0) {
			if (fd >= 0)
				close(fd);
			gone(c, -EPROTO);
			return;
		}
		for (size_t i = 0; i < WCLIENT_PENDING_MAX && !taken; i++)
			if (c->req[i].id == res.id) {
				answer(&c->req[i], res.result, res.text, fd);
				taken = true;
				time_head(c);
			}
		/* No request of that id: the answer to one that timed out, dropped (its descriptor too). */
		if (!taken && fd >= 0)
			close(fd);
	}
}

/* Microseconds of the monotonic clock. */
static int64_t mono_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Wait until FD is readable or DEADLINE (mono_us) passed: 1, 0 (the deadline), or -errno. A signal (SIGHUP, SIGCHLD)
 * wakes the poll early: the wait goes on for what is left, not again for all of it. */
static int poll_until(int fd, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;

	for (;;) {
		int64_t left = (deadline - mono_us() + 999) / 1000; /* rounded up: never ends before the deadline */

		r = poll(&p, 1, left > 0 ? (int)left : 0);
		if (r >= 0 || errno != EINTR)
			return r < 0 ? -errno : r;
		if (left <= 0)
			return 0;
	}
}

int wclient_await_hello(int fd, int timeout_ms, char *err, size_t errlen)
{
	uint8_t buf[WMSG_MAX];
	char why[160];
	struct wmsg m;
	ssize_t n;
	int r = poll_until(fd, mono_us() + (int64_t)timeout_ms * 1000);

	if (r < 0) {
		snprintf(err, errlen, "waiting for the writer: %s", strerror(-r));
		return r;
	}
	if (r == 0) {
		snprintf(err, errlen, "the writer did not start within %d ms", timeout_ms);
		return -ETIMEDOUT;
	}
	do
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
		snprintf(err, errlen, "the writer ended before it started (its reason is in the log above)");
		return -EPIPE;
	}
	if (n < 0) {
		r = -errno;
		snprintf(err, errlen, "reading the writer's start: %s", strerror(-r));
		return r;
	}
	if (wmsg_decode(buf, (size_t)n, &m, why, sizeof(why)) < 0 || m.type != WMSG_RESULT || m.id != 0 ||
	    m.result != 0 || strcmp(m.text, WMSG_HELLO) != 0) {
		snprintf(err, errlen, "the writer's first message is not its start");
		return -EBADMSG;
	}
	return 0;
}

int wclient_new(uv_loop_t *loop, int fd, int timeout_ms, struct wclient **out)
{
	struct wclient *c;

	if (!loop || fd < 0 || timeout_ms <= 0 || !out)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->fd = fd;
	c->timeout_ms = timeout_ms;
	if (uv_poll_init(loop, &c->poll, fd) < 0) {
		free(c);
		return -EINVAL;
	}
	c->poll.data = c;
	for (size_t i = 0; i < WCLIENT_PENDING_MAX; i++) {
		uv_timer_init(loop, &c->req[i].timer);
		c->req[i].c = c;
	}
	c->open = 1 + WCLIENT_PENDING_MAX;
	/* Polled from the start: a writer that dies while nothing is asked is seen at once (wclient_gone). */
	if (uv_poll_start(&c->poll, UV_READABLE | UV_DISCONNECT, on_readable) < 0) {
		c->fd = -1; /* the caller's still */
		c->freeing = true;
		for (size_t i = 0; i < WCLIENT_PENDING_MAX; i++) {
			c->req[i].timer.data = c;
			uv_close((uv_handle_t *)&c->req[i].timer, on_closed);
		}
		uv_close((uv_handle_t *)&c->poll, on_closed);
		return -EINVAL;
	}
	c->polling = true;
	*out = c;
	return 0;
}

/* M with the next id of *NEXT_ID (never 0, which the writer's hello has) encoded into BUF: its length, or -errno with
 * WHY. */
static int encode_next(uint32_t *next_id, struct wmsg *m, uint8_t *buf, size_t len, char *why, size_t whylen)
{
	int n;

	if (++*next_id == 0)
		*next_id = 1;
	m->id = *next_id;
	n = wmsg_encode(m, buf, len);
	if (n < 0)
		snprintf(why, whylen, "the request does not encode: %s", strerror(-n));
	return n;
}

static int send_request(struct wclient *c, struct wmsg *m, wclient_done_fn done, wclient_fd_fn done_fd, void *ctx,
			char *why, size_t whylen)
{
	uint8_t buf[WMSG_MAX];
	struct wclient_req *slot = NULL;
	int len;

	if (!c || !m || (!done && !done_fd))
		return -EINVAL;
	if (c->gone || c->closed) {
		snprintf(why, whylen, "the writer is gone");
		return -EPIPE;
	}
	for (size_t i = 0; i < WCLIENT_PENDING_MAX && !slot; i++)
		if (!c->req[i].id)
			slot = &c->req[i];
	if (!slot) {
		snprintf(why, whylen, "%d requests to the writer in flight already", WCLIENT_PENDING_MAX);
		return -EBUSY;
	}
	len = encode_next(&c->next_id, m, buf, sizeof(buf), why, whylen);
	if (len < 0)
		return len;
	if (send(c->fd, buf, (size_t)len, MSG_NOSIGNAL) < 0) {
		int e = errno;

		if (e == EPIPE || e == ECONNRESET || e == ENOTCONN) {
			gone(c, 0);
			snprintf(why, whylen, "the writer is gone");
			return -EPIPE;
		}
		snprintf(why, whylen, "the writer cannot be asked: %s", strerror(e));
		return -e;
	}
	slot->id = m->id;
	slot->seq = ++c->seq;
	slot->done = done;
	slot->done_fd = done_fd;
	slot->ctx = ctx;
	time_head(c);
	return 0;
}

int wclient_request(struct wclient *c, struct wmsg *m, wclient_done_fn done, void *ctx, char *why, size_t whylen)
{
	return send_request(c, m, done, NULL, ctx, why, whylen);
}

int wclient_request_fd(struct wclient *c, struct wmsg *m, wclient_fd_fn done, void *ctx, char *why, size_t whylen)
{
	return send_request(c, m, NULL, done, ctx, why, whylen);
}

void wclient_cancel(struct wclient *c, const void *ctx)
{
	if (!c)
		return;
	for (size_t i = 0; i < WCLIENT_PENDING_MAX; i++)
		if (c->req[i].id && c->req[i].ctx == ctx)
			forget(&c->req[i]);
	time_head(c);
}

bool wclient_gone(const struct wclient *c)
{
	return c && c->gone;
}

static void on_closed(uv_handle_t *h)
{
	struct wclient *c = h->data;

	if (--c->open == 0 && c->freeing)
		free(c);
}

void wclient_close(struct wclient *c)
{
	if (!c || c->closed)
		return;
	for (size_t i = 0; i < WCLIENT_PENDING_MAX; i++) {
		forget(&c->req[i]);
		c->req[i].timer.data = c;
		uv_close((uv_handle_t *)&c->req[i].timer, on_closed);
	}
	c->closed = true;
	c->polling = false;
	uv_close((uv_handle_t *)&c->poll, on_closed);
	close(c->fd);
	c->fd = -1;
}

void wclient_free(struct wclient *c)
{
	if (!c)
		return;
	wclient_close(c);
	if (c->open == 0)
		free(c);
	else
		c->freeing = true;
}

/* ---- the read channel ---------------------------------------------------------------------------------------- */

struct rclient {
	pthread_mutex_t lock; /* one call at a time: the loop's and the sampler's pool threads' */
	int fd;
	int timeout_ms;
	uint32_t next_id;
	uint32_t late;  /* the id of a request that timed out and is still to be answered (0: none) */
	bool gone;
};

int rclient_new(int fd, int timeout_ms, struct rclient **out)
{
	struct rclient *c;

	if (fd < 0 || timeout_ms <= 0 || !out)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->timeout_ms = timeout_ms;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

/* The answer to ID, read until DEADLINE: RES and *FD (-1: none, or NULL: closed) set; 0, -ETIMEDOUT, -EPIPE or
 * -EPROTO. Answers of other ids (to requests that timed out) are dropped with their descriptors; ID 0 reads only
 * until the late answer has come (0). */
static int await_answer(struct rclient *c, uint32_t id, int64_t deadline, struct wmsg *res, int *fd)
{
	uint8_t buf[WMSG_MAX + 1];
	char err[128];

	for (;;) {
		int one, r = poll_until(c->fd, deadline);
		ssize_t n;

		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0)
			return r;
		n = recv_answer(c->fd, buf, sizeof(buf), &one);
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n <= 0) {
			c->gone = true;
			return -EPIPE;
		}
		if (wmsg_decode(buf, (size_t)n, res, err, sizeof(err)) < 0 || res->type != WMSG_RESULT || res->id == 0) {
			if (one >= 0)
				close(one);
			c->gone = true;
			return -EPROTO;
		}
		if (c->late == res->id)
			c->late = 0;
		if (res->id != id) {
			if (one >= 0)
				close(one);
			if (id == 0 && !c->late)
				return 0; /* drained to the late answer, no further */
			continue;
		}
		if (fd)
			*fd = one;
		else if (one >= 0)
			close(one);
		return 0;
	}
}

static int call(struct rclient *c, struct wmsg *m, char *text, size_t textlen, int *fd)
{
	uint8_t buf[WMSG_MAX];
	struct wmsg res;
	int len, r;

	if (c->gone) {
		snprintf(text, textlen, "the writer is gone");
		return -EPIPE;
	}
	/* One stall of the writer costs the engine one timeout, not one per read: while an answer is late, the next
	 * reads fail at once (each looks whether it has come meanwhile). */
	if (c->late) {
		r = await_answer(c, 0, mono_us(), &res, NULL);
		if (r != -ETIMEDOUT && r < 0) {
			snprintf(text, textlen, "the writer is gone");
			return -EPIPE;
		}
		if (c->late) {
			snprintf(text, textlen, "the writer has not answered an earlier read yet");
			return -EAGAIN;
		}
	}
	len = encode_next(&c->next_id, m, buf, sizeof(buf), text, textlen);
	if (len < 0)
		return len;
	if (send(c->fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		r = -errno;
		if (r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN) {
			c->gone = true;
			snprintf(text, textlen, "the writer is gone");
			return -EPIPE;
		}
		snprintf(text, textlen, "the writer cannot be asked: %s", strerror(-r));
		return r;
	}
	r = await_answer(c, m->id, mono_us() + (int64_t)c->timeout_ms * 1000, &res, fd);
	if (r == -ETIMEDOUT) {
		c->late = m->id;
		snprintf(text, textlen, "the writer did not answer within %d ms", c->timeout_ms);
		return r;
	}
	if (r < 0) {
		snprintf(text, textlen, "the writer is gone");
		return -EPIPE;
	}
	snprintf(text, textlen, "%s", res.text);
	return res.result;
}

int rclient_call(struct rclient *c, struct wmsg *m, char *text, size_t textlen, int *fd)
{
	int r;

	if (fd)
		*fd = -1;
	if (!c || !m)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = call(c, m, text, textlen, fd);
	pthread_mutex_unlock(&c->lock);
	return r;
}

void rclient_free(struct rclient *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
