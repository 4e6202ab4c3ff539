/*
 * api_console: GET / and /console, the console page (console.h), with a Content-Security-Policy that allows its
 * own inline script and style by their SHA-256 (computed once from the embedded page, so the policy follows any
 * edit of the file) and nothing else: no other script, no external fetch, no frames, no form posts. The page
 * talks to the API of the same origin (connect-src 'self') and keeps the token in memory only.
 */
#include "build-config.h"

#include <stdio.h>
#include <string.h>

#include <nettle/base64.h>
#include <nettle/sha2.h>

#include "api/api_internal.h"
#include "api/http.h"
#include "api/console.h"

static char csp[768];

/* 'sha256-...' of the text between OPEN and CLOSE, or 'none' when the page has no such element. */
static void element_hash(const char *open, const char *close, char *out, size_t outlen)
{
	const char *page = (const char *)console_html;
	const char *a = memmem(page, console_html_len, open, strlen(open)), *b;
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	char b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];

	if (!a) {
		snprintf(out, outlen, "'none'");
		return;
	}
	a += strlen(open);
	b = memmem(a, console_html_len - (size_t)(a - page), close, strlen(close));
	if (!b) {
		snprintf(out, outlen, "'none'");
		return;
	}
	sha256_init(&h);
	sha256_update(&h, (size_t)(b - a), (const uint8_t *)a);
	sha256_digest(&h, sizeof(d), d);
	/* The raw encoder pads with '=' as CSP's hash-source expects (RFC 4648 section 4), and writes no NUL. */
	base64_encode_raw(b64, sizeof(d), d);
	b64[sizeof(b64) - 1] = '\0';
	snprintf(out, outlen, "'sha256-%s'", b64);
}

static const char *policy(void)
{
	char script[96], style[96];

	if (csp[0])
		return csp;
	element_hash("<script>", "</script>", script, sizeof(script));
	element_hash("<style>", "</style>", style, sizeof(style));
	snprintf(csp, sizeof(csp),
		 "default-src 'none'; script-src %s; style-src %s; connect-src 'self'; img-src 'self' data:; "
		 "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		 script, style);
	return csp;
}

enum MHD_Result api_console_get(struct MHD_Connection *c)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(console_html_len, (void *)console_html, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
	api_common_headers(r);
	MHD_add_response_header(r, "Content-Security-Policy", policy());
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}
