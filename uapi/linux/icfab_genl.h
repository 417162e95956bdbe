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

	__ICFAB_A_MAX,
};
#define ICFAB_A_MAX		(__ICFAB_A_MAX - 1)

#endif /* _UAPI_LINUX_ICFAB_GENL_H */
