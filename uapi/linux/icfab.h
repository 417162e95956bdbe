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

/* Every feature this header knows about. */
#define ICFAB_F_ALL		(ICFAB_F_NETLINK)

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

#define ICFAB_IOC_MAGIC		0xFB

#define ICFAB_IOC_INFO		_IOWR(ICFAB_IOC_MAGIC, 0x00, struct icfab_info)

#ifdef __cplusplus
#define __ICFAB_STATIC_ASSERT static_assert
#else
#define __ICFAB_STATIC_ASSERT _Static_assert
#endif

__ICFAB_STATIC_ASSERT(sizeof(struct icfab_limits) == 64,
		      "struct icfab_limits is ABI");
__ICFAB_STATIC_ASSERT(sizeof(struct icfab_info) == 144,
		      "struct icfab_info is ABI");

#undef __ICFAB_STATIC_ASSERT

#endif /* _UAPI_LINUX_ICFAB_H */
