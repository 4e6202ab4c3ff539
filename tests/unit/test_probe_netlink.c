/*
 * Tests for probe_netlink against the real kernel, in a network namespace made for the test. Needs root (and a
 * kernel that lets it create namespaces); otherwise the program exits 77 so automake counts it as skipped.
 *
 * A forked child enters the namespace and holds there: an IPv4 listener with backlog 7 and three connections
 * nobody accepts, a second listener whose one connection was closed client-first (one TIME_WAIT), and an IPv6
 * listener on ::1 with backlog 5 when the kernel has IPv6. The probe opened on that child's pid must see exactly
 * those, and the probe of our own namespace must not.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "observe/probe_netlink.h"
#include "testskip.h"

#define BACKLOG4 7
#define PENDING4 3
#define BACKLOG_TW 16
#define BACKLOG6 5
#define UDP_BURST 10

struct child_report {
	int ok;
	uint16_t port4;		/* listener with PENDING4 unaccepted connections */
	uint16_t port_tw;	/* listener whose only connection is now in TIME_WAIT on the client side */
	uint16_t port6;		/* 0 when the namespace has no IPv6 */
	uint32_t inode4;	/* port4's listening socket's inode (fstat) */
	char why[128];
};

static char ns_name[64];
static pid_t child_pid = -1;
static int cmd_fd = -1;		/* parent writes commands; closing it tells the child to exit */
static int ack_fd = -1;
static struct child_report report;

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int listen_on(int family, int backlog, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, backlog) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					: ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

static int connect_to(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void udp_burst(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int i;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return;
	for (i = 0; i < UDP_BURST; i++)
		(void)sendto(fd, "x", 1, 0, (struct sockaddr *)&a, sizeof(a));
	close(fd);
}

static void child_fail(int out, struct child_report *r, const char *what)
{
	snprintf(r->why, sizeof(r->why), "%s: %s", what, strerror(errno));
	r->ok = 0;
	(void)write(out, r, sizeof(*r));
	_exit(1);
}

/* Runs in the child: enter the namespace, build the sockets, report, then serve commands until EOF. */
static void child_main(int cmd, int out)
{
	struct child_report r;
	struct stat sb;
	char path[128], c;
	int ns, lfd4, lfd_tw, lfd6, cfd, sfd, i, spoke_l = -1, spoke_c = -1;

	memset(&r, 0, sizeof(r));
	snprintf(path, sizeof(path), "/run/netns/%s", ns_name);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0 || setns(ns, CLONE_NEWNET) < 0)
		child_fail(out, &r, "enter namespace");
	lfd4 = listen_on(AF_INET, BACKLOG4, &r.port4);
	if (lfd4 >= 0 && fstat(lfd4, &sb) == 0)
		r.inode4 = (uint32_t)sb.st_ino;
	if (lfd4 < 0)
		child_fail(out, &r, "listen 127.0.0.1");
	for (i = 0; i < PENDING4; i++)
		if (connect_to(r.port4) < 0)
			child_fail(out, &r, "connect");
	lfd_tw = listen_on(AF_INET, BACKLOG_TW, &r.port_tw);
	if (lfd_tw < 0)
		child_fail(out, &r, "listen second");
	cfd = connect_to(r.port_tw);
	if (cfd < 0)
		child_fail(out, &r, "connect second");
	sfd = accept(lfd_tw, NULL, NULL);
	if (sfd < 0)
		child_fail(out, &r, "accept");
	/* Client closes first, so the client end is the one that ends in TIME_WAIT. */
	close(cfd);
	sleep_ms(20);
	close(sfd);
	lfd6 = listen_on(AF_INET6, BACKLOG6, &r.port6);
	if (lfd6 < 0)
		r.port6 = 0;
	r.ok = 1;
	if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
	while (read(cmd, &c, 1) == 1) {
		if (c == 'u')
			udp_burst();
		/* 'd': a connection to a listener of its own whose client has spoken (one byte, unread); 'D': gone */
		if (c == 'd') {
			uint16_t port;

			spoke_l = listen_on(AF_INET, 4, &port);
			spoke_c = spoke_l < 0 ? -1 : connect_to(port);
			if (spoke_c < 0 || write(spoke_c, "x", 1) != 1)
				_exit(1);
			sleep_ms(20);
		}
		if (c == 'D') {
			close(spoke_c);
			close(spoke_l);
			sleep_ms(20);
		}
		/* 'w': a connection the server's side closes first: its TIME_WAIT is on the listening port */
		if (c == 'w') {
			uint16_t port;
			int l = listen_on(AF_INET, 4, &port), cl = l < 0 ? -1 : connect_to(port);
			int sv = cl < 0 ? -1 : accept(l, NULL, NULL);

			if (sv < 0)
				_exit(1);
			close(sv);
			sleep_ms(20);
			close(cl);
			sleep_ms(20);
		}
		if (write(out, &c, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

static int run(const char *fmt, ...)
{
	char cmd[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int ns_create(void)
{
	snprintf(ns_name, sizeof(ns_name), "ngxat-test-%ld", (long)getpid());
	if (run("ip netns add %s 2>/dev/null", ns_name) != 0)
		return -1;
	if (run("ip -n %s link set lo up", ns_name) != 0) {
		run("ip netns del %s", ns_name);
		return -1;
	}
	return 0;
}

static int group_setup(void **state)
{
	int to_child[2], from_child[2];

	(void)state;
	if (pipe2(to_child, O_CLOEXEC) < 0 || pipe2(from_child, O_CLOEXEC) < 0)
		return -1;
	child_pid = fork();
	if (child_pid < 0)
		return -1;
	if (child_pid == 0) {
		close(to_child[1]);
		close(from_child[0]);
		child_main(to_child[0], from_child[1]);
	}
	close(to_child[0]);
	close(from_child[1]);
	cmd_fd = to_child[1];
	ack_fd = from_child[0];
	if (read(ack_fd, &report, sizeof(report)) != (ssize_t)sizeof(report) || !report.ok) {
		fprintf(stderr, "child failed: %s\n", report.why);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (cmd_fd >= 0)
		close(cmd_fd);
	if (ack_fd >= 0)
		close(ack_fd);
	if (child_pid > 0)
		waitpid(child_pid, NULL, 0);
	return 0;
}

/* Ask the child to do C in the namespace and wait until it has. */
static void child_do(char c)
{
	char a;

	assert_int_equal(write(cmd_fd, &c, 1), 1);
	assert_int_equal(read(ack_fd, &a, 1), 1);
	assert_int_equal(a, c);
}

static const struct probe_netlink_listen_queue *find_lq(const struct probe_netlink_listen_queue *lq, size_t n,
						       int family, uint16_t port)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lq[i].family == family && lq[i].port == port)
			return &lq[i];
	return NULL;
}

static const struct probe_netlink_link_stats *find_link(const struct probe_netlink_link_stats *ls, size_t n,
						       const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(ls[i].name, name) == 0)
			return &ls[i];
	return NULL;
}

static void test_listen_queues_and_states(void **state)
{
	struct probe_netlink_listen_queue lq[16];
	struct probe_netlink_tcp_states st;
	const struct probe_netlink_listen_queue *q;
	struct probe_netlink *p;
	char err[256];
	size_t n = 0;
	int i;

	(void)state;
	assert_int_equal(probe_netlink_open(child_pid, &p, err, sizeof(err)), 0);
	/* Connection setup and the active close finish in softirq context; give them a moment if needed. */
	for (i = 0; i < 100; i++) {
		assert_int_equal(probe_netlink_tcp(p, lq, 16, &n, &st), 0);
		q = find_lq(lq, n, AF_INET, report.port4);
		if (q && q->queued == PENDING4 && st.time_wait == 1)
			break;
		sleep_ms(10);
	}
	q = find_lq(lq, n, AF_INET, report.port4);
	assert_non_null(q);
	assert_string_equal(q->addr, "127.0.0.1");
	assert_int_equal(q->backlog, BACKLOG4);
	assert_int_equal(q->queued, PENDING4);
	/* the inode that names it in /proc/PID/fd (socket:[INODE]) */
	assert_int_equal(q->inode, report.inode4);
	assert_true(q->inode != 0);

	q = find_lq(lq, n, AF_INET, report.port_tw);
	assert_non_null(q);
	assert_int_equal(q->backlog, BACKLOG_TW);
	assert_int_equal(q->queued, 0);

	if (report.port6) {
		q = find_lq(lq, n, AF_INET6, report.port6);
		assert_non_null(q);
		assert_string_equal(q->addr, "::1");
		assert_int_equal(q->backlog, BACKLOG6);
		assert_int_equal(q->queued, 0);
	}
	assert_int_equal(n, report.port6 ? 3 : 2);
	assert_int_equal(st.listen, n);
	/* Each pending connection is two established sockets: the client's and the queued child. */
	assert_int_equal(st.established, 2 * PENDING4);
	/* The server's side alone: the queued children, on the listening port; the clients' ports listen nowhere. */
	assert_int_equal(st.served_established, PENDING4);
	/* their clients sent nothing: silent, by tcp_info's bytes received */
	assert_int_equal(st.served_silent, PENDING4);
	assert_int_equal(st.served_close_wait + st.served_closed, 0);
	assert_int_equal(st.time_wait, 1);
	/* the client closed first: its TIME_WAIT holds an ephemeral port, one no socket listens on */
	assert_int_equal(st.outgoing_time_wait, 1);
	assert_int_equal(st.syn_sent + st.syn_recv + st.fin_wait1 + st.fin_wait2 + st.close + st.close_wait +
				 st.last_ack + st.closing,
			 0);

	/* A short array keeps the first entries and still counts every listener. */
	assert_int_equal(probe_netlink_tcp(p, lq, 1, &n, &st), 0);
	assert_int_equal(n, 1);
	assert_int_equal(st.listen, report.port6 ? 3 : 2);
	assert_int_equal(probe_netlink_tcp(p, NULL, 0, &n, &st), 0);
	assert_int_equal(n, 0);
	assert_int_equal(st.established, 2 * PENDING4);
	assert_int_equal(st.served_established, PENDING4);

	/* Without ST only listeners are dumped, with the same queue figures. */
	memset(lq, 0, sizeof(lq));
	assert_int_equal(probe_netlink_tcp(p, lq, 16, &n, NULL), 0);
	assert_int_equal(n, report.port6 ? 3 : 2);
	q = find_lq(lq, n, AF_INET, report.port4);
	assert_non_null(q);
	assert_string_equal(q->addr, "127.0.0.1");
	assert_int_equal(q->backlog, BACKLOG4);
	assert_int_equal(q->queued, PENDING4);

	/* A connection whose client has sent a byte is served but not silent. */
	child_do('d');
	assert_int_equal(probe_netlink_tcp(p, lq, 16, &n, &st), 0);
	assert_int_equal(st.served_established, PENDING4 + 1);
	assert_int_equal(st.served_silent, PENDING4);
	child_do('D');
	/* A TIME_WAIT on a listening port is the server's side (a served connection), not an outgoing one. */
	child_do('w');
	for (i = 0; i < 100; i++) {
		assert_int_equal(probe_netlink_tcp(p, lq, 16, &n, &st), 0);
		if (st.time_wait == 2)
			break;
		sleep_ms(10);
	}
	assert_int_equal(st.time_wait, 2);
	assert_int_equal(st.outgoing_time_wait, 1);
	probe_netlink_close(p);
}

static void test_links_in_namespace(void **state)
{
	struct probe_netlink_link_stats ls[64];
	const struct probe_netlink_link_stats *lo;
	uint64_t rx0, rxb0;
	struct probe_netlink *p;
	char err[256];
	size_t n = 0;

	(void)state;
	assert_int_equal(probe_netlink_open(child_pid, &p, err, sizeof(err)), 0);
	assert_int_equal(probe_netlink_links(p, ls, 64, &n), 0);
	assert_true(n >= 1);
	lo = find_link(ls, n, "lo");
	assert_non_null(lo);
	/* On loopback every packet sent is received. */
	assert_true(lo->rx_packets > 0);
	assert_int_equal(lo->rx_packets, lo->tx_packets);
	assert_int_equal(lo->rx_bytes, lo->tx_bytes);
	rx0 = lo->rx_packets;
	rxb0 = lo->rx_bytes;

	child_do('u');
	assert_int_equal(probe_netlink_links(p, ls, 64, &n), 0);
	lo = find_link(ls, n, "lo");
	assert_non_null(lo);
	assert_true(lo->rx_packets >= rx0 + UDP_BURST);
	assert_true(lo->rx_bytes >= rxb0 + UDP_BURST * 29);

	/* Too small an array keeps the first links in ifindex order: lo is always 1. */
	memset(ls, 0, sizeof(ls));
	assert_int_equal(probe_netlink_links(p, ls, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ls[0].name, "lo");
	assert_true(ls[0].rx_packets >= rx0 + UDP_BURST);
	assert_string_equal(ls[1].name, "");
	assert_int_equal(probe_netlink_links(p, NULL, 0, &n), 0);
	assert_int_equal(n, 0);
	probe_netlink_close(p);
}

/* A link added after the names were read is found (its unknown index makes the probe dump links whole again); a
 * rename keeps the index, so it shows after probe_netlink_links_renamed. Needs the dummy or bridge link type. */
static void test_links_added_and_renamed(void **state)
{
	struct probe_netlink_link_stats ls[64];
	struct probe_netlink *p;
	char err[256];
	size_t n = 0;

	(void)state;
	assert_int_equal(probe_netlink_open(child_pid, &p, err, sizeof(err)), 0);
	assert_int_equal(probe_netlink_links(p, ls, 64, &n), 0);
	assert_null(find_link(ls, n, "ngxd0"));
	if (run("ip -n %s link add ngxd0 type dummy 2>/dev/null", ns_name) != 0 &&
	    run("ip -n %s link add ngxd0 type bridge 2>/dev/null", ns_name) != 0) {
		probe_netlink_close(p);
		testskip("neither a dummy nor a bridge link can be added (no such link type in this kernel)");
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(probe_netlink_links(p, ls, 64, &n), 0);
		assert_non_null(find_link(ls, n, "lo"));
		assert_non_null(find_link(ls, n, "ngxd0"));
	}
	assert_int_equal(run("ip -n %s link set ngxd0 name ngxd1", ns_name), 0);
	assert_int_equal(probe_netlink_links(p, ls, 64, &n), 0);
	assert_non_null(find_link(ls, n, "ngxd0")); /* the name the probe knew */
	probe_netlink_links_renamed(p);
	assert_int_equal(probe_netlink_links(p, ls, 64, &n), 0);
	assert_null(find_link(ls, n, "ngxd0"));
	assert_non_null(find_link(ls, n, "ngxd1"));
	assert_int_equal(probe_netlink_links(p, ls, 64, &n), 0);
	assert_non_null(find_link(ls, n, "ngxd1"));
	/* Gone: simply not listed. */
	assert_int_equal(run("ip -n %s link del ngxd1", ns_name), 0);
	assert_int_equal(probe_netlink_links(p, ls, 64, &n), 0);
	assert_null(find_link(ls, n, "ngxd1"));
	assert_non_null(find_link(ls, n, "lo"));
	probe_netlink_links_renamed(NULL);
	probe_netlink_close(p);
}

static void test_own_namespace_does_not_see_it(void **state)
{
	struct probe_netlink_listen_queue lq[256];
	struct probe_netlink_tcp_states st;
	const struct probe_netlink_listen_queue *q;
	struct probe_netlink *p;
	char err[256];
	size_t n = 0;
	/* 0 and our own pid both mean our namespace; the second goes through /proc and skips setns. */
	const int pids[] = { 0, (int)getpid() };
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		assert_int_equal(probe_netlink_open(pids[i], &p, err, sizeof(err)), 0);
		assert_int_equal(probe_netlink_tcp(p, lq, 256, &n, &st), 0);
		q = find_lq(lq, n, AF_INET, report.port4);
		assert_true(q == NULL || strcmp(q->addr, "127.0.0.1") != 0 || q->backlog != BACKLOG4 ||
			    q->queued != PENDING4);
		probe_netlink_close(p);
	}
}

static void test_repeated_calls_stay_in_step(void **state)
{
	struct probe_netlink_listen_queue lq[16];
	struct probe_netlink_link_stats ls[64];
	struct probe_netlink_tcp_states st;
	struct probe_netlink *p;
	char err[256];
	size_t n;
	int i;

	(void)state;
	assert_int_equal(probe_netlink_open(child_pid, &p, err, sizeof(err)), 0);
	for (i = 0; i < 200; i++) {
		assert_int_equal(probe_netlink_tcp(p, lq, 16, &n, &st), 0);
		assert_int_equal(st.established, 2 * PENDING4);
		assert_int_equal(probe_netlink_links(p, ls, 64, &n), 0);
		assert_non_null(find_link(ls, n, "lo"));
	}
	probe_netlink_close(p);
}

static void test_errors(void **state)
{
	struct probe_netlink *p = (struct probe_netlink *)&p;
	char err[256];

	(void)state;
	/* Above any pid_max the kernel allows (2^22), so no such process can exist. */
	assert_int_equal(probe_netlink_open(1 << 30, &p, err, sizeof(err)), -ENOENT);
	assert_null(p);
	assert_non_null(strstr(err, "/proc/1073741824/ns/net"));
	assert_non_null(strstr(err, strerror(ENOENT)));

	assert_int_equal(probe_netlink_open(-1, &p, err, sizeof(err)), -EINVAL);
	assert_true(err[0] != '\0');
	assert_int_equal(probe_netlink_open(0, NULL, err, sizeof(err)), -EINVAL);
	/* A NULL message buffer is allowed. */
	assert_int_equal(probe_netlink_open(1 << 30, &p, NULL, 0), -ENOENT);
	probe_netlink_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_queues_and_states),
		cmocka_unit_test(test_links_in_namespace),
		cmocka_unit_test(test_links_added_and_renamed),
		cmocka_unit_test(test_own_namespace_does_not_see_it),
		cmocka_unit_test(test_repeated_calls_stay_in_step),
		cmocka_unit_test(test_errors),
	};
	int rc;

	if (geteuid() != 0)
		return testskip_program("test_probe_netlink needs root");
	if (ns_create() < 0)
		return testskip_program("cannot create a network namespace here");
	signal(SIGPIPE, SIG_IGN);
	rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
	run("ip netns del %s", ns_name);
	return rc;
}
