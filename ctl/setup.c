#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

/*
 * ngxctl setup runs the agent binary's --setup (it edits nginx's files and agent.conf as root; ngxctl links no
 * agent code), with the same configuration file as revert --offline.
 */
static int setup_exec(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {{"apply", no_argument, NULL, 'a'}, {NULL, 0, NULL, 0}};
	const char *bin = getenv("NGXAT_AGENT_BIN") ? getenv("NGXAT_AGENT_BIN") : NGXAT_SBINDIR "/ngx-autotune";
	bool apply = false;
	char *args[6];
	int opt, n = 0;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'a': apply = true; break;
		default: return CTL_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "usage: ngxctl setup [--apply]\n");
		return CTL_EXIT_USAGE;
	}
	args[n++] = (char *)bin;
	args[n++] = (char *)"--setup";
	if (apply)
		args[n++] = (char *)"--apply";
	args[n++] = (char *)"-c";
	args[n++] = ctl->config;
	args[n] = NULL;
	fflush(stdout);
	execv(bin, args);
	fprintf(stderr, "ngxctl: cannot run %s: %s\n", bin, strerror(errno));
	return CTL_EXIT_UNREACHABLE;
}

const struct ctl_verb verb_setup = {
	.name = "setup",
	.usage = "[--apply]",
	.summary = "prepare nginx for the agent: print the diff; --apply writes it, backed up (revert --setup)",
	.help = "Prepares nginx for the agent: the include files, stub_status on loopback and the timing log fields. Without\n"
		"--apply it prints the diff; with --apply it writes it (as root), each file backed up, undone by\n"
		"ngxctl revert --setup. Runs ngx-autotune --setup with the configuration of -c.\n"
		"\n  --apply  write the changes, then nginx -t and a reload\n"
		"\nExamples:\n"
		"  ngxctl setup\n"
		"  ngxctl setup --apply\n",
	.exits = "those of ngx-autotune --setup, which it runs (see ngx-autotune(8))",
	.exec = setup_exec,
};
