/*
 * knob_irq: the affinity of one NIC's queue IRQs (knob "POLICY.DEV"), as a CPUMAP "IRQ:cpulist;...".
 *
 * The IRQs: DEV/device/msi_irqs, or DEV/device/../msi_irqs for virtio-net (the vectors belong to the virtio PCI
 * function; only for a virtio device, as the parent of other devices is a PCI bridge with IRQs of its own), less
 * those /sys/kernel/irq/N/actions shows carry no queue (no handler, or virtio's "-config" vector). A NIC without
 * msi_irqs (INTx) falls back to the /proc/interrupts rows that name it ("eth0", "eth0-rx-0").
 * A write sets /proc/irq/N/smp_affinity_list of the IRQs the value names (all of them must be this NIC's; others
 * are left alone), re-reads it, and checks that effective_affinity_list, where the kernel has it, lies within the
 * written list (x86 picks one CPU of it). The kernel refuses user affinity for managed and per-CPU IRQs at write()
 * with EIO, or EPERM on recent kernels (irq_can_set_affinity_usr()): that is reported as unsupported, not as a
 * failed verify nor as a lack of privilege. irqbalance rewrites these
 * files on its own schedule, so while it runs the knob is a conflict (probe and write return -EBUSY): the agent
 * does not fight it.
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/policy.h"
#include "act/knob_io.h"

#define LINE_MAX_BYTES (1 << 20) /* a /proc/interrupts row: 11 bytes per CPU, 8192 CPUs fit */

/* The pid of a running irqbalance into *PID: 1 when found, 0 when not, -errno when /proc cannot be listed. */
static int irqbalance_pid(const struct knob_env *env, int *pid)
{
	char path[512], comm[64];
	struct dirent *de;
	DIR *d;
	int r;

	r = knob_path(env, path, sizeof(path), "/proc");
	if (r < 0)
		return r;
	d = opendir(path);
	if (!d)
		return -errno;
	r = 0;
	while ((de = readdir(d))) {
		int64_t p;

		if (knob_parse_i64(de->d_name, &p) < 0 || p <= 0 || p > INT32_MAX)
			continue;
		if (knob_path(env, path, sizeof(path), "/proc/%s/comm", de->d_name) < 0 ||
		    knob_read_file(path, comm, sizeof(comm)) < 0)
			continue;
		if (strcmp(knob_trim(comm), "irqbalance") == 0) {
			*pid = (int)p;
			r = 1;
			break;
		}
	}
	closedir(d);
	return r;
}

static void add_irq(unsigned *irqs, size_t max, size_t *n, unsigned irq)
{
	for (size_t i = 0; i < *n; i++)
		if (irqs[i] == irq)
			return;
	if (*n < max)
		irqs[(*n)++] = irq;
}

/* Whether IRQ carries no queue: no handler, or virtio's configuration-change vector. Unknown: it does. */
static bool queueless(const struct knob_env *env, unsigned irq)
{
	char path[512], act[256];
	size_t n;

	if (knob_path(env, path, sizeof(path), "/sys/kernel/irq/%u/actions", irq) < 0 ||
	    knob_read_file(path, act, sizeof(act)) < 0)
		return false;
	n = strlen(knob_trim(act));
	return n == 0 || (n >= 7 && strcmp(act + n - 7, "-config") == 0);
}

/* Open the msi_irqs directory of DEV's device. */
static DIR *msi_dir(const struct knob_env *env, const char *dev)
{
	char path[512], link[256];
	ssize_t n;
	const char *base;
	DIR *d;

	if (knob_path(env, path, sizeof(path), "/sys/class/net/%s/device/msi_irqs", dev) < 0)
		return NULL;
	d = opendir(path);
	if (d)
		return d;
	if (knob_path(env, path, sizeof(path), "/sys/class/net/%s/device/subsystem", dev) < 0)
		return NULL;
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return NULL;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (strcmp(base, "virtio") != 0)
		return NULL;
	if (knob_path(env, path, sizeof(path), "/sys/class/net/%s/device/../msi_irqs", dev) < 0)
		return NULL;
	return opendir(path);
}

/* Whether a /proc/interrupts row's description (after the counts and the chip) names DEV. */
static bool row_names(char *desc, const char *dev)
{
	size_t dl = strlen(dev);
	char *save = NULL;

	for (char *t = strtok_r(desc, " \t\n,", &save); t; t = strtok_r(NULL, " \t\n,", &save))
		if (strncmp(t, dev, dl) == 0 && (t[dl] == '\0' || t[dl] == '-'))
			return true;
	return false;
}

static int irqs_from_proc(const struct knob_env *env, const char *dev, unsigned *irqs, size_t max, size_t *n)
{
	char path[512], *line;
	FILE *f;

	if (knob_path(env, path, sizeof(path), "/proc/interrupts") < 0)
		return -ENAMETOOLONG;
	line = malloc(LINE_MAX_BYTES);
	if (!line)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f) {
		free(line);
		return -errno;
	}
	while (fgets(line, LINE_MAX_BYTES, f)) {
		char *p = line, *end;
		unsigned long irq;

		if (!strchr(line, '\n') && !feof(f)) {
			/* longer than any real row: skip the rest of it */
			int c;

			while ((c = getc(f)) != EOF && c != '\n')
				;
			continue;
		}
		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			continue;
		irq = strtoul(p, &end, 10);
		if (*end != ':' || irq >= 1u << 20)
			continue;
		if (row_names(end + 1, dev))
			add_irq(irqs, max, n, (unsigned)irq);
	}
	free(line);
	fclose(f);
	return 0;
}

/* DEV's queue IRQs, ascending. 0, -ENOENT (none found) or -errno. */
static int discover(const struct knob_env *env, const char *dev, unsigned *irqs, size_t max, size_t *n)
{
	struct dirent *de;
	DIR *d = msi_dir(env, dev);
	int r = 0;

	*n = 0;
	if (d) {
		while ((de = readdir(d))) {
			int64_t irq;

			if (knob_parse_i64(de->d_name, &irq) == 0 && irq >= 0 && irq < 1 << 20 &&
			    !queueless(env, (unsigned)irq))
				add_irq(irqs, max, n, (unsigned)irq);
		}
		closedir(d);
	} else {
		r = irqs_from_proc(env, dev, irqs, max, n);
	}
	if (r == 0 && *n == 0)
		r = -ENOENT;
	for (size_t i = 1; i < *n; i++)
		for (size_t j = i; j > 0 && irqs[j - 1] > irqs[j]; j--) {
			unsigned t = irqs[j];

			irqs[j] = irqs[j - 1];
			irqs[j - 1] = t;
		}
	return r;
}

/* /proc/irq/IRQ/FILE as a CPU set. */
static int read_cpus(const struct knob_env *env, unsigned irq, const char *file, struct knob_cpuset *s)
{
	char path[512], buf[8192];
	int r;

	r = knob_path(env, path, sizeof(path), "/proc/irq/%u/%s", irq, file);
	if (r == 0)
		r = knob_read_file(path, buf, sizeof(buf));
	if (r == 0)
		r = knob_cpulist_parse(buf, strlen(knob_trim(buf)), s);
	return r;
}

/*
 * Write TEXT to smp_affinity_list at PATH. *REFUSED says the kernel refused at write() (not at open()): the IRQ's
 * affinity is not the user's to set (irq_can_set_affinity_usr(): a managed or per-CPU IRQ, or a chip without
 * affinity): EIO on older kernels, EPERM since the kernel changed it. That EPERM is not a permission problem, which
 * would put the whole agent in observe-only: the caller reports this knob unsupported.
 */
static int put_affinity(const char *path, const char *text, bool *refused)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	int r;

	*refused = false;
	if (fd < 0)
		return -errno;
	r = knob_write_fd(fd, text);
	close(fd);
	*refused = r == -EIO || r == -EPERM;
	return r;
}

static int irq_read(struct knob *k, char *out, size_t outlen)
{
	const char *dev = knob_dev(k);
	unsigned irqs[KNOB_IRQS_MAX];
	struct knob_cpuset s;
	char list[KNOB_VALUE_MAX];
	size_t n, off = 0;
	int r, w;

	if (!dev || outlen == 0)
		return -EINVAL;
	r = discover(k->env, dev, irqs, KNOB_IRQS_MAX, &n);
	if (r < 0)
		return r;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		r = read_cpus(k->env, irqs[i], "smp_affinity_list", &s);
		if (r < 0)
			return r;
		if (knob_cpuset_end(&s) > KNOBVAL_CPUS_MAX || knob_cpulist_format(&s, list, sizeof(list)) < 0)
			return -ERANGE;
		w = snprintf(out + off, outlen - off, "%s%u:%s", i ? ";" : "", irqs[i], list);
		if (w < 0 || (size_t)w >= outlen - off) {
			out[0] = '\0';
			return -ERANGE;
		}
		off += (size_t)w;
	}
	return 0;
}

static int irq_probe(struct knob *k, char *why, size_t whylen)
{
	const char *dev = knob_dev(k);
	unsigned irqs[KNOB_IRQS_MAX];
	char path[512], val[KNOB_VALUE_MAX];
	size_t n;
	int r, pid = 0;

	if (!dev) {
		snprintf(why, whylen, "not a per-interface knob name");
		return -ENOTSUP;
	}
	if (k->pol->type != KNOB_T_CPUMAP) {
		snprintf(why, whylen, "IRQ affinity is a cpumap");
		return -ENOTSUP;
	}
	if (irqbalance_pid(k->env, &pid) == 1) {
		snprintf(why, whylen, "irqbalance is running (pid %d)", pid);
		return -EBUSY;
	}
	r = discover(k->env, dev, irqs, KNOB_IRQS_MAX, &n);
	if (r < 0) {
		snprintf(why, whylen, "%s: no queue IRQs found (%s)", dev, strerror(-r));
		return -ENOENT;
	}
	r = irq_read(k, val, sizeof(val));
	if (r < 0) {
		snprintf(why, whylen, "%s: cannot read the IRQs' affinity: %s", dev, strerror(-r));
		return -ENOTSUP;
	}
	for (size_t i = 0; i < n; i++) {
		if (knob_path(k->env, path, sizeof(path), "/proc/irq/%u/smp_affinity_list", irqs[i]) < 0)
			return -ENOTSUP;
		r = knob_can_write(path);
		if (r < 0) {
			char refused[KNOB_WHY_MAX];

			knob_refusal(path, r, refused, sizeof(refused));
			snprintf(why, whylen, "IRQ %u: smp_affinity_list not writable: %s", irqs[i], refused);
			return -ENOTSUP;
		}
	}
	return 0;
}

static int irq_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	const char *dev = knob_dev(k);
	unsigned irqs[KNOB_IRQS_MAX], nbits = 0;
	struct knob_map_entry e[KNOBVAL_MAP_MAX];
	struct knob_cpuset want, got;
	char path[512], list[KNOB_VALUE_MAX], text[KNOB_VALUE_MAX + 1], gotl[KNOB_VALUE_MAX];
	size_t n, ne;
	int r, pid = 0;
	bool refused = false;

	(void)done;
	(void)ctx;
	if (!dev || k->pol->type != KNOB_T_CPUMAP) {
		snprintf(why, whylen, "not a per-interface cpumap knob");
		return -ENOTSUP;
	}
	if (irqbalance_pid(k->env, &pid) == 1) {
		snprintf(why, whylen, "irqbalance is running (pid %d)", pid);
		return -EBUSY;
	}
	r = knob_cpumap_split(value, e, KNOBVAL_MAP_MAX, &ne);
	if (r < 0 || ne == 0) {
		snprintf(why, whylen, "'%.64s' is not an IRQ:cpulist map", value);
		return -EINVAL;
	}
	r = discover(k->env, dev, irqs, KNOB_IRQS_MAX, &n);
	if (r < 0) {
		snprintf(why, whylen, "%s: no queue IRQs found (%s)", dev, strerror(-r));
		return r;
	}
	if (knob_possible_cpus(k->env, &nbits) < 0)
		nbits = KNOB_CPUS_MAX;
	/* Everything is checked before anything is written: a bad value leaves the host as it was. */
	for (size_t i = 0; i < ne; i++) {
		size_t j = 0;

		while (j < n && irqs[j] != e[i].key)
			j++;
		if (j == n) {
			snprintf(why, whylen, "IRQ %u is not a queue IRQ of %s", e[i].key, dev);
			return -EDOM;
		}
		knob_cpulist_parse(e[i].list, e[i].len, &want);
		if (knob_cpuset_end(&want) == 0 || knob_cpuset_end(&want) > nbits) {
			snprintf(why, whylen, "IRQ %u: '%.*s' is empty or names a CPU this host cannot have", e[i].key,
				 (int)(e[i].len > 64 ? 64 : e[i].len), e[i].list);
			return -EDOM;
		}
	}
	for (size_t i = 0; i < ne; i++) {
		knob_cpulist_parse(e[i].list, e[i].len, &want);
		knob_cpulist_format(&want, list, sizeof(list));
		snprintf(text, sizeof(text), "%s\n", list);
		r = knob_path(k->env, path, sizeof(path), "/proc/irq/%u/smp_affinity_list", e[i].key);
		if (r == 0)
			r = put_affinity(path, text, &refused);
		if (r < 0 && refused) {
			snprintf(why, whylen, "IRQ %u: the kernel does not let user space set its affinity (a managed "
				 "or per-CPU IRQ)", e[i].key);
			return -ENOTSUP;
		}
		if (r < 0) {
			snprintf(why, whylen, "IRQ %u: write %s: %s", e[i].key, list, strerror(-r));
			return r;
		}
		r = read_cpus(k->env, e[i].key, "smp_affinity_list", &got);
		if (r < 0) {
			snprintf(why, whylen, "IRQ %u: wrote %s, cannot read it back: %s", e[i].key, list,
				 strerror(-r));
			return -EIO;
		}
		if (!knob_cpuset_equal(&want, &got)) {
			if (knob_cpulist_format(&got, gotl, sizeof(gotl)) < 0)
				strcpy(gotl, "?");
			snprintf(why, whylen, "IRQ %u: wrote %s, reads back %s", e[i].key, list, gotl);
			return -EIO;
		}
		r = read_cpus(k->env, e[i].key, "effective_affinity_list", &got);
		if (r == -ENOENT)
			continue; /* kernels before 4.15 and architectures without it */
		if (r < 0) {
			snprintf(why, whylen, "IRQ %u: effective_affinity_list: %s", e[i].key, strerror(-r));
			return -EIO;
		}
		if (!knob_cpuset_subset(&got, &want)) {
			if (knob_cpulist_format(&got, gotl, sizeof(gotl)) < 0)
				strcpy(gotl, "?");
			snprintf(why, whylen, "IRQ %u: wrote %s, effective affinity is %s (a move may be pending until "
				 "the IRQ next fires)", e[i].key, list, gotl);
			return -EIO;
		}
	}
	return 0;
}

static void irq_release(struct knob *k)
{
	(void)k;
}

const struct knob_ops knob_irq_ops = {
	.kind = "irq_affinity",
	.probe = irq_probe,
	.read = irq_read,
	.write = irq_write,
	.release = irq_release,
};
