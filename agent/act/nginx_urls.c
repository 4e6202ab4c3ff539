/*
 * nginx_urls: see nginx_urls.h.
 */
#include "act/nginx_urls.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "strutil.h"

#define URL_PATH_MAX 256 /* a proxied location's path, encoded */
#define DEPTH_MAX NGINX_CONF_DEPTH_MAX

/* One listen of a server that a plain HTTP client can ask. */
struct plain {
	size_t srv;
	int family;
	char addr[NGINX_CONF_ADDR_MAX];
	unsigned port;
	bool wildcard;
	bool dflt;  /* default_server (or its old name, default) */
};

struct srv {
	size_t nloc;                 /* locations, nested ones included */
	bool serves;                 /* no location, or one that is not stub_status alone */
	char proxied[URL_PATH_MAX];  /* the first location that proxies and a URL can name, encoded; "" none */
};

enum frame_kind { FR_OTHER, FR_SERVER, FR_LOCATION };

struct frame {
	enum frame_kind kind;
	bool status;                 /* a location with stub_status */
	bool named;                  /* a location a URL can name (not a regex or a named one) */
	char path[URL_PATH_MAX];
};

struct walk {
	const struct nginx_listen *l;
	size_t nl, li;               /* listens, and the next one to match */
	struct plain *p;
	size_t np, pcap;
	struct srv *s;
	size_t ns, scap;
	struct frame st[DEPTH_MAX];
	size_t sp;
	bool in_server;
	size_t cur;                  /* the server being walked */
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *nv;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	nv = realloc(*v, c * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

/* PATH as a URL path: bytes outside RFC 3986's unreserved, sub-delims, ':', '@' and '/' percent-encoded (nginx
 * matches locations on the decoded path). -ENAMETOOLONG past URL_PATH_MAX. */
static int encode_path(const char *path, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		bool keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			    strchr("-._~/!$&'()*+,;=:@", *p);

		if (o + (keep ? 1 : 3) >= URL_PATH_MAX)
			return -ENAMETOOLONG;
		if (keep) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

/* A location's path from its words ("location [= | ^~] PATH", or "=PATH"); NAMED false for a regex (~, ~*) or a
 * named location (@name), which no URL names as such. */
static void location_path(const struct nginx_conf_node *n, struct frame *f)
{
	char w1[NGINX_CONF_TOKEN_MAX], w2[NGINX_CONF_TOKEN_MAX];
	const char *path = NULL;

	f->named = false;
	f->path[0] = '\0';
	if (n->nwords < 2 || nginx_conf_node_word(n, 1, w1, sizeof(w1)) < 0)
		return;
	if (n->nwords == 3 && (strcmp(w1, "=") == 0 || strcmp(w1, "^~") == 0) &&
	    nginx_conf_node_word(n, 2, w2, sizeof(w2)) >= 0)
		path = w2;
	else if (n->nwords == 2 && w1[0] == '=')
		path = w1 + 1;
	else if (n->nwords == 2 && strncmp(w1, "^~", 2) == 0)
		path = w1 + 2;
	else if (n->nwords == 2 && w1[0] != '~' && w1[0] != '@')
		path = w1;
	if (path && path[0] == '/' && encode_path(path, f->path) == 0)
		f->named = true;
}

/* The listen at node N of the server being walked: a plain HTTP one goes to W->p. */
static int on_listen(struct walk *w, const struct nginx_conf_node *n)
{
	const struct nginx_listen *l = NULL;
	struct plain *p;
	char word[NGINX_CONF_TOKEN_MAX];
	bool dflt = false;

	/* nginx_conf_listens lists them in the walk's order: the next HTTP one at this file and line is this one. */
	while (w->li < w->nl && !l) {
		const struct nginx_listen *c = &w->l[w->li++];

		if (c->module == NGINX_LISTEN_HTTP && c->file == n->file && c->line == n->line)
			l = c;
	}
	if (!l || l->udp || l->family == AF_UNIX)
		return 0;
	for (size_t i = 2; i < n->nwords; i++) {
		if (nginx_conf_node_word(n, i, word, sizeof(word)) < 0)
			continue;
		/* what a plain HTTP/1.1 client cannot speak to */
		if (strcmp(word, "ssl") == 0 || strcmp(word, "http2") == 0 || strcmp(word, "quic") == 0 ||
		    strcmp(word, "proxy_protocol") == 0 || strcmp(word, "spdy") == 0)
			return 0;
		if (strcmp(word, "default_server") == 0 || strcmp(word, "default") == 0)
			dflt = true;
	}
	if (grow((void **)&w->p, &w->pcap, w->np, sizeof(*w->p)) < 0)
		return -ENOMEM;
	p = &w->p[w->np++];
	memset(p, 0, sizeof(*p));
	p->srv = w->cur;
	p->family = l->family;
	snprintf(p->addr, sizeof(p->addr), "%s", l->addr);
	p->port = l->port;
	p->wildcard = l->wildcard;
	p->dflt = dflt;
	return 0;
}

static int on_node(void *ctx, const struct nginx_conf_node *n)
{
	struct walk *w = ctx;
	char name[64];
	struct frame *top = w->sp ? &w->st[w->sp - 1] : NULL;

	if (n->event == NGINX_CONF_INCLUDE)
		return 0;
	if (n->event == NGINX_CONF_BLOCK_END) {
		if (!w->sp)
			return 0;
		w->sp--;
		if (top->kind == FR_LOCATION && !top->status)
			w->s[w->cur].serves = true;
		if (top->kind == FR_SERVER) {
			if (w->s[w->cur].nloc == 0)
				w->s[w->cur].serves = true;
			w->in_server = false;
		}
		return 0;
	}
	if (nginx_conf_node_word(n, 0, name, sizeof(name)) < 0)
		name[0] = '\0';
	if (n->event == NGINX_CONF_BLOCK) {
		struct frame f = {.kind = FR_OTHER};

		if (w->sp == DEPTH_MAX)
			return -EINVAL; /* nginx_conf_walk refuses deeper nesting first */
		if (strcmp(name, "server") == 0 && strcmp(n->context, "http") == 0) {
			if (grow((void **)&w->s, &w->scap, w->ns, sizeof(*w->s)) < 0)
				return -ENOMEM;
			memset(&w->s[w->ns], 0, sizeof(w->s[0]));
			w->cur = w->ns++;
			w->in_server = true;
			f.kind = FR_SERVER;
		} else if (strcmp(name, "location") == 0 && w->in_server) {
			f.kind = FR_LOCATION;
			location_path(n, &f);
			w->s[w->cur].nloc++;
		}
		w->st[w->sp++] = f;
		return 0;
	}
	if (!w->in_server)
		return 0;
	if (strcmp(name, "listen") == 0 && top && top->kind == FR_SERVER)
		return on_listen(w, n);
	/* the innermost location holds the directive (an "if" inside it is still that location's) */
	for (size_t i = w->sp; i > 0; i--) {
		struct frame *f = &w->st[i - 1];

		if (f->kind == FR_SERVER)
			break;
		if (f->kind != FR_LOCATION)
			continue;
		if (strcmp(name, "stub_status") == 0)
			f->status = true;
		if (strcmp(name, "proxy_pass") == 0 && f->named && !w->s[w->cur].proxied[0])
			snprintf(w->s[w->cur].proxied, sizeof(w->s[w->cur].proxied), "%s", f->path);
		break;
	}
	return 0;
}

static bool same_addr(const struct plain *a, const struct plain *b)
{
	return a->family == b->family && a->port == b->port && strcmp(a->addr, b->addr) == 0;
}

/* Whether P's server answers a request to P's address whose Host names no server. */
static bool default_of(const struct walk *w, const struct plain *p)
{
	const struct plain *first = NULL;

	if (p->dflt)
		return true;
	for (size_t i = 0; i < w->np; i++) {
		if (!same_addr(&w->p[i], p))
			continue;
		if (w->p[i].dflt)
			return false;
		if (!first)
			first = &w->p[i];
	}
	return first == p;
}

/* "http://HOST:PORT" of P into OUT: a wildcard is asked on loopback. */
static void origin(const struct plain *p, char *out, size_t n)
{
	if (p->wildcard)
		snprintf(out, n, "http://%s:%u", p->family == AF_INET6 ? "[::1]" : "127.0.0.1", p->port);
	else if (p->family == AF_INET6)
		snprintf(out, n, "http://[%s]:%u", p->addr, p->port);
	else
		snprintf(out, n, "http://%s:%u", p->addr, p->port);
}

/* STUB_URL's origin ("http://HOST[:PORT]", as written) into OUT when a serving listen of W is at its host and port:
 * the first URL stays what it was before the configuration was read. */
static bool stub_origin(const struct walk *w, const char *stub_url, char *out, size_t n)
{
	char host[NGINX_CONF_ADDR_MAX];
	const char *auth, *end, *colon, *hend;
	unsigned long port = 80;
	size_t hlen;

	if (!stub_url || strncmp(stub_url, "http://", 7) != 0)
		return false;
	auth = stub_url + 7;
	end = auth + strcspn(auth, "/?#");
	if (*auth == '[') {
		hend = memchr(auth, ']', (size_t)(end - auth));
		if (!hend)
			return false;
		hlen = (size_t)(hend - auth - 1);
		auth++;
		colon = hend + 1 < end && hend[1] == ':' ? hend + 1 : NULL;
	} else {
		colon = memchr(auth, ':', (size_t)(end - auth));
		hlen = (size_t)((colon ? colon : end) - auth);
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return false;
	memcpy(host, auth, hlen);
	host[hlen] = '\0';
	if (colon && (port = strtoul(colon + 1, NULL, 10)) == 0)
		return false;
	for (size_t i = 0; i < w->np; i++) {
		const struct plain *p = &w->p[i];

		if (w->s[p->srv].serves && p->port == port && (p->wildcard || strcmp(p->addr, host) == 0)) {
			snprintf(out, n, "%.*s", (int)(end - stub_url), stub_url);
			return true;
		}
	}
	return false;
}

int nginx_urls_client(const struct nginx_conf *c, const char *stub_url, char *out, size_t outlen, char *err,
		      size_t errlen)
{
	struct nginx_listen *l = NULL;
	struct walk *w = calloc(1, sizeof(*w));
	char base[NGINX_CONF_ADDR_MAX + 64] = "", proxied[NGINX_CONF_ADDR_MAX + 64 + URL_PATH_MAX] = "";
	size_t nl = 0;
	int r, n;

	if (outlen)
		out[0] = '\0';
	if (!w)
		return -ENOMEM;
	r = nginx_conf_listens(c, &l, &nl, err, errlen);
	if (r == 0) {
		w->l = l;
		w->nl = nl;
		r = nginx_conf_walk(c, on_node, w, err, errlen);
	}
	if (r == 0 && !stub_origin(w, stub_url, base, sizeof(base))) {
		for (size_t i = 0; i < w->np && !base[0]; i++)
			if (w->s[w->p[i].srv].serves)
				origin(&w->p[i], base, sizeof(base));
	}
	/* the first server that proxies and answers requests to one of its addresses that name no server */
	for (size_t s = 0; r == 0 && s < w->ns && !proxied[0]; s++) {
		if (!w->s[s].proxied[0])
			continue;
		for (size_t i = 0; i < w->np && !proxied[0]; i++) {
			if (w->p[i].srv == s && default_of(w, &w->p[i])) {
				origin(&w->p[i], proxied, sizeof(proxied));
				snprintf(proxied + strlen(proxied), sizeof(proxied) - strlen(proxied), "%s",
					 w->s[s].proxied);
			}
		}
	}
	if (r == 0 && !base[0])
		r = -ENOENT;
	if (r == 0) {
		/* "/" itself proxied in the first URL's server is asked once */
		size_t bl = strlen(base);
		bool same = proxied[0] && strncmp(proxied, base, bl) == 0 && strcmp(proxied + bl, "/") == 0;

		n = snprintf(out, outlen, "%s/%s%s", base, proxied[0] && !same ? " " : "", same ? "" : proxied);
		if (n < 0 || (size_t)n >= outlen) {
			if (outlen)
				out[0] = '\0';
			r = -ENAMETOOLONG;
		}
	}
	free(l);
	free(w->p);
	free(w->s);
	free(w);
	return r;
}
