// SPDX-License-Identifier: GPL-2.0
/*
 * icfab fabric model: the parallel engine's partitioning and the merge
 * of its partitions' completions (see engine.h, "partitions").
 *
 * Why partitions by leaf: an event touches the links leaving its node,
 * the DMA engines and submission lists of its node when that is the
 * source, and the arrival count of its transfer when its node is the
 * destination. So a partition of nodes owns those, and the only effects
 * that cross are a segment's next event after a link between partitions
 * and its arrival decided before its destination's partition; both come
 * at least that link's latency later. Windows [T, T + lookahead) are
 * then independent, and each partition, processing its events in the
 * order of events, makes every decision the sequential engine makes.
 * A leaf switch with its endpoints keeps the injection and ejection
 * links of a pair under one leaf inside one partition.
 */
#include "engine.h"

#define PART_NONE	0xffffU

/* The switch an endpoint's first usable link reaches, or the node itself. */
static icfab_u32 part_home(const struct icfab_mtopo *t, icfab_u32 node)
{
	const struct icfab_mnode *n = &t->nodes[node];
	icfab_u32 i;

	if (n->kind != ICFAB_MODEL_ENDPOINT)
		return node;
	for (i = 0; i < n->nr_ports; i++) {
		icfab_u32 lid = n->port_out[i];
		const struct icfab_mlink *l;

		if (lid >= t->links_cap)
			continue;
		l = &t->links[lid];
		if (l->present && l->dst < t->nr_nodes &&
		    t->nodes[l->dst].present &&
		    t->nodes[l->dst].kind != ICFAB_MODEL_ENDPOINT)
			return l->dst;
	}
	return node;
}

/*
 * Give the groups of class @sw (0: with endpoints, 1: switches only) to
 * the partitions, in the order of their lowest node, each partition
 * taking a share of the class's weight.
 */
static void part_fill(const struct icfab_mtopo *t, icfab_u16 nr_parts,
		      icfab_u16 *of_node, const icfab_u32 *home,
		      const icfab_u32 *weight, icfab_u32 n, int sw)
{
	icfab_u64 total = 0, acc = 0;
	icfab_u32 i;
	icfab_u16 p = 0;

	for (i = 0; i < n; i++)
		if (t->nodes[i].present && home[i] == i &&
		    (weight[i] >> 31) == (icfab_u32)sw)
			total += weight[i] & 0x7fffffffU;
	for (i = 0; i < n; i++) {
		if (!t->nodes[i].present || home[i] != i ||
		    (weight[i] >> 31) != (icfab_u32)sw)
			continue;
		while (p + 1 < nr_parts && acc * nr_parts >= total * (p + 1))
			p++;
		of_node[i] = p;
		acc += weight[i] & 0x7fffffffU;
	}
}

/*
 * Spines apart from leaves: each partition gets a share of both, so that
 * every window, whatever hop its segments are at, finds work in every
 * partition.
 */
icfab_u64 icfab_part_plan(const struct icfab_mtopo *t, icfab_u16 nr_parts,
			  icfab_u16 *of_node, icfab_u32 *scratch)
{
	/* weight: links out of the group; top bit: it has no endpoint */
	icfab_u32 *home = scratch, *weight = scratch + t->nodes_cap;
	icfab_u64 look = ICFAB_ENGINE_NEVER;
	icfab_u32 i, n = t->nr_nodes < t->nodes_cap ? t->nr_nodes :
						       t->nodes_cap;

	if (!nr_parts)
		return 0;
	for (i = 0; i < t->nodes_cap; i++) {
		home[i] = i;
		weight[i] = 0x80000000U;
		of_node[i] = PART_NONE;
	}
	for (i = 0; i < n; i++) {
		if (!t->nodes[i].present)
			continue;
		home[i] = part_home(t, i);
		/* Work is per segment leaving a node: one per link out. */
		weight[home[i]] += t->nodes[i].nr_ports + 1;
		if (t->nodes[i].kind == ICFAB_MODEL_ENDPOINT)
			weight[home[i]] &= 0x7fffffffU;
	}
	part_fill(t, nr_parts, of_node, home, weight, n, 0);
	part_fill(t, nr_parts, of_node, home, weight, n, 1);
	for (i = 0; i < t->nodes_cap; i++)
		of_node[i] = of_node[home[i]] == PART_NONE ? 0 :
			     of_node[home[i]];
	for (i = 0; i < t->links_cap; i++) {
		const struct icfab_mlink *l = &t->links[i];

		if (!l->present || l->src >= t->nodes_cap ||
		    l->dst >= t->nodes_cap ||
		    of_node[l->src] == of_node[l->dst])
			continue;
		if (l->latency_ps < look)
			look = l->latency_ps;
	}
	return look;
}

/* The order of events: (time, key, seg, hop, node, xfer). */
int icfab_part_done_before(const struct icfab_engine_done *a,
			   const struct icfab_engine_done *b)
{
	if (a->time_ps != b->time_ps)
		return a->time_ps < b->time_ps;
	if (a->key != b->key)
		return a->key < b->key;
	if (a->seg != b->seg)
		return a->seg < b->seg;
	if (a->hop != b->hop)
		return a->hop < b->hop;
	if (a->node != b->node)
		return a->node < b->node;
	return a->xfer < b->xfer;
}

void icfab_part_result_at(struct icfab_engine *const *e, icfab_u32 nr,
			  const icfab_u16 *of_node, icfab_u32 self,
			  const struct icfab_engine_done *d,
			  struct icfab_xfer_result *r)
{
	/* What adoption gave every partition alike: its own copy. */
	const struct icfab_engine_xfer *x = &e[self]->xfers[d->xfer];
	icfab_u64 queued = 0;
	icfab_u32 i;

	for (i = 0; i < nr; i++) {
		icfab_u64 q = e[i]->xfers[d->xfer].queued_ps;

		queued = queued + q < queued ? ~0ULL : queued + q;
	}
	*r = (struct icfab_xfer_result){
		.key = x->key, .bytes = x->bytes, .submit_ps = x->submit_ps,
		.start_ps = e[of_node[x->src]]->xfers[d->xfer].start_ps,
		.finish_ps = d->time_ps, .queued_ps = queued,
		.src = x->src, .dst = x->dst, .hops = x->hops,
		.status = x->status, .nr_leaves = x->nr_leaves, .pad = 0,
	};
}

void icfab_part_result(struct icfab_engine *const *e, icfab_u32 nr,
		       const icfab_u16 *of_node,
		       const struct icfab_engine_done *d,
		       struct icfab_xfer_result *r)
{
	icfab_part_result_at(e, nr, of_node, 0, d, r);
}
