/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfab fabric model: the parallel engine. The freestanding engine's
 * partitions (engine.h, "partitions"), one per thread, in windows of the
 * lookahead (conservative parallel discrete-event simulation). Its
 * results are the sequential engine's to the bit: the same transfer
 * ids, completions in the same order with the same figures, the same
 * link statistics.
 *
 * Shared by the host (tools/bench, pthreads) and the kernel (kthreads):
 * like the rest of the model it includes nothing and calls nothing
 * outside it. Memory, threads and the two barriers come from the caller,
 * through struct icfab_pengine_sys (the "shim").
 *
 * Differences from struct icfab_engine: completions are reported at the
 * end of the window they fall in, so a completion callback may not
 * submit, and asking to stop (returning nonzero) only makes
 * icfab_pengine_run_until() return 1 once the window is done; between
 * calls, submissions must sort after everything processed, as always
 * (icfab_pengine_now()).
 */
#ifndef _ICFAB_MODEL_PENGINE_H
#define _ICFAB_MODEL_PENGINE_H

#include "engine.h"

/* Negative errnos of the parallel engine's own, beyond the engine's. */
#define ICFAB_PENGINE_ENOMEM	12
#define ICFAB_PENGINE_EDOM	33

/* At most this many partitions (threads). */
#define ICFAB_PENGINE_MAX	64

struct icfab_pengine;

/*
 * What the host or the kernel provides. Threads: start() runs
 * icfab_pengine_worker(pe, p) on a thread of its own for every p in
 * 1..nr-1 (the caller's thread is partition 0) and returns 0, or fails
 * having started none; stop() waits for those threads to return (they
 * do once told to quit) and frees what start() took. cmd_wait() is a
 * barrier of all nr threads around each command (a run, a batch of
 * submissions, quitting): the workers sleep in it between commands, for
 * as long as the engine is idle. win_wait() is a barrier of all nr
 * threads within a command, between the phases of a window: short
 * waits, tens of microseconds of work apart. @priv is the shim's own,
 * in struct icfab_pengine.
 */
struct icfab_pengine_sys {
	void *(*zalloc)(icfab_u64 bytes);	/* zeroed, NULL if none */
	void (*free)(void *p);			/* NULL is nothing */
	/* Arrays for one partition's engine; 0 or a negative errno. */
	int (*storage)(struct icfab_engine_storage *st,
		       const struct icfab_mtopo *m, icfab_u32 xfers,
		       icfab_u32 events);
	void (*storage_free)(struct icfab_engine_storage *st);
	int (*start)(struct icfab_pengine *pe, unsigned int nr);
	void (*stop)(struct icfab_pengine *pe);
	void (*cmd_wait)(struct icfab_pengine *pe, unsigned int p);
	void (*win_wait)(struct icfab_pengine *pe, unsigned int p);
	/* The calling thread's CPU time, ns, or any clock, or NULL: 0. */
	icfab_u64 (*cpu_ns)(void);
};

/*
 * A parallel engine of @nr partitions (and threads) over @m, each with
 * @xfers transfers and @events events. Returns NULL with *@err set:
 * -ICFAB_PENGINE_EDOM when some link between partitions has no latency
 * (there is no lookahead: use the sequential engine), -ENOMEM,
 * -ICFAB_ENGINE_EINVAL, or the shim's start()'s error.
 */
struct icfab_pengine *icfab_pengine_new(const struct icfab_pengine_sys *sys,
					void *priv,
					const struct icfab_mtopo *m,
					icfab_u32 segment_size, unsigned int nr,
					icfab_u32 xfers, icfab_u32 events,
					int *err);
/* Tells the threads to quit, waits for them, frees everything. */
void icfab_pengine_free(struct icfab_pengine *pe);

/* The shim's @priv, and the number of partitions. */
void *icfab_pengine_priv(const struct icfab_pengine *pe);
unsigned int icfab_pengine_nr(const struct icfab_pengine *pe);

/* A worker thread's body (partition @p >= 1): returns when told to quit. */
void icfab_pengine_worker(struct icfab_pengine *pe, unsigned int p);

/* The lookahead, ps, and the partition of each node. */
icfab_u64 icfab_pengine_lookahead(const struct icfab_pengine *pe);
const icfab_u16 *icfab_pengine_of_node(const struct icfab_pengine *pe);

/* Windows run, and messages exchanged between partitions, so far. */
void icfab_pengine_counts(const struct icfab_pengine *pe, icfab_u64 *windows,
			  icfab_u64 *messages);

/*
 * The shim's cpu_ns() the partitions spent working (submitting, running
 * windows, exchanging; not waiting) in all, and *@critical: summed over
 * batches and windows, the most any one partition spent, which is what
 * the runs would take on as many idle CPUs (reporting aside), so that a
 * shared machine can still tell what the partitioning and the lookahead
 * allow. ns.
 */
void icfab_pengine_times(const struct icfab_pengine *pe, icfab_u64 *critical,
			 icfab_u64 *busy);

/*
 * Where partition @p's thread spent the shim's cpu_ns() so far, by phase
 * of a window or a batch, ns (spinning at a barrier counts: the thread
 * holds its CPU): @ph[ICFAB_PENGINE_PH_NR].
 */
enum {
	ICFAB_PENGINE_PH_REPORT,	/* thread 0: the last window's report */
	ICFAB_PENGINE_PH_RUN,		/* the partition's events of a window */
	ICFAB_PENGINE_PH_WAIT1,		/* the barrier after them */
	ICFAB_PENGINE_PH_IMPORT,	/* the messages sent to it */
	ICFAB_PENGINE_PH_RESULTS,	/* the results of its completions */
	ICFAB_PENGINE_PH_MERGE,		/* the last partition: the merge */
	ICFAB_PENGINE_PH_WAIT2,		/* unused: one barrier a window */
	ICFAB_PENGINE_PH_ROUTE,		/* a batch: its share of routes */
	ICFAB_PENGINE_PH_WAITS,		/* the barrier after them */
	ICFAB_PENGINE_PH_ADOPT,		/* the admission, the adoptions */
	ICFAB_PENGINE_PH_NR
};
void icfab_pengine_phases(const struct icfab_pengine *pe, unsigned int p,
			  icfab_u64 *ph);

/*
 * What the engine measures with the shim's cpu_ns(), which may be a
 * system call (a thread's CPU clock on the host: 2 us on this VM): @level
 * 0 nothing (times and phases stay 0), 1 the work and the critical path
 * (icfab_pengine_times(), two reads a window), 2 (the default) also the
 * phases (icfab_pengine_phases(), five a window).
 */
void icfab_pengine_set_meter(struct icfab_pengine *pe, int level);

/*
 * What icfab_engine's now_ps, last_ps, last_key and processed would be:
 * a submission at @at with @key must have at > last, or at == last and
 * key > last_key, and at >= now.
 */
void icfab_pengine_now(const struct icfab_pengine *pe, icfab_u64 *now,
		       icfab_u64 *last_ps, icfab_u64 *last_key,
		       int *processed);

/*
 * icfab_engine_submit() as the sequential engine would take it (the same
 * id, the same refusals): routed once, adopted by every partition.
 */
int icfab_pengine_submit(struct icfab_pengine *pe, icfab_u32 src,
			 icfab_u32 dst, icfab_u64 bytes, icfab_u64 submit_ps,
			 icfab_u64 key, icfab_u32 *xfer_id);

/* One submission of a batch. */
struct icfab_pengine_sub {
	icfab_u32 src, dst;
	icfab_u64 bytes;
	icfab_u64 submit_ps;		/* ps */
	icfab_u64 key;
};

/*
 * icfab_pengine_submit() for @n transfers in order: the threads walk and
 * check the routes in shares, every thread finds the same admission
 * (ids, the first refusal), and each thread's partition adopts every
 * admitted one. @ids[] past the ones taken may be written. Stops at the first
 * refusal. Sets *@taken to the number accepted and @ids[] to their
 * ids; returns 0, the refusal, or -ICFAB_PENGINE_ENOMEM.
 */
int icfab_pengine_submit_batch(struct icfab_pengine *pe,
			       const struct icfab_pengine_sub *subs,
			       icfab_u64 n, icfab_u32 *ids, icfab_u64 *taken);

/* The xmit tracer for every partition, with the argument @args[p]. */
void icfab_pengine_set_xmit(struct icfab_pengine *pe,
			    void (*xmit)(void *,
					 const struct icfab_engine_xmit *),
			    void *const *args);

/*
 * icfab_engine_run_until(): 0, 1 when a callback asked to stop, or a
 * negative errno (-ICFAB_ENGINE_ERANGE: a partition got an event from
 * its past).
 */
int icfab_pengine_run_until(struct icfab_pengine *pe, icfab_u64 horizon_ps,
			    icfab_engine_complete_fn complete, void *arg);

/* Link @lid's state and statistics, from the partition that owns it. */
const struct icfab_engine_link *
icfab_pengine_link(const struct icfab_pengine *pe, icfab_u32 lid);

/*
 * A step of the module's data path (docs/ARCHITECTURE.md, "The parallel
 * engine in the kernel"): icfab_pengine_load() makes @pe's state that of
 * the sequential engine @e, which holds no transfer: its links (FIFO
 * state and statistics), DMA engines, free list of transfer ids and
 * clock; the caller then submits and runs. icfab_pengine_store() hands
 * it back to @e once a run has left @pe empty: the next submission to
 * @e is then timed and numbered as it would have been had @e run the
 * same transfers itself. Both need @e on the topology @pe was built on,
 * with @pe's transfer and event capacities. 0 or -ICFAB_ENGINE_EINVAL
 * (nothing changed).
 */
int icfab_pengine_load(struct icfab_pengine *pe, const struct icfab_engine *e);
int icfab_pengine_store(const struct icfab_pengine *pe,
			struct icfab_engine *e);

#endif /* _ICFAB_MODEL_PENGINE_H */
