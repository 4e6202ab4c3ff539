/*
 * originals: see originals.h.
 */
#include "build-config.h"

#include "store/originals.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Sync the directory of PATH: a file just created is there after a power cut too. */
static void sync_dir_of(const char *path)
{
	char dir[600];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int originals_note(const char *path, const char *knob, const char *original)
{
	char line[ORIGINALS_KNOB_MAX + ORIGINALS_VALUE_MAX + 2];
	struct stat sb;
	bool created;
	int fd, n, r = 0;

	if (!knob[0] || strpbrk(knob, " \t\r\n") || strpbrk(original, "\r\n"))
		return -EINVAL;
	n = snprintf(line, sizeof(line), "%s %s\n", knob, original);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -EINVAL;
	created = stat(path, &sb) < 0;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, line, (size_t)n) != n)
		r = errno ? -errno : -EIO;
	else if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && created)
		sync_dir_of(path);
	return r;
}

struct compact {
	char (*names)[ORIGINALS_KNOB_MAX];
	unsigned *count; /* lines of each name: in the first pass, counted; in the second, counted down */
	size_t n;
	unsigned keep;
	FILE *out;
	int kept;
};

static long name_index(struct compact *c, const char *knob)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->names[i], knob) == 0)
			return (long)i;
	return -1;
}

static int count_line(void *ctx, const char *knob, const char *value)
{
	struct compact *c = ctx;
	long i = name_index(c, knob);

	(void)value;
	if (i < 0) {
		if (c->n == ORIGINALS_COMPACT_KNOBS)
			return -E2BIG;
		i = (long)c->n++;
		snprintf(c->names[i], sizeof(c->names[i]), "%s", knob);
		c->count[i] = 0;
	}
	c->count[i]++;
	return 0;
}

/* A line kept when it is among its knob's last KEEP. */
static int copy_line(void *ctx, const char *knob, const char *value)
{
	struct compact *c = ctx;
	long i = name_index(c, knob);

	if (i < 0)
		return -EIO; /* the file changed between the passes */
	if (c->count[i]-- > c->keep)
		return 0;
	if (fprintf(c->out, "%s %s\n", knob, value) < 0)
		return -EIO;
	c->kept++;
	return 0;
}

int originals_compact(const char *path, unsigned keep, char *err, size_t errlen)
{
	struct compact c = {.keep = keep};
	char tmp[4200];
	int r, fd;

	if (keep == 0 || (size_t)snprintf(tmp, sizeof(tmp), "%s.compact", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: cannot be compacted so", path);
		return -EINVAL;
	}
	c.names = calloc(ORIGINALS_COMPACT_KNOBS, sizeof(*c.names));
	c.count = calloc(ORIGINALS_COMPACT_KNOBS, sizeof(*c.count));
	if (!c.names || !c.count) {
		r = -ENOMEM;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		goto out;
	}
	r = originals_read(path, count_line, &c, err, errlen);
	if (r == -E2BIG)
		snprintf(err, errlen, "%s: more than %d knobs", path, ORIGINALS_COMPACT_KNOBS);
	if (r < 0)
		goto out;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !(c.out = fdopen(fd, "w"))) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s: %s", tmp, strerror(-r));
		goto out;
	}
	r = originals_read(path, copy_line, &c, err, errlen);
	if (r == 0 && (fflush(c.out) != 0 || fsync(fileno(c.out)) < 0))
		r = -errno;
	if (fclose(c.out) != 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s: %s", path, strerror(-r));
		unlink(tmp);
		goto out;
	}
	sync_dir_of(path);
	r = c.kept;
out:
	free(c.names);
	free(c.count);
	return r;
}

/* A damaged line of the originals file into ERR (at OFF), its start shown with anything unprintable as '?'. */
static void note_damaged(char *err, size_t errlen, size_t *off, const char *path, int lineno, const char *line,
			 size_t len)
{
	char shown[48];
	size_t n = 0;

	for (size_t i = 0; i < len && n < sizeof(shown) - 1; i++)
		shown[n++] = line[i] >= ' ' && line[i] < 0x7f ? line[i] : '?';
	shown[n] = '\0';
	if (*off < errlen)
		*off += (size_t)snprintf(err + *off, errlen - *off, "%s%s:%d: not 'KNOB VALUE': '%s%s'",
					 *off ? "; " : "", path, lineno, shown, len > n ? "..." : "");
}

int originals_read(const char *path, originals_cb cb, void *ctx, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t cap = 0, off = 0;
	ssize_t len;
	int lineno = 0, r = 0, damaged = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (errlen)
		err[0] = '\0';
	/* Every good line is used, also after a damaged one: one bad line may not keep the others' knobs changed. */
	while (r == 0 && (len = getline(&buf, &cap, f)) >= 0) {
		bool nul = memchr(buf, '\0', (size_t)len) != NULL;
		size_t body = (size_t)len - (buf[len - 1] == '\n');
		char *sp = NULL;

		lineno++;
		/* A line cut by a crash mid-write was never synced: its knob was not written either. */
		if (buf[len - 1] != '\n' && !nul)
			break;
		if (!nul) {
			buf[len - 1] = '\0';
			sp = strchr(buf, ' ');
		}
		if (nul || !sp || sp == buf || (size_t)(sp - buf) >= ORIGINALS_KNOB_MAX || strlen(sp + 1) >= ORIGINALS_VALUE_MAX) {
			note_damaged(err, errlen, &off, path, lineno, buf, body);
			damaged++;
			continue;
		}
		*sp = '\0';
		r = cb(ctx, buf, sp + 1);
	}
	free(buf);
	fclose(f);
	return r == 0 && damaged ? -EBADMSG : r;
}

