/* /proc/interrupts (parse_interrupts, which allocates) and /sys/kernel/irq/N/per_cpu_count (parse_irq_counts). */
#include "fuzz.h"
#include "parse.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t counts[PARSE_MAX_CPUS];
	struct irq_table t;
	size_t n = SIZE_MAX;
	int r = parse_interrupts((const char *)data, size, &t);

	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -E2BIG || r == -ENOMEM);
	if (r == 0) {
		FUZZ_CHECK(t.ncpu <= PARSE_MAX_CPUS && t.nirq <= 8192);
		for (size_t i = 0; i < t.nirq; i++) {
			uint64_t sum = 0;

			FUZZ_CHECK(memchr(t.rows[i].id, '\0', sizeof(t.rows[i].id)) != NULL);
			FUZZ_CHECK(memchr(t.rows[i].desc, '\0', sizeof(t.rows[i].desc)) != NULL);
			/* Every count is read, so ASan sees an array shorter than nirq * ncpu; the row's total is
			 * their sum (a sum past UINT64_MAX is refused while parsing). */
			for (size_t j = 0; j < t.ncpu; j++)
				sum += t.counts[i * t.ncpu + j];
			FUZZ_CHECK(sum == t.rows[i].total);
		}
	} else {
		FUZZ_CHECK(t.nirq == 0 && t.rows == NULL && t.counts == NULL); /* zeroed on failure */
	}
	irq_table_free(&t);

	r = parse_irq_counts((const char *)data, size, counts, PARSE_MAX_CPUS, &n);
	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -E2BIG);
	if (r == 0)
		FUZZ_CHECK(n <= PARSE_MAX_CPUS);
	return 0;
}
