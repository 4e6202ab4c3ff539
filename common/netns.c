/*
 * netns: a short visit of the calling thread to another network namespace. See netns.h.
 */
#define _GNU_SOURCE

#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

int netns_enter(int target, int *saved)
{
	struct stat a, b;
	int self, e;

	*saved = -1;
	/* thread-self, not self: setns() moves only the calling thread, and that is the one to bring back. */
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	if (fstat(target, &a) < 0 || fstat(self, &b) < 0) {
		e = errno;
		close(self);
		return -e;
	}
	if (a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		close(self);
		return 1;
	}
	if (setns(target, CLONE_NEWNET) < 0) {
		e = errno;
		close(self);
		return -e;
	}
	*saved = self;
	return 0;
}

int netns_leave(int saved)
{
	int r = 0;

	if (saved < 0)
		return 0;
	if (setns(saved, CLONE_NEWNET) < 0)
		r = -errno;
	close(saved);
	return r;
}

int netns_open_pid(pid_t pid)
{
	char path[64];
	int fd;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* The socket itself, in the thread's namespace of the moment: made as OWNER, a netlink one bound. */
static int make_socket(int domain, int type, int protocol, uid_t owner, const char **what)
{
	int fd, e;

	/* Its owner (what a firewall's owner match and a uid routing rule see) is the file-system uid of its maker. */
	if (owner != (uid_t)-1)
		setfsuid(owner);
	fd = socket(domain, type | SOCK_CLOEXEC, protocol);
	if (owner != (uid_t)-1) {
		e = errno;
		setfsuid(geteuid());
		errno = e;
	}
	if (fd < 0) {
		*what = "socket";
		return -errno;
	}
	if (domain == AF_NETLINK) {
		struct sockaddr_nl sa = {.nl_family = AF_NETLINK};

		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			e = errno;
			*what = "bind";
			close(fd);
			return -e;
		}
	}
	return fd;
}

int netns_socket(pid_t pid, int domain, int type, int protocol, uid_t owner, const char **what)
{
	int target, self = -1, fd, r;

	*what = "";
	if (pid > 0) {
		target = netns_open_pid(pid);
		if (target < 0) {
			*what = "open its /proc/PID/ns/net";
			return target;
		}
		r = netns_enter(target, &self);
		close(target);
		if (r < 0) {
			*what = "setns";
			return r;
		}
	}
	fd = make_socket(domain, type, protocol, owner, what);
	if (self >= 0 && netns_leave(self) < 0) {
		/* The thread is left in nginx's namespace: nothing it does next would be right. */
		*what = "setns back";
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	return fd;
}

int netns_socket_at(int target, int self, int domain, int type, int protocol, uid_t owner, const char **what)
{
	int fd;

	*what = "";
	if (target >= 0 && setns(target, CLONE_NEWNET) < 0) {
		*what = "setns";
		return -errno;
	}
	fd = make_socket(domain, type, protocol, owner, what);
	if (target >= 0 && setns(self, CLONE_NEWNET) < 0) {
		*what = "setns back";
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	return fd;
}
