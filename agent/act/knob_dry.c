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
	struct knob_decor decor;    /* first: the real driver's knob and the decorator's ops */
	char value[KNOB_VALUE_MAX]; /* the value "written" */
	bool written;
};

static struct knob_dry *dry_of(struct knob *k)
{
	return (struct knob_dry *)knob_decor_of(k);
}

static int dry_read(struct knob *k, char *out, size_t outlen)
{
	struct knob_dry *d = dry_of(k);

	if (!d->written)
		return d->decor.real.ops->read(&d->decor.real, out, outlen);
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

int knob_dry_wrap(struct knob *k)
{
	struct knob_dry *d;
	int r;

	if (!k || !k->ops || !k->ops->read || k->priv)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	r = knob_decorate(k, &d->decor, dry_read, dry_write);
	if (r < 0)
		free(d);
	return r;
}
