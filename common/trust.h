/*
 * trust: whether a file the agent reads as root may decide what runs or what is written as root.
 *
 * Owns the one rule, shared by the policy files (act/policy_load.c), the files the configuration names
 * (config_check_trust), the nginx files the agent edits and the programs it runs: every component of the path, from
 * /, is owned by root or the trusted owner and not writable by group or others (a directory that is, with the sticky
 * bit and a trusted owner, as /tmp, holds only entries no one else can rename), and the file is too. A link is
 * followed only where the caller allows it and only when the link itself is trusted; the final name is never a link
 * otherwise (the link's target could be anyone's). Once a path passes, only root or the trusted owner can change
 * what it names, so what was checked is what is used. It must not read the files it checks (callers that read check
 * the descriptor they read from), log, or keep state.
 */
#ifndef NGXAT_TRUST_H
#define NGXAT_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define TRUST_LINKS_MAX 40 /* as the kernel's own limit on links followed in one lookup */

enum {
	TRUST_MAY_BE_ABSENT = 1 << 0, /* the path may not exist (its final name or a directory on the way): 1 */
	TRUST_FOLLOW = 1 << 1, /* the final name may be a trusted link, followed (a program: the alternatives) */
};

/* ST (PATH's, from fstat or stat) is owned by OWNER and not writable by group or others. 0, or -EPERM with
 * "PATH: why: refused (BECAUSE)" in ERR. */
int trust_check_stat(const char *path, const struct stat *st, uid_t owner, const char *because, char *err,
		     size_t errlen);
/*
 * Walk PATH (relative to the working directory when it does not start with '/') from / one component at a time,
 * each opened with O_PATH|O_NOFOLLOW relative to the last, and check each as the header says, root or OWNER
 * trusted. With FD non-NULL, *FD gets an O_PATH|O_CLOEXEC descriptor of what PATH names (the caller closes it).
 * 0; 1 when the path does not exist (its final name or a directory on the way) and FLAGS has
 * TRUST_MAY_BE_ABSENT; else -EPERM (untrusted), -ELOOP (a link where none may be, or too many), or -errno of the
 * lookup, with "PATH: what: refused (BECAUSE)" in ERR.
 */
int trust_walk(const char *path, uid_t owner, int flags, const char *because, int *fd, char *err, size_t errlen);
/* PATH itself is not a symbolic link, and every component passes trust_walk with OWNER (and root) trusted. 1 when
 * it does not exist and MAY_BE_ABSENT; else 0, -ELOOP (a link), -EPERM, or -errno, with ERR. */
int trust_check_path(const char *path, uid_t owner, bool may_be_absent, const char *because, char *err,
		     size_t errlen);
/* NAME (with a slash: itself; else the first PATH directory, "/usr/bin:/bin" without PATH, that holds it as an
 * executable) into OUT. 0, -ENOENT (none), or -ENAMETOOLONG. */
int trust_find_program(const char *name, char *out, size_t outlen);

#endif
