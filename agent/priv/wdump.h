/*
 * wdump: nginx -T made by the writer for the engine (issue 22): the engine's doctor and its synthetic client's URLs
 * read nginx's configuration, whose files (and whose includes) are root's to read, and nginx -T runs with its
 * privileges (it opens what the configuration names, certificates included).
 *
 * Owns the dumps asked of the writer (WMSG_NGINX dump, on its write channel, answered in the writer's turn with its
 * other nginx children) and not yet answered. The writer passes the dump on a sealed memfd; it is read here, within
 * the engine's own [nginx] dump_max, into the buffer nginx_ctl_dump's callers take. Never waits.
 */
#ifndef NGXAT_WDUMP_H
#define NGXAT_WDUMP_H

#include <stddef.h>

#include "act/nginx_ctl.h"

struct wclient;
struct wdump;

/* Dumps asked through C (which must outlive D), each read up to MAX bytes. 0 or -ENOMEM. */
int wdump_new(struct wclient *c, size_t max, struct wdump **out);
/* nginx -T by the writer: DONE(CTX) exactly once, later, from the loop, as nginx_ctl_dump's (the knob environment's
 * `dump`, D being its context). 0, or -errno (DONE will not run). */
int wdump_run(void *d, nginx_ctl_dump_fn done, void *ctx);
/* Answer every dump in flight now, -ECANCELED (the agent stops: the writer's client is about to be closed, and
 * would forget them unanswered). */
void wdump_cancel(struct wdump *d);
/* wdump_cancel, and free D. NULL is fine. */
void wdump_free(struct wdump *d);

#endif
