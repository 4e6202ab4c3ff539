#include "notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/uio.h>

#include "log.h"

static char last_status[512];

void notify_ready(const char *status)
{
	snprintf(last_status, sizeof(last_status), "%s", status);
	sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void notify_watchdog(const char *status)
{
	/* One datagram a tick: the status rides along only when it changed. */
	if (status && strcmp(status, last_status) != 0) {
		snprintf(last_status, sizeof(last_status), "%s", status);
		sd_notifyf(0, "WATCHDOG=1\nSTATUS=%s", status);
	} else {
		sd_notify(0, "WATCHDOG=1");
	}
}

void notify_reloading(uint64_t monotonic_usec)
{
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)monotonic_usec);
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}

bool notify_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static void journal_sink(int prio, const char *const *fields, const char *msg)
{
	struct iovec iov[16];
	char m[1100], p[16];
	size_t n = 0;

	snprintf(m, sizeof(m), "MESSAGE=%s", msg);
	snprintf(p, sizeof(p), "PRIORITY=%d", prio);
	iov[n++] = (struct iovec){m, strlen(m)};
	iov[n++] = (struct iovec){p, strlen(p)};
	iov[n++] = (struct iovec){(char *)"SYSLOG_IDENTIFIER=ngx-autotune", strlen("SYSLOG_IDENTIFIER=ngx-autotune")};
	for (size_t i = 0; fields && fields[i] && n < 16; i++)
		iov[n++] = (struct iovec){(char *)fields[i], strlen(fields[i])};
	sd_journal_sendv(iov, (int)n);
}

static void syslog_sink(int prio, const char *const *fields, const char *msg)
{
	(void)fields;
	syslog(prio, "%s", msg);
}

void notify_use_journal(void)
{
	log_set_sink(journal_sink);
}

void notify_use_syslog(void)
{
	openlog("ngx-autotune", LOG_PID, LOG_DAEMON);
	log_set_sink(syslog_sink);
}
