// SPDX-License-Identifier: GPL-2.0
/*
 * Color-routed circuits: the budget of 24 colors per router on the wse2
 * preset, the exact -ENOSPC message, lowest-color reuse, multicast trees,
 * owner release, and bad requests that change nothing.
 */
#include <errno.h>

#include <icfab/circuit.h>
#include "topo_test.h"

static struct topo *routed_preset(const char *name)
{
	struct topo_err err = { "" };
	struct topo *t = NULL;

	if (topo_load_preset(name, &t, &err) || topo_route(t, &err)) {
		diag("%s: %s", name, err.msg);
		topo_free(t);
		return NULL;
	}
	return t;
}

/*
 * @t with its circuit table in *@ct; or, when @t did not load or has no
 * table, a failed "@what" and NULL (@t freed).
 */
static struct topo *with_table(struct topo *t, struct circuit_table **ct,
			       const char *what)
{
	struct topo_err err = { "" };

	if (t && !circuit_table_new(t, ct, &err))
		return t;
	ok(0, "%s: %s", what, err.msg);
	topo_free(t);
	return NULL;
}

static uint32_t N(const struct topo *t, const char *name)
{
	int id = topo_find_node(t, name);

	if (id < 0) {
		diag("no node %s", name);
		exit(1);
	}
	return id;
}

/* Everything a request could change: per-node masks and the circuit list. */
struct snap {
	uint32_t n, count;
	uint64_t *mask;
	uint64_t ids_hash;
};

static void snap_take(const struct topo *t, const struct circuit_table *ct,
		      struct snap *s)
{
	const struct circuit *c;
	uint32_t i;

	s->n = t->nr_nodes;
	s->mask = malloc(s->n * sizeof(*s->mask));
	for (i = 0; i < s->n; i++)
		s->mask[i] = circuit_router_mask(ct, i);
	s->count = circuit_count(ct);
	s->ids_hash = 0;
	circuit_for_each(c, ct)
		s->ids_hash = s->ids_hash * 1000003 + c->id * 131 + c->color + 1;
}

/* Same as the snapshot? Frees it. */
static int snap_same(const struct topo *t, const struct circuit_table *ct,
		     struct snap *s)
{
	struct snap now;
	int same;

	snap_take(t, ct, &now);
	same = now.count == s->count && now.ids_hash == s->ids_hash &&
	       !memcmp(now.mask, s->mask, s->n * sizeof(*s->mask));
	free(now.mask);
	free(s->mask);
	return same;
}

static void test_budget(void)
{
	struct topo *t = routed_preset("wse2");
	struct topo_err err = { "" };
	struct circuit_table *ct;
	uint32_t a, b, c, d, used = 99, total = 99, i;
	int ids[24], ret, n = 0, colors_in_order = 1;
	struct snap s;

	t = with_table(t, &ct, "wse2 loads, routes, and gets a circuit table");
	if (!t)
		return;
	a = N(t, "pe11_7");
	b = N(t, "pe13_7");
	c = N(t, "pe12_6");
	d = N(t, "pe12_8");
	ret = circuit_router_usage(ct, N(t, "rt12_7"), &used, &total);
	ok(!ret && used == 0 && total == 24, "rt12_7 starts at 0/24 (%u/%u)", used, total);
	ok(circuit_router_usage(ct, a, &used, &total) == -ENOENT,
	   "an endpoint has no color table");

	/* Open pe11_7 -> pe13_7 (routers (11,7) (12,7) (13,7)) until refused. */
	for (i = 0; i < 30; i++) {
		ret = circuit_open(ct, 1, a, b, &err);
		if (ret < 0)
			break;
		if (n < 24)
			ids[n] = ret;
		colors_in_order &= circuit_get(ct, ret)->color == (uint32_t)n &&
				   ret == n;
		n++;
	}
	ok(n == 24, "exactly 24 circuits fit across one router (%d)", n);
	ok(colors_in_order, "ids and colors handed out lowest first: 0..23");
	ok(ret == -ENOSPC, "the 25th is refused with -ENOSPC (%d)", ret);
	ok(!strcmp(err.msg, "router (11,7): 24/24 colors in use"),
	   "... naming the first full router on its path: '%s'", err.msg);
	ok(!circuit_router_usage(ct, N(t, "rt12_7"), &used, &total) &&
	   used == 24 && total == 24, "rt12_7 at 24/24");

	/* Another pair whose path crosses only (12,7) among the full ones. */
	snap_take(t, ct, &s);
	err.msg[0] = 0;
	ret = circuit_open(ct, 2, c, d, &err);
	ok(ret == -ENOSPC && !strcmp(err.msg, "router (12,7): 24/24 colors in use"),
	   "pe12_6 -> pe12_8 refused: '%s'", err.msg);
	ok(snap_same(t, ct, &s), "the refused request changed no router's usage");
	ok(!circuit_router_usage(ct, N(t, "rt12_6"), &used, &total) && used == 0,
	   "no color left behind at rt12_6, the router before the full one");

	/* Free one: the request fits again, with the freed color and id. */
	ok(!circuit_close(ct, ids[5], &err), "close circuit %d", ids[5]);
	ret = circuit_open(ct, 2, c, d, &err);
	ok(ret == 5 && circuit_get(ct, ret)->color == 5,
	   "after freeing color 5 the request succeeds as id 5 with color 5 (%d)", ret);
	ok(circuit_router_mask(ct, N(t, "rt12_6")) == 1ULL << 5 &&
	   circuit_router_mask(ct, N(t, "rt12_8")) == 1ULL << 5 &&
	   circuit_router_mask(ct, N(t, "rt12_7")) == (1ULL << 24) - 1,
	   "color 5 marked at the three routers of its path, nowhere else extra");
	ok(circuit_get(ct, ret)->nr_links == 4 && !circuit_get(ct, ret)->multicast,
	   "the circuit holds its 4 routed links (pe, 3 routers, pe)");
	ret = circuit_open(ct, 2, c, d, &err);
	ok(ret == -ENOSPC && strstr(err.msg, "(12,7)"), "and full again: %s", err.msg);
	ok(circuit_count(ct) == 24, "24 circuits open");

	ret = circuit_close(ct, 77, &err);
	ok(ret == -ENOENT && !strcmp(err.msg, "no circuit 77"),
	   "closing an unknown id: -ENOENT '%s'", err.msg);
	circuit_table_free(ct);
	topo_free(t);
}

/* Colors free everywhere but none common: the message names the busiest. */
static void test_fragmented(void)
{
	struct topo *t = routed_preset("wse2");
	struct topo_err err = { "" };
	struct circuit_table *ct;
	int ids[24], ret, i, bad = 0;
	struct snap s;

	t = with_table(t, &ct, "wse2 table");
	if (!t)
		return;
	for (i = 0; i < 24; i++)
		bad += (ids[i] = circuit_open(ct, 1, N(t, "pe2_0"), N(t, "pe3_0"), &err)) < 0;
	for (i = 0; i < 12; i++)
		bad += circuit_open(ct, 1, N(t, "pe0_0"), N(t, "pe1_0"), &err) < 0;
	for (i = 0; i < 12; i++)
		bad += circuit_close(ct, ids[i], &err) < 0;
	ok(!bad, "set up: (0,0) (1,0) hold colors 0..11, (2,0) 12..23");
	snap_take(t, ct, &s);
	ret = circuit_open(ct, 1, N(t, "pe0_0"), N(t, "pe2_0"), &err);
	ok(ret == -ENOSPC && !strcmp(err.msg,
	   "no color is free at every router on the path; most used: router (0,0): 12/24 colors in use"),
	   "no router full, no common color: -ENOSPC '%s'", err.msg);
	ok(snap_same(t, ct, &s), "no state change");
	ret = circuit_open(ct, 1, N(t, "pe1_0"), N(t, "pe2_0"), &err);
	ok(ret < 0, "(1,0)+(2,0) also have nothing in common");
	ret = circuit_open(ct, 1, N(t, "pe3_0"), N(t, "pe2_0"), &err);
	ok(ret >= 0 && circuit_get(ct, ret)->color == 0,
	   "(3,0) and (2,0) share color 0");
	circuit_table_free(ct);
	topo_free(t);
}

/* The routed path src -> dst as link ids; returns its length. */
static uint32_t route_links(const struct topo *t, uint32_t s, uint32_t d,
			    uint32_t *out)
{
	uint32_t n = 0;

	while (s != d && n < t->nr_nodes) {
		int l = topo_port_link(t, s, topo_route_port(t, s, d));

		if (l < 0)
			return 0;
		out[n++] = l;
		s = t->links[l].dst_node;
	}
	return n;
}

static void test_multicast(void)
{
	static const char *const leaf_names[8] = {
		"pe0_0", "pe15_15", "pe5_0", "pe5_15", "pe0_5", "pe15_5",
		"pe9_9", "pe2_12",
	};
	struct topo *t = routed_preset("wse2");
	struct topo_err err = { "" };
	uint32_t leaves[8], src, i, j, k, *in_deg, *out_deg, *path;
	uint32_t from_src = 0, dups = 0, sum_paths = 0, unreached = 0;
	uint32_t on_path_missing = 0, roots = 0, branch = 0;
	uint32_t routers = 0, wrong_color = 0, stray = 0;
	const struct circuit *c;
	struct circuit_table *ct;
	uint8_t *in_tree;
	int id;

	t = with_table(t, &ct, "wse2 table");
	if (!t)
		return;
	src = N(t, "pe5_5");
	for (i = 0; i < 8; i++)
		leaves[i] = N(t, leaf_names[i]);
	/* one unicast circuit first, so the tree's color is not trivially 0 */
	ok(circuit_open(ct, 3, src, N(t, "pe6_5"), &err) == 0, "unicast pe5_5 -> pe6_5");
	id = circuit_open_multicast(ct, 4, src, leaves, 8, &err);
	ok(id == 1, "multicast pe5_5 -> 8 leaves opens as id 1 (%d: %s)", id, err.msg);
	c = circuit_get(ct, id);
	if (!c) {
		circuit_table_free(ct);
		topo_free(t);
		return;
	}
	ok(c->multicast && c->nr_dsts == 8 && c->src == src && c->owner == 4,
	   "circuit records source, 8 leaves, owner");
	ok(c->color == 1, "color 1: color 0 is held at (5,5) by the unicast circuit");

	in_deg = calloc(t->nr_nodes, sizeof(*in_deg));
	out_deg = calloc(t->nr_nodes, sizeof(*out_deg));
	in_tree = calloc(t->nr_links, 1);
	path = malloc(t->nr_nodes * sizeof(*path));
	for (i = 0; i < c->nr_links; i++) {
		const struct topo_link *l = &t->links[c->links[i]];

		for (j = 0; j < i; j++)
			dups += c->links[j] == c->links[i];
		from_src += l->src_node == src;
		in_deg[l->dst_node]++;
		out_deg[l->src_node]++;
		in_tree[c->links[i]] = 1;
	}
	ok(!dups, "every link of the tree appears once");
	ok(from_src == 1, "the source link is in the tree once: the payload leaves pe5_5 once (%u)",
	   from_src);
	for (i = 0; i < t->nr_nodes; i++) {
		roots += out_deg[i] && !in_deg[i];
		dups += in_deg[i] > 1;
		branch += out_deg[i] > 1 && t->nodes[i].kind == ICFAB_NODE_SWITCH;
	}
	ok(roots == 1 && !in_deg[src] && !dups,
	   "a tree: one root (the source), every other node entered once");
	ok(branch >= 3, "copies are made at %u routers where paths part", branch);
	for (i = 0; i < 8; i++) {
		uint32_t n = route_links(t, src, leaves[i], path);

		unreached += !in_deg[leaves[i]] || !n;
		sum_paths += n;
		for (k = 0; k < n; k++)
			on_path_missing += !in_tree[path[k]];
	}
	ok(!unreached, "every leaf is reached");
	ok(!on_path_missing, "every link of every routed path is in the tree");
	ok(c->nr_links < sum_paths,
	   "shared links counted once: %u tree links < %u on the 8 paths",
	   c->nr_links, sum_paths);
	for (i = 0; i < t->nr_nodes; i++) {
		uint64_t m = circuit_router_mask(ct, i);

		if (!circuit_is_router(t, i))
			continue;
		if (in_deg[i]) {
			routers++;
			wrong_color += !(m & (1ULL << c->color));
		} else {
			stray += !!(m & (1ULL << c->color));
		}
	}
	ok(routers > 8 && !wrong_color,
	   "color %u held at all %u routers of the tree", c->color, routers);
	ok(!stray, "and at no router outside it");

	/* a second tree over the same routers gets the next common color */
	id = circuit_open_multicast(ct, 4, src, leaves, 8, &err);
	ok(id == 2 && circuit_get(ct, id)->color == 2, "a second identical tree takes color 2");
	ok(circuit_close_owner(ct, 4) == 2, "owner 4 exits: its 2 trees are freed");
	ok(circuit_router_mask(ct, N(t, "rt5_5")) == 1 &&
	   circuit_router_mask(ct, N(t, "rt15_15")) == 0,
	   "only owner 3's color 0 remains (at (5,5))");
	ok(circuit_close_owner(ct, 3) == 1 && circuit_count(ct) == 0,
	   "owner 3 exits: nothing left");
	for (i = 0, stray = 0; i < t->nr_nodes; i++)
		stray += circuit_router_mask(ct, i) != 0;
	ok(!stray, "every router back to 0 colors in use");
	ok(circuit_close_owner(ct, 3) == 0, "releasing an owner with nothing is a no-op");
	free(in_deg);
	free(out_deg);
	free(in_tree);
	free(path);
	circuit_table_free(ct);
	topo_free(t);
}

/* Iteration and labels, for icfabctl. */
static void test_queries(void)
{
	struct topo *t = routed_preset("wse2");
	struct topo_err err = { "" };
	struct circuit_table *ct;
	const struct circuit *c;
	char buf[32];
	uint32_t seen = 0, last = 0, in_order = 1;

	t = with_table(t, &ct, "wse2 table");
	if (!t)
		return;
	circuit_open(ct, 1, N(t, "pe0_0"), N(t, "pe3_0"), &err);
	circuit_open(ct, 1, N(t, "pe0_0"), N(t, "pe3_0"), &err);
	circuit_open(ct, 2, N(t, "pe0_0"), N(t, "pe3_0"), &err);
	circuit_close(ct, 1, &err);
	circuit_for_each(c, ct) {
		in_order &= !seen || c->id > last;
		last = c->id;
		seen++;
	}
	ok(seen == 2 && in_order && circuit_get(ct, 0) && !circuit_get(ct, 1) &&
	   circuit_get(ct, 2), "iteration skips freed ids, in id order");
	ok(!strcmp(circuit_router_label(t, N(t, "rt12_7"), buf, sizeof(buf)), "(12,7)"),
	   "grid router label (12,7)");
	ok(!strcmp(circuit_router_label(t, N(t, "pe12_7"), buf, sizeof(buf)), "pe12_7"),
	   "endpoint label is its name");
	circuit_table_free(ct);
	topo_free(t);
}

static void test_named_router(void)
{
	struct topo *t = load_routed(
		"defaults:\n  switch: {colors: 2}\n"
		"  link: {bandwidth: 1GB/s}\n"
		"nodes:\n  - {name: a, kind: endpoint}\n  - {name: b, kind: endpoint}\n"
		"  - {name: sw3, kind: switch}\n"
		"links:\n  - {from: a, to: sw3}\n  - {from: b, to: sw3}\n");
	struct topo_err err = { "" };
	struct circuit_table *ct;
	int r1, r2, r3;

	t = with_table(t, &ct, "explicit switch topology");
	if (!t)
		return;
	r1 = circuit_open(ct, 1, N(t, "a"), N(t, "b"), &err);
	r2 = circuit_open(ct, 1, N(t, "b"), N(t, "a"), &err);
	r3 = circuit_open(ct, 1, N(t, "a"), N(t, "b"), &err);
	ok(r1 == 0 && r2 == 1 && r3 == -ENOSPC &&
	   !strcmp(err.msg, "router sw3: 2/2 colors in use"),
	   "a router off any grid is named: '%s'", err.msg);
	circuit_table_free(ct);
	topo_free(t);
}

/* One bad request: its return, its message, and no state change. */
static void bad(const struct topo *t, struct circuit_table *ct, int ret,
		int want, const char *msg, struct topo_err *err, struct snap *s)
{
	int same = snap_same(t, ct, s);

	ok(ret == want && !strcmp(err->msg, msg) && same,
	   "refused (%d, want %d) '%s', nothing changed", ret, want, err->msg);
	if (strcmp(err->msg, msg))
		diag("expected '%s'", msg);
}

static void test_bad_requests(void)
{
	struct topo *t = routed_preset("wse2");
	struct topo_err err = { "" };
	struct circuit_table *ct;
	uint32_t src, leaves[8], id;
	struct snap s;
	int ret;

	t = with_table(t, &ct, "wse2 table");
	if (!t)
		return;
	src = N(t, "pe5_5");
	circuit_open(ct, 1, src, N(t, "pe9_5"), &err);	/* some state */

	snap_take(t, ct, &s);
	ret = circuit_open(ct, 1, src, 9999, &err);
	bad(t, ct, ret, -ENOENT, "circuit from pe5_5: destination: no node 9999 (the fabric has 512)",
	    &err, &s);
	snap_take(t, ct, &s);
	ret = circuit_open(ct, 1, 9999, src, &err);
	bad(t, ct, ret, -ENOENT, "source: no node 9999 (the fabric has 512)", &err, &s);
	ok(circuit_node_lookup(t, "pe99_99", &id, &err) == -ENOENT &&
	   !strcmp(err.msg, "no node named 'pe99_99'"), "lookup by name: '%s'", err.msg);
	ok(!circuit_node_lookup(t, "pe5_5", &id, &err) && id == src, "lookup finds pe5_5");

	snap_take(t, ct, &s);
	ret = circuit_open(ct, 1, N(t, "rt1_1"), src, &err);
	bad(t, ct, ret, -EINVAL, "source: rt1_1 is a switch, not an endpoint", &err, &s);
	snap_take(t, ct, &s);
	ret = circuit_open(ct, 1, src, N(t, "rt1_1"), &err);
	bad(t, ct, ret, -EINVAL,
	    "circuit from pe5_5: destination: rt1_1 is a switch, not an endpoint", &err, &s);
	snap_take(t, ct, &s);
	ret = circuit_open(ct, 1, src, src, &err);
	bad(t, ct, ret, -EINVAL, "circuit from pe5_5: destination is the source pe5_5",
	    &err, &s);

	leaves[0] = N(t, "pe0_0");
	leaves[1] = N(t, "pe1_0");
	leaves[2] = N(t, "pe2_0");
	leaves[3] = N(t, "pe1_0");
	snap_take(t, ct, &s);
	ret = circuit_open_multicast(ct, 1, src, leaves, 0, &err);
	bad(t, ct, ret, -EINVAL, "multicast from pe5_5: no leaves", &err, &s);
	snap_take(t, ct, &s);
	ret = circuit_open_multicast(ct, 1, src, leaves, 4, &err);
	bad(t, ct, ret, -EINVAL, "multicast from pe5_5: leaves[3]: pe1_0 is also leaves[1]",
	    &err, &s);
	leaves[3] = src;
	snap_take(t, ct, &s);
	ret = circuit_open_multicast(ct, 1, src, leaves, 4, &err);
	bad(t, ct, ret, -EINVAL, "multicast from pe5_5: leaves[3] is the source pe5_5",
	    &err, &s);
	leaves[3] = N(t, "rt3_0");
	snap_take(t, ct, &s);
	ret = circuit_open_multicast(ct, 1, src, leaves, 4, &err);
	bad(t, ct, ret, -EINVAL,
	    "multicast from pe5_5: leaves[3]: rt3_0 is a switch, not an endpoint", &err, &s);
	leaves[3] = 70000;
	snap_take(t, ct, &s);
	ret = circuit_open_multicast(ct, 1, src, leaves, 4, &err);
	bad(t, ct, ret, -ENOENT,
	    "multicast from pe5_5: leaves[3]: no node 70000 (the fabric has 512)", &err, &s);
	leaves[3] = N(t, "pe3_0");
	ret = circuit_open_multicast(ct, 1, src, leaves, 4, &err);
	ok(ret == 1, "the same leaves, fixed, are accepted (the scratch state was reset)");

	/* A leaf whose router is full: the whole tree is refused. */
	{
		uint32_t i, full = N(t, "pe15_15"), nb = N(t, "pe14_15");
		uint32_t l2[3] = { N(t, "pe0_15"), N(t, "pe8_8"), full };

		for (i = 0; i < 24; i++)
			circuit_open(ct, 2, nb, full, &err);
		snap_take(t, ct, &s);
		ret = circuit_open_multicast(ct, 1, src, l2, 3, &err);
		/* DOR: east to (15,5), then north: (14,15) is not on it */
		bad(t, ct, ret, -ENOSPC, "router (15,15): 24/24 colors in use", &err, &s);
	}
	circuit_table_free(ct);
	topo_free(t);
}

static void test_unreachable(void)
{
	struct topo *t = load_routed(
		"defaults:\n  switch: {colors: 24}\n"
		"topology:\n  mesh: {dims: [4, 4], routers: true, bandwidth: 1GB/s}\n");
	struct topo_err err = { "" };
	struct circuit_table *ct;
	uint32_t a, d, leaves[2];
	char want[128];
	struct snap s;
	int l, ret;

	t = with_table(t, &ct, "4x4 mesh with routers");
	if (!t)
		return;
	a = N(t, "pe0_0");
	d = N(t, "pe3_3");
	ret = circuit_open(ct, 1, a, d, &err);
	ok(ret == 0 && circuit_get(ct, 0)->nr_links == 8,
	   "4x4 with routers: pe0_0 -> pe3_3 crosses 8 links");
	/* cut pe3_3 off its router, without rerouting yet */
	l = topo_find_link(t, N(t, "rt3_3"), d);
	topo_link_set_state(t, l, ICFAB_LINK_DOWN, 0);
	topo_link_set_state(t, t->links[l].peer, ICFAB_LINK_DOWN, 0);
	snprintf(want, sizeof(want),
		 "the route from pe0_0 to pe3_3 crosses link %d (rt3_3 -> pe3_3), which is down",
		 l);
	snap_take(t, ct, &s);
	ret = circuit_open(ct, 1, a, d, &err);
	bad(t, ct, ret, -ENETDOWN, want, &err, &s);
	topo_route(t, &err);
	snap_take(t, ct, &s);
	ret = circuit_open(ct, 1, a, d, &err);
	bad(t, ct, ret, -EHOSTUNREACH, "no route from pe0_0 to pe3_3 (none at pe0_0)", &err, &s);
	leaves[0] = N(t, "pe1_1");
	leaves[1] = d;
	snap_take(t, ct, &s);
	ret = circuit_open_multicast(ct, 1, a, leaves, 2, &err);
	bad(t, ct, ret, -EHOSTUNREACH, "no route from pe0_0 to pe3_3 (none at pe0_0)", &err, &s);
	ok(circuit_open(ct, 1, a, leaves[0], &err) == 1, "reachable pairs still work");

	/* Make the tables disagree per destination: paths that part and meet again. */
	{
		uint32_t x = N(t, "rt0_0"), m = N(t, "rt1_1"), to1 = N(t, "pe1_1"),
			 to2 = N(t, "pe2_1"), pl[2] = { to1, to2 }, up = 0;
		const struct circuit *c;
		uint16_t keep = t->routes[x * t->nr_nodes + to2];

		/* rt0_0 sends pe2_1's traffic up (y first) instead of east */
		t->routes[x * t->nr_nodes + to2] = t->grid->dir_port[(0 * 2 + 1) * 2 + 0];
		ret = circuit_open_multicast(ct, 1, a, pl, 2, &err);
		c = ret >= 0 ? circuit_get(ct, ret) : NULL;
		for (l = 0; c && l < (int)c->nr_links; l++)
			up += t->links[c->links[l]].dst_node == N(t, "rt0_1");
		ok(c && c->nr_links == 6 && !up,
		   "routes that part at rt0_0 and meet again at rt1_1: pe2_1 joins pe1_1's branch at rt1_1 (%d: %s)",
		   ret, err.msg);
		if (c)
			circuit_close(ct, ret, &err);
		t->routes[x * t->nr_nodes + to2] = keep;
		(void)m;
	}
	circuit_table_free(ct);
	topo_free(t);

	/* No router with a color table: a plain mesh, and colors: 0 switches. */
	t = load_routed("topology:\n  mesh: {dims: [3, 3], bandwidth: 1GB/s}\n");
	if (t && !circuit_table_new(t, &ct, &err)) {
		snap_take(t, ct, &s);
		ret = circuit_open(ct, 1, N(t, "pe0_0"), N(t, "pe2_2"), &err);
		bad(t, ct, ret, -EOPNOTSUPP,
		    "circuit from pe0_0: no router with a color table on the path", &err, &s);
		circuit_table_free(ct);
	} else {
		ok(0, "plain mesh");
	}
	topo_free(t);

	t = load("topology:\n  mesh: {dims: [3, 3], routers: true, bandwidth: 1GB/s}\n"
		 "defaults:\n  switch: {colors: 24}\n");
	if (t && !circuit_table_new(t, &ct, &err)) {
		snap_take(t, ct, &s);
		ret = circuit_open(ct, 1, N(t, "pe0_0"), N(t, "pe2_2"), &err);
		bad(t, ct, ret, -EINVAL, "the topology has no routes yet", &err, &s);
		circuit_table_free(ct);
	} else {
		ok(0, "unrouted mesh");
	}
	topo_free(t);
}

/* The spine (or any node past the first switch) a route takes: its 3rd node. */
static uint32_t route_third(const struct topo *t, uint32_t s, uint32_t d)
{
	uint32_t path[64], n = route_links(t, s, d, path);

	return n >= 3 ? t->links[path[1]].dst_node : TOPO_NONE;
}

/*
 * A leaf/spine whose tables spread destinations over the spines: the
 * routes from one source to leaves behind one leaf switch come down
 * through different spines and meet again there. The tree grafts each
 * later route at the last node already reached (as the module builds its
 * data tree), so every node is reached by exactly one link.
 */
static void test_clos_reconverges(void)
{
	struct topo *t = load_routed(
		"defaults:\n  switch: {colors: 8}\n"
		"topology:\n  switch: {endpoints: 16, name: acc, radix: 8,"
		" bandwidth: 100GB/s, latency: 100ns}\n");
	uint32_t leaves[15], src, i, n = 0, *in_deg;
	uint32_t twice = 0, orphans = 0, unreached = 0, spines = 0, meet = 0;
	struct topo_err err = { "" };
	const struct circuit *c;
	struct circuit_table *ct;
	uint8_t *reached;
	int id;

	t = with_table(t, &ct, "16 accelerators on 4 leaves and 2 spines");
	if (!t)
		return;
	src = N(t, "acc0");
	for (i = 1; i < 16; i++) {
		char name[16];

		snprintf(name, sizeof(name), "acc%u", i);
		leaves[n++] = N(t, name);
	}
	/* The premise: two leaves behind leaf1 are routed over different spines. */
	for (i = 4; i < 7; i++)
		meet += route_third(t, src, leaves[i]) != TOPO_NONE &&
			route_third(t, src, leaves[i]) != route_third(t, src, leaves[i + 1]);
	ok(meet > 0, "the routes to acc5..acc8 (behind leaf1) cross different spines");

	id = circuit_open_multicast(ct, 1, src, leaves, n, &err);
	ok(id == 0, "acc0 -> the other 15: a tree (%d: %s)", id, err.msg);
	c = id >= 0 ? circuit_get(ct, id) : NULL;
	if (!c) {
		circuit_table_free(ct);
		topo_free(t);
		return;
	}
	in_deg = calloc(t->nr_nodes, sizeof(*in_deg));
	reached = calloc(t->nr_nodes, 1);
	reached[src] = 1;
	for (i = 0; i < c->nr_links; i++) {
		const struct topo_link *l = &t->links[c->links[i]];

		orphans += !reached[l->src_node];	/* top-down order */
		twice += in_deg[l->dst_node]++ > 0 || l->dst_node == src;
		reached[l->dst_node] = 1;
		spines += !strncmp(t->nodes[l->dst_node].name, "spine", 5);
	}
	for (i = 0; i < n; i++)
		unreached += in_deg[leaves[i]] != 1;
	ok(!twice && !orphans && !unreached,
	   "every leaf reached exactly once, every link hangs off the tree (%u twice, %u orphans, %u leaves not reached once)",
	   twice, orphans, unreached);
	ok(spines >= 1 && c->nr_links == 1 + 3 + 3 * 4 + 3 + spines,
	   "%u links: acc0's uplink, leaf0's 3, 3 leaves x 4 down, a leaf0 -> spine -> leaf branch per spine used (%u)",
	   c->nr_links, spines);
	ok(c->nr_routers == 4 + spines,
	   "the color is held at the 4 leaves and the %u spine(s) on the tree (%u routers)",
	   spines, c->nr_routers);
	free(reached);
	free(in_deg);
	circuit_table_free(ct);
	topo_free(t);
}

int main(void)
{
	test_budget();
	test_fragmented();
	test_multicast();
	test_queries();
	test_named_router();
	test_bad_requests();
	test_unreachable();
	test_clos_reconverges();
	return done();
}
