// SPDX-License-Identifier: GPL-2.0
/*
 * desc_cost: what one descriptor costs on the host, side by side with
 * what io_uring itself costs, in one run (these machines are shared and
 * noisy, so only ratios measured together mean anything).
 *
 * On a two-endpoint fabric with zero-latency links of very high
 * bandwidth, 64-byte timing-only WRITEs in batches of 32:
 *   uring: 32 ICFAB_UCMD_SUBMIT + 1 ICFAB_UCMD_WAIT per io_uring_enter
 *   ioctl: ICFAB_IOC_SUBMIT of 32, then ICFAB_IOC_WAIT for 32
 *   nop:   32 IORING_OP_NOP per io_uring_enter, the floor
 *   uring BATCH: one ICFAB_UCMD_SUBMIT_BATCH of 32 per io_uring_enter,
 *          completions polled from the completion ring (ICFAB_F_CQ_RING),
 *          ICFAB_IOC_CQ_WAIT only when the ring has fewer than 32
 *   ioctl CQ: ICFAB_IOC_SUBMIT of 32 with ICFAB_SUBMIT_F_CQ, the same ring
 *   ioctl CQ MEM: the same with 64-byte WRITEs of device memory instead,
 *          from a region on endpoint 0 to one on endpoint 1 by its key
 *          (bytes copied: the checks of both regions, the copy of 64 bytes
 *          at the completion); the context attaches both endpoints, for
 *          every row, to own both regions
 *   ioctl CQ MEM RD: the same with 64-byte READs of device memory, from
 *          the region on endpoint 1 into the one on endpoint 0
 *   ioctl CQ RD: ioctl CQ with 64-byte timing-only READs from endpoint 1
 *          instead of its WRITEs
 * and, to split the cost, the same paths with 32 zero-length DELAYs
 * instead of the WRITEs (uring-delay, ioctl-delay): everything a
 * descriptor costs except the engine (a DELAY only moves the context's
 * clock). It prints ns per descriptor for each and the ratios to nop: the
 * median over slices of 10 batches (of each slice's own ratio), the best
 * slice (the least disturbed by the host) and the mean.
 *
 * Needs the module loaded and CAP_NET_ADMIN (it replaces the topology
 * of fabric 0). Build:
 *   cc -O2 -Iuapi -Iselftests/icfab -o build/bench/desc_cost \
 *      tools/bench/desc_cost.c tools/bench/bench.c \
 *      selftests/icfab/genl.c selftests/icfab/fabric_util.c -luring
 * usage: desc_cost [ROUNDS [METHOD]]   (batches per method, default 2000;
 *        with METHOD one of the names printed as "x NOP: NAME": that one
 *        alone, for a profiler). Without ICFAB_F_CQ_RING the ring rows
 *        are left out. DESC_COST_RECV=1: the context is a receiver too
 *        (a receive queue of depth 1 on its endpoint, as a libfabricdev
 *        rank of independent processes binds), which nothing sends to.
 *        DESC_COST_NOTIFY=1: the two ioctl CQ rows' WRITEs (timing-only
 *        and memory) carry ICFAB_DESC_F_NOTIFY, to a receive queue of
 *        the context's own on endpoint 1, their target, and each batch
 *        also reaps its 32 receive completions with an ICFAB_IOC_WAIT;
 *        the other rows are a receiver's (as with DESC_COST_RECV).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "bench.h"
#include "fabric_util.h"

#define BATCH	32
#define LEN	64		/* bytes */

static void prep_cmd(struct io_uring *ring, int fd, uint32_t op,
		     const void *payload)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = op;
	memcpy(sqe->cmd, payload, 80);
}

static int reap(struct io_uring *ring, unsigned int n)
{
	struct io_uring_cqe *cqe;
	int bad = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (io_uring_wait_cqe(ring, &cqe))
			return -1;
		bad |= cqe->res < 0;
		io_uring_cqe_seen(ring, cqe);
	}
	return bad ? -1 : 0;
}

/* The memory row's regions: the local one's handle, the remote one's key. */
static uint32_t mem_region;
static uint64_t mem_key;
/* DESC_COST_NOTIFY: the ioctl CQ rows' WRITEs notify (above). */
static int notify;

/*
 * The descriptor measured: a timing-only WRITE, a DELAY of 0 ps (@delay
 * 1), a WRITE of device memory (@delay 2), a READ of it (@delay 3) or a
 * timing-only READ (@delay 4).
 */
static struct icfab_desc bench_desc(uint32_t q, int delay)
{
	if (delay == 4)
		return (struct icfab_desc){ .op = ICFAB_OP_READ, .queue = q,
			.peer = 1, .len = LEN,
			.flags = ICFAB_DESC_F_TIMING_ONLY };
	if (delay == 3)
		return mv(ICFAB_OP_READ, q, mem_region, 0, mem_key, 0, LEN, 0);
	if (delay == 2)
		return mv(ICFAB_OP_WRITE, q, mem_region, 0, mem_key, 0, LEN, 0);
	if (delay)
		return (struct icfab_desc){ .op = ICFAB_OP_DELAY, .queue = q };
	return (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = q,
		.peer = 1, .len = LEN, .flags = ICFAB_DESC_F_TIMING_ONLY };
}

static double run_uring(struct io_uring *ring, int fd, uint32_t q, int rounds,
			int delay)
{
	struct icfab_uring_submit us;
	struct icfab_uring_wait w = { .min = BATCH };
	double t0;

	memset(&us, 0, sizeof(us));
	us.desc = bench_desc(q, delay);
	t0 = bench_now_ns();
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < BATCH; i++)
			prep_cmd(ring, fd, ICFAB_UCMD_SUBMIT, &us);
		prep_cmd(ring, fd, ICFAB_UCMD_WAIT, &w);
		if (io_uring_submit_and_wait(ring, BATCH + 1) != BATCH + 1 ||
		    reap(ring, BATCH + 1))
			return -1;
	}
	return (bench_now_ns() - t0) / ((double)rounds * BATCH);
}

static double run_ioctl(int fd, uint32_t q, int rounds, int delay)
{
	struct icfab_desc d[BATCH];
	struct icfab_cqe c[BATCH];
	struct icfab_submit s = { .descs = (uintptr_t)d, .nr = BATCH };
	struct icfab_wait w = { .cqes = (uintptr_t)c, .min = BATCH,
				.max = BATCH };
	double t0;

	for (int i = 0; i < BATCH; i++)
		d[i] = bench_desc(q, delay);
	t0 = bench_now_ns();
	for (int r = 0; r < rounds; r++) {
		w.nr = 0;
		w.clock_ps = 0;
		if (ioctl(fd, ICFAB_IOC_SUBMIT, &s) != BATCH ||
		    ioctl(fd, ICFAB_IOC_WAIT, &w) || w.nr != BATCH)
			return -1;
	}
	return (bench_now_ns() - t0) / ((double)rounds * BATCH);
}

/* The completion ring, mapped. */
static struct bench_cq cq;

static double run_uring_batch(struct io_uring *ring, int fd, uint32_t q,
			      int rounds, int delay)
{
	struct icfab_desc d[BATCH];
	struct icfab_uring_batch b = { .descs = (uintptr_t)d, .nr = BATCH,
				       .flags = ICFAB_SUBMIT_F_CQ };
	struct io_uring_cqe *cqe;
	double t0;

	for (int i = 0; i < BATCH; i++)
		d[i] = bench_desc(q, delay);
	t0 = bench_now_ns();
	for (int r = 0; r < rounds; r++) {
		prep_cmd(ring, fd, ICFAB_UCMD_SUBMIT_BATCH, &b);
		if (io_uring_submit_and_wait(ring, 1) != 1 ||
		    io_uring_wait_cqe(ring, &cqe))
			return -1;
		if (cqe->res != BATCH)
			return -1;
		io_uring_cqe_seen(ring, cqe);
		if (bench_cq_reap(fd, &cq, BATCH))
			return -1;
	}
	return (bench_now_ns() - t0) / ((double)rounds * BATCH);
}

static double run_ioctl_cq(int fd, uint32_t q, int rounds, int delay)
{
	struct icfab_desc d[BATCH];
	struct icfab_submit s = { .descs = (uintptr_t)d, .nr = BATCH,
				  .flags = ICFAB_SUBMIT_F_CQ };
	double t0;

	struct icfab_cqe rc[BATCH];
	struct icfab_wait w = { .cqes = (uintptr_t)rc, .min = BATCH,
				.max = BATCH, .timeout_ms = 10000 };
	int nt = notify && (delay == 0 || delay == 2);

	for (int i = 0; i < BATCH; i++) {
		d[i] = bench_desc(q, delay);
		if (nt)
			d[i].flags |= ICFAB_DESC_F_NOTIFY;
	}
	t0 = bench_now_ns();
	/*
	 * The receive completions first: a CQ_WAIT counts what is on the
	 * done list too, where they go; they come with the sends' (at each
	 * transfer's finish), so the ring then has its 32.
	 */
	for (int r = 0; r < rounds; r++) {
		/* The WAIT's outputs are zero going in. */
		w.nr = 0;
		w.clock_ps = 0;
		if (ioctl(fd, ICFAB_IOC_SUBMIT, &s) != BATCH ||
		    (nt && (ioctl(fd, ICFAB_IOC_WAIT, &w) || w.nr != BATCH)) ||
		    bench_cq_reap(fd, &cq, BATCH))
			return -1;
	}
	return (bench_now_ns() - t0) / ((double)rounds * BATCH);
}

static double run_nop(struct io_uring *ring, int rounds)
{
	double t0 = bench_now_ns();

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < BATCH; i++)
			io_uring_prep_nop(io_uring_get_sqe(ring));
		if (io_uring_submit_and_wait(ring, BATCH) != BATCH ||
		    reap(ring, BATCH))
			return -1;
	}
	return (bench_now_ns() - t0) / ((double)rounds * BATCH);
}

enum { M_NOP, M_URING, M_IOCTL, M_URING_D, M_IOCTL_D,
       M_URING_B, M_IOCTL_CQ, M_URING_B_D, M_IOCTL_CQ_D, M_IOCTL_CQ_M,
       M_IOCTL_CQ_MR, M_IOCTL_CQ_RD, M_NR_RUN };
/* Without the ring, only the methods before it. */
static int m_nr_run = M_NR_RUN;
#define M_NR	(2 * M_NR_RUN - 1)	/* and each one's ratio to nop */

static const char *const m_name[M_NR_RUN] = {
	"io_uring NOP", "icfab io_uring SUBMIT", "icfab ioctl SUBMIT",
	"io_uring DELAY", "ioctl DELAY",
	"icfab io_uring BATCH", "icfab ioctl CQ", "io_uring BATCH DELAY",
	"ioctl CQ DELAY", "icfab ioctl CQ MEM", "icfab ioctl CQ MEM RD",
	"icfab ioctl CQ RD",
};
static const char *const m_arg[M_NR_RUN] = {
	"nop", "uring", "ioctl", "uring-delay", "ioctl-delay",
	"uring-batch", "ioctl-cq", "uring-batch-delay", "ioctl-cq-delay",
	"ioctl-cq-mem", "ioctl-cq-mem-read", "ioctl-cq-read",
};

static double run_method(int m, struct io_uring *ring, int fd, uint32_t q,
			 int rounds)
{
	switch (m) {
	case M_NOP:
		return run_nop(ring, rounds);
	case M_URING:
	case M_URING_D:
		return run_uring(ring, fd, q, rounds, m == M_URING_D);
	case M_URING_B:
	case M_URING_B_D:
		return run_uring_batch(ring, fd, q, rounds, m == M_URING_B_D);
	case M_IOCTL_CQ:
	case M_IOCTL_CQ_D:
		return run_ioctl_cq(fd, q, rounds, m == M_IOCTL_CQ_D);
	case M_IOCTL_CQ_M:
		return run_ioctl_cq(fd, q, rounds, 2);
	case M_IOCTL_CQ_MR:
		return run_ioctl_cq(fd, q, rounds, 3);
	case M_IOCTL_CQ_RD:
		return run_ioctl_cq(fd, q, rounds, 4);
	default:
		return run_ioctl(fd, q, rounds, m == M_IOCTL_D);
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 2000;
	const char *only = argc > 2 ? argv[2] : NULL;
	struct icfab_queue_create qc = { .endpoint = 0, .depth = BATCH };
	struct icfab_attach a = { .endpoint = 0 }, a1 = { .endpoint = 1 };
	unsigned char *map0, *map1;
	uint32_t remote;
	uint64_t key0;
	double *v[M_NR], mean[M_NR] = { 0 }, best[M_NR];
	int slices;
	struct io_uring ring;
	struct genl_sock gs;
	int fd, err;

	if (rounds < 10)
		rounds = 10;
	slices = rounds / 10;
	fd = bench_start("desc_cost", v, best, M_NR, slices, &gs, 0);
	if (fd < 0)
		return 1;
	if (ioctl(fd, ICFAB_IOC_ATTACH, &a) ||
	    ioctl(fd, ICFAB_IOC_ATTACH, &a1) ||
	    ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &qc)) {
		perror("desc_cost: /dev/icfab0");
		return 1;
	}
	err = region_map(fd, 0, 4096, 0, &mem_region, &key0, &map0);
	if (!err)
		err = region_map(fd, 1, 4096, ICFAB_ACCESS_REMOTE_WRITE |
				 ICFAB_ACCESS_REMOTE_READ, &remote, &mem_key,
				 &map1);
	if (err) {
		fprintf(stderr, "desc_cost: regions: %s\n", strerror(-err));
		return 1;
	}
	if (getenv("DESC_COST_RECV") && *getenv("DESC_COST_RECV")) {
		struct icfab_queue_create rq = { .endpoint = 0, .depth = 1,
						 .flags = ICFAB_QUEUE_F_RECV };

		if (ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &rq)) {
			perror("desc_cost: a receive queue");
			return 1;
		}
		printf("desc_cost: the context is a receiver (receive queue %u)\n",
		       rq.queue);
	}
	if (getenv("DESC_COST_NOTIFY") && *getenv("DESC_COST_NOTIFY")) {
		struct icfab_queue_create rq = { .endpoint = 1,
						 .depth = 2 * BATCH,
						 .flags = ICFAB_QUEUE_F_RECV };

		if (ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &rq)) {
			perror("desc_cost: a receive queue");
			return 1;
		}
		notify = 1;
		printf("desc_cost: the ioctl CQ rows' WRITEs notify (receive queue %u)\n",
		       rq.queue);
	}
	err = io_uring_queue_init(2 * BATCH, &ring,
				  IORING_SETUP_SQE128 | IORING_SETUP_CQE32);
	if (err) {
		fprintf(stderr, "desc_cost: io_uring: %s\n", strerror(-err));
		return 1;
	}
	if (bench_cq_map(fd, 2 * BATCH, &cq)) {
		fprintf(stderr, "desc_cost: no completion ring (%s): "
			"its rows are left out\n", strerror(errno));
		m_nr_run = M_URING_B;
	}
	/*
	 * Warm up, then interleave the three in slices of 10 batches, so
	 * that the host's noise falls on all of them alike. Each slice gives
	 * its own ratios; the medians over slices ignore the slices that a
	 * preemption of the (virtual) CPU landed in.
	 */
	for (int m = 0; m < m_nr_run; m++)
		run_method(m, &ring, fd, qc.queue, 10);
	if (only) {
		/* One method alone, for a profiler to look at. */
		int m;
		double ns;

		for (m = 0; m < m_nr_run && strcmp(only, m_arg[m]); m++)
			;
		if (m == m_nr_run) {
			fprintf(stderr, "desc_cost: METHOD is one of");
			for (m = 0; m < m_nr_run; m++)
				fprintf(stderr, " %s", m_arg[m]);
			fprintf(stderr, "\n");
			return 2;
		}
		ns = run_method(m, &ring, fd, qc.queue, rounds);
		printf("desc_cost: %s: %.0f ns per op\n", only, ns);
		return ns < 0;
	}
	for (int s = 0; s < slices; s++) {
		for (int m = 0; m < m_nr_run; m++) {
			v[m][s] = run_method(m, &ring, fd, qc.queue, 10);
			if (v[m][s] < 0) {
				fprintf(stderr, "desc_cost: a run failed\n");
				return 1;
			}
		}
		for (int m = 1; m < m_nr_run; m++)
			v[M_NR_RUN + m - 1][s] = v[m][s] / v[M_NOP][s];
		for (int k = 0; k < M_NR; k++) {
			if (k % M_NR_RUN >= m_nr_run && k < M_NR_RUN)
				continue;
			if (k >= M_NR_RUN && k - M_NR_RUN + 1 >= m_nr_run)
				continue;
			mean[k] += v[k][s] / slices;
			if (v[k][s] < best[k])
				best[k] = v[k][s];
		}
	}
	printf("desc_cost: %d batches of %d, %d-byte timing-only WRITEs "
	       "(DELAY: 0 ps), %d slices\n", slices * 10, BATCH, LEN, slices);
	printf("  ns per op             median     best     mean\n");
	for (int m = 0; m < m_nr_run; m++)
		printf("  %-21s %8.0f %8.0f %8.0f\n", m_name[m],
		       bench_median(v[m], slices), best[m], mean[m]);
	for (int m = 1; m < m_nr_run; m++)
		printf("  x NOP: %-17s %8.1f %8.1f %8.1f\n", m_arg[m],
		       bench_median(v[M_NR_RUN + m - 1], slices),
		       best[m] / best[M_NOP], mean[m] / mean[M_NOP]);
	io_uring_queue_exit(&ring);
	close(fd);
	genl_close(&gs);
	for (int k = 0; k < M_NR; k++)
		free(v[k]);
	return 0;
}
