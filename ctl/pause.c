#include <stdio.h>

#include "ctl.h"
#include "proto.h"

static int toggle(struct ctl *ctl, int argc, const char *path, const char *verb)
{
	char err[512];
	json_t *body, *r;
	int rc;

	if (argc > 1) {
		fprintf(stderr, "ngxctl %s: takes no arguments\n", verb);
		return 2;
	}
	body = json_object();
	rc = ctl_post(ctl, path, body, &r, err, sizeof(err));
	json_decref(body);
	if (rc < 0)
		return ctl_fail(err, rc);
	if (ctl->json)
		ctl_print_json(r);
	else
		printf("tuning %s\n", json_is_true(json_object_get(r, API_K_PAUSED))
					      ? "paused (a trial under way is rolled back)"
					      : "resumed");
	json_decref(r);
	return 0;
}

static int pause_exec(struct ctl *ctl, int argc, char **argv)
{
	(void)argv;
	return toggle(ctl, argc, API_PATH_PAUSE, "pause");
}

static int resume_exec(struct ctl *ctl, int argc, char **argv)
{
	(void)argv;
	return toggle(ctl, argc, API_PATH_RESUME, "resume");
}

const struct ctl_verb verb_pause = {
	.name = "pause",
	.usage = "",
	.summary = "stop proposing and trying (a trial under way is rolled back)",
	.help = "Stops the tuning loop proposing and trying; a trial under way is rolled back and an approved proposal that\n"
		"has not started is withdrawn. Kept changes stay. Takes no arguments.\n"
		"\nExamples:\n"
		"  ngxctl pause\n"
		"  ngxctl resume\n",
	.exec = pause_exec,
};

const struct ctl_verb verb_resume = {
	.name = "resume",
	.usage = "",
	.summary = "propose and try again after a pause",
	.help = "Lets the tuning loop propose and try again after ngxctl pause. Takes no arguments.\n"
		"\nExample:\n"
		"  ngxctl resume\n",
	.exec = resume_exec,
};
