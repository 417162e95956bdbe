/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Arrays that grow by doubling (lib/array.c), for the tables read from
 * the module and the ones the topology library builds.
 */
#ifndef ICFAB_ARRAY_H
#define ICFAB_ARRAY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Make room in *@array, of *@cap elements of @size bytes, for element
 * @index: doubling from @first elements (or from *@cap), the new ones
 * zero. Returns 0, or -ENOMEM with *@array and *@cap unchanged.
 */
int icfab_array_grow(void **array, uint32_t *cap, uint32_t index,
		     size_t size, uint32_t first);

#endif /* ICFAB_ARRAY_H */
