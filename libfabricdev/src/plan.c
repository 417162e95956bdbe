// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Collective schedules (see plan.h). Every builder is BSP: in one step no
 * transfer reads bytes that another transfer of the same step writes, and
 * the receiver's actions run after every transfer of the step landed;
 * but for the dataflow rings (rings.c, plan->feeds), whose steps are
 * gated on what feeds them and run their actions first.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "fabricdev.h"
#include "plan.h"

void fdev_plan_init(struct fdev_plan *p)
{
	memset(p, 0, sizeof(*p));
}

void fdev_plan_free(struct fdev_plan *p)
{
	free(p->x);
	free(p->a);
	free(p->feeds);
	memset(p, 0, sizeof(*p));
}

void fdev_plan_only(struct fdev_plan *p, uint32_t first, uint32_t n)
{
	p->only_first = first;
	p->only_n = n;
}

/* Whether @rank is one fdev_plan_only() keeps. */
static int plan_keeps(const struct fdev_plan *p, uint32_t rank)
{
	return !p->only_n || (rank >= p->only_first &&
			      rank - p->only_first < p->only_n);
}

int fdev_plan_keeps(const struct fdev_plan *p, uint32_t rank)
{
	return plan_keeps(p, rank);
}

/* An entry left out: its step still counts, as plan_append() would. */
static void plan_skip(struct fdev_plan *p, uint32_t step, uint64_t len)
{
	if (len && step + 1 > p->nsteps)
		p->nsteps = step + 1;
}

/*
 * Room for one more entry of @sz bytes at the end of *@arr (*@n used,
 * *@cap allocated) for @step, or NULL: @p failed before or fails now
 * (-ENOMEM, sticky), or the entry moves no bytes (@len 0).
 */
static void *plan_append(struct fdev_plan *p, void **arr, size_t *cap,
			 size_t *n, size_t sz, uint32_t step, uint64_t len)
{
	if (p->err || !len)
		return NULL;
	if (fdev_array_grow(arr, cap, *n, sz, 64)) {
		p->err = -ENOMEM;
		return NULL;
	}
	if (step + 1 > p->nsteps)
		p->nsteps = step + 1;
	return (char *)*arr + (*n)++ * sz;
}

void fdev_plan_xfer(struct fdev_plan *p, uint32_t step, uint32_t src,
		    uint32_t dst, uint64_t src_off, uint64_t dst_off,
		    uint64_t len)
{
	struct fdev_xfer *x;

	if (!plan_keeps(p, src) &&
	    (dst == FDEV_PLAN_MCAST || !plan_keeps(p, dst))) {
		plan_skip(p, step, len);
		return;
	}
	x = plan_append(p, (void **)&p->x, &p->capx, &p->nx, sizeof(*x), step,
			len);

	if (x)
		*x = (struct fdev_xfer){ .step = step, .src = src, .dst = dst,
			.src_off = src_off, .dst_off = dst_off, .len = len };
}

void fdev_plan_mcast(struct fdev_plan *p, uint32_t step, uint32_t src,
		     uint32_t nranks, uint64_t src_off, uint64_t dst_off,
		     uint64_t len)
{
	if (p->mcast_ranks && p->mcast_ranks != nranks)
		p->err = -EINVAL;
	p->mcast_ranks = nranks;
	fdev_plan_xfer(p, step, src, FDEV_PLAN_MCAST, src_off, dst_off, len);
}

void fdev_plan_act(struct fdev_plan *p, uint32_t step, uint32_t rank, int op,
		   int dtype, uint64_t dst_off, uint64_t src_off, uint64_t len)
{
	struct fdev_act *a;

	if (!plan_keeps(p, rank)) {
		plan_skip(p, step, len);
		return;
	}
	a = plan_append(p, (void **)&p->a, &p->capa, &p->na, sizeof(*a), step,
			len);

	p->acts_sorted = 0;
	if (a)
		*a = (struct fdev_act){ .step = step, .rank = rank,
			.op = (uint8_t)op, .dtype = (uint8_t)dtype,
			.dst_off = dst_off, .src_off = src_off, .len = len };
}

void fdev_plan_need(struct fdev_plan *p, uint64_t bytes)
{
	if (bytes > p->ws_need)
		p->ws_need = bytes;
}

static int cmp_x(const void *a, const void *b)
{
	const struct fdev_xfer *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return x->pad < y->pad ? -1 : x->pad > y->pad;
}

static int cmp_a(const void *a, const void *b)
{
	const struct fdev_act *x = a, *y = b;
	uint32_t ix, iy;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	memcpy(&ix, x->pad, 4);
	memcpy(&iy, y->pad, 4);
	return ix < iy ? -1 : ix > iy;
}

int fdev_plan_finish(struct fdev_plan *p)
{
	if (p->err)
		return p->err;
	/* qsort is not stable: the insertion index breaks ties. */
	for (size_t i = 0; i < p->nx; i++)
		p->x[i].pad = (uint32_t)i;
	for (size_t i = 0; i < p->na; i++) {
		uint32_t ix = (uint32_t)i;

		memcpy(p->a[i].pad, &ix, 4);
	}
	if (p->nx)
		qsort(p->x, p->nx, sizeof(*p->x), cmp_x);
	if (p->na)
		qsort(p->a, p->na, sizeof(*p->a), cmp_a);
	p->acts_sorted = 1;
	return 0;
}

static uint64_t pieces_of(const struct fdev_xfer *x, uint64_t piece)
{
	uint64_t body = x->len - x->head;

	if (x->dst == FDEV_PLAN_MCAST || (x->head && !body))
		return 1;
	return (body + piece - 1) / piece;
}

/* Where piece @r of @x starts, and (@r + 1: where it ends) its end. */
static uint64_t piece_at(const struct fdev_xfer *x, uint64_t piece,
			 uint64_t r)
{
	uint64_t at = r ? x->head + r * piece : 0;

	return at < x->len ? at : x->len;
}

/*
 * The piece size of each transfer of the step [@b, @e), into @xpiece:
 * its source's, @piece or larger. Returns the step's pieces.
 */
static uint64_t step_pieces(const struct fdev_plan *p, size_t b, size_t e,
			    uint64_t piece, uint64_t max_pieces, uint64_t *ps,
			    uint64_t *count, uint32_t nsrc, uint64_t *xpiece)
{
	uint64_t total = 0;
	int again = 1;

	for (uint32_t s = 0; s < nsrc; s++)
		ps[s] = piece;
	while (again) {
		again = 0;
		memset(count, 0, nsrc * sizeof(*count));
		for (size_t i = b; i < e; i++)
			count[p->x[i].src] += pieces_of(&p->x[i], ps[p->x[i].src]);
		for (uint32_t s = 0; s < nsrc; s++)
			if (count[s] > max_pieces && ps[s] < UINT64_MAX / 2) {
				ps[s] *= 2;
				again = 1;
			}
	}
	for (size_t i = b; i < e; i++)
		xpiece[i] = ps[p->x[i].src];
	for (uint32_t s = 0; s < nsrc; s++)
		total += count[s];
	return total;
}

/* How many rounds after the step's first transfer @x's first piece goes. */
static uint64_t xfer_delay(const struct fdev_xfer *x, const uint16_t *lead,
			   uint32_t nlead, uint16_t most)
{
	if (!lead || x->src >= nlead || x->dst >= nlead)
		return most;
	return most - lead[(size_t)x->src * nlead + x->dst];
}

/*
 * Step [@b, @e), its transfers cut at @xpiece, into @out, piece-major (a
 * counting sort by round): piece r of a transfer goes in round r, plus
 * the rounds by which @lead puts it behind the step's longest lead.
 */
static int step_interleave(const struct fdev_plan *p, size_t b, size_t e,
			   const uint64_t *xpiece, const uint16_t *lead,
			   uint32_t nlead, struct fdev_xfer *out)
{
	uint64_t rounds = 0, *start;
	uint16_t most = 0;

	for (size_t i = b; lead && i < e; i++)
		if (p->x[i].src < nlead && p->x[i].dst < nlead &&
		    lead[(size_t)p->x[i].src * nlead + p->x[i].dst] > most)
			most = lead[(size_t)p->x[i].src * nlead + p->x[i].dst];
	for (size_t i = b; i < e; i++) {
		uint64_t np = pieces_of(&p->x[i], xpiece[i]) +
			      xfer_delay(&p->x[i], lead, nlead, most);

		rounds = np > rounds ? np : rounds;
	}
	start = calloc(rounds + 1, sizeof(*start));
	if (!start)
		return -ENOMEM;
	/* start[r]: pieces in round r, then where round r begins. */
	for (size_t i = b; i < e; i++) {
		uint64_t d = xfer_delay(&p->x[i], lead, nlead, most);

		for (uint64_t r = 0; r < pieces_of(&p->x[i], xpiece[i]); r++)
			start[d + r]++;
	}
	for (uint64_t r = 0, at = 0; r < rounds; r++) {
		uint64_t n = start[r];

		start[r] = at;
		at += n;
	}
	for (size_t i = b; i < e; i++) {
		const struct fdev_xfer *x = &p->x[i];
		uint64_t piece = xpiece[i], np = pieces_of(x, piece);
		uint64_t d = xfer_delay(x, lead, nlead, most);

		for (uint64_t r = 0; r < np; r++) {
			struct fdev_xfer *o = &out[start[d + r]++];

			*o = *x;
			if (x->dst == FDEV_PLAN_MCAST)
				continue;
			o->src_off += piece_at(x, piece, r);
			o->dst_off += piece_at(x, piece, r);
			o->len = piece_at(x, piece, r + 1) - piece_at(x, piece, r);
			o->head = 0;
		}
	}
	free(start);
	return 0;
}

/* One more than the highest source rank of the plan's transfers. */
static uint32_t plan_nsrc(const struct fdev_plan *p)
{
	uint32_t n = 0;

	for (size_t i = 0; i < p->nx; i++)
		n = p->x[i].src + 1 > n ? p->x[i].src + 1 : n;
	return n;
}

int fdev_plan_interleave(struct fdev_plan *p, uint64_t piece,
			 uint64_t max_pieces)
{
	return fdev_plan_interleave_lead(p, piece, max_pieces, NULL, 0);
}

int fdev_plan_interleave_lead(struct fdev_plan *p, uint64_t piece,
			      uint64_t max_pieces, const uint16_t *lead,
			      uint32_t nlead)
{
	uint64_t *ps = NULL, *count = NULL, *xpiece = NULL, total = 0, at = 0;
	struct fdev_xfer *out = NULL;
	uint32_t nsrc;
	size_t b, e;
	int err = -ENOMEM;

	if (p->err || !piece || !p->nx)
		return p->err;
	if (!max_pieces)
		return -EINVAL;
	nsrc = plan_nsrc(p);
	ps = calloc(nsrc, sizeof(*ps));
	count = calloc(nsrc, sizeof(*count));
	xpiece = calloc(p->nx, sizeof(*xpiece));
	if (!ps || !count || !xpiece)
		goto out;
	for (b = 0; b < p->nx; b = e) {
		for (e = b; e < p->nx && p->x[e].step == p->x[b].step; e++)
			;
		total += step_pieces(p, b, e, piece, max_pieces, ps, count,
				     nsrc, xpiece);
	}
	out = malloc(total * sizeof(*out));
	if (!out)
		goto out;
	for (b = 0; b < p->nx; b = e) {
		uint64_t n = 0;

		for (e = b; e < p->nx && p->x[e].step == p->x[b].step; e++)
			n += pieces_of(&p->x[e], xpiece[e]);
		err = step_interleave(p, b, e, xpiece, lead, nlead, out + at);
		if (err)
			goto out;
		at += n;
	}
	free(p->x);
	p->x = out;
	p->nx = p->capx = total;
	out = NULL;
	err = 0;
out:
	free(out);
	free(ps);
	free(count);
	free(xpiece);
	return err;
}

/* A piece of fdev_plan_far_first()'s tail: its key, and where it was. */
struct tail_piece {
	int64_t key;
	uint64_t at;
};

static int cmp_tail(const void *a, const void *b)
{
	const struct tail_piece *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int in_range(const struct fdev_src_range *r, uint32_t src)
{
	return !r || (src >= r->first && src - r->first < r->n);
}

/* The pieces of the plan whose source is in @r (all: p->nx). */
static size_t range_pieces(const struct fdev_plan *p,
			   const struct fdev_src_range *r)
{
	size_t m = 0;

	for (size_t i = 0; r && i < p->nx; i++)
		m += in_range(r, p->x[i].src);
	return r ? m : p->nx;
}

/* A piece of a step: its source, its first link, and where it is. */
struct src_piece {
	uint32_t src, first;
	uint64_t at;
};

static int cmp_src(const void *a, const void *b)
{
	const struct src_piece *x = a, *y = b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * The pieces of one step, @p->x[@b..@e), of the sources in @r, in @g by
 * source, then first link (@first[src * n + dst]), each in step order;
 * returns how many.
 */
static uint64_t step_src_pieces(const struct fdev_plan *p, size_t b, size_t e,
				const uint32_t *first, uint32_t n,
				const struct fdev_src_range *r, struct src_piece *g)
{
	uint64_t m = 0;

	for (size_t i = b; i < e; i++) {
		const struct fdev_xfer *x = &p->x[i];

		if (x->src >= n || x->dst >= n || !in_range(r, x->src))
			continue;
		g[m++] = (struct src_piece){
			.src = x->src,
			.first = first[(size_t)x->src * n + x->dst],
			.at = i };
	}
	qsort(g, m, sizeof(*g), cmp_src);
	return m;
}

/*
 * The pieces of one source and first link in step order, @g[0..@m): the
 * last FDEV_FAR_FIRST_TAIL_DIV-th of them dealt out again, far pairs
 * first (each piece's key its place less FDEV_FAR_FIRST_PER_HOP places
 * per hop of its route, a pair's pieces keeping their order). @tmp,
 * @tp: scratch of @m.
 */
static void far_first_group(struct fdev_plan *p, const struct src_piece *g,
			    uint64_t m, const uint32_t *hops, uint32_t n,
			    struct fdev_xfer *tmp, struct tail_piece *tp)
{
	uint64_t from = m - (m + FDEV_FAR_FIRST_TAIL_DIV - 1) /
			    FDEV_FAR_FIRST_TAIL_DIV;

	for (uint64_t a = from; a < m; a++) {
		const struct fdev_xfer *x = &p->x[g[a].at];

		tp[a - from] = (struct tail_piece){
			.key = (int64_t)a - (int64_t)FDEV_FAR_FIRST_PER_HOP *
			       hops[(size_t)x->src * n + x->dst],
			.at = g[a].at };
	}
	qsort(tp, m - from, sizeof(*tp), cmp_tail);
	for (uint64_t a = from; a < m; a++)
		tmp[a - from] = p->x[tp[a - from].at];
	for (uint64_t a = from; a < m; a++)
		p->x[g[a].at] = tmp[a - from];
}

int fdev_plan_far_first(struct fdev_plan *p, const uint32_t *hops,
			const uint32_t *first, uint32_t n,
			const struct fdev_src_range *r)
{
	struct src_piece *g = NULL;
	struct tail_piece *tp = NULL;
	struct fdev_xfer *tmp = NULL;
	size_t b, e, np;

	if (p->err || !p->nx)
		return p->err;
	np = range_pieces(p, r);
	if (!np)
		return 0;
	g = malloc(np * sizeof(*g));
	tp = malloc(np * sizeof(*tp));
	tmp = malloc(np * sizeof(*tmp));
	if (!g || !tp || !tmp) {
		free(g);
		free(tp);
		free(tmp);
		return -ENOMEM;
	}
	for (b = 0; b < p->nx; b = e) {
		for (e = b; e < p->nx && p->x[e].step == p->x[b].step; e++)
			;
		uint64_t m = step_src_pieces(p, b, e, first, n, r, g);

		for (uint64_t j = 0, k; j < m; j = k) {
			for (k = j; k < m && g[k].src == g[j].src &&
			     g[k].first == g[j].first; k++)
				;
			far_first_group(p, g + j, k - j, hops, n, tmp, tp);
		}
	}
	free(g);
	free(tp);
	free(tmp);
	return 0;
}

/*
 * One source's pieces of a step, @g[0..@m) by first link then step
 * order: its first places dealt out over its first links
 * (fdev_plan_start_fill()). @tmp, @pos, @rest, @taken, @root:
 * scratch of @m; @lk too, a link's first, end and next piece in @g.
 */
static void start_fill_src(struct fdev_plan *p, const struct src_piece *g,
			   uint64_t m, struct fdev_xfer *tmp, uint64_t *pos,
			   uint64_t *rest, uint8_t *taken, uint64_t (*lk)[3],
			   double *root)
{
	uint64_t nl = 0, fill, w = 0;

	for (uint64_t a = 0; a < m; a++) {
		if (!a || g[a].first != g[a - 1].first) {
			lk[nl][0] = lk[nl][2] = a;
			nl++;
		}
		lk[nl - 1][1] = a + 1;
		taken[a] = 0;
	}
	for (uint64_t k = 0; k < nl; k++)
		root[k] = sqrt(sqrt((double)(lk[k][1] - lk[k][0])));
	fill = FDEV_START_FILL < m ? FDEV_START_FILL : m;
	while (w < fill) {
		double best = 0;
		uint64_t bk = nl;

		for (uint64_t k = 0; k < nl; k++) {
			double key;

			if (lk[k][2] >= lk[k][1])
				continue;
			key = ((double)(lk[k][2] - lk[k][0]) + 0.5) / root[k];
			if (bk == nl || key < best) {
				best = key;
				bk = k;
			}
		}
		tmp[w++] = p->x[g[lk[bk][2]].at];
		taken[lk[bk][2]++] = 1;
	}
	/* The rest in step order after them, into the source's places. */
	for (uint64_t a = 0, r = 0; a < m; a++)
		if (!taken[a])
			rest[r++] = g[a].at;
	qsort(rest, m - w, sizeof(*rest), cmp_u64);
	for (uint64_t a = 0; a < m - w; a++)
		tmp[w + a] = p->x[rest[a]];
	for (uint64_t a = 0; a < m; a++)
		pos[a] = g[a].at;
	qsort(pos, m, sizeof(*pos), cmp_u64);
	for (uint64_t a = 0; a < m; a++)
		p->x[pos[a]] = tmp[a];
}

int fdev_plan_start_fill(struct fdev_plan *p, const uint32_t *first,
			 uint32_t n, const struct fdev_src_range *r)
{
	size_t np = p->err ? 0 : range_pieces(p, r);
	struct src_piece *g = malloc(np * sizeof(*g));
	struct fdev_xfer *tmp = malloc(np * sizeof(*tmp));
	uint64_t *pos = malloc(np * sizeof(*pos));
	uint64_t *rest = malloc(np * sizeof(*rest));
	uint8_t *taken = malloc(np);
	uint64_t (*lk)[3] = malloc(np * sizeof(*lk));
	double *root = malloc(np * sizeof(*root));
	size_t b, e;
	int err = p->err;

	if (!err && np &&
	    (!g || !tmp || !pos || !rest || !taken || !lk || !root))
		err = -ENOMEM;
	for (b = np ? 0 : p->nx; !err && b < p->nx; b = e) {
		uint64_t m;

		for (e = b; e < p->nx && p->x[e].step == p->x[b].step; e++)
			;
		m = step_src_pieces(p, b, e, first, n, r, g);
		for (uint64_t j = 0, k; j < m; j = k) {
			for (k = j; k < m && g[k].src == g[j].src; k++)
				;
			start_fill_src(p, g + j, k - j, tmp, pos, rest, taken,
				       lk, root);
		}
	}
	free(g);
	free(tmp);
	free(pos);
	free(rest);
	free(taken);
	free(lk);
	free(root);
	return err;
}

/*
 * The most pieces of @piece bytes any source of step [@b, @e) has when
 * every transfer's pieces go in @m runs (a run of np pieces holds at
 * most ceil(np / m)); @count: [nsrc] scratch. With @ntr, the most
 * transfers any source has instead.
 */
static uint64_t step_worst(const struct fdev_plan *p, size_t b, size_t e,
			   uint64_t piece, uint64_t m, int ntr,
			   uint64_t *count, uint32_t nsrc)
{
	uint64_t worst = 0;

	memset(count, 0, nsrc * sizeof(*count));
	for (size_t i = b; i < e; i++)
		count[p->x[i].src] += ntr ? 1 :
			(pieces_of(&p->x[i], piece) + m - 1) / m;
	for (uint32_t s = 0; s < nsrc; s++)
		worst = count[s] > worst ? count[s] : worst;
	return worst;
}

/* Sub-steps for step [@b, @e): the fewest runs that fit, else 1. */
static uint64_t step_runs(const struct fdev_plan *p, size_t b, size_t e,
			  uint64_t piece, uint64_t max_pieces,
			  uint64_t *count, uint32_t nsrc)
{
	uint64_t worst = step_worst(p, b, e, piece, 1, 0, count, nsrc), m;

	if (worst <= max_pieces ||
	    step_worst(p, b, e, piece, 1, 1, count, nsrc) > max_pieces)
		return 1;
	/* Ends: at m = the largest np every transfer is one piece a run. */
	for (m = (worst + max_pieces - 1) / max_pieces;
	     step_worst(p, b, e, piece, m, 0, count, nsrc) > max_pieces; m++)
		;
	return m;
}

/* Run @j of @m of transfer @x's pieces, as a transfer of step @step. */
static int run_of(const struct fdev_xfer *x, uint64_t piece, uint64_t j,
		  uint64_t m, uint32_t step, struct fdev_xfer *o)
{
	uint64_t np = pieces_of(x, piece), lo = j * np / m,
		 hi = (j + 1) * np / m;

	if (x->dst == FDEV_PLAN_MCAST ? j : hi == lo)
		return 0;
	*o = *x;
	o->step = step;
	if (x->dst == FDEV_PLAN_MCAST)
		return 1;
	o->src_off += piece_at(x, piece, lo);
	o->dst_off += piece_at(x, piece, lo);
	o->len = piece_at(x, piece, hi) - piece_at(x, piece, lo);
	o->head = lo ? 0 : x->head;
	return 1;
}

int fdev_plan_split_steps(struct fdev_plan *p, uint64_t piece,
			  uint64_t max_pieces)
{
	uint64_t *count = NULL, *runs = NULL, *base = NULL, total = 0, at = 0;
	struct fdev_xfer *out = NULL;
	uint32_t nsrc;
	size_t b, e;
	int err = -ENOMEM;

	if (p->err || !piece || !p->nx)
		return p->err;
	if (!max_pieces)
		return -EINVAL;
	nsrc = plan_nsrc(p);
	count = calloc(nsrc, sizeof(*count));
	runs = calloc(p->nsteps, sizeof(*runs));
	base = calloc(p->nsteps + 1, sizeof(*base));
	if (!count || !runs || !base)
		goto out;
	for (uint32_t s = 0; s < p->nsteps; s++)
		runs[s] = 1;
	for (b = 0; b < p->nx; b = e) {
		for (e = b; e < p->nx && p->x[e].step == p->x[b].step; e++)
			;
		runs[p->x[b].step] = step_runs(p, b, e, piece, max_pieces,
					       count, nsrc);
		for (size_t i = b; i < e; i++)
			total += pieces_of(&p->x[i], piece) < runs[p->x[b].step] ?
				 pieces_of(&p->x[i], piece) : runs[p->x[b].step];
	}
	for (uint32_t s = 0; s < p->nsteps; s++)
		base[s + 1] = base[s] + runs[s];
	if (base[p->nsteps] == p->nsteps) {
		err = 0;
		goto out;
	}
	if (base[p->nsteps] > UINT32_MAX)
		goto out;
	out = malloc(total * sizeof(*out));
	if (!out)
		goto out;
	for (b = 0; b < p->nx; b = e) {
		uint32_t s = p->x[b].step;

		for (e = b; e < p->nx && p->x[e].step == s; e++)
			;
		for (uint64_t j = 0; j < runs[s]; j++)
			for (size_t i = b; i < e; i++)
				at += run_of(&p->x[i], piece, j, runs[s],
					     (uint32_t)(base[s] + j), out + at);
	}
	/* A step's actions follow all of its transfers: its last run's. */
	for (size_t i = 0; i < p->na; i++)
		p->a[i].step = (uint32_t)(base[p->a[i].step + 1] - 1);
	free(p->x);
	p->x = out;
	p->nx = p->capx = at;
	p->nsteps = (uint32_t)base[p->nsteps];
	out = NULL;
	err = 0;
out:
	free(out);
	free(count);
	free(runs);
	free(base);
	return err;
}

/*
 * d[i] = d[i] + s[i] over n elements of @type; @add combines two
 * elements (16-bit floats are summed as floats, integers wrap).
 */
#define REDUCE(type, add)						\
	do {								\
		type *d = dst;						\
		const type *s = src;					\
									\
		for (size_t i = 0; i < n; i++)				\
			d[i] = add(d[i], s[i]);				\
	} while (0)

#define ADD_F32(a, b)	((a) + (b))
#define ADD_BF16(a, b)	fdev_f32_to_bf16(fdev_bf16_to_f32(a) + fdev_bf16_to_f32(b))
#define ADD_F16(a, b)	fdev_f32_to_f16(fdev_f16_to_f32(a) + fdev_f16_to_f32(b))
#define ADD_I32(a, b)	((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define ADD_I64(a, b)	((int64_t)((uint64_t)(a) + (uint64_t)(b)))

int fdev_reduce(void *dst, const void *src, size_t n, int dtype)
{
	switch (dtype) {
	case FDEV_F32:
		REDUCE(float, ADD_F32);
		return 0;
	case FDEV_BF16:
		REDUCE(uint16_t, ADD_BF16);
		return 0;
	case FDEV_F16:
		REDUCE(uint16_t, ADD_F16);
		return 0;
	case FDEV_I32:
		REDUCE(int32_t, ADD_I32);
		return 0;
	case FDEV_I64:
		REDUCE(int64_t, ADD_I64);
		return 0;
	default:
		return -EINVAL;
	}
}

uint8_t *fdev_plan_at(const struct fdev_plan_map *m, uint64_t off)
{
	for (int i = 0; i < 2; i++)
		if (m->addr[i] && off >= m->off[i] && off - m->off[i] < m->len[i])
			return m->addr[i] + (off - m->off[i]);
	return m->ws + off;
}

/* The first of a finished plan's actions at or after (@step, @rank). */
static size_t acts_from(const struct fdev_plan *p, uint32_t step,
			uint32_t rank)
{
	size_t lo = 0, hi = p->na;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct fdev_act *a = &p->a[mid];

		if (a->step < step || (a->step == step && a->rank < rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int fdev_plan_apply_map(const struct fdev_plan *p, uint32_t step,
			uint32_t rank, const struct fdev_plan_map *m)
{
	/*
	 * A finished plan's actions are in (step, rank, insertion) order,
	 * so a step's for one rank are one run, found by bisection: a
	 * dataflow plan applies every step for every rank.
	 */
	for (size_t i = p->acts_sorted ? acts_from(p, step, rank) : 0;
	     i < p->na; i++) {
		const struct fdev_act *a = &p->a[i];
		uint8_t *dst, *src;

		if (a->step != step || a->rank != rank) {
			if (p->acts_sorted)
				break;
			continue;
		}
		dst = fdev_plan_at(m, a->dst_off);
		src = fdev_plan_at(m, a->src_off);
		if (a->op == FDEV_ACT_COPY) {
			/* An in-place all-reduce copies its buffer onto itself. */
			if (dst != src)
				memmove(dst, src, a->len);
		} else {
			size_t es = fdev_dtype_size(a->dtype);
			int err = fdev_reduce(dst, src, a->len / es, a->dtype);

			if (err)
				return err;
		}
	}
	return 0;
}

int fdev_plan_apply(const struct fdev_plan *p, uint32_t step, uint32_t rank,
		    uint8_t *ws)
{
	const struct fdev_plan_map m = { .ws = ws };

	return fdev_plan_apply_map(p, step, rank, &m);
}

int fdev_plan_exec_host(const struct fdev_plan *p, uint8_t *const *ws)
{
	size_t xi = 0;

	uint32_t maxr = 0;

	for (size_t i = 0; i < p->na; i++)
		if (p->a[i].rank + 1 > maxr)
			maxr = p->a[i].rank + 1;
	for (uint32_t s = 0; s < p->nsteps; s++) {
		/* A dataflow plan sums what landed before forwarding it. */
		for (uint32_t r = 0; p->acts_first && r < maxr; r++) {
			int err = fdev_plan_apply(p, s, r, ws[r]);

			if (err)
				return err;
		}
		for (; xi < p->nx && p->x[xi].step == s; xi++) {
			const struct fdev_xfer *x = &p->x[xi];

			if (x->dst == FDEV_PLAN_MCAST) {
				for (uint32_t d = 0; d < p->mcast_ranks; d++)
					if (d != x->src)
						memcpy(ws[d] + x->dst_off,
						       ws[x->src] + x->src_off, x->len);
				continue;
			}
			memcpy(ws[x->dst] + x->dst_off, ws[x->src] + x->src_off,
			       x->len);
		}
		for (uint32_t r = 0; !p->acts_first && r < maxr; r++) {
			int err = fdev_plan_apply(p, s, r, ws[r]);

			if (err)
				return err;
		}
	}
	return 0;
}

/* ---- building blocks over a group of members ---- */

static uint64_t align8(uint64_t v)
{
	return (v + 63) & ~63ULL;
}

/* Block i of @m over @total bytes of @es-byte elements. */
static uint64_t blk_start(uint64_t total, size_t es, unsigned int m,
			  unsigned int i)
{
	uint64_t n = total / es;

	return n * i / m * es;
}

static uint64_t blk_len(uint64_t total, size_t es, unsigned int m,
			unsigned int i)
{
	return blk_start(total, es, m, i + 1) - blk_start(total, es, m, i);
}

/* Ring reduce-scatter: member i ends with block i of [base, +total). */
static uint32_t ring_rs(struct fdev_plan *p, uint32_t step,
			const uint32_t *mem, unsigned int m, uint64_t base,
			uint64_t total, int dt, uint64_t tmp)
{
	size_t es = fdev_dtype_size(dt);

	for (unsigned int k = 0; k + 1 < m; k++, step++) {
		for (unsigned int i = 0; i < m; i++) {
			unsigned int b = (i + 2 * m - k - 1) % m;
			uint32_t dst = mem[(i + 1) % m];
			uint64_t off = base + blk_start(total, es, m, b);
			uint64_t len = blk_len(total, es, m, b);

			fdev_plan_xfer(p, step, mem[i], dst, off, tmp, len);
			fdev_plan_act(p, step, dst, FDEV_ACT_REDUCE, dt, off,
				      tmp, len);
		}
	}
	return step;
}

/* Ring all-gather: member i starts with block i, all end with all. */
static uint32_t ring_ag(struct fdev_plan *p, uint32_t step,
			const uint32_t *mem, unsigned int m, uint64_t base,
			uint64_t total, size_t es)
{
	for (unsigned int k = 0; k + 1 < m; k++, step++) {
		for (unsigned int i = 0; i < m; i++) {
			unsigned int b = (i + m - k) % m;
			uint64_t off = base + blk_start(total, es, m, b);

			fdev_plan_xfer(p, step, mem[i], mem[(i + 1) % m], off,
				       off, blk_len(total, es, m, b));
		}
	}
	return step;
}

static uint32_t direct_rs(struct fdev_plan *p, uint32_t step,
			  const uint32_t *mem, unsigned int m, uint64_t base,
			  uint64_t total, int dt, uint64_t tmp)
{
	size_t es = fdev_dtype_size(dt);
	uint64_t slot = align8(blk_len(total, es, m, m - 1) + es);

	if (m < 2)
		return step;
	/* Posted as the all-to-all posts them: round k, i sends to i + k. */
	for (unsigned int k = 1; k < m; k++)
		for (unsigned int i = 0; i < m; i++) {
			unsigned int j = (i + k) % m;

			fdev_plan_xfer(p, step, mem[i], mem[j],
				       base + blk_start(total, es, m, j),
				       tmp + i * slot, blk_len(total, es, m, j));
		}
	/* Summed in member order, whatever order the blocks arrived in. */
	for (unsigned int i = 0; i < m; i++)
		for (unsigned int j = 0; j < m; j++)
			if (i != j)
				fdev_plan_act(p, step, mem[j], FDEV_ACT_REDUCE,
					      dt, base + blk_start(total, es, m, j),
					      tmp + i * slot,
					      blk_len(total, es, m, j));
	fdev_plan_need(p, tmp + m * slot);
	return step + 1;
}

static uint32_t direct_ag(struct fdev_plan *p, uint32_t step,
			  const uint32_t *mem, unsigned int m, uint64_t base,
			  uint64_t total, size_t es)
{
	if (m < 2)
		return step;
	/*
	 * Round k, member i sends to i + k, as the all-to-all does: in
	 * member order every source would start on the same receiver.
	 */
	for (unsigned int k = 1; k < m; k++)
		for (unsigned int i = 0; i < m; i++) {
			uint64_t off = base + blk_start(total, es, m, i);

			fdev_plan_xfer(p, step, mem[i], mem[(i + k) % m], off,
				       off, blk_len(total, es, m, i));
		}
	return step + 1;
}

/* Ring and direct: a reduce-scatter, then (for all of it) an all-gather. */
struct two_phase {
	uint32_t (*reduce_scatter)(struct fdev_plan *p, uint32_t step,
				   const uint32_t *mem, unsigned int m,
				   uint64_t base, uint64_t total, int dt,
				   uint64_t tmp);
	uint32_t (*all_gather)(struct fdev_plan *p, uint32_t step,
			       const uint32_t *mem, unsigned int m,
			       uint64_t base, uint64_t total, size_t es);
};

/* The ring's phases (also FDEV_ALGO_AUTO's), direct's, or NULL. */
static const struct two_phase *two_phase_of(int algo)
{
	static const struct two_phase ring = { ring_rs, ring_ag };
	static const struct two_phase direct = { direct_rs, direct_ag };

	if (algo == FDEV_ALGO_AUTO || algo == FDEV_ALGO_RING)
		return &ring;
	return algo == FDEV_ALGO_DIRECT ? &direct : NULL;
}

/* Binomial tree reduce to member 0 of [base, +len), then broadcast. */
static uint32_t tree_reduce(struct fdev_plan *p, uint32_t step,
			    const uint32_t *mem, unsigned int m, uint64_t base,
			    uint64_t len, int dt, uint64_t tmp)
{
	for (unsigned int mask = 1; mask < m; mask <<= 1, step++)
		for (unsigned int i = mask; i < m; i += 2 * mask) {
			fdev_plan_xfer(p, step, mem[i], mem[i - mask], base,
				       tmp, len);
			fdev_plan_act(p, step, mem[i - mask], FDEV_ACT_REDUCE,
				      dt, base, tmp, len);
		}
	return step;
}

static uint32_t tree_bcast(struct fdev_plan *p, uint32_t step,
			   const uint32_t *mem, unsigned int m, uint64_t base,
			   uint64_t len)
{
	unsigned int top = 1;

	while (top < m)
		top <<= 1;
	for (unsigned int mask = top >> 1; mask; mask >>= 1, step++)
		for (unsigned int i = 0; i + mask < m; i += 2 * mask)
			fdev_plan_xfer(p, step, mem[i], mem[i + mask], base,
				       base, len);
	return step;
}

static uint32_t *iota(unsigned int n, unsigned int start, unsigned int stride)
{
	uint32_t *m = malloc((n ? n : 1) * sizeof(*m));

	if (m)
		for (unsigned int i = 0; i < n; i++)
			m[i] = start + i * stride;
	return m;
}

/* ---- the collectives ---- */

int fdev_plan_all_gather(struct fdev_plan *p, unsigned int n, uint64_t bytes,
			 int algo, struct fdev_coll_layout *lo)
{
	const struct two_phase *tp = two_phase_of(algo);
	uint32_t *mem;
	uint64_t R = align8(bytes);

	if (!n)
		return -EINVAL;
	*lo = (struct fdev_coll_layout){ .send_off = 0, .recv_off = R,
		.send_len = bytes, .recv_len = n * bytes };
	fdev_plan_need(p, R + n * bytes);
	for (unsigned int r = 0; r < n; r++)
		fdev_plan_act(p, 0, r, FDEV_ACT_COPY, FDEV_U8, R + r * bytes, 0,
			      bytes);
	mem = iota(n, 0, 1);
	if (!mem)
		return -ENOMEM;
	if (tp)
		tp->all_gather(p, 1, mem, n, R, n * bytes, bytes ? bytes : 1);
	free(mem);
	return tp ? fdev_plan_finish(p) : -EOPNOTSUPP;
}

int fdev_plan_all_to_all(struct fdev_plan *p, unsigned int n, uint64_t bytes,
			 int algo, unsigned int node, struct fdev_coll_layout *lo)
{
	uint64_t R = align8(n * bytes), T = R + align8(n * bytes);

	if (!n)
		return -EINVAL;
	*lo = (struct fdev_coll_layout){ .send_off = 0, .recv_off = R,
		.tmp_off = T, .send_len = n * bytes, .recv_len = n * bytes };
	fdev_plan_need(p, T);
	/* What a rank sends itself is a local copy, in the first step. */
	for (unsigned int r = 0; r < n; r++)
		fdev_plan_act(p, 0, r, FDEV_ACT_COPY, FDEV_U8, R + r * bytes,
			      r * bytes, bytes);
	switch (algo) {
	case FDEV_ALGO_AUTO:
	case FDEV_ALGO_DIRECT:
		for (unsigned int k = 1; k < n; k++) {
			/*
			 * One rank kept (fdev_plan_only()): of round k, only
			 * what it sends and what it gets, in the full loop's
			 * order, without a million calls at 1024 ranks.
			 */
			if (p->only_n == 1 && p->only_first < n) {
				unsigned int r = p->only_first, q = (r + n - k) % n;
				unsigned int src[2] = { r < q ? r : q, r < q ? q : r };

				for (int i = 0; i < 2; i++)
					fdev_plan_xfer(p, 0, src[i], (src[i] + k) % n,
						       (src[i] + k) % n * bytes,
						       R + src[i] * bytes, bytes);
				continue;
			}
			for (unsigned int s = 0; s < n; s++) {
				unsigned int d = (s + k) % n;

				fdev_plan_xfer(p, 0, s, d, d * bytes,
					       R + s * bytes, bytes);
			}
		}
		break;
	case FDEV_ALGO_RING:
		/* Pairwise exchange: step k, everyone sends to rank + k. */
		for (unsigned int k = 1; k < n; k++)
			for (unsigned int s = 0; s < n; s++) {
				unsigned int d = (s + k) % n;

				fdev_plan_xfer(p, k - 1, s, d, d * bytes,
					       R + s * bytes, bytes);
			}
		break;
	case FDEV_ALGO_HIER: {
		unsigned int g = node, nodes;

		if (!g || n % g)
			return -EINVAL;
		nodes = n / g;
		fdev_plan_need(p, T + n * bytes);
		/*
		 * Scale-up first: (a,l) gives (a,l') everything for local
		 * index l' of every node, at tmp[b][l] of (a,l'); then
		 * scale-out: (a,l') sends tmp[b][*] to (b,l') in one piece.
		 */
		for (unsigned int a = 0; a < nodes; a++)
			for (unsigned int l = 0; l < g; l++)
				for (unsigned int l2 = 0; l2 < g; l2++)
					for (unsigned int b = 0; b < nodes; b++) {
						uint32_t s = a * g + l, d = a * g + l2;
						uint64_t so = (b * g + l2) * bytes;
						uint64_t dof = T + (b * g + l) * bytes;

						if (s == d)
							fdev_plan_act(p, 0, s, FDEV_ACT_COPY,
								      FDEV_U8, dof, so, bytes);
						else
							fdev_plan_xfer(p, 0, s, d, so, dof,
								       bytes);
					}
		for (unsigned int a = 0; a < nodes; a++)
			for (unsigned int l = 0; l < g; l++)
				for (unsigned int b = 0; b < nodes; b++) {
					uint32_t s = a * g + l, d = b * g + l;
					uint64_t so = T + b * g * bytes;
					uint64_t dof = R + a * g * bytes;

					if (s == d)
						fdev_plan_act(p, 1, s, FDEV_ACT_COPY,
							      FDEV_U8, dof, so, g * bytes);
					else
						fdev_plan_xfer(p, 1, s, d, so, dof,
							       g * bytes);
				}
		break;
	}
	default:
		return -EOPNOTSUPP;
	}
	return fdev_plan_finish(p);
}

void fdev_a2av_max_rows(unsigned int n, const uint64_t *cnt,
			uint64_t *send_max, uint64_t *recv_max)
{
	*send_max = 0;
	*recv_max = 0;
	for (unsigned int r = 0; r < n; r++) {
		uint64_t s = 0, q = 0;

		for (unsigned int j = 0; j < n; j++) {
			s += cnt[r * n + j];
			q += cnt[j * n + r];
		}
		*send_max = s > *send_max ? s : *send_max;
		*recv_max = q > *recv_max ? q : *recv_max;
	}
}

int fdev_plan_all_to_all_v(struct fdev_plan *p, unsigned int n,
			   const uint64_t *cnt, int algo,
			   struct fdev_coll_layout *lo)
{
	uint64_t send_max, recv_max, R, *send_before, *recv_before;

	if (!n || !cnt)
		return -EINVAL;
	fdev_a2av_max_rows(n, cnt, &send_max, &recv_max);
	R = align8(send_max);
	*lo = (struct fdev_coll_layout){ .send_off = 0, .recv_off = R,
		.send_len = send_max, .recv_len = recv_max };
	fdev_plan_need(p, R + recv_max);
	if (algo != FDEV_ALGO_AUTO && algo != FDEV_ALGO_DIRECT &&
	    algo != FDEV_ALGO_RING)
		return -EOPNOTSUPP;
	/* Offsets by prefix sums: at 1024 ranks, re-adding is 10^9 steps. */
	send_before = malloc((size_t)n * n * sizeof(*send_before));
	recv_before = malloc((size_t)n * n * sizeof(*recv_before));
	if (!send_before || !recv_before) {
		free(send_before);
		free(recv_before);
		return -ENOMEM;
	}
	for (unsigned int r = 0; r < n; r++) {
		uint64_t so = 0, dof = R;

		for (unsigned int j = 0; j < n; j++) {
			send_before[(size_t)r * n + j] = so;
			recv_before[(size_t)j * n + r] = dof;
			so += cnt[(size_t)r * n + j];
			dof += cnt[(size_t)j * n + r];
		}
	}
	for (unsigned int k = 0; k < n; k++)
		for (unsigned int s = 0; s < n; s++) {
			unsigned int d = (s + k) % n;
			uint64_t so = send_before[(size_t)s * n + d];
			uint64_t dof = recv_before[(size_t)s * n + d];

			if (!k)
				fdev_plan_act(p, 0, s, FDEV_ACT_COPY, FDEV_U8,
					      dof, so, cnt[s * n + d]);
			else
				fdev_plan_xfer(p, algo == FDEV_ALGO_RING ?
					       k - 1 : 0, s, d, so, dof,
					       cnt[s * n + d]);
		}
	free(send_before);
	free(recv_before);
	return fdev_plan_finish(p);
}

/* A reduction over @n ranks of @dtype: something to sum, someone to sum it. */
static int summable(unsigned int n, int dtype)
{
	return n && fdev_dtype_size(dtype) && dtype != FDEV_U8 &&
	       dtype != FDEV_FP8_E4M3;
}

/*
 * A reduction's first step, once @n and @dtype can be summed: the layout
 * goes to @lo, and every rank copies its send bytes to @acc, where the
 * sums build up, in a workspace of @need bytes. *@mem gets the ranks
 * 0..@n-1, in order.
 */
static int reduction_start(struct fdev_plan *p, unsigned int n, int dtype,
			   const struct fdev_coll_layout *layout, uint64_t acc,
			   uint64_t need, struct fdev_coll_layout *lo,
			   uint32_t **mem)
{
	if (!summable(n, dtype))
		return -EINVAL;
	*lo = *layout;
	fdev_plan_need(p, need);
	for (unsigned int r = 0; r < n; r++)
		fdev_plan_act(p, 0, r, FDEV_ACT_COPY, FDEV_U8, acc, 0,
			      layout->send_len);
	*mem = iota(n, 0, 1);
	return *mem ? 0 : -ENOMEM;
}

/*
 * Hierarchical all-reduce of [acc, +len) over nodes of @g ranks: a
 * reduce-scatter in every node, an all-reduce of block l among the l-th
 * rank of each node, an all-gather in every node.
 */
static int hier_all_reduce(struct fdev_plan *p, const uint32_t *mem,
			   unsigned int n, unsigned int g, uint64_t acc,
			   uint64_t len, int dtype, uint64_t tmp)
{
	size_t es = fdev_dtype_size(dtype);
	uint32_t s1 = 1, s2, s3;
	unsigned int nodes;

	if (!g || n % g)
		return -EINVAL;
	nodes = n / g;
	/* Scale-up reduce-scatter, per node in parallel. */
	for (unsigned int a = 0; a < nodes; a++)
		s2 = ring_rs(p, 1, mem + a * g, g, acc, len, dtype, tmp);
	s2 = s1 + g - 1;
	/* Scale-out all-reduce of block l among the l-th of each node. */
	s3 = s2;
	for (unsigned int l = 0; l < g; l++) {
		uint32_t *peers = iota(nodes, l, g);
		uint64_t off = acc + blk_start(len, es, g, l);
		uint64_t blk = blk_len(len, es, g, l);
		uint32_t st;

		if (!peers)
			return -ENOMEM;
		st = ring_rs(p, s2, peers, nodes, off, blk, dtype, tmp);
		st = ring_ag(p, st, peers, nodes, off, blk, es);
		s3 = st;
		free(peers);
	}
	for (unsigned int a = 0; a < nodes; a++)
		ring_ag(p, s3, mem + a * g, g, acc, len, es);
	return 0;
}

int fdev_plan_all_reduce(struct fdev_plan *p, unsigned int n, uint64_t count,
			 int dtype, int algo, unsigned int node,
			 struct fdev_coll_layout *lo)
{
	const struct two_phase *tp = two_phase_of(algo);
	size_t es = fdev_dtype_size(dtype);
	uint64_t S = count * es, R = align8(S), T = 2 * R;
	const struct fdev_coll_layout layout = { .send_off = 0, .recv_off = R,
		.tmp_off = T, .send_len = S, .recv_len = S };
	uint32_t *mem, step;
	int ret;

	ret = reduction_start(p, n, dtype, &layout, R, T + align8(S + es), lo,
			      &mem);
	if (ret)
		return ret;
	if (tp) {
		step = tp->reduce_scatter(p, 1, mem, n, R, S, dtype, T);
		tp->all_gather(p, step, mem, n, R, S, es);
	} else if (algo == FDEV_ALGO_TREE) {
		step = tree_reduce(p, 1, mem, n, R, S, dtype, T);
		tree_bcast(p, step, mem, n, R, S);
	} else if (algo == FDEV_ALGO_HIER) {
		ret = hier_all_reduce(p, mem, n, node, R, S, dtype, T);
	} else {
		ret = -EOPNOTSUPP;
	}
	free(mem);
	return ret ? ret : fdev_plan_finish(p);
}

int fdev_plan_reduce_scatter(struct fdev_plan *p, unsigned int n,
			     uint64_t count, int dtype, int algo,
			     struct fdev_coll_layout *lo)
{
	const struct two_phase *tp = two_phase_of(algo);
	size_t es = fdev_dtype_size(dtype);
	uint64_t blk = count * es, S = n * blk, A = align8(S);
	uint64_t R = 2 * A, T = R + align8(blk);
	const struct fdev_coll_layout layout = { .send_off = 0, .recv_off = R,
		.tmp_off = T, .send_len = S, .recv_len = blk };
	uint32_t *mem, step;
	int ret;

	ret = reduction_start(p, n, dtype, &layout, A, T + align8(blk + es), lo,
			      &mem);
	if (ret)
		return ret;
	if (!tp) {
		free(mem);
		return -EOPNOTSUPP;
	}
	step = tp->reduce_scatter(p, 1, mem, n, A, S, dtype, T);
	free(mem);
	for (unsigned int r = 0; r < n; r++)
		fdev_plan_act(p, step > 1 ? step - 1 : 0, r, FDEV_ACT_COPY,
			      FDEV_U8, R, A + r * blk, blk);
	return fdev_plan_finish(p);
}

int fdev_plan_broadcast(struct fdev_plan *p, unsigned int n, uint64_t bytes,
			unsigned int root, int algo,
			struct fdev_coll_layout *lo)
{
	uint64_t R = align8(bytes);
	uint32_t *mem;

	if (!n || root >= n)
		return -EINVAL;
	*lo = (struct fdev_coll_layout){ .send_off = 0, .recv_off = R,
		.send_len = bytes, .recv_len = bytes };
	fdev_plan_need(p, R + bytes);
	fdev_plan_act(p, 0, root, FDEV_ACT_COPY, FDEV_U8, R, 0, bytes);
	/* Members in order from the root, so the tree is rooted there. */
	mem = malloc(n * sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++)
		mem[i] = (root + i) % n;
	switch (algo) {
	case FDEV_ALGO_AUTO:
	case FDEV_ALGO_TREE:
		tree_bcast(p, 1, mem, n, R, bytes);
		break;
	case FDEV_ALGO_DIRECT:
		for (unsigned int i = 1; i < n; i++)
			fdev_plan_xfer(p, 1, root, mem[i], R, R, bytes);
		break;
	case FDEV_ALGO_RING:
		for (unsigned int i = 1; i < n; i++)
			fdev_plan_xfer(p, i, mem[i - 1], mem[i], R, R, bytes);
		break;
	default:
		free(mem);
		return -EOPNOTSUPP;
	}
	free(mem);
	return fdev_plan_finish(p);
}

/* ---- closed forms ---- */

static uint64_t ps_of(uint64_t bytes, uint64_t bw)
{
	return (uint64_t)((double)bytes * 1e12 / (double)bw + 0.5);
}

uint64_t fdev_cf_ring_all_reduce(unsigned int n, uint64_t bytes, uint64_t alpha,
				 uint64_t bw)
{
	if (n < 2 || !bw)
		return 0;
	return 2ULL * (n - 1) * alpha + ps_of(2ULL * (n - 1) * bytes / n, bw);
}

uint64_t fdev_cf_ring_all_gather(unsigned int n, uint64_t bytes, uint64_t alpha,
				 uint64_t bw)
{
	if (n < 2 || !bw)
		return 0;
	return (uint64_t)(n - 1) * (alpha + ps_of(bytes, bw));
}

uint64_t fdev_cf_direct_all_to_all(unsigned int n, uint64_t bytes_per_pair,
				   uint64_t alpha, uint64_t bw)
{
	if (n < 2 || !bw)
		return 0;
	return alpha + ps_of((uint64_t)(n - 1) * bytes_per_pair, bw);
}
