/* Unit tests for agent/priv/writer.c and knob_remote.c: the engine's knob writes through the writer over a real
 * SOCK_SEQPACKET socketpair, the writer a forked child with its own policy and a fake root: a value the policy
 * allows is written, one past its bounds or its step is refused by the writer whatever the engine says, an unknown
 * knob and bytes that are not a message are refused with why. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "act/knob.h"
#include "core/policy.h"
#include "priv/knob_remote.h"
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

static void test_set_through_the_writer(void **state)
{
	struct policy_set *set = calloc(1, sizeof(*set));
	struct knob_env env = {0};
	struct knob wk = {0}, ek = {0};
	size_t n;
	int sv[2];
	pid_t child;
	char why[256], got[64];
	uint8_t buf[WMSG_MAX];
	ssize_t len;
	struct wmsg res;

	(void)state;
	snprintf(root, sizeof(root), "/tmp/writer-XXXXXX");
	assert_non_null(mkdtemp(root));
	{
		char d[128];

		snprintf(d, sizeof(d), "mkdir -p %s/proc/sys/net/core", root);
		assert_int_equal(system(d), 0);
	}
	put_file("/proc/sys/net/core/somaxconn", "4096\n");
	policies(set);
	env.root = root;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* The writer: its own knobs from its own policies. */
		struct writer w = {.set = set, .knobs = &wk, .n = 1};

		close(sv[0]);
		if (knob_instantiate(&set->knobs[0], &env, &wk, 1, &n) < 0 || n != 1)
			_exit(2);
		_exit(writer_serve(&w, sv[1]) == 0 ? 0 : 3);
	}
	close(sv[1]);
	assert_int_equal(knob_instantiate(&set->knobs[0], &env, &ek, 1, &n), 0);
	assert_int_equal(knob_remote_wrap(&ek, sv[0], 5000), 0);

	/* Within the policy: written by the writer, read back by the engine. */
	assert_int_equal(ek.ops->write(&ek, "8192", why, sizeof(why), NULL, NULL), 0);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "8192\n");
	assert_int_equal(ek.ops->read(&ek, got, sizeof(got)), 0);
	assert_string_equal(got, "8192");
	/* Past the largest step (x4 from 8192) and past the bounds: refused by the writer, the file untouched. */
	assert_int_equal(ek.ops->write(&ek, "65535", why, sizeof(why), NULL, NULL), -ERANGE);
	assert_true(strlen(why) > 0);
	assert_int_equal(ek.ops->write(&ek, "1024", why, sizeof(why), NULL, NULL), -ERANGE);
	assert_int_equal(ek.ops->write(&ek, "lots", why, sizeof(why), NULL, NULL), -EINVAL);
	get_file("/proc/sys/net/core/somaxconn", got, sizeof(got));
	assert_string_equal(got, "8192\n");

	/* A knob the writer has no policy for, and bytes that are not a message. */
	{
		struct wmsg m = {.type = WMSG_SET, .id = 9};

		strcpy(m.name, "kernel.core_pattern");
		strcpy(m.value, "x");
		len = wmsg_encode(&m, buf, sizeof(buf));
		assert_true(len > 0);
		assert_int_equal(send(sv[0], buf, (size_t)len, 0), len);
		len = recv(sv[0], buf, sizeof(buf), 0);
		assert_int_equal(wmsg_decode(buf, (size_t)len, &res, why, sizeof(why)), 0);
		assert_int_equal(res.id, 9);
		assert_int_equal(res.result, -ENOENT);
		assert_non_null(strstr(res.text, "no knob kernel.core_pattern here"));
	}
	assert_int_equal(send(sv[0], "\x01\x02garbage", 9, 0), 9);
	len = recv(sv[0], buf, sizeof(buf), 0);
	assert_int_equal(wmsg_decode(buf, (size_t)len, &res, why, sizeof(why)), 0);
	assert_int_equal(res.result, -EBADMSG);
	assert_non_null(strstr(res.text, "shorter than a message"));

	/* The engine closes: the writer ends cleanly. */
	ek.ops->release(&ek);
	close(sv[0]);
	{
		int status;

		assert_int_equal(waitpid(child, &status, 0), child);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	{
		char d[128];

		snprintf(d, sizeof(d), "rm -rf %s", root);
		assert_int_equal(system(d), 0);
	}
	policy_set_free(set);
	free(set);
}

/* A writer that does not answer: the write ends after the wrap's timeout, and that request's late answer is dropped
 * when the next one's comes. */
static void test_writer_silent(void **state)
{
	struct knob_policy pol = {0};
	struct knob_env env = {.root = "/nonexistent"};
	struct knob ek = {.pol = &pol, .ops = &knob_sysctl_ops, .env = &env};
	struct wmsg m, res = {.type = WMSG_RESULT};
	uint8_t buf[WMSG_MAX];
	char why[256], err[64];
	ssize_t len;
	int sv[2];

	(void)state;
	strcpy(ek.name, "net.core.somaxconn");
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(knob_remote_wrap(&ek, sv[0], 0), -EINVAL);
	assert_int_equal(knob_remote_wrap(&ek, sv[0], 50), 0);
	assert_int_equal(ek.ops->write(&ek, "8192", why, sizeof(why), NULL, NULL), -ETIMEDOUT);
	assert_string_equal(why, "the writer did not answer within 50 ms");
	/* The writer's side got request 1; it answers it late, then answers request 2 as asked. */
	len = recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT);
	assert_int_equal(wmsg_decode(buf, (size_t)len, &m, err, sizeof(err)), 0);
	assert_int_equal(m.id, 1);
	res.id = 1, res.result = -EIO;
	len = wmsg_encode(&res, buf, sizeof(buf));
	assert_int_equal(send(sv[1], buf, (size_t)len, 0), len);
	res.id = 2, res.result = 0;
	strcpy(res.text, "written");
	len = wmsg_encode(&res, buf, sizeof(buf));
	assert_int_equal(send(sv[1], buf, (size_t)len, 0), len);
	assert_int_equal(ek.ops->write(&ek, "8192", why, sizeof(why), NULL, NULL), 0);
	assert_string_equal(why, "written");
	/* The writer gone: said so. */
	close(sv[1]);
	assert_int_equal(ek.ops->write(&ek, "8192", why, sizeof(why), NULL, NULL), -EPIPE);
	assert_string_equal(why, "the writer is gone");
	ek.ops->release(&ek);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_through_the_writer),
		cmocka_unit_test(test_writer_silent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
