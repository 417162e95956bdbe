// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: the generic netlink family "icfab".
 */
#include <linux/module.h>
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

static struct genl_family icfab_genl_family;

/*
 * Resolve ICFAB_A_FABRIC_ID (fabric 0 when absent). Returns NULL with the
 * extack set when there is no such fabric.
 */
static struct icfab_fabric *icfab_genl_fabric(struct nlattr **attrs,
					       struct netlink_ext_ack *extack)
{
	struct nlattr *attr = attrs[ICFAB_A_FABRIC_ID];
	struct icfab_fabric *fabric;

	fabric = icfab_fabric_get_by_id(attr ? nla_get_u32(attr) : 0);
	if (!fabric)
		NL_SET_ERR_MSG_ATTR(extack, attr, "no fabric with this id");
	return fabric;
}

static int icfab_genl_fill_fabric(struct sk_buff *skb,
				  struct icfab_fabric *fabric, u8 cmd,
				  u32 portid, u32 seq, int flags)
{
	struct icfab_fabric_state st;
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &icfab_genl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;

	icfab_fabric_snapshot(fabric, &st);

	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, st.id) ||
	    nla_put_string(skb, ICFAB_A_FABRIC_NAME, fabric->name) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_ABI_VERSION, ICFAB_ABI_VERSION) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_FEATURES, ICFAB_F_ALL,
			      ICFAB_A_PAD) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_GENERATION, st.generation,
			      ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_TIME_MODE, st.time_mode) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_SEGMENT_SIZE, st.segment_size) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_DILATION, st.dilation) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_NOW_PS, st.now_ps,
			      ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_NR_ENDPOINTS, st.nr_endpoints) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_NR_SWITCHES, st.nr_switches) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_NR_LINKS, st.nr_links) ||
	    nla_put_u32(skb, ICFAB_A_FABRIC_NR_CONTEXTS, st.nr_contexts)) {
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
				     info->snd_portid, info->snd_seq, 0);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

static int icfab_genl_fabric_get_dumpit(struct sk_buff *skb,
					struct netlink_callback *cb)
{
	unsigned long id;	/* cb->args[0]: next fabric to dump */
	int err;

	for (id = cb->args[0]; id < icfab_nr_fabrics; id++) {
		err = icfab_genl_fill_fabric(skb, icfab_fabric_get_by_id(id),
					     ICFAB_CMD_FABRIC_GET,
					     NETLINK_CB(cb->skb).portid,
					     cb->nlh->nlmsg_seq, NLM_F_MULTI);
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
				   0)) {
		nlmsg_free(msg);
		return;
	}
	/* -ESRCH only says that nobody listens. */
	genlmsg_multicast(&icfab_genl_family, msg, 0,
			  ICFAB_GENL_MCGRP_EVENTS_ID, GFP_KERNEL);
}

static int icfab_genl_fabric_set_doit(struct sk_buff *skb,
				      struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;

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

	/* The policy validated every value; apply them all at once. */
	mutex_lock(&fabric->lock);
	if (attrs[ICFAB_A_FABRIC_TIME_MODE])
		fabric->time_mode = nla_get_u32(attrs[ICFAB_A_FABRIC_TIME_MODE]);
	if (attrs[ICFAB_A_FABRIC_SEGMENT_SIZE])
		fabric->segment_size =
			nla_get_u32(attrs[ICFAB_A_FABRIC_SEGMENT_SIZE]);
	if (attrs[ICFAB_A_FABRIC_DILATION])
		fabric->dilation = nla_get_u32(attrs[ICFAB_A_FABRIC_DILATION]);
	fabric->generation++;
	mutex_unlock(&fabric->lock);

	icfab_genl_notify_fabric(fabric);
	return 0;
}

static const struct genl_ops icfab_genl_ops[] = {
	{
		.cmd		= ICFAB_CMD_FABRIC_GET,
		.doit		= icfab_genl_fabric_get_doit,
		.dumpit		= icfab_genl_fabric_get_dumpit,
		.policy		= icfab_fabric_get_policy,
		.maxattr	= ICFAB_A_MAX,
	},
	{
		.cmd		= ICFAB_CMD_FABRIC_SET,
		.doit		= icfab_genl_fabric_set_doit,
		.policy		= icfab_fabric_set_policy,
		.maxattr	= ICFAB_A_MAX,
		.flags		= GENL_ADMIN_PERM,
	},
};

static struct genl_family icfab_genl_family __ro_after_init = {
	.name		= ICFAB_GENL_NAME,
	.version	= ICFAB_GENL_VERSION,
	.maxattr	= ICFAB_A_MAX,
	.module		= THIS_MODULE,
	.ops		= icfab_genl_ops,
	.n_ops		= ARRAY_SIZE(icfab_genl_ops),
	.mcgrps		= icfab_genl_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(icfab_genl_mcgrps),
};

int icfab_genl_init(void)
{
	return genl_register_family(&icfab_genl_family);
}

void icfab_genl_exit(void)
{
	genl_unregister_family(&icfab_genl_family);
}
