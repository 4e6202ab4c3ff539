/*
 * bench/doctor: what one check of the doctor costs on the pool thread, for the configurations of
 * tests/fixtures/doctor: parsing the nginx -T dump into the checks' model, and the checks themselves. Prints
 * microseconds per check and two ratios: to the agent's tick budget (1 ms of CPU), and the CPU share of one check
 * every [doctor] interval (5 minutes). Figures, not pass/fail. Usage: bench/doctor [SRCDIR] [RUNS].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/doctor.h"
#include "diagnose/doctor_conf.h"

static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	static const char *const fixtures[] = { "untuned.txt", "tuned.txt", "proxy.txt", "stress.txt" };
	const char *srcdir = argc > 1 ? argv[1] : getenv("srcdir") ? getenv("srcdir") : ".";
	int runs = argc > 2 ? atoi(argv[2]) : 500;
	struct doctor_facts *f = calloc(1, sizeof(*f));

	if (!f || runs < 1)
		return 1;
	doctor_facts_init(f);
	f->cpus = 4;
	f->somaxconn = 4096;
	f->mem_total_kb = 8 << 20;
	printf("%-12s %8s %10s %10s %10s %12s %14s\n", "fixture", "bytes", "parse_us", "check_us", "total_us",
	       "x_tick_1ms", "cpu_share_5m");
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		char path[4096], err[512];
		double t0, t1, t2, parse = 0, check = 0;
		size_t len;
		char *dump;
		FILE *fp;

		snprintf(path, sizeof(path), "%s/tests/fixtures/doctor/%s", srcdir, fixtures[i]);
		fp = fopen(path, "rb");
		if (!fp) {
			fprintf(stderr, "bench/doctor: cannot open %s\n", path);
			return 1;
		}
		fseek(fp, 0, SEEK_END);
		len = (size_t)ftell(fp);
		rewind(fp);
		dump = malloc(len);
		if (!dump || fread(dump, 1, len, fp) != len)
			return 1;
		fclose(fp);
		for (int r = 0; r < runs; r++) {
			struct doctor_conf conf;
			struct doctor_report rep = { 0 };

			t0 = cpu_us();
			if (doctor_conf_from_dump(dump, len, &conf, err, sizeof(err)) < 0) {
				fprintf(stderr, "bench/doctor: %s: %s\n", fixtures[i], err);
				return 1;
			}
			t1 = cpu_us();
			doctor_check(&conf, NULL, f, &rep);
			t2 = cpu_us();
			parse += t1 - t0;
			check += t2 - t1;
			doctor_report_free(&rep);
			doctor_conf_free(&conf);
		}
		parse /= runs;
		check /= runs;
		printf("%-12s %8zu %10.1f %10.1f %10.1f %12.3f %14.2e\n", fixtures[i], len, parse, check, parse + check,
		       (parse + check) / 1000.0, (parse + check) / 300e6);
		free(dump);
	}
	free(f);
	return 0;
}
