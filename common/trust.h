/*
 * trust: whether a file the agent reads as root may decide what runs or what is written as root.
 *
 * Owns the one rule, shared by the policy files (act/policy_load.c) and the files the configuration names
 * (config_check_trust): owned by the expected owner, not writable by group or others, and not a symbolic link
 * (the link's target could be anyone's). It must not open or read the files it checks (callers that read check
 * the descriptor they read from), log, or keep state.
 */
#ifndef NGXAT_TRUST_H
#define NGXAT_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ST (PATH's, from fstat or stat) is owned by OWNER and not writable by group or others. 0, or -EPERM with
 * "PATH: why: refused (BECAUSE)" in ERR. */
int trust_check_stat(const char *path, const struct stat *st, uid_t owner, const char *because, char *err,
		     size_t errlen);
/* PATH itself is not a symbolic link, and passes trust_check_stat. 1 when it does not exist and MAY_BE_ABSENT;
 * else 0, -ELOOP (a link), -EPERM, or -errno of lstat, with ERR. */
int trust_check_path(const char *path, uid_t owner, bool may_be_absent, const char *because, char *err,
		     size_t errlen);

#endif
