/*
 * knob_sysctl: the sysctl driver. "net.core.somaxconn" is /proc/sys/net/core/somaxconn under the configured root
 * (a '/' in the name stands for a '.' in the path, as sysctl(8) spells "net.ipv4.conf.eth0/100.rp_filter").
 * Types: INT, INTVEC (the kernel prints tabs, we write tabs, the canonical text has single spaces), ONOFF (1/0),
 * ENUM (one word, e.g. tcp_congestion_control).
 *
 * Network namespaces: the kernel resolves /proc/sys/net/... against the network namespace of the task that opens
 * the file (net_ctl_header_lookup() takes current->nsproxy->net_ns, and sysctl dentries are not shared across
 * namespaces), and an open descriptor stays bound to that namespace's table. /proc/PID/ has no sys/ directory,
 * so the only way to reach the somaxconn nginx's listen() sees, when nginx runs in another namespace, is to open
 * the file from inside that namespace: setns() into nginx's namespace for the open() and back at once, on this
 * thread only (as sampler.c's stub socket does). Some net.* sysctls are registered for the initial namespace only
 * (netdev_budget, netdev_max_backlog, rmem_max, tcp_mem, ...): they are host-wide and absent from other
 * namespaces, so when nginx's namespace has no such file the agent's own namespace is used. Sysctls outside net.*
 * are global. None of this applies under a fake root, where the pid is not a real process.
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/policy.h"
#include "act/knob_io.h"

#define SYSCTL_TEXT_MAX 4096 /* every sysctl we drive prints far less; more is not a value of ours */

/* The path under /proc/sys for NAME into OUT ("net.core.somaxconn" -> "/proc/sys/net/core/somaxconn"). */
static int sysctl_path(const struct knob *k, const char *name, char *out, size_t n)
{
	char rel[256];
	size_t len = strlen(name), start = 0;

	if (len == 0 || len >= sizeof(rel))
		return -EINVAL;
	for (size_t i = 0; i <= len; i++) {
		char c = name[i];

		if (c == '.' || c == '\0') {
			/* Each component non-empty and never "." or "..": the name cannot leave /proc/sys. */
			if (i == start)
				return -EINVAL;
			rel[i] = c ? '/' : '\0';
			if ((i - start == 1 && rel[start] == '.') ||
			    (i - start == 2 && rel[start] == '.' && rel[start + 1] == '.'))
				return -EINVAL;
			start = i + 1;
		} else if (c == '/') {
			rel[i] = '.';
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
			   c == '-') {
			rel[i] = c;
		} else {
			return -EINVAL;
		}
	}
	return knob_path(k->env, out, n, "/proc/sys/%s", rel);
}

static const char *sysctl_name(const struct knob *k)
{
	return k->pol->target[0] ? k->pol->target : k->pol->name;
}

static bool type_ok(enum knob_type t)
{
	return t == KNOB_T_INT || t == KNOB_T_INTVEC || t == KNOB_T_ONOFF || t == KNOB_T_ENUM;
}

/* ---- namespaces ------------------------------------------------------------------------------------------ */

struct ns_switch {
	int self; /* this thread's namespace while in nginx's, else -1 */
};

static bool real_root(const struct knob_env *env)
{
	return !env->root || env->root[0] == '\0' || strcmp(env->root, "/") == 0;
}

/* Enter nginx's network namespace when NAME is a net.* sysctl and nginx's namespace is not ours. */
static int ns_enter(const struct knob *k, const char *name, struct ns_switch *sw)
{
	char path[64];
	struct stat mine, theirs;
	int fd, r = 0;

	sw->self = -1;
	if (strncmp(name, "net.", 4) != 0 || k->env->nginx_pid <= 0 || !real_root(k->env))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)k->env->nginx_pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		/* nginx went away (or was replaced) since the engine last looked: never fall back to our namespace
		 * for a write meant for nginx's; the engine retries with the new pid. */
		return errno == ENOENT || errno == ESRCH ? -EAGAIN : -errno;
	if (fstat(fd, &theirs) < 0 || stat("/proc/thread-self/ns/net", &mine) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev) {
		close(fd);
		return 0;
	}
	sw->self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (sw->self < 0 || setns(fd, CLONE_NEWNET) < 0) {
		r = -errno;
		if (sw->self >= 0)
			close(sw->self);
		sw->self = -1;
	}
	close(fd);
	return r;
}

static void ns_leave(struct ns_switch *sw)
{
	if (sw->self < 0)
		return;
	if (setns(sw->self, CLONE_NEWNET) < 0)
		/* Cannot happen short of a kernel bug; the loop thread left in nginx's namespace would be wrong. */
		abort();
	close(sw->self);
	sw->self = -1;
}

/* open() the sysctl's file with FLAGS in the namespace it belongs to. The descriptor, or -errno. */
static int sysctl_open(const struct knob *k, const char *name, const char *path, int flags)
{
	struct ns_switch sw;
	int fd, err, r;
	bool switched;

	r = ns_enter(k, name, &sw);
	if (r < 0)
		return r;
	switched = sw.self >= 0;
	fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
	err = errno;
	ns_leave(&sw);
	if (fd < 0 && err == ENOENT && switched) {
		/* Host-wide: registered in the initial namespace only. */
		fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
		err = errno;
	}
	return fd < 0 ? -err : fd;
}

/* ---- values ---------------------------------------------------------------------------------------------- */

static bool word_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= KNOBVAL_WORD_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' ||
		      s[i] == '-'))
			return false;
	return true;
}

/* The integers of S (separated by blanks) into V. 0, -EINVAL or -ERANGE. */
static int split_ints(char *s, int64_t *v, size_t max, size_t *n)
{
	char *save = NULL, *tok;
	int r;

	*n = 0;
	for (tok = strtok_r(s, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (*n == max)
			return -EINVAL;
		r = knob_parse_i64(tok, &v[*n]);
		if (r < 0)
			return r;
		(*n)++;
	}
	return *n ? 0 : -EINVAL;
}

static int put(char *out, size_t len, size_t *off, const char *fmt, int64_t v)
{
	int w = snprintf(out + *off, len - *off, fmt, v);

	if (w < 0 || (size_t)w >= len - *off)
		return -ERANGE;
	*off += (size_t)w;
	return 0;
}

/*
 * TEXT (as the kernel prints it when KERNEL, else as the engine spells a value) of type T: its canonical form into
 * CANON and, when KTEXT is not NULL, what to write to the kernel into KTEXT.
 */
static int convert(enum knob_type t, const char *text, bool kernel, char *canon, size_t clen, char *ktext,
		   size_t klen)
{
	char buf[SYSCTL_TEXT_MAX];
	int64_t v[KNOBVAL_VEC_MAX];
	size_t n, co = 0, ko = 0;
	int r;

	if (strlen(text) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, text);
	knob_trim(buf);
	switch (t) {
	case KNOB_T_INT:
	case KNOB_T_INTVEC:
		r = split_ints(buf, v, t == KNOB_T_INT ? 1 : KNOBVAL_VEC_MAX, &n);
		if (r < 0)
			return r;
		for (size_t i = 0; i < n; i++) {
			r = put(canon, clen, &co, i ? " %" PRId64 : "%" PRId64, v[i]);
			if (r == 0 && ktext)
				r = put(ktext, klen, &ko, i ? "\t%" PRId64 : "%" PRId64, v[i]);
			if (r < 0)
				return r;
		}
		break;
	case KNOB_T_ONOFF: {
		bool on;

		if (strcmp(buf, kernel ? "1" : "on") == 0)
			on = true;
		else if (strcmp(buf, kernel ? "0" : "off") == 0)
			on = false;
		else
			return -EINVAL;
		if ((size_t)snprintf(canon, clen, "%s", on ? "on" : "off") >= clen)
			return -ERANGE;
		if (ktext && (size_t)snprintf(ktext, klen, "%d", on) >= klen)
			return -ERANGE;
		ko = 1;
		break;
	}
	case KNOB_T_ENUM:
		if (!word_ok(buf))
			return -EINVAL;
		if ((size_t)snprintf(canon, clen, "%s", buf) >= clen)
			return -ERANGE;
		if (ktext && (size_t)snprintf(ktext, klen, "%s", buf) >= klen)
			return -ERANGE;
		ko = strlen(buf);
		break;
	default:
		return -ENOTSUP;
	}
	if (ktext) {
		if (ko + 2 > klen)
			return -ERANGE;
		strcpy(ktext + ko, "\n");
	}
	return 0;
}

/* The live value, canonical. */
static int sysctl_get(const struct knob *k, char *out, size_t outlen)
{
	const char *name = sysctl_name(k);
	char path[512], text[SYSCTL_TEXT_MAX];
	int fd, r;

	if (!type_ok(k->pol->type))
		return -ENOTSUP;
	r = sysctl_path(k, name, path, sizeof(path));
	if (r < 0)
		return r;
	fd = sysctl_open(k, name, path, O_RDONLY);
	if (fd < 0)
		return fd;
	r = knob_read_fd(fd, text, sizeof(text));
	close(fd);
	if (r < 0)
		return r;
	return convert(k->pol->type, text, true, out, outlen, NULL, 0);
}

/* ---- ops ------------------------------------------------------------------------------------------------- */

static int sysctl_probe(struct knob *k, char *why, size_t whylen)
{
	const char *name = sysctl_name(k);
	char path[512], val[KNOB_VALUE_MAX];
	int r, fd;

	if (!type_ok(k->pol->type)) {
		snprintf(why, whylen, "a sysctl cannot hold this type of value");
		return -ENOTSUP;
	}
	if (sysctl_path(k, name, path, sizeof(path)) < 0) {
		snprintf(why, whylen, "'%s' is not a sysctl name", name);
		return -ENOTSUP;
	}
	r = sysctl_get(k, val, sizeof(val));
	if (r == -ENOENT && strncmp(name, "net.", 4) == 0 && knob_netns_not_host(k->env)) {
		/* A container with a network of its own: host-wide sysctls are the host's, and absent here. */
		snprintf(why, whylen, "%s: not in this network namespace, which is not the host's (a container's): "
			 "a host-wide sysctl is set on the host", name);
		return -ENOENT;
	}
	if (r == -ENOENT) {
		snprintf(why, whylen, "%s: not on this kernel", name);
		return -ENOENT;
	}
	if (r == -EAGAIN) {
		snprintf(why, whylen, "nginx (pid %d) went away", (int)k->env->nginx_pid);
		return r;
	}
	if (r < 0) {
		snprintf(why, whylen, "%s: cannot read it as this type: %s", name, strerror(-r));
		return -ENOTSUP;
	}
	if (k->pol->type == KNOB_T_INTVEC && k->pol->nelem > 0) {
		size_t n = 1;

		for (const char *p = val; *p; p++)
			n += *p == ' ';
		if (n != k->pol->nelem) {
			snprintf(why, whylen, "%s has %zu elements, the policy %zu", name, n, k->pol->nelem);
			return -ENOTSUP;
		}
	}
	fd = sysctl_open(k, name, path, O_WRONLY | O_NONBLOCK);
	if (fd < 0) {
		char refused[KNOB_WHY_MAX];

		knob_refusal(path, fd, refused, sizeof(refused));
		snprintf(why, whylen, "%s: not writable: %s", name, refused);
		return -ENOTSUP;
	}
	close(fd);
	return 0;
}

static int sysctl_read(struct knob *k, char *out, size_t outlen)
{
	return sysctl_get(k, out, outlen);
}

static int sysctl_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	const char *name = sysctl_name(k);
	char path[512], want[KNOB_VALUE_MAX], ktext[SYSCTL_TEXT_MAX], got[KNOB_VALUE_MAX];
	int fd, r, c;

	(void)done;
	(void)ctx;
	if (!type_ok(k->pol->type)) {
		snprintf(why, whylen, "a sysctl cannot hold this type of value");
		return -ENOTSUP;
	}
	r = convert(k->pol->type, value, false, want, sizeof(want), ktext, sizeof(ktext));
	if (r < 0) {
		snprintf(why, whylen, "'%.64s' is not a value of this sysctl's type", value);
		return -EINVAL;
	}
	r = sysctl_path(k, name, path, sizeof(path));
	if (r < 0) {
		snprintf(why, whylen, "'%s' is not a sysctl name", name);
		return r;
	}
	fd = sysctl_open(k, name, path, O_WRONLY | O_TRUNC);
	if (fd < 0) {
		char refused[KNOB_WHY_MAX];

		knob_refusal(path, fd, refused, sizeof(refused));
		snprintf(why, whylen, "open %s: %s", path, refused);
		return fd;
	}
	r = knob_write_fd(fd, ktext);
	c = close(fd);
	if (r == 0 && c < 0 && errno != EINTR)
		r = -errno;
	if (r < 0) {
		snprintf(why, whylen, "write %s to %s: %s", want, path, strerror(-r));
		return r;
	}
	r = sysctl_get(k, got, sizeof(got));
	if (r < 0) {
		snprintf(why, whylen, "wrote %s, cannot read it back: %s", want, strerror(-r));
		return -EIO;
	}
	if (strcmp(want, got) != 0) {
		snprintf(why, whylen, "wrote %s, reads back %s", want, got);
		return -EIO;
	}
	return 0;
}

static void sysctl_release(struct knob *k)
{
	(void)k;
}

const struct knob_ops knob_sysctl_ops = {
	.kind = "sysctl",
	.probe = sysctl_probe,
	.read = sysctl_read,
	.write = sysctl_write,
	.release = sysctl_release,
};
