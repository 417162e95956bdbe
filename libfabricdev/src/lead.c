// SPDX-License-Identifier: GPL-2.0
/*
 * Route leads: how many piece rounds ahead an interleaved all-to-all
 * posts each pair's pieces (fdev_plan_interleave_lead()), from the
 * routes between the ranks (cost.c's paths). It depends on the paths
 * alone, so that tools/bench/a2a_bound computes the same leads from a
 * topology file as libfabricdev does from the module (routes.c).
 *
 * Why (issue 16, tools/bench/README.md "The torus all-to-all against its
 * bound"): on a torus routed in dimension order, the links of the last
 * dimension carry mostly transit, which reaches them hops after it was
 * posted, and the pieces posted last still have hops to go. In plain
 * piece-major order those links start late and finish late. A pair's
 * lead is how many hops later than its own pieces the all-to-all's
 * traffic reaches the link where the pair's route first meets other
 * traffic (the mean hop index at which the routes cross it, less the
 * pair's own), plus its route's hops (how long its last piece takes to
 * arrive), rounded up to whole rounds (on tpu-v4-cube the depths are halves, 0
 * to 2.5; rounding them down gives 0.892 of the bound at 64 KiB per
 * pair, up 0.907): pairs whose traffic would otherwise come to an idle
 * link start early, and far pairs finish early, while the near ones
 * fill the end.
 *
 * Where it first meets other traffic, not simply its first link: a
 * link that carries nothing but first hops, its source's own pairs
 * (an endpoint's port into a switch or router, a torus link no route
 * enters from another), delays no one, and the pair meets the others
 * one link on. Before, the first link decided alone: on ualink-pod's
 * leaf-spine every first link is such a port, so the pairs were told
 * apart by their hops alone, and those across leaves led by two rounds
 * (82 us at 64 KiB pieces) for 200 ns more cable; an uneven exchange
 * (the MoE dispatch) then ended with its busiest receiving port idle
 * while the others drained, 0.993 of that port's bound against 0.999.
 * Now both kinds of pair first meet other traffic at the destination's
 * port (the spine's links carry every route at the same hop index), a
 * pair within a leaf one hop after it started and one across leaves
 * three: with their hops, every lead comes out the same (4 on
 * ualink-64) and the order is the plain one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "lead.h"

/*
 * Along the route from hop @j on, the first link where other traffic
 * joins: some route crosses it at another hop index than @j, that is,
 * its mean hop index is not @j. The last link if none.
 */
static uint32_t meeting_hop(const struct fdev_paths *m, size_t q,
			    const uint64_t *depth_sum, const uint64_t *crossings)
{
	uint32_t hops = m->off[q + 1] - m->off[q], j = 0;

	for (; j + 1 < hops; j++) {
		uint32_t l = m->link[m->off[q] + j];

		if (depth_sum[l] != (uint64_t)j * crossings[l])
			break;
	}
	return j;
}

int fdev_route_leads(const struct fdev_paths *m, uint16_t *lead)
{
	size_t pairs = (size_t)m->n * m->n;
	uint64_t *depth_sum = calloc(m->nr_links + 1, sizeof(*depth_sum));
	uint64_t *crossings = calloc(m->nr_links + 1, sizeof(*crossings));
	int err = -ENOMEM;

	if (!depth_sum || !crossings)
		goto out;
	for (size_t q = 0; q < pairs; q++)
		for (uint32_t k = m->off[q]; k < m->off[q + 1]; k++) {
			depth_sum[m->link[k]] += k - m->off[q];
			crossings[m->link[k]]++;
		}
	memset(lead, 0, pairs * sizeof(*lead));
	for (size_t q = 0; q < pairs; q++) {
		uint64_t hops = m->off[q + 1] - m->off[q], j, c, v;
		uint32_t l;

		if (!hops)
			continue;
		j = meeting_hop(m, q, depth_sum, crossings);
		l = m->link[m->off[q] + j];
		c = crossings[l];
		/* ceil(depth_sum / c - j + hops), in integers; j < hops */
		v = (depth_sum[l] + (hops - j) * c + c - 1) / c;
		lead[q] = v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
	}
	err = 0;
out:
	free(depth_sum);
	free(crossings);
	return err;
}
