// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: the tracepoints (trace.h) and the engine observer that fires
 * them. The observer is given to every engine a fabric builds, and data.c
 * lets the engine call it only while one of its tracepoints is on (each
 * is a static branch): with tracing off a transfer costs no call.
 */
#include "icfab.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static void icfab_trace_submit(void *arg, u32 xfer_id,
			       const struct icfab_xfer_result *r)
{
	struct icfab_fabric *fabric = arg;

	trace_icfab_submit(fabric->id, xfer_id, r->key, r->src, r->dst,
			   r->bytes, r->submit_ps, r->hops);
}

static void icfab_trace_xmit(void *arg, const struct icfab_engine_xmit *x)
{
	struct icfab_fabric *fabric = arg;

	trace_icfab_link_xmit(fabric->id, x->link, x->key, x->seg, x->hop,
			      x->bytes, x->ready_ps, x->depart_ps, x->done_ps);
}

static void icfab_trace_complete(void *arg, u32 xfer_id,
				 const struct icfab_xfer_result *r)
{
	struct icfab_fabric *fabric = arg;

	trace_icfab_complete(fabric->id, r->key, r->src, r->dst, r->bytes,
			     r->status, r->submit_ps, r->start_ps,
			     r->finish_ps, r->queued_ps);
}

static const struct icfab_engine_tracer icfab_engine_tracer = {
	.submit = icfab_trace_submit,
	.xmit = icfab_trace_xmit,
	.complete = icfab_trace_complete,
};

/* Make @e, @fabric's new engine, fire the tracepoints. */
void icfab_trace_engine(struct icfab_fabric *fabric, struct icfab_engine *e)
{
	icfab_engine_set_tracer(e, &icfab_engine_tracer, fabric);
}

/*
 * A commit replaced @old by @new: one icfab_link_state event per link
 * whose state or bandwidth share changed. Called with the lock held.
 */
void icfab_trace_link_states(struct icfab_fabric *fabric,
			     const struct icfab_topo *old,
			     const struct icfab_topo *new)
{
	u32 i;

	lockdep_assert_held(&fabric->lock);
	if (!trace_icfab_link_state_enabled())
		return;
	for (i = 0; i < new->m.links_cap; i++) {
		const struct icfab_mlink *n = &new->m.links[i];
		const struct icfab_mlink *o;

		if (!n->present)
			continue;
		o = i < old->m.links_cap && old->m.links[i].present ?
		    &old->m.links[i] : NULL;
		/* A new link (an OCS circuit) comes from DOWN. */
		if (o && o->state == n->state && o->permille == n->permille &&
		    o->src == n->src && o->dst == n->dst &&
		    o->up_at_ps == n->up_at_ps)
			continue;
		trace_icfab_link_state(fabric->id, i,
				       o ? o->state : ICFAB_LINK_DOWN,
				       n->state, n->permille,
				       fabric->generation, fabric->commit_ps,
				       n->up_at_ps, n->hold_fail);
	}
}

/*
 * The engine just ran up to the safe time: if work is pending beyond it,
 * say whose clock holds it back. Called with the lock held.
 */
void icfab_trace_engine_held(struct icfab_fabric *fabric,
			     const struct icfab_engine *e)
{
	u64 next;

	lockdep_assert_held(&fabric->lock);
	if (!trace_icfab_engine_held_enabled() || !fabric->held_pid)
		return;
	next = icfab_engine_next_ps(e);
	if (next == ICFAB_ENGINE_NEVER)
		return;
	trace_icfab_engine_held(fabric->id, fabric->held_pid,
				fabric->held_ps, next, e->now_ps);
}

/* A circuit was installed (@alloc) or removed; with the lock held. */
void icfab_trace_circuit(struct icfab_fabric *fabric,
			 const struct icfab_circuit *c, bool alloc)
{
	lockdep_assert_held(&fabric->lock);

	if (alloc)
		trace_icfab_circuit_alloc(fabric->id, c->id, c->color, c->src,
					  c->nr_dsts, c->nr_routers,
					  c->owner_pid);
	else
		trace_icfab_circuit_free(fabric->id, c->id, c->color, c->src,
					 c->nr_dsts, c->nr_routers,
					 c->owner_pid);
}
