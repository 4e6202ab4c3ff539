/*
 * knob_remote: a knob whose writes the privileged writer makes (writer.h): see knob_remote.c.
 */
#ifndef NGXAT_KNOB_REMOTE_H
#define NGXAT_KNOB_REMOTE_H

#include "act/knob.h"

/* Wrap K (its real driver) so that its writes go to the writer on FD (a SOCK_SEQPACKET socket), each answered
 * within TIMEOUT_MS (more than 0) or -ETIMEDOUT (a late answer is dropped when it comes): 0 or -errno. */
int knob_remote_wrap(struct knob *k, int fd, int timeout_ms);

#endif
