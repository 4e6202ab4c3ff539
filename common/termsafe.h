/*
 * termsafe: text from the agent made harmless for a terminal.
 *
 * Owns the one rule for what may reach an operator's terminal: printable ASCII and valid UTF-8 other than the C1
 * controls. Control characters (ESC, CR, LF, ...), DEL, C1 (U+0080..U+009F: 0x9b is a CSI on some terminals) and
 * bytes that are not UTF-8 are shown escaped (\n, \r, \t, \xNN). The agent refuses such text where an operator
 * gives it; ngxctl escapes whatever it shows, so rows stored before that are harmless too. No I/O.
 */
#ifndef NGXAT_TERMSAFE_H
#define NGXAT_TERMSAFE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether S (LEN bytes) needs no escaping. */
bool termsafe_clean(const char *s, size_t len);
/* S (LEN bytes) escaped into OUT (always terminated; cut at OUTLEN, never inside an escape); OUT. */
char *termsafe_escape(const char *s, size_t len, char *out, size_t outlen);
/* The size escaping S (LEN bytes) needs, its terminator included. */
size_t termsafe_escaped_size(const char *s, size_t len);

#endif
