/*
 * nssock: see nssock.h.
 */
#include "build-config.h"

#include "priv/nssock.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "priv/wclient.h"
#include "priv/wmsg.h"
#include "strutil.h"

enum { DIAG, ROUTE, KINDS };

struct slot {
	struct nssock *s;
	unsigned op;    /* its wmsg_socket_op */
	bool asked;     /* a request in flight */
	int fd;         /* a socket that came, or -1 */
	pid_t pid;      /* the master whose namespace it is in */
	int err;        /* the writer's refusal, said at the next call, or 0 */
	char why[WMSG_TEXT_MAX];
};

struct nssock {
	struct wclient *c;
	struct slot slot[KINDS];
};

int nssock_new(struct wclient *c, struct nssock **out)
{
	struct nssock *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->c = c;
	for (int k = 0; k < KINDS; k++) {
		s->slot[k].s = s;
		s->slot[k].op = k == DIAG ? WMSG_SOCKET_DIAG : WMSG_SOCKET_ROUTE;
		s->slot[k].fd = -1;
	}
	*out = s;
	return 0;
}

static void drop(struct slot *sl)
{
	if (sl->fd >= 0)
		close(sl->fd);
	sl->fd = -1;
}

/* The writer's answer to a SOCKET, RESULT and TEXT with FD: 0 with the master's pid in *PID ("pid N"), or -errno with
 * *TEXT saying why (FD is then closed). */
static int answer_pid(int result, const char **text, int fd, int *pid)
{
	*pid = 0;
	if (result == 0 && strcmp(*text, "pid 0") == 0) {
		/* Its pid file names no master now (nginx restarting): asked again at the next call. */
		result = -ESRCH;
		*text = "the writer finds no nginx master";
	} else if (result == 0 && (fd < 0 || strncmp(*text, "pid ", 4) != 0 ||
				   str_to_pid(*text + 4, strlen(*text + 4), pid) < 0)) {
		result = -EPROTO;
		*text = "the writer's answer named no namespace";
	}
	if (result < 0 && fd >= 0)
		close(fd);
	return result;
}

static void answered(int result, const char *text, int fd, void *ctx)
{
	struct slot *sl = ctx;
	int pid;

	sl->asked = false;
	drop(sl);
	result = answer_pid(result, &text, fd, &pid);
	if (result < 0) {
		sl->err = result;
		snprintf(sl->why, sizeof(sl->why), "%s", text);
		return;
	}
	sl->fd = fd;
	sl->pid = pid;
}

int nssock_nics(struct rclient *rc, const char *glob, char (*names)[16], size_t max, size_t *n)
{
	struct wmsg m = {.type = WMSG_NICS};
	char text[WMSG_TEXT_MAX], *save = NULL, *tok;
	int r;

	*n = 0;
	if (strlen(glob) >= sizeof(m.value))
		return -EINVAL;
	strcpy(m.value, glob);
	r = rclient_call(rc, &m, text, sizeof(text), NULL);
	if (r < 0 && r != -ENOSPC)
		return r;
	for (tok = strtok_r(text, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (strlen(tok) >= 16)
			return -EPROTO;
		if (*n == max)
			return -ENOSPC;
		snprintf(names[(*n)++], 16, "%s", tok);
	}
	return r;
}

int nssock_sysctl(struct rclient *rc, const char *name, char *out, size_t outlen)
{
	struct wmsg m = {.type = WMSG_SYSCTL};
	char text[WMSG_TEXT_MAX];
	int r;

	if (strlen(name) >= sizeof(m.name))
		return -EINVAL;
	strcpy(m.name, name);
	r = rclient_call(rc, &m, text, sizeof(text), NULL);
	if (r == 0 && strlen(text) >= outlen)
		return -ERANGE;
	snprintf(out, outlen, "%s", text);
	return r;
}

int nssock_open_log(struct rclient *rc, const char *path, char *why, size_t whylen)
{
	struct wmsg m = {.type = WMSG_OPEN_LOG};
	int fd = -1, r;

	if (strlen(path) >= sizeof(m.path)) {
		snprintf(why, whylen, "%.64s...: too long a path", path);
		return -ENAMETOOLONG;
	}
	strcpy(m.path, path);
	r = rclient_call(rc, &m, why, whylen, &fd);
	if (r == 0 && fd < 0) {
		snprintf(why, whylen, "the writer passed no descriptor");
		r = -EPROTO;
	}
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

int nssock_tcp(struct rclient *rc, pid_t pid, int family, char *why, size_t whylen)
{
	struct wmsg m = {.type = WMSG_SOCKET, .op = family == AF_INET6 ? WMSG_SOCKET_TCP6 : WMSG_SOCKET_TCP};
	char text[WMSG_TEXT_MAX];
	const char *t = text;
	int fd, got, r;

	if (family != AF_INET && family != AF_INET6) {
		snprintf(why, whylen, "a TCP socket of family %d", family);
		return -EAFNOSUPPORT;
	}
	r = rclient_call(rc, &m, text, sizeof(text), &fd);
	r = answer_pid(r, &t, fd, &got);
	if (r == 0 && got != pid) {
		close(fd);
		t = "nginx's master is another now";
		r = -ESTALE;
	}
	if (r < 0) {
		snprintf(why, whylen, "the writer made no socket of nginx %d's namespace: %s", (int)pid, t);
		return r;
	}
	return fd;
}

int nssock_netlink(struct nssock *s, pid_t pid, int *diag, int *route, char *why, size_t whylen)
{
	bool waiting = false;

	for (int k = 0; k < KINDS; k++) {
		struct slot *sl = &s->slot[k];

		if (sl->err) {
			int e = sl->err;

			snprintf(why, whylen, "the writer made no socket of nginx %d's namespace: %s", (int)pid, sl->why);
			/* Said once for both: the other's refusal is the same one. */
			s->slot[DIAG].err = s->slot[ROUTE].err = 0;
			return e;
		}
		/* One of another master (nginx restarted since it was asked): asked again. */
		if (sl->fd >= 0 && sl->pid != pid)
			drop(sl);
		if (sl->fd < 0) {
			waiting = true;
			if (!sl->asked) {
				struct wmsg m = {.type = WMSG_SOCKET, .op = (uint16_t)sl->op};
				int r = wclient_request_fd(s->c, &m, answered, sl, why, whylen);

				if (r < 0)
					return r;
				sl->asked = true;
			}
		}
	}
	if (waiting) {
		snprintf(why, whylen, "the sockets of nginx %d's network namespace are asked of the writer", (int)pid);
		return -EINPROGRESS;
	}
	*diag = s->slot[DIAG].fd;
	*route = s->slot[ROUTE].fd;
	s->slot[DIAG].fd = s->slot[ROUTE].fd = -1;
	return 0;
}

void nssock_free(struct nssock *s)
{
	if (!s)
		return;
	for (int k = 0; k < KINDS; k++) {
		wclient_cancel(s->c, &s->slot[k]);
		drop(&s->slot[k]);
	}
	free(s);
}
