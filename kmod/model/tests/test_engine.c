// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for kmod/model/engine.c, the timing engine.
 *
 * Every expectation is fabric time computed from the model (exactly where
 * the model gives a closed form, within 0.1% or 1% where rounding or
 * interleaving enters), never the host's time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "../engine.h"
#include "topo_build.h"


typedef unsigned long long ull;

/* ---- topologies ---- */

static int topo_validate(struct icfab_mtopo *t)
{
	struct icfab_topo_err err;
	icfab_u32 scratch[ICFAB_TOPO_SCRATCH_SIZE(64) / 4];

	if (icfab_topo_validate(t, &lim, (icfab_u8 *)scratch, &err)) {
		printf("# invalid topology: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/*
 * A chain of @n endpoints, 0 - 1 - ... - n-1, links both ways: port 0
 * towards higher ids (link 2i is i -> i+1), port 1 towards lower ones.
 */
static struct icfab_mtopo *chain(unsigned int n)
{
	struct icfab_mtopo *t = topo_new(n, 2 * (n - 1));

	for (unsigned int i = 0; i < n; i++)
		add_node(t, ICFAB_MODEL_ENDPOINT, 2, 1);
	for (unsigned int i = 0; i + 1 < n; i++) {
		add_link(t, i, 0, i + 1, 1);
		add_link(t, i + 1, 1, i, 0);
	}
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int d = 0; d < n; d++)
			if (d != i)
				t->nodes[i].routes[d] = d > i ? 0 : 1;
	return t;
}

/* The star of topo_build.h, with no room to spare. */
static struct icfab_mtopo *star(unsigned int n, unsigned int dma)
{
	return star_spare(n, dma, 0);
}

static unsigned int inj(unsigned int ep) { return 2 * (ep - 1); }
static unsigned int ejl(unsigned int ep) { return 2 * (ep - 1) + 1; }

/* ---- an engine with storage, recording completions by key ---- */

struct rec {
	struct icfab_xfer_result r;
	int n;				/* completions seen for this key */
};

struct harness {
	struct icfab_engine e;
	struct icfab_engine_storage s;
	struct rec *recs;
	unsigned int nrecs;
	int completions;
	int stop;			/* callback asks to stop */
	/* callback submits (test_queue_inplace): its count so far */
	int resubmit;
	/* source 0's completions each submit one more there (test_queue_lone) */
	int requeue;
	/* trace totals */
	ull trace_segs, trace_bytes;
	int trace_bad, trace_submits, trace_submit_ok, trace_completes;
	int trace_b1_ok;
	/*
	 * Storage that grows on -ENOSPC (test_capacity_free): 1 into fresh
	 * arrays, 2 in place, within arrays of xfers_room / events_room.
	 */
	int grow;
	unsigned int grows;
	icfab_u32 xfers_room, events_room;
	struct xmit_sum {
		ull segs, bytes, busy, max_q;
	} xsum[32];		/* by link id */
};

static int on_complete(void *arg, icfab_u32 id,
		       const struct icfab_xfer_result *r)
{
	struct harness *h = arg;

	(void)id;
	h->completions++;
	if (r->key < h->nrecs) {
		h->recs[r->key].r = *r;
		h->recs[r->key].n++;
	}
	if (h->resubmit && r->key < 4) {
		icfab_u32 nid;

		/* Another source's transfer at the instant of the completion. */
		if (icfab_engine_submit(&h->e, 2, 3, 64, r->finish_ps,
					100 + r->key, &nid))
			h->resubmit = -1000;
		h->resubmit++;
	}
	if (h->resubmit && r->key == 5) {
		icfab_u32 nid;

		/* Its own source's, a ps later: it joins the wait list. */
		if (icfab_engine_submit(&h->e, 0, 1, 64, r->finish_ps + 1, 200,
					&nid))
			h->resubmit = -1000;
		h->resubmit++;
	}
	if (h->requeue > 0 && r->src == 0) {
		icfab_u32 nid;

		/* Behind the queue's last waiter, at the completion's instant. */
		if (icfab_engine_submit(&h->e, 0, 1, 64 + r->key % 3,
					r->finish_ps, 1000 + r->key, &nid))
			h->requeue = -1000;
		h->requeue--;
	}
	return h->stop;
}

static struct harness *h_new(struct icfab_mtopo *t, icfab_u32 seg,
			     icfab_u32 xfers, icfab_u32 events,
			     unsigned int nrecs)
{
	struct harness *h = calloc(1, sizeof(*h));
	int err;

	h->s.links = calloc(t->links_cap, sizeof(*h->s.links));
	h->s.eps = calloc(t->nodes_cap, sizeof(*h->s.eps));
	h->s.dma_cap = icfab_engine_dma_needed(t);
	h->s.dma_free = calloc(h->s.dma_cap + 1, sizeof(icfab_u64));
	h->s.xfers_cap = xfers;
	h->s.xfers = calloc(xfers, sizeof(*h->s.xfers));
	h->s.events_cap = events;
	h->s.events = calloc(events, sizeof(*h->s.events));
	h->recs = calloc(nrecs, sizeof(*h->recs));
	h->nrecs = nrecs;
	err = icfab_engine_init(&h->e, t, seg, &h->s);
	if (err)
		printf("# init: %d\n", err);
	return h;
}

static void h_free(struct harness *h)
{
	free(h->s.links);
	free(h->s.eps);
	free(h->s.dma_free);
	free(h->s.xfers);
	free(h->s.events);
	free(h->recs);
	free(h);
}

/*
 * Give @h's engine room for a transfer of @bytes, as the module does on
 * -ENOSPC: each array doubled until it fits, into fresh arrays (the old
 * ones freed) or, with grow == 2, within the arrays h_new() gave it.
 */
static int h_grow(struct harness *h, ull bytes)
{
	struct icfab_engine *e = &h->e;
	ull need = icfab_engine_events_needed(bytes, e->segment_size);
	icfab_u32 xcap = e->xfers_cap, ecap = e->events_cap;
	struct icfab_engine_xfer *x = h->s.xfers;
	struct icfab_engine_event *ev = h->s.events;
	int need_xfer;
	ull room = icfab_engine_room_needed(e, need, &need_xfer);

	if (need_xfer)
		xcap *= 2;
	while (room && ecap < room)
		ecap *= 2;
	if (xcap == e->xfers_cap && ecap == e->events_cap)
		return -1;
	if (h->grow == 1) {
		x = calloc(xcap, sizeof(*x));
		ev = calloc(ecap, sizeof(*ev));
	} else if (xcap > h->xfers_room || ecap > h->events_room) {
		return -1;
	}
	if (icfab_engine_grow(e, x, xcap, ev, ecap))
		return -1;
	if (h->grow == 1) {
		free(h->s.xfers);
		free(h->s.events);
		h->s.xfers = x;
		h->s.events = ev;
	}
	h->grows++;
	return 0;
}

static int submit(struct harness *h, unsigned int src, unsigned int dst,
		  ull bytes, ull at, ull key)
{
	icfab_u32 id;
	int err = icfab_engine_submit(&h->e, src, dst, bytes, at, key, &id);

	while (err == -ICFAB_ENGINE_ENOSPC && h->grow && !h_grow(h, bytes))
		err = icfab_engine_submit(&h->e, src, dst, bytes, at, key,
					  &id);
	if (err)
		printf("# submit %u -> %u %llu B at %llu key %llu: %d\n",
		       src, dst, bytes, at, key, err);
	return err;
}

static void run_all(struct harness *h)
{
	icfab_engine_run_until(&h->e, ICFAB_ENGINE_NEVER, on_complete, h);
}

static ull dur(const struct rec *r)
{
	return r->r.finish_ps - r->r.start_ps;
}

/* |a - b| <= b * ppm / 1e6 */
static int within(double a, double b, double ppm)
{
	double d = a > b ? a - b : b - a;

	return d <= b * ppm / 1e6;
}

/* ---- tests ---- */

static void test_uncontended(void)
{
	static const ull sizes[] = {
		1, 100, 4095, 4096, 4097, 3 * 4096, 100000, 1 << 20,
		12345678,
	};
	static const unsigned int hops[] = { 1, 2, 5 };
	static const struct { ull bw, lat; } links[] = {
		{ BW, LAT }, { 900000000000ULL, 0 }, { 4000000000ULL, 500000 },
	};

	for (unsigned int hi = 0; hi < 3; hi++) {
		int bad = 0, cases = 0;

		for (unsigned int li = 0; li < 3; li++)
		for (unsigned int si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			struct icfab_mtopo *t = chain(6);
			struct harness *h;
			ull want, t0 = 777777;
			struct rec *r;

			for (unsigned int l = 0; l < t->nr_links; l++) {
				t->links[l].bandwidth = links[li].bw;
				t->links[l].latency_ps = links[li].lat;
			}
			topo_validate(t);
			h = h_new(t, SEG, 4, 4096, 1);
			submit(h, 0, hops[hi], sizes[si], t0, 0);
			run_all(h);
			r = &h->recs[0];
			want = icfab_uncontended_ps(sizes[si], SEG, hops[hi],
						    links[li].bw, links[li].lat);
			cases++;
			if (r->n != 1 || r->r.status || r->r.start_ps != t0 ||
			    dur(r) != want || r->r.queued_ps ||
			    r->r.hops != hops[hi] ||
			    r->r.submit_ps != t0 || r->r.bytes != sizes[si]) {
				if (bad++ < 3)
					printf("# %u hops %llu B: n %d status %d start %llu took %llu want %llu queued %llu\n",
					       hops[hi], sizes[si], r->n,
					       r->r.status, (ull)r->r.start_ps,
					       dur(r), want,
					       (ull)r->r.queued_ps);
			}
			h_free(h);
			topo_free(t);
		}
		ok(!bad, "uncontended over %u hop(s) equals the closed form exactly, no queueing (%d cases, %d bad)",
		   hops[hi], cases, bad);
	}
}

/* k sources through the one ejection link of endpoint 1. */
static void test_incast(unsigned int k, int exact_capacity)
{
	const ull nseg = 1000, bytes = nseg * SEG, t0 = 5000;
	struct icfab_mtopo *t = star(k + 1, 1);
	icfab_u32 events = exact_capacity ?
		k * (icfab_u32)icfab_engine_events_needed(bytes, SEG) : 65536;
	struct harness *h;
	ull last = 0, want_last;
	int rate_bad = 0, n_ok = 1;
	double worst = 0;

	topo_validate(t);
	h = h_new(t, SEG, k, events, k);
	for (unsigned int i = 0; i < k; i++)
		submit(h, i + 2, 1, bytes, t0, i);
	run_all(h);

	for (unsigned int i = 0; i < k; i++) {
		struct rec *r = &h->recs[i];
		double rate = (double)bytes * 1e12 / (double)dur(r);
		double want = (double)BW / k;
		double err = (rate > want ? rate - want : want - rate) / want;

		if (r->n != 1 || r->r.status)
			n_ok = 0;
		if (err > worst)
			worst = err;
		if (!within(rate, want, 10000))
			rate_bad++;
		if (r->r.finish_ps > last)
			last = r->r.finish_ps;
	}
	/*
	 * The ejection link is busy from the first segment's arrival at the
	 * switch until all k * nseg segments have left it.
	 */
	want_last = t0 + SER + LAT + k * nseg * SER + LAT;
	if (exact_capacity) {
		ok(n_ok && last == want_last &&
		   h->e.max_events <= events,
		   "incast of %u with exactly the documented event capacity (%u) runs correctly (high-water %u)",
		   k, events, h->e.max_events);
	} else {
		ok(n_ok && !rate_bad,
		   "incast of %u: each flow gets B/%u within 1%% (worst %.4f%%)",
		   k, k, worst * 100);
		ok(within(last - t0, (double)k * bytes * 1e12 / BW +
			     SER + 2 * LAT, 1000) && last == want_last,
		   "incast of %u: last finish %llu = t0 + kS/B + s/B + 2L = %llu",
		   k, last, want_last);
		ok(h->s.links[ejl(1)].bytes == k * bytes &&
		   h->s.links[ejl(1)].busy_ps == k * nseg * SER &&
		   h->s.links[ejl(1)].segments == k * nseg,
		   "incast of %u: the bottleneck carried k*S bytes, busy k*n*s/B",
		   k);
	}
	h_free(h);
	topo_free(t);
}

static void test_disjoint(void)
{
	const ull bytes = 300 * SEG + 17;
	struct icfab_mtopo *t = star(4, 1);
	struct harness *alone, *both, *shared;
	int same;

	topo_validate(t);
	alone = h_new(t, SEG, 4, 4096, 2);
	submit(alone, 1, 2, bytes, 0, 0);
	run_all(alone);
	both = h_new(t, SEG, 4, 4096, 2);
	submit(both, 1, 2, bytes, 0, 0);
	submit(both, 3, 4, bytes, 0, 1);
	run_all(both);
	same = !memcmp(&alone->recs[0].r, &both->recs[0].r,
		       sizeof(alone->recs[0].r)) &&
	       dur(&both->recs[1]) == dur(&alone->recs[0]) &&
	       both->recs[1].r.queued_ps == 0;
	ok(same, "flows on disjoint paths do not affect each other (%llu ps each)",
	   dur(&both->recs[0]));

	/* The same two flows onto one destination do: the check can fail. */
	shared = h_new(t, SEG, 4, 4096, 2);
	submit(shared, 1, 2, bytes, 0, 0);
	submit(shared, 3, 2, bytes, 0, 1);
	run_all(shared);
	ok(dur(&shared->recs[1]) > dur(&alone->recs[0]) &&
	   shared->recs[1].r.queued_ps > 0,
	   "the same flows into one destination do interfere");
	h_free(alone);
	h_free(both);
	h_free(shared);
	topo_free(t);
}

/*
 * All-to-all on a switch. With one DMA engine each and the shift order
 * (round r: i sends to i + r), every round is a permutation, so the
 * injection links are the only constraint and the time is exact. With
 * n - 1 engines every flow starts at once and they share the links.
 */
static void test_all_to_all(unsigned int n, unsigned int dma)
{
	const ull nseg = 64, S = nseg * SEG, t0 = 0;
	struct icfab_mtopo *t = star(n, dma);
	unsigned int nx = n * (n - 1);
	struct harness *h;
	ull last = 0, want;
	int all_done = 1, links_ok = 1;

	topo_validate(t);
	h = h_new(t, SEG, nx, nx * (nseg + 1), nx);
	for (unsigned int r = 1; r < n; r++)
		for (unsigned int i = 1; i <= n; i++)
			submit(h, i, (i - 1 + r) % n + 1, S, t0,
			       (r - 1) * n + (i - 1));
	run_all(h);
	for (unsigned int x = 0; x < nx; x++) {
		if (h->recs[x].n != 1 || h->recs[x].r.status)
			all_done = 0;
		if (h->recs[x].r.finish_ps > last)
			last = h->recs[x].r.finish_ps;
	}
	for (unsigned int i = 1; i <= n; i++)
		if (h->s.links[inj(i)].bytes != (n - 1) * S ||
		    h->s.links[ejl(i)].bytes != (n - 1) * S)
			links_ok = 0;
	ok(all_done && links_ok,
	   "all-to-all of %u (%u DMA): every injection and ejection link carries (n-1)*S",
	   n, dma);
	/* Injection bound: (n-1)*S/B, then the last segment's two hops. */
	want = t0 + (n - 1) * nseg * SER + LAT + SER + LAT;
	if (dma == 1)
		ok(last == want,
		   "all-to-all of %u, shift order: finish %llu = (n-1)S/B + s/B + 2L = %llu exactly",
		   n, last, want);
	else
		ok(within(last, want, 10000),
		   "all-to-all of %u, all flows at once: finish %llu within 1%% of (n-1)S/B + s/B + 2L = %llu",
		   n, last, want);
	h_free(h);
	topo_free(t);
}

static void test_degraded(void)
{
	const ull bytes = 10 * SEG + 100;
	struct icfab_mtopo *t = chain(2);
	struct harness *up, *deg;

	topo_validate(t);
	up = h_new(t, SEG, 2, 64, 1);
	submit(up, 0, 1, bytes, 0, 0);
	run_all(up);
	t->links[0].state = ICFAB_MODEL_LINK_DEGRADED;
	t->links[0].permille = 250;
	deg = h_new(t, SEG, 2, 64, 1);
	submit(deg, 0, 1, bytes, 0, 0);
	run_all(deg);
	ok(deg->s.links[0].busy_ps == 4 * up->s.links[0].busy_ps &&
	   dur(&deg->recs[0]) - LAT == 4 * (dur(&up->recs[0]) - LAT),
	   "a link DEGRADED to 250 permille serialises 4x slower (%llu vs %llu ps)",
	   (ull)deg->s.links[0].busy_ps, (ull)up->s.links[0].busy_ps);
	ok(dur(&deg->recs[0]) ==
	   icfab_uncontended_ps(bytes, SEG, 1, BW / 4, LAT),
	   "DEGRADED equals the closed form at a quarter of the bandwidth");
	h_free(up);
	h_free(deg);
	topo_free(t);
}

static void test_unreachable(void)
{
	struct icfab_mtopo *t = star(4, 1);
	struct harness *h;
	struct rec *r;

	/* Nobody routes to endpoint 4: validation allows that. */
	for (unsigned int n = 0; n <= 4; n++)
		t->nodes[n].routes[4] = ICFAB_MODEL_NO_PORT;
	topo_validate(t);
	t->links[ejl(3)].state = ICFAB_MODEL_LINK_DOWN;
	h = h_new(t, SEG, 8, 1024, 3);
	submit(h, 1, 4, 100 * SEG, 1000, 0);
	submit(h, 1, 3, 100 * SEG, 1000, 1);
	submit(h, 1, 2, 10 * SEG, 1000, 2);	/* behind both, 1 DMA engine */
	run_all(h);
	r = h->recs;
	ok(r[0].n == 1 && r[0].r.status == -ICFAB_ENGINE_EHOSTUNREACH &&
	   r[0].r.finish_ps == r[0].r.start_ps && r[0].r.start_ps == 1000,
	   "no route: -EHOSTUNREACH at its start (status %d)", r[0].r.status);
	ok(r[1].n == 1 && r[1].r.status == -ICFAB_ENGINE_EHOSTUNREACH &&
	   r[1].r.finish_ps == r[1].r.start_ps,
	   "a DOWN link on the path: -EHOSTUNREACH at its start (status %d)",
	   r[1].r.status);
	ok(r[2].n == 1 && !r[2].r.status && r[2].r.start_ps == 1000 &&
	   dur(&r[2]) == icfab_uncontended_ps(10 * SEG, SEG, 2, BW, LAT) &&
	   icfab_engine_next_ps(&h->e) == ICFAB_ENGINE_NEVER &&
	   h->s.links[ejl(3)].bytes == 0,
	   "failed transfers release their DMA engine at once and leave nothing pending");
	h_free(h);
	topo_free(t);
}

/* xorshift64*: the same sequence on every run. */
static ull rng_state;
static ull rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

#define DET_N		300
#define DET_EPS		8

struct det_xfer {
	unsigned int src, dst;
	ull bytes, at;
};

static struct det_xfer det[DET_N];
static unsigned int det_order[DET_N];	/* by submit time */

static void det_workload(void)
{
	rng_state = 0x9e3779b97f4a7c15ULL;
	for (unsigned int i = 0; i < DET_N; i++) {
		det[i].src = rng() % DET_EPS + 1;
		do
			det[i].dst = rng() % DET_EPS + 1;
		while (det[i].dst == det[i].src);
		/* Sizes from nothing to ~50 segments, often odd. */
		det[i].bytes = rng() % 5 ? rng() % (50 * SEG) : rng() % 3 * SEG;
		/* Few distinct times, so that ties are common. */
		det[i].at = rng() % 20 * 1000000ULL;
		det_order[i] = i;
	}
	for (unsigned int i = 1; i < DET_N; i++)	/* stable insertion sort */
		for (unsigned int j = i; j && det[det_order[j - 1]].at >
					      det[det_order[j]].at; j--) {
			unsigned int tmp = det_order[j];

			det_order[j] = det_order[j - 1];
			det_order[j - 1] = tmp;
		}
}

static struct harness *det_new(struct icfab_mtopo *t)
{
	return h_new(t, SEG, DET_N, DET_N * 60, DET_N);
}

static int det_same(const struct harness *a, const struct harness *b,
		    const struct icfab_mtopo *t)
{
	for (unsigned int i = 0; i < DET_N; i++)
		if (a->recs[i].n != 1 || b->recs[i].n != 1 ||
		    memcmp(&a->recs[i].r, &b->recs[i].r, sizeof(a->recs[i].r)))
			return 0;
	for (unsigned int l = 0; l < t->links_cap; l++) {
		struct icfab_engine_link la = a->s.links[l];
		struct icfab_engine_link lb = b->s.links[l];

		/* Which run_until() call last checked the cache: not state. */
		la.cache_epoch = lb.cache_epoch = 0;
		if (memcmp(&la, &lb, sizeof(la)))
			return 0;
	}
	return 1;
}

static void test_determinism(void)
{
	struct icfab_mtopo *t = star(DET_EPS, 2);
	struct harness *once, *steps, *rev, *stop, *budget;
	unsigned int next = 0, calls = 0, yields = 0;
	ull horizon = 0, queued = 0;
	int err = 0;

	topo_validate(t);
	det_workload();

	once = det_new(t);
	for (unsigned int i = 0; i < DET_N; i++)
		err |= submit(once, det[i].src, det[i].dst, det[i].bytes,
			      det[i].at, i);
	run_all(once);
	for (unsigned int i = 0; i < DET_N; i++)
		queued += once->recs[i].r.queued_ps;

	/* Submissions interleaved with 1000 random horizon steps. */
	steps = det_new(t);
	for (unsigned int s = 0; s < 1000; s++) {
		horizon += rng() % 200000;
		while (next < DET_N && det[det_order[next]].at < horizon) {
			unsigned int i = det_order[next++];

			err |= submit(steps, det[i].src, det[i].dst,
				      det[i].bytes, det[i].at, i);
		}
		icfab_engine_run_until(&steps->e, horizon, on_complete, steps);
		calls++;
	}
	printf("# %d of %d completions and %u of %d submissions happened between steps\n",
	       steps->completions, DET_N, next, DET_N);
	while (next < DET_N) {
		unsigned int i = det_order[next++];

		err |= submit(steps, det[i].src, det[i].dst, det[i].bytes,
			      det[i].at, i);
	}
	run_all(steps);

	/* The same transfers and keys, submitted in reverse order. */
	rev = det_new(t);
	for (unsigned int i = DET_N; i-- > 0;)
		err |= submit(rev, det[i].src, det[i].dst, det[i].bytes,
			      det[i].at, i);
	run_all(rev);

	/* Stopping after every completion, restarting each time. */
	stop = det_new(t);
	stop->stop = 1;
	for (unsigned int i = 0; i < DET_N; i++)
		err |= submit(stop, det[i].src, det[i].dst, det[i].bytes,
			      det[i].at, i);
	while (icfab_engine_run_until(&stop->e, ICFAB_ENGINE_NEVER,
				      on_complete, stop) == 1)
		;

	/* A budget of 7 events per call, to a horizon, then to the end. */
	budget = det_new(t);
	budget->e.run_budget = 7;
	for (unsigned int i = 0; i < DET_N; i++)
		err |= submit(budget, det[i].src, det[i].dst, det[i].bytes,
			      det[i].at, i);
	for (int ret; (ret = icfab_engine_run_until(&budget->e, 1000000,
						     on_complete, budget));)
		yields += ret == ICFAB_ENGINE_YIELD;
	err |= budget->e.now_ps != 1000000;
	for (int ret; (ret = icfab_engine_run_until(&budget->e,
						     ICFAB_ENGINE_NEVER,
						     on_complete, budget));)
		yields += ret == ICFAB_ENGINE_YIELD;

	ok(!err && queued > 0 && once->completions == DET_N,
	   "a contended random workload of %d transfers completes (queued %llu ps in all)",
	   DET_N, queued);
	ok(det_same(once, steps, t),
	   "one run_until vs %u random steps with interleaved submissions: bit-identical",
	   calls);
	ok(det_same(once, rev, t),
	   "submission order of same-time transfers does not change results");
	ok(det_same(once, stop, t) && stop->completions == DET_N,
	   "stopping after every completion does not change results");
	ok(det_same(once, budget, t) && budget->completions == DET_N &&
	   yields > DET_N,
	   "yielding every 7 events (%u times) does not change results",
	   yields);
	h_free(once);
	h_free(steps);
	h_free(rev);
	h_free(stop);
	h_free(budget);
	topo_free(t);
}

static void test_dma(void)
{
	const ull nseg = 10, S = nseg * SEG, t0 = 3000;
	struct icfab_mtopo *t1 = star(3, 1), *t2 = star(3, 2);
	struct harness *h1, *h2;
	struct rec *a, *b;

	topo_validate(t1);
	topo_validate(t2);
	h1 = h_new(t1, SEG, 4, 64, 2);
	submit(h1, 1, 3, S, t0, 1);	/* submitted first, but key 1 */
	submit(h1, 1, 2, S, t0, 0);
	run_all(h1);
	a = &h1->recs[0];
	b = &h1->recs[1];
	ok(a->r.start_ps == t0 && b->r.start_ps == t0 + nseg * SER &&
	   b->r.queued_ps == nseg * SER && a->r.queued_ps == 0 &&
	   dur(a) == icfab_uncontended_ps(S, SEG, 2, BW, LAT) &&
	   dur(b) == dur(a),
	   "1 DMA engine: the second transfer starts when the first injected its last segment (%llu)",
	   (ull)b->r.start_ps);

	/* Waiters take a released engine in key order. */
	h_free(h1);
	h1 = h_new(t1, SEG, 4, 64, 3);
	submit(h1, 1, 2, S, t0, 2);
	submit(h1, 1, 3, S, t0, 1);
	submit(h1, 1, 2, S, t0, 0);
	run_all(h1);
	ok(h1->recs[0].r.start_ps == t0 &&
	   h1->recs[1].r.start_ps == t0 + nseg * SER &&
	   h1->recs[2].r.start_ps == t0 + 2 * nseg * SER &&
	   h1->recs[2].r.queued_ps == 2 * nseg * SER,
	   "1 DMA engine: waiting transfers start in key order, back to back");

	h2 = h_new(t2, SEG, 4, 64, 2);
	submit(h2, 1, 2, S, t0, 0);
	submit(h2, 1, 3, S, t0, 1);
	run_all(h2);
	a = &h2->recs[0];
	b = &h2->recs[1];
	/* Interleaved on the injection link: b ends one segment after a. */
	ok(a->r.start_ps == t0 && b->r.start_ps == t0 &&
	   b->r.finish_ps == a->r.finish_ps + SER &&
	   h2->s.links[inj(1)].busy_ps == 2 * nseg * SER,
	   "2 DMA engines: both start at t0 and share the injection link");
	h_free(h1);
	h_free(h2);
	topo_free(t1);
	topo_free(t2);
}

static void test_queued(void)
{
	struct icfab_mtopo *t = star(3, 1);
	struct harness *h;
	struct rec *a, *b;

	topo_validate(t);
	h = h_new(t, SEG, 4, 64, 2);
	submit(h, 2, 1, 2 * SEG, 0, 0);
	submit(h, 3, 1, 2 * SEG, 0, 1);
	run_all(h);
	a = &h->recs[0];
	b = &h->recs[1];
	/*
	 * By hand, s = SER: a0 and b0 reach the switch at s + L; a0 leaves
	 * at once, b0 waits s. a1 and b1 arrive at 2s + L, when the link is
	 * busy until 3s + L: a1 waits s, b1 (behind a1) waits 2s. So a
	 * queues s, b 3s; a ends at 4s + 2L, b at 5s + 2L.
	 */
	ok(a->r.queued_ps == SER && b->r.queued_ps == 3 * SER &&
	   a->r.finish_ps == 4 * SER + 2 * LAT &&
	   b->r.finish_ps == 5 * SER + 2 * LAT &&
	   h->s.links[ejl(1)].max_queued_ps == 2 * SER &&
	   h->s.links[inj(2)].max_queued_ps == 0,
	   "queued time matches the hand computation (a %llu, b %llu ps)",
	   (ull)a->r.queued_ps, (ull)b->r.queued_ps);
	h_free(h);
	topo_free(t);
}

static void test_capacity(void)
{
	struct icfab_mtopo *t = chain(3);
	struct harness *h;
	struct icfab_engine e;
	struct icfab_engine_storage s;
	icfab_u32 id;
	int e1, e2, e3, e4;

	topo_validate(t);
	h = h_new(t, SEG, 2, 10, 2);
	e1 = icfab_engine_submit(&h->e, 0, 2, 9 * SEG, 0, 0, &id);
	e2 = icfab_engine_submit(&h->e, 0, 2, 1, 0, 1, &id);
	ok(!e1 && e2 == -ICFAB_ENGINE_ENOSPC && h->e.nr_xfers == 1,
	   "an event heap too small for the next transfer: -ENOSPC, nothing changed (%d)",
	   e2);
	e3 = icfab_engine_submit(&h->e, 0, 2, 10 * SEG, 0, 1, &id);
	ok(e3 == -ICFAB_ENGINE_ENOSPC,
	   "a transfer bigger than the whole heap: -ENOSPC");
	run_all(h);
	ok(h->recs[0].n == 1 && dur(&h->recs[0]) ==
	   icfab_uncontended_ps(9 * SEG, SEG, 2, BW, LAT) &&
	   h->e.max_events <= 10 && h->e.events_reserved == 0,
	   "the admitted transfer runs correctly within its reservation");
	e1 = icfab_engine_submit(&h->e, 0, 2, 1, h->e.now_ps, 2, &id);
	e2 = icfab_engine_submit(&h->e, 1, 2, 1, h->e.now_ps, 3, &id);
	e3 = icfab_engine_submit(&h->e, 1, 0, 1, h->e.now_ps, 4, &id);
	ok(!e1 && !e2 && e3 == -ICFAB_ENGINE_ENOSPC,
	   "a full transfer table: -ENOSPC");
	e4 = icfab_engine_submit(&h->e, 1, 0, 1, h->e.now_ps - 1, 5, &id);
	run_all(h);
	ok(e4 == -ICFAB_ENGINE_ERANGE,
	   "a submission before the processed events: -ERANGE");
	ok(icfab_engine_submit(&h->e, 0, 7, 1, h->e.now_ps, 9, &id) ==
	   -ICFAB_ENGINE_EINVAL, "an unknown endpoint: -EINVAL");

	s = h->s;
	s.dma_cap = icfab_engine_dma_needed(t) - 1;
	ok(icfab_engine_init(&e, t, SEG, &s) == -ICFAB_ENGINE_ENOSPC,
	   "DMA storage below the topology's engines: -ENOSPC");
	h_free(h);
	topo_free(t);
}

static void test_cancel(void)
{
	struct icfab_mtopo *t = star(4, 1);
	struct harness *h;
	int once = 1, cancelled = 0, fine = 0;

	topo_validate(t);
	h = h_new(t, SEG, 16, 4096, 8);
	/* Endpoint 1 has one engine: one runs, two wait. */
	submit(h, 1, 2, 100 * SEG, 0, 0);
	submit(h, 1, 3, 100 * SEG, 0, 1);
	submit(h, 1, 4, 100 * SEG, 0, 2);
	submit(h, 2, 3, 1 * SEG, 0, 3);		/* done before the cancel */
	submit(h, 3, 4, 50 * SEG, 0, 4);
	submit(h, 4, 2, 50 * SEG, 100000000ULL, 5);	/* not yet submitted */
	icfab_engine_run_until(&h->e, 20 * SER, on_complete, h);
	icfab_engine_cancel_all(&h->e, on_complete, h);
	for (unsigned int i = 0; i < 6; i++) {
		if (h->recs[i].n != 1)
			once = 0;
		if (h->recs[i].r.status == -ICFAB_ENGINE_ECANCELED)
			cancelled++;
		else if (!h->recs[i].r.status)
			fine++;
	}
	ok(once && cancelled == 5 && fine == 1 &&
	   h->recs[5].r.start_ps == 100000000ULL &&
	   h->recs[0].r.finish_ps == 20 * SER,
	   "cancel: every transfer completes exactly once, 5 with -ECANCELED");
	ok(h->e.nr_xfers == 0 && h->e.events_reserved == 0 &&
	   icfab_engine_next_ps(&h->e) == ICFAB_ENGINE_NEVER &&
	   h->completions == 6,
	   "cancel leaves the engine empty");
	memset(h->recs, 0, 8 * sizeof(*h->recs));
	submit(h, 1, 2, SEG, h->e.now_ps, 7);
	run_all(h);
	ok(h->recs[7].n == 1 && !h->recs[7].r.status &&
	   h->recs[7].r.start_ps == 20 * SER,
	   "after cancel, the freed DMA engine takes new work");
	h_free(h);
	topo_free(t);
}

static void on_trace_submit(void *arg, icfab_u32 xfer_id,
			    const struct icfab_xfer_result *r)
{
	struct harness *h = arg;

	(void)xfer_id;
	h->trace_submits++;
	if (r->key == 1 && r->bytes == 2 * SEG && r->submit_ps == 0 &&
	    r->src == 3 && r->dst == 1 && r->hops == 2 && !r->status)
		h->trace_submit_ok++;
}

static void on_trace_xmit(void *arg, const struct icfab_engine_xmit *x)
{
	struct harness *h = arg;
	struct xmit_sum *sum;

	if (x->link >= 32 || x->depart_ps < x->ready_ps ||
	    x->done_ps < x->depart_ps) {
		h->trace_bad++;
		return;
	}
	sum = &h->xsum[x->link];
	sum->segs++;
	sum->bytes += x->bytes;
	sum->busy += x->done_ps - x->depart_ps;
	if (x->depart_ps - x->ready_ps > sum->max_q)
		sum->max_q = x->depart_ps - x->ready_ps;
	h->trace_segs++;
	h->trace_bytes += x->bytes;
	/* The queue of test_queued, segment by segment: b1 waits 2s. */
	if (x->key == 1 && x->seg == 1 && x->hop == 1 &&
	    x->ready_ps == 2 * SER + LAT && x->depart_ps == 4 * SER + LAT &&
	    x->done_ps == 5 * SER + LAT)
		h->trace_b1_ok++;
}

static void on_trace_complete(void *arg, icfab_u32 xfer_id,
			      const struct icfab_xfer_result *r)
{
	struct harness *h = arg;

	(void)xfer_id;
	/* Called before the completion callback, which counts too. */
	if (r->key < h->nrecs && !h->recs[r->key].n)
		h->trace_completes++;
}

static const struct icfab_engine_tracer test_tracer = {
	.submit = on_trace_submit,
	.xmit = on_trace_xmit,
	.complete = on_trace_complete,
};

static void test_trace(void)
{
	struct icfab_mtopo *t = chain(4);
	struct harness *h;
	int same = 1;

	topo_validate(t);
	h = h_new(t, SEG, 4, 256, 2);
	icfab_engine_set_tracer(&h->e, &test_tracer, h);
	submit(h, 0, 3, 20 * SEG + 1, 0, 0);
	submit(h, 1, 3, 10 * SEG, 0, 1);
	run_all(h);
	ok(h->trace_segs == 21 * 3 + 10 * 2 &&
	   h->trace_bytes == (20 * SEG + 1) * 3 + 10 * SEG * 2 &&
	   !h->trace_bad,
	   "the tracer sees every departure (%llu)", h->trace_segs);
	for (unsigned int l = 0; l < t->links_cap; l++) {
		const struct icfab_engine_link *ls = &h->s.links[l];
		const struct xmit_sum *sum = &h->xsum[l];

		if (ls->bytes != sum->bytes || ls->segments != sum->segs ||
		    ls->busy_ps != sum->busy || ls->max_queued_ps != sum->max_q)
			same = 0;
	}
	ok(same && h->s.links[4].bytes == 20 * SEG + 1 + 10 * SEG &&
	   h->s.links[4].busy_ps == 30 * SER + 20,
	   "link statistics are the sums of what the tracer saw");
	ok(h->trace_submits == 2 && h->trace_completes == 2,
	   "the tracer sees every submission and completion, once");
	icfab_engine_reset_stats(&h->e);
	memset(h->xsum, 0, sizeof(h->xsum));
	memset(h->recs, 0, 2 * sizeof(*h->recs));
	submit(h, 2, 3, SEG, h->e.now_ps + 1, 0);
	run_all(h);
	ok(h->s.links[4].bytes == SEG && h->s.links[4].segments == 1 &&
	   h->s.links[4].busy_ps == SER && h->s.links[0].bytes == 0 &&
	   h->s.links[2].busy_ps == 0 && h->s.links[2].max_queued_ps == 0 &&
	   h->recs[0].n == 1 && !h->recs[0].r.status,
	   "reset_stats zeroes the statistics and counting goes on");
	icfab_engine_set_tracer(&h->e, NULL, NULL);
	h->trace_segs = 0;
	submit(h, 0, 3, SEG, h->e.now_ps + 1, 1);
	run_all(h);
	ok(h->trace_segs == 0 && h->recs[1].n == 1,
	   "a cleared tracer sees nothing");
	h_free(h);
	topo_free(t);

	/* The contended star of test_queued, seen by the tracer. */
	t = star(3, 1);
	topo_validate(t);
	h = h_new(t, SEG, 4, 64, 2);
	icfab_engine_set_tracer(&h->e, &test_tracer, h);
	submit(h, 2, 1, 2 * SEG, 0, 0);
	submit(h, 3, 1, 2 * SEG, 0, 1);
	run_all(h);
	ok(h->trace_b1_ok == 1 && h->trace_submit_ok == 1 &&
	   h->xsum[ejl(1)].max_q == 2 * SER &&
	   h->s.links[ejl(1)].max_queued_ps == 2 * SER,
	   "a queued segment's ready, departure and done times are exact");
	h_free(h);
	topo_free(t);
}

/* Link changes while segments are in flight apply to later departures. */
static void test_midflight(void)
{
	struct icfab_mtopo *t = star(3, 1);
	struct harness *h;
	ull busy;

	topo_validate(t);
	h = h_new(t, SEG, 4, 256, 3);
	submit(h, 1, 2, 100 * SEG, 0, 0);
	/* Segments 0..9 have left the injection link by 10 s/B. */
	icfab_engine_run_until(&h->e, 10 * SER + 1, on_complete, h);
	t->links[inj(1)].state = ICFAB_MODEL_LINK_DEGRADED;
	t->links[inj(1)].permille = 500;
	run_all(h);
	busy = h->s.links[inj(1)].busy_ps;
	ok(h->recs[0].n == 1 && !h->recs[0].r.status &&
	   busy == 11 * SER + 89 * 2 * SER,
	   "a link degraded mid-transfer slows only later segments (busy %llu ps)",
	   busy);

	t->links[inj(1)].state = ICFAB_MODEL_LINK_UP;
	submit(h, 1, 2, 100 * SEG, h->e.now_ps, 1);
	icfab_engine_run_until(&h->e, h->e.now_ps + 10 * SER, on_complete, h);
	t->links[ejl(2)].state = ICFAB_MODEL_LINK_DOWN;
	submit(h, 1, 3, 5 * SEG, h->e.now_ps, 2);	/* waits for the engine */
	run_all(h);
	ok(h->recs[1].n == 1 &&
	   h->recs[1].r.status == -ICFAB_ENGINE_EHOSTUNREACH &&
	   h->s.links[inj(1)].bytes < 205 * SEG &&
	   h->recs[2].n == 1 && !h->recs[2].r.status &&
	   h->e.nr_xfers == 0 && h->e.events_reserved == 0 &&
	   icfab_engine_next_ps(&h->e) == ICFAB_ENGINE_NEVER,
	   "a link going DOWN under a transfer fails it once, frees its engine, leaves nothing behind");
	h_free(h);
	topo_free(t);
}

/*
 * Events at the horizon are not processed: a context whose clock is the
 * horizon may still submit there, with a smaller key, and go first.
 */
static void test_horizon(void)
{
	struct icfab_mtopo *t = star(3, 1);
	struct harness *h;
	int e1, e2;

	topo_validate(t);
	h = h_new(t, SEG, 4, 64, 2);
	e1 = submit(h, 1, 2, SEG, 1000000, 1);
	icfab_engine_run_until(&h->e, 1000000, on_complete, h);
	e2 = submit(h, 1, 3, SEG, 1000000, 0);
	run_all(h);
	ok(!e1 && !e2 && h->recs[0].r.start_ps == 1000000 &&
	   h->recs[1].r.start_ps == 1000000 + SER,
	   "run_until(h) leaves events at h for a submission at h with a smaller key");
	h_free(h);
	topo_free(t);
}

/*
 * A submission at an instant whose events in flight the engine has
 * processed none, some or all of: its first events sort after them
 * (ICFAB_ENGINE_KEY_LATE), whatever its key, so it lands in the same
 * place in the order and gets the same times every way. On star(3, 2),
 * D (2 -> 3, one segment, key 3) completes at T = 2 (L + S/B); A (1 -> 3,
 * two segments, key 5, submitted at T - S/B) has its second segment
 * ready at its injection link at T; B (1 -> 2, one segment, key 1) is
 * submitted at T. B waits behind A's segment there, S/B, and ends at
 * T + 3 S/B + 2 L; A is not delayed. E (3 -> 2, key 9) completes at T
 * too, after A's event there: stopping at E's completion, the engine has
 * processed the whole instant. Before, a B submitted after the engine
 * had processed D's completion (key 3 >= 1) was refused.
 */
static void test_late(void)
{
	const ull T = 2 * (LAT + SER);
	const ull want_b = T + 3 * SER + 2 * LAT;
	const ull want_a = T - SER +
			   icfab_uncontended_ps(2 * SEG, SEG, 2, BW, LAT);
	static const char *const how[] = {
		"before the instant", "after the completion there",
		"after all of it",
	};
	int bad = 0, err, e1, e2, e3;

	for (int way = 0; way < 3; way++) {
		struct icfab_mtopo *t = star(3, 2);
		struct harness *h;
		struct rec *a, *b, *d;

		topo_validate(t);
		h = h_new(t, SEG, 8, 64, 10);
		submit(h, 2, 3, SEG, 0, 3);
		submit(h, 3, 2, SEG, 0, 9);
		submit(h, 1, 3, 2 * SEG, T - SER, 5);
		if (way) {
			int k = way == 1 ? 3 : 9;

			h->stop = 1;
			while (!h->recs[k].n)
				icfab_engine_run_until(&h->e, ICFAB_ENGINE_NEVER,
						       on_complete, h);
			h->stop = 0;
		} else {
			icfab_engine_run_until(&h->e, T, on_complete, h);
		}
		err = submit(h, 1, 2, SEG, T, 1);
		run_all(h);
		a = &h->recs[5];
		b = &h->recs[1];
		d = &h->recs[3];
		if (err || a->n != 1 || b->n != 1 || d->n != 1 ||
		    d->r.finish_ps != T || a->r.finish_ps != want_a ||
		    b->r.start_ps != T || b->r.finish_ps != want_b ||
		    b->r.queued_ps != SER || a->r.queued_ps) {
			bad++;
			printf("# %s: err %d, A ends %llu (want %llu), B %llu..%llu queued %llu (want %llu..%llu, %llu), D ends %llu (want %llu)\n",
			       how[way], err, (ull)a->r.finish_ps, want_a,
			       (ull)b->r.start_ps, (ull)b->r.finish_ps,
			       (ull)b->r.queued_ps, T, want_b, SER,
			       (ull)d->r.finish_ps, T);
		}
		h_free(h);
		topo_free(t);
	}
	ok(!bad, "a submission at an instant partly or wholly processed sorts after its events in flight: the same times every way");

	/*
	 * Among transfers submitted at one instant, keys order as ever: one
	 * whose key sorts before a processed one's there is refused.
	 */
	{
		struct icfab_mtopo *t = star(3, 2);
		struct harness *h;
		icfab_u32 id;

		topo_validate(t);
		h = h_new(t, SEG, 8, 64, 16);
		/* No bytes: it completes at its start, and stops the run there. */
		submit(h, 1, 2, 0, 1000, 7);
		h->stop = 1;
		icfab_engine_run_until(&h->e, ICFAB_ENGINE_NEVER, on_complete, h);
		h->stop = 0;
		e1 = icfab_engine_submit(&h->e, 2, 1, SEG, 1000, 6, &id);
		e2 = icfab_engine_submit(&h->e, 2, 1, SEG, 1000, 8, &id);
		e3 = icfab_engine_submit(&h->e, 2, 1, SEG, 2000,
					 ICFAB_ENGINE_KEY_LATE | 9, &id);
		run_all(h);
		ok(h->recs[7].n == 1 && h->recs[7].r.finish_ps == 1000 &&
		   e1 == -ICFAB_ENGINE_ERANGE && !e2 &&
		   e3 == -ICFAB_ENGINE_EINVAL && h->recs[8].n == 1 &&
		   h->recs[8].r.start_ps == 1000,
		   "at an instant whose submissions were processed: a smaller key -ERANGE, a larger one starts then; a key with the LATE bit -EINVAL (%d %d %d)",
		   e1, e2, e3);
		h_free(h);
		topo_free(t);
	}
}

static void test_empty_and_local(void)
{
	struct icfab_mtopo *t = chain(2);
	struct harness *h;

	topo_validate(t);
	h = h_new(t, SEG, 4, 16, 2);
	submit(h, 0, 1, 0, 50, 0);
	submit(h, 1, 1, 5 * SEG, 60, 1);
	run_all(h);
	ok(h->recs[0].n == 1 && !h->recs[0].r.status &&
	   h->recs[0].r.finish_ps == 50 &&
	   h->recs[1].n == 1 && !h->recs[1].r.status &&
	   h->recs[1].r.finish_ps == 60 && h->recs[1].r.hops == 0,
	   "empty and local transfers complete at their start");
	h_free(h);
	topo_free(t);
}

/* ---- link holds, retopo and trees ---- */

/* A deep copy of @src, to hand the engine as a new configuration. */
static struct icfab_mtopo *topo_clone(const struct icfab_mtopo *src)
{
	struct icfab_mtopo *t = topo_new(src->nodes_cap, src->links_cap);

	t->nr_nodes = src->nr_nodes;
	t->nr_endpoints = src->nr_endpoints;
	t->nr_switches = src->nr_switches;
	t->nr_links = src->nr_links;
	memcpy(t->links, src->links, src->links_cap * sizeof(*t->links));
	for (unsigned int i = 0; i < src->nodes_cap; i++) {
		const struct icfab_mnode *sn = &src->nodes[i];
		struct icfab_mnode *n = &t->nodes[i];

		*n = *sn;
		if (!sn->present)
			continue;
		n->port_out = malloc(sn->nr_ports * sizeof(icfab_u32));
		n->port_in = malloc(sn->nr_ports * sizeof(icfab_u32));
		n->routes = malloc(sn->routes_len * sizeof(icfab_u16));
		memcpy(n->port_out, sn->port_out, sn->nr_ports * sizeof(icfab_u32));
		memcpy(n->port_in, sn->port_in, sn->nr_ports * sizeof(icfab_u32));
		memcpy(n->routes, sn->routes, sn->routes_len * sizeof(icfab_u16));
	}
	return t;
}

static int submit_tree(struct harness *h, unsigned int src,
		       const struct icfab_engine_tree *tree, ull bytes, ull at,
		       ull key)
{
	icfab_u32 id;
	int err = icfab_engine_submit_tree(&h->e, src, tree, bytes, at, key,
					   &id);

	if (err)
		printf("# submit_tree from %u %llu B at %llu key %llu: %d\n",
		       src, bytes, at, key, err);
	return err;
}

/* Whether nothing is left in flight, pending or reserved. */
static int h_idle(const struct harness *h)
{
	return h->e.nr_xfers == 0 && h->e.events_reserved == 0 &&
	       icfab_engine_next_ps(&h->e) == ICFAB_ENGINE_NEVER;
}

static int links_same(const struct harness *a, const struct harness *b,
		      const struct icfab_mtopo *t)
{
	for (unsigned int l = 0; l < t->links_cap; l++)
		if (a->s.links[l].bytes != b->s.links[l].bytes ||
		    a->s.links[l].segments != b->s.links[l].segments ||
		    a->s.links[l].busy_ps != b->s.links[l].busy_ps ||
		    a->s.links[l].max_queued_ps != b->s.links[l].max_queued_ps ||
		    a->s.links[l].next_free_ps != b->s.links[l].next_free_ps)
			return 0;
	return 1;
}

static void test_hold(void)
{
	const ull bytes = 20 * SEG + 100, t0 = 777777, H = 5000000;
	const ull closed = icfab_uncontended_ps(bytes, SEG, 2, BW, LAT);
	struct icfab_mtopo *t = chain(3);
	struct harness *ref, *h;
	struct rec *r;

	topo_validate(t);
	ref = h_new(t, SEG, 2, 64, 2);
	submit(ref, 0, 2, bytes, t0, 1);
	run_all(ref);

	/* Held at injection: everything slides by the hold. */
	t->links[0].up_at_ps = t0 + H;
	h = h_new(t, SEG, 2, 64, 2);
	submit(h, 0, 2, bytes, t0, 1);
	run_all(h);
	r = &h->recs[1];
	ok(r->n == 1 && !r->r.status && r->r.start_ps == t0 &&
	   r->r.finish_ps == t0 + H + closed && r->r.queued_ps == 0 &&
	   h->s.links[0].max_queued_ps == 0,
	   "a held first hop: finish %llu = t0 + hold + closed form %llu, not queued",
	   (ull)r->r.finish_ps, t0 + H + closed);
	h_free(h);
	t->links[0].up_at_ps = 0;

	/*
	 * Held at the second hop past every arrival: the 21 segments wait
	 * at node 1 and leave back to back when it comes up.
	 */
	t->links[2].up_at_ps = t0 + H;
	h = h_new(t, SEG, 2, 64, 2);
	submit(h, 0, 2, bytes, t0, 1);
	run_all(h);
	r = &h->recs[1];
	ok(r->n == 1 && !r->r.status &&
	   r->r.finish_ps == t0 + H + 20 * SER +
				icfab_serialize_ps(100, BW) + LAT &&
	   r->r.queued_ps == 0 &&
	   h->s.links[2].max_queued_ps == 20 * SER,
	   "a held second hop: segments leave back to back from the hold, which is not queueing (max queued %llu)",
	   (ull)h->s.links[2].max_queued_ps);
	h_free(h);

	/* A hold that is over, failing or not, is no hold. */
	t->links[0].up_at_ps = 1;
	t->links[0].hold_fail = 1;
	t->links[2].up_at_ps = t0;
	t->links[2].hold_fail = 1;
	h = h_new(t, SEG, 2, 64, 2);
	submit(h, 0, 2, bytes, t0, 1);
	run_all(h);
	ok(h->recs[1].n == 1 &&
	   !memcmp(&h->recs[1].r, &ref->recs[1].r, sizeof(h->recs[1].r)) &&
	   links_same(h, ref, t),
	   "a hold in the past changes nothing");
	h_free(h);
	h_free(ref);
	topo_free(t);
}

static void test_hold_fail(void)
{
	const ull U = 10000000;
	struct icfab_mtopo *t = star(4, 1);
	struct harness *h;
	struct rec *r;
	int once = 1;

	topo_validate(t);
	t->links[ejl(2)].up_at_ps = U;
	t->links[ejl(2)].hold_fail = 1;
	t->links[inj(4)].up_at_ps = U;
	t->links[inj(4)].hold_fail = 1;
	h = h_new(t, SEG, 8, 1024, 8);
	ok(!submit(h, 1, 2, 20 * SEG, 0, 1) &&
	   !submit(h, 3, 2, 20 * SEG, 0, 2) &&
	   !submit(h, 1, 3, 5 * SEG, 0, 3) &&
	   !submit(h, 4, 1, 5 * SEG, 0, 5),
	   "a route over a held link is accepted at submission");
	run_all(h);
	r = h->recs;
	for (unsigned int k = 1; k <= 5; k++)
		if (k != 4 && r[k].n != 1)
			once = 0;
	/*
	 * Segment 0 meets the hold at the switch at s + L; segments 1 and
	 * 2 were injected by then (2s < s + L) and are lost there too; the
	 * third hop-0 event, at 3s, releases the engine. The last pending
	 * event is segment 2 reaching the switch at 3s + L.
	 */
	ok(once && r[1].r.status == -ICFAB_ENGINE_ENETDOWN &&
	   r[2].r.status == -ICFAB_ENGINE_ENETDOWN &&
	   r[1].r.finish_ps == 3 * SER + LAT &&
	   r[2].r.finish_ps == 3 * SER + LAT &&
	   h->s.links[inj(3)].bytes == 3 * SEG &&
	   h->s.links[ejl(2)].bytes == 0,
	   "hold_fail: -ENETDOWN, once each, at the last pending event (%llu)",
	   (ull)r[1].r.finish_ps);
	ok(!r[3].r.status && r[3].r.start_ps == 3 * SER &&
	   dur(&r[3]) == icfab_uncontended_ps(5 * SEG, SEG, 2, BW, LAT),
	   "the failed transfer's DMA engine goes to the next one at once");
	ok(r[5].r.status == -ICFAB_ENGINE_ENETDOWN &&
	   r[5].r.finish_ps == 0 && r[5].r.start_ps == 0 &&
	   h->s.links[inj(4)].bytes == 0 && h_idle(h),
	   "a failing hold on the first hop fails the transfer at its start; nothing is left behind");
	submit(h, 3, 2, SEG, U, 4);
	run_all(h);
	ok(r[4].n == 1 && !r[4].r.status &&
	   r[4].r.finish_ps == U + icfab_uncontended_ps(SEG, SEG, 2, BW, LAT),
	   "once the link is up, it carries traffic");
	h_free(h);
	topo_free(t);
}

static void test_hold_share(void)
{
	const ull n = 50, t0 = 1000, U = t0 + 60 * SER;
	struct icfab_mtopo *t = star(3, 1);
	struct harness *h;
	struct rec *a, *b;

	topo_validate(t);
	t->links[ejl(1)].up_at_ps = U;
	h = h_new(t, SEG, 4, 1024, 3);
	submit(h, 2, 1, n * SEG, t0, 1);
	submit(h, 3, 1, n * SEG, t0, 2);
	run_all(h);
	a = &h->recs[1];
	b = &h->recs[2];
	/*
	 * Every segment of both is at the switch before U; from U the link
	 * serves them in the order they became ready: a0 b0 a1 b1 ...
	 */
	ok(!a->r.status && !b->r.status &&
	   a->r.finish_ps == U + (2 * n - 1) * SER + LAT &&
	   b->r.finish_ps == U + 2 * n * SER + LAT &&
	   a->r.queued_ps == n * (n - 1) * SER &&
	   b->r.queued_ps == n * n * SER &&
	   h->s.links[ejl(1)].max_queued_ps == (2 * n - 1) * SER,
	   "two flows behind a hold interleave from it and share the link (a %llu, b %llu)",
	   (ull)a->r.finish_ps, (ull)b->r.finish_ps);
	h_free(h);
	topo_free(t);
}

/*
 * Endpoints 0 and 3, switches 1 and 2: a primary path 0-1-3 (links 0, 1,
 * latency @lp) and a detour 0-2-3 (links 2, 3, latency @ld).
 */
static struct icfab_mtopo *diamond(ull lp, ull ld)
{
	struct icfab_mtopo *t = topo_new(4, 4);

	add_node(t, ICFAB_MODEL_ENDPOINT, 2, 1);
	add_node(t, ICFAB_MODEL_SWITCH, 2, 0);
	add_node(t, ICFAB_MODEL_SWITCH, 2, 0);
	add_node(t, ICFAB_MODEL_ENDPOINT, 2, 1);
	add_link(t, 0, 0, 1, 0);
	add_link(t, 1, 1, 3, 0);
	add_link(t, 0, 1, 2, 0);
	add_link(t, 2, 1, 3, 1);
	t->links[0].latency_ps = t->links[1].latency_ps = lp;
	t->links[2].latency_ps = t->links[3].latency_ps = ld;
	t->nodes[0].routes[3] = 0;
	t->nodes[1].routes[3] = 1;
	t->nodes[2].routes[3] = 1;
	return t;
}

/*
 * Link 0 goes DOWN once m segments have left by it, and the routes move
 * to the detour: the rest go round. Returns the transfer's record.
 */
static void retopo_detour(ull lp, ull ld, ull want_finish, const char *what)
{
	const ull n = 20, m = 8, t0 = 3000;
	struct icfab_mtopo *t = diamond(lp, ld), *t2;
	struct harness *h;
	struct rec *r;
	int err;

	topo_validate(t);
	t2 = topo_clone(t);
	t2->links[0].state = ICFAB_MODEL_LINK_DOWN;
	t2->nodes[0].routes[3] = 1;
	topo_validate(t2);
	h = h_new(t, SEG, 2, 64, 2);
	submit(h, 0, 3, n * SEG, t0, 1);
	icfab_engine_run_until(&h->e, t0 + (m - 1) * SER + 1, on_complete, h);
	err = icfab_engine_retopo(&h->e, t2);
	run_all(h);
	r = &h->recs[1];
	ok(!err && r->n == 1 && !r->r.status &&
	   r->r.finish_ps == want_finish &&
	   h->s.links[0].segments == m && h->s.links[1].segments == m &&
	   h->s.links[2].segments == n - m &&
	   h->s.links[3].segments == n - m && h_idle(h),
	   "retopo to a detour mid-transfer, %s: status 0, finish %llu = %llu",
	   what, (ull)r->r.finish_ps, want_finish);
	h_free(h);
	topo_free(t);
	topo_free(t2);
}

static void test_retopo(void)
{
	const ull t0 = 3000, lp = 700000;
	struct icfab_mtopo *t, *t2, *bad;
	struct harness *ref, *h;
	int e1, e2, e3, e4;

	/* Equal paths: segments 8..19 take the detour in step. */
	retopo_detour(LAT, LAT,
		      t0 + icfab_uncontended_ps(20 * SEG, SEG, 2, BW, LAT),
		      "equal latencies");
	/*
	 * A faster detour: later segments overtake the first 8, and the
	 * transfer ends with the last of those, (m + 1)s + 2Lp after t0.
	 */
	retopo_detour(lp, 0, t0 + 9 * SER + 2 * lp,
		      "later segments overtaking");

	/* Shapes that differ are refused, and nothing changes. */
	t = star(3, 1);
	topo_validate(t);
	ref = h_new(t, SEG, 4, 256, 3);
	h = h_new(t, SEG, 4, 256, 3);
	submit(ref, 1, 2, 40 * SEG, 0, 1);
	submit(ref, 3, 2, 40 * SEG, 0, 2);
	submit(h, 1, 2, 40 * SEG, 0, 1);
	submit(h, 3, 2, 40 * SEG, 0, 2);
	icfab_engine_run_until(&h->e, 10 * SER + 1, on_complete, h);
	bad = topo_clone(t);
	bad->nodes[2].kind = ICFAB_MODEL_SWITCH;
	e1 = icfab_engine_retopo(&h->e, bad);
	topo_free(bad);
	bad = topo_clone(t);
	bad->nodes[1].dma_engines = 2;
	e2 = icfab_engine_retopo(&h->e, bad);
	topo_free(bad);
	bad = topo_clone(t);
	bad->nodes[3].present = 0;
	e3 = icfab_engine_retopo(&h->e, bad);
	topo_free(bad);
	bad = topo_new(t->nodes_cap, t->links_cap + 1);
	e4 = icfab_engine_retopo(&h->e, bad);
	topo_free(bad);
	run_all(ref);
	run_all(h);
	ok(e1 == -ICFAB_ENGINE_EINVAL && e2 == -ICFAB_ENGINE_EINVAL &&
	   e3 == -ICFAB_ENGINE_EINVAL && e4 == -ICFAB_ENGINE_EINVAL &&
	   h->e.topo == t && links_same(h, ref, t) &&
	   !memcmp(&h->recs[1].r, &ref->recs[1].r, sizeof(ref->recs[1].r)) &&
	   !memcmp(&h->recs[2].r, &ref->recs[2].r, sizeof(ref->recs[2].r)),
	   "retopo to another node kind, DMA count, node set or size: -EINVAL, nothing changed");
	h_free(ref);
	h_free(h);
	topo_free(t);

	/* A degraded link by retopo: later departures at the new rate. */
	t = chain(2);
	topo_validate(t);
	t2 = topo_clone(t);
	t2->links[0].bandwidth = BW / 2;
	h = h_new(t, SEG, 2, 256, 2);
	submit(h, 0, 1, 100 * SEG, 0, 1);
	/* Segments 0..10 have left by the horizon. */
	icfab_engine_run_until(&h->e, 10 * SER + 1, on_complete, h);
	e1 = icfab_engine_retopo(&h->e, t2);
	run_all(h);
	ok(!e1 && h->e.topo == t2 && h->recs[1].n == 1 &&
	   !h->recs[1].r.status &&
	   h->s.links[0].busy_ps == 11 * SER + 89 * 2 * SER &&
	   h->recs[1].r.finish_ps == 11 * SER + 89 * 2 * SER + LAT,
	   "retopo halving a link's bandwidth mid-transfer: later segments take 2s/B (finish %llu)",
	   (ull)h->recs[1].r.finish_ps);
	h_free(h);
	topo_free(t);
	topo_free(t2);
}

/*
 * The route a source keeps for its submissions to one destination
 * (struct icfab_engine_ep.route_dst): from the second in a row on, a
 * submission takes it instead of walking the tables, so what the walk
 * would see differently must reach it: a link of it DOWN in place (no
 * route at submission: -EHOSTUNREACH at its start, no hops, as the
 * walk says) and a retopo to another route while the kept links are
 * still up (the new route).
 */
static void test_route_kept(void)
{
	const ull t0 = 3000;
	struct icfab_mtopo *t = diamond(LAT, LAT), *t2;
	ull want = icfab_uncontended_ps(SEG, SEG, 2, BW, LAT);
	struct harness *h;
	struct rec *r;
	int err, okr = 1;

	topo_validate(t);
	t2 = topo_clone(t);
	t2->nodes[0].routes[3] = 1;	/* by link 2; link 0 stays up */
	topo_validate(t2);
	h = h_new(t, SEG, 8, 64, 10);
	for (ull k = 1; k <= 3; k++)
		submit(h, 0, 3, SEG, t0 + k * want, k);
	run_all(h);
	for (ull k = 1; k <= 3; k++)
		okr &= h->recs[k].n == 1 && !h->recs[k].r.status &&
		       h->recs[k].r.hops == 2 && dur(&h->recs[k]) == want;
	ok(okr && h->s.links[0].segments == 3 && h->s.links[1].segments == 3,
	   "three submissions to one destination: by links 0 and 1 (%llu, %llu), each %llu ps",
	   (ull)h->s.links[0].segments, (ull)h->s.links[1].segments, want);
	/*
	 * A switch is no destination, however often it is asked for: the
	 * destination a source keeps a route to is one that was checked.
	 */
	{
		icfab_u32 id;
		int e1 = icfab_engine_submit(&h->e, 0, 1, SEG,
					     h->e.now_ps + 1, 20, &id);
		int e2 = icfab_engine_submit(&h->e, 0, 1, SEG,
					     h->e.now_ps + 1, 21, &id);

		ok(e1 == -ICFAB_ENGINE_EINVAL && e2 == -ICFAB_ENGINE_EINVAL &&
		   h->e.nr_xfers == 0,
		   "a switch as the destination, twice in a row: -EINVAL both times (%d, %d)",
		   e1, e2);
	}
	/* Each link of the kept route DOWN in turn, in place. */
	for (unsigned int l = 0; l < 2; l++) {
		t->links[l].state = ICFAB_MODEL_LINK_DOWN;
		submit(h, 0, 3, SEG, h->e.now_ps + 1, 4 + l);
		run_all(h);
		t->links[l].state = ICFAB_MODEL_LINK_UP;
		r = &h->recs[4 + l];
		ok(r->n == 1 && r->r.status == -ICFAB_ENGINE_EHOSTUNREACH &&
		   r->r.hops == 0 && r->r.finish_ps == r->r.start_ps &&
		   h->s.links[0].segments == 3,
		   "the kept route's link %u DOWN: -EHOSTUNREACH at its start, no hops (status %d, hops %u)",
		   l, r->r.status, r->r.hops);
	}
	/* Up again: kept again from the second on. */
	for (ull k = 6; k <= 7; k++)
		submit(h, 0, 3, SEG, h->e.now_ps + k, k);
	run_all(h);
	ok(h->recs[6].n == 1 && !h->recs[6].r.status &&
	   h->recs[7].n == 1 && !h->recs[7].r.status &&
	   h->s.links[0].segments == 5 && h->s.links[1].segments == 5,
	   "up again: the same route");
	/* Retopo to the detour: the kept route is forgotten. */
	err = icfab_engine_retopo(&h->e, t2);
	for (ull k = 8; k <= 9; k++)
		submit(h, 0, 3, SEG, h->e.now_ps + k, k);
	run_all(h);
	ok(!err && h->recs[8].n == 1 && !h->recs[8].r.status &&
	   h->recs[9].n == 1 && !h->recs[9].r.status &&
	   dur(&h->recs[9]) == want &&
	   h->s.links[0].segments == 5 && h->s.links[2].segments == 2 &&
	   h->s.links[3].segments == 2 && h_idle(h),
	   "retopo to another route, the kept links still up: the new route (links 0, 2: %llu, %llu)",
	   (ull)h->s.links[0].segments, (ull)h->s.links[2].segments);
	h_free(h);
	topo_free(t);
	topo_free(t2);
}

static void test_tree_check(void)
{
	struct icfab_mtopo *t = star(4, 1);
	struct harness *h;
	const icfab_u32 tree_links[] = { inj(1), ejl(2), ejl(4) };
	const icfab_u32 not_from[] = { ejl(2) };
	const icfab_u32 twice[] = { inj(1), ejl(2), inj(2) };
	const icfab_u32 to_src[] = { inj(1), ejl(1) };
	const icfab_u32 dup[] = { inj(1), ejl(2), ejl(2) };
	const icfab_u32 sw_leaf[] = { inj(1) };
	const icfab_u32 missing[] = { inj(1), 99 };
	const icfab_u32 absent[] = { inj(1), ejl(3) };
	struct {
		const icfab_u32 *links;
		unsigned int n;
		const char *what;
	} bad[] = {
		{ tree_links, 0, "empty" },
		{ not_from, 1, "a link not leaving a tree node" },
		{ twice, 3, "a node reached twice" },
		{ to_src, 2, "the source reached again" },
		{ dup, 3, "a link listed twice" },
		{ sw_leaf, 1, "a switch as a leaf" },
		{ missing, 2, "a link id past the end" },
		{ absent, 2, "a link not present" },
	};
	struct icfab_engine_tree tree = { .nr_links = 3, .links = tree_links };
	int good, refused = 0;

	topo_validate(t);
	t->links[ejl(3)].present = 0;		/* after validation */
	h = h_new(t, SEG, 4, 256, 4);
	good = !icfab_engine_tree_check(&h->e, 1, &tree) &&
	       tree.nr_leaves == 2;
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct icfab_engine_tree b = {
			.nr_links = bad[i].n, .links = bad[i].links,
		};
		icfab_u32 id;
		int c = icfab_engine_tree_check(&h->e, 1, &b);
		int s = icfab_engine_submit_tree(&h->e, 1, &b, SEG, 0, 1, &id);

		if (c == -ICFAB_ENGINE_EINVAL && s == -ICFAB_ENGINE_EINVAL)
			refused++;
		else
			printf("# %s: check %d, submit %d\n", bad[i].what, c, s);
	}
	ok(good && refused == (int)(sizeof(bad) / sizeof(bad[0])) &&
	   h_idle(h),
	   "tree_check and submit_tree refuse %d malformed trees, accept a good one (2 leaves)",
	   refused);
	ok(icfab_engine_tree_check(&h->e, 0, &tree) == -ICFAB_ENGINE_EINVAL &&
	   icfab_engine_tree_check(&h->e, 2, &tree) == -ICFAB_ENGINE_EINVAL,
	   "a tree from a switch, or from a node it does not leave: -EINVAL");
	h_free(h);
	topo_free(t);
}

/* A one-branch tree is the routed transfer, event for event. */
static void test_tree_path(void)
{
	const icfab_u32 path[] = { 0, 2, 4 };
	struct icfab_engine_tree tree = { .nr_links = 3, .links = path };
	struct icfab_mtopo *t = chain(4);
	struct harness *routed, *treed;
	int check;

	topo_validate(t);
	routed = h_new(t, SEG, 4, 256, 3);
	treed = h_new(t, SEG, 4, 256, 3);
	check = icfab_engine_tree_check(&treed->e, 0, &tree);
	submit(routed, 0, 3, 30 * SEG + 5, 1000, 1);
	submit(routed, 1, 3, 20 * SEG, 1000, 2);
	submit_tree(treed, 0, &tree, 30 * SEG + 5, 1000, 1);
	submit(treed, 1, 3, 20 * SEG, 1000, 2);
	run_all(routed);
	run_all(treed);
	ok(!check && tree.nr_leaves == 1 &&
	   icfab_engine_tree_events_needed(30 * SEG + 5, SEG, &tree) ==
	   icfab_engine_events_needed(30 * SEG + 5, SEG) &&
	   treed->recs[1].n == 1 && treed->recs[1].r.queued_ps > 0 &&
	   !memcmp(&routed->recs[1].r, &treed->recs[1].r,
		      sizeof(routed->recs[1].r)) &&
	   !memcmp(&routed->recs[2].r, &treed->recs[2].r,
		      sizeof(routed->recs[2].r)) &&
	   treed->recs[1].r.nr_leaves == 1 && treed->recs[1].r.hops == 3 &&
	   links_same(routed, treed, t),
	   "a path tree under contention equals the routed transfer exactly (finish %llu)",
	   (ull)treed->recs[1].r.finish_ps);
	h_free(routed);
	h_free(treed);
	topo_free(t);
}

static void test_tree_multicast(void)
{
	const ull bytes = 100 * SEG + 1, t0 = 5000;
	icfab_u32 links[9];
	struct icfab_engine_tree tree = { .nr_links = 9, .links = links };
	struct icfab_mtopo *t = star(9, 1);
	struct harness *h;
	icfab_u64 need;
	struct rec *r;
	int carried = 1, idle = 1, same = 1;

	links[0] = inj(1);
	for (unsigned int i = 2; i <= 9; i++)
		links[i - 1] = ejl(i);
	topo_validate(t);
	h = h_new(t, SEG, 2, 1, 2);	/* replaced below */
	icfab_engine_tree_check(&h->e, 1, &tree);
	need = icfab_engine_tree_events_needed(bytes, SEG, &tree);
	h_free(h);
	/* Exactly the documented reservation, and not an event more. */
	h = h_new(t, SEG, 1, (icfab_u32)need, 2);
	icfab_engine_set_tracer(&h->e, &test_tracer, h);
	submit_tree(h, 1, &tree, bytes, t0, 1);
	run_all(h);
	r = &h->recs[1];
	for (unsigned int i = 2; i <= 9; i++) {
		if (h->s.links[ejl(i)].bytes != bytes)
			carried = 0;
		if (h->s.links[inj(i)].bytes)
			idle = 0;
	}
	for (unsigned int l = 0; l < t->links_cap; l++)
		if (h->s.links[l].bytes != h->xsum[l].bytes ||
		    h->s.links[l].segments != h->xsum[l].segs)
			same = 0;
	ok(tree.nr_leaves == 8 && need == 101 * 8 + 1 &&
	   r->n == 1 && !r->r.status && r->r.nr_leaves == 8 &&
	   r->r.hops == 2 && r->r.dst == 2 && r->r.queued_ps == 0 &&
	   r->r.finish_ps ==
	   t0 + icfab_uncontended_ps(bytes, SEG, 2, BW, LAT),
	   "multicast to 8 leaves through a switch: finish %llu = closed form over 2 hops",
	   (ull)r->r.finish_ps);
	ok(h->s.links[inj(1)].bytes == bytes && carried && idle &&
	   !h->s.links[ejl(1)].bytes && h_idle(h) &&
	   h->e.max_events <= need,
	   "the source sends the payload once, the switch copies it onto each leaf link once (high-water %u of %llu)",
	   h->e.max_events, (ull)need);
	ok(same && h->trace_segs == 101 * 9 && !h->trace_bad,
	   "the tracer sees every tree departure (%llu)", h->trace_segs);
	h_free(h);
	topo_free(t);

	/*
	 * On a chain, from node 1 both ways: 1 -> 0 (a leaf at depth 1) and
	 * 1 -> 2 -> 3 (depth 2, through an endpoint that forwards). The
	 * source feeds two links of equal speed, so the deep leaf sees the
	 * two-hop closed form.
	 */
	t = chain(4);
	topo_validate(t);
	links[0] = 1;
	links[1] = 2;
	links[2] = 4;
	tree.nr_links = 3;
	h = h_new(t, SEG, 2, 1024, 2);
	submit_tree(h, 1, &tree, bytes, t0, 1);
	run_all(h);
	r = &h->recs[1];
	ok(r->n == 1 && !r->r.status && r->r.nr_leaves == 2 &&
	   r->r.hops == 2 && r->r.dst == 0 &&
	   r->r.finish_ps ==
	   t0 + icfab_uncontended_ps(bytes, SEG, 2, BW, LAT) &&
	   h->s.links[1].bytes == bytes && h->s.links[2].bytes == bytes &&
	   h->s.links[4].bytes == bytes && !h->s.links[0].bytes,
	   "a tree with a relay endpoint and leaves at depths 1 and 2 ends at the deep leaf's closed form");
	h_free(h);
	topo_free(t);
}

static void test_tree_faults(void)
{
	const icfab_u32 links[] = { inj(1), ejl(2), ejl(3), ejl(4) };
	const struct icfab_engine_tree tree = { .nr_links = 4, .links = links };
	const struct icfab_engine_tree tree3 = { .nr_links = 3, .links = links };
	struct icfab_mtopo *t = star(4, 1), *t2;
	struct harness *h;
	struct rec *r;
	int err, once = 1, cancelled = 0;

	topo_validate(t);

	t->links[ejl(3)].state = ICFAB_MODEL_LINK_DOWN;
	h = h_new(t, SEG, 4, 1024, 4);
	submit_tree(h, 1, &tree, 50 * SEG, 100, 1);
	run_all(h);
	r = &h->recs[1];
	ok(r->n == 1 && r->r.status == -ICFAB_ENGINE_EHOSTUNREACH &&
	   r->r.finish_ps == 100 && r->r.nr_leaves == 3 &&
	   !h->s.links[inj(1)].bytes && h_idle(h),
	   "a DOWN link on the tree at submission: -EHOSTUNREACH at its start");
	h_free(h);
	t->links[ejl(3)].state = ICFAB_MODEL_LINK_UP;

	h = h_new(t, SEG, 4, 1024, 4);
	submit_tree(h, 1, &tree, 50 * SEG, 0, 1);
	submit(h, 2, 4, 10 * SEG, 0, 2);
	icfab_engine_run_until(&h->e, 10 * SER + 1, on_complete, h);
	t->links[ejl(3)].state = ICFAB_MODEL_LINK_DOWN;
	run_all(h);
	r = &h->recs[1];
	ok(r->n == 1 && r->r.status == -ICFAB_ENGINE_EHOSTUNREACH &&
	   h->s.links[ejl(2)].bytes < 50 * SEG &&
	   h->recs[2].n == 1 && !h->recs[2].r.status && h_idle(h),
	   "a tree link going DOWN in flight: -EHOSTUNREACH once, nothing left behind");
	h_free(h);
	t->links[ejl(3)].state = ICFAB_MODEL_LINK_UP;

	t->links[ejl(4)].up_at_ps = 1000000000ULL;
	t->links[ejl(4)].hold_fail = 1;
	h = h_new(t, SEG, 4, 1024, 4);
	submit_tree(h, 1, &tree, 50 * SEG, 0, 1);
	run_all(h);
	ok(h->recs[1].n == 1 &&
	   h->recs[1].r.status == -ICFAB_ENGINE_ENETDOWN && h_idle(h),
	   "a failing hold on a tree link: -ENETDOWN");
	h_free(h);
	t->links[ejl(4)].hold_fail = 0;

	/* Waiting on a hold, the copies for every leaf wait with it. */
	h = h_new(t, SEG, 4, 1024, 4);
	submit_tree(h, 1, &tree, 50 * SEG, 0, 1);
	run_all(h);
	ok(h->recs[1].n == 1 && !h->recs[1].r.status &&
	   h->recs[1].r.finish_ps ==
	   1000000000ULL + 50 * SER + LAT &&
	   h->s.links[ejl(2)].bytes == 50 * SEG,
	   "a held tree link delays its leaf; the transfer ends with it");
	h_free(h);
	t->links[ejl(4)].up_at_ps = 0;

	/* A tree link that is gone after retopo fails the transfer. */
	t2 = topo_clone(t);
	t2->links[ejl(3)].present = 0;
	for (unsigned int n = 0; n <= 4; n++)
		t2->nodes[n].routes[3] = ICFAB_MODEL_NO_PORT;
	topo_validate(t2);
	h = h_new(t, SEG, 4, 1024, 4);
	submit_tree(h, 1, &tree, 50 * SEG, 0, 1);
	icfab_engine_run_until(&h->e, 10 * SER + 1, on_complete, h);
	err = icfab_engine_retopo(&h->e, t2);
	run_all(h);
	ok(!err && h->recs[1].n == 1 &&
	   h->recs[1].r.status == -ICFAB_ENGINE_EHOSTUNREACH && h_idle(h),
	   "retopo removing a tree link under a transfer: -EHOSTUNREACH");
	h_free(h);
	topo_free(t2);

	/*
	 * Re-cabled: the switch's port 2 now reaches endpoint 4. The tree's
	 * ejl(3) would deliver to the wrong node: it fails instead.
	 */
	t2 = topo_clone(t);
	t2->links[ejl(4)].present = 0;
	t2->links[ejl(3)].dst = 4;
	for (unsigned int n = 0; n <= 4; n++)
		t2->nodes[n].routes[3] = ICFAB_MODEL_NO_PORT;
	t2->nodes[0].routes[4] = 2;
	topo_validate(t2);
	h = h_new(t, SEG, 4, 1024, 4);
	submit_tree(h, 1, &tree3, 50 * SEG, 0, 1);
	icfab_engine_run_until(&h->e, 10 * SER + 1, on_complete, h);
	err = icfab_engine_retopo(&h->e, t2);
	run_all(h);
	ok(!err && h->recs[1].n == 1 &&
	   h->recs[1].r.status == -ICFAB_ENGINE_EHOSTUNREACH &&
	   h->s.links[ejl(3)].bytes < 50 * SEG && h_idle(h),
	   "retopo re-cabling a tree link under a transfer: -EHOSTUNREACH");
	h_free(h);
	topo_free(t2);

	/* cancel_all: trees running and waiting, each cancelled once. */
	{
		const icfab_u32 from2[] = { inj(2), ejl(3), ejl(4) };
		const struct icfab_engine_tree tree2 = {
			.nr_links = 3, .links = from2,
		};

		h = h_new(t, SEG, 8, 4096, 4);
		submit_tree(h, 1, &tree, 100 * SEG, 0, 0);
		submit_tree(h, 2, &tree2, 100 * SEG, 0, 1);
		submit_tree(h, 1, &tree, 100 * SEG, 0, 2);	/* waits */
		submit(h, 3, 1, 100 * SEG, 0, 3);
		icfab_engine_run_until(&h->e, 20 * SER, on_complete, h);
		icfab_engine_cancel_all(&h->e, on_complete, h);
		for (unsigned int i = 0; i < 4; i++) {
			if (h->recs[i].n != 1)
				once = 0;
			if (h->recs[i].r.status == -ICFAB_ENGINE_ECANCELED)
				cancelled++;
		}
		ok(once && cancelled == 4 && h->recs[2].r.nr_leaves == 3 &&
		   h_idle(h) && h->completions == 4,
		   "cancel_all completes tree transfers once each with -ECANCELED");
		h_free(h);
	}
	topo_free(t);
}

/*
 * ---- the event queue: a sorted run beside the heap must change nothing ----
 *
 * Each workload runs twice, once as the engine runs and once with every
 * event forced into the heap (heap_only), with a tracer logging every
 * decision in order: each segment's departure from each link and each
 * completion. The logs, the results and the link statistics must be
 * identical to the bit.
 */

struct qlog_entry {
	ull key, a, b, c;
	unsigned int seg, hop, link, kind;	/* kind 0: xmit, 1: complete */
};

struct qlog {
	struct qlog_entry *v;
	unsigned int n, cap;
	int overflow;
};

static void qlog_add(struct qlog *l, const struct qlog_entry *x)
{
	if (l->n == l->cap) {
		l->overflow = 1;
		return;
	}
	l->v[l->n++] = *x;
}

static void qlog_xmit(void *arg, const struct icfab_engine_xmit *x)
{
	struct qlog_entry q = {
		.key = x->key, .a = x->ready_ps, .b = x->depart_ps,
		.c = x->done_ps, .seg = x->seg, .hop = x->hop,
		.link = x->link, .kind = 0,
	};

	qlog_add(arg, &q);
}

static void qlog_complete(void *arg, icfab_u32 xfer_id,
			  const struct icfab_xfer_result *r)
{
	struct qlog_entry q = {
		.key = r->key, .a = r->start_ps, .b = r->finish_ps,
		.c = r->queued_ps, .seg = xfer_id,
		.hop = (unsigned int)r->status, .kind = 1,
	};

	qlog_add(arg, &q);
}

static const struct icfab_engine_tracer qlog_tracer = {
	.xmit = qlog_xmit,
	.complete = qlog_complete,
};

struct qrun {
	struct harness *h;
	struct qlog log;
};

static void qrun_new(struct qrun *q, struct icfab_mtopo *t, icfab_u32 xfers,
		     icfab_u32 events, unsigned int nrecs, int heap_only)
{
	q->h = h_new(t, SEG, xfers, events, nrecs);
	q->h->e.heap_only = (icfab_u8)heap_only;
	q->log.cap = 1 << 20;
	q->log.n = 0;
	q->log.overflow = 0;
	q->log.v = calloc(q->log.cap, sizeof(*q->log.v));
	icfab_engine_set_tracer(&q->h->e, &qlog_tracer, &q->log);
}

static void qrun_free(struct qrun *q)
{
	free(q->log.v);
	h_free(q->h);
}

/* Whether @a and @b (run and heap_only) decided everything alike. */
static int qrun_same(const struct qrun *a, const struct qrun *b,
		     const struct icfab_mtopo *t)
{
	const struct harness *ha = a->h, *hb = b->h;

	if (a->log.overflow || b->log.overflow || !a->log.n ||
	    a->log.n != b->log.n ||
	    memcmp(a->log.v, b->log.v, a->log.n * sizeof(*a->log.v)))
		return 0;
	if (ha->completions != hb->completions ||
	    ha->e.max_events != hb->e.max_events ||
	    ha->e.now_ps != hb->e.now_ps)
		return 0;
	for (unsigned int i = 0; i < ha->nrecs; i++)
		if (ha->recs[i].n != hb->recs[i].n ||
		    memcmp(&ha->recs[i].r, &hb->recs[i].r,
			   sizeof(ha->recs[i].r)))
			return 0;
	return links_same(ha, hb, t);
}

/* The random contended workload of test_determinism, three ways. */
static void queue_det(struct qrun *q, int mode)
{
	unsigned int next = 0;
	ull horizon = 0;

	if (mode == 2)
		q->h->stop = 1;
	if (mode != 1) {
		for (unsigned int i = 0; i < DET_N; i++)
			submit(q->h, det[i].src, det[i].dst, det[i].bytes,
			       det[i].at, i);
		while (icfab_engine_run_until(&q->h->e, ICFAB_ENGINE_NEVER,
					      on_complete, q->h) == 1)
			;
		return;
	}
	rng_state = 12345;
	for (unsigned int s = 0; s < 1000; s++) {
		horizon += rng() % 200000;
		while (next < DET_N && det[det_order[next]].at < horizon) {
			unsigned int i = det_order[next++];

			submit(q->h, det[i].src, det[i].dst, det[i].bytes,
			       det[i].at, i);
		}
		icfab_engine_run_until(&q->h->e, horizon, on_complete, q->h);
	}
	while (next < DET_N) {
		unsigned int i = det_order[next++];

		submit(q->h, det[i].src, det[i].dst, det[i].bytes, det[i].at,
		       i);
	}
	run_all(q->h);
}

static void test_queue_random(void)
{
	static const char *const how[] = {
		"all at once", "1000 horizon steps", "stopping at every completion",
	};
	struct icfab_mtopo *t = star(DET_EPS, 2);

	topo_validate(t);
	for (int mode = 0; mode < 3; mode++) {
		struct qrun a, b;
		ull queued = 0;

		det_workload();
		qrun_new(&a, t, DET_N, DET_N * 60, DET_N, 0);
		queue_det(&a, mode);
		det_workload();
		qrun_new(&b, t, DET_N, DET_N * 60, DET_N, 1);
		queue_det(&b, mode);
		for (unsigned int i = 0; i < DET_N; i++)
			queued += a.h->recs[i].r.queued_ps;
		ok(a.h->completions == DET_N && queued > 0 &&
		   qrun_same(&a, &b, t),
		   "random contended workload, %s: run queue and plain heap decide the same %u departures and completions to the bit",
		   how[mode], a.log.n);
		qrun_free(&a);
		qrun_free(&b);
	}
	topo_free(t);
}

/*
 * Random transfers along a chain of 6 with slower and faster links and
 * one DMA engine each: queueing on the way, segments caught behind
 * others mid-path, the DMA wait lists in use.
 */
static void queue_chain(struct qrun *q)
{
	rng_state = 777;
	for (unsigned int i = 0; i < 200; i++) {
		unsigned int src = rng() % 6, dst;

		do
			dst = rng() % 6;
		while (dst == src);
		submit(q->h, src, dst, rng() % (8 * SEG) + 1,
		       rng() % 10 * 300000ULL + 1000000ULL * (i / 20), i);
		if (i % 20 == 19)
			icfab_engine_run_until(&q->h->e,
					       1000000ULL * (i / 20 + 1),
					       on_complete, q->h);
	}
	run_all(q->h);
}

static void test_queue_chain(void)
{
	struct icfab_mtopo *t = chain(6);
	struct qrun a, b;
	ull queued = 0;

	for (unsigned int l = 0; l < t->nr_links; l++)
		t->links[l].bandwidth = l % 3 ? BW : BW / 4;
	topo_validate(t);
	qrun_new(&a, t, 200, 20000, 200, 0);
	queue_chain(&a);
	qrun_new(&b, t, 200, 20000, 200, 1);
	queue_chain(&b);
	for (unsigned int i = 0; i < 200; i++)
		queued += a.h->recs[i].r.queued_ps;
	ok(a.h->completions == 200 && queued > 0 && qrun_same(&a, &b, t),
	   "random transfers on a chain with bottlenecks: run queue and plain heap identical (%u decisions)",
	   a.log.n);
	qrun_free(&a);
	qrun_free(&b);
	topo_free(t);
}

/*
 * A link's events usually come in the order of events; here they often
 * do not: latencies drop and rise between runs (a segment sent later
 * arrives earlier), and some links forward cut-through and add a
 * per-message overhead. Whatever order the events are pushed in, the
 * queue must decide as the plain heap does.
 */
static void queue_streams(struct qrun *q, struct icfab_mtopo *t,
			  const ull *lat)
{
	rng_state = 99;
	for (unsigned int l = 0; l < t->nr_links; l++)
		t->links[l].latency_ps = lat[l];
	for (unsigned int i = 0; i < 300; i++) {
		unsigned int src = rng() % 6, dst;

		do
			dst = rng() % 6;
		while (dst == src);
		submit(q->h, src, dst, rng() % (6 * SEG) + 1,
		       q->h->e.now_ps + 1 + rng() % 1000, i);
		if (i % 10 == 9) {
			unsigned int l = rng() % t->nr_links;

			icfab_engine_run_until(&q->h->e,
					       q->h->e.now_ps + 1 +
					       rng() % (4 * SER),
					       on_complete, q->h);
			/* From a tenth of the latency to three times it. */
			t->links[l].latency_ps = lat[l] / 10 +
						 rng() % (3 * lat[l] + 1);
		}
	}
	run_all(q->h);
}

static void test_queue_streams(void)
{
	struct icfab_mtopo *t = chain(6);
	ull lat[16];
	struct qrun a, b;
	ull queued = 0;

	for (unsigned int l = 0; l < t->nr_links; l++) {
		t->links[l].bandwidth = l % 3 ? BW : BW / 3;
		t->links[l].cut_through = l % 2;
		t->links[l].msg_overhead_ps = l % 4 == 1 ? SER / 3 : 0;
		lat[l] = t->links[l].latency_ps;
	}
	topo_validate(t);
	qrun_new(&a, t, 300, 30000, 300, 0);
	queue_streams(&a, t, lat);
	qrun_new(&b, t, 300, 30000, 300, 1);
	queue_streams(&b, t, lat);
	for (unsigned int i = 0; i < 300; i++)
		queued += a.h->recs[i].r.queued_ps;
	ok(a.h->completions == 300 && queued > 0 && qrun_same(&a, &b, t),
	   "latencies changing under segments in flight, cut-through and overheads: run queue and plain heap identical (%u decisions)",
	   a.log.n);
	qrun_free(&a);
	qrun_free(&b);
	topo_free(t);
}

/*
 * Zero-latency links, one DMA engine a node: a one-segment transfer to a
 * neighbour lands as its DMA release runs, and the release carries its
 * last arrival (release_lands() in engine.c; heap_only keeps them two
 * events). Submissions come at later instants with smaller keys too, so
 * that a release hands its engine to a waiter that sorts before the
 * arrival it carries, which must then take its turn after the waiter's
 * start. First that case alone (transfer 10 holds the engine, 5 waits
 * for it), then a random mix of neighbours and farther nodes, one and
 * more segments.
 */
static void queue_carried(struct qrun *q, struct icfab_mtopo *t, int mix)
{
	for (unsigned int l = 0; l < t->nr_links; l++)
		t->links[l].latency_ps = 0;
	if (!mix) {
		submit(q->h, 0, 1, 64, 0, 10);
		icfab_engine_run_until(&q->h->e, 1, on_complete, q->h);
		submit(q->h, 0, 1, 64, 1, 5);
		submit(q->h, 0, 1, 64, 1, 20);
		run_all(q->h);
		return;
	}
	rng_state = 4242;
	for (unsigned int i = 0; i < 400; i++) {
		unsigned int src = rng() % 5, dst;

		do
			dst = rng() % 5;
		while (dst == src);
		if (rng() % 3)
			dst = src + 1 < 5 ? src + 1 : src - 1;
		/* Keys fall as well as rise; each is used once. */
		submit(q->h, src, dst, rng() % 2 ? 64 : rng() % (2 * SEG) + 1,
		       q->h->e.now_ps + rng() % 3, 1000 * (i % 7) + i);
		if (i % 8 == 7)
			icfab_engine_run_until(&q->h->e, q->h->e.now_ps + 1 +
					       rng() % 4, on_complete, q->h);
	}
	run_all(q->h);
}

static void test_queue_carried(void)
{
	for (int mix = 0; mix < 2; mix++) {
		struct icfab_mtopo *t = chain(5);
		struct qrun a, b;
		unsigned int n = mix ? 400 : 3;

		topo_validate(t);
		qrun_new(&a, t, 400, 4000, 7000, 0);
		queue_carried(&a, t, mix);
		qrun_new(&b, t, 400, 4000, 7000, 1);
		queue_carried(&b, t, mix);
		ok(a.h->completions == (int)n && qrun_same(&a, &b, t),
		   "zero latency, %s: releases carrying last arrivals decide as two events do (%u decisions)",
		   mix ? "random transfers" : "a waiter that sorts first",
		   a.log.n);
		if (!mix)
			/* 10 out, 5 out (started by 10's release), then 10 done. */
			ok(a.log.n == 6 && a.log.v[1].key == 5 &&
			   a.log.v[1].kind == 0 && a.log.v[2].key == 10 &&
			   a.log.v[2].kind == 1,
			   "the waiter that sorts first starts before the arrival is processed");
		qrun_free(&a);
		qrun_free(&b);
		topo_free(t);
	}
}

/*
 * A release that carries its transfer's last arrival hands the DMA
 * engine to a waiter that sorts after the arrival: the waiter starts
 * in the same turn of the loop, after the completion (carried_run() in
 * engine.c), but only when its start is then the next event. Three
 * ways it is not, each checked against the plain heap: the completion
 * asked to stop (the start waits for the next call: nothing of the
 * waiter's may depart before run_until() returns), a run budget of one
 * event (the start is an event of its own there), and another
 * source's release of the same instant with a key between (which goes
 * first: its completion is logged before the waiter's departure).
 */
static unsigned int qlog_count(const struct qlog *l, unsigned int kind)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < l->n; i++)
		n += l->v[i].kind == kind;
	return n;
}

static unsigned int qlog_find(const struct qlog *l, unsigned int kind,
			      ull key)
{
	for (unsigned int i = 0; i < l->n; i++)
		if (l->v[i].kind == kind && l->v[i].key == key)
			return i;
	return ~0U;
}

static void queue_handover(struct qrun *q, struct icfab_mtopo *t, int mode,
			   int *early, unsigned int *stops)
{
	const ull clk = 5000;
	int ret;

	for (unsigned int l = 0; l < t->nr_links; l++) {
		t->links[l].bandwidth = 1ULL << 50;
		t->links[l].latency_ps = 0;
	}
	if (mode == 2) {
		/* 0 -> 1 and 2 -> 3, keys interleaved: 1, 10 and 2, 20. */
		submit(q->h, 0, 1, 64, clk, 1);
		submit(q->h, 0, 1, 64, clk, 10);
		submit(q->h, 2, 3, 64, clk, 2);
		submit(q->h, 2, 3, 64, clk, 20);
		run_all(q->h);
		return;
	}
	for (unsigned int i = 0; i < 8; i++)
		submit(q->h, 0, 1, 64, clk, i);
	q->h->stop = mode == 0;
	q->h->e.run_budget = mode == 1;
	do {
		ret = icfab_engine_run_until(&q->h->e, ICFAB_ENGINE_NEVER,
					     on_complete, q->h);
		/* Every transfer that departed has completed. */
		if (ret == 1 && qlog_count(&q->log, 0) != qlog_count(&q->log, 1))
			(*early)++;
		if (ret > 0)
			(*stops)++;
	} while (ret > 0);
}

static void test_queue_handover(void)
{
	static const char *const how[] = {
		"stopping at every completion", "a run budget of one event",
		"another source's release between",
	};

	for (int mode = 0; mode < 3; mode++) {
		struct icfab_mtopo *t = chain(4);
		struct qrun a, b;
		int early = 0, n = mode == 2 ? 4 : 8;
		unsigned int stops_a = 0, stops_b = 0;

		topo_validate(t);
		qrun_new(&a, t, 16, 64, 32, 0);
		queue_handover(&a, t, mode, &early, &stops_a);
		qrun_new(&b, t, 16, 64, 32, 1);
		queue_handover(&b, t, mode, &early, &stops_b);
		ok(a.h->completions == n && !early && qrun_same(&a, &b, t),
		   "a carried release's waiter, %s: decides as the plain heap does (%u decisions)",
		   how[mode], a.log.n);
		/*
		 * Stopped at each of the 8 completions, as the heap is; with
		 * a budget of one, a yield before every event but the first
		 * of a call: 8 submissions, 8 releases and 7 starts.
		 */
		if (mode == 0)
			ok(stops_a == 8 && stops_b == 8,
			   "run_until() returns at every completion (%u times)",
			   stops_a);
		if (mode == 1)
			ok(stops_a == 22,
			   "a run budget of one: a yield before every event but the first (%u)",
			   stops_a);
		if (mode == 2)
			ok(qlog_find(&a.log, 1, 2) < qlog_find(&a.log, 0, 10) &&
			   qlog_find(&a.log, 1, 1) < qlog_find(&a.log, 1, 2),
			   "the other release of the instant completes its transfer before the waiter departs");
		qrun_free(&a);
		qrun_free(&b);
		topo_free(t);
	}
}

/* Run @q's engine to the end; *@stops counts the runs a callback stopped. */
static void qrun_out(struct qrun *q, unsigned int *stops)
{
	int ret;

	do {
		ret = icfab_engine_run_until(&q->h->e, ICFAB_ENGINE_NEVER,
					     on_complete, q->h);
		if (ret > 0)
			(*stops)++;
	} while (ret > 0);
}

/*
 * A burst from one source at one instant behind its DMA engine: the
 * first events of the transfers behind the first waiter are processed
 * where they are (sub_wait_run() in engine.c) while each is the next
 * event of the instant. Each way checked against the plain heap: a
 * transfer of the source submitted after the burst with a key inside it
 * (pushed apart, it goes between: the burst's run must stop before it),
 * another source's burst with keys between, two DMA engines, a run
 * budget of two events, and stopping at every completion.
 */
static void queue_subwait(struct qrun *q, struct icfab_mtopo *t, int mode,
			  unsigned int *stops)
{
	static const ull keys[] = { 0, 1, 2, 4, 5, 6, 10, 11, 12 };
	const ull clk = 5000;

	for (unsigned int l = 0; l < t->nr_links; l++) {
		t->links[l].bandwidth = 1ULL << 50;
		t->links[l].latency_ps = 0;
	}
	for (unsigned int i = 0; i < 9; i++)
		submit(q->h, 0, 1, 64, clk, keys[i]);
	submit(q->h, 0, 1, 64, clk, 3);
	if (mode == 1)
		for (ull k = 7; k < 10; k++)
			submit(q->h, 2, 3, 64, clk, k);
	q->h->stop = mode == 4;
	q->h->e.run_budget = mode == 3 ? 2 : 0;
	qrun_out(q, stops);
}

static void test_queue_subwait(void)
{
	static const char *const how[] = {
		"one source", "another source's burst between", "two DMA engines",
		"a run budget of two events", "stopping at every completion",
	};
	static const unsigned int src0[] = { 0, 1, 2, 3, 4, 5, 6, 10, 11, 12 };

	for (int mode = 0; mode < 5; mode++) {
		struct icfab_mtopo *t = chain(4);
		struct qrun a, b;
		unsigned int stops_a = 0, stops_b = 0;
		int n = mode == 1 ? 13 : 10;
		int order = 1;

		if (mode == 2)
			t->nodes[0].dma_engines = 2;
		topo_validate(t);
		qrun_new(&a, t, 16, 64, 16, 0);
		queue_subwait(&a, t, mode, &stops_a);
		qrun_new(&b, t, 16, 64, 16, 1);
		queue_subwait(&b, t, mode, &stops_b);
		/* Source 0's transfers start in the order of their keys. */
		for (unsigned int i = 0; i + 1 < 10; i++)
			if (a.h->recs[src0[i]].r.start_ps >
			    a.h->recs[src0[i + 1]].r.start_ps)
				order = 0;
		ok(a.h->completions == n && order &&
		   (mode != 4 || stops_a == stops_b) &&
		   (mode != 3 || stops_a == 14) &&
		   a.h->recs[3].r.start_ps < a.h->recs[4].r.start_ps &&
		   qrun_same(&a, &b, t),
		   "a burst behind its DMA engine, %s: decides as the plain heap does (%u decisions)",
		   how[mode], a.log.n);
		qrun_free(&a);
		qrun_free(&b);
		topo_free(t);
	}
}

/*
 * A queue of one-segment transfers behind one DMA engine, zero latency:
 * each release carrying its last arrival is processed where the one
 * before it started its waiter (carried_run() in engine.c) while it is
 * the next event. Each way checked against the plain heap: run through,
 * horizons a ps apart (the run stops at each, its time there), a transfer of another
 * source submitted inside the queue's times, a transfer of three
 * segments in the queue, a run budget of three events (the yields are
 * where the loop of events alone put them: 11), stopping at every
 * completion, and completions that submit at their instant (another
 * source's and the queue's own).
 */
static void queue_inplace(struct qrun *q, struct icfab_mtopo *t, int mode,
			  unsigned int *stops)
{
	const ull clk = 5000;

	for (unsigned int l = 0; l < t->nr_links; l++) {
		t->links[l].bandwidth = 1ULL << 50;
		t->links[l].latency_ps = 0;
	}
	for (unsigned int i = 0; i < 12; i++)
		submit(q->h, 0, 1, mode == 3 && i == 6 ? 3 * SEG : 64, clk, i);
	if (mode == 2) {
		submit(q->h, 2, 3, 64, clk + 4, 50);
		submit(q->h, 3, 1, 64, clk + 6, 51);
	}
	if (mode == 1)
		for (ull h = clk; h < clk + 30; h++) {
			icfab_engine_run_until(&q->h->e, h, on_complete, q->h);
			/* Nothing at the horizon or after it is processed. */
			if (q->h->e.now_ps != h)
				(*stops) += 1000;
		}
	q->h->stop = mode == 5;
	q->h->resubmit = mode == 6;
	q->h->e.run_budget = mode == 4 ? 3 : 0;
	qrun_out(q, stops);
}

static void test_queue_inplace(void)
{
	static const char *const how[] = {
		"run through", "horizons a ps apart",
		"other sources' transfers inside", "one of three segments",
		"a run budget of three events", "stopping at every completion",
		"completions that submit",
	};

	for (int mode = 0; mode < 7; mode++) {
		struct icfab_mtopo *t = chain(4);
		struct qrun a, b;
		unsigned int stops_a = 0, stops_b = 0;
		int n = 12 + (mode == 2 ? 2 : 0) + (mode == 6 ? 5 : 0);
		int order = 1;

		topo_validate(t);
		qrun_new(&a, t, 32, 128, 256, 0);
		queue_inplace(&a, t, mode, &stops_a);
		qrun_new(&b, t, 32, 128, 256, 1);
		queue_inplace(&b, t, mode, &stops_b);
		for (unsigned int i = 0; i + 1 < 12; i++)
			if (a.h->recs[i].r.finish_ps >
			    a.h->recs[i + 1].r.start_ps)
				order = 0;
		ok(a.h->completions == n && order &&
		   (mode != 5 || stops_a == stops_b) &&
		   (mode != 4 || stops_a == 11) &&
		   (mode != 1 || stops_a + stops_b == 0) &&
		   (mode != 6 || a.h->resubmit == 6) &&
		   qrun_same(&a, &b, t),
		   "a queue behind one DMA engine run in place, %s: decides as the plain heap does (%u decisions, %u stops)",
		   how[mode], a.log.n, stops_a);
		qrun_free(&a);
		qrun_free(&b);
		topo_free(t);
	}
}

/*
 * A queue of lone transfers of one segment behind one DMA engine, each
 * started and released where the one before it completes, without the
 * general start (queue_lone() in engine.c): what that start leaves out
 * must not matter. Source 0's 24 transfers of several sizes (one byte
 * to a whole segment, some of two segments) on chain(4), links of BW
 * and no latency, each way checked against the plain heap, which
 * includes every departure, completion and link counter, max_events,
 * and where the last processed event leaves the order of submissions:
 * destinations one and two hops away over the same first link, a
 * per-message overhead on it, and, from a source with two links, the
 * queue to each in turn with, on one link, a hold that ends inside the
 * queue, one that fails what is ready before it ends, or a latency of
 * 1 ps (not lone there); other sources' transfers at the queue's own instants
 * with keys either side (a link and destination shared), run budgets
 * of one to five events (yielding where main's engine, without the
 * path, did), a horizon every half a 64-byte transfer, stopping at
 * every completion, and a queue of two kept going by its completions,
 * each submitting one more behind it at its instant.
 */
#define LONE_N		24
#define LONE_MODES	14

static void queue_lone_run(struct qrun *q, struct icfab_mtopo *t, int mode,
			   unsigned int *stops)
{
	static const ull sizes[] = { 64, 100, 64, SEG, 1, 2 * SEG, 64, 4000 };
	const ull clk = 5000, s64 = 1280;	/* 64 B at BW */

	/*
	 * Modes 2 to 4: from endpoint 1, to 0 and 2 in turn, the hold or
	 * the latency on link 2 (1 -> 2) alone, so that a transfer to 2
	 * waits behind one to 0 that ran through in place.
	 */
	int mixed = mode >= 2 && mode <= 4;

	for (unsigned int l = 0; l < t->nr_links; l++)
		t->links[l].latency_ps = 0;
	if (mode == 1)
		t->links[0].msg_overhead_ps = 333;
	if (mode == 2 || mode == 3) {
		t->links[2].up_at_ps = clk + 3 * s64 + 17;
		t->links[2].hold_fail = mode == 3;
	}
	if (mode == 4)
		t->links[2].latency_ps = 1;
	for (unsigned int i = 0; i < (mode == 13 ? 2 : LONE_N); i++)
		submit(q->h, mixed, mixed ? (i % 2) * 2 :
		       mode == 0 && i % 3 == 2 ? 2 : 1, sizes[i % 8], clk,
		       2 * i + 2);
	q->h->requeue = mode == 13 ? LONE_N - 2 : 0;
	if (mode == 5)
		for (unsigned int i = 0; i < 6; i++) {
			/* 2 -> 1 shares the queue's destination. */
			submit(q->h, 2, 1, 64, clk + (i + 1) * s64, 2 * i + 1);
			submit(q->h, 3, 2, 64, clk + (i + 2) * s64, 4 * i + 3);
		}
	if (mode == 10)
		for (ull h = clk; h < clk + 40 * s64; h += s64 / 2)
			icfab_engine_run_until(&q->h->e, h, on_complete, q->h);
	q->h->stop = mode == 11;
	q->h->e.run_budget = mode >= 6 && mode <= 9 ? mode - 5 : 0;
	if (mode == 12)
		q->h->e.run_budget = 5;
	qrun_out(q, stops);
}

static void test_queue_lone(void)
{
	static const char *const how[LONE_MODES] = {
		"destinations one and two hops away", "a per-message overhead",
		"a hold ending inside", "a failing hold ending inside",
		"a latency of 1 ps", "other sources' transfers at its instants",
		"a run budget of one event", "a run budget of two events",
		"a run budget of three events", "a run budget of four events",
		"a horizon every half transfer", "stopping at every completion",
		"a run budget of five events", "completions that submit to it",
	};

	/* Yields under a budget, where the loop of events alone put them. */
	static const unsigned int yields[LONE_MODES] = {
		[6] = 73, [7] = 36, [8] = 24, [9] = 18, [12] = 14,
	};

	for (int mode = 0; mode < LONE_MODES; mode++) {
		struct icfab_mtopo *t = chain(4);
		struct qrun a, b;
		unsigned int stops_a = 0, stops_b = 0;
		int n = LONE_N + (mode == 5 ? 12 : 0), failed = 0;

		if (mode == 13)
			n = LONE_N;

		topo_validate(t);
		qrun_new(&a, t, 64, 256, 64, 0);
		queue_lone_run(&a, t, mode, &stops_a);
		qrun_new(&b, t, 64, 256, 64, 1);
		queue_lone_run(&b, t, mode, &stops_b);
		for (unsigned int k = 0; k < 64; k++)
			failed += a.h->recs[k].n && a.h->recs[k].r.status;
		ok(a.h->completions == n && qrun_same(&a, &b, t) &&
		   (mode != 11 || stops_a == stops_b) &&
		   (!yields[mode] || stops_a == yields[mode]) &&
		   (mode != 3 || (failed > 0 && failed < n)) &&
		   (mode != 13 || a.h->requeue == 0) &&
		   a.h->e.last_ps == b.h->e.last_ps &&
		   a.h->e.last_key == b.h->e.last_key &&
		   a.h->e.processed == b.h->e.processed,
		   "a queue of lone transfers behind one DMA engine, %s: decides as the plain heap does (%u decisions, %u stops, %d failed)",
		   how[mode], a.log.n, stops_a, failed);
		qrun_free(&a);
		qrun_free(&b);
		topo_free(t);
	}
}

/*
 * Barely enough room: segments decided at a slow link each wait for
 * their arrival at the next node with an event, so the array fills;
 * transfers come and go (a full engine is retried later), so that the
 * run meets the heap and has to move up.
 */
static void queue_tight(struct qrun *q)
{
	struct icfab_engine *e = &q->h->e;
	unsigned int i = 0, tries = 0;

	rng_state = 4242;
	while (i < 60 && tries++ < 100000) {
		unsigned int src = i % 3 ? 0 : rng() % 4, dst = 3;
		ull bytes = rng() % (30 * SEG) + 1;
		icfab_u32 id;

		if (src == 3)
			dst = rng() % 3;
		if (!icfab_engine_submit(e, src, dst, bytes, e->now_ps + 1,
					 i, &id))
			i++;
		icfab_engine_run_until(e, e->now_ps + 1 + rng() % (3 * SER),
				       on_complete, q->h);
	}
	run_all(q->h);
}

static void test_queue_tight(void)
{
	struct icfab_mtopo *t = chain(4);
	const icfab_u32 cap = 64;
	struct qrun a, b;

	t->links[2].bandwidth = BW / 7;	/* 1 -> 2 */
	t->links[4].bandwidth = BW * 3;	/* 2 -> 3 */
	topo_validate(t);
	qrun_new(&a, t, 8, cap, 60, 0);
	queue_tight(&a);
	qrun_new(&b, t, 8, cap, 60, 1);
	queue_tight(&b);
	ok(a.h->completions == 60 && a.h->e.max_events > cap * 3 / 4 &&
	   qrun_same(&a, &b, t),
	   "an array nearly full (%u of %u events at most): run queue and plain heap identical",
	   a.h->e.max_events, cap);
	qrun_free(&a);
	qrun_free(&b);
	topo_free(t);
}

/*
 * desc_cost's shape: 32 transfers of 64 B at one clock from one queue,
 * one DMA engine, zero-latency links far faster than a segment: each
 * waits for the engine, none for a link. Closed form, with s the
 * serialisation of 64 B: transfer i of a batch starts at t + i s,
 * finishes at t + (i + 1) s and queued i s. Every event of it goes
 * through the run, none through the heap.
 */
static void test_queue_batch(void)
{
	const ull bw = 1ULL << 50, s = icfab_serialize_ps(64, bw);
	struct icfab_mtopo *t = chain(2);
	struct qrun a, b;
	int bad = 0, heap_free = 1;
	ull clk = 5000;

	for (unsigned int l = 0; l < t->nr_links; l++) {
		t->links[l].bandwidth = bw;
		t->links[l].latency_ps = 0;
	}
	topo_validate(t);
	qrun_new(&a, t, 64, 1024, 32 * 50, 0);
	qrun_new(&b, t, 64, 1024, 32 * 50, 1);
	for (unsigned int r = 0; r < 50; r++) {
		for (unsigned int i = 0; i < 32; i++) {
			submit(a.h, 0, 1, 64, clk, 32 * r + i);
			submit(b.h, 0, 1, 64, clk, 32 * r + i);
		}
		if (a.h->e.nr_heap)
			heap_free = 0;
		run_all(a.h);
		run_all(b.h);
		if (a.h->e.nr_heap || a.h->e.max_events > 34)
			heap_free = 0;
		for (unsigned int i = 0; i < 32; i++) {
			const struct rec *x = &a.h->recs[32 * r + i];

			if (x->n != 1 || x->r.status || x->r.submit_ps != clk ||
			    x->r.start_ps != clk + i * s ||
			    x->r.finish_ps != clk + (i + 1) * s ||
			    x->r.queued_ps != i * s)
				bad++;
		}
		clk += 32 * s + 1;
	}
	ok(s && !bad && qrun_same(&a, &b, t),
	   "50 batches of 32 x 64 B behind one DMA engine: closed form (s = %llu ps), run queue equals plain heap",
	   s);
	ok(heap_free, "the batches never touch the heap");
	qrun_free(&a);
	qrun_free(&b);
	topo_free(t);
}

/*
 * Trees and holds through the run as well: multicast over a star with a
 * held and then failing link, and a route change mid-flight.
 */
static void queue_trees(struct qrun *q, const struct icfab_mtopo *t)
{
	static icfab_u32 fan[3];
	struct icfab_engine_tree tr = { .nr_links = 3, .links = fan };

	fan[0] = inj(1);
	fan[1] = ejl(2);
	fan[2] = ejl(3);
	icfab_engine_tree_check(&q->h->e, 1, &tr);
	for (unsigned int i = 0; i < 12; i++) {
		icfab_u32 id;

		if (i % 3 == 0)
			icfab_engine_submit_tree(&q->h->e, 1, &tr,
						 (i + 1) * 3000ULL, 1000ULL * i,
						 i, &id);
		else
			submit(q->h, i % 4 + 1, (i + 1) % 4 + 1,
			       (i + 2) * 2500ULL, 1000ULL * i, i);
	}
	(void)t;
	run_all(q->h);
}

static void test_queue_trees(void)
{
	struct icfab_mtopo *t = star(4, 2);
	struct qrun a, b;

	topo_validate(t);
	t->links[ejl(3)].up_at_ps = 400000;
	qrun_new(&a, t, 16, 4096, 12, 0);
	queue_trees(&a, t);
	qrun_new(&b, t, 16, 4096, 12, 1);
	queue_trees(&b, t);
	ok(a.h->completions == 12 && qrun_same(&a, &b, t),
	   "multicast trees, a held link and unicast around them: run queue and plain heap identical (%u decisions)",
	   a.log.n);
	qrun_free(&a);
	qrun_free(&b);
	topo_free(t);
}

/* ---- virtual cut-through (docs/TIMING.md, "Cut-through") ---- */

static void set_cut_through(struct icfab_mtopo *t)
{
	for (unsigned int l = 0; l < t->nr_links; l++)
		t->links[l].cut_through = 1;
}

/*
 * One message of n whole segments over h uniform links: the first byte
 * pays every hop's latency only, and the segments follow one another at
 * the links' rate, T = h L + n S/B (store and forward: h (L + S/B) +
 * (n - 1) S/B). With a short last segment of r bytes, T = h L +
 * (n - 1) S/B + r/B. A path tree gives the same.
 */
static void test_ct_hops(void)
{
	static const unsigned int segs[] = { 1, 4 };
	int bad = 0, cases = 0;

	for (unsigned int hops = 1; hops <= 6; hops++)
	for (unsigned int si = 0; si < 3; si++) {
		struct icfab_mtopo *t = chain(hops + 1);
		ull bytes = si < 2 ? segs[si] * (ull)SEG : 3 * SEG + 100;
		ull want = si < 2 ? hops * LAT + segs[si] * SER :
			   hops * LAT + 3 * SER + icfab_serialize_ps(100, BW);
		icfab_u32 path[6];
		struct icfab_engine_tree tree = { .nr_links = hops,
						  .links = path };
		struct harness *h, *ht;

		set_cut_through(t);
		topo_validate(t);
		for (unsigned int l = 0; l < hops; l++)
			path[l] = 2 * l;
		h = h_new(t, SEG, 4, 64, 2);
		ht = h_new(t, SEG, 4, 64, 2);
		submit(h, 0, hops, bytes, 1000, 1);
		icfab_engine_tree_check(&ht->e, 0, &tree);
		submit_tree(ht, 0, &tree, bytes, 1000, 1);
		run_all(h);
		run_all(ht);
		cases++;
		if (h->recs[1].n != 1 || dur(&h->recs[1]) != want ||
		    ht->recs[1].n != 1 || dur(&ht->recs[1]) != want ||
		    h->recs[1].r.queued_ps) {
			bad++;
			printf("# %u hops, %llu B: %llu, tree %llu, want %llu\n",
			       hops, bytes, dur(&h->recs[1]),
			       dur(&ht->recs[1]), want);
		}
		h_free(h);
		h_free(ht);
		topo_free(t);
	}
	ok(!bad, "cut-through, one message over 1..6 hops (%d cases, routed and as a path tree): T = h L + n S/B exactly",
	      cases);
}

/*
 * Events of a transfer after its first that fall on its submission
 * instant, which sort LATE like the first (ev_push_any() in engine.c):
 * over cut-through links with no latency a segment is at the next node
 * the instant it left, so one message of n segments over h hops takes
 * T = n S/B, routed and as a path tree; and at ICFAB_ENGINE_NEVER every
 * time saturates to the submission's, so a transfer submitted there, or
 * just before it, starts and ends there.
 */
static void test_late_at_submit(void)
{
	int bad = 0, cases = 0;

	for (unsigned int hops = 1; hops <= 3; hops++)
	for (unsigned int segs = 1; segs <= 4; segs += 3)
	for (int never = 0; never < 2; never++) {
		struct icfab_mtopo *t = chain(hops + 1);
		const ull at = never ? ICFAB_ENGINE_NEVER : 1000;
		const ull want = never ? 0 : segs * SER;
		icfab_u32 path[3];
		struct icfab_engine_tree tree = { .nr_links = hops,
						  .links = path };
		struct harness *h, *ht;

		for (unsigned int l = 0; l < t->nr_links && !never; l++) {
			t->links[l].cut_through = 1;
			t->links[l].latency_ps = 0;
		}
		topo_validate(t);
		for (unsigned int l = 0; l < hops; l++)
			path[l] = 2 * l;
		h = h_new(t, SEG, 4, 64, 3);
		ht = h_new(t, SEG, 4, 64, 3);
		/* From the other end: no DMA engine is shared (test_never). */
		if (never)
			submit(h, hops, 0, segs * SEG, at - 1, 2);
		submit(h, 0, hops, segs * SEG, at, 1);
		icfab_engine_tree_check(&ht->e, 0, &tree);
		submit_tree(ht, 0, &tree, segs * SEG, at, 1);
		run_all(h);
		run_all(ht);
		cases++;
		if (h->recs[1].n != 1 || h->recs[1].r.status ||
		    h->recs[1].r.start_ps != at || dur(&h->recs[1]) != want ||
		    ht->recs[1].n != 1 || ht->recs[1].r.status ||
		    ht->recs[1].r.start_ps != at ||
		    dur(&ht->recs[1]) != want ||
		    (never && (h->recs[2].n != 1 ||
			       h->recs[2].r.finish_ps != at))) {
			bad++;
			printf("# %u hops, %u segments at %llu: %llu, tree %llu, want %llu\n",
			       hops, segs, at, dur(&h->recs[1]),
			       dur(&ht->recs[1]), want);
		}
		h_free(h);
		h_free(ht);
		topo_free(t);
	}
	ok(!bad, "events on a transfer's submission instant after its first (%d cases: cut-through with no latency, T = n S/B; times saturated at NEVER)",
	   cases);
}

/*
 * At ICFAB_ENGINE_NEVER, where the module's clocks end (a DELAY saturates
 * a context's clock just before it, and a completion there moves it on):
 * a DMA engine released there is idle for the next transfer from its
 * endpoint, which completes there too; and once a transfer submitted
 * there has been processed, one whose key sorts before it has no later
 * instant to start at, so it is refused, at NEVER or at any earlier time
 * (which used to wrap to 0 and be taken).
 */
static void test_never(void)
{
	const ull never = ICFAB_ENGINE_NEVER;
	struct icfab_mtopo *t = chain(3);
	struct harness *h;
	icfab_u32 id;
	ull at;
	int err0, err1;

	topo_validate(t);
	h = h_new(t, SEG, 8, 64, 8);
	submit(h, 0, 1, 64, never - 1, 1);
	run_all(h);
	submit(h, 0, 1, 64, never, 2);
	run_all(h);
	ok(h->recs[1].n == 1 && h->recs[1].r.finish_ps == never &&
	   h->recs[2].n == 1 && !h->recs[2].r.status &&
	   h->recs[2].r.start_ps == never && h->recs[2].r.finish_ps == never &&
	   icfab_engine_next_ps(&h->e) == never,
	   "a DMA engine released at NEVER starts the next transfer there (%d, finish %llu)",
	   h->recs[2].n, (ull)h->recs[2].r.finish_ps);

	/* Key 5 processed at NEVER, with ICFAB_ENGINE_KEY_LATE: 3 is before. */
	submit(h, 2, 1, 64, never, 5);
	run_all(h);
	at = icfab_engine_submit_at(&h->e, never, 3);
	err0 = icfab_engine_submit(&h->e, 2, 1, 64, never, 3, &id);
	err1 = icfab_engine_submit(&h->e, 2, 1, 64, 0, 3, &id);
	/* A key after it still starts there. */
	if (icfab_engine_submit_at(&h->e, never, 6) == never)
		submit(h, 2, 1, 64, never, 6);
	run_all(h);
	ok(h->recs[5].n == 1 && h->recs[5].r.finish_ps == never &&
	   at == never && err0 == -ICFAB_ENGINE_ERANGE &&
	   err1 == -ICFAB_ENGINE_ERANGE && h->recs[3].n == 0 &&
	   h->recs[6].n == 1 && h->recs[6].r.finish_ps == never,
	   "at NEVER a key before the last processed one is refused (submit_at %llu, errors %d %d)",
	   at, err0, err1);
	h_free(h);
	topo_free(t);
}

/*
 * k flows of n segments, from endpoints 1..k through the switch to
 * endpoint k + 1, submitted together with keys 1..k. Their heads reach
 * the switch together each S/B, so the ejection link serves them by
 * key, segment by segment, busy from L on: flow i's last segment is out
 * at L + ((n - 1) k + i) S/B and arrives L later, T_i = 2 L +
 * ((n - 1) k + i) S/B. Store and forward: S/B more, the first segment's
 * wait to be whole at the switch.
 */
static void test_ct_shared(void)
{
	for (unsigned int k = 2; k <= 8; k *= 2)
	for (int ct = 1; ct >= 0; ct--) {
		const unsigned int n = 5;
		struct icfab_mtopo *t = star(k + 1, 1);
		struct harness *h;
		int bad = 0;

		if (ct)
			set_cut_through(t);
		topo_validate(t);
		h = h_new(t, SEG, 16, 1024, k + 1);
		for (unsigned int i = 1; i <= k; i++)
			submit(h, i, k + 1, n * (ull)SEG, 0, i);
		run_all(h);
		for (unsigned int i = 1; i <= k; i++)
			if (h->recs[i].n != 1 || h->recs[i].r.finish_ps !=
			    2 * LAT + (ct ? 0 : SER) + ((n - 1) * k + i) * SER)
				bad++;
		ok(!bad && h->e.links[ejl(k + 1)].busy_ps == k * n * SER,
		      "%s, %u flows of %u segments sharing a link: flow i ends at 2 L + %s((n - 1) k + i) S/B exactly",
		      ct ? "cut-through" : "store and forward", k, n,
		      ct ? "" : "S/B + ");
		h_free(h);
		topo_free(t);
	}
}

/*
 * Two links, 0 -> 1 -> 2, one at B and one at B/4 (S/B4 = 4 S/B). Slow
 * after fast: the slow link sets the pace from its first segment on,
 * T = 2 L + n S/B4. Fast after slow: a segment leaves on the fast link
 * as soon as its head is there, but cannot finish before its tail has
 * arrived, so the fast link streams at the slow one's rate (busy n S/B4)
 * and T = 2 L + n S/B4 again. Store and forward: 2 L + S/B + n S/B4 both
 * ways.
 */
static void test_ct_mixed(void)
{
	const unsigned int n = 6;
	const ull slow = 4 * SER;

	for (int fast_first = 1; fast_first >= 0; fast_first--) {
		for (int ct = 1; ct >= 0; ct--) {
			struct icfab_mtopo *t = chain(3);
			ull want = ct ? 2 * LAT + n * slow :
				   2 * LAT + SER + n * slow;
			struct harness *h;

			t->links[fast_first ? 2 : 0].bandwidth = BW / 4;
			if (ct)
				set_cut_through(t);
			topo_validate(t);
			h = h_new(t, SEG, 4, 64, 2);
			submit(h, 0, 2, n * (ull)SEG, 0, 1);
			run_all(h);
			ok(h->recs[1].n == 1 && dur(&h->recs[1]) == want &&
			      h->e.links[2].busy_ps ==
			      (fast_first || ct ? n * slow : n * SER),
			      "%s, a %s link after a %s one: T = %s exactly (%llu ps)",
			      ct ? "cut-through" : "store and forward",
			      fast_first ? "slow" : "fast",
			      fast_first ? "fast" : "slow",
			      ct ? "2 L + n S/B4" : "2 L + S/B + n S/B4",
			      dur(&h->recs[1]));
			h_free(h);
			topo_free(t);
		}
	}
}

/* ---- multipath over parallel links (docs/TIMING.md, "Multipath") ---- */

/*
 * Endpoints 1 and 2, joined to switch 0 by @k links each way: link
 * 4i + 2(e - 1) is endpoint e's port i to switch port (e - 1) k + i,
 * link 4i + 2(e - 1) + 1 the way back. Routes name port 0 (link 0 and
 * 1 for endpoint 1, 2 and 3 for endpoint 2). With @direct, no switch:
 * endpoint 0 and 1, link 2i from 0's port i to 1's, 2i + 1 back.
 */
static struct icfab_mtopo *cables(unsigned int k, int direct, icfab_u8 mode)
{
	struct icfab_mtopo *t = topo_new(direct ? 2 : 3, 4 * k);

	if (direct) {
		add_node(t, ICFAB_MODEL_ENDPOINT, k, 1);
		add_node(t, ICFAB_MODEL_ENDPOINT, k, 1);
		for (unsigned int i = 0; i < k; i++) {
			add_link(t, 0, i, 1, i);
			add_link(t, 1, i, 0, i);
		}
		t->nodes[0].routes[1] = 0;
		t->nodes[1].routes[0] = 0;
	} else {
		add_node(t, ICFAB_MODEL_SWITCH, 2 * k, 0);
		add_node(t, ICFAB_MODEL_ENDPOINT, k, 1);
		add_node(t, ICFAB_MODEL_ENDPOINT, k, 1);
		for (unsigned int i = 0; i < k; i++)
			for (unsigned int e = 1; e <= 2; e++) {
				add_link(t, e, i, 0, (e - 1) * k + i);
				add_link(t, 0, (e - 1) * k + i, e, i);
			}
		t->nodes[0].routes[1] = 0;
		t->nodes[0].routes[2] = k;
		t->nodes[1].routes[2] = 0;
		t->nodes[2].routes[1] = 0;
	}
	for (unsigned int l = 0; l < t->nr_links; l++)
		t->links[l].multipath = mode;
	return t;
}

/*
 * One transfer of n segments over k parallel links, sprayed: segment j
 * leaves on link j mod k, so k leave together every S/B and the last row
 * lands ceil(n/k) S/B after the first left. One hop: T = L + ceil(n/k)
 * S/B; two, through a switch: 2 L + S/B + ceil(n/k) S/B stored and
 * forwarded, 2 L + ceil(n/k) S/B cut-through. k = 1, and multipath off,
 * are the single-link forms. Every link of the ring carries its share.
 */
static void test_mp_spray(void)
{
	static const unsigned int segs[] = { 1, 2, 3, 6, 7, 12, 13 };
	int bad = 0, cases = 0;

	for (unsigned int k = 1; k <= 4; k++)
	for (int hops = 1; hops <= 2; hops++)
	for (int ct = 0; ct <= 1; ct++)
	for (unsigned int si = 0; si < 7; si++) {
		unsigned int n = segs[si], rows = (n + k - 1) / k;
		struct icfab_mtopo *t = cables(k, hops == 1,
					       ICFAB_MODEL_MULTIPATH_SPRAY);
		unsigned int src = hops == 1 ? 0 : 1, dst = hops == 1 ? 1 : 2;
		ull want = hops * LAT + rows * SER +
			   (hops == 2 && !ct ? SER : 0);
		ull carried = 0;
		struct harness *h;

		if (ct)
			set_cut_through(t);
		topo_validate(t);
		h = h_new(t, SEG, 4, 256, 2);
		submit(h, src, dst, n * (ull)SEG, 1000, 1);
		run_all(h);
		cases++;
		/* The source's links to the next node carry n / k or so. */
		for (unsigned int i = 0; i < k; i++) {
			unsigned int lid = hops == 1 ? 2 * i : 4 * i;
			ull got = h->e.links[lid].segments;

			carried += got;
			if (got != n / k + (i < n % k))
				bad++;
		}
		if (h->recs[1].n != 1 || dur(&h->recs[1]) != want ||
		    carried != n || h->recs[1].r.queued_ps) {
			bad++;
			printf("# k %u, %d hops, %s, %u segments: %llu, want %llu\n",
			       k, hops, ct ? "cut-through" : "store and forward",
			       n, dur(&h->recs[1]), want);
		}
		h_free(h);
		topo_free(t);
	}
	ok(!bad, "spraying over k = 1..4 parallel links, 1 and 2 hops, both switching modes (%d cases): T = h L + ceil(n/k) S/B (+ S/B stored and forwarded at the switch) exactly, segment j on link j mod k",
	   cases);
}

/*
 * A last segment of r bytes after n - 1 whole ones, sprayed over k
 * direct links: it leaves with its row, floor((n - 1)/k) S/B after the
 * first, so T = L + max(floor((n - 1)/k) S/B + r/B, rows before it).
 */
/*
 * icfab_engine_unsubmit(): every transfer held, none started, given
 * back and nothing left pending; refused (nothing changed) when one has
 * a spray offset on a fabric that sprays, where the offset would be
 * lost, and accepted with one where nothing sprays.
 */
static void test_unsubmit(void)
{
	static const icfab_u8 modes[] = { ICFAB_MODEL_MULTIPATH_FLOW,
					  ICFAB_MODEL_MULTIPATH_SPRAY };

	for (unsigned int m = 0; m < 2; m++)
	for (int off = 0; off <= 1; off++) {
		struct icfab_mtopo *t = cables(2, 1, modes[m]);
		int refuse = off && modes[m] == ICFAB_MODEL_MULTIPATH_SPRAY;
		icfab_u32 ids[2];
		struct harness *h;
		int err, e1, e2;

		topo_validate(t);
		h = h_new(t, SEG, 4, 256, 4);
		e1 = icfab_engine_submit(&h->e, 0, 1, 4 * SEG, 1000, 1,
					 &ids[0]);
		e2 = icfab_engine_submit(&h->e, 0, 1, 4 * SEG, 1000, 2,
					 &ids[1]);
		if (off)
			icfab_engine_set_spray_offset(&h->e, ids[1], 3 * SEG);
		err = icfab_engine_unsubmit(&h->e, ids, 2);
		if (!refuse && !err)
			submit(h, 0, 1, 4 * SEG, 1000, 3);
		run_all(h);
		ok(!e1 && !e2 &&
		   (refuse ? err == -ICFAB_ENGINE_EINVAL &&
			     h->recs[1].n == 1 && h->recs[2].n == 1 &&
			     !h->recs[3].n :
			     !err && !h->recs[1].n && !h->recs[2].n &&
			     h->recs[3].n == 1 && !h->recs[3].r.status) &&
		   h_idle(h),
		   "unsubmit, %s cables, %s spray offset: %s (%d)",
		   m ? "sprayed" : "hashed", off ? "a" : "no",
		   refuse ? "refused" : "given back", err);
		h_free(h);
		topo_free(t);
	}
}

static void test_mp_short_last(void)
{
	int bad = 0;

	for (unsigned int k = 2; k <= 3; k++)
	for (unsigned int n = 1; n <= 7; n++) {
		struct icfab_mtopo *t = cables(k, 1,
					       ICFAB_MODEL_MULTIPATH_SPRAY);
		ull row = (n - 1) / k, last = row * SER +
			  icfab_serialize_ps(100, BW);
		ull full = n > 1 ? ((n - 2) / k + 1) * SER : 0;
		struct harness *h;

		topo_validate(t);
		h = h_new(t, SEG, 4, 256, 2);
		submit(h, 0, 1, (n - 1) * (ull)SEG + 100, 0, 1);
		run_all(h);
		if (h->recs[1].n != 1 ||
		    dur(&h->recs[1]) != LAT + (last > full ? last : full))
			bad++;
		h_free(h);
		topo_free(t);
	}
	ok(!bad, "spraying, a short last segment: T = L + the later of its row's end and the row before's, exactly");
}

/*
 * One buffer of n segments to one destination, submitted as n transfers
 * of one segment each (libfabricdev's interleaved pieces), piece i at
 * destination offset (b + i) S, with k DMA engines at the source: the
 * turn of a piece's segment is its offset over S (docs/TIMING.md,
 * "Parallel cables"), so piece i takes link (b + i) mod k of the ring,
 * every link carries its share of the bytes, and the last piece lands
 * at the closed form of one transfer of n segments sprayed alone:
 * h L + ceil(n/k) S/B (+ S/B stored and forwarded at the switch). The
 * choice depends on each piece's own offset only: submitted with keys
 * in the reverse order, the link counts are the same. Without offsets
 * (every piece at 0) every piece takes the route's own link: n S/B.
 */
static ull pieces_run(unsigned int k, int hops, int ct, unsigned int n,
		      unsigned int b, int offsets, int reverse,
		      ull *seg_on, int *bad)
{
	struct icfab_mtopo *t = cables(k, hops == 1,
				       ICFAB_MODEL_MULTIPATH_SPRAY);
	unsigned int src = hops == 1 ? 0 : 1, dst = hops == 1 ? 1 : 2;
	struct harness *h;
	ull last = 0;

	t->nodes[src].dma_engines = k;
	if (ct)
		set_cut_through(t);
	topo_validate(t);
	h = h_new(t, SEG, 16, 256, 16);
	for (unsigned int i = 0; i < n; i++) {
		ull key = reverse ? n - i : i + 1;
		icfab_u32 id;

		if (icfab_engine_submit(&h->e, src, dst, SEG, 0, key, &id)) {
			(*bad)++;
			continue;
		}
		if (offsets)
			icfab_engine_set_spray_offset(&h->e, id,
						      (ull)(b + i) * SEG);
	}
	run_all(h);
	for (unsigned int i = 1; i <= n; i++) {
		if (h->recs[i].n != 1)
			(*bad)++;
		if (h->recs[i].r.finish_ps > last)
			last = h->recs[i].r.finish_ps;
	}
	for (unsigned int i = 0; i < k; i++) {
		unsigned int lid = hops == 1 ? 2 * i : 4 * i;

		seg_on[i] = h->e.links[lid].segments;
		if (h->e.links[lid].bytes != seg_on[i] * SEG)
			(*bad)++;
	}
	h_free(h);
	topo_free(t);
	return last;
}

static void test_mp_pieces(void)
{
	static const unsigned int segs[] = { 1, 2, 3, 6, 7, 12, 13 };
	int bad = 0, cases = 0, flat = 0;

	for (unsigned int k = 1; k <= 4; k++)
	for (int hops = 1; hops <= 2; hops++)
	for (int ct = 0; ct <= 1; ct++)
	for (unsigned int si = 0; si < 7; si++)
	for (unsigned int b = 0; b <= 5; b += 5) {
		unsigned int n = segs[si], rows = (n + k - 1) / k;
		ull want = hops * LAT + rows * SER +
			   (hops == 2 && !ct ? SER : 0);
		ull on[4], on_rev[4], on_zero[4], got, got_rev, got_zero;

		got = pieces_run(k, hops, ct, n, b, 1, 0, on, &bad);
		got_rev = pieces_run(k, hops, ct, n, b, 1, 1, on_rev, &bad);
		got_zero = pieces_run(k, hops, ct, n, b, 0, 0, on_zero, &bad);
		cases++;
		for (unsigned int i = 0; i < k; i++) {
			/* Pieces b .. b + n - 1 whose offset is i mod k. */
			ull share = 0;

			for (unsigned int j = 0; j < n; j++)
				share += (b + j) % k == i;
			if (on[i] != share || on_rev[i] != share ||
			    on_zero[i] != (i ? 0 : n))
				bad++;
		}
		if (got != want || got_rev != want) {
			bad++;
			printf("# k %u, %d hops, %s, %u pieces from %u: %llu (reversed keys %llu), want %llu\n",
			       k, hops, ct ? "cut-through" : "store and forward",
			       n, b, got, got_rev, want);
		}
		/* Every piece at offset 0: all on the route's link. */
		if (got_zero != hops * LAT + n * SER +
				(hops == 2 && !ct ? SER : 0))
			flat++;
	}
	ok(!bad && !flat, "one-segment pieces at consecutive destination offsets over k = 1..4 parallel links, 1 and 2 hops, both switching modes (%d cases): piece at offset o S on link o mod k, bytes spread evenly, last arrival at h L + ceil(n/k) S/B (+ S/B stored and forwarded) exactly, in either key order; at offset 0 each, all on the route's link (n S/B)",
	   cases);
}

/*
 * k flows of n segments from endpoint 1 (k DMA engines) to endpoint 2
 * over k parallel links each way, submitted together with keys 1..k.
 * Sprayed, every flow starts its turns at the route's link, so that link
 * carries ceil(n/k) segments of each, k ceil(n/k) in all, and the last
 * flow ends when it has: T_k = 2 L + S/B + k ceil(n/k) S/B, the bound of
 * k n segments on k links when k divides n. Hashed per flow (the key
 * picks one link for the whole transfer), each flow keeps to one link,
 * and none ends after the busiest link's flows have crossed it.
 */
static void test_mp_flows(void)
{
	int bad = 0, cases = 0;

	for (unsigned int k = 2; k <= 4; k++)
	for (unsigned int n = 1; n <= 9; n++) {
		struct icfab_mtopo *t = cables(k, 0,
					       ICFAB_MODEL_MULTIPATH_SPRAY);
		ull last = 2 * LAT + SER + k * ((n + k - 1) / k) * SER;
		ull segs = 0;
		struct harness *h;

		t->nodes[1].dma_engines = k;
		topo_validate(t);
		h = h_new(t, SEG, 8, 1024, k + 1);
		for (unsigned int i = 1; i <= k; i++)
			submit(h, 1, 2, n * (ull)SEG, 0, i);
		run_all(h);
		cases++;
		for (unsigned int i = 0; i < k; i++)
			segs += h->e.links[4 * i].segments;
		for (unsigned int i = 1; i <= k; i++)
			if (h->recs[i].n != 1 || h->recs[i].r.finish_ps > last)
				bad++;
		if (segs != k * n || h->recs[k].r.finish_ps != last) {
			bad++;
			printf("# k %u n %u: last flow %llu, want %llu\n", k, n,
			       (ull)h->recs[k].r.finish_ps, last);
		}
		h_free(h);
		topo_free(t);
	}
	ok(!bad, "k = 2..4 flows of 1..9 segments sprayed over k parallel links (%d cases): the last ends at 2 L + S/B + k ceil(n/k) S/B exactly, none later",
	   cases);

	for (unsigned int k = 2; k <= 4; k++) {
		const unsigned int n = 6;
		struct icfab_mtopo *t = cables(k, 0, ICFAB_MODEL_MULTIPATH_FLOW);
		ull busiest = 0;
		struct harness *h;

		bad = 0;
		t->nodes[1].dma_engines = k;
		topo_validate(t);
		h = h_new(t, SEG, 8, 1024, k + 1);
		for (unsigned int i = 1; i <= k; i++)
			submit(h, 1, 2, n * (ull)SEG, 0, i);
		run_all(h);
		for (unsigned int i = 0; i < k; i++) {
			ull s = h->e.links[4 * i].segments;

			if (s % n)
				bad++;
			if (s > busiest)
				busiest = s;
		}
		for (unsigned int i = 1; i <= k; i++)
			if (h->recs[i].n != 1 || h->recs[i].r.finish_ps >
			    2 * LAT + SER + busiest * SER)
				bad++;
		ok(!bad, "%u flows hashed per flow over %u parallel links: each keeps to one link, none ends after its link's flows have crossed it",
		   k, k);
		h_free(h);
		topo_free(t);
	}
}

/*
 * The link a transfer hashed per flow takes, as docs/TIMING.md
 * ("Multipath") writes it, computed here and not taken from the engine:
 * the high half of the low 64 bits of key x 0x9e3779b97f4a7c15, modulo
 * the p links of the ring, counted from the route's link.
 */
static unsigned int flow_index(ull key, unsigned int p)
{
	return (unsigned int)(((key * 0x9e3779b97f4a7c15ULL) >> 32) % p);
}

/* The module's key (kmod/data.c): endpoint, place on it, sequence. */
static ull module_key(ull ep, ull queue, ull seq)
{
	return ep << 44 | queue << 32 | seq;
}

/*
 * The link of index @i of the ring that hop @hop of cables(p, direct)
 * takes towards the far endpoint: port i of the source (2i direct, 4i
 * through the switch), then the switch's port p + i (link 4i + 3).
 */
static unsigned int cable_link(unsigned int i, int direct, unsigned int hop)
{
	if (direct)
		return 2 * i;
	return hop ? 4 * i + 3 : 4 * i;
}

/*
 * @m flows of @n segments, keys @keys[], submitted together at time 0
 * from one source with m DMA engines over @p parallel links per hop,
 * hashed per flow, 1 hop (@direct) or 2 through a switch, switching
 * @ct. Flow f takes index j_f = flow_index(K_f, p) at every hop; the m_j
 * flows of index j share their links as flows that share one link do,
 * segment by segment in the order of their keys, so the flow of rank r
 * among them (r = 1 for the smallest key) ends at
 *   T = h L + ((n - 1) m_j + r) S/B     (+ S/B stored and forwarded
 *                                          at the switch)
 * and flows of other indices do not touch it. Checks every flow's end
 * and every departure's link. Returns the number of mismatches.
 */
static int mp_flow_case(unsigned int p, int direct, int ct, unsigned int n,
			unsigned int m, const ull *keys)
{
	struct icfab_mtopo *t = cables(p, direct, ICFAB_MODEL_MULTIPATH_FLOW);
	unsigned int src = direct ? 0 : 1, dst = direct ? 1 : 2, hops;
	int bad = 0, seen = 0;
	struct qrun q;

	hops = direct ? 1 : 2;
	t->nodes[src].dma_engines = m;
	if (ct)
		set_cut_through(t);
	topo_validate(t);
	qrun_new(&q, t, 2 * m, 64 * m * n, 1, 0);
	for (unsigned int f = 0; f < m; f++)
		if (icfab_engine_submit(&q.h->e, src, dst, n * (ull)SEG, 0,
					keys[f], &(icfab_u32){ 0 }))
			bad++;
	run_all(q.h);
	for (unsigned int i = 0; i < q.log.n; i++) {
		const struct qlog_entry *x = &q.log.v[i];
		unsigned int f, j, mj = 0, r = 1;
		ull want;

		for (f = 0; f < m && keys[f] != x->key; f++)
			;
		if (f == m) {
			bad++;
			continue;
		}
		j = flow_index(keys[f], p);
		if (x->kind == 0) {
			if (x->link != cable_link(j, direct, x->hop))
				bad++;
			continue;
		}
		for (unsigned int g = 0; g < m; g++) {
			if (flow_index(keys[g], p) != j)
				continue;
			mj++;
			r += keys[g] < keys[f];
		}
		want = hops * LAT + ((n - 1) * (ull)mj + r) * SER +
		       (hops == 2 && !ct ? SER : 0);
		seen++;
		if (x->hop != 0 || x->b != want) {
			bad++;
			printf("# p %u, %u hops, %s, n %u, key %#llx (index %u of %u on it, rank %u): %llu, want %llu\n",
			       p, hops, ct ? "ct" : "sf", n, keys[f], j, mj, r,
			       x->b, want);
		}
	}
	if (q.log.overflow || seen != (int)m)
		bad++;
	qrun_free(&q);
	topo_free(t);
	return bad;
}

/*
 * Flows hashed per flow (docs/TIMING.md, "Multipath"): each flow's link
 * from the documented hash of its key, and its end to the picosecond.
 * Two flows whose keys hash to the same link serialise on it; two whose
 * keys hash to different links overlap, each as if alone. Then 8 flows
 * of the module's keys over 2, 3 and 4 links, in both switching modes,
 * 1 and 2 hops. A different hash, or a ring counted otherwise, moves
 * some flow to another link and fails this.
 */
static void test_mp_flow_hash(void)
{
	ull same[2] = { 0, 0 }, apart[2] = { 0, 0 }, keys[8];
	int bad = 0, cases = 0, have_same = 0, have_apart = 0;
	const unsigned int n = 3;

	/* The first pairs of sequence numbers, on one queue, of each kind. */
	for (ull s = 1; s < 64 && !(have_same && have_apart); s++) {
		ull a = module_key(1, 0, 0), b = module_key(1, 0, s);
		int same_link = flow_index(a, 2) == flow_index(b, 2);

		if (same_link && !have_same) {
			same[0] = a, same[1] = b, have_same = 1;
		} else if (!same_link && !have_apart) {
			apart[0] = a, apart[1] = b, have_apart = 1;
		}
	}
	ok(have_same && have_apart,
	   "the hash puts some pair of one queue's transfers on one of 2 links and some on different ones (seq %llu, %llu)",
	   same[1] & 0xffffffffULL, apart[1] & 0xffffffffULL);

	for (int direct = 0; direct <= 1; direct++)
	for (int ct = 0; ct <= 1; ct++) {
		ull h = direct ? 1 : 2, base = h * LAT + (!direct && !ct ? SER : 0);
		struct icfab_mtopo *t;
		struct qrun q;
		ull end[2];

		bad += mp_flow_case(2, direct, ct, n, 2, same);
		bad += mp_flow_case(2, direct, ct, n, 2, apart);
		/* And the closed forms spelled out for the two pairs. */
		for (int pair = 0; pair < 2; pair++) {
			t = cables(2, direct, ICFAB_MODEL_MULTIPATH_FLOW);
			t->nodes[direct ? 0 : 1].dma_engines = 2;
			if (ct)
				set_cut_through(t);
			topo_validate(t);
			qrun_new(&q, t, 4, 256, 1, 0);
			for (int f = 0; f < 2; f++)
				icfab_engine_submit(&q.h->e, direct ? 0 : 1,
						    direct ? 1 : 2, n * (ull)SEG,
						    0, pair ? apart[f] : same[f],
						    &(icfab_u32){ 0 });
			run_all(q.h);
			end[0] = end[1] = 0;
			for (unsigned int i = 0; i < q.log.n; i++)
				if (q.log.v[i].kind == 1)
					end[q.log.v[i].key ==
					    (pair ? apart[1] : same[1])] =
						q.log.v[i].b;
			if (pair ? end[0] != base + n * SER ||
				   end[1] != base + n * SER :
				   end[0] != base + (2 * n - 1) * SER ||
				   end[1] != base + 2 * n * SER)
				bad++;
			qrun_free(&q);
			topo_free(t);
		}
	}
	ok(!bad, "2 flows of %u segments hashed onto one of 2 links serialise (h L + (2n - 1) S/B and h L + 2n S/B), onto different links overlap (h L + n S/B each), 1 and 2 hops, both switching modes",
	   n);

	bad = 0;
	cases = 0;
	for (unsigned int f = 0; f < 8; f++)
		keys[f] = module_key(5, 3, 1000 + f);
	for (unsigned int p = 2; p <= 4; p++)
	for (int direct = 0; direct <= 1; direct++)
	for (int ct = 0; ct <= 1; ct++)
	for (unsigned int segs = 1; segs <= 4; segs++) {
		cases++;
		bad += mp_flow_case(p, direct, ct, segs, 8, keys);
	}
	ok(!bad, "8 flows hashed over p = 2..4 parallel links (%d cases): each on the link its key's hash names at every hop, the r-th by key of the m_j on its link ending at h L + ((n - 1) m_j + r) S/B (+ S/B stored and forwarded) exactly",
	   cases);
}

/*
 * The spine a transfer hashed at a next-hop set of node @node takes, as
 * docs/TIMING.md ("Equal-cost next hops") writes it, computed here: the
 * flow hash of the key xor node x 0xbf58476d1ce4e5b9, modulo the k
 * members, counted from the primary.
 */
static unsigned int set_index(ull key, unsigned int node, unsigned int k)
{
	return flow_index(key ^ (node * 0xbf58476d1ce4e5b9ULL), k);
}

/*
 * m flows hashed over a leaf with k spines (leafspine(k, m)): flow f
 * from source f to destination m + f, n segments each, submitted at 0.
 * Flow f takes spine j_f = set_index(K_f, A, k); the m_j flows of spine
 * j share leaf A's uplink j (then spine j's downlink) segment by segment
 * in the order of their keys, and nothing else, so the flow of rank r
 * among them ends at
 *   T = 4 L + ((n - 1) m_j + r) S/B      (+ 3 S/B stored and forwarded)
 * Checks every departure's link and every end. Returns mismatches.
 */
static int ecmp_flow_case(unsigned int k, unsigned int m, int ct,
			  unsigned int n, const ull *keys)
{
	struct icfab_mtopo *t = leafspine(k, m, ICFAB_MODEL_MULTIPATH_FLOW);
	unsigned int a = 2 * m;
	int bad = 0, seen = 0;
	struct qrun q;

	if (ct)
		set_cut_through(t);
	if (topo_validate(t))
		bad++;
	qrun_new(&q, t, 2 * m, 64 * m * n, 1, 0);
	for (unsigned int f = 0; f < m; f++)
		if (icfab_engine_submit(&q.h->e, f, m + f, n * (ull)SEG, 0,
					keys[f], &(icfab_u32){ 0 }))
			bad++;
	run_all(q.h);
	for (unsigned int i = 0; i < q.log.n; i++) {
		const struct qlog_entry *x = &q.log.v[i];
		unsigned int f, j, mj = 0, r = 1;
		ull want;

		for (f = 0; f < m && keys[f] != x->key; f++)
			;
		if (f == m) {
			bad++;
			continue;
		}
		j = set_index(keys[f], a, k);
		if (x->kind == 0) {
			if ((x->hop == 1 && x->link != m + j) ||
			    (x->hop == 2 && x->link != m + k + j))
				bad++;
			continue;
		}
		for (unsigned int g = 0; g < m; g++) {
			if (set_index(keys[g], a, k) != j)
				continue;
			mj++;
			r += keys[g] < keys[f];
		}
		want = 4 * LAT + ((n - 1) * (ull)mj + r) * SER +
		       (ct ? 0 : 3 * SER);
		seen++;
		if (x->hop != 0 || x->b != want) {
			bad++;
			printf("# k %u, m %u, %s, n %u, key %#llx (spine %u, %u on it, rank %u): %llu, want %llu\n",
			       k, m, ct ? "ct" : "sf", n, keys[f], j, mj, r,
			       x->b, want);
		}
	}
	if (q.log.overflow || seen != (int)m)
		bad++;
	qrun_free(&q);
	topo_free(t);
	return bad;
}

/*
 * Equal-cost next hops through different neighbours, hashed per flow:
 * m flows over a leaf's k spines follow the documented hash with the
 * leaf mixed in, and end as flows sharing a link do where they collide
 * and as if alone where they do not.
 */
static void test_ecmp_flow(void)
{
	ull keys[8];
	int bad = 0, cases = 0, collide = 0, apart = 0;

	for (unsigned int f = 0; f < 8; f++)
		keys[f] = module_key(f, 0, 1000 + f);
	for (unsigned int k = 2; k <= 4; k++)
	for (unsigned int m = 2; m <= 8; m += 3)
	for (int ct = 0; ct <= 1; ct++)
	for (unsigned int n = 1; n <= 3; n++) {
		unsigned int used = 0;

		cases++;
		bad += ecmp_flow_case(k, m, ct, n, keys);
		for (unsigned int f = 0; f < m; f++)
			used |= 1u << set_index(keys[f], 2 * m, k);
		if (__builtin_popcount(used) < (int)m)
			collide = 1;
		if (__builtin_popcount(used) > 1)
			apart = 1;
	}
	ok(!bad && collide && apart,
	   "m = 2, 5, 8 flows hashed over a leaf's k = 2..4 spines (%d cases, some colliding, some apart): each on spine hash(K xor A x 0xbf58476d1ce4e5b9) mod k, the r-th by key of the m_j on its spine ending at 4 L + ((n - 1) m_j + r) S/B (+ 3 S/B stored and forwarded) exactly",
	   cases);
}

/*
 * An endpoint with k ports to k switches, each with one link on to a
 * second endpoint: node 0 leaves for node 1 by a sprayed set of its k
 * ports (link j to switch 2 + j, then link k + j to node 1).
 */
static struct icfab_mtopo *fan(unsigned int k)
{
	struct icfab_mtopo *t = topo_new(2 + k, 2 * k);
	icfab_u16 ports[ICFAB_MODEL_SET_PORTS];

	add_node(t, ICFAB_MODEL_ENDPOINT, k, 1);
	add_node(t, ICFAB_MODEL_ENDPOINT, k, 1);
	for (unsigned int j = 0; j < k; j++)
		add_node(t, ICFAB_MODEL_SWITCH, 2, 0);
	for (unsigned int j = 0; j < k; j++) {
		add_link(t, 0, j, 2 + j, 0);
		ports[j] = (icfab_u16)j;
	}
	for (unsigned int j = 0; j < k; j++) {
		add_link(t, 2 + j, 1, 1, j);
		t->nodes[2 + j].routes[1] = 1;
	}
	t->nodes[0].routes[1] = add_set(t, 0, ICFAB_MODEL_MULTIPATH_SPRAY, k,
					ports);
	return t;
}

/*
 * Spraying over a next-hop set: n segments from an endpoint over its k
 * ports to k different switches: segment j takes member j mod k, the
 * whole ends at 2 L + ceil(n/k) S/B (+ S/B stored and forwarded), k
 * times the bandwidth of one path. Over a leaf-spine whose single
 * injection link is the bottleneck, one sprayed transfer ends exactly as
 * on its primary path, 4 L + n S/B (+ 3 S/B), with spine j carrying the
 * segments j mod k. Two sprayed sets in a row divide the turn: segment
 * j takes member j mod 2 at the first and floor(j / 2) mod 2 at the
 * second, so the second stage is not polarised.
 */
static void test_ecmp_spray(void)
{
	int bad = 0, cases = 0;

	for (unsigned int k = 2; k <= 4; k++)
	for (int ct = 0; ct <= 1; ct++)
	for (unsigned int n = 1; n <= 9; n += 4) {
		struct icfab_mtopo *t = fan(k);
		ull want = 2 * LAT + (n + k - 1) / k * SER + (ct ? 0 : SER);
		unsigned int ends = 0;
		struct qrun q;

		cases++;
		if (ct)
			set_cut_through(t);
		topo_validate(t);
		qrun_new(&q, t, 2, 64 * n, 1, 0);
		icfab_engine_submit(&q.h->e, 0, 1, n * (ull)SEG, 0, 7,
				    &(icfab_u32){ 0 });
		run_all(q.h);
		for (unsigned int i = 0; i < q.log.n; i++) {
			const struct qlog_entry *x = &q.log.v[i];

			if (x->kind == 1) {
				ends++;
				if (x->b != want || x->hop) {
					bad++;
					printf("# fan k %u n %u %s: %llu, want %llu\n",
					       k, n, ct ? "ct" : "sf", x->b,
					       want);
				}
			} else if (x->link != x->seg % k + (x->hop ? k : 0) ||
				   (x->hop == 0 &&
				    x->b != x->seg / k * (ull)SER)) {
				bad++;
			}
		}
		if (ends != 1 || q.log.overflow)
			bad++;
		qrun_free(&q);
		topo_free(t);
	}
	ok(!bad, "n = 1, 5, 9 segments sprayed over a set of k = 2..4 ports to different switches (%d cases): segment j on member j mod k, leaving at floor(j/k) S/B, the transfer ending at 2 L + ceil(n/k) S/B (+ S/B stored and forwarded)",
	   cases);

	bad = 0;
	cases = 0;
	for (unsigned int k = 2; k <= 4; k++)
	for (int ct = 0; ct <= 1; ct++) {
		struct icfab_mtopo *t = leafspine(k, 1, ICFAB_MODEL_MULTIPATH_SPRAY);
		const unsigned int n = 7;
		ull want = 4 * LAT + n * SER + (ct ? 0 : 3 * SER);
		struct qrun q;

		cases++;
		if (ct)
			set_cut_through(t);
		topo_validate(t);
		qrun_new(&q, t, 2, 64 * n, 1, 0);
		icfab_engine_submit(&q.h->e, 0, 1, n * (ull)SEG, 0, 7,
				    &(icfab_u32){ 0 });
		run_all(q.h);
		for (unsigned int i = 0; i < q.log.n; i++) {
			const struct qlog_entry *x = &q.log.v[i];

			if (x->kind == 1 ? x->b != want :
			    x->hop == 1 && x->link != 1 + x->seg % k)
				bad++;
		}
		qrun_free(&q);
		topo_free(t);
	}
	ok(!bad, "one transfer sprayed over a leaf's k = 2..4 spines behind one injection link (%d cases) ends as on its primary path, 4 L + n S/B (+ 3 S/B), spine j carrying the segments j mod k",
	   cases);

	{
		/*
		 * A (0) -> S0, S1 (2, 3) -> T0, T1 (4, 5) -> B (1): link j
		 * from A to S_j, 2 + 2j + i from S_j to T_i, 6 + i from T_i
		 * to B; A and both S spray.
		 */
		struct icfab_mtopo *t = topo_new(6, 8);
		const unsigned int n = 8;
		struct qrun q;

		bad = 0;
		add_node(t, ICFAB_MODEL_ENDPOINT, 2, 1);
		add_node(t, ICFAB_MODEL_ENDPOINT, 2, 1);
		for (unsigned int j = 0; j < 4; j++)
			add_node(t, ICFAB_MODEL_SWITCH, 2, 0);
		add_link(t, 0, 0, 2, 0);
		add_link(t, 0, 1, 3, 0);
		for (unsigned int j = 0; j < 2; j++)
			for (unsigned int i = 0; i < 2; i++)
				add_link(t, 2 + j, i, 4 + i, j);
		add_link(t, 4, 0, 1, 0);
		add_link(t, 5, 0, 1, 1);
		for (unsigned int v = 0; v < 3; v++)
			t->nodes[v ? v + 1 : 0].routes[1] = add_set(t,
				v ? v + 1 : 0, ICFAB_MODEL_MULTIPATH_SPRAY, 2,
				(icfab_u16[]){ 0, 1 });
		t->nodes[4].routes[1] = 0;
		t->nodes[5].routes[1] = 0;
		if (topo_validate(t))
			bad++;
		qrun_new(&q, t, 2, 64 * n, 1, 0);
		icfab_engine_submit(&q.h->e, 0, 1, n * (ull)SEG, 0, 7,
				    &(icfab_u32){ 0 });
		run_all(q.h);
		for (unsigned int i = 0; i < q.log.n; i++) {
			const struct qlog_entry *x = &q.log.v[i];

			if (x->kind == 0 && x->hop == 1 &&
			    x->link != 2 + 2 * (x->seg % 2) + x->seg / 2 % 2)
				bad++;
			if (x->kind == 1 && x->hop)
				bad++;
		}
		qrun_free(&q);
		topo_free(t);
		ok(!bad, "two sprayed sets in a row: segment j takes member j mod 2, then floor(j/2) mod 2 (the turn divides: no polarisation)");
	}
}

/*
 * Spraying's order (docs/TIMING.md, "Multipath"): segment j of a
 * transfer leaves on link j mod p of the ring, counted from the route's
 * link, at every hop, whatever the key. Over one hop it departs at
 * floor(j/p) S/B; at the switch, stored and forwarded, at
 * (floor(j/p) + 1) S/B + L, cut-through at floor(j/p) S/B + L; the
 * transfer ends at h L + ceil(n/p) S/B (+ S/B stored and forwarded).
 * Checks every departure's link and time.
 */
static void test_mp_spray_order(void)
{
	static const ull keys[] = { 1, 0x5000300000003ULL };
	int bad = 0, cases = 0;

	for (unsigned int p = 2; p <= 4; p++)
	for (int direct = 0; direct <= 1; direct++)
	for (int ct = 0; ct <= 1; ct++)
	for (unsigned int ki = 0; ki < 2; ki++)
	for (unsigned int n = 1; n <= 9; n++) {
		struct icfab_mtopo *t = cables(p, direct,
					       ICFAB_MODEL_MULTIPATH_SPRAY);
		unsigned int hops = direct ? 1 : 2, xmits = 0;
		ull end = hops * LAT + (n + p - 1) / p * SER +
			  (hops == 2 && !ct ? SER : 0);
		struct qrun q;

		if (ct)
			set_cut_through(t);
		topo_validate(t);
		qrun_new(&q, t, 2, 64, 1, 0);
		icfab_engine_submit(&q.h->e, direct ? 0 : 1, direct ? 1 : 2,
				    n * (ull)SEG, 0, keys[ki], &(icfab_u32){ 0 });
		run_all(q.h);
		cases++;
		for (unsigned int i = 0; i < q.log.n; i++) {
			const struct qlog_entry *x = &q.log.v[i];
			ull row = x->seg / p, d;

			if (x->kind == 1) {
				if (x->b != end)
					bad++;
				continue;
			}
			xmits++;
			d = x->hop == 0 ? row * SER :
			    ct ? row * SER + LAT : (row + 1) * SER + LAT;
			if (x->link != cable_link(x->seg % p, direct, x->hop) ||
			    x->b != d || x->c != d + SER) {
				bad++;
				printf("# p %u, %u hops, %s, n %u: segment %u hop %u on link %u at %llu, want link %u at %llu\n",
				       p, hops, ct ? "ct" : "sf", n, x->seg,
				       x->hop, x->link, x->b,
				       cable_link(x->seg % p, direct, x->hop),
				       d);
			}
		}
		if (q.log.overflow || xmits != n * hops)
			bad++;
		qrun_free(&q);
		topo_free(t);
	}
	ok(!bad, "spraying n = 1..9 segments over p = 2..4 links, 1 and 2 hops, both switching modes, two keys (%d cases): segment j leaves on link j mod p of the ring at floor(j/p) S/B (at the switch + L, + S/B stored and forwarded), the transfer ends at h L + ceil(n/p) S/B (+ S/B) exactly",
	   cases);
}

/*
 * Parallel links that differ (a bandwidth, a down link) or whose mode is
 * off are not spread over: a ring holds only links alike, and a link of
 * the ring that is down gives its turns back to the route's link.
 */
static void test_mp_rings(void)
{
	struct icfab_mtopo *t = cables(3, 1, ICFAB_MODEL_MULTIPATH_SPRAY);
	struct harness *h;

	t->links[4].bandwidth = BW / 2;		/* 0's port 2 */
	topo_validate(t);
	ok(t->links[0].nr_par == 2 && t->links[0].par_next == 2 &&
	   t->links[2].par_next == 0 && t->links[4].nr_par == 1 &&
	   t->links[4].par_next == 4 && t->links[1].nr_par == 3,
	   "validation rings the parallel links alike, by port, and leaves a different one out");
	h = h_new(t, SEG, 4, 256, 2);
	submit(h, 0, 1, 4 * (ull)SEG, 0, 1);
	run_all(h);
	ok(h->recs[1].n == 1 && dur(&h->recs[1]) == LAT + 2 * SER &&
	   h->e.links[4].segments == 0,
	   "a transfer sprayed over that ring of 2 takes L + 2 S/B for 4 segments, none on the different link");
	h_free(h);

	t->links[2].state = ICFAB_MODEL_LINK_DOWN;
	h = h_new(t, SEG, 4, 256, 2);
	submit(h, 0, 1, 4 * (ull)SEG, 0, 1);
	run_all(h);
	ok(h->recs[1].n == 1 && h->recs[1].r.status == 0 &&
	   dur(&h->recs[1]) == LAT + 4 * SER && h->e.links[2].segments == 0,
	   "with one of the 2 down, the route's link takes every turn: L + n S/B");
	h_free(h);
	topo_free(t);

	t = cables(3, 1, ICFAB_MODEL_MULTIPATH_NONE);
	topo_validate(t);
	h = h_new(t, SEG, 4, 256, 2);
	submit(h, 0, 1, 4 * (ull)SEG, 0, 1);
	run_all(h);
	ok(t->links[0].nr_par == 1 && dur(&h->recs[1]) == LAT + 4 * SER &&
	   h->e.links[0].segments == 4,
	   "multipath off: one port per destination, as before (L + n S/B)");
	h_free(h);
	topo_free(t);
}

/* ---- calibration: efficiency and per-message overhead ---- */

#define EFF	900U			/* permille: 45 GB/s of payload */
#define OVH	30000ULL		/* ps per message, per link */

/* Every link of @t at efficiency @eff, with overhead @ovh. */
static void set_calibration(struct icfab_mtopo *t, icfab_u32 eff, ull ovh)
{
	for (unsigned int l = 0; l < t->nr_links; l++) {
		t->links[l].eff_permille = eff;
		t->links[l].msg_overhead_ps = ovh;
	}
}

/*
 * One message over h uniform links whose payload runs at B_e = floor(B
 * eff / 1000) and whose first segment holds each link o longer, ahead
 * of its bytes. Store and forward: T = h (L + o + S/B_e) + (n - 1)
 * S/B_e; cut-through: T = h (L + o) + n S/B_e. A one-segment message of
 * r bytes: h (L + o + r/B_e), and h (L + o) + r/B_e. Efficiency 1000
 * and overhead 0 are the ideal link's forms, to the bit. A path tree
 * gives the same.
 */
static void test_cal_hops(void)
{
	static const struct { icfab_u32 eff; ull ovh; } cal[] = {
		{ 1000, 0 }, { EFF, 0 }, { 1000, OVH }, { EFF, OVH },
	};
	int bad = 0, cases = 0;

	for (unsigned int c = 0; c < 4; c++)
	for (int ct = 0; ct <= 1; ct++)
	for (unsigned int hops = 1; hops <= 5; hops++)
	for (unsigned int si = 0; si < 3; si++) {
		static const ull bytes_of[] = { SEG, 5 * (ull)SEG, 100 };
		struct icfab_mtopo *t = chain(hops + 1);
		ull bytes = bytes_of[si], o = cal[c].ovh;
		ull bw = BW / 1000 * cal[c].eff;
		ull s = icfab_serialize_ps(si < 2 ? SEG : bytes, bw);
		ull n = si < 2 ? bytes / SEG : 1;
		ull want = ct ? hops * (LAT + o) + n * s :
			   hops * (LAT + o + s) + (n - 1) * s;
		icfab_u32 path[5];
		struct icfab_engine_tree tree = { .nr_links = hops,
						  .links = path };
		struct harness *h, *ht;

		set_calibration(t, cal[c].eff, o);
		if (ct)
			set_cut_through(t);
		topo_validate(t);
		for (unsigned int l = 0; l < hops; l++)
			path[l] = 2 * l;
		h = h_new(t, SEG, 4, 64, 2);
		ht = h_new(t, SEG, 4, 64, 2);
		submit(h, 0, hops, bytes, 1000, 1);
		icfab_engine_tree_check(&ht->e, 0, &tree);
		submit_tree(ht, 0, &tree, bytes, 1000, 1);
		run_all(h);
		run_all(ht);
		cases++;
		if (h->recs[1].n != 1 || dur(&h->recs[1]) != want ||
		    ht->recs[1].n != 1 || dur(&ht->recs[1]) != want ||
		    h->e.links[0].busy_ps != o + n * s) {
			bad++;
			printf("# eff %u o %llu %s %u hops %llu B: %llu, tree %llu, want %llu\n",
			       cal[c].eff, o, ct ? "ct" : "sf", hops, bytes,
			       dur(&h->recs[1]), dur(&ht->recs[1]), want);
		}
		h_free(h);
		h_free(ht);
		topo_free(t);
	}
	ok(!bad, "calibrated links, one message over 1..5 hops (%d cases): T = h (L + o + S/B_e) + (n - 1) S/B_e, cut-through h (L + o) + n S/B_e, exactly",
	   cases);
}

/*
 * k flows of n segments from endpoints 1..k through the switch to
 * endpoint k + 1, every link calibrated (B_e, o), submitted together
 * with keys 1..k. The first segments reach the switch together and the
 * ejection link serves them by key, o + S/B_e each; the rest follow by
 * segment, then key, S/B_e each, with no gap: flow i ends at 2 L +
 * (k + 1) o + S/B_e + ((n - 1) k + i) S/B_e stored and forwarded, one
 * S/B_e less cut-through, and the ejection link is busy k (o + n S/B_e).
 */
static void test_cal_shared(void)
{
	const ull s = icfab_serialize_ps(SEG, BW / 1000 * EFF);

	for (unsigned int k = 2; k <= 8; k *= 2)
	for (int ct = 1; ct >= 0; ct--) {
		const unsigned int n = 5;
		struct icfab_mtopo *t = star(k + 1, 1);
		struct harness *h;
		int bad = 0;

		set_calibration(t, EFF, OVH);
		if (ct)
			set_cut_through(t);
		topo_validate(t);
		h = h_new(t, SEG, 16, 1024, k + 1);
		for (unsigned int i = 1; i <= k; i++)
			submit(h, i, k + 1, n * (ull)SEG, 0, i);
		run_all(h);
		for (unsigned int i = 1; i <= k; i++)
			if (h->recs[i].n != 1 || h->recs[i].r.finish_ps !=
			    2 * LAT + (k + 1) * OVH + (ct ? 0 : s) +
			    ((n - 1) * k + i) * s)
				bad++;
		ok(!bad && h->e.links[ejl(k + 1)].busy_ps == k * (OVH + n * s),
		   "calibrated %s, %u flows of %u segments sharing a link: flow i ends at 2 L + (k + 1) o + %s((n - 1) k + i) S/B_e exactly",
		   ct ? "cut-through" : "store and forward", k, n,
		   ct ? "" : "S/B_e + ");
		h_free(h);
		topo_free(t);
	}
}

/*
 * Parallel cables that differ only in calibration are not parallel: a
 * sprayed route keeps to the links alike.
 */
static void test_cal_rings(void)
{
	struct icfab_mtopo *t = cables(3, 1, ICFAB_MODEL_MULTIPATH_SPRAY);

	t->links[2].eff_permille = EFF;		/* 0's port 1 */
	t->links[4].msg_overhead_ps = OVH;	/* 0's port 2 */
	topo_validate(t);
	ok(t->links[0].nr_par == 1 && t->links[2].nr_par == 1 &&
	   t->links[4].nr_par == 1 && t->links[1].nr_par == 3,
	   "links that differ in efficiency or overhead are not rung together");
	topo_free(t);
}

/*
 * Capacity never changes the clock: the random contended workloads of
 * test_queue_random and test_queue_chain, once on storage that holds
 * them and again on storage of 1 transfer and 2 events that grows
 * whenever a submission does not fit, into fresh arrays or in place.
 * Every departure and completion is the same to the bit, transfer ids
 * included.
 */
static void capacity_run(struct qrun *q, struct icfab_mtopo *t, int grow,
			 int workload)
{
	icfab_u32 xfers = grow ? 1 : 1024, events = grow ? 2 : 1 << 16;

	qrun_new(q, t, xfers, events, DET_N, 0);
	q->h->grow = grow;
	if (grow == 2) {
		/* h_new()'s arrays, made larger behind the engine's back */
		q->h->xfers_room = 1024;
		q->h->events_room = 1 << 16;
		q->h->s.xfers = realloc(q->h->s.xfers,
					1024 * sizeof(*q->h->s.xfers));
		q->h->s.events = realloc(q->h->s.events,
					 (1 << 16) * sizeof(*q->h->s.events));
		q->h->e.xfers = q->h->s.xfers;
		q->h->e.events = q->h->s.events;
	}
	if (workload) {
		queue_chain(q);
	} else {
		det_workload();
		queue_det(q, 1);
	}
}

static void test_capacity_free(void)
{
	static const char *const how[] = { "", "fresh arrays", "in place" };
	struct icfab_mtopo *ts = star(DET_EPS, 2), *tc = chain(6);

	for (unsigned int l = 0; l < tc->nr_links; l++)
		tc->links[l].bandwidth = l % 3 ? BW : BW / 4;
	topo_validate(ts);
	topo_validate(tc);
	for (int w = 0; w < 2; w++) {
		struct icfab_mtopo *t = w ? tc : ts;
		unsigned int n = w ? 200 : DET_N;
		struct qrun a, b;

		capacity_run(&a, t, 0, w);
		for (int grow = 1; grow <= 2; grow++) {
			capacity_run(&b, t, grow, w);
			ok(a.h->completions == (int)n && b.h->grows >= 8 &&
			   b.h->e.max_events > 2 && qrun_same(&a, &b, t),
			   "%s: storage grown %u times from 1 transfer and 2 events (%s) decides the same %u departures and completions as storage that holds it all",
			   w ? "random transfers on a chain" :
				  "random contended workload",
			   b.h->grows, how[grow], a.log.n);
			qrun_free(&b);
		}
		qrun_free(&a);
	}
	topo_free(ts);
	topo_free(tc);
}

/*
 * The serialisation cache of the last short segment: lengths that
 * alternate on one link, and a bandwidth change between them, each
 * timed as icfab_serialize_ps() times it.
 */
static void test_short_segment_cache(void)
{
	static const ull sizes[] = { 100, 200, 100, SEG + 100, 100, 333, 333 };
	const unsigned int n = sizeof(sizes) / sizeof(sizes[0]);
	struct icfab_mtopo *t = chain(2);
	struct harness *h;
	int bad = 0;
	ull at = 1000;

	topo_validate(t);
	h = h_new(t, SEG, 4, 64, 2 * n);
	for (unsigned int pass = 0; pass < 2; pass++) {
		ull bw = pass ? BW / 3 : BW;

		/* Between calls, as a commit would. */
		t->links[0].bandwidth = bw;
		for (unsigned int i = 0; i < n; i++) {
			const struct rec *r = &h->recs[pass * n + i];
			ull want = icfab_uncontended_ps(sizes[i], SEG, 1, bw,
							LAT);

			submit(h, 0, 1, sizes[i], at, pass * n + i);
			run_all(h);
			if (r->n != 1 || r->r.start_ps != at ||
			    dur(r) != want)
				bad++;
			at = h->e.now_ps + 1;
		}
	}
	ok(!bad, "short segments of alternating lengths, bandwidth changed between: each the closed form");
	h_free(h);
	topo_free(t);
}

int main(void)
{
	printf("TAP version 13\n");
	test_uncontended();
	test_incast(2, 0);
	test_incast(3, 0);
	test_incast(4, 0);
	test_incast(8, 0);
	test_incast(8, 1);
	test_disjoint();
	test_all_to_all(4, 1);
	test_all_to_all(8, 1);
	test_all_to_all(4, 3);
	test_all_to_all(8, 7);
	test_degraded();
	test_unreachable();
	test_determinism();
	test_dma();
	test_queued();
	test_capacity();
	test_cancel();
	test_trace();
	test_horizon();
	test_late();
	test_midflight();
	test_empty_and_local();
	test_hold();
	test_hold_fail();
	test_hold_share();
	test_retopo();
	test_route_kept();
	test_tree_check();
	test_tree_path();
	test_tree_multicast();
	test_tree_faults();
	test_queue_random();
	test_queue_chain();
	test_queue_streams();
	test_queue_carried();
	test_queue_handover();
	test_queue_subwait();
	test_queue_inplace();
	test_queue_lone();
	test_queue_tight();
	test_queue_batch();
	test_queue_trees();
	test_short_segment_cache();
	test_capacity_free();
	test_ct_hops();
	test_late_at_submit();
	test_never();
	test_ct_shared();
	test_ct_mixed();
	test_mp_spray();
	test_mp_short_last();
	test_unsubmit();
	test_mp_pieces();
	test_mp_flows();
	test_mp_flow_hash();
	test_ecmp_flow();
	test_ecmp_spray();
	test_mp_spray_order();
	test_mp_rings();
	test_cal_hops();
	test_cal_shared();
	test_cal_rings();
	return done();
}
