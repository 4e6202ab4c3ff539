/*
 * stubhttp: see stubhttp.h.
 */
#define _GNU_SOURCE

#include "observe/stubhttp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "build-config.h"
#include "netns.h"
#include "strutil.h"

#define HOST_MAX 256
#define PATH_MAX_LEN 1024
#define BODY_ROOM 65536  /* the most a response may hold past its headers (chunk framing included) */
#define MAX_ADDRS 4      /* addresses of a name tried in turn */

struct stubhttp {
	char host[HOST_MAX];     /* as written in the URL, without brackets */
	char port[8];
	char request[PATH_MAX_LEN + HOST_MAX + 128];
	size_t request_len;
	int fd;                  /* the kept connection, or -1 */
	int timer_fd;            /* the deadline of one get: a timerfd armed per call (this module reads no clock) */
	uint64_t gen;            /* the namespace generation fd was made in */
	char *in;                /* the response being read */
	size_t in_len;
	struct stubhttp_timing *t; /* the timed get under way, or NULL */
	uint64_t t_limit_ns;     /* its timeout, which the timerfd counts down from */
	stubhttp_socket_fn make; /* new connections' sockets (stubhttp_set_socket), or NULL */
	void *make_ctx;
};

void stubhttp_set_socket(struct stubhttp *c, stubhttp_socket_fn make, void *ctx)
{
	c->make = make;
	c->make_ctx = ctx;
}

bool stubhttp_handles(const char *url)
{
	const char *auth, *end;

	if (!url || strncasecmp(url, "http://", 7) != 0)
		return false;
	auth = url + 7;
	end = auth + strcspn(auth, "/?#");
	return !memchr(auth, '@', (size_t)(end - auth));
}

/* URL's parts into C; the request text is built once. */
static int parse_url(struct stubhttp *c, const char *url, char *err, size_t errlen)
{
	const char *auth, *aend, *hend, *path, *pend;
	size_t hlen, plen;
	long port = 80;
	int n;

	if (!stubhttp_handles(url)) {
		str_err(err, errlen, "not a plain http:// URL");
		return -EINVAL;
	}
	auth = url + 7;
	aend = auth + strcspn(auth, "/?#");
	if (auth < aend && *auth == '[') {
		hend = memchr(auth, ']', (size_t)(aend - auth));
		if (!hend) {
			str_err(err, errlen, "unterminated [IPv6] address");
			return -EINVAL;
		}
		hlen = (size_t)(hend - auth - 1);
		memcpy(c->host, auth + 1, hlen < HOST_MAX ? hlen : 0);
		hend++;
	} else {
		hend = auth;
		while (hend < aend && *hend != ':')
			hend++;
		hlen = (size_t)(hend - auth);
		memcpy(c->host, auth, hlen < HOST_MAX ? hlen : 0);
	}
	if (hlen == 0 || hlen >= HOST_MAX) {
		str_err(err, errlen, "no host, or a host name too long");
		return -EINVAL;
	}
	c->host[hlen] = '\0';
	if (hend < aend) {
		char *e;

		if (*hend != ':' || hend + 1 == aend) {
			str_err(err, errlen, "bad port");
			return -EINVAL;
		}
		errno = 0;
		port = strtol(hend + 1, &e, 10);
		if (e != aend || port < 1 || port > 65535 || hend[1] < '0' || hend[1] > '9') {
			str_err(err, errlen, "bad port");
			return -EINVAL;
		}
	}
	snprintf(c->port, sizeof(c->port), "%ld", port);
	/* The path and query as written (a fragment is not sent); "" is "/". */
	path = aend;
	pend = path + strcspn(path, "#");
	plen = (size_t)(pend - path);
	for (const char *p = path; p < pend; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
			str_err(err, errlen, "a blank or control byte in the path");
			return -EINVAL;
		}
	if (plen >= PATH_MAX_LEN) {
		str_err(err, errlen, "path too long");
		return -EINVAL;
	}
	/* Host as in the URL ([v6]:port included); no Accept-Encoding, so the body is never compressed. */
	n = snprintf(c->request, sizeof(c->request),
		     "GET %s%.*s HTTP/1.1\r\nHost: %.*s\r\nUser-Agent: ngx-autotune/%s\r\nAccept: */*\r\n\r\n",
		     plen && *path == '/' ? "" : "/", (int)plen, path, (int)(aend - auth), auth, PACKAGE_VERSION);
	if (n < 0 || (size_t)n >= sizeof(c->request)) {
		str_err(err, errlen, "URL too long");
		return -EINVAL;
	}
	c->request_len = (size_t)n;
	return 0;
}

int stubhttp_new(const char *url, struct stubhttp **out, char *err, size_t errlen)
{
	struct stubhttp *c = calloc(1, sizeof(*c));
	int r;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	r = url ? parse_url(c, url, err, errlen) : -EINVAL;
	if (r == 0 && !(c->in = malloc(STUBHTTP_HEAD_MAX + BODY_ROOM)))
		r = -ENOMEM;
	if (r == 0 && c->timer_fd < 0) {
		r = -errno;
		str_err(err, errlen, "timerfd: %s", strerror(errno));
	}
	if (r < 0) {
		stubhttp_free(c);
		return r;
	}
	*out = c;
	return 0;
}

static void drop(struct stubhttp *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

void stubhttp_free(struct stubhttp *c)
{
	if (!c)
		return;
	drop(c);
	if (c->timer_fd >= 0)
		close(c->timer_fd);
	free(c->in);
	free(c);
}

bool stubhttp_connected(const struct stubhttp *c)
{
	return c && c->fd >= 0;
}

/* Microseconds since the timed get began: its timeout less what the timerfd has left (0 left once it fired). */
static uint64_t elapsed_us(const struct stubhttp *c)
{
	struct itimerspec left;
	uint64_t ns;

	if (timerfd_gettime(c->timer_fd, &left) < 0)
		return 0;
	ns = (uint64_t)left.it_value.tv_sec * 1000000000u + (uint64_t)left.it_value.tv_nsec;
	return (c->t_limit_ns > ns ? c->t_limit_ns - ns : 0) / 1000u;
}

/* Wait for EVENTS on FD until the timerfd DEADLINE fires. 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int deadline)
{
	for (;;) {
		struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = deadline, .events = POLLIN}};
		int r = poll(p, 2, -1);

		if (r > 0 && p[1].revents)
			return -ETIMEDOUT;
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* A socket in namespace NETNS_FD: the calling thread visits it (netns.h) and is back at once; or C's maker's. */
static int ns_socket(const struct stubhttp *c, int family, int netns_fd)
{
	int fd, self, e, r;

	if (c->make) {
		fd = c->make(c->make_ctx, family);
		if (fd < 0) {
			errno = -fd;
			return -1;
		}
		/* Its flags are the maker's to pass; these are this module's. */
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
			e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		return fd;
	}
	if (netns_fd < 0)
		return socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	r = netns_enter(netns_fd, &self);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	e = errno;
	if (netns_leave(self) < 0)
		abort(); /* a pool thread left in nginx's namespace would be wrong for everything it does next */
	errno = e;
	return fd;
}

/* The host's addresses: a literal directly, a name through the resolver (in the agent's namespace, as curl does). */
static int resolve(const struct stubhttp *c, struct sockaddr_storage *addrs, socklen_t *lens, size_t *n, char *err,
		   size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&addrs[0];
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&addrs[0];
	uint16_t port = (uint16_t)atoi(c->port);
	int r;

	*n = 0;
	memset(&addrs[0], 0, sizeof(addrs[0]));
	if (inet_pton(AF_INET, c->host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		lens[(*n)++] = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, c->host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		lens[(*n)++] = sizeof(*v6);
		return 0;
	}
	r = getaddrinfo(c->host, c->port, &hints, &res);
	if (r != 0) {
		str_err(err, errlen, "resolve %s: %s", c->host, gai_strerror(r));
		return r == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	}
	for (ai = res; ai && *n < MAX_ADDRS; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(addrs[0]))
			continue;
		memcpy(&addrs[*n], ai->ai_addr, ai->ai_addrlen);
		lens[(*n)++] = ai->ai_addrlen;
	}
	freeaddrinfo(res);
	if (*n == 0) {
		str_err(err, errlen, "resolve %s: no address", c->host);
		return -EHOSTUNREACH;
	}
	return 0;
}

static int connect_one(const struct stubhttp *c, const struct sockaddr_storage *a, socklen_t len, int netns_fd,
		       int deadline, int *out)
{
	int fd = ns_socket(c, a->ss_family, netns_fd), e = 0, one = 1;
	socklen_t elen = sizeof(e);
	int r;

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)a, len) < 0) {
		if (errno != EINPROGRESS) {
			r = -errno;
			close(fd);
			return r;
		}
		r = wait_fd(fd, POLLOUT, deadline);
		if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
			r = -errno;
		if (r == 0 && e != 0)
			r = -e;
		if (r < 0) {
			close(fd);
			return r;
		}
	}
	/* The request is one small write: send it now rather than wait for an ACK (Nagle). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*out = fd;
	return 0;
}

static int open_conn(struct stubhttp *c, int netns_fd, uint64_t gen, int deadline, char *err, size_t errlen)
{
	struct sockaddr_storage addrs[MAX_ADDRS];
	socklen_t lens[MAX_ADDRS];
	size_t n;
	int r = resolve(c, addrs, lens, &n, err, errlen);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		r = connect_one(c, &addrs[i], lens[i], netns_fd, deadline, &c->fd);
		if (r == 0) {
			c->gen = gen;
			if (c->t) {
				c->t->connected = true;
				c->t->connect_us = elapsed_us(c);
			}
			return 0;
		}
		if (r == -ETIMEDOUT)
			break;
	}
	str_err(err, errlen, "connect to %s port %s: %s", c->host, c->port, strerror(-r));
	return r;
}

static int send_all(int fd, const char *p, size_t n, int deadline)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		w = wait_fd(fd, POLLOUT, deadline);
		if (w < 0)
			return (int)w;
	}
	return 0;
}

/* ---- the response ------------------------------------------------------------------------------------------ */

struct head {
	int status;
	bool http10;
	bool close;      /* Connection: close, or HTTP/1.0 without keep-alive */
	bool chunked;
	bool has_length;
	uint64_t length;
	size_t size;     /* bytes of the status line and headers, blank line included */
};

static bool token_is(const char *p, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(p, lit, n) == 0;
}

/* Whether the comma-separated list [P, P+N) holds TOKEN (case-insensitive). */
static bool list_has(const char *p, size_t n, const char *token)
{
	const char *end = p + n;

	while (p < end) {
		const char *e = memchr(p, ',', (size_t)(end - p)), *b = p, *t;

		e = e ? e : end;
		t = e;
		while (b < t && (*b == ' ' || *b == '\t'))
			b++;
		while (t > b && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		if (token_is(b, (size_t)(t - b), token))
			return true;
		p = e + 1;
	}
	return false;
}

/* The status line and headers in BUF[0, SIZE) (SIZE ends at the blank line). -EPROTO with ERR when not HTTP. */
static int parse_head(const char *buf, size_t size, struct head *h, char *err, size_t errlen)
{
	const char *p = buf, *end = buf + size - 2, *eol;
	bool keep_alive = false;

	memset(h, 0, sizeof(*h));
	h->size = size;
	eol = memmem(p, (size_t)(end - p) + 2, "\r\n", 2);
	if (eol - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
	    p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
	    (eol - p > 12 && p[12] != ' ')) {
		str_err(err, errlen, "not an HTTP/1.x status line");
		return -EPROTO;
	}
	h->http10 = p[7] == '0';
	h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	for (p = eol + 2; p < end; p = eol + 2) {
		const char *colon, *v, *ve;

		eol = memmem(p, (size_t)(end - p) + 2, "\r\n", 2);
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p || *p == ' ' || *p == '\t') {
			str_err(err, errlen, "a malformed header line");
			return -EPROTO;
		}
		for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		for (ve = eol; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--)
			;
		if (token_is(p, (size_t)(colon - p), "content-length")) {
			uint64_t n = 0;

			if (v == ve) {
				str_err(err, errlen, "an empty Content-Length");
				return -EPROTO;
			}
			for (const char *d = v; d < ve; d++) {
				if (*d < '0' || *d > '9' || n > 1000000000) {
					str_err(err, errlen, "a bad Content-Length");
					return -EPROTO;
				}
				n = n * 10 + (uint64_t)(*d - '0');
			}
			if (h->has_length && n != h->length) {
				str_err(err, errlen, "two different Content-Length headers");
				return -EPROTO;
			}
			h->has_length = true;
			h->length = n;
		} else if (token_is(p, (size_t)(colon - p), "transfer-encoding")) {
			if (!token_is(v, (size_t)(ve - v), "chunked")) {
				str_err(err, errlen, "Transfer-Encoding '%.40s' is not supported", v);
				return -EPROTO;
			}
			h->chunked = true;
		} else if (token_is(p, (size_t)(colon - p), "connection")) {
			h->close = h->close || list_has(v, (size_t)(ve - v), "close");
			keep_alive = keep_alive || list_has(v, (size_t)(ve - v), "keep-alive");
		}
	}
	if (h->http10 && !keep_alive)
		h->close = true;
	if (h->chunked)
		h->has_length = false; /* RFC 9112 6.3: chunked wins, and the connection must not be reused */
	if (h->chunked && h->http10) {
		str_err(err, errlen, "chunked encoding in an HTTP/1.0 response");
		return -EPROTO;
	}
	return 0;
}

enum { BODY_MORE = 1 };

/*
 * Decode the chunked body in IN[0, N) into OUT (at most MAX - 1 bytes). 0 with *USED (bytes of IN making the body,
 * trailers included) when it is complete, BODY_MORE when more bytes are needed, or -EPROTO / -EMSGSIZE.
 */
static int dechunk(const char *in, size_t n, char *out, size_t max, size_t *len, size_t *used)
{
	size_t pos = 0;

	*len = 0;
	for (;;) {
		const char *eol = memmem(in + pos, n - pos, "\r\n", 2);
		uint64_t size = 0;
		const char *p;

		if (!eol)
			return n - pos > 64 ? -EPROTO : BODY_MORE;
		for (p = in + pos; p < eol && *p != ';'; p++) {
			int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
				: *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;

			if (d < 0 || size > BODY_ROOM)
				return -EPROTO;
			size = size * 16 + (uint64_t)d;
		}
		if (p == in + pos)
			return -EPROTO;
		pos = (size_t)(eol - in) + 2;
		if (size == 0)
			break;
		if (*len + size >= max)
			return -EMSGSIZE;
		if (n - pos < size + 2)
			return BODY_MORE;
		if (memcmp(in + pos + size, "\r\n", 2) != 0)
			return -EPROTO;
		memcpy(out + *len, in + pos, size);
		*len += size;
		pos += size + 2;
	}
	/* Trailer lines, then the blank line. */
	for (;;) {
		const char *eol = memmem(in + pos, n - pos, "\r\n", 2);

		if (!eol)
			return n - pos > STUBHTTP_HEAD_MAX ? -EPROTO : BODY_MORE;
		if (eol == in + pos) {
			pos += 2;
			break;
		}
		pos = (size_t)(eol - in) + 2;
	}
	*used = pos;
	return 0;
}

/*
 * One request and its response on C's connection. *RETRY is set when it failed before any byte of a response
 * came back (a kept connection that the server had closed): the GET can be sent again on a new connection.
 */
static int exchange(struct stubhttp *c, int deadline, char *body, size_t max, size_t *len, int *status,
		    bool *retry, char *err, size_t errlen)
{
	const size_t cap = STUBHTTP_HEAD_MAX + BODY_ROOM;
	struct head h;
	size_t hsize = 0;
	bool eof = false;
	int r;

	*retry = false;
	c->in_len = 0;
	r = send_all(c->fd, c->request, c->request_len, deadline);
	if (r < 0) {
		*retry = r != -ETIMEDOUT;
		str_err(err, errlen, "send: %s", strerror(-r));
		return r;
	}
	/* nginx answers from another process, so nothing is there yet: wait first rather than read EAGAIN. */
	r = wait_fd(c->fd, POLLIN, deadline);
	if (r < 0) {
		str_err(err, errlen, r == -ETIMEDOUT ? "no complete response in time" : "poll: %s", strerror(-r));
		return r;
	}
	for (;;) {
		ssize_t n;

		if (!hsize) {
			const char *e = memmem(c->in, c->in_len, "\r\n\r\n", 4);

			if (e) {
				hsize = (size_t)(e - c->in) + 4;
				r = parse_head(c->in, hsize, &h, err, errlen);
				if (r < 0)
					return r;
				if (h.status < 200) {
					str_err(err, errlen, "an informational response (%d) to a GET", h.status);
					return -EPROTO;
				}
			} else if (c->in_len >= STUBHTTP_HEAD_MAX) {
				str_err(err, errlen, "response headers over %d bytes", STUBHTTP_HEAD_MAX);
				return -EMSGSIZE;
			}
		}
		if (hsize) {
			size_t avail = c->in_len - hsize, used;
			bool nobody = h.status == 204 || h.status == 304;

			if (nobody || h.has_length) {
				uint64_t need = nobody ? 0 : h.length;

				if (need >= max) {
					str_err(err, errlen, "a body of %llu bytes, over the %zu this client takes",
					    (unsigned long long)need, max - 1);
					return -EMSGSIZE;
				}
				if (avail >= need) {
					h.close = h.close || avail > need; /* bytes after the response: not reusable */
					*len = (size_t)need;
					break;
				}
			} else if (h.chunked) {
				r = dechunk(c->in + hsize, avail, body, max, len, &used);
				if (r == 0) {
					h.close = true; /* RFC 9112: framing we do not reuse a connection for */
					body[*len] = '\0';
					*status = h.status;
					drop(c);
					return 0;
				}
				if (r < 0) {
					str_err(err, errlen, r == -EMSGSIZE ? "a chunked body over the size this client takes"
									: "bad chunked encoding");
					return r;
				}
			} else if (avail >= max) {
				str_err(err, errlen, "a body over the %zu bytes this client takes", max - 1);
				return -EMSGSIZE;
			} else if (eof) {
				*len = avail; /* no length: the body ends with the connection */
				h.close = true;
				break;
			}
		}
		if (eof) {
			*retry = c->in_len == 0;
			str_err(err, errlen, "connection closed %s", c->in_len ? "in the middle of the response"
									: "before a response");
			return c->in_len ? -EPROTO : -ECONNRESET;
		}
		if (c->in_len == cap) {
			str_err(err, errlen, "response over %zu bytes", cap);
			return -EMSGSIZE;
		}
		n = recv(c->fd, c->in + c->in_len, cap - c->in_len, 0);
		if (n > 0) {
			if (c->t && !c->t->first_byte) {
				c->t->first_byte = true;
				c->t->ttfb_us = elapsed_us(c);
			}
			c->in_len += (size_t)n;
			continue;
		}
		if (n == 0) {
			eof = true;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			r = wait_fd(c->fd, POLLIN, deadline);
			if (r < 0) {
				str_err(err, errlen, r == -ETIMEDOUT ? "no complete response in time" : "poll: %s",
				    strerror(-r));
				return r;
			}
			continue;
		}
		r = -errno;
		*retry = c->in_len == 0;
		str_err(err, errlen, "receive: %s", strerror(-r));
		return r;
	}
	memcpy(body, c->in + hsize, *len);
	body[*len] = '\0';
	*status = h.status;
	if (h.close)
		drop(c);
	return 0;
}

static int get(struct stubhttp *c, int netns_fd, uint64_t netns_gen, int timeout_ms, bool fresh, char *body,
	       size_t max, size_t *len, int *status, char *err, size_t errlen)
{
	struct itimerspec its = {0};
	int deadline = c ? c->timer_fd : -1;
	int r = -EINVAL;

	*len = 0;
	*status = 0;
	if (err && errlen)
		err[0] = '\0';
	if (!c || !body || max == 0)
		return -EINVAL;
	body[0] = '\0';
	if (timeout_ms <= 0)
		timeout_ms = 1;
	its.it_value.tv_sec = timeout_ms / 1000;
	its.it_value.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
	c->t_limit_ns = (uint64_t)timeout_ms * 1000000u;
	if (fresh)
		drop(c);
	if (timerfd_settime(deadline, 0, &its, NULL) < 0) {
		r = -errno;
		str_err(err, errlen, "timerfd: %s", strerror(errno));
		return r;
	}
	/* At most twice: once more on a new connection when a kept one turns out to be closed. */
	for (int attempt = 0; attempt < 2; attempt++) {
		bool reused, retry;

		if (c->fd >= 0 && c->gen != netns_gen)
			drop(c);
		reused = c->fd >= 0;
		if (!reused) {
			r = open_conn(c, netns_fd, netns_gen, deadline, err, errlen);
			if (r < 0)
				return r;
		}
		r = exchange(c, deadline, body, max, len, status, &retry, err, errlen);
		if (r == 0)
			return 0;
		drop(c);
		if (!reused || !retry)
			break;
	}
	return r;
}

int stubhttp_get(struct stubhttp *c, int netns_fd, uint64_t netns_gen, int timeout_ms, char *body, size_t max,
		 size_t *len, int *status, char *err, size_t errlen)
{
	return get(c, netns_fd, netns_gen, timeout_ms, false, body, max, len, status, err, errlen);
}

int stubhttp_get_timed(struct stubhttp *c, int netns_fd, uint64_t netns_gen, int timeout_ms, bool fresh,
		       char *body, size_t max, size_t *len, int *status, struct stubhttp_timing *t, char *err,
		       size_t errlen)
{
	int r;

	memset(t, 0, sizeof(*t));
	if (c)
		c->t = t;
	r = get(c, netns_fd, netns_gen, timeout_ms, fresh, body, max, len, status, err, errlen);
	if (!c)
		return r;
	/* A timeout took the whole of it, however far the timerfd was read before it fired. */
	t->total_us = r == -ETIMEDOUT ? c->t_limit_ns / 1000u : elapsed_us(c);
	c->t = NULL;
	if (fresh)
		drop(c);
	return r;
}
