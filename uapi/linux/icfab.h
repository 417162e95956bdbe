/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * icfab: an emulated inter-core-connected accelerator fabric.
 *
 * Character device ABI for /dev/icfabN.
 *
 * Rules every struct here follows:
 *  - only __u8..__u64, naturally aligned, explicit padding;
 *  - every pad/reserved field must be zero on input, otherwise -EINVAL,
 *    so that it can be given a meaning later without breaking old callers;
 *  - sizes are pinned by static asserts at the bottom of this file;
 *  - capabilities are probed with feature bits (ICFAB_F_*), never by
 *    comparing versions.
 */
#ifndef _UAPI_LINUX_ICFAB_H
#define _UAPI_LINUX_ICFAB_H

#include <linux/types.h>
#include <linux/ioctl.h>

/*
 * Bumped only for an incompatible change of this file, which we intend
 * never to make. Additions are announced through ICFAB_F_* bits instead.
 */
#define ICFAB_ABI_VERSION	1

#define ICFAB_DEV_NAME_PREFIX	"icfab"	/* /dev/icfab0, /dev/icfab1, ... */

/*
 * Feature bits, returned by ICFAB_IOC_INFO in icfab_info.features and by
 * the netlink attribute ICFAB_A_FABRIC_FEATURES.
 *
 * ICFAB_F_NETLINK
 *	The generic netlink family "icfab" (see icfab_genl.h) is registered
 *	and describes this fabric: FABRIC_GET returns its parameters, clock
 *	and object counts, FABRIC_SET changes its parameters (CAP_NET_ADMIN).
 *	Preconditions: none. Conflicts: none.
 */
#define ICFAB_F_NETLINK		(1ULL << 0)

/*
 * ICFAB_F_QUEUES
 *	A context (an open file) attaches to endpoints of the committed
 *	topology (ICFAB_IOC_ATTACH), creates DMA queues on them
 *	(ICFAB_IOC_QUEUE_CREATE), submits descriptors synchronously
 *	(ICFAB_IOC_SUBMIT) and reads their completions (ICFAB_IOC_WAIT),
 *	timed by the fabric's engine. WRITE and READ with
 *	ICFAB_DESC_F_TIMING_ONLY time a transfer without moving bytes.
 *	Preconditions: a committed topology with endpoints. While any
 *	context is attached, FABRIC_COMMIT is refused with -EBUSY unless
 *	ICFAB_F_LIVE_COMMIT allows it.
 */
#define ICFAB_F_QUEUES		(1ULL << 1)

/*
 * ICFAB_F_MEMORY
 *	Device memory: ICFAB_IOC_REGION_ALLOC/FREE/EXPORT/IMPORT, mmap() of
 *	a region at its mmap_offset, WRITE and READ that move bytes between
 *	a local region and a remote one named by its key (copied when the
 *	last segment arrives), and FENCE.
 *	Preconditions: ICFAB_F_QUEUES.
 */
#define ICFAB_F_MEMORY		(1ULL << 2)

/*
 * ICFAB_F_URING_CMD
 *	IORING_OP_URING_CMD on the device file: ICFAB_UCMD_SUBMIT carries
 *	one descriptor in a big SQE and completes when the descriptor does;
 *	ICFAB_UCMD_WAIT is the io_uring form of ICFAB_IOC_WAIT. The ring must
 *	be set up with IORING_SETUP_SQE128 | IORING_SETUP_CQE32.
 *	Preconditions: ICFAB_F_QUEUES.
 */
#define ICFAB_F_URING_CMD	(1ULL << 3)

/*
 * ICFAB_F_FREE_RUN
 *	ICFAB_ATTACH_F_FREE_RUN: the context's descriptors start at the
 *	engine's current time and its clock never holds the engine back.
 *	Not deterministic; for simple tools.
 */
#define ICFAB_F_FREE_RUN	(1ULL << 4)

/*
 * ICFAB_F_PACED
 *	ICFAB_TIME_PACED works: fabric time follows wall time divided by the
 *	dilation factor (wall ns per fabric ns), counted from 0 when the
 *	first context attaches; descriptors start at the fabric's current
 *	time and hrtimers release completions no earlier than their
 *	deadlines (later by the host's timer and scheduling latency). The
 *	timing arithmetic is the virtual mode's, so finish_ps - start_ps is
 *	the same. Clocks of contexts never hold the engine back in this
 *	mode, and WAIT only blocks until the completions come. A DELAY is
 *	accepted and completes at once with start_ps = finish_ps: the
 *	context's compute takes real wall time, which the fabric clock
 *	already follows. Time mode, dilation and segment size cannot change
 *	while contexts are attached.
 *	Preconditions: ICFAB_F_QUEUES.
 */
#define ICFAB_F_PACED		(1ULL << 5)

/*
 * ICFAB_F_LIVE_COMMIT
 *	FABRIC_COMMIT while contexts are attached, for a staged
 *	configuration that keeps every node (id, kind, DMA engines): link
 *	faults, degradation, OCS circuits and new routes under traffic (see
 *	ICFAB_A_FABRIC_COMMIT_PS in icfab_genl.h). Other commits are still
 *	refused with -EBUSY while contexts are attached.
 */
#define ICFAB_F_LIVE_COMMIT	(1ULL << 6)

/*
 * ICFAB_F_CIRCUITS
 *	Descriptors may name a circuit (struct icfab_desc.circuit) and
 *	travel its path or multicast tree; ICFAB_IOC_CIRCUIT_RECV binds
 *	where a circuit's bytes land at a destination.
 *	Preconditions: ICFAB_F_QUEUES, ICFAB_F_MEMORY.
 */
#define ICFAB_F_CIRCUITS	(1ULL << 7)

/*
 * ICFAB_F_RECV_NOTIFY
 *	Receive-side completions: a context creates a receive queue on an
 *	attached endpoint (ICFAB_QUEUE_F_RECV), and a WRITE with
 *	ICFAB_DESC_F_NOTIFY into that endpoint also posts a completion
 *	there once its last byte has landed, counted by the receiver's
 *	ICFAB_IOC_WAIT and ICFAB_UCMD_WAIT, in virtual time and
 *	deterministically (see "Receive queues" below).
 *	Preconditions: ICFAB_F_QUEUES.
 */
#define ICFAB_F_RECV_NOTIFY	(1ULL << 8)

/*
 * ICFAB_F_LINK_SWITCHING
 *	Links take a switching mode, ICFAB_A_LINK_SWITCHING (store and
 *	forward, the default, or virtual cut-through; docs/TIMING.md), in
 *	LINK_NEW and LINK_SET, and LINK_GET reports it. Without this bit
 *	the attribute is unknown to the module and every link stores and
 *	forwards.
 *	Preconditions: ICFAB_F_NETLINK.
 */
#define ICFAB_F_LINK_SWITCHING	(1ULL << 9)

/*
 * ICFAB_F_LINK_MULTIPATH
 *	Links take a multipath mode, ICFAB_A_LINK_MULTIPATH (none, the
 *	default; flow, a parallel link per transfer; spray, segment by
 *	segment; docs/TIMING.md, "Multipath"), in LINK_NEW and LINK_SET,
 *	and LINK_GET reports it. Without this bit the attribute is unknown
 *	to the module and a route takes the one link its table names.
 *	Preconditions: ICFAB_F_NETLINK.
 */
#define ICFAB_F_LINK_MULTIPATH	(1ULL << 10)

/*
 * ICFAB_F_LINK_ENERGY
 *	Links carry an energy per bit, ICFAB_A_LINK_ENERGY_FJ_PER_BIT, and
 *	a static power, ICFAB_A_LINK_STATIC_MW, in LINK_NEW, reported by
 *	LINK_GET (both 0 by default: the link costs nothing). STATS_GET
 *	then reports per link STATS_ENERGY_FJ = bytes x 8 x fJ/bit and
 *	STATS_STATIC_FJ = static power x STATS_ELAPSED_PS, the fabric time
 *	the counters cover. The timing is not affected. Without this bit
 *	the attributes are unknown to the module.
 *	Preconditions: ICFAB_F_NETLINK.
 */
#define ICFAB_F_LINK_ENERGY	(1ULL << 11)

/*
 * ICFAB_F_LINK_CALIBRATION
 *	Links carry a protocol efficiency, ICFAB_A_LINK_EFFICIENCY_PERMILLE
 *	(the share of the bandwidth that carries payload), and a
 *	per-message overhead, ICFAB_A_LINK_MSG_OVERHEAD_PS (the time the
 *	first segment of every transfer holds the link ahead of its
 *	bytes), in LINK_NEW, reported by LINK_GET. Both default to the
 *	ideal link (1000, 0), whose times are unchanged. Without this bit
 *	the attributes are unknown to the module.
 *	Preconditions: ICFAB_F_NETLINK.
 */
#define ICFAB_F_LINK_CALIBRATION (1ULL << 12)

/* The largest per-message overhead a link may have: 1 s. */
#define ICFAB_MSG_OVERHEAD_MAX_PS 1000000000000ULL

/*
 * ICFAB_F_MEMORY_TIERS
 *	Endpoints may be served by memory tiers (enum icfab_tier: SRAM,
 *	HBM, DDR), each with a capacity and a port timed and contended
 *	like a link (docs/TIMING.md, "Memory tiers"). A tier port is a
 *	LINK_NEW with ICFAB_A_LINK_TIER and ICFAB_A_LINK_TIER_BYTES from
 *	its home endpoint to itself; NODE_NEW's ICFAB_A_NODE_TIER_LINKS
 *	says which tier ports serve an endpoint (its own, or shared). A
 *	region is allocated in a tier with icfab_region_alloc.tier, and
 *	WRITE and READ through a tiered region cross the tier's port.
 *	Without this bit the attributes are unknown to the module and
 *	@tier must be zero.
 *	Preconditions: ICFAB_F_NETLINK, ICFAB_F_MEMORY.
 */
#define ICFAB_F_MEMORY_TIERS	(1ULL << 13)

/*
 * ICFAB_F_CIRCUIT_OWNER
 *	Circuits belong to their OWNER_UID: ICFAB_IOC_CIRCUIT_RECV binds a
 *	receive region only for a context opened by that uid, by a uid the
 *	owner granted in CIRCUIT_NEW (ICFAB_A_CIRCUIT_RECV_UIDS), or by a
 *	process with CAP_NET_ADMIN (-EPERM otherwise). CIRCUIT_GET shows a
 *	circuit's owner (pid, uid, grants) only to CAP_NET_ADMIN and to
 *	that owner; others see the circuit without them. The events
 *	group's CIRCUIT_NEW and CIRCUIT_DEL announcements carry no owner.
 *	Preconditions: ICFAB_F_CIRCUITS.
 */
#define ICFAB_F_CIRCUIT_OWNER	(1ULL << 14)

/*
 * ICFAB_F_CTX_ADMIN
 *	Who holds virtual time, over netlink: CTX_GET lists the attached
 *	contexts (id, owner pid and uid, endpoints, clock, state, and how
 *	long the one holding the engine back has held it); CTX_EVICT
 *	(CAP_NET_ADMIN) ends one as its owner's exit would. See
 *	icfab_genl.h.
 */
#define ICFAB_F_CTX_ADMIN	(1ULL << 15)

/*
 * ICFAB_F_ROUTE_SETS
 *	Next-hop sets: a node may leave for a destination by one of up to
 *	ICFAB_ROUTE_SET_MAX_PORTS ports to different neighbours (a leaf by
 *	any of its spines), chosen per transfer by a hash of its key and
 *	the node, or segment by segment (docs/TIMING.md, "Equal-cost next
 *	hops through different neighbours"). ROUTE_SETS_SET loads a node's
 *	sets; a ROUTE_PORTS entry from ICFAB_ROUTE_SET_BASE names one.
 *	Without this bit a client sends each set's first port (its
 *	primary) as a plain route.
 *	Preconditions: ICFAB_F_NETLINK.
 */
#define ICFAB_F_ROUTE_SETS	(1ULL << 16)

/*
 * ICFAB_F_CQ_RING
 *	A per-context completion ring in shared memory, like a hardware
 *	CQ: ICFAB_IOC_CQ_SETUP creates it, mmap() at ICFAB_CQ_MMAP_OFFSET
 *	maps it, ICFAB_IOC_SUBMIT with ICFAB_SUBMIT_F_CQ and
 *	ICFAB_UCMD_SUBMIT_BATCH route their descriptors' completions to it,
 *	and ICFAB_IOC_CQ_WAIT sleeps until it has entries (see "Completion
 *	ring" below).
 *	Preconditions: ICFAB_F_QUEUES.
 */
#define ICFAB_F_CQ_RING		(1ULL << 17)

/*
 * ICFAB_F_TIMING_OFFSETS
 *	A timing-only WRITE or READ (not one on a circuit) may carry
 *	@local_off and @remote_off (struct icfab_desc): no bytes move and nothing checks them against
 *	a region, but where the transfer lands (a WRITE's @remote_off, a
 *	READ's @local_off) sets the spray turn of its segments over
 *	parallel links, as it does for a WRITE or READ with memory
 *	(docs/TIMING.md, "Parallel cables"). Without this bit both must be
 *	zero.
 *	Preconditions: ICFAB_F_QUEUES.
 */
#define ICFAB_F_TIMING_OFFSETS	(1ULL << 18)

/*
 * ICFAB_F_WAIT_END
 *	ICFAB_IOC_WAIT_END ends the context's ICFAB_IOC_WAIT or
 *	ICFAB_IOC_CQ_WAIT under way, from another thread, as its timeout
 *	would; with none under way, the next one ends at once (see
 *	ICFAB_IOC_WAIT_END below). For a thread that sits in a receiver's
 *	WAIT only so that its context does not hold the engine back, and
 *	must give the context back to its process without polling.
 *	Preconditions: ICFAB_F_QUEUES.
 */
#define ICFAB_F_WAIT_END	(1ULL << 19)

/*
 * ICFAB_F_TRIGGER
 *	ICFAB_OP_TRIGGER: later descriptors on a queue start only once the
 *	queue's endpoint has received a number of NOTIFY WRITEs, counted
 *	per @imm by its receive queue, and at the virtual time the last
 *	of them landed: a transfer that starts when others land, as a NIC's
 *	triggered operations do (see "Triggered descriptors" below).
 *	Preconditions: ICFAB_F_RECV_NOTIFY.
 */
#define ICFAB_F_TRIGGER		(1ULL << 20)

/* Every feature this header knows about. */
#define ICFAB_F_ALL		(ICFAB_F_NETLINK | ICFAB_F_QUEUES | \
				 ICFAB_F_MEMORY | ICFAB_F_URING_CMD | \
				 ICFAB_F_FREE_RUN | ICFAB_F_PACED | \
				 ICFAB_F_LIVE_COMMIT | ICFAB_F_CIRCUITS | \
				 ICFAB_F_RECV_NOTIFY | ICFAB_F_LINK_SWITCHING | \
				 ICFAB_F_LINK_MULTIPATH | \
				 ICFAB_F_LINK_ENERGY | \
				 ICFAB_F_LINK_CALIBRATION | \
				 ICFAB_F_MEMORY_TIERS | \
				 ICFAB_F_CIRCUIT_OWNER | ICFAB_F_CTX_ADMIN | \
				 ICFAB_F_ROUTE_SETS | ICFAB_F_CQ_RING | \
				 ICFAB_F_TIMING_OFFSETS | ICFAB_F_WAIT_END | \
				 ICFAB_F_TRIGGER)

/*
 * Time modes (icfab_info.time_mode, ICFAB_A_FABRIC_TIME_MODE).
 *
 * VIRTUAL: fabric time advances only as the engine processes events;
 *	deterministic, the default.
 * PACED: fabric time follows wall time divided by the dilation factor.
 */
enum icfab_time_mode {
	ICFAB_TIME_VIRTUAL	= 0,
	ICFAB_TIME_PACED	= 1,
	__ICFAB_TIME_MAX,
};
#define ICFAB_TIME_MAX		(__ICFAB_TIME_MAX - 1)

/*
 * Limits of one fabric. Userspace (icfabd --check) compares a topology
 * against these before it tries to load it.
 */
struct icfab_limits {
	__u32 max_endpoints;		/* endpoints per fabric */
	__u32 max_switches;		/* switches (routers) per fabric */
	__u32 max_links;		/* directed links per fabric */
	__u32 max_ports;		/* ports per node; node ids are below
					 * max_endpoints + max_switches */
	__u32 max_colors;		/* color-table entries per router */
	__u32 max_queues;		/* queues per context */
	__u32 max_queue_depth;		/* descriptors per queue */
	__u32 min_segment_size;		/* bytes */
	__u32 max_segment_size;		/* bytes */
	__u32 max_dilation;		/* paced mode: wall ns per fabric ns */
	__u32 max_attach;		/* endpoints one context may attach;
					 * 0 from modules before it, which
					 * allowed 64 */
	/*
	 * The largest WRITE or READ the engine can ever hold: a larger one
	 * gets -E2BIG at submission, never -EAGAIN. Segments of any
	 * segment size, and bytes at the fabric's current one
	 * (max_xfer_segments * icfab_info.segment_size). 0 from modules
	 * before them.
	 */
	__u32 max_xfer_segments;
	__u64 max_xfer_bytes;		/* bytes */
	/*
	 * Caps on what one user may hold, module parameters of the same
	 * names (0 from modules before them; 0 in a cap itself: none). A
	 * context's descriptors submitted and not yet reaped (past it:
	 * -EAGAIN, since reaping makes room); and per uid, over every
	 * fabric: open contexts (-EMFILE at open), device memory (-EDQUOT
	 * at REGION_ALLOC) and circuits it owns (-EDQUOT at CIRCUIT_NEW).
	 * Processes with CAP_SYS_RESOURCE are not held to the per-uid caps
	 * of contexts and memory; circuits owned by uid 0 are not counted.
	 * max_queues above is the cap on queues per context.
	 */
	__u32 max_ctx_descs;
	__u32 max_uid_contexts;
	__u32 max_uid_mem_mb;		/* MiB */
	__u32 max_uid_circuits;
	__u64 reserved[1];		/* zero */
};

/*
 * ICFAB_IOC_INFO: what this device is and what it can do.
 *
 * In:  flags and reserved must be zero (-EINVAL otherwise).
 * Out: everything else.
 */
struct icfab_info {
	__u32 abi_version;		/* out: ICFAB_ABI_VERSION */
	__u32 flags;			/* in: must be zero */
	__u64 features;			/* out: ICFAB_F_* this module supports */
	__u32 fabric_id;		/* out: N of /dev/icfabN */
	__u32 time_mode;		/* out: enum icfab_time_mode */
	__u32 segment_size;		/* out: bytes */
	__u32 dilation;			/* out: paced mode: wall ns per fabric ns */
	__u64 now_ps;			/* out: fabric clock, ps */
	__u64 generation;		/* out: configuration generation */
	struct icfab_limits limits;	/* out */
	__u64 reserved[2];		/* in: must be zero */
};

/*
 * ICFAB_IOC_ATTACH: attach this context to an endpoint. The context's
 * clock starts at the engine's current time on its first attach; from
 * then on, in virtual mode, its clock holds the engine back until it
 * waits (ICFAB_IOC_WAIT) or closes.
 *
 * ICFAB_ATTACH_F_FREE_RUN (first attach only; later attaches must pass
 * the same flags, -EINVAL otherwise): the context is free-running.
 * Errors: -ENOENT (not an endpoint of the committed topology),
 * -EALREADY (this context is attached to it already), -ECANCELED (the
 * context was killed).
 */
#define ICFAB_ATTACH_F_FREE_RUN	(1U << 0)
#define ICFAB_ATTACH_F_ALL	(ICFAB_ATTACH_F_FREE_RUN)

struct icfab_attach {
	__u32 endpoint;			/* node id of an endpoint */
	__u32 flags;			/* ICFAB_ATTACH_F_* */
	__u64 reserved[3];		/* must be zero */
};

/*
 * Device memory (ICFAB_F_MEMORY).
 *
 * ICFAB_IOC_REGION_ALLOC: @size bytes (rounded up to whole pages, zeroed)
 * of device memory on an attached endpoint, charged to the endpoint's
 * capacity and to the module's cap on real pages (-ENOSPC when either is
 * exhausted), and to its opener's uid (-EDQUOT past max_uid_mem_mb,
 * icfab_limits). Returns a handle, private to this context, and the offset
 * at which mmap() maps it (MAP_SHARED only). With @tier nonzero
 * (ICFAB_F_MEMORY_TIERS, enum icfab_tier) the region is in that memory
 * tier of the endpoint instead, charged to the tier's capacity (shared
 * by every endpoint the tier serves) rather than the endpoint's:
 * -ENOSPC when it does not fit, -ENXIO when no such tier serves the
 * endpoint. Transfers that read or write it cross the tier's port.
 *
 * ICFAB_IOC_REGION_FREE: the handle and its key are gone at once; the
 * pages stay alive while they are mapped or a transfer uses them.
 *
 * ICFAB_IOC_REGION_EXPORT: sets what holders of the region's key may do
 * (ICFAB_ACCESS_*, at least one) and returns the key: 64 random bits,
 * never 0, the same for the life of the region.
 *
 * ICFAB_IOC_REGION_IMPORT: in any context of the same fabric, checks a
 * key and says where the region is, how big and what it allows.
 * -ENOKEY when no live region has this key.
 *
 * Output fields must be zero on input, like reserved ones. -ENOENT: the
 * endpoint is not attached (ALLOC), or no such handle (FREE, EXPORT).
 * mmap(): -EINVAL without MAP_SHARED; -ENXIO when [offset, +length) is
 * not inside a live region of this context. The module's cap on real
 * pages is its parameter max_mem_mb.
 */
/*
 * Memory tiers (ICFAB_F_MEMORY_TIERS): icfab_region_alloc.tier, and the
 * netlink ICFAB_A_LINK_TIER and ICFAB_A_NODE_TIER_LINKS (icfab_genl.h).
 */
enum icfab_tier {
	ICFAB_TIER_NONE,		/* plain device memory; a fabric link */
	ICFAB_TIER_SRAM,		/* on-chip SRAM */
	ICFAB_TIER_HBM,			/* co-packaged HBM */
	ICFAB_TIER_DDR,			/* off-package DDR */
	__ICFAB_TIER_MAX,
};
#define ICFAB_TIER_MAX		(__ICFAB_TIER_MAX - 1)
#define ICFAB_TIER_KINDS	ICFAB_TIER_MAX	/* NONE aside */
#define ICFAB_TIER_NO_LINK	0xffffffffU	/* NODE_TIER_LINKS: none */

#define ICFAB_ACCESS_REMOTE_READ	(1U << 0)	/* READ from it */
#define ICFAB_ACCESS_REMOTE_WRITE	(1U << 1)	/* WRITE into it */
#define ICFAB_ACCESS_ALL		(ICFAB_ACCESS_REMOTE_READ | \
					 ICFAB_ACCESS_REMOTE_WRITE)

struct icfab_region_alloc {
	__u32 endpoint;			/* in: attached endpoint */
	__u32 flags;			/* in: must be zero */
	__u64 size;			/* in: bytes; out: rounded up */
	__u32 region;			/* out: handle, never 0 */
	__u32 tier;			/* in: enum icfab_tier, 0: plain memory */
	__u64 mmap_offset;		/* out: offset argument of mmap() */
	__u64 reserved[4];		/* must be zero */
};

struct icfab_region_free {
	__u32 region;
	__u32 flags;			/* must be zero */
	__u64 reserved;			/* must be zero */
};

struct icfab_region_export {
	__u32 region;			/* in */
	__u32 access;			/* in: ICFAB_ACCESS_*, nonzero */
	__u64 key;			/* out */
	__u64 reserved[2];		/* must be zero */
};

struct icfab_region_import {
	__u64 key;			/* in */
	__u32 flags;			/* in: must be zero */
	__u32 endpoint;			/* out: where the region lives */
	__u64 size;			/* out: bytes */
	__u32 access;			/* out: ICFAB_ACCESS_* */
	__u32 reserved0;		/* must be zero */
	__u64 reserved[2];		/* must be zero */
};

/*
 * ICFAB_IOC_QUEUE_CREATE: a DMA queue on an attached endpoint, or with
 * ICFAB_QUEUE_F_RECV (ICFAB_F_RECV_NOTIFY) the endpoint's receive queue.
 * -ENOSPC when the context has icfab_limits.max_queues queues.
 *
 * Receive queues. At most one per endpoint per fabric at a time: -EBUSY
 * while any context has one there. Its id comes from the context's queue
 * ids; it takes no descriptors (-EINVAL). @depth bounds the receive
 * completions it holds, in flight and completed until a WAIT returns
 * them. It goes with QUEUE_DESTROY (-EBUSY while it holds any) or with
 * the context; once its context can submit no more (its owner exited, see
 * ICFAB_UCMD_*), WRITEs that NOTIFY its endpoint get -ENOTCONN.
 *
 * A WRITE with ICFAB_DESC_F_NOTIFY (with memory or timing-only) whose
 * last byte has landed posts, besides its own completion, one to the
 * receive queue of its target endpoint (the remote region's endpoint, or
 * @peer when timing-only), returned by that context's ICFAB_IOC_WAIT:
 *	user_tag	((__u64)source endpoint << 32) | desc.imm
 *	queue		the receive queue's id
 *	status		the transfer's: 0, or -ECANCELED when its sender
 *			went away before it started, or cancelled it
 *	submit_ps, start_ps, finish_ps, queued_ps: the transfer's.
 * Its bytes are in the receiver's region when the completion is posted.
 * A NOTIFY WRITE whose sender goes away in flight still lands and posts.
 *
 * Virtual time, deterministic. A context that owns a receive queue (a
 * receiver) cannot know from its own descriptors when others' WRITEs
 * land, so its WAIT (ioctl or io_uring) at clock C goes in two steps:
 *  1. It keeps holding the engine back at C until the engine has
 *     processed every event before C. No context holds it earlier then,
 *     so nothing submitted later can finish before C: every completion
 *     of this context that finishes before C is there, own or received.
 *  2. If that makes fewer than @min, it stops holding the engine and
 *     sleeps; the engine runs on, in its fixed (finish time, key) order,
 *     and the @min-th completion wakes it at that completion's finish.
 * It then returns (ioctl: up to @max of) its completions in finish-time
 * order (ties in the order the engine finished them) and moves its clock
 * to the latest finish among those. What a receiver's WAIT returns and
 * its clock after it therefore depend only on the descriptors every
 * context submitted at which virtual times, never on wall-clock
 * interleaving or host load. While a receiver sleeps in step 2 it does
 * not hold the engine back; in step 1 it waits only for contexts whose
 * clocks are behind its own. A receiver may WAIT for more completions
 * than it has in flight (no -EDEADLK): it blocks until they arrive, a
 * signal, or @timeout_ms. Contexts without a receive queue WAIT as
 * before (step 2 only), and in paced time, or free-running, step 1 is
 * skipped.
 *
 * Submission errors of NOTIFY: -EINVAL on anything but a WRITE, with a
 * circuit, or a nonzero @imm without NOTIFY (but for ICFAB_OP_TRIGGER);
 * -ENOTCONN when the target endpoint has no receive queue; -EAGAIN when
 * that receive queue is full (a WAIT of the receiver helps). Whether a
 * receive queue is full depends on when its receiver WAITs: a
 * deterministic program sizes receive queues (or counts credits) so
 * that it never is.
 */
#define ICFAB_QUEUE_F_RECV	(1U << 0)
#define ICFAB_QUEUE_F_ALL	(ICFAB_QUEUE_F_RECV)

struct icfab_queue_create {
	__u32 endpoint;			/* in: attached endpoint */
	__u32 depth;			/* in: descriptors in flight, 1..max;
					 * receive queue: completions held */
	__u32 queue;			/* out: queue id, per context */
	__u32 flags;			/* in: ICFAB_QUEUE_F_* */
	__u64 reserved[2];		/* in: must be zero */
};

/*
 * ICFAB_IOC_QUEUE_DESTROY: only an idle queue (nothing in flight; for a
 * receive queue, no receive completion in flight or unreaped).
 */
struct icfab_queue_destroy {
	__u32 queue;
	__u32 flags;			/* must be zero */
	__u64 reserved;			/* must be zero */
};

enum icfab_desc_op {
	ICFAB_OP_WRITE	= 1,		/* put: queue's endpoint -> peer */
	ICFAB_OP_READ	= 2,		/* get: peer -> queue's endpoint */
	ICFAB_OP_DELAY	= 3,		/* compute: the context's clock += len ps;
					 * paced time: completes at once and
					 * moves nothing (ICFAB_F_PACED) */
	ICFAB_OP_FENCE	= 4,		/* later descriptors on this queue start
					 * after everything before it finished
					 * (ICFAB_F_MEMORY) */
	ICFAB_OP_TRIGGER = 5,		/* later descriptors on this queue start
					 * once its endpoint received @len
					 * NOTIFY WRITEs with @imm
					 * (ICFAB_F_TRIGGER) */
};

/* Time the transfer, move no bytes. */
#define ICFAB_DESC_F_TIMING_ONLY	(1U << 0)
/* WRITE: also complete at the target's receive queue (ICFAB_F_RECV_NOTIFY) */
#define ICFAB_DESC_F_NOTIFY		(1U << 1)
#define ICFAB_DESC_F_ALL		(ICFAB_DESC_F_TIMING_ONLY | \
					 ICFAB_DESC_F_NOTIFY)

/*
 * One descriptor.
 *
 * WRITE/READ with ICFAB_DESC_F_TIMING_ONLY: @peer is the other endpoint;
 * @region and @rkey must be zero, and so must @local_off and @remote_off
 * unless the module has ICFAB_F_TIMING_OFFSETS (then they are where the
 * bytes would be, for spraying only; a circuit's must still be zero).
 * WRITE/READ without it (ICFAB_F_MEMORY): @len bytes between
 * [@local_off, +@len) of the context's region @region, which must live on
 * the queue's endpoint, and [@remote_off, +@len) of the region whose key
 * is @rkey (ICFAB_ACCESS_REMOTE_WRITE for WRITE, _READ for READ);
 * @peer must be zero or that region's endpoint. Errors: -EBADF (no such
 * local region), -EACCES (unknown key or access not granted), -ERANGE
 * (past a region's end, or offset + len overflows).
 * DELAY: @len ps; everything else zero. FENCE: everything else zero.
 * A FENCE completes at the latest finish of the transfers before it on
 * its queue (start_ps = finish_ps); DELAY acts on the context's clock at
 * once and is not held back by a FENCE.
 */
struct icfab_desc {
	__u8 op;			/* enum icfab_desc_op */
	__u8 pad;			/* must be zero */
	__u16 flags;			/* ICFAB_DESC_F_* */
	__u32 queue;
	__u32 peer;			/* endpoint: WRITE target, READ source */
	__u32 region;			/* local region handle */
	__u64 len;			/* bytes (WRITE, READ); ps (DELAY) */
	__u64 user_tag;			/* returned in the completion */
	__u64 local_off;		/* bytes into @region */
	__u64 rkey;			/* key of the remote region */
	__u64 remote_off;		/* bytes into the remote region */
	__u32 circuit;			/* 0, or a circuit (ICFAB_F_CIRCUITS) */
	__u32 imm;			/* NOTIFY: to the receiver, in the low
					 * half of its user_tag; TRIGGER: the
					 * counter; otherwise 0 */
};

/*
 * Triggered descriptors (ICFAB_F_TRIGGER).
 *
 * A receive queue (ICFAB_QUEUE_F_RECV) counts the NOTIFY WRITEs that
 * land at its endpoint with status 0, one counter per @imm below
 * ICFAB_TRIGGER_COUNTERS, from 0 at its creation; they only grow, and
 * WRITEs with a larger @imm are not counted. The engine counts a WRITE
 * when its last byte lands, in its fixed (finish time, key) order.
 *
 * ICFAB_OP_TRIGGER on a queue whose endpoint has a receive queue of the
 * same context: @imm names the counter, @len (1 or more) is the count it
 * waits for; everything else must be zero. It completes (start_ps =
 * finish_ps) at the latest of its submission, the queue's earlier FENCEs
 * and TRIGGERs, and the finish of the WRITE that brought the counter to
 * @len; descriptors after it on the queue start no earlier (a transfer
 * submitted at an instant sorts after what is in flight then, that
 * WRITE's landing included: it starts at that finish), and wait in the
 * queue until it has completed, as behind a FENCE. It does not wait
 * for the queue's earlier transfers (a FENCE before it does). So a
 * context posts a forwarding transfer before its data came: it starts at
 * the instant the data has landed, which depends, like every time here,
 * only on what every context submitted at which virtual times. Several
 * TRIGGERs in a row wait for all their counts.
 *
 * A TRIGGER whose count never comes holds its queue: WAIT does not
 * return -EDEADLK for it, and it and what is behind it complete with
 * -ECANCELED when the context goes or can submit no more (as behind a
 * FENCE). The receive queue cannot be destroyed while a TRIGGER of its
 * context waits for its counters (-EBUSY).
 *
 * Errors at submission: -EINVAL (@len 0, @imm not below
 * ICFAB_TRIGGER_COUNTERS, flags or other fields set), -ENOTCONN (the
 * queue's endpoint has no receive queue of this context).
 */
#define ICFAB_TRIGGER_COUNTERS	64

/*
 * Circuit descriptors (ICFAB_F_CIRCUITS): a WRITE with @circuit nonzero
 * travels that circuit's path (unicast) or tree (multicast) instead of
 * the routing tables; routers copy multicast segments, so each link of
 * the tree carries the bytes once. The circuit must belong to the
 * calling process (or be pinned, with no owner) and start at the queue's
 * endpoint; @peer must be zero or, for a unicast circuit, its
 * destination; @rkey must be zero: the bytes land at every destination
 * where ICFAB_IOC_CIRCUIT_RECV bound a region, at the bound offset plus
 * @remote_off. Errors at submission: -ENXIO (no such circuit), -EPERM
 * (another process's), -EINVAL (READ, wrong source, nonzero @rkey),
 * -ENOTCONN (a destination has no receive binding; not for timing-only
 * descriptors), -ERANGE (past a bound region's end). The completion
 * comes when the last destination has the last byte.
 */

struct icfab_cqe {
	__u64 user_tag;
	__s32 status;			/* 0, or -ECANCELED when the context
					 * went away with it in flight, or
					 * -ENOBUFS when a transfer held
					 * behind a FENCE found the engine
					 * full when it was released */
	__u32 queue;
	__u64 submit_ps;		/* ps: the context's clock at submission */
	__u64 start_ps;			/* ps: a DMA engine took it */
	__u64 finish_ps;		/* ps: the last byte arrived */
	__u64 queued_ps;		/* ps: time behind other traffic */
	__u64 reserved[2];
};

/*
 * ICFAB_IOC_SUBMIT: validate and submit @nr descriptors in order. Stops
 * at the first that fails, or early when the caller gets a fatal signal
 * or the context is killed meanwhile. A long SUBMIT lets others have the
 * fabric between its descriptors, so another thread's submissions may
 * come between them. Returns the number accepted, or -errno when
 * the first one failed: -EINVAL (malformed), -ENOENT (no such queue),
 * -EAGAIN (its queue or the engine is full, or the context has
 * icfab_limits.max_ctx_descs descriptors not reaped: reap completions first),
 * -E2BIG (a WRITE or READ larger than any engine can hold: more than
 * icfab_limits.max_xfer_segments segments, or a circuit's tree copying
 * it more than that; waiting cannot help), -ECANCELED (the context was
 * killed), -EFAULT, -EOPNOTSUPP.
 */
/*
 * ICFAB_SUBMIT_F_CQ (ICFAB_F_CQ_RING): the completions of these
 * descriptors go to the context's completion ring instead of the list
 * ICFAB_IOC_WAIT reaps (-ENXIO when the context has set up no ring).
 */
#define ICFAB_SUBMIT_F_CQ		(1U << 0)
#define ICFAB_SUBMIT_F_ALL		(ICFAB_SUBMIT_F_CQ)

struct icfab_submit {
	__u64 descs;			/* user pointer to struct icfab_desc[] */
	__u32 nr;
	__u32 flags;			/* ICFAB_SUBMIT_F_* */
	__u64 reserved[2];		/* must be zero */
};

/*
 * ICFAB_IOC_CIRCUIT_RECV: bind where WRITEs over @circuit land at
 * @endpoint, one of its destinations that this context is attached to:
 * region @region of this context (which must live on @endpoint) from
 * @offset. Binding again replaces the binding; @region 0 removes it.
 * The binding holds a reference on the region and goes with the
 * context, the circuit or the region handle (REGION_FREE).
 * Errors: -ENXIO (no such circuit), -EINVAL (not one of its
 * destinations, not attached, flags or reserved set), -EBADF (no such
 * region, or not on @endpoint), -ERANGE (@offset past its end).
 */
struct icfab_circuit_recv {
	__u32 circuit;			/* circuit id */
	__u32 endpoint;			/* a destination of the circuit */
	__u32 region;			/* local region handle, 0: unbind */
	__u32 flags;			/* must be zero */
	__u64 offset;			/* bytes into @region */
	__u64 reserved[2];		/* must be zero */
};

/*
 * ICFAB_IOC_WAIT: "I submit nothing more until I have @min completions".
 * While it blocks, the context does not hold the engine back. Copies up
 * to @max completions to @cqes, sets @nr, and moves the context's clock
 * to the latest finish among them. Returns 0, -EINTR on a signal,
 * -ETIMEDOUT after @timeout_ms of wall time (0: none), or -EDEADLK when
 * the context has fewer than @min descriptors in flight or completed
 * (never for a receiver, see ICFAB_QUEUE_F_RECV). Completions come in
 * finish-time order; receive completions count like the context's own.
 * A context has one WAIT under way at a time, of either kind: another,
 * from another thread or through io_uring (ICFAB_UCMD_WAIT), gets
 * -EBUSY until the first has returned.
 */
struct icfab_wait {
	__u64 cqes;			/* user pointer to struct icfab_cqe[] */
	__u32 max;			/* entries at cqes */
	__u32 min;			/* completions to wait for, <= max */
	__u32 nr;			/* out: entries written */
	__u32 timeout_ms;		/* wall-clock bound, 0: none */
	__u64 clock_ps;			/* out: the context's clock after */
	__u64 reserved[2];		/* must be zero */
};

/*
 * ICFAB_IOC_WAIT_END (ICFAB_F_WAIT_END, no argument): the ICFAB_IOC_WAIT
 * or ICFAB_IOC_CQ_WAIT under way on this context, another thread's,
 * ends as if its @timeout_ms had passed, but returns -ECANCELED: the
 * context holds the engine again from the engine's time, and what came
 * stays to be reaped. With none under way, the context's next one
 * returns -ECANCELED at once and changes nothing; two calls before it
 * count as one. Always returns 0. The io_uring WAIT is not ended.
 */

/*
 * Completion ring (ICFAB_F_CQ_RING).
 *
 * ICFAB_IOC_CQ_SETUP, once per context (-EBUSY after): a ring of
 * @entries struct icfab_cqe (1..ICFAB_CQ_MAX_ENTRIES, rounded up to a
 * power of two and returned; -EINVAL otherwise). mmap() of @mmap_size
 * bytes (or fewer) at @mmap_offset, MAP_SHARED, maps it: a struct
 * icfab_cq_ring, then the entries from @cqes_off. -ENXIO from mmap()
 * when this context has no ring: a context maps only its own.
 *
 * The kernel writes an entry at index tail & mask, then publishes it
 * with a store-release of @tail; userspace reads @tail with a
 * load-acquire, reads the entries from @head up to it, then gives them
 * back with a store-release of @head. Nothing else in the ring is
 * written by userspace; the kernel keeps its own copy of everything but
 * @head, and a @head further than @entries behind its tail makes the
 * ring full, never anything worse.
 *
 * No completion is ever lost: one that finds the ring full goes to the
 * context's WAIT list instead (as without ICFAB_SUBMIT_F_CQ: reaped by
 * ICFAB_IOC_WAIT, counted by the queue's depth until then), and
 * @overflow counts such completions (modulo 2^32). A consumer that
 * sees @overflow change calls ICFAB_IOC_WAIT with @min 0 to reap them;
 * entries of the ring and of the WAIT list are each in finish-time
 * order, not with each other.
 *
 * A completion in the ring is reaped: it no longer counts towards its
 * queue's depth or icfab_limits.max_ctx_descs. Its timing is exactly
 * what it would be without the ring, whatever the ring's size and the
 * batch's: the clock rules of ICFAB_IOC_WAIT hold, since a context not
 * in a WAIT holds the engine back at its clock, so everything it finds
 * in the ring while it runs finished no later than that clock.
 *
 * ICFAB_IOC_CQ_WAIT: "I submit nothing more until @min completions are
 * ready", counting entries in the ring (tail - head) and on the WAIT
 * list. Sleeps like ICFAB_IOC_WAIT (it is one, and excludes another:
 * -EBUSY), returns nothing but @ready, the count then, and @clock_ps,
 * the context's clock, moved to the finish of the completion that ended
 * the wait. Errors as ICFAB_IOC_WAIT's; -ENXIO without a ring.
 */
#define ICFAB_CQ_MMAP_OFFSET	0ULL
#define ICFAB_CQ_MAX_ENTRIES	65536

struct icfab_cq_ring {
	__u32 head;			/* userspace: next entry to read */
	__u32 pad0[15];			/* a cache line each */
	__u32 tail;			/* kernel: next entry to write */
	__u32 pad1[15];
	__u32 entries;			/* a power of two */
	__u32 mask;			/* entries - 1 */
	__u32 overflow;			/* completions that found it full */
	__u32 pad2[13];
};

struct icfab_cq_setup {
	__u32 entries;			/* in: wanted; out: the ring's */
	__u32 flags;			/* in: must be zero */
	__u64 mmap_offset;		/* out: ICFAB_CQ_MMAP_OFFSET */
	__u64 mmap_size;		/* out: bytes */
	__u32 cqes_off;			/* out: bytes from the start */
	__u32 reserved0;		/* must be zero */
	__u64 reserved[2];		/* must be zero */
};

struct icfab_cq_wait {
	__u32 min;			/* in: ready completions to wait for */
	__u32 timeout_ms;		/* in: wall-clock bound, 0: none */
	__u32 ready;			/* out: in the ring and the WAIT list */
	__u32 flags;			/* in: must be zero */
	__u64 clock_ps;			/* out: the context's clock after */
	__u64 reserved[2];		/* must be zero */
};

#define ICFAB_IOC_MAGIC		0xFB

#define ICFAB_IOC_INFO		_IOWR(ICFAB_IOC_MAGIC, 0x00, struct icfab_info)
#define ICFAB_IOC_ATTACH	_IOW(ICFAB_IOC_MAGIC, 0x01, struct icfab_attach)
#define ICFAB_IOC_QUEUE_CREATE	_IOWR(ICFAB_IOC_MAGIC, 0x02, \
				      struct icfab_queue_create)
#define ICFAB_IOC_QUEUE_DESTROY	_IOW(ICFAB_IOC_MAGIC, 0x03, \
				     struct icfab_queue_destroy)
#define ICFAB_IOC_SUBMIT	_IOW(ICFAB_IOC_MAGIC, 0x04, struct icfab_submit)
#define ICFAB_IOC_WAIT		_IOWR(ICFAB_IOC_MAGIC, 0x05, struct icfab_wait)
#define ICFAB_IOC_REGION_ALLOC	_IOWR(ICFAB_IOC_MAGIC, 0x06, \
				      struct icfab_region_alloc)
#define ICFAB_IOC_REGION_FREE	_IOW(ICFAB_IOC_MAGIC, 0x07, \
				     struct icfab_region_free)
#define ICFAB_IOC_REGION_EXPORT	_IOWR(ICFAB_IOC_MAGIC, 0x08, \
				      struct icfab_region_export)
#define ICFAB_IOC_REGION_IMPORT	_IOWR(ICFAB_IOC_MAGIC, 0x09, \
				      struct icfab_region_import)
#define ICFAB_IOC_CIRCUIT_RECV	_IOW(ICFAB_IOC_MAGIC, 0x0a, \
				     struct icfab_circuit_recv)
#define ICFAB_IOC_CQ_SETUP	_IOWR(ICFAB_IOC_MAGIC, 0x0b, \
				      struct icfab_cq_setup)
#define ICFAB_IOC_CQ_WAIT	_IOWR(ICFAB_IOC_MAGIC, 0x0c, \
				      struct icfab_cq_wait)
#define ICFAB_IOC_WAIT_END	_IO(ICFAB_IOC_MAGIC, 0x0d)

/*
 * io_uring passthrough (ICFAB_F_URING_CMD): IORING_OP_URING_CMD with
 * sqe->cmd_op one of the ICFAB_UCMD_* below and the command in the big
 * SQE's command area (80 bytes). Every command gets exactly one CQE.
 *
 * ICFAB_UCMD_SUBMIT: struct icfab_uring_submit. Validated exactly as by
 * ICFAB_IOC_SUBMIT; an invalid descriptor completes at once with the
 * -errno in cqe->res. Otherwise it completes when the descriptor does:
 * cqe->res is the status, cqe->big_cqe[0] the finish time in ps, and if
 * @cqe_addr is not zero the whole struct icfab_cqe is written there
 * first. It does not count towards ICFAB_IOC_WAIT.
 *
 * ICFAB_UCMD_WAIT: struct icfab_uring_wait. "I submit nothing more until
 * @min more of my io_uring descriptors have completed": completes when
 * they have, with cqe->res the number counted (at least @min; every
 * io_uring completion is counted by exactly one WAIT) and
 * cqe->big_cqe[0] the context's clock, moved to the latest finish among
 * them. -EDEADLK when fewer than @min are in flight and uncounted.
 * For a receiver (ICFAB_QUEUE_F_RECV) every receive completion is
 * counted too, once, by the WAIT in progress when it arrives or the next
 * one (no -EDEADLK), unless ICFAB_IOC_WAIT returns it before that one
 * comes: then no io_uring WAIT counts it. Its struct icfab_cqe is still
 * returned by ICFAB_IOC_WAIT, which a receiver that waits through
 * io_uring calls to reap them (@min 0 does not block).
 *
 * When the context's owner exits, or its last file descriptor is closed
 * (io_uring commands in flight keep the file itself open), its commands
 * in flight complete with -ECANCELED and it no longer holds the engine
 * back; the transfers already started go on, owned by nobody.
 */
struct icfab_uring_submit {
	struct icfab_desc desc;
	__u64 cqe_addr;			/* user pointer to struct icfab_cqe, or 0 */
	__u64 reserved;			/* must be zero */
};

/*
 * ICFAB_UCMD_SUBMIT_BATCH (ICFAB_F_CQ_RING): struct icfab_uring_batch,
 * @nr descriptors at @descs submitted as by ICFAB_IOC_SUBMIT with
 * ICFAB_SUBMIT_F_CQ (@flags is ICFAB_SUBMIT_F_CQ, which it requires:
 * -EINVAL without). It completes at once, with one CQE for the whole
 * batch: cqe->res is ICFAB_IOC_SUBMIT's return, the number accepted or
 * -errno (-ENXIO without a ring). The descriptors' completions go to the
 * completion ring, not to io_uring, and ICFAB_UCMD_WAIT does not count
 * them: ICFAB_IOC_CQ_WAIT sleeps for them.
 */
struct icfab_uring_batch {
	__u64 descs;			/* user pointer to struct icfab_desc[] */
	__u32 nr;
	__u32 flags;			/* ICFAB_SUBMIT_F_CQ */
	__u64 reserved[8];		/* must be zero */
};

struct icfab_uring_wait {
	__u32 min;			/* completions to wait for, >= 1 */
	__u32 flags;			/* must be zero */
	__u64 reserved[9];		/* must be zero */
};

#define ICFAB_UCMD_SUBMIT	_IOW(ICFAB_IOC_MAGIC, 0x40, \
				     struct icfab_uring_submit)
#define ICFAB_UCMD_WAIT		_IOW(ICFAB_IOC_MAGIC, 0x41, \
				     struct icfab_uring_wait)
#define ICFAB_UCMD_SUBMIT_BATCH	_IOW(ICFAB_IOC_MAGIC, 0x42, \
				     struct icfab_uring_batch)

#ifdef __cplusplus
#define __ICFAB_STATIC_ASSERT static_assert
#else
#define __ICFAB_STATIC_ASSERT _Static_assert
#endif

__ICFAB_STATIC_ASSERT(sizeof(struct icfab_limits) == 80,
		      "struct icfab_limits is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_info) == 144,
		      "struct icfab_info is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_attach) == 32,
		      "struct icfab_attach is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_queue_create) == 32,
		      "struct icfab_queue_create is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_queue_destroy) == 16,
		      "struct icfab_queue_destroy is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_region_alloc) == 64,
		      "struct icfab_region_alloc is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_region_free) == 16,
		      "struct icfab_region_free is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_region_export) == 32,
		      "struct icfab_region_export is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_region_import) == 48,
		      "struct icfab_region_import is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_uring_submit) == 80,
		      "struct icfab_uring_submit is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_uring_wait) == 80,
		      "struct icfab_uring_wait is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_uring_batch) == 80,
		      "struct icfab_uring_batch is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_desc) == 64,
		      "struct icfab_desc is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_cqe) == 64,
		      "struct icfab_cqe is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_submit) == 32,
		      "struct icfab_submit is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_wait) == 48,
		      "struct icfab_wait is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_cq_ring) == 192,
		      "struct icfab_cq_ring is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_cq_setup) == 48,
		      "struct icfab_cq_setup is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_cq_wait) == 40,
		      "struct icfab_cq_wait is ABI");

#undef __ICFAB_STATIC_ASSERT

#endif /* _UAPI_LINUX_ICFAB_H */
