/*
 * parse_accesslog: one nginx access-log line in either of the two formats the agent documents.
 *
 * JSON (told apart by a leading '{'):
 *
 *   log_format ngxat_json escape=json
 *       '{"time":"$time_iso8601","status":$status,"request_time":$request_time,'
 *       '"upstream_response_time":"$upstream_response_time","upstream_addr":"$upstream_addr",'
 *       '"bytes":$body_bytes_sent}';
 *
 *   Keys may come in any order and extra keys (any JSON value, nested up to 64 deep) are skipped; "status" and
 *   "request_time" are required, "upstream_response_time" and "upstream_connect_time" are optional (absent: no
 *   upstream, no connect time). Each of them may be a JSON number or a string holding the same text. A key
 *   repeated is refused as ambiguous. With escape=json nginx writes an unset variable as "" rather than "-", so ""
 *   also means no upstream. $upstream_connect_time is a list like $upstream_response_time (one element per server
 *   tried; "-" for one whose connect failed before it took time) and is summed the same way.
 *
 * combined, with the two times appended:
 *
 *   log_format ngxat_combined
 *       '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
 *       '"$http_referer" "$http_user_agent" $request_time $upstream_response_time';
 *
 *   nginx escapes '"', '\\', control and non-ASCII bytes in variables as \xHH, so a quoted field never holds a raw
 *   quote and the first '"' of the line opens "$request" ($remote_user may hold blanks, so the part before it is
 *   not split). Fields are separated by exactly one blank, as nginx writes them; anything after
 *   $upstream_response_time (another appended variable) is refused rather than guessed at.
 *
 * Times are nginx's "%T.%03M" (seconds, three decimals); they are rounded to the nearest ms, and refused when
 * negative, in exponent form or above 1e7 s. Values above UINT32_MAX ms (49.7 days) saturate. Upstream times are a
 * list: ", " separates servers tried in turn, " : " upstream groups after an internal redirect, and "-" stands for
 * an attempt without a time; the numbers are summed. has_upstream is 1 when the list holds at least one number.
 *
 * The scanners walk the line once and allocate nothing, so line length does not matter.
 */
#include "parse.h"

#include <errno.h>
#include <string.h>
#if defined(__SSE2__) && !defined(PARSE_NO_SIMD) /* PARSE_NO_SIMD: a test build of the portable path */
#define USE_SSE2 1
#include <emmintrin.h>
#endif

#define MAX_TIME_MS 10000000000ull /* 1e7 s */
#define MAX_DEPTH 64		   /* nesting of skipped JSON values; one bit each in a uint64_t */

struct span {
	const char *b, *e;
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static uint32_t sat_u32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Whole span S is "D+" or "D+.D+", at most 1e7 s; *MS gets it rounded to the nearest ms (half up). */
static int parse_time(struct span s, uint64_t *ms)
{
	const char *p = s.b;
	uint64_t sec = 0, frac = 0;
	int nfrac = 0;

	if (p == s.e || !is_digit(*p))
		return -EBADMSG;
	for (; p < s.e && is_digit(*p); p++) {
		sec = sec * 10 + (uint64_t)(*p - '0');
		if (sec > MAX_TIME_MS / 1000)
			return -EBADMSG;
	}
	if (p < s.e) {
		if (*p++ != '.' || p == s.e)
			return -EBADMSG;
		for (; p < s.e; p++, nfrac++) {
			if (!is_digit(*p))
				return -EBADMSG;
			if (nfrac < 3)
				frac = frac * 10 + (uint64_t)(*p - '0');
			else if (nfrac == 3 && *p >= '5')
				frac++; /* 0.9995 -> 1000 ms: carries into seconds below */
		}
		for (; nfrac < 3; nfrac++)
			frac *= 10;
	}
	*ms = sec * 1000 + frac;
	return *ms > MAX_TIME_MS ? -EBADMSG : 0;
}

/* Whole span S is an HTTP status, 100..599. */
static int parse_status(struct span s, int *status)
{
	const char *p;
	int v = 0;

	if (s.b == s.e || s.e - s.b > 3)
		return -EBADMSG;
	for (p = s.b; p < s.e; p++) {
		if (!is_digit(*p))
			return -EBADMSG;
		v = v * 10 + (*p - '0');
	}
	if (v < 100 || v > 599)
		return -EBADMSG;
	*status = v;
	return 0;
}

static int is_list_sep(char c)
{
	return c == ' ' || c == ',' || c == ':';
}

/* $upstream_response_time: "-", "" (JSON's unset) or elements ("-" or a time) joined by ", " or " : ". */
static int parse_upstream(struct span s, uint32_t *sum_ms, int *has)
{
	const char *p = s.b;
	uint64_t sum = 0, ms;
	int n = 0;

	*sum_ms = 0;
	*has = 0;
	if (p == s.e)
		return 0;
	for (;;) {
		struct span el = { p, p };

		while (el.e < s.e && !is_list_sep(*el.e))
			el.e++;
		if (el.e - el.b == 1 && *el.b == '-') {
			/* attempt without a time */
		} else if (parse_time(el, &ms) < 0) {
			return -EBADMSG;
		} else {
			sum += ms; /* <= UINT32_MAX + 1e10 before the cap: cannot wrap */
			if (sum > UINT32_MAX)
				sum = UINT32_MAX;
			n++;
		}
		p = el.e;
		if (p == s.e)
			break;
		/* separator: optional blanks, one ',' or ':', optional blanks, then another element */
		while (p < s.e && *p == ' ')
			p++;
		if (p == s.e || (*p != ',' && *p != ':'))
			return -EBADMSG;
		p++;
		while (p < s.e && *p == ' ')
			p++;
		if (p == s.e)
			return -EBADMSG;
	}
	*sum_ms = (uint32_t)sum;
	*has = n > 0;
	return 0;
}

/* ---- JSON ---- */

struct scan {
	const char *p, *end;
	int plain; /* the whole line holds no escape and no control character */
};

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' || *s->p == '\n'))
		s->p++;
}

static int eat(struct scan *s, char c)
{
	if (s->p == s->end || *s->p != c)
		return -EBADMSG;
	s->p++;
	return 0;
}

/*
 * Whether [p, end) holds a byte that is not plain string content: an escape or a control character. Eight bytes a
 * step (gcc does not vectorise the byte loop at -O2): with ONES = 0x0101..01, a word has a byte below N (N <= 128)
 * iff (x - ONES * N) & ~x & HIGHS is not 0, and a byte equal to C iff (x ^ ONES * C) has a zero byte.
 */
static int has_special(const unsigned char *p, const unsigned char *end)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t acc = 0;

	for (; end - p >= 8; p += 8) {
		uint64_t x, y;

		memcpy(&x, p, 8);
		y = x ^ (ones * '\\');
		acc |= ((x - ones * 0x20) & ~x) | ((y - ones) & ~y);
	}
	if (acc & highs)
		return 1;
	for (; p < end; p++)
		if (*p < 0x20 || *p == '\\')
			return 1;
	return 0;
}

/*
 * A JSON string at s->p; OUT is its raw contents between the quotes. This runs for every key and value of every
 * log line: the common case (no escape) is one memchr for the closing quote and one check of the bytes before it
 * (none when the whole line was checked at once: 12 strings of a few bytes cost more one by one); a byte-wise
 * walk handles escapes. Measured on a 128-byte line: 170 ns -> 60 ns per line in this function.
 */
static int scan_string(struct scan *s, struct span *out)
{
	const unsigned char *p = (const unsigned char *)s->p, *end = (const unsigned char *)s->end, *q;

	if (p == end || *p != '"')
		return -EBADMSG;
	out->b = (const char *)++p;
	q = memchr(p, '"', (size_t)(end - p));
	if (q && (s->plain || !has_special(p, q))) {
		p = q;
	} else {
		while (p < end && *p != '"') {
			if (*p < 0x20)
				return -EBADMSG;
			if (*p != '\\') {
				p++;
				continue;
			}
			if (++p == end)
				return -EBADMSG;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (p + i >= end || !is_hex((char)p[i]))
						return -EBADMSG;
				p += 5;
			} else if (*p && strchr("\"\\/bfnrt", *p)) {
				p++;
			} else {
				return -EBADMSG;
			}
		}
		if (p >= end)
			return -EBADMSG;
	}
	out->e = (const char *)p;
	s->p = (const char *)p + 1;
	return 0;
}

/* A JSON number (strict grammar) at s->p. */
static int scan_number(struct scan *s, struct span *out)
{
	const char *p = s->p;

	out->b = p;
	if (p < s->end && *p == '-')
		p++;
	if (p == s->end || !is_digit(*p))
		return -EBADMSG;
	if (*p == '0')
		p++;
	else
		while (p < s->end && is_digit(*p))
			p++;
	if (p < s->end && *p == '.') {
		if (++p == s->end || !is_digit(*p))
			return -EBADMSG;
		while (p < s->end && is_digit(*p))
			p++;
	}
	if (p < s->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < s->end && (*p == '+' || *p == '-'))
			p++;
		if (p == s->end || !is_digit(*p))
			return -EBADMSG;
		while (p < s->end && is_digit(*p))
			p++;
	}
	out->e = s->p = p;
	return 0;
}

static int scan_literal(struct scan *s)
{
	static const char *const lits[] = { "true", "false", "null" };
	size_t i, n;

	for (i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
		n = strlen(lits[i]);
		if ((size_t)(s->end - s->p) >= n && memcmp(s->p, lits[i], n) == 0) {
			s->p += n;
			return 0;
		}
	}
	return -EBADMSG;
}

/* One object member's key and ':' (the value follows). */
static int scan_key(struct scan *s, struct span *key)
{
	if (scan_string(s, key) < 0)
		return -EBADMSG;
	skip_ws(s);
	if (eat(s, ':') < 0)
		return -EBADMSG;
	skip_ws(s);
	return 0;
}

/*
 * Skip any JSON value, validating it. Iterative: the open containers are a bit stack (1 = object), so hostile
 * nesting costs no C stack and is refused past MAX_DEPTH.
 */
static int skip_value(struct scan *s)
{
	uint64_t stack = 0;
	unsigned depth = 0;
	struct span sp;

	for (;;) {
		/* a value is expected at s->p */
		skip_ws(s);
		if (s->p == s->end)
			return -EBADMSG;
		if (*s->p == '{' || *s->p == '[') {
			int obj = *s->p == '{';

			if (depth == MAX_DEPTH)
				return -EBADMSG;
			stack = (stack << 1) | (uint64_t)obj;
			depth++;
			s->p++;
			skip_ws(s);
			if (s->p < s->end && *s->p == (obj ? '}' : ']')) {
				s->p++;
				stack >>= 1;
				depth--;
			} else {
				if (obj && scan_key(s, &sp) < 0)
					return -EBADMSG;
				continue;
			}
		} else if (*s->p == '"') {
			if (scan_string(s, &sp) < 0)
				return -EBADMSG;
		} else if (*s->p == '-' || is_digit(*s->p)) {
			if (scan_number(s, &sp) < 0)
				return -EBADMSG;
		} else if (scan_literal(s) < 0) {
			return -EBADMSG;
		}
		/* a value ended: close containers or move to the next element */
		for (;;) {
			int obj = (int)(stack & 1);

			if (depth == 0)
				return 0;
			skip_ws(s);
			if (s->p == s->end)
				return -EBADMSG;
			if (*s->p == ',') {
				s->p++;
				skip_ws(s);
				if (obj && scan_key(s, &sp) < 0)
					return -EBADMSG;
				break;
			}
			if (*s->p != (obj ? '}' : ']'))
				return -EBADMSG;
			s->p++;
			stack >>= 1;
			depth--;
		}
	}
}

/* Value of a field we read: a JSON string's raw content, or the text of a bare number. */
static int scan_field(struct scan *s, struct span *out)
{
	if (s->p < s->end && *s->p == '"')
		return scan_string(s, out);
	return scan_number(s, out);
}

static int span_is(struct span k, const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(k.e - k.b) == n && memcmp(k.b, lit, n) == 0;
}

enum { F_STATUS = 1, F_REQUEST = 2, F_UPSTREAM = 4, F_CONNECT = 8 };

/* The general JSON walk; PLAIN: the line is known to hold no escape and no control character. */
static int parse_json(const char *line, size_t len, int plain, struct access_rec *rec)
{
	struct scan s = { line, line + len, plain };
	struct span key, val;
	uint64_t ms;
	int seen = 0;

	skip_ws(&s);
	if (eat(&s, '{') < 0)
		return -EBADMSG;
	skip_ws(&s);
	if (s.p < s.end && *s.p == '}')
		return -EBADMSG; /* no status */
	for (;;) {
		int f = 0;

		if (scan_key(&s, &key) < 0)
			return -EBADMSG;
		if (span_is(key, "status"))
			f = F_STATUS;
		else if (span_is(key, "request_time"))
			f = F_REQUEST;
		else if (span_is(key, "upstream_response_time"))
			f = F_UPSTREAM;
		else if (span_is(key, "upstream_connect_time"))
			f = F_CONNECT;
		if (f & seen)
			return -EBADMSG;
		seen |= f;
		if (f == 0) {
			if (skip_value(&s) < 0)
				return -EBADMSG;
		} else if (scan_field(&s, &val) < 0) {
			return -EBADMSG;
		} else if (f == F_STATUS) {
			if (parse_status(val, &rec->status) < 0)
				return -EBADMSG;
		} else if (f == F_REQUEST) {
			if (parse_time(val, &ms) < 0)
				return -EBADMSG;
			rec->request_ms = sat_u32(ms);
		} else if (f == F_CONNECT) {
			if (parse_upstream(val, &rec->upstream_connect_ms, &rec->has_connect) < 0)
				return -EBADMSG;
			rec->has_connect = 1;
		} else if (parse_upstream(val, &rec->upstream_ms, &rec->has_upstream) < 0) {
			return -EBADMSG;
		}
		skip_ws(&s);
		if (s.p < s.end && *s.p == ',') {
			s.p++;
			skip_ws(&s);
			continue;
		}
		if (eat(&s, '}') < 0)
			return -EBADMSG;
		break;
	}
	skip_ws(&s);
	if (s.p != s.end || (seen & (F_STATUS | F_REQUEST)) != (F_STATUS | F_REQUEST))
		return -EBADMSG;
	rec->has_time = 1;
	return 0;
}

/*
 * The fast path, for the lines nginx writes with escape=json: up to FAST_MAX bytes, no blank between tokens, no
 * escape or control byte, flat members whose values are strings or numbers. One pass over the line finds the
 * escapes and control bytes and records where the quotes are (a bit each), eight bytes a step; the members are
 * then walked from quote to quote. Anything else (blanks, nested values, literals, a repeated key, a line that
 * would not parse) goes to parse_json, which decides: the fast path only ever accepts what parse_json accepts,
 * with the same values. 1.45k -> ~0.6k instructions a line on the agent's own format.
 */
#define FAST_MAX 512
#define FALLBACK 1

/* Whether LINE (LEN <= FAST_MAX) is free of escapes and control bytes; if so, Q gets a bit per '"'. */
static int quote_map(const unsigned char *line, size_t len, uint64_t q[FAST_MAX / 64])
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull, low7 = 0x7f7f7f7f7f7f7f7full;
	uint64_t special = 0;
	size_t i = 0;

	memset(q, 0, FAST_MAX / 8);
#ifdef USE_SSE2
	/* Sixteen bytes a step where the CPU has SSE2 (every x86-64): a third of the instructions of the words below. */
	for (; i + 16 <= len; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(line + i));
		__m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
		__m128i bs = _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'));

		special |= _mm_movemask_epi8(_mm_or_si128(ctl, bs)) ? highs : 0;
		q[i / 64] |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('"'))) << (i % 64);
	}
#endif
	for (; i + 8 <= len; i += 8) {
		uint64_t x, y, t, m;

		memcpy(&x, line + i, 8);
		y = x ^ (ones * '\\');
		special |= ((x - ones * 0x20) & ~x) | ((y - ones) & ~y);
		/* Exact per byte (no borrow between bytes): the high bit of each byte of x that is '"'. */
		t = x ^ (ones * '"');
		m = ~(((t & low7) + low7) | t) & highs;
		/* Gather the eight high bits into one byte (little-endian: byte k becomes bit k). */
		q[i / 64] |= (((m >> 7) * 0x0102040810204080ull) >> 56) << (i % 64);
	}
	if (special & highs)
		return 0;
	for (; i < len; i++) {
		if (line[i] < 0x20 || line[i] == '\\')
			return 0;
		if (line[i] == '"')
			q[i / 64] |= 1ull << (i % 64);
	}
	return 1;
}

/* The first quote at or after FROM, or LEN. */
static size_t next_quote(const uint64_t *q, size_t from, size_t len)
{
	for (size_t w = from / 64; w * 64 < len; w++) {
		uint64_t m = q[w] & (w == from / 64 ? ~0ull << (from % 64) : ~0ull);

		if (m)
			return w * 64 + (size_t)__builtin_ctzll(m);
	}
	return len;
}

/* The end of the JSON number starting at I (the grammar of scan_number), or 0 when there is none. */
static size_t number_end(const char *line, size_t i, size_t len)
{
	if (i < len && line[i] == '-')
		i++;
	if (i == len || !is_digit(line[i]))
		return 0;
	if (line[i] == '0')
		i++;
	else
		while (i < len && is_digit(line[i]))
			i++;
	if (i < len && line[i] == '.') {
		if (++i == len || !is_digit(line[i]))
			return 0;
		while (i < len && is_digit(line[i]))
			i++;
	}
	if (i < len && (line[i] == 'e' || line[i] == 'E')) {
		if (++i < len && (line[i] == '+' || line[i] == '-'))
			i++;
		if (i == len || !is_digit(line[i]))
			return 0;
		while (i < len && is_digit(line[i]))
			i++;
	}
	return i;
}

static int key_field(const char *k, size_t n)
{
	switch (n) {
	case 6:
		return memcmp(k, "status", 6) == 0 ? F_STATUS : 0;
	case 12:
		return memcmp(k, "request_time", 12) == 0 ? F_REQUEST : 0;
	case 21:
		return memcmp(k, "upstream_connect_time", 21) == 0 ? F_CONNECT : 0;
	case 22:
		return memcmp(k, "upstream_response_time", 22) == 0 ? F_UPSTREAM : 0;
	default:
		return 0;
	}
}

/* 0 with REC filled, or FALLBACK: the line is not one the fast path takes, and parse_json must decide. */
static int parse_json_fast(const char *line, size_t len, const uint64_t *q, struct access_rec *rec)
{
	size_t i = 1;
	int seen = 0;

	/* With a '}' last, every byte read below is inside the line: none of them can be that '}'. */
	if (len < 2 || line[len - 1] != '}')
		return FALLBACK;
	for (;;) {
		struct span v;
		size_t kb, ke;
		uint64_t ms;
		int f;

		if (line[i] != '"')
			return FALLBACK;
		kb = i + 1;
		ke = next_quote(q, kb, len);
		if (ke >= len - 1 || line[ke + 1] != ':')
			return FALLBACK;
		i = ke + 2;
		if (line[i] == '"') {
			v.b = line + i + 1;
			i = next_quote(q, i + 1, len);
			if (i >= len - 1)
				return FALLBACK;
			v.e = line + i++;
		} else {
			size_t e = number_end(line, i, len);

			if (e == 0)
				return FALLBACK;
			v.b = line + i;
			v.e = line + e;
			i = e;
		}
		f = key_field(line + kb, ke - kb);
		if (f & seen)
			return FALLBACK;
		seen |= f;
		if (f == F_STATUS) {
			if (parse_status(v, &rec->status) < 0)
				return FALLBACK;
		} else if (f == F_REQUEST) {
			if (parse_time(v, &ms) < 0)
				return FALLBACK;
			rec->request_ms = sat_u32(ms);
		} else if (f == F_UPSTREAM && parse_upstream(v, &rec->upstream_ms, &rec->has_upstream) < 0) {
			return FALLBACK;
		} else if (f == F_CONNECT) {
			if (parse_upstream(v, &rec->upstream_connect_ms, &rec->has_connect) < 0)
				return FALLBACK;
			rec->has_connect = 1;
		}
		if (line[i] == ',') {
			i++;
			continue;
		}
		if (i != len - 1)
			return FALLBACK;
		break;
	}
	if ((seen & (F_STATUS | F_REQUEST)) != (F_STATUS | F_REQUEST))
		return FALLBACK;
	rec->has_time = 1;
	return 0;
}

/* ---- combined ---- */

/* A "..." field at *P; *P is left after the closing quote. */
static int skip_quoted(const char **p, const char *end)
{
	const char *q = *p;

	if (q == end || *q != '"')
		return -EBADMSG;
	q = memchr(q + 1, '"', (size_t)(end - q - 1));
	if (!q)
		return -EBADMSG;
	*p = q + 1;
	return 0;
}

/* The run of bytes from *P up to the next blank (or the end); *P is left on the blank. */
static struct span token(const char **p, const char *end)
{
	struct span t = { *p, *p };

	while (t.e < end && *t.e != ' ')
		t.e++;
	*p = t.e;
	return t;
}

static int blank(const char **p, const char *end)
{
	if (*p == end || **p != ' ')
		return -EBADMSG;
	(*p)++;
	return 0;
}

static int parse_combined(const char *line, size_t len, struct access_rec *rec)
{
	const char *end = line + len, *p, *q;
	struct span t;
	uint64_t ms;
	size_t i;

	/* nginx escapes control bytes in every variable; a raw one means this is not an nginx line (or NULs from a
	 * log file that was preallocated and cut short). */
	for (i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			return -EBADMSG;
	q = memchr(line, '"', len);
	/* "$remote_addr - $remote_user [$time_local] " must come first */
	if (!q || q - line < 4 || q[-1] != ' ' || q[-2] != ']' || !memchr(line, '[', (size_t)(q - line)))
		return -EBADMSG;
	p = q;
	if (skip_quoted(&p, end) < 0 || blank(&p, end) < 0)
		return -EBADMSG;
	if (parse_status(token(&p, end), &rec->status) < 0 || blank(&p, end) < 0)
		return -EBADMSG;
	t = token(&p, end); /* $body_bytes_sent: digits, not used */
	if (t.b == t.e)
		return -EBADMSG;
	for (q = t.b; q < t.e; q++)
		if (!is_digit(*q))
			return -EBADMSG;
	if (blank(&p, end) < 0 || skip_quoted(&p, end) < 0 || blank(&p, end) < 0 || skip_quoted(&p, end) < 0)
		return -EBADMSG;
	/* combined ends here; main-style formats add quoted fields ("$http_x_forwarded_for"); the agent's add the
	 * two times. Anything else after the user agent is not a line of ours. */
	for (;;) {
		if (p == end)
			return 0; /* no times: has_time stays 0 */
		if (blank(&p, end) < 0)
			return -EBADMSG;
		if (p == end || *p != '"')
			break;
		if (skip_quoted(&p, end) < 0)
			return -EBADMSG;
	}
	if (parse_time(token(&p, end), &ms) < 0 || blank(&p, end) < 0)
		return -EBADMSG;
	rec->has_time = 1;
	rec->request_ms = sat_u32(ms);
	t.b = p;
	t.e = end;
	if (t.b == t.e) /* nginx writes "-", never nothing */
		return -EBADMSG;
	return parse_upstream(t, &rec->upstream_ms, &rec->has_upstream);
}

int parse_access_line(const char *line, size_t len, struct access_rec *rec)
{
	struct access_rec tmp = { 0 };
	int r;

	if (!line || len == 0)
		return -EBADMSG;
	if (line[0] == '{') {
		uint64_t q[FAST_MAX / 64];
		int plain = 0;

		r = FALLBACK;
		if (len <= FAST_MAX && (plain = quote_map((const unsigned char *)line, len, q)))
			r = parse_json_fast(line, len, q, &tmp);
		if (r == FALLBACK) {
			memset(&tmp, 0, sizeof(tmp));
			r = parse_json(line, len, len <= FAST_MAX ? plain
						  : !has_special((const unsigned char *)line,
								 (const unsigned char *)line + len), &tmp);
		}
	} else {
		r = parse_combined(line, len, &tmp);
	}
	if (r < 0)
		return r;
	*rec = tmp;
	return 0;
}

/* ---- upstreams ---- */

/* The next element of a $upstream_* list at *P (elements are joined by ", " or " : "): into EL; *P moves past
 * the separator. 0 at the end of the list. */
static int next_element(const char **p, const char *end, struct span *el)
{
	const char *q = *p;

	if (q >= end)
		return 0;
	el->b = q;
	while (q < end && !(q + 1 < end && ((q[0] == ',' && q[1] == ' ') || (q[0] == ' ' && q[1] == ':'))))
		q++;
	el->e = q;
	if (q < end)
		q += q[0] == ',' ? 2 : (q + 2 < end && q[2] == ' ' ? 3 : 2);
	*p = q;
	return 1;
}

int parse_access_upstreams(const char *line, size_t len, parse_upstream_cb cb, void *ctx)
{
	struct scan s = { line, line + len, 0 };
	struct span key, val, addrs = { NULL, NULL }, times = { NULL, NULL };
	const char *pa, *pt;
	int have_addr = 0, have_time = 0;

	if (!line || len == 0 || line[0] != '{')
		return -EBADMSG;
	s.p++;
	skip_ws(&s);
	if (s.p < s.end && *s.p == '}')
		return -ENOENT;
	for (;;) {
		if (scan_key(&s, &key) < 0)
			return -EBADMSG;
		if (span_is(key, "upstream_addr") || span_is(key, "upstream_response_time")) {
			int is_addr = key.b[9] == 'a';

			if (is_addr ? have_addr : have_time)
				return -EBADMSG;
			if (scan_field(&s, &val) < 0)
				return -EBADMSG;
			if (is_addr) {
				addrs = val;
				have_addr = 1;
			} else {
				times = val;
				have_time = 1;
			}
		} else if (skip_value(&s) < 0) {
			return -EBADMSG;
		}
		skip_ws(&s);
		if (s.p < s.end && *s.p == ',') {
			s.p++;
			skip_ws(&s);
			continue;
		}
		if (eat(&s, '}') < 0)
			return -EBADMSG;
		break;
	}
	skip_ws(&s);
	if (s.p != s.end)
		return -EBADMSG;
	if (!have_addr)
		return -ENOENT;
	if (addrs.b == addrs.e || (addrs.e - addrs.b == 1 && *addrs.b == '-'))
		return 0;
	if (!have_time)
		return -EBADMSG;
	/* Both lists have one element per server tried; check the shapes first so a bad line calls CB never. */
	for (int pass = 0; pass < 2; pass++) {
		struct span a, t;
		int ra, rt;

		pa = addrs.b;
		pt = times.b;
		for (;;) {
			uint64_t ms;
			int r;

			ra = next_element(&pa, addrs.e, &a);
			rt = next_element(&pt, times.e, &t);
			if (ra != rt)
				return -EBADMSG;
			if (!ra)
				break;
			if (a.b == a.e || memchr(a.b, ' ', (size_t)(a.e - a.b)))
				return -EBADMSG;
			if (t.e - t.b == 1 && *t.b == '-')
				continue; /* tried, but no time (it failed before a response) */
			if (parse_time(t, &ms) < 0)
				return -EBADMSG;
			if (pass == 1 && (r = cb(ctx, a.b, (size_t)(a.e - a.b), sat_u32(ms))) != 0)
				return r;
		}
	}
	return 0;
}
