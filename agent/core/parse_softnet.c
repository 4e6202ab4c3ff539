#include "parse.h"
#include "parse_util.h"

#include <errno.h>

/*
 * Layouts of /proc/net/softnet_stat (net/core/net-procfs.c, one "%08x" column each):
 *   10: processed dropped time_squeeze 0 0 0 0 0 cpu_collision received_rps          (2.6.35 .. 3.10)
 *   11: ... flow_limit_count                                                         (3.11 ..)
 *   13: ... backlog_len cpu_index                                                    (5.10 ..)
 *   15: ... input_qlen process_qlen (backlog_len = their sum)                        (6.x)
 * The kernel only ever appends, so wider rows (a 17-column layout has been proposed) are read as the 15-column
 * prefix; the cap stops a hostile row from being taken for a future layout.
 */
#define COL_PROCESSED 0
#define COL_DROPPED 1
#define COL_TIME_SQUEEZE 2
#define COL_RECEIVED_RPS 9
#define COL_FLOW_LIMIT 10
#define COL_BACKLOG 11
#define COL_CPU 12
#define MAX_COLS 32

static bool layout_known(size_t ncols)
{
	return ncols == 10 || ncols == 11 || ncols == 13 || (ncols >= 15 && ncols <= MAX_COLS);
}

int parse_softnet(const char *buf, size_t len, struct softnet_cpu *out, size_t max, size_t *n)
{
	struct parse_cursor in, line;
	size_t rows = 0, ncols_first = 0;
	uint64_t prev_cpu = 0;

	if (!buf || parse_has_nul(buf, len))
		return -EBADMSG;
	parse_cursor_init(&in, buf, len);
	while (parse_next_line(&in, &line)) {
		uint64_t col[MAX_COLS];
		size_t ncols = 0;
		struct softnet_cpu *row;
		uint64_t cpu;
		int r;

		for (;;) {
			uint64_t v;

			r = parse_next_x64(&line, &v);
			if (r == -ENODATA)
				break;
			if (r < 0 || ncols == MAX_COLS)
				return -EBADMSG;
			col[ncols++] = v;
		}
		/* Every row comes from one seq_printf format: a row of another width is a torn or forged text. */
		if (!layout_known(ncols) || (rows > 0 && ncols != ncols_first))
			return -EBADMSG;
		ncols_first = ncols;
		if (rows == max)
			return -E2BIG;
		/* Offline CPUs get no row, so only the kernel's index column names the CPU; older layouts leave the row
		 * number, which is right as long as every CPU is online. */
		cpu = ncols > COL_CPU ? col[COL_CPU] : rows;
		if (cpu > UINT32_MAX || (rows > 0 && cpu <= prev_cpu))
			return -EBADMSG;
		prev_cpu = cpu;
		row = &out[rows++];
		row->cpu = (uint32_t)cpu;
		row->processed = col[COL_PROCESSED];
		row->dropped = col[COL_DROPPED];
		row->time_squeeze = col[COL_TIME_SQUEEZE];
		row->received_rps = col[COL_RECEIVED_RPS];
		row->flow_limit = ncols > COL_FLOW_LIMIT ? col[COL_FLOW_LIMIT] : 0;
		row->backlog_len = ncols > COL_BACKLOG ? col[COL_BACKLOG] : UINT64_MAX;
	}
	if (rows == 0)
		return -EBADMSG;
	*n = rows;
	return 0;
}
