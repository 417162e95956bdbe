// SPDX-License-Identifier: GPL-2.0
/*
 * fdev_shift(3): where the partitions end up (host communicator, and the
 * device with data), and the exact emulated time of the compute-shift
 * loop on an uncontended crossbar (selftests/icfab/shift_test.sh loads
 * the topology):
 *
 *   T       = 2 (L + S/B) + (k - 1) S/B	one partition of k segments of
 *						S bytes, tile -> exchange -> tile
 *   BSP     = steps x (C + T)			compute C, then shift
 *   overlap = steps x max(C, T)		the shift while computing
 *
 * plus 1 ps per step after the first where the shift ends the step (see
 * time_case()).
 *
 *	shift_test host			no module needed
 *	shift_test device BW LAT_PS	after the topology is applied
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabricdev.h"
#include "fabricdev_test.h"
#include "tap.h"

#define RANKS	8
#define PART	(64 * 1024)	/* bytes per partition: 16 segments */
#define SEG	4096ULL

static void fill(uint8_t *buf, unsigned int n, size_t bytes)
{
	for (unsigned int r = 0; r < n; r++)
		for (size_t i = 0; i < bytes; i++)
			buf[r * bytes + i] = (uint8_t)(r * 37 + i * 11);
}

/* Rank r holds what rank (r - k) mod n started with. */
static int placed(const uint8_t *buf, unsigned int n, size_t bytes, long k)
{
	uint8_t *want = malloc(n * bytes);
	int same = 1;

	fill(want, n, bytes);
	for (unsigned int r = 0; r < n && same; r++) {
		unsigned int from = (unsigned int)((((long)r - k) % n + n) % n);

		same = !memcmp(buf + r * bytes, want + from * bytes, bytes);
	}
	free(want);
	return same;
}

static void check_rotations(struct fdev_comm *c, const char *what)
{
	static const struct { int shift; unsigned int steps; } cases[] = {
		{ 1, 1 }, { 1, 3 }, { -1, 3 }, { 3, 5 }, { 1, RANKS },
		{ -9, 2 },
	};
	uint8_t *buf = malloc(RANKS * PART);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err;

		fill(buf, RANKS, PART);
		err = fdev_shift(c, buf, PART, cases[i].shift, cases[i].steps,
				 1000, i % 2 ? FDEV_SHIFT_OVERLAP : 0);
		ok(!err && placed(buf, RANKS, PART,
				  (long)cases[i].shift * cases[i].steps),
		   "%s: shift %d x %u steps: rank r holds rank (r - %ld) mod 8's (%d)",
		   what, cases[i].shift, cases[i].steps,
		   (long)cases[i].shift * cases[i].steps, err);
	}
	free(buf);
}

static int run_host(void)
{
	struct fdev_comm *c = NULL;
	uint8_t buf[RANKS * 16];

	ok(!__fdev_comm_init_host(RANKS, 2 * PART, &c), "host communicator");
	if (!c)
		return done();
	check_rotations(c, "host");
	ok(fdev_shift(c, buf, 16, 1, 1, 0, 1U << 7) == -EINVAL,
	   "an unknown flag is -EINVAL");
	ok(fdev_shift(c, NULL, 16, 1, 1, 0, 0) == -EFAULT,
	   "no buffer with data is -EFAULT");
	ok(fdev_shift(c, buf, PART + 1, 1, 1, 0, 0) == -EMSGSIZE,
	   "two partitions beyond the workspace are -EMSGSIZE");
	fdev_comm_destroy(c);
	return done();
}

/* ps to serialise @bytes at @bw bytes/s, rounded up as the engine does. */
static uint64_t ser(uint64_t bytes, uint64_t bw)
{
	return (bytes * 1000000000000ULL + bw - 1) / bw;
}

/*
 * One case on a fresh communicator: the fabric starts at time 0 with
 * nothing processed, so the first step is exact. A step that begins at
 * the instant the previous one's last WRITE landed starts its lower
 * queues 1 ps later (docs/ARCHITECTURE.md, "Virtual time": a submission
 * at the instant of the last processed event whose key sorts before it),
 * so it costs 1 ps more: every step after the first where the shift ends
 * the step (C = 0, or overlapped with C <= T: at a tie the WRITEs land
 * after the DELAY). A step ending with the compute's DELAY, on the first
 * queue, does not.
 */
static void time_case(uint64_t tx, uint64_t compute, unsigned int flags,
		      unsigned int steps)
{
	int ov = flags & FDEV_SHIFT_OVERLAP;
	uint64_t step = ov ? (compute > tx ? compute : tx) : compute + tx;
	int shift_ends = ov ? compute <= tx : !compute;
	uint64_t want = steps * step + (shift_ends ? steps - 1 : 0), got = 0;
	struct fdev_comm *c = NULL;
	int err;

	err = fdev_comm_init_local(NULL, RANKS, NULL, 0, FDEV_COMM_TIMING_ONLY,
				   &c);
	if (!err) {
		err = fdev_shift(c, NULL, PART, 1, steps, compute, flags);
		got = fdev_comm_last_ps(c);
		fdev_comm_destroy(c);
	}
	ok(!err && got == want,
	   "%s, compute %llu ps, %u steps: %llu ps = %u x %llu%s (%d)",
	   ov ? "overlapped" : "BSP", (unsigned long long)compute, steps,
	   (unsigned long long)got, steps, (unsigned long long)step,
	   shift_ends ? " + 1 ps per later step" : "", err);
}

static int run_device(uint64_t bw, uint64_t lat)
{
	uint64_t s = ser(SEG, bw), tx = 2 * (lat + s) + (PART / SEG - 1) * s;
	struct fdev_comm *c = NULL;
	int err;

	diag("T = 2 (%llu + %llu) + %llu x %llu = %llu ps",
	     (unsigned long long)lat, (unsigned long long)s,
	     (unsigned long long)(PART / SEG - 1), (unsigned long long)s,
	     (unsigned long long)tx);
	time_case(tx, 0, 0, 4);
	time_case(tx, 5000000, 0, 4);
	time_case(tx, 30000000, 0, 3);
	time_case(tx, 5000000, FDEV_SHIFT_OVERLAP, 4);
	time_case(tx, 30000000, FDEV_SHIFT_OVERLAP, 4);
	time_case(tx, tx, FDEV_SHIFT_OVERLAP, 2);

	err = fdev_comm_init_local(NULL, RANKS, NULL, 2 * PART, 0, &c);
	ok(!err, "communicator with device memory (%d)", err);
	if (!err) {
		check_rotations(c, "device");
		fdev_comm_destroy(c);
	}
	return done();
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "host"))
		return run_host();
	if (argc == 4 && !strcmp(argv[1], "device"))
		return run_device(strtoull(argv[2], NULL, 0),
				  strtoull(argv[3], NULL, 0));
	fprintf(stderr, "usage: shift_test host | device BW LAT_PS\n");
	return 2;
}
