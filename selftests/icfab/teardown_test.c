// SPDX-License-Identifier: GPL-2.0
/*
 * A context nobody can submit to any more is killed, its io_uring
 * commands complete with -ECANCELED and nothing keeps the module busy,
 * even when the close of its last descriptor counted a reference to the
 * file that was about to go: another thread's system call on it, or an
 * io_uring command between giving up the context's count and io_uring
 * dropping its reference (the window the debugfs knob
 * uring_done_delay_ms widens). Left alive, such a context holds the
 * engine back for ever and its commands keep the file, so ->release()
 * never comes and rmmod stays refused after every process has exited.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "uring_util.h"
#include "kselftest_harness.h"

#define SEG		4096ULL
#define DELAY_KNOB	"/sys/kernel/debug/icfab/uring_done_delay_ms"
/* s: only against a hang (a cancellation comes soon, or never), below
 * the harness's 30 s per test */
#define GUARD_S		20

FIXTURE(td) {
	struct genl_sock gs;
	int fd, q;
	struct io_uring ring;
};

FIXTURE_SETUP(td)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 4));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	self->q = ctx_queue(self->fd, 0, 16);
	ASSERT_LE(0, self->q);
	ASSERT_EQ(0, io_uring_queue_init(16, &self->ring,
					 IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32));
}

FIXTURE_TEARDOWN(td)
{
	int k = open(DELAY_KNOB, O_WRONLY | O_CLOEXEC);

	if (k >= 0) {
		if (write(k, "0", 1) != 1)
			perror(DELAY_KNOB);
		close(k);
	}
	io_uring_queue_exit(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
	fabric_close(&self->gs);
}

/* The next CQE's res, or -10000 - errno when none came within GUARD_S. */
static int next_res(struct io_uring *ring, uint64_t *user_data)
{
	struct __kernel_timespec ts = { .tv_sec = GUARD_S };
	struct io_uring_cqe *cqe;
	int err, res;

	err = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (err)
		return -10000 + err;
	res = cqe->res;
	if (user_data)
		*user_data = cqe->user_data;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/* Thread @tid's state letter ('R', 'S', 'D'...), or -1. */
static int thread_state(pid_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : -1;
}

static void wait_asleep(pid_t tid, char st)
{
	while (thread_state(tid) != st)
		usleep(1000);
}

struct waiter {
	int fd;
	pid_t tid;
	int ret;
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	struct icfab_cqe c;

	w->tid = syscall(SYS_gettid);
	w->ret = ctx_wait(w->fd, &c, 1, 1, 3000, NULL);
	return NULL;
}

TEST_F(td, a_close_during_another_threads_wait_still_cancels_commands)
{
	struct icfab_desc d = desc_put(self->q, 2, 8 * SEG, 9);
	struct waiter w = { .fd = self->fd };
	uint64_t ud;
	pthread_t t;
	int other;

	/* Another context holds the engine at 0: nothing of ours finishes. */
	other = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ctx_attach(other, 1));
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, usubmit(&self->ring, self->fd,
				     desc_put(self->q, 3, 8 * SEG, i), NULL, i));
	ASSERT_EQ(2, io_uring_submit(&self->ring));

	ASSERT_EQ(0, pthread_create(&t, NULL, waiter_fn, &w));
	while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	wait_asleep(w.tid, 'S');
	/* The last descriptor, while the WAIT still holds the file. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, pthread_join(t, NULL));
	/* It was in the WAIT when the close came (else: -EBADF). */
	ASSERT_EQ(-ETIMEDOUT, w.ret);

	/* Nobody can submit to it now: its commands are cancelled. */
	for (int i = 0; i < 2; i++)
		EXPECT_EQ(-ECANCELED, next_res(&self->ring, &ud));
	close(other);
}

struct closer {
	int fd;
	pid_t tid;		/* the thread whose task work sleeps */
	int in_window;		/* asleep before and after the close */
};

/* Close @c->fd while thread @c->tid sleeps, for long, in 'D'. */
static void *closer_fn(void *arg)
{
	struct closer *c = arg;

	for (;;) {
		wait_asleep(c->tid, 'D');
		usleep(20000);
		if (thread_state(c->tid) == 'D')
			break;
	}
	close(c->fd);
	c->in_window = thread_state(c->tid) == 'D';
	return NULL;
}

TEST_F(td, a_close_in_the_completion_window_still_cancels_commands)
{
	struct icfab_desc delay = {
		.op = ICFAB_OP_DELAY, .queue = self->q, .len = 1, .user_tag = 1,
	};
	struct closer c = { .fd = self->fd, .tid = syscall(SYS_gettid) };
	uint64_t ud;
	pthread_t t;
	int k, res;

	k = open(DELAY_KNOB, O_WRONLY | O_CLOEXEC);
	if (k < 0)
		SKIP(return, "no %s (debugfs)", DELAY_KNOB);
	/* Held back at this context's own clock, it never finishes. */
	ASSERT_EQ(0, usubmit(&self->ring, self->fd,
			     desc_put(self->q, 2, 8 * SEG, 2), NULL, 2));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	ASSERT_EQ(4, write(k, "1500", 4));

	/*
	 * The DELAY completes at once, and its task work, in this thread,
	 * sleeps in the window: the other thread closes the last
	 * descriptor then.
	 */
	ASSERT_EQ(0, pthread_create(&t, NULL, closer_fn, &c));
	ASSERT_EQ(0, usubmit(&self->ring, self->fd, delay, NULL, 1));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	/* Its CQE, posted after the sleep (here, if not on the way out). */
	res = next_res(&self->ring, &ud);
	ASSERT_EQ(0, pthread_join(t, NULL));
	self->fd = -1;
	ASSERT_EQ(1, write(k, "0", 1));
	close(k);
	ASSERT_TRUE(c.in_window);
	EXPECT_EQ(1, ud);
	EXPECT_EQ(0, res);
	/* Nobody can submit to it now: the WRITE is cancelled. */
	EXPECT_EQ(-ECANCELED, next_res(&self->ring, &ud));
	EXPECT_EQ(2, ud);
}

TEST_HARNESS_MAIN
