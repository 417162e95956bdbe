// SPDX-License-Identifier: GPL-2.0
/*
 * icfab fabric model: topology validation, run on every commit.
 *
 * A commit either installs a topology that passes every check here or
 * changes nothing, so the engine can trust what it is given: every link
 * joins two real ports, and every route it follows reaches its
 * destination without a loop.
 */
#include "topo.h"

static int icfab_topo_fail(struct icfab_topo_err *err,
			   enum icfab_topo_err_obj obj, icfab_u32 id,
			   icfab_u32 id2, const char *msg)
{
	err->obj = obj;
	err->id = id;
	err->id2 = id2;
	err->msg = msg;
	return -1;
}

static int icfab_topo_check_nodes(const struct icfab_mtopo *t,
				  const struct icfab_topo_limits *lim,
				  struct icfab_topo_err *err)
{
	icfab_u32 i, endpoints = 0, switches = 0;

	for (i = 0; i < t->nodes_cap; i++) {
		const struct icfab_mnode *n = &t->nodes[i];

		if (!n->present) {
			if (i < t->nr_nodes)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_NODE,
					i, 0, "node ids must be dense: this id is missing");
			continue;
		}
		if (i >= t->nr_nodes)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_NODE, i, 0,
				"node ids must be dense: this id is past the end");
		if (!n->nr_ports || n->nr_ports > lim->max_ports)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_NODE, i, 0,
				"port count is zero or over the module's limit");
		if (n->kind == ICFAB_MODEL_ENDPOINT) {
			endpoints++;
		} else {
			switches++;
			if (n->colors > lim->max_colors)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_NODE,
					i, 0, "color table over the module's limit");
		}
	}
	if (endpoints > lim->max_endpoints)
		return icfab_topo_fail(err, ICFAB_TOPO_ERR_NODE, 0, 0,
				       "more endpoints than the module allows");
	if (switches > lim->max_switches)
		return icfab_topo_fail(err, ICFAB_TOPO_ERR_NODE, 0, 0,
				       "more switches than the module allows");
	return 0;
}

/* A tier port: a known kind, from an endpoint to itself. */
static int icfab_topo_check_tier(const struct icfab_mtopo *t,
				 const struct icfab_mlink *l, icfab_u32 id,
				 struct icfab_topo_err *err)
{
	if (l->tier > ICFAB_MODEL_TIERS)
		return icfab_topo_fail(err, ICFAB_TOPO_ERR_LINK, id, 0,
				       "unknown memory tier");
	if (l->src != l->dst ||
	    t->nodes[l->src].kind != ICFAB_MODEL_ENDPOINT)
		return icfab_topo_fail(err, ICFAB_TOPO_ERR_LINK, id, 0,
				       "a tier port goes from an endpoint to itself");
	return 0;
}

/*
 * Every endpoint's tier references name a tier port of their kind, and
 * every tier port's home names it: at most one of a kind per endpoint.
 */
static int icfab_topo_check_tier_refs(const struct icfab_mtopo *t,
				      struct icfab_topo_err *err)
{
	icfab_u32 i, k;

	for (i = 0; i < t->links_cap; i++) {
		const struct icfab_mlink *l = &t->links[i];

		if (l->present && icfab_mlink_is_tier(l) &&
		    t->nodes[l->src].tier_link[l->tier - 1] != i + 1)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_LINK, i, 0,
				"a tier port its home endpoint does not name (a second of its kind?)");
	}

	for (i = 0; i < t->nr_nodes; i++) {
		const struct icfab_mnode *n = &t->nodes[i];

		for (k = 0; k < ICFAB_MODEL_TIERS; k++) {
			icfab_u32 ref = n->tier_link[k];
			const struct icfab_mlink *l;

			if (!ref)
				continue;
			if (n->kind != ICFAB_MODEL_ENDPOINT)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_NODE,
					i, 0, "a switch has no memory tiers");
			l = ref <= t->links_cap ? &t->links[ref - 1] : ICFAB_NULL;
			if (!l || !l->present || l->tier != k + 1)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_NODE,
					i, 0, "tier reference to a link that is not a port of that tier");
		}
	}
	return 0;
}

static int icfab_topo_check_links(struct icfab_mtopo *t,
				  const struct icfab_topo_limits *lim,
				  struct icfab_topo_err *err)
{
	icfab_u32 i, p, links = 0;

	for (i = 0; i < t->nr_nodes; i++)
		for (p = 0; p < t->nodes[i].nr_ports; p++) {
			t->nodes[i].port_out[p] = ICFAB_MODEL_NO_LINK;
			t->nodes[i].port_in[p] = ICFAB_MODEL_NO_LINK;
		}

	for (i = 0; i < t->links_cap; i++) {
		const struct icfab_mlink *l = &t->links[i];
		struct icfab_mnode *src, *dst;

		if (!l->present)
			continue;
		links++;
		if (l->src >= t->nr_nodes || l->dst >= t->nr_nodes)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_LINK, i, 0,
					       "link to or from a missing node");
		if (icfab_mlink_is_tier(l)) {
			if (icfab_topo_check_tier(t, l, i, err))
				return -1;
			continue;
		}
		if (l->src == l->dst)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_LINK, i, 0,
					       "link from a node to itself");
		src = &t->nodes[l->src];
		dst = &t->nodes[l->dst];
		if (l->src_port >= src->nr_ports || l->dst_port >= dst->nr_ports)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_LINK, i, 0,
					       "port beyond the node's port count");
		if (src->port_out[l->src_port] != ICFAB_MODEL_NO_LINK)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_LINK, i, 0,
					       "another link leaves by this source port");
		if (dst->port_in[l->dst_port] != ICFAB_MODEL_NO_LINK)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_LINK, i, 0,
					       "another link arrives at this destination port");
		src->port_out[l->src_port] = i;
		dst->port_in[l->dst_port] = i;
	}
	if (links > lim->max_links)
		return icfab_topo_fail(err, ICFAB_TOPO_ERR_LINK, 0, 0,
				       "more links than the module allows");
	return 0;
}

/*
 * Whether links @a and @b, leaving one node, are parallel: they reach
 * the same neighbour alike, so a route may take either (multipath).
 */
static int icfab_topo_parallel(const struct icfab_mlink *a,
			       const struct icfab_mlink *b)
{
	return a->multipath != ICFAB_MODEL_MULTIPATH_NONE &&
	       a->dst == b->dst && a->bandwidth == b->bandwidth &&
	       a->latency_ps == b->latency_ps && a->class == b->class &&
	       a->cut_through == b->cut_through &&
	       a->multipath == b->multipath &&
	       a->eff_permille == b->eff_permille &&
	       a->msg_overhead_ps == b->msg_overhead_ps;
}

/*
 * Link the parallel links leaving each node into rings ordered by source
 * port. O(ports^2) per node, on links whose multipath mode asks for it.
 */
static void icfab_topo_link_parallel(struct icfab_mtopo *t)
{
	icfab_u32 i, p, q;

	for (i = 0; i < t->links_cap; i++) {
		t->links[i].par_next = i;
		t->links[i].nr_par = 1;
	}
	for (i = 0; i < t->nr_nodes; i++) {
		const struct icfab_mnode *n = &t->nodes[i];

		for (p = 0; p < n->nr_ports; p++) {
			icfab_u32 lid = n->port_out[p], first = lid, next = lid;
			struct icfab_mlink *l;

			if (lid == ICFAB_MODEL_NO_LINK)
				continue;
			l = &t->links[lid];
			if (l->multipath == ICFAB_MODEL_MULTIPATH_NONE)
				continue;
			l->nr_par = 0;
			for (q = 0; q < n->nr_ports; q++) {
				icfab_u32 o = n->port_out[q];

				if (o == ICFAB_MODEL_NO_LINK ||
				    !icfab_topo_parallel(l, &t->links[o]))
					continue;
				l->nr_par++;
				if (q < p && first == lid)
					first = o;
				if (q > p && next == lid)
					next = o;
			}
			l->par_next = next != lid ? next : first;
		}
	}
}

static int icfab_topo_check_route_entries(const struct icfab_mtopo *t,
					  struct icfab_topo_err *err)
{
	icfab_u32 n, d;

	for (n = 0; n < t->nr_nodes; n++) {
		const struct icfab_mnode *node = &t->nodes[n];

		for (d = 0; d < node->routes_len; d++) {
			icfab_u16 p = node->routes[d];

			if (p == ICFAB_MODEL_NO_PORT)
				continue;
			if (d >= t->nr_nodes)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_ROUTE,
					n, d, "route to a missing node");
			if (t->nodes[d].kind != ICFAB_MODEL_ENDPOINT)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_ROUTE,
					n, d, "route to a switch: only endpoints are destinations");
			if (d == n)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_ROUTE,
					n, d, "route from a node to itself");
			if (p >= node->nr_ports ||
			    node->port_out[p] == ICFAB_MODEL_NO_LINK)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_ROUTE,
					n, d, "route by a port without a link");
		}
	}
	return 0;
}

enum {
	WALK_UNKNOWN = 0,
	WALK_ON_PATH,		/* on the walk being followed now */
	WALK_REACHES,		/* known to reach the destination */
};

/*
 * For one destination, the next-hop choices of all nodes form a graph in
 * which every node has at most one successor. Every node that has a route
 * must reach @dst: walk from each node, marking the walk, until a node
 * already known to reach @dst (fine), a node on the current walk (a loop)
 * or a node without a route (a black hole). O(nodes) per destination.
 */
static int icfab_topo_check_walks(const struct icfab_mtopo *t, icfab_u32 dst,
				  icfab_u8 *mark, struct icfab_topo_err *err)
{
	icfab_u32 i, n;

	for (i = 0; i < t->nr_nodes; i++)
		mark[i] = WALK_UNKNOWN;
	mark[dst] = WALK_REACHES;

	for (i = 0; i < t->nr_nodes; i++) {
		icfab_u8 end;

		if (mark[i] != WALK_UNKNOWN ||
		    icfab_topo_next_port(t, i, dst) == ICFAB_MODEL_NO_PORT)
			continue;

		for (n = i; mark[n] == WALK_UNKNOWN;) {
			icfab_u16 p = icfab_topo_next_port(t, n, dst);

			if (p == ICFAB_MODEL_NO_PORT)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_ROUTE,
					n, dst, "a route towards this destination stops at this node");
			mark[n] = WALK_ON_PATH;
			n = t->links[t->nodes[n].port_out[p]].dst;
		}
		if (mark[n] == WALK_ON_PATH)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_ROUTE, n, dst,
					       "routing loop towards this destination");
		end = mark[n];
		for (n = i; mark[n] == WALK_ON_PATH;) {
			mark[n] = end;
			n = t->links[t->nodes[n].port_out[
				icfab_topo_next_port(t, n, dst)]].dst;
		}
	}
	return 0;
}

int icfab_topo_validate(struct icfab_mtopo *t,
			const struct icfab_topo_limits *lim,
			icfab_u8 *scratch, struct icfab_topo_err *err)
{
	icfab_u32 d;

	err->obj = ICFAB_TOPO_ERR_NONE;
	err->msg = ICFAB_NULL;

	if (icfab_topo_check_nodes(t, lim, err) ||
	    icfab_topo_check_links(t, lim, err) ||
	    icfab_topo_check_tier_refs(t, err) ||
	    icfab_topo_check_route_entries(t, err))
		return -1;
	icfab_topo_link_parallel(t);

	for (d = 0; d < t->nr_nodes; d++) {
		if (t->nodes[d].kind != ICFAB_MODEL_ENDPOINT)
			continue;
		if (icfab_topo_check_walks(t, d, scratch, err))
			return -1;
		if (lim->yield)
			lim->yield();
	}
	return 0;
}
