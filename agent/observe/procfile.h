/*
 * procfile: read a small kernel text file (procfs, sysfs) whole, keeping it open from one read to the next.
 *
 * A procfs or sysfs text file is a seq_file: a read at offset 0 makes the kernel format it afresh, so a descriptor
 * opened once and read with pread(2) from 0 every tick gives the same text as a new open, without the path walk,
 * allocation and teardown of open/close (about 6-14 us a file here, a third of what reading the smaller ones
 * costs). A file on any other filesystem (a fake root under test, a file replaced by rename) is opened for each
 * read, so a replaced file is always seen. A kept descriptor whose read fails (the process exited, the IRQ was
 * freed) is closed and the path opened once more in the same call, so the caller sees what a fresh open gives.
 * One descriptor per procfile; a read of another path closes the old one first. A kept /proc/PID/net file holds
 * that namespace, not the process: its reads go on succeeding after the process exits, so a caller that follows
 * a process must read by a path naming the current pid (a new pid is a new path).
 *
 * It must not parse, log or decide anything; errors are returned as -errno.
 */
#ifndef NGXAT_PROCFILE_H
#define NGXAT_PROCFILE_H

#include <stdbool.h>
#include <stddef.h>

/* A growable buffer for the text; DATA[LEN] is a NUL. */
struct procbuf {
	char *data;
	size_t len, cap;
};

struct procfile {
	int fd;         /* -1: closed; else a kept descriptor on procfs or sysfs */
	char *path;     /* what fd was opened from */
};

/* A closed procfile (all-zero memory is not one: fd 0 is a descriptor). */
void procfile_init(struct procfile *f);
/* Close F's descriptor, if any, and free what it holds; F stays usable. */
void procfile_close(struct procfile *f);
/* Read PATH whole into B (at most MAX bytes, else -E2BIG), keeping it open when KEEP and the file is on procfs or
 * sysfs. 0, -E2BIG, -ENOMEM, or the -errno of open or read. */
int procfile_read(struct procfile *f, const char *path, bool keep, struct procbuf *b, size_t max);
/* Whether F holds a descriptor kept from an earlier read. */
bool procfile_is_kept(const struct procfile *f);
/* Free B's memory. */
void procbuf_free(struct procbuf *b);

#endif
