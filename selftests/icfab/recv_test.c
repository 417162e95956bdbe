// SPDX-License-Identifier: GPL-2.0
/*
 * Receive-side completions (ICFAB_F_RECV_NOTIFY): a WRITE with
 * ICFAB_DESC_F_NOTIFY also completes at the receive queue of its target
 * endpoint. Two processes, each with its own context, one writing into
 * the other's region; the receiver's completions and clock must be the
 * same to the picosecond in every run, with or without a CPU hog beside
 * them. Then the errors, and teardown with notifications in flight.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "uring_util.h"
#include "kselftest_harness.h"

#define SEG		RING_SEG
#define RX_EP		0		/* the receiver's endpoint */
#define TX_EP		4		/* the sender's, four hops away */
#define OTHER_EP	7		/* where the receiver sends its own */
#define NMSG		12		/* NOTIFY WRITEs per run */
#define CHUNK		(2 * SEG)	/* bytes per WRITE */
#define RSIZE		(NMSG * CHUNK)
#define IMM0		100		/* imm of the first WRITE */
#define MAX_WAITS	64

static struct icfab_desc delay(uint32_t q, uint64_t ps)
{
	return (struct icfab_desc){ .op = ICFAB_OP_DELAY, .queue = q,
				    .len = ps };
}

/* What a run saw: every WAIT of the receiver, and the sender's own. */
struct trace {
	int rx_err, tx_err;		/* a step that failed, or 0 */
	unsigned int nr_waits;
	unsigned int nr[MAX_WAITS];	/* completions each WAIT returned */
	uint64_t clock[MAX_WAITS];	/* the receiver's clock after it */
	unsigned int nr_rx;
	struct icfab_cqe rx[NMSG];	/* in the order returned */
	uint64_t rx_clock[NMSG];	/* the clock after the WAIT of each */
	struct icfab_cqe tx[NMSG];	/* the sender's, by message */
	int bytes_ok;
	int rq;				/* the receive queue's id */
};

static void byte_pattern(unsigned char *p, size_t n, unsigned int salt)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 7 + salt * 13 + 1);
}

/*
 * The receiver: a receive queue and a region on RX_EP, and traffic of
 * its own to OTHER_EP. Each round it sends one WRITE of its own, maybe
 * computes, and WAITs for at least one completion (up to 8), until all
 * NMSG notifications have come. @uring: count them with ICFAB_UCMD_WAIT
 * first, and reap with ICFAB_IOC_WAIT after.
 */
static int receiver(struct trace *t, int key_w, int go_r, bool uring)
{
	struct icfab_cqe c[8];
	struct io_uring ring;
	unsigned char *map, *want;
	unsigned int got = 0, round = 0;
	uint32_t handle;
	uint64_t key, clock;
	int fd, q, rq, n;
	char go;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0 || ctx_attach(fd, RX_EP))
		return 1;
	q = ctx_queue(fd, RX_EP, 16);
	rq = ctx_recv_queue(fd, RX_EP, NMSG);
	if (q < 0 || rq < 0 || region_map(fd, RX_EP, RSIZE,
					  ICFAB_ACCESS_REMOTE_WRITE, &handle,
					  &key, &map))
		return 2;
	t->rq = rq;
	if (uring && io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32))
		return 3;
	if (write(key_w, &key, sizeof(key)) != sizeof(key) ||
	    read(go_r, &go, 1) != 1)
		return 4;

	while (got < NMSG) {
		struct icfab_desc d[2] = {
			desc_put(q, OTHER_EP, SEG, round),
			delay(q, (round % 3) * 900000),
		};

		if (t->nr_waits == MAX_WAITS)
			return 5;
		if (ctx_submit(fd, d, round % 3 ? 2 : 1) < 1)
			return 6;
		if (uring) {
			struct io_uring_cqe *cqe;

			/* One more, own or received: counted once. */
			if (uwait(&ring, fd, 1, 0) || io_uring_submit(&ring) != 1 ||
			    io_uring_wait_cqe(&ring, &cqe) || cqe->res < 1)
				return 7;
			io_uring_cqe_seen(&ring, cqe);
			n = ctx_wait(fd, c, 0, 8, 10000, &clock);
		} else {
			n = ctx_wait(fd, c, 1, 8, 10000, &clock);
		}
		if (n < 0)
			return 8;
		t->nr[t->nr_waits] = n;
		t->clock[t->nr_waits++] = clock;
		for (int i = 0; i < n; i++) {
			if (i && c[i].finish_ps < c[i - 1].finish_ps)
				return 10;
			if (c[i].queue != (uint32_t)rq)
				continue;
			if (got == NMSG)
				return 11;
			t->rx_clock[got] = clock;
			t->rx[got++] = c[i];
		}
		t->nr_rx = got;
		round++;
	}
	want = malloc(RSIZE);
	if (!want)
		return 9;
	for (unsigned int i = 0; i < NMSG; i++)
		byte_pattern(want + i * CHUNK, CHUNK, i);
	t->bytes_ok = !memcmp(map, want, RSIZE);
	free(want);
	if (uring)
		io_uring_queue_exit(&ring);
	/* Close with own completions unreaped: they go with the context. */
	close(fd);
	return 0;
}

/*
 * The sender: NMSG WRITEs of CHUNK bytes with NOTIFY into the receiver's
 * region, some after a compute DELAY, draining its own completions every
 * fourth.
 */
static int sender(struct trace *t, int key_r, int go_w)
{
	unsigned char *map;
	struct icfab_cqe c[8];
	unsigned int inflight = 0;
	uint32_t handle;
	uint64_t key, lkey;
	int fd, q, n;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0 || ctx_attach(fd, TX_EP))
		return 1;
	/* Attached before the receiver starts: both clocks start at 0. */
	if (write(go_w, "g", 1) != 1 ||
	    read(key_r, &key, sizeof(key)) != sizeof(key))
		return 2;
	q = ctx_queue(fd, TX_EP, 16);
	if (q < 0 || region_map(fd, TX_EP, RSIZE, ICFAB_ACCESS_REMOTE_WRITE,
				&handle, &lkey, &map))
		return 3;
	for (unsigned int i = 0; i < NMSG; i++)
		byte_pattern(map + i * CHUNK, CHUNK, i);

	for (unsigned int i = 0; i < NMSG; i++) {
		struct icfab_desc d[2] = {
			delay(q, (i % 4) * 1300000),
			{ .op = ICFAB_OP_WRITE, .queue = q, .region = handle,
			  .local_off = i * CHUNK, .rkey = key,
			  .remote_off = i * CHUNK, .len = CHUNK,
			  .user_tag = 1000 + i, .imm = IMM0 + i,
			  .flags = ICFAB_DESC_F_NOTIFY },
		};

		if (ctx_submit(fd, i % 4 ? d : &d[1], i % 4 ? 2 : 1) !=
		    (i % 4 ? 2 : 1))
			return 4;
		inflight += i % 4 ? 2 : 1;
		if (i % 4 == 3 || i == NMSG - 1) {
			while (inflight) {
				n = ctx_wait(fd, c, inflight, 8, 10000, NULL);
				if (n <= 0)
					return 5;
				inflight -= n;
				for (int k = 0; k < n; k++)
					if (c[k].user_tag >= 1000)
						t->tx[c[k].user_tag - 1000] =
							c[k];
			}
		}
	}
	close(fd);
	return 0;
}

static pid_t hog(void)
{
	pid_t pid = fork();

	if (!pid) {
		volatile unsigned long x = 0;

		for (;;)
			x++;
	}
	return pid;
}

/* One run of the pair; the trace in @t (shared memory). */
static void run_pair(struct __test_metadata *_metadata, struct trace *t,
		     bool with_hog, bool uring)
{
	int key_p[2], go_p[2], status;
	pid_t rx, tx, h = 0;

	memset(t, 0, sizeof(*t));
	ASSERT_EQ(0, pipe(key_p));
	ASSERT_EQ(0, pipe(go_p));
	if (with_hog) {
		h = hog();
		ASSERT_LT(0, h);
	}
	rx = fork();
	ASSERT_LE(0, rx);
	if (!rx) {
		t->rx_err = receiver(t, key_p[1], go_p[0], uring);
		_exit(0);
	}
	tx = fork();
	ASSERT_LE(0, tx);
	if (!tx) {
		t->tx_err = sender(t, key_p[0], go_p[1]);
		_exit(0);
	}
	ASSERT_EQ(rx, waitpid(rx, &status, 0));
	ASSERT_EQ(0, status);
	ASSERT_EQ(tx, waitpid(tx, &status, 0));
	ASSERT_EQ(0, status);
	if (h) {
		kill(h, SIGKILL);
		waitpid(h, NULL, 0);
	}
	close(key_p[0]);
	close(key_p[1]);
	close(go_p[0]);
	close(go_p[1]);
	ASSERT_EQ(0, t->rx_err);
	ASSERT_EQ(0, t->tx_err);
}

/* What every run must show, whatever the interleaving. */
static void check_trace(struct __test_metadata *_metadata,
			const struct trace *t)
{
	unsigned int batched = 0;

	EXPECT_TRUE(t->bytes_ok);
	ASSERT_EQ(NMSG, t->nr_rx);
	for (unsigned int i = 0; i < NMSG; i++) {
		const struct icfab_cqe *r = &t->rx[i];
		unsigned int m = (uint32_t)r->user_tag - IMM0;

		/* In finish order, which here is the order they were sent. */
		ASSERT_EQ(i, m);
		EXPECT_EQ(((uint64_t)TX_EP << 32) | (IMM0 + m), r->user_tag);
		EXPECT_EQ(0, r->status);
		EXPECT_EQ((uint32_t)t->rq, r->queue);
		/* The transfer's own times. */
		EXPECT_EQ(t->tx[m].submit_ps, r->submit_ps);
		EXPECT_EQ(t->tx[m].start_ps, r->start_ps);
		EXPECT_EQ(t->tx[m].finish_ps, r->finish_ps);
		EXPECT_EQ(t->tx[m].queued_ps, r->queued_ps);
		EXPECT_LT(r->start_ps, r->finish_ps);
		/* A WAIT's clock is at least every finish it returned. */
		EXPECT_LE(r->finish_ps, t->rx_clock[i]);
	}
	for (unsigned int w = 0; w < t->nr_waits; w++) {
		batched += t->nr[w] > 1;
		if (w)
			EXPECT_LE(t->clock[w - 1], t->clock[w]);
	}
	/* Compute in the receiver leaves more than one to some WAIT. */
	EXPECT_LT(0, batched);
}

FIXTURE(rx) {
	struct genl_sock gs;
	int fd;
};

FIXTURE_SETUP(rx)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(rx)
{
	close(self->fd);
	fabric_close(&self->gs);
}

/*
 * @fd attached to TX_EP and RX_EP, a queue of 8 on the first in *@q and
 * its own receive queue of 8 on the second in *@rq: 0 or -errno.
 */
static int self_notify_queues(int fd, int *q, int *rq)
{
	int err;

	if ((err = ctx_attach(fd, TX_EP)) || (err = ctx_attach(fd, RX_EP)))
		return err;
	*q = ctx_queue(fd, TX_EP, 8);
	if (*q < 0)
		return *q;
	*rq = ctx_recv_queue(fd, RX_EP, 8);
	return *rq < 0 ? *rq : 0;
}

TEST_F(rx, info_announces_recv_notify)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &in));
	EXPECT_TRUE(in.features & ICFAB_F_RECV_NOTIFY);
	EXPECT_TRUE(ICFAB_F_ALL & ICFAB_F_RECV_NOTIFY);
}

/* A receiver's WAIT in a thread of its own, as libfabricdev's idler. */
struct idle_wait {
	int fd;
	int err;	/* the WAIT's errno, 0 if it returned 0 */
};

static void *idle_wait_main(void *arg)
{
	struct idle_wait *iw = arg;
	struct icfab_cqe c[1];
	struct icfab_wait w = { .cqes = (uintptr_t)c, .max = 1, .min = 1,
				.timeout_ms = 20000 };

	iw->err = ioctl(iw->fd, ICFAB_IOC_WAIT, &w) ? errno : 0;
	return NULL;
}

TEST_F(rx, wait_end_ends_the_wait_under_way_or_the_next)
{
	struct icfab_wait w = { .max = 0, .min = 0, .timeout_ms = 50 };
	struct idle_wait iw = { .fd = self->fd, .err = -1 };
	struct icfab_info in;
	pthread_t t;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &in));
	if (!(in.features & ICFAB_F_WAIT_END))
		SKIP(return, "no ICFAB_F_WAIT_END");
	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	ASSERT_LE(0, ctx_recv_queue(self->fd, RX_EP, 4));

	/* Two ends before a WAIT: it ends at once, and only it. */
	EXPECT_EQ(0, ioctl(self->fd, ICFAB_IOC_WAIT_END));
	EXPECT_EQ(0, ioctl(self->fd, ICFAB_IOC_WAIT_END));
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_WAIT, &w));
	EXPECT_EQ(ECANCELED, errno);
	w.min = w.max = 1;
	w.cqes = (uintptr_t)&(struct icfab_cqe){ 0 };
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_WAIT, &w));
	EXPECT_EQ(ETIMEDOUT, errno);

	/*
	 * Another thread's WAIT for a completion that never comes ends
	 * with -ECANCELED, whether the end comes while it sleeps or just
	 * before it started; not after its 20 s.
	 */
	ASSERT_EQ(0, pthread_create(&t, NULL, idle_wait_main, &iw));
	usleep(100000);
	EXPECT_EQ(0, ioctl(self->fd, ICFAB_IOC_WAIT_END));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(ECANCELED, iw.err);
	/* Nothing is left pending: the context WAITs as before. */
	memset(&w, 0, sizeof(w));
	EXPECT_EQ(0, ioctl(self->fd, ICFAB_IOC_WAIT, &w));
}

/*
 * A receiver's first WRITEs after its idle WAIT ended (ICFAB_IOC_WAIT_END,
 * as libfabricdev's ranks of independent processes begin each operation)
 * take the WRITE path, before anything of it was ever in flight: the
 * WAIT's end set the flag with credit. So do those after a WAIT_END with
 * no WAIT under way, which clears the flag and sets it again.
 */
TEST_F(rx, a_receivers_first_writes_after_its_idle_wait_take_the_path)
{
	struct idle_wait iw = { .fd = self->fd, .err = -1 };
	struct icfab_wait w = { .max = 0, .min = 0, .timeout_ms = 50 };
	struct icfab_desc d[2];
	struct icfab_cqe c[4];
	unsigned int seen = 0;
	long long n;
	pthread_t t;
	int q, got = 0;

	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	q = ctx_queue(self->fd, RX_EP, 8);
	ASSERT_LE(0, q);
	ASSERT_LE(0, ctx_recv_queue(self->fd, RX_EP, 4));
	ASSERT_EQ(0, pthread_create(&t, NULL, idle_wait_main, &iw));
	usleep(100000);
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_WAIT_END));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(ECANCELED, iw.err);

	n = fab_count("fast_writes");
	ASSERT_LE(0, n);
	d[0] = desc_put(q, OTHER_EP, SEG, 1);
	d[1] = desc_put(q, OTHER_EP, 2 * SEG, 2);
	ASSERT_EQ(2, ctx_submit(self->fd, d, 2));
	EXPECT_EQ(n + 2, fab_count("fast_writes"));

	/* No WAIT under way: the next one ends at once. */
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_WAIT_END));
	d[0].user_tag = 3;
	d[1].user_tag = 4;
	ASSERT_EQ(2, ctx_submit(self->fd, d, 2));
	EXPECT_EQ(n + 4, fab_count("fast_writes"));
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_WAIT, &w));
	EXPECT_EQ(ECANCELED, errno);
	while (got < 4) {
		int r = ctx_wait(self->fd, c + got, 1, 4 - got, 20000, NULL);

		ASSERT_LT(0, r);
		got += r;
	}
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(0, c[i].status);
		ASSERT_LE(1, c[i].user_tag);
		ASSERT_GE(4, c[i].user_tag);
		seen |= 1U << c[i].user_tag;
	}
	EXPECT_EQ(0x1eU, seen);
}

TEST_F(rx, receive_queue_rules)
{
	struct icfab_queue_create qc = { .endpoint = RX_EP, .depth = 4,
					 .flags = 1U << 7 };
	struct icfab_desc d;
	int fd2, rq, q;

	EXPECT_EQ(-ENOENT, ctx_recv_queue(self->fd, RX_EP, 4));	/* not attached */
	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_QUEUE_CREATE, &qc));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, ctx_recv_queue(self->fd, RX_EP, 0));
	rq = ctx_recv_queue(self->fd, RX_EP, 4);
	ASSERT_LE(0, rq);
	/* One per endpoint per fabric: not twice, nor from another context. */
	qc.flags = ICFAB_QUEUE_F_RECV;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_QUEUE_CREATE, &qc));
	EXPECT_EQ(EBUSY, errno);
	fd2 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ctx_attach(fd2, RX_EP));
	EXPECT_EQ(-EBUSY, ctx_recv_queue(fd2, RX_EP, 4));
	/* A receive queue takes no descriptors. */
	d = desc_put(rq, 1, SEG, 0);
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	/* Once destroyed, another context may have one there. */
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, rq));
	q = ctx_recv_queue(fd2, RX_EP, 4);
	EXPECT_LE(0, q);
	close(fd2);
	/* ... and when that context went, so did its receive queue. */
	EXPECT_LE(0, ctx_recv_queue(self->fd, RX_EP, 4));
}

TEST_F(rx, notify_errors)
{
	struct icfab_desc d;
	int fd2, q, rq;

	ASSERT_EQ(0, ctx_attach(self->fd, TX_EP));
	q = ctx_queue(self->fd, TX_EP, 8);
	ASSERT_LE(0, q);

	/* Nobody receives at RX_EP yet. */
	d = desc_notify_put(q, RX_EP, SEG, 0, 1);
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_SUBMIT,
			    &(struct icfab_submit){ .descs = (uintptr_t)&d,
						    .nr = 1 }));
	EXPECT_EQ(ENOTCONN, errno);

	fd2 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ctx_attach(fd2, RX_EP));
	rq = ctx_recv_queue(fd2, RX_EP, 2);
	ASSERT_LE(0, rq);

	/* NOTIFY only on a WRITE, never with a circuit. */
	d = desc_notify_put(q, RX_EP, SEG, 0, 0);
	d.op = ICFAB_OP_READ;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = delay(q, 1000);
	d.flags = ICFAB_DESC_F_NOTIFY;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = (struct icfab_desc){ .op = ICFAB_OP_FENCE, .queue = q,
				 .flags = ICFAB_DESC_F_NOTIFY };
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = desc_notify_put(q, RX_EP, SEG, 0, 0);
	d.circuit = 1;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	/* imm without NOTIFY. */
	d = desc_put(q, RX_EP, SEG, 0);
	d.imm = 5;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_SUBMIT,
			    &(struct icfab_submit){ .descs = (uintptr_t)&d,
						    .nr = 1 }));
	EXPECT_EQ(EINVAL, errno);
	/* NOTIFY to an endpoint without a receive queue. */
	d = desc_notify_put(q, 2, SEG, 0, 0);
	EXPECT_EQ(-ENOTCONN, ctx_submit(self->fd, &d, 1));

	/* Depth 2: the third waits for the receiver to reap. */
	d = desc_notify_put(q, RX_EP, SEG, 0, 0);
	EXPECT_EQ(1, ctx_submit(self->fd, &d, 1));
	EXPECT_EQ(1, ctx_submit(self->fd, &d, 1));
	EXPECT_EQ(-EAGAIN, ctx_submit(self->fd, &d, 1));
	/* A receive queue that holds completions is busy. */
	EXPECT_EQ(-EBUSY, ctx_queue_destroy(fd2, rq));
	close(fd2);
	/* Its context went: nobody receives there any more. */
	EXPECT_EQ(-ENOTCONN, ctx_submit(self->fd, &d, 1));
}

TEST_F(rx, one_process_two_contexts)
{
	struct icfab_cqe c[4], r[4];
	uint64_t clock, rclock;
	struct icfab_desc d;
	int fd2, q, rq;

	ASSERT_EQ(0, ctx_attach(self->fd, TX_EP));
	q = ctx_queue(self->fd, TX_EP, 8);
	ASSERT_LE(0, q);
	fd2 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ctx_attach(fd2, RX_EP));
	rq = ctx_recv_queue(fd2, RX_EP, 4);
	ASSERT_LE(0, rq);

	/*
	 * One thread drives both: the sender computes far ahead, so that
	 * only the receiver's clock holds the engine back until it waits.
	 */
	d = desc_notify_put(q, RX_EP, 4 * SEG, 77, 0xabcd);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	d = delay(q, 1000000000);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	/* The receiver waits for more than it has in flight: no -EDEADLK. */
	ASSERT_EQ(1, ctx_wait(fd2, r, 1, 4, 5000, &rclock));
	ASSERT_EQ(2, ctx_wait(self->fd, c, 2, 4, 5000, &clock));
	/* The WRITE first: in finish order, not in the order done. */
	EXPECT_EQ(1000000000, c[1].finish_ps);
	EXPECT_EQ(((uint64_t)TX_EP << 32) | 0xabcd, r[0].user_tag);
	EXPECT_EQ((uint32_t)rq, r[0].queue);
	EXPECT_EQ(0, r[0].status);
	EXPECT_EQ(c[0].submit_ps, r[0].submit_ps);
	EXPECT_EQ(c[0].start_ps, r[0].start_ps);
	EXPECT_EQ(c[0].finish_ps, r[0].finish_ps);
	EXPECT_EQ(c[0].queued_ps, r[0].queued_ps);
	/* Four hops, uncontended: the closed form. */
	EXPECT_EQ(ring_uncontended(4 * SEG, 4), r[0].finish_ps - r[0].start_ps);
	EXPECT_EQ(r[0].finish_ps, rclock);
	EXPECT_EQ(77, c[0].user_tag);
	/* Nothing more comes: the receiver times out, it is no deadlock. */
	EXPECT_EQ(-ETIMEDOUT, ctx_wait(fd2, r, 1, 4, 50, NULL));
	/* Reaped: the receive queue is idle again. */
	EXPECT_EQ(0, ctx_queue_destroy(fd2, rq));
	close(fd2);
}

TEST_F(rx, notify_to_self_then_close)
{
	struct icfab_desc d;
	int q, rq;

	/* Its own receive queue, on another of its endpoints. */
	ASSERT_EQ(0, self_notify_queues(self->fd, &q, &rq));
	d = desc_notify_put(q, RX_EP, 64 * SEG, 0, 1);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	d = (struct icfab_desc){ .op = ICFAB_OP_FENCE, .queue = q };
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	d = desc_notify_put(q, RX_EP, 64 * SEG, 0, 2);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	/* Closed with one in the engine and one behind the FENCE. */
}

/*
 * A timing-only NOTIFY WRITE holds nothing but its receive completion,
 * which icfab_data_complete_notify() posts in place: the receive
 * completion first, with the WRITE's status and all four of its times,
 * then the WRITE's own. Two to the context's own receive queue, the
 * second behind the first on the same links; without a ring both of a
 * pair go on the done list, where a tie keeps the order of their posts.
 */
TEST_F(rx, a_timing_only_notify_posts_its_receive_completion_first)
{
	struct icfab_desc d[2];
	struct icfab_cqe c[4];
	int q, rq;

	ASSERT_EQ(0, self_notify_queues(self->fd, &q, &rq));
	d[0] = desc_notify_put(q, RX_EP, 8 * SEG, 1, 5);
	d[1] = desc_notify_put(q, RX_EP, 8 * SEG, 2, 6);
	ASSERT_EQ(2, ctx_submit(self->fd, d, 2));
	ASSERT_EQ(4, ctx_wait(self->fd, c, 4, 4, 5000, NULL));
	for (int k = 0; k < 2; k++) {
		const struct icfab_cqe *r = &c[2 * k], *w = &c[2 * k + 1];

		EXPECT_EQ((uint32_t)rq, r->queue);
		EXPECT_EQ(((uint64_t)TX_EP << 32) | (5 + k), r->user_tag);
		EXPECT_EQ(0, r->status);
		EXPECT_EQ((uint32_t)q, w->queue);
		EXPECT_EQ((uint64_t)(1 + k), w->user_tag);
		EXPECT_EQ(0, w->status);
		EXPECT_EQ(w->submit_ps, r->submit_ps);
		EXPECT_EQ(w->start_ps, r->start_ps);
		EXPECT_EQ(w->finish_ps, r->finish_ps);
		EXPECT_EQ(w->queued_ps, r->queued_ps);
	}
	EXPECT_EQ(ring_uncontended(8 * SEG, 4),
		  c[1].finish_ps - c[1].start_ps);
	/* The second waited behind the first. */
	EXPECT_LT(c[1].finish_ps, c[3].finish_ps);
	EXPECT_LT(0, c[3].queued_ps);
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, rq));
}

/*
 * Runs the pair twice on an 8-ring, once beside a CPU hog (@hog_first:
 * the first run), and checks that both traces are the same to the bit.
 */
static void pair_twice_identical(struct __test_metadata *_metadata,
				 bool hog_first, bool uring)
{
	struct genl_sock gs;
	struct trace *t;

	ASSERT_EQ(0, genl_open(&gs));
	ASSERT_EQ(0, genl_resolve(&gs, ICFAB_GENL_NAME));
	clear_fabric(&gs);
	ASSERT_EQ(0, stage_ring(&gs, 8));
	ASSERT_EQ(0, cmd(&gs, ICFAB_CMD_FABRIC_COMMIT));
	t = mmap(NULL, 2 * sizeof(*t), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, t);

	run_pair(_metadata, &t[0], hog_first, uring);
	check_trace(_metadata, &t[0]);
	run_pair(_metadata, &t[1], !hog_first, uring);
	check_trace(_metadata, &t[1]);
	EXPECT_EQ(0, memcmp(&t[0], &t[1], sizeof(*t)));
	munmap(t, 2 * sizeof(*t));
	clear_fabric(&gs);
	genl_close(&gs);
}

/* Bit-identical twice, the second time beside a CPU hog. */
TEST(pair_is_deterministic)
{
	pair_twice_identical(_metadata, false, false);
}

/* The receiver counts with ICFAB_UCMD_WAIT and reaps with the ioctl. */
TEST(pair_over_io_uring_is_deterministic)
{
	pair_twice_identical(_metadata, true, true);
}

/*
 * A receive completion is counted by one WAIT. Reaped by ICFAB_IOC_WAIT
 * before any ICFAB_UCMD_WAIT counted it, it does not count again for the
 * next ICFAB_UCMD_WAIT, which completes on the io_uring descriptors
 * submitted with it, at their finish. Counted again, it would complete
 * that WAIT at once, and the context, no longer waiting, would hold the
 * engine at its clock with those descriptors behind it for ever.
 */
TEST_F(rx, a_receive_completion_the_ioctl_reaped_is_not_counted_again)
{
	struct __kernel_timespec ts = { .tv_sec = 10 };
	struct icfab_cqe r[4], rec[2];
	struct io_uring_cqe *cqe;
	struct icfab_desc d[2];
	struct io_uring ring;
	uint64_t clock, wait_clock = 0, last = 0;
	int q, rq, wait_res = -1;

	ASSERT_EQ(0, ctx_attach(self->fd, TX_EP));
	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	q = ctx_queue(self->fd, TX_EP, 8);
	ASSERT_LE(0, q);
	rq = ctx_recv_queue(self->fd, RX_EP, 4);
	ASSERT_LE(0, rq);
	d[0] = desc_notify_put(q, RX_EP, SEG, 1, 1);
	d[1] = desc_notify_put(q, RX_EP, SEG, 2, 2);
	ASSERT_EQ(2, ctx_submit(self->fd, d, 2));
	/* The two WRITEs and their two receive completions. */
	ASSERT_EQ(4, ctx_wait(self->fd, r, 4, 4, 5000, &clock));

	ASSERT_EQ(0, io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32));
	ASSERT_EQ(0, usubmit(&ring, self->fd, desc_put(q, OTHER_EP, 4 * SEG, 3),
			     &rec[0], 3));
	ASSERT_EQ(0, usubmit(&ring, self->fd, desc_put(q, OTHER_EP, 4 * SEG, 4),
			     &rec[1], 4));
	ASSERT_EQ(0, uwait(&ring, self->fd, 2, 9));
	ASSERT_EQ(3, io_uring_submit(&ring));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts)) {
			TH_LOG("CQE %d of 3 never came", i + 1);
		}
		if (cqe->user_data == 9) {
			wait_res = cqe->res;
			wait_clock = cqe->big_cqe[0];
		} else {
			EXPECT_EQ(0, cqe->res);
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	/* Its own two, no more; the clock at the later's finish. */
	EXPECT_EQ(2, wait_res);
	last = rec[0].finish_ps > rec[1].finish_ps ? rec[0].finish_ps :
						     rec[1].finish_ps;
	EXPECT_LT(clock, last);
	EXPECT_EQ(last, wait_clock);
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, rq));
}

/*
 * A sender killed with NOTIFY WRITEs in flight: the one in the engine
 * still lands and posts, the one behind a FENCE posts -ECANCELED.
 */
TEST_F(rx, killed_sender)
{
	struct icfab_cqe r[4];
	int p[2], rq, status;
	pid_t tx;
	char c;

	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	rq = ctx_recv_queue(self->fd, RX_EP, 4);
	ASSERT_LE(0, rq);
	ASSERT_EQ(0, pipe(p));
	tx = fork();
	ASSERT_LE(0, tx);
	if (!tx) {
		int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC), q;
		struct icfab_desc d[3];

		if (fd < 0 || ctx_attach(fd, TX_EP))
			_exit(1);
		q = ctx_queue(fd, TX_EP, 8);
		d[0] = desc_notify_put(q, RX_EP, 32 * SEG, 0, 1);
		d[1] = (struct icfab_desc){ .op = ICFAB_OP_FENCE, .queue = q };
		d[2] = desc_notify_put(q, RX_EP, 32 * SEG, 0, 2);
		if (ctx_submit(fd, d, 3) != 3)
			_exit(2);
		/* It holds the engine at 0: nothing finishes until it dies. */
		if (write(p[1], "x", 1) != 1)
			_exit(3);
		pause();
		_exit(4);
	}
	ASSERT_EQ(1, read(p[0], &c, 1));
	/* The sender holds the engine: nothing comes yet. */
	EXPECT_EQ(-ETIMEDOUT, ctx_wait(self->fd, r, 1, 4, 100, NULL));
	kill(tx, SIGKILL);
	ASSERT_EQ(tx, waitpid(tx, &status, 0));
	ASSERT_EQ(2, ctx_wait(self->fd, r, 2, 4, 5000, NULL));
	/* The cancelled one at the sender's clock, before the one that landed. */
	EXPECT_EQ(((uint64_t)TX_EP << 32) | 2, r[0].user_tag);
	EXPECT_EQ(-ECANCELED, r[0].status);
	EXPECT_EQ(((uint64_t)TX_EP << 32) | 1, r[1].user_tag);
	EXPECT_EQ(0, r[1].status);
	EXPECT_EQ(ring_uncontended(32 * SEG, 4), r[1].finish_ps - r[1].start_ps);
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, rq));
	close(p[0]);
	close(p[1]);
}

/*
 * A receiver killed with NOTIFY WRITEs in flight to it, and later one
 * killed in its WAIT: the sender's WRITEs still complete, and then
 * nobody receives there.
 */
TEST_F(rx, killed_receiver)
{
	struct icfab_cqe c[8];
	struct icfab_desc d;
	int p[2], q, status;
	unsigned int got = 0;
	pid_t rx;
	char ch;

	ASSERT_EQ(0, ctx_attach(self->fd, TX_EP));
	q = ctx_queue(self->fd, TX_EP, 8);
	ASSERT_LE(0, q);
	for (int round = 0; round < 2; round++) {
		ASSERT_EQ(0, pipe(p));
		rx = fork();
		ASSERT_LE(0, rx);
		if (!rx) {
			int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);

			if (fd < 0 || ctx_attach(fd, RX_EP) ||
			    ctx_recv_queue(fd, RX_EP, 8) < 0 ||
			    write(p[1], "x", 1) != 1)
				_exit(1);
			if (round)
				/* Waits for more than will ever come. */
				ctx_wait(fd, c, 8, 8, 0, NULL);
			pause();
			_exit(2);
		}
		ASSERT_EQ(1, read(p[0], &ch, 1));
		d = desc_notify_put(q, RX_EP, 16 * SEG, round, 3);
		ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
		ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
		if (round) {
			/* Let the receiver have them, then kill it waiting. */
			ASSERT_EQ(2, ctx_wait(self->fd, c, 2, 8, 5000, NULL));
			got += 2;
		}
		kill(rx, SIGKILL);
		ASSERT_EQ(rx, waitpid(rx, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
		close(p[0]);
		close(p[1]);
		while (got < 2 * (round + 1)) {
			int n = ctx_wait(self->fd, c, 1, 8, 5000, NULL);

			ASSERT_LT(0, n);
			for (int i = 0; i < n; i++)
				EXPECT_EQ(0, c[i].status);
			got += n;
		}
		EXPECT_EQ(-ENOTCONN, ctx_submit(self->fd, &d, 1));
	}
}

/*
 * A receiver's WRITEs on the WRITE path (off the fabric lock, counted
 * in fast_writes) while another context's NOTIFY WRITEs land at it: the
 * receiver computes far ahead, so the sender's WAIT runs the engine
 * and posts the receive completions into the receiver while its own
 * SUBMITs go on. All RW_N take the path, the first too (credit comes
 * with the flag, also before a transfer was in flight); every receive
 * completion comes once, with the sender's times, and every WRITE of
 * its own completes once. The sender's NOTIFY WRITEs take the path too
 * (fast_notify_writes, counted in fast_writes as well).
 */
#define RW_N	64		/* the receiver's WRITEs */
#define RN_N	32		/* NOTIFY WRITEs to it */
#define RW_T0	1000000000000ULL	/* ps: where the receiver computes to */

struct notifier {
	int fd, q, err;
	struct icfab_cqe c[RN_N];
};

/* RN_N NOTIFY WRITEs to RX_EP, imm i, one a SUBMIT, then their WAIT. */
static void *notifier_fn(void *arg)
{
	struct notifier *nt = arg;
	unsigned int got = 0;

	for (unsigned int i = 0; i < RN_N; i++) {
		struct icfab_desc d = desc_notify_put(nt->q, RX_EP, SEG, i, i);

		if (ctx_submit(nt->fd, &d, 1) != 1) {
			nt->err = 1;
			return NULL;
		}
	}
	while (got < RN_N) {
		int n = ctx_wait(nt->fd, nt->c + got, 1, RN_N - got, 20000,
				 NULL);

		if (n <= 0) {
			nt->err = 2;
			return NULL;
		}
		got += n;
	}
	return NULL;
}

TEST_F(rx, a_receivers_writes_take_the_path_while_notifies_land)
{
	struct icfab_cqe c[RW_N + RN_N + 1];
	unsigned int own[RW_N + 1] = { 0 }, heard[RN_N] = { 0 };
	struct notifier nt = { 0 };
	struct icfab_desc d = delay(0, RW_T0);
	long long n0, n1, nn;
	int q, rq, got = 0;
	pthread_t t;

	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	/* Its WRITEs and the DELAY, which counts until reaped. */
	q = ctx_queue(self->fd, RX_EP, RW_N + 1);
	rq = ctx_recv_queue(self->fd, RX_EP, RN_N);
	ASSERT_LE(0, q);
	ASSERT_LE(0, rq);
	nt.fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, nt.fd);
	ASSERT_EQ(0, ctx_attach(nt.fd, TX_EP));
	nt.q = ctx_queue(nt.fd, TX_EP, RN_N);
	ASSERT_LE(0, nt.q);
	d.queue = q;
	d.user_tag = RW_N;
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));

	n0 = fab_count("fast_writes");
	ASSERT_LE(0, n0);
	nn = fab_count("fast_notify_writes");
	ASSERT_LE(0, nn);
	d = desc_put(q, OTHER_EP, SEG, 0);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(0, pthread_create(&t, NULL, notifier_fn, &nt));
	for (unsigned int i = 1; i < RW_N; i++) {
		d = desc_put(q, OTHER_EP, SEG, i);
		ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	}
	pthread_join(t, NULL);
	ASSERT_EQ(0, nt.err);
	/* The sender's NOTIFY WRITEs take it too, counted apart. */
	nn = fab_count("fast_notify_writes") - nn;
	EXPECT_LT(0, nn);
	n1 = fab_count("fast_writes") - nn;
	EXPECT_EQ(RW_N, n1 - n0);
	/* It holds the engine at its clock: its own WRITEs need it gone. */
	close(nt.fd);

	while (got < RW_N + RN_N + 1) {
		int n = ctx_wait(self->fd, c + got, 1, RW_N + RN_N + 1 - got,
				 20000, NULL);

		ASSERT_LT(0, n);
		got += n;
	}
	for (int i = 0; i < got; i++) {
		const struct icfab_cqe *r = &c[i];

		EXPECT_EQ(0, r->status);
		if (i)
			EXPECT_LE(c[i - 1].finish_ps, r->finish_ps);
		if (r->queue == (uint32_t)q) {
			/* Its WRITEs, tags 0 to RW_N - 1, then the DELAY's. */
			ASSERT_GE(RW_N, r->user_tag);
			own[r->user_tag]++;
			EXPECT_EQ(r->user_tag == RW_N ? 0 : RW_T0,
				  r->submit_ps);
			continue;
		}
		ASSERT_EQ((uint32_t)rq, r->queue);
		ASSERT_EQ((uint64_t)TX_EP, r->user_tag >> 32);
		ASSERT_GT(RN_N, (uint32_t)r->user_tag);
		heard[(uint32_t)r->user_tag]++;
		/* The transfer's own times, the sender's completion's. */
		for (unsigned int k = 0; k < RN_N; k++) {
			if (nt.c[k].user_tag != (uint32_t)r->user_tag)
				continue;
			EXPECT_EQ(nt.c[k].submit_ps, r->submit_ps);
			EXPECT_EQ(nt.c[k].start_ps, r->start_ps);
			EXPECT_EQ(nt.c[k].finish_ps, r->finish_ps);
		}
		EXPECT_GT(RW_T0, r->finish_ps);
	}
	for (unsigned int i = 0; i <= RW_N; i++)
		EXPECT_EQ(1, own[i]);
	for (unsigned int i = 0; i < RN_N; i++)
		EXPECT_EQ(1, heard[i]);
	/* Nothing more: none doubled, none left. */
	EXPECT_EQ(-ETIMEDOUT, ctx_wait(self->fd, c, 1, 1, 50, NULL));
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, rq));
}

/*
 * A receiver's DELAYs stay under the fabric lock (fast_delays does not
 * move), though nothing of its own is in flight and its WRITEs take the
 * WRITE path: the DELAY path writes its done list, which a receive
 * completion, posted by another context's engine run, writes too.
 */
TEST_F(rx, a_receivers_delays_stay_under_the_fabric_lock)
{
	struct icfab_cqe c[4];
	struct icfab_desc d;
	long long n;
	int q, rq;

	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	q = ctx_queue(self->fd, RX_EP, 8);
	rq = ctx_recv_queue(self->fd, RX_EP, 8);
	ASSERT_LE(0, q);
	ASSERT_LE(0, rq);
	n = fab_count("fast_delays");
	ASSERT_LE(0, n);
	for (int i = 0; i < 4; i++) {
		d = delay(q, 1000);
		ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
		ASSERT_EQ(1, ctx_wait(self->fd, c, 1, 1, 5000, NULL));
		EXPECT_EQ((i + 1) * 1000ULL, c[0].finish_ps);
	}
	EXPECT_EQ(n, fab_count("fast_delays"));
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, rq));
	/* No receive queue: its DELAYs take their path again. */
	for (int i = 0; i < 2; i++) {
		d = delay(q, 1000);
		ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
		ASSERT_EQ(1, ctx_wait(self->fd, c, 1, 1, 5000, NULL));
	}
	EXPECT_EQ(n + 1, fab_count("fast_delays"));
}

/*
 * A receiver's WRITE accepted on the WRITE path behind a TRIGGER of its
 * queue that waits for a NOTIFY: once with the TRIGGER released while
 * the WRITE waits on the path's list (the NOTIFY lands before the
 * receiver's clock, in the sender's WAIT), once with the list started
 * into the backlog by the receiver's WAIT and the TRIGGER released
 * later (the NOTIFY lands after that clock). Each against the same
 * round with the WRITE in the TRIGGER's own SUBMIT, under the fabric
 * lock: the same times, relative to the round's start.
 */
#define TR_STEP	10000000000ULL	/* ps between two rounds' starts */
#define TR_OFF	1000000000ULL	/* ps: the sender before or after it */

struct tround {
	struct icfab_cqe w0, trig, w;	/* relative to the round's start */
	long long fast;			/* fast_writes the TRIGGER's WRITE took */
};

/*
 * The sender: its NOTIFY WRITE's completion, then a DELAY to @park, past
 * the round, so that it does not hold the engine where it landed.
 */
struct twaiter {
	int fd, q, got;
	uint64_t clock, park;
	struct icfab_cqe c;
};

static void *twait_fn(void *arg)
{
	struct twaiter *w = arg;
	struct icfab_desc d;
	struct icfab_cqe c[4];
	int n;

	/* Its DELAYs' completions too, reaped along the way. */
	w->got = 0;
	while (!w->got) {
		n = ctx_wait(w->fd, c, 1, 4, 20000, &w->clock);
		if (n <= 0) {
			w->got = -1;
			return NULL;
		}
		for (int i = 0; i < n; i++)
			if (c[i].user_tag == 20) {
				w->c = c[i];
				w->got++;
			}
	}
	if (w->got != 1 || w->clock >= w->park)
		return NULL;
	d = delay(w->q, w->park - w->clock);
	if (ctx_submit(w->fd, &d, 1) != 1)
		w->got = -1;
	w->clock = w->park;
	return NULL;
}

static void rel(struct icfab_cqe *c, uint64_t base)
{
	c->submit_ps -= base;
	c->start_ps -= base;
	c->finish_ps -= base;
}

static void trigger_round(struct __test_metadata *_metadata, int rx, int q,
			  struct twaiter *tx, unsigned int round,
			  bool path, bool late, uint64_t *rclock,
			  struct tround *tr)
{
	uint64_t base = (round + 1) * TR_STEP;
	struct icfab_desc d[2];
	struct icfab_cqe c[4];
	long long n0;
	int seen = 0;
	pthread_t t;

	/* The receiver at the round's start, the sender before or after. */
	d[0] = delay(q, base - *rclock);
	ASSERT_EQ(1, ctx_submit(rx, d, 1));
	d[0] = delay(tx->q, (late ? base + TR_OFF : base - TR_OFF) -
			    tx->clock);
	ASSERT_EQ(1, ctx_submit(tx->fd, d, 1));
	tx->park = base + TR_STEP / 2;
	/* A WRITE in flight: the chunk after it ends with credit. */
	d[0] = desc_put(q, OTHER_EP, SEG, 10);
	ASSERT_EQ(1, ctx_submit(rx, d, 1));
	d[0] = (struct icfab_desc){ .op = ICFAB_OP_TRIGGER, .queue = q,
				    .imm = 5, .len = round + 1,
				    .user_tag = 11 };
	d[1] = desc_put(q, OTHER_EP, 4 * SEG, 12);
	n0 = fab_count("fast_writes");
	if (path) {
		ASSERT_EQ(1, ctx_submit(rx, &d[0], 1));
		ASSERT_EQ(1, ctx_submit(rx, &d[1], 1));
	} else {
		ASSERT_EQ(2, ctx_submit(rx, d, 2));
	}
	tr->fast = fab_count("fast_writes") - n0;
	d[0] = desc_notify_put(tx->q, RX_EP, SEG, 20, 5);
	ASSERT_EQ(1, ctx_submit(tx->fd, d, 1));
	/*
	 * Not late: it lands before the receiver's clock, which holds the
	 * engine there, so the sender's WAIT returns with the receiver in
	 * no system call. Late: only once the receiver waits too.
	 */
	if (late) {
		ASSERT_EQ(0, pthread_create(&t, NULL, twait_fn, tx));
	} else {
		twait_fn(tx);
		ASSERT_EQ(1, tx->got);
	}
	/* Its four, and the DELAY's completion along the way. */
	while (seen != 0xf) {
		int n = ctx_wait(rx, c, 1, 4, 20000, rclock);

		ASSERT_LT(0, n);
		for (int i = 0; i < n; i++) {
			EXPECT_EQ(0, c[i].status);
			if (c[i].queue != (uint32_t)q) {
				EXPECT_EQ(((uint64_t)TX_EP << 32) | 5,
					  c[i].user_tag);
				seen |= 8;
			} else if (c[i].user_tag == 10) {
				tr->w0 = c[i];
				seen |= 1;
			} else if (c[i].user_tag == 11) {
				tr->trig = c[i];
				seen |= 2;
			} else if (c[i].user_tag == 12) {
				tr->w = c[i];
				seen |= 4;
			}
		}
	}
	if (late) {
		pthread_join(t, NULL);
		ASSERT_EQ(1, tx->got);
	}
	EXPECT_EQ(0, tx->c.status);
	EXPECT_EQ(late, tx->c.finish_ps > base);
	/* Nothing starts on the queue before its TRIGGER completes. */
	EXPECT_LE(tr->trig.finish_ps, tr->w.start_ps);
	rel(&tr->w0, base);
	rel(&tr->trig, base);
	rel(&tr->w, base);
}

static void same_cqe(struct __test_metadata *_metadata,
		     const struct icfab_cqe *a, const struct icfab_cqe *b)
{
	EXPECT_EQ(a->user_tag, b->user_tag);
	EXPECT_EQ(a->submit_ps, b->submit_ps);
	EXPECT_EQ(a->start_ps, b->start_ps);
	EXPECT_EQ(a->finish_ps, b->finish_ps);
	EXPECT_EQ(a->queued_ps, b->queued_ps);
}

TEST_F(rx, a_receivers_write_behind_its_trigger_takes_the_path)
{
	struct twaiter tx = { 0 };
	struct tround tr[4];
	uint64_t rclock = 0;
	int q, rq;

	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	q = ctx_queue(self->fd, RX_EP, 8);
	rq = ctx_recv_queue(self->fd, RX_EP, 8);
	ASSERT_LE(0, q);
	ASSERT_LE(0, rq);
	tx.fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, tx.fd);
	ASSERT_EQ(0, ctx_attach(tx.fd, TX_EP));
	tx.q = ctx_queue(tx.fd, TX_EP, 8);
	ASSERT_LE(0, tx.q);

	/* Under the lock, on the path; each early, then late. */
	trigger_round(_metadata, self->fd, q, &tx, 0, false, false,
		      &rclock, &tr[0]);
	trigger_round(_metadata, self->fd, q, &tx, 1, true, false,
		      &rclock, &tr[1]);
	trigger_round(_metadata, self->fd, q, &tx, 2, false, true,
		      &rclock, &tr[2]);
	trigger_round(_metadata, self->fd, q, &tx, 3, true, true,
		      &rclock, &tr[3]);
	for (int i = 0; i < 4; i += 2) {
		EXPECT_EQ(0, tr[i].fast);
		EXPECT_EQ(1, tr[i + 1].fast);
		same_cqe(_metadata, &tr[i].w0, &tr[i + 1].w0);
		same_cqe(_metadata, &tr[i].trig, &tr[i + 1].trig);
		same_cqe(_metadata, &tr[i].w, &tr[i + 1].w);
	}
	/* Early: released at the TRIGGER's own start; late: at the NOTIFY's. */
	EXPECT_EQ(0, tr[0].trig.finish_ps);
	EXPECT_LT(TR_OFF, tr[2].trig.finish_ps);
	close(tx.fd);
}

/*
 * NOTIFY WRITEs on the WRITE path (fast_notify_writes): a sender's
 * NOTIFY WRITEs, timing-only and into the receiver's memory, one a
 * SUBMIT, in rounds that take the path (each NOTIFY first in its chunk)
 * or the fabric lock (a DELAY of 0 ps first: the sender is a receiver
 * too, so a DELAY never takes the path, nor does what follows it). Both
 * kinds of round give the same times to the picosecond, relative to the
 * round's start, for the sender's completions and the receiver's.
 */
#define NP_N	6		/* NOTIFY WRITEs a round */
#define NP_STEP	10000000000ULL	/* ps between two rounds' starts */
#define NP_GAP	300000ULL	/* ps the sender computes between two */

struct nround {
	struct icfab_cqe tx[NP_N], rx[NP_N];	/* by imm, relative */
	long long fast;				/* fast_notify_writes */
	int bytes_ok;
};

static void notify_round(struct __test_metadata *_metadata, int rx, int rq,
			 int rxq, int tx, int txq, uint32_t handle,
			 uint64_t key, unsigned char *rmap, unsigned int round,
			 bool path, uint64_t *rclock, uint64_t *tclock,
			 struct nround *nr)
{
	uint64_t base = (round + 1) * NP_STEP, park = base + NP_STEP / 2;
	unsigned char want[SEG];
	struct icfab_cqe c[4 * NP_N];
	struct icfab_desc d[3];
	unsigned int got = 0, own = 0;
	long long n0;

	d[0] = delay(rxq, base - *rclock);
	ASSERT_EQ(1, ctx_submit(rx, d, 1));
	d[0] = delay(txq, base - *tclock);
	d[0].user_tag = 4000;
	ASSERT_EQ(1, ctx_submit(tx, d, 1));
	/* A WRITE in flight: the chunk it ends gives credit. */
	d[0] = desc_put(txq, OTHER_EP, SEG, 1000);
	ASSERT_EQ(1, ctx_submit(tx, d, 1));
	memset(rmap, 0, NP_N * SEG);
	n0 = fab_count("fast_notify_writes");
	for (unsigned int i = 0; i < NP_N; i++) {
		struct icfab_desc w, d0 = delay(txq, 0);

		if (i % 2) {
			w = desc_notify_put(txq, RX_EP, SEG, i, i);
		} else {
			w = mv(ICFAB_OP_WRITE, txq, handle, i * SEG, key,
			       i * SEG, SEG, i);
			w.flags = ICFAB_DESC_F_NOTIFY;
			w.imm = i;
		}
		d0.user_tag = 2000 + i;
		d[0] = path ? w : d0;
		d[1] = path ? d0 : w;
		d[2] = delay(txq, NP_GAP);
		d[2].user_tag = 3000 + i;
		ASSERT_EQ(3, ctx_submit(tx, d, 3));
	}
	nr->fast = fab_count("fast_notify_writes") - n0;
	/* Parked past the round: the receiver's WAIT gets every one. */
	d[0] = delay(txq, park - (base + NP_N * NP_GAP));
	d[0].user_tag = 4001;
	ASSERT_EQ(1, ctx_submit(tx, d, 1));
	while (got < NP_N) {
		int n = ctx_wait(rx, c, 1, NP_N + 1, 20000, rclock);

		ASSERT_LT(0, n);
		for (int i = 0; i < n; i++) {
			if (c[i].queue == (uint32_t)rxq)
				continue;	/* its DELAY */
			ASSERT_EQ((uint32_t)rq, c[i].queue);
			ASSERT_EQ((uint64_t)TX_EP, c[i].user_tag >> 32);
			ASSERT_GT(NP_N, (uint32_t)c[i].user_tag);
			EXPECT_EQ(0, c[i].status);
			rel(&c[i], base);
			nr->rx[(uint32_t)c[i].user_tag] = c[i];
			got++;
		}
	}
	/*
	 * The receiver to the park too: the sender, a receiver as well,
	 * catches up to its clock in its WAIT, which needs the engine there.
	 */
	d[0] = delay(rxq, park - *rclock);
	ASSERT_EQ(1, ctx_submit(rx, d, 1));
	*rclock = park;
	/* Its WRITE, its NOTIFYs, two DELAYs each, the park, the start. */
	while (own < 1 + 3 * NP_N + 2) {
		int n = ctx_wait(tx, c, 1, 4 * NP_N, 20000, tclock);

		ASSERT_LT(0, n);
		for (int i = 0; i < n; i++) {
			EXPECT_EQ(0, c[i].status);
			if (c[i].user_tag < NP_N) {
				rel(&c[i], base);
				nr->tx[c[i].user_tag] = c[i];
			}
			own++;
		}
	}
	EXPECT_EQ(park, *tclock);
	nr->bytes_ok = 1;
	for (unsigned int i = 0; i < NP_N; i += 2) {
		fill(want, SEG, 7 + i);
		nr->bytes_ok &= !memcmp(rmap + i * SEG, want, SEG);
	}
}

TEST_F(rx, notify_writes_take_the_path_as_under_the_lock)
{
	unsigned char *smap, *rmap;
	uint32_t sh, rh;
	uint64_t skey, rkey, rclock = 0, tclock = 0;
	struct nround nr[3];
	int tx, txq, rxq, rq, trq;

	ASSERT_EQ(0, ctx_attach(self->fd, RX_EP));
	rxq = ctx_queue(self->fd, RX_EP, 4);
	rq = ctx_recv_queue(self->fd, RX_EP, NP_N);
	ASSERT_LE(0, rxq);
	ASSERT_LE(0, rq);
	ASSERT_EQ(0, region_map(self->fd, RX_EP, NP_N * SEG,
				ICFAB_ACCESS_REMOTE_WRITE, &rh, &rkey, &rmap));
	tx = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, tx);
	ASSERT_EQ(0, ctx_attach(tx, TX_EP));
	txq = ctx_queue(tx, TX_EP, 4 * NP_N);
	ASSERT_LE(0, txq);
	/* A receiver too: its DELAYs stay under the fabric lock. */
	trq = ctx_recv_queue(tx, TX_EP, 1);
	ASSERT_LE(0, trq);
	/* Each memory WRITE's bytes a pattern of its own, at its offset. */
	ASSERT_EQ(0, region_map(tx, TX_EP, NP_N * SEG, 0, &sh, &skey, &smap));
	for (unsigned int k = 0; k < NP_N; k += 2)
		fill(smap + k * SEG, SEG, 7 + k);

	for (unsigned int i = 0; i < 3; i++)
		notify_round(_metadata, self->fd, rq, rxq, tx, txq, sh, rkey,
			     rmap, i, i == 1, &rclock, &tclock, &nr[i]);
	EXPECT_EQ(0, nr[0].fast);
	EXPECT_EQ(NP_N, nr[1].fast);
	EXPECT_EQ(0, nr[2].fast);
	for (unsigned int r = 0; r < 3; r++)
		EXPECT_TRUE(nr[r].bytes_ok);
	for (unsigned int i = 0; i < NP_N; i++) {
		for (unsigned int r = 1; r < 3; r++) {
			same_cqe(_metadata, &nr[0].tx[i], &nr[r].tx[i]);
			same_cqe(_metadata, &nr[0].rx[i], &nr[r].rx[i]);
		}
		/* The receive completion has the WRITE's times. */
		EXPECT_EQ(nr[1].tx[i].start_ps, nr[1].rx[i].start_ps);
		EXPECT_EQ(nr[1].tx[i].finish_ps, nr[1].rx[i].finish_ps);
		EXPECT_LT(i * NP_GAP, nr[1].tx[i].finish_ps);
	}
	/* Nothing more for either but the receiver's last DELAY. */
	ASSERT_EQ(1, ctx_wait(self->fd, nr[0].tx, 1, 1, 50, NULL));
	EXPECT_EQ((uint32_t)rxq, nr[0].tx[0].queue);
	EXPECT_EQ(-ETIMEDOUT, ctx_wait(self->fd, nr[0].tx, 1, 1, 50, NULL));
	/* A receiver too: it may wait, and nothing comes. */
	EXPECT_EQ(-ETIMEDOUT, ctx_wait(tx, nr[0].tx, 1, 1, 50, NULL));
	EXPECT_EQ(0, ctx_queue_destroy(self->fd, rq));
	close(tx);
}

/*
 * What NOTIFY WRITEs on the WRITE path promise counts as a reservation:
 * against the receive queue's depth, for another context's NOTIFY under
 * the fabric lock (-EAGAIN) and the sender's own; for QUEUE_DESTROY
 * (-EBUSY); and a receiver closed with promises on its queue detaches
 * them as reservations: the sender's WRITEs complete once each, and
 * nothing WARNs (the VM's health check) or leaks.
 */
#define PR_PARK	1000000000ULL	/* ps: the sender computes this long */

static void pr_notify2(struct __test_metadata *_metadata, int tx, int txq,
		       uint32_t tag)
{
	struct icfab_desc d;
	long long n0 = fab_count("fast_notify_writes");

	for (uint32_t i = 0; i < 2; i++) {
		d = desc_notify_put(txq, RX_EP, SEG, tag + i, tag + i);
		ASSERT_EQ(1, ctx_submit(tx, &d, 1));
	}
	/* Both on the path: promised, the sender makes no system call. */
	ASSERT_EQ(2, fab_count("fast_notify_writes") - n0);
}

static void pr_park(struct __test_metadata *_metadata, int tx, int txq,
		    int rx, unsigned int nr)
{
	struct icfab_desc d = delay(txq, PR_PARK);
	struct icfab_cqe c[4];
	unsigned int got = 0;

	d.user_tag = 999;
	ASSERT_EQ(1, ctx_submit(tx, &d, 1));
	while (got < nr) {
		int n = ctx_wait(rx, c, 1, 4, 20000, NULL);

		ASSERT_LT(0, n);
		got += n;
	}
	ASSERT_EQ(nr, got);
}

TEST_F(rx, notify_promises_count_as_reservations)
{
	struct icfab_cqe c[16];
	unsigned int seen[16] = { 0 }, got = 0;
	struct icfab_desc d, two[2];
	int rx, rq, tx, txq, t3, t3q;

	rx = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, rx);
	ASSERT_EQ(0, ctx_attach(rx, RX_EP));
	rq = ctx_recv_queue(rx, RX_EP, 2);
	ASSERT_LE(0, rq);
	tx = self->fd;
	ASSERT_EQ(0, ctx_attach(tx, TX_EP));
	txq = ctx_queue(tx, TX_EP, 16);
	ASSERT_LE(0, txq);
	t3 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, t3);
	ASSERT_EQ(0, ctx_attach(t3, 2));
	t3q = ctx_queue(t3, 2, 4);
	ASSERT_LE(0, t3q);
	/* Far ahead: it never holds the engine where the others run. */
	d = delay(t3q, 1000 * PR_PARK);
	ASSERT_EQ(1, ctx_submit(t3, &d, 1));
	/* A WRITE in flight: the chunk it ends gives credit. */
	d = desc_put(txq, OTHER_EP, SEG, 15);
	ASSERT_EQ(1, ctx_submit(tx, &d, 1));

	/* Two promised fill depth 2: a third, anyone's, waits. */
	pr_notify2(_metadata, tx, txq, 0);
	d = desc_notify_put(t3q, RX_EP, SEG, 0, 0);
	EXPECT_EQ(-EAGAIN, ctx_submit(t3, &d, 1));
	d = desc_notify_put(txq, RX_EP, SEG, 2, 2);
	EXPECT_EQ(-EAGAIN, ctx_submit(tx, &d, 1));
	pr_park(_metadata, tx, txq, rx, 2);

	/* Promised, not started: the receive queue is busy. */
	pr_notify2(_metadata, tx, txq, 3);
	EXPECT_EQ(-EBUSY, ctx_queue_destroy(rx, rq));
	/* ... and stays, open to the path: two more after these. */
	pr_park(_metadata, tx, txq, rx, 2);
	pr_notify2(_metadata, tx, txq, 5);

	/* The receiver goes with both promised. */
	close(rx);
	d = desc_notify_put(t3q, RX_EP, SEG, 0, 0);
	EXPECT_EQ(-ENOTCONN, ctx_submit(t3, &d, 1));
	d = delay(txq, PR_PARK);
	d.user_tag = 999;
	ASSERT_EQ(1, ctx_submit(tx, &d, 1));
	/* The sender's: its WRITE, six NOTIFYs, three parks, once each. */
	while (got < 10) {
		int n = ctx_wait(tx, c + got, 1, 16 - got, 20000, NULL);

		ASSERT_LT(0, n);
		got += n;
	}
	for (unsigned int i = 0; i < got; i++) {
		EXPECT_EQ(0, c[i].status);
		if (c[i].user_tag == 999)
			continue;
		ASSERT_GT(16, c[i].user_tag);
		seen[c[i].user_tag]++;
	}
	EXPECT_EQ(1, seen[15]);
	for (unsigned int i = 0; i < 7; i++)
		EXPECT_EQ(i == 2 ? 0 : 1, seen[i]);
	/* Nothing left in flight, nothing more to come. */
	EXPECT_EQ(-EDEADLK, ctx_wait(tx, c, 1, 1, 50, NULL));

	/* A chunk's NOTIFY to nobody: the one before it taken, its error. */
	rx = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, rx);
	ASSERT_EQ(0, ctx_attach(rx, RX_EP));
	ASSERT_LE(0, ctx_recv_queue(rx, RX_EP, 2));
	two[0] = desc_notify_put(txq, RX_EP, SEG, 7, 7);
	two[1] = desc_notify_put(txq, 3, SEG, 8, 8);
	EXPECT_EQ(1, ctx_submit(tx, two, 2));
	EXPECT_EQ(-ENOTCONN, ctx_submit(tx, &two[1], 1));
	close(rx);
	close(t3);
}

TEST_HARNESS_MAIN
