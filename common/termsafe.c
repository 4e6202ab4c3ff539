/*
 * termsafe: what may reach a terminal. See termsafe.h.
 */
#include "termsafe.h"

#include <stdio.h>
#include <string.h>

/* The length of the safe character at P (1..4), or 0 when P[0] must be escaped. */
static size_t safe_char(const unsigned char *p, size_t len)
{
	size_t more;

	if (p[0] >= 0x20 && p[0] < 0x7f)
		return 1;
	if (p[0] < 0xc2 || p[0] > 0xf4)
		return 0; /* C0, DEL, a lone continuation byte, an overlong lead, beyond U+10FFFF */
	more = p[0] < 0xe0 ? 1 : p[0] < 0xf0 ? 2 : 3;
	if (len <= more)
		return 0;
	for (size_t j = 1; j <= more; j++)
		if ((p[j] & 0xc0) != 0x80)
			return 0;
	if (p[0] == 0xc2 && p[1] < 0xa0)
		return 0; /* C1 */
	return more + 1;
}

bool termsafe_clean(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0, n; i < len; i += n)
		if (!(n = safe_char(p + i, len - i)))
			return false;
	return true;
}

/* The escape of byte C into E (at most 5 bytes with the terminator); its length. */
static size_t escape(unsigned char c, char e[5])
{
	const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;

	if (named)
		return (size_t)snprintf(e, 5, "%s", named);
	return (size_t)snprintf(e, 5, "\\x%02x", c);
}

size_t termsafe_escaped_size(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t size = 1;
	char e[5];

	for (size_t i = 0, n; i < len; i += n) {
		n = safe_char(p + i, len - i);
		size += n ? n : escape(p[i], e);
		n = n ? n : 1;
	}
	return size;
}

char *termsafe_escape(const char *s, size_t len, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	if (!outlen)
		return out;
	for (size_t i = 0, n; i < len; i += n) {
		char e[5];
		size_t elen;

		n = safe_char(p + i, len - i);
		elen = n ? n : escape(p[i], e);
		if (o + elen >= outlen)
			break;
		memcpy(out + o, n ? s + i : e, elen);
		o += elen;
		n = n ? n : 1;
	}
	out[o] = '\0';
	return out;
}
