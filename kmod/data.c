// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: the data path. Contexts attach to endpoints, create queues and
 * submit descriptors; the fabric's engine (kmod/model/engine.c) times
 * them in virtual time; completions wait in the context until it reaps
 * them with ICFAB_IOC_WAIT, or go to io_uring (kmod/uring.c).
 *
 * Virtual time: every attached context has a clock. A descriptor starts
 * at its context's clock; DELAY advances it; WAIT says "I submit nothing
 * more until my next completions" and, once they come, moves the clock to
 * the latest of them. The engine only processes events strictly before
 * the smallest clock of the attached contexts that are not waiting (the
 * safe time), so what a context could still submit can never be overtaken
 * by what was already decided, and results do not depend on how the
 * host schedules the processes. The engine runs in the caller's context,
 * under the fabric lock, whenever the safe time may have moved. Contexts
 * that are free-running, or dead (their owner exited, or their last file
 * descriptor closed with io_uring commands in flight), never hold it.
 *
 * Paced time: the safe time is the wall clock's fabric time instead, and
 * no context holds the engine back; every descriptor starts at the current
 * fabric time, a DELAY completes at once, and a timer runs the engine when
 * the next event is due (see icfab_paced_now()). Fabric time starts at 0
 * with each engine, in both modes.
 *
 * Transfer keys, which break ties at equal times, are built from the
 * queue's endpoint, the queue's place among its context's queues on that
 * endpoint and its sequence number, so that they do not depend on which
 * process opened the device first, nor on whether one context drives
 * many endpoints or each has its own (docs/TIMING.md, "Order").
 *
 * Bytes move when a transfer completes, between the two regions the
 * request holds references on: in the engine's completion callback,
 * under the fabric lock; or, for a transfer of copy_unlocked_min bytes
 * or more, off it, by the copier (icfab_data_copy_fn()), while the
 * engine waits at that completion's instant.
 *
 * FENCE: a queue counts its transfers in the engine. A FENCE with none
 * completes at once; otherwise it and everything after it on the queue
 * wait in the queue's backlog until the count drops to zero, in the
 * completion callback, which completes the fence at the latest finish and
 * submits what follows it no earlier than that. DELAY is not a queue
 * operation (it moves the context's clock) and is never held back.
 *
 * TRIGGER (ICFAB_F_TRIGGER): a receive queue counts the NOTIFY WRITEs that
 * land at its endpoint, per imm (q->trig_count), in the completion
 * callback, in the engine's order. A TRIGGER whose count is not there yet
 * waits at the head of its queue's backlog like a FENCE, and what follows
 * it behind it; the NOTIFY that brings the count releases it at that
 * WRITE's finish, from the same callback (__icfab_trigger_arrived()).
 * Nothing else changes the engine: a triggered transfer is submitted then,
 * no earlier than that finish, as one behind a FENCE is at the fence's.
 * A TRIGGER whose count is already there at submission completes no
 * earlier than the finish of the WRITE that brought it, found among the
 * receive completions not yet reaped (__icfab_trigger_step_ps()).
 *
 * Receive queues (ICFAB_F_RECV_NOTIFY): a WRITE with ICFAB_DESC_F_NOTIFY
 * reserves, at submission, a request of the receiving context on the
 * target endpoint's receive queue (its pending list); when the WRITE
 * finishes, for whatever reason, its result goes there too. Submission
 * fails rather than the completion, so none is ever lost: the receiver
 * going away detaches what was reserved (the WRITE goes on without it),
 * the sender going away does not stop the WRITE, which still lands and
 * posts. A receiver's WAIT first holds the engine back at its clock until
 * everything before it has been processed (step 1, the catch-up), and
 * only then stops holding it (step 2): see uapi/linux/icfab.h for why
 * this makes what it returns deterministic. Every context's completions
 * are kept in finish-time order.
 *
 * While any context is attached, a commit is refused, because the engine
 * works on the committed topology it was built on.
 */
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "icfab.h"
#include "trace.h"

struct icfab_queue {
	u32 endpoint;			/* node id */
	/*
	 * Its place among its context's send queues on @endpoint (the
	 * lowest free), for transfer keys.
	 */
	u32 ep_idx;
	u32 depth;			/* descriptors in flight, at most */
	u32 inflight;			/* submitted, completion not yet reaped;
					 * receive queue: reserved, not reaped */
	u32 seq;			/* of the next transfer */
	u32 outstanding;		/* transfers in the engine */
	/*
	 * WRITEs of its context's list of accepted ones (ctx->accepted),
	 * not yet counted in @inflight: under the context's own lock.
	 */
	u32 accepted;
	u32 id;				/* in its context */
	bool recv;			/* a receive queue (ICFAB_QUEUE_F_RECV) */
	u64 max_finish_ps;		/* ps: latest finish of its transfers */
	u64 fence_ps;			/* ps: nothing starts earlier (FENCE) */
	struct list_head backlog;	/* of struct icfab_req, behind a FENCE */
	/* Receive queue: */
	struct icfab_ctx *ctx;		/* its context */
	/*
	 * Of struct icfab_req (->pnode), reserved by NOTIFY WRITEs still in
	 * flight: an hlist, whose add and delete are a few stores, where a
	 * list's are checking calls under DEBUG_LIST (two a NOTIFY WRITE);
	 * only a close walks it, in any order.
	 */
	struct hlist_head pending;
	bool trig_held;			/* a TRIGGER of its context may wait
					 * for trig_count (cleared lazily) */
	u64 trig_count[ICFAB_TRIGGER_COUNTERS];	/* NOTIFY WRITEs landed, by imm */
	/*
	 * Receive queue, its room for NOTIFY WRITEs of the WRITE path
	 * (icfab_notify_promise(), docs/ARCHITECTURE.md, "NOTIFY WRITEs on
	 * the WRITE path"): @promised, receive completions that accepted
	 * WRITEs hold on it, not yet reservations; counted against @depth
	 * with @inflight, and their sum raised only under @claim_lock, which
	 * __icfab_notify_reserve() takes too (the reaps only lower
	 * @inflight). The start's conversion of a promise to a reservation
	 * (__icfab_notify_keep(), under the fabric lock, where every change
	 * of @inflight is made) leaves the sum as it is: it raises @inflight
	 * first and then lowers @promised, an atomic, with release order,
	 * without @claim_lock: a promise reads @promised with acquire order
	 * and then @inflight, so it sees their sum at most one too high
	 * meanwhile (it refuses, and the fabric lock's path answers), never
	 * too low. @closed: no promise any more (QUEUE_DESTROY under way,
	 * unregistered), under @claim_lock. Freed a grace period after the
	 * last look (@rcu): a path finds it by icfab_recvq() under RCU.
	 */
	spinlock_t claim_lock;
	atomic_t promised;
	bool closed;
	struct rcu_head rcu;
};

/*
 * One submitted descriptor, from submission until its completion is
 * reaped. A request is used by icfab_req_prepare() (the fabric lock's
 * path, ioctl and io_uring), icfab_write_accept() and the DELAYs of
 * icfab_submit_fast() (a context's own lock), __icfab_notify_reserve()
 * and icfab_notify_promise() (a receive completion) and
 * icfab_uring_wait() (a WAIT's result only).
 */
struct icfab_req {
	/*
	 * Zeroed for each use (icfab_req_clear()): what some path reads
	 * before it sets it, or without setting it.
	 */
	struct icfab_region *local;	/* references, or NULL (timing-only) */
	struct icfab_region *remote;	/* only with @local */
	struct icfab_circuit_xfer *cx;	/* a circuit WRITE's, or NULL */
	struct io_uring_cmd *ucmd;	/* io_uring submission, or NULL */
	/*
	 * A NOTIFY WRITE's receive completion, in its receive queue's
	 * pending list until the WRITE finishes; and back from that to the
	 * WRITE. Both NULL otherwise.
	 */
	struct icfab_req *notify;
	struct icfab_req *sender;
	u8 op;
	bool in_engine;
	bool in_backlog;
	bool to_cq;			/* completes into the context's ring;
					 * never with @ucmd */
	u32 xfer;			/* engine transfer id, while in_engine */
	/*
	 * Not zeroed: each user above sets these before anything reads
	 * them. The lists' nodes by adding; @ctx, first; @q, @len and
	 * @cqe's user_tag and queue once the queue is found (what fails
	 * before is freed, which reads neither); @src, @dst and the
	 * offsets for a WRITE or READ, the only ops that read them (a
	 * circuit's @dst is never read); @trig_imm for a TRIGGER, the only
	 * op that reads it, and @u_post for a receive completion, at its
	 * delivery; @cqe's submit_ps at its start, and its result
	 * (status, start_ps, finish_ps, queued_ps) with icfab_req_result()
	 * before it is posted anywhere but the ring, which is written from
	 * the result itself (__icfab_req_ring()). A receive completion
	 * gets its result and submit_ps at delivery. @cqe's reserved words
	 * go to userspace as they are: zeroed with the rest.
	 */
	struct list_head node;		/* in ctx->done, or q->backlog */
	struct list_head unode;		/* in ctx->ureqs (io_uring) */
	struct hlist_node pnode;	/* a receive completion reserved: in
					 * its queue's ->pending */
	struct icfab_ctx *ctx;		/* NULL once the context is gone */
	struct icfab_queue *q;		/* NULL once the context is gone */
	u64 local_off, remote_off;	/* bytes */
	u64 len;			/* bytes */
	u32 src, dst;			/* node ids */
	union {
		u32 trig_imm;		/* TRIGGER: the counter (len: the
					 * count) */
		u64 u_post;		/* receive completion: ctx->u_posts
					 * when io_uring WAITs counted it */
	};
	/*
	 * On its engine's copier list (d->copies): set there, cleared
	 * before it is posted, so never set in a request reused or new.
	 */
	bool copying;
	struct icfab_cqe cqe;
	/*
	 * io_uring: its result, which frees the request once posted. Last,
	 * and not zeroed when a request is reused: the io_uring paths set
	 * every member they read (the ioctl path reads none).
	 */
	struct icfab_uring_result ures;
	struct icfab_req *pool_next;	/* in ctx->pool */
};

/* The engine and its storage, sized for the topology it was built on. */
struct icfab_data {
	struct icfab_engine engine;
	/*
	 * The engine's tracer (trace.c), which engine.tracer points to only
	 * while one of the tracepoints it fires is on: otherwise it would
	 * cost three indirect calls per transfer, each with its result
	 * built, to fire nothing.
	 */
	const struct icfab_engine_tracer *tracer;
	struct icfab_engine_storage st;
	struct icfab_req **xfer_req;	/* by engine transfer id */
	/*
	 * Endpoint -> its receive queue, a table of the topology's
	 * nodes_cap (a live commit keeps it): written under the fabric
	 * lock, read under it or RCU (icfab_recvq()). A table, not an
	 * xarray: xa_load() cost a NOTIFY WRITE's promise on the WRITE
	 * path about 90 instructions, a look here a few.
	 */
	struct icfab_queue __rcu **recvqs;
	u32 recvqs_cap;
	u32 nr_catchup;			/* contexts with ->catchup set */
	const struct icfab_topo *topo;	/* fabric->active (retopo moves it) */
	struct icfab_fabric *fabric;
	/* Paced mode (ICFAB_TIME_PACED), fixed for the engine's life: */
	bool paced;
	u32 dilation;			/* wall ns per fabric ns, >= 1 */
	u64 t0_ns;			/* ns, CLOCK_MONOTONIC: fabric time 0 */
	struct hrtimer timer;		/* the next pending event's deadline */
	struct work_struct work;	/* runs the engine for the timer */
	struct work_struct run_work;	/* runs what a budget left */
	/*
	 * The step: the transfers submitted since the engine last held
	 * none, in order, while @step_ok (docs/ARCHITECTURE.md, "The
	 * parallel engine in the kernel"), which ends when one of them
	 * is not plain (a circuit, a tier port, a spray offset where the
	 * topology sprays, a NOTIFY), when the engine is about to process
	 * an event of the step on its own, or when the log cannot grow.
	 * Kept only on a fabric of at least engine_par_min_endpoints
	 * endpoints while engine_threads > 1, both read when a step
	 * starts.
	 */
	bool step_ok;
	bool sprays;			/* icfab_topo_sprays() of @topo */
	u32 nr_endpoints;		/* of the topology at creation */
	/*
	 * The endpoints of the topology at creation, by node id, and the
	 * segment size (engine.segment_size): a live commit keeps both
	 * (icfab_topo_live_check(), icfab_data_retopo()), and the engine
	 * is rebuilt only once no context is attached. So for as long as
	 * a context is attached they are those of fabric->active, which a
	 * commit swaps and frees under the fabric lock, and need no lock
	 * to be read: the WRITE path checks a peer with them under its
	 * context's own (icfab_submit_fast()).
	 */
	DECLARE_BITMAP(eps, ICFAB_MAX_NODES);
	/*
	 * Room in the engine's tables promised outside the fabric lock:
	 * the credit contexts hold (ctx->credit_events, credit_xfers) and
	 * what their accepted WRITEs, not yet in the engine, took of it
	 * (docs/ARCHITECTURE.md, "The data path and the fabric lock").
	 * The tables always have it beside what they hold
	 * (events_reserved + granted_events <= events_cap, nr_xfers +
	 * granted_xfers <= xfers_cap): a submission under the lock keeps
	 * it (icfab_data_room_beside_credit()), so an accepted WRITE
	 * always fits when it goes in. Under the fabric lock.
	 */
	u64 granted_events;
	u32 granted_xfers;
	u32 step_nr, step_cap;
	u32 *step_ids;			/* [step_cap] */
	struct icfab_par_data *par;	/* the parallel engine, or NULL */
	bool in_par;			/* icfab_par_step() under way */
	/*
	 * Memory transfers that completed in the engine and whose bytes
	 * the copier (@copy_work, icfab_data_copy_fn()) moves off the
	 * fabric lock, then posts, in the engine's order (linked by node);
	 * and the instant the engine stops at meanwhile (@hold_ps, the
	 * first one's, ICFAB_ENGINE_NEVER while there is none), so that
	 * nothing after them in the engine's order is decided, and no
	 * later copy made, before they are posted. Under the fabric lock;
	 * the copier copies with none. Whoever runs it (the work item, or
	 * a WAIT that would otherwise sleep through the copy,
	 * __icfab_wait_sleep()) claims it first (@copy_busy), so one copy
	 * at a time; @copy_here while a WAIT runs the engine and will run
	 * the copier itself before it lets the lock go, so that the work
	 * item is not woken for nothing.
	 */
	struct list_head copies;
	u64 hold_ps;
	bool copy_busy;
	bool copy_here;
	struct work_struct copy_work;
};

static void icfab_ctx_reach_fn(struct work_struct *work);

struct icfab_ctx *icfab_ctx_create(struct icfab_fabric *fabric)
{
	struct icfab_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);

	if (!ctx)
		return NULL;
	ctx->fabric = fabric;
	icfab_regions_ctx_init(&ctx->regions);
	atomic_set(&ctx->uring_holds, 0);
	atomic_set(&ctx->nr_vmas, 0);
	spin_lock_init(&ctx->pool_lock);
	spin_lock_init(&ctx->lock);
	INIT_LIST_HEAD(&ctx->attached_node);
	INIT_LIST_HEAD(&ctx->done);
	INIT_LIST_HEAD(&ctx->ureqs);
	init_waitqueue_head(&ctx->wq);
	INIT_DELAYED_WORK(&ctx->reach_work, icfab_ctx_reach_fn);
	return ctx;
}

static void icfab_data_free(struct icfab_data *d)
{
	if (!d)
		return;
	/* icfab_data_stop() waited for the copier, which empties it. */
	WARN_ON_ONCE(!list_empty(&d->copies));
	kvfree(d->st.links);
	kvfree(d->st.eps);
	kvfree(d->st.dma_free);
	kvfree(d->st.xfers);
	kvfree(d->st.events);
	kvfree(d->xfer_req);
	kvfree(d->step_ids);
	/* Its kthreads stop here, outside the fabric lock. */
	icfab_par_data_free(d->par);
	/* Empty: every receive queue left with its context. */
	kvfree(d->recvqs);
	kfree(d);
}

/*
 * Paced mode. Fabric time is wall time since the engine was created
 * divided by the dilation: now = (ktime_get_ns() - t0) * 1000 / dilation
 * ps. The engine runs up to now, and an hrtimer armed for the wall time
 * of the next pending event runs it again then, so a completion is never
 * released before its finish time has come on the wall clock.
 *
 * The engine runs under fabric->lock, a mutex, which a timer cannot take:
 * the timer only queues d->work, which takes the lock, runs the engine
 * and re-arms the timer. A kthread per engine would do the same with a
 * task to manage; a work item costs nothing while nothing is pending.
 * Both live in struct icfab_data and are cancelled, timer first, by
 * icfab_data_stop() before it is freed; the work item runs the engine only
 * while its data is still fabric->data, so once teardown has taken it off
 * the fabric nothing re-arms the timer.
 *
 * In both modes d->run_work runs what a run of the engine left when it
 * used up its budget (ICFAB_ENGINE_RUN_BUDGET events): icfab_data_advance()
 * queues it rather than holding the lock for millions of events, and
 * icfab_data_stop() cancels it last.
 */
static struct workqueue_struct *icfab_data_wq;
u32 icfab_engine_events_first = ICFAB_ENGINE_EVENTS;
u32 icfab_engine_xfers_first = ICFAB_ENGINE_XFERS;

static bool __icfab_data_run(struct icfab_fabric *fabric);
static void icfab_data_copy_fn(struct work_struct *work);
static void icfab_data_advance(struct icfab_fabric *fabric);

/* Paced fabric time, ps, rounded down (@up: rounded up). */
static u64 icfab_paced_now(const struct icfab_data *d, bool up)
{
	u64 q, frac;
	u32 rem;

	q = div_u64_rem(ktime_get_ns() - d->t0_ns, d->dilation, &rem);
	/* rem < dilation <= ICFAB_MAX_DILATION: no overflow anywhere. */
	frac = (u64)rem * 1000;
	return q * 1000 + (up ? DIV_ROUND_UP_ULL(frac, d->dilation) :
				div_u64(frac, d->dilation));
}

/*
 * Arm the timer for the wall time at which the next pending event is due
 * (rounded up, so it is never early), or stop it when nothing is pending.
 * The fabric lock is held.
 */
static void icfab_data_arm(struct icfab_data *d)
{
	u64 next = icfab_engine_next_ps(&d->engine);
	u32 rem;
	u64 q, ns;

	lockdep_assert_held(&d->fabric->lock);

	if (next == ICFAB_ENGINE_NEVER) {
		hrtimer_try_to_cancel(&d->timer);
		return;
	}
	q = div_u64_rem(next, 1000, &rem);
	/* Beyond what ktime can say (centuries away): never due. */
	if (q >= div_u64(KTIME_MAX - d->t0_ns, d->dilation)) {
		hrtimer_try_to_cancel(&d->timer);
		return;
	}
	ns = q * d->dilation + DIV_ROUND_UP_ULL((u64)rem * d->dilation, 1000);
	hrtimer_start(&d->timer, ns_to_ktime(d->t0_ns + ns), HRTIMER_MODE_ABS);
}

static enum hrtimer_restart icfab_data_timer_fn(struct hrtimer *timer)
{
	struct icfab_data *d = container_of(timer, struct icfab_data, timer);

	queue_work(icfab_data_wq, &d->work);
	return HRTIMER_NORESTART;
}

static void icfab_data_run_rest(struct icfab_data *d)
{
	struct icfab_fabric *fabric = d->fabric;

	mutex_lock(&fabric->lock);
	/* Not once teardown took it off the fabric: nothing may re-arm. */
	while (fabric->data == d && __icfab_data_run(fabric)) {
		/*
		 * A budget done, more to come: the lock is others' between.
		 * Off the CPU, not only unlocked: a waiter spinning on the
		 * owner lost the race to the relock, budget after budget,
		 * for 0.4 s (6.12, TCG), as cond_resched() rarely yields.
		 */
		mutex_unlock(&fabric->lock);
		usleep_range(ICFAB_ENGINE_RUN_GAP_US,
			     2 * ICFAB_ENGINE_RUN_GAP_US);
		mutex_lock(&fabric->lock);
	}
	mutex_unlock(&fabric->lock);
}

static void icfab_data_work_fn(struct work_struct *work)
{
	icfab_data_run_rest(container_of(work, struct icfab_data, work));
}

/*
 * Not on icfab_data_wq: its workers run at high priority, for the paced
 * timer's latency, and would take a CPU from the other fabric users for
 * as long as the engine has events to run.
 */
static void icfab_data_run_fn(struct work_struct *work)
{
	icfab_data_run_rest(container_of(work, struct icfab_data, run_work));
}

/*
 * @d is off the fabric (fabric->data no longer points to it): wait until
 * neither its timer nor its work items can run, so that it can be freed.
 * Timer first: its callback queues the work; the work cannot re-arm it,
 * and neither work item queues the other. The copier is waited for, not
 * cancelled: what is on its list completed in the engine, and its bytes
 * land (a region another context still has may be written) and its
 * request goes; off the fabric it runs no engine, so queues nothing.
 */
static void icfab_data_stop(struct icfab_data *d)
{
	if (!d)
		return;
	if (d->paced)
		hrtimer_cancel(&d->timer);
	cancel_work_sync(&d->work);
	cancel_work_sync(&d->run_work);
	flush_work(&d->copy_work);
}

int icfab_data_init(void)
{
	/* High priority: paced completions are late by its latency. */
	icfab_data_wq = alloc_workqueue("icfab_paced", WQ_HIGHPRI, 0);
	return icfab_data_wq ? 0 : -ENOMEM;
}

void icfab_data_exit(void)
{
	/* Every engine stopped its work when it went; this drains nothing. */
	destroy_workqueue(icfab_data_wq);
}

static bool icfab_is_endpoint(const struct icfab_topo *t, u32 id)
{
	return id < t->m.nr_nodes && t->m.nodes[id].present &&
	       t->m.nodes[id].kind == ICFAB_MODEL_ENDPOINT;
}

/*
 * Is @id an endpoint of @d's fabric? What icfab_is_endpoint() says of
 * fabric->active while @d lives, without the fabric lock (see d->eps).
 */
static __always_inline bool icfab_data_is_endpoint(const struct icfab_data *d,
						   u32 id)
{
	return id < ICFAB_MAX_NODES && test_bit(id, d->eps);
}

/*
 * The receive queue on endpoint @ep, or NULL. Under RCU (a queue is
 * freed a grace period after it leaves the table) or the fabric lock,
 * which every change of the table holds.
 */
static __always_inline struct icfab_queue *icfab_recvq(const struct icfab_data *d,
						       u32 ep)
{
	if (ep >= d->recvqs_cap)
		return NULL;
	return rcu_dereference_check(d->recvqs[ep],
				     lockdep_is_held(&d->fabric->lock));
}

/* Build an engine on the committed topology. */
static struct icfab_data *icfab_data_create(struct icfab_fabric *fabric)
{
	const struct icfab_topo *t = fabric->active;
	const struct icfab_mtopo *m = &t->m;
	struct icfab_data *d;
	u32 i;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return NULL;
	d->topo = t;
	d->fabric = fabric;
	d->recvqs_cap = max_t(u32, m->nodes_cap, 1);
	d->recvqs = kvcalloc(d->recvqs_cap, sizeof(*d->recvqs), GFP_KERNEL);
	d->st.dma_cap = max_t(u32, icfab_engine_dma_needed(m), 1);
	d->st.xfers_cap = clamp_t(u32, READ_ONCE(icfab_engine_xfers_first),
				  1, ICFAB_ENGINE_XFERS_MAX);
	d->st.events_cap = clamp_t(u32, READ_ONCE(icfab_engine_events_first),
				   2, ICFAB_ENGINE_EVENTS_MAX);
	d->st.links = kvcalloc(max_t(u32, m->links_cap, 1),
			       sizeof(*d->st.links), GFP_KERNEL);
	d->st.eps = kvcalloc(max_t(u32, m->nodes_cap, 1), sizeof(*d->st.eps),
			     GFP_KERNEL);
	d->st.dma_free = kvcalloc(d->st.dma_cap, sizeof(*d->st.dma_free),
				  GFP_KERNEL);
	d->st.xfers = kvcalloc(d->st.xfers_cap, sizeof(*d->st.xfers),
			       GFP_KERNEL_ACCOUNT);
	d->st.events = kvcalloc(d->st.events_cap, sizeof(*d->st.events),
				GFP_KERNEL_ACCOUNT);
	d->xfer_req = kvcalloc(d->st.xfers_cap, sizeof(*d->xfer_req),
			       GFP_KERNEL_ACCOUNT);
	if (!d->st.links || !d->st.eps || !d->st.dma_free || !d->st.xfers ||
	    !d->st.events || !d->xfer_req || !d->recvqs)
		goto err_free;
	if (icfab_engine_init(&d->engine, m, t->segment_size, &d->st))
		goto err_free;
	d->engine.run_budget = ICFAB_ENGINE_RUN_BUDGET;
	d->sprays = icfab_topo_sprays(m);
	for (i = 0; i < m->nr_nodes && i < m->nodes_cap; i++) {
		if (!icfab_is_endpoint(t, i))
			continue;
		d->nr_endpoints++;
		if (i < ICFAB_MAX_NODES)
			__set_bit(i, d->eps);
	}
	/* Fabric time restarts at 0 with every engine, in both modes. */
	d->paced = t->time_mode == ICFAB_TIME_PACED;
	d->dilation = max_t(u32, t->dilation, 1);
	d->t0_ns = ktime_get_ns();
	hrtimer_init(&d->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	d->timer.function = icfab_data_timer_fn;
	INIT_WORK(&d->work, icfab_data_work_fn);
	INIT_WORK(&d->run_work, icfab_data_run_fn);
	INIT_LIST_HEAD(&d->copies);
	d->hold_ps = ICFAB_ENGINE_NEVER;
	INIT_WORK(&d->copy_work, icfab_data_copy_fn);
	return d;

err_free:
	icfab_data_free(d);
	return NULL;
}

/*
 * The fabric lock is taken for @ctx (by its own system calls, its kill,
 * its close, a commit): no DELAY or WRITE path of it may run from here
 * until a SUBMIT's chunk or a WAIT sets ->fast again under the fabric
 * lock (__icfab_ctx_fast_update()); one under way ends first. Its
 * credit goes back, and the WRITEs its path accepted go into the
 * engine (or a queue's backlog), in order, before anything else of it
 * is looked at: from here on every request of it is where it would be
 * without that path. Cheap when ->fast is clear already, which only
 * the fabric lock's holder can change.
 */
static void __icfab_ctx_start_accepted(struct icfab_ctx *ctx);
static void __icfab_ctx_fast_update(struct icfab_ctx *ctx);

static void __icfab_ctx_slow(struct icfab_ctx *ctx)
{
	struct icfab_data *d;

	lockdep_assert_held(&ctx->fabric->lock);
	if (!ctx->fast)
		return;
	spin_lock(&ctx->lock);
	WRITE_ONCE(ctx->fast, 0);
	spin_unlock(&ctx->lock);
	/* Its credit back: attached (->fast), so the engine is there. */
	d = ctx->fabric->data;
	d->granted_events -= ctx->credit_events;
	d->granted_xfers -= ctx->credit_xfers;
	ctx->credit_events = 0;
	ctx->credit_xfers = 0;
	/* What its WRITE path accepted goes in before anything else. */
	if (ctx->nr_accepted)
		__icfab_ctx_start_accepted(ctx);
}

/* Does @ctx hold the engine back? */
static bool icfab_ctx_holds(const struct icfab_ctx *ctx)
{
	return !ctx->waiting && !ctx->free_run && !ctx->dead;
}

/*
 * The safe time: the smallest clock of attached contexts that hold the
 * engine back. Records who that is, for the tracepoint and the stats.
 */
static u64 icfab_data_horizon(struct icfab_fabric *fabric,
				  const struct icfab_data *d)
{
	struct icfab_ctx *ctx, *held = NULL;
	/* ICFAB_ENGINE_NEVER but while the copier has copies to post. */
	u64 h = d->hold_ps;

	lockdep_assert_held(&fabric->lock);
	list_for_each_entry(ctx, &fabric->attached, attached_node) {
		/*
		 * A DELAY path may move it meanwhile (icfab_submit_fast()),
		 * forward only, and then runs the engine itself.
		 */
		u64 clock = READ_ONCE(ctx->clock_ps);

		if (icfab_ctx_holds(ctx) && clock < h) {
			h = clock;
			held = ctx;
		}
	}
	fabric->held_pid = held ? held->owner : 0;
	fabric->held_ps = held ? h : 0;
	if ((held ? held->id : 0) != fabric->held_id) {
		fabric->held_id = held ? held->id : 0;
		fabric->held_since_ns = ktime_get_ns();
	}
	return h;
}

/*
 * Before the engine runs or takes a transfer: its tracer is set only while
 * a tracepoint it fires is on (static branches: no cost when off). What it
 * reports does not depend on it, so turning one on mid-flight is no
 * different from before: the tracepoint fires from then on.
 */
static __always_inline void icfab_data_trace_sync(struct icfab_data *d)
{
	d->engine.tracer = trace_icfab_submit_enabled() ||
			   trace_icfab_link_xmit_enabled() ||
			   trace_icfab_complete_enabled() ? d->tracer : NULL;
}

/*
 * The fabric lock is held, or @ctx's own on its DELAY path (->fast).
 */
#define icfab_assert_ctx_locked(ctx)					\
	lockdep_assert(lockdep_is_held(&(ctx)->fabric->lock) ||		\
		       lockdep_is_held(&(ctx)->lock))

/*
 * Timing-only descriptors hold nothing: test here rather than make three
 * calls, twice per descriptor, that find NULL.
 */
static void icfab_req_put_regions(struct icfab_req *req)
{
	if (req->local) {
		icfab_region_put(req->local);
		req->local = NULL;
	}
	if (req->remote) {
		icfab_region_put(req->remote);
		req->remote = NULL;
	}
	if (req->cx) {
		icfab_circuit_xfer_put(req->cx);
		req->cx = NULL;
	}
}

/*
 * A request from the pool made fit for use: what struct icfab_req says
 * must be zeroed, nine words (all 208 bytes before its io_uring result
 * were, by `rep stosq`, 26 steps a request under TCG's count, a DELAY's
 * too).
 */
static __always_inline void icfab_req_clear(struct icfab_req *req)
{
	/* Stores, not memset(): that is `rep stosq` again, for 7 words. */
	req->local = NULL;
	req->remote = NULL;
	req->cx = NULL;
	req->ucmd = NULL;
	req->notify = NULL;
	req->sender = NULL;
	req->op = 0;
	req->in_engine = false;
	req->in_backlog = false;
	req->to_cq = false;
	req->xfer = 0;
	req->cqe.reserved[0] = 0;
	req->cqe.reserved[1] = 0;
}

/*
 * @n requests fit for use (icfab_req_clear()), into @reqs: what the
 * context's pool has, under one lock, the rest zeroed from the slab.
 * Returns how many it got: fewer than @n only when memory ran out.
 */
static u32 icfab_req_alloc_many(struct icfab_ctx *ctx, struct icfab_req **reqs,
				u32 n)
{
	struct icfab_req *req;
	u32 i, from_pool;

	spin_lock(&ctx->pool_lock);
	/* The pool's head in a register, not stored back at each. */
	req = ctx->pool;
	for (i = 0; i < n && req; i++) {
		reqs[i] = req;
		req = req->pool_next;
	}
	ctx->pool = req;
	ctx->nr_pool -= i;
	spin_unlock(&ctx->pool_lock);
	from_pool = i;
	for (i = 0; i < from_pool; i++)
		icfab_req_clear(reqs[i]);
	for (; i < n; i++) {
		reqs[i] = kzalloc(sizeof(*reqs[i]), GFP_KERNEL_ACCOUNT);
		if (!reqs[i])
			break;
	}
	return i;
}

/* One request, as icfab_req_alloc_many() gives them, or NULL. */
static struct icfab_req *icfab_req_alloc(struct icfab_ctx *ctx)
{
	struct icfab_req *req;

	return icfab_req_alloc_many(ctx, &req, 1) ? req : NULL;
}

/*
 * Up to @nr requests of @ctx's pool under one pool_lock, chained by
 * pool_next, not made fit for use (icfab_req_clear()): NULL when the pool
 * is empty.
 */
static struct icfab_req *icfab_pool_take(struct icfab_ctx *ctx, u32 nr)
{
	struct icfab_req *first, *req, *last = NULL;
	u32 i;

	if (!nr)
		return NULL;
	spin_lock(&ctx->pool_lock);
	first = req = ctx->pool;
	for (i = 0; i < nr && req; i++) {
		last = req;
		req = req->pool_next;
	}
	ctx->pool = req;
	ctx->nr_pool -= i;
	spin_unlock(&ctx->pool_lock);
	if (!last)
		return NULL;
	last->pool_next = NULL;
	return first;
}

/*
 * The requests chained from @first by pool_next (icfab_pool_take()'s,
 * not used) back to @ctx's pool under one pool_lock, or to the slab when
 * it has no room for them all.
 */
static void icfab_pool_give(struct icfab_ctx *ctx, struct icfab_req *first)
{
	struct icfab_req *last = first, *next;
	u32 n = 1;

	while (last->pool_next) {
		last = last->pool_next;
		n++;
	}
	spin_lock(&ctx->pool_lock);
	if (ctx->nr_pool + n <= ICFAB_REQ_POOL) {
		last->pool_next = ctx->pool;
		ctx->pool = first;
		ctx->nr_pool += n;
		first = NULL;
	}
	spin_unlock(&ctx->pool_lock);
	for (; first; first = next) {
		next = first->pool_next;
		kfree(first);
	}
}

/* Back to @ctx's pool, or to the slab when there is no context. */
static void icfab_req_recycle(struct icfab_ctx *ctx, struct icfab_req *req)
{
	if (ctx) {
		spin_lock(&ctx->pool_lock);
		if (ctx->nr_pool < ICFAB_REQ_POOL) {
			req->pool_next = ctx->pool;
			ctx->pool = req;
			ctx->nr_pool++;
			spin_unlock(&ctx->pool_lock);
			return;
		}
		spin_unlock(&ctx->pool_lock);
	}
	kfree(req);
}

/* Spent requests a context gathers before they go back to its pool. */
#define ICFAB_SPENT_BATCH	64

/*
 * @ctx's spent requests back to its pool under one lock; what the pool
 * has no room for (at most ICFAB_SPENT_BATCH) to the slab. The fabric
 * lock is held, or the context's own (->fast).
 */
static void __icfab_spent_flush(struct icfab_ctx *ctx)
{
	struct icfab_req *req = ctx->spent, *next;
	u32 n = ctx->nr_spent;

	icfab_assert_ctx_locked(ctx);
	if (!req)
		return;
	spin_lock(&ctx->pool_lock);
	if (ctx->nr_pool + n <= ICFAB_REQ_POOL) {
		ctx->spent_last->pool_next = ctx->pool;
		ctx->pool = req;
		ctx->nr_pool += n;
		req = NULL;
	}
	spin_unlock(&ctx->pool_lock);
	ctx->spent = NULL;
	ctx->spent_last = NULL;
	ctx->nr_spent = 0;
	for (; req; req = next) {
		next = req->pool_next;
		icfab_req_recycle(ctx, req);
	}
}

/*
 * A request whose completion is in the ring: onto @ctx's spent stack,
 * which goes back to the pool a batch at a time (at the end of a
 * SUBMIT's chunk, or when it is full). The fabric lock is held, or the
 * context's own (->fast).
 */
static void __icfab_req_spend(struct icfab_ctx *ctx, struct icfab_req *req)
{
	icfab_assert_ctx_locked(ctx);
	req->pool_next = ctx->spent;
	if (!ctx->spent)
		ctx->spent_last = req;
	ctx->spent = req;
	if (++ctx->nr_spent >= ICFAB_SPENT_BATCH)
		__icfab_spent_flush(ctx);
}

/* Requests freed between two chances to reschedule. */
#define ICFAB_FREE_BATCH	1024

/*
 * The requests on @reqs (linked by node, their regions put; the list is
 * left as it is) back to @ctx's pool under one lock, the rest to the
 * slab: a WAIT reaps a batch.
 */
static void icfab_req_recycle_list(struct icfab_ctx *ctx,
				   struct list_head *reqs)
{
	struct icfab_req *req, *tmp, *first = NULL, *last = NULL;
	u32 n = 0;

	/* Chained first, outside the lock; most batches fit. */
	list_for_each_entry(req, reqs, node) {
		req->pool_next = first;
		first = req;
		if (!last)
			last = req;
		n++;
	}
	if (!first)
		return;
	spin_lock(&ctx->pool_lock);
	if (ctx->nr_pool + n <= ICFAB_REQ_POOL) {
		last->pool_next = ctx->pool;
		ctx->pool = first;
		ctx->nr_pool += n;
		spin_unlock(&ctx->pool_lock);
		return;
	}
	spin_unlock(&ctx->pool_lock);
	list_for_each_entry_safe(req, tmp, reqs, node) {
		icfab_req_recycle(ctx, req);
		if (!(++n % ICFAB_FREE_BATCH))
			cond_resched();
	}
}

/*
 * A NOTIFY WRITE that never started (refused at submission) takes back
 * the receive completion it reserved. The fabric lock is held.
 */
static void __icfab_notify_drop(struct icfab_req *req)
{
	struct icfab_req *n = req->notify;

	if (!n)
		return;
	req->notify = NULL;
	hlist_del(&n->pnode);
	/* Read under claim_lock by the WRITE path: only lowered here. */
	WRITE_ONCE(n->q->inflight, n->q->inflight - 1);
	icfab_req_recycle(n->ctx, n);
}

static void icfab_req_free(struct icfab_req *req)
{
	__icfab_notify_drop(req);
	icfab_req_put_regions(req);
	icfab_req_recycle(req->ctx, req);
}

/* uring.c: an io_uring request's result was posted; the request goes. */
static void icfab_req_uring_release(struct icfab_uring_result *ures)
{
	struct icfab_req *req = container_of(ures, struct icfab_req, ures);

	/* Its command still holds the file, so the context is there. */
	icfab_req_recycle(req->ctx, req);
}

/* Hand an io_uring command's result to its task; the fabric lock is held. */
static void __icfab_uring_post(struct io_uring_cmd *cmd,
			       struct icfab_uring_result *ures, s32 res,
			       u64 res2)
{
	ures->res = res;
	ures->res2 = res2;
	icfab_uring_post(cmd, ures);
}

/*
 * The pending io_uring WAIT has what it needs: it completes with every
 * uncounted completion, and the context holds the engine again from its
 * new clock. The fabric lock is held.
 */
static void __icfab_uwait_post(struct icfab_ctx *ctx)
{
	u32 n = ctx->u_uncounted;

	lockdep_assert_held(&ctx->fabric->lock);

	ctx->waiting = false;
	ctx->clock_ps = max(ctx->clock_ps, ctx->u_max_finish_ps);
	ctx->u_uncounted = 0;
	ctx->u_max_finish_ps = 0;
	ctx->u_posts++;
	__icfab_uring_post(ctx->uwait, ctx->uwait_res, n, ctx->clock_ps);
	ctx->uwait = NULL;
	ctx->uwait_res = NULL;
}

/*
 * One more completion for io_uring WAITs to count. Returns 1 when it
 * completed the pending one (not while a receiver's is in its step 1).
 * Inline in __icfab_notify_deliver(), where every receive completion
 * comes through; a call elsewhere (__icfab_uring_count()).
 */
static __always_inline int ___icfab_uring_count(struct icfab_ctx *ctx,
						u64 finish)
{
	lockdep_assert_held(&ctx->fabric->lock);

	ctx->u_uncounted++;
	ctx->u_max_finish_ps = max(ctx->u_max_finish_ps, finish);
	if (ctx->uwait && !ctx->catchup &&
	    ctx->u_uncounted >= ctx->uwait_min) {
		__icfab_uwait_post(ctx);
		return 1;
	}
	return 0;
}

static int __icfab_uring_count(struct icfab_ctx *ctx, u64 finish)
{
	return ___icfab_uring_count(ctx, finish);
}

/*
 * Completions the WAIT under way has: on the done list, and for an
 * ICFAB_IOC_CQ_WAIT also in the ring. The fabric lock is held.
 */
static u32 __icfab_wait_have(const struct icfab_ctx *ctx)
{
	u32 n = ctx->nr_done;

	if (ctx->cq_wait)
		n += icfab_cq_ready(ctx->cq);
	return n;
}

/*
 * A completion that finishes at @finish came for the ioctl WAIT: it
 * wakes if this is the one it needed. Returns 1 when it woke, holding
 * the engine back again from this instant. The fabric lock is held.
 */
static int __icfab_wait_wake(struct icfab_ctx *ctx, u64 finish)
{
	if (!ctx->uwait && __icfab_wait_have(ctx) >= ctx->wait_min) {
		ctx->clock_ps = max(ctx->clock_ps, finish);
		WRITE_ONCE(ctx->waiting, false);
		wake_up(&ctx->wq);
		return 1;
	}
	return 0;
}

/*
 * Inline, the test of what nearly every completion finds: no WAIT under
 * way (a SUBMIT's own DELAYs and ring completions come while it runs).
 */
static __always_inline int __icfab_wait_check(struct icfab_ctx *ctx,
					      u64 finish)
{
	return ctx->waiting ? __icfab_wait_wake(ctx, finish) : 0;
}

/*
 * A completion for ICFAB_IOC_WAIT: into the done list in finish-time
 * order, after those that finish at the same instant (the engine hands
 * them over in its own order, so a tie keeps it), and the context's WAIT
 * wakes if this is the one it needed. Returns 1 when it woke, holding the
 * engine back again from this instant.
 */
static __always_inline int __icfab_done_add(struct icfab_ctx *ctx,
					    struct icfab_req *req)
{
	struct icfab_req *pos;

	icfab_assert_ctx_locked(ctx);
	/* From the tail: nearly every completion is the latest. */
	list_for_each_entry_reverse(pos, &ctx->done, node)
		if (pos->cqe.finish_ps <= req->cqe.finish_ps)
			break;
	list_add(&req->node, &pos->node);
	WRITE_ONCE(ctx->nr_done, ctx->nr_done + 1);
	return __icfab_wait_check(ctx, req->cqe.finish_ps);
}

static int __icfab_trigger_arrived(struct icfab_data *d,
				   struct icfab_queue *rq, u32 imm, u64 finish);

/* A request's result, into the completion it will be given. */
static __always_inline void icfab_req_result(struct icfab_req *req,
					     int status, u64 start,
					     u64 finish, u64 queued)
{
	req->cqe.status = status;
	req->cqe.start_ps = start;
	req->cqe.finish_ps = finish;
	req->cqe.queued_ps = queued;
}

/* __icfab_notify_post() when there is a receive completion. */
static int __icfab_notify_deliver(struct icfab_req *req, int status,
				  u64 start, u64 finish, u64 queued)
{
	struct icfab_req *n = req->notify;
	struct icfab_ctx *rctx;
	int woke;

	req->notify = NULL;
	n->sender = NULL;
	hlist_del(&n->pnode);
	icfab_req_result(n, status, start, finish, queued);
	n->cqe.submit_ps = req->cqe.submit_ps;
	rctx = n->ctx;
	/* Landed: counted before anything it releases is submitted. */
	if (!n->cqe.status)
		woke = __icfab_trigger_arrived(rctx->fabric->data, n->q,
					       (u32)n->cqe.user_tag,
					       n->cqe.finish_ps);
	else
		woke = 0;
	woke |= __icfab_done_add(rctx, n);
	/* Counted until an io_uring WAIT posts, or an ioctl WAIT reaps it. */
	n->u_post = rctx->u_posts;
	return woke | ___icfab_uring_count(rctx, n->cqe.finish_ps);
}

/*
 * A NOTIFY WRITE finished with this result (its submission time in
 * @req's cqe): its receive completion goes to the receiver, whose WAITs,
 * ioctl and io_uring, both count it, and whose TRIGGERs it may release.
 * Returns 1 when that woke the receiver. Inline: nearly every request
 * has none, and finding that took a call.
 */
static __always_inline int __icfab_notify_post(struct icfab_req *req,
					       int status, u64 start,
					       u64 finish, u64 queued)
{
	return req->notify ? __icfab_notify_deliver(req, status, start, finish,
						    queued) : 0;
}

/*
 * @req's completion, with its result, written in the ring's slot @slot
 * (icfab_cq_slot()) and published: __icfab_req_ring()'s, and the DELAY
 * path's, which counts nothing in flight (icfab_submit_fast()).
 */
static __always_inline void __icfab_cq_fill(struct icfab_ctx *ctx,
					    const struct icfab_req *req,
					    struct icfab_cqe *slot, int status,
					    u64 start, u64 finish, u64 queued)
{
	slot->user_tag = req->cqe.user_tag;
	slot->status = status;
	slot->queue = req->cqe.queue;
	slot->submit_ps = req->cqe.submit_ps;
	slot->start_ps = start;
	slot->finish_ps = finish;
	slot->queued_ps = queued;
	slot->reserved[0] = 0;
	slot->reserved[1] = 0;
	icfab_cq_publish(ctx->cq);
}

/*
 * A request of @ctx that completes into its ring, with its result, in
 * the ring's slot @slot (icfab_cq_slot()): the completion is written
 * there from the request's own fields and the result, and is not built
 * in the request and copied (a 64-byte copy is `rep movsl`, 16 steps
 * under TCG's count). The request is spent. Returns 1 when that woke
 * @ctx. The fabric lock is held, or the context's own (->fast).
 */
static __always_inline int __icfab_req_ring(struct icfab_ctx *ctx,
					    struct icfab_req *req,
					    struct icfab_cqe *slot, int status,
					    u64 start, u64 finish, u64 queued)
{
	struct icfab_queue *q = req->q;

	__icfab_cq_fill(ctx, req, slot, status, start, finish, queued);
	WRITE_ONCE(ctx->nr_inflight, ctx->nr_inflight - 1);
	WRITE_ONCE(q->inflight, q->inflight - 1);
	__icfab_req_spend(ctx, req);
	return __icfab_wait_check(ctx, finish);
}

/*
 * The second half of __icfab_req_finish(), for a request of @ctx that
 * holds nothing (no region, no circuit, no receive completion), with its
 * result: into the ring, to its io_uring command, or onto the done list
 * (in its cqe for those two). Returns 1 when that woke @ctx. Inline: a
 * DELAY, which never holds anything, ends here straight from its
 * submission. The fabric lock is held, or the context's own (->fast).
 */
static __always_inline int __icfab_req_post(struct icfab_ctx *ctx,
					    struct icfab_req *req, int status,
					    u64 start, u64 finish, u64 queued)
{
	struct icfab_queue *q = req->q;
	struct icfab_cqe *slot;
	int woke;

	/*
	 * Into the ring (never an io_uring command's: to_cq), reaped
	 * there and then; a full ring leaves it to the done list (counted
	 * as an overflow), so none is lost.
	 */
	slot = req->to_cq ? icfab_cq_slot(ctx->cq) : NULL;
	if (slot)
		return __icfab_req_ring(ctx, req, slot, status, start, finish,
					queued);
	icfab_req_result(req, status, start, finish, queued);
	if (req->ucmd) {
		list_del(&req->unode);
		WRITE_ONCE(q->inflight, q->inflight - 1);
		WRITE_ONCE(ctx->u_inflight, ctx->u_inflight - 1);
		/* Only what the task work writes out (no cqe_addr: nothing). */
		if (req->ures.cqe_addr)
			req->ures.cqe = req->cqe;
		/* The task work frees it; nothing else refers to it now. */
		__icfab_uring_post(req->ucmd, &req->ures, status, finish);
		return __icfab_uring_count(ctx, finish);
	}
	woke = __icfab_done_add(ctx, req);
	/*
	 * Counted done before it stops counting in flight: a reader
	 * outside the fabric lock (icfab_ctx_descs_room_unlocked()) sees
	 * their sum too large for a moment, never too small.
	 */
	smp_wmb();
	WRITE_ONCE(ctx->nr_inflight, ctx->nr_inflight - 1);
	return woke;
}

/*
 * A descriptor is complete: record its result and give it to whoever
 * waits for it, and its receive completion to its receiver. Returns 1
 * when that woke a context, which then holds the engine back again from
 * this instant. The fabric lock is held.
 */
static int __icfab_req_finish(struct icfab_req *req, int status, u64 start,
			      u64 finish, u64 queued)
{
	struct icfab_ctx *ctx = req->ctx;
	int woke;

	icfab_req_put_regions(req);
	/* Its bytes have landed, whoever is left to be told. */
	woke = __icfab_notify_post(req, status, start, finish, queued);

	if (!ctx) {
		/* Its context closed while it was in flight. */
		icfab_req_free(req);
		return woke;
	}
	return woke | __icfab_req_post(ctx, req, status, start, finish,
				       queued);
}

/*
 * Twice the transfer slots: the engine's table and the requests by
 * transfer id (circuits grow their trees by transfer id as they see the
 * engine's table grow, icfab_circuit_xfer_submit()). False at
 * ICFAB_ENGINE_XFERS_MAX or when no memory can be had.
 */
static bool icfab_data_grow_xfers(struct icfab_data *d)
{
	struct icfab_engine *e = &d->engine;
	struct icfab_engine_xfer *xfers;
	struct icfab_req **reqs;
	u32 cap;

	if (e->xfers_cap > ICFAB_ENGINE_XFERS_MAX / 2)
		return false;
	cap = e->xfers_cap * 2;
	xfers = kvmalloc_array(cap, sizeof(*xfers), GFP_KERNEL_ACCOUNT);
	reqs = kvcalloc(cap, sizeof(*reqs), GFP_KERNEL_ACCOUNT);
	if (!xfers || !reqs ||
	    icfab_engine_grow(e, xfers, cap, e->events, e->events_cap)) {
		kvfree(xfers);
		kvfree(reqs);
		return false;
	}
	memcpy(reqs, d->xfer_req, d->st.xfers_cap * sizeof(*reqs));
	kvfree(d->xfer_req);
	d->xfer_req = reqs;
	kvfree(d->st.xfers);
	d->st.xfers = xfers;
	d->st.xfers_cap = cap;
	return true;
}

/*
 * Give the engine room for a transfer needing @need events (0: not
 * known, a circuit's; then twice the room), so that a full event or
 * transfer table costs memory and a copy, never emulated time
 * (docs/TIMING.md, "Capacity"). False when no more memory can be had or
 * the tables are at their largest: the submission is pushed back then.
 * The fabric lock is held.
 */
static bool icfab_data_grow(struct icfab_data *d, u64 need)
{
	struct icfab_engine *e = &d->engine;
	struct icfab_engine_event *events;
	u64 room;
	u32 cap;
	int need_xfer;

	room = icfab_engine_room_needed(e, need ? need : 1, &need_xfer);
	if (need_xfer)
		return icfab_data_grow_xfers(d);
	if (need && !room)
		return false;
	if (!need)
		room = (u64)e->events_cap + 1;
	for (cap = e->events_cap; cap < room; cap *= 2)
		if (cap > ICFAB_ENGINE_EVENTS_MAX / 2)
			return false;
	events = kvmalloc_array(cap, sizeof(*events), GFP_KERNEL_ACCOUNT);
	if (!events)
		return false;
	if (icfab_engine_grow(e, e->xfers, e->xfers_cap, events, cap)) {
		kvfree(events);
		return false;
	}
	kvfree(d->st.events);
	d->st.events = events;
	d->st.events_cap = cap;
	return true;
}

/*
 * The tier port a transfer reads through (@from: its source side) or
 * writes through, or ICFAB_MODEL_NO_LINK: its region's on that side, if
 * the region is in a tier (a timing-only transfer has none).
 */
static u32 icfab_req_tier(const struct icfab_req *req, bool from)
{
	const struct icfab_region *r;

	if (!req->local)
		return ICFAB_MODEL_NO_LINK;
	r = from == (req->op == ICFAB_OP_WRITE) ? req->local : req->remote;
	return icfab_region_tier_link(r);
}

/*
 * Transfer @req went into the engine: the first of a step when the
 * engine held nothing else, or the next of the step under way. The
 * fabric lock is held.
 */
static noinline void icfab_step_note(struct icfab_data *d,
				     struct icfab_req *req, u64 spray_off)
{
	u32 *ids;

	if (d->engine.nr_xfers == 1) {
		d->step_nr = 0;
		d->step_ok = !d->paced && icfab_par_threads() > 1 &&
			     d->nr_endpoints >= icfab_par_min_endpoints();
	}
	if (!d->step_ok)
		return;
	if (req->cx || req->notify || icfab_req_tier(req, true) !=
	    ICFAB_MODEL_NO_LINK || icfab_req_tier(req, false) !=
	    ICFAB_MODEL_NO_LINK ||
	    (spray_off >= d->engine.segment_size && d->sprays) ||
	    d->step_nr != d->engine.nr_xfers - 1) {
		d->step_ok = false;
		return;
	}
	if (d->step_nr == d->step_cap) {
		u32 cap = max_t(u32, 2 * d->step_cap, 1024);

		ids = kvmalloc_array(cap, sizeof(*ids), GFP_KERNEL);
		if (!ids) {
			d->step_ok = false;
			return;
		}
		if (d->step_nr)
			memcpy(ids, d->step_ids, d->step_nr * sizeof(*ids));
		kvfree(d->step_ids);
		d->step_ids = ids;
		d->step_cap = cap;
	}
	d->step_ids[d->step_nr++] = req->xfer;
}

/*
 * Credit back from every context that holds some: the room it stood for
 * is the tables' again, but for what accepted WRITEs took of it. A
 * context holds credit only while its ->fast has ICFAB_CTX_FAST_WRITE,
 * which only the fabric lock's holder sets or clears; its own lock
 * keeps its WRITE path out meanwhile. The fabric lock is held.
 */
static void icfab_data_revoke_credit(struct icfab_data *d)
{
	struct icfab_ctx *ctx;

	lockdep_assert_held(&d->fabric->lock);
	list_for_each_entry(ctx, &d->fabric->attached, attached_node) {
		if (!(ctx->fast & ICFAB_CTX_FAST_WRITE))
			continue;
		spin_lock(&ctx->lock);
		d->granted_events -= ctx->credit_events;
		d->granted_xfers -= ctx->credit_xfers;
		ctx->credit_events = 0;
		ctx->credit_xfers = 0;
		spin_unlock(&ctx->lock);
	}
}

/*
 * A submission under the fabric lock while room is promised (granted):
 * @req must fit beside it, so that what was promised still fits. Credit
 * not yet used goes back first, and only then do the tables grow: they
 * never grow for room nobody has used, so they hold at most what the
 * engine would without the WRITE path (what is in it, and what accepted
 * WRITEs took, each of which would be in it). What accepted WRITEs took
 * stays theirs: those are, for the engine's room, as if they were in it
 * already. 0, or -EAGAIN (-E2BIG: a circuit's tree that no table holds)
 * as icfab_xfer_submit() would answer for a full engine.
 */
static noinline int icfab_data_room_beside_credit(struct icfab_data *d,
						  const struct icfab_req *req)
{
	struct icfab_engine *e = &d->engine;
	bool revoked = false;
	u64 need;

	need = req->cx ? icfab_circuit_xfer_events(req->cx, req->len,
						   e->segment_size) :
			 icfab_engine_events_needed(req->len, e->segment_size);
	if (need > ICFAB_ENGINE_EVENTS_MAX)
		return req->cx ? -E2BIG : -EAGAIN;
	for (;;) {
		bool xfers = e->nr_xfers + d->granted_xfers >= e->xfers_cap;

		if (!xfers && e->events_reserved + d->granted_events + need <=
		    e->events_cap)
			return 0;
		/* Nothing promised: the engine's own answer, as ever. */
		if (!d->granted_xfers)
			return 0;
		if (!revoked) {
			icfab_data_revoke_credit(d);
			revoked = true;
			continue;
		}
		if (xfers ? !icfab_data_grow_xfers(d) :
			    !icfab_data_grow(d, d->granted_events + need))
			return -EAGAIN;
	}
}

/*
 * Put a transfer into the engine, starting no earlier than @at. An
 * @accepted one is a WRITE or READ the WRITE path accepted, whose kind
 * icfab_write_accept() and icfab_write_accept_memory() fixed: a
 * timing-only WRITE or READ, or a WRITE or READ between regions of plain
 * memory, so no circuit and no tier port on either side; its spray
 * offset by its op, as any's; its caller
 * syncs the tracer once for the chain (__icfab_ctx_start_accepted()).
 * A constant at each call: the same steps, in the same order, with the
 * tests that cannot fail compiled out.
 */
static __always_inline int icfab_xfer_submit(struct icfab_data *d,
					      struct icfab_queue *q,
					      struct icfab_req *req, u64 at,
					      const bool accepted)
{
	struct icfab_engine *e = &d->engine;
	u64 key, spray_off;
	u32 xfer;
	int err;

	/*
	 * Ordered as (endpoint, place on it, sequence), which names a rank's
	 * transfer alike whether its context drives one endpoint or many:
	 * node ids are below 2^13 and queue ids below 2^12 (ICFAB_MAX_NODES,
	 * ICFAB_MAX_QUEUES), and bit 63 is the engine's.
	 */
	BUILD_BUG_ON(ICFAB_MAX_NODES > 1U << 13 || ICFAB_MAX_QUEUES > 1U << 12);
	key = (u64)q->endpoint << 44 | (u64)q->ep_idx << 32 | q->seq;
	/*
	 * The engine has decided everything before the last event it
	 * processed; a submission at that very instant must sort after it.
	 * Its first events sort after every event of that instant in flight
	 * (ICFAB_ENGINE_KEY_LATE), which is all a context woken there by a
	 * completion can have seen processed: it starts then, in the same
	 * place in the order however far the engine had got. Only after a
	 * transfer submitted at that instant with a larger key has started
	 * (a context woken by one that completes at its start, or whose
	 * clock moved to the engine's) does it start one ps later:
	 * deterministic, since what was processed at that instant is.
	 */
	at = icfab_engine_submit_at(e, at, key);

	/* Room promised outside the lock stays promised. */
	if (unlikely(d->granted_xfers)) {
		err = icfab_data_room_beside_credit(d, req);
		if (err)
			return err;
	}
	if (!accepted)
		icfab_data_trace_sync(d);
	do {
		if (accepted)
			err = icfab_engine_submit(e, req->src, req->dst,
						  req->len, at, key, &xfer);
		else if (req->cx)
			err = icfab_circuit_xfer_submit(d->fabric, e, req->cx,
							req->src, req->len, at,
							key, &xfer);
		else
			err = icfab_engine_submit_tiered(e, req->src,
					icfab_req_tier(req, true), req->dst,
					icfab_req_tier(req, false), req->len,
					at, key, &xfer);
	} while (err == -ICFAB_ENGINE_ENOSPC &&
		 icfab_data_grow(d, !accepted && req->cx ? 0 :
				 icfab_engine_events_needed(req->len,
							    e->segment_size)));
	if (err == -ICFAB_ENGINE_ENOSPC && !accepted && req->cx &&
	    icfab_circuit_xfer_events(req->cx, req->len, e->segment_size) >
	    ICFAB_ENGINE_EVENTS_MAX)
		/* Its tree copies every segment more than the engine holds. */
		return -E2BIG;
	if (err)
		/* A full engine is back-pressure like a full queue. */
		return err == -ICFAB_ENGINE_ENOSPC ? -EAGAIN : -EINVAL;
	/*
	 * Where it lands sets its segments' spray turns (docs/TIMING.md,
	 * "Parallel cables"): pieces of one buffer, each a transfer of its
	 * own, spread over parallel links as one transfer's segments do.
	 */
	spray_off = req->op == ICFAB_OP_WRITE ? req->remote_off :
						req->local_off;
	/* Below one segment it is turn 0, which the engine starts with. */
	if ((accepted || !req->cx) && spray_off >= e->segment_size)
		icfab_engine_set_spray_offset(e, xfer, spray_off);
	d->xfer_req[xfer] = req;
	req->xfer = xfer;
	req->in_engine = true;
	q->seq++;
	q->outstanding++;
	if (unlikely(d->nr_endpoints >= ICFAB_PAR_MIN_ENDPOINTS))
		icfab_step_note(d, req, spray_off);
	return 0;
}

/*
 * The receive queue of @ctx on @q's endpoint, whose counters a TRIGGER on
 * @q waits for, or NULL. The fabric lock is held.
 */
static struct icfab_queue *__icfab_trigger_rq(struct icfab_data *d,
					      const struct icfab_queue *q,
					      const struct icfab_ctx *ctx)
{
	struct icfab_queue *rq = icfab_recvq(d, q->endpoint);

	return rq && rq->ctx == ctx ? rq : NULL;
}

/*
 * Has TRIGGER @req on @q its count? If not, its receive queue is told that
 * a TRIGGER waits. The fabric lock is held.
 */
static bool __icfab_trigger_ready(struct icfab_data *d, struct icfab_queue *q,
				  const struct icfab_req *req)
{
	struct icfab_queue *rq = __icfab_trigger_rq(d, q, req->ctx);

	if (!rq)
		return false;
	if (rq->trig_count[req->trig_imm] >= req->len)
		return true;
	rq->trig_held = true;
	return false;
}

/*
 * When did the NOTIFY WRITE land that brought the counter of TRIGGER @req
 * on @q to its count, which is already there? Only a time after @clock,
 * the submitting context's clock, matters; 0 for one no later. Not how
 * far the engine happens to have run: while the receiver WAITs the
 * engine may process arrivals in its future, and stop anywhere after
 * them.
 *
 * Every arrival after @clock is still on the context's done list: a
 * reaped completion moved the clock to its finish at least. The done
 * list keeps the engine's order, in which the counter counted, and
 * reaping takes its head; so the arrivals after @clock are the tail of
 * the counter's, the last of them its count. Walking back from the tail
 * finds the @len-th among them, or reaches @clock first. The fabric lock
 * is held.
 */
static u64 __icfab_trigger_step_ps(struct icfab_data *d,
				   const struct icfab_queue *q,
				   const struct icfab_req *req, u64 clock)
{
	struct icfab_queue *rq = __icfab_trigger_rq(d, q, req->ctx);
	struct icfab_req *pos;
	u64 step;

	step = rq->trig_count[req->trig_imm];
	list_for_each_entry_reverse(pos, &req->ctx->done, node) {
		if (pos->cqe.finish_ps <= clock)
			break;
		if (pos->q != rq || pos->cqe.status ||
		    (u32)pos->cqe.user_tag != req->trig_imm)
			continue;
		if (step == req->len)
			return pos->cqe.finish_ps;
		step--;
	}
	return 0;
}

/*
 * What heads the queue's backlog may go: a FENCE once the queue's
 * transfers before it have all finished, completed at the latest finish;
 * a TRIGGER once its count has come, completed at @now (the instant of
 * the event that called, the count's last WRITE's finish, or later);
 * then what follows them, up to the next that still has to wait.
 * Returns 1 when a context woke.
 */
static int __icfab_queue_drain(struct icfab_data *d, struct icfab_queue *q,
			       u64 now)
{
	struct icfab_req *req;
	int woke = 0, err;
	u64 t;

	lockdep_assert_held(&d->fabric->lock);

	while ((req = list_first_entry_or_null(&q->backlog, struct icfab_req,
					       node))) {
		if (req->op == ICFAB_OP_FENCE && q->outstanding)
			break;
		if (req->op == ICFAB_OP_TRIGGER &&
		    !__icfab_trigger_ready(d, q, req))
			break;
		list_del(&req->node);
		req->in_backlog = false;
		if (req->op == ICFAB_OP_FENCE) {
			t = max3(req->cqe.submit_ps, q->max_finish_ps,
				 q->fence_ps);
			q->fence_ps = t;
			woke |= __icfab_req_finish(req, 0, t, t, 0);
			continue;
		}
		if (req->op == ICFAB_OP_TRIGGER) {
			t = max3(req->cqe.submit_ps, q->fence_ps, now);
			q->fence_ps = t;
			woke |= __icfab_req_finish(req, 0, t, t, 0);
			continue;
		}
		t = max(req->cqe.submit_ps, q->fence_ps);
		err = icfab_xfer_submit(d, q, req, t, false);
		if (err) {
			/* Nobody can be told -EAGAIN now: it fails. */
			t = max(t, d->engine.now_ps);
			woke |= __icfab_req_finish(req, err == -EAGAIN ?
						   -ENOBUFS : err, t, t, 0);
		}
	}
	return woke;
}

/*
 * Bytes: a memory transfer of at least this many has them copied off the
 * fabric lock, by the copier (icfab_data_copy_fn()); 0, none.
 */
static unsigned int copy_unlocked_min = 65536;
module_param(copy_unlocked_min, uint, 0644);
MODULE_PARM_DESC(copy_unlocked_min,
		 "bytes: a memory transfer of at least this many is copied off the fabric lock, the engine waiting at its completion meanwhile (0: none)");

/* icfab_data_complete_held(): @req went to the copier. */
#define ICFAB_DATA_COPYING	2

/* The bytes of memory transfer @req, between the regions it holds. */
static void icfab_req_copy(const struct icfab_req *req)
{
	if (req->op == ICFAB_OP_WRITE)
		icfab_region_copy(req->remote, req->remote_off, req->local,
				  req->local_off, req->len);
	else
		icfab_region_copy(req->local, req->local_off, req->remote,
				  req->remote_off, req->len);
}

/*
 * Memory transfer @req landed with result @r: its bytes go to the copier
 * if it is long enough, not in a step of the parallel engine, whose
 * completions all come at its end, and not paced (whose engine runs
 * from a timer, which would fire again and again meanwhile). Then its
 * completion is posted only after its copy, and until then the engine
 * stops at this instant (d->hold_ps): nothing after it in the engine's
 * order is decided, no receiver's catch-up ends, and no later
 * transfer's bytes are copied. It stays counted on its queue, so that a
 * FENCE behind it waits for its post, and in flight. False when it is
 * copied here. The fabric lock is held.
 */
static bool icfab_data_copy_later(struct icfab_data *d, struct icfab_req *req,
				  const struct icfab_xfer_result *r)
{
	u32 min = READ_ONCE(copy_unlocked_min);

	if (!min || req->len < min || d->in_par || d->paced)
		return false;
	icfab_req_result(req, 0, r->start_ps, r->finish_ps, r->queued_ps);
	if (req->q)
		req->q->outstanding++;
	req->copying = true;
	if (list_empty(&d->copies))
		d->hold_ps = d->engine.now_ps;
	list_add_tail(&req->node, &d->copies);
	atomic_inc(&d->fabric->copies_unlocked);
	/*
	 * A runner of the copier loops until the list is empty, and a WAIT
	 * that ran the engine runs it next (icfab_data_copy_kick()).
	 */
	if (!d->copy_busy && !d->copy_here)
		queue_work(system_unbound_wq, &d->copy_work);
	return true;
}

/*
 * icfab_data_complete() for a request that holds something (a region, a
 * circuit, a receive completion with one of those) or whose context is
 * gone: its bytes move, and it ends by __icfab_req_finish(); or
 * ICFAB_DATA_COPYING, when it went to the copier
 * (icfab_data_copy_later()). Its queue's count is dropped already. The
 * fabric lock is held.
 */
static noinline int icfab_data_complete_held(struct icfab_data *d,
					     struct icfab_req *req,
					     int status,
					     const struct icfab_xfer_result *r)
{
	/*
	 * Its context was evicted: it has used the links (segments on the
	 * wire are not taken back) but lands nothing, and it and its
	 * receiver are told so.
	 */
	if (!status && req->ctx && req->ctx->evicted)
		status = -ECANCELED;

	if (!status && req->local) {
		if (req->cx)
			icfab_circuit_xfer_copy(req->cx, req->local,
						req->local_off, req->len);
		else if (icfab_data_copy_later(d, req, r))
			return ICFAB_DATA_COPYING;
		else
			icfab_req_copy(req);
	}
	return __icfab_req_finish(req, status, r->start_ps, r->finish_ps,
				  r->queued_ps);
}

/*
 * icfab_data_complete() for a timing-only NOTIFY WRITE whose context is
 * there, which holds nothing but its receive completion: what
 * icfab_data_complete_held() and __icfab_req_finish() do for it, without
 * their calls and their tests of what it does not hold; its receive
 * completion first, then its own, as a plain one's in
 * icfab_data_complete(). Out of line, so that the plain ones keep their
 * registers. The fabric lock is held.
 */
static noinline int icfab_data_complete_notify(struct icfab_ctx *ctx,
					       struct icfab_req *req,
					       int status,
					       const struct icfab_xfer_result *r)
{
	int woke;

	/* Evicted: it lands nothing, and it and its receiver are told so. */
	if (unlikely(ctx->evicted) && !status)
		status = -ECANCELED;
	woke = __icfab_notify_post(req, status, r->start_ps, r->finish_ps,
				   r->queued_ps);
	return woke | __icfab_req_post(ctx, req, status, r->start_ps,
				       r->finish_ps, r->queued_ps);
}

/*
 * The copier: claimed by whoever runs it (d->copy_busy), so one copy at a
 * time: the bytes of each memory transfer on d->copies, in the engine's
 * order, with no lock held, then its completion posted under the fabric
 * lock, as icfab_data_complete() would have posted it, and what its
 * queue's backlog holds let go. Nothing else ends a request on the list:
 * a cancel passes it by, a closing context only lets go of it (req->ctx
 * and req->q NULL); so its references keep both regions, and their
 * pages, until it is posted here. Once the list is empty the engine runs
 * on from the instant it stopped at, if it is still the fabric's
 * (otherwise its last context has gone, and icfab_data_stop() waits for
 * the work item); a copy that run leaves is this runner's too. Entered
 * and left with the fabric lock held, having claimed the copier; the
 * number of copies made.
 */
static unsigned int icfab_data_copies_run(struct icfab_data *d)
{
	struct icfab_fabric *fabric = d->fabric;
	unsigned int n = 0;
	struct icfab_queue *q;
	struct icfab_req *req;
	u64 start, finish, queued;

	lockdep_assert_held(&fabric->lock);
	while ((req = list_first_entry_or_null(&d->copies, struct icfab_req,
					       node))) {
		mutex_unlock(&fabric->lock);
		icfab_req_copy(req);

		mutex_lock(&fabric->lock);
		n++;
		list_del(&req->node);
		req->copying = false;
		q = req->q;
		if (q)
			q->outstanding--;
		start = req->cqe.start_ps;
		finish = req->cqe.finish_ps;
		queued = req->cqe.queued_ps;
		/* A wake here is seen by the run below. */
		__icfab_req_finish(req, 0, start, finish, queued);
		if (q && !q->outstanding && !list_empty(&q->backlog))
			__icfab_queue_drain(d, q, finish);
		if (list_empty(&d->copies)) {
			d->hold_ps = ICFAB_ENGINE_NEVER;
			if (fabric->data == d)
				icfab_data_advance(fabric);
		}
	}
	d->copy_busy = false;
	return n;
}

/* Claims the copier for the caller: false when it has nothing or a runner. */
static bool icfab_data_copy_claim(struct icfab_data *d)
{
	lockdep_assert_held(&d->fabric->lock);
	if (d->copy_busy || list_empty(&d->copies))
		return false;
	d->copy_busy = true;
	return true;
}

/* The copier's work item, for copies that no WAIT runs. */
static void icfab_data_copy_fn(struct work_struct *work)
{
	struct icfab_data *d = container_of(work, struct icfab_data,
					    copy_work);

	mutex_lock(&d->fabric->lock);
	if (icfab_data_copy_claim(d))
		icfab_data_copies_run(d);
	mutex_unlock(&d->fabric->lock);
}

/*
 * After a WAIT's run of the engine (d->copy_here, so a copy it left was
 * not given to the work item): a copy left and no runner, the work
 * item's, unless the WAIT goes on to run it (@runs).
 */
static void icfab_data_copy_kick(struct icfab_data *d, bool runs)
{
	lockdep_assert_held(&d->fabric->lock);
	d->copy_here = false;
	if (!runs && !d->copy_busy && !list_empty(&d->copies))
		queue_work(system_unbound_wq, &d->copy_work);
}

/* Engine callback: a transfer finished; move its bytes, hand it over. */
static int icfab_data_complete(void *arg, u32 xfer_id,
			       const struct icfab_xfer_result *r)
{
	struct icfab_data *d = arg;
	struct icfab_req *req = d->xfer_req[xfer_id];
	struct icfab_ctx *ctx;
	struct icfab_queue *q;
	int status = r->status;
	int woke;

	/* Only a fabric that has had a circuit's tree has the table. */
	if (unlikely(d->fabric->tree_xfers))
		icfab_circuit_xfer_done(d->fabric, xfer_id);
	/* NULL: an io_uring command cancelled while in the engine. */
	if (!req)
		return 0;
	d->xfer_req[xfer_id] = NULL;
	req->in_engine = false;

	/* NULL, both, once its context is gone (icfab_ctx_destroy()). */
	q = req->q;
	if (q) {
		q->outstanding--;
		q->max_finish_ps = max(q->max_finish_ps, r->finish_ps);
	}
	/*
	 * What holds nothing (a timing-only WRITE or READ: no local region,
	 * which a remote one never comes without, no circuit or NOTIFY) and
	 * has its context ends as a DELAY does, by the inline second half
	 * of __icfab_req_finish(): this is the one completion every
	 * transfer of the engine comes through. A timing-only NOTIFY
	 * WRITE ends so too, out of line (icfab_data_complete_notify()).
	 */
	ctx = req->ctx;
	if (likely(ctx && !req->local && !req->cx && !req->notify)) {
		/* Evicted: it lands nothing, and is told so (above). */
		if (unlikely(ctx->evicted) && !status)
			status = -ECANCELED;
		woke = __icfab_req_post(ctx, req, status, r->start_ps,
					r->finish_ps, r->queued_ps);
	} else if (ctx && !req->local && !req->cx) {
		woke = icfab_data_complete_notify(ctx, req, status, r);
	} else {
		woke = icfab_data_complete_held(d, req, status, r);
		/* Posted, and its backlog let go, after its copy: stop here. */
		if (woke == ICFAB_DATA_COPYING)
			return 1;
	}
	/* What its backlog holds may go once nothing of it is in flight. */
	if (q && !q->outstanding && !list_empty(&q->backlog))
		woke |= __icfab_queue_drain(d, q, r->finish_ps);
	return woke;
}

/*
 * A NOTIFY WRITE with @imm landed at @finish at receive queue @rq: count
 * it, and let the queues of @rq's context on its endpoint whose backlog a
 * TRIGGER for that counter heads go on, in queue order, at @finish.
 * Returns 1 when a context woke. The fabric lock is held.
 */
static int __icfab_trigger_arrived(struct icfab_data *d,
				   struct icfab_queue *rq, u32 imm, u64 finish)
{
	struct icfab_ctx *ctx = rq->ctx;
	int woke = 0;
	u32 i;

	lockdep_assert_held(&d->fabric->lock);

	if (imm >= ICFAB_TRIGGER_COUNTERS)
		return 0;
	rq->trig_count[imm]++;
	if (!rq->trig_held)
		return 0;
	/* __icfab_trigger_ready() sets it again for any that still waits. */
	rq->trig_held = false;
	for (i = 0; i < ctx->queues_cap; i++) {
		struct icfab_queue *q = ctx->queues[i];
		struct icfab_req *req;

		if (!q || q->recv || q->endpoint != rq->endpoint)
			continue;
		req = list_first_entry_or_null(&q->backlog, struct icfab_req,
					       node);
		if (!req || req->op != ICFAB_OP_TRIGGER)
			continue;
		if (req->trig_imm == imm)
			woke |= __icfab_queue_drain(d, q, finish);
		else
			rq->trig_held = true;
	}
	return woke;
}

/* A receiver's WAIT leaves step 1 (by itself, or by timeout or signal). */
static void __icfab_catchup_end(struct icfab_ctx *ctx)
{
	lockdep_assert_held(&ctx->fabric->lock);

	if (!ctx->catchup)
		return;
	ctx->catchup = false;
	ctx->fabric->data->nr_catchup--;
}

/*
 * The engine has run to the safe time. Every receiver's WAIT in step 1
 * whose clock the engine has reached (every event before it processed)
 * has all its completions before that clock: it completes if that is
 * enough, or goes on to step 2, where it no longer holds the engine back.
 * Returns true when one did, so the safe time may have moved.
 */
static bool __icfab_data_catchup(struct icfab_fabric *fabric,
				 struct icfab_data *d)
{
	struct icfab_ctx *ctx;
	bool moved = false;

	lockdep_assert_held(&fabric->lock);

	if (!d->nr_catchup)
		return false;
	/*
	 * Copies to post (d->copies): what the engine has run to is not
	 * all posted yet, so no receiver may take it for its catch-up.
	 */
	if (!list_empty(&d->copies))
		return false;
	list_for_each_entry(ctx, &fabric->attached, attached_node) {
		if (!ctx->catchup || ctx->clock_ps > d->engine.now_ps)
			continue;
		__icfab_catchup_end(ctx);
		if (ctx->uwait) {
			if (ctx->u_uncounted >= ctx->uwait_min) {
				__icfab_uwait_post(ctx);
				continue;
			}
		} else if (__icfab_wait_have(ctx) >= ctx->wait_min) {
			wake_up(&ctx->wq);
			continue;
		}
		WRITE_ONCE(ctx->waiting, true);
		moved = true;
	}
	return moved;
}

/*
 * Whether no link can lose a segment of the step while it runs (the
 * parallel engine stops with an error rather than lose one): none is
 * down, and none is held with failure past the engine's clock. The
 * topology cannot change while the fabric lock is held.
 */
static bool icfab_data_par_links_ok(const struct icfab_data *d)
{
	const struct icfab_mtopo *m = d->engine.topo;
	u32 l;

	for (l = 0; l < m->links_cap; l++) {
		const struct icfab_mlink *ml = &m->links[l];

		if (!ml->present)
			continue;
		if (ml->state == ICFAB_MODEL_LINK_DOWN ||
		    (ml->hold_fail && ml->up_at_ps > d->engine.now_ps))
			return false;
	}
	return true;
}

/*
 * The engine is about to run toward @horizon with the step logged
 * (d->step_ok): hand the step to the parallel engine if running it
 * whole there cannot differ from the sequential engine's run, that is
 * if no completion of it can lead to a submission or let a context
 * act before its last one (docs/ARCHITECTURE.md, "The parallel engine
 * in the kernel"):
 * - the step is all the engine holds and none of it has started
 *   (icfab_engine_unsubmit() checks the second);
 * - nobody holds the engine back (@horizon is never), and the fabric
 *   has one context, in an ioctl WAIT (not io_uring's, not a receiver's
 *   catch-up) for at least what it has plus the whole step, so that it
 *   wakes at the step's last completion at the earliest, when the
 *   engine is empty again;
 * - no queue of it has a backlog (a FENCE, a TRIGGER) that a completion
 *   would submit, and no transfer of the step is a NOTIFY;
 * - no tracer (the partitions report to none), not paced;
 * - no link can lose a segment.
 * Whatever it finds, the step ends here: either it runs in parallel, or
 * the sequential engine is about to process some of it. Returns true
 * when it ran. The fabric lock is held.
 */
static bool icfab_data_par(struct icfab_fabric *fabric, struct icfab_data *d,
			   u64 horizon)
{
	struct icfab_engine *e = &d->engine;
	struct icfab_ctx *ctx;
	u32 i;
	int ret;

	if (icfab_engine_next_ps(e) >= horizon)
		return false;	/* nothing of it runs now */
	d->step_ok = false;
	if (horizon != ICFAB_ENGINE_NEVER || d->paced || e->tracer ||
	    d->step_nr != e->nr_xfers || fabric->nr_attached != 1)
		return false;
	ctx = list_first_entry(&fabric->attached, struct icfab_ctx,
			       attached_node);
	if (!ctx->waiting || ctx->uwait || ctx->catchup || ctx->dead ||
	    (u64)__icfab_wait_have(ctx) + e->nr_xfers > ctx->wait_min)
		return false;
	for (i = 0; i < ctx->queues_cap; i++)
		if (ctx->queues[i] && !list_empty(&ctx->queues[i]->backlog))
			return false;
	if (!icfab_data_par_links_ok(d))
		return false;
	/* Its completions come at the end, each copied where it comes. */
	d->in_par = true;
	ret = icfab_par_step(&d->par, e, d->step_ids, d->step_nr,
			     icfab_data_complete, d);
	d->in_par = false;
	if (ret < 0) {
		/* Lost part way (a bug, warned of): end the rest. */
		for (i = 0; i < d->step_nr; i++) {
			u32 x = d->step_ids[i];
			struct icfab_xfer_result r = {
				.submit_ps = e->now_ps, .start_ps = e->now_ps,
				.finish_ps = e->now_ps,
				.status = -ICFAB_ENGINE_ECANCELED,
			};

			if (d->xfer_req[x])
				icfab_data_complete(d, x, &r);
		}
	}
	return ret != 0;
}

/*
 * Run the engine as far as the safe time allows. Called whenever the safe
 * time may have moved: a clock advanced, a context started waiting, or
 * one left. In paced mode the safe time is the wall clock's: every event
 * up to the current fabric time is due, and the timer is armed for the
 * next one. A WAIT whose completions came was woken by
 * __icfab_done_add() or __icfab_data_catchup(), the only places that end
 * an ioctl WAIT. At most ICFAB_ENGINE_RUN_BUDGET events: true when it
 * stopped there, with more to run.
 */
static bool __icfab_data_run(struct icfab_fabric *fabric)
{
	struct icfab_data *d = fabric->data;
	u64 horizon = 0;
	int ret;

	lockdep_assert_held(&fabric->lock);
	if (!d)
		return false;
	if (d->paced) {
		/* Events at the current instant are due: up to it, inclusive. */
		horizon = icfab_paced_now(d, false) + 1;
		fabric->held_pid = 0;
		fabric->held_ps = 0;
		fabric->held_id = 0;
	}
	icfab_data_trace_sync(d);
	do {
		do {
			u64 h = d->paced ? horizon :
					   icfab_data_horizon(fabric, d);

			/*
			 * The whole step on the parallel engine: then again,
			 * toward the safe time its last completion moved.
			 */
			if (unlikely(d->step_ok) && icfab_data_par(fabric, d, h)) {
				ret = 1;
				continue;
			}
			ret = icfab_engine_run_until(&d->engine, h,
						     icfab_data_complete, d);
		} while (ret == 1);
	} while (!ret && !d->paced && __icfab_data_catchup(fabric, d));
	WARN_ON_ONCE(ret < 0);
	if (d->paced)
		icfab_data_arm(d);
	else
		icfab_trace_engine_held(fabric, &d->engine);
	return ret == ICFAB_ENGINE_YIELD;
}

/*
 * Millions of events take seconds, and the lock is everyone's: what one
 * budget leaves runs from d->run_work, a budget at a time, letting go of the
 * lock between them. What comes out is the same: the engine runs to the
 * same safe time, only later in wall time.
 */
static void icfab_data_advance(struct icfab_fabric *fabric)
{
	if (__icfab_data_run(fabric))
		queue_work(system_unbound_wq, &fabric->data->run_work);
}

/* Run the engine to the current safe time. */
void icfab_data_kick(struct icfab_fabric *fabric)
{
	icfab_data_advance(fabric);
}

/*
 * The fabric's time, ps: how far its engine has got, or in paced mode the
 * wall clock's fabric time if later; 0 while there is no engine (it
 * restarts at 0 with the next). The fabric lock is held.
 */
u64 icfab_data_now(struct icfab_fabric *fabric)
{
	struct icfab_data *d = fabric->data;

	lockdep_assert_held(&fabric->lock);
	if (!d)
		return 0;
	if (d->paced)
		return max(d->engine.now_ps, icfab_paced_now(d, false));
	return d->engine.now_ps;
}

/*
 * For debugfs: the engine's tables (entries: events, transfers) and the
 * room promised beside what they hold (struct icfab_data,
 * granted_events), 0 while there is no engine. Takes the fabric lock.
 */
u64 icfab_data_room_stat(struct icfab_fabric *fabric, enum icfab_room_stat s)
{
	struct icfab_data *d;
	u64 v = 0;

	mutex_lock(&fabric->lock);
	d = fabric->data;
	if (d) {
		switch (s) {
		case ICFAB_ROOM_EVENTS_CAP:
			v = d->engine.events_cap;
			break;
		case ICFAB_ROOM_XFERS_CAP:
			v = d->engine.xfers_cap;
			break;
		case ICFAB_ROOM_GRANTED_EVENTS:
			v = d->granted_events;
			break;
		case ICFAB_ROOM_GRANTED_XFERS:
			v = d->granted_xfers;
			break;
		}
	}
	mutex_unlock(&fabric->lock);
	return v;
}

/*
 * A live commit: the committed configuration @t replaces fabric->active,
 * with contexts attached. Moves the engine to @t (the caller then swaps
 * fabric->active and calls icfab_data_kick()). The engine keeps its time
 * mode, dilation and segment size for its whole life, so a commit that
 * changes one of them gets -EINVAL, as does one of another shape
 * (icfab_engine_retopo()). Nothing changes on error. The fabric lock is
 * held.
 */
int icfab_data_retopo(struct icfab_fabric *fabric, struct icfab_topo *t)
{
	struct icfab_data *d = fabric->data;
	struct icfab_ctx *ctx;
	int err;

	lockdep_assert_held(&fabric->lock);
	if (!d)
		return 0;
	if (t->time_mode != d->topo->time_mode ||
	    t->segment_size != d->topo->segment_size ||
	    (d->paced && t->dilation != d->topo->dilation))
		return -EINVAL;
	/*
	 * WRITEs accepted outside the lock go in on the topology they
	 * were accepted under, as they would have without their path.
	 */
	list_for_each_entry(ctx, &fabric->attached, attached_node)
		__icfab_ctx_slow(ctx);
	/* A step logged on the old topology is not handed over. */
	d->step_ok = false;
	err = icfab_engine_retopo(&d->engine, &t->m);
	if (err)
		return err;
	d->topo = t;
	d->sprays = icfab_topo_sprays(&t->m);
	return 0;
}

static bool icfab_ctx_has_ep(struct icfab_ctx *ctx, u32 ep)
{
	return ep < ICFAB_MAX_NODES && test_bit(ep, ctx->eps);
}

bool icfab_ctx_attached_to(struct icfab_ctx *ctx, u32 endpoint)
{
	lockdep_assert_held(&ctx->fabric->lock);
	return icfab_ctx_has_ep(ctx, endpoint);
}

long icfab_ioctl_attach(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_attach a;
	long ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags & ~ICFAB_ATTACH_F_ALL ||
	    !icfab_reserved_zero(a.reserved, ARRAY_SIZE(a.reserved)))
		return -EINVAL;
	/* No node has an id beyond: ctx->eps has a bit for every other. */
	if (a.endpoint >= ICFAB_MAX_NODES)
		return -ENOENT;

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	if (ctx->nr_eps &&
	    ctx->free_run != !!(a.flags & ICFAB_ATTACH_F_FREE_RUN)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if (ctx->dead) {
		ret = -ECANCELED;
		goto out_unlock;
	}
	if (!icfab_is_endpoint(fabric->active, a.endpoint)) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (icfab_ctx_has_ep(ctx, a.endpoint)) {
		ret = -EALREADY;
		goto out_unlock;
	}
	if (!fabric->data) {
		fabric->data = icfab_data_create(fabric);
		if (!fabric->data) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		icfab_stats_attach(fabric, &fabric->data->engine);
		fabric->data->tracer = fabric->data->engine.tracer;
	}
	if (!ctx->nr_eps) {
		/* It joins the fabric now: its clock starts at the engine's. */
		ctx->clock_ps = fabric->data->engine.now_ps;
		ctx->free_run = a.flags & ICFAB_ATTACH_F_FREE_RUN;
		ctx->owner = task_tgid_nr(current);
		/* Never 0, and in the order of the list, for dumps. */
		ctx->id = ++fabric->ctx_seq;
		list_add_tail(&ctx->attached_node, &fabric->attached);
		fabric->nr_attached++;
		ctx->first_ep = a.endpoint;
	}
	__set_bit(a.endpoint, ctx->eps);
	ctx->nr_eps++;

out_unlock:
	__icfab_ctx_fast_update(ctx);
	mutex_unlock(&fabric->lock);
	return ret;
}

/*
 * No WRITE path promises anything on receive queue @q from here on, and
 * what was promised there is reserved: every accepted list that may
 * hold a promise on it is started (__icfab_ctx_slow(), which waits for a
 * path under way under its context's lock). Only then may its pending
 * list and its count be looked at as under the fabric lock alone. A
 * context's path runs only while it is attached, so the attached are
 * all there is to start; cheap when nothing is promised, the rule. The
 * fabric lock is held.
 */
static void __icfab_recvq_settle(struct icfab_data *d, struct icfab_queue *q)
{
	struct icfab_ctx *ctx;
	u32 promised;

	lockdep_assert_held(&d->fabric->lock);
	spin_lock(&q->claim_lock);
	q->closed = true;
	promised = atomic_read(&q->promised);
	spin_unlock(&q->claim_lock);
	if (!promised)
		return;
	list_for_each_entry(ctx, &d->fabric->attached, attached_node)
		__icfab_ctx_slow(ctx);
	/* Closed: none came since, and each started list reserved its own. */
	WARN_ON_ONCE(atomic_read(&q->promised));
}

/*
 * NOTIFY WRITEs no longer find receive queue @q (it stays with its
 * context for what is in flight), nor does the WRITE path promise on it
 * any more (@q->closed). The fabric lock is held.
 */
static void __icfab_recvq_unregister(struct icfab_data *d,
				     struct icfab_queue *q)
{
	lockdep_assert_held(&d->fabric->lock);

	if (!q->recv)
		return;
	spin_lock(&q->claim_lock);
	q->closed = true;
	spin_unlock(&q->claim_lock);
	if (icfab_recvq(d, q->endpoint) == q)
		RCU_INIT_POINTER(d->recvqs[q->endpoint], NULL);
}

/*
 * Receive queue @q goes with its context: what NOTIFY WRITEs in flight
 * reserved (or promised) there is detached from them (they go on,
 * telling nobody). The fabric lock is held.
 */
static void __icfab_recvq_close(struct icfab_data *d, struct icfab_queue *q)
{
	struct hlist_node *tmp;
	struct icfab_req *n;

	__icfab_recvq_settle(d, q);
	__icfab_recvq_unregister(d, q);
	hlist_for_each_entry_safe(n, tmp, &q->pending, pnode) {
		n->sender->notify = NULL;
		hlist_del(&n->pnode);
		WRITE_ONCE(q->inflight, q->inflight - 1);
		icfab_req_recycle(n->ctx, n);
	}
}

/*
 * A queue goes: a receive queue a grace period later, for a WRITE path
 * that found it under RCU (icfab_notify_promise()) and is about to see
 * it closed.
 */
static void icfab_queue_free(struct icfab_queue *q)
{
	if (q && q->recv)
		kfree_rcu(q, rcu);
	else
		kfree(q);
}

/*
 * Make room for queue id @id: the table doubles, from 16 entries, up to
 * ICFAB_MAX_QUEUES; -ENOSPC from the cap max_ctx_queues on (the lowest
 * free id is taken, so that is the number of queues). The fabric lock is
 * held.
 */
static int icfab_ctx_queues_room(struct icfab_ctx *ctx, u32 id)
{
	struct icfab_queue **queues;
	u32 cap;

	lockdep_assert_held(&ctx->fabric->lock);
	if (id >= icfab_ctx_queues_cap())
		return -ENOSPC;
	if (id < ctx->queues_cap)
		return 0;
	cap = clamp_t(u32, ctx->queues_cap * 2, 16, ICFAB_MAX_QUEUES);
	queues = kvcalloc(cap, sizeof(*queues), GFP_KERNEL_ACCOUNT);
	if (!queues)
		return -ENOMEM;
	if (ctx->queues_cap)
		memcpy(queues, ctx->queues,
		       ctx->queues_cap * sizeof(*queues));
	kvfree(ctx->queues);
	ctx->queues = queues;
	ctx->queues_cap = cap;
	return 0;
}

/*
 * Queue @id of @ctx, or NULL. The fabric lock is held, or the context's
 * own (->fast).
 */
static struct icfab_queue *icfab_ctx_queue(struct icfab_ctx *ctx, u32 id)
{
	icfab_assert_ctx_locked(ctx);

	return id < ctx->queues_cap ? ctx->queues[id] : NULL;
}

/*
 * The lowest place no send queue of @ctx on @endpoint holds, marked in
 * @used (ICFAB_MAX_QUEUES bits, zeroed): what a new one's transfer keys
 * carry, so that a context with one queue per endpoint keys them as
 * contexts of one endpoint each do. Below ICFAB_MAX_QUEUES, since the
 * context has room for one more queue. The fabric lock is held.
 */
static u32 icfab_queue_ep_idx(const struct icfab_ctx *ctx, u32 endpoint,
			      unsigned long *used)
{
	u32 i;

	for (i = 0; i < ctx->queues_cap; i++) {
		const struct icfab_queue *q = ctx->queues[i];

		if (q && !q->recv && q->endpoint == endpoint)
			__set_bit(q->ep_idx, used);
	}
	return find_first_zero_bit(used, ICFAB_MAX_QUEUES);
}

long icfab_ioctl_queue_create(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_queue_create qc;
	struct icfab_queue *q;
	unsigned long *used;
	u32 id;
	long ret;

	if (copy_from_user(&qc, uarg, sizeof(qc)))
		return -EFAULT;
	if (qc.flags & ~ICFAB_QUEUE_F_ALL || qc.queue ||
	    !icfab_reserved_zero(qc.reserved, ARRAY_SIZE(qc.reserved)) ||
	    !qc.depth || qc.depth > ICFAB_MAX_QUEUE_DEPTH)
		return -EINVAL;

	q = kzalloc(sizeof(*q), GFP_KERNEL_ACCOUNT);
	used = bitmap_zalloc(ICFAB_MAX_QUEUES, GFP_KERNEL);
	if (!q || !used) {
		kfree(q);
		bitmap_free(used);
		return -ENOMEM;
	}
	q->endpoint = qc.endpoint;
	q->depth = qc.depth;
	q->recv = qc.flags & ICFAB_QUEUE_F_RECV;
	q->ctx = ctx;
	INIT_LIST_HEAD(&q->backlog);
	INIT_HLIST_HEAD(&q->pending);
	spin_lock_init(&q->claim_lock);
	atomic_set(&q->promised, 0);

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	ret = -ENOENT;
	if (!icfab_ctx_has_ep(ctx, qc.endpoint))
		goto err_unlock;
	ret = -ECANCELED;
	if (q->recv && ctx->dead)
		goto err_unlock;
	for (id = 0; id < ctx->queues_cap; id++)
		if (!ctx->queues[id])
			break;
	ret = icfab_ctx_queues_room(ctx, id);
	if (ret)
		goto err_unlock;
	q->id = id;
	if (!q->recv)
		q->ep_idx = icfab_queue_ep_idx(ctx, q->endpoint, used);
	if (q->recv) {
		struct icfab_data *d = fabric->data;

		/*
		 * Attached, so the engine is there, its table holding the
		 * endpoint (an attached one is always below its size, which
		 * is the topology's). -EBUSY: one already.
		 */
		ret = -EBUSY;
		if (q->endpoint >= d->recvqs_cap ||
		    icfab_recvq(d, q->endpoint))
			goto err_unlock;
		rcu_assign_pointer(d->recvqs[q->endpoint], q);
	}
	/*
	 * Tell the caller first: a queue is never visible, then taken back
	 * (nobody looks at the receive queues without the lock).
	 */
	qc.queue = id;
	ret = -EFAULT;
	if (copy_to_user(uarg, &qc, sizeof(qc))) {
		/* A WRITE path may have found it meanwhile: as a close. */
		if (q->recv)
			__icfab_recvq_close(fabric->data, q);
		goto err_unlock;
	}
	ctx->queues[id] = q;
	ctx->nr_recvqs += q->recv;
	__icfab_ctx_fast_update(ctx);
	mutex_unlock(&fabric->lock);
	bitmap_free(used);
	return 0;

err_unlock:
	__icfab_ctx_fast_update(ctx);
	mutex_unlock(&fabric->lock);
	bitmap_free(used);
	icfab_queue_free(q);
	return ret;
}

/*
 * Does a TRIGGER of @ctx wait for the counters of receive queue @rq? The
 * fabric lock is held.
 */
static bool __icfab_trigger_waits(struct icfab_ctx *ctx,
				  const struct icfab_queue *rq)
{
	struct icfab_req *req;
	u32 i;

	if (!rq->recv)
		return false;
	for (i = 0; i < ctx->queues_cap; i++) {
		struct icfab_queue *q = ctx->queues[i];

		if (!q || q->recv || q->endpoint != rq->endpoint)
			continue;
		list_for_each_entry(req, &q->backlog, node)
			if (req->op == ICFAB_OP_TRIGGER)
				return true;
	}
	return false;
}

long icfab_ioctl_queue_destroy(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_queue_destroy qd;
	struct icfab_queue *q = NULL;
	long ret = 0;

	if (copy_from_user(&qd, uarg, sizeof(qd)))
		return -EFAULT;
	if (qd.flags || qd.reserved)
		return -EINVAL;
	if (qd.queue >= ICFAB_MAX_QUEUES)
		return -ENOENT;

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	q = icfab_ctx_queue(ctx, qd.queue);
	/*
	 * A receive queue's promises are reservations first: as busy as
	 * when their WRITEs reserved under the fabric lock. Opened again
	 * if it stays.
	 */
	if (q && q->recv)
		__icfab_recvq_settle(fabric->data, q);
	if (!q) {
		ret = -ENOENT;
	} else if (q->inflight || __icfab_trigger_waits(ctx, q)) {
		ret = -EBUSY;
		if (q->recv) {
			spin_lock(&q->claim_lock);
			q->closed = icfab_recvq(fabric->data,
						q->endpoint) != q;
			spin_unlock(&q->claim_lock);
		}
	} else {
		ctx->queues[qd.queue] = NULL;
		if (q->recv) {
			__icfab_recvq_unregister(fabric->data, q);
			ctx->nr_recvqs--;
		}
	}
	mutex_unlock(&fabric->lock);

	if (!ret)
		icfab_queue_free(q);
	return ret;
}

/* [@off, @off + @len) inside @size bytes, without overflow? */
static bool icfab_range_ok(u64 off, u64 len, u64 size)
{
	u64 end;

	return !check_add_overflow(off, len, &end) && end <= size;
}

/* The byte-moving part of WRITE and READ; the fabric lock is held. */
static int icfab_desc_check_memory(struct icfab_ctx *ctx,
				   const struct icfab_desc *dd,
				   struct icfab_queue *q, struct icfab_req *req)
{
	u32 need = dd->op == ICFAB_OP_WRITE ? ICFAB_ACCESS_REMOTE_WRITE :
					      ICFAB_ACCESS_REMOTE_READ;

	lockdep_assert_held(&ctx->fabric->lock);

	req->local = icfab_region_get_local(&ctx->regions, dd->region);
	if (!req->local)
		return -EBADF;
	if (icfab_region_endpoint(req->local) != q->endpoint)
		return -EINVAL;
	req->remote = icfab_region_get_key(ctx->fabric, dd->rkey);
	if (!req->remote || !(icfab_region_access(req->remote) & need))
		return -EACCES;
	if (dd->peer && dd->peer != icfab_region_endpoint(req->remote))
		return -EINVAL;
	if (!icfab_range_ok(dd->local_off, dd->len,
			    icfab_region_size(req->local)) ||
	    !icfab_range_ok(dd->remote_off, dd->len,
			    icfab_region_size(req->remote)))
		return -ERANGE;
	req->local_off = dd->local_off;
	req->remote_off = dd->remote_off;
	if (dd->op == ICFAB_OP_WRITE) {
		req->src = q->endpoint;
		req->dst = icfab_region_endpoint(req->remote);
	} else {
		req->src = icfab_region_endpoint(req->remote);
		req->dst = q->endpoint;
	}
	return 0;
}

/*
 * A NOTIFY WRITE reserves its receive completion on the receive queue of
 * its target (@req->dst) now, so that it cannot fail to post it later.
 * The fabric lock is held.
 */
static int __icfab_notify_reserve(struct icfab_ctx *ctx,
				  struct icfab_req *req, u32 imm)
{
	struct icfab_queue *rq = icfab_recvq(ctx->fabric->data, req->dst);
	struct icfab_req *n;
	bool full;

	lockdep_assert_held(&ctx->fabric->lock);

	if (!rq)
		return -ENOTCONN;
	/* Counted with what WRITE paths promised (icfab_notify_promise()). */
	spin_lock(&rq->claim_lock);
	full = rq->inflight + atomic_read(&rq->promised) >= rq->depth;
	if (!full)
		WRITE_ONCE(rq->inflight, rq->inflight + 1);
	spin_unlock(&rq->claim_lock);
	if (full)
		return -EAGAIN;
	n = icfab_req_alloc(rq->ctx);
	if (!n) {
		WRITE_ONCE(rq->inflight, rq->inflight - 1);
		return -ENOMEM;
	}
	n->ctx = rq->ctx;
	n->q = rq;
	n->op = ICFAB_OP_WRITE;
	n->len = req->len;
	n->src = req->src;
	n->dst = req->dst;
	n->cqe.user_tag = (u64)req->src << 32 | imm;
	n->cqe.queue = rq->id;
	n->sender = req;
	hlist_add_head(&n->pnode, &rq->pending);
	req->notify = n;
	return 0;
}

/*
 * A NOTIFY WRITE the WRITE path accepted (icfab_write_accept_notify())
 * starts: the receive completion it promised becomes a reservation, as
 * __icfab_notify_reserve() makes, on the receive queue it was promised
 * on, which stayed for it (__icfab_recvq_settle()); nothing to check, it
 * was counted against the queue's depth from its promise. Without
 * claim_lock: ->inflight up, then ->promised down with release order
 * (struct icfab_queue). The fabric lock is held.
 */
static void __icfab_notify_keep(struct icfab_req *req)
{
	struct icfab_req *n = req->notify;
	struct icfab_queue *rq = n->q;

	WRITE_ONCE(rq->inflight, rq->inflight + 1);
	smp_mb__before_atomic();
	atomic_dec(&rq->promised);
	hlist_add_head(&n->pnode, &rq->pending);
}

/*
 * Has @ctx as many descriptors submitted and not reaped as max_ctx_descs
 * allows? Each holds a request; reaping frees them, so this is
 * back-pressure (-EAGAIN) like a full queue. io_uring's count until they
 * are posted. The fabric lock is held.
 */
static bool icfab_ctx_descs_full(const struct icfab_ctx *ctx)
{
	u32 cap = READ_ONCE(icfab_max_ctx_descs);

	return cap && ctx->nr_inflight + ctx->nr_done + ctx->u_inflight >= cap;
}

/*
 * How many more descriptors @ctx may hold by icfab_ctx_descs_full()
 * (U32_MAX: no cap), read outside the fabric lock, under @ctx's own with
 * nothing of the context's own system calls under the fabric lock
 * (->fast): then only the engine's completions, which any context's
 * run posts, change the counts, and only downwards but for nr_done,
 * which a post raises before it drops nr_inflight (__icfab_req_post()),
 * and which a receiver's receive completion raises alone
 * (__icfab_notify_deliver()). Read in the other order, the sum is never
 * smaller than it was at an instant of the reading: the answer may be
 * less room than was just freed, as a SUBMIT a moment earlier would
 * have found, never more than the cap allowed then; a receive
 * completion after that instant comes after the WRITEs accepted on it,
 * as one after a SUBMIT under the fabric lock does. @more: descriptors
 * it holds besides.
 */
static inline u32 icfab_ctx_descs_room_unlocked(const struct icfab_ctx *ctx,
						u32 more)
{
	u32 cap = READ_ONCE(icfab_max_ctx_descs);
	u32 sum;

	if (!cap)
		return U32_MAX;
	sum = READ_ONCE(ctx->nr_inflight) + READ_ONCE(ctx->u_inflight);
	/* Pairs with the smp_wmb() in __icfab_req_post(). */
	smp_rmb();
	sum += READ_ONCE(ctx->nr_done) + more;
	return sum < cap ? cap - sum : 0;
}

/*
 * Check one descriptor and turn @req, fresh from icfab_req_alloc() (done
 * before locking: with slub_debug an allocation costs more than the rest
 * of a DELAY's path), into a request holding what it needs. @req is
 * used up either way: freed on error. One path for the ioctl and
 * io_uring; the fabric lock is held.
 */
static __always_inline int icfab_req_prepare(struct icfab_ctx *ctx,
					      const struct icfab_desc *dd,
					      struct icfab_req *req)
{
	const struct icfab_data *d = ctx->fabric->data;
	struct icfab_queue *q;
	int err = 0;

	lockdep_assert_held(&ctx->fabric->lock);
	req->ctx = ctx;
	if (dd->pad || (dd->circuit && dd->op != ICFAB_OP_WRITE) ||
	    dd->flags & ~ICFAB_DESC_F_ALL)
		err = -EINVAL;
	else if (dd->flags & ICFAB_DESC_F_NOTIFY ?
		 dd->op != ICFAB_OP_WRITE || dd->circuit :
		 dd->imm && dd->op != ICFAB_OP_TRIGGER)
		err = -EINVAL;
	q = err ? NULL : icfab_ctx_queue(ctx, dd->queue);
	if (!err && !q)
		err = -ENOENT;
	if (!err && q->recv)
		err = -EINVAL;
	if (err) {
		icfab_req_free(req);
		return err;
	}

	req->q = q;
	req->op = dd->op;
	req->len = dd->len;
	req->cqe.user_tag = dd->user_tag;
	req->cqe.queue = dd->queue;

	switch (dd->op) {
	case ICFAB_OP_WRITE:
	case ICFAB_OP_READ:
		if (dd->circuit) {
			err = icfab_circuit_desc_check(ctx, dd, q->endpoint,
						       &req->local, &req->cx);
			req->local_off = dd->local_off;
			/* Read for a spray offset, though a circuit has none. */
			req->remote_off = dd->remote_off;
			req->src = q->endpoint;
		} else if (dd->flags & ICFAB_DESC_F_TIMING_ONLY) {
			/*
			 * The offsets move nothing: they only say where the
			 * bytes would land, for spraying (ICFAB_F_TIMING_OFFSETS).
			 */
			if (!icfab_data_is_endpoint(d, dd->peer) ||
			    dd->region || dd->rkey)
				err = -EINVAL;
			req->local_off = dd->local_off;
			req->remote_off = dd->remote_off;
			req->src = dd->op == ICFAB_OP_WRITE ? q->endpoint :
							      dd->peer;
			req->dst = dd->op == ICFAB_OP_WRITE ? dd->peer :
							      q->endpoint;
		} else {
			err = icfab_desc_check_memory(ctx, dd, q, req);
		}
		break;
	case ICFAB_OP_DELAY:
		if (dd->peer || dd->flags || dd->region || dd->local_off ||
		    dd->rkey || dd->remote_off)
			err = -EINVAL;
		break;
	case ICFAB_OP_FENCE:
		if (dd->peer || dd->flags || dd->region || dd->local_off ||
		    dd->rkey || dd->remote_off || dd->len)
			err = -EINVAL;
		break;
	case ICFAB_OP_TRIGGER:
		if (dd->peer || dd->flags || dd->region || dd->local_off ||
		    dd->rkey || dd->remote_off || !dd->len ||
		    dd->imm >= ICFAB_TRIGGER_COUNTERS)
			err = -EINVAL;
		else if (!__icfab_trigger_rq(ctx->fabric->data, q, ctx))
			err = -ENOTCONN;
		req->trig_imm = dd->imm;
		break;
	default:
		err = -EINVAL;
	}
	/*
	 * Waiting cannot make room for what no engine can ever hold: more
	 * than ICFAB_MAX_XFER_SEGMENTS segments, which is more bytes than
	 * that many whole segments (a product that fits in 64 bits, and
	 * no division per descriptor).
	 */
	BUILD_BUG_ON(ICFAB_MAX_XFER_SEGMENTS > U32_MAX);
	if (!err && (dd->op == ICFAB_OP_WRITE || dd->op == ICFAB_OP_READ) &&
	    dd->len > (u64)ICFAB_MAX_XFER_SEGMENTS * d->engine.segment_size)
		err = -E2BIG;
	if (!err && (q->inflight >= q->depth || icfab_ctx_descs_full(ctx)))
		err = -EAGAIN;
	if (!err && dd->flags & ICFAB_DESC_F_NOTIFY)
		err = __icfab_notify_reserve(ctx, req, dd->imm);
	if (err) {
		icfab_req_free(req);
		return err;
	}
	return 0;
}

/*
 * Start a prepared request: count it, then time it. Sets *@advance when
 * the safe time may have moved (a DELAY, or a free-running context).
 * Returns 0, or -errno with the request freed and nothing changed. The
 * fabric lock is held.
 */
static __always_inline int icfab_req_start(struct icfab_ctx *ctx,
					    struct icfab_req *req,
					    bool *advance)
{
	struct icfab_data *d = ctx->fabric->data;
	struct icfab_queue *q = req->q;
	u64 t;
	int err;

	lockdep_assert_held(&ctx->fabric->lock);

	q->inflight++;
	if (req->ucmd) {
		ctx->u_inflight++;
		list_add_tail(&req->unode, &ctx->ureqs);
	} else {
		ctx->nr_inflight++;
	}
	/*
	 * The context's clock; a free-running one starts at the engine's.
	 * Paced: the wall clock's fabric time, rounded up so that the wall
	 * time from here to the completion is at least finish - submit.
	 */
	if (d->paced)
		t = max(icfab_paced_now(d, true), d->engine.now_ps);
	else if (ctx->free_run)
		t = max(ctx->clock_ps, d->engine.now_ps);
	else
		t = ctx->clock_ps;
	if (ctx->free_run || d->paced)
		ctx->clock_ps = t;
	req->cqe.submit_ps = t;
	/* Paced: the new transfer may be due before the armed timer. */
	*advance |= ctx->free_run || d->paced;

	switch (req->op) {
	case ICFAB_OP_DELAY: {
		u64 finish;

		if (d->paced) {
			/* The context computes in wall time: nothing to time. */
			__icfab_req_finish(req, 0, t, t, 0);
			return 0;
		}
		if (check_add_overflow(t, req->len, &finish))
			finish = ICFAB_ENGINE_NEVER - 1;
		ctx->clock_ps = finish;
		*advance = true;
		/*
		 * __icfab_req_finish() without what a DELAY never has
		 * (icfab_req_prepare() gives it no region, circuit or
		 * NOTIFY) and with its context there.
		 */
		__icfab_req_post(ctx, req, 0, t, finish, 0);
		return 0;
	}
	case ICFAB_OP_FENCE:
		if (list_empty(&q->backlog) && !q->outstanding) {
			t = max3(t, q->max_finish_ps, q->fence_ps);
			q->fence_ps = t;
			__icfab_req_finish(req, 0, t, t, 0);
			return 0;
		}
		break;
	case ICFAB_OP_TRIGGER:
		/*
		 * A count already there: at the finish of the WRITE that
		 * brought it, if that lies after the clock.
		 */
		if (list_empty(&q->backlog) &&
		    __icfab_trigger_ready(d, q, req)) {
			t = max3(t, q->fence_ps,
				 __icfab_trigger_step_ps(d, q, req, t));
			q->fence_ps = t;
			__icfab_req_finish(req, 0, t, t, 0);
			return 0;
		}
		break;
	default:
		if (list_empty(&q->backlog)) {
			err = icfab_xfer_submit(d, q, req,
						max(t, q->fence_ps), false);
			if (err)
				goto err_uncount;
			req->cqe.submit_ps = max(t, d->engine.now_ps);
			return 0;
		}
	}
	list_add_tail(&req->node, &q->backlog);
	req->in_backlog = true;
	return 0;

err_uncount:
	q->inflight--;
	if (req->ucmd) {
		ctx->u_inflight--;
		list_del(&req->unode);
	} else {
		ctx->nr_inflight--;
	}
	icfab_req_free(req);
	return err;
}

/*
 * The WRITEs @ctx's path accepted (icfab_submit_fast()), in order, as
 * icfab_req_start() would have started them then: counted in flight,
 * and into the engine at the start the path recorded, the context's
 * clock, or behind their queue's backlog. Emulated time is the same:
 * with a WRITE accepted, the context holds the engine at that clock
 * (its WAIT, which stops holding it, comes here first), so the engine
 * processes nothing at that instant or after it meanwhile, and what
 * icfab_engine_submit_at() and the start read is what they read at the
 * SUBMIT. A FENCE or a receiver's TRIGGER that headed the queue's
 * backlog at the SUBMIT may have gone meanwhile, and what followed it
 * into the engine: at an instant before that clock (the engine got no
 * further), so the WRITE, which would have followed them at its start,
 * goes in after them at the same start. The room each needs was
 * promised (d->granted_events): it fits. What the chain's WRITEs share
 * is looked at once, before its loop, or compiled out
 * (icfab_xfer_submit()'s @accepted). Called by
 * __icfab_ctx_slow() with ->fast clear. The fabric lock is held.
 */
static noinline void __icfab_ctx_start_accepted(struct icfab_ctx *ctx)
{
	struct icfab_data *d = ctx->fabric->data;
	struct icfab_req *req, *next;

	lockdep_assert_held(&ctx->fabric->lock);
	/* Their room is the engine's from here: all of it, at once. */
	d->granted_events -= ctx->accepted_events;
	d->granted_xfers -= ctx->nr_accepted;
	/*
	 * And each is in flight from here, counted at once (->fast is
	 * clear: nobody reads the count outside the fabric lock, and
	 * nothing below reads it); one that fails drops it as ever.
	 */
	ctx->nr_inflight += ctx->nr_accepted;
	ctx->accepted_events = 0;
	ctx->nr_accepted = 0;
	req = ctx->accepted;
	ctx->accepted = NULL;
	ctx->accepted_last = NULL;
	/* Once for the chain, where icfab_xfer_submit() syncs at each. */
	icfab_data_trace_sync(d);
	for (; req; req = next) {
		struct icfab_queue *q = req->q;
		u64 t = req->cqe.submit_ps;
		int err;

		next = req->pool_next;
		/* A NOTIFY's promise is its reservation from here. */
		if (unlikely(req->notify))
			__icfab_notify_keep(req);
		q->accepted--;
		q->inflight++;
		if (!list_empty(&q->backlog)) {
			list_add_tail(&req->node, &q->backlog);
			req->in_backlog = true;
			continue;
		}
		err = icfab_xfer_submit(d, q, req, max(t, q->fence_ps), true);
		if (likely(!err)) {
			req->cqe.submit_ps = max(t, d->engine.now_ps);
			continue;
		}
		/* Its room was promised: a kernel bug, told as a backlog's. */
		WARN_ON_ONCE(err == -EAGAIN);
		t = max(t, d->engine.now_ps);
		__icfab_req_finish(req, err == -EAGAIN ? -ENOBUFS : err, t, t,
				   0);
	}
}

/*
 * Descriptors and completions cross to and from userspace this many at a
 * time, on the stack: one user copy per descriptor cost more than the
 * descriptor's own path with short batches on fast links.
 */
#define ICFAB_COPY_CHUNK	8

/*
 * A SUBMIT runs the engine for what it started at least every this many
 * descriptors, so that other contexts waiting on the safe time go on.
 */
#define ICFAB_SUBMIT_BATCH	256

/* A context nobody may reach is looked at again after these, ms. */
#define ICFAB_REACH_MIN_MS	10
#define ICFAB_REACH_MAX_MS	1000

/*
 * A longer batch crosses this many at a time, in a buffer of its own:
 * the lock, the copy and the allocations once per 64 descriptors rather
 * than per 8. Still a bounded hold of the fabric lock (docs/SECURITY.md).
 */
#define ICFAB_BATCH_CHUNK	64

struct icfab_batch_buf {
	struct icfab_desc descs[ICFAB_BATCH_CHUNK];
	struct icfab_req *fresh[ICFAB_BATCH_CHUNK];
};

/*
 * @n descriptors from @udescs into @descs, a word at a time; returns how
 * many were copied whole before a fault (0 for a bad range). What
 * copy_from_user() of the array would give, without a string copy per
 * chunk: a descriptor is eight words, and `rep movsb` is a step per byte
 * under TCG's instruction count (the issue's measure; on hardware it
 * costs about what eight moves do at this size); and without the
 * hardened-usercopy checks, which have nothing to check on an array on
 * the stack or in the context's buffer of its own type.
 */
static u32 icfab_descs_from_user(struct icfab_desc *descs,
				 const struct icfab_desc __user *udescs, u32 n)
{
	u32 i;

	/* Unrolled: as a loop it counted as many instructions as rep movsb. */
	BUILD_BUG_ON(sizeof(*descs) != 8 * sizeof(u64));
	if (!user_access_begin(udescs, array_size(n, sizeof(*udescs))))
		return 0;
	for (i = 0; i < n; i++) {
		const u64 __user *from = (const u64 __user *)&udescs[i];
		u64 *to = (u64 *)&descs[i];

		unsafe_get_user(to[0], &from[0], fault);
		unsafe_get_user(to[1], &from[1], fault);
		unsafe_get_user(to[2], &from[2], fault);
		unsafe_get_user(to[3], &from[3], fault);
		unsafe_get_user(to[4], &from[4], fault);
		unsafe_get_user(to[5], &from[5], fault);
		unsafe_get_user(to[6], &from[6], fault);
		unsafe_get_user(to[7], &from[7], fault);
	}
	user_access_end();
	return n;

fault:
	user_access_end();
	return i;
}

/*
 * Does @ctx get the WRITE path alone, not the DELAYs'
 * (__icfab_ctx_may_fast())? When something of it is in flight, or it
 * has a receive queue: then the engine's runs, any context's, post into
 * its completion state (its own completions; the receive completions of
 * others' NOTIFY WRITEs, which may also release its TRIGGERs and what
 * waits behind them), and the DELAY path writes that state (the done
 * list, the ring, the spent stack). The WRITE path writes none of it,
 * only its own list and counts (ctx->accepted, q->accepted, the
 * credit), and reads with READ_ONCE() only counts that the posts lower
 * or, for a receive completion, raise nr_done alone
 * (icfab_ctx_descs_room_unlocked()): so a receiver's WRITEs may take it
 * as anyone's (docs/ARCHITECTURE.md, "Receivers on the WRITE path").
 * The fabric lock is held.
 */
static __always_inline bool
__icfab_ctx_fast_writes(const struct icfab_ctx *ctx)
{
	lockdep_assert_held(&ctx->fabric->lock);
	return ctx->nr_inflight || ctx->u_inflight || ctx->nr_recvqs;
}

/*
 * May @ctx's DELAYs go under its own lock (->fast)? Only when nothing
 * but its own system calls can touch its completion state: nothing of
 * it in flight, so nothing of it completes from the engine; no receive
 * queue, so no receive completion comes; no WAIT of either kind under
 * way; and a DELAY that moves its clock (neither free-running nor
 * paced). Its WRITEs on the same terms but that it may have things in
 * flight or a receive queue (__icfab_ctx_fast_writes()). The fabric
 * lock is held.
 */
static u8 __icfab_ctx_may_fast(const struct icfab_ctx *ctx)
{
	lockdep_assert_held(&ctx->fabric->lock);
	if (!ctx->nr_eps || ctx->dead || ctx->free_run ||
	    ctx->fabric->data->paced || ctx->in_wait ||
	    ctx->uwait || ctx->waiting || ctx->catchup || ctx->cq_wait)
		return 0;
	if (__icfab_ctx_fast_writes(ctx))
		return ICFAB_CTX_FAST_WRITE;
	return ICFAB_CTX_FAST_WRITE | ICFAB_CTX_FAST_DELAY;
}

/* Engine room a context may promise at a time: a chunk's small WRITEs. */
#define ICFAB_CREDIT_XFERS	128
#define ICFAB_CREDIT_EVENTS	16384

/*
 * Credit for @ctx, whose ->fast is about to have ICFAB_CTX_FAST_WRITE:
 * its share of what the engine's tables do not hold, half of it split
 * among the attached contexts, up to the amounts above, and no more
 * than is free beside what is promised already; none to grow them for.
 * The other half is left to submissions under the fabric lock, which
 * take back credit not yet used before the tables grow
 * (icfab_data_room_beside_credit()): so the tables are never larger
 * for credit, and with many contexts a context's share shrinks instead
 * (docs/ARCHITECTURE.md, "The WRITE path"). The fabric lock is held and
 * ->fast is clear.
 */
static noinline void __icfab_ctx_credit(struct icfab_ctx *ctx)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_data *d = fabric->data;
	struct icfab_engine *e = &d->engine;
	u32 shares = 2 * max_t(u32, fabric->nr_attached, 1);
	u64 events;
	u32 xfers;

	lockdep_assert_held(&fabric->lock);
	/* The tables hold what is promised (d->granted_events): kept. */
	if (e->events_reserved + d->granted_events >= e->events_cap ||
	    e->nr_xfers + d->granted_xfers >= e->xfers_cap)
		return;
	events = min_t(u64, e->events_cap - e->events_reserved -
		       d->granted_events,
		       div_u64(e->events_cap - e->events_reserved, shares));
	xfers = min_t(u32, e->xfers_cap - e->nr_xfers - d->granted_xfers,
		      (e->xfers_cap - e->nr_xfers) / shares);
	if (!events || !xfers)
		return;
	ctx->credit_events = min_t(u64, events, ICFAB_CREDIT_EVENTS);
	ctx->credit_xfers = min_t(u32, xfers, ICFAB_CREDIT_XFERS);
	d->granted_events += ctx->credit_events;
	d->granted_xfers += ctx->credit_xfers;
}

/*
 * At the end of a SUBMIT's chunk, of a WAIT, and of the context's own
 * ATTACH, QUEUE_CREATE, CQ_SETUP and WAIT_END, under the fabric lock:
 * ->fast anew. Each cleared it (__icfab_ctx_slow()), and a context would
 * otherwise take neither path until a SUBMIT under the fabric lock set
 * it: the first chunk after a WAIT (a SUBMIT + WAIT loop of DELAYs
 * never had the DELAY path), after the queue's creation, after the
 * ring's. With ICFAB_CTX_FAST_WRITE comes credit, also before the
 * context has had anything in flight, so that its first chunk of WRITEs
 * takes the WRITE path too (it went under the fabric lock, one chunk a
 * context: half the WRITEs of an all-to-all by 16 processes). A context
 * of DELAYs alone holds some as well: its share, no more than is free,
 * and taken back before the tables grow (icfab_data_room_beside_credit()),
 * so it costs nobody room; and the reckoning, once a WAIT.
 */
static void __icfab_ctx_fast_update(struct icfab_ctx *ctx)
{
	u8 fast = __icfab_ctx_may_fast(ctx);

	if (fast == ctx->fast)
		return;
	/* Clear in every caller (cleared as it took the lock): cheap. */
	__icfab_ctx_slow(ctx);
	if (fast & ICFAB_CTX_FAST_WRITE)
		__icfab_ctx_credit(ctx);
	spin_lock(&ctx->lock);
	WRITE_ONCE(ctx->fast, fast);
	spin_unlock(&ctx->lock);
}

/*
 * Is @dd a timing-only WRITE (or, @read, a READ: a constant at each
 * call) with nothing else set: op, pad and flags as one word, circuit
 * and imm as another, the region, the key? Seven tests a descriptor
 * made four; the same answer.
 */
static __always_inline bool icfab_desc_timed(const struct icfab_desc *dd,
					     const bool read)
{
	static const struct icfab_desc want_op[2] = {
		{ .op = ICFAB_OP_WRITE, .flags = ICFAB_DESC_F_TIMING_ONLY },
		{ .op = ICFAB_OP_READ, .flags = ICFAB_DESC_F_TIMING_ONLY },
	};
	const struct icfab_desc *want = &want_op[read];
	u32 head, want_head;
	u64 tail;

	BUILD_BUG_ON(offsetof(struct icfab_desc, pad) != 1 ||
		     offsetof(struct icfab_desc, flags) != 2 ||
		     offsetof(struct icfab_desc, queue) != sizeof(head) ||
		     offsetof(struct icfab_desc, circuit) % sizeof(tail) ||
		     offsetof(struct icfab_desc, imm) !=
		     offsetof(struct icfab_desc, circuit) + sizeof(u32) ||
		     sizeof(struct icfab_desc) !=
		     offsetof(struct icfab_desc, circuit) + sizeof(tail));
	memcpy(&head, dd, sizeof(head));
	memcpy(&want_head, want, sizeof(want_head));
	/* From the descriptor, not its field: fortify sees the two. */
	memcpy(&tail, (const u8 *)dd + offsetof(struct icfab_desc, circuit),
	       sizeof(tail));
	return head == want_head && !tail && !dd->region && !dd->rkey;
}

/*
 * What the WRITE path's accepts (icfab_write_accept(), _memory(),
 * _notify()) write of an accepted request, as icfab_req_prepare() would:
 * its fields from @dd, @op from @src to @dst, its start the context's
 * clock; then chained at **@tail (not listed: a list_add() is a
 * checking call under DEBUG_LIST) and counted against its queue.
 */
static __always_inline void icfab_accepted_fill(struct icfab_ctx *ctx,
						struct icfab_req *req,
						struct icfab_queue *q,
						const struct icfab_desc *dd,
						bool to_cq, u8 op, u32 src,
						u32 dst,
						struct icfab_req ***tail)
{
	req->ctx = ctx;
	req->to_cq = to_cq;
	req->q = q;
	req->op = op;
	req->len = dd->len;
	req->cqe.user_tag = dd->user_tag;
	req->cqe.queue = dd->queue;
	req->local_off = dd->local_off;
	req->remote_off = dd->remote_off;
	req->src = src;
	req->dst = dst;
	req->cqe.submit_ps = ctx->clock_ps;
	**tail = req;
	*tail = &req->pool_next;
	q->accepted++;
}

/*
 * A memory WRITE or READ (a local region and a remote region's key,
 * bytes copied, nothing else set) on the WRITE path, as
 * icfab_write_accept() takes a timing-only WRITE: accepted when
 * icfab_req_prepare() would take it, with the same checks, its regions'
 * by icfab_region_write_take() or icfab_region_read_take() under RCU
 * (the remote region's access bit is the op's), and when both regions
 * are plain memory and the remote one on an endpoint of @d (which
 * icfab_req_start() would find: its engine refuses another); then
 * chained at **@tail as a timing-only one is, a READ from the remote
 * endpoint to the queue's. Its references are taken last, after every
 * other check, so that a refused one holds some only when a region went
 * away meanwhile or the peer is no endpoint; they stay in @req, and
 * icfab_submit_fast() puts them once @ctx's lock is let go. @read, a
 * constant at each call: READs, or WRITEs, the code for WRITEs the same
 * as before READs were taken.
 */
static __always_inline bool icfab_write_accept_memory(struct icfab_ctx *ctx,
						      const struct icfab_data *d,
						      const struct icfab_desc *dd,
						      struct icfab_req *req,
						      bool to_cq, u32 seg,
						      struct icfab_req ***tail,
						      u64 *events,
						      const bool read)
{
	u64 nseg = dd->len / seg + (dd->len % seg != 0);
	struct icfab_queue *q;
	u32 rep;

	if (dd->op != (read ? ICFAB_OP_READ : ICFAB_OP_WRITE) || dd->pad ||
	    dd->flags ||
	    dd->circuit || dd->imm || nseg > ICFAB_MAX_XFER_SEGMENTS ||
	    nseg + 1 > *events)
		return false;
	q = icfab_ctx_queue(ctx, dd->queue);
	if (!q || q->recv ||
	    READ_ONCE(q->inflight) + q->accepted >= q->depth)
		return false;
	if (!(read ? icfab_region_read_take(ctx, dd, q->endpoint,
					    &req->local, &req->remote, &rep) :
		     icfab_region_write_take(ctx, dd, q->endpoint,
					     &req->local, &req->remote, &rep)) ||
	    !icfab_data_is_endpoint(d, rep))
		return false;
	*events -= nseg + 1;
	icfab_accepted_fill(ctx, req, q, dd, to_cq,
			    read ? ICFAB_OP_READ : ICFAB_OP_WRITE,
			    read ? rep : q->endpoint, read ? q->endpoint : rep,
			    tail);
	return true;
}

/*
 * A timing-only WRITE on the WRITE path (ICFAB_CTX_FAST_WRITE), under
 * @ctx's own lock: accepted when icfab_req_prepare() would take it (its
 * checks, for this one kind, with the endpoints of @d and its segment size
 * @seg, which are fabric->active's while @ctx is attached; the context's
 * count of descriptors is its caller's, icfab_submit_writes()) and the
 * credit's events left, *@events, have its room; then chained at
 * **@tail, its start the context's clock, for
 * __icfab_ctx_start_accepted() to start. False for anything else,
 * which the fabric lock's path then takes or refuses as ever (or, a
 * memory WRITE, icfab_submit_mem_writes()). @read, a constant at each
 * call: a timing-only READ instead, with the same checks (those of
 * icfab_req_prepare() for a timing-only transfer are the op's alike),
 * its transfer from the peer to the queue's endpoint, as
 * icfab_req_prepare() times it; the code for WRITEs the same as before.
 */
static __always_inline bool icfab_write_accept(struct icfab_ctx *ctx,
					       const struct icfab_data *d,
					       const struct icfab_desc *dd,
					       struct icfab_req *req,
					       bool to_cq, u32 seg,
					       struct icfab_req ***tail,
					       u64 *events, const bool read)
{
	/*
	 * Its segments, as icfab_nr_segments() counts them, in one division
	 * inline: icfab_engine_events_needed() is two calls, and more than
	 * ICFAB_MAX_XFER_SEGMENTS segments is what icfab_req_prepare()
	 * refuses as more bytes than that many whole segments.
	 */
	u64 nseg = dd->len / seg + (dd->len % seg != 0);
	struct icfab_queue *q;

	if (!icfab_desc_timed(dd, read) ||
	    !icfab_data_is_endpoint(d, dd->peer) ||
	    nseg > ICFAB_MAX_XFER_SEGMENTS)
		return false;
	q = icfab_ctx_queue(ctx, dd->queue);
	if (!q || q->recv ||
	    READ_ONCE(q->inflight) + q->accepted >= q->depth)
		return false;
	/* Its events (icfab_engine_events_needed()): no saturation here. */
	if (nseg + 1 > *events)
		return false;
	*events -= nseg + 1;
	icfab_accepted_fill(ctx, req, q, dd, to_cq,
			    read ? ICFAB_OP_READ : ICFAB_OP_WRITE,
			    read ? dd->peer : q->endpoint,
			    read ? q->endpoint : dd->peer, tail);
	return true;
}

/*
 * The receive completion of a NOTIFY WRITE to endpoint @dst that the
 * WRITE path is about to accept, promised on the receive queue there
 * (docs/ARCHITECTURE.md, "NOTIFY WRITEs on the WRITE path"): a request
 * for it, taken without sleeping (from *@spare, what
 * icfab_submit_notify_writes() took of @ctx's pool for its loop, else
 * GFP_NOWAIT; it goes to the receiver's pool when reaped, as one from
 * its own; back onto *@spare when refused), then room on
 * the queue, counted in its ->promised with what is reserved under its
 * claim_lock, which __icfab_notify_reserve() takes too. NULL, nothing
 * changed, where __icfab_notify_reserve() might not take it (no queue, a
 * full or closed one) or no request came without sleeping: the fabric
 * lock's path then answers as ever. Found under RCU: a queue is freed a
 * grace period after it is unregistered, and closed (no promise) before;
 * one promised on stays until its WRITE starts (__icfab_recvq_settle()
 * starts it first). Under @ctx's lock (->fast).
 */
static struct icfab_req *icfab_notify_promise(struct icfab_data *d, u32 dst,
					      struct icfab_req **spare)
{
	struct icfab_queue *rq;
	struct icfab_req *n;
	bool ok = false;
	int promised;

	n = *spare;
	if (n) {
		*spare = n->pool_next;
		icfab_req_clear(n);
	} else {
		n = kzalloc(sizeof(*n), GFP_NOWAIT | __GFP_ACCOUNT |
			    __GFP_NOWARN);
	}
	if (!n)
		return NULL;
	rcu_read_lock();
	rq = icfab_recvq(d, dst);
	if (rq) {
		spin_lock(&rq->claim_lock);
		/*
		 * A reap lowers ->inflight alone: a stale one refuses more.
		 * ->promised first, then ->inflight (struct icfab_queue).
		 */
		promised = atomic_read_acquire(&rq->promised);
		ok = !rq->closed &&
		     READ_ONCE(rq->inflight) + promised < rq->depth;
		if (ok)
			atomic_inc(&rq->promised);
		spin_unlock(&rq->claim_lock);
	}
	rcu_read_unlock();
	if (!ok) {
		n->pool_next = *spare;
		*spare = n;
		return NULL;
	}
	n->ctx = rq->ctx;
	n->q = rq;
	return n;
}

/*
 * A NOTIFY WRITE (ICFAB_DESC_F_NOTIFY, an immediate maybe; timing-only,
 * or a memory WRITE as icfab_write_accept_memory() takes them) on the
 * WRITE path: accepted when icfab_req_prepare() would take it, with its
 * checks in its order, the reservation of its receive completion last,
 * promised here (icfab_notify_promise()) and made a reservation when
 * the list starts (__icfab_notify_keep()); then chained at **@tail as
 * the others are. A memory one refused at its promise holds its
 * regions' references, put by icfab_submit_fast(). Its receive
 * completion's request from *@spare (icfab_notify_promise()).
 */
static __always_inline bool icfab_write_accept_notify(struct icfab_ctx *ctx,
						      struct icfab_data *d,
						      const struct icfab_desc *dd,
						      struct icfab_req *req,
						      bool to_cq, u32 seg,
						      struct icfab_req ***tail,
						      u64 *events,
						      struct icfab_req **spare)
{
	u64 nseg = dd->len / seg + (dd->len % seg != 0);
	struct icfab_queue *q;
	struct icfab_req *n;
	u32 dst;

	if (dd->op != ICFAB_OP_WRITE || dd->pad || dd->circuit ||
	    (dd->flags & ~ICFAB_DESC_F_TIMING_ONLY) != ICFAB_DESC_F_NOTIFY ||
	    nseg > ICFAB_MAX_XFER_SEGMENTS || nseg + 1 > *events)
		return false;
	q = icfab_ctx_queue(ctx, dd->queue);
	if (!q || q->recv ||
	    READ_ONCE(q->inflight) + q->accepted >= q->depth)
		return false;
	if (dd->flags & ICFAB_DESC_F_TIMING_ONLY) {
		if (!icfab_data_is_endpoint(d, dd->peer) || dd->region ||
		    dd->rkey)
			return false;
		dst = dd->peer;
	} else if (!icfab_region_write_take(ctx, dd, q->endpoint,
					    &req->local, &req->remote, &dst) ||
		   !icfab_data_is_endpoint(d, dst)) {
		return false;
	}
	n = icfab_notify_promise(d, dst, spare);
	if (!n)
		return false;
	*events -= nseg + 1;
	/* As __icfab_notify_reserve() fills it. */
	n->op = ICFAB_OP_WRITE;
	n->len = dd->len;
	n->src = q->endpoint;
	n->dst = dst;
	n->cqe.user_tag = (u64)q->endpoint << 32 | dd->imm;
	n->cqe.queue = n->q->id;
	n->sender = req;
	req->notify = n;
	icfab_accepted_fill(ctx, req, q, dd, to_cq, ICFAB_OP_WRITE,
			    q->endpoint, dst, tail);
	return true;
}

/*
 * What both WRITE-path loops (icfab_submit_writes(),
 * icfab_submit_mem_writes()) share: where the accepted chain goes on,
 * the room read once at the start (its room then, as
 * icfab_ctx_descs_room_unlocked() reads it, is never more than what it
 * has at any later instant of the loop, nor more than the credit), and
 * the counts written once at the end for @nr accepted, the chain ending
 * at *@tail and @events of credit left; false when there were none.
 */
static __always_inline struct icfab_req **
icfab_accepted_tail(struct icfab_ctx *ctx)
{
	return ctx->accepted_last ? &ctx->accepted_last->pool_next :
				    &ctx->accepted;
}

static __always_inline u32 icfab_accepted_room(const struct icfab_ctx *ctx)
{
	return min(ctx->credit_xfers,
		   icfab_ctx_descs_room_unlocked(ctx, ctx->nr_accepted));
}

static __always_inline bool icfab_accepted_add(struct icfab_ctx *ctx,
					       struct icfab_req **tail,
					       u64 events, u32 nr)
{
	if (!nr)
		return false;
	*tail = NULL;
	ctx->accepted_last = container_of(tail, struct icfab_req, pool_next);
	ctx->accepted_events += ctx->credit_events - events;
	ctx->credit_events = events;
	ctx->credit_xfers -= nr;
	ctx->nr_accepted += nr;
	return true;
}

/*
 * The WRITE path's loop: from @chunk[@i] on, the WRITEs that
 * icfab_write_accept() takes; returns the index of the first it does not.
 * What they take of the credit and add to the accepted WRITEs' counts
 * is written once, at the end, not at each; and the context's count of
 * descriptors is read once, at the start: its room then, as
 * icfab_ctx_descs_room_unlocked() reads it, is never more than what it
 * has at any later instant of the loop. Out of line, so that the DELAYs'
 * loop keeps its registers. @read, a constant at each call: timing-only
 * READs instead (icfab_submit_timed_reads(), from icfab_submit_reads()),
 * a loop of their own as the memory READs' is, counted apart
 * (fast_timed_reads), not in fast_writes.
 */
static __always_inline u32 __icfab_submit_timed(struct icfab_ctx *ctx,
						const struct icfab_desc *chunk,
						struct icfab_req **fresh,
						u32 i, u32 n, bool to_cq,
						const bool read)
{
	/* Attached (->fast): the engine stays while the lock is held. */
	const struct icfab_data *d = ctx->fabric->data;
	u32 seg = d->engine.segment_size;
	struct icfab_req **tail = icfab_accepted_tail(ctx);
	u64 events = ctx->credit_events;
	u32 start = i;

	n = min(n, i + icfab_accepted_room(ctx));
	for (; i < n; i++)
		if (!icfab_write_accept(ctx, d, &chunk[i], fresh[i], to_cq,
					seg, &tail, &events, read))
			break;
	if (icfab_accepted_add(ctx, tail, events, i - start) && read)
		atomic_add(i - start, &ctx->fabric->fast_timed_reads);
	return i;
}

static noinline u32 icfab_submit_writes(struct icfab_ctx *ctx,
					const struct icfab_desc *chunk,
					struct icfab_req **fresh, u32 i,
					u32 n, bool to_cq)
{
	return __icfab_submit_timed(ctx, chunk, fresh, i, n, to_cq, false);
}

static noinline u32 icfab_submit_timed_reads(struct icfab_ctx *ctx,
					     const struct icfab_desc *chunk,
					     struct icfab_req **fresh, u32 i,
					     u32 n, bool to_cq)
{
	return __icfab_submit_timed(ctx, chunk, fresh, i, n, to_cq, true);
}

/*
 * icfab_submit_writes() for memory WRITEs, or (@read) memory READs
 * (icfab_write_accept_memory()): from @chunk[@i] on, those it takes;
 * returns the index of the first it does not. The same reckoning of the
 * room, the credit and the accepted counts, once a chunk. A loop of its
 * own, not a test in the timing-only WRITEs' loop: there the memory
 * WRITE's call cost every timing-only WRITE its registers (8 guest
 * instructions each, the chain's tail and the credit on the stack); and
 * one for each op, @read a constant: a READ's tests in the WRITEs' loop
 * cost each memory WRITE 24 guest instructions. READs are counted apart
 * (fast_mem_reads), not in fast_writes.
 */
static __always_inline u32 __icfab_submit_mem(struct icfab_ctx *ctx,
					       const struct icfab_desc *chunk,
					       struct icfab_req **fresh,
					       u32 i, u32 n, bool to_cq,
					       const bool read)
{
	/* Attached (->fast): the engine stays while the lock is held. */
	const struct icfab_data *d = ctx->fabric->data;
	u32 seg = d->engine.segment_size;
	struct icfab_req **tail = icfab_accepted_tail(ctx);
	u64 events = ctx->credit_events;
	u32 start = i;

	n = min(n, i + icfab_accepted_room(ctx));
	for (; i < n; i++)
		if (!icfab_write_accept_memory(ctx, d, &chunk[i], fresh[i],
					       to_cq, seg, &tail, &events,
					       read))
			break;
	if (icfab_accepted_add(ctx, tail, events, i - start))
		atomic_add(i - start, read ? &ctx->fabric->fast_mem_reads :
					     &ctx->fabric->fast_mem_writes);
	return i;
}

static noinline u32 icfab_submit_mem_writes(struct icfab_ctx *ctx,
					    const struct icfab_desc *chunk,
					    struct icfab_req **fresh, u32 i,
					    u32 n, bool to_cq)
{
	return __icfab_submit_mem(ctx, chunk, fresh, i, n, to_cq, false);
}

/*
 * icfab_submit_writes() for NOTIFY WRITEs (icfab_write_accept_notify()),
 * a loop of its own as icfab_submit_mem_writes() is, and for the same
 * reason.
 */
static noinline u32 icfab_submit_notify_writes(struct icfab_ctx *ctx,
					       const struct icfab_desc *chunk,
					       struct icfab_req **fresh, u32 i,
					       u32 n, bool to_cq)
{
	/* Attached (->fast): the engine stays while the lock is held. */
	struct icfab_data *d = ctx->fabric->data;
	u32 seg = d->engine.segment_size;
	struct icfab_req **tail = icfab_accepted_tail(ctx);
	u64 events = ctx->credit_events;
	struct icfab_req *spare;
	u32 start = i, k;

	n = min(n, i + icfab_accepted_room(ctx));
	/*
	 * The receive completions' requests, one for each descriptor
	 * ahead that asks to notify, from the pool under one pool_lock
	 * rather than one each; what a refusal leaves goes back under
	 * another. Not onto the spent stack: the engine's runs, under the
	 * fabric lock alone, post this context's completions meanwhile.
	 */
	for (k = i; k < n && (chunk[k].flags & ICFAB_DESC_F_NOTIFY); k++)
		;
	spare = icfab_pool_take(ctx, k - i);
	for (; i < n; i++)
		if (!icfab_write_accept_notify(ctx, d, &chunk[i], fresh[i],
					       to_cq, seg, &tail, &events,
					       &spare))
			break;
	if (unlikely(spare))
		icfab_pool_give(ctx, spare);
	if (icfab_accepted_add(ctx, tail, events, i - start))
		atomic_add(i - start, &ctx->fabric->fast_notify_writes);
	return i;
}

/*
 * READs, memory and timing-only, from @chunk[@i] on: each kind's loop
 * (__icfab_submit_mem() for READs, here, and icfab_submit_timed_reads())
 * chosen by the descriptor where the last stopped, as
 * icfab_submit_fast() chooses among its loops, until one takes nothing
 * or stops at one of its own kind; returns the index of the first READ
 * not taken, or of the first descriptor that is no READ. One call for
 * READs of either kind in icfab_submit_fast(), as the memory READs'
 * loop was: a call there of its own cost the WRITEs' way through it
 * registers. The memory READs' loop inline, so that they pay no call
 * more than before (one cost each 64-byte READ of desc_cost 2 guest
 * instructions).
 */
static noinline u32 icfab_submit_reads(struct icfab_ctx *ctx,
				       const struct icfab_desc *chunk,
				       struct icfab_req **fresh, u32 i,
				       u32 n, bool to_cq)
{
	bool timed, last = false, first = true;

	while (i < n && chunk[i].op == ICFAB_OP_READ) {
		u32 from = i;

		/* A memory READ has no flags; any other is tried as timed. */
		timed = chunk[i].flags;
		if (!first && timed == last)
			break;
		first = false;
		last = timed;
		if (timed)
			i = icfab_submit_timed_reads(ctx, chunk, fresh, i, n,
						     to_cq);
		else
			i = __icfab_submit_mem(ctx, chunk, fresh, i, n, to_cq,
					       true);
		if (i == from)
			break;
	}
	return i;
}

/*
 * The DELAY and WRITE paths, under @ctx's own lock and not the fabric's
 * (->fast): from @chunk[*@at] on, as long as they are DELAYs that
 * icfab_req_prepare() and icfab_req_start() would take, each exactly as
 * they would (the clock, the completion into the ring or onto the done
 * list), or WRITEs and READs that icfab_write_accept(),
 * icfab_write_accept_memory() and icfab_write_accept_notify() take; the
 * first that is
 * not, with its error or anything else, is left with the rest to them,
 * under the fabric lock. A DELAY does not follow an accepted WRITE here:
 * it would move the clock the WRITE's start holds the engine at.
 * Returns how many it took (*@at moved past them), and in *@moved how
 * many of them were DELAYs, which moved the clock.
 */
static noinline u32 icfab_submit_fast(struct icfab_ctx *ctx,
				      const struct icfab_desc *chunk,
				      struct icfab_req **fresh, u32 *at,
				      u32 n, bool to_cq, u32 *moved)
{
	u32 i = *at, nd = 0, nr = 0, nw;
	u8 kind = 0;
	u8 fast;

	spin_lock(&ctx->lock);
	fast = ctx->fast;
	if (!fast || (to_cq && !ctx->cq))
		goto out;
	/*
	 * DELAYs first, in a loop of their own: in one loop with the
	 * WRITEs each DELAY paid for the WRITE's tests and registers
	 * (tools/bench/README.md, "The credit bounded, and DELAYs
	 * without it"). None after a WRITE.
	 */
	if ((fast & ICFAB_CTX_FAST_DELAY) && !ctx->nr_accepted) {
		for (; i < n; i++) {
			const struct icfab_desc *dd = &chunk[i];
			struct icfab_req *req = fresh[i];
			struct icfab_queue *q;
			struct icfab_cqe *slot;
			u64 t, finish;

			if (dd->op != ICFAB_OP_DELAY || dd->pad ||
			    dd->circuit || dd->flags || dd->imm || dd->peer ||
			    dd->region || dd->local_off || dd->rkey ||
			    dd->remote_off)
				break;
			q = icfab_ctx_queue(ctx, dd->queue);
			if (!q || q->recv || q->inflight >= q->depth ||
			    icfab_ctx_descs_full(ctx))
				break;
			req->ctx = ctx;
			req->to_cq = to_cq;
			req->q = q;
			req->op = dd->op;
			req->len = dd->len;
			req->cqe.user_tag = dd->user_tag;
			req->cqe.queue = dd->queue;
			t = ctx->clock_ps;
			req->cqe.submit_ps = t;
			if (check_add_overflow(t, req->len, &finish))
				finish = ICFAB_ENGINE_NEVER - 1;
			/* Read by others' engine runs (icfab_data_horizon()). */
			WRITE_ONCE(ctx->clock_ps, finish);
			/*
			 * Complete there and then, as __icfab_req_post()
			 * would: in the ring's slot, or (none asked, or full:
			 * an overflow, counted) onto the done list, counted
			 * against its queue until reaped. Never in flight,
			 * so not counted in and out of nr_inflight (stores
			 * the engine's completions make one at a time, for
			 * readers outside the fabric lock). No WAIT is under
			 * way (->fast): nothing to wake.
			 */
			slot = to_cq ? icfab_cq_slot(ctx->cq) : NULL;
			if (slot) {
				__icfab_cq_fill(ctx, req, slot, 0, t, finish, 0);
				__icfab_req_spend(ctx, req);
				continue;
			}
			icfab_req_result(req, 0, t, finish, 0);
			q->inflight++;
			__icfab_done_add(ctx, req);
		}
	}
	nd = i - *at;
	/*
	 * Then timing-only WRITEs, memory WRITEs, NOTIFY WRITEs, memory
	 * READs and timing-only READs, each run by its own loop, chosen by
	 * the descriptor where the last loop stopped, until one takes
	 * nothing or stops at one of its own kind, which it refused: so no
	 * loop looks at a descriptor twice (a memory one refused may hold
	 * references, put below, and would take them again). A memory
	 * WRITE or READ has no flags, a NOTIFY WRITE ICFAB_DESC_F_NOTIFY, a
	 * timing-only one ICFAB_DESC_F_TIMING_ONLY (a WRITE or READ with
	 * other flags is refused by its loop). READs of both kinds are one
	 * kind here, icfab_submit_reads() choosing between their loops.
	 */
	while ((fast & ICFAB_CTX_FAST_WRITE) && i < n) {
		const struct icfab_desc *dd = &chunk[i];
		u32 from = i;
		u8 next;

		if (dd->op == ICFAB_OP_READ)
			next = 1;
		else if (dd->op != ICFAB_OP_WRITE)
			break;
		else if (!dd->flags)
			next = 2;
		else if (dd->flags & ICFAB_DESC_F_NOTIFY)
			next = 3;
		else
			next = 4;
		if (next == kind)
			break;
		kind = next;
		if (kind == 1) {
			i = icfab_submit_reads(ctx, chunk, fresh, i, n, to_cq);
			nr += i - from;
		} else if (kind == 2) {
			i = icfab_submit_mem_writes(ctx, chunk, fresh, i, n,
						    to_cq);
		} else if (kind == 3) {
			i = icfab_submit_notify_writes(ctx, chunk, fresh, i, n,
						       to_cq);
		} else {
			i = icfab_submit_writes(ctx, chunk, fresh, i, n,
						to_cq);
		}
		if (i == from)
			break;
	}
	/* Not while the engine may post (nothing in flight: DELAY). */
	if (fast & ICFAB_CTX_FAST_DELAY)
		__icfab_spent_flush(ctx);
out:
	spin_unlock(&ctx->lock);
	/*
	 * A memory WRITE refused holding references to its regions
	 * (icfab_write_accept_memory()): put here, not under the spinlock,
	 * where a last put would free pages. The fabric lock's path looks
	 * its regions up again.
	 */
	if (i < n && unlikely(fresh[i]->local))
		icfab_req_put_regions(fresh[i]);
	n = i - *at;
	nw = n - nd - nr;
	*at = i;
	*moved = nd;
	if (nd)
		atomic_add(nd, &ctx->fabric->fast_delays);
	if (nw)
		atomic_add(nw, &ctx->fabric->fast_writes);
	return n;
}

/*
 * A DELAY path moved @ctx's clock outside the fabric lock: the safe time
 * may have moved, and other contexts' WAITs wait on it, so the engine
 * runs. Not behind the lock's holder, though: when another has it, the
 * engine's work item runs it after (d->run_work, which takes the lock);
 * that reads the clock, written before it was queued. @ctx is attached
 * (->fast), so the engine stays.
 */
static void icfab_data_advance_unlocked(struct icfab_ctx *ctx)
{
	struct icfab_fabric *fabric = ctx->fabric;

	if (mutex_trylock(&fabric->lock)) {
		icfab_data_advance(fabric);
		mutex_unlock(&fabric->lock);
	} else {
		queue_work(system_unbound_wq, &fabric->data->run_work);
	}
}

/*
 * The fabric lock for a submission, counting the times it was found
 * taken (debugfs submit_lock_waits): how often submissions serialise on
 * it, a count where wall time on a shared host is noise.
 */
static __always_inline void icfab_submit_lock(struct icfab_fabric *fabric)
{
	if (mutex_trylock(&fabric->lock))
		return;
	atomic_inc(&fabric->submit_lock_waits);
	mutex_lock(&fabric->lock);
}

/*
 * Validate and submit @nr descriptors from @udescs in order: the body of
 * ICFAB_IOC_SUBMIT and of ICFAB_UCMD_SUBMIT_BATCH. Returns the number
 * accepted, or -errno when the first one failed (see ICFAB_IOC_SUBMIT).
 * With ICFAB_SUBMIT_F_CQ their completions go to the ring.
 */
long icfab_submit_descs(struct icfab_ctx *ctx,
			const struct icfab_desc __user *udescs, u32 nr,
			u32 flags)
{
	struct icfab_fabric *fabric = ctx->fabric;
	/*
	 * Not zeroed on entry (CONFIG_INIT_STACK_ALL_ZERO zeroed these 576
	 * bytes on every SUBMIT, a batch's too, which uses the buffer):
	 * only what a chunk wrote is read, descriptors below @have and
	 * requests below @nr_fresh, and nothing of them leaves the kernel.
	 */
	struct icfab_desc stack_descs[ICFAB_COPY_CHUNK] __uninitialized;
	struct icfab_req *stack_fresh[ICFAB_COPY_CHUNK] __uninitialized;
	struct icfab_batch_buf *buf = NULL;
	struct icfab_desc *chunk = stack_descs;
	struct icfab_req **fresh = stack_fresh;
	u32 i = 0, have, at, nr_fresh, size = ICFAB_COPY_CHUNK;
	bool to_cq = flags & ICFAB_SUBMIT_F_CQ;
	bool advance = false;
	long ret = 0;

	if (flags & ~ICFAB_SUBMIT_F_ALL)
		return -EINVAL;
	if (nr > ICFAB_COPY_CHUNK) {
		buf = xchg(&ctx->batch_buf, NULL);
		if (!buf)
			buf = kmalloc(sizeof(*buf), GFP_KERNEL_ACCOUNT);
		if (buf) {
			chunk = buf->descs;
			fresh = buf->fresh;
			size = ICFAB_BATCH_CHUNK;
		}
	}

	while (i < nr || !i) {
		u32 want = min_t(u32, nr - i, size);
		int err = 0;
		u8 fast;

		/*
		 * Copied once, outside the lock (a fault may take long);
		 * the copy is what is checked and used. What precedes a
		 * fault is submitted, as one by one.
		 */
		have = icfab_descs_from_user(chunk, &udescs[i], want);
		/* Their requests too: allocating is the slow part. */
		nr_fresh = icfab_req_alloc_many(ctx, fresh, have);

		at = 0;
		fast = READ_ONCE(ctx->fast);
		if (nr_fresh &&
		    ((chunk[0].op == ICFAB_OP_DELAY &&
		      fast & ICFAB_CTX_FAST_DELAY) ||
		     ((chunk[0].op == ICFAB_OP_WRITE ||
		       chunk[0].op == ICFAB_OP_READ) &&
		      fast & ICFAB_CTX_FAST_WRITE))) {
			u32 moved, took;

			took = icfab_submit_fast(ctx, chunk, fresh, &at,
						 nr_fresh, to_cq, &moved);
			i += took;
			if (at == have && have == want) {
				/*
				 * All of it: the fabric lock only to run,
				 * for a clock a DELAY moved (a WRITE's
				 * start holds the engine where it was).
				 */
				if (moved)
					icfab_data_advance_unlocked(ctx);
				ret = i;
				if (i == nr || fatal_signal_pending(current))
					break;
				cond_resched();
				continue;
			}
			if (moved)
				advance = true;
		}

		icfab_submit_lock(fabric);
		__icfab_ctx_slow(ctx);
		if (!ctx->nr_eps)
			err = -ENOENT;
		else if (ctx->dead)
			/* Killed meanwhile: what it took is all it takes. */
			err = -ECANCELED;
		else if (to_cq && !ctx->cq)
			err = -ENXIO;
		else if (want && !have)
			err = -EFAULT;
		for (; !err && at < have; at++) {
			struct icfab_req *req = fresh[at];

			if (at == nr_fresh) {
				err = -ENOMEM;
				break;
			}
			req->to_cq = to_cq;
			err = icfab_req_prepare(ctx, &chunk[at], req);
			if (!err)
				err = icfab_req_start(ctx, req, &advance);
			if (!err)
				i++;
		}
		if (!err && have < want)
			err = -EFAULT;
		/*
		 * Others get the lock between chunks, and the engine its
		 * run every ICFAB_SUBMIT_BATCH descriptors: a SUBMIT of
		 * every descriptor a context may have queued held the lock
		 * for seconds in one piece.
		 */
		if (advance && (err || i == nr ||
				!(i % ICFAB_SUBMIT_BATCH))) {
			/* A DELAY moved this clock, so maybe the safe time. */
			icfab_data_advance(fabric);
			advance = false;
		}
		/* For the next chunk's or SUBMIT's allocation. */
		__icfab_spent_flush(ctx);
		__icfab_ctx_fast_update(ctx);
		mutex_unlock(&fabric->lock);
		/* What an error left unused; at is past the one it used. */
		for (; at < nr_fresh; at++)
			icfab_req_recycle(ctx, fresh[at]);
		if (err) {
			ret = i ? i : err;
			break;
		}
		ret = i;
		if (i == nr || fatal_signal_pending(current))
			break;
		cond_resched();
	}
	/* Kept for the next SUBMIT, unless one is kept already. */
	if (buf && cmpxchg(&ctx->batch_buf, NULL, buf))
		kfree(buf);
	return ret;
}

long icfab_ioctl_submit(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_submit sub;

	if (copy_from_user(&sub, uarg, sizeof(sub)))
		return -EFAULT;
	if (!icfab_reserved_zero(sub.reserved, ARRAY_SIZE(sub.reserved)))
		return -EINVAL;
	return icfab_submit_descs(ctx, u64_to_user_ptr(sub.descs), sub.nr,
				  sub.flags);
}

/*
 * WAIT's completions back into @ctx's done list (@n of them, in finish
 * order, taken off its head), each before those that finish no earlier:
 * where they were unless others came meanwhile. The fabric lock is held.
 */
static void __icfab_done_merge(struct icfab_ctx *ctx, struct list_head *reqs,
			       u32 n)
{
	struct list_head *pos = &ctx->done;
	struct icfab_req *req, *tmp, *next;

	lockdep_assert_held(&ctx->fabric->lock);
	list_for_each_entry_safe(req, tmp, reqs, node) {
		while (!list_is_last(pos, &ctx->done)) {
			next = list_entry(pos->next, struct icfab_req, node);
			if (next->cqe.finish_ps >= req->cqe.finish_ps)
				break;
			pos = pos->next;
		}
		list_move(&req->node, pos);
		pos = &req->node;
	}
	ctx->nr_done += n;
}

/*
 * Is a WAIT of @ctx under way, of either kind? Then no other may start:
 * one context has one at a time. The fabric lock is held.
 */
static bool icfab_ctx_in_wait(const struct icfab_ctx *ctx)
{
	return ctx->in_wait || ctx->uwait || ctx->waiting || ctx->catchup;
}

static bool icfab_wait_done(struct icfab_ctx *ctx)
{
	return (!READ_ONCE(ctx->waiting) && !READ_ONCE(ctx->catchup)) ||
	       READ_ONCE(ctx->wait_end);
}

/*
 * Does a WAIT of @ctx start with step 1 (see icfab_ioctl_wait())? Only a
 * receiver's, and only where contexts hold the engine back.
 */
static bool icfab_ctx_catches_up(const struct icfab_ctx *ctx)
{
	return ctx->nr_recvqs && !ctx->free_run && !ctx->dead &&
	       !ctx->fabric->data->paced;
}

/*
 * The sleeping half of ICFAB_IOC_WAIT and ICFAB_IOC_CQ_WAIT (@cq): until
 * @min completions are there, or @timeout_ms. Entered and left with the
 * fabric lock held; 0 or -errno.
 */
static long __icfab_wait_sleep(struct icfab_ctx *ctx, u32 min, bool cq,
			       u32 timeout_ms)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_data *d;
	long left = timeout_ms ? msecs_to_jiffies(timeout_ms) :
				 MAX_SCHEDULE_TIMEOUT;

	lockdep_assert_held(&fabric->lock);
	if (!ctx->nr_eps)
		return -ENOENT;
	if (cq && !ctx->cq)
		return -ENXIO;
	if (icfab_ctx_in_wait(ctx))
		/* Another thread, or io_uring, waits already. */
		return -EBUSY;
	if (ctx->wait_end) {
		/* ICFAB_IOC_WAIT_END came before this WAIT: it ends it. */
		WRITE_ONCE(ctx->wait_end, false);
		return -ECANCELED;
	}
	ctx->cq_wait = cq;
	if (__icfab_wait_have(ctx) + ctx->nr_inflight < min &&
	    (!ctx->nr_recvqs || ctx->dead)) {
		/* Waiting for completions that can never come. */
		ctx->cq_wait = false;
		return -EDEADLK;
	}
	ctx->wait_min = min;
	d = fabric->data;
	/*
	 * Ours until the loop below ends: woken, this WAIT has not yet
	 * taken the lock back, and another WAIT started then would share
	 * ->waiting with it (an io_uring WAIT lost that way never
	 * completed, and its ring could never be freed).
	 */
	ctx->in_wait = true;
	d->copy_here = true;
	if (icfab_ctx_catches_up(ctx)) {
		/*
		 * A receiver: step 1 holds the engine at its clock until it
		 * got there; __icfab_data_catchup() then ends the WAIT or
		 * lets it wait not holding the engine (step 2).
		 */
		ctx->catchup = true;
		d->nr_catchup++;
		icfab_data_advance(fabric);
	} else if (__icfab_wait_have(ctx) < min) {
		WRITE_ONCE(ctx->waiting, true);
		icfab_data_advance(fabric);
	}
	icfab_data_copy_kick(d, ctx->waiting || ctx->catchup);
	while (ctx->waiting || ctx->catchup) {
		/*
		 * A copy the engine stopped for: this WAIT's to make rather
		 * than to sleep through (the work item's wake, and a switch
		 * to it and back, saved). The context stays attached, so @d
		 * stays, until its close, which this call holds off.
		 */
		if (icfab_data_copy_claim(d)) {
			atomic_add(icfab_data_copies_run(d),
				   &fabric->copies_by_wait);
			__icfab_ctx_slow(ctx);
			continue;
		}
		/* Others hold the engine back; their next move wakes us. */
		mutex_unlock(&fabric->lock);
		left = wait_event_interruptible_timeout(ctx->wq,
						icfab_wait_done(ctx), left);
		if (unlikely(READ_ONCE(icfab_wait_wake_delay_ms)))
			msleep(READ_ONCE(icfab_wait_wake_delay_ms));
		mutex_lock(&fabric->lock);
		__icfab_ctx_slow(ctx);
		if (!ctx->waiting && !ctx->catchup)
			break;
		if (left <= 0 || ctx->wait_end) {
			/* It holds the engine again, no earlier than now. */
			__icfab_catchup_end(ctx);
			ctx->waiting = false;
			ctx->clock_ps = max(ctx->clock_ps,
					    fabric->data->engine.now_ps);
			ctx->in_wait = false;
			ctx->cq_wait = false;
			if (ctx->wait_end) {
				WRITE_ONCE(ctx->wait_end, false);
				return -ECANCELED;
			}
			return left ? -EINTR : -ETIMEDOUT;
		}
	}
	ctx->in_wait = false;
	ctx->cq_wait = false;
	return 0;
}

/* Completions copied out between two chances to reschedule. */
#define ICFAB_CQE_RUN	1024

/*
 * The completions of the @n requests on @reqs to @ucqes, in order, a word
 * at a time (as icfab_descs_from_user(), and with no copy onto the stack
 * first); 0 or -EFAULT, with any number of them written.
 */
static int icfab_cqes_to_user(struct icfab_cqe __user *ucqes,
			      struct list_head *reqs, u32 n)
{
	struct icfab_req *req = list_first_entry(reqs, struct icfab_req, node);
	u32 done = 0, end;

	/*
	 * Unrolled: unsafe_copy_to_user() is a loop of a word a step, six
	 * instructions a word under TCG's count, 48 a completion.
	 */
	BUILD_BUG_ON(sizeof(req->cqe) != 8 * sizeof(u64));
	while (done < n) {
		end = done + min_t(u32, n - done, ICFAB_CQE_RUN);
		if (!user_access_begin(&ucqes[done],
				       array_size(end - done, sizeof(*ucqes))))
			return -EFAULT;
		for (; done < end; done++) {
			const u64 *from = (const u64 *)&req->cqe;
			u64 __user *to = (u64 __user *)&ucqes[done];

			unsafe_put_user(from[0], &to[0], fault);
			unsafe_put_user(from[1], &to[1], fault);
			unsafe_put_user(from[2], &to[2], fault);
			unsafe_put_user(from[3], &to[3], fault);
			unsafe_put_user(from[4], &to[4], fault);
			unsafe_put_user(from[5], &to[5], fault);
			unsafe_put_user(from[6], &to[6], fault);
			unsafe_put_user(from[7], &to[7], fault);
			req = list_next_entry(req, node);
		}
		user_access_end();
		if (done < n)
			cond_resched();
	}
	return 0;

fault:
	user_access_end();
	return -EFAULT;
}

long icfab_ioctl_wait(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_cqe __user *ucqes;
	struct icfab_req *req, *last;
	LIST_HEAD(reaped);
	struct icfab_wait w;
	long ret = 0;
	u32 n = 0;

	if (copy_from_user(&w, uarg, sizeof(w)))
		return -EFAULT;
	if (w.nr || w.clock_ps ||
	    !icfab_reserved_zero(w.reserved, ARRAY_SIZE(w.reserved)) ||
	    w.min > w.max)
		return -EINVAL;
	ucqes = u64_to_user_ptr(w.cqes);

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	ret = __icfab_wait_sleep(ctx, w.min, false, w.timeout_ms);
	if (ret)
		goto out_unlock;

	/*
	 * The first w.max, in one cut; they hold nothing (put at finish).
	 * Copied out after unlocking (a copy may fault, and there may be
	 * hundreds of thousands), and given back on a bad buffer, so that
	 * it loses no completion.
	 */
	if (w.max >= ctx->nr_done) {
		n = ctx->nr_done;
		list_splice_init(&ctx->done, &reaped);
	} else {
		last = NULL;
		list_for_each_entry(req, &ctx->done, node) {
			if (n == w.max)
				break;
			last = req;
			n++;
		}
		if (last)
			list_cut_position(&reaped, &ctx->done, &last->node);
	}
	ctx->nr_done -= n;
	mutex_unlock(&fabric->lock);

	ret = icfab_cqes_to_user(ucqes, &reaped, n);
	w.nr = n;

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	if (ret) {
		w.nr = 0;
		__icfab_done_merge(ctx, &reaped, n);
		goto out_unlock;
	}
	/*
	 * A receive completion no io_uring WAIT has counted yet is counted
	 * by this WAIT instead, never by the next io_uring one: that one
	 * would post on completions already reaped, and the context, its
	 * WAIT over, hold the engine at its clock over the descriptors it
	 * was waiting for. Only a receiver with some uncounted looks, in
	 * the walk that lowers the counts (a walk of its own cost each
	 * receive completion reaped a second walk's instructions).
	 */
	if (likely(!ctx->u_uncounted)) {
		list_for_each_entry(req, &reaped, node) {
			ctx->clock_ps = max(ctx->clock_ps, req->cqe.finish_ps);
			/* A receive queue's is read under its claim_lock. */
			WRITE_ONCE(req->q->inflight, req->q->inflight - 1);
		}
	} else {
		list_for_each_entry(req, &reaped, node) {
			struct icfab_queue *q = req->q;

			ctx->clock_ps = max(ctx->clock_ps, req->cqe.finish_ps);
			WRITE_ONCE(q->inflight, q->inflight - 1);
			if (q->recv && req->u_post == ctx->u_posts)
				ctx->u_uncounted--;
		}
	}
	w.clock_ps = ctx->clock_ps;
	/* The clock may have moved past the safe time others wait on. */
	icfab_data_advance(fabric);
	__icfab_ctx_fast_update(ctx);
	mutex_unlock(&fabric->lock);
	icfab_req_recycle_list(ctx, &reaped);

	if (copy_to_user(uarg, &w, sizeof(w)))
		return -EFAULT;
	return 0;

out_unlock:
	__icfab_ctx_fast_update(ctx);
	mutex_unlock(&fabric->lock);
	return ret;
}

long icfab_ioctl_cq_wait(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_cq_wait w;
	long ret;

	if (copy_from_user(&w, uarg, sizeof(w)))
		return -EFAULT;
	if (w.ready || w.flags || w.clock_ps ||
	    !icfab_reserved_zero(w.reserved, ARRAY_SIZE(w.reserved)))
		return -EINVAL;

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	ret = __icfab_wait_sleep(ctx, w.min, true, w.timeout_ms);
	if (!ret) {
		w.ready = ctx->nr_done + icfab_cq_ready(ctx->cq);
		w.clock_ps = ctx->clock_ps;
		/* The clock may have moved past the safe time others wait on. */
		icfab_data_advance(fabric);
	}
	__icfab_ctx_fast_update(ctx);
	mutex_unlock(&fabric->lock);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &w, sizeof(w)))
		return -EFAULT;
	return 0;
}

/*
 * ICFAB_IOC_WAIT_END: end the WAIT under way (another thread's) as its
 * timeout would, or the next one at once. Only its own loop, under the
 * lock, acts on ->wait_end, so a WAIT woken here but already done
 * leaves it for the next.
 */
long icfab_ioctl_wait_end(struct icfab_ctx *ctx)
{
	struct icfab_fabric *fabric = ctx->fabric;

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	WRITE_ONCE(ctx->wait_end, true);
	if (ctx->in_wait)
		wake_up(&ctx->wq);
	__icfab_ctx_fast_update(ctx);
	mutex_unlock(&fabric->lock);
	return 0;
}

long icfab_ioctl_cq_setup(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_cq_setup cs;
	struct icfab_cq *cq;
	long ret = 0;

	if (copy_from_user(&cs, uarg, sizeof(cs)))
		return -EFAULT;
	if (cs.flags || cs.mmap_offset || cs.mmap_size || cs.cqes_off ||
	    cs.reserved0 ||
	    !icfab_reserved_zero(cs.reserved, ARRAY_SIZE(cs.reserved)))
		return -EINVAL;
	/* Allocated outside the lock; the loser of a race frees its own. */
	cq = icfab_cq_create(&cs.entries);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	icfab_cq_layout(cq, &cs);
	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	if (ctx->cq)
		ret = -EBUSY;
	else
		/* Whole before mmap() can see it. */
		smp_store_release(&ctx->cq, cq);
	__icfab_ctx_fast_update(ctx);
	mutex_unlock(&fabric->lock);
	if (ret) {
		icfab_cq_destroy(cq);
		return ret;
	}
	/* The ring stays: a bad buffer only hides its layout, re-read later. */
	if (copy_to_user(uarg, &cs, sizeof(cs)))
		return -EFAULT;
	return 0;
}

/*
 * ICFAB_UCMD_SUBMIT: check @dd and start it, completing @cmd when it
 * completes, after writing its struct icfab_cqe to @cqe_addr (if not 0).
 * Returns 0 (the command is queued) or -errno (nothing changed; the
 * caller completes the command with it).
 */
int icfab_uring_submit(struct icfab_ctx *ctx, const struct icfab_desc *dd,
		       u64 cqe_addr, struct io_uring_cmd *cmd)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_req *req = icfab_req_alloc(ctx);
	bool advance = false;
	int err;

	if (!req)
		return -ENOMEM;
	icfab_submit_lock(fabric);
	__icfab_ctx_slow(ctx);
	err = -ENOENT;
	if (!ctx->nr_eps)
		goto out_unused;
	err = -ECANCELED;
	if (ctx->dead)
		goto out_unused;
	err = icfab_req_prepare(ctx, dd, req);
	if (err)
		goto out_unlock;
	req->ucmd = cmd;
	req->ures.cqe_addr = cqe_addr;
	req->ures.holds = &ctx->uring_holds;
	req->ures.release = icfab_req_uring_release;
	icfab_uring_set_req(cmd, req);
	err = icfab_req_start(ctx, req, &advance);
	if (err)
		goto out_unlock;
	if (advance)
		icfab_data_advance(fabric);
out_unlock:
	mutex_unlock(&fabric->lock);
	return err;

out_unused:
	mutex_unlock(&fabric->lock);
	icfab_req_recycle(ctx, req);
	return err;
}

/*
 * ICFAB_UCMD_WAIT: complete @cmd once @min more io_uring completions have
 * come; meanwhile the context does not hold the engine back. Returns 0
 * (queued, or already posted) or -errno (nothing changed).
 *
 * Its result rides in a request from the context's pool, released like a
 * SUBMIT's once posted: a slab allocation per WAIT showed in the io_uring
 * path's cost, and the result does not fit in the command's pdu.
 */
int icfab_uring_wait(struct icfab_ctx *ctx, u32 min, struct io_uring_cmd *cmd)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_uring_result *ures;
	struct icfab_req *req;
	int err = 0;

	req = icfab_req_alloc(ctx);
	if (!req)
		return -ENOMEM;
	req->ctx = ctx;
	ures = &req->ures;
	ures->cqe_addr = 0;		/* a WAIT writes no struct icfab_cqe */
	ures->holds = &ctx->uring_holds;
	ures->release = icfab_req_uring_release;

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	if (!ctx->nr_eps)
		err = -ENOENT;
	else if (ctx->dead)
		err = -ECANCELED;
	else if (icfab_ctx_in_wait(ctx))
		err = -EBUSY;
	else if (ctx->u_uncounted + ctx->u_inflight < min && !ctx->nr_recvqs)
		err = -EDEADLK;
	if (err)
		goto out_unlock;

	icfab_uring_set_req(cmd, NULL);
	ctx->uwait = cmd;
	ctx->uwait_res = ures;
	ctx->uwait_min = min;
	if (icfab_ctx_catches_up(ctx)) {
		/* A receiver: step 1 first, as in icfab_ioctl_wait(). */
		ctx->catchup = true;
		fabric->data->nr_catchup++;
	} else if (ctx->u_uncounted >= min) {
		__icfab_uwait_post(ctx);
	} else {
		WRITE_ONCE(ctx->waiting, true);
	}
	icfab_data_advance(fabric);
out_unlock:
	mutex_unlock(&fabric->lock);
	if (err)
		icfab_req_recycle(ctx, req);
	return err;
}

/*
 * Cancel one io_uring request: out of the engine (the transfer goes on,
 * timed, owned by nobody, moving no bytes) or out of its queue's backlog.
 * With @drain, what waited behind it may go. The fabric lock is held.
 */
static void __icfab_req_cancel(struct icfab_data *d, struct icfab_req *req,
			       bool drain)
{
	struct icfab_queue *q = req->q;
	u64 t = max(req->ctx->clock_ps, d->engine.now_ps);

	lockdep_assert_held(&d->fabric->lock);

	/* Landed, its bytes being copied: the copier posts it. */
	if (req->copying)
		return;
	if (req->in_engine) {
		d->xfer_req[req->xfer] = NULL;
		req->in_engine = false;
		q->outstanding--;
	} else if (req->in_backlog) {
		list_del(&req->node);
		req->in_backlog = false;
	}
	__icfab_req_finish(req, -ECANCELED, t, t, 0);
	if (drain && !q->outstanding)
		__icfab_queue_drain(d, q, t);
}

/* The pending io_uring WAIT, if any, completes with -ECANCELED. */
static void __icfab_uring_wait_cancel(struct icfab_ctx *ctx)
{
	struct icfab_data *d = ctx->fabric->data;

	lockdep_assert_held(&ctx->fabric->lock);

	if (!ctx->uwait)
		return;
	__icfab_catchup_end(ctx);
	__icfab_uring_post(ctx->uwait, ctx->uwait_res, -ECANCELED,
			   ctx->clock_ps);
	ctx->uwait = NULL;
	ctx->uwait_res = NULL;
	ctx->waiting = false;
	ctx->clock_ps = max(ctx->clock_ps, d->engine.now_ps);
}

/* io_uring cancels @cmd (IO_URING_F_CANCEL): it completes -ECANCELED. */
void icfab_uring_cancel(struct icfab_ctx *ctx, struct io_uring_cmd *cmd)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_req *req;

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	if (icfab_uring_posted(cmd))
		goto out_unlock;
	if (ctx->uwait == cmd) {
		__icfab_uring_wait_cancel(ctx);
	} else {
		req = icfab_uring_get_req(cmd);
		if (req)
			__icfab_req_cancel(fabric->data, req, true);
	}
	icfab_data_advance(fabric);
out_unlock:
	mutex_unlock(&fabric->lock);
}

/*
 * The context can submit no more: its io_uring commands and everything
 * behind a FENCE complete with -ECANCELED, and it stops holding the
 * engine back. Transfers already in the engine from ioctl submissions go
 * on, as DMA already started would. The fabric lock is held.
 */
static void __icfab_ctx_kill(struct icfab_ctx *ctx)
{
	struct icfab_data *d = ctx->fabric->data;
	struct icfab_req *req, *tmp;
	u32 i;

	lockdep_assert_held(&ctx->fabric->lock);
	__icfab_ctx_slow(ctx);
	ctx->dead = true;
	for (i = 0; i < ctx->queues_cap; i++) {
		struct icfab_queue *q = ctx->queues[i];

		if (!q)
			continue;
		/* Nobody will reap: new NOTIFY WRITEs get -ENOTCONN. */
		__icfab_recvq_unregister(d, q);
		list_for_each_entry_safe(req, tmp, &q->backlog, node) {
			if (req->ucmd) {
				__icfab_req_cancel(d, req, false);
				continue;
			}
			list_del(&req->node);
			req->in_backlog = false;
			__icfab_req_finish(req, -ECANCELED, ctx->clock_ps,
					   ctx->clock_ps, 0);
		}
	}
	list_for_each_entry_safe(req, tmp, &ctx->ureqs, unode)
		__icfab_req_cancel(d, req, false);
	__icfab_uring_wait_cancel(ctx);
	/*
	 * An ioctl WAIT under way (another thread's, an evicted context's)
	 * returns with what has completed: it may have waited for receive
	 * completions, and none come any more.
	 */
	if (ctx->waiting || ctx->catchup) {
		__icfab_catchup_end(ctx);
		WRITE_ONCE(ctx->waiting, false);
		wake_up(&ctx->wq);
	}
	icfab_data_advance(ctx->fabric);
}

/* CTX_GET's ICFAB_A_CTX_STATE of @ctx. The fabric lock is held. */
u32 icfab_ctx_state(const struct icfab_ctx *ctx)
{
	lockdep_assert_held(&ctx->fabric->lock);
	return (ctx->waiting ? ICFAB_CTX_WAITING : 0) |
	       (ctx->free_run ? ICFAB_CTX_FREE_RUN : 0) |
	       (ctx->dead ? ICFAB_CTX_DEAD : 0) |
	       (ctx->nr_recvqs ? ICFAB_CTX_RECEIVER : 0) |
	       (ctx->id == ctx->fabric->held_id ? ICFAB_CTX_HOLDS : 0);
}

/*
 * CTX_EVICT: attached context @id ends as its owner's exit would end it,
 * but for its transfers already in the engine: they complete with
 * -ECANCELED and land nothing (icfab_data_complete()). Returns 0, -ENOENT
 * when no attached context has that id, or -EALREADY when it has ended
 * already; neither error changes anything.
 */
int icfab_ctx_evict(struct icfab_fabric *fabric, u32 id)
{
	struct icfab_ctx *ctx;
	int err = -ENOENT;

	mutex_lock(&fabric->lock);
	list_for_each_entry(ctx, &fabric->attached, attached_node) {
		if (ctx->id != id)
			continue;
		err = -EALREADY;
		if (!ctx->dead) {
			ctx->evicted = true;
			__icfab_ctx_kill(ctx);
			err = 0;
		}
		break;
	}
	mutex_unlock(&fabric->lock);
	return err;
}

/*
 * References to the context's file that may submit to it: all of them
 * but those of its io_uring commands, its mappings and @mine (those of
 * the caller). What is left are file descriptors, registered files,
 * files in flight in a message, and system calls under way on one.
 * Never fewer than there are: a command counts itself after io_uring
 * took its reference and stops before io_uring drops it, and a mapping
 * likewise. The fabric lock is held.
 */
static long __icfab_ctx_submitters(struct icfab_ctx *ctx, long mine)
{
	lockdep_assert_held(&ctx->fabric->lock);
	return file_count(ctx->file) - atomic_read(&ctx->uring_holds) -
	       atomic_read(&ctx->nr_vmas) - mine;
}

/*
 * Look again in @ms, then less and less often: a close that counted a
 * reference about to go (an io_uring command past its count, one
 * waiting in io-wq, another thread's system call) would otherwise leave
 * a context nobody can submit to holding the engine, and its io_uring
 * commands pending, for ever: their references keep the file, so
 * ->release() never comes. The fabric lock is held.
 */
static void __icfab_ctx_reach_arm(struct icfab_ctx *ctx, u32 ms)
{
	lockdep_assert_held(&ctx->fabric->lock);
	ctx->reach_ms = ms;
	mod_delayed_work(system_wq, &ctx->reach_work, msecs_to_jiffies(ms));
}

static void icfab_ctx_reach_fn(struct work_struct *work)
{
	struct icfab_ctx *ctx = container_of(to_delayed_work(work),
					     struct icfab_ctx, reach_work);
	struct icfab_fabric *fabric = ctx->fabric;

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	if (ctx->nr_eps && !ctx->dead) {
		if (__icfab_ctx_submitters(ctx, 0) <= 0)
			__icfab_ctx_kill(ctx);
		else
			__icfab_ctx_reach_arm(ctx, min(ctx->reach_ms * 2,
						       ICFAB_REACH_MAX_MS));
	}
	mutex_unlock(&fabric->lock);
}

/*
 * A file descriptor of the context is being closed. When its owner
 * exits, or this was the last way to submit to it, nobody can submit to
 * it any more or wait for it: kill it, or it would hold the engine back
 * for ever and its io_uring commands would never complete. When another
 * way seems left, it may be one about to go: look again later.
 */
void icfab_ctx_flush(struct icfab_ctx *ctx, struct file *file)
{
	struct icfab_fabric *fabric = ctx->fabric;
	bool exiting = current->flags & PF_EXITING;

	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	ctx->file = file;
	if (ctx->nr_eps && !ctx->dead) {
		if ((exiting && task_tgid_nr(current) == ctx->owner) ||
		    __icfab_ctx_submitters(ctx, 1) <= 0)
			__icfab_ctx_kill(ctx);
		else
			__icfab_ctx_reach_arm(ctx, ICFAB_REACH_MIN_MS);
	}
	mutex_unlock(&fabric->lock);
}

/*
 * The engine goes at fabric time @now: fabric time restarts at 0 with the
 * next engine, and a pending OCS hold moves with it, so a link held until
 * @now + x is held until x on the new clock. The fabric lock is held.
 */
static void icfab_data_rebase_holds(struct icfab_fabric *fabric, u64 now)
{
	const struct icfab_mtopo *m = &fabric->active->m;
	u32 i;

	lockdep_assert_held(&fabric->lock);
	for (i = 0; i < m->links_cap; i++) {
		struct icfab_mlink *l = &m->links[i];

		if (l->present)
			l->up_at_ps = l->up_at_ps > now ? l->up_at_ps - now : 0;
	}
}

/* The last file reference is gone: leave the fabric. */
void icfab_ctx_destroy(struct icfab_ctx *ctx)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_data *gone = NULL;
	struct icfab_req *req, *tmp;
	struct icfab_data *d;
	LIST_HEAD(done);
	u32 i, n = 0;

	/*
	 * First, and not under the lock, which it takes: only a close or
	 * itself arms it, and no close comes after the last reference.
	 */
	lockdep_assert_not_held(&fabric->lock);
	cancel_delayed_work_sync(&ctx->reach_work);
	mutex_lock(&fabric->lock);
	__icfab_ctx_slow(ctx);
	d = fabric->data;
	if (ctx->nr_eps) {
		/*
		 * Nothing of io_uring is left: every command holds the file.
		 * Its receive queues go first, then what waits behind a
		 * FENCE, which never started: it goes, and its receive
		 * completion, if another context is still there for it,
		 * says so.
		 */
		for (i = 0; i < ctx->queues_cap; i++)
			if (ctx->queues[i] && ctx->queues[i]->recv)
				__icfab_recvq_close(d, ctx->queues[i]);
		for (i = 0; i < ctx->queues_cap; i++) {
			struct icfab_queue *q = ctx->queues[i];

			if (!q)
				continue;
			list_for_each_entry_safe(req, tmp, &q->backlog, node) {
				list_del(&req->node);
				__icfab_notify_post(req, -ECANCELED,
						    ctx->clock_ps,
						    ctx->clock_ps, 0);
				icfab_req_free(req);
			}
		}
		/*
		 * Transfers in flight go on, as DMA already started would;
		 * their completions have no one to go to and are dropped.
		 */
		for (i = 0; d && i < d->st.xfers_cap; i++) {
			req = d->xfer_req[i];
			if (req && req->ctx == ctx) {
				req->ctx = NULL;
				req->q = NULL;
			}
		}
		/* So do those the copier has (icfab_data_copy_fn()). */
		if (d)
			list_for_each_entry(req, &d->copies, node)
				if (req->ctx == ctx) {
					req->ctx = NULL;
					req->q = NULL;
				}
		list_del(&ctx->attached_node);
		fabric->nr_attached--;
		if (!fabric->nr_attached) {
			/* Nobody is left to see them: the engine goes. */
			icfab_data_rebase_holds(fabric,
						icfab_data_now(fabric));
			icfab_data_trace_sync(d);
			icfab_engine_cancel_all(&d->engine,
						icfab_data_complete, d);
			icfab_stats_fold(fabric, &d->engine);
			gone = d;
			fabric->data = NULL;
			fabric->held_id = 0;
			fabric->held_pid = 0;
			fabric->held_ps = 0;
		} else {
			icfab_data_advance(fabric);
		}
	}
	/*
	 * Complete, they hold nothing (put at finish): freed after
	 * unlocking, a context may have millions of them.
	 */
	list_splice_init(&ctx->done, &done);
	mutex_unlock(&fabric->lock);
	list_for_each_entry_safe(req, tmp, &done, node) {
		kfree(req);
		if (!(++n % ICFAB_FREE_BATCH))
			cond_resched();
	}

	/* Off the fabric: its timer and work may still run, until this. */
	lockdep_assert_not_held(&fabric->lock);
	icfab_data_stop(gone);
	icfab_regions_ctx_destroy(fabric, &ctx->regions);
	icfab_data_free(gone);
	for (i = 0; i < ctx->queues_cap; i++)
		icfab_queue_free(ctx->queues[i]);
	kvfree(ctx->queues);
	while ((req = ctx->pool)) {
		ctx->pool = req->pool_next;
		kfree(req);
	}
	/* Nothing completes into its ring now: req->ctx is NULL. */
	while ((req = ctx->spent)) {
		ctx->spent = req->pool_next;
		kfree(req);
	}
	kfree(ctx->batch_buf);
	/* No mapping is left: each held the file. */
	icfab_cq_destroy(ctx->cq);
	kfree(ctx);
}
