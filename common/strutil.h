/*
 * strutil: strict string-to-number conversions and a growable string buffer.
 *
 * Used for configuration values, query strings and command-line arguments: whole-string, range-checked, no
 * silent truncation. Not for /proc parsing (agent/core has its own bounded scanners for non-terminated buffers).
 */
#ifndef NGXAT_STRUTIL_H
#define NGXAT_STRUTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr_storage;

/* Decimal int64 in [lo, hi], the whole string. 0, -EINVAL, -ERANGE. */
int str_to_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* The process id of a pid file's LEN bytes at BUF (nginx's: decimal, a newline after it; trailing whitespace is
 * allowed, nothing else) in [1, 2^30). 0, -EINVAL (empty, half-written, not a number), -ERANGE. */
int str_to_pid(const char *buf, size_t len, int *out);
/* yes/no, true/false, on/off, 1/0. 0 or -EINVAL. */
int str_to_bool(const char *s, bool *out);
/* A duration "250ms", "1s", "5m", "48h", "90d" (a bare number is seconds) into ms within [lo_ms, hi_ms].
 * 0, -EINVAL, -ERANGE. */
int str_to_duration_ms(const char *s, int64_t lo_ms, int64_t hi_ms, int64_t *out);
/* A size in bytes, "65536", "512K", "8M", "1G" (powers of 1024, as systemd's MemoryMax=), within [lo, hi].
 * 0, -EINVAL, -ERANGE. */
int str_to_size(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* BYTES for a person into OUT: "8 MiB", "20.3 MiB", "512 KiB", "97.7 KiB", "1000 bytes". Returns the length
 * written. */
size_t str_size(char *out, size_t n, uint64_t bytes);
/* Octal file mode "0660". 0, -EINVAL. */
int str_to_mode(const char *s, unsigned *out);
/* A TCP listen address "IPv4:PORT", "[IPv6]:PORT" or "localhost:PORT" (numeric, no name lookup) into SA (a
 * struct sockaddr_in or _in6 of *SALEN bytes). *LOOPBACK tells whether it is a loopback address (127/8, ::1,
 * ::ffff:127/104). 0 or -EINVAL. */
int str_to_listen(const char *s, struct sockaddr_storage *sa, unsigned *salen, bool *loopback);
/* Copy SRC into DST of size N; -ENAMETOOLONG (DST untouched) when it does not fit. */
int str_copy(char *dst, size_t n, const char *src);
/* The path FMT names (an absolute path, formatted) under ROOT (NULL, "" or "/": the real root; trailing slashes of
 * ROOT are dropped) into OUT of N bytes. 0, or -ENAMETOOLONG when it does not fit (OUT then holds what fits).
 * The one way every module roots the /proc, /sys and nginx paths it reads (tests run the agent on a fake tree). */
int str_rooted(char *out, size_t n, const char *root, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* str_rooted with a va_list. */
int str_vrooted(char *out, size_t n, const char *root, const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
/* Format an error message into ERR of ERRLEN bytes (truncated to fit); nothing when ERR is NULL or ERRLEN 0.
 * The one helper every module uses for its "char *err, size_t errlen" out-parameter. */
void str_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Latency MS for people into OUT of N bytes: "-" when not finite. FINE (the synthetic client's microsecond
 * timings): "0.08" below 1, "3.4" below 10, "12" above. Else (the access log's 1 ms resolution, where a static
 * answer logs 0): "<1" below 1, never "0", "12" above. */
void str_fmt_ms(char *out, size_t n, double ms, bool fine);

/* A growable, always NUL-terminated string. A failed allocation sets OOM and later appends do nothing. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* Empty buffer, no allocation. */
void sbuf_init(struct sbuf *b);
/* Release; the buffer is empty again. */
void sbuf_free(struct sbuf *b);
/* Drop contents, keep memory. */
void sbuf_reset(struct sbuf *b);
/* Append LEN bytes. */
void sbuf_add(struct sbuf *b, const char *s, size_t len);
/* Append a NUL-terminated string. */
void sbuf_puts(struct sbuf *b, const char *s);
/* Append formatted text. */
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Contents ("" when empty or OOM). */
const char *sbuf_str(const struct sbuf *b);

#endif
