// SPDX-License-Identifier: GPL-2.0
/*
 * The expanded topology, for people (aligned text, units) and for scripts
 * (JSON, raw integers in the module's units: bytes, bytes/s, ps).
 */
#include <errno.h>

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
		fputc('\n', f);
	}
	if ((flags & TOPO_DUMP_ROUTES) && t->routes)
		dump_text_routes(t, f);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void dump_json(const struct topo *t, FILE *f, unsigned int flags)
{
	uint32_t i, d;

	fputs("{\"fabric\":{\"name\":", f);
	json_str(f, t->name);
	fprintf(f, ",\"segment_size\":%u,\"time_mode\":\"%s\",\"dilation\":%u,"
		"\"generator\":\"%s\",\"routing\":\"%s\"},\n\"nodes\":[",
		t->segment_size, time_mode_name(t->time_mode), t->dilation,
		t->generator ? t->generator : "none",
		topo_routing_name(t->routing == TOPO_ROUTING_AUTO ?
				  t->routing_auto : t->routing));
	for (i = 0; i < t->nr_nodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		fprintf(f, "%s\n{\"id\":%u,\"name\":\"%s\",\"kind\":\"%s\",\"ports\":%u,"
			"\"memory\":%llu,\"dma_engines\":%u,\"colors\":%u}",
			i ? "," : "", i, n->name, topo_kind_name(n->kind),
			n->nr_ports, (unsigned long long)n->mem_bytes,
			n->dma_engines, n->colors);
	}
	fputs("],\n\"links\":[", f);
	for (i = 0; i < t->nr_links; i++) {
		const struct topo_link *l = &t->links[i];

		fprintf(f, "%s\n{\"id\":%u,\"src\":%u,\"src_port\":%u,\"dst\":%u,"
			"\"dst_port\":%u,\"bandwidth\":%llu,\"latency_ps\":%llu,"
			"\"class\":\"%s\",\"state\":\"%s\",\"bw_permille\":%u}",
			i ? "," : "", i, l->src_node, l->src_port, l->dst_node,
			l->dst_port, (unsigned long long)l->bandwidth,
			(unsigned long long)l->latency_ps, topo_class_name(l->class),
			topo_state_name(l->state), l->bw_permille);
	}
	fputc(']', f);
	if ((flags & TOPO_DUMP_ROUTES) && t->routes) {
		/* one row per node, every destination id, 65535 = none */
		fputs(",\n\"routes\":[", f);
		for (i = 0; i < t->nr_nodes; i++) {
			fprintf(f, "%s\n[", i ? "," : "");
			for (d = 0; d < t->nr_nodes; d++)
				fprintf(f, "%s%u", d ? "," : "",
					topo_route_port(t, i, d));
			fputc(']', f);
		}
		fputc(']', f);
	}
	fputs("}\n", f);
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
