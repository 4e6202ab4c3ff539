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
/*
 * A socket (DOMAIN, TYPE, PROTOCOL; close-on-exec) of PID's network namespace (0: the thread's own), a netlink one
 * bound (its port chosen by the kernel), for a process that may not enter it. It carries no right of its maker's:
 * the kernel holds what is sent on it to the sender's own capabilities (netlink's CAP_NET_ADMIN for a route change
 * or a sock_diag SOCK_DESTROY, a bind's CAP_NET_BIND_SERVICE). OWNER ((uid_t)-1: the maker) is the uid it is made
 * as (the thread's file-system uid for the socket() call): what a firewall's owner match and a uid routing rule see.
 * Its descriptor, or -errno with the step that failed in WHAT ("setns", "socket", ...).
 */
int netns_socket(pid_t pid, int domain, int type, int protocol, uid_t owner, const char **what);
/* The same in the namespace of TARGET (an fd of netns_open_pid; -1: the thread's own), the thread brought back to
 * SELF (an fd of its own namespace, which the caller holds): for many sockets of one namespace, two setns() and the
 * socket, nothing opened or read. "setns back" with -EIO as netns_socket's. */
int netns_socket_at(int target, int self, int domain, int type, int protocol, uid_t owner, const char **what);

#endif
