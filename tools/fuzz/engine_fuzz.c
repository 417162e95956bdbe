// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness: the freestanding timing engine (kmod/model) driven
 * through its API as the module drives it. The input builds a small
 * random tree topology (2..8 nodes, some of them switches, links of
 * random bandwidth and latency, some degraded), validates it, and then
 * is read as a list of operations: submissions between random endpoints
 * (some of them to a switch, which must be refused), run_until() to
 * random horizons, link state and bandwidth changes, statistics resets,
 * follow-up submissions from inside the completion callback, storage
 * that starts small and grows (in place or into fresh arrays) when a
 * submission gets -ENOSPC, and at the end either a run to completion or
 * cancel_all().
 *
 * Invariants, checked as the engine runs and at the end:
 *  - every accepted transfer completes exactly once, with what it was
 *    submitted with; nothing else completes; nothing is left in flight;
 *  - a submission refused for room fits once the engine has grown to
 *    what icfab_engine_room_needed() asked for; shrinking is refused;
 *  - times are monotonic: submit <= start <= finish, completions come in
 *    finish order and before the horizon of the run that reports them,
 *    a segment is ready <= departs < is done, and a link serves one
 *    segment at a time (each departure is at or after the previous one's
 *    done time on that link);
 *  - each segment crosses the links of its route in hop order, and each
 *    link's byte and segment counters are the sums of what crossed it;
 *  - a transfer that succeeded carried exactly its bytes on every hop
 *    and took at least the sum of its links' latencies; one that failed
 *    carried no more than its bytes on any hop.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fuzz.h"


#define MAX_NODES	8
#define MAX_LINKS	(2 * (MAX_NODES - 1))
#define MAX_OPS		1024
#define XFERS_MAX	24
#define EVENTS_MAX	512

struct in {
	const uint8_t *p;
	size_t left;
};

static uint32_t get8(struct in *in)
{
	if (!in->left)
		return 0;
	in->left--;
	return *in->p++;
}

static uint32_t get16(struct in *in)
{
	return get8(in) | get8(in) << 8;
}

struct rec {
	uint64_t bytes, submit_ps;
	uint32_t src, dst;
	uint32_t completions;
	int accepted, chain;
	uint64_t hop_bytes[MAX_NODES];
};

static struct fuzz {
	struct icfab_mtopo topo;
	struct icfab_mnode nodes[MAX_NODES];
	struct icfab_mlink links[MAX_LINKS];
	uint16_t routes[MAX_NODES][MAX_NODES];
	uint32_t port_out[MAX_NODES][MAX_NODES], port_in[MAX_NODES][MAX_NODES];
	/* path[s][d][h]: link of hop h from s to d; plen[s][d] hops */
	uint32_t path[MAX_NODES][MAX_NODES][MAX_NODES];
	uint32_t plen[MAX_NODES][MAX_NODES];
	uint32_t endpoints[MAX_NODES], nr_endpoints;
	uint32_t switch_id;		/* a switch, or MAX_NODES */

	struct icfab_engine e;
	struct icfab_engine_link elinks[MAX_LINKS];
	struct icfab_engine_ep eps[MAX_NODES];
	uint64_t dma_free[MAX_NODES * 4];
	/* Two sets, so that the engine can move to fresh arrays. */
	struct icfab_engine_xfer xfers[2][XFERS_MAX];
	struct icfab_engine_event events[2][EVENTS_MAX];
	uint32_t cur, xcap, ecap;
	int grow;			/* grow on -ENOSPC (not in callbacks) */

	uint32_t nr_recs, max_recs;
	uint64_t next_submit_ps;
	uint64_t last_finish_ps, horizon_ps;
	uint64_t link_bytes[MAX_LINKS], link_segs[MAX_LINKS];
	uint64_t link_done_ps[MAX_LINKS];
	uint32_t in_flight;
	int ever_down;
	int cancelling;			/* in cancel_all() */
	uint32_t last_cancelled;	/* xfer id, XFERS_MAX: none yet */
	/* Not cleared between runs: only recs[0, nr_recs) is used. */
	struct rec recs[4 * MAX_OPS];
} F;

/* A tree: node i > 0 hangs off parent[i] < i. */
static void build_topology(struct in *in)
{
	uint32_t n = 2 + get8(in) % (MAX_NODES - 1), i, d, u, h;
	uint32_t parent[MAX_NODES], up_link[MAX_NODES], down_link[MAX_NODES];
	uint32_t ports[MAX_NODES] = { 0 };
	uint8_t switches = get8(in);
	struct icfab_topo_limits lim = {
		.max_endpoints = MAX_NODES, .max_switches = MAX_NODES,
		.max_links = MAX_LINKS, .max_ports = MAX_NODES, .max_colors = 64,
	};
	struct icfab_topo_err err;
	uint32_t scratch[ICFAB_TOPO_SCRATCH_SIZE(MAX_NODES) / 4];

	memset(&F, 0, offsetof(struct fuzz, recs));
	F.switch_id = MAX_NODES;
	F.topo.nodes_cap = n;
	F.topo.nodes = F.nodes;
	F.topo.links = F.links;
	for (i = 1; i < n; i++)
		parent[i] = get8(in) % i;
	for (i = 0; i < n; i++) {
		struct icfab_mnode *nd = &F.nodes[i];
		uint32_t deg = i > 0;

		for (u = i + 1; u < n; u++)
			deg += parent[u] == i;
		nd->present = 1;
		/* A switch needs two neighbours to be worth anything. */
		nd->kind = deg >= 2 && (switches >> i & 1) ?
			ICFAB_MODEL_SWITCH : ICFAB_MODEL_ENDPOINT;
		nd->nr_ports = deg;
		nd->dma_engines = nd->kind == ICFAB_MODEL_ENDPOINT ?
			1 + get8(in) % 3 : 0;
		nd->routes = F.routes[i];
		nd->routes_len = n;
		nd->port_out = F.port_out[i];
		nd->port_in = F.port_in[i];
		snprintf(nd->name, sizeof(nd->name), "n%u", i);
		if (nd->kind == ICFAB_MODEL_ENDPOINT) {
			F.endpoints[F.nr_endpoints++] = i;
			F.topo.nr_endpoints++;
		} else {
			F.switch_id = i;
			F.topo.nr_switches++;
		}
	}
	F.topo.nr_nodes = n;
	for (i = 1; i < n; i++) {
		uint32_t p = parent[i], pp = ports[p]++, ip = ports[i]++;
		uint64_t bw = (1 + get8(in)) * 1000000000ULL;
		uint64_t lat = get8(in) * 10000ULL;
		uint32_t j;

		for (j = 0; j < 2; j++) {
			struct icfab_mlink *l = &F.links[F.topo.nr_links];
			uint8_t deg = get8(in);

			l->present = 1;
			l->src = j ? i : p;
			l->src_port = j ? ip : pp;
			l->dst = j ? p : i;
			l->dst_port = j ? pp : ip;
			l->bandwidth = bw;
			l->latency_ps = lat;
			if (deg >= 224) {
				l->state = ICFAB_MODEL_LINK_DEGRADED;
				l->permille = 1 + deg % 999;
			}
			(j ? up_link : down_link)[i] = F.topo.nr_links++;
		}
	}
	F.topo.links_cap = F.topo.nr_links;
	/* Routes and paths: walk up from both ends to the common ancestor. */
	for (u = 0; u < n; u++) {
		for (d = 0; d < n; d++) {
			uint32_t a = u, b = d, down[MAX_NODES], nd = 0;

			F.routes[u][d] = ICFAB_MODEL_NO_PORT;
			if (u == d || F.nodes[d].kind != ICFAB_MODEL_ENDPOINT)
				continue;
			h = 0;
			/* deeper one first: ancestors have smaller ids */
			while (a != b) {
				if (a > b) {
					F.path[u][d][h++] = up_link[a];
					a = parent[a];
				} else {
					down[nd++] = down_link[b];
					b = parent[b];
				}
			}
			while (nd)
				F.path[u][d][h++] = down[--nd];
			F.plen[u][d] = h;
			F.routes[u][d] = F.links[F.path[u][d][0]].src_port;
		}
	}
	if (icfab_topo_validate(&F.topo, &lim, (icfab_u8 *)scratch, &err)) {
		fprintf(stderr, "engine_fuzz: the harness built an invalid topology: %s (%u, %u)\n",
			err.msg, err.id, err.id2);
		abort();
	}
}

static void check_links(void)
{
	uint32_t l;

	for (l = 0; l < F.topo.nr_links; l++) {
		CHECK(F.elinks[l].bytes == F.link_bytes[l]);
		CHECK(F.elinks[l].segments == F.link_segs[l]);
	}
}

static void on_xmit(void *arg, const struct icfab_engine_xmit *x)
{
	struct rec *r;

	(void)arg;
	CHECK(x->key >= 1 && x->key <= F.nr_recs);
	r = &F.recs[x->key - 1];
	CHECK(r->accepted && !r->completions);
	CHECK(x->hop < F.plen[r->src][r->dst]);
	CHECK(x->link == F.path[r->src][r->dst][x->hop]);
	CHECK(x->bytes > 0 && x->bytes <= F.e.segment_size);
	CHECK(x->ready_ps >= r->submit_ps);
	CHECK(x->ready_ps <= x->depart_ps && x->depart_ps < x->done_ps);
	CHECK(x->depart_ps >= F.link_done_ps[x->link]);
	CHECK(x->depart_ps >= F.e.now_ps);
	F.link_done_ps[x->link] = x->done_ps;
	F.link_bytes[x->link] += x->bytes;
	F.link_segs[x->link]++;
	r->hop_bytes[x->hop] += x->bytes;
	CHECK(r->hop_bytes[x->hop] <= r->bytes);
}

static const struct icfab_engine_tracer tracer = { .xmit = on_xmit };

static int submit(uint32_t src, uint32_t dst, uint64_t bytes, uint64_t at,
		  int chain);

static int on_complete(void *arg, icfab_u32 xfer_id,
		       const struct icfab_xfer_result *res)
{
	struct rec *r;
	uint32_t h, hops;
	uint64_t lat = 0;

	(void)arg;
	CHECK(xfer_id < F.xcap);
	CHECK(res->key >= 1 && res->key <= F.nr_recs);
	r = &F.recs[res->key - 1];
	CHECK(r->accepted && ++r->completions == 1);
	CHECK(F.in_flight-- > 0);
	CHECK(res->bytes == r->bytes && res->src == r->src && res->dst == r->dst);
	CHECK(res->submit_ps == r->submit_ps);
	CHECK(res->submit_ps <= res->start_ps && res->start_ps <= res->finish_ps);
	CHECK(res->nr_leaves == 1);
	if (F.cancelling) {
		/* In transfer id order, each ending now or at its start. */
		CHECK(res->status == -ICFAB_ENGINE_ECANCELED);
		CHECK(res->finish_ps == (res->start_ps > F.e.now_ps ?
					 res->start_ps : F.e.now_ps));
		CHECK(F.last_cancelled == XFERS_MAX || xfer_id > F.last_cancelled);
		F.last_cancelled = xfer_id;
	} else {
		/* In the order of their finish times, before the horizon. */
		CHECK(res->finish_ps >= F.last_finish_ps);
		CHECK(res->finish_ps >= F.e.now_ps);
		CHECK(res->finish_ps < F.horizon_ps ||
		      F.horizon_ps == ICFAB_ENGINE_NEVER);
		F.last_finish_ps = res->finish_ps;
	}
	hops = r->src == r->dst ? 0 : F.plen[r->src][r->dst];
	switch (res->status) {
	case 0:
		if (!r->bytes || r->src == r->dst)
			break;
		CHECK(res->hops == hops);
		for (h = 0; h < hops; h++) {
			CHECK(r->hop_bytes[h] == r->bytes);
			lat += F.links[F.path[r->src][r->dst][h]].latency_ps;
		}
		CHECK(res->finish_ps - res->start_ps >= lat);
		break;
	case -ICFAB_ENGINE_EHOSTUNREACH:
		CHECK(F.ever_down);
		break;
	case -ICFAB_ENGINE_ECANCELED:
		CHECK(F.cancelling);
		break;
	default:
		CHECK(!"unexpected status");
	}
	if (r->chain && !res->status) {
		int grow = F.grow;

		F.grow = 0;	/* no engine call but submit in a callback */
		submit(r->dst, r->src, r->bytes / 2, res->finish_ps, r->chain - 1);
		F.grow = grow;
	}
	return 0;
}

static int submit(uint32_t src, uint32_t dst, uint64_t bytes, uint64_t at,
		  int chain)
{
	struct rec *r;
	uint32_t id;
	int ret;

	if (F.nr_recs == F.max_recs)
		return 0;
	r = &F.recs[F.nr_recs++];
	memset(r, 0, sizeof(*r));
	r->bytes = bytes;
	r->submit_ps = at;
	r->src = src;
	r->dst = dst;
	r->chain = chain;
	ret = icfab_engine_submit(&F.e, src, dst, bytes, at, F.nr_recs, &id);
	if (F.nodes[src].kind != ICFAB_MODEL_ENDPOINT ||
	    F.nodes[dst].kind != ICFAB_MODEL_ENDPOINT) {
		CHECK(ret == -ICFAB_ENGINE_EINVAL);
		return ret;
	}
	CHECK(!ret || ret == -ICFAB_ENGINE_ENOSPC);
	if (ret && F.grow) {
		int need_xfer = 0;
		uint64_t need = icfab_engine_room_needed(&F.e,
			icfab_engine_events_needed(bytes, F.e.segment_size),
			&need_xfer);
		uint32_t xcap = F.xcap + (need_xfer ? 1 + F.xcap / 2 : 0);
		uint32_t ecap = need > F.ecap ? need : F.ecap;
		uint32_t next = F.cur ^ (F.grow & 1);

		CHECK(need || need_xfer);
		if (need != ~0ULL && xcap <= XFERS_MAX && ecap <= EVENTS_MAX) {
			CHECK(!icfab_engine_grow(&F.e, F.xfers[next], xcap,
						 F.events[next], ecap));
			F.cur = next;
			F.xcap = xcap;
			F.ecap = ecap;
			ret = icfab_engine_submit(&F.e, src, dst, bytes, at,
						  F.nr_recs, &id);
			CHECK(!ret);
		}
	}
	if (!ret) {
		CHECK(id < F.xcap);
		r->accepted = 1;
		F.in_flight++;
		CHECK(F.e.nr_xfers == F.in_flight);
	}
	return ret;
}

static void run(uint64_t horizon)
{
	uint64_t before = F.e.now_ps;

	F.horizon_ps = horizon;
	CHECK(icfab_engine_run_until(&F.e, horizon, on_complete, NULL) == 0);
	CHECK(F.e.now_ps >= before);
	CHECK(horizon == ICFAB_ENGINE_NEVER || F.e.now_ps == horizon);
	check_links();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t segs[] = { 64, 512, 1000, 4096 };
	struct in in = { data, size };
	struct icfab_engine_storage st;
	uint32_t i, op, ops = 0, l;

	build_topology(&in);
	F.max_recs = sizeof(F.recs) / sizeof(F.recs[0]);
	F.xcap = 1 + get8(&in) % XFERS_MAX;
	F.ecap = 2 + get16(&in) % (EVENTS_MAX - 1);
	st = (struct icfab_engine_storage){
		.links = F.elinks, .eps = F.eps, .dma_free = F.dma_free,
		.dma_cap = sizeof(F.dma_free) / sizeof(F.dma_free[0]),
		.xfers_cap = F.xcap, .xfers = F.xfers[0],
		.events = F.events[0], .events_cap = F.ecap,
	};
	CHECK(icfab_engine_dma_needed(&F.topo) <= st.dma_cap);
	CHECK(!icfab_engine_init(&F.e, &F.topo, segs[get8(&in) % 4], &st));
	icfab_engine_set_tracer(&F.e, &tracer, NULL);
	F.e.heap_only = get8(&in) & 1;

	while (in.left && ops++ < MAX_OPS) {
		op = get8(&in);
		switch (op % 8) {
		case 0: case 1: case 2: case 3: {
			/* a submission between endpoints, after a gap */
			uint32_t s = F.endpoints[get8(&in) % F.nr_endpoints];
			uint32_t d = F.endpoints[get8(&in) % F.nr_endpoints];
			uint64_t bytes = (uint64_t)get16(&in) << (op >> 5);
			uint64_t gap = (uint64_t)get8(&in) * 50000;

			if (F.next_submit_ps < F.e.now_ps)
				F.next_submit_ps = F.e.now_ps;
			F.next_submit_ps += gap;
			submit(s, d, bytes, F.next_submit_ps, (op >> 3) & 3);
			break;
		}
		case 4: {
			/* a submission from or to a switch: refused */
			uint32_t s = F.endpoints[get8(&in) % F.nr_endpoints];

			if (F.switch_id < MAX_NODES) {
				if (op & 8)
					submit(F.switch_id, s, 4096, F.e.now_ps, 0);
				else
					submit(s, F.switch_id, 4096, F.e.now_ps, 0);
			}
			break;
		}
		case 5:
			run(F.e.now_ps + (uint64_t)get16(&in) * 10000);
			break;
		case 6: {
			/* a link changes state or bandwidth between calls */
			struct icfab_mlink *lk = &F.links[get8(&in) % F.topo.nr_links];
			uint32_t v = get8(&in);

			if (op & 8) {
				lk->bandwidth = (1 + v) * 1000000000ULL;
			} else if (v < 32) {
				lk->state = ICFAB_MODEL_LINK_DOWN;
				F.ever_down = 1;
			} else if (v < 128) {
				lk->state = ICFAB_MODEL_LINK_UP;
			} else {
				lk->state = ICFAB_MODEL_LINK_DEGRADED;
				lk->permille = 1 + v % 999;
			}
			break;
		}
		case 7:
			if (op & 8) {
				/* storage never shrinks */
				F.grow = op >> 4;
				if (F.xcap > 1)
					CHECK(icfab_engine_grow(&F.e, F.xfers[F.cur],
								F.xcap - 1,
								F.events[F.cur],
								F.ecap) ==
					      -ICFAB_ENGINE_EINVAL);
				break;
			}
			icfab_engine_reset_stats(&F.e);
			memset(F.link_bytes, 0, sizeof(F.link_bytes));
			memset(F.link_segs, 0, sizeof(F.link_segs));
			check_links();
			break;
		}
	}
	if (size && (data[size - 1] & 1)) {
		F.horizon_ps = ICFAB_ENGINE_NEVER;
		F.cancelling = 1;
		F.last_cancelled = XFERS_MAX;
		icfab_engine_cancel_all(&F.e, on_complete, NULL);
	} else {
		run(ICFAB_ENGINE_NEVER);
	}
	CHECK(F.in_flight == 0 && F.e.nr_xfers == 0);
	CHECK(icfab_engine_next_ps(&F.e) == ICFAB_ENGINE_NEVER);
	for (i = 0; i < F.nr_recs; i++)
		CHECK(F.recs[i].completions == (uint32_t)F.recs[i].accepted);
	for (l = 0; l < F.topo.nr_links; l++)
		CHECK(F.elinks[l].bytes == F.link_bytes[l]);
	return 0;
}
