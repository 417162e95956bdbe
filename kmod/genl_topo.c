// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: netlink commands for the topology: nodes, links, routes, and the
 * staged-then-committed configuration.
 *
 * Edits go to the fabric's staged configuration. Reads go to the
 * committed one unless the request carries ICFAB_A_STAGED. Every reply
 * carries the generation it was read from; dumps set cb->seq so that a
 * dump spanning a commit (or, of the staged view, any change) is flagged
 * NLM_F_DUMP_INTR.
 */
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <net/genetlink.h>

#include <linux/icfab_genl.h>

#include "icfab.h"

/* Routes are dumped in chunks so that a message stays small. */
#define ICFAB_ROUTE_CHUNK	1024	/* destinations per message */

static struct netlink_range_validation icfab_node_id_range = {
	.max = ICFAB_MAX_NODES - 1,
};

static struct netlink_range_validation icfab_link_id_range = {
	.max = ICFAB_MAX_LINKS - 1,
};

static struct netlink_range_validation icfab_ports_range = {
	.min = 1,
	.max = ICFAB_MAX_PORTS,
};

static struct netlink_range_validation icfab_port_range = {
	.max = ICFAB_MAX_PORTS - 1,
};

static struct netlink_range_validation icfab_colors_range = {
	.max = ICFAB_MAX_COLORS,
};

static struct netlink_range_validation icfab_permille_range = {
	.min = 1,
	.max = 999,
};

static struct netlink_range_validation icfab_efficiency_range = {
	.min = 1,
	.max = 1000,
};

static struct netlink_range_validation icfab_msg_overhead_range = {
	.max = ICFAB_MSG_OVERHEAD_MAX_PS,
};

#define ICFAB_POLICY_NODE_ID \
	NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_node_id_range)
#define ICFAB_POLICY_LINK_ID \
	NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_link_id_range)
#define ICFAB_POLICY_PORT \
	NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_port_range)

const struct nla_policy icfab_node_new_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_NODE_ID]		= ICFAB_POLICY_NODE_ID,
	[ICFAB_A_NODE_KIND]		= NLA_POLICY_MAX(NLA_U32,
							 ICFAB_NODE_KIND_MAX),
	[ICFAB_A_NODE_NAME]		= { .type = NLA_NUL_STRING,
					    .len = ICFAB_NAME_MAX - 1 },
	[ICFAB_A_NODE_PORTS]		=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_ports_range),
	[ICFAB_A_NODE_MEM_BYTES]	= { .type = NLA_U64 },
	[ICFAB_A_NODE_DMA_ENGINES]	= NLA_POLICY_MAX(NLA_U32, 1024),
	[ICFAB_A_NODE_COLORS]		=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_colors_range),
	[ICFAB_A_NODE_TIER_LINKS]	=
		NLA_POLICY_EXACT_LEN(ICFAB_TIER_KINDS * sizeof(u32)),
};

const struct nla_policy icfab_node_del_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_NODE_ID]		= ICFAB_POLICY_NODE_ID,
};

const struct nla_policy icfab_node_get_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_NODE_ID]		= ICFAB_POLICY_NODE_ID,
	[ICFAB_A_STAGED]		= { .type = NLA_FLAG },
};

const struct nla_policy icfab_link_new_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_ID]		= ICFAB_POLICY_LINK_ID,
	[ICFAB_A_LINK_SRC_NODE]		= ICFAB_POLICY_NODE_ID,
	[ICFAB_A_LINK_SRC_PORT]		= ICFAB_POLICY_PORT,
	[ICFAB_A_LINK_DST_NODE]		= ICFAB_POLICY_NODE_ID,
	[ICFAB_A_LINK_DST_PORT]		= ICFAB_POLICY_PORT,
	[ICFAB_A_LINK_BANDWIDTH]	= NLA_POLICY_MIN(NLA_U64, 1),
	[ICFAB_A_LINK_LATENCY_PS]	= { .type = NLA_U64 },
	[ICFAB_A_LINK_CLASS]		= NLA_POLICY_MAX(NLA_U32,
							 ICFAB_LINK_CLASS_MAX),
	[ICFAB_A_LINK_STATE]		= NLA_POLICY_MAX(NLA_U32,
							 ICFAB_LINK_STATE_MAX),
	[ICFAB_A_LINK_UP_DELAY_PS]	= { .type = NLA_U64 },
	[ICFAB_A_LINK_HOLD_FAIL]	= NLA_POLICY_MAX(NLA_U8, 1),
	[ICFAB_A_LINK_SWITCHING]	= NLA_POLICY_MAX(NLA_U8,
							 ICFAB_SWITCHING_MAX),
	[ICFAB_A_LINK_MULTIPATH]	= NLA_POLICY_MAX(NLA_U8,
							 ICFAB_MULTIPATH_MAX),
	[ICFAB_A_LINK_BW_PERMILLE]	=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_permille_range),
	[ICFAB_A_LINK_ENERGY_FJ_PER_BIT] = { .type = NLA_U32 },
	[ICFAB_A_LINK_STATIC_MW]	= { .type = NLA_U32 },
	[ICFAB_A_LINK_EFFICIENCY_PERMILLE] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_efficiency_range),
	[ICFAB_A_LINK_MSG_OVERHEAD_PS]	=
		NLA_POLICY_FULL_RANGE(NLA_U64, &icfab_msg_overhead_range),
	[ICFAB_A_LINK_TIER]		= NLA_POLICY_RANGE(NLA_U8, 1,
							   ICFAB_TIER_MAX),
	[ICFAB_A_LINK_TIER_BYTES]	= NLA_POLICY_MIN(NLA_U64, 1),
};

const struct nla_policy icfab_link_set_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_ID]		= ICFAB_POLICY_LINK_ID,
	[ICFAB_A_LINK_STATE]		= NLA_POLICY_MAX(NLA_U32,
							 ICFAB_LINK_STATE_MAX),
	[ICFAB_A_LINK_UP_DELAY_PS]	= { .type = NLA_U64 },
	[ICFAB_A_LINK_HOLD_FAIL]	= NLA_POLICY_MAX(NLA_U8, 1),
	[ICFAB_A_LINK_SWITCHING]	= NLA_POLICY_MAX(NLA_U8,
							 ICFAB_SWITCHING_MAX),
	[ICFAB_A_LINK_MULTIPATH]	= NLA_POLICY_MAX(NLA_U8,
							 ICFAB_MULTIPATH_MAX),
	[ICFAB_A_LINK_BW_PERMILLE]	=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_permille_range),
};

const struct nla_policy icfab_link_del_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_ID]		= ICFAB_POLICY_LINK_ID,
};

const struct nla_policy icfab_link_get_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_ID]		= ICFAB_POLICY_LINK_ID,
	[ICFAB_A_STAGED]		= { .type = NLA_FLAG },
};

const struct nla_policy icfab_route_set_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_ROUTE_NODE]		= ICFAB_POLICY_NODE_ID,
	[ICFAB_A_ROUTE_DST_FIRST]	= ICFAB_POLICY_NODE_ID,
	[ICFAB_A_ROUTE_PORTS]		= NLA_POLICY_RANGE(NLA_BINARY, 2,
						2 * ICFAB_MAX_NODES),
};

const struct nla_policy icfab_route_sets_set_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_ROUTE_NODE]		= ICFAB_POLICY_NODE_ID,
	[ICFAB_A_ROUTE_SET_FIRST]	= NLA_POLICY_MAX(NLA_U32,
						ICFAB_ROUTE_SETS_MAX),
	[ICFAB_A_ROUTE_SETS]		= { .type = NLA_BINARY,
		.len = U16_MAX / sizeof(struct icfab_route_set) *
		       sizeof(struct icfab_route_set) },
};

const struct nla_policy icfab_route_get_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_ROUTE_NODE]		= ICFAB_POLICY_NODE_ID,
	[ICFAB_A_STAGED]		= { .type = NLA_FLAG },
};

const struct nla_policy icfab_commit_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_FABRIC_GENERATION]	= { .type = NLA_U64 },
};

const struct nla_policy icfab_abort_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
};

static u32 icfab_attr_u32(struct nlattr **attrs, int type, u32 dflt)
{
	return attrs[type] ? nla_get_u32(attrs[type]) : dflt;
}

/*
 * What a dump of this view compares between its parts: the generation for
 * the committed configuration (so staging elsewhere does not disturb it),
 * every change for the staged one. Never 0, which means "unset" to
 * genl_dump_check_consistent().
 */
static u32 icfab_dump_seq(struct icfab_fabric *fabric, struct nlattr **attrs)
{
	lockdep_assert_held(&fabric->lock);

	if (attrs[ICFAB_A_STAGED] && fabric->staged)
		return fabric->change_seq | 1U << 31;
	return (u32)fabric->generation + 1;
}

/* The configuration a read looks at. */
static struct icfab_topo *icfab_view(struct icfab_fabric *fabric,
				     struct nlattr **attrs)
{
	lockdep_assert_held(&fabric->lock);

	if (attrs[ICFAB_A_STAGED] && fabric->staged)
		return fabric->staged;
	return fabric->active;
}

/*
 * Take the lock and the caller's staged configuration. On failure the
 * lock is not held and the extack says why.
 */
struct icfab_topo *icfab_lock_staged(struct icfab_fabric *fabric,
				     struct genl_info *info)
{
	struct icfab_topo *t;

	mutex_lock(&fabric->lock);
	t = icfab_fabric_staged(fabric, info->snd_portid);
	if (IS_ERR(t)) {
		mutex_unlock(&fabric->lock);
		if (PTR_ERR(t) == -EBUSY)
			NL_SET_ERR_MSG(info->extack,
				       "another socket is staging a configuration");
		else
			NL_SET_ERR_MSG(info->extack,
				       "no memory to stage a configuration");
	}
	return t;
}

/* ---- nodes ---- */

/*
 * NODE_TIER_LINKS (its length checked by the policy): link ids, or
 * ICFAB_TIER_NO_LINK, into the model's id + 1, or 0.
 */
static int icfab_node_tier_links(struct icfab_mnode *n,
				 const struct nlattr *a)
{
	u32 ids[ICFAB_TIER_KINDS];
	int k;

	BUILD_BUG_ON(ICFAB_TIER_KINDS != ICFAB_MODEL_TIERS);
	nla_memcpy(ids, a, sizeof(ids));
	for (k = 0; k < ICFAB_TIER_KINDS; k++) {
		if (ids[k] == ICFAB_TIER_NO_LINK)
			continue;
		if (ids[k] >= ICFAB_MAX_LINKS)
			return -EINVAL;
		n->tier_link[k] = ids[k] + 1;
	}
	return 0;
}

int icfab_genl_node_new_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_mnode tmpl = {};
	struct icfab_topo *t;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_NODE_ID) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_NODE_KIND) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_NODE_PORTS))
		return -EINVAL;

	tmpl.kind = nla_get_u32(attrs[ICFAB_A_NODE_KIND]);
	tmpl.nr_ports = nla_get_u32(attrs[ICFAB_A_NODE_PORTS]);
	if (attrs[ICFAB_A_NODE_NAME])
		nla_strscpy(tmpl.name, attrs[ICFAB_A_NODE_NAME],
			    sizeof(tmpl.name));
	if (tmpl.kind == ICFAB_NODE_ENDPOINT) {
		if (attrs[ICFAB_A_NODE_COLORS]) {
			NL_SET_ERR_MSG_ATTR(info->extack,
					    attrs[ICFAB_A_NODE_COLORS],
					    "only switches have a color table");
			return -EINVAL;
		}
		tmpl.mem_bytes = attrs[ICFAB_A_NODE_MEM_BYTES] ?
			nla_get_u64(attrs[ICFAB_A_NODE_MEM_BYTES]) : 0;
		tmpl.dma_engines = icfab_attr_u32(attrs,
						  ICFAB_A_NODE_DMA_ENGINES, 1);
		if (attrs[ICFAB_A_NODE_TIER_LINKS] &&
		    icfab_node_tier_links(&tmpl,
					  attrs[ICFAB_A_NODE_TIER_LINKS])) {
			NL_SET_ERR_MSG_ATTR(info->extack,
					    attrs[ICFAB_A_NODE_TIER_LINKS],
					    "a tier link id beyond the module's links");
			return -EINVAL;
		}
	} else {
		if (attrs[ICFAB_A_NODE_MEM_BYTES] ||
		    attrs[ICFAB_A_NODE_DMA_ENGINES] ||
		    attrs[ICFAB_A_NODE_TIER_LINKS]) {
			NL_SET_ERR_MSG_ATTR(info->extack,
					    attrs[ICFAB_A_NODE_MEM_BYTES] ?:
					    attrs[ICFAB_A_NODE_DMA_ENGINES] ?:
					    attrs[ICFAB_A_NODE_TIER_LINKS],
					    "switches have no device memory, tiers or DMA engines");
			return -EINVAL;
		}
		tmpl.colors = icfab_attr_u32(attrs, ICFAB_A_NODE_COLORS, 0);
	}

	t = icfab_lock_staged(fabric, info);
	if (IS_ERR(t))
		return PTR_ERR(t);
	err = icfab_topo_node_add(t, nla_get_u32(attrs[ICFAB_A_NODE_ID]),
				  &tmpl);
	if (!err)
		fabric->change_seq++;
	mutex_unlock(&fabric->lock);

	if (err == -EEXIST)
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_NODE_ID],
				    "a node with this id is already staged");
	return err;
}

int icfab_genl_node_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_topo *t;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_NODE_ID))
		return -EINVAL;

	t = icfab_lock_staged(fabric, info);
	if (IS_ERR(t))
		return PTR_ERR(t);
	err = icfab_topo_node_del(t, nla_get_u32(attrs[ICFAB_A_NODE_ID]));
	if (!err)
		fabric->change_seq++;
	mutex_unlock(&fabric->lock);

	if (err == -ENOENT)
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_NODE_ID],
				    "no node with this id");
	else if (err == -EBUSY)
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_NODE_ID],
				    "links still use this node");
	return err;
}

/* NODE_TIER_LINKS, only for an endpoint that some tier serves. */
static int icfab_put_tier_links(struct sk_buff *skb,
				const struct icfab_mnode *n)
{
	u32 ids[ICFAB_TIER_KINDS];
	bool any = false;
	int k;

	for (k = 0; k < ICFAB_TIER_KINDS; k++) {
		ids[k] = n->tier_link[k] ? n->tier_link[k] - 1 :
					   ICFAB_TIER_NO_LINK;
		any |= n->tier_link[k] != 0;
	}
	return any ? nla_put(skb, ICFAB_A_NODE_TIER_LINKS, sizeof(ids), ids) :
		     0;
}

static int icfab_fill_node(struct sk_buff *skb, u32 portid, u32 seq,
			   int flags, struct icfab_fabric *fabric,
			   struct netlink_callback *cb, u32 id,
			   const struct icfab_mnode *n)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &icfab_genl_family, flags,
			  ICFAB_CMD_NODE_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (cb)
		genl_dump_check_consistent(cb, hdr);

	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, fabric->id) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_GENERATION,
			      fabric->generation, ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_NODE_ID, id) ||
	    nla_put_u32(skb, ICFAB_A_NODE_KIND, n->kind) ||
	    nla_put_string(skb, ICFAB_A_NODE_NAME, n->name) ||
	    nla_put_u32(skb, ICFAB_A_NODE_PORTS, n->nr_ports))
		goto err_cancel;
	if (n->kind == ICFAB_NODE_ENDPOINT) {
		if (nla_put_u64_64bit(skb, ICFAB_A_NODE_MEM_BYTES,
				      n->mem_bytes, ICFAB_A_PAD) ||
		    nla_put_u32(skb, ICFAB_A_NODE_DMA_ENGINES, n->dma_engines) ||
		    icfab_put_tier_links(skb, n))
			goto err_cancel;
	} else if (nla_put_u32(skb, ICFAB_A_NODE_COLORS, n->colors)) {
		goto err_cancel;
	}
	genlmsg_end(skb, hdr);
	return 0;

err_cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

int icfab_genl_node_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_mnode *n;
	struct sk_buff *msg;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_NODE_ID))
		return -EINVAL;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&fabric->lock);
	n = icfab_topo_node(icfab_view(fabric, attrs),
			    nla_get_u32(attrs[ICFAB_A_NODE_ID]));
	err = n ? icfab_fill_node(msg, info->snd_portid, info->snd_seq, 0,
				  fabric, NULL,
				  nla_get_u32(attrs[ICFAB_A_NODE_ID]), n) :
		  -ENOENT;
	mutex_unlock(&fabric->lock);

	if (err) {
		if (err == -ENOENT)
			NL_SET_ERR_MSG_ATTR(info->extack,
					    attrs[ICFAB_A_NODE_ID],
					    "no node with this id");
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

int icfab_genl_node_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct nlattr **attrs = icfab_genl_dump_attrs(cb);
	struct icfab_fabric *fabric;
	struct icfab_topo *t;
	unsigned long id;	/* cb->args[0]: next node id */
	int err = 0;

	fabric = icfab_genl_fabric(attrs, cb->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	cb->seq = icfab_dump_seq(fabric, attrs);
	t = icfab_view(fabric, attrs);
	for (id = cb->args[0]; id < t->m.nodes_cap; id++) {
		if (!t->m.nodes[id].present)
			continue;
		err = icfab_fill_node(skb, NETLINK_CB(cb->skb).portid,
				      cb->nlh->nlmsg_seq, NLM_F_MULTI, fabric,
				      cb, id, &t->m.nodes[id]);
		if (err)
			break;
	}
	mutex_unlock(&fabric->lock);
	cb->args[0] = id;
	return err && !skb->len ? err : skb->len;
}

/* ---- links ---- */

/*
 * LINK_UP_DELAY_PS and LINK_HOLD_FAIL of LINK_NEW/LINK_SET: staged, and
 * turned into an absolute LINK_UP_AT_PS by the commit that applies them.
 */
static void icfab_link_hold_attrs(struct icfab_mlink *l, struct nlattr **attrs)
{
	if (attrs[ICFAB_A_LINK_UP_DELAY_PS])
		l->up_delay_ps = nla_get_u64(attrs[ICFAB_A_LINK_UP_DELAY_PS]);
	if (attrs[ICFAB_A_LINK_HOLD_FAIL])
		l->hold_fail = nla_get_u8(attrs[ICFAB_A_LINK_HOLD_FAIL]);
}

/*
 * LINK_SWITCHING and LINK_MULTIPATH of LINK_NEW/LINK_SET: the policy
 * bounds them. ICFAB_MULTIPATH_* are the model's values.
 */
static void icfab_link_switching_attr(struct icfab_mlink *l,
				      struct nlattr **attrs)
{
	BUILD_BUG_ON((int)ICFAB_MULTIPATH_FLOW !=
		     (int)ICFAB_MODEL_MULTIPATH_FLOW ||
		     (int)ICFAB_MULTIPATH_SPRAY !=
		     (int)ICFAB_MODEL_MULTIPATH_SPRAY);
	if (attrs[ICFAB_A_LINK_SWITCHING])
		l->cut_through = nla_get_u8(attrs[ICFAB_A_LINK_SWITCHING]) ==
				 ICFAB_SWITCHING_CUT_THROUGH;
	if (attrs[ICFAB_A_LINK_MULTIPATH])
		l->multipath = nla_get_u8(attrs[ICFAB_A_LINK_MULTIPATH]);
}

/*
 * LINK_TIER and LINK_TIER_BYTES of LINK_NEW: both or neither, and a tier
 * port goes from its endpoint to itself (the commit checks the kind of
 * node) with no ports named.
 */
static int icfab_link_tier_attrs(struct icfab_mlink *l, struct nlattr **attrs,
				 struct netlink_ext_ack *extack)
{
	struct nlattr *tier = attrs[ICFAB_A_LINK_TIER];
	struct nlattr *bytes = attrs[ICFAB_A_LINK_TIER_BYTES];

	if (!tier != !bytes) {
		NL_SET_ERR_MSG_ATTR(extack, tier ?: bytes,
				    "LINK_TIER and LINK_TIER_BYTES go together");
		return -EINVAL;
	}
	if (!tier)
		return 0;
	if (l->src != l->dst) {
		NL_SET_ERR_MSG_ATTR(extack, attrs[ICFAB_A_LINK_DST_NODE],
				    "a tier port goes from its endpoint to itself");
		return -EINVAL;
	}
	if (attrs[ICFAB_A_LINK_SRC_PORT] || attrs[ICFAB_A_LINK_DST_PORT]) {
		NL_SET_ERR_MSG_ATTR(extack, attrs[ICFAB_A_LINK_SRC_PORT] ?:
				    attrs[ICFAB_A_LINK_DST_PORT],
				    "a tier port takes no node ports");
		return -EINVAL;
	}
	l->tier = nla_get_u8(tier);
	l->tier_bytes = nla_get_u64(bytes);
	return 0;
}

int icfab_genl_link_new_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_mlink tmpl = {};
	struct icfab_topo *t;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_ID) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_SRC_NODE) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_DST_NODE) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_BANDWIDTH))
		return -EINVAL;
	/* A tier port has no ports; a fabric link needs both. */
	if (!attrs[ICFAB_A_LINK_TIER] &&
	    (GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_SRC_PORT) ||
	     GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_DST_PORT)))
		return -EINVAL;

	tmpl.src = nla_get_u32(attrs[ICFAB_A_LINK_SRC_NODE]);
	tmpl.src_port = icfab_attr_u32(attrs, ICFAB_A_LINK_SRC_PORT, 0);
	tmpl.dst = nla_get_u32(attrs[ICFAB_A_LINK_DST_NODE]);
	tmpl.dst_port = icfab_attr_u32(attrs, ICFAB_A_LINK_DST_PORT, 0);
	tmpl.bandwidth = nla_get_u64(attrs[ICFAB_A_LINK_BANDWIDTH]);
	tmpl.latency_ps = attrs[ICFAB_A_LINK_LATENCY_PS] ?
		nla_get_u64(attrs[ICFAB_A_LINK_LATENCY_PS]) : 0;
	tmpl.class = icfab_attr_u32(attrs, ICFAB_A_LINK_CLASS,
				    ICFAB_LINK_CLASS_OTHER);
	tmpl.state = icfab_attr_u32(attrs, ICFAB_A_LINK_STATE, ICFAB_LINK_UP);
	tmpl.permille = icfab_attr_u32(attrs, ICFAB_A_LINK_BW_PERMILLE, 1000);
	icfab_link_hold_attrs(&tmpl, attrs);
	icfab_link_switching_attr(&tmpl, attrs);
	tmpl.fj_per_bit = icfab_attr_u32(attrs,
					 ICFAB_A_LINK_ENERGY_FJ_PER_BIT, 0);
	tmpl.static_mw = icfab_attr_u32(attrs, ICFAB_A_LINK_STATIC_MW, 0);
	tmpl.eff_permille = icfab_attr_u32(attrs,
					   ICFAB_A_LINK_EFFICIENCY_PERMILLE,
					   1000);
	tmpl.msg_overhead_ps = attrs[ICFAB_A_LINK_MSG_OVERHEAD_PS] ?
		nla_get_u64(attrs[ICFAB_A_LINK_MSG_OVERHEAD_PS]) : 0;
	err = icfab_link_tier_attrs(&tmpl, attrs, info->extack);
	if (err)
		return err;
	if (tmpl.src == tmpl.dst && !tmpl.tier) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_LINK_DST_NODE],
				    "a link cannot join a node to itself");
		return -EINVAL;
	}
	if ((tmpl.state == ICFAB_LINK_DEGRADED) !=
	    !!attrs[ICFAB_A_LINK_BW_PERMILLE]) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_LINK_STATE],
				    "DEGRADED needs BW_PERMILLE, and only it takes one");
		return -EINVAL;
	}

	t = icfab_lock_staged(fabric, info);
	if (IS_ERR(t))
		return PTR_ERR(t);
	if (!icfab_topo_node(t, tmpl.src)) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_LINK_SRC_NODE],
				    "no node with this id is staged");
		err = -ENOENT;
	} else if (!icfab_topo_node(t, tmpl.dst)) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_LINK_DST_NODE],
				    "no node with this id is staged");
		err = -ENOENT;
	} else {
		err = icfab_topo_link_add(t,
				nla_get_u32(attrs[ICFAB_A_LINK_ID]), &tmpl);
		if (err == -EEXIST)
			NL_SET_ERR_MSG_ATTR(info->extack,
					    attrs[ICFAB_A_LINK_ID],
					    "a link with this id is already staged");
	}
	if (!err)
		fabric->change_seq++;
	mutex_unlock(&fabric->lock);
	return err;
}

int icfab_genl_link_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_mlink *l;
	struct icfab_topo *t;
	u32 state;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_ID) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_STATE))
		return -EINVAL;
	state = nla_get_u32(attrs[ICFAB_A_LINK_STATE]);
	if ((state == ICFAB_LINK_DEGRADED) != !!attrs[ICFAB_A_LINK_BW_PERMILLE]) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_LINK_STATE],
				    "DEGRADED needs BW_PERMILLE, and only it takes one");
		return -EINVAL;
	}

	t = icfab_lock_staged(fabric, info);
	if (IS_ERR(t))
		return PTR_ERR(t);
	l = icfab_topo_link(t, nla_get_u32(attrs[ICFAB_A_LINK_ID]));
	if (l) {
		l->state = state;
		l->permille = icfab_attr_u32(attrs, ICFAB_A_LINK_BW_PERMILLE,
					     1000);
		icfab_link_hold_attrs(l, attrs);
		icfab_link_switching_attr(l, attrs);
		fabric->change_seq++;
	}
	mutex_unlock(&fabric->lock);

	if (!l) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_LINK_ID],
				    "no link with this id is staged");
		return -ENOENT;
	}
	return 0;
}

int icfab_genl_link_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_topo *t;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_ID))
		return -EINVAL;

	t = icfab_lock_staged(fabric, info);
	if (IS_ERR(t))
		return PTR_ERR(t);
	err = icfab_topo_link_del(t, nla_get_u32(attrs[ICFAB_A_LINK_ID]));
	if (!err)
		fabric->change_seq++;
	mutex_unlock(&fabric->lock);

	if (err == -ENOENT)
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_LINK_ID],
				    "no link with this id is staged");
	return err;
}

static int icfab_fill_link(struct sk_buff *skb, u32 portid, u32 seq,
			   int flags, struct icfab_fabric *fabric,
			   struct netlink_callback *cb, u32 id,
			   const struct icfab_mlink *l)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &icfab_genl_family, flags,
			  ICFAB_CMD_LINK_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (cb)
		genl_dump_check_consistent(cb, hdr);

	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, fabric->id) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_GENERATION,
			      fabric->generation, ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_LINK_ID, id) ||
	    nla_put_u32(skb, ICFAB_A_LINK_SRC_NODE, l->src) ||
	    nla_put_u32(skb, ICFAB_A_LINK_SRC_PORT, l->src_port) ||
	    nla_put_u32(skb, ICFAB_A_LINK_DST_NODE, l->dst) ||
	    nla_put_u32(skb, ICFAB_A_LINK_DST_PORT, l->dst_port) ||
	    nla_put_u64_64bit(skb, ICFAB_A_LINK_BANDWIDTH, l->bandwidth,
			      ICFAB_A_PAD) ||
	    nla_put_u64_64bit(skb, ICFAB_A_LINK_LATENCY_PS, l->latency_ps,
			      ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_LINK_CLASS, l->class) ||
	    nla_put_u32(skb, ICFAB_A_LINK_STATE, l->state) ||
	    (l->state == ICFAB_LINK_DEGRADED &&
	     nla_put_u32(skb, ICFAB_A_LINK_BW_PERMILLE, l->permille)) ||
	    nla_put_u8(skb, ICFAB_A_LINK_HOLD_FAIL, l->hold_fail) ||
	    nla_put_u8(skb, ICFAB_A_LINK_SWITCHING,
		       l->cut_through ? ICFAB_SWITCHING_CUT_THROUGH :
					ICFAB_SWITCHING_STORE_FORWARD) ||
	    nla_put_u8(skb, ICFAB_A_LINK_MULTIPATH, l->multipath) ||
	    nla_put_u32(skb, ICFAB_A_LINK_ENERGY_FJ_PER_BIT, l->fj_per_bit) ||
	    nla_put_u32(skb, ICFAB_A_LINK_STATIC_MW, l->static_mw) ||
	    nla_put_u32(skb, ICFAB_A_LINK_EFFICIENCY_PERMILLE,
			l->eff_permille ? l->eff_permille : 1000) ||
	    nla_put_u64_64bit(skb, ICFAB_A_LINK_MSG_OVERHEAD_PS,
			      l->msg_overhead_ps, ICFAB_A_PAD) ||
	    (l->tier &&
	     (nla_put_u8(skb, ICFAB_A_LINK_TIER, l->tier) ||
	      nla_put_u64_64bit(skb, ICFAB_A_LINK_TIER_BYTES, l->tier_bytes,
				ICFAB_A_PAD))) ||
	    (l->up_delay_ps &&
	     nla_put_u64_64bit(skb, ICFAB_A_LINK_UP_DELAY_PS, l->up_delay_ps,
			       ICFAB_A_PAD)) ||
	    (l->up_at_ps > icfab_data_now(fabric) &&
	     nla_put_u64_64bit(skb, ICFAB_A_LINK_UP_AT_PS, l->up_at_ps,
			       ICFAB_A_PAD))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

int icfab_genl_link_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_mlink *l;
	struct sk_buff *msg;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_ID))
		return -EINVAL;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&fabric->lock);
	l = icfab_topo_link(icfab_view(fabric, attrs),
			    nla_get_u32(attrs[ICFAB_A_LINK_ID]));
	err = l ? icfab_fill_link(msg, info->snd_portid, info->snd_seq, 0,
				  fabric, NULL,
				  nla_get_u32(attrs[ICFAB_A_LINK_ID]), l) :
		  -ENOENT;
	mutex_unlock(&fabric->lock);

	if (err) {
		if (err == -ENOENT)
			NL_SET_ERR_MSG_ATTR(info->extack,
					    attrs[ICFAB_A_LINK_ID],
					    "no link with this id");
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

int icfab_genl_link_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct nlattr **attrs = icfab_genl_dump_attrs(cb);
	struct icfab_fabric *fabric;
	struct icfab_topo *t;
	unsigned long id;	/* cb->args[0]: next link id */
	int err = 0;

	fabric = icfab_genl_fabric(attrs, cb->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	cb->seq = icfab_dump_seq(fabric, attrs);
	t = icfab_view(fabric, attrs);
	for (id = cb->args[0]; id < t->m.links_cap; id++) {
		if (!t->m.links[id].present)
			continue;
		err = icfab_fill_link(skb, NETLINK_CB(cb->skb).portid,
				      cb->nlh->nlmsg_seq, NLM_F_MULTI, fabric,
				      cb, id, &t->m.links[id]);
		if (err)
			break;
	}
	mutex_unlock(&fabric->lock);
	cb->args[0] = id;
	return err && !skb->len ? err : skb->len;
}

/* ---- routes ---- */

int icfab_genl_route_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_topo *t;
	u32 first, n, end;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_ROUTE_NODE) ||
	    GENL_REQ_ATTR_CHECK(info, ICFAB_A_ROUTE_PORTS))
		return -EINVAL;

	first = icfab_attr_u32(attrs, ICFAB_A_ROUTE_DST_FIRST, 0);
	if (nla_len(attrs[ICFAB_A_ROUTE_PORTS]) % sizeof(u16)) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_ROUTE_PORTS],
				    "ports are __u16: the length must be even");
		return -EINVAL;
	}
	n = nla_len(attrs[ICFAB_A_ROUTE_PORTS]) / sizeof(u16);
	if (check_add_overflow(first, n, &end) || end > ICFAB_MAX_NODES) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_ROUTE_PORTS],
				    "destinations run past the last node id");
		return -ERANGE;
	}

	t = icfab_lock_staged(fabric, info);
	if (IS_ERR(t))
		return PTR_ERR(t);
	/* nla_data() of a binary attribute is only 4-byte aligned: fine. */
	err = icfab_topo_routes_set(t, nla_get_u32(attrs[ICFAB_A_ROUTE_NODE]),
				    first, nla_data(attrs[ICFAB_A_ROUTE_PORTS]),
				    n);
	if (!err)
		fabric->change_seq++;
	mutex_unlock(&fabric->lock);

	if (err == -ENOENT)
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_ROUTE_NODE],
				    "no node with this id is staged");
	return err;
}

/*
 * Whether every set of @sets[0..n-1] has a known mode and 1..8 ports in
 * the port range; else an extack on @attr naming the first bad one.
 */
static int icfab_sets_check(const struct icfab_route_set *sets, u32 n,
			    const struct nlattr *attr,
			    struct netlink_ext_ack *extack)
{
	u32 i, j;

	for (i = 0; i < n; i++) {
		const struct icfab_route_set *s = &sets[i];

		if (s->mode != ICFAB_MULTIPATH_FLOW &&
		    s->mode != ICFAB_MULTIPATH_SPRAY) {
			NL_SET_ERR_MSG_ATTR(extack, attr,
				"a set's mode is neither flow (1) nor spray (2)");
			return -ERANGE;
		}
		if (!s->nr_ports || s->nr_ports > ICFAB_ROUTE_SET_MAX_PORTS) {
			NL_SET_ERR_MSG_ATTR(extack, attr,
				"a set has no ports or more than ICFAB_ROUTE_SET_MAX_PORTS");
			return -ERANGE;
		}
		for (j = 0; j < s->nr_ports; j++)
			if (s->ports[j] >= ICFAB_MAX_PORTS) {
				NL_SET_ERR_MSG_ATTR(extack, attr,
					"a set's port is beyond the module's port limit");
				return -ERANGE;
			}
	}
	return 0;
}

int icfab_genl_route_sets_set_doit(struct sk_buff *skb,
				   struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	const struct icfab_route_set *sets = NULL;
	struct icfab_route_set *copy = NULL;
	struct icfab_fabric *fabric;
	struct icfab_topo *t;
	u32 first, n = 0;
	int err;

	BUILD_BUG_ON(ICFAB_ROUTE_SET_BASE != ICFAB_MODEL_SET_BASE ||
		     ICFAB_ROUTE_SET_MAX_PORTS != ICFAB_MODEL_SET_PORTS ||
		     ICFAB_MAX_PORTS > ICFAB_ROUTE_SET_BASE ||
		     (int)ICFAB_ERR_OBJ_ROUTE_SET != ICFAB_TOPO_ERR_SET ||
		     (int)ICFAB_ERR_OBJ_ROUTE_PORT != ICFAB_TOPO_ERR_ROUTE_PORT);
	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_ROUTE_NODE))
		return -EINVAL;
	first = icfab_attr_u32(attrs, ICFAB_A_ROUTE_SET_FIRST, 0);
	if (attrs[ICFAB_A_ROUTE_SETS]) {
		const struct nlattr *a = attrs[ICFAB_A_ROUTE_SETS];

		if (nla_len(a) % sizeof(*sets)) {
			NL_SET_ERR_MSG_ATTR(info->extack, a,
					    "sets are struct icfab_route_set: the length must be a multiple of its size");
			return -EINVAL;
		}
		n = nla_len(a) / sizeof(*sets);
		if (first + n > ICFAB_ROUTE_SETS_MAX) {
			NL_SET_ERR_MSG_ATTR(info->extack, a,
					    "sets run past ICFAB_ROUTE_SETS_MAX");
			return -ERANGE;
		}
		/* nla_data() is only 4-byte aligned: copy to read u16s. */
		copy = kmemdup(nla_data(a), nla_len(a), GFP_KERNEL);
		if (n && !copy)
			return -ENOMEM;
		err = icfab_sets_check(copy, n, a, info->extack);
		if (err)
			goto out;
		sets = copy;
	}

	t = icfab_lock_staged(fabric, info);
	if (IS_ERR(t)) {
		err = PTR_ERR(t);
		goto out;
	}
	err = icfab_topo_sets_set(t, nla_get_u32(attrs[ICFAB_A_ROUTE_NODE]),
				  first, sets, n);
	if (!err)
		fabric->change_seq++;
	mutex_unlock(&fabric->lock);

	if (err == -ENOENT)
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_ROUTE_NODE],
				    "no node with this id is staged");
	else if (err == -ERANGE)
		NL_SET_ERR_MSG_ATTR(info->extack,
				    attrs[ICFAB_A_ROUTE_SET_FIRST],
				    "the first set would leave a gap after the node's sets");
out:
	kfree(copy);
	return err;
}

/* One message: @node's routes for destinations first..first+n-1. */
static int icfab_fill_routes(struct sk_buff *skb, u32 portid, u32 seq,
			     int flags, struct icfab_fabric *fabric,
			     struct netlink_callback *cb, u32 node,
			     const struct icfab_mnode *nd, u32 first, u32 n)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &icfab_genl_family, flags,
			  ICFAB_CMD_ROUTE_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (cb)
		genl_dump_check_consistent(cb, hdr);

	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, fabric->id) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_GENERATION,
			      fabric->generation, ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_ROUTE_NODE, node) ||
	    nla_put_u32(skb, ICFAB_A_ROUTE_DST_FIRST, first) ||
	    (n && nla_put(skb, ICFAB_A_ROUTE_PORTS, n * sizeof(u16),
			  nd->routes + first))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* Next-hop sets per ROUTE_GET message: 1152 bytes of them. */
#define ICFAB_ROUTE_SETS_CHUNK	64

/* One message: @node's next-hop sets first..first+n-1. */
static int icfab_fill_sets(struct sk_buff *skb, u32 portid, u32 seq,
			   int flags, struct icfab_fabric *fabric,
			   struct netlink_callback *cb, u32 node,
			   const struct icfab_mnode *nd, u32 first, u32 n)
{
	struct icfab_route_set *out;
	struct nlattr *a;
	void *hdr;
	u32 i, j;

	hdr = genlmsg_put(skb, portid, seq, &icfab_genl_family, flags,
			  ICFAB_CMD_ROUTE_GET);
	if (!hdr)
		return -EMSGSIZE;
	genl_dump_check_consistent(cb, hdr);
	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, fabric->id) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_GENERATION,
			      fabric->generation, ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_ROUTE_NODE, node) ||
	    nla_put_u32(skb, ICFAB_A_ROUTE_SET_FIRST, first))
		goto cancel;
	a = nla_reserve(skb, ICFAB_A_ROUTE_SETS, n * sizeof(*out));
	if (!a)
		goto cancel;
	out = nla_data(a);
	memset(out, 0, n * sizeof(*out));
	for (i = 0; i < n; i++) {
		const struct icfab_mset *s = &nd->sets[first + i];

		out[i].mode = s->mode;
		out[i].nr_ports = s->nr;
		for (j = 0; j < s->nr && j < ICFAB_ROUTE_SET_MAX_PORTS; j++)
			out[i].ports[j] = s->ports[j];
	}
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/*
 * ROUTE_GET is always a dump, in chunks of ICFAB_ROUTE_CHUNK destinations:
 * of one node's table with ICFAB_A_ROUTE_NODE, of every table without.
 * A node's next-hop sets follow its table, ICFAB_ROUTE_SETS_CHUNK a
 * message (ROUTE_SET_FIRST, ROUTE_SETS, no ROUTE_PORTS). Nodes without a
 * table or sets send nothing.
 */
int icfab_genl_route_get_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	struct nlattr **attrs = icfab_genl_dump_attrs(cb);
	struct icfab_fabric *fabric;
	struct icfab_topo *t;
	unsigned long node = cb->args[0], first = cb->args[1];
	unsigned long sfirst = cb->args[2];
	unsigned long last;
	int err = 0;

	fabric = icfab_genl_fabric(attrs, cb->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	cb->seq = icfab_dump_seq(fabric, attrs);
	t = icfab_view(fabric, attrs);
	last = t->m.nodes_cap;
	if (attrs[ICFAB_A_ROUTE_NODE]) {
		u32 only = nla_get_u32(attrs[ICFAB_A_ROUTE_NODE]);

		if (!icfab_topo_node(t, only)) {
			mutex_unlock(&fabric->lock);
			NL_SET_ERR_MSG_ATTR(cb->extack, attrs[ICFAB_A_ROUTE_NODE],
					    "no node with this id");
			return -ENOENT;
		}
		node = max_t(unsigned long, node, only);
		last = only + 1;
	}

	for (; node < last; node++, first = 0, sfirst = 0) {
		const struct icfab_mnode *nd = &t->m.nodes[node];

		if (!nd->present)
			continue;
		for (; first < nd->routes_len; first += ICFAB_ROUTE_CHUNK) {
			u32 n = min_t(u32, ICFAB_ROUTE_CHUNK,
				      nd->routes_len - first);

			err = icfab_fill_routes(skb, NETLINK_CB(cb->skb).portid,
						cb->nlh->nlmsg_seq, NLM_F_MULTI,
						fabric, cb, node, nd, first, n);
			if (err)
				goto out;
		}
		for (; sfirst < nd->nr_sets; sfirst += ICFAB_ROUTE_SETS_CHUNK) {
			u32 n = min_t(u32, ICFAB_ROUTE_SETS_CHUNK,
				      nd->nr_sets - sfirst);

			err = icfab_fill_sets(skb, NETLINK_CB(cb->skb).portid,
					      cb->nlh->nlmsg_seq, NLM_F_MULTI,
					      fabric, cb, node, nd, sfirst, n);
			if (err)
				goto out;
		}
	}
out:
	mutex_unlock(&fabric->lock);
	cb->args[0] = node;
	cb->args[1] = first;
	cb->args[2] = sfirst;
	return err && !skb->len ? err : skb->len;
}

/* ---- commit and abort ---- */

/* Only the socket that staged a configuration may commit or abort it. */
static int icfab_check_owner(struct icfab_fabric *fabric,
			     struct genl_info *info)
{
	lockdep_assert_held(&fabric->lock);

	if (!fabric->staged) {
		NL_SET_ERR_MSG(info->extack, "nothing is staged");
		return -ENOENT;
	}
	if (fabric->staged_portid != info->snd_portid) {
		NL_SET_ERR_MSG(info->extack,
			       "another socket is staging a configuration");
		return -EBUSY;
	}
	return 0;
}

/*
 * A refused commit's report (kmod/commit.c) as the extack. Its messages
 * are static strings, as safe to point at as NL_SET_ERR_MSG()'s literals.
 * A kernel that formats extack messages also names the circuit.
 */
static void icfab_commit_err_extack(struct netlink_ext_ack *extack,
				    const struct icfab_commit_err *cerr)
{
	const struct icfab_err_cookie *c = &cerr->cookie;

	if (cerr->has_cookie) {
		icfab_set_cookie(extack, c->obj, c->id, c->id2);
		/* The member's port of ICFAB_ERR_OBJ_ROUTE_PORT, else 0. */
		memcpy(extack->cookie + offsetof(struct icfab_err_cookie, id3),
		       &c->id3, sizeof(c->id3));
	}
#ifdef NL_SET_ERR_MSG_FMT
	if (cerr->has_cookie && c->obj == ICFAB_ERR_OBJ_CIRCUIT) {
		NL_SET_ERR_MSG_FMT(extack,
				   "circuit %u: node %u no longer fits it; close it first",
				   c->id, c->id2);
		return;
	}
#endif
	if (cerr->msg) {
		do_trace_netlink_extack(cerr->msg);
		extack->_msg = cerr->msg;
	}
}

int icfab_genl_commit_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct icfab_commit_err cerr = {};
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct icfab_topo *old;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	err = icfab_check_owner(fabric, info);
	if (err)
		goto out_unlock;
	if (attrs[ICFAB_A_FABRIC_GENERATION] &&
	    nla_get_u64(attrs[ICFAB_A_FABRIC_GENERATION]) !=
	    fabric->generation) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    attrs[ICFAB_A_FABRIC_GENERATION],
				    "the committed generation is not the expected one");
		err = -ESTALE;
		goto out_unlock;
	}
	old = __icfab_fabric_commit(fabric, fabric->staged, &cerr);
	if (IS_ERR(old)) {
		err = PTR_ERR(old);
		icfab_commit_err_extack(info->extack, &cerr);
		goto out_unlock;
	}
	/* The staged configuration is the committed one now. */
	icfab_fabric_unstage(fabric);
	mutex_unlock(&fabric->lock);

	icfab_topo_destroy(old);
	icfab_genl_notify_fabric(fabric);
	return 0;

out_unlock:
	mutex_unlock(&fabric->lock);
	return err;
}

int icfab_genl_abort_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct icfab_topo *staged = NULL;
	struct icfab_fabric *fabric;
	int err;

	fabric = icfab_genl_fabric(info->attrs, info->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	err = icfab_check_owner(fabric, info);
	if (!err)
		staged = icfab_fabric_unstage(fabric);
	mutex_unlock(&fabric->lock);

	icfab_topo_destroy(staged);
	return err;
}
