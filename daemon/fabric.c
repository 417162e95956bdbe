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
	uint8_t *tier_add;		/* per wanted tier: stage it */
	uint8_t *tier_del;		/* per module tier: delete it */
};

static void plan_free(struct plan *p)
{
	free(p->node);
	free(p->link);
	free(p->del);
	free(p->have_of);
	free(p->row);
	free(p->row_len);
	free(p->tier_add);
	free(p->tier_del);
}

static bool node_same(const struct topo_node *a, const struct topo_node *b)
{
	if (a->kind != b->kind || a->nr_ports != b->nr_ports ||
	    strcmp(a->name, b->name))
		return false;
	if (a->kind == ICFAB_NODE_ENDPOINT)
		return a->mem_bytes == b->mem_bytes &&
		       a->dma_engines == b->dma_engines &&
		       !memcmp(a->tier, b->tier, sizeof(a->tier));
	return a->colors == b->colors;
}

static bool tier_same(const struct topo_tier *a, const struct topo_tier *b)
{
	return a->link_id == b->link_id && a->home == b->home &&
	       a->kind == b->kind && a->bytes == b->bytes &&
	       a->bandwidth == b->bandwidth &&
	       a->latency_ps == b->latency_ps &&
	       a->fj_per_bit == b->fj_per_bit;
}

/*
 * Tier ports (module links numbered after the fabric's): a wanted one is
 * kept when the module has it alike, on a kept home; every other one the
 * module has goes, before anything is added.
 */
static void plan_tiers(const struct topo *w, const struct topo *ht,
		       struct plan *p, struct fabric_diff *d)
{
	uint32_t i, j, replaced = 0;

	for (j = 0; j < ht->nr_tiers; j++)
		p->tier_del[j] = 1;
	for (i = 0; i < w->nr_tiers; i++) {
		const struct topo_tier *wt = &w->tiers[i];
		bool had = false;

		p->tier_add[i] = 1;
		for (j = 0; j < ht->nr_tiers; j++) {
			if (ht->tiers[j].link_id != wt->link_id)
				continue;
			had = true;
			if (tier_same(wt, &ht->tiers[j]) &&
			    p->node[wt->home] == ACT_KEEP) {
				p->tier_add[i] = 0;
				p->tier_del[j] = 0;
			}
		}
		if (p->tier_add[i] && had)
			replaced++;
		else if (p->tier_add[i])
			d->links_added++;
	}
	d->links_replaced += replaced;
	for (j = 0; j < ht->nr_tiers; j++)
		d->links_removed += p->tier_del[j];
	d->links_removed -= replaced;
}

static bool link_same(const struct topo_link *a, const struct topo_link *b)
{
	return a->src_node == b->src_node && a->src_port == b->src_port &&
	       a->dst_node == b->dst_node && a->dst_port == b->dst_port &&
	       a->bandwidth == b->bandwidth && a->latency_ps == b->latency_ps &&
	       a->class == b->class && a->switching == b->switching &&
	       a->multipath == b->multipath &&
	       a->fj_per_bit == b->fj_per_bit && a->static_mw == b->static_mw &&
	       a->eff_permille == b->eff_permille &&
	       a->msg_overhead_ps == b->msg_overhead_ps;
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

	return u < n && d < n ? topo_route_entry(h->topo, u, d) :
				ICFAB_ROUTE_NONE;
}

/*
 * The entry the module is sent for (u, d): with ICFAB_F_ROUTE_SETS the
 * next-hop set where there is one, else the port (a set's primary).
 */
static uint16_t want_route(const struct topo *w, const struct fabric_state *h,
			   uint32_t u, uint32_t d)
{
	if (h->features & ICFAB_F_ROUTE_SETS)
		return topo_route_entry(w, u, d);
	return w->routes[(size_t)u * w->nr_nodes + d];
}

static const struct topo_node_sets *node_sets(const struct topo *t,
					      uint32_t u)
{
	static const struct topo_node_sets none;

	return t->node_sets && u < t->nr_nodes ? &t->node_sets[u] : &none;
}

/* Whether u's next-hop sets must be sent: they differ from the module's. */
static bool sets_differ(const struct topo *w, const struct fabric_state *h,
			uint32_t u, bool fresh)
{
	const struct topo_node_sets *ws = node_sets(w, u);
	const struct topo_node_sets *hs = fresh ? node_sets(w, UINT32_MAX) :
					      node_sets(h->topo, u);

	if (!(h->features & ICFAB_F_ROUTE_SETS))
		return false;
	return ws->n != hs->n ||
	       (ws->n && memcmp(ws->v, hs->v, ws->n * sizeof(*ws->v)));
}

/*
 * Entries of row u that differ; the tail beyond the wanted nodes counts,
 * and next-hop sets that differ count as one.
 */
static uint32_t row_diff(const struct topo *w, const struct fabric_state *h,
			 uint32_t u, bool fresh)
{
	uint32_t nw = w->nr_nodes, nh = h->topo->nr_nodes, d, cnt = 0;

	for (d = 0; d < nw; d++) {
		uint16_t want = want_route(w, h, u, d);
		uint16_t have = fresh ? ICFAB_ROUTE_NONE : have_route(h, u, d);

		cnt += want != have;
	}
	if (!fresh && u < nh) {
		for (d = nw; d < nh; d++)
			cnt += have_route(h, u, d) != ICFAB_ROUTE_NONE;
		cnt += h->row_tail[u];
	}
	return cnt + sets_differ(w, h, u, fresh);
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
	p->tier_add = calloc(w->nr_tiers + 1, 1);
	p->tier_del = calloc(ht->nr_tiers + 1, 1);
	if (!p->node || !p->link || !p->del || !p->have_of || !p->row ||
	    !p->row_len || !p->tier_add || !p->tier_del) {
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
	plan_tiers(w, ht, p, d);

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
	char bw[32], lat[32], pj[24] = "", mw[24] = "", eff[16] = "";
	char ovh[32] = "";
	const char *a = l->src_node < t->nr_nodes ?
		t->nodes[l->src_node].name : "?";
	const char *b = l->dst_node < t->nr_nodes ?
		t->nodes[l->dst_node].name : "?";

	if (l->fj_per_bit)
		topo_fmt_energy(pj, sizeof(pj), l->fj_per_bit);
	if (l->static_mw)
		topo_fmt_power(mw, sizeof(mw), l->static_mw);
	if (l->eff_permille)
		topo_fmt_efficiency(eff, sizeof(eff), l->eff_permille);
	if (l->msg_overhead_ps)
		topo_fmt_time(ovh, sizeof(ovh), l->msg_overhead_ps);
	snprintf(buf, len, "%s.%u -> %s.%u %s %s %s %s%s%s%s%s%s%s%s%s%s%s%s%s",
		 a,
		 l->src_port, b, l->dst_port,
		 topo_fmt_bandwidth(bw, sizeof(bw), l->bandwidth),
		 topo_fmt_time(lat, sizeof(lat), l->latency_ps),
		 topo_class_name(l->class), topo_state_name(l->state),
		 l->switching ? " " : "",
		 l->switching ? topo_switching_name(l->switching) : "",
		 l->multipath ? " multipath " : "",
		 l->multipath ? topo_multipath_name(l->multipath) : "",
		 *pj ? " " : "", pj, *mw ? " " : "", mw,
		 *eff ? " efficiency " : "", eff,
		 *ovh ? " overhead " : "", ovh);
}

static void tier_text(const struct topo *t, const struct topo_tier *r,
		      char *buf, size_t len)
{
	char sz[32], bw[32], lat[32];

	snprintf(buf, len, "%s at '%s' %s %s %s",
		 topo_tier_name(r->kind),
		 r->home < t->nr_nodes ? t->nodes[r->home].name : "?",
		 topo_fmt_size(sz, sizeof(sz), r->bytes),
		 topo_fmt_bandwidth(bw, sizeof(bw), r->bandwidth),
		 topo_fmt_time(lat, sizeof(lat), r->latency_ps));
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
	for (i = 0; i < ht->nr_tiers; i++)
		if (p->tier_del[i]) {
			tier_text(ht, &ht->tiers[i], a, sizeof(a));
			line(ls, "- tier port %u %s", ht->tiers[i].link_id, a);
		}
	for (i = 0; i < w->nr_tiers; i++)
		if (p->tier_add[i]) {
			tier_text(w, &w->tiers[i], b, sizeof(b));
			line(ls, "+ tier port %u %s", w->tiers[i].link_id, b);
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

/*
 * Send one edit; on failure say which step failed and why. A message
 * that could not be built (@msg NULL, or @bad: an attribute did not fit)
 * is freed and reported as -ENOMEM.
 */
static int stage_send(struct stager *s, struct nl_msg *msg, int bad,
		      const char *what, uint32_t id)
{
	char err[384];
	int ret;

	if (!msg || bad) {
		nlmsg_free(msg);
		ret = -ENOMEM;
	} else {
		ret = icfab_nl_request(s->nl, msg, NULL, NULL);
	}
	if (ret)
		snprintf(s->why, s->why_len, "%s %u: %s", what, id,
			 icfab_nl_strerror(s->nl, ret, err, sizeof(err)));
	return ret;
}

static int stage_params(struct stager *s, const struct topo *w,
			const struct topo *ht)
{
	struct nl_msg *m = icfab_nl_msg(s->nl, ICFAB_CMD_FABRIC_SET, 0, 0);
	int bad = !m ||
		  (w->segment_size != ht->segment_size &&
		   nla_put_u32(m, ICFAB_A_FABRIC_SEGMENT_SIZE, w->segment_size)) ||
		  (w->time_mode != ht->time_mode &&
		   nla_put_u32(m, ICFAB_A_FABRIC_TIME_MODE, w->time_mode)) ||
		  (w->dilation != ht->dilation &&
		   nla_put_u32(m, ICFAB_A_FABRIC_DILATION, w->dilation));

	return stage_send(s, m, bad, "fabric parameters", s->nl->fabric_id);
}

static int stage_id(struct stager *s, uint8_t cmd, int attr, uint32_t id,
		    const char *what)
{
	struct nl_msg *m = icfab_nl_msg(s->nl, cmd, 0, 0);

	return stage_send(s, m, !m || nla_put_u32(m, attr, id), what, id);
}

static int put_tier_links(struct nl_msg *m, const struct topo_node *n)
{
	uint32_t ids[ICFAB_TIER_KINDS], k;
	bool any = false;

	for (k = 0; k < ICFAB_TIER_KINDS; k++) {
		ids[k] = n->tier[k] ? n->tier[k] - 1 : ICFAB_TIER_NO_LINK;
		any |= n->tier[k] != 0;
	}
	return any ? nla_put(m, ICFAB_A_NODE_TIER_LINKS, sizeof(ids), ids) : 0;
}

static int stage_tier(struct stager *s, const struct topo_tier *r)
{
	struct nl_msg *m = icfab_nl_msg(s->nl, ICFAB_CMD_LINK_NEW, 0, 0);
	int bad = !m ||
		  nla_put_u32(m, ICFAB_A_LINK_ID, r->link_id) ||
		  nla_put_u32(m, ICFAB_A_LINK_SRC_NODE, r->home) ||
		  nla_put_u32(m, ICFAB_A_LINK_DST_NODE, r->home) ||
		  nla_put_u64(m, ICFAB_A_LINK_BANDWIDTH, r->bandwidth) ||
		  nla_put_u64(m, ICFAB_A_LINK_LATENCY_PS, r->latency_ps) ||
		  nla_put_u8(m, ICFAB_A_LINK_TIER, r->kind) ||
		  nla_put_u64(m, ICFAB_A_LINK_TIER_BYTES, r->bytes) ||
		  (r->fj_per_bit &&
		   nla_put_u32(m, ICFAB_A_LINK_ENERGY_FJ_PER_BIT,
				r->fj_per_bit));

	return stage_send(s, m, bad, "adding the tier port", r->link_id);
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
			/* Only a tiered endpoint needs ICFAB_F_MEMORY_TIERS. */
			bad |= put_tier_links(m, n);
		} else {
			bad |= nla_put_u32(m, ICFAB_A_NODE_COLORS, n->colors);
		}
	}
	return stage_send(s, m, bad, "adding node", id);
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
		/* Only cut-through needs ICFAB_F_LINK_SWITCHING. */
		if (l->switching != ICFAB_SWITCHING_STORE_FORWARD)
			bad |= nla_put_u8(m, ICFAB_A_LINK_SWITCHING,
					  l->switching);
		/* Likewise multipath and ICFAB_F_LINK_MULTIPATH. */
		if (l->multipath != ICFAB_MULTIPATH_NONE)
			bad |= nla_put_u8(m, ICFAB_A_LINK_MULTIPATH,
					  l->multipath);
		/* Only a link that costs energy needs ICFAB_F_LINK_ENERGY. */
		if (l->fj_per_bit)
			bad |= nla_put_u32(m, ICFAB_A_LINK_ENERGY_FJ_PER_BIT,
					   l->fj_per_bit);
		if (l->static_mw)
			bad |= nla_put_u32(m, ICFAB_A_LINK_STATIC_MW,
					   l->static_mw);
		/* Only a calibrated link needs ICFAB_F_LINK_CALIBRATION. */
		if (l->eff_permille)
			bad |= nla_put_u32(m, ICFAB_A_LINK_EFFICIENCY_PERMILLE,
					   l->eff_permille);
		if (l->msg_overhead_ps)
			bad |= nla_put_u64(m, ICFAB_A_LINK_MSG_OVERHEAD_PS,
					   l->msg_overhead_ps);
	}
	return stage_send(s, m, bad, "adding link", id);
}

static int stage_link_state(struct stager *s, uint32_t id,
			    const struct topo_link *l)
{
	struct nl_msg *m = icfab_nl_msg(s->nl, ICFAB_CMD_LINK_SET, 0, 0);
	int bad = !m || nla_put_u32(m, ICFAB_A_LINK_ID, id) ||
		  nla_put_u32(m, ICFAB_A_LINK_STATE, l->state) ||
		  (l->state == ICFAB_LINK_DEGRADED &&
		   nla_put_u32(m, ICFAB_A_LINK_BW_PERMILLE, l->bw_permille));

	return stage_send(s, m, bad, "setting the state of link", id);
}

/* Next-hop sets per ROUTE_SETS_SET message (18 KiB of them). */
#define SETS_CHUNK	1024

/*
 * Node u's next-hop sets, all of them from set 0 (none clears the
 * module's), before the row that names them.
 */
static int stage_sets(struct stager *s, const struct topo *w, uint32_t u)
{
	const struct topo_node_sets *ns = node_sets(w, u);
	struct icfab_route_set v[SETS_CHUNK];
	uint32_t first = 0, i, j;
	int ret;

	do {
		uint32_t cnt = ns->n - first < SETS_CHUNK ? ns->n - first :
							      SETS_CHUNK;
		struct nl_msg *m = icfab_nl_msg(s->nl, ICFAB_CMD_ROUTE_SETS_SET,
						0, cnt * sizeof(v[0]));

		memset(v, 0, cnt * sizeof(v[0]));
		for (i = 0; i < cnt; i++) {
			const struct topo_rset *r = &ns->v[first + i];

			v[i].mode = r->mode;
			v[i].nr_ports = r->nr;
			for (j = 0; j < r->nr; j++)
				v[i].ports[j] = r->ports[j];
		}
		ret = stage_send(s, m, !m ||
				 nla_put_u32(m, ICFAB_A_ROUTE_NODE, u) ||
				 nla_put_u32(m, ICFAB_A_ROUTE_SET_FIRST, first) ||
				 (cnt && nla_put(m, ICFAB_A_ROUTE_SETS,
						 cnt * sizeof(v[0]), v)),
				 "next-hop sets of node", u);
		first += cnt;
	} while (!ret && first < ns->n);
	return ret;
}

/* A whole row in one message, padded with NONE past the wanted nodes. */
static int stage_row(struct stager *s, const struct topo *w,
		     const struct fabric_state *h, uint32_t u, uint32_t len,
		     uint16_t *buf)
{
	size_t bytes = (size_t)len * sizeof(uint16_t);
	struct nl_msg *m;
	uint32_t nw = w->nr_nodes, d;
	int ret;

	if (h->features & ICFAB_F_ROUTE_SETS &&
	    (node_sets(w, u)->n || node_sets(h->topo, u)->n)) {
		ret = stage_sets(s, w, u);
		if (ret)
			return ret;
	}
	m = icfab_nl_msg(s->nl, ICFAB_CMD_ROUTE_SET, 0, bytes);
	for (d = 0; d < len; d++)
		buf[d] = d < nw ? want_route(w, h, u, d) : ICFAB_ROUTE_NONE;
	return stage_send(s, m, !m || nla_put_u32(m, ICFAB_A_ROUTE_NODE, u) ||
			  nla_put_u32(m, ICFAB_A_ROUTE_DST_FIRST, 0) ||
			  nla_put(m, ICFAB_A_ROUTE_PORTS, bytes, buf),
			  "routes of node", u);
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
	for (i = 0; i < ht->nr_tiers && !ret; i++)
		if (p->tier_del[i])
			ret = stage_id(s, ICFAB_CMD_LINK_DEL, ICFAB_A_LINK_ID,
				       ht->tiers[i].link_id,
				       "deleting the tier port");
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
	for (i = 0; i < w->nr_tiers && !ret; i++)
		if (p->tier_add[i])
			ret = stage_tier(s, &w->tiers[i]);
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
			ret = stage_row(s, w, h, i, p->row_len[i], buf);
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
		ret = stage_send(&s, m,
				 !m || nla_put_u64(m, ICFAB_A_FABRIC_GENERATION,
						   have->generation),
				 "commit on generation", (uint32_t)have->generation);
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
