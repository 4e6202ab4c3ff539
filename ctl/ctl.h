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

struct ctl {
	char socket[CONFIG_PATH_MAX];
	char config[CONFIG_PATH_MAX]; /* the agent configuration (for revert --offline) */
	bool json; /* --json: print the API's JSON as is */
};

struct ctl_verb {
	const char *name;
	const char *usage;   /* arguments, after the verb */
	const char *summary; /* one line for --help */
	int (*exec)(struct ctl *ctl, int argc, char **argv); /* exit code */
};

extern const struct ctl_verb verb_status;
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
extern const struct ctl_verb verb_doctor;

/* GET PATH (with its query) from the agent; the parsed body in *OUT. On failure -errno and a message in ERR
 * (for a problem object, its detail). */
int ctl_get(const struct ctl *ctl, const char *path, json_t **out, char *err, size_t errlen);
/* POST BODY (not consumed) to PATH; the answer in *OUT. Same errors as ctl_get. */
int ctl_post(const struct ctl *ctl, const char *path, json_t *body, json_t **out, char *err, size_t errlen);
/* Print a JSON value to stdout, indented. */
void ctl_print_json(json_t *v);

#endif
