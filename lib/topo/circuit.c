// SPDX-License-Identifier: GPL-2.0
/*
 * Color-routed circuits and multicast trees: see circuit.h for the rules.
 *
 * A request runs in three steps, and only the last one changes anything:
 * validate the endpoints, graft the routed paths into a tree (scratch
 * arrays in the table), pick the lowest color free at every router of
 * the tree; then allocate the circuit's own arrays and mark the color.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/array.h>
#include <icfab/circuit.h>
#include "topo_priv.h"

struct circuit_table {
	const struct topo *t;
	uint32_t nr_nodes;		/* t->nr_nodes when created */
	uint64_t *used;			/* node -> colors held there */
	struct circuit *slots;		/* by id; dsts == NULL: free slot */
	uint32_t nr_slots;
	uint32_t nr_open;

	/* Scratch for one request; all TOPO_NONE / 0 between requests. */
	uint32_t *in_link;		/* node -> tree link arriving there */
	uint32_t *leaf_idx;		/* node -> index + 1 in leaves[] */
	uint32_t *tree;			/* tree links in walk order */
	uint32_t nr_tree;
	uint32_t *path;			/* one route's links, while grafting */
};

bool circuit_is_router(const struct topo *t, uint32_t node)
{
	return node < t->nr_nodes && t->nodes[node].kind == ICFAB_NODE_SWITCH &&
	       t->nodes[node].colors > 0;
}

static uint64_t all_colors(uint32_t colors)
{
	return colors >= 64 ? UINT64_MAX : (1ULL << colors) - 1;
}

int circuit_table_new(const struct topo *t, struct circuit_table **ctp,
		      struct topo_err *err)
{
	struct circuit_table *ct;
	uint32_t i, n = t->nr_nodes;

	*ctp = NULL;
	for (i = 0; i < n; i++)
		if (circuit_is_router(t, i) && t->nodes[i].colors > CIRCUIT_MAX_COLORS)
			return topo_errf(err, NULL,
					 "router %s: %u colors, at most %u",
					 t->nodes[i].name, t->nodes[i].colors,
					 CIRCUIT_MAX_COLORS);
	ct = calloc(1, sizeof(*ct));
	if (!ct)
		return -ENOMEM;
	ct->t = t;
	ct->nr_nodes = n;
	ct->used = calloc(n + 1, sizeof(*ct->used));
	ct->in_link = malloc((n + 1) * sizeof(*ct->in_link));
	ct->leaf_idx = calloc(n + 1, sizeof(*ct->leaf_idx));
	ct->tree = malloc((n + 1) * sizeof(*ct->tree));
	ct->path = malloc((n + 1) * sizeof(*ct->path));
	if (!ct->used || !ct->in_link || !ct->leaf_idx || !ct->tree ||
	    !ct->path) {
		circuit_table_free(ct);
		return -ENOMEM;
	}
	memset(ct->in_link, 0xff, (n + 1) * sizeof(*ct->in_link));
	*ctp = ct;
	return 0;
}

static void circuit_release(struct circuit *c)
{
	free(c->dsts);
	free(c->links);
	free(c->routers);
	memset(c, 0, sizeof(*c));
}

void circuit_table_free(struct circuit_table *ct)
{
	uint32_t i;

	if (!ct)
		return;
	for (i = 0; i < ct->nr_slots; i++)
		circuit_release(&ct->slots[i]);
	free(ct->slots);
	free(ct->used);
	free(ct->in_link);
	free(ct->leaf_idx);
	free(ct->tree);
	free(ct->path);
	free(ct);
}

char *circuit_router_label(const struct topo *t, uint32_t node, char *buf,
			   size_t len)
{
	const struct topo_grid *g = t->grid;
	uint32_t pos, d;
	size_t off;

	if (node >= t->nr_nodes) {
		snprintf(buf, len, "#%u", node);
		return buf;
	}
	pos = t->nodes[node].grid_pos;
	if (!g || pos == TOPO_NONE || t->nodes[node].kind != ICFAB_NODE_SWITCH) {
		snprintf(buf, len, "%s", t->nodes[node].name);
		return buf;
	}
	off = snprintf(buf, len, "(");
	for (d = 0; d < g->ndims && off < len; d++) {
		off += snprintf(buf + off, len - off, "%s%u", d ? "," : "",
				pos % g->size[d]);
		pos /= g->size[d];
	}
	if (off < len)
		snprintf(buf + off, len - off, ")");
	return buf;
}

int circuit_node_lookup(const struct topo *t, const char *name, uint32_t *id,
			struct topo_err *err)
{
	int n = topo_find_node(t, name);

	if (n < 0) {
		topo_errf(err, NULL, "no node named '%s'", name);
		return -ENOENT;
	}
	*id = n;
	return 0;
}

static const char *node_name(const struct circuit_table *ct, uint32_t node)
{
	return ct->t->nodes[node].name;
}

/* Forget the scratch of one request. */
static void tree_reset(struct circuit_table *ct, const uint32_t *leaves,
		       uint32_t nr_leaves)
{
	const struct topo_link *links = ct->t->links;
	uint32_t i;

	for (i = 0; i < ct->nr_tree; i++)
		ct->in_link[links[ct->tree[i]].dst_node] = TOPO_NONE;
	ct->nr_tree = 0;
	for (i = 0; i < nr_leaves; i++)
		if (leaves[i] < ct->nr_nodes)
			ct->leaf_idx[leaves[i]] = 0;
}

static int check_endpoint(struct circuit_table *ct, uint32_t node,
			  const char *what, struct topo_err *err)
{
	if (node >= ct->nr_nodes) {
		topo_errf(err, NULL, "%s: no node %u (the fabric has %u)", what,
			  node, ct->nr_nodes);
		return -ENOENT;
	}
	if (ct->t->nodes[node].kind != ICFAB_NODE_ENDPOINT)
		return topo_errf(err, NULL, "%s: %s is a %s, not an endpoint",
				 what, node_name(ct, node),
				 topo_kind_name(ct->t->nodes[node].kind));
	return 0;
}

/* Validate source and leaves; leaf_idx[] marks the leaves on success. */
static int check_request(struct circuit_table *ct, uint32_t src,
			 const uint32_t *leaves, uint32_t nr_leaves,
			 bool multicast, struct topo_err *err)
{
	char what[96];
	uint32_t i;
	int ret;

	if (ct->t->nr_nodes != ct->nr_nodes)
		return topo_errf(err, NULL,
				 "the topology has %u nodes, the circuit table %u",
				 ct->t->nr_nodes, ct->nr_nodes);
	if (!ct->t->routes)
		return topo_errf(err, NULL, "the topology has no routes yet");
	ret = check_endpoint(ct, src, "source", err);
	if (ret)
		return ret;
	if (!nr_leaves)
		return topo_errf(err, NULL, "multicast from %s: no leaves",
				 node_name(ct, src));
	for (i = 0; i < nr_leaves; i++) {
		uint32_t l = leaves[i];

		if (multicast)
			snprintf(what, sizeof(what), "multicast from %s: leaves[%u]",
				 node_name(ct, src), i);
		else
			snprintf(what, sizeof(what), "circuit from %s: destination",
				 node_name(ct, src));
		ret = check_endpoint(ct, l, what, err);
		if (!ret && l == src)
			ret = topo_errf(err, NULL, "%s is the source %s", what,
					node_name(ct, src));
		if (!ret && ct->leaf_idx[l])
			ret = topo_errf(err, NULL,
					"%s: %s is also leaves[%u]", what,
					node_name(ct, l), ct->leaf_idx[l] - 1);
		if (ret) {
			tree_reset(ct, leaves, i);
			return ret;
		}
		ct->leaf_idx[l] = i + 1;
	}
	return 0;
}

/* Is @v on the tree (or its root) already? */
static bool tree_reaches(const struct circuit_table *ct, uint32_t src,
			 uint32_t v)
{
	return v == src || ct->in_link[v] != TOPO_NONE;
}

/*
 * The routed path src -> dst into ct->path: its number of links, or
 * -errno with err set when a hop has no route, crosses a DOWN link or
 * loops (destination tables that revisit a node never reach dst: the hop
 * bound catches every loop).
 */
static int route_walk(struct circuit_table *ct, uint32_t src, uint32_t dst,
		      struct topo_err *err)
{
	const struct topo *t = ct->t;
	uint32_t u = src, len = 0;

	while (u != dst) {
		uint16_t port = topo_route_port(t, u, dst);
		const struct topo_link *l;
		int li = port == ICFAB_ROUTE_NONE ? -ENOENT : topo_port_link(t, u, port);

		if (li < 0) {
			topo_errf(err, NULL, "no route from %s to %s (none at %s)",
				  node_name(ct, src), node_name(ct, dst),
				  node_name(ct, u));
			return -EHOSTUNREACH;
		}
		l = &t->links[li];
		if (!topo_link_usable(l)) {
			topo_errf(err, NULL,
				  "the route from %s to %s crosses link %d (%s -> %s), which is down",
				  node_name(ct, src), node_name(ct, dst), li,
				  node_name(ct, u), node_name(ct, l->dst_node));
			return -ENETDOWN;
		}
		if (len >= ct->nr_nodes) {
			topo_errf(err, NULL, "the route from %s to %s loops",
				  node_name(ct, src), node_name(ct, dst));
			return -ELOOP;
		}
		ct->path[len++] = li;
		u = l->dst_node;
	}
	return len;
}

/*
 * Add the routed path src -> dst to the tree, grafted at the last node
 * of the path that the tree already reaches: the module builds a
 * circuit's data tree the same way (kmod/circuit.c), so the links and
 * routers here are the ones its WRITEs cross. Where the tables' routes to
 * two leaves part and meet again (a leaf/spine fabric spreading
 * destinations over spines), the later leaf joins the branch that
 * reaches the meeting node first, and no node is reached twice.
 */
static int tree_add_path(struct circuit_table *ct, uint32_t src, uint32_t dst,
			 struct topo_err *err)
{
	const struct topo_link *links = ct->t->links;
	int len = route_walk(ct, src, dst, err);
	int k;

	if (len < 0)
		return len;
	for (k = len; k > 0; k--)
		if (tree_reaches(ct, src, links[ct->path[k - 1]].dst_node))
			break;
	for (; k < len; k++) {
		uint32_t li = ct->path[k];

		ct->in_link[links[li].dst_node] = li;
		ct->tree[ct->nr_tree++] = li;
	}
	return 0;
}

/*
 * The lowest color free at every router of the tree, or -ENOSPC naming
 * the first full router (or the busiest, when none is full).
 */
static int tree_color(struct circuit_table *ct, uint32_t src, bool multicast,
		      struct topo_err *err)
{
	const char *shape = multicast ? "tree" : "path";
	const struct topo *t = ct->t;
	uint32_t i, routers = 0, busiest = TOPO_NONE, most = 0;
	uint64_t free_all = UINT64_MAX;
	char label[64];

	for (i = 0; i < ct->nr_tree; i++) {
		uint32_t v = t->links[ct->tree[i]].dst_node;
		uint64_t avail;
		uint32_t used;

		if (!circuit_is_router(t, v))
			continue;
		routers++;
		avail = all_colors(t->nodes[v].colors) & ~ct->used[v];
		used = __builtin_popcountll(ct->used[v]);
		if (!avail) {
			topo_errf(err, NULL, "router %s: %u/%u colors in use",
				  circuit_router_label(t, v, label, sizeof(label)),
				  used, t->nodes[v].colors);
			return -ENOSPC;
		}
		if (busiest == TOPO_NONE || used > most) {
			busiest = v;
			most = used;
		}
		free_all &= avail;
	}
	if (!routers) {
		topo_errf(err, NULL,
			  "%s from %s: no router with a color table on the %s",
			  multicast ? "multicast" : "circuit",
			  t->nodes[src].name, shape);
		return -EOPNOTSUPP;
	}
	if (!free_all) {
		topo_errf(err, NULL,
			  "no color is free at every router on the %s; most used: router %s: %u/%u colors in use",
			  shape, circuit_router_label(t, busiest, label, sizeof(label)),
			  most, t->nodes[busiest].colors);
		return -ENOSPC;
	}
	return __builtin_ctzll(free_all);
}

/* Make slot @id exist (free or not). */
static int slots_grow(struct circuit_table *ct, uint32_t id)
{
	return icfab_array_grow((void **)&ct->slots, &ct->nr_slots, id,
				sizeof(*ct->slots), 64);
}

static int slot_get(struct circuit_table *ct)
{
	uint32_t i;
	int ret;

	for (i = 0; i < ct->nr_slots; i++)
		if (!ct->slots[i].dsts)
			return i;
	ret = slots_grow(ct, i);
	return ret ? ret : (int)i;
}

void circuit_plan_free(struct circuit_plan *p)
{
	free(p->links);
	free(p->routers);
	memset(p, 0, sizeof(*p));
}

int circuit_plan(struct circuit_table *ct, uint32_t src,
		 const uint32_t *leaves, uint32_t nr_leaves, bool multicast,
		 struct circuit_plan *p, struct topo_err *err)
{
	int ret, color;
	uint32_t i;

	memset(p, 0, sizeof(*p));
	ret = check_request(ct, src, leaves, nr_leaves, multicast, err);
	if (ret)
		return ret;
	for (i = 0; i < nr_leaves && !ret; i++)
		ret = tree_add_path(ct, src, leaves[i], err);
	color = ret ? ret : tree_color(ct, src, multicast, err);
	if (color < 0) {
		ret = color;
		goto out_reset;
	}
	p->color = color;
	p->links = malloc((ct->nr_tree + 1) * sizeof(*p->links));
	p->routers = malloc((ct->nr_tree + 1) * sizeof(*p->routers));
	if (!p->links || !p->routers) {
		circuit_plan_free(p);
		ret = -ENOMEM;
		goto out_reset;
	}
	p->nr_links = ct->nr_tree;
	memcpy(p->links, ct->tree, ct->nr_tree * sizeof(*p->links));
	for (i = 0; i < ct->nr_tree; i++) {
		uint32_t v = ct->t->links[ct->tree[i]].dst_node;

		if (circuit_is_router(ct->t, v))
			p->routers[p->nr_routers++] = v;
	}
out_reset:
	tree_reset(ct, leaves, nr_leaves);
	return ret;
}

static void *dup_array(const uint32_t *a, uint32_t n)
{
	uint32_t *d = malloc((n + 1) * sizeof(*d));

	if (d && n)
		memcpy(d, a, n * sizeof(*d));
	return d;
}

int circuit_adopt(struct circuit_table *ct, const struct circuit *c,
		  struct topo_err *err)
{
	struct circuit *s;
	uint32_t i;
	int ret;

	if (c->src >= ct->nr_nodes)
		return topo_errf(err, NULL, "circuit %u: no source node %u",
				 c->id, c->src);
	if (!c->nr_dsts)
		return topo_errf(err, NULL, "circuit %u: no destinations",
				 c->id);
	for (i = 0; i < c->nr_dsts; i++)
		if (c->dsts[i] >= ct->nr_nodes)
			return topo_errf(err, NULL,
					 "circuit %u: no destination node %u",
					 c->id, c->dsts[i]);
	for (i = 0; i < c->nr_links; i++)
		if (c->links[i] >= ct->t->nr_links)
			return topo_errf(err, NULL, "circuit %u: no link %u",
					 c->id, c->links[i]);
	if (c->color >= CIRCUIT_MAX_COLORS)
		return topo_errf(err, NULL, "circuit %u: color %u", c->id,
				 c->color);
	for (i = 0; i < c->nr_routers; i++) {
		uint32_t r = c->routers[i];

		if (!circuit_is_router(ct->t, r) ||
		    c->color >= ct->t->nodes[r].colors)
			return topo_errf(err, NULL,
					 "circuit %u: node %u is not a router with color %u",
					 c->id, r, c->color);
	}
	ret = slots_grow(ct, c->id);
	if (ret)
		return ret;
	s = &ct->slots[c->id];
	if (s->dsts) {
		topo_errf(err, NULL, "circuit %u exists already", c->id);
		return -EEXIST;
	}
	*s = *c;
	s->multicast = c->nr_dsts > 1 || c->multicast;
	s->dsts = dup_array(c->dsts, c->nr_dsts);
	s->links = dup_array(c->links, c->nr_links);
	s->routers = dup_array(c->routers, c->nr_routers);
	if (!s->dsts || !s->links || !s->routers) {
		circuit_release(s);
		return -ENOMEM;
	}
	for (i = 0; i < s->nr_routers; i++)
		ct->used[s->routers[i]] |= 1ULL << s->color;
	ct->nr_open++;
	return 0;
}

static int open_tree(struct circuit_table *ct, uint32_t owner, uint32_t src,
		     const uint32_t *leaves, uint32_t nr_leaves, bool multicast,
		     struct topo_err *err)
{
	struct circuit_plan p;
	struct circuit c;
	int ret, id;

	ret = circuit_plan(ct, src, leaves, nr_leaves, multicast, &p, err);
	if (ret)
		return ret;
	id = slot_get(ct);
	if (id < 0) {
		circuit_plan_free(&p);
		return id;
	}
	c = (struct circuit){
		.id = id, .owner = owner, .color = p.color, .src = src,
		.multicast = multicast, .nr_dsts = nr_leaves,
		.dsts = (uint32_t *)leaves, .nr_links = p.nr_links,
		.links = p.links, .nr_routers = p.nr_routers,
		.routers = p.routers,
	};
	ret = circuit_adopt(ct, &c, err);
	circuit_plan_free(&p);
	return ret ? ret : id;
}

int circuit_open(struct circuit_table *ct, uint32_t owner, uint32_t src,
		 uint32_t dst, struct topo_err *err)
{
	return open_tree(ct, owner, src, &dst, 1, false, err);
}

int circuit_open_multicast(struct circuit_table *ct, uint32_t owner,
			   uint32_t src, const uint32_t *leaves,
			   uint32_t nr_leaves, struct topo_err *err)
{
	return open_tree(ct, owner, src, leaves, nr_leaves, true, err);
}

static void circuit_unmark(struct circuit_table *ct, struct circuit *c)
{
	uint32_t i;

	for (i = 0; i < c->nr_routers; i++)
		if (c->routers[i] < ct->nr_nodes)
			ct->used[c->routers[i]] &= ~(1ULL << c->color);
	circuit_release(c);
	ct->nr_open--;
}

int circuit_close(struct circuit_table *ct, uint32_t id, struct topo_err *err)
{
	if (id >= ct->nr_slots || !ct->slots[id].dsts) {
		topo_errf(err, NULL, "no circuit %u", id);
		return -ENOENT;
	}
	circuit_unmark(ct, &ct->slots[id]);
	return 0;
}

uint32_t circuit_close_owner(struct circuit_table *ct, uint32_t owner)
{
	uint32_t i, n = 0;

	for (i = 0; i < ct->nr_slots; i++)
		if (ct->slots[i].dsts && ct->slots[i].owner == owner) {
			circuit_unmark(ct, &ct->slots[i]);
			n++;
		}
	return n;
}

const struct circuit *circuit_get(const struct circuit_table *ct, uint32_t id)
{
	if (id >= ct->nr_slots || !ct->slots[id].dsts)
		return NULL;
	return &ct->slots[id];
}

const struct circuit *circuit_next(const struct circuit_table *ct,
				   const struct circuit *prev)
{
	uint32_t i = prev ? prev->id + 1 : 0;

	for (; i < ct->nr_slots; i++)
		if (ct->slots[i].dsts)
			return &ct->slots[i];
	return NULL;
}

uint32_t circuit_count(const struct circuit_table *ct)
{
	return ct->nr_open;
}

int circuit_router_usage(const struct circuit_table *ct, uint32_t node,
			 uint32_t *used, uint32_t *total)
{
	if (node >= ct->nr_nodes || !circuit_is_router(ct->t, node))
		return -ENOENT;
	*used = __builtin_popcountll(ct->used[node]);
	*total = ct->t->nodes[node].colors;
	return 0;
}

uint64_t circuit_router_mask(const struct circuit_table *ct, uint32_t node)
{
	return node < ct->nr_nodes ? ct->used[node] : 0;
}
