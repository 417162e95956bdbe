// SPDX-License-Identifier: GPL-2.0
/*
 * a2a_bound: an all-to-all through the freestanding engine (kmod/model)
 * in this process, its emulated time against the max-channel-load bound,
 * for a choice of post order, chunking and DMA engines per endpoint.
 *
 * Every endpoint of FILE (icfabd's YAML) sends BYTES to every other one.
 * Everything is submitted at time 0, in the order the options give, so
 * the engine's FIFO of DMA engines at each endpoint serves it in that
 * order (docs/TIMING.md): nothing but the order, the chunks and the
 * engines differs between two runs.
 *
 *   -o rotate	round k, endpoint i sends to i + k (libfabricdev's order)
 *   -o longest	each endpoint sends to its farthest destinations first
 *		(most hops on its routes), rotated among equals
 *   -o lead	rotate, and each pair's chunks go as many rounds ahead as
 *		its route's lead (libfabricdev/src/lead.c, the library's
 *		order when it can read the routes)
 *   -c CHUNKS	each pair's BYTES go as CHUNKS transfers, chunk-major:
 *		every destination's first chunk, then every second one...
 *   -s STEPS	each pair's BYTES go in STEPS steps of BYTES / STEPS
 *		(the last takes what does not divide), CHUNKS each; a step
 *		is submitted when the one before has finished, as
 *		libfabricdev's steps are (one process driving every rank)
 *   -D DMA	DMA engines per endpoint instead of the topology's
 *   -C		every link cut-through
 *   -v		also, on stderr: when the links' last segments left and
 *		how long they stood idle before (print_link_ends())
 *
 * The bound is the busiest link: over all links, the bytes the routes put
 * on it over its bandwidth (the engine's own byte counters after the
 * run, which equal the routes' sums), the max-channel-load bound. The
 * second bound adds each link's latency before taking the maximum: the
 * last byte a link carries arrives that much after it is out, and the
 * transfer it belongs to is not done before, so no order can beat it
 * either. It is the tighter one where transfers are short against the
 * latency (1 us per hop on tpu-v4-cube, 64 KiB per pair is 1.3 us on
 * a link). Output: one line,
 *   n bytes order chunks steps dma emulated_us bound_us bound/emulated
 *   bound_lat_us bound_lat/emulated
 *
 *	a2a_bound [-b BYTES] [-o rotate|longest|lead] [-c CHUNKS] [-s STEPS] [-D DMA] [-C] [-v] FILE
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/icfab.h>

#include <icfab/parse.h>
#include "host_model.h"
#include "lead.h"

struct run {
	const struct topo *t;
	uint32_t n, *ep;		/* endpoints: node ids */
	uint32_t *order;		/* [n][n - 1]: destinations, by post */
	uint16_t *delay;		/* [n][n - 1]: rounds behind, by post */
	uint16_t most;			/* the largest delay */
	int verbose;			/* -v: the links' ends */
	uint64_t bytes, chunks, steps;
	uint64_t finish_ps;		/* the last completion */
	uint64_t failed;
};

static void usage(void)
{
	fprintf(stderr, "usage: a2a_bound [-b BYTES] [-o rotate|longest|lead] [-c CHUNKS] [-s STEPS] [-D DMA] [-C] [-v] FILE\n");
	exit(2);
}

/* Links on the route from node @src to node @dst, by the tables. */
static uint32_t route_hops(const struct topo *t, uint32_t src, uint32_t dst)
{
	uint32_t hops = 0, u = src;

	while (u != dst && hops <= t->nr_links) {
		uint16_t port = t->routes[(size_t)u * t->nr_nodes + dst];
		int l = topo_port_link(t, u, port);

		if (l < 0)
			return UINT32_MAX;
		u = t->links[l].dst_node;
		hops++;
	}
	return u == dst ? hops : UINT32_MAX;
}

/* r->delay: each pair's rounds behind the largest lead (lead.c). */
static int make_delay(struct run *r)
{
	uint32_t n = r->n;
	uint16_t *lead = calloc((size_t)n * n, sizeof(*lead));
	int err;

	if (!lead)
		return -ENOMEM;
	err = fdev_route_leads(r->t, r->ep, n, lead);
	for (size_t q = 0; !err && q < (size_t)n * n; q++)
		r->most = lead[q] > r->most ? lead[q] : r->most;
	for (uint32_t i = 0; !err && i < n; i++)
		for (uint32_t k = 0; k + 1 < n; k++) {
			uint32_t d = r->order[(size_t)i * (n - 1) + k];

			r->delay[(size_t)i * (n - 1) + k] = r->most -
				lead[(size_t)i * n + d];
		}
	free(lead);
	return err;
}

/* Fill r->order: rotated, or farthest first with rotation among equals. */
static int make_order(struct run *r, int longest)
{
	uint32_t n = r->n, *hops = malloc(n * sizeof(*hops));

	if (!hops)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t *o = &r->order[(size_t)i * (n - 1)];

		for (uint32_t k = 1; k < n; k++) {
			o[k - 1] = (i + k) % n;
			hops[k - 1] = route_hops(r->t, r->ep[i], r->ep[o[k - 1]]);
			if (hops[k - 1] == UINT32_MAX) {
				free(hops);
				return -EHOSTUNREACH;
			}
		}
		/* A stable insertion sort keeps the rotation among equals. */
		for (uint32_t a = 1; longest && a < n - 1; a++) {
			uint32_t d = o[a], h = hops[a], b = a;

			for (; b > 0 && hops[b - 1] < h; b--) {
				o[b] = o[b - 1];
				hops[b] = hops[b - 1];
			}
			o[b] = d;
			hops[b] = h;
		}
	}
	free(hops);
	return 0;
}

static int on_complete(void *arg, icfab_u32 xfer_id,
		       const struct icfab_xfer_result *res)
{
	struct run *r = arg;

	(void)xfer_id;
	if (res->finish_ps > r->finish_ps)
		r->finish_ps = res->finish_ps;
	r->failed += res->status != 0;
	return 0;
}

/*
 * -v: when the links' last segments left, and how long each link stood
 * idle before its last one (that time minus its busy time), the least
 * and the most over the links that carried anything: a link that idles
 * while others work ends late by as much.
 */
static void print_link_ends(const struct icfab_engine_storage *st,
			    const struct icfab_mtopo *m)
{
	double out_lo = -1, out_hi = 0, idle_lo = -1, idle_hi = 0;

	for (uint32_t l = 0; l < m->links_cap; l++) {
		const struct icfab_engine_link *k = &st->links[l];
		double out = k->next_free_ps / 1e6;
		double idle = (k->next_free_ps - k->busy_ps) / 1e6;

		if (!k->bytes)
			continue;
		out_lo = out_lo < 0 || out < out_lo ? out : out_lo;
		out_hi = out > out_hi ? out : out_hi;
		idle_lo = idle_lo < 0 || idle < idle_lo ? idle : idle_lo;
		idle_hi = idle > idle_hi ? idle : idle_hi;
	}
	fprintf(stderr, "links: last segment out %.3f..%.3f us, idle before it %.3f..%.3f us\n",
		out_lo, out_hi, idle_lo, idle_hi);
}

/*
 * Submit everything at 0, run to the end; the busiest link's time, and
 * the largest of busy time plus latency over the links.
 */
static int run(struct run *r, struct icfab_mtopo *m, double *bound_ps,
	       double *bound_lat_ps)
{
	uint64_t xfers = (uint64_t)r->n * (r->n - 1) * r->chunks;
	uint64_t step = r->bytes / r->steps, events;
	uint64_t last = r->bytes - step * (r->steps - 1);
	struct icfab_engine_storage st;
	struct icfab_engine e;

	/* Storage for one step: a step ends before the next is submitted. */
	events = xfers * icfab_engine_events_needed(last / r->chunks +
						    last % r->chunks,
						    r->t->segment_size);
	if (xfers > UINT32_MAX || events > UINT32_MAX) {
		fprintf(stderr, "a2a_bound: %" PRIu64 " transfers, %" PRIu64
			" events: too many for one engine\n", xfers, events);
		return -E2BIG;
	}
	if (host_storage(&st, m, (icfab_u32)xfers, (icfab_u32)events))
		return -ENOMEM;
	if (icfab_engine_init(&e, m, r->t->segment_size, &st))
		return -EINVAL;
	for (uint64_t s = 0; s < r->steps; s++) {
		uint64_t bytes = s + 1 < r->steps ? step : last;
		uint64_t piece = bytes / r->chunks, at = r->finish_ps;

		/* Round q: each pair's chunk q - its delay, if it has one. */
		for (uint64_t q = 0; q < r->chunks + r->most; q++)
			for (uint32_t k = 0; k + 1 < r->n; k++)
				for (uint32_t i = 0; i < r->n; i++) {
					size_t at_k = (size_t)i * (r->n - 1) + k;
					uint32_t d = r->order[at_k];
					uint64_t c = q - r->delay[at_k], len;
					/* Above every key of the steps before. */
					icfab_u64 key = s << 52 | (icfab_u64)i << 40 |
							q << 20 | k;
					icfab_u32 id;

					if (q < r->delay[at_k] || c >= r->chunks)
						continue;
					/* The last chunk takes what does not divide. */
					len = c + 1 < r->chunks ? piece : bytes - piece * c;
					if (icfab_engine_submit(&e, r->ep[i], r->ep[d],
								len, at, key, &id))
						return -EINVAL;
					/* Where it lands in the pair's block. */
					icfab_engine_set_spray_offset(&e, id,
						s * step + piece * c);
				}
		if (icfab_engine_run_until(&e, ICFAB_ENGINE_NEVER, on_complete,
					   r) < 0)
			return -EINVAL;
	}
	*bound_ps = 0;
	*bound_lat_ps = 0;
	for (uint32_t l = 0; l < m->links_cap; l++) {
		double ps, lat;

		if (!st.links[l].bytes)
			continue;
		ps = (double)st.links[l].bytes * 1e12 /
		     (double)m->links[l].bandwidth;
		lat = ps + (double)m->links[l].latency_ps;
		*bound_ps = ps > *bound_ps ? ps : *bound_ps;
		*bound_lat_ps = lat > *bound_lat_ps ? lat : *bound_lat_ps;
	}
	if (r->verbose)
		print_link_ends(&st, m);
	host_storage_free(&st);
	return 0;
}

int main(int argc, char **argv)
{
	struct run r = { .bytes = 256 * 1024, .chunks = 1, .steps = 1 };
	unsigned long dma = 0;
	icfab_u8 cut_through = 0;
	int longest = 0, lead = 0, opt, err;
	struct icfab_mtopo *m;
	struct topo_err terr;
	struct topo *t;
	double bound, bound_lat;
	char *end;

	while ((opt = getopt(argc, argv, "b:o:c:s:D:Cvh")) != -1) {
		switch (opt) {
		case 'b':
			if (icfab_parse_bytes(optarg, &r.bytes) || !r.bytes)
				usage();
			break;
		case 'o':
			if (strcmp(optarg, "rotate") && strcmp(optarg, "longest") &&
			    strcmp(optarg, "lead"))
				usage();
			longest = !strcmp(optarg, "longest");
			lead = !strcmp(optarg, "lead");
			break;
		case 'c':
			r.chunks = strtoull(optarg, &end, 0);
			if (*end || !r.chunks)
				usage();
			break;
		case 's':
			r.steps = strtoull(optarg, &end, 0);
			if (*end || !r.steps || r.steps >= 1 << 12)
				usage();
			break;
		case 'D':
			dma = strtoul(optarg, &end, 0);
			if (*end || !dma || dma > 1024)
				usage();
			break;
		case 'C': cut_through = 1; break;
		case 'v': r.verbose = 1; break;
		default: usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	if (r.chunks > r.bytes / r.steps) {
		fprintf(stderr, "a2a_bound: more chunks than bytes in a step\n");
		return 2;
	}
	if (topo_load_file(argv[optind], &t, &terr) || topo_route(t, &terr)) {
		fprintf(stderr, "a2a_bound: %s\n", terr.msg);
		return 1;
	}
	r.t = t;
	r.ep = calloc(t->nr_nodes, sizeof(*r.ep));
	if (!r.ep)
		return 1;
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		if (t->nodes[i].kind != ICFAB_NODE_ENDPOINT)
			continue;
		r.ep[r.n++] = i;
		if (dma)
			t->nodes[i].dma_engines = (uint32_t)dma;
	}
	if (r.n < 2) {
		fprintf(stderr, "a2a_bound: needs 2 endpoints or more\n");
		return 1;
	}
	r.order = calloc((size_t)r.n * (r.n - 1), sizeof(*r.order));
	r.delay = calloc((size_t)r.n * (r.n - 1), sizeof(*r.delay));
	m = host_mtopo(t, cut_through);
	if (!r.order || !r.delay || !m)
		return 1;
	err = make_order(&r, longest);
	if (!err && lead)
		err = make_delay(&r);
	if (!err)
		err = run(&r, m, &bound, &bound_lat);
	if (err) {
		fprintf(stderr, "a2a_bound: %s\n", strerror(-err));
		return 1;
	}
	printf("%u %" PRIu64 " %s %" PRIu64 " %" PRIu64 " %u %.3f %.3f %.3f %.3f %.3f\n",
	       r.n, r.bytes, longest ? "longest" : lead ? "lead" : "rotate",
	       r.chunks, r.steps,
	       t->nodes[r.ep[0]].dma_engines ? t->nodes[r.ep[0]].dma_engines : 1,
	       r.finish_ps / 1e6, bound / 1e6, bound / (double)r.finish_ps,
	       bound_lat / 1e6, bound_lat / (double)r.finish_ps);
	topo_free(t);
	return r.failed ? 1 : 0;
}
