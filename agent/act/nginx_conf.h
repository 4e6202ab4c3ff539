/*
 * nginx_conf: the configuration nginx would load, as `nginx -T` prints it, read the way nginx reads it.
 *
 * This module owns the text of one `nginx -T` dump (split into its files), a tokenizer that follows nginx's own
 * (ngx_conf_read_token: comments, single and double quotes, backslash escapes, `${var}`, a `}` inside a word), and
 * a walk of the configuration with every `include` expanded in place, so that each directive is seen in its
 * context ("main", "events", "http", "http/server", ...) with its file and line. On top of that it answers what the
 * nginx drivers ask: where a directive is set (once, or every time), whether a file is included and where, which
 * `listen` directives open which sockets, and the text of a file with the `backlog=` parameter of some `listen`
 * directives set, with the arguments of one directive replaced in place, or with a batch of edits made
 * (arguments replaced, lines added to a block, blocks appended) whose noted ones can be taken back alone, byte for
 * byte, from the file as it is later (nginx_conf_unedit). It edits text only: it never reads or writes a file,
 * spawns nginx or logs (the drivers do that).
 *
 * The dump is untrusted input: anything malformed, a file that does not tokenize, unbalanced braces, includes
 * nested deeper than NGINX_CONF_INCLUDE_DEPTH or more than NGINX_CONF_FILES_MAX files gives -EINVAL with the
 * reason, never a crash or a guess. A line inside a file that looks exactly like a dump header ("# configuration
 * file /x:") is taken as a header only where nginx could have written one: at the top level of the file before
 * it, for a path not seen yet that an `include` read so far names. Known limits: blocks that nginx modules parse
 * with their own lexer (`*_by_lua_block`) may not tokenize and then give -EINVAL; a server without any `listen`
 * (nginx then listens on *:80) has no line to edit and is not reported.
 */
#ifndef NGXAT_NGINX_CONF_H
#define NGXAT_NGINX_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NGINX_CONF_FILES_MAX 4096       /* files in one dump */
#define NGINX_CONF_DUMP_MAX (64u << 20) /* bytes of one dump */
#define NGINX_CONF_INCLUDE_DEPTH 32     /* nested includes */
#define NGINX_CONF_DEPTH_MAX 64         /* nested blocks */
#define NGINX_CONF_ARGS_MAX 4096        /* words of one directive */
#define NGINX_CONF_LISTENS_MAX 65536    /* listen directives in one configuration */
/* Directives nginx_conf_find_each and nginx_conf_file_each return: each holds its arguments by value (8.5 KiB), so
 * this bounds their answer to 2.2 MiB (3,700 gzip_comp_level in as many locations, 150 KiB of configuration, took
 * 31 MiB and the agent was OOM-killed under MemoryMax=64M) */
#define NGINX_CONF_EACH_MAX 256
#define NGINX_CONF_WORD_MAX 1040        /* an argument returned by value: a CPU mask of 1024 bits fits */
#define NGINX_CONF_ADDR_MAX 256         /* a listen address */
#define NGINX_CONF_LINE_MAX 2048        /* a directive nginx_conf_set_directive writes */
#define NGINX_CONF_VALUE_ARGS 8         /* arguments of a directive returned by nginx_conf_find */
#define NGINX_CONF_CONTEXT_MAX 128      /* a context path such as "http/server" */
#define NGINX_CONF_TOKEN_MAX 4096       /* nginx's own limit on one word (NGX_CONF_BUFFER) */

/* One file of the dump: its path as nginx printed it and its bytes as nginx read them. */
struct nginx_conf_file {
	const char *path;
	const char *text;
	size_t len;
};

/* A parsed dump: files[0] is the main configuration file; every pointer points into buf. */
struct nginx_conf {
	char *buf;
	struct nginx_conf_file *files;
	size_t nfiles;
	char prefix[4096]; /* where relative includes resolve: the main file's directory, with a trailing '/' */
};

/* One directive found by nginx_conf_find, its arguments unescaped as nginx sees them. */
struct nginx_conf_directive {
	size_t file;                                          /* index into files[] */
	unsigned line;                                        /* of its name */
	size_t start;                                         /* offset of its name in the file's text */
	size_t nargs;                                         /* arguments after the name */
	char args[NGINX_CONF_VALUE_ARGS][NGINX_CONF_WORD_MAX]; /* the first NGINX_CONF_VALUE_ARGS of them */
};

enum nginx_listen_module { NGINX_LISTEN_HTTP, NGINX_LISTEN_STREAM, NGINX_LISTEN_MAIL };

/* One `listen` directive of a server block. */
struct nginx_listen {
	size_t file;                   /* index into files[] */
	unsigned line;
	size_t start;                  /* offset of "listen" in the file's text (the key of nginx_conf_set_backlog) */
	enum nginx_listen_module module;
	int family;                    /* AF_INET, AF_INET6, AF_UNIX, or AF_UNSPEC for a host name */
	char addr[NGINX_CONF_ADDR_MAX]; /* "0.0.0.0", "::", "127.0.0.1", a host name, or the unix: path */
	uint16_t port;                 /* 0 for unix sockets */
	bool wildcard;                 /* any address of its family */
	bool udp;                      /* stream `udp`: no accept queue */
	bool options;                  /* bind, backlog= or another option that makes nginx bind this address alone */
	bool has_backlog;
	int64_t backlog;               /* when has_backlog */
	bool reuseport;                /* the reuseport parameter: one socket per worker */
	bool deferred;                 /* the deferred parameter (http): TCP_DEFER_ACCEPT on its socket */
	/*
	 * The directive of its address:port that should carry backlog=: nginx allows socket options on only one
	 * listen of an address:port, so this is the one that has options, else the first. False for unix sockets,
	 * udp, and an address without options whose port a wildcard listen of its family already serves (giving it
	 * backlog= would make nginx bind it on its own: another socket layout, not a queue change).
	 */
	bool target;
};

/* Split the standard output of `nginx -T` (LEN bytes at DUMP, copied) into OUT. 0, -EINVAL with ERR, -ENOMEM. */
int nginx_conf_parse(const char *dump, size_t len, struct nginx_conf *out, char *err, size_t errlen);
/* nginx_conf_parse without the copy: DUMP (malloc'd, LEN bytes and room for one more, which gets a NUL) becomes
 * OUT's buf, freed with it by nginx_conf_free, and freed here on failure. What the agent reads from nginx is parsed
 * this way, so that one dump is held once. */
int nginx_conf_parse_owned(char *dump, size_t len, struct nginx_conf *out, char *err, size_t errlen);

/* Free what nginx_conf_parse allocated; C is left empty. NULL and an empty C are allowed. */
void nginx_conf_free(struct nginx_conf *c);

/* The index of the file named PATH in C, or -ENOENT. */
int nginx_conf_file_index(const struct nginx_conf *c, const char *path);

/*
 * Whether PATH is included, and the context of its first inclusion into CONTEXT ("main" at the top level,
 * "events", "http", "http/server", ...). 0, -ENOENT when nothing includes it, -EINVAL with ERR.
 */
int nginx_conf_included(const struct nginx_conf *c, const char *path, char *context, size_t contextlen, char *err,
			size_t errlen);

/* The first directive NAME directly in CONTEXT ("main", "events", "http", ...). 0, -ENOENT, -EINVAL with ERR. */
int nginx_conf_find(const struct nginx_conf *c, const char *context, const char *name,
		    struct nginx_conf_directive *out, char *err, size_t errlen);

/*
 * The directives NAME in blocks nested inside CONTEXT ("http/server", "http/server/location", ... for "http"),
 * which override CONTEXT's value there; those in upstream blocks are another directive and not counted. *COUNT of
 * them, the first into FIRST and its context into FIRST_CONTEXT. 0, -EINVAL with ERR, -ENOMEM.
 */
int nginx_conf_nested(const struct nginx_conf *c, const char *context, const char *name,
		      struct nginx_conf_directive *first, char *first_context, size_t first_contextlen, size_t *count,
		      char *err, size_t errlen);

/* A directive found by nginx_conf_find_each, with the context it stands in. */
struct nginx_conf_found {
	struct nginx_conf_directive d;
	char context[NGINX_CONF_CONTEXT_MAX];
};

/*
 * Every directive NAME directly in CONTEXT and in the blocks nested inside it (for "http": http, http/server,
 * http/server/location, ...; not those in upstream blocks, as nginx_conf_nested), in the order nginx reads them;
 * the directive of a file included twice once. Malloc'd into *OUT (*N of them, NULL when none). 0, -EINVAL with
 * ERR (also when there are more than NGINX_CONF_EACH_MAX), -ENOMEM.
 */
int nginx_conf_find_each(const struct nginx_conf *c, const char *context, const char *name,
			 struct nginx_conf_found **out, size_t *n, char *err, size_t errlen);

/* Every listen directive of http, stream and mail servers, in the order nginx reads them (malloc'd into *OUT). */
int nginx_conf_listens(const struct nginx_conf *c, struct nginx_listen **out, size_t *n, char *err, size_t errlen);

/*
 * TEXT (one whole file) with backlog=VALUE on each listen directive whose name starts at one of the N offsets
 * STARTS: an existing backlog= parameter is replaced, else " backlog=VALUE" follows the last parameter; no other
 * byte changes. The new text (NUL-terminated, malloc'd) into *OUT and *OUTLEN. 0, -EINVAL with ERR, -ENOMEM.
 */
int nginx_conf_set_backlog(const char *text, size_t len, const size_t *starts, size_t n, int64_t value, char **out,
			   size_t *outlen, char *err, size_t errlen);

/* Whether texts A and B differ only in backlog= parameters of listen directives (both must tokenize). */
bool nginx_conf_same_but_backlog(const char *a, size_t alen, const char *b, size_t blen);

/*
 * TEXT (one whole file) with the listen parameter NAME set on each listen directive whose name starts at one of
 * the N offsets STARTS, as nginx_conf_set_backlog does: NAME is backlog, rcvbuf or sndbuf (VALUE its value, which
 * replaces an existing one, else " NAME=VALUE" follows the last parameter) or the flag reuseport or deferred
 * (VALUE ""; added at the end when absent, left as written when present). VALUE NULL removes the parameter with
 * the blank before it. No other byte changes. 0, -EINVAL with ERR (an unknown NAME, a bad VALUE, an offset
 * without a listen), -ENOMEM.
 */
int nginx_conf_set_listen_param(const char *text, size_t len, const size_t *starts, size_t n, const char *name,
				const char *value, char **out, size_t *outlen, char *err, size_t errlen);

/* Whether texts A and B differ only in the listen parameter NAME (as above) of listen directives. */
bool nginx_conf_same_but_listen_param(const char *a, size_t alen, const char *b, size_t blen, const char *name);
/* How many times the listen parameter NAME stands on listen directives of TEXT; -EINVAL (NAME, or TEXT does not
 * tokenize), -ENOMEM. */
int nginx_conf_listen_param_count(const char *text, size_t len, const char *name);

/*
 * TEXT (a file holding directives of one context, such as the agent's include files) with the top-level
 * directive NAME set to ARGS (a space-separated line of words; NULL removes it): its first occurrence is
 * replaced in place (others removed), else "NAME ARGS;\n" is appended. New text into *OUT and *OUTLEN as above.
 */
int nginx_conf_set_directive(const char *text, size_t len, const char *name, const char *args, char **out,
			     size_t *outlen, char *err, size_t errlen);

/*
 * TEXT (one whole file) with the arguments of the directive NAME whose name starts at offset START replaced by
 * ARGS (a space-separated line of words, not empty): the bytes from its first argument to its last become ARGS
 * (with none, " ARGS" follows the name); the name, the ';' and every other byte stay. New text into *OUT and
 * *OUTLEN as above; -ENOENT when no directive NAME starts at START, -EINVAL with ERR.
 */
int nginx_conf_set_args_at(const char *text, size_t len, size_t start, const char *name, const char *args,
			   char **out, size_t *outlen, char *err, size_t errlen);
/* The directive NAME whose name starts at offset START of TEXT (one file) into OUT (its line and start; FILE 0).
 * 0, -ENOENT when none does, -EINVAL with ERR. */
int nginx_conf_file_at(const char *text, size_t len, size_t start, const char *name, struct nginx_conf_directive *out,
		       char *err, size_t errlen);
/* The top-level directive NAME of TEXT (one file) into OUT. 0, -ENOENT, -EINVAL with ERR. */
int nginx_conf_file_find(const char *text, size_t len, const char *name, struct nginx_conf_directive *out,
			 char *err, size_t errlen);

/* The directives NAME of TEXT (one file alone, includes not followed), at any depth, in order, into *OUT as
 * nginx_conf_find_each (their context relative to the file: "main", "server", ...). */
int nginx_conf_file_each(const char *text, size_t len, const char *name, struct nginx_conf_found **out, size_t *n,
			 char *err, size_t errlen);

/* One edit of nginx_conf_edit. */
enum nginx_conf_edit_op {
	/* The arguments of the directive NAME at START become TEXT (a line of words, not empty), as
	 * nginx_conf_set_args_at does. With NOTE, the arguments as written before go into a comment at the end of its
	 * line, "# NOTE: NAME was ARGS", unless the line has one already (it keeps the first); only blanks or a
	 * comment may follow the directive on its line, and its arguments may not span lines. */
	NGINX_CONF_EDIT_ARGS,
	/* TEXT, whole directives one per line (no block, no comment), goes at the end of the block NAME whose name is
	 * at START: each on a line of its own before the '}', indented as the block's first line, ending in
	 * "# NOTE" with a NOTE. A '}' that shares its line with a directive then goes to a line of its own, and the
	 * first added line's note reads "# NOTE (new line)". */
	NGINX_CONF_EDIT_ADD,
	/* TEXT (whole directives and blocks) goes at the end of the file, on lines of its own, each ending in "# NOTE"
	 * with a NOTE (TEXT then holds no comment; after a last line without its line break, the first one's reads
	 * "# NOTE (new line)"); START and NAME are unused. */
	NGINX_CONF_EDIT_APPEND
};

struct nginx_conf_edit {
	enum nginx_conf_edit_op op;
	size_t start;     /* offset of NAME in the file's text (as nginx_conf_node's start, nginx_conf_directive's) */
	const char *name;
	const char *text;
	const char *note; /* NULL, or a printable line without '#' (such as "ngx-autotune upstream_keepalive") */
};

/*
 * TEXT (one whole file) with the N EDITS made, every other byte as it was; the new text (NUL-terminated,
 * malloc'd) into *OUT and *OUTLEN. 0, -ENOENT with ERR (no NAME at an edit's START), -EINVAL with ERR (TEXT does
 * not tokenize, an edit's TEXT or NOTE is not as above, an edit names a block for a directive or the reverse, one
 * directive edited twice), -ENOMEM.
 */
int nginx_conf_edit(const char *text, size_t len, const struct nginx_conf_edit *edits, size_t n, char **out,
		    size_t *outlen, char *err, size_t errlen);

/*
 * TEXT without what nginx_conf_edit wrote with NOTE: the lines it added go (a "(new line)" one with the line break
 * before it), the arguments it replaced come back from their "was" comments, which go. Every other byte stays, so
 * a file edited only with NOTE comes back byte for byte, and edits made since by anyone else stay. *COUNT: the notes
 * taken back. 0, -EINVAL with ERR (TEXT does not tokenize, a "was" note names no directive of its line), -ENOMEM.
 */
int nginx_conf_unedit(const char *text, size_t len, const char *note, char **out, size_t *outlen, size_t *count,
		      char *err, size_t errlen);

/* Whether texts A and B read the same to nginx and differ in bytes only in how the arguments of the directives
 * named in NAMES (N of them) are written ("9" and 9, blanks inside the arguments): then either can stand for the
 * other. False when either does not tokenize. */
bool nginx_conf_same_but_args(const char *a, size_t alen, const char *b, size_t blen, const char *const *names,
			      size_t n);

/* What nginx_conf_walk shows: a directive, the start or end of a block, or a file an include brings in. */
enum nginx_conf_event {
	NGINX_CONF_DIRECTIVE,  /* "name args;" */
	NGINX_CONF_BLOCK,      /* "name args {" */
	NGINX_CONF_BLOCK_END,  /* the "}" of the innermost open block */
	NGINX_CONF_INCLUDE     /* a file the include directive shown just before brings in, walked next */
};

/* One step of nginx_conf_walk. Valid during the callback only. */
struct nginx_conf_node {
	enum nginx_conf_event event;
	size_t file;         /* index into files[] of the text it stands in */
	unsigned line;       /* of the name; BLOCK_END: of the '}'; INCLUDE: of the include directive */
	size_t start, end;   /* offsets in that file's text: of the name and of the ';' or '{' that ends it (INCLUDE:
				the include directive's); BLOCK_END: both of the '}' */
	size_t included;     /* INCLUDE: index into files[] of the file brought in */
	const char *context; /* "main", "events", "http/server", ...: where it stands (a block: outside itself) */
	size_t depth;        /* blocks open around it */
	size_t nwords;       /* words including the name; 0 for BLOCK_END and INCLUDE */
	const void *priv;    /* the walk's, for nginx_conf_node_word */
};

/* Called for each step; 0 goes on, a positive value stops the walk (and is returned), -errno fails it. */
typedef int (*nginx_conf_visit_fn)(void *ctx, const struct nginx_conf_node *node);

/*
 * Walk C from its main file the way nginx reads it, includes expanded in place (glob matches in name order),
 * calling FN for every directive, block start and end, and included file. 0 when the walk completed, FN's
 * positive return when it stopped it, -EINVAL with ERR (the dump does not tokenize, braces do not balance,
 * includes nest too deep or name files the dump lacks), -ENOMEM, or FN's -errno.
 */
int nginx_conf_walk(const struct nginx_conf *c, nginx_conf_visit_fn fn, void *ctx, char *err, size_t errlen);

/* Word I of NODE (0 is the name) as nginx sees it (quotes removed, escapes resolved) into BUF: its length,
 * -E2BIG when it does not fit (a word is never longer than NGINX_CONF_TOKEN_MAX in a dump nginx printed), or
 * -EINVAL when I is out of range. */
int nginx_conf_node_word(const struct nginx_conf_node *node, size_t i, char *buf, size_t buflen);
/* Where word I of NODE is written in its file's text: [*OFF, *END), quotes included. 0 or -EINVAL. */
int nginx_conf_node_span(const struct nginx_conf_node *node, size_t i, size_t *off, size_t *end);

#endif
