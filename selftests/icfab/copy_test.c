// SPDX-License-Identifier: GPL-2.0
/*
 * Memory transfers whose bytes the copier moves off the fabric lock
 * (module parameter copy_unlocked_min; docs/ARCHITECTURE.md, "WRITEs on
 * device memory off the fabric lock"): the copies in the engine's order,
 * a completion never before its bytes, a FENCE never before the bytes
 * of what came before it, emulated times as with every copy under the
 * lock, contexts closed or killed with copies pending, the WAIT that makes
 * the copy it waits for and the work item that wakes a WAIT asleep
 * ("Who runs the copier"). Every test
 * sets copy_unlocked_min to 1, so that every memory transfer goes to the
 * copier, and puts it back.
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

#define PAGE	4096ULL
#define RSIZE	(64 * PAGE)		/* bytes, the fixture's regions */
#define PARAM	"copy_unlocked_min"

static struct icfab_cqe *by_tag(struct icfab_cqe *c, int n, uint64_t tag)
{
	for (int i = 0; i < n; i++)
		if (c[i].user_tag == tag)
			return &c[i];
	return NULL;
}

FIXTURE(cp) {
	struct genl_sock gs;
	long old_min;
	int fd, q, q2;
	uint32_t a1, a2, b;		/* a1, a2 on endpoint 0, b on 3 */
	uint64_t a1key, a2key, bkey;
	unsigned char *a1m, *a2m, *bm;
};

FIXTURE_SETUP(cp)
{
	self->old_min = param_get(PARAM);
	ASSERT_LE(0, self->old_min);
	ASSERT_EQ(0, param_set(PARAM, 1));
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, ctx_attach(self->fd, 3));
	self->q = ctx_queue(self->fd, 0, 64);
	ASSERT_LE(0, self->q);
	self->q2 = ctx_queue(self->fd, 0, 64);
	ASSERT_LE(0, self->q2);
	ASSERT_EQ(0, region_map(self->fd, 0, RSIZE, ICFAB_ACCESS_ALL, &self->a1,
				&self->a1key, &self->a1m));
	ASSERT_EQ(0, region_map(self->fd, 0, RSIZE, ICFAB_ACCESS_ALL, &self->a2,
				&self->a2key, &self->a2m));
	ASSERT_EQ(0, region_map(self->fd, 3, RSIZE, ICFAB_ACCESS_ALL, &self->b,
				&self->bkey, &self->bm));
}

FIXTURE_TEARDOWN(cp)
{
	if (self->a1m && self->a1m != MAP_FAILED)
		munmap(self->a1m, RSIZE);
	if (self->a2m && self->a2m != MAP_FAILED)
		munmap(self->a2m, RSIZE);
	if (self->bm && self->bm != MAP_FAILED)
		munmap(self->bm, RSIZE);
	if (self->fd >= 0)
		close(self->fd);
	fabric_close(&self->gs);
	if (self->old_min >= 0)
		param_set(PARAM, self->old_min);
}

/*
 * Two WRITEs to the same bytes, from two regions, on two queues of one
 * endpoint: the engine finishes them in an order, and the bytes are
 * those of the one it finished last, every time.
 */
TEST_F(cp, the_later_write_to_the_same_bytes_lands_last)
{
	long long before = fab_count("copies_unlocked");

	for (int round = 0; round < 8; round++) {
		struct icfab_desc d[2];
		struct icfab_cqe c[2], *w1, *w2;
		unsigned char *want;

		fill(self->a1m, RSIZE, 10 + round);
		fill(self->a2m, RSIZE, 20 + round);
		memset(self->bm, 0, RSIZE);
		/* The second shorter, so that rounds differ in who is last. */
		d[0] = mv(ICFAB_OP_WRITE, self->q, self->a1, 0, self->bkey, 0,
			  RSIZE, 1);
		d[1] = mv(ICFAB_OP_WRITE, self->q2, self->a2, 0, self->bkey, 0,
			  round & 1 ? RSIZE : RSIZE / 2, 2);
		ASSERT_EQ(2, ctx_submit(self->fd, d, 2));
		ASSERT_EQ(2, ctx_wait(self->fd, c, 2, 2, 0, NULL));
		w1 = by_tag(c, 2, 1);
		w2 = by_tag(c, 2, 2);
		ASSERT_TRUE(w1 && w2);
		ASSERT_EQ(0, w1->status);
		ASSERT_EQ(0, w2->status);
		ASSERT_NE(w1->finish_ps, w2->finish_ps);
		/* Where both wrote: the last one's; beyond, the first's. */
		want = w1->finish_ps > w2->finish_ps ? self->a1m : self->a2m;
		ASSERT_EQ(0, memcmp(self->bm, want, d[1].len));
		ASSERT_EQ(0, memcmp(self->bm + d[1].len, self->a1m + d[1].len,
				    RSIZE - d[1].len));
	}
	if (before >= 0)
		EXPECT_LE(before + 16, fab_count("copies_unlocked"));
}

/*
 * A WAIT that returns a WRITE's completion finds its bytes there. Alone
 * on the fabric, the WAIT that would sleep through each copy makes it
 * itself, every one of them (docs/ARCHITECTURE.md, "Who runs the
 * copier").
 */
TEST_F(cp, a_completion_comes_after_its_bytes)
{
	long long made = fab_count("copies_unlocked");
	long long by_wait = fab_count("copies_by_wait");

	for (int round = 0; round < 16; round++) {
		struct icfab_desc d = mv(ICFAB_OP_WRITE, self->q, self->a1, 0,
					 self->bkey, 0, RSIZE, round);
		struct icfab_cqe c;

		fill(self->a1m, RSIZE, 100 + round);
		ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
		ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
		ASSERT_EQ(0, c.status);
		ASSERT_EQ(0, memcmp(self->a1m, self->bm, RSIZE));
	}
	if (made < 0 || by_wait < 0)
		return;	/* no debugfs counts */
	EXPECT_EQ(made + 16, fab_count("copies_unlocked"));
	EXPECT_EQ(by_wait + 16, fab_count("copies_by_wait"));
}

/*
 * WRITE, FENCE, READ back: the READ starts after the FENCE, which
 * completes only after the WRITE's bytes are in; and a READ's bytes are
 * in when its completion comes.
 */
TEST_F(cp, a_fence_comes_after_the_bytes_before_it)
{
	for (int round = 0; round < 8; round++) {
		struct icfab_desc d[3];
		struct icfab_cqe c[3];

		fill(self->a1m, RSIZE, 200 + round);
		memset(self->a2m, 0, RSIZE);
		d[0] = mv(ICFAB_OP_WRITE, self->q, self->a1, 0, self->bkey, 0,
			  RSIZE, 1);
		d[1] = (struct icfab_desc){ .op = ICFAB_OP_FENCE,
					    .queue = self->q, .user_tag = 2 };
		d[2] = mv(ICFAB_OP_READ, self->q, self->a2, 0, self->bkey, 0,
			  RSIZE, 3);
		ASSERT_EQ(3, ctx_submit(self->fd, d, 3));
		ASSERT_EQ(3, ctx_wait(self->fd, c, 3, 3, 0, NULL));
		ASSERT_EQ(0, memcmp(self->a1m, self->a2m, RSIZE));
	}
}

/*
 * A scenario in which a context woken by a memory WRITE submits at its
 * finish while a long transfer of its own is still in the engine: times
 * relative to its first submission, in @t (12 of them).
 */
static int scenario(int fd, int q, int q2, uint32_t a1, uint64_t bkey,
		    uint64_t *t)
{
	struct icfab_desc d[2];
	struct icfab_cqe c[3], *x, *w, *y;
	uint64_t t0;

	/* Short, with bytes, to 3; long and timing-only to endpoint 1. */
	d[0] = mv(ICFAB_OP_WRITE, q, a1, 0, bkey, 0, 16 * PAGE, 2);
	d[1] = desc_put(q2, 1, 256 * PAGE, 1);
	if (ctx_submit(fd, d, 2) != 2)
		return -1;
	if (ctx_wait(fd, c, 1, 1, 0, NULL) != 1 || c[0].user_tag != 2)
		return -2;
	d[0] = desc_put(q, 3, 4 * PAGE, 3);
	if (ctx_submit(fd, d, 1) != 1)
		return -3;
	if (ctx_wait(fd, c + 1, 2, 2, 0, NULL) != 2)
		return -4;
	w = by_tag(c, 3, 2);
	x = by_tag(c, 3, 1);
	y = by_tag(c, 3, 3);
	if (!w || !x || !y || w->status || x->status || y->status)
		return -5;
	t0 = w->submit_ps;
	t[0] = w->start_ps - t0;
	t[1] = w->finish_ps - t0;
	t[2] = w->queued_ps;
	t[3] = x->submit_ps - t0;
	t[4] = x->start_ps - t0;
	t[5] = x->finish_ps - t0;
	t[6] = y->submit_ps - t0;
	t[7] = y->start_ps - t0;
	t[8] = y->finish_ps - t0;
	t[9] = y->queued_ps;
	t[10] = x->queued_ps;
	t[11] = y->submit_ps - w->finish_ps;
	return 0;
}

/*
 * The engine waits at a completion whose bytes are being copied: what
 * the woken context submits at that instant is timed as if the copy
 * had been made under the lock.
 */
TEST_F(cp, emulated_times_are_those_of_copies_under_the_lock)
{
	uint64_t under[12], off[12];

	ASSERT_EQ(0, param_set(PARAM, 0));
	ASSERT_EQ(0, scenario(self->fd, self->q, self->q2, self->a1,
			      self->bkey, under));
	ASSERT_EQ(0, param_set(PARAM, 1));
	ASSERT_EQ(0, scenario(self->fd, self->q, self->q2, self->a1,
			      self->bkey, off));
	/* The next WRITE was submitted at the first one's finish... */
	EXPECT_EQ(0, under[11]);
	/* ...and everything is the same to the picosecond. */
	for (int k = 0; k < 12; k++) {
		if (under[k] != off[k])
			printf("# time %d: %llu under the lock, %llu off it\n",
			       k, (unsigned long long)under[k],
			       (unsigned long long)off[k]);
		EXPECT_EQ(under[k], off[k]);
	}
}

/*
 * A child's own context on endpoint 0: a queue of @depth in *@q, a region
 * in *@h mapped at *@m, filled from @seed. 0, or the exit status to give.
 */
static int child_ctx(int *fd, int *q, uint32_t depth, uint32_t *h,
		     unsigned char **m, unsigned int seed)
{
	uint64_t key;

	*fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (*fd < 0 || ctx_attach(*fd, 0))
		return 1;
	*q = ctx_queue(*fd, 0, depth);
	if (*q < 0 || region_map(*fd, 0, RSIZE, ICFAB_ACCESS_ALL, h, &key, m))
		return 2;
	fill(*m, RSIZE, seed);
	return 0;
}

/* A child with WRITEs into the parent's region; @how: close or exit. */
static int writer(uint64_t bkey, int how, int ready)
{
	struct icfab_desc d[16];
	struct icfab_cqe c[16];
	unsigned char *m;
	int fd, q, err;
	uint32_t h;

	err = child_ctx(&fd, &q, 16, &h, &m, 5);
	if (err)
		return err;
	for (int i = 0; i < 16; i++)
		d[i] = mv(ICFAB_OP_WRITE, q, h, 0, bkey, 0, RSIZE, i);
	if (ctx_submit(fd, d, 16) != 16)
		return 3;
	if (how == 0) {
		/* Closed with copies pending, the region freed first. */
		ctx_region_free(fd, h);
		munmap(m, RSIZE);
		close(fd);
		return 0;
	}
	/* Killed while it waits, copies under way. */
	if (write(ready, "r", 1) != 1)
		return 4;
	ctx_wait(fd, c, 16, 16, 0, NULL);
	return 0;
}

/*
 * Contexts that close or are killed with copies pending into a region
 * of another's: the fabric goes on (a WRITE of ours, elsewhere, lands),
 * and the runner finds no warning or leak.
 */
TEST_F(cp, closed_and_killed_with_copies_pending)
{
	unsigned char *cm;
	uint32_t ch;
	uint64_t ckey;

	ASSERT_EQ(0, region_map(self->fd, 3, PAGE, ICFAB_ACCESS_ALL, &ch, &ckey,
				&cm));
	for (int how = 0; how < 2; how++) {
		for (int round = 0; round < 4; round++) {
			struct icfab_desc d;
			struct icfab_cqe c;
			int p[2], status;
			pid_t pid;
			char byte;

			ASSERT_EQ(0, pipe(p));
			pid = fork();
			ASSERT_LE(0, pid);
			if (!pid) {
				close(p[0]);
				_exit(writer(self->bkey, how, p[1]));
			}
			close(p[1]);
			if (how) {
				ASSERT_EQ(1, read(p[0], &byte, 1));
				/* Some copies done, some not: a few ms. */
				usleep(1000 * (round + 1));
				kill(pid, SIGKILL);
			}
			close(p[0]);
			ASSERT_EQ(pid, waitpid(pid, &status, 0));
			if (!how)
				ASSERT_EQ(0, WEXITSTATUS(status));
			/* The fabric goes on: a WRITE of ours lands. */
			d = mv(ICFAB_OP_WRITE, self->q, self->a1, 0, ckey, 0,
			       PAGE, 7);
			fill(self->a1m, PAGE, 9 + round);
			ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
			ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
			ASSERT_EQ(0, c.status);
			ASSERT_EQ(0, memcmp(cm, self->a1m, PAGE));
		}
	}
	munmap(cm, PAGE);
}

/* A child's WRITE into @bkey, then its WAIT, which sleeps until woken. */
static int sleeper(uint64_t bkey, int ready)
{
	struct icfab_desc d;
	struct icfab_cqe c;
	unsigned char *m;
	int fd, q, err;
	uint32_t h;

	err = child_ctx(&fd, &q, 4, &h, &m, 77);
	if (err)
		return err;
	d = mv(ICFAB_OP_WRITE, q, h, 0, bkey, 0, RSIZE, 1);
	if (ctx_submit(fd, &d, 1) != 1)
		return 3;
	if (write(ready, "r", 1) != 1)
		return 4;
	/* Another context holds the engine before the WRITE's finish. */
	if (ctx_wait(fd, &c, 1, 1, 20000, NULL) != 1)
		return 5;
	return c.status ? 6 : 0;
}

/*
 * A WAIT asleep when its WRITE lands, in a run of the engine that no
 * WAIT made (another context's DELAY moving its clock past the finish):
 * the copier's work item copies and posts it, and the WAIT wakes with
 * the bytes there.
 */
TEST_F(cp, a_sleeping_wait_is_woken_by_the_copier)
{
	for (int round = 0; round < 4; round++) {
		struct icfab_desc d = { .op = ICFAB_OP_DELAY, .queue = self->q,
					.len = 1000000000000ULL,
					.user_tag = 9 };
		int p[2], status;
		unsigned char *want = malloc(RSIZE);
		pid_t pid;
		char byte;

		ASSERT_NE(NULL, want);
		fill(want, RSIZE, 77);
		memset(self->bm, 0, RSIZE);
		ASSERT_EQ(0, pipe(p));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			close(p[0]);
			_exit(sleeper(self->bkey, p[1]));
		}
		close(p[1]);
		ASSERT_EQ(1, read(p[0], &byte, 1));
		close(p[0]);
		/* Its WAIT asleep by now: nothing of it can land yet. */
		usleep(300000);
		ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status));
		ASSERT_EQ(0, memcmp(want, self->bm, RSIZE));
		free(want);
	}
}

TEST_HARNESS_MAIN
