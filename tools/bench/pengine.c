// SPDX-License-Identifier: GPL-2.0
/*
 * The parallel engine on the host (see pengine.h).
 *
 * A run is a sequence of windows [T, T + lookahead), T the earliest
 * pending event of all partitions. In a window every thread processes
 * its partition's events before the window's end; whatever it sends
 * another partition is at or after that end, so no partition can miss
 * an event of its window. Then, after a barrier, each imports what was
 * sent to it and retires the window's completions, merged in the order
 * of events, in its copy of the transfers; after a second barrier every
 * thread knows the next window. Thread 0 reports the window's
 * completions while the next one runs: the records, outboxes, next
 * times and errors of a window are kept by its parity, so that the
 * window after it writes the other set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pengine.h"
#include "host_model.h"

/* A spinning barrier: a window is tens of microseconds. */
struct spin_barrier {
	atomic_uint count;
	atomic_uint gen;
	unsigned int n;
};

struct pengine {
	unsigned int nr;
	icfab_u64 lookahead;		/* ps */
	icfab_u16 *of_node;
	struct icfab_engine *e;		/* [nr] */
	struct icfab_engine **ep;	/* [nr], for icfab_part_result() */
	struct icfab_engine_storage *st;	/* [nr] */
	struct icfab_engine_part *part;	/* [2 * p + parity] */
	/* The sequential engine's clock, between runs. */
	icfab_u64 now_ps, last_ps, last_key;
	int processed;
	/* A run's. */
	icfab_u64 horizon, first_hz;
	icfab_u64 *next;		/* [2 * p + parity], ps */
	int *err;			/* [2 * p + parity] */
	icfab_engine_complete_fn complete;
	void *arg;
	int ret;
	unsigned int *cursor;		/* thread 0's merge, [nr] */
	uint64_t windows, messages;
	/*
	 * Thread CPU time, s, each partition spent working (not waiting);
	 * and over windows and batches, the most any one spent: the wall
	 * time the run would take on as many idle CPUs.
	 */
	double *busy;			/* [2 * p + parity] */
	double *busy_sum;		/* [p] */
	double critical;
	struct spin_barrier bar;
	pthread_barrier_t start;	/* workers sleep here between runs */
	enum { CMD_RUN, CMD_SUBMIT, CMD_QUIT } cmd;
	/* CMD_SUBMIT's batch, and each partition's answer. */
	const struct pengine_sub *subs;
	size_t nr_subs;
	icfab_u32 *ids;
	size_t *taken;			/* [nr] */
	int *sub_err;			/* [nr] */
	pthread_t *threads;		/* [nr], 0 unused */
};

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Thread 0, after a barrier: the slowest partition's work on @slot. */
static void critical_add(struct pengine *pe, unsigned int par)
{
	double most = 0;
	unsigned int q;

	for (q = 0; q < pe->nr; q++)
		if (pe->busy[2 * q + par] > most)
			most = pe->busy[2 * q + par];
	pe->critical += most;
}

static void sb_wait(struct spin_barrier *b)
{
	unsigned int gen = atomic_load_explicit(&b->gen, memory_order_acquire);
	unsigned int spins = 0;

	if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 ==
	    b->n) {
		atomic_store_explicit(&b->count, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->gen, 1, memory_order_release);
		return;
	}
	while (atomic_load_explicit(&b->gen, memory_order_acquire) == gen) {
		/* On a shared machine the other thread may be off its CPU. */
		if (++spins > 2000)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
}

/*
 * The next completion of window @par in the order of events, from the
 * partitions' records at @cur; NULL when none is left.
 */
static const struct icfab_engine_done *merge_next(const struct pengine *pe,
						  unsigned int par,
						  unsigned int *cur)
{
	const struct icfab_engine_done *best = NULL;
	unsigned int q, bq = 0;

	for (q = 0; q < pe->nr; q++) {
		const struct icfab_engine_part *pp = &pe->part[2 * q + par];

		if (cur[q] < pp->nr_done &&
		    (!best || icfab_part_done_before(&pp->done[cur[q]], best))) {
			best = &pp->done[cur[q]];
			bq = q;
		}
	}
	if (best)
		cur[bq]++;
	return best;
}

/* Thread 0: window @par's completions, to the caller, in order. */
static void report(struct pengine *pe, unsigned int par)
{
	const struct icfab_engine_done *d;
	struct icfab_xfer_result r;

	memset(pe->cursor, 0, pe->nr * sizeof(*pe->cursor));
	while ((d = merge_next(pe, par, pe->cursor))) {
		icfab_part_result(pe->ep, pe->nr, pe->of_node, d, &r);
		if (pe->complete && pe->complete(pe->arg, d->xfer, &r))
			pe->ret = 1;
	}
}

/* Partition @p: import window @par's messages, retire its completions. */
static int exchange(struct pengine *pe, unsigned int p, unsigned int par)
{
	struct icfab_engine *e = &pe->e[p];
	const struct icfab_engine_done *d;
	unsigned int cur[pe->nr], q;
	int err;

	for (q = 0; q < pe->nr; q++) {
		err = icfab_engine_part_import(e, &pe->part[2 * q + par]);
		if (err)
			return err;
	}
	memset(cur, 0, sizeof(cur));
	while ((d = merge_next(pe, par, cur)))
		icfab_engine_part_retire(e, d->xfer);
	return 0;
}

static void window_loop(struct pengine *pe, unsigned int p)
{
	struct icfab_engine *e = &pe->e[p];
	icfab_u64 hz = pe->first_hz, t;
	double c0;
	unsigned int w, par, q;
	int err;

	for (w = 0;; w++) {
		struct icfab_engine_part *mine;

		par = w & 1;
		mine = &pe->part[2 * p + par];
		mine->nr_out = 0;
		mine->nr_done = 0;
		mine->err = 0;
		icfab_engine_set_part(e, mine);
		c0 = thread_cpu();
		if (p == 0 && w)
			report(pe, par ^ 1);
		err = icfab_engine_run_until(e, hz, NULL, NULL);
		if (!err)
			err = mine->err;
		sb_wait(&pe->bar);
		if (!err)
			err = exchange(pe, p, par);
		pe->err[2 * p + par] = err;
		pe->next[2 * p + par] = icfab_engine_next_ps(e);
		pe->busy[2 * p + par] = thread_cpu() - c0;
		pe->busy_sum[p] += pe->busy[2 * p + par];
		if (p == 0) {
			pe->windows++;
			for (q = 0; q < pe->nr; q++)
				pe->messages += pe->part[2 * q + par].nr_out;
		}
		sb_wait(&pe->bar);
		if (p == 0)
			critical_add(pe, par);
		t = ICFAB_ENGINE_NEVER;
		err = 0;
		for (q = 0; q < pe->nr; q++) {
			if (pe->next[2 * q + par] < t)
				t = pe->next[2 * q + par];
			if (pe->err[2 * q + par] && !err)
				err = pe->err[2 * q + par];
		}
		if (err || t == ICFAB_ENGINE_NEVER ||
		    (pe->horizon != ICFAB_ENGINE_NEVER && t >= pe->horizon))
			break;
		hz = t + pe->lookahead < t ? ICFAB_ENGINE_NEVER :
		     t + pe->lookahead;
		if (pe->horizon != ICFAB_ENGINE_NEVER && hz > pe->horizon)
			hz = pe->horizon;
	}
	if (p == 0) {
		report(pe, par);
		if (err && !pe->ret)
			pe->ret = err > 0 ? -err : err;
	}
}

/*
 * Partition @p takes the batch, up to the first refusal; partition 0
 * keeps the ids. The partitions are in step, so all stop at the same.
 */
static void submit_part(struct pengine *pe, unsigned int p)
{
	double c0 = thread_cpu();
	size_t i;
	int err = 0;

	for (i = 0; i < pe->nr_subs; i++) {
		const struct pengine_sub *s = &pe->subs[i];
		icfab_u32 id;

		err = icfab_engine_submit(&pe->e[p], s->src, s->dst, s->bytes,
					  s->submit_ps, s->key, &id);
		if (err)
			break;
		if (!p)
			pe->ids[i] = id;
	}
	pe->taken[p] = i;
	pe->sub_err[p] = err;
	pe->busy[2 * p] = thread_cpu() - c0;
	pe->busy_sum[p] += pe->busy[2 * p];
}

static void *worker(void *arg)
{
	struct pengine *pe = ((void **)arg)[0];
	unsigned int p = (unsigned int)(uintptr_t)((void **)arg)[1];

	free(arg);
	for (;;) {
		pthread_barrier_wait(&pe->start);
		if (pe->cmd == CMD_QUIT)
			return NULL;
		if (pe->cmd == CMD_SUBMIT)
			submit_part(pe, p);
		else
			window_loop(pe, p);
		pthread_barrier_wait(&pe->start);
	}
}

int pengine_submit_batch(struct pengine *pe, const struct pengine_sub *subs,
			 size_t n, icfab_u32 *ids, size_t *taken)
{
	unsigned int p;
	size_t i;

	for (i = 0; i < n; i++)
		if (subs[i].submit_ps < pe->now_ps ||
		    (pe->processed &&
		     (subs[i].submit_ps < pe->last_ps ||
		      (subs[i].submit_ps == pe->last_ps &&
		       (subs[i].key | ICFAB_ENGINE_KEY_LATE) <=
		       pe->last_key))))
			return -ICFAB_ENGINE_ERANGE;
	pe->subs = subs;
	pe->nr_subs = n;
	pe->ids = ids;
	pe->cmd = CMD_SUBMIT;
	pthread_barrier_wait(&pe->start);
	submit_part(pe, 0);
	pthread_barrier_wait(&pe->start);
	critical_add(pe, 0);
	for (p = 1; p < pe->nr; p++)
		if (pe->taken[p] != pe->taken[0] ||
		    pe->sub_err[p] != pe->sub_err[0])
			abort();
	*taken = pe->taken[0];
	return pe->sub_err[0];
}

int pengine_run_until(struct pengine *pe, icfab_u64 horizon_ps,
		      icfab_engine_complete_fn complete, void *arg)
{
	icfab_u64 t = ICFAB_ENGINE_NEVER;
	unsigned int p;

	for (p = 0; p < pe->nr; p++) {
		icfab_u64 n = icfab_engine_next_ps(&pe->e[p]);

		if (n < t)
			t = n;
	}
	pe->ret = 0;
	if (t != ICFAB_ENGINE_NEVER &&
	    (horizon_ps == ICFAB_ENGINE_NEVER || t < horizon_ps)) {
		pe->horizon = horizon_ps;
		pe->complete = complete;
		pe->arg = arg;
		pe->first_hz = t + pe->lookahead < t ? ICFAB_ENGINE_NEVER :
			       t + pe->lookahead;
		if (horizon_ps != ICFAB_ENGINE_NEVER && pe->first_hz > horizon_ps)
			pe->first_hz = horizon_ps;
		pe->cmd = CMD_RUN;
		pthread_barrier_wait(&pe->start);
		window_loop(pe, 0);
		pthread_barrier_wait(&pe->start);
	}
	/* The clock the sequential engine would show now. */
	for (p = 0; p < pe->nr; p++) {
		const struct icfab_engine *e = &pe->e[p];

		if (!e->processed)
			continue;
		if (!pe->processed || e->last_ps > pe->last_ps ||
		    (e->last_ps == pe->last_ps && e->last_key > pe->last_key)) {
			pe->last_ps = e->last_ps;
			pe->last_key = e->last_key;
			pe->processed = 1;
		}
	}
	if (pe->processed && pe->last_ps > pe->now_ps)
		pe->now_ps = pe->last_ps;
	if (horizon_ps != ICFAB_ENGINE_NEVER && horizon_ps > pe->now_ps)
		pe->now_ps = horizon_ps;
	/*
	 * A partition has processed everything before its last window's
	 * end; the engine as a whole, before now_ps. Submissions sort after
	 * the latter, so every partition must take them.
	 */
	for (p = 0; p < pe->nr; p++)
		pe->e[p].now_ps = pe->now_ps;
	return pe->ret;
}

int pengine_submit(struct pengine *pe, icfab_u32 src, icfab_u32 dst,
		   icfab_u64 bytes, icfab_u64 submit_ps, icfab_u64 key,
		   icfab_u32 *xfer_id)
{
	unsigned int p;
	int err = 0;

	if (submit_ps < pe->now_ps ||
	    (pe->processed && (submit_ps < pe->last_ps ||
			       (submit_ps == pe->last_ps &&
				(key | ICFAB_ENGINE_KEY_LATE) <= pe->last_key))))
		return -ICFAB_ENGINE_ERANGE;
	for (p = 0; p < pe->nr; p++) {
		icfab_u32 id;
		int e = icfab_engine_submit(&pe->e[p], src, dst, bytes,
					    submit_ps, key, &id);

		/* The partitions are in step: all or none take it. */
		if (p && (e != err || (!e && id != *xfer_id)))
			abort();
		err = e;
		if (!e)
			*xfer_id = id;
	}
	return err;
}

void pengine_now(const struct pengine *pe, icfab_u64 *now, icfab_u64 *last_ps,
		 icfab_u64 *last_key, int *processed)
{
	*now = pe->now_ps;
	*last_ps = pe->last_ps;
	*last_key = pe->last_key;
	*processed = pe->processed;
}

void pengine_set_xmit(struct pengine *pe,
		      void (*xmit)(void *, const struct icfab_engine_xmit *),
		      void *const *args)
{
	/* One tracer for all: the argument tells the partitions apart. */
	static struct icfab_engine_tracer tr;
	unsigned int p;

	tr.xmit = xmit;
	for (p = 0; p < pe->nr; p++)
		icfab_engine_set_tracer(&pe->e[p], xmit ? &tr : NULL,
					args ? args[p] : NULL);
}

const struct icfab_engine_link *pengine_link(const struct pengine *pe,
					     icfab_u32 lid)
{
	const struct icfab_mlink *l = &pe->e[0].topo->links[lid];
	unsigned int p = l->present ? pe->of_node[l->src] : 0;

	return &pe->st[p].links[lid];
}

icfab_u64 pengine_lookahead(const struct pengine *pe)
{
	return pe->lookahead;
}

const icfab_u16 *pengine_of_node(const struct pengine *pe)
{
	return pe->of_node;
}

void pengine_counts(const struct pengine *pe, uint64_t *windows,
		    uint64_t *messages)
{
	*windows = pe->windows;
	*messages = pe->messages;
}

void pengine_times(const struct pengine *pe, double *critical, double *busy)
{
	unsigned int p;

	*critical = pe->critical;
	*busy = 0;
	for (p = 0; p < pe->nr; p++)
		*busy += pe->busy_sum[p];
}

void pengine_free(struct pengine *pe)
{
	unsigned int p;

	if (!pe)
		return;
	if (pe->threads) {
		pe->cmd = CMD_QUIT;
		pthread_barrier_wait(&pe->start);
		for (p = 1; p < pe->nr; p++)
			pthread_join(pe->threads[p], NULL);
		pthread_barrier_destroy(&pe->start);
	}
	for (p = 0; pe->st && p < pe->nr; p++)
		host_storage_free(&pe->st[p]);
	for (p = 0; pe->part && p < 2 * pe->nr; p++) {
		free(pe->part[p].out);
		free(pe->part[p].done);
	}
	free(pe->part);
	free(pe->st);
	free(pe->e);
	free(pe->ep);
	free(pe->of_node);
	free(pe->next);
	free(pe->err);
	free(pe->cursor);
	free(pe->taken);
	free(pe->busy);
	free(pe->busy_sum);
	free(pe->sub_err);
	free(pe->threads);
	free(pe);
}

/* Storage, engines and partitions; no threads yet. */
static int pengine_build(struct pengine *pe, const struct icfab_mtopo *m,
			 icfab_u32 segment_size, icfab_u32 xfers,
			 icfab_u32 events)
{
	unsigned int p;
	icfab_u32 *scratch;

	pe->of_node = calloc(m->nodes_cap, sizeof(*pe->of_node));
	scratch = calloc(2 * (size_t)m->nodes_cap, sizeof(*scratch));
	pe->e = calloc(pe->nr, sizeof(*pe->e));
	pe->ep = calloc(pe->nr, sizeof(*pe->ep));
	pe->st = calloc(pe->nr, sizeof(*pe->st));
	pe->part = calloc(2 * pe->nr, sizeof(*pe->part));
	pe->next = calloc(2 * pe->nr, sizeof(*pe->next));
	pe->err = calloc(2 * pe->nr, sizeof(*pe->err));
	pe->cursor = calloc(pe->nr, sizeof(*pe->cursor));
	pe->taken = calloc(pe->nr, sizeof(*pe->taken));
	pe->busy = calloc(2 * pe->nr, sizeof(*pe->busy));
	pe->busy_sum = calloc(pe->nr, sizeof(*pe->busy_sum));
	if (!pe->busy || !pe->busy_sum)
		return -ENOMEM;
	pe->sub_err = calloc(pe->nr, sizeof(*pe->sub_err));
	if (!pe->taken || !pe->sub_err || !pe->of_node || !scratch || !pe->e || !pe->ep || !pe->st ||
	    !pe->part || !pe->next || !pe->err || !pe->cursor) {
		free(scratch);
		return -ENOMEM;
	}
	pe->lookahead = icfab_part_plan(m, (icfab_u16)pe->nr, pe->of_node,
					scratch);
	free(scratch);
	if (!pe->lookahead)
		return -EDOM;
	for (p = 0; p < 2 * pe->nr; p++) {
		struct icfab_engine_part *pp = &pe->part[p];

		pp->of_node = pe->of_node;
		pp->self = (icfab_u16)(p / 2);
		pp->out_cap = events;
		pp->out = calloc(events, sizeof(*pp->out));
		pp->done_cap = xfers;
		pp->done = calloc(xfers, sizeof(*pp->done));
		if (!pp->out || !pp->done)
			return -ENOMEM;
	}
	for (p = 0; p < pe->nr; p++) {
		if (host_storage(&pe->st[p], m, xfers, events))
			return -ENOMEM;
		if (icfab_engine_init(&pe->e[p], m, segment_size, &pe->st[p]))
			return -EINVAL;
		icfab_engine_set_part(&pe->e[p], &pe->part[2 * p]);
		pe->ep[p] = &pe->e[p];
	}
	return 0;
}

struct pengine *pengine_new(const struct icfab_mtopo *m, icfab_u32 segment_size,
			    unsigned int nr, icfab_u32 xfers, icfab_u32 events,
			    int *err)
{
	struct pengine *pe;
	unsigned int p;

	if (nr < 1 || nr > 64) {
		*err = -EINVAL;
		return NULL;
	}
	pe = calloc(1, sizeof(*pe));
	if (!pe) {
		*err = -ENOMEM;
		return NULL;
	}
	pe->nr = nr;
	pe->bar.n = nr;
	*err = pengine_build(pe, m, segment_size, xfers, events);
	if (*err)
		goto err_free;
	pe->threads = calloc(nr, sizeof(*pe->threads));
	if (!pe->threads) {
		*err = -ENOMEM;
		goto err_free;
	}
	pthread_barrier_init(&pe->start, NULL, nr);
	for (p = 1; p < nr; p++) {
		void **a = malloc(2 * sizeof(*a));

		if (!a)
			abort();
		a[0] = pe;
		a[1] = (void *)(uintptr_t)p;
		if (pthread_create(&pe->threads[p], NULL, worker, a))
			abort();
	}
	return pe;

err_free:
	pengine_free(pe);
	return NULL;
}
