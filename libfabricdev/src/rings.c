// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * FDEV_ALGO_RINGS: collectives over several edge-disjoint Hamiltonian
 * rings of the fabric's own cables between ranks (fdev_comm_set_links()).
 *
 * The finder looks for undirected cycles through every rank that share
 * no cable; each one is two directed rings (one per direction of its
 * full-duplex cables). The data is split evenly across the directed
 * rings, and each ring runs a ring reduce-scatter and/or all-gather on
 * its share, all rings in the same steps: every step, each rank sends
 * one block to each of its ring successors, each over its own cable, so
 * no link carries two of the step's transfers. On a 2D mesh a corner's
 * two cables allow one such cycle (two rings); SuperMesh doubles the
 * boundary cables (lib/topo/topo_gen.c), which allows two (four rings).
 *
 * The search is a depth-first search with Warnsdorff's ordering, a
 * dead-end check and forced moves, bounded by RINGS_BUDGET expansions:
 * past it the finder keeps what it has found (possibly nothing) instead
 * of running long. It finds one cycle on an 8x8 mesh, not a second one
 * on an 8x8 SuperMesh.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabricdev.h"
#include "plan.h"
#include "rings.h"

#define RINGS_BUDGET	(1U << 20)	/* DFS expansions, all cycles together */

struct finder {
	unsigned int n, nl, target;
	const uint32_t *ends;		/* [nl][2] */
	uint32_t *adj_off, *adj;	/* CSR: edge ids per node */
	uint8_t *used;
	/* [target][n]: per cycle being built, its marks and its path */
	uint8_t *vis;
	uint32_t *pth;
	uint32_t *cyc, *best;		/* [target][n] */
	unsigned int ncyc, nbest;
	uint64_t budget;
};

/* The cycle being built: the one after the f->ncyc found. */
#define VIS(f)	((f)->vis + (size_t)(f)->ncyc * (f)->n)
#define PATH(f)	((f)->pth + (size_t)(f)->ncyc * (f)->n)

static uint32_t other_end(const struct finder *f, uint32_t e, uint32_t v)
{
	return f->ends[2 * e] == v ? f->ends[2 * e + 1] : f->ends[2 * e];
}

/* An unused cable from @a to @b, or UINT32_MAX. */
static uint32_t free_edge(const struct finder *f, uint32_t a, uint32_t b)
{
	for (uint32_t i = f->adj_off[a]; i < f->adj_off[a + 1]; i++)
		if (!f->used[f->adj[i]] && other_end(f, f->adj[i], a) == b)
			return f->adj[i];
	return UINT32_MAX;
}

/* Distinct neighbours of @v over unused cables, unvisited or @also. */
static unsigned int free_degree(const struct finder *f, uint32_t v,
				uint32_t also)
{
	unsigned int d = 0;

	for (uint32_t i = f->adj_off[v]; i < f->adj_off[v + 1]; i++) {
		uint32_t w = other_end(f, f->adj[i], v);

		if (f->used[f->adj[i]] || (VIS(f)[w] && w != also))
			continue;
		/* count a neighbour once, whatever its parallel cables */
		if (free_edge(f, v, w) == f->adj[i])
			d++;
	}
	return d;
}

/*
 * A dead end (-1): some unvisited node can no longer be passed through
 * (it needs two ways in and out among the unvisited, the head and the
 * start), or the start has no way back. Otherwise the node the head must
 * go to next: an unvisited neighbour with only two ways left, one of them
 * the head (UINT32_MAX: none); two such nodes are a dead end too.
 */
static int64_t dead(const struct finder *f, uint32_t head)
{
	uint32_t start = PATH(f)[0], forced = UINT32_MAX;
	unsigned int back = 0;

	for (uint32_t v = 0; v < f->n; v++) {
		unsigned int d = 0, to_head = 0;

		if (VIS(f)[v])
			continue;
		for (uint32_t i = f->adj_off[v]; i < f->adj_off[v + 1]; i++) {
			uint32_t w = other_end(f, f->adj[i], v);

			if (f->used[f->adj[i]] ||
			    (VIS(f)[w] && w != head && w != start))
				continue;
			if (free_edge(f, v, w) != f->adj[i])
				continue;
			d++;
			to_head |= w == head;
			back |= w == start;
		}
		if (d < 2)
			return -1;
		if (d == 2 && to_head && head != start) {
			if (forced != UINT32_MAX)
				return -1;
			forced = v;
		}
	}
	return back || head == start ? (int64_t)forced : -1;
}

static int search(struct finder *f);

/* Extend the path at @depth (path[0..depth-1] visited). 1: done. */
static int extend(struct finder *f, unsigned int depth)
{
	uint32_t head = PATH(f)[depth - 1], cand[64];
	unsigned int deg[64], nc = 0;
	int64_t force;

	if (!f->budget)
		return 0;
	f->budget--;
	if (depth == f->n) {
		uint32_t e = free_edge(f, head, PATH(f)[0]), *es;
		int r;

		if (e == UINT32_MAX)
			return 0;
		es = malloc(f->n * sizeof(*es));
		if (!es)
			return 0;
		/* Take the cycle's cables, look for the next cycle. */
		for (unsigned int i = 0; i < f->n; i++) {
			es[i] = free_edge(f, PATH(f)[i], PATH(f)[(i + 1) % f->n]);
			f->used[es[i]] = 1;
		}
		memcpy(f->cyc + (size_t)f->ncyc * f->n, PATH(f),
		       f->n * sizeof(*f->cyc));
		f->ncyc++;
		if (f->ncyc > f->nbest) {
			f->nbest = f->ncyc;
			memcpy(f->best, f->cyc, (size_t)f->ncyc * f->n *
			       sizeof(*f->cyc));
		}
		r = f->ncyc == f->target || search(f);
		if (!r) {
			f->ncyc--;
			for (unsigned int i = 0; i < f->n; i++)
				f->used[es[i]] = 0;
		}
		free(es);
		return r;
	}
	force = dead(f, head);
	if (force < 0)
		return 0;
	for (uint32_t i = f->adj_off[head]; i < f->adj_off[head + 1]; i++) {
		uint32_t w = other_end(f, f->adj[i], head);
		unsigned int d, j;

		if (f->used[f->adj[i]] || VIS(f)[w] ||
		    free_edge(f, head, w) != f->adj[i] || nc == 64 ||
		    (force != UINT32_MAX && w != force))
			continue;
		/* Warnsdorff: the neighbour with the fewest ways on first. */
		d = free_degree(f, w, PATH(f)[0]);
		for (j = nc; j > 0 && deg[j - 1] > d; j--) {
			deg[j] = deg[j - 1];
			cand[j] = cand[j - 1];
		}
		deg[j] = d;
		cand[j] = w;
		nc++;
	}
	for (unsigned int j = 0; j < nc; j++) {
		VIS(f)[cand[j]] = 1;
		PATH(f)[depth] = cand[j];
		if (extend(f, depth + 1))
			return 1;
		VIS(f)[cand[j]] = 0;
		if (!f->budget)
			return 0;
	}
	return 0;
}

/* Look for one more cycle (and the ones after it) from rank 0. */
static int search(struct finder *f)
{
	int r;

	memset(VIS(f), 0, f->n);
	VIS(f)[0] = 1;
	PATH(f)[0] = 0;
	r = extend(f, 1);
	return r;
}

int fdev_rings_find(unsigned int n, unsigned int nlinks, const uint32_t *ends,
		    unsigned int max_cycles, uint32_t *out)
{
	struct finder f = { .n = n, .nl = nlinks, .ends = ends,
			    .budget = RINGS_BUDGET };
	unsigned int mindeg = UINT32_MAX;
	int ret = -ENOMEM;

	if (n < 3 || !max_cycles)
		return 0;
	for (unsigned int i = 0; i < 2 * nlinks; i++)
		if (ends[i] >= n)
			return -EINVAL;
	f.adj_off = calloc(n + 1, sizeof(*f.adj_off));
	f.adj = malloc((2 * (size_t)nlinks + 1) * sizeof(*f.adj));
	f.used = calloc(nlinks + 1, 1);
	f.vis = calloc((size_t)max_cycles * n, 1);
	f.pth = calloc((size_t)max_cycles * n, sizeof(*f.pth));
	f.cyc = calloc((size_t)max_cycles * n, sizeof(*f.cyc));
	f.best = calloc((size_t)max_cycles * n, sizeof(*f.best));
	if (!f.adj_off || !f.adj || !f.used || !f.vis || !f.pth ||
	    !f.cyc || !f.best)
		goto out;
	/* Adjacency, loops left out. */
	for (unsigned int i = 0; i < nlinks; i++)
		if (ends[2 * i] != ends[2 * i + 1]) {
			f.adj_off[ends[2 * i] + 1]++;
			f.adj_off[ends[2 * i + 1] + 1]++;
		}
	for (unsigned int v = 0; v < n; v++) {
		unsigned int d = f.adj_off[v + 1];

		mindeg = d < mindeg ? d : mindeg;
		f.adj_off[v + 1] += f.adj_off[v];
	}
	{
		uint32_t *fill = calloc(n, sizeof(*fill));

		if (!fill)
			goto out;
		for (unsigned int i = 0; i < nlinks; i++) {
			uint32_t a = ends[2 * i], b = ends[2 * i + 1];

			if (a == b)
				continue;
			f.adj[f.adj_off[a] + fill[a]++] = i;
			f.adj[f.adj_off[b] + fill[b]++] = i;
		}
		free(fill);
	}
	/* Each cycle takes two cables at every rank. */
	f.target = mindeg / 2 < max_cycles ? mindeg / 2 : max_cycles;
	if (f.target)
		search(&f);
	memcpy(out, f.best, (size_t)f.nbest * n * sizeof(*out));
	ret = (int)f.nbest;
out:
	free(f.adj_off);
	free(f.adj);
	free(f.used);
	free(f.vis);
	free(f.pth);
	free(f.cyc);
	free(f.best);
	return ret;
}

/* ---- plans ---- */

static uint64_t up64(uint64_t v)
{
	return (v + 63) & ~63ULL;
}

/* Piece i of @m of @total bytes, in whole @es-byte elements. */
static uint64_t piece_start(uint64_t total, size_t es, unsigned int m,
			    unsigned int i)
{
	return total / es * i / m * es;
}

static uint64_t piece_len(uint64_t total, size_t es, unsigned int m,
			  unsigned int i)
{
	return piece_start(total, es, m, i + 1) - piece_start(total, es, m, i);
}

/*
 * Directed ring j of a communicator's cycles: cycle j / 2, forwards for
 * even j, backwards for odd; member i of it into @mem.
 */
static void ring_members(const uint32_t *cyc, unsigned int n, unsigned int j,
			 uint32_t *mem)
{
	const uint32_t *c = cyc + (size_t)(j / 2) * n;

	for (unsigned int i = 0; i < n; i++)
		mem[i] = j % 2 ? c[(n - i) % n] : c[i];
}

/*
 * One ring's reduce-scatter over blocks that belong to ranks: rank r's
 * block is [off[r], +len[r]); member i ends with its rank's block summed
 * over every member. Received blocks land at @tmp first.
 */
static void blocks_rs(struct fdev_plan *p, uint32_t step, const uint32_t *mem,
		      unsigned int m, const uint64_t *off, const uint64_t *len,
		      int dt, uint64_t tmp)
{
	for (unsigned int k = 0; k + 1 < m; k++, step++)
		for (unsigned int i = 0; i < m; i++) {
			uint32_t r = mem[(i + 2 * m - k - 1) % m];
			uint32_t dst = mem[(i + 1) % m];

			fdev_plan_xfer(p, step, mem[i], dst, off[r], tmp, len[r]);
			fdev_plan_act(p, step, dst, FDEV_ACT_REDUCE, dt, off[r],
				      tmp, len[r]);
		}
}

/* One ring's all-gather: member i starts with its rank's block. */
static void blocks_ag(struct fdev_plan *p, uint32_t step, const uint32_t *mem,
		      unsigned int m, const uint64_t *off, const uint64_t *len)
{
	for (unsigned int k = 0; k + 1 < m; k++, step++)
		for (unsigned int i = 0; i < m; i++) {
			uint32_t r = mem[(i + m - k) % m];

			fdev_plan_xfer(p, step, mem[i], mem[(i + 1) % m], off[r],
				       off[r], len[r]);
		}
}

enum { RS = 1, AG = 2 };

/*
 * Ring j's share of rank r's block, [*off, +*len), of @nr rings: [base
 * + r * stride + piece j of @blk] (reduce-scatter and all-gather) or,
 * with stride 0, rank r's block of piece j of [base, +blk) (all-reduce).
 */
static void ring_block(uint64_t base, uint64_t stride, uint64_t blk,
		       size_t es, unsigned int n, unsigned int nr,
		       unsigned int j, unsigned int r, uint64_t *off,
		       uint64_t *len)
{
	uint64_t pj = piece_start(blk, es, nr, j);
	uint64_t lj = piece_len(blk, es, nr, j);

	if (stride) {
		*off = base + r * stride + pj;
		*len = lj;
	} else {
		*off = base + pj + piece_start(lj, es, n, r);
		*len = piece_len(lj, es, n, r);
	}
}

/*
 * The smallest of ring_block()'s blocks (ring 0's of rank 0); none is
 * more than one element larger.
 */
static uint64_t ring_block_min(uint64_t stride, uint64_t blk, size_t es,
			       unsigned int n, unsigned int nr)
{
	uint64_t l0 = piece_len(blk, es, nr, 0);

	return stride ? l0 : piece_len(l0, es, n, 0);
}

/*
 * The rings' phases over @nr directed rings on ring_block()'s blocks.
 * Phases from step 1; returns the step after them.
 */
static int rings_run(struct fdev_plan *p, const uint32_t *cyc, unsigned int n,
		     unsigned int nr, int phases, uint64_t base,
		     uint64_t stride, uint64_t blk, int dt, size_t es,
		     uint64_t tmp, uint32_t *end)
{
	uint32_t *mem = malloc(n * sizeof(*mem));
	uint64_t *off = malloc(n * sizeof(*off)), *len = malloc(n * sizeof(*len));
	uint64_t slot = 0;

	if (!mem || !off || !len) {
		free(mem);
		free(off);
		free(len);
		return -ENOMEM;
	}
	for (unsigned int j = 0; j < nr; j++)
		for (unsigned int r = 0; r < n; r++) {
			uint64_t o, l;

			ring_block(0, stride, blk, es, n, nr, j, r, &o, &l);
			slot = l > slot ? l : slot;
		}
	slot = up64(slot + es);
	for (unsigned int j = 0; j < nr; j++) {
		ring_members(cyc, n, j, mem);
		for (unsigned int r = 0; r < n; r++)
			ring_block(base, stride, blk, es, n, nr, j, r, &off[r],
				   &len[r]);
		if (phases & RS)
			blocks_rs(p, 1, mem, n, off, len, dt, tmp + j * slot);
		if (phases & AG)
			blocks_ag(p, phases & RS ? n : 1, mem, n, off, len);
	}
	if (phases & RS)
		fdev_plan_need(p, tmp + nr * slot);
	*end = 1 + (phases & RS ? n - 1 : 0) + (phases & AG ? n - 1 : 0);
	free(mem);
	free(off);
	free(len);
	return 0;
}

/*
 * Dataflow rings (fdev_plan_run_gated(), one context driving every
 * rank): the rings' reduce-scatter, all-gather or both (all-reduce) on
 * the same blocks as rings_run(), each ring's block cut into @q pieces,
 * and each piece forwarded as soon as it landed, not when the whole
 * step did. Gated step G(k, j, i, t) is member i of ring j sending piece
 * t of its step k block; the piece's transfer of step k feeds G(k + 1,
 * j, i + 1, t). A reduce-scatter's reduction of what landed is that
 * step's action, run before its forward is posted (acts_first), and
 * step k lands in its own slot of @tmp, so no piece overwrites one not
 * yet summed. Step 0 is the callers' copies. Alone, a reduce-scatter's
 * last steps (k = n - 1) only sum and copy the result to @out. In an
 * all-reduce they sum the piece of the block the member owns, which is
 * then complete, and send it on: the all-gather's first step, with no
 * barrier between the phases; its steps k = n - 1 to 2n - 3 only
 * forward, into the blocks where the reduce-scatter summed (each
 * member sent its partial sum of a block on before the chain that
 * brings the block back to it could start).
 */
#define NO_GATE	UINT32_MAX	/* FDEV_PLAN_NO_GATE */

struct flow {
	struct fdev_plan *p;
	unsigned int n, nr, q;
	size_t nf;
};

static uint32_t flow_step(const struct flow *f, unsigned int k,
			  unsigned int j, unsigned int i, unsigned int t)
{
	return 1 + (((k * f->nr + j) * f->n + i % f->n) * f->q + t);
}

static void flow_xfer(struct flow *f, uint32_t step, uint32_t src,
		      uint32_t dst, uint64_t so, uint64_t dof, uint64_t len,
		      uint32_t feeds)
{
	size_t before = f->p->nx;

	fdev_plan_xfer(f->p, step, src, dst, so, dof, len);
	if (f->p->nx > before)
		f->p->feeds[f->nf++] = (uint64_t)NO_GATE << 32 | feeds;
}

static int flow_run(struct fdev_plan *p, const uint32_t *cyc, unsigned int n,
		    unsigned int nr, unsigned int q, int phases, uint64_t base,
		    uint64_t stride, uint64_t blk, int dt, size_t es,
		    uint64_t tmp, uint64_t out)
{
	uint64_t slot = up64(ring_block_min(stride, blk, es, n, nr) + es);
	/* the reduce-scatter's steps, the all-gather's after them */
	unsigned int ag0 = phases & RS ? n - 1 : 0;
	unsigned int last = phases & AG ? ag0 + n - 2 : n - 2;
	uint32_t *mem = malloc(n * sizeof(*mem));
	uint64_t *off = malloc(n * sizeof(*off)), *len = malloc(n * sizeof(*len));
	struct flow f = { .p = p, .n = n, .nr = nr, .q = q };

	p->feeds = calloc((size_t)nr * n * (last + 1) * q + 1,
			  sizeof(*p->feeds));
	if (!mem || !off || !len || !p->feeds) {
		free(mem);
		free(off);
		free(len);
		return -ENOMEM;
	}
	p->acts_first = 1;
	/* a reduce-scatter alone: its last sums are steps of their own */
	p->flow_steps = 1 + (phases == RS ? n : last + 1) * nr * n * q;
	for (unsigned int j = 0; j < nr; j++) {
		ring_members(cyc, n, j, mem);
		for (unsigned int r = 0; r < n; r++)
			ring_block(base, stride, blk, es, n, nr, j, r, &off[r],
				   &len[r]);
		for (unsigned int k = 0; k <= last; k++)
			for (unsigned int i = 0; i < n; i++)
				for (unsigned int t = 0; t < q; t++) {
					int rs = (phases & RS) && k + 1 < n;
					uint32_t r = rs ? mem[(i + 2 * n - k - 1) % n] :
						     mem[(i + n - (k - ag0)) % n];
					uint32_t dst = mem[(i + 1) % n];
					uint64_t po = piece_start(len[r], es, q, t);
					uint64_t pl = piece_len(len[r], es, q, t);
					uint64_t o = off[r] + po;
					uint64_t at = tmp + ((uint64_t)j * (n - 1) + k) *
						      slot + po;
					uint32_t next = flow_step(&f, k + 1, j, i + 1, t);

					if (!rs) {
						flow_xfer(&f, flow_step(&f, k, j, i, t),
							  mem[i], dst, o, o, pl,
							  k < last ? next : NO_GATE);
						continue;
					}
					flow_xfer(&f, flow_step(&f, k, j, i, t),
						  mem[i], dst, o, at, pl, next);
					fdev_plan_act(p, next, dst, FDEV_ACT_REDUCE, dt,
						      o, at, pl);
					/* dst's own block, summed */
					if (k + 2 == n && !(phases & AG))
						fdev_plan_act(p, next, dst,
							      FDEV_ACT_COPY, FDEV_U8,
							      out + o - base -
							      dst * stride, o, pl);
				}
	}
	if (phases & RS)
		fdev_plan_need(p, tmp + (uint64_t)nr * (n - 1) * slot);
	free(mem);
	free(off);
	free(len);
	return 0;
}

/*
 * Pieces per ring block of at least @l bytes (the smallest) for the
 * dataflow rings, 0 for none: one per segment up to 4, every piece at
 * least one element; a block of more than 16 segments goes whole. In
 * coll_bench on supermesh-bi (rs, 16 ranks, tools/bench/README.md): 16
 * KiB blocks (1 MiB per rank) take 5.192 us whole, 4.148 in 2 pieces,
 * 4.124 in 4; 256 KiB blocks (16 MiB) 63.072 whole, 63.816 in 2, 64.684
 * in 4 (BSP: 6.420 and 64.020). FDEV_RINGS_PIECES=Q in the environment
 * sets it, to measure.
 */
static unsigned int flow_pieces(uint64_t l, size_t es, uint64_t seg)
{
	const char *v = getenv("FDEV_RINGS_PIECES");
	uint64_t q;

	if (v && *v)
		q = strtoull(v, NULL, 10);
	else
		q = !seg || l > 16 * seg ? 1 : l / seg;
	q = q < 1 ? 1 : q > 4 && !(v && *v) ? 4 : q;
	if (q > 64)
		q = 64;
	if (!l || l / es < q)
		return l / es ? (unsigned int)(l / es) : 0;
	return (unsigned int)q;
}

static int rings_ok(unsigned int n, const uint32_t *cyc, unsigned int nr)
{
	return n >= 3 && cyc && nr >= 2 ? 0 : -EOPNOTSUPP;
}

static int summable(unsigned int n, int dtype)
{
	return n && fdev_dtype_size(dtype) && dtype != FDEV_U8 &&
	       dtype != FDEV_FP8_E4M3;
}

int fdev_plan_rings_all_reduce(struct fdev_plan *p, unsigned int n,
			       uint64_t count, int dtype, const uint32_t *cyc,
			       unsigned int nr, struct fdev_coll_layout *lo,
			       int flow, uint64_t seg)
{
	size_t es = fdev_dtype_size(dtype);
	uint64_t S = count * es, R = up64(S), T = 2 * R;
	unsigned int pieces;
	uint32_t end;
	int ret;

	if (!summable(n, dtype))
		return -EINVAL;
	ret = rings_ok(n, cyc, nr);
	if (ret)
		return ret;
	*lo = (struct fdev_coll_layout){ .send_off = 0, .recv_off = R,
		.tmp_off = T, .send_len = S, .recv_len = S };
	fdev_plan_need(p, T);
	for (unsigned int r = 0; r < n; r++)
		fdev_plan_act(p, 0, r, FDEV_ACT_COPY, FDEV_U8, R, 0, S);
	pieces = flow ? flow_pieces(ring_block_min(0, S, es, n, nr), es, seg) :
		 0;
	if (pieces) {
		ret = flow_run(p, cyc, n, nr, pieces, RS | AG, R, 0, S, dtype,
			       es, T, 0);
		return ret ? ret : fdev_plan_finish(p);
	}
	ret = rings_run(p, cyc, n, nr, RS | AG, R, 0, S, dtype, es, T, &end);
	return ret ? ret : fdev_plan_finish(p);
}

int fdev_plan_rings_reduce_scatter(struct fdev_plan *p, unsigned int n,
				   uint64_t count, int dtype,
				   const uint32_t *cyc, unsigned int nr,
				   struct fdev_coll_layout *lo, int flow,
				   uint64_t seg)
{
	size_t es = fdev_dtype_size(dtype);
	uint64_t blk = count * es, S = n * blk, A = up64(S);
	uint64_t R = 2 * A, T = R + up64(blk);
	unsigned int pieces;
	uint32_t end;
	int ret;

	if (!summable(n, dtype))
		return -EINVAL;
	ret = rings_ok(n, cyc, nr);
	if (ret)
		return ret;
	*lo = (struct fdev_coll_layout){ .send_off = 0, .recv_off = R,
		.tmp_off = T, .send_len = S, .recv_len = blk };
	fdev_plan_need(p, T);
	for (unsigned int r = 0; r < n; r++)
		fdev_plan_act(p, 0, r, FDEV_ACT_COPY, FDEV_U8, A, 0, S);
	pieces = flow ? flow_pieces(ring_block_min(blk, blk, es, n, nr), es,
				    seg) : 0;
	if (pieces)
		ret = flow_run(p, cyc, n, nr, pieces, RS, A, blk, blk, dtype,
			       es, T, R);
	if (pieces)
		return ret ? ret : fdev_plan_finish(p);
	ret = rings_run(p, cyc, n, nr, RS, A, blk, blk, dtype, es, T, &end);
	if (ret)
		return ret;
	for (unsigned int r = 0; r < n; r++)
		fdev_plan_act(p, end - 1, r, FDEV_ACT_COPY, FDEV_U8, R,
			      A + r * blk, blk);
	return fdev_plan_finish(p);
}

int fdev_plan_rings_all_gather(struct fdev_plan *p, unsigned int n,
			       uint64_t bytes, const uint32_t *cyc,
			       unsigned int nr, struct fdev_coll_layout *lo,
			       int flow, uint64_t seg)
{
	uint64_t R = up64(bytes);
	unsigned int pieces;
	uint32_t end;
	int ret = rings_ok(n, cyc, nr);

	if (ret)
		return ret;
	*lo = (struct fdev_coll_layout){ .send_off = 0, .recv_off = R,
		.send_len = bytes, .recv_len = n * bytes };
	fdev_plan_need(p, R + n * bytes);
	for (unsigned int r = 0; r < n; r++)
		fdev_plan_act(p, 0, r, FDEV_ACT_COPY, FDEV_U8, R + r * bytes, 0,
			      bytes);
	pieces = flow ? flow_pieces(ring_block_min(bytes, bytes, 1, n, nr), 1,
				    seg) : 0;
	if (pieces)
		ret = flow_run(p, cyc, n, nr, pieces, AG, R, bytes, bytes, 0, 1,
			       0, 0);
	if (pieces)
		return ret ? ret : fdev_plan_finish(p);
	ret = rings_run(p, cyc, n, nr, AG, R, bytes, bytes, 0, 1, 0, &end);
	return ret ? ret : fdev_plan_finish(p);
}
