// SPDX-License-Identifier: GPL-2.0
/*
 * shift_bench: T10's compute-shift loop (fdev_shift(3)) on the fabric
 * icfabd loaded, timing only, one process driving every rank, against
 * the exchange bound: each step a tile sends its partition out of its
 * own exchange port, so steps x S / B is what no schedule can beat, and
 * steps x C the compute bound. For each partition size S and compute
 * time C (0, the shift's own time, twice it) it runs the loop BSP
 * (compute, then shift: T10) and overlapped (FDEV_SHIFT_OVERLAP), and
 * prints one JSON line per run, then a table of them.
 *
 *	shift_bench [-n RANKS] [-s STEPS] [-b BYTES_PER_S] [-S SIZES]
 *		    [-T sram|hbm|ddr -H BYTES_PER_S [-k RANKS_PER_PORT]]
 *
 * -b is the tile's exchange bandwidth (default 5.5 GB/s, ipu-mk2); -S a
 * comma-separated list of partition sizes in KiB (default 16,64,256);
 * RANKS default 1024 (the library's limit: ipu-mk2 has 1472 tiles, the
 * first 1024 take part), STEPS default 8.
 *
 * -T puts the partitions in that memory tier of each rank
 * (FDEV_SHIFT_TIER: every shift reads through its rank's tier port and
 * writes through its neighbour's), and adds the tier bound: a port
 * carries each of the k ranks' partitions it serves out and the
 * neighbour's in every step, steps x 2 k S / B_t, with -H the port's
 * bandwidth B_t and -k the ranks one port serves (default 1: a tier of
 * each rank's own). The partitions move their bytes then (a tier holds
 * regions only), so the run takes longer in wall time.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabricdev.h"

static int run(struct fdev_comm *c, uint64_t bytes, unsigned int steps,
	       uint64_t compute_ps, unsigned int flags, uint64_t *ps)
{
	int err = fdev_shift(c, NULL, bytes, 1, steps, compute_ps, flags);

	*ps = fdev_comm_last_ps(c);
	return err;
}

struct row {
	uint64_t bytes, compute_ps, ps;
	const char *mode;
	double xbound, cbound, tbound;	/* ps; tbound 0: no tier */
};

/* -T, -H, -k */
static const char *tier_name;
static uint64_t tier_bw;
static unsigned int tier_share = 1;

static struct row rows[64];
static unsigned int nrows;

static void report(unsigned int n, uint64_t bytes, unsigned int steps,
		   uint64_t compute_ps, const char *mode, uint64_t ps,
		   uint64_t bw)
{
	double xbound = (double)steps * bytes / bw * 1e12;
	double cbound = (double)steps * compute_ps;
	double tbound = tier_name ? (double)steps * 2 * tier_share * bytes /
				    tier_bw * 1e12 : 0;
	double bound = xbound > cbound ? xbound : cbound;

	if (tbound > bound)
		bound = tbound;
	if (nrows < sizeof(rows) / sizeof(rows[0]))
		rows[nrows++] = (struct row){ bytes, compute_ps, ps, mode,
					      xbound, cbound, tbound };

	printf("{\"ranks\": %u, \"bytes\": %llu, \"steps\": %u, "
	       "\"compute_ps\": %llu, \"mode\": \"%s\", \"time_ps\": %llu, "
	       "\"exchange_bound_ps\": %.0f, \"compute_bound_ps\": %.0f, ",
	       n, (unsigned long long)bytes, steps,
	       (unsigned long long)compute_ps, mode, (unsigned long long)ps,
	       xbound, cbound);
	if (tier_name)
		printf("\"tier\": \"%s\", \"tier_bound_ps\": %.0f, ",
		       tier_name, tbound);
	printf("\"bound_over_time\": %.4f}\n", bound / ps);
	fflush(stdout);
}

static void table(unsigned int n, unsigned int steps)
{
	printf("%u ranks, %u steps%s%s; times in us; bound = max(exchange, compute%s)\n",
	       n, steps, tier_name ? ", partitions in " : "",
	       tier_name ? tier_name : "", tier_name ? ", tier" : "");
	printf("%9s %11s %-8s %12s %12s %12s", "partition", "compute/st",
	       "mode", "emulated", "exchange", "compute");
	if (tier_name)
		printf(" %12s", tier_name);
	printf(" %11s\n", "bound/time");
	for (unsigned int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		double b = r->xbound > r->cbound ? r->xbound : r->cbound;

		if (r->tbound > b)
			b = r->tbound;
		printf("%6llu KiB %11.3f %-8s %12.3f %12.3f %12.3f",
		       (unsigned long long)r->bytes / 1024, r->compute_ps / 1e6,
		       r->mode, r->ps / 1e6, r->xbound / 1e6, r->cbound / 1e6);
		if (tier_name)
			printf(" %12.3f", r->tbound / 1e6);
		printf(" %11.4f\n", b / r->ps);
	}
}

/* -T: FDEV_SHIFT_TIER's flag, or 0 for an unknown name. */
static unsigned int tier_flag(const char *name)
{
	static const struct { const char *name; unsigned int tier; } t[] = {
		{ "sram", FDEV_TIER_SRAM }, { "hbm", FDEV_TIER_HBM },
		{ "ddr", FDEV_TIER_DDR },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(name, t[i].name))
			return FDEV_SHIFT_TIER(t[i].tier);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: shift_bench [-n RANKS] [-s STEPS] [-b BYTES_PER_S] [-S KIB,...]\n"
		"                   [-T sram|hbm|ddr -H BYTES_PER_S [-k RANKS_PER_PORT]]\n");
	return 2;
}

int main(int argc, char **argv)
{
	unsigned int n = 1024, steps = 8;
	uint64_t bw = 5500000000ULL;
	char sizes[128] = "16,64,256", *tok, *save = NULL;
	struct fdev_comm *c = NULL;
	unsigned int tier = 0;
	int opt, err;

	while ((opt = getopt(argc, argv, "n:s:b:S:T:H:k:")) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 's': steps = strtoul(optarg, NULL, 0); break;
		case 'b': bw = strtoull(optarg, NULL, 0); break;
		case 'S': snprintf(sizes, sizeof(sizes), "%s", optarg); break;
		case 'T': tier_name = optarg; tier = tier_flag(optarg); break;
		case 'H': tier_bw = strtoull(optarg, NULL, 0); break;
		case 'k': tier_share = strtoul(optarg, NULL, 0); break;
		default: return usage();
		}
	}
	if (tier_name && (!tier || !tier_bw || !tier_share))
		return usage();
	err = fdev_comm_init_local(NULL, n, NULL, 0, FDEV_COMM_TIMING_ONLY, &c);
	if (err) {
		fprintf(stderr, "shift_bench: %u ranks: %s\n", n, strerror(-err));
		return 1;
	}
	for (tok = strtok_r(sizes, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t bytes = strtoull(tok, NULL, 0) * 1024, shift_ps;

		/* The shift alone, once: its time per step sets C. */
		err = run(c, bytes, 1, 0, tier, &shift_ps);
		for (unsigned int k = 0; !err && k < 3; k++) {
			uint64_t compute = k * shift_ps, ps;

			err = run(c, bytes, steps, compute, tier, &ps);
			if (!err)
				report(n, bytes, steps, compute, "bsp", ps, bw);
			if (!err && compute)
				err = run(c, bytes, steps, compute,
					  tier | FDEV_SHIFT_OVERLAP, &ps);
			if (!err && compute)
				report(n, bytes, steps, compute, "overlap",
				       ps, bw);
		}
		if (err) {
			fprintf(stderr, "shift_bench: %s KiB: %s\n", tok,
				strerror(-err));
			break;
		}
	}
	fdev_comm_destroy(c);
	if (!err)
		table(n, steps);
	return err ? 1 : 0;
}
