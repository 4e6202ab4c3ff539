/*
 * Unit tests for policy_load: the shipped policies/ validate; overrides replace and add families; owner, mode and
 * symbolic-link refusals; broken files (fixtures in tests/fixtures/policies) leave the caller's set untouched.
 * Files are copied from the fixtures into fresh temporary directories so that their owner and mode are the test's
 * to set (a checkout may be group-writable). Tests that need chown run only as root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "act/policy_load.h"

static const char *srcdir(void)
{
	const char *s = getenv("srcdir");

	return s && s[0] ? s : ".";
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	if (!f)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	buf = malloc(POLICY_FILE_SIZE_MAX + 1);
	assert_non_null(buf);
	*len = fread(buf, 1, POLICY_FILE_SIZE_MAX, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static void put_file(const char *dir, const char *name, const char *text, size_t len, mode_t mode)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* Copy fixture tests/fixtures/policies/REL to DIR/NAME with MODE. */
static void put_fixture(const char *dir, const char *rel, const char *name, mode_t mode)
{
	char src[512];
	size_t len;
	char *text;

	snprintf(src, sizeof(src), "%s/tests/fixtures/policies/%s", srcdir(), rel);
	text = slurp(src, &len);
	put_file(dir, name, text, len, mode);
	free(text);
}

struct tmp {
	char root[64], ship[96], over[96];
};

static void tmp_make(struct tmp *t)
{
	snprintf(t->root, sizeof(t->root), "/tmp/test_policy_load.XXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(t->ship, sizeof(t->ship), "%s/shipped", t->root);
	snprintf(t->over, sizeof(t->over), "%s/policies.d", t->root);
	assert_int_equal(mkdir(t->ship, 0755), 0);
	assert_int_equal(mkdir(t->over, 0755), 0);
	assert_int_equal(chmod(t->ship, 0755), 0); /* whatever the umask */
	assert_int_equal(chmod(t->over, 0755), 0);
}

static void rm_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;

	if (lstat(path, &st) < 0)
		return;
	if (S_ISDIR(st.st_mode) && (d = opendir(path)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			char sub[512];

			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
			rm_tree(sub);
		}
		closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

static void tmp_remove(struct tmp *t)
{
	rm_tree(t->root);
}

/* A set the loader must leave alone on error: its bytes are compared after the call. */
static void sentinel(struct policy_set *s)
{
	memset(s, 0x5a, sizeof(*s));
}

static void assert_sentinel(const struct policy_set *s)
{
	struct policy_set want;

	sentinel(&want);
	assert_memory_equal(s, &want, sizeof(want));
}

/* ---- the shipped policies ------------------------------------------------------------------------------------ */

static int no_value(const char *knob, char *out, size_t outlen, void *ctx)
{
	(void)knob, (void)out, (void)outlen, (void)ctx;
	return -ENOENT;
}

static void load_shipped(struct policy_set *set, size_t *nfiles)
{
	char dir[512], path[800], err[512] = "";
	struct dirent *de;
	DIR *d;

	policy_set_init(set);
	*nfiles = 0;
	snprintf(dir, sizeof(dir), "%s/policies", srcdir());
	d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s: %s", dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		size_t nl = strlen(de->d_name), len;
		char *text;

		if (nl < 8 || strcmp(de->d_name + nl - 7, ".policy") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		text = slurp(path, &len);
		if (policy_parse_buffer(set, path, text, len, err, sizeof(err)) < 0)
			fail_msg("%s", err);
		free(text);
		(*nfiles)++;
	}
	closedir(d);
	if (policy_set_validate(set, policy_metric_known, NULL, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

static void test_shipped_policies_validate(void **state)
{
	static const char *const knobs[] = {
		"net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog", "net.core.netdev_budget",
		"net.core.netdev_budget_usecs", "net.core.netdev_max_backlog", "net.core.busy_poll",
		"net.core.busy_read", "net.ipv4.tcp_fin_timeout", "net.ipv4.ip_local_port_range", "net.core.rmem_max",
		"net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "irq_affinity", "rps", "rps_flows",
		"sched.base_slice", "nginx.worker_processes", "nginx.worker_connections", "nginx.worker_cpu_affinity",
		"nginx.multi_accept", "nginx.accept_mutex", "nginx.keepalive_requests", "listen_queue",
		"nginx.gzip_comp_level", "nginx.upstream_keepalive",
	};
	struct policy_set set;
	const struct knob_policy *p;
	size_t nfiles;

	(void)state;
	load_shipped(&set, &nfiles);
	assert_true(nfiles >= 9);
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (!policy_find(&set, knobs[i]))
			fail_msg("no shipped policy for %s", knobs[i]);

	/* The bounds the issue names. */
	p = policy_find(&set, "sched.base_slice");
	assert_int_equal(p->kind, POLICY_SCHED_SLICE);
	assert_true(p->max[0] <= 2000000);
	p = policy_find(&set, "net.core.netdev_budget_usecs");
	assert_true(p->max[0] <= 4000);
	p = policy_find(&set, "listen_queue");
	assert_int_equal(p->kind, POLICY_LISTEN_QUEUE);
	/* No constraint on somaxconn: the listen driver raises somaxconn in the same change (see listen.policy). */
	assert_int_equal(p->nconstraints, 0);
	p = policy_find(&set, "net.ipv4.tcp_rmem");
	assert_int_equal(p->type, KNOB_T_INTVEC);
	assert_int_equal(p->nelem, 3);
	assert_int_equal(p->constraints[0].elem, 2);
	assert_string_equal(p->constraints[0].other, "net.core.rmem_max");
	assert_string_equal(policy_find(&set, "net.ipv4.tcp_wmem")->constraints[0].other, "net.core.wmem_max");
	assert_int_equal(policy_find(&set, "net.ipv4.ip_local_port_range")->nelem, 2);
	assert_string_equal(policy_find(&set, "net.ipv4.ip_local_port_range")->trigger, "port_exhaustion");
	/* its fallback: the same trigger, 2 (loopback only) and 1 (every connection) in play, never 0 */
	p = policy_find(&set, "net.ipv4.tcp_tw_reuse");
	assert_non_null(p);
	assert_string_equal(p->trigger, "port_exhaustion");
	assert_true(p->kind == POLICY_SYSCTL && p->min[0] == 1 && p->max[0] == 2 && p->approval_required);
	{
		char err[256];

		assert_int_equal(policy_check(&set, p, "2", "1", no_value, NULL, err, sizeof(err)), 0);
		assert_int_equal(policy_check(&set, p, "1", "0", no_value, NULL, err, sizeof(err)), -ERANGE);
	}
	assert_int_equal(policy_find(&set, "irq_affinity")->type, KNOB_T_CPUMAP);
	assert_string_equal(policy_find(&set, "irq_affinity")->target, "*");
	assert_int_equal(policy_find(&set, "rps")->type, KNOB_T_CPUMAP);
	assert_int_equal(policy_find(&set, "rps_flows")->kind, POLICY_RPS_FLOWS);
	assert_int_equal(policy_find(&set, "nginx.multi_accept")->type, KNOB_T_ONOFF);
	assert_int_equal(policy_find(&set, "nginx.worker_cpu_affinity")->type, KNOB_T_CPULIST);
	assert_string_equal(policy_find(&set, "nginx.worker_connections")->context, "events");
	p = policy_find(&set, "nginx.gzip_comp_level");
	assert_true(p->min[0] == 1 && p->max[0] == 9 && p->approval_required && !p->trigger[0]);
	assert_string_equal(p->objective.metric, "cpu.busy_per_kreq");
	assert_int_equal(p->objective.dir, POLICY_LOWER_IS_BETTER);
	p = policy_find(&set, "nginx.upstream_keepalive");
	assert_int_equal(p->kind, POLICY_UPSTREAM_KEEPALIVE);
	assert_true(p->min[0] == 0 && p->max[0] == 1024 && p->approval_required);
	{
		char next[32], err[256];

		/* 0 -> 64 in one change, as the planner steps */
		assert_int_equal(policy_step_value(p, "0", true, next, sizeof(next)), 0);
		assert_string_equal(next, "64");
		assert_int_equal(policy_check(&set, p, "0", "64", no_value, NULL, err, sizeof(err)), 0);
	}
	assert_string_equal(p->objective.metric, "http.5xx_rate");
	assert_string_equal(p->guardrails[0].metric, "client.failure_rate");
	assert_false(policy_find(&set, "net.core.busy_poll")->enabled);
	assert_true(policy_forbidden(&set, "net.ipv4.tcp_tw_recycle"));
	assert_int_equal(set.nforbidden, 1);

	/* Every numeric knob can take its first step up from its minimum. */
	for (size_t i = 0; i < set.n; i++) {
		const struct knob_policy *k = &set.knobs[i];
		char cur[KNOBVAL_TEXT_MAX] = "", next[KNOBVAL_TEXT_MAX], err[256];
		size_t len = 0;

		if (k->type != KNOB_T_INT && k->type != KNOB_T_INTVEC)
			continue;
		for (size_t e = 0; e < k->nelem; e++)
			len += (size_t)snprintf(cur + len, sizeof(cur) - len, "%s%lld", e ? " " : "",
						(long long)k->min[e]);
		if (policy_step_value(k, cur, true, next, sizeof(next)) < 0)
			fail_msg("%s: no step up from %s", k->name, cur);
		if (!k->enabled)
			continue;
		if (policy_check(&set, k, cur, next, no_value, NULL, err, sizeof(err)) < 0)
			fail_msg("%s: %s -> %s refused: %s", k->name, cur, next, err);
	}
	policy_set_free(&set);
}

/* The shipped directory loads through the real loader too, once its files are root-owned and 0644. */
static void test_shipped_policies_load(void **state)
{
	char dir[512], err[512] = "";
	struct policy_set set;
	struct dirent *de;
	struct tmp t;
	DIR *d;

	(void)state;
	tmp_make(&t);
	snprintf(dir, sizeof(dir), "%s/policies", srcdir());
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char rel[300];

		if (!strstr(de->d_name, ".policy"))
			continue;
		snprintf(rel, sizeof(rel), "../../../policies/%s", de->d_name);
		put_fixture(t.ship, rel, de->d_name, 0644);
	}
	closedir(d);
	if (policy_load(t.ship, t.over, getuid(), &set, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	assert_true(set.n >= 24);
	policy_set_free(&set);
	tmp_remove(&t);
}

/* ---- overrides ---------------------------------------------------------------------------------------------- */

static void fill_good(struct tmp *t)
{
	put_fixture(t->ship, "shipped/alpha.policy", "alpha.policy", 0644);
	put_fixture(t->ship, "shipped/beta.policy", "beta.policy", 0644);
	put_fixture(t->over, "override/alpha.policy", "alpha.policy", 0644);
	put_fixture(t->over, "override/gamma.policy", "gamma.policy", 0644);
}

static void test_override(void **state)
{
	struct policy_set set;
	const struct knob_policy *p;
	char err[512] = "", path[256];
	struct tmp t;

	(void)state;
	tmp_make(&t);
	fill_good(&t);
	/* Not policy files: skipped. */
	put_file(t.ship, "README", "not a policy", 12, 0644);
	put_file(t.ship, "beta.policy.dpkg-old", "[broken", 7, 0644);
	put_file(t.over, ".alpha.policy.swp", "[broken", 7, 0644);
	assert_int_equal(policy_load(t.ship, t.over, getuid(), &set, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(set.n, 4);

	/* alpha.policy came from the override directory: somaxconn switched off, listen_queue capped at 8192. */
	p = policy_find(&set, "net.core.somaxconn");
	assert_non_null(p);
	assert_false(p->enabled);
	assert_string_equal(p->trigger, "");
	snprintf(path, sizeof(path), "%s/alpha.policy", t.over);
	assert_string_equal(p->path, path);
	assert_string_equal(p->file, "alpha.policy");
	p = policy_find(&set, "listen_queue");
	assert_int_equal(p->max[0], 8192);
	assert_int_equal(p->line, 14);
	/* beta.policy from the shipped directory, indented keys and an inline comment included. */
	p = policy_find(&set, "net.core.netdev_budget");
	assert_non_null(p);
	assert_int_equal(p->min[0], 300);
	assert_int_equal(p->settle_ms, 45000);
	snprintf(path, sizeof(path), "%s/beta.policy", t.ship);
	assert_string_equal(p->path, path);
	assert_true(policy_forbidden(&set, "net.ipv4.tcp_timestamps"));
	/* gamma.policy only in the override directory: a family of its own. */
	assert_non_null(policy_find(&set, "nginx.multi_accept"));

	/* A disabled knob is refused at write time. */
	assert_int_equal(policy_check(&set, policy_find(&set, "net.core.somaxconn"), "4096", "8192", NULL, NULL, err,
				      sizeof(err)), -EPERM);
	policy_set_free(&set);

	/* Without the override directory (absent, or not given) the shipped files stand alone. */
	rm_tree(t.over);
	assert_int_equal(policy_load(t.ship, t.over, getuid(), &set, err, sizeof(err)), 0);
	assert_int_equal(set.n, 3);
	assert_true(policy_find(&set, "net.core.somaxconn")->enabled);
	policy_set_free(&set);
	assert_int_equal(policy_load(t.ship, NULL, getuid(), &set, err, sizeof(err)), 0);
	assert_int_equal(set.n, 3);
	policy_set_free(&set);
	tmp_remove(&t);
}

static void test_missing_shipped_dir(void **state)
{
	struct policy_set set;
	char err[512] = "";

	(void)state;
	sentinel(&set);
	assert_int_equal(policy_load("/nonexistent/policies", NULL, getuid(), &set, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/policies: No such file or directory"));
	assert_sentinel(&set);
}

/* ---- trust -------------------------------------------------------------------------------------------------- */

static void expect_refusal(const struct tmp *t, uid_t owner, int rc, const char *want)
{
	struct policy_set set;
	char err[512] = "";
	int r;

	sentinel(&set);
	r = policy_load(t->ship, t->over, owner, &set, err, sizeof(err));
	if (r != rc || !strstr(err, want))
		fail_msg("got %d '%s', want %d '%s'", r, err, rc, want);
	assert_sentinel(&set);
}

static void test_wrong_owner(void **state)
{
	char want[512], path[256];
	struct tmp t;

	(void)state;
	tmp_make(&t);
	fill_good(&t);
	/* Everything is ours; asking for another owner refuses the first directory. */
	snprintf(want, sizeof(want), "%s: owned by uid %u, not %u: refused", t.ship, (unsigned)getuid(),
		 (unsigned)getuid() + 1);
	expect_refusal(&t, getuid() + 1, -EPERM, want);
	if (geteuid() != 0) {
		print_message("not root: chown cases skipped\n");
		tmp_remove(&t);
		return;
	}
	/* One file handed to nobody. */
	snprintf(path, sizeof(path), "%s/gamma.policy", t.over);
	assert_int_equal(chown(path, 65534, 65534), 0);
	snprintf(want, sizeof(want), "%s: owned by uid 65534, not 0: refused", path);
	expect_refusal(&t, 0, -EPERM, want);
	assert_int_equal(chown(path, 0, 0), 0);
	/* The override directory handed to nobody. */
	assert_int_equal(chown(t.over, 65534, 65534), 0);
	snprintf(want, sizeof(want), "%s: owned by uid 65534, not 0: refused", t.over);
	expect_refusal(&t, 0, -EPERM, want);
	assert_int_equal(chown(t.over, 0, 0), 0);
	/* Issue 22, R3: the directory above them handed to nobody, who could swap either after the check. */
	assert_int_equal(chown(t.root, 65534, 65534), 0);
	snprintf(want, sizeof(want), "%s is owned by uid 65534, not root: refused", t.root);
	expect_refusal(&t, 0, -EPERM, want);
	assert_int_equal(chown(t.root, 0, 0), 0);
	tmp_remove(&t);
}

static void test_writable(void **state)
{
	char want[512], path[256];
	struct tmp t;

	(void)state;
	tmp_make(&t);
	fill_good(&t);
	snprintf(path, sizeof(path), "%s/beta.policy", t.ship);
	assert_int_equal(chmod(path, 0664), 0);
	snprintf(want, sizeof(want), "%s: writable by group or others (mode 0664): refused", path);
	expect_refusal(&t, getuid(), -EPERM, want);
	assert_int_equal(chmod(path, 0646), 0);
	snprintf(want, sizeof(want), "%s: writable by group or others (mode 0646): refused", path);
	expect_refusal(&t, getuid(), -EPERM, want);
	assert_int_equal(chmod(path, 0600), 0);

	/* A world-writable directory, even with the sticky bit. */
	assert_int_equal(chmod(t.over, 01777), 0);
	snprintf(want, sizeof(want), "%s: writable by group or others (mode 1777): refused", t.over);
	expect_refusal(&t, getuid(), -EPERM, want);
	assert_int_equal(chmod(t.over, 0775), 0);
	snprintf(want, sizeof(want), "%s: writable by group or others (mode 0775): refused", t.over);
	expect_refusal(&t, getuid(), -EPERM, want);
	assert_int_equal(chmod(t.over, 0755), 0);
	tmp_remove(&t);
}

static void test_symlinks(void **state)
{
	char want[512], path[256], target[256], link_dir[256];
	struct policy_set set;
	char err[512];
	struct tmp t;

	(void)state;
	tmp_make(&t);
	fill_good(&t);
	/* A policy file that is a link, even to a good file owned by the right user. */
	snprintf(target, sizeof(target), "%s/beta.policy", t.ship);
	snprintf(path, sizeof(path), "%s/delta.policy", t.over);
	assert_int_equal(symlink(target, path), 0);
	snprintf(want, sizeof(want), "%s: a symbolic link: refused", path);
	expect_refusal(&t, getuid(), -ELOOP, want);
	unlink(path);
	/* A dangling link is refused the same way, not skipped. */
	assert_int_equal(symlink("/nonexistent", path), 0);
	expect_refusal(&t, getuid(), -ELOOP, want);
	unlink(path);
	/* A policy directory that is a link. */
	snprintf(link_dir, sizeof(link_dir), "%s/link", t.root);
	assert_int_equal(symlink(t.ship, link_dir), 0);
	sentinel(&set);
	assert_int_equal(policy_load(link_dir, NULL, getuid(), &set, err, sizeof(err)), -ELOOP);
	snprintf(want, sizeof(want), "%s: a symbolic link: refused", link_dir);
	assert_non_null(strstr(err, want));
	assert_sentinel(&set);
	tmp_remove(&t);
}

static void test_not_regular(void **state)
{
	char want[512], path[256];
	struct tmp t;

	(void)state;
	tmp_make(&t);
	fill_good(&t);
	snprintf(path, sizeof(path), "%s/fifo.policy", t.over);
	assert_int_equal(mkfifo(path, 0644), 0);
	snprintf(want, sizeof(want), "%s: not a regular file: refused", path);
	expect_refusal(&t, getuid(), -EINVAL, want); /* and does not block on the FIFO */
	unlink(path);
	snprintf(path, sizeof(path), "%s/dir.policy", t.over);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(want, sizeof(want), "%s: not a regular file: refused", path);
	expect_refusal(&t, getuid(), -EINVAL, want);
	tmp_remove(&t);
}

/* ---- broken files ------------------------------------------------------------------------------------------- */

static const struct {
	const char *fixture, *want; /* WANT follows "DIR/NAME" in the message */
	int rc;
} broken[] = {
	{"bad/syntax.policy", ":3: syntax error (expected 'key = value' or '[section]')", -EINVAL},
	{"bad/unterminated.policy", ":1: syntax error", -EINVAL},
	{"bad/unknown_key.policy", ":4: knob a: unknown key 'colour'", -EINVAL},
	{"bad/cycle.policy", ":19: knob b: constraint cycle: a -> b -> a", -EINVAL},
	{"bad/unknown_metric.policy", ":6: knob a: guardrails: unknown metric 'nginx.happiness'", -EINVAL},
	{"bad/repeated_section.policy", ":8: knob a is already defined at ", -EINVAL},
	{"bad/hard_limit.policy", ":7: knob sched.base_slice: max 5000000 is above the hard limit 2000000", -EINVAL},
	{"bad/long_section.policy", ":1: section name longer than 49 characters", -EINVAL},
	{"bad/long_line.policy", ":4: line longer than 198 characters", -EINVAL},
	{"bad/missing_key.policy", ":3: knob a: missing key objective", -EINVAL},
};

static void test_broken_files(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		char want[512];
		struct tmp t;

		tmp_make(&t);
		fill_good(&t);
		/* Broken files go to the override directory under a new name: good files load first. */
		put_fixture(t.over, broken[i].fixture, "zz.policy", 0644);
		snprintf(want, sizeof(want), "%s/zz.policy%s", t.over, broken[i].want);
		expect_refusal(&t, getuid(), broken[i].rc, want);
		tmp_remove(&t);
	}
}

/* A broken override of a good shipped file fails the load: it does not fall back to the shipped file. */
static void test_broken_override_no_fallback(void **state)
{
	char want[512];
	struct tmp t;

	(void)state;
	tmp_make(&t);
	fill_good(&t);
	put_fixture(t.over, "bad/unknown_key.policy", "beta.policy", 0644);
	snprintf(want, sizeof(want), "%s/beta.policy:4: knob a: unknown key 'colour'", t.over);
	expect_refusal(&t, getuid(), -EINVAL, want);
	tmp_remove(&t);
}

static void test_hostile_bytes(void **state)
{
	static const char nul[] = "[knob a]\nkind = sys\0ctl\n";
	static const char crlf[] = "[knob a]\r\nkind = sysctl\r\ntarget = net.core.a\r\ntype = onoff\r\n"
				   "objective = http.p99_ms lower\r\n";
	char want[512], *big;
	struct policy_set set;
	char err[512];
	struct tmp t;

	(void)state;
	tmp_make(&t);
	put_file(t.ship, "nul.policy", nul, sizeof(nul) - 1, 0644);
	snprintf(want, sizeof(want), "%s/nul.policy: holds a NUL byte", t.ship);
	expect_refusal(&t, getuid(), -EINVAL, want);
	unlink(strcat(strcpy(want, t.ship), "/nul.policy"));

	/* CRLF line ends are accepted. */
	put_file(t.ship, "crlf.policy", crlf, sizeof(crlf) - 1, 0644);
	assert_int_equal(policy_load(t.ship, NULL, getuid(), &set, err, sizeof(err)), 0);
	assert_string_equal(policy_find(&set, "a")->target, "net.core.a");
	policy_set_free(&set);

	/* A file past the size limit: refused before parsing. */
	big = malloc(POLICY_FILE_SIZE_MAX + 100);
	assert_non_null(big);
	memset(big, '#', POLICY_FILE_SIZE_MAX + 100);
	for (size_t i = 100; i < POLICY_FILE_SIZE_MAX + 100; i += 100)
		big[i] = '\n';
	put_file(t.over, "big.policy", big, POLICY_FILE_SIZE_MAX + 100, 0644);
	free(big);
	snprintf(want, sizeof(want), "%s/big.policy: larger than %d bytes", t.over, POLICY_FILE_SIZE_MAX);
	expect_refusal(&t, getuid(), -EFBIG, want);
	unlink(strcat(strcpy(want, t.over), "/big.policy"));

	/* An empty file and a comment-only file hold no knobs, which is no error. */
	put_file(t.over, "empty.policy", "", 0, 0644);
	put_file(t.over, "comments.policy", "# nothing\n; here\n\n", 18, 0644);
	assert_int_equal(policy_load(t.ship, t.over, getuid(), &set, err, sizeof(err)), 0);
	assert_int_equal(set.n, 1);
	policy_set_free(&set);

	/* A file name with a character outside the allowed set. */
	put_file(t.over, "bad name.policy", "", 0, 0644);
	snprintf(want, sizeof(want), "%s: a policy file name has a character outside", t.over);
	expect_refusal(&t, getuid(), -EINVAL, want);
	tmp_remove(&t);
}

static void test_parse_buffer(void **state)
{
	static const char text[] = "[knob a]\nkind = sysctl\ntarget = net.core.a\n[knob b]\nkind = sysctl\n";
	struct policy_set set;
	char err[512] = "";

	(void)state;
	policy_set_init(&set);
	assert_int_equal(policy_parse_buffer(&set, "x.policy", text, sizeof(text) - 1, err, sizeof(err)), 0);
	assert_int_equal(set.n, 2);
	assert_int_equal(policy_find(&set, "b")->line, 5);
	/* The same names again in a second file are duplicates. */
	assert_int_equal(policy_parse_buffer(&set, "y.policy", text, sizeof(text) - 1, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "y.policy:2: knob a is already defined at x.policy:2");
	policy_set_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_policies_validate),
		cmocka_unit_test(test_shipped_policies_load),
		cmocka_unit_test(test_override),
		cmocka_unit_test(test_missing_shipped_dir),
		cmocka_unit_test(test_wrong_owner),
		cmocka_unit_test(test_writable),
		cmocka_unit_test(test_symlinks),
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_broken_files),
		cmocka_unit_test(test_broken_override_no_fallback),
		cmocka_unit_test(test_hostile_bytes),
		cmocka_unit_test(test_parse_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
