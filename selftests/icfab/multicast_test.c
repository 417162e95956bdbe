// SPDX-License-Identifier: GPL-2.0
/*
 * Circuit WRITEs (ICFAB_F_CIRCUITS): one source and eight leaves on a
 * switch. A multicast WRITE crosses the source's injection link once and
 * lands in every leaf's bound region; it costs what one routed unicast
 * does. A unicast circuit lands like a routed WRITE, at the same time.
 * Every refused descriptor and binding has its errno; a circuit deleted,
 * or a file closed, under a multicast in flight is safe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define NLEAF	8
#define SW	(NLEAF + 1)		/* the switch's node id */
#define BW	50000000000ULL		/* bytes/s, link_new()'s */
#define RPAGES	4			/* pages per region */
#define PAGE	4096ULL

/* Link ids: 2i leaves endpoint i for the switch, 2i + 1 comes back. */
#define UP(i)	(2 * (i))
#define DOWN(i)	(2 * (i) + 1)

static int switch_new(struct genl_sock *gs, uint32_t id, uint32_t ports)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_NEW, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, id);
	genl_put_u32(&m, ICFAB_A_NODE_KIND, ICFAB_NODE_SWITCH);
	genl_put_u32(&m, ICFAB_A_NODE_PORTS, ports);
	genl_put(&m, ICFAB_A_NODE_NAME, "sw", 3);
	genl_put_u32(&m, ICFAB_A_NODE_COLORS, 4);
	return genl_request(gs, &m, NULL, NULL);
}

/* Endpoints 0..NLEAF and switch SW, without links. */
static int stage_nodes(struct genl_sock *gs)
{
	char name[16];
	uint32_t i;
	int err;

	for (i = 0; i <= NLEAF; i++) {
		snprintf(name, sizeof(name), "ep%u", i);
		err = node_new(gs, i, ICFAB_NODE_ENDPOINT, 1, name);
		if (err)
			return err;
	}
	return switch_new(gs, SW, NLEAF + 1);
}

/* Every endpoint's links to and from the switch, and every route. */
static int stage_links(struct genl_sock *gs)
{
	uint16_t ports[NLEAF + 1], sw[NLEAF + 1];
	uint32_t i, d;
	int err;

	for (i = 0; i <= NLEAF; i++) {
		err = link_new(gs, UP(i), i, 0, SW, i, BW);
		if (!err)
			err = link_new(gs, DOWN(i), SW, i, i, 0, BW);
		if (err)
			return err;
	}
	for (i = 0; i <= NLEAF; i++) {
		for (d = 0; d <= NLEAF; d++)
			ports[d] = d == i ? ICFAB_ROUTE_NONE : 0;
		err = route_set(gs, i, 0, ports, NLEAF + 1);
		if (err)
			return err;
		sw[i] = i;
	}
	return route_set(gs, SW, 0, sw, NLEAF + 1);
}

static int new_cb(const struct genl_reply *r, void *arg)
{
	*(uint32_t *)arg = genl_u32(r->tb[ICFAB_A_CIRCUIT_ID]);
	return 0;
}

/* A circuit from @src to @dsts through the switch, owned by @pid. */
static int circuit_new(struct genl_sock *gs, uint32_t color, uint32_t src,
		       const uint32_t *dsts, unsigned int n, uint32_t pid,
		       uint32_t *id)
{
	uint32_t router = SW;
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CIRCUIT_NEW, 0);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_COLOR, color);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_SRC, src);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_OWNER_PID, pid);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_OWNER_UID, getuid());
	genl_put(&m, ICFAB_A_CIRCUIT_DSTS, dsts, n * sizeof(*dsts));
	genl_put(&m, ICFAB_A_CIRCUIT_ROUTERS, &router, sizeof(router));
	return genl_request(gs, &m, new_cb, id);
}

static int circuit_del(struct genl_sock *gs, uint32_t id)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CIRCUIT_DEL, 0);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_ID, id);
	return genl_request(gs, &m, NULL, NULL);
}

static int ids_cb(const struct genl_reply *r, void *arg)
{
	uint32_t *ids = arg;

	if (ids[0] < 63)
		ids[++ids[0]] = genl_u32(r->tb[ICFAB_A_CIRCUIT_ID]);
	return 0;
}

static void remove_circuits(struct genl_sock *gs)
{
	uint32_t ids[64] = { 0 };
	struct genl_msg m;
	uint32_t i;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CIRCUIT_GET, NLM_F_DUMP);
	if (!genl_request(gs, &m, ids_cb, ids))
		for (i = 1; i <= ids[0]; i++)
			circuit_del(gs, ids[i]);
}

static int link_bytes_cb(const struct genl_reply *r, void *arg)
{
	if (!r->tb[ICFAB_A_STATS_BYTES])
		return -EPROTO;
	*(uint64_t *)arg = genl_u64(r->tb[ICFAB_A_STATS_BYTES]);
	return 0;
}

static int64_t link_bytes(struct genl_sock *gs, uint32_t link)
{
	uint64_t bytes = 0;
	struct genl_msg m;
	int err;

	genl_msg_init(&m, gs->family, ICFAB_CMD_STATS_GET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, link);
	err = genl_request(gs, &m, link_bytes_cb, &bytes);
	return err ? err : (int64_t)bytes;
}

static int recv_bind(int fd, uint32_t circuit, uint32_t ep, uint32_t region,
		     uint64_t off)
{
	struct icfab_circuit_recv cr = { .circuit = circuit, .endpoint = ep,
					 .region = region, .offset = off };

	return ioctl(fd, ICFAB_IOC_CIRCUIT_RECV, &cr) ? -errno : 0;
}

static int region(int fd, uint32_t ep, uint32_t *handle, unsigned char **map)
{
	struct icfab_region_alloc ra = { .endpoint = ep,
					 .size = RPAGES * PAGE };

	if (ioctl(fd, ICFAB_IOC_REGION_ALLOC, &ra))
		return -errno;
	*handle = ra.region;
	*map = mmap(NULL, ra.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    ra.mmap_offset);
	return *map == MAP_FAILED ? -errno : 0;
}

/* One descriptor, submitted and reaped: its status, or -errno. */
static int one(int fd, struct icfab_desc d, struct icfab_cqe *c)
{
	int ret = ctx_submit(fd, &d, 1);

	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	if (ctx_wait(fd, c, 1, 1, 0, NULL) != 1)
		return -EIO;
	return c->status;
}

static struct icfab_desc cwrite(uint32_t q, uint32_t circuit, uint32_t reg,
				uint64_t loff, uint64_t roff, uint64_t len)
{
	return (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = q,
		.circuit = circuit, .region = reg, .local_off = loff,
		.remote_off = roff, .len = len, .user_tag = len };
}

static int all_zero(const unsigned char *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static uint64_t bound_off(unsigned int leaf)
{
	return 7 * leaf + 1;		/* odd, different per leaf */
}

FIXTURE(mc) {
	struct genl_sock gs;
	int fd, q;
	uint32_t circuit;		/* 0 -> every leaf, owned by us */
	uint32_t src;			/* region on endpoint 0 */
	unsigned char *srcm;
	uint32_t leaf[NLEAF + 1];	/* regions on endpoints 1..NLEAF */
	unsigned char *leafm[NLEAF + 1];
};

FIXTURE_SETUP(mc)
{
	uint32_t dsts[NLEAF];
	unsigned int i;

	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	remove_circuits(&self->gs);
	ASSERT_EQ(0, clear_fabric(&self->gs));
	ASSERT_EQ(0, stage_nodes(&self->gs));
	ASSERT_EQ(0, stage_links(&self->gs));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	for (i = 0; i < NLEAF; i++)
		dsts[i] = i + 1;
	ASSERT_EQ(0, circuit_new(&self->gs, 0, 0, dsts, NLEAF, getpid(),
				 &self->circuit));

	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	for (i = 0; i <= NLEAF; i++)
		ASSERT_EQ(0, ctx_attach(self->fd, i));
	self->q = ctx_queue(self->fd, 0, 16);
	ASSERT_LE(0, self->q);
	ASSERT_EQ(0, region(self->fd, 0, &self->src, &self->srcm));
	fill(self->srcm, RPAGES * PAGE, 42);
	for (i = 1; i <= NLEAF; i++) {
		ASSERT_EQ(0, region(self->fd, i, &self->leaf[i],
				    &self->leafm[i]));
		ASSERT_EQ(0, recv_bind(self->fd, self->circuit, i,
				       self->leaf[i], bound_off(i)));
	}
}

FIXTURE_TEARDOWN(mc)
{
	if (self->fd >= 0)
		close(self->fd);
	remove_circuits(&self->gs);
	clear_fabric(&self->gs);
	genl_close(&self->gs);
}

TEST_F(mc, feature_is_reported)
{
	struct icfab_info info = {};

	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &info));
	EXPECT_TRUE(info.features & ICFAB_F_CIRCUITS);
}

/* N odd, from an odd offset, to an odd offset in every leaf. */
TEST_F(mc, one_write_lands_everywhere_and_injects_once)
{
	const uint64_t n = 3 * PAGE + 1001, loff = 3, roff = 5;
	struct icfab_cqe c, u;
	unsigned int i;

	ASSERT_EQ(0, one(self->fd, cwrite(self->q, self->circuit, self->src,
					  loff, roff, n), &c));
	EXPECT_EQ(n, c.user_tag);

	EXPECT_EQ(n, link_bytes(&self->gs, UP(0)));
	for (i = 1; i <= NLEAF; i++) {
		uint64_t at = bound_off(i) + roff;
		unsigned char *m = self->leafm[i];

		EXPECT_EQ(n, link_bytes(&self->gs, DOWN(i)));
		EXPECT_EQ(0, link_bytes(&self->gs, UP(i)));
		EXPECT_TRUE(all_zero(m, at));
		EXPECT_EQ(0, memcmp(m + at, self->srcm + loff, n));
		EXPECT_TRUE(all_zero(m + at + n, RPAGES * PAGE - at - n));
	}
	EXPECT_EQ(0, link_bytes(&self->gs, DOWN(0)));

	/*
	 * The switch copies each segment to every leaf at once: the eight
	 * destinations cost what one routed WRITE to one of them does.
	 */
	ASSERT_EQ(0, one(self->fd, (struct icfab_desc){
		.op = ICFAB_OP_WRITE, .queue = self->q, .peer = 5, .len = n,
		.flags = ICFAB_DESC_F_TIMING_ONLY }, &u));
	EXPECT_EQ(c.finish_ps - c.start_ps, u.finish_ps - u.start_ps);
	EXPECT_EQ(0, c.queued_ps);
}

TEST_F(mc, unicast_circuit_lands_like_a_routed_write)
{
	const uint64_t n = 2 * PAGE + 333, loff = 11, roff = 17;
	uint32_t dst = 4, uc;
	struct icfab_cqe c, u;
	unsigned char *m = self->leafm[4];
	uint64_t at = bound_off(4) + roff;

	ASSERT_EQ(0, circuit_new(&self->gs, 1, 0, &dst, 1, getpid(), &uc));
	ASSERT_EQ(0, recv_bind(self->fd, uc, 4, self->leaf[4], bound_off(4)));

	/* @peer may name the one destination. */
	struct icfab_desc d = cwrite(self->q, uc, self->src, loff, roff, n);

	d.peer = 4;
	ASSERT_EQ(0, one(self->fd, d, &c));
	EXPECT_EQ(0, memcmp(m + at, self->srcm + loff, n));
	EXPECT_TRUE(all_zero(m, at));
	EXPECT_EQ(n, link_bytes(&self->gs, DOWN(4)));
	EXPECT_EQ(0, link_bytes(&self->gs, DOWN(3)));

	ASSERT_EQ(0, one(self->fd, (struct icfab_desc){
		.op = ICFAB_OP_WRITE, .queue = self->q, .peer = 4, .len = n,
		.flags = ICFAB_DESC_F_TIMING_ONLY }, &u));
	EXPECT_EQ(c.finish_ps - c.start_ps, u.finish_ps - u.start_ps);

	/* Timing-only over the circuit: the same time, no binding needed. */
	ASSERT_EQ(0, recv_bind(self->fd, uc, 4, 0, 0));
	d = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = self->q,
		.circuit = uc, .len = n, .flags = ICFAB_DESC_F_TIMING_ONLY };
	ASSERT_EQ(0, one(self->fd, d, &u));
	EXPECT_EQ(c.finish_ps - c.start_ps, u.finish_ps - u.start_ps);
}

TEST_F(mc, refused_descriptors_have_their_errno)
{
	struct icfab_desc d, good;
	uint32_t dsts[NLEAF], other, pinned;
	struct icfab_cqe c;
	unsigned int i;
	int q1;

	good = cwrite(self->q, self->circuit, self->src, 0, 0, 100);
	for (i = 0; i < NLEAF; i++)
		dsts[i] = i + 1;

	d = good;
	d.circuit = 999;
	EXPECT_EQ(-ENXIO, ctx_submit(self->fd, &d, 1));

	/* Another process's circuit; a pinned one is everybody's. */
	ASSERT_EQ(0, circuit_new(&self->gs, 1, 0, dsts, NLEAF, getpid() + 1,
				 &other));
	d = good;
	d.circuit = other;
	EXPECT_EQ(-EPERM, ctx_submit(self->fd, &d, 1));
	ASSERT_EQ(0, circuit_new(&self->gs, 2, 0, dsts, NLEAF, 0, &pinned));
	d.circuit = pinned;
	d.flags = ICFAB_DESC_F_TIMING_ONLY;
	d.region = 0;
	EXPECT_EQ(0, one(self->fd, d, &c));

	/* From a queue on another endpoint than the circuit's source. */
	q1 = ctx_queue(self->fd, 1, 4);
	ASSERT_LE(0, q1);
	d = good;
	d.queue = q1;
	d.region = self->leaf[1];
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));

	d = good;
	d.rkey = 1;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = good;
	d.op = ICFAB_OP_READ;
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = good;
	d.peer = 3;			/* a multicast circuit has no peer */
	EXPECT_EQ(-EINVAL, ctx_submit(self->fd, &d, 1));
	d = good;
	d.region = 0;			/* no source region */
	EXPECT_EQ(-EBADF, ctx_submit(self->fd, &d, 1));
	d = good;
	d.local_off = RPAGES * PAGE - 99;
	EXPECT_EQ(-ERANGE, ctx_submit(self->fd, &d, 1));

	/* Past a bound region's end: leaf 8 is bound at 57. */
	d = good;
	d.remote_off = RPAGES * PAGE - bound_off(NLEAF) - 99;
	EXPECT_EQ(-ERANGE, ctx_submit(self->fd, &d, 1));
	d.remote_off--;
	EXPECT_EQ(0, one(self->fd, d, &c));

	/* A destination without a binding, however it lost it. */
	ASSERT_EQ(0, recv_bind(self->fd, self->circuit, 3, 0, 0));
	EXPECT_EQ(-ENOTCONN, ctx_submit(self->fd, &good, 1));
	ASSERT_EQ(0, recv_bind(self->fd, self->circuit, 3, self->leaf[3], 0));
	EXPECT_EQ(0, one(self->fd, good, &c));
	ASSERT_EQ(0, ctx_region_free(self->fd, self->leaf[5]));
	EXPECT_EQ(-ENOTCONN, ctx_submit(self->fd, &good, 1));
	/* Timing-only needs no binding. */
	d = good;
	d.region = 0;
	d.flags = ICFAB_DESC_F_TIMING_ONLY;
	EXPECT_EQ(0, one(self->fd, d, &c));
}

TEST_F(mc, refused_bindings_have_their_errno)
{
	struct icfab_circuit_recv cr;
	uint32_t r0;
	unsigned char *m0;
	int fd2;

	EXPECT_EQ(-ENXIO, recv_bind(self->fd, 999, 1, self->leaf[1], 0));
	/* The source is not a destination. */
	EXPECT_EQ(-EINVAL, recv_bind(self->fd, self->circuit, 0, self->src, 0));
	EXPECT_EQ(-EINVAL, recv_bind(self->fd, self->circuit, SW,
				     self->leaf[1], 0));
	EXPECT_EQ(-EBADF, recv_bind(self->fd, self->circuit, 1, 12345, 0));
	/* A region on another endpoint. */
	EXPECT_EQ(-EBADF, recv_bind(self->fd, self->circuit, 1,
				    self->leaf[2], 0));
	EXPECT_EQ(-ERANGE, recv_bind(self->fd, self->circuit, 1,
				     self->leaf[1], RPAGES * PAGE + 1));
	EXPECT_EQ(0, recv_bind(self->fd, self->circuit, 1, self->leaf[1],
			       RPAGES * PAGE));
	/* Unbinding takes no offset. */
	EXPECT_EQ(-EINVAL, recv_bind(self->fd, self->circuit, 1, 0, 1));

	cr = (struct icfab_circuit_recv){ .circuit = self->circuit,
		.endpoint = 1, .region = self->leaf[1], .flags = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CIRCUIT_RECV, &cr));
	EXPECT_EQ(EINVAL, errno);
	cr.flags = 0;
	cr.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_CIRCUIT_RECV, &cr));
	EXPECT_EQ(EINVAL, errno);

	/* A context not attached to the destination. */
	fd2 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ctx_attach(fd2, 0));
	ASSERT_EQ(0, region(fd2, 0, &r0, &m0));
	EXPECT_EQ(-EINVAL, recv_bind(fd2, self->circuit, 1, r0, 0));
	munmap(m0, RPAGES * PAGE);
	close(fd2);
}

/* Another context may receive; its binding goes when it closes. */
TEST_F(mc, a_receiver_in_another_context)
{
	const uint64_t n = 5000;
	struct icfab_cqe c;
	unsigned char *m;
	uint32_t r;
	int fd2;

	/* Free-running: it never holds the engine back for us. */
	fd2 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	struct icfab_attach a = { .endpoint = 6,
				  .flags = ICFAB_ATTACH_F_FREE_RUN };
	ASSERT_EQ(0, ioctl(fd2, ICFAB_IOC_ATTACH, &a));
	ASSERT_EQ(0, region(fd2, 6, &r, &m));
	ASSERT_EQ(0, recv_bind(fd2, self->circuit, 6, r, 3));
	ASSERT_EQ(0, one(self->fd, cwrite(self->q, self->circuit, self->src,
					  0, 0, n), &c));
	EXPECT_EQ(0, memcmp(m + 3, self->srcm, n));
	EXPECT_EQ(0, memcmp(self->leafm[6] + bound_off(6), self->srcm, n));

	/* Its own binding was self->fd's; take that away: fd2's remains. */
	ASSERT_EQ(0, recv_bind(self->fd, self->circuit, 6, 0, 0));
	ASSERT_EQ(0, one(self->fd, cwrite(self->q, self->circuit, self->src,
					  0, 0, n), &c));
	/* The mapping holds the file, so the context: unmap, then close. */
	munmap(m, RPAGES * PAGE);
	close(fd2);
	EXPECT_EQ(-ENOTCONN, ctx_submit(self->fd, &(struct icfab_desc){
		.op = ICFAB_OP_WRITE, .queue = self->q,
		.circuit = self->circuit, .region = self->src, .len = n }, 1));
}

TEST_F(mc, deleting_the_circuit_in_flight_is_safe)
{
	const uint64_t n = RPAGES * PAGE - 64;
	struct icfab_desc d[4];
	struct icfab_cqe c[4];
	unsigned int i;

	for (i = 0; i < 4; i++)
		d[i] = cwrite(self->q, self->circuit, self->src, i, 0, n - i);
	ASSERT_EQ(4, ctx_submit(self->fd, d, 4));
	/* Nothing ran yet: virtual time waits for us. */
	ASSERT_EQ(0, circuit_del(&self->gs, self->circuit));
	ASSERT_EQ(4, ctx_wait(self->fd, c, 4, 4, 0, NULL));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, c[i].status);
	/* The last one landed last. */
	for (i = 1; i <= NLEAF; i++)
		EXPECT_EQ(0, memcmp(self->leafm[i] + bound_off(i),
				    self->srcm + 3, n - 3));
	EXPECT_EQ(4 * n - 6, link_bytes(&self->gs, UP(0)));
	d[0] = cwrite(self->q, self->circuit, self->src, 0, 0, 1);
	EXPECT_EQ(-ENXIO, ctx_submit(self->fd, d, 1));
}

/*
 * A commit under traffic (ICFAB_F_LIVE_COMMIT) gives the circuit a new
 * tree while its old one is still followed by the transfers in flight.
 */
TEST_F(mc, a_live_commit_under_multicast)
{
	const uint64_t n = RPAGES * PAGE - 64;
	struct icfab_desc d[4];
	struct icfab_cqe c[4];
	struct genl_msg m;
	unsigned int i;

	for (i = 0; i < 4; i++)
		d[i] = cwrite(self->q, self->circuit, self->src, 0, 0, n);
	ASSERT_EQ(4, ctx_submit(self->fd, d, 4));
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_LINK_SET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, UP(5));
	genl_put_u32(&m, ICFAB_A_LINK_STATE, ICFAB_LINK_DOWN);
	ASSERT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(4, ctx_wait(self->fd, c, 4, 4, 0, NULL));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, c[i].status);
	ASSERT_EQ(0, one(self->fd, cwrite(self->q, self->circuit, self->src,
					  1, 0, n), c));
	for (i = 1; i <= NLEAF; i++)
		EXPECT_EQ(0, memcmp(self->leafm[i] + bound_off(i),
				    self->srcm + 1, n));
	EXPECT_EQ(5 * n, link_bytes(&self->gs, DOWN(1)));
}

/*
 * The sender closes with multicasts in flight: they go on (another
 * context keeps the engine) and carry every byte, then the engine goes
 * with the last context; the runner checks rmmod afterwards.
 */
TEST_F(mc, closing_with_multicast_in_flight)
{
	const uint64_t n = RPAGES * PAGE;
	struct icfab_desc d[8];
	struct icfab_cqe c;
	unsigned int i;
	int fd2, q;

	fd2 = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ctx_attach(fd2, 0));
	q = ctx_queue(fd2, 0, 8);
	ASSERT_LE(0, q);
	/* fd2 has no region: timing-only multicasts. */
	for (i = 0; i < 8; i++) {
		d[i] = cwrite(q, self->circuit, 0, 0, 0, n);
		d[i].flags = ICFAB_DESC_F_TIMING_ONLY;
	}
	ASSERT_EQ(8, ctx_submit(fd2, d, 8));
	close(fd2);
	ASSERT_EQ(0, one(self->fd, cwrite(self->q, self->circuit, self->src,
					  0, 0, n - 64), &c));
	/* It shared the injection link with the eight. */
	EXPECT_LT(0, c.queued_ps);
	/* A second later they are all through, whoever owned them. */
	ASSERT_EQ(0, one(self->fd, (struct icfab_desc){
		.op = ICFAB_OP_DELAY, .queue = self->q,
		.len = 1000000000000ULL }, &c));
	EXPECT_EQ(9 * n - 64, link_bytes(&self->gs, UP(0)));
	EXPECT_EQ(9 * n - 64, link_bytes(&self->gs, DOWN(NLEAF)));
	for (i = 1; i <= NLEAF; i++)
		EXPECT_EQ(0, memcmp(self->leafm[i] + bound_off(i), self->srcm,
				    n - 64));

	/* Now the sender goes with bytes in flight and nobody else left. */
	ASSERT_EQ(1, ctx_submit(self->fd, &(struct icfab_desc){
		.op = ICFAB_OP_WRITE, .queue = self->q,
		.circuit = self->circuit, .region = self->src,
		.len = n - 64 }, 1));
	close(self->fd);
	self->fd = -1;
}

/* A circuit made before its routes gets its tree from the next commit. */
TEST(unrouted_circuit_is_refused_until_a_commit_routes_it)
{
	struct genl_sock gs;
	struct icfab_cqe c;
	uint32_t dst = 2, id;
	int fd, q;

	ASSERT_EQ(0, genl_open(&gs));
	ASSERT_EQ(0, genl_resolve(&gs, ICFAB_GENL_NAME));
	remove_circuits(&gs);
	ASSERT_EQ(0, clear_fabric(&gs));
	ASSERT_EQ(0, stage_nodes(&gs));
	ASSERT_EQ(0, cmd(&gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(0, circuit_new(&gs, 0, 1, &dst, 1, 0, &id));

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ctx_attach(fd, 1));
	q = ctx_queue(fd, 1, 4);
	ASSERT_LE(0, q);
	struct icfab_desc d = { .op = ICFAB_OP_WRITE, .queue = q,
		.circuit = id, .len = 4096,
		.flags = ICFAB_DESC_F_TIMING_ONLY };
	EXPECT_EQ(-EHOSTUNREACH, ctx_submit(fd, &d, 1));
	close(fd);

	/* Links and routes come; the nodes stay, so the circuit does. */
	ASSERT_EQ(0, stage_links(&gs));
	ASSERT_EQ(0, cmd(&gs, ICFAB_CMD_FABRIC_COMMIT));
	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ctx_attach(fd, 1));
	q = ctx_queue(fd, 1, 4);
	ASSERT_LE(0, q);
	d.queue = q;
	EXPECT_EQ(0, one(fd, d, &c));
	EXPECT_EQ(4096, link_bytes(&gs, DOWN(2)));
	close(fd);
	remove_circuits(&gs);
	clear_fabric(&gs);
	genl_close(&gs);
}

TEST_HARNESS_MAIN
