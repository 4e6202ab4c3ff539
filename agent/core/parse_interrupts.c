#include "parse.h"
#include "parse_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 8192

/* Header "CPU0 CPU1 CPU3": one column per online CPU, so labels may skip (the table keeps column order). */
static int header_cols(struct parse_cursor *line, size_t *ncpu)
{
	struct parse_cursor tok;
	size_t n = 0;

	while (parse_next_token(line, &tok)) {
		struct parse_cursor num = tok;

		if (!parse_token_starts(&tok, "CPU"))
			return -EBADMSG;
		num.p += 3;
		if (!parse_token_is_digits(&num))
			return -EBADMSG;
		if (n == PARSE_MAX_CPUS)
			return -E2BIG;
		n++;
	}
	if (n == 0)
		return -EBADMSG;
	*ncpu = n;
	return 0;
}

/*
 * The id ends at the first ':' of the line's first token ("45:", "NMI:"). arm64 prints "IPI%u:" with no blank
 * before a "%10u" count, so a 10-digit count arrives glued on ("IPI0:4294967295"); LINE is rewound to just
 * after the colon so the count is read like any other.
 */
static int row_id(struct parse_cursor *line, char *id, size_t size)
{
	struct parse_cursor tok, name;
	const char *s;

	if (!parse_next_token(line, &tok))
		return -EBADMSG;
	name.p = tok.p;
	name.end = memchr(tok.p, ':', parse_cursor_len(&tok));
	if (!name.end || name.end == name.p)
		return -EBADMSG;
	for (s = name.p; s < name.end; s++)
		if (*s <= ' ' || *s > '~')
			return -EBADMSG;
	line->p = name.end + 1;
	return parse_token_copy(&name, id, size) < 0 ? -EBADMSG : 0;
}

/*
 * The rest of the line with each run of blanks folded to one space, so "IR-PCI-MSI   524288-edge      eth0"
 * reads "IR-PCI-MSI 524288-edge eth0". A description longer than DESC is cut: losing the tail of a very long
 * shared-IRQ list is better than refusing the whole file on a big box.
 */
static void row_desc(struct parse_cursor *line, char *desc, size_t size)
{
	struct parse_cursor tok;
	size_t n = 0;

	while (parse_next_token(line, &tok) && n + 1 < size) {
		size_t k = parse_cursor_len(&tok);

		if (n > 0)
			desc[n++] = ' ';
		if (k > size - 1 - n)
			k = size - 1 - n;
		memcpy(desc + n, tok.p, k);
		n += k;
	}
	/* A separator added just before the buffer filled would leave a dangling blank. */
	while (n > 0 && desc[n - 1] == ' ')
		n--;
	desc[n] = '\0';
}

/*
 * One IRQ row into ROW and COUNTS (NCPU zeroed slots). Rows may carry fewer counts than CPUs: x86 prints ERR and
 * MIS as one global count, ARM its "Err:" likewise; their missing columns stay 0. A count is a token of digits
 * read while columns remain; the first other token starts the description.
 */
static int parse_row(struct parse_cursor *line, size_t ncpu, struct irq_row *row, uint64_t *counts)
{
	struct parse_cursor tok;
	size_t j = 0;
	uint64_t total = 0;

	if (row_id(line, row->id, sizeof(row->id)) < 0)
		return -EBADMSG;
	while (j < ncpu) {
		struct parse_cursor save = *line;

		if (!parse_next_token(line, &tok))
			break;
		if (!parse_token_is_digits(&tok)) {
			*line = save;
			break;
		}
		if (parse_u64(tok.p, parse_cursor_len(&tok), &counts[j]) < 0 ||
		    parse_add_u64(total, counts[j], &total) < 0)
			return -EBADMSG;
		j++;
	}
	if (j == 0)
		return -EBADMSG;
	row->total = total;
	row_desc(line, row->desc, sizeof(row->desc));
	return 0;
}

int parse_interrupts(const char *buf, size_t len, struct irq_table *t)
{
	struct parse_cursor in, line;
	size_t ncpu, nlines, nrows = 0;
	int r;

	memset(t, 0, sizeof(*t));
	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&in, buf, len);
	if (!parse_next_line(&in, &line))
		return -EBADMSG;
	r = header_cols(&line, &ncpu);
	if (r < 0)
		return r;
	/* Size by lines before parsing: bounded by MAX_ROWS and PARSE_MAX_CPUS whatever the text claims. */
	nlines = parse_count_lines(in.p, parse_cursor_len(&in));
	if (nlines == 0)
		return -EBADMSG;
	if (nlines > MAX_ROWS)
		return -E2BIG;
	t->rows = calloc(nlines, sizeof(*t->rows));
	t->counts = calloc(nlines * ncpu, sizeof(*t->counts));
	if (!t->rows || !t->counts) {
		irq_table_free(t);
		return -ENOMEM;
	}
	while (parse_next_line(&in, &line)) {
		if (parse_row(&line, ncpu, &t->rows[nrows], &t->counts[nrows * ncpu]) < 0) {
			irq_table_free(t);
			return -EBADMSG;
		}
		nrows++;
	}
	t->ncpu = ncpu;
	t->nirq = nrows;
	return 0;
}

void irq_table_free(struct irq_table *t)
{
	free(t->rows);
	free(t->counts);
	memset(t, 0, sizeof(*t));
}

int parse_irq_counts(const char *buf, size_t len, uint64_t *out, size_t max, size_t *n)
{
	size_t i = 0, count = 0;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	/* one line, optionally ending in a newline */
	if (len && buf[len - 1] == '\n')
		len--;
	if (len == 0)
		return -EBADMSG;
	while (i < len) {
		size_t b = i;

		while (i < len && buf[i] != ',')
			i++;
		if (count == max)
			return -E2BIG;
		if (i == b || parse_u64(buf + b, i - b, &out[count]) < 0)
			return -EBADMSG;
		count++;
		if (i < len && ++i == len)
			return -EBADMSG; /* a trailing comma */
	}
	*n = count;
	return 0;
}
