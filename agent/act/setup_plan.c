/*
 * setup_plan: the text edits of `ngx-autotune --setup`. See setup_plan.h.
 */
#include "build-config.h"

#include "act/setup_plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parse.h"
#include "strutil.h"

#define INSERTS_MAX 256
#define BLOCKS_MAX 4096

/* A text to insert at OFFSET of file FILE. */
struct insert {
	size_t file;
	size_t offset;
	size_t seq;   /* the order it was added in: inserts at one offset keep it */
	char text[1024];
};

/* An operator's access_log below http {}: the block it stands in, and where it ends. */
struct log_site {
	size_t block;
	size_t file;
	unsigned line;
	bool off;     /* access_log off: nothing is logged at that level */
	bool ours;    /* our log is already there */
};

struct scan {
	const struct nginx_conf *c;
	const struct setup_params *p;
	char setup_path[4096];
	bool have_events, have_http;
	size_t events_file, http_file;
	unsigned events_line, http_line;
	bool format_defined;       /* log_format ngxat_json outside our file */
	bool format_at_http;       /* an http-level access_log of the operator's already writes ngxat_json */
	bool stub_elsewhere;       /* a stub_status outside our file */
	char stub_where[512];
	size_t stack[NGINX_CONF_DEPTH_MAX + 1], depth, blocks;
	struct log_site sites[BLOCKS_MAX];
	size_t nsites;
};

static int word(const struct nginx_conf_node *n, size_t i, char *buf, size_t len)
{
	int r = nginx_conf_node_word(n, i, buf, len);

	return r < 0 ? r : 0;
}

static bool in_setup_file(const struct scan *s, size_t file)
{
	return strcmp(s->c->files[file].path, s->setup_path) == 0;
}

static int visit(void *ctx, const struct nginx_conf_node *n)
{
	struct scan *s = ctx;
	char name[64], arg[NGINX_CONF_WORD_MAX], arg2[NGINX_CONF_WORD_MAX];

	if (n->event == NGINX_CONF_BLOCK_END) {
		if (s->depth)
			s->depth--;
		return 0;
	}
	if (n->event == NGINX_CONF_INCLUDE)
		return 0;
	if (word(n, 0, name, sizeof(name)) < 0)
		name[0] = '\0';
	if (n->event == NGINX_CONF_BLOCK) {
		if (strcmp(n->context, "main") == 0 && strcmp(name, "events") == 0 && !s->have_events) {
			s->have_events = true;
			s->events_file = n->file;
			s->events_line = n->line;
		} else if (strcmp(n->context, "main") == 0 && strcmp(name, "http") == 0 && !s->have_http) {
			s->have_http = true;
			s->http_file = n->file;
			s->http_line = n->line;
		}
		if (s->depth < NGINX_CONF_DEPTH_MAX)
			s->stack[++s->depth] = ++s->blocks;
		return 0;
	}
	if (strcmp(name, "log_format") == 0 && n->nwords > 1 && word(n, 1, arg, sizeof(arg)) == 0 &&
	    strcmp(arg, SETUP_FORMAT) == 0 && !in_setup_file(s, n->file))
		s->format_defined = true;
	if (strcmp(name, "stub_status") == 0 && !in_setup_file(s, n->file) && !s->stub_elsewhere) {
		s->stub_elsewhere = true;
		snprintf(s->stub_where, sizeof(s->stub_where), "%.400s:%u", s->c->files[n->file].path, n->line);
	}
	if (strcmp(name, "access_log") != 0 || n->nwords < 2 || word(n, 1, arg, sizeof(arg)) < 0)
		return 0;
	if (strcmp(n->context, "http") == 0) {
		if (!in_setup_file(s, n->file) && n->nwords > 2 && word(n, 2, arg2, sizeof(arg2)) == 0 &&
		    strcmp(arg2, SETUP_FORMAT) == 0)
			s->format_at_http = true;
		return 0;
	}
	if (strncmp(n->context, "http/", 5) != 0 || s->depth == 0)
		return 0;
	/* One site per block: the operator's last access_log there, and whether that level has ours or is off. */
	for (size_t i = 0; i < s->nsites; i++) {
		struct log_site *l = &s->sites[i];

		if (l->block != s->stack[s->depth])
			continue;
		if (strcmp(arg, "off") == 0)
			l->off = true;
		else if (strcmp(arg, s->p->agent_log) == 0)
			l->ours = true;
		else {
			l->file = n->file;
			l->line = n->line;
		}
		return 0;
	}
	if (s->nsites == BLOCKS_MAX)
		return -E2BIG;
	s->sites[s->nsites++] = (struct log_site){.block = s->stack[s->depth], .file = n->file, .line = n->line,
						  .off = strcmp(arg, "off") == 0,
						  .ours = strcmp(arg, s->p->agent_log) == 0};
	return 0;
}

/* Byte offset of the start of line LINE (1-based) of TEXT, or LEN past its end. */
static size_t line_start(const char *text, size_t len, unsigned line)
{
	size_t off = 0;

	for (unsigned l = 1; l < line && off < len; off++)
		if (text[off] == '\n')
			l++;
	return off;
}

/* The blanks that start the line at OFF. */
static void indent_of(const char *text, size_t len, size_t off, char *out, size_t outlen)
{
	size_t n = 0;

	while (off + n < len && (text[off + n] == ' ' || text[off + n] == '\t') && n + 1 < outlen) {
		out[n] = text[off + n];
		n++;
	}
	out[n] = '\0';
}

/*
 * The offset just after the directive or block opening that starts at FROM: its ';' or '{', outside quotes and
 * comments. CLOSE_SAME_LINE tells whether a '}' follows on that line (a block written on one line).
 */
static int end_of(const char *text, size_t len, size_t from, char want, size_t *at, bool *close_same_line)
{
	char quote = 0;

	for (size_t i = from; i < len; i++) {
		char ch = text[i];

		if (quote) {
			if (ch == '\\' && i + 1 < len)
				i++;
			else if (ch == quote)
				quote = 0;
			continue;
		}
		if (ch == '"' || ch == '\'') {
			quote = ch;
		} else if (ch == '#') {
			while (i < len && text[i] != '\n')
				i++;
		} else if (ch == want) {
			*at = i + 1;
			if (close_same_line) {
				*close_same_line = false;
				for (size_t k = i + 1; k < len && text[k] != '\n'; k++)
					if (text[k] == '}')
						*close_same_line = true;
			}
			return 0;
		}
	}
	return -EINVAL;
}

static int add_insert(struct insert *ins, size_t *n, size_t file, size_t offset, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int add_insert(struct insert *ins, size_t *n, size_t file, size_t offset, const char *fmt, ...)
{
	va_list ap;

	if (*n == INSERTS_MAX)
		return -E2BIG;
	ins[*n].file = file;
	ins[*n].offset = offset;
	ins[*n].seq = *n;
	va_start(ap, fmt);
	vsnprintf(ins[*n].text, sizeof(ins[*n].text), fmt, ap);
	va_end(ap);
	(*n)++;
	return 0;
}

/* Insert after the '{' of the block whose name is on LINE of FILE: "\n<indent>\tTEXT". */
static int insert_in_block(const struct nginx_conf *c, struct insert *ins, size_t *n, size_t file, unsigned line,
			   const char *what, const char *text, char *err, size_t errlen)
{
	const struct nginx_conf_file *f = &c->files[file];
	size_t start = line_start(f->text, f->len, line), at;
	char indent[64];
	bool one_line;

	if (end_of(f->text, f->len, start, '{', &at, &one_line) < 0 || one_line) {
		str_err(err, errlen, "%s:%u: the %s block opens and closes on one line; write it on several lines and "
			"run the setup again", f->path, line, what);
		return -EINVAL;
	}
	indent_of(f->text, f->len, start, indent, sizeof(indent));
	return add_insert(ins, n, file, at, "\n%s\t%s", indent, text);
}

static int cmp_insert(const void *x, const void *y)
{
	const struct insert *a = x, *b = y;

	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	/* Descending, as apply_file walks them backwards; at one offset the later first, so that they come out in
	 * the order they were added. */
	if (a->offset != b->offset)
		return a->offset < b->offset ? 1 : -1;
	return a->seq < b->seq ? 1 : -1;
}

/* Apply the inserts of one file (sorted by descending offset) to its text, in one forward pass. */
static int apply_file(const struct nginx_conf_file *f, const struct insert *ins, size_t n, char **out, size_t *outlen)
{
	struct sbuf b;
	size_t from = 0;

	sbuf_init(&b);
	for (size_t i = n; i-- > 0;) {
		sbuf_add(&b, f->text + from, ins[i].offset - from);
		sbuf_puts(&b, ins[i].text);
		from = ins[i].offset;
	}
	sbuf_add(&b, f->text + from, f->len - from);
	if (b.oom) {
		sbuf_free(&b);
		return -ENOMEM;
	}
	*outlen = b.len;
	*out = b.p ? b.p : strdup("");
	return *out ? 0 : -ENOMEM;
}

int setup_plan_add(struct setup_plan *plan, const char *path, const char *old, size_t oldlen, const char *new_text,
		   size_t newlen)
{
	struct setup_edit *e = NULL;
	char *nt;

	for (size_t i = 0; i < plan->n; i++)
		if (strcmp(plan->edits[i].path, path) == 0)
			e = &plan->edits[i];
	if (!e) {
		if (plan->n == SETUP_EDITS_MAX)
			return -ENOSPC;
		e = &plan->edits[plan->n];
		memset(e, 0, sizeof(*e));
		snprintf(e->path, sizeof(e->path), "%s", path);
		if (old) {
			e->text_old = malloc(oldlen + 1);
			if (!e->text_old)
				return -ENOMEM;
			memcpy(e->text_old, old, oldlen);
			e->text_old[oldlen] = '\0';
			e->len_old = oldlen;
		}
		plan->n++;
	}
	nt = malloc(newlen + 1);
	if (!nt)
		return -ENOMEM;
	memcpy(nt, new_text, newlen);
	nt[newlen] = '\0';
	free(e->text_new);
	e->text_new = nt;
	e->len_new = newlen;
	return 0;
}

void setup_plan_free(struct setup_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++) {
		free(plan->edits[i].text_old);
		free(plan->edits[i].text_new);
	}
	plan->n = 0;
}

static const char include_header[] =
	"# Owned by ngx-autotune: the directives it tunes in this context (see ngx-autotune.conf(5)).\n"
	"# Edit nothing here; `ngxctl revert` puts every change back.\n";

/* The agent's own http {} file: the log format, the agent's access log, the stub_status server. */
static void setup_file_text(const struct setup_params *p, bool format, bool log, bool status, struct sbuf *b)
{
	sbuf_puts(b, "# Written by `ngx-autotune --setup` (ngxctl revert --setup takes it out again).\n");
	if (format)
		sbuf_puts(b, "log_format " SETUP_FORMAT " escape=json\n"
			     "\t'{\"time\":\"$time_iso8601\",\"status\":$status,'\n"
			     "\t'\"request_time\":$request_time,'\n"
			     "\t'\"upstream_response_time\":\"$upstream_response_time\",'\n"
			     "\t'\"upstream_connect_time\":\"$upstream_connect_time\",'\n"
			     "\t'\"upstream_addr\":\"$upstream_addr\",'\n"
			     "\t'\"bytes\":$body_bytes_sent}';\n");
	if (log)
		sbuf_printf(b, "access_log %s " SETUP_FORMAT " buffer=64k flush=1s;\n", p->agent_log);
	if (status)
		sbuf_printf(b,
			    "server {\n"
			    "\tlisten 127.0.0.1:%u;\n"
			    "\tserver_name ngx-autotune-status;\n"
			    "\taccess_log off;\n"
			    "\tlocation = " SETUP_STATUS_PATH " {\n"
			    "\t\tstub_status;\n"
			    "\t\tallow 127.0.0.1;\n"
			    "\t\tdeny all;\n"
			    "\t}\n"
			    "}\n",
			    (unsigned)p->status_port);
}

static void note(struct setup_plan *plan, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct setup_plan *plan, const char *fmt, ...)
{
	va_list ap;

	if (plan->nnotes == sizeof(plan->notes) / sizeof(plan->notes[0]))
		return;
	va_start(ap, fmt);
	vsnprintf(plan->notes[plan->nnotes++], sizeof(plan->notes[0]), fmt, ap);
	va_end(ap);
}

int setup_plan_nginx(const struct nginx_conf *c, const struct setup_params *p, struct setup_plan *out, char *err,
		     size_t errlen)
{
	static const char *const ctx_files[3][2] = {{"main", "main.conf"}, {"events", "events.conf"},
						    {"http", "http.conf"}};
	struct scan *s = calloc(1, sizeof(*s));
	struct insert *ins = calloc(INSERTS_MAX, sizeof(*ins));
	char path[4096], context[NGINX_CONF_CONTEXT_MAX], line[4200];
	bool included[4] = {false};
	size_t nins = 0;
	struct sbuf b;
	int r;

	memset(out, 0, sizeof(*out));
	sbuf_init(&b);
	if (!s || !ins) {
		r = -ENOMEM;
		goto out;
	}
	s->c = c;
	s->p = p;
	snprintf(s->setup_path, sizeof(s->setup_path), "%s/%s", p->include_dir, SETUP_FILE);
	r = nginx_conf_walk(c, visit, s, err, errlen);
	if (r < 0)
		goto out;
	if (!s->have_events || !s->have_http) {
		str_err(err, errlen, "%s has no %s block", c->nfiles ? c->files[0].path : "nginx.conf",
			!s->have_events ? "events" : "http");
		r = -EINVAL;
		goto out;
	}
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", p->include_dir, i < 3 ? ctx_files[i][1] : SETUP_FILE);
		r = nginx_conf_included(c, path, context, sizeof(context), err, errlen);
		if (r < 0 && r != -ENOENT)
			goto out;
		included[i] = r == 0;
		if (r == 0 && strcmp(context, i < 3 ? ctx_files[i][0] : "http") != 0) {
			str_err(err, errlen, "%s is included in %s, not in %s: move that include line", path, context,
				i < 3 ? ctx_files[i][0] : "http");
			r = -EINVAL;
			goto out;
		}
		/* The include files themselves: created (with a header) where the dump has none. */
		if (i < 3 && nginx_conf_file_index(c, path) < 0) {
			r = setup_plan_add(out, path, NULL, 0, include_header, sizeof(include_header) - 1);
			if (r < 0)
				goto out;
		}
	}
	r = 0;
	if (!included[0]) {
		const struct nginx_conf_file *f = &c->files[s->events_file];

		r = add_insert(ins, &nins, s->events_file, line_start(f->text, f->len, s->events_line),
			       "include %s/main.conf;\n", p->include_dir);
	}
	if (r == 0 && !included[1]) {
		snprintf(line, sizeof(line), "include %s/events.conf;", p->include_dir);
		r = insert_in_block(c, ins, &nins, s->events_file, s->events_line, "events", line, err, errlen);
	}
	/* setup.conf first: its log_format must come before any access_log that names it. */
	if (r == 0 && !included[2]) {
		snprintf(line, sizeof(line), "include %s/http.conf;", p->include_dir);
		r = insert_in_block(c, ins, &nins, s->http_file, s->http_line, "http", line, err, errlen);
	}
	if (r == 0 && !included[3]) {
		snprintf(line, sizeof(line), "include %s/%s;", p->include_dir, SETUP_FILE);
		r = insert_in_block(c, ins, &nins, s->http_file, s->http_line, "http", line, err, errlen);
	}
	if (r < 0)
		goto out;

	out->adds_status = !s->stub_elsewhere;
	if (s->stub_elsewhere)
		note(out, "stub_status is already served (%s): no server added; [nginx] stub_status_url must name it",
		     s->stub_where);
	out->adds_log = !s->format_at_http;
	if (s->format_at_http)
		note(out, "an access_log of http {} already writes " SETUP_FORMAT ": no log added; [nginx] access_log "
			  "must name it");
	/* Levels below http {} with an access_log of their own do not inherit http's: ours goes beside theirs. */
	for (size_t i = 0; out->adds_log && i < s->nsites; i++) {
		const struct log_site *l = &s->sites[i];
		const struct nginx_conf_file *f = &c->files[l->file];
		size_t start, at;
		char indent[64];

		if (l->off || l->ours)
			continue;
		start = line_start(f->text, f->len, l->line);
		if (end_of(f->text, f->len, start, ';', &at, NULL) < 0) {
			str_err(err, errlen, "%s:%u: cannot find the end of this access_log", f->path, l->line);
			r = -EINVAL;
			goto out;
		}
		indent_of(f->text, f->len, start, indent, sizeof(indent));
		r = add_insert(ins, &nins, l->file, at, "\n%saccess_log %s " SETUP_FORMAT " buffer=64k flush=1s;", indent,
			       p->agent_log);
		if (r < 0)
			goto out;
	}
	/* Each edited file of the dump: its inserts applied in one pass. */
	qsort(ins, nins, sizeof(*ins), cmp_insert);
	for (size_t i = 0; i < nins;) {
		size_t j = i;
		char *text;
		size_t len;

		while (j < nins && ins[j].file == ins[i].file)
			j++;
		r = apply_file(&c->files[ins[i].file], ins + i, j - i, &text, &len);
		if (r == 0) {
			const struct nginx_conf_file *f = &c->files[ins[i].file];

			r = setup_plan_add(out, f->path, f->text, f->len, text, len);
			free(text);
		}
		if (r < 0)
			goto out;
		i = j;
	}
	/* The agent's own file, written whole each time: the same text again is no change. */
	setup_file_text(p, !s->format_defined, out->adds_log, out->adds_status, &b);
	if (b.oom) {
		r = -ENOMEM;
		goto out;
	}
	{
		int k = nginx_conf_file_index(c, s->setup_path);
		const struct nginx_conf_file *f = k >= 0 ? &c->files[k] : NULL;

		if (!f || f->len != b.len || memcmp(f->text, sbuf_str(&b), b.len) != 0)
			r = setup_plan_add(out, s->setup_path, f ? f->text : NULL, f ? f->len : 0, sbuf_str(&b), b.len);
	}
out:
	sbuf_free(&b);
	free(ins);
	free(s);
	if (r < 0)
		setup_plan_free(out);
	return r;
}

int setup_ini_set(const char *text, size_t len, const char *section, const char *key, const char *value, char **out,
		  size_t *outlen)
{
	char header[128];
	size_t off = 0, hlen, klen = strlen(key), insert_at = SIZE_MAX;
	bool in = false;
	struct sbuf b;

	snprintf(header, sizeof(header), "[%s]", section);
	hlen = strlen(header);
	sbuf_init(&b);
	while (off < len) {
		const char *l = text + off, *nl = memchr(l, '\n', len - off);
		size_t ll = nl ? (size_t)(nl - l) : len - off, p = 0;

		while (p < ll && (l[p] == ' ' || l[p] == '\t'))
			p++;
		if (p < ll && l[p] == '[') {
			in = ll - p >= hlen && memcmp(l + p, header, hlen) == 0;
			if (in)
				insert_at = off + ll + (nl ? 1 : 0);
		} else if (in && ll - p > klen && memcmp(l + p, key, klen) == 0 &&
			   (l[p + klen] == ' ' || l[p + klen] == '\t' || l[p + klen] == '=')) {
			/* KEY's own line: replaced. */
			sbuf_add(&b, text, off + p);
			sbuf_printf(&b, "%s = %s", key, value);
			sbuf_add(&b, l + ll, len - off - ll);
			goto done;
		}
		off += ll + (nl ? 1 : 0);
	}
	if (insert_at != SIZE_MAX) {
		sbuf_add(&b, text, insert_at);
		if (insert_at > 0 && text[insert_at - 1] != '\n')
			sbuf_puts(&b, "\n");
		sbuf_printf(&b, "%s = %s\n", key, value);
		sbuf_add(&b, text + insert_at, len - insert_at);
	} else {
		sbuf_add(&b, text, len);
		if (len && text[len - 1] != '\n')
			sbuf_puts(&b, "\n");
		sbuf_printf(&b, "%s%s\n%s = %s\n", len ? "\n" : "", header, key, value);
	}
done:
	if (b.oom) {
		sbuf_free(&b);
		return -ENOMEM;
	}
	*outlen = b.len;
	*out = b.p ? b.p : strdup("");
	return *out ? 0 : -ENOMEM;
}

/* ---- the configuration the running master was started with ------------------------------------------------- */

#define BUILTIN_PREFIX "/usr/local/nginx/" /* nginx's configure without --prefix */
#define BUILTIN_CONF "conf/nginx.conf"     /* and without --conf-path: under the prefix */

/* The value of OPT ("--prefix=") among the words of configure's arguments ARGS (up to the line's end), its single
 * quotes taken off (configure quotes a value with blanks: --with-cc-opt='-g -O2'), into OUT. 1 found, 0 not,
 * -ENAMETOOLONG. */
static int configure_arg(const char *args, const char *opt, char *out, size_t outlen)
{
	size_t olen = strlen(opt);
	const char *p = args;

	while (*p && *p != '\n') {
		const char *word;
		bool quoted = false;
		size_t n = 0;

		while (*p == ' ' || *p == '\t')
			p++;
		word = p;
		while (*p && *p != '\n' && (quoted || (*p != ' ' && *p != '\t'))) {
			if (*p == '\'')
				quoted = !quoted;
			p++;
		}
		if ((size_t)(p - word) < olen || memcmp(word, opt, olen) != 0)
			continue;
		for (const char *v = word + olen; v < p; v++) {
			if (*v == '\'')
				continue;
			if (n + 1 >= outlen)
				return -ENAMETOOLONG;
			out[n++] = *v;
		}
		out[n] = '\0';
		return 1;
	}
	return 0;
}

int setup_nginx_builtin(const char *version, char *prefix, size_t prefixlen, char *conf, size_t conflen, char *err,
			size_t errlen)
{
	static const char head[] = "configure arguments:";
	const char *args = NULL;
	int r;

	if (!version || !strstr(version, "nginx version: ")) {
		str_err(err, errlen, "not what nginx -V prints (no \"nginx version:\" line)");
		return -EBADMSG;
	}
	if (str_copy(prefix, prefixlen, BUILTIN_PREFIX) < 0 || str_copy(conf, conflen, BUILTIN_CONF) < 0)
		goto too_long;
	for (const char *l = version; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, head, sizeof(head) - 1) == 0)
			args = l + sizeof(head) - 1;
	if (!args)
		return 0;
	r = configure_arg(args, "--prefix=", prefix, prefixlen);
	if (r >= 0)
		r = configure_arg(args, "--conf-path=", conf, conflen);
	if (r < 0)
		goto too_long;
	return 0;
too_long:
	str_err(err, errlen, "nginx -V: a path too long");
	return -ENAMETOOLONG;
}

/* NAME under DIR, as nginx's ngx_get_full_name joins them (NAME as it is when absolute), with "//" and "/./" made
 * single slashes (".." is left: a symbolic link decides what it means), into OUT. 0 or -ENAMETOOLONG. */
static int full_name(const char *dir, const char *name, char *out, size_t outlen)
{
	char joined[8192];
	size_t n = 0, dl = strlen(dir);
	int k;

	if (name[0] == '/' || !dir[0])
		k = snprintf(joined, sizeof(joined), "%s", name);
	else
		k = snprintf(joined, sizeof(joined), "%s%s%s", dir, dir[dl - 1] == '/' ? "" : "/", name);
	if (k < 0 || (size_t)k >= sizeof(joined))
		return -ENAMETOOLONG;
	for (const char *p = joined; *p;) {
		size_t seg;

		if (*p == '/') {
			p++;
			continue;
		}
		seg = strcspn(p, "/");
		if (!(seg == 1 && p[0] == '.')) {
			/* A relative path keeps no leading slash. */
			if (n || joined[0] == '/') {
				if (n + 1 >= outlen)
					return -ENAMETOOLONG;
				out[n++] = '/';
			}
			if (n + seg >= outlen)
				return -ENAMETOOLONG;
			memcpy(out + n, p, seg);
			n += seg;
		}
		p += seg;
	}
	if (n == 0) {
		if (outlen < 2)
			return -ENAMETOOLONG;
		out[n++] = joined[0] == '/' ? '/' : '.';
	}
	out[n] = '\0';
	return 0;
}

int setup_running_conf(const char *title, const char *cwd, const char *version, struct setup_running *out,
		       char *err, size_t errlen)
{
	char c[4096], p[4096], bprefix[4096] = "", bconf[4096] = "", verr[256], path[8192];
	int r;

	r = parse_nginx_master_title(title, c, sizeof(c), p, sizeof(p));
	if (r == -EINVAL) {
		str_err(err, errlen, "not an nginx master's command line: \"%.120s\"", title ? title : "");
		return r;
	}
	if (r == -EBADMSG) {
		str_err(err, errlen, "a -c or -p without its value in the master's command line \"%.120s\"", title);
		return r;
	}
	if (r < 0)
		goto too_long;
	/* nginx's ngx_process_options: the prefix is -p, else the compiled-in one; the file is -c, else the
	 * compiled-in --conf-path; a relative file is under the prefix, and a relative prefix under the working
	 * directory the master was started in (nginx never changes it). */
	if ((!c[0] || (c[0] != '/' && !p[0])) &&
	    setup_nginx_builtin(version, bprefix, sizeof(bprefix), bconf, sizeof(bconf), verr, sizeof(verr)) < 0) {
		str_err(err, errlen, "the master runs %s%s%s, and nginx's compiled-in %s is unknown: %s",
			c[0] ? "-c " : "no -c", c, c[0] ? " without -p" : "", c[0] ? "prefix" : "configuration path",
			version ? verr : "nginx -V did not run");
		return -EINVAL;
	}
	if (p[0] && p[0] != '/' && (!cwd || cwd[0] != '/')) {
		str_err(err, errlen, "the master runs -p %s, relative to a working directory that is unknown", p);
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	out->builtin = !c[0];
	if (p[0] && full_name(p[0] == '/' ? "" : cwd, p, out->prefix, sizeof(out->prefix)) < 0)
		goto too_long;
	if (full_name(p[0] ? out->prefix : bprefix, c[0] ? c : bconf, path, sizeof(path)) < 0)
		goto too_long;
	if (path[0] != '/' && (!cwd || cwd[0] != '/')) {
		str_err(err, errlen, "the master's configuration %s is relative to a working directory that is unknown",
			path);
		return -EINVAL;
	}
	if (full_name(path[0] == '/' ? "" : cwd, path, out->conf, sizeof(out->conf)) < 0)
		goto too_long;
	return 0;
too_long:
	str_err(err, errlen, "a path too long in the master's command line or nginx -V");
	return -ENAMETOOLONG;
}

/* Whether [W, END) is a word of nginx flags ending in -c ("-c", "-qc"), whose value follows it. */
static bool c_flag(const char *w, const char *end)
{
	if (end - w < 2 || w[0] != '-' || end[-1] != 'c')
		return false;
	for (const char *f = w + 1; f < end - 1; f++)
		if (!strchr("?hvVtTq", *f))
			return false;
	return true;
}

bool setup_title_names(const char *title, const char *path)
{
	size_t n = path ? strlen(path) : 0;

	if (!title || n == 0)
		return false;
	for (const char *p = strstr(title, path); p; p = strstr(p + 1, path)) {
		const char *end = p > title && p[-1] == ' ' ? p - 1 : p, *w = end;

		/* The flag's word is the one before ("-c PATH") or PATH's own ("-cPATH"); PATH ends its word. */
		while (w > title && w[-1] != ' ')
			w--;
		if (c_flag(w, end) && (p[n] == ' ' || p[n] == '\0'))
			return true;
	}
	return false;
}
