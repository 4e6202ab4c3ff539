/*
 * trust_walk (issue 22, R3): every component from / is checked, links are followed only when trusted and allowed,
 * and the descriptor it returns is what was checked, whatever is swapped afterwards.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "testskip.h"
#include "trust.h"

static char dir[64];

static void path_of(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void put(const char *name, const char *text, mode_t mode)
{
	char p[PATH_MAX];
	FILE *f;

	path_of(p, sizeof(p), name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
}

static int walk(const char *name, int flags, int *fd, char *err, size_t len)
{
	char p[PATH_MAX];

	path_of(p, sizeof(p), name);
	return trust_walk(p, geteuid(), flags, "a test", fd, err, len);
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ngxat-walk-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A tree of the walker's own (under /tmp: a sticky directory others may write is passed through). */
static void test_plain(void **state)
{
	char err[512], p[PATH_MAX];
	int fd = -1;

	(void)state;
	assert_int_equal(mkdir(strcat(strcpy(p, dir), "/d"), 0755), 0);
	put("d/f", "one\n", 0644);
	assert_int_equal(walk("d/f", 0, &fd, err, sizeof(err)), 0);
	assert_true(fd >= 0);
	close(fd);
	/* "." and ".." on the way, a doubled slash. */
	assert_int_equal(walk("d/./..//d/f", 0, NULL, err, sizeof(err)), 0);
	/* Absent: refused unless allowed. */
	assert_int_equal(walk("d/none", 0, NULL, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/d/none: No such file or directory: refused (a test)"));
	assert_int_equal(walk("d/none", TRUST_MAY_BE_ABSENT, NULL, err, sizeof(err)), 1);
	/* A directory on the way absent too (an include_dir before ngxctl setup, under a directory not made yet). */
	assert_int_equal(walk("d/none/deeper", TRUST_MAY_BE_ABSENT, NULL, err, sizeof(err)), 1);
	assert_int_equal(walk("d/none/deeper", 0, NULL, err, sizeof(err)), -ENOENT);
	/* A file where a directory should be. */
	assert_int_equal(walk("d/f/x", 0, NULL, err, sizeof(err)), -ENOTDIR);
	/* The final object writable by others, a directory on the way writable without the sticky bit. */
	put("d/g", "two\n", 0666);
	assert_int_equal(walk("d/g", 0, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "/d/g is writable by group or others (mode 0666)"));
	path_of(p, sizeof(p), "d");
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(walk("d/f", 0, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "/d is writable by group or others (mode 0777)"));
	assert_int_equal(chmod(p, 01777), 0);
	assert_int_equal(walk("d/f", 0, NULL, err, sizeof(err)), 0);
}

/* Links: the final one only with TRUST_FOLLOW; relative and absolute targets; a loop ends. */
static void test_links(void **state)
{
	char err[512], p[PATH_MAX], q[PATH_MAX];

	(void)state;
	assert_int_equal(mkdir(strcat(strcpy(p, dir), "/bin"), 0755), 0);
	put("bin/prog", "#!/bin/sh\n", 0755);
	path_of(p, sizeof(p), "prog-rel");
	assert_int_equal(symlink("bin/../bin/prog", p), 0);
	path_of(q, sizeof(q), "bin/prog");
	path_of(p, sizeof(p), "prog-abs");
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(walk("prog-rel", 0, NULL, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "prog-rel is a symbolic link (name the file itself)"));
	assert_int_equal(walk("prog-rel", TRUST_FOLLOW, NULL, err, sizeof(err)), 0);
	assert_int_equal(walk("prog-abs", TRUST_FOLLOW, NULL, err, sizeof(err)), 0);
	/* A link on the way (a directory's) is followed when trusted, whatever the flags. */
	path_of(p, sizeof(p), "bindir");
	assert_int_equal(symlink("bin", p), 0);
	assert_int_equal(walk("bindir/prog", 0, NULL, err, sizeof(err)), 0);
	/* A loop. */
	path_of(p, sizeof(p), "loop-a");
	assert_int_equal(symlink("loop-b", p), 0);
	path_of(p, sizeof(p), "loop-b");
	assert_int_equal(symlink("loop-a", p), 0);
	assert_int_equal(walk("loop-a", TRUST_FOLLOW, NULL, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "more than 40 links"));
}

/* The descriptor is the file that was checked: a link swapped after the walk does not change what it names. */
static void test_swap(void **state)
{
	char err[512], p[PATH_MAX], q[PATH_MAX], buf[16] = {0};
	int fd = -1, rd;

	(void)state;
	put("good", "good\n", 0644);
	put("evil", "evil\n", 0644);
	path_of(p, sizeof(p), "cur");
	assert_int_equal(symlink("good", p), 0);
	assert_int_equal(walk("cur", TRUST_FOLLOW, &fd, err, sizeof(err)), 0);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink("evil", p), 0);
	snprintf(q, sizeof(q), "/proc/self/fd/%d", fd);
	rd = open(q, O_RDONLY | O_CLOEXEC);
	assert_true(rd >= 0);
	assert_true(read(rd, buf, sizeof(buf) - 1) > 0);
	assert_string_equal(buf, "good\n");
	close(rd);
	close(fd);
}

/* Someone else's: a directory on the way, the link itself (root only: chown). */
static void test_owners(void **state)
{
	char err[512], p[PATH_MAX];

	(void)state;
	if (geteuid() != 0)
		testskip("chown to another user needs root");
	assert_int_equal(mkdir(strcat(strcpy(p, dir), "/u"), 0755), 0);
	put("u/nginx", "#!/bin/sh\n", 0755);
	path_of(p, sizeof(p), "u");
	assert_int_equal(chown(p, 65534, 65534), 0);
	assert_int_equal(walk("u/nginx", 0, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "/u is owned by uid 65534, not root: refused (a test)"));
	assert_int_equal(chown(p, 0, 0), 0);
	path_of(p, sizeof(p), "u/link");
	assert_int_equal(symlink("nginx", p), 0);
	assert_int_equal(lchown(p, 65534, 65534), 0);
	assert_int_equal(walk("u/link", TRUST_FOLLOW, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "/u/link is a link owned by uid 65534, not root"));
	/* A sticky directory's entry of someone else's is still someone else's. */
	path_of(p, sizeof(p), "u");
	assert_int_equal(chmod(p, 01777), 0);
	path_of(p, sizeof(p), "u/nginx");
	assert_int_equal(chown(p, 65534, 65534), 0);
	assert_int_equal(walk("u/nginx", 0, NULL, err, sizeof(err)), -EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_swap),
		cmocka_unit_test(test_owners),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
