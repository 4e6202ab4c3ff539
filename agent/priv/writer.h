/*
 * writer: the privileged side of the split (issue 22): serves the engine's messages (wmsg.h) on one socket.
 *
 * Owns the decision to write: every SET is decoded strictly, its knob looked up among the writer's own knobs (built
 * from the policies the writer loaded itself), its value held to that policy (policy_check: enabled, not
 * forbidden, type, bounds, the largest step from the live value, constraints), and only then written by the
 * knob's real driver, synchronous ones at once, asynchronous ones (nginx's) from the writer's loop. A compromised
 * engine can ask only for what a policy already allows. WIP: RESTORE, NGINX, SOCKET and OPEN_LOG answer
 * EOPNOTSUPP.
 */
#ifndef NGXAT_WRITER_H
#define NGXAT_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct knob;
struct policy_set;

struct writer {
	const struct policy_set *set; /* the writer's own policies */
	struct knob *knobs;           /* its knobs (real drivers, their environment's loop the one served on) */
	size_t n;
	/* writer_serve's */
	uv_poll_t poll;
	int fd;
	uint32_t id; /* the request in hand */
	bool busy;   /* its write is in flight (an asynchronous driver's) */
	int err;     /* why serving ended */
};

/* The answer (a WMSG_RESULT datagram) to datagram BUF of LEN bytes into OUT, synchronous drivers only (an
 * asynchronous one is answered EOPNOTSUPP): its length, or -ENOSPC. */
int writer_handle(struct writer *w, const uint8_t *buf, size_t len, uint8_t *out, size_t outlen);
/* Serve FD (a SOCK_SEQPACKET socket) on LOOP until the engine closes it, one request at a time, each answered when
 * its write ends (an nginx reload from LOOP): 0, or -errno. LOOP runs until then. */
int writer_serve(struct writer *w, uv_loop_t *loop, int fd);

#endif
