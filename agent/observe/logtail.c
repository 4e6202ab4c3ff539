/*
 * logtail: see logtail.h.
 *
 * Rotation rules, in the order a poll applies them:
 * - The path names another file than our descriptor (rename rotation): our file is read to its end first, since
 *   writers keep appending to it until they reopen. We switch only once the new file has data or ours has been
 *   deleted: with logrotate's `create`, the new file exists before nginx is told to reopen, and lines written to
 *   the old one in between would be lost if we left it at once. On the switch an unterminated last line of the old
 *   file is delivered, since nothing will complete it.
 * - Our file is shorter than our position (copytruncate): read again from 0; the partial line is dropped, because
 *   its remainder was truncated away. So is a file whose last bytes before our position are no longer the bytes we
 *   read there (the MARK): truncated and written past our position again between two polls (issue 22: 460 of 1,300
 *   lines were lost that way).
 * - The path is gone: a renamed-away file is still followed; a deleted one (no links left) is read to its end and
 *   closed, so that we do not pin its disk space, and the poll reports -ENOENT until the path reappears.
 * A file that appears after logtail_open is new and is read from its start.
 */
#define _GNU_SOURCE

#include "observe/logtail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read size: large enough that a busy access log is a few reads a tick. */
#define CHUNK 65536
/* The last bytes read, compared with the file at each poll: log lines carry a time, so 64 of them differ once the
 * file was rewritten. */
#define MARK 64

struct logtail {
	char *path;
	logtail_opener open;	/* NULL: open(2) */
	void *open_ctx;
	int fd;			/* -1 while the path is missing */
	dev_t dev;
	ino_t ino;
	off_t off;		/* bytes of the current file consumed so far */
	size_t len;		/* bytes of an incomplete line held in line[] */
	bool skipping;		/* the current line overflowed: drop bytes up to its newline */
	size_t marklen;		/* bytes in mark[]: the last ones before off */
	char mark[MARK];
	char line[LOGTAIL_LINE_MAX];
	char chunk[CHUNK];
};

static int open_file(struct logtail *t, bool at_end)
{
	struct stat st;
	int fd = t->open ? t->open(t->open_ctx, t->path) : open(t->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return t->open ? fd : -errno;
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	t->fd = fd;
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->off = 0;
	t->len = 0;
	t->skipping = false;
	t->marklen = 0;
	/* Only regular files have an end to start from; a FIFO is read as it comes. */
	if (at_end && S_ISREG(st.st_mode)) {
		size_t n = st.st_size < MARK ? (size_t)st.st_size : MARK;
		ssize_t got = n ? pread(fd, t->mark, n, st.st_size - (off_t)n) : 0;

		if (lseek(fd, st.st_size, SEEK_SET) < 0) {
			int e = errno;

			close(fd);
			t->fd = -1;
			return -e;
		}
		t->off = st.st_size;
		t->marklen = got == (ssize_t)n ? n : 0;
	}
	return 0;
}

/* The last MARK bytes read now include S[0..N). */
static void remember(struct logtail *t, const char *s, size_t n)
{
	if (n >= MARK) {
		memcpy(t->mark, s + n - MARK, MARK);
		t->marklen = MARK;
		return;
	}
	if (t->marklen + n > MARK) {
		size_t drop = t->marklen + n - MARK;

		memmove(t->mark, t->mark + drop, t->marklen - drop);
		t->marklen -= drop;
	}
	memcpy(t->mark + t->marklen, s, n);
	t->marklen += n;
}

/* Whether the bytes before our position are still the ones we read (a regular file of at least OFF bytes). */
static bool mark_holds(const struct logtail *t)
{
	char now[MARK];

	if (t->marklen == 0 || t->off < (off_t)t->marklen)
		return true;
	return pread(t->fd, now, t->marklen, t->off - (off_t)t->marklen) == (ssize_t)t->marklen &&
	       memcmp(now, t->mark, t->marklen) == 0;
}

static void close_file(struct logtail *t, logtail_line_cb cb, void *ctx)
{
	if (t->len > 0 && !t->skipping)
		cb(ctx, t->line, t->len);
	t->len = 0;
	t->skipping = false;
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

int logtail_open(const char *path, struct logtail **out)
{
	return logtail_open_with(path, NULL, NULL, out);
}

int logtail_open_with(const char *path, logtail_opener opener, void *ctx, struct logtail **out)
{
	struct logtail *t;
	int rc;

	if (!path || !out || !*path)
		return -EINVAL;
	*out = NULL;
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t, 0, offsetof(struct logtail, line));
	t->fd = -1;
	t->open = opener;
	t->open_ctx = ctx;
	t->path = strdup(path);
	if (!t->path) {
		free(t);
		return -ENOMEM;
	}
	rc = open_file(t, true);
	if (rc < 0 && rc != -ENOENT) {
		logtail_close(t);
		return rc;
	}
	*out = t;
	return 0;
}

void logtail_close(struct logtail *t)
{
	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	free(t);
}

/* Add a piece of the current line; a line that outgrows the buffer is delivered cut and the rest skipped. */
static void add_piece(struct logtail *t, const char *s, size_t n, logtail_line_cb cb, void *ctx)
{
	size_t room;

	if (t->skipping)
		return;
	room = LOGTAIL_LINE_MAX - t->len;
	if (n <= room) {
		memcpy(t->line + t->len, s, n);
		t->len += n;
		return;
	}
	memcpy(t->line + t->len, s, room);
	cb(ctx, t->line, LOGTAIL_LINE_MAX);
	t->len = 0;
	t->skipping = true;
}

static void feed(struct logtail *t, const char *s, size_t n, logtail_line_cb cb, void *ctx)
{
	while (n > 0) {
		const char *nl = memchr(s, '\n', n);
		size_t seg = nl ? (size_t)(nl - s) : n;

		if (!nl) {
			add_piece(t, s, seg, cb, ctx);
			return;
		}
		if (t->skipping) {
			t->skipping = false;
		} else if (t->len == 0) {
			/* The common case: a whole line inside the chunk goes out without a copy. */
			cb(ctx, s, seg < LOGTAIL_LINE_MAX ? seg : LOGTAIL_LINE_MAX);
		} else {
			add_piece(t, s, seg, cb, ctx);
			if (!t->skipping)
				cb(ctx, t->line, t->len);
			t->len = 0;
			t->skipping = false;
		}
		s += seg + 1;
		n -= seg + 1;
	}
}

/* Read the current file up to its end or until *BUDGET is spent; 1 when the budget left bytes unread. */
static int drain(struct logtail *t, size_t *budget, logtail_line_cb cb, void *ctx)
{
	struct stat st;

	while (*budget > 0) {
		size_t want = *budget < CHUNK ? *budget : CHUNK;
		ssize_t n = read(t->fd, t->chunk, want);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		if (n == 0)
			return 0;
		t->off += n;
		*budget -= (size_t)n;
		remember(t, t->chunk, (size_t)n);
		feed(t, t->chunk, (size_t)n, cb, ctx);
	}
	/* A budget spent exactly at the end is not a backlog; only a regular file can tell. */
	if (fstat(t->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= t->off)
		return 0;
	return 1;
}

int logtail_poll(struct logtail *t, size_t max_bytes, logtail_line_cb cb, void *ctx, bool *more)
{
	struct stat cur, at_path;
	size_t budget = max_bytes;
	bool path_ok;
	int rc;

	if (more)
		*more = false;
	if (!t || !cb || !more || max_bytes == 0)
		return -EINVAL;
	if (t->fd >= 0) {
		if (fstat(t->fd, &cur) < 0)
			return -errno;
		if (S_ISREG(cur.st_mode) && (cur.st_size < t->off || !mark_holds(t))) {
			if (lseek(t->fd, 0, SEEK_SET) < 0)
				return -errno;
			t->off = 0;
			t->len = 0;
			t->skipping = false;
			t->marklen = 0;
		}
		path_ok = stat(t->path, &at_path) == 0;
		if (!path_ok && errno != ENOENT)
			return -errno;
		rc = drain(t, &budget, cb, ctx);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			*more = true;
			return 0;
		}
		if (path_ok && at_path.st_dev == t->dev && at_path.st_ino == t->ino)
			return 0;
		/* Our file is drained and the path names another file or none. */
		if (fstat(t->fd, &cur) < 0)
			return -errno;
		if (cur.st_nlink > 0 && (!path_ok || at_path.st_size == 0))
			return 0;
		close_file(t, cb, ctx);
	}
	rc = open_file(t, false);
	if (rc < 0)
		return rc;
	rc = drain(t, &budget, cb, ctx);
	if (rc < 0)
		return rc;
	*more = rc > 0;
	return 0;
}
