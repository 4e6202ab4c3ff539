/*
 * writer: the privileged side of the split (issue 22): serves the engine's messages (wmsg.h) on one socket.
 *
 * Owns the decision to write: every SET is decoded strictly, its knob looked up among the writer's own knobs (built
 * from the policies the writer loaded itself), its value held to that policy (policy_check: enabled, not
 * forbidden, type, bounds, the largest step from the live value, constraints), and only then written by the
 * knob's real driver. A compromised engine can ask only for what a policy already allows. WIP: synchronous
 * drivers only (an asynchronous one, nginx's, answers EOPNOTSUPP until the writer runs its own loop); RESTORE,
 * NGINX, SOCKET and OPEN_LOG answer EOPNOTSUPP.
 */
#ifndef NGXAT_WRITER_H
#define NGXAT_WRITER_H

#include <stddef.h>
#include <stdint.h>

struct knob;
struct policy_set;

struct writer {
	const struct policy_set *set; /* the writer's own policies */
	struct knob *knobs;           /* its knobs (real drivers) */
	size_t n;
};

/* The answer (a WMSG_RESULT datagram) to datagram BUF of LEN bytes into OUT: its length, or -ENOSPC. */
int writer_handle(struct writer *w, const uint8_t *buf, size_t len, uint8_t *out, size_t outlen);
/* Serve FD (a SOCK_SEQPACKET socket) until the engine closes it: 0, or -errno. */
int writer_serve(struct writer *w, int fd);

#endif
