/*
 * log: the one logging entry point for the agent and ngxctl.
 *
 * Messages go to a sink: stderr by default, the journal (with structured fields) when the agent installs its
 * journal sink. This module knows nothing of systemd so that ngxctl does not link it. Log once, in the layer that
 * decides what to do about the event.
 */
#ifndef NGXAT_LOG_H
#define NGXAT_LOG_H

#include <stdarg.h>
#include <syslog.h>

/*
 * A sink receives the priority, optional structured fields as "KEY=value" strings (NULL-terminated array, may be
 * NULL) and the formatted message.
 */
typedef void (*log_sink_fn)(int prio, const char *const *fields, const char *msg);

/* Set the most verbose priority that is emitted (LOG_ERR .. LOG_DEBUG). */
void log_set_level(int max_prio);
/* Current level. */
int log_get_level(void);
/* Parse "error", "warning", "notice", "info", "debug" into a priority: 0 or -EINVAL. */
int log_level_parse(const char *s, int *prio);
/* Install SINK (NULL restores stderr). */
void log_set_sink(log_sink_fn sink);
/* Log a formatted message. */
void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Log with structured fields (NULL-terminated "KEY=value" array). */
void log_fields(int prio, const char *const *fields, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
