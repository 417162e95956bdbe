// SPDX-License-Identifier: GPL-2.0
/*
 * The expanded topology, for people (aligned text, units) and for scripts
 * (JSON, raw integers in the module's units: bytes, bytes/s, ps, written
 * by lib/json.c).
 */
#include <errno.h>

#include <icfab/json.h>

#include "topo_priv.h"

static const char *time_mode_name(uint32_t m)
{
	return m == ICFAB_TIME_PACED ? "paced" : "virtual";
}

static void dump_text_routes(const struct topo *t, FILE *f)
{
	uint32_t u, d;

	fprintf(f, "routes (%s): node -> destination: port\n",
		topo_routing_name(t->routed_with));
	for (u = 0; u < t->nr_nodes; u++) {
		int col = 0;

		fprintf(f, "  %s:", t->nodes[u].name);
		for (d = 0; d < t->nr_nodes; d++) {
			uint16_t p = topo_route_port(t, u, d);

			if (t->nodes[d].kind != ICFAB_NODE_ENDPOINT || d == u)
				continue;
			if (col && col % 8 == 0)
				fputs("\n   ", f);
			if (p == ICFAB_ROUTE_NONE)
				fprintf(f, " %s:-", t->nodes[d].name);
			else
				fprintf(f, " %s:%u", t->nodes[d].name, p);
			col++;
		}
		fputc('\n', f);
	}
}

/* Tier ports, after the links whose ids they follow. */
static void dump_text_tiers(const struct topo *t, FILE *f)
{
	char a[32], b[32], c[32];
	uint32_t i, n;

	fprintf(f, "tiers %u (ports are links):\n", t->nr_tiers);
	for (i = 0; i < t->nr_tiers; i++) {
		const struct topo_tier *r = &t->tiers[i];
		uint32_t sharers = 0;

		for (n = 0; n < t->nr_nodes; n++)
			sharers += t->nodes[n].tier[r->kind - 1] ==
				   r->link_id + 1;
		fprintf(f, "  %5u %-4s at %-20s %10s %10s %8s endpoints %u",
			r->link_id, topo_tier_name(r->kind),
			t->nodes[r->home].name,
			topo_fmt_size(a, sizeof(a), r->bytes),
			topo_fmt_bandwidth(b, sizeof(b), r->bandwidth),
			topo_fmt_time(c, sizeof(c), r->latency_ps), sharers);
		if (r->fj_per_bit)
			fprintf(f, " %s", topo_fmt_energy(a, sizeof(a),
							  r->fj_per_bit));
		fprintf(f, "  # %s:%u\n", r->src.file ? r->src.file : "?",
			r->src.line);
	}
}

static void dump_text(const struct topo *t, FILE *f, unsigned int flags)
{
	char a[32], b[32];
	uint32_t i;

	fprintf(f, "fabric %s: segment_size %s, time_mode %s, dilation %u, generator %s, routing %s\n",
		t->name, topo_fmt_size(a, sizeof(a), t->segment_size),
		time_mode_name(t->time_mode), t->dilation,
		t->generator ? t->generator : "none",
		topo_routing_name(t->routing == TOPO_ROUTING_AUTO ?
				  t->routing_auto : t->routing));
	fprintf(f, "nodes %u (%u endpoints, %u switches):\n", t->nr_nodes,
		t->nr_endpoints, t->nr_switches);
	for (i = 0; i < t->nr_nodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		fprintf(f, "  %5u %-20s %-8s ports %-4u", i, n->name,
			topo_kind_name(n->kind), n->nr_ports);
		if (n->kind == ICFAB_NODE_ENDPOINT)
			fprintf(f, " memory %-8s dma %-3u",
				topo_fmt_size(a, sizeof(a), n->mem_bytes),
				n->dma_engines);
		else
			fprintf(f, " colors %-18u", n->colors);
		fprintf(f, "  # %s:%u\n", n->src.file ? n->src.file : "?",
			n->src.line);
	}
	fprintf(f, "links %u (directed):\n", t->nr_links);
	for (i = 0; i < t->nr_links; i++) {
		const struct topo_link *l = &t->links[i];
		char from[48], to[48];

		snprintf(from, sizeof(from), "%s:%u", t->nodes[l->src_node].name,
			 l->src_port);
		snprintf(to, sizeof(to), "%s:%u", t->nodes[l->dst_node].name,
			 l->dst_port);
		fprintf(f, "  %5u %-22s -> %-22s %10s %8s %-6s %s", i, from, to,
			topo_fmt_bandwidth(a, sizeof(a), l->bandwidth),
			topo_fmt_time(b, sizeof(b), l->latency_ps),
			topo_class_name(l->class), topo_state_name(l->state));
		if (l->state == ICFAB_LINK_DEGRADED)
			fprintf(f, " %u/1000", l->bw_permille);
		if (l->switching != ICFAB_SWITCHING_STORE_FORWARD)
			fprintf(f, " %s", topo_switching_name(l->switching));
		if (l->multipath != ICFAB_MULTIPATH_NONE)
			fprintf(f, " multipath %s",
				topo_multipath_name(l->multipath));
		if (l->fj_per_bit)
			fprintf(f, " %s", topo_fmt_energy(a, sizeof(a),
							  l->fj_per_bit));
		if (l->static_mw)
			fprintf(f, " %s", topo_fmt_power(a, sizeof(a),
							 l->static_mw));
		if (l->eff_permille)
			fprintf(f, " efficiency %s",
				topo_fmt_efficiency(a, sizeof(a),
						    l->eff_permille));
		if (l->msg_overhead_ps)
			fprintf(f, " overhead %s",
				topo_fmt_time(a, sizeof(a),
					      l->msg_overhead_ps));
		fputc('\n', f);
	}
	if (t->nr_tiers)
		dump_text_tiers(t, f);
	if ((flags & TOPO_DUMP_ROUTES) && t->routes)
		dump_text_routes(t, f);
}

static void dump_json_tier(struct icfab_json *j, const struct topo *t,
			   uint32_t i)
{
	const struct topo_tier *r = &t->tiers[i];
	uint32_t n, sharers = 0;

	for (n = 0; n < t->nr_nodes; n++)
		sharers += t->nodes[n].tier[r->kind - 1] == r->link_id + 1;
	json_break(j);
	json_begin_object(j, NULL);
	json_u64(j, "link", r->link_id);
	json_string(j, "kind", topo_tier_name(r->kind));
	json_string(j, "at", t->nodes[r->home].name);
	json_u64(j, "capacity", r->bytes);
	json_u64(j, "bandwidth", r->bandwidth);
	json_u64(j, "latency_ps", r->latency_ps);
	json_u64(j, "energy_fj_per_bit", r->fj_per_bit);
	json_u64(j, "endpoints", sharers);
	json_end_object(j);
}

static void dump_json_node(struct icfab_json *j, const struct topo *t,
			   uint32_t i)
{
	const struct topo_node *n = &t->nodes[i];

	json_break(j);
	json_begin_object(j, NULL);
	json_u64(j, "id", i);
	json_string(j, "name", n->name);
	json_string(j, "kind", topo_kind_name(n->kind));
	json_u64(j, "ports", n->nr_ports);
	json_u64(j, "memory", n->mem_bytes);
	json_u64(j, "dma_engines", n->dma_engines);
	json_u64(j, "colors", n->colors);
	json_end_object(j);
}

static void dump_json_link(struct icfab_json *j, const struct topo *t,
			   uint32_t i)
{
	const struct topo_link *l = &t->links[i];

	json_break(j);
	json_begin_object(j, NULL);
	json_u64(j, "id", i);
	json_u64(j, "src", l->src_node);
	json_u64(j, "src_port", l->src_port);
	json_u64(j, "dst", l->dst_node);
	json_u64(j, "dst_port", l->dst_port);
	json_u64(j, "bandwidth", l->bandwidth);
	json_u64(j, "latency_ps", l->latency_ps);
	json_string(j, "class", topo_class_name(l->class));
	json_string(j, "switching", topo_switching_name(l->switching));
	json_string(j, "multipath", topo_multipath_name(l->multipath));
	json_string(j, "state", topo_state_name(l->state));
	json_u64(j, "bw_permille", l->bw_permille);
	json_u64(j, "energy_fj_per_bit", l->fj_per_bit);
	json_u64(j, "static_mw", l->static_mw);
	json_u64(j, "efficiency_permille",
		 l->eff_permille ? l->eff_permille : 1000);
	json_u64(j, "message_overhead_ps", l->msg_overhead_ps);
	json_end_object(j);
}

/* One row per node, every destination id, 65535 = none. */
static void dump_json_routes(struct icfab_json *j, const struct topo *t)
{
	uint32_t i, d;

	json_break(j);
	json_begin_array(j, "routes");
	for (i = 0; i < t->nr_nodes; i++) {
		json_break(j);
		json_begin_array(j, NULL);
		for (d = 0; d < t->nr_nodes; d++)
			json_u64(j, NULL, topo_route_port(t, i, d));
		json_end_array(j);
	}
	json_end_array(j);
}

static void dump_json(const struct topo *t, FILE *f, unsigned int flags)
{
	struct icfab_json j;
	uint32_t i;

	json_init(&j, f);
	json_begin_object(&j, NULL);
	json_begin_object(&j, "fabric");
	json_string(&j, "name", t->name);
	json_u64(&j, "segment_size", t->segment_size);
	json_string(&j, "time_mode", time_mode_name(t->time_mode));
	json_u64(&j, "dilation", t->dilation);
	json_string(&j, "generator", t->generator ? t->generator : "none");
	json_string(&j, "routing",
		    topo_routing_name(t->routing == TOPO_ROUTING_AUTO ?
				      t->routing_auto : t->routing));
	json_end_object(&j);
	json_break(&j);
	json_begin_array(&j, "nodes");
	for (i = 0; i < t->nr_nodes; i++)
		dump_json_node(&j, t, i);
	json_end_array(&j);
	json_break(&j);
	json_begin_array(&j, "links");
	for (i = 0; i < t->nr_links; i++)
		dump_json_link(&j, t, i);
	json_end_array(&j);
	if (t->nr_tiers) {
		json_break(&j);
		json_begin_array(&j, "tiers");
		for (i = 0; i < t->nr_tiers; i++)
			dump_json_tier(&j, t, i);
		json_end_array(&j);
	}
	if ((flags & TOPO_DUMP_ROUTES) && t->routes)
		dump_json_routes(&j, t);
	json_end_object(&j);
}

int topo_dump(const struct topo *t, FILE *f, unsigned int flags)
{
	if (flags & TOPO_DUMP_JSON)
		dump_json(t, f, flags);
	else
		dump_text(t, f, flags);
	fflush(f);
	return ferror(f) ? -EIO : 0;
}
