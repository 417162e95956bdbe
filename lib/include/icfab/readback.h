/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module's configuration read back (lib/topo/readback.c), in
 * topology-library terms.
 */
#ifndef ICFAB_READBACK_H
#define ICFAB_READBACK_H

#include <stdbool.h>
#include <stdint.h>

#include "nl.h"
#include "topo.h"

/* The module's configuration as read back, in topology-library terms. */
struct fabric_state {
	uint64_t generation;
	uint64_t mem_bytes;		/* committed tables, bytes */
	bool has_staged;		/* somebody is staging right now */
	uint64_t commit_ps;		/* ps: fabric time of the last commit */
	struct topo *topo;		/* nodes, links; routes nr_nodes^2 */
	uint32_t *link_id;		/* topo link index -> module link id */
	uint32_t *routes_len;		/* per node: entries the module holds */
	uint8_t *row_tail;		/* per node: a port set beyond nr_nodes */
};

/*
 * Read the committed (or the staged) configuration, all from one
 * generation: a read that spans a commit is done again.
 */
int fabric_read(struct icfab_nl *nl, bool staged, struct fabric_state *st);
void fabric_state_free(struct fabric_state *st);

/* A routable topology of the module's configuration (takes st->topo). */
struct topo *fabric_take_topo(struct fabric_state *st);

/*
 * LINK_GET: the module's LINK_UP_AT_PS (0 once a link is lit) and
 * HOLD_FAIL into @t's links, whose ids are the module's.
 */
int fabric_read_holds(struct icfab_nl *nl, struct topo *t);

/* FABRIC_GET: the generation and the fabric time of the last commit. */
int fabric_commit_time(struct icfab_nl *nl, uint64_t *generation,
		       uint64_t *commit_ps);

#endif /* ICFAB_READBACK_H */
