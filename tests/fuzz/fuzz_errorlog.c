/* nginx error-log lines: parse_errorlog_line, one line at a time. */
#include "fuzz.h"
#include "parse.h"

static void one_line(const char *line, size_t len)
{
	enum errlog_kind k = parse_errorlog_line(line, len);

	FUZZ_CHECK(k >= ERRLOG_OTHER && k < ERRLOG_KIND_COUNT);
	FUZZ_CHECK((k == ERRLOG_OTHER) == (errlog_kind_name(k) == NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_each_line(data, size, one_line);
	return 0;
}
