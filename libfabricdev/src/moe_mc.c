// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * MoE multicast mode: the source packs, in token order, the records of
 * its tokens that some other rank owns an expert of (mc_tokens[s] of
 * them) into its own slab, and writes the slab once over its circuit; it
 * lands in the same slab of every other rank (the circuit binds each
 * workspace at 0). A receiver keeps, in slab order, the records routed to
 * it: exactly throughput's block from that source, so the rows, their
 * order and combine are throughput's. Its own tokens never leave it.
 *
 * The count exchange carries throughput's row of tokens per destination
 * and mc_tokens. Workspace: slab s at mc_slab_off(s), in source order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "moe.h"

static uint64_t mc_slab_off(const struct fdev_moe_handle *h, unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = 0; q < s; q++)
		o += h->mc_tokens[q];
	return o * h->rec_size;
}

/* Some other rank than @s owns one of the token's experts. */
static int token_leaves(const struct fdev_moe_handle *h, const int64_t *idx,
			unsigned int s)
{
	for (unsigned int j = 0; j < h->cfg.k; j++)
		if (idx[j] >= 0 && moe_expert_rank(h, idx[j]) != s)
			return 1;
	return 0;
}

static int mc_route(struct fdev_moe_handle *h, unsigned int l)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int s = h->first + l;
	int err = moe_route_by_rank(h, mr);

	for (uint64_t t = 0; !err && t < mr->tokens; t++)
		h->mc_tokens[s] += token_leaves(h, mr->topk_idx + t * h->cfg.k, s);
	return err;
}

static int mc_reuse_counts(struct fdev_moe_handle *h,
			   const struct fdev_moe_handle *reuse)
{
	unsigned int n = h->nranks;

	for (unsigned int l = 0; l < h->nlocal; l++) {
		unsigned int s = h->first + l;

		if (memcmp(h->ranks[l].send_cnt, reuse->pair_tokens + (size_t)s * n,
			   n * 8ULL) || h->mc_tokens[s] != reuse->mc_tokens[s])
			return -EINVAL;	/* routing differs */
	}
	memcpy(h->pair_tokens, reuse->pair_tokens, (size_t)n * n * 8);
	memcpy(h->mc_tokens, reuse->mc_tokens, n * 8ULL);
	return 0;
}

/*
 * Independent processes, one rank each (moe_host_counts()): the count
 * matrix in one table of the job's (as hier's, moe_hier.c), each rank
 * writing its own row and, after the exchange, reading every rank's in
 * place; the exchange goes over the fabric as before. mc_tokens, n
 * words, after the matrix, copied out. 0: done; 1: no table.
 */
static int mc_job_counts(struct fdev_comm *c, struct fdev_moe_handle *h,
			 const uint64_t *row, uint64_t *t_ps)
{
	unsigned int n = h->nranks;
	size_t words = (size_t)n * n + n;
	uint64_t *t;
	int err;

	if (getenv("FDEV_MOE_OWN_COUNTS") || h->nlocal != 1 ||
	    !moe_host_counts(c, h))
		return 1;
	t = fdev_job_table(c, words * 8);
	if (!t)
		return 1;
	free(h->pair_tokens);
	h->job_counts = t;
	h->job_counts_len = words * 8;
	h->pair_tokens = t;
	memcpy(t + (size_t)h->first * n, row, n * 8ULL);
	t[(size_t)n * n + h->first] = row[n];
	err = moe_gather_counts(c, h, row, n + 1, NULL, t_ps);
	if (err)
		return err;
	for (unsigned int s = 0; s < n; s++) {
		if (fdev_rank_failed(c, s)) {	/* zeros, as gathered */
			memset(t + (size_t)s * n, 0, n * 8ULL);
			t[(size_t)n * n + s] = 0;
		}
		h->mc_tokens[s] = t[(size_t)n * n + s];
	}
	return 0;
}

/* The count matrix and mc_tokens: from @reuse, or exchanged. */
static int mc_counts(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const struct fdev_moe_handle *reuse, uint64_t *t_ps)
{
	unsigned int n = h->nranks, width = n + 1;
	uint64_t *rows, *all;
	int err;

	*t_ps = 0;
	if (reuse)
		return mc_reuse_counts(h, reuse);
	if (h->nlocal == 1) {
		uint64_t *row = malloc((size_t)width * 8);

		if (!row)
			return -ENOMEM;
		memcpy(row, h->ranks[0].send_cnt, n * 8ULL);
		row[n] = h->mc_tokens[h->first];
		err = mc_job_counts(c, h, row, t_ps);
		free(row);
		if (err <= 0)
			return err;
	}
	rows = calloc((size_t)h->nlocal * width + 1, 8);
	all = calloc((size_t)n * width, 8);
	err = rows && all ? 0 : -ENOMEM;
	for (unsigned int l = 0; !err && l < h->nlocal; l++) {
		memcpy(rows + (size_t)l * width, h->ranks[l].send_cnt, n * 8ULL);
		rows[(size_t)l * width + n] = h->mc_tokens[h->first + l];
	}
	if (!err)
		err = moe_gather_counts(c, h, rows, width, all, t_ps);
	for (unsigned int s = 0; !err && s < n; s++) {
		memcpy(h->pair_tokens + (size_t)s * n, all + (size_t)s * width,
		       n * 8ULL);
		h->mc_tokens[s] = all[(size_t)s * width + n];
	}
	free(rows);
	free(all);
	return err;
}

/* Each local source's slab: its leaving tokens' records, in token order. */
static void mc_pack(struct fdev_comm *c, struct fdev_moe_handle *h,
		    const struct fdev_moe_in *in)
{
	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->ranks[l];
		unsigned int s = h->first + l;
		uint8_t *slab = fdev_ws_addr(c, l, mc_slab_off(h, s));

		for (uint64_t t = 0; t < mr->tokens; t++)
			if (token_leaves(h, mr->topk_idx + t * h->cfg.k, s)) {
				moe_pack(h, &in[l], mr, t, slab);
				slab += h->rec_size;
			}
	}
}

/*
 * Who sends the slabs how. A multicast WRITE names a circuit that its
 * sending process opened (icfabd opens it in the requester's name), and
 * with device memory every destination binds it from its own context
 * (ICFAB_IOC_CIRCUIT_RECV) and learns of the landing only from the
 * sender: the module refuses ICFAB_DESC_F_NOTIFY on a circuit WRITE
 * (-EINVAL), so a receiver in another process cannot wait for it. So:
 *  - one process driving every rank (local, or the proxy's rank 0):
 *    multicast, every source over its own circuit;
 *  - timing-only independent processes: multicast too, each process
 *    over the circuit of its own rank (timing-only descriptors need no
 *    binding), opened in waves all processes agree on
 *    (mc_send_procs()): the same transfers as one process, the same
 *    picoseconds. Up to FDEV_MC_MAX_DSTS + 1 ranks: past that a
 *    source's tree is several circuits, each to a part of the ranks,
 *    whose colours could fit or not depending on the order their
 *    requests reach icfabd (mc_wave_open()); the processes send unicast
 *    there, as the next;
 *  - independent processes with device memory (receive completions,
 *    no proxy): the same slab to each other rank by a unicast WRITE
 *    with NOTIFY, into the same place: the same records and outputs,
 *    the bytes of n - 1 copies, other routes (the routing tables', not
 *    the tree's), so other times.
 * FDEV_MC_UNICAST=1 sends every communicator's slabs the third way (one
 * process against the processes of device memory, transfer for
 * transfer).
 */
static int mc_unicast(struct fdev_comm *c)
{
	const char *u = getenv("FDEV_MC_UNICAST");

	if (u && !strcmp(u, "1"))
		return 1;
	if (!c->multi || c->proxy)
		return 0;
	/* The waves are agreed through the job's host rows. */
	return !fdev_comm_timing_only(c) || fdev_mc_parts(c->nranks) > 1 ||
	       !fdev_host_row(c, c->first, 8);
}

/* Timing-only independent processes, each multicasting its own slabs. */
static int mc_procs(struct fdev_comm *c)
{
	return c->multi && !c->proxy && !mc_unicast(c);
}

/* The plan of sources [@s0, @s1)'s slabs, one multicast each (or a copy per destination). */
static int mc_wave_plan(struct fdev_comm *c, struct fdev_moe_handle *h,
			unsigned int s0, unsigned int s1, struct fdev_plan *p)
{
	unsigned int n = h->nranks;
	int uni = mc_unicast(c), err;

	/*
	 * Unicast by independent processes: n - 1 copies of every source's
	 * slab, n^2 entries for the job; each process keeps only those its
	 * ranks send or receive (every rank receives from every source, so
	 * every process runs the step, as before).
	 */
	if (uni)
		fdev_comm_plan_init(c, p);
	else
		fdev_plan_init(p);
	fdev_plan_need(p, mc_slab_off(h, n));
	for (unsigned int s = s0; s < s1; s++)
		if (!h->mc_tokens[s])
			continue;
		else if (!uni)
			fdev_plan_mcast(p, 0, s, n, mc_slab_off(h, s),
					mc_slab_off(h, s),
					h->mc_tokens[s] * h->rec_size);
		else
			for (unsigned int k = 1; k < n; k++)
				fdev_plan_xfer(p, 0, s, (s + k) % n,
					       mc_slab_off(h, s),
					       mc_slab_off(h, s),
					       h->mc_tokens[s] * h->rec_size);
	err = fdev_plan_finish(p);
	if (!err && !h->timing && p->ws_need > c->ws_bytes)
		err = -EMSGSIZE;
	return err;
}

static int mc_wave_run(struct fdev_comm *c, const struct fdev_plan *p,
		       uint64_t *t_ps)
{
	int err = 0;

	if (p->nx) {
		err = fdev_plan_run(c, p);
		if (!err)
			*t_ps += c->last_ps;
	}
	return err;
}

/* Sources [@s0, @s1)'s slabs, one multicast each (or a copy per destination). */
static int mc_send_wave(struct fdev_comm *c, struct fdev_moe_handle *h,
			unsigned int s0, unsigned int s1, uint64_t *t_ps)
{
	struct fdev_plan p;
	int err = mc_wave_plan(c, h, s0, s1, &p);

	if (!err)
		err = mc_wave_run(c, &p, t_ps);
	fdev_plan_free(&p);
	return err;
}

/* Whether this process holds a circuit of one of its ranks. */
static int mc_holds(const struct fdev_comm *c)
{
	unsigned int parts = fdev_mc_parts(c->nranks);

	for (unsigned int l = 0; c->mc && l < c->nlocal; l++)
		for (unsigned int j = 0; j < parts; j++)
			if (c->mc[(size_t)(c->first + l) * parts + j])
				return 1;
	return 0;
}

/*
 * Independent processes, wave [@s0, @s1) with plan @p: every process
 * opens its own ranks' circuits of the wave, and all learn everyone's
 * outcome, so that they all go on, or all close and try fewer sources,
 * or all fail with the same error (the lowest failing rank's). Circuits
 * of sources outside the wave are closed by everyone before anyone
 * opens (else a colour still held would refuse a circuit by wall-clock
 * luck). Whether a wave fits does not depend on the order the processes'
 * requests reach icfabd: every source's tree (one circuit: at most
 * FDEV_MC_MAX_DSTS + 1 ranks, mc_unicast()) reaches every rank, so it
 * crosses every router next to a rank, each of which holds the colours
 * of every open tree; the lowest colour free there is free everywhere
 * on the tree, and a wave fits when the routers hold as many trees (or
 * the user as many circuits) whatever the order. The colours themselves
 * may differ from one process's: they change no time. The meetings move
 * no clock: every process's is the latest already, after the counts'
 * exchange or the last wave. *@busy: -ENOSPC or -EDQUOT when some
 * process's circuit was refused so (everyone's are closed again).
 */
static int mc_wave_open(struct fdev_comm *c, const struct fdev_plan *p,
			int *busy)
{
	int mine = 0, err, worst = 0;
	unsigned int bad = c->nranks;

	*busy = 0;
	for (size_t i = 0; i < p->nx; i++)
		mine |= p->x[i].src >= c->first &&
			p->x[i].src < c->first + c->nlocal;
	if (!mine && mc_holds(c))
		fdev_comm_circuits_close(c);
	err = fdev_comm_barrier(c);
	if (err)
		return err;
	mine = mine ? fdev_comm_circuits_open(c, p) : 0;
	for (unsigned int l = 0; l < c->nlocal; l++) {
		int64_t *row = fdev_host_row(c, c->first + l, 8);

		*row = mine;	/* there: mc_unicast() */
	}
	err = fdev_comm_barrier(c);
	for (unsigned int s = 0; !err && s < c->nranks; s++) {
		const int64_t *row = fdev_host_row(c, s, 8);
		int e = row && !fdev_rank_failed(c, s) ? (int)*row : 0;

		if (e == -ENOSPC || e == -EDQUOT)
			*busy = e;
		else if (e && bad == c->nranks) {
			bad = s;
			worst = e;
		}
	}
	fdev_host_rows_done(c);
	if (err)
		return err;
	if (worst || *busy)
		fdev_comm_circuits_close(c);
	return worst;
}

/* mc_send() for independent processes: the waves agreed by all. */
static int mc_send_procs(struct fdev_comm *c, struct fdev_moe_handle *h,
			 uint64_t *t_ps)
{
	unsigned int n = h->nranks, w = c->mc_wave ? c->mc_wave : n;
	int err = 0;

	for (unsigned int s0 = 0; s0 < n && !err;) {
		unsigned int s1 = s0 + w < n ? s0 + w : n;
		struct fdev_plan p;
		int busy = 0;

		err = mc_wave_plan(c, h, s0, s1, &p);
		if (!err)
			err = mc_wave_open(c, &p, &busy);
		if (!err && busy && w > 1) {
			fdev_plan_free(&p);
			w = (w + 1) / 2;
			continue;
		}
		if (!err)
			err = busy;
		if (!err)
			err = mc_wave_run(c, &p, t_ps);
		fdev_plan_free(&p);
		s0 = s1;
	}
	if (!err)
		c->mc_wave = w < n ? w : 0;
	return err;
}

/*
 * The slabs, in waves of sources whose circuits the routers' colours
 * hold at once: every source when they fit (one plan, as before), else
 * half as many, and so on, each wave after the last. Each router holds
 * one colour per circuit crossing it, and on a leaf/spine every source's
 * tree crosses the leaves of all its destinations: 64 colours hold at
 * most 64 sources' trees at a leaf. The module also caps the circuits
 * of a user other than root (max_uid_circuits; icfabd opens them in
 * the requester's name): past it, -EDQUOT, which fewer sources at once
 * fit in the same way. A wave refused either way sent nothing (circuits
 * open before anything is submitted), so it is tried again with fewer
 * sources; the wave size found is kept for the next call. Waves run one
 * after the other, so their times add.
 */
static int mc_send(struct fdev_comm *c, struct fdev_moe_handle *h,
		   const struct fdev_moe_in *in, uint64_t *t_ps)
{
	unsigned int n = h->nranks, w = c->mc_wave ? c->mc_wave : n;
	int err = 0;

	*t_ps = 0;
	if (!h->timing && mc_slab_off(h, n) > c->ws_bytes)
		return -EMSGSIZE;
	if (!h->timing)
		mc_pack(c, h, in);
	if (mc_unicast(c))
		return mc_send_wave(c, h, 0, n, t_ps);
	if (mc_procs(c))
		return mc_send_procs(c, h, t_ps);
	for (unsigned int s0 = 0; s0 < n && !err;) {
		unsigned int s1 = s0 + w < n ? s0 + w : n;

		err = mc_send_wave(c, h, s0, s1, t_ps);
		if ((err == -ENOSPC || err == -EDQUOT) && w > 1) {
			w = (w + 1) / 2;
			err = 0;
			continue;
		}
		s0 = s1;
	}
	if (!err)
		c->mc_wave = w < n ? w : 0;
	return err;
}

/*
 * The records rank @d keeps: its own tokens packed into @self (as
 * throughput's self block), the others' from their slabs.
 */
static int mc_pick(struct fdev_comm *c, struct fdev_moe_handle *h,
		   unsigned int l, const struct fdev_moe_in *in,
		   uint8_t *self, uint8_t **recs)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int d = h->first + l;
	uint64_t j = 0, own = 0;

	for (unsigned int s = 0; s < h->nranks; s++) {
		uint64_t got = 0;

		if (s == d) {
			for (uint64_t t = 0; t < mr->tokens; t++)
				if (moe_token_on_rank(h, mr->topk_idx + t * h->cfg.k, d)) {
					moe_pack(h, in, mr, t, self + own * h->rec_size);
					recs[j++] = self + own++ * h->rec_size;
				}
			continue;
		}
		for (uint64_t i = 0; i < h->mc_tokens[s]; i++) {
			uint8_t *rec = fdev_ws_addr(c, l, mc_slab_off(h, s) +
						    i * h->rec_size);

			if (!moe_token_on_rank(h, moe_rec_idx(h, rec), d))
				continue;
			if (++got > mr->recv_cnt[s])
				break;
			recs[j++] = rec;
		}
		if (got != mr->recv_cnt[s])
			return -EPROTO;	/* the slab disagrees with the counts */
	}
	return own != mr->recv_cnt[d] ? -EPROTO : 0;
}

static int mc_receive(struct fdev_comm *c, struct fdev_moe_handle *h,
		      unsigned int l, const struct fdev_moe_in *in)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int d = h->first + l;
	uint8_t **recs, *self;
	int err;

	h->st.dispatch_bytes += h->mc_tokens[d] * h->rec_size *
				(mc_unicast(c) ? h->nranks - 1 :
				 fdev_mc_parts(h->nranks));
	err = moe_take_recv_counts(h, mr, d);
	if (err || h->timing)
		return err;
	self = malloc((mr->recv_cnt[d] ? mr->recv_cnt[d] : 1) * h->rec_size);
	recs = moe_recs_alloc(mr->recv_tokens);
	err = self && recs ? 0 : -ENOMEM;
	if (!err)
		err = mc_pick(c, h, l, in, self, recs);
	if (!err)
		err = moe_build_out(h, mr, d, recs, mr->recv_tokens, NULL);
	free(recs);
	free(self);
	return err;
}

static int moe_dispatch_mc(struct fdev_comm *c, struct fdev_moe_handle *h,
			   const struct fdev_moe_in *in,
			   const struct fdev_moe_handle *reuse)
{
	uint64_t t_counts, t_slabs = 0;
	int err = 0;

	/* A circuit to an excluded rank would still carry its copy. */
	for (unsigned int r = 0; r < c->nranks; r++)
		if (fdev_rank_failed(c, r))
			return -ENOLINK;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = mc_route(h, l);
	if (!err)
		err = mc_counts(c, h, reuse, &t_counts);
	if (err)
		return err;
	err = mc_send(c, h, in, &t_slabs);
	h->st.dispatch_ps = t_counts + t_slabs;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = mc_receive(c, h, l, &in[l]);
	return err;
}

/* Multicast's handles hold throughput's layout: its combine is theirs. */
const struct moe_mode moe_mode_mc = {
	.dispatch = moe_dispatch_mc,
	.combine = moe_combine_tp,
};
