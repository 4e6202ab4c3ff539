/*
 * api_auth: who may do what on the API: the token file of the TCP listener, the Unix socket peer's credentials,
 * and the Host and Origin checks of the TCP listener.
 *
 * Owns the token file's rules (a regular file, mode 0600 or stricter, owned by root or the agent's user; lines
 * NAME:SECRET) and the comparison of a presented token with them (as SHA-256 digests, in constant time, against
 * every token). It decides nothing about requests itself and does not include libmicrohttpd: api.c asks it and
 * answers. Secrets are wiped from memory when cleared.
 */
#ifndef NGXAT_API_AUTH_H
#define NGXAT_API_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define API_TOKENS_MAX 64
#define API_TOKEN_NAME_MAX 32    /* [A-Za-z0-9._-]{1,32} */
#define API_TOKEN_SECRET_MIN 16  /* a secret shorter than this is refused: it could be guessed */
#define API_TOKEN_SECRET_MAX 256 /* token68 characters (RFC 7235) */
#define API_HOSTS_MAX 8
#define API_TOKEN_DIGEST_LEN 32 /* SHA-256 */

struct api_tokens {
	size_t n;
	struct {
		char name[API_TOKEN_NAME_MAX + 1];
		uint8_t digest[API_TOKEN_DIGEST_LEN];
	} v[API_TOKENS_MAX];
};

/* Load PATH into OUT (replaced only on success). The file must be a regular file owned by uid 0 or OWNER with no
 * group or other permission bits. 0; -ENOENT (no file); -EPERM (owner, mode, type); -EINVAL (a bad line: ERR is
 * "PATH:LINE: what"); -errno. ERR always says why. */
int api_tokens_load(const char *path, uid_t owner, struct api_tokens *out, char *err, size_t errlen);
/* The same from FD, PATH's opened elsewhere (the writer's, for an engine that may not read root's file); FD is
 * consumed. Judged by what FD is (fstat), as above. */
int api_tokens_load_fd(int fd, const char *path, uid_t owner, struct api_tokens *out, char *err, size_t errlen);
/* Wipe T. */
void api_tokens_clear(struct api_tokens *t);
/* The name of the token whose secret is TOKEN[0..LEN), or NULL. Takes the same time whichever token matches, if
 * any, and whatever TOKEN's length. */
const char *api_tokens_match(const struct api_tokens *t, const char *token, size_t len);
/* The token of an Authorization header value "Bearer TOKEN" (scheme case-insensitive). 0, or -EINVAL (another
 * scheme, no token, characters outside token68). */
int api_bearer(const char *header, const char **token, size_t *len);

/* What SO_PEERCRED and SO_PEERGROUPS say about the process at the other end of a Unix socket. */
struct api_unix_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool may_act; /* root, or a member (primary or supplementary) of the socket's group */
	char user[64]; /* the user name, or "uid:N" */
};

/* The credentials of FD's peer, and whether it may act given the socket's group GROUP. 0 or -errno. */
int api_unix_peer(int fd, gid_t group, struct api_unix_peer *out);
/* Whether a process of primary group GID and supplementary groups GROUPS[0..N) is in GROUP. */
bool api_in_group(gid_t group, gid_t gid, const gid_t *groups, size_t n);

/* The Host header values the TCP listener answers to (the DNS-rebinding guard). */
struct api_hosts {
	bool any; /* a wildcard listen address: every Host */
	size_t n;
	char v[API_HOSTS_MAX][80];
};

/* The names of the listener on LISTEN (as configured: "127.0.0.1:9180", "[::1]:9180", "localhost:9180"). 0 or
 * -EINVAL. */
int api_hosts_init(struct api_hosts *h, const char *listen);
/* Whether HOST (the request's Host header; NULL: none, as HTTP/1.0 allows) names this listener. */
bool api_host_ok(const struct api_hosts *h, const char *host);
/* Whether ORIGIN (an Origin header; NULL: none, as curl and ngxctl send) is this listener's own, "http://HOST". */
bool api_origin_ok(const char *origin, const char *host);

#endif
