/*
 * parse_host: the small host texts the doctor reads besides the per-tick probes: a process's open-file limit
 * (/proc/PID/limits), per-interface receive drops (/proc/PID/net/dev), the memory size (/proc/meminfo) and the
 * transparent huge pages mode (/sys/kernel/mm/transparent_hugepage/enabled). Untrusted input as everywhere in
 * parse.h: a text that does not have the expected shape is -EBADMSG, never a guess.
 */
#include "parse.h"
#include "parse_util.h"

#include <errno.h>
#include <string.h>

/* A limit column: a number or "unlimited" (PARSE_UNLIMITED). */
static int limit_value(const struct parse_cursor *tok, int64_t *out)
{
	uint64_t v;

	if (parse_token_eq(tok, "unlimited")) {
		*out = PARSE_UNLIMITED;
		return 0;
	}
	if (parse_u64(tok->p, parse_cursor_len(tok), &v) < 0 || v >= (uint64_t)PARSE_UNLIMITED)
		return -EBADMSG;
	*out = (int64_t)v;
	return 0;
}

int parse_limits_nofile(const char *buf, size_t len, int64_t *soft, int64_t *hard)
{
	static const char name[] = "Max open files";
	struct parse_cursor all, line, tok;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&all, buf, len);
	while (parse_next_line(&all, &line)) {
		/* The name column is padded with blanks; the values follow it. */
		if (parse_cursor_len(&line) < sizeof(name) || memcmp(line.p, name, sizeof(name) - 1) != 0 ||
		    (line.p[sizeof(name) - 1] != ' ' && line.p[sizeof(name) - 1] != '\t'))
			continue;
		line.p += sizeof(name) - 1;
		if (!parse_next_token(&line, &tok) || limit_value(&tok, soft) < 0 || !parse_next_token(&line, &tok) ||
		    limit_value(&tok, hard) < 0)
			return -EBADMSG;
		return 0;
	}
	return -EBADMSG;
}

int parse_netdev(const char *buf, size_t len, struct netdev_row *out, size_t max, size_t *n)
{
	struct parse_cursor all, line;
	size_t rows = 0, lineno = 0;

	*n = 0;
	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&all, buf, len);
	while (parse_next_line(&all, &line)) {
		struct netdev_row r;
		const char *colon;
		uint64_t v[16];
		size_t k;

		/* Two header lines ("Inter-|   Receive ...", " face |bytes ..."), then one line per interface. */
		if (lineno++ < 2) {
			if (!memchr(line.p, '|', parse_cursor_len(&line)))
				return -EBADMSG;
			continue;
		}
		if (parse_only_blanks(&line))
			continue;
		parse_skip_blanks(&line);
		colon = memchr(line.p, ':', parse_cursor_len(&line));
		if (!colon || colon == line.p || (size_t)(colon - line.p) >= sizeof(r.name))
			return -EBADMSG;
		memset(&r, 0, sizeof(r));
		memcpy(r.name, line.p, (size_t)(colon - line.p));
		for (size_t i = 0; r.name[i]; i++)
			if (r.name[i] == ' ' || r.name[i] == '\t')
				return -EBADMSG;
		line.p = colon + 1;
		for (k = 0; k < 16; k++)
			if (parse_next_u64(&line, &v[k]) < 0)
				return -EBADMSG;
		if (!parse_only_blanks(&line))
			return -EBADMSG;
		if (rows == max)
			return -E2BIG;
		r.rx_bytes = v[0];
		r.rx_packets = v[1];
		r.rx_errs = v[2];
		r.rx_drop = v[3];
		r.rx_fifo = v[4];
		out[rows++] = r;
	}
	if (lineno < 2)
		return -EBADMSG;
	*n = rows;
	return 0;
}

int parse_meminfo_total(const char *buf, size_t len, uint64_t *kb)
{
	struct parse_cursor all, line, tok;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&all, buf, len);
	while (parse_next_line(&all, &line)) {
		if (!parse_next_token(&line, &tok) || !parse_token_eq(&tok, "MemTotal:"))
			continue;
		if (parse_next_u64(&line, kb) < 0 || !parse_next_token(&line, &tok) || !parse_token_eq(&tok, "kB") ||
		    !parse_only_blanks(&line))
			return -EBADMSG;
		return 0;
	}
	return -EBADMSG;
}

int parse_thp_mode(const char *buf, size_t len, char *mode, size_t modelen)
{
	struct parse_cursor all, line, tok;
	bool found = false;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&all, buf, len);
	if (!parse_next_line(&all, &line))
		return -EBADMSG;
	/* "always [madvise] never": exactly one word in brackets is the mode in force. */
	while (parse_next_token(&line, &tok)) {
		size_t n = parse_cursor_len(&tok);

		if (n < 3 || tok.p[0] != '[' || tok.p[n - 1] != ']')
			continue;
		if (found || n - 2 >= modelen)
			return -EBADMSG;
		for (size_t i = 1; i < n - 1; i++)
			if (!((tok.p[i] >= 'a' && tok.p[i] <= 'z') || tok.p[i] == '_' || tok.p[i] == '-'))
				return -EBADMSG;
		memcpy(mode, tok.p + 1, n - 2);
		mode[n - 2] = '\0';
		found = true;
	}
	if (!found)
		return -EBADMSG;
	while (parse_next_line(&all, &line))
		if (!parse_only_blanks(&line))
			return -EBADMSG;
	return 0;
}
