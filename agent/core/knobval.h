/*
 * knobval: a knob's value, typed inside and canonical text outside.
 *
 * Values cross the wire, the journal and the driver interface as text; this module owns the one canonical
 * spelling of each type and the strict parse that gets there, so two spellings of one value compare equal and a
 * garbled value is refused instead of guessed at. The canonical forms:
 *   INT      "4096"                      a decimal int64
 *   INTVEC   "4096 131072 6291456"       1 to KNOBVAL_VEC_MAX decimal int64, single spaces
 *   CPULIST  "0-3,8"                     CPUs below KNOBVAL_CPUS_MAX, ascending, runs merged; the empty set is ""
 *   ENUM     "auto"                      one word of [a-z0-9_.-] (the policy says which words are allowed)
 *   ONOFF    "on" or "off"
 *   CPUMAP   "45:0-3;46:4-7"             up to KNOBVAL_MAP_MAX keys (an IRQ or rx-queue number), ascending, each
 *                                        with a CPULIST (possibly empty: "3:")
 * Parsing trims blanks (space, tab, newline) at both ends, so text read from /proc or sysfs parses as it is; INTVEC
 * takes runs of blanks between numbers (tcp_rmem reads back tab-separated). A value whose canonical text would not
 * fit in KNOBVAL_TEXT_MAX bytes is refused, so every accepted value formats into a buffer of that size. Pure: no
 * I/O, no allocation, no state; a struct knobval is a plain value that may be copied.
 */
#ifndef NGXAT_KNOBVAL_H
#define NGXAT_KNOBVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KNOBVAL_VEC_MAX 8     /* elements of an INTVEC (tcp_rmem has 3) */
#define KNOBVAL_CPUS_MAX 1024 /* CPUs 0..1023 */
#define KNOBVAL_MAP_MAX 64    /* keys of a CPUMAP */
#define KNOBVAL_WORD_MAX 32   /* an ENUM word and its NUL */
#define KNOBVAL_TEXT_MAX 1024 /* canonical text and its NUL; equal to KNOB_VALUE_MAX in knob.h */

enum knob_type { KNOB_T_INT, KNOB_T_INTVEC, KNOB_T_CPULIST, KNOB_T_ENUM, KNOB_T_ONOFF, KNOB_T_CPUMAP };

struct knobval_cpuset {
	uint64_t bits[KNOBVAL_CPUS_MAX / 64];
};

struct knobval_entry {
	uint32_t key;
	struct knobval_cpuset cpus;
};

struct knobval {
	enum knob_type type;
	size_t n;                                  /* INTVEC: elements; CPUMAP: keys; else 1 */
	int64_t v[KNOBVAL_VEC_MAX];                /* INT: v[0]; INTVEC; ONOFF: v[0] is 1 (on) or 0 (off) */
	char word[KNOBVAL_WORD_MAX];               /* ENUM */
	struct knobval_cpuset cpus;                /* CPULIST */
	struct knobval_entry map[KNOBVAL_MAP_MAX]; /* CPUMAP, keys ascending and unique */
};

/* Parse TEXT as TYPE into OUT (fully overwritten). 0, or -EINVAL with the reason in ERR (ERR may be NULL). */
int knobval_parse(enum knob_type type, const char *text, struct knobval *out, char *err, size_t errlen);
/* Canonical text of V into BUF of LEN bytes. 0, or -ENOSPC (BUF holds "" when LEN > 0). */
int knobval_format(const struct knobval *v, char *buf, size_t len);
/* True when A and B are of one type and one value. */
bool knobval_equal(const struct knobval *a, const struct knobval *b);
/* Parse both texts as TYPE and compare: true only when both parse and are equal. */
bool knobval_text_equal(enum knob_type type, const char *a, const char *b);

/* The word of TYPE as policy files spell it ("int", "intvec", "cpulist", "enum", "onoff", "cpumap"). */
const char *knobval_type_name(enum knob_type type);
/* TYPE for NAME. 0 or -EINVAL. */
int knobval_type_parse(const char *name, enum knob_type *out);

/* True when CPU is in S (false for CPU outside 0..KNOBVAL_CPUS_MAX-1). */
bool knobval_cpuset_has(const struct knobval_cpuset *s, unsigned cpu);
/* Add CPU to S; -ERANGE when CPU is KNOBVAL_CPUS_MAX or more. */
int knobval_cpuset_add(struct knobval_cpuset *s, unsigned cpu);
/* How many CPUs S holds. */
unsigned knobval_cpuset_count(const struct knobval_cpuset *s);
/* Lowest and highest CPU of S into LO and HI; -ENOENT when S is empty. */
int knobval_cpuset_span(const struct knobval_cpuset *s, unsigned *lo, unsigned *hi);
/* Canonical CPULIST text of S into BUF. 0 or -ENOSPC as knobval_format. */
int knobval_cpuset_format(const struct knobval_cpuset *s, char *buf, size_t len);

#endif
