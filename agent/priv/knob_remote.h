/*
 * knob_remote: a knob whose writes the privileged writer makes (writer.h): see knob_remote.c.
 */
#ifndef NGXAT_KNOB_REMOTE_H
#define NGXAT_KNOB_REMOTE_H

#include "act/knob.h"

struct wclient;
struct rclient;

/* Wrap K (its real driver) so that its writes go to the writer through C (which outlives K): each write answers
 * -EINPROGRESS and calls DONE from C's loop with the writer's verdict or -ETIMEDOUT (not at all when the writer dies
 * meanwhile: wclient.h), and a write once the writer is gone is -EPIPE; a write without DONE
 * is -EINVAL. Its reads and probes are the writer's too, through RC (its read channel, which outlives K), each one
 * waited for; RC NULL: the real driver's in the engine. 0 or -errno. */
int knob_remote_wrap(struct knob *k, struct wclient *c, struct rclient *rc);

#endif
