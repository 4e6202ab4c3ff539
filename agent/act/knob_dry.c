/*
 * knob_dry: the dry-run backend (chrony's -x, "don't touch the clock"): see knob_dry_wrap in knob.h.
 *
 * A decorator over the real driver of one knob. It owns that driver's knob (same name, policy and environment,
 * the driver's own ops and priv) and hands every probe and every read before the first write to it, so a dry run
 * sees the host as it is. A write is remembered here and never reaches the driver; reads then return it. Nothing
 * is written to the host, and nothing outlives the process.
 */
#include "act/knob.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct knob_dry {
	struct knob real;           /* the real driver's knob */
	struct knob_ops ops;        /* the decorator's ops, with the real driver's kind (reports name the kind) */
	char value[KNOB_VALUE_MAX]; /* the value "written" */
	bool written;
};

static struct knob_dry *dry_of(struct knob *k)
{
	return k->priv;
}

static int dry_probe(struct knob *k, char *why, size_t whylen)
{
	struct knob *real = &dry_of(k)->real;

	return real->ops->probe ? real->ops->probe(real, why, whylen) : 0;
}

static int dry_read(struct knob *k, char *out, size_t outlen)
{
	struct knob_dry *d = dry_of(k);

	if (!d->written)
		return d->real.ops->read(&d->real, out, outlen);
	if (strlen(d->value) >= outlen)
		return -ERANGE;
	strcpy(out, d->value);
	return 0;
}

static int dry_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct knob_dry *d = dry_of(k);

	(void)why;
	(void)whylen;
	(void)done;
	(void)ctx;
	if (strlen(value) >= sizeof(d->value))
		return -EINVAL;
	strcpy(d->value, value);
	d->written = true;
	return 0;
}

static void dry_release(struct knob *k)
{
	struct knob_dry *d = dry_of(k);

	if (!d)
		return;
	if (d->real.ops->release)
		d->real.ops->release(&d->real);
	k->ops = d->real.ops;
	k->priv = NULL;
	free(d);
}

int knob_dry_wrap(struct knob *k)
{
	struct knob_dry *d;

	if (!k || !k->ops || !k->ops->read || k->priv)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->real = *k;
	d->ops.kind = k->ops->kind;
	d->ops.probe = dry_probe;
	d->ops.read = dry_read;
	d->ops.write = dry_write;
	d->ops.release = dry_release;
	k->ops = &d->ops;
	k->priv = d;
	return 0;
}
