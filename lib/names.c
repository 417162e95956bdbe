// SPDX-License-Identifier: GPL-2.0
/*
 * Names that are more than a table lookup: the feature bits, whose table
 * is checked against the uapi's ICFAB_F_ALL so that a new bit cannot be
 * left without a name (icfabctl printed "bit5 bit6 bit7" for three that
 * were).
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
