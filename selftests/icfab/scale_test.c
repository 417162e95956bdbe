// SPDX-License-Identifier: GPL-2.0
/*
 * One context drives a 1024-chip pod: it attaches every endpoint of a
 * generated leaf-spine topology, creates a queue on each (more than the
 * 256 queues a context once had), and moves timing-only and real bytes
 * between endpoints four hops apart.
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

#define NEPS		1024		/* endpoints */
#define PER_LEAF	32		/* endpoints per leaf switch */
#define PAGE		4096ULL		/* bytes */

/* Endpoint @e's partner: in another leaf, four hops away. */
static uint32_t far(uint32_t e)
{
	return (e + NEPS / 2) % NEPS;
}

FIXTURE(pod) {
	struct genl_sock gs;
	int fd;
	struct icfab_cqe *cqes;
};

FIXTURE_SETUP(pod)
{
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_leaf_spine(&self->gs, NEPS, PER_LEAF));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->cqes = calloc(NEPS, sizeof(*self->cqes));
	ASSERT_NE(NULL, self->cqes);
}

FIXTURE_TEARDOWN(pod)
{
	free(self->cqes);
	close(self->fd);
	clear_fabric(&self->gs);
	genl_close(&self->gs);
}

/* Attach every endpoint and make a queue on each; queue e is on e. */
static void attach_all(struct __test_metadata *_metadata, int fd)
{
	for (uint32_t e = 0; e < NEPS; e++)
		ASSERT_EQ(0, ctx_attach(fd, e));
	for (uint32_t e = 0; e < NEPS; e++)
		ASSERT_EQ((int)e, ctx_queue(fd, e, 4));
}

TEST_F(pod, info_says_a_context_may_attach_1024)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &in));
	EXPECT_LE(NEPS, in.limits.max_attach);
	EXPECT_LE(NEPS, in.limits.max_queues);
	EXPECT_LE(in.limits.max_attach, in.limits.max_endpoints);
}

TEST_F(pod, timing_only_between_far_endpoints)
{
	struct icfab_desc *d;
	unsigned int got = 0;
	uint64_t clock;
	int n;

	attach_all(_metadata, self->fd);
	EXPECT_EQ(-EALREADY, ctx_attach(self->fd, NEPS - 1));
	EXPECT_EQ(-ENOENT, ctx_attach(self->fd, NEPS));	/* a switch */

	/* One alone: the closed form over four hops. */
	d = calloc(NEPS, sizeof(*d));
	ASSERT_NE(NULL, d);
	d[0] = desc_put(0, far(0), 8 * RING_SEG, 0);
	ASSERT_EQ(1, ctx_submit(self->fd, d, 1));
	ASSERT_EQ(1, ctx_wait(self->fd, self->cqes, 1, NEPS, 10000, &clock));
	EXPECT_EQ(0, self->cqes[0].status);
	EXPECT_EQ(ring_uncontended(8 * RING_SEG, 4),
		  self->cqes[0].finish_ps - self->cqes[0].start_ps);

	/* Then every endpoint at once, each to its far partner. */
	for (uint32_t e = 0; e < NEPS; e++)
		d[e] = desc_put(e, far(e), 2 * RING_SEG, e);
	ASSERT_EQ(NEPS, ctx_submit(self->fd, d, NEPS));
	while (got < NEPS) {
		n = ctx_wait(self->fd, self->cqes, 1, NEPS, 10000, NULL);
		ASSERT_LT(0, n);
		for (int i = 0; i < n; i++) {
			EXPECT_EQ(0, self->cqes[i].status);
			EXPECT_EQ(self->cqes[i].user_tag, self->cqes[i].queue);
			/* At least the uncontended time; the spine is shared. */
			EXPECT_LE(ring_uncontended(2 * RING_SEG, 4),
				  self->cqes[i].finish_ps -
				  self->cqes[i].start_ps);
		}
		got += n;
	}
	EXPECT_EQ(NEPS, got);
	free(d);
}

TEST_F(pod, bytes_between_far_endpoints)
{
	unsigned char **map;
	uint32_t *handle;
	uint64_t *key;
	struct icfab_desc *d;
	unsigned int got = 0;
	int n;

	attach_all(_metadata, self->fd);
	map = calloc(NEPS, sizeof(*map));
	handle = calloc(NEPS, sizeof(*handle));
	key = calloc(NEPS, sizeof(*key));
	d = calloc(NEPS, sizeof(*d));
	ASSERT_TRUE(map && handle && key && d);
	for (uint32_t e = 0; e < NEPS; e++) {
		struct icfab_region_alloc ra = { .endpoint = e,
						 .size = 2 * PAGE };
		struct icfab_region_export re = {
			.access = ICFAB_ACCESS_REMOTE_WRITE };

		ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_REGION_ALLOC, &ra));
		handle[e] = ra.region;
		map[e] = mmap(NULL, ra.size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, self->fd, ra.mmap_offset);
		ASSERT_NE(MAP_FAILED, map[e]);
		re.region = ra.region;
		ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_REGION_EXPORT, &re));
		key[e] = re.key;
		/* The first page goes out, the second takes what comes. */
		for (unsigned int i = 0; i < PAGE; i++)
			map[e][i] = (unsigned char)(e * 31 + i);
	}
	for (uint32_t e = 0; e < NEPS; e++)
		d[e] = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = e,
			.region = handle[e], .rkey = key[far(e)],
			.remote_off = PAGE, .len = PAGE, .user_tag = e };
	ASSERT_EQ(NEPS, ctx_submit(self->fd, d, NEPS));
	while (got < NEPS) {
		n = ctx_wait(self->fd, self->cqes, 1, NEPS, 10000, NULL);
		ASSERT_LT(0, n);
		for (int i = 0; i < n; i++)
			EXPECT_EQ(0, self->cqes[i].status);
		got += n;
	}
	for (uint32_t e = 0; e < NEPS; e++)
		ASSERT_EQ(0, memcmp(map[far(e)] + PAGE, map[e], PAGE));
	for (uint32_t e = 0; e < NEPS; e++)
		munmap(map[e], 2 * PAGE);
	free(map);
	free(handle);
	free(key);
	free(d);
}

TEST_F(pod, queue_ids_stop_at_the_limit)
{
	struct icfab_queue_destroy qd = { .queue = 300 };
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &in));
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	for (uint32_t q = 0; q < in.limits.max_queues; q++)
		ASSERT_EQ((int)q, ctx_queue(self->fd, 0, 1));
	EXPECT_EQ(-ENOSPC, ctx_queue(self->fd, 0, 1));
	/* A freed id is taken again. */
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_QUEUE_DESTROY, &qd));
	EXPECT_EQ(300, ctx_queue(self->fd, 0, 1));
	qd.queue = in.limits.max_queues;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_QUEUE_DESTROY, &qd));
	EXPECT_EQ(ENOENT, errno);
}

TEST_HARNESS_MAIN
