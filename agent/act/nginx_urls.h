/*
 * nginx_urls: the URLs a client of this nginx asks, read from its configuration (a parsed `nginx -T` dump), for the
 * synthetic client when [client] url is not set.
 *
 * Two at most: the first address nginx serves plain HTTP on (a listen of a server that serves more than
 * stub_status: not ssl, http2, quic, proxy_protocol or a unix socket), path "/", and one location that nginx
 * proxies (proxy_pass), in the server a request to that address reaches when its Host names no server (the
 * listen's default_server, else the first server on it): the path a client takes to the upstream, which "/" may
 * not. Where stub_status_url's host and port are such an address, that is the first URL, as before. A wildcard
 * listen is asked on loopback. Text only: it reads no file and runs nothing.
 */
#ifndef NGXAT_NGINX_URLS_H
#define NGXAT_NGINX_URLS_H

#include <stddef.h>

#include "act/nginx_conf.h"

/* The URLs of C (blank-separated) into OUT; STUB_URL is [nginx] stub_status_url (may be ""). 0, -ENOENT (no plain
 * HTTP listen: OUT ""), -ENAMETOOLONG, -EINVAL with ERR (the dump does not walk), -ENOMEM. */
int nginx_urls_client(const struct nginx_conf *c, const char *stub_url, char *out, size_t outlen, char *err,
		      size_t errlen);

#endif
