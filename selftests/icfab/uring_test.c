// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring passthrough: ICFAB_UCMD_SUBMIT and ICFAB_UCMD_WAIT through
 * liburing; batched submission, the big CQE and the cqe_addr record, the
 * WAIT command's counting, errors as CQEs, rings without big SQEs or CQEs
 * refused; and what happens to commands in flight when their descriptor
 * is closed or their process killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "uring_util.h"
#include "kselftest_harness.h"

#define SEG	4096ULL
#define PAGE	4096ULL
#define BATCH	32
#define WAKE_KNOB	"/sys/kernel/debug/icfab/wait_wake_delay_ms"




struct got {
	uint64_t user_data;
	int32_t res;
	uint64_t big;
};

/* Reap exactly @n CQEs. */
static int reap(struct io_uring *ring, struct got *g, unsigned int n)
{
	struct io_uring_cqe *cqe;

	for (unsigned int i = 0; i < n; i++) {
		int err = io_uring_wait_cqe(ring, &cqe);

		if (err)
			return err;
		g[i].user_data = cqe->user_data;
		g[i].res = cqe->res;
		g[i].big = cqe->big_cqe[0];
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

/* One command on its own: its CQE's res. */
static int32_t one_cmd(struct io_uring *ring, int fd, uint32_t op,
		       const void *payload)
{
	struct got g;

	if (!ucmd(ring, fd, op, payload, 77) || io_uring_submit(ring) != 1 ||
	    reap(ring, &g, 1))
		return -10000;
	return g.res;
}

static struct got *by_data(struct got *g, int n, uint64_t data)
{
	for (int i = 0; i < n; i++)
		if (g[i].user_data == data)
			return &g[i];
	return NULL;
}

FIXTURE(ur) {
	struct genl_sock gs;
	int fd, q;
	struct io_uring ring;
};

FIXTURE_SETUP(ur)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	self->q = ctx_queue(self->fd, 0, 64);
	ASSERT_LE(0, self->q);
	ASSERT_EQ(0, io_uring_queue_init(64, &self->ring,
					 IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32));
}

FIXTURE_TEARDOWN(ur)
{
	int k = open(WAKE_KNOB, O_WRONLY | O_CLOEXEC);

	/* A test that failed half-way leaves no delay behind. */
	if (k >= 0) {
		if (write(k, "0", 1) != 1)
			perror(WAKE_KNOB);
		close(k);
	}
	io_uring_queue_exit(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
	fabric_close(&self->gs);
}

TEST_F(ur, info_announces_uring_cmd)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &in));
	EXPECT_TRUE(in.features & ICFAB_F_URING_CMD);
}

static void batch(struct icfab_desc *d, uint32_t q)
{
	for (int i = 0; i < BATCH; i++)
		d[i] = desc_put(q, 1 + i % 7, (1 + i % 5) * SEG + i, i);
}

TEST_F(ur, batched_submits_then_wait)
{
	struct icfab_cqe rec[BATCH], ic[BATCH];
	struct icfab_desc d[BATCH];
	struct got g[BATCH + 1], *w;
	uint64_t latest = 0, base;

	memset(rec, 0xff, sizeof(rec));
	batch(d, self->q);
	for (int i = 0; i < BATCH; i++)
		ASSERT_EQ(0, usubmit(&self->ring, self->fd, d[i], &rec[i], i));
	ASSERT_EQ(0, uwait(&self->ring, self->fd, BATCH, 1000));
	ASSERT_EQ(BATCH + 1, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, g, BATCH + 1));

	for (int i = 0; i < BATCH; i++) {
		struct got *c = by_data(g, BATCH + 1, i);

		ASSERT_NE(NULL, c);
		EXPECT_EQ(0, c->res);
		/* The record was written before the CQE was posted. */
		EXPECT_EQ(i, rec[i].user_tag);
		EXPECT_EQ(0, rec[i].status);
		EXPECT_EQ(self->q, rec[i].queue);
		EXPECT_EQ(rec[i].finish_ps, c->big);
		EXPECT_GT(rec[i].finish_ps, rec[i].start_ps);
		if (rec[i].finish_ps > latest)
			latest = rec[i].finish_ps;
	}
	w = by_data(g, BATCH + 1, 1000);
	ASSERT_NE(NULL, w);
	EXPECT_EQ(BATCH, w->res);
	EXPECT_EQ(latest, w->big);	/* the clock, moved by the wait */

	/* The same batch through the ioctls, from that clock: same times. */
	base = latest;
	ASSERT_EQ(BATCH, ctx_submit(self->fd, d, BATCH));
	ASSERT_EQ(BATCH, ctx_wait(self->fd, ic, BATCH, BATCH, 0, NULL));
	for (int i = 0; i < BATCH; i++) {
		struct icfab_cqe *c = NULL;

		for (int j = 0; j < BATCH; j++)
			if (ic[j].user_tag == (uint64_t)i)
				c = &ic[j];
		ASSERT_NE(NULL, c);
		EXPECT_EQ(base, c->submit_ps);
		EXPECT_EQ(rec[i].start_ps - rec[i].submit_ps,
			  c->start_ps - c->submit_ps);
		EXPECT_EQ(rec[i].finish_ps - rec[i].submit_ps,
			  c->finish_ps - c->submit_ps);
		EXPECT_EQ(rec[i].queued_ps, c->queued_ps);
	}
}

TEST_F(ur, every_completion_is_counted_by_one_wait)
{
	struct got g[8], *w;
	struct icfab_wait iw = { 0 };

	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, usubmit(&self->ring, self->fd,
				     desc_put(self->q, 4, (4 - i) * SEG, i), NULL, i));
	ASSERT_EQ(0, uwait(&self->ring, self->fd, 2, 100));
	ASSERT_EQ(5, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, g, 3));
	w = by_data(g, 3, 100);
	ASSERT_NE(NULL, w);
	EXPECT_EQ(2, w->res);
	/* Two left: a wait for three can never be satisfied. */
	EXPECT_EQ(-EDEADLK, ({ struct icfab_uring_wait x = { .min = 3 };
			       one_cmd(&self->ring, self->fd, ICFAB_UCMD_WAIT,
				       &x); }));
	ASSERT_EQ(0, uwait(&self->ring, self->fd, 2, 101));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, g, 3));
	w = by_data(g, 3, 101);
	ASSERT_NE(NULL, w);
	EXPECT_EQ(2, w->res);
	EXPECT_EQ(-EDEADLK, ({ struct icfab_uring_wait x = { .min = 1 };
			       one_cmd(&self->ring, self->fd, ICFAB_UCMD_WAIT,
				       &x); }));
	/* They do not count towards the ioctl's WAIT either. */
	iw.min = 1;
	iw.max = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_WAIT, &iw));
	EXPECT_EQ(EDEADLK, errno);
}

TEST_F(ur, errors_come_back_in_the_cqe)
{
	struct icfab_uring_submit us;
	struct icfab_uring_wait w;

	memset(&us, 0, sizeof(us));
	us.desc = desc_put(self->q + 1, 1, SEG, 0);
	EXPECT_EQ(-ENOENT, one_cmd(&self->ring, self->fd, ICFAB_UCMD_SUBMIT,
				   &us));
	us.desc = desc_put(self->q, 1, SEG, 0);
	us.desc.imm = 1;
	EXPECT_EQ(-EINVAL, one_cmd(&self->ring, self->fd, ICFAB_UCMD_SUBMIT,
				   &us));
	us.desc.imm = 0;
	us.reserved = 1;
	EXPECT_EQ(-EINVAL, one_cmd(&self->ring, self->fd, ICFAB_UCMD_SUBMIT,
				   &us));
	us.reserved = 0;
	us.desc.flags = 0;
	EXPECT_EQ(-EBADF, one_cmd(&self->ring, self->fd, ICFAB_UCMD_SUBMIT,
				  &us));
	EXPECT_EQ(-ENOTTY, one_cmd(&self->ring, self->fd, 0x1234, &us));

	memset(&w, 0, sizeof(w));
	EXPECT_EQ(-EINVAL, one_cmd(&self->ring, self->fd, ICFAB_UCMD_WAIT, &w));
	w.min = 1;
	w.reserved[8] = 1;
	EXPECT_EQ(-EINVAL, one_cmd(&self->ring, self->fd, ICFAB_UCMD_WAIT, &w));
	w.reserved[8] = 0;
	EXPECT_EQ(-EDEADLK, one_cmd(&self->ring, self->fd, ICFAB_UCMD_WAIT,
				    &w));
	/* None of it was accepted. */
	EXPECT_EQ(-EDEADLK, ctx_wait(self->fd, NULL, 1, 1, 0, NULL));
}

TEST_F(ur, a_full_queue_pushes_back)
{
	struct got g[4];
	int q = ctx_queue(self->fd, 0, 2);

	ASSERT_LE(0, q);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, usubmit(&self->ring, self->fd, desc_put(q, 1, SEG, i),
				     NULL, i));
	ASSERT_EQ(3, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, g, 1));
	EXPECT_EQ(2, g[0].user_data);
	EXPECT_EQ(-EAGAIN, g[0].res);
	ASSERT_EQ(0, uwait(&self->ring, self->fd, 2, 9));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, g, 3));
	EXPECT_NE(NULL, by_data(g, 3, 9));
}

TEST_F(ur, rings_without_big_sqes_and_cqes_are_refused)
{
	static const unsigned int flags[] = { 0, IORING_SETUP_SQE128,
					      IORING_SETUP_CQE32 };

	for (int i = 0; i < 3; i++) {
		struct io_uring ring;
		struct io_uring_cqe *cqe;
		struct io_uring_sqe *sqe;

		ASSERT_EQ(0, io_uring_queue_init(4, &ring, flags[i]));
		sqe = io_uring_get_sqe(&ring);
		ASSERT_NE(NULL, sqe);
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, self->fd, NULL, 0, 0);
		sqe->cmd_op = ICFAB_UCMD_SUBMIT;
		ASSERT_EQ(1, io_uring_submit(&ring));
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		EXPECT_EQ(-EINVAL, cqe->res);
		io_uring_cqe_seen(&ring, cqe);
		io_uring_queue_exit(&ring);
	}
}

TEST_F(ur, bytes_move_through_io_uring)
{
	struct icfab_region_alloc ra = { .endpoint = 0, .size = 3 * PAGE };
	struct icfab_region_alloc rb = { .endpoint = 2, .size = 3 * PAGE };
	struct icfab_region_export re = { .access = ICFAB_ACCESS_ALL };
	struct icfab_uring_submit us;
	struct icfab_cqe rec;
	unsigned char *a, *b;
	struct got g[2];

	ASSERT_EQ(0, ctx_attach(self->fd, 2));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_REGION_ALLOC, &ra));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_REGION_ALLOC, &rb));
	re.region = rb.region;
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_REGION_EXPORT, &re));
	a = mmap(NULL, ra.size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 ra.mmap_offset);
	b = mmap(NULL, rb.size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 rb.mmap_offset);
	ASSERT_NE(MAP_FAILED, a);
	ASSERT_NE(MAP_FAILED, b);
	for (uint64_t i = 0; i < ra.size; i++)
		a[i] = i * 13 + 1;

	memset(&us, 0, sizeof(us));
	us.desc = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = self->q,
		.region = ra.region, .local_off = 100, .rkey = re.key,
		.remote_off = 4000, .len = 2 * PAGE + 3, .user_tag = 42 };
	us.cqe_addr = (uintptr_t)&rec;
	ASSERT_NE(NULL, ucmd(&self->ring, self->fd, ICFAB_UCMD_SUBMIT, &us, 1));
	ASSERT_EQ(0, uwait(&self->ring, self->fd, 1, 2));
	ASSERT_EQ(2, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, g, 2));
	EXPECT_EQ(0, by_data(g, 2, 1)->res);
	EXPECT_EQ(42, rec.user_tag);
	EXPECT_EQ(0, memcmp(a + 100, b + 4000, 2 * PAGE + 3));
	EXPECT_EQ(0, b[3999]);
	EXPECT_EQ(0, b[4000 + 2 * PAGE + 3]);
	munmap(a, ra.size);
	munmap(b, rb.size);
}

TEST_F(ur, closing_the_last_descriptor_cancels_commands_in_flight)
{
	struct icfab_cqe rec[4];
	struct got g[4];
	int fd;

	memset(rec, 0, sizeof(rec));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, usubmit(&self->ring, self->fd,
				     desc_put(self->q, 4, 64 * SEG, i), &rec[i], i));
	ASSERT_EQ(4, io_uring_submit(&self->ring));
	/*
	 * This context held the engine at its clock and never waited, so
	 * nothing could finish: every command is cancelled.
	 */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, reap(&self->ring, g, 4));
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(-ECANCELED, g[i].res);
		EXPECT_EQ(-ECANCELED, rec[g[i].user_data].status);
		EXPECT_EQ(g[i].user_data, rec[g[i].user_data].user_tag);
	}

	/* The fabric is still usable. */
	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ctx_attach(fd, 0));
	do {
		int q = ctx_queue(fd, 0, 4);
		struct icfab_desc d = desc_put(q, 1, SEG, 5);
		struct icfab_cqe c;

		ASSERT_EQ(1, ctx_submit(fd, &d, 1));
		ASSERT_EQ(1, ctx_wait(fd, &c, 1, 1, 0, NULL));
		EXPECT_EQ(0, c.status);
	} while (0);
	close(fd);
}

TEST_F(ur, closing_the_ring_with_a_wait_in_flight)
{
	struct io_uring ring;

	ASSERT_EQ(0, io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32));
	ASSERT_EQ(0, usubmit(&ring, self->fd, desc_put(self->q, 3, 16 * SEG, 1),
			     NULL, 1));
	ASSERT_EQ(0, usubmit(&ring, self->fd, desc_put(self->q, 3, 16 * SEG, 2),
			     NULL, 2));
	ASSERT_EQ(0, uwait(&ring, self->fd, 3, 3));
	ASSERT_EQ(3, io_uring_submit(&ring));
	/* The ring goes first, then the device; the runner checks the rest. */
	io_uring_queue_exit(&ring);
	close(self->fd);
	self->fd = -1;
}

struct ioctl_waiter {
	int fd;
	int got;
	struct icfab_cqe c;
};

static void *ioctl_waiter_fn(void *arg)
{
	struct ioctl_waiter *w = arg;

	w->got = ctx_wait(w->fd, &w->c, 1, 1, 10000, NULL);
	return NULL;
}

/*
 * An ioctl WAIT that has been woken but has not taken the lock back yet
 * (the knob holds it there) is still under way: an io_uring WAIT started
 * then used to share its state, and one of two such WAITs could be lost
 * for ever, its ring never freed.
 */
TEST_F(ur, no_wait_starts_beside_a_woken_ioctl_wait)
{
	struct icfab_desc delay0 = {
		.op = ICFAB_OP_DELAY, .queue = self->q, .len = 0, .user_tag = 9,
	};
	struct ioctl_waiter w = { .fd = self->fd };
	struct icfab_uring_wait uw = { .min = 1 };
	struct icfab_desc d;
	pthread_t t;
	int b, bq, k;

	k = open(WAKE_KNOB, O_WRONLY | O_CLOEXEC);
	if (k < 0)
		SKIP(return, "no %s (debugfs)", WAKE_KNOB);
	/* Another context holds the engine back at its clock, 0. */
	b = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, ctx_attach(b, 1));
	bq = ctx_queue(b, 1, 4);
	ASSERT_LE(0, bq);
	/* One io_uring completion, not yet counted by any WAIT. */
	ASSERT_EQ(0, one_cmd(&self->ring, self->fd, ICFAB_UCMD_SUBMIT,
			     &(struct icfab_uring_submit){ .desc = delay0 }));
	/* One ioctl transfer, which cannot finish while B holds at 0. */
	d = desc_put(self->q, 2, 4 * SEG, 1);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(3, write(k, "800", 3));
	ASSERT_EQ(0, pthread_create(&t, NULL, ioctl_waiter_fn, &w));
	usleep(200000);
	/* B moves on: the transfer finishes and the ioctl WAIT wakes. */
	d = (struct icfab_desc){ .op = ICFAB_OP_DELAY, .queue = bq,
				 .len = 1000000000ULL, .user_tag = 2 };
	ASSERT_EQ(1, ctx_submit(b, &d, 1));
	EXPECT_EQ(-EBUSY, one_cmd(&self->ring, self->fd, ICFAB_UCMD_WAIT, &uw));
	pthread_join(t, NULL);
	EXPECT_EQ(1, w.got);
	EXPECT_EQ(0, w.c.status);
	EXPECT_EQ(1, w.c.user_tag);
	ASSERT_EQ(1, write(k, "0", 1));
	close(k);
	/* The WAIT is over: the next one counts the DELAY's completion. */
	EXPECT_EQ(1, one_cmd(&self->ring, self->fd, ICFAB_UCMD_WAIT, &uw));
	close(b);
}

static int unload(void)
{
	return syscall(SYS_delete_module, "icfab", O_NONBLOCK) ? -errno : 0;
}

static int load(void)
{
	const char *ko = getenv("ICFAB_KO");
	int fd, ret;

	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* A child on endpoint 1 with io_uring commands in flight, then paused. */
static int uring_child(int ready)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	struct icfab_cqe rec[8];
	struct io_uring ring;
	int q;

	if (fd < 0 || ctx_attach(fd, 1))
		return 1;
	q = ctx_queue(fd, 1, 8);
	if (q < 0 || io_uring_queue_init(16, &ring, IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32))
		return 2;
	for (int i = 0; i < 8; i++)
		if (usubmit(&ring, fd, desc_put(q, 5, 32 * SEG, i), &rec[i], i))
			return 3;
	if (io_uring_submit(&ring) != 8)
		return 4;
	if (write(ready, "r", 1) != 1)
		return 5;
	for (;;)
		pause();
}

TEST_F(ur, kill_9_with_commands_in_flight)
{
	struct icfab_desc d = desc_put(self->q, 2, 8 * SEG, 7);
	struct icfab_cqe c;
	int ready[2], status, err = 0;
	char byte;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(ready[0]);
		_exit(uring_child(ready[1]));
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &byte, 1));
	close(ready[0]);

	/* The child's clock holds the engine: this cannot complete... */
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	EXPECT_EQ(-ETIMEDOUT, ctx_wait(self->fd, &c, 1, 1, 200, NULL));
	/* ...until the child is gone, its commands cancelled. */
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(7, c.user_tag);

	/* Once everything is closed, the module unloads (and comes back). */
	if (!getenv("ICFAB_KO"))
		return;
	io_uring_queue_exit(&self->ring);
	close(self->fd);
	self->fd = -1;
	genl_close(&self->gs);
	/* io_uring tears the dead child's ring down in a worker. */
	for (int i = 0; i < 200; i++) {
		err = unload();
		if (err != -EBUSY && err != -EAGAIN)
			break;
		usleep(50000);
	}
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, load());
	/* The teardown wants these back. */
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	ASSERT_EQ(0, io_uring_queue_init(4, &self->ring, 0));
}

TEST_HARNESS_MAIN
