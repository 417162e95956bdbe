// SPDX-License-Identifier: GPL-2.0
/*
 * The completion ring (ICFAB_F_CQ_RING): ICFAB_IOC_CQ_SETUP, mmap() at
 * ICFAB_CQ_MMAP_OFFSET, ICFAB_IOC_SUBMIT with ICFAB_SUBMIT_F_CQ,
 * ICFAB_UCMD_SUBMIT_BATCH and ICFAB_IOC_CQ_WAIT. The ring receives the
 * completions; a full ring loses none (they go to the WAIT list); the
 * timing is the same whether descriptors go one by one or in one batch,
 * to the ring or the list, whatever the ring's size; bad input gets a
 * clear error and changes nothing; a context maps only its own ring; a
 * close with a mapped ring and completions in flight is clean.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>

#include "fabric_util.h"
#include "kselftest_harness.h"
#include "uring_util.h"

#define NR	150		/* more than two of the kernel's chunks */
#define DEPTH	256

/* Everything in the ring, in order, to @out; the count. */
static unsigned int cq_drain(struct cq_map *m, struct icfab_cqe *out)
{
	uint32_t head = m->r->head;
	uint32_t tail = __atomic_load_n(&m->r->tail, __ATOMIC_ACQUIRE);
	unsigned int n = 0;

	for (; head != tail; head++)
		out[n++] = m->cqes[head & m->r->mask];
	__atomic_store_n(&m->r->head, head, __ATOMIC_RELEASE);
	return n;
}

static int cq_wait(int fd, uint32_t min, uint32_t *ready, uint64_t *clock)
{
	struct icfab_cq_wait w = { .min = min, .timeout_ms = 20000 };

	if (ioctl(fd, ICFAB_IOC_CQ_WAIT, &w))
		return -errno;
	if (ready)
		*ready = w.ready;
	if (clock)
		*clock = w.clock_ps;
	return 0;
}

/*
 * A mix over two queues: WRITEs of several sizes to three peers, DELAYs
 * and FENCEs, whose timing depends on the order and the context's clock.
 */
static void scenario(struct icfab_desc *d, uint32_t q0, uint32_t q1)
{
	for (unsigned int i = 0; i < NR; i++) {
		uint32_t q = i % 3 ? q0 : q1;

		if (i % 17 == 5)
			d[i] = (struct icfab_desc){ .op = ICFAB_OP_DELAY,
				.queue = q, .len = 3000 + i, .user_tag = i };
		else if (i % 29 == 11)
			d[i] = (struct icfab_desc){ .op = ICFAB_OP_FENCE,
				.queue = q, .user_tag = i };
		else
			d[i] = desc_put(q, 1 + i % 3, 4096 * (1 + i % 5), i);
	}
}

enum mode { SINGLES, BATCH_CQ, BATCH_CQ_TINY, URING_BATCH };

/* Run the scenario in a fresh context by @mode; its completions by tag. */
static int run(enum mode mode, struct icfab_cqe *by_tag, uint32_t *overflow)
{
	static struct icfab_desc d[NR];
	static struct icfab_cqe got[NR * 2];
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	struct cq_map m = { 0 };
	unsigned int n = 0, i;
	int q0, q1, ret = -1;

	if (fd < 0)
		return -100;
	if (ctx_attach(fd, 0) || (q0 = ctx_queue(fd, 0, DEPTH)) < 0 ||
	    (q1 = ctx_queue(fd, 0, DEPTH)) < 0)
		goto out;
	scenario(d, q0, q1);
	if (mode != SINGLES &&
	    cq_setup(fd, mode == BATCH_CQ_TINY ? 2 : 256, &m) < 0)
		goto out;

	switch (mode) {
	case SINGLES:
		for (i = 0; i < NR; i++)
			if (ctx_submit(fd, &d[i], 1) != 1)
				goto out;
		break;
	case BATCH_CQ:
	case BATCH_CQ_TINY:
		if (ctx_submit_flags(fd, d, NR, ICFAB_SUBMIT_F_CQ) != NR)
			goto out;
		break;
	case URING_BATCH: {
		struct icfab_uring_batch b = { .descs = (uintptr_t)d,
			.nr = NR, .flags = ICFAB_SUBMIT_F_CQ };
		struct io_uring ring;
		struct io_uring_cqe *c;
		int res;

		if (io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 |
					IORING_SETUP_CQE32))
			goto out;
		ucmd(&ring, fd, ICFAB_UCMD_SUBMIT_BATCH, &b, 7);
		res = io_uring_submit_and_wait(&ring, 1) == 1 &&
		      !io_uring_wait_cqe(&ring, &c) && c->user_data == 7 ?
		      c->res : -1000;
		io_uring_cq_advance(&ring, 1);
		io_uring_queue_exit(&ring);
		if (res != NR) {
			ret = res < 0 ? res : -101;
			goto out;
		}
		break;
	}
	}

	if (mode == SINGLES) {
		if (ctx_wait(fd, got, NR, NR * 2, 20000, NULL) != NR)
			goto out;
		n = NR;
	} else {
		uint32_t ready = 0;
		int w;

		if (cq_wait(fd, NR, &ready, NULL) || ready != NR)
			goto out;
		n = cq_drain(&m, got);
		w = ctx_wait(fd, got + n, 0, NR * 2, 0, NULL);
		if (w < 0)
			goto out;
		n += w;
		if (overflow)
			*overflow = m.r->overflow;
	}
	if (n != NR)
		goto out;
	memset(by_tag, 0xff, NR * sizeof(*by_tag));
	for (i = 0; i < n; i++) {
		if (got[i].user_tag >= NR ||
		    by_tag[got[i].user_tag].user_tag != ~0ULL)
			goto out;
		by_tag[got[i].user_tag] = got[i];
	}
	ret = 0;
out:
	if (m.r)
		munmap(m.r, m.size);
	close(fd);
	return ret;
}

FIXTURE(cqr) {
	struct genl_sock gs;
	int fd;
	int q;
};

FIXTURE_SETUP(cqr)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	self->q = ctx_queue(self->fd, 0, DEPTH);
	ASSERT_LE(0, self->q);
}

FIXTURE_TEARDOWN(cqr)
{
	close(self->fd);
	fabric_close(&self->gs);
}

TEST_F(cqr, info_announces_cq_ring)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &in));
	EXPECT_TRUE(in.features & ICFAB_F_CQ_RING);
}

TEST_F(cqr, ring_receives_completions)
{
	struct icfab_desc d[16];
	struct icfab_cqe got[32];
	struct cq_map m;
	uint64_t clock = 0, last = 0;
	uint32_t ready = 0;

	ASSERT_EQ(64, cq_setup(self->fd, 40, &m));
	EXPECT_EQ(64, m.r->entries);
	EXPECT_EQ(63, m.r->mask);
	for (unsigned int i = 0; i < 16; i++)
		d[i] = desc_put(self->q, 3, 65536, 100 + i);
	ASSERT_EQ(16, ctx_submit_flags(self->fd, d, 16, ICFAB_SUBMIT_F_CQ));
	ASSERT_EQ(0, cq_wait(self->fd, 16, &ready, &clock));
	EXPECT_EQ(16, ready);
	ASSERT_EQ(16, cq_drain(&m, got));
	for (unsigned int i = 0; i < 16; i++) {
		EXPECT_EQ(100 + i, got[i].user_tag);
		EXPECT_EQ(0, got[i].status);
		EXPECT_EQ(self->q, got[i].queue);
		EXPECT_LE(last, got[i].finish_ps);
		last = got[i].finish_ps;
	}
	EXPECT_EQ(last, clock);
	EXPECT_EQ(0, m.r->overflow);
	/* Nothing on the WAIT list, nothing left in flight. */
	EXPECT_EQ(0, ctx_wait(self->fd, got, 0, 32, 0, NULL));
	EXPECT_EQ(-EDEADLK, cq_wait(self->fd, 1, NULL, NULL));
	/* Reaped: the queue's whole depth is free again. */
	for (unsigned int round = 0; round < 20; round++) {
		ASSERT_EQ(16, ctx_submit_flags(self->fd, d, 16,
					       ICFAB_SUBMIT_F_CQ));
		ASSERT_EQ(0, cq_wait(self->fd, 16, &ready, NULL));
		ASSERT_EQ(16, cq_drain(&m, got));
	}
	munmap(m.r, m.size);
}

TEST_F(cqr, overflow_loses_none)
{
	struct icfab_desc d[40];
	struct icfab_cqe got[80];
	struct cq_map m;
	unsigned int n, seen = 0;
	uint32_t ready = 0;
	int w;

	ASSERT_EQ(4, cq_setup(self->fd, 3, &m));
	for (unsigned int i = 0; i < 40; i++)
		d[i] = desc_put(self->q, 2, 8192, i);
	ASSERT_EQ(40, ctx_submit_flags(self->fd, d, 40, ICFAB_SUBMIT_F_CQ));
	ASSERT_EQ(0, cq_wait(self->fd, 40, &ready, NULL));
	EXPECT_EQ(40, ready);
	EXPECT_EQ(36, m.r->overflow);
	n = cq_drain(&m, got);
	EXPECT_EQ(4, n);
	w = ctx_wait(self->fd, got + n, 0, 80, 0, NULL);
	ASSERT_EQ(36, w);
	for (unsigned int i = 0; i < n + w; i++) {
		ASSERT_GT(40, got[i].user_tag);
		seen++;
	}
	EXPECT_EQ(40, seen);
	/* Each tag once. */
	for (unsigned int t = 0; t < 40; t++) {
		unsigned int c = 0;

		for (unsigned int i = 0; i < n + w; i++)
			c += got[i].user_tag == t;
		EXPECT_EQ(1, c);
	}
	munmap(m.r, m.size);
}

/* A head that is garbage makes the ring full, never anything worse. */
TEST_F(cqr, garbage_head_is_full_ring)
{
	struct icfab_desc d[8];
	struct icfab_cqe got[16];
	struct cq_map m;
	uint32_t ready = 0;

	ASSERT_EQ(8, cq_setup(self->fd, 8, &m));
	m.r->head = 0x80000000u;
	m.r->tail = 12345;	/* ignored: the kernel keeps its own */
	for (unsigned int i = 0; i < 8; i++)
		d[i] = desc_put(self->q, 1, 4096, i);
	ASSERT_EQ(8, ctx_submit_flags(self->fd, d, 8, ICFAB_SUBMIT_F_CQ));
	/* "Full" counts 8 ready: waiting for 16 waits for the 8 real ones. */
	ASSERT_EQ(0, cq_wait(self->fd, 16, &ready, NULL));
	EXPECT_EQ(16, ready);
	EXPECT_EQ(8, m.r->overflow);
	EXPECT_EQ(8, ctx_wait(self->fd, got, 0, 16, 0, NULL));
	munmap(m.r, m.size);
}

/*
 * Emulated time does not depend on how descriptors are submitted or
 * where their completions go: one by one to the WAIT list, in one
 * batch to a ring, to a ring of two, or in one io_uring command.
 */
TEST(batch_equals_singles)
{
	static struct icfab_cqe a[NR], b[NR], c[NR], u[NR];
	struct genl_sock gs;
	uint32_t ovf = 0;

	ASSERT_EQ(0, ring_fabric_open(&gs, 8));
	ASSERT_EQ(0, run(SINGLES, a, NULL));
	ASSERT_EQ(0, run(BATCH_CQ, b, &ovf));
	EXPECT_EQ(0, ovf);
	ASSERT_EQ(0, run(BATCH_CQ_TINY, c, &ovf));
	EXPECT_LT(0, ovf);
	ASSERT_EQ(0, run(URING_BATCH, u, NULL));
	fabric_close(&gs);
	for (unsigned int i = 0; i < NR; i++) {
		EXPECT_EQ(0, a[i].status);
		EXPECT_LT(0, a[i].finish_ps);
		EXPECT_EQ(0, memcmp(&a[i], &b[i], sizeof(a[i])))
			TH_LOG("tag %u: finish %llu vs %llu", i,
			       (unsigned long long)a[i].finish_ps,
			       (unsigned long long)b[i].finish_ps);
		EXPECT_EQ(0, memcmp(&a[i], &c[i], sizeof(a[i])));
		EXPECT_EQ(0, memcmp(&a[i], &u[i], sizeof(a[i])));
	}
}

TEST_F(cqr, bad_inputs)
{
	struct icfab_cq_setup cs = { .entries = 8 };
	struct icfab_cq_wait w = { .min = 0 };
	struct icfab_desc d = desc_put(self->q, 1, 4096, 1);
	struct icfab_cqe got[4];
	struct cq_map m;
	void *p;

	/* No ring yet. */
	EXPECT_EQ(-ENXIO, ctx_submit_flags(self->fd, &d, 1,
					   ICFAB_SUBMIT_F_CQ));
	EXPECT_EQ(-ENXIO, cq_wait(self->fd, 0, NULL, NULL));
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);
	EXPECT_EQ(-EINVAL, ctx_submit_flags(self->fd, &d, 1, 1u << 5));

	cs.entries = 0;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_SETUP, &cs));
	EXPECT_EQ(EINVAL, errno);
	cs.entries = ICFAB_CQ_MAX_ENTRIES + 1;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_SETUP, &cs));
	EXPECT_EQ(EINVAL, errno);
	cs = (struct icfab_cq_setup){ .entries = 8, .flags = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_SETUP, &cs));
	EXPECT_EQ(EINVAL, errno);
	cs = (struct icfab_cq_setup){ .entries = 8, .reserved = { 0, 1 } };
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_SETUP, &cs));
	EXPECT_EQ(EINVAL, errno);
	cs = (struct icfab_cq_setup){ .entries = 8, .mmap_size = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_SETUP, &cs));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_SETUP, (void *)8));
	EXPECT_EQ(EFAULT, errno);

	/* Still none: every refusal changed nothing. */
	EXPECT_EQ(-ENXIO, cq_wait(self->fd, 0, NULL, NULL));
	ASSERT_EQ(8, cq_setup(self->fd, 8, &m));
	cs = (struct icfab_cq_setup){ .entries = 8 };
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_SETUP, &cs));
	EXPECT_EQ(EBUSY, errno);

	/* mmap: shared only, from the start, no further than the end. */
	p = mmap(NULL, m.size, PROT_READ, MAP_PRIVATE, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, m.size + 4096, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, 4096);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);

	/* CQ_WAIT: output and reserved fields zero, and nothing to wait for. */
	w = (struct icfab_cq_wait){ .flags = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	w = (struct icfab_cq_wait){ .ready = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	w = (struct icfab_cq_wait){ .reserved = { 1 } };
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CQ_WAIT, (void *)8));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-EDEADLK, cq_wait(self->fd, 1, NULL, NULL));

	/* A bad descriptor first: nothing submitted, nothing posted. */
	d.pad = 1;
	EXPECT_EQ(-EINVAL, ctx_submit_flags(self->fd, &d, 1,
					    ICFAB_SUBMIT_F_CQ));
	EXPECT_EQ(-EFAULT, ctx_submit_flags(self->fd, (void *)8, 1,
					    ICFAB_SUBMIT_F_CQ));
	EXPECT_EQ(-EDEADLK, cq_wait(self->fd, 1, NULL, NULL));
	EXPECT_EQ(0, cq_drain(&m, got));
	EXPECT_EQ(0, m.r->tail);
	munmap(m.r, m.size);
}

TEST_F(cqr, uring_batch_rules)
{
	struct icfab_uring_batch b = { .nr = 1 };
	struct icfab_desc d = desc_put(self->q, 1, 4096, 9);
	struct io_uring ring;
	struct io_uring_cqe *c;
	struct icfab_cqe got[2];
	struct cq_map m;
	int res[4];

	ASSERT_EQ(0, io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 |
					 IORING_SETUP_CQE32));
	b.descs = (uintptr_t)&d;
	/* Without the flag, with reserved set, and without a ring. */
	ucmd(&ring, self->fd, ICFAB_UCMD_SUBMIT_BATCH, &b, 0);
	b.flags = ICFAB_SUBMIT_F_CQ;
	b.reserved[7] = 1;
	ucmd(&ring, self->fd, ICFAB_UCMD_SUBMIT_BATCH, &b, 1);
	b.reserved[7] = 0;
	ucmd(&ring, self->fd, ICFAB_UCMD_SUBMIT_BATCH, &b, 2);
	ASSERT_EQ(3, io_uring_submit_and_wait(&ring, 3));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &c));
		res[c->user_data] = c->res;
		io_uring_cq_advance(&ring, 1);
	}
	EXPECT_EQ(-EINVAL, res[0]);
	EXPECT_EQ(-EINVAL, res[1]);
	EXPECT_EQ(-ENXIO, res[2]);

	ASSERT_EQ(2, cq_setup(self->fd, 2, &m));
	b.descs = 8;
	ucmd(&ring, self->fd, ICFAB_UCMD_SUBMIT_BATCH, &b, 0);
	b.descs = (uintptr_t)&d;
	ucmd(&ring, self->fd, ICFAB_UCMD_SUBMIT_BATCH, &b, 1);
	ASSERT_EQ(2, io_uring_submit_and_wait(&ring, 2));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &c));
		res[c->user_data] = c->res;
		io_uring_cq_advance(&ring, 1);
	}
	EXPECT_EQ(-EFAULT, res[0]);
	EXPECT_EQ(1, res[1]);
	ASSERT_EQ(0, cq_wait(self->fd, 1, NULL, NULL));
	ASSERT_EQ(1, cq_drain(&m, got));
	EXPECT_EQ(9, got[0].user_tag);
	io_uring_queue_exit(&ring);
	munmap(m.r, m.size);
}

static int map_other(void *arg)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	void *p;

	(void)arg;
	if (fd < 0)
		return 1;
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED || errno != ENXIO)
		return 2;
	close(fd);
	return 0;
}

/* A context maps its own ring: another, or another user, gets -ENXIO. */
TEST_F(cqr, others_cannot_map_it)
{
	int other = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	struct cq_map m;
	void *p;

	ASSERT_LE(0, other);
	ASSERT_EQ(8, cq_setup(self->fd, 8, &m));
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, other, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);
	EXPECT_EQ(0, map_other(NULL));
	EXPECT_EQ(0, as_user(65534, map_other, NULL));
	close(other);
	munmap(m.r, m.size);
}

/*
 * Teardown: closed with the ring mapped and completions in flight (the
 * mapping keeps the context until munmap), or unmapped first; a fork
 * shares the mapping. None of it may leak or warn.
 */
TEST_F(cqr, close_with_mapped_ring_in_flight)
{
	struct icfab_desc d[DEPTH];
	struct cq_map m;
	int fd, q, status;

	for (int round = 0; round < 3; round++) {
		fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ctx_attach(fd, 1));
		q = ctx_queue(fd, 1, DEPTH);
		ASSERT_LE(0, q);
		ASSERT_EQ(16, cq_setup(fd, 16, &m));
		for (int i = 0; i < DEPTH; i++)
			d[i] = desc_put(q, 5, 1 << 20, i);
		ASSERT_EQ(DEPTH, ctx_submit_flags(fd, d, DEPTH,
						  ICFAB_SUBMIT_F_CQ));
		if (round == 1) {
			pid_t pid = fork();

			ASSERT_LE(0, pid);
			if (!pid)
				_exit(m.r->entries == 16 ? 0 : 1);
			ASSERT_EQ(pid, waitpid(pid, &status, 0));
			EXPECT_EQ(0, status);
		}
		if (round == 2)
			munmap(m.r, m.size);
		close(fd);
		if (round != 2) {
			/* Still mapped, still readable. */
			EXPECT_EQ(16, m.r->entries);
			munmap(m.r, m.size);
		}
	}
	/* The fixture's context still works. */
	fd = self->fd;
	d[0] = desc_put(self->q, 1, 4096, 1);
	EXPECT_EQ(1, ctx_submit(fd, d, 1));
}

TEST_HARNESS_MAIN
