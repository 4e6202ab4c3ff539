/*
 * netns: a short visit of the calling thread to another network namespace.
 *
 * Sockets belong to the namespace they were created in, and a child to the one it was forked in, so a visit long
 * enough to create them is all it takes to reach nginx's namespace. setns() moves only the calling thread; the
 * visit must bring it back before the thread does anything else. Owns no state: the caller keeps the fds.
 */
#ifndef NGXAT_NETNS_H
#define NGXAT_NETNS_H

#include <sys/types.h>

/* Enter the namespace of TARGET (an fd of a /proc/.../ns/net): 0 with *SAVED the thread's own namespace, for
 * netns_leave; 1 when TARGET is the thread's namespace already (*SAVED is -1: nothing to leave); or -errno. */
int netns_enter(int target, int *saved);
/* Back to SAVED, which is closed (-1: nothing). 0, or -errno: the thread is still in the other namespace and
 * nothing it does next would be right (the callers abort or say so). */
int netns_leave(int saved);
/* An fd of PID's network namespace (/proc/PID/ns/net), or -errno. */
int netns_open_pid(pid_t pid);

#endif
