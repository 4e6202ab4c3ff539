/* A datagram from the engine as the writer reads it (wmsg_decode): any bytes. A decoded message must encode back to
 * exactly those bytes (one encoding per message: nothing the writer acts on was guessed at), and a refusal says why
 * in a terminated line. */
#include "fuzz.h"
#include "priv/wmsg.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct wmsg m;
	uint8_t again[WMSG_MAX];
	char err[128];
	int r, n;

	err[0] = '\0';
	r = wmsg_decode(data, size, &m, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	if (r == 0) {
		n = wmsg_encode(&m, again, sizeof(again));
		FUZZ_CHECK(n >= 0 && (size_t)n == size);
		FUZZ_CHECK(memcmp(again, data, size) == 0);
	} else {
		FUZZ_CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL);
	}
	return 0;
}
