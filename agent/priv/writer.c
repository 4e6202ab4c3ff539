/*
 * writer: the engine's requests held to the writer's own policies. See writer.h.
 */
#include "build-config.h"

#include "priv/writer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "act/knob.h"
#include "core/knobval.h"
#include "core/policy.h"
#include "priv/wmsg.h"
#include "termsafe.h"

static struct knob *find(struct writer *w, const char *name)
{
	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->knobs[i].name, name) == 0)
			return &w->knobs[i];
	return NULL;
}

/* Another knob's live value for policy_check's constraints: -ENOENT when the writer has no such knob. */
static int value_of(const char *name, char *out, size_t outlen, void *ctx)
{
	struct knob *k = find(ctx, name);

	return k ? k->ops->read(k, out, outlen) : -ENOENT;
}

static int set(struct writer *w, const struct wmsg *m, char *why, size_t whylen)
{
	struct knob *k = find(w, m->name);
	char live[KNOB_VALUE_MAX];
	int r;

	if (!k) {
		snprintf(why, whylen, "no knob %s here: no policy of the writer's names it", m->name);
		return -ENOENT;
	}
	r = k->ops->read(k, live, sizeof(live));
	if (r < 0) {
		snprintf(why, whylen, "%s: its live value cannot be read (%s)", m->name, strerror(-r));
		return r;
	}
	r = policy_check(w->set, k->pol, live, m->value, value_of, w, why, whylen);
	if (r < 0)
		return r;
	why[0] = '\0';
	r = k->ops->write(k, m->value, why, whylen, NULL, NULL);
	if (r == -EINPROGRESS) {
		/* Cannot happen with DONE NULL for a synchronous driver; an asynchronous one must not run here yet. */
		snprintf(why, whylen, "%s: an asynchronous driver needs the writer's loop", m->name);
		return -EOPNOTSUPP;
	}
	return r;
}

int writer_handle(struct writer *w, const uint8_t *buf, size_t len, uint8_t *out, size_t outlen)
{
	struct wmsg m, res = {.type = WMSG_RESULT};
	char why[WMSG_TEXT_MAX] = "";

	if (wmsg_decode(buf, len, &m, why, sizeof(why)) < 0) {
		res.result = -EBADMSG;
	} else {
		res.id = m.id;
		switch (m.type) {
		case WMSG_SET:
			res.result = set(w, &m, why, sizeof(why));
			break;
		case WMSG_RESULT:
			res.result = -EPROTO;
			snprintf(why, sizeof(why), "the engine sent an answer");
			break;
		default:
			res.result = -EOPNOTSUPP;
			snprintf(why, sizeof(why), "%s: not served by this writer yet", wmsg_type_name(m.type));
			break;
		}
	}
	/* A driver's WHY may quote what it read: escaped, cut to fit. */
	termsafe_escape(why, strlen(why), res.text, sizeof(res.text));
	return wmsg_encode(&res, out, outlen);
}

int writer_serve(struct writer *w, int fd)
{
	uint8_t in[WMSG_MAX + 1], out[WMSG_MAX];

	for (;;) {
		ssize_t n = recv(fd, in, sizeof(in), 0);
		int len;

		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		len = writer_handle(w, in, (size_t)n, out, sizeof(out));
		if (len < 0)
			return len;
		if (send(fd, out, (size_t)len, MSG_NOSIGNAL) < 0)
			return -errno;
	}
}
