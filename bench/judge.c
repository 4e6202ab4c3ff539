/*
 * bench/judge: the judge's quality table over many simulated trials (tests/sim), beside a naive before/after
 * judge on the same plants. Figures, not pass/fail.
 *
 *   bench/judge [-S MASTER] [-n TRIALS] [-L BLOCK_S] [-s SETTLE_S] [-K PAIRS] [-x NOISE] [-c CALIB_PAIRS] [-q] [-t TAU]
 *
 * -c: A/A calibration pairs before each trial (4, as the controller ships; 0 none); -q: the sequential rule off;
 * -t: the sequential rule's prior sd of the effect in noise units (2).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#include "stats.h"

int main(int argc, char **argv)
{
	struct sim_options o;
	struct sim_tally t;
	struct sim_result r;
	uint64_t master = 1;
	unsigned n = 3000, errors = 0;
	int opt;

	sim_options_default(&o);
	while ((opt = getopt(argc, argv, "S:n:L:s:K:x:c:qt:")) != -1) {
		switch (opt) {
		case 'S':
			master = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			n = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'L':
			o.block_ms = 1000 * strtoll(optarg, NULL, 0);
			break;
		case 's':
			o.settle_ms = 1000 * strtoll(optarg, NULL, 0);
			break;
		case 'K':
			o.judge.pairs = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'x':
			o.noise = strtod(optarg, NULL);
			break;
		case 'c':
			o.calibrate_pairs = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			o.judge.alpha_seq = 0;
			break;
		case 't':
			o.judge.seq_tau = strtod(optarg, NULL);
			break;
		default:
			fprintf(stderr, "usage: %s [-S MASTER] [-n TRIALS] [-L BLOCK_S] [-s SETTLE_S] [-K PAIRS] [-x NOISE] [-c CALIB] [-q] [-t TAU]\n",
				argv[0]);
			return 2;
		}
	}
	if (judge_config_check(&o.judge) < 0) {
		fprintf(stderr, "bad judge configuration\n");
		return 2;
	}
	printf("master seed %" PRIu64 ", %u trials, blocks %" PRId64 " s (settle %" PRId64 " s), K = %u, delta %.0f%%, "
	       "alpha %.2f, noise x%.1f, calibration %u pairs, sequential rule %s\n", master, n, o.block_ms / 1000,
	       o.settle_ms / 1000, o.judge.pairs, 100 * o.judge.delta, o.judge.alpha, o.noise, o.calibrate_pairs,
	       o.judge.alpha_seq > 0 ? "on" : "off");
	memset(&t, 0, sizeof(t));
	for (unsigned i = 0; i < n; i++) {
		struct stats_rng rng;

		stats_rng_seed(&rng, master + i);
		if (sim_run(stats_rng_next(&rng), &o, &r) < 0) {
			errors++;
			continue;
		}
		sim_tally_add(&t, &r, o.judge.delta);
	}
	sim_tally_print(stdout, &t);
	if (errors)
		printf("%u simulation errors\n", errors);
	return errors ? 1 : 0;
}
