/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfab fabric model: freestanding C shared by the kernel module and the
 * host tests. No kernel headers, no libc: only what the compiler gives.
 */
#ifndef _ICFAB_MODEL_H
#define _ICFAB_MODEL_H

typedef __UINT8_TYPE__	icfab_u8;
typedef __UINT32_TYPE__	icfab_u32;
typedef __UINT64_TYPE__	icfab_u64;

/* No libc and no kernel headers here, so no NULL either. */
#define ICFAB_NULL		((void *)0)

#define ICFAB_PS_PER_S		1000000000000ULL
#define ICFAB_PS_PER_NS		1000ULL

/*
 * floor(a * b / c) and ceil(a * b / c) without overflow in the product.
 * The caller guarantees c != 0. When the quotient does not fit in 64
 * bits the result saturates at ~0ULL, which callers treat as "never".
 */
icfab_u64 icfab_mul_div_floor(icfab_u64 a, icfab_u64 b, icfab_u64 c);
icfab_u64 icfab_mul_div_ceil(icfab_u64 a, icfab_u64 b, icfab_u64 c);

/*
 * Time, in ps, to serialise @bytes onto a link of @bandwidth bytes/s,
 * rounded up so that a non-empty transfer never costs zero time.
 * @bandwidth must not be zero.
 */
icfab_u64 icfab_serialize_ps(icfab_u64 bytes, icfab_u64 bandwidth);

/* Number of segments a transfer of @bytes is cut into (0 for 0 bytes). */
icfab_u64 icfab_nr_segments(icfab_u64 bytes, icfab_u32 segment_size);

/*
 * Closed form of an uncontended transfer of @bytes over @hops links that
 * all have @bandwidth bytes/s and @latency_ps, cut into segments of
 * @segment_size: every segment pays every hop's latency and serialisation
 * (store and forward), and segments pipeline, so the last one leaves the
 * first link (n - 1) segment times after the first. With whole segments
 * this is hops * (L + S/B) + (n - 1) * S/B. This is the reference the
 * engine is tested against; it is not the engine.
 */
icfab_u64 icfab_uncontended_ps(icfab_u64 bytes, icfab_u32 segment_size,
			       icfab_u32 hops, icfab_u64 bandwidth,
			       icfab_u64 latency_ps);

#endif /* _ICFAB_MODEL_H */
