/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Model topologies built by hand for the host tests of kmod/model/: the
 * builders test_topo.c, test_engine.c and test_tier.c share, so that a
 * change to struct icfab_mtopo is made in one place.
 */
#ifndef ICFAB_MODEL_TESTS_TOPO_BUILD_H
#define ICFAB_MODEL_TESTS_TOPO_BUILD_H

#include <stdlib.h>

#include "../topo.h"

/* Every link add_link() makes: 4 KiB segments cross it in SER. */
#define BW	50000000000ULL		/* bytes/s: 4 KiB in 81920 ps */
#define LAT	100000ULL		/* ps */
#define SEG	4096U			/* bytes */
#define SER	81920ULL		/* ps, SEG at BW */

static const struct icfab_topo_limits lim = {
	.max_endpoints = 4096, .max_switches = 1024, .max_links = 65536,
	.max_ports = 2048, .max_colors = 64,
};

/* Room for @nodes nodes and @links links; add_node()/add_link() fill it. */
static inline struct icfab_mtopo *topo_new(unsigned int nodes,
					   unsigned int links)
{
	struct icfab_mtopo *t = calloc(1, sizeof(*t));

	t->nodes_cap = nodes;
	t->links_cap = links;
	t->nodes = calloc(nodes, sizeof(*t->nodes));
	t->links = calloc(links, sizeof(*t->links));
	return t;
}

/* The next node, with no route to anywhere yet. */
static inline void add_node(struct icfab_mtopo *t, unsigned int kind,
			    unsigned int ports, unsigned int dma)
{
	struct icfab_mnode *n = &t->nodes[t->nr_nodes++];

	n->present = 1;
	n->kind = kind;
	n->nr_ports = ports;
	n->dma_engines = dma;
	n->port_out = calloc(ports, sizeof(icfab_u32));
	n->port_in = calloc(ports, sizeof(icfab_u32));
	n->routes_len = t->nodes_cap;
	n->routes = malloc(t->nodes_cap * sizeof(icfab_u16));
	for (unsigned int d = 0; d < t->nodes_cap; d++)
		n->routes[d] = ICFAB_MODEL_NO_PORT;
	if (kind == ICFAB_MODEL_ENDPOINT)
		t->nr_endpoints++;
	else
		t->nr_switches++;
}

/* The next link, src:sport -> dst:dport, at BW and LAT. */
static inline void add_link(struct icfab_mtopo *t, unsigned int src,
			    unsigned int sport, unsigned int dst,
			    unsigned int dport)
{
	t->links[t->nr_links++] = (struct icfab_mlink){
		.present = 1, .src = src, .src_port = sport, .dst = dst,
		.dst_port = dport, .bandwidth = BW, .latency_ps = LAT,
	};
}

static inline void topo_free(struct icfab_mtopo *t)
{
	for (unsigned int i = 0; i < t->nodes_cap; i++) {
		free(t->nodes[i].port_out);
		free(t->nodes[i].port_in);
		free(t->nodes[i].routes);
		free(t->nodes[i].sets);
	}
	free(t->nodes);
	free(t->links);
	free(t);
}

/*
 * Endpoints 1..n on switch 0. Link 2(i-1) is the injection link i -> 0,
 * link 2(i-1)+1 the ejection link 0 -> i; the switch reaches i by port i-1.
 * Room is left for @spare links after the 2n of the star.
 */
static inline struct icfab_mtopo *star_spare(unsigned int n, unsigned int dma,
					     unsigned int spare)
{
	struct icfab_mtopo *t = topo_new(n + 1, 2 * n + spare);

	add_node(t, ICFAB_MODEL_SWITCH, n, 0);
	for (unsigned int i = 1; i <= n; i++)
		add_node(t, ICFAB_MODEL_ENDPOINT, 1, dma);
	for (unsigned int i = 1; i <= n; i++) {
		add_link(t, i, 0, 0, i - 1);
		add_link(t, 0, i - 1, i, 0);
	}
	for (unsigned int i = 1; i <= n; i++) {
		t->nodes[0].routes[i] = i - 1;
		for (unsigned int d = 1; d <= n; d++)
			if (d != i)
				t->nodes[i].routes[d] = 0;
	}
	return t;
}

/*
 * Give @node a next-hop set more, of @mode over its ports @ports[0..nr-1]
 * (the first the primary); returns the route entry that names it.
 */
static inline icfab_u16 add_set(struct icfab_mtopo *t, unsigned int node,
				icfab_u8 mode, unsigned int nr,
				const icfab_u16 *ports)
{
	struct icfab_mnode *n = &t->nodes[node];
	struct icfab_mset *s;

	n->sets = realloc(n->sets, (n->nr_sets + 1) * sizeof(*n->sets));
	s = &n->sets[n->nr_sets];
	*s = (struct icfab_mset){ .mode = mode, .nr = (icfab_u8)nr };
	for (unsigned int i = 0; i < nr; i++)
		s->ports[i] = ports[i];
	return (icfab_u16)(ICFAB_MODEL_SET_BASE + n->nr_sets++);
}

/*
 * A leaf-spine fabric, one way: sources 0..m-1 on leaf A (node 2m),
 * destinations m..2m-1 on leaf B (node 2m + 1), spines 2m + 2 + j for
 * j < k. Links: source i -> A (link i, A's in-port i), A's port j ->
 * spine j (link m + j), spine j's port 1 -> B's in-port j (link m + k +
 * j), B's port i -> destination m + i (link m + 2k + i). A leaves for
 * every destination by one next-hop set of @mode over its k uplinks
 * (primary: spine 0); the rest is single-path.
 */
static inline struct icfab_mtopo *leafspine(unsigned int k, unsigned int m,
					    icfab_u8 mode)
{
	struct icfab_mtopo *t = topo_new(2 * m + 2 + k, 2 * m + 2 * k);
	unsigned int a = 2 * m, b = 2 * m + 1, wide = k > m ? k : m;
	icfab_u16 ports[ICFAB_MODEL_SET_PORTS], set;

	for (unsigned int i = 0; i < 2 * m; i++)
		add_node(t, ICFAB_MODEL_ENDPOINT, 1, 1);
	add_node(t, ICFAB_MODEL_SWITCH, wide, 0);
	add_node(t, ICFAB_MODEL_SWITCH, wide, 0);
	for (unsigned int j = 0; j < k; j++)
		add_node(t, ICFAB_MODEL_SWITCH, 2, 0);
	for (unsigned int i = 0; i < m; i++)
		add_link(t, i, 0, a, i);
	for (unsigned int j = 0; j < k; j++)
		add_link(t, a, j, a + 2 + j, 0);
	for (unsigned int j = 0; j < k; j++)
		add_link(t, a + 2 + j, 1, b, j);
	for (unsigned int i = 0; i < m; i++)
		add_link(t, b, i, m + i, 0);
	for (unsigned int j = 0; j < k; j++)
		ports[j] = (icfab_u16)j;
	set = add_set(t, a, mode, k, ports);
	for (unsigned int d = m; d < 2 * m; d++) {
		for (unsigned int i = 0; i < m; i++)
			t->nodes[i].routes[d] = 0;
		t->nodes[a].routes[d] = set;
		for (unsigned int j = 0; j < k; j++)
			t->nodes[a + 2 + j].routes[d] = 1;
		t->nodes[b].routes[d] = (icfab_u16)(d - m);
	}
	return t;
}

#endif /* ICFAB_MODEL_TESTS_TOPO_BUILD_H */
