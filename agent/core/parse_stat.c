#include "parse.h"
#include "parse_util.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/*
 * cpu columns by kernel: 4 (2.4: user nice system idle), 7 (2.6.0: + iowait irq softirq), 8 (2.6.11: + steal),
 * 9 (2.6.24: + guest), 10 (2.6.33: + guest_nice). Later columns are accepted and ignored, up to a cap that keeps
 * a hostile line from passing for a future layout.
 */
#define MIN_COLS 4
#define MAX_COLS 32

/* The numbers after a "cpu" label into T; NCOLS gets how many there were. */
static int cpu_values(struct parse_cursor *line, struct cpu_times *t, size_t *ncols)
{
	uint64_t col[MAX_COLS];
	size_t n = 0;

	for (;;) {
		uint64_t v;
		int r = parse_next_u64(line, &v);

		if (r == -ENODATA)
			break;
		if (r < 0 || n == MAX_COLS)
			return -EBADMSG;
		col[n++] = v;
	}
	if (n < MIN_COLS)
		return -EBADMSG;
	/* Columns an old kernel does not print read as 0, as the header promises. */
	memset(col + n, 0, (MAX_COLS - n) * sizeof(col[0]));
	t->user = col[0];
	t->nice = col[1];
	t->system = col[2];
	t->idle = col[3];
	t->iowait = col[4];
	t->irq = col[5];
	t->softirq = col[6];
	t->steal = col[7];
	*ncols = n;
	return 0;
}

/* "key N" with exactly one number; SEEN catches a repeated key. */
static int single_value(struct parse_cursor *line, bool *seen, uint64_t *out)
{
	if (*seen || parse_next_u64(line, out) < 0 || !parse_only_blanks(line))
		return -EBADMSG;
	*seen = true;
	return 0;
}

int parse_stat(const char *buf, size_t len, struct proc_stat *st, size_t max)
{
	struct parse_cursor in, line, tok;
	size_t ncpu = 0, total_cols = 0;
	bool seen_total = false, seen_ctxt = false, seen_running = false, seen_blocked = false;
	uint64_t ctxt = 0, running = 0, blocked = 0;
	int prev_id = -1;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&in, buf, len);
	while (parse_next_line(&in, &line)) {
		if (!parse_next_token(&line, &tok))
			continue;
		if (parse_token_eq(&tok, "cpu")) {
			if (seen_total)
				return -EBADMSG;
			if (cpu_values(&line, &st->total, &total_cols) < 0)
				return -EBADMSG;
			st->total.cpu = -1;
			seen_total = true;
		} else if (parse_token_starts(&tok, "cpu")) {
			struct parse_cursor num = tok;
			struct cpu_times t;
			uint64_t id;
			size_t ncols;

			num.p += 3;
			if (parse_u64(num.p, parse_cursor_len(&num), &id) < 0 || id > INT_MAX)
				return -EBADMSG;
			/* The aggregate line comes first and fixes the width; per-CPU lines of another width, or CPU ids
			 * that do not increase, mean a torn or forged text. Ids may skip: offline CPUs have no line. */
			if (!seen_total || (int)id <= prev_id)
				return -EBADMSG;
			if (cpu_values(&line, &t, &ncols) < 0 || ncols != total_cols)
				return -EBADMSG;
			if (ncpu == max)
				return -E2BIG;
			t.cpu = (int)id;
			prev_id = (int)id;
			st->cpus[ncpu++] = t;
		} else if (parse_token_eq(&tok, "ctxt")) {
			if (single_value(&line, &seen_ctxt, &ctxt) < 0)
				return -EBADMSG;
		} else if (parse_token_eq(&tok, "procs_running")) {
			if (single_value(&line, &seen_running, &running) < 0)
				return -EBADMSG;
		} else if (parse_token_eq(&tok, "procs_blocked")) {
			if (single_value(&line, &seen_blocked, &blocked) < 0)
				return -EBADMSG;
		}
		/* Other lines (intr, btime, softirq, ...) are not ours to judge. */
	}
	/* procs_blocked is printed after everything we read, so requiring it also catches a text cut short. */
	if (!seen_total || ncpu == 0 || !seen_ctxt || !seen_running || !seen_blocked)
		return -EBADMSG;
	st->ncpu = ncpu;
	st->ctxt = ctxt;
	st->procs_running = running;
	st->procs_blocked = blocked;
	return 0;
}
