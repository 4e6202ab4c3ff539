#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int max_level = LOG_INFO;
static log_sink_fn current_sink;

static const struct {
	const char *name;
	int prio;
} levels[] = {
	{"error", LOG_ERR}, {"warning", LOG_WARNING}, {"notice", LOG_NOTICE}, {"info", LOG_INFO}, {"debug", LOG_DEBUG},
};

void log_set_level(int max_prio)
{
	max_level = max_prio;
}

int log_get_level(void)
{
	return max_level;
}

int log_level_parse(const char *s, int *prio)
{
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (strcmp(s, levels[i].name) == 0) {
			*prio = levels[i].prio;
			return 0;
		}
	}
	return -EINVAL;
}

void log_set_sink(log_sink_fn sink)
{
	current_sink = sink;
}

static void stderr_sink(int prio, const char *msg)
{
	const char *tag = prio <= LOG_ERR ? "error: " : prio == LOG_WARNING ? "warning: " : "";
	fprintf(stderr, "%s%s\n", tag, msg);
}

static void emit(int prio, const char *const *fields, const char *fmt, va_list ap)
{
	char msg[1024];

	if (prio > max_level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (current_sink)
		current_sink(prio, fields, msg);
	else
		stderr_sink(prio, msg);
}

void log_msg(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(prio, NULL, fmt, ap);
	va_end(ap);
}

void log_fields(int prio, const char *const *fields, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(prio, fields, fmt, ap);
	va_end(ap);
}
