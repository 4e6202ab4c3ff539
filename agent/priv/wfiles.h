/*
 * wfiles: the files the writer opens for reading on the engine's behalf (OPEN_LOG): nginx's access and error logs
 * (Debian's are www-data:adm, 0640) and the API's token file (root's, 0600), which an engine without root or group
 * adm cannot open itself.
 *
 * Only a path its own configuration (root's agent.conf) names, never one the engine makes up; reached through
 * directories trust_walk accepts (root's, closed to others: no one else can put a link or another file there),
 * the final name opened without following a link, and only a regular file or a FIFO. What was opened is what the
 * engine reads and judges (a token file by its fstat).
 */
#ifndef NGXAT_WFILES_H
#define NGXAT_WFILES_H

#include <stddef.h>

#include "config.h"

/* PATH opened read-only (O_CLOEXEC, non-blocking) into *FD when CFG names it: [nginx] access_log or error_log, or
 * [api] token_file when [api] listen is set. 0, or -errno with WHY: -EPERM (not named, or a directory on the way
 * that someone else may change), -ELOOP (a link), -EINVAL (not a file), -ENOENT, ... */
int wfiles_open(const struct config *cfg, const char *path, int *fd, char *why, size_t whylen);

#endif
