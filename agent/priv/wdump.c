/*
 * wdump: see wdump.h.
 */
#include "build-config.h"

#include "priv/wdump.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv/wclient.h"
#include "priv/wmsg.h"
#include "strutil.h"

struct req {
	struct wdump *d;
	nginx_ctl_dump_fn done;
	void *ctx;
	struct req *next;
};

struct wdump {
	struct wclient *c;
	size_t max;
	struct req *pending;
};

int wdump_new(struct wclient *c, size_t max, struct wdump **out)
{
	struct wdump *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->c = c;
	d->max = max;
	*out = d;
	return 0;
}

static void unlink_req(struct req *q)
{
	for (struct req **p = &q->d->pending; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			return;
		}
}

/* The dump on FD (the writer's memfd) into *OUT (malloc'd, with room for a NUL), at most MAX bytes: 0 or -errno with
 * WHY. */
static int read_dump(int fd, size_t max, char **out, size_t *len, char *why, size_t whylen)
{
	struct stat st;
	size_t got = 0;
	char *buf;

	*out = NULL;
	*len = 0;
	if (fstat(fd, &st) < 0) {
		snprintf(why, whylen, "the writer's nginx -T: %s", strerror(errno));
		return -errno;
	}
	if (st.st_size < 0 || (uint64_t)st.st_size > max) {
		char size[32], bound[32];

		str_size(size, sizeof(size), (uint64_t)st.st_size);
		str_size(bound, sizeof(bound), max);
		snprintf(why, whylen, "nginx -T printed %s, more than the %s the agent reads ([nginx] dump_max)", size,
			 bound);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;

			free(buf);
			snprintf(why, whylen, "the writer's nginx -T: %s", strerror(e));
			return -e;
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

static void answered(int result, const char *text, int fd, void *ctx)
{
	struct req *q = ctx;
	char why[WMSG_TEXT_MAX], *out = NULL;
	size_t len = 0;

	unlink_req(q);
	snprintf(why, sizeof(why), "%s", text);
	if (result == 0 && fd < 0) {
		result = -EPROTO;
		snprintf(why, sizeof(why), "the writer's nginx -T came without its output");
	}
	if (result == 0)
		result = read_dump(fd, q->d->max, &out, &len, why, sizeof(why));
	if (fd >= 0)
		close(fd);
	q->done(result, why, out, len, q->ctx);
	free(q);
}

int wdump_run(void *dv, nginx_ctl_dump_fn done, void *ctx)
{
	struct wdump *d = dv;
	struct wmsg m = {.type = WMSG_NGINX, .op = WMSG_NGINX_DUMP};
	struct req *q;
	char why[WMSG_TEXT_MAX];
	int r;

	if (!d || !done)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	*q = (struct req){.d = d, .done = done, .ctx = ctx, .next = d->pending};
	r = wclient_request_fd(d->c, &m, answered, q, why, sizeof(why));
	if (r < 0) {
		free(q);
		return r;
	}
	d->pending = q;
	return 0;
}

void wdump_cancel(struct wdump *d)
{
	if (!d)
		return;
	while (d->pending) {
		struct req *q = d->pending;

		d->pending = q->next;
		wclient_cancel(d->c, q);
		q->done(-ECANCELED, "the agent stops", NULL, 0, q->ctx);
		free(q);
	}
}

void wdump_free(struct wdump *d)
{
	wdump_cancel(d);
	free(d);
}
