/* The `nginx -T` parser (agent/act/nginx_conf.c): split the dump, walk it with includes expanded reading every
 * word, find directives and listen sockets, and make the edits the nginx drivers make, checking that each edit
 * changes what it says and nothing else, and that noted edits come back byte for byte. */
#define _GNU_SOURCE

#include "fuzz.h"
#include "act/nginx_conf.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static int on_node(void *ctx, const struct nginx_conf_node *n)
{
	static char word[NGINX_CONF_TOKEN_MAX + 1];
	size_t *count = ctx;

	FUZZ_CHECK(n->context && n->context[0]);
	for (size_t i = 0; i < n->nwords; i++) {
		int r = nginx_conf_node_word(n, i, word, sizeof(word));

		FUZZ_CHECK(r >= 0 || r == -E2BIG);
		if (r >= 0)
			FUZZ_CHECK((size_t)r < sizeof(word) && word[r] == '\0');
	}
	FUZZ_CHECK(nginx_conf_node_word(n, n->nwords, word, sizeof(word)) == -EINVAL);
	/* A positive return stops the walk and is what the walk returns. */
	return ++*count == 1000 ? 5 : 0;
}

/* Set and remove a directive at the top of one file, as knob_nginx.c does in the agent's include files. */
static void edit_directive(const struct nginx_conf_file *f)
{
	static struct nginx_conf_directive d;
	char err[256], *out = NULL, *gone = NULL;
	size_t outlen, gonelen;
	int r;

	r = nginx_conf_file_find(f->text, f->len, "worker_rlimit_nofile", &d, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
	r = nginx_conf_set_directive(f->text, f->len, "worker_rlimit_nofile", "65536", &out, &outlen, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r != 0)
		return;
	FUZZ_CHECK(out[outlen] == '\0');
	r = nginx_conf_file_find(out, outlen, "worker_rlimit_nofile", &d, err, sizeof(err));
	FUZZ_CHECK(r == 0 && d.nargs == 1 && strcmp(d.args[0], "65536") == 0);
	r = nginx_conf_set_directive(out, outlen, "worker_rlimit_nofile", NULL, &gone, &gonelen, err, sizeof(err));
	FUZZ_CHECK(r == 0);
	FUZZ_CHECK(nginx_conf_file_find(gone, gonelen, "worker_rlimit_nofile", &d, err, sizeof(err)) == -ENOENT);
	free(gone);
	free(out);
}

/* backlog= on every listen that should carry it, one file at a time, as knob_listen.c does. */
static void edit_backlog(const struct nginx_conf *c, const struct nginx_listen *l, size_t n)
{
	for (size_t f = 0; f < c->nfiles; f++) {
		size_t starts[16], k = 0, outlen;
		char err[256], *out = NULL;
		int r;

		for (size_t i = 0; i < n && k < 16; i++)
			if (l[i].file == f && l[i].target)
				starts[k++] = l[i].start;
		if (!k)
			continue;
		r = nginx_conf_set_backlog(c->files[f].text, c->files[f].len, starts, k, 4096, &out, &outlen, err,
					   sizeof(err));
		FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
		if (r == 0) {
			FUZZ_CHECK(out[outlen] == '\0');
			FUZZ_CHECK(nginx_conf_same_but_backlog(c->files[f].text, c->files[f].len, out, outlen));
		}
		free(out);
		/* reuseport on and off again, as knob_listen_param.c does: the same file but for the flag, and as many
		 * flags as before after the round trip */
		out = NULL;
		r = nginx_conf_set_listen_param(c->files[f].text, c->files[f].len, starts, k, "reuseport", "", &out,
						&outlen, err, sizeof(err));
		FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
		if (r == 0) {
			FUZZ_CHECK(out[outlen] == '\0');
			FUZZ_CHECK(nginx_conf_same_but_listen_param(c->files[f].text, c->files[f].len, out, outlen,
								    "reuseport"));
			FUZZ_CHECK(nginx_conf_listen_param_count(out, outlen, "reuseport") >= (int)k ||
				   nginx_conf_listen_param_count(out, outlen, "reuseport") < 0);
		}
		free(out);
	}
}

/* The first block and the first directive with arguments of one file, as the upstream keepalive driver edits. */
struct firsts {
	size_t file;
	bool have_block, have_dir;
	size_t block_at, dir_at;
	char block[64], dir[64];
};

static int on_first(void *ctx, const struct nginx_conf_node *n)
{
	struct firsts *f = ctx;

	if (n->file != f->file)
		return 0;
	if (n->event == NGINX_CONF_BLOCK && !f->have_block &&
	    nginx_conf_node_word(n, 0, f->block, sizeof(f->block)) > 0) {
		f->have_block = true;
		f->block_at = n->start;
	} else if (n->event == NGINX_CONF_DIRECTIVE && n->nwords >= 2 && !f->have_dir &&
		   nginx_conf_node_word(n, 0, f->dir, sizeof(f->dir)) > 0) {
		f->have_dir = true;
		f->dir_at = n->start;
	}
	return 0;
}

/* Noted edits (lines added to a block, arguments replaced, a block appended) and the way back: byte for byte, unless
 * the file had the note already. Two texts the same but for how some arguments are written compare so both ways. */
static void edit_noted(const struct nginx_conf *c, size_t file)
{
	static const char note[] = "ngx-autotune fuzz", mark[] = " # ngx-autotune fuzz";
	const struct nginx_conf_file *f = &c->files[file];
	struct firsts fi = { .file = file };
	struct nginx_conf_edit e[3];
	char err[256], *out = NULL, *back = NULL;
	size_t n = 0, outlen = 0, backlen = 0, count = 0;
	const char *names[] = { fi.dir };
	int r;

	if (nginx_conf_walk(c, on_first, &fi, err, sizeof(err)) < 0)
		return;
	if (fi.have_block)
		e[n++] = (struct nginx_conf_edit){ NGINX_CONF_EDIT_ADD, fi.block_at, fi.block,
						   "proxy_http_version 1.1;\nproxy_set_header Connection \"\";", note };
	if (fi.have_dir)
		e[n++] = (struct nginx_conf_edit){ NGINX_CONF_EDIT_ARGS, fi.dir_at, fi.dir, "64", note };
	e[n++] = (struct nginx_conf_edit){ NGINX_CONF_EDIT_APPEND, 0, NULL, "upstream u {\n\tkeepalive 1;\n}", note };
	r = nginx_conf_edit(f->text, f->len, e, n, &out, &outlen, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOENT || r == -ENOMEM);
	if (r != 0)
		return;
	FUZZ_CHECK(out[outlen] == '\0');
	r = nginx_conf_unedit(out, outlen, note, &back, &backlen, &count, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -ENOMEM || memmem(f->text, f->len, mark, sizeof(mark) - 1));
	if (r == 0 && !memmem(f->text, f->len, mark, sizeof(mark) - 1))
		FUZZ_CHECK(backlen == f->len && memcmp(back, f->text, f->len) == 0 && count >= n);
	if (fi.have_dir)
		FUZZ_CHECK(nginx_conf_same_but_args(f->text, f->len, f->text, f->len, names, 1));
	free(back);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nginx_conf_directive d;
	struct nginx_conf c;
	struct nginx_listen *l = NULL;
	char err[512], ctx[NGINX_CONF_CONTEXT_MAX];
	size_t n = 0, count = 0;
	int r;

	r = nginx_conf_parse((const char *)data, size, &c, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r != 0)
		return 0;
	FUZZ_CHECK(c.nfiles >= 1 && c.nfiles <= NGINX_CONF_FILES_MAX);
	r = nginx_conf_walk(&c, on_node, &count, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == 5 || r == -EINVAL || r == -ENOMEM);
	FUZZ_CHECK(r != 5 || count == 1000);
	r = nginx_conf_find(&c, "http", "keepalive_timeout", &d, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
	r = nginx_conf_find(&c, "events", "worker_connections", &d, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
	if (r == 0)
		FUZZ_CHECK(d.file < c.nfiles);
	for (size_t f = 0; f < c.nfiles && f < 8; f++) {
		FUZZ_CHECK(nginx_conf_file_index(&c, c.files[f].path) >= 0);
		r = nginx_conf_included(&c, c.files[f].path, ctx, sizeof(ctx), err, sizeof(err));
		FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
		edit_directive(&c.files[f]);
		edit_noted(&c, f);
	}
	r = nginx_conf_listens(&c, &l, &n, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM || r == -E2BIG);
	if (r == 0) {
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(l[i].file < c.nfiles && l[i].start < c.files[l[i].file].len);
		edit_backlog(&c, l, n);
	}
	free(l);
	nginx_conf_free(&c);
	return 0;
}
