/*
 * wsocket: see wsocket.h.
 */
#include "build-config.h"

#include "priv/wsocket.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One connection of ENGINE_UID's from LISTEN_FD before DEADLINE: its descriptor with its peer in *CRED, or -errno. */
static int accept_one(int listen_fd, uid_t engine_uid, int64_t deadline, struct ucred *cred)
{
	for (;;) {
		struct pollfd p = {.fd = listen_fd, .events = POLLIN};
		int64_t left = deadline - mono_ms();
		socklen_t len = sizeof(*cred);
		int fd, r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED)
				continue;
			return -errno;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) < 0) {
			r = -errno;
			close(fd);
			return r;
		}
		if (cred->uid == engine_uid)
			return fd;
		log_warn("writer: refused a connection of uid %d (pid %d): only the engine's user, uid %d, is served",
			 (int)cred->uid, (int)cred->pid, (int)engine_uid);
		close(fd);
	}
}

int wsocket_accept(int listen_fd, uid_t engine_uid, int timeout_ms, int *fd, int *rfd, char *err, size_t errlen)
{
	int64_t deadline = mono_ms() + timeout_ms;
	struct ucred first, second;
	int a, b;

	a = accept_one(listen_fd, engine_uid, deadline, &first);
	if (a < 0) {
		snprintf(err, errlen, "no engine of uid %d connected: %s", (int)engine_uid, strerror(-a));
		return a;
	}
	b = accept_one(listen_fd, engine_uid, deadline, &second);
	if (b < 0) {
		snprintf(err, errlen, "the engine (pid %d) connected no read channel: %s", (int)first.pid, strerror(-b));
		close(a);
		return b == -ETIMEDOUT ? -EPROTO : b;
	}
	if (second.pid != first.pid) {
		snprintf(err, errlen, "the engine's two channels came from two processes (pids %d and %d): neither is served",
			 (int)first.pid, (int)second.pid);
		close(a);
		close(b);
		return -EPERM;
	}
	*fd = a;
	*rfd = b;
	return 0;
}

/* A connection to PATH whose listener is root's. */
static int connect_one(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "[agent] writer_socket %s: the path is too long for a socket", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "[agent] writer_socket %s: %s", path, strerror(-r));
		return r;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot reach the writer at %s: %s (is ngx-autotune-writer.socket started?)", path,
			 strerror(-r));
		close(fd);
		return r;
	}
	/* The engine tells the writer what to set: never a process that is not root's. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		r = -errno;
		snprintf(err, errlen, "the writer's socket %s: its peer: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	if (cred.uid != 0) {
		snprintf(err, errlen, "the writer's socket %s is not root's (its listener is uid %d's): refused", path,
			 (int)cred.uid);
		close(fd);
		return -EPERM;
	}
	return fd;
}

int wsocket_connect(const char *path, int *fd, int *rfd, char *err, size_t errlen)
{
	int a = connect_one(path, err, errlen), b;

	if (a < 0)
		return a;
	b = connect_one(path, err, errlen);
	if (b < 0) {
		close(a);
		return b;
	}
	*fd = a;
	*rfd = b;
	return 0;
}
