/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The names of the netlink enums, as topology files and icfabctl write
 * them. One table each, shared by icfabd and icfabctl so that the two
 * can never disagree; each side decides what to print for a value it
 * does not know (a newer kernel's).
 */
#ifndef ICFAB_NAMES_H
#define ICFAB_NAMES_H

#include <linux/icfab_genl.h>

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

#define ICFAB_NAMES_LEN(a)	(sizeof(a) / sizeof((a)[0]))

#endif
