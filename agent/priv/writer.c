/*
 * writer: the engine's requests held to the writer's own policies. See writer.h.
 */
#include "build-config.h"

#include "priv/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "act/knob.h"
#include "act/knob_io.h"
#include "core/knobval.h"
#include "core/policy.h"
#include "priv/wmsg.h"
#include "store/originals.h"
#include "termsafe.h"

static struct knob *find(struct writer *w, const char *name)
{
	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->knobs[i].name, name) == 0)
			return &w->knobs[i];
	return NULL;
}

/* K by name, after the before hook asked again once for a knob not found. */
static struct knob *lookup(struct writer *w, const char *name, char *why, size_t whylen)
{
	struct knob *k = find(w, name);

	if (!k && w->before && w->before(w, true, why, whylen) == 0)
		k = find(w, name);
	if (!k)
		snprintf(why, whylen, "no knob %s here: no policy of the writer's names it", name);
	return k;
}

static struct writer_original *original_of(struct writer *w, const struct knob *k)
{
	return &w->orig[k - w->knobs];
}

/* A line of the journal: the last one of a knob of the writer's is its original; others' are kept, not used. */
static int load_line(void *ctx, const char *knob, const char *original)
{
	struct writer *w = ctx;
	struct knob *k = find(w, knob);

	if (k && strlen(original) < sizeof(w->orig[0].value)) {
		snprintf(original_of(w, k)->value, sizeof(w->orig[0].value), "%s", original);
		original_of(w, k)->known = true;
	}
	return 0;
}

/* A line of the journal of writes: the knob's last two. */
static int load_written(void *ctx, const char *knob, const char *value)
{
	struct writer *w = ctx;
	struct knob *k = find(w, knob);
	struct writer_original *o;

	w->written_lines++;
	if (!k || strlen(value) >= sizeof(o->last))
		return 0;
	o = original_of(w, k);
	memcpy(o->prev, o->last, sizeof(o->prev));
	snprintf(o->last, sizeof(o->last), "%s", value);
	o->nwritten++;
	return 0;
}

static void written_path(const struct writer *w, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s.written", w->originals);
}

/* The journal's path as messages name it. */
static const char *shown(const struct writer *w)
{
	return w->shown ? w->shown : w->originals;
}

/* The journal of writes grows a line a write (an nginx trial writes at every arm switch): past its bound, it is
 * rewritten with each knob's last two lines, all that is read of it (load_written), also of knobs the writer has
 * no policy for now (a policy put back later finds its knob's own writes). A damaged journal is left as it is;
 * another attempt after as many lines again. */
static void compact_written(struct writer *w)
{
	size_t max = w->written_max ? w->written_max : WRITER_WRITTEN_MAX;
	char path[4096], err[512];
	int kept;

	if (w->written_lines <= max)
		return;
	written_path(w, path, sizeof(path));
	kept = originals_compact(path, 2, err, sizeof(err));
	w->written_lines = kept >= 0 ? (size_t)kept : 0;
}

/* The last original the journal holds of NAME (a knob no policy of the writer's names now). */
struct journal_find {
	const char *name;
	char value[KNOB_VALUE_MAX];
	bool found;
};

static int find_line(void *ctx, const char *knob, const char *original)
{
	struct journal_find *f = ctx;

	if (strcmp(knob, f->name) == 0 && strlen(original) < sizeof(f->value)) {
		snprintf(f->value, sizeof(f->value), "%s", original);
		f->found = true;
	}
	return 0;
}

/* The agent's own originals file (W->fallback) opened, when it may be trusted: checked by the descriptor that is read
 * (no symlink, no file swapped in between), a regular file of root's that no one else may write, one link, in a
 * directory of root's that no one else may write. Its descriptor, or -1. */
static int fallback_fd(const struct writer *w)
{
	char dir[4096], *slash;
	struct stat st, dt;
	int fd;

	if (!w->fallback)
		return -1;
	fd = open(w->fallback, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	snprintf(dir, sizeof(dir), "%s", w->fallback);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022) &&
	    st.st_nlink == 1 && slash && lstat(dir, &dt) == 0 && S_ISDIR(dt.st_mode) && dt.st_uid == 0 &&
	    !(dt.st_mode & 022))
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* A line of the agent's own originals file, taken into the writer's journal when that has none of the knob. */
static int import_line(void *ctx, const char *knob, const char *original)
{
	struct writer *w = ctx;
	struct journal_find f = {.name = knob};
	char err[256];

	originals_read(w->originals, find_line, &f, err, sizeof(err));
	if (f.found || originals_note(w->originals, knob, original) < 0)
		return 0;
	return load_line(w, knob, original);
}

int writer_init(struct writer *w, char *err, size_t errlen)
{
	char path[4096], err2[256];
	int r, r2;

	if (!w || !w->originals || !w->originals[0] || (w->n && !w->knobs)) {
		snprintf(err, errlen, "the writer needs its knobs and a journal of originals");
		return -EINVAL;
	}
	w->orig = calloc(w->n ? w->n : 1, sizeof(*w->orig));
	if (!w->orig) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	err[0] = '\0';
	r = originals_read(w->originals, load_line, w, err, errlen);
	if (r == -ENOENT)
		r = 0;
	if (r < 0 && r != -EBADMSG)
		return r;
	/* Also after damaged lines in the originals (their good lines are loaded): without its writes, the writer would
	 * take each knob's tuned value for the host's at its next write. */
	written_path(w, path, sizeof(path));
	w->written_lines = 0;
	r2 = originals_read(path, load_written, w, r < 0 ? err2 : err, r < 0 ? sizeof(err2) : errlen);
	if (r2 == -ENOENT)
		r2 = 0;
	if (r2 == 0)
		compact_written(w);
	/* The originals of knobs the agent changed before it had a writer (an upgrade) become the writer's own now,
	 * while the agent's file is still root's: an engine that gives up root is given that file next. */
	{
		int fd = fallback_fd(w);
		char fdpath[64], err3[256];

		if (fd >= 0) {
			snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
			originals_read(fdpath, import_line, w, err3, sizeof(err3));
			close(fd);
		}
	}
	return r < 0 ? r : r2;
}

void writer_free(struct writer *w)
{
	if (!w)
		return;
	free(w->orig);
	w->orig = NULL;
	for (size_t i = 0; i < w->norphans; i++) {
		w->orphans[i]->k.ops->release(&w->orphans[i]->k);
		free(w->orphans[i]);
	}
	w->norphans = 0;
}

/* Whether LIVE is one of the writer's own last two writes of the knob (the last one may have failed, or been cut
 * short by a crash, after it was journaled). */
static bool own(const struct writer_original *o, const char *live)
{
	return (o->nwritten > 0 && strcmp(live, o->last) == 0) || (o->nwritten > 1 && strcmp(live, o->prev) == 0);
}

/* Before a write of K: its live value LIVE journaled (synced) as its original when the writer has none, or when
 * someone else set LIVE since the writer's own last write (it is the host's value now). */
static int journal_original(struct writer *w, struct knob *k, const char *live, char *why, size_t whylen)
{
	struct writer_original *o = original_of(w, k);
	int r;

	if (o->known && (own(o, live) || strcmp(live, o->value) == 0))
		return 0;
	r = originals_note(w->originals, k->name, live);
	if (r < 0) {
		snprintf(why, whylen, "%s: its original %.200s cannot be journaled in %.300s (%s): not written", k->name, live,
			 shown(w), strerror(-r));
		return r == -EINVAL ? -EINVAL : -EIO;
	}
	snprintf(o->value, sizeof(o->value), "%s", live);
	o->known = true;
	return 0;
}

/* The write of VALUE to K journaled (synced) before it is made. */
static int journal_write(struct writer *w, struct knob *k, const char *value, char *why, size_t whylen)
{
	struct writer_original *o = original_of(w, k);
	char path[4096];
	int r;

	written_path(w, path, sizeof(path));
	r = originals_note(path, k->name, value);
	if (r < 0) {
		snprintf(why, whylen, "%s: the write of %.200s cannot be journaled in %.300s.written (%s): not written",
			 k->name, value, shown(w), strerror(-r));
		return r == -EINVAL ? -EINVAL : -EIO;
	}
	memcpy(o->prev, o->last, sizeof(o->prev));
	snprintf(o->last, sizeof(o->last), "%s", value);
	o->nwritten++;
	w->written_lines++;
	compact_written(w);
	return 0;
}

/* A write of K that failed: the value before it journaled again as the writer's last (it is what the knob holds),
 * so that the failed value does not push the writer's own value out of its last two (own). A knob of no journal
 * (an orphan) has nothing to put right. */
static void write_failed(struct writer *w, struct knob *k)
{
	struct writer_original *o;
	char before[KNOB_VALUE_MAX];
	char why[KNOB_WHY_MAX];

	if (!w->orig || k < w->knobs || k >= w->knobs + w->n)
		return;
	o = original_of(w, k);
	if (o->nwritten < 2)
		return;
	memcpy(before, o->prev, sizeof(before));
	journal_write(w, k, before, why, sizeof(why));
}

/* Another knob's live value for policy_check's constraints: -ENOENT when the writer has no such knob. */
static int value_of(const char *name, char *out, size_t outlen, void *ctx)
{
	struct knob *k = find(ctx, name);

	return k ? k->ops->read(k, out, outlen) : -ENOENT;
}

/* K's driver writes VALUE: its result, or -EINPROGRESS (DONE answers: the writer's loop). */
static int drive(struct knob *k, const char *value, knob_done_fn done, struct writer *w, char *why, size_t whylen)
{
	int r;

	why[0] = '\0';
	r = k->ops->write(k, value, why, whylen, done, w);
	if (r == -EINPROGRESS && !done) {
		/* An asynchronous driver (nginx's) answers from the writer's loop (writer_serve). */
		snprintf(why, whylen, "%s: an asynchronous driver needs the writer's loop", k->name);
		r = -EOPNOTSUPP;
	}
	if (r < 0 && r != -EINPROGRESS)
		write_failed(w, k);
	return r;
}

static int set(struct writer *w, const struct wmsg *m, knob_done_fn done, char *why, size_t whylen)
{
	struct knob *k = lookup(w, m->name, why, whylen);
	char live[KNOB_VALUE_MAX], value[KNOB_VALUE_MAX];
	struct knobval *v;
	int r;

	if (!k)
		return -ENOENT;
	r = k->ops->read(k, live, sizeof(live));
	if (r < 0) {
		snprintf(why, whylen, "%s: its live value cannot be read (%s)", m->name, strerror(-r));
		return r;
	}
	/* Compared, journaled and written in its canonical text only: "4096 " is 4096, never a value of its own that
	 * reads back otherwise (and would then pass for someone else's). */
	v = malloc(sizeof(*v));
	if (!v)
		return -ENOMEM;
	r = knobval_parse(k->pol->type, m->value, v, why, whylen);
	if (r == 0)
		r = knobval_format(v, value, sizeof(value));
	free(v);
	if (r < 0) {
		if (!why[0])
			snprintf(why, whylen, "%s: not a value of its type", m->name);
		return -EDOM;
	}
	/* What the host had is no policy's to refuse: a trial's A arm writes the original, which may lie outside the
	 * bounds (keepalive_requests 1 under a min of 100), and so may a value the knob has now. */
	if (strcmp(value, live) != 0 && !(original_of(w, k)->known && strcmp(value, original_of(w, k)->value) == 0)) {
		r = policy_check(w->set, k->pol, live, value, value_of, w, why, whylen);
		if (r < 0)
			return -EDOM;
	}
	r = journal_original(w, k, live, why, whylen);
	if (r == 0)
		r = journal_write(w, k, value, why, whylen);
	if (r < 0)
		return r;
	return drive(k, value, done, w, why, whylen);
}

/* The original of NAME as the writer's journal has it, else as the agent's own originals file has it (a knob the
 * agent changed before it had a writer: an upgrade), as long as that file is root's and no one else can write it
 * (once the engine runs as a user of its own, it is not, and only the writer's journal counts). 0, or -ENOENT. */
static int journaled(struct writer *w, const char *name, char *out, size_t outlen)
{
	struct journal_find f = {.name = name};
	char err[256];

	originals_read(w->originals, find_line, &f, err, sizeof(err));
	if (!f.found) {
		int fd = fallback_fd(w);
		char fdpath[64];

		if (fd >= 0) {
			snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
			originals_read(fdpath, find_line, &f, err, sizeof(err));
			close(fd);
		}
	}
	if (!f.found || strlen(f.value) >= outlen)
		return -ENOENT;
	snprintf(out, outlen, "%s", f.value);
	return 0;
}

/* A knob of a removed policy that the writer wrote (its original is in the journal), adopted for RESTORE only
 * (knob_orphan_policy: net.* sysctls), as the engine adopts it: invariant 7 holds after a policy is removed. */
static struct writer_orphan *orphan(struct writer *w, const char *name, char *why, size_t whylen)
{
	struct journal_find f = {.name = name};
	struct writer_orphan *o;
	size_t got;

	for (size_t i = 0; i < w->norphans; i++)
		if (strcmp(w->orphans[i]->k.name, name) == 0)
			return w->orphans[i];
	if (!w->env || w->norphans == WRITER_ORPHANS_MAX || journaled(w, name, f.value, sizeof(f.value)) < 0)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	if (knob_orphan_policy(name, f.value, &o->pol) < 0 || knob_instantiate(&o->pol, w->env, &o->k, 1, &got) < 0 ||
	    got != 1) {
		free(o);
		return NULL;
	}
	snprintf(o->original.value, sizeof(o->original.value), "%s", f.value);
	o->original.known = true;
	w->orphans[w->norphans++] = o;
	snprintf(why, whylen, "%s", "");
	return o;
}

/* RESTORE: K back to the original the writer journaled before its first write of it; no policy holds it (it is
 * what the host had). A knob whose policy was removed is restored too, when the writer journaled it. */
static int restore(struct writer *w, const struct wmsg *m, knob_done_fn done, char *why, size_t whylen)
{
	struct knob *k = lookup(w, m->name, why, whylen);
	const struct writer_original *o;
	struct writer_orphan *orph = NULL;
	int r;

	if (k) {
		o = original_of(w, k);
	} else if ((orph = orphan(w, m->name, why, whylen))) {
		k = &orph->k;
		o = &orph->original;
	} else {
		return -ENOENT;
	}
	if (!o->known) {
		/* Changed by the agent before it had a writer: the original its own file kept, journaled as the writer's. */
		struct writer_original *mo = original_of(w, k);

		if (journaled(w, m->name, mo->value, sizeof(mo->value)) < 0) {
			snprintf(why, whylen, "%s: no original of it is journaled (the agent never wrote it)", m->name);
			return -ENOENT;
		}
		r = originals_note(w->originals, k->name, mo->value);
		if (r < 0) {
			snprintf(why, whylen, "%s: its original %.200s cannot be journaled in %.300s (%s): not written",
				 k->name, mo->value, shown(w), strerror(-r));
			return -EIO;
		}
		mo->known = true;
	}
	/* Written even when it reads as the original already: a driver finishes what a kill cut short on the way
	 * (nginx's: a backup made before its file was written goes). */
	if (!orph && (r = journal_write(w, k, o->value, why, whylen)) < 0)
		return r;
	return drive(k, o->value, done, w, why, whylen);
}

/* Datagram BUF (LEN bytes): its id into *ID, the result (-EINPROGRESS: DONE answers it) with WHY. */
static int request(struct writer *w, const uint8_t *buf, size_t len, knob_done_fn done, uint32_t *id, int *fd,
		   char *why, size_t whylen)
{
	struct wmsg m;

	*id = 0;
	*fd = -1;
	if (wmsg_decode(buf, len, &m, why, whylen) < 0)
		return -EBADMSG;
	*id = m.id;
	/* Writes only: a socket or a reload needs no knob (and a build that fails must not blind the engine). */
	if (w->before && (m.type == WMSG_SET || m.type == WMSG_RESTORE) && w->before(w, false, why, whylen) < 0)
		return -EAGAIN;
	switch (m.type) {
	case WMSG_SET:
		return set(w, &m, done, why, whylen);
	case WMSG_RESTORE:
		return restore(w, &m, done, why, whylen);
	case WMSG_RELOAD:
		/* What a SIGHUP from the agent asked for, from an engine that may not signal a root process: the files
		 * are root's, so a compromised engine can only make the writer read them again. */
		w->reload = true;
		snprintf(why, whylen, "the configuration and the policies are read again before the next request");
		return 0;
	case WMSG_SOCKET:
		if (!w->socket) {
			snprintf(why, whylen, "socket %u: not served by this writer", m.op);
			return -EOPNOTSUPP;
		}
		return w->socket(w, m.op, fd, why, whylen);
	case WMSG_NGINX:
		if (m.op != WMSG_NGINX_DUMP || !w->dump || !done) {
			snprintf(why, whylen, "nginx %u: not served by this writer yet", m.op);
			return -EOPNOTSUPP;
		}
		return w->dump(w, why, whylen);
	case WMSG_RESULT:
		snprintf(why, whylen, "the engine sent an answer");
		return -EPROTO;
	default:
		snprintf(why, whylen, "%s: not served by this writer yet", wmsg_type_name(m.type));
		return -EOPNOTSUPP;
	}
}

/* NAME's knob for a read: as lookup, the before hook asked only while no write is in flight (it may build the knobs
 * again, and the one being written must stay); a knob of a removed policy that the journal has (a RESTORE's
 * orphan, which the engine reads around its revert) too. -EAGAIN when the hook failed, -ENOENT when there is none. */
static int read_lookup(struct writer *w, const char *name, struct knob **k, char *why, size_t whylen)
{
	struct writer_orphan *o;

	if (!w->busy && w->before && w->before(w, false, why, whylen) < 0)
		return -EAGAIN;
	*k = w->busy ? find(w, name) : lookup(w, name, why, whylen);
	if (!*k && (o = orphan(w, name, why, whylen)))
		*k = &o->k;
	if (!*k) {
		if (w->busy)
			snprintf(why, whylen, "no knob %s here while a write is in flight", name);
		return -ENOENT;
	}
	return 0;
}

/* NICS: the interfaces of nginx's namespace GLOB matches, as the writer's knobs are built (knob_ns_nics), blank-separated
 * into OUT: 0, -ENOSPC with those that fit (more than the answer holds), or -errno. */
static int nics(struct writer *w, const char *glob, char *out, size_t outlen)
{
	char (*names)[KNOB_IFNAME_MAX];
	size_t n = 0, off = 0;
	int r;

	if (!w->env) {
		snprintf(out, outlen, "no interfaces served by this writer");
		return -EOPNOTSUPP;
	}
	/* nginx's master now: its namespace (a rebuild needs no write in flight). */
	if (!w->busy && w->before && (r = w->before(w, false, out, outlen)) < 0)
		return -EAGAIN;
	names = calloc(KNOB_NICS_MAX, sizeof(*names));
	if (!names)
		return -ENOMEM;
	r = knob_ns_nics(w->env, glob, names, KNOB_NICS_MAX, &n);
	out[0] = '\0';
	if (r == 0 || r == -ENOSPC) {
		for (size_t i = 0; i < n; i++) {
			size_t l = strlen(names[i]);

			if (off + l + 2 > outlen) {
				r = -ENOSPC;
				break;
			}
			off += (size_t)snprintf(out + off, outlen - off, "%s%s", off ? " " : "", names[i]);
		}
	} else {
		snprintf(out, outlen, "the interfaces matching %.100s: %s", glob, strerror(-r));
	}
	free(names);
	return r;
}

/* Whether sysctl NAME's file (under the writer's root) exists and is readable by others. */
static bool world_readable(const struct writer *w, const char *name)
{
	char path[512];
	struct stat st;
	size_t off;

	off = (size_t)snprintf(path, sizeof(path), "%s/proc/sys/", w->env && w->env->root && strcmp(w->env->root, "/") != 0
						  ? w->env->root : "");
	for (size_t i = 0; name[i] && off + 1 < sizeof(path); i++)
		path[off++] = name[i] == '.' ? '/' : name[i];
	path[off] = '\0';
	/* A missing one is the driver's to say (-ENOENT). */
	return stat(path, &st) < 0 ? errno == ENOENT : (st.st_mode & S_IROTH) != 0;
}

/* SYSCTL: net.* sysctl NAME as nginx's network namespace has it (the doctor's facts: somaxconn, the port range), read
 * by the sysctl driver in that namespace, as integers into OUT. Only net.*: the engine reads the host's others
 * itself, and nginx's namespace changes only those. */
static int sysctl(struct writer *w, const char *name, char *out, size_t outlen)
{
	struct knob_policy pol;
	struct knob k;
	int r;

	if (strncmp(name, "net.", 4) != 0 || strlen(name) >= sizeof(pol.target)) {
		snprintf(out, outlen, "%s: only net.* sysctls are read for the engine", name);
		return -EPERM;
	}
	/* Only what any process of nginx's namespace may read (the BPF JIT's settings are root's, mode 0600). */
	if (!world_readable(w, name)) {
		snprintf(out, outlen, "%s: not readable by others: not read for the engine", name);
		return -EPERM;
	}
	if (!w->env) {
		snprintf(out, outlen, "no sysctls served by this writer");
		return -EOPNOTSUPP;
	}
	if (!w->busy && w->before && (r = w->before(w, false, out, outlen)) < 0)
		return -EAGAIN;
	memset(&pol, 0, sizeof(pol));
	memset(&k, 0, sizeof(k));
	snprintf(pol.target, sizeof(pol.target), "%s", name);
	pol.type = KNOB_T_INTVEC;
	k.pol = &pol;
	k.env = w->env;
	k.ops = &knob_sysctl_ops;
	r = knob_sysctl_ops.read(&k, out, outlen);
	if (r < 0)
		snprintf(out, outlen, "%s: %s", name, strerror(-r));
	return r;
}

/* Datagram BUF (LEN bytes) of the read channel: its id into *ID, the result with WHY (a READ's value). */
static int read_request(struct writer *w, const uint8_t *buf, size_t len, uint32_t *id, int *fd, char *why,
			size_t whylen)
{
	struct knob *k;
	struct wmsg m;
	int r;

	*id = 0;
	*fd = -1;
	if (wmsg_decode(buf, len, &m, why, whylen) < 0)
		return -EBADMSG;
	*id = m.id;
	switch (m.type) {
	case WMSG_READ:
	case WMSG_PROBE:
		r = read_lookup(w, m.name, &k, why, whylen);
		if (r < 0)
			return r;
		why[0] = '\0';
		if (m.type == WMSG_PROBE)
			return k->pol->enabled && k->ops->probe ? k->ops->probe(k, why, whylen) : 0;
		r = knob_read(k, why, whylen);
		if (r < 0)
			snprintf(why, whylen, "%s: %s", m.name, strerror(-r));
		return r;
	case WMSG_SOCKET:
		if (!w->socket) {
			snprintf(why, whylen, "socket %u: not served by this writer", m.op);
			return -EOPNOTSUPP;
		}
		return w->socket(w, m.op, fd, why, whylen);
	case WMSG_OPEN_LOG:
		if (!w->open_log) {
			snprintf(why, whylen, "open-log: not served by this writer");
			return -EOPNOTSUPP;
		}
		return w->open_log(w, m.path, fd, why, whylen);
	case WMSG_NICS:
		return nics(w, m.value, why, whylen);
	case WMSG_SYSCTL:
		return sysctl(w, m.name, why, whylen);
	case WMSG_RESULT:
		snprintf(why, whylen, "the engine sent an answer");
		return -EPROTO;
	default:
		snprintf(why, whylen, "%s on the read channel: refused (it is served on the other)",
			 wmsg_type_name(m.type));
		return -EPERM;
	}
}

/* The RESULT of request ID into OUT: its length, or -ENOSPC. A driver's WHY may quote what it read: escaped, cut
 * to fit. */
static int result(uint32_t id, int r, const char *why, uint8_t *out, size_t outlen)
{
	struct wmsg res = {.type = WMSG_RESULT, .id = id, .result = r};

	termsafe_escape(why ? why : "", why ? strlen(why) : 0, res.text, sizeof(res.text));
	return wmsg_encode(&res, out, outlen);
}

int writer_handle_fd(struct writer *w, const uint8_t *buf, size_t len, uint8_t *out, size_t outlen, int *fd)
{
	char why[WMSG_TEXT_MAX] = "";
	uint32_t id;
	int r = request(w, buf, len, NULL, &id, fd, why, sizeof(why)), n;

	n = result(id, r, why, out, outlen);
	if (n < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return n;
}

int writer_handle_read(struct writer *w, const uint8_t *buf, size_t len, uint8_t *out, size_t outlen, int *fd)
{
	char why[WMSG_TEXT_MAX] = "";
	uint32_t id;
	int r = read_request(w, buf, len, &id, fd, why, sizeof(why)), n;

	n = result(id, r, why, out, outlen);
	if (n < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return n;
}

int writer_handle(struct writer *w, const uint8_t *buf, size_t len, uint8_t *out, size_t outlen)
{
	int fd, n = writer_handle_fd(w, buf, len, out, outlen, &fd);

	if (fd >= 0)
		close(fd);
	return n;
}

/* ---- the writer's loop ------------------------------------------------------------------------------------- */

static void on_readable(uv_poll_t *p, int status, int events);

/* Answer request ID on SOCK, passing FD with it (-1: none; closed here either way); 0, or -errno when the engine
 * cannot be answered (the writer ends). */
static int send_answer(int sock, uint32_t id, int r, const char *why, int fd)
{
	uint8_t out[WMSG_MAX];
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = out};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	int len = result(id, r, why, out, sizeof(out)), e = 0;

	if (len < 0) {
		e = len;
		goto out;
	}
	iov.iov_len = (size_t)len;
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
		e = -errno;
out:
	if (fd >= 0)
		close(fd);
	return e;
}

/* Answer the request in hand on the write channel. */
static int send_result(struct writer *w, int r, const char *why, int fd)
{
	return send_answer(w->fd, w->id, r, why, fd);
}

/* The writer ends: ERR, 0 when the engine closed its channels. An answer the engine is no longer there to take
 * (it stopped with a request in the socket: a log it asks for every tick) is its close too, not the writer's
 * failure (found in CI: the writer exited 1 at an engine's SIGTERM). */
static void end(struct writer *w, int err)
{
	if (err == -EPIPE || err == -ECONNRESET)
		err = 0;
	if (!w->err)
		w->err = err;
	if (!uv_is_closing((uv_handle_t *)&w->poll))
		uv_close((uv_handle_t *)&w->poll, NULL);
	if (w->rfd >= 0 && !uv_is_closing((uv_handle_t *)&w->rpoll))
		uv_close((uv_handle_t *)&w->rpoll, NULL);
}

/* The read channel: each request answered when it comes (a read is synchronous), whatever write is in flight. The
 * engine closing it, or an answer it cannot take, ends the writer as the other channel's would. */
static void on_read_readable(uv_poll_t *p, int status, int events)
{
	struct writer *w = p->data;
	uint8_t in[WMSG_MAX + 1];
	char why[WMSG_TEXT_MAX] = "";
	uint32_t id;
	ssize_t n;
	int r, fd;

	(void)events;
	n = status < 0 ? -1 : recv(w->rfd, in, sizeof(in), MSG_DONTWAIT);
	if (n < 0 && status >= 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n > 0) {
		r = read_request(w, in, (size_t)n, &id, &fd, why, sizeof(why));
		if ((r = send_answer(w->rfd, id, r, why, fd)) == 0)
			return;
		end(w, r);
		return;
	}
	/* The engine closed it (it stops), or it broke: the writer ends with it, as with the other (an engine whose
	 * reads all failed would go on blind). */
	end(w, status < 0 ? status : n < 0 ? -errno : 0);
}

/* The request in hand ended: answered (with FD, -1: none), and the next request read. */
static void finished(struct writer *w, int r, const char *msg, int fd)
{
	int e;

	w->busy = false;
	e = send_result(w, r, msg, fd);
	if (e < 0)
		end(w, e);
	else if (!w->err && !uv_is_closing((uv_handle_t *)&w->poll)) /* the read channel may have ended it meanwhile */
		uv_poll_start(&w->poll, UV_READABLE, on_readable);
}

/* An asynchronous write ended. */
static void on_written(struct knob *k, int r, const char *msg, void *ctx)
{
	struct writer *w = ctx;

	if (r < 0)
		write_failed(w, k);
	finished(w, r, msg, -1);
}

void writer_dumped(struct writer *w, int rc, const char *msg, int fd)
{
	if (rc < 0 && fd >= 0) {
		close(fd);
		fd = -1;
	}
	finished(w, rc, msg, fd);
}

/* One request at a time: while a write is in flight the socket holds the next ones. */
static void on_readable(uv_poll_t *p, int status, int events)
{
	struct writer *w = p->data;
	uint8_t in[WMSG_MAX + 1];
	char why[WMSG_TEXT_MAX] = "";
	ssize_t n;
	int r, fd;

	(void)events;
	if (status < 0) {
		end(w, status);
		return;
	}
	n = recv(w->fd, in, sizeof(in), MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		end(w, n < 0 ? -errno : 0);
		return;
	}
	r = request(w, in, (size_t)n, on_written, &w->id, &fd, why, sizeof(why));
	if (r == -EINPROGRESS) {
		w->busy = true;
		uv_poll_stop(&w->poll);
		return;
	}
	r = send_result(w, r, why, fd);
	if (r < 0)
		end(w, r);
}

int writer_hello(int fd)
{
	struct wmsg m = {.type = WMSG_RESULT};
	uint8_t buf[WMSG_MAX];
	int n;

	snprintf(m.text, sizeof(m.text), "%s", WMSG_HELLO);
	n = wmsg_encode(&m, buf, sizeof(buf));
	if (n < 0)
		return n;
	return send(fd, buf, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -errno;
}

int writer_serve(struct writer *w, uv_loop_t *loop, int fd, int rfd)
{
	int r;

	w->fd = fd;
	w->rfd = -1;
	w->err = 0;
	w->busy = false;
	r = uv_poll_init(loop, &w->poll, fd);
	if (r < 0)
		return r;
	w->poll.data = w;
	if (rfd >= 0) {
		r = uv_poll_init(loop, &w->rpoll, rfd);
		if (r < 0) {
			uv_close((uv_handle_t *)&w->poll, NULL);
			uv_run(loop, UV_RUN_DEFAULT);
			return r;
		}
		w->rfd = rfd;
		w->rpoll.data = w;
		r = uv_poll_start(&w->rpoll, UV_READABLE, on_read_readable);
	}
	if (r == 0)
		r = uv_poll_start(&w->poll, UV_READABLE, on_readable);
	if (r < 0) {
		end(w, r);
		uv_run(loop, UV_RUN_DEFAULT);
		return r;
	}
	uv_run(loop, UV_RUN_DEFAULT);
	return w->err;
}
