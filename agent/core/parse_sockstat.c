#include "parse.h"
#include "parse_util.h"

#include <errno.h>
#include <string.h>

#define PREFIX_SIZE 32
#define KEY_SIZE 32

/*
 * "TCP: inuse 5 orphan 0 tw 0 alloc 7 mem 1": a prefix, then key/value pairs. Every line must have that shape;
 * a key without a value, a number where a key belongs, or a value that is not a number refuses the whole text
 * before any callback runs, so a bad file delivers nothing.
 */
static int walk(const char *buf, size_t len, parse_kv_cb cb, void *ctx)
{
	struct parse_cursor all, line, tok;
	char prefix[PREFIX_SIZE], key[KEY_SIZE];
	size_t lines = 0;

	parse_cursor_init(&all, buf, len);
	while (parse_next_line(&all, &line)) {
		size_t plen;

		if (parse_only_blanks(&line))
			continue;
		if (!parse_next_token(&line, &tok) || parse_token_copy(&tok, prefix, sizeof(prefix)) < 0)
			return -EBADMSG;
		plen = strlen(prefix);
		if (plen < 2 || prefix[plen - 1] != ':')
			return -EBADMSG;
		prefix[plen - 1] = '\0';
		lines++;
		while (parse_next_token(&line, &tok)) {
			uint64_t v;
			int r;

			if (parse_token_is_digits(&tok) || parse_token_copy(&tok, key, sizeof(key)) < 0)
				return -EBADMSG;
			if (parse_next_u64(&line, &v) < 0 || v > INT64_MAX)
				return -EBADMSG;
			if (cb && (r = cb(ctx, prefix, key, (int64_t)v)) != 0)
				return r;
		}
	}
	return lines ? 0 : -EBADMSG;
}

int parse_sockstat(const char *buf, size_t len, parse_kv_cb cb, void *ctx)
{
	int r;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	r = walk(buf, len, NULL, NULL);
	if (r < 0)
		return r;
	return walk(buf, len, cb, ctx);
}
