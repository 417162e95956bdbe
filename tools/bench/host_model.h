/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The freestanding engine (kmod/model) on the host, for the benchmarks
 * that run it in-process: the model's view of a topology that lib/topo
 * loaded and routed.
 */
#ifndef ICFAB_BENCH_HOST_MODEL_H
#define ICFAB_BENCH_HOST_MODEL_H

#include <icfab/topo.h>		/* lib/topo: the topology library */
#include "../../kmod/model/engine.h"

/*
 * The model topology of @t, its routes shared with @t; every link
 * cut-through when @cut_through is set, otherwise every link stored and
 * forwarded: the file's `switching` is not read (README.md's host
 * figures were taken so, and the module follows it). Its memory
 * tiers' ports are the links after @t's, link id t->tiers[i].link_id, and
 * carry their energy per bit as the links do. NULL (and
 * a message on stderr) when memory runs out or the model refuses it.
 */
struct icfab_mtopo *host_mtopo(const struct topo *t, icfab_u8 cut_through);

/*
 * Engine storage for @m, holding @xfers transfers and @events events
 * from the start (it does not grow); -ENOMEM with nothing left allocated.
 */
int host_storage(struct icfab_engine_storage *st, const struct icfab_mtopo *m,
		 icfab_u32 xfers, icfab_u32 events);
void host_storage_free(struct icfab_engine_storage *st);

#endif
