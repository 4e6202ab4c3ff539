/*
 * spawn: child processes on the libuv loop. See spawn.h.
 */
#define _GNU_SOURCE

#include "act/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/trust.h"

#define READ_CHUNK 65536 /* room kept free for one read */

static void spawn_closed(uv_handle_t *h)
{
	struct spawn *sp = h->data;

	if (--sp->open > 0)
		return;
	sp->cb(sp);
	free(sp->obuf.p);
	free(sp->ebuf.p);
	free(sp);
}

static void close_handle(uv_handle_t *h, bool *flag)
{
	if (!*flag)
		return;
	*flag = false;
	uv_close(h, spawn_closed);
}

static void spawn_maybe_done(struct spawn *sp)
{
	if (sp->exited && !sp->out_open && !sp->err_open)
		close_handle((uv_handle_t *)&sp->timer, &sp->timer_open);
}

static void spawn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct spawn *sp = h->data;
	struct outbuf *b = h == (uv_handle_t *)&sp->out ? &sp->obuf : &sp->ebuf;

	(void)suggested;
	if (b->cap - b->len < READ_CHUNK && b->cap < b->max + READ_CHUNK) {
		size_t cap = b->cap ? b->cap * 2 : READ_CHUNK;
		char *p;

		/* Never past MAX and one read beyond it (where what outgrows MAX is read and dropped): a doubling adds
		 * no slack above the bound. */
		if (cap > b->max + READ_CHUNK)
			cap = b->max + READ_CHUNK;
		p = realloc(b->p, cap + 1);

		if (p) {
			b->p = p;
			b->cap = cap;
		}
	}
	buf->base = b->p ? b->p + b->len : NULL;
	buf->len = b->p ? b->cap - b->len : 0;
}

static void spawn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct spawn *sp = s->data;
	bool is_out = s == (uv_stream_t *)&sp->out;
	struct outbuf *b = is_out ? &sp->obuf : &sp->ebuf;

	(void)buf;
	if (nread > 0) {
		/* What outgrows MAX is read and dropped, and counted: the caller can say how much there was (the child
		 * runs to its end or its deadline; its output costs no memory past MAX). */
		b->total += (size_t)nread;
		b->len += (size_t)nread;
		if (b->len > b->max) {
			b->len = b->max;
			b->over = is_out;
		}
		return;
	}
	if (nread == 0)
		return;
	/* EOF or an error (ENOBUFS when the buffer could not grow): this pipe is done. */
	if (nread != UV_EOF)
		b->over = true;
	close_handle((uv_handle_t *)s, is_out ? &sp->out_open : &sp->err_open);
	spawn_maybe_done(sp);
}

static void spawn_timer(uv_timer_t *t)
{
	struct spawn *sp = t->data;

	if (!sp->exited && !sp->killed) {
		sp->timed_out = true;
		sp->killed = true;
		uv_process_kill(&sp->proc, SIGKILL);
		uv_timer_start(&sp->timer, spawn_timer, SPAWN_KILL_GRACE_MS, 0);
		return;
	}
	/* The child is gone (or will not go) but something still holds a pipe: stop waiting for it. */
	close_handle((uv_handle_t *)&sp->out, &sp->out_open);
	close_handle((uv_handle_t *)&sp->err, &sp->err_open);
	close_handle((uv_handle_t *)&sp->proc, &sp->proc_open);
	close_handle((uv_handle_t *)&sp->timer, &sp->timer_open);
}

static void spawn_exit(uv_process_t *p, int64_t status, int term_signal)
{
	struct spawn *sp = p->data;

	sp->exited = true;
	sp->status = status;
	sp->term_signal = term_signal;
	close_handle((uv_handle_t *)&sp->proc, &sp->proc_open);
	if (sp->out_open || sp->err_open)
		uv_timer_start(&sp->timer, spawn_timer, SPAWN_KILL_GRACE_MS, 0);
	spawn_maybe_done(sp);
}

/* Start FILE with ARGV, or (FILE NULL) end at once with REFUSED_RC: the callback runs as for a failed start. */
static int start(uv_loop_t *loop, const char *file, char **argv, size_t max_out, size_t max_err, int64_t timeout_ms,
		 spawn_fn cb, void *ctx, struct spawn **out, int refused_rc, const char *refused)
{
	struct spawn *sp = calloc(1, sizeof(*sp));
	uv_process_options_t opt;
	uv_stdio_container_t stdio[3];

	if (!sp)
		return -ENOMEM;
	sp->cb = cb;
	sp->ctx = ctx;
	sp->obuf.max = max_out;
	sp->ebuf.max = max_err;
	uv_pipe_init(loop, &sp->out, 0);
	uv_pipe_init(loop, &sp->err, 0);
	uv_timer_init(loop, &sp->timer);
	sp->out.data = sp->err.data = sp->timer.data = sp;
	sp->out_open = sp->err_open = sp->timer_open = true;
	sp->open = 3;
	memset(&opt, 0, sizeof(opt));
	memset(stdio, 0, sizeof(stdio));
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[1].data.stream = (uv_stream_t *)&sp->out;
	stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[2].data.stream = (uv_stream_t *)&sp->err;
	opt.file = file;
	opt.args = argv;
	opt.stdio = stdio;
	opt.stdio_count = 3;
	opt.exit_cb = spawn_exit;
	if (file) {
		sp->spawn_rc = uv_spawn(loop, &sp->proc, &opt);
		sp->proc.data = sp;
		sp->open++;
		sp->proc_open = true;
	} else {
		/* Never started, and no process handle: the pipes and the timer close, then the callback runs. */
		sp->spawn_rc = refused_rc;
		snprintf(sp->refused, sizeof(sp->refused), "%s", refused);
	}
	if (out)
		*out = sp;
	if (sp->spawn_rc < 0) {
		/* libuv initialised the handle before failing: it is closed like a live one. */
		sp->exited = true;
		close_handle((uv_handle_t *)&sp->proc, &sp->proc_open);
		close_handle((uv_handle_t *)&sp->out, &sp->out_open);
		close_handle((uv_handle_t *)&sp->err, &sp->err_open);
		close_handle((uv_handle_t *)&sp->timer, &sp->timer_open);
		return 0;
	}
	uv_read_start((uv_stream_t *)&sp->out, spawn_alloc, spawn_read);
	uv_read_start((uv_stream_t *)&sp->err, spawn_alloc, spawn_read);
	uv_timer_start(&sp->timer, spawn_timer, timeout_ms > 0 ? (uint64_t)timeout_ms : 10000, 0);
	return 0;
}

int spawn_start(uv_loop_t *loop, char **argv, size_t max_out, size_t max_err, int64_t timeout_ms, spawn_fn cb,
		void *ctx, struct spawn **out)
{
	return start(loop, argv[0], argv, max_out, max_err, timeout_ms, cb, ctx, out, 0, "");
}

int spawn_start_trusted(uv_loop_t *loop, char **argv, const char *because, size_t max_out, size_t max_err,
			int64_t timeout_ms, spawn_fn cb, void *ctx, struct spawn **out)
{
	char path[4096], file[64], err[512];
	int fd = -1, r, fl;

	r = trust_find_program(argv[0], path, sizeof(path));
	if (r < 0) {
		snprintf(err, sizeof(err), "%s: %s", argv[0], r == -ENOENT ? "not found in PATH" : strerror(-r));
		return start(loop, NULL, argv, max_out, max_err, timeout_ms, cb, ctx, out, r, err);
	}
	r = trust_walk(path, geteuid(), TRUST_FOLLOW, because, &fd, err, sizeof(err));
	if (r < 0)
		return start(loop, NULL, argv, max_out, max_err, timeout_ms, cb, ctx, out, r, err);
	/* The child execs what the walk checked: the descriptor stays open across the fork (a script's interpreter
	 * reads it by that name too), and is closed here once the child has it. */
	fl = fcntl(fd, F_GETFD);
	if (fl < 0 || fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC) < 0) {
		r = -errno;
		close(fd);
		snprintf(err, sizeof(err), "%.200s: %s", path, strerror(-r));
		return start(loop, NULL, argv, max_out, max_err, timeout_ms, cb, ctx, out, r, err);
	}
	snprintf(file, sizeof(file), "/proc/self/fd/%d", fd);
	r = start(loop, file, argv, max_out, max_err, timeout_ms, cb, ctx, out, 0, "");
	close(fd);
	return r;
}

int spawn_limit_data(struct spawn *sp, size_t bytes)
{
	struct rlimit rl = { .rlim_cur = bytes, .rlim_max = bytes };

	if (sp->spawn_rc < 0 || sp->exited || sp->proc.pid <= 0)
		return -ESRCH;
	if (prlimit(sp->proc.pid, RLIMIT_DATA, &rl, NULL) < 0)
		return -errno;
	sp->data_max = bytes;
	return 0;
}

void spawn_kill(struct spawn *sp)
{
	if (!sp->exited && !sp->killed && sp->proc_open) {
		sp->killed = true;
		uv_process_kill(&sp->proc, SIGKILL);
	}
}
