/* Unit tests for agent/api/api_auth.c and the nettle functions it and the console use: the token file's rules and
 * digests, token matching, the bearer header, peer credentials, and the Host and Origin checks of the TCP listener. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <nettle/base64.h>
#include <nettle/sha2.h>

#include "api/api_auth.h"

static char path[64];

#define A64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static void hex(const uint8_t *d, char *out)
{
	for (int i = 0; i < API_TOKEN_DIGEST_LEN; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* What api_auth.c and api_console.c rely on nettle for, against the standards' own examples: SHA-256 of FIPS 180-2
 * appendix B.1 and of the empty string, and base64 with padding (RFC 4648 section 10), whose raw encoder writes
 * exactly BASE64_ENCODE_RAW_LENGTH bytes and no NUL. A nettle that changed either fails here, not in a browser
 * refusing the console's script. */
static void test_nettle(void **state)
{
	static const struct {
		const char *in, *want;
	} b64[] = {
		{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
		{"foobar", "Zm9vYmFy"},
	};
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	char got[2 * SHA256_DIGEST_SIZE + 1], out[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];

	(void)state;
	sha256_init(&h);
	sha256_digest(&h, sizeof(d), d);
	hex(d, got);
	assert_string_equal(got, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_init(&h);
	sha256_update(&h, 3, (const uint8_t *)"abc");
	sha256_digest(&h, sizeof(d), d);
	hex(d, got);
	assert_string_equal(got, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* The form of a CSP hash-source, as the console sends it. */
	memset(out, '#', sizeof(out));
	base64_encode_raw(out, sizeof(d), d);
	assert_int_equal(out[sizeof(out) - 1], '#');
	out[sizeof(out) - 1] = '\0';
	assert_string_equal(out, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
	for (size_t i = 0; i < sizeof(b64) / sizeof(b64[0]); i++) {
		size_t n = strlen(b64[i].in);

		memset(out, '#', sizeof(out));
		base64_encode_raw(out, n, (const uint8_t *)b64[i].in);
		assert_int_equal(BASE64_ENCODE_RAW_LENGTH(n), strlen(b64[i].want));
		assert_int_equal(out[BASE64_ENCODE_RAW_LENGTH(n)], '#');
		if (memcmp(out, b64[i].want, strlen(b64[i].want)) != 0)
			fail_msg("base64 of '%s': got '%.*s', want '%s'", b64[i].in, (int)BASE64_ENCODE_RAW_LENGTH(n), out,
				 b64[i].want);
	}
}

static void write_tokens(const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
	int fd;

	(void)state;
	strcpy(path, "/tmp/ngxat-tokens-XXXXXX");
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

/* The digests a token file's secrets are kept as: FIPS 180-2's two-block example (appendix B.2), and the padding's
 * edges (55 bytes fit one block, 56 need two; 64 fill one), as coreutils' sha256sum gives them. */
static void test_token_digests(void **state)
{
	static const char *want[] = {
		"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
		"9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
		"b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
		"7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
		"ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
	};
	struct api_tokens t = {0};
	char text[512], err[512], got[2 * API_TOKEN_DIGEST_LEN + 1];

	(void)state;
	snprintf(text, sizeof(text), "fips:abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq\n"
		 "a55:%.55s\na56:%.56s\na63:%.63s\na64:%.64s\n", A64, A64, A64, A64);
	write_tokens(text, 0600);
	assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 5);
	for (size_t i = 0; i < t.n; i++) {
		hex(t.v[i].digest, got);
		if (strcmp(got, want[i]) != 0)
			fail_msg("token %s: got %s", t.v[i].name, got);
	}
	assert_string_equal(api_tokens_match(&t, A64, 56), "a56");
	api_tokens_clear(&t);
}

static void test_tokens_good(void **state)
{
	struct api_tokens t = {0};
	char err[512] = "";

	(void)state;
	write_tokens("# who may act over TCP\n\nci-bot:abcdefghijklmnop0123\n  ops.alice:AAAAbbbbCCCCdddd+/==  \r\n"
		     "#x:ignored\nz_9-.:~~~~~~~~~~~~~~~~\n",
		     0600);
	assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.v[0].name, "ci-bot");
	assert_string_equal(t.v[1].name, "ops.alice");
	assert_string_equal(api_tokens_match(&t, "abcdefghijklmnop0123", 20), "ci-bot");
	assert_string_equal(api_tokens_match(&t, "AAAAbbbbCCCCdddd+/==", 20), "ops.alice");
	assert_string_equal(api_tokens_match(&t, "~~~~~~~~~~~~~~~~", 16), "z_9-.");
	/* A prefix, a longer string, another case, the empty string: none is a token. */
	assert_null(api_tokens_match(&t, "abcdefghijklmnop012", 19));
	assert_null(api_tokens_match(&t, "abcdefghijklmnop01234", 21));
	assert_null(api_tokens_match(&t, "ABCDEFGHIJKLMNOP0123", 20));
	assert_null(api_tokens_match(&t, "", 0));
	/* A mode stricter than 0600 is fine. */
	write_tokens("a:abcdefghijklmnop\n", 0400);
	assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 1);
	assert_null(api_tokens_match(&t, "abcdefghijklmnop0123", 20));
	api_tokens_clear(&t);
	assert_int_equal(t.n, 0);
	assert_null(api_tokens_match(&t, "abcdefghijklmnop", 16));
	/* An empty file: no tokens, no error. */
	write_tokens("# nobody yet\n", 0600);
	assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 0);
}

static void test_tokens_refused(void **state)
{
	static const struct {
		const char *text;
		int line;
		const char *want;
	} bad[] = {
		{"ci-bot abcdefghijklmnop\n", 1, "expected NAME:SECRET"},
		{"# c\n:abcdefghijklmnop\n", 2, "1 to 32 characters"},
		{"a23456789012345678901234567890123:abcdefghijklmnop\n", 1, "1 to 32 characters"},
		{"ci bot:abcdefghijklmnop\n", 1, "letters, digits"},
		{"ci/bot:abcdefghijklmnop\n", 1, "letters, digits"},
		{"ci:short\n", 1, "16 to 256 characters"},
		{"ci:abcdefgh ijklmnopq\n", 1, "may only have letters"},
		{"ci:abcdefghijklmnop=x\n", 1, "may only have letters"},
		{"ci:=abcdefghijklmnop\n", 1, "may only have letters"},
		{"ci:abcdefghijklmnop\nci:qrstuvwxyz0123456\n", 2, "given twice"},
		{"ci:abcdefghijklmnop\nops:abcdefghijklmnop\n", 2, "would be ambiguous"},
	};
	struct api_tokens t = {0};
	char err[512], want[128], text[1200];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_tokens(bad[i].text, 0600);
		assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "%s:%d: ", path, bad[i].line);
		if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, bad[i].want))
			fail_msg("case %zu: got '%s', want '%s...%s'", i, err, want, bad[i].want);
	}
	snprintf(text, sizeof(text), "ci:%0600d\n", 0);
	write_tokens(text, 0600);
	assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":1: line longer than"));
	/* A refused file leaves the tokens in force as they were. */
	write_tokens("ci:abcdefghijklmnop\n", 0600);
	assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), 0);
	write_tokens("ci:abc\n", 0600);
	assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), -EINVAL);
	assert_string_equal(api_tokens_match(&t, "abcdefghijklmnop", 16), "ci");
	/* Mode: readable by the group or others, or writable by them. */
	write_tokens("ci:abcdefghijklmnop\n", 0640);
	assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "mode 0640"));
	assert_non_null(strstr(err, "readable or writable by others"));
	write_tokens("ci:abcdefghijklmnop\n", 0602);
	assert_int_equal(api_tokens_load(path, geteuid(), &t, err, sizeof(err)), -EPERM);
	/* Not a regular file; no file at all. */
	assert_int_equal(api_tokens_load("/tmp", geteuid(), &t, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "not a regular file"));
	assert_int_equal(api_tokens_load("/nonexistent/api.tokens", geteuid(), &t, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/api.tokens"));
	/* Owned by someone other than root and the agent's user (needs root to give the file away). */
	if (geteuid() == 0) {
		write_tokens("ci:abcdefghijklmnop\n", 0600);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(api_tokens_load(path, 0, &t, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "owned by another user"));
		/* ... unless that user is the agent's. */
		assert_int_equal(api_tokens_load(path, 65534, &t, err, sizeof(err)), 0);
	}
}

static void test_bearer(void **state)
{
	const char *tok;
	size_t len;

	(void)state;
	assert_int_equal(api_bearer("Bearer abcdefghijklmnop", &tok, &len), 0);
	assert_int_equal(len, 16);
	assert_memory_equal(tok, "abcdefghijklmnop", 16);
	assert_int_equal(api_bearer("bearer   x+/y==  ", &tok, &len), 0);
	assert_int_equal(len, 6);
	assert_memory_equal(tok, "x+/y==", 6);
	assert_int_equal(api_bearer("Basic YWxhZGRpbjpvcGVuc2VzYW1l", &tok, &len), -EINVAL);
	assert_int_equal(api_bearer("Bearer", &tok, &len), -EINVAL);
	assert_int_equal(api_bearer("Bearer ", &tok, &len), -EINVAL);
	assert_int_equal(api_bearer("Bearer a b", &tok, &len), -EINVAL);
	assert_int_equal(api_bearer("Bearer a\"b", &tok, &len), -EINVAL);
	assert_int_equal(api_bearer("Bearerabc", &tok, &len), -EINVAL);
	assert_int_equal(api_bearer(NULL, &tok, &len), -EINVAL);
}

static void test_peer(void **state)
{
	gid_t groups[] = {10, 20, 30};
	struct api_unix_peer p;
	int sv[2];

	(void)state;
	assert_true(api_in_group(20, 5, groups, 3));
	assert_true(api_in_group(5, 5, groups, 3));
	assert_false(api_in_group(6, 5, groups, 3));
	assert_false(api_in_group(6, 5, NULL, 0));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(api_unix_peer(sv[0], getegid(), &p), 0);
	assert_int_equal(p.pid, getpid());
	assert_int_equal(p.uid, geteuid());
	assert_int_equal(p.gid, getegid());
	/* In the socket's group (its primary group here), or root: may act. */
	assert_true(p.may_act);
	if (geteuid() != 0) {
		assert_int_equal(api_unix_peer(sv[0], 54321, &p), 0);
		assert_false(p.may_act);
	}
	close(sv[0]);
	close(sv[1]);
	/* Not a socket: the credentials cannot be read. */
	sv[0] = open("/dev/null", O_RDONLY);
	assert_int_equal(api_unix_peer(sv[0], 0, &p), -ENOTSOCK);
	close(sv[0]);
	assert_int_equal(api_unix_peer(-1, 0, &p), -EBADF);
}

static void test_hosts(void **state)
{
	struct api_hosts h;

	(void)state;
	assert_int_equal(api_hosts_init(&h, "127.0.0.1:9180"), 0);
	assert_false(h.any);
	assert_true(api_host_ok(&h, "127.0.0.1:9180"));
	assert_true(api_host_ok(&h, "LOCALHOST:9180"));
	assert_true(api_host_ok(&h, "[::1]:9180"));
	assert_true(api_host_ok(&h, NULL));
	assert_false(api_host_ok(&h, "evil.example:9180"));
	assert_false(api_host_ok(&h, "127.0.0.1:9181"));
	assert_false(api_host_ok(&h, "127.0.0.1"));
	assert_false(api_host_ok(&h, ""));
	assert_int_equal(api_hosts_init(&h, "[::1]:9180"), 0);
	assert_true(api_host_ok(&h, "[::1]:9180"));
	assert_true(api_host_ok(&h, "localhost:9180"));
	assert_int_equal(api_hosts_init(&h, "10.1.2.3:80"), 0);
	assert_true(api_host_ok(&h, "10.1.2.3:80"));
	assert_true(api_host_ok(&h, "10.1.2.3"));
	assert_false(api_host_ok(&h, "localhost:80"));
	assert_int_equal(api_hosts_init(&h, "0.0.0.0:9180"), 0);
	assert_true(h.any);
	assert_true(api_host_ok(&h, "anything:1"));
	assert_int_equal(api_hosts_init(&h, "[::]:9180"), 0);
	assert_true(h.any);
	assert_int_equal(api_hosts_init(&h, "nonsense"), -EINVAL);

	assert_true(api_origin_ok(NULL, "127.0.0.1:9180"));
	assert_true(api_origin_ok("http://127.0.0.1:9180", "127.0.0.1:9180"));
	assert_true(api_origin_ok("HTTP://LOCALHOST:9180", "localhost:9180"));
	assert_false(api_origin_ok("http://evil.example", "127.0.0.1:9180"));
	assert_false(api_origin_ok("https://127.0.0.1:9180", "127.0.0.1:9180"));
	assert_false(api_origin_ok("http://127.0.0.1:9180", "localhost:9180"));
	assert_false(api_origin_ok("null", "127.0.0.1:9180"));
	assert_false(api_origin_ok("http://127.0.0.1:9180", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nettle),
		cmocka_unit_test_setup_teardown(test_token_digests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tokens_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tokens_refused, setup, teardown),
		cmocka_unit_test(test_bearer),
		cmocka_unit_test(test_peer),
		cmocka_unit_test(test_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
