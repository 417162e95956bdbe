// SPDX-License-Identifier: GPL-2.0
/*
 * Route leads: how many piece rounds ahead an interleaved all-to-all
 * posts each pair's pieces (fdev_plan_interleave_lead()), from the
 * fabric's routes. It depends on the topology library's struct topo
 * alone, so that tools/bench/a2a_bound computes the same leads from a
 * topology file as libfabricdev does from the module (routes.c).
 *
 * Why (issue 16, tools/bench/README.md "The torus all-to-all against its
 * bound"): on a torus routed in dimension order, the links of the last
 * dimension carry mostly transit, which reaches them hops after it was
 * posted, and the pieces posted last still have hops to go. In plain
 * piece-major order those links start late and finish late. A pair's
 * lead is the mean hop index at which the all-to-all's routes cross its
 * route's first link (how late that link's other traffic comes), plus
 * its route's hops (how long its last piece takes to arrive), rounded
 * up to whole rounds (on tpu-v4-cube the depths are halves, 0 to 2.5;
 * rounding them down gives 0.892 of the bound at 64 KiB per pair, up
 * 0.907): pairs whose first link would otherwise wait start early, and
 * far pairs finish early, while the near ones fill the end. Where every
 * route looks alike (one switch) every lead is the same and the order
 * is the plain one.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/topo.h>

#include "lead.h"

/* Links of node @src's route to node @dst into @path (at most @max). */
static int route_path(const struct topo *t, uint32_t src, uint32_t dst,
		      uint32_t *path, uint32_t max)
{
	uint32_t hops = 0, u = src;

	while (u != dst) {
		uint16_t port;
		int l;

		if (hops == max || u >= t->nr_nodes || dst >= t->nr_nodes)
			return -ELOOP;
		port = t->routes[(size_t)u * t->nr_nodes + dst];
		/* A set of next hops (multipath) has no one first link. */
		l = topo_port_link(t, u, port);
		if (l < 0)
			return -ENOENT;
		path[hops++] = (uint32_t)l;
		u = t->links[l].dst_node;
	}
	return (int)hops;
}

int fdev_route_leads(const struct topo *t, const uint32_t *ep, uint32_t n,
		     uint16_t *lead)
{
	uint32_t max = t->nr_links + 1, *path, *first, *hops;
	double *depth_sum, *crossings;
	int err = -ENOMEM;

	if (!t->routes)
		return -ENOENT;
	path = calloc(max, sizeof(*path));
	first = calloc((size_t)n * n, sizeof(*first));
	hops = calloc((size_t)n * n, sizeof(*hops));
	depth_sum = calloc(t->nr_links, sizeof(*depth_sum));
	crossings = calloc(t->nr_links, sizeof(*crossings));
	if (!path || !first || !hops || !depth_sum || !crossings)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < n; j++) {
			int h = i == j ? 0 : route_path(t, ep[i], ep[j], path, max);

			if (h < 0) {
				err = h;
				goto out;
			}
			hops[(size_t)i * n + j] = (uint32_t)h;
			first[(size_t)i * n + j] = h ? path[0] : 0;
			for (int k = 0; k < h; k++) {
				depth_sum[path[k]] += k;
				crossings[path[k]] += 1;
			}
		}
	for (size_t q = 0; q < (size_t)n * n; q++) {
		double d = hops[q] ? depth_sum[first[q]] / crossings[first[q]] : 0;
		double v = ceil(d + hops[q]);

		lead[q] = v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
	}
	err = 0;
out:
	free(path);
	free(first);
	free(hops);
	free(depth_sum);
	free(crossings);
	return err;
}
