#define _GNU_SOURCE /* O_PATH, AT_EMPTY_PATH */
#include "trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int trust_check_stat(const char *path, const struct stat *st, uid_t owner, const char *because, char *err,
		     size_t errlen)
{
	if (st->st_uid != owner) {
		snprintf(err, errlen, "%s: owned by uid %u, not %u: refused (%s)", path, (unsigned)st->st_uid,
			 (unsigned)owner, because);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s: writable by group or others (mode %04o): refused (%s)", path,
			 (unsigned)(st->st_mode & 07777), because);
		return -EPERM;
	}
	return 0;
}

/* One walk: the descriptor of where it stands, the name of that place (for messages) and what is left to walk. */
struct walk {
	const char *path, *because;
	uid_t owner;
	int fd;
	char at[PATH_MAX];
	char rest[2 * PATH_MAX];
	char *err;
	size_t errlen;
};

static int walk_fail(struct walk *w, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int walk_fail(struct walk *w, int r, const char *fmt, ...)
{
	char what[PATH_MAX + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(w->err, w->errlen, "%s: %s: refused (%s)", w->path, what, w->because);
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	return r;
}

/* W->at followed by NAME ("..": without its last component). */
static void at_append(struct walk *w, const char *name)
{
	size_t n = strlen(w->at);
	char *slash;

	if (strcmp(name, "..") == 0) {
		slash = strrchr(w->at, '/');
		if (slash && slash != w->at)
			*slash = '\0';
		else
			snprintf(w->at, sizeof(w->at), "/");
		return;
	}
	snprintf(w->at + n, sizeof(w->at) - n, "%s%s", n > 1 ? "/" : "", name);
}

/* The object at W->at, with ST, trusted: a trusted owner, and not writable by group or others unless it is a
 * directory passed through with the sticky bit (its entries then belong to whom they belong, checked next). */
static int check_object(struct walk *w, const struct stat *st, bool last)
{
	if (st->st_uid != 0 && st->st_uid != w->owner)
		return walk_fail(w, -EPERM, "%s is owned by uid %u, not root%s", w->at, (unsigned)st->st_uid,
				 w->owner ? " or the agent's user" : "");
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	if (!last && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))
		return 0;
	return walk_fail(w, -EPERM, "%s is writable by group or others (mode %04o)", w->at,
			 (unsigned)(st->st_mode & 07777));
}

/* Put the target of the trusted link NFD (named W->at) in front of what is left after it (AFTER). */
static int splice_link(struct walk *w, int nfd, const char *after)
{
	char target[PATH_MAX], rest[2 * PATH_MAX];
	ssize_t n = readlinkat(nfd, "", target, sizeof(target) - 1);

	if (n < 0)
		return walk_fail(w, -errno, "%s: %s", w->at, strerror(errno));
	target[n] = '\0';
	if ((size_t)snprintf(rest, sizeof(rest), "%s/%s", target, after) >= sizeof(rest))
		return walk_fail(w, -ENAMETOOLONG, "%s: the link's target is too long", w->at);
	snprintf(w->rest, sizeof(w->rest), "%s", rest);
	if (target[0] == '/') {
		close(w->fd);
		w->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (w->fd < 0)
			return walk_fail(w, -errno, "/: %s", strerror(errno));
		snprintf(w->at, sizeof(w->at), "/");
	} else {
		at_append(w, "..");
	}
	return 0;
}

int trust_walk(const char *path, uid_t owner, int flags, const char *because, int *fd, char *err, size_t errlen)
{
	struct walk *w = calloc(1, sizeof(*w));
	char name[NAME_MAX + 1], cwd[PATH_MAX], none[1];
	unsigned links = 0;
	struct stat st;
	char *p;
	int r;

	if (fd)
		*fd = -1;
	if (!err || !errlen) {
		err = none;
		errlen = sizeof(none);
	}
	if (!w) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	*w = (struct walk){.path = path, .because = because, .owner = owner, .fd = -1, .err = err, .errlen = errlen};
	if (!path[0]) {
		r = walk_fail(w, -EINVAL, "an empty path");
		goto out;
	}
	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
		r = walk_fail(w, -errno, "the working directory: %s", strerror(errno));
		goto out;
	}
	if ((size_t)snprintf(w->rest, sizeof(w->rest), "%s/%s", path[0] == '/' ? "" : cwd, path) >= sizeof(w->rest)) {
		r = walk_fail(w, -ENAMETOOLONG, "too long");
		goto out;
	}
	snprintf(w->at, sizeof(w->at), "/");
	w->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->fd < 0 || fstat(w->fd, &st) < 0) {
		r = walk_fail(w, -errno, "/: %s", strerror(errno));
		goto out;
	}
	p = w->rest;
	for (;;) {
		size_t n;
		bool last;
		int nfd;

		p += strspn(p, "/");
		if (!*p)
			break;
		n = strcspn(p, "/");
		if (n > NAME_MAX) {
			r = walk_fail(w, -ENAMETOOLONG, "a name longer than %d bytes", NAME_MAX);
			goto out;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		last = p[strspn(p, "/")] == '\0';
		if (strcmp(name, ".") == 0)
			continue;
		at_append(w, name);
		nfd = openat(w->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			r = -errno;
			/* Absent, or a directory on the way absent: nothing there to trust or to use yet. */
			if (r == -ENOENT && (flags & TRUST_MAY_BE_ABSENT)) {
				close(w->fd);
				w->fd = -1;
				r = 1;
				goto out;
			}
			r = walk_fail(w, r, "%s: %s", w->at, strerror(-r));
			goto out;
		}
		if (fstatat(nfd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			close(nfd);
			r = walk_fail(w, r, "%s: %s", w->at, strerror(-r));
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			if (last && !(flags & TRUST_FOLLOW))
				r = walk_fail(w, -ELOOP, "%s is a symbolic link (name the file itself)", w->at);
			else if (st.st_uid != 0 && st.st_uid != owner)
				r = walk_fail(w, -EPERM, "%s is a link owned by uid %u, not root", w->at,
					      (unsigned)st.st_uid);
			else if (++links > TRUST_LINKS_MAX)
				r = walk_fail(w, -ELOOP, "more than %d links", TRUST_LINKS_MAX);
			else
				r = splice_link(w, nfd, p);
			close(nfd);
			if (r < 0)
				goto out;
			p = w->rest;
			continue;
		}
		close(w->fd);
		w->fd = nfd;
		if ((r = check_object(w, &st, last)) < 0)
			goto out;
		if (!last && !S_ISDIR(st.st_mode)) {
			r = walk_fail(w, -ENOTDIR, "%s is not a directory", w->at);
			goto out;
		}
	}
	if (fstat(w->fd, &st) < 0) {
		r = walk_fail(w, -errno, "%s: %s", w->at, strerror(errno));
		goto out;
	}
	if ((r = check_object(w, &st, true)) < 0)
		goto out;
	if (fd) {
		*fd = w->fd;
		w->fd = -1;
	}
	r = 0;
out:
	if (w->fd >= 0)
		close(w->fd);
	free(w);
	return r;
}

int trust_check_path(const char *path, uid_t owner, bool may_be_absent, const char *because, char *err,
		     size_t errlen)
{
	return trust_walk(path, owner, may_be_absent ? TRUST_MAY_BE_ABSENT : 0, because, NULL, err, errlen);
}

int trust_find_program(const char *name, char *out, size_t outlen)
{
	const char *d = getenv("PATH");

	if (strchr(name, '/'))
		return (size_t)snprintf(out, outlen, "%s", name) < outlen ? 0 : -ENAMETOOLONG;
	for (d = d ? d : "/usr/bin:/bin"; *d; d += *d == ':') {
		size_t n = strcspn(d, ":");

		if (n && (size_t)snprintf(out, outlen, "%.*s/%s", (int)n, d, name) < outlen && access(out, X_OK) == 0)
			return 0;
		d += n;
	}
	return -ENOENT;
}
