// SPDX-License-Identifier: GPL-2.0
/*
 * fdev_dev_test: libfabricdev against the module (run in the test VM by
 * selftests/icfab/fdev_test.sh, on a committed topology).
 *
 *	fdev_dev_test api                      TAP: the core API, bad arguments
 *	fdev_dev_test coll OP ALGO N BYTES [NODE]
 *		one process drives N ranks, timing only; prints JSON
 *	fdev_dev_test mp OP ALGO BYTES [REPEAT]
 *		one rank of FDEV_SIZE independent processes (FDEV_RANK,
 *		FDEV_JOB), timing only; prints JSON
 *	fdev_dev_test mpdata COUNT [free]
 *		one rank of independent processes moving data: ring
 *		all-reduce and direct all-to-all of COUNT floats, checked
 *	fdev_dev_test mpmoe [mc|hier]
 *		one rank of independent processes, data: the multicast
 *		(default) or hierarchical (nodes of 2 ranks) MoE dispatch
 *		equals throughput's element by element (skewed routing,
 *		-1 slots, T = 0 on rank 1, H = 13), and so do the
 *		combines; prints "ok" lines and the dispatch bytes
 *	fdev_dev_test mpall
 *		one rank of independent processes, data: every collective
 *		with each of its algorithms and the throughput, low-latency
 *		(not through a proxy) and hierarchical (nodes of 2) MoE
 *		modes, and multicast (each drives its own rank: a copy per
 *		destination), checked element by element; between them the
 *		ranks meet on the host, rank 0 last, as a runtime's store
 *		would; prints "ok" lines, "# proxy 0|1" and "# time NAME PS"
 *		lines
 *	fdev_dev_test mpa2av WS CASE [REPEAT]
 *		one rank of independent processes, data, a workspace of WS
 *		bytes: REPEAT all-to-all-v of f32 (CASE fit: every pair
 *		within its slot, some empty; over: some pairs one element
 *		over their slot, one 2 slots over, others empty or small;
 *		room: every rank sends rank 0 more than its workspace holds,
 *		-EMSGSIZE everywhere, no hang), checked element by element
 *		and count by count; prints a JSON line with the bytes this
 *		rank put on the fabric (sent_bytes)
 *	fdev_dev_test mpa2av WS CASE REPEAT zc
 *		the same on ordinary buffers (REPEAT), then on buffers in
 *		registered regions (REPEAT), then ordinary again (REPEAT),
 *		every run checked; the JSON line has the last zero-copy and
 *		last copy run's emulated times (time_ps, copy_ps) and their
 *		bytes staged and in place (zc_staged, zc_in_place,
 *		copy_staged). In room, rank 0's recv buffer is ordinary
 *		(its workspace refuses, the others' registered sends learn
 *		it); roomzc is room with rank 0's in a region too (no
 *		refusal: the rests go straight into it)
 *	fdev_dev_test mpdie
 *		the last rank dies after the rendezvous; the others see EPIPE
 *	fdev_dev_test cap N CAP
 *		TAP: N descriptors in one fdev_post while the module's
 *		max_ctx_descs is CAP (fdev_test.sh sets it): every one
 *		completes once, status 0, with its bytes where the module has
 *		ICFAB_F_MEMORY; a raw post stops at CAP (-EAGAIN after)
 *
 * OP: allreduce reducescatter allgather alltoall broadcast
 * ALGO: auto ring tree direct hier
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fabricdev.h"
#include "fabricdev_test.h"
#include "tap.h"

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * mpall: the rank's clock when its communicator was made; with a context
 * of its own it prints "# at NAME PS", the clock since then, after each
 * operation (the timeline that must repeat to the picosecond).
 */
static uint64_t mp_t0;

static void mp_at(struct fdev_comm *c, const char *name, const char *sub)
{
	struct fdev *dev = fdev_comm_dev(c);

	if (dev)
		printf("# at %s-%s %" PRIu64 "\n", name, sub,
		       fdev_clock(dev) - mp_t0);
}

static int test_api(void)
{
	struct fdev *dev;
	struct fdev_info info;
	struct fdev_desc d[4];
	struct fdev_cqe cqe[8];
	struct fdev_region r;
	uint32_t eps[16], q, q2;
	uint64_t c0;
	int n, ret;

	printf("TAP version 13\n");
	n = fdev_endpoints(NULL, eps, 16);
	ok(n >= 2, "fdev_endpoints finds the committed endpoints (%d)", n);
	ret = fdev_open(NULL, 0, &dev);
	ok(!ret, "fdev_open /dev/icfab0 (%d)", ret);
	if (ret)
		return 1;
	ret = fdev_query(dev, &info);
	ok(!ret && (info.features & FDEV_F_QUEUES), "fdev_query: QUEUES (%d)", ret);
	printf("# uring %u features 0x%llx\n", info.uring,
	       (unsigned long long)info.features);
	ok(fdev_open(NULL, 0x80, &dev) == -EINVAL, "unknown open flag: -EINVAL (%d)", 0);
	ok(fdev_open("/nonexistent", 0, &dev) == -ENOENT, "missing device: -ENOENT (%d)", 0);
	ok(fdev_queue_create(dev, eps[0], 8, &q) == -ENOENT,
	   "queue before attach: -ENOENT (%d)", 0);
	ret = fdev_attach(dev, eps[0]);
	ok(!ret, "attach endpoint 0 (%d)", ret);
	ret = fdev_attach(dev, eps[1]);
	ok(!ret, "attach endpoint 1 (one context, many endpoints) (%d)", ret);
	ok(fdev_attach(dev, 0xfffff) < 0, "attach a bogus node fails (%d)", 0);
	ret = fdev_queue_create(dev, eps[0], 2, &q);
	ok(!ret, "queue of depth 2 on endpoint 0 (%d)", ret);
	ret = fdev_queue_create(dev, eps[1], 8, &q2);
	ok(!ret, "queue on endpoint 1 (%d)", ret);
	ok(fdev_queue_create(dev, eps[0], 0, &q) == -EINVAL, "depth 0: -EINVAL (%d)", 0);
	ok(fdev_wait(dev, cqe, 1, 8, 0) == -EDEADLK,
	   "wait with nothing in flight: -EDEADLK (%d)", 0);

	/* DELAY moves the clock by exactly its length. */
	ret = fdev_compute(dev, q, 0);
	c0 = fdev_clock(dev);
	ret = fdev_compute(dev, q, 123456);
	ok(!ret && fdev_clock(dev) == c0 + 123456,
	   "compute(123456 ps) advances the clock exactly (%d)", ret);
	ret = fdev_advance_to(dev, q, c0 + 200000);
	ok(!ret && fdev_clock(dev) == c0 + 200000, "advance_to an absolute time (%d)", ret);
	ret = fdev_advance_to(dev, q, c0);
	ok(!ret && fdev_clock(dev) == c0 + 200000, "advance_to the past is a no-op (%d)", ret);

	/* A batch of 4 on a queue of depth 2: the library makes room. */
	c0 = fdev_clock(dev);
	for (int i = 0; i < 4; i++)
		fdev_prep_timing(&d[i], FDEV_OP_WRITE, q, eps[1], 65536, 100 + i);
	ret = fdev_post(dev, d, 4);
	ok(ret == 4, "post 4 timing-only writes on a depth-2 queue (%d)", ret);
	ret = fdev_wait(dev, cqe, (unsigned int)fdev_inflight(dev), 8, 0);
	ok(ret == 4, "wait returns all 4 completions (%d)", ret);
	{
		/* Completions may come in any order (io_uring on 6.1: reversed). */
		struct fdev_cqe by[4] = { 0 };
		uint64_t last = 0;
		int good = ret == 4;

		for (int i = 0; i < ret && good; i++) {
			uint64_t tg = cqe[i].user_tag - 100;

			good &= tg < 4 && !cqe[i].status && !by[tg].user_tag;
			if (good)
				by[tg] = cqe[i];
			if (cqe[i].finish_ps > last)
				last = cqe[i].finish_ps;
		}
		for (int i = 0; i < 4 && good; i++) {
			good &= by[i].finish_ps > by[i].start_ps && by[i].start_ps >= c0;
			if (i)
				good &= by[i].finish_ps > by[i - 1].finish_ps;
		}
		ok(good, "each tag once, finishing in queue order, after the clock (%d)", 0);
		ok(fdev_clock(dev) == last, "the clock moved to the last finish (%d)", 0);
	}
	ok(fdev_poll(dev, cqe, 8) == 0, "poll with nothing left returns 0 (%d)", 0);

	/*
	 * Raw post on a full queue: -EAGAIN at once, nothing lost. A batch
	 * of 3 on the depth-2 queue posts 2; the third, alone, gets -EAGAIN
	 * until a wait reaps; every posted one completes with status 0.
	 */
	for (int i = 0; i < 4; i++)
		fdev_prep_timing(&d[i], FDEV_OP_WRITE, q, eps[1], 4096, 200 + i);
	ret = __fdev_post_nowait(dev, d, 3);
	ok(ret == 2, "raw post of 3 on a depth-2 queue posts 2 and stops (%d)", ret);
	ret = __fdev_post_nowait(dev, d + 2, 1);
	ok(ret == -EAGAIN, "raw post on the full queue: -EAGAIN, without blocking (%d)", ret);
	ret = __fdev_post_nowait(dev, d + 2, 2);
	ok(ret == -EAGAIN && fdev_inflight(dev) == 2,
	   "again -EAGAIN; still 2 in flight (nothing posted, nothing dropped) (%d)", ret);
	ret = fdev_post(dev, d, 0);
	ok(ret == 0, "an empty post is a no-op (%d)", ret);
	ret = fdev_wait(dev, cqe, 2, 8, 0);
	ok(ret == 2 && !cqe[0].status && !cqe[1].status &&
	   cqe[0].user_tag + cqe[1].user_tag == 200 + 201,
	   "wait reaps the 2 posted, status 0 (no -EAGAIN completion) (%d)", ret);
	ret = __fdev_post_nowait(dev, d + 2, 2);
	ok(ret == 2, "after the wait, the 2 that were refused go in (%d)", ret);
	ret = fdev_wait(dev, cqe, 2, 8, 0);
	ok(ret == 2 && !cqe[0].status && !cqe[1].status &&
	   cqe[0].user_tag + cqe[1].user_tag == 202 + 203,
	   "and complete: every descriptor once, none lost (%d)", ret);
	fdev_prep_timing(&d[0], FDEV_OP_WRITE, 77, eps[1], 1, 0);
	ok(__fdev_post_nowait(dev, d, 1) == -ENOENT, "raw post, unknown queue: -ENOENT (%d)", 0);
	ok(__fdev_post_nowait(NULL, d, 1) == -EINVAL, "raw post, NULL device: -EINVAL (%d)", 0);

	/* Invalid descriptors are refused with the module's errno. */
	fdev_prep_timing(&d[0], FDEV_OP_WRITE, 77, eps[1], 1, 0);
	ok(fdev_post(dev, d, 1) == -ENOENT, "unknown queue: -ENOENT (%d)", 0);
	fdev_prep_timing(&d[0], FDEV_OP_WRITE, q, eps[1], 1, 0);
	d[0].imm = 1;	/* without FDEV_DESC_NOTIFY */
	ok(fdev_post(dev, d, 1) == -EINVAL, "reserved word set: -EINVAL (%d)", 0);
	ok(fdev_post(dev, NULL, 1) == -EINVAL, "NULL descriptors: -EINVAL (%d)", 0);
	ok(fdev_post(NULL, d, 1) == -EINVAL, "NULL device: -EINVAL (%d)", 0);
	ok(fdev_wait(dev, cqe, 2, 1, 0) == -EINVAL, "min > max: -EINVAL (%d)", 0);

	/* Poll does not block and finds nothing before the clock moves. */
	fdev_prep_timing(&d[0], FDEV_OP_WRITE, q2, eps[0], 1 << 20, 7);
	ret = fdev_post(dev, d, 1);
	ok(ret == 1, "post one more (%d)", ret);
	ret = fdev_poll(dev, cqe, 8);
	ok(ret == 0, "poll: not finished by the context's clock (%d)", ret);
	ret = fdev_wait(dev, cqe, 1, 8, 0);
	ok(ret == 1 && cqe[0].user_tag == 7, "wait gets it (%d)", ret);

	ret = fdev_region_alloc(dev, eps[0], 4096, &r);
	if (info.features & FDEV_F_MEMORY) {
		ok(!ret && r.addr && r.size >= 4096, "region alloc + map (%d)", ret);
		if (!ret) {
			struct fdev_remote rem;

			memset(r.addr, 0x5a, 4096);
			ret = fdev_region_export(dev, &r, FDEV_ACCESS_REMOTE_WRITE);
			ok(!ret && r.key, "region export gives a key (%d)", ret);
			ret = fdev_region_import(dev, r.key, &rem);
			ok(!ret && rem.endpoint == eps[0] && rem.size == r.size,
			   "import finds it (%d)", ret);
			ok(fdev_region_import(dev, r.key ^ 1, &rem) == -ENOKEY,
			   "a wrong key: -ENOKEY (%d)", 0);
			ret = fdev_region_free(dev, &r);
			ok(!ret, "region free (%d)", ret);
		}
	} else {
		ok(ret == -EOPNOTSUPP, "no ICFAB_F_MEMORY: region alloc -EOPNOTSUPP (%d)", ret);
	}
	ok(fdev_region_export(dev, NULL, 1) == -EINVAL, "export NULL: -EINVAL (%d)", 0);
	ok(fdev_region_import(dev, 0, NULL) == -EINVAL, "import NULL: -EINVAL (%d)", 0);
	fdev_close(dev);
	return done();
}

/*
 * More descriptors than the module lets a context hold (max_ctx_descs =
 * @cap): fdev_post makes room as for a full queue, on either path
 * (FDEV_NO_URING chooses), and loses or repeats nothing.
 */
static int test_cap(unsigned int n, unsigned int cap)
{
	const uint64_t len = 256;
	struct fdev_desc *d = calloc(n, sizeof(*d));
	struct fdev_cqe *cqe = calloc(n, sizeof(*cqe));
	unsigned char *seen = calloc(n, 1);
	struct fdev_region src, dst;
	struct fdev_remote rem;
	struct fdev_info info;
	struct fdev *dev;
	uint32_t eps[2], q;
	unsigned int got = 0, good = 1;
	int mem, ret;

	printf("TAP version 13\n");
	if (!d || !cqe || !seen || fdev_endpoints(NULL, eps, 2) < 2 ||
	    fdev_open(NULL, 0, &dev))
		return 1;
	ret = fdev_query(dev, &info);
	printf("# uring %u\n", info.uring);
	mem = !ret && info.features & FDEV_F_MEMORY;
	ret = fdev_attach(dev, eps[0]);
	if (!ret)
		ret = fdev_attach(dev, eps[1]);
	if (!ret)
		ret = fdev_queue_create(dev, eps[0], n, &q);
	if (!ret && mem)
		ret = fdev_region_alloc(dev, eps[0], n * len, &src);
	if (!ret && mem)
		ret = fdev_region_alloc(dev, eps[1], n * len, &dst);
	if (!ret && mem)
		ret = fdev_region_export(dev, &dst, FDEV_ACCESS_REMOTE_WRITE);
	if (!ret && mem)
		ret = fdev_region_import(dev, dst.key, &rem);
	ok(!ret, "two endpoints, a queue of depth %u%s (%d)", n,
	   mem ? ", two regions" : "", ret);
	if (ret)
		return done();
	for (unsigned int i = 0; i < n; i++) {
		if (mem) {
			memset((char *)src.addr + i * len, (int)(i * 7 + 1), len);
			fdev_prep_write(&d[i], q, src.handle, i * len, dst.key,
					i * len, len, 1000 + i);
		} else {
			fdev_prep_timing(&d[i], FDEV_OP_WRITE, q, eps[1], len,
					 1000 + i);
		}
	}
	ret = fdev_post(dev, d, n);
	ok(ret == (int)n, "post %u with max_ctx_descs %u: all posted (%d)",
	   n, cap, ret);
	while (ret == (int)n && got < n) {
		int k = fdev_wait(dev, cqe, 1, n, 0);

		if (k <= 0) {
			good = 0;
			break;
		}
		for (int i = 0; i < k; i++) {
			uint64_t t = cqe[i].user_tag - 1000;

			if (t >= n || seen[t] || cqe[i].status) {
				printf("# tag %llu status %d\n",
				       (unsigned long long)cqe[i].user_tag,
				       cqe[i].status);
				good = 0;
			} else {
				seen[t] = 1;
			}
		}
		got += (unsigned int)k;
	}
	ok(good && got == n, "each of the %u completes once, status 0 (%u)",
	   n, got);
	if (mem)
		ok(!memcmp(src.addr, dst.addr, n * len),
		   "every write's bytes landed (%d)", 0);
	ret = __fdev_post_nowait(dev, d, n);
	ok(ret == (int)cap, "a raw post of %u stops at the cap (%d)", n, ret);
	ok(__fdev_post_nowait(dev, d + cap, 1) == -EAGAIN,
	   "then -EAGAIN, without blocking (%d)", 0);
	got = 0;
	while (ret > 0 && got < (unsigned int)ret) {
		int k = fdev_wait(dev, cqe, 1, n, 0);

		if (k <= 0)
			break;
		for (int i = 0; i < k; i++)
			good &= !cqe[i].status;
		got += (unsigned int)k;
	}
	ok(good && got == cap && !fdev_inflight(dev),
	   "and those %u complete, status 0, none left (%u)", cap, got);
	fdev_close(dev);
	free(d);
	free(cqe);
	free(seen);
	return done();
}

static const char *const algo_names[] = {
	"auto", "ring", "tree", "direct", "hier", "rings",
};

static int algo_of(const char *s)
{
	for (int i = 0; i < 5; i++)
		if (!strcmp(s, algo_names[i]))
			return i;
	return -1;
}

static const char *algo_name(enum fdev_algo a)
{
	return (unsigned int)a < 6 ? algo_names[a] : "?";
}

/*
 * The skewed all-to-all-v's pairs: rank 0 sends the last rank 64 times
 * @bytes, every other rank its next one byte, the rest nothing. Across
 * processes, every rank but the last two is done with its transfers long
 * before rank 0 and the last rank are with theirs.
 */
static uint64_t skew_bytes(int n, int s, int d, uint64_t bytes)
{
	if (!s && d == n - 1)
		return 64 * bytes;
	return d == s + 1;
}

/*
 * Timing only: an all-to-all-v where rank s sends rank d
 * @bytes * ((s * 3 + d) % 5) / 2 bytes (none for some pairs), or with
 * @skew skew_bytes(), each process giving its local ranks' rows.
 */
static int run_a2av(struct fdev_comm *c, int algo, uint64_t bytes, int skew)
{
	int n = fdev_comm_size(c), first, count, err;
	uint64_t *sc, *rc;

	fdev_comm_local(c, &first, &count);
	sc = calloc((size_t)count * n, sizeof(*sc));
	rc = calloc((size_t)count * n, sizeof(*rc));
	if (!sc || !rc) {
		free(sc);
		free(rc);
		return -ENOMEM;
	}
	for (int l = 0; l < count; l++)
		for (int d = 0; d < n; d++)
			sc[l * n + d] = skew ? skew_bytes(n, first + l, d, bytes) :
				bytes * (((first + l) * 3 + d) % 5) / 2;
	err = fdev_all_to_all_v(c, NULL, sc, NULL, rc, FDEV_U8, algo);
	/* What each local rank got from each: the senders' rows. */
	for (int l = 0; !err && l < count; l++)
		for (int s = 0; s < n; s++)
			if (rc[l * n + s] != (skew ?
			    skew_bytes(n, s, first + l, bytes) :
			    bytes * ((s * 3 + first + l) % 5) / 2))
				err = -EBADMSG;
	free(sc);
	free(rc);
	return err;
}

static int run_op(struct fdev_comm *c, const char *op, int algo, uint64_t bytes)
{
	int n = fdev_comm_size(c);

	if (!strcmp(op, "alltoallv"))
		return run_a2av(c, algo, bytes, 0);
	if (!strcmp(op, "alltoallvskew"))
		return run_a2av(c, algo, bytes, 1);

	if (!strcmp(op, "allreduce"))
		return fdev_all_reduce(c, NULL, NULL, bytes / 4, FDEV_F32, algo);
	if (!strcmp(op, "reducescatter"))
		return fdev_reduce_scatter(c, NULL, NULL, bytes / 4 / n, FDEV_F32, algo);
	if (!strcmp(op, "allgather"))
		return fdev_all_gather(c, NULL, NULL, bytes, FDEV_U8, algo);
	if (!strcmp(op, "alltoall"))
		return fdev_all_to_all(c, NULL, NULL, bytes, FDEV_U8, algo);
	if (!strcmp(op, "broadcast"))
		return fdev_broadcast(c, NULL, NULL, bytes, FDEV_U8, 0, algo);
	return -EINVAL;
}

/* Element by element: the outputs of two dispatches of this process's rank. */
static int moe_same(struct fdev_moe_handle *a, struct fdev_moe_handle *b,
		    unsigned int epr, unsigned int H, unsigned int k)
{
	struct fdev_moe_out x, y;

	if (fdev_moe_output(a, 0, &x) || fdev_moe_output(b, 0, &y))
		return 0;
	return x.rows == y.rows && x.recv_tokens == y.recv_tokens &&
	       !memcmp(x.expert_count, y.expert_count, epr * 8) &&
	       !memcmp(x.expert_offset, y.expert_offset, epr * 8) &&
	       !memcmp(x.x, y.x, x.rows * H * 4) &&
	       !memcmp(x.topk_idx, y.topk_idx, x.rows * k * 8) &&
	       !memcmp(x.topk_w, y.topk_w, x.rows * k * 4);
}

static int mp_moe(const char *variant)
{
	enum { E = 16, K = 3, H = 13 };
	struct fdev_moe_config cfg = { .num_experts = E, .k = K, .hidden = H,
		.dtype = FDEV_F32, .align = 4 };
	struct fdev_moe_handle *ht = NULL, *hm = NULL;
	struct fdev_moe_stats st, sm;
	struct fdev_moe_in in;
	struct fdev_moe_out o;
	uint64_t seed;
	unsigned int T, n, epr;
	float *x, *w, *y = NULL, *ot = NULL, *om = NULL;
	int64_t *idx;
	struct fdev_comm *c;
	int rank, err, same, hier = !strcmp(variant, "hier");

	err = fdev_comm_init(NULL, NULL, -1, -1, 16 << 20, 0, &c);
	if (!err && hier)
		err = fdev_comm_set_node_size(c, 2);
	if (err) {
		fprintf(stderr, "fdev_dev_test: comm: %s\n", strerror(-err));
		return 1;
	}
	fdev_comm_local(c, &rank, NULL);
	n = (unsigned int)fdev_comm_size(c);
	epr = E / n;
	T = rank == 1 ? 0 : 20 + 7 * (unsigned int)rank;
	seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(rank + 1);
	x = malloc(((size_t)T * H + 1) * 4);
	w = malloc(((size_t)T * K + 1) * 4);
	idx = malloc(((size_t)T * K + 1) * 8);
	for (unsigned int t = 0; t < T; t++) {
		for (unsigned int j = 0; j < K; j++) {
			int64_t e;
			int dup;

			do {	/* skewed towards expert 1, some -1 */
				seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
				e = seed % 3 == 0 ? 1 : (int64_t)(seed % E);
				if (seed % 7 == 0)
					e = -1;
				dup = 0;
				for (unsigned int q = 0; q < j; q++)
					dup |= e >= 0 && idx[t * K + q] == e;
			} while (dup);
			idx[t * K + j] = e;
			w[t * K + j] = (float)(j + 1) / 4;
		}
		for (unsigned int i = 0; i < H; i++)
			x[t * H + i] = (float)((rank * 5 + t * 3 + i) % 9) / 4 - 1;
	}
	in = (struct fdev_moe_in){ .tokens = T, .x = x, .topk_idx = idx, .topk_w = w };
	cfg.mode = FDEV_MOE_THROUGHPUT;
	err = fdev_moe_dispatch(c, &cfg, &in, NULL, &ht);
	printf("%s rank %d throughput dispatch (%d)\n", err ? "not ok" : "ok", rank, err);
	cfg.mode = hier ? FDEV_MOE_HIERARCHICAL : FDEV_MOE_MULTICAST;
	if (!err)
		err = fdev_moe_dispatch(c, &cfg, &in, NULL, &hm);
	printf("%s rank %d %s dispatch (%d)\n", err ? "not ok" : "ok", rank,
	       variant, err);
	same = !err && moe_same(hm, ht, epr, H, K);
	printf("%s rank %d %s outputs equal throughput's element by element\n",
	       same ? "ok" : "not ok", rank, variant);
	if (!err) {
		/* Expert outputs: y = (e + 1) x, in the dispatch layout. */
		fdev_moe_output(ht, 0, &o);
		y = calloc(o.rows * H + 1, 4);
		for (uint64_t r = 0; r < o.rows * H; r++)
			y[r] = 0;
		for (unsigned int e = 0; e < epr; e++)
			for (uint64_t i = 0; i < o.expert_count[e]; i++)
				for (unsigned int q = 0; q < H; q++) {
					uint64_t row = o.expert_offset[e] + i;

					y[row * H + q] = (float)(rank * epr + e + 1) *
						((float *)o.x)[row * H + q];
				}
		ot = calloc((size_t)T * H + 1, 4);
		om = calloc((size_t)T * H + 1, 4);
		{
			const void *yy[1] = { y };
			void *oo[1] = { ot };

			err = fdev_moe_combine(c, ht, yy, oo);
			oo[0] = om;
			if (!err)
				err = fdev_moe_combine(c, hm, yy, oo);
		}
		same = !err && !memcmp(ot, om, (size_t)T * H * 4);
		printf("%s rank %d %s combine equals throughput's (%d)\n",
		       same ? "ok" : "not ok", rank, variant, err);
	}
	if (!err) {
		fdev_moe_stats(ht, &st);
		fdev_moe_stats(hm, &sm);
		printf("# rank %d dispatch_bytes tp %" PRIu64 " %s %" PRIu64
		       " dispatch_ps tp %" PRIu64 " %s %" PRIu64 "\n", rank,
		       st.dispatch_bytes, variant, sm.dispatch_bytes,
		       st.dispatch_ps, variant, sm.dispatch_ps);
	}
	fdev_moe_handle_free(ht);
	fdev_moe_handle_free(hm);
	fdev_comm_destroy(c);
	free(x); free(w); free(idx); free(y); free(ot); free(om);
	return err || !same;
}

/* Rank @r's input element @i of the collectives' check. */
static float coll_in(size_t r, size_t i)
{
	return (float)((r * 7 + i * 3) % 17);
}

/* What rank @rank must receive, element @i, from @op with @n ranks. */
static float coll_want(const char *op, size_t n, size_t rank, size_t cnt,
		       size_t i)
{
	float sum = 0;

	if (!strcmp(op, "allreduce") || !strcmp(op, "reducescatter")) {
		size_t at = strcmp(op, "allreduce") ? rank * cnt + i : i;

		for (size_t q = 0; q < n; q++)
			sum += coll_in(q, at);
		return sum;
	}
	if (!strcmp(op, "allgather"))
		return coll_in(i / cnt, i % cnt);
	if (!strcmp(op, "alltoall"))
		return coll_in(i / cnt, rank * cnt + i % cnt);
	return coll_in(0, i);	/* broadcast from rank 0 */
}

static int coll_data(struct fdev_comm *c, const char *op, int algo,
		     const float *x, float *y, size_t cnt)
{
	if (!strcmp(op, "allreduce"))
		return fdev_all_reduce(c, x, y, cnt, FDEV_F32, algo);
	if (!strcmp(op, "reducescatter"))
		return fdev_reduce_scatter(c, x, y, cnt, FDEV_F32, algo);
	if (!strcmp(op, "allgather"))
		return fdev_all_gather(c, x, y, cnt, FDEV_F32, algo);
	if (!strcmp(op, "alltoall"))
		return fdev_all_to_all(c, x, y, cnt, FDEV_F32, algo);
	return fdev_broadcast(c, x, y, cnt, FDEV_F32, 0, algo);
}

/*
 * Every collective with every algorithm it has, on data, checked element
 * by element; prints "ok"/"not ok" and "# time NAME PS" lines. Returns
 * the number of failures.
 */
static int mp_colls(struct fdev_comm *c, int rank, size_t cnt)
{
	static const char *const ops[] = {
		"allreduce", "reducescatter", "allgather", "alltoall", "broadcast",
	};
	static const char *const algos[] = { "ring", "tree", "direct", "hier" };
	size_t n = (size_t)fdev_comm_size(c), bad;
	float *x = malloc(n * cnt * 4), *y = malloc(n * cnt * 4);
	int failed = 0;

	for (size_t i = 0; i < n * cnt; i++)
		x[i] = coll_in((size_t)rank, i);
	for (unsigned int o = 0; o < 5; o++)
		for (unsigned int a = 0; a < 4; a++) {
			size_t out = !strcmp(ops[o], "allgather") ||
				     !strcmp(ops[o], "alltoall") ? n * cnt : cnt;
			int err = coll_data(c, ops[o], algo_of(algos[a]), x, y, cnt);

			if (err == -EOPNOTSUPP || err == -EINVAL)
				continue;	/* no such algorithm for it */
			bad = 0;
			for (size_t i = 0; !err && i < out; i++)
				bad += y[i] != coll_want(ops[o], n, (size_t)rank, cnt, i);
			printf("%s rank %d %s %s (%d, %zu bad)\n",
			       !err && !bad ? "ok" : "not ok", rank, ops[o],
			       algos[a], err, bad);
			printf("# time %s-%s %" PRIu64 "\n", ops[o], algos[a],
			       fdev_comm_last_ps(c));
			mp_at(c, ops[o], algos[a]);
			failed += err || bad;
		}
	free(x);
	free(y);
	return failed;
}

/* Routing of rank @rank: skewed towards expert 1, some -1, T = 0 on rank 1. */
static unsigned int mp_routing(int rank, unsigned int E, unsigned int K,
			       unsigned int H, float **x, float **w, int64_t **idx)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(rank + 1);
	unsigned int T = rank == 1 ? 0 : 20 + 7 * (unsigned int)rank;

	*x = malloc(((size_t)T * H + 1) * 4);
	*w = malloc(((size_t)T * K + 1) * 4);
	*idx = malloc(((size_t)T * K + 1) * 8);
	for (unsigned int t = 0; t < T; t++) {
		for (unsigned int j = 0; j < K; j++) {
			int64_t e;
			int dup;

			do {
				seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
				e = seed % 3 == 0 ? 1 : (int64_t)(seed % E);
				if (seed % 7 == 0)
					e = -1;
				dup = 0;
				for (unsigned int q = 0; q < j; q++)
					dup |= e >= 0 && (*idx)[t * K + q] == e;
			} while (dup);
			(*idx)[t * K + j] = e;
			(*w)[t * K + j] = (float)(j + 1) / 4;
		}
		for (unsigned int i = 0; i < H; i++)
			(*x)[t * H + i] = (float)((rank * 5 + t * 3 + i) % 9) / 4 - 1;
	}
	return T;
}

/*
 * One MoE mode, data: dispatch, experts y = (e + 1) x, combine; the
 * combine must be, element by element, the sum over the token's experts
 * of w (e + 1) x, which the source knows alone.
 */
static int mp_moe_mode(struct fdev_comm *c, int rank, const char *name,
		       unsigned int mode)
{
	enum { E = 16, K = 3, H = 13 };
	struct fdev_moe_config cfg = { .num_experts = E, .k = K, .hidden = H,
		.dtype = FDEV_F32, .align = 4, .mode = mode, .max_tokens = 64 };
	unsigned int n = (unsigned int)fdev_comm_size(c), epr = E / n, T;
	struct fdev_moe_handle *h = NULL;
	struct fdev_moe_stats st = { 0 };
	struct fdev_moe_in in;
	struct fdev_moe_out o;
	float *x, *w, *y = NULL, *out = NULL;
	int64_t *idx;
	size_t bad = 0;
	int err;

	T = mp_routing(rank, E, K, H, &x, &w, &idx);
	in = (struct fdev_moe_in){ .tokens = T, .x = x, .topk_idx = idx, .topk_w = w };
	err = fdev_moe_dispatch(c, &cfg, &in, NULL, &h);
	mp_at(c, name, "dispatch");
	if (!err) {
		fdev_moe_stats(h, &st);
		fdev_moe_output(h, 0, &o);
		y = calloc(o.rows * H + 1, 4);
		out = calloc((size_t)T * H + 1, 4);
		for (unsigned int e = 0; e < epr; e++)
			for (uint64_t i = 0; i < o.expert_count[e]; i++)
				for (unsigned int q = 0; q < H; q++) {
					uint64_t row = o.expert_offset[e] + i;

					y[row * H + q] = (float)(rank * epr + e + 1) *
						((float *)o.x)[row * H + q];
				}
		err = fdev_moe_combine(c, h, (const void *const[]){ y },
				       (void *const[]){ out });
		fdev_moe_stats(h, &st);
	}
	for (unsigned int t = 0; !err && t < T; t++)
		for (unsigned int q = 0; q < H; q++) {
			float want = 0;

			for (unsigned int j = 0; j < K; j++)
				if (idx[t * K + j] >= 0)
					want += w[t * K + j] * ((float)(idx[t * K + j] + 1) *
								x[t * H + q]);
			bad += out[(size_t)t * H + q] != want;
		}
	printf("%s rank %d %s dispatch and combine (%d, %zu bad)\n",
	       !err && !bad ? "ok" : "not ok", rank, name, err, bad);
	printf("# time %s-dispatch %" PRIu64 "\n# time %s-combine %" PRIu64 "\n",
	       name, st.dispatch_ps, name, st.combine_ps);
	mp_at(c, name, "combine");
	fdev_moe_handle_free(h);
	free(x); free(w); free(idx); free(y); free(out);
	return err || bad;
}

/*
 * The ranks of FDEV_JOB meet on the host, not through libfabricdev: each
 * makes a file and waits for everyone's, rank 0 after a pause, so the
 * others wait there while it may still need the fabric. A context that
 * held the engine back meanwhile would stop everyone. The files go
 * after the next meeting.
 */
static int mp_host_meet(int rank, int n, unsigned int k)
{
	const char *job = getenv("FDEV_JOB");
	char name[256];
	int fd, left;

	if (!rank)
		usleep(200000);
	snprintf(name, sizeof(name), "/dev/shm/fdev-meet-%s-%u-%d",
		 job ? job : "", k, rank);
	fd = open(name, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	for (int tries = 0; tries < 12000; tries++) {
		left = 0;
		for (int r = 0; r < n; r++) {
			snprintf(name, sizeof(name), "/dev/shm/fdev-meet-%s-%u-%d",
				 job ? job : "", k, r);
			left += access(name, F_OK) != 0;
		}
		if (!left)
			break;
		usleep(10000);
	}
	if (k) {
		snprintf(name, sizeof(name), "/dev/shm/fdev-meet-%s-%u-%d",
			 job ? job : "", k - 1, rank);
		unlink(name);
	}
	return left ? -ETIMEDOUT : 0;
}

/*
 * One rank of independent processes, data, each rank's own context:
 * every collective and the MoE modes (multicast where the communicator
 * can), with their emulated times. Prints "# proxy 0|1" first.
 */
static int mp_all(void)
{
	struct fdev_comm *c;
	int rank, failed, err, proxy, n;
	unsigned int k = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* what got done, if killed */
	err = fdev_comm_init(NULL, NULL, -1, -1, 16 << 20, 0, &c);
	if (!err)
		err = fdev_comm_set_node_size(c, 2);
	if (err) {
		fprintf(stderr, "fdev_dev_test: comm: %s\n", strerror(-err));
		return 1;
	}
	fdev_comm_local(c, &rank, NULL);
	/* No proxy: every rank has its own context. */
	proxy = fdev_comm_dev(c) == NULL;
	mp_t0 = fdev_clock(fdev_comm_dev(c));
	printf("# proxy %d\n", proxy);
	n = fdev_comm_size(c);
	failed = mp_colls(c, rank, 1000);
	failed += mp_host_meet(rank, n, k++) != 0;
	failed += mp_moe_mode(c, rank, "throughput", FDEV_MOE_THROUGHPUT);
	failed += mp_host_meet(rank, n, k++) != 0;
	if (!proxy)	/* a proxy's plan must name every rank's transfers */
		failed += mp_moe_mode(c, rank, "low-latency", FDEV_MOE_LOW_LATENCY);
	failed += mp_moe_mode(c, rank, "hierarchical", FDEV_MOE_HIERARCHICAL);
	failed += mp_host_meet(rank, n, k++) != 0;
	if (!proxy)	/* through a proxy it needs icfabd's circuits */
		failed += mp_moe_mode(c, rank, "multicast", FDEV_MOE_MULTICAST);
	err = fdev_comm_barrier(c);
	if (!err)
		err = mp_host_meet(rank, n, k);
	fdev_comm_destroy(c);
	return failed || err;
}

/*
 * mpa2av's pairs, in f32 elements, for slots of @S bytes: see the usage
 * at the top.
 */
static uint64_t mpa2av_count(const char *cs, int n, int s, int d, uint64_t S)
{
	uint64_t e = S / 4;

	if (s == d)
		return (uint64_t)s + 3;
	if (!strcmp(cs, "fit"))
		return e * (uint64_t)((3 * s + d) % 5) / 4;
	if (!strcmp(cs, "room") || !strcmp(cs, "roomzc"))
		return d ? 1 : 4 * e;
	if (!s && d == n - 1)
		return 3 * e;		/* 2 slots over */
	switch ((s + d) % 3) {
	case 0:
		return 0;
	case 1:
		return e + 1;		/* one element over */
	default:
		return (uint64_t)(s + d + 1);
	}
}

static float mpa2av_val(int s, int d, uint64_t i)
{
	return (float)((s * 131 + d * 17 + (int)(i % 4096)) % 8191);
}

/*
 * @rep all-to-all-v of mpa2av's case from @x into @y, each checked
 * element by element and count by count: the mismatches into *@bad,
 * the last one's time into *@t, its error returned.
 */
static int mp_a2av_runs(struct fdev_comm *c, int rank, int n, int rep,
			const float *x, float *y, const uint64_t *sc,
			uint64_t *rc, const uint64_t *want, uint64_t in,
			uint64_t *bad, uint64_t *t, int *slots)
{
	int err = 0;

	for (int r = 0; r < rep; r++) {
		memset(y, 0xff, in * 4 + 4);
		memset(rc, 0xff, (size_t)n * 8);
		err = fdev_all_to_all_v(c, x, sc, y, rc, FDEV_F32, FDEV_ALGO_AUTO);
		*slots = __fdev_comm_a2av_slots(c);
		*t = fdev_comm_last_ps(c);
		if (err)
			break;
		for (int s = 0, k = 0; s < n; s++) {
			*bad += rc[s] != want[s];
			for (uint64_t i = 0; i < want[s]; i++)
				*bad += y[k++] != mpa2av_val(s, rank, i);
		}
		/* Nothing past the end. */
		*bad += ((const uint32_t *)y)[in] != 0xffffffffu;
	}
	return err;
}

/* A registered region of @bytes on local rank @rank's endpoint, or NULL. */
static void *mp_region(struct fdev_comm *c, int rank, uint64_t bytes,
		       struct fdev_region *r)
{
	uint64_t pg = 4096, sz = (bytes + pg - 1) / pg * pg;

	if (fdev_region_alloc(fdev_comm_dev(c), fdev_comm_endpoint(c, rank),
			      sz ? sz : pg, r) || fdev_comm_register(c, r))
		return NULL;
	return r->addr;
}

static int mp_a2av(uint64_t ws, const char *cs, int rep, int zc)
{
	struct fdev_comm *c;
	struct fdev_region reg[2] = { 0 };
	int rank, n, err, err0 = 0, slots = 0, room, roomzc;
	uint64_t S, sent = 0, rests = 0, in = 0, out = 0, bad = 0, t = 0, tc = 0;
	uint64_t st[4] = { 0 }, ip[4] = { 0 };
	uint64_t *sc, *rc, *want;
	float *x, *y, *zx = NULL, *zy = NULL;

	err = fdev_comm_init(NULL, NULL, -1, -1, ws, 0, &c);
	if (err) {
		fprintf(stderr, "fdev_dev_test: comm: %s\n", strerror(-err));
		return 1;
	}
	fdev_comm_local(c, &rank, NULL);
	n = fdev_comm_size(c);
	S = (ws / (2 * (uint64_t)n) - 8) & ~7ULL;
	room = !strcmp(cs, "room");
	roomzc = !strcmp(cs, "roomzc");
	sc = calloc((size_t)n, 8);
	rc = calloc((size_t)n, 8);
	want = calloc((size_t)n, 8);
	for (int d = 0; d < n; d++) {
		sc[d] = mpa2av_count(cs, n, rank, d, S);
		want[d] = mpa2av_count(cs, n, d, rank, S);
		out += sc[d];
		in += want[d];
		if (d == rank)
			continue;
		/* Its slot part and count; its go-ahead; its rest. */
		sent += 8 + (sc[d] * 4 < S ? sc[d] * 4 : S);
		sent += want[d] * 4 > S ? 8 : 0;
		rests += sc[d] * 4 > S ? sc[d] * 4 - S : 0;
	}
	sent += rests;
	x = malloc(out * 4 + 4);
	y = malloc(in * 4 + 4);
	for (int d = 0, k = 0; d < n; d++)
		for (uint64_t i = 0; i < sc[d]; i++)
			x[k++] = mpa2av_val(rank, d, i);
	if (zc) {
		zx = mp_region(c, rank, out * 4 + 4, &reg[0]);
		zy = room && !rank ? y : mp_region(c, rank, in * 4 + 4, &reg[1]);
		if (!zx || !zy) {
			fprintf(stderr, "fdev_dev_test: no region\n");
			return 1;
		}
		memcpy(zx, x, out * 4);
		/* Ordinary, registered, ordinary: each run's bytes, the last two's times. */
		fdev_comm_bytes(c, &st[0], &ip[0]);
		err0 = mp_a2av_runs(c, rank, n, rep, x, y, sc, rc, want, in,
				    &bad, &tc, &slots);
		fdev_comm_bytes(c, &st[1], &ip[1]);
		/* Every rank runs all three: each fails alike, if it does. */
		err = mp_a2av_runs(c, rank, n, rep, zx, zy, sc, rc, want, in,
				   &bad, &t, &slots);
		fdev_comm_bytes(c, &st[2], &ip[2]);
		if (!err0)
			err0 = mp_a2av_runs(c, rank, n, rep, x, y, sc, rc, want,
					    in, &bad, &tc, &slots);
		fdev_comm_bytes(c, &st[3], &ip[3]);
		/* roomzc: the copy path refuses (room's), zero copy does not. */
		if (err0 != (roomzc ? -EMSGSIZE : err) && !bad)
			bad = 1;
		sent = 3 * sent - (roomzc ? 2 * rests : 0);
	} else
		err = mp_a2av_runs(c, rank, n, rep, x, y, sc, rc, want, in,
				   &bad, &t, &slots);
	printf("{\"rank\":%d,\"case\":\"%s\",\"err\":%d,\"bad\":%" PRIu64
	       ",\"slots\":%d,\"slot_bytes\":%" PRIu64 ",\"sent_bytes\":%" PRIu64
	       ",\"time_ps\":%" PRIu64, rank, cs, err, bad, slots, S,
	       sent * (uint64_t)rep, t);
	if (zc)
		printf(",\"copy_ps\":%" PRIu64 ",\"zc_staged\":%" PRIu64
		       ",\"zc_in_place\":%" PRIu64 ",\"copy_staged\":%" PRIu64
		       ",\"copy_in_place\":%" PRIu64, tc, st[2] - st[1],
		       ip[2] - ip[1], st[3] - st[2], ip[3] - ip[2]);
	printf("}\n");
	fdev_comm_destroy(c);
	free(sc);
	free(rc);
	free(want);
	free(x);
	free(y);
	if (room)
		return err == -EMSGSIZE ? 0 : 1;
	return err || bad || !slots;
}

/* "a b" per line, a cable between ranks a and b: into *@ends. */
static int read_links(const char *path, uint32_t **ends)
{
	FILE *f = fopen(path, "r");
	unsigned int a, b;
	size_t n = 0, cap = 64;

	*ends = malloc(cap * 2 * sizeof(**ends));
	if (!f || !*ends) {
		if (f)
			fclose(f);
		return -1;
	}
	while (fscanf(f, "%u %u", &a, &b) == 2) {
		if (n == cap) {
			uint32_t *e = realloc(*ends, 2 * cap * 2 * sizeof(**ends));

			if (!e)
				break;
			*ends = e;
			cap *= 2;
		}
		(*ends)[2 * n] = a;
		(*ends)[2 * n + 1] = b;
		n++;
	}
	fclose(f);
	return (int)n;
}

/*
 * rings LINKS N CNT OP ALGO: one process driving N ranks, data, the
 * communicator given LINKS' cables (fdev_comm_set_links()); one OP
 * (allreduce, reducescatter, allgather) of CNT f32 per rank's block
 * (the all-reduce: N CNT) with ALGO (rings, auto, ring), checked
 * element by element on every rank. Prints an "ok"/"not ok" line, then
 * a JSON line: the rings found, the time, and the bytes every rank
 * sends in all (what the endpoints' links must carry). Timing only
 * (no data check) with "timing" after ALGO.
 */
static int rings_cmd(int argc, char **argv)
{
	unsigned int n = (unsigned int)atoi(argv[3]);
	size_t cnt = strtoul(argv[4], NULL, 0), in_len, out_len, bad = 0;
	const char *op = argv[5];
	int algo = !strcmp(argv[6], "rings") ? FDEV_ALGO_RINGS :
		   algo_of(argv[6]);
	int timing = argc > 7 && !strcmp(argv[7], "timing");
	int ar = !strcmp(op, "allreduce"), rs = !strcmp(op, "reducescatter");
	struct fdev_comm *c;
	uint32_t *ends;
	float *x = NULL, *y = NULL;
	int nl = read_links(argv[2], &ends), nr, err;
	uint64_t sent;

	if (nl < 0 || algo < 0)
		return 2;
	/* per rank: input, output in floats */
	in_len = ar ? n * cnt : rs ? n * cnt : cnt;
	out_len = ar ? n * cnt : rs ? cnt : n * cnt;
	err = fdev_comm_init_local(NULL, (int)n, NULL,
				   timing ? 0 : 8 * (n * cnt * 4 + 4096) + (1 << 20),
				   timing ? FDEV_COMM_TIMING_ONLY : 0, &c);
	if (err) {
		fprintf(stderr, "fdev_dev_test: comm: %s\n", strerror(-err));
		return 1;
	}
	nr = fdev_comm_set_links(c, (unsigned int)nl, ends);
	free(ends);
	if (!timing) {
		x = malloc(n * in_len * 4);
		y = calloc(n * out_len, 4);
		for (size_t r = 0; r < n; r++)
			for (size_t i = 0; i < in_len; i++)
				x[r * in_len + i] = coll_in(r, i);
	}
	err = nr < 0 ? nr : ar ? fdev_all_reduce(c, x, y, n * cnt, FDEV_F32, algo) :
	      rs ? fdev_reduce_scatter(c, x, y, cnt, FDEV_F32, algo) :
	      fdev_all_gather(c, x, y, cnt, FDEV_F32, algo);
	for (size_t r = 0; !err && !timing && r < n; r++)
		for (size_t i = 0; i < out_len; i++)
			bad += y[r * out_len + i] !=
			       coll_want(op, n, r, ar ? n * cnt : cnt, i);
	printf("%s %s %s, %u ranks, %d rings (%d, %zu bad)\n",
	       !err && !bad ? "ok" : "not ok", op, argv[6], n, nr, err, bad);
	/* every rank sends (n-1) blocks per phase, n of them per all-reduce */
	sent = (uint64_t)n * (n - 1) * cnt * 4 * (ar ? 2 : 1);
	printf("{\"op\":\"%s\",\"algo\":\"%s\",\"ran\":\"%s\",\"ranks\":%u,"
	       "\"rings\":%d,\"time_ps\":%" PRIu64 ",\"sent_bytes\":%" PRIu64 "}\n",
	       op, argv[6], algo_name(fdev_comm_last_algo(c)), n, nr,
	       fdev_comm_last_ps(c), sent);
	fdev_comm_destroy(c);
	free(x);
	free(y);
	return err || bad;
}

int main(int argc, char **argv)
{
	struct fdev_comm *c;
	int err, algo;

	if (argc >= 2 && !strcmp(argv[1], "api"))
		return test_api();
	if (argc >= 6 && !strcmp(argv[1], "coll")) {
		unsigned int n = (unsigned int)atoi(argv[4]);
		uint64_t bytes = strtoull(argv[5], NULL, 0), t0;
		const char *r = getenv("FDEV_COLL_REPEAT");
		int rep = r ? atoi(r) : 1;

		algo = algo_of(argv[3]);
		err = fdev_comm_init_local(NULL, n, NULL, 0, FDEV_COMM_TIMING_ONLY, &c);
		if (!err && argc > 6)
			err = fdev_comm_set_node_size(c, atoi(argv[6]));
		if (!err)
			err = run_op(c, argv[2], algo, bytes);
		t0 = fdev_comm_last_ps(c);
		/* FDEV_COLL_REPEAT=N: N operations, one after the other. */
		for (int i = 1; !err && i < rep; i++)
			err = run_op(c, argv[2], algo, bytes);
		if (err) {
			fprintf(stderr, "fdev_dev_test: %s\n", strerror(-err));
			return 1;
		}
		printf("{\"op\":\"%s\",\"algo\":\"%s\",\"ran\":\"%s\",\"ranks\":%u,"
		       "\"bytes\":%" PRIu64 ",\"time_ps\":%" PRIu64, argv[2],
		       argv[3], algo_name(fdev_comm_last_algo(c)), n, bytes, t0);
		if (rep > 1)
			printf(",\"last_ps\":%" PRIu64, fdev_comm_last_ps(c));
		printf(",\"a2av_slots\":%d}\n", __fdev_comm_a2av_slots(c));
		fdev_comm_destroy(c);
		return 0;
	}
	if (argc >= 7 && !strcmp(argv[1], "rings"))
		return rings_cmd(argc, argv);
	if (argc >= 4 && !strcmp(argv[1], "cap"))
		return test_cap((unsigned int)atoi(argv[2]),
				(unsigned int)atoi(argv[3]));
	if (argc >= 2 && !strcmp(argv[1], "mpmoe"))
		return mp_moe(argc > 2 && !strcmp(argv[2], "hier") ? "hier" : "mc");
	if (argc >= 2 && !strcmp(argv[1], "mpall"))
		return mp_all();
	if (argc >= 4 && !strcmp(argv[1], "mpa2av"))
		return mp_a2av(strtoull(argv[2], NULL, 0), argv[3],
			       argc > 4 ? atoi(argv[4]) : 1,
			       argc > 5 && !strcmp(argv[5], "zc"));
	if (argc >= 2 && !strcmp(argv[1], "mpdie")) {
		/*
		 * The last rank dies right after the rendezvous; the others
		 * run an all-to-all and must get -EPIPE (it was excluded), then
		 * carry on without it: exit 4 on that, 0 for the dying one.
		 */
		int rank, size;

		err = fdev_comm_init(NULL, NULL, -1, -1, 0, FDEV_COMM_TIMING_ONLY, &c);
		if (err)
			return 1;
		fdev_comm_local(c, &rank, NULL);
		size = fdev_comm_size(c);
		if (rank == size - 1)
			_exit(0);
		err = fdev_all_to_all(c, NULL, NULL, 4096, FDEV_U8, FDEV_ALGO_DIRECT);
		if (err != -EPIPE || !(fdev_comm_failed(c, 0) >> (size - 1) & 1))
			return 1;
		/* Everyone left agrees, and a barrier now passes. */
		err = fdev_comm_barrier(c);
		fdev_comm_destroy(c);
		return err ? 1 : 4;
	}
	if (argc >= 3 && !strcmp(argv[1], "mpidle")) {
		/*
		 * Rank 0 is to be killed (SIGKILL, by the caller) while its
		 * idle thread sits in the receive queue's WAIT of a
		 * kept-context meeting: after an all-to-all it says
		 * "meeting pid PID" and meets the others (a barrier, with
		 * nothing in flight), who wait on the host until the file
		 * @argv[2] exists and then run a second all-to-all. It must
		 * fail with -EPIPE, rank 0 excluded; then a barrier without it
		 * passes: exit 4. Rank 0 exits 3 if its meeting ever ends.
		 */
		int rank;

		err = fdev_comm_init(NULL, NULL, -1, -1, 0, FDEV_COMM_TIMING_ONLY, &c);
		if (err) {
			fprintf(stderr, "fdev_dev_test: comm: %s\n", strerror(-err));
			return 1;
		}
		fdev_comm_local(c, &rank, NULL);
		err = fdev_all_to_all(c, NULL, NULL, 4096, FDEV_U8, FDEV_ALGO_DIRECT);
		if (err) {
			fprintf(stderr, "fdev_dev_test: rank %d: first: %s\n",
				rank, strerror(-err));
			return 1;
		}
		if (!rank) {
			printf("meeting pid %d\n", (int)getpid());
			fflush(stdout);
			err = fdev_comm_barrier(c);
			fprintf(stderr, "fdev_dev_test: rank 0 left its meeting: %d\n", err);
			return 3;
		}
		while (access(argv[2], F_OK))
			usleep(20000);
		err = fdev_all_to_all(c, NULL, NULL, 4096, FDEV_U8, FDEV_ALGO_DIRECT);
		fprintf(stderr, "fdev_dev_test: rank %d: second: %s\n", rank,
			strerror(-err));
		if (err != -EPIPE || !(fdev_comm_failed(c, 0) & 1))
			return 1;
		err = fdev_comm_barrier(c);
		fdev_comm_destroy(c);
		return err ? 1 : 4;
	}
	if (argc >= 5 && !strcmp(argv[1], "mp")) {
		uint64_t bytes = strtoull(argv[4], NULL, 0), t[8], w[3];
		int rep = argc > 5 ? atoi(argv[5]) : 1, rank;

		algo = algo_of(argv[3]);
		/* Wall ms: the rendezvous, then the operations. */
		w[0] = mono_ms();
		err = fdev_comm_init(NULL, NULL, -1, -1, 0, FDEV_COMM_TIMING_ONLY, &c);
		w[1] = mono_ms();
		if (err) {
			fprintf(stderr, "fdev_dev_test: comm: %s\n", strerror(-err));
			return 1;
		}
		fdev_comm_local(c, &rank, NULL);
		for (int i = 0; i < rep && i < 8; i++) {
			err = run_op(c, argv[2], algo, bytes);
			if (err) {
				fprintf(stderr, "fdev_dev_test: rank %d: %s\n", rank,
					strerror(-err));
				fdev_comm_destroy(c);
				return 1;
			}
			t[i] = fdev_comm_last_ps(c);
		}
		w[2] = mono_ms();
		err = fdev_comm_barrier(c);
		printf("{\"rank\":%d,\"time_ps\":%" PRIu64 ",\"last_ps\":%" PRIu64
		       ",\"barrier\":%d,\"init_ms\":%" PRIu64 ",\"ops_ms\":%" PRIu64
		       ",\"a2av_slots\":%d}\n",
		       rank, t[0], t[rep > 8 ? 7 : rep - 1], err, w[1] - w[0],
		       w[2] - w[1], __fdev_comm_a2av_slots(c));
		fdev_comm_destroy(c);
		return err ? 1 : 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "mpdata")) {
		/*
		 * One rank of independent processes, data in device memory,
		 * free-running contexts: an all-reduce and an all-to-all,
		 * checked element by element. Prints "ok" lines.
		 */
		size_t cnt = strtoul(argv[2], NULL, 0), n, bad = 0;
		float *x, *y;
		int rank;

		int fr = argc > 3 && !strcmp(argv[3], "free");
		uint64_t t_ar = 0;

		err = fdev_comm_init(NULL, NULL, -1, -1, 16 << 20,
				     fr ? FDEV_COMM_FREE_RUN : 0, &c);
		if (err) {
			fprintf(stderr, "fdev_dev_test: comm: %s\n", strerror(-err));
			return 1;
		}
		fdev_comm_local(c, &rank, NULL);
		n = (size_t)fdev_comm_size(c);
		x = malloc(n * cnt * 4);
		y = malloc(n * cnt * 4);
		for (size_t i = 0; i < n * cnt; i++)
			x[i] = (float)((rank * 7 + i * 3) % 17);
		err = fdev_all_reduce(c, x, y, cnt, FDEV_F32, FDEV_ALGO_RING);
		t_ar = fdev_comm_last_ps(c);
		for (size_t i = 0; !err && i < cnt; i++) {
			float s = 0;

			for (size_t q = 0; q < n; q++)
				s += (float)((q * 7 + i * 3) % 17);
			bad += y[i] != s;
		}
		printf("%s rank %d all-reduce (%d, %zu bad)\n", !err && !bad ? "ok" : "not ok",
		       rank, err, bad);
		bad = 0;
		if (!err)
			err = fdev_all_to_all(c, x, y, cnt, FDEV_F32, FDEV_ALGO_DIRECT);
		for (size_t q = 0; !err && q < n; q++)
			for (size_t i = 0; i < cnt; i++)
				bad += y[q * cnt + i] != (float)((q * 7 + (rank * cnt + i) * 3) % 17);
		printf("%s rank %d all-to-all (%d, %zu bad)\n", !err && !bad ? "ok" : "not ok",
		       rank, err, bad);
		printf("# rank %d all-reduce time_ps %" PRIu64 "\n", rank, t_ar);
		fdev_comm_destroy(c);
		free(x);
		free(y);
		return err || bad;
	}
	fprintf(stderr, "usage: fdev_dev_test api | coll OP ALGO N BYTES [NODE] (FDEV_COLL_REPEAT=N) | mp OP ALGO BYTES [REPEAT] | mpidle GOFILE\n");
	return 2;
}
