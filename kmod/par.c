// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: the parallel engine (kmod/model/pengine.c) in the kernel, and
 * its two users: the engine check, a debugfs file per fabric that times
 * an all-to-all over the committed topology on the sequential engine and
 * on the parallel one and says whether every completion and every link's
 * statistics came out the same; and the data path, for a step that
 * data.c (icfab_data_par()) finds safe to run whole: one context
 * submitted it and waits for all of it, so no completion can lead to a
 * submission before the last (icfab_par_step() below).
 *
 * Why not every step: the module stops its engine right after a
 * completion that wakes a context (__icfab_wait_wake()), so that the
 * context, now holding the engine at its new clock, submits in the
 * engine's future; and a completion may itself submit (a FENCE's
 * backlog, a TRIGGER). The parallel engine reports completions only at
 * the end of a window, by when other partitions have processed events
 * after that completion: what the woken context submitted next would
 * then be timed differently from the sequential engine.
 * docs/ARCHITECTURE.md, "The parallel engine in the kernel".
 *
 * The shim (struct icfab_pengine_sys): memory from kvzalloc(); one
 * kthread per partition but the caller's, created with the engine and
 * stopped with it; the barrier around commands sleeps (TASK_IDLE: an
 * idle engine's threads are neither load nor hung tasks); the barrier
 * within a window spins a little and then sleeps on a wait queue, and
 * gives up the CPU when asked to, so that no thread can spin away a CPU
 * the others need, nor trip the soft-lockup detector. Neither barrier
 * can wait for a thread that does not exist: the threads are all made
 * before any is woken, or none is.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "icfab.h"
#include "model/pengine.h"

/*
 * Threads of the parallel engine (1: none but the caller's). Read when an
 * engine check or a data path step starts.
 */
static unsigned int engine_threads = 1;
module_param(engine_threads, uint, 0644);
MODULE_PARM_DESC(engine_threads,
		 "partitions (threads) of the parallel engine, 1-64 (data path steps on large fabrics, debugfs engine_check)");

/* Spins of the window barrier before it sleeps: a window is tens of us. */
#define ICFAB_PAR_SPINS		2000

struct icfab_par_bar {
	atomic_t count;
	atomic_t gen;
	wait_queue_head_t wq;
};

struct icfab_par_worker {
	struct icfab_pengine *pe;
	unsigned int p;
};

struct icfab_par {
	unsigned int nr;
	struct icfab_par_bar cmd, win;
	struct task_struct *threads[ICFAB_PENGINE_MAX];
	struct icfab_par_worker w[ICFAB_PENGINE_MAX];
};

static void icfab_par_bar_init(struct icfab_par_bar *b)
{
	atomic_set(&b->count, 0);
	atomic_set(&b->gen, 0);
	init_waitqueue_head(&b->wq);
}

/*
 * All @n threads meet. The last to come resets the count before it
 * moves the generation on (atomic_inc_return() is fully ordered), so
 * that a thread already at the next barrier counts from zero.
 */
static void icfab_par_bar_wait(struct icfab_par_bar *b, unsigned int n,
			       unsigned int spins)
{
	int gen = atomic_read_acquire(&b->gen);
	unsigned int i;

	if (atomic_inc_return(&b->count) == n) {
		atomic_set(&b->count, 0);
		atomic_inc_return(&b->gen);
		wake_up_all(&b->wq);
		return;
	}
	for (i = 0; i < spins; i++) {
		if (atomic_read_acquire(&b->gen) != gen)
			return;
		cpu_relax();
	}
	wait_event_idle(b->wq, atomic_read_acquire(&b->gen) != gen);
}

static void icfab_par_kvfree(void *p)
{
	kvfree(p);
}

static void *icfab_par_zalloc(icfab_u64 bytes)
{
	if (bytes > SIZE_MAX)
		return NULL;
	return kvzalloc(bytes, GFP_KERNEL_ACCOUNT);
}

static void icfab_par_storage_free(struct icfab_engine_storage *st)
{
	kvfree(st->links);
	kvfree(st->eps);
	kvfree(st->dma_free);
	kvfree(st->xfers);
	kvfree(st->events);
	memset(st, 0, sizeof(*st));
}

static int icfab_par_storage(struct icfab_engine_storage *st,
			     const struct icfab_mtopo *m, icfab_u32 xfers,
			     icfab_u32 events)
{
	memset(st, 0, sizeof(*st));
	st->dma_cap = max_t(u32, icfab_engine_dma_needed(m), 1);
	st->xfers_cap = xfers;
	st->events_cap = events;
	st->links = kvcalloc(max_t(u32, m->links_cap, 1), sizeof(*st->links),
			     GFP_KERNEL);
	st->eps = kvcalloc(max_t(u32, m->nodes_cap, 1), sizeof(*st->eps),
			   GFP_KERNEL);
	st->dma_free = kvcalloc(st->dma_cap, sizeof(*st->dma_free), GFP_KERNEL);
	st->xfers = kvcalloc(max_t(u32, xfers, 1), sizeof(*st->xfers),
			     GFP_KERNEL_ACCOUNT);
	st->events = kvcalloc(max_t(u32, events, 1), sizeof(*st->events),
			      GFP_KERNEL_ACCOUNT);
	if (!st->links || !st->eps || !st->dma_free || !st->xfers ||
	    !st->events) {
		icfab_par_storage_free(st);
		return -ICFAB_PENGINE_ENOMEM;
	}
	return 0;
}

static int icfab_par_thread(void *arg)
{
	struct icfab_par_worker *w = arg;

	icfab_pengine_worker(w->pe, w->p);
	/* Told to quit: wait for kthread_stop(), which is on its way. */
	set_current_state(TASK_IDLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_IDLE);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

static int icfab_par_start(struct icfab_pengine *pe, unsigned int nr)
{
	struct icfab_par *kp = icfab_pengine_priv(pe);
	unsigned int p, made;

	kp->nr = nr;
	icfab_par_bar_init(&kp->cmd);
	icfab_par_bar_init(&kp->win);
	for (made = 1; made < nr; made++) {
		struct task_struct *t;

		kp->w[made] = (struct icfab_par_worker){ .pe = pe, .p = made };
		t = kthread_create(icfab_par_thread, &kp->w[made],
				   "icfab_pe/%u", made);
		if (IS_ERR(t))
			goto err_stop;
		kp->threads[made] = t;
	}
	for (p = 1; p < nr; p++)
		wake_up_process(kp->threads[p]);
	return 0;

err_stop:
	/* Never woken: kthread_stop() has them return before they start. */
	for (p = 1; p < made; p++) {
		kthread_stop(kp->threads[p]);
		kp->threads[p] = NULL;
	}
	return -ICFAB_PENGINE_ENOMEM;
}

/* After the quit command: every worker has left icfab_pengine_worker(). */
static void icfab_par_stop(struct icfab_pengine *pe)
{
	struct icfab_par *kp = icfab_pengine_priv(pe);
	unsigned int p;

	for (p = 1; p < kp->nr; p++) {
		if (kp->threads[p])
			kthread_stop(kp->threads[p]);
		kp->threads[p] = NULL;
	}
}

static void icfab_par_cmd_wait(struct icfab_pengine *pe, unsigned int p)
{
	struct icfab_par *kp = icfab_pengine_priv(pe);

	icfab_par_bar_wait(&kp->cmd, kp->nr, 0);
}

static void icfab_par_win_wait(struct icfab_pengine *pe, unsigned int p)
{
	struct icfab_par *kp = icfab_pengine_priv(pe);

	/* A run is many windows: a CPU others need is theirs between. */
	cond_resched();
	icfab_par_bar_wait(&kp->win, kp->nr, ICFAB_PAR_SPINS);
}

static icfab_u64 icfab_par_ns(void)
{
	return ktime_get_ns();
}

static const struct icfab_pengine_sys icfab_par_sys = {
	.zalloc = icfab_par_zalloc,
	.free = icfab_par_kvfree,
	.storage = icfab_par_storage,
	.storage_free = icfab_par_storage_free,
	.start = icfab_par_start,
	.stop = icfab_par_stop,
	.cmd_wait = icfab_par_cmd_wait,
	.win_wait = icfab_par_win_wait,
	.cpu_ns = icfab_par_ns,
};

/* A parallel engine of @nr partitions on kthreads, or an ERR_PTR. */
static struct icfab_pengine *icfab_par_new(const struct icfab_mtopo *m,
					   u32 segment_size, unsigned int nr,
					   u32 xfers, u32 events)
{
	struct icfab_par *kp = kzalloc(sizeof(*kp), GFP_KERNEL);
	struct icfab_pengine *pe;
	int err;

	if (!kp)
		return ERR_PTR(-ENOMEM);
	pe = icfab_pengine_new(&icfab_par_sys, kp, m, segment_size, nr, xfers,
			       events, &err);
	if (!pe) {
		kfree(kp);
		return ERR_PTR(err);
	}
	return pe;
}

static void icfab_par_free(struct icfab_pengine *pe)
{
	struct icfab_par *kp;

	if (!pe)
		return;
	kp = icfab_pengine_priv(pe);
	icfab_pengine_free(pe);
	kfree(kp);
}

/* ---- the data path's steps (docs/ARCHITECTURE.md) ---- */

/*
 * Endpoints a fabric needs before its data path hands a step to the
 * parallel engine (with engine_threads > 1): below it a window is too
 * short to pay for its two barriers (tools/bench/README.md). Read when
 * a step starts.
 */
static unsigned int engine_par_min_endpoints = 512;
module_param(engine_par_min_endpoints, uint, 0644);
MODULE_PARM_DESC(engine_par_min_endpoints,
		 "endpoints a fabric needs for its data path to use the parallel engine (with engine_threads > 1)");

/* Steps the data path ran on the parallel engine, all fabrics, and
 * steps it had to give back to the sequential engine before they ran
 * (no lookahead, no memory): read-only counters. */
static atomic_long_t icfab_par_steps, icfab_par_declined;

static int icfab_par_count_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(kp->arg));
}

static int icfab_par_count_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops icfab_par_count_ops = {
	.set = icfab_par_count_set,
	.get = icfab_par_count_get,
};
module_param_cb(engine_par_steps, &icfab_par_count_ops, &icfab_par_steps,
		0444);
MODULE_PARM_DESC(engine_par_steps,
		 "steps of the data path run on the parallel engine (read-only)");
module_param_cb(engine_par_declined, &icfab_par_count_ops,
		&icfab_par_declined, 0444);
MODULE_PARM_DESC(engine_par_declined,
		 "steps that qualified but ran sequentially: no lookahead or memory (read-only)");

unsigned int icfab_par_threads(void)
{
	return clamp_t(unsigned int, READ_ONCE(engine_threads), 1,
		       ICFAB_PENGINE_MAX);
}

unsigned int icfab_par_min_endpoints(void)
{
	return max_t(unsigned int, READ_ONCE(engine_par_min_endpoints),
		     ICFAB_PAR_MIN_ENDPOINTS);
}

/*
 * A fabric's parallel engine, kept from step to step (its kthreads
 * sleep between), built for one topology, thread count and pair of
 * capacities (the sequential engine's, which grow): another shape
 * rebuilds it. A shape it could not be built for (no lookahead, no
 * memory) is not tried again until the shape changes.
 */
struct icfab_par_data {
	struct icfab_pengine *pe;
	const struct icfab_mtopo *topo;
	u32 segment_size, xfers_cap, events_cap;
	unsigned int nr;
	bool failed;			/* for this shape */
	struct icfab_pengine_sub *subs;
	u32 *ids;
	u32 cap;			/* of subs and ids */
};

void icfab_par_data_free(struct icfab_par_data *pd)
{
	if (!pd)
		return;
	icfab_par_free(pd->pe);
	kvfree(pd->subs);
	kvfree(pd->ids);
	kfree(pd);
}

/* @pd's engine for @e with @nr partitions, or NULL: not to be used. */
static struct icfab_pengine *icfab_par_engine(struct icfab_par_data *pd,
					      const struct icfab_engine *e,
					      unsigned int nr)
{
	struct icfab_pengine *pe;

	if (pd->topo != e->topo || pd->segment_size != e->segment_size ||
	    pd->xfers_cap != e->xfers_cap || pd->events_cap != e->events_cap ||
	    pd->nr != nr) {
		icfab_par_free(pd->pe);
		pd->pe = NULL;
		pd->failed = false;
		pd->topo = e->topo;
		pd->segment_size = e->segment_size;
		pd->xfers_cap = e->xfers_cap;
		pd->events_cap = e->events_cap;
		pd->nr = nr;
	}
	if (pd->pe || pd->failed)
		return pd->pe;
	pe = icfab_par_new(e->topo, e->segment_size, nr, e->xfers_cap,
			   e->events_cap);
	if (IS_ERR(pe)) {
		pd->failed = true;
		return NULL;
	}
	pd->pe = pe;
	return pe;
}

/* Put the step back into @e as it was submitted: the same ids again. */
static void icfab_par_restore(struct icfab_engine *e,
			      const struct icfab_pengine_sub *subs,
			      const u32 *ids, u32 n)
{
	u32 i, id;

	for (i = 0; i < n; i++) {
		const struct icfab_pengine_sub *s = &subs[i];

		if (WARN_ON_ONCE(icfab_engine_submit(e, s->src, s->dst,
						     s->bytes, s->submit_ps,
						     s->key, &id) ||
				 id != ids[i]))
			return;
	}
}

/*
 * Run the step @ids[0..@n) (in the order submitted), which is all @e
 * holds and none of which has started, to its end on engine_threads
 * partitions, reporting every completion to @complete in the sequential
 * engine's order, then hand the state back to @e. The caller holds the
 * fabric lock and has made sure that no completion of the step can
 * make a submission or let a context act before the last one (so that
 * running it whole changes nothing). Returns 1 when it ran (@e is
 * empty, as after the sequential engine's run), 0 when it did not (@e
 * unchanged: run it sequentially), or a negative errno when the
 * parallel engine failed part way (some completions reported; @e holds
 * nothing and the rest are lost: the caller ends them).
 */
int icfab_par_step(struct icfab_par_data **pdp, struct icfab_engine *e,
		   const u32 *ids, u32 n, icfab_engine_complete_fn complete,
		   void *arg)
{
	struct icfab_par_data *pd = *pdp;
	unsigned int nr = icfab_par_threads();
	struct icfab_pengine *pe;
	icfab_u64 taken = 0;
	u32 i;
	int err;

	if (nr < 2 || !n)
		return 0;
	if (!pd) {
		pd = kzalloc(sizeof(*pd), GFP_KERNEL);
		if (!pd)
			goto declined;
		*pdp = pd;
	}
	pe = icfab_par_engine(pd, e, nr);
	if (!pe)
		goto declined;
	if (n > pd->cap) {
		kvfree(pd->subs);
		kvfree(pd->ids);
		pd->cap = 0;
		pd->subs = kvmalloc_array(n, sizeof(*pd->subs), GFP_KERNEL);
		pd->ids = kvmalloc_array(n, sizeof(*pd->ids), GFP_KERNEL);
		if (!pd->subs || !pd->ids)
			goto declined;
		pd->cap = n;
	}
	for (i = 0; i < n; i++) {
		const struct icfab_engine_xfer *x = &e->xfers[ids[i]];

		pd->subs[i] = (struct icfab_pengine_sub){
			.src = x->src, .dst = x->dst, .bytes = x->bytes,
			.submit_ps = x->submit_ps, .key = x->key,
		};
	}
	if (icfab_engine_unsubmit(e, ids, n))
		return 0;
	if (icfab_pengine_load(pe, e)) {
		icfab_par_restore(e, pd->subs, ids, n);
		goto declined;
	}
	err = icfab_pengine_submit_batch(pe, pd->subs, n, pd->ids, &taken);
	if (!err && taken == n)
		for (i = 0; i < n && pd->ids[i] == ids[i]; i++)
			;
	if (err || taken != n || i != n) {
		/* Adopted in part, or with other ids: not to be run. */
		WARN_ONCE(!err && taken == n, "icfab: the parallel engine numbered a step differently");
		icfab_par_free(pd->pe);
		pd->pe = NULL;
		pd->failed = true;
		icfab_par_restore(e, pd->subs, ids, n);
		goto declined;
	}
	err = icfab_pengine_run_until(pe, ICFAB_ENGINE_NEVER, complete, arg);
	if (err >= 0)
		err = icfab_pengine_store(pe, e);
	if (err < 0) {
		WARN_ONCE(1, "icfab: the parallel engine failed a step: %d\n",
			  err);
		icfab_par_free(pd->pe);
		pd->pe = NULL;
		pd->failed = true;
		return -EIO;
	}
	atomic_long_inc(&icfab_par_steps);
	return 1;

declined:
	atomic_long_inc(&icfab_par_declined);
	return 0;
}

/* ---- the engine check ---- */

struct icfab_check {
	u64 hash;			/* FNV-1a of every completion */
	u64 done, failed;
};

static void icfab_check_mix(u64 *h, u64 v)
{
	int i;

	for (i = 0; i < 8; i++) {
		*h ^= (v >> (8 * i)) & 0xff;
		*h *= 0x100000001b3ULL;
	}
}

static int icfab_check_complete(void *arg, u32 xfer_id,
				const struct icfab_xfer_result *r)
{
	struct icfab_check *c = arg;

	c->done++;
	c->failed += r->status != 0;
	icfab_check_mix(&c->hash, xfer_id);
	icfab_check_mix(&c->hash, r->key);
	icfab_check_mix(&c->hash, r->bytes);
	icfab_check_mix(&c->hash, r->submit_ps);
	icfab_check_mix(&c->hash, r->start_ps);
	icfab_check_mix(&c->hash, r->finish_ps);
	icfab_check_mix(&c->hash, r->queued_ps);
	icfab_check_mix(&c->hash, (u64)(u32)r->status << 32 | r->hops);
	return 0;
}

/* Every link's statistics, from whichever engine holds them. */
static u64 icfab_check_links(const struct icfab_mtopo *m,
			     const struct icfab_engine *e,
			     const struct icfab_pengine *pe)
{
	u64 h = 0xcbf29ce484222325ULL;
	u32 l;

	for (l = 0; l < m->links_cap; l++) {
		const struct icfab_engine_link *ls =
			pe ? icfab_pengine_link(pe, l) : &e->links[l];

		icfab_check_mix(&h, ls->next_free_ps);
		icfab_check_mix(&h, ls->bytes);
		icfab_check_mix(&h, ls->segments);
		icfab_check_mix(&h, ls->busy_ps);
		icfab_check_mix(&h, ls->max_queued_ps);
	}
	return h;
}

/* One all-to-all's shape: pair k is (ep[k % n], ep[(k % n + k / n + 1) % n]). */
struct icfab_check_a2a {
	u32 *ep;
	u32 n;
	u64 bytes;
	u32 batch;
};

static void icfab_check_pair(const struct icfab_check_a2a *a, u64 k,
			     struct icfab_pengine_sub *s, u64 now)
{
	u32 i = (u32)(k % a->n), r = (u32)(k / a->n) + 1;

	*s = (struct icfab_pengine_sub){
		.src = a->ep[i], .dst = a->ep[(i + r) % a->n],
		.bytes = a->bytes, .submit_ps = now,
		.key = (u64)i << 32 | r,
	};
}

/* After everything processed, whatever the keys. */
static u64 icfab_check_next(u64 now, u64 last, int processed)
{
	return processed && now <= last ? last + 1 : now;
}

/*
 * The all-to-all on @e (sequential) or @pe, in batches of a->batch
 * transfers: a batch goes in at once, runs to the end, then the next.
 */
static int icfab_check_run(const struct icfab_check_a2a *a,
			   struct icfab_engine *e, struct icfab_pengine *pe,
			   struct icfab_pengine_sub *subs, u32 *ids,
			   struct icfab_check *c)
{
	u64 total = (u64)a->n * (a->n - 1), sent = 0;
	int err;

	while (sent < total) {
		icfab_u64 now, last, last_key, taken;
		u64 batch, i;
		int processed;

		if (pe) {
			icfab_pengine_now(pe, &now, &last, &last_key,
					  &processed);
		} else {
			now = e->now_ps;
			last = e->last_ps;
			processed = e->processed;
		}
		now = icfab_check_next(now, last, processed);
		batch = min_t(u64, a->batch, total - sent);
		for (i = 0; i < batch; i++)
			icfab_check_pair(a, sent + i, &subs[i], now);
		if (pe) {
			err = icfab_pengine_submit_batch(pe, subs, batch, ids,
							 &taken);
		} else {
			for (taken = 0, err = 0; taken < batch && !err; taken++)
				err = icfab_engine_submit(e, subs[taken].src,
						subs[taken].dst,
						subs[taken].bytes,
						subs[taken].submit_ps,
						subs[taken].key,
						&ids[taken]);
		}
		if (err)
			return -EINVAL;
		sent += taken;
		err = pe ? icfab_pengine_run_until(pe, ICFAB_ENGINE_NEVER,
						   icfab_check_complete, c) :
			   icfab_engine_run_until(e, ICFAB_ENGINE_NEVER,
						  icfab_check_complete, c);
		if (err < 0)
			return -EINVAL;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return c->done == total ? 0 : -EINVAL;
}

/* threads x batch at most: 64 threads of 4096, 4 of 65536. */
#define ICFAB_CHECK_SLOTS	(256 * 1024)

static DEFINE_MUTEX(icfab_check_lock);
static char icfab_check_out[512];

/*
 * The check on @fabric's committed topology: @bytes per pair, @batch
 * transfers at a time, on the sequential engine and on engine_threads
 * partitions. The fabric lock is held throughout: no commit can change
 * the topology under it, and no context can use the fabric meanwhile.
 */
static int icfab_check(struct icfab_fabric *fabric, u64 bytes, u32 batch)
{
	unsigned int threads = clamp_t(unsigned int, READ_ONCE(engine_threads),
				       1, ICFAB_PENGINE_MAX);
	struct icfab_check cs = { .hash = 0xcbf29ce484222325ULL };
	struct icfab_check cp = { .hash = 0xcbf29ce484222325ULL };
	struct icfab_engine_storage st = {};
	struct icfab_pengine *pe = NULL;
	struct icfab_pengine_sub *subs;
	struct icfab_check_a2a a = { .bytes = bytes, .batch = batch };
	const struct icfab_topo *t;
	const struct icfab_mtopo *m;
	struct icfab_engine e;
	u64 ls, lp, t0, t1, t2, t3, events;
	icfab_u64 windows = 0, msgs = 0;
	u32 *ids, i;
	int err;

	mutex_lock(&fabric->lock);
	t = fabric->active;
	m = &t->m;
	a.ep = kvcalloc(max_t(u32, m->nr_nodes, 1), sizeof(*a.ep), GFP_KERNEL);
	subs = kvcalloc(batch, sizeof(*subs), GFP_KERNEL);
	ids = kvcalloc(batch, sizeof(*ids), GFP_KERNEL);
	err = -ENOMEM;
	if (!a.ep || !subs || !ids)
		goto out;
	for (i = 0; i < m->nr_nodes && i < m->nodes_cap; i++)
		if (m->nodes[i].present &&
		    m->nodes[i].kind == ICFAB_MODEL_ENDPOINT)
			a.ep[a.n++] = i;
	err = -EINVAL;
	events = icfab_engine_events_needed(bytes, t->segment_size) * batch;
	if (a.n < 2 || events > ICFAB_ENGINE_EVENTS_MAX)
		goto out;
	/* Every partition keeps every transfer's result slot, twice. */
	err = -E2BIG;
	if ((u64)threads * batch > ICFAB_CHECK_SLOTS)
		goto out;

	err = icfab_par_storage(&st, m, batch, (u32)events);
	if (err)
		goto out;
	err = -EINVAL;
	if (icfab_engine_init(&e, m, t->segment_size, &st))
		goto out;
	t0 = ktime_get_ns();
	err = icfab_check_run(&a, &e, NULL, subs, ids, &cs);
	if (err)
		goto out;
	t1 = ktime_get_ns();
	ls = icfab_check_links(m, &e, NULL);

	pe = icfab_par_new(m, t->segment_size, threads, batch, (u32)events);
	if (IS_ERR(pe)) {
		/* -EDOM: no lookahead between partitions, nothing to check. */
		err = PTR_ERR(pe);
		pe = NULL;
		goto out;
	}
	t2 = ktime_get_ns();
	err = icfab_check_run(&a, NULL, pe, subs, ids, &cp);
	if (err)
		goto out;
	t3 = ktime_get_ns();
	lp = icfab_check_links(m, NULL, pe);
	icfab_pengine_counts(pe, &windows, &msgs);
	scnprintf(icfab_check_out, sizeof(icfab_check_out),
		  "endpoints %u bytes %llu batch %u threads %u lookahead_ps %llu windows %llu messages %llu transfers %llu failed %llu seq_ns %llu par_ns %llu seq %016llx %016llx par %016llx %016llx %s\n",
		  a.n, bytes, batch, threads,
		  (u64)icfab_pengine_lookahead(pe), (u64)windows, (u64)msgs, cs.done, cs.failed, t1 - t0, t3 - t2,
		  cs.hash, ls, cp.hash, lp,
		  cs.hash == cp.hash && ls == lp && cs.done == cp.done ?
		  "identical" : "DIFFERENT");
	err = 0;
out:
	mutex_unlock(&fabric->lock);
	icfab_par_free(pe);
	icfab_par_storage_free(&st);
	kvfree(a.ep);
	kvfree(subs);
	kvfree(ids);
	return err;
}

/* Write "BYTES [BATCH]": run the check; read: its result line. */
static ssize_t icfab_check_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	struct icfab_fabric *fabric = file->private_data;
	unsigned long long bytes;
	unsigned int batch = 4096;
	char buf[64];
	int err;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%llu %u", &bytes, &batch) < 1 || !bytes ||
	    bytes > SZ_16M || !batch || batch > 65536)
		return -EINVAL;
	mutex_lock(&icfab_check_lock);
	icfab_check_out[0] = '\0';
	err = icfab_check(fabric, bytes, batch);
	mutex_unlock(&icfab_check_lock);
	return err ? err : len;
}

static ssize_t icfab_check_read(struct file *file, char __user *ubuf,
				size_t len, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&icfab_check_lock);
	ret = simple_read_from_buffer(ubuf, len, ppos, icfab_check_out,
				      strlen(icfab_check_out));
	mutex_unlock(&icfab_check_lock);
	return ret;
}

const struct file_operations icfab_check_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.read	= icfab_check_read,
	.write	= icfab_check_write,
};
