#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "termsafe.h"

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

/* MSG (LEN bytes, cut there) without a UTF-8 sequence the cut left partial: the lines stay UTF-8 for the journal
 * (text escaped with termsafe.h, a client's included, was made invalid again by a cut inside a character). */
static void cut_whole(char *msg, size_t len)
{
	size_t i = len, need;

	while (i > 0 && len - i < 4 && ((unsigned char)msg[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0 || ((unsigned char)msg[i - 1] & 0xc0) != 0xc0)
		return; /* ends in ASCII or stray continuation bytes: nothing partial to drop */
	need = (unsigned char)msg[i - 1] >= 0xf0 ? 4 : (unsigned char)msg[i - 1] >= 0xe0 ? 3 : 2;
	if (len - (i - 1) < need)
		msg[i - 1] = '\0';
}

/* A line is emitted escaped as for a terminal (termsafe.h) whenever it is not clean: whatever a caller put in it
 * (a client's bytes from an access log line, a request, nginx -T), no control byte or invalid UTF-8 reaches the
 * journal or a terminal that shows the log (issue 22). Text escaped already is clean and stays as it is. */
static void emit(int prio, const char *const *fields, const char *fmt, va_list ap)
{
	char msg[1024], esc[1024];
	const char *out = msg;
	int n;

	if (prio > max_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n >= (int)sizeof(msg))
		cut_whole(msg, sizeof(msg) - 1);
	if (!termsafe_clean(msg, strlen(msg)))
		out = termsafe_escape(msg, strlen(msg), esc, sizeof(esc));
	if (current_sink)
		current_sink(prio, fields, out);
	else
		stderr_sink(prio, out);
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
