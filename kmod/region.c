// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: device memory. A region is zeroed pages on an endpoint, charged
 * to the endpoint's capacity (the topology's mem_bytes, when it has one)
 * and to the module's cap on real pages. Its owner reaches it by a handle
 * (private to the context) and mmap(); others by an exported key.
 *
 * Lifetime: a region is reference counted. The context's handle holds one
 * reference, every mapping (VMA) one, every transfer in flight one per
 * side. Freeing the handle takes the handle and the key away at once;
 * the pages, and their charge, go with the last reference.
 *
 * Locking: the handle table is the context's xarray (its own lock, so
 * that mmap(), which runs under mmap_lock, never needs fabric->lock;
 * the data path takes mmap_lock under fabric->lock when it copies to
 * user memory). The key table is changed under fabric->lock, and read
 * under it or under RCU: the WRITE path (data.c) looks a memory WRITE's
 * or READ's regions up under its context's own lock alone
 * (icfab_region_take()), so a region is freed a grace period after
 * its last reference goes, and its key and access bits, which export and
 * unexport change, are read there with READ_ONCE(). Charges are atomic,
 * so the last put may run anywhere (a VMA close, a completion).
 */
#include <linux/hashtable.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "icfab.h"

static unsigned int max_mem_mb = 256;
module_param(max_mem_mb, uint, 0644);
MODULE_PARM_DESC(max_mem_mb,
		 "device memory of all regions together, in MiB of real pages");

/* Pages of all regions of all fabrics. */
static atomic_long_t icfab_pages_used = ATOMIC_LONG_INIT(0);

#define ICFAB_KEY_HASH_BITS	8

struct icfab_mem {
	/* Changed under fabric->lock; read under it, or RCU. */
	DECLARE_HASHTABLE(keys, ICFAB_KEY_HASH_BITS);
	atomic64_t *used;		/* bytes, per node id */
	/*
	 * Bytes per memory tier, by its home node and kind: index
	 * home * ICFAB_TIER_KINDS + kind - 1 (a home has one of a kind).
	 */
	atomic64_t *tier_used;
};

struct icfab_region {
	struct kref ref;
	struct icfab_fabric *fabric;
	u32 endpoint;			/* node id */
	/* Both written under fabric->lock, read by RCU readers too. */
	u32 access;			/* ICFAB_ACCESS_* */
	u64 key;			/* 0: not exported */
	struct hlist_node key_node;	/* in mem->keys while exported */
	struct rcu_head rcu;		/* freed after RCU readers */
	u64 size;			/* bytes, whole pages */
	/*
	 * A region in a memory tier: the tier port's link id and the index
	 * of its charge in mem->tier_used; ICFAB_MODEL_NO_LINK for plain
	 * memory, charged to mem->used[endpoint].
	 */
	u32 tier_link;
	u32 tier_slot;
	unsigned long nr_pages;
	struct page **pages;
	u32 uid;			/* charged for its pages */
};

int icfab_region_init(struct icfab_fabric *fabric)
{
	struct icfab_mem *mem;

	mem = kzalloc(sizeof(*mem), GFP_KERNEL);
	if (!mem)
		return -ENOMEM;
	mem->used = kvcalloc(ICFAB_MAX_NODES, sizeof(*mem->used), GFP_KERNEL);
	mem->tier_used = kvcalloc(ICFAB_MAX_NODES * ICFAB_TIER_KINDS,
				  sizeof(*mem->tier_used), GFP_KERNEL);
	if (!mem->used || !mem->tier_used) {
		kvfree(mem->used);
		kvfree(mem->tier_used);
		kfree(mem);
		return -ENOMEM;
	}
	hash_init(mem->keys);
	fabric->mem = mem;
	return 0;
}

/* Every file is closed and every mapping gone: no region is left. */
void icfab_region_exit(struct icfab_fabric *fabric)
{
	struct icfab_mem *mem = fabric->mem;

	if (!mem)
		return;
	kvfree(mem->used);
	kvfree(mem->tier_used);
	kfree(mem);
	fabric->mem = NULL;
}

u32 icfab_region_endpoint(const struct icfab_region *r)
{
	return r->endpoint;
}

u32 icfab_region_tier_link(const struct icfab_region *r)
{
	return r->tier_link;
}

u64 icfab_region_size(const struct icfab_region *r)
{
	return r->size;
}

u32 icfab_region_access(const struct icfab_region *r)
{
	return r->access;
}

static void icfab_region_free_pages(struct page **pages, unsigned long n)
{
	while (n--)
		__free_page(pages[n]);
	kvfree(pages);
}

/* What a region is charged to: its tier's bytes, or its endpoint's. */
static atomic64_t *icfab_region_counter(struct icfab_mem *mem, u32 endpoint,
					u32 tier_link, u32 tier_slot)
{
	return tier_link == ICFAB_MODEL_NO_LINK ? &mem->used[endpoint] :
						  &mem->tier_used[tier_slot];
}

static void icfab_region_release(struct kref *ref)
{
	struct icfab_region *r = container_of(ref, struct icfab_region, ref);

	icfab_region_free_pages(r->pages, r->nr_pages);
	atomic64_sub(r->size, icfab_region_counter(r->fabric->mem,
						   r->endpoint, r->tier_link,
						   r->tier_slot));
	atomic_long_sub(r->nr_pages, &icfab_pages_used);
	icfab_quota_uncharge(r->uid, ICFAB_QUOTA_PAGES, r->size >> PAGE_SHIFT);
	/*
	 * An RCU reader may still be looking at it (icfab_region_take()),
	 * its fields but not its pages: it fails to get a reference.
	 */
	kfree_rcu(r, rcu);
}

void icfab_region_put(struct icfab_region *r)
{
	if (r)
		kref_put(&r->ref, icfab_region_release);
}

/* A reference to the region behind @handle in @regions, or NULL. */
struct icfab_region *icfab_region_get_local(struct xarray *regions,
					    u32 handle)
{
	struct icfab_region *r;

	xa_lock(regions);
	r = xa_load(regions, handle);
	if (r)
		kref_get(&r->ref);
	xa_unlock(regions);
	return r;
}

static struct icfab_region *__icfab_region_find_key(struct icfab_fabric *fabric,
						    u64 key)
{
	struct icfab_region *r;

	lockdep_assert_held(&fabric->lock);
	if (!key)
		return NULL;
	hash_for_each_possible(fabric->mem->keys, r, key_node, key)
		if (r->key == key)
			return r;
	return NULL;
}

/* A reference to the live region exported with @key, or NULL. */
struct icfab_region *icfab_region_get_key(struct icfab_fabric *fabric,
					  u64 key)
{
	struct icfab_region *r = __icfab_region_find_key(fabric, key);

	if (r)
		kref_get(&r->ref);
	return r;
}

/*
 * A memory WRITE's or READ's regions for the WRITE path (data.c), under
 * its context's own lock and not the fabric's: true, with a reference to
 * each in *@local and *@remote and the remote region's endpoint in
 * *@rep, when icfab_desc_check_memory() would pass @dd from a queue on
 * @endpoint, the remote region's access having @need
 * (ICFAB_ACCESS_REMOTE_WRITE or _READ), and both regions are plain
 * memory (a tier port may go with a live commit, which only the fabric
 * lock's path checks). False for anything else, which the fabric lock's
 * path then refuses or takes as ever: with the references it got left
 * in *@local and *@remote, for the caller to put once its spinlock is
 * let go (a last put frees pages).
 *
 * Looked up under RCU, the key as well as the handle: a region found is
 * not freed meanwhile (icfab_region_release()), and its size, endpoint
 * and tier never change; its key and access bits are read once each.
 * A reference is taken only after every check passed, and only if the
 * region is not on its way out: a transfer accepted here came before a
 * REGION_FREE (or a close) that is not finished yet, as it would had it
 * taken the fabric lock first, and the references keep both regions'
 * pages until its copy, as the fabric lock's path's do.
 */
static __always_inline bool icfab_region_take(struct icfab_ctx *ctx,
					      const struct icfab_desc *dd,
					      u32 endpoint, u32 need,
					      struct icfab_region **local,
					      struct icfab_region **remote,
					      u32 *rep)
{
	struct icfab_region *l, *r;
	bool ok = false;
	u64 end;

	if (!dd->rkey)
		return false;
	rcu_read_lock();
	l = xa_load(&ctx->regions, dd->region);
	if (!l || l->endpoint != endpoint ||
	    l->tier_link != ICFAB_MODEL_NO_LINK)
		goto out;
	hash_for_each_possible_rcu(ctx->fabric->mem->keys, r, key_node,
				   dd->rkey)
		if (READ_ONCE(r->key) == dd->rkey)
			break;
	if (!r || !(READ_ONCE(r->access) & need) ||
	    (dd->peer && dd->peer != r->endpoint) ||
	    r->tier_link != ICFAB_MODEL_NO_LINK ||
	    check_add_overflow(dd->local_off, dd->len, &end) ||
	    end > l->size ||
	    check_add_overflow(dd->remote_off, dd->len, &end) ||
	    end > r->size)
		goto out;
	if (!kref_get_unless_zero(&l->ref))
		goto out;
	*local = l;
	if (!kref_get_unless_zero(&r->ref))
		goto out;
	*remote = r;
	*rep = r->endpoint;
	ok = true;
out:
	rcu_read_unlock();
	return ok;
}

/* icfab_region_take() for a WRITE: @dst, the remote region's endpoint. */
bool icfab_region_write_take(struct icfab_ctx *ctx,
			     const struct icfab_desc *dd, u32 endpoint,
			     struct icfab_region **local,
			     struct icfab_region **remote, u32 *dst)
{
	return icfab_region_take(ctx, dd, endpoint, ICFAB_ACCESS_REMOTE_WRITE,
				 local, remote, dst);
}

/* icfab_region_take() for a READ: @src, the remote region's endpoint. */
bool icfab_region_read_take(struct icfab_ctx *ctx,
			    const struct icfab_desc *dd, u32 endpoint,
			    struct icfab_region **local,
			    struct icfab_region **remote, u32 *src)
{
	return icfab_region_take(ctx, dd, endpoint, ICFAB_ACCESS_REMOTE_READ,
				 local, remote, src);
}

/* Take the key away; the fabric lock is held. */
static void __icfab_region_unexport(struct icfab_fabric *fabric,
				    struct icfab_region *r)
{
	lockdep_assert_held(&fabric->lock);
	if (r->key) {
		hash_del_rcu(&r->key_node);
		WRITE_ONCE(r->key, 0);
	}
}

/*
 * Charge @size bytes to @used, an endpoint's or a tier's, whose capacity
 * is @cap bytes (0: the topology gives none), and its pages to the
 * module's cap.
 */
static int icfab_region_charge(atomic64_t *used, u64 cap, u64 size)
{
	unsigned long pages = size >> PAGE_SHIFT;
	unsigned long max_pages;

	max_pages = (unsigned long)READ_ONCE(max_mem_mb) << (20 - PAGE_SHIFT);
	if (atomic_long_add_return(pages, &icfab_pages_used) > max_pages) {
		atomic_long_sub(pages, &icfab_pages_used);
		return -ENOSPC;
	}
	if (atomic64_add_return(size, used) > cap && cap) {
		atomic64_sub(size, used);
		atomic_long_sub(pages, &icfab_pages_used);
		return -ENOSPC;
	}
	return 0;
}

static const char *icfab_tier_name(u32 tier)
{
	static const char *const names[] = {
		[ICFAB_TIER_NONE] = "plain", [ICFAB_TIER_SRAM] = "sram",
		[ICFAB_TIER_HBM] = "hbm", [ICFAB_TIER_DDR] = "ddr",
	};

	return tier < ARRAY_SIZE(names) ? names[tier] : "?";
}

/*
 * Where a region of @endpoint in @tier goes, with the lock held: the
 * tier port serving it, its charge slot and its capacity; plain memory
 * (@tier 0) is ICFAB_MODEL_NO_LINK and the endpoint's capacity. -ENXIO
 * when no tier of that kind serves the endpoint.
 */
static int icfab_region_where(struct icfab_fabric *fabric, u32 endpoint,
			      u32 tier, u32 *link, u32 *slot, u64 *cap)
{
	const struct icfab_mtopo *m = &fabric->active->m;
	const struct icfab_mlink *l;
	u32 ref;

	*link = ICFAB_MODEL_NO_LINK;
	*slot = 0;
	if (!tier) {
		*cap = m->nodes[endpoint].mem_bytes;
		return 0;
	}
	ref = m->nodes[endpoint].tier_link[tier - 1];
	if (!ref)
		return -ENXIO;
	/* Validated at commit: a present tier port of this kind. */
	l = &m->links[ref - 1];
	*link = ref - 1;
	*slot = l->src * ICFAB_TIER_KINDS + tier - 1;
	*cap = l->tier_bytes;
	return 0;
}

long icfab_ioctl_region_alloc(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct xarray *regions = &ctx->regions;
	struct icfab_region_alloc ra;
	u32 tier_link, tier_slot, handle;
	struct icfab_region *r;
	atomic64_t *used;
	unsigned long i;
	u64 size, cap;
	long ret;

	if (copy_from_user(&ra, uarg, sizeof(ra)))
		return -EFAULT;
	if (ra.flags || ra.region || ra.tier > ICFAB_TIER_MAX ||
	    ra.mmap_offset ||
	    !icfab_reserved_zero(ra.reserved, ARRAY_SIZE(ra.reserved)) ||
	    !ra.size)
		return -EINVAL;
	/* More than the module could ever hold is no space, not a typo. */
	if (ra.size > ((u64)READ_ONCE(max_mem_mb) << 20))
		return -ENOSPC;
	size = PAGE_ALIGN(ra.size);

	mutex_lock(&fabric->lock);
	if (!icfab_ctx_attached_to(ctx, ra.endpoint)) {
		mutex_unlock(&fabric->lock);
		return -ENOENT;
	}
	/*
	 * Nodes cannot change while this context is attached; a tier port
	 * may (a live commit), and a transfer through one that is gone
	 * fails at submission.
	 */
	ret = icfab_region_where(fabric, ra.endpoint, ra.tier, &tier_link,
				 &tier_slot, &cap);
	mutex_unlock(&fabric->lock);
	if (ret)
		return ret;

	/* The uid's cap first: past it is its own doing, not the device's. */
	ret = icfab_quota_charge(ctx->uid, ICFAB_QUOTA_PAGES, size >> PAGE_SHIFT,
				 ctx->quota_exempt);
	if (ret)
		return ret;
	used = icfab_region_counter(fabric->mem, ra.endpoint, tier_link,
				    tier_slot);
	ret = icfab_region_charge(used, cap, size);
	if (ret) {
		if (tier_link != ICFAB_MODEL_NO_LINK)
			pr_info_ratelimited("icfab%u: a region of %llu bytes does not fit in the %s tier of endpoint %u (%llu bytes)\n",
				 fabric->id, size, icfab_tier_name(ra.tier),
				 ra.endpoint, cap);
		goto err_uncharge_uid;
	}

	ret = -ENOMEM;
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		goto err_uncharge;
	kref_init(&r->ref);
	r->fabric = fabric;
	r->uid = ctx->uid;
	r->endpoint = ra.endpoint;
	r->size = size;
	r->tier_link = tier_link;
	r->tier_slot = tier_slot;
	r->pages = kvcalloc(size >> PAGE_SHIFT, sizeof(*r->pages),
			    GFP_KERNEL_ACCOUNT);
	if (!r->pages)
		goto err_free_region;
	for (i = 0; i < size >> PAGE_SHIFT; i++) {
		r->pages[i] = alloc_page(GFP_HIGHUSER | __GFP_ZERO |
					 __GFP_ACCOUNT);
		if (!r->pages[i])
			goto err_free_pages;
		if (fatal_signal_pending(current)) {
			__free_page(r->pages[i]);
			ret = -EINTR;
			goto err_free_pages;
		}
		cond_resched();
	}
	r->nr_pages = i;

	/* Reserve the handle, tell the caller, then publish it. */
	ret = xa_alloc(regions, &handle, NULL, XA_LIMIT(1, ICFAB_MAX_REGIONS),
		       GFP_KERNEL);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_free_pages;
	}
	ra.size = size;
	ra.region = handle;
	ra.mmap_offset = (u64)handle << ICFAB_REGION_MMAP_SHIFT;
	if (copy_to_user(uarg, &ra, sizeof(ra))) {
		ret = -EFAULT;
		goto err_release_handle;
	}
	xa_store(regions, handle, r, GFP_KERNEL);
	return 0;

err_release_handle:
	xa_release(regions, handle);
err_free_pages:
	icfab_region_free_pages(r->pages, i);
err_free_region:
	kfree(r);
err_uncharge:
	atomic64_sub(size, used);
	atomic_long_sub(size >> PAGE_SHIFT, &icfab_pages_used);
err_uncharge_uid:
	icfab_quota_uncharge(ctx->uid, ICFAB_QUOTA_PAGES, size >> PAGE_SHIFT);
	return ret;
}

long icfab_ioctl_region_free(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_region_free rf;
	struct icfab_region *r;

	if (copy_from_user(&rf, uarg, sizeof(rf)))
		return -EFAULT;
	if (rf.flags || rf.reserved)
		return -EINVAL;
	if (!rf.region || rf.region > ICFAB_MAX_REGIONS)
		return -ENOENT;

	mutex_lock(&fabric->lock);
	r = xa_erase(&ctx->regions, rf.region);
	if (r)
		__icfab_region_unexport(fabric, r);
	mutex_unlock(&fabric->lock);
	if (!r)
		return -ENOENT;
	icfab_region_put(r);
	return 0;
}

long icfab_ioctl_region_export(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_region_export re;
	struct icfab_region *r;
	long ret = 0;

	if (copy_from_user(&re, uarg, sizeof(re)))
		return -EFAULT;
	if (re.key || !icfab_reserved_zero(re.reserved, ARRAY_SIZE(re.reserved)) ||
	    !re.access || re.access & ~ICFAB_ACCESS_ALL)
		return -EINVAL;
	if (!re.region || re.region > ICFAB_MAX_REGIONS)
		return -ENOENT;

	mutex_lock(&fabric->lock);
	r = xa_load(&ctx->regions, re.region);
	if (!r) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (!r->key) {
		u64 key;

		do {
			key = get_random_u64();
		} while (!key || __icfab_region_find_key(fabric, key));
		/* Its access bits before RCU readers can find it. */
		WRITE_ONCE(r->access, re.access);
		WRITE_ONCE(r->key, key);
		hash_add_rcu(fabric->mem->keys, &r->key_node, key);
	}
	WRITE_ONCE(r->access, re.access);
	re.key = r->key;
	if (copy_to_user(uarg, &re, sizeof(re)))
		ret = -EFAULT;
out_unlock:
	mutex_unlock(&fabric->lock);
	return ret;
}

long icfab_ioctl_region_import(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_region_import ri;
	struct icfab_region *r;

	if (copy_from_user(&ri, uarg, sizeof(ri)))
		return -EFAULT;
	if (ri.flags || ri.endpoint || ri.size || ri.access || ri.reserved0 ||
	    !icfab_reserved_zero(ri.reserved, ARRAY_SIZE(ri.reserved)))
		return -EINVAL;

	mutex_lock(&fabric->lock);
	r = __icfab_region_find_key(fabric, ri.key);
	if (r) {
		ri.endpoint = r->endpoint;
		ri.size = r->size;
		ri.access = r->access;
	}
	mutex_unlock(&fabric->lock);
	if (!r)
		return -ENOKEY;
	if (copy_to_user(uarg, &ri, sizeof(ri)))
		return -EFAULT;
	return 0;
}

void icfab_regions_ctx_init(struct xarray *regions)
{
	xa_init_flags(regions, XA_FLAGS_ALLOC1);
}

/* The context is going away: its handles and keys go now. */
void icfab_regions_ctx_destroy(struct icfab_fabric *fabric,
			       struct xarray *regions)
{
	struct icfab_region *r;
	unsigned long handle;

	mutex_lock(&fabric->lock);
	xa_for_each(regions, handle, r)
		__icfab_region_unexport(fabric, r);
	mutex_unlock(&fabric->lock);

	xa_for_each(regions, handle, r) {
		xa_erase(regions, handle);
		icfab_region_put(r);
	}
	xa_destroy(regions);
}

/*
 * Copy @len bytes between regions, page by page; both ranges were checked
 * at submission. Overlapping ranges of one region copy as memmove() does.
 */
void icfab_region_copy(struct icfab_region *dst, u64 dst_off,
		       struct icfab_region *src, u64 src_off, u64 len)
{
	bool backward = dst == src && dst_off > src_off &&
			dst_off < src_off + len;
	unsigned int chunks = 0;

	while (len) {
		u64 s = backward ? src_off + len - 1 : src_off;
		u64 d = backward ? dst_off + len - 1 : dst_off;
		size_t so, dof, n;
		void *sp, *dp;

		if (backward) {
			n = min_t(u64, len, min(offset_in_page(s),
						offset_in_page(d)) + 1);
			s -= n - 1;
			d -= n - 1;
		} else {
			n = min_t(u64, len, PAGE_SIZE - max(offset_in_page(s),
							    offset_in_page(d)));
		}
		so = offset_in_page(s);
		dof = offset_in_page(d);
		sp = kmap_local_page(src->pages[s >> PAGE_SHIFT]);
		dp = kmap_local_page(dst->pages[d >> PAGE_SHIFT]);
		if (dst == src)
			memmove(dp + dof, sp + so, n);
		else
			memcpy(dp + dof, sp + so, n);
		kunmap_local(dp);
		kunmap_local(sp);
		if (!backward) {
			src_off += n;
			dst_off += n;
		}
		len -= n;
		if (!(++chunks % 256))
			cond_resched();
	}
}

/* A mapping holds its region, and the file (so the context) holds it. */
static void icfab_region_vm_open(struct vm_area_struct *vma)
{
	struct icfab_ctx *ctx = vma->vm_file->private_data;
	struct icfab_region *r = vma->vm_private_data;

	kref_get(&r->ref);
	atomic_inc(&ctx->nr_vmas);
}

static void icfab_region_vm_close(struct vm_area_struct *vma)
{
	struct icfab_ctx *ctx = vma->vm_file->private_data;

	atomic_dec(&ctx->nr_vmas);
	icfab_region_put(vma->vm_private_data);
}

static vm_fault_t icfab_region_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct icfab_region *r = vma->vm_private_data;
	unsigned long first = vma->vm_pgoff &
			((1UL << (ICFAB_REGION_MMAP_SHIFT - PAGE_SHIFT)) - 1);
	unsigned long i = first + vmf->pgoff - vma->vm_pgoff;

	if (vmf->pgoff < vma->vm_pgoff || i >= r->nr_pages)
		return VM_FAULT_SIGBUS;
	vmf->page = r->pages[i];
	get_page(vmf->page);
	return 0;
}

static const struct vm_operations_struct icfab_region_vm_ops = {
	.open	= icfab_region_vm_open,
	.close	= icfab_region_vm_close,
	.fault	= icfab_region_vm_fault,
};

/*
 * mmap() of a region: MAP_SHARED, at an offset inside it (its
 * mmap_offset plus whole pages), no further than its end. The mapping
 * holds the region, so it outlives REGION_FREE and close().
 */
int icfab_region_mmap(struct icfab_ctx *ctx, struct vm_area_struct *vma)
{
	unsigned long shift = ICFAB_REGION_MMAP_SHIFT - PAGE_SHIFT;
	unsigned long handle = vma->vm_pgoff >> shift;
	unsigned long first = vma->vm_pgoff & ((1UL << shift) - 1);
	unsigned long n = vma_pages(vma);
	struct icfab_region *r;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (!handle || handle > ICFAB_MAX_REGIONS)
		return -ENXIO;
	r = icfab_region_get_local(&ctx->regions, handle);
	if (!r)
		return -ENXIO;
	if (first >= r->nr_pages || n > r->nr_pages - first) {
		icfab_region_put(r);
		return -ENXIO;
	}
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	vma->vm_private_data = r;
	vma->vm_ops = &icfab_region_vm_ops;
	atomic_inc(&ctx->nr_vmas);
	return 0;
}
