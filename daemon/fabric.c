// SPDX-License-Identifier: GPL-2.0
/*
 * The module's configuration, read back into a struct topo, compared with
 * a wanted one, and changed by exactly the difference.
 *
 * Applying is never "load everything again": a commit swaps the whole
 * configuration, but what it costs (staging copies, ROUTE_SET rows,
 * validation) and what a reader sees changing should be the difference
 * only. The order of the staged edits follows the module's rules: links
 * go before the nodes they join, nodes come before the links and routes
 * that use them, and node ids stay dense at commit.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include "icfabd.h"

#define READ_RETRIES	20	/* dumps that spanned a commit, in a row */

/* ---- readback ---- */

struct rb {
	bool gen_set;
	uint64_t gen;
	bool mixed;			/* replies from different generations */
	struct topo_node *nodes;	/* indexed by module node id */
	uint8_t *node_present;
	uint32_t nodes_cap, max_node;	/* max_node: highest id + 1 */
	struct topo_link *links;	/* in dump order (ascending ids) */
	uint32_t *link_id;
	uint32_t nr_links, links_cap;
	struct fabric_state *st;
	uint32_t n;			/* nodes, for the route dump */
};

static void rb_gen(struct rb *rb, struct nlattr **tb)
{
	uint64_t g;

	if (!tb[ICFAB_A_FABRIC_GENERATION]) {
		rb->mixed = true;
		return;
	}
	g = nla_get_u64(tb[ICFAB_A_FABRIC_GENERATION]);
	if (rb->gen_set && g != rb->gen)
		rb->mixed = true;
	rb->gen = g;
	rb->gen_set = true;
}

static uint32_t get_u32(struct nlattr **tb, int a, uint32_t dflt)
{
	return tb[a] ? nla_get_u32(tb[a]) : dflt;
}

static uint64_t get_u64(struct nlattr **tb, int a, uint64_t dflt)
{
	return tb[a] ? nla_get_u64(tb[a]) : dflt;
}

static int parse_fabric(struct nlattr **tb, void *arg)
{
	struct rb *rb = arg;
	struct fabric_state *st = rb->st;
	struct topo *t = st->topo;

	rb_gen(rb, tb);
	st->generation = rb->gen;
	t->segment_size = get_u32(tb, ICFAB_A_FABRIC_SEGMENT_SIZE, 0);
	t->time_mode = get_u32(tb, ICFAB_A_FABRIC_TIME_MODE, 0);
	t->dilation = get_u32(tb, ICFAB_A_FABRIC_DILATION, 1);
	st->mem_bytes = get_u64(tb, ICFAB_A_FABRIC_MEM_BYTES, 0);
	st->commit_ps = get_u64(tb, ICFAB_A_FABRIC_COMMIT_PS, 0);
	st->has_staged = tb[ICFAB_A_FABRIC_HAS_STAGED] &&
			 nla_get_u8(tb[ICFAB_A_FABRIC_HAS_STAGED]);
	return 0;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t n = *cap ? *cap : 64;
	void *q;

	if (need < *cap)
		return 0;
	while (n <= need)
		n *= 2;
	q = realloc(*p, (size_t)n * elem);
	if (!q)
		return -ENOMEM;
	memset((char *)q + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
	*p = q;
	*cap = n;
	return 0;
}

static int parse_node(struct nlattr **tb, void *arg)
{
	struct rb *rb = arg;
	struct topo_node *n;
	uint32_t id, cap;

	rb_gen(rb, tb);
	if (!tb[ICFAB_A_NODE_ID] || !tb[ICFAB_A_NODE_KIND])
		return -EPROTO;
	id = nla_get_u32(tb[ICFAB_A_NODE_ID]);
	cap = rb->nodes_cap;
	if (grow((void **)&rb->nodes, &rb->nodes_cap, id, sizeof(*rb->nodes)) ||
	    grow((void **)&rb->node_present, &cap, id, 1))
		return -ENOMEM;
	n = &rb->nodes[id];
	memset(n, 0, sizeof(*n));
	if (tb[ICFAB_A_NODE_NAME])
		snprintf(n->name, sizeof(n->name), "%s",
			 (const char *)nla_data(tb[ICFAB_A_NODE_NAME]));
	n->kind = nla_get_u32(tb[ICFAB_A_NODE_KIND]);
	n->nr_ports = get_u32(tb, ICFAB_A_NODE_PORTS, 0);
	n->next_port = n->nr_ports;
	n->ports_fixed = true;
	n->mem_bytes = get_u64(tb, ICFAB_A_NODE_MEM_BYTES, 0);
	n->dma_engines = get_u32(tb, ICFAB_A_NODE_DMA_ENGINES, 0);
	n->colors = get_u32(tb, ICFAB_A_NODE_COLORS, 0);
	n->grid_pos = TOPO_NONE;
	rb->node_present[id] = 1;
	if (id + 1 > rb->max_node)
		rb->max_node = id + 1;
	return 0;
}

static int parse_link(struct nlattr **tb, void *arg)
{
	struct rb *rb = arg;
	struct topo_link *l;
	uint32_t cap = rb->links_cap;

	rb_gen(rb, tb);
	if (!tb[ICFAB_A_LINK_ID])
		return -EPROTO;
	if (grow((void **)&rb->links, &rb->links_cap, rb->nr_links,
		 sizeof(*rb->links)) ||
	    grow((void **)&rb->link_id, &cap, rb->nr_links,
		 sizeof(*rb->link_id)))
		return -ENOMEM;
	l = &rb->links[rb->nr_links];
	memset(l, 0, sizeof(*l));
	l->src_node = get_u32(tb, ICFAB_A_LINK_SRC_NODE, 0);
	l->src_port = get_u32(tb, ICFAB_A_LINK_SRC_PORT, 0);
	l->dst_node = get_u32(tb, ICFAB_A_LINK_DST_NODE, 0);
	l->dst_port = get_u32(tb, ICFAB_A_LINK_DST_PORT, 0);
	l->bandwidth = get_u64(tb, ICFAB_A_LINK_BANDWIDTH, 0);
	l->latency_ps = get_u64(tb, ICFAB_A_LINK_LATENCY_PS, 0);
	l->class = get_u32(tb, ICFAB_A_LINK_CLASS, 0);
	l->state = get_u32(tb, ICFAB_A_LINK_STATE, ICFAB_LINK_UP);
	l->bw_permille = l->state == ICFAB_LINK_DEGRADED ?
		get_u32(tb, ICFAB_A_LINK_BW_PERMILLE, 0) : 0;
	l->up_at_ps = get_u64(tb, ICFAB_A_LINK_UP_AT_PS, 0);
	l->hold_fail = tb[ICFAB_A_LINK_HOLD_FAIL] &&
		       nla_get_u8(tb[ICFAB_A_LINK_HOLD_FAIL]);
	l->peer = TOPO_NONE;
	rb->link_id[rb->nr_links++] = nla_get_u32(tb[ICFAB_A_LINK_ID]);
	return 0;
}

static int parse_routes(struct nlattr **tb, void *arg)
{
	struct rb *rb = arg;
	struct fabric_state *st = rb->st;
	const uint16_t *ports;
	uint32_t node, first, cnt, i, n = rb->n;

	rb_gen(rb, tb);
	if (!tb[ICFAB_A_ROUTE_NODE])
		return -EPROTO;
	node = nla_get_u32(tb[ICFAB_A_ROUTE_NODE]);
	first = get_u32(tb, ICFAB_A_ROUTE_DST_FIRST, 0);
	if (node >= n)
		return -EPROTO;
	if (!tb[ICFAB_A_ROUTE_PORTS])
		return 0;
	ports = nla_data(tb[ICFAB_A_ROUTE_PORTS]);
	cnt = nla_len(tb[ICFAB_A_ROUTE_PORTS]) / sizeof(uint16_t);
	for (i = 0; i < cnt; i++) {
		uint16_t p;

		memcpy(&p, ports + i, sizeof(p));	/* 4-byte aligned only */
		if (first + i < n)
			st->topo->routes[(size_t)node * n + first + i] = p;
		else if (p != ICFAB_ROUTE_NONE)
			st->row_tail[node] = 1;
	}
	if (first + cnt > st->routes_len[node])
		st->routes_len[node] = first + cnt;
	return 0;
}

static void rb_free(struct rb *rb)
{
	free(rb->nodes);
	free(rb->node_present);
	free(rb->links);
	free(rb->link_id);
	memset(rb, 0, sizeof(*rb));
}

void fabric_state_free(struct fabric_state *st)
{
	topo_free(st->topo);
	free(st->link_id);
	free(st->routes_len);
	free(st->row_tail);
	memset(st, 0, sizeof(*st));
}

static struct nl_msg *read_msg(struct icfab_nl *nl, uint8_t cmd, bool dump,
			       bool staged)
{
	struct nl_msg *msg = icfab_nl_msg(nl, cmd, dump ? NLM_F_DUMP : 0, 0);

	if (msg && staged && nla_put_flag(msg, ICFAB_A_STAGED)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* The other direction of each cable, from a (node, port) -> link map. */
static int link_peers(struct topo *t)
{
	uint32_t *base, *out, i;
	size_t total = 0;

	base = calloc(t->nr_nodes + 1, sizeof(*base));
	if (!base)
		return -ENOMEM;
	for (i = 0; i < t->nr_nodes; i++) {
		base[i] = total;
		total += t->nodes[i].nr_ports;
	}
	base[t->nr_nodes] = total;
	out = malloc((total + 1) * sizeof(*out));
	if (!out) {
		free(base);
		return -ENOMEM;
	}
	memset(out, 0xff, (total + 1) * sizeof(*out));
	for (i = 0; i < t->nr_links; i++) {
		const struct topo_link *l = &t->links[i];

		if (l->src_node < t->nr_nodes &&
		    l->src_port < t->nodes[l->src_node].nr_ports)
			out[base[l->src_node] + l->src_port] = i;
	}
	for (i = 0; i < t->nr_links; i++) {
		struct topo_link *l = &t->links[i];
		uint32_t back;

		if (l->dst_node >= t->nr_nodes ||
		    l->dst_port >= t->nodes[l->dst_node].nr_ports)
			continue;
		back = out[base[l->dst_node] + l->dst_port];
		if (back != TOPO_NONE && t->links[back].dst_node == l->src_node &&
		    t->links[back].dst_port == l->src_port)
			l->peer = back;
	}
	free(base);
	free(out);
	return 0;
}

/* ICFABD_DEBUG=1 in the environment: readback phase timings on stderr. */
static double dbg_t0;

static void dbg(const char *what)
{
	struct timespec ts;
	double now;

	if (!getenv("ICFABD_DEBUG"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec + ts.tv_nsec / 1e9;
	fprintf(stderr, "icfabd: debug: readback %s %.3f s\n", what, dbg_t0 ? now - dbg_t0 : 0);
	dbg_t0 = now;
}

static int read_once(struct icfab_nl *nl, bool staged, struct fabric_state *st)
{
	struct rb rb = { .st = st };
	struct topo *t;
	uint32_t i, n;
	size_t cells;
	int ret;

	t = st->topo = topo_new();
	if (!t)
		return -ENOMEM;
	strcpy(t->name, "module");

	dbg("start");
	ret = icfab_nl_request(nl, read_msg(nl, ICFAB_CMD_FABRIC_GET, false,
					    staged), parse_fabric, &rb);
	dbg("fabric");
	if (!ret)
		ret = icfab_nl_dump(nl, read_msg(nl, ICFAB_CMD_NODE_GET, true,
						 staged), parse_node, &rb);
	if (ret)
		goto out;

	/* The committed configuration has dense ids; a staged one may not. */
	n = rb.max_node;
	for (i = 0; i < n; i++)
		if (!rb.node_present[i]) {
			ret = -EPROTO;
			goto out;
		}
	t->nodes = rb.nodes ? rb.nodes : calloc(1, sizeof(*t->nodes));
	t->cap_nodes = rb.nodes ? rb.nodes_cap : 1;
	rb.nodes = NULL;
	if (!t->nodes) {
		ret = -ENOMEM;
		goto out;
	}
	dbg("nodes");
	t->nr_nodes = n;
	for (i = 0; i < n; i++) {
		if (t->nodes[i].kind == ICFAB_NODE_ENDPOINT)
			t->nr_endpoints++;
		else
			t->nr_switches++;
	}

	ret = icfab_nl_dump(nl, read_msg(nl, ICFAB_CMD_LINK_GET, true, staged),
			    parse_link, &rb);
	if (ret)
		goto out;
	t->links = rb.links;
	t->cap_links = rb.links_cap;
	t->nr_links = rb.nr_links;
	st->link_id = rb.link_id;
	rb.links = NULL;
	rb.link_id = NULL;
	dbg("links");
	ret = link_peers(t);
	dbg("peers");
	if (ret)
		goto out;

	cells = (size_t)n * n;
	t->routes = malloc(cells * sizeof(*t->routes) + 1);
	st->routes_len = calloc(n + 1, sizeof(*st->routes_len));
	st->row_tail = calloc(n + 1, 1);
	if (!t->routes || !st->routes_len || !st->row_tail) {
		ret = -ENOMEM;
		goto out;
	}
	memset(t->routes, 0xff, cells * sizeof(*t->routes));
	rb.n = n;
	ret = icfab_nl_dump(nl, read_msg(nl, ICFAB_CMD_ROUTE_GET, true, staged),
			    parse_routes, &rb);
	dbg("routes");
	if (!ret && rb.mixed)
		ret = -EINTR;
out:
	rb_free(&rb);
	return ret;
}

/*
 * Read the committed (or the staged) configuration: fabric parameters,
 * nodes, links and every route table, all from one generation. A read
 * that spans a commit is done again.
 */
int fabric_read(struct icfab_nl *nl, bool staged, struct fabric_state *st)
{
	int ret, tries;

	for (tries = 0; tries < READ_RETRIES; tries++) {
		memset(st, 0, sizeof(*st));
		ret = read_once(nl, staged, st);
		if (ret != -EINTR)
			break;
		fabric_state_free(st);
	}
	if (ret)
		fabric_state_free(st);
	return ret;
}

struct topo *fabric_take_topo(struct fabric_state *st)
{
	struct topo *t = st->topo;

	st->topo = NULL;
	return t;
}

/* ---- difference ---- */

enum { ACT_KEEP, ACT_ADD, ACT_REPLACE, ACT_STATE };

struct plan {
	uint8_t *node;			/* per wanted node: ACT_* */
	uint8_t *link;			/* per wanted link id: ACT_* */
	uint8_t *del;			/* per module link (index): delete it */
	uint32_t *have_of;		/* wanted link id -> module link index */
	uint8_t *row;			/* per wanted node: rewrite its routes */
	uint32_t *row_len;		/* entries to send */
	uint32_t have_ids;		/* size of the module's link-id space */
};

static void plan_free(struct plan *p)
{
	free(p->node);
	free(p->link);
	free(p->del);
	free(p->have_of);
	free(p->row);
	free(p->row_len);
}

static bool node_same(const struct topo_node *a, const struct topo_node *b)
{
	if (a->kind != b->kind || a->nr_ports != b->nr_ports ||
	    strcmp(a->name, b->name))
		return false;
	if (a->kind == ICFAB_NODE_ENDPOINT)
		return a->mem_bytes == b->mem_bytes &&
		       a->dma_engines == b->dma_engines;
	return a->colors == b->colors;
}

static bool link_same(const struct topo_link *a, const struct topo_link *b)
{
	return a->src_node == b->src_node && a->src_port == b->src_port &&
	       a->dst_node == b->dst_node && a->dst_port == b->dst_port &&
	       a->bandwidth == b->bandwidth && a->latency_ps == b->latency_ps &&
	       a->class == b->class;
}

static bool state_same(const struct topo_link *a, const struct topo_link *b)
{
	return a->state == b->state &&
	       (a->state != ICFAB_LINK_DEGRADED ||
		a->bw_permille == b->bw_permille);
}

static uint16_t have_route(const struct fabric_state *h, uint32_t u,
			   uint32_t d)
{
	uint32_t n = h->topo->nr_nodes;

	return u < n && d < n ? h->topo->routes[(size_t)u * n + d] :
				ICFAB_ROUTE_NONE;
}

/* Entries of row u that differ; the tail beyond the wanted nodes counts. */
static uint32_t row_diff(const struct topo *w, const struct fabric_state *h,
			 uint32_t u, bool fresh)
{
	uint32_t nw = w->nr_nodes, nh = h->topo->nr_nodes, d, cnt = 0;

	for (d = 0; d < nw; d++) {
		uint16_t want = w->routes[(size_t)u * nw + d];
		uint16_t have = fresh ? ICFAB_ROUTE_NONE : have_route(h, u, d);

		cnt += want != have;
	}
	if (!fresh && u < nh) {
		for (d = nw; d < nh; d++)
			cnt += have_route(h, u, d) != ICFAB_ROUTE_NONE;
		cnt += h->row_tail[u];
	}
	return cnt;
}

static int plan_make(const struct topo *w, const struct fabric_state *h,
		     struct plan *p, struct fabric_diff *d)
{
	const struct topo *ht = h->topo;
	uint32_t nw = w->nr_nodes, nh = ht->nr_nodes, i, ids = w->nr_links;

	memset(p, 0, sizeof(*p));
	memset(d, 0, sizeof(*d));
	for (i = 0; i < ht->nr_links; i++)
		if (h->link_id[i] + 1 > ids)
			ids = h->link_id[i] + 1;
	p->have_ids = ids;
	p->node = calloc(nw + 1, 1);
	p->link = calloc(w->nr_links + 1, 1);
	p->del = calloc(ht->nr_links + 1, 1);
	p->have_of = malloc((ids + 1) * sizeof(*p->have_of));
	p->row = calloc(nw + 1, 1);
	p->row_len = calloc(nw + 1, sizeof(*p->row_len));
	if (!p->node || !p->link || !p->del || !p->have_of || !p->row ||
	    !p->row_len) {
		plan_free(p);
		return -ENOMEM;
	}

	d->params = w->segment_size != ht->segment_size ||
		    w->time_mode != ht->time_mode ||
		    w->dilation != ht->dilation;

	for (i = 0; i < nw; i++) {
		if (i >= nh) {
			p->node[i] = ACT_ADD;
			d->nodes_added++;
		} else if (!node_same(&w->nodes[i], &ht->nodes[i])) {
			p->node[i] = ACT_REPLACE;
			d->nodes_replaced++;
		}
	}
	if (nh > nw)
		d->nodes_removed = nh - nw;

	memset(p->have_of, 0xff, (ids + 1) * sizeof(*p->have_of));
	for (i = 0; i < ht->nr_links; i++)
		p->have_of[h->link_id[i]] = i;
	for (i = 0; i < w->nr_links; i++) {
		const struct topo_link *wl = &w->links[i];
		uint32_t hi = p->have_of[i];

		if (hi == TOPO_NONE) {
			p->link[i] = ACT_ADD;
			d->links_added++;
		} else if (!link_same(wl, &ht->links[hi]) ||
			   p->node[wl->src_node] != ACT_KEEP ||
			   p->node[wl->dst_node] != ACT_KEEP) {
			p->link[i] = ACT_REPLACE;
			p->del[hi] = 1;
			d->links_replaced++;
		} else if (!state_same(wl, &ht->links[hi])) {
			p->link[i] = ACT_STATE;
			d->link_states++;
		}
	}
	for (i = 0; i < ht->nr_links; i++)
		if (h->link_id[i] >= w->nr_links) {
			p->del[i] = 1;
			d->links_removed++;
		}

	for (i = 0; i < nw; i++) {
		bool fresh = p->node[i] != ACT_KEEP;
		uint32_t cnt = row_diff(w, h, i, fresh);

		if (!cnt)
			continue;
		p->row[i] = 1;
		p->row_len[i] = nw;
		/* Clear what a shrunk fabric left at the end of a kept row. */
		if (!fresh && h->routes_len[i] > nw)
			p->row_len[i] = h->routes_len[i];
		d->route_rows++;
		d->route_entries += cnt;
	}
	return 0;
}

static void link_text(const struct topo *t, const struct topo_link *l,
		      char *buf, size_t len)
{
	char bw[32], lat[32];
	const char *a = l->src_node < t->nr_nodes ?
		t->nodes[l->src_node].name : "?";
	const char *b = l->dst_node < t->nr_nodes ?
		t->nodes[l->dst_node].name : "?";

	snprintf(buf, len, "%s.%u -> %s.%u %s %s %s %s", a, l->src_port, b,
		 l->dst_port, topo_fmt_bandwidth(bw, sizeof(bw), l->bandwidth),
		 topo_fmt_time(lat, sizeof(lat), l->latency_ps),
		 topo_class_name(l->class), topo_state_name(l->state));
}

static void node_text(const struct topo_node *n, char *buf, size_t len)
{
	char mem[32];

	if (n->kind == ICFAB_NODE_ENDPOINT)
		snprintf(buf, len, "'%s' endpoint, %u ports, memory %s, %u DMA engines",
			 n->name, n->nr_ports,
			 topo_fmt_size(mem, sizeof(mem), n->mem_bytes),
			 n->dma_engines);
	else
		snprintf(buf, len, "'%s' switch, %u ports, %u colors", n->name,
			 n->nr_ports, n->colors);
}

struct lines {
	FILE *f;
	unsigned int max, shown, skipped;
};

static void line(struct lines *ls, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void line(struct lines *ls, const char *fmt, ...)
{
	va_list ap;

	if (!ls->f)
		return;
	if (ls->shown >= ls->max) {
		ls->skipped++;
		return;
	}
	ls->shown++;
	va_start(ap, fmt);
	vfprintf(ls->f, fmt, ap);
	va_end(ap);
	fputc('\n', ls->f);
}

/* "-" the module has it, "+" the wanted configuration has it. */
static void diff_lines(const struct topo *w, const struct fabric_state *h,
		       const struct plan *p, struct lines *ls)
{
	const struct topo *ht = h->topo;
	char a[160], b[160];
	uint32_t i;

	if (w->segment_size != ht->segment_size)
		line(ls, "fabric: segment size %u -> %u bytes",
		     ht->segment_size, w->segment_size);
	if (w->time_mode != ht->time_mode)
		line(ls, "fabric: time mode %u -> %u", ht->time_mode,
		     w->time_mode);
	if (w->dilation != ht->dilation)
		line(ls, "fabric: dilation %u -> %u", ht->dilation,
		     w->dilation);
	for (i = 0; i < w->nr_nodes; i++) {
		if (p->node[i] == ACT_KEEP)
			continue;
		node_text(&w->nodes[i], b, sizeof(b));
		if (p->node[i] == ACT_ADD) {
			line(ls, "+ node %u %s", i, b);
		} else {
			node_text(&ht->nodes[i], a, sizeof(a));
			line(ls, "~ node %u %s\n         was %s", i, b, a);
		}
	}
	for (i = w->nr_nodes; i < ht->nr_nodes; i++) {
		node_text(&ht->nodes[i], a, sizeof(a));
		line(ls, "- node %u %s", i, a);
	}
	for (i = 0; i < w->nr_links; i++) {
		uint32_t hi = p->have_of[i];

		if (p->link[i] == ACT_KEEP)
			continue;
		link_text(w, &w->links[i], b, sizeof(b));
		if (p->link[i] == ACT_ADD) {
			line(ls, "+ link %u %s", i, b);
		} else if (p->link[i] == ACT_STATE) {
			line(ls, "~ link %u %s: state %s -> %s", i, b,
			     topo_state_name(ht->links[hi].state),
			     topo_state_name(w->links[i].state));
		} else {
			link_text(ht, &ht->links[hi], a, sizeof(a));
			line(ls, "~ link %u %s\n         was %s", i, b, a);
		}
	}
	for (i = 0; i < ht->nr_links; i++) {
		if (h->link_id[i] < w->nr_links)
			continue;
		link_text(ht, &ht->links[i], a, sizeof(a));
		line(ls, "- link %u %s", h->link_id[i], a);
	}
	for (i = 0; i < w->nr_nodes; i++)
		if (p->row[i])
			line(ls, "~ routes of node %u '%s': %u entries differ", i,
			     w->nodes[i].name,
			     row_diff(w, h, i, p->node[i] != ACT_KEEP));
}

int fabric_diff(const struct topo *want, const struct fabric_state *have,
		struct fabric_diff *d, FILE *out, unsigned int max_lines)
{
	struct lines ls = { .f = out, .max = max_lines };
	struct plan p;
	int ret;

	ret = plan_make(want, have, &p, d);
	if (ret)
		return ret;
	if (out) {
		diff_lines(want, have, &p, &ls);
		if (ls.skipped)
			fprintf(out, "... and %u more differences\n", ls.skipped);
	}
	plan_free(&p);
	return 0;
}

/* ---- apply ---- */

struct stager {
	struct icfab_nl *nl;
	char *why;
	size_t why_len;
};

/* Send one edit; on failure say which step failed and why. */
static int stage_send(struct stager *s, struct nl_msg *msg, const char *what,
		uint32_t id)
{
	char err[384];
	int ret;

	if (!msg)
		ret = -ENOMEM;
	else
		ret = icfab_nl_request(s->nl, msg, NULL, NULL);
	if (ret)
		snprintf(s->why, s->why_len, "%s %u: %s", what, id,
			 icfab_nl_strerror(s->nl, ret, err, sizeof(err)));
	return ret;
}

static int stage_params(struct stager *s, const struct topo *w,
			const struct topo *ht)
{
	struct nl_msg *m = icfab_nl_msg(s->nl, ICFAB_CMD_FABRIC_SET, 0, 0);

	if (m && ((w->segment_size != ht->segment_size &&
		   nla_put_u32(m, ICFAB_A_FABRIC_SEGMENT_SIZE, w->segment_size)) ||
		  (w->time_mode != ht->time_mode &&
		   nla_put_u32(m, ICFAB_A_FABRIC_TIME_MODE, w->time_mode)) ||
		  (w->dilation != ht->dilation &&
		   nla_put_u32(m, ICFAB_A_FABRIC_DILATION, w->dilation)))) {
		nlmsg_free(m);
		m = NULL;
	}
	return stage_send(s, m, "fabric parameters", s->nl->fabric_id);
}

static int stage_id(struct stager *s, uint8_t cmd, int attr, uint32_t id,
		    const char *what)
{
	struct nl_msg *m = icfab_nl_msg(s->nl, cmd, 0, 0);

	if (m && nla_put_u32(m, attr, id)) {
		nlmsg_free(m);
		m = NULL;
	}
	return stage_send(s, m, what, id);
}

static int stage_node(struct stager *s, uint32_t id, const struct topo_node *n)
{
	struct nl_msg *m = icfab_nl_msg(s->nl, ICFAB_CMD_NODE_NEW, 0, 0);
	int bad = !m;

	if (m) {
		bad |= nla_put_u32(m, ICFAB_A_NODE_ID, id);
		bad |= nla_put_u32(m, ICFAB_A_NODE_KIND, n->kind);
		bad |= nla_put_string(m, ICFAB_A_NODE_NAME, n->name);
		bad |= nla_put_u32(m, ICFAB_A_NODE_PORTS, n->nr_ports);
		if (n->kind == ICFAB_NODE_ENDPOINT) {
			bad |= nla_put_u64(m, ICFAB_A_NODE_MEM_BYTES,
					   n->mem_bytes);
			bad |= nla_put_u32(m, ICFAB_A_NODE_DMA_ENGINES,
					   n->dma_engines);
		} else {
			bad |= nla_put_u32(m, ICFAB_A_NODE_COLORS, n->colors);
		}
		if (bad) {
			nlmsg_free(m);
			m = NULL;
		}
	}
	return stage_send(s, m, "adding node", id);
}

static int stage_link(struct stager *s, uint32_t id, const struct topo_link *l)
{
	struct nl_msg *m = icfab_nl_msg(s->nl, ICFAB_CMD_LINK_NEW, 0, 0);
	int bad = !m;

	if (m) {
		bad |= nla_put_u32(m, ICFAB_A_LINK_ID, id);
		bad |= nla_put_u32(m, ICFAB_A_LINK_SRC_NODE, l->src_node);
		bad |= nla_put_u32(m, ICFAB_A_LINK_SRC_PORT, l->src_port);
		bad |= nla_put_u32(m, ICFAB_A_LINK_DST_NODE, l->dst_node);
		bad |= nla_put_u32(m, ICFAB_A_LINK_DST_PORT, l->dst_port);
		bad |= nla_put_u64(m, ICFAB_A_LINK_BANDWIDTH, l->bandwidth);
		bad |= nla_put_u64(m, ICFAB_A_LINK_LATENCY_PS, l->latency_ps);
		bad |= nla_put_u32(m, ICFAB_A_LINK_CLASS, l->class);
		bad |= nla_put_u32(m, ICFAB_A_LINK_STATE, l->state);
		if (l->state == ICFAB_LINK_DEGRADED)
			bad |= nla_put_u32(m, ICFAB_A_LINK_BW_PERMILLE,
					   l->bw_permille);
		/* Only OCS circuits use these: older modules never see them. */
		if (l->up_delay_ps)
			bad |= nla_put_u64(m, ICFAB_A_LINK_UP_DELAY_PS,
					   l->up_delay_ps);
		if (l->up_delay_ps || l->hold_fail)
			bad |= nla_put_u8(m, ICFAB_A_LINK_HOLD_FAIL,
					  l->hold_fail);
		if (bad) {
			nlmsg_free(m);
			m = NULL;
		}
	}
	return stage_send(s, m, "adding link", id);
}

static int stage_link_state(struct stager *s, uint32_t id,
			    const struct topo_link *l)
{
	struct nl_msg *m = icfab_nl_msg(s->nl, ICFAB_CMD_LINK_SET, 0, 0);

	if (m && (nla_put_u32(m, ICFAB_A_LINK_ID, id) ||
		  nla_put_u32(m, ICFAB_A_LINK_STATE, l->state) ||
		  (l->state == ICFAB_LINK_DEGRADED &&
		   nla_put_u32(m, ICFAB_A_LINK_BW_PERMILLE, l->bw_permille)))) {
		nlmsg_free(m);
		m = NULL;
	}
	return stage_send(s, m, "setting the state of link", id);
}

/* A whole row in one message, padded with NONE past the wanted nodes. */
static int stage_row(struct stager *s, const struct topo *w, uint32_t u,
		     uint32_t len, uint16_t *buf)
{
	size_t bytes = (size_t)len * sizeof(uint16_t);
	struct nl_msg *m = icfab_nl_msg(s->nl, ICFAB_CMD_ROUTE_SET, 0, bytes);
	uint32_t nw = w->nr_nodes, d;

	for (d = 0; d < len; d++)
		buf[d] = d < nw ? w->routes[(size_t)u * nw + d] :
				  ICFAB_ROUTE_NONE;
	if (m && (nla_put_u32(m, ICFAB_A_ROUTE_NODE, u) ||
		  nla_put_u32(m, ICFAB_A_ROUTE_DST_FIRST, 0) ||
		  nla_put(m, ICFAB_A_ROUTE_PORTS, bytes, buf))) {
		nlmsg_free(m);
		m = NULL;
	}
	return stage_send(s, m, "routes of node", u);
}

static int stage_all(struct stager *s, const struct topo *w,
		     const struct fabric_state *h, const struct plan *p,
		     const struct fabric_diff *d)
{
	const struct topo *ht = h->topo;
	uint32_t i, maxlen = w->nr_nodes + 1;
	uint16_t *buf;
	int ret = 0;

	if (d->params) {
		ret = stage_params(s, w, ht);
		if (ret)
			return ret;
	}
	for (i = 0; i < ht->nr_links && !ret; i++)
		if (p->del[i])
			ret = stage_id(s, ICFAB_CMD_LINK_DEL, ICFAB_A_LINK_ID,
				       h->link_id[i], "deleting link");
	/* From the end, so that the ids stay dense however far it gets. */
	for (i = ht->nr_nodes; i-- > 0 && !ret;)
		if (i >= w->nr_nodes || p->node[i] == ACT_REPLACE)
			ret = stage_id(s, ICFAB_CMD_NODE_DEL, ICFAB_A_NODE_ID,
				       i, "deleting node");
	for (i = 0; i < w->nr_nodes && !ret; i++)
		if (p->node[i] != ACT_KEEP)
			ret = stage_node(s, i, &w->nodes[i]);
	for (i = 0; i < w->nr_links && !ret; i++) {
		if (p->link[i] == ACT_ADD || p->link[i] == ACT_REPLACE)
			ret = stage_link(s, i, &w->links[i]);
		else if (p->link[i] == ACT_STATE)
			ret = stage_link_state(s, i, &w->links[i]);
	}
	if (ret)
		return ret;

	for (i = 0; i < w->nr_nodes; i++)
		if (p->row_len[i] > maxlen)
			maxlen = p->row_len[i];
	buf = malloc((size_t)maxlen * sizeof(*buf));
	if (!buf) {
		snprintf(s->why, s->why_len, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (i = 0; i < w->nr_nodes && !ret; i++)
		if (p->row[i])
			ret = stage_row(s, w, i, p->row_len[i], buf);
	free(buf);
	return ret;
}

int fabric_apply(struct icfab_nl *nl, const struct topo *want,
		 const struct fabric_state *have, struct fabric_diff *d,
		 char *why, size_t why_len)
{
	struct stager s = { .nl = nl, .why = why, .why_len = why_len };
	struct nl_msg *m;
	struct plan p;
	int ret;

	why[0] = '\0';
	if (!want->routes) {
		snprintf(why, why_len, "the configuration has no routes");
		return -EINVAL;
	}
	ret = plan_make(want, have, &p, d);
	if (ret) {
		snprintf(why, why_len, "%s", strerror(-ret));
		return ret;
	}
	if (fabric_diff_empty(d))
		goto out;

	ret = stage_all(&s, want, have, &p, d);
	if (!ret) {
		m = icfab_nl_msg(nl, ICFAB_CMD_FABRIC_COMMIT, 0, 0);
		if (m && nla_put_u64(m, ICFAB_A_FABRIC_GENERATION,
				     have->generation)) {
			nlmsg_free(m);
			m = NULL;
		}
		ret = stage_send(&s, m, "commit on generation",
			   (uint32_t)have->generation);
	}
	if (ret) {
		/* Nothing staged (EBUSY from another owner) is fine too. */
		m = icfab_nl_msg(nl, ICFAB_CMD_FABRIC_ABORT, 0, 0);
		if (m) {
			struct icfab_nl_err saved = nl->last;

			icfab_nl_request(nl, m, NULL, NULL);
			nl->last = saved;
		}
	}
out:
	plan_free(&p);
	return ret;
}

/* ---- models ---- */

uint32_t fabric_adopt_link_states(struct topo *t, const struct fabric_state *st)
{
	const struct topo *ht = st->topo;
	uint32_t i, changed = 0;

	for (i = 0; i < ht->nr_links; i++) {
		uint32_t id = st->link_id[i];
		const struct topo_link *hl = &ht->links[i];

		if (id >= t->nr_links || !link_same(&t->links[id], hl) ||
		    state_same(&t->links[id], hl))
			continue;
		topo_link_set_state(t, id, hl->state, hl->bw_permille);
		changed++;
	}
	return changed;
}

#define SYNC_TRIES	3	/* reads and applies when others commit too */

int fabric_sync(uint32_t fabric_id, const struct topo *want,
		struct fabric_result *res, char *why, size_t why_len)
{
	struct fabric_state st;
	struct icfab_nl nl;
	char err[384];
	int ret, tries;

	memset(res, 0, sizeof(*res));
	why[0] = '\0';
	ret = icfab_nl_open(&nl, fabric_id);
	if (ret) {
		snprintf(why, why_len, "netlink family '%s': %s",
			 ICFAB_GENL_NAME, ret == -ENOENT ?
			 "not found (is the icfab module loaded?)" :
			 strerror(-ret));
		return ret;
	}
	for (tries = 0; tries < SYNC_TRIES; tries++) {
		ret = fabric_read(&nl, false, &st);
		if (ret) {
			snprintf(why, why_len, "reading the module's configuration: %s",
				 icfab_nl_strerror(&nl, ret, err, sizeof(err)));
			break;
		}
		res->gen_before = res->gen_after = st.generation;
		ret = fabric_apply(&nl, want, &st, &res->diff, why, why_len);
		fabric_state_free(&st);
		if (ret != -ESTALE)
			break;
	}
	if (!ret) {
		if (!fabric_diff_empty(&res->diff))
			res->gen_after = res->gen_before + 1;
		res->nr_nodes = want->nr_nodes;
		res->nr_links = want->nr_links;
		/* When our commit took effect; best effort, 0 if unknown. */
		fabric_commit_time(&nl, NULL, &res->commit_ps);
	}
	icfab_nl_close(&nl);
	return ret;
}

struct holds {
	struct topo *t;
};

static int parse_hold(struct nlattr **tb, void *arg)
{
	struct holds *h = arg;
	uint32_t id;

	if (!tb[ICFAB_A_LINK_ID])
		return -EPROTO;
	id = nla_get_u32(tb[ICFAB_A_LINK_ID]);
	if (id < h->t->nr_links) {
		h->t->links[id].up_at_ps = get_u64(tb, ICFAB_A_LINK_UP_AT_PS, 0);
		h->t->links[id].hold_fail = tb[ICFAB_A_LINK_HOLD_FAIL] &&
			nla_get_u8(tb[ICFAB_A_LINK_HOLD_FAIL]);
	}
	return 0;
}

int fabric_read_holds(struct icfab_nl *nl, struct topo *t)
{
	struct holds h = { .t = t };
	uint32_t i;

	for (i = 0; i < t->nr_links; i++)
		t->links[i].up_at_ps = 0;
	return icfab_nl_dump(nl, read_msg(nl, ICFAB_CMD_LINK_GET, true, false),
			     parse_hold, &h);
}

struct commit_time {
	uint64_t gen, ps;
};

static int parse_commit_time(struct nlattr **tb, void *arg)
{
	struct commit_time *ct = arg;

	ct->gen = get_u64(tb, ICFAB_A_FABRIC_GENERATION, 0);
	ct->ps = get_u64(tb, ICFAB_A_FABRIC_COMMIT_PS, 0);
	return 0;
}

int fabric_commit_time(struct icfab_nl *nl, uint64_t *generation,
		       uint64_t *commit_ps)
{
	struct commit_time ct = { 0, 0 };
	int ret;

	ret = icfab_nl_request(nl, read_msg(nl, ICFAB_CMD_FABRIC_GET, false,
					    false), parse_commit_time, &ct);
	if (generation)
		*generation = ct.gen;
	*commit_ps = ct.ps;
	return ret;
}

int fabric_route_check(const struct fabric_state *st,
		       struct fabric_route_check *rc)
{
	const struct topo *t = st->topo;
	uint32_t n = t->nr_nodes, u, dst, i, *base, *out;
	size_t total = 0;

	memset(rc, 0, sizeof(*rc));
	base = calloc(n + 1, sizeof(*base));
	if (!base)
		return -ENOMEM;
	for (u = 0; u < n; u++) {
		base[u] = total;
		total += t->nodes[u].nr_ports;
	}
	out = malloc((total + 1) * sizeof(*out));
	if (!out) {
		free(base);
		return -ENOMEM;
	}
	memset(out, 0xff, (total + 1) * sizeof(*out));
	for (i = 0; i < t->nr_links; i++) {
		const struct topo_link *l = &t->links[i];

		if (l->state == ICFAB_LINK_DOWN)
			rc->links_down++;
		else if (l->state == ICFAB_LINK_DEGRADED)
			rc->links_degraded++;
		if (l->src_node < n && l->src_port < t->nodes[l->src_node].nr_ports)
			out[base[l->src_node] + l->src_port] = i;
	}
	for (u = 0; u < n; u++) {
		const uint16_t *row = t->routes + (size_t)u * n;
		bool ep = t->nodes[u].kind == ICFAB_NODE_ENDPOINT;

		for (dst = 0; dst < n; dst++) {
			uint16_t p = row[dst];

			if (ep && dst != u &&
			    t->nodes[dst].kind == ICFAB_NODE_ENDPOINT) {
				rc->pairs++;
				rc->unreachable += p == ICFAB_ROUTE_NONE;
			}
			if (p == ICFAB_ROUTE_NONE)
				continue;
			if (p >= t->nodes[u].nr_ports ||
			    out[base[u] + p] == TOPO_NONE)
				rc->via_nothing++;
			else if (t->links[out[base[u] + p]].state ==
				 ICFAB_LINK_DOWN)
				rc->via_down++;
		}
	}
	free(base);
	free(out);
	return 0;
}
