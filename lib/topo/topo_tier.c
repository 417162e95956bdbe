// SPDX-License-Identifier: GPL-2.0
/*
 * Memory tiers of a topology (docs/TIMING.md, "Memory tiers"): SRAM,
 * HBM and DDR with a capacity and a port. A tier's port is a module link
 * from its home endpoint to itself, numbered after every fabric link;
 * endpoints name the tier ports that serve them, their own or shared.
 */
#include <errno.h>
#include <string.h>

#include <icfab/array.h>
#include <icfab/names.h>

#include "topo_priv.h"

int topo_tier_parse(const char *s)
{
	uint32_t k;

	for (k = ICFAB_TIER_SRAM; k <= ICFAB_TIER_MAX; k++)
		if (!strcmp(s, icfab_tier_names[k]))
			return k;
	return -EINVAL;
}

const char *topo_tier_name(uint32_t kind)
{
	return kind <= ICFAB_TIER_MAX ? icfab_tier_names[kind] : "?";
}

static bool tier_endpoint(const struct topo *t, uint32_t node)
{
	return node < t->nr_nodes &&
	       t->nodes[node].kind == ICFAB_NODE_ENDPOINT;
}

int topo_add_tier(struct topo *t, const struct topo_tier *tier)
{
	struct topo_tier *n;
	uint32_t *slot;

	if (!tier_endpoint(t, tier->home) || tier->kind == ICFAB_TIER_NONE ||
	    tier->kind > ICFAB_TIER_MAX)
		return -EINVAL;
	slot = &t->nodes[tier->home].tier[tier->kind - 1];
	if (*slot)
		return -EEXIST;
	if (icfab_array_grow((void **)&t->tiers, &t->cap_tiers, t->nr_tiers,
			     sizeof(*t->tiers), 8))
		return -ENOMEM;
	n = &t->tiers[t->nr_tiers];
	*n = *tier;
	n->link_id = t->nr_links + t->nr_tiers;
	n->state = ICFAB_LINK_UP;
	*slot = n->link_id + 1;
	return t->nr_tiers++;
}

int topo_share_tier(struct topo *t, uint32_t node, uint32_t idx)
{
	const struct topo_tier *tier = &t->tiers[idx];
	uint32_t *slot;

	if (!tier_endpoint(t, node))
		return -EINVAL;
	slot = &t->nodes[node].tier[tier->kind - 1];
	if (*slot == tier->link_id + 1)
		return 0;
	if (*slot)
		return -EEXIST;
	*slot = tier->link_id + 1;
	return 0;
}

const struct topo_tier *topo_tier_of(const struct topo *t, uint32_t node,
				     uint32_t kind)
{
	uint32_t ref, i;

	if (node >= t->nr_nodes || kind == ICFAB_TIER_NONE ||
	    kind > ICFAB_TIER_MAX)
		return NULL;
	ref = t->nodes[node].tier[kind - 1];
	for (i = 0; ref && i < t->nr_tiers; i++)
		if (t->tiers[i].link_id + 1 == ref)
			return &t->tiers[i];
	return NULL;
}
