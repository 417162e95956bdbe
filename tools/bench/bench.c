// SPDX-License-Identifier: GPL-2.0
/* What the data-path benchmarks share; see bench.h. */
#include <stdlib.h>
#include <time.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "bench.h"

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

static int req(struct genl_sock *gs, struct genl_msg *m)
{
	return genl_request(gs, m, NULL, NULL);
}

static int set_segment_size(struct genl_sock *gs, uint32_t seg)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_SET, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_ID, 0);
	genl_put_u32(&m, ICFAB_A_FABRIC_SEGMENT_SIZE, seg);
	return req(gs, &m);
}

static int commit(struct genl_sock *gs)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_COMMIT, 0);
	return req(gs, &m);
}

int bench_segment_size(struct genl_sock *gs, uint32_t seg)
{
	int err = set_segment_size(gs, seg);

	return err ? err : commit(gs);
}

/* Node @node reaches endpoint 1 - @node through its port 0. */
static int route(struct genl_sock *gs, uint32_t node)
{
	uint16_t ports[2] = { 0, 0 };
	struct genl_msg m;

	ports[node] = ICFAB_ROUTE_NONE;
	genl_msg_init(&m, gs->family, ICFAB_CMD_ROUTE_SET, 0);
	genl_put_u32(&m, ICFAB_A_ROUTE_NODE, node);
	genl_put_u32(&m, ICFAB_A_ROUTE_DST_FIRST, 0);
	genl_put(&m, ICFAB_A_ROUTE_PORTS, ports, sizeof(ports));
	return req(gs, &m);
}

int bench_two_endpoints(struct genl_sock *gs, uint32_t seg)
{
	struct genl_msg m;
	int err = 0;

	/* Whatever was staged or built before goes; misses are fine. */
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
		genl_put_u64(&m, ICFAB_A_LINK_BANDWIDTH, BENCH_BW);
		genl_put_u64(&m, ICFAB_A_LINK_LATENCY_PS, 0);
		err = req(gs, &m);
	}
	for (uint32_t i = 0; i < 2 && !err; i++)
		err = route(gs, i);
	if (!err && seg)
		err = set_segment_size(gs, seg);
	return err ? err : commit(gs);
}
