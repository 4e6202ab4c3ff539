/* doctor_conf: see doctor_conf.h. */
#include "diagnose/doctor_conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct build {
	const struct nginx_conf *c;
	struct doctor_conf *out;
	char **words;  /* NGINX_CONF_TOKEN_MAX bytes each, grown to the longest directive seen */
	size_t cap;
	char *err;
	size_t errlen;
	size_t skip;   /* inside a block of data (below): its nesting, 0 outside */
};

/*
 * Blocks whose contents are data that nginx's own handlers read (a map's keys and values, a geo's networks, the
 * MIME types), not directives: the doctor checks none of them, and a map of redirects is where a configuration of
 * many megabytes spends them (each entry a node of about 200 bytes: 4 MiB of map made 20 MiB of model). The block
 * itself stays, its contents are passed over.
 */
static bool data_block(const char *name)
{
	static const char *const names[] = { "map", "geo", "types", "split_clients", "charset_map" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

static int grow(struct build *b, size_t n)
{
	char **w;

	if (n <= b->cap)
		return 0;
	w = realloc(b->words, n * sizeof(*w));
	if (!w)
		return -ENOMEM;
	b->words = w;
	for (; b->cap < n; b->cap++) {
		b->words[b->cap] = malloc(NGINX_CONF_TOKEN_MAX);
		if (!b->words[b->cap])
			return -ENOMEM;
	}
	return 0;
}

static int on_node(void *ctx, const struct nginx_conf_node *node)
{
	struct build *b = ctx;
	const char *file = b->c->files[node->file].path;
	enum doctor_node_kind kind;
	int r;

	if (b->skip) {
		if (node->event == NGINX_CONF_BLOCK)
			b->skip++;
		else if (node->event == NGINX_CONF_BLOCK_END && --b->skip == 0)
			return doctor_conf_add(b->out, DOCTOR_END, file, node->line, NULL, 0);
		return 0;
	}
	switch (node->event) {
	case NGINX_CONF_BLOCK_END:
		return doctor_conf_add(b->out, DOCTOR_END, file, node->line, NULL, 0);
	case NGINX_CONF_INCLUDE: {
		const char *w = b->c->files[node->included].path;

		return doctor_conf_add(b->out, DOCTOR_INCLUDE, file, node->line, &w, 1);
	}
	case NGINX_CONF_BLOCK:
		kind = DOCTOR_BLOCK;
		break;
	default:
		kind = DOCTOR_DIRECTIVE;
		break;
	}
	r = grow(b, node->nwords);
	if (r < 0)
		return r;
	for (size_t i = 0; i < node->nwords; i++) {
		if (nginx_conf_node_word(node, i, b->words[i], NGINX_CONF_TOKEN_MAX) < 0) {
			snprintf(b->err, b->errlen, "%s:%u: a word longer than %d bytes (nginx itself refuses those)", file,
				 node->line, NGINX_CONF_TOKEN_MAX - 1);
			return -EINVAL;
		}
	}
	r = doctor_conf_add(b->out, kind, file, node->line, (const char *const *)b->words, node->nwords);
	if (r == -E2BIG)
		snprintf(b->err, b->errlen, "more than %d directives outside blocks of data (map, geo, types)",
			 DOCTOR_NODES_MAX);
	if (r == 0 && kind == DOCTOR_BLOCK && data_block(b->words[0]))
		b->skip = 1;
	return r;
}

int doctor_conf_from_nginx(const struct nginx_conf *c, struct doctor_conf *out, char *err, size_t errlen)
{
	struct build b = { .c = c, .out = out, .err = err, .errlen = errlen };
	int r;

	doctor_conf_init(out);
	if (errlen)
		err[0] = '\0';
	r = nginx_conf_walk(c, on_node, &b, err, errlen);
	for (size_t i = 0; i < b.cap; i++)
		free(b.words[i]);
	free(b.words);
	if (r == 0)
		r = doctor_conf_finish(out, err, errlen);
	if (r < 0) {
		if (r == -ENOMEM && errlen)
			snprintf(err, errlen, "out of memory");
		doctor_conf_free(out);
	}
	return r;
}

int doctor_conf_from_dump(const char *dump, size_t len, struct doctor_conf *out, char *err, size_t errlen)
{
	struct nginx_conf c;
	int r;

	doctor_conf_init(out);
	r = nginx_conf_parse(dump, len, &c, err, errlen);
	if (r < 0) {
		if (r == -ENOMEM && errlen)
			snprintf(err, errlen, "out of memory");
		return r;
	}
	r = doctor_conf_from_nginx(&c, out, err, errlen);
	nginx_conf_free(&c);
	return r;
}
