/*
 * drop: see drop.h.
 */
#include "build-config.h"

#include "priv/drop.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "priv/writer_main.h"

/* PATH's directory into OUT. */
static void parent_of(const char *path, char *out, size_t outlen)
{
	char dir[CONFIG_PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(out, outlen, "%s", dirname(dir));
}

/* Whether DIR is one of the directories systemd made for this unit, as ENV ($STATE_DIRECTORY, $RUNTIME_DIRECTORY:
 * colon-separated absolute paths) lists them. */
static bool systemd_dir(const char *dir, const char *env)
{
	const char *v = getenv(env), *p;
	size_t n = strlen(dir);

	for (p = v; p && *p; p = strchr(p, ':') ? strchr(p, ':') + 1 : NULL)
		if (strncmp(p, dir, n) == 0 && (p[n] == ':' || p[n] == '\0'))
			return true;
	return false;
}

/* DIR made (0750) or given to P's user when systemd made it, or its parent, for this unit (ENV): a directory of the
 * unit's own, which no configured path can turn into /var/lib or /run. Nothing done elsewhere. */
static int adopt_dir(const char *dir, const char *env, const struct drop_plan *p)
{
	char parent[CONFIG_PATH_MAX], real[PATH_MAX];
	const char *base = strrchr(dir, '/');
	struct stat st;
	bool own = systemd_dir(dir, env), child;

	parent_of(dir, parent, sizeof(parent));
	/* A child by its name, not by a path that climbs out again (STATE_DIRECTORY/.. is /var/lib). */
	child = !own && systemd_dir(parent, env) && base && strcmp(base, "/.") != 0 && strcmp(base, "/..") != 0 &&
		realpath(parent, real) && strcmp(real, parent) == 0;
	if (!own && !child)
		return 0;
	if (child && lstat(dir, &st) < 0 && errno == ENOENT && mkdir(dir, 0750) < 0)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid == p->uid)
		return 0;
	return fchownat(AT_FDCWD, dir, p->uid, p->gid, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* Whether directory DIR (not followed if a link) is UID's: 0, or -errno with ERR naming WHAT and the fix. */
static int owned(const char *dir, const char *what, const struct drop_plan *p, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(dir, &st) < 0) {
		snprintf(err, errlen, "[agent] user = %s: %s %s: %s (make it: install -d -o %s %s)", p->user, what, dir,
			 strerror(errno), p->user, dir);
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != p->uid) {
		snprintf(err, errlen, "[agent] user = %s: %s %s must be a directory of %s's (it is %s uid %d's): chown %s %s",
			 p->user, what, dir, p->user, S_ISDIR(st.st_mode) ? "a directory of" : "not a directory, but",
			 (int)st.st_uid, p->user, dir);
		return -EPERM;
	}
	return 0;
}

/* Whether PATH is DIR or lies under it, both as the kernel resolves them (their deepest existing ancestor's). */
static bool inside(const char *path, const char *dir)
{
	char p[PATH_MAX], d[PATH_MAX], cur[PATH_MAX];
	size_t n, cut;

	if (!realpath(dir, d) || strlen(path) >= sizeof(cur))
		return false;
	strcpy(cur, path);
	cut = strlen(cur);
	/* The writer's directory may not exist yet: resolve what does, and put the rest back on. */
	for (;;) {
		char *slash;

		cur[cut] = '\0';
		if (realpath(cur, p))
			break;
		slash = strrchr(cur, '/');
		if (!slash || slash == cur)
			return false;
		cut = (size_t)(slash - cur);
	}
	if (strlen(p) + strlen(path + cut) >= sizeof(p))
		return false;
	strcat(p, path + cut);
	n = strlen(d);
	return strcmp(d, "/") == 0 || (strncmp(p, d, n) == 0 && (p[n] == '\0' || p[n] == '/'));
}

/* Whether every existing directory above PATH (itself too, when it exists) is root's and writable by no one else (a
 * sticky one excepted: no one renames root's entries there): 0, or -EPERM with ERR naming the first that is not. */
static int root_path(const char *path, const struct drop_plan *p, char *err, size_t errlen)
{
	char cur[PATH_MAX], part[PATH_MAX];
	struct stat st;

	if (strlen(path) >= sizeof(part))
		return -ENAMETOOLONG;
	/* The deepest part of it that exists, as the kernel resolves it (the writer makes the rest, root's). */
	strcpy(part, path);
	while (!realpath(part, cur)) {
		char *slash = strrchr(part, '/');

		if (!slash || slash == part) {
			strcpy(cur, "/");
			break;
		}
		*slash = '\0';
	}
	for (;;) {
		char *slash;

		if (lstat(cur, &st) == 0 && (st.st_uid != 0 || ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))) {
			snprintf(err, errlen, "[agent] user = %s: the writer's directory %s is reached through %s, which is "
				 "uid %d's, mode %04o: %s could move the writer's journal there; every directory above it "
				 "must be root's and closed to others", p->user, path, cur, (int)st.st_uid,
				 (unsigned)(st.st_mode & 07777), p->user);
			return -EPERM;
		}
		slash = strrchr(cur, '/');
		if (!slash)
			return 0;
		if (slash == cur) {
			if (cur[1] == '\0')
				return 0;
			cur[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
}

int drop_plan(const struct config *cfg, bool api, struct drop_plan *p, char *err, size_t errlen)
{
	char store_dir[CONFIG_PATH_MAX], wdir[CONFIG_PATH_MAX + 16], sock_dir[CONFIG_PATH_MAX];
	struct passwd *pw;
	int r;

	memset(p, 0, sizeof(*p));
	snprintf(p->user, sizeof(p->user), "%s", cfg->engine_user);
	if (!cfg->writer || cfg->dry_run) {
		snprintf(err, errlen, "[agent] user = %s needs the writer ([agent] writer = yes, not a dry run): it makes "
			 "the writes the engine may no longer make", p->user);
		return -EINVAL;
	}
	errno = 0;
	pw = getpwnam(p->user);
	if (!pw) {
		snprintf(err, errlen, "[agent] user = %s: no such user%s%s", p->user, errno ? ": " : "",
			 errno ? strerror(errno) : " (the package makes ngx-autotune)");
		return errno ? -errno : -ENOENT;
	}
	if (pw->pw_uid == 0) {
		snprintf(err, errlen, "[agent] user = %s: uid 0 is root, no user to drop to", p->user);
		return -EINVAL;
	}
	p->uid = pw->pw_uid;
	p->gid = pw->pw_gid;
	/* Its own group only: nginx's logs (www-data:adm on Debian) come opened from the writer (OPEN_LOG), where group
	 * adm would read every log of the host (auth.log, the journal's files). */
	p->groups[p->ngroups++] = pw->pw_gid;
	parent_of(cfg->store_path, store_dir, sizeof(store_dir));
	parent_of(cfg->socket_path, sock_dir, sizeof(sock_dir));
	/* Under systemd, the unit's own directories are made the user's (the package names a store directory in its
	 * StateDirectory, the socket in its RuntimeDirectory, which systemd makes root's at each start). */
	if ((r = adopt_dir(store_dir, "STATE_DIRECTORY", p)) < 0 ||
	    (api && (r = adopt_dir(sock_dir, "RUNTIME_DIRECTORY", p)) < 0)) {
		snprintf(err, errlen, "[agent] user = %s: cannot give the unit's directories to %s: %s", p->user, p->user,
			 strerror(-r));
		return r;
	}
	r = owned(store_dir, "the store's directory", p, err, errlen);
	if (r < 0)
		return r;
	if (writer_dir_path(cfg, wdir, sizeof(wdir)) < 0 || inside(wdir, store_dir)) {
		snprintf(err, errlen, "[agent] user = %s: the writer's directory %s is in the store's directory %s, where "
			 "%s may rename it (and put back an older journal of originals): set [agent] writer_dir outside it",
			 p->user, wdir, store_dir, p->user);
		return -EPERM;
	}
	r = api ? owned(sock_dir, "the API socket's directory", p, err, errlen) : 0;
	if (r == 0)
		r = root_path(wdir, p, err, errlen);
	return r;
}

static const char *const suffixes[] = {"", "-wal", "-shm", "-journal", ".lock", ".originals", ".originals.compact"};

/* A version without [agent] user kept the store at the top of the unit's StateDirectory: when the store is in a
 * directory in it and has no database yet, the old one's files move there (same file system: renamed). */
static int adopt_old_store(const struct config *cfg, char *err, size_t errlen)
{
	char dir[CONFIG_PATH_MAX], top[CONFIG_PATH_MAX], name[CONFIG_PATH_MAX], from[2 * CONFIG_PATH_MAX + 32];
	char to[CONFIG_PATH_MAX + 32];
	struct stat st;

	parent_of(cfg->store_path, dir, sizeof(dir));
	parent_of(dir, top, sizeof(top));
	snprintf(name, sizeof(name), "%s", cfg->store_path + strlen(dir) + 1);
	snprintf(from, sizeof(from), "%s/%s", top, name);
	if (!systemd_dir(top, "STATE_DIRECTORY") || lstat(cfg->store_path, &st) == 0 || lstat(from, &st) < 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(from, sizeof(from), "%s/%s%s", top, name, suffixes[i]);
		snprintf(to, sizeof(to), "%s%s", cfg->store_path, suffixes[i]);
		if (lstat(from, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (rename(from, to) < 0) {
			snprintf(err, errlen, "move the store of an earlier version, %s, to %s: %s", from, to,
				 strerror(errno));
			return -errno;
		}
	}
	return 1;
}

int drop_store_files(const struct config *cfg, const struct drop_plan *p, char *err, size_t errlen)
{
	char path[CONFIG_PATH_MAX + 32];
	struct stat st;
	int r = adopt_old_store(cfg, err, errlen);

	if (r < 0)
		return r;
	if (r > 0)
		log_notice("the store of an earlier version moved to %s, a directory of %s's", cfg->store_path, p->user);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		int fd, e;

		snprintf(path, sizeof(path), "%s%s", cfg->store_path, suffixes[i]);
		/* The file itself, never through a link; and judged by what was opened, not by its name again (the
		 * directory is the user's, who may swap names meanwhile). */
		fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT || errno == ELOOP)
				continue;
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -errno;
		}
		/* Only a regular file of root's with no other name (an offline revert's, an older version's): a hard link
		 * to a file of root's elsewhere is not given away. */
		e = fstat(fd, &st) < 0 ? -errno : 0;
		if (e == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && st.st_nlink == 1 &&
		    fchownat(fd, "", p->uid, p->gid, AT_EMPTY_PATH) < 0)
			e = -errno;
		close(fd);
		if (e < 0) {
			snprintf(err, errlen, "chown %s %s: %s", p->user, path, strerror(-e));
			return e;
		}
	}
	return 0;
}

/* The capability sets of this process from /proc/self/status: whether they are all empty. */
static bool no_capabilities(void)
{
	char line[256];
	bool empty = true;
	int seen = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "CapInh: %llx", &v) == 1 || sscanf(line, "CapPrm: %llx", &v) == 1 ||
		    sscanf(line, "CapEff: %llx", &v) == 1 || sscanf(line, "CapBnd: %llx", &v) == 1 ||
		    sscanf(line, "CapAmb: %llx", &v) == 1) {
			seen++;
			empty = empty && v == 0;
		}
	}
	fclose(f);
	return seen == 5 && empty;
}

int drop_writer_caps(void)
{
	/* CAP_SETUID stays: the TCP sockets the writer makes for the engine are made as the engine's user
	 * (setfsuid). CAP_SETPCAP last: it drops the others. */
	static const int caps[] = {CAP_SETGID, CAP_SETPCAP};
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	/* Those its unit's bounding set leaves out need nothing (ngx-autotune-writer.service has neither). */
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		if (prctl(PR_CAPBSET_READ, caps[i], 0, 0, 0) == 1 && prctl(PR_CAPBSET_DROP, caps[i], 0, 0, 0) < 0)
			return -errno;
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		unsigned w = (unsigned)caps[i] / 32, bit = 1u << ((unsigned)caps[i] % 32);

		d[w].effective &= ~bit;
		d[w].permitted &= ~bit;
		d[w].inheritable &= ~bit;
	}
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int drop_now(const struct drop_plan *p, char *err, size_t errlen)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (geteuid() != 0) {
		/* Started as the user (ngx-autotune.service's User=, its groups and empty capability sets are the unit's):
		 * nothing left to give up, only the checks below. */
		gid_t g[8];
		int ng;

		if (getuid() != p->uid || geteuid() != p->uid) {
			snprintf(err, errlen, "[agent] user = %s, but the engine was started as uid %d: start it as root or as "
				 "%s (uid %d)", p->user, (int)getuid(), p->user, (int)p->uid);
			return -EPERM;
		}
		/* Its own group only: a user an administrator added to adm would read every log of the host. */
		ng = getgroups(8, g);
		if (ng < 0 || ng > 1 || (ng == 1 && g[0] != p->gid)) {
			snprintf(err, errlen, "[agent] user = %s: the engine was started with supplementary groups (%d) beside "
				 "its own; it needs none (nginx's logs come from its writer): remove %s from them, or set "
				 "SupplementaryGroups= empty", p->user, ng, p->user);
			return -EPERM;
		}
	} else {
		/* The bounding set first: emptying it needs CAP_SETPCAP, which the change of uid takes away. */
		for (int cap = 0; cap <= 63; cap++)
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) {
				snprintf(err, errlen, "drop capability %d from the bounding set: %s", cap, strerror(errno));
				return -errno;
			}
		if (setgroups(p->ngroups, p->groups) < 0 || setresgid(p->gid, p->gid, p->gid) < 0 ||
		    setresuid(p->uid, p->uid, p->uid) < 0) {
			snprintf(err, errlen, "become %s (uid %d, gid %d): %s", p->user, (int)p->uid, (int)p->gid,
				 strerror(errno));
			return -errno;
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(err, errlen, "no_new_privs: %s", strerror(errno));
		return -errno;
	}
	/* Checked, not assumed: root back, or a capability left, is a drop that did not take. */
	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0 || ru != p->uid || eu != p->uid ||
	    su != p->uid || rg != p->gid || eg != p->gid || sg != p->gid || setuid(0) == 0 || !no_capabilities()) {
		snprintf(err, errlen, "the drop to %s did not take (uids %d %d %d, or a capability left%s)", p->user, (int)ru,
			 (int)eu, (int)su, ru == p->uid ? ": a unit that starts the engine as its user must empty its "
			 "CapabilityBoundingSet=" : "");
		return -EPERM;
	}
	return 0;
}
