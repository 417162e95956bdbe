// SPDX-License-Identifier: GPL-2.0
/*
 * Route computation: destination-based tables, one u16 port per (node,
 * destination), as the module's ROUTE_SET takes them. Only endpoints are
 * destinations; a node's entry for itself is ICFAB_ROUTE_NONE.
 *
 * Three algorithms, each deterministic (same input, same tables):
 *
 * dor		Dimension order on the grid of a mesh/torus/supermesh:
 *		dimension 0 first, then 1, ...; on a torus the shorter way
 *		round, + on a tie. It ignores link state, so after a
 *		failure the pairs whose DOR path crosses a DOWN link (and
 *		only those) are rerouted by least latency, as are nodes
 *		outside the grid. The result is loop-free: a rerouted node
 *		hands over to a strictly closer node, and a node whose DOR
 *		path is intact keeps it all the way.
 *
 * shortest	Least latency (Dijkstra towards each destination). A link
 *		costs its latency plus 1 ps, so zero-latency links cannot
 *		make loops and equal latencies prefer fewer hops. Equal-cost
 *		ports are spread by destination (see best_port()).
 *
 * updown	up*down*: nodes are ranked by (distance from the nearest
 *		endpoint, id); a link towards a higher rank is "up". A route
 *		never goes down then up, so an endpoint whose links all go
 *		up to switches is never transit (no GPU forwards between
 *		its NVSwitch and its NIC) and switch hierarchies route
 *		leaf -> spine -> leaf. Where a
 *		down-only path exists it is taken, which in a tree of
 *		switches is also the shortest.
 *
 * DOWN links are never used; DEGRADED ones are.
 *
 * With ecmp: flow or spray (shortest and updown only), every entry whose
 * node has equal-cost ports to more than one neighbour also gets a
 * next-hop set (docs/TIMING.md, "Equal-cost next hops"): the port taken
 * above first, then for each other neighbour its lowest tied port in
 * port order, at most ICFAB_ROUTE_SET_MAX_PORTS. Every member lies on a
 * least-cost path (cost strictly decreasing; updown: the same up or
 * down rule), so the sets cannot loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

#define DIST_INF	UINT64_MAX

int topo_ports_build(const struct topo *t, struct topo_ports *p,
		     uint32_t *out_conflict, uint32_t *in_conflict)
{
	uint32_t i, total = 0;

	if (out_conflict)
		*out_conflict = TOPO_NONE;
	if (in_conflict)
		*in_conflict = TOPO_NONE;
	p->base = malloc((t->nr_nodes + 1) * sizeof(*p->base));
	if (!p->base)
		return -ENOMEM;
	for (i = 0; i < t->nr_nodes; i++) {
		p->base[i] = total;
		total += t->nodes[i].nr_ports;
	}
	p->base[t->nr_nodes] = total;
	p->out = malloc((total + 1) * sizeof(*p->out));
	p->in = malloc((total + 1) * sizeof(*p->in));
	if (!p->out || !p->in) {
		topo_ports_free(p);
		return -ENOMEM;
	}
	memset(p->out, 0xff, (total + 1) * sizeof(*p->out));
	memset(p->in, 0xff, (total + 1) * sizeof(*p->in));
	for (i = 0; i < t->nr_links; i++) {
		const struct topo_link *l = &t->links[i];
		uint32_t *o, *in;

		/* out-of-range ports are topo_check's to report */
		if (l->src_node >= t->nr_nodes || l->dst_node >= t->nr_nodes ||
		    l->src_port >= t->nodes[l->src_node].nr_ports ||
		    l->dst_port >= t->nodes[l->dst_node].nr_ports)
			continue;
		o = &p->out[p->base[l->src_node] + l->src_port];
		in = &p->in[p->base[l->dst_node] + l->dst_port];
		if (*o == TOPO_NONE)
			*o = i;
		else if (out_conflict && *out_conflict == TOPO_NONE)
			*out_conflict = i;
		if (*in == TOPO_NONE)
			*in = i;
		else if (in_conflict && *in_conflict == TOPO_NONE)
			*in_conflict = i;
	}
	return 0;
}

void topo_ports_free(struct topo_ports *p)
{
	free(p->base);
	free(p->out);
	free(p->in);
	p->base = p->out = p->in = NULL;
}

/* ---- shared state of one topo_route() run --------------------------- */

struct rctx {
	struct topo *t;
	uint32_t n;
	const uint32_t *pbase, *pout;
	uint32_t *in_base, *in_link;	/* links arriving at each node */
	uint64_t *dist;
	uint64_t *dist2;
	uint32_t *heap_node;		/* binary heap, lazy deletion */
	uint64_t *heap_key;
	uint32_t heap_len;
	uint8_t *mark;
	uint32_t *rank;			/* updown: position in (level, id) order */
};

static uint64_t link_cost(const struct topo_link *l)
{
	return l->latency_ps + 1;
}

static uint16_t *route_entry(struct rctx *r, uint32_t u, uint32_t d)
{
	return &r->t->routes[(size_t)u * r->n + d];
}

static void heap_push(struct rctx *r, uint64_t key, uint32_t node)
{
	uint32_t i = r->heap_len++;

	while (i) {
		uint32_t parent = (i - 1) / 2;

		if (r->heap_key[parent] <= key)
			break;
		r->heap_key[i] = r->heap_key[parent];
		r->heap_node[i] = r->heap_node[parent];
		i = parent;
	}
	r->heap_key[i] = key;
	r->heap_node[i] = node;
}

static uint32_t heap_pop(struct rctx *r, uint64_t *key)
{
	uint32_t top = r->heap_node[0], i = 0, last = --r->heap_len;
	uint64_t lk = r->heap_key[last];

	*key = r->heap_key[0];
	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= r->heap_len)
			break;
		if (c + 1 < r->heap_len && r->heap_key[c + 1] < r->heap_key[c])
			c++;
		if (r->heap_key[c] >= lk)
			break;
		r->heap_key[i] = r->heap_key[c];
		r->heap_node[i] = r->heap_node[c];
		i = c;
	}
	r->heap_key[i] = lk;
	r->heap_node[i] = r->heap_node[last];
	return top;
}

/* Least cost from every node to d, over usable links, into r->dist. */
static void dijkstra_to(struct rctx *r, uint32_t d)
{
	const struct topo_link *links = r->t->links;
	uint32_t u, i;
	uint64_t key;

	for (u = 0; u < r->n; u++)
		r->dist[u] = DIST_INF;
	r->dist[d] = 0;
	r->heap_len = 0;
	heap_push(r, 0, d);
	while (r->heap_len) {
		u = heap_pop(r, &key);
		if (key != r->dist[u])
			continue;	/* stale entry */
		for (i = r->in_base[u]; i < r->in_base[u + 1]; i++) {
			const struct topo_link *l = &links[r->in_link[i]];
			uint64_t nd = key + link_cost(l);

			if (!topo_link_usable(l) || nd >= r->dist[l->src_node])
				continue;
			r->dist[l->src_node] = nd;
			heap_push(r, nd, l->src_node);
		}
	}
}

/*
 * The port of u on a least-cost path towards destination d, given dist[]
 * towards d. allow(l) filters links (up/down rules), NULL allows all.
 *
 * Equal-cost ports (parallel cables, several spines, several shortest
 * directions) are spread by destination: the candidates are taken in
 * port order and d picks the one at (sum of d's digits in base count)
 * mod count. Over count consecutive ids aligned to count that is a
 * rotation of d mod count, and endpoint ids are consecutive within a
 * generated leaf, node or grid, so the destinations behind a set of
 * uplinks are dealt over all of them, each carrying within one of the
 * others. Plain d mod count would repeat itself one hop later: a spine
 * reached by the destinations d = j (mod 32) of a leaf's 32 uplinks
 * would put them all on the same one of its 2 cables down; the higher
 * digits tell them apart. The rule depends on (u, d) only, not on the
 * order tables are filled in, so a partial recomputation (DOR repair)
 * agrees with a full one. Every candidate lies on a least-cost path
 * (cost = link cost + dist of the next node, strictly decreasing since a
 * link costs at least 1 ps), so the tables stay loop-free and minimal
 * whichever candidate is taken.
 */
static uint32_t digit_sum(uint32_t v, uint32_t base)
{
	uint32_t sum = 0;

	if (base < 2)
		return 0;
	for (; v; v /= base)
		sum += v % base;
	return sum;
}

static uint16_t best_port(struct rctx *r, uint32_t u, uint32_t d,
			  const uint64_t *dist,
			  bool (*allow)(struct rctx *r, const struct topo_link *l),
			  uint64_t *cost)
{
	uint32_t p, nports = r->pbase[u + 1] - r->pbase[u], ties = 0, pick;
	uint64_t best = DIST_INF;
	uint16_t port = ICFAB_ROUTE_NONE;

	for (pick = 0; pick < 2; pick++) {
		uint32_t seen = 0;

		/* pass 0: the least cost and how many ports reach it; 1: pick */
		for (p = 0; p < nports; p++) {
			uint32_t li = r->pout[r->pbase[u] + p];
			const struct topo_link *l;
			uint64_t c;

			if (li == TOPO_NONE)
				continue;
			l = &r->t->links[li];
			if (!topo_link_usable(l) || dist[l->dst_node] == DIST_INF ||
			    (allow && !allow(r, l)))
				continue;
			c = link_cost(l) + dist[l->dst_node];
			if (!pick) {
				if (c < best) {
					best = c;
					ties = 0;
				}
				ties += c == best;
			} else if (c == best && seen++ == digit_sum(d, ties) % ties) {
				port = p;
				break;
			}
		}
		if (best == DIST_INF)
			break;
	}
	if (cost)
		*cost = best;
	return port;
}

/* ---- next-hop sets ---------------------------------------------------- */

void topo_sets_free(struct topo *t)
{
	uint32_t i;

	if (t->node_sets)
		for (i = 0; i < t->nr_nodes; i++)
			free(t->node_sets[i].v);
	free(t->node_sets);
	free(t->route_sets);
	t->node_sets = NULL;
	t->route_sets = NULL;
}

static int sets_alloc(struct topo *t)
{
	size_t n = t->nr_nodes;

	t->route_sets = malloc(n * n * sizeof(*t->route_sets) + 1);
	t->node_sets = calloc(n + 1, sizeof(*t->node_sets));
	if (!t->route_sets || !t->node_sets) {
		topo_sets_free(t);
		return -ENOMEM;
	}
	memset(t->route_sets, 0xff, n * n * sizeof(*t->route_sets));
	return 0;
}

int topo_sets_add(struct topo *t, uint32_t node, const struct topo_rset *s)
{
	struct topo_node_sets *ns = &t->node_sets[node];
	uint32_t i;

	for (i = 0; i < ns->n; i++)
		if (!memcmp(&ns->v[i], s, sizeof(*s)))
			return (int)i;
	if (ns->n >= ICFAB_ROUTE_SETS_MAX)
		return -1;
	if (ns->n == ns->cap) {
		uint32_t cap = ns->cap ? 2 * ns->cap : 4;
		struct topo_rset *v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n] = *s;
	return (int)ns->n++;
}

uint16_t topo_route_entry(const struct topo *t, uint32_t src, uint32_t dst)
{
	size_t i = (size_t)src * t->nr_nodes + dst;

	if (t->route_sets && t->route_sets[i] != ICFAB_ROUTE_NONE)
		return (uint16_t)(ICFAB_ROUTE_SET_BASE + t->route_sets[i]);
	return t->routes[i];
}

const struct topo_rset *topo_route_set(const struct topo *t, uint32_t src,
				       uint32_t dst)
{
	size_t i = (size_t)src * t->nr_nodes + dst;

	if (!t->route_sets || t->route_sets[i] == ICFAB_ROUTE_NONE)
		return NULL;
	return &t->node_sets[src].v[t->route_sets[i]];
}

/*
 * The set of u's ports towards d that tie with @primary's cost under
 * @dist and @allow, one per neighbour, when there are two or more
 * neighbours: @primary first, then each other neighbour in the order of
 * its first tied port, by the tied port to it that best_port()'s rule
 * picks for d (so that parallel cables to a neighbour stay spread by
 * destination as without sets). At most ICFAB_ROUTE_SET_MAX_PORTS
 * neighbours. 0, or -ENOMEM.
 */
static int ecmp_fill(struct rctx *r, uint32_t u, uint32_t d,
		     const uint64_t *dist,
		     bool (*allow)(struct rctx *r, const struct topo_link *l),
		     uint16_t primary)
{
	uint32_t p, j, nports = r->pbase[u + 1] - r->pbase[u];
	uint32_t nb[ICFAB_ROUTE_SET_MAX_PORTS], cnt[ICFAB_ROUTE_SET_MAX_PORTS];
	uint32_t pick[ICFAB_ROUTE_SET_MAX_PORTS], seen[ICFAB_ROUTE_SET_MAX_PORTS];
	struct topo_rset s = { .mode = (uint8_t)r->t->ecmp };
	const struct topo_link *l;
	uint32_t nnb = 1, pass;
	uint64_t best;
	int idx;

	if (!r->t->route_sets || primary == ICFAB_ROUTE_NONE)
		return 0;
	l = &r->t->links[r->pout[r->pbase[u] + primary]];
	best = link_cost(l) + dist[l->dst_node];
	nb[0] = l->dst_node;
	cnt[0] = 0;
	s.ports[0] = primary;
	/* pass 0: the neighbours and their tied ports; 1: pick one each */
	for (pass = 0; pass < 2; pass++) {
		for (j = 1; pass && j < nnb; j++) {
			pick[j] = digit_sum(d, cnt[j]) % cnt[j];
			seen[j] = 0;
		}
		for (p = 0; p < nports; p++) {
			uint32_t li = r->pout[r->pbase[u] + p];

			if (li == TOPO_NONE)
				continue;
			l = &r->t->links[li];
			if (!topo_link_usable(l) ||
			    dist[l->dst_node] == DIST_INF ||
			    (allow && !allow(r, l)) ||
			    link_cost(l) + dist[l->dst_node] != best)
				continue;
			for (j = 0; j < nnb && nb[j] != l->dst_node; j++)
				;
			if (!pass) {
				if (j == nnb && nnb < ICFAB_ROUTE_SET_MAX_PORTS) {
					nb[nnb] = l->dst_node;
					cnt[nnb++] = 0;
				}
				if (j < nnb)
					cnt[j]++;
			} else if (j > 0 && j < nnb && seen[j]++ == pick[j]) {
				s.ports[j] = (uint16_t)p;
			}
		}
	}
	if (nnb < 2)
		return 0;
	s.nr = (uint8_t)nnb;
	idx = topo_sets_add(r->t, u, &s);
	if (idx == -ENOMEM)
		return idx;
	if (idx >= 0)
		r->t->route_sets[(size_t)u * r->n + d] = (uint16_t)idx;
	return 0;
}

/* ---- shortest -------------------------------------------------------- */

/* Fill the entries towards d of the sources with need[u] (all if NULL). */
static void shortest_fill(struct rctx *r, uint32_t d, const uint8_t *need)
{
	uint32_t u;

	dijkstra_to(r, d);
	for (u = 0; u < r->n; u++)
		if (u != d && (!need || need[u]))
			*route_entry(r, u, d) = best_port(r, u, d, r->dist, NULL, NULL);
}

static int route_shortest(struct rctx *r)
{
	uint32_t d, u;
	int ret = 0;

	for (d = 0; d < r->n && !ret; d++) {
		if (r->t->nodes[d].kind != ICFAB_NODE_ENDPOINT)
			continue;
		shortest_fill(r, d, NULL);
		for (u = 0; u < r->n && !ret; u++)
			if (u != d)
				ret = ecmp_fill(r, u, d, r->dist, NULL,
						*route_entry(r, u, d));
	}
	return ret;
}

/* ---- dimension order ------------------------------------------------- */

static uint16_t dor_port(const struct topo *t, const uint16_t *coords,
			 uint32_t u, uint32_t d)
{
	const struct topo_grid *g = t->grid;
	const struct topo_node *nu = &t->nodes[u], *nd = &t->nodes[d];
	uint32_t pu = nu->grid_pos, pd = nd->grid_pos, dim;
	const uint16_t *cu = &coords[pu * g->ndims], *cd = &coords[pd * g->ndims];

	if (nu->grid_attached)
		return 0;		/* the endpoint's port to its router */
	if (pu == pd)
		return nd->grid_attached ? g->local_port[pu] : ICFAB_ROUTE_NONE;
	for (dim = 0; dim < g->ndims; dim++) {
		uint32_t n = g->size[dim], dir;

		if (cu[dim] == cd[dim])
			continue;
		if (g->torus) {
			uint32_t fwd = (cd[dim] + n - cu[dim]) % n;

			/*
			 * Half way round an even ring both ways are as short:
			 * + from even coordinates, - from odd ones, so that an
			 * all-to-all loads both directions of a ring alike.
			 * Always + put 3/2 of the mean on every + link. The
			 * tie is only ever met at a route's first hop in @dim,
			 * where cu[dim] is still the source's.
			 */
			if (fwd * 2 == n)
				dir = cu[dim] & 1;
			else
				dir = fwd < n - fwd ? 0 : 1;
		} else {
			dir = cd[dim] > cu[dim] ? 0 : 1;
		}
		return g->dir_port[((size_t)pu * g->ndims + dim) * 2 + dir];
	}
	return ICFAB_ROUTE_NONE;
}

static uint16_t *grid_coords(const struct topo_grid *g)
{
	uint16_t *c = malloc((size_t)g->nr_pos * g->ndims * sizeof(*c));
	uint32_t pos, dim, rest;

	if (!c)
		return NULL;
	for (pos = 0; pos < g->nr_pos; pos++)
		for (rest = pos, dim = 0; dim < g->ndims; dim++) {
			c[pos * g->ndims + dim] = rest % g->size[dim];
			rest /= g->size[dim];
		}
	return c;
}

enum { WALK_UNKNOWN, WALK_ON_PATH, WALK_OK, WALK_BROKEN };

/* The link v's table entry for d sends to, if it exists and is usable. */
static const struct topo_link *table_link(struct rctx *r, uint32_t v, uint32_t d)
{
	uint16_t port = *route_entry(r, v, d);
	uint32_t li;

	if (port == ICFAB_ROUTE_NONE || port >= r->pbase[v + 1] - r->pbase[v])
		return NULL;
	li = r->pout[r->pbase[v] + port];
	if (li == TOPO_NONE || !topo_link_usable(&r->t->links[li]))
		return NULL;
	return &r->t->links[li];
}

/*
 * Which nodes' table paths towards d are broken (no entry, a missing or
 * DOWN link, a loop)? Memoised over the functional graph "next hop", so
 * O(nodes) per destination. mark[] gets WALK_OK or WALK_BROKEN, and
 * dist[] the cost of the path for the intact ones.
 */
static void mark_broken(struct rctx *r, uint32_t d, uint32_t *stack)
{
	uint32_t u, v, depth;

	memset(r->mark, WALK_UNKNOWN, r->n);
	r->mark[d] = WALK_OK;
	r->dist[d] = 0;
	for (u = 0; u < r->n; u++) {
		const struct topo_link *l = NULL;
		uint8_t result;

		depth = 0;
		for (v = u; r->mark[v] == WALK_UNKNOWN; v = l->dst_node) {
			r->mark[v] = WALK_ON_PATH;
			stack[depth++] = v;
			l = table_link(r, v, d);
			if (!l)
				break;
		}
		result = l && r->mark[v] == WALK_OK ? WALK_OK : WALK_BROKEN;
		if (depth && !l)
			result = WALK_BROKEN;
		while (depth) {
			v = stack[--depth];
			r->mark[v] = result;
			r->dist[v] = DIST_INF;
			if (result == WALK_OK) {
				l = table_link(r, v, d);
				r->dist[v] = link_cost(l) + r->dist[l->dst_node];
			}
		}
	}
}

/*
 * After mark_broken(): give every broken node the least-cost detour to
 * some intact node, from which DOR carries on. A multi-source Dijkstra
 * over the broken nodes only, seeded by their intact neighbours, so a cut
 * cable costs work in proportion to the paths it broke, not to the
 * fabric. Returns the number of broken nodes.
 */
static uint32_t dor_repair(struct rctx *r, uint32_t d)
{
	const struct topo_link *links = r->t->links;
	uint32_t u, p, i, broken = 0;
	uint64_t key;

	r->heap_len = 0;
	for (u = 0; u < r->n; u++) {
		if (r->mark[u] != WALK_BROKEN)
			continue;
		broken++;
		for (p = r->pbase[u]; p < r->pbase[u + 1]; p++) {
			const struct topo_link *l;

			if (r->pout[p] == TOPO_NONE)
				continue;
			l = &links[r->pout[p]];
			if (topo_link_usable(l) && r->mark[l->dst_node] == WALK_OK &&
			    link_cost(l) + r->dist[l->dst_node] < r->dist[u])
				r->dist[u] = link_cost(l) + r->dist[l->dst_node];
		}
		if (r->dist[u] != DIST_INF)
			heap_push(r, r->dist[u], u);
	}
	while (r->heap_len) {
		u = heap_pop(r, &key);
		if (key != r->dist[u])
			continue;
		for (i = r->in_base[u]; i < r->in_base[u + 1]; i++) {
			const struct topo_link *l = &links[r->in_link[i]];
			uint64_t nd = key + link_cost(l);

			if (!topo_link_usable(l) || r->mark[l->src_node] != WALK_BROKEN ||
			    nd >= r->dist[l->src_node])
				continue;
			r->dist[l->src_node] = nd;
			heap_push(r, nd, l->src_node);
		}
	}
	for (u = 0; broken && u < r->n; u++)
		if (r->mark[u] == WALK_BROKEN && u != d)
			*route_entry(r, u, d) = best_port(r, u, d, r->dist, NULL, NULL);
	return broken;
}

static int route_dor(struct rctx *r)
{
	struct topo *t = r->t;
	uint32_t u, d, off_grid = 0, *stack;
	bool any_down = false;
	uint16_t *coords;
	uint8_t *need;

	for (u = 0; u < t->nr_links; u++)
		any_down |= !topo_link_usable(&t->links[u]);
	for (u = 0; u < r->n; u++)
		off_grid += t->nodes[u].grid_pos == TOPO_NONE;
	coords = grid_coords(t->grid);
	need = malloc(r->n);
	stack = malloc(r->n * sizeof(*stack));
	if (!coords || !need || !stack) {
		free(coords);
		free(need);
		free(stack);
		return -ENOMEM;
	}
	/* Row by row: a source's whole table is one cache-friendly sweep. */
	for (u = 0; u < r->n; u++) {
		if (t->nodes[u].grid_pos == TOPO_NONE)
			continue;
		for (d = 0; d < r->n; d++)
			if (d != u && t->nodes[d].kind == ICFAB_NODE_ENDPOINT &&
			    t->nodes[d].grid_pos != TOPO_NONE)
				*route_entry(r, u, d) = dor_port(t, coords, u, d);
	}
	/*
	 * Then, per destination, what DOR cannot do: destinations off the
	 * grid and sources off the grid get least-latency routes; sources
	 * whose DOR path crosses a DOWN link get a detour.
	 */
	for (d = 0; (any_down || off_grid) && d < r->n; d++) {
		if (t->nodes[d].kind != ICFAB_NODE_ENDPOINT)
			continue;
		if (t->nodes[d].grid_pos == TOPO_NONE) {
			shortest_fill(r, d, NULL);
			continue;
		}
		if (!off_grid) {
			mark_broken(r, d, stack);
			dor_repair(r, d);
			continue;
		}
		/* off-grid sources: one full Dijkstra covers them and the broken */
		if (any_down)
			mark_broken(r, d, stack);
		for (u = 0; u < r->n; u++)
			need[u] = t->nodes[u].grid_pos == TOPO_NONE ||
				  (any_down && r->mark[u] == WALK_BROKEN);
		shortest_fill(r, d, need);
	}
	free(coords);
	free(need);
	free(stack);
	return 0;
}

/* ---- up*down* -------------------------------------------------------- */

static bool link_down(struct rctx *r, const struct topo_link *l)
{
	return r->rank[l->dst_node] < r->rank[l->src_node];
}

static bool link_up(struct rctx *r, const struct topo_link *l)
{
	return r->rank[l->dst_node] > r->rank[l->src_node];
}

/* Levels: hops from the nearest endpoint (BFS over usable links). */
static void updown_levels(struct rctx *r, uint32_t *level, uint32_t *queue)
{
	const struct topo *t = r->t;
	uint32_t head = 0, tail = 0, u, p;

	for (u = 0; u < r->n; u++) {
		level[u] = UINT32_MAX;
		if (t->nodes[u].kind == ICFAB_NODE_ENDPOINT) {
			level[u] = 0;
			queue[tail++] = u;
		}
	}
	while (head < tail) {
		u = queue[head++];
		for (p = r->pbase[u]; p < r->pbase[u + 1]; p++) {
			const struct topo_link *l;

			if (r->pout[p] == TOPO_NONE)
				continue;
			l = &t->links[r->pout[p]];
			if (topo_link_usable(l) && level[l->dst_node] == UINT32_MAX) {
				level[l->dst_node] = level[u] + 1;
				queue[tail++] = l->dst_node;
			}
		}
	}
}

/* order[] = nodes sorted by (level, id): a stable counting sort by level. */
static int updown_order(struct rctx *r, const uint32_t *level, uint32_t *order)
{
	uint32_t i, max = 0, *count;

	for (i = 0; i < r->n; i++)
		if (level[i] != UINT32_MAX && level[i] > max)
			max = level[i];
	/* unreachable nodes (level UINT32_MAX) go last, as level max + 1 */
	count = calloc(max + 3, sizeof(*count));
	if (!count)
		return -ENOMEM;
	for (i = 0; i < r->n; i++)
		count[(level[i] == UINT32_MAX ? max + 1 : level[i]) + 1]++;
	for (i = 0; i < max + 2; i++)
		count[i + 1] += count[i];
	for (i = 0; i < r->n; i++)
		order[count[level[i] == UINT32_MAX ? max + 1 : level[i]]++] = i;
	free(count);
	return 0;
}

static int route_updown(struct rctx *r)
{
	uint64_t *down = r->dist2, *any = r->dist;
	uint32_t *level, *order, i, d;
	int ret = -ENOMEM;

	level = malloc(r->n * sizeof(*level));
	order = malloc(r->n * sizeof(*order));
	r->rank = malloc(r->n * sizeof(*r->rank));
	if (!level || !order || !r->rank)
		goto out_free;
	updown_levels(r, level, order);
	ret = updown_order(r, level, order);
	if (ret)
		goto out_free;
	for (i = 0; i < r->n; i++)
		r->rank[order[i]] = i;

	for (d = 0; d < r->n; d++) {
		if (r->t->nodes[d].kind != ICFAB_NODE_ENDPOINT)
			continue;
		/* down-only distances, lowest rank first */
		for (i = 0; i < r->n; i++)
			down[i] = DIST_INF;
		down[d] = 0;
		for (i = 0; i < r->n; i++) {
			uint32_t u = order[i];

			if (u == d)
				continue;
			*route_entry(r, u, d) =
				best_port(r, u, d, down, link_down, &down[u]);
			ret = ecmp_fill(r, u, d, down, link_down,
					*route_entry(r, u, d));
			if (ret)
				goto out_free;
		}
		/* then up-first paths, highest rank first */
		for (i = r->n; i-- > 0;) {
			uint32_t u = order[i];

			any[u] = down[u];
			if (u == d || down[u] != DIST_INF)
				continue;
			*route_entry(r, u, d) = best_port(r, u, d, any, link_up, &any[u]);
			ret = ecmp_fill(r, u, d, any, link_up,
					*route_entry(r, u, d));
			if (ret)
				goto out_free;
		}
	}
out_free:
	free(level);
	free(order);
	return ret;
}

/* ---- driver ---------------------------------------------------------- */

static int rctx_init(struct rctx *r, struct topo *t)
{
	uint32_t i;

	memset(r, 0, sizeof(*r));
	r->t = t;
	r->n = t->nr_nodes;
	r->pbase = t->port_base;
	r->pout = t->port_out;
	r->in_base = calloc(r->n + 1, sizeof(*r->in_base));
	r->in_link = malloc((t->nr_links + 1) * sizeof(*r->in_link));
	r->dist = malloc(r->n * sizeof(*r->dist));
	r->dist2 = malloc(r->n * sizeof(*r->dist2));
	/* at most one push per node plus one per relaxed link */
	r->heap_node = malloc((t->nr_links + r->n + 1) * sizeof(*r->heap_node));
	r->heap_key = malloc((t->nr_links + r->n + 1) * sizeof(*r->heap_key));
	r->mark = malloc(r->n);
	if (!r->in_base || !r->in_link || !r->dist || !r->dist2 ||
	    !r->heap_node || !r->heap_key || !r->mark)
		return -ENOMEM;
	/*
	 * Counting sort of links by destination: in_base[v] first counts,
	 * then marks the end of v's range, and after the fill its start.
	 */
	for (i = 0; i < t->nr_links; i++)
		r->in_base[t->links[i].dst_node]++;
	for (i = 1; i <= r->n; i++)
		r->in_base[i] += r->in_base[i - 1];
	for (i = t->nr_links; i-- > 0;)
		r->in_link[--r->in_base[t->links[i].dst_node]] = i;
	return 0;
}

static void rctx_free(struct rctx *r)
{
	free(r->in_base);
	free(r->in_link);
	free(r->dist);
	free(r->dist2);
	free(r->heap_node);
	free(r->heap_key);
	free(r->mark);
	free(r->rank);
}

static enum topo_routing route_mode(const struct topo *t)
{
	enum topo_routing m = t->routing;

	if (m == TOPO_ROUTING_AUTO)
		m = t->routing_auto;
	if (m == TOPO_ROUTING_DOR && !t->grid)
		m = TOPO_ROUTING_SHORTEST;
	return m;
}

/*
 * (Re)compute every table from the current nodes, links and link states.
 * Call again after topo_link_set_state(). On failure the old tables are
 * gone and t->routes is NULL.
 */
int topo_route(struct topo *t, struct topo_err *err)
{
	struct topo_ports ports;
	struct rctx r;
	size_t n = t->nr_nodes;
	int ret;

	free(t->routes);
	topo_sets_free(t);
	free(t->port_base);
	free(t->port_out);
	t->routes = NULL;
	t->port_base = t->port_out = NULL;
	if (n > ICFAB_ROUTE_NONE)
		return topo_errf(err, NULL, "%zu nodes: too many to route", n);
	ret = topo_ports_build(t, &ports, NULL, NULL);
	if (ret)
		return ret;
	free(ports.in);
	t->port_base = ports.base;
	t->port_out = ports.out;
	t->routes = malloc(n * n * sizeof(*t->routes) + 1);
	if (!t->routes)
		return -ENOMEM;
	memset(t->routes, 0xff, n * n * sizeof(*t->routes));

	ret = rctx_init(&r, t);
	if (!ret && t->ecmp != ICFAB_MULTIPATH_NONE &&
	    route_mode(t) != TOPO_ROUTING_DOR)
		ret = sets_alloc(t);
	if (!ret) {
		t->routed_with = route_mode(t);
		switch (t->routed_with) {
		case TOPO_ROUTING_DOR:
			ret = route_dor(&r);
			break;
		case TOPO_ROUTING_UPDOWN:
			ret = route_updown(&r);
			break;
		default:
			ret = route_shortest(&r);
			break;
		}
	}
	rctx_free(&r);
	if (ret) {
		free(t->routes);
		t->routes = NULL;
		topo_sets_free(t);
	}
	return ret;
}

uint16_t topo_route_port(const struct topo *t, uint32_t src, uint32_t dst)
{
	if (!t->routes || src >= t->nr_nodes || dst >= t->nr_nodes)
		return ICFAB_ROUTE_NONE;
	return t->routes[(size_t)src * t->nr_nodes + dst];
}

/*
 * Give @t the (node, port) -> link index topo_route() builds, where it
 * has none (a topology read back from the module): topo_port_link() is
 * then one lookup, not a walk over every link. Walking a route per pair
 * of n endpoints took n^2 * hops such walks. 0 or -ENOMEM (no index:
 * topo_port_link() still answers, by walking).
 */
int topo_port_index(struct topo *t)
{
	struct topo_ports ports;
	int ret;

	if (t->port_out)
		return 0;
	ret = topo_ports_build(t, &ports, NULL, NULL);
	if (ret)
		return ret;
	free(ports.in);
	free(t->port_base);
	t->port_base = ports.base;
	t->port_out = ports.out;
	return 0;
}

/* The link leaving node by port, or -ENOENT. */
int topo_port_link(const struct topo *t, uint32_t node, uint32_t port)
{
	uint32_t i;

	if (node >= t->nr_nodes || port >= t->nodes[node].nr_ports)
		return -ENOENT;
	if (t->port_out) {
		i = t->port_out[t->port_base[node] + port];
		return i == TOPO_NONE ? -ENOENT : (int)i;
	}
	for (i = 0; i < t->nr_links; i++)
		if (t->links[i].src_node == node && t->links[i].src_port == port)
			return i;
	return -ENOENT;
}

/*
 * Hops from src to dst following the tables: -ENOENT when some node has
 * no entry, -ENETDOWN when the path uses a DOWN link, -ELOOP on a loop.
 */
int topo_route_hops(const struct topo *t, uint32_t src, uint32_t dst)
{
	uint32_t u = src, hops = 0;

	while (u != dst) {
		uint16_t port = topo_route_port(t, u, dst);
		int l;

		if (port == ICFAB_ROUTE_NONE)
			return -ENOENT;
		l = topo_port_link(t, u, port);
		if (l < 0)
			return -ENOENT;
		if (!topo_link_usable(&t->links[l]))
			return -ENETDOWN;
		if (++hops > t->nr_nodes)
			return -ELOOP;
		u = t->links[l].dst_node;
	}
	return hops;
}
