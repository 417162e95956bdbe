/* SPDX-License-Identifier: GPL-2.0 */
/* Route leads for an interleaved all-to-all (lead.c). */
#ifndef FDEV_LEAD_H
#define FDEV_LEAD_H

#include <stdint.h>

struct topo;

/*
 * @lead[i * @n + j]: the lead, in piece rounds, of the pair from the
 * rank at node @ep[i] to the one at @ep[j], over @t's routes (computed,
 * topo_route()). -ENOENT where a route has no single first link
 * (multipath) or there are no routes, -ELOOP where one does not reach
 * its destination, -ENOMEM.
 */
int fdev_route_leads(const struct topo *t, const uint32_t *ep, uint32_t n,
		     uint16_t *lead);

#endif
