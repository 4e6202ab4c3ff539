/* nginx's stub_status page: parse_stub_status. */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stub_status st;
	int r = parse_stub_status((const char *)data, size, &st);

	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	return 0;
}
