// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for memory tiers in the timing engine: tier ports as
 * hops, timed and contended like links (docs/TIMING.md, "Memory tiers").
 * Every expectation is an exact virtual-clock closed form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "../engine.h"
#include "topo_build.h"

typedef unsigned long long ull;

#define HBM_BW	100000000000ULL		/* 4 KiB in 40960 ps */
#define HBM_SER	40960ULL
#define HBM_LAT	20000ULL
#define DDR_BW	25000000000ULL		/* 4 KiB in 163840 ps */
#define DDR_SER	163840ULL
#define DDR_LAT	60000ULL
#define NONE	ICFAB_MODEL_NO_LINK

/* A tier port of @kind at endpoint @home; returns its link id. */
static unsigned int add_tier(struct icfab_mtopo *t, unsigned int home,
			     unsigned int kind, ull bw, ull lat)
{
	unsigned int id = t->nr_links++;

	t->links[id] = (struct icfab_mlink){
		.present = 1, .src = home, .dst = home, .bandwidth = bw,
		.latency_ps = lat, .tier = (icfab_u8)kind,
		.tier_bytes = 1ULL << 30,
	};
	t->nodes[home].tier_link[kind - 1] = id + 1;
	return id;
}

static int validate(struct icfab_mtopo *t, struct icfab_topo_err *err)
{
	icfab_u32 scratch[ICFAB_TOPO_SCRATCH_SIZE(64) / 4];

	return icfab_topo_validate(t, &lim, (icfab_u8 *)scratch, err);
}

struct harness {
	struct icfab_engine e;
	struct icfab_engine_storage s;
	struct icfab_xfer_result r[16];	/* by key */
	int n[16];
};

static int on_complete(void *arg, icfab_u32 id,
		       const struct icfab_xfer_result *r)
{
	struct harness *h = arg;

	(void)id;
	if (r->key < 16) {
		h->r[r->key] = *r;
		h->n[r->key]++;
	}
	return 0;
}

static struct harness *h_new(struct icfab_mtopo *t)
{
	struct harness *h = calloc(1, sizeof(*h));

	h->s.links = calloc(t->links_cap, sizeof(*h->s.links));
	h->s.eps = calloc(t->nodes_cap, sizeof(*h->s.eps));
	h->s.dma_cap = icfab_engine_dma_needed(t);
	h->s.dma_free = calloc(h->s.dma_cap + 1, sizeof(icfab_u64));
	h->s.xfers_cap = 16;
	h->s.xfers = calloc(16, sizeof(*h->s.xfers));
	h->s.events_cap = 1 << 16;
	h->s.events = calloc(h->s.events_cap, sizeof(*h->s.events));
	if (icfab_engine_init(&h->e, t, SEG, &h->s))
		printf("# init failed\n");
	return h;
}

static void h_free(struct harness *h)
{
	free(h->s.links);
	free(h->s.eps);
	free(h->s.dma_free);
	free(h->s.xfers);
	free(h->s.events);
	free(h);
}

static int submit(struct harness *h, unsigned int src, unsigned int stier,
		  unsigned int dst, unsigned int dtier, ull bytes, ull at,
		  ull key)
{
	icfab_u32 id;
	int err = icfab_engine_submit_tiered(&h->e, src, stier, dst, dtier,
					     bytes, at, key, &id);

	if (err)
		printf("# submit %u -> %u: %d\n", src, dst, err);
	return err;
}

static void run_all(struct harness *h)
{
	icfab_engine_run_until(&h->e, ICFAB_ENGINE_NEVER, on_complete, h);
}

static ull dur(const struct harness *h, unsigned int key)
{
	return h->r[key].finish_ps - h->r[key].start_ps;
}

static ull max2(ull a, ull b)
{
	return a > b ? a : b;
}

/* One transfer from a tier at endpoint 1 to plain memory at 2, and back. */
static void test_one_hop_more(void)
{
	const ull n = 100;
	struct icfab_mtopo *t = star_spare(2, 1, 1);
	unsigned int hbm = add_tier(t, 1, ICFAB_MODEL_TIER_HBM, HBM_BW,
				    HBM_LAT);
	struct icfab_topo_err err;
	struct harness *h;
	ull want;

	ok(!validate(t, &err), "a topology with a tier port validates");
	h = h_new(t);
	submit(h, 1, hbm, 2, NONE, n * SEG, 0, 0);
	submit(h, 2, NONE, 1, hbm, n * SEG, 0, 1);
	run_all(h);
	/*
	 * Store and forward: sum over hops of (L + S/B), then (n - 1) S/B
	 * of the slowest hop. Read: the tier port, then 2 fabric links;
	 * write: 2 fabric links, then the tier port. Disjoint resources.
	 */
	want = (HBM_LAT + HBM_SER) + 2 * (LAT + SER) + (n - 1) * SER;
	ok(h->n[0] == 1 && !h->r[0].status && dur(h, 0) == want &&
	   h->r[0].hops == 3,
	   "a read from HBM costs its port as one more hop: %llu ps = %llu ps",
	   dur(h, 0), want);
	ok(h->n[1] == 1 && !h->r[1].status && dur(h, 1) == want,
	   "a write into HBM likewise, its port last: %llu ps", dur(h, 1));
	ok(h->s.links[hbm].bytes == 2 * n * SEG &&
	   h->s.links[hbm].busy_ps == 2 * n * HBM_SER,
	   "the tier port counts bytes and busy time like a link");
	h_free(h);
	topo_free(t);
}

/*
 * k endpoints share one HBM port (a chip's tiles). Each copies from HBM
 * into its own plain memory, one hop each: the port serves them by key,
 * segment by segment, so flow i ends at L + ((n-1)k + i) S/B: B/k each.
 */
static void test_k_readers(unsigned int k)
{
	const ull n = 200;
	struct icfab_mtopo *t = star_spare(k, 1, 1);
	unsigned int hbm = add_tier(t, 1, ICFAB_MODEL_TIER_HBM, HBM_BW,
				    HBM_LAT);
	struct icfab_topo_err err;
	struct harness *h;
	int good = 1;

	for (unsigned int i = 2; i <= k; i++)
		t->nodes[i].tier_link[ICFAB_MODEL_TIER_HBM - 1] = hbm + 1;
	validate(t, &err);
	h = h_new(t);
	for (unsigned int i = 1; i <= k; i++)
		submit(h, i, hbm, i, NONE, n * SEG, 0, i);
	run_all(h);
	for (unsigned int i = 1; i <= k; i++) {
		ull want = HBM_LAT + ((n - 1) * k + i) * HBM_SER;

		if (h->n[i] != 1 || h->r[i].status ||
		    h->r[i].finish_ps != want) {
			printf("# reader %u: %llu, want %llu\n", i,
			       (ull)h->r[i].finish_ps, want);
			good = 0;
		}
	}
	ok(good && h->s.links[hbm].busy_ps == k * n * HBM_SER,
	   "%u readers of one HBM port get B/%u each: reader i ends at L + ((n-1)k + i) S/B",
	   k, k);
	h_free(h);
	topo_free(t);
}

/*
 * A prefetch from DDR to HBM at endpoint 1 (two DMA engines) beside a
 * transfer from 1's plain memory to 2: no resource in common, so the two
 * together take the longer of them alone. Then the same transfer reads
 * HBM, whose port the prefetch writes through: now they contend.
 */
static void test_prefetch_overlap(void)
{
	const ull np = 300, nx = 100;
	struct icfab_mtopo *t = star_spare(2, 2, 2);
	unsigned int hbm = add_tier(t, 1, ICFAB_MODEL_TIER_HBM, HBM_BW,
				    HBM_LAT);
	unsigned int ddr = add_tier(t, 1, ICFAB_MODEL_TIER_DDR, DDR_BW,
				    DDR_LAT);
	struct icfab_topo_err err;
	struct harness *a, *b, *both, *shared;
	ull tp, tx, want_p, want_x;

	validate(t, &err);
	/* DDR -> HBM: two hops, the DDR port the slower. */
	want_p = (DDR_LAT + DDR_SER) + (HBM_LAT + HBM_SER) +
		 (np - 1) * DDR_SER;
	want_x = 2 * (LAT + SER) + (nx - 1) * SER;
	a = h_new(t);
	submit(a, 1, ddr, 1, hbm, np * SEG, 0, 0);
	run_all(a);
	tp = dur(a, 0);
	b = h_new(t);
	submit(b, 1, NONE, 2, NONE, nx * SEG, 0, 1);
	run_all(b);
	tx = dur(b, 1);
	ok(tp == want_p && tx == want_x,
	   "alone: prefetch DDR->HBM %llu ps = %llu, transfer %llu ps = %llu",
	   tp, want_p, tx, want_x);
	both = h_new(t);
	submit(both, 1, ddr, 1, hbm, np * SEG, 0, 0);
	submit(both, 1, NONE, 2, NONE, nx * SEG, 0, 1);
	run_all(both);
	ok(max2(both->r[0].finish_ps, both->r[1].finish_ps) == max2(tp, tx) &&
	   both->r[0].finish_ps == tp && both->r[1].finish_ps == tx &&
	   !both->r[0].queued_ps && !both->r[1].queued_ps,
	   "overlapped on disjoint resources they take max(prefetch, transfer) = %llu ps",
	   max2(tp, tx));
	shared = h_new(t);
	submit(shared, 1, ddr, 1, hbm, np * SEG, 0, 0);
	submit(shared, 1, hbm, 2, NONE, nx * SEG, 0, 1);
	run_all(shared);
	ok(shared->r[1].queued_ps > 0 && shared->r[0].queued_ps > 0,
	   "a transfer reading HBM while a prefetch writes it contends at the port");
	h_free(a);
	h_free(b);
	h_free(both);
	h_free(shared);
	topo_free(t);
}

/* Nothing but plain memory: submit_tiered() without tiers is submit(). */
static void test_no_tier_same(void)
{
	struct icfab_mtopo *t = star_spare(3, 1, 0);
	struct icfab_topo_err err;
	struct harness *a, *b;
	icfab_u32 id;

	validate(t, &err);
	a = h_new(t);
	b = h_new(t);
	icfab_engine_submit(&a->e, 1, 2, 77 * SEG + 5, 0, 0, &id);
	icfab_engine_submit(&a->e, 3, 2, 50 * SEG, 0, 1, &id);
	submit(b, 1, NONE, 2, NONE, 77 * SEG + 5, 0, 0);
	submit(b, 3, NONE, 2, NONE, 50 * SEG, 0, 1);
	run_all(a);
	run_all(b);
	ok(!memcmp(a->r, b->r, sizeof(a->r)) &&
	   !memcmp(a->s.links, b->s.links, t->links_cap * sizeof(*a->s.links)),
	   "without tiers, submit_tiered() gives submit()'s results to the bit");
	h_free(a);
	h_free(b);
	topo_free(t);
}

/* Endpoints that no route joins; a bad tier argument. */
static void test_unreachable_and_bad(void)
{
	struct icfab_mtopo *t = star_spare(3, 1, 2);
	unsigned int h1 = add_tier(t, 1, ICFAB_MODEL_TIER_HBM, HBM_BW, HBM_LAT);
	unsigned int h3 = add_tier(t, 3, ICFAB_MODEL_TIER_HBM, HBM_BW, HBM_LAT);
	struct icfab_topo_err err;
	struct harness *h;
	icfab_u32 id;

	t->nodes[1].routes[3] = ICFAB_MODEL_NO_PORT;
	validate(t, &err);
	h = h_new(t);
	submit(h, 1, h1, 3, h3, 10 * SEG, 0, 0);
	/* A copy between tiers of one endpoint needs no route. */
	submit(h, 3, h3, 3, NONE, 10 * SEG, 0, 1);
	run_all(h);
	ok(h->n[0] == 1 && h->r[0].status == -ICFAB_ENGINE_EHOSTUNREACH &&
	   h->r[0].finish_ps == 0,
	   "a copy between tiers of endpoints no route joins: -EHOSTUNREACH at its start");
	ok(h->n[1] == 1 && !h->r[1].status &&
	   dur(h, 1) == HBM_LAT + 10 * HBM_SER,
	   "a copy from HBM to plain memory of one endpoint crosses the port only");
	ok(icfab_engine_submit_tiered(&h->e, 1, 0, 2, NONE, SEG, 10, 2, &id) ==
	   -ICFAB_ENGINE_EINVAL &&
	   icfab_engine_submit_tiered(&h->e, 1, NONE, 2, 99, SEG, 10, 2, &id) ==
	   -ICFAB_ENGINE_EINVAL,
	   "a fabric link or a missing link as a tier port: -EINVAL");
	h_free(h);
	topo_free(t);
}

static void test_validate(void)
{
	struct icfab_mtopo *t = star_spare(2, 1, 1);
	unsigned int hbm = add_tier(t, 1, ICFAB_MODEL_TIER_HBM, HBM_BW, HBM_LAT);
	struct icfab_topo_err err;
	int r;

	t->links[hbm].dst = 2;
	r = validate(t, &err);
	ok(r && err.obj == ICFAB_TOPO_ERR_LINK && err.id == hbm,
	   "a tier port between two endpoints is refused: %s", err.msg);
	t->links[hbm].dst = 1;
	t->links[hbm].tier = 4;
	r = validate(t, &err);
	ok(r && err.obj == ICFAB_TOPO_ERR_LINK && err.id == hbm,
	   "an unknown tier kind is refused: %s", err.msg);
	t->links[hbm].tier = ICFAB_MODEL_TIER_HBM;
	t->nodes[2].tier_link[ICFAB_MODEL_TIER_DDR - 1] = hbm + 1;
	r = validate(t, &err);
	ok(r && err.obj == ICFAB_TOPO_ERR_NODE && err.id == 2,
	   "a reference to a tier port of another kind is refused: %s",
	   err.msg);
	t->nodes[2].tier_link[ICFAB_MODEL_TIER_DDR - 1] = 0;
	t->nodes[0].tier_link[ICFAB_MODEL_TIER_HBM - 1] = hbm + 1;
	r = validate(t, &err);
	ok(r && err.obj == ICFAB_TOPO_ERR_NODE && err.id == 0,
	   "a switch with a tier is refused: %s", err.msg);
	t->nodes[0].tier_link[ICFAB_MODEL_TIER_HBM - 1] = 0;
	t->nodes[1].tier_link[ICFAB_MODEL_TIER_HBM - 1] = 0;
	r = validate(t, &err);
	ok(r && err.obj == ICFAB_TOPO_ERR_LINK && err.id == hbm,
	   "a tier port its home does not name is refused: %s", err.msg);
	t->nodes[1].tier_link[ICFAB_MODEL_TIER_HBM - 1] = hbm + 1;
	ok(!validate(t, &err) && t->links[hbm].nr_par == 1,
	   "fixed, it validates, and the tier port has no parallel links");
	topo_free(t);
}

int main(void)
{
	printf("TAP version 13\n");
	test_one_hop_more();
	test_k_readers(2);
	test_k_readers(4);
	test_k_readers(8);
	test_prefetch_overlap();
	test_no_tier_same();
	test_unreachable_and_bad();
	test_validate();
	return done();
}
