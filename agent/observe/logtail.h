/*
 * logtail: follow a log file by name, like `tail -F`, without ever blocking the loop.
 *
 * This module owns one descriptor on the followed file, the read position, and the bytes of a line not yet
 * completed. Each poll reads what was appended, at most a given number of bytes, and hands complete lines to a
 * callback; it notices rotation by rename (new inode at the path), copytruncate (file shorter than our position)
 * and deletion, using only read() and stat(). Memory is bounded: one line buffer of LOGTAIL_LINE_MAX bytes.
 * It must not parse lines, log, or keep lines after the callback returns; the line passed to the callback is
 * valid only during the call.
 */
#ifndef NGXAT_LOGTAIL_H
#define NGXAT_LOGTAIL_H

#include <stdbool.h>
#include <stddef.h>

/* Longest line delivered whole; a longer one is delivered as its first LOGTAIL_LINE_MAX bytes, the rest dropped. */
#define LOGTAIL_LINE_MAX 16384

struct logtail;

/* Called once per complete line, without its newline. */
typedef void (*logtail_line_cb)(void *ctx, const char *line, size_t len);

/* Follow PATH from its current end; a missing file is not an error and will be read from its start once created. */
int logtail_open(const char *path, struct logtail **out);
/* How PATH is opened read-only: a descriptor (O_CLOEXEC, non-blocking; the tail's then), or -errno. */
typedef int (*logtail_opener)(void *ctx, const char *path);
/* logtail_open, each open of PATH (at the start, after a rotation) made by OPENER(CTX, PATH) instead (an engine that
 * may not read nginx's logs asks its writer: priv/nssock.h); its stat() of PATH, to see a rotation, stays its own. */
int logtail_open_with(const char *path, logtail_opener opener, void *ctx, struct logtail **out);

/* Stop following and free; NULL is allowed. */
void logtail_close(struct logtail *t);

/* Deliver lines appended since the last call, reading at most MAX_BYTES; *MORE says whether bytes remain. */
int logtail_poll(struct logtail *t, size_t max_bytes, logtail_line_cb cb, void *ctx, bool *more);

#endif
