/*
 * wmsg: the messages between the engine and the writer (the privileged process), as bytes (pure).
 *
 * Owns the one encoding of what the unprivileged engine may ask of the writer and what it is answered, and the
 * strict decode the writer applies to every message before anything else looks at it: a compromised engine can
 * send any bytes, and they must come out as one of these few typed requests or as a refusal that says why. One
 * message is one datagram of a SOCK_SEQPACKET socketpair, at most WMSG_MAX bytes:
 *
 *   offset 0  u32  WMSG_MAGIC ("NXW1": the version is in it)
 *          4  u16  type
 *          6  u16  op (WMSG_NGINX: which; WMSG_SOCKET: which kind; else 0)
 *          8  u32  id (the engine's, echoed in the answer)
 *         12  i32  result (WMSG_RESULT: 0 or -errno; else 0)
 *         16  u16  length of the first string, u16 length of the second
 *         20  the two strings, without terminators
 *
 * Integers are little-endian. Strings: a knob's name ([A-Za-z0-9._-], 1 to WMSG_NAME_MAX - 1 bytes), a value
 * (printable ASCII, at most WMSG_VALUE_MAX - 1: the canonical text of core/knobval.h), a path (absolute, printable,
 * at most WMSG_PATH_MAX - 1), an answer's text (printable or UTF-8, at most WMSG_TEXT_MAX - 1). Every field a type
 * does not use must be zero or empty, and the datagram must end where its strings end. No I/O.
 */
#ifndef NGXAT_WMSG_H
#define NGXAT_WMSG_H

#include <stddef.h>
#include <stdint.h>

#define WMSG_MAGIC 0x3157584eu /* "NXW1" read little-endian */
#define WMSG_HEAD 20
#define WMSG_NAME_MAX 64
#define WMSG_VALUE_MAX 1024
#define WMSG_PATH_MAX 1024
#define WMSG_TEXT_MAX 1024
#define WMSG_MAX (WMSG_HEAD + WMSG_NAME_MAX + WMSG_VALUE_MAX) /* the largest datagram either side sends */

enum wmsg_type {
	WMSG_SET = 1,    /* engine: set knob NAME to VALUE (the writer holds it to its own policy) */
	WMSG_RESTORE,    /* engine: put knob NAME back to the original the writer journaled */
	WMSG_NGINX,      /* engine: OP on nginx (test, reload, dump: the dump's bytes come on a passed pipe) */
	WMSG_SOCKET,     /* engine: a socket of kind OP opened in nginx's network namespace, passed back */
	WMSG_OPEN_LOG,   /* engine, read channel: nginx's log at PATH ([nginx] access_log or error_log) opened read-only, passed back */
	WMSG_RELOAD,     /* engine: it reloaded; read the configuration and the policies again before the next request */
	WMSG_RESULT,     /* writer: the answer to request ID: RESULT, TEXT (why, or what was read back) */
	/* On the read channel (writer_serve's RFD), answered at once whatever write is in flight: */
	WMSG_READ,       /* engine: knob NAME's live value (the answer's TEXT) */
	WMSG_PROBE,      /* engine: whether knob NAME can be used here (its driver's probe: RESULT, TEXT why not) */
	WMSG_NICS,       /* engine: the interfaces of nginx's namespace VALUE (a glob) matches (TEXT: names, blank-separated) */
	WMSG_SYSCTL,     /* engine: net.* sysctl NAME as nginx's namespace has it (TEXT: its integers, blank-separated) */
};
#define WMSG_TYPE_LAST WMSG_SYSCTL

#define WMSG_HELLO "writer ready" /* the writer's first datagram: a WMSG_RESULT of id 0 (writer_hello) */

enum wmsg_nginx_op { WMSG_NGINX_TEST = 1, WMSG_NGINX_RELOAD, WMSG_NGINX_DUMP };
/* DIAG: NETLINK_SOCK_DIAG; TCP, TCP6: a TCP socket of IPv4, IPv6 (unbound, unconnected); ROUTE: NETLINK_ROUTE. The
 * answer passes the socket (SCM_RIGHTS) and says whose namespace it is in: "pid N" (0: the writer's own, no master
 * known). */
enum wmsg_socket_op { WMSG_SOCKET_DIAG = 1, WMSG_SOCKET_TCP, WMSG_SOCKET_ROUTE, WMSG_SOCKET_TCP6 };

struct wmsg {
	enum wmsg_type type;
	uint16_t op;
	uint32_t id;
	int32_t result;
	char name[WMSG_NAME_MAX];   /* SET, RESTORE, READ, PROBE, SYSCTL */
	char value[WMSG_VALUE_MAX]; /* SET; NICS: the glob */
	char path[WMSG_PATH_MAX];   /* OPEN_LOG */
	char text[WMSG_TEXT_MAX];   /* RESULT */
};

/* M as a datagram into BUF (LEN bytes): its length, or -EINVAL (a field M's type may not carry, or one out of
 * its rules) or -ENOSPC. */
int wmsg_encode(const struct wmsg *m, uint8_t *buf, size_t len);
/* The datagram BUF (LEN bytes) into OUT: 0, or -EBADMSG with ERR saying what was wrong (OUT is then unusable). */
int wmsg_decode(const uint8_t *buf, size_t len, struct wmsg *out, char *err, size_t errlen);
/* The name of TYPE ("set", "restore", ...), "?" for none. */
const char *wmsg_type_name(enum wmsg_type type);

#endif
