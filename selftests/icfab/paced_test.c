// SPDX-License-Identifier: GPL-2.0
/*
 * Paced time (ICFAB_TIME_PACED): fabric time follows the wall clock
 * divided by the dilation, and completions are released by hrtimers no
 * earlier than their deadlines. The engine's arithmetic is the same as in
 * virtual time, so finish - start is still exactly the closed form; the
 * wall time a caller waits is only bounded from below (hrtimers never fire
 * early; a loaded host can always make them late, so no upper bound is
 * asserted). Also: contexts never hold the engine back, DELAY does not
 * move time, closing a context with work in flight and the timer armed
 * loses nothing and hangs nothing, io_uring's WAIT, and the way back to
 * virtual time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "uring_util.h"
#include "kselftest_harness.h"

#define BW	50000000000ULL		/* bytes/s, stage_ring's links */
#define LAT	500000ULL		/* ps, stage_ring's links */
#define SEG	4096ULL			/* bytes, the default segment size */
#define DIL	1000			/* wall ns per fabric ns */

/* Wall ns that @ps of fabric time take at dilation DIL. */
static uint64_t wall_ns(uint64_t ps)
{
	return ps * DIL / 1000;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int fabric_set(struct genl_sock *gs, int mode, int dil)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_SET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_TIME_MODE, mode);
	genl_put_u32(&m, ICFAB_A_FABRIC_DILATION, dil);
	return genl_request(gs, &m, NULL, NULL);
}

static int info(int fd, struct icfab_info *in)
{
	memset(in, 0, sizeof(*in));
	return ioctl(fd, ICFAB_IOC_INFO, in) ? -errno : 0;
}

FIXTURE(paced) {
	struct genl_sock gs;
	int fd;
};

FIXTURE_SETUP(paced)
{
	struct icfab_info in;

	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	clear_fabric(&self->gs);
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, info(self->fd, &in));
	if (!(in.features & ICFAB_F_PACED))
		SKIP(return, "no ICFAB_F_PACED");
	ASSERT_EQ(0, stage_ring(&self->gs, 8));
	ASSERT_EQ(0, fabric_set(&self->gs, ICFAB_TIME_PACED, DIL));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
}

FIXTURE_TEARDOWN(paced)
{
	if (self->fd >= 0)
		close(self->fd);
	clear_fabric(&self->gs);
	/* Leave the fabric as the other tests expect it: virtual. */
	fabric_set(&self->gs, ICFAB_TIME_VIRTUAL, 1);
	cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT);
	genl_close(&self->gs);
}

TEST_F(paced, info_reports_the_mode_and_a_clock_that_follows_the_wall)
{
	struct icfab_info a, b;
	uint64_t w0, w1;

	ASSERT_EQ(0, info(self->fd, &a));
	EXPECT_EQ(ICFAB_TIME_PACED, a.time_mode);
	EXPECT_EQ(DIL, a.dilation);
	/* No engine yet: the clock is at 0 until a context attaches. */
	EXPECT_EQ(0, a.now_ps);

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	w0 = mono_ns();
	ASSERT_EQ(0, info(self->fd, &a));
	usleep(20000);
	ASSERT_EQ(0, info(self->fd, &b));
	w1 = mono_ns();
	/*
	 * Between the two reads, at least the 20 ms of the sleep went by and
	 * at most w1 - w0, in fabric time, give or take 2 ps of rounding.
	 */
	EXPECT_GE(b.now_ps - a.now_ps, 20000000ULL * 1000 / DIL - 2);
	EXPECT_LE(b.now_ps - a.now_ps, (w1 - w0) * 1000 / DIL + 2);
}

TEST_F(paced, two_hops_take_the_closed_form_and_no_less_wall_time)
{
	struct icfab_desc d;
	struct icfab_cqe c;
	uint64_t w0, w1;
	int q;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 8);
	ASSERT_LE(0, q);
	for (int i = 0; i < 3; i++) {
		d = desc_put(q, 2, (8 << i) * SEG, i);
		w0 = mono_ns();
		ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
		ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
		w1 = mono_ns();
		EXPECT_EQ(i, c.user_tag);
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(c.submit_ps, c.start_ps);
		EXPECT_EQ(ring_uncontended((8 << i) * SEG, 2),
			  c.finish_ps - c.start_ps);
		EXPECT_EQ(0, c.queued_ps);
		/* Released no earlier than its deadline, on the wall clock. */
		EXPECT_GE(w1 - w0, wall_ns(c.finish_ps - c.submit_ps));
	}
}

TEST_F(paced, descriptors_start_at_the_current_fabric_time)
{
	struct icfab_info in;
	struct icfab_desc d;
	struct icfab_cqe c;
	int q;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 8);
	ASSERT_LE(0, q);
	usleep(10000);
	ASSERT_EQ(0, info(self->fd, &in));
	d = desc_put(q, 1, SEG, 1);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	/* Not at the context's clock (0): at the fabric's, which moved. */
	EXPECT_GE(c.submit_ps, in.now_ps);
	EXPECT_GE(c.submit_ps, 10000000ULL * 1000 / DIL);
	EXPECT_EQ(ring_uncontended(SEG, 1), c.finish_ps - c.start_ps);
}

TEST_F(paced, delay_completes_at_once_and_moves_nothing)
{
	struct icfab_desc d = { .op = ICFAB_OP_DELAY, .len = 1000000000000ULL,
				.user_tag = 7 };
	struct icfab_cqe c;
	int q;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 4);
	ASSERT_LE(0, q);
	d.queue = q;
	/* A second of fabric time would be 1000 s of wall time. */
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 5000, NULL));
	EXPECT_EQ(7, c.user_tag);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(c.submit_ps, c.start_ps);
	EXPECT_EQ(c.start_ps, c.finish_ps);
	/* A transfer after it is not pushed a second into the future. */
	d = desc_put(q, 1, SEG, 8);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 5000, NULL));
	EXPECT_LT(c.start_ps, 1000000000000ULL);
}

TEST_F(paced, an_idle_context_holds_nothing_back)
{
	struct icfab_desc d;
	struct icfab_cqe c;
	int idle, q;

	/* In virtual time this context's clock (0) would stop the engine. */
	idle = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, idle);
	ASSERT_EQ(0, ctx_attach(idle, 5));
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 4);
	ASSERT_LE(0, q);
	d = desc_put(q, 1, 4 * SEG, 3);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	EXPECT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 20000, NULL));
	EXPECT_EQ(3, c.user_tag);
	close(idle);
}

TEST_F(paced, wait_times_out_and_the_completion_still_comes)
{
	struct icfab_desc d;
	struct icfab_cqe c;
	uint64_t w0, w1;
	int q, ret;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 4);
	ASSERT_LE(0, q);
	/* 2048 segments: ~168 us of fabric time, ~168 ms of wall time. */
	d = desc_put(q, 1, 2048 * SEG, 5);
	w0 = mono_ns();
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ret = ctx_wait(self->fd, &c, 1, 1, 1, NULL);
	/* (Unless this process was kept off the CPU for that long.) */
	if (ret != 1) {
		EXPECT_EQ(-ETIMEDOUT, ret);
		ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	}
	w1 = mono_ns();
	EXPECT_EQ(5, c.user_tag);
	EXPECT_EQ(ring_uncontended(2048 * SEG, 1), c.finish_ps - c.start_ps);
	EXPECT_GE(w1 - w0, wall_ns(c.finish_ps - c.submit_ps));
}

/* Work in flight and the timer armed when the last context goes. */
TEST_F(paced, closing_with_transfers_in_flight_hangs_nothing)
{
	struct icfab_desc d[128];
	struct icfab_info in;
	uint64_t w0;
	int q;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 128);
	ASSERT_LE(0, q);
	/* Seconds of wall time in all, sharing link 0 -> 1. */
	for (int i = 0; i < 128; i++)
		d[i] = desc_put(q, 1 + i % 3, 64 * SEG, i);
	ASSERT_EQ(128, ctx_submit(self->fd, d, 128));
	usleep(2000);
	close(self->fd);

	/* The engine went with it; a new one starts from 0 again. */
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, info(self->fd, &in));
	EXPECT_EQ(0, in.now_ps);
	w0 = mono_ns();
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, info(self->fd, &in));
	EXPECT_LE(in.now_ps, (mono_ns() - w0) * 1000 / DIL + 1);
	q = ctx_queue(self->fd, 0, 4);
	ASSERT_LE(0, q);
	d[0] = desc_put(q, 1, SEG, 1);
	ASSERT_EQ(1, ctx_submit(self->fd, d, 1));
	/* And again, with the timer armed for it. */
	close(self->fd);
	self->fd = -1;
}

TEST_F(paced, uring_commands_in_flight_each_complete_once_on_close)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	int q, ok = 0, cancelled = 0;
	bool seen[64] = { false };

	ASSERT_EQ(0, io_uring_queue_init(128, &ring, IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32));
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 64);
	ASSERT_LE(0, q);
	for (int i = 0; i < 64; i++)
		ASSERT_EQ(0, usubmit(&ring, self->fd,
				     desc_put(q, 1 + i % 3, 32 * SEG, i), NULL, i));
	ASSERT_EQ(64, io_uring_submit(&ring));
	close(self->fd);
	self->fd = -1;
	for (int i = 0; i < 64; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		ASSERT_LT(cqe->user_data, 64);
		EXPECT_FALSE(seen[cqe->user_data]);
		seen[cqe->user_data] = true;
		if (cqe->res == 0)
			ok++;
		else if (cqe->res == -ECANCELED)
			cancelled++;
		io_uring_cqe_seen(&ring, cqe);
	}
	EXPECT_EQ(64, ok + cancelled);
	io_uring_queue_exit(&ring);
}

TEST_F(paced, uring_wait_blocks_for_completions)
{
	struct icfab_cqe rec[8];
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	uint64_t w0, w1, first = ~0ULL, last = 0;
	int q, waited = -1;

	ASSERT_EQ(0, io_uring_queue_init(16, &ring, IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32));
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 8);
	ASSERT_LE(0, q);
	memset(rec, 0xff, sizeof(rec));
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, usubmit(&ring, self->fd,
				     desc_put(q, 2, 8 * SEG, i), &rec[i], i));
	ASSERT_EQ(0, uwait(&ring, self->fd, 8, 100));
	w0 = mono_ns();
	ASSERT_EQ(9, io_uring_submit(&ring));
	for (int i = 0; i < 9; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		if (cqe->user_data == 100) {
			waited = cqe->res;
		} else {
			ASSERT_LT(cqe->user_data, 8);
			EXPECT_EQ(0, cqe->res);
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	w1 = mono_ns();
	EXPECT_EQ(8, waited);
	for (int i = 0; i < 8; i++) {
		EXPECT_EQ(i, rec[i].user_tag);
		EXPECT_EQ(0, rec[i].status);
		if (rec[i].submit_ps < first)
			first = rec[i].submit_ps;
		if (rec[i].finish_ps > last)
			last = rec[i].finish_ps;
	}
	/* The first alone on its path: exactly the closed form. */
	EXPECT_EQ(ring_uncontended(8 * SEG, 2), rec[0].finish_ps - rec[0].start_ps);
	EXPECT_GE(w1 - w0, wall_ns(last - first));
	io_uring_queue_exit(&ring);
}

TEST_F(paced, switching_back_to_virtual_time)
{
	struct icfab_desc d = { .op = ICFAB_OP_DELAY, .len = 123456 };
	struct icfab_info in;
	struct icfab_cqe c;
	int q;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	/* No time mode change under an engine. */
	close(self->fd);
	ASSERT_EQ(0, fabric_set(&self->gs, ICFAB_TIME_VIRTUAL, 1));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, info(self->fd, &in));
	EXPECT_EQ(ICFAB_TIME_VIRTUAL, in.time_mode);

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 4);
	ASSERT_LE(0, q);
	d.queue = q;
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	/* A DELAY moves the clock again, and time is virtual again. */
	EXPECT_EQ(0, c.start_ps);
	EXPECT_EQ(123456, c.finish_ps);
	d = desc_put(q, 2, 8 * SEG, 1);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(123456, c.start_ps);
	EXPECT_EQ(123456 + ring_uncontended(8 * SEG, 2), c.finish_ps);
	ASSERT_EQ(0, info(self->fd, &in));
	EXPECT_EQ(c.finish_ps, in.now_ps);
}

TEST_HARNESS_MAIN
