/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * MoE dispatch/combine, private to the moe*.c files: the handle, the
 * token record, and what every mode shares. One file per mode:
 *   moe_layout.c  fdev_moe_layout()
 *   moe.c         the entry points, routing, records, output rows, and
 *                 the receive and combine steps every mode shares
 *   moe_tp.c      throughput (and the combine multicast shares)
 *   moe_ll.c      low latency
 *   moe_hier.c    hierarchical
 *   moe_mc.c      multicast
 *
 * A token travels as one record: [x: H elements][scales: G floats]
 * (padded to 8 bytes)[top-k ids: k int64][top-k weights: k floats],
 * padded to 8 bytes.
 *
 * The receiver groups rows by local expert (source rank, then token
 * order), each expert's block padded to a multiple of cfg->align. Combine
 * sends back, per token, the weighted sum over the rank's experts
 * (throughput, hierarchical, multicast) or each expert's row (low
 * latency, weighted at the source), and the source adds them up in fp32.
 */
#ifndef FDEV_MOE_H
#define FDEV_MOE_H

#include <stdint.h>

#include "internal.h"

/* One local rank's side of a dispatch. */
struct moe_rank {
	uint64_t tokens;		/* input tokens */
	int64_t *topk_idx;		/* [tokens][k], failed ranks' experts -> -1 */
	float *topk_w;			/* [tokens][k] */
	uint64_t *send_cnt;		/* by rank [n]; LL by expert [E] */
	uint64_t *send_tok;		/* token ids, by destination (, expert) */
	uint64_t *recv_cnt;		/* by source [n]; LL [n][experts_per_rank] */
	uint64_t recv_tokens;		/* records received */
	uint64_t rows;			/* output rows, padded per expert */
	uint8_t *x;			/* [rows][H] */
	float *scales;			/* [rows][scale_groups] */
	int64_t *out_idx;		/* [rows][k] */
	float *out_w;			/* [rows][k] */
	uint64_t *expert_count;		/* [experts_per_rank] rows received */
	uint64_t *expert_offset;	/* [experts_per_rank] first row */
	uint64_t *row_src;		/* record of each row, UINT64_MAX: padding */
	/*
	 * Hierarchical, as forwarding peer p: for each (d in p's node, s a
	 * remote source with p's local index), the positions in s's
	 * scale-out block of the pair_tokens(s, d) records that went on to d
	 * (all chunks, in order).
	 */
	uint64_t *fwd_pos;
	uint64_t *fwd_pos_start;	/* [node_size][n] first entry of (d, s) */
};

struct fdev_moe_handle {
	struct fdev_moe_config cfg;
	unsigned int nranks, first, nlocal;
	unsigned int experts_per_rank;
	size_t elem_size, rec_size;	/* bytes of an element, of a record */
	uint64_t *pair_tokens;		/* [n][n] tokens source -> destination */
	/*
	 * tp's count exchange: the local ranks' columns of pair_tokens,
	 * [nlocal][n] (pair_col[d - first][s]), which moe_pair() reads for
	 * a local d when set. In place, rank d's column would touch a page
	 * per row of the n^2 matrix (at 1024 ranks 4 MiB of a process's 8
	 * MiB calloc, for its 8 KiB column), where its own row touches two.
	 */
	uint64_t *pair_col;
	uint64_t *node_tokens;		/* hier: [n][nodes] tokens of s for node N */
	uint64_t *mc_tokens;		/* multicast: [n] records s multicasts */
	unsigned int node_size, nr_nodes;	/* hier: ranks per node, nodes */
	/*
	 * hier: the token chunks its steps pipeline, and pair_tokens and
	 * node_tokens per chunk, [chunks][n][n] and [chunks][n][nodes].
	 */
	unsigned int chunks;
	/* hier, gated: chunks a rank's sends run ahead (hier_send_step()) */
	unsigned int ahead;
	/* hier, gated dispatch: only the scale-out sends pace (NICPACE) */
	unsigned int nicpace;
	unsigned int taper;	/* hier: chunk j weighs taper^j percent */
	uint64_t *chunk_pair, *chunk_node;
	/*
	 * hier, independent processes: pair_tokens, node_tokens,
	 * chunk_pair and chunk_node in one table of the job's
	 * (fdev_job_table()), @job_counts_len bytes, shared by its ranks;
	 * mc: pair_tokens only.
	 */
	void *job_counts;
	size_t job_counts_len;
	struct moe_rank *ranks;		/* [nlocal] */
	/*
	 * Throughput (and the combine multicast shares): where records and
	 * partials go, for ranks tp_k0 .. tp_k0 + tp_kn - 1 (the local
	 * ranks, or every rank where the whole count matrix is known),
	 * [tp_kn][n] bytes: tp_recv_at[r][d], where r's records for d land
	 * in d's workspace; tp_back_at[r][s], where r's partials for s land
	 * in s's. tp_big: some rank's dispatch (bit 0) or combine (bit 1)
	 * does not fit its workspace, as every rank learns.
	 */
	uint64_t *tp_recv_at, *tp_back_at;
	unsigned int tp_k0, tp_kn, tp_big;
	struct fdev_moe_stats st;
	int timing;			/* timing only: no records exist */
};

static inline uint64_t moe_round8(uint64_t v)
{
	return (v + 7) & ~7ULL;
}

static inline uint64_t moe_pair(const struct fdev_moe_handle *h,
				unsigned int s, unsigned int d)
{
	if (h->pair_col && d - h->first < h->nlocal)
		return h->pair_col[(size_t)(d - h->first) * h->nranks + s];
	return h->pair_tokens[(size_t)s * h->nranks + d];
}

static inline int moe_is_local(const struct fdev_moe_handle *h, unsigned int r)
{
	return r >= h->first && r < h->first + h->nlocal;
}

/* The rank that owns global expert @e. */
static inline unsigned int moe_expert_rank(const struct fdev_moe_handle *h,
					   int64_t e)
{
	return (unsigned int)e / h->experts_per_rank;
}

/* moe.c: records and routing */
int64_t *moe_rec_idx(const struct fdev_moe_handle *h, uint8_t *rec);
void moe_pack(const struct fdev_moe_handle *h, const struct fdev_moe_in *in,
	      const struct moe_rank *mr, uint64_t t, uint8_t *rec);
int moe_token_on_rank(const struct fdev_moe_handle *h, const int64_t *idx,
		      unsigned int d);
int moe_route_by_rank(struct fdev_moe_handle *h, struct moe_rank *mr);
void moe_peer_order(const struct fdev_moe_handle *h, unsigned int s,
		    unsigned int *order);
int moe_gather_counts(struct fdev_comm *c, const struct fdev_moe_handle *h,
		      const uint64_t *local_rows, unsigned int width,
		      uint64_t *all_rows, uint64_t *t_ps);
int moe_host_counts(struct fdev_comm *c, const struct fdev_moe_handle *h);
int moe_host_put(struct fdev_comm *c, const struct fdev_moe_handle *h,
		 const void *row, size_t bytes);
void moe_host_get(struct fdev_comm *c, unsigned int s, size_t off,
		  void *dst, size_t bytes);
int moe_exchange_pairs(struct fdev_comm *c, const struct fdev_moe_handle *h,
		       const uint64_t *out, unsigned int width, uint64_t *in,
		       uint64_t *t_ps);
int moe_take_recv_counts(const struct fdev_moe_handle *h, struct moe_rank *mr,
			 unsigned int d);
int moe_timing_rows(const struct fdev_moe_handle *h, struct moe_rank *mr);
int moe_build_out(struct fdev_moe_handle *h, struct moe_rank *mr,
		  unsigned int rank, uint8_t *const *recs, uint64_t nrec,
		  const uint32_t *rec_expert);
uint8_t **moe_recs_alloc(uint64_t nrec);

/* How a mode finds local rank @l's records in its workspace, into @recs. */
struct moe_receive_steps {
	void (*find)(struct fdev_comm *c, const struct fdev_moe_handle *h,
		     unsigned int l, uint8_t **recs, const void *arg);
};

int moe_receive(struct fdev_comm *c, struct fdev_moe_handle *h, unsigned int l,
		const struct moe_receive_steps *steps, const void *arg);

/* moe.c: combine arithmetic */
int moe_comb_dtype(const struct fdev_moe_handle *h);
float moe_load(const void *p, uint64_t i, int dt);
void moe_store(void *p, uint64_t i, int dt, float v);
float moe_weight_of(const int64_t *idx, const float *w, unsigned int k,
		    int64_t e);
void moe_partials(struct fdev_comm *c, struct fdev_moe_handle *h,
		  const void *const *y, uint64_t off, uint64_t crow);
void moe_add_row(float *sum, const uint8_t *src, unsigned int H, int dt);
void moe_store_sum(void *out, const float *sum, uint64_t nr, int dt);

/*
 * moe.c: the tail every combine shares. A mode supplies how it puts the
 * expert outputs @y into the workspace before its plan runs, and how it
 * adds what came back for local rank @l's tokens into @sum ([tokens][H],
 * fp32); @arg is the mode's own layout.
 */
struct moe_combine_steps {
	void (*stage)(struct fdev_comm *c, struct fdev_moe_handle *h,
		      const void *const *y, const void *arg);
	void (*add_back)(struct fdev_comm *c, const struct fdev_moe_handle *h,
			 unsigned int l, float *sum, const void *arg);
};

int moe_sum_at_sources(struct fdev_comm *c, struct fdev_moe_handle *h,
		       void *const *out, const struct moe_combine_steps *steps,
		       const void *arg);
int moe_combine_run(struct fdev_comm *c, struct fdev_moe_handle *h,
		    struct fdev_plan *p, const void *const *y, void *const *out,
		    const struct moe_combine_steps *steps, const void *arg);

/*
 * One file per mode, each with its struct moe_mode: how it dispatches
 * (@reuse: an earlier handle the mode may take its plan from, or NULL)
 * and how it combines.
 */
struct moe_mode {
	int (*dispatch)(struct fdev_comm *c, struct fdev_moe_handle *h,
			const struct fdev_moe_in *in,
			const struct fdev_moe_handle *reuse);
	int (*combine)(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const void *const *y, void *const *out);
};

extern const struct moe_mode moe_mode_tp, moe_mode_ll, moe_mode_hier,
	moe_mode_mc;

/* Throughput's combine, which multicast's handles use too. */
int moe_combine_tp(struct fdev_comm *c, struct fdev_moe_handle *h,
		   const void *const *y, void *const *out);
/* Where throughput's records and partials go, from the whole matrix. */
int moe_tp_tables_full(struct fdev_comm *c, struct fdev_moe_handle *h);

struct fdev_paths;
/*
 * Hierarchical: 1 where, on @m's routes, a rank's scale-out links are
 * not its scale-up ones and, with every expert as likely, carry the
 * longer share of a dispatch (moe_hier.c); 0 otherwise, or with no
 * routes.
 */
int moe_hier_outward(const struct fdev_paths *m, unsigned int node_size,
		     unsigned int k, unsigned int experts);

#endif
