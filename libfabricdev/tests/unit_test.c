// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests (TAP): dtype conversions, layout, collective schedules
 * and MoE dispatch/combine run in host memory (the host communicator runs
 * the same plans as the fabric, as memcpy), checked element by element
 * against references; closed forms; bad arguments.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <icfab/topo.h>

#include "cost.h"
#include "fabricdev.h"
#include "fabricdev_test.h"
#include "lead.h"
#include "moe.h"
#include "rings.h"
#include "plan.h"
#include "tap.h"

static int dev_mode;

/* Host communicator, or with --device one process driving n endpoints. */
static int mk(unsigned int n, uint64_t ws, struct fdev_comm **c)
{
	if (dev_mode)
		return fdev_comm_init_local(NULL, n, NULL, ws, 0, c);
	return __fdev_comm_init_host(n, ws, c);
}

static uint64_t seed = 88172645463325252ULL;
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static void test_dtype(void)
{
	int bad = 0;

	for (uint32_t v = 0; v < 65536; v++) {
		float f = fdev_bf16_to_f32((uint16_t)v);

		if (!isnan(f) && fdev_f32_to_bf16(f) != v)
			bad++;
		f = fdev_f16_to_f32((uint16_t)v);
		if (!isnan(f) && fdev_f32_to_f16(f) != v)
			bad++;
	}
	ok(!bad, "bf16 and fp16 round-trip every non-NaN value (%d bad)", bad);
	ok(fdev_f32_to_bf16(1.00390625f) == 0x3f80, "bf16 ties round to even");
	ok(fdev_f32_to_f16(65520.0f) == 0x7c00 && fdev_f32_to_f16(1e-8f) == 0,
	   "fp16 overflow to inf, underflow to zero");
	bad = 0;
	for (uint32_t v = 0; v < 256; v++) {
		float f = fdev_fp8_to_f32((uint8_t)v);

		if (!isnan(f) && fdev_f32_to_fp8(f) != v && !(f == 0 && v == 0x80))
			bad++;
	}
	ok(!bad, "fp8 e4m3 round-trips every finite value (%d bad)", bad);
	ok(fdev_fp8_to_f32(0x7e) == 448.0f && fdev_f32_to_fp8(1000.0f) == 0x7e &&
	   fdev_fp8_to_f32(0x01) == ldexpf(1, -9), "fp8 max 448, saturates, subnormal 2^-9");
}

static void test_layout(void)
{
	int64_t idx[] = { 0, 1, 3, -1, -1, -1, 2, 3, 0 };	/* T=3, k=3 */
	uint64_t tpr[2], tpe[4];
	uint8_t tir[6];
	struct fdev_moe_layout_out o = { tpr, tpe, tir };
	int64_t badidx[] = { 4 };

	ok(!fdev_moe_layout(idx, 3, 3, 4, 2, &o), "layout runs");
	ok(tpr[0] == 2 && tpr[1] == 2, "tokens per rank counts a token once per rank");
	ok(tpe[0] == 2 && tpe[1] == 1 && tpe[2] == 1 && tpe[3] == 2, "tokens per expert");
	ok(!memcmp(tir, (uint8_t[]){ 1, 1, 0, 0, 1, 1 }, 6), "is-token-in-rank");
	ok(fdev_moe_layout(badidx, 1, 1, 4, 2, &o) == -EINVAL, "expert out of range: -EINVAL");
	ok(fdev_moe_layout(idx, 3, 3, 5, 2, &o) == -EINVAL, "experts not divisible by ranks: -EINVAL");
	ok(fdev_moe_layout(NULL, 3, 3, 4, 2, &o) == -EINVAL, "NULL indices: -EINVAL");
}

static float val(unsigned int r, uint64_t i)
{
	return (float)((r * 7 + i * 3) % 17) - 8.0f;	/* exact in bf16 */
}

/* Every rank r's @len inputs val(r, 0..@len - 1), rank after rank. */
static void fill_ranks(float *in, unsigned int n, uint64_t len)
{
	for (unsigned int r = 0; r < n; r++)
		for (uint64_t i = 0; i < len; i++)
			in[r * len + i] = val(r, i);
}

/* Input @i summed over @n ranks, in rank order. */
static float sum_of_ranks(unsigned int n, uint64_t i)
{
	float s = 0;

	for (unsigned int q = 0; q < n; q++)
		s += val(q, i);
	return s;
}

/*
 * The cables of an X x Y chiplet mesh between ranks (row-major), and
 * SuperMesh's extra boundary cables (lib/topo/topo_gen.c): variant 1
 * (Bi) doubles every boundary cable, 2 (Alter) every other one along
 * each side from a corner. Returns the number of cables.
 */
static unsigned int grid_links(unsigned int X, unsigned int Y, int variant,
			       uint32_t *e)
{
	const unsigned int first[4] = { 0, X - 1, (Y - 1) * X, 0 };
	const unsigned int stride[4] = { 1, X, 1, X };
	const unsigned int len[4] = { X, Y, X, Y };
	unsigned int n = 0;

	for (unsigned int y = 0; y < Y; y++)
		for (unsigned int x = 0; x < X; x++) {
			if (x + 1 < X) {
				e[2 * n] = y * X + x;
				e[2 * n++ + 1] = y * X + x + 1;
			}
			if (y + 1 < Y) {
				e[2 * n] = y * X + x;
				e[2 * n++ + 1] = (y + 1) * X + x;
			}
		}
	for (unsigned int sd = 0; variant && sd < 4; sd++)
		for (unsigned int i = 0; i + 1 < len[sd]; i++) {
			if (variant == 2 && i % 2)
				continue;
			e[2 * n] = first[sd] + i * stride[sd];
			e[2 * n++ + 1] = first[sd] + (i + 1) * stride[sd];
		}
	return n;
}

/* Cables between a and b among @nl. */
static unsigned int cables(const uint32_t *e, unsigned int nl, uint32_t a,
			   uint32_t b)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < nl; i++)
		k += (e[2 * i] == a && e[2 * i + 1] == b) ||
		     (e[2 * i] == b && e[2 * i + 1] == a);
	return k;
}

/* @k cycles through all @n ranks, over cables, none used twice. */
static int cycles_valid(const uint32_t *cyc, int k, unsigned int n,
			const uint32_t *e, unsigned int nl)
{
	uint8_t *use = calloc((size_t)n * n, 1), *seen = malloc(n);
	int good = use && seen;

	for (int j = 0; good && j < k; j++) {
		memset(seen, 0, n);
		for (unsigned int i = 0; good && i < n; i++) {
			uint32_t a = cyc[j * n + i], b = cyc[j * n + (i + 1) % n];

			good = a < n && b < n && !seen[a];
			if (!good)
				break;
			seen[a] = 1;
			use[a * n + b]++;
			use[b * n + a]++;
			good = use[a * n + b] <= cables(e, nl, a, b);
		}
	}
	free(use);
	free(seen);
	return good;
}

/*
 * fdev_plan_only(): an all-to-all's plan (direct, which builds one
 * rank's part alone, and ring) for one rank is the whole plan's
 * transfers from or to it and its actions, in the same order, with as
 * many steps, after interleaving too.
 */
static void test_plan_only(void)
{
	static const int algos[] = { FDEV_ALGO_DIRECT, FDEV_ALGO_RING };
	int good = 1;

	for (unsigned int n = 2; n <= 9; n += 7)
		for (unsigned int a = 0; a < 2; a++)
			for (unsigned int r = 0; r < n; r++) {
				struct fdev_coll_layout lo;
				struct fdev_plan whole, one;
				size_t j = 0, m = 0;

				fdev_plan_init(&whole);
				fdev_plan_init(&one);
				fdev_plan_only(&one, r, 1);
				good &= !fdev_plan_all_to_all(&whole, n, 5000, algos[a], 0, &lo) &&
					!fdev_plan_all_to_all(&one, n, 5000, algos[a], 0, &lo) &&
					!fdev_plan_finish(&whole) && !fdev_plan_finish(&one) &&
					!fdev_plan_interleave(&whole, 4096, 4096) &&
					!fdev_plan_interleave(&one, 4096, 4096);
				good &= whole.nsteps == one.nsteps;
				for (size_t i = 0; i < whole.nx; i++) {
					const struct fdev_xfer *x = &whole.x[i];

					if (x->src != r && x->dst != r)
						continue;
					good &= j < one.nx && one.x[j].src == x->src &&
						one.x[j].dst == x->dst &&
						one.x[j].step == x->step &&
						one.x[j].src_off == x->src_off &&
						one.x[j].dst_off == x->dst_off &&
						one.x[j].len == x->len;
					j++;
				}
				for (size_t i = 0; i < whole.na; i++)
					m += whole.a[i].rank == r;
				good &= j == one.nx && m == one.na;
				fdev_plan_free(&whole);
				fdev_plan_free(&one);
			}
	ok(good, "a plan kept to one rank: the whole plan's part of that rank, in order, same steps");
}

/*
 * Run dataflow plan @p as fdev_plan_run_gated() may: step 0, then any
 * step whose feeders all landed, picked at random; each step's actions
 * before its transfers (acts_first). Returns the steps run, or -1.
 */
static long flow_exec(const struct fdev_plan *p, uint8_t *const *ws,
		      unsigned int n)
{
	uint32_t ns = p->flow_steps, *gate = calloc(ns, sizeof(*gate));
	uint32_t *readyq = calloc(ns, sizeof(*readyq)), nready = 1;
	size_t *first = calloc(ns + 1, sizeof(*first));
	long done = 0;

	if (!gate || !readyq || !first || !p->acts_first)
		goto out;
	for (size_t i = 0, s = 0; s <= ns; s++) {
		while (i < p->nx && p->x[i].step < s)
			i++;
		first[s] = i;
	}
	for (size_t i = 0; i < p->nx; i++) {
		uint32_t f = (uint32_t)p->feeds[p->x[i].pad];

		if (f != UINT32_MAX && (f <= p->x[i].step || f >= ns))
			goto out;
		if (f != UINT32_MAX)
			gate[f]++;
	}
	readyq[0] = 0;
	for (uint32_t s = 1; s < ns; s++)
		if (!gate[s])
			readyq[nready++] = s;
	while (nready) {
		/* step 0 first, as the runner posts it */
		uint32_t k = done ? (uint32_t)(rnd() % nready) : 0, s = readyq[k];

		readyq[k] = readyq[--nready];
		for (unsigned int r = 0; r < n; r++)
			if (fdev_plan_apply(p, s, r, ws[r]))
				goto out;
		for (size_t i = first[s]; i < first[s + 1]; i++) {
			const struct fdev_xfer *x = &p->x[i];
			uint32_t f = (uint32_t)p->feeds[x->pad];

			memcpy(ws[x->dst] + x->dst_off, ws[x->src] + x->src_off,
			       x->len);
			if (f != UINT32_MAX && !--gate[f])
				readyq[nready++] = f;
		}
		done++;
	}
out:
	free(gate);
	free(readyq);
	free(first);
	return done;
}

/* Dataflow rings (rings.c): the sums and gathers, whatever order runs them. */
static void test_rings_flow(void)
{
	uint32_t e[2 * 512], cyc[4 * 64];
	unsigned int n = 16;

	for (int v = 0; v < 2; v++) {
		unsigned int nl = grid_links(4, 4, v, e);
		int k = fdev_rings_find(16, nl, e, 4, cyc);

		for (unsigned int cnt = 1; cnt <= 1100; cnt = cnt * 7 + 3)
			for (int op = 0; op < 2; op++) {
				struct fdev_coll_layout lo;
				struct fdev_plan p;
				uint8_t *ws[16];
				long steps = -1;
				int err, bad = 0;

				fdev_plan_init(&p);
				err = op ? fdev_plan_rings_all_gather(&p, n, cnt * 4, cyc,
								      2 * k, &lo, 1, 256) :
					   fdev_plan_rings_reduce_scatter(&p, n, cnt, FDEV_F32,
									  cyc, 2 * k, &lo, 1, 256);
				for (unsigned int r = 0; r < n; r++) {
					ws[r] = calloc(1, p.ws_need + 64);
					if (!ws[r])
						err = -ENOMEM;
				}
				for (unsigned int r = 0; !err && r < n; r++) {
					float *in = (float *)(ws[r] + lo.send_off);

					for (unsigned int i = 0; i < (op ? cnt : n * cnt); i++)
						in[i] = val(r, i);
				}
				if (!err && p.feeds)
					steps = flow_exec(&p, ws, n);
				else if (!err)	/* too small to cut: the steps */
					steps = fdev_plan_exec_host(&p, ws) ? -1 :
						(long)(p.flow_steps = p.nsteps);
				for (unsigned int r = 0; !err && r < n; r++) {
					float *out = (float *)(ws[r] + lo.recv_off);

					for (unsigned int i = 0; i < (op ? n * cnt : cnt); i++)
						bad += out[i] != (op ? val(i / cnt, i % cnt) :
								  sum_of_ranks(n, r * cnt + i));
				}
				ok(!err && steps == (long)p.flow_steps && !bad,
				   "dataflow rings %s, %d rings, count %u: %ld of %u steps, %d bad",
				   op ? "all-gather" : "reduce-scatter", 2 * k, cnt, steps,
				   p.flow_steps, bad);
				for (unsigned int r = 0; r < n; r++)
					free(ws[r]);
				fdev_plan_free(&p);
			}
	}
}

/* Element @i of @dtype at @b, as a float; and the other way. */
static float elem_get(const uint8_t *b, uint64_t i, int dtype)
{
	switch (dtype) {
	case FDEV_BF16:
		return fdev_bf16_to_f32(((const uint16_t *)b)[i]);
	case FDEV_I32:
		return (float)((const int32_t *)b)[i];
	default:
		return ((const float *)b)[i];
	}
}

static void elem_set(uint8_t *b, uint64_t i, int dtype, float v)
{
	switch (dtype) {
	case FDEV_BF16:
		((uint16_t *)b)[i] = fdev_f32_to_bf16(v);
		break;
	case FDEV_I32:
		((int32_t *)b)[i] = (int32_t)v;
		break;
	default:
		((float *)b)[i] = v;
	}
}

/*
 * Dataflow rings' all-reduce (rings.c): a reduce-scatter chained into
 * an all-gather piece by piece, whatever order the gates open in; every
 * element of every rank's output the sum over the ranks, in f32, bf16
 * and i32, counts that leave the rings' shares and the ranks' blocks
 * uneven. The smallest have blocks of no element and go in steps.
 */
static void test_rings_flow_ar(void)
{
	static const int dts[] = { FDEV_F32, FDEV_BF16, FDEV_I32 };
	static const char *const dn[] = { "f32", "bf16", "i32" };
	uint32_t e[2 * 512], cyc[4 * 64];
	unsigned int n = 16;

	for (int v = 0; v < 2; v++) {
		unsigned int nl = grid_links(4, 4, v, e);
		int k = fdev_rings_find(16, nl, e, 4, cyc);

		for (unsigned int c1 = 1; c1 <= 1100; c1 = c1 * 7 + 3)
			for (int d = 0; d < 3; d++) {
				uint64_t cnt = n * c1 + 3, sent = 0;
				size_t es = fdev_dtype_size(dts[d]);
				struct fdev_coll_layout lo;
				struct fdev_plan p;
				uint8_t *ws[16];
				long steps = -1;
				int err, bad = 0;

				fdev_plan_init(&p);
				err = fdev_plan_rings_all_reduce(&p, n, cnt, dts[d], cyc,
								 2 * k, &lo, 1, 256);
				for (size_t i = 0; i < p.nx; i++)
					sent += p.x[i].len;
				for (unsigned int r = 0; r < n; r++) {
					ws[r] = calloc(1, p.ws_need + 64);
					if (!ws[r])
						err = -ENOMEM;
				}
				for (unsigned int r = 0; !err && r < n; r++)
					for (uint64_t i = 0; i < cnt; i++)
						elem_set(ws[r] + lo.send_off, i, dts[d],
							 val(r, i));
				if (!err && p.feeds)
					steps = flow_exec(&p, ws, n);
				else if (!err)	/* too small to cut: the steps */
					steps = fdev_plan_exec_host(&p, ws) ? -1 :
						(long)(p.flow_steps = p.nsteps);
				for (unsigned int r = 0; !err && r < n; r++)
					for (uint64_t i = 0; i < cnt; i++)
						bad += elem_get(ws[r] + lo.recv_off, i,
								dts[d]) !=
						       sum_of_ranks(n, i);
				ok(!err && steps == (long)p.flow_steps && !bad,
				   "dataflow rings all-reduce %s, %d rings, count %llu: %s, %ld of %u steps, %d bad",
				   dn[d], 2 * k, (unsigned long long)cnt,
				   p.feeds ? "dataflow" : "steps", steps, p.flow_steps, bad);
				ok(!err && sent == 2 * (uint64_t)(n - 1) * cnt * es,
				   "dataflow rings all-reduce %s, %d rings, count %llu: %llu bytes sent, 2 (n - 1) S",
				   dn[d], 2 * k, (unsigned long long)cnt,
				   (unsigned long long)sent);
				for (unsigned int r = 0; r < n; r++)
					free(ws[r]);
				fdev_plan_free(&p);
			}
	}
}

static void test_rings(void)
{
	static const char *const vn[] = { "mesh", "SuperMesh Bi", "SuperMesh Alter" };
	uint32_t e[2 * 512], cyc[4 * 64];
	unsigned int n = 16, nl;
	struct fdev_comm *c;

	for (int v = 0; v < 3; v++) {
		int k;

		nl = grid_links(4, 4, v, e);
		k = fdev_rings_find(16, nl, e, 4, cyc);
		ok(k == (v ? 2 : 1) && cycles_valid(cyc, k, 16, e, nl),
		   "4x4 %s: %d cycles through all 16 ranks sharing no cable", vn[v], k);
	}
	for (int v = 0; v < 3; v++) {
		int k;

		nl = grid_links(8, 8, v, e);
		k = fdev_rings_find(64, nl, e, 4, cyc);
		/* The budget ends the search for a second cycle on SuperMesh. */
		ok(k >= 1 && cycles_valid(cyc, k, 64, e, nl),
		   "8x8 %s: the bounded search ends, with %d valid cycles", vn[v], k);
	}
	nl = grid_links(4, 4, 1, e);
	e[2 * nl] = 3;
	e[2 * nl + 1] = 16;
	ok(fdev_rings_find(16, nl + 1, e, 4, cyc) == -EINVAL, "a rank out of range: -EINVAL");

	/* Plans: every byte once, neighbours only, one transfer per cable. */
	{
		int k = fdev_rings_find(16, nl, e, 4, cyc);
		struct fdev_coll_layout lo;
		struct fdev_plan p;
		uint64_t sum = 0, cnt = 1000;
		int good = 1;

		fdev_plan_init(&p);
		ok(!fdev_plan_rings_all_reduce(&p, 16, cnt, FDEV_F32, cyc, 2 * k, &lo, 0, 0),
		   "rings all-reduce plan builds");
		for (size_t i = 0; i < p.nx; i++) {
			unsigned int same = 0;

			sum += p.x[i].len;
			for (size_t j = 0; j < p.nx; j++)
				same += p.x[j].step == p.x[i].step &&
					p.x[j].src == p.x[i].src &&
					p.x[j].dst == p.x[i].dst;
			good &= same <= cables(e, nl, p.x[i].src, p.x[i].dst);
		}
		ok(good && sum == 2 * 15 * cnt * 4,
		   "all-reduce: %llu bytes sent (2 (n-1) S), each step's transfers on their own cables",
		   (unsigned long long)sum);
		fdev_plan_free(&p);
	}

	if (mk(n, 1 << 20, &c)) {
		ok(0, "host comm");
		return;
	}
	{
		float *in = malloc(n * n * 7 * 4), *out = malloc(n * n * 7 * 4);

		FILE *cap = tmpfile();
		char msg[256] = "";
		int saved = -1, err;

		fill_ranks(in, n, 7);
		/* what the library says on stderr, the first time */
		fflush(stderr);
		if (cap) {
			saved = dup(2);
			dup2(fileno(cap), 2);
		}
		err = fdev_all_reduce(c, in, out, 7, FDEV_F32, FDEV_ALGO_RINGS);
		if (saved >= 0) {
			fflush(stderr);
			dup2(saved, 2);
			close(saved);
			rewind(cap);
			if (!fgets(msg, sizeof(msg), cap))
				msg[0] = 0;
		}
		if (cap)
			fclose(cap);
		ok(err == -EOPNOTSUPP, "rings without links: -EOPNOTSUPP");
		ok(strstr(msg, "FDEV_ALGO_RINGS") && strstr(msg, "fdev_comm_set_links"),
		   "rings without links: the library says why (%.*s)",
		   (int)strcspn(msg, "\n"), msg);
		ok(!fdev_all_reduce(c, in, out, 7, FDEV_F32, FDEV_ALGO_AUTO) &&
		   out[3] == sum_of_ranks(n, 3), "auto without links falls back (the ring)");
		free(in);
		free(out);
	}
	ok(fdev_comm_set_links(c, nl, e) == 4, "set_links: SuperMesh Bi 4x4 gives 4 rings");
	for (int a = 0; a < 2; a++) {
		int algo = a ? FDEV_ALGO_AUTO : FDEV_ALGO_RINGS;
		const char *an = a ? "auto" : "rings";

		for (unsigned int cnt = 1; cnt <= 37; cnt += 12) {
			float *in = malloc(n * n * cnt * 4), *out = malloc(n * n * cnt * 4);
			int err, bad = 0;

			fill_ranks(in, n, n * cnt);
			err = fdev_all_reduce(c, in, out, n * cnt, FDEV_F32, algo);
			for (unsigned int r = 0; r < n; r++)
				for (unsigned int i = 0; i < n * cnt; i++)
					bad += out[r * n * cnt + i] != sum_of_ranks(n, i);
			ok(!err && !bad, "%s all-reduce n=16 count=%u (%d, %d bad)", an, n * cnt, err, bad);
			bad = 0;
			err = fdev_reduce_scatter(c, in, out, cnt, FDEV_F32, algo);
			for (unsigned int r = 0; r < n; r++)
				for (unsigned int i = 0; i < cnt; i++)
					bad += out[r * cnt + i] != sum_of_ranks(n, r * cnt + i);
			ok(!err && !bad, "%s reduce-scatter n=16 count=%u (%d, %d bad)", an, cnt, err, bad);
			bad = 0;
			fill_ranks(in, n, cnt);
			err = fdev_all_gather(c, in, out, cnt, FDEV_F32, algo);
			for (unsigned int r = 0; r < n; r++)
				for (unsigned int q = 0; q < n; q++)
					for (unsigned int i = 0; i < cnt; i++)
						bad += out[(r * n + q) * cnt + i] != val(q, i);
			ok(!err && !bad, "%s all-gather n=16 count=%u (%d, %d bad)", an, cnt, err, bad);
			free(in);
			free(out);
		}
	}
	{
		float in[16 * 4], out[16 * 4];

		ok(fdev_all_to_all(c, in, out, 1, FDEV_F32, FDEV_ALGO_RINGS) == -EOPNOTSUPP &&
		   fdev_broadcast(c, in, out, 1, FDEV_F32, 0, FDEV_ALGO_RINGS) == -EOPNOTSUPP,
		   "all-to-all and broadcast have no rings: -EOPNOTSUPP");
	}
	/* A plain mesh: one cycle, two rings, still offered. */
	nl = grid_links(4, 4, 0, e);
	ok(fdev_comm_set_links(c, nl, e) == 2, "set_links: the plain 4x4 mesh gives 2 rings");
	ok(fdev_comm_set_links(c, 0, NULL) == 0 &&
	   fdev_all_gather(c, NULL, NULL, 1, FDEV_F32, FDEV_ALGO_RINGS) == -EOPNOTSUPP,
	   "no links: none");
	fdev_comm_destroy(c);
}

/*
 * Whether libfabricdev offers algorithm @a for operation @op ("ar",
 * "rs", "ag", "a2a", "bc"): the reduce-scatter and all-gather have no
 * tree and no hier, the all-to-all no tree, the broadcast no hier. What
 * is not offered must be -EOPNOTSUPP, and what is must run.
 */
static int offered(const char *op, int a)
{
	if (!strcmp(op, "rs") || !strcmp(op, "ag"))
		return a != FDEV_ALGO_TREE && a != FDEV_ALGO_HIER;
	if (!strcmp(op, "a2a"))
		return a != FDEV_ALGO_TREE;
	if (!strcmp(op, "bc"))
		return a != FDEV_ALGO_HIER;
	return 1;
}

static void test_colls(void)
{
	const char *an[] = { "auto", "ring", "tree", "direct", "hier" };
	unsigned int shapes[][2] = { { 1, 5 }, { 2, 7 }, { 3, 10 }, { 4, 16 }, { 8, 33 } };

	for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
		unsigned int n = shapes[si][0], cnt = shapes[si][1];
		struct fdev_comm *c;
		float *in = malloc(n * n * cnt * 4), *out = malloc(n * n * cnt * 4);
		uint16_t *bin = malloc(n * cnt * 2), *bout = malloc(n * cnt * 2);

		if (mk(n, 1 << 20, &c)) {
			ok(0, "host comm");
			return;
		}
		if (n % 2 == 0)
			fdev_comm_set_node_size(c, 2);
		for (int a = 0; a <= FDEV_ALGO_HIER; a++) {
			int err, bad = 0;

			/* all-reduce fp32 */
			fill_ranks(in, n, cnt);
			err = fdev_all_reduce(c, in, out, cnt, FDEV_F32, a);
			if (!offered("ar", a)) {
				ok(err == -EOPNOTSUPP, "all-reduce %s n=%u: not offered (%d)", an[a], n, err);
			} else {
				for (unsigned int r = 0; r < n; r++)
					for (unsigned int i = 0; i < cnt; i++)
						bad += out[r * cnt + i] !=
						       sum_of_ranks(n, i);
				ok(!err && !bad, "all-reduce f32 %s n=%u count=%u (%d, %d bad)",
				   an[a], n, cnt, err, bad);
			}
			/* all-reduce bf16 */
			for (unsigned int r = 0; r < n; r++)
				for (unsigned int i = 0; i < cnt; i++)
					bin[r * cnt + i] = fdev_f32_to_bf16(val(r, i));
			err = fdev_all_reduce(c, bin, bout, cnt, FDEV_BF16, a);
			if (!err) {
				bad = 0;
				for (unsigned int r = 0; r < n; r++)
					for (unsigned int i = 0; i < cnt; i++)
						bad += fdev_bf16_to_f32(bout[r * cnt + i]) !=
						       sum_of_ranks(n, i);
				ok(!bad, "all-reduce bf16 %s n=%u (%d bad)", an[a], n, bad);
			} else {
				ok(0, "all-reduce bf16 %s n=%u: %d", an[a], n, err);
			}
			/* reduce-scatter */
			fill_ranks(in, n, n * cnt);
			err = fdev_reduce_scatter(c, in, out, cnt, FDEV_F32, a);
			if (!err) {
				bad = 0;
				for (unsigned int r = 0; r < n; r++)
					for (unsigned int i = 0; i < cnt; i++)
						bad += out[r * cnt + i] !=
						       sum_of_ranks(n, r * cnt + i);
				ok(!bad && offered("rs", a), "reduce-scatter %s n=%u (%d bad)", an[a], n, bad);
			} else {
				ok(err == -EOPNOTSUPP && !offered("rs", a), "reduce-scatter %s: %d", an[a], err);
			}
			/* all-gather (bytes of fp32) */
			fill_ranks(in, n, cnt);
			err = fdev_all_gather(c, in, out, cnt, FDEV_F32, a);
			if (!err) {
				bad = 0;
				for (unsigned int r = 0; r < n; r++)
					for (unsigned int q = 0; q < n; q++)
						for (unsigned int i = 0; i < cnt; i++)
							bad += out[(r * n + q) * cnt + i] != val(q, i);
				ok(!bad && offered("ag", a), "all-gather %s n=%u (%d bad)", an[a], n, bad);
			} else {
				ok(err == -EOPNOTSUPP && !offered("ag", a), "all-gather %s: %d", an[a], err);
			}
			/* all-to-all */
			fill_ranks(in, n, n * cnt);
			err = fdev_all_to_all(c, in, out, cnt, FDEV_F32, a);
			if (!err) {
				bad = 0;
				for (unsigned int r = 0; r < n; r++)
					for (unsigned int q = 0; q < n; q++)
						for (unsigned int i = 0; i < cnt; i++)
							bad += out[(r * n + q) * cnt + i] !=
							       val(q, r * cnt + i);
				ok(!bad && offered("a2a", a), "all-to-all %s n=%u (%d bad)", an[a], n, bad);
			} else {
				ok(err == -EOPNOTSUPP && !offered("a2a", a), "all-to-all %s: %d", an[a], err);
			}
			/* broadcast from the last rank */
			for (unsigned int r = 0; r < n; r++)
				for (unsigned int i = 0; i < cnt; i++)
					in[r * cnt + i] = r == n - 1 ? val(r, i) : -99;
			err = fdev_broadcast(c, in, out, cnt, FDEV_F32, (int)n - 1, a);
			if (!err) {
				bad = 0;
				for (unsigned int r = 0; r < n; r++)
					for (unsigned int i = 0; i < cnt; i++)
						bad += out[r * cnt + i] != val(n - 1, i);
				ok(!bad && offered("bc", a), "broadcast %s n=%u (%d bad)", an[a], n, bad);
			} else {
				ok(err == -EOPNOTSUPP && !offered("bc", a), "broadcast %s: %d", an[a], err);
			}
		}
		/* all-to-all-v with skewed counts, zeros included */
		{
			uint64_t *sc = calloc(n * n, 8), *rc = calloc(n * n, 8);
			float *vin = calloc(n * n * cnt, 4), *vout = calloc(n * n * cnt, 4);
			int bad = 0, err;

			for (unsigned int s = 0; s < n; s++)
				for (unsigned int d = 0; d < n; d++)
					sc[s * n + d] = d == 0 ? cnt : (s + d) % 3 == 0 ? 0 : (s + d) % cnt;
			for (unsigned int s = 0; s < n; s++) {
				uint64_t pos = 0;

				for (unsigned int d = 0; d < n; d++)
					for (uint64_t i = 0; i < sc[s * n + d]; i++)
						vin[s * n * cnt + pos++] = val(s, d * 100 + i);
			}
			err = fdev_all_to_all_v(c, vin, sc, vout, rc, FDEV_F32, FDEV_ALGO_DIRECT);
			/* Outputs are packed per rank with a stride of the largest receive. */
			ok(err == 0 || err == -EMSGSIZE, "all-to-all-v runs (%d)", err);
			(void)bad;
			for (unsigned int d = 0; d < n && !err; d++)
				for (unsigned int s = 0; s < n; s++)
					bad += rc[d * n + s] != sc[s * n + d];
			ok(!err && !bad, "all-to-all-v receive counts n=%u (%d bad)", n, bad);
			free(sc); free(rc); free(vin); free(vout);
		}
		fdev_comm_destroy(c);
		free(in); free(out); free(bin); free(bout);
	}
}

/* Dense reference: out[t] = sum_j w_tj * f_e(x_t) with f_e(x) = (e+1) x + e/8. */

/*
 * A transfer's head (plan.h): 8 bytes that ride with the first piece.
 * 8 + 10000 bytes in pieces of 4096 are 3 pieces (4104, 4096, 1808),
 * not 4, cut into steps of at most 2 pieces and interleaved; a head
 * alone is one piece. Every byte once, in order.
 */
static void test_plan_head(void)
{
	struct fdev_plan p;
	uint64_t want[2] = { 8 + 10000, 8 }, next[2] = { 0, 0 };
	unsigned int np[2] = { 0, 0 }, first_ok = 0, bad = 0;
	int err;

	fdev_plan_init(&p);
	fdev_plan_xfer(&p, 0, 0, 1, 0, 0, want[0]);
	fdev_plan_xfer(&p, 0, 0, 2, 1 << 20, 1 << 20, want[1]);
	p.x[0].head = p.x[1].head = 8;
	err = fdev_plan_finish(&p);
	if (!err)
		err = fdev_plan_split_steps(&p, 4096, 2);
	if (!err)
		err = fdev_plan_interleave(&p, 4096, 2);
	for (size_t i = 0; !err && i < p.nx; i++) {
		unsigned int t = p.x[i].dst - 1;
		uint64_t base = t ? 1 << 20 : 0;

		bad += p.x[i].src_off != base + next[t] ||
		       p.x[i].dst_off != base + next[t];
		if (t == 0 && next[0] == 0)
			first_ok = p.x[i].len == 4104;
		next[t] += p.x[i].len;
		np[t]++;
	}
	ok(!err && !bad && first_ok && np[0] == 3 && np[1] == 1 &&
	   next[0] == want[0] && next[1] == want[1],
	   "plan head: 3 pieces and 1, the first of 4104, every byte once (%d, %u bad, %u %u)",
	   err, bad, np[0], np[1]);
	fdev_plan_free(&p);
}

/*
 * All-to-all-v in fixed slots (coll.c, slots_fit()): uneven bytes, zeros
 * among them, element by element against the senders' rows, in slots
 * where every pair fits (workspace / 2n - 8 a slot), in two rounds where one
 * pair is larger than its slot, and in two rounds when asked; the
 * receive counts from the counts that came ahead of the data.
 */
static void test_a2av_slots(void)
{
	const unsigned int n = 5;
	/*
	 * Slots of 8 + 11200 bytes (the largest pair, 2800 elements: three
	 * pieces of 4096, the count riding in the first), then the send area.
	 */
	const uint64_t ws = 2 * n * (8 + 11200);

	for (int run = 0; run < 3; run++) {
		struct fdev_comm *c = NULL;
		uint64_t sc[25], rc[25], smax = 0, rmax = 0;
		uint32_t *in, *out;
		int bad = 0, err;

		if (mk(n, ws, &c)) {
			ok(0, "a2av slots: communicator");
			return;
		}
		for (unsigned int s = 0; s < n; s++)
			for (unsigned int d = 0; d < n; d++)
				sc[s * n + d] = (s * 3 + d) % 5 * 700;
		/* 2801 elements, 11204 bytes: more than its slot. */
		if (run == 1)
			sc[0 * n + 1] = 2801;
		for (unsigned int r = 0; r < n; r++) {
			uint64_t a = 0, b = 0;

			for (unsigned int j = 0; j < n; j++) {
				a += sc[r * n + j];
				b += sc[j * n + r];
			}
			smax = a > smax ? a : smax;
			rmax = b > rmax ? b : rmax;
		}
		in = calloc(n * smax, 4);
		out = calloc(n * rmax, 4);
		for (unsigned int s = 0, at; s < n; s++) {
			at = 0;
			for (unsigned int d = 0; d < n; d++)
				for (uint64_t i = 0; i < sc[s * n + d]; i++)
					in[s * smax + at++] = s << 24 | d << 16 | (uint32_t)i;
		}
		memset(out, 0xee, n * rmax * 4);
		if (run == 2)
			setenv("FDEV_A2AV_TWO_ROUNDS", "1", 1);
		err = fdev_all_to_all_v(c, in, sc, out, rc, FDEV_I32,
					FDEV_ALGO_AUTO);
		unsetenv("FDEV_A2AV_TWO_ROUNDS");
		for (unsigned int d = 0; !err && d < n; d++) {
			uint64_t at = 0;

			for (unsigned int s = 0; s < n; s++) {
				bad += rc[d * n + s] != sc[s * n + d];
				for (uint64_t i = 0; i < sc[s * n + d]; i++)
					bad += out[d * rmax + at++] !=
					       (s << 24 | d << 16 | (uint32_t)i);
			}
		}
		ok(!err && !bad, "a2av %s: every element and count (%d bad, %d)",
		   run == 0 ? "in slots" : run == 1 ?
		   "a pair over its slot, two rounds" : "two rounds asked",
		   bad, err);
		ok(__fdev_comm_a2av_slots(c) == (run == 0),
		   "a2av: %s", run == 0 ? "went in slots" : "went in two rounds");
		free(in);
		free(out);
		fdev_comm_destroy(c);
	}
}

/*
 * fdev_plan_split_steps() on a direct all-to-all of 5 ranks, 10000 B per
 * pair (3 pieces of 4096), at most 6 pieces per source and step: two
 * runs would leave 4 x 2 = 8, so three steps of one piece per transfer.
 * The self copy moves to the last; every byte goes once, and the plan
 * run in host memory gives what the whole one gives.
 */
static void test_split_steps(void)
{
	const unsigned int n = 5;
	struct fdev_coll_layout lo;
	struct fdev_plan whole, split;
	uint8_t *ws[2][5] = { { NULL } };
	uint64_t per[3][5] = { { 0 } }, bytes = 0;
	int err, fits = 1, same = 1;

	fdev_plan_init(&whole);
	fdev_plan_init(&split);
	err = fdev_plan_all_to_all(&whole, n, 10000, FDEV_ALGO_DIRECT, 0, &lo);
	if (!err)
		err = fdev_plan_all_to_all(&split, n, 10000, FDEV_ALGO_DIRECT, 0,
					   &lo);
	if (!err)
		err = fdev_plan_split_steps(&split, 4096, 6);
	ok(!err && whole.nsteps == 1 && split.nsteps == 3 &&
	   split.nx == n * (n - 1) * 3,
	   "split steps: 3 steps of one piece per pair (%d, %u steps, %zu xfers)",
	   err, split.nsteps, split.nx);
	for (size_t i = 0; !err && i < split.nx; i++) {
		const struct fdev_xfer *x = &split.x[i];

		fits &= x->step < 3 && x->len <= 4096 &&
			(i == 0 || x->step >= split.x[i - 1].step);
		if (x->step < 3)
			per[x->step][x->src]++;
		bytes += x->len;
	}
	for (int s = 0; s < 3; s++)
		for (unsigned int r = 0; r < n; r++)
			fits &= per[s][r] <= 6;
	for (size_t i = 0; !err && i < split.na; i++)
		fits &= split.a[i].step == 2;
	ok(!err && fits && bytes == (uint64_t)n * (n - 1) * 10000,
	   "split steps: in order, within the cap, actions last, every byte once");
	for (int k = 0; k < 2 && !err; k++)
		for (unsigned int r = 0; r < n; r++) {
			ws[k][r] = calloc(1, whole.ws_need);
			if (!ws[k][r]) {
				err = -ENOMEM;
				break;
			}
			for (uint64_t i = 0; i < n * 10000ULL; i++)
				ws[k][r][i] = (uint8_t)(r * 31 + i * 7 + i / 251);
		}
	if (!err)
		err = fdev_plan_exec_host(&whole, ws[0]);
	if (!err)
		err = fdev_plan_exec_host(&split, ws[1]);
	for (unsigned int r = 0; !err && r < n; r++)
		same &= !memcmp(ws[0][r], ws[1][r], whole.ws_need);
	ok(!err && same, "split steps: the same workspaces as the whole step (%d)", err);
	fdev_plan_free(&split);
	fdev_plan_init(&split);
	err = fdev_plan_all_to_all(&split, n, 10000, FDEV_ALGO_DIRECT, 0, &lo);
	if (!err)
		err = fdev_plan_split_steps(&split, 4096, 3);
	ok(!err && split.nsteps == 1 && split.nx == n * (n - 1),
	   "split steps: a source with more transfers than the cap stays whole");
	fdev_plan_free(&split);
	fdev_plan_free(&whole);
	for (int k = 0; k < 2; k++)
		for (unsigned int r = 0; r < n; r++)
			free(ws[k][r]);
}

/*
 * fdev_plan_interleave_lead(): a direct all-to-all of 4 ranks, 3 pieces
 * per pair, where the pairs into rank 3 lead by 2 rounds. Every byte goes
 * once, as without leads; each source's pieces to rank 3 all go before
 * any second piece to the others, its pieces to the others still go
 * piece-major in the plan's order, and the plan on the host leaves every
 * rank's output as the plan without leads does.
 */
static void test_interleave_lead(void)
{
	const unsigned int n = 4;
	const uint64_t bytes = 3 * 4096;
	uint16_t lead[16] = { 0 };
	struct fdev_coll_layout lo;
	struct fdev_plan plain, led;
	uint8_t *ws[2][4] = { { NULL } };
	int err, fine = 1, same = 1;

	for (unsigned int s = 0; s < n; s++)
		lead[s * n + 3] = 2;
	fdev_plan_init(&plain);
	fdev_plan_init(&led);
	err = fdev_plan_all_to_all(&plain, n, bytes, FDEV_ALGO_DIRECT, 0, &lo);
	if (!err)
		err = fdev_plan_all_to_all(&led, n, bytes, FDEV_ALGO_DIRECT, 0, &lo);
	if (!err)
		err = fdev_plan_interleave(&plain, 4096, 4096);
	if (!err)
		err = fdev_plan_interleave_lead(&led, 4096, 4096, lead, n);
	ok(!err && led.nx == plain.nx && led.nx == n * (n - 1) * 3,
	   "interleave lead: as many pieces as without (%d)", err);
	for (unsigned int s = 0; !err && s < n; s++) {
		unsigned int to3 = 0, other = 0, at = 0;
		uint64_t last_round = 0;

		for (size_t i = 0; i < led.nx; i++) {
			const struct fdev_xfer *x = &led.x[i];
			uint64_t round = x->src_off % bytes / 4096;

			if (x->src != s)
				continue;
			at++;
			if (x->dst == 3 && s != 3) {
				/* Rank 3's three, before any second piece. */
				fine &= at <= 5 && round == to3++;
				continue;
			}
			fine &= round >= last_round;
			last_round = round;
			other++;
		}
		fine &= (s == 3 || to3 == 3) && other == (s == 3 ? 9 : 6);
	}
	ok(fine, "interleave lead: the leading pair's pieces first, the others piece-major");
	for (unsigned int k = 0; k < 2; k++)
		for (unsigned int r = 0; r < n; r++) {
			ws[k][r] = calloc(1, plain.ws_need);
			for (uint64_t b = 0; ws[k][r] && b < n * bytes; b++)
				ws[k][r][b] = (uint8_t)(r * 131 + b * 7);
		}
	for (unsigned int r = 0; r < n; r++)
		same &= ws[0][r] && ws[1][r];
	if (same && !err) {
		same = !fdev_plan_exec_host(&plain, ws[0]) &&
		       !fdev_plan_exec_host(&led, ws[1]);
		for (unsigned int r = 0; same && r < n; r++)
			same = !memcmp(ws[0][r] + lo.recv_off, ws[1][r] + lo.recv_off,
				       n * bytes);
	}
	ok(same && !err, "interleave lead: every rank gets what it gets without leads");
	for (unsigned int k = 0; k < 2; k++)
		for (unsigned int r = 0; r < n; r++)
			free(ws[k][r]);
	fdev_plan_free(&plain);
	fdev_plan_free(&led);
}

/*
 * fdev_plan_far_first(): an uneven exchange of 5 ranks (5 to 20 pieces a
 * pair), pair s -> d of (d - s) mod 5 hops, the routes of 1 and 2 hops
 * starting on one link, of 3 and 4 on another. Every piece goes exactly
 * once; each source's order of first links, and each pair's order of
 * pieces, are what they were; the last piece of each source and first
 * link is of a pair of its fewest hops; and every rank's workspace ends
 * byte for byte as with the plain order.
 */
static void test_far_first(void)
{
	const unsigned int n = 5;
	const uint64_t blk = 20 * 4096;
	uint32_t hops[25], first[25];
	struct fdev_plan plain, far;
	uint8_t *ws[2][5] = { { NULL } };
	int err = 0, once = 1, order = 1, last = 1, same = 1;

	fdev_plan_init(&plain);
	fdev_plan_init(&far);
	for (unsigned int s = 0; s < n; s++)
		for (unsigned int d = 0; d < n; d++) {
			hops[s * n + d] = (d + n - s) % n;
			first[s * n + d] = hops[s * n + d] <= 2 ? 7 : 9;
		}
	for (unsigned int k = 1; k < n; k++)
		for (unsigned int s = 0; s < n; s++) {
			unsigned int d = (s + k) % n;
			uint64_t len = 4096 * 5 * (1 + (s + 2 * d) % 4);

			fdev_plan_xfer(&plain, 0, s, d, d * blk, n * blk + s * blk, len);
			fdev_plan_xfer(&far, 0, s, d, d * blk, n * blk + s * blk, len);
		}
	fdev_plan_need(&plain, 2 * n * blk);
	fdev_plan_need(&far, 2 * n * blk);
	plain.nsteps = far.nsteps = 1;
	err = fdev_plan_finish(&plain);
	if (!err)
		err = fdev_plan_finish(&far);
	if (!err)
		err = fdev_plan_interleave(&plain, 4096, 4096);
	if (!err)
		err = fdev_plan_interleave(&far, 4096, 4096);
	if (!err)
		err = fdev_plan_far_first(&far, hops, first, n, NULL);
	once = !err && far.nx == plain.nx;
	/* Each piece of the plain order once in the other. */
	for (size_t i = 0; once && i < plain.nx; i++) {
		unsigned int found = 0;

		for (size_t j = 0; j < far.nx; j++)
			found += far.x[j].src == plain.x[i].src &&
				 far.x[j].dst == plain.x[i].dst &&
				 far.x[j].src_off == plain.x[i].src_off &&
				 far.x[j].dst_off == plain.x[i].dst_off &&
				 far.x[j].len == plain.x[i].len;
		once &= found == 1;
	}
	ok(once, "far first: every piece exactly once (%d, %zu against %zu)",
	   err, far.nx, plain.nx);
	for (unsigned int s = 0; once && s < n; s++) {
		uint64_t next[5] = { 0 };
		size_t i = 0, j = 0;
		uint32_t low[10] = { 0 }, lastf[10] = { 0 };
		int seen[10] = { 0 };

		for (;; i++, j++) {
			while (i < plain.nx && plain.x[i].src != s)
				i++;
			while (j < far.nx && far.x[j].src != s)
				j++;
			if (i >= plain.nx || j >= far.nx)
				break;
			order &= first[s * n + plain.x[i].dst] ==
				 first[s * n + far.x[j].dst];
			order &= far.x[j].src_off == far.x[j].dst * blk +
				 next[far.x[j].dst];
			next[far.x[j].dst] += far.x[j].len;
			lastf[first[s * n + far.x[j].dst]] =
				hops[s * n + far.x[j].dst];
		}
		order &= i >= plain.nx && j >= far.nx;
		/* The fewest hops among the last fifth on each link, plain. */
		for (unsigned int f = 7; f <= 9; f += 2) {
			size_t m = 0, at = 0;

			for (i = 0; i < plain.nx; i++)
				m += plain.x[i].src == s &&
				     first[s * n + plain.x[i].dst] == f;
			for (i = 0; i < plain.nx; i++) {
				uint32_t h = hops[s * n + plain.x[i].dst];

				if (plain.x[i].src != s ||
				    first[s * n + plain.x[i].dst] != f)
					continue;
				if (at++ < m - (m + 4) / 5)
					continue;
				if (!seen[f] || h < low[f])
					low[f] = h;
				seen[f] = 1;
			}
			last &= seen[f] && lastf[f] == low[f];
		}
	}
	ok(once && order, "far first: each source's first links and each pair's pieces in their order");
	ok(once && last, "far first: each source's last piece on a link of the fewest hops among its last fifth");
	for (unsigned int k = 0; k < 2; k++)
		for (unsigned int r = 0; r < n; r++) {
			ws[k][r] = calloc(1, 2 * n * blk);
			for (uint64_t b = 0; ws[k][r] && b < n * blk; b++)
				ws[k][r][b] = (uint8_t)(r * 131 + b * 7);
		}
	for (unsigned int r = 0; r < n; r++)
		same &= ws[0][r] && ws[1][r];
	if (same && !err) {
		same = !fdev_plan_exec_host(&plain, ws[0]) &&
		       !fdev_plan_exec_host(&far, ws[1]);
		for (unsigned int r = 0; same && r < n; r++)
			same = !memcmp(ws[0][r], ws[1][r], 2 * n * blk);
	}
	ok(same && !err, "far first: every rank's workspace as with the plain order");
	for (unsigned int k = 0; k < 2; k++)
		for (unsigned int r = 0; r < n; r++)
			free(ws[k][r]);
	fdev_plan_free(&plain);
	fdev_plan_free(&far);
}

/*
 * fdev_plan_start_fill(): an uneven exchange of 5 ranks (5 to 20 pieces
 * a pair), pair s -> d leaving by link 7 when (d - s) mod 5 is 1 to 3
 * and by link 9 when it is 4, so that the rotated order's first three
 * pieces of every source leave by link 7. With the fill, each source's
 * first FDEV_START_FILL places follow the rule (the link whose pieces
 * dealt + 1/2 over the fourth root of its pieces is least, in each
 * link's order) and link 9 has one of the first two; every piece goes
 * exactly once, each pair's pieces keep their order, and every rank's
 * workspace ends byte for byte as with the plain order.
 */
static void test_start_fill(void)
{
	const unsigned int n = 5;
	const uint64_t blk = 20 * 4096;
	uint32_t first[25];
	struct fdev_plan plain, fill;
	uint8_t *ws[2][5] = { { NULL } };
	int err = 0, once = 1, order = 1, rule = 1, early = 1, same = 1;

	fdev_plan_init(&plain);
	fdev_plan_init(&fill);
	for (unsigned int s = 0; s < n; s++)
		for (unsigned int d = 0; d < n; d++)
			first[s * n + d] = (d + n - s) % n == 4 ? 9 : 7;
	for (unsigned int k = 1; k < n; k++)
		for (unsigned int s = 0; s < n; s++) {
			unsigned int d = (s + k) % n;
			uint64_t len = 4096 * 5 * (1 + (s + 2 * d) % 4);

			fdev_plan_xfer(&plain, 0, s, d, d * blk, n * blk + s * blk, len);
			fdev_plan_xfer(&fill, 0, s, d, d * blk, n * blk + s * blk, len);
		}
	fdev_plan_need(&plain, 2 * n * blk);
	fdev_plan_need(&fill, 2 * n * blk);
	plain.nsteps = fill.nsteps = 1;
	err = fdev_plan_finish(&plain);
	if (!err)
		err = fdev_plan_finish(&fill);
	if (!err)
		err = fdev_plan_interleave(&plain, 4096, 4096);
	if (!err)
		err = fdev_plan_interleave(&fill, 4096, 4096);
	if (!err)
		err = fdev_plan_start_fill(&fill, first, n, NULL);
	once = !err && fill.nx == plain.nx;
	for (size_t i = 0; once && i < plain.nx; i++) {
		unsigned int found = 0;

		for (size_t j = 0; j < fill.nx; j++)
			found += fill.x[j].src == plain.x[i].src &&
				 fill.x[j].dst == plain.x[i].dst &&
				 fill.x[j].src_off == plain.x[i].src_off &&
				 fill.x[j].dst_off == plain.x[i].dst_off &&
				 fill.x[j].len == plain.x[i].len;
		once &= found == 1;
	}
	ok(once, "start fill: every piece exactly once (%d, %zu against %zu)",
	   err, fill.nx, plain.nx);
	for (unsigned int s = 0; once && s < n; s++) {
		uint64_t next[5] = { 0 }, m[10] = { 0 }, dealt[10] = { 0 };
		size_t at = 0;
		int lone = 0;

		for (size_t i = 0; i < plain.nx; i++)
			if (plain.x[i].src == s)
				m[first[s * n + plain.x[i].dst]]++;
		for (size_t j = 0; j < fill.nx; j++) {
			const struct fdev_xfer *x = &fill.x[j];
			uint32_t f, want = 0;
			double best = 0;

			if (x->src != s)
				continue;
			f = first[s * n + x->dst];
			order &= x->src_off == x->dst * blk + next[x->dst];
			next[x->dst] += x->len;
			lone |= at < 2 && f == 9;
			if (at++ >= FDEV_START_FILL)
				continue;
			for (uint32_t l = 7; l <= 9; l += 2) {
				double key = ((double)dealt[l] + 0.5) /
					     sqrt(sqrt((double)m[l]));

				if (dealt[l] < m[l] && (!want || key < best)) {
					best = key;
					want = l;
				}
			}
			rule &= f == want;
			dealt[f]++;
		}
		early &= lone;
	}
	ok(once && order, "start fill: each pair's pieces in their order");
	ok(once && rule, "start fill: each source's first %d places by the rule",
	   FDEV_START_FILL);
	ok(once && early, "start fill: the lone link among each source's first two places");
	for (unsigned int k = 0; k < 2; k++)
		for (unsigned int r = 0; r < n; r++) {
			ws[k][r] = calloc(1, 2 * n * blk);
			for (uint64_t b = 0; ws[k][r] && b < n * blk; b++)
				ws[k][r][b] = (uint8_t)(r * 131 + b * 7);
		}
	for (unsigned int r = 0; r < n; r++)
		same &= ws[0][r] && ws[1][r];
	if (same && !err) {
		same = !fdev_plan_exec_host(&plain, ws[0]) &&
		       !fdev_plan_exec_host(&fill, ws[1]);
		for (unsigned int r = 0; same && r < n; r++)
			same = !memcmp(ws[0][r], ws[1][r], 2 * n * blk);
	}
	ok(same && !err, "start fill: every rank's workspace as with the plain order");
	for (unsigned int k = 0; k < 2; k++)
		for (unsigned int r = 0; r < n; r++)
			free(ws[k][r]);
	fdev_plan_free(&plain);
	fdev_plan_free(&fill);
}

/*
 * fdev_plan_start_fill() and fdev_plan_far_first() over one source's
 * pieces (a process that posts only its own rank's, coll.c
 * fdev_comm_interleave_v()): test_start_fill()'s exchange, leads cut in
 * pieces; ordered for source 2 alone, source 2 posts exactly what it
 * posts when every source is ordered, and every other source keeps the
 * interleave's order.
 */
static int same_src_order(const struct fdev_plan *a, const struct fdev_plan *b,
			  uint32_t src)
{
	size_t i = 0, j = 0;

	for (;; i++, j++) {
		while (i < a->nx && a->x[i].src != src)
			i++;
		while (j < b->nx && b->x[j].src != src)
			j++;
		if (i >= a->nx || j >= b->nx)
			return i >= a->nx && j >= b->nx;
		if (a->x[i].dst != b->x[j].dst || a->x[i].src_off != b->x[j].src_off ||
		    a->x[i].len != b->x[j].len)
			return 0;
	}
}

static void test_own_source_order(void)
{
	const unsigned int n = 5;
	const uint64_t blk = 20 * 4096;
	const struct fdev_src_range two = { 2, 1 };
	uint32_t first[25], hops[25];
	struct fdev_plan plain, all, own;
	int err = 0, mine = 1, others = 1, moved = 0;

	fdev_plan_init(&plain);
	fdev_plan_init(&all);
	fdev_plan_init(&own);
	for (unsigned int s = 0; s < n; s++)
		for (unsigned int d = 0; d < n; d++) {
			hops[s * n + d] = (d + n - s) % n;
			first[s * n + d] = (d + n - s) % n == 4 ? 9 : 7;
		}
	for (unsigned int k = 1; k < n; k++)
		for (unsigned int s = 0; s < n; s++) {
			unsigned int d = (s + k) % n;
			uint64_t len = 4096 * 5 * (1 + (s + 2 * d) % 4);

			fdev_plan_xfer(&plain, 0, s, d, d * blk, n * blk + s * blk, len);
			fdev_plan_xfer(&all, 0, s, d, d * blk, n * blk + s * blk, len);
			fdev_plan_xfer(&own, 0, s, d, d * blk, n * blk + s * blk, len);
		}
	plain.nsteps = all.nsteps = own.nsteps = 1;
	err = fdev_plan_finish(&plain) ?: fdev_plan_finish(&all) ?:
	      fdev_plan_finish(&own) ?:
	      fdev_plan_interleave(&plain, 4096, 4096) ?:
	      fdev_plan_interleave(&all, 4096, 4096) ?:
	      fdev_plan_interleave(&own, 4096, 4096) ?:
	      fdev_plan_start_fill(&all, first, n, NULL) ?:
	      fdev_plan_far_first(&all, hops, first, n, NULL) ?:
	      fdev_plan_start_fill(&own, first, n, &two) ?:
	      fdev_plan_far_first(&own, hops, first, n, &two);
	mine = !err && same_src_order(&own, &all, 2);
	moved = !err && !same_src_order(&own, &plain, 2);
	for (uint32_t s = 0; !err && s < n; s++)
		if (s != 2)
			others &= same_src_order(&own, &plain, s);
	ok(!err && mine && moved, "own source's order: source 2 alone ordered posts what it posts when all are (%d, moved %d)",
	   err, moved);
	ok(!err && others, "own source's order: every other source keeps the interleave's order");
	fdev_plan_free(&plain);
	fdev_plan_free(&all);
	fdev_plan_free(&own);
}

/*
 * fdev_plan_critical_first(): 4 ranks, every pair on a link of its own
 * but 0 -> 2 and 1 -> 2, which end on link 16 (0 -> 2 over links 2 and
 * 16), 5 pieces a pair and 20 for 1 -> 2, one DMA engine a rank. Link 16
 * carries the most, so rank 0's first piece goes to rank 2, where the
 * rotated order starts with rank 1; rank 3, whose links all carry 5
 * pieces, keeps the rotated order (ties keep the order before). Every
 * piece goes exactly once in its step, each pair's pieces keep their
 * order, and every rank's workspace ends byte for byte as with the
 * plain order.
 */
static void test_critical_first(void)
{
	const unsigned int n = 4;
	const uint64_t blk = 20 * 4096;
	uint32_t off[17], link[13];
	double ps_per_byte[17];
	uint64_t fixed_ps[17];
	struct fdev_paths m = {
		.n = n, .nr_links = 17, .seg = 4096, .engines = 1,
		.ps_per_byte = ps_per_byte, .fixed_ps = fixed_ps,
		.off = off, .link = link,
	};
	struct fdev_plan plain, crit;
	uint8_t *ws[2][4] = { { NULL } };
	int err = 0, once = 1, order = 1, same = 1, kept = 1;
	uint32_t len = 0, first0 = UINT32_MAX;

	for (unsigned int l = 0; l < 17; l++) {
		ps_per_byte[l] = 20;
		fixed_ps[l] = 1000000;
	}
	for (unsigned int q = 0; q < n * n; q++) {
		off[q] = len;
		if (q / n == q % n)
			continue;
		link[len++] = q == 6 ? 16 : q;
		if (q == 2)
			link[len++] = 16;
	}
	off[n * n] = len;
	fdev_plan_init(&plain);
	fdev_plan_init(&crit);
	for (unsigned int k = 1; k < n; k++)
		for (unsigned int s = 0; s < n; s++) {
			unsigned int d = (s + k) % n;
			uint64_t l = 4096 * (s == 1 && d == 2 ? 20 : 5);

			fdev_plan_xfer(&plain, 0, s, d, d * blk, n * blk + s * blk, l);
			fdev_plan_xfer(&crit, 0, s, d, d * blk, n * blk + s * blk, l);
		}
	fdev_plan_need(&plain, 2 * n * blk);
	fdev_plan_need(&crit, 2 * n * blk);
	plain.nsteps = crit.nsteps = 1;
	err = fdev_plan_finish(&plain);
	if (!err)
		err = fdev_plan_finish(&crit);
	if (!err)
		err = fdev_plan_interleave(&plain, 4096, 4096);
	if (!err)
		err = fdev_plan_interleave(&crit, 4096, 4096);
	if (!err)
		err = fdev_plan_critical_first(&crit, &m, 1);
	once = !err && crit.nx == plain.nx;
	for (size_t i = 0; once && i < plain.nx; i++) {
		unsigned int found = 0;

		for (size_t j = 0; j < crit.nx; j++)
			found += crit.x[j].src == plain.x[i].src &&
				 crit.x[j].dst == plain.x[i].dst &&
				 crit.x[j].step == plain.x[i].step &&
				 crit.x[j].src_off == plain.x[i].src_off &&
				 crit.x[j].dst_off == plain.x[i].dst_off &&
				 crit.x[j].len == plain.x[i].len;
		once &= found == 1;
	}
	ok(once, "critical first: every piece exactly once (%d, %zu against %zu)",
	   err, crit.nx, plain.nx);
	for (unsigned int s = 0; once && s < n; s++) {
		uint64_t next[4] = { 0 };

		for (size_t j = 0; j < crit.nx; j++) {
			const struct fdev_xfer *x = &crit.x[j];

			if (x->src != s)
				continue;
			if (s == 0 && first0 == UINT32_MAX)
				first0 = x->dst;
			order &= x->src_off == x->dst * blk + next[x->dst];
			next[x->dst] += x->len;
		}
	}
	for (size_t j = 0; once && j < crit.nx; j++)
		if (plain.x[j].src == 3 || crit.x[j].src == 3)
			kept &= crit.x[j].src == plain.x[j].src &&
				crit.x[j].dst == plain.x[j].dst &&
				crit.x[j].src_off == plain.x[j].src_off;
	ok(once && order, "critical first: each pair's pieces in their order");
	ok(once && first0 == 2,
	   "critical first: rank 0 starts on the pair over the busiest link (to %u)",
	   first0);
	ok(once && kept, "critical first: rank 3, all its links alike, keeps its order");
	for (unsigned int k = 0; k < 2; k++)
		for (unsigned int r = 0; r < n; r++) {
			ws[k][r] = calloc(1, 2 * n * blk);
			for (uint64_t b = 0; ws[k][r] && b < n * blk; b++)
				ws[k][r][b] = (uint8_t)(r * 131 + b * 7);
		}
	for (unsigned int r = 0; r < n; r++)
		same &= ws[0][r] && ws[1][r];
	if (same && !err) {
		same = !fdev_plan_exec_host(&plain, ws[0]) &&
		       !fdev_plan_exec_host(&crit, ws[1]);
		for (unsigned int r = 0; same && r < n; r++)
			same = !memcmp(ws[0][r], ws[1][r], 2 * n * blk);
	}
	ok(same && !err, "critical first: every rank's workspace as with the plain order");
	for (unsigned int k = 0; k < 2; k++)
		for (unsigned int r = 0; r < n; r++)
			free(ws[k][r]);
	fdev_plan_free(&plain);
	fdev_plan_free(&crit);
}

/*
 * fdev_plan_interleave(): the same bytes land where they did, each
 * source's pieces go piece-major, and a source's pieces per step stay
 * within the cap. Then FDEV_INTERLEAVE on a communicator's all-to-all:
 * the same outputs on (the default) and off, and -EINVAL for a value
 * that is not a decimal number.
 */
static void test_interleave(void)
{
	const unsigned int n = 5, cnt = 3000;
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	uint64_t seen[5] = { 0 }, pieces[5] = { 0 }, bytes = 0;
	int order_ok = 1, err;
	float *in, *out;
	struct fdev_comm *c;

	fdev_plan_init(&p);
	err = fdev_plan_all_to_all(&p, n, 10000, FDEV_ALGO_DIRECT, 0, &lo);
	if (!err)
		err = fdev_plan_interleave(&p, 4096, 4096);
	ok(!err && p.nx == n * (n - 1) * 3,
	   "interleave: 10000 B per pair in pieces of 4096, %zu pieces (%d)", p.nx, err);
	for (size_t i = 0; i < p.nx; i++) {
		const struct fdev_xfer *x = &p.x[i];
		uint64_t round = x->src_off % 10000 / 4096;

		order_ok &= round >= seen[x->src] && x->len <= 4096 &&
			    x->src_off % 10000 % 4096 == 0;
		seen[x->src] = round;
		bytes += x->len;
	}
	ok(order_ok && bytes == (uint64_t)n * (n - 1) * 10000,
	   "interleave: every source's pieces go piece-major, every byte once");
	fdev_plan_free(&p);

	fdev_plan_init(&p);
	err = fdev_plan_all_to_all(&p, n, 10000, FDEV_ALGO_DIRECT, 0, &lo);
	if (!err)
		err = fdev_plan_interleave(&p, 1, 10);
	for (size_t i = 0; !err && i < p.nx; i++)
		pieces[p.x[i].src]++;
	ok(!err && pieces[0] <= 10 && pieces[4] <= 10 && pieces[0] >= n - 1,
	   "interleave: a source's pieces stay within the cap (%" PRIu64 ")", pieces[0]);
	ok(fdev_plan_interleave(&p, 4096, 0) == -EINVAL, "interleave: a cap of 0 is -EINVAL");
	fdev_plan_free(&p);

	test_interleave_lead();
	test_split_steps();
	test_plan_head();
	test_far_first();
	test_start_fill();
	test_own_source_order();
	test_critical_first();
	test_a2av_slots();

	in = calloc((size_t)n * n * cnt, 4);
	out = calloc((size_t)n * n * cnt, 4);
	if (!in || !out || mk(n, 4u << 20, &c)) {
		ok(0, "interleave: comm");
		free(in);
		free(out);
		return;
	}
	for (unsigned int r = 0; r < n; r++)
		for (unsigned int i = 0; i < n * cnt; i++)
			in[r * n * cnt + i] = val(r, i);
	/* Unset: on, in pieces of one segment; then off; then not a number. */
	for (int off = 0; off < 2; off++) {
		int bad = 0;

		if (off)
			setenv("FDEV_INTERLEAVE", "0", 1);
		memset(out, 0, (size_t)n * n * cnt * 4);
		err = fdev_all_to_all(c, in, out, cnt, FDEV_F32, FDEV_ALGO_DIRECT);
		for (unsigned int r = 0; !err && r < n; r++)
			for (unsigned int q = 0; q < n; q++)
				for (unsigned int i = 0; i < cnt; i++)
					bad += out[(r * n + q) * cnt + i] != val(q, r * cnt + i);
		ok(!err && !bad, "interleave: all-to-all n=%u, FDEV_INTERLEAVE %s (%d, %d bad)",
		   n, off ? "0" : "unset", err, bad);
	}
	{
		static const char *const malformed[] = { "one", "1x", "-1", " 1", "+1",
			"99999999999999999999999" };

		for (size_t i = 0; i < sizeof(malformed) / sizeof(*malformed); i++) {
			setenv("FDEV_INTERLEAVE", malformed[i], 1);
			err = fdev_all_to_all(c, in, out, cnt, FDEV_F32,
					      FDEV_ALGO_DIRECT);
			ok(err == -EINVAL, "interleave: FDEV_INTERLEAVE=\"%s\" is -EINVAL (%d)",
			   malformed[i], err);
		}
	}
	unsetenv("FDEV_INTERLEAVE");
	fdev_comm_destroy(c);
	free(in);
	free(out);
}

static float expert_fn(int64_t e, float x)
{
	return (float)(e + 1) * x + (float)e / 8;
}

/* Ranks per node for the hierarchical cases. */
static unsigned int moe_node_size;

/* Hierarchical dispatch gives the rows throughput gives, in its order. */
static int same_as_tp(struct fdev_comm *c, const struct fdev_moe_config *cfg,
		      const struct fdev_moe_in *in, struct fdev_moe_handle *h,
		      unsigned int n)
{
	struct fdev_moe_config tc = *cfg;
	struct fdev_moe_handle *t = NULL;
	size_t es = fdev_dtype_size(cfg->dtype);
	unsigned int epr = cfg->num_experts / n;
	int bad = 0;

	tc.mode = FDEV_MOE_THROUGHPUT;
	if (fdev_moe_dispatch(c, &tc, in, NULL, &t))
		return 1;
	for (unsigned int r = 0; r < n; r++) {
		struct fdev_moe_out a, b;

		fdev_moe_output(h, (int)r, &a);
		fdev_moe_output(t, (int)r, &b);
		bad += a.rows != b.rows || a.recv_tokens != b.recv_tokens;
		if (bad)
			break;
		bad += !!memcmp(a.expert_count, b.expert_count, epr * 8);
		bad += !!memcmp(a.expert_offset, b.expert_offset, epr * 8);
		bad += !!memcmp(a.x, b.x, a.rows * cfg->hidden * es);
		bad += !!memcmp(a.topk_idx, b.topk_idx, a.rows * cfg->k * 8);
		bad += !!memcmp(a.topk_w, b.topk_w, a.rows * cfg->k * 4);
	}
	fdev_moe_handle_free(t);
	return bad;
}

/*
 * Throughput's count exchange: every rank learns its column (tokens
 * from each source) and where its records and partials go from its
 * peers, never from the whole matrix. What each rank got must be what
 * the routing gives, and the offsets those of the layout worked out
 * from the whole matrix (which only a process holding every rank has).
 * The columns it learns sit in h->pair_col, not spread over the n^2
 * matrix (a page of it per row touched at 1024 ranks), and agree with
 * the rows the local ranks sent.
 */
static int tp_exchange_bad(struct fdev_comm *c, struct fdev_moe_handle *h,
			   const struct fdev_moe_in *in, unsigned int n)
{
	size_t nn = (size_t)n * n;
	uint64_t *recv_at = malloc(nn * 8), *back_at = malloc(nn * 8);
	int bad = !recv_at || !back_at || h->tp_k0 || h->tp_kn != n ||
		  !h->pair_col;

	for (unsigned int s = 0; !bad && s < n; s++)
		for (unsigned int d = 0; d < n; d++) {
			uint64_t want = 0;

			for (uint64_t t = 0; t < in[s].tokens; t++) {
				int hit = 0;

				for (unsigned int j = 0; j < h->cfg.k; j++) {
					int64_t e = in[s].topk_idx[t * h->cfg.k + j];

					hit |= e >= 0 && moe_expert_rank(h, e) == d;
				}
				want += hit;
			}
			bad |= moe_pair(h, s, d) != want;
			bad |= h->pair_col[(size_t)d * n + s] != want ||
			       h->pair_tokens[(size_t)s * n + d] != want;
		}
	if (!bad) {
		memcpy(recv_at, h->tp_recv_at, nn * 8);
		memcpy(back_at, h->tp_back_at, nn * 8);
		bad = moe_tp_tables_full(c, h) ||
		      memcmp(recv_at, h->tp_recv_at, nn * 8) ||
		      memcmp(back_at, h->tp_back_at, nn * 8);
	}
	free(recv_at);
	free(back_at);
	return bad;
}

static void test_moe_case(const char *name, unsigned int n, unsigned int E,
			  unsigned int k, unsigned int H, const unsigned int *Ts,
			  int skew, int mode, int dt, unsigned int align)
{
	struct fdev_moe_in *in = calloc(n, sizeof(*in));
	struct fdev_moe_handle *h = NULL;
	struct fdev_moe_config cfg = { .num_experts = E, .k = k, .hidden = H,
		.dtype = (uint32_t)dt, .mode = (uint32_t)mode, .align = align,
		.max_tokens = 64 };
	size_t es = fdev_dtype_size(dt);
	void **y = calloc(n, sizeof(*y)), **out = calloc(n, sizeof(*out));
	struct fdev_comm *c;
	int err, bad = 0, badc = 0;
	unsigned int epr = E / n;

	if (mk(n, 8 << 20, &c)) {
		ok(0, "host comm");
		return;
	}
	/*
	 * Every way out goes through "done": a communicator left behind
	 * keeps its context attached, and an idle context in virtual time
	 * holds the fabric back, so the next case would wait forever.
	 */
	if ((mode == FDEV_MOE_HIERARCHICAL || mode == FDEV_MOE_LOW_LATENCY) &&
	    moe_node_size && fdev_comm_set_node_size(c, (int)moe_node_size)) {
		ok(0, "%s: node size %u", name, moe_node_size);
		goto done;
	}
	for (unsigned int r = 0; r < n; r++) {
		unsigned int T = Ts[r];
		int64_t *idx = malloc((T * k + 1) * 8);
		float *w = malloc((T * k + 1) * 4);
		uint8_t *x = malloc(T * H * es + 1);

		for (unsigned int t = 0; t < T; t++) {
			for (unsigned int j = 0; j < k; j++) {
				int64_t e;
				int dup;

				do {
					e = skew && rnd() % 4 ? 1 : (int64_t)(rnd() % E);
					if (rnd() % 7 == 0)
						e = -1;
					dup = 0;
					for (unsigned int q = 0; q < j; q++)
						dup |= e >= 0 && idx[t * k + q] == e;
				} while (dup);
				idx[t * k + j] = e;
				w[t * k + j] = (float)(j + 1) / 4;
			}
			for (unsigned int i = 0; i < H; i++) {
				float v = (float)((r * 5 + t * 3 + i) % 9) / 4 - 1;

				if (dt == FDEV_F32)
					((float *)x)[t * H + i] = v;
				else if (dt == FDEV_BF16)
					((uint16_t *)x)[t * H + i] = fdev_f32_to_bf16(v);
				else
					((uint16_t *)x)[t * H + i] = fdev_f32_to_f16(v);
			}
		}
		in[r] = (struct fdev_moe_in){ .tokens = T, .x = x, .topk_idx = idx, .topk_w = w };
	}
	err = fdev_moe_dispatch(c, &cfg, in, NULL, &h);
	ok(!err, "%s: dispatch (%d)", name, err);
	if (err)
		goto done;
	if (mode == FDEV_MOE_THROUGHPUT)
		ok(!tp_exchange_bad(c, h, in, n), "%s: each rank's counts and offsets are what its peers sent it", name);
	for (unsigned int r = 0; r < n; r++) {
		struct fdev_moe_out o;
		uint64_t want_cnt[64] = { 0 };

		fdev_moe_output(h, (int)r, &o);
		/* Every expert count equals the reference count. */
		for (unsigned int s = 0; s < n; s++)
			for (uint64_t t = 0; t < in[s].tokens; t++)
				for (unsigned int j = 0; j < k; j++) {
					int64_t e = in[s].topk_idx[t * k + j];

					if (e >= 0 && (unsigned int)e / epr == r)
						want_cnt[e % epr]++;
				}
		for (unsigned int e = 0; e < epr; e++) {
			bad += o.expert_count[e] != want_cnt[e];
			bad += align > 1 && o.expert_offset[e] % align;
		}
		/* Expert outputs: y = f_e(x) per row, in the dispatch layout. */
		y[r] = calloc(o.rows + 1, H * es);
		for (unsigned int e = 0; e < epr; e++)
			for (uint64_t i = 0; i < o.expert_count[e]; i++) {
				uint64_t row = o.expert_offset[e] + i;
				int64_t ge = (int64_t)(r * epr + e);
				int has = 0;

				for (unsigned int j = 0; j < k; j++)
					has |= o.topk_idx[row * k + j] == ge;
				bad += !has;
				for (unsigned int q = 0; q < H; q++) {
					float xv = dt == FDEV_F32 ? ((float *)o.x)[row * H + q] :
						dt == FDEV_BF16 ? fdev_bf16_to_f32(((uint16_t *)o.x)[row * H + q]) :
						fdev_f16_to_f32(((uint16_t *)o.x)[row * H + q]);
					float v = expert_fn(ge, xv);

					if (dt == FDEV_F32)
						((float *)y[r])[row * H + q] = v;
					else if (dt == FDEV_BF16)
						((uint16_t *)y[r])[row * H + q] = fdev_f32_to_bf16(v);
					else
						((uint16_t *)y[r])[row * H + q] = fdev_f32_to_f16(v);
				}
			}
		out[r] = calloc(in[r].tokens + 1, H * es);
	}
	ok(!bad, "%s: per-expert counts, alignment and rows match the reference (%d bad)", name, bad);
	if (mode == FDEV_MOE_HIERARCHICAL || mode == FDEV_MOE_MULTICAST)
		ok(!same_as_tp(c, &cfg, in, h, n),
		   "%s: the same rows, ids and weights as throughput, in the same order", name);
	err = fdev_moe_combine(c, h, (const void *const *)y, out);
	ok(!err, "%s: combine (%d)", name, err);
	for (unsigned int r = 0; r < n && !err; r++)
		for (uint64_t t = 0; t < in[r].tokens; t++)
			for (unsigned int q = 0; q < H; q++) {
				float ref = 0, got, x;
				const uint8_t *xb = in[r].x;

				x = dt == FDEV_F32 ? ((const float *)xb)[t * H + q] :
				    dt == FDEV_BF16 ? fdev_bf16_to_f32(((const uint16_t *)xb)[t * H + q]) :
				    fdev_f16_to_f32(((const uint16_t *)xb)[t * H + q]);
				for (unsigned int j = 0; j < k; j++) {
					int64_t e = in[r].topk_idx[t * k + j];
					float yv;

					if (e < 0)
						continue;
					yv = expert_fn(e, x);
					if (dt == FDEV_BF16)
						yv = fdev_bf16_to_f32(fdev_f32_to_bf16(yv));
					else if (dt == FDEV_F16)
						yv = fdev_f16_to_f32(fdev_f32_to_f16(yv));
					ref += in[r].topk_w[t * k + j] * yv;
				}
				got = dt == FDEV_F32 ? ((float *)out[r])[t * H + q] :
				      dt == FDEV_BF16 ? fdev_bf16_to_f32(((uint16_t *)out[r])[t * H + q]) :
				      fdev_f16_to_f32(((uint16_t *)out[r])[t * H + q]);
				if (fabsf(got - ref) > (dt == FDEV_F32 ? 1e-4f : 0.04f) * (1 + fabsf(ref)))
					badc++;
			}
	ok(!err && !badc, "%s: combine equals the dense reference element by element (%d bad)",
	   name, badc);
	/* A handle from another shape is refused, not used. */
	if (mode != FDEV_MOE_LOW_LATENCY) {
		struct fdev_moe_handle *h2 = NULL;
		struct fdev_moe_config c2 = cfg;

		err = fdev_moe_dispatch(c, &cfg, in, h, &h2);
		ok(!err, "%s: dispatch again with the handle (no count exchange) (%d)", name, err);
		fdev_moe_handle_free(h2);
		c2.hidden = H + 1;
		ok(fdev_moe_dispatch(c, &c2, in, h, &h2) == -EINVAL,
		   "%s: a mismatched handle gives -EINVAL", name);
	}
done:
	fdev_moe_handle_free(h);
	fdev_comm_destroy(c);
	for (unsigned int r = 0; r < n; r++) {
		free((void *)in[r].x); free((void *)in[r].topk_idx);
		free((void *)in[r].topk_w); free(y[r]); free(out[r]);
	}
	free(in); free(y); free(out);
}

/* FP8 travels as bytes with its scales; combine comes back in bf16. */
static void test_moe_fp8(void)
{
	enum { N = 2, E = 4, K = 2, H = 256, G = 2 };
	unsigned int Ts[N] = { 5, 3 };
	struct fdev_moe_config cfg = { .num_experts = E, .k = K, .hidden = H,
		.dtype = FDEV_FP8_E4M3, .scale_groups = G, .align = 1 };
	struct fdev_moe_in in[N];
	struct fdev_moe_handle *h = NULL;
	struct fdev_comm *c;
	void *y[N], *out[N];
	int bad = 0, err;

	if (mk(N, 1 << 20, &c)) {
		ok(0, "comm");
		return;
	}
	for (unsigned int r = 0; r < N; r++) {
		uint8_t *x = malloc(Ts[r] * H);
		float *sc = malloc(Ts[r] * G * 4), *w = malloc(Ts[r] * K * 4);
		int64_t *idx = malloc(Ts[r] * K * 8);

		for (unsigned int t = 0; t < Ts[r]; t++) {
			for (unsigned int i = 0; i < H; i++)
				x[t * H + i] = (uint8_t)(i == 0 ? r : i == 1 ? t : (r * 31 + t * 7 + i) & 0x7e);
			for (unsigned int g = 0; g < G; g++)
				sc[t * G + g] = (float)(r * 100 + t) + g * 0.5f;
			idx[t * K] = (t + r) % E;
			idx[t * K + 1] = t % 3 ? (int64_t)((t + r + 1) % E) : -1;
			w[t * K] = 0.75f;
			w[t * K + 1] = 0.25f;
		}
		in[r] = (struct fdev_moe_in){ .tokens = Ts[r], .x = x, .scales = sc,
					      .topk_idx = idx, .topk_w = w };
	}
	err = fdev_moe_dispatch(c, &cfg, in, NULL, &h);
	ok(!err, "fp8 dispatch with scales (%d)", err);
	if (err)
		return;
	for (unsigned int r = 0; r < N; r++) {
		struct fdev_moe_out o;

		fdev_moe_output(h, (int)r, &o);
		y[r] = malloc((o.rows + 1) * H * 2);
		for (uint64_t row = 0; row < o.rows; row++) {
			const uint8_t *x = (const uint8_t *)o.x + row * H;
			unsigned int sr = x[0], t = x[1];

			for (unsigned int i = 2; i < H; i++)
				bad += x[i] != ((sr * 31 + t * 7 + i) & 0x7e);
			for (unsigned int g = 0; g < G; g++)
				bad += o.scales[row * G + g] != (float)(sr * 100 + t) + g * 0.5f;
			for (unsigned int i = 0; i < H; i++)
				((uint16_t *)y[r])[row * H + i] = fdev_f32_to_bf16(1.0f);
		}
		out[r] = malloc(Ts[r] * H * 2);
	}
	ok(!bad, "fp8 bytes and scales arrive unchanged (%d bad)", bad);
	err = fdev_moe_combine(c, h, (const void *const *)y, out);
	bad = 0;
	for (unsigned int r = 0; r < N && !err; r++)
		for (unsigned int t = 0; t < Ts[r]; t++) {
			float want = t % 3 ? 1.0f : 0.75f;

			for (unsigned int i = 0; i < H; i++)
				bad += fdev_bf16_to_f32(((uint16_t *)out[r])[t * H + i]) != want;
		}
	ok(!err && !bad, "fp8 combine returns bf16 weighted sums (%d, %d bad)", err, bad);
	fdev_moe_handle_free(h);
	fdev_comm_destroy(c);
	for (unsigned int r = 0; r < N; r++) {
		free((void *)in[r].x); free((void *)in[r].scales);
		free((void *)in[r].topk_idx); free((void *)in[r].topk_w);
		free(y[r]); free(out[r]);
	}
}

/*
 * Multicast bytes: a token leaves its source once when some other rank
 * owns one of its experts, where throughput sends it once per such rank.
 * With L such tokens and P (token, other rank) pairs, mc * P = tp * L.
 * Without a daemon (ICFABD_SOCKET names nothing) the device gives
 * -ENOTCONN and leaves no circuit behind.
 */
static void test_moe_mc_bytes(void)
{
	enum { N = 4, E = 8, K = 3, H = 10, T = 16 };
	struct fdev_moe_config cfg = { .num_experts = E, .k = K, .hidden = H,
		.dtype = FDEV_BF16, .mode = FDEV_MOE_MULTICAST };
	static int64_t idx[N][T * K];
	static float w[N][T * K];
	static uint16_t x[N][T * H];
	struct fdev_moe_in in[N];
	struct fdev_moe_handle *h = NULL, *t = NULL;
	struct fdev_moe_stats sm, st;
	uint64_t L = 0, P = 0;
	struct fdev_comm *c;
	int err;

	for (unsigned int r = 0; r < N; r++) {
		for (unsigned int i = 0; i < T; i++) {
			uint8_t on[N] = { 0 };
			int leaves = 0;

			for (unsigned int j = 0; j < K; j++) {
				/* token 0 stays home, token 1 goes nowhere */
				int64_t e = i == 0 ? (int64_t)(r * 2 + j % 2) :
					    i == 1 || rnd() % 5 == 0 ? -1 :
					    (int64_t)(rnd() % E);

				idx[r][i * K + j] = e;
				w[r][i * K + j] = 1;
				if (e >= 0 && (unsigned int)e / 2 != r && !on[e / 2]) {
					on[e / 2] = 1;
					P++;
					leaves = 1;
				}
			}
			L += (uint64_t)leaves;
		}
		in[r] = (struct fdev_moe_in){ .tokens = T, .x = x[r], .topk_idx = idx[r],
					      .topk_w = w[r] };
	}
	if (mk(N, 1 << 20, &c)) {
		ok(0, "comm for the multicast byte count");
		return;
	}
	if (dev_mode) {
		char *old = getenv("ICFABD_SOCKET");
		char *keep = old ? strdup(old) : NULL;

		setenv("ICFABD_SOCKET", "/nonexistent/icfabd.sock", 1);
		err = fdev_moe_dispatch(c, &cfg, in, NULL, &h);
		ok(err == -ENOTCONN, "multicast without icfabd: -ENOTCONN (%d)", err);
		if (keep)
			setenv("ICFABD_SOCKET", keep, 1);
		else
			unsetenv("ICFABD_SOCKET");
		free(keep);
	}
	err = fdev_moe_dispatch(c, &cfg, in, NULL, &h);
	cfg.mode = FDEV_MOE_THROUGHPUT;
	if (!err)
		err = fdev_moe_dispatch(c, &cfg, in, NULL, &t);
	memset(&sm, 0, sizeof(sm));
	memset(&st, 0, sizeof(st));
	if (!err)
		err = fdev_moe_stats(h, &sm) ? -EINVAL : fdev_moe_stats(t, &st);
	ok(!err && L && P > L && sm.dispatch_bytes * P == st.dispatch_bytes * L,
	   "multicast sends each leaving token once: %llu bytes vs throughput's %llu (%llu tokens, %llu copies)",
	   (unsigned long long)sm.dispatch_bytes, (unsigned long long)st.dispatch_bytes,
	   (unsigned long long)L, (unsigned long long)P);
	fdev_moe_handle_free(h);
	fdev_moe_handle_free(t);
	fdev_comm_destroy(c);
}

/*
 * moe_peer_order(): every rank once, itself last; in each round of the
 * scale-out part (its m-th rank on another node) every rank hears from
 * one source; on one node, s + 1, s + 2, ...
 */
static void test_peer_order(void)
{
	static const unsigned int shapes[][2] = {
		{ 8, 8 }, { 8, 4 }, { 8, 2 }, { 8, 1 }, { 16, 8 }, { 64, 8 },
		{ 24, 8 }, { 6, 3 },
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		unsigned int n = shapes[i][0], g = shapes[i][1];
		struct fdev_moe_handle h = { .nranks = n, .node_size = g,
					     .nr_nodes = n / g };
		unsigned int *order = calloc((size_t)n * n, sizeof(*order));
		unsigned int *heard = calloc((size_t)n * n, sizeof(*heard));
		int bad = 0;

		for (unsigned int s = 0; s < n; s++) {
			unsigned int seen[64] = { 0 }, m = 0;

			moe_peer_order(&h, s, order + s * n);
			for (unsigned int j = 0; j < n; j++) {
				unsigned int d = order[s * n + j];

				bad += d >= n || seen[d]++;
				if (d < n && d / g != s / g)
					heard[m++ * n + d]++;
				if (g == n)
					bad += d != (s + 1 + j) % n;
			}
			bad += order[s * n + n - 1] != s;
		}
		for (unsigned int m = 0; m < n - g; m++)
			for (unsigned int d = 0; d < n; d++)
				bad += heard[m * n + d] != 1;
		ok(!bad, "peer order n=%u, nodes of %u: a permutation, itself last, one remote source per rank and round (%d bad)",
		   n, g, bad);
		free(order);
		free(heard);
	}
}

/*
 * Direct reduce-scatter, all-gather and all-reduce post their transfers
 * as the all-to-all does: a source's k-th transfer of a step goes to
 * the rank k after it, so no receiver has every source at once.
 */
static void test_direct_order(void)
{
	static const char *const what[] = { "reduce-scatter", "all-gather",
					    "all-reduce" };

	for (unsigned int w = 0; w < 3; w++) {
		for (unsigned int n = 2; n <= 9; n += 7) {
			struct fdev_coll_layout lo;
			struct fdev_plan p;
			unsigned int k[9] = { 0 }, steps = 0;
			uint32_t last = ~0U;
			int err, bad = 0;

			fdev_plan_init(&p);
			if (w == 0)
				err = fdev_plan_reduce_scatter(&p, n, 10, FDEV_F32,
							       FDEV_ALGO_DIRECT, &lo);
			else if (w == 1)
				err = fdev_plan_all_gather(&p, n, 40,
							   FDEV_ALGO_DIRECT, &lo);
			else
				err = fdev_plan_all_reduce(&p, n, 10 * n, FDEV_F32,
							   FDEV_ALGO_DIRECT, 0, &lo);
			for (size_t i = 0; !err && i < p.nx; i++) {
				const struct fdev_xfer *x = &p.x[i];

				if (x->step != last) {
					for (unsigned int r = 0; r < n; r++)
						bad += last != ~0U && k[r] != n - 1;
					memset(k, 0, sizeof(k));
					last = x->step;
					steps++;
				}
				bad += x->dst != (x->src + ++k[x->src]) % n;
			}
			for (unsigned int r = 0; r < n; r++)
				bad += k[r] != n - 1;
			ok(!err && !bad && steps == (w == 2 ? 2 : 1),
			   "direct %s n=%u: source s's k-th transfer goes to s + k (%d, %d bad, %u steps)",
			   what[w], n, err, bad, steps);
			fdev_plan_free(&p);
		}
	}
}

/* One hierarchical dispatch and combine, with FDEV_HIER_CHUNKS=@chunks. */
struct hier_run {
	struct fdev_moe_handle *h;
	float *out[8];
	struct fdev_moe_stats st;
	int err;
};

static void hier_run(struct fdev_comm *c, const struct fdev_moe_config *cfg,
		     const struct fdev_moe_in *in, unsigned int n,
		     const char *chunks, struct hier_run *r)
{
	void *y[8] = { 0 };
	unsigned int H = cfg->hidden;

	setenv("FDEV_HIER_CHUNKS", chunks, 1);
	memset(r, 0, sizeof(*r));
	r->err = fdev_moe_dispatch(c, cfg, in, NULL, &r->h);
	unsetenv("FDEV_HIER_CHUNKS");
	for (unsigned int q = 0; !r->err && q < n; q++) {
		struct fdev_moe_out o;

		fdev_moe_output(r->h, (int)q, &o);
		y[q] = calloc(o.rows + 1, H * 4);
		for (uint64_t i = 0; i < o.rows * H; i++)
			((float *)y[q])[i] = ((const float *)o.x)[i] * 0.5f +
					     (float)(i % 7);
		r->out[q] = calloc(in[q].tokens + 1, H * 4);
	}
	if (!r->err)
		r->err = fdev_moe_combine(c, r->h, (const void *const *)y,
					  (void *const *)r->out);
	if (!r->err)
		r->err = fdev_moe_stats(r->h, &r->st);
	for (unsigned int q = 0; q < n; q++)
		free(y[q]);
}

static void hier_run_free(struct hier_run *r, unsigned int n)
{
	fdev_moe_handle_free(r->h);
	for (unsigned int q = 0; q < n; q++)
		free(r->out[q]);
}

/* Outputs of @a and @b differ: the number of differing arrays. */
static int hier_diff(const struct hier_run *a, const struct hier_run *b,
		     const struct fdev_moe_config *cfg,
		     const struct fdev_moe_in *in, unsigned int n)
{
	unsigned int epr = cfg->num_experts / n, H = cfg->hidden, k = cfg->k;
	int bad = 0;

	for (unsigned int q = 0; q < n; q++) {
		struct fdev_moe_out x, z;

		fdev_moe_output(a->h, (int)q, &x);
		fdev_moe_output(b->h, (int)q, &z);
		if (x.rows != z.rows || x.recv_tokens != z.recv_tokens) {
			bad++;
			continue;
		}
		bad += !!memcmp(x.expert_count, z.expert_count, epr * 8);
		bad += !!memcmp(x.expert_offset, z.expert_offset, epr * 8);
		bad += !!memcmp(x.x, z.x, x.rows * H * 4);
		bad += !!memcmp(x.topk_idx, z.topk_idx, x.rows * k * 8);
		bad += !!memcmp(x.topk_w, z.topk_w, x.rows * k * 4);
		bad += !!memcmp(a->out[q], b->out[q], in[q].tokens * H * 4);
	}
	return bad;
}

/*
 * The pipelined hierarchical mode against the unpipelined one (chunks =
 * 1) on the same routing: rows, ids, weights and combine outputs equal
 * bit for bit, the same bytes sent, at chunk boundaries (@Ts tokens per
 * rank, not dividing by @chunks, some with one token or none). Expert 1
 * receives nothing.
 */
static void test_moe_hier_chunks(const char *name, unsigned int n,
				 unsigned int g, const unsigned int *Ts,
				 const char *chunks)
{
	struct fdev_moe_config cfg = { .num_experts = 2 * n, .k = 3, .hidden = 5,
		.dtype = FDEV_F32, .mode = FDEV_MOE_HIERARCHICAL, .align = 2 };
	struct fdev_moe_in in[8];
	struct hier_run one, many;
	struct fdev_moe_handle *again = NULL;
	struct fdev_comm *c;
	int err, empty = 0;

	if (mk(n, 8 << 20, &c)) {
		ok(0, "host comm");
		return;
	}
	if (fdev_comm_set_node_size(c, (int)g)) {
		ok(0, "%s: node size %u", name, g);
		fdev_comm_destroy(c);
		return;
	}
	for (unsigned int r = 0; r < n; r++) {
		unsigned int T = Ts[r], k = cfg.k;
		int64_t *idx = malloc((T * k + 1) * 8);
		float *w = malloc((T * k + 1) * 4), *x = malloc((T * 5 + 1) * 4);

		for (unsigned int t = 0; t < T; t++) {
			for (unsigned int j = 0; j < k; j++) {
				int64_t e;
				int dup;

				do {
					e = (int64_t)(rnd() % cfg.num_experts);
					e = e == 1 || rnd() % 6 == 0 ? -1 : e;
					dup = 0;
					for (unsigned int q = 0; q < j; q++)
						dup |= e >= 0 && idx[t * k + q] == e;
				} while (dup);
				idx[t * k + j] = e;
				w[t * k + j] = (float)(j + 1) / 3;
			}
			for (unsigned int i = 0; i < 5; i++)
				x[t * 5 + i] = (float)((r * 7 + t * 3 + i) % 11) / 3 - 1;
		}
		in[r] = (struct fdev_moe_in){ .tokens = T, .x = x, .topk_idx = idx,
			.topk_w = w };
	}
	hier_run(c, &cfg, in, n, "1", &one);
	hier_run(c, &cfg, in, n, chunks, &many);
	ok(!one.err && !many.err, "%s: dispatch and combine, chunks 1 and %s (%d, %d)",
	   name, chunks, one.err, many.err);
	if (!one.err && !many.err) {
		struct fdev_moe_out o;

		fdev_moe_output(many.h, 0, &o);
		empty = o.expert_count[1] == 0;
		ok(!hier_diff(&one, &many, &cfg, in, n) && empty,
		   "%s: rows, ids, weights and combine equal the unpipelined ones bit for bit (expert 1 empty: %d)",
		   name, empty);
		ok(one.st.dispatch_bytes == many.st.dispatch_bytes &&
		   one.st.combine_bytes == many.st.combine_bytes,
		   "%s: the same bytes sent (dispatch %" PRIu64 "/%" PRIu64
		   ", combine %" PRIu64 "/%" PRIu64 ")", name,
		   one.st.dispatch_bytes, many.st.dispatch_bytes,
		   one.st.combine_bytes, many.st.combine_bytes);
		/*
		 * On the device, one context drives every rank: the peers'
		 * steps go as their chunks land (gated). The stepped
		 * schedule must give the same outputs and bytes.
		 */
		if (dev_mode) {
			struct hier_run stepped, gated;

			setenv("FDEV_HIER_GATED", "0", 1);
			hier_run(c, &cfg, in, n, chunks, &stepped);
			setenv("FDEV_HIER_GATED", "1", 1);
			hier_run(c, &cfg, in, n, chunks, &gated);
			unsetenv("FDEV_HIER_GATED");
			ok(!stepped.err && !gated.err &&
			   !hier_diff(&stepped, &one, &cfg, in, n) &&
			   !hier_diff(&gated, &one, &cfg, in, n) &&
			   stepped.st.dispatch_bytes == gated.st.dispatch_bytes &&
			   stepped.st.combine_bytes == gated.st.combine_bytes &&
			   gated.st.dispatch_bytes == one.st.dispatch_bytes,
			   "%s: gated as its chunks land, as stepped: outputs bit for bit, the same bytes (%d, %d)",
			   name, gated.err, stepped.err);
			hier_run_free(&stepped, n);
			hier_run_free(&gated, n);
			/* Gated, paced by the scale-out sends alone. */
			setenv("FDEV_HIER_GATED", "1", 1);
			setenv("FDEV_HIER_NICPACE", "1", 1);
			hier_run(c, &cfg, in, n, chunks, &gated);
			unsetenv("FDEV_HIER_GATED");
			unsetenv("FDEV_HIER_NICPACE");
			ok(!gated.err && !hier_diff(&gated, &one, &cfg, in, n) &&
			   gated.st.dispatch_bytes == one.st.dispatch_bytes &&
			   gated.st.combine_bytes == one.st.combine_bytes,
			   "%s: gated, paced by the scale-out sends (FDEV_HIER_NICPACE): outputs bit for bit, the same bytes (%d)",
			   name, gated.err);
			hier_run_free(&gated, n);
		}
		/*
		 * Chunks that shrink (FDEV_HIER_TAPER), combined last chunk
		 * first (FDEV_HIER_CREV), stepped and, on the device, gated:
		 * the chunks' bounds move, the outputs and bytes must not.
		 */
		for (int gated = 0; gated <= dev_mode; gated++) {
			struct hier_run tap;

			setenv("FDEV_HIER_TAPER", "70", 1);
			setenv("FDEV_HIER_CREV", "1", 1);
			setenv("FDEV_HIER_GATED", gated ? "1" : "0", 1);
			hier_run(c, &cfg, in, n, chunks, &tap);
			unsetenv("FDEV_HIER_TAPER");
			unsetenv("FDEV_HIER_CREV");
			unsetenv("FDEV_HIER_GATED");
			ok(!tap.err && !hier_diff(&tap, &one, &cfg, in, n) &&
			   tap.st.dispatch_bytes == one.st.dispatch_bytes &&
			   tap.st.combine_bytes == one.st.combine_bytes,
			   "%s: chunks shrinking by 70%%, combined last first (%s): outputs bit for bit, the same bytes (%d)",
			   name, gated ? "gated" : "stepped", tap.err);
			hier_run_free(&tap, n);
		}
		/* The handle keeps its chunks: reused under another setting. */
		setenv("FDEV_HIER_CHUNKS", "1", 1);
		err = fdev_moe_dispatch(c, &cfg, in, many.h, &again);
		unsetenv("FDEV_HIER_CHUNKS");
		ok(!err, "%s: dispatch again with the pipelined handle (%d)", name, err);
		fdev_moe_handle_free(again);
	}
	hier_run_free(&one, n);
	hier_run_free(&many, n);
	for (unsigned int r = 0; r < n; r++) {
		free((void *)in[r].x);
		free((void *)in[r].topk_idx);
		free((void *)in[r].topk_w);
	}
	fdev_comm_destroy(c);
}

static void test_moe_mc(void);

static void test_moe(void)
{
	test_moe_fp8();
	unsigned int T4[] = { 12, 0, 7, 30 }, T2[] = { 20, 9 }, T8[] = { 5, 5, 0, 9, 1, 0, 13, 2 };

	test_moe_case("tp f32 n=4 E=8 k=2 H=13 T=0 on one rank", 4, 8, 2, 13, T4, 0, 0, FDEV_F32, 1);
	test_moe_case("tp bf16 skewed n=4 E=8 k=3 H=6 align 4", 4, 8, 3, 6, T4, 1, 0, FDEV_BF16, 4);
	test_moe_case("tp f16 n=2 E=4 k=4 H=9", 2, 4, 4, 9, T2, 0, 0, FDEV_F16, 1);
	test_moe_case("tp f32 n=8 E=16 k=2 H=5", 8, 16, 2, 5, T8, 1, 0, FDEV_F32, 2);
	test_moe_case("ll f32 n=4 E=8 k=2 H=13", 4, 8, 2, 13, T4, 0, 1, FDEV_F32, 1);
	test_moe_case("ll bf16 skewed n=8 E=16 k=3 H=7 align 8", 8, 16, 3, 7, T8, 1, 1, FDEV_BF16, 8);
	/* low latency on nodes: the sends go in moe_peer_order() */
	test_peer_order();
	test_direct_order();
	moe_node_size = 4;
	test_moe_case("ll f32 n=8 (2x4) E=16 k=3 H=13", 8, 16, 3, 13, T8, 0, 1, FDEV_F32, 1);
	moe_node_size = 2;
	test_moe_case("ll bf16 skewed n=8 (4x2) E=32 k=2 H=7 align 4", 8, 32, 2, 7, T8, 1, 1, FDEV_BF16, 4);
	/* hierarchical: nodes of 2 and 4, T = 0 on some ranks, skew, -1 */
	moe_node_size = 4;
	test_moe_case("hier f32 n=8 (2x4) E=16 k=3 H=13", 8, 16, 3, 13, T8, 0, 2, FDEV_F32, 1);
	test_moe_case("hier bf16 skewed n=8 (2x4) E=16 k=4 H=7 align 4", 8, 16, 4, 7, T8, 1, 2, FDEV_BF16, 4);
	moe_node_size = 2;
	test_moe_case("hier f16 n=8 (4x2) E=32 k=2 H=9", 8, 32, 2, 9, T8, 0, 2, FDEV_F16, 1);
	test_moe_case("hier f32 skewed n=4 (2x2) E=8 k=3 H=6 align 8", 4, 8, 3, 6, T4, 1, 2, FDEV_F32, 8);
	moe_node_size = 1;
	test_moe_case("hier bf16 n=4 (4x1) E=8 k=2 H=5", 4, 8, 2, 5, T4, 0, 2, FDEV_BF16, 2);
	moe_node_size = 4;
	test_moe_case("hier f32 n=4 (one node) E=8 k=2 H=11", 4, 8, 2, 11, T4, 1, 2, FDEV_F32, 1);
	/* pipelined in chunks: one token, tokens not dividing, an empty expert */
	{
		unsigned int one[] = { 1, 1, 1, 1, 1, 1, 1, 1 };
		unsigned int odd[] = { 7, 13, 0, 5, 9, 1, 11, 6 };
		unsigned int more[] = { 40, 33, 0, 17, 64, 5, 48, 21 };

		test_moe_hier_chunks("hier chunks 4, one token per rank (2x4)", 8, 4, one, "4");
		test_moe_hier_chunks("hier chunks 3, tokens not dividing (4x2)", 8, 2, odd, "3");
		test_moe_hier_chunks("hier chunks 64, more chunks than tokens (2x4)", 8, 4, odd, "64");
		test_moe_hier_chunks("hier chunks 2 (2x2)", 4, 2, odd, "2");
		/* as many as where the NIC is the busier side (hier_chunks()) */
		test_moe_hier_chunks("hier chunks 16, 0 to 64 tokens (4x2)", 8, 2, more, "16");
	}
	/* On the device, multicast needs icfabd with colours: --multicast. */
	if (!dev_mode)
		test_moe_mc();
}

static void test_moe_mc(void)
{
	unsigned int T4[] = { 12, 0, 7, 30 }, T2[] = { 20, 9 }, T8[] = { 5, 5, 0, 9, 1, 0, 13, 2 };

	test_moe_mc_bytes();
	test_moe_case("mc f32 n=4 E=8 k=2 H=13 T=0 on one rank", 4, 8, 2, 13, T4, 0, 3, FDEV_F32, 1);
	test_moe_case("mc bf16 skewed n=4 E=8 k=3 H=6 align 4", 4, 8, 3, 6, T4, 1, 3, FDEV_BF16, 4);
	test_moe_case("mc f16 n=2 E=4 k=4 H=9", 2, 4, 4, 9, T2, 0, 3, FDEV_F16, 1);
	test_moe_case("mc f32 skewed n=8 E=16 k=2 H=5 align 2", 8, 16, 2, 5, T8, 1, 3, FDEV_F32, 2);
	test_moe_case("mc bf16 n=8 E=32 k=4 H=7 align 8", 8, 32, 4, 7, T8, 0, 3, FDEV_BF16, 8);
}

/*
 * Past the old 256-rank limit: @n ranks in host memory, top-4 of 2n
 * experts with weights 1/4 on identity experts, so combine must give the
 * input back, element by element.
 */
static void test_many_ranks_case(unsigned int n, unsigned int mode, uint64_t ws)
{
	const unsigned int T = 2, H = 8, k = 4, E = 2 * n;
	struct fdev_moe_config cfg = { .num_experts = E, .k = k, .hidden = H,
		.dtype = FDEV_F32, .mode = mode, .max_tokens = T };
	struct fdev_moe_in *in = calloc(n, sizeof(*in));
	const void **y = calloc(n, sizeof(*y));
	void **out = calloc(n, sizeof(*out));
	int64_t *idx = malloc((size_t)n * T * k * 8);
	float *w = malloc((size_t)n * T * k * 4), *x = malloc((size_t)n * T * H * 4);
	struct fdev_moe_handle *h = NULL;
	struct fdev_comm *c = NULL;
	uint64_t bad = 0;
	int err;

	err = __fdev_comm_init_host(n, ws, &c);
	ok(err == 0, "%u ranks, host communicator (%d)", n, err);
	for (unsigned int r = 0; r < n; r++) {
		for (unsigned int i = 0; i < T * k; i++) {
			idx[(size_t)r * T * k + i] = (r * 7 + i * 13 + i / k) % E;
			w[(size_t)r * T * k + i] = 0.25f;
		}
		for (unsigned int i = 0; i < T * H; i++)
			x[(size_t)r * T * H + i] = (float)(r + i);
		in[r] = (struct fdev_moe_in){ .tokens = T, .x = x + (size_t)r * T * H,
			.topk_idx = idx + (size_t)r * T * k, .topk_w = w + (size_t)r * T * k };
	}
	err = c ? fdev_moe_dispatch(c, &cfg, in, NULL, &h) : -EINVAL;
	ok(err == 0, "%u ranks, %s dispatch (%d)", n, mode ? "low-latency" : "throughput", err);
	for (unsigned int r = 0; !err && r < n; r++) {
		struct fdev_moe_out o;

		fdev_moe_output(h, (int)r, &o);
		y[r] = o.x;
		out[r] = malloc(T * H * 4);
	}
	if (!err)
		err = fdev_moe_combine(c, h, y, out);
	for (unsigned int r = 0; !err && r < n; r++)
		for (unsigned int i = 0; i < T * H; i++)
			bad += ((float *)out[r])[i] != x[(size_t)r * T * H + i];
	ok(!err && !bad, "%u ranks: combine gives the input back, element by element (%d, %llu bad)",
	   n, err, (unsigned long long)bad);
	fdev_moe_handle_free(h);
	fdev_comm_destroy(c);
	for (unsigned int r = 0; r < n; r++)
		free(out[r]);
	free(in); free(y); free(out); free(idx); free(w); free(x);
}

static void test_many_ranks(void)
{
	struct fdev_comm *c = NULL;

	test_many_ranks_case(1024, FDEV_MOE_LOW_LATENCY, 1 << 20);
	test_many_ranks_case(300, FDEV_MOE_THROUGHPUT, 1 << 20);
	ok(__fdev_comm_init_host(1025, 4096, &c) == -EINVAL, "1025 ranks: -EINVAL");
	ok(__fdev_comm_init_host(1024, 4096, &c) == 0 && !fdev_comm_exclude(c, 1000) &&
	   fdev_comm_failed(c, 15) == 1ULL << (1000 % 64) && !fdev_comm_failed(c, 3),
	   "rank 1000 of 1024 excluded: word 15 says so");
	fdev_comm_destroy(c);
}

static void test_bad_args(void)
{
	struct fdev_comm *c;
	struct fdev_moe_handle *h = NULL;
	struct fdev_moe_config cfg = { .num_experts = 8, .k = 1, .hidden = 4,
		.dtype = FDEV_F32 };
	int64_t idx[2] = { 9, 0 };
	float w[2] = { 1, 1 }, x[8] = { 0 };
	struct fdev_moe_in in[2] = { { .tokens = 1, .x = x, .topk_idx = idx, .topk_w = w },
				     { .tokens = 1, .x = x, .topk_idx = idx + 1, .topk_w = w } };

	ok(__fdev_comm_init_host(2, 1 << 16, &c) == 0, "host comm");
	ok(fdev_moe_dispatch(c, &cfg, in, NULL, &h) == -EINVAL, "expert 9 of 8: -EINVAL");
	ok(fdev_moe_dispatch(c, NULL, in, NULL, &h) == -EINVAL, "NULL config: -EINVAL");
	idx[0] = 0;
	in[0].topk_w = NULL;
	ok(fdev_moe_dispatch(c, &cfg, in, NULL, &h) == -EFAULT, "NULL weights: -EFAULT");
	in[0].topk_w = w;
	cfg.num_experts = 7;
	ok(fdev_moe_dispatch(c, &cfg, in, NULL, &h) == -EINVAL, "7 experts on 2 ranks: -EINVAL");
	cfg.num_experts = 8;
	cfg.reserved[0] = 1;
	ok(fdev_moe_dispatch(c, &cfg, in, NULL, &h) == -EINVAL, "reserved word set: -EINVAL");
	ok(fdev_all_reduce(c, x, x, 2, FDEV_U8, FDEV_ALGO_RING) == -EINVAL, "all-reduce of bytes: -EINVAL");
	ok(fdev_all_reduce(c, NULL, x, 2, FDEV_F32, FDEV_ALGO_RING) == -EFAULT, "NULL send: -EFAULT");
	ok(fdev_broadcast(c, x, x, 2, FDEV_F32, 5, FDEV_ALGO_TREE) == -EINVAL, "root out of range: -EINVAL");
	ok(fdev_all_reduce(c, x, x, 1 << 20, FDEV_F32, FDEV_ALGO_RING) == -EMSGSIZE,
	   "bigger than the workspace: -EMSGSIZE");
	ok(fdev_moe_combine(c, NULL, NULL, NULL) == -EINVAL, "combine without handle: -EINVAL");
	{
		struct fdev_comm *sub = NULL;

		ok(fdev_comm_init_sub(NULL, "j", 0, 1, 0, &sub) == -EINVAL &&
		   fdev_comm_init_sub(c, "j", 1, 1, 0, &sub) == -EINVAL &&
		   fdev_comm_init_sub(c, "", 0, 1, 0, &sub) == -EINVAL && !sub,
		   "sub-communicator of no parent, rank out of range, no job: -EINVAL");
		ok(fdev_comm_init_sub(c, "j", 0, 1, 0, &sub) == -EOPNOTSUPP && !sub,
		   "sub-communicator of one process driving every rank: -EOPNOTSUPP");
	}
	/* Rank masking: experts of an excluded rank are dropped and counted. */
	ok(fdev_comm_exclude(c, 1) == 0 && (fdev_comm_failed(c, 0) & 2), "rank 1 excluded");
	ok(fdev_all_reduce(c, x, x, 2, FDEV_F32, FDEV_ALGO_RING) == -ENOLINK,
	   "a collective with an excluded rank: -ENOLINK");
	cfg.reserved[0] = 0;
	idx[0] = 5;	/* on rank 1 */
	{
		struct fdev_moe_stats st;

		ok(fdev_moe_dispatch(c, &cfg, in, NULL, &h) == 0 && !fdev_moe_stats(h, &st) &&
		   st.dropped == 1, "dispatch to an excluded rank: dropped and counted");
		fdev_moe_handle_free(h);
		cfg.mode = FDEV_MOE_HIERARCHICAL;
		ok(fdev_moe_dispatch(c, &cfg, in, NULL, &h) == -ENOLINK,
		   "hierarchical with an excluded rank (it would forward): -ENOLINK");
		cfg.mode = FDEV_MOE_MULTICAST;
		ok(fdev_moe_dispatch(c, &cfg, in, NULL, &h) == -ENOLINK,
		   "multicast with an excluded rank (its tree reaches it): -ENOLINK");
		cfg.mode = 4;
		ok(fdev_moe_dispatch(c, &cfg, in, NULL, &h) == -EINVAL, "unknown mode: -EINVAL");
		cfg.mode = FDEV_MOE_THROUGHPUT;
	}
	/* Trace labels: one field of the marker line. */
	ok(fdev_comm_set_label(c, "all_to_all_single") == 0, "label taken");
	ok(fdev_comm_set_label(c, "all to all") == -EINVAL, "a label with a blank: -EINVAL");
	ok(fdev_comm_set_label(c, "a=b") == -EINVAL, "a label with '=': -EINVAL");
	ok(fdev_comm_set_label(c, "0123456789012345678901234567890123") == -ENAMETOOLONG,
	   "a label of 34 characters: -ENAMETOOLONG");
	ok(fdev_comm_set_label(c, NULL) == 0 && fdev_comm_set_label(c, "") == 0,
	   "NULL and \"\" clear the label");
	ok(fdev_comm_set_label(NULL, "x") == -EINVAL, "no communicator: -EINVAL");
	fdev_comm_destroy(c);
	ok(fdev_comm_init_local(NULL, 0, NULL, 0, 0, &c) == -EINVAL, "zero ranks: -EINVAL");
	ok(fdev_comm_init(NULL, "x/y", 0, 2, 0, 0, &c) == -EINVAL ||
	   fdev_comm_init(NULL, "x/y", 0, 2, 0, 0, &c) == -ENOENT, "bad job name refused");
}

/*
 * Zero copy. Device: one process driving 4 ranks, each with two regions
 * of one page (A and B), mapped so that the ranks' A (and B) pages lie
 * back to back, as a local communicator's buffers do. The same
 * all-to-all, all-to-all-v and all-reduce (in place) on them and on
 * malloc'd buffers give the same bytes and the same fabric time, and
 * the byte counters say which path each took. Host: registering is
 * -EOPNOTSUPP and staged bytes are counted.
 */
#define ZC_N	4
#define ZC_PAGE	4096

static int zc_regions(struct fdev_comm *c, struct fdev_region *reg,
		      uint8_t **area)
{
	struct fdev *dev = fdev_comm_dev(c);

	for (int k = 0; k < 2; k++) {
		area[k] = mmap(NULL, ZC_N * ZC_PAGE, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (area[k] == MAP_FAILED)
			return -errno;
	}
	for (unsigned int i = 0; i < 2 * ZC_N; i++) {
		struct fdev_region *r = &reg[i];
		uint8_t *at = area[i / ZC_N] + (i % ZC_N) * ZC_PAGE;
		int err = fdev_region_alloc(dev, fdev_comm_endpoint(c, i % ZC_N),
					    ZC_PAGE, r);

		if (err)
			return err;
		munmap(r->addr, r->size);
		r->addr = mmap(at, ZC_PAGE, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_FIXED, fdev_fd(dev),
			       (off_t)r->mmap_offset);
		if (r->addr == MAP_FAILED) {
			r->addr = NULL;
			return -errno;
		}
		err = fdev_comm_register(c, r);
		if (err)
			return err;
	}
	return 0;
}

static void test_zc(void)
{
	const unsigned int n = ZC_N, cnt = ZC_PAGE / 4 / ZC_N;
	const size_t all = (size_t)n * ZC_PAGE;
	struct fdev_region reg[2 * ZC_N], bad = { 0 };
	uint64_t scnt[ZC_N * ZC_N], rcnt[ZC_N * ZC_N], st0, ip0, st, ip, ps;
	float *in = malloc(all), *out = malloc(all);
	uint8_t *area[2] = { NULL, NULL };
	struct fdev_comm *c;
	int err;

	memset(reg, 0, sizeof(reg));
	if (!in || !out || mk(n, 1 << 20, &c)) {
		ok(0, "zc: communicator");
		return;
	}
	fill_ranks(in, n, n * cnt);
	if (!dev_mode) {
		bad = (struct fdev_region){ .handle = 1, .addr = in, .size = all };
		ok(fdev_comm_register(c, &bad) == -EOPNOTSUPP,
		   "zc: a host communicator cannot register");
		ok(!fdev_all_to_all(c, in, out, cnt, FDEV_F32, FDEV_ALGO_AUTO),
		   "zc: host all-to-all");
		fdev_comm_bytes(c, &st, &ip);
		ok(st == 2 * all && ip == 0,
		   "zc: a staged all-to-all counts its bytes in and out");
		goto out;
	}
	err = zc_regions(c, reg, area);
	ok(!err, "zc: two regions per rank, registered (%d)", err);
	if (err)
		goto out;
	ok(fdev_comm_register(c, &reg[0]) == -EEXIST, "zc: registered twice: -EEXIST");
	bad = reg[0];
	bad.handle = UINT32_MAX;
	bad.endpoint = UINT32_MAX;
	ok(fdev_comm_register(c, &bad) == -EINVAL,
	   "zc: a region on no local rank's endpoint: -EINVAL");

	/*
	 * Each kind: staged, in place, staged again. The fabric times
	 * compared are of the last two, each after an operation of the same
	 * kind. (A submission at the instant of the last event the engine
	 * processed sorts after what was in flight then, whatever its key:
	 * an operation's time does not depend on the one before.)
	 */
	/* All-to-all, A to B. */
	ok(!fdev_all_to_all(c, in, out, cnt, FDEV_F32, FDEV_ALGO_AUTO),
	   "zc: staged all-to-all");
	memcpy(area[0], in, all);
	memset(area[1], 0, all);
	fdev_comm_bytes(c, &st0, &ip0);
	ok(!fdev_all_to_all(c, area[0], area[1], cnt, FDEV_F32, FDEV_ALGO_AUTO),
	   "zc: all-to-all in place");
	ps = fdev_comm_last_ps(c);
	fdev_comm_bytes(c, &st, &ip);
	ok(!memcmp(area[1], out, all), "zc: all-to-all: the same bytes");
	ok(st == st0 && ip - ip0 == 2 * all, "zc: all-to-all: nothing staged");
	fdev_all_to_all(c, in, out, cnt, FDEV_F32, FDEV_ALGO_AUTO);
	ok(fdev_comm_last_ps(c) == ps, "zc: all-to-all: the same fabric time (%llu ps, %llu)",
	   (unsigned long long)ps, (unsigned long long)fdev_comm_last_ps(c));

	/* All-to-all-v, unequal counts (each rank's total is one page). */
	for (unsigned int s = 0; s < n; s++)
		for (unsigned int d = 0; d < n; d++)
			scnt[s * n + d] = cnt - 96 + 64 * ((s + d) % n);
	ok(!fdev_all_to_all_v(c, in, scnt, out, rcnt, FDEV_F32, FDEV_ALGO_AUTO),
	   "zc: staged all-to-all-v");
	memset(area[1], 0, all);
	fdev_comm_bytes(c, &st0, &ip0);
	ok(!fdev_all_to_all_v(c, area[0], scnt, area[1], rcnt, FDEV_F32,
			      FDEV_ALGO_AUTO), "zc: all-to-all-v in place");
	ps = fdev_comm_last_ps(c);
	fdev_comm_bytes(c, &st, &ip);
	ok(!memcmp(area[1], out, all), "zc: all-to-all-v: the same bytes");
	ok(st == st0 && ip - ip0 == 2 * all, "zc: all-to-all-v: nothing staged");
	fdev_all_to_all_v(c, in, scnt, out, rcnt, FDEV_F32, FDEV_ALGO_AUTO);
	ok(fdev_comm_last_ps(c) == ps, "zc: all-to-all-v: the same fabric time (%llu ps, %llu)",
	   (unsigned long long)ps, (unsigned long long)fdev_comm_last_ps(c));

	/* All-reduce in place in A; then send in B, recv malloc'd. */
	ok(!fdev_all_reduce(c, in, out, n * cnt, FDEV_F32, FDEV_ALGO_AUTO),
	   "zc: staged all-reduce");
	fdev_comm_bytes(c, &st0, &ip0);
	ok(!fdev_all_reduce(c, area[0], area[0], n * cnt, FDEV_F32,
			    FDEV_ALGO_AUTO), "zc: all-reduce in place");
	ps = fdev_comm_last_ps(c);
	fdev_comm_bytes(c, &st, &ip);
	ok(!memcmp(area[0], out, all), "zc: all-reduce: the same sums");
	ok(st == st0 && ip - ip0 == 2 * all, "zc: all-reduce: nothing staged");
	fdev_all_reduce(c, in, out, n * cnt, FDEV_F32, FDEV_ALGO_AUTO);
	/*
	 * Each of the ring's 2(n - 1) steps submits at the instant the last
	 * one ended: the same time whatever the queues' sequence numbers in
	 * the keys (a step could start a ps later, before: seen 1 ps apart
	 * on 6.12).
	 */
	ok(fdev_comm_last_ps(c) == ps, "zc: all-reduce: the same fabric time "
	   "(%llu ps, %llu)", (unsigned long long)ps,
	   (unsigned long long)fdev_comm_last_ps(c));
	memcpy(area[1], in, all);
	memset(out, 0, all);
	fdev_comm_bytes(c, &st0, &ip0);
	ok(!fdev_all_reduce(c, area[1], out, n * cnt, FDEV_F32, FDEV_ALGO_RING),
	   "zc: all-reduce from a region into malloc'd memory");
	fdev_comm_bytes(c, &st, &ip);
	ok(!memcmp(area[0], out, all) && st - st0 == all && ip - ip0 == all,
	   "zc: the same sums, the output staged, the input not");

	/*
	 * All-gather and reduce-scatter of a page per rank from A (one
	 * page each is all A holds per rank, so the outputs are malloc'd);
	 * broadcast in place in A.
	 */
	{
		uint8_t *ref = malloc((size_t)n * all);
		uint8_t *got = malloc((size_t)n * all);

		if (!ref || !got) {
			ok(0, "zc: buffers");
		} else {
			memcpy(area[0], in, all);
			ok(!fdev_all_gather(c, in, ref, ZC_PAGE, FDEV_U8, FDEV_ALGO_AUTO),
			   "zc: staged all-gather");
			fdev_comm_bytes(c, &st0, &ip0);
			ok(!fdev_all_gather(c, area[0], got, ZC_PAGE, FDEV_U8,
					    FDEV_ALGO_AUTO) &&
			   !memcmp(got, ref, (size_t)n * all),
			   "zc: all-gather from a region: the same bytes");
			fdev_comm_bytes(c, &st, &ip);
			ok(ip - ip0 == all && st - st0 == (size_t)n * all,
			   "zc: all-gather: the inputs in place, the outputs staged");
			ok(!fdev_reduce_scatter(c, in, ref, cnt, FDEV_F32, FDEV_ALGO_AUTO),
			   "zc: staged reduce-scatter");
			fdev_comm_bytes(c, &st0, &ip0);
			ok(!fdev_reduce_scatter(c, area[0], got, cnt, FDEV_F32,
						FDEV_ALGO_AUTO) &&
			   !memcmp(got, ref, all / n),
			   "zc: reduce-scatter from a region: the same sums");
			fdev_comm_bytes(c, &st, &ip);
			ok(ip - ip0 == all && st - st0 == all / n,
			   "zc: reduce-scatter: the inputs in place, the outputs staged");
			memcpy(ref, in, all);
			ok(!fdev_broadcast(c, ref, ref, cnt * n, FDEV_F32, 2,
					   FDEV_ALGO_AUTO), "zc: staged broadcast");
			fdev_comm_bytes(c, &st0, &ip0);
			ok(!fdev_broadcast(c, area[0], area[0], cnt * n, FDEV_F32, 2,
					   FDEV_ALGO_AUTO) &&
			   !memcmp(area[0], ref, all),
			   "zc: broadcast in place from rank 2: the same bytes");
			fdev_comm_bytes(c, &st, &ip);
			ok(st == st0 && ip - ip0 == 2 * all,
			   "zc: broadcast in place: nothing staged");
		}
		free(ref);
		free(got);
	}
out:
	for (unsigned int i = 0; dev_mode && i < 2 * ZC_N; i++)
		if (reg[i].handle) {
			if (fdev_comm_deregister(c, &reg[i]))
				ok(0, "zc: deregister region %u", i);
			fdev_region_free(fdev_comm_dev(c), &reg[i]);
		}
	for (int k = 0; k < 2; k++)
		if (area[k] && area[k] != MAP_FAILED)
			munmap(area[k], all);
	ok(fdev_comm_deregister(c, &reg[0]) == -ENOENT || !dev_mode,
	   "zc: deregistered twice: -ENOENT");
	fdev_comm_destroy(c);
	free(in);
	free(out);
}

static void test_closed_forms(void)
{
	/* 8 ranks, 8 MiB, alpha 1 us, 100 GB/s: 14 us + 14/8 * 83.886 us. */
	uint64_t t = fdev_cf_ring_all_reduce(8, 8 << 20, 1000000, 100000000000ULL);

	ok(t == 14000000 + 146800640, "ring all-reduce closed form (%llu ps)",
	   (unsigned long long)t);
	ok(fdev_cf_direct_all_to_all(4, 1000, 5, 1000000000000ULL) == 5 + 3000,
	   "direct all-to-all closed form");
}

/*
 * Eight endpoints at 100 GB/s: around one switch (@star), or in a
 * cycle, each to the next and back; @lat_ps per link, 4 KiB segments.
 */
static struct topo *cost_topo(int star, uint64_t lat_ps)
{
	struct topo_link_spec l = { .bandwidth = 100000000000ULL,
				    .latency_ps = lat_ps };
	struct topo *t = topo_new();
	struct topo_defaults d;
	struct topo_src src = { 0 };
	struct topo_err err;
	char name[16];
	int bad = !t;

	topo_defaults_init(&d);
	for (unsigned int i = 0; !bad && i < 8; i++) {
		snprintf(name, sizeof(name), "e%u", i);
		bad = topo_add_node(t, name, ICFAB_NODE_ENDPOINT, &d, &src,
				    &err) < 0;
	}
	if (!bad && star)
		bad = topo_add_node(t, "sw", ICFAB_NODE_SWITCH, &d, &src,
				    &err) < 0;
	for (unsigned int i = 0; !bad && i < 8; i++)
		bad = topo_connect(t, i, star ? 8 : (i + 1) % 8, &l, &src,
				   &err) < 0;
	if (!bad) {
		t->segment_size = 4096;
		bad = topo_route(t, &err) < 0;
	}
	if (bad && t) {
		topo_free(t);
		t = NULL;
	}
	return t;
}

static uint64_t ar_cost(const struct fdev_paths *m, int algo, uint64_t bytes)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	uint64_t c = 0;

	fdev_plan_init(&p);
	if (!fdev_plan_all_reduce(&p, 8, bytes / 4, FDEV_F32, algo, 4, &lo))
		c = fdev_plan_cost_ps(m, &p);
	fdev_plan_free(&p);
	return c;
}

/* The rings' all-reduce over cycle @cyc of 8 ranks, in steps or dataflow. */
static uint64_t rings_ar_cost(const struct fdev_paths *m, const uint32_t *cyc,
			      int flow, uint64_t bytes)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	uint64_t c = 0;

	fdev_plan_init(&p);
	if (!fdev_plan_rings_all_reduce(&p, 8, bytes / 4, FDEV_F32, cyc, 2, &lo,
					flow, 4096) && !flow == !p.feeds)
		c = fdev_plan_cost_ps(m, &p);
	fdev_plan_free(&p);
	return c;
}

/*
 * cost.c, what "auto" chooses by: a transfer alone costs its route's
 * latencies, its bytes over the link and a segment per hop after the
 * first; links a step shares add up, steps follow each other. Then the
 * all-reduce on a switch (direct: one step each way, where the ring
 * takes 14) and on a cycle, where the ring's neighbour hops win for
 * large messages on short links and direct's single round trip wins
 * when every hop is long.
 */
static void test_cost(void)
{
	static const uint32_t ep[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct topo *star = cost_topo(1, 100000), *cyc = cost_topo(0, 10000);
	struct topo *slow = cost_topo(0, 100000000);
	struct fdev_paths *ms = NULL, *mc = NULL, *ml = NULL;
	struct fdev_plan p;
	uint64_t one, two, ring, direct;

	ok(star && cyc && slow &&
	   !fdev_paths_build(star, ep, 8, &ms) &&
	   !fdev_paths_build(cyc, ep, 8, &mc) &&
	   !fdev_paths_build(slow, ep, 8, &ml), "cost: paths over the routes");
	if (!ms || !mc || !ml)
		goto out;
	fdev_plan_init(&p);
	fdev_plan_xfer(&p, 0, 0, 1, 0, 0, 1 << 20);
	fdev_plan_finish(&p);
	one = fdev_plan_cost_ps(ms, &p);
	fdev_plan_xfer(&p, 0, 2, 1, 0, 0, 1 << 20);
	fdev_plan_xfer(&p, 1, 3, 4, 0, 0, 1 << 20);
	fdev_plan_finish(&p);
	two = fdev_plan_cost_ps(ms, &p);
	fdev_plan_free(&p);
	/* 2 x 100 ns, 1 MiB at 10 ps a byte, one 4 KiB segment more */
	ok(one == 200000 + 10485760 + 40960,
	   "cost: one transfer over two hops %" PRIu64 " ps", one);
	ok(two == 2 * 10485760 + (one - 10485760) + one,
	   "cost: two into one link take twice as long, the next step after (%" PRIu64 " ps)",
	   two);
	ring = ar_cost(ms, FDEV_ALGO_RING, 1 << 20);
	direct = ar_cost(ms, FDEV_ALGO_DIRECT, 1 << 20);
	ok(direct && direct < ring,
	   "cost: one switch, all-reduce 1 MiB: direct %" PRIu64 " < ring %" PRIu64,
	   direct, ring);
	ring = ar_cost(mc, FDEV_ALGO_RING, 16 << 20);
	direct = ar_cost(mc, FDEV_ALGO_DIRECT, 16 << 20);
	ok(ring && ring < direct,
	   "cost: a cycle of 10 ns links, all-reduce 16 MiB: ring %" PRIu64 " < direct %" PRIu64,
	   ring, direct);
	ring = ar_cost(ml, FDEV_ALGO_RING, 16 << 20);
	direct = ar_cost(ml, FDEV_ALGO_DIRECT, 16 << 20);
	ok(direct && direct < ring,
	   "cost: a cycle of 100 us links: direct %" PRIu64 " < ring %" PRIu64,
	   direct, ring);
	/*
	 * The cycle's two directed rings, dataflow (rings.c): on 10 ns
	 * links, 1 MiB (blocks of 16 segments, in 4 pieces) costs its load
	 * and one route's fill, below its steps, and 16 MiB (whole
	 * blocks, each hop after the one before) what its steps do; on
	 * 100 us links each piece's 14 hops one after the other, which
	 * direct's round trip beats.
	 */
	{
		static const uint32_t order[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
		uint64_t flow, steps;

		flow = rings_ar_cost(mc, order, 1, 1 << 20);
		steps = rings_ar_cost(mc, order, 0, 1 << 20);
		ok(flow && flow < steps,
		   "cost: a cycle of 10 ns links, rings all-reduce 1 MiB: dataflow %" PRIu64 " < steps %" PRIu64,
		   flow, steps);
		flow = rings_ar_cost(mc, order, 1, 16 << 20);
		steps = rings_ar_cost(mc, order, 0, 16 << 20);
		ok(flow && flow == steps,
		   "cost: the same, 16 MiB: dataflow %" PRIu64 " = steps %" PRIu64,
		   flow, steps);
		flow = rings_ar_cost(ml, order, 1, 16 << 20);
		direct = ar_cost(ml, FDEV_ALGO_DIRECT, 16 << 20);
		ok(flow >= 14 * 100000000ULL && direct < flow,
		   "cost: a cycle of 100 us links: the dataflow rings' chain of 14 hops %" PRIu64 " > direct %" PRIu64,
		   flow, direct);
	}
	fdev_plan_init(&p);
	fdev_plan_mcast(&p, 0, 0, 8, 0, 0, 4096);
	fdev_plan_finish(&p);
	ok(fdev_plan_cost_ps(ms, &p) == UINT64_MAX, "cost: a multicast has none");
	fdev_plan_free(&p);
out:
	fdev_paths_free(ms);
	fdev_paths_free(mc);
	fdev_paths_free(ml);
	topo_free(star);
	topo_free(cyc);
	topo_free(slow);
}

/*
 * Preset @name's first @n endpoints as ranks, its paths into *@m and the
 * rings over the cables between them (as coll_bench -L takes them: a
 * cable between two ranks, or between switches that each carry one
 * rank's endpoint) into @cyc; the cycles found, or -1.
 */
static int preset_rings(const char *name, uint32_t n, struct fdev_paths **m,
			uint32_t *cyc)
{
	struct topo_err err;
	struct topo *t = NULL;
	uint32_t ep[64], *rk = NULL, *ends = NULL, e = 0, nl = 0;
	int k = -1;

	*m = NULL;
	if (n > 64 || topo_load_preset(name, &t, &err) || topo_route(t, &err))
		goto out;
	rk = malloc(t->nr_nodes * sizeof(*rk));
	ends = malloc(2 * (size_t)t->nr_links * sizeof(*ends));
	if (!rk || !ends)
		goto out;
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		rk[i] = UINT32_MAX;
		if (t->nodes[i].kind == ICFAB_NODE_ENDPOINT && e < n) {
			rk[i] = e;
			ep[e++] = i;
		}
	}
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		uint32_t one = UINT32_MAX, seen = 0;

		if (t->nodes[i].kind == ICFAB_NODE_ENDPOINT)
			continue;
		for (uint32_t l = 0; l < t->nr_links; l++)
			if (t->links[l].dst_node == i &&
			    t->nodes[t->links[l].src_node].kind == ICFAB_NODE_ENDPOINT) {
				seen++;
				one = rk[t->links[l].src_node];
			}
		if (seen == 1)
			rk[i] = one;
	}
	for (uint32_t l = 0; l < t->nr_links; l++) {
		uint32_t a = t->links[l].src_node, b = t->links[l].dst_node;

		if (a < b && rk[a] != UINT32_MAX && rk[b] != UINT32_MAX &&
		    rk[a] != rk[b]) {
			ends[2 * nl] = rk[a];
			ends[2 * nl + 1] = rk[b];
			nl++;
		}
	}
	if (e == n && !fdev_paths_build(t, ep, n, m))
		k = fdev_rings_find(n, nl, ends, 4, cyc);
out:
	free(rk);
	free(ends);
	if (t)
		topo_free(t);
	return k;
}

/*
 * tpu-v4-cube's 64 chips, 1 MiB: the rings' dataflow all-reduce and
 * reduce-scatter cost their chains of 126 and 63 one-microsecond hops,
 * above direct (auto ran direct there, 37.164 and 18.582 us, before the
 * rings went dataflow); costed as load and one route's fill alone they
 * came below it (7.9 and 4.5 us).
 */
static void test_cost_flow_chain(void)
{
	uint32_t cyc[4 * 64];
	struct fdev_paths *m = NULL;
	int k = preset_rings("tpu-v4-cube", 64, &m, cyc);
	uint64_t c[4] = { 0 };

	for (int i = 0; k > 0 && i < 4; i++) {
		struct fdev_coll_layout lo;
		struct fdev_plan p;
		int err;

		fdev_plan_init(&p);
		switch (i) {
		case 0:
			err = fdev_plan_rings_all_reduce(&p, 64, 1 << 18, FDEV_F32, cyc,
							 2 * k, &lo, 1, 4096);
			err = err ? err : !p.feeds;
			break;
		case 1:
			err = fdev_plan_all_reduce(&p, 64, 1 << 18, FDEV_F32,
						   FDEV_ALGO_DIRECT, 8, &lo);
			break;
		case 2:
			err = fdev_plan_rings_reduce_scatter(&p, 64, 1 << 12, FDEV_F32,
							     cyc, 2 * k, &lo, 1, 4096);
			err = err ? err : !p.feeds;
			break;
		default:
			err = fdev_plan_reduce_scatter(&p, 64, 1 << 12, FDEV_F32,
						       FDEV_ALGO_DIRECT, &lo);
		}
		/* the rings' builders finish their plans (feeds by order) */
		if (!err && i % 2)
			err = fdev_plan_finish(&p);
		c[i] = err ? 0 : fdev_plan_cost_ps(m, &p);
		fdev_plan_free(&p);
	}
	ok(k > 0 && c[1] && c[0] > 126 * 1000000ULL && c[0] < UINT64_MAX - 1 && c[1] < c[0],
	   "cost: tpu-v4-cube, all-reduce 1 MiB: dataflow rings %" PRIu64 " (%d rings) > direct %" PRIu64,
	   c[0], 2 * k, c[1]);
	ok(k > 0 && c[3] && c[2] > 63 * 1000000ULL && c[2] < UINT64_MAX - 1 && c[3] < c[2],
	   "cost: tpu-v4-cube, reduce-scatter 1 MiB: dataflow rings %" PRIu64 " > direct %" PRIu64,
	   c[2], c[3]);
	fdev_paths_free(m);
}

/*
 * moe_hier_outward() on @nodes nodes of 8 endpoints, top-8 of 256
 * experts. @apart: as h800-pod, each endpoint with a 160 GB/s, 500 ns
 * link to its node's switch and a 50 GB/s, 2 us one to a network
 * switch; else as ualink-pod, one 100 GB/s link to its node's switch,
 * which an 800 GB/s one joins to the network switch. -1 where it cannot
 * be built, routed or costed.
 */
static int outward(unsigned int nodes, int apart)
{
	struct topo_link_spec up = { .bandwidth = apart ? 160000000000ULL :
						      100000000000ULL,
				     .latency_ps = 500000 };
	struct topo_link_spec out = { .bandwidth = 50000000000ULL,
				      .latency_ps = 2000000 };
	struct topo_link_spec trunk = { .bandwidth = 800000000000ULL,
					.latency_ps = 500000 };
	unsigned int n = 8 * nodes, net = n + nodes;
	struct fdev_paths *m = NULL;
	struct topo *t = topo_new();
	struct topo_defaults d;
	struct topo_src src = { 0 };
	struct topo_err err;
	uint32_t ep[64];
	char name[16];
	int bad = !t || n > 64, r = -1;

	topo_defaults_init(&d);
	for (unsigned int i = 0; !bad && i <= net; i++) {
		snprintf(name, sizeof(name), i < n ? "e%u" : "sw%u", i);
		bad = topo_add_node(t, name, i < n ? ICFAB_NODE_ENDPOINT :
				    ICFAB_NODE_SWITCH, &d, &src, &err) < 0;
	}
	for (unsigned int i = 0; i < n && i < 64; i++)
		ep[i] = i;
	for (unsigned int i = 0; !bad && i < n; i++)
		bad = topo_connect(t, i, n + i / 8, &up, &src, &err) < 0 ||
		      (apart && topo_connect(t, i, net, &out, &src, &err) < 0);
	for (unsigned int N = 0; !bad && !apart && N < nodes; N++)
		bad = topo_connect(t, n + N, net, &trunk, &src, &err) < 0;
	if (!bad) {
		t->segment_size = 4096;
		bad = topo_route(t, &err) < 0;
	}
	if (!bad && !fdev_paths_build(t, ep, n, &m))
		r = moe_hier_outward(m, 8, 8, 256);
	fdev_paths_free(m);
	topo_free(t);
	return r;
}

/*
 * Where the hierarchical chunks shrink by default: h800-pod from 4 nodes
 * (its NIC the busier side: 2.7 records per token at 50 GB/s against 6.3
 * at 160 GB/s), not on 2 (1.0 against 5.6); never where a rank reaches
 * its node and the others over the same ports (ualink-pod's leaf port),
 * nor without routes.
 */
static void test_hier_outward(void)
{
	int h16 = outward(2, 1), h32 = outward(4, 1), h64 = outward(8, 1);
	int u32 = outward(4, 0);

	ok(h32 == 1 && h64 == 1 && h16 == 0,
	   "moe hier: scale-out the busier side as on h800-pod at 32 and 64 ranks (%d, %d), not at 16 (%d)",
	   h32, h64, h16);
	ok(u32 == 0 && !moe_hier_outward(NULL, 8, 8, 256),
	   "moe hier: not where the sides share a port, as on ualink-pod (%d), nor without routes",
	   u32);
}

/*
 * Route leads (lead.c) from the presets' own routes: on one switch and on
 * ualink-pod's leaf-spine every pair meets the others' traffic as early
 * as its own, so all leads are equal and the order is the plain one
 * (the rule before 2026-12-06 led pairs across leaves by two rounds and
 * cost the uneven MoE dispatch 30 us there); on tpu-v4-cube's torus,
 * where the last dimension's links carry transit, they differ.
 */
static int leads_of(const char *preset, uint32_t n, uint16_t *lo,
		    uint16_t *hi)
{
	struct fdev_paths *m = NULL;
	struct topo_err err;
	struct topo *t = NULL;
	uint16_t *lead = NULL;
	uint32_t *ep = calloc(n, sizeof(*ep));
	int ret = -ENOMEM;

	if (ep && !topo_load_preset(preset, &t, &err) &&
	    !topo_route(t, &err)) {
		uint32_t e = 0;

		for (uint32_t i = 0; i < t->nr_nodes && e < n; i++)
			if (t->nodes[i].kind == ICFAB_NODE_ENDPOINT)
				ep[e++] = i;
		lead = calloc((size_t)n * n, sizeof(*lead));
		if (lead && !fdev_paths_build(t, ep, n, &m))
			ret = fdev_route_leads(m, lead);
	}
	*lo = UINT16_MAX;
	*hi = 0;
	for (size_t k = 0; !ret && k < (size_t)n * n; k++) {
		if (k / n == k % n)
			continue;
		*lo = lead[k] < *lo ? lead[k] : *lo;
		*hi = lead[k] > *hi ? lead[k] : *hi;
	}
	if (m)
		fdev_paths_free(m);
	if (t)
		topo_free(t);
	free(lead);
	free(ep);
	return ret;
}

static void test_route_leads(void)
{
	uint16_t lo, hi;
	int err;

	err = leads_of("dgx-h100", 8, &lo, &hi);
	ok(!err && lo == hi, "leads: equal around one switch (%d: %u..%u)",
	   err, lo, hi);
	err = leads_of("ualink-pod", 1024, &lo, &hi);
	ok(!err && lo == hi,
	   "leads: equal on ualink-pod's leaf-spine, within and across leaves (%d: %u..%u)",
	   err, lo, hi);
	err = leads_of("tpu-v4-cube", 64, &lo, &hi);
	ok(!err && lo < hi, "leads: differ on tpu-v4-cube's torus (%d: %u..%u)",
	   err, lo, hi);
}

int main(int argc, char **argv)
{
	/* Line by line, so a run killed by a timeout still shows how far it got. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	if (argc > 1 && !strcmp(argv[1], "--device")) {
		dev_mode = 1;
		/* icfabd serving circuits over a topology with colours */
		if (argc > 2 && !strcmp(argv[2], "--multicast")) {
			test_moe_mc();
			return done();
		}
		test_colls();
		test_interleave();
		test_moe();
		test_zc();
		return done();
	}
	test_dtype();
	test_layout();
	test_colls();
	test_plan_only();
	test_rings();
	test_rings_flow();
	test_rings_flow_ar();
	test_interleave();
	test_moe();
	test_bad_args();
	test_many_ranks();
	test_zc();
	test_closed_forms();
	test_cost();
	test_cost_flow_chain();
	test_hier_outward();
	test_route_leads();
	return done();
}
