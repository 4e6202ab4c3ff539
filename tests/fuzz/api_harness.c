#include "build-config.h"

#include "api_harness.h"
#include "fuzz.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "agent.h"
#include "api/api.h"
#include "api/api_internal.h"
#include "diagnose/doctor.h"
#include "log.h"
#include "loop.h"

#define TOKEN "fuzz-token-0123456789abcdef"
#define QUIET_ROUNDS 4   /* polls of POLL_MS with nothing new before the answer counts as complete */
#define POLL_MS 2
#define ROUNDS_MAX 2000  /* bounds one exchange (an event stream never ends by itself) */

static struct agent *agent;
static bool trace; /* NGXAT_FUZZ_TRACE=1: each answer's status line on stderr (to check what seeds reach) */
static char dir[64], sock_path[128], host[64];
static struct sockaddr_in tcp_addr;

static void die(const char *what, const char *why)
{
	fprintf(stderr, "fuzz_api: %s: %s\n", what, why);
	abort();
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || chmod(path, mode) < 0)
		die(path, strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* At exit: the temporary directory goes (a crash leaves it, with the store of what led there). */
static void remove_dir(void)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* DIR/REL holding TEXT, with its parent directories. */
static void put(const char *rel, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			die(path, strerror(errno));
		*p = '/';
	}
	write_file(path, text, 0644);
}

/* A small host under DIR/root: two CPUs, eth0 with two IRQs, a few sysctls, so that knobs have live values to
 * propose from and the knob routes have something to list. */
static void fake_root(void)
{
	put("root/proc/interrupts", "           CPU0       CPU1\n"
				   " 25:        100        200   PCI-MSI 524288-edge      eth0-rx-0\n"
				   " 26:         50         60   PCI-MSI 524289-edge      eth0-tx-0\n"
				   "LOC:       1000       1100   Local timer interrupts\n");
	put("root/proc/irq/25/smp_affinity_list", "0-1\n");
	put("root/proc/irq/26/smp_affinity_list", "0-1\n");
	put("root/proc/sys/net/core/somaxconn", "4096\n");
	put("root/proc/sys/net/core/netdev_max_backlog", "1000\n");
	put("root/proc/sys/net/core/netdev_budget", "300\n");
	put("root/proc/sys/net/ipv4/tcp_max_syn_backlog", "512\n");
	put("root/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
	put("root/sys/class/net/eth0/queues/rx-0/rps_cpus", "0\n");
}

/* A loopback port nobody holds now: the kernel's choice for port 0. */
static unsigned free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || getsockname(fd, (struct sockaddr *)&sa, &len))
		die("loopback port", strerror(errno));
	close(fd);
	return ntohs(sa.sin_port);
}

void fuzz_api_start(void)
{
	struct store_options so;
	char path[192], conf[2048], err[512];
	unsigned port = free_port();
	int r;

	trace = getenv("NGXAT_FUZZ_TRACE") && strcmp(getenv("NGXAT_FUZZ_TRACE"), "1") == 0;
	snprintf(dir, sizeof(dir), "/tmp/ngxat-fuzz-api.XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp", strerror(errno));
	atexit(remove_dir);
	fake_root();
	snprintf(path, sizeof(path), "%s/tokens", dir);
	write_file(path, "fuzz:" TOKEN "\n", 0600);
	snprintf(sock_path, sizeof(sock_path), "%s/api.sock", dir);
	snprintf(host, sizeof(host), "127.0.0.1:%u", port);
	tcp_addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	snprintf(conf, sizeof(conf),
		 "[agent]\nsocket = %s\nsocket_group =\nroot = %s/root\ndry_run = yes\nlog_level = error\n"
		 "[store]\npath = %s/store.db\n[policies]\ndir = %s/policies\noverride_dir = %s/policies.d\n"
		 "[nginx]\npid_file = %s/nginx.pid\nstub_status_url =\naccess_log =\nerror_log =\nbinary = /bin/false\n"
		 "[probes]\nnetlink = no\n[api]\nlisten = %s\ntoken_file = %s/tokens\n",
		 sock_path, dir, dir, NGXAT_FUZZ_SRCDIR, dir, dir, host, dir);
	snprintf(path, sizeof(path), "%s/agent.conf", dir);
	write_file(path, conf, 0644);

	agent = calloc(1, sizeof(*agent));
	if (!agent)
		die("agent", "out of memory");
	loop_clock_init(agent);
	if (config_load(path, true, &agent->cfg, err, sizeof(err)) < 0)
		die("configuration", err);
	log_set_level(agent->cfg.log_level);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	frame_init(&agent->fr);
	if (metric_registry_new(&agent->reg) < 0 || sampler_new(&agent->cfg, agent->reg, &agent->sampler) < 0)
		die("sampler", "out of memory");
	store_options_default(&so);
	if (store_open(agent->cfg.store_path, &so, agent->reg, &agent->store, err, sizeof(err)) < 0)
		die("store", err);
	if (agent_lock(agent, err, sizeof(err)) < 0)
		die("lock", err);
	loop_init(agent);
	/*
	 * The policies load only when root owns them (policy_load trusts no one else's files, so a checkout owned by
	 * another user has none). Then the API is fuzzed without the engine (the routes that act answer 409) and says so;
	 * where every check must run (CI) that is a failure.
	 */
	r = agent_start_engine(agent, err, sizeof(err));
	if (r < 0 && getenv("NGXAT_REQUIRE_ALL") && strcmp(getenv("NGXAT_REQUIRE_ALL"), "1") == 0)
		die("engine", err);
	if (r < 0)
		fprintf(stderr, "fuzz_api: without the engine (%s): the routes that act answer 409\n", err);
	if (doctor_new(agent, &agent->doctor) < 0)
		die("doctor", "out of memory");
	if (api_start(agent, &agent->api, err, sizeof(err)) < 0)
		die("API", err);
	fprintf(stderr, "fuzz_api: agent in %s, API on %s and %s\n", dir, sock_path, host);
}

const char *fuzz_api_host(void)
{
	return host;
}

const char *fuzz_api_token(void)
{
	return TOKEN;
}

static int connect_to(bool tcp)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	int fd = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int r;

	if (fd < 0)
		die("socket", strerror(errno));
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", sock_path);
	/* The listen queue takes the connection without the loop running: connect does not wait for accept. */
	r = tcp ? connect(fd, (struct sockaddr *)&tcp_addr, sizeof(tcp_addr))
		: connect(fd, (struct sockaddr *)&un, sizeof(un));
	if (r < 0)
		die("connect", strerror(errno));
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		die("fcntl", strerror(errno));
	return fd;
}

/* Run the loop once, after waiting up to POLL_MS for it or for FD. */
static void turn(int fd)
{
	struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = uv_backend_fd(agent->loop), .events = POLLIN}};

	poll(p, 2, POLL_MS);
	uv_run(agent->loop, UV_RUN_NOWAIT);
}

void fuzz_api_exchange(bool tcp, const char *req, size_t len)
{
	char head[64] = "", buf[16384]; /* head: the answer's first bytes, NUL-terminated */
	size_t sent = 0, got = 0;
	int fd = connect_to(tcp), quiet = 0;
	bool eof = false;

	for (int round = 0; round < ROUNDS_MAX && !eof && quiet < QUIET_ROUNDS; round++) {
		ssize_t n;

		if (sent < len) {
			n = send(fd, req + sent, len - sent, MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
			/* The end of the input is the end of the request stream: MHD answers what it has, then closes,
			 * instead of keeping the connection alive for a request that will not come. */
			if (sent == len)
				shutdown(fd, SHUT_WR);
			else if (n < 0 && errno != EAGAIN)
				break; /* the API closed on us before the whole input went: its right */
		}
		turn(fd);
		n = recv(fd, buf, sizeof(buf), 0);
		if (n > 0) {
			if (got < sizeof(head) - 1)
				memcpy(head + got, buf,
				       (size_t)n < sizeof(head) - 1 - got ? (size_t)n : sizeof(head) - 1 - got);
			got += (size_t)n;
			quiet = 0;
		} else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			eof = true;
		} else if (sent == len) {
			quiet++;
		}
	}
	if (got)
		FUZZ_CHECK(memcmp(head, "HTTP/1.", got < 7 ? got : 7) == 0);
	if (trace)
		fprintf(stderr, "fuzz_api: %s: %.*s\n", tcp ? "tcp" : "unix", (int)strcspn(head, "\r\n"), head);
	close(fd);
	/* Let MHD see the close and free the connection before the next input (and before the leak check). */
	for (int i = 0; i < 8; i++)
		turn(-1);
}
