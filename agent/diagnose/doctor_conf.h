/*
 * doctor_conf: nginx's configuration, as `nginx -T` prints it, turned into the doctor's model (core/doctor.h).
 *
 * Owns only the translation: nginx_conf.c splits and walks the dump (includes expanded, nginx's own tokenizer),
 * and every directive, block start and end and included file becomes one node with all of its words, except the
 * contents of blocks of data (map, geo, types, split_clients, charset_map), which the doctor does not check and
 * which hold most of a large configuration. Pure text work like nginx_conf.c: no files, no processes, no logging,
 * so the unit tests run it on fixture dumps.
 */
#ifndef NGXAT_DOCTOR_CONF_H
#define NGXAT_DOCTOR_CONF_H

#include <stddef.h>

#include "core/doctor.h"
#include "act/nginx_conf.h"

/* The walk of C into OUT (initialised here, finished). 0, or -EINVAL / -ENOMEM / -E2BIG with ERR. */
int doctor_conf_from_nginx(const struct nginx_conf *c, struct doctor_conf *out, char *err, size_t errlen);
/* The standard output of `nginx -T` (LEN bytes) into OUT. 0, or -EINVAL / -ENOMEM / -E2BIG with ERR. */
int doctor_conf_from_dump(const char *dump, size_t len, struct doctor_conf *out, char *err, size_t errlen);

#endif
