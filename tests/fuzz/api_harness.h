/*
 * api_harness: the agent's API in the fuzzer's process, for fuzz_api_http and fuzz_api_body.
 *
 * fuzz_api_start builds the agent as main.c does (configuration, store, policies, engine, tuning loop, doctor,
 * API on a Unix socket and on a loopback TCP port) against an empty fake root in a temporary directory, with
 * dry_run = yes and no nginx, so no request can touch the host. It runs no tick: the libuv loop is driven by
 * fuzz_api_exchange only, which connects, sends one input and runs the loop until the API has answered and closed
 * or has gone quiet. Requests that act (POST) change the agent's state for the inputs after them, as they would in
 * a running agent.
 */
#ifndef NGXAT_FUZZ_API_HARNESS_H
#define NGXAT_FUZZ_API_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

/* Start the agent and its API once per process; aborts (with why) when it cannot. */
void fuzz_api_start(void);
/* What "Host:" the TCP listener answers to ("127.0.0.1:PORT"). */
const char *fuzz_api_host(void);
/* The bearer token the TCP listener accepts. */
const char *fuzz_api_token(void);
/* Send REQ[0..LEN) to the Unix socket (as root: may act) or the TCP listener, run the loop until the answer is
 * complete, and close. The answer, when there is one, must begin with an HTTP status line. */
void fuzz_api_exchange(bool tcp, const char *req, size_t len);

#endif
