/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * Collective schedules as data: steps of transfers between ranks'
 * workspaces, then local actions (copy, reduce) on each rank. Pure logic,
 * no fabric: the same plan runs on the device (coll.c) or in host memory
 * (the unit tests and the host communicator).
 */
#ifndef FDEV_PLAN_H
#define FDEV_PLAN_H

#include <stddef.h>
#include <stdint.h>

enum { FDEV_ACT_COPY = 1, FDEV_ACT_REDUCE = 2 };

/*
 * dst of a multicast transfer: the same bytes from src to dst_off of every
 * other rank, once over the source's circuit (fdev_plan_mcast()).
 */
#define FDEV_PLAN_MCAST		UINT32_MAX

struct fdev_xfer {
	uint32_t step, src, dst, pad;
	uint64_t src_off, dst_off, len;	/* bytes in the workspaces */
	/*
	 * Bytes that ride with the first piece when the transfer is cut
	 * (fdev_plan_split_steps(), fdev_plan_interleave()): pieces start
	 * at 0, @head + piece, @head + 2 piece... An all-to-all-v's count
	 * ahead of its bytes (coll.c, slots_plan()) costs no descriptor
	 * of its own. 0 for every other plan.
	 */
	uint32_t head, pad2;
};

struct fdev_act {
	uint32_t step, rank;
	uint8_t op, dtype;		/* FDEV_ACT_*, enum fdev_dtype */
	uint8_t pad[6];
	uint64_t dst_off, src_off, len;	/* bytes */
};

struct fdev_plan {
	struct fdev_xfer *x;
	struct fdev_act *a;
	size_t nx, na, capx, capa;
	uint32_t nsteps;
	int err;			/* sticky -ENOMEM */
	/* fdev_plan_finish() sorted the actions by step and rank */
	int acts_sorted;
	uint64_t ws_need;		/* bytes of workspace per rank */
	uint32_t mcast_ranks;		/* ranks a multicast reaches, 0: none */
	/*
	 * When the plan names only this process's transfers (low latency),
	 * who sends its (one) rank something in each step, [nranks]: what a
	 * rank receives cannot be read from the plan. Owned by the caller.
	 */
	const uint8_t *senders;
	/*
	 * Interleave without route leads (coll.c): the plan's order is its
	 * own. Low latency's transfers (one per source and expert, a few
	 * pieces each) go expert-major over a node-aware peer order; leads
	 * shifted whole transfers by rounds and grouped the ranks' posts by
	 * lead, 0.759 of the bound against 0.858 for its dispatch on
	 * tpu-v4-cube (moe_bench, 256 tokens).
	 */
	int keep_order;
	/*
	 * fdev_plan_only(): with @only_n, transfers that neither leave nor
	 * reach ranks [@only_first, + @only_n), and other ranks' actions,
	 * are left out (their steps still count).
	 */
	uint32_t only_first, only_n;
	/*
	 * Dataflow plans (rings.c, fdev_plan_run_gated()): @feeds[i] is
	 * what the transfer added i-th feeds, @flow_steps the gated steps;
	 * with @acts_first a step's actions run before its transfers are
	 * posted (a reduction before the forward of its sum). Owned.
	 */
	uint64_t *feeds;
	uint32_t flow_steps;
	int acts_first;
};

void fdev_plan_init(struct fdev_plan *p);
void fdev_plan_free(struct fdev_plan *p);
/*
 * Keep only what ranks [@first, @first + @n) send, receive or do: an
 * independent process running its own rank needs no other rank's part,
 * and at 1024 ranks an all-to-all's whole plan is a million transfers
 * in every process. Call before adding anything.
 */
void fdev_plan_only(struct fdev_plan *p, uint32_t first, uint32_t n);
/*
 * Whether @p keeps what @rank sends, receives or does (always, without
 * fdev_plan_only()): a builder may skip working out the offsets of a
 * transfer neither of whose ranks it keeps.
 */
int fdev_plan_keeps(const struct fdev_plan *p, uint32_t rank);
void fdev_plan_xfer(struct fdev_plan *p, uint32_t step, uint32_t src,
		    uint32_t dst, uint64_t src_off, uint64_t dst_off,
		    uint64_t len);
/* A multicast of @len bytes from @src to every other of @nranks ranks. */
void fdev_plan_mcast(struct fdev_plan *p, uint32_t step, uint32_t src,
		     uint32_t nranks, uint64_t src_off, uint64_t dst_off,
		     uint64_t len);
void fdev_plan_act(struct fdev_plan *p, uint32_t step, uint32_t rank, int op,
		   int dtype, uint64_t dst_off, uint64_t src_off, uint64_t len);
/* Sort by step (stable); returns p->err. */
int fdev_plan_finish(struct fdev_plan *p);
void fdev_plan_need(struct fdev_plan *p, uint64_t bytes);
/*
 * Cut a finished plan's unicast transfers into pieces of @piece bytes
 * and order each step piece-major: every transfer's first piece, in the
 * plan's order, then every second one... A source whose pieces in a step
 * would pass @max_pieces gets pieces twice as large, until they do not.
 * Returns p->err, or -ENOMEM (the plan is unchanged then).
 */
int fdev_plan_interleave(struct fdev_plan *p, uint64_t piece,
			 uint64_t max_pieces);
/*
 * The same, with a lead per pair of ranks: @lead[src * @nlead + dst]
 * rounds (0 for a pair outside the table). In each step, the pieces of a
 * transfer whose lead is smaller than the step's largest go that many
 * rounds later: pairs with more lead start and finish that much earlier
 * (fdev_route_leads()). NULL: fdev_plan_interleave().
 */
int fdev_plan_interleave_lead(struct fdev_plan *p, uint64_t piece,
			      uint64_t max_pieces, const uint16_t *lead,
			      uint32_t nlead);

/*
 * After fdev_plan_interleave_lead(), for an uneven exchange (the
 * all-to-all-v): in each step, each source's pieces whose routes start
 * on the same link, the last FDEV_FAR_FIRST_TAIL_DIV-th of them dealt
 * out again so that far pairs go first: piece j's key is j less
 * FDEV_FAR_FIRST_PER_HOP per hop of its route, @hops[src * @n + dst],
 * and @first[src * @n + dst] names the route's first link (any number,
 * equal for equal links). The same pieces go in the same places of the
 * source's order, only which pair each serves changes, and a pair's
 * pieces keep their order. Multicasts and pairs outside @n stay put.
 * Returns p->err or -ENOMEM (the plan unchanged then).
 */
#define FDEV_FAR_FIRST_TAIL_DIV	5
#define FDEV_FAR_FIRST_PER_HOP	24
/*
 * Sources [@first, + @n): the ones whose pieces fdev_plan_far_first()
 * and fdev_plan_start_fill() order (NULL: every source). A process that
 * posts one rank's pieces of a plan naming every rank's orders its own
 * alone, and needs scratch for those alone (64 ranks at 1 MiB mean per
 * pair: a million pieces in the plan, some 16 thousand its own).
 */
struct fdev_src_range {
	uint32_t first, n;
};
int fdev_plan_far_first(struct fdev_plan *p, const uint32_t *hops,
			const uint32_t *first, uint32_t n,
			const struct fdev_src_range *r);

/*
 * Before fdev_plan_far_first(), for the same uneven exchange: at a
 * step's start no transit has reached any link yet, so each source's
 * first FDEV_START_FILL places of the step are dealt out over the first
 * links it uses in the step (@first as above), each link's next piece in
 * its own order: the link whose (pieces dealt + 1/2) over the fourth
 * root of its pieces in the step is least takes the next place (ties:
 * the lower @first). The source's other pieces follow in their order.
 * Every piece stays once, and a pair's pieces keep their order. Returns
 * p->err or -ENOMEM.
 */
#define FDEV_START_FILL	36
int fdev_plan_start_fill(struct fdev_plan *p, const uint32_t *first,
			 uint32_t n, const struct fdev_src_range *r);

/*
 * After fdev_plan_interleave_lead(), for an uneven exchange of a plan
 * that names every rank's pieces (the all-to-all-v in slots), in place
 * of fdev_plan_start_fill() and fdev_plan_far_first(): each source's
 * order of each step's pieces as the step plays out on @m's routes with
 * @engines DMA engines a source (critical.c): a free engine takes the
 * next piece, among its source's pairs, whose route crosses the link
 * with the most load not yet placed, less the piece's wait at its first
 * link. The same places hold the source's pieces, every piece stays
 * once, a pair's pieces keep their order; pieces outside @m's ranks,
 * multicasts and routes of no hop stay put. Returns p->err, -ENOMEM or
 * -EOVERFLOW (steps already ordered stay so, each a valid order).
 */
struct fdev_paths;
int fdev_plan_critical_first(struct fdev_plan *p, const struct fdev_paths *m,
			     uint32_t engines);

/*
 * Before fdev_plan_interleave(): a step whose transfers, in pieces of
 * @piece bytes, would give some source more than @max_pieces becomes the
 * fewest consecutive steps that give none more (each transfer's pieces
 * in as many runs, run j in the j-th), rather than larger pieces. Its
 * actions go with its last step. A step in which some source has more
 * than @max_pieces transfers stays whole. Only for a plan that names
 * every rank's transfers. Returns p->err, or -ENOMEM (the plan is
 * unchanged then).
 */
int fdev_plan_split_steps(struct fdev_plan *p, uint64_t piece,
			  uint64_t max_pieces);

/* dst[i] += src[i] for @n elements of @dtype. */
int fdev_reduce(void *dst, const void *src, size_t n, int dtype);
/* Apply the actions of @step for @rank on its workspace @ws. */
int fdev_plan_apply(const struct fdev_plan *p, uint32_t step, uint32_t rank,
		    uint8_t *ws);
/*
 * Where a rank's plan offsets are: area i, [off[i], +len[i]), at addr[i]
 * when that is set (a caller's buffer), everything else in @ws.
 */
struct fdev_plan_map {
	uint8_t *ws;
	uint64_t off[2], len[2];
	uint8_t *addr[2];
};

uint8_t *fdev_plan_at(const struct fdev_plan_map *m, uint64_t off);
int fdev_plan_apply_map(const struct fdev_plan *p, uint32_t step,
			uint32_t rank, const struct fdev_plan_map *m);
/* Execute everything in host memory: ws[rank] of ws_need bytes. */
int fdev_plan_exec_host(const struct fdev_plan *p, uint8_t *const *ws);

/* Builders. Offsets: send at 0, recv and scratch at returned offsets. */
struct fdev_coll_layout {
	uint64_t send_off, recv_off, tmp_off;
	uint64_t send_len, recv_len;	/* bytes per rank */
};

int fdev_plan_all_gather(struct fdev_plan *p, unsigned int n, uint64_t bytes,
			 int algo, struct fdev_coll_layout *lo);
int fdev_plan_all_to_all(struct fdev_plan *p, unsigned int n, uint64_t bytes,
			 int algo, unsigned int node, struct fdev_coll_layout *lo);
/* @cnt: [n][n] bytes from s to d; the largest row and column sums. */
void fdev_a2av_max_rows(unsigned int n, const uint64_t *cnt,
			uint64_t *send_max, uint64_t *recv_max);
/* @cnt: [n][n] bytes from s to d. */
int fdev_plan_all_to_all_v(struct fdev_plan *p, unsigned int n,
			   const uint64_t *cnt, int algo,
			   struct fdev_coll_layout *lo);
int fdev_plan_all_reduce(struct fdev_plan *p, unsigned int n, uint64_t count,
			 int dtype, int algo, unsigned int node,
			 struct fdev_coll_layout *lo);
int fdev_plan_reduce_scatter(struct fdev_plan *p, unsigned int n,
			     uint64_t count, int dtype, int algo,
			     struct fdev_coll_layout *lo);
int fdev_plan_broadcast(struct fdev_plan *p, unsigned int n, uint64_t bytes,
			unsigned int root, int algo,
			struct fdev_coll_layout *lo);

/* Alpha-beta closed forms (ps) for uncontended runs: alpha ps, B bytes/s. */
uint64_t fdev_cf_ring_all_reduce(unsigned int n, uint64_t bytes, uint64_t alpha,
				 uint64_t bw);
uint64_t fdev_cf_direct_all_to_all(unsigned int n, uint64_t bytes_per_pair,
				   uint64_t alpha, uint64_t bw);
uint64_t fdev_cf_ring_all_gather(unsigned int n, uint64_t bytes, uint64_t alpha,
				 uint64_t bw);

#endif
