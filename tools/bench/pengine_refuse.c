// SPDX-License-Identifier: GPL-2.0
/*
 * pengine_refuse TOPO.yaml: the parallel engine's batches of submissions
 * against the sequential engine's one by one, where they are refused.
 * No all-to-all of engine_rate reaches a refusal, and every thread
 * decides the admission of a batch from its shares' checks and sums of
 * events (kmod/model/pengine.c, batch_taken()), so this gives random
 * batches, some with an absent source, a late key, a time in the past
 * or the last event's time with a key before or after its, to engines with few slots and events, on 2 to 4 threads, and
 * checks the number taken, the refusal, the ids and every completion.
 * TAP output.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/topo.h>
#include "host_model.h"
#include "pengine.h"

static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int hash_done(void *arg, icfab_u32 x, const struct icfab_xfer_result *r)
{
	uint64_t *h = arg;

	*h = (*h ^ x ^ r->finish_ps ^ (r->queued_ps << 7) ^ r->start_ps ^
	      ((uint64_t)(uint32_t)r->status << 40)) * 1099511628211ULL;
	return 0;
}

/* One engine pair, @rounds batches: 0 when every decision is the same. */
static int run(const struct topo *t, const struct icfab_mtopo *m,
	       const uint32_t *eps, uint32_t ne, unsigned int nr,
	       uint32_t xfers, uint32_t events, uint64_t refused[3])
{
	struct icfab_engine_storage st;
	struct icfab_engine e;
	struct icfab_pengine *pe;
	uint64_t now = 0, hs = 0, hp = 0;
	int err, bad = 0;

	if (host_storage(&st, m, xfers, events) ||
	    icfab_engine_init(&e, m, t->segment_size, &st))
		return -1;
	pe = pengine_host_new(m, t->segment_size, nr, xfers, events, &err);
	if (!pe)
		return -1;
	/* The last event processed before this round, once there is one. */
	icfab_u64 plast = 0, plast_key = 0;
	int pproc = 0;

	for (int round = 0; round < 200 && !bad; round++) {
		uint64_t n = rnd() % 300, taken;
		struct icfab_pengine_sub *s = calloc(n + 1, sizeof(*s));
		icfab_u32 *ids = calloc(n + 1, sizeof(*ids));
		icfab_u32 *pids = calloc(n + 1, sizeof(*pids));
		icfab_u64 ptaken, pnow, last, last_key;
		uint64_t hz;
		int e1 = 0, e2, processed;

		if (!s || !ids || !pids)
			return -1;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t k = rnd() % 400;

			s[i].src = eps[rnd() % ne];
			s[i].dst = eps[rnd() % ne];
			s[i].bytes = 1 + rnd() % (t->segment_size *
						  (rnd() % 8 ? 4 : 64));
			s[i].submit_ps = now + (rnd() % 1000) * 1000;
			s[i].key = rnd() % 1000 + i * 1000;
			if (k == 0)
				s[i].src = t->nr_nodes + 5;
			else if (k == 1)
				s[i].key |= ICFAB_ENGINE_KEY_LATE;
			else if (k == 2 && now)
				s[i].submit_ps = now - 1;
			/*
			 * At the last event's instant (the clock there too
			 * after a run to the end): in order by key or not.
			 */
			else if ((k == 3 || (i == 0 && rnd() % 2 &&
					     (plast_key & ICFAB_ENGINE_KEY_LATE))) &&
				 pproc) {
				s[i].submit_ps = plast;
				s[i].key = plast_key & ~ICFAB_ENGINE_KEY_LATE;
			} else if (k == 4 && pproc) {
				s[i].submit_ps = plast;
				s[i].key = (plast_key & ~ICFAB_ENGINE_KEY_LATE) + 1;
			}
		}
		/*
		 * Before a run to the end, a transfer to itself long after
		 * the others, so that the last event processed is at its
		 * submission's instant (its key late) and the clock is there:
		 * the next round's submissions at that instant are in order
		 * by their key alone.
		 */
		if (round % 5 == 4 && n) {
			s[n - 1].dst = s[n - 1].src;
			s[n - 1].submit_ps = now + 10000000000ULL;
		}
		for (taken = 0; taken < n; taken++) {
			e1 = icfab_engine_submit(&e, s[taken].src, s[taken].dst,
						 s[taken].bytes,
						 s[taken].submit_ps,
						 s[taken].key, &ids[taken]);
			if (e1)
				break;
		}
		e2 = icfab_pengine_submit_batch(pe, s, n, pids, &ptaken);
		if (e1 == -ICFAB_ENGINE_EINVAL)
			refused[0]++;
		else if (e1 == -ICFAB_ENGINE_ERANGE)
			refused[1]++;
		else if (e1 == -ICFAB_ENGINE_ENOSPC)
			refused[2]++;
		if (ptaken != taken || e1 != e2 ||
		    memcmp(ids, pids, taken * sizeof(*ids))) {
			printf("# round %d: sequential took %" PRIu64
			       " (%d), parallel %" PRIu64 " (%d)\n", round,
			       taken, e1, (uint64_t)ptaken, e2);
			bad = 1;
		}
		/* Some way, or to the end, so that slots come back. */
		hz = round % 5 == 4 ? ICFAB_ENGINE_NEVER : now + 20000000;
		if (icfab_engine_run_until(&e, hz, hash_done, &hs) < 0 ||
		    icfab_pengine_run_until(pe, hz, hash_done, &hp) < 0)
			bad = 1;
		icfab_pengine_now(pe, &pnow, &last, &last_key, &processed);
		plast = last;
		plast_key = last_key;
		pproc = processed;
		if (pnow != e.now_ps || hs != hp) {
			printf("# round %d: now %" PRIu64 " and %" PRIu64
			       ", completions %s\n", round, (uint64_t)e.now_ps,
			       (uint64_t)pnow, hs == hp ? "same" : "differ");
			bad = 1;
		}
		now = pnow;
		free(s);
		free(ids);
		free(pids);
	}
	pengine_host_free(pe);
	host_storage_free(&st);
	return bad;
}

int main(int argc, char **argv)
{
	static const uint32_t caps[][2] = {
		{ 64, 600 }, { 128, 1000 }, { 256, 4096 }, { 512, 2000 },
	};
	struct topo_err terr;
	struct icfab_mtopo *m;
	struct topo *t;
	uint32_t *eps, ne = 0;
	int n = 0, failed = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: pengine_refuse TOPO.yaml\n");
		return 2;
	}
	if (topo_load_file(argv[1], &t, &terr) || topo_route(t, &terr)) {
		fprintf(stderr, "pengine_refuse: %s\n", terr.msg);
		return 2;
	}
	m = host_mtopo(t, 0);
	eps = calloc(t->nr_nodes, sizeof(*eps));
	if (!m || !eps)
		return 2;
	for (uint32_t i = 0; i < t->nr_nodes; i++)
		if (t->nodes[i].kind == ICFAB_NODE_ENDPOINT)
			eps[ne++] = i;
	printf("TAP version 13\n1..%zu\n",
	       3 * sizeof(caps) / sizeof(caps[0]));
	for (unsigned int nr = 2; nr <= 4; nr++)
		for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
			uint64_t refused[3] = { 0 };
			int bad = run(t, m, eps, ne, nr, caps[c][0], caps[c][1],
				      refused);

			failed += !!bad;
			printf("%s %d - %u threads, %u slots, %u events: "
			       "refused EINVAL %" PRIu64 ", ERANGE %" PRIu64
			       ", ENOSPC %" PRIu64 "\n", bad ? "not ok" : "ok",
			       ++n, nr, caps[c][0], caps[c][1], refused[0],
			       refused[1], refused[2]);
		}
	return failed ? 1 : 0;
}
