// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Zero copy: collectives on callers' buffers in registered regions.
 *
 * A plan addresses each rank's workspace by offset: the send area, the
 * recv area, scratch. When a local rank's send or recv buffer lies in a
 * region the caller registered, that area is the buffer instead: its
 * transfers read it and write it by the region's handle and key, its
 * local actions work on it, and it is not copied in or out. The rest
 * (scratch) stays in the workspace, at the plan's offsets. Peers must
 * know where a rank's areas are before they write to it: a local
 * communicator knows every rank's; a notify rank publishes its own in
 * the job's shared memory when it resumes, before the operation's first
 * host meeting, and reads the others' after it (comm.c). The fabric
 * carries the same bytes between the same endpoints either way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Can @c have registered regions at all? */
static int reg_usable(const struct fdev_comm *c)
{
	return c->dev && !c->proxy && !fdev_comm_timing_only(c) &&
	       (!c->multi || c->notify);
}

/* Can a collective of @c on @p use callers' buffers in place? */
static int zc_possible(const struct fdev_comm *c, const struct fdev_plan *p)
{
	/*
	 * A notify rank meets the others on the host at its next resume
	 * (idle in its context's owner: a sub-communicator's parent).
	 */
	return reg_usable(c) && !p->mcast_ranks &&
	       (!c->multi || (c->parent ? c->parent : c)->idle_on);
}

int fdev_comm_register(struct fdev_comm *c, struct fdev_region *r)
{
	unsigned int l;
	int err;

	if (!c || !r || !r->handle || !r->addr)
		return -EINVAL;
	if (!reg_usable(c))
		return -EOPNOTSUPP;
	for (l = 0; l < c->nlocal; l++)
		if (c->ep[c->first + l] == r->endpoint)
			break;
	if (l == c->nlocal)
		return -EINVAL;
	for (unsigned int i = 0; i < c->nreg; i++)
		if (c->reg[i].handle == r->handle)
			return -EEXIST;
	if (fdev_array_grow((void **)&c->reg, &c->reg_cap, c->nreg,
			    sizeof(*c->reg), 8))
		return -ENOMEM;
	if (!r->key) {
		err = fdev_region_export(c->dev, r, FDEV_ACCESS_REMOTE_READ |
					 FDEV_ACCESS_REMOTE_WRITE);
		if (err)
			return err;
	}
	c->reg[c->nreg++] = *r;
	return 0;
}

int fdev_comm_deregister(struct fdev_comm *c, const struct fdev_region *r)
{
	if (!c || !r)
		return -EINVAL;
	for (unsigned int i = 0; i < c->nreg; i++)
		if (c->reg[i].handle == r->handle) {
			c->reg[i] = c->reg[--c->nreg];
			return 0;
		}
	return -ENOENT;
}

void fdev_comm_bytes(const struct fdev_comm *c, uint64_t *staged,
		     uint64_t *in_place)
{
	if (staged)
		*staged = c ? c->bytes_staged : 0;
	if (in_place)
		*in_place = c ? c->bytes_in_place : 0;
}

/* The registered region of local rank @l holding [@p, +@len), or NULL. */
static const struct fdev_region *zc_find(const struct fdev_comm *c,
					 unsigned int l, const void *p,
					 uint64_t len)
{
	uintptr_t a = (uintptr_t)p;

	if (!p || !len)
		return NULL;
	for (unsigned int i = 0; i < c->nreg; i++) {
		const struct fdev_region *r = &c->reg[i];
		uintptr_t b = (uintptr_t)r->addr;

		if (r->endpoint == c->ep[c->first + l] && a >= b &&
		    a - b <= r->size && len <= r->size - (a - b))
			return r;
	}
	return NULL;
}

static int overlap(const uint8_t *a, uint64_t alen, const uint8_t *b,
		   uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* c->zc and c->zc_loc, allocated once; c->zc cleared. */
static int zc_arrays(struct fdev_comm *c)
{
	if (!c->zc) {
		c->zc = calloc(c->nranks, sizeof(*c->zc));
		c->zc_loc = calloc(c->nlocal, sizeof(*c->zc_loc));
		if (!c->zc || !c->zc_loc) {
			fdev_zc_free(c);
			return -ENOMEM;
		}
	}
	memset(c->zc, 0, c->nranks * sizeof(*c->zc));
	return 0;
}

int fdev_zc_begin(struct fdev_comm *c, const struct fdev_plan *p,
		  const struct fdev_coll_layout *lo, const void *send,
		  void *recv, const uint64_t *slen, const uint64_t *rlen,
		  int alias)
{
	if (!zc_possible(c, p))
		return 0;
	if (zc_arrays(c))
		return -ENOMEM;
	for (unsigned int l = 0; l < c->nlocal; l++) {
		struct fdev_zc_local *z = &c->zc_loc[l];
		struct fdev_zc_area *a = &c->zc[c->first + l];
		uint8_t *buf[2] = {
			(uint8_t *)send + l * lo->send_len,
			(uint8_t *)recv + l * lo->recv_len,
		};
		uint64_t len[2] = {
			slen ? slen[l] : lo->send_len,
			rlen ? rlen[l] : lo->recv_len,
		};

		memset(z, 0, sizeof(*z));
		z->m.ws = c->ws[l].addr;
		z->m.off[0] = lo->send_off;
		z->m.len[0] = lo->send_len;
		z->m.off[1] = lo->recv_off;
		z->m.len[1] = lo->recv_len;
		for (int i = 0; i < 2; i++) {
			const struct fdev_region *r = zc_find(c, l, buf[i], len[i]);

			if (!r)
				continue;
			/* Another rank's data must not land on what we still send. */
			if (i == 1 && z->m.addr[0] &&
			    overlap(buf[0], len[0], buf[1], len[1]) &&
			    !(alias && buf[0] == buf[1] && len[0] == len[1]))
				continue;
			z->m.addr[i] = buf[i];
			z->handle[i] = r->handle;
			a->key[i] = r->key;
			a->off[i] = (uint64_t)(buf[i] - (uint8_t *)r->addr);
		}
	}
	c->zc_lo = lo;
	return 1;
}

/* Areas of no length: plan offsets are the workspace's (zc_area()). */
static const struct fdev_coll_layout zc_none;

int fdev_zc_slots_begin(struct fdev_comm *c, struct fdev_zc_slots *zs,
			const void *send, uint64_t slen, const void *recv)
{
	const struct fdev_region *r;
	struct fdev_zc_area *a;

	zs->handle = 0;
	zs->recv_room = 0;
	/*
	 * Only where the areas go out at the resume, which every rank of
	 * the communicator sees alike (its first operation has none).
	 */
	if (!reg_usable(c) || c->nlocal != 1 ||
	    !(c->parent ? c->parent : c)->idle_on)
		return 0;
	if (zc_arrays(c))
		return -ENOMEM;
	memset(c->zc_loc, 0, sizeof(*c->zc_loc));
	c->zc_loc[0].m.ws = c->ws[0].addr;
	a = &c->zc[c->first];
	r = zc_find(c, 0, send, slen);
	if (r) {
		zs->handle = r->handle;
		zs->src_off = (uint64_t)((const uint8_t *)send -
					 (const uint8_t *)r->addr);
	}
	/* Its length is known after the step: the region, to its end. */
	r = zc_find(c, 0, recv, 1);
	if (r) {
		a->key[1] = r->key;
		a->off[1] = (uint64_t)((const uint8_t *)recv -
				       (const uint8_t *)r->addr);
		zs->recv_room = r->size - a->off[1];
	}
	c->zc_lo = &zc_none;
	c->zc_slots = zs;
	return 1;
}

void fdev_zc_end(struct fdev_comm *c)
{
	c->zc_lo = NULL;
	c->zc_slots = NULL;
}

void fdev_zc_free(struct fdev_comm *c)
{
	free(c->zc);
	free(c->zc_loc);
	free(c->reg);
	c->zc = NULL;
	c->zc_loc = NULL;
	c->reg = NULL;
	c->nreg = c->reg_cap = 0;
	c->zc_lo = NULL;
}

/* Which area of the running collective holds plan offset @off, or -1. */
static int zc_area(const struct fdev_comm *c, uint64_t off)
{
	const struct fdev_coll_layout *lo = c->zc_lo;

	if (!lo)
		return -1;
	if (off >= lo->send_off && off - lo->send_off < lo->send_len)
		return 0;
	if (off >= lo->recv_off && off - lo->recv_off < lo->recv_len)
		return 1;
	return -1;
}

void fdev_zc_local(const struct fdev_comm *c, unsigned int l, uint64_t off,
		   uint32_t *handle, uint64_t *loff)
{
	const struct fdev_zc_slots *zs = c->zc_slots;
	int i = zc_area(c, off);

	if (zs && zs->handle && off >= zs->base &&
	    (off - zs->base) / zs->stride < zs->n) {
		uint64_t d = (off - zs->base) / zs->stride;
		uint64_t y = (off - zs->base) % zs->stride;

		if (y >= 8 && y - 8 >= zs->first[d]) {
			*handle = zs->handle;
			*loff = zs->src_off + zs->before[d] + (y - 8);
			return;
		}
	}
	if (i >= 0 && c->zc_loc[l].handle[i]) {
		*handle = c->zc_loc[l].handle[i];
		*loff = c->zc[c->first + l].off[i] +
			(off - c->zc_loc[l].m.off[i]);
		return;
	}
	*handle = c->ws[l].handle;
	*loff = off;
}

void fdev_zc_remote(const struct fdev_comm *c, unsigned int r, uint64_t off,
		    uint64_t *key, uint64_t *roff)
{
	int i = zc_area(c, off);

	if (i >= 0 && c->zc[r].key[i]) {
		*key = c->zc[r].key[i];
		*roff = c->zc[r].off[i] +
			(off - (i ? c->zc_lo->recv_off : c->zc_lo->send_off));
		return;
	}
	*key = c->rkey[r];
	*roff = off;
}
