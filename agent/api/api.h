/*
 * api: the local REST API, libmicrohttpd driven by the agent's libuv loop.
 *
 * MHD runs without threads of its own: its epoll fd is watched by a uv_poll_t and MHD_get_timeout arms a uv
 * timer, so handlers run on the loop thread and read the agent's state without locks. Listens on a Unix socket
 * (mode and group from the configuration: root and the group's members may act, anyone who can connect may read)
 * and, when [api] listen is set, on a TCP address (loopback unless listen_any): reads without a token, actions
 * with a bearer token of the token file, the console page, no cookies, no CORS. Every act and every refusal is
 * an audit row with its actor and peer. Only this module and frame_json know the JSON shapes; paths and keys
 * come from common/proto.h. Handlers never block: the store queries they run are bounded by a row limit, and the
 * event streams (GET /v1/events) are suspended while they wait.
 */
#ifndef NGXAT_API_H
#define NGXAT_API_H

#include <stddef.h>
#include <sys/types.h>

struct agent;
struct api;
struct config;

/* Bind the socket, start MHD and hook it to A's loop. 0, or -errno with a message in ERR. */
int api_start(struct agent *a, struct api **out, char *err, size_t errlen);
/* What api_start would refuse in CFG's [api] section that the configuration cannot see (the token file). For -n.
 * 0 or -errno with ERR. */
int api_check_config(const struct config *cfg, char *err, size_t errlen);
/* With [api] listen: the token file read now (as root, before the engine gives up root), for api_start to take when
 * the engine's user may not read it (a file of root's, mode 0600: a reload then keeps these tokens, a restart reads
 * the file again). The file may be root's or ENGINE's (the user the engine becomes; ngx-autotune -n, run as root,
 * takes root's only). 0, or -errno with ERR (a file that is not one to trust). */
int api_tokens_preload(const struct config *cfg, uid_t engine, char *err, size_t errlen);
/* A reload: the token file is read again (the old tokens stay if it is bad); a new [api] listen opens, moves or
 * closes the TCP listener (bound before the old socket closes); one that cannot be put in force is logged and the
 * address in force is put back into CFG. */
void api_reload(struct api *api, struct config *cfg);
/* Stop serving, close the socket and remove its file; NULL is fine. Safe before the loop is closed. */
void api_stop(struct api *api);

#endif
