/*
 * ngxctl: the operator's command line for ngx-autotune. One file per verb, each a table entry.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "proto.h"

static const struct ctl_verb *const verbs[] = {
	&verb_status, &verb_top,   &verb_knobs,  &verb_proposals, &verb_approve, &verb_reject,
	&verb_propose, &verb_trial, &verb_show,  &verb_history,   &verb_audit,   &verb_revert,
	&verb_pause,  &verb_resume, &verb_clear,  &verb_doctor, &verb_advisories, &verb_setup, &verb_fleet,
};

#define COMMON_EXITS                                                                                            \
	"0 ok, 2 usage, 3 the agent could not be reached (or failed), 4 the agent refused the request (see the\n" \
	"message), 5 no such change, proposal or knob, 6 not allowed (a token, or the socket's group)"

static void usage(FILE *f)
{
	fprintf(f, "Usage: ngxctl [-s SOCKET | -u URL [-t TOKEN_FILE]] [-c CONFIG] [--json] VERB [ARGS]\n"
		   "Talk to the ngx-autotune agent over its API socket (or its TCP listener).\n\n"
		   "  -s, --socket PATH      API socket; else the one in -c CONFIG; else $NGXCTL_SOCKET; else the one\n"
		   "                         in the default configuration; else " NGXAT_DEFAULT_SOCKET "\n"
		   "  -u, --url URL          the agent's TCP listener instead (e.g. http://127.0.0.1:9180); else\n"
		   "                         $NGXCTL_URL. Reads need no token there; acts do\n"
		   "  -t, --token-file FILE  a file holding the bearer token (SECRET or NAME:SECRET); else\n"
		   "                         $NGXCTL_TOKEN_FILE\n"
		   "  -c, --config FILE      agent configuration to read the socket path from (default "
		   NGXAT_DEFAULT_CONFIG ")\n"
		   "  -j, --json             print the API's JSON\n"
		   "  -h, --help             this help\n\nVerbs:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(f, "  %s%s%s\n      %s\n", verbs[i]->name, verbs[i]->usage[0] ? " " : "", verbs[i]->usage,
			verbs[i]->summary);
	fprintf(f, "\nngxctl VERB --help: the verb's options, examples and exit codes.\n"
		   "\nExit codes: " COMMON_EXITS "; doctor: 1 warnings, 2 critical findings.\n");
}

/* ngxctl VERB --help: its usage, what it does, its options and examples, its exit codes. */
static void verb_help(const struct ctl_verb *v)
{
	printf("usage: ngxctl [OPTIONS] %s%s%s\n%s.\nOPTIONS come before the verb: ngxctl --help.\n\n%s\nExit codes: "
	       COMMON_EXITS ".\n", v->name, v->usage[0] ? " " : "", v->usage, v->summary, v->help);
	if (v->exits)
		printf("%s: %s.\n", v->name, v->exits);
}

/* Whether the verb's arguments ask for its help: --help or -h, before a "--" ends the options. */
static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"socket", required_argument, NULL, 's'},
					     {"config", required_argument, NULL, 'c'},
					     {"json", no_argument, NULL, 'j'},
					     {"url", required_argument, NULL, 'u'},
					     {"token-file", required_argument, NULL, 't'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	struct ctl ctl = {0};
	const char *config = NGXAT_DEFAULT_CONFIG, *sock = NULL, *url = NULL, *token_file = NULL;
	bool config_given = false;
	struct config cfg;
	char err[512];
	int c, rc;

	/* '+': stop at the verb, its options are its own. */
	while ((c = getopt_long(argc, argv, "+s:c:ju:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'u': url = optarg; break;
		case 't': token_file = optarg; break;
		case 'c': config = optarg; config_given = true; break;
		case 'j': ctl.json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	/* A verb's help needs no agent, no socket and no configuration. */
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[optind], verbs[i]->name) == 0 && wants_help(argc - optind, argv + optind)) {
			verb_help(verbs[i]);
			return 0;
		}
	if (!url && !sock)
		url = getenv("NGXCTL_URL");
	if (!token_file)
		token_file = getenv("NGXCTL_TOKEN_FILE");
	if (url) {
		if (sock) {
			fprintf(stderr, "ngxctl: --socket and --url exclude each other\n");
			return 2;
		}
		if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
			fprintf(stderr, "ngxctl: --url: expected http://HOST:PORT or https://HOST:PORT, not '%s'\n", url);
			return 2;
		}
		snprintf(ctl.url, sizeof(ctl.url), "%s", url);
	}
	if (token_file && token_file[0] &&
	    ctl_read_token(token_file, ctl.token, sizeof(ctl.token), err, sizeof(err)) < 0) {
		fprintf(stderr, "ngxctl: %s\n", err);
		return 2;
	}
	/* An explicit -s or -c wins over the environment, which wins over the default configuration. */
	if (!sock && !config_given)
		sock = getenv("NGXCTL_SOCKET");
	if (!sock) {
		if (config_load(config, config_given, &cfg, err, sizeof(err)) < 0) {
			fprintf(stderr, "ngxctl: %s\n", err);
			return 2;
		}
		sock = cfg.socket_path;
	}
	snprintf(ctl.socket, sizeof(ctl.socket), "%s", sock);
	snprintf(ctl.config, sizeof(ctl.config), "%s", config);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (strcmp(argv[optind], verbs[i]->name) != 0)
			continue;
		curl_global_init(CURL_GLOBAL_DEFAULT);
		rc = verbs[i]->exec(&ctl, argc - optind, argv + optind);
		curl_global_cleanup();
		return rc;
	}
	fprintf(stderr, "ngxctl: unknown verb '%s'\n", argv[optind]);
	usage(stderr);
	return 2;
}
