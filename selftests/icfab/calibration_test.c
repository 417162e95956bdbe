// SPDX-License-Identifier: GPL-2.0
/*
 * Link calibration (ICFAB_F_LINK_CALIBRATION): a link's efficiency and
 * per-message overhead are stored and read back, a transfer over a
 * calibrated link takes the closed form of docs/TIMING.md
 * ("Calibration") to the picosecond, the defaults are the ideal link's
 * time, and out-of-range values are -ERANGE with extack.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define SEGS		100		/* segments of the known transfer */
#define EFF		900U		/* link 0: 45 GB/s of payload */
#define OVH		1234567ULL	/* ps, link 0 */

struct clink {
	int seen;
	uint32_t eff;
	uint64_t ovh;
};

static int link_cb(const struct genl_reply *r, void *arg)
{
	struct clink *l = arg;

	if (r->cmd != ICFAB_CMD_LINK_GET ||
	    !r->tb[ICFAB_A_LINK_EFFICIENCY_PERMILLE] ||
	    !r->tb[ICFAB_A_LINK_MSG_OVERHEAD_PS])
		return -EPROTO;
	l->seen++;
	l->eff = genl_u32(r->tb[ICFAB_A_LINK_EFFICIENCY_PERMILLE]);
	l->ovh = genl_u64(r->tb[ICFAB_A_LINK_MSG_OVERHEAD_PS]);
	return 0;
}

static int link_get(struct genl_sock *gs, uint32_t link, struct clink *l)
{
	memset(l, 0, sizeof(*l));
	return link_get_reply(gs, link, link_cb, l);
}

/*
 * A link of stage_ring()'s bandwidth and latency; @eff and @ovh are put
 * when not ~0 (so 0, out of range, can be sent).
 */
static int link_new_cal(struct genl_sock *gs, uint32_t id, uint32_t src,
			uint32_t dst, uint32_t eff, uint64_t ovh)
{
	struct genl_msg m;

	ring_link_msg(gs, &m, id, src, dst);
	if (eff != ~0U)
		genl_put_u32(&m, ICFAB_A_LINK_EFFICIENCY_PERMILLE, eff);
	if (ovh != ~0ULL)
		genl_put_u64(&m, ICFAB_A_LINK_MSG_OVERHEAD_PS, ovh);
	return genl_request(gs, &m, NULL, NULL);
}

/*
 * Two endpoints; link 0 (0 -> 1) calibrated as given, link 1 ideal. The
 * segment size is RING_SEG whatever ran before (moe_bench.sh sets 64
 * KiB), since at 45 GB/s the rounding is per segment.
 */
static int stage_pair(struct genl_sock *gs, uint32_t eff, uint64_t ovh)
{
	static const uint16_t to1[] = { ICFAB_ROUTE_NONE, 0 };
	static const uint16_t to0[] = { 0, ICFAB_ROUTE_NONE };
	struct genl_msg m;
	int err;

	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_SET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, RING_SEG);
	err = genl_request(gs, &m, NULL, NULL);
	if (!err)
		err = node_new(gs, 0, ICFAB_NODE_ENDPOINT, 1, "a");

	if (!err)
		err = node_new(gs, 1, ICFAB_NODE_ENDPOINT, 1, "b");
	if (!err)
		err = link_new_cal(gs, 0, 0, 1, eff, ovh);
	if (!err)
		err = link_new_cal(gs, 1, 1, 0, ~0U, ~0ULL);
	if (!err)
		err = route_set(gs, 0, 0, to1, 2);
	if (!err)
		err = route_set(gs, 1, 0, to0, 2);
	return err;
}

/* Endpoint 0 writes SEGS segments to 1: its duration. */
static int64_t run(void)
{
	struct icfab_desc d;
	struct icfab_cqe c;
	int fd, q;
	int64_t ret = -EIO;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	q = ctx_attach(fd, 0) ? -1 : ctx_queue(fd, 0, 4);
	d = desc_put(q, 1, SEGS * RING_SEG, 1);
	if (q >= 0 && ctx_submit(fd, &d, 1) == 1 &&
	    ctx_wait(fd, &c, 1, 1, 0, NULL) == 1 && !c.status)
		ret = (int64_t)(c.finish_ps - c.start_ps);
	close(fd);
	return ret;
}

/* ceil(s * 10^12 / B) */
static uint64_t ser(uint64_t s, uint64_t bw)
{
	return (s * 1000000000000ULL + bw - 1) / bw;
}

FIXTURE(cal) {
	struct genl_sock gs;
};

FIXTURE_SETUP(cal)
{
	struct icfab_info info = {};
	int fd;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, ICFAB_IOC_INFO, &info));
	close(fd);
	if (!(info.features & ICFAB_F_LINK_CALIBRATION))
		SKIP(return, "the module does not calibrate links");
	ASSERT_EQ(0, fabric_open_clear(&self->gs));
}

FIXTURE_TEARDOWN(cal)
{
	fabric_close(&self->gs);
}

/*
 * One hop, store and forward: T = L + o + n S/B_e, B_e = B x 900 / 1000
 * = 45 GB/s; the way back, given nothing, reads back ideal.
 */
TEST_F(cal, a_calibrated_link_takes_its_closed_form)
{
	struct clink l;

	ASSERT_EQ(0, stage_pair(&self->gs, EFF, OVH));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(0, link_get(&self->gs, 0, &l));
	EXPECT_EQ(EFF, l.eff);
	EXPECT_EQ(OVH, l.ovh);
	ASSERT_EQ(0, link_get(&self->gs, 1, &l));
	EXPECT_EQ(1000, l.eff);
	EXPECT_EQ(0, l.ovh);
	EXPECT_EQ((int64_t)(RING_LAT + OVH +
			    SEGS * ser(RING_SEG, RING_BW / 1000 * EFF)),
		  run());
}

/* 1000 and 0, given or not, are the ideal link to the picosecond. */
TEST_F(cal, the_defaults_are_the_ideal_link)
{
	ASSERT_EQ(0, stage_pair(&self->gs, 1000, 0));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_EQ((int64_t)ring_uncontended(SEGS * RING_SEG, 1), run());
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_pair(&self->gs, ~0U, ~0ULL));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_EQ((int64_t)ring_uncontended(SEGS * RING_SEG, 1), run());
}

TEST_F(cal, out_of_range_is_erange_with_extack)
{
	static const struct { uint32_t eff; uint64_t ovh; int attr; } bad[] = {
		{ 0, ~0ULL, ICFAB_A_LINK_EFFICIENCY_PERMILLE },
		{ 1001, ~0ULL, ICFAB_A_LINK_EFFICIENCY_PERMILLE },
		{ ~0U, ICFAB_MSG_OVERHEAD_MAX_PS + 1,
		  ICFAB_A_LINK_MSG_OVERHEAD_PS },
	};

	ASSERT_EQ(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 1, "a"));
	ASSERT_EQ(0, node_new(&self->gs, 1, ICFAB_NODE_ENDPOINT, 1, "b"));
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		self->gs.extack[0] = 0;
		EXPECT_EQ(-ERANGE, link_new_cal(&self->gs, 0, 0, 1, bad[i].eff,
						bad[i].ovh));
		EXPECT_NE(0, self->gs.extack[0]);
		EXPECT_EQ(bad[i].attr, (int)self->gs.bad_attr_type);
	}
	EXPECT_EQ(0, link_new_cal(&self->gs, 0, 0, 1, 1,
				  ICFAB_MSG_OVERHEAD_MAX_PS));
	cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT);
}

TEST_HARNESS_MAIN
