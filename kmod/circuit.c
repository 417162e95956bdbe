// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: color-routed circuits held by the fabric.
 *
 * A circuit holds one color at every router (a switch with a color
 * table) it crosses. icfabd chooses the path and the color; the module
 * stores the circuit and re-checks, under the fabric lock, that the color
 * is free at every router, so two requesters can never be given the same
 * color at one router, whatever the daemon believes. Every check runs
 * before anything is marked: a refused circuit changes nothing.
 *
 * The color tables are one u64 per node id of the committed
 * configuration (bit c set: color c is held there), allocated with the
 * first circuit and rebuilt by every commit while circuits exist. A
 * commit keeps the circuits when every one of their nodes is still what
 * it was for them (source and destinations endpoints, routers switches
 * with more colors than the circuit's color), and is refused otherwise:
 * circuits are closed by their owners, never silently.
 *
 * Each circuit carries its tree (struct icfab_circuit_tree): the links
 * the committed routing tables take from its source to each destination,
 * merged so that destinations reached along a branch already in the tree
 * share it. Circuit WRITEs follow it (kmod/circuit_data.c). It is built
 * with the circuit and rebuilt for the new tables by every commit; a
 * circuit whose destinations are not all routed has none, and its WRITEs
 * are refused. Trees are reference counted, so one that a transfer in
 * the engine follows outlives a commit or the circuit.
 */
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "icfab.h"

/*
 * Circuit ids: the lowest free one, from 1 (a descriptor's circuit 0
 * means none) up to this.
 */
#define ICFAB_MAX_CIRCUITS	65536

void icfab_circuits_init(struct icfab_fabric *fabric)
{
	xa_init_flags(&fabric->circuits, XA_FLAGS_ALLOC);
	fabric->nr_circuits = 0;
	fabric->colors_used = NULL;
	fabric->colors_used_len = 0;
}

void icfab_circuits_exit(struct icfab_fabric *fabric)
{
	struct icfab_circuit *c;
	unsigned long id;

	xa_for_each(&fabric->circuits, id, c)
		icfab_circuit_free(c);
	xa_destroy(&fabric->circuits);
	icfab_circuit_data_exit(fabric);
	kvfree(fabric->colors_used);
	fabric->colors_used = NULL;
	fabric->colors_used_len = 0;
	fabric->nr_circuits = 0;
}

struct icfab_circuit *icfab_circuit_alloc(u32 nr_dsts, u32 nr_routers)
{
	struct icfab_circuit *c;

	c = kzalloc(struct_size(c, nodes, (size_t)nr_dsts + nr_routers),
		    GFP_KERNEL);
	if (!c)
		return NULL;
	c->nr_dsts = nr_dsts;
	c->nr_routers = nr_routers;
	INIT_LIST_HEAD(&c->binds);
	return c;
}

static void icfab_circuit_tree_release(struct kref *ref)
{
	kfree(container_of(ref, struct icfab_circuit_tree, ref));
}

void icfab_circuit_tree_put(struct icfab_circuit_tree *tree)
{
	if (tree)
		kref_put(&tree->ref, icfab_circuit_tree_release);
}

/* A circuit out of the table (or never in it) goes, with its bindings. */
void icfab_circuit_free(struct icfab_circuit *c)
{
	if (!c)
		return;
	icfab_circuit_binds_release(c);
	icfab_circuit_tree_put(c->tree);
	if (c->charged)
		icfab_quota_uncharge(c->owner_uid, ICFAB_QUOTA_CIRCUITS, 1);
	kfree(c);
}

/*
 * The links @m's routing tables take from @src to @dst, into @path
 * (room for nr_nodes). Returns how many, or 0 when the walk finds no
 * route: a missing entry, a port without a link, or a loop.
 */
static u32 icfab_route_walk(const struct icfab_mtopo *m, u32 src, u32 dst,
			    u32 *path)
{
	u32 node = src, len = 0;

	while (node != dst) {
		const struct icfab_mnode *n = &m->nodes[node];
		u16 port = icfab_topo_next_port(m, node, dst);
		u32 lid;

		/* Validation rules loops out; bound the walk regardless. */
		if (len >= m->nr_nodes || port == ICFAB_MODEL_NO_PORT ||
		    port >= n->nr_ports || !n->port_out)
			return 0;
		lid = n->port_out[port];
		if (lid >= m->links_cap || !m->links[lid].present ||
		    m->links[lid].dst >= m->nr_nodes)
			return 0;
		path[len++] = lid;
		node = m->links[lid].dst;
	}
	return len;
}

/*
 * Build @c's tree on @m (a validated configuration that @c fits): for
 * each destination in turn, its route, grafted onto the tree at the last
 * node of the route that the tree already reaches. So every link leaves
 * the source or a node reached by an earlier link and no node is reached
 * twice, even where the tables' routes to two destinations part and meet
 * again. Sets *@treep, NULL when a destination has no route. Returns 0
 * or -ENOMEM.
 */
static int icfab_circuit_tree_build(const struct icfab_mtopo *m,
				    const struct icfab_circuit *c,
				    struct icfab_circuit_tree **treep)
{
	u32 n = m->nr_nodes, nr_links = 0, i, k, len;
	struct icfab_circuit_tree *tree = NULL;
	unsigned long *reached;
	u32 *path, *links;
	int err = -ENOMEM;

	*treep = NULL;
	if (c->src >= n)
		return 0;
	path = kvmalloc_array(n, sizeof(*path), GFP_KERNEL);
	links = kvmalloc_array(n, sizeof(*links), GFP_KERNEL);
	reached = bitmap_zalloc(n, GFP_KERNEL);
	if (!path || !links || !reached)
		goto out_free;

	__set_bit(c->src, reached);
	for (i = 0; i < c->nr_dsts; i++) {
		len = icfab_route_walk(m, c->src, c->nodes[i], path);
		if (!len) {
			err = 0;	/* unrouted: no tree */
			goto out_free;
		}
		for (k = len; k > 0; k--)
			if (test_bit(m->links[path[k - 1]].dst, reached))
				break;
		for (; k < len; k++) {
			/* Not reached, so the tree has fewer than n links. */
			links[nr_links++] = path[k];
			__set_bit(m->links[path[k]].dst, reached);
		}
	}

	tree = kmalloc(struct_size(tree, links, nr_links), GFP_KERNEL);
	if (!tree)
		goto out_free;
	kref_init(&tree->ref);
	tree->checked = NULL;
	memcpy(tree->links, links, nr_links * sizeof(*links));
	tree->t.nr_links = nr_links;
	tree->t.nr_leaves = 0;
	tree->t.links = tree->links;
	*treep = tree;
	err = 0;

out_free:
	bitmap_free(reached);
	kvfree(links);
	kvfree(path);
	return err;
}

static bool icfab_is_endpoint(struct icfab_topo *t, u32 id)
{
	struct icfab_mnode *n = icfab_topo_node(t, id);

	return n && n->kind == ICFAB_MODEL_ENDPOINT;
}

static bool icfab_is_router(struct icfab_topo *t, u32 id)
{
	struct icfab_mnode *n = icfab_topo_node(t, id);

	return n && n->kind == ICFAB_MODEL_SWITCH && n->colors > 0;
}

/* Is any of @ids[0..n-1] given twice? Returns the index of the second. */
static int icfab_find_duplicate(const u32 *ids, u32 n)
{
	u32 i, j;

	for (i = 1; i < n; i++)
		for (j = 0; j < i; j++)
			if (ids[i] == ids[j])
				return i;
	return -1;
}

/* The committed configuration's color table, allocated on first use. */
static int icfab_colors_table(struct icfab_fabric *fabric)
{
	u32 n = fabric->active->m.nr_nodes;

	lockdep_assert_held(&fabric->lock);
	if (fabric->colors_used)
		return 0;
	fabric->colors_used = kvcalloc(n ?: 1, sizeof(u64), GFP_KERNEL);
	if (!fabric->colors_used)
		return -ENOMEM;
	fabric->colors_used_len = n;
	return 0;
}

/*
 * Check @c against the committed configuration and, if every check
 * passes, give it an id, hold its color at its routers and store it.
 * On failure nothing changed, the extack says why and the caller still
 * owns @c.
 */
int __icfab_circuit_insert(struct icfab_fabric *fabric, struct icfab_circuit *c,
			   struct netlink_ext_ack *extack)
{
	struct icfab_topo *t = fabric->active;
	const u32 *dsts = c->nodes, *routers = c->nodes + c->nr_dsts;
	u32 i, id;
	int err, dup;

	lockdep_assert_held(&fabric->lock);

	if (!icfab_is_endpoint(t, c->src)) {
		NL_SET_ERR_MSG(extack, "the source is not an endpoint of the committed configuration");
		icfab_set_cookie(extack, ICFAB_ERR_OBJ_NODE, c->src, 0);
		return -ENOENT;
	}
	for (i = 0; i < c->nr_dsts; i++) {
		if (!icfab_is_endpoint(t, dsts[i])) {
			NL_SET_ERR_MSG(extack, "a destination is not an endpoint of the committed configuration");
			icfab_set_cookie(extack, ICFAB_ERR_OBJ_NODE, dsts[i], 0);
			return -ENOENT;
		}
		if (dsts[i] == c->src) {
			NL_SET_ERR_MSG(extack, "a destination is the source");
			icfab_set_cookie(extack, ICFAB_ERR_OBJ_NODE, dsts[i], 0);
			return -EINVAL;
		}
	}
	dup = icfab_find_duplicate(dsts, c->nr_dsts);
	if (dup >= 0) {
		NL_SET_ERR_MSG(extack, "a destination is given twice");
		icfab_set_cookie(extack, ICFAB_ERR_OBJ_NODE, dsts[dup], 0);
		return -EINVAL;
	}
	dup = icfab_find_duplicate(routers, c->nr_routers);
	if (dup >= 0) {
		NL_SET_ERR_MSG(extack, "a router is given twice");
		icfab_set_cookie(extack, ICFAB_ERR_OBJ_NODE, routers[dup], 0);
		return -EINVAL;
	}
	for (i = 0; i < c->nr_routers; i++) {
		struct icfab_mnode *n;

		if (!icfab_is_router(t, routers[i])) {
			NL_SET_ERR_MSG(extack, "a router is not a switch with a color table");
			icfab_set_cookie(extack, ICFAB_ERR_OBJ_NODE, routers[i], 0);
			return -EINVAL;
		}
		n = icfab_topo_node(t, routers[i]);
		if (c->color >= n->colors) {
			NL_SET_ERR_MSG(extack, "the color is beyond a router's color table");
			icfab_set_cookie(extack, ICFAB_ERR_OBJ_ROUTER_COLOR,
					 routers[i], c->color);
			return -ERANGE;
		}
	}

	err = icfab_colors_table(fabric);
	if (err)
		return err;
	for (i = 0; i < c->nr_routers; i++) {
		u32 r = routers[i];

		if (fabric->colors_used[r] & BIT_ULL(c->color)) {
			u32 total = icfab_topo_node(t, r)->colors;
			u32 used = hweight64(fabric->colors_used[r]);

#ifdef NL_SET_ERR_MSG_FMT
			/* At most 80 bytes: the cookie and NODE_GET give the name. */
			NL_SET_ERR_MSG_FMT(extack,
					   "router %u: color %u is in use (%u/%u colors in use)",
					   r, c->color, used, total);
#else
			(void)total;
			(void)used;
			NL_SET_ERR_MSG(extack, "the color is in use at a router (the cookie names it)");
#endif
			icfab_set_cookie(extack, ICFAB_ERR_OBJ_ROUTER_COLOR, r,
					 c->color);
			return -ENOSPC;
		}
	}

	/* Those of uid 0 are the administrator's own: not counted. */
	if (c->owner_uid) {
		err = icfab_quota_charge(c->owner_uid, ICFAB_QUOTA_CIRCUITS, 1,
					 false);
		if (err) {
			if (err == -EDQUOT)
				NL_SET_ERR_MSG(extack, "the owner has as many circuits as max_uid_circuits allows");
			return err;
		}
	}
	err = icfab_circuit_tree_build(&t->m, c, &c->tree);
	if (!err)
		err = xa_alloc(&fabric->circuits, &id, c,
			       XA_LIMIT(1, ICFAB_MAX_CIRCUITS), GFP_KERNEL);
	if (err) {
		icfab_circuit_tree_put(c->tree);
		c->tree = NULL;
		if (c->owner_uid)
			icfab_quota_uncharge(c->owner_uid,
					     ICFAB_QUOTA_CIRCUITS, 1);
		if (err == -EBUSY) {
			NL_SET_ERR_MSG(extack, "too many circuits");
			err = -ENOSPC;
		}
		return err;
	}
	c->charged = c->owner_uid;
	c->id = id;
	for (i = 0; i < c->nr_routers; i++)
		fabric->colors_used[routers[i]] |= BIT_ULL(c->color);
	fabric->nr_circuits++;
	fabric->circuit_seq++;
	icfab_trace_circuit(fabric, c, true);
	return 0;
}

/*
 * Take circuit @id out and release its color; the caller frees it
 * (icfab_circuit_free()), which ends its receive bindings.
 */
struct icfab_circuit *__icfab_circuit_remove(struct icfab_fabric *fabric,
					     u32 id)
{
	struct icfab_circuit *c;
	u32 i;

	lockdep_assert_held(&fabric->lock);

	c = xa_erase(&fabric->circuits, id);
	if (!c)
		return NULL;
	for (i = 0; i < c->nr_routers; i++) {
		u32 r = c->nodes[c->nr_dsts + i];

		if (r < fabric->colors_used_len)
			fabric->colors_used[r] &= ~BIT_ULL(c->color);
	}
	fabric->nr_circuits--;
	fabric->circuit_seq++;
	icfab_trace_circuit(fabric, c, false);
	return c;
}

/* Bit c set: color c is held at @node (0 for other nodes). */
u64 __icfab_colors_used(struct icfab_fabric *fabric, u32 node)
{
	lockdep_assert_held(&fabric->lock);

	return node < fabric->colors_used_len ? fabric->colors_used[node] : 0;
}

/* Does circuit @c still fit @t? Returns the first node that does not. */
static int icfab_circuit_misfit(struct icfab_topo *t,
				const struct icfab_circuit *c)
{
	u32 i;

	if (!icfab_is_endpoint(t, c->src))
		return c->src;
	for (i = 0; i < c->nr_dsts; i++)
		if (!icfab_is_endpoint(t, c->nodes[i]))
			return c->nodes[i];
	for (i = 0; i < c->nr_routers; i++) {
		u32 r = c->nodes[c->nr_dsts + i];

		if (!icfab_is_router(t, r) ||
		    c->color >= icfab_topo_node(t, r)->colors)
			return r;
	}
	return -1;
}

/*
 * A commit is about to make @t the committed configuration: refuse it
 * (-EBUSY) when a circuit does not fit it, otherwise rebuild the color
 * tables for its node ids and the circuits' trees for its routes. Called
 * after @t passed validation, right before it is swapped in; on failure
 * nothing changed. Transfers in flight keep the trees they follow.
 */
int icfab_circuits_commit(struct icfab_fabric *fabric, struct icfab_topo *t,
			  struct icfab_commit_err *cerr)
{
	struct icfab_circuit *c;
	unsigned long id;
	struct icfab_circuit_tree **trees;
	u64 *table;
	u32 i, n;
	int err;

	lockdep_assert_held(&fabric->lock);

	fabric->circuit_seq++;
	if (!fabric->nr_circuits) {
		kvfree(fabric->colors_used);
		fabric->colors_used = NULL;
		fabric->colors_used_len = 0;
		return 0;
	}
	xa_for_each(&fabric->circuits, id, c) {
		int bad = icfab_circuit_misfit(t, c);

		if (bad >= 0) {
			/* Netlink names the circuit where it can format. */
			icfab_commit_err_set(cerr,
					     "a circuit uses a node that the configuration removes or changes; close the circuit first",
					     ICFAB_ERR_OBJ_CIRCUIT, id, bad);
			return -EBUSY;
		}
	}

	table = kvcalloc(t->m.nr_nodes ?: 1, sizeof(u64), GFP_KERNEL);
	trees = kvcalloc(fabric->nr_circuits, sizeof(*trees), GFP_KERNEL);
	if (!table || !trees) {
		err = -ENOMEM;
		goto err_free;
	}
	n = 0;
	xa_for_each(&fabric->circuits, id, c) {
		if (WARN_ON_ONCE(n == fabric->nr_circuits)) {
			err = -EINVAL;
			goto err_free;
		}
		err = icfab_circuit_tree_build(&t->m, c, &trees[n++]);
		if (err)
			goto err_free;
	}

	/* Nothing fails from here on. */
	n = 0;
	xa_for_each(&fabric->circuits, id, c) {
		for (i = 0; i < c->nr_routers; i++)
			table[c->nodes[c->nr_dsts + i]] |= BIT_ULL(c->color);
		icfab_circuit_tree_put(c->tree);
		c->tree = trees[n++];
	}
	kvfree(trees);
	kvfree(fabric->colors_used);
	fabric->colors_used = table;
	fabric->colors_used_len = t->m.nr_nodes;
	return 0;

err_free:
	cerr->msg = "no memory for the circuits' tables";
	for (i = 0; trees && i < fabric->nr_circuits; i++)
		icfab_circuit_tree_put(trees[i]);
	kvfree(trees);
	kvfree(table);
	return err;
}
