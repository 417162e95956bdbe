/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * Arrays that grow by doubling (array.c): the plans' transfers and
 * actions, a step's descriptors, the completion stash and the notify
 * completions that came early. The library links nothing of lib/, so it
 * has its own.
 */
#ifndef FDEV_ARRAY_H
#define FDEV_ARRAY_H

#include <stddef.h>

/*
 * Room in *@arr, of *@cap elements of @size bytes, for element @n: when
 * it is full, twice as many (@first when there are none). Returns 0, or
 * -ENOMEM with *@arr and *@cap unchanged.
 */
int fdev_array_grow(void **arr, size_t *cap, size_t n, size_t size,
		    size_t first);

#endif /* FDEV_ARRAY_H */
