// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * MoE low-latency mode: one record per (token, expert), written straight
 * into the expert's fixed slot [local expert][source][i] of max_tokens,
 * with the counts in the same step: one step, no exchange. Combine sends
 * every expert row back to its source's slot [expert][i], and the source
 * weights and adds them.
 *
 * Workspace at each rank: the counts received ([n][experts per rank]
 * words) at 0, the slots after them, then the send area (records by
 * expert) and the counts sent ([E] words).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "moe.h"

/* Slot @i of source @s for local expert @e. */
static uint64_t ll_slot_off(const struct fdev_moe_handle *h, unsigned int e,
			    unsigned int s, uint64_t i)
{
	uint64_t base = moe_round8(h->nranks * (uint64_t)h->experts_per_rank * 8) + 64;

	return base + (((uint64_t)e * h->nranks + s) * h->cfg.max_tokens + i) *
		      h->rec_size;
}

static uint64_t ll_send_off(const struct fdev_moe_handle *h)
{
	return ll_slot_off(h, h->experts_per_rank, 0, 0);
}

static uint64_t ll_counts_off(const struct fdev_moe_handle *h)
{
	return ll_send_off(h) +
	       h->cfg.num_experts * (uint64_t)h->cfg.max_tokens * h->rec_size;
}

/* Tokens by expert: send_tok lists them, send_cnt counts them. */
static int ll_route(const struct fdev_moe_handle *h, struct moe_rank *mr)
{
	unsigned int k = h->cfg.k;
	uint64_t pos = 0;

	mr->send_cnt = calloc(h->cfg.num_experts, 8);
	mr->send_tok = malloc((mr->tokens * k + 1) * 8);
	if (!mr->send_cnt || !mr->send_tok)
		return -ENOMEM;
	for (unsigned int e = 0; e < h->cfg.num_experts; e++) {
		uint64_t first = pos;

		for (uint64_t t = 0; t < mr->tokens; t++)
			for (unsigned int q = 0; q < k; q++)
				if (mr->topk_idx[t * k + q] == (int64_t)e) {
					mr->send_tok[pos++] = t;
					break;
				}
		mr->send_cnt[e] = pos - first;
	}
	return 0;
}

/*
 * Local rank @l: its records into the experts' slots, its counts after.
 * The send area holds them by expert; they go expert-major, as combine's
 * do: every rank's first expert in moe_peer_order(), then every rank's
 * second... A rank's sends to one destination are a transfer per expert
 * anyway, so the destinations take turns at that grain, and the ranks
 * of a node stay in step with the other nodes' over scale-out. (Sent
 * destination by destination, a rank's transfers kept its few DMA
 * engines on one receiver for a long while, and ranks that drifted
 * apart met at the same receivers: on two H800 nodes that took the
 * dispatch to 0.54 of its NIC bound.)
 */
static int ll_plan_rank(struct fdev_comm *c, struct fdev_moe_handle *h,
			const struct fdev_moe_in *in, unsigned int l,
			struct fdev_plan *p)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int s = h->first + l, epr = h->experts_per_rank;
	unsigned int E = h->cfg.num_experts, n = h->nranks, *order;
	uint64_t send = ll_send_off(h), counts = ll_counts_off(h), *first;

	order = malloc(n * sizeof(*order));
	first = malloc((E + 1) * sizeof(*first));
	if (!order || !first) {
		free(order);
		free(first);
		return -ENOMEM;
	}
	first[0] = 0;
	for (unsigned int e = 0; e < E; e++)
		first[e + 1] = first[e] + mr->send_cnt[e];
	for (uint64_t i = 0; !h->timing && i < first[E]; i++)
		moe_pack(h, &in[l], mr, mr->send_tok[i],
			 fdev_ws_addr(c, l, send + i * h->rec_size));
	moe_peer_order(h, s, order);
	for (unsigned int j = 0; j < epr; j++)
		for (unsigned int i = 0; i < n; i++) {
			unsigned int d = order[i], e = d * epr + j;
			uint64_t len = mr->send_cnt[e] * h->rec_size;

			fdev_plan_xfer(p, 0, s, d, send + first[e] * h->rec_size,
				       ll_slot_off(h, j, s, 0), len);
			if (d != s)
				h->st.dispatch_bytes += len;
		}
	/* Counts for each destination: its experts' slice. */
	if (!h->timing)
		memcpy(fdev_ws_addr(c, l, counts), mr->send_cnt, E * 8ULL);
	for (unsigned int d = 0; d < n; d++)
		fdev_plan_xfer(p, 0, s, d, counts + d * epr * 8ULL,
			       (uint64_t)s * epr * 8, epr * 8ULL);
	free(order);
	free(first);
	return 0;
}

/* Local rank @l's output rows: expert-major, then source, then arrival. */
static int ll_receive(struct fdev_comm *c, struct fdev_moe_handle *h,
		      unsigned int l)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int n = h->nranks, epr = h->experts_per_rank;
	uint64_t nrec = 0, j = 0;
	uint32_t *rec_expert;
	uint8_t **recs;
	int err;

	mr->recv_cnt = calloc((size_t)n * epr, 8);
	if (!mr->recv_cnt)
		return -ENOMEM;
	/*
	 * Timing only: what each source's counts said, from the local
	 * sources or through the host (moe_host_counts()).
	 */
	if (h->timing) {
		unsigned int d = h->first + l;
		int host = moe_host_counts(c, h);

		for (unsigned int s = 0; s < n; s++) {
			uint64_t *rc = mr->recv_cnt + (size_t)s * epr;

			if (moe_is_local(h, s))
				memcpy(rc, h->ranks[s - h->first].send_cnt +
				       (size_t)d * epr, epr * 8ULL);
			else if (host)
				moe_host_get(c, s, (size_t)d * epr * 8, rc,
					     epr * 8ULL);
			for (unsigned int e = 0; e < epr; e++)
				nrec += rc[e];
		}
		mr->recv_tokens = nrec;
		return moe_timing_rows(h, mr);
	}
	memcpy(mr->recv_cnt, fdev_ws_addr(c, l, 0), (size_t)n * epr * 8);
	for (size_t i = 0; i < (size_t)n * epr; i++) {
		if (mr->recv_cnt[i] > h->cfg.max_tokens)
			return -EPROTO;
		nrec += mr->recv_cnt[i];
	}
	recs = moe_recs_alloc(nrec);
	rec_expert = malloc((nrec ? nrec : 1) * sizeof(*rec_expert));
	if (!recs || !rec_expert) {
		free(recs);
		free(rec_expert);
		return -ENOMEM;
	}
	for (unsigned int e = 0; e < epr; e++)
		for (unsigned int s = 0; s < n; s++)
			for (uint64_t i = 0; i < mr->recv_cnt[s * epr + e]; i++) {
				recs[j] = fdev_ws_addr(c, l, ll_slot_off(h, e, s, i));
				rec_expert[j++] = e;
			}
	mr->recv_tokens = nrec;
	err = moe_build_out(h, mr, h->first + l, recs, nrec, rec_expert);
	free(recs);
	free(rec_expert);
	return err;
}

/* Fixed slots: nothing to take from an earlier handle (@reuse). */
static int moe_dispatch_ll(struct fdev_comm *c, struct fdev_moe_handle *h,
			   const struct fdev_moe_in *in,
			   const struct fdev_moe_handle *reuse)
{
	uint64_t need = ll_counts_off(h) + h->cfg.num_experts * 8ULL;
	struct fdev_plan p;
	uint8_t *senders;
	int err = 0, host;

	(void)reuse;
	/* Its plan names only this process's transfers. */
	if (c->proxy)
		return -EOPNOTSUPP;
	for (unsigned int l = 0; l < h->nlocal; l++)
		if (h->ranks[l].tokens > h->cfg.max_tokens)
			return -EOVERFLOW;
	if (!h->timing && need > c->ws_bytes)
		return -EMSGSIZE;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = ll_route(h, &h->ranks[l]);
	if (err)
		return err;
	fdev_plan_init(&p);
	senders = malloc(h->nranks);
	if (!senders)
		return -ENOMEM;
	/* Every rank sends every rank its counts. */
	memset(senders, 1, h->nranks);
	p.senders = senders;
	p.keep_order = 1;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = ll_plan_rank(c, h, in, l, &p);
	fdev_plan_need(&p, need);
	if (!err)
		err = fdev_plan_finish(&p);
	if (!err)
		err = fdev_comm_interleave(c, &p);
	/* Timing only, other processes' counts come through the host. */
	host = moe_host_counts(c, h);
	if (!err && host)
		err = moe_host_put(c, h, h->ranks[0].send_cnt,
				   h->cfg.num_experts * 8ULL);
	/* Self-sends are xfers too: the host copy does them. */
	if (!err)
		err = fdev_plan_run(c, &p);
	h->st.dispatch_ps = c->last_ps;
	fdev_plan_free(&p);
	free(senders);
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = ll_receive(c, h, l);
	if (host)
		fdev_host_rows_done(c);
	return err;
}

/* ------------------------------------------------------------------ */
/* Combine                                                             */

/*
 * Rows at d of local expert @e's blocks from the sources before each
 * source: @before[s] is the first row of source s's block, less the
 * expert's first row.
 */
static void ll_rows_before(const struct fdev_moe_handle *h,
			   const struct moe_rank *mr, unsigned int e,
			   uint64_t *before)
{
	uint64_t row = 0;

	for (unsigned int s = 0; s < h->nranks; s++) {
		before[s] = row;
		row += mr->recv_cnt[s * h->experts_per_rank + e];
	}
}

/*
 * Every expert row back to its source's slot [d's expert][i], staged at
 * @staged; expert-major, as the dispatch came: the first local expert's
 * rows to every source in moe_peer_order(), then the second's... Timing
 * only, the counts are what ll_receive() took (no row: nothing staged).
 */
static int ll_combine_plan(struct fdev_moe_handle *h, uint64_t crow,
			   uint64_t staged, struct fdev_plan *p)
{
	unsigned int n = h->nranks, epr = h->experts_per_rank;
	uint64_t mt = h->cfg.max_tokens, *before = calloc(n, 8);
	unsigned int *order = malloc(n * sizeof(*order));

	if (!before || !order) {
		free(before);
		free(order);
		return -ENOMEM;
	}
	for (unsigned int l = 0; l < h->nlocal; l++) {
		const struct moe_rank *mr = &h->ranks[l];
		unsigned int d = h->first + l;

		moe_peer_order(h, d, order);
		for (unsigned int e = 0; e < epr; e++) {
			if (!h->timing)
				ll_rows_before(h, mr, e, before);
			for (unsigned int kk = 0; kk < n; kk++) {
				unsigned int s = order[kk];
				uint64_t cnt, row = 0;

				cnt = mr->recv_cnt[s * epr + e];
				if (!h->timing)
					row = mr->expert_offset[e] + before[s];
				fdev_plan_xfer(p, 0, d, s, staged + row * crow,
					       ((uint64_t)(d * epr + e) * mt) * crow,
					       cnt * crow);
				if (s != d)
					h->st.combine_bytes += cnt * crow;
			}
		}
	}
	free(before);
	free(order);
	return 0;
}

/* Where the low-latency combine keeps its rows, in bytes. */
struct ll_combine {
	uint64_t crow;			/* a row, padded to 8 */
	uint64_t staged;		/* the expert outputs, 64-aligned */
};

static void ll_stage(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const void *const *y, const void *arg)
{
	const struct ll_combine *lc = arg;
	uint64_t row_bytes = h->cfg.hidden * fdev_dtype_size(moe_comb_dtype(h));

	for (unsigned int l = 0; l < h->nlocal; l++)
		for (uint64_t row = 0; row < h->ranks[l].rows; row++)
			memcpy(fdev_ws_addr(c, l, lc->staged + row * lc->crow),
			       (const uint8_t *)y[l] + row * row_bytes, row_bytes);
}

/* At local source @l: its tokens' expert rows, weighted. */
static void ll_add_back(struct fdev_comm *c, const struct fdev_moe_handle *h,
			unsigned int l, float *sum, const void *arg)
{
	const struct ll_combine *lc = arg;
	const struct moe_rank *mr = &h->ranks[l];
	unsigned int H = h->cfg.hidden, k = h->cfg.k;
	uint64_t mt = h->cfg.max_tokens, pos = 0;
	int dt = moe_comb_dtype(h);

	for (unsigned int e = 0; e < h->cfg.num_experts; e++)
		for (uint64_t i = 0; i < mr->send_cnt[e]; i++, pos++) {
			uint64_t t = mr->send_tok[pos];
			const uint8_t *src = fdev_ws_addr(c, l,
				((uint64_t)e * mt + i) * lc->crow);
			float w = moe_weight_of(mr->topk_idx + t * k,
						mr->topk_w + t * k, k,
						(int64_t)e);

			for (unsigned int q = 0; q < H; q++)
				sum[t * H + q] += w * moe_load(src, q, dt);
		}
}

static const struct moe_combine_steps ll_combine_steps = {
	.stage = ll_stage,
	.add_back = ll_add_back,
};

/*
 * Who sends the first local rank rows back: the ranks whose experts got
 * some of its tokens (independent processes have one local rank).
 */
static uint8_t *ll_combine_senders(const struct fdev_moe_handle *h)
{
	unsigned int epr = h->experts_per_rank;
	uint8_t *senders = calloc(h->nranks, 1);

	for (unsigned int e = 0; senders && e < h->cfg.num_experts; e++)
		if (h->ranks[0].send_cnt[e])
			senders[e / epr] = 1;
	return senders;
}

static int moe_combine_ll(struct fdev_comm *c, struct fdev_moe_handle *h,
			  const void *const *y, void *const *out)
{
	uint64_t slots = h->cfg.num_experts * (uint64_t)h->cfg.max_tokens;
	struct ll_combine lc;
	struct fdev_plan p;
	uint8_t *senders;
	int err;

	lc.crow = moe_round8(h->cfg.hidden *
			     fdev_dtype_size(moe_comb_dtype(h)));
	lc.staged = (slots * lc.crow + 63) & ~63ULL;
	fdev_plan_init(&p);
	senders = ll_combine_senders(h);
	if (!senders)
		return -ENOMEM;
	p.senders = senders;
	p.keep_order = 1;
	fdev_plan_need(&p, lc.staged + slots * lc.crow);
	err = ll_combine_plan(h, lc.crow, lc.staged, &p);
	/*
	 * Every process runs the step, whether it sends or not: a rank
	 * whose experts got nothing has no transfer, and had it no step, it
	 * would skip the meeting the others wait in (independent processes
	 * then wait on each other's next meeting to the end).
	 */
	if (!p.nsteps)
		p.nsteps = 1;
	if (!err)
		err = moe_combine_run(c, h, &p, y, out, &ll_combine_steps, &lc);
	fdev_plan_free(&p);
	free(senders);
	return err;
}

const struct moe_mode moe_mode_ll = {
	.dispatch = moe_dispatch_ll,
	.combine = moe_combine_ll,
};
