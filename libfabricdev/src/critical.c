// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Busiest link first (fdev_plan_critical_first(), plan.h): each source's
 * order of a step's pieces chosen by playing the step out on the routes.
 *
 * The step's time is at least its busiest link's load, and it reaches it
 * only if that link never waits for a piece. A fixed order from hop
 * counts or leads cannot know which link an uneven exchange loads most;
 * with every rank's pieces and routes known, this one can. It plays the
 * step out piece by piece, as the fabric runs it: each source has its
 * DMA engines, an engine holds its piece until the piece has left on its
 * first link, each link serves what reaches it first come, first served
 * and hands it on after its latency. Whenever one of a source's engines
 * is free, it takes, among the next pieces of the source's pairs, the
 * piece whose route crosses the link with the most load still unplaced,
 * less how long the piece would wait at its first link: the links that
 * can least afford a gap are fed first, and an engine is not sent to
 * queue behind a busy first link while another would take its piece at
 * once. The order in which a source's engines took its pieces is the
 * order it posts them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "plan.h"

/*
 * An event of the play: at @at ps, segment @seg of piece @piece is ready
 * at hop @hop of its route, or (@hop == CF_ENGINE) an engine of source
 * @piece is free. At one instant engines go first, then segments by
 * their piece's @key, as the fabric orders a tie: by source, then the
 * source's order of posting.
 */
struct cf_event {
	uint64_t at;			/* ps */
	uint64_t key;
	uint32_t piece, hop, seg;
};

#define CF_ENGINE	UINT32_MAX

struct cf_heap {
	struct cf_event *e;
	size_t n, cap;
};

static int cf_before(const struct cf_event *a, const struct cf_event *b)
{
	if (a->at != b->at)
		return a->at < b->at;
	if ((a->hop == CF_ENGINE) != (b->hop == CF_ENGINE))
		return a->hop == CF_ENGINE;
	return a->key < b->key;
}

static int cf_push(struct cf_heap *h, uint64_t at, uint64_t key,
		   uint32_t piece, uint32_t hop, uint32_t seg)
{
	size_t i;

	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 1024;
		struct cf_event *e = realloc(h->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		h->e = e;
		h->cap = cap;
	}
	i = h->n++;
	h->e[i] = (struct cf_event){ .at = at, .key = key, .piece = piece,
				     .hop = hop, .seg = seg };
	while (i && cf_before(&h->e[i], &h->e[(i - 1) / 2])) {
		struct cf_event t = h->e[i];

		h->e[i] = h->e[(i - 1) / 2];
		h->e[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	return 0;
}

static struct cf_event cf_pop(struct cf_heap *h)
{
	struct cf_event top = h->e[0];
	size_t i = 0;

	h->e[0] = h->e[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct cf_event t;

		if (l < h->n && cf_before(&h->e[l], &h->e[m]))
			m = l;
		if (r < h->n && cf_before(&h->e[r], &h->e[m]))
			m = r;
		if (m == i)
			break;
		t = h->e[i];
		h->e[i] = h->e[m];
		h->e[m] = t;
		i = m;
	}
	return top;
}

/*
 * One step's play. The step's pieces that name a pair of @m are @at[0..
 * @np), in step order; a source's pairs are its runs in @pair_of order.
 */
struct cf_step {
	const struct fdev_paths *m;
	const struct fdev_plan *p;
	uint32_t engines;
	uint64_t np;
	uint64_t *at;			/* [np] the piece's index in p->x */
	uint32_t *pair;			/* [np] src * n + dst */
	uint32_t *next_of_pair;		/* [np] the pair's next piece, or UINT32_MAX */
	uint32_t *head;			/* [n * n] the pair's next piece to place */
	uint32_t *src_pairs;		/* the pairs of each source in turn */
	uint32_t *src_first;		/* [n + 1] into src_pairs */
	double *rem;			/* [nr_links] ps of load not yet placed */
	uint64_t *free_at;		/* [nr_links] ps */
	uint32_t *order;		/* [np] the pieces as the engines took them */
	uint64_t norder;
	uint32_t *seq;			/* [np] each source's pieces in step order */
	uint32_t *seq_at;		/* [n + 1] into seq: where each source starts */
	uint32_t *seq_cur;		/* [n] into seq: each source's next */
	uint64_t *key;			/* [np] the piece's key in a tie */
	uint32_t *taken;		/* [n] pieces each source took so far */
	uint64_t seg;			/* bytes */
	int fixed;			/* play the step order, choose nothing */
	uint64_t end;			/* ps: the last piece's arrival */
};

static double cf_ser(const struct cf_step *s, uint32_t piece, uint32_t l)
{
	return (double)s->p->x[s->at[piece]].len * s->m->ps_per_byte[l];
}

/* Segment @seg of @piece: its bytes, and whether it is the piece's last. */
static uint64_t cf_seg_bytes(const struct cf_step *s, uint32_t piece,
			     uint32_t seg, int *last)
{
	uint64_t len = s->p->x[s->at[piece]].len, from = (uint64_t)seg * s->seg;
	uint64_t b = len - from < s->seg ? len - from : s->seg;

	*last = from + b >= len;
	return b;
}

/* The link the pair's route crosses at @hop. */
static uint32_t cf_link(const struct cf_step *s, uint32_t pair, uint32_t hop)
{
	return s->m->link[s->m->off[pair] + hop];
}

static uint32_t cf_hops(const struct cf_step *s, uint32_t pair)
{
	return s->m->off[pair + 1] - s->m->off[pair];
}

/* The most load not yet placed on a link of the pair's route (ps). */
static double cf_critical(const struct cf_step *s, uint32_t pair)
{
	double most = 0;

	for (uint32_t h = 0; h < cf_hops(s, pair); h++) {
		double r = s->rem[cf_link(s, pair, h)];

		most = r > most ? r : most;
	}
	return most;
}

/* How long the pair's next piece would wait at its first link (ps). */
static uint64_t cf_wait(const struct cf_step *s, uint32_t pair, uint64_t now)
{
	uint32_t first = cf_link(s, pair, 0);

	return s->free_at[first] > now ? s->free_at[first] - now : 0;
}

/*
 * The piece a free engine of @src takes at @now, or UINT32_MAX: of its
 * pairs' next pieces, one that waits least at its first link; of those,
 * the one whose route crosses the most load not yet placed; of those,
 * the one that came first in the order before.
 */
static uint32_t cf_pick(struct cf_step *s, uint32_t src, uint64_t now)
{
	uint32_t best = UINT32_MAX;
	uint64_t best_wait = 0;
	double best_crit = 0;

	if (s->fixed)
		return s->seq_cur[src] < s->seq_at[src + 1] ?
		       s->seq[s->seq_cur[src]++] : UINT32_MAX;
	for (uint32_t i = s->src_first[src]; i < s->src_first[src + 1]; i++) {
		uint32_t pair = s->src_pairs[i], c = s->head[pair];
		uint64_t wait;
		double crit;

		if (c == UINT32_MAX)
			continue;
		wait = cf_wait(s, pair, now);
		if (best != UINT32_MAX && wait > best_wait)
			continue;
		crit = cf_critical(s, pair);
		if (best == UINT32_MAX || wait < best_wait ||
		    crit > best_crit ||
		    (crit == best_crit && s->at[c] < s->at[best])) {
			best = c;
			best_wait = wait;
			best_crit = crit;
		}
	}
	return best;
}

/*
 * Segment @seg of piece @c is ready at hop @hop at @now: it leaves when
 * the link is free and is ready at the next hop its latency later. At
 * the first hop the piece's next segment is ready when this one is out,
 * and after its last the engine is free.
 */
static int cf_cross(struct cf_step *s, struct cf_heap *h, uint32_t c,
		    uint32_t hop, uint32_t seg, uint64_t now)
{
	uint32_t pair = s->pair[c], l = cf_link(s, pair, hop);
	uint64_t start = s->free_at[l] > now ? s->free_at[l] : now, out;
	int last, err = 0;

	out = start + (uint64_t)((double)cf_seg_bytes(s, c, seg, &last) *
				 s->m->ps_per_byte[l] + 0.5);
	s->free_at[l] = out;
	if (!hop)
		err = last ? cf_push(h, out, 0, pair / s->m->n, CF_ENGINE, 0) :
		      cf_push(h, out, s->key[c], c, 0, seg + 1);
	if (!err && hop + 1 < cf_hops(s, pair))
		err = cf_push(h, out + s->m->fixed_ps[l], s->key[c], c,
			      hop + 1, seg);
	else if (!err && out + s->m->fixed_ps[l] > s->end)
		s->end = out + s->m->fixed_ps[l];
	return err;
}

/* A free engine of @src at @now takes its next piece, if any. */
static int cf_engine(struct cf_step *s, struct cf_heap *h, uint32_t src,
		     uint64_t now)
{
	uint32_t c = cf_pick(s, src, now), pair;

	if (c == UINT32_MAX)
		return 0;
	pair = s->pair[c];
	s->head[pair] = s->next_of_pair[c];
	for (uint32_t k = 0; k < cf_hops(s, pair); k++)
		s->rem[cf_link(s, pair, k)] -= cf_ser(s, c, cf_link(s, pair, k));
	s->order[s->norder++] = c;
	s->key[c] = (uint64_t)src << 40 | s->taken[src]++;
	return cf_push(h, now, s->key[c], c, 0, 0);
}

static int cf_play(struct cf_step *s, struct cf_heap *h)
{
	uint32_t n = s->m->n;
	int err = 0;

	h->n = 0;
	for (uint32_t src = 0; src < n && !err; src++)
		for (uint32_t e = 0; e < s->engines && !err; e++)
			if (s->src_first[src + 1] > s->src_first[src])
				err = cf_push(h, 0, 0, src, CF_ENGINE, 0);
	while (!err && h->n) {
		struct cf_event ev = cf_pop(h);

		err = ev.hop == CF_ENGINE ?
		      cf_engine(s, h, ev.piece, ev.at) :
		      cf_cross(s, h, ev.piece, ev.hop, ev.seg, ev.at);
	}
	return err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The pieces of step [@b, @e) into @s, its links' loads into s->rem. */
static void cf_gather(struct cf_step *s, size_t b, size_t e)
{
	const struct fdev_paths *m = s->m;
	uint32_t n = m->n;
	size_t nn = (size_t)n * n;

	s->np = 0;
	s->norder = 0;
	s->end = 0;
	memset(s->taken, 0, n * sizeof(*s->taken));
	for (size_t q = 0; q < nn; q++)
		s->head[q] = UINT32_MAX;
	memset(s->rem, 0, m->nr_links * sizeof(*s->rem));
	memset(s->free_at, 0, m->nr_links * sizeof(*s->free_at));
	/* backwards, so that each pair's head ends as its first piece */
	for (size_t i = e; i-- > b;) {
		const struct fdev_xfer *x = &s->p->x[i];
		uint32_t c, pair;

		if (x->dst == FDEV_PLAN_MCAST || x->src >= n || x->dst >= n ||
		    x->src == x->dst || !x->len)
			continue;
		pair = x->src * n + x->dst;
		if (!cf_hops(s, pair))
			continue;
		c = (uint32_t)s->np++;
		s->at[c] = i;
		s->pair[c] = pair;
		s->next_of_pair[c] = s->head[pair];
		s->head[pair] = c;
		for (uint32_t k = 0; k < cf_hops(s, pair); k++)
			s->rem[cf_link(s, pair, k)] +=
				cf_ser(s, c, cf_link(s, pair, k));
	}
	s->src_first[0] = 0;
	for (uint32_t src = 0, k = 0; src < n; src++) {
		for (uint32_t d = 0; d < n; d++)
			if (s->head[(size_t)src * n + d] != UINT32_MAX)
				s->src_pairs[k++] = src * n + d;
		s->src_first[src + 1] = k;
	}
	/* each source's pieces in step order: c counts down the step */
	memset(s->seq_at, 0, (n + 1) * sizeof(*s->seq_at));
	for (uint32_t c = 0; c < s->np; c++)
		s->seq_at[s->pair[c] / n + 1]++;
	for (uint32_t src = 0; src < n; src++)
		s->seq_at[src + 1] += s->seq_at[src];
	for (uint32_t c = (uint32_t)s->np; c-- > 0;)
		s->seq[s->seq_at[s->pair[c] / n]++] = c;
	for (uint32_t src = n; src > 0; src--)
		s->seq_at[src] = s->seq_at[src - 1];
	s->seq_at[0] = 0;
	memcpy(s->seq_cur, s->seq_at, n * sizeof(*s->seq_cur));
}

/*
 * Each source's pieces, in the order its engines took them, into the
 * places the source had in the step. @tmp, @pos, @by_src: scratch of
 * s->np; @cur: of n + 1.
 */
static void cf_write(struct cf_step *s, struct fdev_xfer *x,
		     struct fdev_xfer *tmp, uint64_t *pos, uint32_t *by_src,
		     uint64_t *cur)
{
	uint32_t n = s->m->n;

	memset(cur, 0, (n + 1) * sizeof(*cur));
	for (uint64_t i = 0; i < s->norder; i++)
		cur[x[s->at[s->order[i]]].src + 1]++;
	for (uint32_t src = 0; src < n; src++)
		cur[src + 1] += cur[src];
	for (uint64_t i = 0; i < s->norder; i++)
		by_src[cur[x[s->at[s->order[i]]].src]++] = s->order[i];
	/* cur[src] is now where src's run ends: back to where it starts */
	for (uint32_t src = n; src > 0; src--)
		cur[src] = cur[src - 1];
	cur[0] = 0;
	for (uint64_t i = 0; i < s->np; i++)
		pos[i] = s->at[i];
	qsort(pos, s->np, sizeof(*pos), cmp_u64);
	for (uint64_t i = 0; i < s->np; i++)
		tmp[i] = x[s->at[by_src[cur[x[pos[i]].src]++]]];
	for (uint64_t i = 0; i < s->np; i++)
		x[pos[i]] = tmp[i];
}

static void cf_free(struct cf_step *s)
{
	free(s->at);
	free(s->pair);
	free(s->next_of_pair);
	free(s->head);
	free(s->src_pairs);
	free(s->src_first);
	free(s->rem);
	free(s->free_at);
	free(s->order);
	free(s->seq);
	free(s->seq_at);
	free(s->seq_cur);
	free(s->key);
	free(s->taken);
}

int fdev_plan_critical_first(struct fdev_plan *p, const struct fdev_paths *m,
			     uint32_t engines)
{
	size_t nn, nx = p->nx, b, e;
	struct cf_step s = { .m = m, .p = p, .engines = engines };
	struct cf_heap h = { 0 };
	struct fdev_xfer *tmp = NULL;
	uint64_t *pos = NULL, *cur = NULL;
	uint32_t *by_src = NULL;
	int err = p->err;

	if (err || !nx || !m || !engines)
		return err;
	if (nx >= UINT32_MAX)
		return -EOVERFLOW;
	nn = (size_t)m->n * m->n;
	s.at = malloc(nx * sizeof(*s.at));
	s.pair = malloc(nx * sizeof(*s.pair));
	s.next_of_pair = malloc(nx * sizeof(*s.next_of_pair));
	s.order = malloc(nx * sizeof(*s.order));
	s.seq = malloc(nx * sizeof(*s.seq));
	s.seq_at = malloc((m->n + 1) * sizeof(*s.seq_at));
	s.seq_cur = malloc((m->n + 1) * sizeof(*s.seq_cur));
	s.key = malloc(nx * sizeof(*s.key));
	s.taken = malloc((m->n + 1) * sizeof(*s.taken));
	s.seg = m->seg ? m->seg : UINT64_MAX;
	s.head = malloc(nn * sizeof(*s.head));
	s.src_pairs = malloc(nn * sizeof(*s.src_pairs));
	s.src_first = malloc((m->n + 1) * sizeof(*s.src_first));
	s.rem = malloc((m->nr_links + 1) * sizeof(*s.rem));
	s.free_at = malloc((m->nr_links + 1) * sizeof(*s.free_at));
	tmp = malloc(nx * sizeof(*tmp));
	pos = malloc(nx * sizeof(*pos));
	by_src = malloc(nx * sizeof(*by_src));
	cur = malloc((m->n + 1) * sizeof(*cur));
	if (!s.at || !s.pair || !s.next_of_pair || !s.order || !s.head ||
	    !s.seq || !s.seq_at || !s.seq_cur || !s.key || !s.taken ||
	    !s.src_pairs || !s.src_first || !s.rem || !s.free_at || !tmp ||
	    !pos || !by_src || !cur)
		err = -ENOMEM;
	for (b = 0; !err && b < nx; b = e) {
		uint64_t before;

		for (e = b; e < nx && p->x[e].step == p->x[b].step; e++)
			;
		/* the step's order as it is, played for its time */
		cf_gather(&s, b, e);
		s.fixed = 1;
		err = cf_play(&s, &h);
		before = s.end;
		cf_gather(&s, b, e);
		s.fixed = 0;
		if (!err)
			err = cf_play(&s, &h);
		/* only a step it makes faster: the play is the fabric's */
		if (!err && s.norder == s.np && s.end < before)
			cf_write(&s, p->x, tmp, pos, by_src, cur);
	}
	cf_free(&s);
	free(h.e);
	free(tmp);
	free(pos);
	free(by_src);
	free(cur);
	return err;
}
