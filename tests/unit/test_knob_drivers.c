/*
 * Tests for the knob drivers (sysctl, IRQ affinity, RPS, RFS, scheduler slice), the dry-run layer, the errno
 * classes and the expansion of policies into knobs, against fake root trees each test builds in a temporary
 * directory. A kernel that clamps a value is played by a thread behind a FIFO: it takes what the driver writes
 * and answers the re-read with something else. EACCES is real: a child drops to an unprivileged uid (as root)
 * before writing a 0444 file. Two tests use the real kernel (root only, else skipped): inside a network namespace
 * it creates, one reads and writes that namespace's net.core.somaxconn through the driver; the other has the
 * kernel refuse the affinity of a managed IRQ.
 */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testskip.h"

#include "core/policy.h"
#include "act/knob.h"
#include "act/knob_io.h"

/* ---- fake root trees ------------------------------------------------------------------------------------- */

struct fx {
	char root[128];
	struct knob_env env;
	struct knob_policy pol;
	struct knob k;
	char netns[64]; /* a network namespace the test made, removed by teardown even when the test fails */
	pid_t child;
};

static void mkdirs(const char *path)
{
	char buf[512];

	assert_true(strlen(path) < sizeof(buf));
	strcpy(buf, path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, 0755) < 0)
				assert_int_equal(errno, EEXIST);
			*p = '/';
		}
	if (mkdir(buf, 0755) < 0)
		assert_int_equal(errno, EEXIST);
}

static void full(const struct fx *f, const char *rel, char *out, size_t n)
{
	assert_true((size_t)snprintf(out, n, "%s%s", f->root, rel) < n);
}

static void mk(const struct fx *f, const char *rel)
{
	char p[512];

	full(f, rel, p, sizeof(p));
	mkdirs(p);
}

/* Create ROOT/REL with CONTENT, and its directories. */
static void put(const struct fx *f, const char *rel, const char *content)
{
	char p[512], dir[512];
	FILE *fp;

	full(f, rel, p, sizeof(p));
	strcpy(dir, p);
	*strrchr(dir, '/') = '\0';
	mkdirs(dir);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fputs(content, fp);
	assert_int_equal(fclose(fp), 0);
}

static void putf(const struct fx *f, const char *content, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void putf(const struct fx *f, const char *content, const char *fmt, ...)
{
	char rel[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	put(f, rel, content);
}

/* ROOT/REL's content (at most 4 KiB) into a static buffer. */
static const char *get(const struct fx *f, const char *rel)
{
	static char buf[4096];
	char p[512];
	ssize_t n;
	int fd;

	full(f, rel, p, sizeof(p));
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
	return buf;
}

static void rm(const struct fx *f, const char *rel)
{
	char p[512];

	full(f, rel, p, sizeof(p));
	assert_int_equal(unlink(p), 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->root, sizeof(f->root), "%s/knobdrv-XXXXXX", tmp && strlen(tmp) < 60 ? tmp : "/tmp");
	if (!mkdtemp(f->root) || chmod(f->root, 0755) < 0) {
		free(f);
		return -1;
	}
	f->env.root = f->root;
	*state = f;
	return 0;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->child > 0) {
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
	}
	if (f->netns[0])
		sh("ip netns del %s 2>/dev/null", f->netns);
	if (f->k.ops && f->k.ops->release)
		f->k.ops->release(&f->k);
	nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* Point F->k at a fresh policy NAME of KIND over TARGET with values of TYPE; KNOB is the knob's name ("" = NAME). */
static struct knob *knob_for(struct fx *f, const char *name, const char *kind, const char *target,
			     enum knob_type type, const char *knob)
{
	if (f->k.ops && f->k.ops->release)
		f->k.ops->release(&f->k);
	memset(&f->pol, 0, sizeof(f->pol));
	strcpy(f->pol.name, name);
	strcpy(f->pol.kind_name, kind);
	strcpy(f->pol.target, target);
	f->pol.type = type;
	f->pol.nelem = 1;
	f->pol.enabled = true;
	memset(&f->k, 0, sizeof(f->k));
	strcpy(f->k.name, *knob ? knob : name);
	f->k.pol = &f->pol;
	f->k.ops = knob_ops_for(kind);
	assert_non_null(f->k.ops);
	f->k.env = &f->env;
	return &f->k;
}

/* As knob_for, expanded by knob_instantiate (so behind the dry-run backend when F->env.dry_run). */
static struct knob *knob_made(struct fx *f, const char *name, const char *kind, const char *target,
			      enum knob_type type)
{
	size_t n;

	knob_for(f, name, kind, target, type, "");
	memset(&f->k, 0, sizeof(f->k));
	assert_int_equal(knob_instantiate(&f->pol, &f->env, &f->k, 1, &n), 0);
	assert_int_equal(n, 1);
	return &f->k;
}

static int wr(struct knob *k, const char *value, char *why, size_t whylen)
{
	return knob_write(k, value, why, whylen, NULL, NULL);
}

/* ---- a kernel that clamps: a thread behind a FIFO ---------------------------------------------------------- */

struct clamp {
	char path[512];
	char wrote[256];
	const char *answer;
};

static void *clamping_kernel(void *arg)
{
	struct clamp *c = arg;
	size_t off = 0;
	ssize_t n;
	int fd;

	fd = open(c->path, O_RDONLY);
	if (fd < 0)
		return NULL;
	while ((n = read(fd, c->wrote + off, sizeof(c->wrote) - 1 - off)) > 0)
		off += (size_t)n;
	c->wrote[off] = '\0';
	close(fd);
	fd = open(c->path, O_WRONLY);
	if (fd < 0)
		return NULL;
	if (write(fd, c->answer, strlen(c->answer)) < 0)
		c->wrote[0] = '\0';
	close(fd);
	return NULL;
}

static void clamp_start(struct fx *f, const char *rel, const char *answer, struct clamp *c, pthread_t *t)
{
	char p[512];

	full(f, rel, p, sizeof(p));
	unlink(p);
	assert_int_equal(mkfifo(p, 0644), 0);
	strcpy(c->path, p);
	c->answer = answer;
	c->wrote[0] = '\0';
	assert_int_equal(pthread_create(t, NULL, clamping_kernel, c), 0);
}

/*
 * Wait for the "kernel" thread. When the driver stopped before the full write-then-read cycle, the thread is still
 * blocked in a FIFO open(): play the missing side (a writer, then a reader) so it ends and the test fails cleanly.
 */
static void clamp_finish(struct clamp *c, pthread_t t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2;
	if (pthread_timedjoin_np(t, NULL, &ts) == 0)
		return;
	for (int i = 0; i < 2; i++) {
		int fd = open(c->path, (i ? O_RDONLY : O_WRONLY) | O_NONBLOCK);

		usleep(100000);
		if (fd >= 0)
			close(fd);
	}
	pthread_join(t, NULL);
}

/* ---- helpers: CPU lists and kernel masks ----------------------------------------------------------------- */

static void test_cpulist(void **state)
{
	static const struct {
		const char *in;
		int r;
		const char *out;
	} cases[] = {
		{"", 0, ""},
		{"0", 0, "0"},
		{"0-3,8", 0, "0-3,8"},
		{"8,0-3", 0, "0-3,8"},
		{"0-3,2-5,6", 0, "0-6"},
		{"1,3,5", 0, "1,3,5"},
		{"8191", 0, "8191"},
		{"8192", -ERANGE, NULL},
		{"99999999999", -ERANGE, NULL},
		{"3-1", -EINVAL, NULL},
		{"1,,2", -EINVAL, NULL},
		{"1,", -EINVAL, NULL},
		{",1", -EINVAL, NULL},
		{"-1", -EINVAL, NULL},
		{"1-", -EINVAL, NULL},
		{"a", -EINVAL, NULL},
		{"0-7:2/4", -EINVAL, NULL},
		{" 1", -EINVAL, NULL},
	};
	struct knob_cpuset s;
	char buf[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = knob_cpulist_parse(cases[i].in, strlen(cases[i].in), &s);

		if (r != cases[i].r)
			fail_msg("'%s': %d, want %d", cases[i].in, r, cases[i].r);
		if (r == 0) {
			assert_int_equal(knob_cpulist_format(&s, buf, sizeof(buf)), 0);
			assert_string_equal(buf, cases[i].out);
		}
	}
	/* A list that does not fit the buffer is an error, not a cut. */
	knob_cpulist_parse("1,3,5,7,9", 9, &s);
	assert_int_equal(knob_cpulist_format(&s, buf, 6), -ERANGE);
	assert_string_equal(buf, "");
}

static void test_cpumask_format(void **state)
{
	static const struct {
		unsigned nbits;
		const char *cpus;
		int r;
		const char *mask;
	} cases[] = {
		{1, "", 0, "0"},
		{1, "0", 0, "1"},
		{2, "0-1", 0, "3"},
		{8, "", 0, "00"},
		{8, "0-3", 0, "0f"},
		{8, "0-7", 0, "ff"},
		{40, "0,39", 0, "80,00000001"},
		{40, "32-39", 0, "ff,00000000"},
		{64, "0-63", 0, "ffffffff,ffffffff"},
		{64, "63", 0, "80000000,00000000"},
		{64, "", 0, "00000000,00000000"},
		{100, "0-3,99", 0, "8,00000000,00000000,0000000f"},
		{100, "", 0, "0,00000000,00000000,00000000"},
		{100, "32", 0, "0,00000000,00000001,00000000"},
		{8, "8", -EINVAL, NULL},
		{0, "", -EINVAL, NULL},
		{8193, "", -EINVAL, NULL},
	};
	struct knob_cpuset s, back;
	char buf[2400];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r;

		assert_int_equal(knob_cpulist_parse(cases[i].cpus, strlen(cases[i].cpus), &s), 0);
		r = knob_cpumask_format(&s, cases[i].nbits, buf, sizeof(buf));
		if (r != cases[i].r)
			fail_msg("%u CPUs '%s': %d, want %d", cases[i].nbits, cases[i].cpus, r, cases[i].r);
		if (r < 0)
			continue;
		assert_string_equal(buf, cases[i].mask);
		/* and the kernel's text parses back to the same set */
		assert_int_equal(knob_cpumask_parse(buf, strlen(buf), &back), 0);
		assert_true(knob_cpuset_equal(&s, &back));
	}
	/* All 8192 CPUs: 256 groups. */
	knob_cpulist_parse("0-8191", 6, &s);
	assert_int_equal(knob_cpumask_format(&s, 8192, buf, sizeof(buf)), 0);
	assert_int_equal(strlen(buf), 256 * 9 - 1);
	assert_int_equal(knob_cpumask_format(&s, 8192, buf, 100), -ERANGE);
}

static void test_cpumask_parse(void **state)
{
	static const struct {
		const char *in;
		int r;
		const char *cpus;
	} cases[] = {
		{"0", 0, ""},
		{"ff", 0, "0-7"},
		{"FF", 0, "0-7"},
		{"80,00000001", 0, "0,39"},
		{"00000000,00000001", 0, "0"},
		{"8,00000000,00000000,0000000f", 0, "0-3,99"},
		{"1,0", 0, "32"},
		{"", -EINVAL, NULL},
		{",", -EINVAL, NULL},
		{"1,", -EINVAL, NULL},
		{",1", -EINVAL, NULL},
		{"123456789", -EINVAL, NULL},
		{"zz", -EINVAL, NULL},
		{"0x1", -EINVAL, NULL},
		{"1 ", -EINVAL, NULL},
	};
	struct knob_cpuset s;
	char buf[256], big[4096];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = knob_cpumask_parse(cases[i].in, strlen(cases[i].in), &s);

		if (r != cases[i].r)
			fail_msg("'%s': %d, want %d", cases[i].in, r, cases[i].r);
		if (r == 0) {
			knob_cpulist_format(&s, buf, sizeof(buf));
			assert_string_equal(buf, cases[i].cpus);
		}
	}
	/* 257 groups: more CPUs than any kernel has. */
	memset(big, 0, sizeof(big));
	for (size_t i = 0; i < 257; i++)
		strcat(big, i ? ",0" : "0");
	assert_int_equal(knob_cpumask_parse(big, strlen(big), &s), -ERANGE);
}

static void test_cpumap_split(void **state)
{
	static const struct {
		const char *in;
		int r;
		size_t n;
	} cases[] = {
		{"", 0, 0},
		{"45:0-3", 0, 1},
		{"45:0-3;46:4-7", 0, 2},
		{"0:;1:", 0, 2},
		{"46:0;45:1", -EINVAL, 0},
		{"45:0;45:1", -EINVAL, 0},
		{"45:0;", -EINVAL, 0},
		{";45:0", -EINVAL, 0},
		{"45", -EINVAL, 0},
		{":0", -EINVAL, 0},
		{"45:x", -EINVAL, 0},
		{"45:0 ", -EINVAL, 0},
		{"99999999999:0", -EINVAL, 0},
		{"1:0;2:0;3:0;4:0", -E2BIG, 0},
	};
	struct knob_map_entry e[3];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = knob_cpumap_split(cases[i].in, e, 3, &n);

		if (r != cases[i].r)
			fail_msg("'%s': %d, want %d", cases[i].in, r, cases[i].r);
		if (r == 0)
			assert_int_equal(n, cases[i].n);
	}
	assert_int_equal(knob_cpumap_split("45:0-3;46:", e, 3, &n), 0);
	assert_int_equal(e[0].key, 45);
	assert_int_equal(e[0].len, 3);
	assert_memory_equal(e[0].list, "0-3", 3);
	assert_int_equal(e[1].key, 46);
	assert_int_equal(e[1].len, 0);
}

/* ---- sysctl ---------------------------------------------------------------------------------------------- */

static void test_sysctl_read(void **state)
{
	struct fx *f = *state;
	static const struct {
		enum knob_type type;
		const char *kernel;
		int r;
		const char *value;
	} cases[] = {
		{KNOB_T_INT, "4096\n", 0, "4096"},
		{KNOB_T_INT, "-1\n", 0, "-1"},
		{KNOB_T_INT, "9223372036854775807\n", 0, "9223372036854775807"},
		{KNOB_T_INT, "-9223372036854775808\n", 0, "-9223372036854775808"},
		{KNOB_T_INT, "9223372036854775808\n", -ERANGE, NULL},
		{KNOB_T_INT, "18446744073709551615\n", -ERANGE, NULL},
		{KNOB_T_INT, "", -EINVAL, NULL},
		{KNOB_T_INT, "\n", -EINVAL, NULL},
		{KNOB_T_INT, "abc\n", -EINVAL, NULL},
		{KNOB_T_INT, "12abc\n", -EINVAL, NULL},
		{KNOB_T_INT, "+5\n", -EINVAL, NULL},
		{KNOB_T_INT, "1\t2\n", -EINVAL, NULL},
		{KNOB_T_INTVEC, "4096\t131072\t6291456\n", 0, "4096 131072 6291456"},
		{KNOB_T_INTVEC, "32768\t60999\n", 0, "32768 60999"},
		{KNOB_T_INTVEC, "7\n", 0, "7"},
		{KNOB_T_INTVEC, "1 2 3 4 5 6 7 8\n", 0, "1 2 3 4 5 6 7 8"},
		{KNOB_T_INTVEC, "1 2 3 4 5 6 7 8 9\n", -EINVAL, NULL},
		{KNOB_T_INTVEC, "4096\tx\t1\n", -EINVAL, NULL},
		{KNOB_T_ONOFF, "1\n", 0, "on"},
		{KNOB_T_ONOFF, "0\n", 0, "off"},
		{KNOB_T_ONOFF, "2\n", -EINVAL, NULL},
		{KNOB_T_ONOFF, "on\n", -EINVAL, NULL},
		{KNOB_T_ENUM, "cubic\n", 0, "cubic"},
		{KNOB_T_ENUM, "Cubic\n", -EINVAL, NULL},
		{KNOB_T_ENUM, "cubic reno\n", -EINVAL, NULL},
		{KNOB_T_CPUMAP, "1\n", -ENOTSUP, NULL},
		{KNOB_T_CPULIST, "1\n", -ENOTSUP, NULL},
	};
	char out[KNOB_VALUE_MAX], big[5000];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct knob *k = knob_for(f, "x", "sysctl", "net.ipv4.tcp_rmem", cases[i].type, "");
		int r;

		put(f, "/proc/sys/net/ipv4/tcp_rmem", cases[i].kernel);
		r = knob_read(k, out, sizeof(out));
		if (r != cases[i].r)
			fail_msg("case %zu '%s': %d, want %d", i, cases[i].kernel, r, cases[i].r);
		if (r == 0)
			assert_string_equal(out, cases[i].value);
	}
	/* more than any sysctl of ours prints */
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put(f, "/proc/sys/net/ipv4/tcp_rmem", big);
	assert_int_equal(knob_read(knob_for(f, "x", "sysctl", "net.ipv4.tcp_rmem", KNOB_T_INT, ""), out, sizeof(out)),
			 -EFBIG);
	/* the policy's name is the sysctl when the target is empty; missing is ENOENT */
	put(f, "/proc/sys/net/core/somaxconn", "4096\n");
	assert_int_equal(knob_read(knob_for(f, "net.core.somaxconn", "sysctl", "", KNOB_T_INT, ""), out, 8), 0);
	assert_string_equal(out, "4096");
	assert_int_equal(knob_read(knob_for(f, "net.core.somaxconn", "sysctl", "", KNOB_T_INT, ""), out, 4), -ERANGE);
	assert_int_equal(knob_read(knob_for(f, "net.core.nope", "sysctl", "", KNOB_T_INT, ""), out, 8), -ENOENT);
	/* sysctl(8)'s '/' for a '.' inside a component (a VLAN interface) */
	put(f, "/proc/sys/net/ipv4/conf/eth0.100/rp_filter", "2\n");
	assert_int_equal(knob_read(knob_for(f, "rp", "sysctl", "net.ipv4.conf.eth0/100.rp_filter", KNOB_T_INT, ""),
				   out, sizeof(out)), 0);
	assert_string_equal(out, "2");
}

static void test_sysctl_write(void **state)
{
	struct fx *f = *state;
	static const struct {
		enum knob_type type;
		const char *before, *value;
		int r;
		const char *after;
	} cases[] = {
		{KNOB_T_INT, "4096\n", "8192", 0, "8192\n"},
		{KNOB_T_INT, "4096\n", "100", 0, "100\n"},
		{KNOB_T_INT, "4096\n", "-1", 0, "-1\n"},
		{KNOB_T_INTVEC, "4096\t131072\t6291456\n", "4096 262144 8388608", 0, "4096\t262144\t8388608\n"},
		{KNOB_T_INTVEC, "32768\t60999\n", "1024 65535", 0, "1024\t65535\n"},
		{KNOB_T_ONOFF, "1\n", "off", 0, "0\n"},
		{KNOB_T_ONOFF, "0\n", "on", 0, "1\n"},
		{KNOB_T_ENUM, "cubic\n", "bbr", 0, "bbr\n"},
		/* refused before anything is written */
		{KNOB_T_ONOFF, "0\n", "1", -EINVAL, "0\n"},
		{KNOB_T_INT, "4096\n", "abc", -EINVAL, "4096\n"},
		{KNOB_T_INT, "4096\n", "", -EINVAL, "4096\n"},
		{KNOB_T_INT, "4096\n", "4096; reboot", -EINVAL, "4096\n"},
		{KNOB_T_INT, "4096\n", "1 2", -EINVAL, "4096\n"},
		{KNOB_T_INT, "4096\n", "99999999999999999999", -ERANGE, "4096\n"},
		{KNOB_T_INTVEC, "1\t2\n", "1 2 3 4 5 6 7 8 9", -EINVAL, "1\t2\n"},
		{KNOB_T_ENUM, "cubic\n", "bbr\nreno", -EINVAL, "cubic\n"},
		{KNOB_T_CPUMAP, "1\n", "0:1", -ENOTSUP, "1\n"},
	};
	char why[KNOB_WHY_MAX], out[KNOB_VALUE_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct knob *k = knob_for(f, "x", "sysctl", "net.ipv4.tcp_rmem", cases[i].type, "");
		int r;

		put(f, "/proc/sys/net/ipv4/tcp_rmem", cases[i].before);
		why[0] = 'x';
		r = wr(k, cases[i].value, why, sizeof(why));
		if (r != cases[i].r && !(cases[i].r == -ERANGE && r == -EINVAL))
			fail_msg("case %zu '%s': %d, want %d (%s)", i, cases[i].value, r, cases[i].r, why);
		assert_string_equal(get(f, "/proc/sys/net/ipv4/tcp_rmem"), cases[i].after);
		if (r == 0) {
			assert_string_equal(why, "");
			assert_int_equal(knob_read(k, out, sizeof(out)), 0);
			assert_string_equal(out, cases[i].value);
		} else {
			assert_true(strlen(why) > 0);
		}
	}
	/* a file that is not there is not created */
	assert_int_equal(wr(knob_for(f, "net.core.nope", "sysctl", "", KNOB_T_INT, ""), "1", why, sizeof(why)),
			 -ENOENT);
	assert_int_equal(access(f->root, F_OK), 0);
	{
		char p[512];

		full(f, "/proc/sys/net/core/nope", p, sizeof(p));
		assert_int_equal(access(p, F_OK), -1);
	}
}

static void test_sysctl_names(void **state)
{
	struct fx *f = *state;
	static const char *const bad[] = {
		"", ".", "..", "net..core", "net.core.", ".net", "../etc/passwd", "net.//.x", "net./.x",
		"net.core.somaxconn\n", "net.co re", "net.core.*", "net.core.somaxconn;x",
	};
	char why[KNOB_WHY_MAX], out[64];

	put(f, "/proc/sys/net/core/somaxconn", "4096\n");
	put(f, "/etc/passwd", "root:x:0:0\n");
	put(f, "/proc/sys/x", "5\n");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct knob *k = knob_for(f, "n", "sysctl", "", KNOB_T_INT, "");

		strcpy(f->pol.target, bad[i]);
		if (!bad[i][0])
			strcpy(f->pol.name, ""); /* no target and no name */
		if (knob_read(k, out, sizeof(out)) != -EINVAL)
			fail_msg("'%s' read", bad[i]);
		if (wr(k, "1", why, sizeof(why)) != -EINVAL)
			fail_msg("'%s' write", bad[i]);
		assert_int_equal(k->ops->probe(k, why, sizeof(why)), -ENOTSUP);
	}
	assert_string_equal(get(f, "/etc/passwd"), "root:x:0:0\n");
	assert_string_equal(get(f, "/proc/sys/x"), "5\n");
}

static void test_sysctl_probe(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX];
	struct knob *k;

	put(f, "/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
	k = knob_for(f, "net.ipv4.tcp_rmem", "sysctl", "", KNOB_T_INTVEC, "");
	f->pol.nelem = 3;
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), 0);
	f->pol.nelem = 2;
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "3 elements"));
	k = knob_for(f, "net.ipv4.tcp_wmem", "sysctl", "", KNOB_T_INTVEC, "");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "not on this kernel"));
	k = knob_for(f, "net.ipv4.tcp_rmem", "sysctl", "", KNOB_T_INT, "");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), -ENOTSUP);
	k = knob_for(f, "net.ipv4.tcp_rmem", "sysctl", "", KNOB_T_CPUMAP, "");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), -ENOTSUP);
}

/*
 * What a container shows the agent, for real (issue 23: its knobs read "not on this kernel" and "kernel built
 * without CONFIG_RPS" where the host has them): a network namespace of its own, where host-wide net.* sysctls are
 * absent, and /proc/sys mounted read-only, as systemd-nspawn does. A child enters a new network and mount
 * namespace; the probes must say which refused. Under a fake root, a tree whose net/core has netdev_max_backlog is a
 * host's, where a missing sysctl is not on this kernel.
 */
static void test_container_view(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX];
	struct knob *k;
	pid_t pid;
	int status;

	put(f, "/proc/sys/net/core/somaxconn", "4096\n");
	put(f, "/proc/sys/net/core/netdev_max_backlog", "1000\n");
	k = knob_for(f, "net.core.netdev_budget", "sysctl", "", KNOB_T_INT, "");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, "net.core.netdev_budget: not on this kernel");
	k = knob_for(f, "rfs", "rps_flows", "", KNOB_T_INT, "");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "CONFIG_RPS"));
	if (geteuid() != 0) {
		testskip("needs root (a network and a mount namespace)");
		return;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int code = 0;

		f->env.root = "/";
		if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(100);
		k = knob_for(f, "net.core.netdev_budget", "sysctl", "", KNOB_T_INT, "");
		if (k->ops->probe(k, why, sizeof(why)) != -ENOENT || !strstr(why, "not in this network namespace"))
			code |= 1;
		k = knob_for(f, "rfs", "rps_flows", "", KNOB_T_INT, "");
		if (k->ops->probe(k, why, sizeof(why)) != -ENOENT || !strstr(why, "not in this network namespace"))
			code |= 2;
		k = knob_for(f, "net.core.somaxconn", "sysctl", "", KNOB_T_INT, "");
		if (k->ops->probe(k, why, sizeof(why)) != 0)
			code |= 4; /* the namespace's own somaxconn is writable */
		if (mount("/proc/sys", "/proc/sys", NULL, MS_BIND | MS_REC, NULL) < 0 ||
		    mount(NULL, "/proc/sys", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
			_exit(101);
		if (k->ops->probe(k, why, sizeof(why)) != -ENOTSUP ||
		    !strstr(why, "not writable: refused: /proc/sys is mounted read-only here"))
			code |= 8;
		if (wr(k, "4096", why, sizeof(why)) != -EROFS || !strstr(why, "/proc/sys is mounted read-only here"))
			code |= 16;
		_exit(code);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The kernel clamps: what reads back is not what was written. */
static void test_sysctl_readback_differs(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX];
	struct clamp c;
	pthread_t t;

	put(f, "/proc/sys/net/core/somaxconn", "");
	clamp_start(f, "/proc/sys/net/core/somaxconn", "1024\n", &c, &t);
	assert_int_equal(wr(knob_for(f, "net.core.somaxconn", "sysctl", "", KNOB_T_INT, ""), "1000", why, sizeof(why)),
			 -EIO);
	clamp_finish(&c, t);
	assert_string_equal(c.wrote, "1000\n");
	assert_string_equal(why, "wrote 1000, reads back 1024");
	assert_int_equal(knob_errclass(-EIO), KNOB_ERR_OTHER);

	/* a vector, written with the kernel's tabs, read back with one element changed */
	put(f, "/proc/sys/net/ipv4/tcp_rmem", "");
	clamp_start(f, "/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t4194304\n", &c, &t);
	assert_int_equal(wr(knob_for(f, "net.ipv4.tcp_rmem", "sysctl", "", KNOB_T_INTVEC, ""), "4096 131072 8388608",
			    why, sizeof(why)), -EIO);
	clamp_finish(&c, t);
	assert_string_equal(c.wrote, "4096\t131072\t8388608\n");
	assert_string_equal(why, "wrote 4096 131072 8388608, reads back 4096 131072 4194304");

	/* garbage read back */
	clamp_start(f, "/proc/sys/net/ipv4/tcp_rmem", "\x01\x02", &c, &t);
	assert_int_equal(wr(knob_for(f, "net.ipv4.tcp_rmem", "sysctl", "", KNOB_T_INTVEC, ""), "1 2 3", why,
			    sizeof(why)), -EIO);
	clamp_finish(&c, t);
	assert_non_null(strstr(why, "cannot read it back"));
}

/*
 * EACCES for real: root ignores file modes, so a child drops to nobody first; the driver must say so, not crash,
 * and the scheduler-slice probe must name the refusal. Without root the modes apply as they are.
 */
static void test_eacces(void **state)
{
	struct fx *f = *state;
	char p[512];
	pid_t pid;
	int status;

	put(f, "/proc/sys/net/core/somaxconn", "4096\n");
	put(f, "/proc/sys/kernel/sched_min_granularity_ns", "3000000\n");
	full(f, "/proc/sys/net/core/somaxconn", p, sizeof(p));
	assert_int_equal(chmod(p, 0444), 0);
	full(f, "/proc/sys/kernel/sched_min_granularity_ns", p, sizeof(p));
	assert_int_equal(chmod(p, 0444), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char why[KNOB_WHY_MAX] = "", out[64];
		struct knob *k;
		int code = 0;

		if (geteuid() == 0 && (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
			_exit(10);
		k = knob_for(f, "net.core.somaxconn", "sysctl", "", KNOB_T_INT, "");
		if (knob_read(k, out, sizeof(out)) != 0 || strcmp(out, "4096") != 0)
			code |= 1;
		if (wr(k, "8192", why, sizeof(why)) != -EACCES || !strstr(why, "Permission denied"))
			code |= 2;
		if (k->ops->probe(k, why, sizeof(why)) != -ENOTSUP || !strstr(why, "not writable") ||
		    !strstr(why, "Permission denied: the agent runs as uid 65534, not root"))
			code |= 4;
		k = knob_for(f, "sched.base_slice", "sched_slice", "", KNOB_T_INT, "");
		if (k->ops->probe(k, why, sizeof(why)) != -ENOTSUP || !strstr(why, "Permission denied"))
			code |= 8;
		_exit(code);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(get(f, "/proc/sys/net/core/somaxconn"), "4096\n");
	assert_int_equal(knob_errclass(-EACCES), KNOB_ERR_READONLY);
}

/* ---- IRQ affinity ---------------------------------------------------------------------------------------- */

static void irq_tree(struct fx *f)
{
	static const unsigned irqs[] = {11, 37, 38, 39, 40, 41, 42, 99};
	char lnk[512];

	/* eth0: a PCI NIC, vectors in device/msi_irqs; 42 has no handler */
	mk(f, "/sys/class/net/eth0/device/msi_irqs");
	put(f, "/sys/class/net/eth0/device/msi_irqs/40", "msix\n");
	put(f, "/sys/class/net/eth0/device/msi_irqs/41", "msix\n");
	put(f, "/sys/class/net/eth0/device/msi_irqs/42", "msix\n");
	put(f, "/sys/kernel/irq/40/actions", "eth0-TxRx-0\n");
	put(f, "/sys/kernel/irq/41/actions", "eth0-TxRx-1\n");
	put(f, "/sys/kernel/irq/42/actions", "\n");
	/* eth1: virtio-net, vectors on the virtio PCI function (device/..), 37 is the config vector */
	mk(f, "/sys/class/net/eth1/device");
	full(f, "/sys/class/net/eth1/device/subsystem", lnk, sizeof(lnk));
	assert_int_equal(symlink("../../../../bus/virtio", lnk), 0);
	mk(f, "/sys/class/net/eth1/msi_irqs");
	put(f, "/sys/class/net/eth1/msi_irqs/37", "msix\n");
	put(f, "/sys/class/net/eth1/msi_irqs/38", "msix\n");
	put(f, "/sys/class/net/eth1/msi_irqs/39", "msix\n");
	put(f, "/sys/kernel/irq/37/actions", "virtio2-config\n");
	put(f, "/sys/kernel/irq/38/actions", "virtio2-input.0\n");
	put(f, "/sys/kernel/irq/39/actions", "virtio2-output.0\n");
	/* eth2: INTx, named in /proc/interrupts only */
	mk(f, "/sys/class/net/eth2/device");
	/* eth3: a PCI NIC without msi_irqs whose parent (a bridge) has some: not its own */
	mk(f, "/sys/class/net/eth3/device");
	full(f, "/sys/class/net/eth3/device/subsystem", lnk, sizeof(lnk));
	assert_int_equal(symlink("../../../bus/pci", lnk), 0);
	put(f, "/sys/class/net/eth3/msi_irqs/99", "msi\n");
	put(f, "/proc/interrupts", "           CPU0       CPU1\n"
				   "  0:         36          0   IO-APIC   2-edge      timer\n"
				   " 11:       1200         33   IO-APIC  11-fasteoi   uhci_hcd:usb1, eth2\n"
				   " 12:          5          0   IO-APIC  12-fasteoi   eth20\n"
				   " 13:          5          0   IO-APIC  13-fasteoi   xeth2\n"
				   "NMI:          0          0   Non-maskable interrupts\n"
				   "ERR:          0\n");
	for (size_t i = 0; i < sizeof(irqs) / sizeof(irqs[0]); i++) {
		putf(f, "0-7\n", "/proc/irq/%u/smp_affinity_list", irqs[i]);
		putf(f, "1\n", "/proc/irq/%u/effective_affinity_list", irqs[i]);
	}
	put(f, "/sys/devices/system/cpu/possible", "0-7\n");
	put(f, "/proc/1/comm", "systemd\n");
	put(f, "/proc/400/comm", "nginx\n");
}

static void test_irq_read(void **state)
{
	struct fx *f = *state;
	static const struct {
		const char *dev;
		int r;
		const char *value;
	} cases[] = {
		{"eth0", 0, "40:0-7;41:0-7"},
		{"eth1", 0, "38:0-7;39:0-7"},
		{"eth2", 0, "11:0-7"},
		{"eth3", -ENOENT, NULL},
		{"eth9", -ENOENT, NULL},
	};
	char out[KNOB_VALUE_MAX], name[64], why[KNOB_WHY_MAX];

	irq_tree(f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct knob *k;
		int r;

		snprintf(name, sizeof(name), "irq_affinity.%s", cases[i].dev);
		k = knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP, name);
		r = knob_read(k, out, sizeof(out));
		if (r != cases[i].r)
			fail_msg("%s: %d, want %d", cases[i].dev, r, cases[i].r);
		if (r == 0) {
			assert_string_equal(out, cases[i].value);
			assert_int_equal(k->ops->probe(k, why, sizeof(why)), 0);
		} else {
			assert_int_equal(k->ops->probe(k, why, sizeof(why)), -ENOENT);
			assert_non_null(strstr(why, "no queue IRQs"));
		}
	}
	/* kernel text we cannot take is an error, not a guess */
	put(f, "/proc/irq/38/smp_affinity_list", "0-3:x\n");
	assert_int_equal(knob_read(knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP,
					    "irq_affinity.eth1"), out, sizeof(out)), -EINVAL);
	/* a knob whose name does not carry an interface */
	assert_int_equal(knob_read(knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP, "irq_affinity"), out,
				   sizeof(out)), -EINVAL);
	assert_int_equal(knob_read(knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP,
					    "irq_affinity.../x"), out, sizeof(out)), -EINVAL);
}

static void test_irq_write(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX], out[KNOB_VALUE_MAX];
	struct knob *k;

	irq_tree(f);
	k = knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP, "irq_affinity.eth1");
	put(f, "/proc/irq/38/effective_affinity_list", "3\n");
	put(f, "/proc/irq/39/effective_affinity_list", "4\n");
	assert_int_equal(wr(k, "38:2-3;39:4", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/proc/irq/38/smp_affinity_list"), "2-3\n");
	assert_string_equal(get(f, "/proc/irq/39/smp_affinity_list"), "4\n");
	assert_string_equal(get(f, "/proc/irq/37/smp_affinity_list"), "0-7\n");
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "38:2-3;39:4");

	/* a partial map writes only the IRQs it names */
	assert_int_equal(wr(k, "39:4-5", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/proc/irq/38/smp_affinity_list"), "2-3\n");
	assert_string_equal(get(f, "/proc/irq/39/smp_affinity_list"), "4-5\n");

	/* the effective affinity outside the written list */
	put(f, "/proc/irq/38/effective_affinity_list", "0\n");
	assert_int_equal(wr(k, "38:2-3", why, sizeof(why)), -EIO);
	assert_non_null(strstr(why, "IRQ 38: wrote 2-3, effective affinity is 0"));
	/* no effective_affinity_list (old kernel): the re-read of smp_affinity_list is the verify */
	rm(f, "/proc/irq/38/effective_affinity_list");
	assert_int_equal(wr(k, "38:6", why, sizeof(why)), 0);
	/* an empty effective list (IRQ not started) is within anything */
	put(f, "/proc/irq/38/effective_affinity_list", "\n");
	assert_int_equal(wr(k, "38:5", why, sizeof(why)), 0);

	/* values refused before anything is written */
	static const struct {
		const char *value;
		int r;
	} bad[] = {
		{"40:1", -EDOM},         /* eth0's IRQ */
		{"37:1", -EDOM},         /* the config vector is not a queue IRQ */
		{"38:1;40:1", -EDOM},    /* nothing written, not even 38 */
		{"38:8", -EDOM},         /* 8 CPUs: 0-7 */
		{"38:", -EDOM},          /* an IRQ needs a CPU */
		{"", -EINVAL},
		{"38:1;", -EINVAL},
		{"39:1;38:1", -EINVAL},
		{"38:1-0", -EINVAL},
		{"38=1", -EINVAL},
		{"38:1\n39:1", -EINVAL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = wr(k, bad[i].value, why, sizeof(why));

		if (r != bad[i].r)
			fail_msg("'%s': %d, want %d", bad[i].value, r, bad[i].r);
		assert_true(strlen(why) > 0);
		assert_string_equal(get(f, "/proc/irq/38/smp_affinity_list"), "5\n");
		assert_string_equal(get(f, "/proc/irq/40/smp_affinity_list"), "0-7\n");
	}
	assert_int_equal(knob_errclass(-EDOM), KNOB_ERR_OTHER);

	/* INTx through /proc/interrupts */
	k = knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP, "irq_affinity.eth2");
	put(f, "/proc/irq/11/effective_affinity_list", "0\n");
	assert_int_equal(wr(k, "11:0-1", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/proc/irq/11/smp_affinity_list"), "0-1\n");

	/* a row longer than any kernel prints (2 MiB, naming eth2) is skipped whole; the rows after it count */
	{
		char p[512];
		FILE *fp;

		full(f, "/proc/interrupts", p, sizeof(p));
		fp = fopen(p, "w");
		assert_non_null(fp);
		fputs(" 14: ", fp);
		for (int i = 0; i < (2 << 20) / 8; i++)
			fputs("0000000 ", fp);
		fputs(" eth2\n 11: 1 2 IO-APIC 11-fasteoi eth2\n", fp);
		assert_int_equal(fclose(fp), 0);
		putf(f, "0\n", "/proc/irq/%u/smp_affinity_list", 14);
		assert_int_equal(knob_read(k, out, sizeof(out)), 0);
		assert_string_equal(out, "11:0-1");
	}
}

static void test_irq_readback_differs(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX];
	struct clamp c;
	pthread_t t;

	irq_tree(f);
	rm(f, "/proc/irq/40/effective_affinity_list");
	clamp_start(f, "/proc/irq/40/smp_affinity_list", "0-1\n", &c, &t);
	assert_int_equal(wr(knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP, "irq_affinity.eth0"),
			    "40:2-3", why, sizeof(why)), -EIO);
	clamp_finish(&c, t);
	assert_string_equal(c.wrote, "2-3\n");
	assert_string_equal(why, "IRQ 40: wrote 2-3, reads back 0-1");
}

/*
 * A managed IRQ on the real kernel (a virtio-blk or NVMe I/O queue's): the kernel refuses user affinity at write()
 * (EIO, or EPERM since 6.x), which must come out as unsupported, not as a lack of privilege. The fake root points
 * at the real /proc/irq and /sys/kernel/irq; the value written is the one read, so nothing would change even on a
 * kernel that accepted it. Root only; skipped without such an IRQ.
 */
static void test_irq_managed_real(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX], out[KNOB_VALUE_MAX], p[512], act[128], rel[128];
	struct dirent *de;
	unsigned irq = 0;
	DIR *d;
	int r;

	if (geteuid() != 0 || !(d = opendir("/sys/kernel/irq"))) {
		testskip(geteuid() != 0 ? "needs root" : "no /sys/kernel/irq");
		return;
	}
	while (!irq && (de = readdir(d))) {
		unsigned a, b;
		FILE *fp;

		snprintf(p, sizeof(p), "/sys/kernel/irq/%.32s/actions", de->d_name);
		fp = fopen(p, "r");
		if (!fp)
			continue;
		if (fgets(act, sizeof(act), fp) &&
		    (strstr(act, "-req.") || (sscanf(act, "nvme%uq%u", &a, &b) == 2 && b > 0)))
			irq = (unsigned)atoi(de->d_name);
		fclose(fp);
	}
	closedir(d);
	if (!irq) {
		/* A VM with virtio-net only, no virtio-blk or NVMe queue: the CI machine may be one. */
		testskip_allowed("no managed IRQ (virtio-blk or NVMe queue) on this machine");
		return;
	}
	mk(f, "/proc");
	mk(f, "/sys/kernel");
	full(f, "/proc/irq", p, sizeof(p));
	assert_int_equal(symlink("/proc/irq", p), 0);
	full(f, "/sys/kernel/irq", p, sizeof(p));
	assert_int_equal(symlink("/sys/kernel/irq", p), 0);
	snprintf(rel, sizeof(rel), "/sys/class/net/blk0/device/msi_irqs/%u", irq);
	put(f, rel, "msix\n");
	struct knob *k = knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP, "irq_affinity.blk0");
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	r = wr(k, out, why, sizeof(why));
	if (r == 0) {
		testskip_allowed("the queue IRQ took the affinity written: not managed on this kernel");
		return;
	}
	assert_int_equal(r, -ENOTSUP);
	assert_non_null(strstr(why, "does not let user space set its affinity"));
	assert_int_equal(knob_errclass(r), KNOB_ERR_UNSUPPORTED);
}

static void test_irqbalance(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX];
	struct knob *k;

	irq_tree(f);
	k = knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP, "irq_affinity.eth1");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), 0);
	put(f, "/proc/812/comm", "irqbalance\n");
	put(f, "/proc/813/comm", "irqbalance2\n");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), -EBUSY);
	assert_string_equal(why, "irqbalance is running (pid 812)");
	assert_int_equal(wr(k, "38:1", why, sizeof(why)), -EBUSY);
	assert_string_equal(why, "irqbalance is running (pid 812)");
	assert_string_equal(get(f, "/proc/irq/38/smp_affinity_list"), "0-7\n");
	assert_int_equal(knob_errclass(-EBUSY), KNOB_ERR_RETRY);
	rm(f, "/proc/812/comm");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), 0);
	assert_int_equal(wr(k, "38:1", why, sizeof(why)), 0);
}

/* ---- RPS ------------------------------------------------------------------------------------------------- */

static void test_rps(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX], out[KNOB_VALUE_MAX];
	struct knob *k;

	mk(f, "/sys/class/net/eth0/device");
	put(f, "/sys/class/net/eth0/queues/rx-0/rps_cpus", "00\n");
	put(f, "/sys/class/net/eth0/queues/rx-1/rps_cpus", "00\n");
	mk(f, "/sys/class/net/eth0/queues/tx-0");
	put(f, "/sys/devices/system/cpu/possible", "0-7\n");
	k = knob_for(f, "rps", "rps", "*", KNOB_T_CPUMAP, "rps.eth0");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), 0);
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "0:;1:");
	assert_int_equal(wr(k, "0:0-3;1:4-7", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/sys/class/net/eth0/queues/rx-0/rps_cpus"), "0f\n");
	assert_string_equal(get(f, "/sys/class/net/eth0/queues/rx-1/rps_cpus"), "f0\n");
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "0:0-3;1:4-7");
	/* RPS off for one queue */
	assert_int_equal(wr(k, "1:", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/sys/class/net/eth0/queues/rx-1/rps_cpus"), "00\n");
	/* refused before writing */
	assert_int_equal(wr(k, "2:0", why, sizeof(why)), -EDOM);
	assert_int_equal(wr(k, "0:8", why, sizeof(why)), -EDOM);
	assert_int_equal(wr(k, "0:0;1:9", why, sizeof(why)), -EDOM);
	assert_int_equal(wr(k, "0:x", why, sizeof(why)), -EINVAL);
	assert_string_equal(get(f, "/sys/class/net/eth0/queues/rx-0/rps_cpus"), "0f\n");

	/* the kernel's mask format for several host sizes, through the driver */
	static const struct {
		const char *possible, *value, *file;
	} sizes[] = {
		{"0\n", "0:0", "1\n"},
		{"0-7\n", "0:0", "01\n"},
		{"0-39\n", "0:0,39", "80,00000001\n"},
		{"0-63\n", "0:0,32", "00000001,00000001\n"},
		{"0-99\n", "0:0-3,99", "8,00000000,00000000,0000000f\n"},
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		put(f, "/sys/devices/system/cpu/possible", sizes[i].possible);
		assert_int_equal(wr(k, sizes[i].value, why, sizeof(why)), 0);
		assert_string_equal(get(f, "/sys/class/net/eth0/queues/rx-0/rps_cpus"), sizes[i].file);
		assert_int_equal(knob_read(k, out, sizeof(out)), 0);
		assert_memory_equal(out, sizes[i].value, strlen(sizes[i].value));
	}
	/* without cpu/possible the width comes from the mask the file shows (40 CPUs) */
	rm(f, "/sys/devices/system/cpu/possible");
	put(f, "/sys/class/net/eth0/queues/rx-0/rps_cpus", "00,00000000\n");
	assert_int_equal(wr(k, "0:1", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/sys/class/net/eth0/queues/rx-0/rps_cpus"), "00,00000002\n");
	assert_int_equal(wr(k, "0:40", why, sizeof(why)), -EDOM);

	/* no rps_cpus: a kernel without CONFIG_RPS */
	mk(f, "/sys/class/net/eth5/device");
	mk(f, "/sys/class/net/eth5/queues/rx-0");
	k = knob_for(f, "rps", "rps", "*", KNOB_T_CPUMAP, "rps.eth5");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "CONFIG_RPS"));
}

static void test_rps_readback_differs(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX];
	struct clamp c;
	pthread_t t;

	mk(f, "/sys/class/net/eth0/device");
	put(f, "/sys/class/net/eth0/queues/rx-0/rps_cpus", "00\n");
	put(f, "/sys/devices/system/cpu/possible", "0-7\n");
	/* CPUs 1-3 isolated: the kernel keeps CPU 0 only */
	clamp_start(f, "/sys/class/net/eth0/queues/rx-0/rps_cpus", "01\n", &c, &t);
	assert_int_equal(wr(knob_for(f, "rps", "rps", "*", KNOB_T_CPUMAP, "rps.eth0"), "0:0-3", why, sizeof(why)),
			 -EIO);
	clamp_finish(&c, t);
	assert_string_equal(c.wrote, "0f\n");
	assert_string_equal(why, "eth0 rx-0: wrote 0-3, reads back 0");
}

static void test_rps_flows(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX], out[64];
	struct knob *k;

	put(f, "/proc/sys/net/core/rps_sock_flow_entries", "0\n");
	mk(f, "/sys/class/net/eth0/device");
	mk(f, "/sys/class/net/eth1/device");
	for (unsigned q = 0; q < 4; q++)
		putf(f, "0\n", "/sys/class/net/eth0/queues/rx-%u/rps_flow_cnt", q);
	for (unsigned q = 0; q < 6; q++)
		putf(f, "0\n", "/sys/class/net/eth1/queues/rx-%u/rps_flow_cnt", q);
	put(f, "/sys/class/net/lo/queues/rx-0/rps_flow_cnt", "0\n");
	k = knob_for(f, "rfs", "rps_flows", "", KNOB_T_INT, "");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), 0);
	assert_int_equal(wr(k, "32768", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/proc/sys/net/core/rps_sock_flow_entries"), "32768\n");
	for (unsigned q = 0; q < 4; q++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "/sys/class/net/eth0/queues/rx-%u/rps_flow_cnt", q);
		assert_string_equal(get(f, rel), "8192\n"); /* 32768 / 4 */
	}
	for (unsigned q = 0; q < 6; q++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "/sys/class/net/eth1/queues/rx-%u/rps_flow_cnt", q);
		assert_string_equal(get(f, rel), "8192\n"); /* 32768 / 6 = 5461, rounded up */
	}
	assert_string_equal(get(f, "/sys/class/net/lo/queues/rx-0/rps_flow_cnt"), "0\n");
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "32768");
	/* fewer entries than queues: one each */
	assert_int_equal(wr(k, "4", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/sys/class/net/eth1/queues/rx-5/rps_flow_cnt"), "1\n");
	/* refused: the kernel would round, or its limit */
	static const struct {
		const char *v;
		int r;
	} bad[] = {{"1000", -EDOM}, {"-4", -EDOM}, {"1073741824", -EDOM}, {"abc", -EINVAL}, {"", -EINVAL}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(wr(k, bad[i].v, why, sizeof(why)), bad[i].r);
		assert_string_equal(get(f, "/proc/sys/net/core/rps_sock_flow_entries"), "4\n");
	}
	/* off, and only the NICs the target names */
	k = knob_for(f, "rfs", "rps_flows", "eth0", KNOB_T_INT, "");
	assert_int_equal(wr(k, "0", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/sys/class/net/eth0/queues/rx-3/rps_flow_cnt"), "0\n");
	assert_string_equal(get(f, "/sys/class/net/eth1/queues/rx-3/rps_flow_cnt"), "1\n");
}

/* A queue that does not keep the count it was given. */
static void test_rps_flows_readback_differs(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX];
	struct clamp c;
	pthread_t t;

	put(f, "/proc/sys/net/core/rps_sock_flow_entries", "0\n");
	mk(f, "/sys/class/net/eth0/device");
	put(f, "/sys/class/net/eth0/queues/rx-0/rps_flow_cnt", "0\n");
	clamp_start(f, "/sys/class/net/eth0/queues/rx-0/rps_flow_cnt", "0\n", &c, &t);
	assert_int_equal(wr(knob_for(f, "rfs", "rps_flows", "", KNOB_T_INT, ""), "1024", why, sizeof(why)), -EIO);
	clamp_finish(&c, t);
	assert_string_equal(c.wrote, "1024\n");
	assert_non_null(strstr(why, "rx-0/rps_flow_cnt: wrote 1024, reads back 0"));
}

/* ---- scheduler slice ------------------------------------------------------------------------------------- */

#define PROC_GRAN "/proc/sys/kernel/sched_min_granularity_ns"
#define DBG_SLICE "/sys/kernel/debug/sched/base_slice_ns"
#define DBG_GRAN "/sys/kernel/debug/sched/min_granularity_ns"

static void test_sched_discovery(void **state)
{
	struct fx *f = *state;
	static const struct {
		const char *proc, *slice, *gran; /* contents, NULL = absent */
		bool debugfs;                    /* something else under /sys/kernel/debug */
		int r;
		const char *value, *why;
	} cases[] = {
		{"3000000\n", NULL, NULL, false, 0, "3000000", NULL},
		{"3000000\n", "700000\n", NULL, true, 0, "3000000", NULL},
		{NULL, "700000\n", "750000\n", true, 0, "700000", NULL},
		{NULL, NULL, "750000\n", true, 0, "750000", NULL},
		{NULL, "garbage\n", "750000\n", true, 0, "750000", NULL},
		{NULL, NULL, NULL, false, -ENOTSUP, NULL, "debugfs is not mounted"},
		{NULL, NULL, NULL, true, -ENOTSUP, NULL, "no scheduler slice knob"},
		{NULL, "garbage\n", NULL, true, -ENOTSUP, NULL, "base_slice_ns: Invalid argument"},
	};
	char why[KNOB_WHY_MAX], out[64], p[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct knob *k = knob_for(f, "sched.base_slice", "sched_slice", "", KNOB_T_INT, "");
		int r;

		full(f, "/proc", p, sizeof(p));
		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		full(f, "/sys", p, sizeof(p));
		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		mk(f, "/sys/kernel/debug");
		mk(f, "/proc/sys/kernel");
		if (cases[i].proc)
			put(f, PROC_GRAN, cases[i].proc);
		if (cases[i].slice)
			put(f, DBG_SLICE, cases[i].slice);
		if (cases[i].gran)
			put(f, DBG_GRAN, cases[i].gran);
		if (cases[i].debugfs)
			mk(f, "/sys/kernel/debug/tracing");
		why[0] = '\0';
		r = k->ops->probe(k, why, sizeof(why));
		if (r != cases[i].r)
			fail_msg("case %zu: %d, want %d (%s)", i, r, cases[i].r, why);
		if (r == 0) {
			assert_int_equal(knob_read(k, out, sizeof(out)), 0);
			assert_string_equal(out, cases[i].value);
		} else {
			if (!strstr(why, cases[i].why))
				fail_msg("case %zu: '%s' lacks '%s'", i, why, cases[i].why);
			assert_int_equal(knob_read(k, out, sizeof(out)), -ENOTSUP);
			assert_int_equal(wr(k, "1000000", why, sizeof(why)), -ENOTSUP);
			assert_int_equal(knob_errclass(r), KNOB_ERR_UNSUPPORTED);
		}
	}
}

static void test_sched_write(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX], out[64];
	struct knob *k;

	put(f, DBG_SLICE, "3000000\n");
	put(f, DBG_GRAN, "3000000\n"); /* never both on a real kernel: the newer wins */
	k = knob_for(f, "sched.base_slice", "sched_slice", "", KNOB_T_INT, "");
	assert_int_equal(wr(k, "1500000", why, sizeof(why)), 0);
	assert_string_equal(get(f, DBG_SLICE), "1500000\n");
	assert_string_equal(get(f, DBG_GRAN), "3000000\n");
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "1500000");
	assert_int_equal(wr(k, "0", why, sizeof(why)), -EINVAL);
	assert_int_equal(wr(k, "-5", why, sizeof(why)), -EINVAL);
	assert_int_equal(wr(k, "1.5ms", why, sizeof(why)), -EINVAL);
	assert_string_equal(get(f, DBG_SLICE), "1500000\n");
}

/* ---- dry run, errno classes, the driver table, instantiation --------------------------------------------- */

static void test_dry_run(void **state)
{
	struct fx *f = *state;
	char why[KNOB_WHY_MAX], out[KNOB_VALUE_MAX], p[512], big[KNOB_VALUE_MAX + 8];
	struct stat before, after;
	struct knob *k;

	put(f, "/proc/sys/net/core/somaxconn", "4096\n");
	full(f, "/proc/sys/net/core/somaxconn", p, sizeof(p));
	assert_int_equal(chmod(p, 0644), 0);
	assert_int_equal(stat(p, &before), 0);
	f->env.dry_run = true;
	k = knob_made(f, "net.core.somaxconn", "sysctl", "", KNOB_T_INT);
	/* the backend reports its driver's kind (the API lists it) */
	assert_string_equal(k->ops->kind, "sysctl");
	assert_ptr_not_equal(k->ops, &knob_sysctl_ops);
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "4096");
	put(f, "/proc/sys/net/core/somaxconn", "4000\n");
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "4000");
	put(f, "/proc/sys/net/core/somaxconn", "4096\n");
	assert_int_equal(stat(p, &before), 0);
	assert_int_equal(wr(k, "8192", why, sizeof(why)), 0);
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "8192");
	assert_int_equal(stat(p, &after), 0);
	assert_string_equal(get(f, "/proc/sys/net/core/somaxconn"), "4096\n");
	assert_int_equal(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
	assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
	assert_int_equal(knob_read(k, out, 4), -ERANGE);
	/* a knob whose file does not even exist, and an IRQ knob: nothing is touched, nothing is created */
	assert_int_equal(wr(knob_made(f, "net.core.nope", "sysctl", "", KNOB_T_INT), "1", why, sizeof(why)), 0);
	full(f, "/proc/sys/net/core/nope", p, sizeof(p));
	assert_int_equal(access(p, F_OK), -1);
	irq_tree(f);
	k = knob_for(f, "irq_affinity", "irq_affinity", "*", KNOB_T_CPUMAP, "irq_affinity.eth0");
	assert_int_equal(knob_dry_wrap(k), 0);
	assert_int_equal(knob_dry_wrap(k), -EINVAL); /* once */
	assert_int_equal(wr(k, "40:1", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/proc/irq/40/smp_affinity_list"), "0-7\n");
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "40:1");
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(wr(k, big, why, sizeof(why)), -EINVAL);
	/* not in dry run: the same call writes */
	f->env.dry_run = false;
	k = knob_made(f, "net.core.somaxconn", "sysctl", "", KNOB_T_INT);
	assert_ptr_equal(k->ops, &knob_sysctl_ops);
	assert_int_equal(wr(k, "8192", why, sizeof(why)), 0);
	assert_string_equal(get(f, "/proc/sys/net/core/somaxconn"), "8192\n");
}

static void test_errclass(void **state)
{
	static const struct {
		int r;
		enum knob_errclass c;
	} cases[] = {
		{0, KNOB_ERR_NONE},
		{-EBUSY, KNOB_ERR_RETRY},
		{-EAGAIN, KNOB_ERR_RETRY},
		{-EINTR, KNOB_ERR_RETRY},
		{-EINVAL, KNOB_ERR_UNSUPPORTED},
		{-ERANGE, KNOB_ERR_UNSUPPORTED},
		{-ENOENT, KNOB_ERR_UNSUPPORTED},
		{-ENOTSUP, KNOB_ERR_UNSUPPORTED},
		{-EOPNOTSUPP, KNOB_ERR_UNSUPPORTED},
		{-EPERM, KNOB_ERR_READONLY},
		{-EACCES, KNOB_ERR_READONLY},
		{-EROFS, KNOB_ERR_READONLY},
		{-EIO, KNOB_ERR_OTHER},
		{-EDOM, KNOB_ERR_OTHER},
		{-ENOSPC, KNOB_ERR_OTHER},
		{-EFBIG, KNOB_ERR_OTHER},
		{-ENOMEM, KNOB_ERR_OTHER},
		{-EINPROGRESS, KNOB_ERR_OTHER},
		{-99999, KNOB_ERR_OTHER},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (knob_errclass(cases[i].r) != cases[i].c)
			fail_msg("%d: %d, want %d", cases[i].r, knob_errclass(cases[i].r), cases[i].c);
}

/* Each kind gets its driver: a knob made of a policy of that kind reads and writes that driver's file, only. */
static void test_kinds(void **state)
{
	struct fx *f = *state;
	static const struct {
		const char *kind, *policy, *target;
		enum knob_type type;
		const char *knob, *live, *value;
		const char *file, *before, *written; /* the one file the driver of KIND writes */
	} cases[] = {
		{"sysctl", "net.core.somaxconn", "net.core.somaxconn", KNOB_T_INT, "net.core.somaxconn", "4096", "8192",
		 "/proc/sys/net/core/somaxconn", "4096\n", "8192\n"},
		{"irq_affinity", "irq_affinity", "eth0", KNOB_T_CPUMAP, "irq_affinity.eth0", "40:0-7;41:0-7", "40:1",
		 "/proc/irq/40/smp_affinity_list", "0-7\n", "1\n"},
		{"rps", "rps", "eth0", KNOB_T_CPUMAP, "rps.eth0", "0:", "0:0-3",
		 "/sys/class/net/eth0/queues/rx-0/rps_cpus", "00\n", "0f\n"},
		{"rps_flows", "rfs", "eth0", KNOB_T_INT, "rfs", "0", "32768",
		 "/proc/sys/net/core/rps_sock_flow_entries", "0\n", "32768\n"},
		{"sched_slice", "sched.base_slice", "", KNOB_T_INT, "sched.base_slice", "3000000", "1500000", DBG_SLICE,
		 "3000000\n", "1500000\n"},
	};
	char why[KNOB_WHY_MAX], out[KNOB_VALUE_MAX];
	struct knob ks[4];
	size_t n;

	irq_tree(f);
	put(f, "/sys/class/net/eth0/queues/rx-0/rps_flow_cnt", "0\n");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		put(f, cases[i].file, cases[i].before);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		knob_for(f, cases[i].policy, cases[i].kind, cases[i].target, cases[i].type, "");
		memset(ks, 0, sizeof(ks));
		assert_int_equal(knob_instantiate(&f->pol, &f->env, ks, 4, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(ks[0].name, cases[i].knob);
		assert_string_equal(ks[0].ops->kind, cases[i].kind);
		assert_int_equal(knob_read(&ks[0], out, sizeof(out)), 0);
		assert_string_equal(out, cases[i].live);
		assert_int_equal(wr(&ks[0], cases[i].value, why, sizeof(why)), 0);
		/* its file, and no other driver's */
		for (size_t j = 0; j < sizeof(cases) / sizeof(cases[0]); j++)
			assert_string_equal(get(f, cases[j].file), j <= i ? cases[j].written : cases[j].before);
		ks[0].ops->release(&ks[0]);
	}
	assert_string_equal(get(f, "/sys/class/net/eth0/queues/rx-0/rps_flow_cnt"), "32768\n"); /* rps_flows' too */
	/* the nginx kinds: this program links the stand-ins of knob_nginx_stub.c, which carry their kind */
	static const char *const nginx_kinds[] = {"nginx_directive", "listen_queue"};
	for (size_t i = 0; i < 2; i++) {
		knob_for(f, "nginx", nginx_kinds[i], "worker_connections", KNOB_T_INT, "");
		assert_int_equal(knob_instantiate(&f->pol, &f->env, ks, 4, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(ks[0].ops->kind, nginx_kinds[i]);
		assert_ptr_equal(ks[0].ops, knob_ops_for(nginx_kinds[i]));
	}
	/* no driver: not a near miss either */
	static const char *const bogus[] = {"Sysctl", "sysctl ", "", "irq", "nginx"};
	for (size_t i = 0; i < sizeof(bogus) / sizeof(bogus[0]); i++) {
		assert_null(knob_ops_for(bogus[i]));
		knob_for(f, "x", "sysctl", "net.core.somaxconn", KNOB_T_INT, "");
		strcpy(f->pol.kind_name, bogus[i]);
		assert_int_equal(knob_instantiate(&f->pol, &f->env, ks, 4, &n), -EINVAL);
		assert_int_equal(n, 0);
	}
	assert_null(knob_ops_for(NULL));
}

static void test_instantiate(void **state)
{
	struct fx *f = *state;
	struct knob_policy pol;
	struct knob ks[4];
	size_t n;

	/* NICs (a device, rx queues), and what is not one */
	static const char *const nics[] = {"eth0", "eth1", "ens5"};
	for (size_t i = 0; i < 3; i++) {
		putf(f, "00\n", "/sys/class/net/%s/queues/rx-0/rps_cpus", nics[i]);
		putf(f, "", "/sys/class/net/%s/device/vendor", nics[i]);
	}
	put(f, "/sys/class/net/lo/queues/rx-0/rps_cpus", "0\n");
	put(f, "/sys/class/net/veth0/queues/rx-0/rps_cpus", "0\n");
	put(f, "/sys/class/net/eth9/device/vendor", "");      /* no queues */
	mk(f, "/sys/class/net/eth8/queues/tx-0");              /* no device, tx only */
	put(f, "/sys/class/net/eth7/queues/rx-0/rps_cpus", ""); /* no device */

	memset(&pol, 0, sizeof(pol));
	strcpy(pol.name, "rps");
	strcpy(pol.kind_name, "rps");
	strcpy(pol.target, "eth*");
	pol.type = KNOB_T_CPUMAP;
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ks[0].name, "rps.eth0");
	assert_string_equal(ks[1].name, "rps.eth1");
	assert_ptr_equal(ks[0].ops, &knob_rps_ops);
	assert_ptr_equal(ks[0].pol, &pol);
	assert_ptr_equal(ks[0].env, &f->env);
	assert_null(ks[0].priv);
	assert_string_equal(knob_dev(&ks[1]), "eth1");
	/* in a dry run, each behind its own dry-run backend */
	f->env.dry_run = true;
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(ks[i].ops->kind, "rps");
		assert_ptr_not_equal(ks[i].ops, &knob_rps_ops);
		assert_non_null(ks[i].priv);
	}
	assert_ptr_not_equal(ks[0].priv, ks[1].priv);
	assert_string_equal(knob_dev(&ks[1]), "eth1");
	for (size_t i = 0; i < n; i++) {
		ks[i].ops->release(&ks[i]);
		assert_null(ks[i].priv);
	}
	f->env.dry_run = false;
	strcpy(pol.target, "");
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(ks[0].name, "rps.ens5");
	assert_string_equal(ks[2].name, "rps.eth1");
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 2, &n), -ENOSPC);
	assert_int_equal(n, 2);
	strcpy(pol.target, "wlan*");
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
	assert_int_equal(n, 0);
	/* An interface named alone is the operator's choice, lo and a veth too; not one without rx queues. */
	strcpy(pol.target, "lo");
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ks[0].name, "rps.lo");
	strcpy(pol.target, "veth0");
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
	assert_int_equal(n, 1);
	strcpy(pol.target, "eth8");
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
	assert_int_equal(n, 0);
	strcpy(pol.target, "l?");
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
	assert_int_equal(n, 0);
	strcpy(pol.kind_name, "irq_affinity");
	strcpy(pol.name, "irq_affinity");
	strcpy(pol.target, "ens?");
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ks[0].name, "irq_affinity.ens5");
	assert_ptr_equal(ks[0].ops, &knob_irq_ops);
	/* a name that would not fit */
	memset(pol.name, 'a', 60);
	pol.name[60] = '\0';
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), -ENAMETOOLONG);
	assert_int_equal(n, 0);

	/* one knob for the other kinds */
	static const struct {
		const char *kind;
		const struct knob_ops *ops;
	} one[] = {
		{"sysctl", &knob_sysctl_ops},   {"rps_flows", &knob_rps_flows_ops}, {"sched_slice", &knob_sched_ops},
		{"nginx_directive", &knob_nginx_ops}, {"listen_queue", &knob_listen_ops},
	};
	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		strcpy(pol.name, "net.core.somaxconn");
		strcpy(pol.kind_name, one[i].kind);
		assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(ks[0].name, "net.core.somaxconn");
		assert_ptr_equal(ks[0].ops, one[i].ops);
		assert_int_equal(knob_instantiate(&pol, &f->env, ks, 0, &n), -ENOSPC);
		assert_int_equal(n, 0);
	}
	strcpy(pol.kind_name, "bogus");
	assert_int_equal(knob_instantiate(&pol, &f->env, ks, 4, &n), -EINVAL);
	assert_int_equal(knob_instantiate(NULL, &f->env, ks, 4, &n), -EINVAL);
}

/* ---- the real kernel: a network namespace ---------------------------------------------------------------- */

static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void slurp(const char *cmd, char *out, size_t n)
{
	FILE *p = popen(cmd, "r");
	size_t got;

	assert_non_null(p);
	got = fread(out, 1, n - 1, p);
	out[got] = '\0';
	pclose(p);
	knob_trim(out);
}

static void test_netns_somaxconn(void **state)
{
	struct fx *f = *state;
	struct stat mine, theirs, after;
	char *ns = f->netns, path[64], host[64], host_after[64], inside[64], out[64], why[KNOB_WHY_MAX], cmd[256];
	struct knob *k;
	pid_t pid;
	int tries;

	if (geteuid() != 0 || sh("ip netns help >/dev/null 2>&1") == 127) {
		testskip(geteuid() != 0 ? "needs root" : "needs ip (iproute2)");
		return;
	}
	snprintf(f->netns, sizeof(f->netns), "ngxat-knob-%d", (int)getpid());
	if (sh("ip netns add %s 2>/dev/null", ns) != 0) {
		f->netns[0] = '\0';
		testskip("ip netns add failed");
		return;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execlp("ip", "ip", "netns", "exec", ns, "sleep", "30", (char *)NULL);
		_exit(127);
	}
	f->child = pid;
	/* wait for the child to be in the namespace */
	assert_int_equal(stat("/proc/self/ns/net", &mine), 0);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	for (tries = 0; tries < 200; tries++) {
		if (stat(path, &theirs) == 0 && theirs.st_ino != mine.st_ino)
			break;
		usleep(10000);
	}
	assert_int_not_equal(theirs.st_ino, mine.st_ino);

	slurp("cat /proc/sys/net/core/somaxconn", host, sizeof(host));
	assert_int_equal(sh("ip netns exec %s sh -c 'echo 1234 > /proc/sys/net/core/somaxconn'", ns), 0);
	f->env.root = "/";
	f->env.nginx_pid = pid;
	k = knob_for(f, "net.core.somaxconn", "sysctl", "", KNOB_T_INT, "");
	assert_int_equal(k->ops->probe(k, why, sizeof(why)), 0);
	assert_int_equal(knob_read(k, out, sizeof(out)), 0);
	assert_string_equal(out, "1234");
	assert_int_equal(wr(k, "2345", why, sizeof(why)), 0);
	snprintf(cmd, sizeof(cmd), "ip netns exec %s cat /proc/sys/net/core/somaxconn", ns);
	slurp(cmd, inside, sizeof(inside));
	assert_string_equal(inside, "2345");
	slurp("cat /proc/sys/net/core/somaxconn", host_after, sizeof(host_after));
	assert_string_equal(host_after, host);
	/* still in our own namespace */
	assert_int_equal(stat("/proc/thread-self/ns/net", &after), 0);
	assert_int_equal(after.st_ino, mine.st_ino);
	/* a host-wide sysctl (initial namespace only) reads the host's value */
	slurp("cat /proc/sys/net/core/netdev_max_backlog", host, sizeof(host));
	assert_int_equal(knob_read(knob_for(f, "net.core.netdev_max_backlog", "sysctl", "", KNOB_T_INT, ""), out,
				   sizeof(out)), 0);
	assert_string_equal(out, host);
	/* nginx went away: retry later, never our namespace instead */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	f->child = 0;
	k = knob_for(f, "net.core.somaxconn", "sysctl", "", KNOB_T_INT, "");
	assert_int_equal(knob_read(k, out, sizeof(out)), -EAGAIN);
	assert_int_equal(wr(k, "3000", why, sizeof(why)), -EAGAIN);
	slurp("cat /proc/sys/net/core/somaxconn", host_after, sizeof(host_after));
	assert_string_not_equal(host_after, "3000");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpulist),
		cmocka_unit_test(test_cpumask_format),
		cmocka_unit_test(test_cpumask_parse),
		cmocka_unit_test(test_cpumap_split),
		cmocka_unit_test(test_errclass),
		cmocka_unit_test_setup_teardown(test_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sysctl_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sysctl_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sysctl_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sysctl_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sysctl_readback_differs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eacces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_irq_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_irq_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_irq_readback_differs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_irq_managed_real, setup, teardown),
		cmocka_unit_test_setup_teardown(test_irqbalance, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rps_readback_differs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rps_flows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_container_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rps_flows_readback_differs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sched_discovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sched_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_instantiate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_netns_somaxconn, setup, teardown),
	};

	/* A driver blocked on a FIFO the test's "kernel" never opens would hang the suite: fail it instead. */
	alarm(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
