/*
 * writer: the privileged side of the split (issue 22): serves the engine's messages (wmsg.h) on one socket.
 *
 * Owns the decision to write: every SET is decoded strictly, its knob looked up among the writer's own knobs (built
 * from the policies the writer loaded itself), its value held to that policy (policy_check: enabled, not
 * forbidden, type, bounds, the largest step from the live value, constraints), and only then written by the
 * knob's real driver, synchronous ones at once, asynchronous ones (nginx's) from the writer's loop. Before its first
 * write of a knob, and before a write that finds a live value it did not write itself, the writer journals the live
 * value as its original in a file of its own (synced); each write is journaled (synced) before it is made, in a
 * second file; RESTORE puts back only the original: a compromised engine can ask only for what a policy already allows, or for what the host
 * had. A value its policy refuses is -EDOM (the engine's own check let it through: the two disagree), whatever
 * policy_check said, so that the engine never takes a refusal for the host's errno. SOCKET passes a netlink socket
 * made in nginx's network namespace (the SOCKET hook). A second socket, the read channel, answers the engine's
 * reads of the knobs (READ, PROBE: their drivers need rights the engine has not) at once, also while a write is in
 * flight; no write is taken there. NGINX dump runs nginx -T for the engine (the DUMP hook), answered with its output
 * on a memfd in the write channel's order. WIP: NGINX test and reload, and OPEN_LOG, answer EOPNOTSUPP.
 */
#ifndef NGXAT_WRITER_H
#define NGXAT_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "act/knob.h"
#include "core/policy.h"

struct writer_original {
	char value[KNOB_VALUE_MAX];
	bool known;
	/* The writer's own last two writes of the knob (its journal of writes, ORIGINALS.written): a live value that is
	 * neither was set by someone else (an operator who cleared a conflict, an offline revert, a reboot), and is the
	 * host's value, journaled as the original before the writer's next write. */
	char last[KNOB_VALUE_MAX], prev[KNOB_VALUE_MAX];
	unsigned nwritten;
};

#define WRITER_ORPHANS_MAX 32
#define WRITER_WRITTEN_MAX 4096 /* lines of the journal of writes before it is compacted (each knob's last two) */

/* A knob of a removed policy, adopted for RESTORE only (knob_orphan_policy). */
struct writer_orphan {
	struct knob_policy pol; /* its stand-in policy */
	struct knob k;
	struct writer_original original;
};

struct writer {
	const struct policy_set *set; /* the writer's own policies */
	struct knob *knobs;           /* its knobs (real drivers, their environment's loop the one served on) */
	size_t n;
	const char *originals;        /* its journal of originals (store/originals.h), the engine's no business */
	const char *shown;            /* that journal's path for messages (originals may be a /proc/self/fd path); NULL:
				       * originals */
	const char *fallback;         /* the agent's own originals file (STORE.originals), for knobs it changed before it
				       * had a writer: read when root's and writable by no one else; NULL: none */
	struct knob_env *env;         /* for knobs of removed policies (RESTORE only); NULL: none restored */
	struct writer_orphan *orphans[WRITER_ORPHANS_MAX];
	size_t norphans;
	struct writer_original *orig; /* per knob, from the journal (writer_init) */
	size_t written_lines;         /* lines in the journal of writes (ORIGINALS.written) */
	size_t written_max;           /* compacted past this many (0: WRITER_WRITTEN_MAX) */
	/* Called before each SET or RESTORE is looked at, when no write is in flight (writer_main: the knobs follow a
	 * new nginx master or reloaded policies, the clock is read): 0, or -errno to refuse the request with WHY.
	 * NULL: none. A request naming no knob of W's calls it again with RETRY set, once (per-interface knobs follow
	 * nginx's namespace). */
	int (*before)(struct writer *w, bool retry, char *why, size_t whylen);
	void *before_ctx;
	bool reload; /* a RELOAD came: BEFORE reads the configuration and the policies again (writer_main) */
	/* SOCKET of KIND (a wmsg_socket_op): a socket opened in nginx's network namespace into *FD, passed with the
	 * answer; 0, or -errno with WHY. NULL: SOCKET is refused. */
	int (*socket)(struct writer *w, unsigned kind, int *fd, char *why, size_t whylen);
	/* NGINX dump: nginx -T started, -EINPROGRESS, and its end told with writer_dumped; or -errno with WHY. NULL: it
	 * is refused. */
	int (*dump)(struct writer *w, char *why, size_t whylen);
	/* OPEN_LOG (read channel): nginx's log at PATH, one the writer's configuration names, opened read-only into
	 * *FD, passed with the answer; 0, or -errno with WHY. NULL: it is refused. */
	int (*open_log)(struct writer *w, const char *path, int *fd, char *why, size_t whylen);
	/* writer_serve's */
	uv_poll_t poll;
	int fd;
	uv_poll_t rpoll; /* the read channel's */
	int rfd;         /* -1: none */
	uint32_t id; /* the request in hand */
	bool busy;   /* its write is in flight (an asynchronous driver's) */
	int err;     /* why serving ended */
};

/* Load W's journal of originals (set, knobs, n and originals given): 0 (no journal yet is none written), or -errno
 * with ERR (-EBADMSG: damaged lines, the good ones loaded). writer_free releases what it holds. */
int writer_init(struct writer *w, char *err, size_t errlen);
void writer_free(struct writer *w);
/* The answer (a WMSG_RESULT datagram) to datagram BUF of LEN bytes into OUT, synchronous drivers only (an
 * asynchronous one is answered EOPNOTSUPP): its length, or -ENOSPC. */
int writer_handle(struct writer *w, const uint8_t *buf, size_t len, uint8_t *out, size_t outlen);
/* writer_handle, with the descriptor the answer passes into *FD (the caller's; -1: none). */
int writer_handle_fd(struct writer *w, const uint8_t *buf, size_t len, uint8_t *out, size_t outlen, int *fd);
/* Tell the engine on FD that the writer has started (its policies loaded, its knobs built, its journals read): a
 * WMSG_RESULT of id 0, result 0, text WMSG_HELLO, the first datagram on the socket. 0 or -errno. */
int writer_hello(int fd);
/* The answer to datagram BUF of LEN bytes from the read channel into OUT (as writer_handle_fd): READ, PROBE and SOCKET
 * are served, whatever write is in flight; a write (SET, RESTORE, RELOAD) is refused -EPERM. */
int writer_handle_read(struct writer *w, const uint8_t *buf, size_t len, uint8_t *out, size_t outlen, int *fd);
/* The DUMP in hand ended: RC 0 with FD (the output, on a memfd: passed, then closed here), or -errno with MSG. */
void writer_dumped(struct writer *w, int rc, const char *msg, int fd);
/* Serve FD (a SOCK_SEQPACKET socket) on LOOP until the engine closes it, one request at a time, each answered when
 * its write ends (an nginx reload from LOOP), and RFD (-1: none), the read channel, each request at once, also while a
 * write is in flight: 0, or -errno. LOOP runs until FD is closed (RFD is closed with it). */
int writer_serve(struct writer *w, uv_loop_t *loop, int fd, int rfd);

#endif
