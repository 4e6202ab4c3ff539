/*
 * setup: `ngx-autotune --setup` and `--revert-setup`: prepare a stock nginx for the agent, reversibly.
 *
 * It works on the file the running nginx was started with: the master of [nginx] pid_file, its -c and -p read from
 * /proc/PID/cmdline (no -c: nginx's compiled-in --conf-path, from nginx -V), and refuses, changing nothing, when
 * [nginx] conf names another file (nginx would never read the edits). Every nginx -t, -T and -V runs through
 * nginx_ctl_run with that file, in nginx's network namespace, and so do the setup's own checks (a free loopback
 * port, the new stub_status). With no master running: [nginx] conf (else nginx's default), from the setup's own
 * namespace.
 *
 * Runs `nginx -T`, asks setup_plan for the edits, prints them as a unified diff, and only with APPLY writes
 * them: every file it touches is first copied byte for byte into a journal of its own (STATE_DIR/setup/N/, the
 * manifest fsync'd before the first write), then written whole (a temporary file renamed over it, the old mode
 * and owner kept, a symbolic link's target written in place); `nginx -t` must pass, or every file is put back
 * at once and nginx's message is the error; then nginx is reloaded (SIGHUP to that master) and the stub_status it
 * added is fetched until it answers. The revert puts the files of every journaled setup back, newest first,
 * refusing a file changed since unless FORCE, then tests and reloads the running master's file the same way.
 * Used from the command line only (the agent need not run; it is not asked). It reads no clock.
 */
#ifndef NGXAT_SETUP_H
#define NGXAT_SETUP_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"

struct setup_opts {
	const struct config *cfg;  /* [nginx] binary, conf, pid_file, include_dir, stub_status_url, access_log; root */
	const char *config_path;   /* the agent.conf to point at what the setup adds */
	const char *state_dir;     /* the journal goes under STATE_DIR/setup */
	bool apply;                /* write; else only print the diff */
	bool force;                /* revert even files changed since the setup wrote them */
	FILE *out;                 /* the diff and the account of what was done */
};

/* Plan, print and (with APPLY) carry out the setup. 0 (also when nothing was to do), or -errno with ERR. */
int setup_run(const struct setup_opts *o, char *err, size_t errlen);
/* Put back what every journaled setup wrote. 0 (also when there was none), or -errno with ERR. */
int setup_revert(const struct setup_opts *o, char *err, size_t errlen);

#endif
