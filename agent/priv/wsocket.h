/*
 * wsocket: the writer as a unit of its own (ngx-autotune-writer.service, started by ngx-autotune-writer.socket)
 * and the engine as another (ngx-autotune.service, User=ngx-autotune from its first instruction), met on a
 * SOCK_SEQPACKET socket of the writer's: the alternative to the fork of main.c's start_writer, so that systemd
 * confines each process by a unit of its own (and systemd-analyze security rates each).
 *
 * The engine connects twice: first its write channel, then its read channel (writer_serve's FD and RFD). The
 * writer takes both from its listening socket in that order, each from the same process of [agent] user's uid
 * (SO_PEERCRED): a socket that mode 0600 keeps the user's already, checked again by what the kernel says of each
 * peer. The writer then serves them until the engine closes them, and ends; systemd starts it again at the next
 * engine's connection (Accept=no), after the earlier one ended: two writers never serve at once.
 */
#ifndef NGXAT_WSOCKET_H
#define NGXAT_WSOCKET_H

#include <stddef.h>
#include <sys/types.h>

/* The writer's side: the two channels of one engine of uid ENGINE_UID accepted on LISTEN_FD within TIMEOUT_MS
 * (connections of any other uid, or a second channel from another process, refused and closed). 0 with *FD and
 * *RFD, or -errno with ERR: -ETIMEDOUT when no engine connected at all. */
int wsocket_accept(int listen_fd, uid_t engine_uid, int timeout_ms, int *fd, int *rfd, char *err, size_t errlen);

/* The engine's side: both channels connected to PATH, whose listener must be root's (a writer, or systemd holding
 * its socket). 0 with *FD and *RFD, or -errno with ERR naming PATH. */
int wsocket_connect(const char *path, int *fd, int *rfd, char *err, size_t errlen);

#endif
