/*
 * policy_load: read the policy directories into a validated policy set, trusting only the owner's files.
 *
 * This module owns the file side of policies: listing the shipped directory and the override directory, choosing
 * per file name (an override replaces the shipped file of the same name; a name only in the override directory
 * adds a family), refusing what it must not trust, and feeding each file through the INI parser into
 * core/policy. A policy decides what gets written as root, so a directory or file that is a symbolic link, is not
 * owned by the expected owner, or is writable by group or others is refused with an error that names it. Loading
 * is all or nothing: any error leaves the caller's set untouched. It must not log (the caller reports ERR) and
 * must not keep state between calls.
 */
#ifndef NGXAT_POLICY_LOAD_H
#define NGXAT_POLICY_LOAD_H

#include <stddef.h>
#include <sys/types.h>

#include "core/policy.h"

#define POLICY_SHIPPED_DIR "/usr/share/ngx-autotune/policies"
#define POLICY_OVERRIDE_DIR "/etc/ngx-autotune/policies.d"
#define POLICY_FILE_SIZE_MAX (256 * 1024) /* bytes of one policy file */
#define POLICY_FILES_MAX 64               /* *.policy files in one directory */

/*
 * Load every *.policy of SHIPPED_DIR, then OVERRIDE_DIR, both checked to be owned by OWNER (0 in production) and
 * not writable by group or others; names starting with '.' and names not ending in ".policy" are skipped. A NULL
 * or empty directory is skipped; a missing OVERRIDE_DIR is not an error, a missing SHIPPED_DIR is. Parses all,
 * validates the whole set with policy_metric_known, and only then fills OUT (whose old content is overwritten, not
 * freed). 0; or -EINVAL (syntax, validation: "FILE:LINE: message"), -EPERM (owner or mode), -ELOOP (a symbolic
 * link), -EFBIG, -ENOMEM or another -errno, with the message in ERR and OUT untouched.
 */
int policy_load(const char *shipped_dir, const char *override_dir, uid_t owner, struct policy_set *out, char *err,
		size_t errlen);

/* policy_load into a set of its own, allocated: *OUT (free with policy_set_free, then free). Returns as policy_load;
 * *OUT untouched on error. The agent and its writer both load their policies this way. */
int policy_load_new(const char *shipped_dir, const char *override_dir, uid_t owner, struct policy_set **out,
		    char *err, size_t errlen);

/*
 * Parse LEN bytes at BUF, the text of the policy file PATH, into SET (not validated: call policy_set_validate when
 * every file is in). No ownership checks: for tests and for checking a file an operator is about to install.
 * 0 or -EINVAL / -ENOMEM with "PATH:LINE: message" in ERR.
 */
int policy_parse_buffer(struct policy_set *set, const char *path, const char *buf, size_t len, char *err,
			size_t errlen);

#endif
