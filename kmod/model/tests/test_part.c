// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests for the parallel engine's partitions (kmod/model/part.c
 * and the partition hooks of engine.c): partitions run window by window
 * here, one after another in one thread, under the protocol of
 * tools/bench/pengine.c, and must give the sequential engine's results
 * to the bit; a window longer than the lookahead must be caught.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "../engine.h"
#include "topo_build.h"

typedef unsigned long long ull;

#define MAXP	4
#define NX	400		/* transfers of the workload */

/*
 * A two-level fat tree: @l leaves of @m endpoints each, @s spines, every
 * leaf joined to every spine. Endpoints are nodes 0..l*m-1 (endpoint i
 * on leaf i / m), leaves follow, then spines. A leaf reaches another
 * leaf's endpoint d by spine d % s, or with @spray by a sprayed set over
 * every spine.
 */
static struct icfab_mtopo *fat_tree(unsigned int l, unsigned int m,
				    unsigned int s, int spray, int cut)
{
	unsigned int ne = l * m, leaf0 = ne, spine0 = ne + l;
	struct icfab_mtopo *t = topo_new(ne + l + s, 2 * ne + 2 * l * s);
	icfab_u16 ports[ICFAB_MODEL_SET_PORTS];

	for (unsigned int i = 0; i < ne; i++)
		add_node(t, ICFAB_MODEL_ENDPOINT, 1, 2);
	for (unsigned int i = 0; i < l; i++)
		add_node(t, ICFAB_MODEL_SWITCH, m + s, 0);
	for (unsigned int i = 0; i < s; i++)
		add_node(t, ICFAB_MODEL_SWITCH, l, 0);
	for (unsigned int i = 0; i < ne; i++) {
		add_link(t, i, 0, leaf0 + i / m, i % m);
		add_link(t, leaf0 + i / m, i % m, i, 0);
	}
	for (unsigned int a = 0; a < l; a++)
		for (unsigned int j = 0; j < s; j++) {
			add_link(t, leaf0 + a, m + j, spine0 + j, a);
			add_link(t, spine0 + j, a, leaf0 + a, m + j);
		}
	for (unsigned int k = 0; k < t->nr_links; k++)
		t->links[k].cut_through = (icfab_u8)cut;
	for (unsigned int j = 0; j < s; j++)
		ports[j] = (icfab_u16)(m + j);
	for (unsigned int a = 0; a < l; a++) {
		icfab_u16 set = spray ? add_set(t, leaf0 + a,
						ICFAB_MODEL_MULTIPATH_SPRAY,
						s, ports) : 0;

		for (unsigned int d = 0; d < ne; d++) {
			if (d / m == a)
				t->nodes[leaf0 + a].routes[d] = (icfab_u16)(d % m);
			else
				t->nodes[leaf0 + a].routes[d] = spray ? set :
					(icfab_u16)(m + d % s);
		}
	}
	for (unsigned int d = 0; d < ne; d++) {
		for (unsigned int i = 0; i < ne; i++)
			if (i != d)
				t->nodes[i].routes[d] = 0;
		for (unsigned int j = 0; j < s; j++)
			t->nodes[spine0 + j].routes[d] = (icfab_u16)(d / m);
	}
	return t;
}

static int validate(struct icfab_mtopo *t)
{
	struct icfab_topo_err err;
	static icfab_u32 scratch[ICFAB_TOPO_SCRATCH_SIZE(256) / 4];

	if (icfab_topo_validate(t, &lim, (icfab_u8 *)scratch, &err)) {
		printf("# invalid topology: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/* ---- a workload, and what an engine made of it ---- */

struct sub {
	unsigned int src, dst;
	ull bytes, at, key;
};

static struct sub work[NX];

static ull rng_state;
static ull rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Transfers between random endpoints, submitted over 20 us, by time. */
static void make_work(unsigned int ne, ull seed)
{
	rng_state = seed;
	for (unsigned int i = 0; i < NX; i++) {
		work[i].src = (unsigned int)(rng() % ne);
		do
			work[i].dst = (unsigned int)(rng() % ne);
		while (work[i].dst == work[i].src);
		work[i].bytes = 1 + rng() % (5 * SEG);
		work[i].at = (ull)i * 50000 + rng() % 50000;
		work[i].key = rng() % 1000 << 32 | i;
	}
}

struct outcome {
	unsigned int nr;
	icfab_u32 id[NX];
	struct icfab_xfer_result r[NX];
	ull link_hash[512];		/* departures, per link, in order */
	struct icfab_engine_link link[512];
};

static void mix(ull *h, ull v)
{
	*h = (*h ^ v) * 0x100000001b3ULL;
}

static void on_xmit(void *arg, const struct icfab_engine_xmit *x)
{
	struct outcome *o = arg;
	ull *h = &o->link_hash[x->link];

	mix(h, x->key);
	mix(h, x->bytes);
	mix(h, x->ready_ps);
	mix(h, x->depart_ps);
	mix(h, x->done_ps);
	mix(h, x->xfer_id);
	mix(h, x->seg);
}

static const struct icfab_engine_tracer xmit_tracer = { .xmit = on_xmit };

static void record(struct outcome *o, icfab_u32 id,
		   const struct icfab_xfer_result *r)
{
	if (o->nr < NX) {
		o->id[o->nr] = id;
		o->r[o->nr] = *r;
	}
	o->nr++;
}

static int on_complete(void *arg, icfab_u32 id,
		       const struct icfab_xfer_result *r)
{
	record(arg, id, r);
	return 0;
}

static int storage(struct icfab_engine_storage *st,
		   const struct icfab_mtopo *t)
{
	*st = (struct icfab_engine_storage){
		.links = calloc(t->links_cap, sizeof(*st->links)),
		.eps = calloc(t->nodes_cap, sizeof(*st->eps)),
		.dma_cap = icfab_engine_dma_needed(t),
		.xfers_cap = NX,
		.xfers = calloc(NX, sizeof(*st->xfers)),
		.events_cap = NX * 8,
		.events = calloc(NX * 8, sizeof(*st->events)),
	};
	st->dma_free = calloc(st->dma_cap, sizeof(*st->dma_free));
	return 0;
}

static void storage_free(struct icfab_engine_storage *st)
{
	free(st->links);
	free(st->eps);
	free(st->xfers);
	free(st->events);
	free(st->dma_free);
}

static int submit_all(struct icfab_engine *e)
{
	for (unsigned int i = 0; i < NX; i++) {
		icfab_u32 id;

		if (icfab_engine_submit(e, work[i].src, work[i].dst,
					work[i].bytes, work[i].at, work[i].key,
					&id))
			return -1;
	}
	return 0;
}

/*
 * submit_all() as kmod/model/pengine.c does it: each route walked once,
 * the transfer adopted by every partition with the id the sequential
 * engine gives it (all submitted before any completes: 0, 1, ...). Every
 * other transfer the way pengine.c takes a batch, its slot built once
 * and copied by every partition; the rest one call a partition.
 */
static int adopt_all(struct icfab_engine *e, unsigned int nr)
{
	for (unsigned int i = 0; i < NX; i++) {
		struct icfab_engine_route r;

		if (i % 2) {
			struct icfab_engine_xfer slot;
			icfab_u32 id = i;

			if (icfab_engine_part_route(&e[i % nr], work[i].src,
						    work[i].dst, work[i].bytes,
						    &r))
				return -1;
			icfab_engine_part_slot(&slot, work[i].src, work[i].dst,
					       work[i].bytes, work[i].at,
					       work[i].key, &r);
			for (unsigned int p = 0; p < nr; p++)
				if (icfab_engine_part_adopt_slots(&e[p], &id,
								  &slot, 1))
					return -1;
			continue;
		}
		if (icfab_engine_part_route(&e[i % nr], work[i].src,
					    work[i].dst, work[i].bytes, &r))
			return -1;
		for (unsigned int p = 0; p < nr; p++)
			if (icfab_engine_part_adopt(&e[p], i, work[i].src,
						    work[i].dst, work[i].bytes,
						    work[i].at, work[i].key,
						    &r))
				return -1;
	}
	return 0;
}

static int run_sequential(const struct icfab_mtopo *t, struct outcome *o)
{
	struct icfab_engine_storage st;
	struct icfab_engine e;
	int err;

	memset(o, 0, sizeof(*o));
	for (unsigned int l = 0; l < t->links_cap; l++)
		o->link_hash[l] = 0xcbf29ce484222325ULL;
	storage(&st, t);
	err = icfab_engine_init(&e, t, SEG, &st) || submit_all(&e);
	icfab_engine_set_tracer(&e, &xmit_tracer, o);
	if (!err)
		err = icfab_engine_run_until(&e, ICFAB_ENGINE_NEVER,
					     on_complete, o);
	memcpy(o->link, st.links, t->links_cap * sizeof(*o->link));
	storage_free(&st);
	return err;
}

/*
 * @nr partitions, one window after another: the protocol of
 * tools/bench/pengine.c without threads. @look: the window, 0 for the
 * plan's lookahead. @adopt: submitted by adopt_all(), and never
 * retired. Returns 0 or the first error (-ERANGE: an event came from a
 * partition's past).
 */
static int run_parts(const struct icfab_mtopo *t, unsigned int nr,
		     ull look, int adopt, struct outcome *o, ull *windows)
{
	struct icfab_engine_storage st[MAXP];
	struct icfab_engine e[MAXP], *ep[MAXP];
	struct icfab_engine_part part[MAXP];
	icfab_u16 *of_node = calloc(t->nodes_cap, sizeof(*of_node));
	icfab_u32 *scratch = calloc(2 * t->nodes_cap, sizeof(*scratch));
	ull plan = icfab_part_plan(t, (icfab_u16)nr, of_node, scratch);
	int err = 0;

	memset(o, 0, sizeof(*o));
	*windows = 0;
	for (unsigned int l = 0; l < t->links_cap; l++)
		o->link_hash[l] = 0xcbf29ce484222325ULL;
	if (!look)
		look = plan;
	for (unsigned int p = 0; p < nr; p++) {
		storage(&st[p], t);
		part[p] = (struct icfab_engine_part){
			.of_node = of_node, .self = (icfab_u16)p,
			.out_cap = NX * 8,
			.out = calloc(NX * 8, sizeof(struct icfab_engine_msg)),
			.done_cap = NX,
			.done = calloc(NX, sizeof(struct icfab_engine_done)),
		};
		ep[p] = &e[p];
		if (icfab_engine_init(&e[p], t, SEG, &st[p]))
			err = -1;
		icfab_engine_set_part(&e[p], &part[p]);
		icfab_engine_set_tracer(&e[p], &xmit_tracer, o);
		if (!err && !adopt && submit_all(&e[p]))
			err = -1;
	}
	if (!err && adopt && adopt_all(e, nr))
		err = -1;
	while (!err) {
		ull first = ICFAB_ENGINE_NEVER, hz;
		unsigned int cur[MAXP] = { 0 };

		for (unsigned int p = 0; p < nr; p++)
			if (icfab_engine_next_ps(&e[p]) < first)
				first = icfab_engine_next_ps(&e[p]);
		if (first == ICFAB_ENGINE_NEVER)
			break;
		hz = first + look < first ? ICFAB_ENGINE_NEVER : first + look;
		(*windows)++;
		for (unsigned int p = 0; p < nr && !err; p++) {
			part[p].nr_out = part[p].nr_done = 0;
			err = icfab_engine_run_until(&e[p], hz, NULL, NULL);
			if (!err)
				err = part[p].err;
		}
		for (unsigned int p = 0; p < nr && !err; p++)
			for (unsigned int q = 0; q < nr && !err; q++)
				err = icfab_engine_part_import(&e[p], &part[q]);
		/* The window's completions, merged in the order of events. */
		while (!err) {
			const struct icfab_engine_done *d = NULL;
			struct icfab_xfer_result r;
			unsigned int bq = 0;

			for (unsigned int q = 0; q < nr; q++)
				if (cur[q] < part[q].nr_done &&
				    (!d || icfab_part_done_before(
						&part[q].done[cur[q]], d))) {
					d = &part[q].done[cur[q]];
					bq = q;
				}
			if (!d)
				break;
			cur[bq]++;
			icfab_part_result(ep, nr, of_node, d, &r);
			record(o, d->xfer, &r);
			for (unsigned int p = 0; p < nr && !adopt; p++)
				icfab_engine_part_retire(&e[p], d->xfer);
		}
	}
	for (unsigned int l = 0; l < t->links_cap; l++)
		o->link[l] = st[t->links[l].present ?
				of_node[t->links[l].src] : 0].links[l];
	for (unsigned int p = 0; p < nr; p++) {
		storage_free(&st[p]);
		free(part[p].out);
		free(part[p].done);
	}
	free(of_node);
	free(scratch);
	return err;
}

/* Whether @a and @b are the same to the bit; says where they differ. */
static int same(const struct outcome *a, const struct outcome *b,
		unsigned int links)
{
	if (a->nr != b->nr) {
		diag("%u completions against %u", a->nr, b->nr);
		return 0;
	}
	for (unsigned int i = 0; i < a->nr && i < NX; i++)
		if (a->id[i] != b->id[i] ||
		    memcmp(&a->r[i], &b->r[i], sizeof(a->r[i]))) {
			diag("completion %u: id %u finish %llu queued %llu against id %u finish %llu queued %llu",
			     i, a->id[i], (ull)a->r[i].finish_ps,
			     (ull)a->r[i].queued_ps, b->id[i],
			     (ull)b->r[i].finish_ps, (ull)b->r[i].queued_ps);
			return 0;
		}
	for (unsigned int l = 0; l < links; l++) {
		const struct icfab_engine_link *x = &a->link[l], *y = &b->link[l];

		if (a->link_hash[l] != b->link_hash[l] ||
		    x->next_free_ps != y->next_free_ps || x->bytes != y->bytes ||
		    x->segments != y->segments || x->busy_ps != y->busy_ps ||
		    x->max_queued_ps != y->max_queued_ps) {
			diag("link %u differs", l);
			return 0;
		}
	}
	return 1;
}

static struct outcome seq, par;

static void test_identical(int spray, int cut)
{
	struct icfab_mtopo *t = fat_tree(4, 4, 3, spray, cut);
	ull windows;

	if (validate(t)) {
		ok(0, "fat tree valid");
		return;
	}
	for (ull seed = 1; seed <= 3; seed++) {
		int serr;

		make_work(16, seed * 0x9e3779b97f4a7c15ULL);
		serr = run_sequential(t, &seq);
		ok(!serr && seq.nr == NX,
		   "sequential: %u transfers complete (seed %llu)", seq.nr, seed);
		for (unsigned int nr = 2; nr <= MAXP; nr++) {
			int err = run_parts(t, nr, 0, 0, &par, &windows);

			ok(!err && same(&seq, &par, t->links_cap),
			   "%u partitions%s%s, seed %llu: every completion (id, start, finish, queued, in order), every link's departures and counters are the sequential engine's (%llu windows, err %d)",
			   nr, spray ? ", sprayed" : "", cut ? ", cut-through" : "",
			   seed, windows, err);
			err = run_parts(t, nr, 0, 1, &par, &windows);
			ok(!err && same(&seq, &par, t->links_cap),
			   "%u partitions%s%s, seed %llu, routed once and adopted, never retired: the sequential engine's to the bit (err %d)",
			   nr, spray ? ", sprayed" : "", cut ? ", cut-through" : "",
			   seed, err);
		}
	}
	topo_free(t);
}

/*
 * Windows longer than the lookahead let a partition run past an event
 * another one sends it: the import must refuse it.
 */
static void test_out_of_order(void)
{
	struct icfab_mtopo *t = fat_tree(4, 4, 3, 0, 0);
	ull windows;
	int err;

	validate(t);
	make_work(16, 42);
	err = run_parts(t, 2, 4 * LAT, 0, &par, &windows);
	ok(err == -ICFAB_ENGINE_ERANGE,
	   "windows of 4 lookaheads: a partition gets an event from its past and the import says -ERANGE (%d)",
	   err);
	err = run_parts(t, 2, LAT, 0, &par, &windows);
	ok(!err, "windows of one lookahead: no import refused (%d)", err);
	topo_free(t);
}

/*
 * What icfab_engine_part_import() refuses, and that a refusal leaves
 * the slot as it was: a message for a slot out of range or free
 * (-EINVAL), or from before what the partition has processed (-ERANGE);
 * a good one starts the transfer there and pushes its event.
 */
static void test_import_refusals(void)
{
	struct icfab_mtopo *t = fat_tree(4, 4, 3, 0, 0);
	icfab_u16 *of_node = calloc(t->nodes_cap, sizeof(*of_node));
	icfab_u32 *scratch = calloc(2 * t->nodes_cap, sizeof(*scratch));
	struct icfab_engine_msg msg = { .to = 1 };
	struct icfab_engine_part part[2], from = {
		.of_node = of_node, .self = 0, .out_cap = 1, .nr_out = 1,
		.out = &msg,
	};
	struct icfab_engine_storage st;
	struct icfab_engine_route r;
	struct icfab_engine e;
	icfab_u8 pending;
	int err;

	validate(t);
	icfab_part_plan(t, 2, of_node, scratch);
	for (unsigned int p = 0; p < 2; p++)
		part[p] = (struct icfab_engine_part){
			.of_node = of_node, .self = (icfab_u16)p,
		};
	storage(&st, t);
	icfab_engine_init(&e, t, SEG, &st);
	icfab_engine_set_part(&e, &part[1]);
	/* Endpoint 0 (partition 0) to endpoint 15 (partition 1), id 7. */
	icfab_engine_part_route(&e, 0, 15, SEG, &r);
	icfab_engine_part_adopt(&e, 7, 0, 15, SEG, 1000, 1, &r);
	pending = e.xfers[7].state;
	msg = (struct icfab_engine_msg){
		.time_ps = 5 * LAT, .tail_ps = 5 * LAT, .xfer = NX, .seg = 0,
		.node = 15, .hop = 3, .to = 1,
	};
	err = icfab_engine_part_import(&e, &from);
	ok(err == -ICFAB_ENGINE_EINVAL, "a message for a slot out of range: -EINVAL (%d)", err);
	msg.xfer = 8;
	err = icfab_engine_part_import(&e, &from);
	ok(err == -ICFAB_ENGINE_EINVAL, "a message for a free slot: -EINVAL (%d)", err);
	msg.xfer = 7;
	e.now_ps = 6 * LAT;
	err = icfab_engine_part_import(&e, &from);
	ok(err == -ICFAB_ENGINE_ERANGE && !e.nr_events &&
	   e.xfers[7].state == pending,
	   "a message from before what the partition processed: -ERANGE, nothing pushed, the transfer not started (%d)",
	   err);
	msg.to = 0;
	e.now_ps = 5 * LAT;
	err = icfab_engine_part_import(&e, &from);
	ok(!err && !e.nr_events, "a message for another partition: passed over (%d)", err);
	msg.to = 1;
	err = icfab_engine_part_import(&e, &from);
	ok(!err && e.nr_events == 1 && icfab_engine_next_ps(&e) == 5 * LAT &&
	   e.xfers[7].state != pending,
	   "a good message: the transfer runs here, its event pushed at its time (%d, %u events)", err,
	   e.nr_events);
	storage_free(&st);
	free(of_node);
	free(scratch);
	topo_free(t);
}

static void test_plan(void)
{
	struct icfab_mtopo *t = fat_tree(4, 4, 2, 0, 0);
	icfab_u16 of_node[64];
	icfab_u32 scratch[128];
	unsigned int per[2] = { 0 }, spines[2] = { 0 };
	ull look;

	validate(t);
	look = icfab_part_plan(t, 2, of_node, scratch);
	ok(look == LAT, "the lookahead is the links' latency (%llu ps)", look);
	for (unsigned int i = 0; i < 16; i++) {
		per[of_node[i]]++;
		if (of_node[i] != of_node[16 + i / 4])
			per[0] = 1000;
	}
	for (unsigned int j = 0; j < 2; j++)
		spines[of_node[20 + j]]++;
	ok(per[0] == 8 && per[1] == 8 && spines[0] == 1 && spines[1] == 1,
	   "two partitions: each two leaves with their endpoints and one spine (%u %u, spines %u %u)",
	   per[0], per[1], spines[0], spines[1]);
	look = icfab_part_plan(t, 1, of_node, scratch);
	ok(look == ICFAB_ENGINE_NEVER, "one partition: no link crosses");
	/* Links 32 on: leaf 0 -> spine 0, back, leaf 0 -> spine 1. */
	t->links[34].latency_ps = 0;
	look = icfab_part_plan(t, 2, of_node, scratch);
	ok(look == 0, "a link between partitions with no latency: no lookahead (%llu)",
	   look);
	topo_free(t);
}

int main(void)
{
	printf("TAP version 13\n");
	test_plan();
	test_identical(0, 0);
	test_identical(0, 1);
	test_identical(1, 0);
	test_out_of_order();
	test_import_refusals();
	return done();
}
