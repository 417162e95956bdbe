// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for kmod/model/time.c.
 *
 * mul_div is checked against the compiler's 128-bit arithmetic on edge
 * cases and on a fixed pseudo-random sweep; the uncontended closed form is
 * checked against a direct simulation of the normative timing model
 * (segments crossing FIFO links, store and forward).
 */
#include <stdio.h>
#include <string.h>

#include "tap.h"

#include "../model.h"


typedef unsigned __int128 u128;

static icfab_u64 ref_floor(icfab_u64 a, icfab_u64 b, icfab_u64 c)
{
	u128 q = (u128)a * b / c;

	return q > ~0ULL ? ~0ULL : (icfab_u64)q;
}

static icfab_u64 ref_ceil(icfab_u64 a, icfab_u64 b, icfab_u64 c)
{
	u128 q = ((u128)a * b + c - 1) / c;

	return q > ~0ULL ? ~0ULL : (icfab_u64)q;
}

/* xorshift64*: a fixed sequence, so the sweep is the same on every run. */
static icfab_u64 rng_state = 0x9e3779b97f4a7c15ULL;
static icfab_u64 rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static void test_mul_div(void)
{
	static const icfab_u64 edge[] = {
		0, 1, 2, 3, 7, 1000, 0xffffffffULL, 0x100000000ULL,
		0x123456789abcdefULL, 1ULL << 63, ~0ULL - 1, ~0ULL,
		ICFAB_PS_PER_S, 900000000000ULL,
	};
	unsigned int n = sizeof(edge) / sizeof(edge[0]);
	int bad = 0, i;

	for (unsigned int x = 0; x < n; x++)
		for (unsigned int y = 0; y < n; y++)
			for (unsigned int z = 0; z < n; z++) {
				icfab_u64 a = edge[x], b = edge[y], c = edge[z];

				if (!c)
					continue;
				if (icfab_mul_div_floor(a, b, c) !=
					    ref_floor(a, b, c) ||
				    icfab_mul_div_ceil(a, b, c) !=
					    ref_ceil(a, b, c))
					bad++;
			}
	ok(bad == 0, "mul_div edge cases match 128-bit arithmetic (%d bad)",
	   bad);

	bad = 0;
	for (i = 0; i < 200000; i++) {
		/* Mix widths so that small, large and saturating cases all occur. */
		icfab_u64 a = rng() >> (rng() % 64);
		icfab_u64 b = rng() >> (rng() % 64);
		icfab_u64 c = (rng() >> (rng() % 64)) | 1;

		if (icfab_mul_div_floor(a, b, c) != ref_floor(a, b, c) ||
		    icfab_mul_div_ceil(a, b, c) != ref_ceil(a, b, c))
			bad++;
	}
	ok(bad == 0, "mul_div random sweep matches 128-bit arithmetic (%d bad)",
	   bad);
}

static void test_serialize(void)
{
	/* 1 byte on 900 GB/s is 1.11 ps: rounds up, never to zero. */
	ok(icfab_serialize_ps(1, 900000000000ULL) == 2,
	   "1 B at 900 GB/s costs 2 ps (rounded up)");
	ok(icfab_serialize_ps(4096, 50000000000ULL) == 81920,
	   "4 KiB at 50 GB/s costs 81920 ps exactly");
	ok(icfab_serialize_ps(0, 1) == 0, "0 B costs nothing");
	ok(icfab_serialize_ps(1ULL << 40, 1) == ~0ULL,
	   "1 TiB at 1 B/s saturates instead of wrapping");
	ok(icfab_nr_segments(0, 4096) == 0 &&
	   icfab_nr_segments(1, 4096) == 1 &&
	   icfab_nr_segments(4096, 4096) == 1 &&
	   icfab_nr_segments(4097, 4096) == 2,
	   "segment counts round up");
}

/*
 * Direct simulation of the normative model: every segment is ready at hop
 * h at time r, departs at max(r, next_free[h]), holds the link for s/B and
 * arrives at the next hop L later.
 */
static icfab_u64 simulate(icfab_u64 bytes, icfab_u32 seg, icfab_u32 hops,
			  icfab_u64 bw, icfab_u64 lat)
{
	icfab_u64 next_free[16] = { 0 };
	icfab_u64 done = 0, off;

	for (off = 0; off < bytes; off += seg) {
		icfab_u64 len = bytes - off < seg ? bytes - off : seg;
		icfab_u64 t = 0;

		for (icfab_u32 h = 0; h < hops; h++) {
			icfab_u64 d = t > next_free[h] ? t : next_free[h];

			next_free[h] = d + icfab_serialize_ps(len, bw);
			t = next_free[h] + lat;
		}
		done = t;
	}
	return done;
}

static void test_uncontended(void)
{
	static const icfab_u64 sizes[] = {
		1, 63, 4095, 4096, 4097, 65536, 100000, 1 << 20, 12345678,
	};
	static const icfab_u32 hops[] = { 1, 2, 3, 5, 8 };
	static const icfab_u32 segs[] = { 64, 4096, 8192 };
	static const icfab_u64 bws[] = {
		50000000000ULL, 160000000000ULL, 900000000000ULL, 4000000000ULL,
	};
	static const icfab_u64 lats[] = { 0, 1000, 500000 };
	int bad = 0, cases = 0;

	for (unsigned int a = 0; a < sizeof(sizes) / sizeof(sizes[0]); a++)
	for (unsigned int b = 0; b < sizeof(hops) / sizeof(hops[0]); b++)
	for (unsigned int c = 0; c < sizeof(segs) / sizeof(segs[0]); c++)
	for (unsigned int d = 0; d < sizeof(bws) / sizeof(bws[0]); d++)
	for (unsigned int e = 0; e < sizeof(lats) / sizeof(lats[0]); e++) {
		icfab_u64 want, got;

		if (sizes[a] / segs[c] > 4096)
			continue;	/* keep the simulation quick */
		cases++;
		want = simulate(sizes[a], segs[c], hops[b], bws[d], lats[e]);
		got = icfab_uncontended_ps(sizes[a], segs[c], hops[b], bws[d],
					   lats[e]);
		if (want != got) {
			if (bad < 5)
				printf("# %llu B seg %u hops %u bw %llu lat %llu: sim %llu formula %llu\n",
				       (unsigned long long)sizes[a], segs[c],
				       hops[b], (unsigned long long)bws[d],
				       (unsigned long long)lats[e],
				       (unsigned long long)want,
				       (unsigned long long)got);
			bad++;
		}
	}
	ok(bad == 0, "uncontended closed form equals the FIFO simulation (%d cases, %d bad)",
	   cases, bad);

	/* The design's formula for whole segments: h(L + S/B) + (n-1)S/B. */
	ok(icfab_uncontended_ps(8 * 4096, 4096, 5, 50000000000ULL, 500000) ==
	   5 * (500000 + 81920) + 7 * 81920ULL,
	   "8 segments over 5 hops: h(L + S/B) + (n-1)S/B");
	ok(icfab_uncontended_ps(0, 4096, 3, 1, 1) == 0 &&
	   icfab_uncontended_ps(10, 4096, 0, 1, 1) == 0,
	   "nothing to send or nowhere to go costs nothing");
}

int main(void)
{
	printf("TAP version 13\n");
	test_mul_div();
	test_serialize();
	test_uncontended();
	return done();
}
