// SPDX-License-Identifier: GPL-2.0
/*
 * The module's configuration read back into a struct topo: fabric
 * parameters, nodes, links and every route table, all from one
 * generation, under the dump-retry rule of <icfab/nl.h>. icfabd compares
 * it with what it wants (daemon/fabric.c) and adopts from it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include <icfab/array.h>
#include <icfab/readback.h>

#include "topo_priv.h"

#define READ_ATTEMPTS	20	/* reads that spanned a commit, in a row */

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
	struct topo_tier *tiers;	/* tier ports, in dump order */
	uint32_t nr_tiers, tiers_cap;
	struct fabric_state *st;
	uint32_t n;			/* nodes, for the route dump */
	uint16_t *row;			/* or one node's table only, */
	uint32_t row_node;		/* of this node */
	struct topo_node_sets row_sets;	/* its next-hop sets */
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
	st->features = get_u64(tb, ICFAB_A_FABRIC_FEATURES, 0);
	st->has_staged = tb[ICFAB_A_FABRIC_HAS_STAGED] &&
			 nla_get_u8(tb[ICFAB_A_FABRIC_HAS_STAGED]);
	if (tb[ICFAB_A_FABRIC_NAME])
		snprintf(st->name, sizeof(st->name), "%s",
			 (const char *)nla_data(tb[ICFAB_A_FABRIC_NAME]));
	st->nr_endpoints = get_u32(tb, ICFAB_A_FABRIC_NR_ENDPOINTS, 0);
	st->nr_switches = get_u32(tb, ICFAB_A_FABRIC_NR_SWITCHES, 0);
	st->nr_links = get_u32(tb, ICFAB_A_FABRIC_NR_LINKS, 0);
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
	if (icfab_array_grow((void **)&rb->nodes, &rb->nodes_cap, id,
			     sizeof(*rb->nodes), 64) ||
	    icfab_array_grow((void **)&rb->node_present, &cap, id, 1, 64))
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
	if (tb[ICFAB_A_NODE_TIER_LINKS] &&
	    nla_len(tb[ICFAB_A_NODE_TIER_LINKS]) == sizeof(n->tier)) {
		uint32_t ids[ICFAB_TIER_KINDS], k;

		memcpy(ids, nla_data(tb[ICFAB_A_NODE_TIER_LINKS]), sizeof(ids));
		for (k = 0; k < ICFAB_TIER_KINDS; k++)
			n->tier[k] = ids[k] == ICFAB_TIER_NO_LINK ? 0 :
				     ids[k] + 1;
	}
	rb->node_present[id] = 1;
	if (id + 1 > rb->max_node)
		rb->max_node = id + 1;
	return 0;
}

/* A tier port (ICFAB_F_MEMORY_TIERS): a tier, not a link. */
static int parse_tier(struct nlattr **tb, struct rb *rb)
{
	struct topo_tier *r;

	if (icfab_array_grow((void **)&rb->tiers, &rb->tiers_cap, rb->nr_tiers,
			     sizeof(*rb->tiers), 8))
		return -ENOMEM;
	r = &rb->tiers[rb->nr_tiers++];
	memset(r, 0, sizeof(*r));
	r->home = get_u32(tb, ICFAB_A_LINK_SRC_NODE, 0);
	r->kind = nla_get_u8(tb[ICFAB_A_LINK_TIER]);
	r->bytes = get_u64(tb, ICFAB_A_LINK_TIER_BYTES, 0);
	r->bandwidth = get_u64(tb, ICFAB_A_LINK_BANDWIDTH, 0);
	r->latency_ps = get_u64(tb, ICFAB_A_LINK_LATENCY_PS, 0);
	r->fj_per_bit = get_u32(tb, ICFAB_A_LINK_ENERGY_FJ_PER_BIT, 0);
	r->state = get_u32(tb, ICFAB_A_LINK_STATE, ICFAB_LINK_UP);
	r->link_id = nla_get_u32(tb[ICFAB_A_LINK_ID]);
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
	if (tb[ICFAB_A_LINK_TIER])
		return parse_tier(tb, rb);
	if (icfab_array_grow((void **)&rb->links, &rb->links_cap, rb->nr_links,
			     sizeof(*rb->links), 64) ||
	    icfab_array_grow((void **)&rb->link_id, &cap, rb->nr_links,
			     sizeof(*rb->link_id), 64))
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
	/* A module without ICFAB_F_LINK_SWITCHING stores and forwards. */
	l->switching = tb[ICFAB_A_LINK_SWITCHING] ?
		nla_get_u8(tb[ICFAB_A_LINK_SWITCHING]) :
		ICFAB_SWITCHING_STORE_FORWARD;
	/* A module without ICFAB_F_LINK_MULTIPATH takes one link. */
	l->multipath = tb[ICFAB_A_LINK_MULTIPATH] ?
		nla_get_u8(tb[ICFAB_A_LINK_MULTIPATH]) : ICFAB_MULTIPATH_NONE;
	/* A module without ICFAB_F_LINK_ENERGY counts no energy. */
	l->fj_per_bit = get_u32(tb, ICFAB_A_LINK_ENERGY_FJ_PER_BIT, 0);
	l->static_mw = get_u32(tb, ICFAB_A_LINK_STATIC_MW, 0);
	/* A module without ICFAB_F_LINK_CALIBRATION has ideal links. */
	l->eff_permille = get_u32(tb, ICFAB_A_LINK_EFFICIENCY_PERMILLE, 0);
	if (l->eff_permille >= 1000)
		l->eff_permille = 0;
	l->msg_overhead_ps = get_u64(tb, ICFAB_A_LINK_MSG_OVERHEAD_PS, 0);
	l->peer = TOPO_NONE;
	rb->link_id[rb->nr_links++] = nla_get_u32(tb[ICFAB_A_LINK_ID]);
	return 0;
}

/* A ROUTE_GET message of a node's next-hop sets, appended to @ns. */
static int parse_sets(struct nlattr **tb, struct topo_node_sets *ns)
{
	const struct icfab_route_set *v = nla_data(tb[ICFAB_A_ROUTE_SETS]);
	uint32_t first = get_u32(tb, ICFAB_A_ROUTE_SET_FIRST, 0), cnt, i;

	cnt = nla_len(tb[ICFAB_A_ROUTE_SETS]) / sizeof(*v);
	if (first != ns->n || first + cnt > ICFAB_ROUTE_SETS_MAX)
		return -EPROTO;
	for (i = 0; i < cnt; i++) {
		struct icfab_route_set in;
		struct topo_rset s = { 0 };
		uint32_t j;

		memcpy(&in, v + i, sizeof(in));	/* 4-byte aligned only */
		s.mode = in.mode;
		s.nr = in.nr_ports;
		for (j = 0; j < in.nr_ports && j < ICFAB_ROUTE_SET_MAX_PORTS; j++)
			s.ports[j] = in.ports[j];
		if (ns->n == ns->cap) {
			uint32_t cap = ns->cap ? 2 * ns->cap : 4;
			struct topo_rset *nv = realloc(ns->v, cap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			ns->v = nv;
			ns->cap = cap;
		}
		ns->v[ns->n++] = s;
	}
	return 0;
}

/*
 * Entries that name a set become the set's primary in routes[] and the
 * set's index in route_sets[], as topo_route() leaves them; one naming a
 * set the node lacks stays as it is (it differs from anything wanted).
 */
static int sets_resolve(struct topo *t)
{
	size_t n = t->nr_nodes, u, d;

	if (!t->node_sets)
		return 0;
	t->route_sets = malloc(n * n * sizeof(*t->route_sets) + 1);
	if (!t->route_sets)
		return -ENOMEM;
	memset(t->route_sets, 0xff, n * n * sizeof(*t->route_sets));
	for (u = 0; u < n; u++)
		for (d = 0; d < n; d++) {
			uint16_t e = t->routes[u * n + d];
			uint32_t s = (uint32_t)e - ICFAB_ROUTE_SET_BASE;

			if (e < ICFAB_ROUTE_SET_BASE || e == ICFAB_ROUTE_NONE ||
			    s >= t->node_sets[u].n || !t->node_sets[u].v[s].nr)
				continue;
			t->route_sets[u * n + d] = (uint16_t)s;
			t->routes[u * n + d] = t->node_sets[u].v[s].ports[0];
		}
	return 0;
}

static int parse_routes(struct nlattr **tb, void *arg)
{
	struct rb *rb = arg;
	struct fabric_state *st = rb->st;
	const uint16_t *ports;
	uint16_t *row;
	uint32_t node, first, cnt, i, n = rb->n;

	rb_gen(rb, tb);
	if (!tb[ICFAB_A_ROUTE_NODE])
		return -EPROTO;
	node = nla_get_u32(tb[ICFAB_A_ROUTE_NODE]);
	first = get_u32(tb, ICFAB_A_ROUTE_DST_FIRST, 0);
	if (node >= n || (rb->row && node != rb->row_node))
		return -EPROTO;
	if (tb[ICFAB_A_ROUTE_SETS] && rb->row)
		return parse_sets(tb, &rb->row_sets);
	if (tb[ICFAB_A_ROUTE_SETS]) {
		struct topo *t = st->topo;

		if (!t->node_sets)
			t->node_sets = calloc(t->nr_nodes + 1,
					      sizeof(*t->node_sets));
		if (!t->node_sets)
			return -ENOMEM;
		return parse_sets(tb, &t->node_sets[node]);
	}
	if (!tb[ICFAB_A_ROUTE_PORTS])
		return 0;
	ports = nla_data(tb[ICFAB_A_ROUTE_PORTS]);
	cnt = nla_len(tb[ICFAB_A_ROUTE_PORTS]) / sizeof(uint16_t);
	row = rb->row ? rb->row : st->topo->routes + (size_t)node * n;
	for (i = 0; i < cnt; i++) {
		uint16_t p;

		memcpy(&p, ports + i, sizeof(p));	/* 4-byte aligned only */
		if (first + i < n)
			row[first + i] = p;
		else if (p != ICFAB_ROUTE_NONE && !rb->row)
			st->row_tail[node] = 1;
	}
	if (rb->row)
		return 0;
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
	free(rb->tiers);
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

/* The other direction of each cable, from the (node, port) -> link map. */
static int link_peers(struct topo *t)
{
	struct topo_ports p;
	uint32_t i, back;
	int ret;

	ret = topo_ports_build(t, &p, NULL, NULL);
	if (ret)
		return ret;
	for (i = 0; i < t->nr_links; i++) {
		struct topo_link *l = &t->links[i];

		if (l->dst_node >= t->nr_nodes ||
		    l->dst_port >= t->nodes[l->dst_node].nr_ports)
			continue;
		back = p.out[p.base[l->dst_node] + l->dst_port];
		if (back != TOPO_NONE && t->links[back].dst_node == l->src_node &&
		    t->links[back].dst_port == l->src_port)
			l->peer = back;
	}
	topo_ports_free(&p);
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

/* The nodes read, by id, become @t's: holes only where @staged. */
static int take_nodes(struct rb *rb, bool staged, struct topo *t)
{
	struct fabric_state *st = rb->st;
	uint32_t i, n = rb->max_node;

	for (i = 0; i < n; i++)
		if (!rb->node_present[i] && !staged)
			return -EPROTO;	/* a committed one has dense ids */
	t->nodes = rb->nodes ? rb->nodes : calloc(1, sizeof(*t->nodes));
	t->cap_nodes = rb->nodes ? rb->nodes_cap : 1;
	st->node_present = rb->node_present ? rb->node_present :
			   calloc(1, 1);
	rb->nodes = NULL;
	rb->node_present = NULL;
	if (!t->nodes || !st->node_present)
		return -ENOMEM;
	t->nr_nodes = n;
	for (i = 0; i < n; i++) {
		if (!st->node_present[i])
			continue;
		if (t->nodes[i].kind == ICFAB_NODE_ENDPOINT)
			t->nr_endpoints++;
		else
			t->nr_switches++;
	}
	return 0;
}

static int read_links(struct icfab_nl *nl, bool staged, struct rb *rb,
		      struct topo *t)
{
	struct fabric_state *st = rb->st;
	int ret;

	ret = icfab_nl_dump(nl, read_msg(nl, ICFAB_CMD_LINK_GET, true, staged),
			    parse_link, rb);
	if (ret)
		return ret;
	t->links = rb->links;
	t->cap_links = rb->links_cap;
	t->nr_links = rb->nr_links;
	st->link_id = rb->link_id;
	t->tiers = rb->tiers;
	t->nr_tiers = rb->nr_tiers;
	t->cap_tiers = rb->tiers_cap;
	rb->links = NULL;
	rb->link_id = NULL;
	rb->tiers = NULL;
	dbg("links");
	/* Cables need both ends; a staged configuration may lack one. */
	if (t->nr_endpoints + t->nr_switches < t->nr_nodes)
		return 0;
	ret = link_peers(t);
	dbg("peers");
	return ret;
}

static int read_routes(struct icfab_nl *nl, bool staged, struct rb *rb,
		       struct topo *t)
{
	struct fabric_state *st = rb->st;
	uint32_t n = t->nr_nodes;
	size_t cells = (size_t)n * n;
	int ret;

	t->routes = malloc(cells * sizeof(*t->routes) + 1);
	st->routes_len = calloc(n + 1, sizeof(*st->routes_len));
	st->row_tail = calloc(n + 1, 1);
	if (!t->routes || !st->routes_len || !st->row_tail)
		return -ENOMEM;
	memset(t->routes, 0xff, cells * sizeof(*t->routes));
	rb->n = n;
	ret = icfab_nl_dump(nl, read_msg(nl, ICFAB_CMD_ROUTE_GET, true, staged),
			    parse_routes, rb);
	if (!ret)
		ret = sets_resolve(t);
	dbg("routes");
	return ret;
}

static int read_once(struct icfab_nl *nl, bool staged, unsigned int what,
		     struct fabric_state *st)
{
	struct rb rb = { .st = st };
	struct topo *t;
	int ret;

	t = st->topo = topo_new();
	if (!t)
		return -ENOMEM;
	strcpy(t->name, "module");

	dbg("start");
	ret = icfab_nl_request(nl, read_msg(nl, ICFAB_CMD_FABRIC_GET, false,
					    staged), parse_fabric, &rb);
	dbg("fabric");
	if (!ret && (what & FABRIC_READ_NODES))
		ret = icfab_nl_dump(nl, read_msg(nl, ICFAB_CMD_NODE_GET, true,
						 staged), parse_node, &rb);
	if (!ret && (what & FABRIC_READ_NODES))
		ret = take_nodes(&rb, staged, t);
	dbg("nodes");
	if (!ret && (what & FABRIC_READ_LINKS))
		ret = read_links(nl, staged, &rb, t);
	if (!ret && (what & FABRIC_READ_ROUTES))
		ret = read_routes(nl, staged, &rb, t);
	if (!ret && rb.mixed)
		ret = -EINTR;
	rb_free(&rb);
	return ret;
}

int fabric_read_once(struct icfab_nl *nl, bool staged, unsigned int what,
		     struct fabric_state *st)
{
	int ret;

	memset(st, 0, sizeof(*st));
	ret = read_once(nl, staged, what, st);
	if (ret)
		fabric_state_free(st);
	return ret;
}

struct read_args {
	struct icfab_nl *nl;
	bool staged;
	struct fabric_state *st;
};

static int read_attempt(void *arg)
{
	struct read_args *ra = arg;

	return fabric_read_once(ra->nl, ra->staged, FABRIC_READ_ALL, ra->st);
}

int fabric_read(struct icfab_nl *nl, bool staged, struct fabric_state *st)
{
	struct read_args ra = { .nl = nl, .staged = staged, .st = st };

	return icfab_nl_read_consistent(read_attempt, &ra, READ_ATTEMPTS);
}

bool fabric_node_present(const struct fabric_state *st, uint32_t id)
{
	return st->topo && id < st->topo->nr_nodes && st->node_present[id];
}

int fabric_read_route_row(struct icfab_nl *nl, bool staged,
			  const struct fabric_state *st, uint32_t node,
			  uint16_t *row)
{
	struct rb rb = {
		.gen_set = true, .gen = st->generation,
		.n = st->topo->nr_nodes, .row = row, .row_node = node,
	};
	struct nl_msg *msg;
	uint32_t i;
	int ret;

	for (i = 0; i < rb.n; i++)
		row[i] = ICFAB_ROUTE_NONE;
	msg = read_msg(nl, ICFAB_CMD_ROUTE_GET, true, staged);
	if (msg && nla_put_u32(msg, ICFAB_A_ROUTE_NODE, node)) {
		nlmsg_free(msg);
		msg = NULL;
	}
	ret = icfab_nl_dump(nl, msg, parse_routes, &rb);
	/* A single-path reader: an entry naming a set is its primary. */
	for (i = 0; !ret && i < rb.n; i++) {
		uint32_t s = (uint32_t)row[i] - ICFAB_ROUTE_SET_BASE;

		if (row[i] >= ICFAB_ROUTE_SET_BASE && row[i] != ICFAB_ROUTE_NONE &&
		    s < rb.row_sets.n && rb.row_sets.v[s].nr)
			row[i] = rb.row_sets.v[s].ports[0];
	}
	free(rb.row_sets.v);
	return !ret && rb.mixed ? -EINTR : ret;
}

/*
 * One object: a GET with @attr = @id, parsed by @parse into @rb; @found
 * says where in @rb the object landed, if it did, to copy @size bytes of
 * it to @out.
 */
static int get_one(struct icfab_nl *nl, bool staged, uint8_t cmd, int attr,
		   uint32_t id, icfab_nl_parse_fn parse,
		   const void *(*found)(const struct rb *rb, uint32_t id),
		   void *out, size_t size)
{
	struct nl_msg *msg = read_msg(nl, cmd, false, staged);
	struct rb rb = { 0 };
	const void *obj;
	int ret;

	if (msg && nla_put_u32(msg, attr, id)) {
		nlmsg_free(msg);
		msg = NULL;
	}
	ret = icfab_nl_request(nl, msg, parse, &rb);
	obj = ret ? NULL : found(&rb, id);
	if (obj)
		memcpy(out, obj, size);
	else if (!ret)
		ret = -ENOENT;
	rb_free(&rb);
	return ret;
}

static const void *node_found(const struct rb *rb, uint32_t id)
{
	return id < rb->max_node && rb->node_present[id] ? &rb->nodes[id] : NULL;
}

static const void *link_found(const struct rb *rb, uint32_t id)
{
	return rb->nr_links && rb->link_id[0] == id ? &rb->links[0] : NULL;
}

int fabric_get_node(struct icfab_nl *nl, bool staged, uint32_t id,
		    struct topo_node *node)
{
	return get_one(nl, staged, ICFAB_CMD_NODE_GET, ICFAB_A_NODE_ID, id,
		       parse_node, node_found, node, sizeof(*node));
}

int fabric_get_link(struct icfab_nl *nl, bool staged, uint32_t id,
		    struct topo_link *link)
{
	return get_one(nl, staged, ICFAB_CMD_LINK_GET, ICFAB_A_LINK_ID, id,
		       parse_link, link_found, link, sizeof(*link));
}

struct topo *fabric_take_topo(struct fabric_state *st)
{
	struct topo *t = st->topo;

	st->topo = NULL;
	return t;
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
