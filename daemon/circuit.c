// SPDX-License-Identifier: GPL-2.0
/*
 * Color-routed circuits and multicast trees: see circuit.h for the rules.
 *
 * A request runs in three steps, and only the last one changes anything:
 * validate the endpoints, walk the routed paths into a tree (scratch
 * arrays in the table), pick the lowest color free at every router of
 * the tree; then allocate the circuit's own arrays and mark the color.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "circuit.h"
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
	if (!ct->used || !ct->in_link || !ct->leaf_idx || !ct->tree) {
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

/* Add the routed path src -> dst to the tree. */
static int tree_add_path(struct circuit_table *ct, uint32_t src, uint32_t dst,
			 bool multicast, struct topo_err *err)
{
	const struct topo *t = ct->t;
	uint32_t u = src, hops = 0;

	while (u != dst) {
		uint16_t port = topo_route_port(t, u, dst);
		const struct topo_link *l;
		int li = port == ICFAB_ROUTE_NONE ? -ENOENT : topo_port_link(t, u, port);
		uint32_t v;

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
		if (++hops > ct->nr_nodes ||
		    (!multicast && (ct->in_link[l->dst_node] != TOPO_NONE ||
				    l->dst_node == src))) {
			topo_errf(err, NULL, "the route from %s to %s loops",
				  node_name(ct, src), node_name(ct, dst));
			return -ELOOP;
		}
		v = l->dst_node;
		if (ct->in_link[v] == (uint32_t)li) {
			u = v;			/* shared with an earlier leaf */
			continue;
		}
		if (ct->in_link[v] != TOPO_NONE || v == src)
			return topo_errf(err, NULL,
					 "multicast from %s: the routes to the leaves meet again at %s (not a tree)",
					 node_name(ct, src), node_name(ct, v));
		ct->in_link[v] = li;
		ct->tree[ct->nr_tree++] = li;
		u = v;
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

static int slot_get(struct circuit_table *ct)
{
	struct circuit *s;
	uint32_t i, cap;

	for (i = 0; i < ct->nr_slots; i++)
		if (!ct->slots[i].dsts)
			return i;
	cap = ct->nr_slots ? 2 * ct->nr_slots : 64;
	s = realloc(ct->slots, cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s + ct->nr_slots, 0, (cap - ct->nr_slots) * sizeof(*s));
	ct->slots = s;
	ct->nr_slots = cap;
	return i;
}

static int open_tree(struct circuit_table *ct, uint32_t owner, uint32_t src,
		     const uint32_t *leaves, uint32_t nr_leaves, bool multicast,
		     struct topo_err *err)
{
	struct circuit *c;
	int ret, color, id;
	uint32_t i;

	ret = check_request(ct, src, leaves, nr_leaves, multicast, err);
	if (ret)
		return ret;
	for (i = 0; i < nr_leaves && !ret; i++)
		ret = tree_add_path(ct, src, leaves[i], multicast, err);
	color = ret ? ret : tree_color(ct, src, multicast, err);
	if (color < 0) {
		ret = color;
		goto out_reset;
	}
	id = slot_get(ct);
	if (id < 0) {
		ret = id;
		goto out_reset;
	}
	c = &ct->slots[id];
	c->dsts = malloc(nr_leaves * sizeof(*c->dsts));
	c->links = malloc(ct->nr_tree * sizeof(*c->links));
	if (!c->dsts || !c->links) {
		circuit_release(c);
		ret = -ENOMEM;
		goto out_reset;
	}
	c->id = id;
	c->owner = owner;
	c->color = color;
	c->src = src;
	c->multicast = multicast;
	c->nr_dsts = nr_leaves;
	memcpy(c->dsts, leaves, nr_leaves * sizeof(*c->dsts));
	c->nr_links = ct->nr_tree;
	memcpy(c->links, ct->tree, ct->nr_tree * sizeof(*c->links));
	for (i = 0; i < c->nr_links; i++) {
		uint32_t v = ct->t->links[c->links[i]].dst_node;

		if (circuit_is_router(ct->t, v))
			ct->used[v] |= 1ULL << color;
	}
	ct->nr_open++;
	ret = id;
out_reset:
	tree_reset(ct, leaves, nr_leaves);
	return ret;
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

	for (i = 0; i < c->nr_links; i++) {
		uint32_t v = ct->t->links[c->links[i]].dst_node;

		if (v < ct->nr_nodes)
			ct->used[v] &= ~(1ULL << c->color);
	}
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
