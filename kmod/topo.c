// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: the storage behind a fabric's topology.
 *
 * A fabric has a committed topology (what the engine uses) and, while a
 * configurator is at work, a staged one: a deep copy of the committed
 * topology that netlink commands edit. COMMIT validates the staged copy
 * with the model's rules and swaps it in; ABORT frees it. Nothing here
 * locks: every function is called with the fabric's lock held.
 */
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "icfab.h"

struct icfab_topo *icfab_topo_create(void)
{
	struct icfab_topo *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	t->time_mode = ICFAB_TIME_VIRTUAL;
	t->segment_size = ICFAB_DEFAULT_SEGMENT_SIZE;
	t->dilation = 1;
	return t;
}

static void icfab_node_free_tables(struct icfab_mnode *n)
{
	kvfree(n->routes);
	n->routes = NULL;
	n->routes_len = 0;
	kvfree(n->sets);
	n->sets = NULL;
	n->nr_sets = 0;
	kvfree(n->port_out);	/* port_in shares the allocation */
	n->port_out = NULL;
	n->port_in = NULL;
}

void icfab_topo_destroy(struct icfab_topo *t)
{
	u32 i;

	if (!t)
		return;
	for (i = 0; i < t->m.nodes_cap; i++)
		icfab_node_free_tables(&t->m.nodes[i]);
	kvfree(t->m.nodes);
	kvfree(t->m.links);
	kfree(t);
}

/* One past the highest present node and link: what a copy must hold. */
static u32 icfab_nodes_used(const struct icfab_topo *t)
{
	u32 n = t->m.nodes_cap;

	while (n && !t->m.nodes[n - 1].present)
		n--;
	return n;
}

static u32 icfab_links_used(const struct icfab_topo *t)
{
	u32 n = t->m.links_cap;

	while (n && !t->m.links[n - 1].present)
		n--;
	return n;
}

/*
 * A deep copy of @src for staging. Arrays are sized to what is in use,
 * so a fabric that shrank gives its memory back at the next commit.
 */
struct icfab_topo *icfab_topo_clone(const struct icfab_topo *src)
{
	u32 nodes = icfab_nodes_used(src), links = icfab_links_used(src);
	struct icfab_topo *t;
	u32 i;

	t = kmemdup(src, sizeof(*src), GFP_KERNEL);
	if (!t)
		return NULL;
	t->m.nodes = NULL;
	t->m.links = NULL;
	t->m.nodes_cap = 0;
	t->m.links_cap = 0;

	if (nodes) {
		t->m.nodes = kvmalloc_array(nodes, sizeof(*t->m.nodes),
					    GFP_KERNEL);
		if (!t->m.nodes)
			goto err_destroy;
		memcpy(t->m.nodes, src->m.nodes,
		       array_size(nodes, sizeof(*t->m.nodes)));
		/* Until their tables are copied, the nodes own none. */
		for (i = 0; i < nodes; i++) {
			t->m.nodes[i].routes = NULL;
			t->m.nodes[i].routes_len = 0;
			t->m.nodes[i].sets = NULL;
			t->m.nodes[i].nr_sets = 0;
			t->m.nodes[i].port_out = NULL;
			t->m.nodes[i].port_in = NULL;
		}
		t->m.nodes_cap = nodes;
	}
	if (links) {
		t->m.links = kvmalloc_array(links, sizeof(*t->m.links),
					    GFP_KERNEL);
		if (!t->m.links)
			goto err_destroy;
		memcpy(t->m.links, src->m.links,
		       array_size(links, sizeof(*t->m.links)));
		t->m.links_cap = links;
	}

	/* Port maps are derived at commit; only the routes are state. */
	for (i = 0; i < nodes; i++) {
		const struct icfab_mnode *sn = &src->m.nodes[i];
		struct icfab_mnode *n = &t->m.nodes[i];

		if (sn->nr_sets) {
			n->sets = kvmalloc_array(sn->nr_sets, sizeof(*n->sets),
						 GFP_KERNEL);
			if (!n->sets)
				goto err_destroy;
			memcpy(n->sets, sn->sets,
			       array_size(sn->nr_sets, sizeof(*n->sets)));
			n->nr_sets = sn->nr_sets;
		}
		if (!sn->routes_len)
			continue;
		n->routes = kvmalloc_array(sn->routes_len, sizeof(*n->routes),
					   GFP_KERNEL);
		if (!n->routes)
			goto err_destroy;
		memcpy(n->routes, sn->routes,
		       array_size(sn->routes_len, sizeof(*n->routes)));
		n->routes_len = sn->routes_len;
	}
	return t;

err_destroy:
	icfab_topo_destroy(t);
	return NULL;
}

/* Grow *arr (of *cap elements) to hold index @need, doubling, zero-filled. */
static int icfab_grow(void **arr, u32 *cap, u32 need, size_t elem, u32 max)
{
	u32 new_cap;
	void *n;

	if (need < *cap)
		return 0;
	new_cap = max_t(u32, 16, *cap);
	while (new_cap <= need)
		new_cap *= 2;
	new_cap = min(new_cap, max);

	n = kvcalloc(new_cap, elem, GFP_KERNEL);
	if (!n)
		return -ENOMEM;
	if (*arr)
		memcpy(n, *arr, array_size(*cap, elem));
	kvfree(*arr);
	*arr = n;
	*cap = new_cap;
	return 0;
}

struct icfab_mnode *icfab_topo_node(struct icfab_topo *t, u32 id)
{
	if (id >= t->m.nodes_cap || !t->m.nodes[id].present)
		return NULL;
	return &t->m.nodes[id];
}

struct icfab_mlink *icfab_topo_link(struct icfab_topo *t, u32 id)
{
	if (id >= t->m.links_cap || !t->m.links[id].present)
		return NULL;
	return &t->m.links[id];
}

int icfab_topo_node_add(struct icfab_topo *t, u32 id,
			const struct icfab_mnode *tmpl)
{
	struct icfab_mnode *n;
	int err;

	if (id >= ICFAB_MAX_NODES)
		return -EINVAL;
	if (icfab_topo_node(t, id))
		return -EEXIST;
	err = icfab_grow((void **)&t->m.nodes, &t->m.nodes_cap, id,
			 sizeof(*t->m.nodes), ICFAB_MAX_NODES);
	if (err)
		return err;

	n = &t->m.nodes[id];
	*n = *tmpl;
	n->present = 1;
	n->nr_link_ends = 0;
	n->routes = NULL;
	n->routes_len = 0;
	n->sets = NULL;
	n->nr_sets = 0;
	n->port_out = NULL;
	n->port_in = NULL;
	t->m.nr_nodes++;
	if (n->kind == ICFAB_MODEL_ENDPOINT)
		t->m.nr_endpoints++;
	else
		t->m.nr_switches++;
	return 0;
}

int icfab_topo_node_del(struct icfab_topo *t, u32 id)
{
	struct icfab_mnode *n = icfab_topo_node(t, id);

	if (!n)
		return -ENOENT;
	/* Counted, not searched: tearing down a large fabric stays linear. */
	if (n->nr_link_ends)
		return -EBUSY;
	if (n->kind == ICFAB_MODEL_ENDPOINT)
		t->m.nr_endpoints--;
	else
		t->m.nr_switches--;
	t->m.nr_nodes--;
	icfab_node_free_tables(n);
	memset(n, 0, sizeof(*n));
	return 0;
}

int icfab_topo_link_add(struct icfab_topo *t, u32 id,
			const struct icfab_mlink *tmpl)
{
	struct icfab_mnode *src = icfab_topo_node(t, tmpl->src);
	struct icfab_mnode *dst = icfab_topo_node(t, tmpl->dst);
	int err;

	if (id >= ICFAB_MAX_LINKS || !src || !dst)
		return -EINVAL;
	if (icfab_topo_link(t, id))
		return -EEXIST;
	err = icfab_grow((void **)&t->m.links, &t->m.links_cap, id,
			 sizeof(*t->m.links), ICFAB_MAX_LINKS);
	if (err)
		return err;
	t->m.links[id] = *tmpl;
	t->m.links[id].present = 1;
	t->m.nr_links++;
	src->nr_link_ends++;
	dst->nr_link_ends++;
	return 0;
}

int icfab_topo_link_del(struct icfab_topo *t, u32 id)
{
	struct icfab_mlink *l = icfab_topo_link(t, id);

	if (!l)
		return -ENOENT;
	t->m.nodes[l->src].nr_link_ends--;
	t->m.nodes[l->dst].nr_link_ends--;
	memset(l, 0, sizeof(*l));
	t->m.nr_links--;
	return 0;
}

/* Set @n routes of @node, for destinations dst_first.., growing its table. */
int icfab_topo_routes_set(struct icfab_topo *t, u32 node, u32 dst_first,
			  const u16 *ports, u32 n)
{
	struct icfab_mnode *nd = icfab_topo_node(t, node);
	u32 end, i;

	if (!nd)
		return -ENOENT;
	if (check_add_overflow(dst_first, n, &end) || end > ICFAB_MAX_NODES)
		return -EINVAL;

	if (end > nd->routes_len) {
		u16 *r = kvmalloc_array(end, sizeof(*r), GFP_KERNEL);

		if (!r)
			return -ENOMEM;
		if (nd->routes)
			memcpy(r, nd->routes,
			       array_size(nd->routes_len, sizeof(*r)));
		for (i = nd->routes_len; i < end; i++)
			r[i] = ICFAB_MODEL_NO_PORT;
		kvfree(nd->routes);
		nd->routes = r;
		nd->routes_len = end;
	}
	memcpy(nd->routes + dst_first, ports, array_size(n, sizeof(*ports)));
	return 0;
}

/*
 * Set @node's next-hop sets first..first+n-1 to @sets and drop any above
 * them: a whole list replaces the node's sets, an empty one from 0
 * clears them. Values are checked by the caller; ports against links at
 * commit.
 */
int icfab_topo_sets_set(struct icfab_topo *t, u32 node, u32 first,
			const struct icfab_route_set *sets, u32 n)
{
	struct icfab_mnode *nd = icfab_topo_node(t, node);
	struct icfab_mset *s = NULL;
	u32 end, i, j;

	if (!nd)
		return -ENOENT;
	if (check_add_overflow(first, n, &end) || end > ICFAB_ROUTE_SETS_MAX ||
	    first > nd->nr_sets)
		return -ERANGE;
	if (end) {
		s = kvmalloc_array(end, sizeof(*s), GFP_KERNEL);
		if (!s)
			return -ENOMEM;
		if (first)
			memcpy(s, nd->sets, array_size(first, sizeof(*s)));
	}
	for (i = 0; i < n; i++) {
		memset(&s[first + i], 0, sizeof(s[first + i]));
		s[first + i].mode = sets[i].mode;
		s[first + i].nr = sets[i].nr_ports;
		for (j = 0; j < sets[i].nr_ports &&
			    j < ICFAB_ROUTE_SET_MAX_PORTS; j++)
			s[first + i].ports[j] = sets[i].ports[j];
	}
	kvfree(nd->sets);
	nd->sets = s;
	nd->nr_sets = end;
	return 0;
}

static void icfab_topo_yield(void)
{
	cond_resched();
}

static const struct icfab_topo_limits icfab_topo_limits = {
	.max_endpoints	= ICFAB_MAX_ENDPOINTS,
	.max_switches	= ICFAB_MAX_SWITCHES,
	.max_links	= ICFAB_MAX_LINKS,
	.max_ports	= ICFAB_MAX_PORTS,
	.max_colors	= ICFAB_MAX_COLORS,
	.yield		= icfab_topo_yield,
};

/*
 * Make @t ready to be committed: allocate every node's port maps and run
 * the model's validation. Returns 0, -ENOMEM, or -EINVAL with @err set.
 */
int icfab_topo_validate_commit(struct icfab_topo *t, struct icfab_topo_err *err)
{
	u8 *scratch;
	u32 i;
	int ret;

	for (i = 0; i < t->m.nodes_cap; i++) {
		struct icfab_mnode *n = &t->m.nodes[i];

		kvfree(n->port_out);
		n->port_out = NULL;
		n->port_in = NULL;
		if (!n->present || !n->nr_ports ||
		    n->nr_ports > ICFAB_MAX_PORTS)
			continue;	/* validation reports a bad count */
		n->port_out = kvmalloc_array(2 * n->nr_ports,
					     sizeof(*n->port_out), GFP_KERNEL);
		if (!n->port_out)
			return -ENOMEM;
		n->port_in = n->port_out + n->nr_ports;
	}

	scratch = kvmalloc(ICFAB_TOPO_SCRATCH_SIZE(t->m.nr_nodes), GFP_KERNEL);
	if (!scratch)
		return -ENOMEM;
	ret = icfab_topo_validate(&t->m, &icfab_topo_limits, scratch, err);
	kvfree(scratch);
	return ret ? -EINVAL : 0;
}

/* Bytes the topology's tables take, for the FABRIC_GET report. */
u64 icfab_topo_mem_bytes(const struct icfab_topo *t)
{
	u64 bytes = sizeof(*t);
	u32 i;

	bytes += (u64)t->m.nodes_cap * sizeof(*t->m.nodes);
	bytes += (u64)t->m.links_cap * sizeof(*t->m.links);
	for (i = 0; i < t->m.nodes_cap; i++) {
		const struct icfab_mnode *n = &t->m.nodes[i];

		bytes += (u64)n->routes_len * sizeof(*n->routes);
		bytes += (u64)n->nr_sets * sizeof(*n->sets);
		if (n->port_out)
			bytes += 2ULL * n->nr_ports * sizeof(*n->port_out);
	}
	return bytes;
}

/*
 * Can a live engine built on @old move to @new (ICFAB_F_LIVE_COMMIT)?
 * Only if every node keeps its id, kind, DMA engines and memory, and the
 * fabric's parameters stay: the engine's per-node state and the regions
 * charged to endpoints depend on them. Links and routes may change.
 * Returns 0, or -EBUSY with *@node set to the first node that differs
 * (ICFAB_MAX_NODES when a fabric parameter does).
 */
int icfab_topo_live_check(const struct icfab_topo *old,
			  const struct icfab_topo *new, u32 *node)
{
	u32 cap = max(old->m.nodes_cap, new->m.nodes_cap);
	u32 i;

	*node = ICFAB_MAX_NODES;
	if (old->segment_size != new->segment_size ||
	    old->time_mode != new->time_mode ||
	    old->dilation != new->dilation)
		return -EBUSY;
	for (i = 0; i < cap; i++) {
		const struct icfab_mnode *a = i < old->m.nodes_cap ?
					      &old->m.nodes[i] : NULL;
		const struct icfab_mnode *b = i < new->m.nodes_cap ?
					      &new->m.nodes[i] : NULL;
		bool pa = a && a->present, pb = b && b->present;

		if (!pa && !pb)
			continue;
		if (pa != pb || a->kind != b->kind ||
		    a->dma_engines != b->dma_engines ||
		    a->mem_bytes != b->mem_bytes) {
			*node = i;
			return -EBUSY;
		}
	}
	return 0;
}

/* Resize *@arr from *@cap to exactly @want zeroed-at-the-end elements. */
static int icfab_resize(void **arr, u32 *cap, u32 want, size_t elem)
{
	void *n;

	if (want == *cap)
		return 0;
	n = kvcalloc(max_t(u32, want, 1), elem, GFP_KERNEL);
	if (!n)
		return -ENOMEM;
	if (*arr)
		memcpy(n, *arr, array_size(min(*cap, want), elem));
	kvfree(*arr);
	*arr = n;
	*cap = want;
	return 0;
}

/*
 * Give @t exactly @nodes_cap node and @links_cap link entries, the sizes
 * a live engine's storage was built for, so that it can run on @t.
 * Entries move, with the tables they own. Returns 0, -ENOMEM, or -E2BIG
 * when a present node or link of @t lies beyond them.
 */
int icfab_topo_set_caps(struct icfab_topo *t, u32 nodes_cap, u32 links_cap)
{
	int err;

	if (icfab_nodes_used(t) > nodes_cap || icfab_links_used(t) > links_cap)
		return -E2BIG;
	err = icfab_resize((void **)&t->m.nodes, &t->m.nodes_cap, nodes_cap,
			   sizeof(*t->m.nodes));
	if (err)
		return err;
	return icfab_resize((void **)&t->m.links, &t->m.links_cap, links_cap,
			    sizeof(*t->m.links));
}
