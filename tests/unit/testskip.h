/*
 * testskip: how a cmocka test skips a check that this machine cannot run. Include it after <cmocka.h>.
 *
 * Owns the rule for skips in the unit tests: a skip says why in one line, "SKIP: <reason>", printed just before
 * cmocka's "[  SKIPPED ] <test>", so that tests/run-all.sh lists it with its reason and counts it as a skip, never
 * as a pass. Where every check must run (NGXAT_REQUIRE_ALL=1, or CI=true as root: the CI machine, a Debian 12 VM
 * with the packages of packaging/debian-deps.sh), a skip of a check that such a machine can run is a failure:
 * testskip(). testskip_allowed() is only for what even that machine may lack, and its reason must say why.
 * It must not decide anything else about a test (no fixtures, no assertions of its own).
 */
#ifndef NGXAT_TESTSKIP_H
#define NGXAT_TESTSKIP_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether every check must run here: NGXAT_REQUIRE_ALL=1, or CI=true as root. */
static inline bool testskip_require_all(void)
{
	const char *all = getenv("NGXAT_REQUIRE_ALL"), *ci = getenv("CI");

	return (all && strcmp(all, "1") == 0) || (ci && strcmp(ci, "true") == 0 && geteuid() == 0);
}

/* Skip the running test because WHY; where every check must run, fail it instead. Does not return. */
#define testskip(why)                                                                                            \
	do {                                                                                                     \
		if (testskip_require_all())                                                                      \
			fail_msg("skipped where every check must run (CI as root): %s", (why));                  \
		print_message("SKIP: %s\n", (why));                                                              \
		skip();                                                                                          \
	} while (0)

/* Skip the running test because WHY, which even the CI machine may lack: never a failure. Does not return. */
#define testskip_allowed(why)                                                                                    \
	do {                                                                                                     \
		print_message("SKIP: %s\n", (why));                                                              \
		skip();                                                                                          \
	} while (0)

/* The exit status of a whole program that cannot run because WHY (printed): 77, automake's skip; 1 where every
 * check must run. */
static inline int testskip_program(const char *why)
{
	if (testskip_require_all()) {
		printf("FAIL: skipped where every check must run (CI as root): %s\n", why);
		return 1;
	}
	printf("SKIP: %s\n", why);
	return 77;
}

#endif
