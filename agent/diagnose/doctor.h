/*
 * doctor (the daemon side): runs the checks of core/doctor.c against the live host and keeps the advisories.
 *
 * Owns when the checks run (at start, when nginx reloads: a new master pid or a new generation of workers, and
 * every [doctor] interval), what they are given (nginx's configuration from `nginx -T`, run as a child through
 * nginx_ctl_dump and killed past [nginx] timeout; the facts: sysctls as nginx's network namespace sees them,
 * /proc/PID/limits, /proc/meminfo, /sys/class/net, cpufreq, THP and the access log's last lines, read under the
 * configured root; and a window of the last 5 to 10 minutes of frames, kept per tick as a few sums and extremes),
 * and the advisories with their first and last sighting. A new finding goes to the log with structured fields
 * (NGXAT_ADVISORY, NGXAT_SEVERITY, NGXAT_SUBJECT); a new or newly critical one also to the audit trail.
 *
 * Nothing here blocks the loop: nginx -T is a child process, the reads and the checks run on the thread pool with
 * copies of what they need, and only the window's bookkeeping (per tick) and the merge of findings run on the loop.
 * Must not write to the host.
 */
#ifndef NGXAT_DOCTOR_DAEMON_H
#define NGXAT_DOCTOR_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "core/doctor.h"
#include "core/metrics.h"

struct agent;
struct doctor;

/* The doctor of agent A (its loop, configuration, sampler, store and knob environment must outlive it). 0 or
 * -ENOMEM. */
int doctor_new(struct agent *a, struct doctor **out);
/* Free D; a run still in flight is abandoned when it completes (call after the loop has stopped). NULL is fine. */
void doctor_free(struct doctor *d);
/* One tick's frame FR: kept in the window; starts a run when one is due (start, nginx reload, interval). */
void doctor_tick(struct doctor *d, const struct frame *fr);
/* Start a run at NOW_MS (the loop's clock) unless one is in flight (then one follows it). WHY is logged. */
void doctor_run(struct doctor *d, int64_t now_ms, const char *why);
/* No new runs: the agent is stopping. */
void doctor_stop(struct doctor *d);
/* Whether a run is in flight. */
bool doctor_busy(const struct doctor *d);
/* The current advisories (checked_ms 0 before the first run completes). */
const struct doctor_state *doctor_advisories(const struct doctor *d);

/*
 * The one-shot doctor (ngx-autotune --doctor): one frame from A's sampler, facts since boot, nginx -T on A's loop,
 * the checks, into ST (merged at NOW_MS). Blocks until done (bounded by [nginx] timeout). 0 or -errno with ERR.
 */
int doctor_run_once(struct agent *a, int64_t now_ms, struct doctor_state *st, char *err, size_t errlen);

#endif
