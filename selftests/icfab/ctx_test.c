// SPDX-License-Identifier: GPL-2.0
/*
 * Who holds virtual time (ICFAB_F_CTX_ADMIN): CTX_GET lists the attached
 * contexts with their owner, endpoints, clock and state, and marks the
 * one holding the engine back; CTX_EVICT (CAP_NET_ADMIN) ends one as its
 * owner's exit would, which frees the others from a context that never
 * waits. Bad requests get a clear error and change nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define SEG	4096ULL
#define MAX_ROWS 8

struct row {
	uint32_t id, pid, uid, eps, first, state;
	uint64_t clock_ps;
};

struct rows {
	struct row r[MAX_ROWS];
	unsigned int n;
};

static int row_cb(const struct genl_reply *rp, void *arg)
{
	static const int need[] = {
		ICFAB_A_CTX_ID, ICFAB_A_CTX_PID, ICFAB_A_CTX_UID,
		ICFAB_A_CTX_ENDPOINTS, ICFAB_A_CTX_FIRST_ENDPOINT,
		ICFAB_A_CTX_CLOCK_PS, ICFAB_A_CTX_STATE, ICFAB_A_CTX_HELD_NS,
	};
	struct rows *rs = arg;
	struct row *r;

	for (unsigned int i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!rp->tb[need[i]])
			return -EBADMSG;
	if (rs->n == MAX_ROWS)
		return -E2BIG;
	r = &rs->r[rs->n++];
	r->id = genl_u32(rp->tb[ICFAB_A_CTX_ID]);
	r->pid = genl_u32(rp->tb[ICFAB_A_CTX_PID]);
	r->uid = genl_u32(rp->tb[ICFAB_A_CTX_UID]);
	r->eps = genl_u32(rp->tb[ICFAB_A_CTX_ENDPOINTS]);
	r->first = genl_u32(rp->tb[ICFAB_A_CTX_FIRST_ENDPOINT]);
	r->state = genl_u32(rp->tb[ICFAB_A_CTX_STATE]);
	r->clock_ps = genl_u64(rp->tb[ICFAB_A_CTX_CLOCK_PS]);
	return 0;
}

static int ctx_list(struct genl_sock *gs, struct rows *rs)
{
	struct genl_msg m;

	rs->n = 0;
	genl_msg_init(&m, gs->family, ICFAB_CMD_CTX_GET, NLM_F_DUMP);
	return genl_request(gs, &m, row_cb, rs);
}

static const struct row *row_of(const struct rows *rs, uint32_t first)
{
	for (unsigned int i = 0; i < rs->n; i++)
		if (rs->r[i].first == first)
			return &rs->r[i];
	return NULL;
}

/* Until the context on endpoint @first is in its WAIT (10 s at most). */
static int until_waiting(struct genl_sock *gs, uint32_t first)
{
	struct rows rs;

	for (int i = 0; i < 1000; i++) {
		const struct row *r;

		if (ctx_list(gs, &rs))
			return -1;
		r = row_of(&rs, first);
		if (r && (r->state & ICFAB_CTX_WAITING))
			return 0;
		usleep(10000);
	}
	return -1;
}

struct waiter {
	int fd;
	unsigned int min;
	int got;
	struct icfab_cqe c[4];
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;

	w->got = ctx_wait(w->fd, w->c, w->min, 4, 20000, NULL);
	return NULL;
}

FIXTURE(ctx) {
	struct genl_sock gs;
	int a, b, qa, qb;
};

/* A on endpoint 0 and B on endpoint 1; B never waits unless told. */
FIXTURE_SETUP(ctx)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 4));
	self->a = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	self->b = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->a);
	ASSERT_LE(0, self->b);
	ASSERT_EQ(0, ctx_attach(self->a, 0));
	ASSERT_EQ(0, ctx_attach(self->b, 1));
	self->qa = ctx_queue(self->a, 0, 8);
	self->qb = ctx_queue(self->b, 1, 8);
	ASSERT_LE(0, self->qa);
	ASSERT_LE(0, self->qb);
}

FIXTURE_TEARDOWN(ctx)
{
	if (self->a >= 0)
		close(self->a);
	if (self->b >= 0)
		close(self->b);
	fabric_close(&self->gs);
}

TEST_F(ctx, info_announces_ctx_admin)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, ioctl(self->a, ICFAB_IOC_INFO, &in));
	EXPECT_TRUE(in.features & ICFAB_F_CTX_ADMIN);
}

TEST_F(ctx, the_list_shows_every_attached_context_and_who_holds)
{
	struct icfab_desc d = {
		.op = ICFAB_OP_DELAY, .queue = self->qa, .len = 1000000,
		.user_tag = 1,
	};
	const struct row *ra, *rb;
	struct rows rs;
	int c;

	/* Opened, not attached: not a member of the fabric, not listed. */
	c = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	close(c);
	ASSERT_EQ(2, rs.n);
	ra = row_of(&rs, 0);
	rb = row_of(&rs, 1);
	ASSERT_NE(NULL, ra);
	ASSERT_NE(NULL, rb);
	/* In attach order, which is id order. */
	EXPECT_EQ(ra, &rs.r[0]);
	EXPECT_LT(0, ra->id);
	EXPECT_LT(ra->id, rb->id);
	EXPECT_EQ(getpid(), ra->pid);
	EXPECT_EQ(geteuid(), ra->uid);
	EXPECT_EQ(1, ra->eps);
	EXPECT_EQ(0, ra->state & (ICFAB_CTX_DEAD | ICFAB_CTX_WAITING |
				  ICFAB_CTX_FREE_RUN | ICFAB_CTX_RECEIVER));

	/* A moves its clock on: B, still at 0, is the one holding. */
	ASSERT_EQ(1, ctx_submit(self->a, &d, 1));
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ra = row_of(&rs, 0);
	rb = row_of(&rs, 1);
	ASSERT_NE(NULL, ra);
	ASSERT_NE(NULL, rb);
	EXPECT_EQ(1000000, ra->clock_ps);
	EXPECT_EQ(0, rb->clock_ps);
	EXPECT_EQ(0, ra->state & ICFAB_CTX_HOLDS);
	EXPECT_EQ(ICFAB_CTX_HOLDS, rb->state & ICFAB_CTX_HOLDS);

	/* Gone with its file. */
	close(self->b);
	self->b = -1;
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ASSERT_EQ(1, rs.n);
	EXPECT_EQ(0, rs.r[0].first);
}

static int list_and_evict_as_user(void *arg)
{
	uint32_t id = *(uint32_t *)arg;
	struct genl_sock gs;
	struct rows rs;

	if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME))
		return 10;
	/* Anyone may list, as anyone may run ps... */
	if (ctx_list(&gs, &rs) || rs.n != 2)
		return 11;
	/* ...only an admin may end another's context. */
	if (ctx_evict(&gs, id) != -EPERM)
		return 12;
	genl_close(&gs);
	return 0;
}

TEST_F(ctx, only_an_admin_may_evict)
{
	struct rows rs;
	uint32_t id;

	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ASSERT_NE(NULL, row_of(&rs, 1));
	id = row_of(&rs, 1)->id;
	EXPECT_EQ(0, as_user(65534, list_and_evict_as_user, &id));
	/* Nothing changed. */
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	EXPECT_EQ(2, rs.n);
	EXPECT_EQ(0, row_of(&rs, 1)->state & ICFAB_CTX_DEAD);
}

/*
 * B never waits: A's transfer cannot finish and A's WAIT sleeps. Evicting
 * B lets the engine go on and A's WAIT returns its completion.
 */
TEST_F(ctx, evicting_a_context_that_never_waits_frees_the_others)
{
	struct waiter w = { .fd = self->a, .min = 1 };
	struct icfab_desc d = desc_put(self->qa, 2, 4 * SEG, 7);
	struct rows rs;
	uint32_t id_b;
	pthread_t t;

	ASSERT_EQ(1, ctx_submit(self->a, &d, 1));
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ASSERT_NE(NULL, row_of(&rs, 1));
	id_b = row_of(&rs, 1)->id;
	ASSERT_EQ(0, pthread_create(&t, NULL, waiter_fn, &w));
	/* Held at B's clock, 0: A's WAIT cannot be done. */
	ASSERT_EQ(0, until_waiting(&self->gs, 0));
	ASSERT_EQ(0, ctx_evict(&self->gs, id_b));
	pthread_join(t, NULL);
	ASSERT_EQ(1, w.got);
	EXPECT_EQ(7, w.c[0].user_tag);
	EXPECT_EQ(0, w.c[0].status);

	/* B is listed as ended until its file closes, and submits no more. */
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ASSERT_NE(NULL, row_of(&rs, 1));
	EXPECT_EQ(ICFAB_CTX_DEAD, row_of(&rs, 1)->state & ICFAB_CTX_DEAD);
	EXPECT_EQ(0, row_of(&rs, 1)->state & ICFAB_CTX_HOLDS);
	d = desc_put(self->qb, 3, SEG, 8);
	EXPECT_EQ(-ECANCELED, ctx_submit(self->b, &d, 1));
}

/*
 * B's DELAYs, once it has nothing in flight, go under its own lock and
 * not the fabric's (data.c, icfab_submit_fast()): the clock they move
 * still runs the engine, which A's WAIT is held back by, and they come
 * back as they would under the fabric lock.
 */
TEST_F(ctx, delays_off_the_fabric_lock_release_a_wait)
{
	struct waiter w = { .fd = self->a, .min = 1 };
	struct icfab_desc d = desc_put(self->qa, 2, 4 * SEG, 7);
	struct icfab_desc dl[3] = {
		{ .op = ICFAB_OP_DELAY, .queue = self->qb, .len = 5,
		  .user_tag = 1 },
		{ .op = ICFAB_OP_DELAY, .queue = self->qb, .len = 1000000000000ULL,
		  .user_tag = 2 },
		{ .op = ICFAB_OP_DELAY, .queue = self->qb, .len = 7,
		  .user_tag = 3 },
	};
	struct icfab_cqe c[3];
	struct rows rs;
	pthread_t t;

	/* The first goes under the fabric lock, and lets the next go. */
	ASSERT_EQ(1, ctx_submit(self->b, &dl[0], 1));
	ASSERT_EQ(1, ctx_submit(self->a, &d, 1));
	ASSERT_EQ(0, pthread_create(&t, NULL, waiter_fn, &w));
	/* Held at B's clock, 5 ps: A's WAIT cannot be done. */
	ASSERT_EQ(0, until_waiting(&self->gs, 0));
	ASSERT_EQ(2, ctx_submit(self->b, &dl[1], 2));
	pthread_join(t, NULL);
	ASSERT_EQ(1, w.got);
	EXPECT_EQ(7, w.c[0].user_tag);
	EXPECT_EQ(0, w.c[0].status);
	EXPECT_GT(1000000000005ULL, w.c[0].finish_ps);

	ASSERT_EQ(3, ctx_wait(self->b, c, 3, 3, 1000, NULL));
	EXPECT_EQ(1, c[0].user_tag);
	EXPECT_EQ(0, c[0].submit_ps);
	EXPECT_EQ(5, c[0].finish_ps);
	EXPECT_EQ(2, c[1].user_tag);
	EXPECT_EQ(5, c[1].start_ps);
	EXPECT_EQ(1000000000005ULL, c[1].finish_ps);
	EXPECT_EQ(3, c[2].user_tag);
	EXPECT_EQ(1000000000005ULL, c[2].submit_ps);
	EXPECT_EQ(1000000000012ULL, c[2].finish_ps);
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ASSERT_NE(NULL, row_of(&rs, 1));
	EXPECT_EQ(1000000000012ULL, row_of(&rs, 1)->clock_ps);
}

/*
 * A WAIT that leaves nothing in flight gives the context's DELAYs their
 * own path back (a WAIT clears it, and a SUBMIT + WAIT loop of DELAYs
 * never had it again); one that leaves a WRITE in flight does not. The
 * times are those of the path under the fabric lock.
 */
TEST_F(ctx, a_wait_with_nothing_in_flight_gives_delays_their_path_back)
{
	struct icfab_desc dl[2] = {
		{ .op = ICFAB_OP_DELAY, .queue = self->qa, .len = 7,
		  .user_tag = 2 },
		{ .op = ICFAB_OP_DELAY, .queue = self->qa, .len = 11,
		  .user_tag = 3 },
	};
	struct icfab_desc d = {
		.op = ICFAB_OP_DELAY, .queue = self->qa, .len = 5,
		.user_tag = 1,
	};
	struct icfab_desc fd[2] = {
		{ .op = ICFAB_OP_FENCE, .queue = self->qa, .user_tag = 6 },
		d,
	};
	struct icfab_desc wd[2] = {
		desc_put(self->qa, 2, SEG, 4),
		{ .op = ICFAB_OP_DELAY, .queue = self->qa, .len = 13,
		  .user_tag = 5 },
	};
	struct icfab_cqe c[2];
	uint64_t clock;
	long long n;

	n = fab_count("fast_delays");
	ASSERT_LE(0, n);
	/*
	 * The first goes under the fabric lock (a FENCE first takes the
	 * chunk there: the QUEUE_CREATE left the path set); its WAIT reaps
	 * it.
	 */
	ASSERT_EQ(2, ctx_submit(self->a, fd, 2));
	ASSERT_EQ(2, ctx_wait(self->a, c, 2, 2, 1000, &clock));
	EXPECT_EQ(6, c[0].user_tag);
	EXPECT_EQ(0, c[0].finish_ps);
	EXPECT_EQ(5, c[1].finish_ps);
	EXPECT_EQ(5, clock);
	EXPECT_EQ(n, fab_count("fast_delays"));

	/* After the WAIT: under A's own lock. */
	ASSERT_EQ(2, ctx_submit(self->a, dl, 2));
	EXPECT_EQ(n + 2, fab_count("fast_delays"));
	ASSERT_EQ(2, ctx_wait(self->a, c, 2, 2, 1000, &clock));
	EXPECT_EQ(2, c[0].user_tag);
	EXPECT_EQ(5, c[0].submit_ps);
	EXPECT_EQ(5, c[0].start_ps);
	EXPECT_EQ(12, c[0].finish_ps);
	EXPECT_EQ(3, c[1].user_tag);
	EXPECT_EQ(12, c[1].submit_ps);
	EXPECT_EQ(23, c[1].finish_ps);
	EXPECT_EQ(23, clock);

	/* Again, after that WAIT too. */
	ASSERT_EQ(1, ctx_submit(self->a, &dl[0], 1));
	EXPECT_EQ(n + 3, fab_count("fast_delays"));
	ASSERT_EQ(1, ctx_wait(self->a, c, 1, 1, 1000, &clock));
	EXPECT_EQ(23, c[0].submit_ps);
	EXPECT_EQ(30, c[0].finish_ps);
	EXPECT_EQ(30, clock);

	/*
	 * A WRITE held in flight (B holds the engine at 0): the WAIT for
	 * the DELAY behind it leaves it there, and the next DELAY goes
	 * under the fabric lock, with the same times.
	 */
	ASSERT_EQ(2, ctx_submit(self->a, wd, 2));
	ASSERT_EQ(1, ctx_wait(self->a, c, 1, 1, 1000, &clock));
	EXPECT_EQ(5, c[0].user_tag);
	EXPECT_EQ(43, c[0].finish_ps);
	EXPECT_EQ(43, clock);
	ASSERT_EQ(1, ctx_submit(self->a, &d, 1));
	EXPECT_EQ(n + 3, fab_count("fast_delays"));
	ASSERT_EQ(1, ctx_wait(self->a, c, 1, 1, 1000, &clock));
	EXPECT_EQ(1, c[0].user_tag);
	EXPECT_EQ(43, c[0].submit_ps);
	EXPECT_EQ(48, c[0].finish_ps);
}

TEST_F(ctx, bad_evictions_change_nothing)
{
	struct rows rs;
	uint32_t id_b;

	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ASSERT_NE(NULL, row_of(&rs, 1));
	id_b = row_of(&rs, 1)->id;
	EXPECT_EQ(-EINVAL, ctx_evict(&self->gs, 0));
	EXPECT_EQ(-ENOENT, ctx_evict(&self->gs, id_b + 1000));
	EXPECT_NE(0, self->gs.extack[0]);
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	EXPECT_EQ(2, rs.n);
	for (unsigned int i = 0; i < rs.n; i++)
		EXPECT_EQ(0, rs.r[i].state & ICFAB_CTX_DEAD);
	ASSERT_EQ(0, ctx_evict(&self->gs, id_b));
	EXPECT_EQ(-EALREADY, ctx_evict(&self->gs, id_b));
}

/*
 * An evicted context's queued descriptor completes with -ECANCELED, its
 * WAIT under way returns with what has completed, and a WAIT for more
 * than can ever come fails at once. Its transfer already in the engine
 * keeps its place on the links and completes with -ECANCELED.
 */
TEST_F(ctx, an_evicted_context_gets_its_descriptors_back)
{
	struct icfab_desc d[2] = {
		desc_put(self->qa, 2, 4 * SEG, 1),
		{ .op = ICFAB_OP_FENCE, .queue = self->qa, .user_tag = 2 },
	};
	struct waiter w = { .fd = self->a, .min = 2 };
	struct icfab_cqe c[2];
	struct rows rs;
	uint32_t id_a;
	pthread_t t;

	/* B holds at 0: the WRITE stays in the engine, the FENCE behind it. */
	ASSERT_EQ(2, ctx_submit(self->a, d, 2));
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ASSERT_NE(NULL, row_of(&rs, 0));
	id_a = row_of(&rs, 0)->id;
	ASSERT_EQ(0, pthread_create(&t, NULL, waiter_fn, &w));
	ASSERT_EQ(0, until_waiting(&self->gs, 0));
	ASSERT_EQ(0, ctx_evict(&self->gs, id_a));
	pthread_join(t, NULL);
	ASSERT_EQ(1, w.got);
	EXPECT_EQ(2, w.c[0].user_tag);
	EXPECT_EQ(-ECANCELED, w.c[0].status);

	/* One transfer left in flight: two can never come. */
	EXPECT_EQ(-EDEADLK, ctx_wait(self->a, c, 2, 2, 0, NULL));
	/* It finishes once B stops holding the engine back. */
	close(self->b);
	self->b = -1;
	ASSERT_EQ(1, ctx_wait(self->a, c, 1, 1, 20000, NULL));
	EXPECT_EQ(1, c[0].user_tag);
	EXPECT_EQ(-ECANCELED, c[0].status);
	EXPECT_LT(0, c[0].finish_ps);
}

/*
 * Timing-only WRITEs of two contexts are accepted under each context's
 * own lock, not the fabric's, once a first SUBMIT under the fabric lock
 * gave the path (fast_writes counts them: a SUBMIT that took the fabric
 * lock does not). They complete as the same WRITEs under the lock do:
 * A's and B's, the same shape one hop along the ring, alike to the ps.
 */
TEST_F(ctx, writes_of_two_contexts_go_off_the_fabric_lock)
{
	struct icfab_desc wa[2] = {
		desc_put(self->qa, 1, SEG, 1), desc_put(self->qa, 1, SEG, 2),
	};
	struct icfab_desc wb[2] = {
		desc_put(self->qb, 2, SEG, 1), desc_put(self->qb, 2, SEG, 2),
	};
	struct waiter w = { .fd = self->a, .min = 3 };
	struct waiter wbw = { .fd = self->b, .min = 3 };
	long long n = fab_count("fast_writes");
	pthread_t ta, tb;

	ASSERT_LE(0, n);
	/*
	 * The first of each too: their QUEUE_CREATE left the path set,
	 * with credit.
	 */
	ASSERT_EQ(1, ctx_submit(self->a, &wa[0], 1));
	ASSERT_EQ(1, ctx_submit(self->b, &wb[0], 1));
	EXPECT_EQ(n + 2, fab_count("fast_writes"));
	ASSERT_EQ(1, ctx_submit(self->a, &wa[1], 1));
	ASSERT_EQ(1, ctx_submit(self->b, &wb[1], 1));
	EXPECT_EQ(n + 4, fab_count("fast_writes"));
	/* And once more each, the same way. */
	ASSERT_EQ(1, ctx_submit(self->a, &wa[0], 1));
	ASSERT_EQ(1, ctx_submit(self->b, &wb[0], 1));
	EXPECT_EQ(n + 6, fab_count("fast_writes"));

	/*
	 * A in its WAIT, which started its two: B holds them at 0 until it
	 * waits too. A is woken at its last finish and holds the engine
	 * there, which B's last shares (the same shape): B has it once A
	 * has closed.
	 */
	ASSERT_EQ(0, pthread_create(&ta, NULL, waiter_fn, &w));
	ASSERT_EQ(0, until_waiting(&self->gs, 0));
	ASSERT_EQ(0, pthread_create(&tb, NULL, waiter_fn, &wbw));
	pthread_join(ta, NULL);
	ASSERT_EQ(3, w.got);
	close(self->a);
	self->a = -1;
	pthread_join(tb, NULL);
	ASSERT_EQ(3, wbw.got);
	for (int i = 0; i < 3; i++) {
		const struct icfab_cqe *c = wbw.c;

		EXPECT_EQ(0, w.c[i].status);
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(0, w.c[i].submit_ps);
		EXPECT_EQ(w.c[i].user_tag, c[i].user_tag);
		EXPECT_EQ(w.c[i].start_ps, c[i].start_ps);
		EXPECT_EQ(w.c[i].finish_ps, c[i].finish_ps);
		EXPECT_EQ(w.c[i].queued_ps, c[i].queued_ps);
	}
	EXPECT_LT(w.c[0].finish_ps, w.c[1].finish_ps);
}

/*
 * A context closed with WRITEs accepted off the fabric lock: they go
 * into the engine as it leaves, as those in flight do, and the other
 * context goes on as if they had gone in at their SUBMIT.
 */
TEST_F(ctx, a_close_with_writes_accepted_off_the_lock_loses_nothing)
{
	struct icfab_desc w = desc_put(self->qa, 2, 4 * SEG, 1);
	struct icfab_desc d = {
		.op = ICFAB_OP_DELAY, .queue = self->qb, .len = 1000000,
		.user_tag = 9,
	};
	struct icfab_cqe c;
	long long n = fab_count("fast_writes");

	ASSERT_LE(0, n);
	ASSERT_EQ(1, ctx_submit(self->a, &w, 1));
	ASSERT_EQ(1, ctx_submit(self->a, &w, 1));
	ASSERT_EQ(1, ctx_submit(self->a, &w, 1));
	EXPECT_EQ(n + 3, fab_count("fast_writes"));
	close(self->a);
	self->a = -1;
	ASSERT_EQ(1, ctx_submit(self->b, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->b, &c, 1, 1, 20000, NULL));
	EXPECT_EQ(9, c.user_tag);
	EXPECT_EQ(1000000, c.finish_ps);
}

/*
 * Evicted with a WRITE accepted off the fabric lock, a context gets it
 * back as it gets one that was in the engine: -ECANCELED, once the
 * other context lets the engine run.
 */
TEST_F(ctx, an_evicted_context_gets_its_accepted_writes_back)
{
	struct icfab_desc w[2] = {
		desc_put(self->qa, 2, 4 * SEG, 1),
		desc_put(self->qa, 2, 4 * SEG, 2),
	};
	struct icfab_cqe c[2];
	long long n = fab_count("fast_writes");
	struct rows rs;

	ASSERT_LE(0, n);
	ASSERT_EQ(1, ctx_submit(self->a, &w[0], 1));
	ASSERT_EQ(1, ctx_submit(self->a, &w[1], 1));
	EXPECT_EQ(n + 2, fab_count("fast_writes"));
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ASSERT_NE(NULL, row_of(&rs, 0));
	ASSERT_EQ(0, ctx_evict(&self->gs, row_of(&rs, 0)->id));
	close(self->b);
	self->b = -1;
	ASSERT_EQ(2, ctx_wait(self->a, c, 2, 2, 20000, NULL));
	EXPECT_EQ(1, c[0].user_tag);
	EXPECT_EQ(-ECANCELED, c[0].status);
	EXPECT_EQ(2, c[1].user_tag);
	EXPECT_EQ(-ECANCELED, c[1].status);
}

/*
 * An evicted context's timing-only NOTIFY WRITE in the engine lands
 * nothing: it completes with -ECANCELED, and so does its receive
 * completion at the receiver, with the WRITE's times (the completion
 * that icfab_data_complete_notify() posts in place).
 */
TEST_F(ctx, an_evicted_senders_notify_write_cancels_its_receive_completion)
{
	struct icfab_desc d = desc_put(self->qa, 1, 4 * SEG, 1);
	struct icfab_cqe r[1], c[1];
	struct rows rs;
	int rq;

	rq = ctx_recv_queue(self->b, 1, 4);
	ASSERT_LE(0, rq);
	d.flags |= ICFAB_DESC_F_NOTIFY;
	d.imm = 5;
	/* B holds at 0: the WRITE stays in the engine. */
	ASSERT_EQ(1, ctx_submit(self->a, &d, 1));
	ASSERT_EQ(0, ctx_list(&self->gs, &rs));
	ASSERT_NE(NULL, row_of(&rs, 0));
	ASSERT_EQ(0, ctx_evict(&self->gs, row_of(&rs, 0)->id));
	/* B's WAIT lets the engine run to the WRITE's finish. */
	ASSERT_EQ(1, ctx_wait(self->b, r, 1, 1, 20000, NULL));
	EXPECT_EQ((uint32_t)rq, r[0].queue);
	EXPECT_EQ(5, r[0].user_tag);	/* from endpoint 0, imm 5 */
	EXPECT_EQ(-ECANCELED, r[0].status);
	ASSERT_EQ(1, ctx_wait(self->a, c, 1, 1, 20000, NULL));
	EXPECT_EQ(1, c[0].user_tag);
	EXPECT_EQ(-ECANCELED, c[0].status);
	EXPECT_EQ(c[0].submit_ps, r[0].submit_ps);
	EXPECT_EQ(c[0].start_ps, r[0].start_ps);
	EXPECT_EQ(c[0].finish_ps, r[0].finish_ps);
	EXPECT_EQ(c[0].queued_ps, r[0].queued_ps);
	EXPECT_LT(0, r[0].finish_ps);
	EXPECT_EQ(0, ctx_queue_destroy(self->b, rq));
}

static int write_knob(const char *path, unsigned int v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%u\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

#define XFERS_KNOB "/sys/kernel/debug/icfab/engine_xfers"
#define EVENTS_KNOB "/sys/kernel/debug/icfab/engine_events"

/*
 * The room WRITEs are accepted for off the fabric lock is the engine's,
 * lent, never grown for: with a transfer table of 8 and two contexts,
 * each gets 2 transfers of credit at its QUEUE_CREATE (half of the 8,
 * split two ways, at most what is free). A takes one for its WRITE;
 * B's seven take its two, and its other five, under the fabric lock,
 * need A's slot not yet used: A's credit goes back rather than the
 * table growing, so A's next WRITE goes under the fabric lock, where
 * the table grows. Every one is accepted and completes.
 */
TEST_F(ctx, credit_not_used_goes_back_before_the_tables_grow)
{
	struct icfab_desc wa[2], wb[7];
	struct icfab_cqe c[2];
	long long n;
	int a, b, qa, qb;

	close(self->a);
	close(self->b);
	self->a = self->b = -1;
	ASSERT_EQ(0, write_knob(XFERS_KNOB, 8));
	a = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	b = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	self->a = a;
	self->b = b;
	ASSERT_EQ(0, ctx_attach(a, 0));
	ASSERT_EQ(0, ctx_attach(b, 1));
	/* The engine is built: the table stays 8 until it grows. */
	EXPECT_EQ(0, write_knob(XFERS_KNOB, 16384));
	EXPECT_EQ(8, fab_count("engine_xfers_cap"));
	qa = ctx_queue(a, 0, 8);
	qb = ctx_queue(b, 1, 8);
	ASSERT_LE(0, qa);
	ASSERT_LE(0, qb);
	for (int i = 0; i < 2; i++)
		wa[i] = desc_put(qa, 2, SEG, i + 1);
	for (int i = 0; i < 7; i++)
		wb[i] = desc_put(qb, 3, SEG, i + 1);
	n = fab_count("fast_writes");
	ASSERT_LE(0, n);
	EXPECT_EQ(4, fab_count("granted_xfers"));
	ASSERT_EQ(1, ctx_submit(a, &wa[0], 1));
	EXPECT_EQ(n + 1, fab_count("fast_writes"));
	EXPECT_EQ(4, fab_count("granted_xfers"));
	/*
	 * 1 + 7 fill the table: B's two on its credit, its last five
	 * under the fabric lock, for which A's unused slot comes back. A's
	 * accepted WRITE keeps its own.
	 */
	ASSERT_EQ(7, ctx_submit(b, wb, 7));
	EXPECT_EQ(n + 3, fab_count("fast_writes"));
	EXPECT_EQ(8, fab_count("engine_xfers_cap"));
	EXPECT_EQ(1, fab_count("granted_xfers"));
	/* No credit left: under the fabric lock, where the table grows. */
	ASSERT_EQ(1, ctx_submit(a, &wa[1], 1));
	EXPECT_EQ(n + 3, fab_count("fast_writes"));
	EXPECT_EQ(16, fab_count("engine_xfers_cap"));

	close(b);
	self->b = -1;
	ASSERT_EQ(2, ctx_wait(a, c, 2, 2, 20000, NULL));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(i + 1, c[i].user_tag);
	}
}

/*
 * Many contexts with credit do not make the engine's tables larger than
 * their WRITEs need: sixteen contexts, two WRITEs each (2 events and a
 * transfer each), on tables of 256 events and 64 transfers. Every WRITE
 * goes off the fabric lock, on a share of the room that each context
 * got at its QUEUE_CREATE, once all sixteen were attached (8 events and
 * 2 transfers, a 32nd); the tables keep their size. (Each context's
 * credit used to be all the room free, up to 16384 events: the next
 * context's WRITE under the fabric lock grew the tables beside it,
 * about 16384 events of table, 768 KiB, per context.) All complete.
 */
TEST_F(ctx, credit_of_many_contexts_does_not_grow_the_tables)
{
	enum { N = 16 };
	struct icfab_cqe c[2];
	int fd[N], q[N];
	long long n;

	close(self->a);
	close(self->b);
	self->a = self->b = -1;
	ASSERT_EQ(0, write_knob(EVENTS_KNOB, 256));
	ASSERT_EQ(0, write_knob(XFERS_KNOB, 64));
	for (int i = 0; i < N; i++) {
		fd[i] = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd[i]);
		ASSERT_EQ(0, ctx_attach(fd[i], i % 4));
	}
	for (int i = 0; i < N; i++) {
		q[i] = ctx_queue(fd[i], i % 4, 8);
		ASSERT_LE(0, q[i]);
	}
	EXPECT_EQ(0, write_knob(EVENTS_KNOB, 256 * 1024));
	EXPECT_EQ(0, write_knob(XFERS_KNOB, 16384));
	EXPECT_EQ(256, fab_count("engine_events_cap"));
	EXPECT_EQ(64, fab_count("engine_xfers_cap"));
	n = fab_count("fast_writes");
	ASSERT_LE(0, n);
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < N; i++) {
			struct icfab_desc w = desc_put(q[i], (i + 1) % 4, SEG,
						       r + 1);

			ASSERT_EQ(1, ctx_submit(fd[i], &w, 1));
		}
	EXPECT_EQ(n + 2 * N, fab_count("fast_writes"));
	EXPECT_EQ(256, fab_count("engine_events_cap"));
	EXPECT_EQ(64, fab_count("engine_xfers_cap"));
	/* What is promised fits beside what is in flight (64, 32). */
	EXPECT_GE(256 - 4 * N, fab_count("granted_events"));
	EXPECT_GE(64 - 2 * N, fab_count("granted_xfers"));

	for (int i = 1; i < N; i++)
		close(fd[i]);
	ASSERT_EQ(2, ctx_wait(fd[0], c, 2, 2, 20000, NULL));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(i + 1, c[i].user_tag);
	}
	close(fd[0]);
}

/*
 * A context's first WRITEs take the WRITE path: its QUEUE_CREATE left
 * the flag set, with credit, before anything of it was in flight (they
 * went under the fabric lock, and gave the credit). Their times are
 * those of the same WRITEs under the fabric lock, by a context whose
 * first SUBMIT starts with a FENCE (which takes the chunk there, and
 * moves nothing on an empty queue). The same after a CQ_SETUP, into the
 * ring.
 */
TEST_F(ctx, a_contexts_first_writes_take_the_path_as_under_the_lock)
{
	enum { N = 3 };
	struct icfab_desc w[N + 1] = {
		{ .op = ICFAB_OP_FENCE, .queue = self->qa, .user_tag = 9 },
	};
	struct icfab_cqe ca[N], cc[N + 1];
	struct icfab_cq_setup cs = { .entries = 8 };
	struct icfab_submit sub = { .nr = 2, .flags = ICFAB_SUBMIT_F_CQ };
	long long n = fab_count("fast_writes");
	int c, qc;

	ASSERT_LE(0, n);
	close(self->b);
	self->b = -1;
	for (int i = 0; i < N; i++)
		w[i + 1] = desc_put(self->qa, 2, (i + 1) * SEG + 3 * i, i + 1);
	EXPECT_LT(0, fab_count("granted_xfers"));
	ASSERT_EQ(N, ctx_submit(self->a, &w[1], N));
	EXPECT_EQ(n + N, fab_count("fast_writes"));
	ASSERT_EQ(N, ctx_wait(self->a, ca, N, N, 20000, NULL));
	close(self->a);
	self->a = -1;

	c = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, c);
	self->a = c;
	ASSERT_EQ(0, ctx_attach(c, 0));
	qc = ctx_queue(c, 0, 8);
	ASSERT_LE(0, qc);
	for (int i = 0; i <= N; i++)
		w[i].queue = qc;
	ASSERT_EQ(N + 1, ctx_submit(c, w, N + 1));
	EXPECT_EQ(n + N, fab_count("fast_writes"));
	ASSERT_EQ(N + 1, ctx_wait(c, cc, N + 1, N + 1, 20000, NULL));
	EXPECT_EQ(9, cc[0].user_tag);
	for (int i = 0; i < N; i++) {
		const struct icfab_cqe *r = &cc[i + 1];

		EXPECT_EQ(i + 1, ca[i].user_tag);
		EXPECT_EQ(ca[i].user_tag, r->user_tag);
		EXPECT_EQ(0, ca[i].status);
		EXPECT_EQ(0, r->status);
		EXPECT_EQ(0, ca[i].submit_ps);
		EXPECT_EQ(ca[i].start_ps - ca[i].submit_ps,
			  r->start_ps - r->submit_ps);
		EXPECT_EQ(ca[i].finish_ps - ca[i].submit_ps,
			  r->finish_ps - r->submit_ps);
		EXPECT_EQ(ca[i].queued_ps, r->queued_ps);
	}

	/* A ring set up: the flag set again at its end. */
	ASSERT_EQ(0, ioctl(c, ICFAB_IOC_CQ_SETUP, &cs));
	sub.descs = (uintptr_t)&w[1];
	ASSERT_EQ(2, ioctl(c, ICFAB_IOC_SUBMIT, &sub));
	EXPECT_EQ(n + N + 2, fab_count("fast_writes"));
}

/*
 * A context of DELAYs alone holds credit too (the flag is set with it at
 * its QUEUE_CREATE and at each WAIT), which it never uses: its share of
 * the room free, never grown for, the same at each WAIT, and all of it
 * back at its close. Its DELAYs take their own path from the first on.
 * (A and B each hold a share of the same size: the tables' defaults make
 * both the cap, 128 transfers.)
 */
TEST_F(ctx, a_context_of_delays_gives_its_credit_back)
{
	struct icfab_desc d = {
		.op = ICFAB_OP_DELAY, .queue = self->qa, .len = 1000,
	};
	struct icfab_cqe c;
	long long n = fab_count("fast_delays");
	long long cap = fab_count("engine_xfers_cap");
	long long g = fab_count("granted_xfers");
	long long ge = fab_count("granted_events");

	ASSERT_LE(0, n);
	EXPECT_LT(0, g);
	EXPECT_LT(0, ge);
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(1, ctx_submit(self->a, &d, 1));
		ASSERT_EQ(1, ctx_wait(self->a, &c, 1, 1, 20000, NULL));
		EXPECT_EQ(1000ULL * (i + 1), c.finish_ps);
	}
	EXPECT_EQ(n + 3, fab_count("fast_delays"));
	EXPECT_EQ(g, fab_count("granted_xfers"));
	EXPECT_EQ(ge, fab_count("granted_events"));
	EXPECT_GE(cap / 2, g);
	EXPECT_EQ(cap, fab_count("engine_xfers_cap"));
	close(self->a);
	self->a = -1;
	EXPECT_EQ(g / 2, fab_count("granted_xfers"));
	EXPECT_EQ(ge / 2, fab_count("granted_events"));
}

TEST_HARNESS_MAIN
