// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * MoE hierarchical mode (DeepEP's internode "normal" kernels): a token
 * goes over scale-out at most once per remote node, to the peer there
 * with the source's local index, which forwards it over scale-up to the
 * ranks of its node that own the token's experts; ranks of the source's
 * own node get it directly over scale-up, in the same step as the
 * scale-out. The receiver sees the same rows, in the same order, as
 * throughput.
 *
 * Pipelined in token chunks (h->chunks, hier_chunks()): each source cuts
 * its tokens into C ranges, and the count exchange carries tokens per
 * rank and per node for each. Step j (of C + 1, one plan each) sends
 * chunk j over scale-out (and directly over scale-up) while the peers
 * forward chunk j - 1 over scale-up; between steps each peer packs what
 * it forwards from the records of the chunk it received. With C = 1 that
 * is the unpipelined schedule: the scale-out step, then the forwarding.
 * Where the scale-out side is the busier one (moe_hier_outward()) there
 * are up to 16 chunks of 256 tokens or more, cut equal, so that a step's
 * two stages stay balanced whatever their links' ratio; where the tokens
 * allow only up to 4, the chunks shrink (hier_taper()) and combine takes
 * them last first.
 *
 * Gated (FDEV_HIER_GATED=1, where one context drives every rank): one
 * plan, each peer's work on a chunk posted when that chunk has landed
 * at it, each rank's sends paced by its own earlier chunks (struct
 * hier_plan).
 *
 * Combine reverses it: partials to the forwarding peer (or directly to a
 * source in the same node), which sums them per token, then one row per
 * (token, node) back over scale-out. Step j sends chunk j's partials to
 * the peers while chunk j - 1's sums cross scale-out (and the node's own
 * partials go straight back).
 *
 * All offsets follow from pair_tokens and node_tokens (and their
 * chunks), so every process builds the same plans. Workspace regions
 * (struct hier_regions, in records or rows), each as large as the
 * largest rank's share:
 *	dispatch  send | direct_in | scaleout_in | fwd_out | fwd_in
 *	combine   partials | direct_back | at_peer | summed | scaleout_back
 * Within a block of one (source, destination) or (source, node), the
 * chunks follow each other in order, so the block holds the records in
 * token order as without chunks. fwd_out and fwd_in go chunk by chunk
 * instead (all of chunk 0's blocks, then chunk 1's...): a peer forwards
 * a chunk to a rank of its node in one transfer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
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

/*
 * scaleout_in (and summed) at peer @p: the block of remote source @s.
 * The sources p forwards for are those of the other nodes with p's local
 * index (forwards_for()), in rank order one per node: only those are
 * visited, here and in the offsets below, rather than every rank.
 */
static uint64_t off_scaleout_recv(const struct fdev_moe_handle *h,
				  unsigned int p, unsigned int s)
{
	unsigned int g = h->node_size, np = hier_node(h, p);
	uint64_t o = 0;

	for (unsigned int M = 0; M < h->nr_nodes; M++) {
		unsigned int q = M * g + p % g;

		if (q >= s)
			break;
		if (M != np)
			o += node_pair(h, q, np);
	}
	return o;
}

/*
 * fwd_out at peer @p: the block (d, s), from the tokens per pair @pair
 * ([n][n]: the totals or one chunk's); @with_self also counts d == p
 * (at_peer, which holds the peer's own partials too).
 */
static uint64_t off_forward(const struct fdev_moe_handle *h,
			    const uint64_t *pair, unsigned int p,
			    unsigned int d, unsigned int s, int with_self)
{
	unsigned int n = h->nranks, g = h->node_size, np = hier_node(h, p);
	uint64_t o = 0;

	for (unsigned int q = node_first(h, np); q <= d; q++) {
		if (q == p && !with_self)
			continue;
		/* r: the sources p forwards for (forwards_for()), by rank */
		for (unsigned int M = 0; M < h->nr_nodes; M++) {
			unsigned int r = M * g + p % g;

			if (q == d && r >= s)
				break;
			if (M != np)
				o += pair[(size_t)r * n + q];
		}
	}
	return o;
}

/* fwd_in at @d: the block forwarded by @p, and within it source @s. */
static uint64_t off_forwarded_recv(const struct fdev_moe_handle *h,
				   const uint64_t *pair, unsigned int d,
				   unsigned int p, unsigned int s)
{
	unsigned int n = h->nranks, g = h->node_size;
	uint64_t o = 0;

	for (unsigned int q = node_first(h, hier_node(h, d)); q <= p; q++) {
		unsigned int nq = hier_node(h, q);

		if (q == d)
			continue;
		/* r: the sources q forwards for (forwards_for()), by rank */
		for (unsigned int M = 0; M < h->nr_nodes; M++) {
			unsigned int r = M * g + q % g;

			if (q == p && r >= s)
				break;
			if (M != nq)
				o += pair[(size_t)r * n + d];
		}
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

/*
 * Each rank's share of each region, the largest of all: one pass over
 * the count matrix, row by row (a pair's tokens go to the shares they
 * make up), not a column walk per rank and offset: at 1024 ranks each
 * of the n independent processes works this out, for dispatch and for
 * combine. The same sums as the offsets above at each region's end:
 *	send at s		off_scaleout_send(s, nodes) +
 *				off_direct_send(s, first of the next node)
 *	direct_in at d		off_direct_recv(d, first of the next node)
 *	scaleout_in at p	off_scaleout_recv(p, n)
 *	fwd_out, at_peer at p	off_forward(p, its node's last, n, 0 / 1)
 *	fwd_in at d		off_forwarded_recv(d, its node's last, n)
 *	partials at d		off_partial(d, n)
 */
enum { SH_SEND, SH_DIRECT_IN, SH_SCALEOUT_IN, SH_FWD_OUT, SH_AT_PEER,
       SH_FWD_IN, SH_PARTIALS, SH_NR };

static int hier_regions(const struct fdev_moe_handle *h,
			struct hier_regions *rg)
{
	unsigned int n = h->nranks, g = h->node_size, nn = h->nr_nodes;
	uint64_t *sh = calloc((size_t)SH_NR * n, 8), *at[SH_NR];
	uint64_t send = 0, direct_in = 0, scaleout_in = 0, fwd_out = 0;
	uint64_t fwd_in = 0, partials = 0, at_peer = 0;

	if (!sh)
		return -ENOMEM;
	for (unsigned int i = 0; i < SH_NR; i++)
		at[i] = sh + (size_t)i * n;
	for (unsigned int s = 0; s < n; s++) {
		const uint64_t *row = h->pair_tokens + (size_t)s * n;
		unsigned int ns = hier_node(h, s);

		for (unsigned int d = 0; d < n; d++) {
			unsigned int nd = d / g, peer = nd * g + s % g;
			uint64_t v = row[d];

			at[SH_PARTIALS][d] += v;
			if (nd == ns) {
				at[SH_SEND][s] += v;
				at[SH_DIRECT_IN][d] += v;
				continue;
			}
			/* forwarded by peer, unless d is the peer itself */
			at[SH_AT_PEER][peer] += v;
			if (d != peer) {
				at[SH_FWD_OUT][peer] += v;
				at[SH_FWD_IN][d] += v;
			}
		}
		for (unsigned int M = 0; M < nn; M++) {
			if (M == ns)
				continue;
			at[SH_SEND][s] += node_pair(h, s, M);
			at[SH_SCALEOUT_IN][M * g + s % g] += node_pair(h, s, M);
		}
	}
	for (unsigned int r = 0; r < n; r++) {
		send = max64(send, at[SH_SEND][r]);
		direct_in = max64(direct_in, at[SH_DIRECT_IN][r]);
		scaleout_in = max64(scaleout_in, at[SH_SCALEOUT_IN][r]);
		fwd_out = max64(fwd_out, at[SH_FWD_OUT][r]);
		at_peer = max64(at_peer, at[SH_AT_PEER][r]);
		fwd_in = max64(fwd_in, at[SH_FWD_IN][r]);
		partials = max64(partials, at[SH_PARTIALS][r]);
	}
	free(sh);
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
	return 0;
}

/* ------------------------------------------------------------------ */
/* Chunks                                                              */

/* Chunks at most by default, and at most with FDEV_HIER_CHUNKS. */
#define HIER_CHUNKS		4
#define HIER_CHUNKS_MAX		64
/*
 * Where the scale-out side is the busier one (moe_hier_outward()): up
 * to HIER_CHUNKS_OUT chunks, as long as a chunk has HIER_OUT_TOKENS
 * tokens; past HIER_CHUNKS they are cut equal (hier_taper()).
 */
#define HIER_CHUNKS_OUT		16
#define HIER_OUT_TOKENS		256

/*
 * The token chunks a dispatch pipelines: FDEV_HIER_CHUNKS (1 to 64; 1 is
 * the unpipelined schedule), else up to HIER_CHUNKS, as long as a chunk
 * has 32 tokens (256 on two nodes, where with uniform routing scale-up
 * is the busier side and small chunks only add steps) and the extra
 * counts gathered cost at most 1/32 of the scale-out bytes a rank may
 * send (T = cfg.max_tokens, else 4096; docs/LIBFABRICDEV.md, "Pipelined
 * hierarchical mode"). Where @outward (the scale-out side is the busier
 * one), up to HIER_CHUNKS_OUT of HIER_OUT_TOKENS tokens each, within
 * the same limit on the counts: with the two stages close, a step waits
 * for the slower, and only small chunks keep both busy ("A finer
 * pipeline where the NIC is the busier side"). Always 1 on one node, or
 * with nodes of one rank, where nothing is forwarded. Every process must
 * see the same value.
 */
static unsigned int hier_chunks(const struct fdev_moe_handle *h, int outward)
{
	const char *v = getenv("FDEV_HIER_CHUNKS");
	uint64_t n = h->nranks, nn = h->nr_nodes, T = h->cfg.max_tokens;
	uint64_t row = (n - 1) * (n + nn) * 8, out, min_tokens;
	unsigned int c = HIER_CHUNKS;
	long e;

	if (nn < 2 || h->node_size < 2)
		return 1;
	if (v && *v) {
		e = strtol(v, NULL, 10);
		return e < 1 ? 1 : e > HIER_CHUNKS_MAX ? HIER_CHUNKS_MAX :
		       (unsigned int)e;
	}
	T = T ? T : 4096;
	min_tokens = nn > 2 ? 32 : 256;
	if (outward && T / HIER_OUT_TOKENS > HIER_CHUNKS) {
		c = T / HIER_OUT_TOKENS < HIER_CHUNKS_OUT ?
		    (unsigned int)(T / HIER_OUT_TOKENS) : HIER_CHUNKS_OUT;
		min_tokens = HIER_OUT_TOKENS;
	}
	out = T * (h->cfg.k < nn - 1 ? h->cfg.k : nn - 1) * h->rec_size;
	while (c > 1 && (T / c < min_tokens || (c - 1) * row * 32 > out))
		c--;
	return c;
}

/*
 * P(none of @k distinct experts of @E, each as likely, is among the @own
 * of a rank or node).
 */
static double none_picked(unsigned int E, unsigned int own, unsigned int k)
{
	double p = 1;

	for (unsigned int i = 0; i < k && p > 0; i++)
		p *= E > own + i ? (double)(E - own - i) / (E - i) : 0;
	return p;
}

/*
 * Is the scale-out side the busier one? On @m's routes each rank leaves
 * for the ranks of its node over links it leaves by for no other node
 * (else the sides are the same ports: 0), and with every expert as
 * likely (E / n per rank), per token of a source the busiest rank's
 *	scale-out: (nodes - 1) * P(a given node is picked)
 * records over its scale-out links take longer than its
 *	scale-up: (node_size - 1) * P(a given rank is picked) * nodes
 * (its own tokens for the other ranks of its node, and those of the
 * nodes - 1 remote sources it forwards for) over its scale-up links, a
 * side's bandwidth the sum of its distinct first links'. The topology
 * and the config alone decide it, so every process decides the same.
 * h800-pod with 128 tokens: 2.7 records per token over the 50 GB/s NIC
 * against 6.3 over the 160 GB/s NVLink at EP 32 (yes), 1.0 against 5.6
 * on two nodes (no).
 */
int moe_hier_outward(const struct fdev_paths *m, unsigned int node_size,
		     unsigned int k, unsigned int experts)
{
	double t_up = 0, t_out = 0, up, out;
	unsigned int n, nn;
	uint32_t *mark;
	int shared = 0;

	if (!m || !node_size || m->n % node_size || m->n / node_size < 2 ||
	    experts % m->n)
		return 0;
	n = m->n;
	nn = n / node_size;
	up = (node_size - 1) * (1 - none_picked(experts, experts / n, k)) * nn;
	out = (nn - 1) * (1 - none_picked(experts, experts / nn, k));
	mark = calloc(m->nr_links ? m->nr_links : 1, sizeof(*mark));
	if (!mark)
		return 0;
	for (unsigned int s = 0; s < n && !shared; s++) {
		double bw[2] = { 0, 0 };

		/* side 0 (stamp 2s + 1): its node; side 1 (2s + 2): the rest */
		for (unsigned int side = 0; side < 2 && !shared; side++) {
			for (unsigned int d = 0; d < n; d++) {
				uint32_t i = m->off[(size_t)s * n + d], l;

				if (d == s || (d / node_size == s / node_size) == side ||
				    i == m->off[(size_t)s * n + d + 1])
					continue;
				l = m->link[i];
				if (mark[l] == 2 * s + 2 - side) {
					shared = 1;
					break;
				}
				if (mark[l] == 2 * s + 1 + side ||
				    m->ps_per_byte[l] <= 0)
					continue;
				mark[l] = 2 * s + 1 + side;
				bw[side] += 1 / m->ps_per_byte[l];
			}
		}
		if (!shared && (bw[0] <= 0 || bw[1] <= 0))
			shared = 1;
		if (shared)
			break;
		t_up = up / bw[0] > t_up ? up / bw[0] : t_up;
		t_out = out / bw[1] > t_out ? out / bw[1] : t_out;
	}
	free(mark);
	return !shared && t_out > t_up;
}

/*
 * Whether hier_chunks() could cut more than HIER_CHUNKS chunks, were the
 * scale-out side the busier one: only then is it worked out before.
 */
static int hier_may_add_chunks(const struct fdev_moe_handle *h)
{
	const char *v = getenv("FDEV_HIER_CHUNKS");
	uint64_t T = h->cfg.max_tokens ? h->cfg.max_tokens : 4096;

	return !(v && *v) && h->nr_nodes > 1 && h->node_size > 1 &&
	       T / HIER_OUT_TOKENS > HIER_CHUNKS;
}

static int hier_outward(struct fdev_comm *c, const struct fdev_moe_handle *h)
{
	return moe_hier_outward(fdev_comm_paths(c), h->node_size, h->cfg.k,
				h->cfg.num_experts);
}

/*
 * Chunks shrink where the scale-out side is the busier one and they are
 * few (HIER_CHUNKS at most), chunk j weighing HIER_TAPER_DEFAULT^j
 * percent (the dispatch's NIC is its first stage: the smaller the last
 * chunk, the shorter the forwarding left after the NIC is done; combine
 * takes them last first, comb_chunk()). On h800-pod (docs/LIBFABRICDEV.md,
 * "Gated hierarchical mode") 55, 65 and 75 each beat equal chunks at EP
 * 32 and 64; on two nodes, where NVLink is the busier side, 65 lost 0.8%
 * at 4096 tokens. The best ratio follows the stages' (a chunk's
 * forwarding should take as long as the next chunk's scale-out), so it
 * depends on the links; with more chunks (hier_chunks()) the drain is a
 * sixteenth of the forwarding whatever the ratio, and equal chunks keep
 * every step balanced: they are cut equal.
 */
#define HIER_TAPER_DEFAULT	65

/*
 * FDEV_HIER_TAPER R (1 to 100, percent): chunk j weighs R^j, so the
 * chunks shrink by R percent each; 100 cuts them equal. Unset: R =
 * HIER_TAPER_DEFAULT where the scale-out side is the busier one
 * (@outward, or moe_hier_outward() where it is -1) and the chunks are 2
 * to HIER_CHUNKS, else 100. Every process must see the same value; a
 * handle keeps it.
 */
static unsigned int hier_taper(struct fdev_comm *c,
			       const struct fdev_moe_handle *h, int outward)
{
	const char *e = getenv("FDEV_HIER_TAPER");
	long r;

	if (e && *e) {
		r = strtol(e, NULL, 10);
		return r >= 1 && r <= 100 ? (unsigned int)r : 100;
	}
	if (h->chunks < 2 || h->chunks > HIER_CHUNKS ||
	    !(outward < 0 ? hier_outward(c, h) : outward))
		return 100;
	return HIER_TAPER_DEFAULT;
}

/* Chunk @j of a source's @T tokens starts at this token. */
static uint64_t chunk_first(const struct fdev_moe_handle *h, uint64_t T,
			    unsigned int j)
{
	unsigned int C = h->chunks;
	double w = 1, sum = 0, before = 0;

	if (h->taper >= 100 || j == 0 || j >= C)
		return T * j / C;
	for (unsigned int i = 0; i < C; i++, w *= h->taper / 100.0) {
		if (i < j)
			before += w;
		sum += w;
	}
	return (uint64_t)(T * before / sum);
}

/* Chunk @j's tokens per pair, [n][n]. */
static const uint64_t *chunk_pairs(const struct fdev_moe_handle *h,
				   unsigned int j)
{
	return h->chunk_pair + (size_t)j * h->nranks * h->nranks;
}

static uint64_t cpair(const struct fdev_moe_handle *h, unsigned int j,
		      unsigned int s, unsigned int d)
{
	return chunk_pairs(h, j)[(size_t)s * h->nranks + d];
}

static uint64_t cnode(const struct fdev_moe_handle *h, unsigned int j,
		      unsigned int s, unsigned int N)
{
	return h->chunk_node[((size_t)j * h->nranks + s) * h->nr_nodes + N];
}

/* Within the block (s, d), chunk @j's first record. */
static uint64_t pfx_pair(const struct fdev_moe_handle *h, unsigned int j,
			 unsigned int s, unsigned int d)
{
	uint64_t o = 0;

	for (unsigned int c = 0; c < j; c++)
		o += cpair(h, c, s, d);
	return o;
}

/* Within the block (s, node N), chunk @j's first record. */
static uint64_t pfx_node(const struct fdev_moe_handle *h, unsigned int j,
			 unsigned int s, unsigned int N)
{
	uint64_t o = 0;

	for (unsigned int c = 0; c < j; c++)
		o += cnode(h, c, s, N);
	return o;
}

/* The last rank of @r's node. */
static unsigned int node_last(const struct fdev_moe_handle *h, unsigned int r)
{
	return node_first(h, hier_node(h, r) + 1) - 1;
}

/* fwd_out at peer @p: where chunk @j's blocks start. */
static uint64_t fwd_out_chunk(const struct fdev_moe_handle *h, unsigned int p,
			      unsigned int j)
{
	uint64_t o = 0;

	for (unsigned int c = 0; c < j; c++)
		o += off_forward(h, chunk_pairs(h, c), p, node_last(h, p),
				 h->nranks, 0);
	return o;
}

/* fwd_in at @d: where chunk @j's blocks start. */
static uint64_t fwd_in_chunk(const struct fdev_moe_handle *h, unsigned int d,
			     unsigned int j)
{
	uint64_t o = 0;

	for (unsigned int c = 0; c < j; c++)
		o += off_forwarded_recv(h, chunk_pairs(h, c), d, node_last(h, d),
					h->nranks);
	return o;
}

/* ------------------------------------------------------------------ */
/* Dispatch: counts                                                    */

/*
 * A token with experts @idx into @r: 1 for each rank that owns one of
 * them (r[d]) and each node that does (r[n + N]), once however many it
 * owns; as moe_token_on_rank() and token_on_node() would count it over
 * every rank and node, from its k experts alone.
 */
static void hier_count_token(const struct fdev_moe_handle *h,
			     const int64_t *idx, uint64_t *r)
{
	unsigned int n = h->nranks, g = h->node_size, k = h->cfg.k;

	for (unsigned int j = 0; j < k; j++) {
		unsigned int d, first_d = 1, first_N = 1;

		if (idx[j] < 0)
			continue;
		d = moe_expert_rank(h, idx[j]);
		for (unsigned int i = 0; i < j; i++) {
			unsigned int e;

			if (idx[i] < 0)
				continue;
			e = moe_expert_rank(h, idx[i]);
			first_d &= e != d;
			first_N &= e / g != d / g;
		}
		r[d] += first_d;
		r[n + d / g] += first_N;
	}
}

/*
 * Local rank @l's row: for each chunk, tokens per rank, then tokens per
 * node.
 */
static int hier_local_row(struct fdev_moe_handle *h, unsigned int l,
			  uint64_t *row)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int n = h->nranks, nn = h->nr_nodes, C = h->chunks, k = h->cfg.k;
	int err = moe_route_by_rank(h, mr);

	if (err)
		return err;
	for (unsigned int j = 0; j < C; j++) {
		uint64_t *r = row + (size_t)j * (n + nn);

		for (uint64_t t = chunk_first(h, mr->tokens, j);
		     t < chunk_first(h, mr->tokens, j + 1); t++)
			hier_count_token(h, mr->topk_idx + t * k, r);
	}
	return 0;
}

/*
 * Rank @r's row @row of the count exchange into the chunks and totals
 * (with one chunk in a job table, the chunk is the total: the same
 * words).
 */
static void hier_take_row(struct fdev_moe_handle *h, unsigned int r,
			  const uint64_t *row)
{
	unsigned int n = h->nranks, nn = h->nr_nodes;

	memset(h->pair_tokens + (size_t)r * n, 0, n * 8ULL);
	memset(h->node_tokens + (size_t)r * nn, 0, nn * 8ULL);
	for (unsigned int j = 0; j < h->chunks; j++) {
		const uint64_t *cr = row + (size_t)j * (n + nn);

		if (h->chunk_pair == h->pair_tokens) {
			memcpy(h->pair_tokens + (size_t)r * n, cr, n * 8ULL);
			memcpy(h->node_tokens + (size_t)r * nn, cr + n, nn * 8ULL);
			continue;
		}
		memcpy(h->chunk_pair + ((size_t)j * n + r) * n, cr, n * 8ULL);
		memcpy(h->chunk_node + ((size_t)j * n + r) * nn, cr + n, nn * 8ULL);
		for (unsigned int d = 0; d < n; d++)
			h->pair_tokens[(size_t)r * n + d] += cr[d];
		for (unsigned int N = 0; N < nn; N++)
			h->node_tokens[(size_t)r * nn + N] += cr[n + N];
	}
}

static int hier_reuse_counts(struct fdev_moe_handle *h, const uint64_t *rows,
			     const struct fdev_moe_handle *reuse)
{
	unsigned int n = h->nranks, nn = h->nr_nodes, C = h->chunks;
	size_t width = (size_t)C * (n + nn);

	for (unsigned int l = 0; l < h->nlocal; l++) {
		unsigned int r = h->first + l;

		for (unsigned int j = 0; j < C; j++) {
			const uint64_t *cr = rows + l * width + (size_t)j * (n + nn);

			if (memcmp(cr, chunk_pairs(reuse, j) + (size_t)r * n,
				   n * 8ULL) ||
			    memcmp(cr + n, reuse->chunk_node +
				   ((size_t)j * n + r) * nn, nn * 8ULL))
				return -EINVAL;	/* routing differs */
		}
	}
	memcpy(h->pair_tokens, reuse->pair_tokens, (size_t)n * n * 8);
	memcpy(h->node_tokens, reuse->node_tokens, (size_t)n * nn * 8);
	memcpy(h->chunk_pair, reuse->chunk_pair, (size_t)C * n * n * 8);
	memcpy(h->chunk_node, reuse->chunk_node, (size_t)C * n * nn * 8);
	return 0;
}

/*
 * Independent processes, one rank each (moe_host_counts()): the counts
 * in one table of the job's rather than a copy per process (at 1024
 * ranks 8 MiB of pair_tokens, as much again per chunk and the gathered
 * rows: 27 GiB for the job). Each rank writes its own rows of
 * pair_tokens, node_tokens and the chunks' (with one chunk, those are
 * the totals) and, after the exchange, reads every rank's in place.
 * The exchange itself goes over the fabric as before, timed the same.
 * 0: the counts are in the table; 1: no table, the caller gathers them.
 */
static int hier_job_counts(struct fdev_comm *c, struct fdev_moe_handle *h,
			   const uint64_t *row, uint64_t *t_ps)
{
	unsigned int n = h->nranks, nn = h->nr_nodes, C = h->chunks;
	size_t pair = (size_t)n * n, node = (size_t)n * nn;
	size_t words = pair + node + (C > 1 ? C * (pair + node) : 0);
	uint64_t *t;
	int err;

	if (getenv("FDEV_MOE_OWN_COUNTS") || !moe_host_counts(c, h))
		return 1;
	t = fdev_job_table(c, words * 8);
	if (!t)
		return 1;
	free(h->pair_tokens);
	free(h->node_tokens);
	h->job_counts = t;
	h->job_counts_len = words * 8;
	h->pair_tokens = t;
	h->node_tokens = t + pair;
	h->chunk_pair = C > 1 ? t + pair + node : h->pair_tokens;
	h->chunk_node = C > 1 ? t + pair + node + C * pair : h->node_tokens;
	hier_take_row(h, h->first, row);
	err = moe_gather_counts(c, h, row, C * (n + nn), NULL, t_ps);
	if (err)
		return err;
	/* What a rank that did not take part sent: zeros, as gathered. */
	for (unsigned int s = 0; s < n; s++) {
		if (!fdev_rank_failed(c, s))
			continue;
		memset(h->pair_tokens + (size_t)s * n, 0, n * 8ULL);
		memset(h->node_tokens + (size_t)s * nn, 0, nn * 8ULL);
		for (unsigned int j = 0; C > 1 && j < C; j++) {
			memset(h->chunk_pair + ((size_t)j * n + s) * n, 0, n * 8ULL);
			memset(h->chunk_node + ((size_t)j * n + s) * nn, 0, nn * 8ULL);
		}
	}
	return 0;
}

/*
 * Tokens per rank and per node of every rank, for each chunk and in
 * total: from @reuse, or exchanged.
 */
static int hier_counts(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const struct fdev_moe_handle *reuse, uint64_t *t_ps)
{
	unsigned int n = h->nranks, nn = h->nr_nodes, C = h->chunks;
	unsigned int width = C * (n + nn);
	uint64_t *rows, *all = NULL;
	int err;

	*t_ps = 0;
	rows = calloc((size_t)h->nlocal * width + 1, 8);
	err = rows ? 0 : -ENOMEM;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = hier_local_row(h, l, rows + (size_t)l * width);
	if (!err && !reuse && h->nlocal == 1) {
		err = hier_job_counts(c, h, rows, t_ps);
		if (err <= 0) {
			free(rows);
			return err;
		}
		err = 0;
	}
	h->chunk_pair = calloc((size_t)C * n * n, 8);
	h->chunk_node = calloc((size_t)C * n * nn, 8);
	if (!reuse)
		all = calloc((size_t)n * width, 8);
	if (!err && !((reuse || all) && h->chunk_pair && h->chunk_node))
		err = -ENOMEM;
	if (!err && reuse)
		err = hier_reuse_counts(h, rows, reuse);
	else if (!err)
		err = moe_gather_counts(c, h, rows, width, all, t_ps);
	for (unsigned int r = 0; !err && !reuse && r < n; r++)
		hier_take_row(h, r, all + (size_t)r * width);
	free(rows);
	free(all);
	return err;
}

/* ------------------------------------------------------------------ */
/* Plans, stepped or gated                                             */

/*
 * A plan of C + 1 steps (one chunk's sends beside the last chunk's
 * forwarding, each a plan of its own) or, where one context drives every
 * rank (fdev_plan_gated_ok()), one gated plan for everything: step 0
 * sends every chunk, and step hier_group(peer, j) is peer's work on chunk
 * j (forwarding, or sending back the sums), which goes when the last
 * transfer into peer of chunk j has landed (fdev_plan_run_gated()). The
 * peers' host work (packing, summing) happens then, on the data that
 * landed; the steps overlap the scale-out and each other as the
 * arrivals allow, as DeepEP's chunks stream through its buffers.
 */
struct hier_plan {
	struct fdev_plan p;		/* first: the plan_*() take it */
	int gated;
	uint64_t *feeds;		/* gated: by transfer, what it feeds */
	size_t nf, capf;
	int err;
	/*
	 * Whether the whole plan, every rank's part, has a transfer (any_x)
	 * or anything (any) that moves bytes: a process that keeps only its
	 * rank's part (hier_plan_init()) runs a step, and counts its time,
	 * exactly where one that keeps every part does, so they all meet.
	 */
	int any_x, any;
};

static struct hier_plan *hier_plan_of(struct fdev_plan *p)
{
	return (struct hier_plan *)p;
}

static uint32_t hier_group(const struct fdev_moe_handle *h, unsigned int peer,
			   unsigned int j)
{
	return 1 + peer * h->chunks + j;
}

/*
 * Gated: rank @s sends its chunk @j once its chunk j - A is out (A =
 * h->ahead, chunks before A in step 0), so that its queue holds A
 * chunks ahead of what it forwards or sends back, which would otherwise
 * wait for a DMA engine behind every chunk.
 */
static uint32_t hier_send_step(const struct fdev_moe_handle *h,
			       unsigned int s, unsigned int j)
{
	if (j < h->ahead)
		return 0;
	return 1 + (h->nranks + s) * h->chunks + j;
}

/* What chunk @j's sends from @s feed: the step of chunk j + A. */
static uint32_t hier_send_pace(const struct fdev_moe_handle *h,
			       unsigned int s, unsigned int j)
{
	return j + h->ahead < h->chunks ? hier_send_step(h, s, j + h->ahead) :
					  FDEV_PLAN_NO_GATE;
}

/*
 * FDEV_HIER_AHEAD: A for both sides, or "D,C" for dispatch and combine
 * (each 1 to 64); else @dflt. @combine picks the side.
 */
static unsigned int hier_ahead(unsigned int dflt, int combine)
{
	const char *e = getenv("FDEV_HIER_AHEAD"), *comma;
	int a;

	if (!e)
		return dflt;
	comma = strchr(e, ',');
	a = atoi(combine && comma ? comma + 1 : e);
	return a >= 1 && a <= 64 ? (unsigned int)a : dflt;
}

/* Gated steps: step 0, then each peer's chunks, then each sender's. */
static uint32_t hier_gated_steps(const struct fdev_moe_handle *h)
{
	return 1 + 2 * h->nranks * h->chunks;
}

/*
 * A transfer, in step 0 of a stepped plan or in step @gstep of a gated
 * one, where it feeds steps @feed and @pace (FDEV_PLAN_NO_GATE: none).
 */
static void hier_xfer2(struct fdev_plan *p, uint32_t gstep, uint32_t feed,
		       uint32_t pace, uint32_t src, uint32_t dst,
		       uint64_t src_off, uint64_t dst_off, uint64_t len)
{
	struct hier_plan *hp = hier_plan_of(p);
	size_t before = p->nx;

	if (len)
		hp->any_x = hp->any = 1;
	fdev_plan_xfer(p, hp->gated ? gstep : 0, src, dst, src_off, dst_off,
		       len);
	if (!hp->gated || p->nx == before)
		return;
	if (hp->nf == hp->capf) {
		size_t cap = hp->capf ? 2 * hp->capf : 256;
		uint64_t *f = realloc(hp->feeds, cap * sizeof(*f));

		if (!f) {
			hp->err = -ENOMEM;
			return;
		}
		hp->feeds = f;
		hp->capf = cap;
	}
	hp->feeds[hp->nf++] = feed | (uint64_t)pace << 32;
}

static void hier_xfer(struct fdev_plan *p, uint32_t gstep, uint32_t feed,
		      uint32_t src, uint32_t dst, uint64_t src_off,
		      uint64_t dst_off, uint64_t len)
{
	hier_xfer2(p, gstep, feed, FDEV_PLAN_NO_GATE, src, dst, src_off,
		   dst_off, len);
}

/* A copy within rank @rank's workspace, in step 0. */
static void hier_act(struct fdev_plan *p, uint32_t rank, uint64_t dst,
		     uint64_t src, uint64_t len)
{
	if (len)
		hier_plan_of(p)->any = 1;
	fdev_plan_act(p, 0, rank, FDEV_ACT_COPY, FDEV_U8, dst, src, len);
}

/*
 * Whether @p keeps a transfer between @a and @b (or, @a == @b, a copy
 * at @a): where it does not, its offsets need not be worked out.
 */
static int hier_keeps(const struct fdev_plan *p, uint32_t a, uint32_t b)
{
	return fdev_plan_keeps(p, a) || fdev_plan_keeps(p, b);
}

/*
 * Whether a left-out entry's length still matters: until the plan has
 * a transfer, it may be the one that makes every process run the step
 * (or, a copy, count it as a step with something in it).
 */
static int hier_need_len(const struct fdev_plan *p)
{
	return !((const struct hier_plan *)p)->any_x;
}

/*
 * A left-out entry of @len bytes, from @a to @b (a copy at @a where they
 * are the same): the plan leaves it out, counting its step, without its
 * offsets.
 */
static void hier_left_out(struct fdev_plan *p, uint32_t a, uint32_t b,
			  uint64_t len)
{
	if (a == b)
		hier_act(p, a, 0, 0, len);
	else
		hier_xfer(p, 0, FDEV_PLAN_NO_GATE, a, b, 0, 0, len);
}

/*
 * A stepped plan keeps, in a process of its own ranks (independent
 * processes, fdev_comm_plan_init()), only what they send, receive or
 * do: no process then works out every rank's offsets (at 1024 ranks,
 * each of 1024 processes built the whole job's plans). Those are in the
 * same order as before, so each rank posts the same descriptors.
 */
static void hier_plan_init(struct fdev_comm *c, struct hier_plan *hp,
			   int gated)
{
	memset(hp, 0, sizeof(*hp));
	if (gated)
		fdev_plan_init(&hp->p);
	else
		fdev_comm_plan_init(c, &hp->p);
	hp->gated = gated;
}

static void hier_plan_free(struct hier_plan *hp)
{
	fdev_plan_free(&hp->p);
	free(hp->feeds);
}

/* Gated: a plan's transfers, in the order added, each with its feed. */
static int hier_plan_check(const struct hier_plan *hp)
{
	if (hp->err)
		return hp->err;
	return hp->gated && hp->nf != hp->p.nx ? -EPROTO : 0;
}

/*
 * Gated where one context drives every rank and FDEV_HIER_GATED is 1
 * (HIER_GATED_DEFAULT when unset); 0 is the stepped schedule. Off by
 * default: on h800-pod (docs/LIBFABRICDEV.md, "Gated hierarchical
 * mode") it gains at EP 64 with 128 tokens but loses dispatch at EP 32
 * and combine at EP 64 with 1024 tokens. Chunks a rank's sends run
 * ahead (FDEV_HIER_AHEAD): the best of 1, 2 and 4 there, per side.
 */
#define HIER_GATED_DEFAULT	0
#define HIER_AHEAD_DISPATCH	2
#define HIER_AHEAD_COMBINE	1
static int hier_gated(struct fdev_comm *c)
{
	const char *e = getenv("FDEV_HIER_GATED");
	int on = e ? !strcmp(e, "1") : HIER_GATED_DEFAULT;

	return on && fdev_plan_gated_ok(c);
}

/* What a gated step's host work needs. */
struct hier_gate_arg {
	struct fdev_moe_handle *h;
	const struct hier_regions *rg;
	uint64_t crow;			/* combine: bytes of a row; dispatch: 0 */
};

static int sum_at_peer(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const struct hier_regions *rg, unsigned int l,
		       unsigned int s, unsigned int j, uint64_t crow);
static int hier_forward_rank(struct fdev_comm *c, struct fdev_moe_handle *h,
			     const struct hier_regions *rg, unsigned int l,
			     unsigned int j);

/*
 * Gated step @step, peer's chunk j: everything of chunk j has landed at
 * the peer; pack what it forwards (dispatch) or sum what it sends back
 * (combine).
 */
static int hier_gate_ready(struct fdev_comm *c, uint32_t step, void *arg)
{
	const struct hier_gate_arg *ga = arg;
	struct fdev_moe_handle *h = ga->h;
	unsigned int peer = (step - 1) / h->chunks, j = (step - 1) % h->chunks;
	unsigned int l = peer - h->first;
	int err = 0;

	/* A sender's next chunk: nothing for the host to do. */
	if (h->timing || peer >= h->nranks || !moe_is_local(h, peer))
		return 0;
	if (!ga->crow)
		return hier_forward_rank(c, h, ga->rg, l, j);
	for (unsigned int s = 0; !err && s < h->nranks; s++)
		if (forwards_for(h, peer, s))
			err = sum_at_peer(c, h, ga->rg, l, s, j, ga->crow);
	return err;
}

/* Run gated plan @hp with @ga; *@t_ps: its time. */
static int hier_run_gated(struct fdev_comm *c, struct hier_plan *hp,
			  struct hier_gate_arg *ga, uint64_t *t_ps)
{
	struct fdev_moe_handle *h = ga->h;
	int err = hier_plan_check(hp);

	*t_ps = 0;
	if (!err)
		err = fdev_plan_finish(&hp->p);
	if (!err) {
		err = fdev_plan_run_gated(c, &hp->p, hier_gated_steps(h),
					  hp->feeds, hier_gate_ready, ga);
		*t_ps = c->last_ps;
	}
	return err;
}

/* ------------------------------------------------------------------ */
/* Dispatch: scale-out and direct scale-up                             */

/*
 * Step @kk of source @s within its node, chunk @j: to the rank @kk
 * after it.
 */
static void plan_direct_step(struct fdev_moe_handle *h,
			     const struct hier_regions *rg, unsigned int s,
			     unsigned int kk, unsigned int j, struct fdev_plan *p)
{
	unsigned int g = h->node_size, ns = hier_node(h, s);
	unsigned int d = node_first(h, ns) + (s % g + kk) % g;
	uint64_t rec = h->rec_size, cnt = cpair(h, j, s, d), at, src, dst;

	if (!hier_keeps(p, s, d)) {
		hier_left_out(p, s, d, cnt);
		return;
	}
	at = pfx_pair(h, j, s, d);
	src = (rg->send + off_direct_send(h, s, d) + at) * rec;
	dst = (rg->direct_in + off_direct_recv(h, d, s) + at) * rec;
	if (cnt && d == s)
		hier_act(p, s, dst, src, cnt * rec);
	if (cnt && d != s) {
		hier_xfer2(p, hier_send_step(h, s, j), FDEV_PLAN_NO_GATE,
			   h->nicpace ? FDEV_PLAN_NO_GATE :
					hier_send_pace(h, s, j),
			   s, d, src, dst, cnt * rec);
		if (moe_is_local(h, s))
			h->st.dispatch_bytes += cnt * rec;
	}
}

/*
 * Step @kk of source @s across nodes, chunk @j: to its peer in the node
 * @kk after.
 */
static void plan_scaleout_step(struct fdev_moe_handle *h,
			       const struct hier_regions *rg, unsigned int s,
			       unsigned int kk, unsigned int j,
			       struct fdev_plan *p)
{
	unsigned int g = h->node_size, ns = hier_node(h, s);
	unsigned int N = (ns + kk) % h->nr_nodes, peer = N * g + s % g;
	uint64_t rec = h->rec_size, cnt = cnode(h, j, s, N);
	uint64_t at;

	if (!cnt)
		return;
	if (!hier_keeps(p, s, peer)) {
		hier_left_out(p, s, peer, cnt);
		return;
	}
	at = pfx_node(h, j, s, N);
	hier_xfer2(p, hier_send_step(h, s, j), hier_group(h, peer, j),
		   hier_send_pace(h, s, j), s, peer,
		  (rg->send + off_direct_send(h, s, node_first(h, ns + 1)) +
		   off_scaleout_send(h, s, N) + at) * rec,
		  (rg->scaleout_in + off_scaleout_recv(h, peer, s) + at) * rec,
		  cnt * rec);
	if (moe_is_local(h, s))
		h->st.dispatch_bytes += cnt * rec;
}

/*
 * Each local source's send area: its node's ranks' records (by rank),
 * then one record per (token, remote node) (by node), in token order
 * within each block, and so chunk by chunk.
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

/* Chunk @j's direct and scale-out sends, into step 0 of @p. */
static void plan_send(struct fdev_moe_handle *h, const struct hier_regions *rg,
		      unsigned int j, struct fdev_plan *p)
{
	unsigned int g = h->node_size, steps = max64(g, h->nr_nodes);

	/* Rotated: rank s first to the next in its node and the next node. */
	for (unsigned int kk = 0; kk < steps; kk++)
		for (unsigned int s = 0; s < h->nranks; s++) {
			if (kk < g)
				plan_direct_step(h, rg, s, kk, j, p);
			if (kk && kk < h->nr_nodes)
				plan_scaleout_step(h, rg, s, kk, j, p);
		}
}

/* ------------------------------------------------------------------ */
/* Dispatch: forwarding                                                */

/*
 * At peer @l, chunk @j's records of remote source @s for rank @d of its
 * node: their positions in s's scale-out block into fwd_pos, and unless
 * d is the peer itself, the records into fwd_out.
 */
static int pick_forwarded(struct fdev_comm *c, struct fdev_moe_handle *h,
			  const struct hier_regions *rg, unsigned int l,
			  unsigned int j, unsigned int d, unsigned int s)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int peer = h->first + l, np = hier_node(h, peer);
	uint64_t rec = h->rec_size, want = cpair(h, j, s, d), cnt = 0;
	uint64_t first = pfx_node(h, j, s, np), nr = cnode(h, j, s, np);
	uint64_t block = rg->scaleout_in + off_scaleout_recv(h, peer, s);
	uint64_t *pos = mr->fwd_pos + mr->fwd_pos_start[(size_t)(d % h->node_size) *
							 h->nranks + s] +
			pfx_pair(h, j, s, d);
	uint64_t out = rg->fwd_out + fwd_out_chunk(h, peer, j) +
		       off_forward(h, chunk_pairs(h, j), peer, d, s, 0);

	for (uint64_t i = first; i < first + nr; i++) {
		uint8_t *rp = fdev_ws_addr(c, l, (block + i) * rec);

		if (!moe_token_on_rank(h, moe_rec_idx(h, rp), d))
			continue;
		if (cnt >= want)
			return -EPROTO;
		pos[cnt++] = i;
	}
	if (cnt != want)
		return -EPROTO;
	if (d == peer)
		return 0;	/* the peer's own */
	for (uint64_t i = 0; i < cnt; i++)
		memcpy(fdev_ws_addr(c, l, (out + i) * rec),
		       fdev_ws_addr(c, l, (block + pos[i]) * rec), rec);
	return 0;
}

/*
 * Peer @l, before the chunks: where each (d, s)'s positions start in
 * fwd_pos (d of its node, s a remote source it forwards for).
 */
static int hier_forward_alloc(struct fdev_moe_handle *h, unsigned int l)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int n = h->nranks, g = h->node_size;
	unsigned int peer = h->first + l, np = hier_node(h, peer);
	uint64_t total = off_forward(h, h->pair_tokens, peer, node_last(h, peer),
				     n, 1), pos = 0;

	mr->fwd_pos = malloc((total + 1) * 8);
	mr->fwd_pos_start = calloc((size_t)g * n + 1, 8);
	if (!mr->fwd_pos || !mr->fwd_pos_start)
		return -ENOMEM;
	for (unsigned int d = np * g; d < (np + 1) * g; d++)
		for (unsigned int s = 0; s < n; s++) {
			if (!forwards_for(h, peer, s))
				continue;
			mr->fwd_pos_start[(size_t)(d % g) * n + s] = pos;
			pos += moe_pair(h, s, d);
		}
	return 0;
}

/* Peer @l: what it received of chunk @j, per rank of its node, in order. */
static int hier_forward_rank(struct fdev_comm *c, struct fdev_moe_handle *h,
			     const struct hier_regions *rg, unsigned int l,
			     unsigned int j)
{
	unsigned int n = h->nranks, g = h->node_size;
	unsigned int peer = h->first + l, np = hier_node(h, peer);
	int err = 0;

	for (unsigned int d = np * g; d < (np + 1) * g; d++)
		for (unsigned int s = 0; !err && s < n; s++)
			if (forwards_for(h, peer, s))
				err = pick_forwarded(c, h, rg, l, j, d, s);
	return err;
}

/* Chunk @j's forwarding over scale-up, into step 0 of @p. */
static void plan_forward(struct fdev_moe_handle *h,
			 const struct hier_regions *rg, unsigned int j,
			 struct fdev_plan *p)
{
	unsigned int n = h->nranks, g = h->node_size;
	const uint64_t *pair = chunk_pairs(h, j);
	uint64_t rec = h->rec_size;

	for (unsigned int kk = 1; kk < g; kk++)
		for (unsigned int peer = 0; peer < n; peer++) {
			unsigned int d = node_first(h, hier_node(h, peer)) +
					 (peer % g + kk) % g;
			int keep = hier_keeps(p, peer, d);
			uint64_t a, b;

			if (!keep && !hier_need_len(p))
				continue;
			a = off_forward(h, pair, peer, d, 0, 0);
			b = off_forward(h, pair, peer, d, n, 0);
			if (!keep)
				hier_left_out(p, peer, d, b - a);
			if (b == a || !keep)
				continue;
			hier_xfer(p, hier_group(h, peer, j), FDEV_PLAN_NO_GATE,
				  peer, d,
				  (rg->fwd_out + fwd_out_chunk(h, peer, j) + a) * rec,
				  (rg->fwd_in + fwd_in_chunk(h, d, j) +
				   off_forwarded_recv(h, pair, d, peer, 0)) * rec,
				  (b - a) * rec);
			if (moe_is_local(h, peer))
				h->st.dispatch_bytes += (b - a) * rec;
		}
}

/*
 * FDEV_HIER_TRACE=1 (diagnostics, stderr): each stepped step's emulated
 * time and, over the ranks, the most bytes one rank sends in it over
 * scale-out (another node) and over scale-up (its node), so that which
 * stage a step waits for can be read against the links' rates.
 */
static void hier_trace_step(const struct fdev_moe_handle *h, const char *what,
			    unsigned int j, const struct fdev_plan *p,
			    uint64_t t_ps)
{
	const char *e = getenv("FDEV_HIER_TRACE");
	uint64_t *b, out = 0, up = 0;

	if (!e || strcmp(e, "1"))
		return;
	b = calloc(2 * (size_t)h->nranks, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < p->nx; i++) {
		const struct fdev_xfer *x = &p->x[i];

		if (x->src >= h->nranks || x->dst >= h->nranks)
			continue;
		b[2 * x->src + (hier_node(h, x->src) != hier_node(h, x->dst))] +=
			x->len;
	}
	for (unsigned int r = 0; r < h->nranks; r++) {
		up = b[2 * r] > up ? b[2 * r] : up;
		out = b[2 * r + 1] > out ? b[2 * r + 1] : out;
	}
	fprintf(stderr, "# hier %s step %u/%u: %llu ps, most out %llu B, most up %llu B\n",
		what, j, h->chunks, (unsigned long long)t_ps,
		(unsigned long long)out, (unsigned long long)up);
	free(b);
}

/*
 * Dispatch step @j of C + 1: chunk j's sends (j < C), while the peers
 * forward chunk j - 1, which they pack first. *@t_ps: its time, 0 when
 * it had nothing to do.
 */
static int hier_dispatch_step(struct fdev_comm *c, struct fdev_moe_handle *h,
			      const struct hier_regions *rg, unsigned int j,
			      uint64_t *t_ps)
{
	struct hier_plan hp;
	struct fdev_plan *p = &hp.p;
	int err = 0;

	*t_ps = 0;
	for (unsigned int l = 0; j && !h->timing && !err && l < h->nlocal; l++)
		err = hier_forward_rank(c, h, rg, l, j - 1);
	if (err)
		return err;
	hier_plan_init(c, &hp, 0);
	fdev_plan_need(p, rg->end * h->rec_size);
	if (j < h->chunks)
		plan_send(h, rg, j, p);
	if (j)
		plan_forward(h, rg, j - 1, p);
	err = fdev_plan_finish(p);
	if (!err && hp.any) {
		err = fdev_plan_run(c, p);
		*t_ps = c->last_ps;
	}
	hier_trace_step(h, "dispatch", j, p, *t_ps);
	hier_plan_free(&hp);
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
	unsigned int p = nd * g + s % g, j = 0;

	if (hier_node(h, s) == nd)
		return rg->direct_in + off_direct_recv(h, d, s) + i;
	if (forwards_for(h, d, s))
		return rg->scaleout_in + off_scaleout_recv(h, d, s) +
		       mr->fwd_pos[mr->fwd_pos_start[(size_t)(d % g) * h->nranks + s] + i];
	/* Forwarded: in the chunk it came in. */
	while (i >= cpair(h, j, s, d))
		i -= cpair(h, j++, s, d);
	return rg->fwd_in + fwd_in_chunk(h, d, j) +
	       off_forwarded_recv(h, chunk_pairs(h, j), d, p, s) + i;
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
	uint64_t t_counts, t_steps = 0;
	struct hier_regions rg;
	int err;

	/* An excluded rank cannot forward for its node: take throughput. */
	for (unsigned int r = 0; r < h->nranks; r++)
		if (fdev_rank_failed(c, r))
			return -ENOLINK;
	/* A reused handle's counts are per its chunks. */
	if (reuse) {
		h->chunks = reuse->chunks;
		h->taper = reuse->taper;
	} else {
		/* -1: not worked out (only where it matters, as before) */
		int outward = hier_may_add_chunks(h) ? hier_outward(c, h) : -1;

		h->chunks = hier_chunks(h, outward == 1);
		h->taper = hier_taper(c, h, outward);
	}
	err = hier_counts(c, h, reuse, &t_counts);
	if (err)
		return err;
	err = hier_regions(h, &rg);
	if (err)
		return err;
	if (!h->timing && rg.end * h->rec_size > c->ws_bytes)
		return -EMSGSIZE;
	if (!h->timing)
		hier_pack(c, h, in, &rg);
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = hier_forward_alloc(h, l);
	if (!err && hier_gated(c)) {
		struct hier_gate_arg ga = { .h = h, .rg = &rg };
		struct hier_plan hp;

		const char *np = getenv("FDEV_HIER_NICPACE");

		h->ahead = hier_ahead(HIER_AHEAD_DISPATCH, 0);
		/*
		 * FDEV_HIER_NICPACE=1: a rank's chunk j + A goes once the
		 * scale-out sends of its chunk j are out, not its direct
		 * scale-up ones too (off by default; docs/LIBFABRICDEV.md,
		 * "Shrinking chunks by default ...").
		 */
		h->nicpace = np && !strcmp(np, "1");
		hier_plan_init(c, &hp, 1);
		fdev_plan_need(&hp.p, rg.end * h->rec_size);
		for (unsigned int j = 0; j < h->chunks; j++)
			plan_send(h, &rg, j, &hp.p);
		for (unsigned int j = 0; j < h->chunks; j++)
			plan_forward(h, &rg, j, &hp.p);
		err = hier_run_gated(c, &hp, &ga, &t_steps);
		hier_plan_free(&hp);
	}
	for (unsigned int j = 0; !err && !hier_gated(c) && j <= h->chunks; j++) {
		uint64_t t;

		err = hier_dispatch_step(c, h, &rg, j, &t);
		t_steps += t;
	}
	h->st.dispatch_ps = t_counts + t_steps;
	for (unsigned int l = 0; !err && l < h->nlocal; l++)
		err = moe_receive(c, h, l, &hier_receive_steps, &rg);
	return err;
}

/* ------------------------------------------------------------------ */
/* Combine                                                             */

/*
 * Chunk @j's partials of remote sources to their peer in this node;
 * those of the node's own sources go straight back later, beside the
 * scale-out (as dispatch overlaps them the other way). @q: the chunk's
 * place in the combine's order (comb_chunk()), which paces a gated plan.
 */
static void plan_to_peers(struct fdev_moe_handle *h,
			  const struct hier_regions *rg, uint64_t crow,
			  unsigned int j, unsigned int q, struct fdev_plan *p)
{
	unsigned int n = h->nranks, g = h->node_size;

	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int d = 0; d < n; d++) {
			unsigned int nd = hier_node(h, d), s = (d + kk) % n, to;
			uint64_t cnt, at, src, dst;

			if (hier_node(h, s) == nd)
				continue;
			to = nd * g + s % g;
			if (!hier_keeps(p, d, to)) {
				if (hier_need_len(p))
					hier_left_out(p, d, to, cpair(h, j, s, d));
				continue;
			}
			cnt = cpair(h, j, s, d);
			if (!cnt)
				continue;
			at = pfx_pair(h, j, s, d);
			src = (rg->partials + off_partial(h, d, s) + at) * crow;
			dst = (rg->at_peer + off_forward(h, h->pair_tokens, to, d,
							 s, 1) + at) * crow;
			if (to == d) {
				hier_act(p, d, dst, src, cnt * crow);
				continue;
			}
			hier_xfer2(p, hier_send_step(h, d, q),
				   hier_group(h, to, j), hier_send_pace(h, d, q),
				   d, to, src, dst, cnt * crow);
			if (moe_is_local(h, d))
				h->st.combine_bytes += cnt * crow;
		}
}

/*
 * Peer @l: the partials of chunk @j of remote source @s's tokens, summed
 * per token, a token's partials in the order of its node's ranks.
 */
static int sum_at_peer(struct fdev_comm *c, struct fdev_moe_handle *h,
		       const struct hier_regions *rg, unsigned int l,
		       unsigned int s, unsigned int j, uint64_t crow)
{
	struct moe_rank *mr = &h->ranks[l];
	unsigned int n = h->nranks, g = h->node_size, H = h->cfg.hidden;
	unsigned int peer = h->first + l, np = hier_node(h, peer);
	uint64_t nr = cnode(h, j, s, np), first = pfx_node(h, j, s, np);
	int dt = moe_comb_dtype(h);
	float *acc = calloc(nr * H + 1, sizeof(float));

	if (!acc)
		return -ENOMEM;
	for (unsigned int d = np * g; d < (np + 1) * g; d++) {
		const uint64_t *pos = mr->fwd_pos +
				      mr->fwd_pos_start[(size_t)(d % g) * n + s];
		uint64_t at = rg->at_peer + off_forward(h, h->pair_tokens, peer,
							d, s, 1);
		uint64_t a = pfx_pair(h, j, s, d), b = a + cpair(h, j, s, d);

		for (uint64_t i = a; i < b; i++)
			moe_add_row(acc + (pos[i] - first) * H,
				    fdev_ws_addr(c, l, (at + i) * crow), H, dt);
	}
	for (uint64_t i = 0; i < nr; i++)
		moe_store_sum(fdev_ws_addr(c, l, (rg->summed + first +
						  off_scaleout_recv(h, peer, s) + i) * crow),
			      acc + i * H, H, dt);
	free(acc);
	return 0;
}

static int hier_sum_at_peers(struct fdev_comm *c, struct fdev_moe_handle *h,
			     const struct hier_regions *rg, unsigned int j,
			     uint64_t crow)
{
	int err = 0;

	for (unsigned int l = 0; l < h->nlocal; l++)
		for (unsigned int s = 0; !err && s < h->nranks; s++)
			if (forwards_for(h, h->first + l, s))
				err = sum_at_peer(c, h, rg, l, s, j, crow);
	return err;
}

/* Chunk @j of the node's own sources' partials, straight back over scale-up. */
static void plan_direct_back(struct fdev_moe_handle *h,
			     const struct hier_regions *rg, uint64_t crow,
			     unsigned int j, struct fdev_plan *p)
{
	unsigned int n = h->nranks, g = h->node_size;

	for (unsigned int kk = 0; kk < n; kk++)
		for (unsigned int d = 0; d < n; d++) {
			unsigned int s = (d + kk) % n;
			uint64_t cnt, at, src, dst;

			/* s = d + kk (mod n) shares d's node only where kk < g or > n - g */
			if (kk >= g && kk <= n - g)
				break;
			if (hier_node(h, s) != hier_node(h, d))
				continue;
			if (!hier_keeps(p, d, s)) {
				if (hier_need_len(p))
					hier_left_out(p, d, s, cpair(h, j, s, d));
				continue;
			}
			cnt = cpair(h, j, s, d);
			if (!cnt)
				continue;
			at = pfx_pair(h, j, s, d);
			src = (rg->partials + off_partial(h, d, s) + at) * crow;
			dst = (rg->direct_back + off_direct_send(h, s, d) + at) * crow;
			if (s == d) {
				hier_act(p, d, dst, src, cnt * crow);
				continue;
			}
			hier_xfer(p, hier_group(h, d, j), FDEV_PLAN_NO_GATE, d, s,
				  src, dst, cnt * crow);
			if (moe_is_local(h, d))
				h->st.combine_bytes += cnt * crow;
		}
}

/* Chunk @j: one summed row per (token, node) back over scale-out. */
static void plan_scaleout_back(struct fdev_moe_handle *h,
			       const struct hier_regions *rg, uint64_t crow,
			       unsigned int j, struct fdev_plan *p)
{
	unsigned int n = h->nranks, g = h->node_size;

	/* s = peer + kk (mod n) has peer's local index only where g | kk */
	for (unsigned int kk = 0; kk < n; kk += g)
		for (unsigned int peer = 0; peer < n; peer++) {
			unsigned int s = (peer + kk) % n, np = hier_node(h, peer);
			uint64_t cnt, at;

			if (!forwards_for(h, peer, s))
				continue;
			if (!hier_keeps(p, peer, s)) {
				if (hier_need_len(p))
					hier_left_out(p, peer, s, cnode(h, j, s, np));
				continue;
			}
			cnt = cnode(h, j, s, np);
			if (!cnt)
				continue;
			at = pfx_node(h, j, s, np);
			hier_xfer(p, hier_group(h, peer, j), FDEV_PLAN_NO_GATE,
				  peer, s,
				  (rg->summed + off_scaleout_recv(h, peer, s) + at) * crow,
				  (rg->scaleout_back + off_scaleout_send(h, s, np) + at) * crow,
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

/*
 * The chunk combine takes @q-th: the last first where the chunks shrink
 * (the small ones then fill the pipeline, the NIC being combine's second
 * stage), in order where they do not; FDEV_HIER_CREV=1 or 0 says which.
 */
static unsigned int comb_chunk(const struct fdev_moe_handle *h, unsigned int q)
{
	const char *e = getenv("FDEV_HIER_CREV");
	int rev = e && *e ? !strcmp(e, "1") : h->taper < 100;

	return rev ? h->chunks - 1 - q : q;
}

/*
 * Combine step @j of C + 1: chunk j's partials to the peers (j < C),
 * while chunk j - 1's sums, which the peers make first, cross scale-out
 * and the node's own partials of that chunk go straight back. *@t_ps:
 * its time, 0 when it moved nothing.
 */
static int hier_combine_step(struct fdev_comm *c, struct fdev_moe_handle *h,
			     const struct hier_combine *hc, unsigned int j,
			     uint64_t *t_ps)
{
	struct hier_plan hp;
	struct fdev_plan *p = &hp.p;
	int err = 0;

	*t_ps = 0;
	if (j && !h->timing)
		err = hier_sum_at_peers(c, h, &hc->rg, comb_chunk(h, j - 1),
					hc->crow);
	if (err)
		return err;
	hier_plan_init(c, &hp, 0);
	fdev_plan_need(p, hc->rg.cend * hc->crow);
	/*
	 * Scale-out first: a transfer holds a DMA engine until it is out,
	 * and the scale-up ones posted before it would hold it back.
	 */
	if (j) {
		plan_scaleout_back(h, &hc->rg, hc->crow, comb_chunk(h, j - 1), p);
		plan_direct_back(h, &hc->rg, hc->crow, comb_chunk(h, j - 1), p);
	}
	if (j < h->chunks)
		plan_to_peers(h, &hc->rg, hc->crow, comb_chunk(h, j), j, p);
	err = fdev_plan_finish(p);
	if (!err && hp.any)
		err = fdev_plan_run(c, p);
	*t_ps = hp.any_x ? c->last_ps : 0;
	hier_trace_step(h, "combine", j, p, *t_ps);
	hier_plan_free(&hp);
	return err;
}

static int moe_combine_hier(struct fdev_comm *c, struct fdev_moe_handle *h,
			    const void *const *y, void *const *out)
{
	struct hier_combine hc;
	uint64_t t_steps = 0;
	int err = 0;

	hc.crow = moe_round8(h->cfg.hidden * fdev_dtype_size(moe_comb_dtype(h)));
	err = hier_regions(h, &hc.rg);
	if (err)
		return err;
	if (!h->timing && hc.rg.cend * hc.crow > c->ws_bytes)
		return -EMSGSIZE;
	if (!h->timing)
		moe_partials(c, h, y, hc.rg.partials * hc.crow, hc.crow);
	if (hier_gated(c)) {
		struct hier_gate_arg ga = { .h = h, .rg = &hc.rg,
					    .crow = hc.crow };
		struct hier_plan hp;

		h->ahead = hier_ahead(HIER_AHEAD_COMBINE, 1);
		hier_plan_init(c, &hp, 1);
		fdev_plan_need(&hp.p, hc.rg.cend * hc.crow);
		/*
		 * The node's own partials of chunk j go back from d once d's
		 * sums of chunk j go, after them (scale-out first, as the
		 * stepped schedule posts them).
		 */
		for (unsigned int q = 0; q < h->chunks; q++)
			plan_to_peers(h, &hc.rg, hc.crow, comb_chunk(h, q), q,
				      &hp.p);
		for (unsigned int q = 0; q < h->chunks; q++)
			plan_scaleout_back(h, &hc.rg, hc.crow, comb_chunk(h, q),
					   &hp.p);
		for (unsigned int q = 0; q < h->chunks; q++)
			plan_direct_back(h, &hc.rg, hc.crow, comb_chunk(h, q),
					 &hp.p);
		err = hier_run_gated(c, &hp, &ga, &t_steps);
		hier_plan_free(&hp);
	}
	for (unsigned int j = 0; !err && !hier_gated(c) && j <= h->chunks; j++) {
		uint64_t t;

		err = hier_combine_step(c, h, &hc, j, &t);
		t_steps += t;
	}
	h->st.combine_ps = t_steps;
	if (!err && !h->timing)
		err = moe_sum_at_sources(c, h, out, &hier_combine_steps, &hc);
	return err;
}

const struct moe_mode moe_mode_hier = {
	.dispatch = moe_dispatch_hier,
	.combine = moe_combine_hier,
};
