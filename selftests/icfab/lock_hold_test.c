// SPDX-License-Identifier: GPL-2.0
/*
 * Bounded work under the fabric lock: while one process submits the
 * largest SUBMIT a context can hold (every queue full of DELAYs) and
 * then closes with all of them unreaped, or lets the engine run hundreds
 * of thousands of events with one WAIT, another process's INFO, which
 * takes the same lock, never waits long. The bound is generous (under
 * TCG, with slub_debug) and only there to catch seconds: a SUBMIT that
 * held the lock from its first descriptor to its last made INFO wait
 * for all of them (1.5 to 3.8 s under TCG); one that allocated its
 * requests under the lock, 0.84 to 1 s on 6.1 (docs/SECURITY.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define NR_QUEUES	16
#define DEPTH		4096
#define NR_DESCS	(NR_QUEUES * DEPTH)
#define BOUND_MS	200
/* The long engine run's hops: a ring of twice as many endpoints. */
#define RUN_HOPS	4

struct probe {
	volatile int stop;
	volatile int calls;
	double max_ms;
	double max_at;			/* ms, CLOCK_MONOTONIC: when it began */
	int err;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* INFO in a loop on a file of its own, until told to stop: the longest. */
static void probe_run(struct probe *p)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	struct icfab_info in;

	if (fd < 0) {
		p->err = errno;
		return;
	}
	while (!p->stop) {
		double t0 = now_ms(), dt;

		memset(&in, 0, sizeof(in));
		if (ioctl(fd, ICFAB_IOC_INFO, &in)) {
			p->err = errno;
			break;
		}
		dt = now_ms() - t0;
		if (dt > p->max_ms) {
			p->max_ms = dt;
			p->max_at = t0;
		}
		p->calls++;
	}
	close(fd);
}

FIXTURE(lh) {
	struct genl_sock gs;
};

FIXTURE_SETUP(lh)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 2 * RUN_HOPS));
}

FIXTURE_TEARDOWN(lh)
{
	fabric_close(&self->gs);
}

/*
 * One flood: the largest SUBMIT the test gives a context, then a close
 * with every descriptor complete and unreaped, while another process
 * calls INFO. Returns the longest INFO in ms, or -1.
 */
static double one_flood(struct __test_metadata *_metadata,
			struct icfab_desc *d, struct probe *p)
{
	double start, t0, submit_ms, close_ms;
	int fd, q, n, status;
	pid_t pid;

	memset(p, 0, sizeof(*p));
	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0 || ctx_attach(fd, 0))
		return -1;
	for (int i = 0; i < NR_QUEUES; i++) {
		q = ctx_queue(fd, 0, DEPTH);
		if (q < 0)
			return -1;
		for (int j = 0; j < DEPTH; j++)
			d[i * DEPTH + j] = (struct icfab_desc){
				.op = ICFAB_OP_DELAY, .queue = q, .len = 1,
				.user_tag = i * DEPTH + j,
			};
	}

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		probe_run(p);
		_exit(0);
	}
	while (!p->calls && !p->err)
		usleep(1000);

	start = t0 = now_ms();
	n = ctx_submit(fd, d, NR_DESCS);
	submit_ms = now_ms() - t0;
	/* Every one of them complete and unreaped: the close frees them. */
	t0 = now_ms();
	close(fd);
	close_ms = now_ms() - t0;

	p->stop = 1;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	TH_LOG("SUBMIT of %d DELAYs: %.0f ms; close: %.0f ms; %d INFOs, the longest %.1f ms, from %.0f ms after the SUBMIT began",
	       n, submit_ms, close_ms, p->calls, p->max_ms,
	       p->max_at - start);
	if (n != NR_DESCS || p->err)
		return -1;
	return p->max_ms;
}

/*
 * The best of up to TRIES floods: a vCPU of the TCG VM can stall for
 * hundreds of ms when the host is busy, once in a while, whereas a lock
 * held for the whole flood delays an INFO in every one of them. With
 * three VMs and builds on the host's two cores (2026-12-06, 6.12) three
 * floods gave 224.7, 1531.6 and 1434.1 ms: stalls, not the lock (held
 * throughout, it would be the flood's 6 to 7 s).
 */
#define TRIES		5

/*
 * One long run of the engine: RUN_QUEUES x RUN_DEPTH timing-only WRITEs
 * of RUN_LEN bytes to the endpoint RUN_HOPS away, which the engine cannot
 * start while the context's clock holds it at 0, then a WAIT for all of
 * them, which lets it run every segment of every hop at once (8.4 million
 * segment-hops). Returns the longest INFO meanwhile in ms, or -1.
 *
 * Its bound is looser than the flood's. Run a budget at a time by a work
 * item, this run left INFO waiting 0.51 and 0.54 s at most, under TCG on
 * a host running three other VMs and builds, against 3.5 to 6.0 s when
 * the WAIT ran it all under the lock (6.12, 2026-12-02); half the run
 * (8192 WRITEs) kept INFO waiting 1.2 to 2.1 s then, too close to the
 * bound. The half second was INFO spinning on the lock's owner while the
 * work item unlocked and relocked it between budgets; with a short sleep
 * there, 78.7 ms (6.1) and 180 to 212 ms (6.12) on a loaded host.
 */
#define RUN_QUEUES	16
#define RUN_DEPTH	1024
#define RUN_XFERS	(RUN_QUEUES * RUN_DEPTH)
#define RUN_LEN		(512 << 10)
#define RUN_BOUND_MS	1000

static double one_run(struct __test_metadata *_metadata,
		      struct icfab_desc *d, struct icfab_cqe *c,
		      struct probe *p)
{
	double start, wait_ms;
	int fd, q, n, got, status;
	pid_t pid;

	memset(p, 0, sizeof(*p));
	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0 || ctx_attach(fd, 0))
		return -1;
	for (int i = 0; i < RUN_QUEUES; i++) {
		q = ctx_queue(fd, 0, RUN_DEPTH);
		if (q < 0)
			return -1;
		for (int j = 0; j < RUN_DEPTH; j++)
			d[i * RUN_DEPTH + j] = desc_put(q, RUN_HOPS, RUN_LEN,
							i * RUN_DEPTH + j);
	}
	n = ctx_submit(fd, d, RUN_XFERS);

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		probe_run(p);
		_exit(0);
	}
	while (!p->calls && !p->err)
		usleep(1000);

	start = now_ms();
	got = ctx_wait(fd, c, RUN_XFERS, RUN_XFERS, 0, NULL);
	wait_ms = now_ms() - start;
	close(fd);

	p->stop = 1;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	TH_LOG("%d WRITEs of %d KiB over %d hops: WAIT %.0f ms for %d; %d INFOs, the longest %.1f ms, from %.0f ms after the WAIT began",
	       n, RUN_LEN >> 10, RUN_HOPS, wait_ms, got, p->calls, p->max_ms,
	       p->max_at - start);
	if (n != RUN_XFERS || got != RUN_XFERS || p->err)
		return -1;
	for (int i = 0; i < got; i++)
		if (c[i].status)
			return -1;
	return p->max_ms;
}

TEST_F_TIMEOUT(lh, info_waits_little_during_a_maximal_submit_and_close, 300)
{
	struct icfab_desc *d;
	struct probe *p;
	double best = 1e9;

	p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	d = calloc(NR_DESCS, sizeof(*d));
	ASSERT_NE(NULL, d);

	for (int i = 0; i < TRIES && best > BOUND_MS; i++) {
		double ms = one_flood(_metadata, d, p);

		ASSERT_LE(0, ms);
		if (ms < best)
			best = ms;
	}
	EXPECT_GE(BOUND_MS, best);
	free(d);
	munmap(p, sizeof(*p));
}

/*
 * The engine's work is bounded too: a WAIT that lets it run hundreds of
 * thousands of events does not hold the lock for all of them (before: the
 * whole run, seconds under TCG).
 */
TEST_F_TIMEOUT(lh, info_waits_little_during_a_long_engine_run, 300)
{
	struct icfab_desc *d;
	struct icfab_cqe *c;
	struct probe *p;
	double best = 1e9;

	p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	d = calloc(RUN_XFERS, sizeof(*d));
	c = calloc(RUN_XFERS, sizeof(*c));
	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, c);

	for (int i = 0; i < TRIES && best > RUN_BOUND_MS; i++) {
		double ms = one_run(_metadata, d, c, p);

		ASSERT_LE(0, ms);
		if (ms < best)
			best = ms;
	}
	EXPECT_GE(RUN_BOUND_MS, best);
	free(c);
	free(d);
	munmap(p, sizeof(*p));
}

TEST_HARNESS_MAIN
