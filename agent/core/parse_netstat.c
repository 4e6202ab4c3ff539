#include "parse.h"
#include "parse_util.h"

#include <errno.h>
#include <string.h>

/* Kernel prefixes are short ("MPTcpExt") and MIB names stay under 32 bytes; these leave room for new ones. */
#define PREFIX_SIZE 32
#define NAME_SIZE 128

static bool is_alpha(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

static bool is_alnum(char ch)
{
	return is_alpha(ch) || (ch >= '0' && ch <= '9');
}

/*
 * A MIB name is a C-like identifier. Requiring a leading letter keeps a value line from being taken for a names
 * line, so two value lines in a row (a lost names line) are refused instead of emitting numbers as names.
 */
static bool name_ok(const struct parse_cursor *tok)
{
	const char *s;

	if (tok->p == tok->end || !is_alpha(*tok->p))
		return false;
	for (s = tok->p; s < tok->end; s++)
		if (!is_alnum(*s) && *s != '_')
			return false;
	return true;
}

/* "TcpExt:" -> "TcpExt" into PREFIX. */
static int take_prefix(const struct parse_cursor *tok, char *prefix)
{
	struct parse_cursor name = *tok;

	if (name.p == name.end || name.end[-1] != ':')
		return -EBADMSG;
	name.end--;
	if (!name_ok(&name) || parse_token_copy(&name, prefix, PREFIX_SIZE) < 0)
		return -EBADMSG;
	return 0;
}

/*
 * One pass over the text. With CB NULL it only validates, so parse_netstat can refuse a bad text before the
 * caller has seen any of its values: a half-delivered file would look like counters that stopped moving.
 */
static int walk(const char *buf, size_t len, parse_kv_cb cb, void *ctx)
{
	struct parse_cursor in, names, values, ntok, vtok;
	char prefix[PREFIX_SIZE], vprefix[PREFIX_SIZE], name[NAME_SIZE];
	size_t npairs = 0;

	parse_cursor_init(&in, buf, len);
	while (parse_next_line(&in, &names)) {
		if (!parse_next_line(&in, &values))
			return -EBADMSG;
		if (!parse_next_token(&names, &ntok) || take_prefix(&ntok, prefix) < 0)
			return -EBADMSG;
		if (!parse_next_token(&values, &vtok) || take_prefix(&vtok, vprefix) < 0)
			return -EBADMSG;
		if (strcmp(prefix, vprefix) != 0)
			return -EBADMSG;
		for (;;) {
			bool more_names = parse_next_token(&names, &ntok);
			bool more_values = parse_next_token(&values, &vtok);
			int64_t v;
			int r;

			if (more_names != more_values)
				return -EBADMSG;
			if (!more_names)
				break;
			if (!name_ok(&ntok) || parse_token_copy(&ntok, name, sizeof(name)) < 0)
				return -EBADMSG;
			if (parse_i64(vtok.p, parse_cursor_len(&vtok), &v) < 0)
				return -EBADMSG;
			if (cb) {
				r = cb(ctx, prefix, name, v);
				if (r != 0)
					return r;
			}
		}
		npairs++;
	}
	return npairs > 0 ? 0 : -EBADMSG;
}

int parse_netstat(const char *buf, size_t len, parse_kv_cb cb, void *ctx)
{
	int r;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	r = walk(buf, len, NULL, NULL);
	if (r < 0)
		return r;
	return walk(buf, len, cb, ctx);
}
