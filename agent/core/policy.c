#include "policy.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- tables ------------------------------------------------------------------------------------------------ */

enum key_id {
	K_KIND, K_TARGET, K_CONTEXT, K_TYPE, K_MIN, K_MAX, K_VALUES, K_STEP, K_MAX_STEP, K_TRIGGER, K_OBJECTIVE,
	K_GUARDRAILS, K_SETTLE, K_APPROVAL, K_ENABLED, K_CONSTRAINT, K_SETTLE_MIN, K_COUNT
};

_Static_assert(K_COUNT <= POLICY_KEYS_MAX, "key_line[] of struct knob_policy is too small");

static const char *const key_names[K_COUNT] = {
	[K_KIND] = "kind",           [K_TARGET] = "target",         [K_CONTEXT] = "context",
	[K_TYPE] = "type",           [K_MIN] = "min",               [K_MAX] = "max",
	[K_VALUES] = "values",       [K_STEP] = "step",             [K_MAX_STEP] = "max_step",
	[K_TRIGGER] = "trigger",     [K_OBJECTIVE] = "objective",   [K_GUARDRAILS] = "guardrails",
	[K_SETTLE] = "settle",       [K_APPROVAL] = "approval",     [K_ENABLED] = "enabled",
	[K_CONSTRAINT] = "constraint", [K_SETTLE_MIN] = "settle_min",
};

#define T(t) (1u << (t))
#define NUMERIC (T(KNOB_T_INT) | T(KNOB_T_INTVEC))

static const struct kind_info {
	const char *name;
	unsigned types; /* the value types a knob of this kind may have */
} kinds[POLICY_KIND_COUNT] = {
	[POLICY_SYSCTL] = {"sysctl", NUMERIC | T(KNOB_T_ONOFF) | T(KNOB_T_ENUM)},
	[POLICY_IRQ_AFFINITY] = {"irq_affinity", T(KNOB_T_CPUMAP)},
	[POLICY_RPS] = {"rps", T(KNOB_T_CPUMAP)},
	[POLICY_RPS_FLOWS] = {"rps_flows", T(KNOB_T_INT)},
	[POLICY_SCHED_SLICE] = {"sched_slice", T(KNOB_T_INT)},
	[POLICY_NGINX_DIRECTIVE] = {"nginx_directive", T(KNOB_T_INT) | T(KNOB_T_ONOFF) | T(KNOB_T_CPULIST)},
	[POLICY_LISTEN_QUEUE] = {"listen_queue", T(KNOB_T_INT)},
	[POLICY_LISTEN_PARAM] = {"listen_param", T(KNOB_T_ONOFF)},
	[POLICY_UPSTREAM_KEEPALIVE] = {"upstream_keepalive", T(KNOB_T_INT)},
};

/*
 * Hard caps: no policy file may allow more, whatever an operator writes. Each is where field experience says the
 * knob stops helping and starts hurting, or where the kernel or nginx stops honouring it (documented in
 * ngx-autotune.policy(5)). Every element of a vector knob is capped alike.
 */
static const struct cap {
	enum policy_kind kind;
	const char *target; /* NULL: every knob of the kind */
	int64_t lo, hi;
} caps[] = {
	/* Above 2 ms, a worker woken by a packet waits behind a CPU hog for a whole slice. */
	{POLICY_SCHED_SLICE, NULL, 100000, 2000000},
	/* nginx's backlog= and the kernel's listen queue limit were 16-bit for most of Linux's history. */
	{POLICY_LISTEN_QUEUE, NULL, 128, 65535},
	{POLICY_SYSCTL, "net.core.somaxconn", 128, 65535},
	{POLICY_SYSCTL, "net.ipv4.tcp_max_syn_backlog", 128, 262144},
	/* Packets per NET_RX softirq round: far above a few thousand one round starves everything else on the CPU. */
	{POLICY_SYSCTL, "net.core.netdev_budget", 64, 3000},
	/* Time per NET_RX round: 8 ms is the kernel's own default at HZ=250 (two ticks); beyond it the softirq holds
	 * the CPU across scheduler ticks and the ticks' work piles up (a tick storm). */
	{POLICY_SYSCTL, "net.core.netdev_budget_usecs", 500, 8000},
	{POLICY_SYSCTL, "net.core.netdev_max_backlog", 1000, 262144},
	/* Busy polling spins a CPU for this many microseconds per poll: past 200 it is burnt CPU, not latency. */
	{POLICY_SYSCTL, "net.core.busy_poll", 0, 200},
	{POLICY_SYSCTL, "net.core.busy_read", 0, 200},
	{POLICY_SYSCTL, "net.ipv4.tcp_fin_timeout", 5, 120},
	/* Never hand out privileged ports as ephemeral ones. */
	{POLICY_SYSCTL, "net.ipv4.ip_local_port_range", 1024, 65535},
	/* 256 MiB per socket is beyond any BDP a web server meets; more only lets a few sockets exhaust tcp_mem. */
	{POLICY_SYSCTL, "net.core.rmem_max", 4096, 268435456},
	{POLICY_SYSCTL, "net.core.wmem_max", 4096, 268435456},
	{POLICY_SYSCTL, "net.ipv4.tcp_rmem", 4096, 268435456},
	{POLICY_SYSCTL, "net.ipv4.tcp_wmem", 4096, 268435456},
	/* The kernel rounds rps_sock_flow_entries up to a power of two and refuses more than 2^29; 4M is plenty. */
	{POLICY_RPS_FLOWS, NULL, 0, 4194304},
	{POLICY_NGINX_DIRECTIVE, "worker_processes", 1, 1024},
	{POLICY_NGINX_DIRECTIVE, "worker_connections", 16, 1048576},
	{POLICY_NGINX_DIRECTIVE, "worker_rlimit_nofile", 1024, 4194304},
	{POLICY_NGINX_DIRECTIVE, "keepalive_requests", 1, 1000000},
	/* Idle connections kept per worker and upstream: past a few thousand they only hold the backends' slots. */
	{POLICY_UPSTREAM_KEEPALIVE, NULL, 0, 4096},
	/* zlib's levels. */
	{POLICY_NGINX_DIRECTIVE, "gzip_comp_level", 1, 9},
	/* A nice value: never above the kernel's threads (-20) nor below everything else (19). */
	{POLICY_NGINX_DIRECTIVE, "worker_priority", -20, 19},
};

/*
 * The nginx directives a policy may manage: only these, in this context, with this type of value (the nginx
 * driver's table agrees). worker_cpu_affinity is the CPU list the workers are spread over, one per CPU in order
 * (nginx's "auto MASK"); the empty list leaves the directive out.
 */
static const struct directive {
	const char *name, *context;
	enum knob_type type;
} directives[] = {
	{"worker_processes", "main", KNOB_T_INT},
	{"worker_cpu_affinity", "main", KNOB_T_CPULIST},
	{"worker_rlimit_nofile", "main", KNOB_T_INT},
	{"worker_priority", "main", KNOB_T_INT},
	{"worker_connections", "events", KNOB_T_INT},
	{"multi_accept", "events", KNOB_T_ONOFF},
	{"accept_mutex", "events", KNOB_T_ONOFF},
	{"keepalive_requests", "http", KNOB_T_INT},
	{"reset_timedout_connection", "http", KNOB_T_ONOFF},
	{"sendfile", "http", KNOB_T_ONOFF},
	{"tcp_nopush", "http", KNOB_T_ONOFF},
	{"tcp_nodelay", "http", KNOB_T_ONOFF},
	{"gzip_comp_level", "http", KNOB_T_INT},
};

/* Sysctl trees a policy may write: the network stack, the VM, the scheduler and the file limits nginx needs. */
static const char *const sysctl_prefixes[] = {"net.", "vm.", "kernel.sched_", "fs.file-max", "fs.nr_open"};

/* Written by no policy, whatever the files say: tcp_tw_recycle breaks clients behind NAT (removed in Linux 4.12). */
static const char *const builtin_forbidden[] = {"net.ipv4.tcp_tw_recycle"};

/* The detectors a trigger may name; issue 4's detect module implements them (ngx-autotune.policy(5) lists units). */
static const char *const detectors[] = {
	"listen_overflows",  "syn_queue_overflow", "softnet_squeeze",   "softnet_drops",
	"softirq_imbalance", "worker_connections_exhausted", "worker_run_delay", "worker_saturation", "worker_imbalance",
	"keepalive_short",   "retransmissions",    "timewait_pileup",   "finwait_pileup",
	"port_exhaustion",   "file_limit",         "silent_connections",
};

/*
 * The sampler's metric names (agent/sampler.c, ngx-autotune(8)). A placeholder stands for one variable part:
 * {n} a number, {cpu} a CPU number or "all", {port} a TCP port, {if} an interface name.
 */
static const char *const metric_patterns[] = {
	"tcp.active_opens", "tcp.attempt_fails", "tcp.curr_estab", "tcp.estab_resets", "tcp.in_errs", "tcp.in_segs",
	"tcp.out_segs", "tcp.passive_opens", "tcp.retrans_segs", "tcp.listen_drops", "tcp.listen_overflows",
	"tcp.syncookies_sent", "tcp.abort_on_memory", "tcp.backlog_drop", "tcp.reqq_full_drop",
	"tcp.timewait_overflow",
	"tcp.sockstat.inuse", "tcp.sockstat.orphan", "tcp.sockstat.time_wait", "tcp.sockstat.mem_pages",
	"tcp.state.established", "tcp.state.syn_recv", "tcp.state.time_wait", "tcp.state.close_wait",
	"tcp.state.fin_wait", "tcp.state.listen", "tcp.served.established", "tcp.served.close_wait", "tcp.served.closed",
	"tcp.served.silent",
	"tcp.outgoing.time_wait",
	"tcp.max_orphans",
	"softnet.processed", "softnet.dropped", "softnet.time_squeeze",
	"softnet.{n}.processed", "softnet.{n}.dropped", "softnet.{n}.time_squeeze",
	"softirq.net_rx", "softirq.net_tx", "softirq.{n}.net_rx", "softirq.{n}.net_tx",
	"cpu.{cpu}.user", "cpu.{cpu}.system", "cpu.{cpu}.irq", "cpu.{cpu}.softirq", "cpu.{cpu}.idle",
	"cpu.{cpu}.iowait", "cpu.{cpu}.steal",
	"sys.ctxt", "sys.procs_running", "sys.cpus",
	"irq.{n}.total", "irq.{n}.{n}", "irq.net_irqs",
	"nginx.active", "nginx.reading", "nginx.writing", "nginx.waiting", "nginx.accepts", "nginx.handled",
	"nginx.requests", "nginx.workers", "nginx.workers_old", "nginx.worker_run_ms", "nginx.worker_run_max_ms", "nginx.worker_run_mean_ms",
	"nginx.worker_wait_ms", "nginx.worker_wait_max_ms", "nginx.worker_vcsw", "nginx.worker_ivcsw",
	"nginx.err.worker_connections", "nginx.err.too_many_files", "nginx.err.upstream_premature",
	"nginx.err.buffered_temp", "nginx.err.addr_not_avail", "nginx.err.upstream_timeout",
	"nginx.err.conn_refused", "nginx.err.connect_timeout", "nginx.err.no_live_upstreams", "nginx.stub_late",
	"http.requests", "http.1xx", "http.2xx", "http.3xx", "http.4xx", "http.5xx", "http.unparsed",
	"http.timed",
	"http.502", "http.504", "http.upstream_connect_ms_sum",
	"http.request_ms_sum", "http.upstream_ms_sum", "http.upstream_share", "http.p50_ms", "http.p90_ms",
	"http.p99_ms", "http.backlog", "http.lat.b{n}",
	"listen.{port}.queued", "listen.{port}.backlog", "listen.{port}.fill_pct", "listen.wait_ms",
	"link.{if}.rx_packets", "link.{if}.tx_packets", "link.{if}.rx_bytes", "link.{if}.tx_bytes",
	"link.{if}.rx_dropped", "link.{if}.rx_missed", "link.{if}.tx_dropped", "link.{if}.rx_errors",
	"link.{if}.tx_errors",
	"client.requests", "client.failures", "client.timeouts", "client.connect_p50_ms", "client.connect_p99_ms",
	"client.ttfb_p99_ms", "client.total_p50_ms", "client.total_p99_ms", "client.connect.timed",
	"client.ttfb.timed", "client.total.timed", "client.connect.us_sum", "client.ttfb.us_sum", "client.total.us_sum",
	"client.connect.lat.b{n}", "client.ttfb.lat.b{n}", "client.total.lat.b{n}",
};

/* Derived metrics: computed by the judge from a block's sums (ratios of sums, never means of per-tick ratios). */
static const struct policy_derived derived[] = {
	{"http.good_rate", "(http.2xx + http.3xx) per second: good responses served"},
	{"http.5xx_rate", "http.5xx / http.requests"},
	{"http.4xx_rate", "http.4xx / http.requests"},
	{"http.mean_ms", "http.request_ms_sum / http.requests"},
	{"http.timeouts", "nginx.err.upstream_timeout per 1000 http.requests"},
	{"nginx.unhandled", "nginx.accepts - nginx.handled (connections accepted and dropped at once)"},
	{"nginx.worker_wait_ratio", "nginx.worker_wait_ms / nginx.worker_run_ms"},
	{"nginx.worker_imbalance", "nginx.worker_run_max_ms / nginx.worker_run_mean_ms (1: the workers share alike)"},
	{"tcp.retrans_rate", "tcp.retrans_segs / tcp.out_segs"},
	{"tcp.accept_wait", "listen.wait_ms per 1000 http.requests: clients' ms waiting to be accepted"},
	{"softnet.drop_rate", "softnet.dropped / softnet.processed"},
	{"client.failure_rate", "(client.failures + client.timeouts) / client.requests (the synthetic client)"},
	{"client.p50_ms", "the synthetic client's median request time, from its histogram summed over the block"},
	{"client.p99_ms", "the synthetic client's p99 request time, from its histogram summed over the block"},
	{"cpu.softirq_per_kreq", "softirq CPU ms per 1000 http.requests (cpu.all.softirq x sys.cpus x tick)"},
	{"cpu.busy_per_kreq", "user+system+irq+softirq CPU ms per 1000 http.requests"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- small helpers ------------------------------------------------------------------------------------------ */

__attribute__((format(printf, 5, 6))) static int fail_at(char *err, size_t errlen, const char *path, int line,
							 const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err && errlen) {
		if (line > 0)
			snprintf(err, errlen, "%s:%d: %s", path, line, msg);
		else
			snprintf(err, errlen, "%s: %s", path, msg);
	}
	return -EINVAL;
}

/* VALUE made safe to quote in a message: printable ASCII only, cut to 48 characters. */
static const char *shown(const char *value, char *buf, size_t len)
{
	size_t i = 0;

	for (; value[i] && i + 4 < len && i < 48; i++)
		buf[i] = value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?';
	if (value[i] && i + 4 <= len)
		memcpy(buf + i, "...", 3), i += 3;
	buf[i] = '\0';
	return buf;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

static bool is_alnum(char c)
{
	return is_lower(c) || (c >= 'A' && c <= 'Z') || is_digit(c);
}

static const char *skip_blanks(const char *p)
{
	while (is_blank(*p))
		p++;
	return p;
}

/* Copy [p, end) into DST of SIZE, blanks trimmed at both ends. -E2BIG when it does not fit. */
static int copy_trimmed(char *dst, size_t size, const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;
	if ((size_t)(end - p) >= size)
		return -E2BIG;
	memcpy(dst, p, (size_t)(end - p));
	dst[end - p] = '\0';
	return 0;
}

/* Decimal int64, the whole of S. */
static int to_i64(const char *s, int64_t *out)
{
	bool neg = *s == '-';
	uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

	s += neg;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (!is_digit(*s) || v > (lim - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	return 0;
}

/* A plain decimal "-12.5" (no exponent, no "inf"), the whole of [p, end), at most 15 digits. */
static int to_decimal(const char *p, const char *end, double *out)
{
	bool neg = false, dot = false;
	int64_t mant = 0;
	int digits = 0, frac = 0;

	if (p < end && *p == '-')
		neg = true, p++;
	for (; p < end; p++) {
		if (*p == '.' && !dot && digits > 0) {
			dot = true;
			continue;
		}
		if (!is_digit(*p) || ++digits > 15)
			return -EINVAL;
		mant = mant * 10 + (*p - '0');
		frac += dot;
	}
	if (digits == 0 || (dot && frac == 0))
		return -EINVAL;
	*out = (double)mant;
	while (frac-- > 0)
		*out /= 10;
	if (neg)
		*out = -*out;
	return 0;
}

static int to_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false", "off", "0"};

	/* The same words as agent.conf's booleans, in any letter case. */
	for (size_t i = 0; i < COUNT(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *out = true, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *out = false, 0;
	}
	return -EINVAL;
}

/* "30s", "500ms", "2m", "1h"; a bare number is seconds. */
static int to_duration_ms(const char *s, int64_t *out)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"", 1000}};
	const char *u = s;
	uint64_t v = 0;

	while (is_digit(*u)) {
		v = v * 10 + (uint64_t)(*u - '0');
		if (v > 1000000000)
			return -ERANGE;
		u++;
	}
	if (u == s)
		return -EINVAL;
	for (size_t i = 0; i < COUNT(units); i++) {
		if (strcmp(u, units[i].unit) == 0) {
			*out = (int64_t)v * units[i].ms;
			return 0;
		}
	}
	return -EINVAL;
}

static bool valid_name(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max || !is_lower(s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower(s[i]) && !is_digit(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

/* A dotted sysctl name: components of [A-Za-z0-9_-], none empty, under one of the allowed trees. */
static bool valid_sysctl(const char *s)
{
	size_t n = strlen(s);
	bool allowed = false;

	if (n == 0 || n >= POLICY_TARGET_MAX || s[0] == '.' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.' && s[i + 1] == '.')
			return false;
		if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
			return false;
	}
	for (size_t i = 0; i < COUNT(sysctl_prefixes); i++) {
		size_t pl = strlen(sysctl_prefixes[i]);

		if (strncmp(s, sysctl_prefixes[i], pl) == 0 && (sysctl_prefixes[i][pl - 1] == '.' ||
								 sysctl_prefixes[i][pl - 1] == '_' || s[pl] == '\0'))
			allowed = true;
	}
	return allowed;
}

/* An interface name or a glob of one ("*", "eth*", "ens1f?"): never a path. */
static bool valid_ifglob(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 31 || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && !strchr("_.:@-*?", s[i]))
			return false;
	return true;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

static const struct directive *find_directive(const char *name)
{
	for (size_t i = 0; i < COUNT(directives); i++)
		if (strcmp(directives[i].name, name) == 0)
			return &directives[i];
	return NULL;
}

static const char *cmp_text(enum policy_cmp op)
{
	switch (op) {
	case POLICY_LE:
		return "<=";
	case POLICY_LT:
		return "<";
	case POLICY_GE:
		return ">=";
	case POLICY_GT:
		return ">";
	}
	return "?";
}

static bool cmp_holds(int64_t a, enum policy_cmp op, int64_t b)
{
	switch (op) {
	case POLICY_LE:
		return a <= b;
	case POLICY_LT:
		return a < b;
	case POLICY_GE:
		return a >= b;
	case POLICY_GT:
		return a > b;
	}
	return false;
}

/* Take a comparison operator at *P. */
static int take_cmp(const char **p, enum policy_cmp *op)
{
	const char *s = *p;

	if (s[0] == '<' && s[1] == '=')
		*op = POLICY_LE, *p += 2;
	else if (s[0] == '>' && s[1] == '=')
		*op = POLICY_GE, *p += 2;
	else if (s[0] == '<')
		*op = POLICY_LT, *p += 1;
	else if (s[0] == '>')
		*op = POLICY_GT, *p += 1;
	else
		return -EINVAL;
	return 0;
}

/* Take "[N]" at *P (N a small element index). */
static int take_index(const char **p, int *out)
{
	const char *s = *p;
	int v = 0;

	if (*s != '[')
		return -EINVAL;
	s = skip_blanks(s + 1);
	if (!is_digit(*s))
		return -EINVAL;
	while (is_digit(*s)) {
		v = v * 10 + (*s++ - '0');
		if (v >= KNOBVAL_VEC_MAX)
			return -ERANGE;
	}
	s = skip_blanks(s);
	if (*s != ']')
		return -EINVAL;
	*out = v;
	*p = s + 1;
	return 0;
}

/* ---- metric names ------------------------------------------------------------------------------------------- */

static bool class_ok(const char *cls, size_t clen, const char *q, size_t len)
{
	if (clen == 1 && cls[0] == 'n') {
		if (len > 10)
			return false;
		for (size_t i = 0; i < len; i++)
			if (!is_digit(q[i]))
				return false;
		return true;
	}
	if (clen == 3 && memcmp(cls, "cpu", 3) == 0) {
		if (len == 3 && memcmp(q, "all", 3) == 0)
			return true;
		return class_ok("n", 1, q, len) && len <= 4;
	}
	if (clen == 4 && memcmp(cls, "port", 4) == 0) {
		unsigned v = 0;

		if (len > 5 || q[0] == '0' || !class_ok("n", 1, q, len))
			return false;
		for (size_t i = 0; i < len; i++)
			v = v * 10 + (unsigned)(q[i] - '0');
		return v >= 1 && v <= 65535;
	}
	if (clen == 2 && memcmp(cls, "if", 2) == 0) {
		if (len > 15)
			return false;
		for (size_t i = 0; i < len; i++)
			if (!is_alnum(q[i]) && !strchr("_.:@-", q[i]))
				return false;
		return true;
	}
	return false;
}

/* Q against PAT: literal bytes match themselves, a {class} matches 1-16 bytes of its class or a lone "*". */
static bool pattern_match(const char *pat, const char *q)
{
	while (*pat) {
		if (*pat == '{') {
			const char *cls = pat + 1, *close = strchr(pat, '}');
			size_t clen = (size_t)(close - cls);

			if (*q == '*' && pattern_match(close + 1, q + 1))
				return true;
			for (size_t len = 1; len <= 16 && q[len - 1]; len++)
				if (class_ok(cls, clen, q, len) && pattern_match(close + 1, q + len))
					return true;
			return false;
		}
		if (*pat != *q)
			return false;
		pat++, q++;
	}
	return *q == '\0';
}

bool policy_metric_known(const char *name, void *ctx)
{
	(void)ctx;
	if (!name || strlen(name) >= POLICY_METRIC_MAX)
		return false;
	for (size_t i = 0; i < COUNT(derived); i++)
		if (strcmp(name, derived[i].name) == 0)
			return true;
	for (size_t i = 0; i < COUNT(metric_patterns); i++)
		if (pattern_match(metric_patterns[i], name))
			return true;
	return false;
}

const struct policy_derived *policy_derived_at(size_t i)
{
	return i < COUNT(derived) ? &derived[i] : NULL;
}

bool policy_detector_known(const char *name)
{
	return in_list(name, detectors, COUNT(detectors));
}

const char *policy_kind_name(enum policy_kind kind)
{
	if ((unsigned)kind >= POLICY_KIND_COUNT)
		return "?";
	return kinds[kind].name;
}

/* ---- building ------------------------------------------------------------------------------------------------ */

void policy_set_init(struct policy_set *set)
{
	memset(set, 0, sizeof(*set));
}

void policy_set_free(struct policy_set *set)
{
	free(set->knobs);
	policy_set_init(set);
}

const struct knob_policy *policy_find(const struct policy_set *set, const char *name)
{
	for (size_t i = 0; i < set->n; i++)
		if (strcmp(set->knobs[i].name, name) == 0)
			return &set->knobs[i];
	return NULL;
}

bool policy_forbidden(const struct policy_set *set, const char *name)
{
	if (in_list(name, builtin_forbidden, COUNT(builtin_forbidden)))
		return true;
	for (size_t i = 0; set && i < set->nforbidden; i++)
		if (strcmp(set->forbidden[i], name) == 0)
			return true;
	return false;
}

void policy_set_section(struct policy_set *set, const char *file, int line, const char *section)
{
	(void)file, (void)line, (void)section;
	/* Forget the open section: the next entry opens a new one (and a name seen before is a duplicate). */
	set->cur_path[0] = '\0';
	set->cur_section[0] = '\0';
}

/* A comma-separated list: call FN for each item, blanks trimmed. */
static int each_item(const char *value, size_t itemmax, int (*fn)(const char *item, void *ctx, char *msg, size_t ml),
		     void *ctx, char *msg, size_t ml)
{
	char item[POLICY_TARGET_MAX + 32];
	const char *p = value;

	if (itemmax > sizeof(item))
		itemmax = sizeof(item);
	for (;;) {
		const char *e = strchr(p, ',');
		int r;

		if (!e)
			e = p + strlen(p);
		if (copy_trimmed(item, itemmax, p, e) < 0)
			return snprintf(msg, ml, "an item is longer than %zu characters", itemmax - 1), -EINVAL;
		if (!item[0])
			return snprintf(msg, ml, "empty item in the list"), -EINVAL;
		r = fn(item, ctx, msg, ml);
		if (r < 0)
			return r;
		if (!*e)
			return 0;
		p = e + 1;
	}
}

static int add_forbidden(const char *item, void *ctx, char *msg, size_t ml)
{
	struct policy_set *set = ctx;

	/* Any dotted name may be forbidden, also outside the trees a policy may write: forbidding is harmless. */
	if (!valid_name(item, POLICY_TARGET_MAX) || !strchr(item, '.') || strstr(item, "..") ||
	    item[strlen(item) - 1] == '.')
		return snprintf(msg, ml, "'%s' is not a sysctl name", item), -EINVAL;
	for (size_t i = 0; i < set->nforbidden; i++)
		if (strcmp(set->forbidden[i], item) == 0)
			return 0;
	if (set->nforbidden == POLICY_FORBID_MAX)
		return snprintf(msg, ml, "more than %d forbidden sysctls", POLICY_FORBID_MAX), -EINVAL;
	snprintf(set->forbidden[set->nforbidden++], POLICY_TARGET_MAX, "%s", item);
	return 0;
}

/* Numbers for min and max: one per element, blank separated. */
static int parse_numbers(const char *value, int64_t *out, size_t *n, char *msg, size_t ml)
{
	const char *p = skip_blanks(value);
	char tok[24];

	*n = 0;
	while (*p) {
		const char *e = p;

		while (*e && !is_blank(*e))
			e++;
		if (*n == KNOBVAL_VEC_MAX)
			return snprintf(msg, ml, "more than %d numbers", KNOBVAL_VEC_MAX), -EINVAL;
		if (copy_trimmed(tok, sizeof(tok), p, e) < 0 || to_i64(tok, &out[*n]) < 0)
			return snprintf(msg, ml, "number %zu is not a decimal integer", *n + 1), -EINVAL;
		(*n)++;
		p = skip_blanks(e);
	}
	if (*n == 0)
		return snprintf(msg, ml, "no number"), -EINVAL;
	return 0;
}

static int add_enum_word(const char *item, void *ctx, char *msg, size_t ml)
{
	struct knob_policy *p = ctx;
	struct knobval v;

	if (knobval_parse(KNOB_T_ENUM, item, &v, NULL, 0) < 0 || strcmp(v.word, item) != 0)
		return snprintf(msg, ml, "'%s' is not a word of a-z 0-9 _ . - (at most 31)", item), -EINVAL;
	for (size_t i = 0; i < p->nvalues; i++)
		if (strcmp(p->values[i], item) == 0)
			return snprintf(msg, ml, "'%s' is listed twice", item), -EINVAL;
	if (p->nvalues == POLICY_ENUM_MAX)
		return snprintf(msg, ml, "more than %d values", POLICY_ENUM_MAX), -EINVAL;
	snprintf(p->values[p->nvalues++], sizeof(p->values[0]), "%s", item);
	return 0;
}

/* "x2", "x1.5" (a factor) or "+1024" (an addend). */
static int parse_step(const char *value, bool *mul, double *step, char *msg, size_t ml)
{
	size_t n = strlen(value);

	if (n >= 2 && value[0] == 'x') {
		if (to_decimal(value + 1, value + n, step) < 0 || *step <= 1 || *step > 16)
			return snprintf(msg, ml, "a factor must be 'x' and a number above 1 and at most 16 (x2, x1.5)"),
			       -EINVAL;
		*mul = true;
		return 0;
	}
	if (n >= 2 && value[0] == '+') {
		int64_t v;

		if (to_i64(value + 1, &v) < 0 || v < 1 || v > ((int64_t)1 << 50))
			return snprintf(msg, ml, "an addend must be '+' and a whole number from 1 (+1024)"), -EINVAL;
		*mul = false;
		*step = (double)v;
		return 0;
	}
	return snprintf(msg, ml, "not a factor (x2) or an addend (+1024)"), -EINVAL;
}

/* "METRIC lower" or "METRIC higher". */
static int parse_metric(const char *item, struct policy_metric *m, char *msg, size_t ml)
{
	const char *sp = item;
	const char *dir;

	while (*sp && !is_blank(*sp))
		sp++;
	dir = skip_blanks(sp);
	if (sp == item || !*dir)
		return snprintf(msg, ml, "'%s' is not 'METRIC lower' or 'METRIC higher'", item), -EINVAL;
	if (copy_trimmed(m->metric, sizeof(m->metric), item, sp) < 0)
		return snprintf(msg, ml, "metric name longer than %d characters", POLICY_METRIC_MAX - 1), -EINVAL;
	m->implied = false;
	if (strcmp(dir, "lower") == 0)
		m->dir = POLICY_LOWER_IS_BETTER;
	else if (strcmp(dir, "higher") == 0)
		m->dir = POLICY_HIGHER_IS_BETTER;
	else
		return snprintf(msg, ml, "'%s': the direction must be 'lower' or 'higher' (which is better)", item),
		       -EINVAL;
	return 0;
}

static int add_guardrail(const char *item, void *ctx, char *msg, size_t ml)
{
	struct knob_policy *p = ctx;

	if (p->nguardrails == POLICY_GUARDRAILS_MAX)
		return snprintf(msg, ml, "more than %d guardrails", POLICY_GUARDRAILS_MAX), -EINVAL;
	if (parse_metric(item, &p->guardrails[p->nguardrails], msg, ml) < 0)
		return -EINVAL;
	p->nguardrails++;
	return 0;
}

/* "[I] OP NAME[J]", "OP NAME", "[I] OP [J]" (an element of this knob). */
static int add_constraint(const char *item, void *ctx, char *msg, size_t ml)
{
	struct knob_policy *p = ctx;
	struct policy_constraint c = {.elem = -1, .other_elem = -1, .line = p->key_line[K_CONSTRAINT]};
	const char *s = item, *e;
	int r;

	if (p->nconstraints == POLICY_CONSTRAINTS_MAX)
		return snprintf(msg, ml, "more than %d constraints", POLICY_CONSTRAINTS_MAX), -EINVAL;
	if (*s == '[') {
		r = take_index(&s, &c.elem);
		if (r < 0)
			goto bad;
		s = skip_blanks(s);
	}
	if (take_cmp(&s, &c.op) < 0)
		goto bad;
	s = skip_blanks(s);
	if (*s == '[') {
		snprintf(c.other, sizeof(c.other), "%s", p->name);
	} else {
		e = s;
		while (*e && *e != '[' && !is_blank(*e))
			e++;
		if (copy_trimmed(c.other, sizeof(c.other), s, e) < 0 || !valid_name(c.other, POLICY_NAME_MAX))
			goto bad;
		s = skip_blanks(e);
	}
	if (*s == '[') {
		r = take_index(&s, &c.other_elem);
		if (r < 0)
			goto bad;
		s = skip_blanks(s);
	}
	if (*s)
		goto bad;
	if (strcmp(c.other, p->name) == 0 && (c.elem < 0 || c.other_elem < 0 || c.elem == c.other_elem))
		return snprintf(msg, ml, "'%s': a knob can only be constrained by another element of itself ([0] < [1])",
				item), -EINVAL;
	p->constraints[p->nconstraints++] = c;
	return 0;
bad:
	return snprintf(msg, ml, "'%s' is not '[I] OP KNOB[J]' (OP one of <= < >= >; [I], [J] for vector elements)",
			item), -EINVAL;
}

/* "DETECTOR OP NUMBER". */
static int parse_trigger(struct knob_policy *p, const char *value, char *msg, size_t ml)
{
	const char *s = value, *e = value;

	while (is_lower(*e) || is_digit(*e) || *e == '_')
		e++;
	if (e == s || copy_trimmed(p->trigger, sizeof(p->trigger), s, e) < 0)
		goto bad;
	s = skip_blanks(e);
	if (take_cmp(&s, &p->trigger_op) < 0)
		goto bad;
	s = skip_blanks(s);
	if (to_decimal(s, s + strlen(s), &p->trigger_threshold) < 0)
		goto bad;
	return 0;
bad:
	p->trigger[0] = '\0';
	return snprintf(msg, ml, "not 'DETECTOR OP NUMBER' (e.g. listen_overflows > 0)"), -EINVAL;
}

static int set_key(struct knob_policy *p, enum key_id k, const char *value, char *msg, size_t ml)
{
	switch (k) {
	case K_KIND:
		for (size_t i = 0; i < POLICY_KIND_COUNT; i++) {
			if (strcmp(value, kinds[i].name) == 0) {
				p->kind = (enum policy_kind)i;
				snprintf(p->kind_name, sizeof(p->kind_name), "%s", kinds[i].name);
				return 0;
			}
		}
		return snprintf(msg, ml, "not one of sysctl, irq_affinity, rps, rps_flows, sched_slice, nginx_directive, "
				"listen_queue, listen_param, upstream_keepalive"), -EINVAL;
	case K_TARGET:
		if (!value[0] || strlen(value) >= sizeof(p->target))
			return snprintf(msg, ml, "empty or longer than %zu characters", sizeof(p->target) - 1), -EINVAL;
		snprintf(p->target, sizeof(p->target), "%s", value);
		return 0;
	case K_CONTEXT:
		if (strcmp(value, "main") && strcmp(value, "events") && strcmp(value, "http"))
			return snprintf(msg, ml, "not one of main, events, http"), -EINVAL;
		snprintf(p->context, sizeof(p->context), "%s", value);
		return 0;
	case K_TYPE: {
		char word[16];
		const char *sp = value;
		int64_t n = 1;

		while (*sp && !is_blank(*sp))
			sp++;
		if (copy_trimmed(word, sizeof(word), value, sp) < 0 || knobval_type_parse(word, &p->type) < 0)
			return snprintf(msg, ml, "not one of int, intvec N, cpulist, enum, onoff, cpumap"), -EINVAL;
		sp = skip_blanks(sp);
		if (p->type == KNOB_T_INTVEC) {
			if (to_i64(sp, &n) < 0 || n < 2 || n > KNOBVAL_VEC_MAX)
				return snprintf(msg, ml, "intvec needs its element count, 2 to %d (intvec 3)",
						KNOBVAL_VEC_MAX), -EINVAL;
		} else if (*sp) {
			return snprintf(msg, ml, "only intvec takes a count"), -EINVAL;
		}
		p->nelem = (size_t)n;
		return 0;
	}
	case K_MIN:
		return parse_numbers(value, p->min, &p->nmin, msg, ml);
	case K_MAX:
		return parse_numbers(value, p->max, &p->nmax, msg, ml);
	case K_VALUES:
		return each_item(value, 64, add_enum_word, p, msg, ml);
	case K_STEP:
		return parse_step(value, &p->step_mul, &p->step, msg, ml);
	case K_MAX_STEP:
		return parse_step(value, &p->max_step_mul, &p->max_step, msg, ml);
	case K_TRIGGER:
		return parse_trigger(p, value, msg, ml);
	case K_OBJECTIVE:
		return parse_metric(value, &p->objective, msg, ml);
	case K_GUARDRAILS:
		return each_item(value, POLICY_METRIC_MAX + 16, add_guardrail, p, msg, ml);
	case K_SETTLE:
	case K_SETTLE_MIN: {
		int64_t *ms = k == K_SETTLE ? &p->settle_ms : &p->settle_min_ms;
		int r = to_duration_ms(value, ms);

		if (r < 0 || *ms < POLICY_SETTLE_MIN_MS || *ms > POLICY_SETTLE_MAX_MS)
			return snprintf(msg, ml, "not a duration from 1s to 1h (500ms, 30s, 5m)"), -EINVAL;
		return 0;
	}
	case K_APPROVAL:
		if (strcmp(value, "required") == 0)
			p->approval_required = true;
		else if (strcmp(value, "auto") == 0)
			p->approval_required = false;
		else
			return snprintf(msg, ml, "not required or auto"), -EINVAL;
		return 0;
	case K_ENABLED:
		if (to_bool(value, &p->enabled) < 0)
			return snprintf(msg, ml, "not yes or no"), -EINVAL;
		return 0;
	case K_CONSTRAINT:
		return each_item(value, 2 * POLICY_NAME_MAX, add_constraint, p, msg, ml);
	case K_COUNT:
		break;
	}
	return -EINVAL;
}

static struct knob_policy *open_knob(struct policy_set *set, const char *file, int line, const char *name, char *err,
				     size_t errlen, int *rc)
{
	const struct knob_policy *dup = policy_find(set, name);
	const char *base = strrchr(file, '/');
	struct knob_policy *p;

	*rc = 0;
	if (dup) {
		*rc = fail_at(err, errlen, file, line, "knob %s is already defined at %s:%d", name, dup->path, dup->line);
		return NULL;
	}
	base = base ? base + 1 : file;
	if (strlen(base) >= sizeof(p->file) || strlen(file) >= sizeof(p->path)) {
		*rc = fail_at(err, errlen, file, line, "the file name is too long");
		return NULL;
	}
	if (set->n == POLICY_KNOBS_MAX) {
		fail_at(err, errlen, file, line, "more than %d knobs", POLICY_KNOBS_MAX);
		*rc = -ENOSPC;
		return NULL;
	}
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 16;
		struct knob_policy *k = realloc(set->knobs, cap * sizeof(*k));

		if (!k) {
			fail_at(err, errlen, file, line, "out of memory");
			*rc = -ENOMEM;
			return NULL;
		}
		set->knobs = k;
		set->cap = cap;
	}
	p = &set->knobs[set->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->file, sizeof(p->file), "%s", base);
	snprintf(p->path, sizeof(p->path), "%s", file);
	p->line = line;
	p->nelem = 1;
	p->enabled = true;
	p->approval_required = true;
	p->settle_ms = POLICY_SETTLE_DEFAULT_MS;
	return p;
}

int policy_set_add(struct policy_set *set, const char *file, int line, const char *section, const char *key,
		   const char *value, char *err, size_t errlen)
{
	char msg[256], sv[64];
	struct knob_policy *p;
	const char *name;
	int k, r;

	if (!file || !section || !key || !value)
		return fail_at(err, errlen, file ? file : "?", line, "incomplete entry");
	if (!section[0])
		return fail_at(err, errlen, file, line, "key '%s' outside any section", shown(key, sv, sizeof(sv)));
	if (strcmp(section, "forbid") == 0) {
		policy_set_section(set, file, line, section);
		if (strcmp(key, "sysctls") != 0)
			return fail_at(err, errlen, file, line, "unknown key '%s' in [forbid] (only sysctls)",
				       shown(key, sv, sizeof(sv)));
		r = each_item(value, POLICY_TARGET_MAX, add_forbidden, set, msg, sizeof(msg));
		return r < 0 ? fail_at(err, errlen, file, line, "sysctls: %s", msg) : 0;
	}
	if (strncmp(section, "knob ", 5) != 0)
		return fail_at(err, errlen, file, line, "unknown section [%s] (expected [knob NAME] or [forbid])",
			       shown(section, sv, sizeof(sv)));
	name = section + 5;
	if (!valid_name(name, POLICY_NAME_MAX))
		return fail_at(err, errlen, file, line, "[knob %s]: a knob name is a-z 0-9 _ . - starting with a letter, "
			       "at most %d characters", shown(name, sv, sizeof(sv)), POLICY_NAME_MAX - 1);
	if (set->n > 0 && strcmp(set->cur_path, file) == 0 && strcmp(set->cur_section, section) == 0) {
		p = &set->knobs[set->n - 1];
	} else {
		p = open_knob(set, file, line, name, err, errlen, &r);
		if (!p)
			return r;
		snprintf(set->cur_path, sizeof(set->cur_path), "%s", file);
		snprintf(set->cur_section, sizeof(set->cur_section), "%s", section);
	}
	for (k = 0; k < K_COUNT; k++)
		if (strcmp(key, key_names[k]) == 0)
			break;
	if (k == K_COUNT)
		return fail_at(err, errlen, file, line, "knob %s: unknown key '%s'", p->name, shown(key, sv, sizeof(sv)));
	if (p->key_line[k])
		return fail_at(err, errlen, file, line, "knob %s: %s given twice (first at line %d)", p->name, key,
			       p->key_line[k]);
	p->key_line[k] = line;
	if (set_key(p, (enum key_id)k, value, msg, sizeof(msg)) < 0)
		return fail_at(err, errlen, file, line, "knob %s: %s: %s", p->name, key, msg);
	return 0;
}

/* ---- validation ---------------------------------------------------------------------------------------------- */

static int line_of(const struct knob_policy *p, enum key_id k)
{
	return p->key_line[k] ? p->key_line[k] : p->line;
}

static const char *written_sysctl(const struct knob_policy *p)
{
	if (p->kind == POLICY_SYSCTL)
		return p->target;
	if (p->kind == POLICY_RPS_FLOWS)
		return "net.core.rps_sock_flow_entries";
	return NULL;
}

static int check_target(const struct knob_policy *p, char *err, size_t errlen)
{
	int line = line_of(p, K_TARGET);
	const struct directive *d;
	char sv[64];

	switch (p->kind) {
	case POLICY_SYSCTL:
		if (!valid_sysctl(p->target))
			return fail_at(err, errlen, p->path, line, "knob %s: target '%s' is not a sysctl name under "
				       "net., vm., kernel.sched_, fs.file-max or fs.nr_open", p->name,
				       shown(p->target, sv, sizeof(sv)));
		return 0;
	case POLICY_IRQ_AFFINITY:
	case POLICY_RPS:
	case POLICY_RPS_FLOWS:
		if (!valid_ifglob(p->target))
			return fail_at(err, errlen, p->path, line, "knob %s: target '%s' is not an interface name or glob",
				       p->name, shown(p->target, sv, sizeof(sv)));
		return 0;
	case POLICY_SCHED_SLICE:
		if (strcmp(p->target, "auto") != 0)
			return fail_at(err, errlen, p->path, line, "knob %s: target must be auto (the driver finds the "
				       "kernel's knob)", p->name);
		return 0;
	case POLICY_LISTEN_QUEUE: {
		int64_t port;

		if (strcmp(p->target, "*") != 0 && (to_i64(p->target, &port) < 0 || port < 1 || port > 65535))
			return fail_at(err, errlen, p->path, line, "knob %s: target must be * or a TCP port", p->name);
		return 0;
	}
	case POLICY_LISTEN_PARAM:
		if (strcmp(p->target, "reuseport") != 0 && strcmp(p->target, "deferred") != 0)
			return fail_at(err, errlen, p->path, line, "knob %s: target must be reuseport or deferred (the "
				       "listen parameters the agent manages)", p->name);
		return 0;
	case POLICY_UPSTREAM_KEEPALIVE:
		if (strcmp(p->target, "*") != 0)
			return fail_at(err, errlen, p->path, line, "knob %s: target must be * (every proxy_pass the knob "
				       "can give keepalive)", p->name);
		return 0;
	case POLICY_NGINX_DIRECTIVE:
		d = find_directive(p->target);
		if (!d)
			return fail_at(err, errlen, p->path, line, "knob %s: '%s' is not an nginx directive the agent "
				       "manages (see ngx-autotune.policy(5))", p->name, shown(p->target, sv, sizeof(sv)));
		if (!p->key_line[K_CONTEXT])
			return fail_at(err, errlen, p->path, p->line, "knob %s: missing key context", p->name);
		if (strcmp(p->context, d->context) != 0)
			return fail_at(err, errlen, p->path, line_of(p, K_CONTEXT), "knob %s: %s belongs in the %s "
				       "context, not %s", p->name, d->name, d->context, p->context);
		if (p->type != d->type)
			return fail_at(err, errlen, p->path, line_of(p, K_TYPE), "knob %s: %s takes type %s",
				       p->name, d->name, knobval_type_name(d->type));
		return 0;
	case POLICY_KIND_COUNT:
		break;
	}
	return fail_at(err, errlen, p->path, p->line, "knob %s: unknown kind", p->name);
}

static int check_bounds(struct knob_policy *p, char *err, size_t errlen)
{
	bool numeric = p->type == KNOB_T_INT || p->type == KNOB_T_INTVEC;
	bool cpus = p->type == KNOB_T_CPULIST || p->type == KNOB_T_CPUMAP;
	size_t want = numeric ? p->nelem : 1;

	if (!numeric && !cpus) {
		if (p->key_line[K_MIN] || p->key_line[K_MAX])
			return fail_at(err, errlen, p->path, line_of(p, p->key_line[K_MIN] ? K_MIN : K_MAX),
				       "knob %s: type %s takes no min or max", p->name, knobval_type_name(p->type));
		return 0;
	}
	if (numeric && (!p->key_line[K_MIN] || !p->key_line[K_MAX]))
		return fail_at(err, errlen, p->path, p->line, "knob %s: missing key %s", p->name,
			       p->key_line[K_MIN] ? "max" : "min");
	if (cpus) {
		if (!p->key_line[K_MIN])
			p->min[0] = 0, p->nmin = 1;
		if (!p->key_line[K_MAX])
			p->max[0] = KNOBVAL_CPUS_MAX - 1, p->nmax = 1;
	}
	if (p->nmin != want)
		return fail_at(err, errlen, p->path, line_of(p, K_MIN), "knob %s: min has %zu numbers, type %s needs %zu",
			       p->name, p->nmin, knobval_type_name(p->type), want);
	if (p->nmax != want)
		return fail_at(err, errlen, p->path, line_of(p, K_MAX), "knob %s: max has %zu numbers, type %s needs %zu",
			       p->name, p->nmax, knobval_type_name(p->type), want);
	for (size_t i = 0; i < want; i++) {
		if (p->min[i] > p->max[i])
			return fail_at(err, errlen, p->path, line_of(p, K_MAX), "knob %s: max %lld is below min %lld",
				       p->name, (long long)p->max[i], (long long)p->min[i]);
		if (cpus && (p->min[i] < 0 || p->max[i] >= KNOBVAL_CPUS_MAX))
			return fail_at(err, errlen, p->path, line_of(p, p->min[i] < 0 ? K_MIN : K_MAX),
				       "knob %s: CPU numbers run from 0 to %d", p->name, KNOBVAL_CPUS_MAX - 1);
	}
	for (size_t c = 0; numeric && c < COUNT(caps); c++) {
		if (caps[c].kind != p->kind || (caps[c].target && strcmp(caps[c].target, p->target) != 0))
			continue;
		for (size_t i = 0; i < want; i++) {
			if (p->min[i] < caps[c].lo)
				return fail_at(err, errlen, p->path, line_of(p, K_MIN), "knob %s: min %lld is below the hard "
					       "limit %lld for %s", p->name, (long long)p->min[i], (long long)caps[c].lo,
					       caps[c].target ? caps[c].target : p->kind_name);
			if (p->max[i] > caps[c].hi)
				return fail_at(err, errlen, p->path, line_of(p, K_MAX), "knob %s: max %lld is above the hard "
					       "limit %lld for %s", p->name, (long long)p->max[i], (long long)caps[c].hi,
					       caps[c].target ? caps[c].target : p->kind_name);
		}
	}
	return 0;
}

static int check_step(struct knob_policy *p, char *err, size_t errlen)
{
	bool numeric = p->type == KNOB_T_INT || p->type == KNOB_T_INTVEC;

	if (!numeric) {
		if (p->key_line[K_STEP] || p->key_line[K_MAX_STEP])
			return fail_at(err, errlen, p->path, line_of(p, p->key_line[K_STEP] ? K_STEP : K_MAX_STEP),
				       "knob %s: type %s takes no step", p->name, knobval_type_name(p->type));
		p->max_step = 0;
		return 0;
	}
	if (!p->key_line[K_STEP])
		return fail_at(err, errlen, p->path, p->line, "knob %s: missing key step", p->name);
	for (size_t i = 0; p->step_mul && i < p->nelem; i++)
		if (p->min[i] < 0)
			return fail_at(err, errlen, p->path, line_of(p, K_STEP), "knob %s: a factor step needs min >= 0",
				       p->name);
	if (!p->key_line[K_MAX_STEP]) {
		p->max_step = p->step;
		p->max_step_mul = p->step_mul;
		return 0;
	}
	if (p->max_step_mul != p->step_mul)
		return fail_at(err, errlen, p->path, line_of(p, K_MAX_STEP), "knob %s: max_step must be a %s like step",
			       p->name, p->step_mul ? "factor (x4)" : "difference (+4096)");
	if (p->max_step < p->step)
		return fail_at(err, errlen, p->path, line_of(p, K_MAX_STEP), "knob %s: max_step is smaller than step",
			       p->name);
	return 0;
}

static int check_metric(const struct knob_policy *p, enum key_id k, const struct policy_metric *m,
			bool (*known)(const char *, void *), void *ctx, char *err, size_t errlen)
{
	char sv[64];

	if (known && !known(m->metric, ctx))
		return fail_at(err, errlen, p->path, line_of(p, k), "knob %s: %s: unknown metric '%s'", p->name,
			       key_names[k], shown(m->metric, sv, sizeof(sv)));
	return 0;
}

static int check_knob(const struct policy_set *set, struct knob_policy *p, bool (*known)(const char *, void *),
		      void *ctx, char *err, size_t errlen)
{
	static const enum key_id required[] = {K_KIND, K_TARGET, K_TYPE, K_OBJECTIVE};
	const char *sc;
	int r;

	for (size_t i = 0; i < COUNT(required); i++)
		if (!p->key_line[required[i]])
			return fail_at(err, errlen, p->path, p->line, "knob %s: missing key %s", p->name,
				       key_names[required[i]]);
	if (!(kinds[p->kind].types & T(p->type)))
		return fail_at(err, errlen, p->path, line_of(p, K_TYPE), "knob %s: kind %s does not take type %s",
			       p->name, p->kind_name, knobval_type_name(p->type));
	if (p->kind != POLICY_NGINX_DIRECTIVE && p->key_line[K_CONTEXT])
		return fail_at(err, errlen, p->path, line_of(p, K_CONTEXT), "knob %s: only nginx_directive takes a "
			       "context", p->name);
	if ((p->kind == POLICY_IRQ_AFFINITY || p->kind == POLICY_RPS) && strlen(p->name) > 47)
		return fail_at(err, errlen, p->path, p->line, "knob %s: names of per-interface knobs have at most 47 "
			       "characters (the knob is NAME.DEV)", p->name);
	if (p->type == KNOB_T_ENUM && !p->key_line[K_VALUES])
		return fail_at(err, errlen, p->path, p->line, "knob %s: missing key values", p->name);
	if (p->type != KNOB_T_ENUM && p->key_line[K_VALUES])
		return fail_at(err, errlen, p->path, line_of(p, K_VALUES), "knob %s: only type enum takes values",
			       p->name);
	r = check_target(p, err, errlen);
	if (r == 0)
		r = check_bounds(p, err, errlen);
	if (r == 0)
		r = check_step(p, err, errlen);
	if (r < 0)
		return r;
	sc = written_sysctl(p);
	if (sc && policy_forbidden(set, sc))
		return fail_at(err, errlen, p->path, line_of(p, K_TARGET), "knob %s: %s is forbidden", p->name, sc);
	if (p->trigger[0] && !policy_detector_known(p->trigger))
		return fail_at(err, errlen, p->path, line_of(p, K_TRIGGER), "knob %s: trigger: unknown detector '%s'",
			       p->name, p->trigger);
	r = check_metric(p, K_OBJECTIVE, &p->objective, known, ctx, err, errlen);
	for (size_t i = 0; r == 0 && i < p->nguardrails; i++)
		r = check_metric(p, K_GUARDRAILS, &p->guardrails[i], known, ctx, err, errlen);
	return r;
}

/* Two knobs that would write the same thing fight each other: refuse the second. */
static int check_unique(const struct policy_set *set, const struct knob_policy *p, char *err, size_t errlen)
{
	for (const struct knob_policy *q = set->knobs; q < p; q++) {
		const char *a = written_sysctl(p), *b = written_sysctl(q);
		bool clash = a && b && strcmp(a, b) == 0;

		if (!clash && p->kind == q->kind) {
			switch (p->kind) {
			case POLICY_SCHED_SLICE:
			case POLICY_UPSTREAM_KEEPALIVE:
				clash = true;
				break;
			case POLICY_NGINX_DIRECTIVE:
			case POLICY_LISTEN_PARAM:
				clash = strcmp(p->target, q->target) == 0;
				break;
			case POLICY_IRQ_AFFINITY:
			case POLICY_RPS:
			case POLICY_LISTEN_QUEUE:
				/* Globs may overlap; only "*" and identical targets are caught for sure. */
				clash = strcmp(p->target, q->target) == 0 || strcmp(p->target, "*") == 0 ||
					strcmp(q->target, "*") == 0;
				break;
			default:
				break;
			}
		}
		if (clash)
			return fail_at(err, errlen, p->path, line_of(p, K_TARGET), "knob %s: writes what knob %s (%s:%d) "
				       "writes", p->name, q->name, q->path, q->line);
	}
	return 0;
}

static int check_constraints(const struct policy_set *set, const struct knob_policy *p, char *err, size_t errlen)
{
	for (size_t i = 0; i < p->nconstraints; i++) {
		const struct policy_constraint *c = &p->constraints[i];
		const struct knob_policy *q = policy_find(set, c->other);

		if (p->type != KNOB_T_INT && p->type != KNOB_T_INTVEC)
			return fail_at(err, errlen, p->path, c->line, "knob %s: only int and intvec knobs take "
				       "constraints", p->name);
		if (!q)
			return fail_at(err, errlen, p->path, c->line, "knob %s: constraint names unknown knob %s", p->name,
				       c->other);
		if (q->type != KNOB_T_INT && q->type != KNOB_T_INTVEC)
			return fail_at(err, errlen, p->path, c->line, "knob %s: constraint names %s, which is not an "
				       "int or intvec knob", p->name, q->name);
		if ((p->type == KNOB_T_INTVEC) != (c->elem >= 0) || (c->elem >= 0 && (size_t)c->elem >= p->nelem))
			return fail_at(err, errlen, p->path, c->line, "knob %s: constraint: %s", p->name,
				       p->type == KNOB_T_INTVEC ? "name an element [0] to [nelem-1] of this vector"
								: "this knob is not a vector: no [I]");
		if ((q->type == KNOB_T_INTVEC) != (c->other_elem >= 0) ||
		    (c->other_elem >= 0 && (size_t)c->other_elem >= q->nelem))
			return fail_at(err, errlen, p->path, c->line, "knob %s: constraint: %s %s", p->name, q->name,
				       q->type == KNOB_T_INTVEC ? "is a vector: name one element of it"
								: "is not a vector: no [J]");
	}
	return 0;
}

/* Depth-first search for a cycle through constraints to other knobs; 0 white, 1 on the path, 2 done. */
static int find_cycle(const struct policy_set *set, size_t i, unsigned char *state, size_t *path, size_t depth,
		      char *err, size_t errlen)
{
	const struct knob_policy *p = &set->knobs[i];

	state[i] = 1;
	path[depth] = i;
	for (size_t c = 0; c < p->nconstraints; c++) {
		const struct knob_policy *q = policy_find(set, p->constraints[c].other);
		size_t j;
		int r;

		if (!q || q == p)
			continue;
		j = (size_t)(q - set->knobs);
		if (state[j] == 1) {
			char chain[512];
			size_t len = 0, from = 0;

			while (path[from] != j)
				from++;
			for (size_t k = from; k <= depth && len < sizeof(chain); k++)
				len += (size_t)snprintf(chain + len, sizeof(chain) - len, "%s -> ",
							set->knobs[path[k]].name);
			if (len < sizeof(chain))
				snprintf(chain + len, sizeof(chain) - len, "%s", q->name);
			return fail_at(err, errlen, p->path, p->constraints[c].line, "knob %s: constraint cycle: %s",
				       p->name, chain);
		}
		if (state[j] == 0) {
			r = find_cycle(set, j, state, path, depth + 1, err, errlen);
			if (r < 0)
				return r;
		}
	}
	state[i] = 2;
	return 0;
}

int policy_set_validate(struct policy_set *set, bool (*metric_known)(const char *name, void *ctx), void *ctx,
			char *err, size_t errlen)
{
	unsigned char *state;
	size_t *path;
	int r = 0;

	if (err && errlen)
		err[0] = '\0';
	for (size_t i = 0; i < set->n && r == 0; i++)
		r = check_knob(set, &set->knobs[i], metric_known, ctx, err, errlen);
	for (size_t i = 0; i < set->n && r == 0; i++)
		r = check_unique(set, &set->knobs[i], err, errlen);
	for (size_t i = 0; i < set->n && r == 0; i++)
		r = check_constraints(set, &set->knobs[i], err, errlen);
	if (r < 0 || set->n == 0)
		return r;
	state = calloc(set->n, 1);
	path = calloc(set->n, sizeof(*path));
	if (!state || !path) {
		free(state);
		free(path);
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < set->n && r == 0; i++)
		if (state[i] == 0)
			r = find_cycle(set, i, state, path, 0, err, errlen);
	free(state);
	free(path);
	return r;
}

/* ---- checking a value ---------------------------------------------------------------------------------------- */

__attribute__((format(printf, 4, 5))) static int refuse(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* "X[2]" or "X". */
static const char *elem_name(const char *name, int elem, char *buf, size_t len)
{
	if (elem >= 0)
		snprintf(buf, len, "%s[%d]", name, elem);
	else
		snprintf(buf, len, "%s", name);
	return buf;
}

/* The current or planned value of knob Q through VALUE_OF: 0, 1 (unknown but allowed: -ENOENT), or -ERANGE. */
static int other_value(const struct knob_policy *q, int (*value_of)(const char *, char *, size_t, void *),
		       void *ctx, struct knobval *out, char *err, size_t errlen)
{
	char text[KNOBVAL_TEXT_MAX], why[128];
	int r;

	if (!value_of)
		return refuse(-ERANGE, err, errlen, "the value of %s is unknown", q->name);
	r = value_of(q->name, text, sizeof(text), ctx);
	if (r == -ENOENT)
		return 1;
	if (r < 0)
		return refuse(-ERANGE, err, errlen, "the value of %s is unknown (error %d)", q->name, -r);
	if (knobval_parse(q->type, text, out, why, sizeof(why)) < 0 || (q->type == KNOB_T_INTVEC && out->n != q->nelem))
		return refuse(-ERANGE, err, errlen, "the value of %s does not parse as %s", q->name,
			      knobval_type_name(q->type));
	return 0;
}

static int64_t elem_of(const struct knobval *v, int elem)
{
	return v->v[elem >= 0 ? elem : 0];
}

static int check_one_constraint(const struct knob_policy *lhs_pol, const struct policy_constraint *c, int64_t a,
				int64_t b, char *err, size_t errlen)
{
	char l[96], r[96];

	if (cmp_holds(a, c->op, b))
		return 0;
	return refuse(-ERANGE, err, errlen, "constraint %s %s %s fails: %lld %s %lld is false",
		      elem_name(lhs_pol->name, c->elem, l, sizeof(l)), cmp_text(c->op),
		      elem_name(c->other, c->other_elem, r, sizeof(r)), (long long)a, cmp_text(c->op), (long long)b);
}

static int check_constraints_of(const struct policy_set *set, const struct knob_policy *p, const struct knobval *nv,
				int (*value_of)(const char *, char *, size_t, void *), void *ctx, char *err,
				size_t errlen)
{
	struct knobval ov;
	int r;

	/* P's own constraints, with PROPOSED as P's value. */
	for (size_t i = 0; i < p->nconstraints; i++) {
		const struct policy_constraint *c = &p->constraints[i];
		const struct knob_policy *q = policy_find(set, c->other);

		if (!q)
			continue;
		if (q == p) {
			r = check_one_constraint(p, c, elem_of(nv, c->elem), elem_of(nv, c->other_elem), err, errlen);
		} else {
			r = other_value(q, value_of, ctx, &ov, err, errlen);
			if (r == 1)
				continue;
			if (r == 0)
				r = check_one_constraint(p, c, elem_of(nv, c->elem), elem_of(&ov, c->other_elem), err,
							 errlen);
		}
		if (r < 0)
			return r;
	}
	/* Other knobs' constraints that name P: lowering rmem_max must not leave tcp_rmem above it. */
	for (size_t k = 0; k < set->n; k++) {
		const struct knob_policy *q = &set->knobs[k];
		bool loaded = false;

		if (q == p)
			continue;
		for (size_t i = 0; i < q->nconstraints; i++) {
			const struct policy_constraint *c = &q->constraints[i];

			if (strcmp(c->other, p->name) != 0)
				continue;
			if (!loaded) {
				r = other_value(q, value_of, ctx, &ov, err, errlen);
				if (r == 1)
					break;
				if (r < 0)
					return r;
				loaded = true;
			}
			r = check_one_constraint(q, c, elem_of(&ov, c->elem), elem_of(nv, c->other_elem), err, errlen);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int check_step_from(const struct knob_policy *p, const char *current, const struct knobval *nv, char *err,
			   size_t errlen)
{
	struct knobval cv;
	char why[128];

	if (!current)
		return refuse(-ERANGE, err, errlen, "%s: the current value is unknown, so the step cannot be checked",
			      p->name);
	if (knobval_parse(p->type, current, &cv, why, sizeof(why)) < 0 || cv.n != nv->n)
		return refuse(-ERANGE, err, errlen, "%s: the current value does not parse as %s, so the step cannot be "
			      "checked", p->name, knobval_type_name(p->type));
	for (size_t i = 0; i < nv->n; i++) {
		int64_t c = clamp(cv.v[i], p->min[i], p->max[i]), n = nv->v[i];
		char en[96];

		elem_name(p->name, p->type == KNOB_T_INTVEC ? (int)i : -1, en, sizeof(en));
		if (p->step_mul) {
			/* Values below 1 count as 1, so a factor rule can leave 0. */
			double a = c < 1 ? 1 : (double)c, b = n < 1 ? 1 : (double)n;
			double ratio = a > b ? a / b : b / a;

			if (ratio > p->max_step * (1 + 1e-9))
				return refuse(-ERANGE, err, errlen, "%s: %lld to %lld is a factor of %.3g, more than the "
					      "largest step x%g", en, (long long)c, (long long)n, ratio, p->max_step);
		} else {
			__int128 d = (__int128)n - c;

			if (d < 0)
				d = -d;
			if ((double)d > p->max_step)
				return refuse(-ERANGE, err, errlen, "%s: %lld to %lld is a change of %.0f, more than the "
					      "largest step +%.0f", en, (long long)c, (long long)n, (double)d, p->max_step);
		}
	}
	return 0;
}

int policy_check(const struct policy_set *set, const struct knob_policy *p, const char *current, const char *proposed,
		 int (*value_of)(const char *knob, char *out, size_t outlen, void *ctx), void *ctx, char *err,
		 size_t errlen)
{
	const char *sc = written_sysctl(p);
	struct knobval nv;
	char why[128];
	bool found = false;

	if (err && errlen)
		err[0] = '\0';
	if (!p->enabled)
		return refuse(-EPERM, err, errlen, "%s: disabled by policy (enabled = no)", p->name);
	if (sc && policy_forbidden(set, sc))
		return refuse(-EPERM, err, errlen, "%s: writing %s is forbidden", p->name, sc);
	if (knobval_parse(p->type, proposed, &nv, why, sizeof(why)) < 0)
		return refuse(-EINVAL, err, errlen, "%s: not a valid %s value: %s", p->name, knobval_type_name(p->type),
			      why);
	if (p->type == KNOB_T_INTVEC && nv.n != p->nelem)
		return refuse(-EINVAL, err, errlen, "%s: %zu numbers, the knob has %zu", p->name, nv.n, p->nelem);

	switch (p->type) {
	case KNOB_T_ENUM:
		for (size_t i = 0; i < p->nvalues; i++)
			found |= strcmp(p->values[i], nv.word) == 0;
		if (!found)
			return refuse(-ERANGE, err, errlen, "%s: '%s' is not one of the policy's values", p->name, nv.word);
		break;
	case KNOB_T_INT:
	case KNOB_T_INTVEC:
		for (size_t i = 0; i < nv.n; i++) {
			char en[96];

			elem_name(p->name, p->type == KNOB_T_INTVEC ? (int)i : -1, en, sizeof(en));
			if (nv.v[i] < p->min[i])
				return refuse(-ERANGE, err, errlen, "%s: %lld is below the minimum %lld", en,
					      (long long)nv.v[i], (long long)p->min[i]);
			if (nv.v[i] > p->max[i])
				return refuse(-ERANGE, err, errlen, "%s: %lld is above the maximum %lld", en,
					      (long long)nv.v[i], (long long)p->max[i]);
		}
		/* The kernel rounds rps_sock_flow_entries up to a power of two: the read-back would differ. */
		if (p->kind == POLICY_RPS_FLOWS && nv.v[0] > 0 && (nv.v[0] & (nv.v[0] - 1)) != 0)
			return refuse(-ERANGE, err, errlen, "%s: %lld is not a power of two", p->name, (long long)nv.v[0]);
		if (p->max_step > 0) {
			int r = check_step_from(p, current, &nv, err, errlen);

			if (r < 0)
				return r;
		}
		break;
	case KNOB_T_CPULIST:
	case KNOB_T_CPUMAP:
		for (size_t i = 0; i < (p->type == KNOB_T_CPUMAP ? nv.n : 1); i++) {
			const struct knobval_cpuset *s = p->type == KNOB_T_CPUMAP ? &nv.map[i].cpus : &nv.cpus;
			unsigned lo, hi;

			if (knobval_cpuset_span(s, &lo, &hi) < 0) {
				/* The kernel refuses an IRQ with no CPU; an empty rps_cpus is RPS off, which is fine. */
				if (p->kind == POLICY_IRQ_AFFINITY)
					return refuse(-ERANGE, err, errlen, "%s: IRQ %u has no CPU", p->name, nv.map[i].key);
				continue;
			}
			if (lo < p->min[0] || hi > p->max[0])
				return refuse(-ERANGE, err, errlen, "%s: CPU %u is outside %lld..%lld", p->name,
					      lo < p->min[0] ? lo : hi, (long long)p->min[0], (long long)p->max[0]);
		}
		break;
	case KNOB_T_ONOFF:
		break;
	}
	/* Validation let constraints join int and intvec knobs only. */
	if (p->type == KNOB_T_INT || p->type == KNOB_T_INTVEC)
		return check_constraints_of(set, p, &nv, value_of, ctx, err, errlen);
	return 0;
}

/* ---- steps and bounds for the planner and the API ------------------------------------------------------------ */

/* The power of two nearest N in the direction of travel, kept inside [LO, HI] where one exists. */
static int64_t pow2_toward(int64_t n, bool up, int64_t lo, int64_t hi)
{
	int64_t p = 1;

	while (p < n && p < ((int64_t)1 << 40))
		p <<= 1;
	if (p > n && (!up || p > hi))
		p >>= 1;
	if (p < lo && p < ((int64_t)1 << 40))
		p <<= 1;
	return p;
}

int policy_step_value(const struct knob_policy *p, const char *current, bool up, char *out, size_t outlen)
{
	struct knobval v;
	bool moved = false;

	if ((p->type != KNOB_T_INT && p->type != KNOB_T_INTVEC) || p->step <= 0)
		return -EINVAL;
	if (knobval_parse(p->type, current, &v, NULL, 0) < 0 || (p->type == KNOB_T_INTVEC && v.n != p->nelem))
		return -EINVAL;
	for (size_t i = 0; i < v.n; i++) {
		int64_t c = v.v[i], n;
		double d;

		/* Never against the asked direction; from outside the bounds the first step is to the nearest bound. */
		if (up ? c >= p->max[i] : c <= p->min[i])
			continue;
		if (c < p->min[i] || c > p->max[i]) {
			n = clamp(c, p->min[i], p->max[i]);
		} else {
			if (p->step_mul)
				d = up ? (c < 1 ? 1 : (double)c) * p->step : (double)c / p->step;
			else
				d = up ? (double)c + p->step : (double)c - p->step;
			if (d <= (double)p->min[i])
				n = p->min[i];
			else if (d >= (double)p->max[i])
				n = p->max[i];
			else
				n = (int64_t)llround(d);
			/* A factor that rounds back to where it started still moves by one. */
			if (n == c)
				n = up ? c + 1 : c - 1;
			if (p->kind == POLICY_RPS_FLOWS && n > 0)
				n = pow2_toward(n, up, p->min[i], p->max[i]);
			n = clamp(n, p->min[i], p->max[i]);
		}
		moved |= n != c;
		v.v[i] = n;
	}
	if (!moved)
		return -ERANGE;
	return knobval_format(&v, out, outlen);
}

int policy_bounds_text(const struct knob_policy *p, char *buf, size_t len)
{
	size_t pos = 0;
	int n = 0;

	if (len == 0)
		return -ENOSPC;
	buf[0] = '\0';
	switch (p->type) {
	case KNOB_T_INT:
		n = snprintf(buf, len, "%lld..%lld", (long long)p->min[0], (long long)p->max[0]);
		break;
	case KNOB_T_INTVEC:
		for (size_t i = 0; i < p->nelem && pos < len; i++) {
			n = snprintf(buf + pos, len - pos, "%s[%lld..%lld]", i ? " " : "", (long long)p->min[i],
				     (long long)p->max[i]);
			pos += (size_t)n;
		}
		n = (int)pos;
		break;
	case KNOB_T_ENUM:
		for (size_t i = 0; i < p->nvalues && pos < len; i++) {
			n = snprintf(buf + pos, len - pos, "%s%s", i ? "|" : "", p->values[i]);
			pos += (size_t)n;
		}
		n = (int)pos;
		break;
	case KNOB_T_ONOFF:
		n = snprintf(buf, len, "on|off");
		break;
	case KNOB_T_CPULIST:
	case KNOB_T_CPUMAP:
		n = snprintf(buf, len, "CPUs %lld..%lld", (long long)p->min[0], (long long)p->max[0]);
		break;
	}
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -ENOSPC;
	}
	return 0;
}

bool policy_kind_reloads_nginx(enum policy_kind kind)
{
	return kind == POLICY_NGINX_DIRECTIVE || kind == POLICY_LISTEN_QUEUE || kind == POLICY_LISTEN_PARAM ||
	       kind == POLICY_UPSTREAM_KEEPALIVE;
}
