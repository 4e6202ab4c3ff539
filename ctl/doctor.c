/*
 * ngxctl doctor: the advisories, as the running agent has them (GET /v1/advisories), or, when no agent answers,
 * from a local run of `ngx-autotune --doctor` (the same checks, counters since boot instead of the agent's window).
 * ngxctl links common/ only, so the local run is the agent binary's, read back as JSON and shown the same way.
 * Exit: 0 nothing above info, 1 warnings, 2 critical, 3 no report (the agent refused, the local run failed).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "proto.h"
#include "strutil.h"

#define LOCAL_OUT_MAX (16u << 20)

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static long long num(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static const char *ago(long long ms, long long now_ms, char *buf, size_t n)
{
	long long s = (now_ms - ms) / 1000;

	if (ms <= 0)
		snprintf(buf, n, "never");
	else if (s < 60)
		snprintf(buf, n, "%llds ago", s < 0 ? 0 : s);
	else if (s < 3600)
		snprintf(buf, n, "%lldm ago", s / 60);
	else if (s < 86400)
		snprintf(buf, n, "%lldh %lldm ago", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, n, "%lldd %lldh ago", s / 86400, s % 86400 / 3600);
	return buf;
}

/* `ngx-autotune --doctor [-c CONFIG]`'s standard output, parsed (its standard error goes to ours). */
static int run_local(const struct ctl *ctl, json_t **out, char *err, size_t errlen)
{
	const char *bin = getenv("NGXAT_AGENT_BIN") ? getenv("NGXAT_AGENT_BIN") : NGXAT_SBINDIR "/ngx-autotune";
	char *args[] = { (char *)bin, (char *)"--doctor", NULL, NULL, NULL };
	struct sbuf b;
	json_error_t jerr;
	int fds[2], status;
	pid_t pid;
	char chunk[65536];
	ssize_t n;

	/* The agent reads the default configuration itself when it exists; -c would insist on it. */
	if (access(ctl->config, F_OK) == 0) {
		args[2] = (char *)"-c";
		args[3] = (char *)ctl->config;
	}
	if (pipe(fds) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -EAGAIN;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execv(bin, args);
		fprintf(stderr, "ngxctl: cannot run %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	sbuf_init(&b);
	while ((n = read(fds[0], chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || b.len + (size_t)n > LOCAL_OUT_MAX)
			break;
		sbuf_add(&b, chunk, (size_t)n);
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*out = json_loads(sbuf_str(&b), 0, &jerr);
	sbuf_free(&b);
	/* The report decides the exit code, not the child's status: 1 and 2 mean findings there. */
	if (!*out || !json_is_array(json_object_get(*out, API_K_ADVISORIES))) {
		json_decref(*out);
		*out = NULL;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
			snprintf(err, errlen, "%s could not be run", bin);
		else
			snprintf(err, errlen, "%s --doctor gave no report (exit %d)", bin,
				 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		return -EIO;
	}
	return 0;
}

static void print_wrapped(const char *label, const char *text)
{
	const size_t width = 100;
	size_t col = 0;
	const char *p = text;

	printf("    %-9s", label);
	while (*p) {
		size_t w = strcspn(p, " ");

		if (col && col + 1 + w > width - 12) {
			printf("\n    %-9s", "");
			col = 0;
		} else if (col) {
			putchar(' ');
			col++;
		}
		printf("%.*s", (int)w, p);
		col += w;
		p += w;
		while (*p == ' ')
			p++;
	}
	putchar('\n');
}

static void report(json_t *r, bool local, long long now_ms)
{
	json_t *counts = json_object_get(r, API_K_COUNTS), *arr = json_object_get(r, API_K_ADVISORIES), *a;
	long long crit = num(counts, API_K_SEV_CRITICAL), warn = num(counts, API_K_SEV_WARNING);
	long long info = num(counts, API_K_SEV_INFO);
	char b1[32], b2[32];
	size_t i;

	if (local)
		printf("ngx-autotune doctor: checked now, locally (the agent is not running: counters since boot, no "
		       "history)\n");
	else if (num(r, API_K_CHECKED) == 0)
		printf("ngx-autotune doctor: the agent has not finished its first check yet%s\n",
		       json_is_true(json_object_get(r, API_K_RUNNING)) ? " (it is running now)" : "");
	else
		printf("ngx-autotune doctor: checked %s by the running agent%s\n",
		       ago(num(r, API_K_CHECKED), now_ms, b1, sizeof(b1)),
		       json_is_true(json_object_get(r, API_K_RUNNING)) ? " (a new check is running)" : "");
	printf("%lld critical, %lld warning%s, %lld info\n", crit, warn, warn == 1 ? "" : "s", info);
	json_array_foreach(arr, i, a)
	{
		const char *sev = str(a, API_K_SEVERITY), *sub = str(a, API_K_SUBJECT), *where = str(a, API_K_WHERE);
		char tag[16];
		size_t k;

		snprintf(tag, sizeof(tag), "%s", sev ? sev : "?");
		for (k = 0; tag[k]; k++)
			tag[k] = (char)(tag[k] >= 'a' && tag[k] <= 'z' ? tag[k] - 32 : tag[k]);
		printf("\n%-9s %s%s%s%s: %s\n", tag, str(a, API_K_ID) ? str(a, API_K_ID) : "?", sub ? " [" : "",
		       sub ? sub : "", sub ? "]" : "", str(a, API_K_TITLE) ? str(a, API_K_TITLE) : "");
		print_wrapped("evidence", str(a, API_K_EVIDENCE) ? str(a, API_K_EVIDENCE) : "");
		if (where)
			print_wrapped("where", where);
		print_wrapped("fix", str(a, API_K_FIX) ? str(a, API_K_FIX) : "");
		print_wrapped("see", str(a, API_K_REF) ? str(a, API_K_REF) : "");
		if (!local)
			printf("    %-9sfirst seen %s, last seen %s\n", "when", ago(num(a, API_K_FIRST_SEEN), now_ms, b1,
			       sizeof(b1)), ago(num(a, API_K_LAST_SEEN), now_ms, b2, sizeof(b2)));
	}
}

/* The report, from the agent or (ALLOW_LOCAL, no agent) from ngx-autotune --doctor; exit by severity. */
static int advise(struct ctl *ctl, int argc, char **argv, bool allow_local)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "local", no_argument, NULL, 'l' },
					      { NULL, 0, NULL, 0 } };
	bool local = false, json = ctl->json;
	char err[512];
	struct timespec ts;
	json_t *r = NULL, *counts;
	int opt, rc;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'j': json = true; break;
		case 'l': local = true; break;
		default: return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "usage: ngxctl doctor [--json] [--local]\n");
		return 2;
	}
	if (!local) {
		rc = ctl_get(ctl, API_PATH_ADVISORIES, &r, err, sizeof(err));
		if (allow_local && (rc == -ECONNREFUSED || rc == -ENOENT)) {
			/* No agent here (or one without a doctor): the same checks, run here. */
			fprintf(stderr, "ngxctl: %s; checking locally with ngx-autotune --doctor\n", err);
			local = true;
		} else if (rc < 0) {
			return ctl_fail(err, rc);
		}
	}
	if (local && run_local(ctl, &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "ngxctl: %s\n", err);
		return CTL_EXIT_UNREACHABLE;
	}
	if (json) {
		ctl_print_json(r);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		report(r, local, (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	}
	counts = json_object_get(r, API_K_COUNTS);
	rc = num(counts, API_K_SEV_CRITICAL) ? 2 : num(counts, API_K_SEV_WARNING) ? 1 : 0;
	json_decref(r);
	return rc;
}

static int doctor_exec(struct ctl *ctl, int argc, char **argv)
{
	return advise(ctl, argc, argv, true);
}

static int advisories_exec(struct ctl *ctl, int argc, char **argv)
{
	return advise(ctl, argc, argv, false);
}

const struct ctl_verb verb_advisories = {
	.name = "advisories",
	.usage = "[--json]",
	.summary = "the running agent's advisories (as doctor, never run locally); exit 0 clean, 1 warnings, 2 critical",
	.help = "The running agent's advisories, as ngxctl doctor shows them, never run locally.\n"
		"\n  --json  print the API's JSON\n"
		"\nExample:\n"
		"  ngxctl advisories\n",
	.exits = "1 warnings and no critical finding, 2 critical findings",
	.exec = advisories_exec,
};

const struct ctl_verb verb_doctor = {
	.name = "doctor",
	.usage = "[--json] [--local]",
	.summary = "advisories with evidence; exit 0 clean, 1 warnings, 2 critical",
	.help = "The doctor's findings (GET /v1/advisories), each with its evidence and fix; with no agent answering, or\n"
		"with --local, the same checks run here by ngx-autotune --doctor (counters since boot).\n"
		"\n  --json   print the report's JSON\n"
		"  --local  run the checks here even when an agent answers\n"
		"\nExamples:\n"
		"  ngxctl doctor\n"
		"  ngxctl doctor --local --json\n",
	.exits = "1 warnings and no critical finding, 2 critical findings, 3 also when there is no report",
	.exec = doctor_exec,
};
