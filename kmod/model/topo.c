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
	err->id3 = 0;
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

/*
 * @node's next-hop sets: 1..ICFAB_MODEL_SET_PORTS members of a known
 * mode, each a port with a link, no two to one neighbour.
 */
static int icfab_topo_check_sets(const struct icfab_mtopo *t, icfab_u32 node,
				 struct icfab_topo_err *err)
{
	const struct icfab_mnode *n = &t->nodes[node];
	icfab_u32 s, i, j;

	if (n->nr_sets > ICFAB_MODEL_SETS_MAX)
		return icfab_topo_fail(err, ICFAB_TOPO_ERR_NODE, node, 0,
				       "more next-hop sets than a node may hold");
	for (s = 0; s < n->nr_sets; s++) {
		const struct icfab_mset *set = &n->sets[s];

		if (!set->nr || set->nr > ICFAB_MODEL_SET_PORTS)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_SET, node, s,
				"a next-hop set has no members or too many");
		if (set->mode != ICFAB_MODEL_MULTIPATH_FLOW &&
		    set->mode != ICFAB_MODEL_MULTIPATH_SPRAY)
			return icfab_topo_fail(err, ICFAB_TOPO_ERR_SET, node, s,
				"a next-hop set's mode is neither flow nor spray");
		for (i = 0; i < set->nr; i++) {
			icfab_u16 p = set->ports[i];

			if (p >= n->nr_ports ||
			    n->port_out[p] == ICFAB_MODEL_NO_LINK)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_SET,
					node, s, "a next-hop set's port has no link");
			for (j = 0; j < i; j++)
				if (t->links[n->port_out[set->ports[j]]].dst ==
				    t->links[n->port_out[p]].dst)
					return icfab_topo_fail(err,
						ICFAB_TOPO_ERR_SET, node, s,
						"two members of a next-hop set reach one neighbour");
		}
	}
	return 0;
}

static int icfab_topo_check_route_entries(const struct icfab_mtopo *t,
					  struct icfab_topo_err *err)
{
	icfab_u32 n, d;

	for (n = 0; n < t->nr_nodes; n++) {
		const struct icfab_mnode *node = &t->nodes[n];

		if (icfab_topo_check_sets(t, n, err))
			return -1;
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
			if (p >= ICFAB_MODEL_SET_BASE) {
				if (!icfab_topo_entry_set(t, n, p))
					return icfab_topo_fail(err,
						ICFAB_TOPO_ERR_ROUTE, n, d,
						"route by a next-hop set the node does not have");
				continue;
			}
			if (p >= node->nr_ports ||
			    node->port_out[p] == ICFAB_MODEL_NO_LINK)
				return icfab_topo_fail(err, ICFAB_TOPO_ERR_ROUTE,
					n, d, "route by a port without a link");
		}
	}
	return 0;
}

/*
 * Marks of the search, one byte a node: unknown, known to reach the
 * destination, or on the search path, WALK_ON_PATH + the member being
 * followed (a plain route is a set of one).
 */
enum {
	WALK_UNKNOWN = 0,
	WALK_REACHES,		/* known to reach the destination */
	WALK_ON_PATH,		/* ... up to WALK_ON_PATH + ICFAB_MODEL_SET_PORTS */
};

/* Member @i of @node's entry @e towards a destination: its port. */
static icfab_u16 walk_port(const struct icfab_mtopo *t, icfab_u32 node,
			   icfab_u16 e, icfab_u32 i)
{
	const struct icfab_mset *s = icfab_topo_entry_set(t, node, e);

	return s ? s->ports[i] : e;
}

static icfab_u32 walk_members(const struct icfab_mtopo *t, icfab_u32 node,
			      icfab_u16 e)
{
	const struct icfab_mset *s = icfab_topo_entry_set(t, node, e);

	return s ? s->nr : 1;
}

/*
 * A member of @node's entry @e leads to a loop or a black hole: say
 * which. A plain route is reported as it always was, at the node that
 * closes the loop or has no route; a set's member by the port it is.
 */
static int walk_fail(const struct icfab_mtopo *t, icfab_u32 node,
		     icfab_u16 e, icfab_u16 port, icfab_u32 far,
		     icfab_u32 dst, int loop, struct icfab_topo_err *err)
{
	if (!icfab_topo_entry_set(t, node, e))
		return icfab_topo_fail(err, ICFAB_TOPO_ERR_ROUTE, far, dst,
			loop ? "routing loop towards this destination" :
			"a route towards this destination stops at this node");
	icfab_topo_fail(err, ICFAB_TOPO_ERR_ROUTE_PORT, node, dst,
		loop ? "a next-hop set towards this destination loops through this port" :
		"a next-hop set towards this destination reaches, by this port, a node with no route");
	err->id3 = port;
	return -1;
}

/*
 * For one destination, each node's successors are the far ends of its
 * entry's members (one for a plain port). Every node that has a route
 * must reach @dst along every choice: a depth-first search from each
 * node not yet known to, with an explicit stack in @stack, stops at a
 * member whose far end is on the search path (a loop) or has no route
 * (a black hole). Over plain routes it is the walk it always was: one
 * successor a node, O(nodes) per destination; O(nodes + members) with
 * sets.
 */
static int icfab_topo_check_walks(const struct icfab_mtopo *t, icfab_u32 dst,
				  icfab_u8 *mark, icfab_u32 *stack,
				  struct icfab_topo_err *err)
{
	icfab_u32 i, sp;

	for (i = 0; i < t->nr_nodes; i++)
		mark[i] = WALK_UNKNOWN;
	mark[dst] = WALK_REACHES;

	for (i = 0; i < t->nr_nodes; i++) {
		if (mark[i] != WALK_UNKNOWN ||
		    icfab_topo_route_entry(t, i, dst) == ICFAB_MODEL_NO_PORT)
			continue;
		stack[0] = i;
		sp = 1;
		mark[i] = WALK_ON_PATH;
		while (sp) {
			icfab_u32 n = stack[sp - 1], k = mark[n] - WALK_ON_PATH;
			icfab_u16 e = icfab_topo_route_entry(t, n, dst), p;
			icfab_u32 far;

			if (k == walk_members(t, n, e)) {
				mark[n] = WALK_REACHES;
				sp--;
				continue;
			}
			mark[n]++;
			p = walk_port(t, n, e, k);
			far = t->links[t->nodes[n].port_out[p]].dst;
			if (mark[far] == WALK_REACHES)
				continue;
			if (mark[far] != WALK_UNKNOWN)
				return walk_fail(t, n, e, p, far, dst, 1, err);
			if (icfab_topo_route_entry(t, far, dst) ==
			    ICFAB_MODEL_NO_PORT)
				return walk_fail(t, n, e, p, far, dst, 0, err);
			mark[far] = WALK_ON_PATH;
			stack[sp++] = far;
		}
	}
	return 0;
}

int icfab_topo_validate(struct icfab_mtopo *t,
			const struct icfab_topo_limits *lim,
			icfab_u8 *scratch, struct icfab_topo_err *err)
{
	icfab_u32 d, *stack;

	err->obj = ICFAB_TOPO_ERR_NONE;
	err->msg = ICFAB_NULL;

	if (icfab_topo_check_nodes(t, lim, err) ||
	    icfab_topo_check_links(t, lim, err) ||
	    icfab_topo_check_tier_refs(t, err) ||
	    icfab_topo_check_route_entries(t, err))
		return -1;
	icfab_topo_link_parallel(t);
	stack = (icfab_u32 *)(scratch + (t->nr_nodes + 3) / 4 * 4);

	for (d = 0; d < t->nr_nodes; d++) {
		if (t->nodes[d].kind != ICFAB_MODEL_ENDPOINT)
			continue;
		if (icfab_topo_check_walks(t, d, scratch, stack, err))
			return -1;
		if (lim->yield)
			lim->yield();
	}
	return 0;
}

int icfab_topo_sprays(const struct icfab_mtopo *t)
{
	icfab_u32 i, s;

	for (i = 0; i < t->links_cap; i++) {
		const struct icfab_mlink *l = &t->links[i];

		if (l->present && l->nr_par > 1 &&
		    l->multipath == ICFAB_MODEL_MULTIPATH_SPRAY)
			return 1;
	}
	for (i = 0; i < t->nodes_cap; i++) {
		const struct icfab_mnode *n = &t->nodes[i];

		for (s = 0; n->present && s < n->nr_sets; s++)
			if (n->sets[s].mode == ICFAB_MODEL_MULTIPATH_SPRAY)
				return 1;
	}
	return 0;
}
