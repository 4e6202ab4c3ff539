/* What each route parses beyond the request line: the JSON body of a POST and the query of a GET. The input's first
 * line is the target ("/v1/proposals", or "GET /v1/frames?since=-60&metrics=tcp.*"), the rest is the body; the
 * harness frames it as a well-formed request on the Unix socket (as root, who may act), so the fuzzer spends its
 * time in the routes and not in HTTP framing (fuzz_api_http does that). */
#include "api_harness.h"
#include "fuzz.h"

#define INPUT_MAX 32768

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_api_start();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data, *nl = memchr(in, '\n', size);
	size_t tlen = nl ? (size_t)(nl - in) : size, blen = nl ? size - tlen - 1 : 0, hlen;
	bool get = tlen >= 4 && memcmp(in, "GET ", 4) == 0;
	const char *target = get ? in + 4 : in, *body = nl ? nl + 1 : "";
	char head[512], *req;

	if (size > INPUT_MAX)
		return 0;
	if (get)
		tlen -= 4;
	/* A target with a blank, CR or NUL would be another request line: fuzz_api_http covers those. */
	if (tlen == 0 || tlen > 256 || memchr(target, ' ', tlen) || memchr(target, '\r', tlen) ||
	    memchr(target, '\0', tlen))
		return 0;
	hlen = (size_t)snprintf(head, sizeof(head),
				"%s %.*s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
				"Content-Length: %zu\r\nConnection: close\r\n\r\n",
				get ? "GET" : "POST", (int)tlen, target, get ? (size_t)0 : blen);
	req = malloc(hlen + blen + 1);
	if (!req)
		return 0;
	memcpy(req, head, hlen);
	if (!get && blen)
		memcpy(req + hlen, body, blen);
	fuzz_api_exchange(false, req, hlen + (get ? 0 : blen));
	free(req);
	return 0;
}
