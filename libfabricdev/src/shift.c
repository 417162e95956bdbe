// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Compute-shift (T10, SOSP'24): every rank holds a partition, computes on
 * it, then passes it to a neighbour and takes its other neighbour's, for
 * a number of steps, so that each partition visits the ranks in turn
 * without any global copy. fdev_shift(3).
 *
 * A local communicator's one context drives every rank, so a step is:
 * a DELAY of the compute time, waited for (every rank computes at once:
 * they share the context's clock), then one WRITE per rank from its
 * current partition into the neighbour's other half of the workspace,
 * waited for. With FDEV_SHIFT_OVERLAP, the DELAY and the WRITEs go in one
 * batch: the step ends at the later of the two. The halves swap each
 * step, so nothing is copied locally. The host communicator rotates the
 * partitions in memory and takes no time.
 *
 * With FDEV_SHIFT_TIER(t), the two halves are a region of 2 x bytes in
 * tier t of each rank's endpoint, allocated for the call: each WRITE
 * then reads through the tier's port and writes through its target's
 * (docs/TIMING.md, "Memory tiers"), so a tier shared by the ranks (a
 * chip's HBM) carries every partition twice a step. A timing-only
 * communicator moves bytes then too: only a region can be in a tier.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define FDEV_TAG_SHIFT		0xfdef5f1f00000000ULL
#define SHIFT_TIER_MASK		FDEV_SHIFT_TIER(3)
#define SHIFT_FLAGS		(FDEV_SHIFT_OVERLAP | SHIFT_TIER_MASK)

/* The engine holds at most this many segments of one transfer at once. */
#define SHIFT_PIECE_SEGMENTS	(2ULL << 20)

struct shift_run {
	struct fdev_comm *c;
	uint64_t bytes;			/* per partition */
	unsigned int to;		/* shift, as 0..nranks-1 */
	uint64_t compute_ps;		/* ps */
	unsigned int flags;
	struct fdev_desc *d;
	struct fdev_cqe *cqe;
	unsigned int cap;		/* entries of d and cqe */
	struct fdev_region *tr;		/* [nlocal] FDEV_SHIFT_TIER, or NULL */
};

/* The WRITEs of one step: local rank l's half @cur to its neighbour's other. */
static unsigned int shift_descs(struct shift_run *s, unsigned int cur)
{
	struct fdev_comm *c = s->c;
	uint64_t piece = SHIFT_PIECE_SEGMENTS * (c->seg ? c->seg : 4096);
	unsigned int nd = 0;

	for (unsigned int l = 0; l < c->nlocal; l++) {
		unsigned int dst = (c->first + l + s->to) % c->nranks;

		for (uint64_t off = 0; off < s->bytes; off += piece) {
			uint64_t len = s->bytes - off < piece ?
				       s->bytes - off : piece;
			struct fdev_desc *d = &s->d[nd];

			if (s->tr)
				fdev_prep_write(d, c->queue[l], s->tr[l].handle,
						cur * s->bytes + off,
						s->tr[dst - c->first].key,
						(1 - cur) * s->bytes + off, len,
						FDEV_TAG_SHIFT | nd);
			else if (fdev_comm_timing_only(c)) {
				fdev_prep_timing(d, FDEV_OP_WRITE, c->queue[l],
						 c->ep[dst], len,
						 FDEV_TAG_SHIFT | nd);
				fdev_comm_timing_at(c, d,
						    (1 - cur) * s->bytes + off);
			} else
				fdev_prep_write(d, c->queue[l], c->ws[l].handle,
						cur * s->bytes + off,
						c->rkey[dst],
						(1 - cur) * s->bytes + off, len,
						FDEV_TAG_SHIFT | nd);
			nd++;
		}
	}
	return nd;
}

/* Post @nd descriptors and wait for every one; the first error wins. */
static int shift_post_wait(struct shift_run *s, unsigned int nd)
{
	struct fdev *dev = s->c->dev;
	unsigned int got = 0;
	int ret = fdev_post(dev, s->d, nd);

	if (ret < 0)
		return ret;
	if ((unsigned int)ret != nd)
		return -EIO;
	while (got < nd) {
		ret = fdev_wait(dev, s->cqe, nd - got, nd - got, 0);
		if (ret < 0)
			return ret;
		for (int i = 0; i < ret; i++)
			if (s->cqe[i].status)
				return s->cqe[i].status;
		got += ret;
	}
	return 0;
}

/*
 * One step. BSP (T10's pattern): compute, then shift. Overlapped: the
 * DELAY and the WRITEs in one batch, the step ending at the later.
 */
static int shift_step(struct shift_run *s, unsigned int cur)
{
	unsigned int nd = shift_descs(s, cur);
	int err;

	if (s->compute_ps && !(s->flags & FDEV_SHIFT_OVERLAP)) {
		err = fdev_compute(s->c->dev, s->c->queue[0], s->compute_ps);
		if (err)
			return err;
	} else if (s->compute_ps) {
		fdev_prep_delay(&s->d[nd], s->c->queue[0], s->compute_ps,
				FDEV_TAG_SHIFT | nd);
		nd++;
	}
	return shift_post_wait(s, nd);
}

/* In host memory: no fabric, no time; what rank r holds after @steps. */
static int shift_host(struct fdev_comm *c, uint8_t *buf, uint64_t bytes,
		      unsigned int to, unsigned int steps)
{
	uint64_t n = c->nranks, k = ((uint64_t)to * steps) % n;
	uint8_t *tmp = malloc(n * bytes);

	if (!tmp)
		return -ENOMEM;
	for (uint64_t r = 0; r < n; r++)
		memcpy(tmp + (r + k) % n * bytes, buf + r * bytes, bytes);
	memcpy(buf, tmp, n * bytes);
	free(tmp);
	return 0;
}

static int shift_check(struct fdev_comm *c, const void *buf, uint64_t bytes,
		       unsigned int flags)
{
	int tier = (flags & SHIFT_TIER_MASK) != 0;

	if (!c || flags & ~SHIFT_FLAGS)
		return -EINVAL;
	if (!fdev_comm_timing_only(c) && !buf && bytes)
		return -EFAULT;
	/* Every rank in this process: a step needs no one else. */
	if (c->multi || c->proxy || c->nlocal != c->nranks)
		return -EOPNOTSUPP;
	for (unsigned int r = 0; r < c->nranks; r++)
		if (fdev_rank_failed(c, r))
			return -EOPNOTSUPP;
	if (!tier && !fdev_comm_timing_only(c) && 2 * bytes > c->ws_bytes)
		return -EMSGSIZE;
	return 0;
}

/* Each rank's two halves in the tier, writable by its neighbours. */
static int shift_tier_alloc(struct shift_run *s, uint32_t tier)
{
	struct fdev_comm *c = s->c;
	int err = 0;

	s->tr = calloc(c->nlocal, sizeof(*s->tr));
	if (!s->tr)
		return -ENOMEM;
	for (unsigned int l = 0; l < c->nlocal && !err; l++) {
		err = fdev_region_alloc_tier(c->dev, c->ep[c->first + l], tier,
					     2 * s->bytes, &s->tr[l]);
		if (!err)
			err = fdev_region_export(c->dev, &s->tr[l],
						 FDEV_ACCESS_REMOTE_WRITE);
	}
	return err;
}

static void shift_tier_free(struct shift_run *s)
{
	for (unsigned int l = 0; s->tr && l < s->c->nlocal; l++)
		if (s->tr[l].handle)
			fdev_region_free(s->c->dev, &s->tr[l]);
	free(s->tr);
}

/* Where local rank @l's half at @off is: its tier region, or workspace. */
static uint8_t *shift_addr(struct shift_run *s, unsigned int l, uint64_t off)
{
	if (s->tr)
		return (uint8_t *)s->tr[l].addr + off;
	return fdev_ws_addr(s->c, l, off);
}

static int shift_run(struct shift_run *s, uint8_t *buf, unsigned int steps)
{
	struct fdev_comm *c = s->c;
	int data = buf != NULL, err = 0;
	uint64_t t0 = fdev_clock(c->dev);
	unsigned int cur = 0;

	if (!s->tr && fdev_comm_timing_only(c))
		data = 0;
	if (data)
		for (unsigned int l = 0; l < c->nlocal; l++)
			memcpy(shift_addr(s, l, 0), buf + l * s->bytes,
			       s->bytes);
	for (unsigned int i = 0; i < steps && !err; i++, cur = 1 - cur)
		err = shift_step(s, cur);
	if (!err && data)
		for (unsigned int l = 0; l < c->nlocal; l++)
			memcpy(buf + l * s->bytes,
			       shift_addr(s, l, cur * s->bytes), s->bytes);
	c->last_ps = fdev_clock(c->dev) - t0;
	fdev_op_span(c, t0, t0 + c->last_ps);
	return err;
}

int fdev_shift(struct fdev_comm *c, void *buf, size_t bytes, int shift,
	       unsigned int steps, uint64_t compute_ps, unsigned int flags)
{
	struct shift_run s = {
		.c = c, .bytes = bytes, .compute_ps = compute_ps,
		.flags = flags,
	};
	uint64_t piece;
	int err = shift_check(c, buf, bytes, flags);

	if (err)
		return err;
	s.to = (unsigned int)(((int64_t)shift % (int64_t)c->nranks +
			       c->nranks) % c->nranks);
	if (!c->dev)
		return shift_host(c, buf, bytes, s.to, steps);
	if (!bytes || !steps)
		return 0;
	piece = SHIFT_PIECE_SEGMENTS * (c->seg ? c->seg : 4096);
	s.cap = c->nlocal * ((bytes + piece - 1) / piece) + 1;
	s.d = calloc(s.cap, sizeof(*s.d));
	s.cqe = calloc(s.cap, sizeof(*s.cqe));
	err = s.d && s.cqe ? 0 : -ENOMEM;
	if (!err && flags & SHIFT_TIER_MASK)
		err = shift_tier_alloc(&s, (flags & SHIFT_TIER_MASK) >> 8);
	if (!err) {
		fdev_op_begin(c, "shift");
		err = fdev_op_end(c, shift_run(&s, buf, steps));
	}
	shift_tier_free(&s);
	free(s.d);
	free(s.cqe);
	return err;
}
