/*
 * knob_remote: a knob whose writes the privileged writer makes (writer.h): see knob_remote.c.
 */
#ifndef NGXAT_KNOB_REMOTE_H
#define NGXAT_KNOB_REMOTE_H

#include "act/knob.h"

/* Wrap K (its real driver) so that its writes go to the writer on FD (a SOCK_SEQPACKET socket): 0 or -errno. */
int knob_remote_wrap(struct knob *k, int fd);

#endif
