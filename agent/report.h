/*
 * report: the read-only snapshot of the agent that the loop publishes after every tick (chrony's RPT_* model).
 *
 * loop.c fills it at the end of a tick, from the sampler, the store and the engine; the API, /metrics and the
 * event stream render it and never reach into those modules for the agent's live state. Plain data: no
 * pointers into other modules, no functions, so a renderer needs no other header than this one.
 */
#ifndef NGXAT_REPORT_H
#define NGXAT_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "observe/sampler.h"
#include "store/store.h"

struct report_probe {
	const char *name;          /* static: sampler_probe_name */
	struct probe_health health;
};

struct report {
	bool valid;                 /* a tick has been published */
	int64_t start_ms;           /* wall clock at start */
	int64_t uptime_s;           /* at the last tick */
	int64_t tick_ms;            /* the configured interval */
	uint64_t ticks, late, stored;
	int64_t last_tick_ms;       /* wall clock of the last tick */
	double tick_cpu_median_ms;  /* median CPU of the recent ticks; NAN before the first */
	double tick_client_cpu_median_ms; /* ... of the synthetic client's share of each */
	double tick_own_cpu_median_ms;    /* ... of the rest of each: the agent's own work */
	double tick_cpu_last_ms;    /* CPU of the last tick; NAN before the first */
	uint64_t prom_unmapped;     /* metrics /metrics has no family for */
	struct store_health store;
	bool observe_only;          /* the engine writes nothing, for OBSERVE_WHY */
	char observe_why[256];
	pid_t nginx_pid;            /* 0: none found */
	unsigned nginx_workers;
	struct report_probe probes[PROBE_COUNT];
	char summary[512];          /* the one status line (STATUS=, /v1/status) */
};

#endif
