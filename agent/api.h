/*
 * api: the local REST API, libmicrohttpd driven by the agent's libuv loop.
 *
 * MHD runs without threads of its own: its epoll fd is watched by a uv_poll_t and MHD_get_timeout arms a uv
 * timer, so handlers run on the loop thread and read the agent's state without locks. Listens on a Unix socket
 * (mode and group from the configuration). Only this module and frame_json know the JSON shapes; paths and keys
 * come from common/proto.h. Handlers never block: the store queries they run are bounded by a row limit.
 */
#ifndef NGXAT_API_H
#define NGXAT_API_H

#include <stddef.h>

struct agent;
struct api;

/* Bind the socket, start MHD and hook it to A's loop. 0, or -errno with a message in ERR. */
int api_start(struct agent *a, struct api **out, char *err, size_t errlen);
/* Stop serving, close the socket and remove its file; NULL is fine. Safe before the loop is closed. */
void api_stop(struct api *api);

#endif
