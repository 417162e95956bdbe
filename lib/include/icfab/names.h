/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The names of the uapi's enums and feature bits, as topology files and
 * icfabctl write them. One table each, beside the uapi and shared by
 * icfabd and the tools so that they can never disagree; each side decides
 * what to print for a value it does not know (a newer kernel's).
 */
#ifndef ICFAB_NAMES_H
#define ICFAB_NAMES_H

#include <stdint.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

/*
 * ICFAB_F_* and its name, one line a bit. A bit added to ICFAB_F_ALL
 * without a line here fails the build (names.c checks the union).
 */
#define ICFAB_FEATURES(X)				\
	X(ICFAB_F_NETLINK,	"netlink")		\
	X(ICFAB_F_QUEUES,	"queues")		\
	X(ICFAB_F_MEMORY,	"memory")		\
	X(ICFAB_F_URING_CMD,	"uring-cmd")		\
	X(ICFAB_F_FREE_RUN,	"free-run")		\
	X(ICFAB_F_PACED,	"paced")		\
	X(ICFAB_F_LIVE_COMMIT,	"live-commit")		\
	X(ICFAB_F_CIRCUITS,	"circuits")		\
	X(ICFAB_F_RECV_NOTIFY,	"recv-notify")		\
	X(ICFAB_F_LINK_SWITCHING, "link-switching")	\
	X(ICFAB_F_LINK_MULTIPATH, "link-multipath")	\
	X(ICFAB_F_LINK_ENERGY,	"link-energy")		\
	X(ICFAB_F_LINK_CALIBRATION, "link-calibration")	\
	X(ICFAB_F_MEMORY_TIERS,	"memory-tiers")		\
	X(ICFAB_F_CIRCUIT_OWNER, "circuit-owner")		\
	X(ICFAB_F_CTX_ADMIN, "ctx-admin")			\
	X(ICFAB_F_ROUTE_SETS, "route-sets")			\
	X(ICFAB_F_CQ_RING, "cq-ring")				\
	X(ICFAB_F_TIMING_OFFSETS, "timing-offsets")	\
	X(ICFAB_F_WAIT_END, "wait-end")			\
	X(ICFAB_F_TRIGGER, "trigger")

/* The name of one feature bit, or NULL for a bit this build does not know. */
const char *icfab_feature_name(uint64_t bit);
/* ICFAB_A_*'s enum name ("ICFAB_A_LINK_ID"), or NULL for one it does not know. */
const char *icfab_attr_name(int type);

static const char *const icfab_time_mode_names[] = {
	[ICFAB_TIME_VIRTUAL]		= "virtual",
	[ICFAB_TIME_PACED]		= "paced",
};

static const char *const icfab_kind_names[] = {
	[ICFAB_NODE_ENDPOINT]		= "endpoint",
	[ICFAB_NODE_SWITCH]		= "switch",
};

static const char *const icfab_class_names[] = {
	[ICFAB_LINK_CLASS_OTHER]	= "other",
	[ICFAB_LINK_CLASS_NVLINK]	= "nvlink",
	[ICFAB_LINK_CLASS_PCIE]		= "pcie",
	[ICFAB_LINK_CLASS_NIC]		= "nic",
	[ICFAB_LINK_CLASS_ICI]		= "ici",
	[ICFAB_LINK_CLASS_OCS]		= "ocs",
	[ICFAB_LINK_CLASS_MESH]		= "mesh",
	[ICFAB_LINK_CLASS_IPU]		= "ipu",
	[ICFAB_LINK_CLASS_UALINK]	= "ualink",
};

static const char *const icfab_state_names[] = {
	[ICFAB_LINK_UP]			= "up",
	[ICFAB_LINK_DOWN]		= "down",
	[ICFAB_LINK_DEGRADED]		= "degraded",
};

static const char *const icfab_switching_names[] = {
	[ICFAB_SWITCHING_STORE_FORWARD]	= "store-and-forward",
	[ICFAB_SWITCHING_CUT_THROUGH]	= "cut-through",
};

static const char *const icfab_multipath_names[] = {
	[ICFAB_MULTIPATH_NONE]		= "none",
	[ICFAB_MULTIPATH_FLOW]		= "flow",
	[ICFAB_MULTIPATH_SPRAY]		= "spray",
};

/* Every tier of enum icfab_tier has one (test_names checks). */
static const char *const icfab_tier_names[] = {
	[ICFAB_TIER_NONE]		= "plain",
	[ICFAB_TIER_SRAM]		= "sram",
	[ICFAB_TIER_HBM]		= "hbm",
	[ICFAB_TIER_DDR]		= "ddr",
};

#define ICFAB_NAMES_LEN(a)	(sizeof(a) / sizeof((a)[0]))

#endif
