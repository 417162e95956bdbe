// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * MoE throughput mode: a token goes once to each rank that owns one of
 * its experts (however many it picks there). Counts are exchanged first
 * (every rank's row of tokens-per-destination to every rank), then the
 * records, packed per destination, in one all-to-all-v step. A handle
 * from an earlier dispatch skips the count exchange (its routing must
 * match).
 *
 * Combine (multicast's too): each rank sends back one partial per
 * received record, the weighted sum of its rows, and the source adds
 * them up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "moe.h"

/* The count matrix: from @reuse, or exchanged over the fabric. */
static int tp_counts(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const struct fdev_moe_handle *reuse, uint64_t *t_ps)
{
	unsigned int n = h->nranks;
	uint64_t *rows;
	int err;

	*t_ps = 0;
	if (reuse) {
		for (unsigned int l = 0; l < h->nlocal; l++)
			if (memcmp(h->ranks[l].send_cnt,
				   reuse->pair_tokens + (size_t)(h->first + l) * n,
				   n * 8ULL))
				return -EINVAL;	/* routing differs */
		memcpy(h->pair_tokens, reuse->pair_tokens, (size_t)n * n * 8);
		return 0;
	}
	rows = malloc(h->nlocal * n * 8ULL);
	if (!rows)
		return -ENOMEM;
	for (unsigned int l = 0; l < h->nlocal; l++)
		memcpy(rows + (size_t)l * n, h->ranks[l].send_cnt, n * 8ULL);
	err = moe_gather_counts(c, h, rows, n, h->pair_tokens, t_ps);
	free(rows);
	return err;
}

/* Pack each local rank's records, by destination, into its send area. */
static void tp_pack(struct fdev_comm *c, struct fdev_moe_handle *h,
		    const struct fdev_moe_in *in, uint64_t send_off)
{
	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->ranks[l];
		uint8_t *base = fdev_ws_addr(c, l, send_off);
		uint64_t pos = 0;

		for (unsigned int d = 0; d < h->nranks; d++)
			for (uint64_t i = 0; i < mr->send_cnt[d]; i++, pos++)
				moe_pack(h, &in[l], mr, mr->send_tok[pos],
					 base + pos * h->rec_size);
	}
}

/* The records, in one all-to-all-v; *recv_off: where they land. */
static int tp_send(struct fdev_comm *c, struct fdev_moe_handle *h,
		   const struct fdev_moe_in *in, uint64_t *recv_off,
		   uint64_t *t_ps)
{
	unsigned int n = h->nranks;
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	uint64_t *bytes;
	int err;

	bytes = malloc((size_t)n * n * 8);
	if (!bytes)
		return -ENOMEM;
	for (size_t i = 0; i < (size_t)n * n; i++)
		bytes[i] = h->pair_tokens[i] * h->rec_size;
	fdev_plan_init(&p);
	err = fdev_plan_all_to_all_v(&p, n, bytes, FDEV_ALGO_DIRECT, &lo);
	if (!err)
		err = fdev_comm_interleave(c, &p);
	free(bytes);
	if (!err && !h->timing && p.ws_need > c->ws_bytes)
		err = -EMSGSIZE;
	if (!err && !h->timing)
		tp_pack(c, h, in, lo.send_off);
	if (!err)
		err = fdev_plan_run(c, &p);
	fdev_plan_free(&p);
	*t_ps = c->last_ps;
	*recv_off = lo.recv_off;
	return err;
}

/* The records, one after the other from recv_off. */
static void tp_find_records(struct fdev_comm *c, const struct fdev_moe_handle *h,
			    unsigned int l, uint8_t **recs, const void *arg)
{
	const uint64_t *recv_off = arg;

	for (uint64_t j = 0; j < h->ranks[l].recv_tokens; j++)
		recs[j] = fdev_ws_addr(c, l, *recv_off + j * h->rec_size);
}

static const struct moe_receive_steps tp_receive_steps = {
	.find = tp_find_records,
};

/* Local rank @l's output rows, from the records at @recv_off. */
static int tp_receive(struct fdev_comm *c, struct fdev_moe_handle *h,
		      unsigned int l, uint64_t recv_off)
{
	unsigned int rank = h->first + l;

	for (unsigned int s = 0; s < h->nranks; s++)
		if (s != rank)
			h->st.dispatch_bytes += moe_pair(h, rank, s) * h->rec_size;
	return moe_receive(c, h, l, &tp_receive_steps, &recv_off);
}

static int moe_dispatch_tp(struct fdev_comm *c, struct fdev_moe_handle *h,
			   const struct fdev_moe_in *in,
			   const struct fdev_moe_handle *reuse)
{
	uint64_t t_counts, t_records = 0, recv_off = 0;
	int err = 0;

	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = moe_route_by_rank(h, &h->ranks[l]);
	if (!err)
		err = tp_counts(c, h, reuse, &t_counts);
	if (err)
		return err;
	err = tp_send(c, h, in, &recv_off, &t_records);
	h->st.dispatch_ps = t_counts + t_records;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = tp_receive(c, h, l, recv_off);
	return err;
}

/* ------------------------------------------------------------------ */
/* Combine                                                             */

/*
 * Partials go back in the reverse of the dispatch's layout: at rank d,
 * by source (d's received records, source order); at source s, after
 * @recv_area, by destination (s's send order).
 */
struct tp_combine {
	uint64_t crow;			/* bytes of a partial row */
	uint64_t recv_area;		/* bytes, 64-aligned: the partials' area */
	uint64_t *recv_before;		/* [d][s] rows at d of sources < s */
	uint64_t *send_before;		/* [s][d] rows s sent to ranks < d */
};

static int tp_combine_layout(const struct fdev_moe_handle *h,
			     struct tp_combine *tc, uint64_t *ws_need)
{
	unsigned int n = h->nranks;
	uint64_t max_recv = 0, max_send = 0;

	tc->recv_before = malloc((size_t)n * n * 8 + 8);
	tc->send_before = malloc((size_t)n * n * 8 + 8);
	if (!tc->recv_before || !tc->send_before)
		return -ENOMEM;
	for (unsigned int r = 0; r < n; r++) {
		uint64_t recv = 0, send = 0;

		for (unsigned int s = 0; s < n; s++) {
			tc->recv_before[(size_t)r * n + s] = recv;
			tc->send_before[(size_t)r * n + s] = send;
			recv += moe_pair(h, s, r);
			send += moe_pair(h, r, s);
		}
		max_recv = recv > max_recv ? recv : max_recv;
		max_send = send > max_send ? send : max_send;
	}
	tc->recv_area = (max_recv * tc->crow + 63) & ~63ULL;
	*ws_need = tc->recv_area + max_send * tc->crow;
	return 0;
}

/*
 * Rotated like the dispatch's all-to-all-v (rank d first to d + 1, ...),
 * so the ranks do not all start on rank 0.
 */
static void tp_combine_plan(struct fdev_moe_handle *h,
			    const struct tp_combine *tc, struct fdev_plan *p)
{
	unsigned int n = h->nranks;
	uint64_t crow = tc->crow;

	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int d = 0; d < n; d++) {
			unsigned int s = (d + kk) % n;
			uint64_t src = tc->recv_before[(size_t)d * n + s] * crow;
			uint64_t dst = tc->recv_area +
				       tc->send_before[(size_t)s * n + d] * crow;
			uint64_t len = moe_pair(h, s, d) * crow;

			if (d == s) {
				fdev_plan_act(p, 0, d, FDEV_ACT_COPY, FDEV_U8,
					      dst, src, len);
				continue;
			}
			fdev_plan_xfer(p, 0, d, s, src, dst, len);
			if (moe_is_local(h, d))
				h->st.combine_bytes += len;
		}
}

static void tp_stage(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const void *const *y, const void *arg)
{
	const struct tp_combine *tc = arg;

	moe_partials(c, h, y, 0, tc->crow);
}

/* At local source @l: its tokens' partials. */
static void tp_add_back(struct fdev_comm *c, const struct fdev_moe_handle *h,
			unsigned int l, float *sum, const void *arg)
{
	const struct tp_combine *tc = arg;
	const struct moe_rank *mr = &h->ranks[l];
	unsigned int H = h->cfg.hidden;
	int dt = moe_comb_dtype(h);
	uint64_t pos = 0;

	for (unsigned int d = 0; d < h->nranks; d++)
		for (uint64_t i = 0; i < mr->send_cnt[d]; i++, pos++)
			moe_add_row(sum + mr->send_tok[pos] * H,
				    fdev_ws_addr(c, l, tc->recv_area +
						 pos * tc->crow), H, dt);
}

static const struct moe_combine_steps tp_combine_steps = {
	.stage = tp_stage,
	.add_back = tp_add_back,
};

int moe_combine_tp(struct fdev_comm *c, struct fdev_moe_handle *h,
		   const void *const *y, void *const *out)
{
	struct tp_combine tc = { 0 };
	struct fdev_plan p;
	uint64_t need;
	int err;

	tc.crow = moe_round8(h->cfg.hidden *
			     fdev_dtype_size(moe_comb_dtype(h)));
	err = tp_combine_layout(h, &tc, &need);
	fdev_plan_init(&p);
	if (!err) {
		fdev_plan_need(&p, need);
		tp_combine_plan(h, &tc, &p);
		err = moe_combine_run(c, h, &p, y, out, &tp_combine_steps, &tc);
	}
	fdev_plan_free(&p);
	free(tc.recv_before);
	free(tc.send_before);
	return err;
}

const struct moe_mode moe_mode_tp = {
	.dispatch = moe_dispatch_tp,
	.combine = moe_combine_tp,
};
