#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "proto.h"

/* After someone else changed a knob the agent wrote, accept their value: it becomes the knob's original. */
static int clear_exec(struct ctl *ctl, int argc, char **argv)
{
	char path[256], err[512];
	json_t *body, *r;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: ngxctl clear-conflict KNOB   (ngxctl knobs shows the knobs in conflict)\n");
		return 2;
	}
	if (!ctl_name_ok("clear-conflict", "knob", argv[1]))
		return 2;
	snprintf(path, sizeof(path), "%s/%s/%s", API_PATH_KNOBS, argv[1], API_ACTION_CLEAR_CONFLICT);
	body = json_object();
	rc = ctl_post(ctl, path, body, &r, err, sizeof(err));
	json_decref(body);
	if (rc < 0)
		return ctl_fail(err, rc);
	if (ctl->json)
		ctl_print_json(r);
	else
		printf("%s: conflict cleared; its live value is now its original\n", argv[1]);
	json_decref(r);
	return 0;
}

const struct ctl_verb verb_clear = {
	.name = "clear-conflict",
	.usage = "KNOB",
	.summary = "accept someone else's value of a knob in conflict as its new original",
	.help = "A knob in conflict (someone else wrote it after the agent) is frozen: the agent neither tunes it nor\n"
		"reverts it. This accepts the value it reads now as the knob's original, and the agent may act on it again.\n"
		"\n  KNOB  a knob in conflict (ngxctl knobs)\n"
		"\nExample:\n"
		"  ngxctl clear-conflict net.core.somaxconn\n",
	.exec = clear_exec,
};
