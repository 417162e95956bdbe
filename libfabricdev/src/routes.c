// SPDX-License-Identifier: GPL-2.0
/*
 * The fabric's routes, read once per communicator over the module's
 * netlink family (lib/'s readback, as icfabctl reads them), for the
 * route leads of an interleaved all-to-all (lead.c) and the paths "auto"
 * costs plans over (cost.c). Reading moves no fabric time. Where they cannot be read (no netlink, a rank's routes
 * with several next hops), the communicator has no leads and the
 * all-to-all keeps the plain piece-major order.
 */
#include <errno.h>
#include <stdlib.h>

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
 * Read the fabric once per communicator, at the first use of either:
 * the paths (cost.c) are built from it, and the leads from them
 * (lead.c), and it is freed (a 4096-chip torus's routes are 32 MiB).
 *
 * Every process of a communicator reads the whole fabric and walks n^2
 * routes: beyond 256 ranks (1024 processes each reading a 4096-chip
 * torus's tables) that costs more than the leads give, so no
 * communicator that large has leads or paths, however many processes
 * drive it: the same plans, the same times, either way.
 */
static void read_fabric(struct fdev_comm *c)
{
	struct topo *t;
	uint16_t *lead;

	if (c->fabric_tried)
		return;
	c->fabric_tried = 1;
	if (!c->dev || c->nranks > FDEV_LEADS_MAX_RANKS)
		return;
	t = read_topo(c);
	if (!t)
		return;
	if (fdev_paths_build(t, c->ep, c->nranks, &c->paths))
		c->paths = NULL;
	topo_free(t);
	if (!c->paths)
		return;
	lead = calloc((size_t)c->nranks * c->nranks, sizeof(*lead));
	if (lead && fdev_route_leads(c->paths, lead)) {
		free(lead);
		lead = NULL;
	}
	c->lead = lead;
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
