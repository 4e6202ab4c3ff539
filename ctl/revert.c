#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "proto.h"
#include "strutil.h"

/*
 * --offline runs the agent binary's own revert (the same engine, journal and drivers) instead of linking agent
 * code here: ngxctl links common/ only. The agent refuses it while a running agent holds the store's lock.
 */
static int offline(struct ctl *ctl, const char *what)
{
	const char *bin = getenv("NGXAT_AGENT_BIN") ? getenv("NGXAT_AGENT_BIN") : NGXAT_SBINDIR "/ngx-autotune";
	char *args[] = {(char *)bin, (char *)"--revert", (char *)what, (char *)"-c", ctl->config, NULL};

	if (strcmp(what, "setup") == 0 || strcmp(what, "setup-force") == 0) {
		/* The files of ngxctl setup: put back by the agent binary, agent running or not (no store lock). */
		args[1] = (char *)"--revert-setup";
		args[2] = (char *)"-c";
		args[3] = ctl->config;
		args[4] = strcmp(what, "setup-force") == 0 ? (char *)"--force" : NULL;
	}

	fflush(stdout);
	execv(bin, args);
	fprintf(stderr, "ngxctl: cannot run %s: %s\n", bin, strerror(errno));
	return CTL_EXIT_UNREACHABLE;
}

/* Whether a knob's revert write failed: then ngxctl exits 4. */
static int revert_failed(json_t *r)
{
	json_t *k;
	size_t i;

	json_array_foreach(json_object_get(r, API_K_KNOBS), i, k) {
		const char *outcome = json_string_value(json_object_get(k, API_K_OUTCOME));

		if (outcome && strcmp(outcome, "failed") == 0)
			return CTL_EXIT_REFUSED;
	}
	return 0;
}

/* What the revert did, knob by knob: the changes it undoes, the value put back, and whether its write is done,
 * still pending (behind a write under way, an nginx -t and reload), not needed, skipped or failed. */
static int print_revert(json_t *r)
{
	long long started = json_integer_value(json_object_get(r, API_K_STARTED));
	long long pending = json_integer_value(json_object_get(r, API_K_PENDING));
	long long more = json_integer_value(json_object_get(r, API_K_MORE));
	json_t *knobs = json_object_get(r, API_K_KNOBS), *k, *id;
	size_t i, j;

	if (json_array_size(knobs) == 0 && !more) {
		printf("revert: nothing to put back\n");
		return 0;
	}
	printf("revert: %lld knob write(s)", started);
	if (pending)
		printf(", %lld still pending", pending);
	printf("; see ngxctl history\n");
	json_array_foreach(knobs, i, k) {
		const char *outcome = json_string_value(json_object_get(k, API_K_OUTCOME));
		const char *detail = json_string_value(json_object_get(k, API_K_DETAIL));
		json_t *ids = json_object_get(k, API_K_CHANGES);

		printf("  %s back to %s (change%s", json_string_value(json_object_get(k, API_K_KNOB)),
		       json_string_value(json_object_get(k, API_K_TO)), json_array_size(ids) > 1 ? "s" : "");
		json_array_foreach(ids, j, id)
			printf("%s %lld", j ? "," : "", (long long)json_integer_value(id));
		if (!json_array_size(ids))
			printf(" none open");
		printf("): %s%s%s\n", outcome ? outcome : "?", detail && detail[0] ? ": " : "", detail ? detail : "");
	}
	if (more)
		printf("  and %lld more knob(s): ngxctl history\n", more);
	return revert_failed(r);
}

static int revert_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {{"all", no_argument, NULL, 'a'},
					     {"offline", no_argument, NULL, 'o'},
					     {"setup", no_argument, NULL, 's'},
					     {"force", no_argument, NULL, 'f'},
					     {NULL, 0, NULL, 0}};
	bool all = false, off = false, setup = false, force = false;
	char path[128], err[512];
	int64_t id = 0;
	json_t *body, *r;
	int opt, rc;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'a': all = true; break;
		case 'o': off = true; break;
		case 's': setup = true; break;
		case 'f': force = true; break;
		default: return 2;
		}
	}
	if (setup) {
		if (all || optind != argc) {
			fprintf(stderr, "usage: ngxctl revert --setup [--force]\n");
			return 2;
		}
		return offline(ctl, force ? "setup-force" : "setup");
	}
	if (all == (optind < argc) || optind + (all ? 0 : 1) != argc ||
	    (!all && str_to_i64(argv[optind], 1, INT64_MAX, &id) < 0)) {
		fprintf(stderr, "usage: ngxctl revert ID|--all [--offline] | --setup [--force]\n");
		return 2;
	}
	if (off)
		return offline(ctl, all ? "all" : argv[optind]);
	if (all)
		snprintf(path, sizeof(path), "%s", API_PATH_REVERT);
	else
		snprintf(path, sizeof(path), "%s/%lld/%s", API_PATH_CHANGES, (long long)id, API_ACTION_REVERT);
	body = json_object();
	rc = ctl_post(ctl, path, body, &r, err, sizeof(err));
	json_decref(body);
	if (rc < 0) {
		char msg[600];

		snprintf(msg, sizeof(msg), "%s%s", err,
			 rc == -ECONNREFUSED || rc == -EIO ? "; with the agent stopped: ngxctl revert --offline" : "");
		return ctl_fail(msg, rc);
	}
	if (ctl->json) {
		ctl_print_json(r);
		rc = revert_failed(r);
	} else {
		rc = print_revert(r);
	}
	json_decref(r);
	return rc;
}

const struct ctl_verb verb_revert = {
	.name = "revert",
	.usage = "ID|--all [--offline] | --setup [--force]",
	.summary = "put change ID (or every change) back; --offline works with the agent stopped; --setup puts "
		   "back the files of ngxctl setup",
	.help = "Puts a change back, in whatever state it is (kept, in trial, or still being applied: a write under way,\n"
		"an nginx -t and reload, is let finish and the value is put back right after it), and says what it did:\n"
		"one line per knob with the changes undone, the value put back, and done, pending, already, skipped\n"
		"(in conflict) or failed.\n"
		"\n  ID          the change to undo: its knob gets back the value it had before (ngxctl history)\n"
		"  --all       every knob the agent has written or is writing, back to its original value\n"
		"  --offline   with the agent stopped: runs ngx-autotune --revert (as root) on the same store\n"
		"  --setup     puts back the files of ngxctl setup, byte for byte (ngx-autotune --revert-setup)\n"
		"  --force     with --setup: also when a file was changed since\n"
		"\nExamples:\n"
		"  ngxctl revert 12\n"
		"  ngxctl revert --all\n"
		"  ngxctl revert --all --offline\n"
		"  ngxctl revert --setup\n",
	.exits = "with --offline or --setup, those of ngx-autotune (0 done, 1 refused or failed); 4 also when\n"
		 "a knob's revert write failed",
	.exec = revert_exec,
};
