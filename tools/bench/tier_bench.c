// SPDX-License-Identifier: GPL-2.0
/*
 * tier_bench: schedules over memory tiers (docs/TIMING.md, "Memory
 * tiers") through the freestanding engine (kmod/model) in this process,
 * on the presets that have tiers, against the bounds the tiers' and
 * links' bandwidths set. Every figure is emulated time, exact and the
 * same on every run; the module runs the same engine.
 *
 *	tier_bench shift   [-s STEPS] [-S MIB,...]
 *	tier_bench preload [-s STEPS] [-W MIB] [-A KIB]
 *	tier_bench coe     [-E GB] [-b TOKENS] [-g TOKENS] [-p N,...]
 *
 * shift: T10's compute-shift loop (as fdev_shift(3)) on ipu-pod4 and
 *   ipu-pod4-hbm side by side: each step every IPU passes its partition
 *   to the next one; on ipu-pod4-hbm the partitions live in HBM, so
 *   each read and each write crosses an HBM port. Against the exchange
 *   bound (the partition over the IPU's links to its neighbour) and the
 *   HBM bound (the port carries the partition out and the neighbour's
 *   in).
 * preload: Elk's preload against execute on ipu-pod4-hbm: each step
 *   every IPU computes on a chunk of W of weights in its SRAM and shifts
 *   A of activations to its neighbour, while the next chunk is copied
 *   from HBM; serial, preload overlapped, and everything overlapped,
 *   against the roofline (steps x the largest of compute, W over the
 *   HBM port and A over the links).
 * coe: a Samba-CoE step on sn40l-node: the chosen expert's weights (E,
 *   tensor-parallel over the 8 sockets) copied from DDR to HBM, the
 *   router's tokens dispatched from socket 0 to the others, then g
 *   decode steps that each stream the socket's shard from HBM through
 *   SRAM (memory-bound: the dataflow pipeline computes as it streams).
 *   A hot expert (in HBM) against a cold one (in DDR) and one run from
 *   DDR, side by side, with the joules of each tier's port. Then the
 *   next expert's copy from DDR under the current one's decode of N
 *   tokens (-p): both cross the HBM port, and the copy is hidden once
 *   the decode outlasts it.
 *
 * A step is what fdev_shift(3) makes of one: its transfers are
 * submitted together and it ends at the last completion, or at the end
 * of its compute (a DELAY, which occupies no link) when later.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/icfab.h>

#include "host_model.h"

#define NO_LINK	ICFAB_MODEL_NO_LINK

struct sim {
	const char *name;
	struct topo *t;
	struct icfab_mtopo *m;
	struct icfab_engine_storage st;
	struct icfab_engine e;
	uint32_t n, ep[16];		/* endpoints: node ids */
	uint64_t key;			/* the next submission's */
	uint64_t now;			/* ps: where the last step ended */
	uint64_t finish;		/* ps: the last completion of a step */
	uint64_t group_end[2];		/* ps: the last of each group's */
	int failed;
	/* per transfer id in flight: what it was, how many times more */
	const struct xfer **what;
	uint32_t *again;
};

/*
 * One transfer of a step: endpoints by index, tiers by kind (0: plain),
 * submitted @delay ps after the step begins (after its compute: BSP),
 * and @repeat - 1 times more, each when the one before completes (0 and
 * 1: once). @group (0 or 1) says whose end s->group_end[] records.
 */
struct xfer {
	uint32_t src, src_tier, dst, dst_tier;
	uint64_t bytes, delay;
	uint32_t repeat, group;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: tier_bench shift [-s STEPS] [-S MIB,...]\n"
		"       tier_bench preload [-s STEPS] [-W MIB] [-A KIB]\n"
		"       tier_bench coe [-E GB] [-b TOKENS] [-g TOKENS] [-p N,...]\n");
	exit(2);
}

/* Load @preset with room for @xfers transfers of at most @bytes each. */
static int sim_open(struct sim *s, const char *preset, uint32_t xfers,
		    uint64_t bytes)
{
	struct topo_err err;
	uint64_t events;

	memset(s, 0, sizeof(*s));
	s->name = preset;
	if (topo_load_preset(preset, &s->t, &err) || topo_route(s->t, &err)) {
		fprintf(stderr, "tier_bench: %s: %s\n", preset, err.msg);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < s->t->nr_nodes && s->n < 16; i++)
		if (s->t->nodes[i].kind == ICFAB_NODE_ENDPOINT)
			s->ep[s->n++] = i;
	s->m = host_mtopo(s->t, 0);
	if (!s->m)
		return -ENOMEM;
	events = xfers * icfab_engine_events_needed(bytes,
						    s->t->segment_size);
	if (events > UINT32_MAX)
		return -E2BIG;
	s->what = calloc(xfers, sizeof(*s->what));
	s->again = calloc(xfers, sizeof(*s->again));
	if (!s->what || !s->again ||
	    host_storage(&s->st, s->m, xfers, (uint32_t)events))
		return -ENOMEM;
	return icfab_engine_init(&s->e, s->m, s->t->segment_size, &s->st);
}

/* The link id of the port of endpoint @i's tier of @kind, or NO_LINK. */
static uint32_t tier_link(const struct sim *s, uint32_t i, uint32_t kind)
{
	uint32_t ref;

	if (!kind)
		return NO_LINK;
	ref = s->t->nodes[s->ep[i]].tier[kind - 1];
	return ref ? ref - 1 : NO_LINK;
}

/* Submit @x at @at; its repeats are left to on_complete(). */
static void submit(struct sim *s, const struct xfer *x, uint64_t at,
		   uint32_t again)
{
	icfab_u32 id;
	int err = icfab_engine_submit_tiered(&s->e, s->ep[x->src],
			tier_link(s, x->src, x->src_tier), s->ep[x->dst],
			tier_link(s, x->dst, x->dst_tier), x->bytes, at,
			s->key++, &id);

	if (err) {
		fprintf(stderr, "tier_bench: %s: submit: %s\n", s->name,
			strerror(-err));
		exit(1);
	}
	s->what[id] = x;
	s->again[id] = again;
}

static int on_complete(void *arg, icfab_u32 xfer_id,
		       const struct icfab_xfer_result *res)
{
	struct sim *s = arg;
	const struct xfer *x = s->what[xfer_id];
	uint32_t again = s->again[xfer_id];

	if (res->finish_ps > s->finish)
		s->finish = res->finish_ps;
	if (res->finish_ps > s->group_end[x->group])
		s->group_end[x->group] = res->finish_ps;
	if (res->status)
		s->failed = res->status;
	else if (again)
		submit(s, x, res->finish_ps, again - 1);
	return 0;
}

/*
 * One step from s->now: each transfer goes at s->now + its delay, and
 * the step ends at the later of their last completion and s->now +
 * @compute. Returns the step's time.
 */
static uint64_t sim_step(struct sim *s, const struct xfer *x, uint32_t nx,
			 uint64_t compute)
{
	uint64_t start = s->now;

	s->finish = s->now + compute;
	s->group_end[0] = s->group_end[1] = s->now;
	for (uint32_t i = 0; i < nx; i++)
		submit(s, &x[i], start + x[i].delay,
		       x[i].repeat ? x[i].repeat - 1 : 0);
	if (icfab_engine_run_until(&s->e, ICFAB_ENGINE_NEVER, on_complete,
				   s) < 0 || s->failed) {
		fprintf(stderr, "tier_bench: %s: a transfer failed: %s\n",
			s->name, strerror(-s->failed));
		exit(1);
	}
	s->now = s->finish;
	return s->now - start;
}

static void sim_close(struct sim *s)
{
	host_storage_free(&s->st);
	topo_free(s->t);
	free(s->what);
	free(s->again);
}

/* Bytes/s from endpoint @a to endpoint @b over their direct links. */
static uint64_t pair_bw(const struct sim *s, uint32_t a, uint32_t b)
{
	uint64_t bw = 0;

	for (uint32_t l = 0; l < s->t->nr_links; l++)
		if (s->t->links[l].src_node == s->ep[a] &&
		    s->t->links[l].dst_node == s->ep[b])
			bw += s->t->links[l].bandwidth;
	return bw;
}

static uint64_t tier_bw(const struct sim *s, uint32_t i, uint32_t kind)
{
	return s->m->links[tier_link(s, i, kind)].bandwidth;
}

/* ps to move @bytes at @bw bytes/s. */
static double ps_at(uint64_t bytes, uint64_t bw)
{
	return (double)bytes * 1e12 / (double)bw;
}

/* ------------------------------------------------------------------ */
/* shift: ipu-pod4 against ipu-pod4-hbm                                */

/* @steps of the loop; the partitions in HBM when @hbm. */
static uint64_t shift_loop(struct sim *s, uint64_t bytes, unsigned int steps,
			   uint64_t compute, int overlap, int hbm)
{
	struct xfer x[16];
	uint64_t t = 0;

	for (uint32_t r = 0; r < s->n; r++)
		x[r] = (struct xfer){
			.src = r, .src_tier = hbm ? ICFAB_TIER_HBM : 0,
			.dst = (r + 1) % s->n,
			.dst_tier = hbm ? ICFAB_TIER_HBM : 0, .bytes = bytes,
			.delay = overlap ? 0 : compute };
	for (unsigned int k = 0; k < steps; k++)
		t += sim_step(s, x, s->n, compute);
	return t;
}

static int shift_main(unsigned int steps, const char *sizes)
{
	struct sim pod, hbm;
	char buf[128], *tok, *save = NULL;
	uint64_t xbw, hbw;

	snprintf(buf, sizeof(buf), "%s", sizes);
	if (sim_open(&pod, "ipu-pod4", 4, 1ULL << 30) ||
	    sim_open(&hbm, "ipu-pod4-hbm", 4, 1ULL << 30))
		return 1;
	xbw = pair_bw(&pod, 0, 1);
	hbw = tier_bw(&hbm, 0, ICFAB_TIER_HBM);
	printf("compute-shift, 4 IPUs, %u steps; exchange bound: the partition over %.0f GB/s to the neighbour; HBM bound: out and in through one %.0f GB/s port; times in us\n",
	       steps, xbw / 1e9, hbw / 1e9);
	printf("%9s %10s %-7s %11s %11s %10s %10s %10s %9s %9s\n",
	       "partition", "compute/st", "mode", "ipu-pod4", "pod4-hbm",
	       "hbm/pod4", "exchange", "HBM", "pod4:b/t", "hbm:b/t");
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t bytes = strtoull(tok, NULL, 0) << 20, one;
		double xb = steps * ps_at(bytes, xbw);
		double hb = steps * ps_at(2 * bytes, hbw);

		if (!bytes || bytes > 1ULL << 30)
			usage();
		/* ipu-pod4's shift alone sets the compute per step. */
		one = shift_loop(&pod, bytes, 1, 0, 0, 0);
		for (unsigned int c = 0; c < 3; c++)
			for (int ov = 0; ov < (c ? 2 : 1); ov++) {
				uint64_t C = c * one;
				uint64_t tp = shift_loop(&pod, bytes, steps, C,
							 ov, 0);
				uint64_t th = shift_loop(&hbm, bytes, steps, C,
							 ov, 1);
				double cb = (double)steps * C;
				double bp = xb > cb ? xb : cb;
				double bh = bp > hb ? bp : hb;

				printf("%5" PRIu64 " MiB %10.3f %-7s %11.3f %11.3f %10.4f %10.3f %10.3f %9.4f %9.4f\n",
				       bytes >> 20, C / 1e6,
				       ov ? "overlap" : "bsp", tp / 1e6,
				       th / 1e6, (double)th / tp, xb / 1e6,
				       hb / 1e6, bp / tp, bh / th);
			}
	}
	sim_close(&pod);
	sim_close(&hbm);
	return 0;
}

/* ------------------------------------------------------------------ */
/* preload: Elk's preload against execute on ipu-pod4-hbm              */

enum { SERIAL, PRELOAD, OVERLAP };

/*
 * @steps chunks: chunk k is copied from HBM into SRAM (the IPU's plain
 * memory), computed on for @compute while the activations go to the
 * neighbour. SERIAL: copy, compute, shift, one after the other.
 * PRELOAD: chunk k + 1's copy during step k's compute then shift (the
 * IPU's BSP step, Elk's preload). OVERLAP: copy, compute and shift of
 * a step all at once. Chunk 0's copy is a step of its own first.
 */
static uint64_t preload_run(struct sim *s, int mode, unsigned int steps,
			    uint64_t w, uint64_t a, uint64_t compute)
{
	/* x: the shifts, then the copies; sh: the shifts after compute */
	struct xfer x[32], sh[16];
	uint32_t n = s->n;
	uint64_t t = 0;

	for (uint32_t r = 0; r < n; r++) {
		x[r] = (struct xfer){ .src = r, .dst = (r + 1) % n,
				      .bytes = a,
				      .delay = mode == OVERLAP ? 0 : compute };
		x[n + r] = (struct xfer){ .src = r, .src_tier = ICFAB_TIER_HBM,
					  .dst = r, .bytes = w };
		sh[r] = x[r];
		sh[r].delay = compute;
	}
	if (mode != SERIAL)
		t += sim_step(s, x + n, n, 0);
	for (unsigned int k = 0; k < steps; k++) {
		int last = k + 1 == steps;

		if (mode == SERIAL) {
			t += sim_step(s, x + n, n, 0);
			t += sim_step(s, sh, n, compute);
		} else {
			/* the next chunk's copy with this step, if any */
			t += sim_step(s, x, last ? n : 2 * n, compute);
		}
	}
	return t;
}

static int preload_main(unsigned int steps, uint64_t w, uint64_t a)
{
	static const unsigned int ratio_pct[] = { 25, 50, 100, 200, 400 };
	struct sim s;
	uint64_t hbw, xbw;
	double th, tx;

	if (sim_open(&s, "ipu-pod4-hbm", 8, w > a ? w : a))
		return 1;
	hbw = tier_bw(&s, 0, ICFAB_TIER_HBM);
	xbw = pair_bw(&s, 0, 1);
	th = ps_at(w, hbw);
	tx = ps_at(a, xbw);
	printf("preload/execute on ipu-pod4-hbm, 4 IPUs, %u steps: a chunk of %" PRIu64 " KiB from a %.0f GB/s HBM port (%.3f us), %" PRIu64 " KiB of activations to the neighbour over %.0f GB/s (%.3f us); compute per step C as a share of the chunk's HBM time; roofline = steps x max(C, HBM, exchange); times in us\n",
	       steps, w >> 10, hbw / 1e9, th / 1e6, a >> 10, xbw / 1e9,
	       tx / 1e6);
	printf("%8s %10s %10s %10s %10s %10s %8s %8s %8s\n", "C/HBM",
	       "C (us)", "roofline", "serial", "preload", "overlap",
	       "ser:r/t", "pre:r/t", "ovl:r/t");
	for (unsigned int i = 0; i < sizeof(ratio_pct) / sizeof(ratio_pct[0]);
	     i++) {
		uint64_t c = (uint64_t)(th * ratio_pct[i] / 100);
		double step = c > th ? c : th, roof;
		uint64_t t[3];

		step = step > tx ? step : tx;
		roof = steps * step;
		for (int mode = 0; mode < 3; mode++)
			t[mode] = preload_run(&s, mode, steps, w, a, c);
		printf("%7u%% %10.3f %10.3f %10.3f %10.3f %10.3f %8.4f %8.4f %8.4f\n",
		       ratio_pct[i], c / 1e6, roof / 1e6, t[0] / 1e6,
		       t[1] / 1e6, t[2] / 1e6, roof / t[0], roof / t[1],
		       roof / t[2]);
	}
	sim_close(&s);
	return 0;
}

/* ------------------------------------------------------------------ */
/* coe: a Samba-CoE step on sn40l-node                                 */

/* Joules through every tier port of kind @kind since the engine began. */
static double tier_joules(const struct sim *s, uint32_t kind)
{
	double fj = 0;

	for (uint32_t l = s->t->nr_links; l < s->m->links_cap; l++)
		if (s->m->links[l].tier == kind)
			fj += (double)s->st.links[l].bytes * 8 *
			      s->m->links[l].fj_per_bit;
	return fj * 1e-15;
}

struct coe_result {
	uint64_t copy, dispatch, compute;	/* ps */
	double joules[4];			/* per tier kind */
};

enum { HOT, COLD, FROM_DDR };

static void coe_run(int mode, uint64_t shard, uint64_t hidden,
		    unsigned int gen, struct coe_result *res)
{
	struct sim s;
	struct xfer x[16];
	uint32_t n;

	if (sim_open(&s, "sn40l-node", 8, shard))
		exit(1);
	n = s.n;
	memset(res, 0, sizeof(*res));
	/* The chosen expert's shard from DDR into HBM on every socket. */
	if (mode == COLD) {
		for (uint32_t r = 0; r < n; r++)
			x[r] = (struct xfer){
				.src = r, .src_tier = ICFAB_TIER_DDR, .dst = r,
				.dst_tier = ICFAB_TIER_HBM, .bytes = shard };
		res->copy = sim_step(&s, x, n, 0);
	}
	/* The router on socket 0 sends the tokens to the other sockets. */
	for (uint32_t r = 1; r < n; r++)
		x[r - 1] = (struct xfer){
			.src = 0, .src_tier = ICFAB_TIER_SRAM, .dst = r,
			.dst_tier = ICFAB_TIER_SRAM, .bytes = hidden };
	res->dispatch = sim_step(&s, x, n - 1, 0);
	/* Decode: each token streams the shard through SRAM. */
	for (uint32_t r = 0; r < n; r++)
		x[r] = (struct xfer){
			.src = r, .dst = r, .dst_tier = ICFAB_TIER_SRAM,
			.src_tier = mode == FROM_DDR ? ICFAB_TIER_DDR :
						       ICFAB_TIER_HBM,
			.bytes = shard };
	for (unsigned int g = 0; g < gen; g++)
		res->compute += sim_step(&s, x, n, 0);
	for (uint32_t k = 1; k <= 3; k++)
		res->joules[k] = tier_joules(&s, k);
	sim_close(&s);
}

/*
 * The next expert's copy from DDR under the current one's decode of
 * @tokens steps (each socket streaming its shard from HBM, step after
 * step): both write or read through the HBM port. The decode alone,
 * then decode and copy submitted together; ps into @alone, @decode and
 * @copy (from the start to each one's end).
 */
static void coe_switch(uint64_t shard, unsigned int tokens, uint64_t *alone,
		       uint64_t *decode, uint64_t *copy)
{
	struct xfer x[16];
	struct sim s;
	uint64_t start;
	uint32_t n;

	if (sim_open(&s, "sn40l-node", 16, shard))
		exit(1);
	n = s.n;
	for (uint32_t r = 0; r < n; r++) {
		x[r] = (struct xfer){
			.src = r, .src_tier = ICFAB_TIER_HBM, .dst = r,
			.dst_tier = ICFAB_TIER_SRAM, .bytes = shard,
			.repeat = tokens, .group = 0 };
		x[n + r] = (struct xfer){
			.src = r, .src_tier = ICFAB_TIER_DDR, .dst = r,
			.dst_tier = ICFAB_TIER_HBM, .bytes = shard,
			.group = 1 };
	}
	*alone = sim_step(&s, x, n, 0);
	start = s.now;
	sim_step(&s, x, 2 * n, 0);
	*decode = s.group_end[0] - start;
	*copy = s.group_end[1] - start;
	sim_close(&s);
}

static int coe_main(uint64_t expert, unsigned int tokens, unsigned int gen,
		    const char *prev)
{
	char buf[128], *tok, *save = NULL;
	static const char *const names[] = { "hot (in HBM)", "cold (DDR->HBM)",
					     "from DDR" };
	struct coe_result r[3];
	struct sim s;
	uint64_t shard, hidden = (uint64_t)tokens * 4096 * 2, ddr, hbm;
	uint32_t n;

	if (sim_open(&s, "sn40l-node", 1, 1))
		return 1;
	n = s.n;
	ddr = tier_bw(&s, 0, ICFAB_TIER_DDR);
	hbm = tier_bw(&s, 0, ICFAB_TIER_HBM);
	sim_close(&s);
	shard = expert / n;
	for (int mode = 0; mode < 3; mode++)
		coe_run(mode, shard, hidden, gen, &r[mode]);
	printf("Samba-CoE step on sn40l-node: an expert of %.2f GB over %u sockets (%.3f GB each), %u tokens (%" PRIu64 " KiB of bf16 hidden states) from the router, %u decode steps; per socket DDR %.0f GB/s, HBM %.0f GB/s; times in ms\n",
	       expert / 1e9, n, shard / 1e9, tokens, hidden >> 10, gen,
	       ddr / 1e9, hbm / 1e9);
	printf("%-16s %10s %10s %10s %10s %9s %9s %9s %9s %8s\n", "expert",
	       "copy", "dispatch", "decode", "total", "/hot", "SRAM J",
	       "HBM J", "DDR J", "ms/token");
	for (int mode = 0; mode < 3; mode++) {
		uint64_t tot = r[mode].copy + r[mode].dispatch +
			       r[mode].compute;
		uint64_t hot = r[0].copy + r[0].dispatch + r[0].compute;

		printf("%-16s %10.3f %10.3f %10.3f %10.3f %9.3f %9.3f %9.3f %9.3f %8.3f\n",
		       names[mode], r[mode].copy / 1e9, r[mode].dispatch / 1e9,
		       r[mode].compute / 1e9, tot / 1e9, (double)tot / hot,
		       r[mode].joules[ICFAB_TIER_SRAM],
		       r[mode].joules[ICFAB_TIER_HBM],
		       r[mode].joules[ICFAB_TIER_DDR],
		       r[mode].compute / 1e9 / gen);
	}
	printf("bounds: copy %.3f ms (the shard over the DDR port), decode %.3f ms/token (over the HBM port), %.3f ms/token from DDR\n",
	       ps_at(shard, ddr) / 1e9, ps_at(shard, hbm) / 1e9,
	       ps_at(shard, ddr) / 1e9);
	printf("the next expert's DDR->HBM copy under the current expert's decode of N tokens (both through each socket's HBM port), ms:\n");
	printf("%6s %14s %14s %10s %12s %10s %12s\n", "N", "decode alone",
	       "decode+copy", "slowdown", "copy ends", "copy alone",
	       "exposed");
	snprintf(buf, sizeof(buf), "%s", prev);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned int p = strtoul(tok, NULL, 0);
		uint64_t alone, dec, cp;

		if (!p || p > 1024)
			usage();
		coe_switch(shard, p, &alone, &dec, &cp);
		printf("%6u %14.3f %14.3f %10.4f %12.3f %10.3f %12.3f\n", p,
		       alone / 1e9, dec / 1e9, (double)dec / alone, cp / 1e9,
		       r[COLD].copy / 1e9,
		       cp > dec ? (cp - dec) / 1e9 : 0.0);
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int steps = 8, tokens = 8, gen = 4;
	uint64_t w = 8ULL << 20, a = 256ULL << 10, expert = 13480000000ULL;
	char sizes[128] = "1,4,16", prev[128] = "4,8,12,16";
	const char *what;
	int opt;

	if (argc < 2)
		usage();
	what = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "s:S:W:A:E:b:g:p:")) != -1) {
		switch (opt) {
		case 's': steps = strtoul(optarg, NULL, 0); break;
		case 'S': snprintf(sizes, sizeof(sizes), "%s", optarg); break;
		case 'W': w = strtoull(optarg, NULL, 0) << 20; break;
		case 'A': a = strtoull(optarg, NULL, 0) << 10; break;
		case 'E': expert = (uint64_t)(strtod(optarg, NULL) * 1e9); break;
		case 'b': tokens = strtoul(optarg, NULL, 0); break;
		case 'g': gen = strtoul(optarg, NULL, 0); break;
		case 'p': snprintf(prev, sizeof(prev), "%s", optarg); break;
		default: usage();
		}
	}
	if (!steps || !w || !a || !expert || !tokens || !gen ||
	    w > 1ULL << 30 || a > 1ULL << 30 || expert > 1ULL << 40)
		usage();
	if (!strcmp(what, "shift"))
		return shift_main(steps, sizes);
	if (!strcmp(what, "preload"))
		return preload_main(steps, w, a);
	if (!strcmp(what, "coe"))
		return coe_main(expert, tokens, gen, prev);
	usage();
}
