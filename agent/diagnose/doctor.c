/* doctor (the daemon side): see doctor.h. */
#define _GNU_SOURCE

#include "diagnose/doctor.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "core/parse.h"
#include "core/policy.h"
#include "diagnose/doctor_conf.h"
#include "api/events.h"
#include "act/knob.h"
#include "act/nginx_ctl.h"
#include "log.h"
#include "observe/sampler.h"
#include "store/store.h"
#include "strutil.h"

#define PERIOD_MS 300000          /* the window is the last full period and the current one: 5 to 10 minutes */
#define LINKS_MAX DOCTOR_NICS_MAX
#define WORKERS_MAX 256
#define LOG_TAIL_BYTES (256u << 10) /* the access log's last lines: a few thousand requests, read in ~1 ms */
#define SMALL_FILE_MAX (4u << 20)   /* /proc/softirqs of a very big host */

/* ---- the window of frames --------------------------------------------------------------------------------- */

/* What a metric id is to the doctor. Summed counters come first, in the order of struct period.sum. */
enum role {
	R_RETRANS, R_OUT_SEGS, R_OVERFLOWS, R_ACTIVE_OPENS, R_ERR_CONN, R_ERR_FILES, R_ERR_PREMATURE, R_ERR_ADDR,
	R_SUMS, /* the number of summed roles */
	R_NONE = R_SUMS, R_ACTIVE, R_ESTAB, R_CLOSE_WAIT, R_TIME_WAIT, R_CPUS, R_NET_RX, R_LINK_DROPS
};

static const struct {
	const char *name;
	enum role role;
} named_roles[] = {
	{ "tcp.retrans_segs", R_RETRANS },
	{ "tcp.out_segs", R_OUT_SEGS },
	{ "tcp.listen_overflows", R_OVERFLOWS },
	{ "tcp.active_opens", R_ACTIVE_OPENS },
	{ "nginx.err.worker_connections", R_ERR_CONN },
	{ "nginx.err.too_many_files", R_ERR_FILES },
	{ "nginx.err.upstream_premature", R_ERR_PREMATURE },
	{ "nginx.err.addr_not_avail", R_ERR_ADDR },
	{ "nginx.active", R_ACTIVE },
	{ "tcp.served.established", R_ESTAB },
	{ "tcp.served.close_wait", R_CLOSE_WAIT },
	{ "tcp.sockstat.time_wait", R_TIME_WAIT },
	{ "sys.cpus", R_CPUS },
};

struct period {
	int64_t start_ms;
	double dt_s;
	double sum[R_SUMS];
	bool has[R_SUMS];
	double peak_active;
	bool has_active;
	double peak_estab;  /* connections established to nginx's ports, the accept queue's included */
	bool has_estab;
	double close_wait_min;
	bool has_close_wait;
	double *net_rx; /* per CPU */
	size_t nnet_rx, net_rx_cap;
	double link_drops[LINKS_MAX];
	bool link_has[LINKS_MAX];
};

struct window {
	struct period cur, prev;
	char links[LINKS_MAX][16];
	size_t nlinks;
	double close_wait_last, time_wait_last, cpus_last;
	bool has_close_wait_last, has_time_wait_last, has_cpus;
	uint8_t *role;   /* by metric id */
	uint16_t *index; /* CPU or link slot */
	uint32_t nroles; /* ids classified: 1 .. nroles - 1 */
};

/* One run of the checks: what it was given (copies, so the pool thread shares nothing with the loop) and found. */
struct job {
	uv_work_t work;
	struct doctor *d;      /* NULL for the one-shot */
	bool since_boot;       /* counters from /proc since boot instead of the window's */
	bool done;
	char root[CONFIG_PATH_MAX];
	char access_log[CONFIG_PATH_MAX];
	pid_t master, worker;
	struct knob_env env;   /* root -> ROOT, nginx_pid -> MASTER: for the sysctl driver's reads */
	struct knob_policy *pol;
	char *dump;
	size_t dumplen;
	char conf_err[512];
	struct doctor_facts facts;
	struct doctor_report rep;
	int rc;
};

struct doctor {
	struct agent *a;
	struct window win;
	struct doctor_state st;
	struct job *job;         /* in flight */
	bool pending;            /* another run when this one ends */
	char pending_why[64];
	bool stopping, started;
	int64_t now_ms, next_ms;
	pid_t last_pid;
	pid_t gen[WORKERS_MAX];  /* the workers when the last run started */
	size_t ngen;
	char last_conf_err[512]; /* logged once per change */
};

static void period_reset(struct period *p, int64_t start_ms)
{
	double *keep = p->net_rx;
	size_t cap = p->net_rx_cap;

	memset(p, 0, sizeof(*p));
	p->start_ms = start_ms;
	p->net_rx = keep;
	p->net_rx_cap = cap;
	if (keep)
		memset(keep, 0, cap * sizeof(*keep));
}

static int link_slot(struct window *w, const char *name, size_t len)
{
	if (len == 0 || len >= sizeof(w->links[0]))
		return -1;
	for (size_t i = 0; i < w->nlinks; i++)
		if (strlen(w->links[i]) == len && memcmp(w->links[i], name, len) == 0)
			return (int)i;
	if (w->nlinks == LINKS_MAX)
		return -1;
	memcpy(w->links[w->nlinks], name, len);
	w->links[w->nlinks][len] = '\0';
	return (int)w->nlinks++;
}

static void classify(struct window *w, uint32_t id, const char *name)
{
	size_t len = strlen(name);
	unsigned cpu;
	int n = 0;

	w->role[id] = R_NONE;
	w->index[id] = 0;
	for (size_t i = 0; i < sizeof(named_roles) / sizeof(named_roles[0]); i++) {
		if (strcmp(name, named_roles[i].name) == 0) {
			w->role[id] = (uint8_t)named_roles[i].role;
			return;
		}
	}
	if (sscanf(name, "softirq.%u.net_rx%n", &cpu, &n) == 1 && (size_t)n == len && cpu < DOCTOR_CPUS_MAX) {
		w->role[id] = R_NET_RX;
		w->index[id] = (uint16_t)cpu;
		return;
	}
	if (strncmp(name, "link.", 5) == 0) {
		const char *dot = strrchr(name + 5, '.');
		int slot;

		if (!dot || (strcmp(dot, ".rx_dropped") != 0 && strcmp(dot, ".rx_missed") != 0))
			return;
		if ((size_t)(dot - name - 5) == 2 && memcmp(name + 5, "lo", 2) == 0)
			return; /* loopback drops are not a NIC's */
		slot = link_slot(w, name + 5, (size_t)(dot - name - 5));
		if (slot >= 0) {
			w->role[id] = R_LINK_DROPS;
			w->index[id] = (uint16_t)slot;
		}
	}
}

/* Classify the ids REG has added since the last call. */
static void classify_new(struct window *w, const struct metric_registry *reg)
{
	uint32_t max = metric_max_id(reg);
	uint8_t *role;
	uint16_t *index;

	if (max < w->nroles)
		return;
	role = realloc(w->role, (size_t)max + 1);
	if (!role)
		return;
	w->role = role;
	index = realloc(w->index, ((size_t)max + 1) * sizeof(*index));
	if (!index)
		return;
	w->index = index;
	for (uint32_t id = w->nroles ? w->nroles : 1; id <= max; id++) {
		const char *name = metric_name(reg, id);

		if (name)
			classify(w, id, name);
		else
			w->role[id] = R_NONE;
	}
	w->nroles = max + 1;
}

static void add_net_rx(struct period *p, size_t cpu, double v)
{
	if (cpu >= p->net_rx_cap) {
		size_t cap = cpu + 1 > 2 * p->net_rx_cap ? cpu + 1 : 2 * p->net_rx_cap;
		double *n = realloc(p->net_rx, cap * sizeof(*n));

		if (!n)
			return;
		memset(n + p->net_rx_cap, 0, (cap - p->net_rx_cap) * sizeof(*n));
		p->net_rx = n;
		p->net_rx_cap = cap;
	}
	p->net_rx[cpu] += v;
	if (cpu + 1 > p->nnet_rx)
		p->nnet_rx = cpu + 1;
}

/* One frame into the window: a lookup per value, no allocation once the ids are known. */
static void window_tick(struct window *w, const struct metric_registry *reg, const struct frame *fr)
{
	struct period *p = &w->cur;

	if (!p->start_ms)
		p->start_ms = fr->ts_ms;
	if (fr->ts_ms - p->start_ms >= PERIOD_MS) {
		struct period old = w->prev;

		w->prev = w->cur;
		w->cur = old;
		period_reset(&w->cur, fr->ts_ms);
	}
	if (fr->dt_s > 0)
		p->dt_s += fr->dt_s;
	classify_new(w, reg);
	for (size_t i = 0; i < fr->n; i++) {
		uint32_t id = fr->vals[i].id;
		double v = fr->vals[i].v;
		enum role r;

		if (id >= w->nroles || !isfinite(v))
			continue;
		r = (enum role)w->role[id];
		if (r < R_SUMS) {
			/* A counter's first tick (dt 0) is no delta. */
			if (fr->dt_s > 0) {
				p->sum[r] += v;
				p->has[r] = true;
			}
			continue;
		}
		switch (r) {
		case R_ACTIVE:
			if (!p->has_active || v > p->peak_active)
				p->peak_active = v;
			p->has_active = true;
			break;
		case R_ESTAB:
			if (!p->has_estab || v > p->peak_estab)
				p->peak_estab = v;
			p->has_estab = true;
			break;
		case R_CLOSE_WAIT:
			if (!p->has_close_wait || v < p->close_wait_min)
				p->close_wait_min = v;
			p->has_close_wait = true;
			w->close_wait_last = v;
			w->has_close_wait_last = true;
			break;
		case R_TIME_WAIT:
			w->time_wait_last = v;
			w->has_time_wait_last = true;
			break;
		case R_CPUS:
			w->cpus_last = v;
			w->has_cpus = true;
			break;
		case R_NET_RX:
			if (fr->dt_s > 0)
				add_net_rx(p, w->index[id], v);
			break;
		case R_LINK_DROPS:
			if (fr->dt_s > 0) {
				p->link_drops[w->index[id]] += v;
				p->link_has[w->index[id]] = true;
			}
			break;
		default:
			break;
		}
	}
}

static int64_t sum_of(const struct window *w, enum role r)
{
	if (!w->prev.has[r] && !w->cur.has[r])
		return DOCTOR_UNKNOWN;
	return (int64_t)llround(w->prev.sum[r] + w->cur.sum[r]);
}

static struct doctor_nic *nic_of(struct doctor_facts *f, const char *name)
{
	for (size_t i = 0; i < f->nnics; i++)
		if (strcmp(f->nics[i].name, name) == 0)
			return &f->nics[i];
	if (f->nnics == DOCTOR_NICS_MAX || strlen(name) >= sizeof(f->nics[0].name))
		return NULL;
	memset(&f->nics[f->nnics], 0, sizeof(f->nics[0]));
	snprintf(f->nics[f->nnics].name, sizeof(f->nics[0].name), "%s", name);
	f->nics[f->nnics].rx_queues = f->nics[f->nnics].irqs = DOCTOR_UNKNOWN;
	return &f->nics[f->nnics++];
}

/* The window's facts into F. */
static void window_facts(const struct window *w, struct doctor_facts *f)
{
	const struct period *a = &w->prev, *b = &w->cur;
	size_t n;

	f->window_s = a->dt_s + b->dt_s;
	f->retrans_segs = sum_of(w, R_RETRANS);
	f->out_segs = sum_of(w, R_OUT_SEGS);
	f->listen_overflows = sum_of(w, R_OVERFLOWS);
	f->active_opens = sum_of(w, R_ACTIVE_OPENS);
	f->err_worker_connections = sum_of(w, R_ERR_CONN);
	f->err_too_many_files = sum_of(w, R_ERR_FILES);
	f->err_upstream_premature = sum_of(w, R_ERR_PREMATURE);
	f->err_addr_not_avail = sum_of(w, R_ERR_ADDR);
	if (a->has_active || b->has_active)
		f->peak_active = (int64_t)fmax(a->has_active ? a->peak_active : 0, b->has_active ? b->peak_active : 0);
	if (a->has_estab || b->has_estab)
		f->peak_established = (int64_t)fmax(a->has_estab ? a->peak_estab : 0, b->has_estab ? b->peak_estab : 0);
	if (a->has_close_wait || b->has_close_wait)
		f->close_wait_min = (int64_t)fmin(a->has_close_wait ? a->close_wait_min : INFINITY,
						  b->has_close_wait ? b->close_wait_min : INFINITY);
	if (w->has_close_wait_last)
		f->close_wait = (int64_t)w->close_wait_last;
	if (w->has_time_wait_last)
		f->time_wait = (int64_t)w->time_wait_last;
	if (w->has_cpus && w->cpus_last >= 1)
		f->cpus = (int64_t)w->cpus_last;
	n = a->nnet_rx > b->nnet_rx ? a->nnet_rx : b->nnet_rx;
	f->nnet_rx = n < DOCTOR_CPUS_MAX ? n : DOCTOR_CPUS_MAX;
	for (size_t i = 0; i < f->nnet_rx; i++)
		f->net_rx[i] = (uint64_t)llround((i < a->nnet_rx ? a->net_rx[i] : 0) + (i < b->nnet_rx ? b->net_rx[i] : 0));
	for (size_t i = 0; i < w->nlinks; i++) {
		struct doctor_nic *nic;

		if (!a->link_has[i] && !b->link_has[i])
			continue;
		nic = nic_of(f, w->links[i]);
		if (nic)
			nic->rx_drops = (int64_t)llround(a->link_drops[i] + b->link_drops[i]);
	}
}

/* ---- the facts the pool thread reads ---------------------------------------------------------------------- */

static void rooted(const struct job *j, char *out, size_t n, const char *rel)
{
	str_rooted(out, n, j->root, "%s", rel);
}

/* The file at REL under the root, whole, NUL-terminated (malloc'd into *OUT). 0 or -errno (-EFBIG). */
static int read_rooted(const struct job *j, const char *rel, char **out, size_t *len)
{
	char path[CONFIG_PATH_MAX + 256];

	*out = NULL;
	rooted(j, path, sizeof(path), rel);
	return nginx_ctl_read_file(path, SMALL_FILE_MAX, out, len);
}

/* A sysctl as nginx's network namespace sees it, through the sysctl driver: up to N integers into V. */
static int sysctl_ints(struct job *j, const char *name, int64_t *v, size_t n)
{
	struct knob k;
	char out[KNOB_VALUE_MAX], *p = out, *end;
	size_t i = 0;
	int r;

	memset(&k, 0, sizeof(k));
	snprintf(j->pol->target, sizeof(j->pol->target), "%s", name);
	j->pol->type = n > 1 ? KNOB_T_INTVEC : KNOB_T_INT;
	k.pol = j->pol;
	k.env = &j->env;
	k.ops = &knob_sysctl_ops;
	if (j->env.sysctl && strncmp(name, "net.", 4) == 0)
		r = j->env.sysctl(j->env.sysctl_ctx, name, out, sizeof(out)); /* the writer's: it may enter the namespace */
	else
		r = knob_sysctl_ops.read(&k, out, sizeof(out));
	if (r < 0)
		return r;
	for (; i < n; i++) {
		long long x = strtoll(p, &end, 10);

		if (end == p)
			break;
		v[i] = x;
		p = end;
	}
	return i == n ? 0 : -EBADMSG;
}

static void read_limits(struct job *j, pid_t pid, int64_t *soft)
{
	char rel[64], *buf;
	size_t len;
	int64_t hard;

	if (pid <= 0)
		return;
	snprintf(rel, sizeof(rel), "/proc/%d/limits", (int)pid);
	if (read_rooted(j, rel, &buf, &len) < 0)
		return;
	if (parse_limits_nofile(buf, len, soft, &hard) < 0)
		*soft = DOCTOR_UNKNOWN;
	free(buf);
}

static void read_governors(struct job *j)
{
	char path[CONFIG_PATH_MAX + 64], rel[96], *buf;
	struct dirent *de;
	size_t len;
	DIR *d;

	rooted(j, path, sizeof(path), "/sys/devices/system/cpu");
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && j->facts.governor_cpus < DOCTOR_CPUS_MAX) {
		unsigned cpu;
		int n = 0;

		if (sscanf(de->d_name, "cpu%u%n", &cpu, &n) != 1 || (size_t)n != strlen(de->d_name))
			continue;
		snprintf(rel, sizeof(rel), "/sys/devices/system/cpu/cpu%u/cpufreq/scaling_governor", cpu);
		if (read_rooted(j, rel, &buf, &len) < 0)
			continue;
		while (len && isspace((unsigned char)buf[len - 1]))
			buf[--len] = '\0';
		j->facts.governor_cpus++;
		if (strcmp(buf, "performance") != 0) {
			if (j->facts.governor_other++ == 0)
				snprintf(j->facts.governor, sizeof(j->facts.governor), "%.31s", buf);
		}
		free(buf);
	}
	closedir(d);
}

static size_t count_entries(const char *path, const char *prefix)
{
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(path);

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

/* Whether some rx queue of NIC has RPS on (a non-zero mask). */
static bool rps_on(struct job *j, const char *nic, int64_t queues)
{
	char rel[128], *buf;
	size_t len;
	bool on = false;

	for (int64_t q = 0; q < queues && q < 1024 && !on; q++) {
		snprintf(rel, sizeof(rel), "/sys/class/net/%.15s/queues/rx-%lld/rps_cpus", nic, (long long)q);
		if (read_rooted(j, rel, &buf, &len) < 0)
			continue;
		for (size_t i = 0; i < len; i++)
			if (isxdigit((unsigned char)buf[i]) && buf[i] != '0')
				on = true;
		free(buf);
	}
	return on;
}

static bool known_queues(const struct doctor_nic *nic)
{
	return nic->rx_queues != DOCTOR_UNKNOWN;
}

static void read_nics(struct job *j)
{
	char path[CONFIG_PATH_MAX + 128], rel[128];
	struct dirent *de;
	struct stat st;
	DIR *d;

	rooted(j, path, sizeof(path), "/sys/class/net");
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct doctor_nic *nic;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "lo") == 0 || strlen(de->d_name) >= 16)
			continue;
		nic = nic_of(&j->facts, de->d_name);
		if (!nic)
			break;
		snprintf(rel, sizeof(rel), "/sys/class/net/%.15s/device", de->d_name);
		rooted(j, path, sizeof(path), rel);
		nic->physical = stat(path, &st) == 0;
		snprintf(rel, sizeof(rel), "/sys/class/net/%.15s/queues", de->d_name);
		rooted(j, path, sizeof(path), rel);
		nic->rx_queues = (int64_t)count_entries(path, "rx-");
		if (nic->rx_queues == 0)
			nic->rx_queues = DOCTOR_UNKNOWN;
		nic->rps = known_queues(nic) && rps_on(j, de->d_name, nic->rx_queues);
		if (nic->physical) {
			size_t n;

			snprintf(rel, sizeof(rel), "/sys/class/net/%.15s/device/msi_irqs", de->d_name);
			rooted(j, path, sizeof(path), rel);
			n = count_entries(path, "");
			if (!n) {
				/* virtio-net: the PCI function is the parent of the virtio device */
				snprintf(rel, sizeof(rel), "/sys/class/net/%.15s/device/../msi_irqs", de->d_name);
				rooted(j, path, sizeof(path), rel);
				n = count_entries(path, "");
			}
			nic->irqs = n ? (int64_t)n : DOCTOR_UNKNOWN;
		}
	}
	closedir(d);
}

static int on_boot_kv(void *ctx, const char *prefix, const char *name, int64_t value)
{
	struct doctor_facts *f = ctx;

	if (strcmp(prefix, "Tcp") == 0 && strcmp(name, "RetransSegs") == 0)
		f->retrans_segs = value;
	else if (strcmp(prefix, "Tcp") == 0 && strcmp(name, "OutSegs") == 0)
		f->out_segs = value;
	else if (strcmp(prefix, "Tcp") == 0 && strcmp(name, "ActiveOpens") == 0)
		f->active_opens = value;
	else if (strcmp(prefix, "TcpExt") == 0 && strcmp(name, "ListenOverflows") == 0)
		f->listen_overflows = value;
	return 0;
}

/* The one-shot has no window: counters since boot (or since nginx's namespace was made). */
static void read_since_boot(struct job *j)
{
	static const char *const files[] = { "snmp", "netstat" };
	struct doctor_facts *f = &j->facts;
	char rel[96], *buf;
	size_t len;

	f->window_s = 0;
	for (size_t i = 0; i < 2; i++) {
		if (j->master > 0)
			snprintf(rel, sizeof(rel), "/proc/%d/net/%s", (int)j->master, files[i]);
		else
			snprintf(rel, sizeof(rel), "/proc/net/%s", files[i]);
		if (read_rooted(j, rel, &buf, &len) == 0) {
			parse_netstat(buf, len, on_boot_kv, f);
			free(buf);
		}
	}
	if (read_rooted(j, "/proc/softirqs", &buf, &len) == 0) {
		uint64_t *tx = malloc(DOCTOR_CPUS_MAX * sizeof(*tx));
		size_t n = 0;

		if (tx && parse_softirqs(buf, len, f->net_rx, tx, DOCTOR_CPUS_MAX, &n) == 0)
			f->nnet_rx = n;
		free(tx);
		free(buf);
	}
	if (j->master > 0)
		snprintf(rel, sizeof(rel), "/proc/%d/net/dev", (int)j->master);
	else
		snprintf(rel, sizeof(rel), "/proc/net/dev");
	if (read_rooted(j, rel, &buf, &len) == 0) {
		struct netdev_row rows[64];
		size_t n = 0;

		if (parse_netdev(buf, len, rows, 64, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				struct doctor_nic *nic;

				if (strcmp(rows[i].name, "lo") == 0 || !(nic = nic_of(f, rows[i].name)))
					continue;
				nic->rx_drops = (int64_t)rows[i].rx_drop;
			}
		}
		free(buf);
	}
}

static int on_upstream(void *ctx, const char *addr, size_t len, uint32_t ms)
{
	doctor_facts_add_upstream(ctx, addr, len, ms);
	return 0;
}

/* The access log's last LOG_TAIL_BYTES: the share of request time spent upstream, and per upstream address. */
static void read_log_tail(struct job *j)
{
	struct doctor_facts *f = &j->facts;
	struct stat st;
	off_t off;
	ssize_t n;
	char *buf, *p, *end;
	int fd;

	if (!j->access_log[0])
		return;
	fd = j->env.open_log ? j->env.open_log(j->env.open_log_ctx, j->access_log) : open(j->access_log, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(buf = malloc(LOG_TAIL_BYTES + 1))) {
		close(fd);
		return;
	}
	off = st.st_size > (off_t)LOG_TAIL_BYTES ? st.st_size - (off_t)LOG_TAIL_BYTES : 0;
	n = pread(fd, buf, LOG_TAIL_BYTES, off);
	close(fd);
	if (n < 0) {
		free(buf);
		return;
	}
	p = buf;
	end = buf + n;
	/* A tail that starts inside a line skips to the next one. */
	if (off > 0) {
		char *nl = memchr(p, '\n', (size_t)(end - p));

		p = nl ? nl + 1 : end;
	}
	f->log_lines = 0;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		struct access_rec rec;
		size_t len;

		if (!nl)
			break; /* a line nginx is still writing */
		len = (size_t)(nl - p);
		if (len && parse_access_line(p, len, &rec) == 0) {
			f->log_lines++;
			f->log_request_ms += rec.request_ms;
			f->log_upstream_ms += rec.upstream_ms;
			parse_access_upstreams(p, len, on_upstream, f);
		}
		p = nl + 1;
	}
	free(buf);
}

/* On the pool: every fact that needs a read, then the configuration and the checks. */
static void job_work(uv_work_t *w)
{
	struct job *j = w->data;
	struct doctor_facts *f = &j->facts;
	struct doctor_conf conf;
	char *buf;
	size_t len;
	int64_t v[2];
	bool have_conf = false;

	if (sysctl_ints(j, "net.core.somaxconn", v, 1) == 0)
		f->somaxconn = v[0];
	if (sysctl_ints(j, "net.ipv4.tcp_tw_recycle", v, 1) == 0)
		f->tw_recycle = v[0];
	if (sysctl_ints(j, "net.ipv4.ip_local_port_range", v, 2) == 0) {
		f->port_lo = v[0];
		f->port_hi = v[1];
	}
	if (sysctl_ints(j, "net.netfilter.nf_conntrack_count", v, 1) == 0 &&
	    sysctl_ints(j, "net.netfilter.nf_conntrack_max", v + 1, 1) == 0) {
		f->conntrack_count = v[0];
		f->conntrack_max = v[1];
	}
	read_limits(j, j->master, &f->master_nofile);
	read_limits(j, j->worker, &f->worker_nofile);
	if (read_rooted(j, "/proc/meminfo", &buf, &len) == 0) {
		uint64_t kb;

		if (parse_meminfo_total(buf, len, &kb) == 0)
			f->mem_total_kb = (int64_t)kb;
		free(buf);
	}
	if (read_rooted(j, "/sys/kernel/mm/transparent_hugepage/enabled", &buf, &len) == 0) {
		if (parse_thp_mode(buf, len, f->thp, sizeof(f->thp)) < 0)
			f->thp[0] = '\0';
		free(buf);
	}
	read_governors(j);
	if (j->since_boot)
		read_since_boot(j);
	read_nics(j);
	read_log_tail(j);
	if (j->dump) {
		struct nginx_conf nc;
		char err[400];
		int r = nginx_conf_parse_owned(j->dump, j->dumplen, &nc, err, sizeof(err));

		/* The dump is the parse's now (freed with it): one copy of it, not two. */
		j->dump = NULL;
		if (r == 0) {
			r = doctor_conf_from_nginx(&nc, &conf, err, sizeof(err));
			nginx_conf_free(&nc);
		}
		if (r == 0)
			have_conf = true;
		else
			snprintf(j->conf_err, sizeof(j->conf_err), "the output of nginx -T: %s", err);
	}
	j->rc = doctor_check(have_conf ? &conf : NULL, j->conf_err, f, &j->rep);
	if (have_conf)
		doctor_conf_free(&conf);
}

/* ---- runs ------------------------------------------------------------------------------------------------- */

static void job_free(struct job *j)
{
	if (!j)
		return;
	free(j->dump);
	free(j->pol);
	doctor_report_free(&j->rep);
	free(j);
}

/* A job with what the loop knows now: the configuration's paths, nginx's pids, stub_status, the window. */
static struct job *job_new(struct agent *a, const struct window *w, bool since_boot)
{
	struct job *j = calloc(1, sizeof(*j));
	const struct probe_health *stub = sampler_health(a->sampler, PROBE_STUB);
	pid_t workers[1];
	unsigned nworkers;

	if (!j || !(j->pol = calloc(1, sizeof(*j->pol)))) {
		free(j);
		return NULL;
	}
	j->work.data = j;
	j->since_boot = since_boot;
	snprintf(j->root, sizeof(j->root), "%s", a->cfg.root);
	snprintf(j->access_log, sizeof(j->access_log), "%s", a->cfg.access_log);
	sampler_nginx(a->sampler, &j->master, &nworkers);
	j->worker = sampler_worker_pids(a->sampler, workers, 1) ? workers[0] : 0;
	j->env.root = j->root;
	j->env.nginx_pid = j->master;
	j->env.sysctl = a->env.sysctl;
	j->env.sysctl_ctx = a->env.sysctl_ctx;
	j->env.open_log = a->env.open_log;
	j->env.open_log_ctx = a->env.open_log_ctx;
	j->pol->kind = POLICY_SYSCTL;
	doctor_facts_init(&j->facts);
	if (w)
		window_facts(w, &j->facts);
	j->facts.master_pid = j->master > 0 ? j->master : DOCTOR_UNKNOWN;
	j->facts.worker_pid = j->worker > 0 ? j->worker : DOCTOR_UNKNOWN;
	snprintf(j->facts.include_dir, sizeof(j->facts.include_dir), "%s", a->cfg.include_dir);
	snprintf(j->facts.access_log, sizeof(j->facts.access_log), "%s", a->cfg.access_log);
	snprintf(j->facts.nginx_halt, sizeof(j->facts.nginx_halt), "%s",
		 nginx_ctl_halted(a->env.nginx, a->env.nginx_pid) ? nginx_ctl_halted(a->env.nginx, a->env.nginx_pid)
								     : "");
	j->facts.backend_keepalive_ms = a->cfg.backend_keepalive_ms;
	if (stub->enabled && (stub->ok || stub->msg[0])) {
		j->facts.stub_known = true;
		j->facts.stub_ok = stub->ok;
		snprintf(j->facts.stub_url, sizeof(j->facts.stub_url), "%s", a->cfg.stub_status_url);
		snprintf(j->facts.stub_error, sizeof(j->facts.stub_error), "%s", stub->msg);
	}
	return j;
}

static void audit_finding(struct doctor *d, const struct doctor_tracked *t)
{
	struct audit_row row;

	memset(&row, 0, sizeof(row));
	row.ts = d->now_ms;
	snprintf(row.actor, sizeof(row.actor), "agent");
	snprintf(row.action, sizeof(row.action), "advisory");
	snprintf(row.outcome, sizeof(row.outcome), "%s", doctor_severity_name(t->f.severity));
	snprintf(row.detail, sizeof(row.detail), "%s%s%s%s: %s; fix: %s", t->f.id, t->f.subject[0] ? "[" : "",
		 t->f.subject, t->f.subject[0] ? "]" : "", t->f.evidence, t->f.fix);
	/* Like every audit row, also an SSE event for the console (when it is stored: the trail is what counts). */
	if (store_audit_append(d->a->store, &row) == 0)
		events_audit(&row);
}

static void log_finding(const struct doctor_finding *f, bool resolved)
{
	static const int prio[] = { LOG_INFO, LOG_NOTICE, LOG_WARNING };
	char fid[DOCTOR_ID_MAX + 16], fsev[32], fsub[DOCTOR_SUBJECT_MAX + 16];
	const char *fields[] = { fid, fsev, fsub, NULL };

	snprintf(fid, sizeof(fid), "NGXAT_ADVISORY=%s", f->id);
	snprintf(fsev, sizeof(fsev), "NGXAT_SEVERITY=%s", doctor_severity_name(f->severity));
	snprintf(fsub, sizeof(fsub), "NGXAT_SUBJECT=%s", f->subject);
	if (resolved)
		log_fields(LOG_INFO, fields, "advisory resolved: %s%s%s%s", f->id, f->subject[0] ? " [" : "",
			   f->subject, f->subject[0] ? "]" : "");
	else
		log_fields(prio[f->severity], fields, "advisory (%s) %s%s%s%s: %s; fix: %s", doctor_severity_name(f->severity),
			   f->id, f->subject[0] ? " [" : "", f->subject, f->subject[0] ? "]" : "", f->evidence, f->fix);
}

static void start(struct doctor *d, const char *why);

static void job_after(uv_work_t *w, int status)
{
	struct job *j = w->data;
	struct doctor *d = j->d;

	j->done = true;
	if (!d)
		return; /* the one-shot reads the job itself */
	d->job = NULL;
	if (status == 0 && j->rc == 0 && !d->stopping && doctor_state_merge(&d->st, &j->rep, d->now_ms) == 0) {
		for (size_t i = 0; i < d->st.n; i++) {
			const struct doctor_tracked *t = &d->st.v[i];

			if (t->fresh)
				log_finding(&t->f, false);
			if (t->escalated)
				audit_finding(d, t);
		}
		for (size_t i = 0; i < d->st.ngone; i++)
			log_finding(&d->st.gone[i], true);
	} else if (!d->stopping) {
		log_err("doctor: the checks did not run: %s", status ? uv_strerror(status) : strerror(-j->rc));
	}
	if (strcmp(j->conf_err, d->last_conf_err) != 0) {
		if (j->conf_err[0])
			log_warn("doctor: %s", j->conf_err);
		snprintf(d->last_conf_err, sizeof(d->last_conf_err), "%s", j->conf_err);
	}
	job_free(j);
	if (d->pending && !d->stopping) {
		d->pending = false;
		start(d, d->pending_why);
	}
}

static void queue(struct job *j, uv_loop_t *loop)
{
	int r = uv_queue_work(loop, &j->work, job_work, job_after);

	if (r < 0) {
		/* Cannot happen with a live loop; the run is lost, the next one is on schedule. */
		j->rc = -EAGAIN;
		job_after(&j->work, r);
	}
}

static void on_dump(int rc, const char *msg, char *out, size_t len, void *ctx)
{
	struct job *j = ctx;
	struct doctor *d = j->d;

	j->dump = out;
	j->dumplen = len;
	j->facts.conf_rc = rc == -EFBIG || rc == -ENOMEM ? rc : 0;
	if (rc < 0 && msg && strstr(msg, "nginx -T"))
		snprintf(j->conf_err, sizeof(j->conf_err), "%s", msg);
	else if (rc < 0)
		snprintf(j->conf_err, sizeof(j->conf_err), "nginx -T: %s", msg && msg[0] ? msg : strerror(-rc));
	if (d && d->stopping) {
		d->job = NULL;
		job_free(j);
		return;
	}
	queue(j, d ? d->a->loop : j->env.loop);
}

/* nginx -T as a child, then the rest on the pool; the job is the doctor's until job_after. */
static void launch(struct job *j, struct agent *a)
{
	int r = nginx_ctl_dump(&a->env, on_dump, j);

	if (r < 0)
		on_dump(r, "cannot start nginx -T", NULL, 0, j);
}

static void start(struct doctor *d, const char *why)
{
	struct job *j;

	if (d->stopping)
		return;
	if (d->job) {
		d->pending = true;
		snprintf(d->pending_why, sizeof(d->pending_why), "%s", why);
		return;
	}
	d->next_ms = d->now_ms + d->a->cfg.doctor_interval_ms;
	d->ngen = sampler_worker_pids(d->a->sampler, d->gen, WORKERS_MAX);
	j = job_new(d->a, &d->win, false);
	if (!j) {
		log_err("doctor: out of memory");
		return;
	}
	j->d = d;
	j->env.loop = d->a->loop;
	d->job = j;
	log_debug("doctor: checking (%s)", why);
	launch(j, d->a);
}

/* ---- the interface ---------------------------------------------------------------------------------------- */

int doctor_new(struct agent *a, struct doctor **out)
{
	struct doctor *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->a = a;
	*out = d;
	return 0;
}

void doctor_free(struct doctor *d)
{
	if (!d)
		return;
	/* A job still queued would write to D; the loop has stopped, so none is (see doctor.h). */
	if (d->job)
		d->job->d = NULL;
	doctor_state_free(&d->st);
	free(d->win.cur.net_rx);
	free(d->win.prev.net_rx);
	free(d->win.role);
	free(d->win.index);
	free(d);
}

void doctor_run(struct doctor *d, int64_t now_ms, const char *why)
{
	/* A run between two ticks is stamped with its own time: with the last tick's, checked_ms would not move when
	 * it ends before the next tick, and the run would look lost. */
	if (now_ms > d->now_ms)
		d->now_ms = now_ms;
	start(d, why);
}

void doctor_stop(struct doctor *d)
{
	if (d)
		d->stopping = true;
}

bool doctor_busy(const struct doctor *d)
{
	return d->job != NULL;
}

const struct doctor_state *doctor_advisories(const struct doctor *d)
{
	return &d->st;
}

/* Whether the workers share no pid with those of the last run: a reload replaced them all. */
static bool new_generation(const struct doctor *d, const pid_t *w, size_t n)
{
	if (!n || !d->ngen)
		return false;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < d->ngen; k++)
			if (w[i] == d->gen[k])
				return false;
	return true;
}

void doctor_tick(struct doctor *d, const struct frame *fr)
{
	pid_t pid, w[WORKERS_MAX];
	unsigned nw;
	size_t n;

	d->now_ms = fr->ts_ms;
	window_tick(&d->win, d->a->reg, fr);
	if (d->stopping)
		return;
	sampler_nginx(d->a->sampler, &pid, &nw);
	n = sampler_worker_pids(d->a->sampler, w, WORKERS_MAX);
	if (!d->started) {
		d->started = true;
		start(d, "start");
	} else if (pid && pid != d->last_pid) {
		start(d, d->last_pid ? "nginx master pid changed" : "nginx found");
	} else if (new_generation(d, w, n)) {
		start(d, "nginx reloaded: new workers");
	} else if (d->now_ms >= d->next_ms) {
		start(d, "interval");
	}
	if (pid)
		d->last_pid = pid;
}

/* ---- the one-shot ----------------------------------------------------------------------------------------- */

int doctor_run_once(struct agent *a, int64_t now_ms, struct doctor_state *st, char *err, size_t errlen)
{
	struct window *w = calloc(1, sizeof(*w));
	struct job *j = NULL;
	int r = 0;

	if (!w) {
		r = -ENOMEM;
		goto out;
	}
	/* One frame: nginx's pid, its workers, the gauges (CPUs, TIME_WAIT, CLOSE_WAIT) and stub_status. */
	agent_collect_frame(a, now_ms, 0, NULL, NULL);
	window_tick(w, a->reg, &a->fr);
	j = job_new(a, w, true);
	if (!j) {
		r = -ENOMEM;
		goto out;
	}
	j->env.loop = a->loop;
	agent_nginx_follow(a, j->master);
	launch(j, a);
	while (!j->done)
		uv_run(a->loop, UV_RUN_ONCE);
	r = j->rc;
	if (r == 0)
		r = doctor_state_merge(st, &j->rep, now_ms);
	if (r < 0)
		snprintf(err, errlen, "the checks did not run: %s", strerror(-r));
out:
	job_free(j);
	if (w) {
		free(w->cur.net_rx);
		free(w->prev.net_rx);
		free(w->role);
		free(w->index);
	}
	free(w);
	return r;
}
