// SPDX-License-Identifier: GPL-2.0
/* icfab_parse_bytes(), the byte counts of icfab-a2a and engine_rate. */
#include <errno.h>

#include <icfab/parse.h>

#include "tap.h"

int main(void)
{
	uint64_t v = 0;

	ok(!icfab_parse_bytes("4096", &v) && v == 4096, "plain decimal");
	ok(!icfab_parse_bytes("4K", &v) && v == 4096 &&
	   !icfab_parse_bytes("2M", &v) && v == 2ULL << 20 &&
	   !icfab_parse_bytes("3G", &v) && v == 3ULL << 30,
	   "K, M and G are binary");
	v = 7;
	ok(icfab_parse_bytes("0", &v) == -EINVAL && v == 7,
	   "zero is refused, the value untouched");
	ok(icfab_parse_bytes("", &v) == -EINVAL &&
	   icfab_parse_bytes("4k", &v) == -EINVAL &&
	   icfab_parse_bytes("4KB", &v) == -EINVAL &&
	   icfab_parse_bytes("x", &v) == -EINVAL &&
	   icfab_parse_bytes("99999999999999999999", &v) == -EINVAL,
	   "empty, lower-case, trailing text, no digits, overflow: -EINVAL");
	return done();
}
