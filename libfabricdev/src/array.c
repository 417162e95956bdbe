// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/* Arrays that grow by doubling: see array.h. */
#include <errno.h>
#include <stdlib.h>

#include "array.h"

int fdev_array_grow(void **arr, size_t *cap, size_t n, size_t size,
		    size_t first)
{
	size_t nc;
	void *na;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : first;
	na = realloc(*arr, nc * size);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = nc;
	return 0;
}
