/*
 * wsocket: the writer takes the engine's two channels from one process of the engine's uid only; the engine talks
 * only to a listener of root's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "priv/wsocket.h"
#include "testskip.h"

static char path[64];

/* A listener at PATH (made /tmp/ngxat-wsocket.PID when empty). */
static int listener(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/ngxat-wsocket.%d", (int)getpid());
	unlink(path);
	strcpy(sa.sun_path, path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	return fd;
}

/* A process that connects once (as UID when not -1) and waits to be closed. */
static pid_t connect_from(uid_t uid)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		char b;

		if (uid != (uid_t)-1 && setuid(uid) < 0)
			_exit(3);
		strcpy(sa.sun_path, path);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(2);
		(void)!read(fd, &b, 1);
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
}

static void test_one_engine(void **state)
{
	int l = listener(), fd = -1, rfd = -1, efd, erfd;
	char err[256];

	(void)state;
	/* The engine's two connections, in order. */
	assert_int_equal(wsocket_connect(path, &efd, &erfd, err, sizeof(err)), 0); /* the listener is ours: root's? */
	assert_int_equal(wsocket_accept(l, geteuid(), 1000, &fd, &rfd, err, sizeof(err)), 0);
	close(fd);
	close(rfd);
	close(efd);
	close(erfd);
	/* Nobody connects: -ETIMEDOUT (the writer ends, 0: nothing to serve). */
	assert_int_equal(wsocket_accept(l, geteuid(), 100, &fd, &rfd, err, sizeof(err)), -ETIMEDOUT);
	close(l);
	unlink(path);
	path[0] = '\0';
}

static void test_two_processes(void **state)
{
	int l = listener(), fd = -1, rfd = -1;
	pid_t a, b;
	char err[256];

	(void)state;
	a = connect_from((uid_t)-1);
	usleep(50 * 1000);
	b = connect_from((uid_t)-1);
	assert_int_equal(wsocket_accept(l, geteuid(), 2000, &fd, &rfd, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "came from two processes"));
	reap(a);
	reap(b);
	close(l);
	unlink(path);
	path[0] = '\0';
}

static void test_other_uid_refused(void **state)
{
	int l, fd = -1, rfd = -1, efd, erfd;
	pid_t other;
	char err[256];

	(void)state;
	if (geteuid() != 0)
		testskip("a connection of another uid needs root to make");
	l = listener();
	other = connect_from(65534); /* nobody: refused and closed, its process ends */
	usleep(50 * 1000);
	assert_int_equal(wsocket_connect(path, &efd, &erfd, err, sizeof(err)), 0);
	assert_int_equal(wsocket_accept(l, 0, 2000, &fd, &rfd, err, sizeof(err)), 0);
	reap(other);
	close(fd);
	close(rfd);
	close(efd);
	close(erfd);
	/* The engine's side: a listener that is not root's is refused. */
	close(l);
	unlink(path);
	snprintf(path, sizeof(path), "/tmp/ngxat-wsocket-nobody.%d", (int)getpid());
	{
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			int ll;

			if (setuid(65534) < 0)
				_exit(3);
			ll = listener();
			pause();
			close(ll);
			_exit(0);
		}
		for (int i = 0; i < 100 && access(path, F_OK) < 0; i++)
			usleep(10 * 1000);
		assert_int_equal(wsocket_connect(path, &efd, &erfd, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "is not root's (its listener is uid 65534's)"));
		kill(pid, SIGKILL);
		reap(pid);
		unlink(path);
		path[0] = '\0';
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_engine),
		cmocka_unit_test(test_two_processes),
		cmocka_unit_test(test_other_uid_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
