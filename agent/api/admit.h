/*
 * admit: who gets one of the API's connections, and whose connection makes room for it (pure).
 *
 * Owns the shares of the connection table: a total cap (sized from the process's file limit), a share per client
 * (a Unix-socket peer's uid, a TCP peer's address) and one share for every TCP connection that has not shown a
 * token. A newcomer over a cap is not queued: it takes the place of the oldest connection not being answered of
 * the client holding the most (itself when it is over its own share), or it is refused (503, the caller answers).
 * No system call, no clock, no I/O: the caller hands the table and "now" in, and carries the decision out.
 */
#ifndef NGXAT_ADMIT_H
#define NGXAT_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADMIT_TOTAL_MAX 512  /* connections over both listeners, at most */
#define ADMIT_TOTAL_MIN 16   /* even under a tiny file limit */
#define ADMIT_FDS_KEPT 128   /* files left to the rest of the agent (store, netlink, nginx's files, spawns) */

/* A client: the uid of a Unix-socket peer, or a TCP peer's address (IPv4 mapped into 16 bytes). */
struct admit_key {
	bool tcp;
	uint32_t uid;
	uint8_t addr[16];
};

/* One connection as admission sees it. */
struct admit_entry {
	bool used;               /* the slot holds a connection (perhaps closing) */
	bool closing;            /* evicted or expired: no longer counted, the slot not yet free */
	bool busy;               /* its request is complete and being answered (or streamed): never evicted */
	bool tokened;            /* TCP: a request on it showed a valid token, it left the tokenless share */
	bool pending;            /* TCP: admitted over the tokenless share before its head showed a token
				  * (admit_head decides when it does) */
	int64_t since_ms;        /* accepted, or its last answer ended: the oldest goes first */
	struct admit_key key;
};

struct admit_limits {
	unsigned total;          /* connections counted at once, both listeners */
	unsigned per_peer;       /* per Unix-socket uid */
	unsigned per_addr;       /* per TCP address */
	unsigned tokenless;      /* TCP connections without a token, over every address */
};

enum admit_verdict {
	ADMIT_ACCEPT,            /* take SLOT */
	ADMIT_EVICT,             /* close VICTIM (it is marked closing), then take SLOT */
	ADMIT_REFUSE,            /* answer 503 with WHY and close */
};

struct admit_decision {
	enum admit_verdict verdict;
	size_t slot;
	size_t victim;
	const char *why;         /* the share that was full (static text) */
	bool pending;            /* TCP, over the tokenless share: take SLOT pending, its head decides (admit_head) */
};

/* The limits for a process that may open NOFILE files. */
void admit_limits_for(unsigned long nofile, struct admit_limits *out);
/* The number of slots a table needs for LIM: room for connections closing while their places are taken. */
size_t admit_slots(const struct admit_limits *lim);
/* Whether A and B are the same client. */
bool admit_key_eq(const struct admit_key *a, const struct admit_key *b);
/* Where a newcomer K goes in table E of N slots under LIM: *OUT. Marks the victim closing. */
void admit_decide(struct admit_entry *e, size_t n, const struct admit_limits *lim, const struct admit_key *k,
		  struct admit_decision *out);

/* SLOT's head is complete, with a valid token (TOKENED) or not. A pending connection with a token leaves the
 * tokenless share as any tokened one does; without one it joins that share if the share has room now, else it is
 * refused (false: answer 503 "the share of connections without a token is taken" and close). True otherwise. */
bool admit_head(struct admit_entry *e, size_t n, const struct admit_limits *lim, size_t slot, bool tokened);

#endif
