/*
 * ctl: what every ngxctl verb shares: the options, the client for the agent's API, and the verb table.
 *
 * ngxctl links common/ only, never agent code; it speaks to the agent through the wire format in
 * common/proto.h.
 */
#ifndef NGXAT_CTL_H
#define NGXAT_CTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* Exit codes, the same for every verb (ngxctl(8)). The doctor's 1 and 2 are its findings. */
#define CTL_EXIT_OK 0
#define CTL_EXIT_USAGE 2        /* a bad command line */
#define CTL_EXIT_UNREACHABLE 3  /* the agent could not be reached, or failed (5xx, a garbled answer) */
#define CTL_EXIT_REFUSED 4      /* the agent refused the request (400, 409: see the message) */
#define CTL_EXIT_NOT_FOUND 5    /* no such change, proposal or knob (404) */
#define CTL_EXIT_DENIED 6       /* not allowed (401, 403): a token, or membership of the socket's group */

struct ctl {
	char socket[CONFIG_PATH_MAX];
	char url[CONFIG_PATH_MAX];    /* --url: the agent's TCP listener instead of the socket */
	char token[512];              /* --token-file: the bearer token sent with every request */
	char config[CONFIG_PATH_MAX]; /* the agent configuration (for revert --offline) */
	bool json; /* --json: print the API's JSON as is */
};

struct ctl_verb {
	const char *name;
	const char *usage;   /* arguments, after the verb */
	const char *summary; /* one line for ngxctl --help */
	const char *help;    /* ngxctl VERB --help: its arguments and options, then examples; lines end in \n */
	const char *exits;   /* its own exit codes, a sentence after the common ones ("1 warnings, ..."), or NULL */
	/* The exit code. ARGV[0] is the verb; main answers --help and -h before the verb sees them. */
	int (*exec)(struct ctl *ctl, int argc, char **argv);
};

extern const struct ctl_verb verb_status;
extern const struct ctl_verb verb_fleet;
extern const struct ctl_verb verb_top;
extern const struct ctl_verb verb_knobs;
extern const struct ctl_verb verb_history;
extern const struct ctl_verb verb_revert;
extern const struct ctl_verb verb_propose;
extern const struct ctl_verb verb_clear;
extern const struct ctl_verb verb_proposals;
extern const struct ctl_verb verb_approve;
extern const struct ctl_verb verb_reject;
extern const struct ctl_verb verb_trial;
extern const struct ctl_verb verb_pause;
extern const struct ctl_verb verb_resume;
extern const struct ctl_verb verb_show;
extern const struct ctl_verb verb_audit;
extern const struct ctl_verb verb_doctor;
extern const struct ctl_verb verb_advisories;
extern const struct ctl_verb verb_setup;

/* GET PATH (with its query) from the agent; the parsed body in *OUT. On failure -errno and a message in ERR
 * (for a problem object, its detail). */
int ctl_get(const struct ctl *ctl, const char *path, json_t **out, char *err, size_t errlen);
/* POST BODY (not consumed) to PATH; the answer in *OUT. Same errors as ctl_get. */
int ctl_post(const struct ctl *ctl, const char *path, json_t *body, json_t **out, char *err, size_t errlen);
/* Print "ngxctl: ERR" to stderr; the exit code for R, an error of ctl_get or ctl_post. */
int ctl_fail(const char *err, int r);
/* The token in PATH (the first line that is not a comment: SECRET or NAME:SECRET) into OUT. 0 or -errno with
 * ERR. */
int ctl_read_token(const char *path, char *out, size_t outlen, char *err, size_t errlen);
/* Whether ARG, a name given to VERB (WHAT: "knob", "actor"), can be one: not empty, no '-' first (an option
 * mistyped, or one this verb does not know, is never sent to the agent as a name), none of "/&#?" or a blank (it
 * goes into a URL). Else a usage message on stderr. */
bool ctl_name_ok(const char *verb, const char *what, const char *arg);
/* Print a JSON value to stdout, indented. */
void ctl_print_json(json_t *v);

#endif
