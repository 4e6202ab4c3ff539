/*
 * probe_netlink: see probe_netlink.h.
 *
 * libnl creates, binds and addresses the sockets and sends the requests (libnl-idiag for the inet_diag dump);
 * the replies are read here with recv() into one buffer owned by the probe and walked with libnl's nlmsg and nla
 * helpers. libnl's own receive path (nl_recvmsgs, idiagnl_msg_parse, the caches) copies every netlink message
 * into a fresh nl_msg and, for inet_diag, builds an object with two nl_addr per socket; on a host with 100k
 * TIME_WAIT sockets that is several hundred thousand allocations a second for numbers we only count. It also
 * retries EINTR forever and folds ENOBUFS into NLE_NOMEM, while the caller wants the errno.
 */
#define _GNU_SOURCE

#include "observe/probe_netlink.h"
#include "netns.h"
#include "strutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>

#include <netlink/errno.h>
#include <netlink/idiag/idiagnl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

/*
 * The kernel sizes dump batches by the largest read it has seen, capped just under 32 KiB, so one buffer of that
 * size takes a whole batch (about 370 sockets) per recv().
 */
#define RECV_BUF_SIZE 32768

/* A healthy dump answers within microseconds; a second means the kernel or the socket is stuck. */
#define RECV_TIMEOUT_MS 1000

/* TCP states as inet_diag reports them (include/net/tcp_states.h); the uapi has no header for these. */
enum {
	ST_ESTABLISHED = 1,
	ST_SYN_SENT,
	ST_SYN_RECV,
	ST_FIN_WAIT1,
	ST_FIN_WAIT2,
	ST_TIME_WAIT,
	ST_CLOSE,
	ST_CLOSE_WAIT,
	ST_LAST_ACK,
	ST_LISTEN,
	ST_CLOSING,
	ST_MAX_DUMPED
};

/* One netlink socket and what a dump interrupted by an error left in its queue. */
struct chan {
	struct nl_sock *sk;
	bool stale;		/* a dump was cut short: its tail must be read and dropped before the next request */
	uint32_t stale_seq;
};

/* A link's name by its index, from the last RTM_GETLINK dump. */
struct link_name {
	int ifindex;
	char name[16];
};

struct probe_netlink {
	struct chan diag;
	struct chan route;
	unsigned char *buf;
	struct link_name *names; /* of the last full link dump, in its order */
	size_t nnames;
	bool names_ok;           /* names may be used: RTM_GETSTATS then gives the counters */
	bool no_getstats;        /* the kernel refused RTM_GETSTATS (before 4.7): full link dumps only */
};

/* Called once per data message of a dump; returns 0 or -errno to abort the dump. */
typedef int (*msg_fn)(void *ctx, const struct nlmsghdr *h);

static int nle_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case NLE_NOMEM:
		return ENOMEM;
	case NLE_PERM:
		return EPERM;
	case NLE_NOACCESS:
		return EACCES;
	case NLE_AGAIN:
		return EAGAIN;
	case NLE_INTR:
		return EINTR;
	case NLE_BAD_SOCK:
		return EBADF;
	case NLE_INVAL:
		return EINVAL;
	case NLE_RANGE:
		return ERANGE;
	case NLE_EXIST:
		return EEXIST;
	case NLE_BUSY:
		return EBUSY;
	case NLE_MSGSIZE:
		return EMSGSIZE;
	case NLE_AF_NOSUPPORT:
		return EAFNOSUPPORT;
	case NLE_PROTO_MISMATCH:
		return EPROTONOSUPPORT;
	case NLE_OPNOTSUPP:
		return EOPNOTSUPP;
	case NLE_NOADDR:
		return EADDRNOTAVAIL;
	case NLE_OBJ_NOTFOUND:
		return ENOENT;
	default:
		return EIO;
	}
}

/* C's socket: made and connected here (FD -1), or FD, one made elsewhere (bound: netns_socket), taken over
 * (closed with C from then on, and here if that fails). */
static int chan_open(struct chan *c, int protocol, int fd, char *err, size_t errlen)
{
	struct timeval tv = { .tv_sec = RECV_TIMEOUT_MS / 1000, .tv_usec = (RECV_TIMEOUT_MS % 1000) * 1000 };
	int rc;

	c->sk = nl_socket_alloc();
	if (!c->sk) {
		if (fd >= 0)
			close(fd);
		str_err(err, errlen, "%s: %s", "nl_socket_alloc", strerror(ENOMEM));
		return -ENOMEM;
	}
	/* We match replies by sequence number ourselves; an ACK after each dump would only add a message. */
	nl_socket_disable_auto_ack(c->sk);
	if (fd >= 0) {
		rc = nl_socket_set_fd(c->sk, protocol, fd);
		if (rc < 0) {
			close(fd);
			if (err && errlen > 0)
				snprintf(err, errlen, "a netlink socket passed (protocol %d): %s", protocol, nl_geterror(rc));
			return -nle_errno(rc);
		}
	} else {
		rc = protocol == NETLINK_INET_DIAG ? idiagnl_connect(c->sk) : nl_connect(c->sk, protocol);
	}
	if (rc < 0) {
		if (err && errlen > 0)
			snprintf(err, errlen, "netlink connect (protocol %d): %s", protocol, nl_geterror(rc));
		return -nle_errno(rc);
	}
	if (setsockopt(nl_socket_get_fd(c->sk), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		rc = errno;
		str_err(err, errlen, "%s: %s", "setsockopt SO_RCVTIMEO", strerror(rc));
		return -rc;
	}
	return 0;
}

static void chan_close(struct chan *c)
{
	if (c->sk)
		nl_socket_free(c->sk);
	c->sk = NULL;
}

static int open_sockets(struct probe_netlink *p, char *err, size_t errlen)
{
	int rc = chan_open(&p->diag, NETLINK_INET_DIAG, -1, err, errlen);

	if (rc == 0)
		rc = chan_open(&p->route, NETLINK_ROUTE, -1, err, errlen);
	return rc;
}

/* Sockets belong to the namespace they were created in, so a short visit is enough. */
static int open_in_ns(struct probe_netlink *p, int pid, char *err, size_t errlen)
{
	int target, self, rc, e;

	target = netns_open_pid(pid);
	if (target < 0) {
		str_err(err, errlen, "open /proc/%d/ns/net: %s", pid, strerror(-target));
		return target;
	}
	rc = netns_enter(target, &self);
	if (rc < 0) {
		str_err(err, errlen, "into the network namespace of pid %d: %s", pid, strerror(-rc));
		close(target);
		return rc;
	}
	rc = open_sockets(p, err, errlen);
	e = netns_leave(self);
	if (e < 0) {
		/* Nothing else the thread does would be right after this; the message must say so. */
		str_err(err, errlen, "setns back from pid %d's namespace failed, thread left in it: %s", pid,
			strerror(-e));
		rc = e;
	}
	close(target);
	return rc;
}

/* A client with its buffers and no sockets yet. */
static int probe_new(struct probe_netlink **out, char *err, size_t errlen)
{
	struct probe_netlink *p = calloc(1, sizeof(*p));

	if (!p) {
		str_err(err, errlen, "%s: %s", "probe_netlink", strerror(ENOMEM));
		return -ENOMEM;
	}
	p->buf = malloc(RECV_BUF_SIZE);
	p->names = calloc(PROBE_NETLINK_LINKS_MAX, sizeof(*p->names));
	if (!p->buf || !p->names) {
		free(p->buf);
		free(p->names);
		free(p);
		str_err(err, errlen, "%s: %s", "probe_netlink buffer", strerror(ENOMEM));
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

int probe_netlink_adopt(int diag, int route, struct probe_netlink **out, char *err, size_t errlen)
{
	struct probe_netlink *p = NULL;
	int rc;

	if (err && errlen > 0)
		err[0] = '\0';
	*out = NULL;
	rc = probe_new(&p, err, errlen);
	if (rc == 0) {
		rc = chan_open(&p->diag, NETLINK_INET_DIAG, diag, err, errlen);
		diag = -1;
	}
	if (rc == 0) {
		rc = chan_open(&p->route, NETLINK_ROUTE, route, err, errlen);
		route = -1;
	}
	if (diag >= 0)
		close(diag);
	if (route >= 0)
		close(route);
	if (rc < 0) {
		probe_netlink_close(p);
		return rc;
	}
	*out = p;
	return 0;
}

int probe_netlink_open(int pid, struct probe_netlink **out, char *err, size_t errlen)
{
	struct probe_netlink *p;
	int rc;

	if (err && errlen > 0)
		err[0] = '\0';
	if (!out || pid < 0) {
		if (err && errlen > 0)
			snprintf(err, errlen, "invalid pid %d", pid);
		return -EINVAL;
	}
	*out = NULL;
	rc = probe_new(&p, err, errlen);
	if (rc < 0)
		return rc;
	rc = pid == 0 ? open_sockets(p, err, errlen) : open_in_ns(p, pid, err, errlen);
	if (rc < 0) {
		probe_netlink_close(p);
		return rc;
	}
	*out = p;
	return 0;
}

void probe_netlink_close(struct probe_netlink *p)
{
	if (!p)
		return;
	chan_close(&p->diag);
	chan_close(&p->route);
	free(p->names);
	free(p->buf);
	free(p);
}

/*
 * Read one dump's replies for SEQ, handing data messages to FN. Messages with another sequence number are the
 * tail of an earlier dump and are dropped. Returns 0 at NLMSG_DONE, 1 when the kernel flagged the dump as
 * interrupted (the set changed while it ran), or -errno. *ENDED tells whether the dump's last message was read:
 * if not, its tail is still queued and must be drained before the socket can carry another dump.
 */
static int recv_dump(struct probe_netlink *p, struct chan *c, uint32_t seq, msg_fn fn, void *ctx, bool *ended)
{
	int fd = nl_socket_get_fd(c->sk);
	uint32_t port = nl_socket_get_local_port(c->sk);
	bool intr = false;

	*ended = false;
	for (;;) {
		struct nlmsghdr *h;
		ssize_t n = recv(fd, p->buf, RECV_BUF_SIZE, MSG_TRUNC);
		int len;

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -ETIMEDOUT;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		if (n > RECV_BUF_SIZE)
			return -EMSGSIZE;
		len = (int)n;
		for (h = (struct nlmsghdr *)p->buf; nlmsg_ok(h, len); h = nlmsg_next(h, &len)) {
			if (h->nlmsg_seq != seq || h->nlmsg_pid != port)
				continue;
			if (h->nlmsg_flags & NLM_F_DUMP_INTR)
				intr = true;
			if (h->nlmsg_type == NLMSG_DONE) {
				*ended = true;
				return intr ? 1 : 0;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = nlmsg_data(h);

				*ended = true;
				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return -EBADMSG;
				/* 0 would be an ACK, which we did not ask for: a dump must end with DONE. */
				return e->error < 0 ? e->error : -EBADMSG;
			}
			if (h->nlmsg_type == NLMSG_NOOP)
				continue;
			if (h->nlmsg_type == NLMSG_OVERRUN)
				return -ENOBUFS;
			if (fn) {
				int rc = fn(ctx, h);

				if (rc < 0)
					return rc;
			}
		}
	}
}

/*
 * A dump that an error cut short keeps running in the kernel, which refuses another dump on the socket (EBUSY)
 * until the tail is read. A drain that times out gives up: the kernel has nothing more to send, and the next
 * request finds out whether the socket is usable.
 */
static int drain(struct probe_netlink *p, struct chan *c)
{
	bool ended;
	int rc;

	if (!c->stale)
		return 0;
	rc = recv_dump(p, c, c->stale_seq, NULL, NULL, &ended);
	if (ended || rc == -ETIMEDOUT) {
		c->stale = false;
		return 0;
	}
	return rc;
}

/*
 * libnl numbers a request with the socket's next sequence number; reading that number back afterwards costs one
 * step of the counter, which is harmless, and keeps the request built by libnl-idiag.
 */
static uint32_t sent_seq(struct nl_sock *sk)
{
	return nl_socket_use_seq(sk) - 1;
}

static int dump(struct probe_netlink *p, struct chan *c, uint32_t seq, msg_fn fn, void *ctx)
{
	bool ended;
	int rc = recv_dump(p, c, seq, fn, ctx, &ended);

	c->stale = !ended;
	c->stale_seq = seq;
	return rc;
}

struct tcp_ctx {
	struct probe_netlink_listen_queue *lq;
	size_t max;
	size_t nlq;
	struct probe_netlink_tcp_states st;
	uint64_t listening[65536 / 64]; /* ports with a listening socket: the kernel dumps those first */
};

static bool port_listens(const struct tcp_ctx *t, uint16_t port)
{
	return t->listening[port / 64] >> (port % 64) & 1;
}

/*
 * tcpi_bytes_received of the kernel's struct tcp_info (linux/tcp.h, Linux 4.1+): after the 104 bytes glibc's
 * <netinet/tcp.h> knows, tcpi_pacing_rate, tcpi_max_pacing_rate and tcpi_bytes_acked (u64 each). glibc's struct
 * lacks it and the two headers cannot both be included, so its offset is written here (the ABI only appends).
 */
#define TCPI_BYTES_RECEIVED_OFF 128

/* Whether the tcp_info of socket message H (INET_DIAG_INFO, when asked for) says no byte came from the peer. */
static bool silent(const struct nlmsghdr *h)
{
	const struct nlattr *a;
	int rem;

	nla_for_each_attr(a, nlmsg_attrdata(h, sizeof(struct inet_diag_msg)),
			  nlmsg_attrlen(h, sizeof(struct inet_diag_msg)), rem) {
		uint64_t received;

		if (nla_type(a) != INET_DIAG_INFO || (size_t)nla_len(a) < TCPI_BYTES_RECEIVED_OFF + sizeof(received))
			continue;
		memcpy(&received, (const char *)nla_data(a) + TCPI_BYTES_RECEIVED_OFF, sizeof(received));
		return received == 0;
	}
	return false;
}

static int on_tcp(void *ctx, const struct nlmsghdr *h)
{
	struct tcp_ctx *t = ctx;
	const struct inet_diag_msg *m;
	uint16_t port;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return -EBADMSG;
	m = nlmsg_data(h);
	port = ntohs(m->id.idiag_sport);
	if (m->idiag_state != ST_LISTEN && port_listens(t, port)) {
		switch (m->idiag_state) {
		case ST_ESTABLISHED:
			t->st.served_established++;
			t->st.served_silent += silent(h);
			break;
		case ST_CLOSE_WAIT:
			t->st.served_close_wait++;
			break;
		case ST_FIN_WAIT1:
		case ST_FIN_WAIT2:
		case ST_CLOSING:
		case ST_LAST_ACK:
			t->st.served_closed++;
			break;
		default:
			break;
		}
	}
	switch (m->idiag_state) {
	case ST_ESTABLISHED:
		t->st.established++;
		break;
	case ST_SYN_SENT:
		t->st.syn_sent++;
		break;
	case ST_SYN_RECV:
		t->st.syn_recv++;
		break;
	case ST_FIN_WAIT1:
		t->st.fin_wait1++;
		break;
	case ST_FIN_WAIT2:
		t->st.fin_wait2++;
		break;
	case ST_TIME_WAIT:
		t->st.time_wait++;
		t->st.outgoing_time_wait += !port_listens(t, port);
		break;
	case ST_CLOSE:
		t->st.close++;
		break;
	case ST_CLOSE_WAIT:
		t->st.close_wait++;
		break;
	case ST_LAST_ACK:
		t->st.last_ack++;
		break;
	case ST_LISTEN:
		t->st.listen++;
		t->listening[port / 64] |= 1ull << (port % 64);
		if (t->nlq < t->max) {
			struct probe_netlink_listen_queue *q = &t->lq[t->nlq];

			memset(q, 0, sizeof(*q));
			q->family = m->idiag_family;
			q->port = ntohs(m->id.idiag_sport);
			q->queued = m->idiag_rqueue;
			q->backlog = m->idiag_wqueue;
			q->inode = m->idiag_inode;
			if (!inet_ntop(m->idiag_family, m->id.idiag_src, q->addr, sizeof(q->addr)))
				q->addr[0] = '\0';
			t->nlq++;
		}
		break;
	case ST_CLOSING:
		t->st.closing++;
		break;
	default:
		/* A state newer than this code: counted nowhere rather than in the wrong bucket. */
		break;
	}
	return 0;
}

int probe_netlink_tcp(struct probe_netlink *p, struct probe_netlink_listen_queue *lq, size_t max, size_t *nlq,
		      struct probe_netlink_tcp_states *st)
{
	struct tcp_ctx t = { .lq = lq, .max = lq ? max : 0 }; /* 8 KiB with its port set */
	uint16_t states;
	uint32_t seq;
	int rc;

	if (!p || !nlq)
		return -EINVAL;
	rc = drain(p, &p->diag);
	if (rc < 0)
		return rc;
	/*
	 * libnl-idiag sends the original TCPDIAG_GETSOCK request, for which the kernel ignores the family and dumps
	 * IPv4 and IPv6 sockets in one walk of the socket tables; two SOCK_DIAG_BY_FAMILY dumps would walk them twice.
	 * Any state besides LISTEN makes the kernel walk every established and TIME_WAIT socket (about 0.5 us each,
	 * almost all of it in the kernel), while LISTEN alone walks only the listening table; so counting states is
	 * the caller's choice of cadence.
	 */
	states = st ? (1u << ST_MAX_DUMPED) - 1 : 1u << ST_LISTEN;
	/* With the states, each socket's tcp_info too: tcpi_bytes_received tells the silent ones (4.1+; older
	 * kernels send a shorter struct, and none counts as silent). */
	rc = idiagnl_send_simple(p->diag.sk, NLM_F_DUMP, AF_UNSPEC, states, st ? 1u << (INET_DIAG_INFO - 1) : 0);
	if (rc < 0)
		return -nle_errno(rc);
	seq = sent_seq(p->diag.sk);
	rc = dump(p, &p->diag, seq, on_tcp, &t);
	if (rc < 0)
		return rc;
	*nlq = t.nlq;
	if (st)
		*st = t.st;
	return 0;
}

struct link_ctx {
	struct probe_netlink *p;
	struct probe_netlink_link_stats *out;
	size_t max;
	size_t n;
	bool unknown; /* RTM_GETSTATS named an ifindex the names do not know */
};

/* Newer kernels append fields to the stats struct, older ones may send fewer: copy what both know. */
static void take_stats64(struct probe_netlink_link_stats *o, const struct nlattr *a)
{
	struct rtnl_link_stats64 s = { 0 };
	size_t len = (size_t)nla_len(a);

	memcpy(&s, nla_data(a), len < sizeof(s) ? len : sizeof(s));
	o->rx_packets = s.rx_packets;
	o->tx_packets = s.tx_packets;
	o->rx_bytes = s.rx_bytes;
	o->tx_bytes = s.tx_bytes;
	o->rx_dropped = s.rx_dropped;
	o->rx_missed = s.rx_missed_errors;
	o->tx_dropped = s.tx_dropped;
	o->rx_errors = s.rx_errors;
	o->tx_errors = s.tx_errors;
}

static int on_link(void *ctx, const struct nlmsghdr *h)
{
	struct link_ctx *l = ctx;
	const struct nlattr *a, *name = NULL, *s64 = NULL, *s32 = NULL;
	const struct ifinfomsg *ifi;
	struct probe_netlink_link_stats *o;
	int rem;

	if (h->nlmsg_type != RTM_NEWLINK)
		return 0;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
		return -EBADMSG;
	ifi = nlmsg_data(h);
	nla_for_each_attr(a, nlmsg_attrdata(h, sizeof(struct ifinfomsg)), nlmsg_attrlen(h, sizeof(struct ifinfomsg)),
			  rem) {
		switch (nla_type(a)) {
		case IFLA_IFNAME:
			name = a;
			break;
		case IFLA_STATS64:
			s64 = a;
			break;
		case IFLA_STATS:
			s32 = a;
			break;
		default:
			break;
		}
	}
	/* Every link's name is kept (for RTM_GETSTATS), the first MAX links' counters returned. */
	if (l->p->nnames < PROBE_NETLINK_LINKS_MAX) {
		struct link_name *ln = &l->p->names[l->p->nnames++];

		memset(ln, 0, sizeof(*ln));
		ln->ifindex = ifi->ifi_index;
		if (name) {
			size_t len = strnlen(nla_data(name), (size_t)nla_len(name));

			memcpy(ln->name, nla_data(name), len < sizeof(ln->name) ? len : sizeof(ln->name) - 1);
		}
	}
	if (l->n >= l->max)
		return 0;
	o = &l->out[l->n];
	memset(o, 0, sizeof(*o));
	if (name) {
		size_t len = strnlen(nla_data(name), (size_t)nla_len(name));

		if (len >= sizeof(o->name))
			len = sizeof(o->name) - 1;
		memcpy(o->name, nla_data(name), len);
	}
	if (s64) {
		take_stats64(o, s64);
	} else if (s32) {
		struct rtnl_link_stats s = { 0 };
		size_t len = (size_t)nla_len(s32);

		memcpy(&s, nla_data(s32), len < sizeof(s) ? len : sizeof(s));
		o->rx_packets = s.rx_packets;
		o->tx_packets = s.tx_packets;
		o->rx_bytes = s.rx_bytes;
		o->tx_bytes = s.tx_bytes;
		o->rx_dropped = s.rx_dropped;
		o->rx_missed = s.rx_missed_errors;
		o->tx_dropped = s.tx_dropped;
		o->rx_errors = s.rx_errors;
		o->tx_errors = s.tx_errors;
	}
	l->n++;
	return 0;
}

/* One RTM_GETSTATS reply: the counters of one link, named from the last full dump. */
static int on_stats(void *ctx, const struct nlmsghdr *h)
{
	struct link_ctx *l = ctx;
	const struct if_stats_msg *m;
	const struct nlattr *a, *s64 = NULL;
	const char *name = NULL;
	struct probe_netlink_link_stats *o;
	int rem;

	if (h->nlmsg_type != RTM_NEWSTATS)
		return 0;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return -EBADMSG;
	m = nlmsg_data(h);
	/* Both dumps go in ifindex order: the name is usually the next one. */
	for (size_t i = 0; i < l->p->nnames && !name; i++) {
		size_t k = (l->n + i) % l->p->nnames;

		if (l->p->names[k].ifindex == (int)m->ifindex)
			name = l->p->names[k].name;
	}
	if (!name) {
		l->unknown = true;
		return -ENOENT;
	}
	if (l->n >= l->max)
		return 0;
	nla_for_each_attr(a, nlmsg_attrdata(h, sizeof(*m)), nlmsg_attrlen(h, sizeof(*m)), rem)
		if (nla_type(a) == IFLA_STATS_LINK_64)
			s64 = a;
	o = &l->out[l->n];
	memset(o, 0, sizeof(*o));
	memcpy(o->name, name, sizeof(o->name));
	if (s64)
		take_stats64(o, s64);
	l->n++;
	return 0;
}

/* One dump of TYPE, read through FN, retried once when a link came or went during it. 0 or -errno. */
static int link_dump(struct probe_netlink *p, int type, const void *req, size_t reqlen, msg_fn fn, struct link_ctx *l,
		     struct probe_netlink_link_stats *out, size_t max)
{
	int rc = 0;

	for (int attempt = 0; attempt < 2; attempt++) {
		uint32_t seq;

		*l = (struct link_ctx){ .p = p, .out = out, .max = max };
		if (type == RTM_GETLINK)
			p->nnames = 0;
		rc = nl_send_simple(p->route.sk, type, NLM_F_DUMP, (void *)req, reqlen);
		if (rc < 0)
			return -nle_errno(rc);
		seq = sent_seq(p->route.sk);
		rc = dump(p, &p->route, seq, fn, l);
		if (rc <= 0)
			break;
	}
	return rc > 0 ? -EAGAIN : rc;
}

int probe_netlink_links(struct probe_netlink *p, struct probe_netlink_link_stats *out, size_t max, size_t *n)
{
	/* No IFLA_EXT_MASK: without it the kernel leaves out per-VF data, which dwarfs the counters on SR-IOV NICs. */
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct if_stats_msg ism = { .family = AF_UNSPEC, .filter_mask = IFLA_STATS_FILTER_BIT(IFLA_STATS_LINK_64) };
	struct link_ctx l;
	int rc;

	if (!p || !n || (!out && max > 0))
		return -EINVAL;
	rc = drain(p, &p->route);
	if (rc < 0)
		return rc;
	/*
	 * RTM_GETLINK fills every attribute of every link (about 1.5 KiB and 7 us each); RTM_GETSTATS with only the
	 * 64-bit counters costs a fraction of that. Its replies carry no name, so names come from the last full dump,
	 * which is made again when a link it did not know shows up, and when the caller says names may have changed.
	 */
	if (p->names_ok && !p->no_getstats) {
		rc = link_dump(p, RTM_GETSTATS, &ism, sizeof(ism), on_stats, &l, out, max);
		if (rc == 0) {
			*n = l.n;
			return 0;
		}
		if (rc == -EOPNOTSUPP || rc == -EINVAL)
			p->no_getstats = true;
		else if (!l.unknown)
			return rc;
		/* The dump stopped at the unknown link: its tail is drained before the next request. */
		rc = drain(p, &p->route);
		if (rc < 0)
			return rc;
	}
	p->names_ok = false;
	rc = link_dump(p, RTM_GETLINK, &ifi, sizeof(ifi), on_link, &l, out, max);
	if (rc < 0)
		return rc;
	p->names_ok = true;
	*n = l.n;
	return 0;
}

void probe_netlink_links_renamed(struct probe_netlink *p)
{
	if (p)
		p->names_ok = false;
}
