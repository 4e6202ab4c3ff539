/*
 * api_auth: tokens, peer credentials, Host and Origin. See api_auth.h.
 */
#include "build-config.h"

#include "api/api_auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <nettle/memops.h>
#include <nettle/sha2.h>

#include "strutil.h"

#define LINE_MAX_LEN 512

_Static_assert(API_TOKEN_DIGEST_LEN == SHA256_DIGEST_SIZE, "a token digest is a SHA-256 digest");

/* The form a secret is kept and compared in. The context holds the secret's last block: it is wiped too. */
static void digest(const char *secret, size_t len, uint8_t out[API_TOKEN_DIGEST_LEN])
{
	struct sha256_ctx h;

	sha256_init(&h);
	sha256_update(&h, len, (const uint8_t *)secret);
	sha256_digest(&h, API_TOKEN_DIGEST_LEN, out);
	explicit_bzero(&h, sizeof(h));
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == '-';
}

/* token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
static bool token68(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && (name_char(s[i]) || s[i] == '~' || s[i] == '+' || s[i] == '/'))
		i++;
	if (i == 0)
		return false;
	while (i < len && s[i] == '=')
		i++;
	return i == len;
}

static int parse_line(char *line, struct api_tokens *t, char *msg, size_t msglen)
{
	char *colon, *secret, *end = line + strlen(line);
	size_t nlen, slen;
	uint8_t d[API_TOKEN_DIGEST_LEN];

	while (end > line && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	while (*line == ' ' || *line == '\t')
		line++;
	if (!*line || *line == '#')
		return 0;
	colon = strchr(line, ':');
	if (!colon)
		return snprintf(msg, msglen, "expected NAME:SECRET"), -EINVAL;
	nlen = (size_t)(colon - line);
	secret = colon + 1;
	slen = strlen(secret);
	if (nlen == 0 || nlen > API_TOKEN_NAME_MAX)
		return snprintf(msg, msglen, "the name must have 1 to %d characters", API_TOKEN_NAME_MAX), -EINVAL;
	for (size_t i = 0; i < nlen; i++)
		if (!name_char(line[i]))
			return snprintf(msg, msglen, "the name may only have letters, digits, '.', '_' and '-'"), -EINVAL;
	if (slen < API_TOKEN_SECRET_MIN || slen > API_TOKEN_SECRET_MAX)
		return snprintf(msg, msglen, "the secret of '%.*s' must have %d to %d characters", (int)nlen, line,
				API_TOKEN_SECRET_MIN, API_TOKEN_SECRET_MAX), -EINVAL;
	if (!token68(secret, slen))
		return snprintf(msg, msglen, "the secret of '%.*s' may only have letters, digits and -._~+/ (then '=')",
				(int)nlen, line), -EINVAL;
	if (t->n >= API_TOKENS_MAX)
		return snprintf(msg, msglen, "more than %d tokens", API_TOKENS_MAX), -EINVAL;
	digest(secret, slen, d);
	for (size_t i = 0; i < t->n; i++) {
		if (strlen(t->v[i].name) == nlen && memcmp(t->v[i].name, line, nlen) == 0)
			return snprintf(msg, msglen, "the name '%.*s' is given twice", (int)nlen, line), -EINVAL;
		if (memcmp(t->v[i].digest, d, sizeof(d)) == 0)
			return snprintf(msg, msglen, "'%.*s' has the secret of '%s': the actor would be ambiguous", (int)nlen,
					line, t->v[i].name), -EINVAL;
	}
	memcpy(t->v[t->n].name, line, nlen);
	t->v[t->n].name[nlen] = '\0';
	memcpy(t->v[t->n].digest, d, sizeof(d));
	t->n++;
	explicit_bzero(d, sizeof(d));
	return 0;
}

int api_tokens_load(const char *path, uid_t owner, struct api_tokens *out, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	return api_tokens_load_fd(fd, path, owner, out, err, errlen);
}

int api_tokens_load_fd(int fd, const char *path, uid_t owner, struct api_tokens *out, char *err, size_t errlen)
{
	struct api_tokens *t;
	char line[LINE_MAX_LEN + 2], msg[160];
	struct stat st;
	int r = 0, lineno = 0, e;
	FILE *f = fdopen(fd, "r");

	if (!f) {
		e = errno;
		close(fd);
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	/* The file that was opened is the one judged (no race with a rename), after any symlink. */
	if (fstat(fileno(f), &st) < 0) {
		e = errno;
		fclose(f);
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || (st.st_uid != 0 && st.st_uid != owner)) {
		snprintf(err, errlen, "%s: %s (it is %s, mode %04o, owner uid %u): the tokens let their holders change the "
			 "host: the file must be a regular file of mode 0600 owned by root%s", path,
			 !S_ISREG(st.st_mode) ? "not a regular file" : (st.st_mode & 077) ? "readable or writable by others"
											: "owned by another user",
			 S_ISREG(st.st_mode) ? "a file" : "not a file", (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
			 owner ? " or the agent's user" : "");
		fclose(f);
		return -EPERM;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		fclose(f);
		return -ENOMEM;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (strlen(line) > LINE_MAX_LEN && !strchr(line, '\n')) {
			snprintf(msg, sizeof(msg), "line longer than %d characters", LINE_MAX_LEN);
			r = -EINVAL;
			break;
		}
		r = parse_line(line, t, msg, sizeof(msg));
		if (r < 0)
			break;
	}
	explicit_bzero(line, sizeof(line));
	if (r == 0 && ferror(f)) {
		snprintf(err, errlen, "%s: cannot read", path);
		r = -EIO;
	} else if (r < 0) {
		snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
	}
	fclose(f);
	if (r == 0) {
		api_tokens_clear(out);
		*out = *t;
	}
	explicit_bzero(t, sizeof(*t));
	free(t);
	return r;
}

void api_tokens_clear(struct api_tokens *t)
{
	explicit_bzero(t, sizeof(*t));
}

const char *api_tokens_match(const struct api_tokens *t, const char *token, size_t len)
{
	uint8_t d[API_TOKEN_DIGEST_LEN];
	const char *name = NULL;

	digest(token, len, d);
	/* Every token is compared in full (memeql_sec reads every byte whatever differs); only the outcome is a
	 * branch. */
	for (size_t i = 0; i < t->n; i++)
		if (memeql_sec(d, t->v[i].digest, sizeof(d)))
			name = t->v[i].name;
	explicit_bzero(d, sizeof(d));
	return name;
}

int api_bearer(const char *header, const char **token, size_t *len)
{
	const char *p;
	size_t n;

	if (!header || strncasecmp(header, "Bearer ", 7) != 0)
		return -EINVAL;
	p = header + 7;
	while (*p == ' ')
		p++;
	n = strlen(p);
	while (n && p[n - 1] == ' ')
		n--;
	if (n == 0 || n > API_TOKEN_SECRET_MAX || !token68(p, n))
		return -EINVAL;
	*token = p;
	*len = n;
	return 0;
}

/* ---- the Unix socket's peer ------------------------------------------------------------------------------ */

bool api_in_group(gid_t group, gid_t gid, const gid_t *groups, size_t n)
{
	if (gid == group)
		return true;
	for (size_t i = 0; i < n; i++)
		if (groups[i] == group)
			return true;
	return false;
}

int api_unix_peer(int fd, gid_t group, struct api_unix_peer *out)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t *groups = NULL;
	size_t n = 0;
	struct passwd *pw;

	memset(out, 0, sizeof(*out));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	out->pid = cred.pid;
	out->uid = cred.uid;
	out->gid = cred.gid;
	pw = getpwuid(cred.uid);
	if (pw)
		snprintf(out->user, sizeof(out->user), "%s", pw->pw_name);
	else
		snprintf(out->user, sizeof(out->user), "uid:%u", (unsigned)cred.uid);
	if (cred.uid == 0) {
		out->may_act = true;
		return 0;
	}
	/* The groups the peer process had when it connected (Linux 4.13+), not what the user database says now. */
	len = 64 * sizeof(gid_t);
	for (int tries = 0; tries < 2; tries++) {
		gid_t *g = realloc(groups, len ? len : sizeof(gid_t));

		if (!g) {
			free(groups);
			return -ENOMEM;
		}
		groups = g;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
			n = len / sizeof(gid_t);
			break;
		}
		if (errno != ERANGE) {
			int e = errno;

			free(groups);
			return -e;
		}
	}
	out->may_act = api_in_group(group, cred.gid, groups, n);
	free(groups);
	return 0;
}

/* ---- Host and Origin ------------------------------------------------------------------------------------- */

static void add_host(struct api_hosts *h, const char *fmt, const char *a, unsigned port)
{
	if (h->n < API_HOSTS_MAX)
		snprintf(h->v[h->n++], sizeof(h->v[0]), fmt, a, port);
}

int api_hosts_init(struct api_hosts *h, const char *listen)
{
	struct sockaddr_storage sa;
	unsigned salen, port;
	bool loopback;
	char ip[INET6_ADDRSTRLEN];

	memset(h, 0, sizeof(*h));
	if (str_to_listen(listen, &sa, &salen, &loopback) < 0)
		return -EINVAL;
	if (sa.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&sa;

		port = ntohs(in->sin_port);
		h->any = in->sin_addr.s_addr == htonl(INADDR_ANY);
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		add_host(h, "%s:%u", ip, port);
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa;

		port = ntohs(in6->sin6_port);
		h->any = IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		add_host(h, "[%s]:%u", ip, port);
	}
	if (loopback) {
		add_host(h, "%s:%u", "localhost", port);
		add_host(h, "%s:%u", "127.0.0.1", port);
		add_host(h, "[%s]:%u", "::1", port);
	}
	/* A browser leaves out the default port. */
	if (port == 80)
		for (size_t i = 0, n = h->n; i < n && h->n < API_HOSTS_MAX; i++) {
			snprintf(h->v[h->n], sizeof(h->v[0]), "%s", h->v[i]);
			h->v[h->n][strlen(h->v[h->n]) - 3] = '\0';
			h->n++;
		}
	return 0;
}

bool api_host_ok(const struct api_hosts *h, const char *host)
{
	if (!host || h->any)
		return true;
	for (size_t i = 0; i < h->n; i++)
		if (strcasecmp(host, h->v[i]) == 0)
			return true;
	return false;
}

bool api_origin_ok(const char *origin, const char *host)
{
	if (!origin)
		return true;
	return host && strncasecmp(origin, "http://", 7) == 0 && strcasecmp(origin + 7, host) == 0;
}
