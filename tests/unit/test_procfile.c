/*
 * Tests for procfile: regular files (a fake root) are opened for each read, so a file replaced by rename or
 * rewritten is seen; real procfs files are kept open and a pread from 0 gives fresh text; a kept file whose
 * process died is reopened (and then fails as a fresh open does); a new path closes the old descriptor; size
 * bounds and bad arguments.
 */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "observe/procfile.h"
#include "testskip.h"

struct fixture {
	char dir[64];
	char path[128];
	char tmp[128];
	struct procfile f;
	struct procbuf b;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/procfile-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/netstat", f->dir);
	snprintf(f->tmp, sizeof(f->tmp), "%s/netstat.tmp", f->dir);
	procfile_init(&f->f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	procfile_close(&f->f);
	procbuf_free(&f->b);
	unlink(f->path);
	unlink(f->tmp);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void put_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

/* As the system tests' fake root does it: write a temporary file and rename it over the old one. */
static void replace_by_rename(struct fixture *f, const char *text)
{
	put_file(f->tmp, text);
	assert_int_equal(rename(f->tmp, f->path), 0);
}

static void test_regular_file_replaced_by_rename(void **state)
{
	struct fixture *f = *state;

	replace_by_rename(f, "TcpExt: ListenOverflows\nTcpExt: 1\n");
	assert_int_equal(procfile_read(&f->f, f->path, true, &f->b, 1 << 20), 0);
	assert_string_equal(f->b.data, "TcpExt: ListenOverflows\nTcpExt: 1\n");
	assert_int_equal(f->b.len, strlen(f->b.data));
	/* Not procfs: nothing is kept, so the next read opens the path again. */
	assert_false(procfile_is_kept(&f->f));

	replace_by_rename(f, "TcpExt: ListenOverflows\nTcpExt: 22\n");
	assert_int_equal(procfile_read(&f->f, f->path, true, &f->b, 1 << 20), 0);
	assert_string_equal(f->b.data, "TcpExt: ListenOverflows\nTcpExt: 22\n");

	/* Rewritten in place, shorter: no stale tail. */
	put_file(f->path, "x\n");
	assert_int_equal(procfile_read(&f->f, f->path, true, &f->b, 1 << 20), 0);
	assert_string_equal(f->b.data, "x\n");
	assert_int_equal(f->b.len, 2);

	/* Gone: the error of a fresh open. */
	assert_int_equal(unlink(f->path), 0);
	assert_int_equal(procfile_read(&f->f, f->path, true, &f->b, 1 << 20), -ENOENT);

	/* Empty file: an empty text, not an error. */
	put_file(f->path, "");
	assert_int_equal(procfile_read(&f->f, f->path, true, &f->b, 1 << 20), 0);
	assert_int_equal(f->b.len, 0);
	assert_string_equal(f->b.data, "");
}

static void test_size_bound(void **state)
{
	struct fixture *f = *state;
	size_t n = 100000;
	char *big = malloc(n + 1);

	assert_non_null(big);
	memset(big, 'a', n);
	big[n] = '\0';
	put_file(f->path, big);
	assert_int_equal(procfile_read(&f->f, f->path, true, &f->b, n - 1), -E2BIG);
	assert_int_equal(procfile_read(&f->f, f->path, true, &f->b, n), 0);
	assert_int_equal(f->b.len, n);
	assert_memory_equal(f->b.data, big, n);
	free(big);
}

static uint64_t schedstat_run_ns(const char *text)
{
	uint64_t v = 0;

	assert_int_equal(sscanf(text, "%" SCNu64, &v), 1);
	return v;
}

static void burn_cpu_ms(long ms)
{
	struct timespec t0, t;
	volatile uint64_t x = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x = x + (uint64_t)i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static void test_procfs_kept_and_fresh(void **state)
{
	struct fixture *f = *state;
	uint64_t a, b;
	int fd;

	if (access("/proc/thread-self/schedstat", R_OK) != 0)
		testskip("no /proc/thread-self/schedstat (a kernel without CONFIG_SCHED_INFO)");
	assert_int_equal(procfile_read(&f->f, "/proc/thread-self/schedstat", true, &f->b, 4096), 0);
	assert_true(procfile_is_kept(&f->f));
	fd = f->f.fd;
	a = schedstat_run_ns(f->b.data);
	burn_cpu_ms(20);
	/* Same descriptor, new text: the kernel formats it again on a read from offset 0. */
	assert_int_equal(procfile_read(&f->f, "/proc/thread-self/schedstat", true, &f->b, 4096), 0);
	assert_int_equal(f->f.fd, fd);
	b = schedstat_run_ns(f->b.data);
	assert_true(b >= a + 10 * 1000000ull);

	/* keep = false: read and closed. */
	assert_int_equal(procfile_read(&f->f, "/proc/self/stat", false, &f->b, 4096), 0);
	assert_false(procfile_is_kept(&f->f));
	assert_int_equal(f->f.fd, -1);
	assert_true(f->b.len > 0);
}

static void test_new_path_closes_old(void **state)
{
	struct fixture *f = *state;
	char path[64];
	int fd;

	assert_int_equal(procfile_read(&f->f, "/proc/self/stat", true, &f->b, 4096), 0);
	assert_true(procfile_is_kept(&f->f));
	fd = f->f.fd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(procfile_read(&f->f, "/proc/self/statm", true, &f->b, 4096), 0);
	assert_true(procfile_is_kept(&f->f));
	assert_string_equal(f->f.path, "/proc/self/statm");
	/* The old descriptor was closed before the new one was opened, so it was reused; the text is statm's (7
	 * numbers on one line), not stat's (which has the command in parentheses). */
	assert_int_equal(f->f.fd, fd);
	assert_null(strchr(f->b.data, '('));
	procfile_close(&f->f);
	assert_int_equal(f->f.fd, -1);
	assert_false(procfile_is_kept(&f->f));
	procfile_close(&f->f); /* twice is fine */
}

/* A kept file of a process that exits: the read fails as a fresh open would, and nothing stays open. */
static void test_dead_process(void **state)
{
	struct fixture *f = *state;
	static const char *const files[] = {"schedstat", "status", "stat"};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[64];
		pid_t pid = fork();
		int st, r;

		assert_true(pid >= 0);
		if (pid == 0) {
			pause();
			_exit(0);
		}
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, files[i]);
		assert_int_equal(procfile_read(&f->f, path, true, &f->b, 1 << 20), 0);
		assert_true(f->b.len > 0);
		assert_true(procfile_is_kept(&f->f));
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		r = procfile_read(&f->f, path, true, &f->b, 1 << 20);
		assert_true(r == -ENOENT || r == -ESRCH);
		assert_false(procfile_is_kept(&f->f));
		assert_int_equal(f->f.fd, -1);
	}
}

/* A dead parent's children file reads empty on a kept descriptor; the reopen turns that into ENOENT. */
static void test_dead_parent_children(void **state)
{
	struct fixture *f = *state;
	char path[96];
	long grandchild = 0;
	pid_t pid;
	int st, r;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (fork() == 0) {
			sleep(10); /* bounded, in case the test dies before it kills this one */
			_exit(0);
		}
		pause();
		_exit(0);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (access(path, R_OK) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		testskip("no /proc/PID/task/TID/children (a kernel without CONFIG_PROC_CHILDREN)");
	}
	/* Wait (bounded) for the grandchild to show. */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(procfile_read(&f->f, path, true, &f->b, 4096), 0);
		if (f->b.len > 0)
			break;
		usleep(10000);
	}
	assert_true(f->b.len > 0);
	grandchild = strtol(f->b.data, NULL, 10);
	assert_true(grandchild > 0);
	assert_true(procfile_is_kept(&f->f));
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r = procfile_read(&f->f, path, true, &f->b, 4096);
	kill((pid_t)grandchild, SIGKILL);
	assert_true(r == -ENOENT || r == -ESRCH);
	assert_false(procfile_is_kept(&f->f));
}

static void test_sysfs_kept(void **state)
{
	struct fixture *f = *state;
	char path[96] = "";
	struct dirent *de;
	DIR *d = opendir("/sys/kernel/irq");

	while (d && !path[0] && (de = readdir(d)))
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			snprintf(path, sizeof(path), "/sys/kernel/irq/%.32s/per_cpu_count", de->d_name);
	if (d)
		closedir(d);
	if (!path[0] || access(path, R_OK) != 0)
		testskip("no readable /sys/kernel/irq/N/per_cpu_count (a kernel without CONFIG_SPARSE_IRQ)");
	assert_int_equal(procfile_read(&f->f, path, true, &f->b, 1 << 16), 0);
	assert_true(procfile_is_kept(&f->f));
	assert_true(f->b.len > 0);
	assert_int_equal(procfile_read(&f->f, path, true, &f->b, 1 << 16), 0);
	assert_true(procfile_is_kept(&f->f));
}

static void test_errors(void **state)
{
	struct fixture *f = *state;
	char longpath[8192];

	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(procfile_read(&f->f, longpath, true, &f->b, 4096), -ENAMETOOLONG);
	assert_int_equal(procfile_read(&f->f, "/nonexistent/ngxat", true, &f->b, 4096), -ENOENT);
	assert_int_equal(procfile_read(&f->f, f->dir, true, &f->b, 4096), -EISDIR);
	assert_int_equal(f->f.fd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_regular_file_replaced_by_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procfs_kept_and_fresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_path_closes_old, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_parent_children, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sysfs_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
