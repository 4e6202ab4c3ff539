/*
 * notify: the agent's words to systemd (sd_notify) and its log sink for the journal.
 *
 * Only this module includes systemd headers. Everything is a no-op outside systemd (no NOTIFY_SOCKET), so the
 * agent runs the same in a terminal, a test or a unit.
 */
#ifndef NGXAT_NOTIFY_H
#define NGXAT_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* READY=1 with STATUS=. */
void notify_ready(const char *status);
/* WATCHDOG=1, sent from the tick itself, with STATUS= when STATUS (may be NULL) changed. */
void notify_watchdog(const char *status);
/* RELOADING=1 with MONOTONIC_USEC (systemd >= 253 wants it; older ones ignore it). */
void notify_reloading(uint64_t monotonic_usec);
/* STOPPING=1. */
void notify_stopping(void);
/* True when stderr is connected to the journal (JOURNAL_STREAM matches stderr). */
bool notify_stderr_is_journal(void);
/* Send log messages to the journal with structured fields from now on. */
void notify_use_journal(void);
/* Send log messages to syslog (after daemonizing outside systemd). */
void notify_use_syslog(void);

#endif
