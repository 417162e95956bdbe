// SPDX-License-Identifier: GPL-2.0
/* What the data-path benchmarks share; see bench.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "bench.h"
#include "fabric_util.h"

double bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int set_segment_size(struct genl_sock *gs, uint32_t seg)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_SET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_ID, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, seg);
	return genl_request(gs, &m, NULL, NULL);
}

int bench_start(const char *prog, double **samples, double *best, int nr,
		int n, struct genl_sock *gs, uint32_t seg)
{
	int fd, err;

	for (int k = 0; k < nr; k++) {
		samples[k] = calloc(n, sizeof(double));
		if (!samples[k])
			return -1;
		best[k] = 1e300;
	}
	if (genl_open(gs) || genl_resolve(gs, ICFAB_GENL_NAME)) {
		fprintf(stderr, "%s: no icfab netlink family\n", prog);
		return -1;
	}
	err = bench_two_endpoints(gs, seg);
	if (err) {
		fprintf(stderr, "%s: topology: %s (%s)\n", prog, strerror(-err),
			gs->extack);
		return -1;
	}
	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "%s: /dev/icfab0: %s\n", prog, strerror(errno));
	return fd;
}

int bench_segment_size(struct genl_sock *gs, uint32_t seg)
{
	int err = set_segment_size(gs, seg);

	return err ? err : cmd(gs, ICFAB_CMD_FABRIC_COMMIT);
}

/* Link @id from endpoint @src's port 0 to the other one's, no latency. */
static int link_new_fast(struct genl_sock *gs, uint32_t id, uint32_t src)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_NEW, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, id);
	genl_put_u32(&m, ICFAB_A_LINK_SRC_NODE, src);
	genl_put_u32(&m, ICFAB_A_LINK_SRC_PORT, 0);
	genl_put_u32(&m, ICFAB_A_LINK_DST_NODE, 1 - src);
	genl_put_u32(&m, ICFAB_A_LINK_DST_PORT, 0);
	genl_put_u64(&m, ICFAB_A_LINK_BANDWIDTH, BENCH_BW);
	genl_put_u64(&m, ICFAB_A_LINK_LATENCY_PS, 0);
	return genl_request(gs, &m, NULL, NULL);
}

int bench_two_endpoints(struct genl_sock *gs, uint32_t seg)
{
	int err = clear_fabric(gs);

	for (uint32_t i = 0; i < 2 && !err; i++)
		err = node_new(gs, i, ICFAB_NODE_ENDPOINT, 1, NULL);
	for (uint32_t i = 0; i < 2 && !err; i++)
		err = link_new_fast(gs, i, i);
	for (uint32_t i = 0; i < 2 && !err; i++) {
		/* Node i reaches the other endpoint through its port 0. */
		uint16_t ports[2] = { 0, 0 };

		ports[i] = ICFAB_ROUTE_NONE;
		err = route_set(gs, i, 0, ports, 2);
	}
	if (!err && seg)
		err = set_segment_size(gs, seg);
	return err ? err : cmd(gs, ICFAB_CMD_FABRIC_COMMIT);
}

int bench_cq_map(int fd, uint32_t entries, struct bench_cq *r)
{
	struct icfab_cq_setup cs = { .entries = entries };
	void *p;

	if (ioctl(fd, ICFAB_IOC_CQ_SETUP, &cs))
		return -1;
	p = mmap(NULL, cs.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 cs.mmap_offset);
	if (p == MAP_FAILED)
		return -1;
	r->cq = p;
	r->cqes = (struct icfab_cqe *)((char *)p + cs.cqes_off);
	return 0;
}

int bench_cq_reap(int fd, struct bench_cq *r, unsigned int n)
{
	uint32_t head = r->cq->head;
	uint32_t tail = __atomic_load_n(&r->cq->tail, __ATOMIC_ACQUIRE);
	int bad = 0;

	if (tail - head < n) {
		struct icfab_cq_wait w = { .min = n };

		if (ioctl(fd, ICFAB_IOC_CQ_WAIT, &w) || r->cq->overflow)
			return -1;
		tail = __atomic_load_n(&r->cq->tail, __ATOMIC_ACQUIRE);
		if (tail - head < n)
			return -1;
	}
	for (uint32_t end = head + n; head != end; head++)
		bad |= r->cqes[head & r->cq->mask].status;
	__atomic_store_n(&r->cq->head, head, __ATOMIC_RELEASE);
	return bad ? -1 : 0;
}
