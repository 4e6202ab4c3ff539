/*
 * netns: a short visit of the calling thread to another network namespace. See netns.h.
 */
#define _GNU_SOURCE

#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
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
