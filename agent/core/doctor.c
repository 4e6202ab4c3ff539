/*
 * doctor: see doctor.h. The checks run in the order of the table at the end of this file; each one reads the
 * configuration model and the facts and adds findings. Thresholds are named constants next to the check that
 * uses them, with the reason for their value; docs/ngx-autotune.8 (ADVISORIES) lists them for operators.
 *
 * nginx's inheritance is modelled where a check depends on it: a directive applies to the block it is written in
 * and to blocks nested in it that do not set it themselves, wherever it stands in the block (nginx merges after
 * parsing, so a directive below a nested location still applies to that location). proxy_set_header follows
 * nginx's stricter rule: a level inherits the set of its parent only when it sets none itself. access_log likewise.
 */
#include "doctor.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the configuration model ------------------------------------------------------------------------------ */

void doctor_conf_init(struct doctor_conf *c)
{
	memset(c, 0, sizeof(*c));
}

static const char *intern_file(struct doctor_conf *c, const char *path)
{
	char *p;

	for (size_t i = c->nfiles; i-- > 0;)
		if (strcmp(c->files[i], path) == 0)
			return c->files[i];
	if (c->nfiles == c->fcap) {
		size_t cap = c->fcap ? c->fcap * 2 : 16;
		char **v = realloc(c->files, cap * sizeof(*v));

		if (!v)
			return NULL;
		c->files = v;
		c->fcap = cap;
	}
	p = strdup(path);
	if (!p)
		return NULL;
	c->files[c->nfiles++] = p;
	return p;
}

static void node_free(struct doctor_node *n)
{
	if (n->kind != DOCTOR_END)
		free((char *)n->name);
	for (size_t i = 0; i < n->nargs; i++)
		free(n->args[i]);
	free(n->args);
}

int doctor_conf_add(struct doctor_conf *c, enum doctor_node_kind kind, const char *file, unsigned line,
		    const char *const *words, size_t nwords)
{
	struct doctor_node n;

	if (c->finished || (kind != DOCTOR_END && (nwords == 0 || !words[0] || !words[0][0])))
		return -EINVAL;
	if (c->n >= DOCTOR_NODES_MAX)
		return -E2BIG;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct doctor_node *v = realloc(c->nodes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->nodes = v;
		c->cap = cap;
	}
	memset(&n, 0, sizeof(n));
	n.kind = kind;
	n.line = line;
	n.parent = n.end = DOCTOR_TOP;
	n.file = intern_file(c, file ? file : "");
	if (!n.file)
		return -ENOMEM;
	if (kind == DOCTOR_END) {
		n.name = "";
	} else if (kind == DOCTOR_INCLUDE) {
		n.name = strdup("include");
		n.args = calloc(1, sizeof(*n.args));
		if (!n.name || !n.args || !(n.args[0] = strdup(words[0]))) {
			node_free(&n);
			return -ENOMEM;
		}
		n.nargs = 1;
	} else {
		n.name = strdup(words[0]);
		n.args = nwords > 1 ? calloc(nwords - 1, sizeof(*n.args)) : NULL;
		if (!n.name || (nwords > 1 && !n.args)) {
			node_free(&n);
			return -ENOMEM;
		}
		for (size_t i = 1; i < nwords; i++) {
			n.args[i - 1] = strdup(words[i] ? words[i] : "");
			if (!n.args[i - 1]) {
				node_free(&n);
				return -ENOMEM;
			}
			n.nargs++;
		}
	}
	c->nodes[c->n++] = n;
	return 0;
}

int doctor_conf_finish(struct doctor_conf *c, char *err, size_t errlen)
{
	size_t *stack, sp = 0;

	stack = malloc((c->n + 1) * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		struct doctor_node *n = &c->nodes[i];

		n->parent = sp ? stack[sp - 1] : DOCTOR_TOP;
		if (n->kind == DOCTOR_BLOCK) {
			stack[sp++] = i;
		} else if (n->kind == DOCTOR_END) {
			if (sp == 0) {
				snprintf(err, errlen, "%s:%u: \"}\" closes no block", n->file, n->line);
				free(stack);
				return -EINVAL;
			}
			c->nodes[stack[--sp]].end = i;
			n->parent = sp ? stack[sp - 1] : DOCTOR_TOP;
		}
	}
	if (sp) {
		const struct doctor_node *b = &c->nodes[stack[sp - 1]];

		snprintf(err, errlen, "%s:%u: block \"%s\" is not closed", b->file, b->line, b->name);
		free(stack);
		return -EINVAL;
	}
	free(stack);
	c->finished = true;
	return 0;
}

void doctor_conf_free(struct doctor_conf *c)
{
	for (size_t i = 0; i < c->n; i++)
		node_free(&c->nodes[i]);
	free(c->nodes);
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->files[i]);
	free(c->files);
	memset(c, 0, sizeof(*c));
}

/* ---- facts ------------------------------------------------------------------------------------------------ */

void doctor_facts_init(struct doctor_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->cpus = f->mem_total_kb = DOCTOR_UNKNOWN;
	f->governor_cpus = f->governor_other = 0;
	f->master_pid = f->master_nofile = f->worker_pid = f->worker_nofile = DOCTOR_UNKNOWN;
	f->somaxconn = f->tw_recycle = f->port_lo = f->port_hi = DOCTOR_UNKNOWN;
	f->conntrack_count = f->conntrack_max = DOCTOR_UNKNOWN;
	f->time_wait = f->close_wait = f->close_wait_min = DOCTOR_UNKNOWN;
	f->retrans_segs = f->out_segs = f->listen_overflows = f->active_opens = DOCTOR_UNKNOWN;
	f->peak_active = DOCTOR_UNKNOWN;
	f->peak_established = DOCTOR_UNKNOWN;
	f->err_worker_connections = f->err_too_many_files = DOCTOR_UNKNOWN;
	f->err_upstream_premature = f->err_addr_not_avail = DOCTOR_UNKNOWN;
	f->log_lines = DOCTOR_UNKNOWN;
}

void doctor_facts_add_upstream(struct doctor_facts *f, const char *addr, size_t len, uint32_t ms)
{
	struct doctor_upstream *u;

	if (len >= sizeof(f->upstreams[0].addr))
		len = sizeof(f->upstreams[0].addr) - 1;
	for (size_t i = 0; i < f->nupstreams; i++) {
		u = &f->upstreams[i];
		if (strlen(u->addr) == len && memcmp(u->addr, addr, len) == 0) {
			u->tries++;
			u->ms += ms;
			return;
		}
	}
	if (f->nupstreams == DOCTOR_UPSTREAMS_MAX) {
		f->upstreams_other_tries++;
		f->upstreams_other_ms += ms;
		return;
	}
	u = &f->upstreams[f->nupstreams++];
	memcpy(u->addr, addr, len);
	u->addr[len] = '\0';
	u->tries = 1;
	u->ms = ms;
}

/* ---- findings --------------------------------------------------------------------------------------------- */

const char *doctor_severity_name(enum doctor_severity s)
{
	switch (s) {
	case DOCTOR_CRITICAL: return "critical";
	case DOCTOR_WARNING: return "warning";
	default: return "info";
	}
}

/* What every check sees. */
struct ctx {
	const struct doctor_conf *conf; /* NULL: no configuration */
	const char *conf_err;           /* why CONF is NULL */
	const struct doctor_facts *f;
	struct doctor_report *rep;
	int err; /* -ENOMEM from adding a finding */
	struct doctor_finding scratch;  /* where a finding past the bound is written, and dropped */
	size_t http, events;            /* their blocks, or DOCTOR_TOP */
	int64_t worker_connections;     /* effective, per worker */
	int64_t worker_processes;       /* effective count; DOCTOR_UNKNOWN when "auto" and the CPUs are unknown */
	bool proxies;                   /* some location proxies to an upstream */
};

static void put(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void put(char *dst, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, n, fmt, ap);
	va_end(ap);
}

/* Append to DST (holding a string) within N bytes. */
static void append(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void append(char *dst, size_t n, const char *fmt, ...)
{
	size_t len = strlen(dst);
	va_list ap;

	if (len + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(dst + len, n - len, fmt, ap);
	va_end(ap);
}

static struct doctor_finding *add(struct ctx *c, const char *id, const char *subject, enum doctor_severity sev,
				  const char *title, const char *ref)
{
	struct doctor_report *r = c->rep;
	struct doctor_finding *f;

	/* Past the bound the finding is built and thrown away: the checks need somewhere to write. */
	if (r->n >= DOCTOR_FINDINGS_MAX) {
		r->dropped++;
		return &c->scratch;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct doctor_finding *v = realloc(r->v, cap * sizeof(*v));

		if (!v) {
			c->err = -ENOMEM;
			return &c->scratch;
		}
		r->v = v;
		r->cap = cap;
	}
	f = &r->v[r->n++];
	memset(f, 0, sizeof(*f));
	put(f->id, sizeof(f->id), "%s", id);
	put(f->subject, sizeof(f->subject), "%s", subject ? subject : "");
	f->severity = sev;
	put(f->title, sizeof(f->title), "%s", title);
	put(f->ref, sizeof(f->ref), "%s", ref);
	return f;
}

/* F's fix as the agent's knob KNOB at VALUE ("" for one step of its rule); LIMIT: it raises a limit. */
static void remedy(struct doctor_finding *f, const char *knob, bool limit, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void remedy(struct doctor_finding *f, const char *knob, bool limit, const char *fmt, ...)
{
	va_list ap;

	if (!f)
		return;
	snprintf(f->remedy.knob, sizeof(f->remedy.knob), "%s", knob);
	va_start(ap, fmt);
	vsnprintf(f->remedy.value, sizeof(f->remedy.value), fmt, ap);
	va_end(ap);
	f->remedy.limit = limit;
}

static void where(struct doctor_finding *f, const struct doctor_node *n)
{
	if (n)
		put(f->where, sizeof(f->where), "%s:%u", n->file, n->line);
}

/* ---- reading the configuration ---------------------------------------------------------------------------- */

static bool known(int64_t v)
{
	return v != DOCTOR_UNKNOWN;
}

/* The first directive NAME directly in block B (DOCTOR_TOP: the top level), or NULL. */
static const struct doctor_node *direct(const struct doctor_conf *conf, size_t b, const char *name)
{
	size_t i = b == DOCTOR_TOP ? 0 : b + 1, end = b == DOCTOR_TOP ? conf->n : conf->nodes[b].end;

	while (i < end) {
		const struct doctor_node *n = &conf->nodes[i];

		if (n->kind == DOCTOR_BLOCK) {
			i = n->end + 1;
			continue;
		}
		if (n->kind == DOCTOR_DIRECTIVE && strcmp(n->name, name) == 0)
			return n;
		i++;
	}
	return NULL;
}

/* Directive NAME as it applies in block B: set there, else in the nearest enclosing block that sets it. */
static const struct doctor_node *effective(const struct doctor_conf *conf, size_t b, const char *name)
{
	for (;;) {
		const struct doctor_node *n = direct(conf, b, name);

		if (n || b == DOCTOR_TOP)
			return n;
		b = conf->nodes[b].parent;
	}
}

/* The block named NAME directly in block B, or DOCTOR_TOP. */
static size_t block_in(const struct doctor_conf *conf, size_t b, const char *name)
{
	for (size_t i = b == DOCTOR_TOP ? 0 : b + 1; i < (b == DOCTOR_TOP ? conf->n : conf->nodes[b].end); i++) {
		const struct doctor_node *n = &conf->nodes[i];

		if (n->kind == DOCTOR_BLOCK && n->parent == b && strcmp(n->name, name) == 0)
			return i;
	}
	return DOCTOR_TOP;
}

/* Whether block B is named NAME and sits directly in a block named PARENT ("" for the top level). */
static bool block_is(const struct doctor_conf *conf, size_t b, const char *name, const char *parent)
{
	const struct doctor_node *n;

	if (b == DOCTOR_TOP)
		return false;
	n = &conf->nodes[b];
	if (n->kind != DOCTOR_BLOCK || strcmp(n->name, name) != 0)
		return false;
	if (!parent[0])
		return n->parent == DOCTOR_TOP;
	return n->parent != DOCTOR_TOP && strcmp(conf->nodes[n->parent].name, parent) == 0;
}

/* The module of node I's server: "http", "stream", "mail", or "". */
static const char *module_of(const struct doctor_conf *conf, size_t i)
{
	size_t b = conf->nodes[i].parent, top = DOCTOR_TOP;

	for (; b != DOCTOR_TOP; b = conf->nodes[b].parent)
		top = b;
	return top == DOCTOR_TOP ? "" : conf->nodes[top].name;
}

/* A whole decimal number of at most 18 digits: 0, or -EINVAL. */
static int to_i64(const char *s, int64_t *out)
{
	int64_t v = 0;
	size_t n = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++, n++) {
		if (!isdigit((unsigned char)*s) || n >= 18)
			return -EINVAL;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return 0;
}

/* An nginx time ("60", "60s", "1m30s", "500ms", "1h"): milliseconds, or -EINVAL. */
static int nginx_time_ms(const char *s, int64_t *out)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 },
		      { "w", 604800000 }, { "M", 2592000000LL }, { "y", 31536000000LL } };
	int64_t total = 0;

	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		int64_t v = 0, mul = 1000;
		size_t digits = 0, k;

		while (*s == ' ')
			s++;
		for (; isdigit((unsigned char)*s); s++, digits++) {
			if (digits >= 12)
				return -EINVAL;
			v = v * 10 + (*s - '0');
		}
		if (!digits)
			return -EINVAL;
		for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
			size_t ul = strlen(units[k].unit);

			if (strncmp(s, units[k].unit, ul) == 0 && (k != 2 || s[1] != 's')) {
				mul = units[k].ms;
				s += ul;
				break;
			}
		}
		if (k == sizeof(units) / sizeof(units[0]) && *s && *s != ' ')
			return -EINVAL;
		total += v * mul;
		while (*s == ' ')
			s++;
	}
	*out = total;
	return 0;
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* ---- the checks: nginx's configuration -------------------------------------------------------------------- */

#define DEFAULT_WORKER_CONNECTIONS 512
#define DEFAULT_BACKLOG 511             /* NGX_LISTEN_BACKLOG on Linux */
#define DEFAULT_UPSTREAM_KEEPALIVE_MS 60000
/*
 * What one connection costs a worker before any traffic: nginx allocates worker_connections ngx_connection_t (232
 * bytes on x86-64) and two ngx_event_t (96 bytes each) per worker at start. Only an absurd worker_connections makes
 * that matter; the check fires when it would take a quarter of the host's memory.
 */
#define CONN_PREALLOC_BYTES 424
#define CONN_PREALLOC_SHARE 4
/* Peak connections at this share of what the workers can hold: the next burst is refused. */
#define CONN_PEAK_SHARE 0.8
#define CONN_ACCEPT_STOP 0.875 /* nginx 1.22 stops accepting with fewer than an eighth of its connections free */
#define GZIP_LEVEL_MAX 6 /* levels above 6 cost CPU for a few percent less output */
#define GZIP_LEVEL_FIX 5 /* the agent's fix: measured on a 1 MB text, 2.4x the throughput of 9 for 3.4% more bytes */
/* Idle connections per worker the agent's fix keeps to each upstream: nginx closes every connection beyond them, so
 * they should cover a worker's requests in flight (measured: wrk -c200 through 2 workers, 1000 local ports: 24% 502
 * at 64, 12% at 128, none at 256). Twice the clients' connections per worker, a power of two in 64..512. */
#define UPSTREAM_KEEPALIVE_MIN 64
#define UPSTREAM_KEEPALIVE_MAX 512

static void check_config_readable(struct ctx *c)
{
	struct doctor_finding *f;

	if (c->conf)
		return;
	f = add(c, "doctor.nginx_config", NULL, DOCTOR_WARNING, "nginx's configuration could not be read",
		"nginx -T");
	put(f->evidence, sizeof(f->evidence), "%s: the configuration checks did not run",
	    c->conf_err && c->conf_err[0] ? c->conf_err : "no configuration");
	if (c->f->conf_rc == -EFBIG || c->f->conf_rc == -ENOMEM)
		/* The agent's own bound on its memory, not a fault of nginx's: the nginx knobs stay off until raised. */
		put(f->fix, sizeof(f->fix),
		    "the nginx knobs are off (observation and the kernel knobs go on); to tune nginx here, raise [nginx] "
		    "%s in the agent's configuration and the unit's MemoryMax with it (ngx-autotune.conf(5))",
		    c->f->conf_rc == -EFBIG ? "dump_max" : "memory_max");
	else
		put(f->fix, sizeof(f->fix),
		    "check [nginx] binary and conf in the agent's configuration, and that `nginx -T` succeeds for the "
		    "agent's user");
}

static void check_worker_processes(struct ctx *c)
{
	const struct doctor_node *n = direct(c->conf, DOCTOR_TOP, "worker_processes");
	int64_t cpus = c->f->cpus, v = 1;
	struct doctor_finding *f;

	if (n && n->nargs == 1 && strcmp(n->args[0], "auto") == 0)
		return;
	if (!known(cpus) || cpus < 1 || (n && (n->nargs != 1 || to_i64(n->args[0], &v) < 0)))
		return;
	if (v == cpus) {
		f = add(c, "nginx.worker_processes", NULL, DOCTOR_INFO, "worker_processes is a fixed number",
			"worker_processes");
		where(f, n);
		put(f->evidence, sizeof(f->evidence),
		    "worker_processes %lld at %s:%u matches the %lld CPUs online now, but will not follow a change "
		    "of CPUs (a resized VM, a CPU taken offline)", (long long)v, n->file, n->line, (long long)cpus);
		put(f->fix, sizeof(f->fix), "worker_processes auto;");
		return;
	}
	f = add(c, "nginx.worker_processes", NULL, DOCTOR_WARNING, "worker_processes does not match the CPUs",
		"worker_processes");
	where(f, n);
	if (n)
		put(f->evidence, sizeof(f->evidence), "worker_processes %lld at %s:%u; %lld CPUs online", (long long)v,
		    n->file, n->line, (long long)cpus);
	else
		put(f->evidence, sizeof(f->evidence), "worker_processes is not set (nginx's default: 1); %lld CPUs "
		    "online", (long long)cpus);
	append(f->evidence, sizeof(f->evidence), v < cpus ? ": nginx uses %lld of %lld cores" :
		   ": %lld workers compete for %lld cores", (long long)v, (long long)cpus);
	put(f->fix, sizeof(f->fix), "worker_processes auto; (one worker per CPU)");
	remedy(f, "nginx.worker_processes", false, "%lld", (long long)cpus);
}

static void check_worker_rlimit(struct ctx *c)
{
	const struct doctor_node *rl = direct(c->conf, DOCTOR_TOP, "worker_rlimit_nofile");
	int64_t v;
	struct doctor_finding *f;

	if (!rl || rl->nargs != 1 || to_i64(rl->args[0], &v) < 0 || v >= c->worker_connections)
		return;
	f = add(c, "nginx.worker_rlimit_nofile", NULL, DOCTOR_WARNING,
		"worker_rlimit_nofile is below worker_connections", "worker_rlimit_nofile");
	where(f, rl);
	put(f->evidence, sizeof(f->evidence),
	    "worker_rlimit_nofile %lld at %s:%u, worker_connections %lld: each connection (client or upstream) "
	    "is a file descriptor, so a worker runs out of files before it runs out of connections", (long long)v,
	    rl->file, rl->line, (long long)c->worker_connections);
	put(f->fix, sizeof(f->fix), "worker_rlimit_nofile %lld; (twice worker_connections leaves room for upstream "
	    "connections, log and cached files)", (long long)c->worker_connections * 2);
	remedy(f, "nginx.worker_rlimit_nofile", true, "%lld", (long long)c->worker_connections * 2);
}

static void check_nofile_limit(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	const struct doctor_node *rl = direct(c->conf, DOCTOR_TOP, "worker_rlimit_nofile");
	int64_t rlv = DOCTOR_UNKNOWN, have, pid;
	bool errs = known(fa->err_too_many_files) && fa->err_too_many_files > 0;
	struct doctor_finding *f;

	if (rl && (rl->nargs != 1 || to_i64(rl->args[0], &rlv) < 0))
		rlv = DOCTOR_UNKNOWN;
	have = known(fa->worker_nofile) ? fa->worker_nofile : known(rlv) ? rlv : fa->master_nofile;
	pid = known(fa->worker_nofile) ? fa->worker_pid : fa->master_pid;
	/* worker_rlimit_nofile set below worker_connections is nginx.worker_rlimit_nofile's finding. */
	if (known(rlv) && rlv < c->worker_connections && !(known(fa->worker_nofile) && fa->worker_nofile < rlv))
		have = DOCTOR_UNKNOWN;
	if ((!known(have) || have >= c->worker_connections) && !errs)
		return;
	f = add(c, "nginx.nofile_limit", NULL, errs ? DOCTOR_CRITICAL : DOCTOR_WARNING,
		"nginx workers may open fewer files than worker_connections", "LimitNOFILE, worker_rlimit_nofile");
	if (known(have) && have < c->worker_connections) {
		if (known(rlv) && known(fa->worker_nofile) && fa->worker_nofile < rlv)
			put(f->evidence, sizeof(f->evidence),
			    "worker_rlimit_nofile %lld did not take effect: worker %lld runs with Max open files %lld "
			    "(/proc/%lld/limits)", (long long)rlv, (long long)fa->worker_pid, (long long)have,
			    (long long)fa->worker_pid);
		else
			put(f->evidence, sizeof(f->evidence),
			    "%s %lld runs with Max open files %lld (/proc/%lld/limits) and worker_rlimit_nofile is not "
			    "set, but worker_connections is %lld", known(fa->worker_nofile) ? "worker" : "the master",
			    (long long)pid, (long long)have, (long long)pid, (long long)c->worker_connections);
	} else {
		put(f->evidence, sizeof(f->evidence), "file descriptors ran out");
	}
	if (errs)
		append(f->evidence, sizeof(f->evidence), "; nginx logged \"Too many open files\" %lld times",
		       (long long)fa->err_too_many_files);
	put(f->fix, sizeof(f->fix),
	    "services do not read /etc/security/limits.conf: set LimitNOFILE=%lld in a drop-in for nginx.service "
	    "(systemctl edit nginx), or worker_rlimit_nofile %lld; in nginx.conf", (long long)c->worker_connections * 2,
	    (long long)c->worker_connections * 2);
	remedy(f, "nginx.worker_rlimit_nofile", true, "%lld", (long long)c->worker_connections * 2);
}

static void check_worker_connections(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	const struct doctor_node *wc = c->events != DOCTOR_TOP ? direct(c->conf, c->events, "worker_connections") : NULL;
	int64_t wp = c->worker_processes, total, demand;
	bool errs = known(fa->err_worker_connections) && fa->err_worker_connections > 0;
	struct doctor_finding *f;
	char at[DOCTOR_WHERE_MAX + 16] = "";

	if (wc)
		put(at, sizeof(at), " at %s:%u", wc->file, wc->line);
	else
		put(at, sizeof(at), " (nginx's default)");
	if (!known(wp))
		return;
	total = c->worker_connections * wp;
	if (known(fa->mem_total_kb) && fa->mem_total_kb > 0 &&
	    (double)total * CONN_PREALLOC_BYTES > (double)fa->mem_total_kb * 1024 / CONN_PREALLOC_SHARE) {
		f = add(c, "nginx.worker_connections", "memory", DOCTOR_WARNING,
			"worker_connections is absurdly high for this host's memory", "worker_connections");
		where(f, wc);
		put(f->evidence, sizeof(f->evidence),
		    "worker_connections %lld%s x %lld workers: nginx allocates %.0f MiB of connection structures at "
		    "start, more than a quarter of the host's %.0f MiB", (long long)c->worker_connections, at,
		    (long long)wp, (double)total * CONN_PREALLOC_BYTES / 1048576.0, (double)fa->mem_total_kb / 1024.0);
		put(f->fix, sizeof(f->fix), "worker_connections to a few times the observed peak per worker (e.g. 4096 "
		    "to 16384)");
	}
	/* nginx 1.22 stops accepting while a worker has fewer than an eighth of its connections free, and logs
	 * nothing: the demand is the clients' connections, those waiting in the accept queue included (inet_diag),
	 * not only the ones nginx holds (stub_status's active stays below the limit that holds it back). */
	demand = known(fa->peak_established) && (!known(fa->peak_active) || fa->peak_established > fa->peak_active)
			 ? fa->peak_established
			 : fa->peak_active;
	if (errs || (known(demand) && (double)demand >= CONN_PEAK_SHARE * (double)total)) {
		int64_t want = 2 * c->worker_connections, need;

		f = add(c, "nginx.worker_connections", "peak", errs ? DOCTOR_CRITICAL : DOCTOR_WARNING,
			"worker_connections is too low for the observed peak", "worker_connections");
		where(f, wc);
		put(f->evidence, sizeof(f->evidence), "worker_connections %lld%s x %lld workers = %lld connections",
		    (long long)c->worker_connections, at, (long long)wp, (long long)total);
		if (known(fa->peak_active))
			append(f->evidence, sizeof(f->evidence), "; stub_status showed up to %lld active client "
			       "connections (upstream connections count too)", (long long)fa->peak_active);
		if (known(fa->peak_established) && demand == fa->peak_established)
			append(f->evidence, sizeof(f->evidence), "; up to %lld connections established to nginx's ports, "
			       "the accept queue's included", (long long)fa->peak_established);
		if (errs)
			append(f->evidence, sizeof(f->evidence), "; nginx logged \"worker_connections are not enough\" "
			       "%lld times", (long long)fa->err_worker_connections);
		put(f->fix, sizeof(f->fix), "raise worker_connections (the agent's worker_connections policy can try "
		    "it), with worker_rlimit_nofile at least twice as high");
		/* Room for the demand seen at the share above, a power of two per worker; twice today's at least, and
		 * four times where the demand seen is only a floor: nginx refused connections, or holds as many as it
		 * accepts (7/8 of them), and those the limit kept waiting or turned away are not all seen (found on
		 * Debian's stock 768 under 2000 clients: 1536 was kept in one run and reverted in the other, the errors
		 * fell by half or not at all, while 3072 served them all). */
		if (errs || (known(demand) && (double)demand >= CONN_ACCEPT_STOP * (double)total))
			want = 4 * c->worker_connections;
		if (known(demand) && wp > 0) {
			need = (int64_t)((double)demand / CONN_PEAK_SHARE / (double)wp);
			if ((double)need * (double)wp * CONN_PEAK_SHARE < (double)demand)
				need++;
			while (want < need && want < (INT64_C(1) << 40))
				want *= 2;
		}
		remedy(f, "nginx.worker_connections", true, "%lld", (long long)want);
	}
}

/* One listening socket as the configuration asks for it. */
struct listen_sock {
	char key[DOCTOR_SUBJECT_MAX];
	const struct doctor_node *n;  /* the directive with backlog=, else the first */
	int64_t backlog;              /* DOCTOR_UNKNOWN: not set */
	bool reuseport;
	const struct doctor_node *buf_n; /* the directive with rcvbuf= or sndbuf=, NULL when none has */
	char bufs[64];                /* those parameters as written */
};

/* "80" -> "*:80", "localhost" -> "localhost:80"; as nginx would bind it, roughly: enough to group duplicates. */
static void listen_key(const char *addr, const char *module, char *out, size_t n)
{
	bool digits = *addr != '\0';

	for (const char *p = addr; *p; p++)
		if (!isdigit((unsigned char)*p))
			digits = false;
	if (digits)
		put(out, n, "*:%s", addr);
	else if (addr[0] != '[' && !strchr(addr, ':') && strcmp(module, "http") == 0)
		put(out, n, "%s:80", addr);
	else
		put(out, n, "%s", addr);
}

/* The TCP listening sockets of http and stream servers, one per address (malloc'd into *OUT). */
static size_t listen_socks(const struct ctx *c, struct listen_sock **out)
{
	struct listen_sock *v = NULL;
	size_t nv = 0, cap = 0;

	*out = NULL;
	for (size_t i = 0; i < c->conf->n; i++) {
		const struct doctor_node *n = &c->conf->nodes[i];
		const char *module;
		char key[DOCTOR_SUBJECT_MAX];
		int64_t backlog = DOCTOR_UNKNOWN;
		bool udp = false, reuseport = false;
		char bufs[64] = "";
		size_t k;

		if (n->kind != DOCTOR_DIRECTIVE || strcmp(n->name, "listen") != 0 || n->nargs < 1 ||
		    n->parent == DOCTOR_TOP || strcmp(c->conf->nodes[n->parent].name, "server") != 0)
			continue;
		module = module_of(c->conf, i);
		if ((strcmp(module, "http") != 0 && strcmp(module, "stream") != 0) || has_prefix(n->args[0], "unix:"))
			continue;
		for (size_t a = 1; a < n->nargs; a++) {
			if (strcmp(n->args[a], "udp") == 0 || strcmp(n->args[a], "quic") == 0)
				udp = true;
			else if (strcmp(n->args[a], "reuseport") == 0)
				reuseport = true;
			else if (has_prefix(n->args[a], "backlog=") && to_i64(n->args[a] + 8, &backlog) < 0)
				backlog = DOCTOR_UNKNOWN;
			else if (has_prefix(n->args[a], "rcvbuf=") || has_prefix(n->args[a], "sndbuf="))
				append(bufs, sizeof(bufs), "%s%s", bufs[0] ? " " : "", n->args[a]);
		}
		if (udp)
			continue;
		listen_key(n->args[0], module, key, sizeof(key));
		for (k = 0; k < nv; k++)
			if (strcmp(v[k].key, key) == 0)
				break;
		if (k == nv) {
			if (nv == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct listen_sock *nvv = realloc(v, ncap * sizeof(*v));

				if (!nvv)
					break;
				v = nvv;
				cap = ncap;
			}
			memset(&v[nv], 0, sizeof(v[nv]));
			put(v[nv].key, sizeof(v[nv].key), "%s", key);
			v[nv].n = n;
			v[nv].backlog = DOCTOR_UNKNOWN;
			nv++;
		}
		/* nginx takes socket options from the one listen of an address that has them. */
		if (known(backlog)) {
			v[k].backlog = backlog;
			v[k].n = n;
		}
		v[k].reuseport |= reuseport;
		if (bufs[0] && !v[k].buf_n) {
			v[k].buf_n = n;
			put(v[k].bufs, sizeof(v[k].bufs), "%s", bufs);
		}
	}
	*out = v;
	return nv;
}

static void check_listen_backlog(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	struct listen_sock *v;
	size_t nv = listen_socks(c, &v);
	/* Overflows since boot may be old news; only those of the window make the default backlog a warning. */
	bool overflows = known(fa->listen_overflows) && fa->listen_overflows > 0 && fa->window_s > 0;

	for (size_t i = 0; known(fa->somaxconn) && i < nv; i++) {
		const struct listen_sock *l = &v[i];
		struct doctor_finding *f;

		if (known(l->backlog) ? l->backlog > fa->somaxconn : DEFAULT_BACKLOG > fa->somaxconn) {
			f = add(c, "nginx.listen_backlog", l->key, DOCTOR_WARNING,
				"listen backlog is above net.core.somaxconn: the kernel cuts it silently",
				"listen backlog=, net.core.somaxconn");
			where(f, l->n);
			if (known(l->backlog))
				put(f->evidence, sizeof(f->evidence), "listen %s backlog=%lld at %s:%u", l->key,
				    (long long)l->backlog, l->n->file, l->n->line);
			else
				put(f->evidence, sizeof(f->evidence), "listen %s at %s:%u has nginx's default backlog %d",
				    l->key, l->n->file, l->n->line, DEFAULT_BACKLOG);
			append(f->evidence, sizeof(f->evidence), ", but net.core.somaxconn is %lld in nginx's network "
			       "namespace: the accept queue holds %lld", (long long)fa->somaxconn, (long long)fa->somaxconn);
			put(f->fix, sizeof(f->fix), "raise net.core.somaxconn to at least %lld (the agent's listen-queue "
			    "policy does both together), or lower backlog=",
			    (long long)(known(l->backlog) ? l->backlog : DEFAULT_BACKLOG));
		} else if (!known(l->backlog) && fa->somaxconn > DEFAULT_BACKLOG) {
			f = add(c, "nginx.listen_backlog_default", l->key, overflows ? DOCTOR_WARNING : DOCTOR_INFO,
				"listen has nginx's default backlog of 511", "listen backlog=");
			where(f, l->n);
			put(f->evidence, sizeof(f->evidence), "listen %s at %s:%u has no backlog=: its accept queue "
			    "holds %d connections although net.core.somaxconn allows %lld", l->key, l->n->file,
			    l->n->line, DEFAULT_BACKLOG, (long long)fa->somaxconn);
			if (overflows)
				append(f->evidence, sizeof(f->evidence), "; the kernel counted %lld listen overflows in the "
				       "last %.0f s", (long long)fa->listen_overflows, fa->window_s);
			put(f->fix, sizeof(f->fix), "listen %s backlog=%lld; on the one listen of this address that "
			    "carries options (the agent's listen-queue policy can try it)", l->key,
			    (long long)fa->somaxconn);
		}
	}
	free(v);
}

/*
 * rcvbuf= or sndbuf= on a listen (tuning guides give them): the kernel fixes that buffer for every connection
 * the socket accepts, where it would otherwise grow each one with the connection's bandwidth and delay
 * (net.ipv4.tcp_rmem, tcp_wmem). And a reload cannot take it back: measured, a socket set to rcvbuf=16k kept
 * 32768 bytes after the parameter went and nginx reloaded; only a restart gives a socket without it.
 */
static void check_listen_buffers(struct ctx *c)
{
	struct listen_sock *v;
	size_t nv = listen_socks(c, &v);

	for (size_t i = 0; i < nv; i++) {
		const struct listen_sock *l = &v[i];
		struct doctor_finding *f;

		if (!l->buf_n)
			continue;
		f = add(c, "nginx.listen_buffers", l->key, DOCTOR_INFO,
			"listen fixes the socket buffers of every connection it accepts", "listen rcvbuf= sndbuf=");
		where(f, l->buf_n);
		put(f->evidence, sizeof(f->evidence), "listen %s %s at %s:%u: the kernel's buffer autotuning "
		    "(net.ipv4.tcp_rmem, tcp_wmem) is off for each of its connections", l->key, l->bufs, l->buf_n->file,
		    l->buf_n->line);
		put(f->fix, sizeof(f->fix), "remove %s unless a measurement asked for it, then restart nginx (a reload "
		    "keeps the socket's buffer as it was set)", l->bufs);
	}
	free(v);
}

static void check_accept_mutex(struct ctx *c)
{
	const struct doctor_node *am = c->events != DOCTOR_TOP ? direct(c->conf, c->events, "accept_mutex") : NULL;
	struct listen_sock *v;
	size_t nv, without = 0, first = 0;
	struct doctor_finding *f;

	if (!am || am->nargs != 1 || strcmp(am->args[0], "on") != 0)
		return;
	nv = listen_socks(c, &v);
	for (size_t i = 0; i < nv; i++)
		if (!v[i].reuseport && without++ == 0)
			first = i;
	if (without) {
		f = add(c, "nginx.accept_mutex", NULL, DOCTOR_WARNING, "accept_mutex on without reuseport",
			"accept_mutex, listen reuseport");
		where(f, am);
		put(f->evidence, sizeof(f->evidence), "accept_mutex on at %s:%u and %zu of %zu listening sockets "
		    "without reuseport (first: %s at %s:%u): workers take turns to accept, and a worker that holds the "
		    "mutex while busy delays every new connection by up to accept_mutex_delay (500 ms)", am->file,
		    am->line, without, nv, v[first].key, v[first].n->file, v[first].n->line);
		put(f->fix, sizeof(f->fix), "accept_mutex off; (nginx's default since 1.11.3), or reuseport on the "
		    "listen directives");
	}
	free(v);
}

/* An upstream block of http. */
struct upstream {
	size_t b;
	const char *name;
	const struct doctor_node *keepalive;
	size_t uses;                         /* proxy_pass directives naming it */
};

/* The http upstream blocks (malloc'd into *OUT). */
static size_t upstreams(const struct ctx *c, struct upstream **out)
{
	struct upstream *v = NULL;
	size_t nv = 0, cap = 0;

	*out = NULL;
	if (c->http == DOCTOR_TOP)
		return 0;
	for (size_t i = c->http + 1; i < c->conf->nodes[c->http].end; i++) {
		const struct doctor_node *n = &c->conf->nodes[i];

		if (!block_is(c->conf, i, "upstream", "http") || n->nargs < 1)
			continue;
		if (nv == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct upstream *nvv = realloc(v, ncap * sizeof(*v));

			if (!nvv)
				break;
			v = nvv;
			cap = ncap;
		}
		v[nv].b = i;
		v[nv].name = n->args[0];
		v[nv].keepalive = direct(c->conf, i, "keepalive");
		v[nv].uses = 0;
		nv++;
	}
	*out = v;
	return nv;
}

/* The host part of a proxy_pass URL into OUT ("http://app/x" -> "app"); false for a variable or a unix socket. */
static bool proxy_host(const char *url, char *out, size_t n)
{
	const char *p = url, *e;

	if (has_prefix(p, "http://"))
		p += 7;
	else if (has_prefix(p, "https://"))
		p += 8;
	else
		return false;
	if (strchr(url, '$') || has_prefix(p, "unix:"))
		return false;
	e = strchr(p, '/');
	if (!e)
		e = p + strlen(p);
	if (e == p || (size_t)(e - p) >= n)
		return false;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return true;
}

/* The proxy_set_header directives that apply at block B: those of the nearest level that has any. */
static size_t header_level(const struct doctor_conf *conf, size_t b)
{
	for (;;) {
		if (direct(conf, b, "proxy_set_header") || b == DOCTOR_TOP)
			return b;
		b = conf->nodes[b].parent;
	}
}

/* Whether level B (from header_level) sets Connection to "" (or to a variable, which may be empty). */
static bool sets_connection_empty(const struct doctor_conf *conf, size_t b)
{
	size_t i = b == DOCTOR_TOP ? 0 : b + 1, end = b == DOCTOR_TOP ? conf->n : conf->nodes[b].end;

	while (i < end) {
		const struct doctor_node *n = &conf->nodes[i];

		if (n->kind == DOCTOR_BLOCK) {
			i = n->end + 1;
			continue;
		}
		if (n->kind == DOCTOR_DIRECTIVE && strcmp(n->name, "proxy_set_header") == 0 && n->nargs == 2 &&
		    strcasecmp(n->args[0], "Connection") == 0 && (!n->args[1][0] || strchr(n->args[1], '$')))
			return true;
		i++;
	}
	return false;
}

/* The keepalive of the agent's fix (UPSTREAM_KEEPALIVE_MIN above): from the clients' connections seen, the accept
 * queue's included, per worker. */
static int64_t keepalive_fix(const struct ctx *c)
{
	int64_t peak = known(c->f->peak_established) ? c->f->peak_established : DOCTOR_UNKNOWN, n = UPSTREAM_KEEPALIVE_MIN;

	if (known(c->f->peak_active) && (!known(peak) || c->f->peak_active > peak))
		peak = c->f->peak_active;
	if (!known(peak) || !known(c->worker_processes) || c->worker_processes < 1)
		return n;
	while (n < UPSTREAM_KEEPALIVE_MAX && n < 2 * peak / c->worker_processes)
		n *= 2;
	return n;
}

static void check_upstreams(struct ctx *c)
{
	struct upstream *u;
	size_t nu = upstreams(c, &u);
	/* Findings per upstream for the proxy_pass side, counted first, reported once each. */
	size_t *bad_version = calloc(nu ? nu : 1, sizeof(size_t)), *bad_header = calloc(nu ? nu : 1, sizeof(size_t));
	const struct doctor_node **first_version = calloc(nu ? nu : 1, sizeof(*first_version));
	const struct doctor_node **first_header = calloc(nu ? nu : 1, sizeof(*first_header));
	const struct doctor_node **vnode = calloc(nu ? nu : 1, sizeof(*vnode));
	char (*literal)[DOCTOR_SUBJECT_MAX] = calloc(64, DOCTOR_SUBJECT_MAX);
	size_t nliteral = 0;

	if (!bad_version || !bad_header || !first_version || !first_header || !vnode || !literal) {
		c->err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < c->conf->n; i++) {
		const struct doctor_node *n = &c->conf->nodes[i];
		char host[DOCTOR_SUBJECT_MAX];
		size_t k;

		if (n->kind != DOCTOR_DIRECTIVE || strcmp(n->name, "proxy_pass") != 0 || n->nargs != 1 ||
		    strcmp(module_of(c->conf, i), "http") != 0 || !proxy_host(n->args[0], host, sizeof(host)))
			continue;
		for (k = 0; k < nu; k++)
			if (strcmp(u[k].name, host) == 0)
				break;
		if (k == nu) {
			/* An address, not an upstream block: nginx makes an implicit upstream without keepalive. */
			size_t j;
			struct doctor_finding *f;

			for (j = 0; j < nliteral; j++)
				if (strcmp(literal[j], host) == 0)
					break;
			if (j < nliteral || nliteral == 64)
				continue;
			put(literal[nliteral++], DOCTOR_SUBJECT_MAX, "%s", host);
			f = add(c, "nginx.upstream_keepalive", host, DOCTOR_WARNING,
				"proxied to without upstream keepalive", "upstream keepalive");
			where(f, n);
			put(f->evidence, sizeof(f->evidence), "proxy_pass %s at %s:%u names no upstream block, so nginx "
			    "opens a new connection to %s for every request (a TCP handshake, a TIME_WAIT socket and a "
			    "local port each)", n->args[0], n->file, n->line, host);
			put(f->fix, sizeof(f->fix), "upstream NAME { server %s; keepalive %lld; } in http {}, proxy_pass "
			    "http://NAME; with proxy_http_version 1.1; and proxy_set_header Connection \"\";", host,
			    (long long)keepalive_fix(c));
			remedy(f, "nginx.upstream_keepalive", false, "%lld", (long long)keepalive_fix(c));
			continue;
		}
		u[k].uses++;
		if (!u[k].keepalive)
			continue;
		{
			const struct doctor_node *ver = effective(c->conf, n->parent, "proxy_http_version");

			if (!ver || ver->nargs != 1 || strcmp(ver->args[0], "1.1") != 0) {
				if (bad_version[k]++ == 0) {
					first_version[k] = n;
					vnode[k] = ver;
				}
			}
			if (!sets_connection_empty(c->conf, header_level(c->conf, n->parent)) && bad_header[k]++ == 0)
				first_header[k] = n;
		}
	}
	for (size_t k = 0; k < nu; k++) {
		const struct doctor_node *b = &c->conf->nodes[u[k].b];
		struct doctor_finding *f;

		if (!u[k].keepalive) {
			f = add(c, "nginx.upstream_keepalive", u[k].name, DOCTOR_WARNING,
				"upstream without keepalive", "upstream keepalive");
			where(f, b);
			put(f->evidence, sizeof(f->evidence), "upstream %s at %s:%u has no keepalive: nginx opens a new "
			    "connection for every request it sends there", u[k].name, b->file, b->line);
			if (u[k].uses)
				append(f->evidence, sizeof(f->evidence), " (proxy_pass to it: %zu)", u[k].uses);
			put(f->fix, sizeof(f->fix), "keepalive %lld; in upstream %s, and proxy_http_version 1.1; "
			    "proxy_set_header Connection \"\"; where it is proxied to", (long long)keepalive_fix(c), u[k].name);
			remedy(f, "nginx.upstream_keepalive", false, "%lld", (long long)keepalive_fix(c));
			continue;
		}
		if (bad_version[k]) {
			const struct doctor_node *p = first_version[k], *ver = vnode[k];

			f = add(c, "nginx.proxy_http_version", u[k].name, DOCTOR_WARNING,
				"keepalive upstream proxied to with HTTP/1.0", "proxy_http_version");
			where(f, p);
			put(f->evidence, sizeof(f->evidence), "upstream %s has keepalive (%s:%u), but proxy_pass at %s:%u",
			    u[k].name, u[k].keepalive->file, u[k].keepalive->line, p->file, p->line);
			if (ver)
				append(f->evidence, sizeof(f->evidence), " uses proxy_http_version %s (%s:%u)",
				       ver->nargs ? ver->args[0] : "", ver->file, ver->line);
			else
				append(f->evidence, sizeof(f->evidence), " uses nginx's default proxy_http_version 1.0");
			append(f->evidence, sizeof(f->evidence), ", which closes the connection after each request");
			if (bad_version[k] > 1)
				append(f->evidence, sizeof(f->evidence), " (%zu proxy_pass directives)", bad_version[k]);
			put(f->fix, sizeof(f->fix), "proxy_http_version 1.1; where %s is proxied to (or once in http {})",
			    u[k].name);
			remedy(f, "nginx.upstream_keepalive", false, "%lld", (long long)keepalive_fix(c));
		}
		if (bad_header[k]) {
			const struct doctor_node *p = first_header[k];

			f = add(c, "nginx.proxy_connection_header", u[k].name, DOCTOR_WARNING,
				"keepalive upstream proxied to with \"Connection: close\"", "proxy_set_header");
			where(f, p);
			put(f->evidence, sizeof(f->evidence), "upstream %s has keepalive (%s:%u), but proxy_pass at %s:%u "
			    "sends nginx's default \"Connection: close\": no proxy_set_header Connection \"\" applies there",
			    u[k].name, u[k].keepalive->file, u[k].keepalive->line, p->file, p->line);
			if (bad_header[k] > 1)
				append(f->evidence, sizeof(f->evidence), " (%zu proxy_pass directives)", bad_header[k]);
			put(f->fix, sizeof(f->fix), "proxy_set_header Connection \"\"; at the level of the other "
			    "proxy_set_header directives: a level that sets any inherits none from above");
			remedy(f, "nginx.upstream_keepalive", false, "%lld", (long long)keepalive_fix(c));
		}
	}
	/* Idle upstream connections closed by the backend first: the next request on one fails. */
	for (size_t k = 0; k < nu; k++) {
		const struct doctor_node *kt;
		int64_t ms = DEFAULT_UPSTREAM_KEEPALIVE_MS;
		const struct doctor_facts *fa = c->f;
		bool premature = known(fa->err_upstream_premature) && fa->err_upstream_premature > 0;
		struct doctor_finding *f;

		if (!u[k].keepalive)
			continue;
		kt = direct(c->conf, u[k].b, "keepalive_timeout");
		if (kt && (kt->nargs != 1 || nginx_time_ms(kt->args[0], &ms) < 0))
			continue;
		if (!(fa->backend_keepalive_ms > 0 && ms >= fa->backend_keepalive_ms) &&
		    !(fa->backend_keepalive_ms <= 0 && premature))
			continue;
		f = add(c, "nginx.upstream_keepalive_timeout", u[k].name, DOCTOR_WARNING,
			"upstream keepalive_timeout is not shorter than the backend's", "upstream keepalive_timeout");
		where(f, kt ? kt : u[k].keepalive);
		if (kt)
			put(f->evidence, sizeof(f->evidence), "keepalive_timeout %s at %s:%u in upstream %s", kt->args[0],
			    kt->file, kt->line, u[k].name);
		else
			put(f->evidence, sizeof(f->evidence), "upstream %s keeps idle connections nginx's default 60s",
			    u[k].name);
		if (fa->backend_keepalive_ms > 0)
			append(f->evidence, sizeof(f->evidence), "; the backends close idle connections after %lld ms "
			       "([doctor] backend_keepalive_timeout)", (long long)fa->backend_keepalive_ms);
		if (premature)
			append(f->evidence, sizeof(f->evidence), "; nginx logged \"upstream prematurely closed "
			       "connection\" %lld times", (long long)fa->err_upstream_premature);
		append(f->evidence, sizeof(f->evidence), ": a request sent on a connection the backend is closing fails");
		put(f->fix, sizeof(f->fix), "keepalive_timeout in upstream %s shorter than the backend's idle timeout "
		    "(e.g. %llds when the backend keeps %llds)", u[k].name,
		    fa->backend_keepalive_ms > 1000 ? (long long)(fa->backend_keepalive_ms / 1000 - 1) : 4LL,
		    fa->backend_keepalive_ms > 1000 ? (long long)(fa->backend_keepalive_ms / 1000) : 5LL);
	}
out:
	free(bad_version);
	free(bad_header);
	free(first_version);
	free(first_header);
	free(vnode);
	free(literal);
	free(u);
}

static void check_next_upstream(struct ctx *c)
{
	for (size_t i = 0; i < c->conf->n; i++) {
		const struct doctor_node *n = &c->conf->nodes[i];
		size_t len = strlen(n->name);
		struct doctor_finding *f;
		char subject[DOCTOR_WHERE_MAX];
		bool hit = false;

		if (n->kind != DOCTOR_DIRECTIVE || len < 14 || strcmp(n->name + len - 14, "_next_upstream") != 0)
			continue;
		for (size_t a = 0; a < n->nargs; a++)
			hit |= strcmp(n->args[a], "non_idempotent") == 0;
		if (!hit)
			continue;
		put(subject, sizeof(subject), "%s:%u", n->file, n->line);
		f = add(c, "nginx.next_upstream_non_idempotent", subject, DOCTOR_WARNING,
			"non-idempotent requests are retried on the next upstream", n->name);
		where(f, n);
		put(f->evidence, sizeof(f->evidence), "%s ... non_idempotent at %s:%u: a POST, PATCH or LOCK that "
		    "timed out or failed after it was sent is sent again to another server, which can apply it twice",
		    n->name, n->file, n->line);
		put(f->fix, sizeof(f->fix), "remove non_idempotent from %s unless every backend handles repeated "
		    "requests safely", n->name);
	}
}

/* Whether server block S listens with TLS. */
static bool server_ssl(const struct doctor_conf *conf, size_t s)
{
	for (size_t i = s + 1; i < conf->nodes[s].end; i++) {
		const struct doctor_node *n = &conf->nodes[i];

		if (n->kind != DOCTOR_DIRECTIVE || n->parent != s)
			continue;
		if (strcmp(n->name, "ssl") == 0 && n->nargs == 1 && strcmp(n->args[0], "on") == 0)
			return true;
		if (strcmp(n->name, "listen") == 0)
			for (size_t a = 1; a < n->nargs; a++)
				if (strcmp(n->args[a], "ssl") == 0)
					return true;
	}
	return false;
}

static void check_ssl_session_cache(struct ctx *c)
{
	/* One finding per place the cache is (not) set: http's, or a server's own. */
	const struct doctor_node *done[64];
	size_t ndone = 0, servers_at_http = 0;
	const struct doctor_node *first_at_http = NULL;

	if (c->http == DOCTOR_TOP)
		return;
	for (size_t s = c->http + 1; s < c->conf->nodes[c->http].end; s++) {
		const struct doctor_node *n = &c->conf->nodes[s], *sc;
		struct doctor_finding *f;
		char subject[DOCTOR_WHERE_MAX];
		bool shared = false;
		size_t k;

		if (!block_is(c->conf, s, "server", "http") || !server_ssl(c->conf, s))
			continue;
		sc = effective(c->conf, s, "ssl_session_cache");
		for (size_t a = 0; sc && a < sc->nargs; a++)
			shared |= has_prefix(sc->args[a], "shared:");
		if (shared)
			continue;
		if (!sc || sc->parent != s) {
			if (servers_at_http++ == 0)
				first_at_http = n;
			continue;
		}
		for (k = 0; k < ndone; k++)
			if (done[k] == sc)
				break;
		if (k < ndone || ndone == 64)
			continue;
		done[ndone++] = sc;
		put(subject, sizeof(subject), "%s:%u", sc->file, sc->line);
		f = add(c, "nginx.ssl_session_cache", subject, DOCTOR_WARNING, "no shared TLS session cache",
			"ssl_session_cache");
		where(f, sc);
		put(f->evidence, sizeof(f->evidence), "ssl_session_cache %s at %s:%u in the TLS server at %s:%u is not "
		    "shared: each worker caches alone, so a returning client that lands on another worker pays a full "
		    "handshake", sc->nargs ? sc->args[0] : "", sc->file, sc->line, n->file, n->line);
		put(f->fix, sizeof(f->fix), "ssl_session_cache shared:SSL:10m; (about 40000 sessions)");
	}
	if (servers_at_http) {
		const struct doctor_node *sc = effective(c->conf, c->http, "ssl_session_cache");
		struct doctor_finding *f = add(c, "nginx.ssl_session_cache", "http", DOCTOR_WARNING,
					       "no shared TLS session cache", "ssl_session_cache");

		where(f, sc ? sc : first_at_http);
		if (sc)
			put(f->evidence, sizeof(f->evidence), "ssl_session_cache %s at %s:%u is not shared",
			    sc->nargs ? sc->args[0] : "", sc->file, sc->line);
		else
			put(f->evidence, sizeof(f->evidence), "ssl_session_cache is not set (nginx's default: none)");
		append(f->evidence, sizeof(f->evidence), " for %zu TLS server%s (first at %s:%u): returning clients pay "
		       "a full handshake", servers_at_http, servers_at_http == 1 ? "" : "s", first_at_http->file,
		       first_at_http->line);
		put(f->fix, sizeof(f->fix), "ssl_session_cache shared:SSL:10m; in http {} (about 40000 sessions), with "
		    "ssl_session_timeout 1h;");
	}
}

/* Types that are compressed already: gzip spends CPU on them for nothing. */
static bool compressed_type(const char *t)
{
	static const char *const types[] = {
		"image/jpeg", "image/png", "image/gif", "image/webp", "image/avif", "application/zip",
		"application/gzip", "application/x-gzip", "application/x-bzip2", "application/x-xz",
		"application/x-7z-compressed", "application/x-rar-compressed", "application/zstd", "font/woff",
		"font/woff2", "application/font-woff", "application/font-woff2", "audio/mpeg", "audio/ogg",
		"audio/aac", "application/vnd.rar",
	};

	if (has_prefix(t, "video/") || strcmp(t, "*") == 0)
		return true;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcasecmp(t, types[i]) == 0)
			return true;
	return false;
}

static void check_gzip(struct ctx *c)
{
	for (size_t i = 0; i < c->conf->n; i++) {
		const struct doctor_node *n = &c->conf->nodes[i];
		char subject[DOCTOR_WHERE_MAX], list[256] = "";
		struct doctor_finding *f;
		int64_t level;
		size_t bad = 0;

		if (n->kind != DOCTOR_DIRECTIVE)
			continue;
		put(subject, sizeof(subject), "%s:%u", n->file, n->line);
		if (strcmp(n->name, "gzip_comp_level") == 0 && n->nargs == 1 && to_i64(n->args[0], &level) == 0 &&
		    level > GZIP_LEVEL_MAX) {
			f = add(c, "nginx.gzip_comp_level", subject, DOCTOR_WARNING, "gzip_comp_level above 6",
				"gzip_comp_level");
			where(f, n);
			put(f->evidence, sizeof(f->evidence), "gzip_comp_level %lld at %s:%u: levels above %d cost "
			    "several times the CPU of level %d for a few percent smaller responses", (long long)level,
			    n->file, n->line, GZIP_LEVEL_MAX, GZIP_LEVEL_MAX - 1);
			put(f->fix, sizeof(f->fix), "gzip_comp_level 4; to 6 (5 is a common choice); precompress static "
			    "files with gzip_static");
			remedy(f, "nginx.gzip_comp_level", false, "%d", GZIP_LEVEL_FIX);
		}
		if (strcmp(n->name, "gzip_types") != 0)
			continue;
		for (size_t a = 0; a < n->nargs; a++)
			if (compressed_type(n->args[a]) && bad++ < 6)
				append(list, sizeof(list), "%s%s", bad > 1 ? ", " : "", n->args[a]);
		if (!bad)
			continue;
		f = add(c, "nginx.gzip_types", subject, DOCTOR_WARNING, "gzip of types that are already compressed",
			"gzip_types");
		where(f, n);
		put(f->evidence, sizeof(f->evidence), "gzip_types at %s:%u includes %s%s: compressing them again costs "
		    "CPU and saves nothing", n->file, n->line, list, bad > 6 ? ", ..." : "");
		put(f->fix, sizeof(f->fix), "list text types only in gzip_types (text/css application/javascript "
		    "application/json image/svg+xml ...)");
	}
}

/* The predefined format: it has no times. */
#define COMBINED "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent " \
		 "\"$http_referer\" \"$http_user_agent\""

/* The text of log format NAME into OUT (the words after the name and escape=). False when not defined. */
static bool log_format_text(const struct ctx *c, const char *name, char *out, size_t n)
{
	if (strcmp(name, "combined") == 0) {
		put(out, n, "%s", COMBINED);
		return true;
	}
	for (size_t i = 0; c->http != DOCTOR_TOP && i < c->conf->n; i++) {
		const struct doctor_node *d = &c->conf->nodes[i];

		if (d->kind != DOCTOR_DIRECTIVE || strcmp(d->name, "log_format") != 0 || d->nargs < 2 ||
		    strcmp(d->args[0], name) != 0)
			continue;
		out[0] = '\0';
		for (size_t a = 1; a < d->nargs; a++)
			if (!(a == 1 && has_prefix(d->args[a], "escape=")))
				append(out, n, "%s", d->args[a]);
		return true;
	}
	return false;
}

/* The log file of an access_log directive, or NULL for off, syslog and variables. */
static const char *log_file(const struct doctor_node *n)
{
	if (n->nargs < 1 || strcmp(n->args[0], "off") == 0 || has_prefix(n->args[0], "syslog:"))
		return NULL;
	return n->args[0];
}

static const char *log_format_of(const struct doctor_node *n)
{
	if (n->nargs >= 2 && !strchr(n->args[1], '=') && strcmp(n->args[1], "gzip") != 0)
		return n->args[1];
	return "combined";
}

/* The log_format the agent parses best, as a line to paste (the same as `ngx-autotune --setup` writes). */
#define NGXAT_LOG_FORMAT_LINE                                                                                       \
	"log_format ngxat_json escape=json '{\"time\":\"$time_iso8601\",\"status\":$status,"                          \
	"\"request_time\":$request_time,\"upstream_response_time\":\"$upstream_response_time\","                    \
	"\"upstream_addr\":\"$upstream_addr\",\"bytes\":$body_bytes_sent}';"

/* Whether log format text TEXT has the times the agent needs: $request_time, and $upstream_response_time where
 * nginx proxies. */
static bool log_timed(const struct ctx *c, const char *text)
{
	return strstr(text, "$request_time") && (!c->proxies || strstr(text, "$upstream_response_time"));
}

/* Whether the log the agent reads ([nginx] access_log) is written, by an access_log in http {}, in a format with
 * the times it needs. Then the formats of the operator's other logs (Debian's combined access.log beside the log of
 * ngxctl setup) are the operator's business: nothing to warn about. */
static bool agent_log_timed(const struct ctx *c)
{
	char text[8192];

	if (!c->f->access_log[0] || c->http == DOCTOR_TOP)
		return false;
	for (size_t i = c->http + 1; i < c->conf->nodes[c->http].end; i++) {
		const struct doctor_node *n = &c->conf->nodes[i];
		const char *file;

		if (n->kind != DOCTOR_DIRECTIVE || strcmp(n->name, "access_log") != 0 || !(file = log_file(n)) ||
		    strcmp(file, c->f->access_log) != 0)
			continue;
		if (log_format_text(c, log_format_of(n), text, sizeof(text)) && log_timed(c, text))
			return true;
	}
	return false;
}

static void check_access_log(struct ctx *c)
{
	const char *formats[32];
	size_t nformats = 0, nlogs = 0, buffered_missing = 0;
	const struct doctor_node *first_unbuffered = NULL;
	bool agent_log_found = false, agent_log_unsure = false, timed = false;
	char text[8192];
	struct doctor_finding *f;

	if (c->http == DOCTOR_TOP)
		return;
	timed = agent_log_timed(c);
	for (size_t i = c->http + 1; i < c->conf->nodes[c->http].end; i++) {
		const struct doctor_node *n = &c->conf->nodes[i];
		const char *file, *fmt;
		bool buffered = false;
		size_t k;

		if (n->kind != DOCTOR_DIRECTIVE || strcmp(n->name, "access_log") != 0)
			continue;
		nlogs++;
		file = log_file(n);
		if (!file)
			continue;
		if (c->f->access_log[0]) {
			if (strcmp(file, c->f->access_log) == 0)
				agent_log_found = true;
			else if (file[0] != '/' || strchr(file, '$'))
				agent_log_unsure = true;
		}
		for (size_t a = 1; a < n->nargs; a++)
			buffered |= has_prefix(n->args[a], "buffer=") || has_prefix(n->args[a], "gzip");
		if (!buffered && buffered_missing++ == 0)
			first_unbuffered = n;
		fmt = log_format_of(n);
		for (k = 0; k < nformats; k++)
			if (strcmp(formats[k], fmt) == 0)
				break;
		if (k < nformats || nformats == 32 || timed)
			continue;
		formats[nformats++] = fmt;
		if (!log_format_text(c, fmt, text, sizeof(text)))
			continue; /* nginx -T would have refused an unknown format */
		if (!log_timed(c, text)) {
			bool req = strstr(text, "$request_time") != NULL;

			f = add(c, "nginx.log_format_timing", fmt, DOCTOR_WARNING,
				"the access log format has no request times", "log_format");
			where(f, n);
			put(f->evidence, sizeof(f->evidence), "access_log %s at %s:%u uses format \"%s\", which has no %s: "
			    "the agent cannot see %s", file, n->file, n->line, fmt,
			    req ? "$upstream_response_time" : "$request_time",
			    req ? "how much of the time is spent upstream" : "latency");
			put(f->fix, sizeof(f->fix), "ngxctl setup --apply adds a log of its own in that format (the "
			    "operator's logs keep theirs); by hand, in http {}: " NGXAT_LOG_FORMAT_LINE " then access_log "
			    "/var/log/nginx/ngx-autotune.log ngxat_json buffer=64k flush=1s; and [nginx] access_log = "
			    "/var/log/nginx/ngx-autotune.log in agent.conf");
		}
	}
	if (nlogs == 0) {
		/* Nothing set anywhere: nginx logs every request unbuffered to logs/access.log in combined. */
		f = add(c, "nginx.access_log_buffer", NULL, DOCTOR_INFO, "the access log is written unbuffered",
			"access_log buffer=");
		where(f, &c->conf->nodes[c->http]);
		put(f->evidence, sizeof(f->evidence), "no access_log is set, so nginx's default applies: logs/access.log "
		    "in the combined format, one write() per request");
		put(f->fix, sizeof(f->fix), "access_log /var/log/nginx/access.log ngxat_json buffer=64k flush=1s;");
		f = add(c, "nginx.log_format_timing", "combined", DOCTOR_WARNING,
			"the access log format has no request times", "log_format");
		where(f, &c->conf->nodes[c->http]);
		put(f->evidence, sizeof(f->evidence), "nginx's default access log uses the combined format, which has no "
		    "$request_time: the agent cannot see latency");
		put(f->fix, sizeof(f->fix), "ngxctl setup --apply; by hand, in http {}: " NGXAT_LOG_FORMAT_LINE
		    " then access_log /var/log/nginx/ngx-autotune.log ngxat_json buffer=64k flush=1s; and [nginx] "
		    "access_log = /var/log/nginx/ngx-autotune.log in agent.conf");
	}
	if (buffered_missing) {
		const struct doctor_node *n = first_unbuffered;

		f = add(c, "nginx.access_log_buffer", NULL, DOCTOR_INFO, "the access log is written unbuffered",
			"access_log buffer=");
		where(f, n);
		put(f->evidence, sizeof(f->evidence), "access_log %s at %s:%u has no buffer=: nginx makes one write() "
		    "per request", n->args[0], n->file, n->line);
		if (buffered_missing > 1)
			append(f->evidence, sizeof(f->evidence), " (%zu access_log directives without buffer=)",
			       buffered_missing);
		put(f->fix, sizeof(f->fix), "access_log %s %s buffer=64k flush=1s; (the agent reads the log as it "
		    "grows: flush= bounds its delay)", n->args[0], log_format_of(n));
	}
	if (c->f->access_log[0] && !agent_log_found && !agent_log_unsure) {
		f = add(c, "agent.access_log", NULL, DOCTOR_WARNING, "nginx does not write the log the agent reads",
			"[nginx] access_log");
		put(f->evidence, sizeof(f->evidence), "the agent reads %s ([nginx] access_log), but no access_log "
		    "directive writes it%s", c->f->access_log, nlogs ? "" : " (none is set)");
		put(f->fix, sizeof(f->fix), "access_log %s ngxat_json buffer=64k flush=1s; in http {}, or point [nginx] "
		    "access_log at the log nginx writes", c->f->access_log);
	}
}

static void check_stub_status(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	const struct doctor_node *stub = NULL;
	struct doctor_finding *f;

	for (size_t i = 0; i < c->conf->n && !stub; i++)
		if (c->conf->nodes[i].kind == DOCTOR_DIRECTIVE && strcmp(c->conf->nodes[i].name, "stub_status") == 0)
			stub = &c->conf->nodes[i];
	if (!stub) {
		f = add(c, "nginx.stub_status", NULL, DOCTOR_WARNING, "no stub_status", "stub_status");
		put(f->evidence, sizeof(f->evidence), "no location has stub_status: the agent cannot count connections "
		    "(active, accepts, handled) or requests");
		put(f->fix, sizeof(f->fix), "ngxctl setup --apply; by hand, in http {}: server { listen 127.0.0.1:8190; "
		    "access_log off; location = /nginx_status { stub_status; allow 127.0.0.1; deny all; } } and "
		    "[nginx] stub_status_url = http://127.0.0.1:8190/nginx_status in agent.conf");
		return;
	}
	if (fa->stub_known && !fa->stub_ok) {
		f = add(c, "nginx.stub_status", NULL, DOCTOR_WARNING, "stub_status is not reachable", "stub_status");
		where(f, stub);
		put(f->evidence, sizeof(f->evidence), "stub_status is at %s:%u, but the agent's fetch of %s fails: %s",
		    stub->file, stub->line, fa->stub_url, fa->stub_error);
		put(f->fix, sizeof(f->fix), "point [nginx] stub_status_url at that location (from nginx's network "
		    "namespace), and allow 127.0.0.1 there");
	}
}

static void check_agent_includes(struct ctx *c)
{
	static const char *const contexts[] = { "main", "events", "http" };
	const char *dir = c->f->include_dir;
	size_t dl = strlen(dir);

	if (!dl)
		return;
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	for (size_t k = 0; k < 3; k++) {
		char path[512];
		bool found = false, elsewhere = false;
		struct doctor_finding *f;

		put(path, sizeof(path), "%.*s/%s.conf", (int)dl, dir, contexts[k]);
		for (size_t i = 0; i < c->conf->n; i++) {
			const struct doctor_node *n = &c->conf->nodes[i];
			bool here;

			if (n->kind != DOCTOR_INCLUDE || strcmp(n->args[0], path) != 0)
				continue;
			here = k == 0 ? n->parent == DOCTOR_TOP
				      : n->parent != DOCTOR_TOP && block_is(c->conf, n->parent, contexts[k], "");
			found |= here;
			elsewhere |= !here;
		}
		if (found)
			continue;
		/* A warning: every nginx knob of that context is unsupported without it. */
		f = add(c, "agent.include", contexts[k], DOCTOR_WARNING, "the agent's include file is not included",
			"ngx-autotune.conf(5) NGINX CONFIGURATION");
		put(f->evidence, sizeof(f->evidence), "nginx does not include %s %s%s%s%s: the agent cannot tune nginx "
		    "directives of that context", path, k == 0 ? "at the top level" : "inside ", k == 0 ? "" : contexts[k],
		    k == 0 ? "" : " {}", elsewhere ? " (it is included elsewhere, where its directives do not belong)" : "");
		put(f->fix, sizeof(f->fix), "ngxctl setup --apply; by hand, create the files first (mkdir -p %.*s && "
		    "touch %.*s/main.conf %.*s/events.conf %.*s/http.conf), then add include %s; %s%s%s, and nginx -t",
		    (int)dl, dir, (int)dl, dir, (int)dl, dir, (int)dl, dir, path,
		    k == 0 ? "at the top of nginx.conf" : "inside ", k == 0 ? "" : contexts[k],
		    k == 0 ? "" : " {} of nginx.conf");
	}
}

/* ---- the checks: the live system -------------------------------------------------------------------------- */

#define PORTS_TW_SHARE 0.5        /* TIME_WAIT sockets at half the local port range: connects start failing soon */
#define PORTS_CHURN_SHARE 0.25    /* connects in one TIME_WAIT period (60 s) at a quarter of the range */
#define CONNTRACK_WARN 0.8
#define CONNTRACK_CRIT 0.95
#define CLOSE_WAIT_WARN 64        /* never fewer in the window: they are not being closed */
#define CLOSE_WAIT_CRIT 4096
#define RETRANS_WARN 0.01
#define RETRANS_CRIT 0.05
#define RETRANS_MIN_SEGS 10000    /* below this the ratio is noise */
#define SOFTIRQ_SHARE 0.9         /* one CPU's share of NET_RX softirqs */
#define SOFTIRQ_MIN 10000         /* softirqs in the window before the share means anything */
#define UPSTREAM_SHARE 0.9        /* as detect.c's upstream_share_max: the upstream is the bottleneck */
#define UPSTREAM_MIN_LINES 100

static const char *window_text(const struct doctor_facts *f, char *buf, size_t n)
{
	if (f->window_s > 0)
		put(buf, n, "in the last %.0f s", f->window_s);
	else
		put(buf, n, "since boot");
	return buf;
}

/* A reload of the agent's brought no new generation of workers: it changes nothing in nginx until reloaded. */
static void check_nginx_halt(struct ctx *c)
{
	struct doctor_finding *f;

	if (!c->f->nginx_halt[0])
		return;
	f = add(c, "agent.nginx_reload", NULL, DOCTOR_CRITICAL,
		"a reload brought no new nginx workers: the agent has stopped changing nginx", "nginx -t, nginx's error log");
	put(f->evidence, sizeof(f->evidence), "%s", c->f->nginx_halt);
	put(f->fix, sizeof(f->fix), "find out why nginx did not start workers (its error log above; nginx -t; "
	    "systemctl status nginx), fix it, then systemctl reload ngx-autotune to let the agent change nginx again");
}

static void check_tw_recycle(struct ctx *c)
{
	struct doctor_finding *f;

	if (c->f->tw_recycle != 1)
		return;
	f = add(c, "kernel.tcp_tw_recycle", NULL, DOCTOR_CRITICAL, "tcp_tw_recycle is on",
		"net.ipv4.tcp_tw_recycle");
	put(f->evidence, sizeof(f->evidence), "net.ipv4.tcp_tw_recycle = 1: the kernel drops SYNs from clients behind "
	    "a NAT whose timestamps are not increasing, so some users cannot connect at all (the option was removed "
	    "in Linux 4.12 for this reason)");
	put(f->fix, sizeof(f->fix), "sysctl -w net.ipv4.tcp_tw_recycle=0 and remove it from /etc/sysctl.d; use "
	    "upstream keepalive (and tcp_tw_reuse for outgoing connections) instead");
}

static void check_port_range(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	int64_t ports;
	double rate = 0;
	bool addr_errs = known(fa->err_addr_not_avail) && fa->err_addr_not_avail > 0;
	struct doctor_finding *f;

	if (!known(fa->port_lo) || !known(fa->port_hi) || fa->port_hi < fa->port_lo)
		return;
	ports = fa->port_hi - fa->port_lo + 1;
	if (known(fa->active_opens) && fa->window_s > 0)
		rate = (double)fa->active_opens / fa->window_s;
	if (!addr_errs && !(known(fa->time_wait) && (double)fa->time_wait >= PORTS_TW_SHARE * (double)ports &&
			    rate * 60 >= PORTS_CHURN_SHARE * (double)ports))
		return;
	f = add(c, "kernel.ip_local_port_range", NULL,
		addr_errs || (known(fa->time_wait) && fa->time_wait >= ports * 9 / 10) ? DOCTOR_CRITICAL : DOCTOR_WARNING,
		"local ports are running out", "net.ipv4.ip_local_port_range");
	put(f->evidence, sizeof(f->evidence), "ip_local_port_range %lld %lld (%lld ports)", (long long)fa->port_lo,
	    (long long)fa->port_hi, (long long)ports);
	if (known(fa->time_wait))
		append(f->evidence, sizeof(f->evidence), "; %lld sockets in TIME_WAIT", (long long)fa->time_wait);
	if (rate > 0)
		append(f->evidence, sizeof(f->evidence), "; %.0f outgoing connections/s", rate);
	if (addr_errs)
		append(f->evidence, sizeof(f->evidence), "; nginx logged \"Cannot assign requested address\" %lld times",
		       (long long)fa->err_addr_not_avail);
	put(f->fix, sizeof(f->fix), "reuse upstream connections first (upstream keepalive); then widen the range: "
	    "sysctl -w net.ipv4.ip_local_port_range=\"1024 65000\", and net.ipv4.tcp_tw_reuse=1");
	/* A proposal names a cause the agent can show: nginx's own connect()s failing for want of a port. Churn and
	 * TIME_WAIT alone may be another program's (a load generator beside nginx) or nginx's server side, whose
	 * TIME_WAIT sockets hold the listen port, not a local one: advice, not a change. */
	if (addr_errs)
		remedy(f, "net.ipv4.ip_local_port_range", true, "%s", "");
}

static void check_conntrack(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	double share;
	struct doctor_finding *f;

	if (!known(fa->conntrack_count) || !known(fa->conntrack_max) || fa->conntrack_max <= 0)
		return;
	share = (double)fa->conntrack_count / (double)fa->conntrack_max;
	if (share < CONNTRACK_WARN)
		return;
	f = add(c, "kernel.conntrack", NULL, share >= CONNTRACK_CRIT ? DOCTOR_CRITICAL : DOCTOR_WARNING,
		"the connection tracking table is nearly full", "net.netfilter.nf_conntrack_max");
	put(f->evidence, sizeof(f->evidence), "nf_conntrack_count %lld of nf_conntrack_max %lld (%.0f%%): when it is "
	    "full the kernel drops new connections (\"nf_conntrack: table full, dropping packet\")",
	    (long long)fa->conntrack_count, (long long)fa->conntrack_max, 100 * share);
	put(f->fix, sizeof(f->fix), "raise net.netfilter.nf_conntrack_max (and the hashsize), or exempt nginx's ports "
	    "from tracking with a NOTRACK rule in the raw table");
}

static void check_close_wait(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	int64_t floor = known(fa->close_wait_min) ? fa->close_wait_min : fa->close_wait;
	struct doctor_finding *f;

	if (!known(floor) || floor < CLOSE_WAIT_WARN)
		return;
	f = add(c, "tcp.close_wait", NULL, floor >= CLOSE_WAIT_CRIT ? DOCTOR_CRITICAL : DOCTOR_WARNING,
		"sockets pile up in CLOSE_WAIT", "CLOSE_WAIT (ss -tan state close-wait)");
	put(f->evidence, sizeof(f->evidence), "%lld sockets in CLOSE_WAIT", (long long)fa->close_wait);
	if (known(fa->close_wait_min))
		append(f->evidence, sizeof(f->evidence), ", never fewer than %lld over the window",
		       (long long)fa->close_wait_min);
	append(f->evidence, sizeof(f->evidence), ": the peer closed these connections and the local process has "
	       "not");
	put(f->fix, sizeof(f->fix), "an application bug: find the process with ss -tanp state close-wait and make it "
	    "close its sockets; no kernel setting fixes this");
}

static void check_retransmissions(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	double share;
	char w[64];
	struct doctor_finding *f;

	if (!known(fa->retrans_segs) || !known(fa->out_segs) || fa->out_segs < RETRANS_MIN_SEGS)
		return;
	share = (double)fa->retrans_segs / (double)fa->out_segs;
	if (share <= RETRANS_WARN)
		return;
	f = add(c, "tcp.retransmissions", NULL, share >= RETRANS_CRIT ? DOCTOR_CRITICAL : DOCTOR_WARNING,
		"TCP retransmissions above 1%", "RetransSegs (/proc/net/snmp)");
	put(f->evidence, sizeof(f->evidence), "%lld of %lld segments sent were retransmissions (%.2f%%) %s in nginx's "
	    "network namespace", (long long)fa->retrans_segs, (long long)fa->out_segs, 100 * share,
	    window_text(fa, w, sizeof(w)));
	put(f->fix, sizeof(f->fix), "loss on the path, not an nginx setting: check NIC drops and errors (ip -s link), "
	    "duplex and MTU, and the network beyond; with loss, a congestion control such as bbr helps throughput");
}

static void check_nics(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	char w[64];

	for (size_t i = 0; i < fa->nnics; i++) {
		const struct doctor_nic *nic = &fa->nics[i];
		struct doctor_finding *f;

		if (nic->rx_drops > 0) {
			f = add(c, "net.rx_drops", nic->name, fa->window_s > 0 ? DOCTOR_WARNING : DOCTOR_INFO,
				"the NIC drops received packets", "rx_dropped, rx_missed_errors");
			put(f->evidence, sizeof(f->evidence), "%s dropped %lld received packets (rx_dropped + "
			    "rx_missed_errors) %s", nic->name, (long long)nic->rx_drops, window_text(fa, w, sizeof(w)));
			put(f->fix, sizeof(f->fix), "rx_missed: the ring is too small (ethtool -G %s rx 4096) or one CPU "
			    "cannot keep up (spread the queues); rx_dropped: see softnet_stat drops (netdev_max_backlog)",
			    nic->name);
		}
		if (nic->physical && known(nic->rx_queues) && known(fa->cpus) && nic->rx_queues < fa->cpus &&
		    !nic->rps) {
			f = add(c, "net.nic_queues", nic->name, DOCTOR_INFO, "the NIC has fewer queues than CPUs",
				"ethtool -L, rps_cpus");
			put(f->evidence, sizeof(f->evidence), "%s has %lld receive queue%s", nic->name,
			    (long long)nic->rx_queues, nic->rx_queues == 1 ? "" : "s");
			if (known(nic->irqs))
				append(f->evidence, sizeof(f->evidence), " and %lld IRQs", (long long)nic->irqs);
			append(f->evidence, sizeof(f->evidence), " for %lld CPUs, and RPS is off: its receive softirqs run "
			       "on at most %lld CPU%s", (long long)fa->cpus, (long long)nic->rx_queues,
			       nic->rx_queues == 1 ? "" : "s");
			put(f->fix, sizeof(f->fix), "more queues (ethtool -L %s combined %lld) if the NIC has them, else "
			    "RPS (the agent's rps policy can try it)", nic->name, (long long)fa->cpus);
		}
	}
}

static void check_softirq(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	uint64_t total = 0, top = 0;
	size_t topcpu = 0;
	char w[64];
	struct doctor_finding *f;

	if (fa->nnet_rx < 2)
		return;
	for (size_t i = 0; i < fa->nnet_rx; i++) {
		total += fa->net_rx[i];
		if (fa->net_rx[i] > top) {
			top = fa->net_rx[i];
			topcpu = i;
		}
	}
	if (total < SOFTIRQ_MIN || (double)top < SOFTIRQ_SHARE * (double)total)
		return;
	f = add(c, "net.softirq_imbalance", NULL, DOCTOR_WARNING, "one CPU takes almost all NET_RX softirqs",
		"/proc/softirqs, IRQ affinity, rps_cpus");
	put(f->evidence, sizeof(f->evidence), "CPU%zu ran %.0f%% of NET_RX softirqs (%llu of %llu) %s", topcpu,
	    100.0 * (double)top / (double)total, (unsigned long long)top, (unsigned long long)total,
	    window_text(fa, w, sizeof(w)));
	for (size_t i = 0; i < fa->nnics; i++) {
		const struct doctor_nic *nic = &fa->nics[i];

		if (!nic->physical)
			continue;
		append(f->evidence, sizeof(f->evidence), "; %s: ", nic->name);
		if (known(nic->rx_queues))
			append(f->evidence, sizeof(f->evidence), "%lld rx queue%s, ", (long long)nic->rx_queues,
			       nic->rx_queues == 1 ? "" : "s");
		if (known(nic->irqs))
			append(f->evidence, sizeof(f->evidence), "%lld IRQs, ", (long long)nic->irqs);
		append(f->evidence, sizeof(f->evidence), "RPS %s", nic->rps ? "on" : "off");
	}
	put(f->fix, sizeof(f->fix), "spread receive processing: IRQ affinity over CPUs when the NIC has several "
	    "queues (stop irqbalance from undoing it), else RPS; the agent's irq and rps policies can try both");
}

static void check_governor(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	struct doctor_finding *f;

	if (fa->governor_cpus <= 0 || fa->governor_other <= 0)
		return;
	f = add(c, "cpu.governor", NULL, DOCTOR_INFO, "the CPU frequency governor is not performance",
		"scaling_governor");
	put(f->evidence, sizeof(f->evidence), "%lld of %lld CPUs run the \"%s\" governor: a CPU that ramps up from a "
	    "low clock adds latency to the first requests of a burst", (long long)fa->governor_other,
	    (long long)fa->governor_cpus, fa->governor);
	put(f->fix, sizeof(f->fix), "cpupower frequency-set -g performance (or tuned-adm profile "
	    "throughput-performance), where the power budget allows");
}

static void check_thp(struct ctx *c)
{
	struct doctor_finding *f;

	if (strcmp(c->f->thp, "always") != 0)
		return;
	f = add(c, "kernel.thp", NULL, DOCTOR_INFO, "transparent huge pages are always on",
		"/sys/kernel/mm/transparent_hugepage/enabled");
	put(f->evidence, sizeof(f->evidence), "transparent_hugepage/enabled is \"always\": page faults may stall on "
	    "memory compaction and khugepaged, which shows as latency spikes");
	put(f->fix, sizeof(f->fix), "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (and the same at boot, "
	    "e.g. transparent_hugepage=madvise on the kernel command line)");
}

static void check_listen_overflows(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	char w[64];
	struct doctor_finding *f;

	if (!known(fa->listen_overflows) || fa->listen_overflows <= 0)
		return;
	f = add(c, "tcp.listen_overflows", NULL, fa->window_s > 0 ? DOCTOR_WARNING : DOCTOR_INFO,
		"listen queues overflow", "ListenOverflows (/proc/net/netstat)");
	put(f->evidence, sizeof(f->evidence), "the kernel counted %lld listen overflows %s in nginx's network "
	    "namespace: connections were refused or their SYNs dropped", (long long)fa->listen_overflows,
	    window_text(fa, w, sizeof(w)));
	put(f->fix, sizeof(f->fix), "a longer accept queue (listen backlog= with net.core.somaxconn; the agent's "
	    "listen-queue policy does both), and workers that accept sooner (CPU, worker_processes)");
}

/* ---- where the time goes ---------------------------------------------------------------------------------- */

static int cmp_upstream(const void *a, const void *b)
{
	const struct doctor_upstream *x = a, *y = b;

	return x->ms < y->ms ? 1 : x->ms > y->ms ? -1 : strcmp(x->addr, y->addr);
}

static void check_upstream_time(struct ctx *c)
{
	const struct doctor_facts *fa = c->f;
	struct doctor_upstream top[DOCTOR_UPSTREAMS_MAX];
	double share;
	struct doctor_finding *f;

	if (fa->log_lines < UPSTREAM_MIN_LINES || fa->log_request_ms == 0)
		return;
	share = (double)fa->log_upstream_ms / (double)fa->log_request_ms;
	if (share > 1)
		share = 1; /* nginx rounds request and upstream times separately */
	if (share < UPSTREAM_SHARE)
		return;
	/* $upstream_response_time includes nginx's own connect(): connects that fail on nginx's side (no local port
	 * left) are not the upstream's time, and the ports' finding says what they are (found on a real nginx: "mean
	 * 500 ms" of an upstream that answered in 1 ms). */
	if (known(fa->err_addr_not_avail) && fa->err_addr_not_avail > 0)
		return;
	f = add(c, "http.upstream_time", NULL, DOCTOR_WARNING, "the upstreams take most of the request time",
		"$upstream_response_time");
	put(f->evidence, sizeof(f->evidence), "upstreams took %.0f%% of request time over the last %lld requests of "
	    "the access log (%llu of %llu ms)", 100 * share, (long long)fa->log_lines,
	    (unsigned long long)fa->log_upstream_ms, (unsigned long long)fa->log_request_ms);
	memcpy(top, fa->upstreams, fa->nupstreams * sizeof(top[0]));
	qsort(top, fa->nupstreams, sizeof(top[0]), cmp_upstream);
	for (size_t i = 0; i < fa->nupstreams && i < 3; i++)
		append(f->evidence, sizeof(f->evidence), "%s %s (%llu requests, mean %.0f ms)",
		       i ? "," : "; the slowest:", top[i].addr, (unsigned long long)top[i].tries,
		       (double)top[i].ms / (double)(top[i].tries ? top[i].tries : 1));
	put(f->fix, sizeof(f->fix), "tuning nginx or the kernel will not help while the upstreams take this share: "
	    "look at the application%s and its database; the agent holds its own proposals meanwhile",
	    fa->nupstreams ? "s named above" : "");
}

/* ---- running the checks ----------------------------------------------------------------------------------- */

struct check {
	void (*fn)(struct ctx *c);
	bool needs_conf;
};

static const struct check checks[] = {
	{ check_upstream_time, false },
	{ check_config_readable, false },
	{ check_worker_processes, true },
	{ check_worker_rlimit, true },
	{ check_nofile_limit, true },
	{ check_worker_connections, true },
	{ check_listen_backlog, true },
	{ check_listen_buffers, true },
	{ check_accept_mutex, true },
	{ check_upstreams, true },
	{ check_next_upstream, true },
	{ check_ssl_session_cache, true },
	{ check_gzip, true },
	{ check_access_log, true },
	{ check_stub_status, true },
	{ check_agent_includes, true },
	{ check_nginx_halt, false },
	{ check_tw_recycle, false },
	{ check_port_range, false },
	{ check_conntrack, false },
	{ check_close_wait, false },
	{ check_retransmissions, false },
	{ check_listen_overflows, false },
	{ check_softirq, false },
	{ check_nics, false },
	{ check_governor, false },
	{ check_thp, false },
};

/* What several checks need: the main blocks and the effective worker settings. */
static void prepare(struct ctx *c)
{
	const struct doctor_node *n;
	int64_t v;

	c->http = block_in(c->conf, DOCTOR_TOP, "http");
	c->events = block_in(c->conf, DOCTOR_TOP, "events");
	c->worker_connections = DEFAULT_WORKER_CONNECTIONS;
	n = c->events != DOCTOR_TOP ? direct(c->conf, c->events, "worker_connections") : NULL;
	if (n && n->nargs == 1 && to_i64(n->args[0], &v) == 0)
		c->worker_connections = v;
	c->worker_processes = 1;
	n = direct(c->conf, DOCTOR_TOP, "worker_processes");
	if (n && n->nargs == 1 && strcmp(n->args[0], "auto") == 0)
		c->worker_processes = c->f->cpus > 0 ? c->f->cpus : DOCTOR_UNKNOWN;
	else if (n && (n->nargs != 1 || to_i64(n->args[0], &c->worker_processes) < 0 || c->worker_processes < 1))
		c->worker_processes = DOCTOR_UNKNOWN;
	for (size_t i = 0; i < c->conf->n && !c->proxies; i++)
		c->proxies = c->conf->nodes[i].kind == DOCTOR_DIRECTIVE &&
			     strcmp(c->conf->nodes[i].name, "proxy_pass") == 0;
}

static int cmp_finding(const void *a, const void *b)
{
	const struct doctor_finding *x = a, *y = b;
	bool xt = strcmp(x->id, "http.upstream_time") == 0, yt = strcmp(y->id, "http.upstream_time") == 0;
	int r;

	if (xt != yt)
		return xt ? -1 : 1;
	if (x->severity != y->severity)
		return x->severity > y->severity ? -1 : 1;
	r = strcmp(x->id, y->id);
	return r ? r : strcmp(x->subject, y->subject);
}

int doctor_check(const struct doctor_conf *conf, const char *conf_err, const struct doctor_facts *facts,
		 struct doctor_report *rep)
{
	struct ctx *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->conf = conf && conf->finished ? conf : NULL;
	c->conf_err = conf_err;
	c->f = facts;
	c->rep = rep;
	rep->n = rep->dropped = 0;
	if (c->conf)
		prepare(c);
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]) && c->err == 0; i++)
		if (!checks[i].needs_conf || c->conf)
			checks[i].fn(c);
	r = c->err;
	free(c);
	if (r)
		return r;
	if (rep->n)
		qsort(rep->v, rep->n, sizeof(rep->v[0]), cmp_finding);
	return 0;
}

void doctor_report_free(struct doctor_report *rep)
{
	free(rep->v);
	memset(rep, 0, sizeof(*rep));
}

/* ---- first seen, last seen -------------------------------------------------------------------------------- */

static bool same_finding(const struct doctor_finding *a, const struct doctor_finding *b)
{
	return strcmp(a->id, b->id) == 0 && strcmp(a->subject, b->subject) == 0;
}

int doctor_state_merge(struct doctor_state *st, const struct doctor_report *rep, int64_t now_ms)
{
	struct doctor_tracked *v = calloc(rep->n ? rep->n : 1, sizeof(*v));
	struct doctor_finding *gone = calloc(st->n ? st->n : 1, sizeof(*gone));
	size_t ngone = 0;

	if (!v || !gone) {
		free(v);
		free(gone);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rep->n; i++) {
		const struct doctor_tracked *old = NULL;

		for (size_t j = 0; j < st->n && !old; j++)
			if (same_finding(&st->v[j].f, &rep->v[i]))
				old = &st->v[j];
		v[i].f = rep->v[i];
		v[i].first_seen_ms = old ? old->first_seen_ms : now_ms;
		v[i].last_seen_ms = now_ms;
		v[i].fresh = !old;
		v[i].escalated = rep->v[i].severity == DOCTOR_CRITICAL && (!old || old->f.severity != DOCTOR_CRITICAL);
	}
	for (size_t j = 0; j < st->n; j++) {
		bool seen = false;

		for (size_t i = 0; i < rep->n && !seen; i++)
			seen = same_finding(&st->v[j].f, &rep->v[i]);
		if (!seen)
			gone[ngone++] = st->v[j].f;
	}
	free(st->v);
	free(st->gone);
	st->v = v;
	st->n = st->cap = rep->n;
	st->gone = gone;
	st->ngone = ngone;
	st->gonecap = ngone;
	st->checked_ms = now_ms;
	return 0;
}

void doctor_state_counts(const struct doctor_state *st, size_t counts[3])
{
	counts[0] = counts[1] = counts[2] = 0;
	for (size_t i = 0; i < st->n; i++)
		counts[st->v[i].f.severity]++;
}

void doctor_state_free(struct doctor_state *st)
{
	free(st->v);
	free(st->gone);
	memset(st, 0, sizeof(*st));
}
