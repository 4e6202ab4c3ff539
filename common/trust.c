#include "trust.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int trust_check_stat(const char *path, const struct stat *st, uid_t owner, const char *because, char *err,
		     size_t errlen)
{
	if (st->st_uid != owner) {
		snprintf(err, errlen, "%s: owned by uid %u, not %u: refused (%s)", path, (unsigned)st->st_uid,
			 (unsigned)owner, because);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s: writable by group or others (mode %04o): refused (%s)", path,
			 (unsigned)(st->st_mode & 07777), because);
		return -EPERM;
	}
	return 0;
}

int trust_check_path(const char *path, uid_t owner, bool may_be_absent, const char *because, char *err,
		     size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		int r = -errno;

		if (r == -ENOENT && may_be_absent)
			return 1;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "%s: a symbolic link: refused (%s; name the file itself)", path, because);
		return -ELOOP;
	}
	return trust_check_stat(path, &st, owner, because, err, errlen);
}
