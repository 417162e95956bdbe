/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the data-path benchmarks (desc_cost, copy_bw, ctx_scale) share:
 * the clock, the median, the fabric they run on and the completion ring.
 */
#ifndef ICFAB_BENCH_H
#define ICFAB_BENCH_H

#include <stdint.h>

#include <linux/icfab.h>

#include "genl.h"

#define BENCH_BW	(1ULL << 50)	/* bytes/s: 1 PB/s, so links never limit */

/* CLOCK_MONOTONIC in ns. */
double bench_now_ns(void);

/* The median of @v[0..n) (sorted in place). */
double bench_median(double *v, int n);

/*
 * Replaces fabric 0's topology (clear_fabric(), which commits the empty
 * one) with endpoints 0 and 1 (1 GiB each), one link each way with no
 * latency at BENCH_BW, routed, and commits it. A
 * non-zero @seg also sets the fabric's segment size. Returns 0 or the
 * first failing request's negative errno.
 */
int bench_two_endpoints(struct genl_sock *gs, uint32_t seg);

/*
 * What both benchmarks start with: @nr arrays of @n zeroed samples (the
 * caller frees nothing: the process exits) with best[k] = 1e300, the
 * fabric of bench_two_endpoints(@seg) over @gs, and /dev/icfab0 opened
 * read-write. Returns the file descriptor, or -1 after a message that
 * starts with "@prog: ".
 */
int bench_start(const char *prog, double **samples, double *best, int nr,
		int n, struct genl_sock *gs, uint32_t seg);

/* Sets fabric 0's segment size and commits it. */
int bench_segment_size(struct genl_sock *gs, uint32_t seg);

/* A context's completion ring, mapped. */
struct bench_cq {
	struct icfab_cq_ring *cq;
	struct icfab_cqe *cqes;
};

/* Sets up @fd's completion ring of @entries and maps it: 0 or -1 (errno). */
int bench_cq_map(int fd, uint32_t entries, struct bench_cq *r);

/*
 * Reaps @n completions from @r: polls it, and sleeps in CQ_WAIT only when
 * it has fewer. -1 on an error, an overflow or a failed completion.
 */
int bench_cq_reap(int fd, struct bench_cq *r, unsigned int n);

#endif
