// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: netlink commands for circuits (CIRCUIT_NEW, _DEL, _GET) and the
 * routers' color use (COLOR_GET). The storage and its rules are in
 * kmod/circuit.c. NEW and DEL are announced on the events group with the
 * circuit's attributes and the command that made the change.
 */
#include <linux/err.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <net/genetlink.h>

#include <linux/icfab_genl.h>

#include "icfab.h"

static struct netlink_range_validation icfab_circuit_node_range = {
	.max = ICFAB_MAX_NODES - 1,
};

static struct netlink_range_validation icfab_circuit_color_range = {
	.max = ICFAB_MAX_COLORS - 1,
};

const struct nla_policy icfab_circuit_new_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_CIRCUIT_COLOR]		=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_circuit_color_range),
	[ICFAB_A_CIRCUIT_OWNER_PID]	= { .type = NLA_U32 },
	[ICFAB_A_CIRCUIT_OWNER_UID]	= { .type = NLA_U32 },
	[ICFAB_A_CIRCUIT_SRC]		=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_circuit_node_range),
	[ICFAB_A_CIRCUIT_DSTS]		= NLA_POLICY_RANGE(NLA_BINARY,
						sizeof(u32),
						ICFAB_CIRCUIT_MAX_DSTS * sizeof(u32)),
	[ICFAB_A_CIRCUIT_ROUTERS]	= NLA_POLICY_RANGE(NLA_BINARY,
						sizeof(u32),
						ICFAB_CIRCUIT_MAX_ROUTERS * sizeof(u32)),
	[ICFAB_A_CIRCUIT_RECV_UIDS]	= NLA_POLICY_RANGE(NLA_BINARY,
						sizeof(u32),
						ICFAB_CIRCUIT_MAX_RECV_UIDS * sizeof(u32)),
};

const struct nla_policy icfab_circuit_del_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_CIRCUIT_ID]		= { .type = NLA_U32 },
};

const struct nla_policy icfab_circuit_get_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_CIRCUIT_ID]		= { .type = NLA_U32 },
};

const struct nla_policy icfab_color_get_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_NODE_ID]		=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_circuit_node_range),
};

/* What a circuit's message needs. */
static size_t icfab_circuit_msg_size(const struct icfab_circuit *c)
{
	return 7 * nla_total_size(sizeof(u32)) +
	       nla_total_size(c->nr_recv_uids * sizeof(u32)) +
	       nla_total_size(c->nr_dsts * sizeof(u32)) +
	       nla_total_size(c->nr_routers * sizeof(u32));
}

/*
 * Does the requester of a CIRCUIT_GET see @c's owner? Administrators
 * (CAP_NET_ADMIN) and its owner do; others see the circuit without it.
 */
static bool icfab_circuit_owner_shown(const struct sk_buff *skb,
				      const struct icfab_circuit *c)
{
	return netlink_capable(skb, CAP_NET_ADMIN) ||
	       from_kuid_munged(&init_user_ns, current_euid()) == c->owner_uid;
}

/* @hide_owner: without its owner pid, uid and grants. */
static int icfab_fill_circuit(struct sk_buff *skb, u32 portid, u32 seq,
			      int flags, u8 cmd, struct icfab_fabric *fabric,
			      struct netlink_callback *cb,
			      const struct icfab_circuit *c, bool hide_owner)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &icfab_genl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	if (cb)
		genl_dump_check_consistent(cb, hdr);

	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, fabric->id) ||
	    nla_put_u32(skb, ICFAB_A_CIRCUIT_ID, c->id) ||
	    nla_put_u32(skb, ICFAB_A_CIRCUIT_COLOR, c->color) ||
	    (!hide_owner &&
	     (nla_put_u32(skb, ICFAB_A_CIRCUIT_OWNER_PID, c->owner_pid) ||
	      nla_put_u32(skb, ICFAB_A_CIRCUIT_OWNER_UID, c->owner_uid) ||
	      (c->nr_recv_uids &&
	       nla_put(skb, ICFAB_A_CIRCUIT_RECV_UIDS,
		       c->nr_recv_uids * sizeof(u32), c->recv_uids)))) ||
	    nla_put_u32(skb, ICFAB_A_CIRCUIT_SRC, c->src) ||
	    nla_put(skb, ICFAB_A_CIRCUIT_DSTS, c->nr_dsts * sizeof(u32),
		    c->nodes) ||
	    nla_put(skb, ICFAB_A_CIRCUIT_ROUTERS, c->nr_routers * sizeof(u32),
		    c->nodes + c->nr_dsts)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* A message about @c with command @cmd, or NULL without memory. */
static struct sk_buff *icfab_circuit_msg(struct icfab_fabric *fabric,
					 const struct icfab_circuit *c, u8 cmd,
					 u32 portid, u32 seq, bool hide_owner)
{
	struct sk_buff *msg;

	msg = genlmsg_new(icfab_circuit_msg_size(c), GFP_KERNEL);
	if (!msg)
		return NULL;
	if (icfab_fill_circuit(msg, portid, seq, 0, cmd, fabric, NULL, c,
			       hide_owner)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/*
 * Tell the events group. Every local user may listen there, so the
 * announcement leaves the owner out, as CIRCUIT_GET does for those who
 * may not see it; administrators and the owner ask CIRCUIT_GET.
 */
static void icfab_circuit_notify(struct icfab_fabric *fabric,
				 const struct icfab_circuit *c, u8 cmd)
{
	struct sk_buff *msg = icfab_circuit_msg(fabric, c, cmd, 0, 0, true);

	if (msg)
		icfab_genl_multicast_events(msg);
}

int icfab_genl_circuit_new_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct sk_buff *reply, *ntf;
	struct icfab_fabric *fabric;
	struct icfab_circuit *c;
	u32 nr_dsts, nr_routers;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_CIRCUIT_COLOR) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_CIRCUIT_SRC) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_CIRCUIT_DSTS) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_CIRCUIT_ROUTERS))
		return -EINVAL;
	if (nla_len(attrs[ICFAB_A_CIRCUIT_DSTS]) % sizeof(u32)) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_CIRCUIT_DSTS],
				    "node ids are __u32: the length must be a multiple of 4");
		return -EINVAL;
	}
	if (nla_len(attrs[ICFAB_A_CIRCUIT_ROUTERS]) % sizeof(u32)) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    attrs[ICFAB_A_CIRCUIT_ROUTERS],
				    "node ids are __u32: the length must be a multiple of 4");
		return -EINVAL;
	}
	nr_dsts = nla_len(attrs[ICFAB_A_CIRCUIT_DSTS]) / sizeof(u32);
	nr_routers = nla_len(attrs[ICFAB_A_CIRCUIT_ROUTERS]) / sizeof(u32);

	c = icfab_circuit_alloc(nr_dsts, nr_routers);
	if (!c)
		return -ENOMEM;
	c->color = nla_get_u32(attrs[ICFAB_A_CIRCUIT_COLOR]);
	c->src = nla_get_u32(attrs[ICFAB_A_CIRCUIT_SRC]);
	if (attrs[ICFAB_A_CIRCUIT_OWNER_PID])
		c->owner_pid = nla_get_u32(attrs[ICFAB_A_CIRCUIT_OWNER_PID]);
	if (attrs[ICFAB_A_CIRCUIT_OWNER_UID])
		c->owner_uid = nla_get_u32(attrs[ICFAB_A_CIRCUIT_OWNER_UID]);
	if (attrs[ICFAB_A_CIRCUIT_RECV_UIDS]) {
		if (nla_len(attrs[ICFAB_A_CIRCUIT_RECV_UIDS]) % sizeof(u32)) {
			NL_SET_ERR_MSG_ATTR(info->extack,
					    attrs[ICFAB_A_CIRCUIT_RECV_UIDS],
					    "uids are __u32: the length must be a multiple of 4");
			icfab_circuit_free(c);
			return -EINVAL;
		}
		c->nr_recv_uids = nla_len(attrs[ICFAB_A_CIRCUIT_RECV_UIDS]) /
				  sizeof(u32);
		memcpy(c->recv_uids, nla_data(attrs[ICFAB_A_CIRCUIT_RECV_UIDS]),
		       c->nr_recv_uids * sizeof(u32));
	}
	memcpy(c->nodes, nla_data(attrs[ICFAB_A_CIRCUIT_DSTS]),
	       nr_dsts * sizeof(u32));
	memcpy(c->nodes + nr_dsts, nla_data(attrs[ICFAB_A_CIRCUIT_ROUTERS]),
	       nr_routers * sizeof(u32));

	/* Both messages are made before the circuit exists: no undo needed. */
	reply = genlmsg_new(icfab_circuit_msg_size(c), GFP_KERNEL);
	ntf = genlmsg_new(icfab_circuit_msg_size(c), GFP_KERNEL);
	if (!reply || !ntf) {
		err = -ENOMEM;
		goto err_free;
	}

	mutex_lock(&fabric->lock);
	err = __icfab_circuit_insert(fabric, c, info->extack);
	if (!err) {
		/* Sized for @c: filling cannot fail. */
		icfab_fill_circuit(reply, info->snd_portid, info->snd_seq, 0,
				   ICFAB_CMD_CIRCUIT_NEW, fabric, NULL, c,
				   false);
		/* For every listener: without the owner (icfab_circuit_notify()). */
		icfab_fill_circuit(ntf, 0, 0, 0, ICFAB_CMD_CIRCUIT_NEW, fabric,
				   NULL, c, true);
	}
	mutex_unlock(&fabric->lock);
	if (err)
		goto err_free;

	icfab_genl_multicast_events(ntf);
	return genlmsg_reply(reply, info);

err_free:
	nlmsg_free(ntf);
	nlmsg_free(reply);
	icfab_circuit_free(c);
	return err;
}

int icfab_genl_circuit_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_circuit *c;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_CIRCUIT_ID))
		return -EINVAL;

	mutex_lock(&fabric->lock);
	c = __icfab_circuit_remove(fabric,
				   nla_get_u32(attrs[ICFAB_A_CIRCUIT_ID]));
	mutex_unlock(&fabric->lock);
	if (!c) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_CIRCUIT_ID],
				    "no circuit with this id");
		return -ENOENT;
	}
	icfab_circuit_notify(fabric, c, ICFAB_CMD_CIRCUIT_DEL);
	icfab_circuit_free(c);
	return 0;
}

int icfab_genl_circuit_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_circuit *c;
	struct sk_buff *msg = NULL;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_CIRCUIT_ID))
		return -EINVAL;

	mutex_lock(&fabric->lock);
	c = xa_load(&fabric->circuits, nla_get_u32(attrs[ICFAB_A_CIRCUIT_ID]));
	if (c)
		msg = icfab_circuit_msg(fabric, c, ICFAB_CMD_CIRCUIT_GET,
					info->snd_portid, info->snd_seq,
					!icfab_circuit_owner_shown(skb, c));
	mutex_unlock(&fabric->lock);

	if (!c) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_CIRCUIT_ID],
				    "no circuit with this id");
		return -ENOENT;
	}
	if (!msg)
		return -ENOMEM;
	return genlmsg_reply(msg, info);
}

/* Never 0, which means "unset" to genl_dump_check_consistent(). */
static u32 icfab_circuit_dump_seq(struct icfab_fabric *fabric)
{
	lockdep_assert_held(&fabric->lock);
	return fabric->circuit_seq | 1U << 31;
}

int icfab_genl_circuit_get_dumpit(struct sk_buff *skb,
				  struct netlink_callback *cb)
{
	struct nlattr **attrs = icfab_genl_dump_attrs(cb);
	unsigned long id = cb->args[0];	/* next circuit id to dump */
	struct icfab_fabric *fabric;
	struct icfab_circuit *c;
	int err = 0;

	fabric = icfab_genl_fabric(attrs, cb->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	cb->seq = icfab_circuit_dump_seq(fabric);
	xa_for_each_start(&fabric->circuits, id, c, cb->args[0]) {
		err = icfab_fill_circuit(skb, NETLINK_CB(cb->skb).portid,
					 cb->nlh->nlmsg_seq, NLM_F_MULTI,
					 ICFAB_CMD_CIRCUIT_GET, fabric, cb, c,
					 !icfab_circuit_owner_shown(cb->skb,
								    c));
		if (err)
			break;
	}
	mutex_unlock(&fabric->lock);
	/* After a full loop id is past the last; after a break, the one left. */
	cb->args[0] = err ? id : ULONG_MAX;
	return err && !skb->len ? err : skb->len;
}

static int icfab_fill_colors(struct sk_buff *skb, u32 portid, u32 seq,
			     struct icfab_fabric *fabric,
			     struct netlink_callback *cb, u32 node,
			     const struct icfab_mnode *n, u64 used)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &icfab_genl_family, NLM_F_MULTI,
			  ICFAB_CMD_COLOR_GET);
	if (!hdr)
		return -EMSGSIZE;
	genl_dump_check_consistent(cb, hdr);

	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, fabric->id) ||
	    nla_put_u32(skb, ICFAB_A_NODE_ID, node) ||
	    nla_put_string(skb, ICFAB_A_NODE_NAME, n->name) ||
	    nla_put_u32(skb, ICFAB_A_NODE_COLORS, n->colors) ||
	    nla_put_u32(skb, ICFAB_A_COLOR_USED, hweight64(used)) ||
	    nla_put_u64_64bit(skb, ICFAB_A_COLOR_MASK, used, ICFAB_A_PAD)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* COLOR_GET: every router's color use, or one router's (NODE_ID). */
int icfab_genl_color_get_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	struct nlattr **attrs = icfab_genl_dump_attrs(cb);
	unsigned long node = cb->args[0], last;	/* next node to dump */
	struct icfab_fabric *fabric;
	struct icfab_topo *t;
	int err = 0;

	fabric = icfab_genl_fabric(attrs, cb->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	cb->seq = icfab_circuit_dump_seq(fabric) ^ (u32)fabric->generation;
	cb->seq |= 1U << 31;
	t = fabric->active;
	last = t->m.nodes_cap;
	if (attrs[ICFAB_A_NODE_ID]) {
		u32 only = nla_get_u32(attrs[ICFAB_A_NODE_ID]);
		struct icfab_mnode *n = icfab_topo_node(t, only);

		if (!n || n->kind != ICFAB_MODEL_SWITCH || !n->colors) {
			mutex_unlock(&fabric->lock);
			NL_SET_ERR_MSG_ATTR(cb->extack, attrs[ICFAB_A_NODE_ID],
					    "no router with a color table has this id");
			return -ENOENT;
		}
		node = max_t(unsigned long, node, only);
		last = only + 1;
	}
	for (; node < last; node++) {
		const struct icfab_mnode *n = &t->m.nodes[node];

		if (!n->present || n->kind != ICFAB_MODEL_SWITCH || !n->colors)
			continue;
		err = icfab_fill_colors(skb, NETLINK_CB(cb->skb).portid,
					cb->nlh->nlmsg_seq, fabric, cb, node, n,
					__icfab_colors_used(fabric, node));
		if (err)
			break;
	}
	mutex_unlock(&fabric->lock);
	cb->args[0] = node;
	return err && !skb->len ? err : skb->len;
}
