/* Unit tests for agent/priv/writer.c, wclient.c and knob_remote.c: the engine's knob writes through the writer over
 * a real SOCK_SEQPACKET socketpair, the writer a forked child on its own loop with its own policy and a fake root: a
 * value the policy allows is written (by a synchronous driver, and by an asynchronous one answered from the writer's
 * loop), one past its bounds or its step is refused by the writer whatever the engine says, an unknown knob and
 * bytes that are not a message are refused with why; a writer that does not answer times out, its late answer is
 * dropped, and a writer gone is said so, also to a request in flight; the sockets of nginx's namespace it passes
 * (nssock.c) and the capabilities they do not carry; the read channel (rclient), which reads the writer's knobs
 * while a write is in flight. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "testskip.h"

#include "act/knob.h"
#include "core/policy.h"
#include "netns.h"
#include "priv/knob_remote.h"
#include "priv/nssock.h"
#include "priv/wclient.h"
#include "priv/wdump.h"
#include "priv/wmsg.h"
#include "priv/writer.h"

static char root[64];

static void put_file(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void get_file(const char *rel, char *out, size_t n)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(out, (int)n, f));
	fclose(f);
}

static void policies(struct policy_set *set)
{
	static const char *const kv[][2] = {{"kind", "sysctl"}, {"target", "net.core.somaxconn"}, {"type", "int"},
					    {"min", "4096"}, {"max", "65535"}, {"step", "x2"}, {"max_step", "x4"},
					    {"trigger", "listen_overflows > 0"}, {"objective", "tcp.listen_overflows lower"}};
	char err[256];

	memset(set, 0, sizeof(*set));
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		assert_int_equal(policy_set_add(set, "t.policy", (int)i + 1, "knob net.core.somaxconn", kv[i][0],
						kv[i][1], err, sizeof(err)), 0);
	if (policy_set_validate(set, NULL, NULL, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

/* The writer's asynchronous driver: the sysctl driver's write, answered LATER_MS later from the loop (as nginx's
 * reload is). 20 ms was outrun once on CI: a test's read meant to come while the write was in flight came after it,
 * under a parallel build. */
#define LATER_MS 250
static struct {
	uv_timer_t t;
	struct knob *k;
	int r;
	char value[64], why[256];
	knob_done_fn done;
	void *ctx;
} later;

/* The write is made LATER_MS after it was asked for, when the timer fires, and answered then. */
static void later_fire(uv_timer_t *t)
{
	(void)t;
	later.r = knob_sysctl_ops.write(later.k, later.value, later.why, sizeof(later.why), NULL, NULL);
	if (!later.r)
		snprintf(later.why, sizeof(later.why), "written later");
	later.done(later.k, later.r, later.why, later.ctx);
}

static int later_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	(void)why;
	(void)whylen;
	later.k = k;
	snprintf(later.value, sizeof(later.value), "%s", value);
	later.done = done;
	later.ctx = ctx;
	uv_timer_start(&later.t, later_fire, LATER_MS, 0);
	return -EINPROGRESS;
}

/* The test writer's OPEN_LOG: ROOT/access.log only, as writer_main serves the two logs agent.conf names. */
static int test_open_log(struct writer *w, const char *path, int *fd, char *why, size_t whylen)
{
	char mine[128];

	(void)w;
	snprintf(mine, sizeof(mine), "%s/access.log", root);
	if (strcmp(path, mine) != 0) {
		snprintf(why, whylen, "%s: not a log the configuration names", path);
		return -EPERM;
	}
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return *fd < 0 ? -errno : 0;
}

/* The test writer's SOCKET: a netlink socket of its own namespace, made as writer_main's is, said to be of nginx
 * 4242's; refused while ROOT/nosocket exists. */
static int test_socket(struct writer *w, unsigned kind, int *fd, char *why, size_t whylen)
{
	char path[128];
	const char *what;
	int r;

	(void)w;
	snprintf(path, sizeof(path), "%s/nosocket", root);
	if (access(path, F_OK) == 0) {
		snprintf(why, whylen, "no socket today");
		return -EACCES;
	}
	if (kind == WMSG_SOCKET_TCP || kind == WMSG_SOCKET_TCP6)
		r = netns_socket(0, kind == WMSG_SOCKET_TCP ? AF_INET : AF_INET6, SOCK_STREAM, 0, 4243, &what);
	else
		r = netns_socket(0, AF_NETLINK, SOCK_RAW, kind == WMSG_SOCKET_DIAG ? NETLINK_SOCK_DIAG : NETLINK_ROUTE,
				 (uid_t)-1, &what);
	if (r < 0) {
		snprintf(why, whylen, "%s: %s", what, strerror(-r));
		return r;
	}
	*fd = r;
	snprintf(why, whylen, "pid 4242");
	return 0;
}

/* The test writer's DUMP: "nginx -T" of ROOT/dump (its text, 20 ms later on the loop), refused while it is missing. */
static struct {
	uv_timer_t t;
	struct writer *w;
} dumping;

static void dump_fire(uv_timer_t *t)
{
	char path[128], text[256] = "";
	FILE *f;
	int fd;

	(void)t;
	snprintf(path, sizeof(path), "%s/dump", root);
	f = fopen(path, "r");
	if (!f) {
		writer_dumped(dumping.w, -EIO, "[emerg] open() \"/x/nginx.conf\" failed", -1);
		return;
	}
	if (!fgets(text, sizeof(text), f))
		text[0] = '\0';
	fclose(f);
	fd = memfd_create("t", MFD_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		_exit(6);
	writer_dumped(dumping.w, 0, "", fd);
}

static int test_dump(struct writer *w, char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	dumping.w = w;
	uv_timer_start(&dumping.t, dump_fire, 20, 0);
	return -EINPROGRESS;
}

static int child_writer(struct policy_set *set, struct knob_env *env, int fd, int rfd, bool async)
{
	static struct knob_ops ops;
	char journal[128], why[256];
	struct writer w = {0};
	struct knob wk = {0};
	uv_loop_t loop;
	size_t n;

	snprintf(journal, sizeof(journal), "%s/originals", root);
	uv_loop_init(&loop);
	env->loop = &loop;
	if (knob_instantiate(&set->knobs[0], env, &wk, 1, &n) < 0 || n != 1)
		return 2;
	if (async) {
		ops = *wk.ops;
		ops.write = later_write;
		wk.ops = &ops;
		uv_timer_init(&loop, &later.t);
	}
	w.set = set, w.knobs = &wk, w.n = 1, w.originals = journal;
	w.socket = test_socket;
	w.dump = test_dump;
	w.open_log = test_open_log;
	w.env = env;
	uv_timer_init(&loop, &dumping.t);
	if (writer_init(&w, why, sizeof(why)) != 0)
		return 5;
	if (writer_serve(&w, &loop, fd, rfd) != 0)
		return 3;
	writer_free(&w);
	uv_close((uv_handle_t *)&dumping.t, NULL);
	if (async)
		uv_close((uv_handle_t *)&later.t, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	return uv_loop_close(&loop) == 0 ? 0 : 4;
}

/* A datagram from FD, which the client's poll made non-blocking. */
static ssize_t recv_wait(int fd, uint8_t *buf, size_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	assert_int_equal(poll(&p, 1, 10000), 1);
	return recv(fd, buf, len, 0);
}

struct answer {
	bool done;
	int r;
	char why[WMSG_TEXT_MAX];
};

static void on_answer(struct knob *k, int r, const char *msg, void *ctx)
{
	struct answer *a = ctx;

	(void)k;
	a->done = true;
	a->r = r;
	snprintf(a->why, sizeof(a->why), "%s", msg ? msg : "");
}

/* R, a write's or a restore's, and once it is in progress its answer A, the loop run until it comes. */
static int answered(uv_loop_t *loop, int r, struct answer *a, char *why, size_t whylen)
{
	if (r != -EINPROGRESS)
		return r;
	while (!a->done)
		uv_run(loop, UV_RUN_ONCE);
	snprintf(why, whylen, "%s", a->why);
	return a->r;
}

/* K's write of VALUE, answered. */
static int write_wait(uv_loop_t *loop, struct knob *k, const char *value, char *why, size_t whylen)
{
	struct answer a = {0};

	return answered(loop, k->ops->write(k, value, why, whylen, on_answer, &a), &a, why, whylen);
}

/* A fake root with somaxconn at SOMAXCONN, and SET's policies. */
static void make_root(struct policy_set *set, const char *somaxconn)
{
	char d[128];

	snprintf(root, sizeof(root), "/tmp/writer-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(d, sizeof(d), "mkdir -p %s/proc/sys/net/core", root);
	assert_int_equal(system(d), 0);
	put_file("/proc/sys/net/core/somaxconn", somaxconn);
	policies(set);
}

static void drop_root(struct policy_set *set)
{
	char d[128];

	snprintf(d, sizeof(d), "rm -rf %s", root);
	assert_int_equal(system(d), 0);
	policy_set_free(set);
	free(set);
}

/* A writer of its own policy and journal in the test's root, forked (its driver asynchronous: ASYNC): its pid, the
 * engine's end in *FD. */
static pid_t fork_writer_reads(struct policy_set *set, bool async, int *fd, int *rfd)
{
	struct knob_env env = {.root = root};
	int sv[2], rv[2] = {-1, -1};
	pid_t child;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	if (rfd)
		assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, rv), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(sv[0]);
		if (rfd)
			close(rv[0]);
		_exit(child_writer(set, &env, sv[1], rv[1], async));
	}
	close(sv[1]);
	*fd = sv[0];
	if (rfd) {
		close(rv[1]);
		*rfd = rv[0];
	}
	return child;
}

static pid_t fork_writer(struct policy_set *set, bool async, int *fd)
{
	return fork_writer_reads(set, async, fd, NULL);
}

static void end_writer(pid_t child, int fd)
{
	int status;

	if (fd >= 0)
		close(fd);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* K put back to ORIGINAL (knob_restore), answered. */
static int restore_wait(uv_loop_t *loop, struct knob *k, const char *original, char *why, size_t whylen)
{
	struct answer a = {0};

	return answered(loop, knob_restore(k, original, why, whylen, on_answer, &a), &a, why, whylen);
}

static void through_the_writer(bool async)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct knob_env env = {0};
	struct knob ek = {0};
	struct wclient *c;
	uv_loop_t loop;
	size_t n;
	int sv[2];
	pid_t child;
	char why[WMSG_TEXT_MAX], got[64];
	uint8_t buf[WMSG_MAX];
	ssize_t len;
	struct wmsg res;

	/* An original below the policy's min: only a RESTORE can put it back. */
	make_root(set, "2048\n");
	env.root = root;
	child = fork_writer(set, async, &sv[0]);
	assert_int_equal(uv_loop_init(&loop), 0);
	env.loop = &loop;
	assert_int_equal(wclient_new(&loop, sv[0], 5000, &c), 0);
	assert_int_equal(knob_instantiate(&set->knobs[0], &env, &ek, 1, &n), 0);
	assert_int_equal(knob_remote_wrap(&ek, c, NULL), 0);

	/* Within the policy: written by the writer, read back by the engine. */
	assert_int_equal(write_wait(&loop, &ek, "8192", why, sizeof(why)), 0);
	assert_string_equal(why, async ? "written later" : "");
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "8192\n");
	assert_int_equal(ek.ops->read(&ek, got, sizeof(got)), 0);
	assert_string_equal(got, "8192");
	/* A write without a DONE: refused, the engine's knobs are asynchronous. */
	assert_int_equal(ek.ops->write(&ek, "16384", why, sizeof(why), NULL, NULL), -EINVAL);
	/* Past the largest step (x4 from 8192), past the bounds, not a number: refused by the writer's policy, -EDOM
	 * whatever policy_check said (its -EINVAL or -EPERM would read as the host's errno), the file untouched. */
	assert_int_equal(write_wait(&loop, &ek, "65535", why, sizeof(why)), -EDOM);
	assert_non_null(strstr(why, "net.core.somaxconn"));
	assert_int_equal(write_wait(&loop, &ek, "1024", why, sizeof(why)), -EDOM);
	assert_int_equal(write_wait(&loop, &ek, "lots", why, sizeof(why)), -EDOM);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "8192\n");
	/* Two in flight from two knobs of the engine: each answered, in order. */
	{
		struct knob ek2 = {0};
		struct answer a1 = {0}, a2 = {0};

		assert_int_equal(knob_instantiate(&set->knobs[0], &env, &ek2, 1, &n), 0);
		assert_int_equal(knob_remote_wrap(&ek2, c, NULL), 0);
		assert_int_equal(ek.ops->write(&ek, "16384", why, sizeof(why), on_answer, &a1), -EINPROGRESS);
		assert_int_equal(ek2.ops->write(&ek2, "32768", why, sizeof(why), on_answer, &a2), -EINPROGRESS);
		/* One write in flight per knob. */
		assert_int_equal(ek.ops->write(&ek, "16384", why, sizeof(why), on_answer, &a1), -EBUSY);
		while (!a1.done || !a2.done)
			uv_run(&loop, UV_RUN_ONCE);
		assert_int_equal(a1.r, 0);
		assert_int_equal(a2.r, 0);
		get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
		assert_string_equal(got, "32768\n");
		ek2.ops->release(&ek2);
	}

	/* The writer journaled the original once, before its first write. */
	get_file("/originals", got, sizeof(got));
	assert_string_equal(got, "net.core.somaxconn 2048\n");
	{
		struct stat sb;
		char path[128];

		snprintf(path, sizeof(path), "%s/originals", root);
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_size, (off_t)strlen("net.core.somaxconn 2048\n"));
		assert_int_equal(sb.st_mode & 0777, 0600);
	}

	/* The engine's revert to the original is the writer's RESTORE: the original the writer journaled, 2048, below
	 * the policy's min; one the engine believes otherwise is said. A SET below the min is refused, unless it is
	 * the original (a trial's arm A writes it), or the value the knob has. */
	assert_int_equal(write_wait(&loop, &ek, "1024", why, sizeof(why)), -EDOM);
	assert_int_equal(write_wait(&loop, &ek, "2048", why, sizeof(why)), 0);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "2048\n");
	assert_int_equal(write_wait(&loop, &ek, "2048", why, sizeof(why)), 0);
	assert_int_equal(write_wait(&loop, &ek, "8192", why, sizeof(why)), 0);
	assert_int_equal(restore_wait(&loop, &ek, "2048", why, sizeof(why)), 0);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "2048\n");
	assert_int_equal(restore_wait(&loop, &ek, "1024", why, sizeof(why)), -EIO);
	assert_string_equal(why, "the writer restored 2048, the original it journaled, not 1024");
	assert_int_equal(write_wait(&loop, &ek, "8192", why, sizeof(why)), 0);

	/* A knob the writer has no policy for, and bytes that are not a message (nothing in flight: the socket is
	 * the test's). */
	{
		struct wmsg m = {.type = WMSG_SET, .id = 9};

		strcpy(m.name, "kernel.core_pattern");
		strcpy(m.value, "x");
		len = wmsg_encode(&m, buf, sizeof(buf));
		assert_true(len > 0);
		assert_int_equal(send(sv[0], buf, (size_t)len, 0), len);
		len = recv_wait(sv[0], buf, sizeof(buf));
		assert_int_equal(wmsg_decode(buf, (size_t)len, &res, why, sizeof(why)), 0);
		assert_int_equal(res.id, 9);
		assert_int_equal(res.result, -ENOENT);
		assert_non_null(strstr(res.text, "no knob kernel.core_pattern here"));
	}
	assert_int_equal(send(sv[0], "\x01\x02garbage", 9, 0), 9);
	len = recv_wait(sv[0], buf, sizeof(buf));
	assert_int_equal(wmsg_decode(buf, (size_t)len, &res, why, sizeof(why)), 0);
	assert_int_equal(res.result, -EBADMSG);
	assert_non_null(strstr(res.text, "shorter than a message"));

	/* The engine closes (the client closes its socket): the writer ends cleanly. */
	ek.ops->release(&ek);
	wclient_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	end_writer(child, -1);
	drop_root(set);
}

static void test_set_through_the_writer(void **state)
{
	(void)state;
	through_the_writer(false);
}

static void test_set_async_driver(void **state)
{
	(void)state;
	through_the_writer(true);
}

/* Request M straight on FD (nothing in flight through a client), its answer's result with TEXT. */
static int ask(int fd, struct wmsg *m, char *text, size_t textlen)
{
	uint8_t buf[WMSG_MAX];
	struct wmsg res;
	char err[128];
	ssize_t len = wmsg_encode(m, buf, sizeof(buf));

	assert_true(len > 0);
	assert_int_equal(send(fd, buf, (size_t)len, 0), len);
	len = recv_wait(fd, buf, sizeof(buf));
	assert_int_equal(wmsg_decode(buf, (size_t)len, &res, err, sizeof(err)), 0);
	assert_int_equal(res.id, m->id);
	snprintf(text, textlen, "%s", res.text);
	return res.result;
}

/* RESTORE puts back the original the writer journaled, also after the writer was restarted; nothing else: not a
 * knob it never wrote, not a value the engine names. */
static void test_restore(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct wmsg m = {.type = WMSG_SET, .id = 1};
	char text[WMSG_TEXT_MAX], got[64];
	pid_t child;
	int fd;

	(void)state;
	make_root(set, "4096\n");

	/* Never written: nothing to restore. */
	child = fork_writer(set, false, &fd);
	m.type = WMSG_RESTORE;
	strcpy(m.name, "net.core.somaxconn");
	assert_int_equal(ask(fd, &m, text, sizeof(text)), -ENOENT);
	assert_non_null(strstr(text, "no original of it is journaled"));
	strcpy(m.name, "kernel.core_pattern");
	assert_int_equal(ask(fd, &m, text, sizeof(text)), -ENOENT);
	/* Written twice: one original, 4096. */
	m.type = WMSG_SET;
	strcpy(m.name, "net.core.somaxconn");
	strcpy(m.value, "8192");
	assert_int_equal(ask(fd, &m, text, sizeof(text)), 0);
	strcpy(m.value, "16384");
	assert_int_equal(ask(fd, &m, text, sizeof(text)), 0);
	end_writer(child, fd);
	get_file("/originals", got, sizeof(got));
	assert_string_equal(got, "net.core.somaxconn 4096\n");

	/* A writer started again knows it from its journal. */
	child = fork_writer(set, false, &fd);
	memset(m.value, 0, sizeof(m.value));
	m.type = WMSG_RESTORE;
	assert_int_equal(ask(fd, &m, text, sizeof(text)), 0);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "4096\n");
	/* Written again although it reads so already: a driver finishes there what a kill cut short. */
	assert_int_equal(ask(fd, &m, text, sizeof(text)), 0);
	{
		char path[128], all[512];
		size_t n;
		FILE *f;

		snprintf(path, sizeof(path), "%s/originals.written", root);
		f = fopen(path, "r");
		assert_non_null(f);
		n = fread(all, 1, sizeof(all) - 1, f);
		fclose(f);
		all[n] = '\0';
		assert_true(n > 48);
		assert_string_equal(all + n - 48, "net.core.somaxconn 4096\nnet.core.somaxconn 4096\n");
	}
	/* The original stays the original: the next SET journals nothing. */
	m.type = WMSG_SET;
	strcpy(m.value, "8192");
	assert_int_equal(ask(fd, &m, text, sizeof(text)), 0);
	end_writer(child, fd);
	get_file("/originals", got, sizeof(got));
	assert_string_equal(got, "net.core.somaxconn 4096\n");
	drop_root(set);
}

/* An answer from the writer's side of SV: request ID answered R with TEXT. */
static void answer_as_writer(int fd, uint32_t id, int r, const char *text)
{
	struct wmsg res = {.type = WMSG_RESULT, .id = id, .result = r};
	uint8_t buf[WMSG_MAX];
	int len;

	snprintf(res.text, sizeof(res.text), "%s", text);
	len = wmsg_encode(&res, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(send(fd, buf, (size_t)len, 0), len);
}

struct timed {
	int r, n;
	uint64_t at;
	uv_loop_t *loop;
};

static void timed_done(int result, const char *text, void *ctx)
{
	struct timed *t = ctx;

	(void)text;
	t->r = result;
	t->n++;
	t->at = uv_now(t->loop);
}

/* The writer answers in order: a request is timed from when the one before it was answered, not from when it was
 * sent (a SET queued behind a DUMP is not charged the DUMP's time). Two sent at once to a silent writer: the first
 * times out after 50 ms, the second 50 ms after that. */
static void test_timeouts_in_order(void **state)
{
	struct wclient *c;
	struct timed t1 = {0}, t2 = {0};
	struct wmsg m1 = {.type = WMSG_RELOAD}, m2 = {.type = WMSG_RELOAD};
	uv_loop_t loop;
	char why[128];
	uint64_t t0;
	int sv[2];

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	t1.loop = t2.loop = &loop;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(wclient_new(&loop, sv[0], 50, &c), 0);
	uv_update_time(&loop);
	t0 = uv_now(&loop);
	assert_int_equal(wclient_request(c, &m1, timed_done, &t1, why, sizeof(why)), 0);
	assert_int_equal(wclient_request(c, &m2, timed_done, &t2, why, sizeof(why)), 0);
	while (!t2.n)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(t1.n, 1);
	assert_int_equal(t1.r, -ETIMEDOUT);
	assert_int_equal(t2.r, -ETIMEDOUT);
	assert_true(t1.at - t0 >= 50);
	assert_true(t2.at - t0 >= 100); /* timed from the first's end, not from its own send */
	wclient_free(c);
	close(sv[1]);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* A writer that does not answer: the write ends after the client's timeout, and that request's late answer is
 * dropped when the next one's comes; a writer gone is said so, to a request in flight and to the next. */
static void test_writer_silent(void **state)
{
	struct knob_policy pol = {0};
	struct knob_env env = {.root = "/nonexistent"};
	struct knob ek = {.pol = &pol, .ops = &knob_sysctl_ops, .env = &env};
	struct answer a = {0};
	struct wclient *c;
	uv_loop_t loop;
	char why[WMSG_TEXT_MAX];
	int sv[2];

	(void)state;
	strcpy(ek.name, "net.core.somaxconn");
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(wclient_new(&loop, sv[0], 0, &c), -EINVAL);
	assert_int_equal(wclient_new(&loop, sv[0], 50, &c), 0);
	assert_int_equal(knob_remote_wrap(&ek, NULL, NULL), -EINVAL);
	assert_int_equal(knob_remote_wrap(&ek, c, NULL), 0);
	assert_int_equal(write_wait(&loop, &ek, "8192", why, sizeof(why)), -ETIMEDOUT);
	assert_string_equal(why, "the writer did not answer within 50 ms");
	/* Request 1 answered late, then request 2 as asked. */
	assert_int_equal(ek.ops->write(&ek, "8192", why, sizeof(why), on_answer, &a), -EINPROGRESS);
	answer_as_writer(sv[1], 1, -EIO, "late");
	answer_as_writer(sv[1], 2, 0, "written");
	while (!a.done)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(a.r, 0);
	assert_string_equal(a.why, "written");
	/* The writer goes while a request is in flight: not answered (whether it wrote is not known; the agent stops
	 * and its journal's recovery decides), and a request after that finds it gone. */
	memset(&a, 0, sizeof(a));
	assert_int_equal(ek.ops->write(&ek, "8192", why, sizeof(why), on_answer, &a), -EINPROGRESS);
	close(sv[1]);
	for (int i = 0; i < 100 && !wclient_gone(c); i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_true(wclient_gone(c));
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_false(a.done);
	{
		struct knob ek2 = {.pol = &pol, .ops = &knob_sysctl_ops, .env = &env};

		strcpy(ek2.name, "net.core.somaxconn");
		assert_int_equal(knob_remote_wrap(&ek2, c, NULL), 0);
		assert_int_equal(ek2.ops->write(&ek2, "8192", why, sizeof(why), on_answer, &a), -EPIPE);
		assert_string_equal(why, "the writer is gone");
		ek2.ops->release(&ek2);
	}
	ek.ops->release(&ek);
	wclient_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* The read channel: the engine's knob reads and probes are the writer's (here its root holds another value than the
 * engine's, which has none), answered also while a write is in flight (the asynchronous driver holds it LATER_MS); a
 * write there is refused; a silent writer costs one timeout, and the reads after it fail at once until its late
 * answer came. */
static void test_read_channel(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct knob_env env = {.root = "/nonexistent"};
	struct knob ek = {0};
	struct answer a = {0};
	struct wclient *c;
	struct rclient *rc;
	uv_loop_t loop;
	char why[WMSG_TEXT_MAX], got[64];
	size_t n;
	int fd, rfd;
	pid_t child;

	(void)state;
	make_root(set, "2048\n");
	child = fork_writer_reads(set, true, &fd, &rfd);
	assert_int_equal(uv_loop_init(&loop), 0);
	env.loop = &loop;
	assert_int_equal(wclient_new(&loop, fd, 5000, &c), 0);
	assert_int_equal(rclient_new(-1, 5000, &rc), -EINVAL);
	assert_int_equal(rclient_new(rfd, 5000, &rc), 0);
	assert_int_equal(knob_instantiate(&set->knobs[0], &env, &ek, 1, &n), 0);
	/* Without the channel, the engine's own driver: its root has no such file. */
	assert_true(ek.ops->read(&ek, got, sizeof(got)) < 0);
	assert_int_equal(knob_remote_wrap(&ek, c, rc), 0);
	assert_int_equal(ek.ops->read(&ek, got, sizeof(got)), 0);
	assert_string_equal(got, "2048");
	assert_int_equal(ek.ops->read(&ek, got, 3), -ERANGE);
	assert_int_equal(ek.ops->probe(&ek, why, sizeof(why)), 0);
	/* A read while the write is in flight (the writer's driver makes it LATER_MS later): answered at once, with the
	 * value before it; then, read again, the value after it. */
	assert_int_equal(ek.ops->write(&ek, "8192", why, sizeof(why), on_answer, &a), -EINPROGRESS);
	assert_int_equal(ek.ops->read(&ek, got, sizeof(got)), 0);
	assert_string_equal(got, "2048");
	for (int i = 0; i < 4 * LATER_MS; i++) {
		assert_int_equal(ek.ops->read(&ek, got, sizeof(got)), 0);
		if (strcmp(got, "8192") == 0)
			break;
		usleep(1000);
	}
	assert_string_equal(got, "8192");
	assert_false(a.done);
	while (!a.done)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(a.r, 0);
	assert_string_equal(a.why, "written later");
	/* Writes and unknown knobs on the read channel. */
	{
		struct wmsg m = {.type = WMSG_SET};

		strcpy(m.name, "net.core.somaxconn");
		strcpy(m.value, "16384");
		assert_int_equal(rclient_call(rc, &m, why, sizeof(why), NULL), -EPERM);
		assert_string_equal(why, "set on the read channel: refused (it is served on the other)");
		m = (struct wmsg){.type = WMSG_READ};
		strcpy(m.name, "kernel.core_pattern");
		assert_int_equal(rclient_call(rc, &m, why, sizeof(why), NULL), -ENOENT);
		assert_non_null(strstr(why, "no knob kernel.core_pattern here"));
		get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
		assert_string_equal(got, "8192\n");
	}
	/* nginx's log, opened by the writer (the engine may not read it) and passed; another file refused, with why. */
	{
		char path[160], buf[32];
		int lfd;
		ssize_t got_n;

		put_file("/access.log", "GET / 200\n");
		snprintf(path, sizeof(path), "%s/access.log", root);
		lfd = nssock_open_log(rc, path, why, sizeof(why));
		assert_true(lfd >= 0);
		got_n = read(lfd, buf, sizeof(buf) - 1);
		assert_int_equal(got_n, 10);
		buf[got_n] = '\0';
		assert_string_equal(buf, "GET / 200\n");
		close(lfd);
		assert_int_equal(nssock_open_log(rc, "/etc/shadow", why, sizeof(why)), -EPERM);
		assert_string_equal(why, "/etc/shadow: not a log the configuration names");
	}
	/* The interfaces of nginx's namespace RPS's knobs are named after: the writer's (its root has two NICs with
	 * queues and a bridge without a device), matched by the policy's glob. */
	{
		char names[4][16], cmd[512];
		size_t nn;

		snprintf(cmd, sizeof(cmd), "mkdir -p %s/sys/class/net/eth0/queues/rx-0 %s/sys/class/net/eth0/device "
			 "%s/sys/class/net/eth1/queues/rx-0 %s/sys/class/net/eth1/device %s/sys/class/net/br0/queues/rx-0",
			 root, root, root, root, root);
		assert_int_equal(system(cmd), 0);
		assert_int_equal(nssock_nics(rc, "eth*", names, 4, &nn), 0);
		assert_int_equal(nn, 2);
		assert_string_equal(names[0], "eth0");
		assert_string_equal(names[1], "eth1");
		assert_int_equal(nssock_nics(rc, "*", names, 1, &nn), -ENOSPC);
		assert_int_equal(nn, 1);
		assert_int_equal(nssock_nics(rc, "br0", names, 4, &nn), 0); /* named: no device needed */
		assert_int_equal(nn, 1);
		assert_int_equal(nssock_nics(rc, "wlan*", names, 4, &nn), 0);
		assert_int_equal(nn, 0);
	}
	/* A knob of a removed policy the writer's journal has (invariant 7): read for the engine's revert of it. */
	{
		struct wmsg m = {.type = WMSG_READ};
		FILE *f;
		char path[128];

		put_file("/proc/sys/net/core/netdev_max_backlog", "3000\n");
		strcpy(m.name, "net.core.netdev_max_backlog");
		assert_int_equal(rclient_call(rc, &m, why, sizeof(why), NULL), -ENOENT);
		snprintf(path, sizeof(path), "%s/originals", root);
		f = fopen(path, "a");
		assert_non_null(f);
		fputs("net.core.netdev_max_backlog 1000\n", f);
		fclose(f);
		assert_int_equal(rclient_call(rc, &m, why, sizeof(why), NULL), 0);
		assert_string_equal(why, "3000");
	}
	/* The doctor's sysctls of nginx's namespace: net.* only, as integers. */
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "mkdir -p %s/proc/sys/net/ipv4 %s/proc/sys/kernel", root, root);
		assert_int_equal(system(cmd), 0);
		put_file("/proc/sys/net/ipv4/ip_local_port_range", "32768\t60999\n");
		put_file("/proc/sys/kernel/core_pattern", "core\n");
		assert_int_equal(nssock_sysctl(rc, "net.ipv4.ip_local_port_range", got, sizeof(got)), 0);
		assert_string_equal(got, "32768 60999");
		assert_int_equal(nssock_sysctl(rc, "net.ipv4.ip_local_port_range", got, 5), -ERANGE);
		assert_int_equal(nssock_sysctl(rc, "kernel.core_pattern", why, sizeof(why)), -EPERM);
		assert_string_equal(why, "kernel.core_pattern: only net.* sysctls are read for the engine");
		assert_int_equal(nssock_sysctl(rc, "net.core.nonexistent", why, sizeof(why)), -ENOENT);
		/* root's only (as the BPF JIT's settings are): not read for the engine */
		put_file("/proc/sys/net/core/bpf_jit_harden", "2\n");
		snprintf(cmd, sizeof(cmd), "chmod 600 %s/proc/sys/net/core/bpf_jit_harden", root);
		assert_int_equal(system(cmd), 0);
		assert_int_equal(nssock_sysctl(rc, "net.core.bpf_jit_harden", why, sizeof(why)), -EPERM);
		assert_string_equal(why, "net.core.bpf_jit_harden: not readable by others: not read for the engine");
	}
	ek.ops->release(&ek);
	rclient_free(rc);
	wclient_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	end_writer(child, -1);
	drop_root(set);

	/* A writer that does not answer on the channel. */
	{
		int sv[2];
		struct wmsg m = {.type = WMSG_READ};
		struct timespec t0, t1;

		assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
		assert_int_equal(rclient_new(sv[0], 50, &rc), 0);
		strcpy(m.name, "net.core.somaxconn");
		assert_int_equal(rclient_call(rc, &m, why, sizeof(why), NULL), -ETIMEDOUT);
		assert_string_equal(why, "the writer did not answer within 50 ms");
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(rclient_call(rc, &m, why, sizeof(why), NULL), -EAGAIN);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		assert_true(t1.tv_sec - t0.tv_sec < 1); /* at once, not after another timeout (50 ms: generous bound) */
		assert_string_equal(why, "the writer has not answered an earlier read yet");
		/* its late answer, then the next request's (id 2: the one refused was not sent) */
		answer_as_writer(sv[1], 1, -EIO, "late");
		answer_as_writer(sv[1], 2, 0, "4096");
		assert_int_equal(rclient_call(rc, &m, why, sizeof(why), NULL), 0);
		assert_string_equal(why, "4096");
		close(sv[1]);
		assert_int_equal(rclient_call(rc, &m, why, sizeof(why), NULL), -EPIPE);
		assert_string_equal(why, "the writer is gone");
		assert_int_equal(rclient_call(rc, &m, why, sizeof(why), NULL), -EPIPE);
		rclient_free(rc);
	}
}

static size_t open_fds(void);

static int sock_opt(int fd, int opt)
{
	int v = -1;
	socklen_t len = sizeof(v);

	assert_int_equal(getsockopt(fd, SOL_SOCKET, opt, &v, &len), 0);
	return v;
}

/* The TCP sockets of stub_status and the synthetic client: asked on the read channel, each waited for; one of
 * another master than asked for is closed, never used; the writer's refusal says why. */
static void test_tcp_sockets(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct rclient *rc;
	char why[WMSG_TEXT_MAX];
	int fd, rfd, s;
	size_t fds;
	pid_t child;

	(void)state;
	make_root(set, "4096\n");
	child = fork_writer_reads(set, false, &fd, &rfd);
	assert_int_equal(rclient_new(rfd, 5000, &rc), 0);
	s = nssock_tcp(rc, 4242, AF_INET, why, sizeof(why));
	assert_true(s >= 0);
	assert_int_equal(sock_opt(s, SO_DOMAIN), AF_INET);
	assert_int_equal(sock_opt(s, SO_TYPE), SOCK_STREAM);
	{
		struct stat st; /* made as the engine's user (the hook says 4243), not as its root maker */

		assert_int_equal(fstat(s, &st), 0);
		assert_int_equal(st.st_uid, geteuid() == 0 ? 4243 : geteuid());
	}
	close(s);
	s = nssock_tcp(rc, 4242, AF_INET6, why, sizeof(why));
	assert_true(s >= 0);
	assert_int_equal(sock_opt(s, SO_DOMAIN), AF_INET6);
	close(s);
	fds = open_fds();
	assert_int_equal(nssock_tcp(rc, 4243, AF_INET, why, sizeof(why)), -ESTALE);
	assert_string_equal(why, "the writer made no socket of nginx 4243's namespace: nginx's master is another now");
	assert_int_equal(open_fds(), fds);
	assert_int_equal(nssock_tcp(rc, 4242, AF_UNIX, why, sizeof(why)), -EAFNOSUPPORT);
	put_file("/nosocket", "");
	assert_int_equal(nssock_tcp(rc, 4242, AF_INET, why, sizeof(why)), -EACCES);
	assert_string_equal(why, "the writer made no socket of nginx 4242's namespace: no socket today");
	assert_int_equal(open_fds(), fds);
	rclient_free(rc);
	end_writer(child, fd);
	drop_root(set);
}

struct dumped {
	int calls, rc;
	char msg[256], out[256];
	size_t len;
};

static void on_dumped(int rc, const char *msg, char *out, size_t len, void *ctx)
{
	struct dumped *d = ctx;

	d->calls++;
	d->rc = rc;
	snprintf(d->msg, sizeof(d->msg), "%s", msg ? msg : "");
	snprintf(d->out, sizeof(d->out), "%s", out ? out : "");
	d->len = len;
	if (out)
		assert_int_equal(out[len], '\0');
	free(out);
}

/* nginx -T for the engine (wdump.c): the writer's output read from its memfd, within the engine's bound; its
 * refusal said; the dumps in flight answered -ECANCELED when the agent stops, and the writer's late answer dropped. */
static void test_dump_through_the_writer(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct wclient *c;
	struct wdump *wd;
	struct dumped d = {0}, d2 = {0};
	uv_loop_t loop;
	int fd;
	pid_t child;

	(void)state;
	make_root(set, "4096\n");
	put_file("/dump", "# configuration file /x/nginx.conf:\nevents {}\n");
	child = fork_writer(set, false, &fd);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(wclient_new(&loop, fd, 5000, &c), 0);
	assert_int_equal(wdump_new(c, 64, &wd), 0);
	assert_int_equal(wdump_run(wd, on_dumped, &d), 0);
	while (!d.calls)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(d.rc, 0);
	assert_string_equal(d.out, "# configuration file /x/nginx.conf:\n");
	assert_int_equal(d.len, strlen("# configuration file /x/nginx.conf:\n"));
	/* Past the engine's own bound: refused with the sizes, as nginx_ctl says it. */
	wdump_free(wd);
	assert_int_equal(wdump_new(c, 16, &wd), 0);
	memset(&d, 0, sizeof(d));
	assert_int_equal(wdump_run(wd, on_dumped, &d), 0);
	while (!d.calls)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(d.rc, -EFBIG);
	assert_non_null(strstr(d.msg, "nginx -T printed 36 bytes, more than the 16 bytes the agent reads ([nginx] dump_max)"));
	/* nginx refuses its configuration: its words. */
	assert_int_equal(unlink(strcat(strcpy(d.msg, root), "/dump")), 0);
	memset(&d, 0, sizeof(d));
	assert_int_equal(wdump_run(wd, on_dumped, &d), 0);
	while (!d.calls)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(d.rc, -EIO);
	assert_string_equal(d.msg, "[emerg] open() \"/x/nginx.conf\" failed");
	/* Two in flight, the agent stops: both answered now, once, and the writer's answers dropped. */
	memset(&d, 0, sizeof(d));
	assert_int_equal(wdump_run(wd, on_dumped, &d), 0);
	assert_int_equal(wdump_run(wd, on_dumped, &d2), 0);
	wdump_cancel(wd);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d2.calls, 1);
	assert_int_equal(d.rc, -ECANCELED);
	for (int i = 0; i < 10; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(10000);
	}
	assert_int_equal(d.calls, 1);
	assert_int_equal(d2.calls, 1);
	wdump_free(wd);
	wclient_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	end_writer(child, -1);
	drop_root(set);
}

/* The before hook: called before each request; asked again (retry) for a knob not found, and a refusal of its is
 * -EAGAIN with its why. */
struct hook {
	int calls, retries, fail;
	struct knob *k; /* put in place at the retry (writer_main rebuilds its knobs so) */
};

static int before_hook(struct writer *w, bool retry, char *why, size_t whylen)
{
	struct hook *h = w->before_ctx;

	h->calls++;
	if (retry) {
		h->retries++;
		w->knobs = h->k;
		w->n = 1;
	}
	if (h->fail) {
		snprintf(why, whylen, "policies cannot be read");
		return -EIO;
	}
	return 0;
}

static int handle(struct writer *w, enum wmsg_type type, const char *name, const char *value, struct wmsg *res)
{
	struct wmsg m = {.type = type, .id = 7};
	uint8_t in[WMSG_MAX], out[WMSG_MAX];
	char err[128];
	int len;

	snprintf(m.name, sizeof(m.name), "%s", name);
	snprintf(m.value, sizeof(m.value), "%s", value);
	len = wmsg_encode(&m, in, sizeof(in));
	assert_true(len > 0);
	len = writer_handle(w, in, (size_t)len, out, sizeof(out));
	assert_true(len > 0);
	assert_int_equal(wmsg_decode(out, (size_t)len, res, err, sizeof(err)), 0);
	assert_int_equal(res->id, 7);
	return res->result;
}

static void test_before_hook(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct knob_env env = {0};
	struct knob wk = {0};
	struct hook h = {.k = &wk};
	struct writer w = {0};
	struct wmsg res;
	char journal[128], why[256], got[64];
	size_t n;

	(void)state;
	make_root(set, "4096\n");
	env.root = root;
	assert_int_equal(knob_instantiate(&set->knobs[0], &env, &wk, 1, &n), 0);
	snprintf(journal, sizeof(journal), "%s/originals", root);
	/* No knobs yet: the writer's are built at the retry. */
	w.set = set, w.knobs = &wk, w.n = 0, w.originals = journal;
	w.before = before_hook, w.before_ctx = &h;
	assert_int_equal(writer_init(&w, why, sizeof(why)), 0);
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "8192", &res), 0);
	assert_int_equal(h.calls, 2);
	assert_int_equal(h.retries, 1);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "8192\n");
	/* A knob no policy names: asked again once, then refused. */
	assert_int_equal(handle(&w, WMSG_SET, "net.core.rmem_max", "8192", &res), -ENOENT);
	assert_int_equal(h.calls, 4);
	assert_int_equal(h.retries, 2);
	assert_non_null(strstr(res.text, "net.core.rmem_max"));
	/* The hook refuses: nothing written, -EAGAIN (the engine tries again), its why said. */
	h.fail = 1;
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "16384", &res), -EAGAIN);
	assert_string_equal(res.text, "policies cannot be read");
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "8192\n");
	/* Someone else sets 1024 (an operator clears a conflict there): the host's value now, journaled as the original
	 * before the writer's next write, and what RESTORE puts back. The writer's own writes never move it. */
	h.fail = 0;
	put_file("/proc/sys/net/core/somaxconn", "1024\n");
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "4096", &res), 0);
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "8192", &res), 0);
	assert_int_equal(handle(&w, WMSG_RESTORE, "net.core.somaxconn", "", &res), 0);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "1024\n");
	/* A value is taken in its canonical text: "16384 " is 16384, journaled and written so. */
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "4096", &res), 0);
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "16384 ", &res), 0);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "16384\n");
	assert_string_equal(w.orig[0].last, "16384");
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "lots", &res), -EDOM);
	assert_int_equal(handle(&w, WMSG_RESTORE, "net.core.somaxconn", "", &res), 0);
	/* The agent reloaded (RELOAD, a message where a signal would need a capability): answered at once, and the
	 * hook is asked to read the files again before the next request; nothing is written. */
	assert_false(w.reload);
	assert_int_equal(handle(&w, WMSG_RELOAD, "", "", &res), 0);
	assert_non_null(strstr(res.text, "read again before the next request"));
	assert_true(w.reload);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "1024\n");
	/* Known again after a restart, from its two journals. */
	writer_free(&w);
	assert_int_equal(writer_init(&w, why, sizeof(why)), 0);
	assert_true(w.orig[0].known);
	assert_string_equal(w.orig[0].value, "1024");
	assert_string_equal(w.orig[0].last, "1024");
	assert_string_equal(w.orig[0].prev, "16384");
	/* The journal of writes past its bound (3 lines here): compacted to the knob's last two, what a restart reads. */
	w.written_max = 3;
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "4096", &res), 0);
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "8192", &res), 0);
	assert_int_equal(handle(&w, WMSG_SET, "net.core.somaxconn", "16384", &res), 0);
	assert_true(w.written_lines <= 3);
	{
		char path[160], line[128];
		FILE *fp;
		int lines = 0;

		snprintf(path, sizeof(path), "%s.written", journal);
		fp = fopen(path, "r");
		assert_non_null(fp);
		while (fgets(line, sizeof(line), fp))
			lines++;
		fclose(fp);
		assert_true(lines >= 2 && lines <= 3);
	}
	writer_free(&w);
	assert_int_equal(writer_init(&w, why, sizeof(why)), 0);
	assert_string_equal(w.orig[0].last, "16384");
	assert_string_equal(w.orig[0].prev, "8192");
	assert_string_equal(w.orig[0].value, "1024");
	writer_free(&w);
	wk.ops->release(&wk);
	drop_root(set);
}

/* RESTORE of a knob the agent changed before it had a writer: the original the agent's own originals file kept, as
 * long as that file is root's and no one else may write it; journaled as the writer's from then on. */
static void test_restore_from_agent_originals(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct knob_env env = {0};
	struct knob wk = {0};
	struct writer w = {0};
	struct wmsg res;
	char journal[128], fallback[128], why[256], got[64];
	size_t n;

	(void)state;
	make_root(set, "8192\n");
	env.root = root;
	assert_int_equal(knob_instantiate(&set->knobs[0], &env, &wk, 1, &n), 0);
	snprintf(journal, sizeof(journal), "%s/originals", root);
	snprintf(fallback, sizeof(fallback), "%s/store.originals", root);
	put_file("/store.originals", "net.core.somaxconn 1024\n");
	w.set = set, w.knobs = &wk, w.n = 1, w.originals = journal, w.fallback = fallback;
	/* Writable by its group: not trusted, nothing imported at the start, nothing restored. */
	assert_int_equal(chmod(fallback, 0660), 0);
	assert_int_equal(writer_init(&w, why, sizeof(why)), 0);
	assert_int_equal(handle(&w, WMSG_RESTORE, "net.core.somaxconn", "", &res), -ENOENT);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "8192\n");
	assert_int_equal(chmod(fallback, 0600), 0);
	/* A symlink to a file of root's that no one else may write: not followed. */
	{
		char real[160];

		snprintf(real, sizeof(real), "%s/elsewhere", root);
		assert_int_equal(rename(fallback, real), 0);
		assert_int_equal(symlink(real, fallback), 0);
		assert_int_equal(handle(&w, WMSG_RESTORE, "net.core.somaxconn", "", &res), -ENOENT);
		assert_int_equal(unlink(fallback), 0);
		assert_int_equal(rename(real, fallback), 0);
	}
	if (geteuid() != 0) {
		/* Not root's: refused as well (the test cannot make a file root's here). */
		assert_int_equal(handle(&w, WMSG_RESTORE, "net.core.somaxconn", "", &res), -ENOENT);
	} else {
		assert_int_equal(handle(&w, WMSG_RESTORE, "net.core.somaxconn", "", &res), 0);
		get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
		assert_string_equal(got, "1024\n");
		get_file("/originals", got, sizeof(got));
		assert_string_equal(got, "net.core.somaxconn 1024\n");
	}
	writer_free(&w);
	/* A writer that starts while the agent's file is root's takes its originals into its own journal (once): the
	 * engine that then gives up root is given that file, which the writer no longer trusts. */
	if (geteuid() == 0) {
		char path[160];

		snprintf(path, sizeof(path), "%s/originals", root);
		assert_int_equal(unlink(path), 0);
		put_file("/store.originals", "net.core.somaxconn 1024\nnet.core.netdev_budget 300\n");
		assert_int_equal(chmod(fallback, 0600), 0);
		assert_int_equal(writer_init(&w, why, sizeof(why)), 0);
		assert_true(w.orig[0].known);
		assert_string_equal(w.orig[0].value, "1024");
		writer_free(&w);
		assert_int_equal(writer_init(&w, why, sizeof(why)), 0);
		writer_free(&w);
		{
			FILE *f = fopen(path, "r");
			char all[256] = "";

			assert_non_null(f);
			assert_int_equal(fread(all, 1, sizeof(all) - 1, f) > 0, 1);
			fclose(f);
			assert_string_equal(all, "net.core.somaxconn 1024\nnet.core.netdev_budget 300\n");
		}
	}
	wk.ops->release(&wk);
	drop_root(set);
}

static void never(int result, const char *text, void *ctx)
{
	(void)result, (void)text, (void)ctx;
	fail();
}

/* A writer that dies while nothing is asked is seen (wclient_gone), and a closed client answers -EPIPE until freed. */
static void test_writer_dies_idle(void **state)
{
	struct wclient *c;
	struct wmsg m = {.type = WMSG_SET};
	uv_loop_t loop;
	char why[128];
	int sv[2];

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(wclient_new(&loop, sv[0], 1000, &c), 0);
	assert_false(wclient_gone(c));
	close(sv[1]);
	for (int i = 0; i < 100 && !wclient_gone(c); i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_true(wclient_gone(c));
	wclient_close(c);
	strcpy(m.name, "net.core.somaxconn");
	strcpy(m.value, "8192");
	assert_int_equal(wclient_request(c, &m, never, NULL, why, sizeof(why)), -EPIPE);
	assert_string_equal(why, "the writer is gone");
	wclient_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* The engine stops with requests in both channels (its read of a log each tick, a write): the writer takes them,
 * cannot answer, and ends as at any engine's close, exit 0 (found in CI: exit 1 at the engine's SIGTERM). Twenty
 * rounds: most close before the writer is scheduled. */
static void test_engine_gone_with_requests(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	uint8_t buf[WMSG_MAX];
	int fd, rfd, len;
	pid_t child;

	(void)state;
	make_root(set, "2048\n");
	for (int round = 0; round < 20; round++) {
		struct wmsg m = {.type = WMSG_READ, .id = 7};

		child = fork_writer_reads(set, false, &fd, &rfd);
		strcpy(m.name, "net.core.somaxconn");
		len = wmsg_encode(&m, buf, sizeof(buf));
		assert_true(len > 0);
		assert_int_equal(send(rfd, buf, (size_t)len, MSG_NOSIGNAL), len);
		m.type = WMSG_SET;
		m.id = 8;
		strcpy(m.value, "4096");
		len = wmsg_encode(&m, buf, sizeof(buf));
		assert_int_equal(send(fd, buf, (size_t)len, MSG_NOSIGNAL), len);
		close(rfd);
		end_writer(child, fd);
	}
	drop_root(set);
}

/* The writer's start, as the engine waits for it before READY: its hello; its end before it (it could not start);
 * nothing within the timeout; something else first. */
static void test_hello(void **state)
{
	struct wmsg m = {.type = WMSG_RESULT, .id = 5};
	uint8_t buf[WMSG_MAX];
	char err[256];
	int sv[2], n;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(wclient_await_hello(sv[0], 10, err, sizeof(err)), -ETIMEDOUT);
	assert_non_null(strstr(err, "did not start within 10 ms"));
	assert_int_equal(writer_hello(sv[1]), 0);
	assert_int_equal(wclient_await_hello(sv[0], 1000, err, sizeof(err)), 0);
	/* an answer, not the hello: a writer that says something else first is not taken as started */
	snprintf(m.text, sizeof(m.text), "%s", WMSG_HELLO);
	n = wmsg_encode(&m, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(send(sv[1], buf, (size_t)n, 0), n);
	assert_int_equal(wclient_await_hello(sv[0], 1000, err, sizeof(err)), -EBADMSG);
	assert_int_equal(send(sv[1], "NXW1", 4, 0), 4);
	assert_int_equal(wclient_await_hello(sv[0], 1000, err, sizeof(err)), -EBADMSG);
	close(sv[1]);
	assert_int_equal(wclient_await_hello(sv[0], 1000, err, sizeof(err)), -EPIPE);
	assert_non_null(strstr(err, "ended before it started"));
	close(sv[0]);
}

/* How many descriptors this process has open. */
static size_t open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	size_t n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A netlink socket's protocol, or -1 when FD is no netlink socket. */
static int nl_protocol(int fd)
{
	int v = 0;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0 || v != AF_NETLINK)
		return -1;
	l = sizeof(v);
	return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l) < 0 ? -1 : v;
}

/* The sockets of nginx's namespace through a forked writer (nssock, the engine's end): asked, passed with the
 * answer, taken once both came; one said to be of another master than the one asked for is not taken; a refusal is
 * said once, then asked again. */
static void test_sockets(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct nssock *ns;
	struct wclient *c;
	uv_loop_t loop;
	char why[WMSG_TEXT_MAX], path[128];
	int fd, diag = -1, route = -1, r, refused;
	size_t fds;
	pid_t child;

	(void)state;
	make_root(set, "4096\n");
	child = fork_writer(set, false, &fd);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(wclient_new(&loop, fd, 5000, &c), 0);
	assert_int_equal(nssock_new(c, &ns), 0);
	assert_int_equal(nssock_netlink(ns, 4242, &diag, &route, why, sizeof(why)), -EINPROGRESS);
	assert_non_null(strstr(why, "asked of the writer"));
	while ((r = nssock_netlink(ns, 4242, &diag, &route, why, sizeof(why))) == -EINPROGRESS)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(r, 0);
	assert_int_equal(nl_protocol(diag), NETLINK_SOCK_DIAG);
	assert_int_equal(nl_protocol(route), NETLINK_ROUTE);
	close(diag);
	close(route);
	/* The writer says 4242, the engine wants 4243 (nginx restarted): never taken, and each one that came closed. */
	fds = open_fds();
	for (int i = 0; i < 20; i++) {
		assert_int_equal(nssock_netlink(ns, 4243, &diag, &route, why, sizeof(why)), -EINPROGRESS);
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(2000);
	}
	assert_true(open_fds() <= fds + 2); /* at most the two of the last answers, held until the next call */
	/* Refused: said (once for both), with the writer's why; asked again after. A refusal of the second socket that
	 * came after the first was said is said once more. */
	snprintf(path, sizeof(path), "%s/nosocket", root);
	put_file("/nosocket", "");
	while ((r = nssock_netlink(ns, 4243, &diag, &route, why, sizeof(why))) == -EINPROGRESS)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(r, -EACCES);
	assert_non_null(strstr(why, "no socket today"));
	for (int i = 0; i < 20; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(2000);
	}
	assert_int_equal(unlink(path), 0);
	refused = 0;
	while ((r = nssock_netlink(ns, 4242, &diag, &route, why, sizeof(why))) == -EINPROGRESS || r == -EACCES) {
		if (r == -EACCES)
			assert_true(++refused <= 1);
		uv_run(&loop, UV_RUN_ONCE);
	}
	assert_int_equal(r, 0);
	close(diag);
	close(route);
	nssock_free(ns);
	wclient_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	end_writer(child, -1);
	drop_root(set);
}

/* RTM_NEWADDR of 10.99.0.LAST/24 on lo sent on FD (a bound NETLINK_ROUTE socket), to the kernel's address (TO) or
 * without one: the kernel's answer, 0 or -errno. */
static int add_address(int fd, uint8_t last, bool to)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
		struct rtattr rta;
		uint8_t addr[4];
	} req = {
		.nh = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_NEWADDR,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, .nlmsg_seq = 1},
		.ifa = {.ifa_family = AF_INET, .ifa_prefixlen = 24, .ifa_index = 1},
		.rta = {.rta_len = RTA_LENGTH(4), .rta_type = IFA_LOCAL},
		.addr = {10, 99, 0, last},
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	char buf[512];
	ssize_t n;

	if ((to ? sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) :
		  send(fd, &req, sizeof(req), 0)) < 0)
		return -errno;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < (ssize_t)(sizeof(struct nlmsghdr) + sizeof(struct nlmsgerr)))
		return -EIO;
	return ((struct nlmsgerr *)NLMSG_DATA((struct nlmsghdr *)buf))->error;
}

/* A socket the writer passes gives no right of the writer's: what is sent on it is held to the sender's own
 * capabilities. A route socket made by root (as netns_socket makes it) changes lo's addresses in root's hands; in a
 * process with none (the engine to come: uid nobody), the same socket is refused, sent to the kernel's address or
 * not. In a network namespace of the test's own. */
static void test_socket_carries_no_capability(void **state)
{
	pid_t child;
	int status;

	(void)state;
	if (geteuid() != 0) {
		testskip("needs root (a network namespace of its own, and capabilities to lose)");
		return;
	}
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		const char *what;
		int fd;

		if (unshare(CLONE_NEWNET) < 0)
			_exit(errno == EPERM ? 77 : 10);
		fd = netns_socket(0, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, (uid_t)-1, &what);
		if (fd < 0)
			_exit(11);
		if (add_address(fd, 1, true) != 0) /* root: the test can fail */
			_exit(12);
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(13);
		if (add_address(fd, 2, true) != -EPERM || add_address(fd, 3, false) != -EPERM)
			_exit(14);
		_exit(0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		testskip("root without CAP_SYS_ADMIN (a container): no network namespace of its own");
		return;
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

static volatile sig_atomic_t alarms;

/* Each alarm interrupts a poll; the 100th (2 s) stops them. */
static void on_alarm(int sig)
{
	static const struct itimerval off = {{0, 0}, {0, 0}};

	(void)sig;
	if (++alarms >= 100)
		setitimer(ITIMER_REAL, &off, NULL);
}

/* Signals during the wait (SIGALRM every 20 ms here, as SIGHUP or SIGCHLD would come) do not start the timeout
 * again: the wait ends within it. Before, each one restarted the whole wait, and 300 ms took as long as the signals
 * kept coming (2 s here). */
static void test_hello_signals(void **state)
{
	struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART: poll fails with EINTR */
	struct itimerval every = {.it_interval = {0, 20000}, .it_value = {0, 20000}}, off = {{0, 0}, {0, 0}};
	struct timespec t0, t1;
	char err[256];
	int sv[2];
	int64_t ms;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* the signals stop after 2 s whatever happens, so that the old wait ended too (and failed below) */
	alarms = 0;
	assert_int_equal(wclient_await_hello(sv[0], 300, err, sizeof(err)), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(setitimer(ITIMER_REAL, &off, NULL), 0);
	signal(SIGALRM, SIG_DFL);
	ms = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 300);
	assert_true(ms < 1500);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_through_the_writer),
		cmocka_unit_test(test_set_async_driver),
		cmocka_unit_test(test_restore),
		cmocka_unit_test(test_writer_silent),
		cmocka_unit_test(test_timeouts_in_order),
		cmocka_unit_test(test_read_channel),
		cmocka_unit_test(test_before_hook),
		cmocka_unit_test(test_writer_dies_idle),
		cmocka_unit_test(test_restore_from_agent_originals),
		cmocka_unit_test(test_engine_gone_with_requests),
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_hello_signals),
		cmocka_unit_test(test_sockets),
		cmocka_unit_test(test_tcp_sockets),
		cmocka_unit_test(test_dump_through_the_writer),
		cmocka_unit_test(test_socket_carries_no_capability),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
