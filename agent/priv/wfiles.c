/*
 * wfiles: see wfiles.h.
 */
#include "build-config.h"

#include "priv/wfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trust.h"

int wfiles_open(const struct config *cfg, const char *path, int *fd, char *why, size_t whylen)
{
	char dir[CONFIG_PATH_MAX], err[CONFIG_PATH_MAX + 160];
	const char *base = strrchr(path, '/');
	struct stat st;
	int dfd, f, r;

	/* The path is not echoed: the engine's, which could use the writer's log to say anything. */
	if (!path[0] || (strcmp(path, cfg->access_log) != 0 && strcmp(path, cfg->error_log) != 0 &&
			 (!cfg->api_listen[0] || strcmp(path, cfg->api_token_file) != 0))) {
		snprintf(why, whylen, "not a file the configuration names ([nginx] access_log, error_log, [api] "
			 "token_file)");
		return -EPERM;
	}
	if (!base || base[1] == '\0' || (size_t)(base - path) >= sizeof(dir)) {
		snprintf(why, whylen, "%s: not a file's path", path);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%.*s", base == path ? 1 : (int)(base - path), path);
	r = trust_walk(dir, 0, 0, "a file the writer opens for the engine", &dfd, err, sizeof(err));
	if (r < 0) {
		snprintf(why, whylen, "%s", err);
		return r;
	}
	f = openat(dfd, base + 1, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	r = f < 0 ? -errno : 0;
	close(dfd);
	if (r == 0 && fstat(f, &st) < 0)
		r = -errno;
	else if (r == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
		r = -EINVAL;
	if (r < 0) {
		if (f >= 0)
			close(f);
		snprintf(why, whylen, "%s: %s", path, r == -ELOOP ? "a link: refused" : r == -EINVAL ? "not a file" :
			 strerror(-r));
		return r;
	}
	*fd = f;
	return 0;
}
