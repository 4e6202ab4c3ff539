#include "parse.h"
#include "parse_util.h"

#include <errno.h>

int parse_schedstat(const char *buf, size_t len, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices)
{
	struct parse_cursor in, line, rest;
	uint64_t v[3];
	size_t i;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&in, buf, len);
	if (!parse_next_line(&in, &line))
		return -EBADMSG;
	for (i = 0; i < 3; i++)
		if (parse_next_u64(&line, &v[i]) < 0)
			return -EBADMSG;
	/* Exactly one line of exactly three numbers: anything more is not a schedstat text. */
	if (!parse_only_blanks(&line) || parse_next_line(&in, &rest))
		return -EBADMSG;
	*run_ns = v[0];
	*wait_ns = v[1];
	*slices = v[2];
	return 0;
}

/* "voluntary_ctxt_switches:\t42" -> 42; SEEN catches a repeated key. */
static int ctxt_value(struct parse_cursor *line, bool *seen, uint64_t *out)
{
	if (*seen || parse_next_u64(line, out) < 0 || !parse_only_blanks(line))
		return -EBADMSG;
	*seen = true;
	return 0;
}

int parse_ctxt_switches(const char *buf, size_t len, uint64_t *voluntary, uint64_t *nonvoluntary)
{
	struct parse_cursor in, line, tok;
	bool seen_vol = false, seen_nonvol = false;
	uint64_t vol = 0, nonvol = 0;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&in, buf, len);
	while (parse_next_line(&in, &line)) {
		if (!parse_next_token(&line, &tok))
			continue;
		/* Whole-token match: "nonvoluntary_ctxt_switches:" ends with the other key. */
		if (parse_token_eq(&tok, "voluntary_ctxt_switches:")) {
			if (ctxt_value(&line, &seen_vol, &vol) < 0)
				return -EBADMSG;
		} else if (parse_token_eq(&tok, "nonvoluntary_ctxt_switches:")) {
			if (ctxt_value(&line, &seen_nonvol, &nonvol) < 0)
				return -EBADMSG;
		}
	}
	if (!seen_vol || !seen_nonvol)
		return -EBADMSG;
	*voluntary = vol;
	*nonvoluntary = nonvol;
	return 0;
}
