/*
 * knob_sched: the CFS/EEVDF scheduler slice (INT, nanoseconds), wherever this kernel keeps it. In order:
 *   /proc/sys/kernel/sched_min_granularity_ns      kernels before 5.13 (with CONFIG_SCHED_DEBUG)
 *   /sys/kernel/debug/sched/base_slice_ns          6.6 and later (EEVDF)
 *   /sys/kernel/debug/sched/min_granularity_ns     5.13 to 6.5
 * The first that can be both read and opened for writing is the knob, looked up again at every call (debugfs can
 * be mounted or unmounted under us). When none can, the knob is unsupported and the probe says why: debugfs not
 * mounted (an empty /sys/kernel/debug), refused (EPERM: kernel lockdown restricts debugfs), or not present.
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/policy.h"
#include "act/knob_io.h"

static const char *const places[] = {
	"/proc/sys/kernel/sched_min_granularity_ns",
	"/sys/kernel/debug/sched/base_slice_ns",
	"/sys/kernel/debug/sched/min_granularity_ns",
};
#define NPLACES (sizeof(places) / sizeof(places[0]))

static int read_ns(const char *path, int64_t *v)
{
	char buf[64];
	int r = knob_read_file(path, buf, sizeof(buf));

	if (r == 0)
		r = knob_parse_i64(knob_trim(buf), v);
	return r;
}

/* Whether debugfs shows anything at ROOT/sys/kernel/debug (unmounted, it is an empty directory). */
static int debugfs_state(const struct knob_env *env)
{
	char path[512];
	struct dirent *de;
	DIR *d;
	int r = -ENOENT;

	if (knob_path(env, path, sizeof(path), "/sys/kernel/debug") < 0)
		return -ENAMETOOLONG;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			r = 0;
			break;
		}
	closedir(d);
	return r;
}

/*
 * The slice's file into PATH. 0, or -ENOTSUP with the reason in WHY (which may be NULL). ERRS records, per place,
 * why it was passed over, so the reason names the most telling failure.
 */
static int locate(const struct knob *k, char *path, size_t n, char *why, size_t whylen)
{
	int errs[NPLACES], r;
	int64_t v;

	for (size_t i = 0; i < NPLACES; i++) {
		r = knob_path(k->env, path, n, "%s", places[i]);
		if (r == 0)
			r = read_ns(path, &v);
		if (r == 0)
			r = knob_can_write(path);
		if (r == 0)
			return 0;
		errs[i] = r;
	}
	if (!why)
		return -ENOTSUP;
	for (size_t i = 0; i < NPLACES; i++)
		if (errs[i] == -EPERM && strncmp(places[i], "/sys/kernel/debug/", 18) == 0) {
			snprintf(why, whylen, "%s: %s (kernel lockdown restricts debugfs)", places[i], strerror(EPERM));
			return -ENOTSUP;
		}
	for (size_t i = 0; i < NPLACES; i++)
		if (errs[i] != -ENOENT) {
			snprintf(why, whylen, "%s: %s", places[i], strerror(-errs[i]));
			return -ENOTSUP;
		}
	if (debugfs_state(k->env) < 0)
		snprintf(why, whylen, "no sched_min_granularity_ns, and debugfs is not mounted on /sys/kernel/debug");
	else
		snprintf(why, whylen, "this kernel has no scheduler slice knob (sched_min_granularity_ns, "
			 "debugfs sched/base_slice_ns or sched/min_granularity_ns)");
	return -ENOTSUP;
}

static int sched_probe(struct knob *k, char *why, size_t whylen)
{
	char path[512];

	if (k->pol->type != KNOB_T_INT) {
		snprintf(why, whylen, "the scheduler slice is an integer (ns)");
		return -ENOTSUP;
	}
	return locate(k, path, sizeof(path), why, whylen);
}

static int sched_read(struct knob *k, char *out, size_t outlen)
{
	char path[512];
	int64_t v;
	int r;

	r = locate(k, path, sizeof(path), NULL, 0);
	if (r == 0)
		r = read_ns(path, &v);
	if (r < 0)
		return r;
	if ((size_t)snprintf(out, outlen, "%" PRId64, v) >= outlen)
		return -ERANGE;
	return 0;
}

static int sched_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	char path[512], text[32];
	int64_t v, got;
	int r;

	(void)done;
	(void)ctx;
	if (strlen(value) >= sizeof(text)) {
		snprintf(why, whylen, "'%.64s' is not an integer", value);
		return -EINVAL;
	}
	strcpy(text, value);
	if (k->pol->type != KNOB_T_INT || knob_parse_i64(knob_trim(text), &v) < 0 || v <= 0) {
		snprintf(why, whylen, "'%.64s' is not a positive integer", value);
		return -EINVAL;
	}
	r = locate(k, path, sizeof(path), why, whylen);
	if (r < 0)
		return r;
	snprintf(text, sizeof(text), "%" PRId64 "\n", v);
	r = knob_write_file(path, text);
	if (r < 0) {
		snprintf(why, whylen, "write %" PRId64 " to %s: %s", v, path, strerror(-r));
		return r;
	}
	r = read_ns(path, &got);
	if (r < 0) {
		snprintf(why, whylen, "wrote %" PRId64 ", cannot read it back: %s", v, strerror(-r));
		return -EIO;
	}
	if (got != v) {
		snprintf(why, whylen, "wrote %" PRId64 ", reads back %" PRId64, v, got);
		return -EIO;
	}
	return 0;
}

static void sched_release(struct knob *k)
{
	(void)k;
}

const struct knob_ops knob_sched_ops = {
	.kind = "sched_slice",
	.probe = sched_probe,
	.read = sched_read,
	.write = sched_write,
	.release = sched_release,
};
