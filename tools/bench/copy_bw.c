// SPDX-License-Identifier: GPL-2.0
/*
 * copy_bw: host bandwidth of byte-moving WRITEs, side by side with
 * memcpy() of the same size in the same run (these machines are shared
 * and noisy, so only the ratio means anything).
 *
 * On a two-endpoint fabric with zero-latency links of very high
 * bandwidth, a 4 MiB region on each endpoint; each round is one WRITE of
 * all of it (ICFAB_IOC_SUBMIT, ICFAB_IOC_WAIT), then one memcpy() of
 * 4 MiB between two mapped buffers. Prints MB/s for each and the ratio.
 * The fabric's segment size is raised to its maximum for the run, so
 * that the engine's per-segment work does not dominate.
 *
 * Needs the module loaded and CAP_NET_ADMIN (it replaces the topology
 * of fabric 0). Build:
 *   cc -O2 -Iuapi -Iselftests/icfab -o build/bench/copy_bw \
 *      tools/bench/copy_bw.c selftests/icfab/genl.c
 * usage: copy_bw [ROUNDS]   (default 50)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "genl.h"

#define SIZE	(4ULL << 20)	/* bytes */
#define BW	(1ULL << 50)	/* bytes/s */
#define SEGMAX	(1U << 20)	/* bytes, ICFAB_MAX_SEGMENT_SIZE */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int req(struct genl_sock *gs, struct genl_msg *m)
{
	return genl_request(gs, m, NULL, NULL);
}

/* Endpoints 0 and 1, one link each way, no latency, 1 PB/s. */
static int two_endpoints(struct genl_sock *gs, uint32_t seg)
{
	uint16_t r0[2] = { ICFAB_ROUTE_NONE, 0 }, r1[2] = { 0, ICFAB_ROUTE_NONE };
	struct genl_msg m;
	int err = 0;

	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_ABORT, 0);
	req(gs, &m);
	for (uint32_t i = 0; i < 4; i++) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_DEL, 0);
		genl_put_u32(&m, ICFAB_A_LINK_ID, i);
		req(gs, &m);
	}
	for (uint32_t i = 0; i < 128; i++) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_DEL, 0);
		genl_put_u32(&m, ICFAB_A_NODE_ID, i);
		req(gs, &m);
	}
	for (uint32_t i = 0; i < 2 && !err; i++) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_NEW, 0);
		genl_put_u32(&m, ICFAB_A_NODE_ID, i);
		genl_put_u32(&m, ICFAB_A_NODE_KIND, ICFAB_NODE_ENDPOINT);
		genl_put_u32(&m, ICFAB_A_NODE_PORTS, 1);
		genl_put_u64(&m, ICFAB_A_NODE_MEM_BYTES, 1ULL << 30);
		err = req(gs, &m);
	}
	for (uint32_t i = 0; i < 2 && !err; i++) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_NEW, 0);
		genl_put_u32(&m, ICFAB_A_LINK_ID, i);
		genl_put_u32(&m, ICFAB_A_LINK_SRC_NODE, i);
		genl_put_u32(&m, ICFAB_A_LINK_SRC_PORT, 0);
		genl_put_u32(&m, ICFAB_A_LINK_DST_NODE, 1 - i);
		genl_put_u32(&m, ICFAB_A_LINK_DST_PORT, 0);
		genl_put_u64(&m, ICFAB_A_LINK_BANDWIDTH, BW);
		genl_put_u64(&m, ICFAB_A_LINK_LATENCY_PS, 0);
		err = req(gs, &m);
	}
	if (!err) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_ROUTE_SET, 0);
		genl_put_u32(&m, ICFAB_A_ROUTE_NODE, 0);
		genl_put_u32(&m, ICFAB_A_ROUTE_DST_FIRST, 0);
		genl_put(&m, ICFAB_A_ROUTE_PORTS, r0, sizeof(r0));
		err = req(gs, &m);
	}
	if (!err) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_ROUTE_SET, 0);
		genl_put_u32(&m, ICFAB_A_ROUTE_NODE, 1);
		genl_put_u32(&m, ICFAB_A_ROUTE_DST_FIRST, 0);
		genl_put(&m, ICFAB_A_ROUTE_PORTS, r1, sizeof(r1));
		err = req(gs, &m);
	}
	if (!err) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_SET, 0);
		genl_put_u32(&m, ICFAB_A_FABRIC_ID, 0);
		genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, seg);
		err = req(gs, &m);
	}
	if (!err) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_COMMIT, 0);
		err = req(gs, &m);
	}
	return err;
}

static void *region(int fd, uint32_t ep, uint32_t *handle, uint64_t *key)
{
	struct icfab_region_alloc ra = { .endpoint = ep, .size = SIZE };
	struct icfab_region_export re = { .access = ICFAB_ACCESS_ALL };
	void *p;

	if (ioctl(fd, ICFAB_IOC_REGION_ALLOC, &ra))
		return NULL;
	re.region = ra.region;
	if (ioctl(fd, ICFAB_IOC_REGION_EXPORT, &re))
		return NULL;
	p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 ra.mmap_offset);
	if (p == MAP_FAILED)
		return NULL;
	*handle = ra.region;
	*key = re.key;
	return p;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 50;
	struct icfab_queue_create qc = { .endpoint = 0, .depth = 1 };
	double t_dev = 0, t_cpy = 0, t_tim = 0, t0;
	unsigned char *a, *b, *x, *y;
	struct icfab_desc d, dt_only;
	struct icfab_cqe c;
	struct genl_sock gs;
	uint32_t ha, hb;
	uint64_t ka, kb;
	int fd, err;

	if (rounds < 1)
		rounds = 1;
	if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME)) {
		fprintf(stderr, "copy_bw: no icfab netlink family\n");
		return 1;
	}
	err = two_endpoints(&gs, SEGMAX);
	if (err) {
		fprintf(stderr, "copy_bw: topology: %s (%s)\n", strerror(-err),
			gs.extack);
		return 1;
	}
	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("copy_bw: /dev/icfab0");
		return 1;
	}
	for (uint32_t ep = 0; ep < 2; ep++) {
		struct icfab_attach at = { .endpoint = ep };

		if (ioctl(fd, ICFAB_IOC_ATTACH, &at)) {
			perror("copy_bw: attach");
			return 1;
		}
	}
	if (ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &qc)) {
		perror("copy_bw: queue");
		return 1;
	}
	a = region(fd, 0, &ha, &ka);
	b = region(fd, 1, &hb, &kb);
	x = mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	y = mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!a || !b || x == MAP_FAILED || y == MAP_FAILED) {
		perror("copy_bw: memory");
		return 1;
	}
	memset(a, 1, SIZE);
	memset(b, 2, SIZE);
	memset(x, 3, SIZE);
	memset(y, 4, SIZE);

	d = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = qc.queue,
		.region = ha, .rkey = kb, .len = SIZE };
	/* The same transfer, timed but not copied: the engine's share. */
	dt_only = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = qc.queue,
		.peer = 1, .len = SIZE, .flags = ICFAB_DESC_F_TIMING_ONLY };
	for (int r = -1; r < rounds; r++) {
		struct icfab_submit s = { .descs = (uintptr_t)&d, .nr = 1 };
		struct icfab_wait w = { .cqes = (uintptr_t)&c, .min = 1,
					.max = 1 };
		double dt;

		a[r & 0xfff] = r;
		t0 = now_ns();
		if (ioctl(fd, ICFAB_IOC_SUBMIT, &s) != 1 ||
		    ioctl(fd, ICFAB_IOC_WAIT, &w) || c.status) {
			fprintf(stderr, "copy_bw: transfer failed\n");
			return 1;
		}
		dt = now_ns() - t0;
		if (b[r & 0xfff] != (unsigned char)r) {
			fprintf(stderr, "copy_bw: the bytes did not arrive\n");
			return 1;
		}
		if (r >= 0)	/* round -1 warms up */
			t_dev += dt;

		s.descs = (uintptr_t)&dt_only;
		w.nr = 0;
		w.clock_ps = 0;
		t0 = now_ns();
		if (ioctl(fd, ICFAB_IOC_SUBMIT, &s) != 1 ||
		    ioctl(fd, ICFAB_IOC_WAIT, &w) || c.status) {
			fprintf(stderr, "copy_bw: transfer failed\n");
			return 1;
		}
		dt = now_ns() - t0;
		if (r >= 0)
			t_tim += dt;

		x[r & 0xfff] = r;
		t0 = now_ns();
		memcpy(y, x, SIZE);
		__asm__ volatile("" : : "r"(y) : "memory");
		dt = now_ns() - t0;
		if (r >= 0)
			t_cpy += dt;
	}
	printf("copy_bw: %d rounds of %llu MiB\n", rounds,
	       (unsigned long long)(SIZE >> 20));
	printf("  memcpy            %8.0f MB/s\n", rounds * SIZE / t_cpy * 1e3);
	printf("  icfab WRITE       %8.0f MB/s  (%.2fx memcpy)\n",
	       rounds * SIZE / t_dev * 1e3, t_cpy / t_dev);
	printf("  of which timing   %8.0f us per transfer (timing-only WRITE)\n",
	       t_tim / rounds / 1e3);
	munmap(a, SIZE);
	munmap(b, SIZE);
	close(fd);
	munmap(x, SIZE);
	munmap(y, SIZE);
	/* Leave the default segment size behind, for whatever runs next. */
	do {
		struct genl_msg m;

		genl_msg_init(&m, gs.family, ICFAB_CMD_FABRIC_SET, 0);
		genl_put_u32(&m, ICFAB_A_FABRIC_ID, 0);
		genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, 4096);
		if (!req(&gs, &m)) {
			genl_msg_init(&m, gs.family, ICFAB_CMD_FABRIC_COMMIT, 0);
			req(&gs, &m);
		}
	} while (0);
	genl_close(&gs);
	return 0;
}
