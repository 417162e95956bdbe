// SPDX-License-Identifier: GPL-2.0
/*
 * The fabric's routes, read once per communicator over the module's
 * netlink family (lib/'s readback, as icfabctl reads them), for the
 * route leads of an interleaved all-to-all (lead.c). Reading moves no
 * fabric time. Where they cannot be read (no netlink, a rank's routes
 * with several next hops), the communicator has no leads and the
 * all-to-all keeps the plain piece-major order.
 */
#include <errno.h>
#include <stdlib.h>

#include <icfab/readback.h>

#include "internal.h"
#include "lead.h"

#define FDEV_LEADS_MAX_RANKS	256

/* The leads over the committed routes into @lead, or -errno. */
static int read_leads(struct fdev_comm *c, uint16_t *lead)
{
	struct fdev_info info;
	struct fabric_state st;
	struct icfab_nl nl;
	struct topo *t;
	int err;

	err = fdev_query(c->dev, &info);
	if (err)
		return err;
	err = icfab_nl_open(&nl, info.fabric_id);
	if (err)
		return err;
	err = fabric_read(&nl, false, &st);
	icfab_nl_close(&nl);
	if (err)
		return err;
	t = fabric_take_topo(&st);
	fabric_state_free(&st);
	if (!t)
		return -ENOENT;
	err = fdev_route_leads(t, c->ep, c->nranks, lead);
	topo_free(t);
	return err;
}

const uint16_t *fdev_comm_leads(struct fdev_comm *c)
{
	uint16_t *lead;

	if (c->lead_tried)
		return c->lead;
	c->lead_tried = 1;
	/*
	 * Every process of a communicator reads the whole fabric and walks
	 * n^2 routes: beyond 256 ranks (1024 processes each reading a
	 * 4096-chip torus's tables) that costs more than the leads give,
	 * so no communicator that large has leads, however many processes
	 * drive it: the same plan, the same times, either way.
	 */
	if (!c->dev || c->nranks > FDEV_LEADS_MAX_RANKS ||
	    getenv("FDEV_NO_LEADS"))
		return NULL;
	lead = calloc((size_t)c->nranks * c->nranks, sizeof(*lead));
	if (lead && read_leads(c, lead)) {
		free(lead);
		lead = NULL;
	}
	c->lead = lead;
	return lead;
}
