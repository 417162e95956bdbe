// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: CTX_GET and CTX_EVICT, who holds virtual time.
 *
 * Every context attached to a fabric holds the engine back at its clock
 * until it waits (docs/TIMING.md): one that never waits stalls everyone.
 * CTX_GET lists them with what tells such a one apart (its clock, and
 * for the one holding the engine back now, for how long in wall time);
 * CTX_EVICT lets an admin end it as its owner's exit would.
 */
#include <linux/ktime.h>
#include <net/genetlink.h>

#include <linux/icfab_genl.h>

#include "icfab.h"

const struct nla_policy icfab_ctx_get_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
};

const struct nla_policy icfab_ctx_evict_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_CTX_ID]		= NLA_POLICY_MIN(NLA_U32, 1),
};

/* One context's message; the fabric lock is held. */
static int icfab_fill_ctx(struct sk_buff *skb, struct netlink_callback *cb,
			  struct icfab_ctx *ctx, u64 now_ns)
{
	struct icfab_fabric *fabric = ctx->fabric;
	u32 state = icfab_ctx_state(ctx);
	u64 held_ns = 0;
	void *hdr;

	if (state & ICFAB_CTX_HOLDS)
		held_ns = now_ns - fabric->held_since_ns;
	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &icfab_genl_family, NLM_F_MULTI, ICFAB_CMD_CTX_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, fabric->id) ||
	    nla_put_u32(skb, ICFAB_A_CTX_ID, ctx->id) ||
	    nla_put_u32(skb, ICFAB_A_CTX_PID, ctx->owner) ||
	    nla_put_u32(skb, ICFAB_A_CTX_UID, ctx->uid) ||
	    nla_put_u32(skb, ICFAB_A_CTX_ENDPOINTS, ctx->nr_eps) ||
	    nla_put_u32(skb, ICFAB_A_CTX_FIRST_ENDPOINT, ctx->first_ep) ||
	    nla_put_u64_64bit(skb, ICFAB_A_CTX_CLOCK_PS, ctx->clock_ps,
			      ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_CTX_STATE, state) ||
	    nla_put_u64_64bit(skb, ICFAB_A_CTX_HELD_NS, held_ns,
			      ICFAB_A_PAD)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/*
 * In attach order, which is id order: cb->args[0] is the last id sent.
 * Contexts that detach between two parts are simply not there any more.
 */
int icfab_genl_ctx_get_dumpit(struct sk_buff *skb,
			      struct netlink_callback *cb)
{
	struct nlattr **attrs = icfab_genl_dump_attrs(cb);
	u64 now_ns = ktime_get_ns();
	struct icfab_fabric *fabric;
	struct icfab_ctx *ctx;
	int err = 0;

	fabric = icfab_genl_fabric(attrs, cb->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	list_for_each_entry(ctx, &fabric->attached, attached_node) {
		if (ctx->id <= cb->args[0])
			continue;
		err = icfab_fill_ctx(skb, cb, ctx, now_ns);
		if (err)
			break;
		cb->args[0] = ctx->id;
	}
	mutex_unlock(&fabric->lock);
	return err && !skb->len ? err : skb->len;
}

int icfab_genl_ctx_evict_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *attr = info->attrs[ICFAB_A_CTX_ID];
	struct icfab_fabric *fabric;
	int err;

	fabric = icfab_genl_fabric(info->attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_CTX_ID))
		return -EINVAL;
	err = icfab_ctx_evict(fabric, nla_get_u32(attr));
	if (err == -ENOENT)
		NL_SET_ERR_MSG_ATTR(info->extack, attr,
				    "no context with this id is attached");
	else if (err == -EALREADY)
		NL_SET_ERR_MSG_ATTR(info->extack, attr,
				    "this context has ended already");
	return err;
}
