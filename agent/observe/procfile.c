/*
 * procfile: see procfile.h.
 */
#define _GNU_SOURCE

#include "observe/procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#define MIN_CAP 16384

void procfile_init(struct procfile *f)
{
	f->fd = -1;
	f->path = NULL;
}

void procfile_close(struct procfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	f->fd = -1;
	f->path = NULL;
}

bool procfile_is_kept(const struct procfile *f)
{
	return f->fd >= 0;
}

void procbuf_free(struct procbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* Room for at least 4 KiB more (one seq_file page), within MAX plus that page. */
static int grow(struct procbuf *b, size_t max)
{
	size_t cap = b->cap ? b->cap * 2 : MIN_CAP;
	char *p;

	if (b->cap >= max + 4096)
		return -E2BIG;
	if (cap > max + 4096)
		cap = max + 4096;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

/* The whole file from offset 0: pread on a kept descriptor, read on a fresh one (which may not be seekable). */
static int slurp(int fd, bool positional, struct procbuf *b, size_t max)
{
	b->len = 0;
	for (;;) {
		ssize_t r;

		if (b->len + 4096 > b->cap) {
			int e = grow(b, max);

			if (e < 0)
				return e;
		}
		if (positional)
			r = pread(fd, b->data + b->len, b->cap - b->len - 1, (off_t)b->len);
		else
			r = read(fd, b->data + b->len, b->cap - b->len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		b->len += (size_t)r;
		if (b->len > max)
			return -E2BIG;
	}
	b->data[b->len] = '\0';
	return 0;
}

static bool regenerates(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) == 0 && (sfs.f_type == PROC_SUPER_MAGIC || sfs.f_type == SYSFS_MAGIC);
}

int procfile_read(struct procfile *f, const char *path, bool keep, struct procbuf *b, size_t max)
{
	int fd, r;

	if (f->fd >= 0 && (!keep || strcmp(f->path, path) != 0))
		procfile_close(f);
	if (f->fd >= 0) {
		r = slurp(f->fd, true, b, max);
		/* An error, or nothing where there was a text (a dead process's children file reads empty): the
		 * object behind the descriptor is gone, and a fresh open tells what the path holds now. */
		if ((r == 0 && b->len > 0) || r == -E2BIG || r == -ENOMEM)
			return r;
		procfile_close(f);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = slurp(fd, false, b, max);
	/* Without memory for the path the file is simply not kept. */
	if (r == 0 && keep && regenerates(fd) && (f->path = strdup(path))) {
		f->fd = fd;
		return 0;
	}
	close(fd);
	return r;
}
