// SPDX-License-Identifier: GPL-2.0
/*
 * Routes: walk the tables hop by hop from every source endpoint to every
 * destination endpoint and compare with known distances; after link
 * failures, check that nothing loops or crosses a DOWN link.
 */
#include <errno.h>

#include "topo_test.h"

typedef int (*expect_fn)(const struct topo *t, uint32_t s, uint32_t d);

/* Pairs whose walked hop count differs from expect(); -1 = unreachable. */
static unsigned int walk_all(const struct topo *t, expect_fn expect)
{
	unsigned int bad = 0;
	uint32_t s, d;

	for (s = 0; s < t->nr_nodes; s++) {
		if (t->nodes[s].kind != ICFAB_NODE_ENDPOINT)
			continue;
		for (d = 0; d < t->nr_nodes; d++) {
			int hops, want;

			if (d == s || t->nodes[d].kind != ICFAB_NODE_ENDPOINT)
				continue;
			hops = topo_route_hops(t, s, d);
			want = expect ? expect(t, s, d) : hops;
			if (hops != want || (hops < 0 && want >= 0)) {
				if (bad++ < 3)
					diag("%s -> %s: %d hops, expected %d",
					     t->nodes[s].name, t->nodes[d].name, hops, want);
			}
		}
	}
	return bad;
}

/* Any loop, missing route or DOWN link on any pair. */
static unsigned int walk_broken(const struct topo *t)
{
	unsigned int bad = 0;
	uint32_t s, d;

	for (s = 0; s < t->nr_nodes; s++)
		for (d = 0; d < t->nr_nodes; d++)
			if (s != d && t->nodes[s].kind == ICFAB_NODE_ENDPOINT &&
			    t->nodes[d].kind == ICFAB_NODE_ENDPOINT &&
			    topo_route_hops(t, s, d) < 0)
				bad++;
	return bad;
}

static int coord(const struct topo *t, uint32_t node, uint32_t dim)
{
	uint32_t pos = t->nodes[node].grid_pos, i;

	for (i = 0; i < dim; i++)
		pos /= t->grid->size[i];
	return pos % t->grid->size[dim];
}

static int torus_dist(const struct topo *t, uint32_t s, uint32_t d)
{
	int sum = 0;
	uint32_t i;

	for (i = 0; i < t->grid->ndims; i++) {
		int n = t->grid->size[i], x = abs(coord(t, s, i) - coord(t, d, i));

		sum += x < n - x ? x : n - x;
	}
	return sum;
}

static int manhattan(const struct topo *t, uint32_t s, uint32_t d)
{
	int sum = 0;
	uint32_t i;

	for (i = 0; i < t->grid->ndims; i++)
		sum += abs(coord(t, s, i) - coord(t, d, i));
	return sum;
}

static int manhattan_routers(const struct topo *t, uint32_t s, uint32_t d)
{
	return manhattan(t, s, d) + 2;	/* up to the router and down again */
}

static int two(const struct topo *t, uint32_t s, uint32_t d)
{
	(void)t, (void)s, (void)d;
	return 2;
}

static int one(const struct topo *t, uint32_t s, uint32_t d)
{
	(void)t, (void)s, (void)d;
	return 1;
}

/* hierarchical 3x4 on one scale-out switch: always 2 hops */
static int hier_leafspine(const struct topo *t, uint32_t s, uint32_t d)
{
	/* 4x8 on radix 8: 4 GPUs per leaf, so GPU id / 4 is the leaf */
	if (s / 8 == d / 8)
		return 2;		/* NVSwitch */
	return s / 4 == d / 4 ? 2 : 4;	/* same leaf, or leaf-spine-leaf */
	(void)t;
}

/* A generated topology, routed, and the hop count every route must have. */
static const struct distance_case {
	const char *yaml;
	enum topo_routing routed_with;	/* AUTO: any */
	expect_fn hops;
	const char *what;
	bool nic_ports;			/* also: NVLink in, the NIC out */
} distance_cases[] = {
	{ "topology:\n  torus: {dims: [5, 4, 3], bandwidth: 1GB/s}\n",
	  TOPO_ROUTING_DOR, torus_dist,
	  "torus 5x4x3 (dor): hops = sum of min(|d|, n-|d|)", false },
	{ "topology:\n  torus: {dims: [5, 4, 3], bandwidth: 1GB/s}\nrouting: shortest\n",
	  TOPO_ROUTING_SHORTEST, torus_dist,
	  "torus 5x4x3 (shortest): same distances", false },
	{ "topology:\n  ring: {nodes: 7, bandwidth: 1GB/s}\n",
	  TOPO_ROUTING_AUTO, torus_dist, "ring 7: hops = min(|d|, 7-|d|)", false },
	{ "topology:\n  mesh: {dims: [4, 3, 2], bandwidth: 1GB/s}\n",
	  TOPO_ROUTING_AUTO, manhattan, "mesh 4x3x2: hops = Manhattan distance", false },
	{ "topology:\n  mesh: {dims: [4, 4], routers: true, bandwidth: 1GB/s}\n",
	  TOPO_ROUTING_AUTO, manhattan_routers,
	  "mesh 4x4 with routers: Manhattan + 2", false },
	{ "topology:\n  supermesh: {dims: [4, 4], variant: bi, bandwidth: 1GB/s}\n",
	  TOPO_ROUTING_AUTO, manhattan,
	  "supermesh bi: DOR on the base mesh, Manhattan", false },
	{ "topology:\n  switch: {endpoints: 6, bandwidth: 1GB/s}\n",
	  TOPO_ROUTING_UPDOWN, two, "switch 6: 2 hops", false },
	{ "topology:\n  exchange: {tiles: 6, bandwidth: 1GB/s}\n",
	  TOPO_ROUTING_AUTO, one, "exchange direct: 1 hop", false },
	{ "topology:\n  exchange: {tiles: 70, bandwidth: 1GB/s}\n",
	  TOPO_ROUTING_AUTO, two, "exchange crossbar: 2 hops", false },
	{ "topology:\n  hierarchical:\n    nodes: 3\n    per_node: 4\n"
	  "    scale_up: {bandwidth: 160GB/s, latency: 300ns}\n"
	  "    scale_out: {bandwidth: 50GB/s, latency: 2us}\n",
	  TOPO_ROUTING_AUTO, two,
	  "hierarchical 3x4, one network switch: 2 hops", true },
	{ "topology:\n  hierarchical:\n    nodes: 4\n    per_node: 8\n    radix: 8\n"
	  "    scale_up: {bandwidth: 160GB/s, latency: 300ns}\n"
	  "    scale_out: {bandwidth: 50GB/s, latency: 2us}\n",
	  TOPO_ROUTING_AUTO, hier_leafspine,
	  "hierarchical leaf/spine: 2 hops intra-node or same leaf, 4 across the spine", false },
};

static void test_distances(void)
{
	const struct distance_case *c;
	struct topo *t;
	size_t i;

	for (i = 0; i < sizeof(distance_cases) / sizeof(*c); i++) {
		c = &distance_cases[i];
		t = load_routed(c->yaml);
		ok(t && (c->routed_with == TOPO_ROUTING_AUTO ||
			 t->routed_with == c->routed_with) &&
		   !walk_all(t, c->hops), "%s", c->what);
		if (c->nic_ports)
			ok(t && topo_route_port(t, 0, 1) == 0 &&
			   topo_route_port(t, 0, 4) == 1,
			   "hierarchical: intra-node over NVLink (port 0), inter-node over the NIC (port 1)");
		topo_free(t);
	}
}

static void test_tiebreak(void)
{
	struct topo *t = load_routed("topology:\n  ring: {nodes: 4, bandwidth: 1GB/s}\n");
	uint16_t plus0, minus1;

	/*
	 * n0 -> n2 and n1 -> n3 are 2 hops either way: + from the even
	 * coordinate, - from the odd one.
	 */
	plus0 = t ? t->grid->dir_port[0] : 0;
	minus1 = t ? t->grid->dir_port[3] : 0;
	ok(t && topo_route_port(t, 0, 2) == plus0, "torus tie from n0: + direction");
	ok(t && topo_route_port(t, 1, 3) == minus1, "torus tie from n1: - direction");
	ok(t && topo_route_port(t, 2, 0) == t->grid->dir_port[4],
	   "torus tie from n2: + direction");
	topo_free(t);
}

/*
 * How many endpoint pairs' routes cross each link: the least and the
 * most over the links any route uses (*used of them).
 */
static void pair_load(const struct topo *t, uint32_t *lo, uint32_t *hi,
		      uint32_t *used)
{
	uint32_t *cnt = calloc(t->nr_links + 1, sizeof(*cnt)), s, d, i;

	*lo = UINT32_MAX;
	*hi = *used = 0;
	for (s = 0; cnt && s < t->nr_nodes; s++)
		for (d = 0; d < t->nr_nodes; d++) {
			uint32_t u = s, hops = 0;

			if (s == d || t->nodes[s].kind != ICFAB_NODE_ENDPOINT ||
			    t->nodes[d].kind != ICFAB_NODE_ENDPOINT)
				continue;
			while (u != d && hops++ < t->nr_nodes) {
				int l = topo_port_link(t, u, topo_route_port(t, u, d));

				if (l < 0)
					break;
				cnt[l]++;
				u = t->links[l].dst_node;
			}
		}
	for (i = 0; cnt && i < t->nr_links; i++) {
		if (!cnt[i])
			continue;
		++*used;
		*lo = cnt[i] < *lo ? cnt[i] : *lo;
		*hi = cnt[i] > *hi ? cnt[i] : *hi;
	}
	free(cnt);
}

static void test_torus_balance(void)
{
	struct topo *t = load_routed("topology:\n  torus: {dims: [4, 4], bandwidth: 1GB/s}\n");
	uint32_t lo = 0, hi = 0, used = 0;

	/*
	 * A source is 2 hops from the 16 nodes on average, 512 crossings
	 * over 64 links: 8 a link. With every tie taken + it was 12 on a +
	 * link and 4 on a - link.
	 */
	if (t)
		pair_load(t, &lo, &hi, &used);
	ok(t && used == 64 && lo == hi,
	   "4x4 torus, all pairs: every one of the 64 links carries the same number of routes (%u..%u)",
	   lo, hi);
	topo_free(t);
}

/* Take a cable down (both directions). */
static void cut(struct topo *t, const char *a, const char *b)
{
	int l = t ? topo_find_link(t, node_id(t, a), node_id(t, b)) : -1;

	if (l < 0)
		return;
	topo_link_set_state(t, l, ICFAB_LINK_DOWN, 0);
	if (t->links[l].peer != TOPO_NONE)
		topo_link_set_state(t, t->links[l].peer, ICFAB_LINK_DOWN, 0);
}

static int reroute_check(struct topo *t, struct topo_err *err)
{
	struct icfab_limits lim;

	topo_default_limits(&lim);
	err->msg[0] = '\0';
	return topo_route(t, err) || topo_check(t, &lim, err);
}

/*
 * Cables cut in a generated topology, then rerouted: either every pair
 * still reaches every other without a loop or a DOWN link (and, where
 * named, a pair is the given number of hops apart), or the reroute fails
 * naming a pair that cannot reach each other.
 */
static const struct cut_case {
	const char *yaml;
	const char *cut[2][2];		/* cables; unused ones NULL */
	const char *hops_from, *hops_to;	/* or NULL */
	int hops;
	const char *unreachable[2];	/* the pair named, or NULL: reroutes */
	const char *what;
} cut_cases[] = {
	{
		.yaml = "topology:\n  mesh: {dims: [6, 6], routers: true, bandwidth: 1GB/s}\n",
		.cut = { { "rt2_2", "rt3_2" }, { "rt3_3", "rt3_4" } },
		.what = "mesh with routers, two cables cut: DOR + detours, no loop",
	},
	{
		.yaml = "topology:\n  mesh: {dims: [3], bandwidth: 1GB/s}\n",
		.cut = { { "pe1", "pe2" } },
		.unreachable = { "'pe0'", "'pe2'" },
		.what = "line of 3, only path cut: unreachable pair named",
	},
	{
		.yaml = "topology:\n  switch: {endpoints: 64, radix: 16, bandwidth: 1GB/s}\n",
		.cut = { { "leaf0", "spine0" }, { "leaf1", "spine1" } },
		.what = "leaf/spine, uplinks cut: up*down* reroutes, no loop",
	},
	{
		.yaml = "topology:\n  ring: {nodes: 6, bandwidth: 1GB/s}\nrouting: shortest\n",
		.cut = { { "n0", "n1" } },
		.hops_from = "n0", .hops_to = "n1", .hops = 5,
		.what = "ring, shortest: the long way round after a cut",
	},
};

static void run_cut_case(const struct cut_case *c)
{
	struct topo *t = load_routed(c->yaml);
	struct topo_err err;
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(c->cut) && c->cut[i][0]; i++)
		cut(t, c->cut[i][0], c->cut[i][1]);
	ret = reroute_check(t, &err);
	if (c->unreachable[0])
		ok(t && ret && strstr(err.msg, "cannot reach each other") &&
		   strstr(err.msg, c->unreachable[0]) &&
		   strstr(err.msg, c->unreachable[1]),
		   "%s: %s", c->what, err.msg);
	else
		ok(t && !ret && !walk_broken(t) &&
		   (!c->hops_from ||
		    topo_route_hops(t, node_id(t, c->hops_from),
				    node_id(t, c->hops_to)) == c->hops),
		   "%s", c->what);
	topo_free(t);
}

static void test_failures(void)
{
	struct topo_err err;
	struct topo *t;
	size_t i;
	int ret;

	t = load_routed("topology:\n  torus: {dims: [4, 4], bandwidth: 1GB/s}\n");
	cut(t, "chip0_0", "chip1_0");
	ok(t && topo_route_hops(t, node_id(t, "chip0_0"), node_id(t, "chip1_0")) == -ENETDOWN,
	   "stale tables after a cut: the walk reports the DOWN link");
	ret = reroute_check(t, &err);
	ok(t && !ret && !walk_broken(t), "torus 4x4, one cable cut: rerouted, no loop, no DOWN link");
	ok(t && topo_route_hops(t, node_id(t, "chip0_0"), node_id(t, "chip1_0")) == 3,
	   "torus: the cut neighbour is now 3 hops away");
	ok(t && topo_route_hops(t, node_id(t, "chip0_1"), node_id(t, "chip3_1")) == 1,
	   "torus: unaffected pairs keep their DOR path");
	cut(t, "chip0_0", "chip3_0");
	cut(t, "chip0_0", "chip0_1");
	ret = reroute_check(t, &err);
	ok(t && !ret && !walk_broken(t), "torus: three of four cables of a node cut, still reachable");
	cut(t, "chip0_0", "chip0_3");
	ret = reroute_check(t, &err);
	ok(t && ret && strstr(err.msg, "cannot reach each other") && strstr(err.msg, "chip0_0"),
	   "torus: node cut off, reported: %s", err.msg);
	topo_free(t);

	for (i = 0; i < ARRAY_SIZE(cut_cases); i++)
		run_cut_case(&cut_cases[i]);

	/* degraded links stay in use */
	t = load_routed("topology:\n  ring: {nodes: 6, bandwidth: 1GB/s}\n");
	if (t) {
		int l = topo_find_link(t, node_id(t, "n0"), node_id(t, "n1"));

		topo_link_set_state(t, l, ICFAB_LINK_DEGRADED, 500);
	}
	ret = reroute_check(t, &err);
	ok(t && !ret && topo_route_hops(t, node_id(t, "n0"), node_id(t, "n1")) == 1,
	   "a DEGRADED link is still used");
	topo_free(t);
}

/*
 * c is dual-homed on s1 and s2; s1 and s2 meet only at the slow root r.
 * a -> s1 -> c -> s2 -> b is cheapest but goes down (s1 -> c) then up
 * (c -> s2): up*down* must take a -> s1 -> r -> s2 -> b instead.
 */
#define DUAL_HOMED							\
	"nodes:\n"							\
	"  - {name: a, kind: endpoint}\n  - {name: b, kind: endpoint}\n"	\
	"  - {name: c, kind: endpoint}\n  - {name: s1, kind: switch}\n"	\
	"  - {name: s2, kind: switch}\n  - {name: r, kind: switch}\n"	\
	"defaults:\n  link: {bandwidth: 1GB/s, latency: 10ns}\n"		\
	"links:\n"							\
	"  - {from: a, to: s1}\n  - {from: c, to: s1}\n"			\
	"  - {from: c, to: s2}\n  - {from: b, to: s2}\n"			\
	"  - {from: s1, to: r, latency: 10us}\n"			\
	"  - {from: s2, to: r, latency: 10us}\n"

static void test_updown_no_transit(void)
{
	struct topo *t = load_routed(DUAL_HOMED "routing: updown\n");
	int s1 = t ? node_id(t, "s1") : 0;

	ok(t && topo_route_hops(t, 0, 1) == 4 &&
	   t->links[topo_port_link(t, s1, topo_route_port(t, s1, 1))].dst_node ==
	   (uint32_t)node_id(t, "r"),
	   "updown: a -> b climbs to the root rather than down-then-up through c");
	topo_free(t);

	t = load_routed(DUAL_HOMED "routing: shortest\n");
	ok(t && topo_route_hops(t, 0, 1) == 4 &&
	   t->links[topo_port_link(t, s1, topo_route_port(t, s1, 1))].dst_node == 2,
	   "shortest: the same pair goes through endpoint c");
	topo_free(t);
}

/*
 * On leaf @leaf: the ports facing spines, and per port how many of the
 * destination endpoints elsewhere leave by it. Returns max - min over
 * those ports (UINT32_MAX when a port carries none, or none exist).
 */
static uint32_t uplink_spread(const struct topo *t, const char *leaf,
			      uint32_t *nup, uint32_t *per)
{
	int u = node_id(t, leaf);
	uint32_t cnt[256] = { 0 }, p, d, lo = UINT32_MAX, hi = 0;
	bool up[256] = { false };

	*nup = 0;
	if (u < 0 || t->nodes[u].nr_ports > 256)
		return UINT32_MAX;
	for (p = 0; p < t->nodes[u].nr_ports; p++) {
		int l = topo_port_link(t, u, p);

		if (l >= 0 && t->nodes[t->links[l].dst_node].kind == ICFAB_NODE_SWITCH) {
			up[p] = true;
			++*nup;
		}
	}
	for (d = 0; d < t->nr_nodes; d++) {
		uint16_t port;

		if (t->nodes[d].kind != ICFAB_NODE_ENDPOINT)
			continue;
		port = topo_route_port(t, u, d);
		if (port < 256 && up[port])
			cnt[port]++;
	}
	for (p = 0; p < t->nodes[u].nr_ports && p < 256; p++) {
		if (!up[p])
			continue;
		lo = cnt[p] < lo ? cnt[p] : lo;
		hi = cnt[p] > hi ? cnt[p] : hi;
	}
	*per = hi;
	return !*nup || !lo ? UINT32_MAX : hi - lo;
}

/* Same leaf: 2 hops, else leaf-spine-leaf: 4 (16 endpoints a leaf). */
static int leafspine16(const struct topo *t, uint32_t s, uint32_t d)
{
	(void)t;
	return s / 16 == d / 16 ? 2 : 4;
}

static int leafspine32(const struct topo *t, uint32_t s, uint32_t d)
{
	(void)t;
	return s / 32 == d / 32 ? 2 : 4;
}

/*
 * Equal-cost spreading: a leaf's destinations elsewhere are dealt over
 * all of its uplinks (parallel cables to a spine, and several spines),
 * not all sent up the first one; routes stay minimal and loop-free.
 */
static void test_ecmp(void)
{
	struct topo_err err;
	struct topo *t;
	uint32_t nup, per, spread, d;
	int ret;

	/* 64 endpoints on radix 32: 4 leaves, 2 spines, 8 cables leaf-spine */
	t = load_routed("topology:\n  switch: {endpoints: 64, radix: 32, bandwidth: 1GB/s}\n");
	spread = t ? uplink_spread(t, "leaf0", &nup, &per) : UINT32_MAX;
	ok(t && nup == 16 && spread == 0 && per == 3,
	   "leaf/spine 64 on radix 32: leaf0's 48 remote destinations over its 16 uplinks, 3 each (spread %u, max %u)",
	   spread, per);
	ok(t && !walk_all(t, leafspine16) && !walk_broken(t),
	   "leaf/spine 64: minimal hops (2 or 4), no loop");
	topo_free(t);

	/* uneven: 26 remote endpoints over 4 uplinks */
	t = load_routed("topology:\n  switch: {endpoints: 30, radix: 8, bandwidth: 1GB/s}\n");
	spread = t ? uplink_spread(t, "leaf0", &nup, &per) : UINT32_MAX;
	ok(t && nup == 4 && spread <= 1,
	   "leaf/spine 30 on radix 8: 26 remote destinations over 4 uplinks, within 1 (spread %u)",
	   spread);
	ok(t && !walk_broken(t), "leaf/spine 30: no loop");
	topo_free(t);

	ret = topo_load_preset("ualink-pod", &t, &err) || reroute_check(t, &err);
	spread = !ret ? uplink_spread(t, "leaf0", &nup, &per) : UINT32_MAX;
	ok(!ret && nup == 32 && spread == 0 && per == 31,
	   "ualink-pod: leaf0's 992 remote destinations over its 32 uplinks (16 spines x 2 cables), 31 each (spread %u)",
	   spread);
	/* the first 64 accelerators: the 32 on leaf1, one per uplink of leaf0 */
	if (!ret) {
		int leaf0 = node_id(t, "leaf0");
		uint32_t used[64] = { 0 }, distinct = 0, hops_bad = 0;

		for (d = 0; d < t->nr_nodes; d++) {
			char name[16];
			int dn, acc = 0;
			uint16_t port;

			snprintf(name, sizeof(name), "acc%u", 32 + d);
			if (d >= 32 || (dn = node_id(t, name)) < 0)
				continue;
			port = topo_route_port(t, leaf0, dn);
			if (port < 64 && !used[port]++)
				distinct++;
			snprintf(name, sizeof(name), "acc%u", d);
			acc = node_id(t, name);
			hops_bad += acc < 0 || topo_route_hops(t, acc, dn) != 4;
		}
		ok(distinct == 32 && !hops_bad,
		   "ualink-pod: leaf0 sends the 32 accelerators of leaf1 by 32 different uplinks, 4 hops each (%u)",
		   distinct);
		/* and the spines bring them down by 32 different cables */
		{
			uint8_t down[8192] = { 0 };
			uint32_t cables = 0;

			for (d = 32; d < 64; d++) {
				char name[16];
				int dn, l1, l2;

				snprintf(name, sizeof(name), "acc%u", d);
				dn = node_id(t, name);
				if (dn < 0)
					continue;
				l1 = topo_port_link(t, leaf0, topo_route_port(t, leaf0, dn));
				if (l1 < 0)
					continue;
				l2 = topo_port_link(t, t->links[l1].dst_node,
						    topo_route_port(t, t->links[l1].dst_node, dn));
				if (l2 >= 0 && l2 < 8192 && !down[l2]++)
					cables++;
			}
			ok(cables == 32,
			   "ualink-pod: ... and reach leaf1 by 32 different spine cables, not 16 used twice (%u)",
			   cables);
		}
		ok(!walk_all(t, leafspine32), "ualink-pod: every pair at its minimal hop count");
	}
	topo_free(t);

	/* after an uplink fails, spreading goes on over the others */
	t = load_routed("topology:\n  switch: {endpoints: 64, radix: 32, bandwidth: 1GB/s}\n");
	cut(t, "leaf0", "spine0");
	ret = t ? reroute_check(t, &err) : -1;
	ok(t && !ret && !walk_broken(t) && !walk_all(t, leafspine16),
	   "leaf/spine 64, a leaf0-spine0 cable cut: minimal, no loop, no DOWN link");
	topo_free(t);

	/* deterministic: the same input gives the same tables */
	{
		struct topo *a = load_routed("topology:\n  switch: {endpoints: 64, radix: 32, bandwidth: 1GB/s}\n");
		struct topo *b = load_routed("topology:\n  switch: {endpoints: 64, radix: 32, bandwidth: 1GB/s}\n");

		ok(a && b && a->nr_nodes == b->nr_nodes &&
		   !memcmp(a->routes, b->routes, (size_t)a->nr_nodes * a->nr_nodes * sizeof(*a->routes)),
		   "equal-cost spreading is deterministic");
		topo_free(a);
		topo_free(b);
	}

	/* a torus under shortest routing spreads too, and stays minimal */
	t = load_routed("topology:\n  torus: {dims: [4, 4, 4], bandwidth: 1GB/s}\nrouting: shortest\n");
	ok(t && !walk_all(t, torus_dist) && !walk_broken(t),
	   "torus 4x4x4 (shortest, spread): hops = torus distance, no loop");
	topo_free(t);
}

static void test_timing(void)
{
	struct topo_err err;
	struct topo *t = NULL;
	double t0 = now_ms(), t1;
	int ret;

	ret = topo_load_preset("tpu-v4-pod", &t, &err) || reroute_check(t, &err);
	t1 = now_ms();
	ok(!ret, "tpu-v4-pod loads, routes and checks (%.0f ms under ASan)",
	   t1 - t0);
	cut(t, "chip0_0_0", "chip1_0_0");
	t0 = now_ms();
	ret = reroute_check(t, &err);
	ok(!ret, "tpu-v4-pod, one cable cut: rerouted and checked (%.0f ms under ASan)",
	   now_ms() - t0);
	topo_free(t);
}

/*
 * ecmp: spray on a leaf/spine of 32 endpoints on radix 8 (4 leaves of 4
 * endpoints, 4 spines, one cable each): leaf0 leaves for every remote
 * endpoint by a set of its 4 uplinks, one per spine, its primary the
 * port routing picks without ecmp, so routes[] is the same table to the
 * entry; the endpoints' and spines' entries stay plain. The check finds
 * a member made to loop, naming the ecmp: line and the loop's nodes.
 */
static void test_route_sets(void)
{
	static const char yaml[] =
		"topology:\n  switch: {endpoints: 32, radix: 8, bandwidth: 1GB/s}\n";
	char with[256];
	struct topo *t, *plain;
	struct icfab_limits lim;
	struct topo_err err;
	uint32_t d, bad = 0, sets = 0, n;
	int leaf0, spine;

	topo_default_limits(&lim);
	snprintf(with, sizeof(with), "%secmp: spray\n", yaml);
	t = load_routed(with);
	plain = load_routed(yaml);
	if (!t || !plain) {
		ok(0, "leaf/spine 32 with and without ecmp loads and routes");
		topo_free(t);
		topo_free(plain);
		return;
	}
	n = t->nr_nodes;
	ok(!memcmp(t->routes, plain->routes, (size_t)n * n * sizeof(*t->routes)) &&
	   !plain->route_sets && t->route_sets,
	   "ecmp leaves routes[] as it was: each set's primary is the port taken without it");
	leaf0 = node_id(t, "leaf0");
	for (d = 0; d < n; d++) {
		const struct topo_rset *s = topo_route_set(t, (uint32_t)leaf0, d);
		uint32_t seen = 0;

		if (t->nodes[d].kind != ICFAB_NODE_ENDPOINT || d < 4)
			continue;
		if (!s || s->nr != 4 || s->mode != ICFAB_MULTIPATH_SPRAY ||
		    s->ports[0] != t->routes[(size_t)leaf0 * n + d]) {
			bad++;
			continue;
		}
		sets++;
		for (uint32_t i = 0; i < s->nr; i++) {
			int li = topo_port_link(t, (uint32_t)leaf0, s->ports[i]);

			if (li < 0 || strncmp(t->nodes[t->links[li].dst_node].name,
					      "spine", 5))
				bad++;
			else
				seen |= 1u << atoi(t->nodes[t->links[li].dst_node].name + 5);
		}
		bad += seen != 0xf;
		if (topo_route_entry(t, (uint32_t)leaf0, d) < ICFAB_ROUTE_SET_BASE)
			bad++;
	}
	for (d = 0; d < n; d++)
		bad += topo_route_set(t, 0, d) != NULL;
	ok(!bad && sets == 28,
	   "leaf0 reaches each of the 28 remote endpoints by a sprayed set of its 4 uplinks to 4 different spines, primary first (%u bad)",
	   bad);
	ok(t->node_sets[leaf0].n == 4,
	   "the sets are shared: leaf0 holds 4 (one per primary), not one per destination (%u)",
	   t->node_sets[leaf0].n);
	ok(!topo_check(t, &lim, &err), "topo_check accepts icfabd's sets");

	/* The spine of leaf0's second member towards endpoint 31 turns back. */
	d = 31;
	spine = t->links[topo_port_link(t, (uint32_t)leaf0,
			  topo_route_set(t, (uint32_t)leaf0, d)->ports[1])].dst_node;
	for (uint32_t p = 0; p < t->nodes[spine].nr_ports; p++) {
		int li = topo_port_link(t, (uint32_t)spine, p);

		if (li >= 0 && (int)t->links[li].dst_node == leaf0)
			t->routes[(size_t)spine * n + d] = (uint16_t)p;
	}
	snprintf(with, sizeof(with), "<test>:3: ecmp: towards '%s'",
		 t->nodes[d].name);
	ok(topo_check(t, &lim, &err) && strstr(err.msg, with) &&
	   strstr(err.msg, "closes a loop: 'leaf0' -> "),
	   "a set member that loops is refused at the ecmp: line, its loop named: %s",
	   err.msg);
	topo_free(t);
	topo_free(plain);
}

/*
 * A topology read back from the module has routes but no port index:
 * topo_port_index() builds it, and topo_port_link() answers as the walk
 * over every link did, for every port of ualink-pod (1056 nodes).
 */
static void test_port_index(void)
{
	struct topo_err err;
	struct topo *t = NULL;
	unsigned int diff = 0, ports = 0, found = 0;
	int *walk = NULL;
	uint32_t u, p, k;

	if (topo_load_preset("ualink-pod", &t, &err) || topo_route(t, &err)) {
		ok(0, "ualink-pod loads and routes");
		topo_free(t);
		return;
	}
	for (u = 0; u < t->nr_nodes; u++)
		ports += t->nodes[u].nr_ports;
	walk = calloc(ports + 1, sizeof(*walk));
	free(t->port_base);
	free(t->port_out);
	t->port_base = t->port_out = NULL;
	for (u = 0, k = 0; walk && u < t->nr_nodes; u++)
		for (p = 0; p < t->nodes[u].nr_ports; p++, k++) {
			walk[k] = topo_port_link(t, u, p);
			found += walk[k] >= 0;
		}
	ok(walk && !topo_port_index(t) && t->port_out && t->port_base,
	   "topo_port_index() builds the index of a topology that has none");
	for (u = 0, k = 0; walk && u < t->nr_nodes; u++)
		for (p = 0; p < t->nodes[u].nr_ports; p++, k++)
			diff += topo_port_link(t, u, p) != walk[k];
	ok(walk && !diff && found == t->nr_links &&
	   topo_port_link(t, 0, t->nodes[0].nr_ports) == -ENOENT,
	   "ualink-pod: every one of %u ports (%u sending) leads to the same link with the index as by the walk (%u differ)",
	   ports, found, diff);
	free(walk);
	topo_free(t);
}

int main(void)
{
	test_distances();
	test_tiebreak();
	test_torus_balance();
	test_failures();
	test_updown_no_transit();
	test_ecmp();
	test_route_sets();
	test_port_index();
	test_timing();
	return done();
}
