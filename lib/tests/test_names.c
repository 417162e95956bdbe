// SPDX-License-Identifier: GPL-2.0
/*
 * The name tables beside the uapi: every feature bit the module may
 * announce has a name of its own, and a bit beyond ICFAB_F_ALL has none
 * (icfabctl prints it as "bitN").
 */
#include <icfab/names.h>

#include "tap.h"

static void test_features(void)
{
	int bit, named = 0, unnamed_in_all = 0, named_outside = 0, dup = 0;
	const char *names[64] = { NULL };

	for (bit = 0; bit < 64; bit++) {
		uint64_t b = 1ULL << bit;
		const char *name = icfab_feature_name(b);

		names[bit] = name;
		named += !!name;
		unnamed_in_all += (ICFAB_F_ALL & b) && !name;
		named_outside += !(ICFAB_F_ALL & b) && name;
	}
	for (bit = 0; bit < 64; bit++)
		for (int other = 0; other < bit; other++)
			dup += names[bit] && names[other] &&
			       !strcmp(names[bit], names[other]);
	ok(!unnamed_in_all, "every bit of ICFAB_F_ALL has a name");
	ok(!named_outside, "no bit outside ICFAB_F_ALL has one");
	ok(named == __builtin_popcountll(ICFAB_F_ALL),
	   "%d names for %d bits", named, __builtin_popcountll(ICFAB_F_ALL));
	ok(!dup, "no two bits share a name");
	ok(!strcmp(icfab_feature_name(ICFAB_F_PACED), "paced") &&
	   !strcmp(icfab_feature_name(ICFAB_F_LIVE_COMMIT), "live-commit") &&
	   !strcmp(icfab_feature_name(ICFAB_F_CIRCUITS), "circuits"),
	   "paced, live-commit and circuits are named (they printed as bit5..7)");
	ok(!icfab_feature_name(0) &&
	   !icfab_feature_name(ICFAB_F_NETLINK | ICFAB_F_QUEUES),
	   "a name is for one bit, not for none or two");
}

static void test_enums(void)
{
	ok(!strcmp(icfab_time_mode_names[ICFAB_TIME_VIRTUAL], "virtual") &&
	   !strcmp(icfab_time_mode_names[ICFAB_TIME_PACED], "paced"),
	   "time modes: virtual, paced");
	ok(!strcmp(icfab_state_names[ICFAB_LINK_DEGRADED], "degraded") &&
	   !strcmp(icfab_kind_names[ICFAB_NODE_SWITCH], "switch") &&
	   !strcmp(icfab_class_names[ICFAB_LINK_CLASS_UALINK], "ualink"),
	   "link states, node kinds and link classes have their names");
	ok(ICFAB_NAMES_LEN(icfab_tier_names) == ICFAB_TIER_MAX + 1 &&
	   !strcmp(icfab_tier_names[ICFAB_TIER_HBM], "hbm"),
	   "every memory tier has its name");
}

static void test_attrs(void)
{
	int named = 0;

	for (int type = 1; type <= ICFAB_A_MAX; type++)
		named += icfab_attr_name(type) != NULL;
	ok(named == ICFAB_A_MAX, "%d of %d attributes named", named, ICFAB_A_MAX);
	ok(!strcmp(icfab_attr_name(ICFAB_A_LINK_SWITCHING), "ICFAB_A_LINK_SWITCHING") &&
	   !strcmp(icfab_attr_name(ICFAB_A_STATS_ELAPSED_PS), "ICFAB_A_STATS_ELAPSED_PS"),
	   "attributes icfabctl's own table missed are named");
	ok(!icfab_attr_name(0) && !icfab_attr_name(ICFAB_A_MAX + 1),
	   "no name for UNSPEC or past ICFAB_A_MAX");
}

int main(void)
{
	test_features();
	test_enums();
	test_attrs();
	return done();
}
