// SPDX-License-Identifier: GPL-2.0
/*
 * What a plan costs on the fabric's links, for "auto" (coll.c): an
 * estimate from the routes and the links' bandwidths and latencies, not
 * a run. Each step of a plan starts when the one before it has ended,
 * so a plan costs the sum of its steps; a step costs what its busiest
 * link needs to carry the step's bytes over it (every transfer loads
 * every link of its route), plus the largest fixed cost of one of its
 * routes: the links' latencies and message overheads, and a segment's
 * store-and-forward at every hop after the first. That is the fabric's
 * own arithmetic for one transfer alone on its route, and a link shared
 * by k transfers takes k times as long; what it leaves out (DMA engines,
 * how a step's transfers overlap unevenly) every algorithm shares, so
 * the estimate ranks algorithms more reliably than it times them.
 */
#include <errno.h>
#include <stdlib.h>

#include <icfab/topo.h>

#include "cost.h"
#include "plan.h"

void fdev_paths_free(struct fdev_paths *m)
{
	if (!m)
		return;
	free(m->ps_per_byte);
	free(m->fixed_ps);
	free(m->off);
	free(m->link);
	free(m);
}

static int link_cost(const struct topo_link *l, double *ps_per_byte,
		     uint64_t *fixed_ps)
{
	double bw = (double)l->bandwidth;

	if (!l->bandwidth)
		return -ELOOP;
	if (l->eff_permille)
		bw = bw * l->eff_permille / 1000;
	if (l->state == ICFAB_LINK_DEGRADED && l->bw_permille)
		bw = bw * l->bw_permille / 1000;
	*ps_per_byte = 1e12 / bw;
	*fixed_ps = l->latency_ps + l->msg_overhead_ps;
	return 0;
}

/* Append node @src's route to node @dst to m->link at @len. */
static int add_path(const struct topo *t, struct fdev_paths *m, uint32_t src,
		    uint32_t dst, size_t *len, size_t *cap)
{
	uint32_t u = src, hops = 0;

	if (src >= t->nr_nodes || dst >= t->nr_nodes)
		return -ELOOP;
	while (u != dst) {
		uint16_t port = t->routes[(size_t)u * t->nr_nodes + dst];
		int l = topo_port_link(t, u, port);

		if (l < 0)
			return port == ICFAB_ROUTE_NONE ? -ELOOP : -ENOENT;
		if (hops++ > t->nr_links ||
		    t->links[l].state == ICFAB_LINK_DOWN)
			return -ELOOP;
		if (*len == *cap) {
			size_t c = *cap ? 2 * *cap : 1024;
			uint32_t *v = realloc(m->link, c * sizeof(*v));

			if (!v)
				return -ENOMEM;
			m->link = v;
			*cap = c;
		}
		m->link[(*len)++] = (uint32_t)l;
		u = t->links[l].dst_node;
	}
	return 0;
}

int fdev_paths_build(const struct topo *t, const uint32_t *ep, uint32_t n,
		     struct fdev_paths **out)
{
	struct fdev_paths *m;
	size_t len = 0, cap = 0;
	int err = -ENOMEM;

	*out = NULL;
	if (!t->routes)
		return -ENOENT;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->n = n;
	m->nr_links = t->nr_links;
	m->seg = t->segment_size;
	m->engines = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (ep[i] < t->nr_nodes &&
		    t->nodes[ep[i]].dma_engines < m->engines)
			m->engines = t->nodes[ep[i]].dma_engines;
	if (m->engines == UINT32_MAX)
		m->engines = 0;
	m->ps_per_byte = calloc(t->nr_links + 1, sizeof(*m->ps_per_byte));
	m->fixed_ps = calloc(t->nr_links + 1, sizeof(*m->fixed_ps));
	m->off = calloc((size_t)n * n + 1, sizeof(*m->off));
	if (!m->ps_per_byte || !m->fixed_ps || !m->off)
		goto fail;
	for (uint32_t l = 0; l < t->nr_links; l++) {
		/* a route over a link that is down fails in add_path() */
		if (t->links[l].state == ICFAB_LINK_DOWN)
			continue;
		err = link_cost(&t->links[l], &m->ps_per_byte[l],
				&m->fixed_ps[l]);
		if (err)
			goto fail;
	}
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < n; j++) {
			m->off[(size_t)i * n + j] = (uint32_t)len;
			err = i == j ? 0 : add_path(t, m, ep[i], ep[j], &len,
						    &cap);
			if (err)
				goto fail;
			if (len > UINT32_MAX) {
				err = -ENOMEM;
				goto fail;
			}
		}
	m->off[(size_t)n * n] = (uint32_t)len;
	*out = m;
	return 0;
fail:
	fdev_paths_free(m);
	return err;
}

/* The step's cost, and its links' loads back to zero. */
static double step_end(double *load, const struct fdev_paths *m,
		       uint32_t *touched, size_t *nt, double fixed)
{
	double busiest = 0;

	for (size_t i = 0; i < *nt; i++) {
		double v = load[touched[i]] * m->ps_per_byte[touched[i]];

		if (v > busiest)
			busiest = v;
		load[touched[i]] = 0;
	}
	*nt = 0;
	return busiest + fixed;
}

/* The time the busiest link needs for all of @p's bytes over it. */
static double plan_busiest(double *load, const struct fdev_paths *m,
			   const struct fdev_plan *p)
{
	double busiest = 0;

	for (size_t i = 0; i < p->nx; i++) {
		const struct fdev_xfer *x = &p->x[i];
		size_t q = (size_t)x->src * m->n + x->dst;

		for (uint32_t k = m->off[q]; k < m->off[q + 1]; k++)
			load[m->link[k]] += (double)x->len;
	}
	for (uint32_t l = 0; l < m->nr_links; l++) {
		double v = load[l] * m->ps_per_byte[l];

		if (v > busiest)
			busiest = v;
		load[l] = 0;
	}
	return busiest;
}

/* A transfer alone on its route: fixed costs and its bytes (ps). */
static double xfer_alone(const struct fdev_paths *m,
			 const struct fdev_xfer *x, double *fixed)
{
	size_t q = (size_t)x->src * m->n + x->dst;
	uint32_t a = m->off[q], b = m->off[q + 1];
	double f = 0, slowest = 0;

	for (uint32_t k = a; k < b; k++) {
		f += (double)m->fixed_ps[m->link[k]];
		if (m->ps_per_byte[m->link[k]] > slowest)
			slowest = m->ps_per_byte[m->link[k]];
	}
	if (b - a > 1)
		f += (double)(b - a - 1) * slowest *
		     (double)(x->len < m->seg ? x->len : m->seg);
	*fixed = f;
	return f + (double)x->len * slowest;
}

/*
 * A dataflow plan's longest chain (ps): a step starts when the last
 * transfer that feeds it has landed (p->feeds, fdev_plan_run_gated()),
 * each transfer taking what it would alone on its route; the latest
 * landing. A ring's piece crosses 2 (n - 1) hops one after the other
 * in an all-reduce, which no spreading of the load hides where every
 * hop is long. -1 where some step waits, through others, for itself.
 */
static double flow_chain(const struct fdev_paths *m,
			 const struct fdev_plan *p)
{
	uint32_t ns = p->flow_steps > p->nsteps ? p->flow_steps : p->nsteps;
	uint32_t *gate = calloc(ns + 1, sizeof(*gate));
	uint32_t *queue = calloc(ns + 1, sizeof(*queue));
	size_t *first = calloc(ns + 2, sizeof(*first));
	double *ready = calloc(ns + 1, sizeof(*ready)), chain = -1;
	uint32_t nq = 0, qi = 0;

	if (!gate || !queue || !first || !ready)
		goto out;
	for (size_t i = 0, s = 0; s <= ns; s++) {
		while (i < p->nx && p->x[i].step < s)
			i++;
		first[s] = i;
	}
	first[ns + 1] = p->nx;
	for (size_t i = 0; i < p->nx; i++)
		for (int half = 0; half < 2; half++) {
			uint32_t f = (uint32_t)(p->feeds[p->x[i].pad] >> (32 * half));

			if (f < ns)
				gate[f]++;
		}
	for (uint32_t s = 0; s < ns; s++)
		if (!gate[s])
			queue[nq++] = s;
	chain = 0;
	while (qi < nq) {
		uint32_t s = queue[qi++];

		for (size_t i = first[s]; i < first[s + 1]; i++) {
			double fx, land = ready[s] + xfer_alone(m, &p->x[i], &fx);

			chain = land > chain ? land : chain;
			for (int half = 0; half < 2; half++) {
				uint32_t f = (uint32_t)(p->feeds[p->x[i].pad] >>
							(32 * half));

				if (f >= ns)
					continue;
				ready[f] = land > ready[f] ? land : ready[f];
				if (!--gate[f])
					queue[nq++] = f;
			}
		}
	}
	if (nq < ns)
		chain = -1;
out:
	free(gate);
	free(queue);
	free(first);
	free(ready);
	return chain;
}

uint64_t fdev_plan_cost_ps(const struct fdev_paths *m,
			   const struct fdev_plan *p)
{
	double *load = calloc(m->nr_links + 1, sizeof(*load));
	uint32_t *touched = calloc(m->nr_links + 1, sizeof(*touched));
	double total = 0, fixed = 0, fixed_max = 0;
	uint64_t ret = UINT64_MAX;
	size_t nt = 0;

	if (!load || !touched)
		goto out;
	for (size_t i = 0; i < p->nx; i++) {
		const struct fdev_xfer *x = &p->x[i];
		size_t q = (size_t)x->src * m->n + x->dst;
		double f;

		if (x->src >= m->n || x->dst >= m->n)
			goto out;	/* multicast, or not this communicator's */
		if (i && x->step != p->x[i - 1].step) {
			total += step_end(load, m, touched, &nt, fixed);
			fixed = 0;
		}
		for (uint32_t k = m->off[q]; k < m->off[q + 1]; k++) {
			uint32_t l = m->link[k];

			if (!load[l])
				touched[nt++] = l;
			/* a zero-length transfer still holds its route */
			load[l] += x->len ? (double)x->len : 1e-9;
		}
		xfer_alone(m, x, &f);
		if (f > fixed)
			fixed = f;
		if (f > fixed_max)
			fixed_max = f;
	}
	total += step_end(load, m, touched, &nt, fixed);
	/*
	 * A dataflow plan (rings.c): its steps overlap, each piece going
	 * on as soon as it landed, so it costs its busiest link's whole
	 * load plus the largest fixed cost of a route (the last piece's
	 * way on after it), or its longest chain of pieces, each landing
	 * before the next goes, where that is longer: where a ring's
	 * block goes whole, each hop waits for the one before it as the
	 * steps did, and where hops are long an all-reduce's 2 (n - 1) of
	 * them in a row cost more than its load.
	 */
	if (p->feeds) {
		double chain = flow_chain(m, p);

		if (chain < 0)
			goto out;
		total = plan_busiest(load, m, p) + fixed_max;
		total = chain > total ? chain : total;
	}
	ret = total >= 1.8e19 ? UINT64_MAX - 1 : (uint64_t)total;
out:
	free(load);
	free(touched);
	return ret;
}
