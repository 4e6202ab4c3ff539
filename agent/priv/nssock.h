/*
 * nssock: the engine's netlink sockets of nginx's network namespace, asked of the writer (issue 22): an engine with
 * no capability cannot enter that namespace (setns needs CAP_SYS_ADMIN, /proc/PID/ns/net a ptrace right), so the
 * writer makes them there (netns_socket: they carry none of its rights) and passes them (WMSG_SOCKET).
 *
 * Owns the two requests (NETLINK_SOCK_DIAG, NETLINK_ROUTE) and the sockets that came, until they are taken. Never
 * waits: a caller that finds them not there yet gets -EINPROGRESS and asks again at its next tick; the writer says
 * which master's namespace each socket is in, and one of another master than the caller asks for is closed. The TCP
 * sockets of stub_status and the synthetic client (fresh ones each tick, from pool threads) are asked one at a time
 * on the read channel instead, each waited for (nssock_tcp).
 */
#ifndef NGXAT_NSSOCK_H
#define NGXAT_NSSOCK_H

#include <stddef.h>
#include <sys/types.h>

struct rclient;
struct wclient;
struct nssock;

/* Sockets asked of the writer through C (which must outlive it). 0 or -ENOMEM. */
int nssock_new(struct wclient *c, struct nssock **out);
/* The socket diagnostics and route sockets of the namespace of nginx's master PID: 0 with *DIAG and *ROUTE (the
 * caller's) once both came; -EINPROGRESS when they were asked for now or still are; or the writer's -errno with WHY
 * (they are asked again at the next call). */
int nssock_netlink(struct nssock *s, pid_t pid, int *diag, int *route, char *why, size_t whylen);
/* A TCP socket of FAMILY (AF_INET, AF_INET6) of the namespace of nginx's master PID, made by the writer and asked
 * through its read channel RC (waited for: from any thread, rclient_call): the socket (the caller's, blocking), or
 * -errno with WHY (-ESTALE: the writer's pid file names another master now; -ESRCH: none). */
int nssock_tcp(struct rclient *rc, pid_t pid, int family, char *why, size_t whylen);
/* The interfaces of nginx's namespace GLOB matches, as the writer finds them (its knobs are built from the same; asked
 * on RC, waited for): as knob_ns_nics (0, or -ENOSPC with the first MAX; -errno). */
int nssock_nics(struct rclient *rc, const char *glob, char (*names)[16], size_t max, size_t *n);
/* net.* sysctl NAME as nginx's namespace has it, read by the writer (asked on RC, waited for): its integers into OUT;
 * 0 or -errno. */
int nssock_sysctl(struct rclient *rc, const char *name, char *out, size_t outlen);
/* nginx's log at PATH (one agent.conf names) opened read-only by the writer (OPEN_LOG): its descriptor, or -errno
 * with the writer's WHY. */
int nssock_open_log(struct rclient *rc, const char *path, char *why, size_t whylen);
/* Close what came, forget what is in flight, free S. */
void nssock_free(struct nssock *s);

#endif
