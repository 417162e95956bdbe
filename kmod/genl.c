// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: the generic netlink family "icfab".
 */
#include <linux/err.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/version.h>
#include <net/genetlink.h>

#include <linux/icfab_genl.h>

#include "icfab.h"

enum icfab_genl_mcgrp {
	ICFAB_GENL_MCGRP_EVENTS_ID,
};

static const struct genl_multicast_group icfab_genl_mcgrps[] = {
	[ICFAB_GENL_MCGRP_EVENTS_ID] = { .name = ICFAB_GENL_MCGRP_EVENTS },
};

static const struct nla_policy icfab_fabric_get_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_STAGED]		= { .type = NLA_FLAG },
};

/* Not const: 6.1 declares nla_policy.range without const. */
static struct netlink_range_validation icfab_segment_size_range = {
	.min = ICFAB_MIN_SEGMENT_SIZE,
	.max = ICFAB_MAX_SEGMENT_SIZE,
};

static struct netlink_range_validation icfab_dilation_range = {
	.min = 1,
	.max = ICFAB_MAX_DILATION,
};

static const struct nla_policy icfab_fabric_set_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_FABRIC_TIME_MODE]	= NLA_POLICY_MAX(NLA_U32,
							 ICFAB_TIME_MAX),
	[ICFAB_A_FABRIC_SEGMENT_SIZE]	=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_segment_size_range),
	[ICFAB_A_FABRIC_DILATION]	=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_dilation_range),
};

/* The parsed attributes of a dump request; where they live changed in 6.2. */
struct nlattr **icfab_genl_dump_attrs(struct netlink_callback *cb)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	return genl_info_dump(cb)->attrs;
#else
	return genl_dumpit_info(cb)->attrs;
#endif
}

/*
 * Resolve ICFAB_A_FABRIC_ID (fabric 0 when absent). Returns NULL with the
 * extack set when there is no such fabric.
 */
struct icfab_fabric *icfab_genl_fabric(struct nlattr **attrs,
				       struct netlink_ext_ack *extack)
{
	struct nlattr *attr = attrs[ICFAB_A_FABRIC_ID];
	struct icfab_fabric *fabric;

	fabric = icfab_fabric_get_by_id(attr ? nla_get_u32(attr) : 0);
	if (!fabric)
		NL_SET_ERR_MSG_ATTR(extack, attr, "no fabric with this id");
	return fabric;
}

/* Say in the extack's cookie which object a refusal is about. */
void icfab_set_cookie(struct netlink_ext_ack *extack, u32 obj, u32 id, u32 id2)
{
	struct icfab_err_cookie c = { .obj = obj, .id = id, .id2 = id2 };

	BUILD_BUG_ON(sizeof(c) > NETLINK_MAX_COOKIE_LEN);
	memcpy(extack->cookie, &c, sizeof(c));
	extack->cookie_len = sizeof(c);
}

static int icfab_genl_fill_fabric(struct sk_buff *skb,
				  struct icfab_fabric *fabric, u8 cmd,
				  u32 portid, u32 seq, int flags, bool staged)
{
	struct icfab_fabric_state st;
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &icfab_genl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;

	icfab_fabric_snapshot(fabric, &st, staged);

	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, st.id) ||
	    nla_put_string(skb, ICFAB_A_FABRIC_NAME, fabric->name) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_ABI_VERSION, ICFAB_ABI_VERSION) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_FEATURES, ICFAB_F_SUPPORTED,
			      ICFAB_A_PAD) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_GENERATION, st.generation,
			      ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_TIME_MODE, st.time_mode) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_SEGMENT_SIZE, st.segment_size) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_DILATION, st.dilation) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_NOW_PS, st.now_ps,
			      ICFAB_A_PAD) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_COMMIT_PS,
			      READ_ONCE(fabric->commit_ps), ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_NR_ENDPOINTS, st.nr_endpoints) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_NR_SWITCHES, st.nr_switches) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_NR_LINKS, st.nr_links) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_NR_CONTEXTS, st.nr_contexts) ||
	    nla_put_u8(skb, ICFAB_A_FABRIC_HAS_STAGED, st.has_staged) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_MEM_BYTES, st.mem_bytes,
			      ICFAB_A_PAD) ||
	    icfab_stats_put_held(skb, fabric)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}

	genlmsg_end(skb, hdr);
	return 0;
}

static int icfab_genl_fabric_get_doit(struct sk_buff *skb,
				      struct genl_info *info)
{
	struct icfab_fabric *fabric;
	struct sk_buff *msg;
	int err;

	fabric = icfab_genl_fabric(info->attrs, info->extack);
	if (!fabric)
		return -ENODEV;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	err = icfab_genl_fill_fabric(msg, fabric, ICFAB_CMD_FABRIC_GET,
				     info->snd_portid, info->snd_seq, 0,
				     info->attrs[ICFAB_A_STAGED]);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

static int icfab_genl_fabric_get_dumpit(struct sk_buff *skb,
					struct netlink_callback *cb)
{
	struct nlattr **attrs = icfab_genl_dump_attrs(cb);
	unsigned long id;	/* cb->args[0]: next fabric to dump */
	int err;

	for (id = cb->args[0]; id < icfab_nr_fabrics; id++) {
		err = icfab_genl_fill_fabric(skb, icfab_fabric_get_by_id(id),
					     ICFAB_CMD_FABRIC_GET,
					     NETLINK_CB(cb->skb).portid,
					     cb->nlh->nlmsg_seq, NLM_F_MULTI,
					     attrs[ICFAB_A_STAGED]);
		if (err)
			break;
	}
	cb->args[0] = id;
	return skb->len;
}

void icfab_genl_notify_fabric(struct icfab_fabric *fabric)
{
	struct sk_buff *msg;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return;

	if (icfab_genl_fill_fabric(msg, fabric, ICFAB_CMD_FABRIC_NTF, 0, 0,
				   0, false)) {
		nlmsg_free(msg);
		return;
	}
	/* -ESRCH only says that nobody listens. */
	genlmsg_multicast(&icfab_genl_family, msg, 0,
			  ICFAB_GENL_MCGRP_EVENTS_ID, GFP_KERNEL);
}

/* Send @msg (consumed) to the events group. */
void icfab_genl_multicast_events(struct sk_buff *msg)
{
	/* -ESRCH only says that nobody listens. */
	genlmsg_multicast(&icfab_genl_family, msg, 0,
			  ICFAB_GENL_MCGRP_EVENTS_ID, GFP_KERNEL);
}

static int icfab_genl_fabric_set_doit(struct sk_buff *skb,
				      struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_topo *t;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;

	if (!attrs[ICFAB_A_FABRIC_TIME_MODE] &&
	    !attrs[ICFAB_A_FABRIC_SEGMENT_SIZE] &&
	    !attrs[ICFAB_A_FABRIC_DILATION]) {
		NL_SET_ERR_MSG(info->extack,
			       "FABRIC_SET needs TIME_MODE, SEGMENT_SIZE or DILATION");
		return -EINVAL;
	}

	/* The policy validated every value; stage them all at once. */
	t = icfab_lock_staged(fabric, info);
	if (IS_ERR(t))
		return PTR_ERR(t);
	if (attrs[ICFAB_A_FABRIC_TIME_MODE])
		t->time_mode = nla_get_u32(attrs[ICFAB_A_FABRIC_TIME_MODE]);
	if (attrs[ICFAB_A_FABRIC_SEGMENT_SIZE])
		t->segment_size = nla_get_u32(attrs[ICFAB_A_FABRIC_SEGMENT_SIZE]);
	if (attrs[ICFAB_A_FABRIC_DILATION])
		t->dilation = nla_get_u32(attrs[ICFAB_A_FABRIC_DILATION]);
	fabric->change_seq++;
	mutex_unlock(&fabric->lock);
	return 0;
}

#define ICFAB_OP(_cmd, _doit, _dumpit, _policy, _flags) {		\
	.cmd = (_cmd), .doit = (_doit), .dumpit = (_dumpit),		\
	.policy = (_policy), .maxattr = ICFAB_A_MAX, .flags = (_flags),	\
}

static const struct genl_ops icfab_genl_ops[] = {
	ICFAB_OP(ICFAB_CMD_FABRIC_GET, icfab_genl_fabric_get_doit,
		 icfab_genl_fabric_get_dumpit, icfab_fabric_get_policy, 0),
	ICFAB_OP(ICFAB_CMD_FABRIC_SET, icfab_genl_fabric_set_doit, NULL,
		 icfab_fabric_set_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_NODE_NEW, icfab_genl_node_new_doit, NULL,
		 icfab_node_new_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_NODE_DEL, icfab_genl_node_del_doit, NULL,
		 icfab_node_del_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_NODE_GET, icfab_genl_node_get_doit,
		 icfab_genl_node_get_dumpit, icfab_node_get_policy, 0),
	ICFAB_OP(ICFAB_CMD_LINK_NEW, icfab_genl_link_new_doit, NULL,
		 icfab_link_new_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_LINK_DEL, icfab_genl_link_del_doit, NULL,
		 icfab_link_del_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_LINK_SET, icfab_genl_link_set_doit, NULL,
		 icfab_link_set_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_LINK_GET, icfab_genl_link_get_doit,
		 icfab_genl_link_get_dumpit, icfab_link_get_policy, 0),
	ICFAB_OP(ICFAB_CMD_ROUTE_SET, icfab_genl_route_set_doit, NULL,
		 icfab_route_set_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_ROUTE_GET, NULL, icfab_genl_route_get_dumpit,
		 icfab_route_get_policy, 0),
	ICFAB_OP(ICFAB_CMD_ROUTE_SETS_SET, icfab_genl_route_sets_set_doit, NULL,
		 icfab_route_sets_set_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_FABRIC_COMMIT, icfab_genl_commit_doit, NULL,
		 icfab_commit_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_FABRIC_ABORT, icfab_genl_abort_doit, NULL,
		 icfab_abort_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_CIRCUIT_NEW, icfab_genl_circuit_new_doit, NULL,
		 icfab_circuit_new_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_CIRCUIT_DEL, icfab_genl_circuit_del_doit, NULL,
		 icfab_circuit_del_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_CIRCUIT_GET, icfab_genl_circuit_get_doit,
		 icfab_genl_circuit_get_dumpit, icfab_circuit_get_policy, 0),
	ICFAB_OP(ICFAB_CMD_COLOR_GET, NULL, icfab_genl_color_get_dumpit,
		 icfab_color_get_policy, 0),
	{
		.cmd = ICFAB_CMD_STATS_GET, .doit = icfab_genl_stats_get_doit,
		.start = icfab_genl_stats_get_start,
		.dumpit = icfab_genl_stats_get_dumpit,
		.policy = icfab_stats_get_policy, .maxattr = ICFAB_A_MAX,
	},
	ICFAB_OP(ICFAB_CMD_STATS_RESET, icfab_genl_stats_reset_doit, NULL,
		 icfab_stats_reset_policy, GENL_ADMIN_PERM),
	ICFAB_OP(ICFAB_CMD_CTX_GET, NULL, icfab_genl_ctx_get_dumpit,
		 icfab_ctx_get_policy, 0),
	ICFAB_OP(ICFAB_CMD_CTX_EVICT, icfab_genl_ctx_evict_doit, NULL,
		 icfab_ctx_evict_policy, GENL_ADMIN_PERM),
};

struct genl_family icfab_genl_family __ro_after_init = {
	.name		= ICFAB_GENL_NAME,
	.version	= ICFAB_GENL_VERSION,
	.maxattr	= ICFAB_A_MAX,
	.module		= THIS_MODULE,
	.ops		= icfab_genl_ops,
	.n_ops		= ARRAY_SIZE(icfab_genl_ops),
	.mcgrps		= icfab_genl_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(icfab_genl_mcgrps),
};

/* A socket that staged a configuration and closed leaves nothing behind. */
static int icfab_genl_netlink_event(struct notifier_block *nb,
				    unsigned long event, void *ptr)
{
	struct netlink_notify *n = ptr;

	if (event == NETLINK_URELEASE && n->protocol == NETLINK_GENERIC &&
	    net_eq(n->net, &init_net))
		icfab_fabrics_release_portid(n->portid);
	return NOTIFY_DONE;
}

static struct notifier_block icfab_genl_netlink_nb = {
	.notifier_call = icfab_genl_netlink_event,
};

int icfab_genl_init(void)
{
	int err;

	err = netlink_register_notifier(&icfab_genl_netlink_nb);
	if (err)
		return err;
	err = genl_register_family(&icfab_genl_family);
	if (err)
		goto err_unregister_notifier;
	return 0;

err_unregister_notifier:
	netlink_unregister_notifier(&icfab_genl_netlink_nb);
	return err;
}

void icfab_genl_exit(void)
{
	genl_unregister_family(&icfab_genl_family);
	netlink_unregister_notifier(&icfab_genl_netlink_nb);
	icfab_stats_exit();
}
