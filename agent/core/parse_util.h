/*
 * parse_util: small pure helpers shared by the parse_*.c parsers: walking the lines and blank-separated tokens of
 * a byte buffer that need not be NUL-terminated, and strict text-to-number conversion.
 *
 * Nothing here allocates or reads outside [p, end). Numbers refuse empty text, stray characters (signs, spaces,
 * "0x") and overflow instead of saturating or wrapping, so a hostile value becomes -EBADMSG, not a plausible
 * number. Blanks are space and tab only: a '\r' is an ordinary byte (the /proc texts never hold one; a caller
 * reading CRLF text trims it from the line itself). Must not log, read files or keep state between calls.
 */
#ifndef NGXAT_PARSE_UTIL_H
#define NGXAT_PARSE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The unread part [p, end) of a buffer; a line or a token taken from it is a cursor too. */
struct parse_cursor {
	const char *p;
	const char *end;
};

/* Start C over LEN bytes at BUF; BUF may be NULL when LEN is 0. */
void parse_cursor_init(struct parse_cursor *c, const char *buf, size_t len);
/* Bytes left in C. */
size_t parse_cursor_len(const struct parse_cursor *c);
/* True when BUF holds a NUL byte: no text source we parse has one, so it marks a corrupt or hostile input. */
bool parse_has_nul(const char *buf, size_t len);
/* Take the next line of C into LINE, without its '\n'; a last line lacking '\n' counts. False when C is empty. */
bool parse_next_line(struct parse_cursor *c, struct parse_cursor *line);
/* How many lines parse_next_line would take from BUF (used to size an allocation before parsing). */
size_t parse_count_lines(const char *buf, size_t len);
/* Skip spaces and tabs at the front of C. */
void parse_skip_blanks(struct parse_cursor *c);
/* Take the next blank-separated token of C into TOK. False when only blanks remain. */
bool parse_next_token(struct parse_cursor *c, struct parse_cursor *tok);
/* True when nothing but blanks remains in C (C is not advanced). */
bool parse_only_blanks(const struct parse_cursor *c);
/* True when TOK is exactly the NUL-terminated LIT. */
bool parse_token_eq(const struct parse_cursor *tok, const char *lit);
/* True when TOK begins with the NUL-terminated LIT. */
bool parse_token_starts(const struct parse_cursor *tok, const char *lit);
/* Copy TOK into DST of SIZE bytes, NUL-terminated. 0, or -E2BIG (DST untouched) when it does not fit. */
int parse_token_copy(const struct parse_cursor *tok, char *dst, size_t size);
/* True when TOK is one or more decimal digits and nothing else. */
bool parse_token_is_digits(const struct parse_cursor *tok);

/* LEN decimal digits at S into OUT. 0, or -EBADMSG for no digits, any other byte, or a value above UINT64_MAX. */
int parse_u64(const char *s, size_t len, uint64_t *out);
/* Like parse_u64 with an optional leading '-'. 0, or -EBADMSG outside [INT64_MIN, INT64_MAX]. */
int parse_i64(const char *s, size_t len, int64_t *out);
/* LEN hex digits at S (either case, no "0x") into OUT. 0, or -EBADMSG as for parse_u64. */
int parse_x64(const char *s, size_t len, uint64_t *out);
/* Take the next token of C as a decimal u64. 0, -ENODATA when no token is left, -EBADMSG when not a number. */
int parse_next_u64(struct parse_cursor *c, uint64_t *out);
/* Take the next token of C as a hex u64. 0, -ENODATA, -EBADMSG as for parse_next_u64. */
int parse_next_x64(struct parse_cursor *c, uint64_t *out);
/* A + B into OUT. 0, or -EBADMSG when the sum passes UINT64_MAX (a corrupt counter, not a wrap to trust). */
int parse_add_u64(uint64_t a, uint64_t b, uint64_t *out);

#endif
