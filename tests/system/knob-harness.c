/*
 * knob-harness: one nginx knob driven by hand, for tests/system/nginx-knobs.sh. Builds a knob_env and a policy
 * from the command line, then runs each ACTION in order on a libuv loop, printing one line per action:
 *   probe            "probe rc=R why=TEXT"
 *   read             "read rc=R value=TEXT"
 *   write VALUE      "write rc=R msg=TEXT" (an asynchronous write is waited for on the loop)
 * R is 0 or -errno. Exit status 0 when every action returned 0, 1 otherwise, 2 on a usage error.
 * The driver is called through its ops table directly: no dry-run layer, no policy checks (this tests drivers).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "core/policy.h"
#include "act/knob.h"
#include "act/nginx_ctl.h"

struct wait {
	bool done;
	int rc;
	char msg[KNOB_WHY_MAX];
};

static void on_done(struct knob *k, int result, const char *msg, void *ctx)
{
	struct wait *w = ctx;

	(void)k;
	w->done = true;
	w->rc = result;
	snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "");
}

static pid_t read_pid(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &v) != 1)
		v = 0;
	fclose(f);
	return (pid_t)v;
}

static int usage(void)
{
	fprintf(stderr, "usage: knob-harness [--nginx-bin B] [--nginx-conf C] [--include-dir D] [--pid-file F]\n"
			"                    [--timeout-ms N] [--root R] KIND TARGET CONTEXT TYPE ACTION...\n"
			"  KIND: nginx_directive | listen_queue | listen_param | upstream_keepalive;\n"
			"  ACTION: probe | read | write VALUE\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct knob_env env = { .root = "/", .nginx_bin = "nginx", .nginx_conf = "",
				.include_dir = "/etc/nginx/ngx-autotune", .nginx_timeout_ms = 10000 };
	struct knob_policy pol;
	struct knob k;
	const char *pid_file = NULL;
	uv_loop_t loop;
	int i = 1, failed = 0;

	while (i + 1 < argc && strncmp(argv[i], "--", 2) == 0) {
		if (strcmp(argv[i], "--nginx-bin") == 0)
			env.nginx_bin = argv[i + 1];
		else if (strcmp(argv[i], "--nginx-conf") == 0)
			env.nginx_conf = argv[i + 1];
		else if (strcmp(argv[i], "--include-dir") == 0)
			env.include_dir = argv[i + 1];
		else if (strcmp(argv[i], "--pid-file") == 0)
			pid_file = argv[i + 1];
		else if (strcmp(argv[i], "--timeout-ms") == 0)
			env.nginx_timeout_ms = atoll(argv[i + 1]);
		else if (strcmp(argv[i], "--root") == 0)
			env.root = argv[i + 1];
		else
			return usage();
		i += 2;
	}
	if (argc - i < 5)
		return usage();
	memset(&pol, 0, sizeof(pol));
	snprintf(pol.name, sizeof(pol.name), "harness.%s", argv[i + 1]);
	snprintf(pol.kind_name, sizeof(pol.kind_name), "%s", argv[i]);
	snprintf(pol.target, sizeof(pol.target), "%s", argv[i + 1]);
	snprintf(pol.context, sizeof(pol.context), "%s", argv[i + 2]);
	if (knobval_type_parse(argv[i + 3], &pol.type) < 0)
		return usage();
	pol.nelem = 1;
	pol.enabled = true;
	memset(&k, 0, sizeof(k));
	snprintf(k.name, sizeof(k.name), "%s", pol.name);
	k.pol = &pol;
	k.env = &env;
	if (strcmp(argv[i], "nginx_directive") == 0) {
		pol.kind = POLICY_NGINX_DIRECTIVE;
		k.ops = &knob_nginx_ops;
	} else if (strcmp(argv[i], "listen_queue") == 0) {
		pol.kind = POLICY_LISTEN_QUEUE;
		k.ops = &knob_listen_ops;
	} else if (strcmp(argv[i], "listen_param") == 0) {
		pol.kind = POLICY_LISTEN_PARAM;
		k.ops = &knob_listen_param_ops;
	} else if (strcmp(argv[i], "upstream_keepalive") == 0) {
		pol.kind = POLICY_UPSTREAM_KEEPALIVE;
		k.ops = &knob_upstream_ops;
	} else {
		return usage();
	}
	if (uv_loop_init(&loop) < 0 || nginx_ctl_new(&env.nginx) < 0)
		return 1;
	env.loop = &loop;
	for (i += 4; i < argc; i++) {
		char buf[KNOB_VALUE_MAX] = "", why[KNOB_WHY_MAX] = "";
		int r;

		if (pid_file)
			env.nginx_pid = read_pid(pid_file);
		/* The engine hands the drivers its time; here the harness is the clock. */
		uv_update_time(&loop);
		env.now_ms = (int64_t)uv_now(&loop);
		if (strcmp(argv[i], "probe") == 0) {
			r = k.ops->probe(&k, why, sizeof(why));
			printf("probe rc=%d why=%s\n", r, why);
		} else if (strcmp(argv[i], "read") == 0) {
			r = k.ops->read(&k, buf, sizeof(buf));
			printf("read rc=%d value=%s\n", r, r == 0 ? buf : "");
		} else if (strcmp(argv[i], "write") == 0 && i + 1 < argc) {
			struct wait w = { 0 };

			r = k.ops->write(&k, argv[++i], why, sizeof(why), on_done, &w);
			if (r == -EINPROGRESS) {
				while (!w.done)
					uv_run(&loop, UV_RUN_ONCE);
				r = w.rc;
				snprintf(why, sizeof(why), "%s", w.msg);
			}
			printf("write rc=%d msg=%s\n", r, why);
		} else {
			return usage();
		}
		fflush(stdout);
		failed |= r != 0;
	}
	k.ops->release(&k);
	/* Background nginx -T runs started by reads finish and close their handles. */
	uv_run(&loop, UV_RUN_DEFAULT);
	nginx_ctl_free(env.nginx);
	if (uv_loop_close(&loop) != 0)
		fprintf(stderr, "knob-harness: handles left open on the loop\n");
	return failed;
}
