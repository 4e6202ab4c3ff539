/*
 * Unit tests for plan, against the shipped policies (the files in policies/, read through policy_load's parser) and a
 * few small sets of its own: one table row per situation (the detectors that fire, the knobs' current values) and
 * the proposal it must give or the reason there is none; then the memory of what was tried (cooldown, reverted
 * values, failed directions, and what counts as changed conditions), determinism, and two planted
 * misconfigurations driven end to end from synthetic frames through detect.
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

#include "core/detect.h"
#include "core/metrics.h"
#include "core/plan.h"
#include "core/policy.h"
#include "act/policy_load.h"

static const char *const shipped[] = {"buffers", "busypoll", "irq",   "listen", "nginx",
				      "rps",     "sched",    "softnet", "tcp"};

static const char *srcdir(void)
{
	const char *s = getenv("srcdir");

	return s && s[0] ? s : ".";
}

static void parse_file(struct policy_set *set, const char *path)
{
	char err[512] = "";
	size_t len;
	char *buf;
	FILE *f = fopen(path, "rb");

	if (!f)
		fail_msg("cannot open %s", path);
	buf = malloc(POLICY_FILE_SIZE_MAX + 1);
	assert_non_null(buf);
	len = fread(buf, 1, POLICY_FILE_SIZE_MAX, f);
	fclose(f);
	if (policy_parse_buffer(set, path, buf, len, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	free(buf);
}

/* The shipped policies, in file order or (REVERSED) the other way round. */
static void load_shipped(struct policy_set *set, bool reversed)
{
	char path[512], err[512] = "";
	size_t n = sizeof(shipped) / sizeof(shipped[0]);

	policy_set_init(set);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/policies/%s.policy", srcdir(), shipped[reversed ? n - 1 - i : i]);
		parse_file(set, path);
	}
	if (policy_set_validate(set, policy_metric_known, NULL, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

static void load_text(struct policy_set *set, const char *text)
{
	char err[512] = "";

	policy_set_init(set);
	if (policy_parse_buffer(set, "t.policy", text, strlen(text), err, sizeof(err)) < 0 ||
	    policy_set_validate(set, policy_metric_known, NULL, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

/* ---- the knobs' current values ------------------------------------------------------------------------------ */

struct kv {
	const char *knob, *value; /* value NULL: the error below */
	int err;
};

#define KV_MAX 24

/* The shipped defaults of a fresh host (nginx's and the kernel's). */
static const struct kv host_defaults[] = {
	{"net.core.somaxconn", "4096", 0},
	{"net.ipv4.tcp_max_syn_backlog", "1024", 0},
	{"listen_queue", "511", 0},
	{"net.core.netdev_budget", "300", 0},
	{"net.core.netdev_budget_usecs", "2000", 0},
	{"net.core.netdev_max_backlog", "1000", 0},
	{"nginx.worker_processes", "4", 0},
	{"nginx.worker_connections", "1024", 0},
	{"nginx.worker_rlimit_nofile", "1024", 0},
	{"nginx.multi_accept", "off", 0},
	{"nginx.accept_mutex", "off", 0},
	{"listen_reuseport", "off", 0},
	{"listen_deferred", "off", 0},
	{"nginx.keepalive_requests", "1000", 0},
	{"nginx.worker_cpu_affinity", "", 0},
	{"sched.base_slice", "1000000", 0},
	{"net.ipv4.tcp_fin_timeout", "60", 0},
	{"net.ipv4.ip_local_port_range", "32768 60999", 0},
	{"net.core.rmem_max", "8388608", 0},
	{"net.core.wmem_max", "4194304", 0},
};

struct host {
	struct kv v[KV_MAX];
	size_t n;
};

/* The defaults with the overrides of a case (a NULL value stands for an error). */
static void host_make(struct host *h, const struct kv *over)
{
	h->n = 0;
	for (size_t i = 0; i < sizeof(host_defaults) / sizeof(host_defaults[0]); i++)
		h->v[h->n++] = host_defaults[i];
	for (size_t i = 0; over && over[i].knob; i++) {
		size_t j;

		for (j = 0; j < h->n; j++)
			if (strcmp(h->v[j].knob, over[i].knob) == 0)
				break;
		if (j == h->n)
			h->n++;
		assert_true(h->n <= KV_MAX);
		h->v[j] = over[i];
	}
}

static int value_of(const char *knob, char *out, size_t outlen, void *ctx)
{
	const struct host *h = ctx;

	for (size_t i = 0; i < h->n; i++) {
		if (strcmp(h->v[i].knob, knob) != 0)
			continue;
		if (!h->v[i].value)
			return h->v[i].err;
		snprintf(out, outlen, "%s", h->v[i].value);
		return 0;
	}
	return -ENOENT;
}

/* ---- reports ------------------------------------------------------------------------------------------------ */

struct fire {
	const char *detector;
	double value;
};

#define FIRES_MAX 4

/* An actionable report in which the detectors of FIRES have those values and every other one reads 0. */
static void report_make(struct detect_report *rep, const struct fire *fires)
{
	memset(rep, 0, sizeof(*rep));
	rep->actionable = true;
	rep->bottleneck = DETECT_BOTTLENECK_HERE;
	rep->ticks = 60;
	rep->window_s = 60;
	snprintf(rep->status, sizeof(rep->status), "busy");
	for (size_t i = 0; i < DETECT_COUNT; i++) {
		rep->r[i].id = (enum detect_id)i;
		rep->r[i].name = detect_name((enum detect_id)i);
		rep->r[i].valid = rep->r[i].sustained = true;
		rep->r[i].value = 0;
		rep->r[i].window_s = 60;
	}
	for (size_t i = 0; i < FIRES_MAX && fires[i].detector; i++) {
		enum detect_id id;

		assert_int_equal(detect_lookup(fires[i].detector, &id), 0);
		rep->r[id].value = fires[i].value;
		rep->r[id].active = true;
		snprintf(rep->r[id].evidence, sizeof(rep->r[id].evidence), "%s at %g", fires[i].detector,
			 fires[i].value);
	}
}

/* ---- the table ---------------------------------------------------------------------------------------------- */

struct pcase {
	const char *what;
	struct fire fires[FIRES_MAX];
	struct kv over[6];
	const char *knob, *from, *to; /* knob NULL: no proposal */
	const char *reason;           /* a substring of the outcome's reason */
	const char *skipped;          /* the first knob passed over, or NULL for none */
	const char *skip_reason;      /* a substring of its reason */
};

static const struct pcase pcases[] = {
	{"time_squeeze on a default host: the auto knob first",
	 {{"softnet_squeeze", 3.5}}, {{NULL, NULL, 0}},
	 "net.core.netdev_budget", "300", "600", "softnet_squeeze = 3.5 > 1", NULL, NULL},
	{"netdev_budget at its bound: the time budget next",
	 {{"softnet_squeeze", 3.5}}, {{"net.core.netdev_budget", "1200", 0}, {NULL, NULL, 0}},
	 "net.core.netdev_budget_usecs", "2000", "2500", NULL, "net.core.netdev_budget", "at its bound going up"},
	{"a tiny netdev_budget goes to the policy's minimum first",
	 {{"softnet_squeeze", 3.5}}, {{"net.core.netdev_budget", "64", 0}, {NULL, NULL, 0}},
	 "net.core.netdev_budget", "64", "300", NULL, NULL, NULL},
	{"both softnet knobs at their bounds",
	 {{"softnet_squeeze", 3.5}}, {{"net.core.netdev_budget", "1200", 0},
				      {"net.core.netdev_budget_usecs", "4000", 0}, {NULL, NULL, 0}},
	 NULL, NULL, NULL, "2 knobs triggered, none can move", "net.core.netdev_budget", NULL},
	{"listen overflows: the backlog, not somaxconn",
	 {{"listen_overflows", 2}}, {{NULL, NULL, 0}},
	 "listen_queue", "511", "1022", NULL, "net.core.somaxconn", "backlog 511 is below somaxconn 4096"},
	{"listen overflows with a backlog at somaxconn: still the backlog, which raises somaxconn with it",
	 {{"listen_overflows", 2}}, {{"listen_queue", "4096", 0}, {NULL, NULL, 0}},
	 "listen_queue", "4096", "8192", NULL, "net.core.somaxconn", "changes no socket nginx already listens on"},
	{"listen overflows with a tiny somaxconn cutting the backlog",
	 {{"listen_overflows", 2}}, {{"listen_queue", "16", 0}, {"net.core.somaxconn", "16", 0}, {NULL, NULL, 0}},
	 "listen_queue", "16", "511", NULL, "net.core.somaxconn", "live limit 16"},
	{"listen overflows without an nginx backlog knob on this host",
	 {{"listen_overflows", 2}}, {{"listen_queue", NULL, -ENOENT}, {NULL, NULL, 0}},
	 "net.core.somaxconn", "4096", "8192", NULL, NULL, NULL},
	{"listen overflows, somaxconn at its bound",
	 {{"listen_overflows", 2}}, {{"net.core.somaxconn", "65535", 0}, {NULL, NULL, 0}},
	 "listen_queue", "511", "1022", NULL, "net.core.somaxconn", "at its bound"},
	{"worker_connections exhausted",
	 {{"worker_connections_exhausted", 1.5}}, {{NULL, NULL, 0}},
	 "nginx.worker_connections", "1024", "2048", NULL, NULL, NULL},
	{"workers out of connections: the accept queue's overflows are their symptom, not a queue too short",
	 {{"listen_overflows", 12.6}, {"worker_connections_exhausted", 2}}, {{NULL, NULL, 0}},
	 "nginx.worker_connections", "1024", "2048", NULL, "net.core.somaxconn", "the workers have no free connection"},
	{"Too many open files (worker_rlimit_nofile 256 on a real nginx): the file limit's fix, not the queue",
	 {{"listen_overflows", 300}, {"file_limit", 4}}, {{"nginx.worker_rlimit_nofile", "256", 0}, {NULL, NULL, 0}},
	 "nginx.worker_rlimit_nofile", "256", "1024", NULL, NULL, NULL},
	{"the file limit's fix at its bound: nothing else",
	 {{"listen_overflows", 300}, {"keepalive_short", 0.9}, {"file_limit", 4}},
	 {{"nginx.worker_rlimit_nofile", "1048576", 0}, {NULL, NULL, 0}},
	 NULL, NULL, NULL, "none can move", "nginx.worker_rlimit_nofile", "at its bound"},
	{"file limit without its knob on this host: nothing else either",
	 {{"listen_overflows", 300}, {"file_limit", 4}}, {{"nginx.worker_rlimit_nofile", NULL, -ENOENT},
							     {NULL, NULL, 0}},
	 NULL, NULL, NULL, "none can move", "nginx.worker_rlimit_nofile", "absent"},
	{"a frozen knob is passed over",
	 {{"worker_connections_exhausted", 1.5}}, {{"nginx.worker_connections", NULL, -EBUSY}, {NULL, NULL, 0}},
	 NULL, NULL, NULL, "none can move", "nginx.worker_connections", "frozen"},
	{"a knob whose value cannot be read is passed over",
	 {{"worker_connections_exhausted", 1.5}}, {{"nginx.worker_connections", NULL, -EIO}, {NULL, NULL, 0}},
	 NULL, NULL, NULL, NULL, "nginx.worker_connections", "cannot be read"},
	{"run-queue delay: the slice goes down; the CPU list has no step rule",
	 {{"worker_run_delay", 0.3}}, {{NULL, NULL, 0}},
	 "sched.base_slice", "1000000", "750000", NULL, "nginx.worker_cpu_affinity", "no step rule"},
	{"orphans pile up: the FIN timeout goes down",
	 {{"finwait_pileup", 80}}, {{NULL, NULL, 0}},
	 "net.ipv4.tcp_fin_timeout", "60", "45", NULL, NULL, NULL},
	{"out of local ports: the range widens at both ends",
	 {{"port_exhaustion", 3}}, {{NULL, NULL, 0}},
	 "net.ipv4.ip_local_port_range", "32768 60999", "28672 65095", NULL, NULL, NULL},
	{"the range at its high bound still widens down",
	 {{"port_exhaustion", 3}}, {{"net.ipv4.ip_local_port_range", "32768 65535", 0}, {NULL, NULL, 0}},
	 "net.ipv4.ip_local_port_range", "32768 65535", "28672 65535", NULL, NULL, NULL},
	{"keepalive_requests cuts clients off",
	 {{"keepalive_short", 0.7}}, {{"nginx.keepalive_requests", "100", 0}, {NULL, NULL, 0}},
	 "nginx.keepalive_requests", "100", "200", NULL, NULL, NULL},
	{"keepalive_requests 1 in CI: the squeezes of a handshake per request are its symptom",
	 {{"softnet_squeeze", 6.4}, {"keepalive_short", 1.0}, {"finwait_pileup", 80}},
	 {{"nginx.keepalive_requests", "1", 0}, {NULL, NULL, 0}},
	 "nginx.keepalive_requests", "1", "100", "keepalive_short = 1 > 0.5", NULL, NULL},
	{"the cause's knob at its bound: the symptom's own knob after all",
	 {{"softnet_squeeze", 6.4}, {"keepalive_short", 1.0}},
	 {{"nginx.keepalive_requests", "100000", 0}, {NULL, NULL, 0}},
	 "net.core.netdev_budget", "300", "600", NULL, "nginx.keepalive_requests", "at its bound"},
	{"keepalive_requests and the squeeze's knobs all at their bounds: each passed over once",
	 {{"softnet_squeeze", 6.4}, {"keepalive_short", 1.0}},
	 {{"nginx.keepalive_requests", "100000", 0}, {"net.core.netdev_budget", "1200", 0},
	  {"net.core.netdev_budget_usecs", "4000", 0}, {NULL, NULL, 0}},
	 NULL, NULL, NULL, "none can move", "nginx.keepalive_requests", "at its bound"},
	{"squeezes with clients that keep their connections: the softirq budget",
	 {{"softnet_squeeze", 6.4}, {"keepalive_short", 0.2}}, {{NULL, NULL, 0}},
	 "net.core.netdev_budget", "300", "600", NULL, NULL, NULL},
	{"a squeeze now and then (the demo's 5 in 30 s) is no limit",
	 {{"softnet_squeeze", 0.17}}, {{NULL, NULL, 0}},
	 NULL, NULL, NULL, "no knob's trigger fires", NULL, NULL},
	{"keepalive_short below its threshold",
	 {{"keepalive_short", 0.5}}, {{NULL, NULL, 0}},
	 NULL, NULL, NULL, "no knob's trigger fires", NULL, NULL},
	{"softirq imbalance with no interface's packets known: nothing to move",
	 {{"softirq_imbalance", 95}}, {{NULL, NULL, 0}},
	 NULL, NULL, NULL, "none can move", "irq_affinity", "received packets"},
	{"priority: lost connections before lost packets",
	 {{"softnet_drops", 50}, {"listen_overflows", 0.1}}, {{NULL, NULL, 0}},
	 "listen_queue", "511", "1022", NULL, "net.core.somaxconn", NULL},
	{"priority: a blocked first symptom falls through to the next",
	 {{"softnet_drops", 50}, {"listen_overflows", 0.1}},
	 {{"listen_queue", "65535", 0}, {"net.core.somaxconn", "65535", 0}, {"nginx.multi_accept", "on", 0},
	  {NULL, NULL, 0}},
	 "net.core.netdev_max_backlog", "1000", "2000", NULL, "net.core.somaxconn", "at its bound"},
	{"worker saturation is no reason for more workers than CPUs (issue 21: 2 -> 4 on 2 CPUs was proposed)",
	 {{"worker_saturation", 0.95}}, {{NULL, NULL, 0}},
	 NULL, NULL, NULL, "no knob's trigger fires", NULL, NULL},
	{"one worker does most of the work (accept_mutex on, as measured): reuseport",
	 {{"worker_imbalance", 1.4}}, {{"nginx.accept_mutex", "on", 0}, {NULL, NULL, 0}},
	 "listen_reuseport", "off", "on", NULL, NULL, NULL},
	{"uneven workers with reuseport on already: nothing left to move",
	 {{"worker_imbalance", 1.4}}, {{"listen_reuseport", "on", 0}, {NULL, NULL, 0}},
	 NULL, NULL, NULL, "none can move", "listen_reuseport", "at its bound"},
	{"clients that connect and wait: deferred",
	 {{"silent_connections", 300}}, {{NULL, NULL, 0}},
	 "listen_deferred", "off", "on", NULL, NULL, NULL},
	{"idle connections with deferred on already: nothing left to move",
	 {{"silent_connections", 300}}, {{"listen_deferred", "on", 0}, {NULL, NULL, 0}},
	 NULL, NULL, NULL, "none can move", "listen_deferred", "at its bound"},
	{"the last in line: lost connections first",
	 {{"silent_connections", 300}, {"listen_overflows", 0.1}}, {{NULL, NULL, 0}},
	 "listen_queue", "511", "1022", NULL, "net.core.somaxconn", NULL},
	{"workers alike", {{"worker_imbalance", 1.1}}, {{NULL, NULL, 0}},
	 NULL, NULL, NULL, "no knob's trigger fires", NULL, NULL},
	{"nothing fires", {{NULL, 0}}, {{NULL, NULL, 0}}, NULL, NULL, NULL, "no knob's trigger fires", NULL, NULL},
};

static void check_outcome(const struct pcase *c, const struct plan_outcome *o)
{
	print_message("%s: %s\n", c->what, o->reason);
	for (size_t i = 0; i < o->nskipped; i++)
		print_message("    skipped %s: %s\n", o->skipped[i].knob, o->skipped[i].reason);
	if (c->knob) {
		if (!o->proposed)
			fail_msg("%s: no proposal: %s", c->what, o->reason);
		assert_string_equal(o->prop.knob, c->knob);
		assert_string_equal(o->prop.from, c->from);
		assert_string_equal(o->prop.to, c->to);
	} else {
		assert_false(o->proposed);
	}
	if (c->reason && !strstr(o->reason, c->reason))
		fail_msg("%s: reason \"%s\" lacks \"%s\"", c->what, o->reason, c->reason);
	/* A knob is passed over once: the reason is the same every time it would be tried. */
	for (size_t i = 0; i < o->nskipped; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(o->skipped[i].knob, o->skipped[j].knob) == 0)
				fail_msg("%s: %s passed over twice", c->what, o->skipped[i].knob);
	if (c->skipped) {
		assert_true(o->nskipped >= 1);
		assert_string_equal(o->skipped[0].knob, c->skipped);
		if (c->skip_reason && !strstr(o->skipped[0].reason, c->skip_reason))
			fail_msg("%s: skip reason \"%s\" lacks \"%s\"", c->what, o->skipped[0].reason, c->skip_reason);
	} else if (c->knob) {
		assert_int_equal(o->nskipped, 0);
	}
}

static void test_table(void **state)
{
	struct policy_set set;
	struct plan_config cfg;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
		const struct pcase *c = &pcases[i];
		struct detect_report rep;
		struct plan_outcome o;
		struct host h;

		host_make(&h, c->over);
		report_make(&rep, c->fires);
		assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
		check_outcome(c, &o);
	}
	policy_set_free(&set);
}

/* CPU placement: where the NET_RX load is (the report's cpus) and the maps of the busiest receiver's knobs decide
 * the step. Four CPUs, CPU 0 hot at 92% (eth0's NET_RX), the others idle in the order 3, 2, 1. */
static const struct place_case {
	const char *what;
	struct kv over[4];
	int hot;                        /* -1: the four-CPU report below */
	const char *knob, *from, *to;   /* knob NULL: no proposal */
	const char *skipped, *skip_reason;
} place_cases[] = {
	{"RPS off, one queue: the idlest CPU takes its protocol work",
	 {{"rps.eth0", "0:", 0}}, -1, "rps.eth0", "0:", "0:3", "irq_affinity.eth0", "absent"},
	{"RPS steers onto the hot CPU alone: off",
	 {{"rps.eth0", "0:0", 0}}, -1, "rps.eth0", "0:0", "0:", "irq_affinity.eth0", "absent"},
	{"RPS spreads over every CPU, the hot one too: it comes out",
	 {{"rps.eth0", "0:0-3", 0}}, -1, "rps.eth0", "0:0-3", "0:1-3", "irq_affinity.eth0", "absent"},
	{"RPS on every cool CPU already: nothing left",
	 {{"rps.eth0", "0:1-3", 0}}, -1, NULL, NULL, NULL, "irq_affinity.eth0", "absent"},
	{"two queues, one without CPU 3: it is added where it lacks",
	 {{"rps.eth0", "0:;1:3", 0}}, -1, "rps.eth0", "0:;1:3", "0:3;1:3", "irq_affinity.eth0", "absent"},
	{"two IRQs on the hot CPU: the higher one moves to the idlest CPU, before RPS",
	 {{"rps.eth0", "0:;1:", 0}, {"irq_affinity.eth0", "40:0;41:0", 0}}, -1, "irq_affinity.eth0", "40:0;41:0",
	 "40:0;41:3", NULL, NULL},
	{"IRQs on the hot CPU and on the idlest: the next idlest takes it",
	 {{"rps.eth0", "0:;1:", 0}, {"irq_affinity.eth0", "40:0;41:0;42:3", 0}}, -1, "irq_affinity.eth0",
	 "40:0;41:0;42:3", "40:0;41:2;42:3", NULL, NULL},
	{"one IRQ: moving it moves the hot spot, RPS spreads",
	 {{"rps.eth0", "0:", 0}, {"irq_affinity.eth0", "40:0", 0}}, -1, "rps.eth0", "0:", "0:3", "irq_affinity.eth0",
	 "its one IRQ"},
	{"irqbalance runs: the IRQs are frozen, RPS spreads",
	 {{"rps.eth0", "0:", 0}, {"irq_affinity.eth0", NULL, -EBUSY}}, -1, "rps.eth0", "0:", "0:3",
	 "irq_affinity.eth0", "frozen"},
	/* Measured on a veth pair, 2 CPUs: rps_cpus 2 on nginx's side put 67.2% of CPU 1 in softirq, 29.0% of
	 * CPU 0 (wrk: 81k requests/s against 128k without RPS). */
	{"two CPUs, RPS steering onto the hot one (the veth measurement): off",
	 {{"rps.eth0", "0:1", 0}}, 1, "rps.eth0", "0:1", "0:", "irq_affinity.eth0", "absent"},
	{"two CPUs, RPS off, the other CPU at 29% of 67%: it takes the work",
	 {{"rps.eth0", "0:", 0}}, 1, "rps.eth0", "0:", "0:0", "irq_affinity.eth0", "absent"},
};

static void place_report(struct detect_report *rep, int hot)
{
	static const struct fire fires[FIRES_MAX] = {{"softirq_imbalance", 92}};
	struct detect_cpus *c = &rep->cpus;

	report_make(rep, fires);
	c->nrx = 1;
	snprintf(c->rx_dev[0], sizeof(c->rx_dev[0]), "eth0");
	c->rx_pps[0] = 250000;
	if (hot < 0) {
		c->hot = 0, c->hot_softirq = 92, c->n = 3;
		c->idlest[0] = 3, c->idlest[1] = 2, c->idlest[2] = 1;
		c->idle[0] = 80, c->idle[1] = 70, c->idle[2] = 60;
		c->softirq[0] = 5, c->softirq[1] = 6, c->softirq[2] = 7;
		return;
	}
	rep->r[DETECT_SOFTIRQ_IMBALANCE].value = 92; /* the shipped trigger is 80; the value is the policy's */
	c->hot = hot, c->hot_softirq = 67.2, c->n = 1;
	c->idlest[0] = (uint16_t)(1 - hot), c->idle[0] = 40, c->softirq[0] = 29.0;
}

static void test_placement(void **state)
{
	struct policy_set set;
	struct plan_config cfg;
	struct plan_memory mem;
	struct detect_report rep;
	struct plan_outcome o;
	struct host h;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	for (size_t i = 0; i < sizeof(place_cases) / sizeof(place_cases[0]); i++) {
		const struct place_case *c = &place_cases[i];
		const struct pcase pc = {.what = c->what, .knob = c->knob, .from = c->from, .to = c->to,
					 .skipped = c->skipped, .skip_reason = c->skip_reason};

		host_make(&h, c->over);
		place_report(&rep, c->hot);
		assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
		check_outcome(&pc, &o);
		if (c->knob)
			assert_int_equal(o.prop.detector, DETECT_SOFTIRQ_IMBALANCE);
	}

	/* A proxy's lo receives more than its NIC, and has no RPS knob (the shipped target matches NICs): the
	 * busiest receiver with a knob is the one. */
	host_make(&h, (const struct kv[]){{"rps.eth0", "0:", 0}, {NULL, NULL, 0}});
	place_report(&rep, -1);
	rep.cpus.nrx = 3;
	snprintf(rep.cpus.rx_dev[0], sizeof(rep.cpus.rx_dev[0]), "lo");
	snprintf(rep.cpus.rx_dev[1], sizeof(rep.cpus.rx_dev[1]), "eth0");
	snprintf(rep.cpus.rx_dev[2], sizeof(rep.cpus.rx_dev[2]), "veth1");
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
	print_message("lo busiest: %s\n", o.reason);
	assert_true(o.proposed);
	assert_string_equal(o.prop.knob, "rps.eth0");
	assert_string_equal(o.prop.to, "0:3");
	/* None with a knob: said against the busiest. */
	host_make(&h, NULL);
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
	assert_false(o.proposed);
	assert_string_equal(o.skipped[o.nskipped - 1].knob, "rps.lo");
	assert_non_null(strstr(o.skipped[o.nskipped - 1].reason, "absent on this host, as on the other 2"));

	/* What failed is remembered per interface: after rps.eth0 0: -> 0:3 did harm, eth0 waits for changed
	 * conditions, while eth1 (the busiest receiver now, at 0: too) is proposed the same step. */
	plan_memory_init(&mem);
	host_make(&h, (const struct kv[]){{"rps.eth0", "0:", 0}, {"rps.eth1", "0:", 0}, {NULL, NULL, 0}});
	place_report(&rep, -1);
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
	assert_true(o.proposed);
	assert_string_equal(o.prop.knob, "rps.eth0");
	assert_int_equal(o.prop.dir, PLAN_UP);
	assert_int_equal(plan_memory_record(&mem, &cfg, &o.prop, PLAN_HARM, 1000), 0);
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, &mem, &cfg, 1000 + cfg.cooldown_ms + 1, &o), 0);
	print_message("after harm: %s\n", o.reason);
	assert_false(o.proposed);
	assert_string_equal(o.skipped[o.nskipped - 1].knob, "rps.eth0");
	assert_non_null(strstr(o.skipped[o.nskipped - 1].reason, "going up from 0: failed"));
	snprintf(rep.cpus.rx_dev[0], sizeof(rep.cpus.rx_dev[0]), "eth1");
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, &mem, &cfg, 1000 + cfg.cooldown_ms + 1, &o), 0);
	assert_true(o.proposed);
	assert_string_equal(o.prop.knob, "rps.eth1");
	assert_string_equal(o.prop.to, "0:3");
	plan_memory_free(&mem);
	policy_set_free(&set);
}

/* Before the window is full (CI, a real nginx with worker_connections 128 under 1000 clients): the accept queue's
 * overflows are gross at 504/s while "worker_connections are not enough" came 2/s, too few ticks for a valid
 * reading. An error in the last ticks is enough to hold the listen knobs back: no listen_queue 511 -> 1022. */
static void test_exhausted_before_the_window(void **state)
{
	static const struct fire fires[FIRES_MAX] = {{"listen_overflows", 504}};
	struct detect_reading *wc;
	struct policy_set set;
	struct plan_config cfg;
	struct detect_report rep;
	struct plan_outcome o;
	struct host h;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	host_make(&h, NULL);
	report_make(&rep, fires);
	rep.ticks = 12;
	wc = &rep.r[DETECT_WORKER_CONNECTIONS_EXHAUSTED];
	wc->valid = wc->sustained = wc->active = false;
	wc->value = NAN;
	wc->recent = true;
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
	print_message("%s\n", o.reason);
	assert_false(o.proposed);
	assert_true(o.nskipped >= 1);
	for (size_t i = 0; i < o.nskipped; i++)
		if (!strstr(o.skipped[i].reason, "the workers have no free connection"))
			fail_msg("%s skipped for another reason: %s", o.skipped[i].knob, o.skipped[i].reason);
	/* Without the error, the same overflows are the queue's. */
	wc->recent = false;
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
	assert_true(o.proposed);
	assert_string_equal(o.prop.knob, "listen_queue");
	policy_set_free(&set);
}

/* What a proposal carries: the symptom with its evidence and the trial plan from the policy. */
static void test_proposal_contents(void **state)
{
	static const struct fire fires[FIRES_MAX] = {{"softnet_squeeze", 3.5}};
	struct policy_set set;
	struct plan_config cfg;
	struct detect_report rep;
	struct plan_outcome o;
	struct host h;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	host_make(&h, NULL);
	report_make(&rep, fires);
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
	assert_true(o.proposed);
	assert_int_equal(o.prop.detector, DETECT_SOFTNET_SQUEEZE);
	assert_true(o.prop.value == 3.5);
	assert_int_equal(o.prop.op, POLICY_GT);
	assert_true(o.prop.threshold == 1); /* softnet.policy: more than one a second */
	assert_string_equal(o.prop.evidence, "softnet_squeeze at 3.5");
	assert_int_equal(o.prop.dir, PLAN_UP);
	assert_false(o.prop.approval_required); /* approval = auto in softnet.policy */
	assert_int_equal(o.prop.trial.pairs, 8);
	assert_int_equal(o.prop.trial.settle_ms, 30000);
	assert_int_equal(o.prop.trial.block_ms, 30000 + 90000);
	assert_int_equal(o.prop.trial.duration_ms, 8 * 2 * 120000);
	assert_string_equal(o.prop.trial.objective.metric, "softnet.time_squeeze");
	assert_int_equal(o.prop.trial.objective.dir, POLICY_LOWER_IS_BETTER);
	/* The policy's guardrails, then what clients get (implied), in plan_trial_outcomes' order. */
	assert_int_equal(o.prop.trial.nguardrails, 8);
	assert_string_equal(o.prop.trial.guardrails[0].metric, "http.p99_ms");
	assert_false(o.prop.trial.guardrails[0].implied);
	assert_string_equal(o.prop.trial.guardrails[1].metric, "nginx.worker_wait_ratio");
	assert_false(o.prop.trial.guardrails[1].implied);
	assert_string_equal(o.prop.trial.guardrails[2].metric, "http.good_rate");
	assert_int_equal(o.prop.trial.guardrails[2].dir, POLICY_HIGHER_IS_BETTER);
	assert_true(o.prop.trial.guardrails[2].implied);
	assert_string_equal(o.prop.trial.guardrails[3].metric, "client.failure_rate");
	assert_string_equal(o.prop.trial.guardrails[4].metric, "http.5xx_rate");
	assert_string_equal(o.prop.trial.guardrails[5].metric, "client.p50_ms");
	assert_true(o.prop.trial.guardrails[5].implied);
	assert_false(o.prop.trial.guardrails[5].ledger);
	/* The connections' wait to be accepted and those the kernel refused: weighed in the clients' time ledger, no
	 * guardrails of their own. */
	assert_string_equal(o.prop.trial.guardrails[6].metric, "tcp.accept_wait");
	assert_true(o.prop.trial.guardrails[6].implied);
	assert_true(o.prop.trial.guardrails[6].ledger);
	assert_string_equal(o.prop.trial.guardrails[7].metric, "tcp.listen_overflows");
	assert_true(o.prop.trial.guardrails[7].ledger);

	/* listen_queue needs approval and settles for a minute (a reload). */
	{
		static const struct fire lf[FIRES_MAX] = {{"listen_overflows", 2}};

		report_make(&rep, lf);
		cfg.pairs = 4;
		cfg.measure_ms = 60000;
		assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
		assert_string_equal(o.prop.knob, "listen_queue");
		assert_true(o.prop.approval_required);
		assert_int_equal(o.prop.trial.block_ms, 120000);
		assert_int_equal(o.prop.trial.duration_ms, 4 * 2 * 120000);
		assert_string_equal(o.prop.trial.objective.metric, "tcp.listen_overflows");
	}
	policy_set_free(&set);
}

/* Nothing is proposed while the report is not actionable, whatever fires; nor for readings that are not
 * sustained or not valid. */
/* An operator's proposal of a per-interface knob (POLICY.DEV) gets its policy's trial plan, under its own name. */
static void test_operator_per_interface(void **state)
{
	struct plan_config cfg;
	struct plan_proposal prop;
	struct policy_set set;

	(void)state;
	plan_config_default(&cfg);
	load_shipped(&set, false);
	assert_int_equal(plan_operator(&set, "rps.lo", "0:", "0:0-1", "try it", &cfg, &prop), 0);
	assert_string_equal(prop.knob, "rps.lo");
	assert_string_equal(prop.trial.objective.metric, "cpu.busy_per_kreq");
	assert_non_null(strstr(prop.evidence, "try it"));
	assert_int_equal(plan_operator(&set, "irq_affinity.eth0", "25:0", "25:1", "", &cfg, &prop), 0);
	assert_string_equal(prop.knob, "irq_affinity.eth0");
	assert_int_equal(plan_operator(&set, "net.core.somaxconn", "4096", "8192", "", &cfg, &prop), 0);
	assert_int_equal(plan_operator(&set, "rps.", "0:", "0:1", "", &cfg, &prop), -ENOENT);
	assert_int_equal(plan_operator(&set, "rpsx.lo", "0:", "0:1", "", &cfg, &prop), -ENOENT);
	assert_int_equal(plan_operator(&set, "net.core.somaxconn.lo", "1", "2", "", &cfg, &prop), -ENOENT);
	policy_set_free(&set);
}

static void test_not_actionable(void **state)
{
	static const struct fire fires[FIRES_MAX] = {{"softnet_squeeze", 3.5}, {"listen_overflows", 9}};
	struct policy_set set;
	struct plan_config cfg;
	struct detect_report rep;
	struct plan_outcome o;
	struct host h;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	host_make(&h, NULL);
	report_make(&rep, fires);
	rep.actionable = false;
	rep.bottleneck = DETECT_BOTTLENECK_UPSTREAM;
	snprintf(rep.status, sizeof(rep.status), "upstream time is 95%% of request time");
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
	assert_false(o.proposed);
	assert_string_equal(o.reason, "no proposal: upstream time is 95% of request time");

	report_make(&rep, fires);
	rep.r[DETECT_SOFTNET_SQUEEZE].sustained = false;
	rep.r[DETECT_LISTEN_OVERFLOWS].valid = false;
	rep.r[DETECT_LISTEN_OVERFLOWS].value = NAN;
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), 0);
	assert_false(o.proposed);

	cfg.pairs = 0;
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), -EINVAL);
	plan_config_default(&cfg);
	cfg.worse_factor = NAN;
	assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, 1000, &o), -EINVAL);
	policy_set_free(&set);
}

/* The order of the policy files does not change the choice. */
static void test_deterministic(void **state)
{
	static const struct fire fires[FIRES_MAX] = {{"softnet_squeeze", 3.5}, {"softnet_drops", 3},
						     {"worker_run_delay", 0.5}};
	struct policy_set a, b;
	struct plan_config cfg;
	struct detect_report rep;
	struct plan_outcome oa, ob, oc;
	struct host h;

	(void)state;
	load_shipped(&a, false);
	load_shipped(&b, true);
	plan_config_default(&cfg);
	host_make(&h, NULL);
	report_make(&rep, fires);
	assert_int_equal(plan_next(&a, &rep, NULL, value_of, &h, NULL, &cfg, 5000, &oa), 0);
	assert_int_equal(plan_next(&b, &rep, NULL, value_of, &h, NULL, &cfg, 5000, &ob), 0);
	assert_int_equal(plan_next(&a, &rep, NULL, value_of, &h, NULL, &cfg, 5000, &oc), 0);
	assert_true(oa.proposed && ob.proposed);
	/* softnet_drops ranks before softnet_squeeze; netdev_max_backlog is its only knob. */
	assert_string_equal(oa.prop.knob, "net.core.netdev_max_backlog");
	assert_string_equal(oa.prop.knob, ob.prop.knob);
	assert_string_equal(oa.prop.to, ob.prop.to);
	assert_string_equal(oa.reason, ob.reason);
	assert_int_equal(memcmp(&oa, &oc, sizeof(oa)), 0);
	policy_set_free(&a);
	policy_set_free(&b);
}

/* ---- memory ------------------------------------------------------------------------------------------------- */

static void next(const struct policy_set *set, const struct detect_report *rep, struct host *h,
		 const struct plan_memory *mem, const struct plan_config *cfg, int64_t now, struct plan_outcome *o)
{
	assert_int_equal(plan_next(set, rep, NULL, value_of, h, mem, cfg, now, o), 0);
	print_message("t=%lld: %s%s%s\n", (long long)now, o->reason, o->nskipped ? "; skipped: " : "",
		      o->nskipped ? o->skipped[0].reason : "");
}

static void test_memory_harm(void **state)
{
	static const struct fire fires[FIRES_MAX] = {{"softnet_squeeze", 3.5}};
	struct policy_set set;
	struct plan_config cfg;
	struct plan_memory mem;
	struct detect_report rep;
	struct plan_outcome o, budget;
	struct host h;
	const int64_t t0 = 1000000, hour = 3600000;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	plan_memory_init(&mem);
	host_make(&h, NULL);
	report_make(&rep, fires);

	next(&set, &rep, &h, &mem, &cfg, t0, &budget);
	assert_string_equal(budget.prop.knob, "net.core.netdev_budget");
	assert_int_equal(plan_memory_record(&mem, &cfg, &budget.prop, PLAN_HARM, t0 + 100), 0);

	/* Cooling down: the other knob of the symptom is next. */
	next(&set, &rep, &h, &mem, &cfg, t0 + 1000, &o);
	assert_string_equal(o.prop.knob, "net.core.netdev_budget_usecs");
	assert_string_equal(o.skipped[0].knob, "net.core.netdev_budget");
	assert_non_null(strstr(o.skipped[0].reason, "cooling down"));
	assert_int_equal(plan_memory_record(&mem, &cfg, &o.prop, PLAN_ABORTED, t0 + 2000), 0);

	next(&set, &rep, &h, &mem, &cfg, t0 + 3000, &o);
	assert_false(o.proposed);
	assert_int_equal(o.nskipped, 2);

	/* After the cooldown the failed direction still blocks: same value, same symptom, nothing kept since. */
	next(&set, &rep, &h, &mem, &cfg, t0 + hour + 3000, &o);
	assert_false(o.proposed);
	assert_non_null(strstr(o.skipped[0].reason, "going up from 300 failed"));

	/* A symptom not yet twice as bad is the same conditions; twice as bad is not. */
	rep.r[DETECT_SOFTNET_SQUEEZE].value = 6.9;
	next(&set, &rep, &h, &mem, &cfg, t0 + hour + 4000, &o);
	assert_false(o.proposed);
	rep.r[DETECT_SOFTNET_SQUEEZE].value = 7.0;
	next(&set, &rep, &h, &mem, &cfg, t0 + hour + 5000, &o);
	assert_true(o.proposed);
	assert_string_equal(o.prop.knob, "net.core.netdev_budget");
	assert_string_equal(o.prop.to, "600");
	rep.r[DETECT_SOFTNET_SQUEEZE].value = 3.5;

	/* The knob found at another value (someone moved it, or a change of it was kept) is a new start. */
	h.v[3].value = "400";
	assert_string_equal(h.v[3].knob, "net.core.netdev_budget");
	next(&set, &rep, &h, &mem, &cfg, t0 + hour + 6000, &o);
	assert_string_equal(o.prop.knob, "net.core.netdev_budget");
	assert_string_equal(o.prop.from, "400");
	assert_string_equal(o.prop.to, "800");
	h.v[3].value = "300";

	/* A kept change anywhere on the host: every remembered failure may be tried again. */
	{
		struct plan_proposal other;

		memset(&other, 0, sizeof(other));
		snprintf(other.knob, sizeof(other.knob), "listen_queue");
		assert_int_equal(plan_memory_record(&mem, &cfg, &other, PLAN_KEPT, t0 + hour + 7000), 0);
		assert_int_equal(mem.generation, 1);
	}
	next(&set, &rep, &h, &mem, &cfg, t0 + hour + 8000, &o);
	assert_string_equal(o.prop.knob, "net.core.netdev_budget");

	/* And, without any of that, the memory fades after memory_ms. */
	plan_memory_free(&mem);
	plan_memory_init(&mem);
	assert_int_equal(plan_memory_record(&mem, &cfg, &budget.prop, PLAN_HARM, t0), 0);
	next(&set, &rep, &h, &mem, &cfg, t0 + cfg.memory_ms - 1, &o);
	assert_string_equal(o.prop.knob, "net.core.netdev_budget_usecs");
	next(&set, &rep, &h, &mem, &cfg, t0 + cfg.memory_ms, &o);
	assert_string_equal(o.prop.knob, "net.core.netdev_budget");
	plan_memory_free(&mem);
	policy_set_free(&set);
}

/* Follow through (issue 14): a kept listen_queue 511 -> 1022 with 14-19 overflows a second left is no end: the
 * trigger still fires, so the next proposal steps on from the kept value at once, with no cooldown. */
static void test_follow_through(void **state)
{
	static const struct fire fires[FIRES_MAX] = {{"listen_overflows", 16}};
	static const struct kv kept[] = {{"listen_queue", "1022", 0}, {NULL, NULL, 0}};
	struct policy_set set;
	struct plan_config cfg;
	struct detect_report rep;
	struct plan_outcome first, o;
	struct plan_memory mem;
	struct host h;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	host_make(&h, NULL);
	report_make(&rep, fires);
	plan_memory_init(&mem);
	next(&set, &rep, &h, &mem, &cfg, 0, &first);
	assert_string_equal(first.prop.knob, "listen_queue");
	assert_string_equal(first.prop.to, "1022");
	assert_int_equal(plan_memory_record(&mem, &cfg, &first.prop, PLAN_KEPT, 1000), 0);
	host_make(&h, kept);
	next(&set, &rep, &h, &mem, &cfg, 1001, &o);
	assert_true(o.proposed);
	assert_string_equal(o.prop.knob, "listen_queue");
	assert_string_equal(o.prop.from, "1022");
	assert_string_equal(o.prop.to, "2044");
	plan_memory_free(&mem);
	policy_set_free(&set);
}

static void test_memory_results(void **state)
{
	static const struct fire fires[FIRES_MAX] = {{"worker_connections_exhausted", 2}};
	static const struct {
		enum plan_result result;
		bool after_cooldown; /* proposed again once the cooldown is over */
		const char *why;     /* the skip reason then */
	} rows[] = {
		{PLAN_ERROR, true, NULL},
		{PLAN_INCONCLUSIVE, false, "2048 was reverted"},
		{PLAN_REJECTED, false, "2048 was reverted"},
		{PLAN_HARM, false, "going up from 1024 failed"},
		{PLAN_ABORTED, false, "going up from 1024 failed"},
	};
	struct policy_set set;
	struct plan_config cfg;
	struct detect_report rep;
	struct plan_outcome first, o;
	struct host h;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	cfg.cooldown_ms = 60000;
	host_make(&h, NULL);
	report_make(&rep, fires);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct plan_memory mem;

		plan_memory_init(&mem);
		next(&set, &rep, &h, &mem, &cfg, 0, &first);
		assert_string_equal(first.prop.knob, "nginx.worker_connections");
		assert_string_equal(first.prop.to, "2048");
		assert_int_equal(plan_memory_record(&mem, &cfg, &first.prop, rows[i].result, 1000), 0);
		print_message("%s:\n", plan_result_name(rows[i].result));
		next(&set, &rep, &h, &mem, &cfg, 60999, &o);
		assert_false(o.proposed);
		assert_non_null(strstr(o.skipped[0].reason, "cooling down"));
		next(&set, &rep, &h, &mem, &cfg, 61000, &o);
		assert_int_equal(o.proposed, rows[i].after_cooldown);
		if (rows[i].why)
			assert_non_null(strstr(o.skipped[0].reason, rows[i].why));
		plan_memory_free(&mem);
	}

	/* An inconclusive step up does not block the direction: from a higher start the next value is new. */
	{
		struct plan_memory mem;

		plan_memory_init(&mem);
		assert_int_equal(plan_memory_record(&mem, &cfg, &first.prop, PLAN_INCONCLUSIVE, 1000), 0);
		h.v[7].value = "2048";
		assert_string_equal(h.v[7].knob, "nginx.worker_connections");
		next(&set, &rep, &h, &mem, &cfg, 61000, &o);
		assert_true(o.proposed);
		assert_string_equal(o.prop.to, "4096");
		plan_memory_free(&mem);
	}

	/* Bad records. */
	{
		struct plan_memory mem;
		struct plan_proposal bad = first.prop;

		plan_memory_init(&mem);
		assert_int_equal(plan_memory_record(&mem, &cfg, &first.prop, (enum plan_result)99, 0), -EINVAL);
		bad.knob[0] = '\0';
		assert_int_equal(plan_memory_record(&mem, &cfg, &bad, PLAN_HARM, 0), -EINVAL);
		bad = first.prop;
		memset(bad.knob, 'x', sizeof(bad.knob));
		assert_int_equal(plan_memory_record(&mem, &cfg, &bad, PLAN_HARM, 0), -EINVAL);
		assert_int_equal(mem.n, 0);
		/* Memory is bounded by the number of knobs a set may hold. */
		for (int i = 0; i < POLICY_KNOBS_MAX; i++) {
			snprintf(bad.knob, sizeof(bad.knob), "k%d", i);
			assert_int_equal(plan_memory_record(&mem, &cfg, &bad, PLAN_HARM, 0), 0);
		}
		snprintf(bad.knob, sizeof(bad.knob), "one.too.many");
		assert_int_equal(plan_memory_record(&mem, &cfg, &bad, PLAN_HARM, 0), -ENOSPC);
		plan_memory_free(&mem);
	}
	policy_set_free(&set);
}

/* A constraint refuses the step: the planner reports policy_check's reason and moves on. */
static void test_constraint(void **state)
{
	static const char text[] =
		"[knob a.cap]\nkind = sysctl\ntarget = net.core.somaxconn\ntype = int\nmin = 128\nmax = 65535\n"
		"step = x2\nobjective = http.p99_ms lower\n"
		"[knob a.queue]\nkind = listen_queue\ntarget = *\ntype = int\nmin = 128\nmax = 65535\nstep = x2\n"
		"constraint = <= a.cap\ntrigger = listen_overflows > 0.5\nobjective = tcp.listen_overflows lower\n"
		"[knob b.squeeze]\nkind = sysctl\ntarget = net.core.netdev_budget\ntype = int\nmin = 300\n"
		"max = 1200\nstep = +300\ntrigger = listen_overflows >= 0.5\napproval = auto\n"
		"objective = softnet.time_squeeze lower\n";
	static const struct kv vals[] = {{"a.cap", "1024", 0}, {"a.queue", "1024", 0}, {"b.squeeze", "300", 0},
					 {NULL, NULL, 0}};
	static const struct fire fires[FIRES_MAX] = {{"listen_overflows", 0.5}};
	struct policy_set set;
	struct plan_config cfg;
	struct detect_report rep;
	struct plan_outcome o;
	struct host h = {.n = 0};

	(void)state;
	load_text(&set, text);
	plan_config_default(&cfg);
	for (size_t i = 0; vals[i].knob; i++)
		h.v[h.n++] = vals[i];
	report_make(&rep, fires);
	/* At 0.5 only ">= 0.5" fires. */
	next(&set, &rep, &h, NULL, &cfg, 0, &o);
	assert_string_equal(o.prop.knob, "b.squeeze");
	assert_string_equal(o.prop.to, "600");
	assert_int_equal(o.nskipped, 0);
	/* Above it both fire; the auto knob ranks first, then the queue. */
	rep.r[DETECT_LISTEN_OVERFLOWS].value = 0.75;
	h.v[2].value = "1200";
	next(&set, &rep, &h, NULL, &cfg, 0, &o);
	assert_false(o.proposed);
	assert_int_equal(o.nskipped, 2);
	assert_string_equal(o.skipped[0].knob, "b.squeeze");
	assert_string_equal(o.skipped[1].knob, "a.queue");
	assert_non_null(strstr(o.skipped[1].reason, "refused by its policy"));
	policy_set_free(&set);
}

/* The knob values the detectors need. */
static void test_detect_env(void **state)
{
	static const struct kv none[] = {{"nginx.keepalive_requests", NULL, -EIO},
					 {"net.ipv4.ip_local_port_range", "60999 32768", 0}, {NULL, NULL, 0}};
	struct policy_set set;
	struct detect_env env;
	struct host h;

	(void)state;
	load_shipped(&set, false);
	host_make(&h, NULL);
	plan_detect_env(&set, value_of, &h, &env);
	assert_true(env.keepalive_requests == 1000);
	assert_true(env.port_range == 60999 - 32768 + 1);
	host_make(&h, none);
	plan_detect_env(&set, value_of, &h, &env);
	assert_true(isnan(env.keepalive_requests));
	assert_true(isnan(env.port_range));
	policy_set_free(&set);

	/* Every detector of the policy vocabulary is implemented by detect. */
	for (size_t i = 0; i < DETECT_COUNT; i++)
		assert_true(policy_detector_known(detect_name((enum detect_id)i)));
}

/* ---- planted misconfigurations, from frames --------------------------------------------------------------- */

struct plant {
	double squeeze, overflows, upstream_share;
};

/* Feed 60 ticks of a busy host with noisy counters; return the report. */
static void run_plant(const struct plant *pl, struct metric_registry *reg, struct detect *d,
		      const struct detect_env *env, struct detect_report *rep)
{
	struct frame fr;
	uint64_t s = 7;

	frame_init(&fr);
	for (int t = 0; t < 60; t++) {
		double u;

		frame_clear(&fr);
		fr.ts_ms = 1700000000000 + t * 1000;
		fr.dt_s = 1;
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		u = (double)(s >> 11) / 9007199254740992.0;
		assert_int_equal(frame_set(&fr, reg, "nginx.requests", 801 + floor(400 * u)), 0);
		assert_int_equal(frame_set(&fr, reg, "nginx.accepts", 40), 0);
		assert_int_equal(frame_set(&fr, reg, "nginx.handled", 40), 0);
		assert_int_equal(frame_set(&fr, reg, "http.requests", 800 + floor(400 * u)), 0);
		assert_int_equal(frame_set(&fr, reg, "http.request_ms_sum", 30000 * (0.5 + u)), 0);
		assert_int_equal(frame_set(&fr, reg, "http.upstream_ms_sum", 30000 * (0.5 + u) * pl->upstream_share),
				 0);
		/* Counters arrive in bursts: zero in some ticks, more in others. */
		assert_int_equal(frame_set(&fr, reg, "softnet.time_squeeze", floor(2 * pl->squeeze * u)), 0);
		assert_int_equal(frame_set(&fr, reg, "softnet.dropped", 0), 0);
		assert_int_equal(frame_set(&fr, reg, "tcp.listen_overflows", floor(2 * pl->overflows * u)), 0);
		assert_int_equal(frame_set(&fr, reg, "tcp.syncookies_sent", 0), 0);
		/* Every third tick the netstat probe fails. */
		if (t % 3 == 0)
			assert_int_equal(frame_set(&fr, reg, "tcp.listen_overflows", NAN), 0);
		assert_int_equal(detect_push(d, reg, &fr), 0);
	}
	frame_free(&fr);
	detect_evaluate(d, env, rep);
}

static void test_planted(void **state)
{
	static const struct {
		const char *what;
		struct plant plant;
		struct kv over[3];
		const char *knob, *from, *to, *reason;
	} rows[] = {
		{"tiny netdev_budget, time_squeeze rising", {6, 0, 0.1}, {{"net.core.netdev_budget", "64", 0}},
		 "net.core.netdev_budget", "64", "300", NULL},
		{"default netdev_budget, time_squeeze rising", {6, 0, 0.1}, {{NULL, NULL, 0}},
		 "net.core.netdev_budget", "300", "600", NULL},
		{"listen overflows", {0, 4, 0.1}, {{NULL, NULL, 0}}, "listen_queue", "511", "1022", NULL},
		{"listen overflows behind a slow upstream", {0, 4, 0.97}, {{NULL, NULL, 0}}, NULL, NULL, NULL,
		 "the bottleneck is the upstream"},
		{"a healthy host", {0, 0, 0.1}, {{NULL, NULL, 0}}, NULL, NULL, NULL, "no knob's trigger fires"},
	};
	struct policy_set set;
	struct plan_config cfg;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct detect_config dcfg;
		struct metric_registry *reg;
		struct detect_report rep;
		struct detect_env env;
		struct plan_outcome o;
		struct detect *d;
		struct host h;

		host_make(&h, rows[i].over);
		detect_config_default(&dcfg);
		assert_int_equal(metric_registry_new(&reg), 0);
		assert_int_equal(detect_new(&dcfg, &d), 0);
		plan_detect_env(&set, value_of, &h, &env);
		run_plant(&rows[i].plant, reg, d, &env, &rep);
		assert_int_equal(plan_next(&set, &rep, NULL, value_of, &h, NULL, &cfg, rep.ts_ms, &o), 0);
		print_message("%s: %s | %s\n", rows[i].what, rep.status, o.reason);
		if (rows[i].knob) {
			if (!o.proposed)
				fail_msg("%s: %s", rows[i].what, o.reason);
			assert_string_equal(o.prop.knob, rows[i].knob);
			assert_string_equal(o.prop.from, rows[i].from);
			assert_string_equal(o.prop.to, rows[i].to);
			assert_non_null(strstr(o.prop.evidence, o.prop.detector == DETECT_SOFTNET_SQUEEZE ?
							       "softnet.time_squeeze" : "tcp.listen_overflows"));
			print_message("    evidence: %s\n", o.prop.evidence);
		} else {
			assert_false(o.proposed);
			assert_non_null(strstr(o.reason, rows[i].reason));
		}
		detect_free(d);
		metric_registry_free(reg);
	}
	policy_set_free(&set);
}

/* Loadgen mode: a cost objective becomes saturated requests/s (p99 guards it), anything else the generator's p99;
 * the policy's objective and guardrails stay as guardrails. */
/* ---- causes before symptoms --------------------------------------------------------------------------------- */

struct ccase {
	const char *what;
	struct fire fires[FIRES_MAX];
	struct kv over[6];
	struct plan_cause causes[3]; /* up to the first with an empty id */
	bool fresh;
	bool actionable;
	const char *knob, *from, *to; /* knob NULL: no proposal */
	const char *cause;            /* the proposal's cause, "" for a symptom's */
	const char *reason;           /* a substring of the outcome's reason (NULL: not checked) */
	bool wants;                   /* outcome.wants_causes */
};

#define WP_CAUSE {"nginx.worker_processes", "nginx.worker_processes", "2", PLAN_CAUSE_DEMAND, 1, \
		  "worker_processes 1 at nginx.conf:2; 2 CPUs online: nginx uses 1 of 2 cores", false, DETECT_COUNT, 0.0, 0}
/* What another host of the pool kept for listen_overflows (core/pool.c): a cause only while the symptom fires. */
#define POOL_CAUSE {"pool.proven", "listen_queue", "2044", PLAN_CAUSE_DEMAND, 2, \
		    "kept on web-3 40 s ago (16 -> 2044, for listen_overflows): overflows fell to 0", true, \
		    DETECT_LISTEN_OVERFLOWS, 6.5, 4}
#define WC_CAUSE(to) {"nginx.worker_connections", "nginx.worker_connections", to, PLAN_CAUSE_LIMIT, 1, \
		      "worker_connections 768 at nginx.conf:7 x 2 workers = 1536 connections; up to 1406 active", false, \
		      DETECT_COUNT, 0.0, 0}

static const struct ccase ccases[] = {
	{"a cause with nothing firing: proposed on its finding (worker_processes 1 on 2 CPUs)",
	 {{NULL, 0}}, {{"nginx.worker_processes", "1", 0}, {NULL, NULL, 0}}, {WP_CAUSE}, true, true,
	 "nginx.worker_processes", "1", "2", "nginx.worker_processes", "the cause nginx.worker_processes", false},
	{"the cause before the symptom (Debian's worker_connections 768 under 2000 clients): not the listen queue",
	 {{"listen_overflows", 170}}, {{"nginx.worker_connections", "768", 0}, {NULL, NULL, 0}}, {WC_CAUSE("1536")},
	 true, true, "nginx.worker_connections", "768", "1536", "nginx.worker_connections", NULL, false},
	{"a cause's value beyond the largest step goes as far as the step allows (x4 from the bound 1024)",
	 {{NULL, 0}}, {{"nginx.worker_connections", "768", 0}, {NULL, NULL, 0}}, {WC_CAUSE("8192")}, true, true,
	 "nginx.worker_connections", "768", "4096", "nginx.worker_connections", NULL, false},
	{"demand before limits, whatever the order given",
	 {{NULL, 0}}, {{"nginx.worker_connections", "768", 0}, {"nginx.worker_processes", "1", 0}, {NULL, NULL, 0}},
	 {WC_CAUSE("1536"), WP_CAUSE}, true, true, "nginx.worker_processes", "1", "2", "nginx.worker_processes", NULL,
	 false},
	{"a cause whose knob has no policy is passed over; a one-step cause (\"\") moves by the knob's rule",
	 {{"port_exhaustion", 20}}, {{NULL, NULL, 0}},
	 {{"nginx.upstream_keepalive", "nginx.no_such_knob", "64", PLAN_CAUSE_DEMAND, 1, "proxied without keepalive", false,
	   DETECT_COUNT, 0.0, 0},
	  {"kernel.ip_local_port_range", "net.ipv4.ip_local_port_range", "", PLAN_CAUSE_LIMIT, 2, "ports run out", false,
	   DETECT_COUNT, 0.0, 0}},
	 true, true, "net.ipv4.ip_local_port_range", "32768 60999", "28672 65095", "kernel.ip_local_port_range", NULL,
	 false},
	{"the pool's proven value in the tick its symptom starts: before the symptom's own knob (its value: x4 allowed)",
	 {{"listen_overflows", 170}}, {{NULL, NULL, 0}}, {POOL_CAUSE}, true, true, "listen_queue", "511", "2044",
	 "pool.proven", "the cause pool.proven", false},
	{"the pool's proven value while its symptom does not fire: no cause at all",
	 {{NULL, 0}}, {{NULL, NULL, 0}}, {POOL_CAUSE}, true, true, NULL, NULL, NULL, NULL, "no knob's trigger fires",
	 false},
	{"a cause already fixed: the symptom's knob",
	 {{"listen_overflows", 5}}, {{"nginx.worker_processes", "2", 0}, {NULL, NULL, 0}}, {WP_CAUSE}, true, true,
	 "listen_queue", "511", "1022", "", NULL, false},
	{"a symptom waits while the causes have not been checked under this load",
	 {{"listen_overflows", 170}}, {{NULL, NULL, 0}}, {{"", "", "", PLAN_CAUSE_DEMAND, 0, "", false, DETECT_COUNT, 0.0, 0}}, false, true, NULL, NULL, NULL, NULL,
	 "the causes are checked under this load first", true},
	{"so does a cause found before the load (its value may not fit it)",
	 {{"listen_overflows", 170}}, {{"nginx.worker_processes", "1", 0}, {NULL, NULL, 0}}, {WP_CAUSE}, false, true,
	 NULL, NULL, NULL, NULL, "the causes are checked under this load first", true},
	{"nothing when the report is not actionable (nginx idle): no change would be measured",
	 {{NULL, 0}}, {{"nginx.worker_processes", "1", 0}, {NULL, NULL, 0}}, {WP_CAUSE}, true, false, NULL, NULL, NULL,
	 NULL, "no proposal: busy", false},
};

static void test_causes(void **state)
{
	struct policy_set set;
	struct detect_report rep;
	struct plan_config cfg;
	struct plan_outcome o;
	struct host h;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	for (size_t i = 0; i < sizeof(ccases) / sizeof(ccases[0]); i++) {
		const struct ccase *c = &ccases[i];
		struct plan_causes causes = {c->causes, 0, c->fresh};

		while (causes.n < 3 && c->causes[causes.n].id[0])
			causes.n++;
		report_make(&rep, c->fires);
		rep.actionable = c->actionable;
		host_make(&h, c->over);
		assert_int_equal(plan_next(&set, &rep, &causes, value_of, &h, NULL, &cfg, 1000, &o), 0);
		print_message("%s: %s\n", c->what, o.reason);
		assert_int_equal(o.wants_causes, c->wants);
		if (!c->knob) {
			assert_false(o.proposed);
		} else {
			assert_true(o.proposed);
			assert_string_equal(o.prop.knob, c->knob);
			assert_string_equal(o.prop.from, c->from);
			assert_string_equal(o.prop.to, c->to);
			assert_string_equal(o.prop.cause, c->cause);
			if (c->cause[0]) {
				/* the finding's evidence, with its figures */
				assert_int_equal(o.prop.detector, DETECT_COUNT);
				for (size_t k = 0; k < causes.n; k++)
					if (strcmp(c->causes[k].id, c->cause) == 0)
						assert_non_null(strstr(o.prop.evidence, c->causes[k].evidence));
				assert_int_equal(strncmp(o.prop.evidence, c->cause, strlen(c->cause)), 0);
				assert_true(o.prop.trial.nguardrails > 0);
				/* the pool's canary's effect goes with it as the trial's prior; no other cause has one */
				for (size_t k = 0; k < causes.n; k++)
					if (strcmp(c->causes[k].id, c->cause) == 0) {
						assert_int_equal(o.prop.trial.prior_pairs, c->causes[k].prior_pairs);
						assert_true(o.prop.trial.prior_effect == c->causes[k].prior_effect);
					}
			}
		}
		if (c->reason)
			assert_non_null(strstr(o.reason, c->reason));
	}
	policy_set_free(&set);
}

/* A cause reverted is not proposed again while conditions stay: the symptom's knob gets its turn. */
static void test_cause_memory(void **state)
{
	static const struct fire fires[FIRES_MAX] = {{"listen_overflows", 170}};
	static const struct kv over[] = {{"nginx.worker_connections", "768", 0}, {NULL, NULL, 0}};
	static const struct plan_cause wc[] = {WC_CAUSE("1536")};
	struct plan_causes causes = {wc, 1, true};
	struct policy_set set;
	struct detect_report rep;
	struct plan_config cfg;
	struct plan_memory mem;
	struct plan_outcome o;
	struct host h;

	(void)state;
	load_shipped(&set, false);
	plan_config_default(&cfg);
	plan_memory_init(&mem);
	report_make(&rep, fires);
	host_make(&h, over);
	assert_int_equal(plan_next(&set, &rep, &causes, value_of, &h, &mem, &cfg, 1000, &o), 0);
	assert_string_equal(o.prop.knob, "nginx.worker_connections");
	assert_int_equal(plan_memory_record(&mem, &cfg, &o.prop, PLAN_INCONCLUSIVE, 100000), 0);
	/* After its cooldown, still reverted and nothing changed: the listen queue. */
	assert_int_equal(plan_next(&set, &rep, &causes, value_of, &h, &mem, &cfg, 100000 + cfg.cooldown_ms + 1, &o), 0);
	assert_true(o.proposed);
	assert_string_equal(o.prop.knob, "listen_queue");
	assert_string_equal(o.prop.cause, "");
	assert_string_equal(o.skipped[0].knob, "nginx.worker_connections");
	assert_non_null(strstr(o.skipped[0].reason, "was reverted"));
	plan_memory_free(&mem);
	policy_set_free(&set);
}

static void test_loadgen_trial(void **state)
{
	struct plan_trial t;

	(void)state;
	memset(&t, 0, sizeof(t));
	snprintf(t.objective.metric, sizeof(t.objective.metric), "softnet.time_squeeze");
	t.objective.dir = POLICY_LOWER_IS_BETTER;
	snprintf(t.guardrails[0].metric, sizeof(t.guardrails[0].metric), "http.p99_ms");
	t.nguardrails = 1;
	plan_loadgen_trial(&t);
	assert_string_equal(t.objective.metric, "loadgen.rps");
	assert_int_equal(t.objective.dir, POLICY_HIGHER_IS_BETTER);
	assert_int_equal(t.nguardrails, 3);
	assert_string_equal(t.guardrails[0].metric, "loadgen.p99_ms");
	assert_string_equal(t.guardrails[1].metric, "softnet.time_squeeze");
	assert_string_equal(t.guardrails[2].metric, "http.p99_ms");

	memset(&t, 0, sizeof(t));
	snprintf(t.objective.metric, sizeof(t.objective.metric), "http.p99_ms");
	t.nguardrails = POLICY_GUARDRAILS_MAX;
	for (size_t i = 0; i < POLICY_GUARDRAILS_MAX; i++)
		snprintf(t.guardrails[i].metric, sizeof(t.guardrails[i].metric), "g%zu", i);
	plan_loadgen_trial(&t);
	assert_string_equal(t.objective.metric, "loadgen.p99_ms");
	assert_int_equal(t.objective.dir, POLICY_LOWER_IS_BETTER);
	assert_int_equal(t.nguardrails, POLICY_GUARDRAILS_MAX); /* the last guardrail did not fit */
	assert_string_equal(t.guardrails[0].metric, "http.p99_ms");
	assert_string_equal(t.guardrails[POLICY_GUARDRAILS_MAX - 1].metric, "g6");

	/* A loss objective stays: wrk's p99 leaves out the requests that timed out. */
	memset(&t, 0, sizeof(t));
	snprintf(t.objective.metric, sizeof(t.objective.metric), "tcp.listen_overflows");
	snprintf(t.guardrails[0].metric, sizeof(t.guardrails[0].metric), "http.5xx_rate");
	t.nguardrails = 1;
	plan_loadgen_trial(&t);
	assert_string_equal(t.objective.metric, "tcp.listen_overflows");
	assert_int_equal(t.nguardrails, 2);
	assert_string_equal(t.guardrails[0].metric, "loadgen.p99_ms");
	assert_string_equal(t.guardrails[1].metric, "http.5xx_rate");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_placement),
		cmocka_unit_test(test_exhausted_before_the_window),
		cmocka_unit_test(test_proposal_contents),
		cmocka_unit_test(test_operator_per_interface),
		cmocka_unit_test(test_not_actionable),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_memory_harm),
		cmocka_unit_test(test_memory_results),
		cmocka_unit_test(test_follow_through),
		cmocka_unit_test(test_constraint),
		cmocka_unit_test(test_detect_env),
		cmocka_unit_test(test_planted),
		cmocka_unit_test(test_loadgen_trial),
		cmocka_unit_test(test_causes),
		cmocka_unit_test(test_cause_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
