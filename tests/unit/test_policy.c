/*
 * Unit tests for policy: building a set entry by entry, whole-set validation with FILE:LINE errors, and
 * policy_check (bounds, steps, constraints both ways, forbidden targets). The policy texts here are split into
 * entries by a few lines of test code (no INI library: core never sees one); test_policy_load runs the real files.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

/* Feed TEXT ("[section]" and "key = value" lines) to SET as file t.policy, then validate. */
static int build(struct policy_set *set, const char *text, char *err, size_t errlen)
{
	char section[512] = "", line[512];
	const char *p = text;
	int lineno = 0, r;

	policy_set_init(set);
	while (*p) {
		size_t len = strcspn(p, "\n");
		char *eq, *key, *value, *end;

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		p += len + (p[len] == '\n');
		lineno++;
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if (line[0] == '[') {
			end = strchr(line, ']');
			assert_non_null(end);
			*end = '\0';
			snprintf(section, sizeof(section), "%s", line + 1);
			policy_set_section(set, "t.policy", lineno, section);
			continue;
		}
		eq = strchr(line, '=');
		assert_non_null(eq);
		*eq = '\0';
		key = line;
		value = eq + 1;
		while (*value == ' ')
			value++;
		for (end = eq; end > key && end[-1] == ' ';)
			*--end = '\0';
		r = policy_set_add(set, "t.policy", lineno, section, key, value, err, errlen);
		if (r < 0)
			return r;
	}
	return policy_set_validate(set, policy_metric_known, NULL, err, errlen);
}

#define SOMAXCONN                                                                                                     \
	"[knob net.core.somaxconn]\n"                                                                                 \
	"kind = sysctl\n"                                                                                             \
	"target = net.core.somaxconn\n"                                                                               \
	"type = int\n"                                                                                                \
	"min = 4096\n"                                                                                                \
	"max = 65535\n"                                                                                               \
	"step = x2\n"                                                                                                 \
	"max_step = x4\n"                                                                                             \
	"trigger = listen_overflows > 0\n"                                                                            \
	"objective = tcp.listen_overflows lower\n"                                                                    \
	"guardrails = http.5xx_rate lower, http.p99_ms lower\n"                                                       \
	"settle = 30s\n"                                                                                              \
	"approval = auto\n"                                                                                           \
	"enabled = yes\n"

/* A minimal valid int knob named a, with room for one more key line at line 8. */
#define KNOB_A(extra)                                                                                                 \
	"[knob a]\n"                                                                                                  \
	"kind = sysctl\n"                                                                                             \
	"target = net.core.a\n"                                                                                       \
	"type = int\n"                                                                                                \
	"min = 10\n"                                                                                                  \
	"max = 1000\n"                                                                                                \
	"objective = http.p99_ms lower\n" extra                                                                       \
	"step = +10\n"

static void test_good_knob(void **state)
{
	struct policy_set set;
	const struct knob_policy *p;
	char err[512] = "";

	(void)state;
	assert_int_equal(build(&set, SOMAXCONN, err, sizeof(err)), 0);
	assert_int_equal(set.n, 1);
	p = policy_find(&set, "net.core.somaxconn");
	assert_non_null(p);
	assert_null(policy_find(&set, "net.core.somaxconn2"));
	assert_string_equal(p->file, "t.policy");
	assert_int_equal(p->line, 2);
	assert_int_equal(p->kind, POLICY_SYSCTL);
	assert_string_equal(p->kind_name, "sysctl");
	assert_string_equal(p->target, "net.core.somaxconn");
	assert_int_equal(p->type, KNOB_T_INT);
	assert_int_equal(p->nelem, 1);
	assert_int_equal(p->min[0], 4096);
	assert_int_equal(p->max[0], 65535);
	assert_true(p->step_mul);
	assert_true(p->step == 2.0);
	assert_true(p->max_step == 4.0);
	assert_string_equal(p->trigger, "listen_overflows");
	assert_int_equal(p->trigger_op, POLICY_GT);
	assert_true(p->trigger_threshold == 0.0);
	assert_string_equal(p->objective.metric, "tcp.listen_overflows");
	assert_int_equal(p->objective.dir, POLICY_LOWER_IS_BETTER);
	assert_int_equal(p->nguardrails, 2);
	assert_string_equal(p->guardrails[1].metric, "http.p99_ms");
	assert_int_equal(p->settle_ms, 30000);
	assert_false(p->approval_required);
	assert_true(p->enabled);
	/* Validating again changes nothing (the engine may re-validate a set it holds). */
	assert_int_equal(policy_set_validate(&set, policy_metric_known, NULL, err, sizeof(err)), 0);
	assert_true(p->max_step == 4.0);
	policy_set_free(&set);
	assert_int_equal(set.n, 0);
	assert_null(set.knobs);
}

static void test_defaults(void **state)
{
	struct policy_set set;
	const struct knob_policy *p;
	char err[512] = "";

	(void)state;
	assert_int_equal(build(&set, KNOB_A(""), err, sizeof(err)), 0);
	p = policy_find(&set, "a");
	assert_non_null(p);
	assert_true(p->approval_required);             /* approval defaults to required */
	assert_true(p->enabled);
	assert_int_equal(p->settle_ms, POLICY_SETTLE_DEFAULT_MS);
	assert_false(p->step_mul);
	assert_true(p->max_step == 10.0);              /* max_step defaults to one step */
	assert_string_equal(p->trigger, "");           /* no trigger: operators propose */
	policy_set_free(&set);
}

struct bad_case {
	const char *text;
	const char *want; /* a substring of the error, with its FILE:LINE */
};

static const struct bad_case bad[] = {
	/* structure */
	{"kind = sysctl\n", "t.policy:1: key 'kind' outside any section"},
	{"[knobs a]\nkind = sysctl\n", "t.policy:2: unknown section [knobs a]"},
	{"[knob Net]\nkind = sysctl\n", "t.policy:2: [knob Net]: a knob name"},
	{"[knob a b]\nkind = sysctl\n", "t.policy:2: [knob a b]"},
	{KNOB_A("colour = blue\n"), "t.policy:8: knob a: unknown key 'colour'"},
	{KNOB_A("kind = sysctl\n"), "t.policy:8: knob a: kind given twice (first at line 2)"},
	{KNOB_A("") "[knob a]\nkind = sysctl\n", "t.policy:10: knob a is already defined at t.policy:2"},
	{KNOB_A("") "[forbid]\nsysctls = net.x.y\n[knob a]\ntype = int\n",
	 "t.policy:12: knob a is already defined at t.policy:2"},
	{"[forbid]\nsysctl = net.x.y\n", "t.policy:2: unknown key 'sysctl' in [forbid]"},
	{"[forbid]\nsysctls = net.x.y,, net.z\n", "t.policy:2: sysctls: empty item"},
	{"[forbid]\nsysctls = /proc/sys/x\n", "t.policy:2: sysctls: '/proc/sys/x' is not a sysctl name"},
	/* every key's parse errors */
	{KNOB_A("kind = magic\n"), "t.policy:8: knob a: kind given twice"},
	{"[knob a]\nkind = magic\n", "t.policy:2: knob a: kind: not one of"},
	{"[knob a]\ntype = float\n", "t.policy:2: knob a: type: not one of"},
	{"[knob a]\ntype = intvec\n", "t.policy:2: knob a: type: intvec needs its element count"},
	{"[knob a]\ntype = intvec 9\n", "t.policy:2: knob a: type: intvec needs its element count"},
	{"[knob a]\ntype = intvec 1\n", "t.policy:2: knob a: type: intvec needs its element count"},
	{"[knob a]\ntype = int 3\n", "t.policy:2: knob a: type: only intvec takes a count"},
	{"[knob a]\ncontext = server\n", "t.policy:2: knob a: context: not one of main, events, http"},
	{"[knob a]\nmin = ten\n", "t.policy:2: knob a: min: number 1 is not a decimal integer"},
	{"[knob a]\nmax = 1 2 3 4 5 6 7 8 9\n", "t.policy:2: knob a: max: more than 8 numbers"},
	{"[knob a]\nmax = 99999999999999999999\n", "t.policy:2: knob a: max: number 1 is not"},
	{"[knob a]\nmin =\n", "t.policy:2: knob a: min: no number"},
	{"[knob a]\nvalues = auto, Auto\n", "t.policy:2: knob a: values: 'Auto' is not a word"},
	{"[knob a]\nvalues = auto, auto\n", "t.policy:2: knob a: values: 'auto' is listed twice"},
	{"[knob a]\nvalues = a, b, c, d, e, f, g, h, i\n", "t.policy:2: knob a: values: more than 8 values"},
	{"[knob a]\nstep = *2\n", "t.policy:2: knob a: step: not a factor (x2) or an addend (+1024)"},
	{"[knob a]\nstep = x1\n", "t.policy:2: knob a: step: a factor must be"},
	{"[knob a]\nstep = x17\n", "t.policy:2: knob a: step: a factor must be"},
	{"[knob a]\nstep = xnan\n", "t.policy:2: knob a: step: a factor must be"},
	{"[knob a]\nstep = +0\n", "t.policy:2: knob a: step: an addend must be"},
	{"[knob a]\nstep = +-5\n", "t.policy:2: knob a: step: an addend must be"},
	{"[knob a]\nmax_step = 4\n", "t.policy:2: knob a: max_step: not a factor"},
	{"[knob a]\ntrigger = listen_overflows\n", "t.policy:2: knob a: trigger: not 'DETECTOR OP NUMBER'"},
	{"[knob a]\ntrigger = listen_overflows >> 0\n", "t.policy:2: knob a: trigger: not 'DETECTOR OP NUMBER'"},
	{"[knob a]\ntrigger = listen_overflows > 1e3\n", "t.policy:2: knob a: trigger: not 'DETECTOR OP NUMBER'"},
	{"[knob a]\nobjective = http.p99_ms\n", "t.policy:2: knob a: objective: 'http.p99_ms' is not 'METRIC lower'"},
	{"[knob a]\nobjective = http.p99_ms better\n", "t.policy:2: knob a: objective: 'http.p99_ms better': the "
						   "direction"},
	{"[knob a]\nguardrails = a lower,,b lower\n", "t.policy:2: knob a: guardrails: empty item"},
	{"[knob a]\nguardrails = a lower, b lower, c lower, d lower, e lower, f lower, g lower, h lower, i lower\n",
	 "t.policy:2: knob a: guardrails: more than 8 guardrails"},
	{"[knob a]\nsettle = 30x\n", "t.policy:2: knob a: settle: not a duration"},
	{"[knob a]\nsettle = 500ms\n", "t.policy:2: knob a: settle: not a duration from 1s to 1h"},
	{"[knob a]\nsettle = 2h\n", "t.policy:2: knob a: settle: not a duration from 1s to 1h"},
	{"[knob a]\nsettle = 99999999999999s\n", "t.policy:2: knob a: settle: not a duration"},
	{"[knob a]\napproval = maybe\n", "t.policy:2: knob a: approval: not required or auto"},
	{"[knob a]\nenabled = perhaps\n", "t.policy:2: knob a: enabled: not yes or no"},
	{"[knob a]\nconstraint = somaxconn\n", "t.policy:2: knob a: constraint: 'somaxconn' is not '[I] OP KNOB[J]'"},
	{"[knob a]\nconstraint = <= b[x]\n", "t.policy:2: knob a: constraint: '<= b[x]' is not"},
	{"[knob a]\nconstraint = [9] <= b\n", "t.policy:2: knob a: constraint: '[9] <= b' is not"},
	{"[knob a]\nconstraint = <= b junk\n", "t.policy:2: knob a: constraint: '<= b junk' is not"},
	{"[knob a]\nconstraint = [0] < [0]\n", "t.policy:2: knob a: constraint: '[0] < [0]': a knob can only"},
	{"[knob a]\nconstraint = <= a\n", "t.policy:2: knob a: constraint: '<= a': a knob can only"},
	{"[knob a]\nconstraint = <= b, <= c, <= d, <= e, <= f\n", "t.policy:2: knob a: constraint: more than 4"},
	{"[knob a]\ntarget =\n", "t.policy:2: knob a: target: empty"},
	/* validation: required keys (reported at the section's first key) */
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = int\nmin = 1\nmax = 2\nstep = +1\n",
	 "t.policy:2: knob a: missing key objective"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\nobjective = http.p99_ms lower\n",
	 "t.policy:2: knob a: missing key type"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = int\nmax = 2\nstep = +1\nobjective = http.p99_ms lower\n",
	 "t.policy:2: knob a: missing key min"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = int\nmin = 1\nmax = 2\nobjective = http.p99_ms lower\n",
	 "t.policy:2: knob a: missing key step"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = enum\nobjective = http.p99_ms lower\n",
	 "t.policy:2: knob a: missing key values"},
	/* validation: types, bounds, caps, steps */
	{KNOB_A("values = x, y\n"), "t.policy:8: knob a: only type enum takes values"},
	{KNOB_A("context = main\n"), "t.policy:8: knob a: only nginx_directive takes a context"},
	{"[knob a]\nkind = irq_affinity\ntarget = *\ntype = int\nobjective = http.p99_ms lower\n",
	 "t.policy:4: knob a: kind irq_affinity does not take type int"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = onoff\nmin = 0\nobjective = http.p99_ms lower\n",
	 "t.policy:5: knob a: type onoff takes no min or max"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = onoff\nstep = +1\nobjective = http.p99_ms lower\n",
	 "t.policy:5: knob a: type onoff takes no step"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = int\nmin = 20\nmax = 10\nstep = +1\n"
	 "objective = http.p99_ms lower\n", "t.policy:6: knob a: max 10 is below min 20"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = int\nmin = 1 2\nmax = 10\nstep = +1\n"
	 "objective = http.p99_ms lower\n", "t.policy:5: knob a: min has 2 numbers, type int needs 1"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = intvec 3\nmin = 1 2 3\nmax = 10 20\nstep = +1\n"
	 "objective = http.p99_ms lower\n", "t.policy:6: knob a: max has 2 numbers, type intvec needs 3"},
	{"[knob a]\nkind = irq_affinity\ntarget = *\ntype = cpumap\nmax = 1024\nobjective = http.p99_ms lower\n",
	 "t.policy:5: knob a: CPU numbers run from 0 to 1023"},
	{"[knob s]\nkind = sched_slice\ntarget = auto\ntype = int\nmin = 500000\nmax = 3000000\nstep = +1\n"
	 "objective = http.p99_ms lower\n", "t.policy:6: knob s: max 3000000 is above the hard limit 2000000 for "
					   "sched_slice"},
	{"[knob s]\nkind = sched_slice\ntarget = auto\ntype = int\nmin = 50000\nmax = 300000\nstep = +1\n"
	 "objective = http.p99_ms lower\n", "t.policy:5: knob s: min 50000 is below the hard limit 100000"},
	{"[knob b]\nkind = sysctl\ntarget = net.core.netdev_budget_usecs\ntype = int\nmin = 2000\nmax = 20000\n"
	 "step = +1\nobjective = http.p99_ms lower\n", "t.policy:6: knob b: max 20000 is above the hard limit 8000 "
						      "for net.core.netdev_budget_usecs"},
	{"[knob r]\nkind = sysctl\ntarget = net.ipv4.tcp_rmem\ntype = intvec 3\nmin = 4096 4096 4096\n"
	 "max = 4096 4096 1073741824\nstep = x2\nobjective = http.p99_ms lower\n",
	 "t.policy:6: knob r: max 1073741824 is above the hard limit"},
	{"[knob u]\nkind = upstream_keepalive\ntarget = *\ntype = int\nmin = 0\nmax = 8192\nstep = +64\n"
	 "objective = http.5xx_rate lower\n", "t.policy:6: knob u: max 8192 is above the hard limit 4096 for "
					     "upstream_keepalive"},
	{"[knob u]\nkind = upstream_keepalive\ntarget = app\ntype = int\nmin = 0\nmax = 64\nstep = +64\n"
	 "objective = http.5xx_rate lower\n", "t.policy:3: knob u: target must be *"},
	{"[knob u]\nkind = upstream_keepalive\ntarget = *\ntype = onoff\nobjective = http.5xx_rate lower\n",
	 "t.policy:4: knob u: kind upstream_keepalive does not take type onoff"},
	{"[knob u]\nkind = upstream_keepalive\ntarget = *\ntype = int\nmin = 0\nmax = 64\nstep = +64\n"
	 "objective = http.5xx_rate lower\n[knob v]\nkind = upstream_keepalive\ntarget = *\ntype = int\nmin = 0\n"
	 "max = 64\nstep = +64\nobjective = http.5xx_rate lower\n", "t.policy:11: knob v: writes what knob u (t.policy:2) writes"},
	{"[knob g]\nkind = nginx_directive\ntarget = gzip_comp_level\ncontext = http\ntype = int\nmin = 1\nmax = 10\n"
	 "step = +1\nobjective = http.p99_ms lower\n", "t.policy:7: knob g: max 10 is above the hard limit 9 for "
						      "gzip_comp_level"},
	{"[knob g]\nkind = nginx_directive\ntarget = gzip_comp_level\ncontext = server\ntype = int\nmin = 1\n"
	 "max = 9\nstep = +1\nobjective = http.p99_ms lower\n", "t.policy:4: knob g: context: not one of main"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = int\nmin = -5\nmax = 10\nstep = x2\n"
	 "objective = http.p99_ms lower\n", "t.policy:7: knob a: a factor step needs min >= 0"},
	{KNOB_A("max_step = x4\n"), "t.policy:8: knob a: max_step must be a difference (+4096) like step"},
	{KNOB_A("max_step = +5\n"), "t.policy:8: knob a: max_step is smaller than step"},
	/* validation: targets */
	{"[knob a]\nkind = sysctl\ntarget = net/core/a\ntype = onoff\nobjective = http.p99_ms lower\n",
	 "t.policy:3: knob a: target 'net/core/a' is not a sysctl name"},
	{"[knob a]\nkind = sysctl\ntarget = net..core\ntype = onoff\nobjective = http.p99_ms lower\n",
	 "t.policy:3: knob a: target 'net..core' is not a sysctl name"},
	{"[knob a]\nkind = sysctl\ntarget = kernel.core_pattern\ntype = enum\nvalues = core\n"
	 "objective = http.p99_ms lower\n", "t.policy:3: knob a: target 'kernel.core_pattern' is not a sysctl name"},
	{"[knob a]\nkind = sysctl\ntarget = fs.file-max-evil\ntype = onoff\nobjective = http.p99_ms lower\n",
	 "t.policy:3: knob a: target 'fs.file-max-evil' is not"},
	{"[knob a]\nkind = irq_affinity\ntarget = ../../etc\ntype = cpumap\nobjective = http.p99_ms lower\n",
	 "t.policy:3: knob a: target '../../etc' is not an interface name or glob"},
	{"[knob a]\nkind = rps\ntarget = eth0/queues\ntype = cpumap\nobjective = http.p99_ms lower\n",
	 "t.policy:3: knob a: target 'eth0/queues' is not an interface"},
	{"[knob a]\nkind = sched_slice\ntarget = kernel.sched_x\ntype = int\nmin = 500000\nmax = 600000\nstep = +1\n"
	 "objective = http.p99_ms lower\n", "t.policy:3: knob a: target must be auto"},
	{"[knob a]\nkind = listen_queue\ntarget = http\ntype = int\nmin = 511\nmax = 600\nstep = +1\n"
	 "objective = http.p99_ms lower\n", "t.policy:3: knob a: target must be * or a TCP port"},
	{"[knob a]\nkind = listen_queue\ntarget = 70000\ntype = int\nmin = 511\nmax = 600\nstep = +1\n"
	 "objective = http.p99_ms lower\n", "t.policy:3: knob a: target must be * or a TCP port"},
	/* rcvbuf= is not a knob: a reload cannot undo it (the socket keeps the buffer, locked) */
	{"[knob a]\nkind = listen_param\ntarget = rcvbuf\ntype = onoff\nobjective = http.p99_ms lower\n",
	 "t.policy:3: knob a: target must be reuseport or deferred"},
	{"[knob a]\nkind = nginx_directive\ntarget = load_module\ncontext = main\ntype = onoff\n"
	 "objective = http.p99_ms lower\n", "t.policy:3: knob a: 'load_module' is not an nginx directive"},
	{"[knob a]\nkind = nginx_directive\ntarget = multi_accept\ntype = onoff\nobjective = http.p99_ms lower\n",
	 "t.policy:2: knob a: missing key context"},
	{"[knob a]\nkind = nginx_directive\ntarget = multi_accept\ncontext = http\ntype = onoff\n"
	 "objective = http.p99_ms lower\n", "t.policy:4: knob a: multi_accept belongs in the events context, not "
					   "http"},
	{"[knob a]\nkind = nginx_directive\ntarget = multi_accept\ncontext = events\ntype = int\nmin = 0\nmax = 1\n"
	 "step = +1\nobjective = http.p99_ms lower\n", "t.policy:5: knob a: multi_accept takes type onoff"},
	{"[knob a]\nkind = nginx_directive\ntarget = worker_cpu_affinity\ncontext = main\ntype = onoff\n"
	 "objective = http.p99_ms lower\n", "t.policy:5: knob a: worker_cpu_affinity takes type cpulist"},
	{"[knob a]\nkind = nginx_directive\ntarget = worker_processes\ncontext = main\ntype = enum\nvalues = auto\n"
	 "objective = http.p99_ms lower\n", "t.policy:5: knob a: kind nginx_directive does not take type enum"},
	{"[knob " "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghi" "]\nkind = rps\ntarget = *\ntype = cpumap\n"
	 "objective = http.p99_ms lower\n", "t.policy:2: knob abcdefghijabcdefghijabcdefghijabcdefghijabcdefghi: "
					   "names of per-interface knobs"},
	/* validation: triggers and metrics */
	{KNOB_A("trigger = full_moon > 0\n"), "t.policy:8: knob a: trigger: unknown detector 'full_moon'"},
	{KNOB_A("guardrails = http.p99_ms lower, http.p100_ms lower\n"),
	 "t.policy:8: knob a: guardrails: unknown metric 'http.p100_ms'"},
	{"[knob a]\nkind = sysctl\ntarget = net.core.a\ntype = onoff\nobjective = tcp.* lower\n",
	 "t.policy:5: knob a: objective: unknown metric 'tcp.*'"},
	/* validation: forbidden and shared targets */
	{"[knob a]\nkind = sysctl\ntarget = net.ipv4.tcp_tw_recycle\ntype = onoff\nobjective = http.p99_ms lower\n",
	 "t.policy:3: knob a: net.ipv4.tcp_tw_recycle is forbidden"},
	{"[forbid]\nsysctls = net.core.b, net.core.a\n" KNOB_A(""),
	 "t.policy:5: knob a: net.core.a is forbidden"},
	{KNOB_A("") "[knob b]\nkind = sysctl\ntarget = net.core.a\ntype = onoff\nobjective = http.p99_ms lower\n",
	 "t.policy:11: knob b: writes what knob a (t.policy:2) writes"},
	{"[knob r1]\nkind = rps\ntarget = eth*\ntype = cpumap\nobjective = http.p99_ms lower\n"
	 "[knob r2]\nkind = rps\ntarget = *\ntype = cpumap\nobjective = http.p99_ms lower\n",
	 "t.policy:8: knob r2: writes what knob r1"},
	{"[knob s1]\nkind = sched_slice\ntarget = auto\ntype = int\nmin = 500000\nmax = 600000\nstep = +1\n"
	 "objective = http.p99_ms lower\n"
	 "[knob s2]\nkind = sched_slice\ntarget = auto\ntype = int\nmin = 500000\nmax = 600000\nstep = +1\n"
	 "objective = http.p99_ms lower\n", "t.policy:11: knob s2: writes what knob s1"},
	/* validation: constraints */
	{KNOB_A("constraint = <= nosuch\n"), "t.policy:8: knob a: constraint names unknown knob nosuch"},
	{KNOB_A("constraint = [0] <= b\n") "[knob b]\nkind = sysctl\ntarget = net.core.b\ntype = int\nmin = 1\n"
	 "max = 2\nstep = +1\nobjective = http.p99_ms lower\n", "t.policy:8: knob a: constraint: this knob is not a "
							      "vector"},
	{KNOB_A("constraint = <= v\n") "[knob v]\nkind = sysctl\ntarget = net.core.v\ntype = intvec 2\nmin = 1 1\n"
	 "max = 2 2\nstep = +1\nobjective = http.p99_ms lower\n", "t.policy:8: knob a: constraint: v is a vector"},
	{KNOB_A("constraint = <= v[2]\n") "[knob v]\nkind = sysctl\ntarget = net.core.v\ntype = intvec 2\n"
	 "min = 1 1\nmax = 2 2\nstep = +1\nobjective = http.p99_ms lower\n",
	 "t.policy:8: knob a: constraint: v is a vector"},
	{"[knob v]\nkind = sysctl\ntarget = net.core.v\ntype = intvec 2\nmin = 1 1\nmax = 2 2\nstep = +1\n"
	 "objective = http.p99_ms lower\nconstraint = <= a\n" KNOB_A(""),
	 "t.policy:9: knob v: constraint: name an element"},
	{KNOB_A("constraint = <= e\n") "[knob e]\nkind = sysctl\ntarget = net.core.e\ntype = enum\nvalues = x\n"
	 "objective = http.p99_ms lower\n", "t.policy:8: knob a: constraint names e, which is not an int or intvec"},
	{"[knob e]\nkind = sysctl\ntarget = net.core.e\ntype = onoff\nobjective = http.p99_ms lower\n"
	 "constraint = <= a\n" KNOB_A(""), "t.policy:6: knob e: only int and intvec knobs take constraints"},
	/* a <= b, b <= a */
	{KNOB_A("constraint = <= b\n") "[knob b]\nkind = sysctl\ntarget = net.core.b\ntype = int\nmin = 1\n"
	 "max = 2\nstep = +1\nobjective = http.p99_ms lower\nconstraint = >= a\n",
	 "t.policy:18: knob b: constraint cycle: a -> b -> a"},
	/* a -> b -> c -> a, across the order of definition */
	{KNOB_A("constraint = <= b\n")
	 "[knob c]\nkind = sysctl\ntarget = net.core.c\ntype = int\nmin = 1\nmax = 2\nstep = +1\n"
	 "objective = http.p99_ms lower\nconstraint = < a\n"
	 "[knob b]\nkind = sysctl\ntarget = net.core.b\ntype = int\nmin = 1\nmax = 2\nstep = +1\n"
	 "objective = http.p99_ms lower\nconstraint = <= c\n",
	 "constraint cycle: a -> b -> c -> a"},
};

static void test_bad_table(void **state)
{
	int failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct policy_set set;
		char err[512] = "";
		int r = build(&set, bad[i].text, err, sizeof(err));

		if (r != -EINVAL || !strstr(err, bad[i].want)) {
			print_error("case %zu: got %d '%s', want -EINVAL '%s'\n", i, r, err, bad[i].want);
			failed++;
		}
		policy_set_free(&set);
	}
	assert_int_equal(failed, 0);
}

/* A hostile value is quoted in an error only as printable ASCII, cut short. */
static void test_error_quotes_are_safe(void **state)
{
	struct policy_set set;
	char err[512] = "", value[300];

	(void)state;
	policy_set_init(&set);
	assert_int_equal(policy_set_add(&set, "t.policy", 1, "knob a", "k\x1b[31m", "v", err, sizeof(err)), -EINVAL);
	assert_null(strchr(err, '\x1b'));
	assert_non_null(strstr(err, "unknown key 'k?[31m'"));
	memset(value, 'x', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	assert_int_equal(policy_set_add(&set, "t.policy", 2, "knob a", value, "v", err, sizeof(err)), -EINVAL);
	assert_true(strlen(err) < 150);
	assert_non_null(strstr(err, "..."));
	/* Entries with a NULL part are refused, not dereferenced. */
	assert_int_equal(policy_set_add(&set, "t.policy", 3, "knob a", NULL, "v", err, sizeof(err)), -EINVAL);
	policy_set_free(&set);
}

static void test_too_many_knobs(void **state)
{
	struct policy_set set;
	char err[256], section[32];
	int r = 0;

	(void)state;
	policy_set_init(&set);
	for (int i = 0; i <= POLICY_KNOBS_MAX && r == 0; i++) {
		snprintf(section, sizeof(section), "knob k%d", i);
		r = policy_set_add(&set, "t.policy", i + 1, section, "kind", "sysctl", err, sizeof(err));
	}
	assert_int_equal(r, -ENOSPC);
	assert_int_equal(set.n, POLICY_KNOBS_MAX);
	assert_non_null(strstr(err, "t.policy:257: more than 256 knobs"));
	policy_set_free(&set);
}

static void test_forbidden(void **state)
{
	struct policy_set set;
	char err[512] = "";

	(void)state;
	assert_int_equal(build(&set, "[forbid]\nsysctls = net.core.x, vm.swappiness\n[forbid]\nsysctls = net.core.x\n",
			       err, sizeof(err)), 0);
	assert_int_equal(set.nforbidden, 2);
	assert_true(policy_forbidden(&set, "vm.swappiness"));
	assert_true(policy_forbidden(&set, "net.ipv4.tcp_tw_recycle")); /* built in */
	assert_true(policy_forbidden(NULL, "net.ipv4.tcp_tw_recycle"));
	assert_false(policy_forbidden(&set, "net.core.somaxconn"));
	policy_set_free(&set);
}

/* ---- policy_check ------------------------------------------------------------------------------------------- */

#define CHECK_SET                                                                                                     \
	SOMAXCONN                                                                                                     \
	"[knob listen_queue]\nkind = listen_queue\ntarget = *\ntype = int\nmin = 511\nmax = 65535\nstep = x2\n"       \
	"max_step = x4\nconstraint = <= net.core.somaxconn\nobjective = tcp.listen_overflows lower\n"                 \
	"[knob net.core.rmem_max]\nkind = sysctl\ntarget = net.core.rmem_max\ntype = int\nmin = 4194304\n"            \
	"max = 67108864\nstep = x2\nmax_step = x4\nobjective = http.p99_ms lower\n"                                   \
	"[knob net.ipv4.tcp_rmem]\nkind = sysctl\ntarget = net.ipv4.tcp_rmem\ntype = intvec 3\n"                      \
	"min = 4096 87380 4194304\nmax = 4096 262144 67108864\nstep = x2\nmax_step = x4\n"                            \
	"constraint = [2] <= net.core.rmem_max, [0] <= [1], [1] <= [2]\nobjective = http.p99_ms lower\n"              \
	"[knob ports]\nkind = sysctl\ntarget = net.ipv4.ip_local_port_range\ntype = intvec 2\nmin = 1024 1024\n"       \
	"max = 65535 65535\nstep = +4096\nmax_step = +8192\nconstraint = [0] < [1]\nobjective = http.p99_ms lower\n"  \
	"[knob irq]\nkind = irq_affinity\ntarget = *\ntype = cpumap\nmax = 7\nobjective = http.p99_ms lower\n"         \
	"[knob rps]\nkind = rps\ntarget = *\ntype = cpumap\nobjective = http.p99_ms lower\n"                           \
	"[knob flows]\nkind = rps_flows\ntarget = *\ntype = int\nmin = 4096\nmax = 131072\nstep = x2\n"               \
	"max_step = x4\nobjective = http.p99_ms lower\n"                                                              \
	"[knob aff]\nkind = nginx_directive\ntarget = worker_cpu_affinity\ncontext = main\ntype = cpulist\n"          \
	"max = 15\nobjective = http.p99_ms lower\n"                                                                   \
	"[knob cc]\nkind = sysctl\ntarget = net.ipv4.tcp_congestion_control\ntype = enum\nvalues = cubic, bbr\n"      \
	"objective = http.p99_ms lower\n"                                                                             \
	"[knob ma]\nkind = nginx_directive\ntarget = multi_accept\ncontext = events\ntype = onoff\n"                  \
	"objective = http.p99_ms lower\n"                                                                             \
	"[knob busy]\nkind = sysctl\ntarget = net.core.busy_poll\ntype = int\nmin = 0\nmax = 100\nstep = +25\n"       \
	"objective = http.p99_ms lower\nenabled = no\n"

/* Other knobs' values for value_of: a name, and a value or an error. */
struct world {
	const char *somaxconn, *listen_queue, *rmem_max, *tcp_rmem;
	int somaxconn_err, listen_queue_err;
};

static int value_of(const char *knob, char *out, size_t outlen, void *ctx)
{
	const struct world *w = ctx;
	const char *v = NULL;
	int e = 0;

	if (strcmp(knob, "net.core.somaxconn") == 0)
		v = w->somaxconn, e = w->somaxconn_err;
	else if (strcmp(knob, "listen_queue") == 0)
		v = w->listen_queue, e = w->listen_queue_err;
	else if (strcmp(knob, "net.core.rmem_max") == 0)
		v = w->rmem_max;
	else if (strcmp(knob, "net.ipv4.tcp_rmem") == 0)
		v = w->tcp_rmem;
	if (e)
		return e;
	if (!v)
		return -ENOENT;
	snprintf(out, outlen, "%s", v);
	return 0;
}

struct check_case {
	const char *knob, *current, *proposed;
	struct world w;
	int rc;
	const char *want; /* substring of the message */
};

#define W_DEFAULT {"4096", "511", "8388608", "4096 131072 6291456", 0, 0}

static const struct check_case checks[] = {
	{"net.core.somaxconn", "4096", "8192", W_DEFAULT, 0, NULL},
	{"net.core.somaxconn", "4096", "16384", W_DEFAULT, 0, NULL},
	{"net.core.somaxconn", "4096\n", " 8192 ", W_DEFAULT, 0, NULL},
	{"net.core.somaxconn", "4096", "70000", W_DEFAULT, -ERANGE, "net.core.somaxconn: 70000 is above the maximum 65535"},
	{"net.core.somaxconn", "4096", "2048", W_DEFAULT, -ERANGE, "net.core.somaxconn: 2048 is below the minimum 4096"},
	{"net.core.somaxconn", "4096", "32768", W_DEFAULT, -ERANGE, "4096 to 32768 is a factor of 8, more than the "
								    "largest step x4"},
	{"net.core.somaxconn", "65535", "8192", W_DEFAULT, -ERANGE, "a factor of 8"},
	/* found outside the bounds: the step counts from the nearest bound */
	{"net.core.somaxconn", "128", "4096", W_DEFAULT, 0, NULL},
	{"net.core.somaxconn", "128", "16384", W_DEFAULT, 0, NULL},
	{"net.core.somaxconn", "128", "32768", W_DEFAULT, -ERANGE, "4096 to 32768 is a factor of 8"},
	{"net.core.somaxconn", NULL, "8192", W_DEFAULT, -ERANGE, "the current value is unknown"},
	{"net.core.somaxconn", "lots", "8192", W_DEFAULT, -ERANGE, "the current value does not parse"},
	{"net.core.somaxconn", "4096", "8192; reboot", W_DEFAULT, -EINVAL, "net.core.somaxconn: not a valid int value"},
	{"net.core.somaxconn", "4096", "", W_DEFAULT, -EINVAL, "not a valid int value"},
	/* constraints the other way: lowering somaxconn below the live listen backlog */
	{"net.core.somaxconn", "16384", "4096", {"16384", "8192", NULL, NULL, 0, 0}, -ERANGE,
	 "constraint listen_queue <= net.core.somaxconn fails: 8192 <= 4096 is false"},
	{"net.core.somaxconn", "16384", "8192", {"16384", "8192", NULL, NULL, 0, 0}, 0, NULL},
	{"net.core.somaxconn", "16384", "4096", {"16384", NULL, NULL, NULL, 0, -ENOENT}, 0, NULL},
	{"net.core.somaxconn", "16384", "4096", {"16384", NULL, NULL, NULL, 0, -EIO}, -ERANGE,
	 "the value of listen_queue is unknown (error 5)"},
	{"net.core.somaxconn", "16384", "4096", {"16384", "many", NULL, NULL, 0, 0}, -ERANGE,
	 "the value of listen_queue does not parse as int"},
	/* listen_queue <= somaxconn */
	{"listen_queue", "511", "2044", W_DEFAULT, 0, NULL},
	{"listen_queue", "511", "2048", W_DEFAULT, -ERANGE, "511 to 2048 is a factor of 4.01"},
	{"listen_queue", "4096", "8192", W_DEFAULT, -ERANGE,
	 "constraint listen_queue <= net.core.somaxconn fails: 8192 <= 4096 is false"},
	{"listen_queue", "4096", "8192", {NULL, NULL, NULL, NULL, -ENOENT, 0}, 0, NULL},
	{"listen_queue", "4096", "8192", {NULL, NULL, NULL, NULL, -EAGAIN, 0}, -ERANGE, "the value of "
											"net.core.somaxconn is unknown"},
	/* a vector: its element against another knob, and against its own elements */
	{"net.ipv4.tcp_rmem", "4096 131072 6291456", "4096 131072 8388608", W_DEFAULT, 0, NULL},
	{"net.ipv4.tcp_rmem", "4096 131072 6291456", "4096 131072 12582912", W_DEFAULT, -ERANGE,
	 "constraint net.ipv4.tcp_rmem[2] <= net.core.rmem_max fails: 12582912 <= 8388608 is false"},
	{"net.ipv4.tcp_rmem", "4096 131072 6291456", "4096 131072 12582912",
	 {NULL, NULL, "16777216", NULL, 0, 0}, 0, NULL},
	{"net.ipv4.tcp_rmem", "4096 131072 6291456", "8192 131072 6291456", W_DEFAULT, -ERANGE,
	 "net.ipv4.tcp_rmem[0]: 8192 is above the maximum 4096"},
	{"net.ipv4.tcp_rmem", "4096 131072 6291456", "4096 131072", W_DEFAULT, -EINVAL, "2 numbers, the knob has 3"},
	{"net.ipv4.tcp_rmem", "4096 131072 6291456", "4096 131072 67108864", {NULL, NULL, "67108864", NULL, 0, 0},
	 -ERANGE, "net.ipv4.tcp_rmem[2]: 6291456 to 67108864 is a factor of 10.7"},
	{"net.core.rmem_max", "8388608", "4194304", {NULL, NULL, NULL, "4096 131072 6291456", 0, 0}, -ERANGE,
	 "constraint net.ipv4.tcp_rmem[2] <= net.core.rmem_max fails: 6291456 <= 4194304 is false"},
	{"net.core.rmem_max", "8388608", "16777216", {NULL, NULL, NULL, "4096 131072 6291456", 0, 0}, 0, NULL},
	{"ports", "32768 60999", "24576 60999", W_DEFAULT, 0, NULL},
	{"ports", "32768 60999", "16384 60999", W_DEFAULT, -ERANGE,
	 "ports[0]: 32768 to 16384 is a change of 16384, more than the largest step +8192"},
	{"ports", "32768 33000", "33000 32768", W_DEFAULT, -ERANGE, "constraint ports[0] < ports[1] fails: 33000 < "
								    "32768 is false"},
	/* CPU maps */
	{"irq", NULL, "45:0-3;46:4-7", W_DEFAULT, 0, NULL},
	{"irq", NULL, "45:0-3;46:", W_DEFAULT, -ERANGE, "irq: IRQ 46 has no CPU"},
	{"irq", NULL, "45:0-3;46:8", W_DEFAULT, -ERANGE, "irq: CPU 8 is outside 0..7"},
	{"irq", NULL, "45:0-3;46:1024", W_DEFAULT, -EINVAL, "CPU numbers stop at 1023"},
	{"rps", NULL, "0:;1:0-1023", W_DEFAULT, 0, NULL},
	/* rps_sock_flow_entries is rounded up by the kernel: only powers of two */
	{"flows", "4096", "8192", W_DEFAULT, 0, NULL},
	{"flows", "4096", "12288", W_DEFAULT, -ERANGE, "flows: 12288 is not a power of two"},
	{"flows", "0", "4096", W_DEFAULT, 0, NULL},
	/* words */
	{"aff", "", "0-7", W_DEFAULT, 0, NULL},
	{"aff", "0-7", "", W_DEFAULT, 0, NULL},
	{"aff", "", "8-16", W_DEFAULT, -ERANGE, "aff: CPU 16 is outside 0..15"},
	{"aff", "", "auto", W_DEFAULT, -EINVAL, "not a valid cpulist value"},
	{"cc", "cubic", "bbr", W_DEFAULT, 0, NULL},
	{"cc", "cubic", "reno", W_DEFAULT, -ERANGE, "cc: 'reno' is not one of the policy's values"},
	{"cc", "cubic", "BBR", W_DEFAULT, -EINVAL, "not a valid enum value"},
	{"ma", "off", "on", W_DEFAULT, 0, NULL},
	{"ma", "off", "maybe", W_DEFAULT, -EINVAL, "not on or off"},
	/* switched off */
	{"busy", "0", "25", W_DEFAULT, -EPERM, "busy: disabled by policy"},
};

static void test_check_table(void **state)
{
	struct policy_set set;
	char err[512] = "";

	(void)state;
	assert_int_equal(build(&set, CHECK_SET, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		const struct check_case *c = &checks[i];
		const struct knob_policy *p = policy_find(&set, c->knob);
		int r;

		assert_non_null(p);
		err[0] = 'x', err[1] = '\0';
		r = policy_check(&set, p, c->current, c->proposed, value_of, (void *)&c->w, err, sizeof(err));
		if (r != c->rc || (c->want && !strstr(err, c->want)) || (!c->want && err[0]))
			fail_msg("check %zu (%s %s -> %s): got %d '%s', want %d '%s'", i, c->knob,
				 c->current ? c->current : "(null)", c->proposed, r, err, c->rc, c->want ? c->want : "");
	}
	policy_set_free(&set);
}

static void test_check_forbidden(void **state)
{
	struct policy_set set;
	struct world w = W_DEFAULT;
	char err[512] = "";

	(void)state;
	assert_int_equal(build(&set, CHECK_SET, err, sizeof(err)), 0);
	/* A [forbid] that arrives with a later reload, while the engine still holds this knob. */
	snprintf(set.forbidden[set.nforbidden++], POLICY_TARGET_MAX, "net.core.somaxconn");
	assert_int_equal(policy_check(&set, policy_find(&set, "net.core.somaxconn"), "4096", "8192", value_of, &w, err,
				      sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "net.core.somaxconn: writing net.core.somaxconn is forbidden"));
	snprintf(set.forbidden[set.nforbidden++], POLICY_TARGET_MAX, "net.core.rps_sock_flow_entries");
	assert_int_equal(policy_check(&set, policy_find(&set, "flows"), "4096", "8192", value_of, &w, err, sizeof(err)),
			 -EPERM);
	/* Without value_of, a constraint cannot be checked and refuses. */
	assert_int_equal(policy_check(&set, policy_find(&set, "listen_queue"), "511", "1024", NULL, NULL, err,
				      sizeof(err)), -ERANGE);
	assert_non_null(strstr(err, "the value of net.core.somaxconn is unknown"));
	policy_set_free(&set);
}

struct step_case {
	const char *knob, *current;
	bool up;
	int rc;
	const char *want;
};

static const struct step_case steps[] = {
	{"net.core.somaxconn", "4096", true, 0, "8192"},
	{"net.core.somaxconn", "40000", true, 0, "65535"},
	{"net.core.somaxconn", "65535", true, -ERANGE, NULL},
	{"net.core.somaxconn", "70000", true, -ERANGE, NULL},  /* never down when asked up */
	{"net.core.somaxconn", "70000", false, 0, "65535"},
	{"net.core.somaxconn", "128", true, 0, "4096"},       /* into the bounds first */
	{"net.core.somaxconn", "16384", false, 0, "8192"},
	{"net.core.somaxconn", "4096", false, -ERANGE, NULL},
	{"net.core.somaxconn", "junk", true, -EINVAL, NULL},
	{"ports", "32768 60999", true, 0, "36864 65095"},
	{"ports", "65535 65535", true, -ERANGE, NULL},
	{"net.ipv4.tcp_rmem", "4096 131072 6291456", true, 0, "4096 262144 12582912"},
	{"flows", "4096", true, 0, "8192"},
	{"flows", "65536", true, 0, "131072"},
	{"flows", "0", true, 0, "4096"},
	{"aff", "", true, -EINVAL, NULL},
	{"cc", "bbr", true, -EINVAL, NULL},
};

static void test_step_value(void **state)
{
	struct policy_set set;
	char err[512] = "", out[64];

	(void)state;
	assert_int_equal(build(&set, CHECK_SET, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct step_case *c = &steps[i];
		int r = policy_step_value(policy_find(&set, c->knob), c->current, c->up, out, sizeof(out));

		if (r != c->rc || (c->want && strcmp(out, c->want) != 0))
			fail_msg("step %zu (%s %s %s): got %d '%s', want %d '%s'", i, c->knob, c->current,
				 c->up ? "up" : "down", r, r == 0 ? out : "", c->rc, c->want ? c->want : "");
	}
	policy_set_free(&set);
}

static void test_bounds_text(void **state)
{
	static const struct {
		const char *knob, *text;
	} cases[] = {
		{"net.core.somaxconn", "4096..65535"},
		{"net.ipv4.tcp_rmem", "[4096..4096] [87380..262144] [4194304..67108864]"},
		{"aff", "CPUs 0..15"},
		{"cc", "cubic|bbr"},
		{"ma", "on|off"},
		{"irq", "CPUs 0..7"},
		{"rps", "CPUs 0..1023"},
	};
	struct policy_set set;
	char err[512] = "", buf[128];

	(void)state;
	assert_int_equal(build(&set, CHECK_SET, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(policy_bounds_text(policy_find(&set, cases[i].knob), buf, sizeof(buf)), 0);
		assert_string_equal(buf, cases[i].text);
	}
	assert_int_equal(policy_bounds_text(policy_find(&set, "net.ipv4.tcp_rmem"), buf, 10), -ENOSPC);
	assert_string_equal(buf, "");
	policy_set_free(&set);
}

static void test_metric_names(void **state)
{
	static const struct {
		const char *name;
		bool known;
	} cases[] = {
		{"tcp.listen_overflows", true},   {"tcp.sockstat.time_wait", true},   {"tcp.state.close_wait", true},
		{"softnet.time_squeeze", true},   {"softnet.12.dropped", true},       {"softnet.*.dropped", true},
		{"softirq.3.net_rx", true},       {"cpu.all.softirq", true},          {"cpu.17.idle", true},
		{"cpu.*.softirq", true},          {"irq.45.total", true},             {"irq.45.3", true},
		{"irq.net_irqs", true},           {"nginx.err.worker_connections", true},
		{"nginx.worker_wait_ms", true},   {"http.p99_ms", true},              {"http.5xx", true},
		{"http.lat.b159", true},          {"listen.443.queued", true},        {"listen.*.fill_pct", true},
		{"link.eth0.rx_dropped", true},   {"link.eth0.100.rx_dropped", true}, {"link.*.rx_missed", true},
		{"http.5xx_rate", true},          {"cpu.softirq_per_kreq", true},     {"nginx.worker_wait_ratio", true},
		{"sys.cpus", true},
		{"", false},                      {"tcp.*", false},                   {"*", false},
		{"tcp.listen_overflow", false},   {"http.6xx", false},                {"listen.0.queued", false},
		{"listen.70000.queued", false},   {"listen.080.queued", false},       {"softnet.x.dropped", false},
		{"cpu.al.idle", false},           {"cpu.12345.idle", false},          {"nginx.err.bogus", false},
		{"link.eth0/x.rx_dropped", false}, {"link..rx_dropped", false},       {"link.eth*.rx_dropped", false},
		{"link.abcdefghijklmnop.rx_dropped", false}, {"http.p99_ms ", false}, {"irq.45.total.x", false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (policy_metric_known(cases[i].name, NULL) != cases[i].known)
			fail_msg("metric '%s': want %s", cases[i].name, cases[i].known ? "known" : "unknown");
	assert_false(policy_metric_known(NULL, NULL));
}

static void test_vocabularies(void **state)
{
	size_t n = 0;

	(void)state;
	for (const struct policy_derived *d; (d = policy_derived_at(n)) != NULL; n++) {
		assert_true(policy_metric_known(d->name, NULL));
		assert_true(strlen(d->definition) > 5);
	}
	assert_true(n >= 8);
	assert_true(policy_detector_known("listen_overflows"));
	assert_true(policy_detector_known("softirq_imbalance"));
	assert_true(policy_detector_known("worker_run_delay"));
	assert_false(policy_detector_known("listen_overflow"));
	assert_false(policy_detector_known(""));
	assert_string_equal(policy_kind_name(POLICY_LISTEN_QUEUE), "listen_queue");
	assert_string_equal(policy_kind_name(POLICY_KIND_COUNT), "?");
}

/* The metric callback decides: a caller's own list is used instead of the built-in one. */
static bool only_p99(const char *name, void *ctx)
{
	(*(int *)ctx)++;
	return strcmp(name, "http.p99_ms") == 0;
}

static void test_metric_callback(void **state)
{
	struct policy_set set;
	char err[512] = "";
	int calls = 0;

	(void)state;
	policy_set_init(&set);
	assert_int_equal(build(&set, KNOB_A(""), err, sizeof(err)), 0);
	assert_int_equal(policy_set_validate(&set, only_p99, &calls, err, sizeof(err)), 0);
	assert_int_equal(calls, 1);
	policy_set_free(&set);
	assert_int_equal(build(&set, KNOB_A("guardrails = tcp.listen_overflows lower\n"), err, sizeof(err)), 0);
	assert_int_equal(policy_set_validate(&set, only_p99, &calls, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.policy:8: knob a: guardrails: unknown metric 'tcp.listen_overflows'"));
	/* No callback: metrics are not checked. */
	assert_int_equal(policy_set_validate(&set, NULL, NULL, err, sizeof(err)), 0);
	policy_set_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_knob),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_bad_table),
		cmocka_unit_test(test_error_quotes_are_safe),
		cmocka_unit_test(test_too_many_knobs),
		cmocka_unit_test(test_forbidden),
		cmocka_unit_test(test_check_table),
		cmocka_unit_test(test_check_forbidden),
		cmocka_unit_test(test_step_value),
		cmocka_unit_test(test_bounds_text),
		cmocka_unit_test(test_metric_names),
		cmocka_unit_test(test_vocabularies),
		cmocka_unit_test(test_metric_callback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
