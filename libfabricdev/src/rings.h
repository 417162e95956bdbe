/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * FDEV_ALGO_RINGS (rings.c): edge-disjoint Hamiltonian cycles over the
 * cables between ranks, and the collectives over them. Pure logic.
 */
#ifndef FDEV_RINGS_H
#define FDEV_RINGS_H

#include <stdint.h>

#include "plan.h"

/*
 * Up to @max_cycles cycles through all @n ranks that share no cable of
 * @nlinks (@ends: [nlinks][2] ranks, a pair once per cable), into @out
 * ([max_cycles][n], each starting at rank 0). Returns how many (0 when
 * the bounded search finds none), or -errno.
 */
int fdev_rings_find(unsigned int n, unsigned int nlinks, const uint32_t *ends,
		    unsigned int max_cycles, uint32_t *out);

/*
 * The collectives over @nr directed rings of cycles @cyc ([nr / 2][n]:
 * ring 2i is cycle i forwards, 2i + 1 backwards); the layouts are the
 * other algorithms'. -EOPNOTSUPP without at least two rings. With
 * @flow, they are dataflow plans in pieces of about @seg bytes
 * (plan->feeds, for fdev_plan_run_gated()); the all-reduce's is its
 * reduce-scatter chained into its all-gather, piece by piece.
 */
int fdev_plan_rings_all_reduce(struct fdev_plan *p, unsigned int n,
			       uint64_t count, int dtype, const uint32_t *cyc,
			       unsigned int nr, struct fdev_coll_layout *lo,
			       int flow, uint64_t seg);
int fdev_plan_rings_reduce_scatter(struct fdev_plan *p, unsigned int n,
				   uint64_t count, int dtype,
				   const uint32_t *cyc, unsigned int nr,
				   struct fdev_coll_layout *lo, int flow,
				   uint64_t seg);
int fdev_plan_rings_all_gather(struct fdev_plan *p, unsigned int n,
			       uint64_t bytes, const uint32_t *cyc,
			       unsigned int nr, struct fdev_coll_layout *lo,
			       int flow, uint64_t seg);

#endif
