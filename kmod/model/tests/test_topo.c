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


static const struct icfab_topo_limits lim = {
	.max_endpoints = 4096, .max_switches = 1024, .max_links = 65536,
	.max_ports = 2048, .max_colors = 64,
};

/*
 * A bidirectional ring of @n endpoints, each with two ports: port 0 to the
 * next node, port 1 to the previous. Routes go clockwise (port 0).
 */
static struct icfab_mtopo *ring(unsigned int n)
{
	struct icfab_mtopo *t = calloc(1, sizeof(*t));
	unsigned int i, d, l = 0;

	t->nodes_cap = n;
	t->links_cap = 2 * n;
	t->nodes = calloc(n, sizeof(*t->nodes));
	t->links = calloc(2 * n, sizeof(*t->links));
	for (i = 0; i < n; i++) {
		struct icfab_mnode *nd = &t->nodes[i];

		nd->present = 1;
		nd->kind = ICFAB_MODEL_ENDPOINT;
		nd->nr_ports = 2;
		nd->port_out = calloc(2, sizeof(icfab_u32));
		nd->port_in = calloc(2, sizeof(icfab_u32));
		nd->routes_len = n;
		nd->routes = malloc(n * sizeof(icfab_u16));
		for (d = 0; d < n; d++)
			nd->routes[d] = d == i ? ICFAB_MODEL_NO_PORT : 0;
	}
	for (i = 0; i < n; i++) {
		struct icfab_mlink *fw = &t->links[l++], *bw = &t->links[l++];

		*fw = (struct icfab_mlink){ .present = 1, .src = i, .src_port = 0,
			.dst = (i + 1) % n, .dst_port = 1, .bandwidth = 1000,
			.latency_ps = 1 };
		*bw = (struct icfab_mlink){ .present = 1, .src = (i + 1) % n,
			.src_port = 1, .dst = i, .dst_port = 0, .bandwidth = 1000,
			.latency_ps = 1 };
	}
	t->nr_nodes = t->nr_endpoints = n;
	t->nr_links = 2 * n;
	return t;
}

static void ring_free(struct icfab_mtopo *t)
{
	for (unsigned int i = 0; i < t->nodes_cap; i++) {
		free(t->nodes[i].port_out);
		free(t->nodes[i].port_in);
		free(t->nodes[i].routes);
	}
	free(t->nodes);
	free(t->links);
	free(t);
}

/* Validate; return the message (NULL when valid). */
static const char *validate(struct icfab_mtopo *t, struct icfab_topo_err *err)
{
	icfab_u8 scratch[64];

	return icfab_topo_validate(t, &lim, scratch, err) ? err->msg : NULL;
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

int main(void)
{
	struct icfab_topo_err err;
	struct icfab_mtopo *t;

	printf("TAP version 13\n");

	t = ring(8);
	ok(validate(t, &err) == NULL, "a routed ring of 8 is valid");
	ok(t->nodes[3].port_out[0] == 6 && t->nodes[4].port_in[1] == 6,
	   "validation derives the port-to-link maps");
	ring_free(t);

	t = ring(8);
	t->nodes[5].present = 0;
	ok(rejects(t, "dense", ICFAB_TOPO_ERR_NODE, 5),
	   "a missing node id is rejected and named");
	ring_free(t);

	t = ring(4);
	t->nodes[2].nr_ports = 0;
	ok(rejects(t, "port count", ICFAB_TOPO_ERR_NODE, 2),
	   "a node without ports is rejected");
	ring_free(t);

	t = ring(4);
	t->nodes[1].kind = ICFAB_MODEL_SWITCH;
	t->nodes[1].colors = 65;
	ok(rejects(t, "color", ICFAB_TOPO_ERR_NODE, 1),
	   "a color table over the limit is rejected");
	ring_free(t);

	t = ring(4);
	t->links[3].dst = 9;
	ok(rejects(t, "missing node", ICFAB_TOPO_ERR_LINK, 3),
	   "a link to a missing node is rejected and named");
	ring_free(t);

	t = ring(4);
	t->links[2].dst = t->links[2].src;
	ok(rejects(t, "itself", ICFAB_TOPO_ERR_LINK, 2),
	   "a self loop is rejected");
	ring_free(t);

	t = ring(4);
	t->links[4].src_port = 2;
	ok(rejects(t, "port beyond", ICFAB_TOPO_ERR_LINK, 4),
	   "a port beyond the node's count is rejected");
	ring_free(t);

	t = ring(4);
	/* Link 2 (1->2 by port 0) now leaves 1 by port 1, taken by link 1. */
	t->links[2].src_port = 1;
	ok(rejects(t, "leaves by this source port", ICFAB_TOPO_ERR_LINK, 2),
	   "two links leaving by one port are rejected");
	ring_free(t);

	t = ring(4);
	/* Link 2 (1->2, into port 1) now arrives at 2's port 0 instead, where link 5 arrives. */
	t->links[2].dst_port = 0;
	ok(rejects(t, "arrives at this destination port", ICFAB_TOPO_ERR_LINK, 5),
	   "two links arriving at one port are rejected");
	ring_free(t);

	t = ring(4);
	t->nodes[0].routes[2] = 1;	/* counter-clockwise: 0 -> 3 -> 0 ... */
	t->nodes[3].routes[2] = 0;	/* ...and 3 goes back clockwise to 0 */
	ok(rejects(t, "loop", ICFAB_TOPO_ERR_ROUTE, 0) ||
	   rejects(t, "loop", ICFAB_TOPO_ERR_ROUTE, 3),
	   "a routing loop is rejected and the destination named");
	ring_free(t);

	t = ring(4);
	t->nodes[2].routes[0] = ICFAB_MODEL_NO_PORT;	/* 1 -> 2 -> (nothing) */
	ok(rejects(t, "stops", ICFAB_TOPO_ERR_ROUTE, 2),
	   "a route that stops short of its destination is rejected");
	ring_free(t);

	t = ring(4);
	for (unsigned int n = 0; n < 4; n++)
		t->nodes[n].routes[3] = ICFAB_MODEL_NO_PORT;
	ok(validate(t, &err) == NULL,
	   "no route at all to a destination is allowed (unreachable)");
	ring_free(t);

	t = ring(4);
	t->links[0].present = 0;	/* 0 -> 1 clockwise is gone */
	ok(rejects(t, "without a link", ICFAB_TOPO_ERR_ROUTE, 0),
	   "a route by a port without a link is rejected");
	ring_free(t);

	t = ring(4);
	t->nodes[2].kind = ICFAB_MODEL_SWITCH;
	ok(rejects(t, "switch", ICFAB_TOPO_ERR_ROUTE, 0),
	   "a route to a switch is rejected");
	ring_free(t);

	t = ring(4);
	t->nodes[1].routes[1] = 0;
	ok(rejects(t, "itself", ICFAB_TOPO_ERR_ROUTE, 1),
	   "a route from a node to itself is rejected");
	ring_free(t);

	return done();
}
