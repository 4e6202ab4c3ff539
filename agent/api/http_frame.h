/*
 * http_frame: whether a request's head is well formed and framed one way only (pure).
 *
 * Owns the rules the API holds every request to before a handler sees it, where libmicrohttpd (0.9.75) is lax:
 * one Content-Length (digits) or one Transfer-Encoding (chunked), never both; exactly one Host (HTTP/1.1; at most
 * one in HTTP/1.0); at most one Origin; a request line of METHOD TARGET HTTP/1.x; header lines of a token, a colon
 * and a value without control characters. A proxy in front and the agent then agree on where each request ends.
 * The same counts serve the first request's raw head (http_head_check) and every request's parsed headers
 * (http_framing_add). No I/O.
 */
#ifndef NGXAT_HTTP_FRAME_H
#define NGXAT_HTTP_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_HEAD_MAX 8192 /* a request line and its headers, at most */

/* The framing headers seen in one request. */
struct http_framing {
	unsigned content_length, transfer_encoding, host, origin;
	bool cl_bad;  /* a Content-Length that is not digits */
	bool te_bad;  /* a Transfer-Encoding other than chunked */
};

/* Count header NAME (NLEN bytes) with VALUE (VLEN bytes) into F. */
void http_framing_add(struct http_framing *f, const char *name, size_t nlen, const char *value, size_t vlen);
/* Whether F frames a request of HTTP/1.1 (HTTP11) or 1.0 one way only: 0, or -EBADMSG with DETAIL. */
int http_framing_check(const struct http_framing *f, bool http11, char *detail, size_t detlen);
/* The head at the start of BUF (LEN bytes): 0 when it is complete and well formed; -EAGAIN: not complete yet;
 * -EMSGSIZE: longer than HTTP_HEAD_MAX; -EBADMSG: malformed or framed two ways, with DETAIL. */
int http_head_check(const char *buf, size_t len, char *detail, size_t detlen);
/* Header NAME's value in a head http_head_check found complete (BUF, LEN bytes), without the blanks around it, into
 * OUT (NUL-terminated): 0; -ENOENT: no such header; -ENOSPC: longer than OUTLEN - 1. The first one counts. */
int http_head_value(const char *buf, size_t len, const char *name, char *out, size_t outlen);

#endif
