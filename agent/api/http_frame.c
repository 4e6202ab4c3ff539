/*
 * http_frame: the API's rules for a request's head. See http_frame.h.
 */
#include "build-config.h"

#include "api/http_frame.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool named(const char *name, size_t nlen, const char *want)
{
	return nlen == strlen(want) && strncasecmp(name, want, nlen) == 0;
}

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* VALUE without the blanks around it. */
static void trim(const char **v, size_t *n)
{
	while (*n && (**v == ' ' || **v == '\t'))
		(*v)++, (*n)--;
	while (*n && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t'))
		(*n)--;
}

void http_framing_add(struct http_framing *f, const char *name, size_t nlen, const char *value, size_t vlen)
{
	trim(&value, &vlen);
	if (named(name, nlen, "Content-Length")) {
		f->content_length++;
		f->cl_bad |= !all_digits(value, vlen);
	} else if (named(name, nlen, "Transfer-Encoding")) {
		f->transfer_encoding++;
		f->te_bad |= !(vlen == 7 && strncasecmp(value, "chunked", 7) == 0);
	} else if (named(name, nlen, "Host")) {
		f->host++;
	} else if (named(name, nlen, "Origin")) {
		f->origin++;
	}
}

int http_framing_check(const struct http_framing *f, bool http11, char *detail, size_t detlen)
{
	const char *why = NULL;

	if (f->content_length > 1)
		why = "more than one Content-Length";
	else if (f->transfer_encoding > 1)
		why = "more than one Transfer-Encoding";
	else if (f->content_length && f->transfer_encoding)
		why = "both Content-Length and Transfer-Encoding";
	else if (f->cl_bad)
		why = "a Content-Length that is not a number";
	else if (f->te_bad)
		why = "a Transfer-Encoding other than chunked";
	else if (f->host > 1)
		why = "more than one Host";
	else if (http11 && f->host == 0)
		why = "no Host (HTTP/1.1 needs one)";
	else if (f->origin > 1)
		why = "more than one Origin";
	if (!why)
		return 0;
	snprintf(detail, detlen, "malformed request: %s", why);
	return -EBADMSG;
}

static bool tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The line at P (up to END) without its CRLF or LF in *LEN, the next line in *NEXT; false: no end of line yet. */
static bool line(const char *p, const char *end, size_t *len, const char **next)
{
	const char *lf = memchr(p, '\n', (size_t)(end - p));

	if (!lf)
		return false;
	*len = (size_t)(lf - p) - (lf > p && lf[-1] == '\r');
	*next = lf + 1;
	return true;
}

static int bad(char *detail, size_t detlen, const char *why)
{
	snprintf(detail, detlen, "malformed request: %s", why);
	return -EBADMSG;
}

static int request_line(const char *p, size_t n, bool *http11, char *detail, size_t detlen)
{
	size_t i = 0, t;

	while (i < n && tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i > 16 || i >= n || p[i] != ' ')
		return bad(detail, detlen, "the request line is not METHOD TARGET HTTP/1.x");
	t = ++i;
	while (i < n && (unsigned char)p[i] > ' ' && (unsigned char)p[i] < 0x7f)
		i++;
	if (i == t || i >= n || p[i] != ' ')
		return bad(detail, detlen, "the request line is not METHOD TARGET HTTP/1.x");
	i++;
	if (n - i != 8 || strncmp(p + i, "HTTP/1.", 7) != 0 || (p[i + 7] != '0' && p[i + 7] != '1'))
		return bad(detail, detlen, "the request line is not METHOD TARGET HTTP/1.x");
	*http11 = p[i + 7] == '1';
	return 0;
}

static int header_line(const char *p, size_t n, struct http_framing *f, char *detail, size_t detlen)
{
	size_t i = 0;

	if (p[0] == ' ' || p[0] == '\t')
		return bad(detail, detlen, "a header folded over two lines");
	while (i < n && tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i >= n || p[i] != ':')
		return bad(detail, detlen, "a header line is not NAME: VALUE");
	for (size_t j = i + 1; j < n; j++)
		if (((unsigned char)p[j] < ' ' && p[j] != '\t') || p[j] == 0x7f)
			return bad(detail, detlen, "a control character in a header");
	http_framing_add(f, p, i, p + i + 1, n - i - 1);
	return 0;
}

/* A head not complete yet: -EAGAIN, or -EMSGSIZE when it may grow no more. */
static int wait_for_more(size_t len, char *detail, size_t detlen)
{
	if (len < HTTP_HEAD_MAX)
		return -EAGAIN;
	snprintf(detail, detlen, "the request line and headers are over %d bytes", HTTP_HEAD_MAX);
	return -EMSGSIZE;
}

/* A request line not complete yet: garbage from its first bytes need not be waited for. */
static int partial_request_line(const char *p, size_t m, size_t len, char *detail, size_t detlen)
{
	size_t i = 0;

	while (i < m && tchar((unsigned char)p[i]))
		i++;
	if (i < m && (i == 0 ? p[0] != '\r' : p[i] != ' '))
		return bad(detail, detlen, "the request line is not METHOD TARGET HTTP/1.x");
	return wait_for_more(len, detail, detlen);
}

int http_head_check(const char *buf, size_t len, char *detail, size_t detlen)
{
	const char *p = buf, *end = buf + (len > HTTP_HEAD_MAX ? HTTP_HEAD_MAX : len), *next;
	struct http_framing f = {0};
	bool http11 = false;
	size_t n;
	int r;

	/* An empty line or two before the request line is tolerated (RFC 9112, 2.2). */
	for (int i = 0; i < 2 && p < end && line(p, end, &n, &next) && n == 0; i++)
		p = next;
	if (!line(p, end, &n, &next))
		return partial_request_line(p, (size_t)(end - p), len, detail, detlen);
	if (memchr(p, '\r', n))
		return bad(detail, detlen, "a bare CR in the request line");
	r = request_line(p, n, &http11, detail, detlen);
	if (r < 0)
		return r;
	for (p = next;; p = next) {
		if (!line(p, end, &n, &next))
			return wait_for_more(len, detail, detlen);
		if (n == 0)
			break;
		if (memchr(p, '\r', n))
			return bad(detail, detlen, "a bare CR in a header");
		r = header_line(p, n, &f, detail, detlen);
		if (r < 0)
			return r;
	}
	return http_framing_check(&f, http11, detail, detlen);
}

int http_head_value(const char *buf, size_t len, const char *name, char *out, size_t outlen)
{
	const char *p = buf, *end = buf + (len > HTTP_HEAD_MAX ? HTTP_HEAD_MAX : len), *next, *colon, *v;
	size_t n, vlen;

	for (int i = 0; i < 2 && p < end && line(p, end, &n, &next) && n == 0; i++)
		p = next;
	if (!line(p, end, &n, &next))
		return -ENOENT;
	for (p = next; line(p, end, &n, &next) && n > 0; p = next) {
		colon = memchr(p, ':', n);
		if (!colon || !named(p, (size_t)(colon - p), name))
			continue;
		v = colon + 1;
		vlen = n - (size_t)(v - p);
		trim(&v, &vlen);
		if (vlen >= outlen)
			return -ENOSPC;
		memcpy(out, v, vlen);
		out[vlen] = '\0';
		return 0;
	}
	return -ENOENT;
}
