#include "parse_util.h"

#include <errno.h>
#include <string.h>

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

void parse_cursor_init(struct parse_cursor *c, const char *buf, size_t len)
{
	/* NULL + 0 is undefined behaviour in C, so an absent buffer becomes an empty cursor without arithmetic. */
	c->p = buf;
	c->end = buf ? buf + len : buf;
}

size_t parse_cursor_len(const struct parse_cursor *c)
{
	return (size_t)(c->end - c->p);
}

bool parse_has_nul(const char *buf, size_t len)
{
	return len > 0 && memchr(buf, '\0', len) != NULL;
}

bool parse_next_line(struct parse_cursor *c, struct parse_cursor *line)
{
	const char *nl;

	if (c->p == c->end)
		return false;
	nl = memchr(c->p, '\n', parse_cursor_len(c));
	line->p = c->p;
	line->end = nl ? nl : c->end;
	c->p = nl ? nl + 1 : c->end;
	return true;
}

size_t parse_count_lines(const char *buf, size_t len)
{
	struct parse_cursor c, line;
	size_t n = 0;

	parse_cursor_init(&c, buf, len);
	while (parse_next_line(&c, &line))
		n++;
	return n;
}

void parse_skip_blanks(struct parse_cursor *c)
{
	while (c->p < c->end && is_blank(*c->p))
		c->p++;
}

bool parse_next_token(struct parse_cursor *c, struct parse_cursor *tok)
{
	parse_skip_blanks(c);
	if (c->p == c->end)
		return false;
	tok->p = c->p;
	while (c->p < c->end && !is_blank(*c->p))
		c->p++;
	tok->end = c->p;
	return true;
}

bool parse_only_blanks(const struct parse_cursor *c)
{
	struct parse_cursor rest = *c;

	parse_skip_blanks(&rest);
	return rest.p == rest.end;
}

bool parse_token_eq(const struct parse_cursor *tok, const char *lit)
{
	size_t n = strlen(lit);

	return parse_cursor_len(tok) == n && memcmp(tok->p, lit, n) == 0;
}

bool parse_token_starts(const struct parse_cursor *tok, const char *lit)
{
	size_t n = strlen(lit);

	return parse_cursor_len(tok) >= n && memcmp(tok->p, lit, n) == 0;
}

int parse_token_copy(const struct parse_cursor *tok, char *dst, size_t size)
{
	size_t n = parse_cursor_len(tok);

	if (n >= size)
		return -E2BIG;
	memcpy(dst, tok->p, n);
	dst[n] = '\0';
	return 0;
}

bool parse_token_is_digits(const struct parse_cursor *tok)
{
	const char *s;

	if (tok->p == tok->end)
		return false;
	for (s = tok->p; s < tok->end; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

int parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0)
		return -EBADMSG;
	for (i = 0; i < len; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -EBADMSG;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int parse_i64(const char *s, size_t len, int64_t *out)
{
	uint64_t mag;
	int r;

	if (len > 0 && s[0] == '-') {
		r = parse_u64(s + 1, len - 1, &mag);
		if (r < 0)
			return r;
		/* INT64_MIN's magnitude is one more than INT64_MAX; build it without overflowing a signed value. */
		if (mag > (uint64_t)INT64_MAX + 1)
			return -EBADMSG;
		*out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
		return 0;
	}
	r = parse_u64(s, len, &mag);
	if (r < 0)
		return r;
	if (mag > (uint64_t)INT64_MAX)
		return -EBADMSG;
	*out = (int64_t)mag;
	return 0;
}

int parse_x64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0)
		return -EBADMSG;
	for (i = 0; i < len; i++) {
		unsigned d;
		char ch = s[i];

		if (ch >= '0' && ch <= '9')
			d = (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			d = (unsigned)(ch - 'a' + 10);
		else if (ch >= 'A' && ch <= 'F')
			d = (unsigned)(ch - 'A' + 10);
		else
			return -EBADMSG;
		if (v > (UINT64_MAX >> 4))
			return -EBADMSG;
		v = (v << 4) | d;
	}
	*out = v;
	return 0;
}

int parse_next_u64(struct parse_cursor *c, uint64_t *out)
{
	struct parse_cursor tok;

	if (!parse_next_token(c, &tok))
		return -ENODATA;
	return parse_u64(tok.p, parse_cursor_len(&tok), out);
}

int parse_next_x64(struct parse_cursor *c, uint64_t *out)
{
	struct parse_cursor tok;

	if (!parse_next_token(c, &tok))
		return -ENODATA;
	return parse_x64(tok.p, parse_cursor_len(&tok), out);
}

int parse_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	if (a > UINT64_MAX - b)
		return -EBADMSG;
	*out = a + b;
	return 0;
}
