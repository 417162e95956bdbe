// SPDX-License-Identifier: GPL-2.0
/*
 * Next-hop sets (ICFAB_F_ROUTE_SETS; docs/TIMING.md, "Equal-cost next
 * hops through different neighbours"): a transfer sprayed over a set of
 * ports to two different switches crosses both, half its segments each
 * (the link counters say so), and ends at the closed form; the sets read
 * back in the route dump; out-of-range sets are -ERANGE with extack; a
 * set whose member loops is refused at commit, the cookie naming the
 * node, the destination and the port. Seconds under TCG.
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

#define SEGS		64		/* segments of the transfer */

/* Load @n sets of @node from set 0; 0 or -errno. */
static int sets_set(struct genl_sock *gs, uint32_t node,
		    const struct icfab_route_set *sets, unsigned int n)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_ROUTE_SETS_SET, 0);
	genl_put_u32(&m, ICFAB_A_ROUTE_NODE, node);
	genl_put(&m, ICFAB_A_ROUTE_SETS, sets, n * sizeof(*sets));
	return genl_request(gs, &m, NULL, NULL);
}

/*
 * Endpoints a (0) and b (1), switches s0 (2) and s1 (3): link j from a's
 * port j to s_j, link 2 + j from s_j to b's port j. a reaches b by its
 * set 0 of @mode over ports 0 and 1; the switches by their port 1. No
 * way back: only a sends.
 */
static int stage_fan(struct genl_sock *gs, uint8_t mode)
{
	static const uint16_t to_b_sw[] = { ICFAB_ROUTE_NONE, 1 };
	const uint16_t to_b[] = { ICFAB_ROUTE_NONE, ICFAB_ROUTE_SET_BASE };
	struct icfab_route_set set = {
		.mode = mode, .nr_ports = 2, .ports = { 0, 1 },
	};
	struct genl_msg m;
	int err, j;

	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_SET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, RING_SEG);
	err = genl_request(gs, &m, NULL, NULL);
	if (!err)
		err = node_new(gs, 0, ICFAB_NODE_ENDPOINT, 2, "a");
	if (!err)
		err = node_new(gs, 1, ICFAB_NODE_ENDPOINT, 2, "b");
	for (j = 0; j < 2 && !err; j++)
		err = node_new(gs, 2 + j, ICFAB_NODE_SWITCH, 2,
			       j ? "s1" : "s0");
	for (j = 0; j < 2 && !err; j++)
		err = link_new(gs, j, 0, j, 2 + j, 0, RING_BW);
	for (j = 0; j < 2 && !err; j++)
		err = link_new(gs, 2 + j, 2 + j, 1, 1, j, RING_BW);
	if (!err)
		err = sets_set(gs, 0, &set, 1);
	if (!err)
		err = route_set(gs, 0, 0, to_b, 2);
	for (j = 0; j < 2 && !err; j++)
		err = route_set(gs, 2 + j, 0, to_b_sw, 2);
	return err;
}

/* Endpoint 0 writes SEGS segments to 1: its duration, or -errno. */
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

static int segs_cb(const struct genl_reply *r, void *arg)
{
	if (r->cmd != ICFAB_CMD_STATS_GET || !r->tb[ICFAB_A_STATS_SEGMENTS])
		return -EPROTO;
	*(uint64_t *)arg = genl_u64(r->tb[ICFAB_A_STATS_SEGMENTS]);
	return 0;
}

/* Segments link @id carried since the commit, or ~0 on error. */
static uint64_t link_segments(struct genl_sock *gs, uint32_t id)
{
	uint64_t segs = ~0ULL;
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_STATS_GET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, id);
	if (genl_request(gs, &m, segs_cb, &segs))
		return ~0ULL;
	return segs;
}

static unsigned int attr_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

static const void *attr_data(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

struct dumped {
	int sets_seen;
	struct icfab_route_set set;
	uint16_t entry;
};

static int route_cb(const struct genl_reply *r, void *arg)
{
	struct dumped *d = arg;

	if (r->cmd != ICFAB_CMD_ROUTE_GET || !r->tb[ICFAB_A_ROUTE_NODE] ||
	    genl_u32(r->tb[ICFAB_A_ROUTE_NODE]) != 0)
		return 0;
	if (r->tb[ICFAB_A_ROUTE_PORTS] &&
	    attr_len(r->tb[ICFAB_A_ROUTE_PORTS]) >= 4)
		memcpy(&d->entry,
		       (const char *)attr_data(r->tb[ICFAB_A_ROUTE_PORTS]) + 2,
		       2);
	if (r->tb[ICFAB_A_ROUTE_SETS] &&
	    attr_len(r->tb[ICFAB_A_ROUTE_SETS]) == sizeof(d->set)) {
		d->sets_seen++;
		memcpy(&d->set, attr_data(r->tb[ICFAB_A_ROUTE_SETS]),
		       sizeof(d->set));
	}
	return 0;
}

FIXTURE(ecmp) {
	struct genl_sock gs;
};

FIXTURE_SETUP(ecmp)
{
	struct icfab_info info = {};
	int fd;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, ICFAB_IOC_INFO, &info));
	close(fd);
	if (!(info.features & ICFAB_F_ROUTE_SETS))
		SKIP(return, "the module has no next-hop sets");
	ASSERT_EQ(0, fabric_open_clear(&self->gs));
}

FIXTURE_TEARDOWN(ecmp)
{
	fabric_close(&self->gs);
}

/*
 * Sprayed over two switches: segment j by s_(j mod 2), so each carries
 * SEGS / 2, and the transfer ends at 2 L + (SEGS / 2) S/B + S/B (store
 * and forward at the switch), half the time of one path.
 */
TEST_F(ecmp, spray_spreads_over_both_switches)
{
	struct dumped d = {};
	struct genl_msg m;

	ASSERT_EQ(0, stage_fan(&self->gs, ICFAB_MULTIPATH_SPRAY));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_EQ((int64_t)(2 * RING_LAT + (SEGS / 2 + 1) * ring_ser(RING_SEG)),
		  run());
	for (uint32_t id = 0; id < 4; id++)
		EXPECT_EQ(SEGS / 2, link_segments(&self->gs, id));

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_ROUTE_GET, NLM_F_DUMP);
	genl_put_u32(&m, ICFAB_A_ROUTE_NODE, 0);
	ASSERT_EQ(0, genl_request(&self->gs, &m, route_cb, &d));
	EXPECT_EQ(ICFAB_ROUTE_SET_BASE, d.entry);
	EXPECT_EQ(1, d.sets_seen);
	EXPECT_EQ(ICFAB_MULTIPATH_SPRAY, d.set.mode);
	EXPECT_EQ(2, d.set.nr_ports);
	EXPECT_EQ(1, d.set.ports[1]);
}

/* Hashed per flow: the transfer keeps one switch, and one path's time. */
TEST_F(ecmp, flow_keeps_one_path)
{
	uint64_t a, b;

	ASSERT_EQ(0, stage_fan(&self->gs, ICFAB_MULTIPATH_FLOW));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_EQ((int64_t)(2 * RING_LAT + (SEGS + 1) * ring_ser(RING_SEG)),
		  run());
	a = link_segments(&self->gs, 2);
	b = link_segments(&self->gs, 3);
	EXPECT_EQ(SEGS, a + b);
	EXPECT_TRUE(a == 0 || b == 0);
}

TEST_F(ecmp, out_of_range_is_erange_with_extack)
{
	static const struct icfab_route_set bad[] = {
		{ .mode = 3, .nr_ports = 1 },
		{ .mode = ICFAB_MULTIPATH_NONE, .nr_ports = 1 },
		{ .mode = ICFAB_MULTIPATH_FLOW, .nr_ports = 0 },
		{ .mode = ICFAB_MULTIPATH_FLOW,
		  .nr_ports = ICFAB_ROUTE_SET_MAX_PORTS + 1 },
		{ .mode = ICFAB_MULTIPATH_FLOW, .nr_ports = 1,
		  .ports = { 0xf000 } },
	};
	struct genl_msg m;

	ASSERT_EQ(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 2, "a"));
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		self->gs.extack[0] = 0;
		EXPECT_EQ(-ERANGE, sets_set(&self->gs, 0, &bad[i], 1));
		EXPECT_NE(0, self->gs.extack[0]);
		EXPECT_EQ(ICFAB_A_ROUTE_SETS, self->gs.bad_attr_type);
	}
	/* Half a set is no set. */
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_ROUTE_SETS_SET, 0);
	genl_put_u32(&m, ICFAB_A_ROUTE_NODE, 0);
	genl_put(&m, ICFAB_A_ROUTE_SETS, bad, sizeof(bad[0]) / 2);
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
	/* A first set past the node's sets would leave a gap. */
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_ROUTE_SETS_SET, 0);
	genl_put_u32(&m, ICFAB_A_ROUTE_NODE, 0);
	genl_put_u32(&m, ICFAB_A_ROUTE_SET_FIRST, 5);
	EXPECT_EQ(-ERANGE, genl_request(&self->gs, &m, NULL, NULL));
	cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT);
}

/*
 * s1 sends b's traffic back to a (a link from its port 1 to a's port 1,
 * by a set of one): the commit refuses it, naming s1, b and port 1.
 */
TEST_F(ecmp, a_looping_member_is_refused_and_named)
{
	static const uint16_t back[] = { ICFAB_ROUTE_NONE,
					 ICFAB_ROUTE_SET_BASE };
	const struct icfab_route_set one = {
		.mode = ICFAB_MULTIPATH_FLOW, .nr_ports = 1, .ports = { 1 },
	};
	struct icfab_err_cookie c;
	struct genl_msg m;

	ASSERT_EQ(0, stage_fan(&self->gs, ICFAB_MULTIPATH_SPRAY));
	/* Link 3 (s1 -> b) now goes to a's port 1. */
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_LINK_DEL, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, 3);
	ASSERT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	ASSERT_EQ(0, link_new(&self->gs, 3, 3, 1, 0, 1, RING_BW));
	ASSERT_EQ(0, sets_set(&self->gs, 3, &one, 1));
	ASSERT_EQ(0, route_set(&self->gs, 3, 0, back, 2));
	self->gs.extack[0] = 0;
	EXPECT_EQ(-EINVAL, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_NE(NULL, strstr(self->gs.extack, "loops"));
	ASSERT_EQ(sizeof(c), self->gs.cookie_len);
	memcpy(&c, self->gs.cookie, sizeof(c));
	EXPECT_EQ(ICFAB_ERR_OBJ_ROUTE_PORT, c.obj);
	EXPECT_EQ(3, c.id);
	EXPECT_EQ(1, c.id2);
	EXPECT_EQ(1, c.id3);
	cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT);
}

TEST_HARNESS_MAIN
