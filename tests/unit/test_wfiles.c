/*
 * wfiles_open: what the writer opens for an engine that may not (OPEN_LOG): only the files the configuration names,
 * through directories no one but root may change, never through a link at the name, only a file or a FIFO.
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

#include "config.h"
#include "priv/wfiles.h"
#include "testskip.h"

static char dir[64];
static struct config cfg;

static void at(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void put(const char *name, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	at(p, sizeof(p), name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ngxat-wfiles.XXXXXX");
	assert_non_null(mkdtemp(dir));
	config_default(&cfg);
	at(cfg.access_log, sizeof(cfg.access_log), "logs/access.log");
	at(cfg.error_log, sizeof(cfg.error_log), "logs/error.log");
	at(cfg.api_token_file, sizeof(cfg.api_token_file), "api.tokens");
	at(cfg.socket_path, sizeof(cfg.socket_path), "x"); /* unused */
	{
		char p[PATH_MAX];

		at(p, sizeof(p), "logs");
		assert_int_equal(mkdir(p, 0755), 0);
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* The file at NAME, opened by wfiles_open, read: its text into OUT. */
static int opened(const char *name, char *out, size_t outlen, char *why, size_t whylen)
{
	char p[PATH_MAX];
	ssize_t n;
	int fd = -1, r;

	at(p, sizeof(p), name);
	r = wfiles_open(&cfg, p, &fd, why, whylen);
	if (r < 0) {
		assert_int_equal(fd, -1);
		return r;
	}
	n = read(fd, out, outlen - 1);
	assert_true(n >= 0);
	out[n] = '\0';
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	return 0;
}

static void test_named_only(void **state)
{
	char got[64], why[512];

	(void)state;
	put("logs/access.log", "GET / 200\n");
	put("logs/error.log", "[warn] x\n");
	put("logs/other.log", "secret\n");
	put("api.tokens", "ops:s3cret\n");
	assert_int_equal(opened("logs/access.log", got, sizeof(got), why, sizeof(why)), 0);
	assert_string_equal(got, "GET / 200\n");
	assert_int_equal(opened("logs/error.log", got, sizeof(got), why, sizeof(why)), 0);
	assert_string_equal(got, "[warn] x\n");
	/* Anything else the engine asks: refused, and not echoed (the writer logs WHY). */
	assert_int_equal(opened("logs/other.log", got, sizeof(got), why, sizeof(why)), -EPERM);
	assert_null(strstr(why, "other.log"));
	assert_non_null(strstr(why, "not a file the configuration names"));
	assert_int_equal(wfiles_open(&cfg, "/etc/shadow", &(int){-1}, why, sizeof(why)), -EPERM);
	assert_int_equal(wfiles_open(&cfg, "", &(int){-1}, why, sizeof(why)), -EPERM);
	/* The token file only with a TCP listener, for which it exists. */
	assert_int_equal(opened("api.tokens", got, sizeof(got), why, sizeof(why)), -EPERM);
	strcpy(cfg.api_listen, "127.0.0.1:9180");
	assert_int_equal(opened("api.tokens", got, sizeof(got), why, sizeof(why)), 0);
	assert_string_equal(got, "ops:s3cret\n");
	cfg.api_listen[0] = '\0';
	/* An empty path named by the configuration (access_log = ) opens nothing. */
	cfg.access_log[0] = '\0';
	assert_int_equal(wfiles_open(&cfg, "", &(int){-1}, why, sizeof(why)), -EPERM);
}

static void test_links_and_kinds(void **state)
{
	char got[64], why[512], p[PATH_MAX], target[PATH_MAX];

	(void)state;
	/* A link at the name (in a directory of root's): not followed. */
	put("secret", "root only\n");
	at(target, sizeof(target), "secret");
	at(p, sizeof(p), "logs/access.log");
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(opened("logs/access.log", got, sizeof(got), why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "a link: refused"));
	/* A directory at the name: not a file. */
	at(p, sizeof(p), "logs/error.log");
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(opened("logs/error.log", got, sizeof(got), why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not a file"));
	assert_int_equal(rmdir(p), 0);
	/* Missing: -ENOENT (the probe's "not there yet"). */
	assert_int_equal(opened("logs/error.log", got, sizeof(got), why, sizeof(why)), -ENOENT);
	/* A FIFO: opened without waiting for a writer. */
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(opened("logs/error.log", got, sizeof(got), why, sizeof(why)), 0);
}

static void test_directories(void **state)
{
	char got[64], why[512], p[PATH_MAX];

	(void)state;
	put("logs/access.log", "GET / 200\n");
	/* A directory others may write: someone else could put a link or another file there. */
	at(p, sizeof(p), "logs");
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(opened("logs/access.log", got, sizeof(got), why, sizeof(why)), -EPERM);
	assert_int_equal(chmod(p, 0755), 0);
	if (geteuid() != 0)
		testskip("a directory of another user's needs root to make");
	assert_int_equal(chown(p, 1, 1), 0);
	assert_int_equal(opened("logs/access.log", got, sizeof(got), why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "is owned by uid 1, not root"));
	/* Root's with the sticky bit, as /tmp: no one else renames root's entries, but anyone may make a missing one
	 * (a log nginx has not opened yet): refused too. Root's and closed again: opened. */
	assert_int_equal(chown(p, 0, 0), 0);
	assert_int_equal(chmod(p, 01777), 0);
	assert_int_equal(opened("logs/access.log", got, sizeof(got), why, sizeof(why)), -EPERM);
	assert_int_equal(chmod(p, 0755), 0);
	assert_int_equal(opened("logs/access.log", got, sizeof(got), why, sizeof(why)), 0);
	assert_string_equal(got, "GET / 200\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_named_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_links_and_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directories, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
