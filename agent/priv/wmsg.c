/*
 * wmsg: the engine's and the writer's messages as bytes. See wmsg.h.
 */
#include "build-config.h"

#include "priv/wmsg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* What each type carries: its two strings (first, second) and whether it has an op. */
enum field { F_NONE, F_NAME, F_VALUE, F_PATH, F_TEXT };

static const struct shape {
	enum field first, second;
	uint16_t op_min, op_max; /* 0, 0: no op */
} shapes[] = {
	[WMSG_SET] = {F_NAME, F_VALUE, 0, 0},
	[WMSG_RESTORE] = {F_NAME, F_NONE, 0, 0},
	[WMSG_NGINX] = {F_NONE, F_NONE, WMSG_NGINX_TEST, WMSG_NGINX_DUMP},
	[WMSG_SOCKET] = {F_NONE, F_NONE, WMSG_SOCKET_DIAG, WMSG_SOCKET_TCP6},
	[WMSG_OPEN_LOG] = {F_PATH, F_NONE, 0, 0},
	[WMSG_RELOAD] = {F_NONE, F_NONE, 0, 0},
	[WMSG_RESULT] = {F_TEXT, F_NONE, 0, 0},
	[WMSG_READ] = {F_NAME, F_NONE, 0, 0},
	[WMSG_PROBE] = {F_NAME, F_NONE, 0, 0},
	[WMSG_NICS] = {F_VALUE, F_NONE, 0, 0},
	[WMSG_SYSCTL] = {F_NAME, F_NONE, 0, 0},
};

static const char *const type_names[] = {
	[WMSG_SET] = "set", [WMSG_RESTORE] = "restore", [WMSG_NGINX] = "nginx", [WMSG_SOCKET] = "socket",
	[WMSG_OPEN_LOG] = "open-log", [WMSG_RELOAD] = "reload", [WMSG_RESULT] = "result", [WMSG_READ] = "read",
	[WMSG_PROBE] = "probe", [WMSG_NICS] = "nics", [WMSG_SYSCTL] = "sysctl",
};

const char *wmsg_type_name(enum wmsg_type type)
{
	return type >= WMSG_SET && type <= WMSG_TYPE_LAST ? type_names[type] : "?";
}

static bool known(uint32_t type)
{
	return type >= WMSG_SET && type <= WMSG_TYPE_LAST;
}

static size_t field_max(enum field f)
{
	switch (f) {
	case F_NAME: return WMSG_NAME_MAX - 1;
	case F_VALUE: return WMSG_VALUE_MAX - 1;
	case F_PATH: return WMSG_PATH_MAX - 1;
	case F_TEXT: return WMSG_TEXT_MAX - 1;
	case F_NONE: break;
	}
	return 0;
}

/* Where field F is in a struct wmsg. */
static size_t field_off(enum field f)
{
	switch (f) {
	case F_NAME: return offsetof(struct wmsg, name);
	case F_VALUE: return offsetof(struct wmsg, value);
	case F_PATH: return offsetof(struct wmsg, path);
	case F_TEXT: return offsetof(struct wmsg, text);
	case F_NONE: break;
	}
	return 0;
}

/* Whether S (LEN bytes) may be field F: a name of [a-z0-9._-]; a value or a path of printable ASCII (a path
 * absolute); a text of printable ASCII, tab, or bytes of 0x80 and above (the writer's messages quote nginx, which
 * may print UTF-8; the engine escapes what it shows). Empty only where F may be. */
static bool field_ok(enum field f, const char *s, size_t len)
{
	if (len > field_max(f) || (len == 0 && f != F_TEXT && f != F_VALUE))
		return false;
	if (f == F_PATH && s[0] != '/')
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (f) {
		case F_NAME:
			/* upper case too: an interface's name may have it (rps.enP1s0, Azure's and ARM hosts') */
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
			      c == '_' || c == '-'))
				return false;
			break;
		case F_VALUE:
		case F_PATH:
			if (c < 0x20 || c > 0x7e)
				return false;
			break;
		case F_TEXT:
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return false;
			break;
		case F_NONE:
			return false;
		}
	}
	return true;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

int wmsg_encode(const struct wmsg *m, uint8_t *buf, size_t len)
{
	const struct shape *sh;
	const char *a = NULL, *b = NULL;
	size_t la = 0, lb = 0;

	if (!m || !known(m->type))
		return -EINVAL;
	sh = &shapes[m->type];
	if (sh->op_max ? m->op < sh->op_min || m->op > sh->op_max : m->op != 0)
		return -EINVAL;
	if (m->type != WMSG_RESULT && m->result != 0)
		return -EINVAL;
	if (sh->first != F_NONE) {
		a = (const char *)m + field_off(sh->first);
		la = strnlen(a, field_max(sh->first) + 1);
		if (!field_ok(sh->first, a, la))
			return -EINVAL;
	}
	if (sh->second != F_NONE) {
		b = (const char *)m + field_off(sh->second);
		lb = strnlen(b, field_max(sh->second) + 1);
		if (!field_ok(sh->second, b, lb))
			return -EINVAL;
	}
	if (len < WMSG_HEAD + la + lb)
		return -ENOSPC;
	put32(buf, WMSG_MAGIC);
	put16(buf + 4, (uint16_t)m->type);
	put16(buf + 6, m->op);
	put32(buf + 8, m->id);
	put32(buf + 12, (uint32_t)m->result);
	put16(buf + 16, (uint16_t)la);
	put16(buf + 18, (uint16_t)lb);
	if (la)
		memcpy(buf + WMSG_HEAD, a, la);
	if (lb)
		memcpy(buf + WMSG_HEAD + la, b, lb);
	return (int)(WMSG_HEAD + la + lb);
}

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static const char *field_name(enum field f)
{
	static const char *const names[] = {"", "knob name", "value", "path", "text"};

	return names[f];
}

/* String F of LEN bytes at P into OUT's field. */
static int take(struct wmsg *out, enum field f, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	char *dst;

	if (f == F_NONE) {
		if (len)
			return bad(err, errlen, "%s: no such string in it (%zu bytes)", wmsg_type_name(out->type),
				   len);
		return 0;
	}
	if (!field_ok(f, (const char *)p, len))
		return bad(err, errlen, "a %s that is not one: %zu bytes%s", field_name(f), len,
			   len > field_max(f) ? ", over its limit" : "");
	dst = (char *)out + field_off(f);
	memcpy(dst, p, len);
	dst[len] = '\0';
	return 0;
}

int wmsg_decode(const uint8_t *buf, size_t len, struct wmsg *out, char *err, size_t errlen)
{
	const struct shape *sh;
	uint32_t type;
	size_t la, lb;
	int r;

	memset(out, 0, sizeof(*out));
	if (!buf || len < WMSG_HEAD)
		return bad(err, errlen, "%zu bytes: shorter than a message's %d", len, WMSG_HEAD);
	if (len > WMSG_MAX)
		return bad(err, errlen, "%zu bytes: longer than a message's %d", len, WMSG_MAX);
	if (get32(buf) != WMSG_MAGIC)
		return bad(err, errlen, "not a message of this version (magic %08x)", (unsigned)get32(buf));
	type = get16(buf + 4);
	if (!known(type))
		return bad(err, errlen, "unknown type %u", (unsigned)type);
	out->type = (enum wmsg_type)type;
	sh = &shapes[type];
	out->op = get16(buf + 6);
	if (sh->op_max ? out->op < sh->op_min || out->op > sh->op_max : out->op != 0)
		return bad(err, errlen, "%s: op %u is none of its ops", wmsg_type_name(out->type),
			   (unsigned)out->op);
	out->id = get32(buf + 8);
	out->result = (int32_t)get32(buf + 12);
	if (out->type != WMSG_RESULT && out->result != 0)
		return bad(err, errlen, "%s: a result in a request", wmsg_type_name(out->type));
	if (out->type == WMSG_RESULT && (out->result > 0 || out->result < -4095))
		return bad(err, errlen, "a result that is neither 0 nor an errno (%d)", (int)out->result);
	la = get16(buf + 16);
	lb = get16(buf + 18);
	if (WMSG_HEAD + la + lb != len)
		return bad(err, errlen, "strings of %zu and %zu bytes in a message of %zu", la, lb, len);
	r = take(out, sh->first, buf + WMSG_HEAD, la, err, errlen);
	if (r == 0)
		r = take(out, sh->second, buf + WMSG_HEAD + la, lb, err, errlen);
	return r;
}
