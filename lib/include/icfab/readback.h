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
	char name[ICFAB_NAME_MAX];	/* the fabric's ("icfab0") */
	uint64_t generation;
	uint64_t mem_bytes;		/* committed tables, bytes */
	bool has_staged;		/* somebody is staging right now */
	uint64_t commit_ps;		/* ps: fabric time of the last commit */
	uint64_t features;		/* ICFAB_F_* the module has */
	/* As FABRIC_GET counts them. */
	uint32_t nr_endpoints, nr_switches, nr_links;
	/*
	 * Nodes by module id (0 .. nr_nodes-1), links in id order; routes
	 * nr_nodes^2 when read. A staged configuration may have ids that no
	 * node holds: those nodes are zero, node_present says which are.
	 */
	struct topo *topo;
	uint8_t *node_present;		/* per node id */
	uint32_t *link_id;		/* topo link index -> module link id */
	uint32_t *routes_len;		/* per node: entries the module holds */
	uint8_t *row_tail;		/* per node: a port set beyond nr_nodes */
};

/* What a read asks for besides FABRIC_GET. */
enum {
	FABRIC_READ_NODES	= 1 << 0,
	FABRIC_READ_LINKS	= 1 << 1,	/* also finds cable peers */
	FABRIC_READ_ROUTES	= 1 << 2,	/* every table */
	FABRIC_READ_ALL		= FABRIC_READ_NODES | FABRIC_READ_LINKS |
				  FABRIC_READ_ROUTES,
};

/*
 * One read of the committed (or the staged) configuration, of what
 * @what asks for: -EINTR when its replies span a change, for
 * icfab_nl_read_consistent() to read again; -EPROTO when a committed
 * configuration has holes in its node ids. On failure @st is freed.
 */
int fabric_read_once(struct icfab_nl *nl, bool staged, unsigned int what,
		     struct fabric_state *st);

/*
 * Read all of the committed (or the staged) configuration, all from one
 * generation, under the dump-retry rule of <icfab/nl.h>.
 */
int fabric_read(struct icfab_nl *nl, bool staged, struct fabric_state *st);
void fabric_state_free(struct fabric_state *st);

/* Whether module node id @id holds a node in @st. */
bool fabric_node_present(const struct fabric_state *st, uint32_t id);

/*
 * ROUTE_GET of node @node's table into @row (st->topo->nr_nodes entries,
 * ICFAB_ROUTE_NONE where it has none), from @st's generation: -EINTR
 * when the configuration changed since @st was read. An entry that names
 * a next-hop set reads as the set's primary port.
 */
int fabric_read_route_row(struct icfab_nl *nl, bool staged,
			  const struct fabric_state *st, uint32_t node,
			  uint16_t *row);

/*
 * NODE_GET or LINK_GET of one object (of the staged configuration if
 * @staged), for naming it in a message: 0, or -errno (-ENOENT: none).
 */
int fabric_get_node(struct icfab_nl *nl, bool staged, uint32_t id,
		    struct topo_node *node);
int fabric_get_link(struct icfab_nl *nl, bool staged, uint32_t id,
		    struct topo_link *link);

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
