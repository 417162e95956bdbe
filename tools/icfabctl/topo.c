// SPDX-License-Identifier: GPL-2.0
/*
 * icfabctl topo show, node list, link list, route show: the topology of a
 * fabric over netlink (FABRIC_GET, and the NODE_GET, LINK_GET and
 * ROUTE_GET dumps).
 *
 * A read is consistent or it is retried: every reply carries the
 * generation it was read from, and a dump that spans a change is flagged
 * NLM_F_DUMP_INTR. When a reply is flagged, or two replies of one read
 * disagree on the generation, the whole read starts again, a few times,
 * before giving up with a message.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <linux/icfab_genl.h>

#include "icfabctl.h"

#define TOPO_ATTEMPTS	5		/* reads before giving up */
#define TOPO_MAX_ID	(1U << 20)	/* sanity bound on ids from the kernel */

/* ---- the topology as read ---- */

struct tnode {
	bool present;
	uint32_t kind, ports, dma_engines, colors;
	uint64_t mem_bytes;
	char name[ICFAB_NAME_MAX];
	bool routes_read;
	uint16_t *routes;		/* out port per destination */
	uint32_t routes_len;
};

struct tlink {
	bool present;
	uint32_t src, src_port, dst, dst_port;
	uint32_t class, state, permille;
	uint64_t bandwidth, latency_ps;
	uint64_t up_at_ps;		/* ps: dark until then (OCS), 0: not */
	bool hold_fail;			/* dark: traffic fails, not waits */
};

struct topo {
	uint32_t fabric;
	bool staged;			/* read the staged configuration */

	/* FABRIC_GET */
	char fabric_name[ICFAB_NAME_MAX];
	bool has_staged;
	uint32_t nr_endpoints, nr_switches, nr_links;
	uint64_t mem_bytes;

	/* Consistency of the read. */
	uint64_t generation;
	unsigned int replies;		/* replies seen, all with a generation */
	bool inconsistent;

	struct tnode *nodes;		/* by id */
	uint32_t nodes_cap, nr_nodes;
	struct tlink *links;		/* by id */
	uint32_t links_cap, nr_links_read;
};

static void topo_clear(struct topo *t)
{
	uint32_t i;

	for (i = 0; i < t->nodes_cap; i++)
		free(t->nodes[i].routes);
	free(t->nodes);
	free(t->links);
	t->nodes = NULL;
	t->links = NULL;
	t->nodes_cap = t->nr_nodes = 0;
	t->links_cap = t->nr_links_read = 0;
	t->replies = 0;
	t->generation = 0;
	t->inconsistent = false;
	t->fabric_name[0] = '\0';
	t->has_staged = false;
	t->nr_endpoints = t->nr_switches = t->nr_links = 0;
	t->mem_bytes = 0;
}

/* Grow a by-id array so that id fits; the new entries are zero. */
static int grow(void **array, uint32_t *cap, uint32_t id, size_t size)
{
	uint32_t n = *cap ? *cap : 64;
	void *p;

	if (id >= TOPO_MAX_ID)
		return -EBADMSG;
	if (id < *cap)
		return 0;
	while (n <= id)
		n *= 2;
	p = realloc(*array, (size_t)n * size);
	if (!p)
		return -ENOMEM;
	memset((char *)p + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
	*array = p;
	*cap = n;
	return 0;
}

static struct tnode *topo_node(const struct topo *t, uint32_t id)
{
	if (id < t->nodes_cap && t->nodes[id].present)
		return &t->nodes[id];
	return NULL;
}

/* The name of a node for people: its name, or "node<id>" if it has none. */
static const char *node_label(const struct topo *t, uint32_t id, char *buf,
			      size_t len)
{
	const struct tnode *n = topo_node(t, id);

	if (n && n->name[0])
		return n->name;
	snprintf(buf, len, "node%" PRIu32, id);
	return buf;
}

/* ---- replies ---- */

static struct nla_policy topo_policy[ICFAB_A_MAX + 1] = {
	[ICFAB_A_FABRIC_ID]		= { .type = NLA_U32 },
	[ICFAB_A_FABRIC_NAME]		= { .type = NLA_STRING },
	[ICFAB_A_FABRIC_GENERATION]	= { .type = NLA_U64 },
	[ICFAB_A_FABRIC_NR_ENDPOINTS]	= { .type = NLA_U32 },
	[ICFAB_A_FABRIC_NR_SWITCHES]	= { .type = NLA_U32 },
	[ICFAB_A_FABRIC_NR_LINKS]	= { .type = NLA_U32 },
	[ICFAB_A_FABRIC_HAS_STAGED]	= { .type = NLA_U8 },
	[ICFAB_A_FABRIC_MEM_BYTES]	= { .type = NLA_U64 },
	[ICFAB_A_NODE_ID]		= { .type = NLA_U32 },
	[ICFAB_A_NODE_KIND]		= { .type = NLA_U32 },
	[ICFAB_A_NODE_NAME]		= { .type = NLA_STRING },
	[ICFAB_A_NODE_PORTS]		= { .type = NLA_U32 },
	[ICFAB_A_NODE_MEM_BYTES]	= { .type = NLA_U64 },
	[ICFAB_A_NODE_DMA_ENGINES]	= { .type = NLA_U32 },
	[ICFAB_A_NODE_COLORS]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_ID]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_SRC_NODE]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_SRC_PORT]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_DST_NODE]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_DST_PORT]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_BANDWIDTH]	= { .type = NLA_U64 },
	[ICFAB_A_LINK_LATENCY_PS]	= { .type = NLA_U64 },
	[ICFAB_A_LINK_CLASS]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_STATE]		= { .type = NLA_U32 },
	[ICFAB_A_LINK_BW_PERMILLE]	= { .type = NLA_U32 },
	[ICFAB_A_LINK_UP_AT_PS]		= { .type = NLA_U64 },
	[ICFAB_A_LINK_HOLD_FAIL]	= { .type = NLA_U8 },
	[ICFAB_A_ROUTE_NODE]		= { .type = NLA_U32 },
	[ICFAB_A_ROUTE_DST_FIRST]	= { .type = NLA_U32 },
	[ICFAB_A_ROUTE_PORTS]		= { .type = NLA_UNSPEC },
};

/*
 * Parse a reply of command @cmd and note its generation. Returns 1 for a
 * reply to use, 0 for one to skip, or -errno.
 */
static int topo_parse(struct topo *t, struct nl_msg *msg, uint8_t cmd,
		      struct nlattr **tb)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *gnlh = nlmsg_data(nlh);
	uint64_t gen;

	if (!genlmsg_valid_hdr(nlh, 0) || gnlh->cmd != cmd)
		return 0;
	if (genlmsg_parse(nlh, 0, tb, ICFAB_A_MAX, topo_policy) < 0)
		return -EBADMSG;
	if (!tb[ICFAB_A_FABRIC_GENERATION])
		return -EBADMSG;
	gen = nla_get_u64(tb[ICFAB_A_FABRIC_GENERATION]);
	if (t->replies++ && gen != t->generation)
		t->inconsistent = true;
	t->generation = gen;
	return 1;
}

static uint32_t get_u32(struct nlattr *a, uint32_t dflt)
{
	return a ? nla_get_u32(a) : dflt;
}

static uint64_t get_u64(struct nlattr *a, uint64_t dflt)
{
	return a ? nla_get_u64(a) : dflt;
}

static int fabric_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct topo *t = arg;
	int ret;

	ret = topo_parse(t, msg, ICFAB_CMD_FABRIC_GET, tb);
	if (ret <= 0)
		return ret;
	if (tb[ICFAB_A_FABRIC_NAME])
		snprintf(t->fabric_name, sizeof(t->fabric_name), "%s",
			 (char *)nla_data(tb[ICFAB_A_FABRIC_NAME]));
	t->has_staged = tb[ICFAB_A_FABRIC_HAS_STAGED] &&
			nla_get_u8(tb[ICFAB_A_FABRIC_HAS_STAGED]);
	t->nr_endpoints = get_u32(tb[ICFAB_A_FABRIC_NR_ENDPOINTS], 0);
	t->nr_switches = get_u32(tb[ICFAB_A_FABRIC_NR_SWITCHES], 0);
	t->nr_links = get_u32(tb[ICFAB_A_FABRIC_NR_LINKS], 0);
	t->mem_bytes = get_u64(tb[ICFAB_A_FABRIC_MEM_BYTES], 0);
	return 0;
}

static int node_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct topo *t = arg;
	struct tnode *n;
	uint32_t id;
	int ret;

	ret = topo_parse(t, msg, ICFAB_CMD_NODE_GET, tb);
	if (ret <= 0)
		return ret;
	if (!tb[ICFAB_A_NODE_ID] || !tb[ICFAB_A_NODE_KIND])
		return -EBADMSG;
	id = nla_get_u32(tb[ICFAB_A_NODE_ID]);
	ret = grow((void **)&t->nodes, &t->nodes_cap, id, sizeof(*t->nodes));
	if (ret)
		return ret;
	n = &t->nodes[id];
	if (n->present) {		/* twice in one dump */
		t->inconsistent = true;
		return 0;
	}
	n->present = true;
	t->nr_nodes++;
	n->kind = nla_get_u32(tb[ICFAB_A_NODE_KIND]);
	n->ports = get_u32(tb[ICFAB_A_NODE_PORTS], 0);
	n->dma_engines = get_u32(tb[ICFAB_A_NODE_DMA_ENGINES], 0);
	n->colors = get_u32(tb[ICFAB_A_NODE_COLORS], 0);
	n->mem_bytes = get_u64(tb[ICFAB_A_NODE_MEM_BYTES], 0);
	if (tb[ICFAB_A_NODE_NAME])
		snprintf(n->name, sizeof(n->name), "%s",
			 (char *)nla_data(tb[ICFAB_A_NODE_NAME]));
	return 0;
}

static int link_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct topo *t = arg;
	struct tlink *l;
	uint32_t id;
	int ret;

	ret = topo_parse(t, msg, ICFAB_CMD_LINK_GET, tb);
	if (ret <= 0)
		return ret;
	if (!tb[ICFAB_A_LINK_ID] || !tb[ICFAB_A_LINK_SRC_NODE] ||
	    !tb[ICFAB_A_LINK_DST_NODE])
		return -EBADMSG;
	id = nla_get_u32(tb[ICFAB_A_LINK_ID]);
	ret = grow((void **)&t->links, &t->links_cap, id, sizeof(*t->links));
	if (ret)
		return ret;
	l = &t->links[id];
	if (l->present) {
		t->inconsistent = true;
		return 0;
	}
	l->present = true;
	t->nr_links_read++;
	l->src = nla_get_u32(tb[ICFAB_A_LINK_SRC_NODE]);
	l->src_port = get_u32(tb[ICFAB_A_LINK_SRC_PORT], 0);
	l->dst = nla_get_u32(tb[ICFAB_A_LINK_DST_NODE]);
	l->dst_port = get_u32(tb[ICFAB_A_LINK_DST_PORT], 0);
	l->bandwidth = get_u64(tb[ICFAB_A_LINK_BANDWIDTH], 0);
	l->latency_ps = get_u64(tb[ICFAB_A_LINK_LATENCY_PS], 0);
	l->class = get_u32(tb[ICFAB_A_LINK_CLASS], ICFAB_LINK_CLASS_OTHER);
	l->state = get_u32(tb[ICFAB_A_LINK_STATE], ICFAB_LINK_UP);
	l->permille = get_u32(tb[ICFAB_A_LINK_BW_PERMILLE], 1000);
	l->up_at_ps = get_u64(tb[ICFAB_A_LINK_UP_AT_PS], 0);
	l->hold_fail = tb[ICFAB_A_LINK_HOLD_FAIL] &&
		       nla_get_u8(tb[ICFAB_A_LINK_HOLD_FAIL]);
	return 0;
}

/* One chunk of a node's table: ROUTE_NODE, ROUTE_DST_FIRST, ROUTE_PORTS. */
static int route_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[ICFAB_A_MAX + 1];
	struct topo *t = arg;
	uint32_t node, first, n, i, end;
	struct tnode *nd;
	uint16_t *p;
	int ret;

	ret = topo_parse(t, msg, ICFAB_CMD_ROUTE_GET, tb);
	if (ret <= 0)
		return ret;
	if (!tb[ICFAB_A_ROUTE_NODE] ||
	    (tb[ICFAB_A_ROUTE_PORTS] && nla_len(tb[ICFAB_A_ROUTE_PORTS]) % 2))
		return -EBADMSG;
	node = nla_get_u32(tb[ICFAB_A_ROUTE_NODE]);
	first = get_u32(tb[ICFAB_A_ROUTE_DST_FIRST], 0);
	n = tb[ICFAB_A_ROUTE_PORTS] ? nla_len(tb[ICFAB_A_ROUTE_PORTS]) / 2 : 0;
	if (first >= TOPO_MAX_ID || n >= TOPO_MAX_ID)
		return -EBADMSG;
	nd = topo_node(t, node);
	if (!nd) {			/* a table of a node we did not see */
		t->inconsistent = true;
		return 0;
	}
	nd->routes_read = true;
	end = first + n;
	if (end > nd->routes_len) {
		p = realloc(nd->routes, (size_t)end * sizeof(*p));
		if (!p)
			return -ENOMEM;
		for (i = nd->routes_len; i < end; i++)
			p[i] = ICFAB_ROUTE_NONE;
		nd->routes = p;
		nd->routes_len = end;
	}
	if (n)	/* host order; the attribute is only 4-byte aligned */
		memcpy(nd->routes + first, nla_data(tb[ICFAB_A_ROUTE_PORTS]),
		       (size_t)n * sizeof(uint16_t));
	return 0;
}

/* ---- reading ---- */

/*
 * One request (a dump unless @cmd is FABRIC_GET). @node: ROUTE_NODE, or
 * UINT32_MAX for none. Returns 0 or -errno, the details in nl->last.
 */
static int topo_request(struct icfab_nl *nl, struct topo *t, uint8_t cmd,
			uint32_t node,
			int (*valid)(struct nl_msg *msg, void *arg))
{
	struct nl_msg *msg;
	int ret;

	msg = icfab_nl_genlmsg(nl, cmd, cmd == ICFAB_CMD_FABRIC_GET ?
			       0 : NLM_F_DUMP, 0);
	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, ICFAB_A_FABRIC_ID, t->fabric) < 0 ||
	    (t->staged && nla_put_flag(msg, ICFAB_A_STAGED) < 0) ||
	    (node != UINT32_MAX &&
	     nla_put_u32(msg, ICFAB_A_ROUTE_NODE, node) < 0)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	ret = icfab_nl_exchange(nl, msg, valid, t);
	if (nl->dump_intr)
		t->inconsistent = true;
	return ret;
}

enum {
	READ_FABRIC	= 1 << 0,	/* FABRIC_GET: counts, memory */
	READ_NODES	= 1 << 1,
	READ_LINKS	= 1 << 2,
	READ_ROUTES	= 1 << 3,	/* every table */
};

static int topo_read_once(struct icfab_nl *nl, struct topo *t,
			  unsigned int what)
{
	int ret = 0;

	topo_clear(t);
	if (what & READ_FABRIC)
		ret = topo_request(nl, t, ICFAB_CMD_FABRIC_GET, UINT32_MAX,
				   fabric_valid);
	if (!ret && (what & READ_NODES))
		ret = topo_request(nl, t, ICFAB_CMD_NODE_GET, UINT32_MAX,
				   node_valid);
	if (!ret && (what & READ_LINKS))
		ret = topo_request(nl, t, ICFAB_CMD_LINK_GET, UINT32_MAX,
				   link_valid);
	if (!ret && (what & READ_ROUTES))
		ret = topo_request(nl, t, ICFAB_CMD_ROUTE_GET, UINT32_MAX,
				   route_valid);
	return ret;
}

/* The pause of icfab_nl_read_consistent(), for route show's own retries. */
static void topo_retry_pause(int attempt)
{
	usleep(10000 * attempt);
}

static int topo_gave_up(const char *what)
{
	icfabctl_warn("%s: the configuration kept changing while it was read "
		      "(%d attempts); try again", what, TOPO_ATTEMPTS);
	return ICFABCTL_EXIT_ERROR;
}

struct read_args {
	struct icfab_nl *nl;
	struct topo *t;
	unsigned int what;
};

/* One read for icfab_nl_read_consistent(): -EINTR when inconsistent. */
static int topo_read_attempt(void *arg)
{
	struct read_args *ra = arg;
	int ret = topo_read_once(ra->nl, ra->t, ra->what);

	return !ret && ra->t->inconsistent ? -EINTR : ret;
}

/* A consistent read, or a message and ICFABCTL_EXIT_ERROR. */
static int topo_read(struct icfab_nl *nl, struct topo *t,
		     unsigned int what, const char *name)
{
	struct read_args ra = { .nl = nl, .t = t, .what = what };
	int ret;

	ret = icfab_nl_read_consistent(topo_read_attempt, &ra, TOPO_ATTEMPTS);
	if (ret == -EINTR && t->inconsistent)
		return topo_gave_up(name);
	if (ret) {
		icfabctl_nl_report(nl, name);
		return ICFABCTL_EXIT_ERROR;
	}
	return ICFABCTL_EXIT_OK;
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

	if (tb->rows == tb->cap) {
		tb->cap = tb->cap ? 2 * tb->cap : 16;
		p = realloc(tb->cells,
			    (size_t)tb->cap * tb->cols * sizeof(*p));
		if (!p)
			return -ENOMEM;
		tb->cells = p;
	}
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
				   const struct tlink *l)
{
	char tmp[32];

	size_t n;

	if (l->state == ICFAB_LINK_DEGRADED)
		n = snprintf(buf, len, "degraded %" PRIu32 "\u2030", l->permille);
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
static uint64_t link_effective_bw(const struct tlink *l)
{
	if (l->state == ICFAB_LINK_DOWN)
		return 0;
	if (l->state == ICFAB_LINK_DEGRADED)
		return l->bandwidth / 1000 * l->permille +
		       l->bandwidth % 1000 * l->permille / 1000;
	return l->bandwidth;
}

/* "chip0:0" */
static const char *port_label(const struct topo *t, uint32_t node,
			      uint32_t port, char *buf, size_t len)
{
	char tmp[32];

	snprintf(buf, len, "%s:%" PRIu32,
		 node_label(t, node, tmp, sizeof(tmp)), port);
	return buf;
}

static int src_width(const struct topo *t, const uint32_t *ids, uint32_t n)
{
	char buf[64];
	uint32_t i;
	int w = 0, x;

	for (i = 0; i < n; i++) {
		const struct tlink *l = &t->links[ids[i]];

		x = text_width(port_label(t, l->src, l->src_port, buf,
					  sizeof(buf)));
		if (x > w)
			w = x;
	}
	return w;
}

/*
 * A link as table cells: [id,] "chip0:0 -> chip1:1" (sources padded to
 * @w), bandwidth, latency, class, state.
 */
static int link_row(struct table *tb, const struct topo *t, uint32_t id,
		    int w, bool with_id)
{
	const struct tlink *l = &t->links[id];
	char idb[16], a[64], b[64], ends[160], bw[32], lat[32], cbuf[32];
	char st[96];
	const char *cls;

	snprintf(ends, sizeof(ends), "%-*s -> %s", w,
		 port_label(t, l->src, l->src_port, a, sizeof(a)),
		 port_label(t, l->dst, l->dst_port, b, sizeof(b)));
	icfabctl_fmt_bandwidth(bw, sizeof(bw), l->bandwidth);
	icfabctl_fmt_latency(lat, sizeof(lat), l->latency_ps);
	cls = icfabctl_link_class_name(cbuf, sizeof(cbuf), l->class);
	link_state_text(st, sizeof(st), l);
	if (with_id)
		return table_add(tb, u32_str(idb, sizeof(idb), id), ends, bw,
				 lat, cls, st);
	return table_add(tb, ends, bw, lat, cls, st);
}

/* Every present link id, in order. */
static uint32_t *link_ids(const struct topo *t, uint32_t *n)
{
	uint32_t i, k = 0, *ids;

	ids = calloc(t->nr_links_read ? t->nr_links_read : 1, sizeof(*ids));
	if (!ids)
		return NULL;
	for (i = 0; i < t->links_cap && k < t->nr_links_read; i++)
		if (t->links[i].present)
			ids[k++] = i;
	*n = k;
	return ids;
}

static int print_links_text(const struct topo *t, const char *indent)
{
	/* ID, BANDWIDTH and LATENCY to the right */
	struct table tb = { .cols = 6, .right = 1 << 0 | 1 << 2 | 1 << 3 };
	uint32_t i, n, *ids;
	char hdr[32];
	int w, ret;

	ids = link_ids(t, &n);
	if (!ids)
		return -ENOMEM;
	w = src_width(t, ids, n);
	if (w < 4)
		w = 4;
	snprintf(hdr, sizeof(hdr), "%-*s    %s", w, "FROM", "TO");
	ret = table_add(&tb, "ID", hdr, "BANDWIDTH", "LATENCY", "CLASS",
			"STATE");
	for (i = 0; !ret && i < n; i++)
		ret = link_row(&tb, t, ids[i], w, true);
	if (!ret)
		table_print(&tb, indent);
	table_free(&tb);
	free(ids);
	return ret;
}

static int print_nodes_text(const struct topo *t, const char *indent)
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
	for (i = 0; !ret && i < t->nodes_cap; i++) {
		const struct tnode *n = &t->nodes[i];
		bool ep = n->kind == ICFAB_NODE_ENDPOINT;

		if (!n->present)
			continue;
		ret = table_add(&tb, u32_str(id, sizeof(id), i),
			node_label(t, i, name, sizeof(name)),
			icfabctl_node_kind_name(kind, sizeof(kind), n->kind),
			u32_str(ports, sizeof(ports), n->ports),
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

static void json_node(struct icfab_json *j, const struct topo *t,
		      uint32_t id)
{
	const struct tnode *n = &t->nodes[id];
	char kind[32];

	json_begin_object(j, NULL);
	json_u64(j, "id", id);
	json_string(j, "name", n->name);
	json_string(j, "kind", icfabctl_node_kind_name(kind, sizeof(kind),
						       n->kind));
	json_u64(j, "ports", n->ports);
	if (n->kind == ICFAB_NODE_ENDPOINT) {
		json_u64(j, "mem_bytes", n->mem_bytes);
		json_u64(j, "dma_engines", n->dma_engines);
	} else {
		json_u64(j, "colors", n->colors);
	}
	json_end_object(j);
}

/* A link's members (the caller opens and closes the object). */
static void json_link_members(struct icfab_json *j, const struct topo *t,
			      uint32_t id)
{
	const struct tlink *l = &t->links[id];
	char buf[32];

	json_u64(j, "id", id);
	json_u64(j, "src", l->src);
	json_string(j, "src_name", node_label(t, l->src, buf, sizeof(buf)));
	json_u64(j, "src_port", l->src_port);
	json_u64(j, "dst", l->dst);
	json_string(j, "dst_name", node_label(t, l->dst, buf, sizeof(buf)));
	json_u64(j, "dst_port", l->dst_port);
	json_u64(j, "bandwidth", l->bandwidth);
	json_u64(j, "latency_ps", l->latency_ps);
	json_string(j, "class", icfabctl_link_class_name(buf, sizeof(buf),
							 l->class));
	json_string(j, "state", icfabctl_link_state_name(buf, sizeof(buf),
							 l->state));
	if (l->state == ICFAB_LINK_DEGRADED)
		json_u64(j, "bw_permille", l->permille);
	if (l->up_at_ps) {
		json_u64(j, "up_at_ps", l->up_at_ps);
		json_bool(j, "hold_fail", l->hold_fail);
	}
}

static void json_nodes(struct icfab_json *j, const struct topo *t)
{
	uint32_t i;

	json_begin_array(j, "nodes");
	for (i = 0; i < t->nodes_cap; i++)
		if (t->nodes[i].present)
			json_node(j, t, i);
	json_end_array(j);
}

static void json_links(struct icfab_json *j, const struct topo *t)
{
	uint32_t i;

	json_begin_array(j, "links");
	for (i = 0; i < t->links_cap; i++) {
		if (!t->links[i].present)
			continue;
		json_begin_object(j, NULL);
		json_link_members(j, t, i);
		json_end_object(j);
	}
	json_end_array(j);
}

/* "fabric", "generation", "staged" */
static void json_head(struct icfab_json *j, const struct topo *t)
{
	json_u64(j, "fabric", t->fabric);
	json_u64(j, "generation", t->generation);
	json_bool(j, "staged", t->staged);
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

static int open_for(struct icfabctl *ctl, struct icfab_nl *nl,
		    struct topo *t, bool staged)
{
	int ret = icfabctl_nl_open(nl);

	if (ret)
		return ret;
	nl->fabric_id = ctl->fabric;
	memset(t, 0, sizeof(*t));
	t->fabric = ctl->fabric;
	t->staged = staged;
	return 0;
}

static void close_for(struct icfab_nl *nl, struct topo *t)
{
	topo_clear(t);
	icfab_nl_close(nl);
}

/* ---- topo show ---- */

static int cmd_topo_show(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			 int argc, char **argv)
{
	struct icfab_json j;
	struct icfab_nl nl;
	bool staged = false;
	struct topo t;
	char mem[32];
	int ret;

	ret = parse_staged(cmd, argc, argv, &staged);
	if (ret)
		return ret;
	ret = open_for(ctl, &nl, &t, staged);
	if (ret)
		return ret;
	ret = topo_read(&nl, &t, READ_FABRIC | READ_NODES | READ_LINKS,
			"topo show");
	if (ret)
		goto out;

	if (ctl->json) {
		json_init(&j, stdout);
		json_begin_object(&j, NULL);
		json_head(&j, &t);
		json_string(&j, "name", t.fabric_name);
		json_bool(&j, "has_staged", t.has_staged);
		json_u64(&j, "nr_endpoints", t.nr_endpoints);
		json_u64(&j, "nr_switches", t.nr_switches);
		json_u64(&j, "nr_links", t.nr_links);
		json_u64(&j, "mem_bytes", t.mem_bytes);
		json_nodes(&j, &t);
		json_links(&j, &t);
		json_end_object(&j);
		goto out;
	}

	printf("fabric %" PRIu32 " (%s), %s configuration, generation %" PRIu64
	       "\n", t.fabric, t.fabric_name[0] ? t.fabric_name : "?",
	       !staged ? "committed" :
	       t.has_staged ? "staged" : "committed (nothing staged)",
	       t.generation);
	printf("  %" PRIu32 " endpoint%s, %" PRIu32 " switch%s, %" PRIu32
	       " link%s, tables %s\n",
	       t.nr_endpoints, t.nr_endpoints == 1 ? "" : "s",
	       t.nr_switches, t.nr_switches == 1 ? "" : "es",
	       t.nr_links, t.nr_links == 1 ? "" : "s",
	       icfabctl_fmt_bytes(mem, sizeof(mem), t.mem_bytes));
	if (!staged && t.has_staged)
		printf("  uncommitted changes are staged (see --staged)\n");
	printf("\nnodes:\n");
	if (t.nr_nodes)
		ret = print_nodes_text(&t, "  ");
	else
		printf("  none\n");
	printf("\nlinks:\n");
	if (!ret && t.nr_links_read)
		ret = print_links_text(&t, "  ");
	else if (!ret)
		printf("  none\n");
	if (ret)
		ret = icfabctl_fail(-ret, "topo show");
out:
	close_for(&nl, &t);
	return ret;
}

/* ---- node list, link list ---- */

/* node list (@links false) or link list, which needs the nodes' names. */
static int list(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
		int argc, char **argv, bool links)
{
	const char *what = links ? "link list" : "node list";
	struct icfab_json j;
	struct icfab_nl nl;
	bool staged = false;
	struct topo t;
	int ret;

	ret = parse_staged(cmd, argc, argv, &staged);
	if (ret)
		return ret;
	ret = open_for(ctl, &nl, &t, staged);
	if (ret)
		return ret;
	ret = topo_read(&nl, &t, READ_NODES | (links ? READ_LINKS : 0), what);
	if (ret)
		goto out;
	if (ctl->json) {
		json_init(&j, stdout);
		json_begin_object(&j, NULL);
		json_head(&j, &t);
		if (links)
			json_links(&j, &t);
		else
			json_nodes(&j, &t);
		json_end_object(&j);
	} else if (links ? t.nr_links_read && print_links_text(&t, "") :
			   t.nr_nodes && print_nodes_text(&t, "")) {
		ret = icfabctl_fail(ENOMEM, "%s", what);
	}
out:
	close_for(&nl, &t);
	return ret;
}

static int cmd_node_list(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			 int argc, char **argv)
{
	return list(ctl, cmd, argc, argv, false);
}

static int cmd_link_list(struct icfabctl *ctl, const struct icfabctl_cmd *cmd,
			 int argc, char **argv)
{
	return list(ctl, cmd, argc, argv, true);
}

/* ---- route show ---- */

/* A node by name, or else by id. */
static int find_node(const struct topo *t, const char *s, uint32_t *id)
{
	uint32_t i;

	for (i = 0; i < t->nodes_cap; i++) {
		if (t->nodes[i].present && !strcmp(t->nodes[i].name, s)) {
			*id = i;
			return 0;
		}
	}
	if (!icfabctl_parse_u32(s, &i) && topo_node(t, i)) {
		*id = i;
		return 0;
	}
	return -ENOENT;
}

/* The link leaving @node by @port, or -1. */
static int64_t link_out(const struct topo *t, uint32_t node, uint32_t port)
{
	uint32_t i;

	for (i = 0; i < t->links_cap; i++)
		if (t->links[i].present && t->links[i].src == node &&
		    t->links[i].src_port == port)
			return i;
	return -1;
}

enum walk_result {
	WALK_OK,
	WALK_RETRY,		/* the read was not consistent */
	WALK_FAILED,		/* printed */
};

/*
 * Follow the tables from @src towards @dst, reading each node's table on
 * the way, into @hops (link ids, at most nr_nodes of them).
 */
static enum walk_result walk(struct icfab_nl *nl, struct topo *t,
			     uint32_t src, uint32_t dst, uint32_t *hops,
			     uint32_t *nr_hops)
{
	char a[32], b[32], c[32];
	const char *sn = node_label(t, src, a, sizeof(a));
	const char *dn = node_label(t, dst, b, sizeof(b));
	uint32_t n = src, k = 0;
	struct tnode *nd;
	uint16_t port;
	int64_t l;

	while (n != dst) {
		nd = topo_node(t, n);
		if (!nd) {		/* a link to a node we did not see */
			t->inconsistent = true;
			return WALK_RETRY;
		}
		if (k >= t->nr_nodes) {
			icfabctl_warn("route from %s to %s: routing loop "
				      "(at %s after %" PRIu32 " hops)", sn, dn,
				      node_label(t, n, c, sizeof(c)), k);
			return WALK_FAILED;
		}
		if (!nd->routes_read) {
			if (topo_request(nl, t, ICFAB_CMD_ROUTE_GET, n,
					 route_valid)) {
				icfabctl_nl_report(nl, "route show");
				return WALK_FAILED;
			}
			nd->routes_read = true;
			if (t->inconsistent)
				return WALK_RETRY;
		}
		port = dst < nd->routes_len ? nd->routes[dst] : ICFAB_ROUTE_NONE;
		if (port == ICFAB_ROUTE_NONE) {
			if (n == src)
				icfabctl_warn("no route from %s to %s", sn, dn);
			else
				icfabctl_warn("no route from %s to %s: it stops "
					      "at %s after %" PRIu32 " hop%s",
					      sn, dn,
					      node_label(t, n, c, sizeof(c)),
					      k, k == 1 ? "" : "s");
			return WALK_FAILED;
		}
		l = link_out(t, n, port);
		if (l < 0) {
			icfabctl_warn("no route from %s to %s: %s routes it by "
				      "port %u, which has no link", sn, dn,
				      node_label(t, n, c, sizeof(c)), port);
			return WALK_FAILED;
		}
		hops[k++] = l;
		n = t->links[l].dst;
	}
	*nr_hops = k;
	return WALK_OK;
}

static void print_route(struct icfabctl *ctl, const struct topo *t,
			uint32_t src, uint32_t dst, const uint32_t *hops,
			uint32_t nr)
{
	uint64_t latency = 0, bottleneck = UINT64_MAX, bw;
	struct table tb = { .cols = 5, .right = 1 << 1 | 1 << 2 };
	char a[32], b[32], lat[32], bws[32];
	struct icfab_json j;
	bool down = false;
	uint32_t i;
	int w;

	for (i = 0; i < nr; i++) {
		const struct tlink *l = &t->links[hops[i]];

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
		json_head(&j, t);
		json_u64(&j, "src", src);
		json_string(&j, "src_name", node_label(t, src, a, sizeof(a)));
		json_u64(&j, "dst", dst);
		json_string(&j, "dst_name", node_label(t, dst, b, sizeof(b)));
		json_begin_array(&j, "hops");
		for (i = 0; i < nr; i++) {
			json_begin_object(&j, NULL);
			json_link_members(&j, t, hops[i]);
			json_u64(&j, "effective_bandwidth",
				 link_effective_bw(&t->links[hops[i]]));
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
	       node_label(t, src, a, sizeof(a)),
	       node_label(t, dst, b, sizeof(b)), t->generation,
	       t->staged ? ", staged" : "");
	w = src_width(t, hops, nr);
	for (i = 0; i < nr; i++)
		if (link_row(&tb, t, hops[i], w, false))
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
	const char *src_arg = NULL, *dst_arg = NULL;
	uint32_t src = 0, dst = 0, nr = 0, *hops = NULL;
	enum walk_result wr = WALK_RETRY;
	struct icfab_nl nl;
	bool staged = false;
	struct topo t;
	char b[32], kind[32];
	int i, attempt, ret;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--staged"))
			staged = true;
		else if (!src_arg)
			src_arg = argv[i];
		else if (!dst_arg)
			dst_arg = argv[i];
		else
			return icfabctl_usage_error(cmd, "too many arguments");
	}
	if (!dst_arg)
		return icfabctl_usage_error(cmd, "route show needs SRC and DST");

	ret = open_for(ctl, &nl, &t, staged);
	if (ret)
		return ret;

	for (attempt = 1; attempt <= TOPO_ATTEMPTS; attempt++) {
		if (attempt > 1)
			topo_retry_pause(attempt - 1);
		ret = topo_read(&nl, &t, READ_NODES | READ_LINKS,
				"route show");
		if (ret)
			goto out;
		ret = ICFABCTL_EXIT_ERROR;
		if (find_node(&t, src_arg, &src)) {
			icfabctl_warn("route show: no node '%s'", src_arg);
			goto out;
		}
		if (find_node(&t, dst_arg, &dst)) {
			icfabctl_warn("route show: no node '%s'", dst_arg);
			goto out;
		}
		if (src == dst) {
			icfabctl_warn("route show: '%s' and '%s' are the same node",
				      src_arg, dst_arg);
			goto out;
		}
		free(hops);
		hops = calloc(t.nr_nodes, sizeof(*hops));
		if (!hops) {
			ret = icfabctl_fail(ENOMEM, "route show");
			goto out;
		}
		wr = walk(&nl, &t, src, dst, hops, &nr);
		if (wr != WALK_RETRY)
			break;
	}
	if (wr == WALK_RETRY) {
		ret = topo_gave_up("route show");
		goto out;
	}
	if (wr == WALK_FAILED) {
		if (t.nodes[dst].kind != ICFAB_NODE_ENDPOINT)
			icfabctl_warn("%s is a %s: only endpoints are "
				      "destinations",
				      node_label(&t, dst, b, sizeof(b)),
				      icfabctl_node_kind_name(kind, sizeof(kind),
							t.nodes[dst].kind));
		goto out;
	}
	print_route(ctl, &t, src, dst, hops, nr);
	ret = ICFABCTL_EXIT_OK;
out:
	free(hops);
	close_for(&nl, &t);
	return ret;
}

/* ---- where a rejected commit went wrong ---- */

/* NODE_GET or LINK_GET of one object of the staged configuration. */
static int get_one(struct icfab_nl *nl, struct topo *t, uint8_t cmd,
		   int attr, uint32_t id)
{
	struct nl_msg *msg = icfab_nl_genlmsg(nl, cmd, 0, 0);

	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, ICFAB_A_FABRIC_ID, nl->fabric_id) < 0 ||
	    nla_put_u32(msg, attr, id) < 0 ||
	    nla_put_flag(msg, ICFAB_A_STAGED) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return icfab_nl_exchange(nl, msg, cmd == ICFAB_CMD_NODE_GET ?
				   node_valid : link_valid, t);
}

/* `node 3 "chip3"`, or `node 3` when it has no name or does not exist. */
static void describe_node(struct icfab_nl *nl, struct topo *t,
			  const char *what, uint32_t id, char *buf, size_t len)
{
	const struct tnode *n;

	n = topo_node(t, id);
	if (!n && !get_one(nl, t, ICFAB_CMD_NODE_GET, ICFAB_A_NODE_ID, id))
		n = topo_node(t, id);
	if (n && n->name[0])
		snprintf(buf, len, "%s %" PRIu32 " \"%s\"", what, id, n->name);
	else
		snprintf(buf, len, "%s %" PRIu32, what, id);
}

void icfabctl_err_location(struct icfab_nl *nl,
			   const struct icfab_err_cookie *c,
			   char *buf, size_t len)
{
	char x[96], y[96];
	struct topo t;
	struct tlink *l;

	memset(&t, 0, sizeof(t));
	switch (c->obj) {
	case ICFAB_ERR_OBJ_NODE:
		describe_node(nl, &t, "node", c->id, buf, len);
		break;
	case ICFAB_ERR_OBJ_LINK:
		if (get_one(nl, &t, ICFAB_CMD_LINK_GET, ICFAB_A_LINK_ID,
			    c->id) || c->id >= t.links_cap ||
		    !t.links[c->id].present) {
			snprintf(buf, len, "link %" PRIu32, c->id);
			break;
		}
		l = &t.links[c->id];
		describe_node(nl, &t, "node", l->src, x, sizeof(x));
		describe_node(nl, &t, "node", l->dst, y, sizeof(y));
		snprintf(buf, len, "link %" PRIu32 " from %s port %" PRIu32
			 " to %s port %" PRIu32, c->id, x, l->src_port, y,
			 l->dst_port);
		break;
	case ICFAB_ERR_OBJ_ROUTE:
		describe_node(nl, &t, "node", c->id, x, sizeof(x));
		describe_node(nl, &t, "destination", c->id2, y, sizeof(y));
		snprintf(buf, len, "%s, %s", x, y);
		break;
	default:
		snprintf(buf, len, "object %" PRIu32 ", id %" PRIu32
			 ", id2 %" PRIu32, c->obj, c->id, c->id2);
		break;
	}
	topo_clear(&t);
}

const struct icfabctl_cmd icfabctl_topo_cmds[] = {
	{
		.group = "topo",
		.name = "show",
		.args = "[--staged]",
		.handler = cmd_topo_show,
		.help = "Show the committed (or staged) topology of the fabric "
			"(see -f): a summary, the nodes and the links.",
	},
	{
		.group = "node",
		.name = "list",
		.args = "[--staged]",
		.handler = cmd_node_list,
		.help = "List the nodes: id, name, kind, ports, memory and DMA "
			"engines or colors (NODE_GET dump).",
	},
	{
		.group = "link",
		.name = "list",
		.args = "[--staged]",
		.handler = cmd_link_list,
		.help = "List the links: ends, bandwidth, latency, class and "
			"state (LINK_GET dump).",
	},
	{
		.group = "route",
		.name = "show",
		.args = "[--staged] SRC DST",
		.handler = cmd_route_show,
		.help = "Follow the route tables from node SRC to node DST "
			"(names or ids), hop by hop (ROUTE_GET).",
	},
	{ 0 }
};
