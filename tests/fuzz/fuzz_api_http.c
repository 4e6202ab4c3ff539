/* The API's HTTP requests as bytes on the wire, through libmicrohttpd to the routes (api_harness.c). The first byte
 * picks the listener: even, the Unix socket (root: every route, POSTs included); odd, the TCP listener (Host and
 * Origin checks, bearer tokens). "@HOST@" and "@TOKEN@" in the rest stand for the TCP listener's address and
 * token, so that seeds pass its checks whatever port it was given. */
#include "api_harness.h"
#include "fuzz.h"

#define INPUT_MAX 65536

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_api_start();
	return 0;
}

/* SRC[0..LEN) with every "@HOST@" and "@TOKEN@" replaced, into a malloc'd buffer; its length in *OUTLEN. */
static char *expand(const char *src, size_t len, size_t *outlen)
{
	const char *host = fuzz_api_host(), *token = fuzz_api_token();
	size_t hl = strlen(host), tl = strlen(token), cap = len * (tl > hl ? tl : hl) + 1, o = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		if (len - i >= 6 && memcmp(src + i, "@HOST@", 6) == 0) {
			memcpy(out + o, host, hl), o += hl, i += 6;
		} else if (len - i >= 7 && memcmp(src + i, "@TOKEN@", 7) == 0) {
			memcpy(out + o, token, tl), o += tl, i += 7;
		} else {
			out[o++] = src[i++];
		}
	}
	*outlen = o;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len;
	char *req;

	if (size < 1 || size > INPUT_MAX)
		return 0;
	req = expand((const char *)data + 1, size - 1, &len);
	if (!req)
		return 0;
	fuzz_api_exchange(data[0] & 1, req, len);
	free(req);
	return 0;
}
