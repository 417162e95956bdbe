/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The parallel engine on the host: the freestanding engine's partitions
 * (kmod/model/engine.h, "partitions"), one per thread, in windows of the
 * lookahead (conservative parallel discrete-event simulation). Its
 * results are the sequential engine's to the bit: the same transfer
 * ids, completions in the same order with the same figures, the same
 * link statistics.
 *
 * Differences from struct icfab_engine: completions are reported at the
 * end of the window they fall in, so a completion callback may not
 * submit, and asking to stop (returning nonzero) only makes
 * pengine_run_until() return 1 once the window is done; between calls,
 * submissions must sort after everything processed, as always
 * (pengine_now()).
 */
#ifndef ICFAB_BENCH_PENGINE_H
#define ICFAB_BENCH_PENGINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../../kmod/model/engine.h"

struct pengine;

/*
 * A parallel engine of @nr partitions (and threads) over @m, each with
 * @xfers transfers and @events events. Returns NULL with *@err set:
 * -EDOM when some link between partitions has no latency (there is no
 * lookahead: use the sequential engine), -ENOMEM, -EINVAL.
 */
struct pengine *pengine_new(const struct icfab_mtopo *m, icfab_u32 segment_size,
			    unsigned int nr, icfab_u32 xfers, icfab_u32 events,
			    int *err);
void pengine_free(struct pengine *pe);

/* The lookahead, ps, and the partition of each node. */
icfab_u64 pengine_lookahead(const struct pengine *pe);
const icfab_u16 *pengine_of_node(const struct pengine *pe);

/* Windows run, and messages exchanged between partitions, so far. */
void pengine_counts(const struct pengine *pe, uint64_t *windows,
		    uint64_t *messages);

/*
 * Thread CPU time, s, the partitions spent working (submitting, running
 * windows, exchanging; not waiting) in all, and *@critical: summed over
 * batches and windows, the most any one partition spent, which is what
 * the runs would take on as many idle CPUs (reporting aside), so that a
 * shared machine can still tell what the partitioning and the lookahead
 * allow.
 */
void pengine_times(const struct pengine *pe, double *critical, double *busy);

/*
 * What icfab_engine's now_ps, last_ps, last_key and processed would be:
 * a submission at @at with @key must have at > last, or at == last and
 * key > last_key, and at >= now.
 */
void pengine_now(const struct pengine *pe, icfab_u64 *now, icfab_u64 *last_ps,
		 icfab_u64 *last_key, int *processed);

/*
 * icfab_engine_submit() as the sequential engine would take it (the same
 * id, the same refusals): routed once, adopted by every partition.
 */
int pengine_submit(struct pengine *pe, icfab_u32 src, icfab_u32 dst,
		   icfab_u64 bytes, icfab_u64 submit_ps, icfab_u64 key,
		   icfab_u32 *xfer_id);

/* One submission of a batch. */
struct pengine_sub {
	icfab_u32 src, dst;
	icfab_u64 bytes;
	icfab_u64 submit_ps;		/* ps */
	icfab_u64 key;
};

/*
 * pengine_submit() for @n transfers in order: the threads walk the
 * routes in shares, thread 0 admits them and gives the ids, and each
 * thread's partition adopts every admitted one. Stops at the first
 * refusal. Sets *@taken to the number accepted and @ids[] to their
 * ids; returns 0, the refusal, or -ENOMEM.
 */
int pengine_submit_batch(struct pengine *pe, const struct pengine_sub *subs,
			 size_t n, icfab_u32 *ids, size_t *taken);

/* The xmit tracer for every partition, with the argument @args[p]. */
void pengine_set_xmit(struct pengine *pe,
		      void (*xmit)(void *, const struct icfab_engine_xmit *),
		      void *const *args);

/*
 * icfab_engine_run_until(): 0, 1 when a callback asked to stop, or a
 * negative errno (-ERANGE: a partition got an event from its past).
 */
int pengine_run_until(struct pengine *pe, icfab_u64 horizon_ps,
		      icfab_engine_complete_fn complete, void *arg);

/* Link @lid's state and statistics, from the partition that owns it. */
const struct icfab_engine_link *pengine_link(const struct pengine *pe,
					     icfab_u32 lid);

#endif
