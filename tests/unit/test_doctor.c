/*
 * Tests for the doctor's checks (core/doctor.c) through the whole pure path: an `nginx -T` dump captured from a
 * real nginx (tests/fixtures/doctor/capture.sh) -> nginx_conf -> doctor_conf -> doctor_check with a struct of
 * facts. Each case names a fixture, adjusts the facts of a healthy host, and lists every finding it expects, in
 * report order, as "severity id[subject]". The untuned Debian configuration must show the worker, backlog,
 * keepalive and logging findings; the tuned one none; each deliberately broken one exactly its own. Then the live
 * checks one by one, dumps nginx would refuse (a clear error, never a crash), the evidence's exact values, and the
 * first-seen/last-seen bookkeeping.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/doctor.h"
#include "diagnose/doctor_conf.h"

#define FX "/tmp/ngxat-doctor/"

static char *load(const char *name, size_t *len)
{
	const char *srcdir = getenv("srcdir");
	char path[4096];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/doctor/%s", srcdir ? srcdir : ".", name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* A healthy, quiet 4-CPU host with 8 GiB, running nginx from fixture CASE with the agent set up for it. */
static void healthy(struct doctor_facts *f, const char *fixture)
{
	char dir[128];
	size_t n = strcspn(fixture, ".");

	doctor_facts_init(f);
	snprintf(dir, sizeof(dir), FX "%.*s", (int)(n < 64 ? n : 64), fixture);
	snprintf(f->include_dir, sizeof(f->include_dir), "%s/ngx-autotune", dir);
	snprintf(f->access_log, sizeof(f->access_log), "%s/logs/access.log", dir);
	f->cpus = 4;
	f->mem_total_kb = 8 << 20;
	snprintf(f->thp, sizeof(f->thp), "madvise");
	f->master_pid = 100;
	f->master_nofile = 65536;
	f->worker_pid = 101;
	f->worker_nofile = 65536;
	f->somaxconn = 4096;
	f->port_lo = 32768;
	f->port_hi = 60999;
	f->time_wait = 10;
	f->close_wait = f->close_wait_min = 0;
	f->window_s = 300;
	f->retrans_segs = 10;
	f->out_segs = 100000;
	f->listen_overflows = 0;
	f->active_opens = 100;
	f->nnet_rx = 4;
	for (size_t i = 0; i < 4; i++)
		f->net_rx[i] = 5000;
	f->nnics = 1;
	snprintf(f->nics[0].name, sizeof(f->nics[0].name), "eth0");
	f->nics[0].physical = true;
	f->nics[0].rx_queues = 4;
	f->nics[0].irqs = 5;
	f->nics[0].rx_drops = 0;
	f->peak_active = 100;
	f->err_worker_connections = f->err_too_many_files = f->err_upstream_premature = f->err_addr_not_avail = 0;
	f->stub_known = f->stub_ok = true;
	snprintf(f->stub_url, sizeof(f->stub_url), "http://127.0.0.1/nginx_status");
	f->log_lines = 1000;
	f->log_request_ms = 10000;
	f->log_upstream_ms = 2000;
}

/* The report as lines "S id[subject]" (S: I, W, C), in order, with the agent's own fix when the finding has one:
 * " => knob value" (a value "" is one step of the knob's rule: " => knob +"), "!" when it raises a limit. */
static void render(const struct doctor_report *rep, char *out, size_t n)
{
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; i < rep->n && o < n; i++) {
		const struct doctor_finding *f = &rep->v[i];
		const struct doctor_remedy *r = &f->remedy;
		int k = snprintf(out + o, n - o, "%c %s%s%s%s%s%s%s%s%s\n", "IWC"[f->severity], f->id,
				 f->subject[0] ? "[" : "", f->subject, f->subject[0] ? "]" : "", r->knob[0] ? " => " : "",
				 r->knob, r->knob[0] ? " " : "", r->knob[0] ? (r->value[0] ? r->value : "+") : "",
				 r->knob[0] && r->limit ? "!" : "");

		o += k > 0 ? (size_t)k : 0;
		/* Every finding says what it saw, what to do, and where to read about it. */
		assert_true(f->title[0] && f->evidence[0] && f->fix[0] && f->ref[0]);
	}
}

static void run_fixture(const char *fixture, void (*adjust)(struct doctor_facts *), struct doctor_report *rep,
			struct doctor_conf *conf)
{
	struct doctor_facts *f = malloc(sizeof(*f));
	char err[512] = "";
	size_t len;
	char *dump = load(fixture, &len);

	assert_non_null(f);
	healthy(f, fixture);
	if (adjust)
		adjust(f);
	if (doctor_conf_from_dump(dump, len, conf, err, sizeof(err)) != 0)
		fail_msg("%s: %s", fixture, err);
	assert_int_equal(doctor_check(conf, NULL, f, rep), 0);
	free(dump);
	free(f);
}

/* ---- the configuration cases ------------------------------------------------------------------------------ */

/* Debian's defaults under load: 3000 active connections where 4 workers x 768 hold 3072. */
static void busy(struct doctor_facts *f)
{
	f->peak_active = 3000;
	f->master_nofile = 1024; /* systemd's default soft limit; 768 fits */
	f->worker_nofile = 1024;
}

/* nginx 1.22 out of connections: it stops accepting below the limit and logs nothing; the clients wait in the
 * accept queue (established, counted by inet_diag). */
static void queued_demand(struct doctor_facts *f)
{
	f->peak_active = 2400;
	f->peak_established = 5000;
}

static void no_agent(struct doctor_facts *f)
{
	f->include_dir[0] = '\0';
	f->access_log[0] = '\0';
}

/* nginx logs nothing here: the agent's log check is another case's. */
static void no_agent_log(struct doctor_facts *f)
{
	f->access_log[0] = '\0';
}

/* ngxctl setup --apply ran: the agent reads the log and the stub_status of the setup's setup.conf. */
static void setup_applied(struct doctor_facts *f)
{
	snprintf(f->access_log, sizeof(f->access_log), FX "setup/logs/ngx-autotune.log");
	snprintf(f->stub_url, sizeof(f->stub_url), "http://127.0.0.1:8190/nginx_status");
}

static void backend_5s(struct doctor_facts *f)
{
	no_agent(f);
	f->backend_keepalive_ms = 5000;
}

struct conf_case {
	const char *fixture;
	void (*adjust)(struct doctor_facts *f);
	const char *want;
};

static const struct conf_case conf_cases[] = {
	{ "untuned.txt", busy,
	  "W agent.include[events]\n"
	  "W agent.include[http]\n"
	  "W agent.include[main]\n"
	  "W nginx.log_format_timing[combined]\n"
	  "W nginx.stub_status\n"
	  "W nginx.upstream_keepalive[app] => nginx.upstream_keepalive 512\n"
	  /* 3000 active of 3072: past the 7/8 where nginx stops accepting, the demand seen is a floor: x4 */
	  "W nginx.worker_connections[peak] => nginx.worker_connections 3072!\n"
	  "I nginx.access_log_buffer\n"
	  "I nginx.listen_backlog_default[*:80]\n"
	  "I nginx.listen_backlog_default[[::]:80]\n" },
	{ "tuned.txt", NULL, "" },
	/* Debian's configuration after ngxctl setup --apply: the agent reads its own ngxat_json log, written beside
	 * Debian's combined access.log, whose format is the operator's business (issue 23: log_format_timing[combined]
	 * stayed, "fix: ngxctl setup --apply", and doctor exited 1 for ever). */
	{ "setup.txt", setup_applied,
	  "W nginx.upstream_keepalive[app] => nginx.upstream_keepalive 64\n"
	  "I nginx.access_log_buffer\n"
	  "I nginx.listen_backlog_default[*:80]\n"
	  "I nginx.listen_backlog_default[127.0.0.1:8190]\n"
	  "I nginx.listen_backlog_default[[::]:80]\n" },
	/* worker_processes 1 on 4 CPUs, worker_rlimit_nofile below worker_connections, accept_mutex on without
	 * reuseport, backlog=65535 above somaxconn 4096, rcvbuf= and sndbuf= on a listen; nginx writes no access
	 * log for the agent. */
	{ "workers.txt", NULL,
	  "W agent.access_log\n"
	  "W agent.include[events]\n"
	  "W agent.include[http]\n"
	  "W agent.include[main]\n"
	  "W nginx.accept_mutex\n"
	  "W nginx.listen_backlog[127.0.0.1:8081]\n"
	  "W nginx.worker_processes => nginx.worker_processes 4\n"
	  "W nginx.worker_rlimit_nofile => nginx.worker_rlimit_nofile 8192!\n"
	  "I nginx.listen_backlog_default[127.0.0.1:8082]\n"
	  "I nginx.listen_buffers[127.0.0.1:8082]\n" },
	/* Keepalive upstreams reached with a proxy_set_header that drops the inherited Connection "", and with
	 * HTTP/1.0; a retried POST; a proxy_pass to an address; keepalive_timeout longer than the backend's 5 s. */
	{ "proxy.txt", backend_5s,
	  "W nginx.next_upstream_non_idempotent[" FX "proxy/nginx.conf:25]\n"
	  "W nginx.proxy_connection_header[api] => nginx.upstream_keepalive 64\n"
	  "W nginx.proxy_http_version[api] => nginx.upstream_keepalive 64\n"
	  "W nginx.upstream_keepalive[127.0.0.1:9004] => nginx.upstream_keepalive 64\n"
	  "W nginx.upstream_keepalive_timeout[api]\n"
	  "W nginx.upstream_keepalive_timeout[static]\n"
	  "I nginx.listen_backlog_default[127.0.0.1:8083]\n" },
	/* gzip level 9, gzip of PNG, ZIP, WOFF2 and of everything; TLS without a shared session cache, once at
	 * http level (nothing set) and once in a server (builtin). */
	{ "tls_gzip.txt", no_agent,
	  "W nginx.gzip_comp_level[" FX "tls_gzip/nginx.conf:8] => nginx.gzip_comp_level 5\n"
	  "W nginx.gzip_types[" FX "tls_gzip/nginx.conf:21]\n"
	  "W nginx.gzip_types[" FX "tls_gzip/nginx.conf:9]\n"
	  "W nginx.ssl_session_cache[" FX "tls_gzip/nginx.conf:20]\n"
	  "W nginx.ssl_session_cache[http]\n"
	  "I nginx.listen_backlog_default[127.0.0.1:8443]\n"
	  "I nginx.listen_backlog_default[127.0.0.1:8444]\n"
	  "I nginx.listen_backlog_default[127.0.0.1:8445]\n" },
	/* A format without $upstream_response_time on a proxying server, an unbuffered log, http.conf included at
	 * the top level instead of in http {}, main.conf not included, a proxy_pass to an address. */
	{ "logs.txt", NULL,
	  "W agent.include[http]\n"
	  "W agent.include[main]\n"
	  "W nginx.log_format_timing[main]\n"
	  "W nginx.upstream_keepalive[127.0.0.1:9006] => nginx.upstream_keepalive 64\n"
	  "I nginx.access_log_buffer\n"
	  "I nginx.listen_backlog_default[127.0.0.1:8084]\n" },
	/* The parser's hard cases: the upstream three includes deep is found, worker_processes auto is read through
	 * a comment, the quoted braces do not open blocks. */
	{ "stress.txt", no_agent_log,
	  "W nginx.upstream_keepalive[deep] => nginx.upstream_keepalive 64\n"
	  "I nginx.listen_backlog_default[127.0.0.1:8085]\n"
	  "I nginx.listen_backlog_default[127.0.0.1:8086]\n" },
};

static void test_conf_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(conf_cases) / sizeof(conf_cases[0]); i++) {
		const struct conf_case *t = &conf_cases[i];
		struct doctor_report rep = { 0 };
		struct doctor_conf conf;
		char got[4096];

		run_fixture(t->fixture, t->adjust, &rep, &conf);
		render(&rep, got, sizeof(got));
		if (strcmp(got, t->want) != 0)
			fail_msg("%s: got\n%swant\n%s", t->fixture, got, t->want);
		doctor_report_free(&rep);
		doctor_conf_free(&conf);
	}
}

static const struct doctor_finding *find(const struct doctor_report *rep, const char *id, const char *subject)
{
	for (size_t i = 0; i < rep->n; i++)
		if (strcmp(rep->v[i].id, id) == 0 && (!subject || strcmp(rep->v[i].subject, subject) == 0))
			return &rep->v[i];
	fail_msg("no finding %s[%s]", id, subject ? subject : "*");
	return NULL;
}

/* The evidence carries the exact values and where they are written. */
static void test_evidence(void **state)
{
	struct doctor_report rep = { 0 };
	struct doctor_conf conf;
	const struct doctor_finding *f;

	(void)state;
	run_fixture("workers.txt", NULL, &rep, &conf);
	f = find(&rep, "nginx.worker_processes", NULL);
	assert_string_equal(f->where, FX "workers/nginx.conf:1");
	assert_non_null(strstr(f->evidence, "worker_processes 1 at " FX "workers/nginx.conf:1; 4 CPUs online"));
	assert_string_equal(f->ref, "worker_processes");
	f = find(&rep, "nginx.listen_backlog", "127.0.0.1:8081");
	assert_non_null(strstr(f->evidence, "listen 127.0.0.1:8081 backlog=65535 at " FX "workers/nginx.conf:12"));
	assert_non_null(strstr(f->evidence, "net.core.somaxconn is 4096"));
	f = find(&rep, "nginx.worker_rlimit_nofile", NULL);
	assert_non_null(strstr(f->evidence, "worker_rlimit_nofile 1024 at " FX "workers/nginx.conf:2, "
					    "worker_connections 4096"));
	f = find(&rep, "nginx.listen_buffers", "127.0.0.1:8082");
	assert_string_equal(f->where, FX "workers/nginx.conf:13");
	assert_non_null(strstr(f->evidence, "listen 127.0.0.1:8082 rcvbuf=64k sndbuf=1m at " FX "workers/nginx.conf:13"));
	assert_non_null(strstr(f->fix, "remove rcvbuf=64k sndbuf=1m unless a measurement asked for it, then restart"));
	doctor_report_free(&rep);
	doctor_conf_free(&conf);

	run_fixture("stress.txt", no_agent_log, &rep, &conf);
	f = find(&rep, "nginx.upstream_keepalive", "deep");
	assert_string_equal(f->where, FX "stress/a/b/c/level3.conf:1");
	doctor_report_free(&rep);
	doctor_conf_free(&conf);

	run_fixture("proxy.txt", backend_5s, &rep, &conf);
	f = find(&rep, "nginx.proxy_http_version", "api");
	assert_non_null(strstr(f->evidence, "uses proxy_http_version 1.0 (" FX "proxy/nginx.conf:29)"));
	f = find(&rep, "nginx.proxy_connection_header", "api");
	assert_string_equal(f->where, FX "proxy/nginx.conf:23");
	f = find(&rep, "nginx.upstream_keepalive_timeout", "api");
	assert_non_null(strstr(f->evidence, "keepalive_timeout 75s at " FX "proxy/nginx.conf:11 in upstream api"));
	assert_non_null(strstr(f->evidence, "after 5000 ms"));
	doctor_report_free(&rep);
	doctor_conf_free(&conf);

	run_fixture("untuned.txt", busy, &rep, &conf);
	f = find(&rep, "nginx.worker_connections", "peak");
	assert_non_null(strstr(f->evidence, "worker_connections 768 at " FX "untuned/nginx.conf:8 x 4 workers = 3072"));
	assert_non_null(strstr(f->evidence, "up to 3000 active"));
	assert_null(strstr(f->evidence, "established"));
	doctor_report_free(&rep);
	doctor_conf_free(&conf);
	run_fixture("untuned.txt", queued_demand, &rep, &conf);
	f = find(&rep, "nginx.worker_connections", "peak");
	assert_non_null(strstr(f->evidence, "up to 2400 active client connections"));
	assert_non_null(strstr(f->evidence, "; up to 5000 connections established to nginx's ports, the accept "
					    "queue's included"));
	doctor_report_free(&rep);
	doctor_conf_free(&conf);
	run_fixture("untuned.txt", busy, &rep, &conf);
	f = find(&rep, "nginx.log_format_timing", "combined");
	assert_non_null(strstr(f->evidence, "access_log " FX "untuned/logs/access.log at " FX "untuned/nginx.conf:40 "
					    "uses format \"combined\", which has no $request_time"));
	/* The fixes carry the lines to paste, and say the include files come first. */
	assert_non_null(strstr(f->fix, "log_format ngxat_json escape=json '{\"time\":\"$time_iso8601\",\"status\":$status,"
				       "\"request_time\":$request_time,"));
	assert_non_null(strstr(f->fix, "access_log /var/log/nginx/ngx-autotune.log ngxat_json buffer=64k flush=1s;"));
	f = find(&rep, "agent.include", "events");
	assert_int_equal(f->severity, DOCTOR_WARNING);
	assert_non_null(strstr(f->fix, "create the files first (mkdir -p "));
	assert_non_null(strstr(f->fix, "/events.conf; inside events {} of nginx.conf"));
	f = find(&rep, "nginx.stub_status", NULL);
	assert_non_null(strstr(f->fix, "server { listen 127.0.0.1:8190; access_log off; location = /nginx_status {"));
	doctor_report_free(&rep);
	doctor_conf_free(&conf);
}

/* ---- the live checks -------------------------------------------------------------------------------------- */

static void tw_recycle(struct doctor_facts *f) { f->tw_recycle = 1; }
static void ports_warn(struct doctor_facts *f) { f->time_wait = 20000; f->active_opens = 60000; }
static void ports_crit(struct doctor_facts *f) { f->time_wait = 26000; f->active_opens = 60000; }
static void ports_errs(struct doctor_facts *f) { f->err_addr_not_avail = 3; }
static void ports_quiet(struct doctor_facts *f) { f->time_wait = 20000; f->active_opens = 100; }
static void conntrack_warn(struct doctor_facts *f) { f->conntrack_count = 85; f->conntrack_max = 100; }
static void conntrack_crit(struct doctor_facts *f) { f->conntrack_count = 96; f->conntrack_max = 100; }
static void close_wait(struct doctor_facts *f) { f->close_wait = 500; f->close_wait_min = 400; }
static void close_wait_drains(struct doctor_facts *f) { f->close_wait = 500; f->close_wait_min = 10; }
static void retrans_warn(struct doctor_facts *f) { f->retrans_segs = 2000; }
static void retrans_crit(struct doctor_facts *f) { f->retrans_segs = 6000; }
static void retrans_few(struct doctor_facts *f) { f->retrans_segs = 500; f->out_segs = 5000; }
static void overflows(struct doctor_facts *f) { f->listen_overflows = 5; }
static void overflows_boot(struct doctor_facts *f) { f->listen_overflows = 5; f->window_s = 0; }
static void softirq(struct doctor_facts *f)
{
	f->net_rx[0] = 99000;
	f->net_rx[1] = f->net_rx[2] = f->net_rx[3] = 300;
	f->nics[0].rx_queues = 1;
	f->nics[0].irqs = 2;
}
static void softirq_rps(struct doctor_facts *f) { softirq(f); f->nics[0].rps = true; }
static void drops(struct doctor_facts *f) { f->nics[0].rx_drops = 120; }
static void governor(struct doctor_facts *f)
{
	f->governor_cpus = f->governor_other = 4;
	snprintf(f->governor, sizeof(f->governor), "powersave");
}
static void thp(struct doctor_facts *f) { snprintf(f->thp, sizeof(f->thp), "always"); }
static void upstream_bound(struct doctor_facts *f)
{
	f->log_request_ms = 100000;
	f->log_upstream_ms = 95000;
	doctor_facts_add_upstream(f, "10.0.0.5:8080", 13, 400);
	doctor_facts_add_upstream(f, "10.0.0.6:8080", 13, 40);
	doctor_facts_add_upstream(f, "10.0.0.5:8080", 13, 600);
}
static void few_lines(struct doctor_facts *f) { upstream_bound(f); f->log_lines = 50; }
/* Connects that fail on nginx's side (no local port left) count as upstream time: not the upstream's. */
static void connects_fail(struct doctor_facts *f) { upstream_bound(f); f->err_addr_not_avail = 1200; }
static void upstream_and_critical(struct doctor_facts *f) { upstream_bound(f); f->tw_recycle = 1; }
static void conn_errors(struct doctor_facts *f) { f->err_worker_connections = 7; }
static void nofile_low(struct doctor_facts *f) { f->worker_nofile = 8192; no_agent_log(f); }
static void nofile_errors(struct doctor_facts *f) { f->err_too_many_files = 2; }
static void small_host(struct doctor_facts *f) { f->mem_total_kb = 65536; }
static void stub_fails(struct doctor_facts *f)
{
	f->stub_ok = false;
	snprintf(f->stub_error, sizeof(f->stub_error), "HTTP 404");
}
static void somaxconn_small(struct doctor_facts *f) { f->somaxconn = 128; }
static void unknown_all(struct doctor_facts *f) { doctor_facts_init(f); }

static const struct conf_case live_cases[] = {
	{ "tuned.txt", tw_recycle, "C kernel.tcp_tw_recycle\n" },
	/* Churn and TIME_WAIT alone (a load generator beside nginx, nginx's own server side): advice, no proposal. */
	{ "tuned.txt", ports_warn, "W kernel.ip_local_port_range\n" },
	{ "tuned.txt", ports_crit, "C kernel.ip_local_port_range\n" },
	{ "tuned.txt", ports_errs, "C kernel.ip_local_port_range => net.ipv4.ip_local_port_range +!\n" },
	{ "tuned.txt", ports_quiet, "" }, /* TIME_WAIT from clients, no connect churn */
	{ "tuned.txt", conntrack_warn, "W kernel.conntrack\n" },
	{ "tuned.txt", conntrack_crit, "C kernel.conntrack\n" },
	{ "tuned.txt", close_wait, "W tcp.close_wait\n" },
	{ "tuned.txt", close_wait_drains, "" },
	{ "tuned.txt", retrans_warn, "W tcp.retransmissions\n" },
	{ "tuned.txt", retrans_crit, "C tcp.retransmissions\n" },
	{ "tuned.txt", retrans_few, "" },
	{ "tuned.txt", overflows, "W tcp.listen_overflows\n" },
	{ "tuned.txt", overflows_boot, "I tcp.listen_overflows\n" },
	{ "tuned.txt", softirq, "W net.softirq_imbalance\nI net.nic_queues[eth0]\n" },
	{ "tuned.txt", softirq_rps, "W net.softirq_imbalance\n" },
	{ "tuned.txt", drops, "W net.rx_drops[eth0]\n" },
	{ "tuned.txt", governor, "I cpu.governor\n" },
	{ "tuned.txt", thp, "I kernel.thp\n" },
	/* Where the time goes comes first, even before a critical finding. */
	{ "tuned.txt", upstream_bound, "W http.upstream_time\n" },
	{ "tuned.txt", upstream_and_critical, "W http.upstream_time\nC kernel.tcp_tw_recycle\n" },
	{ "tuned.txt", few_lines, "" },
	{ "tuned.txt", connects_fail, "C kernel.ip_local_port_range => net.ipv4.ip_local_port_range +!\n" },
	/* nginx refused connections: the demand seen is a floor, four times today's. */
	{ "untuned.txt", conn_errors, "C nginx.worker_connections[peak] => nginx.worker_connections 3072!\n"
				       "W agent.include[events]\n"
				       "W agent.include[http]\n"
				       "W agent.include[main]\n"
				       "W nginx.log_format_timing[combined]\n"
				       "W nginx.stub_status\n"
				       "W nginx.upstream_keepalive[app] => nginx.upstream_keepalive 64\n"
				       "I nginx.access_log_buffer\n"
				       "I nginx.listen_backlog_default[*:80]\n"
				       "I nginx.listen_backlog_default[[::]:80]\n" },
	{ "tuned.txt", conn_errors, "C nginx.worker_connections[peak] => nginx.worker_connections 65536!\n" },
	/* 5000 wanted at 80% of 4 workers' share: 1563 each, the next power of two above twice 768. */
	{ "untuned.txt", queued_demand, "W agent.include[events]\n"
					"W agent.include[http]\n"
					"W agent.include[main]\n"
					"W nginx.log_format_timing[combined]\n"
					"W nginx.stub_status\n"
					"W nginx.upstream_keepalive[app] => nginx.upstream_keepalive 512\n"
					"W nginx.worker_connections[peak] => nginx.worker_connections 3072!\n"
					"I nginx.access_log_buffer\n"
					"I nginx.listen_backlog_default[*:80]\n"
					"I nginx.listen_backlog_default[[::]:80]\n" },
	{ "tuned.txt", NULL, "" },
	{ "workers.txt", nofile_errors, "C nginx.nofile_limit => nginx.worker_rlimit_nofile 8192!\n"
					"W agent.access_log\n"
					"W agent.include[events]\n"
					"W agent.include[http]\n"
					"W agent.include[main]\n"
					"W nginx.accept_mutex\n"
					"W nginx.listen_backlog[127.0.0.1:8081]\n"
					"W nginx.worker_processes => nginx.worker_processes 4\n"
					"W nginx.worker_rlimit_nofile => nginx.worker_rlimit_nofile 8192!\n"
					"I nginx.listen_backlog_default[127.0.0.1:8082]\n"
					"I nginx.listen_buffers[127.0.0.1:8082]\n" },
	{ "stress.txt", nofile_low, "W nginx.upstream_keepalive[deep] => nginx.upstream_keepalive 64\n"
				    "I nginx.listen_backlog_default[127.0.0.1:8085]\n"
				    "I nginx.listen_backlog_default[127.0.0.1:8086]\n" },
	{ "tuned.txt", small_host, "W nginx.worker_connections[memory]\n" },
	{ "tuned.txt", stub_fails, "W nginx.stub_status\n" },
	{ "tuned.txt", somaxconn_small, "W nginx.listen_backlog[*:443]\nW nginx.listen_backlog[*:80]\n" },
	/* Nothing known: the checks that need a fact stay silent. */
	{ "tuned.txt", unknown_all, "" },
};

static void test_live_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(live_cases) / sizeof(live_cases[0]); i++) {
		const struct conf_case *t = &live_cases[i];
		struct doctor_report rep = { 0 };
		struct doctor_conf conf;
		char got[4096];

		run_fixture(t->fixture, t->adjust, &rep, &conf);
		render(&rep, got, sizeof(got));
		if (strcmp(got, t->want) != 0)
			fail_msg("live case %zu (%s): got\n%swant\n%s", i, t->fixture, got, t->want);
		doctor_report_free(&rep);
		doctor_conf_free(&conf);
	}
}

static void test_live_evidence(void **state)
{
	struct doctor_report rep = { 0 };
	struct doctor_conf conf;
	const struct doctor_finding *f;

	(void)state;
	run_fixture("tuned.txt", upstream_bound, &rep, &conf);
	f = find(&rep, "http.upstream_time", NULL);
	assert_non_null(strstr(f->evidence, "upstreams took 95% of request time over the last 1000 requests"));
	assert_non_null(strstr(f->evidence, "the slowest: 10.0.0.5:8080 (2 requests, mean 500 ms), 10.0.0.6:8080 "
					    "(1 requests, mean 40 ms)"));
	assert_non_null(strstr(f->fix, "will not help"));
	doctor_report_free(&rep);
	doctor_conf_free(&conf);

	run_fixture("tuned.txt", softirq, &rep, &conf);
	f = find(&rep, "net.softirq_imbalance", NULL);
	assert_non_null(strstr(f->evidence, "CPU0 ran 99% of NET_RX softirqs (99000 of 99900) in the last 300 s; "
					    "eth0: 1 rx queue, 2 IRQs, RPS off"));
	doctor_report_free(&rep);
	doctor_conf_free(&conf);

	run_fixture("tuned.txt", close_wait, &rep, &conf);
	f = find(&rep, "tcp.close_wait", NULL);
	assert_non_null(strstr(f->evidence, "500 sockets in CLOSE_WAIT, never fewer than 400"));
	assert_non_null(strstr(f->fix, "no kernel setting fixes this"));
	doctor_report_free(&rep);
	doctor_conf_free(&conf);
}

/* ---- configurations nginx would refuse -------------------------------------------------------------------- */

struct bad_case {
	const char *dump;
	const char *err; /* in the finding's evidence */
};

static const struct bad_case bad_cases[] = {
	{ "# configuration file /x/nginx.conf:\nevents {\nhttp { server { }\n\n", "unexpected end of file" },
	{ "# configuration file /x/nginx.conf:\nhttp { } }\n\n", "unexpected \"}\"" },
	{ "# configuration file /x/nginx.conf:\nhttp { return 200 \"unterminated; }\n\n", "unexpected end of file" },
	{ "# configuration file /x/nginx.conf:\nhttp { listen \"a\"b; }\n\n", "after a quoted string" },
	{ "# configuration file /x/nginx.conf:\n;\n\n", "unexpected \";\"" },
	{ "# configuration file /x/nginx.conf:\ninclude /x/missing.conf;\n\n", "is included but not in the output" },
	{ "worker_processes 1;\nevents {}\n", "not the output of nginx -T" },
	{ "# configuration file /x/nginx.conf:\nevents { }", "truncated" },
	{ "", "printed 0 bytes" },
};

static void test_bad_dumps(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]) + 1; i++) {
		struct doctor_facts *f = malloc(sizeof(*f));
		struct doctor_report rep = { 0 };
		struct doctor_conf conf;
		char err[512] = "", got[1024], *dump;
		size_t len;
		int r;

		assert_non_null(f);
		if (i < sizeof(bad_cases) / sizeof(bad_cases[0])) {
			dump = strdup(bad_cases[i].dump);
			assert_non_null(dump);
			len = strlen(dump);
		} else {
			/* A word longer than nginx's 4096-byte token buffer: nginx never prints one. */
			len = 8000;
			dump = malloc(len + 1);
			assert_non_null(dump);
			memset(dump, 'w', len);
			/* The header without its NUL: a NUL in the word would be refused before its length is. */
			memcpy(dump, "# configuration file /x/nginx.conf:\nx ", 38);
			memcpy(dump + len - 3, ";\n\n", 3);
			dump[len] = '\0';
		}
		r = doctor_conf_from_dump(dump, len, &conf, err, sizeof(err));
		assert_int_equal(r, -EINVAL);
		assert_int_equal(conf.n, 0);
		healthy(f, "tuned.txt");
		assert_int_equal(doctor_check(NULL, err, f, &rep), 0);
		render(&rep, got, sizeof(got));
		assert_string_equal(got, "W doctor.nginx_config\n");
		if (!strstr(rep.v[0].evidence, i < sizeof(bad_cases) / sizeof(bad_cases[0]) ? bad_cases[i].err :
			    "a word longer than 4095 bytes"))
			fail_msg("bad case %zu: evidence '%s'", i, rep.v[0].evidence);
		doctor_report_free(&rep);
		free(dump);
		free(f);
	}
}

/* The entries of map, geo and types blocks are data, not directives: the model keeps the blocks and not their
 * contents (a map of redirects is where a large configuration spends its megabytes), an include in one too. */
static void test_data_blocks(void **state)
{
	static const char dump[] =
		"# configuration file /x/nginx.conf:\n"
		"http {\n"
		"\tmap $uri $to { /a /b; /c /d; include /x/more.map; }\n"
		"\tgeo $net { default 0; 10.0.0.0/8 1; }\n"
		"\tinclude /x/mime.types;\n"
		"\tserver { listen 80; }\n"
		"}\n"
		"\n"
		"# configuration file /x/more.map:\n"
		"/e /f;\n"
		"\n"
		"# configuration file /x/mime.types:\n"
		"types { text/html html; }\n";
	/* the include directive, then the file it brings in */
	static const char *const names[] = { "http", "map", "", "geo", "", "include", "include", "types", "", "server",
					     "listen", "", "" };
	struct doctor_conf conf;
	char err[256];

	(void)state;
	assert_int_equal(doctor_conf_from_dump(dump, strlen(dump), &conf, err, sizeof(err)), 0);
	assert_int_equal(conf.n, sizeof(names) / sizeof(names[0]));
	for (size_t i = 0; i < conf.n; i++)
		assert_string_equal(conf.nodes[i].name, names[i]);
	assert_int_equal(conf.nodes[1].nargs, 2);
	assert_string_equal(conf.nodes[1].args[1], "$to");
	assert_int_equal(conf.nodes[1].end, 2);
	assert_int_equal(conf.nodes[10].parent, 9);
	doctor_conf_free(&conf);
}

/* nginx -T refused by the agent's own bounds (issue 22, R5): the finding says the nginx knobs are off and names
 * the setting to raise, not a fault of nginx's configuration. */
static void test_dump_over_bound(void **state)
{
	static const struct {
		int rc;
		const char *err, *setting;
	} cases[] = {
		{ -EFBIG, "nginx -T printed 20.0 MiB, more than the 8 MiB the agent reads ([nginx] dump_max)", "dump_max" },
		{ -ENOMEM, "nginx -T ran out of memory within the 32 MiB the agent lets it use ([nginx] memory_max): "
			   "[emerg] malloc(2097152) failed (12: Cannot allocate memory)", "memory_max" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct doctor_facts *f = malloc(sizeof(*f));
		struct doctor_report rep = { 0 };
		char got[1024], fix[512];

		assert_non_null(f);
		healthy(f, "tuned.txt");
		f->conf_rc = cases[i].rc;
		assert_int_equal(doctor_check(NULL, cases[i].err, f, &rep), 0);
		render(&rep, got, sizeof(got));
		assert_string_equal(got, "W doctor.nginx_config\n");
		snprintf(fix, sizeof(fix), "the nginx knobs are off (observation and the kernel knobs go on); to tune nginx "
			 "here, raise [nginx] %s in the agent's configuration and the unit's MemoryMax with it "
			 "(ngx-autotune.conf(5))", cases[i].setting);
		assert_string_equal(rep.v[0].fix, fix);
		assert_non_null(strstr(rep.v[0].evidence, cases[i].err));
		doctor_report_free(&rep);
		free(f);
	}
}

/* Truncating a real dump anywhere gives a configuration or a clear error, never a crash. */
static void test_truncated(void **state)
{
	size_t len, ok = 0;
	char *dump = load("stress.txt", &len);
	struct doctor_facts *f = malloc(sizeof(*f));

	(void)state;
	assert_non_null(f);
	healthy(f, "stress.txt");
	for (size_t cut = 0; cut < len; cut += 37) {
		struct doctor_report rep = { 0 };
		struct doctor_conf conf;
		char err[512] = "";
		int r = doctor_conf_from_dump(dump, cut, &conf, err, sizeof(err));

		assert_true(r == 0 || (r == -EINVAL && err[0]));
		ok += r == 0;
		assert_int_equal(doctor_check(r == 0 ? &conf : NULL, err, f, &rep), 0);
		assert_true(rep.n > 0);
		doctor_report_free(&rep);
		if (r == 0)
			doctor_conf_free(&conf);
	}
	assert_true(ok < len / 37 / 2);
	free(dump);
	free(f);
}

/* The model itself: unbalanced blocks are refused, and words are copied. */
static void test_conf_model(void **state)
{
	struct doctor_conf c;
	const char *w[] = { "http" }, *d[] = { "listen", "80", "backlog=1" };
	char err[256];

	(void)state;
	doctor_conf_init(&c);
	assert_int_equal(doctor_conf_add(&c, DOCTOR_BLOCK, "/a", 1, w, 1), 0);
	assert_int_equal(doctor_conf_add(&c, DOCTOR_DIRECTIVE, "/a", 2, d, 3), 0);
	assert_int_equal(doctor_conf_add(&c, DOCTOR_DIRECTIVE, "/a", 2, d, 0), -EINVAL);
	assert_int_equal(doctor_conf_finish(&c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/a:1: block \"http\" is not closed");
	assert_int_equal(doctor_conf_add(&c, DOCTOR_END, "/a", 3, NULL, 0), 0);
	assert_int_equal(doctor_conf_add(&c, DOCTOR_END, "/a", 4, NULL, 0), 0);
	assert_int_equal(doctor_conf_finish(&c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/a:4: \"}\" closes no block");
	doctor_conf_free(&c);
	doctor_conf_init(&c);
	assert_int_equal(doctor_conf_add(&c, DOCTOR_BLOCK, "/a", 1, w, 1), 0);
	assert_int_equal(doctor_conf_add(&c, DOCTOR_DIRECTIVE, "/a", 2, d, 3), 0);
	assert_int_equal(doctor_conf_add(&c, DOCTOR_END, "/a", 3, NULL, 0), 0);
	assert_int_equal(doctor_conf_finish(&c, err, sizeof(err)), 0);
	assert_int_equal(c.nodes[0].end, 2);
	assert_int_equal(c.nodes[1].parent, 0);
	assert_int_equal(c.nodes[2].parent, DOCTOR_TOP);
	assert_string_equal(c.nodes[1].args[1], "backlog=1");
	assert_int_equal(doctor_conf_add(&c, DOCTOR_END, "/a", 3, NULL, 0), -EINVAL); /* finished */
	doctor_conf_free(&c);
}

/* ---- first seen, last seen -------------------------------------------------------------------------------- */

static void test_state(void **state)
{
	struct doctor_state st = { 0 };
	struct doctor_report rep = { 0 };
	struct doctor_conf conf;
	size_t counts[3];

	(void)state;
	run_fixture("workers.txt", NULL, &rep, &conf);
	assert_int_equal(doctor_state_merge(&st, &rep, 1000), 0);
	assert_int_equal(st.n, rep.n);
	assert_int_equal(st.checked_ms, 1000);
	for (size_t i = 0; i < st.n; i++) {
		assert_true(st.v[i].fresh);
		assert_false(st.v[i].escalated);
		assert_int_equal(st.v[i].first_seen_ms, 1000);
	}
	doctor_state_counts(&st, counts);
	assert_int_equal(counts[DOCTOR_CRITICAL], 0);
	assert_int_equal(counts[DOCTOR_WARNING], 8);
	assert_int_equal(counts[DOCTOR_INFO], 2);
	doctor_report_free(&rep);
	doctor_conf_free(&conf);

	/* Again with "Too many open files": one finding becomes critical; the rest keep their first sighting. */
	run_fixture("workers.txt", nofile_errors, &rep, &conf);
	assert_int_equal(doctor_state_merge(&st, &rep, 2000), 0);
	for (size_t i = 0; i < st.n; i++) {
		bool nofile = strcmp(st.v[i].f.id, "nginx.nofile_limit") == 0;

		assert_int_equal(st.v[i].fresh, nofile);
		assert_int_equal(st.v[i].escalated, nofile);
		assert_int_equal(st.v[i].first_seen_ms, nofile ? 2000 : 1000);
		assert_int_equal(st.v[i].last_seen_ms, 2000);
	}
	assert_int_equal(st.ngone, 0);
	doctor_report_free(&rep);
	doctor_conf_free(&conf);

	/* The tuned configuration: everything is gone. */
	run_fixture("tuned.txt", NULL, &rep, &conf);
	assert_int_equal(doctor_state_merge(&st, &rep, 3000), 0);
	assert_int_equal(st.n, 0);
	assert_int_equal(st.ngone, 11);
	doctor_state_counts(&st, counts);
	assert_int_equal(counts[0] + counts[1] + counts[2], 0);
	doctor_report_free(&rep);
	doctor_conf_free(&conf);
	doctor_state_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf_cases),
		cmocka_unit_test(test_evidence),
		cmocka_unit_test(test_live_cases),
		cmocka_unit_test(test_live_evidence),
		cmocka_unit_test(test_bad_dumps),
		cmocka_unit_test(test_dump_over_bound),
		cmocka_unit_test(test_data_blocks),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_conf_model),
		cmocka_unit_test(test_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
