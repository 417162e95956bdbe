// SPDX-License-Identifier: GPL-2.0
/*
 * icfab fabric model: the parallel engine (see pengine.h).
 *
 * A run is a sequence of windows [T, T + W), T the earliest pending
 * event of all partitions, W the lookahead and, under store and forward,
 * the shortest segment's serialisation on a link between partitions
 * (win_len()). In a window every thread processes
 * its partition's events before the window's end; whatever it sends
 * another partition is at or after that end, so no partition can miss
 * an event of its window. Then, after a barrier, every thread knows the
 * next window (from what each partition published before it: its next
 * event and its earliest message), and each imports what was sent to it
 * and builds the results of the completions it recorded, the last
 * partition merges every partition's completions in the order of
 * events, and runs the next window without a second barrier. Thread 0
 * reports them in that order after the next window's barrier, and
 * retires them in the transfer table it keeps for all (below): the
 * records, results, merged order, outboxes, next times and errors of a
 * window are kept by its parity, so that the window after it writes the
 * other set.
 *
 * The transfer ids, their free list and the events reserved are kept
 * here, once, as the sequential engine keeps them (free list order and
 * all), not in step in every partition: a batch of submissions is
 * routed and checked by the threads in shares (icfab_engine_part_route()),
 * each also reading its share's ids off the free list, a stack; after a
 * barrier every thread finds the same admission (how far the batch goes,
 * the refusal that stops it) from the shares' checks and sums of events,
 * and every partition adopts every admitted transfer into its slot: the
 * slot is built once, by the thread that routed it
 * (icfab_engine_part_slot()), and copied by each partition, which
 * pushes its first event in its source's partition only
 * (icfab_engine_part_adopt_slots()). Partitions never retire a slot: it
 * is filled again when its id is given again.
 *
 * Threads, memory and barriers are the shim's (struct icfab_pengine_sys):
 * this file is the same on the host and in the kernel.
 */
#include "pengine.h"

struct pengine_done {
	icfab_u32 xfer;
	const struct icfab_xfer_result *r;
};

/* A partition's records of a window not merged yet, and their results. */
struct pengine_merge {
	const struct icfab_engine_done *d, *end;
	const struct icfab_xfer_result *r;
};

enum { CMD_RUN, CMD_SUBMIT, CMD_QUIT };

#define PE_LINE	64
/* Prefetches this many items ahead of a loop over scattered slots. */
#define PE_AHEAD	8

/*
 * What one partition's thread writes, in a block of its own that starts
 * on a cache line and fills its last: its engine (written at every
 * event), its two records of a window (written at every message and
 * completion), and what it tells the others at a window's or a batch's
 * end. In arrays from an allocator that aligns to 16 bytes, one
 * engine's counters (written at every event) could share a line with
 * the next engine's pointers (read at every event), and one partition's
 * records with another's, depending on where the arrays fell.
 */
struct pengine_pt {
	struct icfab_engine e;
	struct icfab_engine_part part[2];	/* [parity] */
	icfab_u64 next[2];		/* [parity], ps */
	int err[2];			/* [parity] */
	icfab_u64 busy[2];		/* [parity], ns */
	icfab_u64 busy_last;		/* a run's last exchange, ns */
	icfab_u64 busy_sum;
	icfab_u64 run0;			/* cpu_ns() at its run's start */
	int xerr;			/* its last import's */
	icfab_u64 phase[3];		/* a batch's, ns */
	icfab_u64 ph[ICFAB_PENGINE_PH_NR];	/* ns, see pengine.h */
	/* Its share's first refusal (its end if none) and its errno. */
	icfab_u64 share_fail;
	int share_err;
	int adopt_err;
	/* Its share's shortest segment, bytes (ICFAB_ENGINE_NEVER: none). */
	icfab_u64 share_min;
} __attribute__((__aligned__(PE_LINE)));

struct icfab_pengine {
	const struct icfab_pengine_sys *sys;
	void *priv;			/* the shim's */
	unsigned int nr;
	int started;			/* the shim's threads run */
	icfab_u64 lookahead;		/* ps */
	/*
	 * A run's window, ps: the lookahead and the least time the shortest
	 * segment in flight takes to serialise on a link between partitions
	 * (win_len()).
	 */
	icfab_u64 window;
	/* The links between partitions, [nr_cross]. */
	icfab_u32 *cross;
	icfab_u32 nr_cross;
	/*
	 * The shortest segment of any transfer taken since the engine was
	 * last empty, bytes, or ICFAB_ENGINE_NEVER: none.
	 */
	icfab_u64 min_len;
	icfab_u16 *of_node;
	struct pengine_pt **pt;		/* [nr], each its own lines */
	void **pt_raw;			/* [nr], as allocated */
	struct icfab_engine **ep;	/* [nr], &pt[p]->e */
	struct icfab_engine_storage *st;	/* [nr] */
	struct icfab_engine_tracer tracer;	/* the xmit one, for all */
	/* The sequential engine's clock, between runs. */
	icfab_u64 now_ps, last_ps, last_key;
	int processed;
	/* A run's. */
	icfab_u64 horizon, first_hz;
	icfab_engine_complete_fn complete;
	void *arg;
	int ret;
	struct pengine_merge *cursor;	/* the merge's, [nr] */
	/*
	 * The results of part[i]'s completions, built by the partition that
	 * completed them at the window's exchange: [i * xfers_cap + k] is
	 * done[k]'s.
	 */
	struct icfab_xfer_result *res;
	/*
	 * Window parity @par's completions in the order of events, merged
	 * by the last partition at the exchange: order[par * xfers_cap + i],
	 * nr_order[par] of them.
	 */
	struct pengine_done *order;
	icfab_u32 nr_order[2];
	/*
	 * The sequential engine's transfer table, but for what the
	 * partitions keep: its free list, as a stack (the next id given on
	 * top, at free_stack[nr_free - 1]: a batch's ids are read off it, not
	 * walked one after the other through a list), and the events
	 * reserved in all.
	 */
	icfab_u32 xfers_cap, events_cap, nr_free;
	icfab_u32 *free_stack;		/* [xfers_cap] */
	/* Scratch for a list of ids to or from an engine, [xfers_cap]. */
	icfab_u32 *free_next;
	icfab_u64 events_reserved;
	icfab_u64 windows, messages;
	/*
	 * Over windows and batches, the most cpu_ns() any one partition
	 * spent working (pengine_pt.busy): the wall time the run would
	 * take on as many idle CPUs.
	 */
	icfab_u64 critical;
	/* What to measure: 0 nothing, 1 work, 2 also phases. */
	int meter;
	/* Thread 0's, for finish_run(). */
	unsigned int last_par;
	int run_err;
	int cmd;
	/* CMD_SUBMIT's batch: its routes, what thread 0 admitted. */
	const struct icfab_pengine_sub *subs;
	icfab_u64 nr_subs;
	icfab_u32 *ids;
	/*
	 * Each submission's slot, built by the thread that routed it and
	 * copied by every partition (icfab_engine_part_adopt_slots()).
	 */
	struct icfab_engine_xfer *slots;	/* [routes_cap] */
	/* Events needed from the start of its share on, [routes_cap]. */
	icfab_u64 *cum;
	icfab_u64 routes_cap;
	icfab_u64 taken, batch_need;
	int sub_err;
};

static inline struct icfab_engine_part *pe_part(const struct icfab_pengine *pe,
						unsigned int q,
						unsigned int par)
{
	return &pe->pt[q]->part[par];
}

static icfab_u64 pe_cpu(const struct icfab_pengine *pe)
{
	return pe->meter && pe->sys->cpu_ns ? pe->sys->cpu_ns() : 0;
}

static void *pe_zalloc(const struct icfab_pengine *pe, icfab_u64 n,
		       icfab_u64 size)
{
	icfab_u64 bytes;

	if (__builtin_mul_overflow(n, size, &bytes))
		return ICFAB_NULL;
	return pe->sys->zalloc(bytes ? bytes : 1);
}

/* The last (shortest) segment of @nr_segs >= 1 of @bytes, bytes. */
static icfab_u64 seg_last(icfab_u64 bytes, icfab_u64 nr_segs, icfab_u32 seg)
{
	return bytes - (nr_segs - 1) * seg;
}

/*
 * The window of a run, ps: how much later than the event that sends it
 * any message between partitions is. A message is a segment's next
 * event, or its arrival, after a link between partitions: at its
 * departure plus the link's latency when the link forwards cut-through
 * (from its first byte), otherwise at the departure plus the time its
 * bytes take at the link's bandwidth (link_xmit() in engine.c: no less,
 * since a degraded link, a calibrated share and a per-message overhead
 * only add) plus the latency. The departure is no earlier than the
 * event. So with no link between partitions cut-through, the lookahead
 * (the least latency) plus the shortest segment in flight at the
 * highest bandwidth of those links bounds every message; windows that
 * long keep every message in a later window (and the import refuses one
 * from a partition's past all the same). Bandwidths may change between
 * runs: read again at each.
 */
static icfab_u64 win_len(const struct icfab_pengine *pe)
{
	const struct icfab_mtopo *m = pe->ep[0]->topo;
	icfab_u64 bw = 0, ser, w = pe->lookahead;
	icfab_u32 i;

	if (w == ICFAB_ENGINE_NEVER || pe->min_len == ICFAB_ENGINE_NEVER ||
	    !pe->min_len)
		return w;
	for (i = 0; i < pe->nr_cross; i++) {
		const struct icfab_mlink *l = &m->links[pe->cross[i]];

		if (!l->present)
			continue;
		if (l->cut_through)
			return w;
		if (l->bandwidth > bw)
			bw = l->bandwidth;
	}
	if (!bw)
		return w;
	ser = icfab_serialize_ps(pe->min_len, bw);
	return w + ser < w ? ICFAB_ENGINE_NEVER : w + ser;
}

/* Thread 0, after a barrier: the slowest partition's work on @par. */
static void critical_add(struct icfab_pengine *pe, unsigned int par)
{
	icfab_u64 most = 0;
	unsigned int q;

	for (q = 0; q < pe->nr; q++)
		if (pe->pt[q]->busy[par] > most)
			most = pe->pt[q]->busy[par];
	pe->critical += most;
}

/*
 * Partition @p, at window @par's exchange: the results of its
 * completions. Every partition's slot of a transfer completed in the
 * window is final then (its last departure anywhere was at least a
 * lookahead before its last arrival, so in an earlier window or in this
 * partition), and no partition writes it again before it is adopted
 * again, which is after the run; so the partition that completed it
 * builds its result while the others import, not thread 0 alone.
 */
/*
 * results() of partition @p of two, the common case:
 * icfab_part_result_at() in line, its loop over the partitions two
 * reads, the start read from the source's partition by a test (the
 * source is @p's or @other's). Per completion, a call of six
 * arguments and a loop fewer.
 */
static void results_two(const struct icfab_pengine *pe,
			const struct icfab_engine_part *pp, unsigned int p,
			const struct icfab_engine_xfer *other,
			struct icfab_xfer_result *r)
{
	const struct icfab_engine_xfer *mine = pe->ep[p]->xfers;
	const struct icfab_engine_done *d = pp->done, *end = d + pp->nr_done;
	const icfab_u16 *of_node = pe->of_node;

	for (; d < end; d++, r++) {
		const struct icfab_engine_xfer *x = &mine[d->xfer];
		const struct icfab_engine_xfer *o = &other[d->xfer];
		icfab_u64 q;

		/* The other's slot was last written on its core. */
		if (end - d > PE_AHEAD)
			__builtin_prefetch(&other[d[PE_AHEAD].xfer].queued_ps);
		/* Saturating, as icfab_part_result_at() sums. */
		q = x->queued_ps + o->queued_ps;
		if (q < x->queued_ps)
			q = ~0ULL;
		r->key = x->key;
		r->bytes = x->bytes;
		r->submit_ps = x->submit_ps;
		r->start_ps = of_node[x->src] == p ? x->start_ps : o->start_ps;
		r->finish_ps = d->time_ps;
		r->queued_ps = q;
		r->src = x->src;
		r->dst = x->dst;
		r->hops = x->hops;
		r->status = x->status;
		r->nr_leaves = x->nr_leaves;
		r->pad = 0;
	}
}

static void results(struct icfab_pengine *pe, unsigned int p, unsigned int par)
{
	const struct icfab_engine_part *pp = pe_part(pe, p, par);
	struct icfab_xfer_result *r = &pe->res[(icfab_u64)(2 * p + par) *
					       pe->xfers_cap];
	/* Two partitions, the common case: the other's slots, at once. */
	int two = pe->nr == 2;
	const struct icfab_engine_xfer *other = pe->ep[p ^ (two ? 1 : 0)]->xfers;
	icfab_u32 k, q, n = pp->nr_done;

	if (two) {
		results_two(pe, pp, p, other, r);
		return;
	}
	for (k = 0; k < n; k++) {
		/*
		 * The others' slots were last written on their cores: ask
		 * for them a few completions ahead, not one at a time.
		 */
		if (k + PE_AHEAD < n) {
			icfab_u32 x = pp->done[k + PE_AHEAD].xfer;

			for (q = 0; q < pe->nr; q++)
				if (q != p)
					__builtin_prefetch(&pe->ep[q]->xfers[x].queued_ps);
		}
		icfab_part_result_at(pe->ep, pe->nr, pe->of_node, p,
				     &pp->done[k], &r[k]);
	}
}

/*
 * The last partition, at window @par's exchange (every partition's
 * records are final after the first barrier): its completions merged in
 * the order of events, for thread 0's report(). Thread 0 carries the
 * report and the admissions on top of its partition; the merge, the
 * larger part of the report's own work, goes to another.
 */
static void merge(struct icfab_pengine *pe, unsigned int par)
{
	struct pengine_done *o0 = &pe->order[(icfab_u64)par * pe->xfers_cap];
	struct pengine_done *o = o0;
	struct pengine_merge *m = pe->cursor;
	unsigned int k = 0, q, i, best;

	/* The partitions with records left; their order does not matter. */
	for (q = 0; q < pe->nr; q++) {
		const struct icfab_engine_part *pp = pe_part(pe, q, par);

		if (!pp->nr_done)
			continue;
		m[k].d = pp->done;
		m[k].end = pp->done + pp->nr_done;
		m[k].r = &pe->res[(icfab_u64)(2 * q + par) * pe->xfers_cap];
		k++;
	}
	/*
	 * The order of events is total (the transfer id last): no ties.
	 * Two partitions left, the common case: one comparison a record,
	 * by time first, in line.
	 */
	while (k == 2) {
		const struct icfab_engine_done *a = m[0].d, *b = m[1].d;

		best = b->time_ps != a->time_ps ? b->time_ps < a->time_ps :
		       icfab_part_done_before(b, a);
		o->xfer = m[best].d->xfer;
		o->r = m[best].r;
		o++;
		m[best].r++;
		if (++m[best].d == m[best].end)
			m[best] = m[--k];
	}
	while (k > 1) {
		best = 0;
		for (i = 1; i < k; i++)
			if (icfab_part_done_before(m[i].d, m[best].d))
				best = i;
		o->xfer = m[best].d->xfer;
		o->r = m[best].r;
		o++;
		m[best].r++;
		if (++m[best].d == m[best].end)
			m[best] = m[--k];
	}
	for (; k && m[0].d < m[0].end; m[0].d++, m[0].r++, o++) {
		o->xfer = m[0].d->xfer;
		o->r = m[0].r;
	}
	pe->nr_order[par] = (icfab_u32)(o - o0);
}

/*
 * Thread 0: window @par's completions, to the caller, in the order
 * merge() found, their results built by their partitions (results()).
 */
static void report(struct icfab_pengine *pe, unsigned int par)
{
	const struct pengine_done *o =
		&pe->order[(icfab_u64)par * pe->xfers_cap];
	const struct icfab_engine_xfer *xs = pe->ep[0]->xfers;
	icfab_u32 i, n = pe->nr_order[par];

	for (i = 0; i < n; i++) {
		icfab_u32 x = o[i].xfer;

		/*
		 * Retired first, as the sequential engine does. What it
		 * reserved, a segment each and one more (as
		 * icfab_engine_part_route() counts), is in every partition's
		 * slot, which is not adopted again before the run ends.
		 */
		pe->events_reserved -= (icfab_u64)xs[x].nr_segs + 1;
		pe->free_stack[pe->nr_free++] = x;
		if (pe->complete && pe->complete(pe->arg, x, o[i].r))
			pe->ret = 1;
	}
}

/* Partition @p: import window @par's messages. */
static int exchange(struct icfab_pengine *pe, unsigned int p, unsigned int par)
{
	struct icfab_engine *e = pe->ep[p];
	unsigned int q;
	int err;

	for (q = 0; q < pe->nr; q++) {
		/* A partition sends itself nothing. */
		if (q == p)
			continue;
		err = icfab_engine_part_import(e, pe_part(pe, q, par));
		if (err)
			return err;
	}
	return 0;
}

/* The earliest time of partition @p's messages of window @par, or NEVER. */
static icfab_u64 out_min(const struct icfab_engine_part *pp)
{
	icfab_u64 t = ICFAB_ENGINE_NEVER;
	icfab_u32 i;

	for (i = 0; i < pp->nr_out; i++)
		if (pp->out[i].time_ps < t)
			t = pp->out[i].time_ps;
	return t;
}

/*
 * Partition @p's windows, with one barrier each. Before it, every
 * partition publishes its earliest event left and the earliest message
 * it sent (next[]), and its error (err[]); after it, every thread finds
 * the same next window from those alone (the earliest event once the
 * messages are imported is the lesser of the two), imports, builds the
 * results of its completions (the last partition also merges them, and
 * thread 0 reports the window before, merged at that window's exchange)
 * and runs the next window without waiting for the others' exchange:
 * what the next window writes (its records, outbox and results) is the
 * other parity's, which nobody reads until after the next barrier. A
 * failed import stops the partition's next run, and so every thread at
 * the barrier after it; the last window's report, and its errors, are
 * the caller's, after the command's closing barrier (finish_run()).
 */
static void window_loop(struct icfab_pengine *pe, unsigned int p)
{
	struct pengine_pt *pt = pe->pt[p];
	struct icfab_engine *e = &pt->e;
	icfab_u64 hz = pe->first_hz, t, c0, c1, c2;
	unsigned int w, par = 0, q;
	int err, meter = pe->meter, fine = meter > 1;

	pt->xerr = 0;
	c0 = meter ? pe_cpu(pe) : 0;
	pt->run0 = c0;
	for (w = 0;; w++) {
		struct icfab_engine_part *mine;

		par = w & 1;
		mine = &pt->part[par];
		mine->nr_out = 0;
		mine->nr_done = 0;
		mine->err = 0;
		icfab_engine_set_part(e, mine);
		/*
		 * One run of the parallel engine is one engine call for the
		 * topology (it changes only between calls of its caller;
		 * a callback only reads): the links' caches checked in the
		 * window before (struct icfab_engine, epoch) stay checked,
		 * not checked again at their first use in every window.
		 */
		if (w)
			e->epoch--;
		err = pt->xerr;
		if (!err) {
			err = icfab_engine_run_until(e, hz, ICFAB_NULL,
						     ICFAB_NULL);
			if (!err)
				err = mine->err;
		}
		t = icfab_engine_next_ps(e);
		c1 = out_min(mine);
		pt->next[par] = c1 < t ? c1 : t;
		pt->err[par] = err;
		if (meter) {
			c1 = pe_cpu(pe);
			/* From the last barrier: its exchange, this run. */
			pt->busy[par] = c1 - c0;
			pt->busy_sum += c1 - c0;
			if (fine)
				pt->ph[ICFAB_PENGINE_PH_RUN] += c1 - pt->run0;
		}
		pe->sys->win_wait(pe, p);
		if (meter) {
			c0 = pe_cpu(pe);
			pt->ph[ICFAB_PENGINE_PH_WAIT1] += c0 - c1;
		}
		t = ICFAB_ENGINE_NEVER;
		err = 0;
		for (q = 0; q < pe->nr; q++) {
			if (pe->pt[q]->next[par] < t)
				t = pe->pt[q]->next[par];
			if (pe->pt[q]->err[par] && !err)
				err = pe->pt[q]->err[par];
		}
		if (!err)
			pt->xerr = exchange(pe, p, par);
		c2 = fine ? pe_cpu(pe) : 0;
		if (fine)
			pt->ph[ICFAB_PENGINE_PH_IMPORT] += c2 - c0;
		/* Whatever was completed, as report() will tell it. */
		results(pe, p, par);
		if (fine) {
			c1 = pe_cpu(pe);
			pt->ph[ICFAB_PENGINE_PH_RESULTS] += c1 - c2;
			c2 = c1;
		}
		if (p == pe->nr - 1)
			merge(pe, par);
		if (p == 0) {
			/* The window before: merged before this barrier. */
			if (w)
				report(pe, par ^ 1);
			critical_add(pe, par);
			pe->windows++;
			for (q = 0; q < pe->nr; q++)
				pe->messages += pe_part(pe, q, par)->nr_out;
		}
		if (fine) {
			c1 = pe_cpu(pe);
			pt->ph[p == 0 ? ICFAB_PENGINE_PH_REPORT :
			       ICFAB_PENGINE_PH_MERGE] += c1 - c2;
			pt->run0 = c1;
		}
		if (err || t == ICFAB_ENGINE_NEVER ||
		    (pe->horizon != ICFAB_ENGINE_NEVER && t >= pe->horizon))
			break;
		hz = t + pe->window < t ? ICFAB_ENGINE_NEVER :
		     t + pe->window;
		if (pe->horizon != ICFAB_ENGINE_NEVER && hz > pe->horizon)
			hz = pe->horizon;
	}
	if (meter) {
		/* The last exchange: taken by finish_run(). */
		c1 = pe_cpu(pe);
		pt->busy_last = c1 - c0;
		pt->busy_sum += c1 - c0;
	}
	if (p == 0) {
		pe->last_par = par;
		pe->run_err = err;
	}
}

/*
 * Thread 0, after the run's closing barrier: the last window's report
 * (its merge and results are done), its exchange's critical path, and
 * the run's error.
 */
static void finish_run(struct icfab_pengine *pe)
{
	icfab_u64 c0 = pe->meter ? pe_cpu(pe) : 0, most = 0;
	int err = pe->run_err;
	unsigned int q;

	report(pe, pe->last_par);
	for (q = 0; q < pe->nr; q++) {
		if (pe->pt[q]->busy_last > most)
			most = pe->pt[q]->busy_last;
		if (pe->pt[q]->xerr && !err)
			err = pe->pt[q]->xerr;
	}
	if (pe->meter) {
		icfab_u64 c = pe_cpu(pe) - c0;

		pe->pt[0]->ph[ICFAB_PENGINE_PH_REPORT] += c;
		pe->pt[0]->busy_sum += c;
		pe->critical += most + c;
	}
	if (err && !pe->ret)
		pe->ret = err > 0 ? -err : err;
}

/*
 * What the sequential engine would decide about submission @s, routed
 * as @r (or refused with @route_err) before it: 0 and its id in *@id,
 * or the refusal. Thread 0's, or the caller's between runs.
 */
static int admit(struct icfab_pengine *pe, const struct icfab_pengine_sub *s,
		 int route_err, const struct icfab_engine_route *r,
		 icfab_u32 *id)
{
	if (route_err)
		return route_err;
	/* submit_order_err(), against the whole engine's clock. */
	if (s->key & ICFAB_ENGINE_KEY_LATE)
		return -ICFAB_ENGINE_EINVAL;
	if (s->submit_ps < pe->now_ps ||
	    (pe->processed &&
	     (s->submit_ps < pe->last_ps ||
	      (s->submit_ps == pe->last_ps &&
	       (s->key | ICFAB_ENGINE_KEY_LATE) <= pe->last_key))))
		return -ICFAB_ENGINE_ERANGE;
	/* xfer_new()'s. */
	if (r->nr_segs >= pe->events_cap ||
	    r->need > pe->events_cap - pe->events_reserved ||
	    !pe->nr_free)
		return -ICFAB_ENGINE_ENOSPC;
	*id = pe->free_stack[--pe->nr_free];
	pe->events_reserved += r->need;
	return 0;
}

/*
 * Partition @p's share of a batch, [@lo, @hi): each submission routed and
 * checked as admit() would check it alone (everything but the room left
 * by the ones before it, which is the same for all of a batch: the
 * engine's clock does not move within one), and the events it needs
 * summed from @lo on, so that the admission of the whole batch is a
 * search, not a walk (batch_taken()).
 */
static void route_share(struct icfab_pengine *pe, unsigned int p,
			icfab_u64 lo, icfab_u64 hi)
{
	icfab_u64 i, sum = 0, lim = pe->now_ps, shortest = ICFAB_ENGINE_NEVER;
	icfab_u64 seen = 0;
	icfab_u32 seg = pe->ep[p]->segment_size;

	/*
	 * A submission after both the clock and the last event processed
	 * is in order: one comparison; the full test only at or before.
	 */
	if (pe->processed && pe->last_ps > lim)
		lim = pe->last_ps;
	pe->pt[p]->share_fail = hi;
	pe->pt[p]->share_err = 0;
	for (i = lo; i < hi; i++) {
		const struct icfab_pengine_sub *s = &pe->subs[i];
		struct icfab_engine_route route;
		const struct icfab_engine_route *r = &route;
		int err;

		err = icfab_engine_part_route(pe->ep[p], s->src, s->dst,
					      s->bytes, &route);
		if (!err && (s->key & ICFAB_ENGINE_KEY_LATE))
			err = -ICFAB_ENGINE_EINVAL;
		if (!err && s->submit_ps <= lim &&
		    (s->submit_ps < pe->now_ps ||
		     (pe->processed &&
		      (s->submit_ps < pe->last_ps ||
		       (s->submit_ps == pe->last_ps &&
			(s->key | ICFAB_ENGINE_KEY_LATE) <= pe->last_key)))))
			err = -ICFAB_ENGINE_ERANGE;
		if (!err && r->nr_segs >= pe->events_cap)
			err = -ICFAB_ENGINE_ENOSPC;
		if (err) {
			/* Nothing after the first refusal is taken. */
			pe->pt[p]->share_fail = i;
			pe->pt[p]->share_err = err;
			break;
		}
		sum += r->need;
		pe->cum[i] = sum;
		/*
		 * Its last segment, the shortest, is its size's: found again
		 * only when the size changes (a batch is mostly one size).
		 * Counted for a size whether it goes anywhere or not.
		 */
		if (s->bytes != seen) {
			seen = s->bytes;
			if (seen && seg_last(seen, (seen - 1) / seg + 1, seg) <
				    shortest)
				shortest = seg_last(seen, (seen - 1) / seg + 1,
						    seg);
		}
		icfab_engine_part_slot(&pe->slots[i], s->src, s->dst, s->bytes,
				       s->submit_ps, s->key, r);
	}
	pe->pt[p]->share_min = shortest;
}

/*
 * What admit() would decide for the batch, one submission after the
 * other, from every share's checks and sums (route_share()) and the
 * free slots thread 0 counted: how many it takes, the refusal that
 * stops it (0: none) in *@err, and the events they reserve in *@need.
 * The same on every thread.
 */
static icfab_u64 batch_taken(const struct icfab_pengine *pe, int *err,
			     icfab_u64 *need)
{
	icfab_u64 avail = pe->events_cap - pe->events_reserved, base = 0;
	icfab_u64 taken = pe->nr_subs;
	unsigned int q;

	*err = 0;
	for (q = 0; q < pe->nr; q++) {
		icfab_u64 lo = pe->nr_subs * q / pe->nr,
			  hi = pe->nr_subs * (q + 1) / pe->nr,
			  f = pe->pt[q]->share_fail;

		if (f > lo && base + pe->cum[f - 1] > avail) {
			/* The first that finds no room for its events. */
			icfab_u64 a = lo, b = f - 1;

			while (a < b) {
				icfab_u64 m = a + (b - a) / 2;

				if (base + pe->cum[m] > avail)
					b = m;
				else
					a = m + 1;
			}
			taken = a;
			*err = -ICFAB_ENGINE_ENOSPC;
			break;
		}
		if (f < hi) {
			taken = f;
			*err = pe->pt[q]->share_err;
			break;
		}
		if (hi > lo)
			base += pe->cum[hi - 1];
	}
	/* A refusal for want of a slot comes after every other check. */
	if (pe->nr_free < taken) {
		taken = pe->nr_free;
		*err = -ICFAB_ENGINE_ENOSPC;
	}
	/* The events of [0, taken): whole shares, then part of one. */
	*need = 0;
	for (q = 0; q < pe->nr; q++) {
		icfab_u64 lo = pe->nr_subs * q / pe->nr,
			  hi = pe->nr_subs * (q + 1) / pe->nr;

		if (taken <= lo)
			break;
		if (hi > lo)
			*need += pe->cum[(taken < hi ? taken : hi) - 1];
	}
	return taken;
}

/*
 * Partition @p's part of a batch: route and check its share (thread 0
 * also takes the ids the free list would give, as far as it goes);
 * then, after one barrier, every thread finds the same admission
 * (batch_taken()) and adopts every admitted transfer, and thread 0
 * moves the free list and the reservations as admit() would have.
 */
static void submit_part(struct icfab_pengine *pe, unsigned int p)
{
	icfab_u64 i, lo = pe->nr_subs * p / pe->nr,
		  hi = pe->nr_subs * (p + 1) / pe->nr, taken, need;
	icfab_u64 c0 = pe_cpu(pe), c1, nfree = pe->nr_free;
	const icfab_u32 *stack = pe->free_stack;
	icfab_u32 *ids = pe->ids;
	int err = 0, sub_err;

	route_share(pe, p, lo, hi);
	/*
	 * The ids the free list would give its share, off the top of the
	 * stack: every thread its own, none walks a list for all.
	 */
	for (i = lo; i < hi && i < nfree; i++)
		ids[i] = stack[nfree - 1 - i];
	c1 = pe_cpu(pe);
	pe->pt[p]->phase[0] = c1 - c0;
	pe->pt[p]->phase[1] = 0;
	pe->pt[p]->ph[ICFAB_PENGINE_PH_ROUTE] += c1 - c0;
	pe->sys->win_wait(pe, p);
	c0 = c1;
	c1 = pe_cpu(pe);
	pe->pt[p]->ph[ICFAB_PENGINE_PH_WAITS] += c1 - c0;
	taken = batch_taken(pe, &sub_err, &need);
	err = icfab_engine_part_adopt_slots(pe->ep[p], pe->ids, pe->slots,
					    taken);
	pe->pt[p]->adopt_err = err;
	if (!p) {
		/* Applied once every thread has found them. */
		pe->taken = taken;
		pe->batch_need = need;
		pe->sub_err = sub_err;
	}
	pe->pt[p]->phase[2] = pe_cpu(pe) - c1;
	pe->pt[p]->ph[ICFAB_PENGINE_PH_ADOPT] += pe->pt[p]->phase[2];
	pe->pt[p]->busy_sum += pe->pt[p]->phase[0] + pe->pt[p]->phase[2];
}

void icfab_pengine_worker(struct icfab_pengine *pe, unsigned int p)
{
	for (;;) {
		pe->sys->cmd_wait(pe, p);
		if (pe->cmd == CMD_QUIT)
			return;
		if (pe->cmd == CMD_SUBMIT)
			submit_part(pe, p);
		else
			window_loop(pe, p);
		pe->sys->cmd_wait(pe, p);
	}
}

int icfab_pengine_submit_batch(struct icfab_pengine *pe,
			       const struct icfab_pengine_sub *subs,
			       icfab_u64 n, icfab_u32 *ids, icfab_u64 *taken)
{
	unsigned int p, k;

	*taken = 0;
	if (n > pe->routes_cap) {
		/* Scratch, rewritten by every batch: nothing to keep. */
		pe->sys->free(pe->slots);
		pe->sys->free(pe->cum);
		pe->slots = pe_zalloc(pe, n, sizeof(*pe->slots));
		pe->cum = pe_zalloc(pe, n, sizeof(*pe->cum));
		if (!pe->slots || !pe->cum) {
			pe->sys->free(pe->slots);
			pe->sys->free(pe->cum);
			pe->slots = ICFAB_NULL;
			pe->cum = ICFAB_NULL;
			pe->routes_cap = 0;
			return -ICFAB_PENGINE_ENOMEM;
		}
		pe->routes_cap = n;
	}
	/* Nothing in flight: the shortest segment is the batch's. */
	if (!pe->events_reserved)
		pe->min_len = ICFAB_ENGINE_NEVER;
	pe->subs = subs;
	pe->nr_subs = n;
	pe->ids = ids;
	pe->cmd = CMD_SUBMIT;
	pe->sys->cmd_wait(pe, 0);
	submit_part(pe, 0);
	pe->sys->cmd_wait(pe, 0);
	/* admit()'s bookkeeping for the batch as a whole. */
	pe->nr_free -= (icfab_u32)pe->taken;
	pe->events_reserved += pe->batch_need;
	/* Routed, if not all taken: no longer than what is in flight. */
	for (p = 0; p < pe->nr; p++)
		if (pe->pt[p]->share_min < pe->min_len)
			pe->min_len = pe->pt[p]->share_min;
	for (k = 0; k < 3; k++) {
		icfab_u64 most = 0;

		for (p = 0; p < pe->nr; p++)
			if (pe->pt[p]->phase[k] > most)
				most = pe->pt[p]->phase[k];
		pe->critical += most;
	}
	/* The admission left room for every event: a bug otherwise. */
	for (p = 0; p < pe->nr; p++)
		if (pe->pt[p]->adopt_err)
			return -ICFAB_ENGINE_EINVAL;
	*taken = pe->taken;
	return pe->sub_err;
}

int icfab_pengine_run_until(struct icfab_pengine *pe, icfab_u64 horizon_ps,
			    icfab_engine_complete_fn complete, void *arg)
{
	icfab_u64 t = ICFAB_ENGINE_NEVER;
	unsigned int p;

	for (p = 0; p < pe->nr; p++) {
		icfab_u64 n = icfab_engine_next_ps(pe->ep[p]);

		if (n < t)
			t = n;
	}
	pe->ret = 0;
	if (t != ICFAB_ENGINE_NEVER &&
	    (horizon_ps == ICFAB_ENGINE_NEVER || t < horizon_ps)) {
		pe->horizon = horizon_ps;
		pe->complete = complete;
		pe->arg = arg;
		pe->window = win_len(pe);
		pe->first_hz = t + pe->window < t ? ICFAB_ENGINE_NEVER :
			       t + pe->window;
		if (horizon_ps != ICFAB_ENGINE_NEVER && pe->first_hz > horizon_ps)
			pe->first_hz = horizon_ps;
		pe->cmd = CMD_RUN;
		pe->sys->cmd_wait(pe, 0);
		window_loop(pe, 0);
		pe->sys->cmd_wait(pe, 0);
		finish_run(pe);
	}
	/* The clock the sequential engine would show now. */
	for (p = 0; p < pe->nr; p++) {
		const struct icfab_engine *e = pe->ep[p];

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
		pe->ep[p]->now_ps = pe->now_ps;
	return pe->ret;
}

int icfab_pengine_submit(struct icfab_pengine *pe, icfab_u32 src,
			 icfab_u32 dst, icfab_u64 bytes, icfab_u64 submit_ps,
			 icfab_u64 key, icfab_u32 *xfer_id)
{
	const struct icfab_pengine_sub s = {
		.src = src, .dst = dst, .bytes = bytes,
		.submit_ps = submit_ps, .key = key,
	};
	struct icfab_engine_route r;
	unsigned int p;
	int err;

	err = icfab_engine_part_route(pe->ep[0], src, dst, bytes, &r);
	/* Nothing in flight: the shortest segment is this one's. */
	if (!err && !pe->events_reserved)
		pe->min_len = ICFAB_ENGINE_NEVER;
	err = admit(pe, &s, err, &r, xfer_id);
	if (err)
		return err;
	if (r.nr_segs &&
	    seg_last(bytes, r.nr_segs, pe->ep[0]->segment_size) < pe->min_len)
		pe->min_len = seg_last(bytes, r.nr_segs,
				       pe->ep[0]->segment_size);
	for (p = 0; p < pe->nr; p++) {
		err = icfab_engine_part_adopt(pe->ep[p], *xfer_id, src, dst,
					      bytes, submit_ps, key, &r);
		/* The admission left room for every event: a bug otherwise. */
		if (err)
			return -ICFAB_ENGINE_EINVAL;
	}
	return 0;
}

void icfab_pengine_now(const struct icfab_pengine *pe, icfab_u64 *now,
		       icfab_u64 *last_ps, icfab_u64 *last_key,
		       int *processed)
{
	*now = pe->now_ps;
	*last_ps = pe->last_ps;
	*last_key = pe->last_key;
	*processed = pe->processed;
}

void icfab_pengine_set_xmit(struct icfab_pengine *pe,
			    void (*xmit)(void *,
					 const struct icfab_engine_xmit *),
			    void *const *args)
{
	unsigned int p;

	/* One tracer for all: the argument tells the partitions apart. */
	pe->tracer.xmit = xmit;
	for (p = 0; p < pe->nr; p++)
		icfab_engine_set_tracer(pe->ep[p], xmit ? &pe->tracer : ICFAB_NULL,
					args ? args[p] : ICFAB_NULL);
}

const struct icfab_engine_link *
icfab_pengine_link(const struct icfab_pengine *pe, icfab_u32 lid)
{
	const struct icfab_mlink *l = &pe->ep[0]->topo->links[lid];
	unsigned int p = l->present ? pe->of_node[l->src] : 0;

	return &pe->st[p].links[lid];
}

icfab_u64 icfab_pengine_lookahead(const struct icfab_pengine *pe)
{
	return pe->lookahead;
}

const icfab_u16 *icfab_pengine_of_node(const struct icfab_pengine *pe)
{
	return pe->of_node;
}

void *icfab_pengine_priv(const struct icfab_pengine *pe)
{
	return pe->priv;
}

unsigned int icfab_pengine_nr(const struct icfab_pengine *pe)
{
	return pe->nr;
}

void icfab_pengine_counts(const struct icfab_pengine *pe, icfab_u64 *windows,
			  icfab_u64 *messages)
{
	*windows = pe->windows;
	*messages = pe->messages;
}

void icfab_pengine_times(const struct icfab_pengine *pe, icfab_u64 *critical,
			 icfab_u64 *busy)
{
	unsigned int p;

	*critical = pe->critical;
	*busy = 0;
	for (p = 0; p < pe->nr; p++)
		*busy += pe->pt[p]->busy_sum;
}

void icfab_pengine_set_meter(struct icfab_pengine *pe, int level)
{
	pe->meter = level;
}

void icfab_pengine_phases(const struct icfab_pengine *pe, unsigned int p,
			  icfab_u64 *ph)
{
	unsigned int k;

	for (k = 0; k < ICFAB_PENGINE_PH_NR; k++)
		ph[k] = p < pe->nr ? pe->pt[p]->ph[k] : 0;
}

void icfab_pengine_free(struct icfab_pengine *pe)
{
	const struct icfab_pengine_sys *sys;
	unsigned int p;

	if (!pe)
		return;
	sys = pe->sys;
	if (pe->started) {
		pe->cmd = CMD_QUIT;
		sys->cmd_wait(pe, 0);
		sys->stop(pe);
	}
	for (p = 0; pe->st && p < pe->nr; p++)
		sys->storage_free(&pe->st[p]);
	for (p = 0; pe->pt && p < pe->nr; p++) {
		unsigned int par;

		if (!pe->pt[p])
			continue;
		for (par = 0; par < 2; par++) {
			sys->free(pe->pt[p]->part[par].out);
			sys->free(pe->pt[p]->part[par].done);
		}
		sys->free(pe->pt_raw[p]);
	}
	sys->free(pe->pt);
	sys->free(pe->pt_raw);
	sys->free(pe->st);
	sys->free(pe->ep);
	sys->free(pe->of_node);
	sys->free(pe->cross);
	sys->free(pe->cursor);
	sys->free(pe->slots);
	sys->free(pe->cum);
	sys->free(pe->free_next);
	sys->free(pe->free_stack);
	sys->free(pe->res);
	sys->free(pe->order);
	sys->free(pe);
}

/* Storage, engines and partitions; no threads yet. */
static int pengine_build(struct icfab_pengine *pe, const struct icfab_mtopo *m,
			 icfab_u32 segment_size, icfab_u32 xfers,
			 icfab_u32 events)
{
	const struct icfab_pengine_sys *sys = pe->sys;
	unsigned int nr = pe->nr, p, i;
	icfab_u32 *scratch;

	pe->of_node = pe_zalloc(pe, m->nodes_cap, sizeof(*pe->of_node));
	scratch = pe_zalloc(pe, 2 * (icfab_u64)m->nodes_cap, sizeof(*scratch));
	pe->pt = pe_zalloc(pe, nr, sizeof(*pe->pt));
	pe->pt_raw = pe_zalloc(pe, nr, sizeof(*pe->pt_raw));
	pe->ep = pe_zalloc(pe, nr, sizeof(*pe->ep));
	pe->st = pe_zalloc(pe, nr, sizeof(*pe->st));
	pe->cursor = pe_zalloc(pe, nr, sizeof(*pe->cursor));
	pe->free_next = pe_zalloc(pe, xfers, sizeof(*pe->free_next));
	pe->free_stack = pe_zalloc(pe, xfers, sizeof(*pe->free_stack));
	pe->res = pe_zalloc(pe, 2 * (icfab_u64)nr * xfers, sizeof(*pe->res));
	pe->order = pe_zalloc(pe, 2 * (icfab_u64)xfers, sizeof(*pe->order));
	if (!pe->free_next || !pe->free_stack || !pe->res || !pe->order ||
	    !pe->of_node || !scratch || !pe->pt || !pe->pt_raw || !pe->ep ||
	    !pe->st || !pe->cursor) {
		sys->free(scratch);
		return -ICFAB_PENGINE_ENOMEM;
	}
	for (p = 0; p < nr; p++) {
		/* Its own lines: the allocator need not align to one. */
		char *raw = pe_zalloc(pe, 1, sizeof(struct pengine_pt) + PE_LINE);

		if (!raw) {
			sys->free(scratch);
			return -ICFAB_PENGINE_ENOMEM;
		}
		pe->pt_raw[p] = raw;
		pe->pt[p] = (struct pengine_pt *)
			(raw + (PE_LINE - (unsigned long)raw % PE_LINE));
		pe->ep[p] = &pe->pt[p]->e;
	}
	/* icfab_engine_init()'s free list: every slot, in order. */
	pe->xfers_cap = xfers;
	pe->events_cap = events;
	for (p = 0; p < xfers; p++)
		pe->free_stack[p] = xfers - 1 - p;
	pe->nr_free = xfers;
	pe->lookahead = icfab_part_plan(m, (icfab_u16)nr, pe->of_node,
					scratch);
	sys->free(scratch);
	if (!pe->lookahead)
		return -ICFAB_PENGINE_EDOM;
	pe->min_len = ICFAB_ENGINE_NEVER;
	pe->window = pe->lookahead;
	/* The links between partitions, for win_len(). */
	for (i = 0; i < 2; i++) {
		icfab_u32 lid, n = 0;

		for (lid = 0; lid < m->links_cap; lid++) {
			const struct icfab_mlink *l = &m->links[lid];

			if (l->src >= m->nodes_cap || l->dst >= m->nodes_cap ||
			    pe->of_node[l->src] == pe->of_node[l->dst])
				continue;
			if (i)
				pe->cross[n] = lid;
			n++;
		}
		if (!i) {
			pe->cross = pe_zalloc(pe, n, sizeof(*pe->cross));
			if (!pe->cross)
				return -ICFAB_PENGINE_ENOMEM;
		}
		pe->nr_cross = n;
	}
	for (p = 0; p < 2 * nr; p++) {
		struct icfab_engine_part *pp = pe_part(pe, p / 2, p % 2);

		pp->of_node = pe->of_node;
		pp->self = (icfab_u16)(p / 2);
		pp->out_cap = events;
		pp->out = pe_zalloc(pe, events, sizeof(*pp->out));
		pp->done_cap = xfers;
		pp->done = pe_zalloc(pe, xfers, sizeof(*pp->done));
		if (!pp->out || !pp->done)
			return -ICFAB_PENGINE_ENOMEM;
	}
	for (p = 0; p < nr; p++) {
		int err = sys->storage(&pe->st[p], m, xfers, events);

		if (err)
			return err;
		if (icfab_engine_init(pe->ep[p], m, segment_size, &pe->st[p]))
			return -ICFAB_ENGINE_EINVAL;
		icfab_engine_set_part(pe->ep[p], pe_part(pe, p, 0));
	}
	return 0;
}

struct icfab_pengine *icfab_pengine_new(const struct icfab_pengine_sys *sys,
					void *priv,
					const struct icfab_mtopo *m,
					icfab_u32 segment_size, unsigned int nr,
					icfab_u32 xfers, icfab_u32 events,
					int *err)
{
	struct icfab_pengine *pe;

	if (nr < 1 || nr > ICFAB_PENGINE_MAX) {
		*err = -ICFAB_ENGINE_EINVAL;
		return ICFAB_NULL;
	}
	pe = sys->zalloc(sizeof(*pe));
	if (!pe) {
		*err = -ICFAB_PENGINE_ENOMEM;
		return ICFAB_NULL;
	}
	pe->sys = sys;
	pe->priv = priv;
	pe->nr = nr;
	pe->meter = 2;
	*err = pengine_build(pe, m, segment_size, xfers, events);
	if (*err)
		goto err_free;
	*err = sys->start(pe, nr);
	if (*err)
		goto err_free;
	pe->started = 1;
	return pe;

err_free:
	icfab_pengine_free(pe);
	return ICFAB_NULL;
}

/*
 * ---- a step of the module's data path (pengine.h) ----
 */

static int pe_matches(const struct icfab_pengine *pe,
		      const struct icfab_engine *e)
{
	const struct icfab_engine *e0 = pe->ep[0];
	icfab_u32 i;
	unsigned int p;

	if (e->topo != e0->topo || e->segment_size != e0->segment_size ||
	    e->xfers_cap != pe->xfers_cap || e->events_cap != pe->events_cap ||
	    e->part || e->nr_xfers || e->nr_events || e->nr_deferred ||
	    pe->events_reserved)
		return 0;
	for (p = 0; p < pe->nr; p++)
		if (pe->ep[p]->nr_events || pe->ep[p]->nr_deferred)
			return 0;
	/* The same DMA engines at the same places. */
	for (i = 0; i < e->topo->nodes_cap; i++)
		if (e->eps[i].first_dma != e0->eps[i].first_dma ||
		    e->eps[i].nr_dma != e0->eps[i].nr_dma)
			return 0;
	return 1;
}

int icfab_pengine_load(struct icfab_pengine *pe, const struct icfab_engine *e)
{
	const struct icfab_mtopo *m = e->topo;
	icfab_u32 x, n = 0, i, dma;
	unsigned int p;

	if (!pe_matches(pe, e))
		return -ICFAB_ENGINE_EINVAL;
	for (x = e->free_xfer; x != ICFAB_ENGINE_NO_XFER; x = e->xfers[x].next)
		if (x >= pe->xfers_cap || ++n > pe->xfers_cap)
			return -ICFAB_ENGINE_EINVAL;
	if (n != pe->xfers_cap)
		return -ICFAB_ENGINE_EINVAL;
	/* Its head on top. */
	i = n;
	for (x = e->free_xfer; x != ICFAB_ENGINE_NO_XFER; x = e->xfers[x].next)
		pe->free_stack[--i] = x;
	pe->nr_free = n;
	dma = icfab_engine_dma_needed(m);
	for (p = 0; p < pe->nr; p++) {
		struct icfab_engine *q = pe->ep[p];

		for (i = 0; i < m->links_cap; i++) {
			struct icfab_engine_link *ls = &q->links[i];

			*ls = e->links[i];
			/* Not computed: checked against the topology anew. */
			ls->cache_head = 0;
			ls->cache_epoch = 0;
		}
		for (i = 0; i < dma; i++)
			q->dma_free[i] = e->dma_free[i];
		q->now_ps = e->now_ps;
		q->last_ps = e->last_ps;
		q->last_key = e->last_key;
		q->processed = e->processed;
	}
	pe->now_ps = e->now_ps;
	pe->last_ps = e->last_ps;
	pe->last_key = e->last_key;
	pe->processed = e->processed;
	return 0;
}

int icfab_pengine_store(const struct icfab_pengine *pe,
			struct icfab_engine *e)
{
	const struct icfab_mtopo *m = e->topo;
	icfab_u32 i, d;
	int err;

	if (!pe_matches(pe, e))
		return -ICFAB_ENGINE_EINVAL;
	/* The stack as a list, its top the head (free_next is scratch). */
	for (i = 0; i < pe->nr_free; i++)
		pe->free_next[pe->free_stack[i]] =
			i ? pe->free_stack[i - 1] : ICFAB_ENGINE_NO_XFER;
	err = icfab_engine_set_free_list(e, pe->nr_free ?
					 pe->free_stack[pe->nr_free - 1] :
					 ICFAB_ENGINE_NO_XFER, pe->free_next);
	if (err)
		return err;
	for (i = 0; i < m->links_cap; i++) {
		const struct icfab_engine_link *ls = icfab_pengine_link(pe, i);
		struct icfab_engine_link *to = &e->links[i];

		to->next_free_ps = ls->next_free_ps;
		to->bytes = ls->bytes;
		to->segments = ls->segments;
		to->busy_ps = ls->busy_ps;
		to->max_queued_ps = ls->max_queued_ps;
		to->last_key = ls->last_key;
	}
	for (i = 0; i < m->nodes_cap; i++) {
		const struct icfab_engine_ep *ep = &e->eps[i];
		const struct icfab_engine *q = pe->ep[pe->of_node[i]];

		for (d = ep->first_dma; d < ep->first_dma + ep->nr_dma; d++)
			e->dma_free[d] = q->dma_free[d];
	}
	e->now_ps = pe->now_ps;
	e->last_ps = pe->last_ps;
	e->last_key = pe->last_key;
	e->processed = pe->processed;
	return 0;
}
