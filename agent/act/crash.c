/*
 * crash: see crash.h.
 */
#include "act/crash.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

void crash_point(const char *where)
{
	const char *c = getenv("NGXAT_TEST_CRASH");

	if (c && strcmp(c, where) == 0)
		raise(SIGKILL);
}
