// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl topo show, node list, link list, route show: the topology of a
 * fabric over netlink, read back by the topology library
 * (lib/topo/readback.c: FABRIC_GET, and the NODE_GET, LINK_GET and
 * ROUTE_GET dumps).
 *
 * A read is consistent or it is retried, under the one dump-retry rule
 * of icfab_nl_read_consistent(): every reply carries the generation it
 * was read from, and a dump that spans a change is flagged
 * NLM_F_DUMP_INTR. When a reply is flagged, or two replies of one read
 * disagree on the generation, the whole read starts again (for route
 * show, with the tables it follows), a few times, before giving up with
 * a message.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <linux/icfab_genl.h>

#include <icfab/readback.h>

#include "icfabctl.h"

#define TOPO_ATTEMPTS	5		/* reads before giving up */

/* ---- the topology as read ---- */

/* A fabric's configuration as icfabctl shows it. */
struct view {
	struct icfab_nl nl;
	uint32_t fabric;
	bool staged;			/* read the staged configuration */
	unsigned int what;		/* FABRIC_READ_* */
	struct fabric_state st;		/* st.topo: nodes by id, links by
					 * index, st.link_id[] their ids */
};

static const struct topo_node *view_node(const struct view *v, uint32_t id)
{
	return fabric_node_present(&v->st, id) ? &v->st.topo->nodes[id] : NULL;
}

/* The name of a node for people: its name, or "node<id>" if it has none. */
static const char *node_label(const struct view *v, uint32_t id, char *buf,
			      size_t len)
{
	const struct topo_node *n = view_node(v, id);

	if (n && n->name[0])
		return n->name;
	snprintf(buf, len, "node%" PRIu32, id);
	return buf;
}

/* ---- reading ---- */

static int topo_gave_up(const char *what)
{
	icfabctl_warn("%s: the configuration kept changing while it was read "
		      "(%d attempts); try again", what, TOPO_ATTEMPTS);
	return ICFABCTL_EXIT_ERROR;
}

/* One read for icfab_nl_read_consistent(): -EINTR when inconsistent. */
static int view_read_attempt(void *arg)
{
	struct view *v = arg;

	fabric_state_free(&v->st);
	return fabric_read_once(&v->nl, v->staged, v->what, &v->st);
}

/*
 * The outcome of a read under the retry rule: ICFABCTL_EXIT_OK, or a
 * message and ICFABCTL_EXIT_ERROR.
 */
static int view_read_result(struct view *v, int ret, const char *name)
{
	if (ret == -EINTR)
		return topo_gave_up(name);
	if (ret) {
		icfabctl_nl_report(&v->nl, name);
		return ICFABCTL_EXIT_ERROR;
	}
	return ICFABCTL_EXIT_OK;
}

/* A consistent read of what @what asks for. */
static int view_read(struct view *v, unsigned int what, const char *name)
{
	v->what = what;
	return view_read_result(v, icfab_nl_read_consistent(view_read_attempt,
							    v, TOPO_ATTEMPTS),
				name);
}

/* ---- output helpers ---- */

/* Columns as wide as their widest cell, two spaces apart. */
struct table {
	unsigned int cols, rows, cap;
	unsigned int right;	/* bit c: column c is aligned right */
	char **cells;
};

static int table_add(struct table *tb, ...)
{
	va_list ap;
	unsigned int c;
	char **p;

	/* An element is a row of tb->cols cells. */
	if (icfab_array_grow((void **)&tb->cells, &tb->cap, tb->rows,
			     (size_t)tb->cols * sizeof(*p), 16))
		return -ENOMEM;
	p = &tb->cells[(size_t)tb->rows * tb->cols];
	va_start(ap, tb);
	for (c = 0; c < tb->cols; c++) {
		const char *s = va_arg(ap, const char *);

		p[c] = strdup(s ? s : "");
	}
	va_end(ap);
	tb->rows++;
	for (c = 0; c < tb->cols; c++)
		if (!p[c])
			return -ENOMEM;
	return 0;
}

/* Display columns of UTF-8 text (every character one column wide). */
static int text_width(const char *s)
{
	int w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static void table_print(struct table *tb, const char *indent)
{
	int width[16] = { 0 };
	unsigned int r, c, last;
	const char *cell;

	for (r = 0; r < tb->rows; r++)
		for (c = 0; c < tb->cols && c < 16; c++) {
			int w = text_width(tb->cells[r * tb->cols + c]);

			if (w > width[c])
				width[c] = w;
		}
	for (r = 0; r < tb->rows; r++) {
		char **row = &tb->cells[r * tb->cols];

		/* No padding after the last cell with text. */
		for (last = tb->cols; last > 1 && !row[last - 1][0]; last--)
			;
		fputs(indent, stdout);
		for (c = 0; c < last; c++) {
			int pad;

			cell = row[c];
			pad = c < 16 ? width[c] - text_width(cell) : 0;
			if (tb->right & (1U << c))
				printf("%*s%s", pad, "", cell);
			else if (c + 1 < last)
				printf("%s%*s", cell, pad, "");
			else
				fputs(cell, stdout);
			if (c + 1 < last)
				fputs("  ", stdout);
		}
		putchar('\n');
	}
}

static void table_free(struct table *tb)
{
	size_t i;

	for (i = 0; i < (size_t)tb->rows * tb->cols; i++)
		free(tb->cells[i]);
	free(tb->cells);
	tb->cells = NULL;
	tb->rows = tb->cap = 0;
}

static const char *u32_str(char *buf, size_t len, uint32_t v)
{
	snprintf(buf, len, "%" PRIu32, v);
	return buf;
}

/* "up", "down", "degraded 250‰" */
static const char *link_state_text(char *buf, size_t len,
				   const struct topo_link *l)
{
	char tmp[32];

	size_t n;

	if (l->state == ICFAB_LINK_DEGRADED)
		n = snprintf(buf, len, "degraded %" PRIu32 "\u2030",
			     l->bw_permille);
	else
		n = snprintf(buf, len, "%s",
			     icfabctl_link_state_name(tmp, sizeof(tmp), l->state));
	/* An OCS circuit not yet lit. */
	if (l->up_at_ps && n < len)
		snprintf(buf + n, len - n, ", dark until %" PRIu64 " ps%s",
			 l->up_at_ps, l->hold_fail ? " (fail)" : "");
	return buf;
}

/* The bandwidth a link gives now: nothing when down, a share degraded. */
static uint64_t link_effective_bw(const struct topo_link *l)
{
	if (l->state == ICFAB_LINK_DOWN)
		return 0;
	if (l->state == ICFAB_LINK_DEGRADED)
		return l->bandwidth / 1000 * l->bw_permille +
		       l->bandwidth % 1000 * l->bw_permille / 1000;
	return l->bandwidth;
}

/* "chip0:0" */
static const char *port_label(const struct view *v, uint32_t node,
			      uint32_t port, char *buf, size_t len)
{
	char tmp[32];

	snprintf(buf, len, "%s:%" PRIu32,
		 node_label(v, node, tmp, sizeof(tmp)), port);
	return buf;
}

/* The widest source of links @idx[0..n) (indices in v->st.topo->links). */
static int src_width(const struct view *v, const uint32_t *idx, uint32_t n)
{
	char buf[64];
	uint32_t i;
	int w = 0, x;

	for (i = 0; i < n; i++) {
		const struct topo_link *l = &v->st.topo->links[idx[i]];

		x = text_width(port_label(v, l->src_node, l->src_port, buf,
					  sizeof(buf)));
		if (x > w)
			w = x;
	}
	return w;
}

/*
 * Link @i as table cells: [id,] "chip0:0 -> chip1:1" (sources padded to
 * @w), bandwidth, latency, class (followed by the switching mode where
 * the node it reaches does not store and forward, and the calibration
 * where the link has one), state.
 */
static int link_row(struct table *tb, const struct view *v, uint32_t i,
		    int w, bool with_id)
{
	const struct topo_link *l = &v->st.topo->links[i];
	char idb[16], a[64], b[64], ends[160], bw[32], lat[32], cbuf[32];
	char st[96], cls[96], cal[32];

	snprintf(ends, sizeof(ends), "%-*s -> %s", w,
		 port_label(v, l->src_node, l->src_port, a, sizeof(a)),
		 port_label(v, l->dst_node, l->dst_port, b, sizeof(b)));
	icfabctl_fmt_bandwidth(bw, sizeof(bw), l->bandwidth);
	icfabctl_fmt_latency(lat, sizeof(lat), l->latency_ps);
	snprintf(cls, sizeof(cls), "%s",
		 icfabctl_link_class_name(cbuf, sizeof(cbuf), l->class));
	if (l->switching != ICFAB_SWITCHING_STORE_FORWARD)
		snprintf(cls + strlen(cls), sizeof(cls) - strlen(cls), " %s",
			 topo_switching_name(l->switching));
	if (l->eff_permille)
		snprintf(cls + strlen(cls), sizeof(cls) - strlen(cls),
			 " eff %s", topo_fmt_efficiency(cal, sizeof(cal),
							l->eff_permille));
	if (l->msg_overhead_ps)
		snprintf(cls + strlen(cls), sizeof(cls) - strlen(cls),
			 " +%s/msg", icfabctl_fmt_latency(cal, sizeof(cal),
							  l->msg_overhead_ps));
	link_state_text(st, sizeof(st), l);
	if (with_id)
		return table_add(tb, u32_str(idb, sizeof(idb),
					     v->st.link_id[i]),
				 ends, bw, lat, cls, st);
	return table_add(tb, ends, bw, lat, cls, st);
}

/* Every link, by index (the module's dump gives them in id order). */
static uint32_t *link_indices(const struct view *v, uint32_t *n)
{
	uint32_t i, nr = v->st.topo->nr_links, *idx;

	idx = calloc(nr ? nr : 1, sizeof(*idx));
	if (!idx)
		return NULL;
	for (i = 0; i < nr; i++)
		idx[i] = i;
	*n = nr;
	return idx;
}

static int print_links_text(const struct view *v, const char *indent)
{
	/* ID, BANDWIDTH and LATENCY to the right */
	struct table tb = { .cols = 6, .right = 1 << 0 | 1 << 2 | 1 << 3 };
	uint32_t i, n, *idx;
	char hdr[32];
	int w, ret;

	idx = link_indices(v, &n);
	if (!idx)
		return -ENOMEM;
	w = src_width(v, idx, n);
	if (w < 4)
		w = 4;
	snprintf(hdr, sizeof(hdr), "%-*s    %s", w, "FROM", "TO");
	ret = table_add(&tb, "ID", hdr, "BANDWIDTH", "LATENCY", "CLASS",
			"STATE");
	for (i = 0; !ret && i < n; i++)
		ret = link_row(&tb, v, idx[i], w, true);
	if (!ret)
		table_print(&tb, indent);
	table_free(&tb);
	free(idx);
	return ret;
}

static int print_nodes_text(const struct view *v, const char *indent)
{
	/* numbers to the right */
	struct table tb = { .cols = 7, .right = 1 << 0 | 1 << 3 | 1 << 4 |
						1 << 5 | 1 << 6 };
	char id[16], kind[32], ports[16], mem[32], dma[16], colors[16];
	char name[32];
	uint32_t i;
	int ret;

	ret = table_add(&tb, "ID", "NAME", "KIND", "PORTS", "MEMORY", "DMA",
			"COLORS");
	for (i = 0; !ret && i < v->st.topo->nr_nodes; i++) {
		const struct topo_node *n = view_node(v, i);
		bool ep;

		if (!n)
			continue;
		ep = n->kind == ICFAB_NODE_ENDPOINT;
		ret = table_add(&tb, u32_str(id, sizeof(id), i),
			node_label(v, i, name, sizeof(name)),
			icfabctl_node_kind_name(kind, sizeof(kind), n->kind),
			u32_str(ports, sizeof(ports), n->nr_ports),
			ep ? icfabctl_fmt_bytes(mem, sizeof(mem),
						n->mem_bytes) : "-",
			ep ? u32_str(dma, sizeof(dma), n->dma_engines) : "-",
			ep ? "-" : u32_str(colors, sizeof(colors), n->colors));
	}
	if (!ret)
		table_print(&tb, indent);
	table_free(&tb);
	return ret;
}

static void json_node(struct icfab_json *j, const struct view *v,
		      uint32_t id)
{
	const struct topo_node *n = view_node(v, id);
	char kind[32];

	json_begin_object(j, NULL);
	json_u64(j, "id", id);
	json_string(j, "name", n->name);
	json_string(j, "kind", icfabctl_node_kind_name(kind, sizeof(kind),
						       n->kind));
	json_u64(j, "ports", n->nr_ports);
	if (n->kind == ICFAB_NODE_ENDPOINT) {
		json_u64(j, "mem_bytes", n->mem_bytes);
		json_u64(j, "dma_engines", n->dma_engines);
	} else {
		json_u64(j, "colors", n->colors);
	}
	json_end_object(j);
}

/* Link @i's members (the caller opens and closes the object). */
static void json_link_members(struct icfab_json *j, const struct view *v,
			      uint32_t i)
{
	const struct topo_link *l = &v->st.topo->links[i];
	char buf[32];

	json_u64(j, "id", v->st.link_id[i]);
	json_u64(j, "src", l->src_node);
	json_string(j, "src_name", node_label(v, l->src_node, buf,
					      sizeof(buf)));
	json_u64(j, "src_port", l->src_port);
	json_u64(j, "dst", l->dst_node);
	json_string(j, "dst_name", node_label(v, l->dst_node, buf,
					      sizeof(buf)));
	json_u64(j, "dst_port", l->dst_port);
	json_u64(j, "bandwidth", l->bandwidth);
	json_u64(j, "latency_ps", l->latency_ps);
	json_string(j, "class", icfabctl_link_class_name(buf, sizeof(buf),
							 l->class));
	json_string(j, "state", icfabctl_link_state_name(buf, sizeof(buf),
							 l->state));
	json_string(j, "switching", topo_switching_name(l->switching));
	json_u64(j, "efficiency_permille",
		 l->eff_permille ? l->eff_permille : 1000);
	json_u64(j, "message_overhead_ps", l->msg_overhead_ps);
	if (l->state == ICFAB_LINK_DEGRADED)
		json_u64(j, "bw_permille", l->bw_permille);
	if (l->up_at_ps) {
		json_u64(j, "up_at_ps", l->up_at_ps);
		json_bool(j, "hold_fail", l->hold_fail);
	}
}

static void json_nodes(struct icfab_json *j, const struct view *v)
{
	uint32_t i;

	json_begin_array(j, "nodes");
	for (i = 0; i < v->st.topo->nr_nodes; i++)
		if (view_node(v, i))
			json_node(j, v, i);
	json_end_array(j);
}

static void json_links(struct icfab_json *j, const struct view *v)
{
	uint32_t i;

	json_begin_array(j, "links");
	for (i = 0; i < v->st.topo->nr_links; i++) {
		json_begin_object(j, NULL);
		json_link_members(j, v, i);
		json_end_object(j);
	}
	json_end_array(j);
}

/* "fabric", "generation", "staged" */
static void json_head(struct icfab_json *j, const struct view *v)
{
	json_u64(j, "fabric", v->fabric);
	json_u64(j, "generation", v->st.generation);
	json_bool(j, "staged", v->staged);
}

/* ---- arguments ---- */

/* Options common to the read commands: [--staged]. */
static int parse_staged(const struct icfabctl_cmd *cmd, int argc, char **argv,
			bool *staged)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--staged"))
			*staged = true;
		else
			return icfabctl_usage_error(cmd, "unexpected argument '%s'",
						    argv[i]);
	}
	return 0;
}

static int view_open(struct icfabctl *ctl, struct view *v, bool staged)
{
	int ret;

	memset(v, 0, sizeof(*v));
	ret = icfabctl_nl_open(&v->nl, ctl->fabric);
	if (ret)
		return ret;
	v->fabric = ctl->fabric;
	v->staged = staged;
	return 0;
}

static void view_close(struct view *v)
{
	fabric_state_free(&v->st);
	icfab_nl_close(&v->nl);
}

/*
 * The arguments ([--staged]), then a consistent read of @what into @v.
 * Returns an exit code; on ICFABCTL_EXIT_OK the caller view_close()s @v.
 */
static int view_load(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		     int argc, char **argv, struct view *v, unsigned int what,
		     const char *name)
{
	bool staged = false;
	int ret;

	ret = parse_staged(cmd, argc, argv, &staged);
	if (ret)
		return ret;
	ret = view_open(ctl, v, staged);
	if (ret)
		return ret;
	ret = view_read(v, what, name);
	if (ret)
		view_close(v);
	return ret;
}

/* ---- topo show ---- */

static void topo_show_json(const struct view *v)
{
	const struct fabric_state *st = &v->st;
	struct icfab_json j;

	json_init(&j, stdout);
	json_begin_object(&j, NULL);
	json_head(&j, v);
	json_string(&j, "name", st->name);
	json_bool(&j, "has_staged", st->has_staged);
	json_u64(&j, "nr_endpoints", st->nr_endpoints);
	json_u64(&j, "nr_switches", st->nr_switches);
	json_u64(&j, "nr_links", st->nr_links);
	json_u64(&j, "mem_bytes", st->mem_bytes);
	json_nodes(&j, v);
	json_links(&j, v);
	json_end_object(&j);
}

static int topo_show_text(const struct view *v)
{
	const struct fabric_state *st = &v->st;
	const struct topo *t = st->topo;
	char mem[32];
	int ret = 0;

	printf("fabric %" PRIu32 " (%s), %s configuration, generation %" PRIu64
	       "\n", v->fabric, st->name[0] ? st->name : "?",
	       !v->staged ? "committed" :
	       st->has_staged ? "staged" : "committed (nothing staged)",
	       st->generation);
	printf("  %" PRIu32 " endpoint%s, %" PRIu32 " switch%s, %" PRIu32
	       " link%s, tables %s\n",
	       st->nr_endpoints, st->nr_endpoints == 1 ? "" : "s",
	       st->nr_switches, st->nr_switches == 1 ? "" : "es",
	       st->nr_links, st->nr_links == 1 ? "" : "s",
	       icfabctl_fmt_bytes(mem, sizeof(mem), st->mem_bytes));
	if (!v->staged && st->has_staged)
		printf("  uncommitted changes are staged (see --staged)\n");
	printf("\nnodes:\n");
	if (t->nr_endpoints + t->nr_switches)
		ret = print_nodes_text(v, "  ");
	else
		printf("  none\n");
	printf("\nlinks:\n");
	if (!ret && t->nr_links)
		ret = print_links_text(v, "  ");
	else if (!ret)
		printf("  none\n");
	return ret;
}

static int cmd_topo_show(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			 int argc, char **argv)
{
	struct view v;
	int ret;

	ret = view_load(ctl, cmd, argc, argv, &v,
			FABRIC_READ_NODES | FABRIC_READ_LINKS, "topo show");
	if (ret)
		return ret;
	if (ctl->json)
		topo_show_json(&v);
	else if (topo_show_text(&v))
		ret = icfabctl_fail(ENOMEM, "topo show");
	view_close(&v);
	return ret;
}

ICFABCTL_COMMAND("topo", "show", "[--staged]", cmd_topo_show,
		 "Show the committed (or staged) topology of the fabric "
		 "(see -f): a summary, the nodes and the links.");

/* ---- node list, link list ---- */

/* node list, or link list (which needs the nodes' names too). */
static int cmd_list(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		    int argc, char **argv)
{
	bool links = !strcmp(cmd->group, "link");
	const char *what = links ? "link list" : "node list";
	struct icfab_json j;
	const struct topo *t;
	struct view v;
	int ret;

	ret = view_load(ctl, cmd, argc, argv, &v, FABRIC_READ_NODES |
			(links ? FABRIC_READ_LINKS : 0), what);
	if (ret)
		return ret;
	t = v.st.topo;
	if (ctl->json) {
		json_init(&j, stdout);
		json_begin_object(&j, NULL);
		json_head(&j, &v);
		if (links)
			json_links(&j, &v);
		else
			json_nodes(&j, &v);
		json_end_object(&j);
	} else if (links ? t->nr_links && print_links_text(&v, "") :
			   t->nr_endpoints + t->nr_switches &&
			   print_nodes_text(&v, "")) {
		ret = icfabctl_fail(ENOMEM, "%s", what);
	}
	view_close(&v);
	return ret;
}

ICFABCTL_COMMAND("node", "list", "[--staged]", cmd_list,
		 "List the nodes: id, name, kind, ports, memory and DMA "
		 "engines or colors (NODE_GET dump).");

ICFABCTL_COMMAND("link", "list", "[--staged]", cmd_list,
		 "List the links: ends, bandwidth, latency, class and "
		 "state (LINK_GET dump).");

/* ---- route show ---- */

/* A node by name, or else by id. */
static int find_node(const struct view *v, const char *s, uint32_t *id)
{
	uint32_t i;

	for (i = 0; i < v->st.topo->nr_nodes; i++) {
		if (view_node(v, i) && !strcmp(v->st.topo->nodes[i].name, s)) {
			*id = i;
			return 0;
		}
	}
	if (!icfabctl_parse_u32(s, &i) && view_node(v, i)) {
		*id = i;
		return 0;
	}
	return -ENOENT;
}

/* The index of the link leaving @node by @port, or -1. */
static int64_t link_out(const struct view *v, uint32_t node, uint32_t port)
{
	const struct topo *t = v->st.topo;
	uint32_t i;

	for (i = 0; i < t->nr_links; i++)
		if (t->links[i].src_node == node &&
		    t->links[i].src_port == port)
			return i;
	return -1;
}

/* route show's read: the nodes, the links and the tables on the way. */
struct route {
	struct view v;
	const char *src_arg, *dst_arg;
	uint32_t src, dst;
	uint16_t **rows;		/* tables read, by node id */
	uint32_t nr_rows;
	uint32_t *hops;			/* link indices */
	uint32_t nr_hops;
};

static void route_forget(struct route *r)
{
	uint32_t i;

	for (i = 0; i < r->nr_rows; i++)
		free(r->rows[i]);
	free(r->rows);
	free(r->hops);
	r->rows = NULL;
	r->hops = NULL;
	r->nr_rows = r->nr_hops = 0;
}

/* Node @n's table, read on first use: NULL with -errno in *@ret. */
static const uint16_t *route_row(struct route *r, uint32_t n, int *ret)
{
	if (!r->rows[n]) {
		r->rows[n] = malloc(r->nr_rows * sizeof(*r->rows[n]));
		if (!r->rows[n]) {
			*ret = -ENOMEM;
			return NULL;
		}
		*ret = fabric_read_route_row(&r->v.nl, r->v.staged, &r->v.st,
					     n, r->rows[n]);
		if (*ret) {
			free(r->rows[n]);
			r->rows[n] = NULL;
			return NULL;
		}
	}
	return r->rows[n];
}

/* Printed: the walk failed. */
#define ROUTE_FAILED	1

/*
 * Follow the tables from r->src towards r->dst, reading each node's
 * table on the way, into r->hops (at most nr_nodes of them). Returns 0,
 * ROUTE_FAILED, or -errno (-EINTR: the configuration changed).
 */
static int walk(struct route *r)
{
	const struct view *v = &r->v;
	char a[32], b[32], c[32];
	const char *sn = node_label(v, r->src, a, sizeof(a));
	const char *dn = node_label(v, r->dst, b, sizeof(b));
	uint32_t n = r->src, k = 0;
	const uint16_t *row;
	uint16_t port;
	int64_t l;
	int ret;

	while (n != r->dst) {
		if (!view_node(v, n))	/* a link to a node we did not see */
			return -EINTR;
		if (k >= v->st.topo->nr_endpoints + v->st.topo->nr_switches) {
			icfabctl_warn("route from %s to %s: routing loop "
				      "(at %s after %" PRIu32 " hops)", sn, dn,
				      node_label(v, n, c, sizeof(c)), k);
			return ROUTE_FAILED;
		}
		row = route_row(r, n, &ret);
		if (!row)
			return ret;
		port = row[r->dst];
		if (port == ICFAB_ROUTE_NONE) {
			if (n == r->src)
				icfabctl_warn("no route from %s to %s", sn, dn);
			else
				icfabctl_warn("no route from %s to %s: it stops "
					      "at %s after %" PRIu32 " hop%s",
					      sn, dn,
					      node_label(v, n, c, sizeof(c)),
					      k, k == 1 ? "" : "s");
			return ROUTE_FAILED;
		}
		l = link_out(v, n, port);
		if (l < 0) {
			icfabctl_warn("no route from %s to %s: %s routes it by "
				      "port %u, which has no link", sn, dn,
				      node_label(v, n, c, sizeof(c)), port);
			return ROUTE_FAILED;
		}
		r->hops[k++] = l;
		n = v->st.topo->links[l].dst_node;
	}
	r->nr_hops = k;
	return 0;
}

/*
 * One attempt for icfab_nl_read_consistent(): the nodes and links, then
 * the walk. A failure that is not the configuration changing is printed
 * here and ends the retries (ROUTE_FAILED).
 */
static int route_attempt(void *arg)
{
	struct route *r = arg;
	const struct topo *t;
	int ret;

	route_forget(r);
	fabric_state_free(&r->v.st);
	ret = fabric_read_once(&r->v.nl, r->v.staged,
			       FABRIC_READ_NODES | FABRIC_READ_LINKS, &r->v.st);
	if (ret)
		return ret;
	if (find_node(&r->v, r->src_arg, &r->src)) {
		icfabctl_warn("route show: no node '%s'", r->src_arg);
		return ROUTE_FAILED;
	}
	if (find_node(&r->v, r->dst_arg, &r->dst)) {
		icfabctl_warn("route show: no node '%s'", r->dst_arg);
		return ROUTE_FAILED;
	}
	if (r->src == r->dst) {
		icfabctl_warn("route show: '%s' and '%s' are the same node",
			      r->src_arg, r->dst_arg);
		return ROUTE_FAILED;
	}
	t = r->v.st.topo;
	r->nr_rows = t->nr_nodes;
	r->rows = calloc(t->nr_nodes, sizeof(*r->rows));
	r->hops = calloc(t->nr_nodes, sizeof(*r->hops));
	if (!r->rows || !r->hops)
		return -ENOMEM;
	return walk(r);
}

static void print_route(struct icfabctl *ctl, const struct route *r)
{
	const struct view *v = &r->v;
	const struct topo_link *links = v->st.topo->links;
	uint64_t latency = 0, bottleneck = UINT64_MAX, bw;
	struct table tb = { .cols = 5, .right = 1 << 1 | 1 << 2 };
	char a[32], b[32], lat[32], bws[32];
	uint32_t i, nr = r->nr_hops;
	struct icfab_json j;
	bool down = false;
	int w;

	for (i = 0; i < nr; i++) {
		const struct topo_link *l = &links[r->hops[i]];

		latency += l->latency_ps;
		bw = link_effective_bw(l);
		if (bw < bottleneck)
			bottleneck = bw;
		if (l->state == ICFAB_LINK_DOWN)
			down = true;
	}
	if (!nr)
		bottleneck = 0;

	if (ctl->json) {
		json_init(&j, stdout);
		json_begin_object(&j, NULL);
		json_head(&j, v);
		json_u64(&j, "src", r->src);
		json_string(&j, "src_name",
			    node_label(v, r->src, a, sizeof(a)));
		json_u64(&j, "dst", r->dst);
		json_string(&j, "dst_name",
			    node_label(v, r->dst, b, sizeof(b)));
		json_begin_array(&j, "hops");
		for (i = 0; i < nr; i++) {
			json_begin_object(&j, NULL);
			json_link_members(&j, v, r->hops[i]);
			json_u64(&j, "effective_bandwidth",
				 link_effective_bw(&links[r->hops[i]]));
			json_end_object(&j);
		}
		json_end_array(&j);
		json_u64(&j, "nr_hops", nr);
		json_u64(&j, "latency_ps", latency);
		json_u64(&j, "bottleneck_bandwidth", bottleneck);
		json_end_object(&j);
		return;
	}

	printf("route from %s to %s (generation %" PRIu64 "%s):\n",
	       node_label(v, r->src, a, sizeof(a)),
	       node_label(v, r->dst, b, sizeof(b)), v->st.generation,
	       v->staged ? ", staged" : "");
	w = src_width(v, r->hops, nr);
	for (i = 0; i < nr; i++)
		if (link_row(&tb, v, r->hops[i], w, false))
			break;
	table_print(&tb, "  ");
	table_free(&tb);
	printf("%" PRIu32 " hop%s, latency %s, bottleneck %s%s\n", nr,
	       nr == 1 ? "" : "s",
	       icfabctl_fmt_latency(lat, sizeof(lat), latency),
	       icfabctl_fmt_bandwidth(bws, sizeof(bws), bottleneck),
	       down ? " (a link on the way is down)" : "");
}

static int cmd_route_show(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			  int argc, char **argv)
{
	const struct topo_node *dn;
	struct route r = { 0 };
	bool staged = false;
	char b[32], kind[32];
	int i, ret;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--staged"))
			staged = true;
		else if (!r.src_arg)
			r.src_arg = argv[i];
		else if (!r.dst_arg)
			r.dst_arg = argv[i];
		else
			return icfabctl_usage_error(cmd, "too many arguments");
	}
	if (!r.dst_arg)
		return icfabctl_usage_error(cmd, "route show needs SRC and DST");

	ret = view_open(ctl, &r.v, staged);
	if (ret)
		return ret;
	ret = icfab_nl_read_consistent(route_attempt, &r, TOPO_ATTEMPTS);
	if (ret == ROUTE_FAILED) {
		ret = ICFABCTL_EXIT_ERROR;
		dn = view_node(&r.v, r.dst);
		if (r.nr_rows && dn && dn->kind != ICFAB_NODE_ENDPOINT)
			icfabctl_warn("%s is a %s: only endpoints are "
				      "destinations",
				      node_label(&r.v, r.dst, b, sizeof(b)),
				      icfabctl_node_kind_name(kind, sizeof(kind),
							      dn->kind));
	} else if (ret == -ENOMEM) {
		ret = icfabctl_fail(ENOMEM, "route show");
	} else {
		ret = view_read_result(&r.v, ret, "route show");
	}
	if (ret == ICFABCTL_EXIT_OK)
		print_route(ctl, &r);
	route_forget(&r);
	view_close(&r.v);
	return ret;
}

ICFABCTL_COMMAND("route", "show", "[--staged] SRC DST", cmd_route_show,
		 "Follow the route tables from node SRC to node DST "
		 "(names or ids), hop by hop (ROUTE_GET).");

/* ---- where a rejected commit went wrong ---- */

/* `node 3 "chip3"`, or `node 3` when it has no name or does not exist. */
static void describe_node(struct icfab_nl *nl, const char *what, uint32_t id,
			  char *buf, size_t len)
{
	struct topo_node n;

	if (!fabric_get_node(nl, true, id, &n) && n.name[0])
		snprintf(buf, len, "%s %" PRIu32 " \"%s\"", what, id, n.name);
	else
		snprintf(buf, len, "%s %" PRIu32, what, id);
}

void icfabctl_err_location(struct icfab_nl *nl,
			   const struct icfab_err_cookie *c,
			   char *buf, size_t len)
{
	char x[96], y[96];
	struct topo_link l;

	switch (c->obj) {
	case ICFAB_ERR_OBJ_NODE:
		describe_node(nl, "node", c->id, buf, len);
		break;
	case ICFAB_ERR_OBJ_LINK:
		if (fabric_get_link(nl, true, c->id, &l)) {
			snprintf(buf, len, "link %" PRIu32, c->id);
			break;
		}
		describe_node(nl, "node", l.src_node, x, sizeof(x));
		describe_node(nl, "node", l.dst_node, y, sizeof(y));
		snprintf(buf, len, "link %" PRIu32 " from %s port %" PRIu32
			 " to %s port %" PRIu32, c->id, x, l.src_port, y,
			 l.dst_port);
		break;
	case ICFAB_ERR_OBJ_ROUTE:
		describe_node(nl, "node", c->id, x, sizeof(x));
		describe_node(nl, "destination", c->id2, y, sizeof(y));
		snprintf(buf, len, "%s, %s", x, y);
		break;
	default:
		snprintf(buf, len, "object %" PRIu32 ", id %" PRIu32
			 ", id2 %" PRIu32, c->obj, c->id, c->id2);
		break;
	}
}
