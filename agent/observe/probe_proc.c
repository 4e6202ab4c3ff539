/*
 * probe_proc: the kernel's counters in /proc and /sys: TCP (netstat, snmp, sockstat) and softnet_stat in nginx's
 * network namespace, softirqs, CPU time (stat), and the NICs' IRQs (found in /sys/class/net, counted from
 * /sys/kernel/irq or /proc/interrupts). Rows of the sampler's probe table; see sampler_kit.h for the rules.
 */
#include "build-config.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/parse.h"
#include "observe/sampler_kit.h"
#include "strutil.h"

#define NET_IRQS_EVERY_MS 60000 /* how often NICs and their IRQs are discovered again */

/* What the sampler takes from netstat and snmp (of ~300 names); parse_netstat_pick finds them in one pass. */
static const struct tcp_key {
	struct netstat_want w;
	const char *metric;
	bool gauge;
} tcp_keys[NTCP] = {
	{{"Tcp", "ActiveOpens"}, "tcp.active_opens", false},
	{{"Tcp", "AttemptFails"}, "tcp.attempt_fails", false},
	{{"Tcp", "CurrEstab"}, "tcp.curr_estab", true},
	{{"Tcp", "EstabResets"}, "tcp.estab_resets", false},
	{{"Tcp", "InErrs"}, "tcp.in_errs", false},
	{{"Tcp", "InSegs"}, "tcp.in_segs", false},
	{{"Tcp", "OutSegs"}, "tcp.out_segs", false},
	{{"Tcp", "PassiveOpens"}, "tcp.passive_opens", false},
	{{"Tcp", "RetransSegs"}, "tcp.retrans_segs", false},
	{{"TcpExt", "ListenDrops"}, "tcp.listen_drops", false},
	{{"TcpExt", "ListenOverflows"}, "tcp.listen_overflows", false},
	{{"TcpExt", "SyncookiesSent"}, "tcp.syncookies_sent", false},
	{{"TcpExt", "TCPAbortOnMemory"}, "tcp.abort_on_memory", false},
	{{"TcpExt", "TCPBacklogDrop"}, "tcp.backlog_drop", false},
	{{"TcpExt", "TCPReqQFullDrop"}, "tcp.reqq_full_drop", false},
	{{"TcpExt", "TCPTimeWaitOverflow"}, "tcp.timewait_overflow", false},
};

/*
 * The network-namespace view: nginx's when its pid is known, else the agent's. No fallback from one to the other
 * within a tick: counters of two namespaces must never be subtracted from each other.
 */
static int read_netns(struct sampler *s, struct procfile *pf, const char *file)
{
	char path[128];

	if (s->nginx_pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)s->nginx_pid, file);
	else
		snprintf(path, sizeof(path), "/proc/net/%s", file);
	return sampler_read(s, pf, path);
}

static const struct {
	const char *key, *metric;
} sockstat_keys[] = {
	{"inuse", "tcp.sockstat.inuse"},
	{"orphan", "tcp.sockstat.orphan"},
	{"tw", "tcp.sockstat.time_wait"},
	{"mem", "tcp.sockstat.mem_pages"},
};

struct kv_ctx {
	struct sampler *s;
	struct frame *fr;
	unsigned found;
};

static int on_sockstat(void *arg, const char *prefix, const char *name, int64_t value)
{
	struct kv_ctx *c = arg;

	if (strcmp(prefix, "TCP") != 0)
		return 0;
	for (size_t i = 0; i < sizeof(sockstat_keys) / sizeof(sockstat_keys[0]); i++)
		if (strcmp(sockstat_keys[i].key, name) == 0)
			sampler_put_gauge(c->s, c->fr, sockstat_keys[i].metric, (double)value);
	return 0;
}

/*
 * net.ipv4.tcp_max_orphans beside sockstat's orphan count (host-wide, as the limit is): orphans are a limit only
 * near it, where the kernel resets connections instead ("too many orphaned sockets"). Optional: a kernel or a fake
 * root without the file gives no metric, not a failing probe.
 */
/* A setting, not a counter: read every ORPHANS_EVERY_MS (a /proc/sys open each tick cost 3% of the loop thread's
 * CPU), the value it said put in every frame between. */
#define ORPHANS_EVERY_MS 10000
static void put_max_orphans(struct sampler *s, struct frame *fr)
{
	char text[32], *end;
	long long v;

	if (sampler_due(s, s->orphans_tick, ORPHANS_EVERY_MS)) {
		s->orphans_tick = s->tick;
		s->max_orphans = NAN;
		if (sampler_read(s, &s->pf[PF_SCRATCH], "/proc/sys/net/ipv4/tcp_max_orphans") == 0 && s->pb.len > 0 &&
		    s->pb.len < sizeof(text)) {
			memcpy(text, s->pb.data, s->pb.len);
			text[s->pb.len] = '\0';
			errno = 0;
			v = strtoll(text, &end, 10);
			if (errno == 0 && end != text && (*end == '\n' || *end == '\0') && v >= 0)
				s->max_orphans = (double)v;
		}
	}
	if (isfinite(s->max_orphans))
		sampler_put_gauge(s, fr, "tcp.max_orphans", s->max_orphans);
}

void probe_proc_netstat(struct sampler *s, struct frame *fr)
{
	struct kv_ctx c = {.s = s, .fr = fr};
	static const char *const files[] = {"netstat", "snmp"};
	static const enum pf_slot slots[] = {PF_NETSTAT, PF_SNMP};
	int64_t vals[NTCP];
	uint64_t found = 0;
	int r;

	/* parse_netstat_pick takes the names as one array: copied out of tcp_keys on the first run. */
	if (!s->tcp_want[0].prefix)
		for (size_t i = 0; i < NTCP; i++)
			s->tcp_want[i] = tcp_keys[i].w;
	/* Both files parse before any value is used: half a file would look like counters that stopped moving. */
	for (size_t i = 0; i < 2; i++) {
		r = read_netns(s, &s->pf[slots[i]], files[i]);
		if (r == 0)
			r = parse_netstat_pick(s->pb.data, s->pb.len, s->tcp_want, NTCP, vals, &found);
		if (r < 0) {
			sampler_probe_fail(s, fr, PROBE_NETSTAT, r, "%s: %s", files[i], strerror(-r));
			return;
		}
	}
	for (size_t i = 0; i < NTCP; i++) {
		if (!(found >> i & 1))
			continue;
		if (tcp_keys[i].gauge)
			sampler_put_gauge(s, fr, tcp_keys[i].metric, (double)vals[i]);
		else if (vals[i] >= 0)
			sampler_put_counter(s, fr, tcp_keys[i].metric, (uint64_t)vals[i]);
	}
	r = read_netns(s, &s->pf[PF_SOCKSTAT], "sockstat");
	if (r == 0)
		r = parse_sockstat(s->pb.data, s->pb.len, on_sockstat, &c);
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_NETSTAT, r, "sockstat: %s", strerror(-r));
		return;
	}
	put_max_orphans(s, fr);
	sampler_probe_ok(s, fr, PROBE_NETSTAT);
}

void probe_proc_softnet(struct sampler *s, struct frame *fr)
{
	struct softnet_cpu rows[MAX_CPUS];
	uint64_t processed = 0, dropped = 0, squeeze = 0;
	size_t n = 0;
	int r = read_netns(s, &s->pf[PF_SOFTNET], "softnet_stat");

	if (r == 0)
		r = parse_softnet(s->pb.data, s->pb.len, rows, MAX_CPUS, &n);
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_SOFTNET, r, "softnet_stat: %s", strerror(-r));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t cpu = rows[i].cpu;

		sampler_putk_counter(s, fr, SAMPLER_KEY(K_SOFTNET, cpu, 0), rows[i].processed, "softnet.%u.processed",
				     cpu);
		sampler_putk_counter(s, fr, SAMPLER_KEY(K_SOFTNET, cpu, 1), rows[i].dropped, "softnet.%u.dropped", cpu);
		sampler_putk_counter(s, fr, SAMPLER_KEY(K_SOFTNET, cpu, 2), rows[i].time_squeeze,
				     "softnet.%u.time_squeeze", cpu);
		processed += rows[i].processed;
		dropped += rows[i].dropped;
		squeeze += rows[i].time_squeeze;
	}
	/* softnet counters are 32-bit in the kernel: a wrap on one CPU makes the total go backwards and that
	 * tick's total is then missing, as it should be. */
	sampler_put_counter(s, fr, "softnet.processed", processed);
	sampler_put_counter(s, fr, "softnet.dropped", dropped);
	sampler_put_counter(s, fr, "softnet.time_squeeze", squeeze);
	sampler_probe_ok(s, fr, PROBE_SOFTNET);
}

void probe_proc_softirqs(struct sampler *s, struct frame *fr)
{
	uint64_t rx[MAX_CPUS], tx[MAX_CPUS], trx = 0, ttx = 0;
	size_t n = 0;
	int r = sampler_read(s, &s->pf[PF_SOFTIRQS], "/proc/softirqs");

	if (r == 0)
		r = parse_softirqs(s->pb.data, s->pb.len, rx, tx, MAX_CPUS, &n);
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_SOFTIRQS, r, "softirqs: %s", strerror(-r));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		sampler_putk_counter(s, fr, SAMPLER_KEY(K_SOFTIRQ, i, 0), rx[i], "softirq.%zu.net_rx", i);
		sampler_putk_counter(s, fr, SAMPLER_KEY(K_SOFTIRQ, i, 1), tx[i], "softirq.%zu.net_tx", i);
		trx += rx[i];
		ttx += tx[i];
	}
	sampler_put_counter(s, fr, "softirq.net_rx", trx);
	sampler_put_counter(s, fr, "softirq.net_tx", ttx);
	sampler_probe_ok(s, fr, PROBE_SOFTIRQS);
}

static uint64_t cpu_sum(const struct cpu_times *t)
{
	return t->user + t->nice + t->system + t->idle + t->iowait + t->irq + t->softirq + t->steal;
}

/* Shares of one CPU's time in this tick, in percent. */
static void put_cpu_shares(struct sampler *s, struct frame *fr, const char *label, size_t slot,
			   const struct cpu_times *now)
{
	const struct cpu_times *p = &s->prev_cpu[slot];
	uint64_t total;
	static const char *const names[] = {"user", "system", "irq", "softirq", "idle", "iowait", "steal"};
	uint64_t a[7], b[7];

	if (s->have_prev_cpu[slot] && cpu_sum(now) > cpu_sum(p)) {
		a[0] = now->user + now->nice, b[0] = p->user + p->nice;
		a[1] = now->system, b[1] = p->system;
		a[2] = now->irq, b[2] = p->irq;
		a[3] = now->softirq, b[3] = p->softirq;
		a[4] = now->idle, b[4] = p->idle;
		a[5] = now->iowait, b[5] = p->iowait;
		a[6] = now->steal, b[6] = p->steal;
		total = cpu_sum(now) - cpu_sum(p);
		for (size_t i = 0; i < 7; i++)
			sampler_putk_gauge(s, fr, SAMPLER_KEY(K_CPU, slot, i),
				   a[i] >= b[i] ? 100.0 * (double)(a[i] - b[i]) / (double)total : NAN, "cpu.%s.%s",
				   label, names[i]);
	}
	s->prev_cpu[slot] = *now;
	s->have_prev_cpu[slot] = true;
}

void probe_proc_stat(struct sampler *s, struct frame *fr)
{
	struct cpu_times cpus[MAX_CPUS];
	struct proc_stat st = {.cpus = cpus};
	char label[16];
	int r = sampler_read(s, &s->pf[PF_STAT], "/proc/stat");

	if (r == 0)
		r = parse_stat(s->pb.data, s->pb.len, &st, MAX_CPUS);
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_STAT, r, "stat: %s", strerror(-r));
		return;
	}
	put_cpu_shares(s, fr, "all", 0, &st.total);
	for (size_t i = 0; i < st.ncpu; i++) {
		if (st.cpus[i].cpu < 0 || st.cpus[i].cpu >= MAX_CPUS)
			continue;
		snprintf(label, sizeof(label), "%d", st.cpus[i].cpu);
		put_cpu_shares(s, fr, label, (size_t)st.cpus[i].cpu + 1, &st.cpus[i]);
	}
	sampler_put_counter(s, fr, "sys.ctxt", st.ctxt);
	sampler_put_gauge(s, fr, "sys.procs_running", (double)st.procs_running);
	sampler_put_gauge(s, fr, "sys.cpus", (double)st.ncpu);
	sampler_probe_ok(s, fr, PROBE_STAT);
}

static void add_net_irq(struct sampler *s, unsigned irq)
{
	for (size_t i = 0; i < s->nnet_irqs; i++)
		if (s->net_irqs[i] == irq)
			return;
	if (s->nnet_irqs < MAX_NET_IRQS)
		s->net_irqs[s->nnet_irqs++] = irq;
}

/* The IRQs of a NIC's PCI function: DEV/device/msi_irqs, or its parent's for virtio-net. */
static void add_msi_irqs(struct sampler *s, const char *dev)
{
	static const char *const where[] = {"device/msi_irqs", "device/../msi_irqs"};
	char path[CONFIG_PATH_MAX + 96];
	struct dirent *de;
	DIR *d = NULL;

	for (size_t i = 0; i < 2 && !d; i++) {
		sampler_rooted(s, path, sizeof(path), "/sys/class/net/%.16s/%s", dev, where[i]);
		d = opendir(path);
	}
	if (!d)
		return;
	while ((de = readdir(d))) {
		int64_t irq;

		if (str_to_i64(de->d_name, 0, 1 << 20, &irq) == 0)
			add_net_irq(s, (unsigned)irq);
	}
	closedir(d);
}

static bool is_net_irq(const struct sampler *s, const char *desc)
{
	if (strstr(desc, "virtio") && (strstr(desc, "-input") || strstr(desc, "-output")))
		return true;
	for (size_t i = 0; i < s->nnetifs; i++) {
		const char *p = strstr(desc, s->netifs[i]);
		size_t n = strlen(s->netifs[i]);

		if (p && (p == desc || p[-1] == ' ') && (p[n] == '\0' || p[n] == '-' || p[n] == ' ' || p[n] == '@'))
			return true;
	}
	return false;
}

/* NIC IRQs named in /proc/interrupts (drivers without msi_irqs in sysfs). */
static void add_irqs_by_name(struct sampler *s, const struct irq_table *t)
{
	for (size_t i = 0; i < t->nirq; i++) {
		int64_t irq;

		if (is_net_irq(s, t->rows[i].desc) && str_to_i64(t->rows[i].id, 0, 1 << 20, &irq) == 0)
			add_net_irq(s, (unsigned)irq);
	}
}

/*
 * Which IRQs belong to NICs, and whether each can be read alone. /proc/interrupts costs the kernel a line per IRQ
 * per CPU to format (several ms on a big host), so it is read only here, once a minute, unless the kernel lacks
 * /sys/kernel/irq/N/per_cpu_count.
 */
static void discover_net_irqs(struct sampler *s)
{
	char path[CONFIG_PATH_MAX + 64];
	struct dirent *de;
	DIR *d;

	s->netifs_tick = s->tick;
	s->nnetifs = s->nnet_irqs = 0;
	sampler_close_files(s->pf_irq, KEEP_MAX); /* an IRQ freed since would otherwise stay open */
	sampler_rooted(s, path, sizeof(path), "/sys/class/net");
	d = opendir(path);
	if (d) {
		while ((de = readdir(d)) && s->nnetifs < 16) {
			if (de->d_name[0] == '.' || strcmp(de->d_name, "lo") == 0 || strlen(de->d_name) >= 16)
				continue;
			strcpy(s->netifs[s->nnetifs++], de->d_name);
			add_msi_irqs(s, de->d_name);
		}
		closedir(d);
	}
	if (s->nnet_irqs == 0 && sampler_read(s, &s->pf[PF_INTERRUPTS], "/proc/interrupts") == 0) {
		struct irq_table t = {0};

		if (parse_interrupts(s->pb.data, s->pb.len, &t) == 0)
			add_irqs_by_name(s, &t);
		irq_table_free(&t);
	}
	s->net_irqs_sysfs = false;
	if (s->nnet_irqs) {
		sampler_rooted(s, path, sizeof(path), "/sys/kernel/irq/%u/per_cpu_count", s->net_irqs[0]);
		s->net_irqs_sysfs = access(path, R_OK) == 0;
	}
}

static void put_irq(struct sampler *s, struct frame *fr, unsigned irq, const uint64_t *counts, size_t n)
{
	uint64_t total = 0;

	for (size_t c = 0; c < n; c++) {
		sampler_putk_counter(s, fr, SAMPLER_KEY(K_IRQ, irq, c), counts[c], "irq.%u.%zu", irq, c);
		total += counts[c];
	}
	sampler_putk_counter(s, fr, SAMPLER_KEY(K_IRQ, irq, 0xffff), total, "irq.%u.total", irq);
}

/* Old kernels: the whole /proc/interrupts every tick, NIC rows only (columns are online CPUs in order). */
static int irqs_from_proc(struct sampler *s, struct frame *fr)
{
	struct irq_table t = {0};
	int r = sampler_read(s, &s->pf[PF_INTERRUPTS], "/proc/interrupts");

	if (r == 0)
		r = parse_interrupts(s->pb.data, s->pb.len, &t);
	if (r < 0)
		return r;
	for (size_t i = 0; i < t.nirq; i++) {
		int64_t irq;

		if (str_to_i64(t.rows[i].id, 0, 1 << 20, &irq) < 0)
			continue;
		for (size_t j = 0; j < s->nnet_irqs; j++)
			if (s->net_irqs[j] == (unsigned)irq)
				put_irq(s, fr, (unsigned)irq, &t.counts[i * t.ncpu], t.ncpu);
	}
	irq_table_free(&t);
	return 0;
}

void probe_proc_interrupts(struct sampler *s, struct frame *fr)
{
	uint64_t counts[MAX_CPUS];
	char path[64];
	size_t n;
	int r = 0;

	if (sampler_due(s, s->netifs_tick, NET_IRQS_EVERY_MS))
		discover_net_irqs(s);
	if (!s->net_irqs_sysfs) {
		r = irqs_from_proc(s, fr);
	} else {
		for (size_t i = 0; i < s->nnet_irqs && r == 0; i++) {
			snprintf(path, sizeof(path), "/sys/kernel/irq/%u/per_cpu_count", s->net_irqs[i]);
			r = sampler_read(s, i < KEEP_MAX ? &s->pf_irq[i] : &s->pf[PF_SCRATCH], path);
			if (r == 0)
				r = parse_irq_counts(s->pb.data, s->pb.len, counts, MAX_CPUS, &n);
			if (r == 0) {
				put_irq(s, fr, s->net_irqs[i], counts, n);
			}
		}
		if (r < 0)
			s->netifs_tick = 0; /* an IRQ went away (driver reload): discover again next tick */
	}
	if (r < 0) {
		sampler_probe_fail(s, fr, PROBE_INTERRUPTS, r, "NIC IRQ counts: %s", strerror(-r));
		return;
	}
	sampler_put_gauge(s, fr, "irq.net_irqs", (double)s->nnet_irqs);
	sampler_probe_ok(s, fr, PROBE_INTERRUPTS);
}
