// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * MoE hierarchical mode (DeepEP's internode "normal" kernels): a token
 * goes over scale-out at most once per remote node, to the peer there
 * with the source's local index, which forwards it over scale-up to the
 * ranks of its node that own the token's experts; ranks of the source's
 * own node get it directly over scale-up, in the same step as the
 * scale-out. Three plans: the count exchange (tokens per rank and per
 * node), the scale-out with the direct scale-up, the forwarding. Between
 * the last two each peer packs what it forwards from the records it
 * received. The receiver sees the same rows, in the same order, as
 * throughput.
 *
 * Combine reverses it: partials to the forwarding peer (or directly to a
 * source in the same node), which sums them per token, then one row per
 * (token, node) back over scale-out.
 *
 * All offsets follow from pair_tokens and node_tokens, so every process
 * builds the same plans. Workspace regions (struct hier_regions, in
 * records or rows), each as large as the largest rank's share:
 *	dispatch  send | direct_in | scaleout_in | fwd_out | fwd_in
 *	combine   partials | direct_back | at_peer | summed | scaleout_back
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "moe.h"

static unsigned int hier_node(const struct fdev_moe_handle *h, unsigned int r)
{
	return r / h->node_size;
}

static unsigned int node_first(const struct fdev_moe_handle *h, unsigned int N)
{
	return N * h->node_size;
}

/* @s is a remote source whose tokens rank @p forwards (same local index). */
static int forwards_for(const struct fdev_moe_handle *h, unsigned int p,
			unsigned int s)
{
	return s % h->node_size == p % h->node_size &&
	       hier_node(h, s) != hier_node(h, p);
}

/* Tokens of source @s for node @N (once per token, however many ranks). */
static uint64_t node_pair(const struct fdev_moe_handle *h, unsigned int s,
			  unsigned int N)
{
	return h->node_tokens[(size_t)s * h->nr_nodes + N];
}

static int token_on_node(const struct fdev_moe_handle *h, const int64_t *idx,
			 unsigned int N)
{
	for (unsigned int j = 0; j < h->cfg.k; j++)
		if (idx[j] >= 0 && moe_expert_rank(h, idx[j]) / h->node_size == N)
			return 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Offsets within the regions (records or rows)                        */

/* In s's send area (and direct_back at s): its block for @d, same node. */
static uint64_t off_direct_send(const struct fdev_moe_handle *h,
				unsigned int s, unsigned int d)
{
	uint64_t o = 0;

	for (unsigned int q = node_first(h, hier_node(h, s)); q < d; q++)
		o += moe_pair(h, s, q);
	return o;
}

/* In s's scale-out part (and scaleout_back at s): its block for node @N. */
static uint64_t off_scaleout_send(const struct fdev_moe_handle *h,
				  unsigned int s, unsigned int N)
{
	uint64_t o = 0;

	for (unsigned int M = 0; M < N; M++)
		if (M != hier_node(h, s))
			o += node_pair(h, s, M);
	return o;
}

/* direct_in at @d: the block of source @s (same node). */
static uint64_t off_direct_recv(const struct fdev_moe_handle *h,
				unsigned int d, unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = node_first(h, hier_node(h, d)); q < s; q++)
		o += moe_pair(h, q, d);
	return o;
}

/* scaleout_in (and summed) at peer @p: the block of remote source @s. */
static uint64_t off_scaleout_recv(const struct fdev_moe_handle *h,
				  unsigned int p, unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = 0; q < s; q++)
		if (forwards_for(h, p, q))
			o += node_pair(h, q, hier_node(h, p));
	return o;
}

/*
 * fwd_out at peer @p: the block (d, s); @with_self also counts d == p
 * (at_peer, which holds the peer's own partials too).
 */
static uint64_t off_forward(const struct fdev_moe_handle *h, unsigned int p,
			    unsigned int d, unsigned int s, int with_self)
{
	uint64_t o = 0;

	for (unsigned int q = node_first(h, hier_node(h, p)); q <= d; q++) {
		if (q == p && !with_self)
			continue;
		for (unsigned int r = 0; r < h->nranks; r++)
			if (forwards_for(h, p, r) && (q < d || r < s))
				o += moe_pair(h, r, q);
	}
	return o;
}

/* fwd_in at @d: the block forwarded by @p, and within it source @s. */
static uint64_t off_forwarded_recv(const struct fdev_moe_handle *h,
				   unsigned int d, unsigned int p,
				   unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = node_first(h, hier_node(h, d)); q <= p; q++) {
		if (q == d)
			continue;
		for (unsigned int r = 0; r < h->nranks; r++)
			if (forwards_for(h, q, r) && (q < p || r < s))
				o += moe_pair(h, r, d);
	}
	return o;
}

/* partials at @d: those of source @s (source order, as received). */
static uint64_t off_partial(const struct fdev_moe_handle *h, unsigned int d,
			    unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = 0; q < s; q++)
		o += moe_pair(h, q, d);
	return o;
}

struct hier_regions {
	/* dispatch, in records */
	uint64_t send, direct_in, scaleout_in, fwd_out, fwd_in, end;
	/* combine, in rows */
	uint64_t partials, direct_back, at_peer, summed, scaleout_back, cend;
};

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static void hier_regions(const struct fdev_moe_handle *h,
			 struct hier_regions *rg)
{
	uint64_t send = 0, direct_in = 0, scaleout_in = 0, fwd_out = 0;
	uint64_t fwd_in = 0, partials = 0, at_peer = 0;

	for (unsigned int r = 0; r < h->nranks; r++) {
		unsigned int next = node_first(h, hier_node(h, r) + 1);
		uint64_t recv = 0;

		send = max64(send, off_scaleout_send(h, r, h->nr_nodes) +
				   off_direct_send(h, r, next));
		direct_in = max64(direct_in, off_direct_recv(h, r, next));
		scaleout_in = max64(scaleout_in, off_scaleout_recv(h, r, h->nranks));
		fwd_out = max64(fwd_out, off_forward(h, r, next - 1, h->nranks, 0));
		at_peer = max64(at_peer, off_forward(h, r, next - 1, h->nranks, 1));
		fwd_in = max64(fwd_in, off_forwarded_recv(h, r, next - 1, h->nranks));
		for (unsigned int s = 0; s < h->nranks; s++)
			recv += moe_pair(h, s, r);
		partials = max64(partials, recv);
	}
	rg->send = 0;
	rg->direct_in = rg->send + send;
	rg->scaleout_in = rg->direct_in + direct_in;
	rg->fwd_out = rg->scaleout_in + scaleout_in;
	rg->fwd_in = rg->fwd_out + fwd_out;
	rg->end = rg->fwd_in + fwd_in;
	/*
	 * direct_back is at most the send area's direct part, summed and
	 * scaleout_back at most scaleout_in / the send area.
	 */
	rg->partials = 0;
	rg->direct_back = rg->partials + partials;
	rg->at_peer = rg->direct_back + send;
	rg->summed = rg->at_peer + at_peer;
	rg->scaleout_back = rg->summed + scaleout_in;
	rg->cend = rg->scaleout_back + send;
}

/* ------------------------------------------------------------------ */
/* Dispatch: counts                                                    */

/* Local rank @l's row: tokens per rank, then tokens per node. */
static int hier_local_row(struct fdev_moe_handle *h, unsigned int l,
			  uint64_t *row)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int n = h->nranks;
	int err = moe_route_by_rank(h, mr);

	if (err)
		return err;
	memcpy(row, mr->send_cnt, n * 8ULL);
	for (uint64_t t = 0; t < mr->tokens; t++)
		for (unsigned int N = 0; N < h->nr_nodes; N++)
			row[n + N] += token_on_node(h, mr->topk_idx + t * h->cfg.k, N);
	return 0;
}

static int hier_reuse_counts(struct fdev_moe_handle *h, const uint64_t *rows,
			     const struct fdev_moe_handle *reuse)
{
	unsigned int n = h->nranks, nn = h->nr_nodes, width = n + nn;

	for (unsigned int l = 0; l < h->nlocal; l++) {
		unsigned int r = h->first + l;

		if (memcmp(rows + (size_t)l * width,
			   reuse->pair_tokens + (size_t)r * n, n * 8ULL) ||
		    memcmp(rows + (size_t)l * width + n,
			   reuse->node_tokens + (size_t)r * nn, nn * 8ULL))
			return -EINVAL;	/* routing differs */
	}
	memcpy(h->pair_tokens, reuse->pair_tokens, (size_t)n * n * 8);
	memcpy(h->node_tokens, reuse->node_tokens, (size_t)n * nn * 8);
	return 0;
}

/* Tokens per rank and per node of every rank: from @reuse, or exchanged. */
static int hier_counts(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const struct fdev_moe_handle *reuse, uint64_t *t_ps)
{
	unsigned int n = h->nranks, nn = h->nr_nodes, width = n + nn;
	uint64_t *rows, *all = NULL;
	int err;

	*t_ps = 0;
	rows = calloc((size_t)h->nlocal * width + 1, 8);
	if (!reuse)
		all = calloc((size_t)n * width, 8);
	err = rows && (reuse || all) ? 0 : -ENOMEM;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = hier_local_row(h, l, rows + (size_t)l * width);
	if (!err && reuse)
		err = hier_reuse_counts(h, rows, reuse);
	else if (!err)
		err = moe_gather_counts(c, h, rows, width, all, t_ps);
	for (unsigned int r = 0; !err && !reuse && r < n; r++) {
		memcpy(h->pair_tokens + (size_t)r * n, all + (size_t)r * width,
		       n * 8ULL);
		memcpy(h->node_tokens + (size_t)r * nn, all + (size_t)r * width + n,
		       nn * 8ULL);
	}
	free(rows);
	free(all);
	return err;
}

/* ------------------------------------------------------------------ */
/* Dispatch: scale-out and direct scale-up                             */

/* Step @kk of source @s within its node: to the rank @kk after it. */
static void plan_direct_step(struct fdev_moe_handle *h,
			     const struct hier_regions *rg, unsigned int s,
			     unsigned int kk, struct fdev_plan *p)
{
	unsigned int g = h->node_size, ns = hier_node(h, s);
	unsigned int d = node_first(h, ns) + (s % g + kk) % g;
	uint64_t rec = h->rec_size, cnt = moe_pair(h, s, d);
	uint64_t src = (rg->send + off_direct_send(h, s, d)) * rec;
	uint64_t dst = (rg->direct_in + off_direct_recv(h, d, s)) * rec;

	if (cnt && d == s)
		fdev_plan_act(p, 0, s, FDEV_ACT_COPY, FDEV_U8, dst, src, cnt * rec);
	if (cnt && d != s) {
		fdev_plan_xfer(p, 0, s, d, src, dst, cnt * rec);
		if (moe_is_local(h, s))
			h->st.dispatch_bytes += cnt * rec;
	}
}

/* Step @kk of source @s across nodes: to its peer in the node @kk after. */
static void plan_scaleout_step(struct fdev_moe_handle *h,
			       const struct hier_regions *rg, unsigned int s,
			       unsigned int kk, struct fdev_plan *p)
{
	unsigned int g = h->node_size, ns = hier_node(h, s);
	unsigned int N = (ns + kk) % h->nr_nodes, peer = N * g + s % g;
	uint64_t rec = h->rec_size, cnt = node_pair(h, s, N);

	if (!cnt)
		return;
	fdev_plan_xfer(p, 0, s, peer,
		       (rg->send + off_direct_send(h, s, node_first(h, ns + 1)) +
			off_scaleout_send(h, s, N)) * rec,
		       (rg->scaleout_in + off_scaleout_recv(h, peer, s)) * rec,
		       cnt * rec);
	if (moe_is_local(h, s))
		h->st.dispatch_bytes += cnt * rec;
}

/*
 * Each local source's send area: its node's ranks' records (by rank),
 * then one record per (token, remote node) (by node).
 */
static void hier_pack(struct fdev_comm *c, struct fdev_moe_handle *h,
		      const struct fdev_moe_in *in, const struct hier_regions *rg)
{
	unsigned int g = h->node_size, k = h->cfg.k;

	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->ranks[l];
		unsigned int s = h->first + l, ns = hier_node(h, s);
		uint8_t *base = fdev_ws_addr(c, l, rg->send * h->rec_size);
		uint64_t pos = 0;

		for (unsigned int d = ns * g; d < (ns + 1) * g; d++)
			for (uint64_t t = 0; t < mr->tokens; t++)
				if (moe_token_on_rank(h, mr->topk_idx + t * k, d))
					moe_pack(h, &in[l], mr, t,
						 base + pos++ * h->rec_size);
		for (unsigned int N = 0; N < h->nr_nodes; N++)
			for (uint64_t t = 0; N != ns && t < mr->tokens; t++)
				if (token_on_node(h, mr->topk_idx + t * k, N))
					moe_pack(h, &in[l], mr, t,
						 base + pos++ * h->rec_size);
	}
}

static int hier_send(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const struct fdev_moe_in *in,
		     const struct hier_regions *rg, uint64_t *t_ps)
{
	unsigned int g = h->node_size, steps = max64(g, h->nr_nodes);
	struct fdev_plan p;
	int err;

	fdev_plan_init(&p);
	fdev_plan_need(&p, rg->end * h->rec_size);
	/* Rotated: rank s first to the next in its node and the next node. */
	for (unsigned int kk = 0; kk < steps; kk++)
		for (unsigned int s = 0; s < h->nranks; s++) {
			if (kk < g)
				plan_direct_step(h, rg, s, kk, &p);
			if (kk && kk < h->nr_nodes)
				plan_scaleout_step(h, rg, s, kk, &p);
		}
	err = fdev_plan_finish(&p);
	if (!err && !h->timing)
		hier_pack(c, h, in, rg);
	if (!err)
		err = fdev_plan_run(c, &p);
	*t_ps = c->last_ps;
	fdev_plan_free(&p);
	return err;
}

/* ------------------------------------------------------------------ */
/* Dispatch: forwarding                                                */

/*
 * At peer @l, the records of remote source @s for rank @d of its node:
 * their positions in s's scale-out block into fwd_pos, and unless d is
 * the peer itself, the records into fwd_out.
 */
static int pick_forwarded(struct fdev_comm *c, struct fdev_moe_handle *h,
			  const struct hier_regions *rg, unsigned int l,
			  unsigned int d, unsigned int s, uint64_t *pos)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int peer = h->first + l;
	uint64_t rec = h->rec_size, want = moe_pair(h, s, d), cnt = 0;
	uint64_t block = rg->scaleout_in + off_scaleout_recv(h, peer, s);
	uint64_t nr = node_pair(h, s, hier_node(h, peer));

	for (uint64_t i = 0; i < nr; i++) {
		uint8_t *rp = fdev_ws_addr(c, l, (block + i) * rec);

		if (!moe_token_on_rank(h, moe_rec_idx(h, rp), d))
			continue;
		if (cnt++ >= want)
			return -EPROTO;
		mr->fwd_pos[(*pos)++] = i;
	}
	if (cnt != want)
		return -EPROTO;
	if (d == peer)
		return 0;	/* the peer's own */
	for (uint64_t i = 0; i < cnt; i++)
		memcpy(fdev_ws_addr(c, l, (rg->fwd_out +
					   off_forward(h, peer, d, s, 0) + i) * rec),
		       fdev_ws_addr(c, l, (block + mr->fwd_pos[*pos - cnt + i]) * rec),
		       rec);
	return 0;
}

/* Peer @l: what it received, per rank of its node, in order. */
static int hier_forward_rank(struct fdev_comm *c, struct fdev_moe_handle *h,
			     const struct hier_regions *rg, unsigned int l)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int n = h->nranks, g = h->node_size;
	unsigned int peer = h->first + l, np = hier_node(h, peer);
	uint64_t total = off_forward(h, peer, (np + 1) * g - 1, n, 1), pos = 0;
	int err = 0;

	mr->fwd_pos = malloc((total + 1) * 8);
	mr->fwd_pos_start = calloc((size_t)g * n + 1, 8);
	if (!mr->fwd_pos || !mr->fwd_pos_start)
		return -ENOMEM;
	for (unsigned int d = np * g; d < (np + 1) * g; d++)
		for (unsigned int s = 0; !err && s < n; s++) {
			if (!forwards_for(h, peer, s))
				continue;
			mr->fwd_pos_start[(size_t)(d % g) * n + s] = pos;
			if (!h->timing)
				err = pick_forwarded(c, h, rg, l, d, s, &pos);
		}
	return err;
}

/* Forward over scale-up; *t_ps: 0 when there was nothing to forward. */
static int hier_forward(struct fdev_comm *c, struct fdev_moe_handle *h,
			const struct hier_regions *rg, uint64_t *t_ps)
{
	unsigned int n = h->nranks, g = h->node_size;
	uint64_t rec = h->rec_size;
	struct fdev_plan p;
	int err;

	fdev_plan_init(&p);
	fdev_plan_need(&p, rg->end * rec);
	for (unsigned int kk = 1; kk < g; kk++)
		for (unsigned int peer = 0; peer < n; peer++) {
			unsigned int d = node_first(h, hier_node(h, peer)) +
					 (peer % g + kk) % g;
			uint64_t a = off_forward(h, peer, d, 0, 0);
			uint64_t b = off_forward(h, peer, d, n, 0);

			if (b == a)
				continue;
			fdev_plan_xfer(&p, 0, peer, d, (rg->fwd_out + a) * rec,
				       (rg->fwd_in + off_forwarded_recv(h, d, peer, 0)) * rec,
				       (b - a) * rec);
			if (moe_is_local(h, peer))
				h->st.dispatch_bytes += (b - a) * rec;
		}
	err = fdev_plan_finish(&p);
	if (!err && p.nx)
		err = fdev_plan_run(c, &p);
	*t_ps = p.nx ? c->last_ps : 0;
	fdev_plan_free(&p);
	return err;
}

/* ------------------------------------------------------------------ */
/* Dispatch: receive                                                   */

/* Where record @i from source @s sits at local rank @l (rank d). */
static uint64_t hier_recv_off(const struct fdev_moe_handle *h,
			      const struct hier_regions *rg, unsigned int l,
			      unsigned int s, uint64_t i)
{
	const struct moe_rank *mr = &h->ranks[l];
	unsigned int d = h->first + l, nd = hier_node(h, d), g = h->node_size;

	if (hier_node(h, s) == nd)
		return rg->direct_in + off_direct_recv(h, d, s) + i;
	if (forwards_for(h, d, s))
		return rg->scaleout_in + off_scaleout_recv(h, d, s) +
		       mr->fwd_pos[mr->fwd_pos_start[(size_t)(d % g) * h->nranks + s] + i];
	return rg->fwd_in + off_forwarded_recv(h, d, nd * g + s % g, s) + i;
}

/* Receivers: records in source order, as throughput has them. */
static void hier_find_records(struct fdev_comm *c,
			      const struct fdev_moe_handle *h, unsigned int l,
			      uint8_t **recs, const void *arg)
{
	unsigned int d = h->first + l;
	uint64_t j = 0;

	for (unsigned int s = 0; s < h->nranks; s++)
		for (uint64_t i = 0; i < moe_pair(h, s, d); i++)
			recs[j++] = fdev_ws_addr(c, l, hier_recv_off(h, arg, l, s, i) *
						 h->rec_size);
}

static const struct moe_receive_steps hier_receive_steps = {
	.find = hier_find_records,
};

static int moe_dispatch_hier(struct fdev_comm *c, struct fdev_moe_handle *h,
			     const struct fdev_moe_in *in,
			     const struct fdev_moe_handle *reuse)
{
	uint64_t t_counts, t_out = 0, t_fwd = 0;
	struct hier_regions rg;
	int err;

	/* An excluded rank cannot forward for its node: take throughput. */
	for (unsigned int r = 0; r < h->nranks; r++)
		if (fdev_rank_failed(c, r))
			return -ENOLINK;
	err = hier_counts(c, h, reuse, &t_counts);
	if (err)
		return err;
	hier_regions(h, &rg);
	if (!h->timing && rg.end * h->rec_size > c->ws_bytes)
		return -EMSGSIZE;
	err = hier_send(c, h, in, &rg, &t_out);
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = hier_forward_rank(c, h, &rg, l);
	if (!err)
		err = hier_forward(c, h, &rg, &t_fwd);
	h->st.dispatch_ps = t_counts + t_out + t_fwd;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = moe_receive(c, h, l, &hier_receive_steps, &rg);
	return err;
}

/* ------------------------------------------------------------------ */
/* Combine                                                             */

/*
 * Partials of remote sources to their peer in this node; those of the
 * node's own sources go straight back later, beside the scale-out (as
 * dispatch overlaps them the other way).
 */
static void plan_to_peers(struct fdev_moe_handle *h,
			  const struct hier_regions *rg, uint64_t crow,
			  struct fdev_plan *p)
{
	unsigned int n = h->nranks, g = h->node_size;

	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int d = 0; d < n; d++) {
			unsigned int nd = hier_node(h, d), s = (d + kk) % n, to;
			uint64_t cnt = moe_pair(h, s, d), src, dst;

			if (!cnt || hier_node(h, s) == nd)
				continue;
			to = nd * g + s % g;
			src = (rg->partials + off_partial(h, d, s)) * crow;
			dst = (rg->at_peer + off_forward(h, to, d, s, 1)) * crow;
			if (to == d) {
				fdev_plan_act(p, 0, d, FDEV_ACT_COPY, FDEV_U8, dst,
					      src, cnt * crow);
				continue;
			}
			fdev_plan_xfer(p, 0, d, to, src, dst, cnt * crow);
			if (moe_is_local(h, d))
				h->st.combine_bytes += cnt * crow;
		}
}

/* Peer @l: the partials of remote source @s's tokens, summed per token. */
static int sum_at_peer(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const struct hier_regions *rg, unsigned int l,
		       unsigned int s, uint64_t crow)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int n = h->nranks, g = h->node_size, H = h->cfg.hidden;
	unsigned int peer = h->first + l, np = hier_node(h, peer);
	uint64_t nr = node_pair(h, s, np);
	int dt = moe_comb_dtype(h);
	float *acc = calloc(nr * H + 1, sizeof(float));

	if (!acc)
		return -ENOMEM;
	for (unsigned int d = np * g; d < (np + 1) * g; d++) {
		const uint64_t *pos = mr->fwd_pos +
				      mr->fwd_pos_start[(size_t)(d % g) * n + s];
		uint64_t first = rg->at_peer + off_forward(h, peer, d, s, 1);

		for (uint64_t i = 0; i < moe_pair(h, s, d); i++)
			moe_add_row(acc + pos[i] * H,
				    fdev_ws_addr(c, l, (first + i) * crow), H, dt);
	}
	for (uint64_t i = 0; i < nr; i++)
		moe_store_sum(fdev_ws_addr(c, l, (rg->summed +
						  off_scaleout_recv(h, peer, s) + i) * crow),
			      acc + i * H, H, dt);
	free(acc);
	return 0;
}

static int hier_sum_at_peers(struct fdev_comm *c, struct fdev_moe_handle *h,
			     const struct hier_regions *rg, uint64_t crow)
{
	int err = 0;

	for (unsigned int l = 0; l < h->nlocal; l++)
		for (unsigned int s = 0; !err && s < h->nranks; s++)
			if (forwards_for(h, h->first + l, s))
				err = sum_at_peer(c, h, rg, l, s, crow);
	return err;
}

/* The node's own sources' partials, straight back over scale-up. */
static void plan_direct_back(struct fdev_moe_handle *h,
			     const struct hier_regions *rg, uint64_t crow,
			     struct fdev_plan *p)
{
	unsigned int n = h->nranks;

	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int d = 0; d < n; d++) {
			unsigned int s = (d + kk) % n;
			uint64_t cnt = moe_pair(h, s, d), src, dst;

			if (!cnt || hier_node(h, s) != hier_node(h, d))
				continue;
			src = (rg->partials + off_partial(h, d, s)) * crow;
			dst = (rg->direct_back + off_direct_send(h, s, d)) * crow;
			if (s == d) {
				fdev_plan_act(p, 0, d, FDEV_ACT_COPY, FDEV_U8, dst,
					      src, cnt * crow);
				continue;
			}
			fdev_plan_xfer(p, 0, d, s, src, dst, cnt * crow);
			if (moe_is_local(h, d))
				h->st.combine_bytes += cnt * crow;
		}
}

/* One summed row per (token, node) back over scale-out. */
static void plan_scaleout_back(struct fdev_moe_handle *h,
			       const struct hier_regions *rg, uint64_t crow,
			       struct fdev_plan *p)
{
	unsigned int n = h->nranks;

	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int peer = 0; peer < n; peer++) {
			unsigned int s = (peer + kk) % n, np = hier_node(h, peer);
			uint64_t cnt;

			if (!forwards_for(h, peer, s))
				continue;
			cnt = node_pair(h, s, np);
			if (!cnt)
				continue;
			fdev_plan_xfer(p, 0, peer, s,
				       (rg->summed + off_scaleout_recv(h, peer, s)) * crow,
				       (rg->scaleout_back + off_scaleout_send(h, s, np)) * crow,
				       cnt * crow);
			if (moe_is_local(h, peer))
				h->st.combine_bytes += cnt * crow;
		}
}

/* What a combine's steps need: the regions and the bytes of a row. */
struct hier_combine {
	struct hier_regions rg;
	uint64_t crow;
};

/* At local source @l: the direct partials and one row per remote node. */
static void hier_add_back(struct fdev_comm *c, const struct fdev_moe_handle *h,
			  unsigned int l, float *sum, const void *arg)
{
	const struct hier_combine *hc = arg;
	const struct hier_regions *rg = &hc->rg;
	const struct moe_rank *mr = &h->ranks[l];
	unsigned int s = h->first + l, ns = hier_node(h, s), H = h->cfg.hidden;
	uint64_t crow = hc->crow, pos = 0, row = 0;
	int dt = moe_comb_dtype(h);

	for (unsigned int d = 0; d < h->nranks; d++)
		for (uint64_t i = 0; i < mr->send_cnt[d]; i++, pos++)
			if (hier_node(h, d) == ns)
				moe_add_row(sum + mr->send_tok[pos] * H,
					    fdev_ws_addr(c, l, (rg->direct_back +
							 off_direct_send(h, s, d) + i) * crow),
					    H, dt);
	for (unsigned int N = 0; N < h->nr_nodes; N++)
		for (uint64_t t = 0; N != ns && t < mr->tokens; t++)
			if (token_on_node(h, mr->topk_idx + t * h->cfg.k, N))
				moe_add_row(sum + t * H,
					    fdev_ws_addr(c, l, (rg->scaleout_back + row++) * crow),
					    H, dt);
}

static const struct moe_combine_steps hier_combine_steps = {
	.add_back = hier_add_back,
};

static int hier_combine_return(struct fdev_comm *c, struct fdev_moe_handle *h,
			       const struct hier_regions *rg, uint64_t crow,
			       uint64_t *t_ps)
{
	struct fdev_plan p;
	int err;

	fdev_plan_init(&p);
	fdev_plan_need(&p, rg->cend * crow);
	plan_direct_back(h, rg, crow, &p);
	plan_scaleout_back(h, rg, crow, &p);
	err = fdev_plan_finish(&p);
	if (!err && (p.nx || p.na))
		err = fdev_plan_run(c, &p);
	*t_ps = p.nx ? c->last_ps : 0;
	fdev_plan_free(&p);
	return err;
}

static int moe_combine_hier(struct fdev_comm *c, struct fdev_moe_handle *h,
			    const void *const *y, void *const *out)
{
	struct hier_combine hc;
	uint64_t t_up, t_out = 0;
	struct fdev_plan p;
	int err;

	hc.crow = moe_round8(h->cfg.hidden * fdev_dtype_size(moe_comb_dtype(h)));
	hier_regions(h, &hc.rg);
	if (!h->timing && hc.rg.cend * hc.crow > c->ws_bytes)
		return -EMSGSIZE;
	fdev_plan_init(&p);
	fdev_plan_need(&p, hc.rg.cend * hc.crow);
	plan_to_peers(h, &hc.rg, hc.crow, &p);
	err = fdev_plan_finish(&p);
	if (!err && !h->timing)
		moe_partials(c, h, y, hc.rg.partials * hc.crow, hc.crow);
	if (!err)
		err = fdev_plan_run(c, &p);
	t_up = c->last_ps;
	fdev_plan_free(&p);
	if (err)
		return err;
	if (!h->timing)
		err = hier_sum_at_peers(c, h, &hc.rg, hc.crow);
	if (!err)
		err = hier_combine_return(c, h, &hc.rg, hc.crow, &t_out);
	h->st.combine_ps = t_up + t_out;
	if (!err && !h->timing)
		err = moe_sum_at_sources(c, h, out, &hier_combine_steps, &hc);
	return err;
}

const struct moe_mode moe_mode_hier = {
	.dispatch = moe_dispatch_hier,
	.combine = moe_combine_hier,
};
