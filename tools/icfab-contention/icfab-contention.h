/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfab-contention: what the BPF side and the user side share. Fixed-width
 * types only: bpftool map dump prints these through the object's BTF.
 */
#ifndef ICFAB_CONTENTION_H
#define ICFAB_CONTENTION_H

/*
 * Queueing-delay histogram: slot 0 counts segments that did not wait,
 * slot k (1..63) those that waited [2^(k-1), 2^k) ps.
 */
#define ICFAB_CT_SLOTS	64

struct icfab_ct_key {
	__u32 fabric;
	__u32 link;
};

struct icfab_ct_link {
	__u64 bytes;			/* carried */
	__u64 segments;			/* carried */
	__u64 busy_ps;			/* sum of done - depart */
	__u64 queued_ps;		/* sum of depart - ready */
	__u64 max_queued_ps;		/* longest depart - ready */
	__u64 hist[ICFAB_CT_SLOTS];	/* of depart - ready, log2 ps */
};

/*
 * One entry per fabric: transfers the tracer saw complete. Its link
 * transmits are the sum of its links' segments, counted there only.
 */
struct icfab_ct_total {
	__u64 transfers;		/* completions, any status */
	__u64 bytes;			/* of the successful ones */
	__u64 failed;			/* status != 0 */
};

#endif /* ICFAB_CONTENTION_H */
