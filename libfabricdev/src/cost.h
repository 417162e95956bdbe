/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a plan costs on the fabric's links (cost.c): the estimate "auto"
 * chooses a collective's algorithm by (coll.c).
 */
#ifndef FDEV_COST_H
#define FDEV_COST_H

#include <stdint.h>

struct topo;
struct fdev_plan;

/*
 * The route between every pair of a communicator's ranks, as links, and
 * what each link costs: built once from the fabric's topology and
 * routes, which can be freed then.
 */
struct fdev_paths {
	uint32_t n;			/* ranks */
	uint32_t nr_links;
	uint64_t seg;			/* segment size, bytes */
	uint32_t engines;		/* the fewest DMA engines of a rank */
	double *ps_per_byte;		/* [nr_links] */
	uint64_t *fixed_ps;		/* [nr_links] latency + message overhead */
	uint32_t *off;			/* [n * n + 1] into @link */
	uint32_t *link;			/* the routes' links, pair after pair */
};

/*
 * @ep[i]: rank i's node in @t, whose routes must be set (topo_route(),
 * or read from the module). -ENOENT where a route has a set of next hops
 * rather than one (multipath) or there are no routes, -ELOOP where one
 * does not reach its destination or crosses a link that is down,
 * -ENOMEM.
 */
int fdev_paths_build(const struct topo *t, const uint32_t *ep, uint32_t n,
		     struct fdev_paths **out);
void fdev_paths_free(struct fdev_paths *m);

/*
 * The estimate, in ps, of a finished plan that names every rank's
 * transfers: each step in turn (a step starts when the one before it
 * has ended), each as long as its busiest link takes to carry what the
 * step puts on it, plus the longest route's latency, message overheads
 * and a segment's store-and-forward at every hop after the first.
 * UINT64_MAX for a plan it cannot cost (multicast, a rank out of range).
 */
uint64_t fdev_plan_cost_ps(const struct fdev_paths *m,
			   const struct fdev_plan *p);

#endif
