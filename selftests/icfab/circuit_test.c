// SPDX-License-Identifier: GPL-2.0
/*
 * Circuits over netlink: CIRCUIT_NEW re-checks every color and installs
 * all or nothing, naming the busy router in the extack and cookie; bad
 * requests are refused and change nothing; GET, dumps and COLOR_GET read
 * them back; NEW and DEL are announced on the events group, without
 * the owner; only
 * CAP_NET_ADMIN may change circuits; a commit that would strand a circuit
 * is refused, one that keeps its nodes keeps it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "genl.h"
#include "kselftest_harness.h"

#include "fabric_util.h"

/*
 * Nodes: 0, 1, 2 endpoints "ep0".."ep2"; 3 "rt3" and 4 "rt4" switches
 * with 2 colors; 5 "plain" a switch without a color table.
 */
#define EP0	0
#define EP1	1
#define EP2	2
#define RT3	3
#define RT4	4
#define PLAIN	5

static int switch_new(struct genl_sock *gs, uint32_t id, const char *name,
		      uint32_t colors)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_NODE_NEW, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, id);
	genl_put_u32(&m, ICFAB_A_NODE_KIND, ICFAB_NODE_SWITCH);
	genl_put_u32(&m, ICFAB_A_NODE_PORTS, 4);
	genl_put(&m, ICFAB_A_NODE_NAME, name, strlen(name) + 1);
	genl_put_u32(&m, ICFAB_A_NODE_COLORS, colors);
	return genl_request(gs, &m, NULL, NULL);
}

struct req {
	int color;			/* < 0: leave out */
	uint32_t src;
	uint32_t dsts[4], nr_dsts;
	uint32_t routers[4], nr_routers;
	uint32_t pid, uid;
	size_t dsts_len;		/* bytes, to send a bad length; 0: exact */
};

static int new_cb(const struct genl_reply *r, void *arg)
{
	*(uint32_t *)arg = genl_u32(r->tb[ICFAB_A_CIRCUIT_ID]);
	return 0;
}

static int circuit_new(struct genl_sock *gs, const struct req *q,
		       uint32_t *id)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CIRCUIT_NEW, 0);
	if (q->color >= 0)
		genl_put_u32(&m, ICFAB_A_CIRCUIT_COLOR, q->color);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_SRC, q->src);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_OWNER_PID, q->pid);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_OWNER_UID, q->uid);
	genl_put(&m, ICFAB_A_CIRCUIT_DSTS, q->dsts,
		 q->dsts_len ? q->dsts_len : q->nr_dsts * 4);
	if (q->nr_routers)
		genl_put(&m, ICFAB_A_CIRCUIT_ROUTERS, q->routers,
			 q->nr_routers * 4);
	return genl_request(gs, &m, new_cb, id);
}

static int circuit_del(struct genl_sock *gs, uint32_t id)
{
	struct genl_msg m;

	genl_msg_init(&m, gs->family, ICFAB_CMD_CIRCUIT_DEL, 0);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_ID, id);
	return genl_request(gs, &m, NULL, NULL);
}

struct seen {
	unsigned int n;
	uint32_t ids[16], colors[16], pids[16];
	uint32_t nr_routers[16];
};

static int seen_cb(const struct genl_reply *r, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16) {
		s->ids[s->n] = genl_u32(r->tb[ICFAB_A_CIRCUIT_ID]);
		s->colors[s->n] = genl_u32(r->tb[ICFAB_A_CIRCUIT_COLOR]);
		/* Not shown to others than its owner and admins. */
		s->pids[s->n] = r->tb[ICFAB_A_CIRCUIT_OWNER_PID] ?
			genl_u32(r->tb[ICFAB_A_CIRCUIT_OWNER_PID]) : 0;
		s->nr_routers[s->n] =
			(r->tb[ICFAB_A_CIRCUIT_ROUTERS]->nla_len - NLA_HDRLEN) / 4;
	}
	s->n++;
	return 0;
}

static int circuit_dump(struct genl_sock *gs, struct seen *s)
{
	struct genl_msg m;

	memset(s, 0, sizeof(*s));
	genl_msg_init(&m, gs->family, ICFAB_CMD_CIRCUIT_GET, NLM_F_DUMP);
	return genl_request(gs, &m, seen_cb, s);
}

struct colors {
	unsigned int n;
	uint32_t node[8], total[8], used[8];
	uint64_t mask[8];
};

static int colors_cb(const struct genl_reply *r, void *arg)
{
	struct colors *c = arg;

	if (c->n < 8) {
		c->node[c->n] = genl_u32(r->tb[ICFAB_A_NODE_ID]);
		c->total[c->n] = genl_u32(r->tb[ICFAB_A_NODE_COLORS]);
		c->used[c->n] = genl_u32(r->tb[ICFAB_A_COLOR_USED]);
		c->mask[c->n] = genl_u64(r->tb[ICFAB_A_COLOR_MASK]);
	}
	c->n++;
	return 0;
}

static int colors_dump(struct genl_sock *gs, struct colors *c, int node)
{
	struct genl_msg m;

	memset(c, 0, sizeof(*c));
	genl_msg_init(&m, gs->family, ICFAB_CMD_COLOR_GET, NLM_F_DUMP);
	if (node >= 0)
		genl_put_u32(&m, ICFAB_A_NODE_ID, node);
	return genl_request(gs, &m, colors_cb, c);
}

static struct icfab_err_cookie cookie_of(const struct genl_sock *gs)
{
	struct icfab_err_cookie c = { .obj = 0xdead };

	if (gs->cookie_len == (int)sizeof(c))
		memcpy(&c, gs->cookie, sizeof(c));
	return c;
}

/* Every circuit the module holds. */
static void remove_all(struct genl_sock *gs)
{
	struct seen s;
	unsigned int i;

	if (!circuit_dump(gs, &s))
		for (i = 0; i < s.n && i < 16; i++)
			circuit_del(gs, s.ids[i]);
}

FIXTURE(circuit) {
	struct genl_sock gs;
};

FIXTURE_SETUP(circuit)
{
	static const char *const names[] = { "ep0", "ep1", "ep2" };
	unsigned int i;

	ASSERT_EQ(0, genl_open(&self->gs));
	ASSERT_EQ(0, genl_resolve(&self->gs, ICFAB_GENL_NAME));
	remove_all(&self->gs);
	ASSERT_EQ(0, clear_fabric(&self->gs));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, node_new(&self->gs, i, ICFAB_NODE_ENDPOINT, 1,
				      names[i]));
	ASSERT_EQ(0, switch_new(&self->gs, RT3, "rt3", 2));
	ASSERT_EQ(0, switch_new(&self->gs, RT4, "rt4", 2));
	ASSERT_EQ(0, switch_new(&self->gs, PLAIN, "plain", 0));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
}

FIXTURE_TEARDOWN(circuit)
{
	remove_all(&self->gs);
	clear_fabric(&self->gs);
	genl_close(&self->gs);
}

TEST_F(circuit, install_read_back_and_free)
{
	struct req q = { .color = 0, .src = EP0, .dsts = { EP1 }, .nr_dsts = 1,
			 .routers = { RT3, RT4 }, .nr_routers = 2,
			 .pid = 4242, .uid = 1000 };
	struct colors c;
	struct seen s;
	uint32_t id = 99, id2 = 99;

	ASSERT_EQ(0, circuit_new(&self->gs, &q, &id));
	EXPECT_EQ(1, id);		/* 0 is no circuit, in a descriptor */
	q.color = 1;
	q.dsts[1] = EP2;
	q.nr_dsts = 2;			/* a multicast tree */
	ASSERT_EQ(0, circuit_new(&self->gs, &q, &id2));
	EXPECT_EQ(2, id2);

	ASSERT_EQ(0, circuit_dump(&self->gs, &s));
	ASSERT_EQ(2, s.n);
	EXPECT_EQ(1, s.ids[0]);
	EXPECT_EQ(0, s.colors[0]);
	EXPECT_EQ(4242, s.pids[0]);
	EXPECT_EQ(2, s.nr_routers[0]);
	EXPECT_EQ(1, s.colors[1]);

	ASSERT_EQ(0, colors_dump(&self->gs, &c, -1));
	ASSERT_EQ(2, c.n);		/* "plain" has no table */
	EXPECT_EQ(RT3, c.node[0]);
	EXPECT_EQ(2, c.total[0]);
	EXPECT_EQ(2, c.used[0]);
	EXPECT_EQ(3, c.mask[0]);
	ASSERT_EQ(0, colors_dump(&self->gs, &c, RT4));
	ASSERT_EQ(1, c.n);
	EXPECT_EQ(3, c.mask[0]);
	/* A dump's error comes in NLMSG_DONE, which genl.c does not read. */
	colors_dump(&self->gs, &c, PLAIN);
	EXPECT_EQ(0, c.n);

	/* The lowest free id is reused; a freed color can be taken again. */
	ASSERT_EQ(0, circuit_del(&self->gs, 1));
	EXPECT_EQ(-ENOENT, circuit_del(&self->gs, 1));
	EXPECT_EQ(-ENOENT, circuit_del(&self->gs, 0));
	q.color = 0;
	q.nr_dsts = 1;
	ASSERT_EQ(0, circuit_new(&self->gs, &q, &id));
	EXPECT_EQ(1, id);
}

TEST_F(circuit, busy_color_is_refused_naming_the_router)
{
	struct req q = { .color = 1, .src = EP0, .dsts = { EP1 }, .nr_dsts = 1,
			 .routers = { RT4 }, .nr_routers = 1 };
	struct icfab_err_cookie ck;
	struct colors before, after;
	struct seen s;
	uint32_t id;

	ASSERT_EQ(0, circuit_new(&self->gs, &q, &id));
	ASSERT_EQ(0, colors_dump(&self->gs, &before, -1));

	/* Color 1 is free at rt3 but not at rt4: nothing may be marked. */
	q.routers[0] = RT3;
	q.routers[1] = RT4;
	q.nr_routers = 2;
	EXPECT_EQ(-ENOSPC, circuit_new(&self->gs, &q, &id));
	EXPECT_NE(0, strlen(self->gs.extack));
	ck = cookie_of(&self->gs);
	EXPECT_EQ(ICFAB_ERR_OBJ_ROUTER_COLOR, ck.obj);
	EXPECT_EQ(RT4, ck.id);
	EXPECT_EQ(1, ck.id2);
	TH_LOG("extack: %s", self->gs.extack);

	ASSERT_EQ(0, colors_dump(&self->gs, &after, -1));
	EXPECT_EQ(0, memcmp(&before, &after, sizeof(before)));
	ASSERT_EQ(0, circuit_dump(&self->gs, &s));
	EXPECT_EQ(1, s.n);
}

TEST_F(circuit, bad_requests_change_nothing)
{
	struct req good = { .color = 0, .src = EP0, .dsts = { EP1 },
			    .nr_dsts = 1, .routers = { RT3 }, .nr_routers = 1 };
	struct icfab_err_cookie ck;
	struct seen s;
	struct req q;
	uint32_t id;

	q = good;
	q.src = 9;			/* no such node */
	EXPECT_EQ(-ENOENT, circuit_new(&self->gs, &q, &id));
	ck = cookie_of(&self->gs);
	EXPECT_EQ(ICFAB_ERR_OBJ_NODE, ck.obj);
	EXPECT_EQ(9, ck.id);

	q = good;
	q.dsts[0] = RT4;		/* a switch is no destination */
	EXPECT_EQ(-ENOENT, circuit_new(&self->gs, &q, &id));
	q = good;
	q.dsts[0] = EP0;		/* the source */
	EXPECT_EQ(-EINVAL, circuit_new(&self->gs, &q, &id));
	q = good;
	q.dsts[1] = EP1;
	q.nr_dsts = 2;			/* twice */
	EXPECT_EQ(-EINVAL, circuit_new(&self->gs, &q, &id));
	q = good;
	q.routers[0] = PLAIN;		/* no color table */
	EXPECT_EQ(-EINVAL, circuit_new(&self->gs, &q, &id));
	ck = cookie_of(&self->gs);
	EXPECT_EQ(PLAIN, ck.id);
	q = good;
	q.routers[0] = EP2;		/* an endpoint */
	EXPECT_EQ(-EINVAL, circuit_new(&self->gs, &q, &id));
	q = good;
	q.routers[1] = RT3;
	q.nr_routers = 2;		/* twice */
	EXPECT_EQ(-EINVAL, circuit_new(&self->gs, &q, &id));
	q = good;
	q.color = 2;			/* rt3 has colors 0 and 1 */
	EXPECT_EQ(-ERANGE, circuit_new(&self->gs, &q, &id));
	q = good;
	q.color = 64;			/* beyond the module's limit: policy */
	EXPECT_EQ(-ERANGE, circuit_new(&self->gs, &q, &id));
	q = good;
	q.color = -1;			/* missing */
	EXPECT_EQ(-EINVAL, circuit_new(&self->gs, &q, &id));
	q = good;
	q.nr_routers = 0;		/* missing */
	EXPECT_EQ(-EINVAL, circuit_new(&self->gs, &q, &id));
	q = good;
	q.dsts_len = 6;			/* not a multiple of 4 */
	EXPECT_EQ(-EINVAL, circuit_new(&self->gs, &q, &id));

	ASSERT_EQ(0, circuit_dump(&self->gs, &s));
	EXPECT_EQ(0, s.n);
	EXPECT_EQ(-ENOENT, circuit_del(&self->gs, 1));
	ASSERT_EQ(0, circuit_new(&self->gs, &good, &id));
	EXPECT_EQ(1, id);
}

TEST_F(circuit, events_announce_new_and_del)
{
	struct req q = { .color = 0, .src = EP0, .dsts = { EP2 }, .nr_dsts = 1,
			 .routers = { RT3 }, .nr_routers = 1, .pid = 7 };
	struct genl_sock ev;
	struct genl_reply r;
	uint32_t id;

	ASSERT_EQ(0, genl_open(&ev));
	ASSERT_EQ(0, genl_resolve(&ev, ICFAB_GENL_NAME));
	ASSERT_EQ(0, genl_join(&ev, ev.mcgrp_events));

	ASSERT_EQ(0, circuit_new(&self->gs, &q, &id));
	ASSERT_EQ(0, genl_recv_one(&ev, &r, 2000));
	EXPECT_EQ(ICFAB_CMD_CIRCUIT_NEW, r.cmd);
	EXPECT_EQ(id, genl_u32(r.tb[ICFAB_A_CIRCUIT_ID]));
	/* Every local user may listen: the owner is left out. */
	EXPECT_EQ(NULL, r.tb[ICFAB_A_CIRCUIT_OWNER_PID]);
	EXPECT_EQ(NULL, r.tb[ICFAB_A_CIRCUIT_OWNER_UID]);
	EXPECT_EQ(EP0, genl_u32(r.tb[ICFAB_A_CIRCUIT_SRC]));

	ASSERT_EQ(0, circuit_del(&self->gs, id));
	ASSERT_EQ(0, genl_recv_one(&ev, &r, 2000));
	EXPECT_EQ(ICFAB_CMD_CIRCUIT_DEL, r.cmd);
	EXPECT_EQ(id, genl_u32(r.tb[ICFAB_A_CIRCUIT_ID]));
	EXPECT_EQ(NULL, r.tb[ICFAB_A_CIRCUIT_OWNER_PID]);
	EXPECT_EQ(NULL, r.tb[ICFAB_A_CIRCUIT_OWNER_UID]);
	genl_close(&ev);
}

TEST_F(circuit, only_cap_net_admin_changes_circuits)
{
	struct req q = { .color = 0, .src = EP0, .dsts = { EP1 }, .nr_dsts = 1,
			 .routers = { RT3 }, .nr_routers = 1, .pid = 7,
			 .uid = 1000 };
	uint32_t id;
	int status;
	pid_t pid;

	ASSERT_EQ(0, circuit_new(&self->gs, &q, &id));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct genl_sock gs;
		struct seen s;
		int bad = 0;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME))
			_exit(11);
		q.color = 1;
		bad |= circuit_new(&gs, &q, &id) != -EPERM;
		bad |= (circuit_del(&gs, 0) != -EPERM) << 1;
		/* Reading is for everyone, without another's owner. */
		bad |= (circuit_dump(&gs, &s) || s.n != 1) << 2;
		bad |= (s.pids[0] != 0) << 3;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_F(circuit, commit_keeps_fitting_circuits_and_refuses_others)
{
	struct req q = { .color = 1, .src = EP0, .dsts = { EP1 }, .nr_dsts = 1,
			 .routers = { RT4 }, .nr_routers = 1 };
	struct icfab_err_cookie ck;
	struct genl_msg m;
	struct colors c;
	struct seen s;
	uint32_t id;

	ASSERT_EQ(0, circuit_new(&self->gs, &q, &id));

	/* Another endpoint: the circuit still fits and survives. */
	ASSERT_EQ(0, node_new(&self->gs, 6, ICFAB_NODE_ENDPOINT, 1, "ep6"));
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ASSERT_EQ(0, circuit_dump(&self->gs, &s));
	EXPECT_EQ(1, s.n);
	ASSERT_EQ(0, colors_dump(&self->gs, &c, RT4));
	EXPECT_EQ(2, c.mask[0]);

	/* Shrinking rt4 to 1 color strands the circuit on color 1. */
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_NODE_DEL, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, 6);
	ASSERT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_NODE_DEL, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, RT4);
	ASSERT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	ASSERT_EQ(0, switch_new(&self->gs, RT4, "rt4", 1));
	EXPECT_EQ(-EBUSY, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
	ck = cookie_of(&self->gs);
	EXPECT_EQ(ICFAB_ERR_OBJ_CIRCUIT, ck.obj);
	EXPECT_EQ(id, ck.id);
	EXPECT_EQ(RT4, ck.id2);
	TH_LOG("extack: %s", self->gs.extack);
	ASSERT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_ABORT));

	ASSERT_EQ(0, colors_dump(&self->gs, &c, RT4));
	EXPECT_EQ(2, c.total[0]);
	EXPECT_EQ(2, c.mask[0]);

	/* Without the circuit the same change commits. */
	ASSERT_EQ(0, circuit_del(&self->gs, id));
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_NODE_DEL, 0);
	genl_put_u32(&m, ICFAB_A_NODE_ID, RT4);
	ASSERT_EQ(0, genl_request(&self->gs, &m, NULL, NULL));
	ASSERT_EQ(0, switch_new(&self->gs, RT4, "rt4", 1));
	EXPECT_EQ(0, cmd(&self->gs, ICFAB_CMD_FABRIC_COMMIT));
}

/*
 * Circuits belong to their owner uid (ICFAB_F_CIRCUIT_OWNER): in a child
 * that becomes @uid (in the group icfab), bind nothing (region 0) to
 * circuit @id at EP1 and list the circuits. Exit status: the errno of
 * CIRCUIT_RECV (0: allowed) plus 100 when the dump showed @id's owner,
 * or 200+ on trouble.
 */
struct owner_seen {
	uint32_t id;
	int shown;
};

static int owner_cb(const struct genl_reply *r, void *arg)
{
	struct owner_seen *o = arg;

	if (genl_u32(r->tb[ICFAB_A_CIRCUIT_ID]) == o->id)
		o->shown = r->tb[ICFAB_A_CIRCUIT_OWNER_UID] != NULL;
	return 0;
}

/*
 * As the user running it, bind a receive region to circuit @arg's id at
 * EP1, then list the circuits: errno of the bind, plus 100 when the
 * listing showed the circuit's owner; 202+ on other trouble.
 */
static int recv_child(void *arg)
{
	uint32_t id = *(uint32_t *)arg;
	struct icfab_circuit_recv cr = { .circuit = id, .endpoint = EP1 };
	struct owner_seen o = { .id = id, .shown = -1 };
	struct icfab_attach a = { .endpoint = EP1 };
	struct genl_sock gs;
	struct genl_msg m;
	int fd, err = 0;

	fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, ICFAB_IOC_ATTACH, &a))
		return 203;
	if (ioctl(fd, ICFAB_IOC_CIRCUIT_RECV, &cr))
		err = errno;
	if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME))
		return 204;
	genl_msg_init(&m, gs.family, ICFAB_CMD_CIRCUIT_GET, NLM_F_DUMP);
	if (genl_request(&gs, &m, owner_cb, &o) || o.shown < 0)
		return 205;
	return err + (o.shown ? 100 : 0);
}

static int recv_as(uint32_t uid, uint32_t id)
{
	return as_user(uid, recv_child, &id);
}

TEST_F(circuit, only_the_owner_and_its_grantees_receive)
{
	struct req q = { .color = 0, .src = EP0, .dsts = { EP1 }, .nr_dsts = 1,
			 .routers = { RT3 }, .nr_routers = 1, .uid = 1000 };
	uint32_t grant = 1001, id, id2;
	struct genl_msg m;

	ASSERT_EQ(0, circuit_new(&self->gs, &q, &id));
	/* The second grants uid 1001 its receive side. */
	genl_msg_init(&m, self->gs.family, ICFAB_CMD_CIRCUIT_NEW, 0);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_COLOR, 1);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_SRC, EP0);
	genl_put_u32(&m, ICFAB_A_CIRCUIT_OWNER_UID, 1000);
	genl_put(&m, ICFAB_A_CIRCUIT_DSTS, &q.dsts[0], 4);
	genl_put(&m, ICFAB_A_CIRCUIT_ROUTERS, &q.routers[0], 4);
	genl_put(&m, ICFAB_A_CIRCUIT_RECV_UIDS, &grant, 4);
	ASSERT_EQ(0, genl_request(&self->gs, &m, new_cb, &id2));

	/* The owner: allowed, and sees itself. */
	EXPECT_EQ(100, recv_as(1000, id));
	/* Another user: refused, and sees the circuit without its owner. */
	EXPECT_EQ(EPERM, recv_as(1001, id));
	EXPECT_EQ(EPERM, recv_as(65534, id));
	/* The grantee of the second, and only of it. */
	EXPECT_EQ(0, recv_as(1001, id2));
	EXPECT_EQ(EPERM, recv_as(65534, id2));
	EXPECT_EQ(0, circuit_del(&self->gs, id));
	EXPECT_EQ(0, circuit_del(&self->gs, id2));
}

TEST_HARNESS_MAIN
