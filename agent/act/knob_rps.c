/*
 * knob_rps: RPS and RFS.
 *
 * rps ("POLICY.DEV", CPUMAP "rxqueue:cpulist;..."): /sys/class/net/DEV/queues/rx-N/rps_cpus, a kernel CPU mask
 * (hex, 32-bit groups separated by commas, most significant first, as wide as nr_cpu_ids). The interfaces are
 * those of nginx's network namespace (knob_netdev_path), so a namespaced nginx's loopback or veth can be named.
 * Masks are written in exactly the kernel's own format for this host's nr_cpu_ids
 * (/sys/devices/system/cpu/possible; failing that, the shape of the mask the file shows) and compared as CPU sets
 * on re-read: the kernel silently drops isolated and offline CPUs, which then reads back as a difference (-EIO).
 * An empty list switches RPS off for that queue.
 *
 * rps_flows (INT): net.core.rps_sock_flow_entries, the global RFS table, and with it every rx queue's
 * rps_flow_cnt on the NICs the policy's target matches ("" = all): entries / queues, rounded up to a power of two
 * as Documentation/networking/scaling.rst advises and as the kernel rounds both itself. The value must be 0 (RFS
 * off) or a power of two, since the kernel would round anything else and the read-back would differ.
 * rps_sock_flow_entries exists in the initial network namespace only (it is host-wide), so it is read under the
 * configured root without following nginx's namespace. A failure part way (after the global write) leaves the
 * queues already written; reverting to the old value rewrites them all.
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy.h"
#include "act/knob_io.h"

#define MASK_TEXT_MAX (KNOB_CPUS_MAX / 32 * 9 + 2)
#define FLOW_ENTRIES_MAX ((int64_t)1 << 29) /* the kernel's own limit (rps_sock_flow_sysctl) */

static int queue_path(const struct knob *k, const char *dev, unsigned q, const char *file, char *out, size_t n)
{
	return knob_netdev_path(k->env, out, n, "/sys/class/net/%s/queues/rx-%u/%s", dev, q, file);
}

/* rps_cpus of queue Q: the CPU set, and the file's text (trimmed) into TEXT. */
static int read_mask(const struct knob *k, const char *dev, unsigned q, struct knob_cpuset *s, char *text,
		     size_t tlen)
{
	char path[512];
	int r;

	r = queue_path(k, dev, q, "rps_cpus", path, sizeof(path));
	if (r == 0)
		r = knob_read_file(path, text, tlen);
	if (r == 0)
		r = knob_cpumask_parse(text, strlen(knob_trim(text)), s);
	return r;
}

/* The number of CPUs a mask as printed by the kernel spans: its groups and the width of its first group. */
static unsigned mask_nbits(const char *text)
{
	size_t groups = 1, first = strcspn(text, ",");

	for (const char *p = text; *p; p++)
		groups += *p == ',';
	return (unsigned)((groups - 1) * 32 + first * 4);
}

static int rps_read(struct knob *k, char *out, size_t outlen)
{
	const char *dev = knob_dev(k);
	unsigned *qs;
	struct knob_cpuset s;
	char text[MASK_TEXT_MAX], list[KNOB_VALUE_MAX];
	size_t n, off = 0;
	int r, w;

	if (!dev || outlen == 0)
		return -EINVAL;
	qs = malloc(KNOB_QUEUES_MAX * sizeof(*qs));
	if (!qs)
		return -ENOMEM;
	r = knob_rx_queues(k->env, dev, qs, KNOB_QUEUES_MAX, &n);
	out[0] = '\0';
	for (size_t i = 0; r == 0 && i < n; i++) {
		r = read_mask(k, dev, qs[i], &s, text, sizeof(text));
		if (r < 0)
			break;
		if (knob_cpuset_end(&s) > KNOBVAL_CPUS_MAX || knob_cpulist_format(&s, list, sizeof(list)) < 0) {
			r = -ERANGE;
			break;
		}
		w = snprintf(out + off, outlen - off, "%s%u:%s", i ? ";" : "", qs[i], list);
		if (w < 0 || (size_t)w >= outlen - off) {
			r = -ERANGE;
			break;
		}
		off += (size_t)w;
	}
	if (r < 0)
		out[0] = '\0';
	free(qs);
	return r;
}

static int rps_probe(struct knob *k, char *why, size_t whylen)
{
	const char *dev = knob_dev(k);
	char path[512], val[KNOB_VALUE_MAX];
	unsigned q[1];
	size_t n;
	int r;

	if (!dev || k->pol->type != KNOB_T_CPUMAP) {
		snprintf(why, whylen, "RPS is a per-interface cpumap");
		return -ENOTSUP;
	}
	r = knob_rx_queues(k->env, dev, q, 1, &n);
	if (r < 0 && n == 0) {
		snprintf(why, whylen, "%s: no rx queues (%s)", dev, strerror(-r));
		return -ENOENT;
	}
	if (queue_path(k, dev, q[0], "rps_cpus", path, sizeof(path)) < 0)
		return -ENOTSUP;
	r = knob_can_write(path);
	if (r == -ENOENT) {
		snprintf(why, whylen, "%s: no rps_cpus (kernel built without CONFIG_RPS)", dev);
		return -ENOTSUP;
	}
	if (r < 0) {
		char refused[KNOB_WHY_MAX];

		knob_refusal(path, r, refused, sizeof(refused));
		snprintf(why, whylen, "%s: rps_cpus not writable: %s", dev, refused);
		return -ENOTSUP;
	}
	r = rps_read(k, val, sizeof(val));
	if (r < 0) {
		snprintf(why, whylen, "%s: cannot read rps_cpus: %s", dev, strerror(-r));
		return -ENOTSUP;
	}
	return 0;
}

static int rps_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	const char *dev = knob_dev(k);
	struct knob_map_entry e[KNOBVAL_MAP_MAX];
	struct knob_cpuset want, got;
	char path[512], text[MASK_TEXT_MAX], mask[MASK_TEXT_MAX], list[KNOB_VALUE_MAX], gotl[KNOB_VALUE_MAX];
	unsigned *qs, nbits = 0;
	size_t n, ne;
	int r;

	(void)done;
	(void)ctx;
	if (!dev || k->pol->type != KNOB_T_CPUMAP) {
		snprintf(why, whylen, "not a per-interface cpumap knob");
		return -ENOTSUP;
	}
	r = knob_cpumap_split(value, e, KNOBVAL_MAP_MAX, &ne);
	if (r < 0 || ne == 0) {
		snprintf(why, whylen, "'%.64s' is not a queue:cpulist map", value);
		return -EINVAL;
	}
	qs = malloc(KNOB_QUEUES_MAX * sizeof(*qs));
	if (!qs)
		return -ENOMEM;
	r = knob_rx_queues(k->env, dev, qs, KNOB_QUEUES_MAX, &n);
	if (r < 0) {
		snprintf(why, whylen, "%s: rx queues: %s", dev, strerror(-r));
		goto out;
	}
	if (knob_possible_cpus(k->env, &nbits) < 0) {
		r = read_mask(k, dev, qs[0], &got, text, sizeof(text));
		if (r < 0) {
			snprintf(why, whylen, "%s: cannot tell how many CPUs a mask has: %s", dev, strerror(-r));
			goto out;
		}
		nbits = mask_nbits(text);
	}
	/* Everything is checked before anything is written: a bad value leaves the host as it was. */
	for (size_t i = 0; i < ne; i++) {
		size_t j = 0;

		while (j < n && qs[j] != e[i].key)
			j++;
		knob_cpulist_parse(e[i].list, e[i].len, &want);
		if (j == n || knob_cpuset_end(&want) > nbits) {
			snprintf(why, whylen, "%s: no rx queue %u, or a CPU this host cannot have in '%.*s'", dev,
				 e[i].key, (int)(e[i].len > 64 ? 64 : e[i].len), e[i].list);
			r = -EDOM;
			goto out;
		}
	}
	for (size_t i = 0; i < ne; i++) {
		knob_cpulist_parse(e[i].list, e[i].len, &want);
		knob_cpulist_format(&want, list, sizeof(list));
		r = knob_cpumask_format(&want, nbits, mask, sizeof(mask) - 1);
		if (r == 0) {
			strcat(mask, "\n");
			r = queue_path(k, dev, e[i].key, "rps_cpus", path, sizeof(path));
		}
		if (r == 0)
			r = knob_write_file(path, mask);
		if (r < 0) {
			snprintf(why, whylen, "%s rx-%u: write %s: %s", dev, e[i].key, list, strerror(-r));
			goto out;
		}
		r = read_mask(k, dev, e[i].key, &got, text, sizeof(text));
		if (r < 0) {
			snprintf(why, whylen, "%s rx-%u: wrote %s, cannot read it back: %s", dev, e[i].key, list,
				 strerror(-r));
			r = -EIO;
			goto out;
		}
		if (!knob_cpuset_equal(&want, &got)) {
			if (knob_cpulist_format(&got, gotl, sizeof(gotl)) < 0)
				strcpy(gotl, "?");
			snprintf(why, whylen, "%s rx-%u: wrote %s, reads back %s", dev, e[i].key, list, gotl);
			r = -EIO;
			goto out;
		}
	}
	r = 0;
out:
	free(qs);
	return r;
}

static void rps_release(struct knob *k)
{
	(void)k;
}

const struct knob_ops knob_rps_ops = {
	.kind = "rps",
	.probe = rps_probe,
	.read = rps_read,
	.write = rps_write,
	.release = rps_release,
};

/* ---- rps_flows ------------------------------------------------------------------------------------------- */

static int entries_path(const struct knob *k, char *out, size_t n)
{
	return knob_path(k->env, out, n, "/proc/sys/net/core/rps_sock_flow_entries");
}

/* An integer file (rps_sock_flow_entries, rps_flow_cnt). */
static int read_int(const char *path, int64_t *v)
{
	char buf[64];
	int r = knob_read_file(path, buf, sizeof(buf));

	return r < 0 ? r : knob_parse_i64(knob_trim(buf), v);
}

static int write_int(const char *path, int64_t v, char *why, size_t whylen)
{
	char text[32];
	int64_t got;
	int r;

	snprintf(text, sizeof(text), "%" PRId64 "\n", v);
	r = knob_write_file(path, text);
	if (r < 0) {
		snprintf(why, whylen, "write %" PRId64 " to %s: %s", v, path, strerror(-r));
		return r;
	}
	r = read_int(path, &got);
	if (r < 0) {
		snprintf(why, whylen, "%s: wrote %" PRId64 ", cannot read it back: %s", path, v, strerror(-r));
		return -EIO;
	}
	if (got != v) {
		snprintf(why, whylen, "%s: wrote %" PRId64 ", reads back %" PRId64, path, v, got);
		return -EIO;
	}
	return 0;
}

/* The per-queue flow count for ENTRIES spread over NQ queues. */
static int64_t flow_cnt(int64_t entries, size_t nq)
{
	int64_t per, p = 1;

	if (entries == 0)
		return 0;
	per = entries / (int64_t)nq;
	while (p < per)
		p <<= 1;
	return p;
}

static int flows_read(struct knob *k, char *out, size_t outlen)
{
	char path[512];
	int64_t v;
	int r;

	r = entries_path(k, path, sizeof(path));
	if (r == 0)
		r = read_int(path, &v);
	if (r < 0)
		return r;
	if ((size_t)snprintf(out, outlen, "%" PRId64, v) >= outlen)
		return -ERANGE;
	return 0;
}

static int flows_probe(struct knob *k, char *why, size_t whylen)
{
	char path[512], val[32];
	int r;

	if (k->pol->type != KNOB_T_INT) {
		snprintf(why, whylen, "rps_sock_flow_entries is an integer");
		return -ENOTSUP;
	}
	r = flows_read(k, val, sizeof(val));
	if (r == -ENOENT && knob_netns_not_host(k->env)) {
		snprintf(why, whylen, "net.core.rps_sock_flow_entries: not in this network namespace, which is not the "
			 "host's (a container's): a host-wide sysctl is set on the host");
		return -ENOENT;
	}
	if (r == -ENOENT) {
		snprintf(why, whylen, "no net.core.rps_sock_flow_entries (kernel built without CONFIG_RPS)");
		return -ENOENT;
	}
	if (r < 0) {
		snprintf(why, whylen, "net.core.rps_sock_flow_entries: %s", strerror(-r));
		return -ENOTSUP;
	}
	entries_path(k, path, sizeof(path));
	r = knob_can_write(path);
	if (r < 0) {
		char refused[KNOB_WHY_MAX];

		knob_refusal(path, r, refused, sizeof(refused));
		snprintf(why, whylen, "net.core.rps_sock_flow_entries not writable: %s", refused);
		return -ENOTSUP;
	}
	return 0;
}

static int flows_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	char (*names)[KNOB_IFNAME_MAX] = NULL;
	size_t *nq = NULL, nn = 0, n;
	unsigned *qs = NULL;
	char path[512], text[64];
	int64_t v;
	int r;

	(void)done;
	(void)ctx;
	if (strlen(value) >= sizeof(text) || k->pol->type != KNOB_T_INT) {
		snprintf(why, whylen, "'%.64s' is not an integer", value);
		return -EINVAL;
	}
	strcpy(text, value);
	if (knob_parse_i64(knob_trim(text), &v) < 0) {
		snprintf(why, whylen, "'%.64s' is not an integer", value);
		return -EINVAL;
	}
	if (v < 0 || v > FLOW_ENTRIES_MAX || (v & (v - 1)) != 0) {
		snprintf(why, whylen, "rps_sock_flow_entries must be 0 or a power of two up to 2^29, not %" PRId64
			 " (the kernel would round it)", v);
		return -EDOM;
	}
	names = calloc(KNOB_NICS_MAX, sizeof(*names));
	nq = calloc(KNOB_NICS_MAX, sizeof(*nq));
	qs = malloc(KNOB_QUEUES_MAX * sizeof(*qs));
	if (!names || !nq || !qs) {
		r = -ENOMEM;
		goto out;
	}
	/* Every NIC and its queue count first, so that a listing failure writes nothing. */
	r = knob_ns_nics(k->env, k->pol->target, names, KNOB_NICS_MAX, &nn);
	if (r < 0) {
		snprintf(why, whylen, "listing NICs: %s", strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < nn; i++) {
		r = knob_rx_queues(k->env, names[i], qs, KNOB_QUEUES_MAX, &nq[i]);
		if (r < 0) {
			snprintf(why, whylen, "%s: rx queues: %s", names[i], strerror(-r));
			goto out;
		}
	}
	r = entries_path(k, path, sizeof(path));
	if (r == 0)
		r = write_int(path, v, why, whylen);
	for (size_t i = 0; r == 0 && i < nn; i++) {
		int64_t per = flow_cnt(v, nq[i]);

		r = knob_rx_queues(k->env, names[i], qs, KNOB_QUEUES_MAX, &n);
		if (r < 0) {
			snprintf(why, whylen, "%s: rx queues: %s", names[i], strerror(-r));
			break;
		}
		for (size_t j = 0; r == 0 && j < n; j++) {
			r = knob_netdev_path(k->env, path, sizeof(path), "/sys/class/net/%s/queues/rx-%u/rps_flow_cnt",
				      names[i], qs[j]);
			if (r == 0)
				r = write_int(path, per, why, whylen);
		}
	}
out:
	free(names);
	free(nq);
	free(qs);
	return r;
}

const struct knob_ops knob_rps_flows_ops = {
	.kind = "rps_flows",
	.probe = flows_probe,
	.read = flows_read,
	.write = flows_write,
	.release = rps_release,
};
