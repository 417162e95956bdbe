// SPDX-License-Identifier: GPL-2.0
/* The model's view of a lib/topo topology, for in-process benchmarks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/icfab.h>

#include "host_model.h"

struct icfab_mtopo *host_mtopo(const struct topo *t, icfab_u8 cut_through)
{
	static const struct icfab_topo_limits lim = {
		.max_endpoints = 1u << 20, .max_switches = 1u << 20,
		.max_links = 1u << 24, .max_ports = 1u << 16,
		.max_colors = 1u << 16,
	};
	struct icfab_mtopo *m = calloc(1, sizeof(*m));
	struct icfab_topo_err err;
	icfab_u8 *scratch;

	if (!m)
		return NULL;
	m->nodes_cap = t->nr_nodes;
	/* A tier's port is the link after the fabric's: nr_links + index. */
	m->links_cap = t->nr_links + t->nr_tiers;
	m->nodes = calloc(t->nr_nodes, sizeof(*m->nodes));
	m->links = calloc(m->links_cap, sizeof(*m->links));
	scratch = calloc(ICFAB_TOPO_SCRATCH_SIZE(t->nr_nodes), 1);
	if (!m->nodes || !m->links || !scratch)
		return NULL;
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		const struct topo_node *tn = &t->nodes[i];
		struct icfab_mnode *n = &m->nodes[i];

		n->present = 1;
		n->kind = tn->kind == ICFAB_NODE_ENDPOINT ?
			  ICFAB_MODEL_ENDPOINT : ICFAB_MODEL_SWITCH;
		n->nr_ports = tn->nr_ports;
		n->dma_engines = tn->dma_engines;
		n->colors = tn->colors;
		n->mem_bytes = tn->mem_bytes;
		for (uint32_t k = 0; k < ICFAB_MODEL_TIERS; k++)
			n->tier_link[k] = tn->tier[k];
		n->routes = &t->routes[(size_t)i * t->nr_nodes];
		n->routes_len = t->nr_nodes;
		/* ecmp: the entries name next-hop sets, copied as they are. */
		if (t->route_sets && t->node_sets[i].n) {
			const struct topo_node_sets *ns = &t->node_sets[i];
			icfab_u16 *r = malloc(t->nr_nodes * sizeof(*r));

			n->sets = calloc(ns->n, sizeof(*n->sets));
			if (!r || !n->sets)
				return NULL;
			for (uint32_t d = 0; d < t->nr_nodes; d++)
				r[d] = topo_route_entry(t, i, d);
			for (uint32_t k = 0; k < ns->n; k++) {
				n->sets[k].mode = ns->v[k].mode;
				n->sets[k].nr = ns->v[k].nr;
				memcpy(n->sets[k].ports, ns->v[k].ports,
				       sizeof(n->sets[k].ports));
			}
			n->nr_sets = ns->n;
			n->routes = r;
		}
		n->port_out = calloc(tn->nr_ports ? tn->nr_ports : 1,
				     sizeof(icfab_u32));
		n->port_in = calloc(tn->nr_ports ? tn->nr_ports : 1,
				    sizeof(icfab_u32));
		if (!n->port_out || !n->port_in)
			return NULL;
		m->nr_nodes++;
		if (n->kind == ICFAB_MODEL_ENDPOINT)
			m->nr_endpoints++;
		else
			m->nr_switches++;
	}
	for (uint32_t i = 0; i < t->nr_links; i++) {
		const struct topo_link *tl = &t->links[i];

		m->links[i] = (struct icfab_mlink){
			.present = 1, .state = (icfab_u8)tl->state,
			.permille = (icfab_u16)tl->bw_permille,
			.class = tl->class,
			.src = tl->src_node, .src_port = tl->src_port,
			.dst = tl->dst_node, .dst_port = tl->dst_port,
			.bandwidth = tl->bandwidth,
			.latency_ps = tl->latency_ps,
			.cut_through = cut_through,
			.multipath = (icfab_u8)tl->multipath,
			.fj_per_bit = tl->fj_per_bit,
		};
		m->nr_links++;
	}
	for (uint32_t i = 0; i < t->nr_tiers; i++) {
		const struct topo_tier *tt = &t->tiers[i];

		m->links[tt->link_id] = (struct icfab_mlink){
			.present = 1, .tier = (icfab_u8)tt->kind,
			.src = tt->home, .dst = tt->home,
			.bandwidth = tt->bandwidth,
			.latency_ps = tt->latency_ps,
			.tier_bytes = tt->bytes,
			.fj_per_bit = tt->fj_per_bit,
		};
		m->nr_links++;
	}
	if (icfab_topo_validate(m, &lim, scratch, &err)) {
		fprintf(stderr, "the model rejects the topology: %s\n",
			err.msg);
		return NULL;
	}
	free(scratch);
	return m;
}

void host_storage_free(struct icfab_engine_storage *st)
{
	free(st->links);
	free(st->eps);
	free(st->dma_free);
	free(st->xfers);
	free(st->events);
	memset(st, 0, sizeof(*st));
}

/*
 * Zeroed, on a page of its own as the module's kvzalloc() gives it for
 * arrays this size: calloc() puts a large one 16 bytes into its pages,
 * so every 128-byte transfer slot would straddle three cache lines.
 */
static void *host_zalloc_lines(size_t n, size_t size)
{
	void *p;

	if (!n)
		n = 1;
	if (size && n > SIZE_MAX / size)
		return NULL;
	if (posix_memalign(&p, 4096, n * size))
		return NULL;
	memset(p, 0, n * size);
	return p;
}

int host_storage(struct icfab_engine_storage *st, const struct icfab_mtopo *m,
		 icfab_u32 xfers, icfab_u32 events)
{
	memset(st, 0, sizeof(*st));
	st->links = host_zalloc_lines(m->links_cap, sizeof(*st->links));
	st->eps = host_zalloc_lines(m->nodes_cap, sizeof(*st->eps));
	st->dma_cap = icfab_engine_dma_needed(m);
	st->dma_free = host_zalloc_lines(st->dma_cap ? st->dma_cap : 1,
					 sizeof(icfab_u64));
	st->xfers_cap = xfers;
	st->xfers = host_zalloc_lines(xfers, sizeof(*st->xfers));
	st->events_cap = events;
	st->events = host_zalloc_lines(events, sizeof(*st->events));
	if (!st->links || !st->eps || !st->dma_free || !st->xfers || !st->events) {
		host_storage_free(st);
		return -ENOMEM;
	}
	return 0;
}
