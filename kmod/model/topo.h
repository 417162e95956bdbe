/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfab fabric model: the topology a fabric runs on, and its validation.
 *
 * A topology is nodes (endpoints and switches, dense ids 0..N-1), directed
 * links between node ports, and destination-based forwarding tables: for
 * every node, the port to leave by towards each destination node. A port
 * is full duplex: at most one link leaves by it and one arrives at it.
 *
 * The model neither allocates nor locks. Its owner (the kernel module, or
 * a host test) provides the arrays and the scratch space.
 */
#ifndef _ICFAB_MODEL_TOPO_H
#define _ICFAB_MODEL_TOPO_H

#include "model.h"

typedef __UINT16_TYPE__	icfab_u16;

#define ICFAB_MODEL_NAME_MAX	32		/* bytes, with the NUL */
#define ICFAB_MODEL_NO_PORT	0xffffU		/* = ICFAB_ROUTE_NONE */
#define ICFAB_MODEL_NO_LINK	0xffffffffU

/*
 * Next-hop sets (docs/TIMING.md, "Equal-cost next hops through different
 * neighbours"): a route entry from ICFAB_MODEL_SET_BASE up (below
 * ICFAB_MODEL_NO_PORT) names set (entry - ICFAB_MODEL_SET_BASE) of its
 * node instead of a port. Ports stay below the base.
 */
#define ICFAB_MODEL_SET_BASE	0xf000U		/* = ICFAB_ROUTE_SET_BASE */
#define ICFAB_MODEL_SETS_MAX	(ICFAB_MODEL_NO_PORT - ICFAB_MODEL_SET_BASE)
#define ICFAB_MODEL_SET_PORTS	8		/* = ICFAB_ROUTE_SET_MAX_PORTS */

enum {
	ICFAB_MODEL_ENDPOINT	= 0,		/* = ICFAB_NODE_ENDPOINT */
	ICFAB_MODEL_SWITCH	= 1,		/* = ICFAB_NODE_SWITCH */
};

/*
 * How a node spreads what it sends over parallel links: links that leave
 * it for the same neighbour with the same bandwidth, latency, class,
 * switching and multipath mode (docs/TIMING.md, "Multipath").
 */
enum {
	ICFAB_MODEL_MULTIPATH_NONE	= 0,	/* = ICFAB_MULTIPATH_NONE */
	ICFAB_MODEL_MULTIPATH_FLOW	= 1,	/* one link per transfer, by key */
	ICFAB_MODEL_MULTIPATH_SPRAY	= 2,	/* segment by segment, in turn */
};

/*
 * A next-hop set: @nr ports (1..ICFAB_MODEL_SET_PORTS) of its node that
 * reach different neighbours, the first the primary (what a single-path
 * reader takes), and how a transfer chooses among them: mode is
 * ICFAB_MODEL_MULTIPATH_FLOW (by a hash of its key and the node) or
 * _SPRAY (segment by segment). Each member's parallel links then choose
 * within it as their own multipath mode says.
 */
struct icfab_mset {
	icfab_u8 mode;
	icfab_u8 nr;
	icfab_u16 ports[ICFAB_MODEL_SET_PORTS];
};

/*
 * Memory tiers (docs/TIMING.md, "Memory tiers"). A tier's port is a link
 * whose tier is one of these, from its home endpoint to itself, outside
 * the port graph: no route names it, and only transfers that read or
 * write a region in the tier cross it.
 */
enum {
	ICFAB_MODEL_TIER_NONE	= 0,		/* = ICFAB_TIER_NONE: a fabric link */
	ICFAB_MODEL_TIER_SRAM	= 1,		/* = ICFAB_TIER_SRAM */
	ICFAB_MODEL_TIER_HBM	= 2,		/* = ICFAB_TIER_HBM */
	ICFAB_MODEL_TIER_DDR	= 3,		/* = ICFAB_TIER_DDR */
	ICFAB_MODEL_TIERS	= 3,		/* kinds, NONE aside */
};

enum {
	ICFAB_MODEL_LINK_UP		= 0,	/* = ICFAB_LINK_UP */
	ICFAB_MODEL_LINK_DOWN		= 1,
	ICFAB_MODEL_LINK_DEGRADED	= 2,
};

struct icfab_mnode {
	icfab_u8 present;
	icfab_u8 kind;			/* ICFAB_MODEL_ENDPOINT/SWITCH */
	icfab_u16 pad;
	icfab_u32 nr_ports;
	icfab_u32 dma_engines;		/* endpoint */
	icfab_u32 colors;		/* switch: color-table entries */
	icfab_u32 nr_link_ends;		/* links from or to this node */
	icfab_u64 mem_bytes;		/* endpoint: device memory, bytes */
	/*
	 * Endpoint: per tier kind (index kind - 1), the id + 1 of the tier
	 * port that serves it (its own, or one it shares), 0 for none.
	 */
	icfab_u32 tier_link[ICFAB_MODEL_TIERS];
	char name[ICFAB_MODEL_NAME_MAX];
	/*
	 * Forwarding: out port (or set, from ICFAB_MODEL_SET_BASE) per
	 * destination id, routes_len entries; and the node's next-hop sets.
	 */
	icfab_u16 *routes;
	icfab_u32 routes_len;
	struct icfab_mset *sets;
	icfab_u32 nr_sets;
	/*
	 * Derived at validation, nr_ports entries each, allocated by the
	 * owner: the link leaving by and the link arriving at each port.
	 */
	icfab_u32 *port_out;
	icfab_u32 *port_in;
};

struct icfab_mlink {
	icfab_u8 present;
	icfab_u8 state;			/* ICFAB_MODEL_LINK_* */
	icfab_u16 permille;		/* DEGRADED: share of bandwidth, 1..999 */
	icfab_u32 class;		/* enum icfab_link_class */
	icfab_u32 src, src_port;
	icfab_u32 dst, dst_port;
	icfab_u64 bandwidth;		/* bytes/s */
	icfab_u64 latency_ps;		/* ps */
	/*
	 * A link being brought up (OCS reconfiguration): nothing departs on
	 * it before up_at_ps (fabric ps, 0: not held). A segment that is
	 * ready earlier waits until then, or with hold_fail set fails its
	 * transfer with -ENETDOWN. up_delay_ps is the owner's staging field
	 * (the delay to apply at the next commit); the engine ignores it.
	 */
	icfab_u64 up_at_ps;		/* ps */
	icfab_u64 up_delay_ps;		/* ps, staged */
	icfab_u8 hold_fail;
	/*
	 * How the node this link reaches forwards what arrives over it:
	 * 0 store and forward, 1 virtual cut-through (docs/TIMING.md).
	 */
	icfab_u8 cut_through;
	/*
	 * ICFAB_MODEL_MULTIPATH_*: whether a route that names this link may
	 * take a parallel link instead.
	 */
	icfab_u8 multipath;
	/*
	 * ICFAB_MODEL_TIER_*: NONE for a fabric link; else this is the port
	 * of a memory tier of @tier_bytes at its home endpoint src (= dst;
	 * the ports are unused).
	 */
	icfab_u8 tier;
	/*
	 * Derived at validation: the next link, by source port, in the ring
	 * of this link's parallel links (itself when it has none, or when
	 * its multipath mode is NONE), and how many links that ring holds.
	 */
	icfab_u32 par_next;
	icfab_u32 nr_par;
	/* Energy (ICFAB_F_LINK_ENERGY): stats only, the engine ignores it. */
	icfab_u32 fj_per_bit;		/* fJ per bit carried */
	icfab_u32 static_mw;		/* mW drawn while powered */
	/*
	 * Calibration (ICFAB_F_LINK_CALIBRATION, docs/TIMING.md): the share
	 * of the bandwidth that carries payload, in permille (0 and 1000:
	 * all of it), and the time the first segment of every transfer
	 * holds the link before its bytes (ps, 0: none).
	 */
	icfab_u32 eff_permille;
	icfab_u64 msg_overhead_ps;
	icfab_u64 tier_bytes;		/* a tier port: the tier's capacity */
};

struct icfab_topo_limits {
	icfab_u32 max_endpoints;
	icfab_u32 max_switches;
	icfab_u32 max_links;
	icfab_u32 max_ports;
	icfab_u32 max_colors;
	/*
	 * Called between destinations while routes are walked, which is
	 * O(nodes) per destination; the kernel passes cond_resched() so a
	 * large commit does not hog the CPU. May be NULL.
	 */
	void (*yield)(void);
};

struct icfab_mtopo {
	icfab_u32 nodes_cap;		/* entries in nodes[] */
	icfab_u32 links_cap;		/* entries in links[] */
	struct icfab_mnode *nodes;	/* indexed by node id */
	struct icfab_mlink *links;	/* indexed by link id */
	/* Counts of present objects, kept by the owner. */
	icfab_u32 nr_nodes;
	icfab_u32 nr_endpoints;
	icfab_u32 nr_switches;
	icfab_u32 nr_links;
};

/* What validation found wrong, for an error message naming the object. */
enum icfab_topo_err_obj {
	ICFAB_TOPO_ERR_NONE,
	ICFAB_TOPO_ERR_NODE,		/* id: the node */
	ICFAB_TOPO_ERR_LINK,		/* id: the link */
	ICFAB_TOPO_ERR_ROUTE,		/* id: the node, id2: the destination */
	/* = ICFAB_ERR_OBJ_ROUTE_SET, _ROUTE_PORT: after the circuits' two */
	ICFAB_TOPO_ERR_SET = 6,		/* id: the node, id2: the set */
	ICFAB_TOPO_ERR_ROUTE_PORT,	/* id: the node, id2: the destination,
					 * id3: the port of the set member */
};

/* Whether link @l is a memory tier's port rather than a fabric link. */
static inline int icfab_mlink_is_tier(const struct icfab_mlink *l)
{
	return l->tier != ICFAB_MODEL_TIER_NONE;
}

struct icfab_topo_err {
	enum icfab_topo_err_obj obj;
	icfab_u32 id, id2, id3;
	const char *msg;		/* static string */
};

/*
 * Bytes of scratch icfab_topo_validate() needs for @nr_nodes nodes: a
 * mark per node and, 4-aligned after them, a node id per level of the
 * search over next-hop sets.
 */
#define ICFAB_TOPO_SCRATCH_SIZE(nr_nodes) \
	(((nr_nodes) + 3UL) / 4 * 4 + 4UL * (nr_nodes) + 4)

/*
 * Check @t as a whole, fill every present node's port_out[] and
 * port_in[] and every present link's par_next and nr_par. @scratch holds
 * ICFAB_TOPO_SCRATCH_SIZE(nr_nodes) bytes, 4-aligned.
 * Returns 0, or -1 with @err describing the first problem found:
 *  - node ids not dense, counts over @lim, a switch's colors over the
 *    limit, ports over the limit or zero;
 *  - a link from or to a missing node or port, a self loop, two links
 *    leaving by one port or arriving at one port;
 *  - a tier port of an unknown kind, not from an endpoint to itself, or
 *    an endpoint's tier reference to anything but a present tier port of
 *    that kind (a switch may have none);
 *  - a route to a missing node or to a switch, by a port without a link,
 *    a loop towards a destination, or a path that stops short of it;
 *  - a route to a missing set; a set of no members or over
 *    ICFAB_MODEL_SET_PORTS, of an unknown mode, with a port without a
 *    link or two members to one neighbour; and, along any member of a
 *    set, a loop or a node without a route (ICFAB_TOPO_ERR_ROUTE_PORT
 *    names the member).
 */
int icfab_topo_validate(struct icfab_mtopo *t,
			const struct icfab_topo_limits *lim,
			icfab_u8 *scratch, struct icfab_topo_err *err);

/*
 * Whether anything in validated @t spreads a transfer's segments by
 * their spray turns: a next-hop set in spray mode, or parallel links in
 * spray mode. Where nothing does, no transfer's spray offset
 * (icfab_engine_set_spray_offset()) changes anything. 1 or 0.
 */
int icfab_topo_sprays(const struct icfab_mtopo *t);

/*
 * @node's entry towards @dst: a port, a set (from ICFAB_MODEL_SET_BASE)
 * or ICFAB_MODEL_NO_PORT.
 */
static inline icfab_u16 icfab_topo_route_entry(const struct icfab_mtopo *t,
					       icfab_u32 node, icfab_u32 dst)
{
	const struct icfab_mnode *n = &t->nodes[node];

	return dst < n->routes_len ? n->routes[dst] : ICFAB_MODEL_NO_PORT;
}

/* @node's set named by route entry @e, or NULL when @e names none. */
static inline const struct icfab_mset *
icfab_topo_entry_set(const struct icfab_mtopo *t, icfab_u32 node, icfab_u16 e)
{
	const struct icfab_mnode *n = &t->nodes[node];

	if (e < ICFAB_MODEL_SET_BASE || e == ICFAB_MODEL_NO_PORT ||
	    e - ICFAB_MODEL_SET_BASE >= n->nr_sets)
		return ICFAB_NULL;
	return &n->sets[e - ICFAB_MODEL_SET_BASE];
}

/*
 * The port @node leaves by towards @dst, or ICFAB_MODEL_NO_PORT: for a
 * set, its primary (single-path readers: circuits, hop counts).
 */
static inline icfab_u16 icfab_topo_next_port(const struct icfab_mtopo *t,
					     icfab_u32 node, icfab_u32 dst)
{
	icfab_u16 e = icfab_topo_route_entry(t, node, dst);
	const struct icfab_mset *s;

	if (e < ICFAB_MODEL_SET_BASE || e == ICFAB_MODEL_NO_PORT)
		return e;
	s = icfab_topo_entry_set(t, node, e);
	return s && s->nr ? s->ports[0] : ICFAB_MODEL_NO_PORT;
}

#endif /* _ICFAB_MODEL_TOPO_H */
