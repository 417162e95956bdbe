// SPDX-License-Identifier: GPL-2.0
/*
 * Topology over netlink: staging, commit and abort, validation that
 * changes nothing, ownership of the staged configuration, dumps with
 * generations, and the rejections of malformed requests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "genl.h"
#include "kselftest_harness.h"

#include "fabric_util.h"

/* ---- reading back ---- */

struct fab {
	uint64_t generation;
	uint32_t nr_endpoints, nr_links;
	uint8_t has_staged;
};

static int fab_cb(const struct genl_reply *r, void *arg)
{
	struct fab *f = arg;

	f->generation = genl_u64(r->tb[ICFAB_A_FABRIC_GENERATION]);
	f->nr_endpoints = genl_u32(r->tb[ICFAB_A_FABRIC_NR_ENDPOINTS]);
	f->nr_links = genl_u32(r->tb[ICFAB_A_FABRIC_NR_LINKS]);
	f->has_staged = *((uint8_t *)r->tb[ICFAB_A_FABRIC_HAS_STAGED] +
			  NLA_HDRLEN);
	return 0;
}

static int fab_get(struct genl_sock *gs, struct fab *f)
{
	struct genl_msg m;

	memset(f, 0, sizeof(*f));
	genl_msg_init(&m, gs->family, ICFAB_CMD_FABRIC_GET, 0);
	return genl_request(gs, &m, fab_cb, f);
}

/* Everything a dump returned, flattened for comparison. */
struct snapshot {
	unsigned int nodes, links, route_msgs;
	uint32_t node_ports[64];
	char node_names[64][32];
	uint32_t link_ends[128][4];
	uint16_t routes[64][64];
	uint64_t generation;
	int gen_mismatch;
};

static void note_gen(struct snapshot *s, const struct genl_reply *r)
{
	uint64_t g = genl_u64(r->tb[ICFAB_A_FABRIC_GENERATION]);

	if (s->nodes + s->links + s->route_msgs > 1 && g != s->generation)
		s->gen_mismatch = 1;
	s->generation = g;
}

static int snap_node_cb(const struct genl_reply *r, void *arg)
{
	struct snapshot *s = arg;
	uint32_t id = genl_u32(r->tb[ICFAB_A_NODE_ID]);

	s->nodes++;
	note_gen(s, r);
	if (id < 64) {
		s->node_ports[id] = genl_u32(r->tb[ICFAB_A_NODE_PORTS]);
		snprintf(s->node_names[id], 32, "%s",
			 (char *)r->tb[ICFAB_A_NODE_NAME] + NLA_HDRLEN);
	}
	return 0;
}

static int snap_link_cb(const struct genl_reply *r, void *arg)
{
	struct snapshot *s = arg;
	uint32_t id = genl_u32(r->tb[ICFAB_A_LINK_ID]);

	s->links++;
	note_gen(s, r);
	if (id < 128) {
		s->link_ends[id][0] = genl_u32(r->tb[ICFAB_A_LINK_SRC_NODE]);
		s->link_ends[id][1] = genl_u32(r->tb[ICFAB_A_LINK_SRC_PORT]);
		s->link_ends[id][2] = genl_u32(r->tb[ICFAB_A_LINK_DST_NODE]);
		s->link_ends[id][3] = genl_u32(r->tb[ICFAB_A_LINK_DST_PORT]);
	}
	return 0;
}

static int snap_route_cb(const struct genl_reply *r, void *arg)
{
	struct snapshot *s = arg;
	uint32_t node = genl_u32(r->tb[ICFAB_A_ROUTE_NODE]);
	uint32_t first = genl_u32(r->tb[ICFAB_A_ROUTE_DST_FIRST]);
	const struct nlattr *a = r->tb[ICFAB_A_ROUTE_PORTS];
	unsigned int n = (a->nla_len - NLA_HDRLEN) / 2;

	s->route_msgs++;
	note_gen(s, r);
	for (unsigned int i = 0; i < n && node < 64 && first + i < 64; i++)
		memcpy(&s->routes[node][first + i],
		       (char *)a + NLA_HDRLEN + 2 * i, 2);
	return 0;
}

static int snapshot(struct genl_sock *gs, int staged, struct snapshot *s)
{
	static const struct {
		uint8_t cmd;
		genl_reply_cb cb;
	} dumps[] = {
		{ ICFAB_CMD_NODE_GET, snap_node_cb },
		{ ICFAB_CMD_LINK_GET, snap_link_cb },
		{ ICFAB_CMD_ROUTE_GET, snap_route_cb },
	};
	struct genl_msg m;
	int err;

	memset(s, 0, sizeof(*s));
	memset(s->routes, 0xff, sizeof(s->routes));
	for (unsigned int i = 0; i < 3; i++) {
		genl_msg_init(&m, gs->family, dumps[i].cmd, NLM_F_DUMP);
		if (staged)
			genl_put(&m, ICFAB_A_STAGED, NULL, 0);
		err = genl_request(gs, &m, dumps[i].cb, s);
		if (err)
			return err;
	}
	return 0;
}

/* ---- fixture: an empty committed fabric, a socket to configure it ---- */

FIXTURE(topo) {
	struct genl_sock gs;
	struct fab before;
};

/* Commit an empty topology, so each test starts from nothing. */
static void reset(struct genl_sock *gs)
{
	struct snapshot s;

	cmd(gs, ICFAB_CMD_FABRIC_ABORT);
	if (snapshot(gs, 0, &s) || (!s.nodes && !s.links))
		return;
	for (unsigned int i = 0; i < 128; i++) {
		struct genl_msg m;

		genl_msg_init(&m, gs->family, ICFAB_CMD_LINK_DEL, 0);
		genl_put_u32(&m, ICFAB_A_LINK_ID, i);
		genl_request(gs, &m, NULL, NULL);
	}
	for (unsigned int i = 0; i < 64; i++) {
		struct genl_msg m;

		genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_DEL, 0);
		genl_put_u32(&m, ICFAB_A_NODE_ID, i);
		genl_request(gs, &m, NULL, NULL);
	}
	cmd(gs, ICFAB_CMD_FABRIC_COMMIT);
}

FIXTURE_SETUP(topo)
{
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	reset(&self->gs);
	ASSERT_EQ(0, fab_get(&self->gs, &self->before));
	ASSERT_EQ(0, self->before.nr_endpoints);
	ASSERT_EQ(0, self->before.has_staged);
}

FIXTURE_TEARDOWN(topo)
{
	reset(&self->gs);
	genl_close(&self->gs);
}

TEST_F(topo, commit_applies_and_dumps_round_trip)
{
	struct genl_sock listener;
	struct genl_reply ntf;
	struct snapshot staged, committed;
	struct fab f;

	ASSERT_EQ(0, genl_open(&listener));
	ASSERT_EQ(0, genl_resolve(&listener, ICFAB_GENL_NAME));
	ASSERT_EQ(0, genl_join(&listener, listener.mcgrp_events));

	ASSERT_EQ(0, stage_ring(&self->gs, 8));

	/* Staged only: nothing committed yet. */
	ASSERT_EQ(0, fab_get(&self->gs, &f));
	EXPECT_EQ(0, f.nr_endpoints);
	EXPECT_EQ(1, f.has_staged);
	ASSERT_EQ(0, snapshot(&self->gs, 0, &committed));
	EXPECT_EQ(0, committed.nodes);

	ASSERT_EQ(0, snapshot(&self->gs, 1, &staged));
	EXPECT_EQ(8, staged.nodes);
	EXPECT_EQ(16, staged.links);

	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(0, fab_get(&self->gs, &f));
	EXPECT_EQ(8, f.nr_endpoints);
	EXPECT_EQ(16, f.nr_links);
	EXPECT_EQ(0, f.has_staged);
	EXPECT_EQ(self->before.generation + 1, f.generation);

	/* What was staged is what is committed, attribute for attribute. */
	ASSERT_EQ(0, snapshot(&self->gs, 0, &committed));
	EXPECT_EQ(8, committed.nodes);
	EXPECT_EQ(16, committed.links);
	EXPECT_EQ(8, committed.route_msgs);
	EXPECT_EQ(0, committed.gen_mismatch);
	EXPECT_EQ(f.generation, committed.generation);
	EXPECT_EQ(0, memcmp(staged.node_ports, committed.node_ports,
			    sizeof(staged.node_ports)));
	EXPECT_EQ(0, memcmp(staged.node_names, committed.node_names,
			    sizeof(staged.node_names)));
	EXPECT_EQ(0, memcmp(staged.link_ends, committed.link_ends,
			    sizeof(staged.link_ends)));
	EXPECT_EQ(0, memcmp(staged.routes, committed.routes,
			    sizeof(staged.routes)));
	EXPECT_STREQ("chip5", committed.node_names[5]);
	/* 2 -> 5 is 3 hops clockwise and 5 the other way: clockwise. */
	EXPECT_EQ(0, committed.routes[2][5]);
	/* 2 -> 7 is 5 clockwise, 3 counter-clockwise. */
	EXPECT_EQ(1, committed.routes[2][7]);
	EXPECT_EQ(ICFAB_ROUTE_NONE, committed.routes[2][2]);

	ASSERT_EQ(0, genl_recv_one(&listener, &ntf, 2000));
	EXPECT_EQ(ICFAB_CMD_FABRIC_NTF, ntf.cmd);
	EXPECT_EQ(f.generation, genl_u64(ntf.tb[ICFAB_A_FABRIC_GENERATION]));
	genl_close(&listener);
}

TEST_F(topo, invalid_commit_changes_nothing_and_names_the_culprit)
{
	uint16_t loop[8];
	struct icfab_err_cookie c;
	struct snapshot before, after;
	struct fab f, g;

	ASSERT_EQ(0, stage_ring(&self->gs, 8));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(0, snapshot(&self->gs, 0, &before));
	ASSERT_EQ(0, fab_get(&self->gs, &f));

	/* Node 3 now sends traffic for 4 backwards, and 2 sends it forward. */
	memcpy(loop, before.routes[3], sizeof(loop));
	loop[4] = 1;
	ASSERT_EQ(0, route_set(&self->gs, 3, 0, loop, 8));
	memcpy(loop, before.routes[2], sizeof(loop));
	ASSERT_EQ(0, route_set(&self->gs, 2, 0, loop, 8));

	EXPECT_EQ(-EINVAL, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_NE(NULL, strstr(self->gs.extack, "loop"))
		TH_LOG("extack: %s", self->gs.extack);
	ASSERT_EQ(sizeof(c), self->gs.cookie_len);
	memcpy(&c, self->gs.cookie, sizeof(c));
	EXPECT_EQ(ICFAB_ERR_OBJ_ROUTE, c.obj);
	EXPECT_EQ(4, c.id2);

	/* The committed configuration is exactly what it was. */
	ASSERT_EQ(0, snapshot(&self->gs, 0, &after));
	EXPECT_EQ(0, memcmp(&before, &after, sizeof(before)));
	ASSERT_EQ(0, fab_get(&self->gs, &g));
	EXPECT_EQ(f.generation, g.generation);
	EXPECT_EQ(1, g.has_staged);
	EXPECT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT));
}

TEST_F(topo, a_missing_node_id_is_named_at_commit)
{
	struct icfab_err_cookie c;

	ASSERT_EQ(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 1, "a"));
	ASSERT_EQ(0, node_new(&self->gs, 2, ICFAB_NODE_ENDPOINT, 1, "c"));
	EXPECT_EQ(-EINVAL, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_NE(NULL, strstr(self->gs.extack, "dense"));
	ASSERT_EQ(sizeof(c), self->gs.cookie_len);
	memcpy(&c, self->gs.cookie, sizeof(c));
	EXPECT_EQ(ICFAB_ERR_OBJ_NODE, c.obj);
	EXPECT_EQ(1, c.id);
}

TEST_F(topo, staged_configuration_belongs_to_one_socket)
{
	struct genl_sock other;
	struct fab f;

	ASSERT_EQ(0, genl_open(&other));
	ASSERT_EQ(0, genl_resolve(&other, ICFAB_GENL_NAME));

	ASSERT_EQ(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 1, "mine"));
	EXPECT_EQ(-EBUSY, node_new(&other, 1, ICFAB_NODE_ENDPOINT, 1, "x"));
	EXPECT_NE(NULL, strstr(other.extack, "another socket"));
	EXPECT_EQ(-EBUSY, cmd(&other, ICFAB_CMD_FABRIC_COMMIT));
	EXPECT_EQ(-EBUSY, cmd(&other, ICFAB_CMD_FABRIC_ABORT));

	/* Closing the owner drops its staged configuration. */
	genl_close(&self->gs);
	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	ASSERT_EQ(0, fab_get(&other, &f));
	EXPECT_EQ(0, f.has_staged);
	EXPECT_EQ(0, node_new(&other, 1, ICFAB_NODE_ENDPOINT, 1, "x"));
	EXPECT_EQ(0, cmd(&other, ICFAB_CMD_FABRIC_ABORT));
	genl_close(&other);
}

TEST_F(topo, commit_with_a_stale_generation_is_refused)
{
	struct genl_msg m;
	struct fab f;

	ASSERT_EQ(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 1, "a"));
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_COMMIT, 0);
	genl_put_u64(&m, ICFAB_A_FABRIC_GENERATION,
		     self->before.generation + 7);
	EXPECT_EQ(-ESTALE, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(ICFAB_A_FABRIC_GENERATION, self->gs.bad_attr_type);

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_FABRIC_COMMIT, 0);
	genl_put_u64(&m, ICFAB_A_FABRIC_GENERATION, self->before.generation);
	EXPECT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	ASSERT_EQ(0, fab_get(&self->gs, &f));
	EXPECT_EQ(1, f.nr_endpoints);
}

TEST_F(topo, dump_spanning_a_commit_is_flagged)
{
	struct genl_sock other;
	struct genl_msg m, set;
	int ret, parts = 0;

	/* Enough nodes that the dump needs many messages. */
	for (unsigned int i = 0; i < 1024; i++)
		ASSERT_EQ(0, node_new(&self->gs, i, ICFAB_NODE_ENDPOINT, 1,
				      "node-with-a-long-name-for-size"));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));

	ASSERT_EQ(0, genl_open(&other));
	ASSERT_EQ(0, genl_resolve(&other, ICFAB_GENL_NAME));

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_NODE_GET, NLM_F_DUMP);
	ASSERT_EQ(0, genl_send(&self->gs, &m));
	ASSERT_EQ(1, genl_request_part(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(0, self->gs.dump_intr);

	/* Staging alone does not disturb a dump of the committed state... */
	ASSERT_EQ(0, node_new(&other, 5000, ICFAB_NODE_SWITCH, 1, "sw"));
	EXPECT_EQ(0, cmd(&other, ICFAB_CMD_FABRIC_ABORT));
	ASSERT_EQ(1, genl_request_part(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(0, self->gs.dump_intr);

	/* ...a commit between two parts of it does. */
	genl_msg_init(&set, other.family, ICFAB_CMD_FABRIC_SET, 0);
	genl_put_u32(&set, ICFAB_A_FABRIC_DILATION, 1);
	ASSERT_EQ(0, genl_request(&other, &set, NULL, NULL));
	ASSERT_EQ(0, cmd(&other, ICFAB_CMD_FABRIC_COMMIT));

	while ((ret = genl_request_part(&self->gs, &m, NULL, NULL)) == 1)
		parts++;
	EXPECT_EQ(0, ret);
	EXPECT_EQ(1, self->gs.dump_intr) {
		TH_LOG("%d more parts", parts);
	}
	genl_close(&other);

	/* Tidy up what reset() does not reach (ids past 63). */
	for (unsigned int i = 0; i < 1024; i++) {
		genl_msg_init(&m, self->gs.family, ICFAB_CMD_NODE_DEL, 0);
		genl_put_u32(&m, ICFAB_A_NODE_ID, i);
		ASSERT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	}
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
}

TEST_F(topo, node_with_links_cannot_be_deleted)
{
	struct genl_msg m;

	ASSERT_EQ(0, stage_ring(&self->gs, 4));
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_NODE_DEL, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, 2);
	EXPECT_EQ(-EBUSY, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(ICFAB_A_NODE_ID, self->gs.bad_attr_type);
}

TEST_F(topo, link_state_change_is_staged_then_committed)
{
	struct genl_msg m;
	struct fab f;

	ASSERT_EQ(0, stage_ring(&self->gs, 4));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_LINK_SET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, 3);
	genl_put_u32(&m, ICFAB_A_LINK_STATE, ICFAB_LINK_DEGRADED);
	genl_put_u32(&m, ICFAB_A_LINK_BW_PERMILLE, 250);
	ASSERT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(0, fab_get(&self->gs, &f));
	EXPECT_EQ(self->before.generation + 2, f.generation);

	/* DEGRADED without a share, or a share without DEGRADED. */
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_LINK_SET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, 3);
	genl_put_u32(&m, ICFAB_A_LINK_STATE, ICFAB_LINK_DEGRADED);
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(ICFAB_A_LINK_STATE, self->gs.bad_attr_type);
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_LINK_SET, 0);
	genl_put_u32(&m, ICFAB_A_LINK_ID, 3);
	genl_put_u32(&m, ICFAB_A_LINK_STATE, ICFAB_LINK_DOWN);
	genl_put_u32(&m, ICFAB_A_LINK_BW_PERMILLE, 250);
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
}

/* ---- malformed requests: the errno, and the attribute named ---- */

TEST_F(topo, missing_required_attribute_is_named)
{
	struct genl_msg m;

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_NODE_NEW, 0);
	genl_put_u32(&m, ICFAB_A_NODE_KIND, ICFAB_NODE_ENDPOINT);
	genl_put_u32(&m, ICFAB_A_NODE_PORTS, 1);
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(ICFAB_A_NODE_ID, self->gs.missing_attr_type);
}

TEST_F(topo, zero_bandwidth_is_erange)
{
	ASSERT_EQ(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 1, "a"));
	ASSERT_EQ(0, node_new(&self->gs, 1, ICFAB_NODE_ENDPOINT, 1, "b"));
	EXPECT_EQ(-ERANGE, link_new(&self->gs, 0, 0, 0, 1, 0, 0));
	EXPECT_EQ(ICFAB_A_LINK_BANDWIDTH, self->gs.bad_attr_type);
}

TEST_F(topo, link_to_an_unstaged_node_is_enoent)
{
	ASSERT_EQ(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 1, "a"));
	EXPECT_EQ(-ENOENT, link_new(&self->gs, 0, 0, 0, 9, 0, 1000));
	EXPECT_EQ(ICFAB_A_LINK_DST_NODE, self->gs.bad_attr_type);
	EXPECT_EQ(-ENOENT, link_new(&self->gs, 0, 9, 0, 0, 0, 1000));
	EXPECT_EQ(ICFAB_A_LINK_SRC_NODE, self->gs.bad_attr_type);
}

TEST_F(topo, duplicate_node_is_eexist)
{
	ASSERT_EQ(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 1, "a"));
	EXPECT_EQ(-EEXIST, node_new(&self->gs, 0, ICFAB_NODE_SWITCH, 4, "b"));
	EXPECT_EQ(ICFAB_A_NODE_ID, self->gs.bad_attr_type);
}

TEST_F(topo, odd_route_length_is_einval)
{
	struct genl_msg m;
	uint8_t three[3] = { 0, 0, 0 };

	ASSERT_EQ(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 1, "a"));
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_ROUTE_SET, 0);
	genl_put_u32(&m, ICFAB_A_ROUTE_NODE, 0);
	genl_put(&m, ICFAB_A_ROUTE_PORTS, three, 3);
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(ICFAB_A_ROUTE_PORTS, self->gs.bad_attr_type);
}

TEST_F(topo, name_too_long_is_rejected)
{
	char name[64];

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	EXPECT_GT(0, node_new(&self->gs, 0, ICFAB_NODE_ENDPOINT, 1, name));
	EXPECT_EQ(ICFAB_A_NODE_NAME, self->gs.bad_attr_type);
}

TEST_F(topo, switch_with_memory_is_einval)
{
	struct genl_msg m;

	genl_msg_init(&m, self->gs.family, ICFAB_CMD_NODE_NEW, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, 0);
	genl_put_u32(&m, ICFAB_A_NODE_KIND, ICFAB_NODE_SWITCH);
	genl_put_u32(&m, ICFAB_A_NODE_PORTS, 4);
	genl_put_u64(&m, ICFAB_A_NODE_MEM_BYTES, 1);
	EXPECT_EQ(-EINVAL, genl_request(&self->gs, &m, NULL, NULL));
	EXPECT_EQ(ICFAB_A_NODE_MEM_BYTES, self->gs.bad_attr_type);
}

FIXTURE(unpriv) {
	int unused;
};

FIXTURE_VARIANT(unpriv) {
	uint8_t cmd;
};

FIXTURE_VARIANT_ADD(unpriv, node_new) { .cmd = ICFAB_CMD_NODE_NEW };
FIXTURE_VARIANT_ADD(unpriv, node_del) { .cmd = ICFAB_CMD_NODE_DEL };
FIXTURE_VARIANT_ADD(unpriv, link_new) { .cmd = ICFAB_CMD_LINK_NEW };
FIXTURE_VARIANT_ADD(unpriv, link_del) { .cmd = ICFAB_CMD_LINK_DEL };
FIXTURE_VARIANT_ADD(unpriv, link_set) { .cmd = ICFAB_CMD_LINK_SET };
FIXTURE_VARIANT_ADD(unpriv, route_set) { .cmd = ICFAB_CMD_ROUTE_SET };
FIXTURE_VARIANT_ADD(unpriv, route_sets_set) { .cmd = ICFAB_CMD_ROUTE_SETS_SET };
FIXTURE_VARIANT_ADD(unpriv, commit) { .cmd = ICFAB_CMD_FABRIC_COMMIT };
FIXTURE_VARIANT_ADD(unpriv, abort) { .cmd = ICFAB_CMD_FABRIC_ABORT };

FIXTURE_SETUP(unpriv)
{
}

FIXTURE_TEARDOWN(unpriv)
{
}

TEST_F(unpriv, mutation_is_eperm)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct genl_sock gs;
		struct genl_msg m;

		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME))
			_exit(11);
		genl_msg_init(&m, gs.family, variant->cmd, 0);
		_exit(genl_request(&gs, &m, NULL, NULL) == -EPERM ? 0 : 12);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
