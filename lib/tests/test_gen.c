// SPDX-License-Identifier: GPL-2.0
/* Generators: node and link counts, port counts, degrees. */
#include "topo_test.h"

static unsigned int count_class(const struct topo *t, uint32_t class)
{
	unsigned int n = 0;
	uint32_t i;

	for (i = 0; i < t->nr_links; i++)
		n += t->links[i].class == class;
	return n;
}

/* Nodes whose count of distinct neighbours is not @want. */
static unsigned int nodes_not_of_degree(const struct topo *t, unsigned int want)
{
	unsigned int bad = 0;
	uint32_t i;

	for (i = 0; i < t->nr_nodes; i++)
		bad += neighbours(t, i) != want;
	return bad;
}

/* Nodes with more than @max ports. */
static unsigned int nodes_above_ports(const struct topo *t, uint32_t max)
{
	unsigned int bad = 0;
	uint32_t i;

	for (i = 0; i < t->nr_nodes; i++)
		bad += t->nodes[i].nr_ports > max;
	return bad;
}

/* Every link's reverse exists on the same ports (full-duplex cables). */
static int all_duplex(const struct topo *t)
{
	uint32_t i;

	for (i = 0; i < t->nr_links; i++) {
		const struct topo_link *l = &t->links[i], *r;

		if (l->peer == TOPO_NONE)
			return 0;
		r = &t->links[l->peer];
		if (r->src_node != l->dst_node || r->src_port != l->dst_port ||
		    r->dst_node != l->src_node || r->dst_port != l->src_port)
			return 0;
	}
	return 1;
}

static void test_torus(void)
{
	struct topo *t = load("topology:\n  torus: {dims: [4, 4, 4], bandwidth: 50GB/s}\n");

	ok(t && t->nr_nodes == 64 && t->nr_links == 384, "3D torus 4x4x4: 64 nodes, 384 links");
	/* 6 distinct neighbours take at least 6 ports */
	ok(t && !nodes_not_of_degree(t, 6) && !nodes_above_ports(t, 6),
	   "3D torus: every node has 6 neighbours on 6 ports");
	ok(t && all_duplex(t), "3D torus: cables are duplex, same ports both ways");
	topo_free(t);

	t = load("topology:\n  torus: {dims: [2, 3], bandwidth: 1GB/s}\n");
	ok(t && t->nr_links == 2 * (3 + 6) && !nodes_not_of_degree(t, 3),
	   "torus 2x3: a size-2 dimension has one cable, not two (3 neighbours)");
	topo_free(t);

	t = load("topology:\n  torus: {dims: [3, 3, 3, 3], bandwidth: 1GB/s}\n");
	ok(t && t->nr_nodes == 81 && !nodes_not_of_degree(t, 8),
	   "4D torus 3^4: 8 neighbours each");
	topo_free(t);

	t = load("topology:\n  torus: {dims: [8, 8], bandwidth: 1GB/s, class: ici,\n"
		 "    blocks: [4, 4], block_link: {class: ocs, latency: 2us}}\n");
	ok(t && t->nr_links == 256 && count_class(t, ICFAB_LINK_CLASS_OCS) == 64 &&
	   count_class(t, ICFAB_LINK_CLASS_ICI) == 192,
	   "torus 8x8 in 4x4 blocks: 64 of 256 links cross blocks (ocs)");
	topo_free(t);
}

static void test_ring_mesh(void)
{
	struct topo *t = load("topology:\n  ring: {nodes: 8, bandwidth: 1GB/s}\n");

	ok(t && t->nr_links == 16 && !nodes_not_of_degree(t, 2),
	   "ring 8: 16 links, 2 neighbours each");
	topo_free(t);

	t = load("topology:\n  mesh: {dims: [4, 3], bandwidth: 1GB/s}\n");
	ok(t && t->nr_nodes == 12 && t->nr_links == 34, "mesh 4x3: 12 nodes, 34 links");
	ok(t && neighbours(t, node_id(t, "pe0_0")) == 2 &&
	   neighbours(t, node_id(t, "pe1_0")) == 3 &&
	   neighbours(t, node_id(t, "pe1_1")) == 4,
	   "mesh: corner 2, edge 3, interior 4 neighbours");
	topo_free(t);

	t = load("topology:\n  mesh: {dims: [3, 3], routers: true, bandwidth: 1GB/s}\n");
	ok(t && t->nr_endpoints == 9 && t->nr_switches == 9 &&
	   t->nr_links == 2 * 9 + 24, "mesh 3x3 with routers: 9 PEs, 9 routers, 42 links");
	ok(t && t->nodes[node_id(t, "rt1_1")].nr_ports == 5 &&
	   t->nodes[node_id(t, "pe1_1")].nr_ports == 1 &&
	   t->nodes[node_id(t, "rt0_0")].nr_ports == 3,
	   "mesh routers: interior router 5 ports, PE 1 port, corner router 3");
	topo_free(t);
}

/* SuperMesh Alter with routers on a DIMS ("4, 4") mesh. */
static struct topo *load_alter(const char *dims)
{
	char yaml[128];

	snprintf(yaml, sizeof(yaml),
		 "topology:\n  supermesh: {dims: [%s], variant: alter, routers: true,\n"
		 "    bandwidth: 1GB/s}\n", dims);
	return load(yaml);
}

static void test_supermesh(void)
{
	struct topo *t = load("topology:\n  supermesh: {dims: [4, 4], variant: bi, bandwidth: 1GB/s}\n");

	ok(t && t->nr_links == 48 + 24, "supermesh bi 4x4: 48 mesh + 24 boundary links");
	ok(t && out_links(t, node_id(t, "chiplet0_0")) == 4 &&
	   out_links(t, node_id(t, "chiplet3_3")) == 4,
	   "supermesh bi: a corner goes from 2 to 4 links");
	ok(t && out_links(t, node_id(t, "chiplet1_0")) == 5 &&
	   out_links(t, node_id(t, "chiplet1_1")) == 4,
	   "supermesh bi: edge node 3 -> 5 links, interior stays 4");
	topo_free(t);

	t = load_alter("4, 4");
	ok(t && !nodes_above_ports(t, 5),
	   "supermesh alter with routers: no router above 5 ports");
	ok(t && out_links(t, node_id(t, "rt0_0")) == 5 &&
	   out_links(t, node_id(t, "rt3_3")) == 5,
	   "supermesh alter: corners get 4 mesh links (+1 local)");
	ok(t && t->nr_links == 2 * 16 + 48 + 16,
	   "supermesh alter 4x4: 8 extra cables (2 per side)");
	topo_free(t);

	t = load_alter("6, 5");
	ok(t && !nodes_above_ports(t, 5),
	   "supermesh alter 6x5 (odd side): still at most 5 ports");
	topo_free(t);
}

static void test_switch(void)
{
	struct topo *t = load("topology:\n  switch: {endpoints: 8, bandwidth: 1GB/s}\n");
	uint32_t i, bad = 0;

	ok(t && t->nr_endpoints == 8 && t->nr_switches == 1 && t->nr_links == 16 &&
	   t->nodes[node_id(t, "sw")].nr_ports == 8 &&
	   t->nodes[node_id(t, "ep3")].nr_ports == 1,
	   "switch 8: 1 switch of 8 ports, 16 links, 1 port per endpoint");
	topo_free(t);

	t = load("topology:\n  switch: {endpoints: 100, radix: 16, bandwidth: 1GB/s}\n");
	ok(t && t->nr_switches == 13 + 7, "switch 100 on radix 16: 13 leaves, 7 spines");
	for (i = 0; t && i < t->nr_nodes; i++)
		bad += t->nodes[i].kind == ICFAB_NODE_SWITCH && out_links(t, i) > 16;
	ok(t && !bad && t->nr_links == 2 * (100 + 13 * 8),
	   "leaf/spine: no switch uses more than its 16 ports; 8 uplinks per leaf");
	topo_free(t);
}

static void test_exchange(void)
{
	struct topo *t = load("topology:\n  exchange: {tiles: 5, bandwidth: 1GB/s}\n");

	ok(t && t->nr_switches == 0 && t->nr_links == 20 &&
	   !nodes_not_of_degree(t, 4),
	   "exchange 5 (direct): every pair cabled, 20 links");
	topo_free(t);

	t = load("topology:\n  exchange: {tiles: 4, links_per_pair: 3, bandwidth: 1GB/s}\n");
	ok(t && t->nr_links == 36 && t->nodes[0].nr_ports == 9,
	   "exchange 4 x 3 parallel cables: 36 links, 9 ports each");
	topo_free(t);

	t = load("topology:\n  exchange: {tiles: 100, bandwidth: 1GB/s}\n");
	ok(t && t->nr_switches == 1 && t->nr_links == 200 &&
	   t->nodes[node_id(t, "exchange")].nr_ports == 100,
	   "exchange 100 (auto -> crossbar): one 100-port crossbar");
	topo_free(t);
}

static void test_hier(void)
{
	struct topo *t = load("topology:\n  hierarchical:\n    nodes: 3\n    per_node: 4\n"
			      "    scale_up: {bandwidth: 160GB/s, class: nvlink}\n"
			      "    scale_out: {bandwidth: 50GB/s, class: nic}\n");
	uint32_t i, bad = 0;

	ok(t && t->nr_endpoints == 12 && t->nr_switches == 4 && t->nr_links == 48,
	   "hierarchical 3x4: 12 GPUs, 3 scale-up switches + 1 network, 48 links");
	for (i = 0; t && i < t->nr_endpoints; i++)
		bad += t->nodes[i].nr_ports != 2;
	ok(t && !bad && count_class(t, ICFAB_LINK_CLASS_NIC) == 24 &&
	   count_class(t, ICFAB_LINK_CLASS_NVLINK) == 24,
	   "hierarchical: each GPU has an NVLink port and a NIC");
	topo_free(t);

	t = load("topology:\n  hierarchical:\n    nodes: 4\n    per_node: 8\n    radix: 8\n"
		 "    scale_up: {bandwidth: 160GB/s}\n    scale_out: {bandwidth: 50GB/s}\n");
	ok(t && t->nr_switches == 4 + 8 + 4 && node_id(t, "leaf7") >= 0 &&
	   node_id(t, "spine3") >= 0,
	   "hierarchical 4x8 on radix 8: 8 leaves, 4 spines");
	topo_free(t);
}

int main(void)
{
	test_torus();
	test_ring_mesh();
	test_supermesh();
	test_switch();
	test_exchange();
	test_hier();
	return done();
}
