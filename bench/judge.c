/*
 * bench/judge: the judge's quality table over many simulated trials (tests/sim), beside a naive before/after
 * judge on the same plants. Figures, not pass/fail.
 *
 *   bench/judge [-S MASTER] [-n TRIALS] [-L BLOCK_S] [-s SETTLE_S] [-K PAIRS] [-x NOISE] [-c CALIB_PAIRS] [-q] [-t TAU]
 *               [-P PEERS [-W SWING] [-T SWING_TAU_S]]
 *
 * -c: A/A calibration pairs before each trial (4, as the controller ships; 0 none); -q: the sequential rule off;
 * -t: the sequential rule's prior sd of the effect in noise units (2).
 * -P: the pool scenario (issue 24): PEERS more hosts share a swing of the pool's traffic (a slow AR(1) of ln load,
 * sd SWING 0.2, time constant SWING_TAU_S 600 s) with the trial host; every trial runs twice on the same plants,
 * judged alone and against its peers (judge_set_control), and both tallies are printed, then the two side by side.
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
	struct sim_tally t, tc;
	struct sim_result r;
	uint64_t master = 1;
	unsigned n = 3000, errors = 0;
	int opt;

	sim_options_default(&o);
	o.swing = 0.2;
	o.swing_tau_s = 600;
	while ((opt = getopt(argc, argv, "S:n:L:s:K:x:c:qt:P:W:T:")) != -1) {
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
		case 'P':
			o.peers = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'W':
			o.swing = strtod(optarg, NULL);
			break;
		case 'T':
			o.swing_tau_s = strtod(optarg, NULL);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-S MASTER] [-n TRIALS] [-L BLOCK_S] [-s SETTLE_S] [-K PAIRS] [-x NOISE] "
				"[-c CALIB] [-q] [-t TAU] [-P PEERS [-W SWING] [-T SWING_TAU_S]]\n",
				argv[0]);
			return 2;
		}
	}
	if (!o.peers)
		o.swing = 0;
	if (judge_config_check(&o.judge) < 0 || o.peers > 16 || !(o.swing >= 0 && o.swing <= 2) ||
	    !(o.swing_tau_s >= 1 && o.swing_tau_s <= 1e6)) {
		fprintf(stderr, "bad judge configuration\n");
		return 2;
	}
	printf("master seed %" PRIu64 ", %u trials, blocks %" PRId64 " s (settle %" PRId64 " s), K = %u, delta %.0f%%, "
	       "alpha %.2f, noise x%.1f, calibration %u pairs, sequential rule %s\n", master, n, o.block_ms / 1000,
	       o.settle_ms / 1000, o.judge.pairs, 100 * o.judge.delta, o.judge.alpha, o.noise, o.calibrate_pairs,
	       o.judge.alpha_seq > 0 ? "on" : "off");
	if (o.peers)
		printf("pool: %u peers, a shared traffic swing of sd %.2f (ln load) and time constant %.0f s\n", o.peers,
		       o.swing, o.swing_tau_s);
	memset(&t, 0, sizeof(t));
	memset(&tc, 0, sizeof(tc));
	for (unsigned i = 0; i < n; i++) {
		struct stats_rng rng;
		struct sim_result rc;
		uint64_t seed;

		stats_rng_seed(&rng, master + i);
		seed = stats_rng_next(&rng);
		o.peer_control = false;
		if (sim_run(seed, &o, &r) < 0) {
			errors++;
			continue;
		}
		if (o.peers) {
			/* Both or neither: the two tallies are over the same trials. */
			o.peer_control = true;
			if (sim_run(seed, &o, &rc) < 0) {
				errors++;
				continue;
			}
			sim_tally_add(&tc, &rc, o.judge.delta);
		}
		sim_tally_add(&t, &r, o.judge.delta);
	}
	if (o.peers)
		printf("\n== judged alone\n");
	sim_tally_print(stdout, &t);
	if (o.peers) {
		printf("\n== judged against its %u peers\n", o.peers);
		sim_tally_print(stdout, &tc);
		printf("\n== side by side     | false keeps (kept, gain < delta) | false reverts (not kept, gain >= 2 delta) | "
		       "harm kept | mean pairs\n");
		for (int k = 0; k < 2; k++) {
			const struct sim_tally *x = k ? &tc : &t;

			printf("%-19s | %4u of %-5u (%5.2f%%)         | %4u of %-5u (%5.1f%%)"
			       "                  | %3u of %-4u | %.2f\n",
			       k ? "against its peers" : "alone", x->false_keep[0], x->below_delta,
			       x->below_delta ? 100.0 * x->false_keep[0] / x->below_delta : 0.0, x->false_revert[0],
			       x->big_gain, x->big_gain ? 100.0 * x->false_revert[0] / x->big_gain : 0.0, x->kept_harm[0],
			       x->harm_n, x->n ? x->pairs_sum / x->n : 0.0);
		}
	}
	if (errors)
		printf("%u simulation errors\n", errors);
	return errors ? 1 : 0;
}
