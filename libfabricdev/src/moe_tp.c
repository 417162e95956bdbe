// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * MoE throughput mode: a token goes once to each rank that owns one of
 * its experts (however many it picks there). Counts are exchanged first,
 * each rank learning only what it needs (tp_exchange()), then the
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

static uint64_t tp_al64(uint64_t v)
{
	return (v + 63) & ~63ULL;
}

/* Bytes of a partial row, combine's. */
static uint64_t tp_crow(const struct fdev_moe_handle *h)
{
	return moe_round8(h->cfg.hidden * fdev_dtype_size(moe_comb_dtype(h)));
}

/*
 * Rank r's workspace, from its own counts alone: @sent records in its
 * send order, @got received in source order. Dispatch: the records to
 * send at 0, the received ones at tp_recv_base(). Combine: the partials
 * of the received records at 0, those that come back at tp_back_base().
 * Bit 0 of the result: the dispatch does not fit @ws bytes; bit 1: the
 * combine does not.
 */
static uint64_t tp_recv_base(const struct fdev_moe_handle *h, uint64_t sent)
{
	return tp_al64(sent * h->rec_size);
}

static uint64_t tp_back_base(const struct fdev_moe_handle *h, uint64_t got)
{
	return tp_al64(got * tp_crow(h));
}

static unsigned int tp_too_big(const struct fdev_moe_handle *h, uint64_t sent,
			       uint64_t got, uint64_t ws)
{
	unsigned int big = 0;

	if (h->timing)
		return 0;
	if (tp_recv_base(h, sent) + got * h->rec_size > ws)
		big |= 1;
	if (tp_back_base(h, got) + sent * tp_crow(h) > ws)
		big |= 2;
	return big;
}

static int tp_tables_alloc(struct fdev_moe_handle *h, unsigned int k0,
			   unsigned int kn)
{
	free(h->tp_recv_at);
	free(h->tp_back_at);
	h->tp_k0 = k0;
	h->tp_kn = kn;
	h->tp_recv_at = malloc((size_t)kn * h->nranks * 8 + 8);
	h->tp_back_at = malloc((size_t)kn * h->nranks * 8 + 8);
	return h->tp_recv_at && h->tp_back_at ? 0 : -ENOMEM;
}

/*
 * Where ranks @k0 .. @k0 + @kn - 1's records and partials go, from the
 * whole count matrix; tp_big over every rank.
 */
static int tp_tables_rows(struct fdev_comm *c, struct fdev_moe_handle *h,
			  unsigned int k0, unsigned int kn)
{
	unsigned int n = h->nranks;
	uint64_t crow = tp_crow(h);
	int err = tp_tables_alloc(h, k0, kn);

	if (err)
		return err;
	h->tp_big = 0;
	for (unsigned int r = 0; r < n; r++) {
		uint64_t sent = 0, got = 0, at, pos = 0;

		for (unsigned int q = 0; q < n; q++) {
			sent += moe_pair(h, r, q);
			got += moe_pair(h, q, r);
		}
		h->tp_big |= tp_too_big(h, sent, got, c->ws_bytes);
		at = tp_recv_base(h, sent);
		for (unsigned int s = 0; s < n; s++) {
			if (s - k0 < kn)
				h->tp_recv_at[(size_t)(s - k0) * n + r] = at;
			at += moe_pair(h, s, r) * h->rec_size;
		}
		at = tp_back_base(h, got);
		for (unsigned int d = 0; d < n; d++) {
			if (d - k0 < kn)
				h->tp_back_at[(size_t)(d - k0) * n + r] =
					at + pos * crow;
			pos += moe_pair(h, r, d);
		}
	}
	return 0;
}

/*
 * Where every rank's records and partials go, from the whole count
 * matrix: where one context posts every rank's transfers (through rank
 * 0's proxy).
 */
int moe_tp_tables_full(struct fdev_comm *c, struct fdev_moe_handle *h)
{
	return tp_tables_rows(c, h, 0, h->nranks);
}

/*
 * The count exchange, each rank learning only what it needs, in two
 * all-to-alls of a few words per pair (DeepEP's notify_dispatch too
 * exchanges per-rank counts). First each source s tells each rank d
 * how many records it sends d and how many it sends ranks before d
 * (where d's partials for them go back in s's workspace); then each d,
 * now knowing its column, tells each s where s's records land in its
 * workspace, where its own partials come back, and whether its layout
 * fits. No rank sees a count it was not sent: a rank's column
 * (h->pair_col) and its own row are all it has (and all a rank of
 * independent processes could have).
 */
enum { TP_C_CNT, TP_C_POS, TP_C_W };			/* first exchange */
enum { TP_O_RECV, TP_O_BACK, TP_O_BIG, TP_O_W };	/* second */

static int tp_exchange(struct fdev_comm *c, struct fdev_moe_handle *h,
		       uint64_t *t_ps)
{
	unsigned int n = h->nranks, nl = h->nlocal;
	uint64_t crow = tp_crow(h), t1 = 0, t2 = 0;
	uint64_t *out, *in1, *in2;
	int err = tp_tables_alloc(h, h->first, nl);

	free(h->pair_col);
	h->pair_col = malloc((size_t)nl * n * 8 + 8);
	out = malloc((size_t)nl * n * TP_O_W * 8 + 8);
	in1 = malloc((size_t)nl * n * TP_C_W * 8 + 8);
	in2 = malloc((size_t)nl * n * TP_O_W * 8 + 8);
	if (!h->pair_col || !out || !in1 || !in2)
		err = -ENOMEM;
	for (unsigned int l = 0; !err && l < nl; l++) {
		const struct moe_rank *mr = &h->ranks[l];
		uint64_t *o = out + (size_t)l * n * TP_C_W, pos = 0;

		for (unsigned int d = 0; d < n; d++) {
			o[d * TP_C_W + TP_C_CNT] = mr->send_cnt[d];
			o[d * TP_C_W + TP_C_POS] = pos;
			pos += mr->send_cnt[d];
		}
	}
	if (!err)
		err = moe_exchange_pairs(c, h, out, TP_C_W, in1, &t1);
	/* Each local rank's column, then what its sources need to know. */
	for (unsigned int l = 0; !err && l < nl; l++) {
		const struct moe_rank *mr = &h->ranks[l];
		const uint64_t *i1 = in1 + (size_t)l * n * TP_C_W;
		uint64_t *o = out + (size_t)l * n * TP_O_W;
		uint64_t sent = 0, got = 0, at, back;
		unsigned int big;

		for (unsigned int s = 0; s < n; s++) {
			h->pair_col[(size_t)l * n + s] =
				i1[s * TP_C_W + TP_C_CNT];
			got += i1[s * TP_C_W + TP_C_CNT];
			sent += mr->send_cnt[s];
		}
		big = tp_too_big(h, sent, got, c->ws_bytes);
		at = tp_recv_base(h, sent);
		back = tp_back_base(h, got);
		for (unsigned int s = 0; s < n; s++) {
			o[s * TP_O_W + TP_O_RECV] = at;
			o[s * TP_O_W + TP_O_BACK] = back;
			o[s * TP_O_W + TP_O_BIG] = big;
			at += i1[s * TP_C_W + TP_C_CNT] * h->rec_size;
		}
	}
	if (!err)
		err = moe_exchange_pairs(c, h, out, TP_O_W, in2, &t2);
	h->tp_big = 0;
	for (unsigned int l = 0; !err && l < nl; l++) {
		const uint64_t *i1 = in1 + (size_t)l * n * TP_C_W;
		const uint64_t *i2 = in2 + (size_t)l * n * TP_O_W;

		for (unsigned int r = 0; r < n; r++) {
			h->tp_recv_at[(size_t)l * n + r] = i2[r * TP_O_W + TP_O_RECV];
			h->tp_back_at[(size_t)l * n + r] =
				i2[r * TP_O_W + TP_O_BACK] +
				i1[r * TP_C_W + TP_C_POS] * crow;
			h->tp_big |= (unsigned int)i2[r * TP_O_W + TP_O_BIG];
		}
	}
	*t_ps = t1 + t2;
	free(out);
	free(in1);
	free(in2);
	return err;
}

static int tp_reuse_counts(struct fdev_moe_handle *h,
			   const struct fdev_moe_handle *reuse)
{
	unsigned int n = h->nranks;
	size_t tab = (size_t)reuse->tp_kn * n * 8;

	for (unsigned int l = 0; l < h->nlocal; l++)
		if (memcmp(h->ranks[l].send_cnt,
			   reuse->pair_tokens + (size_t)(h->first + l) * n,
			   n * 8ULL))
			return -EINVAL;	/* routing differs */
	if (tp_tables_alloc(h, reuse->tp_k0, reuse->tp_kn))
		return -ENOMEM;
	if (reuse->pair_col) {	/* the local rows and columns are all it has */
		free(h->pair_col);
		h->pair_col = malloc((size_t)h->nlocal * n * 8 + 8);
		if (!h->pair_col)
			return -ENOMEM;
		memcpy(h->pair_col, reuse->pair_col, (size_t)h->nlocal * n * 8);
		memcpy(h->pair_tokens + (size_t)h->first * n,
		       reuse->pair_tokens + (size_t)h->first * n,
		       (size_t)h->nlocal * n * 8);
	} else {
		memcpy(h->pair_tokens, reuse->pair_tokens, (size_t)n * n * 8);
	}
	memcpy(h->tp_recv_at, reuse->tp_recv_at, tab);
	memcpy(h->tp_back_at, reuse->tp_back_at, tab);
	h->tp_big = reuse->tp_big;
	return 0;
}

/*
 * The counts and where everything goes: from @reuse, or exchanged over
 * the fabric. Through rank 0's proxy, one context posts every rank's
 * transfers, so its plan needs the whole matrix: an all-gather of every
 * rank's row, as before.
 */
static int tp_counts(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const struct fdev_moe_handle *reuse, uint64_t *t_ps)
{
	unsigned int n = h->nranks;
	uint64_t *rows;
	int err;

	*t_ps = 0;
	if (reuse)
		return tp_reuse_counts(h, reuse);
	rows = malloc(h->nlocal * n * 8ULL);
	if (!rows)
		return -ENOMEM;
	for (unsigned int l = 0; l < h->nlocal; l++) {
		memcpy(rows + (size_t)l * n, h->ranks[l].send_cnt, n * 8ULL);
		memcpy(h->pair_tokens + (size_t)(h->first + l) * n,
		       h->ranks[l].send_cnt, n * 8ULL);
	}
	if (c->proxy) {
		err = moe_gather_counts(c, h, rows, n, h->pair_tokens, t_ps);
		if (!err)
			err = moe_tp_tables_full(c, h);
	} else {
		err = tp_exchange(c, h, t_ps);
	}
	free(rows);
	return err;
}

/*
 * Where a plan names only the local ranks' transfers and some rank is
 * elsewhere, who sends the first local rank something (independent
 * processes have one local rank): for rank d, the ranks s of @by_row 0
 * with pair(s, d) nonzero, of 1 with pair(d, s).
 */
static uint8_t *tp_senders(const struct fdev_moe_handle *h, int by_row)
{
	unsigned int me = h->first;
	uint8_t *senders;

	if (h->tp_kn == h->nranks)
		return NULL;
	senders = calloc(h->nranks, 1);
	for (unsigned int r = 0; senders && r < h->nranks; r++)
		senders[r] = r != me && (by_row ? moe_pair(h, me, r) :
					 moe_pair(h, r, me)) != 0;
	return senders;
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

/*
 * The records, an all-to-all-v from the ranks tp_k0 .. (rotated: rank s
 * first to s + 1, ...), each to where its destination said.
 */
static int tp_send(struct fdev_comm *c, struct fdev_moe_handle *h,
		   const struct fdev_moe_in *in, uint64_t *t_ps)
{
	unsigned int n = h->nranks, k0 = h->tp_k0, kn = h->tp_kn;
	uint64_t *pos, need = 0;
	struct fdev_plan p;
	uint8_t *senders;
	int err = 0;

	*t_ps = 0;
	if (h->tp_big & 1)
		return -EMSGSIZE;
	pos = calloc((size_t)kn * n + 1, 8);
	senders = tp_senders(h, 0);
	if (!pos || (!senders && kn != n)) {
		free(pos);
		free(senders);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < kn; i++) {
		uint64_t at = 0, got = 0;

		for (unsigned int d = 0; d < n; d++) {
			pos[(size_t)i * n + d] = at;
			at += moe_pair(h, k0 + i, d) * h->rec_size;
			got += moe_pair(h, d, k0 + i);
		}
		if (tp_recv_base(h, at / h->rec_size) + got * h->rec_size > need)
			need = tp_recv_base(h, at / h->rec_size) +
			       got * h->rec_size;
	}
	fdev_plan_init(&p);
	p.senders = senders;
	fdev_plan_need(&p, need);
	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int i = 0; i < kn; i++) {
			unsigned int s = k0 + i, d = (s + kk) % n;
			uint64_t so = pos[(size_t)i * n + d];
			uint64_t dof = h->tp_recv_at[(size_t)i * n + d];
			uint64_t len = moe_pair(h, s, d) * h->rec_size;

			if (!kk)
				fdev_plan_act(&p, 0, s, FDEV_ACT_COPY, FDEV_U8,
					      dof, so, len);
			else
				fdev_plan_xfer(&p, 0, s, d, so, dof, len);
		}
	/* Every process runs the step, whether it sends or not. */
	if (!p.nsteps)
		p.nsteps = 1;
	err = fdev_plan_finish(&p);
	if (!err)
		err = fdev_comm_interleave(c, &p);
	if (!err && !h->timing)
		tp_pack(c, h, in, 0);
	if (!err)
		err = fdev_plan_run(c, &p);
	fdev_plan_free(&p);
	free(senders);
	free(pos);
	*t_ps = c->last_ps;
	return err;
}

/* The records, one after the other from the receive area. */
static void tp_find_records(struct fdev_comm *c, const struct fdev_moe_handle *h,
			    unsigned int l, uint8_t **recs, const void *arg)
{
	const struct moe_rank *mr = &h->ranks[l];
	uint64_t sent = 0, at;

	(void)arg;
	for (unsigned int d = 0; d < h->nranks; d++)
		sent += mr->send_cnt[d];
	at = tp_recv_base(h, sent);
	for (uint64_t j = 0; j < mr->recv_tokens; j++)
		recs[j] = fdev_ws_addr(c, l, at + j * h->rec_size);
}

static const struct moe_receive_steps tp_receive_steps = {
	.find = tp_find_records,
};

/* Local rank @l's output rows, from the records in its receive area. */
static int tp_receive(struct fdev_comm *c, struct fdev_moe_handle *h,
		      unsigned int l)
{
	unsigned int rank = h->first + l;

	for (unsigned int s = 0; s < h->nranks; s++)
		if (s != rank)
			h->st.dispatch_bytes += moe_pair(h, rank, s) * h->rec_size;
	return moe_receive(c, h, l, &tp_receive_steps, NULL);
}

static int moe_dispatch_tp(struct fdev_comm *c, struct fdev_moe_handle *h,
			   const struct fdev_moe_in *in,
			   const struct fdev_moe_handle *reuse)
{
	uint64_t t_counts, t_records = 0;
	int err = 0;

	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = moe_route_by_rank(h, &h->ranks[l]);
	if (!err)
		err = tp_counts(c, h, reuse, &t_counts);
	if (err)
		return err;
	err = tp_send(c, h, in, &t_records);
	h->st.dispatch_ps = t_counts + t_records;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = tp_receive(c, h, l);
	return err;
}

/* ------------------------------------------------------------------ */
/* Combine                                                             */

/*
 * Partials go back in the reverse of the dispatch's layout: at rank d,
 * from 0, by source (d's received records, source order); at source s,
 * from tp_back_base(), by destination (s's send order), where
 * tp_back_at says.
 */
struct tp_combine {
	uint64_t crow;			/* bytes of a partial row */
	uint64_t *got_before;		/* [tp_kn][n] rows at d of sources < s */
};

/*
 * Rotated like the dispatch's all-to-all-v (rank d first to d + 1, ...),
 * so the ranks do not all start on rank 0; the ranks tp_k0 .. send.
 */
static int tp_combine_plan(struct fdev_moe_handle *h, struct tp_combine *tc,
			   struct fdev_plan *p)
{
	unsigned int n = h->nranks, k0 = h->tp_k0, kn = h->tp_kn;
	uint64_t crow = tc->crow, need = 0;

	tc->got_before = malloc((size_t)kn * n * 8 + 8);
	if (!tc->got_before)
		return -ENOMEM;
	for (unsigned int i = 0; i < kn; i++) {
		uint64_t got = 0, sent = 0;

		for (unsigned int s = 0; s < n; s++) {
			tc->got_before[(size_t)i * n + s] = got;
			got += moe_pair(h, s, k0 + i);
			sent += moe_pair(h, k0 + i, s);
		}
		if (tp_back_base(h, got) + sent * crow > need)
			need = tp_back_base(h, got) + sent * crow;
	}
	fdev_plan_need(p, need);
	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int i = 0; i < kn; i++) {
			unsigned int d = k0 + i, s = (d + kk) % n;
			uint64_t src = tc->got_before[(size_t)i * n + s] * crow;
			uint64_t dst = h->tp_back_at[(size_t)i * n + s];
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
	/* Every process runs the step, whether it sends or not. */
	if (!p->nsteps)
		p->nsteps = 1;
	return 0;
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
	uint64_t pos = 0, back = tp_back_base(h, mr->recv_tokens);
	int dt = moe_comb_dtype(h);

	for (unsigned int d = 0; d < h->nranks; d++)
		for (uint64_t i = 0; i < mr->send_cnt[d]; i++, pos++)
			moe_add_row(sum + mr->send_tok[pos] * H,
				    fdev_ws_addr(c, l, back + pos * tc->crow),
				    H, dt);
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
	uint8_t *senders = NULL;
	int err = 0;

	tc.crow = tp_crow(h);
	/*
	 * Multicast's handles: its dispatch gathered the whole matrix (for
	 * independent processes, one table of the job's). The local ranks'
	 * rows, as throughput's exchange gives them ([nlocal][n] words, not
	 * [n][n] per process: 8 MiB each at 1024 processes), or every
	 * rank's where rank 0's proxy posts for all.
	 */
	if (!h->tp_back_at)
		err = c->proxy ? moe_tp_tables_full(c, h) :
		      tp_tables_rows(c, h, h->first, h->nlocal);
	if (!err && h->tp_big & 2)
		err = -EMSGSIZE;
	if (!err) {
		senders = tp_senders(h, 1);
		if (!senders && h->tp_kn != h->nranks)
			err = -ENOMEM;
	}
	fdev_plan_init(&p);
	p.senders = senders;
	if (!err)
		err = tp_combine_plan(h, &tc, &p);
	if (!err)
		err = moe_combine_run(c, h, &p, y, out, &tp_combine_steps, &tc);
	fdev_plan_free(&p);
	free(senders);
	free(tc.got_before);
	return err;
}

const struct moe_mode moe_mode_tp = {
	.dispatch = moe_dispatch_tp,
	.combine = moe_combine_tp,
};
