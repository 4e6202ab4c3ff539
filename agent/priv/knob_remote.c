/*
 * knob_remote: the engine's backend of a knob whose writes the writer makes (issue 22), as knob_dry.c is the
 * dry run's: probes and reads go to the real driver in the engine (what it reads is world-readable), a write is a
 * WMSG_SET sent through the writer's client (wclient.h), asynchronous like nginx's drivers: -EINPROGRESS, then
 * DONE from the loop with the writer's verdict (its policy's, then its driver's), a timeout, or the writer gone.
 */
#include "build-config.h"

#include "priv/knob_remote.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "priv/wclient.h"
#include "priv/wmsg.h"

struct knob_remote {
	struct knob_decor decor; /* first: the real driver's knob and the decorator's ops */
	struct wclient *c;
	struct knob *k;          /* the knob decorated, for DONE */
	knob_done_fn done;
	void *done_ctx;
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

static void remote_done(int result, const char *text, void *ctx)
{
	struct knob_remote *r = ctx;
	knob_done_fn done = r->done;

	r->done = NULL;
	if (done)
		done(r->k, result, text, r->done_ctx);
}

static int remote_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct knob_remote *r = remote_of(k);
	struct wmsg m = {.type = WMSG_SET};
	int rc;

	if (!done) {
		snprintf(why, whylen, "%s: the writer's knobs are written asynchronously", k->name);
		return -EINVAL;
	}
	if (r->done) {
		snprintf(why, whylen, "%s: a write to it is in flight already", k->name);
		return -EBUSY;
	}
	if (strlen(k->name) >= sizeof(m.name) || strlen(value) >= sizeof(m.value))
		return -EINVAL;
	strcpy(m.name, k->name);
	strcpy(m.value, value);
	r->k = k;
	r->done = done;
	r->done_ctx = ctx;
	rc = wclient_request(r->c, &m, remote_done, r, why, whylen);
	if (rc < 0) {
		r->done = NULL;
		return rc;
	}
	return -EINPROGRESS;
}

/* The decorator's release frees R: a request in flight is forgotten first. */
static void remote_release(struct knob *k)
{
	struct knob_remote *r = remote_of(k);

	if (r)
		wclient_cancel(r->c, r);
	knob_decor_release(k);
}

int knob_remote_wrap(struct knob *k, struct wclient *c)
{
	struct knob_remote *r;
	int rc;

	if (!k || !k->ops || !k->ops->read || !c)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->c = c;
	rc = knob_decorate(k, &r->decor, remote_read, remote_write);
	if (rc < 0) {
		free(r);
		return rc;
	}
	/* Its own release before the decorator's. */
	r->decor.ops.release = remote_release;
	return 0;
}
