/* A datagram from the engine as the writer handles it (writer_handle, then on the read channel writer_handle_read),
 * whatever its bytes, against one real sysctl
 * knob on a fake root: the writer's own policy (somaxconn 4096..65535, x4 at most a step) and its journals. Every
 * answer is a RESULT that decodes with the request's id when the request decoded; and whatever was asked, the file
 * holds the original (2048) or a value the policy allows: a compromised engine can ask for nothing else. The read
 * channel writes nothing, and a READ of the knob answers what the file holds. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "act/knob.h"
#include "core/policy.h"
#include "priv/wmsg.h"
#include "priv/writer.h"

static char root[64], journal[96], file[128];
static struct policy_set set;
static struct knob_env env;
static struct knob k;
static struct writer w;

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	FUZZ_CHECK(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void cleanup(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_writer: %s left behind\n", root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const kv[][2] = {{"kind", "sysctl"}, {"target", "net.core.somaxconn"}, {"type", "int"},
					    {"min", "4096"}, {"max", "65535"}, {"step", "x2"}, {"max_step", "x4"},
					    {"trigger", "listen_overflows > 0"}, {"objective", "tcp.listen_overflows lower"}};
	char err[256], cmd[160];
	size_t n;

	(void)argc, (void)argv;
	/* tmpfs when there is one: the journals are synced at every write. */
	snprintf(root, sizeof(root), "%s/fuzz-writer-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	FUZZ_CHECK(mkdtemp(root) != NULL);
	atexit(cleanup);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/proc/sys/net/core", root);
	FUZZ_CHECK(system(cmd) == 0);
	snprintf(file, sizeof(file), "%s/proc/sys/net/core/somaxconn", root);
	snprintf(journal, sizeof(journal), "%s/originals", root);
	put(file, "2048\n");
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		FUZZ_CHECK(policy_set_add(&set, "t.policy", (int)i + 1, "knob net.core.somaxconn", kv[i][0], kv[i][1], err,
					  sizeof(err)) == 0);
	FUZZ_CHECK(policy_set_validate(&set, NULL, NULL, err, sizeof(err)) == 0);
	env.root = root;
	FUZZ_CHECK(knob_instantiate(&set.knobs[0], &env, &k, 1, &n) == 0 && n == 1);
	w.set = &set, w.knobs = &k, w.n = 1, w.originals = journal, w.env = &env;
	FUZZ_CHECK(writer_init(&w, err, sizeof(err)) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t out[WMSG_MAX];
	struct wmsg req, res;
	char err[128], now[32];
	int64_t v;
	int len, decoded = wmsg_decode(data, size, &req, err, sizeof(err));
	FILE *f;

	len = writer_handle(&w, data, size, out, sizeof(out));
	FUZZ_CHECK(len > 0);
	FUZZ_CHECK(wmsg_decode(out, (size_t)len, &res, err, sizeof(err)) == 0);
	FUZZ_CHECK(res.type == WMSG_RESULT);
	FUZZ_CHECK(res.id == (decoded == 0 ? req.id : 0));
	f = fopen(file, "r");
	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(fgets(now, sizeof(now), f) != NULL);
	fclose(f);
	v = strtoll(now, NULL, 10);
	FUZZ_CHECK(v == 2048 || (v >= 4096 && v <= 65535));
	{
		char again[32];
		int fd;

		len = writer_handle_read(&w, data, size, out, sizeof(out), &fd);
		FUZZ_CHECK(len > 0 && fd == -1);
		FUZZ_CHECK(wmsg_decode(out, (size_t)len, &res, err, sizeof(err)) == 0);
		FUZZ_CHECK(res.type == WMSG_RESULT);
		FUZZ_CHECK(res.id == (decoded == 0 ? req.id : 0));
		f = fopen(file, "r");
		FUZZ_CHECK(f != NULL);
		FUZZ_CHECK(fgets(again, sizeof(again), f) != NULL);
		fclose(f);
		FUZZ_CHECK(strcmp(again, now) == 0);
		if (decoded == 0 && (req.type == WMSG_SET || req.type == WMSG_RESTORE || req.type == WMSG_RELOAD))
			FUZZ_CHECK(res.result == -EPERM);
		if (decoded == 0 && req.type == WMSG_READ && strcmp(req.name, "net.core.somaxconn") == 0) {
			FUZZ_CHECK(res.result == 0);
			FUZZ_CHECK(strtoll(res.text, NULL, 10) == v);
		}
	}
	return 0;
}
