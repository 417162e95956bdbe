// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: a context's completion ring (ICFAB_F_CQ_RING), shared with
 * userspace like a hardware CQ. The kernel produces (tail), userspace
 * consumes (head); the kernel trusts nothing in the shared page but
 * head, and even that only as far as "how full is it". Who posts what,
 * and when, is data.c's; this is the ring itself and its mapping.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "icfab.h"

/* Where the entries start: the header, rounded up to a cache line. */
static size_t icfab_cq_cqes_off(void)
{
	return ALIGN(sizeof(struct icfab_cq_ring), SMP_CACHE_BYTES);
}

struct icfab_cq *icfab_cq_create(u32 *entries)
{
	struct icfab_cq *cq;
	u32 n = *entries;

	if (!n || n > ICFAB_CQ_MAX_ENTRIES)
		return ERR_PTR(-EINVAL);
	n = roundup_pow_of_two(n);
	cq = kzalloc(sizeof(*cq), GFP_KERNEL_ACCOUNT);
	if (!cq)
		return ERR_PTR(-ENOMEM);
	cq->size = PAGE_ALIGN(icfab_cq_cqes_off() +
			      (size_t)n * sizeof(struct icfab_cqe));
	/* Zeroed, and fit for remap_vmalloc_range(). */
	cq->ring = vmalloc_user(cq->size);
	if (!cq->ring) {
		kfree(cq);
		return ERR_PTR(-ENOMEM);
	}
	cq->cqes = (void *)cq->ring + icfab_cq_cqes_off();
	cq->mask = n - 1;
	cq->ring->entries = n;
	cq->ring->mask = n - 1;
	*entries = n;
	return cq;
}

void icfab_cq_destroy(struct icfab_cq *cq)
{
	if (!cq)
		return;
	vfree(cq->ring);
	kfree(cq);
}

void icfab_cq_layout(const struct icfab_cq *cq, struct icfab_cq_setup *s)
{
	s->mmap_offset = ICFAB_CQ_MMAP_OFFSET;
	s->mmap_size = cq->size;
	s->cqes_off = icfab_cq_cqes_off();
}

/* A mapping holds the file, so the context and its ring; see nr_vmas. */
static void icfab_cq_vm_open(struct vm_area_struct *vma)
{
	struct icfab_ctx *ctx = vma->vm_file->private_data;

	atomic_inc(&ctx->nr_vmas);
}

static void icfab_cq_vm_close(struct vm_area_struct *vma)
{
	struct icfab_ctx *ctx = vma->vm_file->private_data;

	atomic_dec(&ctx->nr_vmas);
}

static const struct vm_operations_struct icfab_cq_vm_ops = {
	.open	= icfab_cq_vm_open,
	.close	= icfab_cq_vm_close,
};

/*
 * mmap() at ICFAB_CQ_MMAP_OFFSET: this context's ring, MAP_SHARED, from
 * its start and no further than its end. The ring lives until the
 * context does, which the mapping's file reference outlasts.
 */
int icfab_cq_mmap(struct icfab_cq *cq, struct icfab_ctx *ctx,
		  struct vm_area_struct *vma)
{
	int err;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (!cq || vma->vm_pgoff ||
	    vma->vm_end - vma->vm_start > cq->size)
		return -ENXIO;
	/* Also VM_DONTEXPAND | VM_DONTDUMP. */
	err = remap_vmalloc_range(vma, cq->ring, 0);
	if (err)
		return err;
	vma->vm_ops = &icfab_cq_vm_ops;
	atomic_inc(&ctx->nr_vmas);
	return 0;
}
