// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <string.h>

#include <linux/icfab_genl.h>

#include "fabric_util.h"

int node_new(struct genl_sock *gs, uint32_t id, uint32_t kind,
		    uint32_t ports, const char *name)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_NEW, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, id);
	genl_put_u32(&m, ICFAB_A_NODE_KIND, kind);
	genl_put_u32(&m, ICFAB_A_NODE_PORTS, ports);
	if (name)
		genl_put(&m, ICFAB_A_NODE_NAME, name, strlen(name) + 1);
	if (kind == ICFAB_NODE_ENDPOINT)
		genl_put_u64(&m, ICFAB_A_NODE_MEM_BYTES, 1ULL << 30);
	return genl_request(gs, &m, NULL, NULL);
}

int link_new(struct genl_sock *gs, uint32_t id, uint32_t src,
		    uint32_t sport, uint32_t dst, uint32_t dport, uint64_t bw)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_NEW, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, id);
	genl_put_u32(&m, ICFAB_A_LINK_SRC_NODE, src);
	genl_put_u32(&m, ICFAB_A_LINK_SRC_PORT, sport);
	genl_put_u32(&m, ICFAB_A_LINK_DST_NODE, dst);
	genl_put_u32(&m, ICFAB_A_LINK_DST_PORT, dport);
	genl_put_u64(&m, ICFAB_A_LINK_BANDWIDTH, bw);
	genl_put_u64(&m, ICFAB_A_LINK_LATENCY_PS, 500000);
	genl_put_u32(&m, ICFAB_A_LINK_CLASS, ICFAB_LINK_CLASS_ICI);
	return genl_request(gs, &m, NULL, NULL);
}

int route_set(struct genl_sock *gs, uint32_t node, uint32_t first,
		     const uint16_t *ports, unsigned int n)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_ROUTE_SET, 0);
	genl_put_u32(&m, ICFAB_A_ROUTE_NODE, node);
	genl_put_u32(&m, ICFAB_A_ROUTE_DST_FIRST, first);
	genl_put(&m, ICFAB_A_ROUTE_PORTS, ports, n * sizeof(*ports));
	return genl_request(gs, &m, NULL, NULL);
}

int cmd(struct genl_sock *gs, uint8_t c)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, c, 0);
	return genl_request(gs, &m, NULL, NULL);
}

/*
 * Stage a bidirectional ring of @n endpoints: port 0 to the next node,
 * port 1 to the previous; link 2i is i -> i+1, link 2i+1 is i+1 -> i.
 * Routes go the short way round (clockwise on ties).
 */
int stage_ring(struct genl_sock *gs, unsigned int n)
{
	uint16_t ports[64];
	char name[16];
	int err;

	for (unsigned int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "chip%u", i);
		err = node_new(gs, i, ICFAB_NODE_ENDPOINT, 2, name);
		if (err)
			return err;
	}
	for (unsigned int i = 0; i < n; i++) {
		err = link_new(gs, 2 * i, i, 0, (i + 1) % n, 1, 50000000000ULL);
		if (!err)
			err = link_new(gs, 2 * i + 1, (i + 1) % n, 1, i, 0,
				       50000000000ULL);
		if (err)
			return err;
	}
	for (unsigned int i = 0; i < n; i++) {
		for (unsigned int d = 0; d < n; d++) {
			unsigned int cw = (d + n - i) % n;

			ports[d] = d == i ? ICFAB_ROUTE_NONE :
				   cw <= n - cw ? 0 : 1;
		}
		err = route_set(gs, i, 0, ports, n);
		if (err)
			return err;
	}
	return 0;
}


int clear_fabric(struct genl_sock *gs)
{
	struct genl_msg m;
	unsigned int i;

	cmd(gs, ICFAB_CMD_FABRIC_ABORT);
	for (i = 0; i < 256; i++) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_DEL, 0);
		genl_put_u32(&m, ICFAB_A_LINK_ID, i);
		genl_request(gs, &m, NULL, NULL);
	}
	for (i = 0; i < 128; i++) {
		genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_DEL, 0);
		genl_put_u32(&m, ICFAB_A_NODE_ID, i);
		genl_request(gs, &m, NULL, NULL);
	}
	return cmd(gs, ICFAB_CMD_FABRIC_COMMIT);
}
