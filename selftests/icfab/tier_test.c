// SPDX-License-Identifier: GPL-2.0
/*
 * Memory tiers (ICFAB_F_MEMORY_TIERS): tier ports over netlink and what
 * is refused, regions in a tier and its capacity (shared by the
 * endpoints it serves), and transfers through tier ports on their
 * closed forms (docs/TIMING.md, "Memory tiers"): a copy between two
 * tiers of one endpoint, a read from a tier to another endpoint, two
 * readers of one shared HBM port at B/2 each, a copy no route allows,
 * and plain memory timed as before. Seconds under TCG.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define NO		ICFAB_TIER_NO_LINK
#define HBM_LINK	2		/* at endpoint 0, shared with 1 */
#define DDR_LINK	3		/* at endpoint 0 */
#define DDR2_LINK	4		/* at endpoint 2, which nothing reaches */
#define HBM_BW		100000000000ULL	/* bytes/s: 4 KiB in 40960 ps */
#define HBM_LAT		20000ULL	/* ps */
#define HBM_BYTES	(256 * 1024ULL)
#define DDR_BW		25000000000ULL	/* 4 KiB in 163840 ps */
#define DDR_LAT		60000ULL
#define DDR_BYTES	(1024 * 1024ULL)
#define SEGS		16
#define LEN		(SEGS * RING_SEG)

static uint64_t ser(uint64_t bytes, uint64_t bw)
{
	return (bytes * 1000000000000ULL + bw - 1) / bw;
}

static int node_tiers(struct genl_sock *gs, uint32_t id, uint32_t ports,
		      const char *name, const uint32_t *tiers, size_t len)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_NEW, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, id);
	genl_put_u32(&m, ICFAB_A_NODE_KIND, ICFAB_NODE_ENDPOINT);
	genl_put_u32(&m, ICFAB_A_NODE_PORTS, ports);
	genl_put(&m, ICFAB_A_NODE_NAME, name, strlen(name) + 1);
	if (tiers)
		genl_put(&m, ICFAB_A_NODE_TIER_LINKS, tiers, len);
	return genl_request(gs, &m, NULL, NULL);
}

/* A tier port; @src != @dst and a zero @bytes make bad ones. */
static int tier_new(struct genl_sock *gs, uint32_t id, uint32_t src,
		    uint32_t dst, uint8_t kind, uint64_t bytes, uint64_t bw,
		    uint64_t lat)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_NEW, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, id);
	genl_put_u32(&m, ICFAB_A_LINK_SRC_NODE, src);
	genl_put_u32(&m, ICFAB_A_LINK_DST_NODE, dst);
	genl_put_u64(&m, ICFAB_A_LINK_BANDWIDTH, bw);
	genl_put_u64(&m, ICFAB_A_LINK_LATENCY_PS, lat);
	genl_put(&m, ICFAB_A_LINK_TIER, &kind, sizeof(kind));
	if (bytes)
		genl_put_u64(&m, ICFAB_A_LINK_TIER_BYTES, bytes);
	return genl_request(gs, &m, NULL, NULL);
}

/*
 * Endpoints 0 and 1 on one cable (links 0 and 1, stage_ring()'s
 * figures), 0 with HBM and DDR, 1 sharing 0's HBM; endpoint 2, cabled
 * to nothing, with a DDR of its own.
 */
static int stage(struct genl_sock *gs)
{
	static const uint16_t to1[] = { ICFAB_ROUTE_NONE, 0 };
	static const uint16_t to0[] = { 0, ICFAB_ROUTE_NONE };
	const uint32_t t0[] = { NO, HBM_LINK, DDR_LINK };
	const uint32_t t1[] = { NO, HBM_LINK, NO };
	const uint32_t t2[] = { NO, NO, DDR2_LINK };
	int err = node_tiers(gs, 0, 1, "a", t0, sizeof(t0));

	if (!err)
		err = node_tiers(gs, 1, 1, "b", t1, sizeof(t1));
	if (!err)
		err = node_tiers(gs, 2, 1, "c", t2, sizeof(t2));
	if (!err)
		err = link_new(gs, 0, 0, 0, 1, 0, RING_BW);
	if (!err)
		err = link_new(gs, 1, 1, 0, 0, 0, RING_BW);
	if (!err)
		err = tier_new(gs, HBM_LINK, 0, 0, ICFAB_TIER_HBM, HBM_BYTES,
			       HBM_BW, HBM_LAT);
	if (!err)
		err = tier_new(gs, DDR_LINK, 0, 0, ICFAB_TIER_DDR, DDR_BYTES,
			       DDR_BW, DDR_LAT);
	if (!err)
		err = tier_new(gs, DDR2_LINK, 2, 2, ICFAB_TIER_DDR, DDR_BYTES,
			       DDR_BW, DDR_LAT);
	if (!err)
		err = route_set(gs, 0, 0, to1, 2);
	if (!err)
		err = route_set(gs, 1, 0, to0, 2);
	return err;
}

static int ralloc(int fd, uint32_t ep, uint32_t tier, uint64_t size,
		  uint32_t *handle, uint64_t *key)
{
	struct icfab_region_alloc ra = { .endpoint = ep, .size = size,
					 .tier = tier };
	struct icfab_region_export re = { .access = ICFAB_ACCESS_ALL };

	if (ioctl(fd, ICFAB_IOC_REGION_ALLOC, &ra))
		return -errno;
	*handle = ra.region;
	if (!key)
		return 0;
	re.region = ra.region;
	if (ioctl(fd, ICFAB_IOC_REGION_EXPORT, &re))
		return -errno;
	*key = re.key;
	return 0;
}

static struct icfab_desc wr(uint32_t q, uint32_t region, uint64_t rkey,
			    uint64_t tag)
{
	return (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = q,
		.region = region, .rkey = rkey, .len = LEN, .user_tag = tag };
}

struct tstats {
	int seen;
	uint32_t tier;
	uint64_t bytes, busy_ps;
};

static int stats_cb(const struct genl_reply *r, void *arg)
{
	struct tstats *s = arg;

	if (r->cmd != ICFAB_CMD_STATS_GET || !r->tb[ICFAB_A_STATS_BYTES] ||
	    !r->tb[ICFAB_A_STATS_BUSY_PS])
		return -EPROTO;
	s->seen++;
	s->tier = r->tb[ICFAB_A_LINK_TIER] ?
		  *(const uint8_t *)((const char *)r->tb[ICFAB_A_LINK_TIER] +
				     NLA_HDRLEN) : 0;
	s->bytes = genl_u64(r->tb[ICFAB_A_STATS_BYTES]);
	s->busy_ps = genl_u64(r->tb[ICFAB_A_STATS_BUSY_PS]);
	return 0;
}

static int stats_get(struct genl_sock *gs, uint32_t link, struct tstats *s)
{
	struct genl_msg m;

	memset(s, 0, sizeof(*s));
	genl_msg_init(&m, gs->family, ICFAB_CMD_STATS_GET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, link);
	return genl_request(gs, &m, stats_cb, s);
}

FIXTURE(tier) {
	struct genl_sock gs;
	int fd, q0, q1, q2;
};

FIXTURE_SETUP(tier)
{
	struct icfab_info info = {};

	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &info));
	if (!(info.features & ICFAB_F_MEMORY_TIERS))
		SKIP(return, "the module has no memory tiers");
	ASSERT_EQ(0, fabric_open_clear(&self->gs));
	ASSERT_EQ(0, stage(&self->gs));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, ctx_attach(self->fd, 1));
	ASSERT_EQ(0, ctx_attach(self->fd, 2));
	self->q0 = ctx_queue(self->fd, 0, 8);
	self->q1 = ctx_queue(self->fd, 1, 8);
	self->q2 = ctx_queue(self->fd, 2, 8);
	ASSERT_LE(0, self->q0);
	ASSERT_LE(0, self->q1);
	ASSERT_LE(0, self->q2);
}

FIXTURE_TEARDOWN(tier)
{
	close(self->fd);
	fabric_close(&self->gs);
}

TEST_F(tier, bad_netlink_names_the_attribute)
{
	const uint32_t bad_id[] = { NO, 70000, NO };
	const uint16_t len2[] = { 1, 2 };
	struct genl_sock *gs = &self->gs;

	/* A tier port between two nodes. */
	EXPECT_EQ(-EINVAL, tier_new(gs, 9, 0, 1, ICFAB_TIER_HBM, 4096,
				    HBM_BW, 0));
	EXPECT_EQ(ICFAB_A_LINK_DST_NODE, gs->bad_attr_type);
	/* A tier without its capacity. */
	EXPECT_EQ(-EINVAL, tier_new(gs, 9, 0, 0, ICFAB_TIER_HBM, 0,
				    HBM_BW, 0));
	EXPECT_EQ(ICFAB_A_LINK_TIER, gs->bad_attr_type);
	/* An unknown tier kind: the policy's range. */
	EXPECT_NE(0, tier_new(gs, 9, 0, 0, ICFAB_TIER_MAX + 1, 4096,
			      HBM_BW, 0));
	EXPECT_EQ(ICFAB_A_LINK_TIER, gs->bad_attr_type);
	/* Tier link ids: three of them, each a link id. */
	EXPECT_NE(0, node_tiers(gs, 9, 1, "x", (const uint32_t *)len2,
				sizeof(len2)));
	EXPECT_EQ(ICFAB_A_NODE_TIER_LINKS, gs->bad_attr_type);
	EXPECT_EQ(-EINVAL, node_tiers(gs, 9, 1, "x", bad_id, sizeof(bad_id)));
	EXPECT_EQ(ICFAB_A_NODE_TIER_LINKS, gs->bad_attr_type);
	cmd(gs, ICFAB_CMD_FABRIC_ABORT);
}

TEST_F(tier, commit_refuses_a_reference_to_a_fabric_link)
{
	const uint32_t t[] = { NO, 0, NO };
	struct genl_sock *gs = &self->gs;

	/* Detached, so that only the reference can refuse the commit. */
	close(self->fd);
	self->fd = -1;
	/* Endpoint 3 names link 0, a cable, as its HBM. */
	ASSERT_EQ(0, node_tiers(gs, 3, 1, "x", t, sizeof(t)));
	EXPECT_NE(0, cmd(gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_NE(NULL, strstr(gs->extack, "tier"));
	cmd(gs, ICFAB_CMD_FABRIC_ABORT);
}

TEST_F(tier, capacity_is_the_tiers_and_shared)
{
	uint32_t a, b, c;

	/* Larger than the tier: ENOSPC. */
	EXPECT_EQ(-ENOSPC, ralloc(self->fd, 0, ICFAB_TIER_HBM, HBM_BYTES + 4096,
				  &a, NULL));
	/* No SRAM serves endpoint 0; 1 has no DDR. */
	EXPECT_EQ(-ENXIO, ralloc(self->fd, 0, ICFAB_TIER_SRAM, 4096, &a, NULL));
	EXPECT_EQ(-ENXIO, ralloc(self->fd, 1, ICFAB_TIER_DDR, 4096, &a, NULL));
	EXPECT_EQ(-EINVAL, ralloc(self->fd, 0, ICFAB_TIER_MAX + 1, 4096, &a,
				  NULL));
	/* 0 and 1 share the HBM: three quarters and a half do not fit. */
	ASSERT_EQ(0, ralloc(self->fd, 0, ICFAB_TIER_HBM, HBM_BYTES / 4 * 3,
			    &a, NULL));
	EXPECT_EQ(-ENOSPC, ralloc(self->fd, 1, ICFAB_TIER_HBM, HBM_BYTES / 2,
				  &b, NULL));
	ASSERT_EQ(0, ralloc(self->fd, 1, ICFAB_TIER_HBM, HBM_BYTES / 4, &b,
			    NULL));
	/* The DDR is charged apart, and plain memory as before. */
	EXPECT_EQ(0, ralloc(self->fd, 0, ICFAB_TIER_DDR, DDR_BYTES, &c, NULL));
	EXPECT_EQ(0, ctx_region_free(self->fd, c));
	EXPECT_EQ(0, ralloc(self->fd, 0, ICFAB_TIER_NONE, HBM_BYTES, &c,
			    NULL));
	EXPECT_EQ(0, ctx_region_free(self->fd, c));
	/* Freed, the space is back. */
	EXPECT_EQ(0, ctx_region_free(self->fd, a));
	EXPECT_EQ(0, ralloc(self->fd, 1, ICFAB_TIER_HBM, HBM_BYTES / 2, &a,
			    NULL));
}

TEST_F(tier, transfers_cross_tier_ports_on_their_closed_forms)
{
	uint32_t ddr, hbm0, hbm1, p0, p1, ddr2;
	uint64_t kd, kh0, kh1, kp0, kp1, clock, want, want2;
	struct icfab_desc d[2];
	struct icfab_cqe c[2];
	struct tstats s;
	int i;

	ASSERT_EQ(0, ralloc(self->fd, 0, ICFAB_TIER_DDR, LEN, &ddr, &kd));
	ASSERT_EQ(0, ralloc(self->fd, 0, ICFAB_TIER_HBM, LEN, &hbm0, &kh0));
	ASSERT_EQ(0, ralloc(self->fd, 1, ICFAB_TIER_HBM, LEN, &hbm1, &kh1));
	ASSERT_EQ(0, ralloc(self->fd, 0, ICFAB_TIER_NONE, LEN, &p0, &kp0));
	ASSERT_EQ(0, ralloc(self->fd, 1, ICFAB_TIER_NONE, LEN, &p1, &kp1));
	ASSERT_EQ(0, ralloc(self->fd, 2, ICFAB_TIER_DDR, LEN, &ddr2, NULL));

	/* Plain to plain across the cable: as before tiers. */
	d[0] = wr(self->q0, p0, kp1, 1);
	ASSERT_EQ(1, ctx_submit(self->fd, d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, c, 1, 1, 0, NULL));
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(ring_uncontended(LEN, 1), c[0].finish_ps - c[0].start_ps);

	/* DDR to HBM on endpoint 0: both ports, the DDR's the slower. */
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_STATS_RESET));
	d[0] = wr(self->q0, ddr, kh0, 2);
	ASSERT_EQ(1, ctx_submit(self->fd, d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, c, 1, 1, 0, NULL));
	want = DDR_LAT + ser(RING_SEG, DDR_BW) + HBM_LAT +
	       ser(RING_SEG, HBM_BW) + (SEGS - 1) * ser(RING_SEG, DDR_BW);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(want, c[0].finish_ps - c[0].start_ps);
	ASSERT_EQ(0, stats_get(&self->gs, HBM_LINK, &s));
	EXPECT_EQ(ICFAB_TIER_HBM, s.tier);
	EXPECT_EQ(LEN, s.bytes);
	EXPECT_EQ(SEGS * ser(RING_SEG, HBM_BW), s.busy_ps);

	/* HBM of 0 to plain memory of 1: the port, then the cable. */
	d[0] = wr(self->q0, hbm0, kp1, 3);
	ASSERT_EQ(1, ctx_submit(self->fd, d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, c, 1, 1, 0, &clock));
	want = HBM_LAT + ser(RING_SEG, HBM_BW) + RING_LAT + ring_ser(RING_SEG) +
	       (SEGS - 1) * ring_ser(RING_SEG);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(want, c[0].finish_ps - c[0].start_ps);

	/*
	 * Two readers of the shared HBM port, 0 and 1 each copying to its
	 * own plain memory, submitted together: B/2 each, the first queue
	 * first at every turn.
	 */
	d[0] = wr(self->q0, hbm0, kp0, 4);
	d[1] = wr(self->q1, hbm1, kp1, 5);
	ASSERT_EQ(2, ctx_submit(self->fd, d, 2));
	ASSERT_EQ(2, ctx_wait(self->fd, c, 2, 2, 0, NULL));
	want = HBM_LAT + (2 * (SEGS - 1) + 1) * ser(RING_SEG, HBM_BW);
	want2 = HBM_LAT + (2 * (SEGS - 1) + 2) * ser(RING_SEG, HBM_BW);
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(clock, c[i].start_ps);
		EXPECT_EQ(c[i].user_tag == 4 ? want : want2,
			  c[i].finish_ps - c[i].start_ps);
	}

	/* From 2's DDR to 0's HBM: no route joins them. */
	d[0] = wr(self->q2, ddr2, kh0, 6);
	ASSERT_EQ(1, ctx_submit(self->fd, d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, c, 1, 1, 0, NULL));
	EXPECT_EQ(-EHOSTUNREACH, c[0].status);
}

TEST_HARNESS_MAIN
