/*
 * probe_netlink: TCP socket and network link statistics of one network namespace, read over netlink.
 *
 * This module owns two netlink sockets (sock_diag through libnl-idiag, rtnetlink through libnl) created inside
 * the namespace of a given process, one TCP socket dump (IPv4 and IPv6 together) and one link statistics dump per
 * call (with a full link dump for the names when they may have changed).
 * It runs every tick on hosts that may hold 100k TIME_WAIT sockets, so it reads each dump into one buffer
 * allocated at open and parses records in place: no allocation per socket or per call. Every receive has a
 * timeout, so a silent kernel or a signal gives an error, never a hang.
 * Cost, measured on loopback: listen queues alone take about 0.03 ms whatever the number of connections (0.17 ms
 * when the listening hash is cold, as it is at 1 Hz: the kernel walks all of it); counting states costs about
 * 0.5 ms of kernel time per 1000 sockets plus a walk of the whole established hash (2.7 ms on a 24 GiB VM), so
 * callers that count states every tick spend more than the agent's whole budget: count them at a slower cadence.
 * It must not decide anything, log, or keep history beyond the link names of the last full dump: it returns this
 * call's numbers and errors as -errno.
 * It must not leave the calling thread in another namespace.
 */
#ifndef NGXAT_PROBE_NETLINK_H
#define NGXAT_PROBE_NETLINK_H

#include <stddef.h>
#include <stdint.h>

struct probe_netlink;

#define PROBE_NETLINK_LINKS_MAX 4096 /* links whose names are kept */

/* One listening TCP socket: current accept queue and its configured backlog. */
struct probe_netlink_listen_queue {
	int family;		/* AF_INET or AF_INET6 */
	uint16_t port;		/* host byte order */
	char addr[46];		/* numeric local address, as inet_ntop writes it */
	uint32_t queued;	/* connections waiting for accept() (inet_diag idiag_rqueue) */
	uint32_t backlog;	/* listen() backlog after the kernel's somaxconn cap (idiag_wqueue) */
	uint32_t inode;		/* the socket's inode: socket:[INODE] in /proc/PID/fd of its owners */
};

/* Number of TCP sockets in each state, IPv4 and IPv6 together (TIME_WAIT and SYN_RECV minisockets included). */
struct probe_netlink_tcp_states {
	uint32_t established, syn_sent, syn_recv, fin_wait1, fin_wait2, time_wait, close, close_wait, last_ack,
		listen, closing;
	/* The server's side of connections: sockets whose local port a listening socket of the namespace has
	 * (nginx's, and any other server's in nginx's namespace; not a load generator's or an upstream connection's,
	 * whose local ports are ephemeral): established, CLOSE_WAIT, and closed by their owner but not gone
	 * (FIN_WAIT1, FIN_WAIT2, CLOSING, LAST_ACK: what sockstat counts as orphans). */
	uint32_t served_established, served_close_wait, served_closed;
	/* Of served_established, those that have received no byte yet (tcp_info): accepted or waiting in the accept
	 * queue, their client silent since the handshake. */
	uint32_t served_silent;
	/* The client's side: TIME_WAIT sockets whose local port no socket of the namespace listens on, i.e.
	 * connections it made and closed first (nginx's to its upstreams without keepalive; a load generator's in the
	 * same namespace too). Each holds a local port of ip_local_port_range for the TIME_WAIT's 60 s. */
	uint32_t outgoing_time_wait;
};

/* Counters of one network interface, 64-bit as the kernel keeps them. */
struct probe_netlink_link_stats {
	char name[16];
	uint64_t rx_packets, tx_packets, rx_bytes, tx_bytes, rx_dropped, rx_missed, tx_dropped, rx_errors, tx_errors;
};

/* Open netlink sockets in the network namespace of PID (0: the caller's own); on failure a message goes to ERR. */
int probe_netlink_open(int pid, struct probe_netlink **out, char *err, size_t errlen);
/* The same client on sockets made elsewhere (the writer's, passed to an engine that may not enter nginx's namespace:
 * priv/nssock.h): DIAG (NETLINK_SOCK_DIAG) and ROUTE (NETLINK_ROUTE), bound, both taken (closed on failure too). */
int probe_netlink_adopt(int diag, int route, struct probe_netlink **out, char *err, size_t errlen);

/* Close the sockets and free the probe; NULL is allowed. */
void probe_netlink_close(struct probe_netlink *p);

/* Dump TCP sockets: up to MAX listen queues into LQ (*NLQ stored); state counts into ST unless NULL (costly). */
int probe_netlink_tcp(struct probe_netlink *p, struct probe_netlink_listen_queue *lq, size_t max, size_t *nlq,
		      struct probe_netlink_tcp_states *st);

/* The first MAX interfaces in ifindex order (physical ones come first) into OUT, *N stored. Names come from the
 * last full link dump (redone when an unknown link appears, or after probe_netlink_links_renamed), the counters
 * from a lighter statistics dump. */
int probe_netlink_links(struct probe_netlink *p, struct probe_netlink_link_stats *out, size_t max, size_t *n);
/* Names may have changed (a link renamed keeps its index): the next probe_netlink_links dumps links whole. */
void probe_netlink_links_renamed(struct probe_netlink *p);

#endif
