// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for kmod/model/topo.c: a valid topology passes, and each
 * rule of the commit validation rejects exactly the mistake it is for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "../topo.h"
#include "topo_build.h"


/*
 * A bidirectional ring of @n endpoints, each with two ports: port 0 to the
 * next node, port 1 to the previous. Routes go clockwise (port 0).
 */
static struct icfab_mtopo *ring(unsigned int n)
{
	struct icfab_mtopo *t = topo_new(n, 2 * n);

	for (unsigned int i = 0; i < n; i++) {
		add_node(t, ICFAB_MODEL_ENDPOINT, 2, 0);
		for (unsigned int d = 0; d < n; d++)
			if (d != i)
				t->nodes[i].routes[d] = 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		add_link(t, i, 0, (i + 1) % n, 1);
		add_link(t, (i + 1) % n, 1, i, 0);
	}
	return t;
}

/* Validate; return the message (NULL when valid). */
static const char *validate(struct icfab_mtopo *t, struct icfab_topo_err *err)
{
	icfab_u32 scratch[ICFAB_TOPO_SCRATCH_SIZE(64) / 4];

	return icfab_topo_validate(t, &lim, (icfab_u8 *)scratch, err) ? err->msg : NULL;
}

static int rejects(struct icfab_mtopo *t, const char *needle,
		   enum icfab_topo_err_obj obj, icfab_u32 id)
{
	struct icfab_topo_err err;
	const char *msg = validate(t, &err);

	if (!msg || !strstr(msg, needle) || err.obj != obj || err.id != id) {
		printf("# got: %s (obj %d id %u)\n", msg ? msg : "valid",
		       err.obj, err.id);
		return 0;
	}
	return 1;
}

/* Whether validation names member @port of node @id's set towards @dst. */
static int rejects_port(struct icfab_mtopo *t, const char *needle,
			icfab_u32 id, icfab_u32 dst, icfab_u32 port)
{
	struct icfab_topo_err err;

	if (!rejects(t, needle, ICFAB_TOPO_ERR_ROUTE_PORT, id))
		return 0;
	validate(t, &err);
	if (err.id2 != dst || err.id3 != port) {
		printf("# named destination %u port %u\n", err.id2, err.id3);
		return 0;
	}
	return 1;
}

/*
 * Next-hop sets (docs/TIMING.md, "Equal-cost next hops"): a leaf-spine
 * whose leaf A (node 4 of 2 sources, 2 destinations) spreads over 3
 * spines (nodes 6..8) is valid; every way a set can be wrong is named.
 */
static void test_sets(void)
{
	struct icfab_topo_err err;
	struct icfab_mtopo *t;
	const unsigned int a = 4, b = 5, s1 = 7;

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	ok(validate(t, &err) == NULL &&
	   icfab_topo_next_port(t, a, 2) == 0,
	   "a leaf's next-hop set over 3 spines is valid, and its primary is what a single-path reader takes");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_SPRAY);
	/* Spine 1 sends destination 3 back to leaf A: a loop through it. */
	t->links[2 + 3 + 1].dst = a;
	t->links[2 + 3 + 1].dst_port = 2;
	ok(rejects(t, "routing loop", ICFAB_TOPO_ERR_ROUTE, a),
	   "a set member whose path loops back by a plain route is refused as a loop at the node it reaches again");
	for (unsigned int d = 2; d < 4; d++)
		t->nodes[s1].routes[d] = add_set(t, s1,
			ICFAB_MODEL_MULTIPATH_FLOW, 1, (icfab_u16[]){ 1 });
	ok(rejects_port(t, "loops through this port", s1, 2, 1),
	   "closed by a set's member, the loop is named by node, destination and port");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	t->nodes[s1].routes[3] = ICFAB_MODEL_NO_PORT;
	ok(rejects_port(t, "a node with no route", a, 3, 1),
	   "a set member that reaches a node with no route (a black hole) is refused and named");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	t->nodes[a].sets[0].mode = 7;
	ok(rejects(t, "mode", ICFAB_TOPO_ERR_SET, a),
	   "a set of an unknown mode is refused");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	t->nodes[a].sets[0].nr = 0;
	ok(rejects(t, "no members", ICFAB_TOPO_ERR_SET, a),
	   "a set of no members is refused");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	t->nodes[a].sets[0].nr = ICFAB_MODEL_SET_PORTS + 1;
	ok(rejects(t, "too many", ICFAB_TOPO_ERR_SET, a),
	   "a set over %u members is refused", ICFAB_MODEL_SET_PORTS);
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	t->nodes[a].sets[0].ports[2] = 3;	/* leaf A has 3 ports */
	ok(rejects(t, "no link", ICFAB_TOPO_ERR_SET, a),
	   "a set member by a port without a link is refused");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	t->links[2 + 2].dst = 6;		/* A's port 2 now reaches spine 0 */
	t->links[2 + 2].dst_port = 1;
	ok(rejects(t, "one neighbour", ICFAB_TOPO_ERR_SET, a),
	   "two members to one neighbour are refused (parallel cables are a ring, not a set)");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	t->nodes[a].routes[3] = ICFAB_MODEL_SET_BASE + 1;
	ok(rejects(t, "does not have", ICFAB_TOPO_ERR_ROUTE, a),
	   "a route by a set the node does not have is refused");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	t->nodes[b].routes[2] = ICFAB_MODEL_NO_PORT;
	ok(rejects(t, "stops at this node", ICFAB_TOPO_ERR_ROUTE, b),
	   "a single-path route after a set that stops is reported as it always was");
	topo_free(t);
}

/*
 * Whether a topology sprays (icfab_topo_sprays()): the data path hands
 * the parallel engine steps given spray offsets only where nothing reads
 * them.
 */
static void test_sprays(void)
{
	struct icfab_topo_err err;
	struct icfab_mtopo *t;

	t = ring(8);
	ok(validate(t, &err) == NULL && !icfab_topo_sprays(t),
	   "a ring of single links does not spray");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_FLOW);
	ok(validate(t, &err) == NULL && !icfab_topo_sprays(t),
	   "next-hop sets by flow do not spray");
	topo_free(t);

	t = leafspine(3, 2, ICFAB_MODEL_MULTIPATH_SPRAY);
	ok(validate(t, &err) == NULL && icfab_topo_sprays(t),
	   "next-hop sets in spray mode spray");
	topo_free(t);
}

int main(void)
{
	struct icfab_topo_err err;
	struct icfab_mtopo *t;

	printf("TAP version 13\n");

	t = ring(8);
	ok(validate(t, &err) == NULL, "a routed ring of 8 is valid");
	ok(t->nodes[3].port_out[0] == 6 && t->nodes[4].port_in[1] == 6,
	   "validation derives the port-to-link maps");
	topo_free(t);

	t = ring(8);
	t->nodes[5].present = 0;
	ok(rejects(t, "dense", ICFAB_TOPO_ERR_NODE, 5),
	   "a missing node id is rejected and named");
	topo_free(t);

	t = ring(4);
	t->nodes[2].nr_ports = 0;
	ok(rejects(t, "port count", ICFAB_TOPO_ERR_NODE, 2),
	   "a node without ports is rejected");
	topo_free(t);

	t = ring(4);
	t->nodes[1].kind = ICFAB_MODEL_SWITCH;
	t->nodes[1].colors = 65;
	ok(rejects(t, "color", ICFAB_TOPO_ERR_NODE, 1),
	   "a color table over the limit is rejected");
	topo_free(t);

	t = ring(4);
	t->links[3].dst = 9;
	ok(rejects(t, "missing node", ICFAB_TOPO_ERR_LINK, 3),
	   "a link to a missing node is rejected and named");
	topo_free(t);

	t = ring(4);
	t->links[2].dst = t->links[2].src;
	ok(rejects(t, "itself", ICFAB_TOPO_ERR_LINK, 2),
	   "a self loop is rejected");
	topo_free(t);

	t = ring(4);
	t->links[4].src_port = 2;
	ok(rejects(t, "port beyond", ICFAB_TOPO_ERR_LINK, 4),
	   "a port beyond the node's count is rejected");
	topo_free(t);

	t = ring(4);
	/* Link 2 (1->2 by port 0) now leaves 1 by port 1, taken by link 1. */
	t->links[2].src_port = 1;
	ok(rejects(t, "leaves by this source port", ICFAB_TOPO_ERR_LINK, 2),
	   "two links leaving by one port are rejected");
	topo_free(t);

	t = ring(4);
	/* Link 2 (1->2, into port 1) now arrives at 2's port 0 instead, where link 5 arrives. */
	t->links[2].dst_port = 0;
	ok(rejects(t, "arrives at this destination port", ICFAB_TOPO_ERR_LINK, 5),
	   "two links arriving at one port are rejected");
	topo_free(t);

	t = ring(4);
	t->nodes[0].routes[2] = 1;	/* counter-clockwise: 0 -> 3 -> 0 ... */
	t->nodes[3].routes[2] = 0;	/* ...and 3 goes back clockwise to 0 */
	ok(rejects(t, "loop", ICFAB_TOPO_ERR_ROUTE, 0) ||
	   rejects(t, "loop", ICFAB_TOPO_ERR_ROUTE, 3),
	   "a routing loop is rejected and the destination named");
	topo_free(t);

	t = ring(4);
	t->nodes[2].routes[0] = ICFAB_MODEL_NO_PORT;	/* 1 -> 2 -> (nothing) */
	ok(rejects(t, "stops", ICFAB_TOPO_ERR_ROUTE, 2),
	   "a route that stops short of its destination is rejected");
	topo_free(t);

	t = ring(4);
	for (unsigned int n = 0; n < 4; n++)
		t->nodes[n].routes[3] = ICFAB_MODEL_NO_PORT;
	ok(validate(t, &err) == NULL,
	   "no route at all to a destination is allowed (unreachable)");
	topo_free(t);

	t = ring(4);
	t->links[0].present = 0;	/* 0 -> 1 clockwise is gone */
	ok(rejects(t, "without a link", ICFAB_TOPO_ERR_ROUTE, 0),
	   "a route by a port without a link is rejected");
	topo_free(t);

	t = ring(4);
	t->nodes[2].kind = ICFAB_MODEL_SWITCH;
	ok(rejects(t, "switch", ICFAB_TOPO_ERR_ROUTE, 0),
	   "a route to a switch is rejected");
	topo_free(t);

	t = ring(4);
	t->nodes[1].routes[1] = 0;
	ok(rejects(t, "itself", ICFAB_TOPO_ERR_ROUTE, 1),
	   "a route from a node to itself is rejected");
	topo_free(t);

	test_sets();
	test_sprays();
	return done();
}
