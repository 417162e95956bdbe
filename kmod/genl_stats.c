// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: per-link statistics, and the STATS_GET and STATS_RESET commands.
 *
 * The engine counts, per link, the bytes and segments it carried, the
 * time it spent serialising them and the longest wait of a segment
 * (struct icfab_engine_link). An engine lives only while contexts are
 * attached; when the last one leaves, icfab_stats_fold() adds its
 * counters into the fabric's link_stats, so they survive it, and a read
 * adds the live engine's to those.
 *
 * Counters belong to one committed configuration (stats_generation): a
 * link id may name another link after a commit, so the first use after
 * one starts them from zero. A commit while an engine exists (a live
 * one) keeps the link ids and the counters (icfab_stats_keep()), so the
 * live engine always runs on configuration stats_generation.
 *
 * Energy (ICFAB_F_LINK_ENERGY) is not counted but derived at each read
 * from the committed link's figures: the bytes for the energy per bit,
 * and the fabric time the counters cover for the static power. That
 * time is the sum of the engines' clocks since the counters began: an
 * engine's clock starts at 0 and stops when the last context leaves.
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <net/genetlink.h>

#include <linux/icfab_genl.h>

#include "icfab.h"

/* Not NLA_POLICY_MAX: its bound is an s16. Not const: 6.1's is not. */
static struct netlink_range_validation icfab_stats_link_range = {
	.max = ICFAB_MAX_LINKS - 1,
};

const struct nla_policy icfab_stats_get_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_ID]		=
		NLA_POLICY_FULL_RANGE(NLA_U32, &icfab_stats_link_range),
};

const struct nla_policy icfab_stats_reset_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
};

/* The fabric time counted (STATS_ELAPSED_PS) starts again from now. */
static void icfab_stats_restart_clock(struct icfab_fabric *fabric)
{
	lockdep_assert_held(&fabric->lock);
	fabric->stats_elapsed_ps = 0;
	fabric->stats_base_ps = fabric->stats_engine ?
				fabric->stats_engine->now_ps : 0;
}

/* Start from zero if a commit happened since the counters began. */
static void icfab_stats_sync(struct icfab_fabric *fabric)
{
	lockdep_assert_held(&fabric->lock);

	if (fabric->stats_generation == fabric->generation)
		return;
	if (fabric->link_stats)
		memset(fabric->link_stats, 0,
		       array_size(fabric->nr_link_stats,
				  sizeof(*fabric->link_stats)));
	fabric->stats_incomplete = false;
	fabric->stats_generation = fabric->generation;
	icfab_stats_restart_clock(fabric);
}

/*
 * A live commit (ICFAB_F_LIVE_COMMIT) just bumped the generation: its
 * links keep their ids and the engine its counters, so the counters
 * carry on instead of starting from zero.
 */
void icfab_stats_keep(struct icfab_fabric *fabric)
{
	lockdep_assert_held(&fabric->lock);
	fabric->stats_generation = fabric->generation;
}

/*
 * @e is @fabric's new engine: make it fire the tracepoints, and make room
 * to fold its counters into when it goes. Without the room, they are
 * readable while it lives and its fold reports them as incomplete.
 */
void icfab_stats_attach(struct icfab_fabric *fabric, struct icfab_engine *e)
{
	u32 n = e->topo->links_cap;
	struct icfab_link_stats *ls;

	lockdep_assert_held(&fabric->lock);
	icfab_trace_engine(fabric, e);
	icfab_stats_sync(fabric);
	fabric->stats_engine = e;
	fabric->stats_base_ps = e->now_ps;
	if (n <= fabric->nr_link_stats)
		return;
	ls = kvcalloc(n, sizeof(*ls), GFP_KERNEL);
	if (!ls)
		return;
	if (fabric->link_stats)
		memcpy(ls, fabric->link_stats,
		       array_size(fabric->nr_link_stats, sizeof(*ls)));
	kvfree(fabric->link_stats);
	fabric->link_stats = ls;
	fabric->nr_link_stats = n;
}

/* @e, @fabric's engine, is about to be freed: keep what it counted. */
void icfab_stats_fold(struct icfab_fabric *fabric, struct icfab_engine *e)
{
	u32 i;

	lockdep_assert_held(&fabric->lock);
	icfab_stats_sync(fabric);
	for (i = 0; i < e->topo->links_cap; i++) {
		const struct icfab_engine_link *el = &e->links[i];
		struct icfab_link_stats *ls;

		if (i >= fabric->nr_link_stats) {
			if (el->segments)
				fabric->stats_incomplete = true;
			continue;
		}
		ls = &fabric->link_stats[i];
		ls->bytes += el->bytes;
		ls->segments += el->segments;
		ls->busy_ps += el->busy_ps;
		ls->max_queued_ps = max(ls->max_queued_ps, el->max_queued_ps);
	}
	if (fabric->stats_engine == e) {
		fabric->stats_elapsed_ps += e->now_ps - fabric->stats_base_ps;
		fabric->stats_base_ps = 0;
		fabric->stats_engine = NULL;
	}
}

/* Module exit, after the family is gone: nothing reads them any more. */
void icfab_stats_exit(void)
{
	unsigned int i;

	for (i = 0; i < icfab_nr_fabrics; i++) {
		struct icfab_fabric *fabric = icfab_fabric_get_by_id(i);

		if (!fabric)
			continue;
		kvfree(fabric->link_stats);
		fabric->link_stats = NULL;
		fabric->nr_link_stats = 0;
	}
}

/* FABRIC_GET's HELD_PID and HELD_PS (see data.c's horizon). */
int icfab_stats_put_held(struct sk_buff *skb, struct icfab_fabric *fabric)
{
	u64 held_ps;
	u32 pid;

	mutex_lock(&fabric->lock);
	pid = fabric->held_pid;
	held_ps = fabric->held_ps;
	mutex_unlock(&fabric->lock);
	if (nla_put_u32(skb, ICFAB_A_FABRIC_HELD_PID, pid) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_HELD_PS, held_ps,
			      ICFAB_A_PAD))
		return -EMSGSIZE;
	return 0;
}

/* Link @id's counters: folded plus live. */
static void icfab_stats_read(struct icfab_fabric *fabric, u32 id,
			     struct icfab_link_stats *v)
{
	const struct icfab_engine *e = fabric->stats_engine;

	lockdep_assert_held(&fabric->lock);
	memset(v, 0, sizeof(*v));
	if (id < fabric->nr_link_stats)
		*v = fabric->link_stats[id];
	if (e && id < e->topo->links_cap) {
		const struct icfab_engine_link *el = &e->links[id];

		v->bytes += el->bytes;
		v->segments += el->segments;
		v->busy_ps += el->busy_ps;
		v->max_queued_ps = max(v->max_queued_ps, el->max_queued_ps);
	}
}

/* The fabric time the counters cover: engines gone, plus the live one. */
static u64 icfab_stats_elapsed(struct icfab_fabric *fabric)
{
	const struct icfab_engine *e = fabric->stats_engine;

	lockdep_assert_held(&fabric->lock);
	return fabric->stats_elapsed_ps +
	       (e ? e->now_ps - fabric->stats_base_ps : 0);
}

/* a x b, or U64_MAX when it does not fit (see ICFAB_F_LINK_ENERGY). */
static u64 icfab_stats_mul(u64 a, u64 b)
{
	u64 r;

	return check_mul_overflow(a, b, &r) ? U64_MAX : r;
}

/*
 * The energy attributes of link @id (ICFAB_F_LINK_ENERGY), and its tier
 * when it is a tier's port (ICFAB_F_MEMORY_TIERS).
 */
static int icfab_put_energy(struct sk_buff *skb, struct icfab_fabric *fabric,
			    u32 id, const struct icfab_link_stats *v)
{
	const struct icfab_mlink *l = &fabric->active->m.links[id];
	u64 elapsed_ps = icfab_stats_elapsed(fabric);
	/* An overflowed U64_MAX stays one unless the factor is 0. */
	u64 dyn_fj = icfab_stats_mul(icfab_stats_mul(v->bytes, 8),
				     l->fj_per_bit);

	if (nla_put_u32(skb, ICFAB_A_LINK_CLASS, l->class) ||
	    (l->tier && nla_put_u8(skb, ICFAB_A_LINK_TIER, l->tier)) ||
	    nla_put_u64_64bit(skb, ICFAB_A_STATS_ENERGY_FJ, dyn_fj,
			      ICFAB_A_PAD) ||
	    nla_put_u64_64bit(skb, ICFAB_A_STATS_STATIC_FJ,
			      icfab_stats_mul(elapsed_ps, l->static_mw),
			      ICFAB_A_PAD) ||
	    nla_put_u64_64bit(skb, ICFAB_A_STATS_ELAPSED_PS, elapsed_ps,
			      ICFAB_A_PAD))
		return -EMSGSIZE;
	return 0;
}

static int icfab_fill_stats(struct sk_buff *skb, u32 portid, u32 seq,
			    int flags, struct icfab_fabric *fabric,
			    struct netlink_callback *cb, u32 id)
{
	struct icfab_link_stats v;
	void *hdr;

	lockdep_assert_held(&fabric->lock);
	hdr = genlmsg_put(skb, portid, seq, &icfab_genl_family, flags,
			  ICFAB_CMD_STATS_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (cb)
		genl_dump_check_consistent(cb, hdr);

	icfab_stats_read(fabric, id, &v);
	if (nla_put_u32(skb, ICFAB_A_FABRIC_ID, fabric->id) ||
	    nla_put_u64_64bit(skb, ICFAB_A_FABRIC_GENERATION,
			      fabric->generation, ICFAB_A_PAD) ||
	    nla_put_u32(skb, ICFAB_A_LINK_ID, id) ||
	    nla_put_u64_64bit(skb, ICFAB_A_STATS_BYTES, v.bytes,
			      ICFAB_A_PAD) ||
	    nla_put_u64_64bit(skb, ICFAB_A_STATS_SEGMENTS, v.segments,
			      ICFAB_A_PAD) ||
	    nla_put_u64_64bit(skb, ICFAB_A_STATS_BUSY_PS, v.busy_ps,
			      ICFAB_A_PAD) ||
	    nla_put_u64_64bit(skb, ICFAB_A_STATS_MAX_QUEUED_PS,
			      v.max_queued_ps, ICFAB_A_PAD) ||
	    nla_put_u8(skb, ICFAB_A_STATS_INCOMPLETE,
		       fabric->stats_incomplete) ||
	    icfab_put_energy(skb, fabric, id, &v)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static bool icfab_stats_link_exists(struct icfab_fabric *fabric, u32 id)
{
	const struct icfab_mtopo *m = &fabric->active->m;

	return id < m->links_cap && m->links[id].present;
}

int icfab_genl_stats_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct icfab_fabric *fabric;
	struct sk_buff *msg;
	u32 id;
	int err;

	fabric = icfab_genl_fabric(attrs, info->extack);
	if (!fabric)
		return -ENODEV;
	if (GENL_REQ_ATTR_CHECK(info, ICFAB_A_LINK_ID))
		return -EINVAL;
	id = nla_get_u32(attrs[ICFAB_A_LINK_ID]);

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&fabric->lock);
	icfab_stats_sync(fabric);
	err = icfab_stats_link_exists(fabric, id) ?
	      icfab_fill_stats(msg, info->snd_portid, info->snd_seq, 0,
			       fabric, NULL, id) : -ENOENT;
	mutex_unlock(&fabric->lock);

	if (err) {
		if (err == -ENOENT)
			NL_SET_ERR_MSG_ATTR(info->extack, attrs[ICFAB_A_LINK_ID],
					    "no link with this id");
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

/*
 * A dump's request is checked here, before the first part: an error from
 * .start is the request's answer, with its extack, where one from the
 * dump itself would only end it.
 */
int icfab_genl_stats_get_start(struct netlink_callback *cb)
{
	struct nlattr **attrs = icfab_genl_dump_attrs(cb);

	if (!icfab_genl_fabric(attrs, cb->extack))
		return -ENODEV;
	if (attrs[ICFAB_A_LINK_ID]) {
		NL_SET_ERR_MSG_ATTR(cb->extack, attrs[ICFAB_A_LINK_ID],
				    "a dump is of every link: ask for one without NLM_F_DUMP");
		return -EINVAL;
	}
	return 0;
}

int icfab_genl_stats_get_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	struct nlattr **attrs = icfab_genl_dump_attrs(cb);
	struct icfab_fabric *fabric;
	const struct icfab_mtopo *m;
	unsigned long id;	/* cb->args[0]: next link id */
	int err = 0;

	fabric = icfab_genl_fabric(attrs, cb->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	icfab_stats_sync(fabric);
	/* A dump that spans a commit is flagged NLM_F_DUMP_INTR. */
	cb->seq = (u32)fabric->generation + 1;
	m = &fabric->active->m;
	for (id = cb->args[0]; id < m->links_cap; id++) {
		if (!m->links[id].present)
			continue;
		err = icfab_fill_stats(skb, NETLINK_CB(cb->skb).portid,
				       cb->nlh->nlmsg_seq, NLM_F_MULTI, fabric,
				       cb, id);
		if (err)
			break;
	}
	mutex_unlock(&fabric->lock);
	cb->args[0] = id;
	return err && !skb->len ? err : skb->len;
}

int icfab_genl_stats_reset_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct icfab_fabric *fabric;

	fabric = icfab_genl_fabric(info->attrs, info->extack);
	if (!fabric)
		return -ENODEV;

	mutex_lock(&fabric->lock);
	icfab_stats_sync(fabric);
	if (fabric->link_stats)
		memset(fabric->link_stats, 0,
		       array_size(fabric->nr_link_stats,
				  sizeof(*fabric->link_stats)));
	if (fabric->stats_engine)
		icfab_engine_reset_stats(fabric->stats_engine);
	fabric->stats_incomplete = false;
	icfab_stats_restart_clock(fabric);
	mutex_unlock(&fabric->lock);
	return 0;
}
