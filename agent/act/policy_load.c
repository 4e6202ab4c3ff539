/*
 * policy_load: see policy_load.h.
 *
 * Trust checks run on descriptors, not names: a directory is opened with O_NOFOLLOW and checked with fstat, and
 * each file is opened relative to that descriptor with O_NOFOLLOW and checked with fstat before a byte is read, so
 * a file swapped for a link between the check and the read is refused rather than followed. O_NONBLOCK keeps a
 * FIFO planted under a policy name from blocking the open.
 */
#include "act/policy_load.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trust.h"

#define NAME_LEN 64 /* a policy file name and its NUL: struct knob_policy keeps it in file[64] */
#define SECTION_LEN 50 /* inih cuts section names at 49 bytes; a longer one must be an error, not a cut */

struct dir {
	const char *path;
	int fd;
	char (*names)[NAME_LEN];
	size_t n;
};

static void fmt_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fmt_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int check_trust(const char *path, const struct stat *st, uid_t owner, char *err, size_t errlen)
{
	char none[1];

	return trust_check_stat(path, st, owner, "a policy decides what is written as root", err ? err : none,
				err ? errlen : sizeof(none));
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

static bool policy_name(const char *name, size_t *len)
{
	*len = strlen(name);
	return name[0] != '.' && *len > 7 && strcmp(name + *len - 7, ".policy") == 0;
}

/* Open and check DIR->path, and list its policy files, sorted. 1 when it is absent and MAY_BE_ABSENT. */
static int open_dir(struct dir *d, uid_t owner, bool may_be_absent, char *err, size_t errlen)
{
	struct stat st, wst;
	char none[1];
	struct dirent *de;
	DIR *dp;
	int fd, r;

	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0) {
		r = -errno;
		if (r == -ENOENT && may_be_absent)
			return 1;
		if ((r == -ELOOP || r == -ENOTDIR) && lstat(d->path, &st) == 0 && S_ISLNK(st.st_mode)) {
			fmt_err(err, errlen, "%s: a symbolic link: refused (name the directory itself)", d->path);
			return -ELOOP;
		}
		fmt_err(err, errlen, "%s: %s", d->path, strerror(-r));
		return r;
	}
	if (fstat(d->fd, &st) < 0) {
		r = -errno;
		fmt_err(err, errlen, "%s: %s", d->path, strerror(-r));
		return r;
	}
	r = check_trust(d->path, &st, owner, err, errlen);
	if (r < 0)
		return r;
	/* Every directory above it too (issue 22, R3: one a user owns could swap this one after the check), and the
	 * walk must reach the directory opened. */
	r = trust_walk(d->path, owner, 0, "a policy decides what is written as root", &fd, err ? err : none,
		       err ? errlen : sizeof(none));
	if (r < 0)
		return r;
	if (fstat(fd, &wst) < 0 || wst.st_dev != st.st_dev || wst.st_ino != st.st_ino) {
		close(fd);
		fmt_err(err, errlen, "%s: changed while being opened: refused", d->path);
		return -EAGAIN;
	}
	close(fd);
	fd = dup(d->fd);
	dp = fd < 0 ? NULL : fdopendir(fd);
	if (!dp) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		fmt_err(err, errlen, "%s: %s", d->path, strerror(-r));
		return r;
	}
	d->names = calloc(POLICY_FILES_MAX, sizeof(*d->names));
	if (!d->names) {
		closedir(dp);
		fmt_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = 0;
	errno = 0;
	while (r == 0 && (de = readdir(dp)) != NULL) {
		size_t len;

		if (!policy_name(de->d_name, &len))
			continue;
		for (size_t i = 0; i < len; i++) {
			char c = de->d_name[i];

			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("_.-", c))) {
				fmt_err(err, errlen, "%s: a policy file name has a character outside A-Z a-z 0-9 _ . -",
					d->path);
				r = -EINVAL;
				break;
			}
		}
		if (r == 0 && len >= NAME_LEN) {
			fmt_err(err, errlen, "%s/%s: file name longer than %d characters", d->path, de->d_name,
				NAME_LEN - 1);
			r = -ENAMETOOLONG;
		}
		if (r == 0 && d->n == POLICY_FILES_MAX) {
			fmt_err(err, errlen, "%s: more than %d policy files", d->path, POLICY_FILES_MAX);
			r = -E2BIG;
		}
		if (r == 0)
			memcpy(d->names[d->n++], de->d_name, len + 1);
	}
	if (r == 0 && errno) {
		r = -errno;
		fmt_err(err, errlen, "%s: %s", d->path, strerror(-r));
	}
	closedir(dp);
	if (r == 0)
		qsort(d->names, d->n, sizeof(*d->names), cmp_name);
	return r;
}

static void close_dir(struct dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->names);
	d->fd = -1;
	d->names = NULL;
	d->n = 0;
}

/* Read NAME of directory D, checked, whole, into a new buffer. */
static int read_policy(const struct dir *d, const char *name, const char *path, uid_t owner, char **buf, size_t *len,
		       char *err, size_t errlen)
{
	struct stat lst, st;
	size_t got = 0;
	char *b;
	int fd, r;

	if (fstatat(d->fd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
		fmt_err(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (S_ISLNK(lst.st_mode)) {
		fmt_err(err, errlen, "%s: a symbolic link: refused (copy the file instead)", path);
		return -ELOOP;
	}
	if (!S_ISREG(lst.st_mode)) {
		fmt_err(err, errlen, "%s: not a regular file: refused", path);
		return -EINVAL;
	}
	fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			fmt_err(err, errlen, "%s: a symbolic link: refused (copy the file instead)", path);
		else
			fmt_err(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		fmt_err(err, errlen, "%s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode) || st.st_ino != lst.st_ino || st.st_dev != lst.st_dev) {
		fmt_err(err, errlen, "%s: changed while being opened: refused", path);
		close(fd);
		return -EAGAIN;
	}
	r = check_trust(path, &st, owner, err, errlen);
	if (r == 0 && st.st_size > POLICY_FILE_SIZE_MAX) {
		fmt_err(err, errlen, "%s: larger than %d bytes", path, POLICY_FILE_SIZE_MAX);
		r = -EFBIG;
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	/* One byte more than the limit: a file that grew since fstat is caught as too large, not cut. */
	b = malloc(POLICY_FILE_SIZE_MAX + 2);
	if (!b) {
		close(fd);
		fmt_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n = read(fd, b + got, POLICY_FILE_SIZE_MAX + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			fmt_err(err, errlen, "%s: %s", path, strerror(-r));
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > POLICY_FILE_SIZE_MAX) {
			fmt_err(err, errlen, "%s: larger than %d bytes", path, POLICY_FILE_SIZE_MAX);
			r = -EFBIG;
			break;
		}
	}
	close(fd);
	if (r < 0) {
		free(b);
		return r;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
	return 0;
}

struct parse_ctx {
	struct policy_set *set;
	const char *path;
	const char *p, *end; /* the unread text */
	int line;            /* line handed to inih last */
	int err_line;        /* line of our first error, 0 for none */
	int rc;
	char msg[512];       /* our first error, formatted "PATH:LINE: message" */
};

static void record(struct parse_ctx *ctx, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void record(struct parse_ctx *ctx, int rc, const char *fmt, ...)
{
	va_list ap;

	if (ctx->err_line)
		return;
	ctx->err_line = ctx->line;
	ctx->rc = rc;
	va_start(ap, fmt);
	vsnprintf(ctx->msg, sizeof(ctx->msg), fmt, ap);
	va_end(ap);
}

/*
 * inih asks for one line at a time into its own buffer of NUM bytes. Handing it lines here keeps the line count
 * exact for FILE:LINE, turns a line too long for the buffer into an error instead of a split line, drops leading
 * blanks (an indented line is an ordinary line here, never the continuation of the previous value), and sees each
 * "[section]" line, so a section name inih would cut is an error and a repeated header opens a new section.
 */
static char *reader(char *str, int num, void *stream)
{
	struct parse_ctx *ctx = stream;
	const char *nl, *s;
	size_t len;

	if (ctx->p >= ctx->end || num < 4)
		return NULL;
	nl = memchr(ctx->p, '\n', (size_t)(ctx->end - ctx->p));
	len = nl ? (size_t)(nl - ctx->p) : (size_t)(ctx->end - ctx->p);
	s = ctx->p;
	ctx->p += len + (nl != NULL);
	ctx->line++;
	while (len > 0 && (*s == ' ' || *s == '\t'))
		s++, len--;
	if (len + 2 > (size_t)num) {
		record(ctx, -EINVAL, "%s:%d: line longer than %d characters", ctx->path, ctx->line, num - 2);
		snprintf(str, (size_t)num, "\n");
		return str;
	}
	memcpy(str, s, len);
	str[len] = '\n';
	str[len + 1] = '\0';
	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (close && close - s - 1 > SECTION_LEN - 1)
			record(ctx, -EINVAL, "%s:%d: section name longer than %d characters", ctx->path, ctx->line,
			       SECTION_LEN - 1);
		policy_set_section(ctx->set, ctx->path, ctx->line, "");
	}
	return str;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *ctx = user;
	char msg[sizeof(ctx->msg)];
	int r;

	if (ctx->err_line)
		return 0;
	r = policy_set_add(ctx->set, ctx->path, ctx->line, section, name, value, msg, sizeof(msg));
	if (r < 0) {
		record(ctx, r, "%s", msg);
		return 0;
	}
	return 1;
}

int policy_parse_buffer(struct policy_set *set, const char *path, const char *buf, size_t len, char *err,
			size_t errlen)
{
	struct parse_ctx ctx = {.set = set, .path = path, .p = buf, .end = buf + len};
	int line;

	if (memchr(buf, '\0', len)) {
		fmt_err(err, errlen, "%s: holds a NUL byte: not a text file", path);
		return -EINVAL;
	}
	policy_set_section(set, path, 0, "");
	line = ini_parse_stream(reader, &ctx, handler, &ctx);
	policy_set_section(set, path, 0, "");
	if (line < 0) {
		fmt_err(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	if (ctx.err_line && (line == 0 || ctx.err_line <= line)) {
		fmt_err(err, errlen, "%s", ctx.msg);
		return ctx.rc;
	}
	if (line > 0) {
		fmt_err(err, errlen, "%s:%d: syntax error (expected 'key = value' or '[section]')", path, line);
		return -EINVAL;
	}
	return 0;
}

static int load_one(struct policy_set *set, const struct dir *d, const char *name, uid_t owner, char *err,
		    size_t errlen)
{
	char path[POLICY_PATH_MAX];
	size_t dl = strlen(d->path), len = 0;
	char *buf = NULL;
	int r;

	while (dl > 1 && d->path[dl - 1] == '/')
		dl--;
	if ((size_t)snprintf(path, sizeof(path), "%.*s/%s", (int)dl, d->path, name) >= sizeof(path)) {
		fmt_err(err, errlen, "%s/%s: path longer than %d characters", d->path, name, POLICY_PATH_MAX - 1);
		return -ENAMETOOLONG;
	}
	r = read_policy(d, name, path, owner, &buf, &len, err, errlen);
	if (r < 0)
		return r;
	r = policy_parse_buffer(set, path, buf, len, err, errlen);
	free(buf);
	return r;
}

static bool dir_has(const struct dir *d, const char *name)
{
	return d->n > 0 && bsearch(name, d->names, d->n, sizeof(*d->names), cmp_name) != NULL;
}

int policy_load(const char *shipped_dir, const char *override_dir, uid_t owner, struct policy_set *out, char *err,
		size_t errlen)
{
	struct dir ship = {.path = shipped_dir, .fd = -1}, over = {.path = override_dir, .fd = -1};
	struct policy_set set;
	int r = 0;

	if (err && errlen)
		err[0] = '\0';
	policy_set_init(&set);
	if (shipped_dir && shipped_dir[0])
		r = open_dir(&ship, owner, false, err, errlen);
	if (r == 0 && override_dir && override_dir[0]) {
		r = open_dir(&over, owner, true, err, errlen);
		if (r == 1)
			r = 0;
	}
	/* Shipped files in name order, each replaced by an override of the same name; then overrides alone. */
	for (size_t i = 0; r == 0 && i < ship.n; i++) {
		if (dir_has(&over, ship.names[i]))
			r = load_one(&set, &over, ship.names[i], owner, err, errlen);
		else
			r = load_one(&set, &ship, ship.names[i], owner, err, errlen);
	}
	for (size_t i = 0; r == 0 && i < over.n; i++)
		if (!dir_has(&ship, over.names[i]))
			r = load_one(&set, &over, over.names[i], owner, err, errlen);
	if (r == 0)
		r = policy_set_validate(&set, policy_metric_known, NULL, err, errlen);
	close_dir(&ship);
	close_dir(&over);
	if (r < 0) {
		policy_set_free(&set);
		return r;
	}
	*out = set;
	return 0;
}

int policy_load_new(const char *shipped_dir, const char *override_dir, uid_t owner, struct policy_set **out,
		    char *err, size_t errlen)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	int r;

	if (!set) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = policy_load(shipped_dir, override_dir, owner, set, err, errlen);
	if (r < 0) {
		free(set);
		return r;
	}
	*out = set;
	return 0;
}
