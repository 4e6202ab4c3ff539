/*
 * parse_errorlog: classify nginx error-log lines into the few kinds that point at a tuning knob.
 *
 * nginx writes (ngx_log_error_core, then ngx_http_log_error for HTTP requests):
 *
 *   YYYY/MM/DD HH:MM:SS [level] PID#TID: [*CONN ]MESSAGE[ (ERRNO: STRERROR)][ while ACTION][, client: ...]
 *
 * Client-supplied text can appear anywhere after the start of MESSAGE, not only in the ", request: ..." suffix:
 * open() "/var/www/<decoded URI>" failed, client sent invalid header line: "<header>", and so on. A substring
 * search, even one limited to the part before ", client:", can be steered by a request for
 * "/x (24: Too many open files), client: y". So each kind is matched as an anchored prefix of MESSAGE, where only
 * nginx's own format string writes. The cost: a kind whose message starts with client data is not seen, which only
 * affects EMFILE on open() of a file; nginx meets the same limit on accept4()/socket(), which are matched.
 *
 * Errors are matched by their strerror text, not the number, since errno values differ between architectures.
 * Connects to an upstream that fail are told apart by their errno (Cannot assign requested address: the local
 * ports ran out; Connection refused: nothing listens there; Connection timed out: the SYN went unanswered for
 * proxy_connect_timeout) and "no live upstreams" (every server of the group is marked failed): each is a failure on
 * nginx's side of the upstream connection, not a slow upstream.
 * "Too many open files" also matches ENFILE's "Too many open files in system": both mean descriptors ran out.
 * A line that does not start like an nginx error-log line is ERRLOG_OTHER.
 */
#include "parse.h"

#include <string.h>

/*
 * Message patterns, matched as prefixes: '#' is one or more digits, '&' one or more of [A-Za-z0-9_] (a function
 * name), '%' one or more non-blank bytes (an address such as 10.0.0.1:80, [::1]:80 or unix:/run/app.sock; what
 * follows it in the pattern must start with a blank), anything else itself.
 */
static const struct {
	enum errlog_kind kind;
	const char *pat;
} patterns[] = {
	{ ERRLOG_WORKER_CONNECTIONS, "# worker_connections are not enough" },
	{ ERRLOG_TOO_MANY_FILES, "&() failed (#: Too many open files" },
	{ ERRLOG_UPSTREAM_PREMATURE, "upstream prematurely closed" },
	{ ERRLOG_BUFFERED_TEMP, "an upstream response is buffered to a temporary file" },
	{ ERRLOG_ADDR_NOT_AVAIL, "connect() to % failed (#: Cannot assign requested address)" },
	/* A refused connect is reported when connect() returns (a loopback peer answers the SYN at once) or later,
	 * when the socket becomes writable: both were seen on nginx 1.22. */
	{ ERRLOG_CONN_REFUSED, "connect() to % failed (#: Connection refused)" },
	{ ERRLOG_CONN_REFUSED, "connect() failed (#: Connection refused)" },
	/* Before the general "upstream timed out": the connect itself took proxy_connect_timeout. */
	{ ERRLOG_CONNECT_TIMEOUT, "upstream timed out (#: Connection timed out) while connecting to upstream" },
	{ ERRLOG_UPSTREAM_TIMEOUT, "upstream timed out " },
	{ ERRLOG_NO_LIVE_UPSTREAMS, "no live upstreams while connecting to upstream" },
};

static const char *const kind_names[ERRLOG_KIND_COUNT] = {
	[ERRLOG_WORKER_CONNECTIONS] = "worker_connections",
	[ERRLOG_TOO_MANY_FILES] = "too_many_files",
	[ERRLOG_UPSTREAM_PREMATURE] = "upstream_premature",
	[ERRLOG_BUFFERED_TEMP] = "buffered_temp",
	[ERRLOG_ADDR_NOT_AVAIL] = "addr_not_avail",
	[ERRLOG_UPSTREAM_TIMEOUT] = "upstream_timeout",
	[ERRLOG_CONN_REFUSED] = "conn_refused",
	[ERRLOG_CONNECT_TIMEOUT] = "connect_timeout",
	[ERRLOG_NO_LIVE_UPSTREAMS] = "no_live_upstreams",
};

static const char *const levels[] = { "debug", "info", "notice", "warn", "error", "crit", "alert", "emerg" };

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_ident(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* Skip one or more bytes of class CL ('#', '&' or '%'); 0 when none. */
static const char *skip_class(const char *p, const char *end, char cl)
{
	const char *s = p;

	for (; p < end; p++) {
		if (cl == '#' ? !is_digit(*p) : cl == '&' ? !is_ident(*p) : (*p == ' ' || *p == '\t'))
			break;
	}
	return p == s ? NULL : p;
}

/* Does PAT match a prefix of [P, END)? */
static int match_prefix(const char *p, const char *end, const char *pat)
{
	for (; *pat; pat++) {
		if (*pat == '#' || *pat == '&' || *pat == '%') {
			p = skip_class(p, end, *pat);
			if (!p)
				return 0;
		} else if (p < end && *p == *pat) {
			p++;
		} else {
			return 0;
		}
	}
	return 1;
}

/* Start of MESSAGE after "YYYY/MM/DD HH:MM:SS [level] PID#TID: [*CONN ]", or NULL when the line is not shaped so. */
static const char *message_start(const char *line, const char *end)
{
	static const char stamp[] = "dddd/dd/dd dd:dd:dd [";
	const char *p = line, *q;
	size_t i;

	for (i = 0; stamp[i]; i++, p++) {
		if (p == end || (stamp[i] == 'd' ? !is_digit(*p) : *p != stamp[i]))
			return NULL;
	}
	q = memchr(p, ']', (size_t)(end - p));
	if (!q)
		return NULL;
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if ((size_t)(q - p) == strlen(levels[i]) && memcmp(p, levels[i], (size_t)(q - p)) == 0)
			break;
	if (i == sizeof(levels) / sizeof(levels[0]))
		return NULL;
	p = q + 1;
	if (p == end || *p++ != ' ' || !(p = skip_class(p, end, '#')) || p == end || *p++ != '#' ||
	    !(p = skip_class(p, end, '#')) || end - p < 2 || p[0] != ':' || p[1] != ' ')
		return NULL;
	p += 2;
	if (p < end && *p == '*') {
		q = skip_class(p + 1, end, '#');
		if (q && q < end && *q == ' ')
			p = q + 1;
	}
	return p;
}

enum errlog_kind parse_errorlog_line(const char *line, size_t len)
{
	const char *end, *msg;
	size_t i;

	if (!line)
		return ERRLOG_OTHER;
	end = line + len;
	msg = message_start(line, end);
	if (!msg)
		return ERRLOG_OTHER;
	for (i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++)
		if (match_prefix(msg, end, patterns[i].pat))
			return patterns[i].kind;
	return ERRLOG_OTHER;
}

const char *errlog_kind_name(enum errlog_kind k)
{
	if ((unsigned)k >= ERRLOG_KIND_COUNT)
		return NULL;
	return kind_names[k];
}
