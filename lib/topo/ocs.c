// SPDX-License-Identifier: GPL-2.0
/*
 * Optical circuit switches: request validation and reconfiguration plans.
 * See ocs.h for the model.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/ocs.h>
#include "topo_priv.h"

#define OCS_MAX_PORTS	65536	/* far beyond any OCS built (TPU v4: 136) */

const char *ocs_policy_name(enum ocs_policy p)
{
	return p == OCS_POLICY_FAIL ? "fail" : "hold";
}

int ocs_policy_parse(const char *s)
{
	if (!strcmp(s, "hold"))
		return OCS_POLICY_HOLD;
	if (!strcmp(s, "fail"))
		return OCS_POLICY_FAIL;
	return -EINVAL;
}

int ocs_perm_check(const struct ocs *o, const uint32_t *perm, uint32_t len,
		   struct topo_err *err)
{
	uint32_t *owner, i;

	if (len != o->nr_ports)
		return topo_errf(err, NULL,
				 "ocs %s: the permutation has %u entries, the OCS has %u ports",
				 o->name, len, o->nr_ports);
	/* owner[j] = input port + 1 already sent to output j */
	owner = calloc(o->nr_ports, sizeof(*owner));
	if (!owner)
		return -ENOMEM;
	for (i = 0; i < len; i++) {
		uint32_t j = perm[i];

		if (j >= o->nr_ports) {
			free(owner);
			return topo_errf(err, NULL,
					 "ocs %s: port %u -> %u: no output port %u (ports 0..%u)",
					 o->name, i, j, j, o->nr_ports - 1);
		}
		if (owner[j]) {
			uint32_t first = owner[j] - 1;

			free(owner);
			return topo_errf(err, NULL,
					 "ocs %s: port %u -> %u: output %u is already the target of port %u",
					 o->name, i, j, j, first);
		}
		owner[j] = i + 1;
	}
	free(owner);
	return 0;
}

static int end_cmp(const void *a, const void *b)
{
	const struct ocs_end *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->port < y->port ? -1 : x->port > y->port;
}

/* Every (node, port) is cabled to one OCS port at most, on either side. */
static int ends_check(const struct ocs *o, struct topo_err *err)
{
	uint32_t n = 2 * o->nr_ports, i;
	struct ocs_end *all = malloc(n * sizeof(*all));

	if (!all)
		return -ENOMEM;
	memcpy(all, o->in, o->nr_ports * sizeof(*all));
	memcpy(all + o->nr_ports, o->out, o->nr_ports * sizeof(*all));
	qsort(all, n, sizeof(*all), end_cmp);
	for (i = 1; i < n; i++)
		if (!end_cmp(&all[i - 1], &all[i])) {
			int ret = topo_errf(err, NULL,
					    "ocs %s: node %u port %u is cabled to two OCS ports",
					    o->name, all[i].node, all[i].port);
			free(all);
			return ret;
		}
	free(all);
	return 0;
}

void ocs_free(struct ocs *o)
{
	if (!o)
		return;
	free(o->in);
	free(o->out);
	free(o);
}

int ocs_new(const struct ocs_desc *d, struct ocs **op, struct topo_err *err)
{
	struct ocs *o;
	uint32_t i;
	int ret;

	*op = NULL;
	if (!d->name || !d->name[0] || strlen(d->name) >= ICFAB_NAME_MAX)
		return topo_errf(err, NULL, "ocs: a name of 1..%d characters is needed",
				 ICFAB_NAME_MAX - 1);
	if (!d->nr_ports || d->nr_ports > OCS_MAX_PORTS)
		return topo_errf(err, NULL, "ocs %s: %u ports, must be 1..%u",
				 d->name, d->nr_ports, OCS_MAX_PORTS);
	if (!d->in != !d->out)
		return topo_errf(err, NULL,
				 "ocs %s: give both sides' cabling or neither", d->name);
	if (d->policy != OCS_POLICY_HOLD && d->policy != OCS_POLICY_FAIL)
		return topo_errf(err, NULL, "ocs %s: unknown policy %d", d->name,
				 (int)d->policy);
	o = calloc(1, sizeof(*o) + d->nr_ports * sizeof(o->perm[0]));
	if (!o)
		return -ENOMEM;
	strcpy(o->name, d->name);
	o->nr_ports = d->nr_ports;
	o->reconfig_delay_ps = d->reconfig_delay_ps;
	o->policy = d->policy;
	for (i = 0; i < o->nr_ports; i++)
		o->perm[i] = d->perm ? d->perm[i] : i;
	ret = d->perm ? ocs_perm_check(o, d->perm, d->nr_ports, err) : 0;
	if (!ret && d->in) {
		o->in = malloc(o->nr_ports * sizeof(*o->in));
		o->out = malloc(o->nr_ports * sizeof(*o->out));
		if (!o->in || !o->out) {
			ret = -ENOMEM;
		} else {
			memcpy(o->in, d->in, o->nr_ports * sizeof(*o->in));
			memcpy(o->out, d->out, o->nr_ports * sizeof(*o->out));
			ret = ends_check(o, err);
		}
	}
	if (ret) {
		ocs_free(o);
		return ret;
	}
	*op = o;
	return 0;
}

int ocs_perm_from_pairs(const struct ocs *o, const struct ocs_pair *pairs,
			uint32_t nr_pairs, uint32_t *perm_out,
			struct topo_err *err)
{
	uint32_t *seen, i;
	int ret = 0;

	seen = calloc(o->nr_ports, sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	for (i = 0; i < nr_pairs && !ret; i++) {
		uint32_t in = pairs[i].in;

		if (in >= o->nr_ports)
			ret = topo_errf(err, NULL,
					"ocs %s: pairs[%u]: no input port %u (ports 0..%u)",
					o->name, i, in, o->nr_ports - 1);
		else if (seen[in])
			ret = topo_errf(err, NULL,
					"ocs %s: pairs[%u]: input port %u is also in pairs[%u]",
					o->name, i, in, seen[in] - 1);
		else
			seen[in] = i + 1;
	}
	free(seen);
	if (ret)
		return ret;
	memcpy(perm_out, o->perm, o->nr_ports * sizeof(*perm_out));
	for (i = 0; i < nr_pairs; i++)
		perm_out[pairs[i].in] = pairs[i].out;
	return ocs_perm_check(o, perm_out, o->nr_ports, err);
}

void ocs_plan_free(struct ocs_plan *plan)
{
	free(plan->perm);
	free(plan->changes);
	memset(plan, 0, sizeof(*plan));
}

int ocs_plan(const struct ocs *o, const uint32_t *perm, uint32_t len,
	     uint64_t t_ps, struct ocs_plan *plan, struct topo_err *err)
{
	uint32_t i, n = 0;
	int ret;

	memset(plan, 0, sizeof(*plan));
	ret = ocs_perm_check(o, perm, len, err);
	if (ret)
		return ret;
	for (i = 0; i < len; i++)
		n += perm[i] != o->perm[i];
	if (n && o->reconfig_delay_ps > UINT64_MAX - t_ps) {
		topo_errf(err, NULL,
			  "ocs %s: start %llu ps + delay %llu ps overflows the fabric clock",
			  o->name, (unsigned long long)t_ps,
			  (unsigned long long)o->reconfig_delay_ps);
		return -EOVERFLOW;
	}
	plan->perm = malloc(len * sizeof(*plan->perm));
	plan->changes = malloc((n + 1) * sizeof(*plan->changes));
	if (!plan->perm || !plan->changes) {
		ocs_plan_free(plan);
		return -ENOMEM;
	}
	memcpy(plan->perm, perm, len * sizeof(*plan->perm));
	plan->nr_ports = len;
	plan->policy = o->policy;
	plan->delay_ps = o->reconfig_delay_ps;
	plan->noop = !n;
	plan->t_down_ps = t_ps;
	plan->t_up_ps = n ? t_ps + o->reconfig_delay_ps : t_ps;
	for (i = 0; i < len; i++)
		if (perm[i] != o->perm[i])
			plan->changes[plan->nr_changes++] = (struct ocs_change){
				.port = i, .from = o->perm[i], .to = perm[i],
			};
	return 0;
}

int ocs_commit(struct ocs *o, const struct ocs_plan *plan)
{
	if (plan->nr_ports != o->nr_ports || !plan->perm)
		return -EINVAL;
	memcpy(o->perm, plan->perm, o->nr_ports * sizeof(o->perm[0]));
	return 0;
}

static const char *end_name(const struct topo *t, const struct ocs_end *e)
{
	return e->node < t->nr_nodes ? t->nodes[e->node].name : "?";
}

/* The link of input port i's current circuit (A -> B side), or -errno. */
static int circuit_link(const struct topo *t, const struct ocs *o, uint32_t i,
			struct topo_err *err)
{
	const struct ocs_end *a = &o->in[i], *b = &o->out[o->perm[i]];
	const struct topo_link *l, *back;
	int li;

	if (a->node >= t->nr_nodes || b->node >= t->nr_nodes) {
		topo_errf(err, NULL, "ocs %s: port %u: no node %u", o->name, i,
			  a->node >= t->nr_nodes ? a->node : b->node);
		return -ENOENT;
	}
	li = topo_port_link(t, a->node, a->port);
	if (li < 0) {
		topo_errf(err, NULL, "ocs %s: port %u: no link leaves %s:%u",
			  o->name, i, end_name(t, a), a->port);
		return -ENOENT;
	}
	l = &t->links[li];
	if (l->dst_node != b->node || l->dst_port != b->port)
		return topo_errf(err, NULL,
				 "ocs %s: port %u: %s:%u is cabled to %s:%u, not to output %u (%s:%u)",
				 o->name, i, end_name(t, a), a->port,
				 t->nodes[l->dst_node].name, l->dst_port,
				 o->perm[i], end_name(t, b), b->port);
	if (l->class != ICFAB_LINK_CLASS_OCS)
		return topo_errf(err, NULL,
				 "ocs %s: port %u: link %d (%s:%u -> %s:%u) is class %s, not ocs",
				 o->name, i, li, end_name(t, a), a->port,
				 end_name(t, b), b->port, topo_class_name(l->class));
	back = l->peer < t->nr_links ? &t->links[l->peer] : NULL;
	if (!back || back->src_node != b->node || back->src_port != b->port)
		return topo_errf(err, NULL,
				 "ocs %s: port %u: link %d (%s:%u -> %s:%u) has no way back",
				 o->name, i, li, end_name(t, a), a->port,
				 end_name(t, b), b->port);
	return li;
}

int ocs_check_topo(const struct topo *t, const struct ocs *o,
		   struct topo_err *err)
{
	uint32_t i;
	int li;

	if (!o->in)
		return topo_errf(err, NULL, "ocs %s: not cabled to the topology",
				 o->name);
	for (i = 0; i < o->nr_ports; i++) {
		li = circuit_link(t, o, i, err);
		if (li < 0)
			return li;
	}
	return 0;
}

void ocs_link_plan_free(struct ocs_link_plan *lp)
{
	free(lp->down);
	free(lp->up);
	memset(lp, 0, sizeof(*lp));
}

int ocs_plan_links(const struct topo *t, const struct ocs *o,
		   const struct ocs_plan *plan, struct ocs_link_plan *lp,
		   struct topo_err *err)
{
	uint32_t k;
	int ret;

	memset(lp, 0, sizeof(*lp));
	if (plan->nr_ports != o->nr_ports)
		return topo_errf(err, NULL, "ocs %s: the plan is for %u ports, not %u",
				 o->name, plan->nr_ports, o->nr_ports);
	ret = ocs_check_topo(t, o, err);
	if (ret)
		return ret;
	lp->down = malloc((2 * plan->nr_changes + 1) * sizeof(*lp->down));
	lp->up = malloc((2 * plan->nr_changes + 1) * sizeof(*lp->up));
	if (!lp->down || !lp->up) {
		ocs_link_plan_free(lp);
		return -ENOMEM;
	}
	for (k = 0; k < plan->nr_changes; k++) {
		const struct ocs_change *c = &plan->changes[k];
		const struct ocs_end *a = &o->in[c->port], *b = &o->out[c->to];
		const struct topo_link *l;
		int li = circuit_link(t, o, c->port, err);
		struct topo_link_spec spec;

		if (li < 0) {		/* ocs_check_topo() said yes: cannot be */
			ocs_link_plan_free(lp);
			return li;
		}
		l = &t->links[li];
		spec = (struct topo_link_spec){
			.bandwidth = l->bandwidth,
			.latency_ps = l->latency_ps,
			.class = l->class,
		};
		lp->down[lp->nr_down++] = li;
		lp->down[lp->nr_down++] = l->peer;
		lp->up[lp->nr_up++] = (struct ocs_new_link){
			.port = c->port, .spec = spec,
			.src_node = a->node, .src_port = a->port,
			.dst_node = b->node, .dst_port = b->port,
		};
		lp->up[lp->nr_up++] = (struct ocs_new_link){
			.port = c->port, .spec = spec,
			.src_node = b->node, .src_port = b->port,
			.dst_node = a->node, .dst_port = a->port,
		};
	}
	return 0;
}
