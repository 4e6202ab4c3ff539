/*
 * knob_remote: the engine's backend of a knob whose writes the writer makes (issue 22), as knob_dry.c is the
 * dry run's: probes and reads go to the real driver in the engine (what it reads is world-readable), a write is a
 * WMSG_SET on the writer's socket, answered by a WMSG_RESULT with the writer's verdict (its policy's, then its
 * driver's). WIP: the answer is waited for (the writer's own loop and asynchronous answers come with nginx's
 * drivers).
 */
#include "build-config.h"

#include "priv/knob_remote.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "priv/wmsg.h"

struct knob_remote {
	struct knob_decor decor; /* first: the real driver's knob and the decorator's ops */
	int fd;
	uint32_t next_id;
};

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
	if (send(r->fd, buf, (size_t)len, MSG_NOSIGNAL) < 0)
		return -errno;
	do
		n = recv(r->fd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		snprintf(why, whylen, "the writer %s", n == 0 ? "is gone" : "did not answer");
		return n == 0 ? -EPIPE : -errno;
	}
	if (wmsg_decode(buf, (size_t)n, &res, err, sizeof(err)) < 0 || res.type != WMSG_RESULT || res.id != m.id) {
		snprintf(why, whylen, "the writer's answer is not one: %s", err);
		return -EPROTO;
	}
	snprintf(why, whylen, "%s", res.text);
	return res.result;
}

int knob_remote_wrap(struct knob *k, int fd)
{
	struct knob_remote *r;
	int rc;

	if (!k || !k->ops || !k->ops->read || fd < 0)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = fd;
	rc = knob_decorate(k, &r->decor, remote_read, remote_write);
	if (rc < 0)
		free(r);
	return rc;
}
