// SPDX-License-Identifier: GPL-2.0
/*
 * Commits under traffic (ICFAB_F_LIVE_COMMIT): new routes, link faults
 * from netlink and from debugfs, links held dark until a fabric time
 * (what an OCS reconfiguration installs), and the commits that must
 * still be refused while contexts are attached.
 *
 * The fabric is stage_ring(8): link 2i is i -> i+1 (port 0), link 2i+1
 * is i+1 -> i (port 1), 50 GB/s and 500 ns each, routes the short way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define BW	50000000000ULL		/* bytes/s */
#define LAT	500000ULL		/* ps */
#define SEG	4096ULL			/* bytes, the default segment size */

/* Move the context's clock forward by @ps (a DELAY and its completion). */
static int delay(int fd, uint32_t q, uint64_t ps)
{
	struct icfab_desc d = { .op = ICFAB_OP_DELAY, .queue = q, .len = ps };
	struct icfab_cqe c;
	int err = ctx_submit(fd, &d, 1);

	return err == 1 ? ctx_wait(fd, &c, 1, 1, 0, NULL) - 1 : -1;
}

struct fab {
	uint64_t generation, commit_ps;
	int has_commit_ps;
};

static int fab_cb(const struct genl_reply *r, void *arg)
{
	struct fab *f = arg;

	f->generation = genl_u64(r->tb[ICFAB_A_FABRIC_GENERATION]);
	f->has_commit_ps = !!r->tb[ICFAB_A_FABRIC_COMMIT_PS];
	if (f->has_commit_ps)
		f->commit_ps = genl_u64(r->tb[ICFAB_A_FABRIC_COMMIT_PS]);
	return 0;
}

static struct fab fab_get(struct genl_sock *gs)
{
	struct fab f = { 0 };
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_GET, 0);
	genl_request(gs, &m, fab_cb, &f);
	return f;
}

struct lnk {
	uint32_t state;
	uint64_t up_at_ps;		/* 0 when not reported */
	uint8_t hold_fail;
};

static int lnk_cb(const struct genl_reply *r, void *arg)
{
	struct lnk *l = arg;

	l->state = genl_u32(r->tb[ICFAB_A_LINK_STATE]);
	if (r->tb[ICFAB_A_LINK_UP_AT_PS])
		l->up_at_ps = genl_u64(r->tb[ICFAB_A_LINK_UP_AT_PS]);
	if (r->tb[ICFAB_A_LINK_HOLD_FAIL])
		l->hold_fail = *(uint8_t *)((char *)r->tb[ICFAB_A_LINK_HOLD_FAIL] +
					   NLA_HDRLEN);
	return 0;
}

static struct lnk lnk_get(struct genl_sock *gs, uint32_t id)
{
	struct lnk l = { 0 };

	link_get_reply(gs, id, lnk_cb, &l);
	return l;
}

/* Stage link @id's state, and a hold of @delay_ps (0: none). */
static int link_set(struct genl_sock *gs, uint32_t id, uint32_t state,
		    uint64_t delay_ps, int hold_fail)
{
	struct genl_msg m;
	uint8_t f = hold_fail;

	genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_SET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, id);
	genl_put_u32(&m, ICFAB_A_LINK_STATE, state);
	if (delay_ps)
		genl_put_u64(&m, ICFAB_A_LINK_UP_DELAY_PS, delay_ps);
	if (hold_fail >= 0)
		genl_put(&m, ICFAB_A_LINK_HOLD_FAIL, &f, 1);
	return genl_request(gs, &m, NULL, NULL);
}

FIXTURE(live) {
	struct genl_sock gs;
	int fd;
	int q;
};

FIXTURE_SETUP(live)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	self->q = ctx_queue(self->fd, 0, 16);
	ASSERT_LE(0, self->q);
}

FIXTURE_TEARDOWN(live)
{
	close(self->fd);
	fabric_close(&self->gs);
}

TEST_F(live, info_announces_live_commit)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &in));
	EXPECT_TRUE(in.features & ICFAB_F_LIVE_COMMIT);
}

/*
 * A transfer submitted but not yet started follows routes committed
 * after it: 0 -> 2 goes the long way round, 6 hops, once link 2 (1 -> 2)
 * is down and the tables of nodes 0, 7 and 6 point anticlockwise.
 */
TEST_F(live, new_routes_apply_to_traffic_in_flight)
{
	uint16_t ccw = 1;
	struct icfab_desc d = desc_put(self->q, 2, 8 * SEG, 1);
	struct icfab_cqe c;
	struct fab before = fab_get(&self->gs), after;

	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(0, link_set(&self->gs, 2, ICFAB_LINK_DOWN, 0, -1));
	ASSERT_EQ(0, route_set(&self->gs, 0, 2, &ccw, 1));
	ASSERT_EQ(0, route_set(&self->gs, 7, 2, &ccw, 1));
	ASSERT_EQ(0, route_set(&self->gs, 6, 2, &ccw, 1));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	after = fab_get(&self->gs);
	EXPECT_EQ(before.generation + 1, after.generation);
	ASSERT_TRUE(after.has_commit_ps);
	EXPECT_EQ(0, after.commit_ps);	/* the engine had not moved */

	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(ring_uncontended(8 * SEG, 6), c.finish_ps - c.start_ps);
	EXPECT_EQ(ICFAB_LINK_DOWN, lnk_get(&self->gs, 2).state);
}

/* A link that goes down under a transfer, routes unchanged: it fails. */
TEST_F(live, debugfs_fault_fails_traffic_in_flight)
{
	struct icfab_desc d = desc_put(self->q, 2, 64 * SEG, 2);
	struct icfab_cqe c;
	uint64_t gen;

	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	gen = fab_get(&self->gs).generation;
	ASSERT_EQ(0, fabric_fault("link 2 down\n"));
	EXPECT_EQ(gen + 1, fab_get(&self->gs).generation);
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(-EHOSTUNREACH, c.status);
	EXPECT_EQ(2, c.user_tag);

	/* New traffic over it fails too; up again, it passes. */
	d.user_tag = 3;
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(-EHOSTUNREACH, c.status);
	ASSERT_EQ(0, fabric_fault("link 2 up"));
	d = desc_put(self->q, 2, 8 * SEG, 4);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(ring_uncontended(8 * SEG, 2), c.finish_ps - c.start_ps);
}

/*
 * A commit that comes while a WRITE accepted off the fabric lock has not
 * gone into the engine yet: it goes in first, on the topology it was
 * accepted under, and the link that goes down under it fails it as it
 * fails the one before it, which went in at its SUBMIT.
 */
TEST_F(live, a_commit_meets_writes_accepted_off_the_lock_as_in_flight)
{
	struct icfab_desc d[3] = {
		{ .op = ICFAB_OP_FENCE, .queue = self->q },
		desc_put(self->q, 2, 64 * SEG, 1),
		desc_put(self->q, 2, 64 * SEG, 2),
	};
	struct icfab_cqe c[3];
	long long n = fab_count("fast_writes");

	ASSERT_LE(0, n);
	/*
	 * The first under the fabric lock (a FENCE first takes the chunk
	 * there), the second off it.
	 */
	ASSERT_EQ(2, ctx_submit(self->fd, &d[0], 2));
	ASSERT_EQ(1, ctx_submit(self->fd, &d[2], 1));
	EXPECT_EQ(n + 1, fab_count("fast_writes"));
	ASSERT_EQ(0, fabric_fault("link 2 down\n"));
	ASSERT_EQ(3, ctx_wait(self->fd, c, 3, 3, 0, NULL));
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(1, c[1].user_tag);
	EXPECT_EQ(-EHOSTUNREACH, c[1].status);
	EXPECT_EQ(2, c[2].user_tag);
	EXPECT_EQ(-EHOSTUNREACH, c[2].status);
	EXPECT_EQ(0, c[2].submit_ps);
	ASSERT_EQ(0, fabric_fault("link 2 up"));
}

TEST_F(live, debugfs_node_fault_takes_every_link_of_the_node)
{
	struct icfab_desc d = desc_put(self->q, 1, 8 * SEG, 5);
	struct icfab_cqe c;

	ASSERT_EQ(0, fabric_fault("node 1 down"));
	for (unsigned int l = 0; l < 4; l++)	/* 0->1, 1->0, 1->2, 2->1 */
		EXPECT_EQ(ICFAB_LINK_DOWN, lnk_get(&self->gs, l).state);
	EXPECT_EQ(ICFAB_LINK_UP, lnk_get(&self->gs, 4).state);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(-EHOSTUNREACH, c.status);
	ASSERT_EQ(0, fabric_fault("node 1 up"));
	EXPECT_EQ(ICFAB_LINK_UP, lnk_get(&self->gs, 0).state);
}

TEST_F(live, debugfs_degrade_slows_the_link)
{
	struct icfab_desc d = desc_put(self->q, 1, SEG, 6);
	struct icfab_cqe c;

	ASSERT_EQ(0, fabric_fault("link 0 degrade 500"));
	EXPECT_EQ(ICFAB_LINK_DEGRADED, lnk_get(&self->gs, 0).state);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(0, c.status);
	/* One segment at half the bandwidth. */
	EXPECT_EQ(LAT + (SEG * 1000000000000ULL + BW / 2 - 1) / (BW / 2),
		  c.finish_ps - c.start_ps);
}

TEST_F(live, debugfs_bad_faults_change_nothing)
{
	static const char *const bad[] = {
		"", "link", "link 0", "link x down", "link 0 sideways",
		"link 0 degrade", "link 0 degrade 0", "link 0 degrade 1000",
		"node 0 degrade 500", "wire 0 down", "link 0 down extra",
		"link 4294967296 down",
	};
	uint64_t gen = fab_get(&self->gs).generation;

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, fabric_fault(bad[i])) {
			TH_LOG("\"%s\"", bad[i]);
		}
	}
	EXPECT_EQ(-ENOENT, fabric_fault("link 999 down"));
	EXPECT_EQ(-ENOENT, fabric_fault("node 99 down"));
	EXPECT_EQ(gen, fab_get(&self->gs).generation);
	EXPECT_EQ(ICFAB_LINK_UP, lnk_get(&self->gs, 0).state);
}

TEST_F(live, debugfs_fault_waits_for_no_staging)
{
	uint64_t gen;

	ASSERT_EQ(0, link_set(&self->gs, 0, ICFAB_LINK_UP, 0, -1));
	gen = fab_get(&self->gs).generation;
	EXPECT_EQ(-EBUSY, fabric_fault("link 3 down"));
	EXPECT_EQ(gen, fab_get(&self->gs).generation);
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT));
	EXPECT_EQ(0, fabric_fault("link 3 down"));
}

/* What would change the engine's nodes is still refused, and changes nothing. */
TEST_F(live, commit_that_changes_a_node_is_refused)
{
	struct icfab_err_cookie ck;
	uint64_t gen = fab_get(&self->gs).generation;

	ASSERT_EQ(0, node_new(&self->gs, 8, ICFAB_NODE_ENDPOINT, 2, "extra"));
	EXPECT_EQ(-EBUSY, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_NE(NULL, strstr(self->gs.extack, "attached"));
	ASSERT_EQ((int)sizeof(ck), self->gs.cookie_len);
	memcpy(&ck, self->gs.cookie, sizeof(ck));
	EXPECT_EQ(ICFAB_ERR_OBJ_NODE, ck.obj);
	EXPECT_EQ(8, ck.id);
	EXPECT_EQ(gen, fab_get(&self->gs).generation);

	/* Once nobody is attached, the same staged configuration commits. */
	close(self->fd);
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	EXPECT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_EQ(gen + 1, fab_get(&self->gs).generation);
}

TEST_F(live, segment_size_cannot_change_under_traffic)
{
	struct genl_msg m;

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_SET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, 8192);
	ASSERT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(-EBUSY, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_NE(NULL, strstr(self->gs.extack, "segment size"));
	EXPECT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT));
}

/*
 * A link held dark for D from the commit at T: a transfer over it that
 * starts later is ready at T' >= T and leaves at T + D; everything after
 * is the uncontended closed form, and the wait is not queueing.
 */
TEST_F(live, held_link_delays_traffic_until_it_is_up)
{
	const uint64_t D = 5000000, clock = 1000000;	/* 5 us, 1 us */
	struct icfab_desc d = desc_put(self->q, 1, 8 * SEG, 7);
	struct icfab_cqe c;
	struct fab f;
	struct lnk l;

	ASSERT_EQ(0, delay(self->fd, self->q, clock));
	ASSERT_EQ(0, link_set(&self->gs, 0, ICFAB_LINK_UP, D, 0));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	f = fab_get(&self->gs);
	ASSERT_TRUE(f.has_commit_ps);
	EXPECT_GE(clock, f.commit_ps);
	l = lnk_get(&self->gs, 0);
	EXPECT_EQ(f.commit_ps + D, l.up_at_ps);
	EXPECT_EQ(0, l.hold_fail);

	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(clock, c.start_ps);
	EXPECT_EQ(f.commit_ps + D + ring_uncontended(8 * SEG, 1), c.finish_ps);
	EXPECT_LE(f.commit_ps + D, c.finish_ps);
	EXPECT_EQ(0, c.queued_ps);

	/* Up now: no hold reported, and traffic flows at once. */
	EXPECT_EQ(0, lnk_get(&self->gs, 0).up_at_ps);
	d.user_tag = 8;
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(ring_uncontended(8 * SEG, 1), c.finish_ps - c.start_ps);
}

TEST_F(live, held_link_in_fail_mode_fails_traffic_with_enetdown)
{
	const uint64_t D = 5000000;
	struct icfab_desc d = desc_put(self->q, 2, 8 * SEG, 9);
	struct icfab_cqe c;
	uint64_t up_at;

	ASSERT_EQ(0, link_set(&self->gs, 2, ICFAB_LINK_UP, D, 1));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	up_at = lnk_get(&self->gs, 2).up_at_ps;
	EXPECT_EQ(fab_get(&self->gs).commit_ps + D, up_at);
	EXPECT_EQ(1, lnk_get(&self->gs, 2).hold_fail);

	/* Over it (0 -> 1 -> 2): fails. Not over it (0 -> 1): unaffected. */
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(-ENETDOWN, c.status);
	d = desc_put(self->q, 1, 8 * SEG, 10);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(0, c.status);

	/* Once the fabric's time passed up_at, it carries traffic. */
	ASSERT_EQ(0, delay(self->fd, self->q, D));
	d = desc_put(self->q, 2, 8 * SEG, 11);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(0, c.status);
	EXPECT_LE(up_at, c.start_ps);
	EXPECT_EQ(ring_uncontended(8 * SEG, 2), c.finish_ps - c.start_ps);
}

/* Fabric time restarts at 0 with the next engine; a pending hold moves too. */
TEST_F(live, pending_hold_moves_with_the_fabric_clock)
{
	const uint64_t D = 5000000, clock = 2000000;
	struct icfab_desc d = desc_put(self->q, 1, 8 * SEG, 12);
	struct icfab_cqe c;
	uint64_t T;

	ASSERT_EQ(0, delay(self->fd, self->q, clock));
	ASSERT_EQ(0, link_set(&self->gs, 0, ICFAB_LINK_UP, D, 0));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	T = fab_get(&self->gs).commit_ps;
	ASSERT_LT(0, T);

	/* Everyone leaves at fabric time T: D - 0 of the hold remains. */
	close(self->fd);
	EXPECT_EQ(D, lnk_get(&self->gs, 0).up_at_ps);
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	self->q = ctx_queue(self->fd, 0, 16);
	ASSERT_LE(0, self->q);
	d.queue = self->q;
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	EXPECT_EQ(0, c.start_ps);
	EXPECT_EQ(D + ring_uncontended(8 * SEG, 1), c.finish_ps);
}

TEST_F(live, hold_that_overflows_the_clock_is_refused)
{
	uint64_t gen = fab_get(&self->gs).generation;

	ASSERT_EQ(0, delay(self->fd, self->q, 1000));
	ASSERT_EQ(0, link_set(&self->gs, 0, ICFAB_LINK_UP, ~0ULL, 0));
	EXPECT_EQ(-ERANGE, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_EQ(gen, fab_get(&self->gs).generation);
	EXPECT_EQ(0, lnk_get(&self->gs, 0).up_at_ps);
	EXPECT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT));
}

TEST_HARNESS_MAIN
