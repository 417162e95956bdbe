// SPDX-License-Identifier: GPL-2.0
/*
 * icfab fabric model: the timing engine (see engine.h for the contract).
 *
 * Events are processed in the order of (time, key, segment, hop, xfer).
 * Processing a segment's event at a hop is what decides its departure from
 * that link, d = max(ready, next_free), so links serve segments in the
 * order they became ready, which is the FIFO of the model; the segment's
 * next event is its arrival at the next node, d + s/B + L.
 *
 * A transfer's life: its first event, at submission, asks for a DMA
 * engine; with none idle it waits in its source's FIFO and is handed an
 * engine, by a new event, when one is released. Holding one, it injects
 * segment k + 1 when segment k has finished serialising on the first link
 * (self-clocking), and after the last one an event at that same instant
 * releases the engine. It completes when its last pending event is
 * processed, which is the last segment's arrival, or the release when both
 * fall at the same time.
 */
#include "engine.h"

enum {
	XFER_FREE = 0,
	XFER_PENDING,		/* first event not processed yet */
	XFER_WAITING,		/* in its source's DMA wait list */
	XFER_GRANTED,		/* handed an engine, start event pending */
	XFER_RUNNING,
};

#define DMA_BUSY	(~0ULL)

static icfab_u64 sat_add(icfab_u64 a, icfab_u64 b)
{
	icfab_u64 c = a + b;

	return c < a ? ~0ULL : c;
}

icfab_u32 icfab_engine_dma_needed(const struct icfab_mtopo *topo)
{
	icfab_u64 total = 0;
	icfab_u32 i;

	for (i = 0; i < topo->nodes_cap; i++) {
		const struct icfab_mnode *n = &topo->nodes[i];

		if (!n->present || n->kind != ICFAB_MODEL_ENDPOINT)
			continue;
		total += n->dma_engines ? n->dma_engines : 1;
	}
	return total > 0xffffffffULL ? 0xffffffffU : (icfab_u32)total;
}

icfab_u64 icfab_engine_events_needed(icfab_u64 bytes, icfab_u32 segment_size)
{
	return sat_add(icfab_nr_segments(bytes, segment_size), 1);
}

int icfab_engine_init(struct icfab_engine *e, const struct icfab_mtopo *topo,
		      icfab_u32 segment_size,
		      const struct icfab_engine_storage *s)
{
	icfab_u32 i, dma = 0;

	if (!segment_size || !s->links || !s->eps || !s->dma_free ||
	    !s->xfers || !s->xfers_cap || !s->events || !s->events_cap ||
	    s->xfers_cap == ICFAB_ENGINE_NO_XFER)
		return -ICFAB_ENGINE_EINVAL;
	if (icfab_engine_dma_needed(topo) > s->dma_cap)
		return -ICFAB_ENGINE_ENOSPC;

	*e = (struct icfab_engine){
		.topo = topo, .segment_size = segment_size,
		.links = s->links, .eps = s->eps, .dma_free = s->dma_free,
		.xfers = s->xfers, .events = s->events,
		.xfers_cap = s->xfers_cap, .events_cap = s->events_cap,
	};
	for (i = 0; i < topo->links_cap; i++)
		e->links[i] = (struct icfab_engine_link){ 0 };
	for (i = 0; i < topo->nodes_cap; i++) {
		const struct icfab_mnode *n = &topo->nodes[i];
		struct icfab_engine_ep *ep = &e->eps[i];

		ep->first_dma = dma;
		ep->nr_dma = 0;
		ep->wait_head = ep->wait_tail = ICFAB_ENGINE_NO_XFER;
		if (n->present && n->kind == ICFAB_MODEL_ENDPOINT)
			ep->nr_dma = n->dma_engines ? n->dma_engines : 1;
		dma += ep->nr_dma;
	}
	for (i = 0; i < dma; i++)
		e->dma_free[i] = 0;
	for (i = 0; i < e->xfers_cap; i++) {
		e->xfers[i] = (struct icfab_engine_xfer){ 0 };
		e->xfers[i].next = i + 1 < e->xfers_cap ? i + 1 :
				   ICFAB_ENGINE_NO_XFER;
	}
	e->free_xfer = 0;
	return 0;
}

/* ---- the event heap: a binary min-heap in the caller's array ---- */

static int ev_before(const struct icfab_engine_event *a,
		     const struct icfab_engine_event *b)
{
	if (a->time_ps != b->time_ps)
		return a->time_ps < b->time_ps;
	if (a->key != b->key)
		return a->key < b->key;
	if (a->seg != b->seg)
		return a->seg < b->seg;
	if (a->hop != b->hop)
		return a->hop < b->hop;
	return a->xfer < b->xfer;
}

/*
 * Cannot fail for lack of room: every push is covered by the submitting
 * transfer's reservation. The check only keeps a bug from writing past
 * the caller's array.
 */
static int ev_push(struct icfab_engine *e, icfab_u32 id, icfab_u64 time_ps,
		   icfab_u32 seg, icfab_u32 hop, icfab_u32 node)
{
	struct icfab_engine_event ev = {
		.time_ps = time_ps, .key = e->xfers[id].key, .seg = seg,
		.xfer = id, .node = node, .hop = (icfab_u16)hop,
	};
	icfab_u32 i = e->nr_events;

	if (i >= e->events_cap)
		return -ICFAB_ENGINE_ENOSPC;
	while (i) {
		icfab_u32 parent = (i - 1) / 2;

		if (!ev_before(&ev, &e->events[parent]))
			break;
		e->events[i] = e->events[parent];
		i = parent;
	}
	e->events[i] = ev;
	e->nr_events++;
	if (e->nr_events > e->max_events)
		e->max_events = e->nr_events;
	e->xfers[id].events++;
	return 0;
}

static void ev_pop(struct icfab_engine *e, struct icfab_engine_event *top)
{
	struct icfab_engine_event last;
	icfab_u32 i = 0, n;

	*top = e->events[0];
	n = --e->nr_events;
	if (!n)
		return;
	last = e->events[n];
	for (;;) {
		icfab_u32 c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && ev_before(&e->events[c + 1], &e->events[c]))
			c++;
		if (!ev_before(&e->events[c], &last))
			break;
		e->events[i] = e->events[c];
		i = c;
	}
	e->events[i] = last;
}

/* ---- routes and links ---- */

/*
 * The link leaving @node towards @dst, or ICFAB_MODEL_NO_LINK when there
 * is no route or the link is missing or DOWN. Checked at every hop, not
 * trusted from submission, so that a route or link state changed while
 * segments are in flight cannot send one off the end of an array.
 */
static icfab_u32 route_link(const struct icfab_mtopo *t, icfab_u32 node,
			    icfab_u32 dst)
{
	const struct icfab_mnode *n = &t->nodes[node];
	icfab_u16 port = icfab_topo_next_port(t, node, dst);
	icfab_u32 lid;

	if (port == ICFAB_MODEL_NO_PORT || port >= n->nr_ports)
		return ICFAB_MODEL_NO_LINK;
	lid = n->port_out[port];
	if (lid >= t->links_cap || !t->links[lid].present ||
	    t->links[lid].state == ICFAB_MODEL_LINK_DOWN ||
	    t->links[lid].dst >= t->nr_nodes)
		return ICFAB_MODEL_NO_LINK;
	return lid;
}

/* Links from @src to @dst, or 0 when the walk fails or loops. */
static icfab_u32 route_hops(const struct icfab_mtopo *t, icfab_u32 src,
			    icfab_u32 dst)
{
	icfab_u32 node = src, hops = 0;

	while (node != dst) {
		icfab_u32 lid = route_link(t, node, dst);

		/* Validation rules out loops; bound the walk regardless. */
		if (lid == ICFAB_MODEL_NO_LINK || hops >= t->nr_nodes ||
		    hops >= 0xffff)
			return 0;
		node = t->links[lid].dst;
		hops++;
	}
	return hops;
}

/* ps to serialise @len bytes on link @lid at its effective bandwidth. */
static icfab_u64 link_ser_ps(struct icfab_engine *e, icfab_u32 lid,
			     icfab_u64 len)
{
	const struct icfab_mlink *l = &e->topo->links[lid];
	struct icfab_engine_link *ls = &e->links[lid];

	if (!ls->cache_valid || ls->cache_bandwidth != l->bandwidth ||
	    ls->cache_state != l->state || ls->cache_permille != l->permille) {
		icfab_u64 bw = l->bandwidth;

		if (l->state == ICFAB_MODEL_LINK_DEGRADED)
			bw = icfab_mul_div_floor(bw, l->permille, 1000);
		/* A zero bandwidth is "never done", not a division by 0. */
		ls->cache_eff_bw = bw ? bw : 1;
		ls->cache_full_ps = icfab_serialize_ps(e->segment_size,
						       ls->cache_eff_bw);
		ls->cache_bandwidth = l->bandwidth;
		ls->cache_state = l->state;
		ls->cache_permille = l->permille;
		ls->cache_valid = 1;
	}
	if (len == e->segment_size)
		return ls->cache_full_ps;
	return icfab_serialize_ps(len, ls->cache_eff_bw);
}

static icfab_u64 seg_len(const struct icfab_engine *e,
			 const struct icfab_engine_xfer *x, icfab_u32 seg)
{
	if (seg + 1 < x->nr_segs)
		return e->segment_size;
	return x->bytes - (icfab_u64)(x->nr_segs - 1) * e->segment_size;
}

/* ---- transfers ---- */

int icfab_engine_submit(struct icfab_engine *e, icfab_u32 src, icfab_u32 dst,
			icfab_u64 bytes, icfab_u64 submit_ps, icfab_u64 key,
			icfab_u32 *xfer_id)
{
	const struct icfab_mtopo *t = e->topo;
	struct icfab_engine_xfer *x;
	icfab_u64 nseg, need;
	icfab_u32 id, hops = 0;
	int err;

	if (src >= t->nr_nodes || dst >= t->nr_nodes ||
	    !t->nodes[src].present || !t->nodes[dst].present ||
	    t->nodes[src].kind != ICFAB_MODEL_ENDPOINT ||
	    t->nodes[dst].kind != ICFAB_MODEL_ENDPOINT)
		return -ICFAB_ENGINE_EINVAL;
	if (submit_ps < e->now_ps ||
	    (e->processed && (submit_ps < e->last_ps ||
			      (submit_ps == e->last_ps && key <= e->last_key))))
		return -ICFAB_ENGINE_ERANGE;

	if (src != dst)
		hops = route_hops(t, src, dst);
	nseg = hops ? icfab_nr_segments(bytes, e->segment_size) : 0;
	/* Unroutable, empty and local transfers only need their start. */
	need = nseg + 1;
	if (nseg >= e->events_cap ||
	    e->events_reserved + need > e->events_cap)
		return -ICFAB_ENGINE_ENOSPC;
	if (e->free_xfer == ICFAB_ENGINE_NO_XFER)
		return -ICFAB_ENGINE_ENOSPC;

	id = e->free_xfer;
	x = &e->xfers[id];
	e->free_xfer = x->next;
	*x = (struct icfab_engine_xfer){
		.key = key, .bytes = bytes, .submit_ps = submit_ps,
		.nr_segs = (icfab_u32)nseg, .src = src, .dst = dst,
		.dma = 0, .next = ICFAB_ENGINE_NO_XFER,
		.hops = (icfab_u16)hops, .state = XFER_PENDING,
	};
	if (src != dst && !hops)
		x->status = -ICFAB_ENGINE_EHOSTUNREACH;
	e->events_reserved += need;
	e->nr_xfers++;
	err = ev_push(e, id, submit_ps, 0, 0, src);
	if (err)
		return err;	/* unreachable: reserved above */
	*xfer_id = id;
	if (e->tracer && e->tracer->submit) {
		struct icfab_xfer_result r = {
			.key = key, .bytes = bytes, .submit_ps = submit_ps,
			.src = src, .dst = dst, .hops = hops,
			.status = x->status,
		};

		e->tracer->submit(e->tracer_arg, id, &r);
	}
	return 0;
}

static int xfer_complete(struct icfab_engine *e, icfab_u32 id, int status,
			 icfab_u64 finish_ps, icfab_engine_complete_fn complete,
			 void *arg)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	struct icfab_xfer_result r = {
		.key = x->key, .bytes = x->bytes, .submit_ps = x->submit_ps,
		.start_ps = x->start_ps, .finish_ps = finish_ps,
		.queued_ps = x->queued_ps, .src = x->src, .dst = x->dst,
		.hops = x->hops, .status = status,
	};

	if (e->tracer && e->tracer->complete)
		e->tracer->complete(e->tracer_arg, id, &r);
	/* Retire first, so the callback may submit into the freed slot. */
	e->events_reserved -= (icfab_u64)x->nr_segs + 1;
	e->nr_xfers--;
	x->state = XFER_FREE;
	x->next = e->free_xfer;
	e->free_xfer = id;
	return complete ? complete(arg, id, &r) : 0;
}

/*
 * Transfer @id has been given a DMA engine at @now: it starts, and either
 * injects its first segment or, with nothing to send, is done at once.
 */
static int xfer_start(struct icfab_engine *e, icfab_u32 id, icfab_u64 now);

/* Give the engine @id held to the next waiter, or leave it idle. */
static int dma_release(struct icfab_engine *e, icfab_u32 id, icfab_u64 now)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	struct icfab_engine_ep *ep = &e->eps[x->src];
	icfab_u32 w = ep->wait_head;

	if (w == ICFAB_ENGINE_NO_XFER) {
		e->dma_free[x->dma] = now;
		return 0;
	}
	ep->wait_head = e->xfers[w].next;
	if (ep->wait_head == ICFAB_ENGINE_NO_XFER)
		ep->wait_tail = ICFAB_ENGINE_NO_XFER;
	e->xfers[w].next = ICFAB_ENGINE_NO_XFER;
	e->xfers[w].dma = x->dma;
	e->xfers[w].state = XFER_GRANTED;
	/*
	 * Start it by an event rather than here, so that its first segment
	 * takes its turn among the other events of this instant.
	 */
	return ev_push(e, w, now, 0, 0, x->src);
}

/* First event of a transfer: take the idle engine that freed first. */
static int dma_acquire(struct icfab_engine *e, icfab_u32 id, icfab_u64 now)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	struct icfab_engine_ep *ep = &e->eps[x->src];
	icfab_u32 i, best = ICFAB_ENGINE_NO_XFER;

	for (i = ep->first_dma; i < ep->first_dma + ep->nr_dma; i++)
		if (e->dma_free[i] != DMA_BUSY &&
		    (best == ICFAB_ENGINE_NO_XFER ||
		     e->dma_free[i] < e->dma_free[best]))
			best = i;
	if (best == ICFAB_ENGINE_NO_XFER) {
		x->state = XFER_WAITING;
		if (ep->wait_tail == ICFAB_ENGINE_NO_XFER)
			ep->wait_head = id;
		else
			e->xfers[ep->wait_tail].next = id;
		ep->wait_tail = id;
		return 0;
	}
	x->dma = best;
	return xfer_start(e, id, now);
}

/*
 * Segment @seg of transfer @id is ready at @now at the link leaving @node,
 * its hop @hop: serve it, and schedule what follows from its departure.
 */
static int seg_serve(struct icfab_engine *e, icfab_u32 id, icfab_u32 seg,
		     icfab_u32 hop, icfab_u32 node, icfab_u64 now)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	const struct icfab_mtopo *t = e->topo;
	struct icfab_engine_link *ls;
	icfab_u64 len, ser, depart, done, arrive;
	icfab_u32 lid, next;
	int err;

	lid = x->status ? ICFAB_MODEL_NO_LINK : route_link(t, node, x->dst);
	if (lid == ICFAB_MODEL_NO_LINK || hop >= t->nr_nodes ||
	    hop >= 0xffff) {
		/*
		 * The route broke while in flight (it was checked at submit;
		 * the hop bound catches a loop made since). This segment is
		 * lost, and so is every later one when they reach a hop, so
		 * the first hop releases the DMA engine at once. The transfer
		 * completes with -EHOSTUNREACH at its last pending event.
		 */
		x->status = -ICFAB_ENGINE_EHOSTUNREACH;
		if (hop == 0)
			return ev_push(e, id, now, x->nr_segs, 0, x->src);
		return 0;
	}

	ls = &e->links[lid];
	len = seg_len(e, x, seg);
	ser = link_ser_ps(e, lid, len);
	depart = now > ls->next_free_ps ? now : ls->next_free_ps;
	done = sat_add(depart, ser);
	ls->next_free_ps = done;
	ls->bytes += len;
	ls->segments++;
	ls->busy_ps = sat_add(ls->busy_ps, ser);
	if (depart - now > ls->max_queued_ps)
		ls->max_queued_ps = depart - now;
	/*
	 * The segment that held the link up to now is still on it, so its
	 * transfer is in flight and keys tell transfers apart.
	 */
	if (ls->last_key != x->key)
		x->queued_ps = sat_add(x->queued_ps, depart - now);
	ls->last_key = x->key;
	if (e->tracer && e->tracer->xmit) {
		struct icfab_engine_xmit xm = {
			.key = x->key, .bytes = len, .ready_ps = now,
			.depart_ps = depart, .done_ps = done, .xfer_id = id,
			.link = lid, .seg = seg, .hop = (icfab_u16)hop,
		};

		e->tracer->xmit(e->tracer_arg, &xm);
	}

	/* Self-clocking: the next segment is ready when this one is out. */
	if (hop == 0) {
		err = ev_push(e, id, done, seg + 1, 0, x->src);
		if (err)
			return err;
	}

	arrive = sat_add(done, t->links[lid].latency_ps);
	next = t->links[lid].dst;
	/*
	 * Segments of a transfer arrive in order, so only the last one's
	 * arrival needs an event: it completes the transfer.
	 */
	if (next == x->dst && seg + 1 < x->nr_segs)
		return 0;
	return ev_push(e, id, arrive, seg, hop + 1, next);
}

static int xfer_start(struct icfab_engine *e, icfab_u32 id, icfab_u64 now)
{
	struct icfab_engine_xfer *x = &e->xfers[id];

	x->state = XFER_RUNNING;
	x->start_ps = now;
	x->queued_ps = sat_add(x->queued_ps, now - x->submit_ps);
	e->dma_free[x->dma] = DMA_BUSY;
	if (!x->nr_segs)
		return dma_release(e, id, now);
	return seg_serve(e, id, 0, 0, x->src, now);
}

/* <0 on an engine bug, 1 when the completion callback asked to stop. */
static int ev_process(struct icfab_engine *e,
		      const struct icfab_engine_event *ev,
		      icfab_engine_complete_fn complete, void *arg)
{
	struct icfab_engine_xfer *x = &e->xfers[ev->xfer];
	int err;

	x->events--;
	switch (x->state) {
	case XFER_PENDING:
		err = dma_acquire(e, ev->xfer, ev->time_ps);
		break;
	case XFER_GRANTED:
		err = xfer_start(e, ev->xfer, ev->time_ps);
		break;
	case XFER_RUNNING:
		if (ev->seg == x->nr_segs)
			err = dma_release(e, ev->xfer, ev->time_ps);
		else if (ev->node == x->dst)
			err = 0;	/* an arrival: see below */
		else
			err = seg_serve(e, ev->xfer, ev->seg, ev->hop,
					ev->node, ev->time_ps);
		break;
	default:
		return -ICFAB_ENGINE_EINVAL;	/* event for a free slot */
	}
	if (err)
		return err;
	if (x->state == XFER_RUNNING && !x->events)
		return xfer_complete(e, ev->xfer, x->status, ev->time_ps,
				     complete, arg) ? 1 : 0;
	return 0;
}

int icfab_engine_run_until(struct icfab_engine *e, icfab_u64 horizon_ps,
			   icfab_engine_complete_fn complete, void *arg)
{
	struct icfab_engine_event ev;
	int ret;

	while (e->nr_events) {
		if (horizon_ps != ICFAB_ENGINE_NEVER &&
		    e->events[0].time_ps >= horizon_ps)
			break;
		ev_pop(e, &ev);
		/*
		 * A handed-over DMA engine can push an event of this instant
		 * with a smaller key than the one just processed, so keep the
		 * largest, which is what a submission must sort after.
		 */
		if (!e->processed || ev.time_ps > e->last_ps ||
		    (ev.time_ps == e->last_ps && ev.key > e->last_key)) {
			e->last_ps = ev.time_ps;
			e->last_key = ev.key;
			e->processed = 1;
		}
		if (ev.time_ps > e->now_ps)
			e->now_ps = ev.time_ps;
		ret = ev_process(e, &ev, complete, arg);
		if (ret)
			return ret;
	}
	if (horizon_ps != ICFAB_ENGINE_NEVER && horizon_ps > e->now_ps)
		e->now_ps = horizon_ps;
	return 0;
}

void icfab_engine_set_tracer(struct icfab_engine *e,
			     const struct icfab_engine_tracer *tracer,
			     void *arg)
{
	e->tracer = tracer;
	e->tracer_arg = arg;
}

void icfab_engine_reset_stats(struct icfab_engine *e)
{
	icfab_u32 i;

	for (i = 0; i < e->topo->links_cap; i++) {
		struct icfab_engine_link *ls = &e->links[i];

		ls->bytes = 0;
		ls->segments = 0;
		ls->busy_ps = 0;
		ls->max_queued_ps = 0;
	}
}

icfab_u64 icfab_engine_next_ps(const struct icfab_engine *e)
{
	return e->nr_events ? e->events[0].time_ps : ICFAB_ENGINE_NEVER;
}

void icfab_engine_cancel_all(struct icfab_engine *e,
			     icfab_engine_complete_fn complete, void *arg)
{
	icfab_u32 i;

	/* Drop the heap and wait lists first: nothing may refer to a slot. */
	e->nr_events = 0;
	for (i = 0; i < e->topo->nodes_cap; i++) {
		struct icfab_engine_ep *ep = &e->eps[i];
		icfab_u32 d;

		ep->wait_head = ep->wait_tail = ICFAB_ENGINE_NO_XFER;
		for (d = ep->first_dma; d < ep->first_dma + ep->nr_dma; d++)
			if (e->dma_free[d] == DMA_BUSY)
				e->dma_free[d] = e->now_ps;
	}
	for (i = 0; i < e->xfers_cap; i++) {
		struct icfab_engine_xfer *x = &e->xfers[i];
		icfab_u64 finish;

		if (x->state == XFER_FREE)
			continue;
		if (x->state != XFER_RUNNING) {
			/* Never started: it starts, and ends, as cancelled. */
			x->start_ps = e->now_ps > x->submit_ps ? e->now_ps :
				      x->submit_ps;
			x->queued_ps = x->start_ps - x->submit_ps;
		}
		finish = e->now_ps > x->start_ps ? e->now_ps : x->start_ps;
		x->events = 0;
		xfer_complete(e, i, -ICFAB_ENGINE_ECANCELED, finish,
			      complete, arg);
	}
}
