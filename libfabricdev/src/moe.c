// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * MoE dispatch/combine over a communicator: the entry points, and what
 * every mode shares (routing, records, receiving into output rows, the
 * combine arithmetic and its run).
 * The modes are in moe_tp.c, moe_ll.c, moe_hier.c and moe_mc.c; moe.h
 * describes the record and the output layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "moe.h"

/* ------------------------------------------------------------------ */
/* Records                                                             */

static void *rec_scales(const struct fdev_moe_handle *h, uint8_t *rec)
{
	return rec + h->cfg.hidden * h->elem_size;
}

int64_t *moe_rec_idx(const struct fdev_moe_handle *h, uint8_t *rec)
{
	return (int64_t *)(rec + moe_round8(h->cfg.hidden * h->elem_size +
					    h->cfg.scale_groups * 4ULL));
}

static float *rec_w(const struct fdev_moe_handle *h, uint8_t *rec)
{
	return (float *)(moe_rec_idx(h, rec) + h->cfg.k);
}

void moe_pack(const struct fdev_moe_handle *h, const struct fdev_moe_in *in,
	      const struct moe_rank *mr, uint64_t t, uint8_t *rec)
{
	const struct fdev_moe_config *cfg = &h->cfg;
	uint64_t xbytes = cfg->hidden * h->elem_size;

	memcpy(rec, (const uint8_t *)in->x + t * xbytes, xbytes);
	if (cfg->scale_groups)
		memcpy(rec_scales(h, rec), in->scales + t * cfg->scale_groups,
		       cfg->scale_groups * 4ULL);
	memcpy(moe_rec_idx(h, rec), mr->topk_idx + t * cfg->k, cfg->k * 8ULL);
	memcpy(rec_w(h, rec), mr->topk_w + t * cfg->k, cfg->k * 4ULL);
}

/* ------------------------------------------------------------------ */
/* Routing and counts                                                  */

int moe_token_on_rank(const struct fdev_moe_handle *h, const int64_t *idx,
		      unsigned int d)
{
	for (unsigned int j = 0; j < h->cfg.k; j++)
		if (idx[j] >= 0 && moe_expert_rank(h, idx[j]) == d)
			return 1;
	return 0;
}

/*
 * A token goes once to each rank that owns one of its experts: send_tok
 * lists the tokens by destination, send_cnt counts them.
 */
int moe_route_by_rank(struct fdev_moe_handle *h, struct moe_rank *mr)
{
	unsigned int n = h->nranks, k = h->cfg.k;
	uint64_t pos = 0;

	mr->send_cnt = calloc(n, 8);
	mr->send_tok = malloc((mr->tokens * n + 1) * 8);
	if (!mr->send_cnt || !mr->send_tok)
		return -ENOMEM;
	for (unsigned int d = 0; d < n; d++)
		for (uint64_t t = 0; t < mr->tokens; t++)
			if (moe_token_on_rank(h, mr->topk_idx + t * k, d)) {
				mr->send_tok[pos++] = t;
				mr->send_cnt[d]++;
			}
	return 0;
}

/*
 * The order in which rank @s sends to its peers, into @order [n]: its own
 * node's ranks (s + 1, s + 2, ... within the node) and the other nodes'
 * ranks merged evenly, itself last. The other nodes' ranks go in rounds
 * of the node size: round m takes node (node of s) + 1 + m / g, at local
 * index (s + m) mod g, so in every round each rank hears from one remote
 * source, and all sources start their scale-out and scale-up sends
 * together. Had every rank gone s + 1, s + 2, ... over the whole
 * communicator, the ranks of a node would reach the next node's ranks
 * in the same order, each after a scale-up part of its own length: the
 * scale-out sends meet at one receiver at a time. On one node (or
 * without nodes) this is s + 1, s + 2, ...
 */
void moe_peer_order(const struct fdev_moe_handle *h, unsigned int s,
		    unsigned int *order)
{
	unsigned int g = h->node_size, nn = h->nr_nodes;
	unsigned int ns = s / g, ls = s % g;
	uint64_t L = g - 1, R = (uint64_t)(nn - 1) * g, loc = 0, rem = 0;

	for (uint64_t i = 0; i < L + R; i++) {
		if (rem == R || (loc < L && loc * (L + R) < (i + 1) * L)) {
			loc++;
			*order++ = ns * g + (ls + (unsigned int)loc) % g;
		} else {
			unsigned int N = (ns + 1 + (unsigned int)(rem / g)) % nn;

			*order++ = N * g + (ls + (unsigned int)(rem % g)) % g;
			rem++;
		}
	}
	*order = s;
}

/*
 * Timing-only independent processes (one local rank each): no bytes
 * move, so the counts a count exchange carries go through the host
 * (fdev_host_row()) while its plan runs as it would with them: each
 * rank then knows what every other process's rank sends it, as one
 * process driving every rank does, and its emulated time is the same.
 */
int moe_host_counts(struct fdev_comm *c, const struct fdev_moe_handle *h)
{
	return h->timing && h->nranks > 1 && h->nlocal == 1 &&
	       fdev_host_row(c, h->first, 0);
}

/* This rank's row of @bytes, before the plan that meets the others. */
int moe_host_put(struct fdev_comm *c, const struct fdev_moe_handle *h,
		 const void *row, size_t bytes)
{
	void *mine = fdev_host_row(c, h->first, bytes);

	if (!mine)
		return -EMSGSIZE;
	memcpy(mine, row, bytes);
	return 0;
}

/*
 * After it: @bytes of rank @s's row from @off into @dst; zeros from a
 * rank that did not take part (excluded), as over the fabric.
 */
void moe_host_get(struct fdev_comm *c, unsigned int s, size_t off,
		  void *dst, size_t bytes)
{
	const uint8_t *row = fdev_host_row(c, s, off + bytes);

	if (!row || fdev_rank_failed(c, s))
		memset(dst, 0, bytes);
	else
		memcpy(dst, row + off, bytes);
}

/*
 * The count exchange: each local rank's row of @width counts to every
 * rank, over the fabric (a direct all-gather), into @all_rows [n][width].
 * Timing only, nothing moved: only the local rows are filled, or every
 * row through the host (moe_host_counts()); there, @all_rows NULL: the
 * caller wrote its rows into a job table (fdev_job_table()) of the
 * current exchange, which the exchange's meeting completes.
 */
int moe_gather_counts(struct fdev_comm *c, const struct fdev_moe_handle *h,
		      const uint64_t *local_rows, unsigned int width,
		      uint64_t *all_rows, uint64_t *t_ps)
{
	uint64_t row_bytes = width * 8ULL;
	int host = moe_host_counts(c, h);
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err;

	fdev_comm_plan_init(c, &p);
	err = fdev_plan_all_gather(&p, h->nranks, row_bytes, FDEV_ALGO_DIRECT,
				   &lo);
	if (!err && !h->timing && p.ws_need > c->ws_bytes)
		err = -EMSGSIZE;
	for (unsigned int l = 0; !err && !h->timing && l < h->nlocal; l++)
		memcpy(fdev_ws_addr(c, l, 0), local_rows + (size_t)l * width,
		       row_bytes);
	if (!err && host)
		err = moe_host_put(c, h, local_rows, row_bytes);
	if (!err)
		err = fdev_plan_run(c, &p);
	*t_ps = c->last_ps;
	fdev_plan_free(&p);
	if (err && host && !all_rows)
		fdev_job_table_unlink(c);
	if (err && host)
		fdev_host_rows_done(c);
	if (err)
		return err;
	if (host) {
		for (unsigned int s = 0; all_rows && s < h->nranks; s++)
			moe_host_get(c, s, 0, all_rows + (size_t)s * width,
				 row_bytes);
		if (!all_rows)	/* the caller's rows are in a job table */
			fdev_job_table_unlink(c);
		fdev_host_rows_done(c);
	} else if (h->timing)
		memcpy(all_rows + (size_t)h->first * width, local_rows,
		       h->nlocal * row_bytes);
	else
		memcpy(all_rows, fdev_ws_addr(c, 0, lo.recv_off),
		       h->nranks * row_bytes);
	return 0;
}

/*
 * An all-to-all of @width words per pair of ranks, over the fabric
 * (direct): @out [nlocal][n][width], local rank l's words for each rank;
 * @in [nlocal][n][width], what each local rank got from each rank. What
 * a rank that did not take part (excluded) would have sent is zeros.
 * Timing only, nothing moved: @in holds what the local ranks sent each
 * other, zeros elsewhere; or everything, through the host
 * (moe_host_counts()).
 */
int moe_exchange_pairs(struct fdev_comm *c, const struct fdev_moe_handle *h,
		       const uint64_t *out, unsigned int width, uint64_t *in,
		       uint64_t *t_ps)
{
	unsigned int n = h->nranks;
	size_t row = (size_t)n * width;
	int host = moe_host_counts(c, h);
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err;

	fdev_comm_plan_init(c, &p);
	err = fdev_plan_all_to_all(&p, n, width * 8ULL, FDEV_ALGO_DIRECT, 0,
				   &lo);
	if (!err && !h->timing && p.ws_need > c->ws_bytes)
		err = -EMSGSIZE;
	for (unsigned int l = 0; !err && !h->timing && l < h->nlocal; l++) {
		memcpy(fdev_ws_addr(c, l, lo.send_off), out + l * row, row * 8);
		memset(fdev_ws_addr(c, l, lo.recv_off), 0, row * 8);
	}
	if (!err && host)
		err = moe_host_put(c, h, out, row * 8);
	if (!err)
		err = fdev_plan_run(c, &p);
	*t_ps = c->last_ps;
	fdev_plan_free(&p);
	if (err && host)
		fdev_host_rows_done(c);
	if (err)
		return err;
	memset(in, 0, h->nlocal * row * 8);
	if (host) {
		for (unsigned int s = 0; s < n; s++)
			moe_host_get(c, s, (size_t)h->first * width * 8,
				 in + (size_t)s * width, width * 8ULL);
		fdev_host_rows_done(c);
		return 0;
	}
	for (unsigned int l = 0; l < h->nlocal; l++) {
		if (!h->timing) {
			memcpy(in + l * row, fdev_ws_addr(c, l, lo.recv_off),
			       row * 8);
			continue;
		}
		for (unsigned int q = 0; q < h->nlocal; q++)
			memcpy(in + l * row + (size_t)(h->first + q) * width,
			       out + q * row + (size_t)(h->first + l) * width,
			       width * 8ULL);
	}
	return 0;
}

/* Timing only: the rows are known from the layout, and no record exists. */
int moe_timing_rows(const struct fdev_moe_handle *h, struct moe_rank *mr)
{
	mr->expert_count = calloc(h->experts_per_rank, 8);
	mr->expert_offset = calloc(h->experts_per_rank, 8);
	return mr->expert_count && mr->expert_offset ? 0 : -ENOMEM;
}

/*
 * Rank @d's records from each source, from the count matrix, into
 * mr->recv_cnt, and their sum into mr->recv_tokens; timing only, also its
 * (empty) row tables, and then the caller is done with it.
 */
int moe_take_recv_counts(const struct fdev_moe_handle *h, struct moe_rank *mr,
			 unsigned int d)
{
	uint64_t nrec = 0;

	mr->recv_cnt = calloc(h->nranks, 8);
	if (!mr->recv_cnt)
		return -ENOMEM;
	for (unsigned int s = 0; s < h->nranks; s++) {
		mr->recv_cnt[s] = moe_pair(h, s, d);
		nrec += mr->recv_cnt[s];
	}
	mr->recv_tokens = nrec;
	return h->timing ? moe_timing_rows(h, mr) : 0;
}

uint8_t **moe_recs_alloc(uint64_t nrec)
{
	return malloc((nrec ? nrec : 1) * sizeof(uint8_t *));
}

/*
 * Local rank @l's side of a dispatch once its records have arrived: its
 * receive counts and, with records, its output rows from the records
 * @steps->find points at, in source order.
 */
int moe_receive(struct fdev_comm *c, struct fdev_moe_handle *h, unsigned int l,
		const struct moe_receive_steps *steps, const void *arg)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int d = h->first + l;
	uint8_t **recs;
	int err;

	err = moe_take_recv_counts(h, mr, d);
	if (err || h->timing)
		return err;
	recs = moe_recs_alloc(mr->recv_tokens);
	if (!recs)
		return -ENOMEM;
	steps->find(c, h, l, recs, arg);
	err = moe_build_out(h, mr, d, recs, mr->recv_tokens, NULL);
	free(recs);
	return err;
}

/* ------------------------------------------------------------------ */
/* Output rows                                                         */

/*
 * Rows per local expert of @rank; with @rec_expert (low latency) a record
 * counts only for the expert whose slot it came in.
 */
static int count_experts(const struct fdev_moe_handle *h, struct moe_rank *mr,
			 unsigned int rank, uint8_t *const *recs, uint64_t nrec,
			 const uint32_t *rec_expert)
{
	unsigned int epr = h->experts_per_rank;
	unsigned int align = h->cfg.align ? h->cfg.align : 1;
	uint64_t rows = 0;

	mr->expert_count = calloc(epr, 8);
	mr->expert_offset = calloc(epr, 8);
	if (!mr->expert_count || !mr->expert_offset)
		return -ENOMEM;
	for (uint64_t j = 0; j < nrec; j++) {
		const int64_t *idx = moe_rec_idx(h, recs[j]);

		for (unsigned int q = 0; q < h->cfg.k; q++) {
			int64_t e = idx[q];

			if (e < 0 || moe_expert_rank(h, e) != rank)
				continue;
			if (rec_expert && (uint32_t)(e % epr) != rec_expert[j])
				continue;
			mr->expert_count[e % epr]++;
		}
	}
	for (unsigned int e = 0; e < epr; e++) {
		mr->expert_offset[e] = rows;
		rows += (mr->expert_count[e] + align - 1) / align * align;
	}
	mr->rows = rows;
	return 0;
}

static int alloc_rows(const struct fdev_moe_handle *h, struct moe_rank *mr)
{
	const struct fdev_moe_config *cfg = &h->cfg;
	uint64_t rows = mr->rows ? mr->rows : 1;

	mr->x = calloc(rows, cfg->hidden * h->elem_size);
	mr->scales = calloc(rows, (cfg->scale_groups ? cfg->scale_groups : 1) * 4ULL);
	mr->out_idx = malloc(rows * cfg->k * 8ULL);
	mr->out_w = calloc(rows, cfg->k * 4ULL);
	mr->row_src = malloc(rows * 8);
	if (!mr->x || !mr->scales || !mr->out_idx || !mr->out_w || !mr->row_src)
		return -ENOMEM;
	for (uint64_t i = 0; i < mr->rows * cfg->k; i++)
		mr->out_idx[i] = -1;
	for (uint64_t i = 0; i < mr->rows; i++)
		mr->row_src[i] = UINT64_MAX;	/* padding */
	return 0;
}

static void copy_row(const struct fdev_moe_handle *h, struct moe_rank *mr,
		     uint64_t row, uint8_t *rec, uint64_t j)
{
	const struct fdev_moe_config *cfg = &h->cfg;
	uint64_t xbytes = cfg->hidden * h->elem_size;

	memcpy(mr->x + row * xbytes, rec, xbytes);
	if (cfg->scale_groups)
		memcpy(mr->scales + row * cfg->scale_groups, rec_scales(h, rec),
		       cfg->scale_groups * 4ULL);
	memcpy(mr->out_idx + row * cfg->k, moe_rec_idx(h, rec), cfg->k * 8ULL);
	memcpy(mr->out_w + row * cfg->k, rec_w(h, rec), cfg->k * 4ULL);
	mr->row_src[row] = j;
}

/* Expert-major, then in record order. */
static void fill_rows(const struct fdev_moe_handle *h, struct moe_rank *mr,
		      unsigned int rank, uint8_t *const *recs, uint64_t nrec,
		      const uint32_t *rec_expert)
{
	for (unsigned int e = 0; e < h->experts_per_rank; e++) {
		int64_t expert = (int64_t)(rank * h->experts_per_rank + e);
		uint64_t row = mr->expert_offset[e];

		for (uint64_t j = 0; j < nrec; j++) {
			const int64_t *idx = moe_rec_idx(h, recs[j]);
			int hit = 0;

			if (rec_expert && rec_expert[j] != e)
				continue;
			for (unsigned int q = 0; q < h->cfg.k; q++)
				if (idx[q] == expert)
					hit = 1;
			if (hit)
				copy_row(h, mr, row++, recs[j], j);
		}
	}
}

/* Output rows of local rank @rank from @nrec received records. */
int moe_build_out(struct fdev_moe_handle *h, struct moe_rank *mr,
		  unsigned int rank, uint8_t *const *recs, uint64_t nrec,
		  const uint32_t *rec_expert)
{
	int err;

	err = count_experts(h, mr, rank, recs, nrec, rec_expert);
	if (err || h->timing)
		return err;
	err = alloc_rows(h, mr);
	if (err)
		return err;
	fill_rows(h, mr, rank, recs, nrec, rec_expert);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Combine arithmetic                                                  */

/* Combine element type: what dispatch carried, FP8 comes back as BF16. */
int moe_comb_dtype(const struct fdev_moe_handle *h)
{
	return h->cfg.dtype == FDEV_FP8_E4M3 ? FDEV_BF16 : (int)h->cfg.dtype;
}

float moe_load(const void *p, uint64_t i, int dt)
{
	switch (dt) {
	case FDEV_F32: return ((const float *)p)[i];
	case FDEV_BF16: return fdev_bf16_to_f32(((const uint16_t *)p)[i]);
	case FDEV_F16: return fdev_f16_to_f32(((const uint16_t *)p)[i]);
	default: return 0;
	}
}

void moe_store(void *p, uint64_t i, int dt, float v)
{
	switch (dt) {
	case FDEV_F32: ((float *)p)[i] = v; break;
	case FDEV_BF16: ((uint16_t *)p)[i] = fdev_f32_to_bf16(v); break;
	case FDEV_F16: ((uint16_t *)p)[i] = fdev_f32_to_f16(v); break;
	}
}

float moe_weight_of(const int64_t *idx, const float *w, unsigned int k,
		    int64_t e)
{
	for (unsigned int q = 0; q < k; q++)
		if (idx[q] == e)
			return w[q];
	return 0;
}

/* sum[q] += src[q] for the @H elements of one row. */
void moe_add_row(float *sum, const uint8_t *src, unsigned int H, int dt)
{
	for (unsigned int q = 0; q < H; q++)
		sum[q] += moe_load(src, q, dt);
}

void moe_store_sum(void *out, const float *sum, uint64_t nr, int dt)
{
	for (uint64_t i = 0; i < nr; i++)
		moe_store(out, i, dt, sum[i]);
}

/*
 * At each local source: what came back for its tokens, summed in fp32 and
 * stored in the combine's dtype.
 */
int moe_sum_at_sources(struct fdev_comm *c, struct fdev_moe_handle *h,
		       void *const *out, const struct moe_combine_steps *steps,
		       const void *arg)
{
	for (unsigned int l = 0; l < h->nlocal; l++) {
		uint64_t nr = h->ranks[l].tokens * (uint64_t)h->cfg.hidden;
		float *sum = calloc(nr + 1, sizeof(float));

		if (!sum)
			return -ENOMEM;
		steps->add_back(c, h, l, sum, arg);
		moe_store_sum(out[l], sum, nr, moe_comb_dtype(h));
		free(sum);
	}
	return 0;
}

/*
 * A one-plan combine (throughput, multicast, low latency) from its built
 * plan @p: finished, interleaved as the communicator asks, checked
 * against the workspace, staged, run, and summed at the sources.
 */
int moe_combine_run(struct fdev_comm *c, struct fdev_moe_handle *h,
		    struct fdev_plan *p, const void *const *y, void *const *out,
		    const struct moe_combine_steps *steps, const void *arg)
{
	int err = fdev_plan_finish(p);

	if (!err)
		err = fdev_comm_interleave(c, p);
	if (!err && !h->timing && p->ws_need > c->ws_bytes)
		err = -EMSGSIZE;
	if (!err && !h->timing)
		steps->stage(c, h, y, arg);
	if (!err)
		err = fdev_plan_run(c, p);
	h->st.combine_ps = c->last_ps;
	if (!err && !h->timing)
		err = moe_sum_at_sources(c, h, out, steps, arg);
	return err;
}

/* The local expert of @rows's row @row. */
static unsigned int row_expert(const struct fdev_moe_handle *h,
			       const struct moe_rank *mr, uint64_t row)
{
	unsigned int e = 0;

	while (e + 1 < h->experts_per_rank && mr->expert_offset[e + 1] <= row)
		e++;
	return e;
}

/*
 * Throughput-shaped combine, at each local rank: one partial per received
 * record (source order), the weighted sum of its rows, into the workspace
 * at @off (@crow bytes each).
 */
void moe_partials(struct fdev_comm *c, struct fdev_moe_handle *h,
		  const void *const *y, uint64_t off, uint64_t crow)
{
	unsigned int epr = h->experts_per_rank, H = h->cfg.hidden, k = h->cfg.k;
	int dt = moe_comb_dtype(h);

	for (unsigned int l = 0; l < h->nlocal; l++) {
		struct moe_rank *mr = &h->ranks[l];
		uint8_t *base = fdev_ws_addr(c, l, off);

		memset(base, 0, mr->recv_tokens * crow);
		for (uint64_t row = 0; row < mr->rows; row++) {
			uint64_t j = mr->row_src[row];
			int64_t e = (int64_t)((h->first + l) * epr +
					      row_expert(h, mr, row));
			float w;

			if (j == UINT64_MAX)
				continue;
			w = moe_weight_of(mr->out_idx + row * k,
					  mr->out_w + row * k, k, e);
			for (unsigned int i = 0; i < H; i++) {
				float v = moe_load(base + j * crow, i, dt) +
					  w * moe_load(y[l], row * H + i, dt);

				moe_store(base + j * crow, i, dt, v);
			}
		}
	}
}

/* ------------------------------------------------------------------ */
/* Handles and entry points                                            */

static void rank_free(struct moe_rank *r)
{
	free(r->topk_idx); free(r->topk_w); free(r->send_cnt);
	free(r->send_tok); free(r->recv_cnt); free(r->x); free(r->scales);
	free(r->out_idx); free(r->out_w); free(r->expert_count);
	free(r->expert_offset); free(r->row_src); free(r->fwd_pos);
	free(r->fwd_pos_start);
	memset(r, 0, sizeof(*r));
}

void fdev_moe_handle_free(struct fdev_moe_handle *h)
{
	if (!h)
		return;
	for (unsigned int l = 0; h->ranks && l < h->nlocal; l++)
		rank_free(&h->ranks[l]);
	free(h->ranks);
	free(h->pair_col);
	if (h->job_counts) {	/* hier's or mc's counts, in the job's table */
		uintptr_t t = (uintptr_t)h->job_counts;
		uintptr_t nt = (uintptr_t)h->node_tokens;

		/* mc's table has pair_tokens only */
		if (nt < t || nt >= t + h->job_counts_len)
			free(h->node_tokens);
		munmap(h->job_counts, h->job_counts_len);
	} else {
		free(h->pair_tokens);
		free(h->node_tokens);
		free(h->chunk_pair);
		free(h->chunk_node);
	}
	free(h->mc_tokens);
	free(h->tp_recv_at);
	free(h->tp_back_at);
	free(h);
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

static int check_dispatch(const struct fdev_comm *c,
			  const struct fdev_moe_config *cfg,
			  const struct fdev_moe_in *in,
			  const struct fdev_moe_handle *reuse)
{
	int err = check_cfg(c, cfg);

	if (err)
		return err;
	if (reuse && (reuse->nranks != c->nranks || reuse->first != c->first ||
		      (cfg->mode == FDEV_MOE_HIERARCHICAL &&
		       reuse->node_size != c->node_size) ||
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
	return 0;
}

static struct fdev_moe_handle *handle_new(const struct fdev_comm *c,
					  const struct fdev_moe_config *cfg)
{
	struct fdev_moe_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->cfg = *cfg;
	h->nranks = c->nranks;
	h->first = c->first;
	h->nlocal = c->nlocal;
	h->experts_per_rank = cfg->num_experts / c->nranks;
	h->elem_size = fdev_dtype_size(cfg->dtype);
	h->rec_size = moe_round8(moe_round8(cfg->hidden * h->elem_size +
					    cfg->scale_groups * 4ULL) +
				 cfg->k * 12ULL);
	h->timing = fdev_comm_timing_only(c);
	h->node_size = c->node_size ? c->node_size : h->nranks;
	h->nr_nodes = h->nranks / h->node_size;
	h->pair_tokens = calloc((size_t)h->nranks * h->nranks, 8);
	h->mc_tokens = calloc(h->nranks, 8);
	h->node_tokens = calloc((size_t)h->nranks * h->nr_nodes + 1, 8);
	h->ranks = calloc(h->nlocal, sizeof(*h->ranks));
	if (!h->pair_tokens || !h->node_tokens || !h->mc_tokens || !h->ranks) {
		fdev_moe_handle_free(h);
		return NULL;
	}
	return h;
}

/* The routing of local rank @l; experts of excluded ranks are masked, and counted. */
static int take_input(const struct fdev_comm *c, struct fdev_moe_handle *h,
		      unsigned int l, const struct fdev_moe_in *in)
{
	struct moe_rank *mr = &h->ranks[l];
	uint64_t tk = in->tokens * h->cfg.k;

	mr->tokens = in->tokens;
	mr->topk_idx = malloc((tk ? tk : 1) * 8);
	mr->topk_w = malloc((tk ? tk : 1) * 4);
	if (!mr->topk_idx || !mr->topk_w)
		return -ENOMEM;
	if (tk) {
		memcpy(mr->topk_idx, in->topk_idx, tk * 8);
		memcpy(mr->topk_w, in->topk_w, tk * 4);
	}
	for (uint64_t i = 0; i < tk; i++)
		if (mr->topk_idx[i] >= 0 &&
		    fdev_rank_failed(c, moe_expert_rank(h, mr->topk_idx[i]))) {
			mr->topk_idx[i] = -1;
			h->st.dropped++;
		}
	return 0;
}

/* By enum fdev_moe_mode; check_cfg() lets no other mode through. */
static const struct moe_mode *const moe_modes[] = {
	[FDEV_MOE_THROUGHPUT] = &moe_mode_tp,
	[FDEV_MOE_LOW_LATENCY] = &moe_mode_ll,
	[FDEV_MOE_HIERARCHICAL] = &moe_mode_hier,
	[FDEV_MOE_MULTICAST] = &moe_mode_mc,
};

static int moe_dispatch(struct fdev_comm *c, const struct fdev_moe_config *cfg,
			const struct fdev_moe_in *in,
			struct fdev_moe_handle *reuse,
			struct fdev_moe_handle **handle)
{
	struct fdev_moe_handle *h;
	int err;

	if (!c || !cfg || !in || !handle)
		return -EINVAL;
	err = check_dispatch(c, cfg, in, reuse);
	if (err)
		return err;
	h = handle_new(c, cfg);
	if (!h)
		return -ENOMEM;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = take_input(c, h, l, &in[l]);
	if (err)
		goto err_free;
	err = moe_modes[cfg->mode]->dispatch(c, h, in, reuse);
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
	mr = &h->ranks[lrank];
	memset(out, 0, sizeof(*out));
	out->rows = mr->rows;
	out->x = mr->x;
	out->scales = h->cfg.scale_groups ? mr->scales : NULL;
	out->topk_idx = mr->out_idx;
	out->topk_w = mr->out_w;
	out->expert_count = mr->expert_count;
	out->expert_offset = mr->expert_offset;
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

static int moe_combine(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const void *const *y, void *const *out)
{
	int timing;

	if (!c || !h)
		return -EINVAL;
	if (h->nranks != c->nranks || h->first != c->first ||
	    h->nlocal != c->nlocal)
		return -EINVAL;		/* a handle of another communicator */
	timing = fdev_comm_timing_only(c);
	if (timing != h->timing)
		return -EINVAL;
	if (!timing && (!y || !out))
		return -EFAULT;
	for (unsigned int l = 0; !timing && l < h->nlocal; l++)
		if ((h->ranks[l].rows && !y[l]) || (h->ranks[l].tokens && !out[l]))
			return -EFAULT;
	return moe_modes[h->cfg.mode]->combine(c, h, y, out);
}

/* The public calls: each one operation in the trace (trace.c). */
int fdev_moe_dispatch(struct fdev_comm *c, const struct fdev_moe_config *cfg,
		      const struct fdev_moe_in *in, struct fdev_moe_handle *reuse,
		      struct fdev_moe_handle **handle)
{
	if (!c)
		return -EINVAL;
	fdev_op_begin(c, "moe_dispatch");
	return fdev_op_end(c, moe_dispatch(c, cfg, in, reuse, handle));
}

int fdev_moe_combine(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const void *const *y, void *const *out)
{
	if (!c)
		return -EINVAL;
	fdev_op_begin(c, "moe_combine");
	return fdev_op_end(c, moe_combine(c, h, y, out));
}
