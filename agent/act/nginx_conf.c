/*
 * nginx_conf: see nginx_conf.h.
 *
 * The dump format (nginx.c, 1.9.2 and later): for each file nginx opened, in the order it opened them and each
 * path once, "# configuration file PATH:\n", the file's bytes, then "\n". The bytes are the file's own, so a file
 * may contain anything, including a line that reads like a header; see nginx_conf_parse for how those are told
 * apart. nginx prints the dump only when the whole configuration parsed, so every file of a real dump tokenizes,
 * has balanced braces, and the main file's relative includes resolve against its directory.
 *
 * The tokenizer is ngx_conf_read_token transcribed, because "almost nginx's grammar" would split some real file
 * differently from nginx and then edit the wrong bytes: a word ends only at a blank, ';' or '{' (so "a}" and
 * "${host}" are single words), a quote opens a string only at the start of a word and must be followed by a blank,
 * ';', '{' or ')', '#' starts a comment only at the start of a word, and a backslash makes the next byte literal.
 */
#define _GNU_SOURCE

#include "act/nginx_conf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "strutil.h"

#define HEADER "# configuration file "
#define HEADER_LEN (sizeof(HEADER) - 1)

/* Block names kept on the walk's stack (directive names are short; a longer one is kept as "?"). */
#define NAME_MAX_LEN 64

/* Expanding includes can multiply a small dump (a file included twice by a file included twice ...): bound it. */
#define WALK_BYTES_MAX (64u << 20)

/* One word of a directive: RAW span (quotes included) and the bytes of its value before unescaping. */
struct arg {
	size_t off, end;
	size_t voff, vlen;
	unsigned line;
};

/* ngx_conf_read_token's state, resumable: lex_next may stop at any byte and go on later. */
struct lexer {
	const char *text;
	size_t len;
	size_t pos;
	unsigned line;
	bool last_space, need_space, quoted, s_quoted, d_quoted, variable, sharp;
	size_t start;
	unsigned start_line;
	bool start_q;
	size_t event_pos; /* offset of the ';', '{' or '}' of the last event */
	struct arg *args;
	size_t nargs, cap;
};

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

static void lex_init(struct lexer *lx, const char *text, size_t len)
{
	memset(lx, 0, sizeof(*lx));
	lx->text = text;
	lx->len = len;
	lx->line = 1;
	lx->last_space = true;
}

static void lex_free(struct lexer *lx)
{
	free(lx->args);
	lx->args = NULL;
	lx->nargs = lx->cap = 0;
}

/* Between directives: nothing pending, not inside a word or a string. */
static bool lex_clean(const struct lexer *lx)
{
	return lx->nargs == 0 && lx->last_space && !lx->quoted && !lx->d_quoted && !lx->s_quoted && !lx->need_space;
}

static int add_arg(struct lexer *lx, size_t voff, size_t vlen, size_t off, size_t end, char *err, size_t errlen)
{
	if (lx->nargs == lx->cap) {
		size_t cap = lx->cap ? lx->cap * 2 : 8;
		struct arg *a;

		if (lx->nargs >= NGINX_CONF_ARGS_MAX) {
			str_err(err, errlen, "line %u: more than %d words in one directive", lx->start_line,
				NGINX_CONF_ARGS_MAX);
			return -EINVAL;
		}
		a = realloc(lx->args, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		lx->args = a;
		lx->cap = cap;
	}
	lx->args[lx->nargs++] = (struct arg){ .off = off, .end = end, .voff = voff, .vlen = vlen,
					       .line = lx->start_line };
	return 0;
}

/*
 * Read up to offset LIMIT. 1 with *EV = ';' or '{' (a directive, words in lx->args) or '}' (end of a block);
 * 0 when LIMIT was reached first (the state is kept: call again with a larger LIMIT); -EINVAL with ERR.
 */
static int lex_next(struct lexer *lx, size_t limit, int *ev, char *err, size_t errlen)
{
	while (lx->pos < limit) {
		char ch = lx->text[lx->pos++];
		bool found = false;
		int r;

		if (ch == '\n') {
			lx->line++;
			lx->sharp = false;
		}
		if (lx->sharp)
			continue;
		/* nginx keeps a NUL inside a word, but a word here becomes a C string (a context, a directive's
		 * value): "http\0x {" would pass for "http". Only a comment may hold one. */
		if (ch == '\0') {
			str_err(err, errlen, "line %u: a NUL byte outside a comment", lx->line);
			return -EINVAL;
		}
		if (lx->quoted) {
			lx->quoted = false;
			continue;
		}
		if (lx->need_space) {
			if (is_blank(ch)) {
				lx->last_space = true;
				lx->need_space = false;
				continue;
			}
			if (ch == ';' || ch == '{') {
				lx->last_space = true;
				lx->need_space = false;
				lx->event_pos = lx->pos - 1;
				*ev = ch;
				return 1;
			}
			if (ch == ')') {
				lx->last_space = true;
				lx->need_space = false;
				continue;
			}
			str_err(err, errlen, "line %u: unexpected \"%c\" after a quoted string", lx->line, ch);
			return -EINVAL;
		}
		if (lx->last_space) {
			if (is_blank(ch))
				continue;
			lx->start = lx->pos - 1;
			lx->start_line = lx->line;
			lx->start_q = false;
			switch (ch) {
			case ';':
			case '{':
				if (lx->nargs == 0) {
					str_err(err, errlen, "line %u: unexpected \"%c\"", lx->line, ch);
					return -EINVAL;
				}
				lx->event_pos = lx->pos - 1;
				*ev = ch;
				return 1;
			case '}':
				if (lx->nargs != 0) {
					str_err(err, errlen, "line %u: unexpected \"}\"", lx->line);
					return -EINVAL;
				}
				lx->event_pos = lx->pos - 1;
				*ev = '}';
				return 1;
			case '#':
				lx->sharp = true;
				continue;
			case '\\':
				lx->quoted = true;
				lx->last_space = false;
				continue;
			case '"':
				lx->start++;
				lx->start_q = true;
				lx->d_quoted = true;
				lx->last_space = false;
				continue;
			case '\'':
				lx->start++;
				lx->start_q = true;
				lx->s_quoted = true;
				lx->last_space = false;
				continue;
			case '$':
				lx->variable = true;
				lx->last_space = false;
				continue;
			default:
				lx->last_space = false;
				continue;
			}
		}
		if (ch == '{' && lx->variable)
			continue;
		lx->variable = false;
		if (ch == '\\') {
			lx->quoted = true;
			continue;
		}
		if (ch == '$') {
			lx->variable = true;
			continue;
		}
		if (lx->d_quoted) {
			if (ch == '"') {
				lx->d_quoted = false;
				lx->need_space = true;
				found = true;
			}
		} else if (lx->s_quoted) {
			if (ch == '\'') {
				lx->s_quoted = false;
				lx->need_space = true;
				found = true;
			}
		} else if (is_blank(ch) || ch == ';' || ch == '{') {
			lx->last_space = true;
			found = true;
		}
		if (!found)
			continue;
		r = add_arg(lx, lx->start, lx->pos - 1 - lx->start, lx->start_q ? lx->start - 1 : lx->start,
			    lx->start_q ? lx->pos : lx->pos - 1, err, errlen);
		if (r < 0)
			return r;
		if (ch == ';' || ch == '{') {
			lx->event_pos = lx->pos - 1;
			*ev = ch;
			return 1;
		}
	}
	return 0;
}

/* The value of A as nginx sees it (escapes resolved) into BUF. Its length, or -E2BIG when it does not fit. */
static int arg_value(const char *text, const struct arg *a, char *buf, size_t buflen)
{
	const char *s = text + a->voff, *e = s + a->vlen;
	size_t n = 0;

	while (s < e) {
		char ch = *s;

		if (ch == '\\' && s + 1 < e) {
			switch (s[1]) {
			case '"':
			case '\'':
			case '\\':
				ch = s[1];
				s += 2;
				goto put;
			case 't':
				ch = '\t';
				s += 2;
				goto put;
			case 'r':
				ch = '\r';
				s += 2;
				goto put;
			case 'n':
				ch = '\n';
				s += 2;
				goto put;
			default:
				break;
			}
		}
		s++;
put:
		if (n + 1 >= buflen)
			return -E2BIG;
		buf[n++] = ch;
	}
	if (buflen == 0)
		return -E2BIG;
	buf[n] = '\0';
	return (int)n;
}

static bool arg_is(const char *text, const struct arg *a, const char *word)
{
	char buf[NGINX_CONF_WORD_MAX];

	return arg_value(text, a, buf, sizeof(buf)) >= 0 && strcmp(buf, word) == 0;
}

/* ---- splitting the dump ----------------------------------------------------------------------------------- */

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* PATTERN made absolute against PREFIX into OUT. 0 or -ENAMETOOLONG. */
static int resolve(const char *prefix, const char *pattern, char *out, size_t outlen)
{
	int n = pattern[0] == '/' ? snprintf(out, outlen, "%s", pattern) : snprintf(out, outlen, "%s%s", prefix, pattern);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static bool pattern_matches(const char *pattern, const char *path)
{
	if (has_glob(pattern))
		return fnmatch(pattern, path, FNM_PATHNAME | FNM_PERIOD) == 0;
	return strcmp(pattern, path) == 0;
}

struct patterns {
	char **v;
	size_t n, cap;
};

static void patterns_free(struct patterns *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

static int patterns_add(struct patterns *p, const char *s)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		char **v;

		if (p->n >= NGINX_CONF_FILES_MAX)
			return -E2BIG;
		v = realloc(p->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n] = strdup(s);
	if (!p->v[p->n])
		return -ENOMEM;
	p->n++;
	return 0;
}

/* The state of the file being split: its lexer, its block depth, and the includes it has shown so far. */
struct split {
	struct lexer lx;
	int depth;
	const char *prefix;
	struct patterns *pats;
	const char *path;
};

/* Tokenize the current file up to LIMIT, recording includes. 0 or -errno with ERR. */
static int split_run(struct split *s, size_t limit, char *err, size_t errlen)
{
	for (;;) {
		int ev, r = lex_next(&s->lx, limit, &ev, err, errlen);
		char word[NGINX_CONF_WORD_MAX], abs[4096];

		if (r <= 0)
			return r;
		if (ev == '}') {
			if (s->depth == 0) {
				str_err(err, errlen, "%s:%u: unexpected \"}\"", s->path, s->lx.line);
				return -EINVAL;
			}
			s->depth--;
			continue;
		}
		if (ev == '{') {
			if (++s->depth > NGINX_CONF_DEPTH_MAX) {
				str_err(err, errlen, "%s:%u: blocks nested too deep", s->path, s->lx.line);
				return -EINVAL;
			}
		} else if (s->lx.nargs == 2 && arg_is(s->lx.text, &s->lx.args[0], "include") &&
			   arg_value(s->lx.text, &s->lx.args[1], word, sizeof(word)) > 0 &&
			   resolve(s->prefix, word, abs, sizeof(abs)) == 0) {
			r = patterns_add(s->pats, abs);
			if (r < 0) {
				str_err(err, errlen, "too many include directives");
				return r == -E2BIG ? -EINVAL : r;
			}
		}
		s->lx.nargs = 0;
	}
}

/* Whether the line at P of BUF (END bytes long) is a header; its path goes to [*PS, *PE), *NEXT past the line. */
static bool header_at(const char *buf, size_t end, size_t p, size_t *ps, size_t *pe, size_t *next)
{
	const char *nl;

	if (end - p < HEADER_LEN + 3 || memcmp(buf + p, HEADER, HEADER_LEN) != 0)
		return false;
	nl = memchr(buf + p + HEADER_LEN, '\n', end - p - HEADER_LEN);
	if (!nl)
		return false;
	*ps = p + HEADER_LEN;
	*pe = (size_t)(nl - buf);
	if (*pe <= *ps + 1 || buf[*pe - 1] != ':' || buf[*ps] != '/')
		return false;
	(*pe)--;
	if (memchr(buf + *ps, '\0', *pe - *ps))
		return false;
	*next = (size_t)(nl - buf) + 1;
	return true;
}

static int add_file(struct nginx_conf *c, size_t *cap, const char *path, const char *text, size_t len)
{
	if (c->nfiles == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct nginx_conf_file *f;

		if (c->nfiles >= NGINX_CONF_FILES_MAX)
			return -E2BIG;
		f = realloc(c->files, ncap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		c->files = f;
		*cap = ncap;
	}
	c->files[c->nfiles++] = (struct nginx_conf_file){ .path = path, .text = text, .len = len };
	return 0;
}

static bool seen(const struct nginx_conf *c, const char *path)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (strcmp(c->files[i].path, path) == 0)
			return true;
	return false;
}

static bool included_so_far(const struct patterns *p, const char *path)
{
	for (size_t i = 0; i < p->n; i++)
		if (pattern_matches(p->v[i], path))
			return true;
	return false;
}

/* Close the file being split at byte END (exclusive): it must end between directives, outside any block. */
static int split_finish(struct split *s, size_t end, char *err, size_t errlen)
{
	int r = split_run(s, end, err, errlen);

	if (r < 0)
		return r;
	if (!lex_clean(&s->lx) || s->depth != 0) {
		str_err(err, errlen, "%s:%u: unexpected end of file", s->path, s->lx.line);
		return -EINVAL;
	}
	lex_free(&s->lx);
	return 0;
}

/*
 * A candidate header at P is taken only where nginx could have printed one: the file before it ends cleanly there
 * (its last byte is followed by the newline nginx adds), the path is new, and an include read so far names it.
 */
int nginx_conf_parse_owned(char *dump, size_t len, struct nginx_conf *out, char *err, size_t errlen)
{
	struct patterns pats = { 0 };
	struct split s;
	size_t cap = 0, ps, pe, next, content, scan;
	char *slash;
	int r;

	memset(out, 0, sizeof(*out));
	str_err(err, errlen, "%s", "");
	if (!dump || len == 0 || len > NGINX_CONF_DUMP_MAX) {
		str_err(err, errlen, "nginx -T printed %zu bytes", len);
		free(dump);
		return -EINVAL;
	}
	/* The files' texts are pieces of the dump itself, cut in place: no copy of it is made. */
	out->buf = dump;
	out->buf[len] = '\0';
	if (!header_at(out->buf, len, 0, &ps, &pe, &next)) {
		str_err(err, errlen, "not the output of nginx -T: it does not start with \"%s/...:\"", HEADER);
		r = -EINVAL;
		goto fail;
	}
	if (out->buf[len - 1] != '\n') {
		str_err(err, errlen, "the output of nginx -T is truncated");
		r = -EINVAL;
		goto fail;
	}
	out->buf[pe] = '\0';
	if (pe - ps >= sizeof(out->prefix)) {
		str_err(err, errlen, "configuration path too long");
		r = -EINVAL;
		goto fail;
	}
	memcpy(out->prefix, out->buf + ps, pe - ps + 1);
	slash = strrchr(out->prefix, '/');
	slash[1] = '\0';
	memset(&s, 0, sizeof(s));
	s.prefix = out->prefix;
	s.pats = &pats;
	content = next;
	s.path = out->buf + ps;
	lex_init(&s.lx, out->buf, len);
	s.lx.pos = content;
	scan = content;
	for (;;) {
		const char *hit = memmem(out->buf + scan, len - scan, "\n" HEADER, HEADER_LEN + 1);
		size_t p, nps, npe, nnext;

		if (!hit)
			break;
		p = (size_t)(hit - out->buf) + 1;
		scan = p;
		if (!header_at(out->buf, len, p, &nps, &npe, &nnext))
			continue;
		r = split_run(&s, p - 1, err, errlen);
		if (r < 0)
			goto fail_lex;
		if (!lex_clean(&s.lx) || s.depth != 0)
			continue;
		out->buf[npe] = '\0'; /* the ':' goes; restored below when this is not a header */
		if (seen(out, out->buf + nps) || strcmp(s.path, out->buf + nps) == 0 ||
		    !included_so_far(&pats, out->buf + nps)) {
			out->buf[npe] = ':';
			continue;
		}
		r = split_finish(&s, p - 1, err, errlen);
		if (r == 0)
			r = add_file(out, &cap, s.path, out->buf + content, p - 1 - content);
		if (r < 0)
			goto fail_lex;
		s.path = out->buf + nps;
		s.depth = 0;
		content = nnext;
		lex_init(&s.lx, out->buf, len);
		s.lx.pos = content;
		scan = content;
	}
	if (content > len - 1) {
		str_err(err, errlen, "the output of nginx -T is truncated after the header of %s", s.path);
		r = -EINVAL;
		goto fail_lex;
	}
	r = split_finish(&s, len - 1, err, errlen);
	if (r == 0)
		r = add_file(out, &cap, s.path, out->buf + content, len - 1 - content);
	if (r < 0)
		goto fail_lex;
	patterns_free(&pats);
	return 0;
fail_lex:
	lex_free(&s.lx);
	if (r == -E2BIG) {
		str_err(err, errlen, "more than %d files in the configuration", NGINX_CONF_FILES_MAX);
		r = -EINVAL;
	}
fail:
	patterns_free(&pats);
	nginx_conf_free(out);
	return r;
}

int nginx_conf_parse(const char *dump, size_t len, struct nginx_conf *out, char *err, size_t errlen)
{
	char *copy;

	if (!dump || len == 0 || len > NGINX_CONF_DUMP_MAX)
		return nginx_conf_parse_owned(NULL, len, out, err, errlen);
	copy = malloc(len + 1);
	if (!copy) {
		memset(out, 0, sizeof(*out));
		return -ENOMEM;
	}
	memcpy(copy, dump, len);
	return nginx_conf_parse_owned(copy, len, out, err, errlen);
}

void nginx_conf_free(struct nginx_conf *c)
{
	if (!c)
		return;
	free(c->files);
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

int nginx_conf_file_index(const struct nginx_conf *c, const char *path)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (strcmp(c->files[i].path, path) == 0)
			return (int)i;
	return -ENOENT;
}

/* ---- walking the configuration ---------------------------------------------------------------------------- */

struct walk;

/* Called for each directive (EV ';') and block (EV '{'); returns 0, 1 to stop the walk, or -errno. */
typedef int (*walk_fn)(struct walk *w, size_t file, const struct lexer *lx, int ev);
/* Called before an included FILE is walked; same returns. */
typedef int (*include_fn)(struct walk *w, size_t file);
/* Called at the '}' (on LINE of FILE, at offset POS) that closes the innermost block, before it leaves the stack;
 * same returns. */
typedef int (*close_fn)(struct walk *w, size_t file, unsigned line, size_t pos);

struct walk {
	const struct nginx_conf *c; /* NULL: one text alone, includes not followed */
	char stack[NGINX_CONF_DEPTH_MAX][NAME_MAX_LEN];
	size_t sp;
	int incl_depth;
	size_t incl_file;   /* the file of the include directive being expanded */
	unsigned incl_line; /* and its line */
	size_t incl_start, incl_end; /* its name's offset and its ';' */
	size_t bytes;
	walk_fn fn;
	include_fn on_include;
	close_fn on_close;
	void *ctx;
	char *err;
	size_t errlen;
};

/* A walk calling FN with CTX, reporting into ERR (calloc'd: the stack is large). NULL on ENOMEM. */
static struct walk *walk_new(walk_fn fn, void *ctx, char *err, size_t errlen)
{
	struct walk *w = calloc(1, sizeof(*w));

	if (w) {
		w->fn = fn;
		w->ctx = ctx;
		w->err = err;
		w->errlen = errlen;
	}
	return w;
}

/* The context path of the walk ("main", "http", "http/server", ...) into OUT. */
static void walk_context(const struct walk *w, char *out, size_t outlen)
{
	size_t n = 0;

	if (w->sp == 0) {
		snprintf(out, outlen, "main");
		return;
	}
	out[0] = '\0';
	for (size_t i = 0; i < w->sp && n < outlen; i++) {
		int k = snprintf(out + n, outlen - n, "%s%s", i ? "/" : "", w->stack[i]);

		if (k < 0)
			break;
		n += (size_t)k;
	}
}

static int cmp_path(const void *a, const void *b)
{
	const struct nginx_conf_file *const *x = a, *const *y = b;

	return strcmp((*x)->path, (*y)->path);
}

static int walk_text(struct walk *w, size_t file, const char *path, const char *text, size_t len);

/* An include directive: walk every file of the dump it names, in glob order, in the current context. */
static int walk_include(struct walk *w, const struct lexer *lx, size_t file, const char *path)
{
	char word[NGINX_CONF_WORD_MAX], abs[4096];
	const struct nginx_conf_file **m;
	size_t n = 0;
	int r = 0;

	if (!w->c || lx->nargs != 2)
		return 0;
	if (arg_value(lx->text, &lx->args[1], word, sizeof(word)) <= 0 || resolve(w->c->prefix, word, abs, sizeof(abs))) {
		str_err(w->err, w->errlen, "%s:%u: include path too long", path, lx->args[0].line);
		return -EINVAL;
	}
	if (w->incl_depth >= NGINX_CONF_INCLUDE_DEPTH) {
		str_err(w->err, w->errlen, "%s:%u: includes nested deeper than %d", path, lx->args[0].line,
			NGINX_CONF_INCLUDE_DEPTH);
		return -EINVAL;
	}
	m = malloc(w->c->nfiles * sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < w->c->nfiles; i++)
		if (pattern_matches(abs, w->c->files[i].path))
			m[n++] = &w->c->files[i];
	if (n == 0 && !has_glob(abs)) {
		str_err(w->err, w->errlen, "%s:%u: %s is included but not in the output of nginx -T", path,
			lx->args[0].line, abs);
		free(m);
		return -EINVAL;
	}
	qsort(m, n, sizeof(*m), cmp_path);
	w->incl_depth++;
	for (size_t i = 0; i < n && r == 0; i++) {
		size_t fi = (size_t)(m[i] - w->c->files);

		w->incl_file = file;
		w->incl_line = lx->args[0].line;
		w->incl_start = lx->args[0].off;
		w->incl_end = lx->event_pos;
		if (w->on_include)
			r = w->on_include(w, fi);
		if (r == 0)
			r = walk_text(w, fi, m[i]->path, m[i]->text, m[i]->len);
	}
	w->incl_depth--;
	free(m);
	return r;
}

static int walk_text(struct walk *w, size_t file, const char *path, const char *text, size_t len)
{
	struct lexer lx;
	size_t base = w->sp;
	int r = 0;

	w->bytes += len;
	if (w->bytes > WALK_BYTES_MAX) {
		str_err(w->err, w->errlen, "the configuration is larger than %u bytes with its includes expanded",
			WALK_BYTES_MAX);
		return -EINVAL;
	}
	lex_init(&lx, text, len);
	for (;;) {
		char ebuf[192];
		int ev;

		r = lex_next(&lx, len, &ev, ebuf, sizeof(ebuf));
		if (r < 0) {
			str_err(w->err, w->errlen, "%s: %s", path, ebuf);
			break;
		}
		if (r == 0) {
			if (!lex_clean(&lx) || w->sp != base) {
				str_err(w->err, w->errlen, "%s:%u: unexpected end of file", path, lx.line);
				r = -EINVAL;
			}
			break;
		}
		if (ev == '}') {
			if (w->sp == base) {
				str_err(w->err, w->errlen, "%s:%u: unexpected \"}\"", path, lx.line);
				r = -EINVAL;
				break;
			}
			r = w->on_close ? w->on_close(w, file, lx.line, lx.event_pos) : 0;
			if (r != 0)
				break;
			w->sp--;
			continue;
		}
		r = w->fn ? w->fn(w, file, &lx, ev) : 0;
		if (r != 0)
			break;
		if (ev == '{') {
			if (w->sp >= NGINX_CONF_DEPTH_MAX) {
				str_err(w->err, w->errlen, "%s:%u: blocks nested too deep", path, lx.line);
				r = -EINVAL;
				break;
			}
			if (arg_value(text, &lx.args[0], w->stack[w->sp], NAME_MAX_LEN) < 0)
				snprintf(w->stack[w->sp], NAME_MAX_LEN, "?");
			w->sp++;
		} else if (arg_is(text, &lx.args[0], "include")) {
			r = walk_include(w, &lx, file, path);
			if (r != 0)
				break;
		}
		lx.nargs = 0;
	}
	lex_free(&lx);
	w->sp = base;
	return r;
}

/* Walk C from its main file; 0 (whole walk), 1 (stopped by a callback) or -errno. */
static int walk_conf(struct walk *w, const struct nginx_conf *c)
{
	w->c = c;
	if (!c || c->nfiles == 0) {
		str_err(w->err, w->errlen, "no configuration");
		return -EINVAL;
	}
	return walk_text(w, 0, c->files[0].path, c->files[0].text, c->files[0].len);
}

/* ---- questions -------------------------------------------------------------------------------------------- */

struct included_q {
	const char *path;
	char *context;
	size_t contextlen;
};

static int included_hook(struct walk *w, size_t file)
{
	struct included_q *q = w->ctx;

	if (strcmp(w->c->files[file].path, q->path) != 0)
		return 0;
	walk_context(w, q->context, q->contextlen);
	return 1;
}

int nginx_conf_included(const struct nginx_conf *c, const char *path, char *context, size_t contextlen, char *err,
			size_t errlen)
{
	struct included_q q = { .path = path, .context = context, .contextlen = contextlen };
	struct walk *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	w->on_include = included_hook;
	w->ctx = &q;
	w->err = err;
	w->errlen = errlen;
	r = walk_conf(w, c);
	free(w);
	if (r < 0)
		return r;
	return r == 1 ? 0 : -ENOENT;
}

/* One file's TEXT walked alone (includes not followed) with FN and CTX: walk_text's result, or -ENOMEM. */
static int walk_one(walk_fn fn, void *ctx, const char *text, size_t len, char *err, size_t errlen)
{
	struct walk *w = walk_new(fn, ctx, err, errlen);
	int r;

	if (!w)
		return -ENOMEM;
	r = walk_text(w, 0, "(file)", text, len);
	free(w);
	return r;
}

/* The whole configuration C walked with FN and CTX: walk_conf's result, or -ENOMEM. */
static int walk_all(const struct nginx_conf *c, walk_fn fn, void *ctx, char *err, size_t errlen)
{
	struct walk *w = walk_new(fn, ctx, err, errlen);
	int r;

	if (!w)
		return -ENOMEM;
	r = walk_conf(w, c);
	free(w);
	return r;
}

struct find_q {
	const char *context, *name;
	struct nginx_conf_directive *out;
};

static int fill_directive(const struct lexer *lx, size_t file, struct nginx_conf_directive *out, char *err,
			  size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->file = file;
	out->line = lx->args[0].line;
	out->start = lx->args[0].off;
	out->nargs = lx->nargs - 1;
	for (size_t i = 1; i < lx->nargs && i <= NGINX_CONF_VALUE_ARGS; i++) {
		if (arg_value(lx->text, &lx->args[i], out->args[i - 1], NGINX_CONF_WORD_MAX) < 0) {
			str_err(err, errlen, "line %u: argument %zu longer than %d bytes", out->line, i,
				NGINX_CONF_WORD_MAX - 1);
			return -EINVAL;
		}
	}
	return 0;
}

static int find_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct find_q *q = w->ctx;
	char ctx[NGINX_CONF_CONTEXT_MAX];
	int r;

	if (ev != ';' || !arg_is(lx->text, &lx->args[0], q->name))
		return 0;
	walk_context(w, ctx, sizeof(ctx));
	if (strcmp(ctx, q->context) != 0)
		return 0;
	r = fill_directive(lx, file, q->out, w->err, w->errlen);
	return r < 0 ? r : 1;
}

int nginx_conf_find(const struct nginx_conf *c, const char *context, const char *name,
		    struct nginx_conf_directive *out, char *err, size_t errlen)
{
	struct find_q q = { .context = context, .name = name, .out = out };
	int r = walk_all(c, find_fn, &q, err, errlen);

	if (r < 0)
		return r;
	return r == 1 ? 0 : -ENOENT;
}

struct nested_q {
	const char *context, *name;
	struct nginx_conf_directive *first;
	char *first_context;
	size_t first_contextlen, count;
};

/* Whether context path CTX has the block NAME as one of its components ("http/upstream" has "upstream"). */
static bool has_component(const char *ctx, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = ctx; p; p = strchr(p, '/'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && (p[n] == '/' || p[n] == '\0'))
			return true;
	return false;
}

static int nested_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct nested_q *q = w->ctx;
	char ctx[NGINX_CONF_CONTEXT_MAX];
	size_t n = strlen(q->context);
	int r;

	if (ev != ';' || !arg_is(lx->text, &lx->args[0], q->name))
		return 0;
	walk_context(w, ctx, sizeof(ctx));
	/* Inside CONTEXT's blocks; an upstream block's directive of the same name is another directive
	 * (keepalive_requests there counts the requests of an upstream connection). */
	if (strncmp(ctx, q->context, n) != 0 || ctx[n] != '/' || has_component(ctx + n + 1, "upstream"))
		return 0;
	if (q->count++ == 0) {
		r = fill_directive(lx, file, q->first, w->err, w->errlen);
		if (r < 0)
			return r;
		snprintf(q->first_context, q->first_contextlen, "%s", ctx);
	}
	return 0;
}

int nginx_conf_nested(const struct nginx_conf *c, const char *context, const char *name,
		      struct nginx_conf_directive *first, char *first_context, size_t first_contextlen, size_t *count,
		      char *err, size_t errlen)
{
	struct nested_q q = { .context = context, .name = name, .first = first, .first_context = first_context,
			      .first_contextlen = first_contextlen };
	int r = walk_all(c, nested_fn, &q, err, errlen);

	*count = r < 0 ? 0 : q.count;
	return r < 0 ? r : 0;
}

struct each_q {
	const char *context, *name;
	bool any; /* every context (one file alone) */
	struct nginx_conf_found *v;
	size_t n, cap;
};

static int each_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct each_q *q = w->ctx;
	char ctx[NGINX_CONF_CONTEXT_MAX];
	size_t n = strlen(q->context);
	int r;

	if (ev != ';' || !arg_is(lx->text, &lx->args[0], q->name))
		return 0;
	walk_context(w, ctx, sizeof(ctx));
	if (!q->any && strcmp(ctx, q->context) != 0 &&
	    (strncmp(ctx, q->context, n) != 0 || ctx[n] != '/' || has_component(ctx + n + 1, "upstream")))
		return 0;
	/* A file included twice holds one directive, which one edit changes: it is listed once. */
	for (size_t i = 0; i < q->n; i++)
		if (q->v[i].d.file == file && q->v[i].d.start == lx->args[0].off)
			return 0;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 4;
		struct nginx_conf_found *v;

		if (q->n >= NGINX_CONF_EACH_MAX) {
			str_err(w->err, w->errlen, "%s is set in more than %d places", q->name, NGINX_CONF_EACH_MAX);
			return -EINVAL;
		}
		v = realloc(q->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		q->v = v;
		q->cap = cap;
	}
	r = fill_directive(lx, file, &q->v[q->n].d, w->err, w->errlen);
	if (r < 0)
		return r;
	snprintf(q->v[q->n].context, sizeof(q->v[q->n].context), "%s", ctx);
	q->n++;
	return 0;
}

int nginx_conf_find_each(const struct nginx_conf *c, const char *context, const char *name,
			 struct nginx_conf_found **out, size_t *n, char *err, size_t errlen)
{
	struct each_q q = { .context = context, .name = name };
	int r = walk_all(c, each_fn, &q, err, errlen);

	*out = NULL;
	*n = 0;
	if (r < 0) {
		free(q.v);
		return r;
	}
	*out = q.v;
	*n = q.n;
	return 0;
}

int nginx_conf_file_find(const char *text, size_t len, const char *name, struct nginx_conf_directive *out,
			 char *err, size_t errlen)
{
	struct find_q q = { .context = "main", .name = name, .out = out };
	int r = walk_one(find_fn, &q, text, len, err, errlen);

	if (r < 0)
		return r;
	return r == 1 ? 0 : -ENOENT;
}

/* ---- the public walk -------------------------------------------------------------------------------------- */

struct visit_q {
	nginx_conf_visit_fn fn;
	void *ctx;
	char context[NGINX_CONF_CONTEXT_MAX];
};

static int visit(struct walk *w, struct nginx_conf_node *n)
{
	struct visit_q *q = w->ctx;

	walk_context(w, q->context, sizeof(q->context));
	n->context = q->context;
	n->depth = w->sp;
	return q->fn(q->ctx, n);
}

static int visit_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct nginx_conf_node n = { .event = ev == '{' ? NGINX_CONF_BLOCK : NGINX_CONF_DIRECTIVE, .file = file,
				     .line = lx->args[0].line, .start = lx->args[0].off, .end = lx->event_pos,
				     .nwords = lx->nargs, .priv = lx };

	return visit(w, &n);
}

static int visit_close(struct walk *w, size_t file, unsigned line, size_t pos)
{
	struct nginx_conf_node n = { .event = NGINX_CONF_BLOCK_END, .file = file, .line = line, .start = pos,
				     .end = pos };
	int r;

	/* Shown where the block stands, as its start was: outside itself. */
	w->sp--;
	r = visit(w, &n);
	w->sp++;
	return r;
}

static int visit_include(struct walk *w, size_t file)
{
	struct nginx_conf_node n = { .event = NGINX_CONF_INCLUDE, .file = w->incl_file, .line = w->incl_line,
				     .start = w->incl_start, .end = w->incl_end, .included = file };

	return visit(w, &n);
}

int nginx_conf_walk(const struct nginx_conf *c, nginx_conf_visit_fn fn, void *ctx, char *err, size_t errlen)
{
	struct visit_q q = { .fn = fn, .ctx = ctx };
	struct walk *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	str_err(err, errlen, "%s", "");
	w->fn = visit_fn;
	w->on_close = visit_close;
	w->on_include = visit_include;
	w->ctx = &q;
	w->err = err;
	w->errlen = errlen;
	r = walk_conf(w, c);
	free(w);
	return r;
}

int nginx_conf_node_word(const struct nginx_conf_node *node, size_t i, char *buf, size_t buflen)
{
	const struct lexer *lx = node->priv;

	if (!lx || i >= node->nwords || i >= lx->nargs)
		return -EINVAL;
	return arg_value(lx->text, &lx->args[i], buf, buflen);
}

int nginx_conf_node_span(const struct nginx_conf_node *node, size_t i, size_t *off, size_t *end)
{
	const struct lexer *lx = node->priv;

	if (!lx || i >= node->nwords || i >= lx->nargs)
		return -EINVAL;
	*off = lx->args[i].off;
	*end = lx->args[i].end;
	return 0;
}

/* ---- listen directives ------------------------------------------------------------------------------------ */

struct listens_q {
	struct nginx_listen *v;
	size_t n, cap;
};

static int parse_port(const char *s, uint16_t *out)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

/* The address of a listen directive, as ngx_parse_url reads it. 0 or -EINVAL. */
static int parse_listen_addr(const char *s, enum nginx_listen_module module, struct nginx_listen *l)
{
	char host[NGINX_CONF_ADDR_MAX];
	const char *colon;
	unsigned char bin[16];
	bool all_digits = true;

	if (!*s || strlen(s) >= NGINX_CONF_ADDR_MAX)
		return -EINVAL;
	l->port = module == NGINX_LISTEN_HTTP ? 80 : 0;
	if (strncmp(s, "unix:", 5) == 0) {
		l->family = AF_UNIX;
		l->port = 0;
		memcpy(l->addr, s, strlen(s) + 1);
		return 0;
	}
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		size_t n;

		if (!close || (n = (size_t)(close - s - 1)) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, n);
		host[n] = '\0';
		if (close[1] == ':') {
			if (parse_port(close + 2, &l->port) < 0)
				return -EINVAL;
		} else if (close[1] != '\0') {
			return -EINVAL;
		}
		if (inet_pton(AF_INET6, host, bin) != 1)
			return -EINVAL;
		l->family = AF_INET6;
		inet_ntop(AF_INET6, bin, l->addr, sizeof(l->addr));
		l->wildcard = strcmp(l->addr, "::") == 0;
		return 0;
	}
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			all_digits = false;
	if (all_digits) {
		if (parse_port(s, &l->port) < 0)
			return -EINVAL;
		snprintf(host, sizeof(host), "*");
	} else if ((colon = strrchr(s, ':'))) {
		size_t n = (size_t)(colon - s);

		if (n == 0 || n >= sizeof(host) || parse_port(colon + 1, &l->port) < 0)
			return -EINVAL;
		memcpy(host, s, n);
		host[n] = '\0';
	} else {
		memcpy(host, s, strlen(s) + 1);
	}
	if (strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0) {
		l->family = AF_INET;
		snprintf(l->addr, sizeof(l->addr), "0.0.0.0");
		l->wildcard = true;
	} else if (inet_pton(AF_INET, host, bin) == 1) {
		l->family = AF_INET;
		inet_ntop(AF_INET, bin, l->addr, sizeof(l->addr));
	} else {
		l->family = AF_UNSPEC;
		for (char *p = host; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		snprintf(l->addr, sizeof(l->addr), "%s", host);
	}
	return 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Parameters that make nginx bind an address:port on its own, and which nginx allows once per address:port. */
static bool is_socket_option(const char *p)
{
	static const char *const eq[] = { "backlog=", "rcvbuf=", "sndbuf=", "accept_filter=", "ipv6only=",
					  "so_keepalive=", "fastopen=", "setfib=" };
	static const char *const word[] = { "bind", "deferred", "reuseport" };

	for (size_t i = 0; i < sizeof(eq) / sizeof(eq[0]); i++)
		if (has_prefix(p, eq[i]))
			return true;
	for (size_t i = 0; i < sizeof(word) / sizeof(word[0]); i++)
		if (strcmp(p, word[i]) == 0)
			return true;
	return false;
}

static int parse_backlog(const char *s, int64_t *out)
{
	int64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p) || v > (INT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	*out = v;
	return 0;
}

static int listens_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct listens_q *q = w->ctx;
	struct nginx_listen l;
	char word[NGINX_CONF_WORD_MAX];

	if (ev != ';' || w->sp != 2 || strcmp(w->stack[1], "server") != 0 || !arg_is(lx->text, &lx->args[0], "listen"))
		return 0;
	memset(&l, 0, sizeof(l));
	if (strcmp(w->stack[0], "http") == 0)
		l.module = NGINX_LISTEN_HTTP;
	else if (strcmp(w->stack[0], "stream") == 0)
		l.module = NGINX_LISTEN_STREAM;
	else if (strcmp(w->stack[0], "mail") == 0)
		l.module = NGINX_LISTEN_MAIL;
	else
		return 0;
	l.file = file;
	l.line = lx->args[0].line;
	l.start = lx->args[0].off;
	if (lx->nargs < 2 || arg_value(lx->text, &lx->args[1], word, sizeof(word)) < 0 ||
	    parse_listen_addr(word, l.module, &l)) {
		str_err(w->err, w->errlen, "%s:%u: a listen address this parser does not understand",
			w->c ? w->c->files[file].path : "", l.line);
		return -EINVAL;
	}
	for (size_t i = 2; i < lx->nargs; i++) {
		if (arg_value(lx->text, &lx->args[i], word, sizeof(word)) < 0)
			continue;
		/* quic listens are UDP sockets too (HTTP/3): no accept queue, no TCP socket options */
		if (strcmp(word, "udp") == 0 || strcmp(word, "quic") == 0)
			l.udp = true;
		if (is_socket_option(word))
			l.options = true;
		if (strcmp(word, "reuseport") == 0)
			l.reuseport = true;
		if (strcmp(word, "deferred") == 0)
			l.deferred = true;
		if (has_prefix(word, "backlog=")) {
			if (parse_backlog(word + 8, &l.backlog) < 0) {
				str_err(w->err, w->errlen, "%s:%u: invalid %s", w->c ? w->c->files[file].path : "",
					l.line, word);
				return -EINVAL;
			}
			l.has_backlog = true;
		}
	}
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		struct nginx_listen *v;

		if (q->n >= NGINX_CONF_LISTENS_MAX) {
			str_err(w->err, w->errlen, "more than %d listen directives", NGINX_CONF_LISTENS_MAX);
			return -EINVAL;
		}
		v = realloc(q->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		q->v = v;
		q->cap = cap;
	}
	q->v[q->n++] = l;
	return 0;
}

static bool same_socket(const struct nginx_listen *a, const struct nginx_listen *b)
{
	return a->module == b->module && a->family == b->family && a->port == b->port && strcmp(a->addr, b->addr) == 0;
}

/* Mark the directive of each address:port that carries backlog= (see struct nginx_listen). */
static void mark_targets(struct nginx_listen *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct nginx_listen *l = &v[i];
		size_t pick = i;
		bool options = false, covered = false;

		if (l->family == AF_UNIX || l->udp || l->port == 0)
			continue;
		/* Only the first directive of a group decides, so each group is decided once. */
		for (size_t j = 0; j < i; j++)
			if (same_socket(&v[j], l))
				goto next;
		for (size_t j = i; j < n; j++) {
			if (!same_socket(&v[j], l) || !v[j].options)
				continue;
			if (!options)
				pick = j;
			options = true;
		}
		if (!options && !l->wildcard) {
			for (size_t j = 0; j < n; j++) {
				const struct nginx_listen *o = &v[j];

				if (o->module == l->module && o->wildcard && !o->udp && o->port == l->port &&
				    (l->family == AF_UNSPEC || o->family == l->family))
					covered = true;
			}
		}
		if (!covered)
			v[pick].target = true;
next:;
	}
}

int nginx_conf_listens(const struct nginx_conf *c, struct nginx_listen **out, size_t *n, char *err, size_t errlen)
{
	struct listens_q q = { 0 };
	int r;

	*out = NULL;
	*n = 0;
	r = walk_all(c, listens_fn, &q, err, errlen);
	if (r < 0) {
		free(q.v);
		return r;
	}
	mark_targets(q.v, q.n);
	*out = q.v;
	*n = q.n;
	return 0;
}

/* ---- edits ------------------------------------------------------------------------------------------------ */

/* Replace [off, off+del) of the original text by INS (malloc'd, owned by the list). */
struct splice {
	size_t off, del;
	size_t seq; /* insertion order: splices at one offset stay in the order they were added */
	char *ins;
};

struct edits {
	struct splice *v;
	size_t n, cap;
};

static int edits_add(struct edits *e, size_t off, size_t del, const char *ins)
{
	char *copy;

	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 8;
		struct splice *v = realloc(e->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		e->v = v;
		e->cap = cap;
	}
	copy = strdup(ins);
	if (!copy)
		return -ENOMEM;
	e->v[e->n].off = off;
	e->v[e->n].del = del;
	e->v[e->n].ins = copy;
	e->v[e->n].seq = e->n;
	e->n++;
	return 0;
}

static void edits_free(struct edits *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].ins);
	free(e->v);
	memset(e, 0, sizeof(*e));
}

static int cmp_splice(const void *a, const void *b)
{
	const struct splice *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* TEXT with the splices applied (they must not overlap). */
static int edits_apply(struct edits *e, const char *text, size_t len, char **out, size_t *outlen)
{
	size_t total = len, at = 0, o = 0;
	char *buf;

	if (e->n)
		qsort(e->v, e->n, sizeof(*e->v), cmp_splice);
	for (size_t i = 0; i < e->n; i++)
		total += strlen(e->v[i].ins);
	buf = malloc(total + 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < e->n; i++) {
		size_t k = strlen(e->v[i].ins);

		memcpy(buf + o, text + at, e->v[i].off - at);
		o += e->v[i].off - at;
		memcpy(buf + o, e->v[i].ins, k);
		o += k;
		at = e->v[i].off + e->v[i].del;
	}
	memcpy(buf + o, text + at, len - at);
	o += len - at;
	buf[o] = '\0';
	*out = buf;
	*outlen = o;
	return 0;
}

struct param_q {
	const size_t *starts;
	size_t n;
	bool *hit;
	const char *name;  /* "backlog" (NAME=VALUE) or a flag word ("reuseport", "deferred") */
	bool flag;
	const char *value; /* NAME=VALUE's VALUE, "" for a flag set; NULL: the parameter goes */
	bool strip;        /* remove the parameter from every listen instead */
	struct edits e;
};

static bool param_is(const struct param_q *q, const char *word)
{
	size_t k = strlen(q->name);

	return q->flag ? strcmp(word, q->name) == 0 : strncmp(word, q->name, k) == 0 && word[k] == '=';
}

static int param_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct param_q *q = w->ctx;
	char word[NGINX_CONF_WORD_MAX], ins[NGINX_CONF_WORD_MAX + 2];
	bool found = false, remove = q->strip || !q->value;
	size_t k;
	int r;

	(void)file;
	if (ev != ';' || !arg_is(lx->text, &lx->args[0], "listen"))
		return 0;
	if (!q->strip) {
		for (k = 0; k < q->n; k++)
			if (q->starts[k] == lx->args[0].off)
				break;
		if (k == q->n)
			return 0;
		q->hit[k] = true;
	}
	if (q->flag)
		snprintf(ins, sizeof(ins), "%s", q->name);
	else
		snprintf(ins, sizeof(ins), "%s=%s", q->name, q->value ? q->value : "");
	for (size_t i = 2; i < lx->nargs; i++) {
		if (arg_value(lx->text, &lx->args[i], word, sizeof(word)) < 0 || !param_is(q, word))
			continue;
		/* A parameter goes with the blank before it (a second one too); a flag already there stays as it is
		 * written, a value is replaced. */
		if (remove || found)
			r = edits_add(&q->e, lx->args[i - 1].end, lx->args[i].end - lx->args[i - 1].end, "");
		else if (!q->flag)
			r = edits_add(&q->e, lx->args[i].off, lx->args[i].end - lx->args[i].off, ins);
		else
			r = 0;
		if (r < 0)
			return r;
		found = true;
	}
	if (!found && !remove) {
		memmove(ins + 1, ins, strlen(ins) + 1);
		ins[0] = ' ';
		r = edits_add(&q->e, lx->args[lx->nargs - 1].end, 0, ins);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A listen parameter the editor may set: backlog=, rcvbuf=, sndbuf= with a value, or the flag reuseport or
 * deferred. */
static int param_kind(const char *name, bool *flag)
{
	static const char *const eq[] = { "backlog", "rcvbuf", "sndbuf" };

	*flag = strcmp(name, "reuseport") == 0 || strcmp(name, "deferred") == 0;
	for (size_t i = 0; i < sizeof(eq) / sizeof(eq[0]) && !*flag; i++)
		if (strcmp(name, eq[i]) == 0)
			return 0;
	return *flag ? 0 : -EINVAL;
}

int nginx_conf_set_listen_param(const char *text, size_t len, const size_t *starts, size_t n, const char *name,
				const char *value, char **out, size_t *outlen, char *err, size_t errlen)
{
	struct param_q q = { .starts = starts, .n = n, .name = name, .value = value };
	struct walk *w;
	int r;

	*out = NULL;
	*outlen = 0;
	if (!name || param_kind(name, &q.flag) < 0) {
		str_err(err, errlen, "'%s' is not a listen parameter the agent edits", name ? name : "");
		return -EINVAL;
	}
	if (value && (q.flag ? value[0] != '\0' : !value[0] || strlen(value) > 32 || strpbrk(value, " \t\r\n;{}\"'#\\"))) {
		str_err(err, errlen, "invalid value for listen parameter %s", name);
		return -EINVAL;
	}
	q.hit = calloc(n ? n : 1, sizeof(*q.hit));
	w = calloc(1, sizeof(*w));
	if (!q.hit || !w) {
		free(q.hit);
		free(w);
		return -ENOMEM;
	}
	w->fn = param_fn;
	w->ctx = &q;
	w->err = err;
	w->errlen = errlen;
	r = walk_text(w, 0, "(file)", text, len);
	for (size_t k = 0; r == 0 && k < n; k++) {
		if (!q.hit[k]) {
			str_err(err, errlen, "no listen directive at offset %zu", starts[k]);
			r = -EINVAL;
		}
	}
	if (r == 0)
		r = edits_apply(&q.e, text, len, out, outlen);
	edits_free(&q.e);
	free(q.hit);
	free(w);
	return r;
}

int nginx_conf_set_backlog(const char *text, size_t len, const size_t *starts, size_t n, int64_t value, char **out,
			   size_t *outlen, char *err, size_t errlen)
{
	char v[24];

	*out = NULL;
	*outlen = 0;
	if (value <= 0 || value > INT32_MAX) {
		str_err(err, errlen, "backlog %lld out of range", (long long)value);
		return -EINVAL;
	}
	snprintf(v, sizeof(v), "%lld", (long long)value);
	return nginx_conf_set_listen_param(text, len, starts, n, "backlog", v, out, outlen, err, errlen);
}

/* TEXT without parameter NAME on any listen (into *OUT when OUT is not NULL), and how many it had (*COUNT). */
static int strip_param(const char *text, size_t len, const char *name, char **out, size_t *outlen, size_t *count)
{
	struct param_q q = { .strip = true, .name = name };
	struct walk *w;
	int r;

	if (param_kind(name, &q.flag) < 0)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = param_fn;
	w->ctx = &q;
	r = walk_text(w, 0, "(file)", text, len);
	if (r == 0 && out)
		r = edits_apply(&q.e, text, len, out, outlen);
	*count = q.e.n;
	edits_free(&q.e);
	free(w);
	return r;
}

bool nginx_conf_same_but_listen_param(const char *a, size_t alen, const char *b, size_t blen, const char *name)
{
	char *sa = NULL, *sb = NULL;
	size_t la = 0, lb = 0, na, nb;
	bool same = false;

	if (strip_param(a, alen, name, &sa, &la, &na) == 0 && strip_param(b, blen, name, &sb, &lb, &nb) == 0)
		same = la == lb && memcmp(sa, sb, la) == 0;
	free(sa);
	free(sb);
	return same;
}

int nginx_conf_listen_param_count(const char *text, size_t len, const char *name)
{
	size_t n = 0;
	int r = strip_param(text, len, name, NULL, NULL, &n);

	return r < 0 ? r : (int)(n > INT32_MAX ? INT32_MAX : n);
}

bool nginx_conf_same_but_backlog(const char *a, size_t alen, const char *b, size_t blen)
{
	return nginx_conf_same_but_listen_param(a, alen, b, blen, "backlog");
}

struct directive_q {
	const char *name, *args;
	bool found;
	struct edits e;
	const char *text;
	size_t len;
};

static int directive_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct directive_q *q = w->ctx;
	char line[NGINX_CONF_LINE_MAX];
	size_t off = lx->args[0].off, end = lx->event_pos + 1;

	(void)file;
	if (w->sp != 0 || !arg_is(lx->text, &lx->args[0], q->name))
		return 0;
	if (ev != ';') {
		str_err(w->err, w->errlen, "line %u: %s is a block here", lx->args[0].line, q->name);
		return -EINVAL;
	}
	if (q->args && !q->found) {
		snprintf(line, sizeof(line), "%s %s;", q->name, q->args);
		q->found = true;
		return edits_add(&q->e, off, end - off, line);
	}
	/* Removed with its line when nothing else is on it. */
	if ((off == 0 || q->text[off - 1] == '\n') && end < q->len && q->text[end] == '\n')
		end++;
	q->found = true;
	return edits_add(&q->e, off, end - off, "");
}

int nginx_conf_set_directive(const char *text, size_t len, const char *name, const char *args, char **out,
			     size_t *outlen, char *err, size_t errlen)
{
	struct directive_q q = { .name = name, .args = args, .text = text, .len = len };
	struct walk *w;
	char line[NGINX_CONF_LINE_MAX];
	int r;

	*out = NULL;
	*outlen = 0;
	if (!name[0] || strlen(name) + (args ? strlen(args) : 0) + 4 > NGINX_CONF_LINE_MAX) {
		str_err(err, errlen, "directive too long");
		return -EINVAL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = directive_fn;
	w->ctx = &q;
	w->err = err;
	w->errlen = errlen;
	r = walk_text(w, 0, "(file)", text, len);
	if (r == 0 && !q.found && args) {
		snprintf(line, sizeof(line), "%s%s %s;\n", len && text[len - 1] != '\n' ? "\n" : "", name, args);
		r = edits_add(&q.e, len, 0, line);
	}
	if (r == 0)
		r = edits_apply(&q.e, text, len, out, outlen);
	edits_free(&q.e);
	free(w);
	return r;
}

/* ---- one directive at an offset --------------------------------------------------------------------------- */

struct at_q {
	size_t start;
	const char *name, *args;
	struct nginx_conf_directive *out; /* nginx_conf_file_at */
	bool found;
	struct edits e;
};

static int at_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct at_q *q = w->ctx;
	const struct arg *last = &lx->args[lx->nargs - 1];
	int r;

	(void)file;
	if (lx->args[0].off != q->start || !arg_is(lx->text, &lx->args[0], q->name))
		return 0;
	if (ev != ';') {
		str_err(w->err, w->errlen, "line %u: %s is a block here", lx->args[0].line, q->name);
		return -EINVAL;
	}
	q->found = true;
	if (q->out) {
		r = fill_directive(lx, 0, q->out, w->err, w->errlen);
	} else if (lx->nargs == 1) {
		char ins[NGINX_CONF_LINE_MAX];

		snprintf(ins, sizeof(ins), " %s", q->args);
		r = edits_add(&q->e, last->end, 0, ins);
	} else {
		r = edits_add(&q->e, lx->args[1].off, last->end - lx->args[1].off, q->args);
	}
	return r < 0 ? r : 1;
}

static int walk_at(struct at_q *q, const char *text, size_t len, char *err, size_t errlen)
{
	int r = walk_one(at_fn, q, text, len, err, errlen);

	if (r < 0)
		return r;
	if (!q->found) {
		str_err(err, errlen, "no %s directive at offset %zu", q->name, q->start);
		return -ENOENT;
	}
	return 0;
}

int nginx_conf_set_args_at(const char *text, size_t len, size_t start, const char *name, const char *args,
			   char **out, size_t *outlen, char *err, size_t errlen)
{
	struct at_q q = { .start = start, .name = name, .args = args };
	int r;

	*out = NULL;
	*outlen = 0;
	if (!name[0] || !args || !args[0] || strlen(args) + 2 > NGINX_CONF_LINE_MAX) {
		str_err(err, errlen, "arguments empty or too long");
		return -EINVAL;
	}
	r = walk_at(&q, text, len, err, errlen);
	if (r == 0)
		r = edits_apply(&q.e, text, len, out, outlen);
	edits_free(&q.e);
	return r;
}

int nginx_conf_file_at(const char *text, size_t len, size_t start, const char *name, struct nginx_conf_directive *out,
		       char *err, size_t errlen)
{
	struct at_q q = { .start = start, .name = name, .out = out };

	return walk_at(&q, text, len, err, errlen);
}

/* ---- a batch of edits, and the way back from the noted ones --------------------------------------------------- */

/* The start of the line that holds POS. */
static size_t line_start(const char *text, size_t pos)
{
	while (pos > 0 && text[pos - 1] != '\n')
		pos--;
	return pos;
}

/* The end of the line that holds POS: its '\n', or LEN. */
static size_t line_end(const char *text, size_t len, size_t pos)
{
	const char *nl = memchr(text + pos, '\n', len - pos);

	return nl ? (size_t)(nl - text) : len;
}

static bool blanks_only(const char *text, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (text[i] != ' ' && text[i] != '\t')
			return false;
	return true;
}

/* Whether NOTE may be written after "# ": printable, one line, no '#'. */
static bool note_ok(const char *note)
{
	if (!note || !note[0] || strlen(note) > 128)
		return false;
	for (const char *p = note; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == '#' || *p == 0x7f)
			return false;
	return true;
}

/* Whether LINE (LEN bytes) is exactly one directive: NAME ARGS ';' and blanks, no block, no comment. */
static bool one_directive(const char *line, size_t len)
{
	struct lexer lx;
	char err[64];
	int ev = 0, r;
	bool ok;

	if (memchr(line, '\n', len) || memchr(line, '#', len) != NULL)
		return false;
	lex_init(&lx, line, len);
	r = lex_next(&lx, len, &ev, err, sizeof(err));
	ok = r == 1 && ev == ';' && blanks_only(line, lx.pos, len);
	lex_free(&lx);
	return ok;
}

/* A block waiting for its '}' to get lines added (an NGINX_CONF_EDIT_ADD). */
struct open_add {
	size_t edit;     /* index into the edits */
	size_t level;    /* w->sp inside the block */
	size_t open_at;  /* offset of the block's name */
	char indent[64]; /* of the block's first line inside, when it starts its line */
	bool have_indent;
};

struct batch_q {
	const struct nginx_conf_edit *e;
	size_t n;
	bool *hit;
	const char *text;
	size_t len;
	struct edits sp;
	struct open_add open[NGINX_CONF_DEPTH_MAX];
	size_t nopen;
	size_t *noted_lines; /* line starts that got a note this batch: one note per line */
	size_t nnoted;
};

/* The leading blanks of the line at LS (up to the first other byte, at most 63) into OUT. */
static void indent_of(const char *text, size_t len, size_t ls, char *out, size_t n)
{
	size_t k = 0;

	while (ls + k < len && (text[ls + k] == ' ' || text[ls + k] == '\t') && k + 1 < n)
		k++;
	memcpy(out, text + ls, k);
	out[k] = '\0';
}

/* The arguments of the directive in LX become E->text; with a note, its arguments as written before go into a
 * comment at the end of its line. */
static int batch_args(struct walk *w, struct batch_q *q, const struct nginx_conf_edit *e, const struct lexer *lx)
{
	const struct arg *last = &lx->args[lx->nargs - 1];
	size_t ls, le, cm;
	char *ins;
	int r;

	if (!e->text || !e->text[0] || strchr(e->text, '\n') || strlen(e->text) + 2 > NGINX_CONF_LINE_MAX) {
		str_err(w->err, w->errlen, "line %u: the new arguments of %s are empty, too long or span lines",
			lx->args[0].line, e->name);
		return -EINVAL;
	}
	if (lx->nargs == 1) {
		ins = malloc(strlen(e->text) + 2);
		if (!ins)
			return -ENOMEM;
		sprintf(ins, " %s", e->text);
		r = edits_add(&q->sp, last->end, 0, ins);
		free(ins);
	} else {
		r = edits_add(&q->sp, lx->args[1].off, last->end - lx->args[1].off, e->text);
	}
	if (r < 0 || !e->note)
		return r;
	ls = line_start(q->text, lx->args[0].off);
	le = line_end(q->text, q->len, lx->event_pos);
	/* What follows on the line may be anything that ends there outside a string: the note goes after it. */
	{
		struct lexer tail;
		char terr[64];
		int tev;

		lex_init(&tail, q->text, le);
		tail.pos = lx->event_pos + 1;
		tail.line = lx->args[0].line;
		while ((cm = (size_t)lex_next(&tail, le, &tev, terr, sizeof(terr))) == 1)
			tail.nargs = 0;
		cm = cm == 0 && !tail.quoted && !tail.s_quoted && !tail.d_quoted; /* a comment is fine: the note joins it */
		lex_free(&tail);
		if (!cm) {
			str_err(w->err, w->errlen, "line %u: the line of %s ends inside a string", lx->args[0].line,
				e->name);
			return -EINVAL;
		}
	}
	if (memchr(q->text + lx->args[0].off, '\n', lx->event_pos - lx->args[0].off)) {
		/* the note goes on the line of the ';', and the way back looks for the name there */
		str_err(w->err, w->errlen, "line %u: %s spans lines", lx->args[0].line, e->name);
		return -EINVAL;
	}
	for (size_t i = 0; i < q->nnoted; i++)
		if (q->noted_lines[i] == ls) {
			str_err(w->err, w->errlen, "line %u: two notes on one line", lx->args[0].line);
			return -EINVAL;
		}
	/* A line that has the note already keeps it: it holds the arguments of before the first edit. */
	{
		char mark[160];
		size_t ml = (size_t)snprintf(mark, sizeof(mark), " # %s: ", e->note);

		if (le - ls >= ml && memmem(q->text + ls, le - ls, mark, ml))
			return 0;
	}
	{
		size_t raw = lx->nargs > 1 ? last->end - lx->args[1].off : 0;
		size_t need = strlen(e->note) + strlen(e->name) + raw + 16;
		size_t *v = realloc(q->noted_lines, (q->nnoted + 1) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		q->noted_lines = v;
		q->noted_lines[q->nnoted++] = ls;
		ins = malloc(need);
		if (!ins)
			return -ENOMEM;
		snprintf(ins, need, " # %s: %s was %.*s", e->note, e->name, (int)raw,
			 raw ? q->text + lx->args[1].off : "");
		r = edits_add(&q->sp, le, 0, ins);
		free(ins);
	}
	return r;
}

static int batch_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct batch_q *q = w->ctx;
	bool matched = false;
	int r;

	(void)file;
	/* The first line inside a block that waits for lines: their indentation. */
	if (q->nopen && q->open[q->nopen - 1].level == w->sp && !q->open[q->nopen - 1].have_indent) {
		struct open_add *o = &q->open[q->nopen - 1];
		size_t ls = line_start(q->text, lx->args[0].off);

		if (blanks_only(q->text, ls, lx->args[0].off) && lx->args[0].off - ls < sizeof(o->indent)) {
			indent_of(q->text, q->len, ls, o->indent, sizeof(o->indent));
			o->have_indent = true;
		}
	}
	for (size_t i = 0; i < q->n; i++) {
		const struct nginx_conf_edit *e = &q->e[i];

		if (e->op == NGINX_CONF_EDIT_APPEND || e->start != lx->args[0].off)
			continue;
		if (!arg_is(lx->text, &lx->args[0], e->name))
			continue;
		if (q->hit[i] || matched) {
			str_err(w->err, w->errlen, "line %u: %s edited twice", lx->args[0].line, e->name);
			return -EINVAL;
		}
		q->hit[i] = matched = true;
		if (e->op == NGINX_CONF_EDIT_ARGS) {
			if (ev != ';') {
				str_err(w->err, w->errlen, "line %u: %s is a block here", lx->args[0].line, e->name);
				return -EINVAL;
			}
			r = batch_args(w, q, e, lx);
			if (r < 0)
				return r;
			continue;
		}
		if (ev != '{') {
			str_err(w->err, w->errlen, "line %u: %s is not a block", lx->args[0].line, e->name);
			return -EINVAL;
		}
		if (q->nopen == NGINX_CONF_DEPTH_MAX) {
			str_err(w->err, w->errlen, "blocks nested too deep");
			return -EINVAL;
		}
		q->open[q->nopen] = (struct open_add){ .edit = i, .level = w->sp + 1, .open_at = lx->args[0].off };
		q->nopen++;
	}
	return 0;
}

/* The '}' of a block that waits for lines: they go on lines of their own before it. */
static int batch_close(struct walk *w, size_t file, unsigned line, size_t pos)
{
	struct batch_q *q = w->ctx;
	struct open_add *o;
	const struct nginx_conf_edit *e;
	const char *p, *nl;
	char indent[64];
	size_t ls = line_start(q->text, pos), cap, k = 0;
	bool joined, first = true;
	char *ins;
	int r;

	(void)file;
	(void)line;
	if (!q->nopen || q->open[q->nopen - 1].level != w->sp)
		return 0;
	o = &q->open[--q->nopen];
	e = &q->e[o->edit];
	joined = !blanks_only(q->text, ls, pos);
	if (joined) {
		/* The line now ends at this '}': a note of an argument edit before it on the line moves here with it,
		 * or it would follow the '}' onto another line than its directive's. */
		size_t le = line_end(q->text, q->len, pos);

		for (size_t i = 0; i < q->sp.n; i++)
			if (q->sp.v[i].off == le && q->sp.v[i].del == 0 && strncmp(q->sp.v[i].ins, " # ", 3) == 0 &&
			    strstr(q->sp.v[i].ins, " was "))
				q->sp.v[i].off = pos;
	}
	if (o->have_indent) {
		snprintf(indent, sizeof(indent), "%s", o->indent);
	} else {
		/* No line of its own inside: one tab deeper than the line the block opens on, or its '}' line. */
		indent_of(q->text, q->len, joined ? line_start(q->text, o->open_at) : ls, indent, sizeof(indent) - 1);
		strcat(indent, "\t");
	}
	cap = strlen(e->text) * 2 + 64 + (e->note ? strlen(e->note) + 16 : 0);
	for (p = e->text; *p; p++)
		cap += *p == '\n' ? strlen(indent) + (e->note ? strlen(e->note) + 16 : 0) : 0;
	ins = malloc(cap);
	if (!ins)
		return -ENOMEM;
	if (joined)
		ins[k++] = '\n';
	for (p = e->text; *p; p = nl ? nl + 1 : p + strlen(p)) {
		size_t l;

		nl = strchr(p, '\n');
		l = nl ? (size_t)(nl - p) : strlen(p);
		if (l == 0)
			continue;
		k += (size_t)snprintf(ins + k, cap - k, "%s%.*s", indent, (int)l, p);
		/* In a block closed on the line of its last directive, the first line's note also owns the line
		 * break before it (nginx_conf_unedit takes both). */
		if (e->note)
			k += (size_t)snprintf(ins + k, cap - k, " # %s%s", e->note, joined && first ? " (new line)" : "");
		ins[k++] = '\n';
		ins[k] = '\0';
		first = false;
	}
	ins[k] = '\0';
	r = edits_add(&q->sp, joined ? pos : ls, 0, ins);
	free(ins);
	return r;
}

/* Whether TEXT (an edit's) is lines of one directive each. */
static bool lines_ok(const char *text)
{
	const char *p = text, *nl;
	bool any = false;

	for (; *p; p = nl ? nl + 1 : p + strlen(p)) {
		size_t l;

		nl = strchr(p, '\n');
		l = nl ? (size_t)(nl - p) : strlen(p);
		if (l == 0)
			continue;
		if (!one_directive(p, l))
			return false;
		any = true;
	}
	return any;
}

int nginx_conf_edit(const char *text, size_t len, const struct nginx_conf_edit *edits, size_t n, char **out,
		    size_t *outlen, char *err, size_t errlen)
{
	struct batch_q *q;
	struct walk *w;
	int r = 0;

	*out = NULL;
	*outlen = 0;
	str_err(err, errlen, "%s", "");
	for (size_t i = 0; i < n; i++) {
		const struct nginx_conf_edit *e = &edits[i];

		if (e->note && !note_ok(e->note)) {
			str_err(err, errlen, "edit %zu: a note is one printable line without '#'", i);
			return -EINVAL;
		}
		if (e->op == NGINX_CONF_EDIT_ADD && (!e->text || !lines_ok(e->text))) {
			str_err(err, errlen, "edit %zu: what is added is whole directives, one per line", i);
			return -EINVAL;
		}
		if (e->op == NGINX_CONF_EDIT_APPEND) {
			char e2[128];

			if (!e->text || !e->text[0] || walk_one(NULL, NULL, e->text, strlen(e->text), e2, sizeof(e2)) != 0 ||
			    (e->note && strchr(e->text, '#'))) {
				str_err(err, errlen, "edit %zu: what is appended does not read as whole directives%s", i,
					e->note ? " without comments" : "");
				return -EINVAL;
			}
		}
		if (e->op != NGINX_CONF_EDIT_APPEND && (!e->name || !e->name[0])) {
			str_err(err, errlen, "edit %zu: no directive named", i);
			return -EINVAL;
		}
	}
	q = calloc(1, sizeof(*q));
	w = calloc(1, sizeof(*w));
	if (!q || !w || !(q->hit = calloc(n ? n : 1, sizeof(*q->hit)))) {
		if (q)
			free(q->hit);
		free(q);
		free(w);
		return -ENOMEM;
	}
	q->e = edits;
	q->n = n;
	q->text = text;
	q->len = len;
	w->fn = batch_fn;
	w->on_close = batch_close;
	w->ctx = q;
	w->err = err;
	w->errlen = errlen;
	r = walk_text(w, 0, "(file)", text, len);
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct nginx_conf_edit *e = &edits[i];

		if (e->op == NGINX_CONF_EDIT_APPEND) {
			size_t l = strlen(e->text), lines = 1, k = 0;
			bool joined = len && text[len - 1] != '\n', first = true;
			char *ins;

			for (const char *p = e->text; *p; p++)
				lines += *p == '\n';
			ins = malloc(l + 3 + (e->note ? lines * (strlen(e->note) + 16) : 0));
			if (!ins) {
				r = -ENOMEM;
				break;
			}
			if (joined)
				ins[k++] = '\n';
			/* Line by line, each with the note (the first one's owning the line break added before it). */
			for (const char *p = e->text, *nl; *p; p = nl ? nl + 1 : p + strlen(p)) {
				size_t ll;

				nl = strchr(p, '\n');
				ll = nl ? (size_t)(nl - p) : strlen(p);
				memcpy(ins + k, p, ll);
				k += ll;
				if (e->note && ll)
					k += (size_t)sprintf(ins + k, " # %s%s", e->note, joined && first ? " (new line)" : "");
				ins[k++] = '\n';
				first = false;
			}
			ins[k] = '\0';
			r = edits_add(&q->sp, len, 0, ins);
			free(ins);
		} else if (!q->hit[i]) {
			str_err(err, errlen, "no %s at offset %zu", e->name, e->start);
			r = -ENOENT;
		}
	}
	if (r == 0)
		r = edits_apply(&q->sp, text, len, out, outlen);
	edits_free(&q->sp);
	free(q->noted_lines);
	free(q->hit);
	free(q);
	free(w);
	return r;
}

/* A "was" note of nginx_conf_unedit: on the line [LS, LE), the arguments of NAME go back to RAW. */
struct was_note {
	size_t ls, le;
	char name[NAME_MAX_LEN];
	const char *raw;
	size_t rawlen;
	bool done;
};

struct unedit_q {
	struct was_note *v;
	size_t n;
	struct edits *sp;
};

static int unedit_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct unedit_q *q = w->ctx;

	(void)file;
	if (ev != ';')
		return 0;
	for (size_t i = 0; i < q->n; i++) {
		struct was_note *wn = &q->v[i];
		const struct arg *last = &lx->args[lx->nargs - 1];
		int r;

		if (wn->done || lx->args[0].off < wn->ls || lx->args[0].off >= wn->le ||
		    !arg_is(lx->text, &lx->args[0], wn->name))
			continue;
		wn->done = true;
		if (wn->rawlen == 0) {
			/* It had no arguments: they go with the blank the edit put before them. */
			r = edits_add(q->sp, lx->args[0].end, last->end - lx->args[0].end, "");
		} else {
			char *raw = malloc(wn->rawlen + 2);

			if (!raw)
				return -ENOMEM;
			snprintf(raw, wn->rawlen + 2, "%s%.*s", lx->nargs == 1 ? " " : "", (int)wn->rawlen, wn->raw);
			r = lx->nargs == 1 ? edits_add(q->sp, last->end, 0, raw)
					   : edits_add(q->sp, lx->args[1].off, last->end - lx->args[1].off, raw);
			free(raw);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int nginx_conf_unedit(const char *text, size_t len, const char *note, char **out, size_t *outlen, size_t *count,
		      char *err, size_t errlen)
{
	struct edits sp = { 0 };
	struct unedit_q q = { .sp = &sp };
	char mark[160];
	size_t ml, ls = 0;
	int r = 0;

	*out = NULL;
	*outlen = 0;
	*count = 0;
	str_err(err, errlen, "%s", "");
	if (!note_ok(note)) {
		str_err(err, errlen, "a note is one printable line without '#'");
		return -EINVAL;
	}
	ml = (size_t)snprintf(mark, sizeof(mark), " # %s", note);
	while (ls < len && r == 0) {
		size_t le = line_end(text, len, ls), m = 0;
		const char *tail;
		size_t tl;
		bool found = false;

		/* The last mark on the line. */
		for (size_t at = ls; at + ml <= le; at++)
			if (memcmp(text + at, mark, ml) == 0) {
				m = at;
				found = true;
			}
		if (!found) {
			ls = le + 1;
			continue;
		}
		tail = text + m + ml;
		tl = le - (m + ml);
		if (tl == 0) {
			r = edits_add(&sp, ls, (le < len ? le + 1 : le) - ls, "");
			(*count)++;
		} else if (tl == 11 && memcmp(tail, " (new line)", 11) == 0) {
			size_t from = ls > 0 && text[ls - 1] == '\n' ? ls - 1 : ls;

			/* The line break before it was added with it: both go, and its own. */
			r = edits_add(&sp, from, (le < len ? le + 1 : le) - from, "");
			(*count)++;
		} else if (tl > 2 && tail[0] == ':' && tail[1] == ' ') {
			const char *was = memmem(tail + 2, tl - 2, " was ", 5);
			struct was_note *v;
			size_t nl;

			nl = was ? (size_t)(was - tail - 2) : 0;
			if (!was || nl == 0 || nl >= NAME_MAX_LEN) {
				str_err(err, errlen, "line at offset %zu: a note of %s that does not say what was there", ls,
					note);
				r = -EINVAL;
				break;
			}
			v = realloc(q.v, (q.n + 1) * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			q.v = v;
			memset(&v[q.n], 0, sizeof(v[q.n]));
			v[q.n].ls = ls;
			v[q.n].le = le;
			memcpy(v[q.n].name, tail + 2, nl);
			v[q.n].raw = was + 5;
			v[q.n].rawlen = (size_t)(text + le - (was + 5));
			q.n++;
			r = edits_add(&sp, m, le - m, "");
			(*count)++;
		}
		ls = le + 1;
	}
	if (r == 0 && q.n) {
		r = walk_one(unedit_fn, &q, text, len, err, errlen);
		for (size_t i = 0; r == 0 && i < q.n; i++)
			if (!q.v[i].done) {
				str_err(err, errlen, "no %s on the line of its note at offset %zu", q.v[i].name, q.v[i].ls);
				r = -EINVAL;
			}
	}
	if (r == 0)
		r = edits_apply(&sp, text, len, out, outlen);
	edits_free(&sp);
	free(q.v);
	return r;
}

/* nginx_conf_same_but_args: the arguments of the directives named in NAMES rewritten as their values, each
 * behind a '\1' (no word holds one), so that two texts compare equal when only how those are written differs. */
struct canon_q {
	const char *const *names;
	size_t n;
	struct edits *sp;
};

static int canon_fn(struct walk *w, size_t file, const struct lexer *lx, int ev)
{
	struct canon_q *q = w->ctx;
	const struct arg *last = &lx->args[lx->nargs - 1];
	char word[NGINX_CONF_TOKEN_MAX + 2];
	struct sbuf_lite {
		char *p;
		size_t n, cap;
	} b = { 0 };
	bool named = false;
	int r;

	(void)file;
	if (ev != ';' || lx->nargs < 2)
		return 0;
	for (size_t i = 0; i < q->n && !named; i++)
		named = arg_is(lx->text, &lx->args[0], q->names[i]);
	if (!named)
		return 0;
	for (size_t i = 1; i < lx->nargs; i++) {
		int k = arg_value(lx->text, &lx->args[i], word + 1, sizeof(word) - 1);

		if (k < 0) {
			free(b.p);
			return -EINVAL;
		}
		word[0] = '\1';
		if (b.n + (size_t)k + 2 > b.cap) {
			size_t cap = (b.cap + (size_t)k + 2) * 2;
			char *p = realloc(b.p, cap);

			if (!p) {
				free(b.p);
				return -ENOMEM;
			}
			b.p = p;
			b.cap = cap;
		}
		memcpy(b.p + b.n, word, (size_t)k + 1);
		b.n += (size_t)k + 1;
		b.p[b.n] = '\0';
	}
	r = edits_add(q->sp, lx->args[1].off, last->end - lx->args[1].off, b.p ? b.p : "");
	free(b.p);
	return r;
}

static int canon(const char *text, size_t len, const char *const *names, size_t n, char **out, size_t *outlen)
{
	struct edits sp = { 0 };
	struct canon_q q = { .names = names, .n = n, .sp = &sp };
	char err[64];
	int r = walk_one(canon_fn, &q, text, len, err, sizeof(err));

	if (r == 0)
		r = edits_apply(&sp, text, len, out, outlen);
	edits_free(&sp);
	return r;
}

bool nginx_conf_same_but_args(const char *a, size_t alen, const char *b, size_t blen, const char *const *names,
			      size_t n)
{
	char *ca = NULL, *cb = NULL;
	size_t la = 0, lb = 0;
	bool same = false;

	if (canon(a, alen, names, n, &ca, &la) == 0 && canon(b, blen, names, n, &cb, &lb) == 0)
		same = la == lb && memcmp(ca, cb, la) == 0;
	free(ca);
	free(cb);
	return same;
}

int nginx_conf_file_each(const char *text, size_t len, const char *name, struct nginx_conf_found **out, size_t *n,
			 char *err, size_t errlen)
{
	struct each_q q = { .context = "", .name = name, .any = true };
	int r = walk_one(each_fn, &q, text, len, err, errlen);

	*out = NULL;
	*n = 0;
	if (r < 0) {
		free(q.v);
		return r;
	}
	*out = q.v;
	*n = q.n;
	return 0;
}
