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
	if (ctl->json)
		ctl_print_json(r);
	else
		printf("revert started: %lld knob write(s); see ngxctl history\n",
		       (long long)json_integer_value(json_object_get(r, API_K_STARTED)));
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_revert = {
	.name = "revert",
	.usage = "ID|--all [--offline] | --setup [--force]",
	.summary = "put change ID (or every change) back; --offline works with the agent stopped; --setup puts "
		   "back the files of ngxctl setup",
	.exec = revert_exec,
};
