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
 * exactly, every step alike (see time_case()).
 *
 * With an HBM tier's figures (a tier shared by every tile, its port at
 * B_t and L_t), also fdev_region_alloc_tier() (tier_case()): a region in
 * the tier, read and written through its port on the closed forms of
 * docs/TIMING.md, "Memory tiers" (store and forward, B_t < B):
 *
 *   read  = (L_t + S/B_t) + 2 (L + S/B) + (k - 1) S/B_t	HBM -> plain
 *   write = 2 (L + S/B) + (L_t + S/B_t) + (k - 1) S/B_t	plain -> HBM
 *
 * and its capacity, shared by the tiles (-ENOSPC), and a tier that does
 * not serve the tile (-ENXIO). With every tile's own SRAM tier besides
 * (B_s, L_s), fdev_shift(FDEV_SHIFT_TIER) on partitions in a tier
 * (shift_tier_case()): in SRAM, each shift crosses its tile's port, the
 * two cables and its neighbour's port,
 *
 *   T_s = 2 (L_s + S/B_s) + 2 (L + S/B) + (k - 1) S/B	B_s > B
 *
 * in the loop's forms above (the ports never contend: a tile's own
 * reads are out on its port before its neighbour's first write comes
 * in, k S/B_s < T_s's first four terms); in the shared HBM, the
 * partitions end where they should, and, the port being the bottleneck
 * and never idle within a step (its n readers keep it busy until the
 * first writes come in), the loop takes the HBM bound, every partition
 * through the port twice a step, plus the port's latency, once a step:
 *
 *   T_hbm = 2 n k S/B_t + L_t		n ranks, B_t < B
 *
 * and what does not fit or is not there is refused.
 *
 *	shift_test host			no module needed
 *	shift_test device BW LAT_PS	after the topology is applied
 *	shift_test tier BW LAT_PS HBM_BW HBM_LAT_PS HBM_BYTES SRAM_BW SRAM_LAT_PS
 *					the same, with the tiers
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

#define ALL_CASES	0x3fU
/* Two, 5 steps: BSP backwards, overlapped round more than the ring. */
#define TIER_CASES	(1U << 2 | 1U << 5)

/* The cases of @mask (bit i: cases[i]). */
static void check_rotations(struct fdev_comm *c, const char *what,
			    unsigned int flags, unsigned int mask)
{
	static const struct { int shift; unsigned int steps; } cases[] = {
		{ 1, 1 }, { 1, 3 }, { -1, 3 }, { 3, 5 }, { 1, RANKS },
		{ -9, 2 },
	};
	uint8_t *buf = malloc(RANKS * PART);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err;

		if (!(mask & 1U << i))
			continue;

		fill(buf, RANKS, PART);
		err = fdev_shift(c, buf, PART, cases[i].shift, cases[i].steps,
				 1000, flags | (i % 2 ? FDEV_SHIFT_OVERLAP : 0));
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
	check_rotations(c, "host", 0, ALL_CASES);
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
 * One case on a fresh communicator. A step that begins at the instant
 * the previous one's last WRITE landed, an event the engine has
 * processed, starts then: its transfers sort after what was in flight
 * at that instant, whatever their keys (docs/TIMING.md, "Order"), so
 * every step takes what the first does. (They started 1 ps later where
 * their key sorted before the landing WRITE's, before: 1 ps more per
 * step after the first where the shift ended the step.)
 */
static void time_case(uint64_t tx, uint64_t compute, unsigned int flags,
		      unsigned int steps)
{
	int ov = flags & FDEV_SHIFT_OVERLAP;
	uint64_t step = ov ? (compute > tx ? compute : tx) : compute + tx;
	uint64_t want = steps * step, got = 0;
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
	   "%s%s, compute %llu ps, %u steps: %llu ps = %u x %llu (%d)",
	   ov ? "overlapped" : "BSP",
	   flags & FDEV_SHIFT_TIER(3) ? " in SRAM" : "",
	   (unsigned long long)compute, steps,
	   (unsigned long long)got, steps, (unsigned long long)step, err);
}

/* One WRITE of @len from @src (offset 0) to @rkey, waited for; its cqe. */
static int write_one(struct fdev *dev, uint32_t q, uint32_t src, uint64_t rkey,
		     uint64_t len, struct fdev_cqe *cqe)
{
	struct fdev_desc d;
	int ret;

	fdev_prep_write(&d, q, src, 0, rkey, 0, len, 7);
	ret = fdev_post(dev, &d, 1);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	ret = fdev_wait(dev, cqe, 1, 1, 0);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	return cqe->status;
}

/*
 * fdev_region_alloc_tier() on the HBM every tile shares (at tile 0):
 * its capacity, -ENXIO for a tier no tile has, and transfers that read
 * and write a region in it, timed through its port.
 */
static void tier_case(uint64_t bw, uint64_t lat, uint64_t hbm_bw,
		      uint64_t hbm_lat, uint64_t hbm_bytes)
{
	uint64_t s = ser(SEG, bw), st = ser(SEG, hbm_bw), k = PART / SEG;
	uint64_t rd = hbm_lat + st + 2 * (lat + s) + (k - 1) * st;
	uint64_t wr = 2 * (lat + s) + hbm_lat + st + (k - 1) * st;
	struct fdev_region a = { 0 }, b = { 0 }, hbm = { 0 }, hbm2 = { 0 },
			   plain = { 0 };
	struct fdev_info info;
	struct fdev_cqe cqe;
	struct fdev *dev;
	uint32_t eps[RANKS], q0, q1;
	int ret;

	if (fdev_endpoints(NULL, eps, RANKS) < RANKS || fdev_open(NULL, 0, &dev)) {
		ok(0, "tiers: open the device and find %d tiles", RANKS);
		return;
	}
	ret = fdev_query(dev, &info);
	if (ret || !(info.features & FDEV_F_MEMORY_TIERS)) {
		ok(0, "tiers: the module has memory tiers (%d)", ret);
		fdev_close(dev);
		return;
	}
	for (unsigned int i = 0; i < RANKS && !ret; i++)
		ret = fdev_attach(dev, eps[i]);
	if (!ret)
		ret = fdev_queue_create(dev, eps[0], 4, &q0);
	if (!ret)
		ret = fdev_queue_create(dev, eps[1], 4, &q1);
	ok(!ret, "tiers: %d tiles attached, two queues (%d)", RANKS, ret);
	if (ret)
		goto out;

	/* Capacity: the tier's, not the tile's plain memory, and shared. */
	ret = fdev_region_alloc_tier(dev, eps[0], FDEV_TIER_HBM,
				     hbm_bytes + 4096, &a);
	ok(ret == -ENOSPC, "a region beyond the HBM's %llu bytes: -ENOSPC (%d)",
	   (unsigned long long)hbm_bytes, ret);
	ret = fdev_region_alloc_tier(dev, eps[3], FDEV_TIER_HBM, hbm_bytes / 2,
				     &a);
	ok(!ret && a.size == hbm_bytes / 2 && a.addr,
	   "half the HBM from tile 3, mapped (%d)", ret);
	ret = fdev_region_alloc_tier(dev, eps[5], FDEV_TIER_HBM,
				     hbm_bytes / 2 + 4096, &b);
	ok(ret == -ENOSPC, "then more than the other half from tile 5: -ENOSPC, the tiles share it (%d)",
	   ret);
	if (a.handle)
		fdev_region_free(dev, &a);
	ret = fdev_region_alloc_tier(dev, eps[5], FDEV_TIER_HBM,
				     hbm_bytes / 2 + 4096, &b);
	ok(!ret, "freed, it fits (%d)", ret);
	if (!ret)
		fdev_region_free(dev, &b);
	ret = fdev_region_alloc_tier(dev, eps[1], FDEV_TIER_DDR, 4096, &b);
	ok(ret == -ENXIO, "a DDR region where no DDR serves the tile: -ENXIO (%d)",
	   ret);
	ret = fdev_region_alloc_tier(dev, eps[1], FDEV_TIER_DDR + 1, 4096, &b);
	ok(ret == -EINVAL, "an unknown tier: -EINVAL (%d)", ret);

	/* Through the port: HBM (tile 0) -> tile 1 -> HBM (tile 2). */
	ret = fdev_region_alloc_tier(dev, eps[0], FDEV_TIER_HBM, PART, &hbm);
	if (!ret)
		ret = fdev_region_alloc_tier(dev, eps[2], FDEV_TIER_HBM, PART,
					     &hbm2);
	if (!ret)
		ret = fdev_region_alloc(dev, eps[1], PART, &plain);
	if (!ret)
		ret = fdev_region_export(dev, &plain, FDEV_ACCESS_REMOTE_WRITE);
	if (!ret)
		ret = fdev_region_export(dev, &hbm2, FDEV_ACCESS_REMOTE_WRITE);
	ok(!ret, "HBM regions of %u bytes on tiles 0 and 2, plain on 1 (%d)",
	   PART, ret);
	if (ret)
		goto out;
	fill(hbm.addr, 1, PART);
	ret = write_one(dev, q0, hbm.handle, plain.key, PART, &cqe);
	ok(!ret && cqe.finish_ps - cqe.start_ps == rd,
	   "HBM -> plain: %llu ps = (%llu + %llu) + 2 (%llu + %llu) + %llu x %llu (%d)",
	   (unsigned long long)(cqe.finish_ps - cqe.start_ps),
	   (unsigned long long)hbm_lat, (unsigned long long)st,
	   (unsigned long long)lat, (unsigned long long)s,
	   (unsigned long long)(k - 1), (unsigned long long)st, ret);
	ok(!memcmp(plain.addr, hbm.addr, PART), "and its bytes landed");
	ret = write_one(dev, q1, plain.handle, hbm2.key, PART, &cqe);
	ok(!ret && cqe.finish_ps - cqe.start_ps == wr,
	   "plain -> HBM: %llu ps = 2 (%llu + %llu) + (%llu + %llu) + %llu x %llu (%d)",
	   (unsigned long long)(cqe.finish_ps - cqe.start_ps),
	   (unsigned long long)lat, (unsigned long long)s,
	   (unsigned long long)hbm_lat, (unsigned long long)st,
	   (unsigned long long)(k - 1), (unsigned long long)st, ret);
	ok(!memcmp(hbm2.addr, hbm.addr, PART), "and its bytes landed");
out:
	/* Freed and unmapped: a mapping would keep the tier's space. */
	if (hbm.handle)
		fdev_region_free(dev, &hbm);
	if (hbm2.handle)
		fdev_region_free(dev, &hbm2);
	if (plain.handle)
		fdev_region_free(dev, &plain);
	fdev_close(dev);
}

/* fdev_shift() on partitions in the tiles' SRAM and in the shared HBM. */
static void shift_tier_case(uint64_t bw, uint64_t lat, uint64_t hbm_bw,
			    uint64_t hbm_lat, uint64_t sram_bw,
			    uint64_t sram_lat)
{
	uint64_t s = ser(SEG, bw), ss = ser(SEG, sram_bw), k = PART / SEG;
	uint64_t ts = 2 * (sram_lat + ss) + 2 * (lat + s) + (k - 1) * s;
	uint64_t hbm_step = 2 * RANKS * k * ser(SEG, hbm_bw), got = 0;
	const unsigned int sram = FDEV_SHIFT_TIER(FDEV_TIER_SRAM),
			   hbm = FDEV_SHIFT_TIER(FDEV_TIER_HBM);
	struct fdev_comm *c = NULL;
	int err;

	diag("T_s = 2 (%llu + %llu) + 2 (%llu + %llu) + %llu x %llu = %llu ps",
	     (unsigned long long)sram_lat, (unsigned long long)ss,
	     (unsigned long long)lat, (unsigned long long)s,
	     (unsigned long long)(k - 1), (unsigned long long)s,
	     (unsigned long long)ts);
	time_case(ts, 0, sram, 3);
	time_case(ts, 5000000, sram, 2);
	time_case(ts, 30000000, FDEV_SHIFT_OVERLAP | sram, 2);

	err = fdev_comm_init_local(NULL, RANKS, NULL, 2 * PART, 0, &c);
	ok(!err, "communicator with device memory (%d)", err);
	if (!err) {
		check_rotations(c, "SRAM", sram, TIER_CASES);
		check_rotations(c, "HBM", hbm, TIER_CASES);
		fdev_comm_destroy(c);
	}

	c = NULL;
	err = fdev_comm_init_local(NULL, RANKS, NULL, 0, FDEV_COMM_TIMING_ONLY,
				   &c);
	if (!err) {
		err = fdev_shift(c, NULL, PART, 1, 2, 0, hbm);
		got = fdev_comm_last_ps(c);
	}
	ok(!err && got == 2 * (hbm_step + hbm_lat),
	   "HBM, 2 steps: %llu ps = 2 x (the HBM bound %llu + %llu) (%d)",
	   (unsigned long long)got, (unsigned long long)hbm_step,
	   (unsigned long long)hbm_lat, err);
	if (c) {
		err = fdev_shift(c, NULL, PART + SEG, 1, 1, 0, hbm);
		ok(err == -ENOSPC, "HBM, 8 ranks x 2 x %llu bytes: beyond it, -ENOSPC (%d)",
		   PART + SEG, err);
		err = fdev_shift(c, NULL, PART, 1, 1, 0,
				 FDEV_SHIFT_TIER(FDEV_TIER_DDR));
		ok(err == -ENXIO, "DDR, which no tile has: -ENXIO (%d)", err);
		fdev_comm_destroy(c);
	}
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
		check_rotations(c, "device", 0, ALL_CASES);
		fdev_comm_destroy(c);
	}
	return done();
}

/* tier_case() and shift_tier_case(): @a is their figures, argv order. */
static int run_tier(const uint64_t *a)
{
	tier_case(a[0], a[1], a[2], a[3], a[4]);
	shift_tier_case(a[0], a[1], a[2], a[3], a[5], a[6]);
	return done();
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "host"))
		return run_host();
	if (argc == 4 && !strcmp(argv[1], "device"))
		return run_device(strtoull(argv[2], NULL, 0),
				  strtoull(argv[3], NULL, 0));
	if (argc == 9 && !strcmp(argv[1], "tier")) {
		uint64_t a[7];

		for (int i = 0; i < 7; i++)
			a[i] = strtoull(argv[2 + i], NULL, 0);
		return run_tier(a);
	}
	fprintf(stderr, "usage: shift_test host | device BW LAT_PS |\n"
		"       tier BW LAT_PS HBM_BW HBM_LAT_PS HBM_BYTES SRAM_BW SRAM_LAT_PS\n");
	return 2;
}
