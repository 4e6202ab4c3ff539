/*
 * knob_remote: the engine's backend of a knob whose writes the writer makes (issue 22), as knob_dry.c is the
 * dry run's: probes and reads go to the writer's read channel (rclient: its drivers read what the engine may not,
 * nginx's namespace, debugfs, nginx -T), or without one to the real driver in the engine; a write is a
 * WMSG_SET sent through the writer's client (wclient.h), asynchronous like nginx's drivers: -EINPROGRESS, then
 * DONE from the loop with the writer's verdict (its policy's, then its driver's) or a timeout; none when the writer
 * dies meanwhile (the agent stops: the journal has the write in flight for the restart's recovery).
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
	struct rclient *rc;      /* the read channel: reads and probes (NULL: the real driver's, in the engine) */
	struct knob *k;          /* the knob decorated, for DONE */
	knob_done_fn done;
	void *done_ctx;
	bool restoring;                 /* the request in flight is a RESTORE, expecting EXPECT */
	char expect[KNOB_VALUE_MAX];
};

static struct knob_remote *remote_of(struct knob *k)
{
	return (struct knob_remote *)knob_decor_of(k);
}

/* READ or PROBE of K on the read channel: the writer's result, its text into OUT. */
static int ask(struct knob_remote *r, struct knob *k, enum wmsg_type type, char *out, size_t outlen)
{
	struct wmsg m = {.type = type};
	char text[WMSG_TEXT_MAX];
	int rc;

	if (strlen(k->name) >= sizeof(m.name))
		return -EINVAL;
	strcpy(m.name, k->name);
	rc = rclient_call(r->rc, &m, text, sizeof(text), NULL);
	if (type == WMSG_READ && rc == 0 && strlen(text) >= outlen)
		return -ERANGE;
	snprintf(out, outlen, "%s", text);
	return rc;
}

static int remote_read(struct knob *k, char *out, size_t outlen)
{
	struct knob_remote *r = remote_of(k);
	struct knob *real = &r->decor.real;

	if (r->rc)
		return ask(r, k, WMSG_READ, out, outlen);
	return real->ops->read(real, out, outlen);
}

static int remote_probe(struct knob *k, char *why, size_t whylen)
{
	struct knob_remote *r = remote_of(k);
	struct knob *real = &r->decor.real;
	char text[WMSG_TEXT_MAX];
	int rc;

	if (!r->rc)
		return real->ops->probe ? real->ops->probe(real, why, whylen) : 0;
	rc = ask(r, k, WMSG_PROBE, text, sizeof(text));
	snprintf(why, whylen, "%s", text);
	return rc;
}

static void remote_done(int result, const char *text, void *ctx)
{
	struct knob_remote *r = ctx;
	knob_done_fn done = r->done;
	char live[KNOB_VALUE_MAX], why[KNOB_WHY_MAX];

	r->done = NULL;
	/* The writer restores the original it journaled: one that is not the engine's is said, not taken for it. */
	if (r->restoring && result == 0 && remote_read(r->k, live, sizeof(live)) == 0 &&
	    strcmp(live, r->expect) != 0) {
		snprintf(why, sizeof(why), "the writer restored %.100s, the original it journaled, not %.100s", live,
			 r->expect);
		result = -EIO;
		text = why;
	}
	r->restoring = false;
	if (done)
		done(r->k, result, text, r->done_ctx);
}

/* Send M for K (SET or RESTORE): -EINPROGRESS, DONE later. */
static int remote_send(struct knob *k, struct wmsg *m, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct knob_remote *r = remote_of(k);
	int rc;

	if (!done) {
		snprintf(why, whylen, "%s: the writer's knobs are written asynchronously", k->name);
		return -EINVAL;
	}
	if (r->done) {
		snprintf(why, whylen, "%s: a write to it is in flight already", k->name);
		return -EBUSY;
	}
	if (strlen(k->name) >= sizeof(m->name))
		return -EINVAL;
	strcpy(m->name, k->name);
	r->k = k;
	r->done = done;
	r->done_ctx = ctx;
	rc = wclient_request(r->c, m, remote_done, r, why, whylen);
	if (rc < 0) {
		r->done = NULL;
		return rc;
	}
	return -EINPROGRESS;
}

static int remote_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct wmsg m = {.type = WMSG_SET};

	if (strlen(value) >= sizeof(m.value))
		return -EINVAL;
	strcpy(m.value, value);
	return remote_send(k, &m, why, whylen, done, ctx);
}

/* The writer puts back the original it journaled itself: ORIGINAL (the engine's belief) is not sent, only checked
 * against what the knob reads once the writer answered (remote_done). */
static int remote_restore(struct knob *k, const char *original, char *why, size_t whylen, knob_done_fn done,
			  void *ctx)
{
	struct knob_remote *r = remote_of(k);
	struct wmsg m = {.type = WMSG_RESTORE};
	int rc;

	if (strlen(original) >= sizeof(r->expect))
		return -EINVAL;
	rc = remote_send(k, &m, why, whylen, done, ctx);
	if (rc == -EINPROGRESS) {
		r->restoring = true;
		snprintf(r->expect, sizeof(r->expect), "%s", original);
	}
	return rc;
}

/* The decorator's release frees R: a request in flight is forgotten first. */
static void remote_release(struct knob *k)
{
	struct knob_remote *r = remote_of(k);

	if (r)
		wclient_cancel(r->c, r);
	knob_decor_release(k);
}

int knob_remote_wrap(struct knob *k, struct wclient *c, struct rclient *rcl)
{
	struct knob_remote *r;
	int rc;

	if (!k || !k->ops || !k->ops->read || !c)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->c = c;
	r->rc = rcl;
	rc = knob_decorate(k, &r->decor, remote_read, remote_write);
	if (rc < 0) {
		free(r);
		return rc;
	}
	/* Its own release before the decorator's; the writer's own originals for restores. */
	r->decor.ops.release = remote_release;
	r->decor.ops.restore = remote_restore;
	r->decor.ops.probe = remote_probe;
	return 0;
}
