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
 *	timed by the fabric's engine in virtual time. This first version
 *	times transfers without moving bytes: WRITE and READ need
 *	ICFAB_DESC_F_TIMING_ONLY, and FENCE is not accepted.
 *	Preconditions: a committed topology with endpoints. While any
 *	context is attached, FABRIC_COMMIT is refused with -EBUSY.
 */
#define ICFAB_F_QUEUES		(1ULL << 1)

/* Every feature this header knows about. */
#define ICFAB_F_ALL		(ICFAB_F_NETLINK | ICFAB_F_QUEUES)

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
	__u64 reserved[3];		/* zero */
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
	__u64 reserved[4];		/* in: must be zero */
};

/*
 * ICFAB_IOC_ATTACH: attach this context to an endpoint. The context's
 * clock starts at the engine's current time on its first attach; from
 * then on, in virtual mode, its clock holds the engine back until it
 * waits (ICFAB_IOC_WAIT) or closes.
 */
struct icfab_attach {
	__u32 endpoint;			/* node id of an endpoint */
	__u32 flags;			/* must be zero */
	__u64 reserved[3];		/* must be zero */
};

/* ICFAB_IOC_QUEUE_CREATE: a DMA queue on an attached endpoint. */
struct icfab_queue_create {
	__u32 endpoint;			/* in: attached endpoint */
	__u32 depth;			/* in: descriptors in flight, 1..max */
	__u32 queue;			/* out: queue id, per context */
	__u32 flags;			/* in: must be zero */
	__u64 reserved[2];		/* in: must be zero */
};

/* ICFAB_IOC_QUEUE_DESTROY: only an idle queue (nothing in flight). */
struct icfab_queue_destroy {
	__u32 queue;
	__u32 flags;			/* must be zero */
	__u64 reserved;			/* must be zero */
};

enum icfab_desc_op {
	ICFAB_OP_WRITE	= 1,		/* put: queue's endpoint -> peer */
	ICFAB_OP_READ	= 2,		/* get: peer -> queue's endpoint */
	ICFAB_OP_DELAY	= 3,		/* compute: the context's clock += len ps */
	ICFAB_OP_FENCE	= 4,		/* not accepted yet (ICFAB_F_QUEUES) */
};

/* Time the transfer, move no bytes. Required for WRITE/READ for now. */
#define ICFAB_DESC_F_TIMING_ONLY	(1U << 0)
#define ICFAB_DESC_F_ALL		(ICFAB_DESC_F_TIMING_ONLY)

struct icfab_desc {
	__u8 op;			/* enum icfab_desc_op */
	__u8 pad;			/* must be zero */
	__u16 flags;			/* ICFAB_DESC_F_* */
	__u32 queue;
	__u32 peer;			/* endpoint: WRITE target, READ source */
	__u32 reserved0;		/* must be zero */
	__u64 len;			/* bytes (WRITE, READ); ps (DELAY) */
	__u64 user_tag;			/* returned in the completion */
	__u64 reserved[2];		/* must be zero */
};

struct icfab_cqe {
	__u64 user_tag;
	__s32 status;			/* 0, -EHOSTUNREACH, -ECANCELED */
	__u32 queue;
	__u64 submit_ps;		/* ps: the context's clock at submission */
	__u64 start_ps;			/* ps: a DMA engine took it */
	__u64 finish_ps;		/* ps: the last byte arrived */
	__u64 queued_ps;		/* ps: time behind other traffic */
	__u64 reserved[2];
};

/*
 * ICFAB_IOC_SUBMIT: validate and submit @nr descriptors in order. Stops
 * at the first that fails. Returns the number accepted, or -errno when
 * the first one failed: -EINVAL (malformed), -ENOENT (no such queue),
 * -EAGAIN (its queue is full: reap completions first), -EOPNOTSUPP.
 */
struct icfab_submit {
	__u64 descs;			/* user pointer to struct icfab_desc[] */
	__u32 nr;
	__u32 flags;			/* must be zero */
	__u64 reserved[2];		/* must be zero */
};

/*
 * ICFAB_IOC_WAIT: "I submit nothing more until I have @min completions".
 * While it blocks, the context does not hold the engine back. Copies up
 * to @max completions to @cqes, sets @nr, and moves the context's clock
 * to the latest finish among them. Returns 0, -EINTR on a signal,
 * -ETIMEDOUT after @timeout_ms of wall time (0: none), or -EDEADLK when
 * the context has fewer than @min descriptors in flight or completed.
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

#define ICFAB_IOC_MAGIC		0xFB

#define ICFAB_IOC_INFO		_IOWR(ICFAB_IOC_MAGIC, 0x00, struct icfab_info)
#define ICFAB_IOC_ATTACH	_IOW(ICFAB_IOC_MAGIC, 0x01, struct icfab_attach)
#define ICFAB_IOC_QUEUE_CREATE	_IOWR(ICFAB_IOC_MAGIC, 0x02, \
				      struct icfab_queue_create)
#define ICFAB_IOC_QUEUE_DESTROY	_IOW(ICFAB_IOC_MAGIC, 0x03, \
				     struct icfab_queue_destroy)
#define ICFAB_IOC_SUBMIT	_IOW(ICFAB_IOC_MAGIC, 0x04, struct icfab_submit)
#define ICFAB_IOC_WAIT		_IOWR(ICFAB_IOC_MAGIC, 0x05, struct icfab_wait)

#ifdef __cplusplus
#define __ICFAB_STATIC_ASSERT static_assert
#else
#define __ICFAB_STATIC_ASSERT _Static_assert
#endif

__ICFAB_STATIC_ASSERT(sizeof(struct icfab_limits) == 64,
		      "struct icfab_limits is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_info) == 144,
		      "struct icfab_info is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_attach) == 32,
		      "struct icfab_attach is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_queue_create) == 32,
		      "struct icfab_queue_create is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_queue_destroy) == 16,
		      "struct icfab_queue_destroy is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_desc) == 48,
		      "struct icfab_desc is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_cqe) == 64,
		      "struct icfab_cqe is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_submit) == 32,
		      "struct icfab_submit is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_wait) == 48,
		      "struct icfab_wait is ABI");

#undef __ICFAB_STATIC_ASSERT

#endif /* _UAPI_LINUX_ICFAB_H */
