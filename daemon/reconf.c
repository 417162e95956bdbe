// SPDX-License-Identifier: GPL-2.0
/*
 * Runtime changes of the daemon's model, applied to the module as live
 * commits (ICFAB_F_LIVE_COMMIT): link and node faults, and OCS
 * reconfigurations.
 *
 * Each one is the same transaction: remember the links, change them in
 * the model, recompute the routes (topo_route() avoids DOWN links and
 * leaves unreachable pairs without an entry), stage the difference and
 * commit it (fabric_sync()). When anything fails, the links are put back
 * and routed again, so the model is what it was and still matches the
 * module, which a failed commit leaves unchanged too.
 *
 * An OCS reconfiguration re-ends the link pair of every changed input
 * port: its two link ids stay, their far ends move to the new output
 * port, and they are staged (LINK_DEL + LINK_NEW) with LINK_UP_DELAY_PS =
 * the switch's delay and LINK_HOLD_FAIL = its policy. The module keeps
 * them dark from the commit's fabric time T (FABRIC_COMMIT_PS) until
 * T + delay; the routes already use them, so traffic that meets them
 * waits (hold) or fails with -ENETDOWN (fail). The module holds the
 * truth: LINK_UP_AT_PS says until when a circuit is dark, and a
 * restarted daemon reads the permutation back from the links' ends
 * (reconf_adopt_ocs()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icfabd.h"
#include <icfab/ocs.h>

struct snapshot {
	struct topo_link *links;
	uint32_t nr_links;
	uint8_t *unreach;		/* [src * n + dst]: no way there */
};

static const char *name_of(const struct topo *t, uint32_t node)
{
	return node < t->nr_nodes ? t->nodes[node].name : "?";
}

/* Endpoint pairs the tables do not carry to their destination. */
static uint8_t *unreachable_map(const struct topo *t)
{
	uint32_t n = t->nr_nodes, s, d;
	uint8_t *m = calloc((size_t)n * n + 1, 1);

	if (!m)
		return NULL;
	for (s = 0; s < n; s++) {
		if (t->nodes[s].kind != ICFAB_NODE_ENDPOINT)
			continue;
		for (d = 0; d < n; d++)
			if (d != s && t->nodes[d].kind == ICFAB_NODE_ENDPOINT)
				m[(size_t)s * n + d] = topo_route_hops(t, s, d) < 0;
	}
	return m;
}

static int snap_take(const struct topo *t, struct snapshot *sn)
{
	sn->nr_links = t->nr_links;
	sn->links = malloc((t->nr_links + 1) * sizeof(*sn->links));
	sn->unreach = unreachable_map(t);
	if (!sn->links || !sn->unreach) {
		free(sn->links);
		free(sn->unreach);
		return -ENOMEM;
	}
	memcpy(sn->links, t->links, t->nr_links * sizeof(*sn->links));
	return 0;
}

static void snap_free(struct snapshot *sn)
{
	free(sn->links);
	free(sn->unreach);
}

/* Put the links back and route again: the model is as it was. */
static void snap_restore(struct topo *t, const struct snapshot *sn)
{
	struct topo_err err = { "" };

	memcpy(t->links, sn->links, sn->nr_links * sizeof(*sn->links));
	if (topo_route(t, &err))
		log_err("routing the restored model: %s", err.msg);
}

/* Count the unreachable pairs, the new ones, and name a few of those. */
static void reach_report(const struct topo *t, const struct snapshot *sn,
			 struct reconf_result *res)
{
	uint8_t *now = unreachable_map(t);
	uint32_t n = t->nr_nodes, s, d, shown = 0;
	size_t off = 0;

	res->pairs[0] = '\0';
	if (!now)
		return;
	for (s = 0; s < n; s++)
		for (d = 0; d < n; d++) {
			size_t i = (size_t)s * n + d;

			if (!now[i])
				continue;
			res->unreachable++;
			if (sn->unreach[i])
				continue;
			res->newly_unreachable++;
			if (shown < RECONF_PAIRS_SHOWN &&
			    off + 2 * ICFAB_NAME_MAX + 4 < sizeof(res->pairs)) {
				off += snprintf(res->pairs + off,
						sizeof(res->pairs) - off,
						"%s%s->%s", shown ? "," : "",
						name_of(t, s), name_of(t, d));
				shown++;
			}
		}
	for (s = 0; s < n; s++)
		for (d = 0; d < n; d++)
			res->reachable_again += sn->unreach[(size_t)s * n + d] &&
						!now[(size_t)s * n + d];
	free(now);
}

/* Route the changed model and commit it; on failure restore it. */
static int commit(struct topo *t, uint32_t fabric_id,
		  const struct snapshot *sn, struct reconf_result *res,
		  char *why, size_t len)
{
	struct topo_err err = { "" };
	struct fabric_result fr;
	int ret;

	ret = topo_route(t, &err);
	if (ret) {
		snprintf(why, len, "recomputing routes: %s",
			 err.msg[0] ? err.msg : strerror(-ret));
		snap_restore(t, sn);
		return ret;
	}
	ret = fabric_sync(fabric_id, t, &fr, why, len);
	if (ret) {
		snap_restore(t, sn);
		return ret;
	}
	res->gen_before = fr.gen_before;
	res->gen_after = fr.gen_after;
	res->commit_ps = fr.commit_ps;
	res->route_rows = fr.diff.route_rows;
	res->committed = fr.gen_after != fr.gen_before;
	reach_report(t, sn, res);
	return 0;
}

static void add_link(struct reconf_result *res, uint32_t id)
{
	if (res->nr_links < RECONF_MAX_LINKS)
		res->links[res->nr_links] = id;
	res->nr_links++;
}

/* Set link @id's state in the model; counts it when it changes. */
static void set_state(struct topo *t, uint32_t id, enum proto_fault_op op,
		      uint32_t permille, struct reconf_result *res)
{
	struct topo_link *l = &t->links[id];
	uint32_t state = op == PROTO_FAULT_DOWN ? ICFAB_LINK_DOWN :
			 op == PROTO_FAULT_UP ? ICFAB_LINK_UP :
			 ICFAB_LINK_DEGRADED;

	if (l->state == state &&
	    (state != ICFAB_LINK_DEGRADED || l->bw_permille == permille))
		return;
	topo_link_set_state(t, id, state, permille);
	add_link(res, id);
}

const char *reconf_op_name(enum proto_fault_op op)
{
	return op == PROTO_FAULT_DOWN ? "down" :
	       op == PROTO_FAULT_UP ? "up" : "degrade";
}

/* The links a fault takes: a link's cable, or every link of a node. */
struct fault {
	enum proto_fault_op op;
	uint32_t permille;		/* DEGRADE */
	uint32_t link;			/* both directions, or TOPO_NONE */
	uint32_t node;			/* from or to it, or TOPO_NONE */
};

static void fault_mark(struct topo *t, const struct fault *f,
		       struct reconf_result *res)
{
	uint32_t i, peer;

	if (f->link != TOPO_NONE) {
		/* A fault takes the cable: both directions. */
		set_state(t, f->link, f->op, f->permille, res);
		peer = t->links[f->link].peer;
		if (peer < t->nr_links)
			set_state(t, peer, f->op, f->permille, res);
		return;
	}
	for (i = 0; i < t->nr_links; i++)
		if (t->links[i].src_node == f->node ||
		    t->links[i].dst_node == f->node)
			set_state(t, i, f->op, 0, res);
}

/*
 * Apply @f to @t and commit the links it changed; when it changed none,
 * report what is reachable instead.
 */
static int fault_commit(struct topo *t, uint32_t fabric_id,
			const struct fault *f, struct reconf_result *res,
			char *why, size_t len)
{
	struct snapshot sn;
	int ret;

	ret = snap_take(t, &sn);
	if (ret) {
		snprintf(why, len, "%s", strerror(-ret));
		return ret;
	}
	fault_mark(t, f, res);
	ret = res->nr_links ? commit(t, fabric_id, &sn, res, why, len) : 0;
	if (!ret && !res->nr_links)
		reach_report(t, &sn, res);
	snap_free(&sn);
	return ret;
}

int reconf_fault_link(struct topo *t, uint32_t fabric_id, uint32_t link,
		      enum proto_fault_op op, uint32_t permille,
		      struct reconf_result *res, char *why, size_t len)
{
	memset(res, 0, sizeof(*res));
	if (link >= t->nr_links) {
		snprintf(why, len, "link %u: no such link (the fabric has links 0..%u)",
			 link, t->nr_links ? t->nr_links - 1 : 0);
		return -ENOENT;
	}
	if (op == PROTO_FAULT_DEGRADE && (permille < 1 || permille > 999)) {
		snprintf(why, len, "degrade: permille %u out of 1..999", permille);
		return -EINVAL;
	}
	return fault_commit(t, fabric_id, &(struct fault){
		.op = op, .permille = permille, .link = link, .node = TOPO_NONE,
	}, res, why, len);
}

int reconf_fault_node(struct topo *t, uint32_t fabric_id, uint32_t node,
		      enum proto_fault_op op, struct reconf_result *res,
		      char *why, size_t len)
{
	memset(res, 0, sizeof(*res));
	if (node >= t->nr_nodes) {
		snprintf(why, len, "node %u: no such node (the fabric has nodes 0..%u)",
			 node, t->nr_nodes ? t->nr_nodes - 1 : 0);
		return -ENOENT;
	}
	if (op == PROTO_FAULT_DEGRADE) {
		snprintf(why, len, "node '%s': a node is down or up, not degraded",
			 t->nodes[node].name);
		return -EINVAL;
	}
	return fault_commit(t, fabric_id, &(struct fault){
		.op = op, .link = TOPO_NONE, .node = node,
	}, res, why, len);
}

int reconf_ocs_apply(struct topo *t, uint32_t fabric_id, struct ocs *o,
		     const uint32_t *perm, uint32_t nr,
		     struct reconf_result *res, char *why, size_t len)
{
	struct topo_err err = { "" };
	struct ocs_link_plan lp;
	struct ocs_plan plan;
	struct snapshot sn;
	uint32_t k;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = ocs_plan(o, perm, nr, 0, &plan, &err);
	if (ret) {
		snprintf(why, len, "%s", err.msg[0] ? err.msg : strerror(-ret));
		return ret;
	}
	ret = ocs_plan_links(t, o, &plan, &lp, &err);
	if (ret) {
		snprintf(why, len, "%s", err.msg[0] ? err.msg : strerror(-ret));
		ocs_plan_free(&plan);
		return ret;
	}
	res->delay_ps = plan.delay_ps;
	res->nr_changes = plan.nr_changes;
	if (plan.noop) {
		ocs_link_plan_free(&lp);
		ocs_plan_free(&plan);
		return 0;
	}
	ret = snap_take(t, &sn);
	if (ret) {
		snprintf(why, len, "%s", strerror(-ret));
		goto out;
	}
	/*
	 * down[] and up[] pair up: the link id of each old direction takes
	 * the ends of the new one, so ids (and peers) stay.
	 */
	for (k = 0; k < lp.nr_down && k < lp.nr_up; k++) {
		struct topo_link *l = &t->links[lp.down[k]];
		const struct ocs_new_link *u = &lp.up[k];

		l->src_node = u->src_node;
		l->src_port = u->src_port;
		l->dst_node = u->dst_node;
		l->dst_port = u->dst_port;
		l->bandwidth = u->spec.bandwidth;
		l->latency_ps = u->spec.latency_ps;
		l->class = u->spec.class;
		l->switching = u->spec.switching;
		l->multipath = u->spec.multipath;
		l->fj_per_bit = u->spec.fj_per_bit;
		l->static_mw = u->spec.static_mw;
		l->eff_permille = u->spec.eff_permille;
		l->msg_overhead_ps = u->spec.msg_overhead_ps;
		l->state = ICFAB_LINK_UP;
		l->bw_permille = 0;
		l->up_delay_ps = plan.delay_ps;
		l->hold_fail = plan.policy == OCS_POLICY_FAIL;
		add_link(res, lp.down[k]);
	}
	ret = commit(t, fabric_id, &sn, res, why, len);
	for (k = 0; k < lp.nr_down; k++) {
		struct topo_link *l = &t->links[lp.down[k]];

		if (!ret) {
			l->up_at_ps = res->commit_ps + plan.delay_ps;
			l->up_delay_ps = 0;	/* staged once */
		}
	}
	if (!ret) {
		ocs_commit(o, &plan);
		res->up_at_ps = res->commit_ps + plan.delay_ps;
	}
	snap_free(&sn);
out:
	ocs_link_plan_free(&lp);
	ocs_plan_free(&plan);
	return ret;
}

uint64_t reconf_ocs_pending(const struct topo *t, const struct ocs *o)
{
	uint64_t until = 0;
	uint32_t i;

	if (!o->in)
		return 0;
	for (i = 0; i < o->nr_ports; i++) {
		int l = topo_port_link(t, o->in[i].node, o->in[i].port);

		if (l >= 0 && t->links[l].up_at_ps > until)
			until = t->links[l].up_at_ps;
	}
	return until;
}

/* The module's link leaving (node, port), by index in st, or -1. */
static int module_link(const struct fabric_state *st, uint32_t node,
		       uint32_t port)
{
	const struct topo *h = st->topo;
	uint32_t i;

	for (i = 0; i < h->nr_links; i++)
		if (h->links[i].src_node == node && h->links[i].src_port == port)
			return i;
	return -1;
}

int reconf_adopt_ocs(struct topo *t, const struct fabric_state *st)
{
	const struct topo *h = st->topo;
	uint32_t i, j, k, adopted = 0;
	struct topo_err err = { "" };

	/* What the module says about the dark period of each link. */
	for (i = 0; i < h->nr_links; i++) {
		uint32_t id = st->link_id[i];

		if (id < t->nr_links) {
			t->links[id].up_at_ps = h->links[i].up_at_ps;
			t->links[id].hold_fail = h->links[i].hold_fail;
		}
	}
	for (k = 0; k < t->nr_ocs; k++) {
		struct ocs *o = t->ocs[k];
		uint32_t *perm;
		struct ocs_plan plan;
		struct ocs_link_plan lp;
		bool known = true;

		if (!o->in)
			continue;
		perm = calloc(o->nr_ports, sizeof(*perm));
		if (!perm)
			return -ENOMEM;
		for (i = 0; i < o->nr_ports && known; i++) {
			int ml = module_link(st, o->in[i].node, o->in[i].port);

			known = ml >= 0;
			for (j = 0; known && j < o->nr_ports; j++)
				if (h->links[ml].dst_node == o->out[j].node &&
				    h->links[ml].dst_port == o->out[j].port)
					break;
			if (known && j == o->nr_ports)
				known = false;
			perm[i] = j;
		}
		if (!known || ocs_plan(o, perm, o->nr_ports, 0, &plan, &err)) {
			log_warn("ocs %s: the module's links are not one of its permutations: keeping the file's",
				 o->name);
			free(perm);
			continue;
		}
		if (!plan.noop && !ocs_plan_links(t, o, &plan, &lp, &err)) {
			for (j = 0; j < lp.nr_down && j < lp.nr_up; j++) {
				struct topo_link *l = &t->links[lp.down[j]];

				l->src_node = lp.up[j].src_node;
				l->src_port = lp.up[j].src_port;
				l->dst_node = lp.up[j].dst_node;
				l->dst_port = lp.up[j].dst_port;
			}
			ocs_commit(o, &plan);
			ocs_link_plan_free(&lp);
			adopted++;
			log_notice("ocs %s: the module runs another permutation than the file's: adopted it",
				   o->name);
		}
		ocs_plan_free(&plan);
		free(perm);
		/* The links moved: port_out must follow before the next OCS. */
		if (adopted && topo_route(t, &err))
			return -EINVAL;
	}
	return adopted;
}
