/*
 * knob_io: what the knob drivers share: rooted paths, small-file I/O, CPU lists and kernel CPU masks, NIC and
 * rx-queue discovery.
 *
 * Private to agent/knob*.c; the engine uses knob.h only. Everything read through here is untrusted (a kernel of
 * any version, a fake root in tests): every read is bounded by the caller's buffer and every parse is strict.
 * Only knob_write_fd and knob_write_file write, and only to a file that already exists. No logging, no policy.
 */
#ifndef NGXAT_KNOB_IO_H
#define NGXAT_KNOB_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "act/knob.h"

#define KNOB_CPUS_MAX 8192 /* CONFIG_NR_CPUS can reach this; a kernel mask of any host parses */
#define KNOB_IFNAME_MAX 16 /* IFNAMSIZ */
#define KNOB_NICS_MAX 256 /* SR-IOV hosts show a NIC per virtual function */
#define KNOB_QUEUES_MAX 1024
#define KNOB_IRQS_MAX 512

/* A set of CPUs 0..KNOB_CPUS_MAX-1. */
struct knob_cpuset {
	uint64_t bits[KNOB_CPUS_MAX / 64];
};

/* One "KEY:CPULIST" of a CPUMAP value; LIST points into the parsed text and is LEN bytes long. */
struct knob_map_entry {
	unsigned key;
	const char *list;
	size_t len;
};

/* ENV->root followed by the formatted path (which starts with '/') into OUT. 0 or -ENAMETOOLONG. */
int knob_path(const struct knob_env *env, char *out, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Read FD to its end into BUF, NUL-terminated. 0, -EFBIG (more than LEN-1 bytes) or -errno. */
int knob_read_fd(int fd, char *buf, size_t len);
/* Read the file at PATH whole into BUF. As knob_read_fd. */
int knob_read_file(const char *path, char *buf, size_t len);
/* Write TEXT in one write() to FD. 0, -EIO (short write) or -errno. */
int knob_write_fd(int fd, const char *text);
/* Write TEXT to the existing file at PATH (never created, never through a final symlink). 0 or -errno. */
int knob_write_file(const char *path, const char *text);
/* Whether PATH can be opened for writing (nothing is written). 0 or -errno. */
int knob_can_write(const char *path);
/*
 * What refused a write to PATH with R, in words, into WHY: for -EROFS the mount that holds PATH read-only (a
 * container, or a unit with ProtectKernelTunables=, mounts /proc/sys and /sys so), for -EACCES and -EPERM who the
 * agent is (not root; root of a user namespace, as in an unprivileged container; root without the capability),
 * else strerror. Reads /proc/self/mountinfo and /proc/self/uid_map: the agent's own view (PATH is the real path,
 * the configured root included).
 */
void knob_refusal(const char *path, int r, char *why, size_t whylen);
/* Whether this network namespace is not the host's: net/core exists under ENV->root's /proc/sys but
 * netdev_max_backlog, which the kernel registers in the initial namespace only, does not. Host-wide net.* sysctls
 * are then absent here (in a container with a network of its own) while the host has them. */
bool knob_netns_not_host(const struct knob_env *env);
/* Strip blanks (space, tab, newline) at both ends of S in place; returns S. */
char *knob_trim(char *s);
/* S, whole, as a decimal int64 ('-' allowed, no '+', no blanks). 0, -EINVAL or -ERANGE. */
int knob_parse_i64(const char *s, int64_t *out);

/* Empty S. */
void knob_cpuset_clear(struct knob_cpuset *s);
/* Whether CPU is in S. */
bool knob_cpuset_has(const struct knob_cpuset *s, unsigned cpu);
/* Whether every CPU of A is in B. */
bool knob_cpuset_subset(const struct knob_cpuset *a, const struct knob_cpuset *b);
/* Whether A and B hold the same CPUs. */
bool knob_cpuset_equal(const struct knob_cpuset *a, const struct knob_cpuset *b);
/* One more than the highest CPU of S, 0 when S is empty. */
unsigned knob_cpuset_end(const struct knob_cpuset *s);
/* The LEN bytes at S as a CPU list ("0-3,8", "" is empty; any order, overlaps merged). 0, -EINVAL, -ERANGE. */
int knob_cpulist_parse(const char *s, size_t len, struct knob_cpuset *out);
/* S as a canonical CPU list into BUF. 0 or -ERANGE (no room). */
int knob_cpulist_format(const struct knob_cpuset *s, char *buf, size_t len);
/* The LEN bytes at S as a kernel CPU mask (hex, comma-separated 32-bit groups, most significant first). */
int knob_cpumask_parse(const char *s, size_t len, struct knob_cpuset *out);
/* S as the kernel prints a mask of NBITS CPUs ("%*pb"). 0, -EINVAL (a CPU at or above NBITS) or -ERANGE. */
int knob_cpumask_format(const struct knob_cpuset *s, unsigned nbits, char *buf, size_t len);
/* Split a CPUMAP value "K:LIST;K:LIST" (keys strictly ascending, each LIST a valid CPU list). 0, -EINVAL, -E2BIG. */
int knob_cpumap_split(const char *text, struct knob_map_entry *out, size_t max, size_t *n);

/* The interface of a per-interface knob (its name is "POLICY.DEV"), or NULL when the name is not of that form. */
const char *knob_dev(const struct knob *k);
/* Whether NAME can be an interface name (and so a path component). */
bool knob_ifname_ok(const char *name);
/*
 * The NICs under ENV->root/sys/class/net whose name matches GLOB (fnmatch; "" is "*"): a device link and at least
 * one rx queue (so not lo, bridges, veths, bonds), sorted by name. 0, -ENOSPC (more than MAX), -errno.
 */
int knob_nics(const struct knob_env *env, const char *glob, char (*names)[KNOB_IFNAME_MAX], size_t max, size_t *n);
/*
 * As knob_nics, in nginx's network namespace (knob_netdev_path). Both take a GLOB without wildcards as the name of
 * one interface, which is then listed even without a device link (lo, a veth) as long as it has rx queues.
 */
int knob_ns_nics(const struct knob_env *env, const char *glob, char (*names)[KNOB_IFNAME_MAX], size_t max, size_t *n);
/*
 * The path of a /sys/class/net file (FMT starts with "/sys/class/net") in nginx's network namespace: through
 * nginx's mount namespace (/proc/PID/root/sys) when nginx runs in another network namespace and that sysfs lists
 * exactly the interfaces of /proc/PID/net/dev; else as knob_path. 0 or -ENAMETOOLONG.
 */
int knob_netdev_path(const struct knob_env *env, char *out, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The rx-queue indices of DEV in nginx's network namespace, ascending. 0, -ENOENT (no queue), -ENOSPC, -errno. */
int knob_rx_queues(const struct knob_env *env, const char *dev, unsigned *idx, size_t max, size_t *n);
/* nr_cpu_ids: one more than the highest CPU in /sys/devices/system/cpu/possible. 0 or -errno. */
int knob_possible_cpus(const struct knob_env *env, unsigned *nbits);

#endif
