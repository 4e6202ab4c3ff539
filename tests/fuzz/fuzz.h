/*
 * fuzz: what the libFuzzer targets of tests/fuzz share (tests/fuzz/README.md says how to build and run them).
 *
 * A target feeds its input to one parser exactly as the agent would: bytes with their length when the parser takes
 * a buffer (libFuzzer's copy is exactly SIZE bytes, so ASan sees a read past the end), a NUL-terminated copy when
 * it takes a string. Crashes, leaks and undefined behaviour are found by the sanitizers; FUZZ_CHECK adds the
 * parser's own documented promises (a count within its bound, a canonical text that parses back), so a broken
 * promise is a finding too. Nothing here may hide a failure: a broken check aborts, it never returns.
 */
#ifndef NGXAT_FUZZ_H
#define NGXAT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Abort with the place and the broken promise when COND is false: libFuzzer saves the input as a crash. */
#define FUZZ_CHECK(cond)                                                                                         \
	do {                                                                                                     \
		if (!(cond)) {                                                                                   \
			fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond);              \
			abort();                                                                                 \
		}                                                                                                \
	} while (0)

/* DATA[0..SIZE) as a NUL-terminated string of exactly SIZE + 1 bytes (malloc'd; NULL when out of memory). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		if (size)
			memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

/* Call FN on each line of DATA (without its '\n'), each in a buffer of exactly its length, so that a read past a
 * line's end is caught even where the input goes on. */
static inline void fuzz_each_line(const uint8_t *data, size_t size, void (*fn)(const char *line, size_t len))
{
	const uint8_t *p = data, *end = data + size;

	while (p < end) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		char *line = malloc(len ? len : 1);

		if (!line)
			return;
		memcpy(line, p, len);
		fn(line, len);
		free(line);
		p += len + (nl != NULL);
	}
}

#endif
