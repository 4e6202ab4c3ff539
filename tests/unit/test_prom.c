/*
 * test_prom: the exposition format writer (values, escaping, label order, every refusal), the map from frame
 * names to families, and the totals (counter sums, gauges, CPU shares, the histogram, staleness).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "prom.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void test_format_value(void **state)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{0, "0"},
		{-0.0, "0"},
		{1, "1"},
		{-3, "-3"},
		{42, "42"},
		{1e15, "1000000000000000"},
		{4294967296.0, "4294967296"},
		{0.1, "0.1"},
		{0.047, "0.047"},
		{2.5, "2.5"},
		{-0.001, "-0.001"},
		{1.5e-7, "1.5e-07"},
		{1e300, "1e+300"},
		{0.1 + 0.2, "0.30000000000000004"},
		{9007199254740992.0, "9007199254740992"},
		{NAN, "NaN"},
		{-NAN, "NaN"},
		{INFINITY, "+Inf"},
		{-INFINITY, "-Inf"},
	};
	char out[PROM_VALUE_MAX];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		prom_format_value(cases[i].v, out, sizeof(out));
		if (strcmp(out, cases[i].want) != 0)
			fail_msg("case %zu: %.17g formatted as '%s', want '%s'", i, cases[i].v, out, cases[i].want);
		if (isfinite(cases[i].v))
			assert_true(strtod(out, NULL) == cases[i].v);
	}
}

static void test_escape_label(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"", ""},
		{"eth0", "eth0"},
		{"say \"hi\"", "say \\\"hi\\\""},
		{"C:\\dir", "C:\\\\dir"},
		{"two\nlines", "two\\nlines"},
		{"\\\"\n", "\\\\\\\"\\n"},
		{"caf\xc3\xa9 {x=1}", "caf\xc3\xa9 {x=1}"}, /* UTF-8 and braces pass as they are */
	};
	char out[64], tiny[4];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(prom_escape_label(cases[i].in, out, sizeof(out)), 0);
		assert_string_equal(out, cases[i].want);
	}
	assert_int_equal(prom_escape_label("abcd", tiny, sizeof(tiny)), -ENOSPC);
	assert_int_equal(prom_escape_label("a\"", tiny, sizeof(tiny)), 0);
	assert_string_equal(tiny, "a\\\"");
	assert_int_equal(prom_escape_label("ab\"", tiny, sizeof(tiny)), -ENOSPC);
}

static void test_names(void **state)
{
	static const struct {
		const char *s;
		bool metric, label;
	} cases[] = {
		{"ngxat_ticks_total", true, true},
		{"_x", true, true},
		{"a:b", true, false},
		{":a", true, false},
		{"__name__", true, false},
		{"cpu0", true, true},
		{"0cpu", false, false},
		{"a-b", false, false},
		{"a.b", false, false},
		{"", false, false},
		{"caf\xc3\xa9", false, false},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		if (prom_valid_name(cases[i].s) != cases[i].metric || prom_valid_label(cases[i].s) != cases[i].label)
			fail_msg("case %zu '%s': metric %d label %d", i, cases[i].s, prom_valid_name(cases[i].s),
				 prom_valid_label(cases[i].s));
	}
}

static char *take(struct prom_writer *w)
{
	char *text;
	size_t len;

	assert_int_equal(prom_writer_take(w, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

static void test_writer_text(void **state)
{
	struct prom_writer w;
	struct prom_label l[] = {{"mode", "softirq"}, {"cpu", "1"}, {"device", "a\"b\\c\nd"}};
	struct prom_label le = {"le", "0.005"}, inf = {"le", "+Inf"};
	char *text;

	(void)state;
	prom_writer_init(&w);
	assert_int_equal(prom_family(&w, "ngxat_x_total", PROM_COUNTER, "Help with \\ and\nnewline, \"quotes\" kept."), 0);
	assert_int_equal(prom_sample(&w, "", l, 3, 12.5), 0);
	assert_int_equal(prom_sample(&w, NULL, NULL, 0, 0), 0);
	assert_int_equal(prom_family(&w, "ngxat_g", PROM_GAUGE, ""), 0);
	assert_int_equal(prom_sample(&w, "", NULL, 0, NAN), 0);
	assert_int_equal(prom_sample(&w, "", l, 1, -INFINITY), 0);
	assert_int_equal(prom_family(&w, "ngxat_h_seconds", PROM_HISTOGRAM, "h"), 0);
	assert_int_equal(prom_sample(&w, "_bucket", &le, 1, 3), 0);
	assert_int_equal(prom_sample(&w, "_bucket", &inf, 1, 4), 0);
	assert_int_equal(prom_sample(&w, "_sum", NULL, 0, 0.25), 0);
	assert_int_equal(prom_sample(&w, "_count", NULL, 0, 4), 0);
	text = take(&w);
	assert_string_equal(text,
			    "# HELP ngxat_x_total Help with \\\\ and\\nnewline, \"quotes\" kept.\n"
			    "# TYPE ngxat_x_total counter\n"
			    "ngxat_x_total{cpu=\"1\",device=\"a\\\"b\\\\c\\nd\",mode=\"softirq\"} 12.5\n"
			    "ngxat_x_total 0\n"
			    "# HELP ngxat_g \n"
			    "# TYPE ngxat_g gauge\n"
			    "ngxat_g NaN\n"
			    "ngxat_g{mode=\"softirq\"} -Inf\n"
			    "# HELP ngxat_h_seconds h\n"
			    "# TYPE ngxat_h_seconds histogram\n"
			    "ngxat_h_seconds_bucket{le=\"0.005\"} 3\n"
			    "ngxat_h_seconds_bucket{le=\"+Inf\"} 4\n"
			    "ngxat_h_seconds_sum 0.25\n"
			    "ngxat_h_seconds_count 4\n");
	free(text);
}

/* The order of labels in the output is by name, whatever the caller's order. */
static void test_label_order(void **state)
{
	static const struct prom_label orders[][3] = {
		{{"a", "1"}, {"b", "2"}, {"c", "3"}},
		{{"c", "3"}, {"b", "2"}, {"a", "1"}},
		{{"b", "2"}, {"c", "3"}, {"a", "1"}},
		{{"c", "3"}, {"a", "1"}, {"b", "2"}},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(orders); i++) {
		struct prom_writer w;
		char *text;

		prom_writer_init(&w);
		prom_family(&w, "ngxat_o", PROM_GAUGE, "o");
		prom_sample(&w, "", orders[i], 3, 1);
		text = take(&w);
		assert_string_equal(text, "# HELP ngxat_o o\n# TYPE ngxat_o gauge\nngxat_o{a=\"1\",b=\"2\",c=\"3\"} 1\n");
		free(text);
	}
}

enum step { FAMILY, SAMPLE };

static void test_writer_refusals(void **state)
{
	static const struct prom_label dup[] = {{"a", "1"}, {"a", "2"}};
	static const struct prom_label bad_label[] = {{"__reserved", "1"}};
	static const struct prom_label dash[] = {{"a-b", "1"}};
	static const struct prom_label le[] = {{"le", "1"}};
	static const struct prom_label q[] = {{"quantile", "0.5"}};
	static const struct prom_label nullv[] = {{"a", NULL}};
	static const struct prom_label many[PROM_LABELS_MAX + 1] = {{"a", ""}, {"b", ""}, {"c", ""}, {"d", ""}, {"e", ""},
								   {"f", ""}, {"g", ""}, {"h", ""}, {"i", ""}};
	static const struct {
		const char *what;
		const char *family; /* NULL: no family first */
		enum prom_type type;
		const char *suffix;
		const struct prom_label *labels;
		size_t n;
		double v;
		int want; /* from the family when it fails, else from the sample */
	} cases[] = {
		{"counter without _total", "ngxat_c", PROM_COUNTER, "", NULL, 0, 1, -EINVAL},
		{"gauge with _total", "ngxat_g_total", PROM_GAUGE, "", NULL, 0, 1, -EINVAL},
		{"histogram with _total", "ngxat_h_total", PROM_HISTOGRAM, "_sum", NULL, 0, 1, -EINVAL},
		{"name with a dash", "ngxat-x", PROM_GAUGE, "", NULL, 0, 1, -EINVAL},
		{"name with a digit first", "9ngxat", PROM_GAUGE, "", NULL, 0, 1, -EINVAL},
		{"empty name", "", PROM_GAUGE, "", NULL, 0, 1, -EINVAL},
		{"type out of range", "ngxat_g", (enum prom_type)7, "", NULL, 0, 1, -EINVAL},
		{"sample before a family", NULL, PROM_GAUGE, "", NULL, 0, 1, -EINVAL},
		{"duplicate label", "ngxat_g", PROM_GAUGE, "", dup, 2, 1, -EINVAL},
		{"reserved label", "ngxat_g", PROM_GAUGE, "", bad_label, 1, 1, -EINVAL},
		{"label with a dash", "ngxat_g", PROM_GAUGE, "", dash, 1, 1, -EINVAL},
		{"label value NULL", "ngxat_g", PROM_GAUGE, "", nullv, 1, 1, -EINVAL},
		{"too many labels", "ngxat_g", PROM_GAUGE, "", many, PROM_LABELS_MAX + 1, 1, -EINVAL},
		{"le on a gauge", "ngxat_g", PROM_GAUGE, "", le, 1, 1, -EINVAL},
		{"quantile on a gauge", "ngxat_g", PROM_GAUGE, "", q, 1, 1, -EINVAL},
		{"suffix on a gauge", "ngxat_g", PROM_GAUGE, "_sum", NULL, 0, 1, -EINVAL},
		{"bucket without le", "ngxat_h", PROM_HISTOGRAM, "_bucket", NULL, 0, 1, -EINVAL},
		{"le on a histogram's sum", "ngxat_h", PROM_HISTOGRAM, "_sum", le, 1, 1, -EINVAL},
		{"histogram sample without suffix", "ngxat_h", PROM_HISTOGRAM, "", NULL, 0, 1, -EINVAL},
		{"histogram with another suffix", "ngxat_h", PROM_HISTOGRAM, "_total", NULL, 0, 1, -EINVAL},
		{"counter NaN", "ngxat_c_total", PROM_COUNTER, "", NULL, 0, NAN, -EDOM},
		{"counter negative", "ngxat_c_total", PROM_COUNTER, "", NULL, 0, -1, -EDOM},
		{"bucket NaN", "ngxat_h", PROM_HISTOGRAM, "_bucket", le, 1, NAN, -EDOM},
		{"count negative", "ngxat_h", PROM_HISTOGRAM, "_count", NULL, 0, -2, -EDOM},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct prom_writer w;
		char *text;
		size_t len;
		int r = 0;

		prom_writer_init(&w);
		if (cases[i].family)
			r = prom_family(&w, cases[i].family, cases[i].type, "x");
		if (r == 0)
			r = prom_sample(&w, cases[i].suffix, cases[i].labels, cases[i].n, cases[i].v);
		if (r != cases[i].want)
			fail_msg("%s: %d, want %d", cases[i].what, r, cases[i].want);
		/* The error sticks: nothing more is written and the text is not handed out. */
		assert_int_equal(prom_family(&w, "ngxat_later", PROM_GAUGE, "x"), cases[i].want);
		assert_int_equal(prom_writer_take(&w, &text, &len), cases[i].want);
		assert_null(text);
	}
}

static void test_family_once(void **state)
{
	struct prom_writer w;
	char *text;
	size_t len;

	(void)state;
	prom_writer_init(&w);
	assert_int_equal(prom_family(&w, "ngxat_a", PROM_GAUGE, "a"), 0);
	assert_int_equal(prom_family(&w, "ngxat_b_total", PROM_COUNTER, "b"), 0);
	assert_int_equal(prom_family(&w, "ngxat_a", PROM_GAUGE, "a again"), -EEXIST);
	assert_int_equal(prom_writer_take(&w, &text, &len), -EEXIST);
	/* An empty writer hands out an empty text, not NULL. */
	prom_writer_init(&w);
	assert_int_equal(prom_writer_take(&w, &text, &len), 0);
	assert_string_equal(text, "");
	free(text);
}

static void test_map(void **state)
{
	static const struct {
		const char *name;
		const char *family; /* NULL: ignored on purpose */
		const char *l1, *v1, *l2, *v2;
	} cases[] = {
		{"softnet.3.time_squeeze", "ngxat_softnet_time_squeeze_total", "cpu", "3", NULL, NULL},
		{"softnet.0.processed", "ngxat_softnet_processed_total", "cpu", "0", NULL, NULL},
		{"softirq.12.net_rx", "ngxat_softirq_net_rx_total", "cpu", "12", NULL, NULL},
		{"cpu.1.softirq", "ngxat_cpu_seconds_total", "cpu", "1", "mode", "softirq"},
		{"link.eth0.100.rx_packets", "ngxat_link_receive_packets_total", "device", "eth0.100", NULL, NULL},
		{"link.lo.tx_bytes", "ngxat_link_transmit_bytes_total", "device", "lo", NULL, NULL},
		{"listen.8080.fill_pct", "ngxat_listen_queue_fill_ratio", "port", "8080", NULL, NULL},
		{"listen.443.queued", "ngxat_listen_queue_depth", "port", "443", NULL, NULL},
		{"http.5xx", "ngxat_http_responses_total", "code", "5xx", NULL, NULL},
		{"http.502", "ngxat_http_gateway_errors_total", "code", "502", NULL, NULL},
		{"http.upstream_connect_ms_sum", "ngxat_http_upstream_connect_time_seconds_total", NULL, NULL, NULL, NULL},
		{"nginx.stub_late", "ngxat_nginx_stub_status_late_total", NULL, NULL, NULL, NULL},
		{"tcp.outgoing.time_wait", "ngxat_tcp_outgoing_connections", "state", "time_wait", NULL, NULL},
		{"nginx.err.conn_refused", "ngxat_nginx_error_log_lines_total", "kind", "conn_refused", NULL, NULL},
		{"http.p99_ms", "ngxat_http_request_duration_last_tick_seconds", "percentile", "99", NULL, NULL},
		{"http.lat.b17", "ngxat_http_request_duration_seconds", NULL, NULL, NULL, NULL},
		{"nginx.reading", "ngxat_nginx_connections", "state", "reading", NULL, NULL},
		{"nginx.active", "ngxat_nginx_connections_active", NULL, NULL, NULL, NULL},
		{"nginx.err.worker_connections", "ngxat_nginx_error_log_lines_total", "kind", "worker_connections", NULL,
		 NULL},
		{"nginx.worker_ivcsw", "ngxat_nginx_worker_context_switches_total", "kind", "involuntary", NULL, NULL},
		{"tcp.listen_overflows", "ngxat_tcp_listen_overflows_total", NULL, NULL, NULL, NULL},
		{"tcp.retrans_segs", "ngxat_tcp_retransmitted_segments_total", NULL, NULL, NULL, NULL},
		{"tcp.state.close_wait", "ngxat_tcp_connections", "state", "close_wait", NULL, NULL},
		{"irq.25.total", "ngxat_nic_interrupts_total", "irq", "25", NULL, NULL},
		{"irq.net_irqs", "ngxat_nic_irqs", NULL, NULL, NULL, NULL},
		{"irq.25.1", NULL, NULL, NULL, NULL, NULL},
		{"cpu.all.user", NULL, NULL, NULL, NULL, NULL},
		{"softnet.processed", NULL, NULL, NULL, NULL, NULL},
		{"softirq.net_rx", NULL, NULL, NULL, NULL, NULL},
	};
	static const char *const unknown[] = {"", "nosuch", "tcp.listen_overflows.x", "softnet..processed",
					      "cpu.1", "link..rx_packets", "http.lat.b", "nginx.err."};
	struct prom_mapped m;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		if (prom_map(cases[i].name, &m) < 0)
			fail_msg("%s: not mapped", cases[i].name);
		if (!cases[i].family) {
			assert_true(m.ignored);
			continue;
		}
		assert_false(m.ignored);
		assert_string_equal(prom_family_name(m.family), cases[i].family);
		assert_int_equal(m.nlabels, cases[i].l2 ? 2 : cases[i].l1 ? 1 : 0);
		if (cases[i].l1) {
			assert_string_equal(m.labels[0].name, cases[i].l1);
			assert_string_equal(m.labels[0].value, cases[i].v1);
		}
		if (cases[i].l2) {
			assert_string_equal(m.labels[1].name, cases[i].l2);
			assert_string_equal(m.labels[1].value, cases[i].v2);
		}
	}
	for (size_t i = 0; i < ARRAY_LEN(unknown); i++)
		if (prom_map(unknown[i], &m) != -ENOENT)
			fail_msg("'%s' mapped", unknown[i]);
	assert_int_equal(prom_map(NULL, &m), -ENOENT);
}

/* Every family name is valid and unique; counters, and only they, end in _total (the writer checks the rest). */
static void test_family_table(void **state)
{
	unsigned n = 0;

	(void)state;
	for (unsigned i = 0; prom_family_name(i); i++, n++) {
		assert_true(prom_valid_name(prom_family_name(i)));
		assert_int_equal(strncmp(prom_family_name(i), "ngxat_", 6), 0);
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(prom_family_name(i), prom_family_name(j));
	}
	assert_true(n > 40);
	for (unsigned i = 0; i < PROM_LAT_BOUNDS; i++) {
		/* One below an edge of the histogram: every value up to the bound is in the buckets below it. */
		assert_int_equal(hist_bucket_lo(hist_bucket(prom_lat_bound_ms(i) + 1)), prom_lat_bound_ms(i) + 1);
		if (i)
			assert_true(prom_lat_bound_ms(i) > prom_lat_bound_ms(i - 1));
	}
	assert_int_equal(prom_lat_bound_ms(0), 1);
	assert_int_equal(prom_lat_bound_ms(3), 10);
	assert_int_equal(prom_lat_bound_ms(4), 25);
	assert_int_equal(prom_lat_bound_ms(5), 47);
	assert_int_equal(prom_lat_bound_ms(PROM_LAT_BOUNDS), UINT32_MAX);
}

/* Every name agent/sampler.c writes (one of each pattern) maps to a family or is left out on purpose. */
static void test_sampler_names_mapped(void **state)
{
	static const char *const names[] = {
		"tcp.active_opens", "tcp.attempt_fails", "tcp.curr_estab", "tcp.estab_resets", "tcp.in_errs",
		"tcp.in_segs", "tcp.out_segs", "tcp.passive_opens", "tcp.retrans_segs", "tcp.listen_drops",
		"tcp.listen_overflows", "tcp.syncookies_sent", "tcp.abort_on_memory", "tcp.backlog_drop",
		"tcp.reqq_full_drop", "tcp.timewait_overflow", "tcp.sockstat.inuse", "tcp.sockstat.orphan",
		"tcp.sockstat.time_wait", "tcp.sockstat.mem_pages", "softnet.0.processed", "softnet.0.dropped",
		"softnet.0.time_squeeze", "softnet.processed", "softnet.dropped", "softnet.time_squeeze",
		"softirq.0.net_rx", "softirq.0.net_tx", "softirq.net_rx", "softirq.net_tx", "cpu.all.user",
		"cpu.0.user", "cpu.0.system", "cpu.0.irq", "cpu.0.softirq", "cpu.0.idle", "cpu.0.iowait", "cpu.0.steal",
		"sys.ctxt", "sys.procs_running", "sys.cpus", "irq.25.0", "irq.25.total", "irq.net_irqs", "nginx.workers",
		"nginx.workers_old", "nginx.worker_run_ms", "nginx.worker_wait_ms", "nginx.worker_wait_max_ms", "nginx.worker_vcsw",
		"nginx.worker_ivcsw", "http.requests", "http.1xx", "http.2xx", "http.3xx", "http.4xx", "http.5xx",
		"http.unparsed", "http.request_ms_sum", "http.upstream_ms_sum", "http.upstream_share", "http.p50_ms",
		"http.p90_ms", "http.p99_ms", "http.backlog", "http.lat.b0", "nginx.err.worker_connections",
		"tcp.state.established", "tcp.state.syn_recv", "tcp.state.time_wait", "tcp.state.close_wait",
		"tcp.state.fin_wait", "tcp.state.listen", "tcp.served.established", "tcp.served.close_wait",
		"tcp.served.closed", "tcp.max_orphans", "listen.80.queued", "listen.80.backlog", "listen.80.fill_pct",
		"link.eth0.rx_packets", "link.eth0.tx_packets", "link.eth0.rx_bytes", "link.eth0.tx_bytes",
		"link.eth0.rx_dropped", "link.eth0.rx_missed", "link.eth0.tx_dropped", "link.eth0.rx_errors",
		"link.eth0.tx_errors", "nginx.active", "nginx.reading", "nginx.writing", "nginx.waiting",
		"nginx.accepts", "nginx.handled", "nginx.requests",
	};
	struct prom_mapped m;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if (prom_map(names[i], &m) < 0)
			fail_msg("%s: no rule", names[i]);
}

struct world {
	struct metric_registry *reg;
	struct frame fr;
	struct prom_totals t;
};

static void frame_at(struct world *w, int64_t ts, double dt)
{
	frame_clear(&w->fr);
	w->fr.ts_ms = ts;
	w->fr.dt_s = dt;
}

static void put(struct world *w, const char *name, double v)
{
	assert_int_equal(frame_set(&w->fr, w->reg, name, v), 0);
}

static char *render(struct world *w, int64_t max_age)
{
	struct prom_writer pw;

	prom_writer_init(&pw);
	assert_int_equal(prom_totals_write(&w->t, w->reg, max_age, &pw), 0);
	return take(&pw);
}

static void world_new(struct world *w)
{
	assert_int_equal(metric_registry_new(&w->reg), 0);
	frame_init(&w->fr);
	prom_totals_init(&w->t);
}

static void world_free(struct world *w)
{
	prom_totals_free(&w->t);
	frame_free(&w->fr);
	metric_registry_free(w->reg);
}

static void assert_has(const char *text, const char *line)
{
	if (!strstr(text, line))
		fail_msg("no '%s' in:\n%s", line, text);
}

static void test_totals(void **state)
{
	struct world w;
	char *text;

	(void)state;
	world_new(&w);
	/* Tick 1: first counter samples are NaN (no base yet); gauges are levels. */
	frame_at(&w, 1000, 0);
	put(&w, "tcp.listen_overflows", NAN);
	put(&w, "nginx.active", 10);
	put(&w, "cpu.0.softirq", 50);
	put(&w, "softnet.1.time_squeeze", NAN);
	put(&w, "no.such.metric", 1);
	assert_int_equal(prom_totals_observe(&w.t, w.reg, &w.fr), 0);
	text = render(&w, 30000);
	assert_has(text, "# TYPE ngxat_tcp_listen_overflows_total counter\nngxat_tcp_listen_overflows_total 0\n");
	assert_has(text, "ngxat_nginx_connections_active 10\n");
	assert_has(text, "ngxat_cpu_seconds_total{cpu=\"0\",mode=\"softirq\"} 0\n"); /* dt 0: no time yet */
	assert_int_equal(w.t.unmapped, 1);
	free(text);

	/* Ticks 2 and 3: deltas add up, a NaN (counter went backwards) adds nothing, gauges keep the last. */
	frame_at(&w, 2000, 1.0);
	put(&w, "tcp.listen_overflows", 7);
	put(&w, "nginx.active", 12);
	put(&w, "cpu.0.softirq", 50);
	put(&w, "softnet.1.time_squeeze", 3);
	put(&w, "no.such.metric", 1);
	prom_totals_observe(&w.t, w.reg, &w.fr);
	frame_at(&w, 4000, 2.0);
	put(&w, "tcp.listen_overflows", NAN);
	put(&w, "nginx.active", NAN);
	put(&w, "cpu.0.softirq", 25);
	prom_totals_observe(&w.t, w.reg, &w.fr);
	text = render(&w, 30000);
	assert_has(text, "ngxat_tcp_listen_overflows_total 7\n");
	assert_has(text, "ngxat_nginx_connections_active NaN\n");
	assert_has(text, "ngxat_cpu_seconds_total{cpu=\"0\",mode=\"softirq\"} 1\n"); /* 50% of 1 s + 25% of 2 s */
	assert_has(text, "ngxat_softnet_time_squeeze_total{cpu=\"1\"} 3\n"); /* seen 2 s before the newest */
	assert_int_equal(w.t.unmapped, 1); /* counted once per name */
	assert_int_equal(w.t.frames, 3);
	free(text);

	/* A series that stopped (a probe failing, an interface gone) drops out after MAX_AGE. */
	frame_at(&w, 40000, 1.0);
	put(&w, "nginx.active", 3);
	prom_totals_observe(&w.t, w.reg, &w.fr);
	text = render(&w, 30000);
	assert_has(text, "ngxat_nginx_connections_active 3\n");
	assert_null(strstr(text, "listen_overflows"));
	assert_null(strstr(text, "softnet"));
	free(text);
	text = render(&w, 36000);
	assert_has(text, "ngxat_tcp_listen_overflows_total 7\n");
	assert_null(strstr(text, "softnet"));
	free(text);
	world_free(&w);
}

static void test_histogram(void **state)
{
	struct world w;
	char name[32], *text;
	/* Request times of two ticks, in ms: one 0, two 1, one 5, one 25, one 26, one 47, one 48, one 20000. */
	static const uint32_t tick1[] = {0, 1, 1, 5, 25};
	static const uint32_t tick2[] = {26, 47, 48, 20000};
	struct hist h;

	(void)state;
	world_new(&w);
	for (int tick = 0; tick < 2; tick++) {
		const uint32_t *ms = tick ? tick2 : tick1;
		size_t n = tick ? ARRAY_LEN(tick2) : ARRAY_LEN(tick1);
		double sum = 0;

		hist_reset(&h);
		for (size_t i = 0; i < n; i++) {
			hist_add(&h, ms[i]);
			sum += ms[i];
		}
		frame_at(&w, 1000 * (tick + 1), 1);
		put(&w, "http.requests", (double)n);
		put(&w, "http.timed", (double)n);
		put(&w, "http.request_ms_sum", sum);
		for (unsigned i = 0; i < HIST_NBUCKETS; i++) {
			if (!h.b[i])
				continue; /* sparse, as the sampler stores it */
			snprintf(name, sizeof(name), "http.lat.b%u", i);
			put(&w, name, h.b[i]);
		}
		prom_totals_observe(&w.t, w.reg, &w.fr);
	}
	text = render(&w, 30000);
	assert_has(text, "# TYPE ngxat_http_request_duration_seconds histogram\n"
			 "ngxat_http_request_duration_seconds_bucket{le=\"0.001\"} 3\n"
			 "ngxat_http_request_duration_seconds_bucket{le=\"0.002\"} 3\n"
			 "ngxat_http_request_duration_seconds_bucket{le=\"0.005\"} 4\n"
			 "ngxat_http_request_duration_seconds_bucket{le=\"0.01\"} 4\n"
			 "ngxat_http_request_duration_seconds_bucket{le=\"0.025\"} 5\n"
			 "ngxat_http_request_duration_seconds_bucket{le=\"0.047\"} 7\n"
			 "ngxat_http_request_duration_seconds_bucket{le=\"0.095\"} 8\n");
	assert_has(text, "ngxat_http_request_duration_seconds_bucket{le=\"9.215\"} 8\n"
			 "ngxat_http_request_duration_seconds_bucket{le=\"+Inf\"} 9\n"
			 "ngxat_http_request_duration_seconds_sum 20.153\n"
			 "ngxat_http_request_duration_seconds_count 9\n");
	free(text);

	/* A tick with no requests: the per-tick percentiles are NaN, the histogram stays. */
	frame_at(&w, 3000, 1);
	put(&w, "http.requests", 0);
	put(&w, "http.request_ms_sum", 0);
	put(&w, "http.p99_ms", NAN);
	prom_totals_observe(&w.t, w.reg, &w.fr);
	text = render(&w, 30000);
	assert_has(text, "ngxat_http_request_duration_last_tick_seconds{percentile=\"99\"} NaN\n");
	assert_has(text, "ngxat_http_request_duration_seconds_count 9\n");
	free(text);

	/* Requests logged in nginx's combined format have no times: counted as requests, not in the histogram,
	 * whose count stays the +Inf bucket. */
	frame_at(&w, 4000, 1);
	put(&w, "http.requests", 5);
	put(&w, "http.timed", 0);
	prom_totals_observe(&w.t, w.reg, &w.fr);
	text = render(&w, 30000);
	assert_has(text, "ngxat_http_requests_total 14\n");
	assert_has(text, "ngxat_http_request_duration_seconds_bucket{le=\"+Inf\"} 9\n");
	assert_has(text, "ngxat_http_request_duration_seconds_count 9\n");
	free(text);
	world_free(&w);
}

/* A frame written by hand, unsorted or with ids out of range, is folded safely or refused whole. */
static void test_totals_bad_frames(void **state)
{
	struct world w;
	uint32_t a, b;
	char *text;

	(void)state;
	world_new(&w);
	assert_int_equal(metric_intern(w.reg, "tcp.listen_overflows", &a), 0);
	assert_int_equal(metric_intern(w.reg, "nginx.active", &b), 0);
	frame_at(&w, 1000, 1);
	assert_int_equal(frame_put(&w.fr, a, 5), 0);
	assert_int_equal(frame_put(&w.fr, b, 3), 0);
	w.fr.vals[0].id = b; /* unsorted: the larger id first */
	w.fr.vals[0].v = 3;
	w.fr.vals[1].id = a;
	w.fr.vals[1].v = 5;
	assert_int_equal(prom_totals_observe(&w.t, w.reg, &w.fr), 0);
	w.fr.vals[1].id = METRIC_ID_MAX + 1;
	assert_int_equal(prom_totals_observe(&w.t, w.reg, &w.fr), -EINVAL);
	w.fr.vals[1].id = 0; /* never a metric: skipped */
	assert_int_equal(prom_totals_observe(&w.t, w.reg, &w.fr), 0);
	text = render(&w, 30000);
	assert_has(text, "ngxat_tcp_listen_overflows_total 5\n");
	assert_has(text, "ngxat_nginx_connections_active 3\n");
	free(text);
	world_free(&w);
}

/* Families are written once each, in the table's order, whatever order the names were interned in. */
static void test_totals_grouping(void **state)
{
	struct world w;
	char *text, *a, *b, *c;

	(void)state;
	world_new(&w);
	frame_at(&w, 1000, 1);
	put(&w, "softnet.1.processed", 1);
	put(&w, "nginx.writing", 2);
	put(&w, "softnet.0.processed", 3);
	put(&w, "nginx.reading", 4);
	prom_totals_observe(&w.t, w.reg, &w.fr);
	text = render(&w, 30000);
	a = strstr(text, "# TYPE ngxat_nginx_connections gauge");
	b = strstr(text, "# TYPE ngxat_softnet_processed_total counter");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_null(strstr(a + 1, "# TYPE ngxat_nginx_connections gauge"));
	c = strstr(text, "ngxat_nginx_connections{state=\"writing\"} 2\nngxat_nginx_connections{state=\"reading\"} 4\n");
	assert_non_null(c);
	assert_has(text, "ngxat_softnet_processed_total{cpu=\"1\"} 1\nngxat_softnet_processed_total{cpu=\"0\"} 3\n");
	free(text);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_value),
		cmocka_unit_test(test_escape_label),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_writer_text),
		cmocka_unit_test(test_label_order),
		cmocka_unit_test(test_writer_refusals),
		cmocka_unit_test(test_family_once),
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_family_table),
		cmocka_unit_test(test_sampler_names_mapped),
		cmocka_unit_test(test_totals),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_totals_grouping),
		cmocka_unit_test(test_totals_bad_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
