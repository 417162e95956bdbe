/* SPDX-License-Identifier: GPL-2.0 */
/* Route leads for an interleaved all-to-all (lead.c). */
#ifndef FDEV_LEAD_H
#define FDEV_LEAD_H

#include <stdint.h>

struct fdev_paths;

/*
 * @lead[i * n + j], n = @m->n: the lead, in piece rounds, of the pair
 * from rank i to rank j of an all-to-all over @m's routes (cost.c).
 * -ENOMEM.
 */
int fdev_route_leads(const struct fdev_paths *m, uint16_t *lead);

#endif
