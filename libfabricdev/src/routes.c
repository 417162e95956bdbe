// SPDX-License-Identifier: GPL-2.0
/*
 * The fabric's routes, read once per communicator (once per job where
 * its ranks are independent processes) over the module's netlink family
 * (lib/'s readback, as icfabctl reads them), for the route leads of an
 * interleaved all-to-all (lead.c) and the paths "auto" costs plans over
 * (cost.c). Reading moves no fabric time. Where they cannot be read (no
 * netlink, a rank's routes with several next hops), the communicator has
 * no leads and the all-to-all keeps the plain piece-major order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/readback.h>

#include "internal.h"
#include "cost.h"
#include "lead.h"

#define FDEV_LEADS_MAX_RANKS	256

/* The committed topology and routes, or NULL. */
static struct topo *read_topo(struct fdev_comm *c)
{
	struct fdev_info info;
	struct fabric_state st;
	struct icfab_nl nl;
	struct topo *t;

	if (fdev_query(c->dev, &info) || icfab_nl_open(&nl, info.fabric_id))
		return NULL;
	if (fabric_read(&nl, false, &st)) {
		icfab_nl_close(&nl);
		return NULL;
	}
	icfab_nl_close(&nl);
	t = fabric_take_topo(&st);
	fabric_state_free(&st);
	/*
	 * The leads and paths walk n^2 routes, a link per hop: without the
	 * index each link was a walk over every link of the fabric (256
	 * processes on ualink-pod: 73% of the guest's CPU samples in
	 * topo_port_link()). Without memory for it they still work.
	 */
	if (t)
		topo_port_index(t);
	return t;
}

/*
 * The paths (cost.c) computed from the fabric's routes, and the leads
 * (lead.c) from them; NULL where they cannot be.
 */
static void compute(struct fdev_comm *c, struct topo *t)
{
	uint16_t *lead;

	if (fdev_paths_build(t, c->ep, c->nranks, &c->paths)) {
		c->paths = NULL;
		return;
	}
	lead = calloc((size_t)c->nranks * c->nranks, sizeof(*lead));
	if (lead && fdev_route_leads(c->paths, lead)) {
		free(lead);
		lead = NULL;
	}
	c->lead = lead;
}

/*
 * The leads and paths as a job's ranks share them in its file
 * (fdev_job_fabric()), each array 8-byte aligned after this header:
 * lead[n * n] if has_lead; if has_paths ps_per_byte[nr_links],
 * fixed_ps[nr_links], off[n * n + 1], link[nr_hops].
 */
struct shared_fabric {
	uint32_t n;			/* ranks */
	uint32_t nr_links;
	uint32_t has_lead, has_paths;
	uint64_t seg;			/* bytes */
	uint64_t nr_hops;		/* entries of link */
	uint32_t engines;		/* fdev_paths.engines */
	uint32_t pad;
};

#define ALIGN8(x)	(((x) + 7) & ~(size_t)7)

size_t fdev_fabric_share_bytes(unsigned int nranks)
{
	size_t nn = (size_t)nranks * nranks;

	if (nranks < 2 || nranks > FDEV_LEADS_MAX_RANKS)
		return 0;
	/* Room for 32 hops a pair and 64 Ki links; sparse, so only what
	 * is written takes memory. */
	return (sizeof(struct shared_fabric) + 2 * nn + 4 * (nn + 1) +
		4 * 32 * nn + 16 * 65536 + 4 * 8 + 4095) & ~(size_t)4095;
}

/* The arrays of @sf in order: lead, ps_per_byte, fixed_ps, off, link. */
static void shared_layout(const struct shared_fabric *sf, size_t *at,
			  size_t *end)
{
	size_t nn = (size_t)sf->n * sf->n, o = ALIGN8(sizeof(*sf));

	at[0] = o;
	o += sf->has_lead ? ALIGN8(2 * nn) : 0;
	at[1] = o;
	at[2] = at[1] + (sf->has_paths ? 8 * (size_t)sf->nr_links : 0);
	at[3] = at[2] + (sf->has_paths ? 8 * (size_t)sf->nr_links : 0);
	at[4] = at[3] + (sf->has_paths ? ALIGN8(4 * (nn + 1)) : 0);
	*end = at[4] + (sf->has_paths ? 4 * sf->nr_hops : 0);
}

/* This rank's leads and paths into the job's @area of @cap bytes; 0 if
 * they do not fit. */
static size_t share(const struct fdev_comm *c, uint8_t *area, size_t cap)
{
	const struct fdev_paths *m = c->paths;
	struct shared_fabric sf = {
		.n = c->nranks,
		.has_lead = !!c->lead,
		.has_paths = !!m,
		.nr_links = m ? m->nr_links : 0,
		.seg = m ? m->seg : 0,
		.engines = m ? m->engines : 0,
		.nr_hops = m ? m->off[(size_t)c->nranks * c->nranks] : 0,
	};
	size_t at[5], end, nn = (size_t)sf.n * sf.n;

	shared_layout(&sf, at, &end);
	if (end > cap)
		return 0;
	memcpy(area, &sf, sizeof(sf));
	if (c->lead)
		memcpy(area + at[0], c->lead, 2 * nn);
	if (m) {
		memcpy(area + at[1], m->ps_per_byte, 8 * (size_t)m->nr_links);
		memcpy(area + at[2], m->fixed_ps, 8 * (size_t)m->nr_links);
		memcpy(area + at[3], m->off, 4 * (nn + 1));
		memcpy(area + at[4], m->link, 4 * sf.nr_hops);
	}
	return end;
}

/* The leads and paths another rank left in the job's file, in place. */
static int take_shared(struct fdev_comm *c, uint8_t *area, size_t len)
{
	struct shared_fabric sf;
	struct fdev_paths *m = NULL;
	size_t at[5], end;

	if (len < sizeof(sf))
		return -EINVAL;
	memcpy(&sf, area, sizeof(sf));
	shared_layout(&sf, at, &end);
	if (sf.n != c->nranks || end > len)
		return -EINVAL;
	if (sf.has_paths) {
		m = malloc(sizeof(*m));
		if (!m)
			return -ENOMEM;
		*m = (struct fdev_paths){
			.n = sf.n, .nr_links = sf.nr_links, .seg = sf.seg,
			.engines = sf.engines,
			.ps_per_byte = (double *)(area + at[1]),
			.fixed_ps = (uint64_t *)(area + at[2]),
			.off = (uint32_t *)(area + at[3]),
			.link = (uint32_t *)(area + at[4]),
		};
	}
	c->lead = sf.has_lead ? (uint16_t *)(area + at[0]) : NULL;
	c->paths = m;
	c->fabric_shared = 1;
	return 0;
}

/*
 * Read the fabric once per communicator, at the first use of either:
 * the leads and the paths (cost.c) are computed from it, and it is
 * freed (a 4096-chip torus's routes are 32 MiB). Where the ranks are
 * independent processes, once per job: the first rank to need them
 * reads and computes them and leaves them in the job's file, the others
 * use them there (256 processes on ualink-pod each read 1072 nodes,
 * 4096 links and their route tables over netlink, and walked n^2
 * routes). The same leads and paths either way, so the same plans.
 *
 * Beyond 256 ranks (1024 processes each reading a 4096-chip torus's
 * tables) they cost more than the leads give, so no communicator that
 * large has leads or paths, however many processes drive it: the same
 * plans, the same times, either way.
 */
static void read_fabric(struct fdev_comm *c)
{
	struct topo *t;
	size_t len = 0;
	void *area;
	int job;

	if (c->fabric_tried)
		return;
	c->fabric_tried = 1;
	if (!c->dev || c->nranks > FDEV_LEADS_MAX_RANKS)
		return;
	job = fdev_job_fabric(c, &area, &len);
	if (job == 0 && !take_shared(c, area, len))
		return;
	t = read_topo(c);
	if (t) {
		compute(c, t);
		topo_free(t);
	}
	/* What one rank could not read, none can: that is shared too. */
	if (job == 1)
		fdev_job_fabric_done(c, share(c, area, len));
}

void fdev_comm_fabric_free(struct fdev_comm *c)
{
	if (c->fabric_shared) {
		free(c->paths);
	} else {
		free(c->lead);
		fdev_paths_free(c->paths);
	}
	c->lead = NULL;
	c->paths = NULL;
}

const uint16_t *fdev_comm_leads(struct fdev_comm *c)
{
	if (getenv("FDEV_NO_LEADS"))
		return NULL;
	read_fabric(c);
	return c->lead;
}

const struct fdev_paths *fdev_comm_paths(struct fdev_comm *c)
{
	read_fabric(c);
	return c->paths;
}
