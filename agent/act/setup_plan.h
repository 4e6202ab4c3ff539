/*
 * setup_plan: what `ngx-autotune --setup` would change so that a stock nginx serves the agent, as text edits.
 *
 * From the configuration nginx loads (an `nginx -T` dump, act/nginx_conf.h) and the agent's configuration text,
 * this module works out the whole change: the agent's include files (created empty where missing), the include
 * lines in their contexts (main, events {}, http {}), a file of its own included in http {} with the
 * ngxat_json log_format, an access log in that format for the agent to read (next to every access_log the
 * operator set below http {}, since those levels do not inherit it), and a stub_status location on a
 * loopback-only server of its own port; and the agent.conf lines that point the agent at them. Every edit is the
 * whole text of one file before and after, so that the caller can print a diff, back the file up byte for byte
 * and put it back exactly. Nothing already in place is changed again: a second plan over the result is empty.
 * It also works out which main file nginx runs: the one the running master was started with (its -c and -p, else
 * nginx's compiled-in defaults), from the texts setup.c reads. It reads no file, runs nothing and logs nothing
 * (setup.c does).
 */
#ifndef NGXAT_SETUP_PLAN_H
#define NGXAT_SETUP_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "act/nginx_conf.h"

#define SETUP_EDITS_MAX 64
#define SETUP_FORMAT "ngxat_json"        /* the log_format the agent parses best */
#define SETUP_FILE "setup.conf"          /* the agent's own http {} file, in the include directory */
#define SETUP_STATUS_PATH "/nginx_status"

/* What the setup is for. */
struct setup_params {
	const char *include_dir;    /* the agent's include files: [nginx] include_dir */
	const char *agent_log;      /* the access log the agent reads once set up (written in SETUP_FORMAT) */
	uint16_t status_port;       /* the loopback port of the stub_status server, when one is added */
};

/* One file's change: TEXT_OLD (NULL when the file does not exist yet) becomes TEXT_NEW. */
struct setup_edit {
	char path[4096];
	char *text_old;
	size_t len_old;
	char *text_new;
	size_t len_new;
};

/* The whole change, and what it found already in place. */
struct setup_plan {
	struct setup_edit edits[SETUP_EDITS_MAX];
	size_t n;
	bool adds_status;           /* a stub_status server is added (agent.conf's stub_status_url must follow) */
	bool adds_log;              /* the agent's access log is added (agent.conf's access_log must follow) */
	char notes[8][512];         /* what was left as it is, and why, for the operator */
	size_t nnotes;
};

/*
 * Plan the nginx side over dump C with P. Files of the plan hold the dump's text as old text, except those the
 * dump lacks (the include files to create). 0 (an empty plan: nothing to do), -EINVAL with ERR (a layout it
 * cannot edit safely, such as an events or http block opened and closed on one line), -ENOMEM.
 */
int setup_plan_nginx(const struct nginx_conf *c, const struct setup_params *p, struct setup_plan *out, char *err,
		     size_t errlen);

/*
 * TEXT (an agent.conf, LEN bytes) with KEY = VALUE in section [SECTION]: an uncommented KEY line of that section
 * is replaced, else the line is added after the section's header (the section is appended when missing). No
 * other byte changes. New text (malloc'd, NUL-terminated) into *OUT, *OUTLEN; 0, -ENOMEM.
 */
int setup_ini_set(const char *text, size_t len, const char *section, const char *key, const char *value, char **out,
		  size_t *outlen);

/* Append the edit of PATH from OLD (NULL: a new file) to NEW to PLAN, merging with an edit of the same path
 * (its old text stays, its new text becomes NEW). Both texts are copied. 0, -ENOSPC, -ENOMEM. */
int setup_plan_add(struct setup_plan *plan, const char *path, const char *old, size_t oldlen, const char *new_text,
		   size_t newlen);

/* Free the texts of PLAN; it is empty again. */
void setup_plan_free(struct setup_plan *plan);

/* nginx's compiled-in prefix and configuration file from what `nginx -V` printed (VERSION): its configure
 * arguments' --prefix (else /usr/local/nginx/) and --conf-path (else conf/nginx.conf, under the prefix), into
 * PREFIX and CONF. 0, or -EBADMSG (not nginx -V's output), -ENAMETOOLONG, with ERR. */
int setup_nginx_builtin(const char *version, char *prefix, size_t prefixlen, char *conf, size_t conflen, char *err,
			size_t errlen);

/* The file a running nginx master was started with. */
struct setup_running {
	char conf[4096];            /* absolute */
	char prefix[4096];          /* its -p, absolute ("" when it has none) */
	bool builtin;               /* it has no -c: conf is nginx's compiled-in --conf-path */
};

/*
 * The configuration file a running nginx master was started with, resolved as nginx resolves it: TITLE is the
 * master's /proc/PID/cmdline (its process title, "nginx: master process BINARY FLAGS"), CWD its working directory
 * (where a relative -p or path resolves; NULL if unknown), VERSION what `nginx -V` printed (NULL if it did not run;
 * needed only without -c, or for a relative -c without -p). The file is -c, else the compiled-in --conf-path; a
 * relative one is under the prefix: -p, else the compiled-in --prefix. 0 with OUT, or -EINVAL (not a master's
 * title; the compiled-in path needed but unknown; a relative path and no CWD), -EBADMSG (a -c or -p without its
 * value), -ENAMETOOLONG, with ERR.
 */
int setup_running_conf(const char *title, const char *cwd, const char *version, struct setup_running *out,
		       char *err, size_t errlen);

/* Whether TITLE (a master's process title) has PATH as the value of its -c: a -c with blanks in it is split into
 * words in the title, so the one read from it is only its first word, and [nginx] conf says what it was. */
bool setup_title_names(const char *title, const char *path);

#endif
