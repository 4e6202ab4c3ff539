/*
 * wclient: the engine's end of the writer's socket (issue 22), on the engine's loop.
 *
 * Owns the requests in flight: each gets an id of its own, is sent as one datagram (wmsg.h), and is answered
 * at most once, from the loop: by the writer's RESULT of the same id, or by -ETIMEDOUT when none came within the
 * timeout, counted from when the request before it was answered (the writer answers in order, one at a time; a late
 * answer is dropped when it comes). When the writer is gone the requests in flight are not answered:
 * whether their writes were made is not known (its owner stops, as if killed with it: wclient_gone); requests
 * after it are -EPIPE. The writer answers in its own time (an nginx reload takes seconds), so the engine never
 * waits on it.
 */
#ifndef NGXAT_WCLIENT_H
#define NGXAT_WCLIENT_H

#include <stdbool.h>
#include <uv.h>

#include "priv/wmsg.h"

#define WCLIENT_PENDING_MAX 16 /* requests in flight at once */

struct wclient;

/* RESULT (0 or -errno) and TEXT (the writer's why, or the client's) of one request. */
typedef void (*wclient_done_fn)(int result, const char *text, void *ctx);
/* The same, with the descriptor the answer passed (FD, the callee's to close; -1: none came). */
typedef void (*wclient_fd_fn)(int result, const char *text, int fd, void *ctx);

/* Wait up to TIMEOUT_MS for the writer's first datagram on FD (writer_hello), before a client is made on it: 0; or
 * -EPIPE (the writer ended first: it could not start, and logged why), -ETIMEDOUT, -EBADMSG (something else came
 * first) or another -errno, with ERR. */
int wclient_await_hello(int fd, int timeout_ms, char *err, size_t errlen);
/* A client of the writer on FD (a SOCK_SEQPACKET socket; the client owns and closes it) from LOOP, each request
 * answered within TIMEOUT_MS (more than 0). 0, -EINVAL or -ENOMEM. */
int wclient_new(uv_loop_t *loop, int fd, int timeout_ms, struct wclient **out);
/* Send request M (its id is set here); DONE(CTX) is called once, later, from the loop (it may send another request,
 * never free the client). 0, -EBUSY (as many in
 * flight as there may be), -EPIPE (the writer is gone), or -errno (M does not encode, the send failed), with WHY. */
int wclient_request(struct wclient *c, struct wmsg *m, wclient_done_fn done, void *ctx, char *why, size_t whylen);
/* wclient_request for an answer that passes a descriptor (a SOCKET's): DONE gets it. A descriptor in an answer to a
 * request of wclient_request, or to one no longer waited for, is closed. */
int wclient_request_fd(struct wclient *c, struct wmsg *m, wclient_fd_fn done, void *ctx, char *why, size_t whylen);
/* Forget the requests of CTX in flight: their DONE is not called (the knob that asked is released). */
void wclient_cancel(struct wclient *c, const void *ctx);
/* Whether the writer is gone (it closed its end, or answered what is no answer): every request is -EPIPE. The
 * socket is polled from wclient_new on, so a writer that dies is seen while nothing is asked. */
bool wclient_gone(const struct wclient *c);
/* Close the socket and the handles (on the loop) and forget every request in flight (no DONE); C stays valid (every
 * request -EPIPE) until wclient_free. */
void wclient_close(struct wclient *c);
/* wclient_close, and free C once its handles are closed (on the loop). */
void wclient_free(struct wclient *c);

/*
 * rclient: the engine's end of the writer's read channel (writer_serve's RFD). Synchronous: a knob's read or probe
 * is a call the engine's loop waits on, as it waited on the driver before the split. The writer answers it at once
 * (also while a write is in flight), unless its own loop is held (it builds its knobs, which runs nginx -T): each call
 * waits at most TIMEOUT_MS, and while an answer is late the next calls fail at once (-EAGAIN) instead of each waiting
 * again. Calls from several threads (the sampler's pool) are made one at a time.
 */
struct rclient;

/* A client on FD (a SOCK_SEQPACKET socket; the client owns and closes it). 0, -EINVAL or -ENOMEM. */
int rclient_new(int fd, int timeout_ms, struct rclient **out);
/* Send request M (its id set here) and wait for its answer: the writer's RESULT (0 or -errno) with its TEXT, and the
 * descriptor it passed into *FD (NULL: closed; -1: none); or -ETIMEDOUT, -EAGAIN (an earlier answer is late), -EPIPE
 * (the writer is gone), -errno (M does not encode), with TEXT saying so. */
int rclient_call(struct rclient *c, struct wmsg *m, char *text, size_t textlen, int *fd);
void rclient_free(struct rclient *c);

#endif
