/* A knob's value as text (knobval_parse): the first byte picks the type, the rest is the text. An accepted value
 * must format into KNOBVAL_TEXT_MAX bytes, and its canonical text must parse back to an equal value that formats to
 * the same text (one spelling per value). */
#include "fuzz.h"
#include "knobval.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum knob_type types[] = {KNOB_T_INT,  KNOB_T_INTVEC, KNOB_T_CPULIST,
					       KNOB_T_ENUM, KNOB_T_ONOFF,  KNOB_T_CPUMAP};
	static struct knobval v, back;
	char canon[KNOBVAL_TEXT_MAX], again[KNOBVAL_TEXT_MAX], err[128], *text;
	enum knob_type type, named;
	int r;

	if (size < 1)
		return 0;
	type = types[data[0] % (sizeof(types) / sizeof(types[0]))];
	text = fuzz_string(data + 1, size - 1);
	if (!text)
		return 0;
	r = knobval_parse(type, text, &v, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r == 0) {
		FUZZ_CHECK(v.type == type);
		FUZZ_CHECK(knobval_format(&v, canon, sizeof(canon)) == 0);
		FUZZ_CHECK(knobval_parse(type, canon, &back, err, sizeof(err)) == 0);
		FUZZ_CHECK(knobval_equal(&v, &back));
		FUZZ_CHECK(knobval_format(&back, again, sizeof(again)) == 0);
		FUZZ_CHECK(strcmp(canon, again) == 0);
		FUZZ_CHECK(knobval_text_equal(type, text, canon));
		/* A short buffer is refused with "", never overrun. */
		r = knobval_format(&v, again, 3);
		FUZZ_CHECK(r == 0 || (r == -ENOSPC && again[0] == '\0'));
	} else {
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		FUZZ_CHECK(!knobval_text_equal(type, text, text));
	}
	if (knobval_type_parse(text, &named) == 0)
		FUZZ_CHECK(strcmp(knobval_type_name(named), text) == 0);
	free(text);
	return 0;
}
