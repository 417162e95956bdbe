// SPDX-License-Identifier: GPL-2.0
/*
 * topo_check(): is this topology something the module will accept, and
 * can every endpoint reach every other one? Reports the first problem as
 * "file:line: message" and changes nothing.
 *
 * Order: fabric parameters, counts against the module's limits, nodes,
 * links, ports, then reachability: through the route tables when they
 * have been computed (so a routing rule that strands a pair is caught),
 * else through the links alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

static int check_fabric(const struct topo *t, const struct icfab_limits *lim,
			struct topo_err *err)
{
	if (t->segment_size < lim->min_segment_size ||
	    t->segment_size > lim->max_segment_size)
		return topo_errf(err, &t->src,
				 "segment_size %u bytes is outside the module's %u..%u",
				 t->segment_size, lim->min_segment_size,
				 lim->max_segment_size);
	if (t->time_mode > ICFAB_TIME_MAX)
		return topo_errf(err, &t->src, "invalid time mode %u", t->time_mode);
	if (lim->max_dilation && (t->dilation < 1 || t->dilation > lim->max_dilation))
		return topo_errf(err, &t->src, "dilation %u is outside 1..%u",
				 t->dilation, lim->max_dilation);
	return 0;
}

/* The node that makes count reach limit + 1, to blame for the excess. */
static const struct topo_src *nth_of_kind(const struct topo *t, uint32_t kind,
					  uint32_t nth)
{
	uint32_t i, seen = 0;

	for (i = 0; i < t->nr_nodes; i++)
		if (t->nodes[i].kind == kind && ++seen == nth)
			return &t->nodes[i].src;
	return &t->src;
}

static int check_counts(const struct topo *t, const struct icfab_limits *lim,
			struct topo_err *err)
{
	if (t->nr_endpoints > lim->max_endpoints)
		return topo_errf(err, nth_of_kind(t, ICFAB_NODE_ENDPOINT,
						  lim->max_endpoints + 1),
				 "%u endpoints, more than the module's %u",
				 t->nr_endpoints, lim->max_endpoints);
	if (t->nr_switches > lim->max_switches)
		return topo_errf(err, nth_of_kind(t, ICFAB_NODE_SWITCH,
						  lim->max_switches + 1),
				 "%u switches, more than the module's %u",
				 t->nr_switches, lim->max_switches);
	/* node ids are dense, so this bounds the highest id */
	if ((uint64_t)t->nr_nodes > (uint64_t)lim->max_endpoints + lim->max_switches)
		return topo_errf(err, &t->nodes[lim->max_endpoints + lim->max_switches].src,
				 "node ids up to %u, the module takes ids below %u",
				 t->nr_nodes - 1, lim->max_endpoints + lim->max_switches);
	if (t->nr_links > lim->max_links)
		return topo_errf(err, &t->links[lim->max_links].src,
				 "%u directed links, more than the module's %u",
				 t->nr_links, lim->max_links);
	if ((uint64_t)t->nr_links + t->nr_tiers > lim->max_links)
		return topo_errf(err, &t->tiers[lim->max_links - t->nr_links].src,
				 "%u directed links and %u tier ports, more than the module's %u links",
				 t->nr_links, t->nr_tiers, lim->max_links);
	if (!t->nr_endpoints)
		return topo_errf(err, &t->src, "no endpoints");
	return 0;
}

static int check_nodes(const struct topo *t, const struct icfab_limits *lim,
		       struct topo_err *err)
{
	uint32_t i;

	for (i = 0; i < t->nr_nodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		if (n->kind > ICFAB_NODE_KIND_MAX)
			return topo_errf(err, &n->src, "node '%s': invalid kind %u",
					 n->name, n->kind);
		if (n->nr_ports > lim->max_ports)
			return topo_errf(err, &n->src,
					 "node '%s' has %u ports, more than the module's %u",
					 n->name, n->nr_ports, lim->max_ports);
		if (n->kind == ICFAB_NODE_SWITCH && n->colors > lim->max_colors)
			return topo_errf(err, &n->src,
					 "switch '%s' has %u colors, more than the module's %u",
					 n->name, n->colors, lim->max_colors);
	}
	return 0;
}

static int check_link(const struct topo *t, const struct topo_link *l,
		      struct topo_err *err)
{
	const struct topo_node *a, *b;

	if (l->src_node >= t->nr_nodes || l->dst_node >= t->nr_nodes)
		return topo_errf(err, &l->src, "link to undefined node %u",
				 l->src_node >= t->nr_nodes ? l->src_node : l->dst_node);
	a = &t->nodes[l->src_node];
	b = &t->nodes[l->dst_node];
	if (l->src_node == l->dst_node)
		return topo_errf(err, &l->src, "link from '%s' to itself", a->name);
	if (l->src_port >= a->nr_ports)
		return topo_errf(err, &l->src,
				 "port %u is beyond node '%s' port count (%u)",
				 l->src_port, a->name, a->nr_ports);
	if (l->dst_port >= b->nr_ports)
		return topo_errf(err, &l->src,
				 "port %u is beyond node '%s' port count (%u)",
				 l->dst_port, b->name, b->nr_ports);
	if (!l->bandwidth)
		return topo_errf(err, &l->src, "link %s:%u -> %s:%u has zero bandwidth",
				 a->name, l->src_port, b->name, l->dst_port);
	if (l->class > ICFAB_LINK_CLASS_MAX || l->state > ICFAB_LINK_STATE_MAX)
		return topo_errf(err, &l->src, "link %s -> %s: invalid class or state",
				 a->name, b->name);
	if (l->state == ICFAB_LINK_DEGRADED &&
	    (l->bw_permille < 1 || l->bw_permille > 999))
		return topo_errf(err, &l->src,
				 "link %s -> %s: degraded needs bw_permille 1..999",
				 a->name, b->name);
	return 0;
}

static int port_conflict(const struct topo *t, uint32_t li, bool out,
			 struct topo_err *err)
{
	const struct topo_link *l = &t->links[li];
	uint32_t node = out ? l->src_node : l->dst_node;
	uint32_t port = out ? l->src_port : l->dst_port;

	return topo_errf(err, &l->src,
			 "port %u of node '%s' already %s a link (a port is one full-duplex cable)",
			 port, t->nodes[node].name, out ? "sends on" : "receives from");
}

static int check_links(const struct topo *t, struct topo_err *err)
{
	uint32_t out_conflict, in_conflict, i;
	struct topo_ports p;
	int ret;

	for (i = 0; i < t->nr_links; i++) {
		ret = check_link(t, &t->links[i], err);
		if (ret)
			return ret;
	}
	ret = topo_ports_build(t, &p, &out_conflict, &in_conflict);
	if (ret)
		return ret;
	topo_ports_free(&p);
	if (out_conflict != TOPO_NONE)
		return port_conflict(t, out_conflict, true, err);
	if (in_conflict != TOPO_NONE)
		return port_conflict(t, in_conflict, false, err);
	return 0;
}

/* The message names the pair; the line is blame's, the node cut off. */
static int unreachable(const struct topo *t, uint32_t from, uint32_t to,
		       uint32_t blame, const char *why, struct topo_err *err)
{
	const struct topo_node *a = &t->nodes[from], *b = &t->nodes[to];

	return topo_errf(err, &t->nodes[blame].src,
			 "endpoints '%s' and '%s' cannot reach each other: %s from '%s' to '%s'",
			 a->name, b->name, why, a->name, b->name);
}

/* BFS from first over usable links, forwards (dir 0) or backwards. */
static void bfs(const struct topo *t, const struct topo_ports *p,
		uint32_t first, int dir, uint8_t *seen, uint32_t *queue)
{
	uint32_t head = 0, tail = 0, u, s;

	memset(seen, 0, t->nr_nodes);
	seen[first] = 1;
	queue[tail++] = first;
	while (head < tail) {
		u = queue[head++];
		for (s = p->base[u]; s < p->base[u + 1]; s++) {
			uint32_t li = dir ? p->in[s] : p->out[s], v;

			if (li == TOPO_NONE || !topo_link_usable(&t->links[li]))
				continue;
			v = dir ? t->links[li].src_node : t->links[li].dst_node;
			if (!seen[v]) {
				seen[v] = 1;
				queue[tail++] = v;
			}
		}
	}
}

/* Without tables: every endpoint reaches the first one and back. */
static int check_connected(const struct topo *t, struct topo_err *err)
{
	uint32_t *queue = malloc(t->nr_nodes * sizeof(*queue));
	uint8_t *seen = malloc(t->nr_nodes);
	uint32_t first = 0, i;
	struct topo_ports p = { 0 };
	int ret = -ENOMEM, dir;

	if (!queue || !seen || topo_ports_build(t, &p, NULL, NULL))
		goto out;
	ret = 0;
	while (t->nodes[first].kind != ICFAB_NODE_ENDPOINT)
		first++;	/* check_counts() made sure there is one */
	for (dir = 0; dir < 2 && !ret; dir++) {
		bfs(t, &p, first, dir, seen, queue);
		for (i = 0; i < t->nr_nodes && !ret; i++) {
			if (t->nodes[i].kind != ICFAB_NODE_ENDPOINT || seen[i])
				continue;
			ret = dir ? unreachable(t, i, first, i, "no path", err) :
				    unreachable(t, first, i, i, "no path", err);
		}
	}
out:
	topo_ports_free(&p);
	free(queue);
	free(seen);
	return ret;
}

enum { WALK_UNKNOWN, WALK_ON_PATH, WALK_OK, WALK_BAD };

/*
 * Destinations are checked COLS at a time from a transposed copy of their
 * columns: walking a column of the row-major tables directly costs a
 * cache miss per entry (16M of them for 4096 nodes).
 */
#define COLS	32

/*
 * Follow the tables towards d from every endpoint, memoised (each node is
 * settled once per destination). The first failing (source, d) pair is
 * reported with why its path fails. col[v] is v's entry for d.
 */
#define HOP_UNCONNECTED	(TOPO_NONE - 1)
#define HOP_DOWN	(TOPO_NONE - 2)

static int check_column(const struct topo *t, const struct topo_ports *p,
			const uint32_t *hop, uint32_t d, const uint16_t *col,
			uint8_t *mark, uint32_t *stack, struct topo_err *err)
{
	uint32_t n = t->nr_nodes, u, v, depth;

	memset(mark, WALK_UNKNOWN, n);
	mark[d] = WALK_OK;
	for (u = 0; u < n; u++) {
		const char *why = NULL;

		if (t->nodes[u].kind != ICFAB_NODE_ENDPOINT)
			continue;
		depth = 0;
		for (v = u; mark[v] == WALK_UNKNOWN;) {
			uint16_t port = col[v];
			uint32_t next;

			mark[v] = WALK_ON_PATH;
			stack[depth++] = v;
			if (port == ICFAB_ROUTE_NONE ||
			    port >= p->base[v + 1] - p->base[v]) {
				why = "no route";
				break;
			}
			next = hop[p->base[v] + port];
			if (next == HOP_UNCONNECTED) {
				why = "a route through an unconnected port";
				break;
			}
			if (next == HOP_DOWN) {
				why = "a route over a down link (rerun routing)";
				break;
			}
			v = next;
		}
		if (!why && mark[v] == WALK_ON_PATH)
			why = "a routing loop";
		if (!why && mark[v] == WALK_BAD)
			why = "no route";
		while (depth)
			mark[stack[--depth]] = why ? WALK_BAD : WALK_OK;
		if (why)
			return unreachable(t, u, d, u, why, err);
	}
	return 0;
}

static int check_tables(const struct topo *t, struct topo_err *err)
{
	uint32_t n = t->nr_nodes, d0, d, v, w;
	uint32_t *stack = malloc(n * sizeof(*stack));
	uint16_t *cols = malloc((size_t)n * COLS * sizeof(*cols));
	uint8_t *mark = malloc(n);
	struct topo_ports p = { 0 };
	uint32_t *hop = NULL, i;
	int ret = -ENOMEM;

	if (!stack || !cols || !mark || topo_ports_build(t, &p, NULL, NULL))
		goto out;
	/* (node, port) -> next node, so that a walk step touches one word */
	hop = malloc((p.base[n] + 1) * sizeof(*hop));
	if (!hop)
		goto out;
	for (i = 0; i < p.base[n]; i++) {
		uint32_t li = p.out[i];

		hop[i] = li == TOPO_NONE ? HOP_UNCONNECTED :
			 !topo_link_usable(&t->links[li]) ? HOP_DOWN :
			 t->links[li].dst_node;
	}
	ret = 0;
	for (d0 = 0; d0 < n && !ret; d0 += COLS) {
		w = n - d0 < COLS ? n - d0 : COLS;
		for (v = 0; v < n; v++)
			for (d = 0; d < w; d++)
				cols[(size_t)d * n + v] = t->routes[(size_t)v * n + d0 + d];
		for (d = 0; d < w && !ret; d++)
			if (t->nodes[d0 + d].kind == ICFAB_NODE_ENDPOINT)
				ret = check_column(t, &p, hop, d0 + d,
						   &cols[(size_t)d * n], mark, stack, err);
	}
out:
	free(hop);
	topo_ports_free(&p);
	free(stack);
	free(cols);
	free(mark);
	return ret;
}

/*
 * A member of u's entry towards d (a set's, or a plain port on a path
 * a set opened) reaches @far, which closes a loop (on the search path
 * stack[0..depth-1]) or has no route: the message names the
 * destination, the node, the port and, for a loop, its nodes; the line
 * is the file's ecmp: (icfabd built the sets).
 */
static int set_fails(const struct topo *t, uint32_t u, uint32_t d,
		     uint16_t port, uint32_t far, const uint32_t *stack,
		     uint32_t depth, bool loop, struct topo_err *err)
{
	char path[256] = "";
	size_t len = 0;
	uint32_t i = 0;

	if (loop) {
		while (i < depth && stack[i] != far)
			i++;
		for (; i < depth && len < sizeof(path); i++)
			len += (size_t)snprintf(path + len, sizeof(path) - len,
						"'%s' -> ", t->nodes[stack[i]].name);
		if (len < sizeof(path))
			snprintf(path + len, sizeof(path) - len, "'%s'",
				 t->nodes[far].name);
	}
	return topo_errf(err, &t->ecmp_src,
			 "ecmp: towards '%s', '%s' by port %u %s%s%s",
			 t->nodes[d].name, t->nodes[u].name, port,
			 loop ? "closes a loop" : "reaches a node with no route",
			 loop ? ": " : "", path);
}

/*
 * With next-hop sets, every member must lead to d as well: a depth-first
 * search per destination over every member of every set (a plain entry
 * is a set of one), as the module's commit does.
 */
static int check_sets(const struct topo *t, struct topo_err *err)
{
	uint32_t n = t->nr_nodes, d, u, depth;
	uint32_t *stack = malloc((n + 1) * sizeof(*stack));
	uint8_t *mark = malloc(n + 1);
	uint8_t *next = malloc(n + 1);
	struct topo_ports p = { 0 };
	int ret = -ENOMEM;

	if (!stack || !mark || !next || topo_ports_build(t, &p, NULL, NULL))
		goto out;
	ret = 0;
	for (d = 0; d < n && !ret; d++) {
		if (t->nodes[d].kind != ICFAB_NODE_ENDPOINT)
			continue;
		memset(mark, WALK_UNKNOWN, n);
		mark[d] = WALK_OK;
		for (u = 0; u < n && !ret; u++) {
			if (mark[u] != WALK_UNKNOWN ||
			    t->routes[(size_t)u * n + d] == ICFAB_ROUTE_NONE)
				continue;
			depth = 0;
			stack[depth++] = u;
			mark[u] = WALK_ON_PATH;
			next[u] = 0;
			while (depth && !ret) {
				uint32_t v = stack[depth - 1], li, far;
				const struct topo_rset *s = topo_route_set(t, v, d);
				uint16_t port;

				if (next[v] == (s ? s->nr : 1)) {
					mark[v] = WALK_OK;
					depth--;
					continue;
				}
				port = s ? s->ports[next[v]] :
					   t->routes[(size_t)v * n + d];
				next[v]++;
				li = port < p.base[v + 1] - p.base[v] ?
				     p.out[p.base[v] + port] : TOPO_NONE;
				if (li == TOPO_NONE) {
					ret = set_fails(t, v, d, port, v, stack,
							depth, false, err);
					break;
				}
				far = t->links[li].dst_node;
				if (mark[far] == WALK_OK)
					continue;
				if (mark[far] == WALK_ON_PATH)
					ret = set_fails(t, v, d, port, far, stack,
							depth, true, err);
				else if (t->routes[(size_t)far * n + d] ==
					 ICFAB_ROUTE_NONE)
					ret = set_fails(t, v, d, port, far, stack,
							depth, false, err);
				else {
					mark[far] = WALK_ON_PATH;
					next[far] = 0;
					stack[depth++] = far;
				}
			}
		}
	}
out:
	topo_ports_free(&p);
	free(stack);
	free(mark);
	free(next);
	return ret;
}

int topo_check(const struct topo *t, const struct icfab_limits *lim,
	       struct topo_err *err)
{
	int ret;

	ret = check_fabric(t, lim, err);
	if (!ret)
		ret = check_counts(t, lim, err);
	if (!ret)
		ret = check_nodes(t, lim, err);
	if (!ret)
		ret = check_links(t, err);
	if (!ret)
		ret = t->routes ? check_tables(t, err) : check_connected(t, err);
	if (!ret && t->routes && t->route_sets)
		ret = check_sets(t, err);
	return ret;
}
