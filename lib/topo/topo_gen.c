// SPDX-License-Identifier: GPL-2.0
/*
 * Topology generators. Each one adds nodes and duplex cables to a topo
 * and says which routing suits what it built (topo.routing_auto). All
 * objects made by one generator carry the source line of its block.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/topo.h>

/* Generous bound before the limits check: keeps products from overflowing. */
#define GEN_MAX_NODES	(1U << 20)

static int add_named(struct topo *t, uint32_t kind, const struct topo_defaults *d,
		     const struct topo_src *src, struct topo_err *err,
		     const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int add_named(struct topo *t, uint32_t kind, const struct topo_defaults *d,
		     const struct topo_src *src, struct topo_err *err,
		     const char *fmt, ...)
{
	char name[2 * ICFAB_NAME_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	return topo_add_node(t, name, kind, d, src, err);
}

static int gen_begin(struct topo *t, const char *what,
		     const struct topo_src *src, struct topo_err *err)
{
	if (t->generator)
		return topo_errf(err, src, "only one generator per topology (%s already ran)",
				 t->generator);
	t->generator = what;
	return 0;
}

/* ---- mesh, torus, ring, supermesh ---------------------------------- */

static uint32_t grid_coord(const struct topo_grid *g, uint32_t pos, uint32_t dim)
{
	uint32_t d;

	for (d = 0; d < dim; d++)
		pos /= g->size[d];
	return pos % g->size[dim];
}

static uint32_t grid_stride(const struct topo_grid *g, uint32_t dim)
{
	uint32_t d, s = 1;

	for (d = 0; d < dim; d++)
		s *= g->size[d];
	return s;
}

/* "pe3_4": the prefix, then the coordinates joined by '_'. */
static void grid_name(char *buf, size_t len, const char *prefix,
		      const struct topo_grid *g, uint32_t pos)
{
	size_t off = snprintf(buf, len, "%s", prefix);
	uint32_t d;

	for (d = 0; d < g->ndims && off < len; d++)
		off += snprintf(buf + off, len - off, d ? "_%u" : "%u",
				grid_coord(g, pos, d));
}

static struct topo_grid *grid_alloc(const struct topo_gen_grid *gg)
{
	struct topo_grid *g = calloc(1, sizeof(*g));
	uint32_t d;

	if (!g)
		return NULL;
	g->ndims = gg->ndims;
	g->torus = gg->torus;
	g->nr_pos = 1;
	for (d = 0; d < gg->ndims; d++) {
		g->size[d] = gg->size[d];
		g->nr_pos *= gg->size[d];
	}
	g->node = malloc(g->nr_pos * sizeof(*g->node));
	g->attached = malloc(g->nr_pos * sizeof(*g->attached));
	g->local_port = malloc(g->nr_pos * sizeof(*g->local_port));
	g->dir_port = malloc((size_t)g->nr_pos * 2 * g->ndims *
			     sizeof(*g->dir_port));
	if (!g->node || !g->attached || !g->local_port || !g->dir_port) {
		free(g->node);
		free(g->attached);
		free(g->local_port);
		free(g->dir_port);
		free(g);
		return NULL;
	}
	memset(g->local_port, 0xff, g->nr_pos * sizeof(*g->local_port));
	memset(g->dir_port, 0xff,
	       (size_t)g->nr_pos * 2 * g->ndims * sizeof(*g->dir_port));
	return g;
}

static int grid_validate(const struct topo_gen_grid *gg,
			 const struct topo_src *src, struct topo_err *err)
{
	uint64_t n = 1;
	uint32_t d;

	if (gg->ndims < 1 || gg->ndims > TOPO_MAX_DIMS)
		return topo_errf(err, src, "dims: between 1 and %d dimensions",
				 TOPO_MAX_DIMS);
	for (d = 0; d < gg->ndims; d++) {
		if (gg->size[d] < 1)
			return topo_errf(err, src, "dims: dimension %u has size 0", d);
		n *= gg->size[d];
		if (n * (gg->routers ? 2 : 1) > GEN_MAX_NODES)
			return topo_errf(err, src, "dims: %llu nodes is too many",
					 (unsigned long long)n);
		if (gg->block[d] && (!gg->torus || gg->size[d] % gg->block[d]))
			return topo_errf(err, src,
					 "blocks: dimension %u: a torus block must divide the size %u",
					 d, gg->size[d]);
	}
	if (gg->supermesh != TOPO_SUPERMESH_NONE &&
	    (gg->ndims != 2 || gg->torus || gg->size[0] < 2 || gg->size[1] < 2))
		return topo_errf(err, src,
				 "supermesh is a 2D mesh of at least 2x2");
	return 0;
}

/* Does the cable from coordinate c to c+1 (mod n) cross a block edge? */
static bool crosses_block(const struct topo_gen_grid *gg, uint32_t dim,
			  uint32_t c)
{
	return gg->block[dim] && (c + 1) % gg->block[dim] == 0;
}

/* Cable position a to its + neighbour b in dimension dim. */
static int grid_cable(struct topo *t, struct topo_grid *g, uint32_t dim,
		      uint32_t a, uint32_t b, const struct topo_link_spec *spec,
		      const struct topo_src *src, struct topo_err *err)
{
	uint32_t nd = 2 * g->ndims;
	int l = topo_connect(t, g->node[a], g->node[b], spec, src, err);

	if (l < 0)
		return l;
	g->dir_port[a * nd + 2 * dim] = t->links[l].src_port;
	g->dir_port[b * nd + 2 * dim + 1] = t->links[l].dst_port;
	return 0;
}

static int grid_make_nodes(struct topo *t, struct topo_grid *g,
			   const struct topo_gen_grid *gg,
			   const struct topo_defaults *d,
			   const struct topo_src *src, struct topo_err *err)
{
	char name[3 * ICFAB_NAME_MAX];
	uint32_t pos;
	int id;

	/* Endpoints first, so that endpoint ids equal grid positions. */
	for (pos = 0; pos < g->nr_pos; pos++) {
		grid_name(name, sizeof(name), gg->name, g, pos);
		id = topo_add_node(t, name, ICFAB_NODE_ENDPOINT, d, src, err);
		if (id < 0)
			return id;
		t->nodes[id].grid_pos = pos;
		g->node[pos] = id;
		g->attached[pos] = TOPO_NONE;
	}
	if (!gg->routers)
		return 0;
	for (pos = 0; pos < g->nr_pos; pos++) {
		int l;

		grid_name(name, sizeof(name), gg->router_name, g, pos);
		id = topo_add_node(t, name, ICFAB_NODE_SWITCH, d, src, err);
		if (id < 0)
			return id;
		t->nodes[id].grid_pos = pos;
		t->nodes[g->node[pos]].grid_attached = true;
		g->attached[pos] = g->node[pos];
		g->node[pos] = id;
		/* the endpoint's only port, the router's port 0 */
		l = topo_connect(t, g->attached[pos], id, &gg->local, src, err);
		if (l < 0)
			return l;
		g->local_port[pos] = t->links[l].dst_port;
	}
	return 0;
}

static int grid_make_links(struct topo *t, struct topo_grid *g,
			   const struct topo_gen_grid *gg,
			   const struct topo_src *src, struct topo_err *err)
{
	uint32_t pos, dim;
	int ret;

	for (pos = 0; pos < g->nr_pos; pos++) {
		for (dim = 0; dim < g->ndims; dim++) {
			uint32_t n = g->size[dim], c = grid_coord(g, pos, dim);
			uint32_t stride = grid_stride(g, dim), nb;
			const struct topo_link_spec *spec = &gg->link;

			if (c + 1 < n)
				nb = pos + stride;
			else if (gg->torus && n > 2)
				nb = pos - (n - 1) * stride;	/* wraparound */
			else
				continue;	/* mesh edge; n == 2 has one cable */
			if (crosses_block(gg, dim, c))
				spec = &gg->block_link;
			ret = grid_cable(t, g, dim, pos, nb, spec, src, err);
			if (ret)
				return ret;
		}
	}
	/* A torus of size 2: + and - lead to the same neighbour, one cable. */
	for (pos = 0; gg->torus && pos < g->nr_pos; pos++)
		for (dim = 0; dim < g->ndims; dim++) {
			uint16_t *p = &g->dir_port[(pos * g->ndims + dim) * 2];

			if (g->size[dim] == 2)
				p[p[0] == ICFAB_ROUTE_NONE ? 0 : 1] =
					p[p[0] == ICFAB_ROUTE_NONE ? 1 : 0];
		}
	return 0;
}

/*
 * SuperMesh (MICRO'25): extra cables between neighbouring boundary nodes
 * of a 2D mesh. Bi doubles every boundary cable (a corner goes from 2 to
 * 4 mesh links). Alter doubles every other one along each side, starting
 * at a corner, so a boundary node gains at most one cable per side it is
 * on: edge nodes go from 3 to at most 4 mesh links and corners from 2 to
 * at most 4, which with the local port keeps every router at 5 ports.
 */
static int supermesh_side(struct topo *t, struct topo_grid *g,
			  const struct topo_gen_grid *gg, uint32_t first,
			  uint32_t stride, uint32_t n,
			  const struct topo_src *src, struct topo_err *err)
{
	uint32_t i;
	int l;

	for (i = 0; i + 1 < n; i++) {
		if (gg->supermesh == TOPO_SUPERMESH_ALTER && i % 2)
			continue;
		l = topo_connect(t, g->node[first + i * stride],
				 g->node[first + (i + 1) * stride],
				 &gg->boundary, src, err);
		if (l < 0)
			return l;
	}
	return 0;
}

static int supermesh_links(struct topo *t, struct topo_grid *g,
			   const struct topo_gen_grid *gg,
			   const struct topo_src *src, struct topo_err *err)
{
	uint32_t X = g->size[0], Y = g->size[1];
	int ret;

	ret = supermesh_side(t, g, gg, 0, 1, X, src, err);		/* top */
	if (!ret)
		ret = supermesh_side(t, g, gg, X - 1, X, Y, src, err);	/* right */
	if (!ret)
		ret = supermesh_side(t, g, gg, (Y - 1) * X, 1, X, src, err); /* bottom */
	if (!ret)
		ret = supermesh_side(t, g, gg, 0, X, Y, src, err);	/* left */
	return ret;
}

int topo_gen_grid(struct topo *t, const struct topo_gen_grid *gg,
		  const struct topo_defaults *d, const struct topo_src *src,
		  struct topo_err *err)
{
	struct topo_grid *g;
	int ret;

	ret = grid_validate(gg, src, err);
	if (ret)
		return ret;
	ret = gen_begin(t, gg->supermesh ? "supermesh" :
			gg->torus ? "torus" : "mesh", src, err);
	if (ret)
		return ret;
	g = grid_alloc(gg);
	if (!g)
		return -ENOMEM;
	t->grid = g;		/* freed with t, also on error */
	ret = grid_make_nodes(t, g, gg, d, src, err);
	if (!ret)
		ret = grid_make_links(t, g, gg, src, err);
	if (!ret && gg->supermesh)
		ret = supermesh_links(t, g, gg, src, err);
	if (!ret)
		t->routing_auto = TOPO_ROUTING_DOR;
	return ret;
}

/* ---- switches ------------------------------------------------------ */

static int add_switch(struct topo *t, uint32_t radix,
		      const struct topo_defaults *d, const struct topo_src *src,
		      struct topo_err *err, const char *fmt, uint32_t i)
{
	int id = add_named(t, ICFAB_NODE_SWITCH, d, src, err, fmt, i);

	if (id >= 0 && radix) {
		t->nodes[id].nr_ports = radix;
		t->nodes[id].ports_fixed = true;
	}
	return id;
}

/*
 * A two-level leaf/spine (folded Clos) for n endpoint ports on switches
 * of radix ports: half of each leaf's ports face endpoints, half face
 * spines; uplinks are dealt round-robin over the spines so each spine
 * gets the same number of cables, parallel ones when there are fewer
 * spines than uplinks per leaf. Non-blocking by construction.
 */
static int leafspine(struct topo *t, const uint32_t *eps, uint32_t n,
		     uint32_t radix, const struct topo_link_spec *down,
		     const struct topo_link_spec *up,
		     const struct topo_defaults *d, const struct topo_src *src,
		     struct topo_err *err)
{
	uint32_t half = radix / 2, leaves, spines, first_leaf, first_spine;
	uint32_t i, k;
	int id, l;

	if (radix < 2)
		return topo_errf(err, src, "radix: a leaf/spine needs at least 2 ports per switch");
	leaves = (n + half - 1) / half;
	if (leaves > radix)
		return topo_errf(err, src,
				 "radix: %u endpoints need %u leaves, more than a spine of %u ports can reach; use larger switches",
				 n, leaves, radix);
	spines = (leaves * half + radix - 1) / radix;
	first_leaf = t->nr_nodes;
	for (i = 0; i < leaves; i++) {
		id = add_switch(t, radix, d, src, err, "leaf%u", i);
		if (id < 0)
			return id;
	}
	first_spine = t->nr_nodes;
	for (i = 0; i < spines; i++) {
		id = add_switch(t, radix, d, src, err, "spine%u", i);
		if (id < 0)
			return id;
	}
	for (i = 0; i < n; i++) {
		l = topo_connect(t, eps[i], first_leaf + i / half, down, src, err);
		if (l < 0)
			return l;
	}
	for (i = 0; i < leaves; i++)
		for (k = 0; k < half; k++) {
			l = topo_connect(t, first_leaf + i,
					 first_spine + (i * half + k) % spines,
					 up, src, err);
			if (l < 0)
				return l;
		}
	return 0;
}

/* n endpoints "<prefix><i>"; their ids go to eps (n of them) if given. */
static int add_endpoints(struct topo *t, const char *prefix, uint32_t n,
			 uint32_t *eps, const struct topo_defaults *d,
			 const struct topo_src *src, struct topo_err *err)
{
	uint32_t i;
	int id;

	for (i = 0; i < n; i++) {
		id = add_named(t, ICFAB_NODE_ENDPOINT, d, src, err, "%s%u",
			       prefix, i);
		if (id < 0)
			return id;
		if (eps)
			eps[i] = id;
	}
	return 0;
}

/* @times parallel cables between nodes @a and @b. */
static int connect_times(struct topo *t, uint32_t a, uint32_t b,
			 uint32_t times, const struct topo_link_spec *spec,
			 const struct topo_src *src, struct topo_err *err)
{
	uint32_t k;
	int l;

	for (k = 0; k < times; k++) {
		l = topo_connect(t, a, b, spec, src, err);
		if (l < 0)
			return l;
	}
	return 0;
}

/* Cable each endpoint of @eps[0..@n) to switch @sw, @times times. */
static int connect_to_switch(struct topo *t, const uint32_t *eps, uint32_t n,
			     uint32_t sw, uint32_t times,
			     const struct topo_link_spec *spec,
			     const struct topo_src *src, struct topo_err *err)
{
	uint32_t i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = connect_times(t, eps[i], sw, times, spec, src, err);
		if (ret)
			return ret;
	}
	return 0;
}

int topo_gen_switch(struct topo *t, const struct topo_gen_switch *g,
		    const struct topo_defaults *d, const struct topo_src *src,
		    struct topo_err *err)
{
	uint32_t lpe = g->links_per_endpoint ? g->links_per_endpoint : 1;
	uint32_t *eps;
	int ret, sw;

	if (g->endpoints < 1 || g->endpoints > GEN_MAX_NODES)
		return topo_errf(err, src, "endpoints: between 1 and %u", GEN_MAX_NODES);
	ret = gen_begin(t, "switch", src, err);
	if (ret)
		return ret;
	eps = malloc(g->endpoints * sizeof(*eps));
	if (!eps)
		return -ENOMEM;
	ret = add_endpoints(t, g->name, g->endpoints, eps, d, src, err);
	if (ret)
		goto out_free_eps;
	t->routing_auto = TOPO_ROUTING_UPDOWN;
	if (g->radix && (uint64_t)g->endpoints * lpe > g->radix) {
		if (lpe != 1) {
			ret = topo_errf(err, src,
					"links_per_endpoint: only with a single switch (endpoints x links <= radix)");
			goto out_free_eps;
		}
		ret = leafspine(t, eps, g->endpoints, g->radix, &g->link,
				&g->uplink, d, src, err);
		goto out_free_eps;
	}
	sw = add_named(t, ICFAB_NODE_SWITCH, d, src, err, "%s", g->switch_name);
	if (sw < 0) {
		ret = sw;
		goto out_free_eps;
	}
	if (g->radix) {
		t->nodes[sw].nr_ports = g->radix;
		t->nodes[sw].ports_fixed = true;
	}
	ret = connect_to_switch(t, eps, g->endpoints, sw, lpe, &g->link, src,
				err);
out_free_eps:
	free(eps);
	return ret;
}

/* ---- IPU exchange -------------------------------------------------- */

/*
 * The IPU exchange lets every tile reach every other tile's SRAM at its
 * own port speed. Small exchanges are built as a full mesh (every pair
 * cabled, routes are one hop); large ones as what the full mesh would
 * cost the emulator too much to hold, N*(N-1) links, and what the
 * hardware behaves like anyway: a non-blocking crossbar with one port per
 * tile, two hops, each tile limited by its own port.
 */
int topo_gen_exchange(struct topo *t, const struct topo_gen_exchange *g,
		      const struct topo_defaults *d, const struct topo_src *src,
		      struct topo_err *err)
{
	uint32_t lpp = g->links_per_pair ? g->links_per_pair : 1;
	uint32_t first = t->nr_nodes, i, j;
	int ret, sw, l;

	if (g->tiles < 2 || g->tiles > GEN_MAX_NODES)
		return topo_errf(err, src, "tiles: between 2 and %u", GEN_MAX_NODES);
	ret = gen_begin(t, "exchange", src, err);
	if (ret)
		return ret;
	ret = add_endpoints(t, g->name, g->tiles, NULL, d, src, err);
	if (ret)
		return ret;
	if (g->crossbar) {
		t->routing_auto = TOPO_ROUTING_UPDOWN;
		sw = add_named(t, ICFAB_NODE_SWITCH, d, src, err, "exchange");
		if (sw < 0)
			return sw;
		t->nodes[sw].nr_ports = g->tiles;
		t->nodes[sw].ports_fixed = true;
		for (i = 0; i < g->tiles; i++) {
			l = topo_connect(t, first + i, sw, &g->link, src, err);
			if (l < 0)
				return l;
		}
		return 0;
	}
	if ((uint64_t)g->tiles * (g->tiles - 1) * lpp > GEN_MAX_NODES)
		return topo_errf(err, src,
				 "tiles: %u tiles fully connected is too many links; use mode: crossbar",
				 g->tiles);
	t->routing_auto = TOPO_ROUTING_SHORTEST;
	for (i = 0; i < g->tiles; i++)
		for (j = i + 1; j < g->tiles; j++) {
			ret = connect_times(t, first + i, first + j, lpp,
					    &g->link, src, err);
			if (ret)
				return ret;
		}
	return 0;
}

/* ---- hierarchical: scale-up nodes plus a scale-out network ---------- */

/*
 * nodes x per_node endpoints "<name><node>_<local>". Each endpoint's port
 * 0 goes to its node's scale-up switch (when per_node > 1), its next port
 * is its NIC into the scale-out network: one switch "net" when all NICs
 * fit on it, else a leaf/spine of radix-port switches.
 */
int topo_gen_hier(struct topo *t, const struct topo_gen_hier *g,
		  const struct topo_defaults *d, const struct topo_src *src,
		  struct topo_err *err)
{
	uint64_t total = (uint64_t)g->nodes * g->per_node;
	uint32_t *eps, n, i;
	int ret = 0, id, sw;

	if (!g->nodes || !g->per_node || total > GEN_MAX_NODES)
		return topo_errf(err, src, "nodes x per_node: between 1 and %u endpoints",
				 GEN_MAX_NODES);
	ret = gen_begin(t, "hierarchical", src, err);
	if (ret)
		return ret;
	eps = malloc(total * sizeof(*eps));
	if (!eps)
		return -ENOMEM;
	t->routing_auto = TOPO_ROUTING_UPDOWN;
	for (n = 0; n < g->nodes; n++)
		for (i = 0; i < g->per_node; i++) {
			id = add_named(t, ICFAB_NODE_ENDPOINT, d, src, err,
				       "%s%u_%u", g->name, n, i);
			if (id < 0) {
				ret = id;
				goto out_free_eps;
			}
			eps[n * g->per_node + i] = id;
		}
	for (n = 0; g->per_node > 1 && n < g->nodes; n++) {
		sw = add_named(t, ICFAB_NODE_SWITCH, d, src, err, "%s%u",
			       g->switch_name, n);
		if (sw < 0) {
			ret = sw;
			goto out_free_eps;
		}
		ret = connect_to_switch(t, eps + n * g->per_node, g->per_node,
					sw, 1, &g->scale_up, src, err);
		if (ret)
			goto out_free_eps;
	}
	if (g->nodes == 1)
		goto out_free_eps;	/* nothing to scale out to */
	if (g->radix && total > g->radix) {
		ret = leafspine(t, eps, total, g->radix, &g->scale_out,
				&g->uplink, d, src, err);
		goto out_free_eps;
	}
	sw = add_switch(t, g->radix, d, src, err, "net", 0);
	if (sw < 0) {
		ret = sw;
		goto out_free_eps;
	}
	ret = connect_to_switch(t, eps, total, sw, 1, &g->scale_out, src, err);
out_free_eps:
	free(eps);
	return ret;
}
