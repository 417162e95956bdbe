// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * MoE dispatch/combine over a communicator.
 *
 * A token travels as one record: [x: H elements][scales: G floats]
 * (padded to 8 bytes)[top-k ids: k int64][top-k weights: k floats],
 * padded to 8 bytes.
 *
 * Throughput: a token goes once to each rank that owns one of its experts
 * (however many it picks there). Counts are exchanged first (every rank's
 * row of tokens-per-destination to every rank), then the records, packed
 * per destination, in one all-to-all-v step. A handle from an earlier
 * dispatch skips the count exchange (its routing must match).
 * Low latency: one record per (token, expert) written straight into the
 * expert's fixed slot [local expert][source][i] of max_tokens, with the
 * counts in the same step: one step, no exchange.
 * Hierarchical: throughput's rows, but a token crosses scale-out once per
 * remote node and is forwarded there over scale-up (see dispatch_hier).
 * Multicast: throughput's rows, but a token leaves its source once, over
 * the source's multicast circuit to every other rank (see dispatch_mc).
 *
 * The receiver groups rows by local expert (source rank, then token
 * order), each expert's block padded to a multiple of cfg->align. Combine
 * sends back, per token, the weighted sum over the rank's experts
 * (throughput) or each expert's row (low latency, weighted at the
 * source), and the source adds them up in fp32.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct moe_rank {
	uint64_t T;
	int64_t *idx;			/* [T][k], failed ranks' experts -> -1 */
	float *w;			/* [T][k] */
	uint64_t *send_cnt;		/* TP [n], LL [n][epr] */
	uint64_t *send_tok;		/* token ids, by destination (, expert) */
	uint64_t *recv_cnt;		/* TP [n], LL [n][epr] */
	uint64_t recv_tokens;		/* TP: records received */
	uint64_t rows;
	uint8_t *x;
	float *scales;
	int64_t *oidx;
	float *ow;
	uint64_t *ecount, *eoff;
	uint64_t *row_src;		/* TP: received record; LL: copy */
	/*
	 * Hierarchical, as forwarding peer p: for each (d in p's node, s a
	 * remote source with p's local index), the positions in s's
	 * scale-out block of the mat[s][d] records that went on to d.
	 */
	uint64_t *hpos;
	uint64_t *hpos_off;		/* [g][n] first entry of (d, s) */
};

struct fdev_moe_handle {
	struct fdev_moe_config cfg;
	unsigned int n, first, nlocal, epr;
	size_t es, rec;			/* element, record bytes */
	uint64_t *mat;			/* TP, hier: [n][n] tokens s -> d */
	uint64_t *nmat;			/* hier: [n][nn] tokens of s for node N */
	uint64_t *mcnt;			/* multicast: [n] tokens s multicasts */
	unsigned int g, nn;		/* hier: ranks per node, nodes */
	struct moe_rank *r;
	struct fdev_moe_stats st;
	int timing;
};

static uint64_t a8(uint64_t v)
{
	return (v + 7) & ~7ULL;
}

int fdev_moe_layout(const int64_t *topk_idx, uint64_t T, unsigned int k,
		    unsigned int num_experts, unsigned int nranks,
		    struct fdev_moe_layout_out *out)
{
	unsigned int epr;

	if ((!topk_idx && T) || !out || !k || !nranks || !num_experts ||
	    num_experts % nranks)
		return -EINVAL;
	epr = num_experts / nranks;
	for (uint64_t i = 0; i < T * k; i++)
		if (topk_idx[i] < -1 || topk_idx[i] >= num_experts)
			return -EINVAL;
	if (out->tokens_per_rank)
		memset(out->tokens_per_rank, 0, nranks * 8);
	if (out->tokens_per_expert)
		memset(out->tokens_per_expert, 0, num_experts * 8ULL);
	if (out->token_in_rank)
		memset(out->token_in_rank, 0, T * nranks);
	for (uint64_t t = 0; t < T; t++)
		for (unsigned int j = 0; j < k; j++) {
			int64_t e = topk_idx[t * k + j];
			unsigned int d;

			if (e < 0)
				continue;
			d = (unsigned int)e / epr;
			if (out->tokens_per_expert)
				out->tokens_per_expert[e]++;
			/* Once per rank, however many of its experts. */
			{
				int seen = 0;

				for (unsigned int q = 0; q < j; q++)
					if (topk_idx[t * k + q] >= 0 &&
					    (unsigned int)topk_idx[t * k + q] / epr == d)
						seen = 1;
				if (seen)
					continue;
			}
			if (out->tokens_per_rank)
				out->tokens_per_rank[d]++;
			if (out->token_in_rank)
				out->token_in_rank[t * nranks + d] = 1;
		}
	return 0;
}

static void rank_free(struct moe_rank *r)
{
	free(r->idx); free(r->w); free(r->send_cnt); free(r->send_tok);
	free(r->recv_cnt); free(r->x); free(r->scales); free(r->oidx);
	free(r->ow); free(r->ecount); free(r->eoff); free(r->row_src);
	free(r->hpos); free(r->hpos_off);
	memset(r, 0, sizeof(*r));
}

void fdev_moe_handle_free(struct fdev_moe_handle *h)
{
	if (!h)
		return;
	for (unsigned int l = 0; h->r && l < h->nlocal; l++)
		rank_free(&h->r[l]);
	free(h->r);
	free(h->mat);
	free(h->nmat);
	free(h->mcnt);
	free(h);
}

static int token_on_rank(const int64_t *idx, unsigned int k, unsigned int epr,
			 unsigned int d)
{
	for (unsigned int j = 0; j < k; j++)
		if (idx[j] >= 0 && (unsigned int)idx[j] / epr == d)
			return 1;
	return 0;
}

/* Where record pieces sit. */
static void *rec_scales(struct fdev_moe_handle *h, uint8_t *rec)
{
	return rec + h->cfg.hidden * h->es;
}

static int64_t *rec_idx(struct fdev_moe_handle *h, uint8_t *rec)
{
	return (int64_t *)(rec + a8(h->cfg.hidden * h->es +
				    h->cfg.scale_groups * 4ULL));
}

static float *rec_w(struct fdev_moe_handle *h, uint8_t *rec)
{
	return (float *)(rec_idx(h, rec) + h->cfg.k);
}

static void pack(struct fdev_moe_handle *h, const struct fdev_moe_in *in,
		 const struct moe_rank *mr, uint64_t t, uint8_t *rec)
{
	const struct fdev_moe_config *cfg = &h->cfg;

	memcpy(rec, (const uint8_t *)in->x + t * cfg->hidden * h->es,
	       cfg->hidden * h->es);
	if (cfg->scale_groups)
		memcpy(rec_scales(h, rec), in->scales + t * cfg->scale_groups,
		       cfg->scale_groups * 4ULL);
	memcpy(rec_idx(h, rec), mr->idx + t * cfg->k, cfg->k * 8ULL);
	memcpy(rec_w(h, rec), mr->w + t * cfg->k, cfg->k * 4ULL);
}

static int check_cfg(const struct fdev_comm *c, const struct fdev_moe_config *cfg)
{
	if (!cfg->num_experts || !cfg->k || cfg->num_experts % c->nranks ||
	    !fdev_dtype_size(cfg->dtype) || cfg->dtype == FDEV_I32 ||
	    cfg->dtype == FDEV_I64 || cfg->mode > FDEV_MOE_MULTICAST ||
	    (cfg->mode == FDEV_MOE_LOW_LATENCY && !cfg->max_tokens) ||
	    cfg->reserved[0] || cfg->reserved[1] || cfg->reserved[2] ||
	    cfg->reserved[3] || (cfg->scale_groups && cfg->dtype != FDEV_FP8_E4M3))
		return -EINVAL;
	return 0;
}

/* Output rows of local rank @l: copies @nc of records, grouped by expert. */
static int build_out(struct fdev_moe_handle *h, struct moe_rank *mr,
		     unsigned int rank, uint8_t *const *recs, uint64_t nrec,
		     const uint32_t *rec_expert_hint)
{
	const struct fdev_moe_config *cfg = &h->cfg;
	unsigned int epr = h->epr, al = cfg->align ? cfg->align : 1;
	uint64_t rows = 0;

	mr->ecount = calloc(epr, 8);
	mr->eoff = calloc(epr, 8);
	if (!mr->ecount || !mr->eoff)
		return -ENOMEM;
	/* Count per local expert. */
	for (uint64_t j = 0; j < nrec; j++) {
		const int64_t *idx = rec_idx(h, recs[j]);

		for (unsigned int q = 0; q < cfg->k; q++) {
			int64_t e = idx[q];

			if (e < 0 || (unsigned int)e / epr != rank)
				continue;
			if (rec_expert_hint && (uint32_t)(e % epr) != rec_expert_hint[j])
				continue;
			mr->ecount[e % epr]++;
		}
	}
	for (unsigned int e = 0; e < epr; e++) {
		mr->eoff[e] = rows;
		rows += (mr->ecount[e] + al - 1) / al * al;
	}
	mr->rows = rows;
	if (h->timing)
		return 0;
	mr->x = calloc(rows ? rows : 1, cfg->hidden * h->es);
	mr->scales = calloc(rows ? rows : 1, (cfg->scale_groups ? cfg->scale_groups : 1) * 4ULL);
	mr->oidx = malloc((rows ? rows : 1) * cfg->k * 8ULL);
	mr->ow = calloc(rows ? rows : 1, cfg->k * 4ULL);
	mr->row_src = malloc((rows ? rows : 1) * 8);
	if (!mr->x || !mr->scales || !mr->oidx || !mr->ow || !mr->row_src)
		return -ENOMEM;
	for (uint64_t i = 0; i < rows * cfg->k; i++)
		mr->oidx[i] = -1;
	for (uint64_t i = 0; i < rows; i++)
		mr->row_src[i] = UINT64_MAX;	/* padding */
	{
		uint64_t *fill = calloc(epr, 8);

		if (!fill)
			return -ENOMEM;
		for (unsigned int e = 0; e < epr; e++)
			for (uint64_t j = 0; j < nrec; j++) {
				const int64_t *idx = rec_idx(h, recs[j]);
				int hit = 0;

				if (rec_expert_hint && rec_expert_hint[j] != e)
					continue;
				for (unsigned int q = 0; q < cfg->k; q++)
					if (idx[q] == (int64_t)(rank * epr + e))
						hit = 1;
				if (!hit)
					continue;
				{
					uint64_t row = mr->eoff[e] + fill[e]++;

					memcpy(mr->x + row * cfg->hidden * h->es,
					       recs[j], cfg->hidden * h->es);
					if (cfg->scale_groups)
						memcpy(mr->scales + row * cfg->scale_groups,
						       rec_scales(h, recs[j]),
						       cfg->scale_groups * 4ULL);
					memcpy(mr->oidx + row * cfg->k, idx, cfg->k * 8ULL);
					memcpy(mr->ow + row * cfg->k, rec_w(h, recs[j]),
					       cfg->k * 4ULL);
					mr->row_src[row] = j;
				}
			}
		free(fill);
	}
	return 0;
}

/* Timing only: the rows are known from the layout, and no record exists. */
static int timing_rows(const struct fdev_moe_handle *h, struct moe_rank *mr)
{
	mr->ecount = calloc(h->epr, 8);
	mr->eoff = calloc(h->epr, 8);
	return mr->ecount && mr->eoff ? 0 : -ENOMEM;
}

/*
 * Rank @d's rows from each source, from the count matrix (tokens s -> d),
 * into mr->recv_cnt, and their sum into mr->recv_tokens; timing only,
 * also its (empty) row tables, and then the caller is done with it.
 */
static int take_recv_counts(const struct fdev_moe_handle *h,
			    struct moe_rank *mr, unsigned int d)
{
	uint64_t nrec = 0;

	mr->recv_cnt = calloc(h->n, 8);
	if (!mr->recv_cnt)
		return -ENOMEM;
	for (unsigned int s = 0; s < h->n; s++) {
		mr->recv_cnt[s] = h->mat[(size_t)s * h->n + d];
		nrec += mr->recv_cnt[s];
	}
	mr->recv_tokens = nrec;
	return h->timing ? timing_rows(h, mr) : 0;
}

static int dispatch_tp(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const struct fdev_moe_in *in,
		       const struct fdev_moe_handle *reuse)
{
	unsigned int n = h->n;
	uint64_t t0_ps = 0;
	int err;

	/* Sender side: which tokens go where. */
	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		uint64_t pos = 0;

		mr->send_cnt = calloc(n, 8);
		mr->send_tok = malloc((mr->T * n + 1) * 8);
		if (!mr->send_cnt || !mr->send_tok)
			return -ENOMEM;
		for (unsigned int d = 0; d < n; d++)
			for (uint64_t t = 0; t < mr->T; t++)
				if (token_on_rank(mr->idx + t * h->cfg.k, h->cfg.k,
						  h->epr, d)) {
					mr->send_tok[pos++] = t;
					mr->send_cnt[d]++;
				}
	}
	if (reuse) {
		for (unsigned int l = 0; l < h->nlocal; l++)
			if (memcmp(h->r[l].send_cnt,
				   reuse->mat + (h->first + l) * n, n * 8))
				return -EINVAL;	/* routing differs */
		memcpy(h->mat, reuse->mat, n * n * 8ULL);
	} else {
		uint64_t *rows = malloc(h->nlocal * n * 8ULL);

		if (!rows)
			return -ENOMEM;
		for (unsigned int l = 0; l < h->nlocal; l++)
			memcpy(rows + l * n, h->r[l].send_cnt, n * 8);
		/* The count exchange, over the fabric. */
		{
			struct fdev_coll_layout lo;
			struct fdev_plan p;

			fdev_plan_init(&p);
			err = fdev_plan_all_gather(&p, n, n * 8ULL,
						   FDEV_ALGO_DIRECT, &lo);
			if (!err && !h->timing) {
				if (p.ws_need > c->ws_bytes)
					err = -EMSGSIZE;
				for (unsigned int l = 0; !err && l < h->nlocal; l++)
					memcpy(fdev_ws_addr(c, l, 0), rows + l * n,
					       n * 8ULL);
			}
			if (!err)
				err = fdev_plan_run(c, &p);
			if (!err && !h->timing)
				memcpy(h->mat, fdev_ws_addr(c, 0, lo.recv_off),
				       n * n * 8ULL);
			fdev_plan_free(&p);
			t0_ps = c->last_ps;
		}
		if (!err && h->timing)
			for (unsigned int l = 0; l < h->nlocal; l++)
				memcpy(h->mat + (h->first + l) * n, rows + l * n,
				       n * 8ULL);
		free(rows);
		if (err)
			return err;
	}
	/* The records. */
	{
		struct fdev_coll_layout lo;
		struct fdev_plan p;
		uint64_t *cnt = malloc(n * n * 8ULL);

		if (!cnt)
			return -ENOMEM;
		for (unsigned int i = 0; i < n * n; i++)
			cnt[i] = h->mat[i] * h->rec;
		fdev_plan_init(&p);
		err = fdev_plan_all_to_all_v(&p, n, cnt, FDEV_ALGO_DIRECT, &lo);
		free(cnt);
		if (!err && !h->timing && p.ws_need > c->ws_bytes)
			err = -EMSGSIZE;
		if (!err && !h->timing)
			for (unsigned int l = 0; l < h->nlocal; l++) {
				const struct fdev_moe_in *li = &in[l];
				struct moe_rank *mr = &h->r[l];
				uint8_t *base = fdev_ws_addr(c, l, lo.send_off);
				uint64_t pos = 0;

				for (unsigned int d = 0; d < n; d++)
					for (uint64_t i = 0; i < mr->send_cnt[d]; i++, pos++)
						pack(h, li, mr, mr->send_tok[pos],
						     base + pos * h->rec);
			}
		if (!err)
			err = fdev_plan_run(c, &p);
		fdev_plan_free(&p);
		h->st.dispatch_ps = t0_ps + c->last_ps;
		if (err)
			return err;
		for (unsigned int l = 0; l < h->nlocal; l++) {
			struct moe_rank *mr = &h->r[l];
			unsigned int rank = h->first + l;
			uint8_t **recs;
			uint64_t nrec;

			for (unsigned int s = 0; s < n; s++)
				if (s != rank)
					h->st.dispatch_bytes += h->mat[rank * n + s] * h->rec;
			err = take_recv_counts(h, mr, rank);
			if (err)
				return err;
			if (h->timing)
				continue;
			nrec = mr->recv_tokens;
			recs = malloc((nrec ? nrec : 1) * sizeof(*recs));
			if (!recs)
				return -ENOMEM;
			for (uint64_t j = 0; j < nrec; j++)
				recs[j] = fdev_ws_addr(c, l, lo.recv_off + j * h->rec);
			err = build_out(h, mr, rank, recs, nrec, NULL);
			free(recs);
			if (err)
				return err;
		}
	}
	return 0;
}

/*
 * Multicast: the source packs, in token order, the records of its tokens
 * that some other rank owns an expert of (mcnt[s] of them) into its own
 * slab, and writes the slab once over its circuit; it lands in the same
 * slab of every other rank (the circuit binds each workspace at 0). A
 * receiver keeps, in slab order, the records routed to it: exactly
 * throughput's block from that source, so the rows, their order and
 * combine are throughput's. Its own tokens never leave it.
 *
 * The count exchange carries throughput's row of tokens per destination
 * and mcnt. Workspace: slab s at mc_slab_off(s), sum of mcnt records.
 */
static uint64_t mc_slab_off(const struct fdev_moe_handle *h, unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = 0; q < s; q++)
		o += h->mcnt[q];
	return o * h->rec;
}

static int token_leaves(const struct fdev_moe_handle *h, const int64_t *idx,
			unsigned int s)
{
	for (unsigned int j = 0; j < h->cfg.k; j++)
		if (idx[j] >= 0 && (unsigned int)idx[j] / h->epr != s)
			return 1;
	return 0;
}

static int dispatch_mc(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const struct fdev_moe_in *in,
		       const struct fdev_moe_handle *reuse)
{
	unsigned int n = h->n, w = n + 1, k = h->cfg.k;
	uint64_t t0_ps = 0, *mc = NULL;
	struct fdev_plan p;
	int err = 0;

	/*
	 * One process must hold every rank's context: the circuit's owner
	 * submits, and every destination binds it. A circuit to an excluded
	 * rank would still carry its copy.
	 */
	if (c->multi && !c->proxy)
		return -EOPNOTSUPP;
	if (c->failed[0] | c->failed[1] | c->failed[2] | c->failed[3])
		return -ENOLINK;
	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int s = h->first + l;
		uint64_t pos = 0;

		mr->send_cnt = calloc(n, 8);
		mr->send_tok = malloc((mr->T * n + 1) * 8);
		if (!mr->send_cnt || !mr->send_tok)
			return -ENOMEM;
		for (unsigned int d = 0; d < n; d++)
			for (uint64_t t = 0; t < mr->T; t++)
				if (token_on_rank(mr->idx + t * k, k, h->epr, d)) {
					mr->send_tok[pos++] = t;
					mr->send_cnt[d]++;
				}
		for (uint64_t t = 0; t < mr->T; t++)
			h->mcnt[s] += token_leaves(h, mr->idx + t * k, s);
	}
	if (reuse) {
		for (unsigned int l = 0; l < h->nlocal; l++) {
			unsigned int s = h->first + l;

			if (memcmp(h->r[l].send_cnt, reuse->mat + s * n, n * 8) ||
			    h->mcnt[s] != reuse->mcnt[s])
				return -EINVAL;	/* routing differs */
		}
		memcpy(h->mat, reuse->mat, n * n * 8ULL);
		memcpy(h->mcnt, reuse->mcnt, n * 8ULL);
	} else {
		struct fdev_coll_layout lo;

		fdev_plan_init(&p);
		err = fdev_plan_all_gather(&p, n, w * 8ULL, FDEV_ALGO_DIRECT, &lo);
		if (!err && !h->timing && p.ws_need > c->ws_bytes)
			err = -EMSGSIZE;
		for (unsigned int l = 0; !err && !h->timing && l < h->nlocal; l++) {
			uint64_t *row = fdev_ws_addr(c, l, 0);

			memcpy(row, h->r[l].send_cnt, n * 8ULL);
			row[n] = h->mcnt[h->first + l];
		}
		if (!err)
			err = fdev_plan_run(c, &p);
		t0_ps = c->last_ps;
		if (!err && !h->timing) {
			mc = malloc((size_t)n * w * 8);
			if (!mc)
				err = -ENOMEM;
			else
				memcpy(mc, fdev_ws_addr(c, 0, lo.recv_off),
				       (size_t)n * w * 8);
		}
		fdev_plan_free(&p);
		if (err) {
			free(mc);
			return err;
		}
		if (mc) {
			for (unsigned int s = 0; s < n; s++) {
				memcpy(h->mat + s * n, mc + s * w, n * 8ULL);
				h->mcnt[s] = mc[s * w + n];
			}
			free(mc);
		} else {
			/* Timing only: the counts need not travel. */
			for (unsigned int l = 0; l < h->nlocal; l++)
				memcpy(h->mat + (h->first + l) * n,
				       h->r[l].send_cnt, n * 8ULL);
		}
	}
	/* The slabs, one multicast per source. */
	fdev_plan_init(&p);
	fdev_plan_need(&p, mc_slab_off(h, n));
	for (unsigned int s = 0; s < n; s++)
		if (h->mcnt[s])
			fdev_plan_mcast(&p, 0, s, n, mc_slab_off(h, s),
					mc_slab_off(h, s), h->mcnt[s] * h->rec);
	err = fdev_plan_finish(&p);
	if (!err && !h->timing && p.ws_need > c->ws_bytes)
		err = -EMSGSIZE;
	for (unsigned int l = 0; !err && !h->timing && l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int s = h->first + l;
		uint8_t *slab = fdev_ws_addr(c, l, mc_slab_off(h, s));

		for (uint64_t t = 0; t < mr->T; t++)
			if (token_leaves(h, mr->idx + t * k, s)) {
				pack(h, &in[l], mr, t, slab);
				slab += h->rec;
			}
	}
	if (!err)
		err = fdev_plan_run(c, &p);
	fdev_plan_free(&p);
	h->st.dispatch_ps = t0_ps + c->last_ps;
	if (err)
		return err;
	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int d = h->first + l;
		uint64_t nrec, j = 0, own = 0;
		uint8_t **recs, *self = NULL;

		h->st.dispatch_bytes += h->mcnt[d] * h->rec;
		err = take_recv_counts(h, mr, d);
		if (err)
			return err;
		if (h->timing)
			continue;
		nrec = mr->recv_tokens;
		/* Its own tokens: packed here, as throughput's self block. */
		self = malloc((mr->recv_cnt[d] ? mr->recv_cnt[d] : 1) * h->rec);
		recs = malloc((nrec ? nrec : 1) * sizeof(*recs));
		if (!self || !recs) {
			free(self);
			free(recs);
			return -ENOMEM;
		}
		for (unsigned int s = 0; s < n && !err; s++) {
			uint64_t got = 0;

			if (s == d) {
				for (uint64_t t = 0; t < mr->T; t++)
					if (token_on_rank(mr->idx + t * k, k, h->epr, d)) {
						pack(h, &in[l], mr, t, self + own * h->rec);
						recs[j++] = self + own++ * h->rec;
					}
				continue;
			}
			for (uint64_t i = 0; i < h->mcnt[s]; i++) {
				uint8_t *rec = fdev_ws_addr(c, l, mc_slab_off(h, s) +
							    i * h->rec);

				if (!token_on_rank(rec_idx(h, rec), k, h->epr, d))
					continue;
				if (++got > mr->recv_cnt[s])
					break;
				recs[j++] = rec;
			}
			if (got != mr->recv_cnt[s])
				err = -EPROTO;	/* the slab disagrees with the counts */
		}
		if (!err && own != mr->recv_cnt[d])
			err = -EPROTO;
		if (!err)
			err = build_out(h, mr, d, recs, nrec, NULL);
		free(recs);
		free(self);
		if (err)
			return err;
	}
	return 0;
}

/* LL areas: counts at 0 ([n][epr] words), slots after. */
static uint64_t ll_slot_off(struct fdev_moe_handle *h, unsigned int e,
			    unsigned int s, uint64_t i)
{
	uint64_t base = a8(h->n * (uint64_t)h->epr * 8) + 64;

	return base + (((uint64_t)e * h->n + s) * h->cfg.max_tokens + i) * h->rec;
}

static uint64_t ll_send_base(struct fdev_moe_handle *h)
{
	return ll_slot_off(h, h->epr, 0, 0);
}

static int dispatch_ll(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const struct fdev_moe_in *in)
{
	unsigned int n = h->n, epr = h->epr, E = h->cfg.num_experts;
	uint64_t sb = ll_send_base(h), need;
	struct fdev_plan p;
	int err = 0;

	/* Its plan names only this process's transfers. */
	if (c->proxy)
		return -EOPNOTSUPP;
	for (unsigned int l = 0; l < h->nlocal; l++)
		if (h->r[l].T > h->cfg.max_tokens)
			return -EOVERFLOW;
	fdev_plan_init(&p);
	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int s = h->first + l;
		uint64_t pos = 0, cnt_off = sb + E * (uint64_t)h->cfg.max_tokens * h->rec;

		mr->send_cnt = calloc(E, 8);
		mr->send_tok = malloc((mr->T * h->cfg.k + 1) * 8);
		if (!mr->send_cnt || !mr->send_tok) {
			err = -ENOMEM;
			break;
		}
		for (unsigned int e = 0; e < E; e++) {
			uint64_t first = pos;

			for (uint64_t t = 0; t < mr->T; t++)
				for (unsigned int q = 0; q < h->cfg.k; q++)
					if (mr->idx[t * h->cfg.k + q] == (int64_t)e) {
						mr->send_tok[pos++] = t;
						break;
					}
			mr->send_cnt[e] = pos - first;
			if (!h->timing)
				for (uint64_t i = first; i < pos; i++)
					pack(h, &in[l], mr, mr->send_tok[i],
					     fdev_ws_addr(c, l, sb + i * h->rec));
			fdev_plan_xfer(&p, 0, s, e / epr, sb + first * h->rec,
				       ll_slot_off(h, e % epr, s, 0),
				       (pos - first) * h->rec);
			if (e / epr != s)
				h->st.dispatch_bytes += (pos - first) * h->rec;
		}
		/* Counts for each destination: its experts' slice. */
		if (!h->timing)
			memcpy(fdev_ws_addr(c, l, cnt_off), mr->send_cnt, E * 8ULL);
		for (unsigned int d = 0; d < n; d++)
			fdev_plan_xfer(&p, 0, s, d, cnt_off + d * epr * 8ULL,
				       (uint64_t)s * epr * 8, epr * 8ULL);
	}
	need = sb + E * (uint64_t)h->cfg.max_tokens * h->rec + E * 8ULL;
	fdev_plan_need(&p, need);
	if (!err)
		err = fdev_plan_finish(&p);
	if (!err && !h->timing && need > c->ws_bytes)
		err = -EMSGSIZE;
	if (!err) {
		/* Self-sends are xfers too: the host copy does them. */
		err = fdev_plan_run(c, &p);
	}
	h->st.dispatch_ps = c->last_ps;
	fdev_plan_free(&p);
	if (err)
		return err;
	for (unsigned int l = 0; l < h->nlocal && !err; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int rank = h->first + l;
		uint64_t nrec = 0, j = 0;
		uint8_t **recs;
		uint32_t *hint;

		mr->recv_cnt = calloc((size_t)n * epr, 8);
		if (!mr->recv_cnt)
			return -ENOMEM;
		if (h->timing) {
			if (timing_rows(h, mr))
				return -ENOMEM;
			continue;
		}
		memcpy(mr->recv_cnt, fdev_ws_addr(c, l, 0), (size_t)n * epr * 8);
		for (unsigned int i = 0; i < n * epr; i++) {
			if (mr->recv_cnt[i] > h->cfg.max_tokens)
				return -EPROTO;
			nrec += mr->recv_cnt[i];
		}
		recs = malloc((nrec ? nrec : 1) * sizeof(*recs));
		hint = malloc((nrec ? nrec : 1) * sizeof(*hint));
		if (!recs || !hint) {
			free(recs);
			free(hint);
			return -ENOMEM;
		}
		/* Expert-major, then source, then arrival. */
		for (unsigned int e = 0; e < epr; e++)
			for (unsigned int s = 0; s < n; s++)
				for (uint64_t i = 0; i < mr->recv_cnt[s * epr + e]; i++) {
					recs[j] = fdev_ws_addr(c, l, ll_slot_off(h, e, s, i));
					hint[j++] = e;
				}
		mr->recv_tokens = nrec;
		err = build_out(h, mr, rank, recs, nrec, hint);
		free(recs);
		free(hint);
	}
	return err;
}

/*
 * Hierarchical (DeepEP's internode "normal" kernels): a token goes over
 * scale-out at most once per remote node, to the peer there with the
 * source's local index, which forwards it over scale-up to the ranks of
 * its node that own the token's experts; ranks of the source's own node
 * get it directly over scale-up, in the same step as the scale-out.
 * Three plans: the count exchange (tokens per rank and per node), the
 * scale-out with the direct scale-up, the forwarding. Between the last
 * two each peer packs what it forwards from the records it received.
 * The receiver sees the same rows, in the same order, as throughput.
 * Combine reverses it: partials to the forwarding peer (or directly to
 * a source in the same node), which sums them per token, then one row
 * per (token, node) back over scale-out.
 *
 * All offsets follow from mat and nmat, so every process builds the
 * same plans. Workspace regions (in records or rows), each as large as
 * the largest rank's share:
 *	dispatch  A send | RD direct in | RO scale-out in | F forward out |
 *		  RF forwarded in
 *	combine   P partials | CR direct in | G at the peer | O summed |
 *		  CO scale-out in
 */
static unsigned int h_node(const struct fdev_moe_handle *h, unsigned int r)
{
	return r / h->g;
}

/* s is a remote source whose tokens rank p forwards (same local index). */
static int h_fwd_src(const struct fdev_moe_handle *h, unsigned int p,
		     unsigned int s)
{
	return s % h->g == p % h->g && h_node(h, s) != h_node(h, p);
}

static uint64_t h_mat(const struct fdev_moe_handle *h, unsigned int s,
		      unsigned int d)
{
	return h->mat[(size_t)s * h->n + d];
}

static uint64_t h_nmat(const struct fdev_moe_handle *h, unsigned int s,
		       unsigned int N)
{
	return h->nmat[(size_t)s * h->nn + N];
}

static int token_on_node(const struct fdev_moe_handle *h, const int64_t *idx,
			 unsigned int N)
{
	for (unsigned int j = 0; j < h->cfg.k; j++)
		if (idx[j] >= 0 && (unsigned int)idx[j] / h->epr / h->g == N)
			return 1;
	return 0;
}

/* Offset in s's send area (A, or CR/CO at s) of its block for d / node N. */
static uint64_t h_direct_off(const struct fdev_moe_handle *h, unsigned int s,
			     unsigned int d)
{
	uint64_t o = 0;

	for (unsigned int q = h_node(h, s) * h->g; q < d; q++)
		o += h_mat(h, s, q);
	return o;
}

static uint64_t h_out_off(const struct fdev_moe_handle *h, unsigned int s,
			  unsigned int N)
{
	uint64_t o = 0;

	for (unsigned int M = 0; M < N; M++)
		if (M != h_node(h, s))
			o += h_nmat(h, s, M);
	return o;
}

/* RD at d: block of source s (same node). */
static uint64_t h_rd_off(const struct fdev_moe_handle *h, unsigned int d,
			 unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = h_node(h, d) * h->g; q < s; q++)
		o += h_mat(h, q, d);
	return o;
}

/* RO (and O) at p: block of remote source s. */
static uint64_t h_ro_off(const struct fdev_moe_handle *h, unsigned int p,
			 unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = 0; q < s; q++)
		if (h_fwd_src(h, p, q))
			o += h_nmat(h, q, h_node(h, p));
	return o;
}

/* F at p (and G at p, which also holds d == p): block (d, s). */
static uint64_t h_f_off(const struct fdev_moe_handle *h, unsigned int p,
			unsigned int d, unsigned int s, int with_self)
{
	uint64_t o = 0;

	for (unsigned int q = h_node(h, p) * h->g; q <= d; q++) {
		if (q == p && !with_self)
			continue;
		for (unsigned int r = 0; r < h->n; r++)
			if (h_fwd_src(h, p, r) && (q < d || r < s))
				o += h_mat(h, r, q);
	}
	return o;
}

/* RF at d: block forwarded by p, and within it source s. */
static uint64_t h_rf_off(const struct fdev_moe_handle *h, unsigned int d,
			 unsigned int p, unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = h_node(h, d) * h->g; q <= p; q++) {
		if (q == d)
			continue;
		for (unsigned int r = 0; r < h->n; r++)
			if (h_fwd_src(h, q, r) && (q < p || r < s))
				o += h_mat(h, r, d);
	}
	return o;
}

struct h_regions {
	uint64_t a, rd, ro, f, rf, end;		/* dispatch, in records */
	uint64_t p, cr, gg, o, co, cend;	/* combine, in rows */
};

static void h_regions(const struct fdev_moe_handle *h, struct h_regions *rg)
{
	uint64_t ma = 0, mrd = 0, mro = 0, mf = 0, mrf = 0, mp = 0, mg = 0;

	for (unsigned int r = 0; r < h->n; r++) {
		unsigned int nd = h_node(h, r);
		uint64_t a = h_out_off(h, r, h->nn) + h_direct_off(h, r, (nd + 1) * h->g);
		uint64_t rd = h_rd_off(h, r, (nd + 1) * h->g);
		uint64_t ro = h_ro_off(h, r, h->n);
		uint64_t f = h_f_off(h, r, (nd + 1) * h->g - 1, h->n, 0);
		uint64_t gg = h_f_off(h, r, (nd + 1) * h->g - 1, h->n, 1);
		uint64_t rf = h_rf_off(h, r, (nd + 1) * h->g - 1, h->n);
		uint64_t recv = 0;

		for (unsigned int s = 0; s < h->n; s++)
			recv += h_mat(h, s, r);
		ma = a > ma ? a : ma;
		mrd = rd > mrd ? rd : mrd;
		mro = ro > mro ? ro : mro;
		mf = f > mf ? f : mf;
		mrf = rf > mrf ? rf : mrf;
		mp = recv > mp ? recv : mp;
		mg = gg > mg ? gg : mg;
	}
	rg->a = 0;
	rg->rd = rg->a + ma;
	rg->ro = rg->rd + mrd;
	rg->f = rg->ro + mro;
	rg->rf = rg->f + mf;
	rg->end = rg->rf + mrf;
	/* combine: CR is at most A's direct part, O and CO at most RO / A */
	rg->p = 0;
	rg->cr = rg->p + mp;
	rg->gg = rg->cr + ma;
	rg->o = rg->gg + mg;
	rg->co = rg->o + mro;
	rg->cend = rg->co + ma;
}

/* Tokens per rank and per node of every rank, exchanged over the fabric. */
static int h_counts(struct fdev_comm *c, struct fdev_moe_handle *h,
		    const struct fdev_moe_handle *reuse, uint64_t *t_ps)
{
	unsigned int n = h->n, nn = h->nn, w = n + nn;
	uint64_t *rows;
	int err = 0;

	*t_ps = 0;
	rows = calloc((size_t)h->nlocal * w + 1, 8);
	if (!rows)
		return -ENOMEM;
	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		uint64_t pos = 0;

		mr->send_cnt = calloc(n, 8);
		mr->send_tok = malloc((mr->T * n + 1) * 8);
		if (!mr->send_cnt || !mr->send_tok) {
			free(rows);
			return -ENOMEM;
		}
		for (unsigned int d = 0; d < n; d++)
			for (uint64_t t = 0; t < mr->T; t++)
				if (token_on_rank(mr->idx + t * h->cfg.k, h->cfg.k,
						  h->epr, d)) {
					mr->send_tok[pos++] = t;
					mr->send_cnt[d]++;
				}
		memcpy(rows + (size_t)l * w, mr->send_cnt, n * 8ULL);
		for (uint64_t t = 0; t < mr->T; t++)
			for (unsigned int N = 0; N < nn; N++)
				rows[(size_t)l * w + n + N] +=
					token_on_node(h, mr->idx + t * h->cfg.k, N);
	}
	if (reuse) {
		for (unsigned int l = 0; l < h->nlocal && !err; l++) {
			unsigned int r = h->first + l;

			if (memcmp(rows + (size_t)l * w, reuse->mat + (size_t)r * n, n * 8ULL) ||
			    memcmp(rows + (size_t)l * w + n, reuse->nmat + (size_t)r * nn,
				   nn * 8ULL))
				err = -EINVAL;	/* routing differs */
		}
		if (!err) {
			memcpy(h->mat, reuse->mat, (size_t)n * n * 8);
			memcpy(h->nmat, reuse->nmat, (size_t)n * nn * 8);
		}
		free(rows);
		return err;
	}
	{
		struct fdev_coll_layout lo;
		struct fdev_plan p;

		fdev_plan_init(&p);
		err = fdev_plan_all_gather(&p, n, w * 8ULL, FDEV_ALGO_DIRECT, &lo);
		if (!err && !h->timing) {
			if (p.ws_need > c->ws_bytes)
				err = -EMSGSIZE;
			for (unsigned int l = 0; !err && l < h->nlocal; l++)
				memcpy(fdev_ws_addr(c, l, 0), rows + (size_t)l * w, w * 8ULL);
		}
		if (!err)
			err = fdev_plan_run(c, &p);
		for (unsigned int r = 0; !err && r < n; r++) {
			const uint64_t *row;

			if (h->timing && (r < h->first || r >= h->first + h->nlocal))
				continue;	/* nothing moved: only local rows */
			row = h->timing ? rows + (size_t)(r - h->first) * w :
				fdev_ws_addr(c, 0, lo.recv_off + (uint64_t)r * w * 8);
			memcpy(h->mat + (size_t)r * n, row, n * 8ULL);
			memcpy(h->nmat + (size_t)r * nn, row + n, nn * 8ULL);
		}
		fdev_plan_free(&p);
		*t_ps = c->last_ps;
	}
	free(rows);
	return err;
}

static int dispatch_hier(struct fdev_comm *c, struct fdev_moe_handle *h,
			 const struct fdev_moe_in *in,
			 const struct fdev_moe_handle *reuse)
{
	unsigned int n = h->n, g = h->g;
	uint64_t rec = h->rec, t_cnt, t_out = 0, t_fwd = 0;
	struct h_regions rg;
	struct fdev_plan p;
	int err;

	/* An excluded rank cannot forward for its node: take throughput. */
	for (unsigned int r = 0; r < n; r++)
		if (fdev_rank_failed(c, r))
			return -ENOLINK;
	err = h_counts(c, h, reuse, &t_cnt);
	if (err)
		return err;
	h_regions(h, &rg);
	if (!h->timing && rg.end * rec > c->ws_bytes)
		return -EMSGSIZE;

	/* Scale-out to the peers, and scale-up within the node. */
	fdev_plan_init(&p);
	fdev_plan_need(&p, rg.end * rec);
	/* Rotated: rank s first to the next in its node and the next node. */
	for (unsigned int kk = 0; kk < (g > h->nn ? g : h->nn); kk++)
		for (unsigned int s = 0; s < n; s++) {
			unsigned int ns = h_node(h, s);
			int local = s >= h->first && s < h->first + h->nlocal;

			if (kk < g) {
				unsigned int d = ns * g + (s % g + kk) % g;
				uint64_t cnt = h_mat(h, s, d);
				uint64_t so = (rg.a + h_direct_off(h, s, d)) * rec;
				uint64_t dof = (rg.rd + h_rd_off(h, d, s)) * rec;

				if (cnt && d == s)
					fdev_plan_act(&p, 0, s, FDEV_ACT_COPY, FDEV_U8, dof, so,
						      cnt * rec);
				if (cnt && d != s) {
					fdev_plan_xfer(&p, 0, s, d, so, dof, cnt * rec);
					if (local)
						h->st.dispatch_bytes += cnt * rec;
				}
			}
			if (kk && kk < h->nn) {
				unsigned int N = (ns + kk) % h->nn;
				uint64_t cnt = h_nmat(h, s, N);
				unsigned int pr = N * g + s % g;

				if (!cnt)
					continue;
				fdev_plan_xfer(&p, 0, s, pr,
					       (rg.a + h_direct_off(h, s, (ns + 1) * g) +
						h_out_off(h, s, N)) * rec,
					       (rg.ro + h_ro_off(h, pr, s)) * rec, cnt * rec);
				if (local)
					h->st.dispatch_bytes += cnt * rec;
			}
		}
	err = fdev_plan_finish(&p);
	for (unsigned int l = 0; !err && !h->timing && l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int s = h->first + l, ns = h_node(h, s);
		uint8_t *base = fdev_ws_addr(c, l, rg.a * rec);
		uint64_t pos = 0;

		for (unsigned int d = ns * g; d < (ns + 1) * g; d++)
			for (uint64_t t = 0; t < mr->T; t++)
				if (token_on_rank(mr->idx + t * h->cfg.k, h->cfg.k, h->epr, d))
					pack(h, &in[l], mr, t, base + pos++ * rec);
		for (unsigned int N = 0; N < h->nn; N++)
			for (uint64_t t = 0; N != ns && t < mr->T; t++)
				if (token_on_node(h, mr->idx + t * h->cfg.k, N))
					pack(h, &in[l], mr, t, base + pos++ * rec);
	}
	if (!err)
		err = fdev_plan_run(c, &p);
	t_out = c->last_ps;
	fdev_plan_free(&p);
	if (err)
		return err;

	/* Each peer: what it received, per rank of its node, in order. */
	for (unsigned int l = 0; l < h->nlocal && !err; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int pr = h->first + l, np = h_node(h, pr);
		uint64_t total = h_f_off(h, pr, (np + 1) * g - 1, n, 1), pos = 0;

		mr->hpos = malloc((total + 1) * 8);
		mr->hpos_off = calloc((size_t)g * n + 1, 8);
		if (!mr->hpos || !mr->hpos_off)
			return -ENOMEM;
		for (unsigned int d = np * g; d < (np + 1) * g; d++)
			for (unsigned int s = 0; s < n; s++) {
				uint64_t cnt = 0, nr;

				if (!h_fwd_src(h, pr, s))
					continue;
				mr->hpos_off[(size_t)(d % g) * n + s] = pos;
				if (h->timing)
					continue;
				nr = h_nmat(h, s, np);
				for (uint64_t i = 0; i < nr; i++) {
					uint8_t *rp = fdev_ws_addr(c, l,
						(rg.ro + h_ro_off(h, pr, s) + i) * rec);

					if (token_on_rank(rec_idx(h, rp), h->cfg.k, h->epr, d)) {
						if (cnt++ >= h_mat(h, s, d))
							return -EPROTO;
						mr->hpos[pos++] = i;
					}
				}
				if (cnt != h_mat(h, s, d))
					return -EPROTO;
				/* forward, unless it is the peer's own */
				if (d == pr)
					continue;
				for (uint64_t i = 0; i < cnt; i++)
					memcpy(fdev_ws_addr(c, l, (rg.f + h_f_off(h, pr, d, s, 0) + i) * rec),
					       fdev_ws_addr(c, l, (rg.ro + h_ro_off(h, pr, s) +
								   mr->hpos[pos - cnt + i]) * rec),
					       rec);
			}
	}
	/* Forward over scale-up. */
	fdev_plan_init(&p);
	fdev_plan_need(&p, rg.end * rec);
	for (unsigned int kk = 1; kk < g; kk++)
		for (unsigned int pr = 0; pr < n; pr++) {
			unsigned int d = h_node(h, pr) * g + (pr % g + kk) % g;
			uint64_t a = h_f_off(h, pr, d, 0, 0), b = h_f_off(h, pr, d, n, 0);

			if (b == a)
				continue;
			fdev_plan_xfer(&p, 0, pr, d, (rg.f + a) * rec,
				       (rg.rf + h_rf_off(h, d, pr, 0)) * rec, (b - a) * rec);
			if (pr >= h->first && pr < h->first + h->nlocal)
				h->st.dispatch_bytes += (b - a) * rec;
		}
	err = fdev_plan_finish(&p);
	if (!err && p.nx)
		err = fdev_plan_run(c, &p);
	t_fwd = p.nx ? c->last_ps : 0;
	fdev_plan_free(&p);
	h->st.dispatch_ps = t_cnt + t_out + t_fwd;
	if (err)
		return err;

	/* Receivers: records in source order, as throughput has them. */
	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int d = h->first + l, nd = h_node(h, d);
		uint8_t **recs;
		uint64_t nrec, j = 0;

		err = take_recv_counts(h, mr, d);
		if (err)
			return err;
		if (h->timing)
			continue;
		nrec = mr->recv_tokens;
		recs = malloc((nrec ? nrec : 1) * sizeof(*recs));
		if (!recs)
			return -ENOMEM;
		for (unsigned int s = 0; s < n; s++) {
			uint64_t cnt = h_mat(h, s, d);

			for (uint64_t i = 0; i < cnt; i++) {
				uint64_t off;

				if (h_node(h, s) == nd)
					off = rg.rd + h_rd_off(h, d, s) + i;
				else if (h_fwd_src(h, d, s))
					off = rg.ro + h_ro_off(h, d, s) +
					      mr->hpos[mr->hpos_off[(size_t)(d % g) * n + s] + i];
				else
					off = rg.rf + h_rf_off(h, d, nd * g + s % g, s) + i;
				recs[j++] = fdev_ws_addr(c, l, off * rec);
			}
		}
		err = build_out(h, mr, d, recs, nrec, NULL);
		free(recs);
		if (err)
			return err;
	}
	return 0;
}

int fdev_moe_dispatch(struct fdev_comm *c, const struct fdev_moe_config *cfg,
		      const struct fdev_moe_in *in, struct fdev_moe_handle *reuse,
		      struct fdev_moe_handle **handle)
{
	struct fdev_moe_handle *h;
	int err;

	if (!c || !cfg || !in || !handle)
		return -EINVAL;
	err = check_cfg(c, cfg);
	if (err)
		return err;
	if (reuse && (reuse->n != c->nranks || reuse->first != c->first ||
		      (cfg->mode == FDEV_MOE_HIERARCHICAL && reuse->g != c->node_size) ||
		      memcmp(&reuse->cfg, cfg, sizeof(*cfg)) ||
		      cfg->mode == FDEV_MOE_LOW_LATENCY))
		return -EINVAL;
	for (unsigned int l = 0; l < c->nlocal; l++) {
		const struct fdev_moe_in *li = &in[l];

		if (li->tokens && (!li->topk_idx || !li->topk_w))
			return -EFAULT;
		if (li->tokens && !fdev_comm_timing_only(c) &&
		    (!li->x || (cfg->scale_groups && !li->scales)))
			return -EFAULT;
		for (uint64_t i = 0; i < li->tokens * cfg->k; i++)
			if (li->topk_idx[i] < -1 ||
			    li->topk_idx[i] >= (int64_t)cfg->num_experts)
				return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->cfg = *cfg;
	h->n = c->nranks;
	h->first = c->first;
	h->nlocal = c->nlocal;
	h->epr = cfg->num_experts / c->nranks;
	h->es = fdev_dtype_size(cfg->dtype);
	h->rec = a8(a8(cfg->hidden * h->es + cfg->scale_groups * 4ULL) +
		    cfg->k * 12ULL);
	h->timing = fdev_comm_timing_only(c);
	h->g = c->node_size ? c->node_size : h->n;
	h->nn = h->n / h->g;
	h->mat = calloc((size_t)h->n * h->n, 8);
	h->mcnt = calloc(h->n, 8);
	h->nmat = calloc((size_t)h->n * h->nn + 1, 8);
	h->r = calloc(h->nlocal, sizeof(*h->r));
	if (!h->mat || !h->nmat || !h->mcnt || !h->r) {
		err = -ENOMEM;
		goto err_free;
	}
	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		uint64_t tk = in[l].tokens * cfg->k;

		mr->T = in[l].tokens;
		mr->idx = malloc((tk ? tk : 1) * 8);
		mr->w = malloc((tk ? tk : 1) * 4);
		if (!mr->idx || !mr->w) {
			err = -ENOMEM;
			goto err_free;
		}
		if (tk) {
			memcpy(mr->idx, in[l].topk_idx, tk * 8);
			memcpy(mr->w, in[l].topk_w, tk * 4);
		}
		/* Experts of excluded ranks are masked, and counted. */
		for (uint64_t i = 0; i < tk; i++)
			if (mr->idx[i] >= 0 &&
			    fdev_rank_failed(c, (unsigned int)(mr->idx[i] / h->epr))) {
				mr->idx[i] = -1;
				h->st.dropped++;
			}
	}
	switch (cfg->mode) {
	case FDEV_MOE_THROUGHPUT:
		err = dispatch_tp(c, h, in, reuse);
		break;
	case FDEV_MOE_LOW_LATENCY:
		err = dispatch_ll(c, h, in);
		break;
	case FDEV_MOE_MULTICAST:
		err = dispatch_mc(c, h, in, reuse);
		break;
	default:
		err = dispatch_hier(c, h, in, reuse);
		break;
	}
	if (err)
		goto err_free;
	*handle = h;
	return 0;

err_free:
	fdev_moe_handle_free(h);
	return err;
}

int fdev_moe_output(struct fdev_moe_handle *h, int lrank,
		    struct fdev_moe_out *out)
{
	struct moe_rank *mr;

	if (!h || !out || lrank < 0 || (unsigned int)lrank >= h->nlocal)
		return -EINVAL;
	mr = &h->r[lrank];
	memset(out, 0, sizeof(*out));
	out->rows = mr->rows;
	out->x = mr->x;
	out->scales = h->cfg.scale_groups ? mr->scales : NULL;
	out->topk_idx = mr->oidx;
	out->topk_w = mr->ow;
	out->expert_count = mr->ecount;
	out->expert_offset = mr->eoff;
	out->recv_tokens = mr->recv_tokens;
	return 0;
}

int fdev_moe_stats(const struct fdev_moe_handle *h, struct fdev_moe_stats *st)
{
	if (!h || !st)
		return -EINVAL;
	*st = h->st;
	return 0;
}

/* Combine element type: what dispatch carried, FP8 comes back as BF16. */
static int comb_dtype(const struct fdev_moe_handle *h)
{
	return h->cfg.dtype == FDEV_FP8_E4M3 ? FDEV_BF16 : (int)h->cfg.dtype;
}

static float load(const void *p, uint64_t i, int dt)
{
	switch (dt) {
	case FDEV_F32: return ((const float *)p)[i];
	case FDEV_BF16: return fdev_bf16_to_f32(((const uint16_t *)p)[i]);
	case FDEV_F16: return fdev_f16_to_f32(((const uint16_t *)p)[i]);
	default: return 0;
	}
}

static void store(void *p, uint64_t i, int dt, float v)
{
	switch (dt) {
	case FDEV_F32: ((float *)p)[i] = v; break;
	case FDEV_BF16: ((uint16_t *)p)[i] = fdev_f32_to_bf16(v); break;
	case FDEV_F16: ((uint16_t *)p)[i] = fdev_f32_to_f16(v); break;
	}
}

static float weight_of(const int64_t *idx, const float *w, unsigned int k,
		       int64_t e)
{
	for (unsigned int q = 0; q < k; q++)
		if (idx[q] == e)
			return w[q];
	return 0;
}

/*
 * Throughput and hierarchical combine, at each local rank: one partial
 * per received record (source order), the weighted sum of its rows, into
 * the workspace at @off (crow bytes each).
 */
static void partials(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const void *const *y, uint64_t off, uint64_t crow)
{
	unsigned int epr = h->epr, H = h->cfg.hidden, k = h->cfg.k;
	int dt = comb_dtype(h);

	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		uint8_t *base = fdev_ws_addr(c, l, off);

		memset(base, 0, mr->recv_tokens * crow);
		for (uint64_t row = 0; row < mr->rows; row++) {
			uint64_t j = mr->row_src[row];
			unsigned int e = 0;
			float w;

			if (j == UINT64_MAX)
				continue;
			while (e + 1 < epr && mr->eoff[e + 1] <= row)
				e++;
			w = weight_of(mr->oidx + row * k, mr->ow + row * k, k,
				      (int64_t)((h->first + l) * epr + e));
			for (unsigned int i = 0; i < H; i++) {
				float v = load(base + j * crow, i, dt) +
					  w * load(y[l], row * H + i, dt);

				store(base + j * crow, i, dt, v);
			}
		}
	}
}

/* P at d: the partials of source s (source order, as received). */
static uint64_t h_p_off(const struct fdev_moe_handle *h, unsigned int d,
			unsigned int s)
{
	uint64_t o = 0;

	for (unsigned int q = 0; q < s; q++)
		o += h_mat(h, q, d);
	return o;
}

static int combine_hier(struct fdev_comm *c, struct fdev_moe_handle *h,
			const void *const *y, void *const *out)
{
	unsigned int n = h->n, g = h->g, H = h->cfg.hidden;
	int dt = comb_dtype(h), timing = h->timing, err;
	uint64_t crow = a8(H * fdev_dtype_size(dt)), t_up, t_out = 0;
	struct h_regions rg;
	struct fdev_plan p;

	h_regions(h, &rg);
	if (!timing && rg.cend * crow > c->ws_bytes)
		return -EMSGSIZE;
	/*
	 * Partials of remote sources to their peer in this node; those of
	 * the node's own sources go straight back later, beside the
	 * scale-out (as dispatch overlaps them the other way).
	 */
	fdev_plan_init(&p);
	fdev_plan_need(&p, rg.cend * crow);
	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int d = 0; d < n; d++) {
			unsigned int nd = h_node(h, d), s = (d + kk) % n;
			int local = d >= h->first && d < h->first + h->nlocal;
			uint64_t cnt = h_mat(h, s, d), dof, pos = h_p_off(h, d, s);
			unsigned int to;

			if (!cnt || h_node(h, s) == nd)
				continue;
			to = nd * g + s % g;
			dof = rg.gg + h_f_off(h, to, d, s, 1);
			if (to == d)
				fdev_plan_act(&p, 0, d, FDEV_ACT_COPY, FDEV_U8,
					      dof * crow, (rg.p + pos) * crow, cnt * crow);
			else
				fdev_plan_xfer(&p, 0, d, to, (rg.p + pos) * crow,
					       dof * crow, cnt * crow);
			if (to != d && local)
				h->st.combine_bytes += cnt * crow;
		}
	err = fdev_plan_finish(&p);
	if (!err && !timing)
		partials(c, h, y, rg.p * crow, crow);
	if (!err)
		err = fdev_plan_run(c, &p);
	t_up = c->last_ps;
	fdev_plan_free(&p);
	if (err)
		return err;
	/* Each peer sums the partials of a token from its node's ranks. */
	for (unsigned int l = 0; !timing && l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int pr = h->first + l, np = h_node(h, pr);

		for (unsigned int s = 0; s < n; s++) {
			uint64_t nr;
			float *acc;

			if (!h_fwd_src(h, pr, s))
				continue;
			nr = h_nmat(h, s, np);
			acc = calloc(nr * H + 1, sizeof(float));
			if (!acc)
				return -ENOMEM;
			for (unsigned int d = np * g; d < (np + 1) * g; d++) {
				const uint64_t *pos = mr->hpos +
					mr->hpos_off[(size_t)(d % g) * n + s];

				for (uint64_t i = 0; i < h_mat(h, s, d); i++) {
					const uint8_t *src = fdev_ws_addr(c, l,
						(rg.gg + h_f_off(h, pr, d, s, 1) + i) * crow);

					for (unsigned int q = 0; q < H; q++)
						acc[pos[i] * H + q] += load(src, q, dt);
				}
			}
			for (uint64_t i = 0; i < nr; i++) {
				uint8_t *dst = fdev_ws_addr(c, l,
					(rg.o + h_ro_off(h, pr, s) + i) * crow);

				for (unsigned int q = 0; q < H; q++)
					store(dst, q, dt, acc[i * H + q]);
			}
			free(acc);
		}
	}
	/* One row per (token, node) back over scale-out; the node's own direct. */
	fdev_plan_init(&p);
	fdev_plan_need(&p, rg.cend * crow);
	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int d = 0; d < n; d++) {
			unsigned int nd = h_node(h, d), s = (d + kk) % n;
			uint64_t cnt = h_mat(h, s, d), dof, pos = h_p_off(h, d, s);

			if (!cnt || h_node(h, s) != nd)
				continue;
			dof = rg.cr + h_direct_off(h, s, d);
			if (s == d)
				fdev_plan_act(&p, 0, d, FDEV_ACT_COPY, FDEV_U8,
					      dof * crow, (rg.p + pos) * crow, cnt * crow);
			else
				fdev_plan_xfer(&p, 0, d, s, (rg.p + pos) * crow,
					       dof * crow, cnt * crow);
			if (s != d && d >= h->first && d < h->first + h->nlocal)
				h->st.combine_bytes += cnt * crow;
		}
	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int pr = 0; pr < n; pr++) {
			unsigned int s = (pr + kk) % n;
			uint64_t cnt;

			if (!h_fwd_src(h, pr, s))
				continue;
			cnt = h_nmat(h, s, h_node(h, pr));
			if (!cnt)
				continue;
			fdev_plan_xfer(&p, 0, pr, s, (rg.o + h_ro_off(h, pr, s)) * crow,
				       (rg.co + h_out_off(h, s, h_node(h, pr))) * crow,
				       cnt * crow);
			if (pr >= h->first && pr < h->first + h->nlocal)
				h->st.combine_bytes += cnt * crow;
		}
	err = fdev_plan_finish(&p);
	if (!err && (p.nx || p.na))
		err = fdev_plan_run(c, &p);
	t_out = p.nx ? c->last_ps : 0;
	fdev_plan_free(&p);
	h->st.combine_ps = t_up + t_out;
	/* At the source: the direct partials and one row per remote node. */
	for (unsigned int l = 0; !err && !timing && l < h->nlocal; l++) {
		struct moe_rank *mr = &h->r[l];
		unsigned int s = h->first + l, ns = h_node(h, s);
		float *sum = calloc(mr->T * (uint64_t)H + 1, sizeof(float));
		uint64_t pos = 0, row = 0;

		if (!sum)
			return -ENOMEM;
		for (unsigned int d = 0; d < n; d++)
			for (uint64_t i = 0; i < mr->send_cnt[d]; i++, pos++) {
				const uint8_t *src;
				uint64_t t = mr->send_tok[pos];

				if (h_node(h, d) != ns)
					continue;
				src = fdev_ws_addr(c, l, (rg.cr + h_direct_off(h, s, d) + i) * crow);
				for (unsigned int q = 0; q < H; q++)
					sum[t * H + q] += load(src, q, dt);
			}
		for (unsigned int N = 0; N < h->nn; N++)
			for (uint64_t t = 0; N != ns && t < mr->T; t++) {
				const uint8_t *src;

				if (!token_on_node(h, mr->idx + t * h->cfg.k, N))
					continue;
				src = fdev_ws_addr(c, l, (rg.co + row++) * crow);
				for (unsigned int q = 0; q < H; q++)
					sum[t * H + q] += load(src, q, dt);
			}
		for (uint64_t i = 0; i < mr->T * (uint64_t)H; i++)
			store(out[l], i, dt, sum[i]);
		free(sum);
	}
	return err;
}

int fdev_moe_combine(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const void *const *y, void *const *out)
{
	unsigned int n, epr, H, k;
	int dt, timing, err;
	size_t ces;
	uint64_t crow, R;
	struct fdev_plan p;
	float *acc = NULL;

	if (!c || !h)
		return -EINVAL;
	if (h->n != c->nranks || h->first != c->first || h->nlocal != c->nlocal)
		return -EINVAL;		/* a handle of another communicator */
	timing = fdev_comm_timing_only(c);
	if (timing != h->timing)
		return -EINVAL;
	if (!timing && (!y || !out))
		return -EFAULT;
	for (unsigned int l = 0; !timing && l < h->nlocal; l++)
		if ((h->r[l].rows && !y[l]) || (h->r[l].T && !out[l]))
			return -EFAULT;
	n = h->n; epr = h->epr; H = h->cfg.hidden; k = h->cfg.k;
	dt = comb_dtype(h);
	ces = fdev_dtype_size(dt);
	crow = a8(H * ces);
	fdev_plan_init(&p);

	if (h->cfg.mode == FDEV_MOE_HIERARCHICAL) {
		err = combine_hier(c, h, y, out);
	} else if (h->cfg.mode == FDEV_MOE_THROUGHPUT ||
		   h->cfg.mode == FDEV_MOE_MULTICAST) {
		/* Send area: partials by received record; receive by source. */
		uint64_t maxrecv = 0, maxsend = 0;

		for (unsigned int r = 0; r < n; r++) {
			uint64_t a = 0, b = 0;

			for (unsigned int s = 0; s < n; s++) {
				a += h->mat[s * n + r];
				b += h->mat[r * n + s];
			}
			maxrecv = a > maxrecv ? a : maxrecv;
			maxsend = b > maxsend ? b : maxsend;
		}
		R = (maxrecv * crow + 63) & ~63ULL;
		fdev_plan_need(&p, R + maxsend * crow);
		/*
		 * Rotated like the dispatch's all-to-all-v (rank d first to
		 * d + 1, ...), so the ranks do not all start on rank 0.
		 */
		for (unsigned int kk = 0; kk < n; kk++)
			for (unsigned int d = 0; d < n; d++) {
				unsigned int s = (d + kk) % n;
				uint64_t so = 0, dof = R;

				for (unsigned int q = 0; q < s; q++)
					so += h->mat[q * n + d];
				for (unsigned int q = 0; q < d; q++)
					dof += h->mat[s * n + q];
				if (d == s)
					fdev_plan_act(&p, 0, d, FDEV_ACT_COPY, FDEV_U8,
						      R + (dof - R) * crow, so * crow,
						      h->mat[s * n + d] * crow);
				else
					fdev_plan_xfer(&p, 0, d, s, so * crow,
						       R + (dof - R) * crow,
						       h->mat[s * n + d] * crow);
				if (d != s && d >= c->first && d < c->first + c->nlocal)
					h->st.combine_bytes += h->mat[s * n + d] * crow;
			}
		err = fdev_plan_finish(&p);
		if (!err && !timing && p.ws_need > c->ws_bytes)
			err = -EMSGSIZE;
		acc = malloc((H ? H : 1) * sizeof(float));
		if (!acc)
			err = -ENOMEM;
		/* Weighted partial per received token, from its rows. */
		if (!err && !timing)
			partials(c, h, y, 0, crow);
		if (!err)
			err = fdev_plan_run(c, &p);
		h->st.combine_ps = c->last_ps;
		/* Sum the partials at the source. */
		for (unsigned int l = 0; !err && !timing && l < h->nlocal; l++) {
			struct moe_rank *mr = &h->r[l];
			uint64_t pos = 0;

			memset(out[l], 0, mr->T * H * ces);
			for (uint64_t t = 0; t < mr->T; t++)
				for (unsigned int i = 0; i < H; i++)
					store(out[l], t * H + i, dt, 0);
			{
				float *sum = calloc(mr->T * (uint64_t)H + 1, sizeof(float));

				if (!sum) {
					err = -ENOMEM;
					break;
				}
				for (unsigned int d = 0; d < n; d++)
					for (uint64_t i = 0; i < mr->send_cnt[d]; i++, pos++) {
						const uint8_t *src = fdev_ws_addr(c, l, R + pos * crow);
						uint64_t t = mr->send_tok[pos];

						for (unsigned int q = 0; q < H; q++)
							sum[t * H + q] += load(src, q, dt);
					}
				for (uint64_t i = 0; i < mr->T * (uint64_t)H; i++)
					store(out[l], i, dt, sum[i]);
				free(sum);
			}
		}
	} else {
		/* LL: every expert row back to its source's slot [d][e][i]. */
		unsigned int E = h->cfg.num_experts;
		uint64_t mt = h->cfg.max_tokens;

		R = (E * mt * crow + 63) & ~63ULL;	/* y staged at R */
		fdev_plan_need(&p, R + E * mt * crow);
		err = 0;
		for (unsigned int l = 0; l < h->nlocal; l++) {
			struct moe_rank *mr = &h->r[l];
			unsigned int d = h->first + l;

			for (unsigned int e = 0; e < epr; e++) {
				/* Rotated: rank d starts with source d + 1, ... */
				for (unsigned int kk = 0; kk < n; kk++) {
					unsigned int s = (d + kk) % n;
					uint64_t cnt, row = timing ? 0 : mr->eoff[e];

					for (unsigned int q = 0; !timing && q < s; q++)
						row += mr->recv_cnt[q * epr + e];

					if (timing) {
						/* What s sent: known only locally. */
						cnt = 0;
						if (s >= c->first && s < c->first + c->nlocal)
							cnt = h->r[s - c->first].send_cnt[d * epr + e];
						else
							continue;
					} else {
						cnt = mr->recv_cnt[s * epr + e];
					}
					fdev_plan_xfer(&p, 0, d, s, R + row * crow,
						       ((uint64_t)(d * epr + e) * mt) * crow,
						       cnt * crow);
					if (s != d)
						h->st.combine_bytes += cnt * crow;
				}
			}
		}
		err = fdev_plan_finish(&p);
		if (!err && !timing && p.ws_need > c->ws_bytes)
			err = -EMSGSIZE;
		for (unsigned int l = 0; !err && !timing && l < h->nlocal; l++) {
			struct moe_rank *mr = &h->r[l];

			for (uint64_t row = 0; row < mr->rows; row++)
				memcpy(fdev_ws_addr(c, l, R + row * crow),
				       (const uint8_t *)y[l] + row * H * ces, H * ces);
		}
		if (!err)
			err = fdev_plan_run(c, &p);
		h->st.combine_ps = c->last_ps;
		for (unsigned int l = 0; !err && !timing && l < h->nlocal; l++) {
			struct moe_rank *mr = &h->r[l];
			float *sum = calloc(mr->T * (uint64_t)H + 1, sizeof(float));
			uint64_t pos = 0;

			if (!sum) {
				err = -ENOMEM;
				break;
			}
			for (unsigned int e = 0; e < E; e++)
				for (uint64_t i = 0; i < mr->send_cnt[e]; i++, pos++) {
					uint64_t t = mr->send_tok[pos];
					const uint8_t *src = fdev_ws_addr(c, l,
						((uint64_t)e * mt + i) * crow);
					float w = weight_of(mr->idx + t * k, mr->w + t * k,
							    k, (int64_t)e);

					for (unsigned int q = 0; q < H; q++)
						sum[t * H + q] += w * load(src, q, dt);
				}
			for (uint64_t i = 0; i < mr->T * (uint64_t)H; i++)
				store(out[l], i, dt, sum[i]);
			free(sum);
		}
	}
	free(acc);
	fdev_plan_free(&p);
	return err;
}
