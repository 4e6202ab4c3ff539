/*
 * knob_remote: the engine's backend of a knob whose writes the writer makes (issue 22), as knob_dry.c is the
 * dry run's: probes and reads go to the real driver in the engine (what it reads is world-readable), a write is a
 * WMSG_SET on the writer's socket, answered by a WMSG_RESULT with the writer's verdict (its policy's, then its
 * driver's). The answer is waited for, at most the timeout the wrap was given; a late one (its id before the
 * request's) is dropped when it comes. The writer's own loop and asynchronous answers come with nginx's drivers.
 */
#include "build-config.h"

#include "priv/knob_remote.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "priv/wmsg.h"

struct knob_remote {
	struct knob_decor decor; /* first: the real driver's knob and the decorator's ops */
	int fd;
	int timeout_ms;
	uint32_t next_id;
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static struct knob_remote *remote_of(struct knob *k)
{
	return (struct knob_remote *)knob_decor_of(k);
}

static int remote_read(struct knob *k, char *out, size_t outlen)
{
	struct knob *real = &remote_of(k)->decor.real;

	return real->ops->read(real, out, outlen);
}

static int remote_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct knob_remote *r = remote_of(k);
	struct wmsg m = {.type = WMSG_SET}, res;
	uint8_t buf[WMSG_MAX + 1];
	char err[128];
	ssize_t n;
	int len;

	(void)done;
	(void)ctx;
	m.id = ++r->next_id;
	if (strlen(k->name) >= sizeof(m.name) || strlen(value) >= sizeof(m.value))
		return -EINVAL;
	strcpy(m.name, k->name);
	strcpy(m.value, value);
	len = wmsg_encode(&m, buf, sizeof(buf));
	if (len < 0)
		return len;
	if (send(r->fd, buf, (size_t)len, MSG_NOSIGNAL) < 0) {
		int e = errno;

		if (e == EPIPE || e == ECONNRESET || e == ENOTCONN) {
			snprintf(why, whylen, "the writer is gone");
			return -EPIPE;
		}
		snprintf(why, whylen, "the writer cannot be asked: %s", strerror(e));
		return -e;
	}
	for (int64_t end = now_ms() + r->timeout_ms, left;;) {
		struct pollfd p = {.fd = r->fd, .events = POLLIN};

		left = end - now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			snprintf(why, whylen, "the writer did not answer within %d ms", r->timeout_ms);
			return -ETIMEDOUT;
		}
		n = recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			snprintf(why, whylen, "the writer %s", n == 0 ? "is gone" : "cannot be read");
			return n == 0 ? -EPIPE : -errno;
		}
		if (wmsg_decode(buf, (size_t)n, &res, err, sizeof(err)) < 0 || res.type != WMSG_RESULT) {
			snprintf(why, whylen, "the writer's answer is not one: %s", err);
			return -EPROTO;
		}
		/* The answer to a request that timed out earlier. */
		if ((int32_t)(res.id - m.id) < 0)
			continue;
		if (res.id != m.id) {
			snprintf(why, whylen, "the writer answered request %u, not %u", res.id, m.id);
			return -EPROTO;
		}
		snprintf(why, whylen, "%s", res.text);
		return res.result;
	}
}

int knob_remote_wrap(struct knob *k, int fd, int timeout_ms)
{
	struct knob_remote *r;
	int rc;

	if (!k || !k->ops || !k->ops->read || fd < 0 || timeout_ms <= 0)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = fd;
	r->timeout_ms = timeout_ms;
	rc = knob_decorate(k, &r->decor, remote_read, remote_write);
	if (rc < 0)
		free(r);
	return rc;
}
