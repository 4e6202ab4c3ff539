/* Unit tests for common/config.c and common/strutil.c: defaults, every key ([client] too), errors with FILE:LINE. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "config.h"
#include "strutil.h"

static char path[64];

static void write_conf(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	int fd;

	(void)state;
	strcpy(path, "/tmp/ngxat-config-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void test_defaults_when_missing(void **state)
{
	struct config c;
	char err[256];

	(void)state;
	assert_int_equal(config_load("/nonexistent/agent.conf", false, &c, err, sizeof(err)), 0);
	assert_int_equal(c.tick_ms, 1000);
	assert_string_equal(c.root, "/");
	assert_string_equal(c.store_path, "/var/lib/ngx-autotune/ngx-autotune.db");
	assert_int_equal(c.frames_retention_ms, 48LL * 3600 * 1000);
	assert_int_equal(c.rollups_retention_ms, 90LL * 86400 * 1000);
	assert_int_equal(c.audit_retention_ms, 365LL * 86400 * 1000);
	assert_int_equal(c.denied_retention_ms, 7LL * 86400 * 1000);
	assert_int_equal(c.socket_mode, 0660);
	assert_true(c.probe_netlink);
	assert_int_equal(c.doctor_interval_ms, 300000);
	assert_int_equal(c.backend_keepalive_ms, 0);
	assert_int_equal(c.cooldown_ms, 60000);
	assert_int_equal(c.nginx_dump_max, 4 << 20);
	assert_int_equal(c.nginx_memory_max, 32 << 20);
	assert_int_equal(config_load("/nonexistent/agent.conf", true, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/agent.conf"));
}

static void test_every_key(void **state)
{
	struct config c;
	char err[256];

	(void)state;
	write_conf("; comment\n[agent]\ntick_interval = 250ms\nroot = /tmp/fake\nsocket = /tmp/s.sock\n"
		   "socket_mode = 0600\nsocket_group = wheel\nlog_level = debug\nuser = ngx-autotune\n"
		   "writer_dir = /var/lib/ngx-autotune/writer\n"
		   "writer_socket = /run/ngx-autotune-writer.sock\n"
		   "[store]\npath = /tmp/x.db\nframes_retention = 2h\nrollups_retention = 7d\naudit_retention = 30d\n"
		   "denied_retention = 12h\n"
		   "[nginx]\npid_file = /tmp/nginx.pid\nstub_status_url = http://127.0.0.1:8080/st\n"
		   "stub_status_timeout = 150ms\naccess_log = \nerror_log = /tmp/e.log\ndump_max = 512K\n"
		   "memory_max = 1G\n"
		   "[doctor]\ninterval = 90s\nbackend_keepalive_timeout = 5s\n"
		   "[tuning]\ncooldown = 5s\nwindow = 5s\n"
		   "[probes]\nnetlink = no\ninterrupts = off\nworkers = false\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_int_equal(c.cooldown_ms, 5000);
	assert_int_equal(c.window_ms, 5000); /* 20 ticks of 250 ms */
	assert_int_equal(c.tick_ms, 250);
	assert_string_equal(c.root, "/tmp/fake");
	assert_string_equal(c.socket_path, "/tmp/s.sock");
	assert_int_equal(c.socket_mode, 0600);
	assert_string_equal(c.socket_group, "wheel");
	assert_string_equal(c.engine_user, "ngx-autotune");
	assert_string_equal(c.writer_dir, "/var/lib/ngx-autotune/writer");
	assert_string_equal(c.writer_socket, "/run/ngx-autotune-writer.sock");
	assert_int_equal(c.log_level, 7);
	assert_string_equal(c.store_path, "/tmp/x.db");
	assert_int_equal(c.frames_retention_ms, 2 * 3600 * 1000);
	assert_int_equal(c.rollups_retention_ms, 7LL * 86400 * 1000);
	assert_int_equal(c.audit_retention_ms, 30LL * 86400 * 1000);
	assert_int_equal(c.denied_retention_ms, 12LL * 3600 * 1000);
	assert_string_equal(c.stub_status_url, "http://127.0.0.1:8080/st");
	assert_int_equal(c.stub_status_timeout_ms, 150);
	assert_string_equal(c.access_log, "");
	assert_false(c.probe_netlink);
	assert_false(c.probe_interrupts);
	assert_false(c.probe_workers);
	assert_int_equal(c.doctor_interval_ms, 90000);
	assert_int_equal(c.backend_keepalive_ms, 5000);
	assert_int_equal(c.nginx_dump_max, 512 << 10);
	assert_int_equal(c.nginx_memory_max, 1 << 30);
}

/* [fleet]: absent, nothing changes; every key read; the checks across keys (after the whole file). */
static void test_fleet(void **state)
{
	static const struct {
		const char *text, *expect;
	} wrong[] = {
		{"[fleet]\nendpoints = http://127.0.0.1:2379\n", "[fleet] pool '': a name of letters"},
		{"[fleet]\nendpoints = http://127.0.0.1:2379\npool = web/../x\n", "[fleet] pool 'web/../x'"},
		{"[fleet]\nendpoints = http://127.0.0.1:2379\npool = web\nhost = a b\n", "[fleet] host 'a b'"},
		{"[fleet]\nendpoints = http://127.0.0.1:2379\npool = web\nuser = ops\n", "user and password_file go together"},
		{"[fleet]\nendpoints = http://127.0.0.1:2379\npool = web\nkey = /k.pem\n", "cert and key go together"},
	};
	struct config c;
	char err[512];

	(void)state;
	write_conf("[agent]\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_string_equal(c.fleet_endpoints, "");
	assert_int_equal(c.fleet_max_in_trial, 1);
	assert_int_equal(c.fleet_lease_ttl_ms, 10000);
	write_conf("[fleet]\nendpoints = http://10.0.0.1:2379  https://10.0.0.2:2379\npool = web-eu.1\nhost = web-3\n"
		   "max_in_trial = 2\nlease_ttl = 6s\nca = /etc/ssl/etcd-ca.pem\ncert = /etc/ssl/c.pem\nkey = /etc/ssl/k.pem\n"
		   "user = ngx\npassword_file = /etc/ngx-autotune/etcd.password\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_string_equal(c.fleet_endpoints, "http://10.0.0.1:2379  https://10.0.0.2:2379");
	assert_string_equal(c.fleet_pool, "web-eu.1");
	assert_string_equal(c.fleet_host, "web-3");
	assert_int_equal(c.fleet_max_in_trial, 2);
	assert_int_equal(c.fleet_lease_ttl_ms, 6000);
	assert_string_equal(c.fleet_ca, "/etc/ssl/etcd-ca.pem");
	assert_string_equal(c.fleet_key, "/etc/ssl/k.pem");
	assert_string_equal(c.fleet_user, "ngx");
	assert_string_equal(c.fleet_password_file, "/etc/ngx-autotune/etcd.password");
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		write_conf(wrong[i].text);
		assert_int_equal(config_load(path, true, &c, err, sizeof(err)), -EINVAL);
		if (!strstr(err, wrong[i].expect))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, wrong[i].expect);
	}
}

static const struct {
	const char *text;
	const char *expect; /* substring of the error, which always starts with PATH:LINE */
	int line;
} bad[] = {
	{"[agent]\nfoo = 1\n", "unknown key 'foo' in section [agent]", 2},
	{"[agent]\ntick_interval = 1s\n[nosuch]\nx = 1\n", "unknown section [nosuch]", 4},
	{"[agent]\ntick_interval = fast\n", "not a duration", 2},
	{"[agent]\ntick_interval = 10ms\n", "between 100ms and 10000ms", 2},
	{"[agent]\n\n\nthis line has no equals\n", "syntax error", 4},
	{"[store]\npath = relative/x.db\n", "absolute path", 2},
	{"[agent]\nwriter_dir = writer\n", "writer_dir: must be an absolute path", 2},
	{"[agent]\nwriter_socket = run/w.sock\n", "writer_socket: must be an absolute path", 2},
	{"[fleet]\nendpoints = http://a:2379 etcd:2379\n", "'etcd:2379' is not an http:// or https:// URL", 2},
	{"[fleet]\nmax_in_trial = 0\n", "max_in_trial: '0' is not a whole number from 1 to 64", 2},
	{"[fleet]\nlease_ttl = 1s\n", "between 2000ms and 60000ms", 2},
	{"[fleet]\nca = certs/ca.pem\n", "ca: must be an absolute path", 2},
	{"[agent]\nuser = a-user-name-longer-than-the-sixty-four-bytes-a-user-name-may-have-here\n", "value too long", 2},
	{"[nginx]\nstub_status_url = ftp://x/\n", "http:// or https://", 2},
	{"[agent]\nsocket_mode = 999\n", "octal mode", 2},
	{"[agent]\nsocket =\n", "socket: must not be empty", 2},
	{"[tuning]\ncalibrate_pairs = 2\n", "0 (none) or 3 to 16", 2},
	{"[tuning]\nmode = yolo\n", "not observe, propose or auto", 2},
	{"[tuning]\npairs = 3\n", "from 4 to 16", 2},
	{"[tuning]\ncooldown = 2d\n", "cooldown: '2d' is not a duration between", 2},
	{"[tuning]\ncooldown = later\n", "not a duration", 2},
	{"[agent]\nroot =\n", "root: must not be empty", 2},
	{"[agent]\nlog_level = loud\n", "not one of error", 2},
	{"[probes]\nnetlink = maybe\n", "not yes or no", 2},
	{"[doctor]\ninterval = 5s\n", "between 30000ms and 86400000ms", 2},
	{"[doctor]\nbackend_keepalive_timeout = 2h\n", "between 0ms and 3600000ms", 2},
	{"[nginx]\ndump_max = 65M\n", "dump_max: '65M' is not a size from 64K to 64M (e.g. 65536, 512K, 8M)", 2},
	{"[nginx]\ndump_max = 8 MB\n", "dump_max: '8 MB' is not a size", 2},
	{"[nginx]\nmemory_max = 4M\n", "memory_max: '4M' is not a size from 8192K to 16384M", 2},
	{"[doctor]\nenabled = yes\n", "unknown key 'enabled' in section [doctor]", 2},
	{"[agent]\nlog_level = info\nlog_level = bogus\ntick_interval = x\n", "not one of error", 3},
	{"[tuning]\nmeasure = active\n", "not passive or loadgen", 2},
	{"[loadgen]\ncommand = wrk -d20s http://x/\n", "must contain {seconds}", 2},
	{"[loadgen]\nrun = 1s\n", "between 2000ms and 3600000ms", 2},
	{"[api]\nlisten = 9180\n", "is not ADDRESS:PORT", 2},
	{"[api]\nlisten = 127.0.0.1:0\n", "is not ADDRESS:PORT", 2},
	{"[api]\nlisten = 127.0.0.1:65536\n", "is not ADDRESS:PORT", 2},
	{"[api]\nlisten = example.com:80\n", "is not ADDRESS:PORT", 2},
	{"[api]\nlisten = ::1:9180\n", "is not ADDRESS:PORT", 2},
	{"[api]\ntoken_file = api.tokens\n", "absolute path", 2},
	{"[api]\n\nlisten = 0.0.0.0:9180\n", "not a loopback address", 3},
	{"[api]\nlisten = 10.1.2.3:9180\nlisten_any = no\n", "set listen_any = yes", 2},
	{"[api]\nlisten = [::]:9180\n", "not a loopback address", 2},
	{"[api]\nlisten_any = perhaps\n", "not yes or no", 2},
	{"[client]\nenabled = sometimes\n", "enabled: 'sometimes' is not yes or no", 2},
	{"[client]\nurl = https://127.0.0.1/\n", "url: 'https://127.0.0.1/' is not an http:// URL", 2},
	{"[client]\n\nurl = 127.0.0.1:80\n", "url: '127.0.0.1:80' is not an http:// URL", 3},
	{"[client]\nrequests_per_tick = 0\n", "requests_per_tick: '0' is not a whole number from 1 to 32", 2},
	{"[client]\nrequests_per_tick = 33\n", "from 1 to 32", 2},
	{"[client]\nrequests_per_tick = four\n", "from 1 to 32", 2},
	{"[client]\ntimeout = 5s\n", "timeout: '5s' is not a duration between 10ms and 4000ms", 2},
	{"[client]\ntimeout = 1ms\n", "between 10ms and 4000ms", 2},
	{"[client]\ntimeout = soon\n", "not a duration", 2},
	{"[client]\nrate = 5\n", "unknown key 'rate' in section [client]", 2},
};

static void test_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct config c;
		char err[512], prefix[128];

		write_conf(bad[i].text);
		assert_int_equal(config_load(path, true, &c, err, sizeof(err)), -EINVAL);
		snprintf(prefix, sizeof(prefix), "%s:%d: ", path, bad[i].line);
		if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, bad[i].expect))
			fail_msg("case %zu: got '%s', want prefix '%s' and '%s'", i, err, prefix, bad[i].expect);
	}
}

/* Load generator mode: the command is kept as written; measure = loadgen without one is refused. */
static void test_loadgen(void **state)
{
	struct config c;
	char err[512];

	(void)state;
	write_conf("[tuning]\nmeasure = loadgen\n[loadgen]\ncommand = wrk -t2 -c200 -d{seconds}s --latency http://x/\n"
		   "run = 20s\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_string_equal(c.measure, "loadgen");
	assert_string_equal(c.loadgen_command, "wrk -t2 -c200 -d{seconds}s --latency http://x/");
	assert_int_equal(c.loadgen_run_ms, 20000);
	write_conf("[tuning]\nmeasure = loadgen\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "measure = loadgen needs [loadgen] command"));
	write_conf("[tuning]\nmode = auto\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_string_equal(c.measure, "passive");
}

/* [tuning] window is counted in ticks: 10 to 3600 of them, whatever the tick (the tick may come after it). */
static void test_window_ticks(void **state)
{
	static const struct {
		const char *conf;
		int rc;
		const char *err;
	} cases[] = {
		{"[tuning]\nwindow = 15s\n[agent]\ntick_interval = 500ms\n", 0, NULL},
		{"[tuning]\nwindow = 10s\n", 0, NULL},
		{"[tuning]\nwindow = 9s\n", -EINVAL, "window: 9000 ms is 9 ticks of 1000 ms; 10 to 3600 ticks are needed"},
		{"[agent]\ntick_interval = 100ms\n[tuning]\nwindow = 6m\n", 0, NULL},
		{"[agent]\ntick_interval = 100ms\n[tuning]\nwindow = 361s\n", -EINVAL, "3610 ticks of 100 ms"},
		{"[tuning]\nwindow = 500ms\n", -EINVAL, "window: '500ms' is not a duration between"},
	};
	struct config c;
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_conf(cases[i].conf);
		err[0] = '\0';
		assert_int_equal(config_load(path, true, &c, err, sizeof(err)), cases[i].rc);
		if (cases[i].err && !strstr(err, cases[i].err))
			fail_msg("case %zu: '%s' does not say '%s'", i, err, cases[i].err);
	}
	write_conf("");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_int_equal(c.window_ms, 0); /* unset: 60 ticks */
}

/* inih reads at most a fixed number of bytes per line: a longer one is an error on its own line, not a
 * syntax error somewhere after it. */
static void test_long_line(void **state)
{
	char text[1024], err[512], want[128];
	struct config c;

	(void)state;
	snprintf(text, sizeof(text), "[agent]\n; comment\nroot = /%0600d\ntick_interval = 1s\n", 0);
	write_conf(text);
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: line longer than", path);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("got '%s', want '%s...'", err, want);
}

static void test_api_keys(void **state)
{
	struct config c;
	char err[256];

	(void)state;
	assert_int_equal(config_load("/nonexistent/agent.conf", false, &c, err, sizeof(err)), 0);
	assert_string_equal(c.api_listen, "");
	assert_false(c.api_listen_any);
	assert_string_equal(c.api_token_file, "/etc/ngx-autotune/api.tokens");
	write_conf("[api]\nlisten = 127.0.0.1:9180\ntoken_file = /tmp/t\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_string_equal(c.api_listen, "127.0.0.1:9180");
	assert_string_equal(c.api_token_file, "/tmp/t");
	/* listen_any may come after listen; it opens any address. */
	write_conf("[api]\nlisten = 0.0.0.0:9180\nlisten_any = yes\ntoken_file =\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_true(c.api_listen_any);
	assert_string_equal(c.api_token_file, "");
	write_conf("[api]\nlisten = [::1]:9180\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	write_conf("[api]\nlisten = localhost:9180\nlisten =\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_string_equal(c.api_listen, "");
}

static void test_listen_parse(void **state)
{
	static const struct {
		const char *s;
		int r;
		bool loopback;
	} cases[] = {
		{"127.0.0.1:9180", 0, true},   {"127.9.8.7:1", 0, true},      {"localhost:65535", 0, true},
		{"[::1]:80", 0, true},         {"[::ffff:127.0.0.2]:80", 0, true}, {"10.0.0.1:80", 0, false},
		{"0.0.0.0:80", 0, false},      {"[::]:80", 0, false},         {"[fe80::1]:80", 0, false},
		{"128.0.0.1:80", 0, false},    {"127.0.0.1", -EINVAL, false}, {"127.0.0.1:", -EINVAL, false},
		{":80", -EINVAL, false},       {"[::1]80", -EINVAL, false},   {"[::1:80", -EINVAL, false},
		{"127.0.0.1:80x", -EINVAL, false}, {"127.0.0.1:-1", -EINVAL, false}, {"[localhost]:80", -EINVAL, false},
		{"1.2.3:80", -EINVAL, false},  {"", -EINVAL, false},
	};
	struct sockaddr_storage sa;
	unsigned len;
	bool lo;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = str_to_listen(cases[i].s, &sa, &len, &lo);

		if (r != cases[i].r || (r == 0 && lo != cases[i].loopback))
			fail_msg("'%s': got %d loopback %d", cases[i].s, r, lo);
	}
	assert_int_equal(str_to_listen("[::1]:443", &sa, &len, &lo), 0);
	assert_int_equal(sa.ss_family, AF_INET6);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&sa)->sin6_port), 443);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(str_to_listen("localhost:9180", &sa, &len, &lo), 0);
	assert_int_equal(ntohl(((struct sockaddr_in *)&sa)->sin_addr.s_addr), 0x7f000001);
}

/* A pid file's text as nginx writes it, and as a reader may catch it: empty (truncated, not yet written), cut short,
 * with trailing whitespace, or something else. */
static void test_str_to_pid(void **state)
{
	static const struct {
		const char *s;
		size_t len; /* 0: strlen */
		int r, pid;
	} cases[] = {
		{"4242\n", 0, 0, 4242},     {"4242", 0, 0, 4242},       {"7 \t\n\n", 0, 0, 7},
		{"4242\n", 2, 0, 42},       {"", 0, -EINVAL, 0},        {"\n", 0, -EINVAL, 0},
		{" 4242\n", 0, -EINVAL, 0}, {"42x\n", 0, -EINVAL, 0},   {"-1\n", 0, -ERANGE, 0},
		{"0\n", 0, -ERANGE, 0},     {"1073741824", 0, -ERANGE, 0}, {"1073741823", 0, 0, 1073741823},
		{"123456789012345678901234567890", 0, -ERANGE, 0},       {"42\n4242\n", 0, -EINVAL, 0},
		{"12345678901234567890123456789x", 0, -EINVAL, 0},       {"12\0xyz", 6, -EINVAL, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int pid = -5, r = str_to_pid(cases[i].s, cases[i].len ? cases[i].len : strlen(cases[i].s), &pid);

		if (r != cases[i].r || (r == 0 && pid != cases[i].pid) || (r < 0 && pid != -5))
			fail_msg("case %zu: got %d pid %d", i, r, pid);
	}
}

static void test_strutil(void **state)
{
	int64_t v;
	bool b;
	struct sbuf s;

	(void)state;
	assert_int_equal(str_to_i64("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(str_to_i64("101", 0, 100, &v), -ERANGE);
	assert_int_equal(str_to_i64("4x", 0, 100, &v), -EINVAL);
	assert_int_equal(str_to_i64("", 0, 100, &v), -EINVAL);
	assert_int_equal(str_to_i64("99999999999999999999", 0, INT64_MAX, &v), -ERANGE);
	assert_int_equal(str_to_duration_ms("90d", 0, INT64_MAX, &v), 0);
	assert_int_equal(v, 90LL * 86400000);
	assert_int_equal(str_to_duration_ms("5", 0, INT64_MAX, &v), 0);
	assert_int_equal(v, 5000);
	assert_int_equal(str_to_duration_ms("5 s", 0, INT64_MAX, &v), -EINVAL);
	assert_int_equal(str_to_duration_ms("-5s", 0, INT64_MAX, &v), -EINVAL);
	assert_int_equal(str_to_duration_ms("9223372036854775807d", 0, INT64_MAX, &v), -ERANGE);
	assert_int_equal(str_to_size("65536", 0, INT64_MAX, &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(str_to_size("512K", 0, INT64_MAX, &v), 0);
	assert_int_equal(v, 512 << 10);
	assert_int_equal(str_to_size("8M", 0, INT64_MAX, &v), 0);
	assert_int_equal(v, 8 << 20);
	assert_int_equal(str_to_size("2G", 0, INT64_MAX, &v), 0);
	assert_int_equal(v, 2LL << 30);
	assert_int_equal(str_to_size("8m", 0, INT64_MAX, &v), -EINVAL);
	assert_int_equal(str_to_size("8MB", 0, INT64_MAX, &v), -EINVAL);
	assert_int_equal(str_to_size("-8M", 0, INT64_MAX, &v), -EINVAL);
	assert_int_equal(str_to_size("9223372036854775807K", 0, INT64_MAX, &v), -ERANGE);
	assert_int_equal(str_to_size("65M", 0, 64 << 20, &v), -ERANGE);
	{
		static const struct {
			uint64_t bytes;
			const char *text;
		} sizes[] = {{8 << 20, "8 MiB"}, {21 << 20 | 1 << 19, "21.5 MiB"}, {64 << 10, "64 KiB"},
			     {100035, "97.7 KiB"}, {1000, "1000 bytes"}, {0, "0 bytes"}};
		char out[32];

		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			assert_int_equal(str_size(out, sizeof(out), sizes[i].bytes), strlen(sizes[i].text));
			assert_string_equal(out, sizes[i].text);
		}
	}
	assert_int_equal(str_to_bool("Yes", &b), 0);
	assert_true(b);
	assert_int_equal(str_to_bool("nope", &b), -EINVAL);
	sbuf_init(&s);
	assert_string_equal(sbuf_str(&s), "");
	for (int i = 0; i < 1000; i++)
		sbuf_printf(&s, "%d,", i);
	assert_int_equal(strlen(sbuf_str(&s)), s.len);
	assert_int_equal(strncmp(sbuf_str(&s), "0,1,2,", 6), 0);
	sbuf_free(&s);
}

/* [client]: the synthetic client. */
static void test_client_defaults(void **state)
{
	struct config c;
	char err[256], url[CONFIG_PATH_MAX];

	(void)state;
	assert_int_equal(config_load("/nonexistent/agent.conf", false, &c, err, sizeof(err)), 0);
	assert_true(c.client_enabled);
	assert_string_equal(c.client_url, "");
	assert_int_equal(c.client_requests, 4);
	assert_int_equal(c.client_timeout_ms, 500);
	/* The default stub_status_url is http://127.0.0.1/nginx_status: its host, path /. */
	assert_int_equal(config_client_url(&c, 0, url, sizeof(url)), 0);
	assert_string_equal(url, "http://127.0.0.1/");
}

static void test_client_keys(void **state)
{
	struct config c;
	char err[256], url[CONFIG_PATH_MAX];

	(void)state;
	write_conf("[client]\nenabled = no\nurl = http://[::1]:8080/health?x=1\nrequests_per_tick = 7\n"
		   "timeout = 250ms\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_false(c.client_enabled);
	assert_string_equal(c.client_url, "http://[::1]:8080/health?x=1");
	assert_int_equal(c.client_requests, 7);
	assert_int_equal(c.client_timeout_ms, 250);
	assert_int_equal(config_client_url(&c, 0, url, sizeof(url)), 0);
	assert_string_equal(url, "http://[::1]:8080/health?x=1");
	assert_int_equal(config_client_url(&c, 1, url, sizeof(url)), -ENOENT);
}

/* [client] url: several URLs, separated by blanks; each one http://, at most four. */
static void test_client_urls(void **state)
{
	static const struct {
		const char *value;
		int r;
		const char *want[CONFIG_CLIENT_URLS_MAX + 1];
	} cases[] = {
		{"http://127.0.0.1:8080/ http://127.0.0.1:8080/app", 0,
		 {"http://127.0.0.1:8080/", "http://127.0.0.1:8080/app"}},
		{"  http://a/x \t http://b/y  ", 0, {"http://a/x", "http://b/y"}},
		{"http://a/1 http://a/2 http://a/3 http://a/4", 0,
		 {"http://a/1", "http://a/2", "http://a/3", "http://a/4"}},
		{"http://a/1 http://a/2 http://a/3 http://a/4 http://a/5", -EINVAL, {NULL}},
		{"http://a/1 https://a/2", -EINVAL, {NULL}},
		{"http://a/1 /app", -EINVAL, {NULL}},
	};
	struct config c;
	char err[256], url[CONFIG_PATH_MAX], text[600];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = 0;

		snprintf(text, sizeof(text), "[client]\nurl = %s\n", cases[i].value);
		write_conf(text);
		if (config_load(path, true, &c, err, sizeof(err)) != cases[i].r)
			fail_msg("%s: not %d (%s)", cases[i].value, cases[i].r, err);
		if (cases[i].r < 0) {
			assert_non_null(strstr(err, "url: "));
			continue;
		}
		for (; cases[i].want[n]; n++) {
			assert_int_equal(config_client_url(&c, n, url, sizeof(url)), 0);
			assert_string_equal(url, cases[i].want[n]);
		}
		assert_int_equal(config_client_url(&c, n, url, sizeof(url)), -ENOENT);
	}
	write_conf("[client]\nurl = http://127.0.0.1:8080/status http://x/\n");
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_int_equal(config_client_url(&c, 0, url, 10), -ENAMETOOLONG);
}

/* Without [client] url: stub_status_url's scheme, host and port, path "/". */
static void test_client_derived_url(void **state)
{
	static const struct {
		const char *stub, *want;
		int r;
	} cases[] = {
		{"http://127.0.0.1:8080/nginx_status", "http://127.0.0.1:8080/", 0},
		{"http://[::1]:81/st?x", "http://[::1]:81/", 0},
		{"http://localhost", "http://localhost/", 0},
		{"http://10.0.0.1:9000?q", "http://10.0.0.1:9000/", 0},
		{"https://example.test/st", "https://example.test/", 0}, /* the probe says it cannot do https */
		{"", "", -ENOENT},
	};
	struct config c;
	char url[CONFIG_PATH_MAX], tiny[12];

	(void)state;
	config_default(&c);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(c.stub_status_url, sizeof(c.stub_status_url), "%s", cases[i].stub);
		url[0] = '\0';
		assert_int_equal(config_client_url(&c, 0, url, sizeof(url)), cases[i].r);
		if (cases[i].r == 0)
			assert_string_equal(url, cases[i].want);
		assert_int_equal(config_client_url(&c, 1, url, sizeof(url)), -ENOENT);
	}
	snprintf(c.stub_status_url, sizeof(c.stub_status_url), "http://127.0.0.1:8080/nginx_status");
	assert_int_equal(config_client_url(&c, 0, tiny, sizeof(tiny)), -ENAMETOOLONG);
}

/* A NUL inside a value would end it there and drop the rest silently: an error with FILE:LINE. */
static void test_nul_in_value(void **state)
{
	static const char text[] = "[agent]\ntick_interval = 2s\n[nginx]\nbinary = /usr/sbin/nginx\0/tmp/evil\n";
	struct config c;
	char err[512], want[128];
	FILE *f;

	(void)state;
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, sizeof(text) - 1, f), sizeof(text) - 1);
	fclose(f);
	assert_int_equal(config_load(path, true, &c, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:4: a NUL byte in the line", path);
	assert_string_equal(err, want);
}

static void put_file(const char *p, const char *text, mode_t mode)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
}

/* Issue 15 item 4: the configuration and every file it names that decides what runs or is written as root are
 * held to the policy files' rule (owner, mode, no link); the check is on the files, not on where they are. */
static void test_trust(void **state)
{
	char dir[64], conf[128], tok[128], inc[128], prog[128], link[128], text[1024], err[512];
	struct config c;

	(void)state;
	if (geteuid() != 0)
		skip(); /* chown to another user needs root; the system tests run as root */
	strcpy(dir, "/tmp/ngxat-trust-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/agent.conf", dir);
	snprintf(tok, sizeof(tok), "%s/api.tokens", dir);
	snprintf(inc, sizeof(inc), "%s/include", dir);
	snprintf(prog, sizeof(prog), "%s/wrk", dir);
	snprintf(link, sizeof(link), "%s/link.conf", dir);
	assert_int_equal(mkdir(inc, 0755), 0);
	put_file(tok, "ops:secret\n", 0600);
	put_file(prog, "#!/bin/sh\n", 0755);
	snprintf(text, sizeof(text), "[nginx]\nbinary = %s\ninclude_dir = %s\n[api]\ntoken_file = %s\n[loadgen]\ncommand = %s "
		 "-d{seconds}s http://127.0.0.1/\n", prog, inc, tok, prog);
	put_file(conf, text, 0644);
	assert_int_equal(config_load(conf, true, &c, err, sizeof(err)), 0);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), 0);

	/* The configuration: writable by its group, owned by someone else, a link. */
	assert_int_equal(chmod(conf, 0664), 0);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "agent.conf is writable by group or others (mode 0664): refused"));
	assert_int_equal(chmod(conf, 0644), 0);
	assert_int_equal(chown(conf, 65534, 65534), 0);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "agent.conf is owned by uid 65534, not root: refused"));
	assert_int_equal(chown(conf, 0, 0), 0);
	assert_int_equal(symlink(conf, link), 0);
	assert_int_equal(config_check_trust(&c, link, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "link.conf is a symbolic link (name the file itself): refused"));

	/* The include directory (the token file has its own, stricter check where the API reads it). */
	assert_int_equal(chmod(inc, 01777), 0);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "include is writable by group or others (mode 1777)"));
	assert_int_equal(chmod(inc, 0755), 0);

	/* A program run as root: checked where its link leads, so a link to a writable file is refused. */
	assert_int_equal(chmod(prog, 0777), 0);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "wrk is writable by group or others (mode 0777)"));
	assert_int_equal(chmod(prog, 0755), 0);
	unlink(link);
	assert_int_equal(symlink(prog, link), 0);
	snprintf(c.nginx_bin, sizeof(c.nginx_bin), "%s", link);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), 0);
	assert_int_equal(chown(prog, 65534, 65534), 0);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "wrk is owned by uid 65534"));
	assert_int_equal(chown(prog, 0, 0), 0);

	/* Issue 22, R3: every directory on the way counts, and the link itself: a user who owns the directory, or the
	 * link, could swap what it names after the check. */
	assert_int_equal(chown(dir, 65534, 65534), 0);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "is owned by uid 65534, not root: refused"));
	assert_non_null(strstr(err, dir));
	assert_int_equal(chown(dir, 0, 0), 0);
	assert_int_equal(lchown(link, 65534, 65534), 0);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "link.conf is a link owned by uid 65534, not root"));
	assert_int_equal(lchown(link, 0, 0), 0);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), 0);

	/* An include directory not there yet (before ngxctl setup) is not refused. */
	unlink(tok);
	rmdir(inc);
	assert_int_equal(config_check_trust(&c, conf, err, sizeof(err)), 0);
	snprintf(text, sizeof(text), "rm -rf %s", dir);
	assert_int_equal(system(text), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_when_missing),
		cmocka_unit_test_setup_teardown(test_every_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loadgen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_ticks, setup, teardown),
		cmocka_unit_test(test_strutil),
		cmocka_unit_test(test_str_to_pid),
		cmocka_unit_test_setup_teardown(test_api_keys, setup, teardown),
		cmocka_unit_test(test_listen_parse),
		cmocka_unit_test(test_client_defaults),
		cmocka_unit_test_setup_teardown(test_client_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_urls, setup, teardown),
		cmocka_unit_test(test_client_derived_url),
		cmocka_unit_test_setup_teardown(test_nul_in_value, setup, teardown),
		cmocka_unit_test(test_trust),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
