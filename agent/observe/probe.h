/*
 * probe: the words the sampler and its callers share about probes: their ids (bits in a frame's probes_ok and
 * probes_bad, stored with every frame: append, never renumber), their health, and the results of the work done
 * off the loop (the stub_status fetch, the synthetic client's requests). Types only: the probes are in probe_*.c,
 * their table in sampler.c.
 */
#ifndef NGXAT_PROBE_H
#define NGXAT_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/client.h"

enum probe_id {
	PROBE_NETSTAT,    /* /proc/PID/net/netstat + snmp */
	PROBE_SOFTNET,    /* /proc/PID/net/softnet_stat */
	PROBE_SOFTIRQS,   /* /proc/softirqs */
	PROBE_STAT,       /* /proc/stat */
	PROBE_INTERRUPTS, /* /proc/interrupts */
	PROBE_NGINX,      /* the master pid from the pid file */
	PROBE_STUB,       /* stub_status over HTTP */
	PROBE_WORKERS,    /* workers' schedstat */
	PROBE_ACCESSLOG,  /* the access log */
	PROBE_ERRORLOG,   /* the error log */
	PROBE_NETLINK,    /* inet_diag + link stats */
	PROBE_CLIENT,     /* the synthetic client: requests to nginx from its namespace */
	PROBE_COUNT
};

struct probe_health {
	bool enabled;
	bool ok;
	bool saturated;     /* not ok because what it reads was too busy to answer (stub_status): a finding, not a gap */
	int err;            /* -errno of the last failure */
	char msg[192];      /* what failed, for status */
	uint64_t failures;  /* ticks this probe failed */
};

struct stub_result {
	int err;        /* 0 or -errno */
	char msg[192];
	char body[2048];
	size_t len;
	double cpu_ms;  /* CPU the fetch used on its thread (measured by the caller, loop.c) */
};

struct client_result {
	int err;        /* 0, or -errno when no request could be made (a URL it cannot ask) */
	char msg[192];  /* the first failure's reason */
	struct client_tick tick;
	double cpu_ms;  /* CPU the requests used on their thread (measured by the caller, loop.c) */
};

#endif
