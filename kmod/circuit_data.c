// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: circuits in the data path (ICFAB_F_CIRCUITS).
 *
 * A WRITE that names a circuit travels the circuit's tree
 * (icfab_engine_submit_tree()) instead of the routing tables, and its
 * bytes land where ICFAB_IOC_CIRCUIT_RECV bound a region at each of the
 * circuit's destinations. kmod/data.c calls in at four points: checking
 * the descriptor, submitting it to the engine, copying at completion and
 * releasing the request; chardev.c for the ioctl, REGION_FREE and the
 * last close.
 *
 * Bindings belong to the circuit (circuit->binds, under fabric->lock),
 * one per (context, destination); any context attached to a destination
 * may bind there, so the receivers need not be the sender. A binding
 * holds a reference on its region and names it by handle too: it counts
 * only while the handle still names that region, so it ends with
 * REGION_FREE at once, and the hook after REGION_FREE only reclaims it.
 *
 * A submission resolves everything once, under the lock: the tree it
 * follows and the regions it lands in, each by reference
 * (struct icfab_circuit_xfer), so nothing that happens to the circuit or
 * the bindings while it is in flight changes or frees what it uses. The
 * engine reads the tree's links until the transfer completes, even when
 * its request was cancelled and freed (io_uring), so the fabric keeps a
 * reference per engine transfer id (fabric->tree_xfers) that only the
 * engine's completion drops.
 */
#include <linux/list.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "icfab.h"

struct icfab_circuit_bind {
	struct list_head node;		/* in circuit->binds */
	struct icfab_ctx *ctx;		/* the binder; its bindings go
					 * before it does */
	u32 endpoint;			/* node id: a destination */
	u32 handle;			/* @region's handle in @ctx */
	struct icfab_region *region;	/* a reference */
	u64 offset;			/* bytes into @region */
};

struct icfab_circuit_dest {
	struct icfab_region *region;	/* a reference */
	u64 offset;			/* bytes: bound offset + remote_off */
};

/* What a circuit WRITE in flight uses. */
struct icfab_circuit_xfer {
	struct icfab_circuit_tree *tree;	/* a reference */
	u32 nr_dests;
	struct icfab_circuit_dest dests[];
};

static void icfab_circuit_bind_free(struct icfab_circuit_bind *b)
{
	icfab_region_put(b->region);
	kfree(b);
}

static bool icfab_circuit_has_dst(const struct icfab_circuit *c, u32 node)
{
	u32 i;

	for (i = 0; i < c->nr_dsts; i++)
		if (c->nodes[i] == node)
			return true;
	return false;
}

/*
 * May @ctx receive over @c? Its owner's contexts, those of the uids it
 * granted, and administrators' (docs/SECURITY.md).
 */
static bool icfab_circuit_may_recv(const struct icfab_circuit *c,
				   const struct icfab_ctx *ctx)
{
	u32 i;

	if (ctx->net_admin || ctx->uid == c->owner_uid)
		return true;
	for (i = 0; i < c->nr_recv_uids; i++)
		if (c->recv_uids[i] == ctx->uid)
			return true;
	return false;
}

/* [@off, @off + @len) inside @size bytes, without overflow? */
static bool icfab_circuit_range_ok(u64 off, u64 len, u64 size)
{
	u64 end;

	return !check_add_overflow(off, len, &end) && end <= size;
}

long icfab_ioctl_circuit_recv(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_circuit_bind *b = NULL, *old = NULL, *it;
	struct icfab_region *r = NULL;
	struct icfab_circuit_recv cr;
	struct icfab_circuit *c;
	long ret;

	if (copy_from_user(&cr, uarg, sizeof(cr)))
		return -EFAULT;
	if (cr.flags || (!cr.region && cr.offset) ||
	    !icfab_reserved_zero(cr.reserved, ARRAY_SIZE(cr.reserved)))
		return -EINVAL;
	if (cr.region) {
		b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
		if (!b)
			return -ENOMEM;
		r = icfab_region_get_local(&ctx->regions, cr.region);
	}

	mutex_lock(&fabric->lock);
	ret = -ENXIO;
	c = xa_load(&fabric->circuits, cr.circuit);
	if (!c)
		goto out_unlock;
	ret = -EINVAL;
	if (!icfab_circuit_has_dst(c, cr.endpoint) ||
	    !icfab_ctx_attached_to(ctx, cr.endpoint))
		goto out_unlock;
	ret = -EPERM;
	if (!icfab_circuit_may_recv(c, ctx))
		goto out_unlock;
	if (cr.region) {
		/* REGION_FREE takes the handle under the lock: still there? */
		ret = -EBADF;
		if (!r || icfab_region_endpoint(r) != cr.endpoint ||
		    xa_load(&ctx->regions, cr.region) != r)
			goto out_unlock;
		ret = -ERANGE;
		if (cr.offset > icfab_region_size(r))
			goto out_unlock;
	}
	list_for_each_entry(it, &c->binds, node) {
		if (it->ctx == ctx && it->endpoint == cr.endpoint) {
			old = it;
			list_del(&old->node);
			break;
		}
	}
	if (b) {
		b->ctx = ctx;
		b->endpoint = cr.endpoint;
		b->handle = cr.region;
		b->region = r;
		b->offset = cr.offset;
		list_add_tail(&b->node, &c->binds);
		b = NULL;
		r = NULL;
	}
	ret = 0;
out_unlock:
	mutex_unlock(&fabric->lock);
	if (old)
		icfab_circuit_bind_free(old);
	icfab_region_put(r);
	kfree(b);
	return ret;
}

/*
 * Take @ctx's bindings out of every circuit: all of them (@all), or
 * those whose handle no longer names their region. They are freed after
 * the lock is dropped.
 */
static void icfab_circuit_recv_drop(struct icfab_ctx *ctx, bool all)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_circuit_bind *b, *tmp;
	struct icfab_circuit *c;
	unsigned long id;
	LIST_HEAD(gone);

	mutex_lock(&fabric->lock);
	xa_for_each(&fabric->circuits, id, c) {
		list_for_each_entry_safe(b, tmp, &c->binds, node) {
			if (b->ctx != ctx)
				continue;
			if (all || xa_load(&ctx->regions,
					   b->handle) != b->region)
				list_move(&b->node, &gone);
		}
	}
	mutex_unlock(&fabric->lock);

	list_for_each_entry_safe(b, tmp, &gone, node)
		icfab_circuit_bind_free(b);
}

/* The context's last file is closing: its bindings go first. */
void icfab_circuit_recv_ctx_gone(struct icfab_ctx *ctx)
{
	icfab_circuit_recv_drop(ctx, true);
}

/* After REGION_FREE: bindings of handles that are gone are reclaimed. */
void icfab_circuit_recv_prune(struct icfab_ctx *ctx)
{
	icfab_circuit_recv_drop(ctx, false);
}

/* @c is out of the table (nobody else can reach it): its bindings go. */
void icfab_circuit_binds_release(struct icfab_circuit *c)
{
	struct icfab_circuit_bind *b, *tmp;

	list_for_each_entry_safe(b, tmp, &c->binds, node) {
		list_del(&b->node);
		icfab_circuit_bind_free(b);
	}
}

void icfab_circuit_xfer_put(struct icfab_circuit_xfer *cx)
{
	u32 i;

	if (!cx)
		return;
	for (i = 0; i < cx->nr_dests; i++)
		icfab_region_put(cx->dests[i].region);
	icfab_circuit_tree_put(cx->tree);
	kfree(cx);
}

/*
 * Resolve @c's live bindings for a WRITE of @dd into @cx (room for every
 * binding): -ENOTCONN when a destination has none, -ERANGE when a write
 * would pass a bound region's end. The fabric lock is held.
 */
static int icfab_circuit_dests(const struct icfab_circuit *c,
			       const struct icfab_desc *dd,
			       struct icfab_circuit_xfer *cx)
{
	struct icfab_circuit_bind *b;
	u32 i;

	for (i = 0; i < c->nr_dsts; i++) {
		bool bound = false;

		list_for_each_entry(b, &c->binds, node) {
			struct icfab_circuit_dest *d = &cx->dests[cx->nr_dests];
			struct icfab_region *r;
			u64 off;

			if (b->endpoint != c->nodes[i])
				continue;
			/* Counts only while its handle names its region. */
			r = icfab_region_get_local(&b->ctx->regions,
						   b->handle);
			if (r != b->region) {
				icfab_region_put(r);
				continue;
			}
			d->region = r;
			cx->nr_dests++;
			bound = true;
			if (check_add_overflow(b->offset, dd->remote_off, &off) ||
			    !icfab_circuit_range_ok(off, dd->len,
						    icfab_region_size(r)))
				return -ERANGE;
			d->offset = off;
		}
		if (!bound)
			return -ENOTCONN;
	}
	return 0;
}

/*
 * Check a descriptor that names a circuit (see "Circuit descriptors" in
 * uapi/linux/icfab.h), submitted on a queue of endpoint @src. On success
 * *@cxp holds what its transfer uses; *@local gets the source region (a
 * reference, also on failure: the caller releases both with the request).
 * An unrouted circuit (no tree) is refused with -EHOSTUNREACH. The
 * fabric lock is held.
 */
int icfab_circuit_desc_check(struct icfab_ctx *ctx,
			     const struct icfab_desc *dd, u32 src,
			     struct icfab_region **local,
			     struct icfab_circuit_xfer **cxp)
{
	struct icfab_fabric *fabric = ctx->fabric;
	bool timing = dd->flags & ICFAB_DESC_F_TIMING_ONLY;
	struct icfab_circuit_xfer *cx;
	struct icfab_circuit_bind *b;
	struct icfab_circuit *c;
	u32 nr_binds = 0;
	int err;

	lockdep_assert_held(&fabric->lock);
	/* The descriptor's own shape first, then the circuit. */
	if (dd->op != ICFAB_OP_WRITE || dd->rkey)
		return -EINVAL;
	c = xa_load(&fabric->circuits, dd->circuit);
	if (!c)
		return -ENXIO;
	if (c->owner_pid && c->owner_pid != task_tgid_nr(current))
		return -EPERM;
	if (c->src != src ||
	    (dd->peer && (c->nr_dsts != 1 || dd->peer != c->nodes[0])))
		return -EINVAL;
	if (timing) {
		if (dd->region || dd->local_off || dd->remote_off)
			return -EINVAL;
	} else {
		*local = icfab_region_get_local(&ctx->regions,
						dd->region);
		if (!*local)
			return -EBADF;
		if (icfab_region_endpoint(*local) != src)
			return -EINVAL;
		if (!icfab_circuit_range_ok(dd->local_off, dd->len,
					    icfab_region_size(*local)))
			return -ERANGE;
	}
	if (!c->tree)
		return -EHOSTUNREACH;
	if (!fabric->tree_xfers) {
		fabric->tree_xfers = kvcalloc(ICFAB_ENGINE_XFERS,
					      sizeof(*fabric->tree_xfers),
					      GFP_KERNEL_ACCOUNT);
		if (!fabric->tree_xfers)
			return -ENOMEM;
		fabric->tree_xfers_cap = ICFAB_ENGINE_XFERS;
	}

	if (!timing)
		list_for_each_entry(b, &c->binds, node)
			nr_binds++;
	cx = kzalloc(struct_size(cx, dests, nr_binds), GFP_KERNEL_ACCOUNT);
	if (!cx)
		return -ENOMEM;
	kref_get(&c->tree->ref);
	cx->tree = c->tree;
	if (!timing) {
		err = icfab_circuit_dests(c, dd, cx);
		if (err) {
			icfab_circuit_xfer_put(cx);
			return err;
		}
	}
	*cxp = cx;
	return 0;
}

/*
 * Put a checked circuit WRITE into @e along its tree; as
 * icfab_engine_submit() otherwise, with the engine's negative errno
 * values. The fabric lock is held.
 */
int icfab_circuit_xfer_submit(struct icfab_fabric *fabric,
			      struct icfab_engine *e,
			      struct icfab_circuit_xfer *cx, u32 src,
			      u64 bytes, u64 at, u64 key, u32 *xfer)
{
	struct icfab_circuit_tree *tree = cx->tree;
	int err;

	lockdep_assert_held(&fabric->lock);
	if (WARN_ON_ONCE(!fabric->tree_xfers))
		return -ICFAB_ENGINE_EINVAL;
	if (e->xfers_cap > fabric->tree_xfers_cap) {
		/* The engine's table grew: a full table is back-pressure. */
		struct icfab_circuit_tree **t;

		t = kvcalloc(e->xfers_cap, sizeof(*t), GFP_KERNEL_ACCOUNT);
		if (!t)
			return -ICFAB_ENGINE_ENOSPC;
		memcpy(t, fabric->tree_xfers,
		       fabric->tree_xfers_cap * sizeof(*t));
		kvfree(fabric->tree_xfers);
		fabric->tree_xfers = t;
		fabric->tree_xfers_cap = e->xfers_cap;
	}
	/* Once per tree and engine topology: it was built on this one. */
	if (tree->checked != e->topo) {
		err = icfab_engine_tree_check(e, src, &tree->t);
		if (err)
			return err;
		tree->checked = e->topo;
	}
	err = icfab_engine_submit_tree(e, src, &tree->t, bytes, at, key, xfer);
	if (err)
		return err;
	/* Completions clear their slot before the id can be reused. */
	WARN_ON_ONCE(fabric->tree_xfers[*xfer]);
	icfab_circuit_tree_put(fabric->tree_xfers[*xfer]);
	kref_get(&tree->ref);
	fabric->tree_xfers[*xfer] = tree;
	return 0;
}

/*
 * Events a WRITE of @bytes over @cx needs in the engine, once its tree
 * was checked (icfab_circuit_xfer_submit() does that first).
 */
u64 icfab_circuit_xfer_events(const struct icfab_circuit_xfer *cx, u64 bytes,
			      u32 segment_size)
{
	return icfab_engine_tree_events_needed(bytes, segment_size,
					       &cx->tree->t);
}

/* Every engine completion: a tree transfer no longer needs its tree. */
void icfab_circuit_xfer_done(struct icfab_fabric *fabric, u32 xfer_id)
{
	struct icfab_circuit_tree *tree;

	lockdep_assert_held(&fabric->lock);
	if (!fabric->tree_xfers || xfer_id >= fabric->tree_xfers_cap)
		return;
	tree = fabric->tree_xfers[xfer_id];
	fabric->tree_xfers[xfer_id] = NULL;
	icfab_circuit_tree_put(tree);
}

/* A completed circuit WRITE: its bytes land at every destination. */
void icfab_circuit_xfer_copy(const struct icfab_circuit_xfer *cx,
			     struct icfab_region *src, u64 src_off, u64 len)
{
	u32 i;

	for (i = 0; i < cx->nr_dests; i++)
		icfab_region_copy(cx->dests[i].region, cx->dests[i].offset,
				  src, src_off, len);
}

/* The fabric goes: no engine is left, so no transfer holds a tree. */
void icfab_circuit_data_exit(struct icfab_fabric *fabric)
{
	u32 i;

	for (i = 0; fabric->tree_xfers && i < fabric->tree_xfers_cap; i++)
		icfab_circuit_tree_put(fabric->tree_xfers[i]);
	kvfree(fabric->tree_xfers);
	fabric->tree_xfers = NULL;
	fabric->tree_xfers_cap = 0;
}
