// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: the data path. Contexts attach to endpoints, create queues and
 * submit descriptors; the fabric's engine (kmod/model/engine.c) times
 * them in virtual time; completions wait in the context until it reaps
 * them with ICFAB_IOC_WAIT.
 *
 * Virtual time: every attached context has a clock. A descriptor starts
 * at its context's clock; DELAY advances it; WAIT says "I submit nothing
 * more until my next completions" and, once they come, moves the clock to
 * the latest of them. The engine only processes events strictly before
 * the smallest clock of the attached contexts that are not waiting (the
 * safe time), so what a context could still submit can never be overtaken
 * by what was already decided, and results do not depend on how the
 * host schedules the processes. The engine runs in the caller's context,
 * under the fabric lock, whenever the safe time may have moved.
 *
 * Transfer keys, which break ties at equal times, are built from the
 * context's first endpoint, the queue and its sequence number, so that
 * they do not depend on which process opened the device first.
 *
 * This first version moves no bytes (ICFAB_DESC_F_TIMING_ONLY) and has no
 * FENCE; and while any context is attached, a commit is refused, because
 * the engine works on the committed topology it was built on.
 */
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "icfab.h"

struct icfab_queue {
	u32 endpoint;			/* node id */
	u32 depth;			/* descriptors in flight, at most */
	u32 inflight;			/* submitted, completion not yet reaped */
	u32 seq;			/* of the next descriptor */
};

/* One submitted descriptor, from submission until its completion is reaped. */
struct icfab_req {
	struct list_head node;		/* in ctx->done once complete */
	struct icfab_ctx *ctx;		/* NULL once the context is gone */
	struct icfab_cqe cqe;
};

struct icfab_ctx {
	struct icfab_fabric *fabric;

	/* Under fabric->lock: */
	struct list_head attached_node;	/* in fabric->attached */
	u32 nr_eps;
	u32 eps[ICFAB_MAX_ATTACH];	/* attached endpoint ids */
	struct icfab_queue *queues[ICFAB_MAX_QUEUES];
	u64 clock_ps;			/* ps */
	bool waiting;			/* in WAIT: does not hold the engine */
	u32 wait_min;			/* completions WAIT needs */
	u32 nr_inflight;		/* submitted, not complete */
	u32 nr_done;			/* complete, not reaped */
	struct list_head done;		/* of struct icfab_req */
};

/* The engine and its storage, sized for the topology it was built on. */
struct icfab_data {
	struct icfab_engine engine;
	struct icfab_engine_storage st;
	struct icfab_req **xfer_req;	/* by engine transfer id */
	const struct icfab_topo *topo;	/* fabric->active when built */
};

struct icfab_fabric *icfab_ctx_fabric(struct icfab_ctx *ctx)
{
	return ctx->fabric;
}

struct icfab_ctx *icfab_ctx_create(struct icfab_fabric *fabric)
{
	struct icfab_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return NULL;
	ctx->fabric = fabric;
	INIT_LIST_HEAD(&ctx->attached_node);
	INIT_LIST_HEAD(&ctx->done);
	return ctx;
}

static void icfab_data_free(struct icfab_data *d)
{
	if (!d)
		return;
	kvfree(d->st.links);
	kvfree(d->st.eps);
	kvfree(d->st.dma_free);
	kvfree(d->st.xfers);
	kvfree(d->st.events);
	kvfree(d->xfer_req);
	kfree(d);
}

/* Build an engine on the committed topology. */
static struct icfab_data *icfab_data_create(const struct icfab_topo *t)
{
	const struct icfab_mtopo *m = &t->m;
	struct icfab_data *d;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return NULL;
	d->topo = t;
	d->st.dma_cap = max_t(u32, icfab_engine_dma_needed(m), 1);
	d->st.xfers_cap = ICFAB_ENGINE_XFERS;
	d->st.events_cap = ICFAB_ENGINE_EVENTS;
	d->st.links = kvcalloc(max_t(u32, m->links_cap, 1),
			       sizeof(*d->st.links), GFP_KERNEL);
	d->st.eps = kvcalloc(max_t(u32, m->nodes_cap, 1), sizeof(*d->st.eps),
			     GFP_KERNEL);
	d->st.dma_free = kvcalloc(d->st.dma_cap, sizeof(*d->st.dma_free),
				  GFP_KERNEL);
	d->st.xfers = kvcalloc(d->st.xfers_cap, sizeof(*d->st.xfers),
			       GFP_KERNEL);
	d->st.events = kvcalloc(d->st.events_cap, sizeof(*d->st.events),
				GFP_KERNEL);
	d->xfer_req = kvcalloc(d->st.xfers_cap, sizeof(*d->xfer_req),
			       GFP_KERNEL);
	if (!d->st.links || !d->st.eps || !d->st.dma_free || !d->st.xfers ||
	    !d->st.events || !d->xfer_req)
		goto err_free;
	if (icfab_engine_init(&d->engine, m, t->segment_size, &d->st))
		goto err_free;
	return d;

err_free:
	icfab_data_free(d);
	return NULL;
}

/* The safe time: the smallest clock of attached contexts not waiting. */
static u64 icfab_data_horizon(struct icfab_fabric *fabric)
{
	u64 h = ICFAB_ENGINE_NEVER;
	struct icfab_ctx *ctx;

	lockdep_assert_held(&fabric->lock);
	list_for_each_entry(ctx, &fabric->attached, attached_node)
		if (!ctx->waiting && ctx->clock_ps < h)
			h = ctx->clock_ps;
	return h;
}

/* Engine callback: a transfer finished; hand its completion over. */
static int icfab_data_complete(void *arg, u32 xfer_id,
			       const struct icfab_xfer_result *r)
{
	struct icfab_data *d = arg;
	struct icfab_req *req = d->xfer_req[xfer_id];
	struct icfab_ctx *ctx;

	d->xfer_req[xfer_id] = NULL;
	if (WARN_ON_ONCE(!req))
		return 0;

	req->cqe.status = r->status;
	req->cqe.submit_ps = r->submit_ps;
	req->cqe.start_ps = r->start_ps;
	req->cqe.finish_ps = r->finish_ps;
	req->cqe.queued_ps = r->queued_ps;

	ctx = req->ctx;
	if (!ctx) {
		/* Its context closed while it was in flight. */
		kfree(req);
		return 0;
	}
	ctx->nr_inflight--;
	ctx->nr_done++;
	list_add_tail(&req->node, &ctx->done);
	if (ctx->waiting && ctx->nr_done >= ctx->wait_min) {
		/* It holds the engine again, from this instant. */
		ctx->waiting = false;
		ctx->clock_ps = max(ctx->clock_ps, r->finish_ps);
		return 1;
	}
	return 0;
}

/*
 * Run the engine as far as the safe time allows, and wake the waiters.
 * Called whenever the safe time may have moved: a clock advanced, a
 * context started waiting, or one left.
 */
static void icfab_data_advance(struct icfab_fabric *fabric)
{
	struct icfab_data *d = fabric->data;
	int ret;

	lockdep_assert_held(&fabric->lock);
	if (!d)
		return;
	do {
		ret = icfab_engine_run_until(&d->engine,
					     icfab_data_horizon(fabric),
					     icfab_data_complete, d);
	} while (ret == 1);
	WARN_ON_ONCE(ret < 0);
	wake_up_all(&fabric->data_wq);
}

static bool icfab_ctx_has_ep(struct icfab_ctx *ctx, u32 ep)
{
	u32 i;

	for (i = 0; i < ctx->nr_eps; i++)
		if (ctx->eps[i] == ep)
			return true;
	return false;
}

static bool icfab_is_endpoint(const struct icfab_topo *t, u32 id)
{
	return id < t->m.nr_nodes && t->m.nodes[id].present &&
	       t->m.nodes[id].kind == ICFAB_MODEL_ENDPOINT;
}

long icfab_ioctl_attach(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_attach a;
	long ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || !icfab_reserved_zero(a.reserved, ARRAY_SIZE(a.reserved)))
		return -EINVAL;

	mutex_lock(&fabric->lock);
	if (!icfab_is_endpoint(fabric->active, a.endpoint)) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (icfab_ctx_has_ep(ctx, a.endpoint)) {
		ret = -EALREADY;
		goto out_unlock;
	}
	if (ctx->nr_eps == ICFAB_MAX_ATTACH) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	if (!fabric->data) {
		fabric->data = icfab_data_create(fabric->active);
		if (!fabric->data) {
			ret = -ENOMEM;
			goto out_unlock;
		}
	}
	if (!ctx->nr_eps) {
		/* It joins the fabric now: its clock starts at the engine's. */
		ctx->clock_ps = fabric->data->engine.now_ps;
		list_add_tail(&ctx->attached_node, &fabric->attached);
		fabric->nr_attached++;
	}
	ctx->eps[ctx->nr_eps++] = a.endpoint;

out_unlock:
	mutex_unlock(&fabric->lock);
	return ret;
}

long icfab_ioctl_queue_create(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_queue_create qc;
	struct icfab_queue *q;
	u32 id;
	long ret;

	if (copy_from_user(&qc, uarg, sizeof(qc)))
		return -EFAULT;
	if (qc.flags || qc.queue ||
	    !icfab_reserved_zero(qc.reserved, ARRAY_SIZE(qc.reserved)) ||
	    !qc.depth || qc.depth > ICFAB_MAX_QUEUE_DEPTH)
		return -EINVAL;

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	q->endpoint = qc.endpoint;
	q->depth = qc.depth;

	mutex_lock(&fabric->lock);
	ret = -ENOENT;
	if (!icfab_ctx_has_ep(ctx, qc.endpoint))
		goto err_unlock;
	ret = -ENOSPC;
	for (id = 0; id < ICFAB_MAX_QUEUES; id++)
		if (!ctx->queues[id])
			break;
	if (id == ICFAB_MAX_QUEUES)
		goto err_unlock;
	/* Tell the caller first: a queue is never visible, then taken back. */
	qc.queue = id;
	ret = -EFAULT;
	if (copy_to_user(uarg, &qc, sizeof(qc)))
		goto err_unlock;
	ctx->queues[id] = q;
	mutex_unlock(&fabric->lock);
	return 0;

err_unlock:
	mutex_unlock(&fabric->lock);
	kfree(q);
	return ret;
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
	q = ctx->queues[qd.queue];
	if (!q)
		ret = -ENOENT;
	else if (q->inflight)
		ret = -EBUSY;
	else
		ctx->queues[qd.queue] = NULL;
	mutex_unlock(&fabric->lock);

	if (!ret)
		kfree(q);
	return ret;
}

/* Check one descriptor; the fabric lock is held. */
static int icfab_desc_check(struct icfab_ctx *ctx, const struct icfab_desc *dd,
			    struct icfab_queue **qp)
{
	const struct icfab_topo *t = ctx->fabric->active;
	struct icfab_queue *q;

	if (dd->pad || dd->reserved0 || dd->circuit ||
	    dd->flags & ~ICFAB_DESC_F_ALL)
		return -EINVAL;
	if (dd->queue >= ICFAB_MAX_QUEUES || !ctx->queues[dd->queue])
		return -ENOENT;
	q = ctx->queues[dd->queue];
	*qp = q;

	switch (dd->op) {
	case ICFAB_OP_WRITE:
	case ICFAB_OP_READ:
		if (!icfab_is_endpoint(t, dd->peer))
			return -EINVAL;
		/* Device memory is not there yet: only timing. */
		if (!(dd->flags & ICFAB_DESC_F_TIMING_ONLY))
			return -EOPNOTSUPP;
		if (dd->region || dd->local_off || dd->rkey || dd->remote_off)
			return -EINVAL;
		break;
	case ICFAB_OP_DELAY:
		if (dd->peer || dd->flags || dd->region || dd->local_off ||
		    dd->rkey || dd->remote_off)
			return -EINVAL;
		break;
	case ICFAB_OP_FENCE:
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
	if (q->inflight >= q->depth)
		return -EAGAIN;
	return 0;
}

/* Complete a descriptor on the spot (DELAY). */
static void icfab_req_done_now(struct icfab_ctx *ctx, struct icfab_req *req,
			       u64 start, u64 finish)
{
	req->cqe.submit_ps = start;
	req->cqe.start_ps = start;
	req->cqe.finish_ps = finish;
	ctx->nr_done++;
	list_add_tail(&req->node, &ctx->done);
}

/* Submit one checked descriptor; the fabric lock is held. */
static int icfab_desc_submit(struct icfab_ctx *ctx, const struct icfab_desc *dd,
			     struct icfab_queue *q)
{
	struct icfab_data *d = ctx->fabric->data;
	struct icfab_engine *e = &d->engine;
	struct icfab_req *req;
	u64 key, at;
	u32 src, dst, xfer;
	int err;

	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	req->ctx = ctx;
	req->cqe.user_tag = dd->user_tag;
	req->cqe.queue = dd->queue;

	if (dd->op == ICFAB_OP_DELAY) {
		u64 start = ctx->clock_ps, finish;

		if (check_add_overflow(start, dd->len, &finish))
			finish = ICFAB_ENGINE_NEVER - 1;
		ctx->clock_ps = finish;
		q->inflight++;
		icfab_req_done_now(ctx, req, start, finish);
		return 0;
	}

	src = dd->op == ICFAB_OP_WRITE ? q->endpoint : dd->peer;
	dst = dd->op == ICFAB_OP_WRITE ? dd->peer : q->endpoint;
	key = (u64)ctx->eps[0] << 40 | (u64)dd->queue << 32 | q->seq;

	/*
	 * The engine has decided everything before the last event it
	 * processed; a submission at that very instant must sort after it.
	 * When the key would not, it starts one ps later: deterministic,
	 * since what was processed at that instant is.
	 */
	at = max(ctx->clock_ps, e->now_ps);
	if (e->processed && at == e->last_ps && key <= e->last_key)
		at++;

	err = icfab_engine_submit(e, src, dst, dd->len, at, key, &xfer);
	if (err) {
		kfree(req);
		/* A full engine is back-pressure like a full queue. */
		return err == -ICFAB_ENGINE_ENOSPC ? -EAGAIN : -EINVAL;
	}
	d->xfer_req[xfer] = req;
	q->seq++;
	q->inflight++;
	ctx->nr_inflight++;
	return 0;
}

long icfab_ioctl_submit(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_desc __user *udescs;
	struct icfab_submit sub;
	bool advance = false;
	long ret = 0;
	u32 i;

	if (copy_from_user(&sub, uarg, sizeof(sub)))
		return -EFAULT;
	if (sub.flags || !icfab_reserved_zero(sub.reserved,
					   ARRAY_SIZE(sub.reserved)))
		return -EINVAL;
	udescs = u64_to_user_ptr(sub.descs);

	mutex_lock(&fabric->lock);
	if (!ctx->nr_eps) {
		ret = -ENOENT;
		goto out_unlock;
	}
	for (i = 0; i < sub.nr; i++) {
		struct icfab_queue *q;
		struct icfab_desc dd;
		int err;

		/* Copied once; the copy is what is checked and used. */
		if (copy_from_user(&dd, &udescs[i], sizeof(dd)))
			err = -EFAULT;
		else
			err = icfab_desc_check(ctx, &dd, &q);
		if (!err)
			err = icfab_desc_submit(ctx, &dd, q);
		if (err) {
			ret = i ? i : err;
			goto out_advance;
		}
		advance |= dd.op == ICFAB_OP_DELAY;
		if (fatal_signal_pending(current)) {
			i++;
			break;
		}
	}
	ret = i;

out_advance:
	/* A DELAY moved this context's clock, so maybe the safe time. */
	if (advance)
		icfab_data_advance(fabric);
out_unlock:
	mutex_unlock(&fabric->lock);
	return ret;
}

static bool icfab_wait_done(struct icfab_ctx *ctx)
{
	return !READ_ONCE(ctx->waiting);
}

long icfab_ioctl_wait(struct icfab_ctx *ctx, void __user *uarg)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_cqe __user *ucqes;
	struct icfab_req *req, *tmp;
	struct icfab_wait w;
	long ret = 0, left;
	u32 n = 0;

	if (copy_from_user(&w, uarg, sizeof(w)))
		return -EFAULT;
	if (w.nr || w.clock_ps ||
	    !icfab_reserved_zero(w.reserved, ARRAY_SIZE(w.reserved)) ||
	    w.min > w.max)
		return -EINVAL;
	ucqes = u64_to_user_ptr(w.cqes);
	left = w.timeout_ms ? msecs_to_jiffies(w.timeout_ms) :
			      MAX_SCHEDULE_TIMEOUT;

	mutex_lock(&fabric->lock);
	if (!ctx->nr_eps) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (ctx->nr_done + ctx->nr_inflight < w.min) {
		/* Waiting for completions that can never come. */
		ret = -EDEADLK;
		goto out_unlock;
	}
	if (ctx->nr_done < w.min) {
		ctx->wait_min = w.min;
		WRITE_ONCE(ctx->waiting, true);
		icfab_data_advance(fabric);
	}
	while (ctx->waiting) {
		/* Others hold the engine back; their next move wakes us. */
		mutex_unlock(&fabric->lock);
		left = wait_event_interruptible_timeout(fabric->data_wq,
						icfab_wait_done(ctx), left);
		mutex_lock(&fabric->lock);
		if (!ctx->waiting)
			break;
		if (left <= 0) {
			/* It holds the engine again, no earlier than now. */
			ctx->waiting = false;
			ctx->clock_ps = max(ctx->clock_ps,
					    fabric->data->engine.now_ps);
			ret = left ? -EINTR : -ETIMEDOUT;
			goto out_unlock;
		}
	}

	/* Copy before removing, so a bad buffer loses no completion. */
	list_for_each_entry(req, &ctx->done, node) {
		if (n == w.max)
			break;
		if (copy_to_user(&ucqes[n], &req->cqe, sizeof(req->cqe))) {
			ret = -EFAULT;
			goto out_unlock;
		}
		n++;
	}
	w.nr = n;
	list_for_each_entry_safe(req, tmp, &ctx->done, node) {
		struct icfab_queue *q = ctx->queues[req->cqe.queue];

		if (!n--)
			break;
		ctx->clock_ps = max(ctx->clock_ps, req->cqe.finish_ps);
		if (q)
			q->inflight--;
		ctx->nr_done--;
		list_del(&req->node);
		kfree(req);
	}
	w.clock_ps = ctx->clock_ps;
	/* The clock may have moved past the safe time others wait on. */
	icfab_data_advance(fabric);
	mutex_unlock(&fabric->lock);

	if (copy_to_user(uarg, &w, sizeof(w)))
		return -EFAULT;
	return 0;

out_unlock:
	mutex_unlock(&fabric->lock);
	return ret;
}

/* The last file reference is gone: leave the fabric, cancel nothing. */
void icfab_ctx_destroy(struct icfab_ctx *ctx)
{
	struct icfab_fabric *fabric = ctx->fabric;
	struct icfab_data *gone = NULL;
	struct icfab_req *req, *tmp;
	struct icfab_data *d;
	u32 i;

	mutex_lock(&fabric->lock);
	d = fabric->data;
	if (ctx->nr_eps) {
		/*
		 * Transfers in flight go on, as DMA already started would;
		 * their completions have no one to go to and are dropped.
		 */
		for (i = 0; d && i < d->st.xfers_cap; i++)
			if (d->xfer_req[i] && d->xfer_req[i]->ctx == ctx)
				d->xfer_req[i]->ctx = NULL;
		list_del(&ctx->attached_node);
		fabric->nr_attached--;
		if (!fabric->nr_attached) {
			/* Nobody is left to see them: the engine goes. */
			icfab_engine_cancel_all(&d->engine,
						icfab_data_complete, d);
			gone = d;
			fabric->data = NULL;
		} else {
			icfab_data_advance(fabric);
		}
	}
	list_for_each_entry_safe(req, tmp, &ctx->done, node) {
		list_del(&req->node);
		kfree(req);
	}
	mutex_unlock(&fabric->lock);

	icfab_data_free(gone);
	for (i = 0; i < ICFAB_MAX_QUEUES; i++)
		kfree(ctx->queues[i]);
	kfree(ctx);
}
