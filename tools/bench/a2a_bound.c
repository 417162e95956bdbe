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
 *   -H		with -m: the all-to-all-v in fixed slots (coll.c,
 *		slots_plan()), each pair's 8-byte count ahead of its bytes
 *		in its first piece, as libfabricdev runs it
 *		where one process drives every rank; without -H, the
 *		records alone
 *   -T NS	with -m: run each step NS ns at a time and print on stderr
 *		the timeline of the -N LINKS (default 20) links whose last
 *		segment left last (-L: the busiest), run_timeline(); with
 *		-W LINK, at each tick, which piece last left link LINK
 *   -S SRC	with -m: print on stderr the links of SRC's routes
 *   -E		with -m: each source's DMA engines, on stderr
 *		(print_engines()): when its last piece got an engine, and
 *		how much of the engines' time its pieces held them against
 *		the time they took to serialise on their first link (the
 *		rest is waiting there behind other segments); with -N, the
 *		LINKS sources whose last piece started last
 *   -C		every link cut-through
 *   -v		also, on stderr: when the links' last segments left and
 *		how long they stood idle before (print_link_ends())
 *   -m FILE:PHASE
 *		an all-to-all-v instead: the first n endpoints, endpoint i
 *		sending FILE's [i][j] bytes to j, FILE being moe_bench -M's
 *		JSON and PHASE dispatch or combine (a MoE exchange's
 *		records, without its count exchange). The library's own
 *		plan code cuts it: rotated order, steps of at most 4096
 *		pieces per source (fdev_plan_split_steps()), pieces of -p
 *		bytes (default the segment size), each pair's pieces
 *		behind by its lead with -o lead (fdev_plan_interleave_lead()),
 *		as libfabricdev's all-to-all-v (coll.c,
 *		fdev_comm_interleave()), posted as the module keys a
 *		rank's posts (run_plan()). -b, -c, -s and -o longest do
 *		not apply. BYTES in the output is the largest pair's.
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
 *	a2a_bound [-b BYTES] [-o rotate|longest|lead] [-c CHUNKS] [-s STEPS]
 *		  [-m FILE:PHASE [-p PIECE] [-H] [-T NS [-N LINKS] [-L]
 *		  [-W LINK]] [-S SRC] [-E]] [-D DMA] [-C] [-v] FILE
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
#include "cost.h"
#include "lead.h"
#include "plan.h"

/* coll.c's FDEV_INTERLEAVE_PIECES: a source's pieces in one step. */
#define LIB_STEP_PIECES	4096

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
	uint64_t *mat;			/* -m: [n][n] bytes, or NULL */
	uint64_t piece;			/* -m: bytes per piece */
	int lead;			/* -o lead */
	int headers;			/* -H */
	uint64_t tick_ps;		/* -T: timeline tick, 0 none */
	uint32_t top;			/* -N: links -T prints */
	int by_load;			/* -L: -T's links by load */
	long watch;			/* -W: a link whose pieces -T names, or -1 */
	long show_src;			/* -S: a source whose routes to print, or -1 */
	int engines;			/* -E: the DMA engines' use */
	uint64_t *starts;		/* -E: [n][cap] this step's starts */
	uint32_t *nstarts;		/* -E: [n] of them */
	size_t starts_cap;
	uint64_t *held_ps;		/* -E: [n] over the steps */
	uint64_t *ser_ps;		/* -E: [n] over the steps */
	uint64_t *last_ps;		/* -E: [n] the last start */
	uint64_t *pieces;		/* -E: [n] */
	int *rank;			/* -E: [nodes] rank, or -1 */
	const struct fdev_plan *plan;	/* -m: the plan being run */
};

static void usage(void)
{
	fprintf(stderr, "usage: a2a_bound [-b BYTES] [-o rotate|longest|lead] [-c CHUNKS] [-s STEPS] [-m FILE:PHASE [-p PIECE] [-H] [-T NS [-N LINKS] [-L] [-W LINK]] [-S SRC] [-E]] [-D DMA] [-C] [-v] FILE\n");
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

/* @lead: the leads (lead.c) over the routes between r->ep's endpoints. */
static int route_leads(const struct run *r, uint16_t *lead)
{
	struct fdev_paths *paths;
	int err = fdev_paths_build(r->t, r->ep, r->n, &paths);

	if (!err)
		err = fdev_route_leads(paths, lead);
	fdev_paths_free(paths);
	return err;
}

/* r->delay: each pair's rounds behind the largest lead (lead.c). */
static int make_delay(struct run *r)
{
	uint32_t n = r->n;
	uint16_t *lead = calloc((size_t)n * n, sizeof(*lead));
	int err;

	if (!lead)
		return -ENOMEM;
	err = route_leads(r, lead);
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

/*
 * -E: a piece of this step got its DMA engine at @res->start_ps; and
 * the time it serialises on its route's first link, counted now.
 */
static void engine_start(struct run *r, const struct icfab_xfer_result *res)
{
	const struct topo *t = r->t;
	int i = res->src < t->nr_nodes ? r->rank[res->src] : -1;
	uint16_t port;
	int l;

	if (i < 0 || r->nstarts[i] >= r->starts_cap)
		return;
	r->starts[(size_t)i * r->starts_cap + r->nstarts[i]++] = res->start_ps;
	r->pieces[i]++;
	r->last_ps[i] = res->start_ps > r->last_ps[i] ? res->start_ps :
			r->last_ps[i];
	port = t->routes[(size_t)res->src * t->nr_nodes + res->dst];
	l = topo_port_link(t, res->src, port);
	if (l >= 0 && t->links[l].bandwidth)
		r->ser_ps[i] += (uint64_t)((double)res->bytes * 1e12 /
					   (double)t->links[l].bandwidth);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * -E, after a step: everything was submitted at its start, so each
 * endpoint's FIFO gives an engine to its next piece the instant one is
 * released, and the k-th start after the first @dma is the k-th
 * release: every engine is held without a gap from the step's start
 * to the start of the last piece it serves. The sum below is exactly
 * those spans (the @dma last starts less @dma times the first), the
 * engines' time held by all but the step's last @dma pieces.
 */
static void engine_step(struct run *r, uint32_t dma)
{
	for (uint32_t i = 0; i < r->n; i++) {
		uint64_t *s = &r->starts[(size_t)i * r->starts_cap];
		uint32_t k = r->nstarts[i];

		qsort(s, k, sizeof(*s), cmp_u64);
		for (uint32_t j = dma; j < k; j++)
			r->held_ps[i] += s[j] - s[j - dma];
		r->nstarts[i] = 0;
	}
}

/*
 * -E: the sources whose last piece got an engine last, and the engines'
 * time held against serialised, summed over the sources.
 */
static void print_engines(const struct run *r, uint32_t dma)
{
	uint32_t n = r->n, *order = malloc(n * sizeof(*order));
	uint64_t held = 0, ser = 0;

	if (!order)
		return;
	for (uint32_t i = 0; i < n; i++) {
		order[i] = i;
		held += r->held_ps[i];
		ser += r->ser_ps[i];
	}
	for (uint32_t a = 1; a < n; a++)
		for (uint32_t b = a; b > 0 &&
		     r->last_ps[order[b - 1]] < r->last_ps[order[b]]; b--) {
			uint32_t t = order[b];

			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	fprintf(stderr, "engines: %u per endpoint; last piece started %.3f..%.3f us; held %.3f us per source (each step's last %u pieces left out), serialising on the first link %.3f (%.1f%%)\n",
		dma, r->last_ps[order[n - 1]] / 1e6, r->last_ps[order[0]] / 1e6,
		held / 1e6 / n, dma, ser / 1e6 / n,
		held ? 100.0 * (double)ser / (double)held : 0);
	for (uint32_t a = 0; a < n && a < r->top; a++) {
		uint32_t i = order[a];

		fprintf(stderr, "  src %u last start %.3f pieces %llu held %.3f serialising %.3f (%.1f%%)\n",
			i, r->last_ps[i] / 1e6, (unsigned long long)r->pieces[i],
			r->held_ps[i] / 1e6, r->ser_ps[i] / 1e6,
			r->held_ps[i] ? 100.0 * (double)r->ser_ps[i] /
					(double)r->held_ps[i] : 0);
	}
	free(order);
}

static int on_complete(void *arg, icfab_u32 xfer_id,
		       const struct icfab_xfer_result *res)
{
	struct run *r = arg;

	(void)xfer_id;
	if (r->engines)
		engine_start(r, res);
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

static void link_bounds(const struct icfab_engine_storage *st,
			const struct icfab_mtopo *m, double *bound_ps,
			double *bound_lat_ps);

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
	link_bounds(&st, m, bound_ps, bound_lat_ps);
	if (r->verbose)
		print_link_ends(&st, m);
	host_storage_free(&st);
	return 0;
}

/*
 * -m: FILE's [n][n] matrix under PHASE ("dispatch" or "combine") into
 * r->mat and r->n: the numbers of the arrays of arrays after "PHASE":.
 */
static int load_matrix(struct run *r, const char *arg)
{
	const char *colon = strrchr(arg, ':');
	char key[64], *text = NULL, *at;
	size_t cap = 0, len = 0, got;
	uint32_t rows = 0, depth = 0;
	uint64_t *mat = NULL;
	size_t nmat = 0, capmat = 0;
	FILE *f;

	if (!colon || (size_t)snprintf(key, sizeof(key), "\"%s\"", colon + 1) >=
	    sizeof(key))
		return -EINVAL;
	text = strndup(arg, (size_t)(colon - arg));
	f = text ? fopen(text, "r") : NULL;
	free(text);
	text = NULL;
	if (!f)
		return -errno;
	do {
		if (len + 4096 + 1 > cap) {
			char *t = realloc(text, cap = 2 * cap + 4096 + 1);

			if (!t) {
				free(text);
				fclose(f);
				return -ENOMEM;
			}
			text = t;
		}
		got = fread(text + len, 1, 4096, f);
		len += got;
	} while (got);
	fclose(f);
	text[len] = 0;
	at = strstr(text, key);
	if (!at) {
		free(text);
		return -ENOENT;
	}
	at = strchr(at + strlen(key), '[');
	for (; at && *at; at++) {
		if (*at == '[') {
			if (++depth == 2)
				rows++;
		} else if (*at == ']') {
			if (!--depth)
				break;
		} else if (depth == 2 && *at >= '0' && *at <= '9') {
			if (nmat == capmat) {
				uint64_t *t = realloc(mat, (capmat = 2 * capmat + 64) *
						      sizeof(*mat));

				if (!t)
					break;
				mat = t;
			}
			mat[nmat++] = strtoull(at, &at, 10);
			at--;
		}
	}
	free(text);
	if (!rows || nmat != (size_t)rows * rows) {
		free(mat);
		return -EINVAL;
	}
	r->mat = mat;
	r->n = rows;
	return 0;
}

/* The busiest link's time, and with its latency, over the links' bytes. */
static void link_bounds(const struct icfab_engine_storage *st,
			const struct icfab_mtopo *m, double *bound_ps,
			double *bound_lat_ps)
{
	*bound_ps = 0;
	*bound_lat_ps = 0;
	for (uint32_t l = 0; l < m->links_cap; l++) {
		double ps, lat;

		if (!st->links[l].bytes)
			continue;
		ps = (double)st->links[l].bytes * 1e12 /
		     (double)m->links[l].bandwidth;
		lat = ps + (double)m->links[l].latency_ps;
		*bound_ps = ps > *bound_ps ? ps : *bound_ps;
		*bound_lat_ps = lat > *bound_lat_ps ? lat : *bound_lat_ps;
	}
}

/* The fewest DMA engines of a rank's endpoint. */
static uint32_t rank_engines(const struct run *r)
{
	uint32_t most = UINT32_MAX;

	for (uint32_t i = 0; i < r->n; i++)
		if (r->t->nodes[r->ep[i]].dma_engines < most)
			most = r->t->nodes[r->ep[i]].dma_engines;
	return most;
}

/*
 * -H -o lead: each source's first pieces dealt out over its first links
 * and its last pieces on each first link far pairs first, as
 * libfabricdev's all-to-all-v in slots orders them
 * (fdev_comm_interleave_v(); FDEV_NO_START_FILL as there), then the
 * play of one process driving every rank (FDEV_NO_CRITICAL_FIRST as
 * there: what processes that each drive their own rank post, each
 * source's order being its own row's).
 */
static int far_first(const struct run *r, struct fdev_plan *p)
{
	size_t pairs = (size_t)r->n * r->n;
	uint32_t *hops = calloc(pairs, sizeof(*hops));
	uint32_t *first = calloc(pairs, sizeof(*first));
	struct fdev_paths *m = NULL;
	int err = hops && first ? fdev_paths_build(r->t, r->ep, r->n, &m) :
		  -ENOMEM;

	for (size_t q = 0; !err && q < pairs; q++) {
		hops[q] = m->off[q + 1] - m->off[q];
		first[q] = hops[q] ? m->link[m->off[q]] : UINT32_MAX;
	}
	if (!err && !getenv("FDEV_NO_START_FILL"))
		err = fdev_plan_start_fill(p, first, r->n, NULL);
	if (!err)
		err = fdev_plan_far_first(p, hops, first, r->n, NULL);
	if (!err && !getenv("FDEV_NO_CRITICAL_FIRST"))
		err = fdev_plan_critical_first(p, m, rank_engines(r));
	fdev_paths_free(m);
	free(hops);
	free(first);
	return err;
}

/*
 * -m: r->mat as libfabricdev plans an all-to-all-v (coll.c): rotated,
 * split into steps, interleaved in pieces, by the leads with -o lead.
 */
static int plan_matrix(struct run *r, struct fdev_plan *p)
{
	uint32_t n = r->n;
	uint16_t *lead = NULL;
	int err;

	fdev_plan_init(p);
	for (uint32_t k = 1; k < n; k++)
		for (uint32_t i = 0; i < n; i++) {
			uint32_t d = (i + k) % n;
			uint64_t len = r->mat[(size_t)i * n + d];

			size_t had = p->nx;

			if (r->headers && len)
				len += 8;
			if (len)
				fdev_plan_xfer(p, 0, i, d, 0, 0, len);
			if (r->headers && p->nx > had)
				p->x[had].head = 8;
		}
	p->nsteps = 1;
	err = fdev_plan_finish(p);
	if (!err)
		err = fdev_plan_split_steps(p, r->piece, LIB_STEP_PIECES);
	if (!err && r->show_src >= 0) {
		struct fdev_paths *paths;

		if (!fdev_paths_build(r->t, r->ep, r->n, &paths)) {
			for (uint32_t d = 0; d < n; d++) {
				size_t q = (size_t)r->show_src * n + d;

				fprintf(stderr, "route %ld->%u %llu:", r->show_src, d,
					(unsigned long long)r->mat[q]);
				for (uint32_t k = paths->off[q]; k < paths->off[q + 1]; k++)
					fprintf(stderr, " %u", paths->link[k]);
				fputc('\n', stderr);
			}
			fdev_paths_free(paths);
		}
	}
	if (!err && r->lead) {
		lead = calloc((size_t)n * n, sizeof(*lead));
		err = lead ? route_leads(r, lead) : -ENOMEM;
	}
	if (!err)
		err = fdev_plan_interleave_lead(p, r->piece, LIB_STEP_PIECES,
						lead, n);
	if (!err && r->headers && lead)
		err = far_first(r, p);
	free(lead);
	return err;
}

/*
 * -W: which piece last left the watched link, from its key (run_plan()'s:
 * endpoint, and the source's sequence in the plan): source, destination,
 * which of the pair's pieces, and the link's busy time so far.
 */
static void watch_piece(const struct run *r,
			const struct icfab_engine_storage *st, icfab_u64 at)
{
	const struct icfab_engine_link *k = &st->links[r->watch];
	icfab_u64 key = k->last_key, seq = key & ((1ULL << 44) - 1);
	uint32_t ep = (uint32_t)(key >> 44), src = UINT32_MAX, nth = 0, of = 0;
	const struct fdev_xfer *x = NULL;

	for (uint32_t i = 0; i < r->n; i++)
		if (r->ep[i] == ep)
			src = i;
	for (size_t i = 0, j = 0; i < r->plan->nx; i++) {
		if (r->plan->x[i].src != src)
			continue;
		if (j++ == seq)
			x = &r->plan->x[i];
	}
	if (!x)
		return;
	for (size_t i = 0; i < r->plan->nx; i++) {
		const struct fdev_xfer *y = &r->plan->x[i];

		if (y->src == x->src && y->dst == x->dst) {
			of++;
			if (y->src_off < x->src_off)
				nth++;
		}
	}
	fprintf(stderr, "  %.3f busy %.3f: %u->%u piece %u/%u seq %llu\n",
		at / 1e6, k->busy_ps / 1e6, x->src, x->dst, nth, of,
		(unsigned long long)seq);
}

/*
 * -T TICK: run the step tick by tick and print, for the -N links whose
 * last segment left last (with -L: the busiest), their busy time, when
 * their last segment left and how long they stood idle before it (in
 * us), and their busy share of each tick: 0 to 9 tenths, '.' for none.
 * A segment counts in the tick in which it was decided, so a share is
 * good to a segment's time.
 */
static int run_timeline(struct run *r, struct icfab_engine *e,
			const struct icfab_engine_storage *st,
			const struct icfab_mtopo *m)
{
	uint32_t nl = m->links_cap, ticks = 0, cap = 0;
	icfab_u64 *busy = NULL;		/* [ticks + 1][nl] */
	uint32_t *idx;
	icfab_u64 at = r->finish_ps;

	for (;;) {
		icfab_u64 *t;
		int left;

		if (ticks + 1 >= cap) {
			cap = 2 * cap + 64;
			t = realloc(busy, (size_t)cap * nl * sizeof(*busy));
			if (!t) {
				free(busy);
				return -ENOMEM;
			}
			busy = t;
		}
		for (uint32_t l = 0; l < nl; l++)
			busy[(size_t)ticks * nl + l] = st->links[l].busy_ps;
		if (r->watch >= 0 && ticks)
			watch_piece(r, st, at);
		at += r->tick_ps;
		left = icfab_engine_run_until(e, at, on_complete, r);
		if (left < 0) {
			free(busy);
			return -EINVAL;
		}
		ticks++;
		if (icfab_engine_next_ps(e) == ICFAB_ENGINE_NEVER ||
		    ticks >= 1000000)
			break;
	}
	for (uint32_t l = 0; l < nl; l++)
		busy[(size_t)ticks * nl + l] = st->links[l].busy_ps;
	idx = malloc(nl * sizeof(*idx));
	if (!idx) {
		free(busy);
		return -ENOMEM;
	}
	for (uint32_t l = 0; l < nl; l++)
		idx[l] = l;
	/* Latest last segment first, or with -L the busiest first. */
	for (uint32_t a = 1; a < nl; a++) {
		uint32_t v = idx[a], b = a;

		for (; b && (r->by_load ?
			     st->links[idx[b - 1]].busy_ps < st->links[v].busy_ps :
			     st->links[idx[b - 1]].next_free_ps <
			     st->links[v].next_free_ps); b--)
			idx[b] = idx[b - 1];
		idx[b] = v;
	}
	for (uint32_t q = 0; q < nl && q < r->top; q++) {
		uint32_t l = idx[q];
		const struct icfab_engine_link *k = &st->links[l];

		if (!k->bytes)
			continue;
		fprintf(stderr, "%4u %s->%s load %.3f out %.3f idle %.3f ",
			l, r->t->nodes[m->links[l].src].name,
			r->t->nodes[m->links[l].dst].name,
			k->busy_ps / 1e6, k->next_free_ps / 1e6,
			(k->next_free_ps - k->busy_ps) / 1e6);
		for (uint32_t i = 0; i < ticks; i++) {
			icfab_u64 b = busy[(size_t)(i + 1) * nl + l] -
				      busy[(size_t)i * nl + l];
			unsigned int d = (unsigned int)(b * 10 / (r->tick_ps + 1));

			fputc(b ? '0' + (d > 9 ? 9 : d) : '.', stderr);
		}
		fputc('\n', stderr);
	}
	free(idx);
	free(busy);
	return 0;
}

/* -m: the plan's steps in turn, each posted when the one before ended. */
static int run_plan(struct run *r, struct icfab_mtopo *m,
		    const struct fdev_plan *p, double *bound_ps,
		    double *bound_lat_ps)
{
	uint64_t xfers = 0, events = 0, most_x = 0, most_ev = 0;
	struct icfab_engine_storage st;
	struct icfab_engine e;
	uint32_t *seq;			/* [n]: each source's posts so far */
	uint32_t dma = r->t->nodes[r->ep[0]].dma_engines ?
		       r->t->nodes[r->ep[0]].dma_engines : 1;
	size_t b, i;
	int err = 0;

	for (b = 0; b < p->nx; b = i) {
		xfers = events = 0;
		for (i = b; i < p->nx && p->x[i].step == p->x[b].step; i++) {
			xfers++;
			events += icfab_engine_events_needed(p->x[i].len,
						r->t->segment_size);
		}
		most_x = xfers > most_x ? xfers : most_x;
		most_ev = events > most_ev ? events : most_ev;
	}
	if (most_x > UINT32_MAX || most_ev > UINT32_MAX)
		return -E2BIG;
	seq = calloc(r->n, sizeof(*seq));
	if (!seq || host_storage(&st, m, (icfab_u32)most_x, (icfab_u32)most_ev)) {
		free(seq);
		return -ENOMEM;
	}
	if (r->engines) {
		r->starts_cap = most_x;
		r->starts = calloc((size_t)r->n * most_x, sizeof(*r->starts));
		r->nstarts = calloc(r->n, sizeof(*r->nstarts));
		r->held_ps = calloc(r->n, sizeof(*r->held_ps));
		r->ser_ps = calloc(r->n, sizeof(*r->ser_ps));
		r->last_ps = calloc(r->n, sizeof(*r->last_ps));
		r->pieces = calloc(r->n, sizeof(*r->pieces));
		r->rank = malloc(r->t->nr_nodes * sizeof(*r->rank));
		if (!r->starts || !r->nstarts || !r->held_ps || !r->ser_ps ||
		    !r->last_ps || !r->pieces || !r->rank)
			err = -ENOMEM;
		for (uint32_t k = 0; !err && k < r->t->nr_nodes; k++)
			r->rank[k] = -1;
		for (uint32_t k = 0; !err && k < r->n; k++)
			r->rank[r->ep[k]] = (int)k;
	}
	if (icfab_engine_init(&e, m, r->t->segment_size, &st))
		err = -EINVAL;
	for (b = 0; !err && b < p->nx; b = i) {
		uint64_t at = r->finish_ps;

		for (i = b; !err && i < p->nx && p->x[i].step == p->x[b].step;
		     i++) {
			const struct fdev_xfer *x = &p->x[i];
			icfab_u32 id;

			/*
			 * The module's key (kmod/data.c, icfab_xfer_submit()):
			 * endpoint, queue (one per rank), sequence on it, as
			 * run() orders its own. It decides what goes first at
			 * one instant; keyed by place in the plan (a round's
			 * pieces before the next round's, whatever their
			 * source), ties at the torus's links went another way
			 * and the MoE matrices with leads came out 10 to 30 us
			 * off the module's times.
			 */
			if (icfab_engine_submit(&e, r->ep[x->src], r->ep[x->dst],
						x->len, at,
						(icfab_u64)r->ep[x->src] << 44 |
						seq[x->src]++, &id))
				err = -EINVAL;
			else
				icfab_engine_set_spray_offset(&e, id, x->dst_off);
		}
		r->plan = p;
		if (!err && r->tick_ps)
			err = run_timeline(r, &e, &st, m);
		if (!err && icfab_engine_run_until(&e, ICFAB_ENGINE_NEVER,
						   on_complete, r) < 0)
			err = -EINVAL;
		if (!err && r->engines)
			engine_step(r, dma);
	}
	if (!err) {
		link_bounds(&st, m, bound_ps, bound_lat_ps);
		if (r->verbose)
			print_link_ends(&st, m);
		if (r->engines)
			print_engines(r, dma);
	}
	free(r->starts);
	free(r->nstarts);
	free(r->held_ps);
	free(r->ser_ps);
	free(r->last_ps);
	free(r->pieces);
	free(r->rank);
	r->starts = NULL;
	r->engines = 0;
	host_storage_free(&st);
	free(seq);
	return err;
}

int main(int argc, char **argv)
{
	struct run r = { .bytes = 256 * 1024, .chunks = 1, .steps = 1,
			 .top = 20, .watch = -1, .show_src = -1 };
	unsigned long dma = 0;
	icfab_u8 cut_through = 0;
	int longest = 0, lead = 0, opt, err;
	const char *matrix = NULL;
	uint32_t eps = 0;
	struct fdev_plan plan = { 0 };
	struct icfab_mtopo *m;
	struct topo_err terr;
	struct topo *t;
	double bound, bound_lat;
	char *end;

	while ((opt = getopt(argc, argv, "b:o:c:s:m:p:D:T:N:W:S:ELHCvh")) != -1) {
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
		case 'm': matrix = optarg; break;
		case 'p':
			if (icfab_parse_bytes(optarg, &r.piece) || !r.piece)
				usage();
			break;
		case 'H': r.headers = 1; break;
		case 'T':
			r.tick_ps = strtoull(optarg, &end, 0) * 1000;
			if (*end || !r.tick_ps)
				usage();
			break;
		case 'N':
			r.top = (uint32_t)strtoul(optarg, &end, 0);
			if (*end)
				usage();
			break;
		case 'W':
			r.watch = strtol(optarg, &end, 0);
			if (*end || r.watch < 0)
				usage();
			break;
		case 'S':
			r.show_src = strtol(optarg, &end, 0);
			if (*end || r.show_src < 0)
				usage();
			break;
		case 'L': r.by_load = 1; break;
		case 'E': r.engines = 1; break;
		case 'C': cut_through = 1; break;
		case 'v': r.verbose = 1; break;
		default: usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	if (matrix && (longest || r.chunks > 1 || r.steps > 1))
		usage();
	if (!matrix && (r.tick_ps || r.watch >= 0 || r.show_src >= 0 ||
			r.engines))
		usage();
	if (matrix) {
		err = load_matrix(&r, matrix);
		if (err) {
			fprintf(stderr, "a2a_bound: %s: %s\n", matrix,
				strerror(-err));
			return 1;
		}
	}
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
		/* -m: the matrix's ranks are the first endpoints. */
		if (!r.mat || eps < r.n)
			r.ep[eps] = i;
		eps++;
		if (!r.mat)
			r.n = eps;
		if (dma)
			t->nodes[i].dma_engines = (uint32_t)dma;
	}
	if (r.n < 2 || eps < r.n) {
		fprintf(stderr, "a2a_bound: needs 2 endpoints or more (as many as the matrix's ranks)\n");
		return 1;
	}
	r.order = calloc((size_t)r.n * (r.n - 1), sizeof(*r.order));
	r.delay = calloc((size_t)r.n * (r.n - 1), sizeof(*r.delay));
	m = host_mtopo(t, cut_through);
	if (!r.order || !r.delay || !m)
		return 1;
	r.lead = lead;
	if ((r.watch >= 0 && (uint64_t)r.watch >= m->links_cap) ||
	    (r.show_src >= 0 && (uint64_t)r.show_src >= r.n))
		usage();
	if (r.mat) {
		r.piece = r.piece ? r.piece : t->segment_size;
		r.bytes = r.chunks = 0;
		for (size_t q = 0; q < (size_t)r.n * r.n; q++)
			r.bytes = r.mat[q] > r.bytes ? r.mat[q] : r.bytes;
		r.chunks = (r.bytes + r.piece - 1) / r.piece;
		err = plan_matrix(&r, &plan);
		r.steps = plan.nsteps;
		if (!err)
			err = run_plan(&r, m, &plan, &bound, &bound_lat);
		fdev_plan_free(&plan);
	} else {
		err = make_order(&r, longest);
		if (!err && lead)
			err = make_delay(&r);
		if (!err)
			err = run(&r, m, &bound, &bound_lat);
	}
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
