// SPDX-License-Identifier: GPL-2.0
/*
 * Energy per bit and static power (ICFAB_F_LINK_ENERGY): a link's
 * figures are stored and read back, and STATS_GET derives from a known
 * transfer exactly bytes x 8 x fJ/bit and static mW x elapsed ps, the
 * elapsed fabric time being the transfer's closed form; reset and a new
 * commit start them from zero.
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
#define FJ_PER_BIT	1234U		/* link 0 (0 -> 1) */
#define STATIC_MW	7U		/* link 0 */
#define BACK_MW		3U		/* link 1 (1 -> 0): static only */

struct estats {
	int seen;
	uint32_t class;
	uint64_t bytes, energy_fj, static_fj, elapsed_ps;
};

struct elink {
	int seen;
	uint32_t fj_per_bit, static_mw;
};

static int stats_cb(const struct genl_reply *r, void *arg)
{
	struct estats *s = arg;

	if (r->cmd != ICFAB_CMD_STATS_GET || !r->tb[ICFAB_A_STATS_BYTES] ||
	    !r->tb[ICFAB_A_LINK_CLASS] || !r->tb[ICFAB_A_STATS_ENERGY_FJ] ||
	    !r->tb[ICFAB_A_STATS_STATIC_FJ] ||
	    !r->tb[ICFAB_A_STATS_ELAPSED_PS])
		return -EPROTO;
	s->seen++;
	s->class = genl_u32(r->tb[ICFAB_A_LINK_CLASS]);
	s->bytes = genl_u64(r->tb[ICFAB_A_STATS_BYTES]);
	s->energy_fj = genl_u64(r->tb[ICFAB_A_STATS_ENERGY_FJ]);
	s->static_fj = genl_u64(r->tb[ICFAB_A_STATS_STATIC_FJ]);
	s->elapsed_ps = genl_u64(r->tb[ICFAB_A_STATS_ELAPSED_PS]);
	return 0;
}

static int stats_get(struct genl_sock *gs, uint32_t link, struct estats *s)
{
	struct genl_msg m;

	memset(s, 0, sizeof(*s));
	genl_msg_init(&m, gs->family, ICFAB_CMD_STATS_GET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, link);
	return genl_request(gs, &m, stats_cb, s);
}

static int link_cb(const struct genl_reply *r, void *arg)
{
	struct elink *l = arg;

	if (r->cmd != ICFAB_CMD_LINK_GET ||
	    !r->tb[ICFAB_A_LINK_ENERGY_FJ_PER_BIT] ||
	    !r->tb[ICFAB_A_LINK_STATIC_MW])
		return -EPROTO;
	l->seen++;
	l->fj_per_bit = genl_u32(r->tb[ICFAB_A_LINK_ENERGY_FJ_PER_BIT]);
	l->static_mw = genl_u32(r->tb[ICFAB_A_LINK_STATIC_MW]);
	return 0;
}

static int link_get(struct genl_sock *gs, uint32_t link, struct elink *l)
{
	memset(l, 0, sizeof(*l));
	return link_get_reply(gs, link, link_cb, l);
}

/* A link of stage_ring()'s bandwidth and latency, with energy figures. */
static int link_new_energy(struct genl_sock *gs, uint32_t id, uint32_t src,
			   uint32_t dst, uint32_t fj_per_bit, uint32_t mw)
{
	struct genl_msg m;

	ring_link_msg(gs, &m, id, src, dst);
	genl_put_u32(&m, ICFAB_A_LINK_CLASS, ICFAB_LINK_CLASS_NIC);
	if (fj_per_bit)
		genl_put_u32(&m, ICFAB_A_LINK_ENERGY_FJ_PER_BIT, fj_per_bit);
	if (mw)
		genl_put_u32(&m, ICFAB_A_LINK_STATIC_MW, mw);
	return genl_request(gs, &m, NULL, NULL);
}

/* Two endpoints, one cable: link 0 is 0 -> 1, link 1 is 1 -> 0. */
static int stage_pair(struct genl_sock *gs)
{
	static const uint16_t to1[] = { ICFAB_ROUTE_NONE, 0 };
	static const uint16_t to0[] = { 0, ICFAB_ROUTE_NONE };
	int err = node_new(gs, 0, ICFAB_NODE_ENDPOINT, 1, "a");

	if (!err)
		err = node_new(gs, 1, ICFAB_NODE_ENDPOINT, 1, "b");
	if (!err)
		err = link_new_energy(gs, 0, 0, 1, FJ_PER_BIT, STATIC_MW);
	if (!err)
		err = link_new_energy(gs, 1, 1, 0, 0, BACK_MW);
	if (!err)
		err = route_set(gs, 0, 0, to1, 2);
	if (!err)
		err = route_set(gs, 1, 0, to0, 2);
	return err;
}

/*
 * Endpoint 0 writes SEGS segments to 1 and waits: the context's clock is
 * then the finish time. The context stays open (the engine alive) in
 * *@fdp.
 */
static int run(int *fdp, uint64_t *clock)
{
	struct icfab_desc d;
	struct icfab_cqe c;
	int fd, q;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*fdp = fd;
	if (ctx_attach(fd, 0))
		return -EIO;
	q = ctx_queue(fd, 0, 4);
	if (q < 0)
		return q;
	d = desc_put(q, 1, SEGS * RING_SEG, 1);
	if (ctx_submit(fd, &d, 1) != 1)
		return -EIO;
	if (ctx_wait(fd, &c, 1, 1, 0, clock) != 1 || c.status)
		return -EIO;
	return 0;
}

FIXTURE(en) {
	struct genl_sock gs;
};

FIXTURE_SETUP(en)
{
	struct icfab_info info = {};
	int fd;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, ICFAB_IOC_INFO, &info));
	close(fd);
	if (!(info.features & ICFAB_F_LINK_ENERGY))
		SKIP(return, "the module does not count energy");
	ASSERT_EQ(0, fabric_open_clear(&self->gs));
	ASSERT_EQ(0, stage_pair(&self->gs));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
}

FIXTURE_TEARDOWN(en)
{
	fabric_close(&self->gs);
}

TEST_F(en, a_link_keeps_its_figures)
{
	struct elink l;

	ASSERT_EQ(0, link_get(&self->gs, 0, &l));
	EXPECT_EQ(FJ_PER_BIT, l.fj_per_bit);
	EXPECT_EQ(STATIC_MW, l.static_mw);
	ASSERT_EQ(0, link_get(&self->gs, 1, &l));
	EXPECT_EQ(0, l.fj_per_bit);
	EXPECT_EQ(BACK_MW, l.static_mw);
}

TEST_F(en, joules_are_bytes_times_8_times_energy_per_bit)
{
	uint64_t clock = 0, finish = ring_uncontended(SEGS * RING_SEG, 1);
	struct estats live, fwd, back;
	int fd = -1;

	ASSERT_EQ(0, stats_get(&self->gs, 0, &fwd));
	EXPECT_EQ(0, fwd.energy_fj | fwd.static_fj | fwd.elapsed_ps);

	ASSERT_EQ(0, run(&fd, &clock));
	EXPECT_EQ(finish, clock);
	ASSERT_EQ(0, stats_get(&self->gs, 0, &live));
	close(fd);	/* the last context: the engine is folded */
	ASSERT_EQ(0, stats_get(&self->gs, 0, &fwd));
	ASSERT_EQ(0, stats_get(&self->gs, 1, &back));

	EXPECT_EQ(ICFAB_LINK_CLASS_NIC, fwd.class);
	EXPECT_EQ(SEGS * RING_SEG, fwd.bytes);
	/* 409600 B x 8 x 1234 fJ/b = 4043571200 fJ, to the femtojoule. */
	EXPECT_EQ(4043571200ULL, fwd.energy_fj);
	EXPECT_EQ(fwd.bytes * 8 * FJ_PER_BIT, fwd.energy_fj);
	/* Fabric time covered: the transfer's finish, live and folded. */
	EXPECT_EQ(finish, live.elapsed_ps);
	EXPECT_EQ(finish, fwd.elapsed_ps);
	EXPECT_EQ(STATIC_MW * finish, fwd.static_fj);
	EXPECT_EQ(live.energy_fj, fwd.energy_fj);
	/* The way back carried nothing but drew its static power. */
	EXPECT_EQ(0, back.bytes);
	EXPECT_EQ(0, back.energy_fj);
	EXPECT_EQ(BACK_MW * finish, back.static_fj);
}

TEST_F(en, engines_add_up_and_reset_starts_again)
{
	uint64_t clock = 0, finish = ring_uncontended(SEGS * RING_SEG, 1);
	struct estats s;
	int fd = -1;

	ASSERT_EQ(0, run(&fd, &clock));
	close(fd);
	ASSERT_EQ(0, run(&fd, &clock));
	close(fd);
	ASSERT_EQ(0, stats_get(&self->gs, 0, &s));
	EXPECT_EQ(2 * SEGS * RING_SEG * 8 * FJ_PER_BIT, s.energy_fj);
	EXPECT_EQ(2 * finish, s.elapsed_ps);
	EXPECT_EQ(STATIC_MW * 2 * finish, s.static_fj);

	/* A reset while an engine lives counts from its clock on. */
	ASSERT_EQ(0, run(&fd, &clock));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_STATS_RESET));
	ASSERT_EQ(0, stats_get(&self->gs, 0, &s));
	EXPECT_EQ(0, s.energy_fj | s.static_fj | s.elapsed_ps);
	close(fd);
	ASSERT_EQ(0, stats_get(&self->gs, 0, &s));
	EXPECT_EQ(0, s.energy_fj | s.static_fj | s.elapsed_ps);
}

TEST_F(en, a_new_commit_starts_from_zero)
{
	uint64_t clock = 0;
	struct estats s;
	int fd = -1;

	ASSERT_EQ(0, run(&fd, &clock));
	close(fd);
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_pair(&self->gs));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(0, stats_get(&self->gs, 0, &s));
	EXPECT_EQ(0, s.bytes | s.energy_fj | s.static_fj | s.elapsed_ps);
}

TEST_F(en, link_set_takes_no_energy)
{
	struct genl_msg m;

	/* The figures belong to LINK_NEW; LINK_SET's strict policy refuses. */
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_LINK_SET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, 0);
	genl_put_u32(&m, ICFAB_A_LINK_STATE, ICFAB_LINK_UP);
	genl_put_u32(&m, ICFAB_A_LINK_ENERGY_FJ_PER_BIT, 1);
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
	cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT);
}

TEST_HARNESS_MAIN
