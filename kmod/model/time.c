// SPDX-License-Identifier: GPL-2.0
/*
 * icfab fabric model: integer time arithmetic.
 *
 * Fabric time is kept in picoseconds so that one byte on a 900 GB/s link
 * (1.1 ps) does not round to zero. Products such as bytes * 10^12 overflow
 * 64 bits quickly, and the kernel has no 128-bit division, so mul_div is
 * done here with a 64x64->128 multiply and a shift-subtract division.
 */
#include "model.h"

struct icfab_u128 {
	icfab_u64 hi, lo;
};

static struct icfab_u128 icfab_mul_64x64(icfab_u64 a, icfab_u64 b)
{
	icfab_u64 a_lo = a & 0xffffffffULL, a_hi = a >> 32;
	icfab_u64 b_lo = b & 0xffffffffULL, b_hi = b >> 32;
	icfab_u64 lo_lo = a_lo * b_lo;
	icfab_u64 hi_lo = a_hi * b_lo;
	icfab_u64 lo_hi = a_lo * b_hi;
	icfab_u64 hi_hi = a_hi * b_hi;
	/* Middle column: cannot overflow, each term is < 2^32 after shifts. */
	icfab_u64 mid = (lo_lo >> 32) + (hi_lo & 0xffffffffULL) +
			(lo_hi & 0xffffffffULL);
	struct icfab_u128 r;

	r.lo = (mid << 32) | (lo_lo & 0xffffffffULL);
	r.hi = hi_hi + (hi_lo >> 32) + (lo_hi >> 32) + (mid >> 32);
	return r;
}

/* Divide n by d; *rem gets the remainder. Saturates when q > 2^64 - 1. */
static icfab_u64 icfab_div_128_64(struct icfab_u128 n, icfab_u64 d,
				  icfab_u64 *rem)
{
	icfab_u64 q = 0, r;
	int i;

	if (n.hi >= d) {
		*rem = 0;
		return ~0ULL;
	}
	/*
	 * The common case (a segment's bytes times 10^12 fits 64 bits for
	 * anything under 18 MB) needs no long division: it was half the
	 * engine's instructions for small transfers.
	 */
	if (!n.hi) {
		*rem = n.lo % d;
		return n.lo / d;
	}

	/* r < d always holds, so r fits and the top bit needs care only. */
	r = n.hi;
	for (i = 63; i >= 0; i--) {
		icfab_u64 carry = r >> 63;

		r = (r << 1) | ((n.lo >> i) & 1);
		if (carry || r >= d) {
			r -= d;
			q |= 1ULL << i;
		}
	}
	*rem = r;
	return q;
}

icfab_u64 icfab_mul_div_floor(icfab_u64 a, icfab_u64 b, icfab_u64 c)
{
	icfab_u64 rem;

	return icfab_div_128_64(icfab_mul_64x64(a, b), c, &rem);
}

icfab_u64 icfab_mul_div_ceil(icfab_u64 a, icfab_u64 b, icfab_u64 c)
{
	icfab_u64 rem, q;

	q = icfab_div_128_64(icfab_mul_64x64(a, b), c, &rem);
	if (rem && q != ~0ULL)
		q++;
	return q;
}

icfab_u64 icfab_serialize_ps(icfab_u64 bytes, icfab_u64 bandwidth)
{
	return icfab_mul_div_ceil(bytes, ICFAB_PS_PER_S, bandwidth);
}

icfab_u64 icfab_nr_segments(icfab_u64 bytes, icfab_u32 segment_size)
{
	return bytes / segment_size + (bytes % segment_size != 0);
}

icfab_u64 icfab_uncontended_ps(icfab_u64 bytes, icfab_u32 segment_size,
			       icfab_u32 hops, icfab_u64 bandwidth,
			       icfab_u64 latency_ps)
{
	icfab_u64 nseg = icfab_nr_segments(bytes, segment_size);
	icfab_u64 full, tail, later_hop;

	if (!nseg || !hops)
		return 0;

	full = icfab_serialize_ps(segment_size, bandwidth);
	tail = icfab_serialize_ps(bytes - (nseg - 1) * segment_size,
				  bandwidth);
	/*
	 * Segment k leaves the first link at k * full; the last one is done
	 * with it after its own (possibly shorter) time, tail. On each later
	 * link it queues behind the segment before it, which is a full one
	 * when there is one, so it leaves that link a full segment time after
	 * it started there.
	 */
	later_hop = nseg > 1 ? full : tail;
	return (nseg - 1) * full + tail + (hops - 1) * later_hop +
	       hops * latency_ps;
}
