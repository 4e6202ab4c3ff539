/*
 * wire_text: stored text as a JSON string on the wire. See wire_text.h.
 */
#include "build-config.h"

#include "api/wire_text.h"

#include <stdlib.h>
#include <string.h>

#include "termsafe.h"

json_t *wire_text(const char *s)
{
	json_t *o;
	size_t len, n;
	char *e;

	if (!s)
		return NULL;
	o = json_string(s);
	if (o)
		return o;
	/* Not UTF-8 (or out of memory, and the escape fails the same way). */
	len = strlen(s);
	n = termsafe_escaped_size(s, len);
	e = malloc(n);
	if (!e)
		return NULL;
	o = json_string(termsafe_escape(s, len, e, n));
	free(e);
	return o;
}
