#include "parse.h"
#include "parse_util.h"

#include <errno.h>

/* "CPU7": the header names one column per possible CPU. */
static bool cpu_label_ok(const struct parse_cursor *tok)
{
	struct parse_cursor num = *tok;

	if (!parse_token_starts(tok, "CPU"))
		return false;
	num.p += 3;
	return parse_token_is_digits(&num);
}

/* "NET_RX:" */
static bool row_label_ok(const struct parse_cursor *tok)
{
	const char *s;

	if (parse_cursor_len(tok) < 2 || tok->end[-1] != ':')
		return false;
	for (s = tok->p; s < tok->end - 1; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

int parse_softirqs(const char *buf, size_t len, uint64_t *net_rx, uint64_t *net_tx, size_t max, size_t *ncpu)
{
	struct parse_cursor in, line, tok;
	size_t cols = 0;
	bool seen_rx = false, seen_tx = false;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&in, buf, len);
	if (!parse_next_line(&in, &line))
		return -EBADMSG;
	while (parse_next_token(&line, &tok)) {
		if (!cpu_label_ok(&tok))
			return -EBADMSG;
		if (cols == max)
			return -E2BIG;
		cols++;
	}
	if (cols == 0)
		return -EBADMSG;

	/* Every row is checked, not just the two we keep: a row of the wrong width means a torn or forged text. */
	while (parse_next_line(&in, &line)) {
		uint64_t *dst = NULL;
		size_t j;

		if (!parse_next_token(&line, &tok) || !row_label_ok(&tok))
			return -EBADMSG;
		if (parse_token_eq(&tok, "NET_RX:")) {
			if (seen_rx)
				return -EBADMSG;
			seen_rx = true;
			dst = net_rx;
		} else if (parse_token_eq(&tok, "NET_TX:")) {
			if (seen_tx)
				return -EBADMSG;
			seen_tx = true;
			dst = net_tx;
		}
		for (j = 0; j < cols; j++) {
			uint64_t v;

			if (parse_next_u64(&line, &v) < 0)
				return -EBADMSG;
			if (dst)
				dst[j] = v;
		}
		if (!parse_only_blanks(&line))
			return -EBADMSG;
	}
	if (!seen_rx || !seen_tx)
		return -EBADMSG;
	*ncpu = cols;
	return 0;
}
