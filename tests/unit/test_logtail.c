/*
 * Tests for logtail on real files in a temporary directory: start at the end, appends, partial lines, rename
 * rotation (with writes to the old file after the rename), copytruncate, a file that appears late, a deleted
 * file, the per-call byte bound and over-long lines.
 */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "observe/logtail.h"

#define MAX_LINES 64
#define BIG (1 << 20)

struct lines {
	size_t n;
	size_t len[MAX_LINES];
	char *text[MAX_LINES];
};

struct fixture {
	char dir[64];
	char path[128];
	char rotated[128];
	struct lines got;
};

static void collect(void *ctx, const char *line, size_t len)
{
	struct lines *l = ctx;

	assert_true(l->n < MAX_LINES);
	l->text[l->n] = malloc(len + 1);
	assert_non_null(l->text[l->n]);
	memcpy(l->text[l->n], line, len);
	l->text[l->n][len] = '\0';
	l->len[l->n] = len;
	l->n++;
}

static void lines_reset(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->text[i]);
	memset(l, 0, sizeof(*l));
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/logtail-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/access.log", f->dir);
	snprintf(f->rotated, sizeof(f->rotated), "%s/access.log.1", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	lines_reset(&f->got);
	unlink(f->path);
	unlink(f->rotated);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void write_fd(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);

		assert_true(w > 0);
		s += w;
		n -= (size_t)w;
	}
}

static void append_n(const char *path, const char *s, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	write_fd(fd, s, n);
	close(fd);
}

static void append(const char *path, const char *s)
{
	append_n(path, s, strlen(s));
}

/* Poll once with a large bound and expect RC, no backlog, and exactly the lines in the NULL-terminated list. */
static void expect_lines(struct logtail *t, struct fixture *f, int rc, ...)
{
	const char *want;
	size_t i = 0;
	bool more = true;
	va_list ap;

	lines_reset(&f->got);
	assert_int_equal(logtail_poll(t, BIG, collect, &f->got, &more), rc);
	assert_false(more);
	va_start(ap, rc);
	while ((want = va_arg(ap, const char *)) != NULL) {
		assert_true(i < f->got.n);
		assert_string_equal(f->got.text[i], want);
		i++;
	}
	va_end(ap);
	assert_int_equal(f->got.n, i);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_starts_at_end_and_follows_appends(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;

	append(f->path, "old 1\nold 2\n");
	assert_int_equal(logtail_open(f->path, &t), 0);
	expect_lines(t, f, 0, NULL);
	append(f->path, "new 1\nnew 2\n");
	expect_lines(t, f, 0, "new 1", "new 2", NULL);
	expect_lines(t, f, 0, NULL);
	append(f->path, "\n\nx\n");
	expect_lines(t, f, 0, "", "", "x", NULL);
	logtail_close(t);
}

static void test_partial_line_completed_later(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;

	append(f->path, "");
	assert_int_equal(logtail_open(f->path, &t), 0);
	append(f->path, "hel");
	expect_lines(t, f, 0, NULL);
	append(f->path, "lo\nwor");
	expect_lines(t, f, 0, "hello", NULL);
	append(f->path, "ld");
	expect_lines(t, f, 0, NULL);
	append(f->path, "\n");
	expect_lines(t, f, 0, "world", NULL);
	logtail_close(t);
}

static void test_rename_rotation_loses_nothing(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;
	int writer;

	append(f->path, "history\n");
	assert_int_equal(logtail_open(f->path, &t), 0);
	writer = open(f->path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(writer >= 0);
	write_fd(writer, "o1\n", 3);
	expect_lines(t, f, 0, "o1", NULL);

	/* The writer still holds the old file after the rename, as nginx does until it reopens. */
	write_fd(writer, "o2\n", 3);
	assert_int_equal(rename(f->path, f->rotated), 0);
	write_fd(writer, "o3\nunterminated", 15);
	append(f->path, "n1\n");
	expect_lines(t, f, 0, "o2", "o3", "unterminated", "n1", NULL);

	/* Now on the new file: later writes to the old one are not ours any more, new ones are. */
	write_fd(writer, "o4\n", 3);
	append(f->path, "n2\n");
	expect_lines(t, f, 0, "n2", NULL);
	close(writer);
	logtail_close(t);
}

/* An opener (the writer's OPEN_LOG, for an engine that may not read the log): each open is its, at the start and
 * after a rotation; its refusal is the poll's error. */
static int opens;
static int refuse;

static int counting_open(void *ctx, const char *path)
{
	int fd;

	(void)ctx;
	opens++;
	if (refuse)
		return -EPERM;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

static void test_opener(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;
	bool more;

	opens = refuse = 0;
	append(f->path, "history\n");
	assert_int_equal(logtail_open_with(f->path, counting_open, NULL, &t), 0);
	assert_int_equal(opens, 1);
	append(f->path, "a\n");
	expect_lines(t, f, 0, "a", NULL);
	assert_int_equal(rename(f->path, f->rotated), 0);
	append(f->path, "b\n");
	expect_lines(t, f, 0, "b", NULL);
	assert_int_equal(opens, 2);
	logtail_close(t);
	refuse = 1;
	assert_int_equal(logtail_open_with(f->path, counting_open, NULL, &t), -EPERM);
	/* Missing at the start (the opener's -ENOENT), then created while the opener refuses. */
	unlink(f->path);
	refuse = 0;
	assert_int_equal(logtail_open_with(f->path, counting_open, NULL, &t), 0);
	refuse = 1;
	append(f->path, "c\n");
	assert_int_equal(logtail_poll(t, 1 << 20, collect, &f->got, &more), -EPERM);
	logtail_close(t);
}

static void test_rename_then_create_waits_for_writer(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;
	int writer, fd;

	append(f->path, "");
	assert_int_equal(logtail_open(f->path, &t), 0);
	writer = open(f->path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(writer >= 0);
	/* logrotate `create`: rename, then an empty file at the path, and only later does nginx reopen. */
	assert_int_equal(rename(f->path, f->rotated), 0);
	fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	write_fd(writer, "o1\n", 3);
	expect_lines(t, f, 0, "o1", NULL);
	write_fd(writer, "o2\n", 3);
	expect_lines(t, f, 0, "o2", NULL);
	/* nginx reopened: its next lines go to the new file, and the last one it wrote to the old one still counts. */
	write_fd(writer, "o3\n", 3);
	close(writer);
	append(f->path, "n1\n");
	expect_lines(t, f, 0, "o3", "n1", NULL);
	logtail_close(t);
}

static void test_copytruncate_restarts_at_zero(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;

	append(f->path, "a long history line that makes the file bigger than what follows\n");
	assert_int_equal(logtail_open(f->path, &t), 0);
	append(f->path, "before\npartial");
	expect_lines(t, f, 0, "before", NULL);
	assert_int_equal(truncate(f->path, 0), 0);
	append(f->path, "after 1\nafter 2\n");
	/* The partial line belonged to the truncated content and is not glued to the new first line. */
	expect_lines(t, f, 0, "after 1", "after 2", NULL);
	append(f->path, "after 3\n");
	expect_lines(t, f, 0, "after 3", NULL);
	logtail_close(t);
}

/* Issue 22: truncated and written past our position again between two polls (460 of 1,300 lines were lost): the
 * bytes before our position are not the ones read there, so the file is read again from its start. */
static void test_truncate_refill_within_a_poll(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;
	char line[64];

	assert_int_equal(logtail_open(f->path, &t), 0);
	append(f->path, "10:00:01 GET /a 200\n10:00:02 GET /b 200\n");
	expect_lines(t, f, 0, "10:00:01 GET /a 200", "10:00:02 GET /b 200", NULL);
	assert_int_equal(truncate(f->path, 0), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(line, sizeof(line), "10:00:0%d GET /new/%d 200\n", 3 + i, i);
		append(f->path, line);
	}
	expect_lines(t, f, 0, "10:00:03 GET /new/0 200", "10:00:04 GET /new/1 200", "10:00:05 GET /new/2 200",
		     "10:00:06 GET /new/3 200", "10:00:07 GET /new/4 200", NULL);
	/* Appends after it are read from where it stands, once. */
	append(f->path, "10:00:08 GET /c 200\n");
	expect_lines(t, f, 0, "10:00:08 GET /c 200", NULL);
	logtail_close(t);
}

/* Opened at the end of a file that is then rewritten longer: the mark taken at open catches it too. */
static void test_refill_after_open_at_end(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;

	append(f->path, "10:00:01 old line\n");
	assert_int_equal(logtail_open(f->path, &t), 0);
	assert_int_equal(truncate(f->path, 0), 0);
	append(f->path, "10:00:02 new line one\n10:00:03 new line two\n");
	expect_lines(t, f, 0, "10:00:02 new line one", "10:00:03 new line two", NULL);
	logtail_close(t);
}

static void test_missing_then_created(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;

	assert_int_equal(logtail_open(f->path, &t), 0);
	expect_lines(t, f, -ENOENT, NULL);
	expect_lines(t, f, -ENOENT, NULL);
	/* A file that appears later is new: all of it is read. */
	append(f->path, "first\nsecond\n");
	expect_lines(t, f, 0, "first", "second", NULL);
	append(f->path, "third\n");
	expect_lines(t, f, 0, "third", NULL);
	logtail_close(t);
}

static void test_deleted_file(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;
	int fds;

	append(f->path, "history\n");
	fds = count_fds();
	assert_int_equal(logtail_open(f->path, &t), 0);
	assert_int_equal(count_fds(), fds + 1);
	append(f->path, "last\ncut");
	assert_int_equal(unlink(f->path), 0);
	/* What was written before the delete is delivered, then the descriptor is let go. */
	expect_lines(t, f, -ENOENT, "last", "cut", NULL);
	assert_int_equal(count_fds(), fds);
	expect_lines(t, f, -ENOENT, NULL);
	append(f->path, "reborn\n");
	expect_lines(t, f, 0, "reborn", NULL);
	logtail_close(t);
	assert_int_equal(count_fds(), fds);
}

static void test_max_bytes_bounds_each_poll(void **state)
{
	struct fixture *f = *state;
	struct logtail *t;
	char buf[32];
	bool more;
	int i, polls = 0;

	append(f->path, "");
	assert_int_equal(logtail_open(f->path, &t), 0);
	for (i = 0; i < 10; i++) {
		snprintf(buf, sizeof(buf), "line-%04d\n", i);
		append(f->path, buf);
	}
	/* 100 bytes in polls of 25: 2 lines, 3, 2, 3 (a line completes when its newline is read). */
	static const size_t per_poll[] = { 2, 3, 2, 3 };
	do {
		size_t before = f->got.n;

		assert_int_equal(logtail_poll(t, 25, collect, &f->got, &more), 0);
		assert_true(polls < 4);
		assert_int_equal(f->got.n - before, per_poll[polls]);
		polls++;
	} while (more);
	assert_int_equal(polls, 4);
	assert_int_equal(f->got.n, 10);
	for (i = 0; i < 10; i++) {
		snprintf(buf, sizeof(buf), "line-%04d", i);
		assert_string_equal(f->got.text[i], buf);
	}
	/* A bound that ends exactly at the end of the data leaves no backlog. */
	lines_reset(&f->got);
	append(f->path, "0123456789\n");
	assert_int_equal(logtail_poll(t, 11, collect, &f->got, &more), 0);
	assert_false(more);
	assert_int_equal(f->got.n, 1);
	assert_int_equal(logtail_poll(t, 0, collect, &f->got, &more), -EINVAL);
	logtail_close(t);
}

static void test_long_lines(void **state)
{
	static const struct {
		size_t len;	/* bytes of the long line */
		size_t bound;	/* max_bytes per poll */
		size_t want;	/* length delivered */
	} cases[] = {
		{ 100 * 1024, BIG, LOGTAIL_LINE_MAX },
		{ 100 * 1024, 4096, LOGTAIL_LINE_MAX },
		{ 100 * 1024, 7, LOGTAIL_LINE_MAX },
		{ LOGTAIL_LINE_MAX, BIG, LOGTAIL_LINE_MAX },
		{ LOGTAIL_LINE_MAX, 1000, LOGTAIL_LINE_MAX },
		{ LOGTAIL_LINE_MAX + 1, BIG, LOGTAIL_LINE_MAX },
		{ LOGTAIL_LINE_MAX + 1, 1000, LOGTAIL_LINE_MAX },
		{ LOGTAIL_LINE_MAX - 1, 1000, LOGTAIL_LINE_MAX - 1 },
	};
	struct fixture *f = *state;
	struct logtail *t;
	size_t i, j;
	char *big;
	bool more;

	big = malloc(100 * 1024 + 1);
	assert_non_null(big);
	for (j = 0; j < 100 * 1024; j++)
		big[j] = (char)('a' + j % 26);
	append(f->path, "");
	assert_int_equal(logtail_open(f->path, &t), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int polls = 0;

		lines_reset(&f->got);
		append(f->path, "before\n");
		append_n(f->path, big, cases[i].len);
		append(f->path, "\nafter\n");
		do {
			assert_int_equal(logtail_poll(t, cases[i].bound, collect, &f->got, &more), 0);
			assert_true(++polls < 100000);
		} while (more);
		assert_int_equal(f->got.n, 3);
		assert_string_equal(f->got.text[0], "before");
		assert_int_equal(f->got.len[1], cases[i].want);
		assert_memory_equal(f->got.text[1], big, cases[i].want);
		assert_string_equal(f->got.text[2], "after");
	}
	free(big);
	logtail_close(t);
}

static void test_errors(void **state)
{
	struct fixture *f = *state;
	struct logtail *t = (struct logtail *)&t;
	char path[160];
	bool more;

	assert_int_equal(logtail_open(NULL, &t), -EINVAL);
	assert_int_equal(logtail_open("", &t), -EINVAL);
	assert_int_equal(logtail_open(f->path, NULL), -EINVAL);
	/* Only a missing file is tolerated at open; a path through a regular file is not. */
	append(f->path, "x\n");
	snprintf(path, sizeof(path), "%s/sub", f->path);
	assert_int_equal(logtail_open(path, &t), -ENOTDIR);
	assert_null(t);
	assert_int_equal(logtail_poll(NULL, 10, collect, &f->got, &more), -EINVAL);
	logtail_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_starts_at_end_and_follows_appends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_line_completed_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_rotation_loses_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_opener, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_then_create_waits_for_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copytruncate_restarts_at_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncate_refill_within_a_poll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refill_after_open_at_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_then_created, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deleted_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes_bounds_each_poll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
