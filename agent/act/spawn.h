/*
 * spawn: one child process on the libuv loop, its stdout and stderr read into memory, with a deadline.
 *
 * Owns the child's handles (process, two pipes, a timer) and their buffers until the callback has run. It kills
 * the child (SIGKILL) past its deadline, keeps at most a bound of each output (the rest is read, counted and
 * dropped: memory stays within the bound whatever the child prints), and never blocks the loop.
 * It must not interpret what the child printed (the callers do: nginx -t / -T, a load generator).
 */
#ifndef NGXAT_SPAWN_H
#define NGXAT_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define SPAWN_KILL_GRACE_MS 1000 /* after SIGKILL or exit, for the pipes to close */

/* What a child printed on one pipe: P[0..LEN) (P has room for a byte more), at most MAX bytes; TOTAL is how much it
 * printed; OVER (stdout only) when that was more than MAX (the rest was dropped). */
struct outbuf {
	char *p;
	size_t len, cap, max, total;
	bool over;
};

struct spawn;
typedef void (*spawn_fn)(struct spawn *sp);

/* One child with both output pipes read into memory and a deadline; CB runs once every handle is closed. */
struct spawn {
	uv_process_t proc;
	uv_pipe_t out, err;
	uv_timer_t timer;
	struct outbuf obuf, ebuf;
	int open;
	bool out_open, err_open, proc_open, timer_open;
	bool exited, killed, timed_out;
	int64_t status;
	int term_signal;
	int spawn_rc;
	size_t data_max;   /* the child's RLIMIT_DATA set by spawn_limit_data, or 0 */
	char refused[512]; /* spawn_start_trusted: why the program was not run (spawn_rc -EPERM or -ELOOP), or "" */
	spawn_fn cb;
	void *ctx;
};

/*
 * Run ARGV (no shell; ARGV[0] looked up in PATH) on LOOP with stdout kept up to MAX_OUT bytes and stderr up to
 * MAX_ERR (more is counted and dropped), killed past TIMEOUT_MS. CB(sp) runs exactly once, later, from
 * LOOP, with CTX in sp->ctx; SP is freed after it returns. OUT (may be NULL) gets SP for spawn_kill until then.
 * 0, or -ENOMEM (CB will not run). A program that cannot start ends with spawn_rc < 0.
 */
int spawn_start(uv_loop_t *loop, char **argv, size_t max_out, size_t max_err, int64_t timeout_ms, spawn_fn cb,
		void *ctx, struct spawn **out);
/*
 * spawn_start for a program run as root whose path must be trusted (trust.h): ARGV[0] (looked up in PATH) is walked
 * from / with every component, and the link it may be (the alternatives), owned by root or the agent's user and
 * writable by no one else, and the program is run from the descriptor that walk opened (/proc/self/fd/N), not by
 * its name again: a link swapped after the walk changes nothing (issue 22, R3). A program that is not trusted ends
 * like one that cannot start, with the reason in sp->refused; BECAUSE says why it is checked.
 */
int spawn_start_trusted(uv_loop_t *loop, char **argv, const char *because, size_t max_out, size_t max_err,
			int64_t timeout_ms, spawn_fn cb, void *ctx, struct spawn **out);
/* Limit the data segment (RLIMIT_DATA: the heap and private mappings, what nginx allocates) of SP's running child
 * to BYTES: past it, its allocations fail (nginx says "malloc() failed (12: Cannot allocate memory)") instead of
 * growing into the memory the agent's cgroup shares with it. Set right after the exec, before the program has read
 * its input. 0, -ESRCH (no child runs), -errno of prlimit(2). */
int spawn_limit_data(struct spawn *sp, size_t bytes);
/* Kill SP's child now (SIGKILL); its callback still runs once, with killed set. */
void spawn_kill(struct spawn *sp);

#endif
