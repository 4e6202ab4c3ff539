/*
 * wire_text: stored text as a JSON string on the wire, whatever bytes it holds.
 *
 * jansson refuses a string that is not UTF-8, and one such string made a whole answer fail (issue 22, R7: one audit
 * row with a byte 0xff, and GET /v1/audit answered 503 for good). Text the agent renders from its store, its logs
 * or a client (audit rows, changes, problem details) goes through here: valid UTF-8 as it is, anything else
 * escaped as termsafe.h escapes it for a terminal (\xNN, \n, ...), so that an answer is always built. No I/O.
 */
#ifndef NGXAT_WIRE_TEXT_H
#define NGXAT_WIRE_TEXT_H

#include <jansson.h>

/* S as a JSON string (new reference): as it is when UTF-8, else escaped. NULL when S is NULL or out of memory. */
json_t *wire_text(const char *s);

#endif
