// SPDX-License-Identifier: GPL-2.0
/*
 * Names that are more than a table lookup: the feature bits, whose table
 * is checked against the uapi's ICFAB_F_ALL so that a new bit cannot be
 * left without a name (icfabctl printed "bit5 bit6 bit7" for three that
 * were), and the netlink attributes, checked against ICFAB_A_MAX
 * (icfabctl's own table had missed sixteen).
 */
#include <stddef.h>

#include <icfab/names.h>

#define FEATURE_BIT(bit, name)		| (bit)
_Static_assert((0 ICFAB_FEATURES(FEATURE_BIT)) == ICFAB_F_ALL,
	       "every ICFAB_F_* bit in ICFAB_F_ALL needs a line in ICFAB_FEATURES");
_Static_assert(sizeof(icfab_time_mode_names) / sizeof(icfab_time_mode_names[0]) ==
	       ICFAB_TIME_MAX + 1,
	       "every ICFAB_TIME_* mode needs a name");
_Static_assert(sizeof(icfab_switching_names) / sizeof(icfab_switching_names[0]) ==
	       ICFAB_SWITCHING_MAX + 1,
	       "every ICFAB_SWITCHING_* mode needs a name");
_Static_assert(sizeof(icfab_multipath_names) / sizeof(icfab_multipath_names[0]) ==
	       ICFAB_MULTIPATH_MAX + 1,
	       "every ICFAB_MULTIPATH_* mode needs a name");

const char *icfab_feature_name(uint64_t bit)
{
#define FEATURE_CASE(b, name)		if (bit == (b)) return name;
	ICFAB_FEATURES(FEATURE_CASE)
#undef FEATURE_CASE
	return NULL;
}

/*
 * Every ICFAB_A_* attribute, in the uapi's order, for the names after an
 * extended ACK ("offending attribute: ..."). The count is checked against
 * ICFAB_A_MAX and a line given twice fails the build (-Woverride-init),
 * so a new attribute cannot be left without its name.
 */
#define ATTRS(X)				\
	X(ICFAB_A_PAD)				\
	X(ICFAB_A_FABRIC_ID)			\
	X(ICFAB_A_FABRIC_NAME)			\
	X(ICFAB_A_FABRIC_ABI_VERSION)		\
	X(ICFAB_A_FABRIC_FEATURES)		\
	X(ICFAB_A_FABRIC_GENERATION)		\
	X(ICFAB_A_FABRIC_TIME_MODE)		\
	X(ICFAB_A_FABRIC_SEGMENT_SIZE)		\
	X(ICFAB_A_FABRIC_DILATION)		\
	X(ICFAB_A_FABRIC_NOW_PS)		\
	X(ICFAB_A_FABRIC_NR_ENDPOINTS)		\
	X(ICFAB_A_FABRIC_NR_SWITCHES)		\
	X(ICFAB_A_FABRIC_NR_LINKS)		\
	X(ICFAB_A_FABRIC_NR_CONTEXTS)		\
	X(ICFAB_A_STAGED)			\
	X(ICFAB_A_FABRIC_HAS_STAGED)		\
	X(ICFAB_A_NODE_ID)			\
	X(ICFAB_A_NODE_KIND)			\
	X(ICFAB_A_NODE_NAME)			\
	X(ICFAB_A_NODE_PORTS)			\
	X(ICFAB_A_NODE_MEM_BYTES)		\
	X(ICFAB_A_NODE_DMA_ENGINES)		\
	X(ICFAB_A_NODE_COLORS)			\
	X(ICFAB_A_LINK_ID)			\
	X(ICFAB_A_LINK_SRC_NODE)		\
	X(ICFAB_A_LINK_SRC_PORT)		\
	X(ICFAB_A_LINK_DST_NODE)		\
	X(ICFAB_A_LINK_DST_PORT)		\
	X(ICFAB_A_LINK_BANDWIDTH)		\
	X(ICFAB_A_LINK_LATENCY_PS)		\
	X(ICFAB_A_LINK_CLASS)			\
	X(ICFAB_A_LINK_STATE)			\
	X(ICFAB_A_LINK_BW_PERMILLE)		\
	X(ICFAB_A_ROUTE_NODE)			\
	X(ICFAB_A_ROUTE_DST_FIRST)		\
	X(ICFAB_A_ROUTE_PORTS)			\
	X(ICFAB_A_FABRIC_MEM_BYTES)		\
	X(ICFAB_A_CIRCUIT_ID)			\
	X(ICFAB_A_CIRCUIT_COLOR)		\
	X(ICFAB_A_CIRCUIT_OWNER_PID)		\
	X(ICFAB_A_CIRCUIT_OWNER_UID)		\
	X(ICFAB_A_CIRCUIT_SRC)			\
	X(ICFAB_A_CIRCUIT_DSTS)			\
	X(ICFAB_A_CIRCUIT_ROUTERS)		\
	X(ICFAB_A_COLOR_USED)			\
	X(ICFAB_A_COLOR_MASK)			\
	X(ICFAB_A_STATS_BYTES)			\
	X(ICFAB_A_STATS_SEGMENTS)		\
	X(ICFAB_A_STATS_BUSY_PS)		\
	X(ICFAB_A_STATS_MAX_QUEUED_PS)		\
	X(ICFAB_A_STATS_INCOMPLETE)		\
	X(ICFAB_A_FABRIC_HELD_PID)		\
	X(ICFAB_A_FABRIC_HELD_PS)		\
	X(ICFAB_A_FABRIC_COMMIT_PS)		\
	X(ICFAB_A_LINK_UP_DELAY_PS)		\
	X(ICFAB_A_LINK_UP_AT_PS)		\
	X(ICFAB_A_LINK_HOLD_FAIL)		\
	X(ICFAB_A_LINK_SWITCHING)		\
	X(ICFAB_A_LINK_MULTIPATH)		\
	X(ICFAB_A_LINK_ENERGY_FJ_PER_BIT)	\
	X(ICFAB_A_LINK_STATIC_MW)		\
	X(ICFAB_A_STATS_ENERGY_FJ)		\
	X(ICFAB_A_STATS_STATIC_FJ)		\
	X(ICFAB_A_STATS_ELAPSED_PS)		\
	X(ICFAB_A_LINK_EFFICIENCY_PERMILLE)	\
	X(ICFAB_A_LINK_MSG_OVERHEAD_PS)	\
	X(ICFAB_A_LINK_TIER)			\
	X(ICFAB_A_LINK_TIER_BYTES)		\
	X(ICFAB_A_NODE_TIER_LINKS)		\
	X(ICFAB_A_CIRCUIT_RECV_UIDS)		\
	X(ICFAB_A_CTX_ID)			\
	X(ICFAB_A_CTX_PID)			\
	X(ICFAB_A_CTX_UID)			\
	X(ICFAB_A_CTX_ENDPOINTS)		\
	X(ICFAB_A_CTX_FIRST_ENDPOINT)		\
	X(ICFAB_A_CTX_CLOCK_PS)			\
	X(ICFAB_A_CTX_STATE)			\
	X(ICFAB_A_CTX_HELD_NS)			\
	X(ICFAB_A_ROUTE_SET_FIRST)		\
	X(ICFAB_A_ROUTE_SETS)

#define ATTR_NAME(type)		[type] = #type,
#define ATTR_ONE(type)		+ 1
static const char *const attr_names[ICFAB_A_MAX + 1] = { ATTRS(ATTR_NAME) };
_Static_assert((0 ATTRS(ATTR_ONE)) == ICFAB_A_MAX,
	       "every ICFAB_A_* attribute needs a line in ATTRS");

const char *icfab_attr_name(int type)
{
	if (type > 0 && type <= ICFAB_A_MAX)
		return attr_names[type];
	return NULL;
}
