/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The parallel engine on the host: kmod/model/pengine.c, the module's
 * own, on pthreads (see pengine.c here, the shim). Everything but
 * creating it and its CPU times is icfab_pengine_*() of
 * kmod/model/pengine.h.
 */
#ifndef ICFAB_BENCH_PENGINE_H
#define ICFAB_BENCH_PENGINE_H

#include "../../kmod/model/pengine.h"

/*
 * icfab_pengine_new() on pthreads, memory from calloc(): NULL with *@err
 * set (-EDOM: no lookahead, use the sequential engine).
 */
struct icfab_pengine *pengine_host_new(const struct icfab_mtopo *m,
				       icfab_u32 segment_size, unsigned int nr,
				       icfab_u32 xfers, icfab_u32 events,
				       int *err);

/* icfab_pengine_free(), and the shim's state. */
void pengine_host_free(struct icfab_pengine *pe);

/* icfab_pengine_times() in thread CPU seconds. */
void pengine_host_times(const struct icfab_pengine *pe, double *critical,
			double *busy);

#endif
