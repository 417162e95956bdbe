// SPDX-License-Identifier: GPL-2.0
/* Arrays that grow by doubling: see <icfab/array.h>. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <icfab/array.h>

int icfab_array_grow(void **array, uint32_t *cap, uint32_t index,
		     size_t size, uint32_t first)
{
	uint64_t n = *cap ? *cap : first;
	void *p;

	if (index < *cap)
		return 0;
	if (index == UINT32_MAX)
		return -ENOMEM;
	while (n <= index)
		n *= 2;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	p = realloc(*array, (size_t)n * size);
	if (!p)
		return -ENOMEM;
	memset((char *)p + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
	*array = p;
	*cap = (uint32_t)n;
	return 0;
}
