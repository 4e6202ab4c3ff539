/*
 * writer_main: the privileged writer (writer.h) as a process of its own, forked by the agent at start when
 * [agent] writer = yes (main.c).
 *
 * Owns everything the writer's decisions rest on, none of it taken from the engine: the policies, loaded from the
 * files the configuration names (again after the RELOAD the agent sends at its own reload, or a SIGHUP), the knobs
 * built from them with their real drivers, nginx's master followed through [nginx] pid_file and its command line,
 * a loop of its own for nginx's asynchronous drivers, and the journal of originals (WRITER_JOURNAL_NAME beside
 * the store). It serves the engine's socket until the engine closes it.
 */
#ifndef NGXAT_WRITER_MAIN_H
#define NGXAT_WRITER_MAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define WRITER_DIR_NAME "writer"          /* in the store's directory: root's, 0700 */
#define WRITER_JOURNAL_NAME "originals"    /* in WRITER_DIR_NAME, and "originals.written" beside it */

/* Serve the engine on FD (one end of a SOCK_SEQPACKET socketpair) and RFD (its read channel: writer_serve) with CFG
 * until the engine closes FD: the exit status, 0 or 1 (it could not start: logged). After a SIGHUP it reads the
 * configuration again from CONFIG_PATH (MUST_EXIST as -c gave it; ROOT_OVERRIDE, --root, kept over it). */
int writer_main(const struct config *cfg, const char *config_path, bool must_exist, const char *root_override, int fd,
		int rfd);
/* The writer's directory of CFG into OUT: [agent] writer_dir, else WRITER_DIR_NAME beside the store. 0 or -ENAMETOOLONG. */
int writer_dir_path(const struct config *cfg, char *out, size_t outlen);
/*
 * The writer's directory ([agent] writer_dir, else WRITER_DIR_NAME in the store's directory), made (0700, its parents as the store makes them)
 * when missing, opened without following a link and checked by that descriptor: a directory of the writer's own
 * user that no group or other may enter. Its descriptor (O_CLOEXEC), or -errno with ERR; its path into SHOWN. The
 * journals are then reached through the descriptor (/proc/self/fd/N/...), never again by a name that whoever may
 * write the store's directory could swap.
 */
int writer_dir_open(const struct config *cfg, char *shown, size_t shownlen, char *err, size_t errlen);

#endif
