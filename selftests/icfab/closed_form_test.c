// SPDX-License-Identifier: GPL-2.0
/*
 * The timing model against its closed forms (docs/TIMING.md, "Closed forms"),
 * with every expectation computed here from the formula, never read back
 * from the engine:
 *  - an uncontended transfer of n whole segments over h uniform links
 *    takes h * (L + S/B) + (n - 1) * S/B, exactly, for h up to 6;
 *  - k flows through one bottleneck of bandwidth B each get B/k, within
 *    1%, for k = 2, 3, 4 and 8;
 *  - with every link cut-through (LINK_SWITCHING), h L + n S/B, exactly,
 *    for h = 1, 3, 6; and an out-of-range mode is -ERANGE with extack;
 *  - over k = 3 parallel cables sprayed (LINK_MULTIPATH), one transfer
 *    of n whole segments takes L + ceil(n/k) S/B, exactly, and L + n S/B
 *    without; an out-of-range mode is -ERANGE with extack;
 *  - n one-segment timing-only WRITEs at consecutive destination
 *    offsets (ICFAB_F_TIMING_OFFSETS), with k DMA engines, take
 *    L + ceil(n/k) S/B sprayed, as the one transfer they were cut from,
 *    and L + n S/B at offset 0 each or without spraying.
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

#define PS_PER_S	1000000000000ULL
#define BW		50000000000ULL	/* bytes/s: stage_ring's links */
#define FAST		400000000000ULL	/* bytes/s: the star's injection links */
#define LAT		500000ULL	/* ps: every link fabric_util makes */
#define SEG		4096ULL		/* bytes, the default segment size */

/* S/B, ps, rounded up as the model does. */
static uint64_t ser(uint64_t bytes, uint64_t bw)
{
	return (bytes * PS_PER_S + bw - 1) / bw;
}

/* A ring of 12: 0 -> h goes clockwise over h links for h <= 6. */
FIXTURE(ring) {
	struct genl_sock gs;
	int fd;
};

FIXTURE_SETUP(ring)
{
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_ring(&self->gs, 12));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(ring)
{
	close(self->fd);
	clear_fabric(&self->gs);
	genl_close(&self->gs);
}

TEST_F(ring, uncontended_over_3_5_and_6_hops)
{
	static const unsigned int hops[] = { 3, 5, 6 };
	static const uint64_t segs[] = { 1, 8, 64 };
	struct icfab_cqe c;
	int q, tag = 0;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 4);
	ASSERT_LE(0, q);
	for (unsigned int i = 0; i < 3; i++) {
		for (unsigned int j = 0; j < 3; j++) {
			struct icfab_desc d = desc_put(q, hops[i], segs[j] * SEG, tag);

			ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
			ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
			EXPECT_EQ(tag, c.user_tag);
			EXPECT_EQ(0, c.status);
			EXPECT_EQ(0, c.queued_ps);
			EXPECT_EQ(c.submit_ps, c.start_ps);
			EXPECT_EQ(ring_uncontended(segs[j] * SEG, hops[i]),
				  c.finish_ps - c.start_ps);
			tag++;
		}
	}
}

/*
 * A star: endpoints 0..8 around switch 9, endpoint e on its port e.
 * Link 2e is e -> switch at FAST, link 2e + 1 switch -> e at BW, so flows
 * from several endpoints to endpoint 0 all meet at link 1, the only
 * bottleneck.
 */
#define STAR_EPS	9
#define STAR_SW		9

static int stage_star(struct genl_sock *gs)
{
	uint16_t ports[STAR_EPS];
	char name[16];
	int err;

	for (unsigned int e = 0; e < STAR_EPS; e++) {
		snprintf(name, sizeof(name), "chip%u", e);
		err = node_new(gs, e, ICFAB_NODE_ENDPOINT, 1, name);
		if (err)
			return err;
	}
	err = node_new(gs, STAR_SW, ICFAB_NODE_SWITCH, STAR_EPS, "sw");
	if (err)
		return err;
	for (unsigned int e = 0; e < STAR_EPS; e++) {
		err = link_new(gs, 2 * e, e, 0, STAR_SW, e, FAST);
		if (!err)
			err = link_new(gs, 2 * e + 1, STAR_SW, e, e, 0, BW);
		if (err)
			return err;
	}
	for (unsigned int e = 0; e < STAR_EPS; e++) {
		for (unsigned int d = 0; d < STAR_EPS; d++)
			ports[d] = d == e ? ICFAB_ROUTE_NONE : 0;
		err = route_set(gs, e, 0, ports, STAR_EPS);
		if (err)
			return err;
	}
	for (unsigned int d = 0; d < STAR_EPS; d++)
		ports[d] = d;
	return route_set(gs, STAR_SW, 0, ports, STAR_EPS);
}

FIXTURE(star) {
	struct genl_sock gs;
	int fd;
};

FIXTURE_VARIANT(star) {
	unsigned int k;
};

FIXTURE_VARIANT_ADD(star, k2) { .k = 2 };
FIXTURE_VARIANT_ADD(star, k3) { .k = 3 };
FIXTURE_VARIANT_ADD(star, k4) { .k = 4 };
FIXTURE_VARIANT_ADD(star, k8) { .k = 8 };

FIXTURE_SETUP(star)
{
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_star(&self->gs));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(star)
{
	close(self->fd);
	clear_fabric(&self->gs);
	genl_close(&self->gs);
}

TEST_F(star, k_flows_through_one_bottleneck_each_get_b_over_k)
{
	const unsigned int k = variant->k;
	/* Long enough that latencies and the ramp are far below 1%. */
	const uint64_t bytes = 1024 * SEG;
	struct icfab_desc d[8];
	struct icfab_cqe c[8];
	uint64_t expect, tol;
	int q;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	for (unsigned int i = 0; i < k; i++) {
		ASSERT_EQ(0, ctx_attach(self->fd, 1 + i));
		q = ctx_queue(self->fd, 1 + i, 2);
		ASSERT_LE(0, q);
		d[i] = desc_put(q, 0, bytes, i);
	}
	/* One submission: every flow starts at the same instant. */
	ASSERT_EQ((int)k, ctx_submit(self->fd, d, k));
	ASSERT_EQ((int)k, ctx_wait(self->fd, c, k, k, 0, NULL));

	/* At B/k, @bytes take k * bytes / B (bytes * 10^12 fits; k * it not). */
	expect = k * (bytes * PS_PER_S / BW);
	tol = expect / 100;
	for (unsigned int i = 0; i < k; i++) {
		uint64_t took = c[i].finish_ps - c[i].start_ps;

		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(c[0].start_ps, c[i].start_ps);
		EXPECT_LE(took, expect + tol);
		EXPECT_GE(took, expect - tol);
		/* Fair, not a flow at a time: all of them queued. */
		EXPECT_GT(c[i].queued_ps, 0);
	}
}

TEST_F(star, one_flow_alone_gets_all_of_b)
{
	const uint64_t bytes = 1024 * SEG;
	struct icfab_desc d;
	struct icfab_cqe c;
	uint64_t expect;
	int q;

	ASSERT_EQ(0, ctx_attach(self->fd, 1));
	q = ctx_queue(self->fd, 1, 2);
	ASSERT_LE(0, q);
	d = desc_put(q, 0, bytes, 0);
	ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
	/*
	 * Two hops, the slower one last: the first segment crosses both
	 * (L + S/FAST + L + S/B), then the rest follow at the slow link's
	 * pace, (n - 1) S/B.
	 */
	expect = 2 * LAT + ser(SEG, FAST) + ser(SEG, BW) +
		 (bytes / SEG - 1) * ser(SEG, BW);
	EXPECT_EQ(expect, c.finish_ps - c.start_ps);
}

/*
 * A link's u8 mode attribute @attr: LINK_SWITCHING or LINK_MULTIPATH.
 * link_set_mode() stages LINK_SET of link @id, UP, with @attr = @mode;
 * link_get_mode() reads @attr of committed link @id, or -1 when it is
 * not reported.
 */
static int link_set_mode(struct genl_sock *gs, uint32_t id, int attr,
			 uint8_t mode)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_SET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, id);
	genl_put_u32(&m, ICFAB_A_LINK_STATE, ICFAB_LINK_UP);
	genl_put(&m, attr, &mode, 1);
	return genl_request(gs, &m, NULL, NULL);
}

struct link_mode {
	int attr;
	int mode;
};

static int link_mode_cb(const struct genl_reply *r, void *arg)
{
	struct link_mode *lm = arg;

	if (r->tb[lm->attr])
		lm->mode = *(uint8_t *)((char *)r->tb[lm->attr] + NLA_HDRLEN);
	return 0;
}

static int link_get_mode(struct genl_sock *gs, uint32_t id, int attr)
{
	struct link_mode lm = { .attr = attr, .mode = -1 };

	if (link_get_reply(gs, id, link_mode_cb, &lm))
		return -1;
	return lm.mode;
}

TEST_F(ring, switching_mode_out_of_range_is_erange_with_extack)
{
	EXPECT_EQ(-ERANGE, link_set_mode(&self->gs, 0, ICFAB_A_LINK_SWITCHING,
					 ICFAB_SWITCHING_MAX + 1));
	EXPECT_NE(0, self->gs.extack[0]);
	EXPECT_EQ(ICFAB_A_LINK_SWITCHING, self->gs.bad_attr_type);
	EXPECT_EQ(ICFAB_SWITCHING_STORE_FORWARD,
		  link_get_mode(&self->gs, 0, ICFAB_A_LINK_SWITCHING));
}

/*
 * The ring of 12 with every link cut-through: one message of n whole
 * segments over h links takes h L + n S/B (docs/TIMING.md), against
 * store and forward's h (L + S/B) + (n - 1) S/B.
 */
FIXTURE(ct_ring) {
	struct genl_sock gs;
	int fd;
};

FIXTURE_SETUP(ct_ring)
{
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_ring(&self->gs, 12));
	for (unsigned int l = 0; l < 24; l++)
		ASSERT_EQ(0, link_set_mode(&self->gs, l, ICFAB_A_LINK_SWITCHING,
					   ICFAB_SWITCHING_CUT_THROUGH));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(ct_ring)
{
	close(self->fd);
	clear_fabric(&self->gs);
	genl_close(&self->gs);
}

TEST_F(ct_ring, link_get_reports_cut_through)
{
	for (unsigned int l = 0; l < 24; l++)
		EXPECT_EQ(ICFAB_SWITCHING_CUT_THROUGH,
			  link_get_mode(&self->gs, l, ICFAB_A_LINK_SWITCHING));
}

TEST_F(ct_ring, cut_through_pays_only_latency_per_hop)
{
	static const unsigned int hops[] = { 1, 3, 6 };
	static const uint64_t segs[] = { 1, 8, 64 };
	struct icfab_cqe c;
	int q, tag = 0;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 4);
	ASSERT_LE(0, q);
	for (unsigned int i = 0; i < 3; i++) {
		for (unsigned int j = 0; j < 3; j++) {
			struct icfab_desc d = desc_put(q, hops[i], segs[j] * SEG, tag);

			ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
			ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
			EXPECT_EQ(0, c.status);
			EXPECT_EQ(0, c.queued_ps);
			EXPECT_EQ(hops[i] * LAT + segs[j] * ser(SEG, BW),
				  c.finish_ps - c.start_ps);
			tag++;
		}
	}
}

/*
 * Two endpoints joined by PAR cables: link 2p from 0's port p to 1's,
 * 2p + 1 back. Routes name port 0; LINK_MULTIPATH @mode on every link.
 * Each endpoint has PAR DMA engines.
 */
#define PAR	3

static int endpoint_new(struct genl_sock *gs, uint32_t id, const char *name)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_NEW, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, id);
	genl_put_u32(&m, ICFAB_A_NODE_KIND, ICFAB_NODE_ENDPOINT);
	genl_put_u32(&m, ICFAB_A_NODE_PORTS, PAR);
	genl_put(&m, ICFAB_A_NODE_NAME, name, strlen(name) + 1);
	genl_put_u64(&m, ICFAB_A_NODE_MEM_BYTES, 1ULL << 30);
	genl_put_u32(&m, ICFAB_A_NODE_DMA_ENGINES, PAR);
	return genl_request(gs, &m, NULL, NULL);
}

static int stage_parallel(struct genl_sock *gs, uint8_t mode)
{
	uint16_t ports[2] = { ICFAB_ROUTE_NONE, 0 };
	int err;

	err = endpoint_new(gs, 0, "ipu0");
	if (!err)
		err = endpoint_new(gs, 1, "ipu1");
	for (unsigned int p = 0; !err && p < PAR; p++) {
		err = link_new(gs, 2 * p, 0, p, 1, p, BW);
		if (!err)
			err = link_new(gs, 2 * p + 1, 1, p, 0, p, BW);
		if (!err)
			err = link_set_mode(gs, 2 * p,
					    ICFAB_A_LINK_MULTIPATH, mode);
		if (!err)
			err = link_set_mode(gs, 2 * p + 1,
					    ICFAB_A_LINK_MULTIPATH, mode);
	}
	if (!err)
		err = route_set(gs, 0, 0, ports, 2);
	ports[0] = 0;
	ports[1] = ICFAB_ROUTE_NONE;
	return err ?: route_set(gs, 1, 0, ports, 2);
}

FIXTURE(parallel) {
	struct genl_sock gs;
	int fd;
};

FIXTURE_VARIANT(parallel) {
	uint8_t mode;
};

FIXTURE_VARIANT_ADD(parallel, none) { .mode = ICFAB_MULTIPATH_NONE };
FIXTURE_VARIANT_ADD(parallel, spray) { .mode = ICFAB_MULTIPATH_SPRAY };

FIXTURE_SETUP(parallel)
{
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_parallel(&self->gs, variant->mode));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(parallel)
{
	close(self->fd);
	clear_fabric(&self->gs);
	genl_close(&self->gs);
}

TEST_F(parallel, link_get_reports_the_mode)
{
	for (unsigned int l = 0; l < 2 * PAR; l++)
		EXPECT_EQ(variant->mode,
			  link_get_mode(&self->gs, l, ICFAB_A_LINK_MULTIPATH));
}

TEST_F(parallel, multipath_mode_out_of_range_is_erange_with_extack)
{
	EXPECT_EQ(-ERANGE, link_set_mode(&self->gs, 0, ICFAB_A_LINK_MULTIPATH,
					 ICFAB_MULTIPATH_MAX + 1));
	EXPECT_NE(0, self->gs.extack[0]);
	EXPECT_EQ(ICFAB_A_LINK_MULTIPATH, self->gs.bad_attr_type);
	EXPECT_EQ(variant->mode,
		  link_get_mode(&self->gs, 0, ICFAB_A_LINK_MULTIPATH));
}

TEST_F(parallel, sprayed_cables_add_their_bandwidth)
{
	static const uint64_t segs[] = { 1, 3, 8, 64 };
	const int spray = variant->mode == ICFAB_MULTIPATH_SPRAY;
	struct icfab_cqe c;
	int q;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 4);
	ASSERT_LE(0, q);
	for (unsigned int j = 0; j < 4; j++) {
		uint64_t rows = spray ? (segs[j] + PAR - 1) / PAR : segs[j];
		struct icfab_desc d = desc_put(q, 1, segs[j] * SEG, j);

		ASSERT_EQ(1, ctx_submit(self->fd, &d, 1));
		ASSERT_EQ(1, ctx_wait(self->fd, &c, 1, 1, 0, NULL));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(0, c.queued_ps);
		EXPECT_EQ(LAT + rows * ser(SEG, BW), c.finish_ps - c.start_ps);
	}
}

/*
 * One buffer of NP segments cut into one-segment timing-only WRITEs,
 * piece i bound for offset i S (libfabricdev's interleaved pieces),
 * posted at once: sprayed, piece i takes cable i mod PAR, PAR DMA
 * engines keep PAR of them in flight, and the last lands L + ceil(NP /
 * PAR) S/B after the first was posted, the one transfer's closed form
 * (docs/TIMING.md, "The spray base"). At offset 0 each, or not
 * sprayed, they all take the route's cable: L + NP S/B.
 */
#define NP	12

static uint64_t pieces_time(int fd, int q, int offsets)
{
	struct icfab_desc d[NP];
	struct icfab_cqe c[NP];
	uint64_t first = ~0ULL, last = 0;
	int got = 0, n;

	for (unsigned int i = 0; i < NP; i++) {
		d[i] = desc_put(q, 1, SEG, i);
		d[i].remote_off = offsets ? i * SEG : 0;
	}
	if (ctx_submit(fd, d, NP) != NP)
		return 0;
	while (got < NP) {
		n = ctx_wait(fd, c + got, 1, NP - got, 0, NULL);
		if (n <= 0)
			return 0;
		got += n;
	}
	for (unsigned int i = 0; i < NP; i++) {
		if (c[i].status)
			return 0;
		first = c[i].submit_ps < first ? c[i].submit_ps : first;
		last = c[i].finish_ps > last ? c[i].finish_ps : last;
	}
	return last - first;
}

TEST_F(parallel, pieces_at_consecutive_offsets_take_every_cable)
{
	const int spray = variant->mode == ICFAB_MULTIPATH_SPRAY;
	struct icfab_info info = { 0 };
	int q;

	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &info));
	ASSERT_TRUE(info.features & ICFAB_F_TIMING_OFFSETS);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, NP);
	ASSERT_LE(0, q);
	EXPECT_EQ(LAT + (spray ? (NP + PAR - 1) / PAR : NP) * ser(SEG, BW),
		  pieces_time(self->fd, q, 1));
	EXPECT_EQ(LAT + NP * ser(SEG, BW), pieces_time(self->fd, q, 0));
}

TEST_F(parallel, timing_only_still_refuses_a_region_or_key)
{
	struct icfab_desc d;
	int q;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	q = ctx_queue(self->fd, 0, 4);
	ASSERT_LE(0, q);
	d = desc_put(q, 1, SEG, 0);
	d.rkey = 1;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = desc_put(q, 1, SEG, 0);
	d.region = 1;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
}

TEST_HARNESS_MAIN
