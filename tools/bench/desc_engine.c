// SPDX-License-Identifier: GPL-2.0
/*
 * desc_engine: desc_cost's WRITE workload through the freestanding engine
 * (kmod/model) in this process, for callgrind: what the engine's part of
 * a descriptor costs without the VM.
 *
 * Two endpoints with one DMA engine each, joined by zero-latency 1 PB/s
 * links (bench_two_endpoints()'s fabric), 4 KiB segments; BATCHES
 * batches of 32 timing-only 64-byte transfers from endpoint 0 to 1, all
 * of a batch submitted at the engine's time, keys rising as a queue's
 * sequence does; the engine then runs until every one has completed, as
 * desc_cost's WAIT for 32 lets it. Prints the batches, the transfers,
 * the engine's time at the end, its high-water mark of pending events
 * and a hash (FNV-1a over 64-bit words) of every completion (key, start, finish, queued,
 * status), so that a change to the engine can be checked to give the
 * same times:
 *
 *	valgrind --tool=callgrind --toggle-collect=icfab_engine_run_until \
 *	    --toggle-collect=icfab_engine_submit build/bench/desc_engine 2000
 *
 * usage: desc_engine [BATCHES [PER_BATCH]]: PER_BATCH (1 to 32, 32 by
 * default) transfers a batch; 1 times one transfer on an idle fabric,
 * each submitted and run to its completion alone.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../kmod/model/engine.h"

#define BATCH	32
#define LEN	64
#define SEG	4096
#define BW	(1ULL << 50)

struct run {
	uint64_t hash;
	unsigned long done;
};

static void mix(struct run *r, uint64_t v)
{
	/* FNV-1a a word at a time: cheap beside what it checks. */
	r->hash = (r->hash ^ v) * 0x100000001b3ULL;
}

static int on_complete(void *arg, icfab_u32 id,
		       const struct icfab_xfer_result *res)
{
	struct run *r = arg;

	(void)id;
	mix(r, res->key);
	mix(r, res->start_ps);
	mix(r, res->finish_ps);
	mix(r, res->queued_ps);
	mix(r, (uint64_t)(int64_t)res->status);
	r->done++;
	return 0;
}

int main(int argc, char **argv)
{
	long batches = argc > 1 ? atol(argv[1]) : 2000;
	int per = argc > 2 ? atoi(argv[2]) : BATCH;
	static icfab_u32 port_out[2][1], port_in[2][1];
	static icfab_u16 routes[2][2] = { { ICFAB_MODEL_NO_PORT, 0 },
					  { 0, ICFAB_MODEL_NO_PORT } };
	struct icfab_mnode nodes[2] = { 0 };
	struct icfab_mlink links[2] = { 0 };
	struct icfab_mtopo t = { 0 };
	struct icfab_engine_storage st = { 0 };
	struct icfab_engine e;
	struct run r = { 0xcbf29ce484222325ULL, 0 };
	uint64_t seq = 0;

	if (per < 1 || per > BATCH) {
		fprintf(stderr, "usage: desc_engine [BATCHES [PER_BATCH]], "
			"PER_BATCH 1 to %d\n", BATCH);
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		nodes[i].present = 1;
		nodes[i].kind = ICFAB_MODEL_ENDPOINT;
		nodes[i].nr_ports = 1;
		nodes[i].dma_engines = 1;
		nodes[i].port_out = port_out[i];
		nodes[i].port_in = port_in[i];
		nodes[i].routes = routes[i];
		nodes[i].routes_len = 2;
		port_out[i][0] = i;
		port_in[i][0] = 1 - i;
		links[i] = (struct icfab_mlink){
			.present = 1, .src = i, .src_port = 0, .dst = 1 - i,
			.dst_port = 0, .bandwidth = BW, .latency_ps = 0,
		};
	}
	t.nodes = nodes;
	t.links = links;
	t.nodes_cap = t.nr_nodes = 2;
	t.links_cap = t.nr_links = 2;
	t.nr_endpoints = 2;

	st.links = calloc(2, sizeof(*st.links));
	st.eps = calloc(2, sizeof(*st.eps));
	st.dma_cap = icfab_engine_dma_needed(&t);
	st.dma_free = calloc(st.dma_cap, sizeof(*st.dma_free));
	st.xfers_cap = BATCH;
	st.xfers = calloc(BATCH, sizeof(*st.xfers));
	st.events_cap = 4 * BATCH;
	st.events = calloc(st.events_cap, sizeof(*st.events));
	if (!st.links || !st.eps || !st.dma_free || !st.xfers || !st.events ||
	    icfab_engine_init(&e, &t, SEG, &st)) {
		fprintf(stderr, "desc_engine: no engine\n");
		return 1;
	}
	for (long b = 0; b < batches; b++) {
		for (int i = 0; i < per; i++) {
			icfab_u32 id;

			if (icfab_engine_submit(&e, 0, 1, LEN, e.now_ps, ++seq,
						&id)) {
				fprintf(stderr, "desc_engine: submit failed\n");
				return 1;
			}
		}
		if (icfab_engine_run_until(&e, ICFAB_ENGINE_NEVER, on_complete,
					   &r) || r.done != (unsigned long)(b + 1) * per) {
			fprintf(stderr, "desc_engine: run failed\n");
			return 1;
		}
	}
	printf("desc_engine batches %ld transfers %lu now_ps %llu max_events "
	       "%llu hash %016llx\n", batches, r.done,
	       (unsigned long long)e.now_ps,
	       (unsigned long long)e.max_events, (unsigned long long)r.hash);
	return 0;
}
