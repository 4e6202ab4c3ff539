/*
 * knob_upstream: upstream keepalive as one knob (knob_upstream_ops, kind upstream_keepalive, int N: idle connections
 * kept per worker and upstream; 0: as the operator had it).
 *
 * Without keepalive nginx opens a connection to the upstream for every request and closes it after the response, so
 * each request leaves a TIME_WAIT on one of nginx's local ports for 60 s (tcp_tw_reuse helps loopback alone by
 * default): a few thousand requests a second run out of ports ("connect() failed (99: Cannot assign requested
 * address)", 502s). Keepalive takes three directives, which this knob writes as one change: `keepalive N` in the
 * upstream block, `proxy_http_version 1.1` and `proxy_set_header Connection ""` for the location of the proxy_pass.
 *
 * What it manages: every proxy_pass of http's locations (in an `if` or `limit_except` too: their lines go to the
 * location) to http:// or https://. One that names an upstream block gets keepalive there. One that names an address
 * (`proxy_pass http://127.0.0.1:8080/x;`) gets an upstream block of its own in the agent's http include file,
 * `ngxat_up_127_0_0_1_8080` with `server 127.0.0.1:8080;`, and is pointed at it (`http://ngxat_up_127_0_0_1_8080/x`);
 * since nginx then sees another host, what it derived from the address stays as it was: `proxy_set_header Host
 * 127.0.0.1:8080` when the location sends nginx's default Host ($proxy_host), `proxy_redirect http://127.0.0.1:8080/
 * /` (the rule of `proxy_redirect default`) when none is set, and for https `proxy_ssl_name 127.0.0.1` when none is
 * set ($proxy_host too). Left alone, and said so by probe: a proxy_pass with variables (its upstream is known only at
 * run time), to a unix: socket (no local ports to run out of, no TIME_WAIT), a location that sets the Connection header
 * itself (websockets: `Connection $connection_upgrade`), one that sets `proxy_redirect default` and names an address
 * (the rule would change with the host), and a location its file brings in twice (its lines would serve both).
 *
 * proxy_set_header in a location replaces every proxy_set_header it would inherit from server or http, so adding
 * `Connection ""` to a location that had none would drop the operator's Host, X-Forwarded-For...: a location that has
 * its own lines gets the new ones beside them; one that inherits them gets a copy of the inherited lines first, so
 * the backend receives the same headers as before, and no Connection: close.
 *
 * Edits, and the way back. Every byte this knob writes in the operator's files is noted (nginx_conf_edit with NOTE):
 * a line it adds ends in "# ngx-autotune upstream_keepalive", a directive whose arguments it changes gets "#
 * ngx-autotune upstream_keepalive: NAME was ARGS" at the end of its line, and the blocks it makes in its http.conf
 * are noted line by line. A write of 0, or of the value the configuration has with those taken back (what the
 * operator had), takes them back (nginx_conf_unedit): each file is byte for byte as before, and an edit someone else
 * made since (another knob, the operator) stays. The first edit of a file keeps its bytes in
 * ENV->include_dir/upstream-backup/ENCODED-PATH as well (written and synced before the file changes), which goes once
 * nginx runs the file without the knob's edits.
 *
 * Live value: the keepalive in force for the proxy_passes it manages: the smallest of their upstreams' keepalive, 0
 * when one lacks any of the three (an address, HTTP/1.0, a Connection header, no keepalive); -ENOENT with no such
 * proxy_pass. Read from nginx's files as they are now (the last dump's files). A write is a change of nginx_ctl
 * (nginx -T, the files, nginx -t, reload, a new generation).
 */
#define _GNU_SOURCE

#include "act/knob.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/policy.h"
#include "act/nginx_conf.h"
#include "act/nginx_ctl.h"
#include "strutil.h"

#define NOTE "ngx-autotune upstream_keepalive"
#define BACKUP_DIR "upstream-backup"
#define MADE_PREFIX "ngxat_up_"
#define URL_MAX 1024

/* ---- what nginx's configuration says about proxying ------------------------------------------------------ */

enum scope_kind { SC_HTTP, SC_SERVER, SC_LOCATION };

/* A proxy_set_header line of a scope: where it is, its field (lower case) and value. */
struct header {
	size_t file, start, end; /* the name's offset and the ';' */
	char field[64];
	char value[256];
};

/* http, a server or a location: the proxy directives it sets itself (the others it inherits). */
struct scope {
	enum scope_kind kind;
	int parent;
	size_t file, start;
	char name[256];      /* a location's URI, as nginx's default proxy_redirect uses it */
	bool regex, named;   /* a location ~ or ~*, or @name */
	bool twice;          /* its file brings it in more than once */
	size_t nhdr;         /* its own proxy_set_header lines (hdrs whose hdr_scope is this one) */
	int version;         /* proxy_http_version: 0 unset, 10, 11 */
	size_t version_file, version_start;
	int redirect;        /* proxy_redirect: 0 unset, 1 set, 2 set with "default" */
	bool ssl_name;       /* proxy_ssl_name set */
};

struct upstream {
	char name[128];
	size_t file, start;
	bool keepalive;
	int64_t value;
	size_t ka_file, ka_start;
};

struct proxy {
	size_t file, start;
	unsigned line;
	int scope;            /* the location */
	char url[URL_MAX];    /* proxy_pass's argument as nginx reads it */
};

struct analysis {
	const struct nginx_conf *c;
	struct scope *scopes;
	size_t nscopes;
	struct header *hdrs;
	int *hdr_scope;       /* the scope of each header */
	size_t nhdrs;
	struct upstream *ups;
	size_t nups;
	struct proxy *proxies;
	size_t nproxies;
	/* the walk's stack: for each open block, the scope it is (or sits in: if, limit_except), or an upstream */
	struct frame {
		int scope, upstream;
		bool own, other;
	} stack[NGINX_CONF_DEPTH_MAX];
	size_t sp;
};

static void analysis_free(struct analysis *a)
{
	free(a->scopes);
	free(a->hdrs);
	free(a->hdr_scope);
	free(a->ups);
	free(a->proxies);
	memset(a, 0, sizeof(*a));
}

#define GROW(arr, n)                                                                                           \
	do {                                                                                                   \
		void *grown_ = realloc((arr), ((n) + 1) * sizeof(*(arr)));                                     \
		if (!grown_)                                                                                   \
			return -ENOMEM;                                                                        \
		(arr) = grown_;                                                                                \
		memset(&(arr)[(n)], 0, sizeof(*(arr)));                                                        \
	} while (0)

static int word(const struct nginx_conf_node *n, size_t i, char *buf, size_t len)
{
	int r = nginx_conf_node_word(n, i, buf, len);

	return r < 0 ? r : 0;
}

static int new_scope(struct analysis *a, const struct nginx_conf_node *n, enum scope_kind kind, int parent)
{
	struct scope *s;
	char w[256];

	GROW(a->scopes, a->nscopes);
	s = &a->scopes[a->nscopes];
	s->kind = kind;
	s->parent = parent;
	s->file = n->file;
	s->start = n->start;
	if (kind == SC_LOCATION) {
		size_t last = n->nwords - 1;

		if (n->nwords >= 3 && word(n, 1, w, sizeof(w)) == 0)
			s->regex = w[0] == '~';
		if (last >= 1 && word(n, last, s->name, sizeof(s->name)) < 0)
			s->name[0] = '\0';
		s->named = s->name[0] == '@';
		if (n->nwords == 2 && s->name[0] == '~')
			s->regex = true;
		for (size_t i = 0; i < a->nscopes; i++)
			if (a->scopes[i].kind == SC_LOCATION && a->scopes[i].file == n->file &&
			    a->scopes[i].start == n->start)
				s->twice = a->scopes[i].twice = true;
	}
	return (int)a->nscopes++;
}

static int visit(void *ctx, const struct nginx_conf_node *n)
{
	struct analysis *a = ctx;
	struct frame top = a->sp ? a->stack[a->sp - 1] : (struct frame){ .scope = -1, .upstream = -1 };
	char name[64], w1[URL_MAX], w2[256];
	int r;

	if (n->event == NGINX_CONF_INCLUDE)
		return 0;
	if (n->event == NGINX_CONF_BLOCK_END) {
		if (a->sp)
			a->sp--;
		return 0;
	}
	if (word(n, 0, name, sizeof(name)) < 0)
		name[0] = '\0';
	if (n->event == NGINX_CONF_BLOCK) {
		struct frame f = { .scope = -1, .upstream = -1, .other = true };
		int cur = top.other ? -1 : top.scope;
		enum scope_kind ck = cur >= 0 ? a->scopes[cur].kind : SC_HTTP;

		if (a->sp >= NGINX_CONF_DEPTH_MAX)
			return -EINVAL;
		if (a->sp == 0 && strcmp(name, "http") == 0) {
			r = new_scope(a, n, SC_HTTP, -1);
			f = (struct frame){ .scope = r, .upstream = -1, .own = true };
		} else if (cur >= 0 && top.own && ck == SC_HTTP && strcmp(name, "server") == 0) {
			r = new_scope(a, n, SC_SERVER, cur);
			f = (struct frame){ .scope = r, .upstream = -1, .own = true };
		} else if (cur >= 0 && top.own && ck != SC_HTTP && strcmp(name, "location") == 0) {
			r = new_scope(a, n, SC_LOCATION, cur);
			f = (struct frame){ .scope = r, .upstream = -1, .own = true };
		} else if (cur >= 0 && top.own && ck == SC_HTTP && strcmp(name, "upstream") == 0 && n->nwords == 2) {
			GROW(a->ups, a->nups);
			if (word(n, 1, a->ups[a->nups].name, sizeof(a->ups[a->nups].name)) < 0)
				a->ups[a->nups].name[0] = '\0';
			a->ups[a->nups].file = n->file;
			a->ups[a->nups].start = n->start;
			f = (struct frame){ .scope = -1, .upstream = (int)a->nups++, .other = false };
			r = 0;
		} else if (cur >= 0 && ck == SC_LOCATION && (strcmp(name, "if") == 0 || strcmp(name, "limit_except") == 0)) {
			/* proxy_pass may stand here; its location's lines serve it */
			f = (struct frame){ .scope = cur, .upstream = -1, .own = false };
			r = 0;
		} else {
			r = 0;
		}
		if (r < 0)
			return r;
		a->stack[a->sp++] = f;
		return 0;
	}
	/* a directive */
	if (top.other)
		return 0;
	if (top.upstream >= 0) {
		struct upstream *u = &a->ups[top.upstream];
		int64_t v;

		if (strcmp(name, "keepalive") == 0 && n->nwords == 2 && word(n, 1, w1, sizeof(w1)) == 0 &&
		    str_to_i64(w1, 0, INT32_MAX, &v) == 0) {
			u->keepalive = true;
			u->value = v;
			u->ka_file = n->file;
			u->ka_start = n->start;
		}
		return 0;
	}
	if (top.scope < 0)
		return 0;
	{
		struct scope *s = &a->scopes[top.scope];

		if (strcmp(name, "proxy_pass") == 0 && n->nwords == 2 && s->kind == SC_LOCATION) {
			GROW(a->proxies, a->nproxies);
			a->proxies[a->nproxies].file = n->file;
			a->proxies[a->nproxies].start = n->start;
			a->proxies[a->nproxies].line = n->line;
			a->proxies[a->nproxies].scope = top.scope;
			if (word(n, 1, a->proxies[a->nproxies].url, URL_MAX) < 0)
				a->proxies[a->nproxies].url[0] = '\0';
			a->nproxies++;
		} else if (!top.own) {
			return 0;
		} else if (strcmp(name, "proxy_set_header") == 0 && n->nwords == 3) {
			struct header *h;

			GROW(a->hdrs, a->nhdrs);
			GROW(a->hdr_scope, a->nhdrs);
			h = &a->hdrs[a->nhdrs];
			h->file = n->file;
			h->start = n->start;
			h->end = n->end;
			if (word(n, 1, h->field, sizeof(h->field)) < 0 || word(n, 2, h->value, sizeof(h->value)) < 0)
				snprintf(h->field, sizeof(h->field), "?");
			for (char *p = h->field; *p; p++)
				*p = (char)tolower((unsigned char)*p);
			a->hdr_scope[a->nhdrs++] = top.scope;
			s->nhdr++;
		} else if (strcmp(name, "proxy_http_version") == 0 && n->nwords == 2 && word(n, 1, w1, 16) == 0) {
			s->version = strcmp(w1, "1.1") == 0 ? 11 : 10;
			s->version_file = n->file;
			s->version_start = n->start;
		} else if (strcmp(name, "proxy_redirect") == 0) {
			s->redirect = s->redirect ? s->redirect : 1;
			if (n->nwords == 2 && word(n, 1, w2, sizeof(w2)) == 0 && strcmp(w2, "default") == 0)
				s->redirect = 2;
		} else if (strcmp(name, "proxy_ssl_name") == 0) {
			s->ssl_name = true;
		}
	}
	return 0;
}

static int analyse(const struct nginx_conf *c, struct analysis *a, char *why, size_t whylen)
{
	char err[KNOB_WHY_MAX];
	int r;

	memset(a, 0, sizeof(*a));
	a->c = c;
	r = nginx_conf_walk(c, visit, a, err, sizeof(err));
	if (r < 0) {
		str_err(why, whylen, "%s", err[0] ? err : strerror(-r));
		analysis_free(a);
	}
	return r < 0 ? r : 0;
}

/* The nearest scope from S up (S included) whose WANT holds, or -1. */
static int up_to(const struct analysis *a, int s, bool (*want)(const struct scope *))
{
	for (; s >= 0; s = a->scopes[s].parent)
		if (want(&a->scopes[s]))
			return s;
	return -1;
}

static bool has_headers(const struct scope *s)
{
	return s->nhdr > 0;
}

static bool has_version(const struct scope *s)
{
	return s->version != 0;
}

static bool has_redirect(const struct scope *s)
{
	return s->redirect != 0;
}

static bool has_ssl_name(const struct scope *s)
{
	return s->ssl_name;
}

/* The header FIELD among scope S's own lines, or NULL. */
static const struct header *header_of(const struct analysis *a, int s, const char *field)
{
	for (size_t i = 0; s >= 0 && i < a->nhdrs; i++)
		if (a->hdr_scope[i] == s && strcmp(a->hdrs[i].field, field) == 0)
			return &a->hdrs[i];
	return NULL;
}

/* ---- a proxy_pass's target ------------------------------------------------------------------------------ */

enum target_kind { TGT_UPSTREAM, TGT_ADDRESS, TGT_SKIP };

struct target {
	enum target_kind kind;
	const char *skip;     /* why it is left alone */
	bool https;
	int upstream;         /* TGT_UPSTREAM: index */
	char host[256];       /* TGT_ADDRESS: as written, [v6] with its brackets */
	char port[8];         /* as written, or the scheme's */
	bool port_given;
	char uri[URL_MAX];    /* from the first '/' after the host: "" when none */
	char made[160];       /* TGT_ADDRESS: the upstream made for it */
	char hostport[300];   /* "host:port" for its server line */
	char host_header[300]; /* what $proxy_host was: host, with ":port" unless it is the scheme's */
};

static int find_upstream(const struct analysis *a, const char *name)
{
	for (size_t i = 0; i < a->nups; i++)
		if (strcasecmp(a->ups[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void classify(const struct analysis *a, const char *url, struct target *t)
{
	const char *p = url, *h, *end;
	size_t n;

	memset(t, 0, sizeof(*t));
	t->kind = TGT_SKIP;
	t->upstream = -1;
	if (strchr(url, '$')) {
		t->skip = "variables";
		return;
	}
	if (strncasecmp(p, "http://", 7) == 0) {
		p += 7;
	} else if (strncasecmp(p, "https://", 8) == 0) {
		p += 8;
		t->https = true;
	} else {
		t->skip = "not http:// or https://";
		return;
	}
	if (strncasecmp(p, "unix:", 5) == 0) {
		t->skip = "unix: socket";
		return;
	}
	h = p;
	if (*p == '[') {
		const char *close = strchr(p, ']');

		if (!close) {
			t->skip = "an address this driver does not read";
			return;
		}
		end = close + 1;
	} else {
		end = p + strcspn(p, ":/?");
	}
	n = (size_t)(end - h);
	if (n == 0 || n >= sizeof(t->host)) {
		t->skip = "an address this driver does not read";
		return;
	}
	memcpy(t->host, h, n);
	t->host[n] = '\0';
	p = end;
	if (*p == ':') {
		size_t k = strspn(p + 1, "0123456789");

		if (k == 0 || k > 5) {
			t->skip = "an address this driver does not read";
			return;
		}
		memcpy(t->port, p + 1, k);
		t->port[k] = '\0';
		t->port_given = true;
		p += 1 + k;
	} else {
		snprintf(t->port, sizeof(t->port), "%s", t->https ? "443" : "80");
	}
	if (*p && *p != '/') {
		t->skip = "an address this driver does not read";
		return;
	}
	snprintf(t->uri, sizeof(t->uri), "%s", p);
	if (!t->port_given && (t->upstream = find_upstream(a, t->host)) >= 0) {
		t->kind = TGT_UPSTREAM;
		return;
	}
	t->kind = TGT_ADDRESS;
	n = (size_t)snprintf(t->made, sizeof(t->made), "%s", MADE_PREFIX);
	for (const char *c = t->host; *c && n + 1 < sizeof(t->made); c++)
		t->made[n++] = isalnum((unsigned char)*c) ? (char)tolower((unsigned char)*c) : '_';
	snprintf(t->made + n, sizeof(t->made) - n, "_%s", t->port);
	snprintf(t->hostport, sizeof(t->hostport), "%s:%s", t->host, t->port);
	if (strcmp(t->port, t->https ? "443" : "80") == 0)
		snprintf(t->host_header, sizeof(t->host_header), "%s", t->host);
	else
		snprintf(t->host_header, sizeof(t->host_header), "%s:%s", t->host, t->port);
}

/* ---- the live value --------------------------------------------------------------------------------------- */

/* Whether proxy P's location has HTTP/1.1 and an empty Connection header in force; *SKIP when it sets Connection to
 * something else (then it is not the knob's). */
static bool location_ready(const struct analysis *a, const struct proxy *p, const char **skip)
{
	int hs = up_to(a, p->scope, has_headers), vs = up_to(a, p->scope, has_version);
	const struct header *conn = header_of(a, hs, "connection");

	*skip = NULL;
	if (conn && conn->value[0]) {
		*skip = "sets the Connection header itself";
		return false;
	}
	return conn && vs >= 0 && a->scopes[vs].version == 11;
}

struct reading {
	int64_t value;      /* the smallest keepalive in force, -1 when no proxy_pass is the knob's */
	size_t managed, skipped, upstreams, addresses;
	char first_skip[160];
};

static void read_analysis(const struct analysis *a, struct reading *out)
{
	memset(out, 0, sizeof(*out));
	out->value = -1;
	for (size_t i = 0; i < a->nproxies; i++) {
		const struct proxy *p = &a->proxies[i];
		struct target t;
		const char *skip;
		bool ready;
		int64_t v = 0;

		classify(a, p->url, &t);
		ready = location_ready(a, p, &skip);
		if (t.kind == TGT_SKIP || skip) {
			if (out->skipped++ == 0)
				snprintf(out->first_skip, sizeof(out->first_skip), "%s:%u (%s)",
					 a->c->files[p->file].path, p->line, t.skip ? t.skip : skip);
			continue;
		}
		out->managed++;
		if (t.kind == TGT_UPSTREAM) {
			out->upstreams++;
			if (ready && a->ups[t.upstream].keepalive)
				v = a->ups[t.upstream].value;
		} else {
			out->addresses++;
		}
		if (out->value < 0 || v < out->value)
			out->value = v;
	}
}

/* ---- planning a write ----------------------------------------------------------------------------------- */

/* The edits of one file. */
struct file_plan {
	size_t file;
	struct nginx_conf_edit *e;
	char **owned; /* texts the edits point to */
	size_t n, nowned;
};

struct plan {
	const struct analysis *a;
	struct file_plan *files;
	size_t nfiles;
	char *append;        /* blocks for our http.conf */
	size_t appendlen;
	char **made;         /* names of the blocks made or to be made */
	size_t nmade;
	bool *scope_done;
	bool *ups_done;
	size_t locations, skipped;
	char first_skip[200];
};

static void plan_free(struct plan *pl)
{
	for (size_t i = 0; i < pl->nfiles; i++) {
		for (size_t j = 0; j < pl->files[i].nowned; j++)
			free(pl->files[i].owned[j]);
		free(pl->files[i].owned);
		free(pl->files[i].e);
	}
	free(pl->files);
	for (size_t i = 0; i < pl->nmade; i++)
		free(pl->made[i]);
	free(pl->made);
	free(pl->append);
	free(pl->scope_done);
	free(pl->ups_done);
	memset(pl, 0, sizeof(*pl));
}

static int add_edit(struct plan *pl, size_t file, enum nginx_conf_edit_op op, size_t start, const char *name,
		    char *text, const char *note)
{
	struct file_plan *f = NULL;

	for (size_t i = 0; i < pl->nfiles; i++)
		if (pl->files[i].file == file)
			f = &pl->files[i];
	if (!f) {
		void *g = realloc(pl->files, (pl->nfiles + 1) * sizeof(*pl->files));

		if (!g) {
			free(text);
			return -ENOMEM;
		}
		pl->files = g;
		f = &pl->files[pl->nfiles++];
		memset(f, 0, sizeof(*f));
		f->file = file;
	}
	{
		void *g = realloc(f->e, (f->n + 1) * sizeof(*f->e)), *o;

		if (g)
			f->e = g;
		o = g ? realloc(f->owned, (f->nowned + 1) * sizeof(*f->owned)) : NULL;
		if (o)
			f->owned = o;
		if (!g || !o) {
			free(text);
			return -ENOMEM;
		}
	}
	f->owned[f->nowned++] = text;
	f->e[f->n++] = (struct nginx_conf_edit){ .op = op, .start = start, .name = name, .text = text, .note = note };
	return 0;
}

/* Whether the line of TEXT holding offset AT was added by this knob (ends in "# NOTE"). */
static bool line_added(const char *text, size_t len, size_t at)
{
	const char *nl = memchr(text + at, '\n', len - at);
	size_t le = nl ? (size_t)(nl - text) : len;
	static const char mark[] = " # " NOTE, joined[] = " # " NOTE " (new line)";

	return (le - at >= sizeof(mark) - 1 && memcmp(text + le - (sizeof(mark) - 1), mark, sizeof(mark) - 1) == 0) ||
	       (le - at >= sizeof(joined) - 1 &&
		memcmp(text + le - (sizeof(joined) - 1), joined, sizeof(joined) - 1) == 0);
}

/* Append "LINE\n" to the growing string *S. */
static int cat_line(char **s, size_t *len, const char *line)
{
	size_t l = strlen(line);
	char *g = realloc(*s, *len + l + 2);

	if (!g)
		return -ENOMEM;
	*s = g;
	memcpy(*s + *len, line, l);
	*len += l;
	(*s)[(*len)++] = '\n';
	(*s)[*len] = '\0';
	return 0;
}

/* A word safe to write unquoted in a directive (addresses, host names, URIs without blanks or specials). */
static bool plain_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (isspace((unsigned char)*s) || strchr(";{}#\"'\\$", *s))
			return false;
	return true;
}

static void skip_proxy(struct plan *pl, const struct proxy *p, const char *why)
{
	if (pl->skipped++ == 0)
		snprintf(pl->first_skip, sizeof(pl->first_skip), "%s:%u (%s)", pl->a->c->files[p->file].path, p->line,
			 why);
}

/*
 * The edits that give proxy P keepalive N (into PL). OURS_OK: nginx includes our http.conf in http (an address needs
 * an upstream block there). 0, or -ENOMEM.
 */
static int plan_proxy(struct plan *pl, const struct proxy *p, int64_t n, bool ours_ok, const char *ours_why)
{
	const struct analysis *a = pl->a;
	const struct nginx_conf *c = a->c;
	const struct scope *loc = &a->scopes[p->scope];
	struct target t;
	char *adds = NULL, line[2 * URL_MAX + 512];
	size_t addlen = 0;
	int hs, vs, rs, r = 0;
	bool repoint, need_conn, need_host;
	const char *skip;

	classify(a, p->url, &t);
	if (t.kind == TGT_SKIP) {
		skip_proxy(pl, p, t.skip);
		return 0;
	}
	location_ready(a, p, &skip);
	if (skip) {
		skip_proxy(pl, p, skip);
		return 0;
	}
	repoint = t.kind == TGT_ADDRESS;
	hs = up_to(a, p->scope, has_headers);
	vs = up_to(a, p->scope, has_version);
	rs = up_to(a, p->scope, has_redirect);
	need_conn = !header_of(a, hs, "connection");
	need_host = repoint && !header_of(a, hs, "host");
	if (repoint && !ours_ok) {
		skip_proxy(pl, p, ours_why);
		return 0;
	}
	if (repoint && (!plain_word(t.hostport) || !plain_word(t.uri[0] ? t.uri : "/"))) {
		skip_proxy(pl, p, "an address or URI with characters the driver does not write");
		return 0;
	}
	if (repoint && rs >= 0 && a->scopes[rs].redirect == 2) {
		skip_proxy(pl, p, "proxy_redirect default would change with the host");
		return 0;
	}
	if (repoint && rs < 0 && t.uri[0] && (loc->regex || loc->named || !plain_word(loc->name))) {
		skip_proxy(pl, p, "a URI in a regex or named location");
		return 0;
	}
	if (repoint && rs < 0 && !plain_word(p->url)) {
		skip_proxy(pl, p, "a proxy_pass the driver would not write back as it is");
		return 0;
	}
	/* The location's lines, once per location. */
	if (!pl->scope_done[p->scope]) {
		bool version_edit = vs == p->scope && a->scopes[vs].version == 10;

		if ((need_conn || need_host) && hs >= 0 && hs != p->scope) {
			/* It inherits proxy_set_header lines: they come along, or the new ones would drop them. */
			for (size_t i = 0; i < a->nhdrs && r == 0; i++) {
				const struct header *h = &a->hdrs[i];
				const char *src = c->files[h->file].text + h->start;
				size_t l = h->end + 1 - h->start;

				if (a->hdr_scope[i] != hs)
					continue;
				if (memchr(src, '\n', l) || memchr(src, '#', l) || l >= sizeof(line)) {
					free(adds);
					skip_proxy(pl, p, "an inherited proxy_set_header that spans lines or holds '#'");
					return 0;
				}
				snprintf(line, sizeof(line), "%.*s", (int)l, src);
				r = cat_line(&adds, &addlen, line);
			}
		}
		if (r == 0 && need_conn)
			r = cat_line(&adds, &addlen, "proxy_set_header Connection \"\";");
		if (r == 0 && need_host) {
			snprintf(line, sizeof(line), "proxy_set_header Host %s;", t.host_header);
			r = cat_line(&adds, &addlen, line);
		}
		if (r == 0 && (vs < 0 || (a->scopes[vs].version == 10 && vs != p->scope)))
			r = cat_line(&adds, &addlen, "proxy_http_version 1.1;");
		if (r == 0 && repoint && rs < 0) {
			/* the rule nginx's proxy_redirect default made from the address */
			if (t.uri[0])
				snprintf(line, sizeof(line), "proxy_redirect %s %s;", p->url, loc->name);
			else
				snprintf(line, sizeof(line), "proxy_redirect %s/ /;", p->url);
			r = cat_line(&adds, &addlen, line);
		}
		if (r == 0 && repoint && t.https && up_to(a, p->scope, has_ssl_name) < 0) {
			char host[256];

			snprintf(host, sizeof(host), "%.254s", t.host[0] == '[' ? t.host + 1 : t.host);
			host[strcspn(host, "]")] = '\0';
			snprintf(line, sizeof(line), "proxy_ssl_name %s;", host);
			r = cat_line(&adds, &addlen, line);
		}
		if (r < 0) {
			free(adds);
			return r;
		}
		if ((adds || version_edit) && loc->twice) {
			free(adds);
			skip_proxy(pl, p, "a location its file brings in twice");
			return 0;
		}
		if (version_edit) {
			char *v = strdup("1.1");
			const struct nginx_conf_file *vf = &c->files[a->scopes[vs].version_file];

			r = v ? add_edit(pl, a->scopes[vs].version_file, NGINX_CONF_EDIT_ARGS, a->scopes[vs].version_start,
					 "proxy_http_version", v,
					 line_added(vf->text, vf->len, a->scopes[vs].version_start) ? NULL : NOTE)
			      : -ENOMEM;
		}
		if (r == 0 && adds)
			r = add_edit(pl, loc->file, NGINX_CONF_EDIT_ADD, loc->start, "location", adds, NOTE);
		else
			free(adds);
		adds = NULL;
		if (r < 0)
			return r;
		pl->scope_done[p->scope] = true;
		pl->locations++;
	}
	/* proxy_pass to the upstream made for the address */
	if (repoint) {
		char *url = malloc(strlen(t.made) + strlen(t.uri) + 16);

		if (!url)
			return -ENOMEM;
		sprintf(url, "%s://%s%s", t.https ? "https" : "http", t.made, t.uri);
		r = add_edit(pl, p->file, NGINX_CONF_EDIT_ARGS, p->start, "proxy_pass", url,
			     line_added(c->files[p->file].text, c->files[p->file].len, p->start) ? NULL : NOTE);
		if (r < 0)
			return r;
		for (size_t i = 0; i < pl->nmade; i++)
			if (strcmp(pl->made[i], t.made) == 0)
				return 0;
		{
			int u = find_upstream(a, t.made);
			char **g = realloc(pl->made, (pl->nmade + 1) * sizeof(*g));

			if (!g)
				return -ENOMEM;
			pl->made = g;
			if (!(pl->made[pl->nmade] = strdup(t.made)))
				return -ENOMEM;
			pl->nmade++;
			if (u >= 0) {
				t.kind = TGT_UPSTREAM; /* made by an earlier write: its keepalive below */
				t.upstream = u;
			} else {
				char block[URL_MAX];

				snprintf(block, sizeof(block), "upstream %s {\n\tserver %s;\n\tkeepalive %lld;\n}", t.made,
					 t.hostport, (long long)n);
				return cat_line(&pl->append, &pl->appendlen, block);
			}
		}
	}
	/* keepalive N in the upstream */
	if (t.kind == TGT_UPSTREAM && !pl->ups_done[t.upstream]) {
		const struct upstream *u = &a->ups[t.upstream];
		char *v = malloc(32);

		pl->ups_done[t.upstream] = true;
		if (!v)
			return -ENOMEM;
		if (!u->keepalive) {
			snprintf(v, 32, "keepalive %lld;", (long long)n);
			r = add_edit(pl, u->file, NGINX_CONF_EDIT_ADD, u->start, "upstream", v, NOTE);
		} else if (u->value != n) {
			snprintf(v, 32, "%lld", (long long)n);
			r = add_edit(pl, u->ka_file, NGINX_CONF_EDIT_ARGS, u->ka_start, "keepalive", v,
				     line_added(c->files[u->ka_file].text, c->files[u->ka_file].len, u->ka_start) ||
					     strncmp(u->name, MADE_PREFIX, strlen(MADE_PREFIX)) == 0 ? NULL : NOTE);
		} else {
			free(v);
		}
	}
	return r;
}

/* ---- the knob ----------------------------------------------------------------------------------------------- */

struct up_priv {
	struct nginx_change *change;
};

struct up_change {
	int64_t value;
	char **made, **done; /* backups made by this write (gone if it fails), and those it ends */
	size_t nmade, ndone;
};

static struct up_priv *priv_of(struct knob *k)
{
	return nginx_ctl_knob_priv(k, sizeof(struct up_priv));
}

static int remember(char ***v, size_t *n, const char *path)
{
	char **g = realloc(*v, (*n + 1) * sizeof(**v));

	if (!g)
		return -ENOMEM;
	*v = g;
	if (!(g[*n] = strdup(path)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Our http include file and whether nginx includes it in http (else WHY). */
static bool ours_included(const struct knob_env *env, const struct nginx_conf *c, char *ours, size_t n, char *why,
			  size_t whylen)
{
	char ctx[NGINX_CONF_CONTEXT_MAX], err[KNOB_WHY_MAX];

	if (nginx_ctl_own_path(env, "http.conf", ours, n) < 0) {
		str_err(why, whylen, "include directory path too long");
		return false;
	}
	if (nginx_conf_included(c, ours, ctx, sizeof(ctx), err, sizeof(err)) < 0 || strcmp(ctx, "http") != 0) {
		str_err(why, whylen, "nginx does not include %s in http, where the upstream block for an address goes",
			ours);
		return false;
	}
	return true;
}

static int up_read(struct knob *k, char *out, size_t outlen)
{
	struct nginx_conf now;
	struct analysis a;
	struct reading rd;
	char why[KNOB_WHY_MAX];
	int r;

	if (!priv_of(k))
		return -ENOMEM;
	r = nginx_ctl_conf_now(k->env->nginx, k->env, &now, why, sizeof(why));
	if (r < 0)
		return r;
	r = analyse(&now, &a, why, sizeof(why));
	if (r == 0) {
		read_analysis(&a, &rd);
		analysis_free(&a);
		if (rd.value < 0)
			r = -ENOENT;
		else
			r = (size_t)snprintf(out, outlen, "%lld", (long long)rd.value) >= outlen ? -ERANGE : 0;
	}
	nginx_conf_free(&now);
	return r;
}

static int up_probe(struct knob *k, char *why, size_t whylen)
{
	const struct nginx_conf *c;
	struct analysis a;
	struct reading rd;
	char ours[PATH_MAX], live[32], dir[PATH_MAX], err[KNOB_WHY_MAX] = "";
	bool inc;
	int r;

	if (!priv_of(k))
		return -ENOMEM;
	if (k->pol->type != KNOB_T_INT || strcmp(k->pol->target, "*") != 0) {
		str_err(why, whylen, "upstream keepalive is an int knob with target *");
		return -ENOTSUP;
	}
	if (k->env->nginx_pid <= 0) {
		str_err(why, whylen, "nginx is not running");
		return -ENOENT;
	}
	c = nginx_ctl_conf(k->env->nginx, k->env, &r, why, whylen);
	if (!c)
		return r == -ENOENT ? -ENOENT : -ENOTSUP;
	r = analyse(c, &a, why, whylen);
	if (r < 0)
		return -ENOTSUP;
	read_analysis(&a, &rd);
	analysis_free(&a);
	if (rd.value < 0) {
		str_err(why, whylen, "no proxy_pass the knob can give keepalive%s%s", rd.skipped ? "; left alone: " : "",
			rd.first_skip);
		return -ENOENT;
	}
	r = nginx_ctl_own_path(k->env, "", dir, sizeof(dir));
	if (r == 0 && access(dir, W_OK) < 0)
		r = -errno;
	if (r < 0) {
		str_err(why, whylen, "%s: %s (upstream keepalive keeps its backups there)", dir, strerror(-r));
		return -ENOENT;
	}
	r = up_read(k, live, sizeof(live));
	if (r < 0) {
		str_err(why, whylen, "cannot read the keepalive in force: %s", strerror(-r));
		return -ENOTSUP;
	}
	inc = ours_included(k->env, c, ours, sizeof(ours), err, sizeof(err));
	str_err(why, whylen, "%zu proxy_pass%s: %zu to upstream blocks, %zu to addresses%s%s%s%s", rd.managed,
		rd.managed == 1 ? "" : "es", rd.upstreams, rd.addresses,
		rd.addresses && !inc ? " (left alone: no http.conf)" : rd.addresses ? " (an upstream each)" : "",
		rd.skipped ? "; left alone: " : "", rd.first_skip, rd.skipped > 1 ? " and others" : "");
	return 0;
}

/* Files with the knob's edits taken back: what the operator had. Each into PL (file index order) as a new text,
 * only those that change. OPERATOR gets the value of that configuration. */
struct restore {
	char **text;
	size_t *len;
	bool *changed;
	size_t n;
};

static void restore_free(struct restore *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->text[i]);
	free(rs->text);
	free(rs->len);
	free(rs->changed);
	memset(rs, 0, sizeof(*rs));
}

/* Every file of C with the noted edits taken back; the value that configuration reads into *HAD (-1: none). */
static int unedited(const struct nginx_conf *c, struct restore *rs, int64_t *had, char *why, size_t whylen)
{
	size_t cap = 1, len = 0;
	char *dump = NULL, err[KNOB_WHY_MAX];
	struct nginx_conf back;
	struct analysis a;
	struct reading rd;
	int r = 0;

	memset(rs, 0, sizeof(*rs));
	rs->n = c->nfiles;
	rs->text = calloc(c->nfiles, sizeof(*rs->text));
	rs->len = calloc(c->nfiles, sizeof(*rs->len));
	rs->changed = calloc(c->nfiles, sizeof(*rs->changed));
	if (!rs->text || !rs->len || !rs->changed)
		return -ENOMEM;
	for (size_t i = 0; i < c->nfiles && r == 0; i++) {
		size_t count = 0;

		r = nginx_conf_unedit(c->files[i].text, c->files[i].len, NOTE, &rs->text[i], &rs->len[i], &count, err,
				      sizeof(err));
		if (r < 0)
			str_err(why, whylen, "%s: %s", c->files[i].path, err);
		rs->changed[i] = r == 0 && count > 0;
		cap += strlen(c->files[i].path) + 32 + rs->len[i];
	}
	if (r == 0 && !(dump = malloc(cap)))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < c->nfiles; i++) {
		len += (size_t)snprintf(dump + len, cap - len, "# configuration file %s:\n", c->files[i].path);
		memcpy(dump + len, rs->text[i], rs->len[i]);
		len += rs->len[i];
		dump[len++] = '\n';
	}
	if (r == 0) {
		r = nginx_conf_parse(dump, len, &back, err, sizeof(err));
		if (r < 0)
			str_err(why, whylen, "the configuration without the knob's edits: %s", err);
	}
	free(dump);
	if (r == 0) {
		r = analyse(&back, &a, why, whylen);
		if (r == 0) {
			read_analysis(&a, &rd);
			*had = rd.value;
			analysis_free(&a);
		}
		nginx_conf_free(&back);
	}
	return r;
}

/* The first edit of PATH keeps CUR in BACKUP_DIR (before the file changes). */
static int backup_first(struct nginx_change *ch, const char *path, const char *cur, size_t curlen)
{
	struct up_change *uc = ch->priv;
	char bpath[PATH_MAX], dir[PATH_MAX];
	struct stat st;
	int r = nginx_ctl_backup_path(ch->env, BACKUP_DIR, path, bpath, sizeof(bpath));

	if (r == 0 && stat(bpath, &st) == 0)
		return 0;
	if (r == 0)
		r = nginx_ctl_own_path(ch->env, BACKUP_DIR, dir, sizeof(dir));
	if (r == 0 && mkdir(dir, 0700) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0)
		r = nginx_ctl_write_file(bpath, cur, curlen, 0600);
	if (r == 0)
		r = remember(&uc->made, &uc->nmade, bpath);
	if (r < 0)
		str_err(ch->msg, sizeof(ch->msg), "cannot back up %s: %s", path, strerror(-r));
	return r;
}

/* File I of C as it is on disk, which must be as the dump shows it. */
static int current(struct nginx_change *ch, const struct nginx_conf *c, size_t i, char **cur, size_t *curlen)
{
	int r = nginx_ctl_read_file(c->files[i].path, NGINX_CTL_FILE_MAX, cur, curlen);

	if (r < 0) {
		str_err(ch->msg, sizeof(ch->msg), "cannot read %s: %s", c->files[i].path, strerror(-r));
		return r;
	}
	if (*curlen != c->files[i].len || memcmp(*cur, c->files[i].text, *curlen) != 0) {
		free(*cur);
		*cur = NULL;
		str_err(ch->msg, sizeof(ch->msg), "%s changed while it was being read; try again", c->files[i].path);
		return -EAGAIN;
	}
	return 0;
}

/* The way back: every file with the knob's edits taken back; their backups go once nginx runs them. */
static int plan_restore(struct nginx_change *ch, const struct nginx_conf *c, struct restore *rs)
{
	struct up_change *uc = ch->priv;
	char bpath[PATH_MAX];
	int r = 0;

	for (size_t i = 0; i < c->nfiles && r == 0; i++) {
		char *cur = NULL;
		size_t curlen = 0;

		if (nginx_ctl_backup_path(ch->env, BACKUP_DIR, c->files[i].path, bpath, sizeof(bpath)) == 0 &&
		    access(bpath, F_OK) == 0)
			r = remember(&uc->done, &uc->ndone, bpath);
		if (r < 0 || !rs->changed[i])
			continue;
		r = current(ch, c, i, &cur, &curlen);
		if (r == 0) {
			r = nginx_change_add_file(ch, c->files[i].path, cur, curlen, rs->text[i], rs->len[i]);
			rs->text[i] = NULL;
		}
	}
	return r;
}

/* Keepalive N for every proxy_pass the knob manages, as the edits of PL. */
static int plan_write(struct nginx_change *ch, const struct nginx_conf *c, const struct analysis *a, int64_t n)
{
	struct plan pl = { .a = a };
	char ours[PATH_MAX], ours_why[KNOB_WHY_MAX] = "", err[KNOB_WHY_MAX];
	bool inc = ours_included(ch->env, c, ours, sizeof(ours), ours_why, sizeof(ours_why));
	int oi = nginx_conf_file_index(c, ours), r = 0;

	pl.scope_done = calloc(a->nscopes + 1, sizeof(*pl.scope_done));
	pl.ups_done = calloc(a->nups + 1, sizeof(*pl.ups_done));
	if (!pl.scope_done || !pl.ups_done) {
		plan_free(&pl);
		return -ENOMEM;
	}
	for (size_t i = 0; i < a->nproxies && r == 0; i++)
		r = plan_proxy(&pl, &a->proxies[i], n, inc && oi >= 0, ours_why[0] ? ours_why : "no http.conf");
	if (r == 0 && pl.append)
		r = add_edit(&pl, (size_t)oi, NGINX_CONF_EDIT_APPEND, 0, NULL, pl.append, NOTE);
	pl.append = NULL;
	for (size_t i = 0; i < pl.nfiles && r == 0; i++) {
		struct file_plan *f = &pl.files[i];
		const char *path = c->files[f->file].path;
		char *cur = NULL, *new = NULL;
		size_t curlen = 0, newlen = 0;

		r = current(ch, c, f->file, &cur, &curlen);
		if (r < 0)
			break;
		r = nginx_conf_edit(cur, curlen, f->e, f->n, &new, &newlen, err, sizeof(err));
		if (r < 0)
			str_err(ch->msg, sizeof(ch->msg), "%s: %s", path, err);
		if (r == 0)
			r = backup_first(ch, path, cur, curlen);
		if (r == 0) {
			r = nginx_change_add_file(ch, path, cur, curlen, new, newlen);
			cur = new = NULL;
		}
		free(cur);
		free(new);
	}
	if (r == 0)
		str_err(ch->note, sizeof(ch->note), "keepalive %lld for %zu location%s%s%s%s", (long long)n, pl.locations,
			pl.locations == 1 ? "" : "s", pl.skipped ? "; left alone: " : "", pl.first_skip,
			pl.skipped > 1 ? " and others" : "");
	plan_free(&pl);
	return r;
}

static void up_dumped(struct nginx_change *ch, const struct nginx_conf *c)
{
	struct up_change *uc = ch->priv;
	struct restore rs;
	struct analysis a;
	char why[KNOB_WHY_MAX] = "";
	int64_t had = -1;
	int r = unedited(c, &rs, &had, why, sizeof(why));

	if (r < 0) {
		restore_free(&rs);
		nginx_change_finish(ch, r, why);
		return;
	}
	if (uc->value == 0 || uc->value == had) {
		/* As the operator had it: the knob's edits taken back. */
		r = plan_restore(ch, c, &rs);
		restore_free(&rs);
		if (r == 0 && ch->nfiles)
			str_err(ch->note, sizeof(ch->note), "the knob's edits taken back from %zu file%s", ch->nfiles,
				ch->nfiles == 1 ? "" : "s");
		if (r == 0 && ch->nfiles == 0) {
			nginx_change_finish(ch, 0, NULL); /* nothing of the knob's in the files: nothing to reload */
			return;
		}
	} else {
		restore_free(&rs);
		r = analyse(c, &a, ch->msg, sizeof(ch->msg));
		if (r == 0) {
			r = plan_write(ch, c, &a, uc->value);
			analysis_free(&a);
		}
		if (r == 0 && ch->nfiles == 0) {
			/* Nothing to edit: already so, or nothing the knob manages (the read says which). */
			nginx_change_finish(ch, 0, NULL);
			return;
		}
	}
	if (r < 0) {
		nginx_change_fail(ch, r, "%s", ch->msg);
		return;
	}
	r = nginx_change_write(ch);
	if (r < 0) {
		nginx_change_fail(ch, r, "%s", ch->msg);
		return;
	}
	nginx_change_test(ch);
}

static void drop(struct nginx_change *ch, char **paths, size_t n)
{
	char dir[PATH_MAX];

	for (size_t i = 0; i < n; i++)
		unlink(paths[i]);
	if (n && nginx_ctl_own_path(ch->env, BACKUP_DIR, dir, sizeof(dir)) == 0)
		rmdir(dir); /* fails while others remain, as it should */
}

/* nginx runs the files without the knob's edits: their backups have done their work. */
static void up_committed(struct nginx_change *ch)
{
	struct up_change *uc = ch->priv;

	drop(ch, uc->done, uc->ndone);
}

/* The files are back as they were: the backups made for this write go too. */
static void up_undo(struct nginx_change *ch)
{
	struct up_change *uc = ch->priv;

	drop(ch, uc->made, uc->nmade);
}

static void up_change_free(void *priv)
{
	struct up_change *uc = priv;

	for (size_t i = 0; i < uc->nmade; i++)
		free(uc->made[i]);
	for (size_t i = 0; i < uc->ndone; i++)
		free(uc->done[i]);
	free(uc->made);
	free(uc->done);
	free(uc);
}

static const struct nginx_change_ops up_change_ops = {
	.dumped = up_dumped,
	.committed = up_committed,
	.undo = up_undo,
	.free = up_change_free,
};

static int up_write(struct knob *k, const char *value, char *why, size_t whylen, knob_done_fn done, void *ctx)
{
	struct up_priv *p;
	struct up_change *uc;
	int64_t v;

	if (k->pol->type != KNOB_T_INT || str_to_i64(value, 0, 65535, &v) < 0) {
		str_err(why, whylen, "upstream keepalive '%.64s' is not an integer from 0 to 65535", value);
		return -EINVAL;
	}
	uc = calloc(1, sizeof(*uc));
	if (!uc)
		return -ENOMEM;
	uc->value = v;
	p = priv_of(k);
	if (!p) {
		free(uc);
		return -ENOMEM;
	}
	return nginx_change_start(k, &up_change_ops, uc, &p->change, why, whylen, done, ctx);
}

static void up_release(struct knob *k)
{
	struct up_priv *p = k->priv;

	if (!p)
		return;
	if (p->change)
		nginx_change_orphan(p->change);
	nginx_ctl_drop(k->env->nginx);
	free(p);
	k->priv = NULL;
}

const struct knob_ops knob_upstream_ops = {
	.kind = "upstream_keepalive",
	.probe = up_probe,
	.read = up_read,
	.write = up_write,
	.release = up_release,
};
