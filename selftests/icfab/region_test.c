// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory: region alloc, mmap, free, export and import; their
 * limits (the endpoint's capacity, the module's cap on real pages) and
 * their bad arguments; and lifetimes (a mapping outlives the handle and
 * the file, a closed context takes its keys with it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "kselftest_harness.h"

#define PAGE	4096UL
#define MAX_MEM_MB	"max_mem_mb"


static int ralloc(int fd, uint32_t ep, uint64_t size, uint32_t *region,
		  uint64_t *off, uint64_t *rounded)
{
	struct icfab_region_alloc ra = { .endpoint = ep, .size = size };

	if (ioctl(fd, ICFAB_IOC_REGION_ALLOC, &ra))
		return -errno;
	*region = ra.region;
	if (off)
		*off = ra.mmap_offset;
	if (rounded)
		*rounded = ra.size;
	return 0;
}

static int rexport(int fd, uint32_t region, uint32_t access, uint64_t *key)
{
	struct icfab_region_export re = { .region = region, .access = access };

	if (ioctl(fd, ICFAB_IOC_REGION_EXPORT, &re))
		return -errno;
	*key = re.key;
	return 0;
}

static int rimport(int fd, uint64_t key, struct icfab_region_import *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->key = key;
	return ioctl(fd, ICFAB_IOC_REGION_IMPORT, ri) ? -errno : 0;
}

/* Two endpoints of @mem bytes each, linked both ways. */
static int stage_small(struct genl_sock *gs, uint64_t mem)
{
	uint16_t p0[2] = { ICFAB_ROUTE_NONE, 0 }, p1[2] = { 0, ICFAB_ROUTE_NONE };
	struct genl_msg m;
	int err;

	for (uint32_t i = 0; i < 2; i++) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_NEW, 0);
		genl_put_u32(&m, ICFAB_A_NODE_ID, i);
		genl_put_u32(&m, ICFAB_A_NODE_KIND, ICFAB_NODE_ENDPOINT);
		genl_put_u32(&m, ICFAB_A_NODE_PORTS, 1);
		genl_put_u64(&m, ICFAB_A_NODE_MEM_BYTES, mem);
		err = genl_request(gs, &m, NULL, NULL);
		if (err)
			return err;
	}
	err = link_new(gs, 0, 0, 0, 1, 0, 50000000000ULL);
	if (!err)
		err = link_new(gs, 1, 1, 0, 0, 0, 50000000000ULL);
	if (!err)
		err = route_set(gs, 0, 0, p0, 2);
	if (!err)
		err = route_set(gs, 1, 0, p1, 2);
	return err;
}

FIXTURE(mem) {
	struct genl_sock gs;
	int fd;
};

FIXTURE_SETUP(mem)
{
	ASSERT_EQ(0, ring_fabric_open(&self->gs, 8));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(mem)
{
	if (self->fd >= 0)
		close(self->fd);
	fabric_close(&self->gs);
}

TEST_F(mem, info_announces_memory)
{
	struct icfab_info in;

	memset(&in, 0, sizeof(in));
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_INFO, &in));
	EXPECT_TRUE(in.features & ICFAB_F_MEMORY);
}

TEST_F(mem, alloc_rounds_up_zeroes_and_maps)
{
	uint64_t off = 0, size = 0;
	uint32_t r = 0;
	unsigned char *a, *b;

	ASSERT_EQ(0, ctx_attach(self->fd, 2));
	ASSERT_EQ(0, ralloc(self->fd, 2, 5000, &r, &off, &size));
	EXPECT_NE(0, r);
	EXPECT_EQ(2 * PAGE, size);
	EXPECT_EQ(0, off % PAGE);
	a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, a);
	for (uint64_t i = 0; i < size; i++)
		ASSERT_EQ(0, a[i]);
	for (uint64_t i = 0; i < size; i++)
		a[i] = (unsigned char)(i * 7 + 3);
	/* A second mapping sees the same memory, here from its second page. */
	b = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, off + PAGE);
	ASSERT_NE(MAP_FAILED, b);
	for (uint64_t i = 0; i < PAGE; i++)
		ASSERT_EQ((unsigned char)((i + PAGE) * 7 + 3), b[i]);
	munmap(b, PAGE);
	munmap(a, size);
}

TEST_F(mem, handles_are_distinct_and_private)
{
	uint32_t r1 = 0, r2 = 0;
	uint64_t off2 = 0;
	int other;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, ralloc(self->fd, 0, PAGE, &r1, NULL, NULL));
	ASSERT_EQ(0, ralloc(self->fd, 0, PAGE, &r2, &off2, NULL));
	EXPECT_NE(r1, r2);
	other = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ctx_attach(other, 0));
	/* Another context knows neither the handle nor the offset. */
	EXPECT_EQ(-ENOENT, ctx_region_free(other, r2));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, other,
				   off2));
	EXPECT_EQ(ENXIO, errno);
	close(other);
	EXPECT_EQ(0, ctx_region_free(self->fd, r2));
	EXPECT_EQ(0, ctx_region_free(self->fd, r1));
}

TEST_F(mem, alloc_bad_arguments)
{
	struct icfab_region_alloc ra;
	uint32_t r = 0;

	EXPECT_EQ(-ENOENT, ralloc(self->fd, 0, PAGE, &r, NULL, NULL));
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	EXPECT_EQ(-ENOENT, ralloc(self->fd, 1, PAGE, &r, NULL, NULL));
	EXPECT_EQ(-EINVAL, ralloc(self->fd, 0, 0, &r, NULL, NULL));
	EXPECT_EQ(-ENOSPC, ralloc(self->fd, 0, ~0ULL, &r, NULL, NULL));
	EXPECT_EQ(-ENOSPC, ralloc(self->fd, 0, 1ULL << 40, &r, NULL, NULL));

	memset(&ra, 0, sizeof(ra));
	ra.size = PAGE;
	ra.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_REGION_ALLOC, &ra));
	EXPECT_EQ(EINVAL, errno);
	ra.flags = 0;
	ra.reserved[3] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_REGION_ALLOC, &ra));
	EXPECT_EQ(EINVAL, errno);
	ra.reserved[3] = 0;
	ra.region = 5;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_REGION_ALLOC, &ra));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_REGION_ALLOC, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(mem, alloc_into_a_read_only_buffer_allocates_nothing)
{
	struct icfab_region_alloc *ra;
	struct icfab_region_import ri;
	uint32_t r = 0;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ra = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ra);
	ra->endpoint = 0;
	ra->size = PAGE;
	ASSERT_EQ(0, mprotect(ra, PAGE, PROT_READ));
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_REGION_ALLOC, ra));
	EXPECT_EQ(EFAULT, errno);
	munmap(ra, PAGE);
	/* The handle it would have had is the next one handed out. */
	ASSERT_EQ(0, ralloc(self->fd, 0, PAGE, &r, NULL, NULL));
	EXPECT_EQ(1, r);
	EXPECT_EQ(-ENOKEY, rimport(self->fd, 0, &ri));
}

TEST_F(mem, mmap_rules)
{
	uint64_t off = 0, size = 0;
	uint32_t r = 0;
	void *p;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, ralloc(self->fd, 0, 3 * PAGE, &r, &off, &size));
	p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, self->fd, off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 4 * PAGE, PROT_READ, MAP_SHARED, self->fd, off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, off + 3 * PAGE);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);
	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, self->fd,
		 off + 2 * PAGE);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
		 off + (1ULL << 40));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENXIO, errno);
	/* The last two pages, exactly. */
	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 off + PAGE);
	ASSERT_NE(MAP_FAILED, p);
	/* It cannot grow past what it mapped. */
	EXPECT_EQ(MAP_FAILED, mremap(p, 2 * PAGE, 3 * PAGE, 0));
	munmap(p, 2 * PAGE);
}

TEST_F(mem, mapping_outlives_free_and_close)
{
	struct icfab_region_import ri;
	uint64_t off = 0, size = 0, key = 0;
	unsigned char *p;
	uint32_t r = 0;

	ASSERT_EQ(0, ctx_attach(self->fd, 1));
	ASSERT_EQ(0, ralloc(self->fd, 1, 2 * PAGE, &r, &off, &size));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0x5a, size);
	ASSERT_EQ(0, rexport(self->fd, r, ICFAB_ACCESS_ALL, &key));
	EXPECT_EQ(0, ctx_region_free(self->fd, r));
	/* The handle and the key are gone at once... */
	EXPECT_EQ(-ENOENT, ctx_region_free(self->fd, r));
	EXPECT_EQ(-ENOENT, rexport(self->fd, r, ICFAB_ACCESS_ALL, &key));
	EXPECT_EQ(-ENOKEY, rimport(self->fd, key, &ri));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
				   off));
	/* ...the memory stays while mapped, even after close. */
	close(self->fd);
	self->fd = -1;
	for (uint64_t i = 0; i < size; i++)
		ASSERT_EQ(0x5a, p[i]);
	p[size - 1] = 1;
	munmap(p, size);
}

TEST_F(mem, export_and_import)
{
	struct icfab_region_export re;
	struct icfab_region_import ri;
	uint64_t key = 0, key2 = 0, size = 0;
	uint32_t r = 0;
	int other;

	ASSERT_EQ(0, ctx_attach(self->fd, 3));
	ASSERT_EQ(0, ralloc(self->fd, 3, 3 * PAGE + 1, &r, NULL, &size));
	EXPECT_EQ(-EINVAL, rexport(self->fd, r, 0, &key));
	EXPECT_EQ(-EINVAL, rexport(self->fd, r, 4, &key));
	EXPECT_EQ(-ENOENT, rexport(self->fd, r + 1, ICFAB_ACCESS_ALL, &key));
	memset(&re, 0, sizeof(re));
	re.region = r;
	re.access = ICFAB_ACCESS_REMOTE_READ;
	re.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_REGION_EXPORT, &re));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_EQ(0, rexport(self->fd, r, ICFAB_ACCESS_REMOTE_READ, &key));
	EXPECT_NE(0, key);
	/* Any context of the fabric, attached or not, can check a key. */
	other = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, rimport(other, key, &ri));
	EXPECT_EQ(3, ri.endpoint);
	EXPECT_EQ(size, ri.size);
	EXPECT_EQ(ICFAB_ACCESS_REMOTE_READ, ri.access);
	/* Exporting again changes the access, never the key. */
	ASSERT_EQ(0, rexport(self->fd, r, ICFAB_ACCESS_ALL, &key2));
	EXPECT_EQ(key, key2);
	ASSERT_EQ(0, rimport(other, key, &ri));
	EXPECT_EQ(ICFAB_ACCESS_ALL, ri.access);

	EXPECT_EQ(-ENOKEY, rimport(other, 0, &ri));
	EXPECT_EQ(-ENOKEY, rimport(other, key ^ 1, &ri));
	memset(&ri, 0, sizeof(ri));
	ri.key = key;
	ri.flags = 1;
	EXPECT_EQ(-1, ioctl(other, ICFAB_IOC_REGION_IMPORT, &ri));
	EXPECT_EQ(EINVAL, errno);

	/* Closing the owner takes the key with it. */
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(-ENOKEY, rimport(other, key, &ri));
	close(other);
}

TEST_F(mem, keys_are_distinct)
{
	uint64_t keys[16];
	uint32_t r = 0;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	for (int i = 0; i < 16; i++) {
		ASSERT_EQ(0, ralloc(self->fd, 0, PAGE, &r, NULL, NULL));
		ASSERT_EQ(0, rexport(self->fd, r, ICFAB_ACCESS_ALL, &keys[i]));
		ASSERT_NE(0, keys[i]);
		for (int j = 0; j < i; j++)
			ASSERT_NE(keys[j], keys[i]);
	}
}

TEST_F(mem, endpoint_capacity_is_charged)
{
	uint32_t r1 = 0, r2 = 0, r3 = 0;
	int other;

	close(self->fd);
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_small(&self->gs, 16 * PAGE));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, ctx_attach(self->fd, 1));

	ASSERT_EQ(0, ralloc(self->fd, 0, 12 * PAGE, &r1, NULL, NULL));
	EXPECT_EQ(-ENOSPC, ralloc(self->fd, 0, 5 * PAGE, &r2, NULL, NULL));
	/* Rounded up: 3 pages and a byte is 4 pages, which still fit. */
	ASSERT_EQ(0, ralloc(self->fd, 0, 3 * PAGE + 1, &r2, NULL, NULL));
	EXPECT_EQ(-ENOSPC, ralloc(self->fd, 0, 1, &r3, NULL, NULL));
	/* Another endpoint has its own capacity. */
	ASSERT_EQ(0, ralloc(self->fd, 1, 16 * PAGE, &r3, NULL, NULL));
	/* Another context shares the endpoint's. */
	other = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ctx_attach(other, 0));
	EXPECT_EQ(-ENOSPC, ralloc(other, 0, 1, &r3, NULL, NULL));
	EXPECT_EQ(0, ctx_region_free(self->fd, r1));
	EXPECT_EQ(0, ralloc(other, 0, 12 * PAGE, &r3, NULL, NULL));
	close(other);
	/* Closing gave it back. */
	EXPECT_EQ(0, ralloc(self->fd, 0, 12 * PAGE, &r1, NULL, NULL));
}

TEST_F(mem, a_mapping_keeps_its_charge)
{
	uint64_t off = 0, size = 0;
	uint32_t r = 0;
	void *p;

	close(self->fd);
	clear_fabric(&self->gs);
	ASSERT_EQ(0, stage_small(&self->gs, 4 * PAGE));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	self->fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, ralloc(self->fd, 0, 4 * PAGE, &r, &off, &size));
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ctx_region_free(self->fd, r));
	/* The pages are still real, so still charged. */
	EXPECT_EQ(-ENOSPC, ralloc(self->fd, 0, PAGE, &r, NULL, NULL));
	munmap(p, size);
	EXPECT_EQ(0, ralloc(self->fd, 0, PAGE, &r, NULL, NULL));
}

TEST_F(mem, module_cap_on_real_pages)
{
	uint32_t r1 = 0, r2 = 0;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, param_set(MAX_MEM_MB, 1));
	EXPECT_EQ(0, ralloc(self->fd, 0, 200 * PAGE, &r1, NULL, NULL));
	EXPECT_EQ(-ENOSPC, ralloc(self->fd, 0, 100 * PAGE, &r2, NULL, NULL));
	EXPECT_EQ(0, ralloc(self->fd, 0, 56 * PAGE, &r2, NULL, NULL));
	EXPECT_EQ(-ENOSPC, ralloc(self->fd, 0, 1, &r2, NULL, NULL));
	EXPECT_EQ(0, ctx_region_free(self->fd, r1));
	EXPECT_EQ(0, ralloc(self->fd, 0, 200 * PAGE, &r1, NULL, NULL));
	ASSERT_EQ(0, param_set(MAX_MEM_MB, 256));
}

TEST_F(mem, free_bad_arguments)
{
	struct icfab_region_free rf = { .region = 1, .flags = 1 };
	uint32_t r = 0;

	ASSERT_EQ(0, ctx_attach(self->fd, 0));
	ASSERT_EQ(0, ralloc(self->fd, 0, PAGE, &r, NULL, NULL));
	rf.region = r;
	EXPECT_EQ(-1, ioctl(self->fd, ICFAB_IOC_REGION_FREE, &rf));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOENT, ctx_region_free(self->fd, 0));
	EXPECT_EQ(-ENOENT, ctx_region_free(self->fd, ~0U));
	EXPECT_EQ(0, ctx_region_free(self->fd, r));
}

TEST_HARNESS_MAIN
