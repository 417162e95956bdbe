/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Color-routed circuits and multicast trees (after the Cerebras WSE): the
 * daemon's allocator. Pure bookkeeping over a struct topo; programming the
 * module's color tables is the caller's job.
 *
 * Routers. A color table belongs to a switch node with colors > 0 (the
 * module's NODE_NEW carries colors for switches only): on the wse2 preset
 * and any mesh/torus/supermesh with "routers: true", every grid position
 * has such a router. Nodes without a table are transparent to circuits:
 * endpoints that forward (a plain mesh or torus, a TPU chip) and switches
 * with colors: 0 (NVSwitch, PCIe switches) hold no color. A request whose
 * path or tree crosses no router with a table fails with -EOPNOTSUPP: that
 * fabric has no color budget to allocate from.
 *
 * Paths. A circuit follows the routed path, i.e. it walks the topology's
 * destination tables (topo_route()) hop by hop from the source to the
 * destination, so a circuit crosses exactly the links ordinary traffic
 * between the same endpoints would. A multicast tree is built leaf by
 * leaf, in request order: each leaf's routed path is grafted onto the
 * tree at the last node of the path that the tree already reaches, each
 * link kept once; the routers where branches part are the ones that copy.
 * Destination tables that spread destinations over several spines (any
 * leaf/spine or fat tree) make the routes to two leaves part and meet
 * again; grafted, the later leaf joins the branch that reaches the
 * meeting node first, so no node gets the payload twice. The module
 * builds a circuit's data tree the same way (kmod/circuit.c), so the
 * routers that hold the color are the ones its WRITEs cross. DOR on a
 * mesh or torus never parts and meets again.
 *
 * Colors. The color is the lowest index free at every router of the path
 * or tree. When there is none the request fails with -ENOSPC and
 *	"router (12,7): 24/24 colors in use"	a grid router: its coordinates
 *	"router sw3: 24/24 colors in use"	any other router: its name
 * naming the first full router in path order (tree order: leaf by leaf,
 * source to leaf). When no router is full but their free colors have
 * nothing in common ("tree" for a multicast request):
 *	"no color is free at every router on the path; most used: router (1,0): 12/24 colors in use"
 *
 * Every request is validated and its path computed before anything is
 * marked: a failed request changes nothing. Circuit ids are the lowest
 * free id, so the same sequence of requests gives the same ids and colors.
 *
 * The table keeps a pointer to the topo. Link states and routes may change
 * under it (existing circuits keep the links they were given; rerouting
 * them is the caller's decision); nodes must not be added or removed.
 * Sized for the module's limits: 5120 nodes, 64 colors per router (a u64
 * bitmask per node).
 */
#ifndef ICFABD_CIRCUIT_H
#define ICFABD_CIRCUIT_H

#include <stdbool.h>
#include <stdint.h>

#include "topo.h"

#define CIRCUIT_MAX_COLORS	64	/* one u64 bitmask per router */

struct circuit {
	uint32_t id;
	uint32_t owner;			/* requester, e.g. a client's pid */
	uint32_t owner_uid;		/* the requester's uid (icfabd) */
	uint32_t color;			/* held at every router of links[] */
	uint32_t src;			/* endpoint node id */
	bool multicast;			/* opened by circuit_open_multicast() */
	uint32_t nr_dsts;		/* 1 for a unicast circuit */
	uint32_t *dsts;			/* endpoint node ids, in request order */
	uint32_t nr_links;
	uint32_t *links;		/* link ids, each once; a link's source
					 * node is reached by an earlier link
					 * (or is src), so the list is a
					 * top-down walk of the path or tree;
					 * 0 links for a circuit adopted from
					 * the module, which keeps routers only */
	uint32_t nr_routers;
	uint32_t *routers;		/* router node ids holding color */
};

/*
 * What circuit_plan() computes for a request, without marking anything:
 * the color and where it is held. icfabd installs a plan in the module,
 * which gives the id, then records it with circuit_adopt().
 */
struct circuit_plan {
	uint32_t color;
	uint32_t nr_links;
	uint32_t *links;		/* as in struct circuit */
	uint32_t nr_routers;
	uint32_t *routers;		/* in tree order */
};

struct circuit_table;

int circuit_table_new(const struct topo *t, struct circuit_table **ctp,
		      struct topo_err *err);
void circuit_table_free(struct circuit_table *ct);

/*
 * Open a circuit src -> dst, or a multicast tree src -> leaves[]. Return
 * the circuit id (>= 0) or -errno with err->msg set:
 *	-ENOENT		a node id that does not exist
 *	-EINVAL		source or leaf not an endpoint, dst or a leaf equal to
 *			the source, no leaves, a leaf given twice, a topology
 *			without routes
 *	-EHOSTUNREACH	no route from the source to a destination
 *	-ENETDOWN	the route crosses a DOWN link
 *	-ELOOP		the route tables loop
 *	-EOPNOTSUPP	no router with a color table on the path or tree
 *	-ENOSPC		no color free at every router (see above)
 *	-ENOMEM
 */
int circuit_open(struct circuit_table *ct, uint32_t owner, uint32_t src,
		 uint32_t dst, struct topo_err *err);
int circuit_open_multicast(struct circuit_table *ct, uint32_t owner,
			   uint32_t src, const uint32_t *leaves,
			   uint32_t nr_leaves, struct topo_err *err);

/*
 * Compute a request as circuit_open()/_multicast() would (same errors),
 * but change nothing: the plan's arrays are the caller's, freed with
 * circuit_plan_free().
 */
int circuit_plan(struct circuit_table *ct, uint32_t src,
		 const uint32_t *leaves, uint32_t nr_leaves, bool multicast,
		 struct circuit_plan *p, struct topo_err *err);
void circuit_plan_free(struct circuit_plan *p);

/*
 * Record a circuit the module holds, under the module's id: c->dsts,
 * c->links and c->routers are copied; c->multicast is nr_dsts > 1.
 * The colors are marked without a check (the module made it), except
 * that the id must be free (-EEXIST) and every node must exist and every
 * router have the color (-EINVAL), with err->msg set.
 */
int circuit_adopt(struct circuit_table *ct, const struct circuit *c,
		  struct topo_err *err);

/* Free one circuit: 0, or -ENOENT (with err->msg) when there is no such id. */
int circuit_close(struct circuit_table *ct, uint32_t id, struct topo_err *err);
/* Free every circuit of an owner (it exited); returns how many. */
uint32_t circuit_close_owner(struct circuit_table *ct, uint32_t owner);

/* Queries, for "icfabctl circuit list" and "icfabctl colors". */
const struct circuit *circuit_get(const struct circuit_table *ct, uint32_t id);
/* Circuits in id order: prev NULL gives the first; NULL at the end. */
const struct circuit *circuit_next(const struct circuit_table *ct,
				   const struct circuit *prev);
#define circuit_for_each(c, ct) \
	for ((c) = circuit_next((ct), NULL); (c); (c) = circuit_next((ct), (c)))
uint32_t circuit_count(const struct circuit_table *ct);

/* Does node have a color table? */
bool circuit_is_router(const struct topo *t, uint32_t node);
/* used/total colors at a router: 0, or -ENOENT when node is not a router. */
int circuit_router_usage(const struct circuit_table *ct, uint32_t node,
			 uint32_t *used, uint32_t *total);
/* Bit c set = color c held at node (0 for nodes without a table). */
uint64_t circuit_router_mask(const struct circuit_table *ct, uint32_t node);
/* "(12,7)" for a grid router, else the node's name. Returns buf. */
char *circuit_router_label(const struct topo *t, uint32_t node, char *buf,
			   size_t len);

/* A node id by name: 0, or -ENOENT with "no node named 'x'". */
int circuit_node_lookup(const struct topo *t, const char *name, uint32_t *id,
			struct topo_err *err);

#endif /* ICFABD_CIRCUIT_H */
