// SPDX-License-Identifier: GPL-2.0
/* Command-line values the tools share. */
#include <errno.h>
#include <stdlib.h>

#include <icfab/parse.h>

int icfab_parse_bytes(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'K': v <<= 10; end++; break;
	case 'M': v <<= 20; end++; break;
	case 'G': v <<= 30; end++; break;
	}
	if (*end || !v)
		return -EINVAL;
	*out = v;
	return 0;
}
