/*
 * knob: see knob.h. This file holds the driver table, the expansion of policies into knobs (behind the dry-run
 * backend of knob_dry.c in a dry run), the errno classes, plus the helpers the drivers share (knob_io.h).
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/policy.h"
#include "act/knob_io.h"
#include "strutil.h"

/* ---- the driver table ------------------------------------------------------------------------------------ */

/* Mapped by our own words rather than each table's .kind, so a driver spelling its kind differently cannot
 * silently drop out of the table. */
static const struct {
	const char *kind;
	const struct knob_ops *ops;
} drivers[] = {
	{"sysctl", &knob_sysctl_ops},
	{"irq_affinity", &knob_irq_ops},
	{"rps", &knob_rps_ops},
	{"rps_flows", &knob_rps_flows_ops},
	{"sched_slice", &knob_sched_ops},
	{"nginx_directive", &knob_nginx_ops},
	{"listen_queue", &knob_listen_ops},
	{"listen_param", &knob_listen_param_ops},
	{"upstream_keepalive", &knob_upstream_ops},
};

const struct knob_ops *knob_ops_for(const char *kind)
{
	if (!kind)
		return NULL;
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (strcmp(drivers[i].kind, kind) == 0)
			return drivers[i].ops;
	return NULL;
}

static int knob_init(struct knob *k, const char *name, const struct knob_policy *pol, const struct knob_ops *ops,
		     struct knob_env *env)
{
	memset(k, 0, sizeof(*k));
	if (strlen(name) >= sizeof(k->name))
		return -ENAMETOOLONG;
	strcpy(k->name, name);
	k->pol = pol;
	k->ops = ops;
	k->env = env;
	if (env->dry_run)
		return knob_dry_wrap(k);
	return env->wrap ? env->wrap(k, env->wrap_ctx) : 0;
}

int knob_instantiate(const struct knob_policy *pol, struct knob_env *env, struct knob *out, size_t max, size_t *n)
{
	char (*nics)[KNOB_IFNAME_MAX];
	const struct knob_ops *ops;
	char name[KNOB_NAME_MAX + KNOB_IFNAME_MAX + 1];
	size_t nn = 0;
	bool more;
	int r;

	*n = 0;
	if (!pol || !env)
		return -EINVAL;
	ops = knob_ops_for(pol->kind_name);
	if (!ops)
		return -EINVAL;
	if (ops != &knob_irq_ops && ops != &knob_rps_ops) {
		if (max < 1)
			return -ENOSPC;
		r = knob_init(&out[0], pol->name, pol, ops, env);
		if (r == 0)
			*n = 1;
		return r;
	}
	nics = calloc(KNOB_NICS_MAX, sizeof(*nics));
	if (!nics)
		return -ENOMEM;
	/* IRQs belong to the host; RPS to the interfaces of nginx's network namespace, as its counters do. */
	if (ops == &knob_rps_ops)
		r = env->ns_nics ? env->ns_nics(env->ns_nics_ctx, pol->target, nics, KNOB_NICS_MAX, &nn)
				 : knob_ns_nics(env, pol->target, nics, KNOB_NICS_MAX, &nn);
	else
		r = knob_nics(env, pol->target, nics, KNOB_NICS_MAX, &nn);
	more = r == -ENOSPC; /* the first KNOB_NICS_MAX are still filled in, and -ENOSPC returned */
	if (more)
		r = 0;
	for (size_t i = 0; r == 0 && i < nn; i++) {
		if (*n == max) {
			r = -ENOSPC;
			break;
		}
		snprintf(name, sizeof(name), "%s.%s", pol->name, nics[i]);
		r = knob_init(&out[*n], name, pol, ops, env);
		if (r == 0)
			(*n)++;
	}
	free(nics);
	return r == 0 && more ? -ENOSPC : r;
}

int knob_orphan_policy(const char *name, const char *original, struct knob_policy *p)
{
	if (strncmp(name, "net.", 4) != 0 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_.-") != strlen(name) ||
	    strlen(name) >= sizeof(p->name) || strlen(name) >= sizeof(p->target))
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->file, sizeof(p->file), "(removed)");
	p->kind = POLICY_SYSCTL;
	snprintf(p->kind_name, sizeof(p->kind_name), "sysctl");
	snprintf(p->target, sizeof(p->target), "%s", name);
	p->type = strchr(original, ' ') ? KNOB_T_INTVEC : KNOB_T_INT;
	p->nelem = 1;
	for (const char *c = original; *c; c++)
		p->nelem += *c == ' ';
	p->enabled = false;
	return 0;
}

/* ---- reads, writes and errno classes -------------------------------------------------------------------- */

/* ---- decorators (knob_dry.c, priv/knob_remote.c) ------------------------------------------------------------ */

struct knob_decor *knob_decor_of(struct knob *k)
{
	return k->priv;
}

static int decor_probe(struct knob *k, char *why, size_t whylen)
{
	struct knob *real = &knob_decor_of(k)->real;

	return real->ops->probe ? real->ops->probe(real, why, whylen) : 0;
}

void knob_decor_release(struct knob *k)
{
	struct knob_decor *d = knob_decor_of(k);

	if (!d)
		return;
	if (d->real.ops->release)
		d->real.ops->release(&d->real);
	k->ops = d->real.ops;
	k->priv = d->real.priv;
	free(d);
}

int knob_decorate(struct knob *k, struct knob_decor *d, int (*read)(struct knob *, char *, size_t),
		  int (*write)(struct knob *, const char *, char *, size_t, knob_done_fn, void *))
{
	if (!k || !k->ops || !k->ops->read || !d || !read || !write)
		return -EINVAL;
	d->real = *k;
	d->ops.kind = k->ops->kind;
	d->ops.probe = decor_probe;
	d->ops.read = read;
	d->ops.write = write;
	d->ops.release = knob_decor_release;
	k->ops = &d->ops;
	k->priv = d;
	return 0;
}

int knob_read(struct knob *k, char *out, size_t outlen)
{
	if (!k || !k->ops || !k->ops->read || !out || outlen == 0)
		return -EINVAL;
	return k->ops->read(k, out, outlen);
}

int knob_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	if (why && whylen)
		why[0] = '\0';
	if (!k || !k->ops || !k->ops->write || !value)
		return -EINVAL;
	return k->ops->write(k, value, why, whylen, done, ctx);
}

int knob_restore(struct knob *k, const char *original, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	if (why && whylen)
		why[0] = '\0';
	if (!k || !k->ops || !original)
		return -EINVAL;
	if (k->ops->restore)
		return k->ops->restore(k, original, why, whylen, done, ctx);
	return knob_write(k, original, why, whylen, done, ctx);
}

enum knob_errclass knob_errclass(int r)
{
	if (r == 0)
		return KNOB_ERR_NONE;
	switch (-r) {
	case EBUSY:
	case EAGAIN:
	case EINTR:
		return KNOB_ERR_RETRY;
	case EINVAL:
	case ERANGE:
	case ENOENT:
	case ENOTSUP:
#if EOPNOTSUPP != ENOTSUP
	case EOPNOTSUPP:
#endif
		return KNOB_ERR_UNSUPPORTED;
	case EPERM:
	case EACCES:
	case EROFS:
		return KNOB_ERR_READONLY;
	default:
		return KNOB_ERR_OTHER;
	}
}

/* ---- shared helpers (knob_io.h) -------------------------------------------------------------------------- */

int knob_path(const struct knob_env *env, char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = str_vrooted(out, n, env ? env->root : NULL, fmt, ap);
	va_end(ap);
	return r;
}

/* Whether PID's network namespace is another than ours. */
static bool other_netns(pid_t pid)
{
	char path[64];
	struct stat theirs, mine;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat(path, &theirs) < 0 || stat("/proc/self/ns/net", &mine) < 0)
		return false;
	return theirs.st_ino != mine.st_ino || theirs.st_dev != mine.st_dev;
}

static int cmp_ifname(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* NAMES[0..K) sorted and packed NUL-separated into OUT (N bytes, zeroed first), for comparing two lists. */
static int pack_names(char (*names)[KNOB_IFNAME_MAX], size_t k, char *out, size_t n)
{
	size_t off = 0;

	memset(out, 0, n);
	qsort(names, k, sizeof(names[0]), cmp_ifname);
	for (size_t i = 0; i < k; i++) {
		size_t l = strlen(names[i]) + 1;

		if (off + l > n)
			return -ENOSPC;
		memcpy(out + off, names[i], l);
		off += l;
	}
	return 0;
}

/* The interface names of /proc/PID/net/dev (PID's network namespace), packed into OUT. */
static int netns_devs(pid_t pid, char *out, size_t n)
{
	char path[64], line[512], names[KNOB_NICS_MAX][KNOB_IFNAME_MAX];
	size_t k = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *p = line;

		if (!colon)
			continue; /* the two header lines */
		*colon = '\0';
		while (*p == ' ')
			p++;
		if (!knob_ifname_ok(p) || k == KNOB_NICS_MAX) {
			fclose(f);
			return -EINVAL;
		}
		strcpy(names[k++], p);
	}
	fclose(f);
	return pack_names(names, k, out, n);
}

/* The names under DIR (a /sys/class/net), packed into OUT. */
static int sysfs_devs(const char *dir, char *out, size_t n)
{
	char names[KNOB_NICS_MAX][KNOB_IFNAME_MAX];
	struct dirent *de;
	size_t k = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (!knob_ifname_ok(de->d_name) || k == KNOB_NICS_MAX) {
			closedir(d);
			return -EINVAL;
		}
		strcpy(names[k++], de->d_name);
	}
	closedir(d);
	return pack_names(names, k, out, n);
}

/*
 * sysfs shows the interfaces of the network namespace of whoever mounted it, so the host's /sys/class/net is not
 * nginx's when nginx runs in another namespace. `ip netns exec` and container runtimes mount a sysfs of that
 * namespace in nginx's mount namespace, reachable as /proc/PID/root/sys. It is taken only when it lists exactly
 * the interfaces of /proc/PID/net/dev (nginx's namespace as procfs sees it), else the agent's own is used.
 */
static bool nginx_sysfs(const struct knob_env *env, char *prefix, size_t n)
{
	char a[KNOB_NICS_MAX * KNOB_IFNAME_MAX], b[KNOB_NICS_MAX * KNOB_IFNAME_MAX]; /* 4 KiB each */
	char dir[64];

	if (!env || env->nginx_pid <= 0 || !env->root || strcmp(env->root, "/") != 0 || !other_netns(env->nginx_pid))
		return false;
	snprintf(dir, sizeof(dir), "/proc/%d/root/sys/class/net", (int)env->nginx_pid);
	if (netns_devs(env->nginx_pid, a, sizeof(a)) < 0 || sysfs_devs(dir, b, sizeof(b)) < 0 ||
	    memcmp(a, b, sizeof(a)) != 0)
		return false;
	snprintf(prefix, n, "/proc/%d/root", (int)env->nginx_pid);
	return true;
}

int knob_netdev_path(const struct knob_env *env, char *out, size_t n, const char *fmt, ...)
{
	char rel[512], prefix[64];
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= sizeof(rel))
		return -ENAMETOOLONG;
	if (!nginx_sysfs(env, prefix, sizeof(prefix)))
		return knob_path(env, out, n, "%s", rel);
	w = snprintf(out, n, "%s%s", prefix, rel);
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

int knob_read_fd(int fd, char *buf, size_t len)
{
	size_t off = 0;
	char extra;
	ssize_t r;

	if (len == 0)
		return -EINVAL;
	for (;;) {
		if (off == len - 1) {
			/* Full: one more byte tells a file that fits exactly from one that is cut. */
			do
				r = read(fd, &extra, 1);
			while (r < 0 && errno == EINTR);
			if (r < 0)
				return -errno;
			buf[off] = '\0';
			return r == 0 ? 0 : -EFBIG;
		}
		r = read(fd, buf + off, len - 1 - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		off += (size_t)r;
	}
	buf[off] = '\0';
	return 0;
}

int knob_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = knob_read_fd(fd, buf, len);
	close(fd);
	return r;
}

int knob_write_fd(int fd, const char *text)
{
	size_t n = strlen(text);
	ssize_t r;

	do
		r = write(fd, text, n);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return (size_t)r == n ? 0 : -EIO;
}

int knob_write_file(const char *path, const char *text)
{
	/* O_TRUNC: the kernel ignores it on /proc and sysfs (as `echo 1 > file` does), a fake root needs it. */
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	int r, c;

	if (fd < 0)
		return -errno;
	r = knob_write_fd(fd, text);
	/* sysfs and procfs report errors at write(), but a close error is still an error. */
	c = close(fd);
	if (r == 0 && c < 0 && errno != EINTR)
		r = -errno;
	return r;
}

int knob_can_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* The mount point of the mount in /proc/self/mountinfo that holds PATH (the longest prefix) into MNT, and whether it
 * is read-only. 0, or -ENOENT when none is found. */
static int mount_of(const char *path, char *mnt, size_t mntlen, bool *ro)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	size_t best = 0;
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char point[1024], opts[512];
		size_t n;

		/* ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS ...; a blank in a mount point is written \040. */
		if (sscanf(line, "%*s %*s %*s %*s %1023s %511s", point, opts) != 2)
			continue;
		n = strlen(point);
		if (n < best || strncmp(path, point, n) != 0 ||
		    (path[n] != '/' && path[n] != '\0' && !(n == 1 && point[0] == '/')))
			continue;
		best = n;
		snprintf(mnt, mntlen, "%s", point);
		*ro = strcmp(opts, "ro") == 0 || strncmp(opts, "ro,", 3) == 0;
		r = 0;
	}
	fclose(f);
	return r;
}

/* Whether this process's user namespace maps the whole range of ids: it is the host's. */
static bool userns_is_host(void)
{
	char map[256];
	unsigned long a, b, c;

	if (knob_read_file("/proc/self/uid_map", map, sizeof(map)) < 0)
		return true; /* no user namespaces here */
	return sscanf(map, "%lu %lu %lu", &a, &b, &c) == 3 && a == 0 && b == 0 && c == 4294967295UL;
}

void knob_refusal(const char *path, int r, char *why, size_t whylen)
{
	char mnt[1024];
	bool ro = false;

	if (r == -EROFS) {
		if (mount_of(path, mnt, sizeof(mnt), &ro) == 0 && ro)
			snprintf(why, whylen, "refused: %.120s is mounted read-only here (as a container, or a unit's "
				 "ProtectKernelTunables=, mounts /proc/sys and /sys): the host's own root can set it", mnt);
		else
			snprintf(why, whylen, "refused: %s", strerror(EROFS));
	} else if (r == -EACCES || r == -EPERM) {
		if (geteuid() != 0)
			snprintf(why, whylen, "refused: %s: the agent runs as uid %u, not root", strerror(-r),
				 (unsigned)geteuid());
		else if (!userns_is_host())
			snprintf(why, whylen, "refused: %s: the agent is root of a user namespace (an unprivileged "
				 "container), not of the host", strerror(-r));
		else
			snprintf(why, whylen, "refused: %s to root: a capability the agent lacks, a security module or "
				 "the unit's sandbox", strerror(-r));
	} else {
		snprintf(why, whylen, "%s", strerror(-r));
	}
}

bool knob_netns_not_host(const struct knob_env *env)
{
	char core[512], probe[512];
	struct stat st;

	if (knob_path(env, core, sizeof(core), "/proc/sys/net/core") < 0 ||
	    knob_path(env, probe, sizeof(probe), "/proc/sys/net/core/netdev_max_backlog") < 0)
		return false;
	return stat(core, &st) == 0 && S_ISDIR(st.st_mode) && stat(probe, &st) < 0 && errno == ENOENT;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

char *knob_trim(char *s)
{
	size_t n = strlen(s), i = 0;

	while (n > 0 && is_blank(s[n - 1]))
		n--;
	s[n] = '\0';
	while (is_blank(s[i]))
		i++;
	if (i)
		memmove(s, s + i, n - i + 1);
	return s;
}

int knob_parse_i64(const char *s, int64_t *out)
{
	uint64_t v = 0, lim;
	bool neg = false;

	if (*s == '-') {
		neg = true;
		s++;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; *s; s++) {
		unsigned d;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		d = (unsigned)(*s - '0');
		if (v > (lim - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	return 0;
}

void knob_cpuset_clear(struct knob_cpuset *s)
{
	memset(s, 0, sizeof(*s));
}

bool knob_cpuset_has(const struct knob_cpuset *s, unsigned cpu)
{
	return cpu < KNOB_CPUS_MAX && (s->bits[cpu / 64] >> (cpu % 64) & 1);
}

static void cpuset_add(struct knob_cpuset *s, unsigned cpu)
{
	s->bits[cpu / 64] |= (uint64_t)1 << (cpu % 64);
}

bool knob_cpuset_subset(const struct knob_cpuset *a, const struct knob_cpuset *b)
{
	for (size_t i = 0; i < KNOB_CPUS_MAX / 64; i++)
		if (a->bits[i] & ~b->bits[i])
			return false;
	return true;
}

bool knob_cpuset_equal(const struct knob_cpuset *a, const struct knob_cpuset *b)
{
	return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

unsigned knob_cpuset_end(const struct knob_cpuset *s)
{
	for (size_t i = KNOB_CPUS_MAX / 64; i-- > 0;)
		if (s->bits[i])
			return (unsigned)(i * 64 + 64 - (unsigned)__builtin_clzll(s->bits[i]));
	return 0;
}

/* A CPU number at *P (decimal, no sign), advancing *P. 0, -EINVAL or -ERANGE. */
static int cpu_number(const char **p, const char *end, unsigned *out)
{
	unsigned v = 0;
	const char *s = *p;

	if (s == end || *s < '0' || *s > '9')
		return -EINVAL;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (unsigned)(*s - '0');
		if (v >= KNOB_CPUS_MAX)
			return -ERANGE;
	}
	*p = s;
	*out = v;
	return 0;
}

int knob_cpulist_parse(const char *s, size_t len, struct knob_cpuset *out)
{
	const char *p = s, *end = s + len;
	unsigned a, b;
	int r;

	knob_cpuset_clear(out);
	while (p < end) {
		r = cpu_number(&p, end, &a);
		if (r < 0)
			return r;
		b = a;
		if (p < end && *p == '-') {
			p++;
			r = cpu_number(&p, end, &b);
			if (r < 0)
				return r;
			if (b < a)
				return -EINVAL;
		}
		for (unsigned c = a; c <= b; c++)
			cpuset_add(out, c);
		if (p < end) {
			if (*p != ',' || p + 1 == end)
				return -EINVAL;
			p++;
		}
	}
	return 0;
}

int knob_cpulist_format(const struct knob_cpuset *s, char *buf, size_t len)
{
	size_t off = 0;
	unsigned c = 0;
	int w;

	if (len == 0)
		return -ERANGE;
	buf[0] = '\0';
	while (c < KNOB_CPUS_MAX) {
		unsigned a;

		if (!knob_cpuset_has(s, c)) {
			c++;
			continue;
		}
		a = c;
		while (c + 1 < KNOB_CPUS_MAX && knob_cpuset_has(s, c + 1))
			c++;
		if (a == c)
			w = snprintf(buf + off, len - off, "%s%u", off ? "," : "", a);
		else
			w = snprintf(buf + off, len - off, "%s%u-%u", off ? "," : "", a, c);
		if (w < 0 || (size_t)w >= len - off) {
			buf[0] = '\0';
			return -ERANGE;
		}
		off += (size_t)w;
		c++;
	}
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int knob_cpumask_parse(const char *s, size_t len, struct knob_cpuset *out)
{
	size_t groups = 1, g = 0;
	const char *p = s, *end = s + len;

	knob_cpuset_clear(out);
	if (len == 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (s[i] == ',')
			groups++;
	if (groups > KNOB_CPUS_MAX / 32)
		return -ERANGE;
	for (;;) {
		const char *q = p;
		uint64_t v = 0;
		unsigned bit;

		while (q < end && *q != ',')
			q++;
		if (q == p || q - p > 8)
			return -EINVAL;
		for (const char *c = p; c < q; c++) {
			int d = hex_digit(*c);

			if (d < 0)
				return -EINVAL;
			v = v << 4 | (unsigned)d;
		}
		/* Group g (from the left) of GROUPS holds CPUs 32*(groups-1-g) and up. */
		bit = (unsigned)(32 * (groups - 1 - g));
		out->bits[bit / 64] |= v << (bit % 64);
		g++;
		if (q == end)
			return 0;
		p = q + 1;
	}
}

int knob_cpumask_format(const struct knob_cpuset *s, unsigned nbits, char *buf, size_t len)
{
	unsigned chunk, i;
	size_t off = 0;

	if (nbits == 0 || nbits > KNOB_CPUS_MAX || knob_cpuset_end(s) > nbits)
		return -EINVAL;
	if (len == 0)
		return -ERANGE;
	/* As lib/vsprintf.c bitmap_string(): the top group is as wide as its bits need, the others 8 digits. */
	chunk = nbits % 32 ? nbits % 32 : 32;
	for (i = (nbits + 31) / 32 * 32; i >= 32; i -= 32) {
		unsigned at = i - 32;
		uint32_t v = (uint32_t)(s->bits[at / 64] >> (at % 64));
		int w;

		if (chunk < 32)
			v &= ((uint32_t)1 << chunk) - 1;
		w = snprintf(buf + off, len - off, "%s%0*x", off ? "," : "", (int)((chunk + 3) / 4), v);
		if (w < 0 || (size_t)w >= len - off) {
			buf[0] = '\0';
			return -ERANGE;
		}
		off += (size_t)w;
		chunk = 32;
	}
	return 0;
}

int knob_cpumap_split(const char *text, struct knob_map_entry *out, size_t max, size_t *n)
{
	const char *p = text;
	struct knob_cpuset scratch;

	*n = 0;
	if (*p == '\0')
		return 0;
	for (;;) {
		unsigned long key = 0;
		const char *list;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			key = key * 10 + (unsigned long)(*p - '0');
			if (key > 1u << 24)
				return -EINVAL;
		}
		if (*p != ':')
			return -EINVAL;
		list = ++p;
		while (*p && *p != ';')
			p++;
		if (*n == max)
			return -E2BIG;
		if (*n > 0 && key <= out[*n - 1].key)
			return -EINVAL;
		if (knob_cpulist_parse(list, (size_t)(p - list), &scratch) < 0)
			return -EINVAL;
		out[*n].key = (unsigned)key;
		out[*n].list = list;
		out[*n].len = (size_t)(p - list);
		(*n)++;
		if (*p == '\0')
			return 0;
		if (*++p == '\0')
			return -EINVAL;
	}
}

bool knob_ifname_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= KNOB_IFNAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (name[i] == '/' || name[i] == ':' || name[i] <= ' ' || name[i] == 0x7f)
			return false;
	return true;
}

const char *knob_dev(const struct knob *k)
{
	size_t pl;

	if (!k->pol)
		return NULL;
	pl = strlen(k->pol->name);
	if (strncmp(k->name, k->pol->name, pl) != 0 || k->name[pl] != '.' || !knob_ifname_ok(k->name + pl + 1))
		return NULL;
	return k->name + pl + 1;
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

static int rx_queues(const struct knob_env *env, bool ns, const char *dev, unsigned *idx, size_t max, size_t *n)
{
	char path[512];
	struct dirent *de;
	DIR *d;
	int r = 0;

	*n = 0;
	if (!knob_ifname_ok(dev))
		return -EINVAL;
	r = ns ? knob_netdev_path(env, path, sizeof(path), "/sys/class/net/%s/queues", dev)
	       : knob_path(env, path, sizeof(path), "/sys/class/net/%s/queues", dev);
	if (r < 0)
		return r;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int64_t q;

		if (strncmp(de->d_name, "rx-", 3) != 0 || knob_parse_i64(de->d_name + 3, &q) < 0 || q < 0 ||
		    q >= 65536)
			continue;
		if (*n == max) {
			r = -ENOSPC;
			break;
		}
		idx[(*n)++] = (unsigned)q;
	}
	closedir(d);
	if (r == 0 && *n == 0)
		r = -ENOENT;
	qsort(idx, *n, sizeof(*idx), cmp_unsigned);
	return r;
}

int knob_rx_queues(const struct knob_env *env, const char *dev, unsigned *idx, size_t max, size_t *n)
{
	return rx_queues(env, true, dev, idx, max, n);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int list_nics(const struct knob_env *env, bool ns, const char *glob, char (*names)[KNOB_IFNAME_MAX],
		     size_t max, size_t *n)
{
	unsigned *queues;
	char path[512];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int r;

	*n = 0;
	bool literal;

	if (!glob || !*glob)
		glob = "*";
	/* A target that names one interface is the operator's choice: lo or a virtual one (veth) too. */
	literal = !strpbrk(glob, "*?[\\");
	r = ns ? knob_netdev_path(env, path, sizeof(path), "/sys/class/net")
	       : knob_path(env, path, sizeof(path), "/sys/class/net");
	if (r < 0)
		return r;
	queues = malloc(KNOB_QUEUES_MAX * sizeof(*queues));
	if (!queues)
		return -ENOMEM;
	d = opendir(path);
	if (!d) {
		free(queues);
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t nq;

		if (!knob_ifname_ok(de->d_name) || (!literal && strcmp(de->d_name, "lo") == 0) ||
		    fnmatch(glob, de->d_name, 0) != 0)
			continue;
		/* A NIC has a device behind it; bridges, veths, bonds, tunnels and lo do not. */
		if (!literal && ((ns ? knob_netdev_path(env, path, sizeof(path), "/sys/class/net/%s/device", de->d_name)
				     : knob_path(env, path, sizeof(path), "/sys/class/net/%s/device", de->d_name)) < 0 ||
				 stat(path, &st) < 0))
			continue;
		if (rx_queues(env, ns, de->d_name, queues, KNOB_QUEUES_MAX, &nq) < 0 && nq == 0)
			continue;
		if (*n == max) {
			r = -ENOSPC;
			break;
		}
		strcpy(names[(*n)++], de->d_name);
	}
	closedir(d);
	free(queues);
	qsort(names, *n, sizeof(*names), cmp_name);
	return r;
}

int knob_nics(const struct knob_env *env, const char *glob, char (*names)[KNOB_IFNAME_MAX], size_t max, size_t *n)
{
	return list_nics(env, false, glob, names, max, n);
}

int knob_ns_nics(const struct knob_env *env, const char *glob, char (*names)[KNOB_IFNAME_MAX], size_t max, size_t *n)
{
	return list_nics(env, true, glob, names, max, n);
}

int knob_possible_cpus(const struct knob_env *env, unsigned *nbits)
{
	struct knob_cpuset s;
	char path[512], buf[4096];
	int r;

	r = knob_path(env, path, sizeof(path), "/sys/devices/system/cpu/possible");
	if (r == 0)
		r = knob_read_file(path, buf, sizeof(buf));
	if (r == 0)
		r = knob_cpulist_parse(buf, strlen(knob_trim(buf)), &s);
	if (r < 0)
		return r;
	*nbits = knob_cpuset_end(&s);
	return *nbits ? 0 : -EINVAL;
}
