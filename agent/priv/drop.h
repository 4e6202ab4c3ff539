/*
 * drop: the engine gives up root (issue 22, [agent] user): after the writer is forked and has said it started, and
 * before the store, the API or any thread exists, the agent's own process becomes USER, with group adm beside its
 * own (Debian's nginx logs are root:adm or www-data:adm 0640), no capability in any set (the bounding set emptied
 * too) and no_new_privs (no program it runs gains anything: a set-user-ID root binary runs as USER).
 *
 * Owns the checks that make the drop safe rather than merely possible: the store's directory must be USER's (the
 * engine writes its database, lock and originals there; root's files left in it by an offline revert or an older
 * version are given to USER, never through a link), the writer's directory must lie outside it (an engine that may
 * rename what is in its directory could swap the writer's journal of originals for an older one; and every
 * directory above it root's and closed to others), and the API socket's directory must be USER's (the engine binds
 * the socket there). A directory is chowned only when systemd made it, or its parent, for this unit (its
 * StateDirectory, RuntimeDirectory): a path in the configuration could name /var/lib or /run. Store files are given
 * to USER by the descriptor opened without following a link, and only with one name (no hard link to root's).
 */
#ifndef NGXAT_DROP_H
#define NGXAT_DROP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

#define DROP_GROUPS_MAX 1

struct drop_plan {
	char user[64];
	uid_t uid;
	gid_t gid;
	gid_t groups[DROP_GROUPS_MAX]; /* USER's own group only (nginx's logs come from the writer: OPEN_LOG) */
	size_t ngroups;
};

/* CFG's [agent] user resolved, and the directories checked (above; the API socket's only with API: an offline
 * revert serves none, and runs when the unit's RuntimeDirectory is gone): 0, or -errno with ERR saying what to fix. Under
 * systemd, a store's or socket's directory that is the unit's StateDirectory or RuntimeDirectory, or directly in one,
 * is made or given to the user first (systemd makes them root's). */
int drop_plan(const struct config *cfg, bool api, struct drop_plan *p, char *err, size_t errlen);
/* The store's files (the database, its -wal, -shm, .lock, .originals) that are root's given to P's user. 0 or -errno
 * with ERR. */
int drop_store_files(const struct config *cfg, const struct drop_plan *p, char *err, size_t errlen);
/* Become P's user now, as above, and check it took: 0, or -errno with ERR (the caller must then end: half a drop is
 * no state to go on in). An engine started as P's user already (its own unit's User=) is only checked: the same
 * uids, no capability in any set (the unit's empty CapabilityBoundingSet=), no_new_privs set. */
int drop_now(const struct drop_plan *p, char *err, size_t errlen);

/* The writer's side: the capabilities only the engine's drop needed (CAP_SETGID, CAP_SETPCAP) taken from this
 * process's bounding, effective, permitted and inheritable sets (CAP_SETUID stays: the writer makes the engine's TCP
 * sockets as the engine's user, setfsuid). 0 or -errno. */
int drop_writer_caps(void);

#endif
