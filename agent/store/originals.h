/*
 * originals: a file of knobs' original values, "KNOB VALUE" a line, appended and synced before the first write of
 * each knob, so that the host can be put back whatever became of the rest (the store's copy beside its database,
 * STORE.originals; the writer's own journal, priv/writer.h). The last line of a knob is its original (a cleared
 * conflict moves it). No SQL: the writer links it without the store.
 */
#ifndef NGXAT_ORIGINALS_H
#define NGXAT_ORIGINALS_H

#include <stddef.h>

#define ORIGINALS_KNOB_MAX 64
#define ORIGINALS_VALUE_MAX 1024

/* Append "KNOB ORIGINAL" to the file at PATH (created 0600, never through a symlink), synced, the directory too
 * when the file is new. 0; -EINVAL (a blank in KNOB, a newline in either, too long); -errno of the file. */
int originals_note(const char *path, const char *knob, const char *original);

typedef int (*originals_cb)(void *ctx, const char *knob, const char *original);
/* The file at PATH line by line in the order written; CB's non-zero stops and is returned. A malformed line is
 * skipped and the lines after it still read: then -EBADMSG at the end, ERR naming each such line (FILE:LINE and its
 * start); a last line cut short (never synced) ends the file. 0, -ENOENT (no such file), -errno (ERR says which). */
int originals_read(const char *path, originals_cb cb, void *ctx, char *err, size_t errlen);
/* The file at PATH rewritten with only the last KEEP lines (1 or more) of each knob, in the order written: a new file
 * beside it (PATH.compact, 0600), synced, then renamed over it, and the directory synced, so that a crash leaves the
 * old file or the new one. The number of lines kept; -EBADMSG (a damaged line: the file is left as it is, for
 * someone to look at), -E2BIG (more than ORIGINALS_COMPACT_KNOBS knobs), -ENOENT, -errno; ERR says why. */
#define ORIGINALS_COMPACT_KNOBS 4096
int originals_compact(const char *path, unsigned keep, char *err, size_t errlen);

#endif
