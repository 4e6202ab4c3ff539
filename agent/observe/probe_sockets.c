/*
 * probe_sockets: listen queues, TCP states and link counters of nginx's network namespace, through the netlink
 * client (probe_netlink.h), which this probe opens, follows to a new nginx and reopens after an error. A row of
 * the sampler's probe table; see sampler_kit.h for the rules.
 */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe/probe_netlink.h"
#include "observe/sampler_kit.h"

#define MAX_LISTEN 256
/*
 * Counting TCP states through inet_diag makes the kernel walk the whole established hash, which is sized by RAM
 * and shared by all namespaces: 2.7 ms per dump on a 24 GiB VM with a dozen sockets. So states are counted every
 * STATES_EVERY_MS; each tick has the cheap /proc/net/sockstat figures (TIME_WAIT, in use, orphans) instead.
 */
#define STATES_EVERY_MS 10000
#define LINK_NAMES_EVERY_MS 60000 /* how often link names are read again (a rename keeps the index) */

static const char *const link_fields[LINK_FIELDS] = {
	"rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped", "rx_missed", "tx_dropped", "rx_errors",
	"tx_errors",
};

/* A link's counters, by the ids cached for its position in the dump; a new name there interns them again. */
static void put_link(struct sampler *s, struct frame *fr, struct link_ids *c,
		     const struct probe_netlink_link_stats *l)
{
	const uint64_t v[LINK_FIELDS] = {
		l->rx_packets, l->tx_packets, l->rx_bytes,   l->tx_bytes,  l->rx_dropped,
		l->rx_missed,  l->tx_dropped, l->rx_errors, l->tx_errors,
	};

	if (!c->valid || strcmp(c->name, l->name) != 0) {
		for (size_t f = 0; f < LINK_FIELDS; f++) {
			char name[METRIC_NAME_MAX];

			snprintf(name, sizeof(name), "link.%.15s.%s", l->name, link_fields[f]);
			if (metric_intern(s->reg, name, &c->id[f]) < 0)
				c->id[f] = 0;
		}
		memcpy(c->name, l->name, sizeof(c->name));
		c->valid = true;
	}
	for (size_t f = 0; f < LINK_FIELDS; f++)
		sampler_put_counter_id(s, fr, c->id[f], v[f]);
}

/* Connections waiting in the accept queues of the namespace's listening sockets. */
static double queued_of(const struct probe_netlink_listen_queue *lq, size_t n)
{
	double waiting = 0;

	for (size_t i = 0; i < n; i++)
		waiting += lq[i].queued;
	return waiting;
}

/* The nginx master whose namespace the sockets are of: none under a fake root (the pid there is no process). */
static pid_t wanted(const struct sampler *s)
{
	return strcmp(s->cfg.root, "/") == 0 ? s->nginx_pid : 0;
}

/* The client on sockets of nginx's namespace made elsewhere (sampler_set_ns_netlink), if they are there: 0, or
 * -EINPROGRESS (asked for now, or still) or -errno, with ERR. */
static int open_passed(struct sampler *s, pid_t want, char *err, size_t errlen)
{
	int diag, route, r = s->ns_netlink(s->ns_ctx, want, &diag, &route, err, errlen);

	if (r == 0)
		r = probe_netlink_adopt(diag, route, &s->nl, err, errlen);
	if (r == 0)
		s->nl_pid = want;
	return r;
}

void sampler_prepare_netlink(struct sampler *s)
{
	pid_t want = wanted(s);
	int r;

	if (s->nl || !s->ns_netlink || want <= 0 || !s->cfg.probe_netlink || s->nl_err)
		return;
	/* A refusal is the next tick's to report. */
	r = open_passed(s, want, s->nl_why, sizeof(s->nl_why));
	if (r < 0 && r != -EINPROGRESS)
		s->nl_err = r;
}

void probe_sockets_between(struct sampler *s)
{
	size_t n = 0;

	/* The tick opens the client and follows nginx (an error here is the tick's to see); sockets asked of the
	 * writer at a tick are taken as soon as they came. */
	if (!s->nl && s->nl_asked) {
		sampler_prepare_netlink(s);
		if (s->nl)
			s->nl_asked = false;
	}
	if (!s->nl)
		return;
	if (!s->lq_last && !(s->lq_last = calloc(MAX_LISTEN, sizeof(*s->lq_last))))
		return;
	if (probe_netlink_tcp(s->nl, s->lq_last, MAX_LISTEN, &n, NULL) < 0) {
		s->nlq_last = 0, s->queued_sum = 0, s->queued_n = 0;
		return;
	}
	s->nlq_last = n;
	s->queued_sum += queued_of(s->lq_last, n);
	s->queued_n++;
}

void probe_sockets_sample(struct sampler *s, struct frame *fr)
{
	struct probe_netlink_listen_queue lq_tick[MAX_LISTEN];
	const struct probe_netlink_listen_queue *lq;
	struct probe_netlink_link_stats links[MAX_LINKS];
	struct probe_netlink_tcp_states st;
	pid_t want = wanted(s);
	size_t nlq = 0, nlinks = 0;
	bool count_states;
	char err[160];
	int r;

	if (s->nl && s->nl_pid != want) {
		probe_netlink_close(s->nl);
		s->nl = NULL;
		s->nlq_last = 0, s->queued_sum = 0, s->queued_n = 0;
	}
	if (!s->nl) {
		/* nginx's namespace: entered here, or the writer's sockets of it (an engine without the capability). */
		s->nl_asked = false;
		if (s->nl_err) {
			r = s->nl_err;
			snprintf(err, sizeof(err), "%s", s->nl_why);
			s->nl_err = 0;
		} else if (want > 0 && s->ns_netlink) {
			r = open_passed(s, want, err, sizeof(err));
			s->nl_asked = r == -EINPROGRESS;
		} else {
			r = probe_netlink_open(want, &s->nl, err, sizeof(err));
		}
		if (r < 0) {
			sampler_probe_fail(s, fr, PROBE_NETLINK, r, "%s", err);
			return;
		}
		s->nl_pid = want;
	}
	if (sampler_due(s, s->link_names_tick, LINK_NAMES_EVERY_MS)) {
		probe_netlink_links_renamed(s->nl);
		s->link_names_tick = s->tick;
	}
	/* Listen queues alone cost 0.01-0.04 ms (the listening hash only); states see STATES_EVERY_MS. The queues of
	 * the last sample between ticks (loop.c) stand for the tick's own instant, so the tick dumps them itself only
	 * when it counts states or had no such sample (a one-shot run, a sample that failed). */
	count_states = sampler_due(s, s->states_tick, STATES_EVERY_MS);
	if (!count_states && s->queued_n && s->lq_last) {
		lq = s->lq_last;
		nlq = s->nlq_last;
		r = 0;
	} else {
		lq = lq_tick;
		r = probe_netlink_tcp(s->nl, lq_tick, MAX_LISTEN, &nlq, count_states ? &st : NULL);
	}
	if (r == 0)
		r = probe_netlink_links(s->nl, links, MAX_LINKS, &nlinks);
	if (r < 0) {
		/* A socket error may mean the namespace is gone: reopen next tick. */
		probe_netlink_close(s->nl);
		s->nl = NULL;
		s->nlq_last = 0, s->queued_sum = 0, s->queued_n = 0;
		sampler_probe_fail(s, fr, PROBE_NETLINK, r, "netlink dump: %s", strerror(-r));
		return;
	}
	if (count_states) {
		s->states_tick = s->tick;
		sampler_put_gauge(s, fr, "tcp.state.established", st.established);
		sampler_put_gauge(s, fr, "tcp.state.syn_recv", st.syn_recv);
		sampler_put_gauge(s, fr, "tcp.state.time_wait", st.time_wait);
		sampler_put_gauge(s, fr, "tcp.state.close_wait", st.close_wait);
		sampler_put_gauge(s, fr, "tcp.state.fin_wait", st.fin_wait1 + st.fin_wait2);
		sampler_put_gauge(s, fr, "tcp.state.listen", st.listen);
		sampler_put_gauge(s, fr, "tcp.served.established", st.served_established);
		sampler_put_gauge(s, fr, "tcp.served.close_wait", st.served_close_wait);
		sampler_put_gauge(s, fr, "tcp.served.closed", st.served_closed);
		sampler_put_gauge(s, fr, "tcp.served.silent", st.served_silent);
		sampler_put_gauge(s, fr, "tcp.outgoing.time_wait", st.outgoing_time_wait);
	}
	/* Connections waiting to be accepted, as time: the mean of the samples taken between ticks at random moments
	 * (the loop's), else this instant's count, stands for the tick; each one's client waits the tick out. Summed
	 * in blocks per 1000 requests: tcp.accept_wait, the clients' time ledger. An instant in phase with the tick
	 * saw a full queue in every tick, or none, while workers stalled 300 ms of each second. */
	{
		double waiting = s->queued_n ? s->queued_sum / s->queued_n : queued_of(lq, nlq);

		s->queued_sum = 0, s->queued_n = 0;
		sampler_put_gauge(s, fr, "listen.wait_ms", waiting * (double)s->cfg.tick_ms);
	}
	/* Per port, summed over addresses and reuseport sockets; fill is the fullest socket's share. */
	for (size_t i = 0; i < nlq; i++) {
		uint32_t queued = 0, backlog = 0;
		double fill = 0;
		bool first = true;

		for (size_t j = 0; j < i; j++)
			if (lq[j].port == lq[i].port)
				first = false;
		if (!first)
			continue;
		for (size_t j = i; j < nlq; j++) {
			if (lq[j].port != lq[i].port)
				continue;
			queued += lq[j].queued;
			backlog += lq[j].backlog;
			if (lq[j].backlog && 100.0 * lq[j].queued / lq[j].backlog > fill)
				fill = 100.0 * lq[j].queued / lq[j].backlog;
		}
		sampler_putk_gauge(s, fr, SAMPLER_KEY(K_LISTEN, lq[i].port, 0), queued, "listen.%u.queued", lq[i].port);
		sampler_putk_gauge(s, fr, SAMPLER_KEY(K_LISTEN, lq[i].port, 1), backlog, "listen.%u.backlog",
				   lq[i].port);
		sampler_putk_gauge(s, fr, SAMPLER_KEY(K_LISTEN, lq[i].port, 2), fill, "listen.%u.fill_pct", lq[i].port);
	}
	for (size_t i = 0; i < nlinks; i++)
		put_link(s, fr, &s->link_ids[i], &links[i]);
	sampler_probe_ok(s, fr, PROBE_NETLINK);
}
