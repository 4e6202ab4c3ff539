/*
 * stubhttp: a small HTTP/1.1 client for nginx's stub_status page over a kept-alive plain TCP connection, and for
 * the synthetic client's timed requests.
 *
 * The page is about 100 bytes and fetched every tick; libcurl spent 0.15-0.2 ms of CPU a fetch on its machinery
 * (URL parsing, connection cache, header handling), three times the socket calls themselves. This client sends
 * one GET on a connection it keeps open between fetches, reads the status line, the headers it needs
 * (Content-Length, Transfer-Encoding: chunked, Connection) and a body of a bounded size, all under one deadline.
 * A kept connection that the server has closed is reopened once per fetch. Plain http:// only: the sampler keeps
 * libcurl for anything else. A timed GET (stubhttp_get_timed, the synthetic client's) reads its phases off the
 * deadline's timerfd: what is left of the timeout says how long each phase took, so this module reads no clock.
 *
 * It must not log, decide what a status means or parse the page; it blocks (the caller runs it on a pool thread),
 * and touches nothing but its own state and the caller's buffers.
 */
#ifndef NGXAT_STUBHTTP_H
#define NGXAT_STUBHTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STUBHTTP_HEAD_MAX 8192 /* status line and headers together */

struct stubhttp;

/* Whether URL is one this client fetches (http://, no user info). */
bool stubhttp_handles(const char *url);
/* A client for URL ("http://host[:port]/path", host a name, an IPv4 address or [IPv6]); it connects on the first
 * fetch. 0, -EINVAL (ERR says why), -ENOMEM. */
int stubhttp_new(const char *url, struct stubhttp **out, char *err, size_t errlen);
/* Close the connection and free; NULL is fine. */
void stubhttp_free(struct stubhttp *c);

/* GET the page within TIMEOUT_MS: its body (at most MAX - 1 bytes, NUL-terminated) into BODY, *LEN, and the HTTP
 * status into *STATUS. A new connection is made in the network namespace NETNS_FD (-1: the caller's); NETNS_GEN
 * names that namespace, and a kept connection made under another generation is closed first. 0, or -ETIMEDOUT,
 * -EMSGSIZE (a body or header block too large), -EPROTO (not HTTP), or the -errno of a resolve, connect, send or
 * receive, with ERR saying what failed. */
int stubhttp_get(struct stubhttp *c, int netns_fd, uint64_t netns_gen, int timeout_ms, char *body, size_t max,
		 size_t *len, int *status, char *err, size_t errlen);
/* What one timed GET took, in microseconds from its start. */
struct stubhttp_timing {
	bool connected;      /* a new connection was made; false: a kept one was used (no connect time) */
	bool first_byte;     /* a byte of the response came back */
	uint64_t connect_us; /* the connection established (when connected) */
	uint64_t ttfb_us;    /* the first byte of the response (when first_byte) */
	uint64_t total_us;   /* the whole response, or the failure */
};

/* As stubhttp_get, with its phases into *T. FRESH: on a new connection (a kept one is closed first), closed after
 * the response; else on the kept connection when there is one, kept open when the server allows. */
int stubhttp_get_timed(struct stubhttp *c, int netns_fd, uint64_t netns_gen, int timeout_ms, bool fresh,
		       char *body, size_t max, size_t *len, int *status, struct stubhttp_timing *t, char *err,
		       size_t errlen);
/* New connections' sockets made by MAKE(CTX, FAMILY) (a SOCK_STREAM socket or -errno; the writer's sockets of
 * nginx's namespace for an engine that may not enter it) instead of in NETNS_FD; NULL: as before. */
typedef int (*stubhttp_socket_fn)(void *ctx, int family);
void stubhttp_set_socket(struct stubhttp *c, stubhttp_socket_fn make, void *ctx);
/* Whether a connection is kept open for the next fetch. */
bool stubhttp_connected(const struct stubhttp *c);

#endif
