// SPDX-License-Identifier: GPL-2.0
/*
 * Byte-moving WRITE and READ between regions, and FENCE: data integrity
 * for odd sizes, offsets and page crossings over many segments; the
 * descriptor checks and their errnos; regions freed under a transfer;
 * FENCE ordering in exact virtual time; keys exchanged between processes;
 * one process on many endpoints; determinism with a CPU hog beside it;
 * memory WRITEs and READs on the WRITE path, off the fabric lock: their
 * bytes and times, their errors, and a REGION_FREE racing the WRITEs;
 * timing-only READs on it too, beside them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
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
#include "kselftest_harness.h"

#define BW	50000000000ULL		/* bytes/s, stage_ring's links */
#define LAT	500000ULL		/* ps, stage_ring's links */
#define SEG	4096ULL			/* bytes, the default segment size */
#define PAGE	4096ULL
#define RSIZE	(20 * PAGE)		/* bytes, the fixture's regions */




/* One descriptor, submitted and reaped; its status, or -errno. */
static int one(int fd, struct icfab_desc d, struct icfab_cqe *c)
{
	int ret = ctx_submit(fd, &d, 1);

	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	if (ctx_wait(fd, c, 1, 1, 0, NULL) != 1)
		return -EIO;
	return c->status;
}

/*
 * @d[0..@n-1] on queue @q one at a time, user_tag i + 1: the first
 * behind a FENCE (so under the fabric lock, a reference), the rest each
 * a SUBMIT and its WAIT (on the path). Each completes with status 0,
 * longer than 3 segments' uncontended time over three hops, and every
 * one after the first with the first's times, submitted at the finish
 * the previous WAIT returned at. Their completions in @c.
 */
static void fenced_first_then_alike(struct __test_metadata *_metadata,
				    int fd, uint32_t q,
				    const struct icfab_desc *d,
				    struct icfab_cqe *c, int n)
{
	for (int i = 0; i < n; i++) {
		struct icfab_desc fenced[2] = {
			{ .op = ICFAB_OP_FENCE, .queue = q }, d[i],
		};
		struct icfab_cqe cf[2];

		if (i) {
			ASSERT_EQ(0, one(fd, d[i], &c[i]));
		} else {
			ASSERT_EQ(2, ctx_submit(fd, fenced, 2));
			ASSERT_EQ(2, ctx_wait(fd, cf, 2, 2, 0, NULL));
			ASSERT_EQ(0, cf[1].status);
			c[0] = cf[1];
		}
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(i + 1, c[i].user_tag);
		EXPECT_LT(ring_uncontended(3 * SEG, 3),
			  c[i].finish_ps - c[i].start_ps);
		if (!i)
			continue;
		/* As the first, under the lock, from the clock it left. */
		EXPECT_EQ(c[0].finish_ps - c[0].start_ps,
			  c[i].finish_ps - c[i].start_ps);
		EXPECT_EQ(c[0].start_ps - c[0].submit_ps,
			  c[i].start_ps - c[i].submit_ps);
		EXPECT_EQ(c[0].queued_ps, c[i].queued_ps);
		EXPECT_EQ(c[i - 1].finish_ps, c[i].submit_ps);
	}
}

FIXTURE(dm) {
	struct genl_sock gs;
	int fd, q;
	uint32_t a, b;			/* on endpoints 0 and 3 */
	uint64_t akey, bkey;
	unsigned char *am, *bm;
};

FIXTURE_SETUP(dm)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, ctx_attach(self->fd, 3));
	self->q = ctx_queue(self->fd, 0, 16);
	ASSERT_LE(0, self->q);
	ASSERT_EQ(0, region_map(self->fd, 0, RSIZE, ICFAB_ACCESS_ALL, &self->a,
				&self->akey, &self->am));
	ASSERT_EQ(0, region_map(self->fd, 3, RSIZE, ICFAB_ACCESS_ALL, &self->b,
				&self->bkey, &self->bm));
}

FIXTURE_TEARDOWN(dm)
{
	if (self->am)
		munmap(self->am, RSIZE);
	if (self->bm)
		munmap(self->bm, RSIZE);
	if (self->fd >= 0)
		close(self->fd);
	fabric_close(&self->gs);
}

static const uint64_t sizes[] = { 1, 7, 4095, 4096, 4097, 12289, 65537 };
static const uint64_t offs[][2] = { { 0, 0 }, { 1, 4095 }, { 4095, 1 },
				    { 123, 8191 } };

TEST_F(dm, write_moves_exactly_the_bytes)
{
	struct icfab_cqe c;
	unsigned int seed = 1;

	for (unsigned int s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (unsigned int o = 0; o < 4; o++) {
			uint64_t len = sizes[s], lo = offs[o][0],
				 ro = offs[o][1];

			fill(self->am, RSIZE, seed++);
			memset(self->bm, 0, RSIZE);
			ASSERT_EQ(0, one(self->fd, mv(ICFAB_OP_WRITE, self->q,
						      self->a, lo, self->bkey,
						      ro, len, s), &c));
			EXPECT_EQ(s, c.user_tag);
			EXPECT_GT(c.finish_ps, c.start_ps);
			for (uint64_t i = 0; i < RSIZE; i++) {
				unsigned char want = i >= ro && i < ro + len ?
					self->am[lo + i - ro] : 0;

				ASSERT_EQ(want, self->bm[i]) {
					TH_LOG("len %llu lo %llu ro %llu at %llu",
					       (unsigned long long)len,
					       (unsigned long long)lo,
					       (unsigned long long)ro,
					       (unsigned long long)i);
				}
			}
		}
	}
}

TEST_F(dm, read_moves_exactly_the_bytes)
{
	struct icfab_cqe c;
	unsigned int seed = 100;

	for (unsigned int s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (unsigned int o = 0; o < 4; o++) {
			uint64_t len = sizes[s], lo = offs[o][0],
				 ro = offs[o][1];

			fill(self->bm, RSIZE, seed++);
			memset(self->am, 0, RSIZE);
			ASSERT_EQ(0, one(self->fd, mv(ICFAB_OP_READ, self->q,
						      self->a, lo, self->bkey,
						      ro, len, s), &c));
			for (uint64_t i = 0; i < RSIZE; i++) {
				unsigned char want = i >= lo && i < lo + len ?
					self->bm[ro + i - lo] : 0;

				ASSERT_EQ(want, self->am[i]);
			}
		}
	}
}

TEST_F(dm, a_transfer_takes_the_time_of_its_bytes)
{
	struct icfab_cqe c, t;

	/* Endpoint 0 to 3 is 3 hops; bytes or timing only, the same time. */
	ASSERT_EQ(0, one(self->fd, mv(ICFAB_OP_WRITE, self->q, self->a, 0,
				      self->bkey, 0, 8 * SEG, 1), &c));
	EXPECT_EQ(ring_uncontended(8 * SEG, 3), c.finish_ps - c.start_ps);
	ASSERT_EQ(0, one(self->fd, desc_put(self->q, 3, 8 * SEG, 2), &t));
	EXPECT_EQ(c.finish_ps - c.start_ps, t.finish_ps - t.start_ps);
	/* The peer may be named, if it is the region's endpoint. */
	c.status = 1;
	{
		struct icfab_desc d = mv(ICFAB_OP_READ, self->q, self->a, 0,
					 self->bkey, 0, 8 * SEG, 3);

		d.peer = 3;
		ASSERT_EQ(0, one(self->fd, d, &c));
	}
	EXPECT_EQ(ring_uncontended(8 * SEG, 3), c.finish_ps - c.start_ps);
}

TEST_F(dm, bad_descriptors_are_refused_with_their_errno)
{
	uint32_t ro, c3;
	uint64_t rokey, c3key;
	unsigned char *rom, *c3m;
	struct icfab_desc d;

	ASSERT_EQ(0, region_map(self->fd, 3, PAGE, ICFAB_ACCESS_REMOTE_READ,
				&ro, &rokey, &rom));
	ASSERT_EQ(0, region_map(self->fd, 3, PAGE, 0, &c3, &c3key, &c3m));

	d = mv(ICFAB_OP_WRITE, self->q, 0, 0, self->bkey, 0, 8, 0);
	EXPECT_EQ(-EBADF, ctx_submit(self->fd, &d, 1));
	d.region = 999;
	EXPECT_EQ(-EBADF, ctx_submit(self->fd, &d, 1));

	d = mv(ICFAB_OP_WRITE, self->q, self->a, 0, 0, 0, 8, 0);
	EXPECT_EQ(-EACCES, ctx_submit(self->fd, &d, 1));
	d.rkey = self->bkey ^ 0x100;
	EXPECT_EQ(-EACCES, ctx_submit(self->fd, &d, 1));
	d.rkey = rokey;		/* read-only */
	EXPECT_EQ(-EACCES, ctx_submit(self->fd, &d, 1));
	d.op = ICFAB_OP_READ;
	d.user_tag = 5;
	EXPECT_EQ(1, ctx_submit(self->fd, &d, 1));

	d = mv(ICFAB_OP_WRITE, self->q, self->a, RSIZE - 7, self->bkey, 0, 8, 0);
	EXPECT_EQ(-ERANGE, ctx_submit(self->fd, &d, 1));
	d = mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey, RSIZE, 1, 0);
	EXPECT_EQ(-ERANGE, ctx_submit(self->fd, &d, 1));
	d = mv(ICFAB_OP_WRITE, self->q, self->a, ~0ULL, self->bkey, 0, 2, 0);
	EXPECT_EQ(-ERANGE, ctx_submit(self->fd, &d, 1));
	d = mv(ICFAB_OP_READ, self->q, self->a, 0, self->bkey, 8, ~0ULL, 0);
	EXPECT_EQ(-ERANGE, ctx_submit(self->fd, &d, 1));

	/* The peer, when named, must be the remote region's endpoint. */
	d = mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey, 0, 8, 0);
	d.peer = 5;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	/* The local region must be on the queue's endpoint. */
	d = mv(ICFAB_OP_WRITE, self->q, self->b, 0, self->akey, 0, 8, 0);
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey, 0, 8, 0);
	d.circuit = 1;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d.circuit = 0;
	d.pad = 1;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));

	/* A batch stops at the first bad one. */
	do {
		struct icfab_desc two[3] = {
			mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey, 0,
			   8, 6),
			mv(ICFAB_OP_WRITE, self->q, self->a, 0, 0, 0, 8, 7),
			mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey, 0,
			   8, 8),
		};
		struct icfab_cqe c[4];

		EXPECT_EQ(1, ctx_submit(self->fd, two, 3));
		/* Only the good READ and this first one were accepted. */
		ASSERT_EQ(2, ctx_wait(self->fd, c, 2, 4, 0, NULL));
		EXPECT_EQ(11, c[0].user_tag + c[1].user_tag);
		EXPECT_EQ(-EDEADLK, ctx_wait(self->fd, c, 1, 4, 0, NULL));
	} while (0);
	munmap(rom, PAGE);
	munmap(c3m, PAGE);
}

TEST_F(dm, regions_freed_under_a_transfer_complete_it_unharmed)
{
	struct icfab_desc d[2];
	struct icfab_cqe c[2];

	fill(self->am, RSIZE, 7);
	memset(self->bm, 0, RSIZE);
	d[0] = mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey, 0, RSIZE, 1);
	d[1] = mv(ICFAB_OP_WRITE, self->q, self->a, 5, self->bkey, 3, 100, 2);
	ASSERT_EQ(2, ctx_submit(self->fd, d, 2));
	ASSERT_EQ(0, ctx_region_free(self->fd, self->a));
	ASSERT_EQ(0, ctx_region_free(self->fd, self->b));
	/* New descriptors can no longer name them... */
	EXPECT_EQ(-EBADF, ctx_submit(self->fd, d, 1));
	d[0].region = 0;
	/* ...but those in flight complete, and the bytes arrive. */
	ASSERT_EQ(2, ctx_wait(self->fd, c, 2, 2, 0, NULL));
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(0, c[1].status);
	for (uint64_t i = 0; i < RSIZE; i++) {
		unsigned char want = i >= 3 && i < 103 ? self->am[i + 2] :
						       self->am[i];

		ASSERT_EQ(want, self->bm[i]);
	}
}

TEST_F(dm, closing_with_copies_in_flight)
{
	struct icfab_desc d[8];

	for (int i = 0; i < 8; i++)
		d[i] = mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey, 0,
			  RSIZE, i);
	ASSERT_EQ(8, ctx_submit(self->fd, d, 8));
	ASSERT_EQ(0, ctx_region_free(self->fd, self->b));
	close(self->fd);
	self->fd = -1;
	/* The runner checks that nothing leaked or hung. */
}

/*
 * Memory WRITEs go off the fabric lock (fast_mem_writes counts them;
 * fast_writes too), and land as they do under it: the same bytes, and
 * the same emulated times, each WRITE submitted at the finish its WAIT
 * returned at and taking the time of its bytes. The first goes under the
 * fabric lock behind a FENCE (which takes its chunk there and moves
 * nothing on an empty queue), for the times to compare with. A batch
 * mixing them with timing-only WRITEs goes the path whole.
 */
TEST_F(dm, memory_writes_go_off_the_fabric_lock_as_under_it)
{
	enum { N = 6, LEN = 3 * SEG + 5 };
	long long m = fab_count("fast_mem_writes");
	long long w = fab_count("fast_writes");
	struct icfab_desc mix[3], dw[N];
	struct icfab_cqe c[N], cm[3];

	ASSERT_LE(0, m);
	ASSERT_LE(0, w);
	fill(self->am, RSIZE, 11);
	memset(self->bm, 0, RSIZE);
	for (int i = 0; i < N; i++)
		dw[i] = mv(ICFAB_OP_WRITE, self->q, self->a, i * 7, self->bkey,
			   i * LEN, LEN, i + 1);
	fenced_first_then_alike(_metadata, self->fd, self->q, dw, c, N);
	/* The first under the fabric lock, then the path. */
	EXPECT_EQ(m + N - 1, fab_count("fast_mem_writes"));
	EXPECT_EQ(w + N - 1, fab_count("fast_writes"));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, memcmp(self->bm + i * LEN, self->am + i * 7,
				    LEN)) {
			TH_LOG("WRITE %d", i);
		}
	}

	mix[0] = mv(ICFAB_OP_WRITE, self->q, self->a, 1, self->bkey,
		    N * LEN, 100, 21);
	mix[1] = desc_put(self->q, 3, 100, 22);
	mix[2] = mv(ICFAB_OP_WRITE, self->q, self->a, 2, self->bkey,
		    N * LEN + 100, 100, 23);
	ASSERT_EQ(3, ctx_submit(self->fd, mix, 3));
	EXPECT_EQ(m + N + 1, fab_count("fast_mem_writes"));
	EXPECT_EQ(w + N + 2, fab_count("fast_writes"));
	ASSERT_EQ(3, ctx_wait(self->fd, cm, 3, 3, 0, NULL));
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(0, cm[i].status);
		EXPECT_EQ(c[N - 1].finish_ps, cm[i].submit_ps);
	}
	EXPECT_EQ(0, memcmp(self->bm + N * LEN, self->am + 1, 100));
	EXPECT_EQ(0, memcmp(self->bm + N * LEN + 100, self->am + 2, 100));
}

/* A descriptor the path must refuse, and the error the SUBMIT gives. */
struct bad_desc {
	struct icfab_desc d;
	int err;
};

/*
 * Each of @bad[0..@nb) after a @good that took the WRITE path (debugfs
 * @counter counts it): refused with its error, the count unmoved, the
 * good one completed. Then a batch of two good, @bad[@in_batch] and a
 * good: the two before the bad one go the path, and are all the SUBMIT
 * takes. The first good one goes alone first: on the path since the
 * QUEUE_CREATE.
 */
static void refused_beside_the_path(struct __test_metadata *_metadata,
				    int fd, struct icfab_desc good,
				    struct bad_desc *bad, int nb,
				    int in_batch, const char *counter)
{
	struct icfab_desc batch[4];
	struct icfab_cqe c[4];
	long long m;

	ASSERT_EQ(0, one(fd, good, c));
	for (int i = 0; i < nb; i++) {
		m = fab_count(counter);
		good.user_tag = 100 + i;
		ASSERT_EQ(1, ctx_submit(fd, &good, 1));
		EXPECT_EQ(m + 1, fab_count(counter));
		EXPECT_EQ(bad[i].err, ctx_submit(fd, &bad[i].d, 1)) {
			TH_LOG("case %d", i);
		}
		EXPECT_EQ(m + 1, fab_count(counter));
		ASSERT_EQ(1, ctx_wait(fd, c, 1, 4, 0, NULL));
		EXPECT_EQ(100 + i, c[0].user_tag);
		EXPECT_EQ(0, c[0].status);
	}
	m = fab_count(counter);
	batch[0] = good;
	batch[1] = good;
	batch[2] = bad[in_batch].d;
	batch[3] = good;
	EXPECT_EQ(2, ctx_submit(fd, batch, 4));
	EXPECT_EQ(m + 2, fab_count(counter));
	EXPECT_EQ(2, ctx_wait(fd, c, 2, 4, 0, NULL));
	EXPECT_EQ(-EDEADLK, ctx_wait(fd, c, 1, 4, 0, NULL));
}

/*
 * A memory WRITE the WRITE path cannot take goes, with what follows it,
 * to the fabric lock's path, which refuses it with the error it always
 * gave: the first failing check's, in its order (the descriptor's own
 * fields, the queue, the local region, its endpoint, the key and its
 * access, the peer, the ranges, a full queue), whatever else is wrong
 * with it. Each is tried on a context that has the path: a good WRITE
 * just before took it (counted), and is still in flight.
 */
TEST_F(dm, memory_write_errors_off_the_lock_are_the_locked_paths)
{
	struct icfab_desc good = mv(ICFAB_OP_WRITE, self->q, self->a, 0,
				    self->bkey, 0, 64, 1);
	struct bad_desc bad[16];
	uint32_t ro;
	uint64_t rokey;
	unsigned char *rom;
	long long m;
	int nb = 0;

	ASSERT_EQ(0, region_map(self->fd, 3, PAGE, ICFAB_ACCESS_REMOTE_READ,
				&ro, &rokey, &rom));
	/* No handle, and no key either. */
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, 999, 0, 0, 0, 8, 0);
	bad[nb++].err = -EBADF;
	/* The local region on another endpoint, and no key. */
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, self->b, 0, 0, 0, 8, 0);
	bad[nb++].err = -EINVAL;
	/* No such key, and out of range. */
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, self->a, RSIZE, 0x1234, 0, 8,
		       0);
	bad[nb++].err = -EACCES;
	/* Read-only, and another peer. */
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, self->a, 0, rokey, 0, 8, 0);
	bad[nb].d.peer = 5;
	bad[nb++].err = -EACCES;
	/* Read-only alone. */
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, self->a, 0, rokey, 0, 8, 0);
	bad[nb++].err = -EACCES;
	/* Another peer, and out of range. */
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, self->a, RSIZE - 4,
		       self->bkey, 0, 8, 0);
	bad[nb].d.peer = 5;
	bad[nb++].err = -EINVAL;
	/* Another peer alone. */
	bad[nb].d = good;
	bad[nb].d.peer = 5;
	bad[nb++].err = -EINVAL;
	/* Out of range, locally, remotely, by overflow. */
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, self->a, RSIZE - 7,
		       self->bkey, 0, 8, 0);
	bad[nb++].err = -ERANGE;
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey,
		       RSIZE - 7, 8, 0);
	bad[nb++].err = -ERANGE;
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, self->a, 8, self->bkey, 0,
		       ~0ULL, 0);
	bad[nb++].err = -ERANGE;
	/* A pad byte, with no handle. */
	bad[nb].d = mv(ICFAB_OP_WRITE, self->q, 999, 0, self->bkey, 0, 8, 0);
	bad[nb].d.pad = 1;
	bad[nb++].err = -EINVAL;
	/* No such queue, no handle. */
	bad[nb].d = mv(ICFAB_OP_WRITE, 777, 999, 0, self->bkey, 0, 8, 0);
	bad[nb++].err = -ENOENT;

	refused_beside_the_path(_metadata, self->fd, good, bad, nb, 4,
				"fast_mem_writes");

	/* A full queue: its -EAGAIN comes after the ranges' -ERANGE. */
	do {
		struct icfab_desc full[16];
		struct icfab_cqe cf[16];

		for (int i = 0; i < 16; i++)
			full[i] = good;
		m = fab_count("fast_mem_writes");
		ASSERT_EQ(16, ctx_submit(self->fd, full, 16));
		EXPECT_EQ(m + 16, fab_count("fast_mem_writes"));
		EXPECT_EQ(-ERANGE, ctx_submit(self->fd, &bad[8].d, 1));
		EXPECT_EQ(-EAGAIN, ctx_submit(self->fd, &good, 1));
		EXPECT_EQ(m + 16, fab_count("fast_mem_writes"));
		EXPECT_EQ(16, ctx_wait(self->fd, cf, 16, 16, 0, NULL));
	} while (0);
	munmap(rom, PAGE);
}

/*
 * Memory READs go off the fabric lock too (fast_mem_reads counts them,
 * not fast_writes), and land as they do under it: the same bytes, the
 * same emulated times. The first goes under the fabric lock behind a
 * FENCE, for the times to compare with; the rest one a SUBMIT, each
 * submitted at the finish its WAIT returned at, at offsets of a few
 * segments (a READ's spray offset is its local one). A batch mixing
 * them with memory and timing-only WRITEs goes the path whole.
 */
TEST_F(dm, memory_reads_go_off_the_fabric_lock_as_under_it)
{
	enum { N = 5, LEN = 3 * SEG + 5 };
	long long r = fab_count("fast_mem_reads");
	long long m = fab_count("fast_mem_writes");
	long long w = fab_count("fast_writes");
	struct icfab_desc mix[4], dr[N];
	struct icfab_cqe c[N], cm[4];

	ASSERT_LE(0, r);
	ASSERT_LE(0, m);
	ASSERT_LE(0, w);
	fill(self->bm, RSIZE, 23);
	memset(self->am, 0, RSIZE);
	for (int i = 0; i < N; i++)
		dr[i] = mv(ICFAB_OP_READ, self->q, self->a, i * LEN,
			   self->bkey, i * 11, LEN, i + 1);
	fenced_first_then_alike(_metadata, self->fd, self->q, dr, c, N);
	EXPECT_EQ(r + N - 1, fab_count("fast_mem_reads"));
	EXPECT_EQ(m, fab_count("fast_mem_writes"));
	EXPECT_EQ(w, fab_count("fast_writes"));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, memcmp(self->am + i * LEN, self->bm + i * 11,
				    LEN)) {
			TH_LOG("READ %d", i);
		}
	}

	mix[0] = mv(ICFAB_OP_READ, self->q, self->a, N * LEN, self->bkey, 1,
		    100, 21);
	mix[1] = desc_put(self->q, 3, 100, 22);
	mix[2] = mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey,
		    RSIZE - 100, 100, 23);
	mix[3] = mv(ICFAB_OP_READ, self->q, self->a, N * LEN + 100,
		    self->bkey, 2, 100, 24);
	ASSERT_EQ(4, ctx_submit(self->fd, mix, 4));
	EXPECT_EQ(r + N + 1, fab_count("fast_mem_reads"));
	EXPECT_EQ(m + 1, fab_count("fast_mem_writes"));
	EXPECT_EQ(w + 2, fab_count("fast_writes"));
	ASSERT_EQ(4, ctx_wait(self->fd, cm, 4, 4, 0, NULL));
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(0, cm[i].status);
		EXPECT_EQ(c[N - 1].finish_ps, cm[i].submit_ps);
	}
	EXPECT_EQ(0, memcmp(self->am + N * LEN, self->bm + 1, 100));
	EXPECT_EQ(0, memcmp(self->am + N * LEN + 100, self->bm + 2, 100));
	EXPECT_EQ(0, memcmp(self->bm + RSIZE - 100, self->am, 100));
}

/*
 * A READ's bytes flow from the remote region to the local one, off the
 * fabric lock as under it: submitted at one instant with a timing-only
 * WRITE from the remote endpoint to the local one (the other endpoint's
 * DMA engine), it needs the links that WRITE needs, so one of the two
 * starts later (the ring's two directions are apart: a READ timed from
 * the local end to the remote would start with the WRITE). Under the
 * lock (behind a FENCE) and on the path, each starts and finishes at the
 * same time after its submission.
 */
TEST_F(dm, a_read_off_the_lock_shares_the_links_its_bytes_cross)
{
	enum { LEN = 8 * SEG };
	long long r = fab_count("fast_mem_reads");
	long long w = fab_count("fast_writes");
	struct icfab_desc d[3];
	struct icfab_cqe c[2][3];
	int q3 = ctx_queue(self->fd, 3, 16);

	ASSERT_LE(0, q3);
	ASSERT_LE(0, r);
	ASSERT_LE(0, w);
	fill(self->bm, RSIZE, 29);
	memset(self->am, 0, RSIZE);
	for (int round = 0; round < 2; round++) {
		struct icfab_cqe *cr = c[round];
		int n = 0;

		/* Round 0 under the fabric lock: a FENCE leads the chunk. */
		if (!round)
			d[n++] = (struct icfab_desc){ .op = ICFAB_OP_FENCE,
						      .queue = self->q,
						      .user_tag = 9 };
		d[n++] = desc_put(q3, 0, LEN, 1);
		d[n++] = mv(ICFAB_OP_READ, self->q, self->a, round * LEN,
			    self->bkey, round * 7, LEN, 2);
		ASSERT_EQ(n, ctx_submit(self->fd, d, n));
		ASSERT_EQ(n, ctx_wait(self->fd, cr, n, n, 0, NULL));
		if (!round) {
			/* The FENCE's completion out of the way. */
			for (int i = 0; i < 3; i++)
				if (cr[i].user_tag == 9)
					cr[i] = cr[2];
		}
		/* By tag: the WRITE in [0], the READ in [1]. */
		if (cr[0].user_tag == 2) {
			struct icfab_cqe t = cr[0];

			cr[0] = cr[1];
			cr[1] = t;
		}
		ASSERT_EQ(1, cr[0].user_tag);
		ASSERT_EQ(2, cr[1].user_tag);
		for (int i = 0; i < 2; i++) {
			EXPECT_EQ(0, cr[i].status);
			EXPECT_EQ(cr[0].submit_ps, cr[i].submit_ps);
		}
		/* The links they share: one waits for the other. */
		EXPECT_NE(cr[0].start_ps, cr[1].start_ps);
		ASSERT_EQ(0, memcmp(self->am + round * LEN,
				    self->bm + round * 7, LEN));
	}
	/* Round 1 went the path, WRITE and READ alike. */
	EXPECT_EQ(r + 1, fab_count("fast_mem_reads"));
	EXPECT_EQ(w + 1, fab_count("fast_writes"));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(c[0][i].start_ps - c[0][i].submit_ps,
			  c[1][i].start_ps - c[1][i].submit_ps) {
			TH_LOG("%s", i ? "the READ" : "the WRITE");
		}
		EXPECT_EQ(c[0][i].finish_ps - c[0][i].submit_ps,
			  c[1][i].finish_ps - c[1][i].submit_ps) {
			TH_LOG("%s", i ? "the READ" : "the WRITE");
		}
	}
}

/*
 * A memory READ the path cannot take goes, with what follows it, to the
 * fabric lock's path, which refuses it with the error it always gave, in
 * its order: a READ needs the remote region's REMOTE_READ (a key that
 * only allows WRITEs is -EACCES), and NOTIFY, a circuit or an immediate
 * on a READ are -EINVAL. Each is tried on a context whose good READ just
 * before took the path (counted), and is still in flight.
 */
TEST_F(dm, memory_read_errors_off_the_lock_are_the_locked_paths)
{
	struct icfab_desc good = mv(ICFAB_OP_READ, self->q, self->a, 0,
				    self->bkey, 0, 64, 1);
	struct bad_desc bad[16];
	uint32_t wo;
	uint64_t wokey;
	unsigned char *wom;
	int nb = 0;

	ASSERT_EQ(0, region_map(self->fd, 3, PAGE, ICFAB_ACCESS_REMOTE_WRITE,
				&wo, &wokey, &wom));
	/* No handle, and no key either. */
	bad[nb].d = mv(ICFAB_OP_READ, self->q, 999, 0, 0, 0, 8, 0);
	bad[nb++].err = -EBADF;
	/* The local region on another endpoint. */
	bad[nb].d = mv(ICFAB_OP_READ, self->q, self->b, 0, self->bkey, 0, 8,
		       0);
	bad[nb++].err = -EINVAL;
	/* No such key, and out of range. */
	bad[nb].d = mv(ICFAB_OP_READ, self->q, self->a, RSIZE, 0x1234, 0, 8,
		       0);
	bad[nb++].err = -EACCES;
	/* Write-only: a WRITE's key, not a READ's. */
	bad[nb].d = mv(ICFAB_OP_READ, self->q, self->a, 0, wokey, 0, 8, 0);
	bad[nb++].err = -EACCES;
	/* Write-only, and another peer. */
	bad[nb].d = bad[nb - 1].d;
	bad[nb].d.peer = 5;
	bad[nb++].err = -EACCES;
	/* Another peer alone. */
	bad[nb].d = good;
	bad[nb].d.peer = 5;
	bad[nb++].err = -EINVAL;
	/* Out of range, locally, remotely. */
	bad[nb].d = mv(ICFAB_OP_READ, self->q, self->a, RSIZE - 7,
		       self->bkey, 0, 8, 0);
	bad[nb++].err = -ERANGE;
	bad[nb].d = mv(ICFAB_OP_READ, self->q, self->a, 0, self->bkey,
		       RSIZE - 7, 8, 0);
	bad[nb++].err = -ERANGE;
	/* NOTIFY, a circuit, an immediate: a WRITE's, or a TRIGGER's. */
	bad[nb].d = good;
	bad[nb].d.flags = ICFAB_DESC_F_NOTIFY;
	bad[nb++].err = -EINVAL;
	bad[nb].d = good;
	bad[nb].d.circuit = 1;
	bad[nb++].err = -EINVAL;
	bad[nb].d = good;
	bad[nb].d.imm = 1;
	bad[nb++].err = -EINVAL;
	/* No such queue, no handle. */
	bad[nb].d = mv(ICFAB_OP_READ, 777, 999, 0, self->bkey, 0, 8, 0);
	bad[nb++].err = -ENOENT;

	refused_beside_the_path(_metadata, self->fd, good, bad, nb, 3,
				"fast_mem_reads");
	munmap(wom, PAGE);
}

/* A timing-only READ of @len bytes from endpoint @peer into queue @q's. */
static struct icfab_desc desc_get(uint32_t q, uint32_t peer, uint64_t len,
				  uint64_t tag)
{
	struct icfab_desc d = desc_put(q, peer, len, tag);

	d.op = ICFAB_OP_READ;
	return d;
}

/*
 * Timing-only READs go off the fabric lock too (fast_timed_reads counts
 * them, not fast_writes nor fast_mem_reads), with the times they get
 * under it: the first under the fabric lock behind a FENCE, the rest one
 * a SUBMIT, each submitted at the finish its WAIT returned at, at local
 * and remote offsets of a few segments. A batch mixing them with memory
 * READs and WRITEs and timing-only WRITEs goes the path whole, each loop
 * in turn.
 */
TEST_F(dm, timing_only_reads_go_off_the_fabric_lock_as_under_it)
{
	enum { N = 5, LEN = 3 * SEG + 5 };
	long long t = fab_count("fast_timed_reads");
	long long r = fab_count("fast_mem_reads");
	long long m = fab_count("fast_mem_writes");
	long long w = fab_count("fast_writes");
	struct icfab_desc mix[5], dr[N];
	struct icfab_cqe c[N], cm[5];

	ASSERT_LE(0, t);
	ASSERT_LE(0, r);
	ASSERT_LE(0, m);
	ASSERT_LE(0, w);
	for (int i = 0; i < N; i++) {
		dr[i] = desc_get(self->q, 3, LEN, i + 1);
		dr[i].local_off = i * LEN;
		dr[i].remote_off = i * 11;
	}
	fenced_first_then_alike(_metadata, self->fd, self->q, dr, c, N);
	EXPECT_EQ(t + N - 1, fab_count("fast_timed_reads"));
	EXPECT_EQ(r, fab_count("fast_mem_reads"));
	EXPECT_EQ(w, fab_count("fast_writes"));

	/* Apart: the memory READ's bytes, and the WRITE's. */
	fill(self->bm, RSIZE, 31);
	fill(self->am, RSIZE, 37);
	mix[0] = desc_get(self->q, 3, 100, 21);
	mix[1] = mv(ICFAB_OP_READ, self->q, self->a, 200, self->bkey, 5, 100,
		    22);
	mix[2] = desc_get(self->q, 3, 100, 23);
	mix[3] = desc_put(self->q, 3, 100, 24);
	mix[4] = mv(ICFAB_OP_WRITE, self->q, self->a, 1000, self->bkey,
		    RSIZE - 100, 100, 25);
	ASSERT_EQ(5, ctx_submit(self->fd, mix, 5));
	EXPECT_EQ(t + N + 1, fab_count("fast_timed_reads"));
	EXPECT_EQ(r + 1, fab_count("fast_mem_reads"));
	EXPECT_EQ(m + 1, fab_count("fast_mem_writes"));
	EXPECT_EQ(w + 2, fab_count("fast_writes"));
	ASSERT_EQ(5, ctx_wait(self->fd, cm, 5, 5, 0, NULL));
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(0, cm[i].status);
		EXPECT_EQ(c[N - 1].finish_ps, cm[i].submit_ps);
	}
	EXPECT_EQ(0, memcmp(self->am + 200, self->bm + 5, 100));
	EXPECT_EQ(0, memcmp(self->bm + RSIZE - 100, self->am + 1000, 100));
}

/*
 * A timing-only READ is timed from its peer to the queue's endpoint, off
 * the fabric lock as under it: submitted at one instant with a
 * timing-only WRITE from the peer's endpoint to the queue's, it needs the
 * links that WRITE needs, so one of the two starts later (the ring's two
 * directions are apart: a READ timed from the queue's end to the peer
 * would start with the WRITE). Under the lock (behind a FENCE) and on
 * the path, each starts and finishes at the same time after its
 * submission.
 */
TEST_F(dm, a_timing_only_read_off_the_lock_shares_the_links_it_crosses)
{
	enum { LEN = 8 * SEG };
	long long t = fab_count("fast_timed_reads");
	long long w = fab_count("fast_writes");
	struct icfab_desc d[3];
	struct icfab_cqe c[2][3];
	int q3 = ctx_queue(self->fd, 3, 16);

	ASSERT_LE(0, q3);
	ASSERT_LE(0, t);
	ASSERT_LE(0, w);
	for (int round = 0; round < 2; round++) {
		struct icfab_cqe *cr = c[round];
		int n = 0;

		/* Round 0 under the fabric lock: a FENCE leads the chunk. */
		if (!round)
			d[n++] = (struct icfab_desc){ .op = ICFAB_OP_FENCE,
						      .queue = self->q,
						      .user_tag = 9 };
		d[n++] = desc_put(q3, 0, LEN, 1);
		d[n++] = desc_get(self->q, 3, LEN, 2);
		ASSERT_EQ(n, ctx_submit(self->fd, d, n));
		ASSERT_EQ(n, ctx_wait(self->fd, cr, n, n, 0, NULL));
		if (!round) {
			/* The FENCE's completion out of the way. */
			for (int i = 0; i < 3; i++)
				if (cr[i].user_tag == 9)
					cr[i] = cr[2];
		}
		/* By tag: the WRITE in [0], the READ in [1]. */
		if (cr[0].user_tag == 2) {
			struct icfab_cqe x = cr[0];

			cr[0] = cr[1];
			cr[1] = x;
		}
		ASSERT_EQ(1, cr[0].user_tag);
		ASSERT_EQ(2, cr[1].user_tag);
		for (int i = 0; i < 2; i++) {
			EXPECT_EQ(0, cr[i].status);
			EXPECT_EQ(cr[0].submit_ps, cr[i].submit_ps);
		}
		/* The links they share: one waits for the other. */
		EXPECT_NE(cr[0].start_ps, cr[1].start_ps);
	}
	/* Round 1 went the path, WRITE and READ alike. */
	EXPECT_EQ(t + 1, fab_count("fast_timed_reads"));
	EXPECT_EQ(w + 1, fab_count("fast_writes"));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(c[0][i].start_ps - c[0][i].submit_ps,
			  c[1][i].start_ps - c[1][i].submit_ps) {
			TH_LOG("%s", i ? "the READ" : "the WRITE");
		}
		EXPECT_EQ(c[0][i].finish_ps - c[0][i].submit_ps,
			  c[1][i].finish_ps - c[1][i].submit_ps) {
			TH_LOG("%s", i ? "the READ" : "the WRITE");
		}
	}
}

/*
 * A timing-only READ the path cannot take goes, with what follows it,
 * to the fabric lock's path, which refuses it with the error it always
 * gave, in its order: the descriptor's own fields (a pad byte, NOTIFY,
 * a circuit, an immediate), the queue, the peer, a region or a key
 * beside ICFAB_DESC_F_TIMING_ONLY, the length, a full queue. Each is
 * tried on a context whose good READ just before took the path
 * (counted), and is still in flight.
 */
TEST_F(dm, timing_only_read_errors_off_the_lock_are_the_locked_paths)
{
	struct icfab_desc good = desc_get(self->q, 3, 64, 1);
	struct bad_desc bad[16];
	long long m;
	int nb = 0;

	/* No such endpoint. */
	bad[nb].d = good;
	bad[nb].d.peer = 1000;
	bad[nb++].err = -EINVAL;
	/* A region, a key: a memory READ's, not a timing-only one's. */
	bad[nb].d = good;
	bad[nb].d.region = self->a;
	bad[nb++].err = -EINVAL;
	bad[nb].d = good;
	bad[nb].d.rkey = self->bkey;
	bad[nb++].err = -EINVAL;
	/* NOTIFY, a circuit, an immediate, a pad byte. */
	bad[nb].d = good;
	bad[nb].d.flags |= ICFAB_DESC_F_NOTIFY;
	bad[nb++].err = -EINVAL;
	bad[nb].d = good;
	bad[nb].d.circuit = 1;
	bad[nb++].err = -EINVAL;
	bad[nb].d = good;
	bad[nb].d.imm = 1;
	bad[nb++].err = -EINVAL;
	bad[nb].d = good;
	bad[nb].d.pad = 1;
	bad[nb++].err = -EINVAL;
	/* No such queue, and no such endpoint. */
	bad[nb].d = good;
	bad[nb].d.queue = 777;
	bad[nb].d.peer = 1000;
	bad[nb++].err = -ENOENT;
	/* More segments than any engine holds; and with a bad peer. */
	bad[nb].d = good;
	bad[nb].d.len = ~0ULL;
	bad[nb++].err = -E2BIG;
	bad[nb].d = bad[nb - 1].d;
	bad[nb].d.peer = 1000;
	bad[nb++].err = -EINVAL;

	refused_beside_the_path(_metadata, self->fd, good, bad, nb, 1,
				"fast_timed_reads");

	/* A full queue: its -EAGAIN comes after the length's -E2BIG. */
	do {
		struct icfab_desc full[16];
		struct icfab_cqe cf[16];

		for (int i = 0; i < 16; i++)
			full[i] = good;
		m = fab_count("fast_timed_reads");
		ASSERT_EQ(16, ctx_submit(self->fd, full, 16));
		EXPECT_EQ(m + 16, fab_count("fast_timed_reads"));
		EXPECT_EQ(-E2BIG, ctx_submit(self->fd, &bad[8].d, 1));
		EXPECT_EQ(-EAGAIN, ctx_submit(self->fd, &good, 1));
		EXPECT_EQ(m + 16, fab_count("fast_timed_reads"));
		EXPECT_EQ(16, ctx_wait(self->fd, cf, 16, 16, 0, NULL));
	} while (0);
}

/*
 * A REGION_FREE (which takes the key away) racing memory WRITEs to its
 * key on the WRITE path, by another thread of the same context: each
 * WRITE either came before it, and lands its bytes (the region's pages
 * stay while a transfer holds it), or after it, and gets the fabric
 * lock's -EACCES; once one is refused, none with that key is accepted
 * again. With KASAN, no use after free of the region the path looked up
 * under RCU. Rounds of a fresh region each, freed at a different point.
 */
struct race {
	int fd;
	volatile int round;		/* the region's round, set by the freer */
	volatile uint64_t key;
	volatile int accepted;		/* by the writer in this round */
	volatile int refused;		/* the writer saw -EACCES */
	volatile int stop;
	volatile uint32_t region;
	volatile int free_after;	/* WRITEs accepted before the free */
	volatile int phase;		/* the freer's; 0: it gave up */
	volatile int err;		/* its REGION_FREE's */
};

static void *race_freer(void *arg)
{
	struct race *r = arg;

	while (!r->stop) {
		int round = r->round;

		r->phase = 1;
		if (round < 0 || r->key == 0) {
			sched_yield();
			continue;
		}
		r->phase = 2;
		while (!r->stop && r->accepted < r->free_after && !r->refused)
			sched_yield();
		r->phase = 3;
		r->err = ctx_region_free(r->fd, r->region);
		if (r->err) {
			r->phase = 0;
			return (void *)1;
		}
		r->phase = 4;
		r->key = 0;
		while (!r->stop && r->round == round)
			sched_yield();
	}
	return NULL;
}

TEST_F(dm, a_region_freed_under_memory_writes_off_the_lock)
{
	enum { ROUNDS = 64, LEN = 8, MAXW = 500 };
	struct race r = { .fd = self->fd, .round = -1, .phase = 1 };
	long long m = fab_count("fast_mem_writes");
	void *ret = NULL;
	pthread_t t;

	ASSERT_LE(0, m);
	fill(self->am, RSIZE, 5);
	ASSERT_EQ(0, pthread_create(&t, NULL, race_freer, &r));
	for (int round = 0; round < ROUNDS; round++) {
		unsigned char *map;
		uint32_t h;
		uint64_t key;
		int n = 0, inflight = 0, err = 0;
		struct icfab_cqe c[16];

		ASSERT_EQ(0, region_map(self->fd, 3, PAGE,
					ICFAB_ACCESS_REMOTE_WRITE, &h, &key,
					&map));
		memset(map, 0, PAGE);
		r.region = h;
		r.accepted = 0;
		r.refused = 0;
		r.free_after = round % 13;
		r.key = key;
		r.round = round;
		for (;;) {
			struct icfab_desc d = mv(ICFAB_OP_WRITE, self->q,
						 self->a, (n * 13) % 4096, key,
						 n * LEN, LEN, n);
			int got;

			/*
			 * The freer has not got there yet (its CPU may be
			 * slow to run, under TCG): wait for it, then try.
			 */
			if (n == MAXW) {
				while (r.key && r.phase != 0)
					sched_yield();
				ASSERT_EQ(0, r.err) {
					TH_LOG("round %d: free after %d, freer in phase %d",
					       round, r.free_after, r.phase);
				}
			}
			got = ctx_submit(self->fd, &d, 1);
			if (got != 1) {
				err = got;
				break;
			}
			n++;
			r.accepted = n;
			/* The freer's turn, on one CPU too. */
			if (n >= r.free_after)
				sched_yield();
			if (++inflight == 8) {
				got = ctx_wait(self->fd, c, 8, 8, 0, NULL);
				ASSERT_EQ(8, got);
				for (int i = 0; i < 8; i++)
					ASSERT_EQ(0, c[i].status);
				inflight = 0;
			}
		}
		r.refused = 1;
		EXPECT_EQ(-EACCES, err);
		if (inflight) {
			ASSERT_EQ(inflight, ctx_wait(self->fd, c, inflight,
						     inflight, 0, NULL));
			for (int i = 0; i < inflight; i++)
				ASSERT_EQ(0, c[i].status);
		}
		/* Refused once, refused from then on. */
		while (r.key)
			sched_yield();
		do {
			struct icfab_desc d = mv(ICFAB_OP_WRITE, self->q,
						 self->a, 0, key, 0, LEN, 0);

			EXPECT_EQ(-EACCES, ctx_submit(self->fd, &d, 1));
		} while (0);
		/* Every accepted WRITE landed, in the pages the mapping kept. */
		for (int i = 0; i < n; i++) {
			ASSERT_EQ(0, memcmp(map + i * LEN,
					    self->am + (i * 13) % 4096, LEN)) {
				TH_LOG("round %d WRITE %d of %d", round, i, n);
			}
		}
		for (int i = n * LEN; i < (int)PAGE; i++)
			ASSERT_EQ(0, map[i]);
		munmap(map, PAGE);
		r.round = -1;
	}
	r.stop = 1;
	pthread_join(t, &ret);
	EXPECT_EQ(NULL, ret);
	/* The WRITEs went the path (the first of the test's under the lock). */
	EXPECT_LT(m + ROUNDS, fab_count("fast_mem_writes"));
}

static struct icfab_cqe *by_tag(struct icfab_cqe *c, int n, uint64_t tag)
{
	for (int i = 0; i < n; i++)
		if (c[i].user_tag == tag)
			return &c[i];
	return NULL;
}

TEST_F(dm, fence_orders_in_exact_virtual_time)
{
	struct icfab_desc d[4];
	struct icfab_cqe c[4], *w1, *w2, *f, *w3, g;
	uint64_t last;

	d[0] = desc_put(self->q, 1, 8 * SEG, 1);
	d[1] = desc_put(self->q, 2, 4 * SEG, 2);
	d[2] = (struct icfab_desc){ .op = ICFAB_OP_FENCE, .queue = self->q,
				    .user_tag = 3 };
	d[3] = desc_put(self->q, 1, SEG, 4);
	ASSERT_EQ(4, ctx_submit(self->fd, d, 4));
	ASSERT_EQ(4, ctx_wait(self->fd, c, 4, 4, 0, NULL));
	w1 = by_tag(c, 4, 1);
	w2 = by_tag(c, 4, 2);
	f = by_tag(c, 4, 3);
	w3 = by_tag(c, 4, 4);
	ASSERT_TRUE(w1 && w2 && f && w3);
	EXPECT_EQ(0, f->status);
	last = w1->finish_ps > w2->finish_ps ? w1->finish_ps : w2->finish_ps;
	EXPECT_EQ(last, f->finish_ps);
	EXPECT_EQ(f->finish_ps, f->start_ps);
	/* After the fence, on idle links: exactly the closed form. */
	EXPECT_EQ(f->finish_ps, w3->start_ps);
	EXPECT_EQ(ring_uncontended(SEG, 1), w3->finish_ps - w3->start_ps);
	EXPECT_EQ(w1->submit_ps, w3->submit_ps);

	/* A fence with nothing before it completes at the clock. */
	d[0] = (struct icfab_desc){ .op = ICFAB_OP_FENCE, .queue = self->q,
				    .user_tag = 9 };
	ASSERT_EQ(0, one(self->fd, d[0], &g));
	EXPECT_EQ(w3->finish_ps, g.finish_ps);

	/* Without the fence the last one does not wait. */
	d[0] = desc_put(self->q, 1, 8 * SEG, 1);
	d[1] = desc_put(self->q, 2, 4 * SEG, 2);
	d[2] = desc_put(self->q, 1, SEG, 4);
	ASSERT_EQ(3, ctx_submit(self->fd, d, 3));
	ASSERT_EQ(3, ctx_wait(self->fd, c, 3, 3, 0, NULL));
	w1 = by_tag(c, 3, 1);
	w3 = by_tag(c, 3, 4);
	ASSERT_TRUE(w1 && w3);
	EXPECT_LT(w3->start_ps, w1->finish_ps);
}

TEST_F(dm, fence_orders_the_bytes)
{
	uint32_t a2;
	uint64_t key2;
	unsigned char *a2m;
	struct icfab_desc d[3];
	struct icfab_cqe c[3];

	ASSERT_EQ(0, region_map(self->fd, 0, RSIZE, 0, &a2, &key2, &a2m));
	fill(self->am, RSIZE, 3);
	memset(self->bm, 0, RSIZE);
	/* Write to 3, then read it back, twice as fast as it went. */
	d[0] = mv(ICFAB_OP_WRITE, self->q, self->a, 0, self->bkey, 0, RSIZE, 1);
	d[1] = (struct icfab_desc){ .op = ICFAB_OP_FENCE, .queue = self->q,
				    .user_tag = 2 };
	d[2] = mv(ICFAB_OP_READ, self->q, a2, 0, self->bkey, 0, RSIZE, 3);
	ASSERT_EQ(3, ctx_submit(self->fd, d, 3));
	ASSERT_EQ(3, ctx_wait(self->fd, c, 3, 3, 0, NULL));
	EXPECT_EQ(0, memcmp(self->am, a2m, RSIZE));
	EXPECT_EQ(0, memcmp(self->am, self->bm, RSIZE));
	munmap(a2m, RSIZE);
}

TEST_F(dm, one_process_on_many_endpoints)
{
	uint32_t h[8];
	uint64_t key[8];
	unsigned char *m[8];
	int q[8];
	struct icfab_desc d[8];
	struct icfab_cqe c[8];

	for (uint32_t i = 0; i < 8; i++) {
		if (i != 0 && i != 3)
			ASSERT_EQ(0, ctx_attach(self->fd, i));
		q[i] = ctx_queue(self->fd, i, 4);
		ASSERT_LE(0, q[i]);
		ASSERT_EQ(0, region_map(self->fd, i, 2 * PAGE, ICFAB_ACCESS_ALL,
					&h[i], &key[i], &m[i]));
		fill(m[i], PAGE, 50 + i);
	}
	/* Everyone writes its first page into the next one's second. */
	for (uint32_t i = 0; i < 8; i++)
		d[i] = mv(ICFAB_OP_WRITE, q[i], h[i], 0, key[(i + 1) % 8], PAGE,
			  PAGE, i);
	ASSERT_EQ(8, ctx_submit(self->fd, d, 8));
	ASSERT_EQ(8, ctx_wait(self->fd, c, 8, 8, 0, NULL));
	for (uint32_t i = 0; i < 8; i++) {
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(0, memcmp(m[i], m[(i + 1) % 8] + PAGE, PAGE));
	}
	for (uint32_t i = 0; i < 8; i++)
		munmap(m[i], 2 * PAGE);
}

/* The child: a region on endpoint 5, its key to the parent, then check. */
static int key_child(int kfd, int dfd)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	struct icfab_desc d = { .op = ICFAB_OP_DELAY, .len = 1000000000000ULL };
	struct icfab_cqe c;
	unsigned char *m, want[PAGE];
	uint32_t h;
	uint64_t key;
	char byte;
	int q;

	if (fd < 0 || ctx_attach(fd, 5))
		return 1;
	if (region_map(fd, 5, 2 * PAGE, ICFAB_ACCESS_ALL, &h, &key, &m))
		return 2;
	fill(m, PAGE, 77);
	if (write(kfd, &key, sizeof(key)) != sizeof(key))
		return 3;
	/* Out of the parent's way: nothing more before a second from now. */
	q = ctx_queue(fd, 5, 1);
	d.queue = q;
	if (q < 0 || one(fd, d, &c))
		return 4;
	if (read(dfd, &byte, 1) != 1)
		return 5;
	fill(want, PAGE, 78);
	return memcmp(m + PAGE, want, PAGE) ? 6 : 0;
}

TEST_F(dm, two_processes_exchange_keys)
{
	struct icfab_region_import ri = { 0 };
	int kp[2], dp[2], status;
	unsigned char want[PAGE];
	struct icfab_cqe c;
	uint64_t key;
	pid_t pid;

	ASSERT_EQ(0, pipe(kp));
	ASSERT_EQ(0, pipe(dp));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(kp[0]);
		close(dp[1]);
		_exit(key_child(kp[1], dp[0]));
	}
	close(kp[1]);
	close(dp[0]);
	ASSERT_EQ(sizeof(key), read(kp[0], &key, sizeof(key)));
	ri.key = key;
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_REGION_IMPORT, &ri));
	EXPECT_EQ(5, ri.endpoint);
	EXPECT_EQ(2 * PAGE, ri.size);

	memset(self->am, 0, RSIZE);
	ASSERT_EQ(0, one(self->fd, mv(ICFAB_OP_READ, self->q, self->a, 0, key,
				      0, PAGE, 1), &c));
	fill(want, PAGE, 77);
	EXPECT_EQ(0, memcmp(self->am, want, PAGE));
	fill(self->am + PAGE, PAGE, 78);
	ASSERT_EQ(0, one(self->fd, mv(ICFAB_OP_WRITE, self->q, self->a, PAGE,
				      key, PAGE, PAGE, 2), &c));
	ASSERT_EQ(1, write(dp[1], "d", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Its context is gone, and the key with it. */
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_REGION_IMPORT, &ri));
	EXPECT_EQ(EINVAL, errno);	/* ri's outputs are set */
	memset(&ri, 0, sizeof(ri));
	ri.key = key;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_REGION_IMPORT, &ri));
	EXPECT_EQ(ENOKEY, errno);
	close(kp[0]);
	close(dp[1]);
}

#define PAIR_N	6

/*
 * One rank: attached to its endpoint @p and to 2, it writes into its own
 * region on 2 over the shared link 1 -> 2, fences, reads it back.
 */
static int pair_rank(int p, int ready, int go, struct icfab_cqe *out)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	unsigned char *lm, *rm;
	struct icfab_desc d[PAIR_N];
	uint32_t lh, rh;
	uint64_t lk, rk;
	char byte;
	int q;

	if (fd < 0 || ctx_attach(fd, p) || ctx_attach(fd, 2))
		return 1;
	if (region_map(fd, p, 16 * PAGE, 0, &lh, &lk, &lm) ||
	    region_map(fd, 2, 16 * PAGE, ICFAB_ACCESS_ALL, &rh, &rk, &rm))
		return 2;
	fill(lm, 16 * PAGE, 9 + p);
	q = ctx_queue(fd, p, PAIR_N);
	if (q < 0)
		return 3;
	if (write(ready, "r", 1) != 1 || read(go, &byte, 1) != 0)
		return 4;
	for (int i = 0; i < 4; i++)
		d[i] = mv(ICFAB_OP_WRITE, q, lh, i * 4 * PAGE, rk,
			  i * 4 * PAGE, (1 + i) * PAGE - 17 * p, i);
	d[4] = (struct icfab_desc){ .op = ICFAB_OP_FENCE, .queue = q,
				    .user_tag = 4 };
	d[5] = mv(ICFAB_OP_READ, q, lh, 0, rk, 4 * PAGE, 3 * PAGE + 1, 5);
	if (ctx_submit(fd, d, PAIR_N) != PAIR_N)
		return 5;
	if (ctx_wait(fd, out, PAIR_N, PAIR_N, 0, NULL) != PAIR_N)
		return 6;
	return 0;
}

TEST_F(dm, deterministic_with_a_cpu_hog)
{
	struct icfab_cqe *a, *b;
	uint64_t queued = 0;

	a = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	b = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, a);
	ASSERT_NE(MAP_FAILED, b);
	memset(a, 0, 4096);
	memset(b, 0, 4096);
	/*
	 * The fixture's context goes, mappings and all, so that both runs
	 * start on a fresh engine at time 0 with nobody else attached.
	 */
	munmap(self->am, RSIZE);
	munmap(self->bm, RSIZE);
	self->am = NULL;
	self->bm = NULL;
	close(self->fd);
	self->fd = -1;

	run_rank_pair(pair_rank, a, PAIR_N, 0);
	run_rank_pair(pair_rank, b, PAIR_N, 1);
	for (int i = 0; i < 2 * PAIR_N; i++) {
		EXPECT_EQ(0, a[i].status);
		EXPECT_EQ(a[i].user_tag, b[i].user_tag);
		EXPECT_EQ(a[i].submit_ps, b[i].submit_ps);
		EXPECT_EQ(a[i].start_ps, b[i].start_ps);
		EXPECT_EQ(a[i].finish_ps, b[i].finish_ps);
		EXPECT_EQ(a[i].queued_ps, b[i].queued_ps);
		queued += a[i].queued_ps;
	}
	/* A fresh engine: the first run started at time 0. */
	EXPECT_EQ(0, a[0].submit_ps);
	EXPECT_GT(queued, 0);
	munmap(a, 4096);
	munmap(b, 4096);
}

TEST_HARNESS_MAIN
