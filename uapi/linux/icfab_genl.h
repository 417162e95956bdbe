/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * icfab: generic netlink family "icfab", the control-plane interface.
 *
 * Rules:
 *  - commands and attributes are numbered from 1 and only ever appended;
 *  - every command has a strict policy: unknown attributes, wrong types
 *    and out-of-range values are rejected with an extack message that
 *    names the attribute;
 *  - every command that changes state needs CAP_NET_ADMIN;
 *  - changes are announced on the ICFAB_GENL_MCGRP_EVENTS group.
 */
#ifndef _UAPI_LINUX_ICFAB_GENL_H
#define _UAPI_LINUX_ICFAB_GENL_H

#include <linux/types.h>

#define ICFAB_GENL_NAME		"icfab"
#define ICFAB_GENL_VERSION	1

/* Multicast group for configuration and state-change notifications. */
#define ICFAB_GENL_MCGRP_EVENTS	"events"

enum icfab_cmd {
	ICFAB_CMD_UNSPEC,

	/*
	 * FABRIC_GET: read one fabric (ICFAB_A_FABRIC_ID, default 0) or dump
	 * all of them. The reply carries every ICFAB_A_FABRIC_* attribute.
	 */
	ICFAB_CMD_FABRIC_GET,

	/*
	 * FABRIC_SET (CAP_NET_ADMIN): change fabric parameters. Takes
	 * ICFAB_A_FABRIC_ID and any of SEGMENT_SIZE, TIME_MODE, DILATION.
	 * All values are validated before any is applied; on success the
	 * generation is bumped and a FABRIC_NTF goes to the events group.
	 */
	ICFAB_CMD_FABRIC_SET,

	/* FABRIC_NTF: notification only; same attributes as FABRIC_GET. */
	ICFAB_CMD_FABRIC_NTF,

	/*
	 * Topology. Every *_NEW, *_DEL, *_SET and ROUTE_SET (CAP_NET_ADMIN)
	 * changes the fabric's STAGED configuration only, which starts as a
	 * copy of the committed one. FABRIC_COMMIT validates the staged
	 * configuration as a whole and makes it the committed one in one
	 * step, or changes nothing; FABRIC_ABORT drops it. GETs and dumps
	 * read the committed configuration, or the staged one when the
	 * request carries ICFAB_A_STAGED. Every reply carries the
	 * generation it was read from, and a dump that spans a commit (or,
	 * for a staged view, any staging change) is flagged NLM_F_DUMP_INTR.
	 */
	ICFAB_CMD_NODE_NEW,		/* NODE_ID, NODE_KIND, NODE_NAME, NODE_* */
	ICFAB_CMD_NODE_DEL,		/* NODE_ID; refused while links use it */
	ICFAB_CMD_NODE_GET,		/* NODE_ID, or dump */
	ICFAB_CMD_LINK_NEW,		/* LINK_ID, LINK_* */
	ICFAB_CMD_LINK_DEL,		/* LINK_ID */
	ICFAB_CMD_LINK_SET,		/* LINK_ID, LINK_STATE, LINK_BW_PERMILLE */
	ICFAB_CMD_LINK_GET,		/* LINK_ID, or dump */
	ICFAB_CMD_ROUTE_SET,		/* ROUTE_NODE, ROUTE_DST_FIRST, ROUTE_PORTS */
	ICFAB_CMD_ROUTE_GET,		/* ROUTE_NODE, or dump (one per node;
					 * a node's next-hop sets follow its
					 * table: ROUTE_SET_FIRST, ROUTE_SETS) */
	ICFAB_CMD_FABRIC_COMMIT,	/* optional FABRIC_GENERATION to expect */
	ICFAB_CMD_FABRIC_ABORT,
	/* Reply to ROUTE_GET/NODE_GET/LINK_GET use the request's command. */

	/*
	 * Color-routed circuits (kmod/circuit.c). A circuit holds one color
	 * at every router (switch with a color table) it crosses. The module
	 * stores circuits and checks colors; icfabd chooses them.
	 *
	 * CIRCUIT_NEW (CAP_NET_ADMIN): CIRCUIT_COLOR, CIRCUIT_SRC,
	 * CIRCUIT_DSTS, CIRCUIT_ROUTERS, optional CIRCUIT_OWNER_PID/UID
	 * (0 when absent). The color must be free at every router, or
	 * nothing is installed: -ENOSPC, the extack names the router and the
	 * cookie is ICFAB_ERR_OBJ_ROUTER_COLOR. The reply carries the new
	 * CIRCUIT_ID (the lowest free one) and every attribute; the same
	 * message, command CIRCUIT_NEW, goes to the events group.
	 * CIRCUIT_DEL (CAP_NET_ADMIN): CIRCUIT_ID; announced as CIRCUIT_DEL.
	 * CIRCUIT_GET: CIRCUIT_ID, or dump.
	 * A FABRIC_COMMIT that would leave a circuit on a node that is gone,
	 * is no longer a router, or has too few colors fails with -EBUSY
	 * (cookie ICFAB_ERR_OBJ_CIRCUIT); other commits keep the circuits.
	 */
	ICFAB_CMD_CIRCUIT_NEW,
	ICFAB_CMD_CIRCUIT_DEL,
	ICFAB_CMD_CIRCUIT_GET,
	/*
	 * COLOR_GET: dump, one message per router of the committed
	 * configuration (or only NODE_ID): NODE_ID, NODE_COLORS,
	 * COLOR_USED, COLOR_MASK.
	 */
	ICFAB_CMD_COLOR_GET,

	/*
	 * Link statistics (kmod/genl_stats.c), counted by the engine since
	 * the last reset: STATS_BYTES, STATS_SEGMENTS, STATS_BUSY_PS (sum
	 * of serialisation times) and STATS_MAX_QUEUED_PS (the longest any
	 * one segment waited at the link, departure - ready). They outlive
	 * the engine (folded into the fabric when the last context
	 * detaches) and start again from zero when a new configuration is
	 * committed.
	 * STATS_GET: LINK_ID, or dump (one message per link of the committed
	 * configuration); each carries FABRIC_GENERATION, LINK_ID, the
	 * STATS_* values and STATS_INCOMPLETE.
	 * STATS_RESET (CAP_NET_ADMIN): zero every link's counters.
	 */
	ICFAB_CMD_STATS_GET,
	ICFAB_CMD_STATS_RESET,

	/*
	 * Contexts (ICFAB_F_CTX_ADMIN): who holds virtual time.
	 * CTX_GET: dump, one message per context attached to the fabric
	 * (FABRIC_ID, default 0), in the order they attached: CTX_ID,
	 * CTX_PID (tgid of its first attacher), CTX_UID (the opener's
	 * effective uid), CTX_ENDPOINTS, CTX_FIRST_ENDPOINT, CTX_CLOCK_PS,
	 * CTX_STATE (ICFAB_CTX_*) and CTX_HELD_NS: the wall time the
	 * context has been the one holding the engine back (the horizon,
	 * FABRIC_HELD_PID), 0 when it is not. Anyone may list, as anyone
	 * may run ps: pids and uids are not secrets, and the list is how a
	 * user finds who stalls the clock.
	 * CTX_EVICT (CAP_NET_ADMIN): FABRIC_ID, CTX_ID. The context ends as
	 * its owner's exit would end it: its io_uring commands and what
	 * waits in its queues complete with -ECANCELED, and so do its
	 * transfers already in the engine, when they would have finished
	 * (they keep their place on the links) and without landing any
	 * byte (a receiver's completion of one says -ECANCELED too); it no longer holds
	 * the engine back, and its every later SUBMIT fails with
	 * -ECANCELED. An ICFAB_IOC_WAIT under way returns with what has
	 * completed; a later one that asks for more than it can ever get
	 * fails with -EDEADLK. Its files stay open; it is listed
	 * (ICFAB_CTX_DEAD) until they close. -ENOENT for no attached context with that id,
	 * -EALREADY for one already ended; neither changes anything.
	 */
	ICFAB_CMD_CTX_GET,
	ICFAB_CMD_CTX_EVICT,

	/*
	 * ROUTE_SETS_SET (ICFAB_F_ROUTE_SETS, CAP_NET_ADMIN; staged):
	 * ROUTE_NODE, optional ROUTE_SET_FIRST (0 when absent) and
	 * ROUTE_SETS: the node's next-hop sets from FIRST on, replacing
	 * those and dropping any above (an empty list from 0 clears them;
	 * FIRST may not leave a gap; a message holds at most 3640, as an
	 * attribute holds 64 KiB: more go in several from FIRST on). A ROUTE_PORTS entry
	 * ICFAB_ROUTE_SET_BASE + s names set s of its node. -ERANGE with
	 * extack for a mode, member count or port out of range; a member
	 * without a link, two members to one neighbour, a route by a set
	 * the node lacks, and a set whose paths loop or reach a node with
	 * no route are refused at FABRIC_COMMIT, the cookie naming the set
	 * (ICFAB_ERR_OBJ_ROUTE_SET) or the route and member
	 * (ICFAB_ERR_OBJ_ROUTE_PORT).
	 */
	ICFAB_CMD_ROUTE_SETS_SET,

	__ICFAB_CMD_MAX,
};
#define ICFAB_CMD_MAX		(__ICFAB_CMD_MAX - 1)

enum icfab_attr {
	ICFAB_A_UNSPEC,
	ICFAB_A_PAD,			/* alignment padding for u64s */

	ICFAB_A_FABRIC_ID,		/* u32: N of /dev/icfabN */
	ICFAB_A_FABRIC_NAME,		/* string: "icfab0" */
	ICFAB_A_FABRIC_ABI_VERSION,	/* u32: ICFAB_ABI_VERSION */
	ICFAB_A_FABRIC_FEATURES,	/* u64: ICFAB_F_* */
	ICFAB_A_FABRIC_GENERATION,	/* u64: bumped by every change */
	ICFAB_A_FABRIC_TIME_MODE,	/* u32: enum icfab_time_mode */
	ICFAB_A_FABRIC_SEGMENT_SIZE,	/* u32: bytes */
	ICFAB_A_FABRIC_DILATION,	/* u32: paced mode, wall ns per fabric ns */
	ICFAB_A_FABRIC_NOW_PS,		/* u64: fabric clock, ps */
	ICFAB_A_FABRIC_NR_ENDPOINTS,	/* u32 */
	ICFAB_A_FABRIC_NR_SWITCHES,	/* u32 */
	ICFAB_A_FABRIC_NR_LINKS,	/* u32 */
	ICFAB_A_FABRIC_NR_CONTEXTS,	/* u32: open files on the device */

	ICFAB_A_STAGED,			/* flag: read/describe the staged config */
	ICFAB_A_FABRIC_HAS_STAGED,	/* u8: uncommitted changes exist */

	ICFAB_A_NODE_ID,		/* u32: below max_endpoints + max_switches;
					 * ids are dense (0..N-1) at commit */
	ICFAB_A_NODE_KIND,		/* u32: enum icfab_node_kind */
	ICFAB_A_NODE_NAME,		/* string, at most ICFAB_NAME_MAX - 1 */
	ICFAB_A_NODE_PORTS,		/* u32: 1..max_ports */
	ICFAB_A_NODE_MEM_BYTES,		/* u64: endpoint device memory */
	ICFAB_A_NODE_DMA_ENGINES,	/* u32: endpoint DMA engines */
	ICFAB_A_NODE_COLORS,		/* u32: switch color-table entries */

	ICFAB_A_LINK_ID,		/* u32: 0..max_links-1 */
	ICFAB_A_LINK_SRC_NODE,		/* u32 */
	ICFAB_A_LINK_SRC_PORT,		/* u32 */
	ICFAB_A_LINK_DST_NODE,		/* u32 */
	ICFAB_A_LINK_DST_PORT,		/* u32 */
	ICFAB_A_LINK_BANDWIDTH,		/* u64: bytes/s, > 0 */
	ICFAB_A_LINK_LATENCY_PS,	/* u64: ps */
	ICFAB_A_LINK_CLASS,		/* u32: enum icfab_link_class */
	ICFAB_A_LINK_STATE,		/* u32: enum icfab_link_state */
	ICFAB_A_LINK_BW_PERMILLE,	/* u32: DEGRADED: share of bandwidth, 1..999 */

	ICFAB_A_ROUTE_NODE,		/* u32: the node whose table this is */
	ICFAB_A_ROUTE_DST_FIRST,	/* u32: destination node of ROUTE_PORTS[0] */
	/*
	 * binary: one __u16 (host order) per destination node, starting at
	 * DST_FIRST: the port of ROUTE_NODE to leave by, or ICFAB_ROUTE_NONE.
	 * ROUTE_SET takes up to a whole table in one message (2 * max_nodes
	 * bytes); ROUTE_GET replies carry at most 1024 destinations each.
	 */
	ICFAB_A_ROUTE_PORTS,

	ICFAB_A_FABRIC_MEM_BYTES,	/* u64: memory the committed tables take */

	ICFAB_A_CIRCUIT_ID,		/* u32 */
	ICFAB_A_CIRCUIT_COLOR,		/* u32: 0..colors-1 of every router */
	ICFAB_A_CIRCUIT_OWNER_PID,	/* u32: requester's pid, 0: none */
	ICFAB_A_CIRCUIT_OWNER_UID,	/* u32: requester's uid */
	ICFAB_A_CIRCUIT_SRC,		/* u32: endpoint node id */
	ICFAB_A_CIRCUIT_DSTS,		/* binary: __u32 endpoint node ids,
					 * 1..ICFAB_CIRCUIT_MAX_DSTS, distinct */
	ICFAB_A_CIRCUIT_ROUTERS,	/* binary: __u32 router node ids crossed,
					 * 1..ICFAB_CIRCUIT_MAX_ROUTERS, distinct */
	ICFAB_A_COLOR_USED,		/* u32: colors in use at a router */
	ICFAB_A_COLOR_MASK,		/* u64: bit c set: color c in use */

	ICFAB_A_STATS_BYTES,		/* u64: bytes carried */
	ICFAB_A_STATS_SEGMENTS,		/* u64: segments carried */
	ICFAB_A_STATS_BUSY_PS,		/* u64: ps serialising */
	ICFAB_A_STATS_MAX_QUEUED_PS,	/* u64: ps, longest wait of a segment */
	ICFAB_A_STATS_INCOMPLETE,	/* u8: 1 when, out of memory, some
					 * traffic went uncounted */
	/*
	 * FABRIC_GET: who holds the engine back (virtual time): the process
	 * (tgid) whose context's clock is the safe time, and that clock; 0
	 * and 0 when no context does. The icfab_engine_held tracepoint
	 * fires each time the engine stops there with work pending.
	 */
	ICFAB_A_FABRIC_HELD_PID,	/* u32 */
	ICFAB_A_FABRIC_HELD_PS,		/* u64: ps */

	/*
	 * Live commits and OCS reconfiguration (ICFAB_F_LIVE_COMMIT). A
	 * commit while contexts are attached is allowed when the staged
	 * configuration keeps every node (id, kind, DMA engines); links may
	 * come, go, change ends, state, share, bandwidth or latency, and
	 * routes may change. Segments already on a wire arrive; the others
	 * follow the new tables from their next hop, and a segment that
	 * finds no route or a DOWN link fails its transfer with
	 * -EHOSTUNREACH. The commit takes effect at fabric time
	 * FABRIC_COMMIT_PS (in FABRIC_GET and the notification): the
	 * engine's clock, or 0 when no context is attached (fabric time
	 * starts at 0 when the first context attaches, and a pending
	 * LINK_UP_AT_PS is moved along with it).
	 *
	 * LINK_UP_DELAY_PS (LINK_NEW, LINK_SET; staged): the commit that
	 * applies it keeps the link dark until COMMIT_PS + delay, reported
	 * as LINK_UP_AT_PS by LINK_GET (0 once it is up, or never held).
	 * Segments that reach a dark link wait until then (HOLD, the
	 * default), or, with LINK_HOLD_FAIL 1, fail their transfer with
	 * -ENETDOWN. An OCS reconfiguration is a commit whose new circuits
	 * carry the switch's delay.
	 */
	ICFAB_A_FABRIC_COMMIT_PS,	/* u64: ps */
	ICFAB_A_LINK_UP_DELAY_PS,	/* u64: ps, staged */
	ICFAB_A_LINK_UP_AT_PS,		/* u64: ps, 0: not held */
	ICFAB_A_LINK_HOLD_FAIL,		/* u8: 0 hold, 1 fail */

	/*
	 * LINK_SWITCHING (LINK_NEW, LINK_SET, LINK_GET; staged): how the node
	 * the link reaches forwards what arrives over it, store and forward
	 * (the default) or virtual cut-through (enum icfab_switching; the
	 * model is docs/TIMING.md). LINK_SET leaves it as it is without one.
	 */
	ICFAB_A_LINK_SWITCHING,		/* u8: enum icfab_switching */

	/*
	 * LINK_MULTIPATH (LINK_NEW, LINK_SET, LINK_GET; staged): whether a
	 * route that names the link may take a parallel link instead (one
	 * leaving the same node for the same neighbour, alike in bandwidth,
	 * latency, class, switching and multipath): none (the default), one
	 * per transfer by a hash of its key, or segment by segment in turn
	 * (enum icfab_multipath; docs/TIMING.md, "Multipath"). LINK_SET
	 * leaves it as it is without one.
	 */
	ICFAB_A_LINK_MULTIPATH,		/* u8: enum icfab_multipath */

	/*
	 * Energy (ICFAB_F_LINK_ENERGY). LINK_ENERGY_FJ_PER_BIT and
	 * LINK_STATIC_MW (LINK_NEW, LINK_GET; staged; 0 when absent): what a
	 * bit carried over the link costs, and what the link draws whether
	 * it carries anything or not. STATS_GET adds, per link, the energy
	 * of the bytes counted (STATS_BYTES x 8 x fJ/bit, exactly), the
	 * static energy (static power x STATS_ELAPSED_PS, in fJ: 1 mW for
	 * 1 ps is 1 fJ) and STATS_ELAPSED_PS, the fabric time the counters
	 * cover (the engines' clocks since the last reset or commit), and
	 * LINK_CLASS, so that a reader can sum per class. Each uses the
	 * committed link's figures; a product beyond 64 bits is reported
	 * as U64_MAX.
	 */
	ICFAB_A_LINK_ENERGY_FJ_PER_BIT,	/* u32: fJ per bit carried */
	ICFAB_A_LINK_STATIC_MW,		/* u32: mW drawn while powered */
	ICFAB_A_STATS_ENERGY_FJ,	/* u64: fJ, bytes x 8 x fJ/bit */
	ICFAB_A_STATS_STATIC_FJ,	/* u64: fJ, mW x elapsed ps */
	ICFAB_A_STATS_ELAPSED_PS,	/* u64: ps of fabric time counted */

	/*
	 * Calibration (ICFAB_F_LINK_CALIBRATION; docs/TIMING.md,
	 * "Calibration"). LINK_EFFICIENCY_PERMILLE and LINK_MSG_OVERHEAD_PS
	 * (LINK_NEW, LINK_GET; staged): the share of the link's bandwidth
	 * that carries payload (1..1000, 1000 when absent: all of it), and
	 * how long the first segment of every transfer holds the link
	 * before its bytes (0..ICFAB_MSG_OVERHEAD_MAX_PS, 0 when absent).
	 * The defaults are the ideal link, to the picosecond.
	 */
	ICFAB_A_LINK_EFFICIENCY_PERMILLE, /* u32: payload share, permille */
	ICFAB_A_LINK_MSG_OVERHEAD_PS,	/* u64: ps per transfer */

	/*
	 * Memory tiers (ICFAB_F_MEMORY_TIERS; docs/TIMING.md, "Memory
	 * tiers"). LINK_TIER and LINK_TIER_BYTES (LINK_NEW, LINK_GET,
	 * STATS_GET; staged), together: the link is the port of a memory
	 * tier of that kind and capacity at SRC_NODE, an endpoint, and
	 * DST_NODE must be the same node; SRC_PORT and DST_PORT are then
	 * optional and unused (0). It is timed, counted and traced like a
	 * link; no route uses it. NODE_TIER_LINKS (NODE_NEW, NODE_GET;
	 * endpoints only): one __u32 per tier kind, SRAM, HBM, DDR in that
	 * order, the link id of the tier port serving the endpoint or
	 * ICFAB_TIER_NO_LINK. An endpoint names its own tier ports there
	 * (at most one per kind) and may name another endpoint's to share
	 * it. FABRIC_COMMIT refuses a reference to anything but a present
	 * tier port of that kind, and a tier port its home does not name.
	 */
	ICFAB_A_LINK_TIER,		/* u8: enum icfab_tier (icfab.h), not NONE */
	ICFAB_A_LINK_TIER_BYTES,	/* u64: capacity, bytes, > 0 */
	ICFAB_A_NODE_TIER_LINKS,	/* binary: __u32[ICFAB_TIER_KINDS] */

	/*
	 * CIRCUIT_NEW (ICFAB_F_CIRCUIT_OWNER): uids besides OWNER_UID whose
	 * contexts may bind receive regions to the circuit (CIRCUIT_RECV),
	 * the owner's explicit grant; reported by CIRCUIT_GET to admins and
	 * to the owner.
	 */
	ICFAB_A_CIRCUIT_RECV_UIDS,	/* binary: __u32 uids, at most
					 * ICFAB_CIRCUIT_MAX_RECV_UIDS */

	/* Contexts (ICFAB_F_CTX_ADMIN), CTX_GET and CTX_EVICT: */
	ICFAB_A_CTX_ID,			/* u32: > 0, unique per fabric */
	ICFAB_A_CTX_PID,		/* u32: tgid of its first attacher */
	ICFAB_A_CTX_UID,		/* u32: its opener's effective uid */
	ICFAB_A_CTX_ENDPOINTS,		/* u32: endpoints attached */
	ICFAB_A_CTX_FIRST_ENDPOINT,	/* u32: the first one's node id */
	ICFAB_A_CTX_CLOCK_PS,		/* u64: its virtual clock, ps */
	ICFAB_A_CTX_STATE,		/* u32: ICFAB_CTX_* */
	ICFAB_A_CTX_HELD_NS,		/* u64: wall ns holding the engine */

	/* Next-hop sets (ICFAB_F_ROUTE_SETS), ROUTE_SETS_SET: */
	ICFAB_A_ROUTE_SET_FIRST,	/* u32: id of ROUTE_SETS[0] */
	ICFAB_A_ROUTE_SETS,		/* binary: struct icfab_route_set[] */

	__ICFAB_A_MAX,
};
#define ICFAB_A_MAX		(__ICFAB_A_MAX - 1)

#define ICFAB_NAME_MAX		32	/* bytes, with the NUL */

/* ICFAB_A_CTX_STATE bits */
#define ICFAB_CTX_WAITING	(1U << 0)	/* in a WAIT: holds nothing */
#define ICFAB_CTX_FREE_RUN	(1U << 1)	/* never holds the engine */
#define ICFAB_CTX_DEAD		(1U << 2)	/* ended: submits no more */
#define ICFAB_CTX_RECEIVER	(1U << 3)	/* has receive queues */
#define ICFAB_CTX_HOLDS		(1U << 4)	/* the one holding the engine */

/*
 * When FABRIC_COMMIT rejects a staged configuration, the extack message
 * says what is wrong and the extack cookie (NLMSGERR_ATTR_COOKIE) says
 * where: this struct, in host byte order.
 */
enum icfab_err_obj {
	ICFAB_ERR_OBJ_NONE,
	ICFAB_ERR_OBJ_NODE,		/* id: the node */
	ICFAB_ERR_OBJ_LINK,		/* id: the link */
	ICFAB_ERR_OBJ_ROUTE,		/* id: the node, id2: the destination */
	ICFAB_ERR_OBJ_ROUTER_COLOR,	/* id: the router, id2: the color */
	ICFAB_ERR_OBJ_CIRCUIT,		/* id: the circuit, id2: the node */
	ICFAB_ERR_OBJ_ROUTE_SET,	/* id: the node, id2: the set */
	ICFAB_ERR_OBJ_ROUTE_PORT,	/* id: the node, id2: the destination,
					 * id3: the port of the set's member */
};

struct icfab_err_cookie {
	__u32 obj;			/* enum icfab_err_obj */
	__u32 id;
	__u32 id2;
	__u32 id3;			/* 0 but for ICFAB_ERR_OBJ_ROUTE_PORT */
};
#define ICFAB_ROUTE_NONE	0xffff	/* no route to this destination */

/*
 * Next-hop sets (ICFAB_F_ROUTE_SETS): a route entry from
 * ICFAB_ROUTE_SET_BASE (above every port) names a set of its node; a
 * node holds at most ICFAB_ROUTE_SETS_MAX.
 */
#define ICFAB_ROUTE_SET_BASE		0xf000
#define ICFAB_ROUTE_SETS_MAX		(ICFAB_ROUTE_NONE - ICFAB_ROUTE_SET_BASE)
#define ICFAB_ROUTE_SET_MAX_PORTS	8

struct icfab_route_set {
	__u8 mode;			/* enum icfab_multipath: FLOW or SPRAY */
	__u8 nr_ports;			/* 1..ICFAB_ROUTE_SET_MAX_PORTS */
	__u16 ports[ICFAB_ROUTE_SET_MAX_PORTS];	/* the first: the primary */
};

/* Sizes of one circuit, so that it fits one netlink message of a dump. */
#define ICFAB_CIRCUIT_MAX_DSTS		256
#define ICFAB_CIRCUIT_MAX_ROUTERS	512
#define ICFAB_CIRCUIT_MAX_RECV_UIDS	8

enum icfab_node_kind {
	ICFAB_NODE_ENDPOINT,		/* accelerator or tile: a destination */
	ICFAB_NODE_SWITCH,		/* router: forwards, has a color table */
	__ICFAB_NODE_KIND_MAX,
};
#define ICFAB_NODE_KIND_MAX	(__ICFAB_NODE_KIND_MAX - 1)

enum icfab_link_class {
	ICFAB_LINK_CLASS_OTHER,
	ICFAB_LINK_CLASS_NVLINK,
	ICFAB_LINK_CLASS_PCIE,
	ICFAB_LINK_CLASS_NIC,
	ICFAB_LINK_CLASS_ICI,
	ICFAB_LINK_CLASS_OCS,
	ICFAB_LINK_CLASS_MESH,
	ICFAB_LINK_CLASS_IPU,
	ICFAB_LINK_CLASS_UALINK,
	__ICFAB_LINK_CLASS_MAX,
};
#define ICFAB_LINK_CLASS_MAX	(__ICFAB_LINK_CLASS_MAX - 1)

enum icfab_link_state {
	ICFAB_LINK_UP,
	ICFAB_LINK_DOWN,
	ICFAB_LINK_DEGRADED,		/* runs at BW_PERMILLE of its bandwidth */
	__ICFAB_LINK_STATE_MAX,
};
#define ICFAB_LINK_STATE_MAX	(__ICFAB_LINK_STATE_MAX - 1)

enum icfab_switching {
	ICFAB_SWITCHING_STORE_FORWARD,	/* a segment is received whole first */
	ICFAB_SWITCHING_CUT_THROUGH,	/* its head goes on, if the link is free */
	__ICFAB_SWITCHING_MAX,
};
#define ICFAB_SWITCHING_MAX	(__ICFAB_SWITCHING_MAX - 1)

enum icfab_multipath {
	ICFAB_MULTIPATH_NONE,		/* the route's link only */
	ICFAB_MULTIPATH_FLOW,		/* one parallel link per transfer, by key */
	ICFAB_MULTIPATH_SPRAY,		/* segments over the parallel links in turn */
	__ICFAB_MULTIPATH_MAX,
};
#define ICFAB_MULTIPATH_MAX	(__ICFAB_MULTIPATH_MAX - 1)

#endif /* _UAPI_LINUX_ICFAB_GENL_H */
