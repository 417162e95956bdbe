// SPDX-License-Identifier: GPL-2.0
/*
 * icfab fabric model: the timing engine (see engine.h for the contract).
 *
 * Events are processed in the order of (time, key, segment, hop, node,
 * xfer), where an event's key is its transfer's with ICFAB_ENGINE_KEY_LATE
 * added at the instant the transfer was submitted (ev_key()): what is in
 * flight at an instant goes before what is submitted at it. Processing a
 * segment's event at a node is what decides its departure from the link it leaves by, d = max(ready, next_free), so
 * links serve segments in the order they became ready, which is the FIFO
 * of the model; the segment's next event is its arrival at the next node,
 * d + s/B + L.
 *
 * A transfer's life: its first event, at submission, asks for a DMA
 * engine; with none idle it waits in its source's FIFO and is handed an
 * engine, by a new event, when one is released. Holding one, it injects
 * segment k + 1 when segment k has finished serialising on the first link
 * (self-clocking), and after the last one an event at that same instant
 * releases the engine. Arrivals at a destination are only counted; the
 * one that completes the count schedules the transfer's last event at
 * the latest arrival, and the transfer completes when its last pending
 * event is processed.
 *
 * A routed transfer finds its next link at every hop from the forwarding
 * tables of the topology in force then, so icfab_engine_retopo() moves
 * segments in flight. A tree transfer follows the caller's list of links
 * instead and copies a segment onto every tree link leaving the node it
 * reached.
 *
 * A held link (an OCS circuit coming up, mlink.up_at_ps) delays the
 * segments that reach it until it is up, or fails their transfer with
 * -ENETDOWN. The hold is read from the topology at every departure,
 * never cached with the serialisation time, so a commit that sets or
 * lifts one applies to the next segment.
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

/*
 * What a DMA engine idle from @now holds in dma_free[]. Released at
 * ICFAB_ENGINE_NEVER, it would read as DMA_BUSY, busy for good, and the
 * next transfer from its endpoint would wait for it and never start (nor
 * complete): a ps earlier only changes
 * which of the idle engines a later transfer takes, and they are alike
 * (the index is seen nowhere else).
 */
static icfab_u64 dma_idle_since(icfab_u64 now)
{
	return now - (now == DMA_BUSY);
}

/*
 * For the helpers of the per-event path, called a few times per event:
 * a call there costs more than its body (in a kernel, a return thunk and
 * a stack canary too), and the compiler keeps some out of line.
 */
#define ENGINE_HOT	inline __attribute__((__always_inline__))

/* Hop numbers are u16 in events; a walk this long is a loop. */
#define HOP_MAX		0xffffU

/*
 * The key an event of @x at @time_ps is ordered by: its transfer's, and
 * ICFAB_ENGINE_KEY_LATE at the instant it was submitted, so that every
 * event of a transfer still in flight at that instant sorts before it,
 * whichever keys they have (engine.h).
 */
static ENGINE_HOT icfab_u64 ev_key(const struct icfab_engine_xfer *x,
				   icfab_u64 time_ps)
{
	return x->key | (time_ps == x->submit_ps ? ICFAB_ENGINE_KEY_LATE : 0);
}

/*
 * ev_key() of an event of @x that comes after the instant @x was
 * submitted: no compare. Most do. An event is pushed while one at
 * now_ps >= submit_ps is processed, and a segment's serialisation takes
 * 1 ps at least (1 byte or more, rounded up), so what a departure
 * decides (the segment's next event, the source's next one, the DMA
 * engine's release, the last arrival) is later than now_ps, except
 * where the next hop is cut-through with no latency, the source's next
 * segment is sprayed (ready when this one left), or a time saturated
 * at ICFAB_ENGINE_NEVER. Those pushes test for it (the event's time
 * equals the departure's, or the submission's) and go by ev_push_any().
 * A transfer's first events, a waiter's start and a lost segment's
 * release may fall on the instant as a rule: ev_push() compares.
 */
static ENGINE_HOT icfab_u64 ev_key_after(const struct icfab_engine_xfer *x)
{
	return x->key;
}

static ENGINE_HOT icfab_u64 sat_add(icfab_u64 a, icfab_u64 b)
{
	icfab_u64 c;

	/* The carry flag, not a compare: a few per segment-hop. */
	return __builtin_add_overflow(a, b, &c) ? ~0ULL : c;
}

static icfab_u32 node_dma_engines(const struct icfab_mnode *n)
{
	return n->dma_engines ? n->dma_engines : 1;
}

static int is_endpoint(const struct icfab_mtopo *t, icfab_u32 node)
{
	return node < t->nr_nodes && t->nodes[node].present &&
	       t->nodes[node].kind == ICFAB_MODEL_ENDPOINT;
}

/*
 * is_endpoint() from the engine's own table, for every submission:
 * eps[].nr_dma is nonzero exactly for the present endpoints, as init
 * found them and icfab_engine_retopo() keeps them (the same nodes, kinds
 * and DMA engine counts); nr_nodes is no more than nodes_cap.
 */
static inline __attribute__((__always_inline__)) int
ep_present(const struct icfab_engine *e, icfab_u32 node)
{
	return node < e->topo->nr_nodes && e->eps[node].nr_dma;
}

icfab_u32 icfab_engine_dma_needed(const struct icfab_mtopo *topo)
{
	icfab_u64 total = 0;
	icfab_u32 i;

	for (i = 0; i < topo->nodes_cap; i++) {
		const struct icfab_mnode *n = &topo->nodes[i];

		if (!n->present || n->kind != ICFAB_MODEL_ENDPOINT)
			continue;
		total += node_dma_engines(n);
	}
	return total > 0xffffffffULL ? 0xffffffffU : (icfab_u32)total;
}

icfab_u64 icfab_engine_events_needed(icfab_u64 bytes, icfab_u32 segment_size)
{
	return sat_add(icfab_nr_segments(bytes, segment_size), 1);
}

/*
 * Per segment, the pending events of a tree transfer sit at nodes none of
 * which descends from another: the event at a node is consumed when its
 * children's are pushed, and a leaf gets none (its arrival is counted at
 * the departure that decides it). Such a set of nodes has at most one per
 * leaf, so segments * leaves, plus the one event of the transfer itself
 * (the DMA release, or the last arrival, which is only pushed once no
 * segment has an event left). An unchecked tree (nr_leaves 0) is costed
 * at one per link, which is never less.
 */
icfab_u64 icfab_engine_tree_events_needed(icfab_u64 bytes,
					  icfab_u32 segment_size,
					  const struct icfab_engine_tree *tree)
{
	icfab_u64 nseg = icfab_nr_segments(bytes, segment_size);
	icfab_u64 per_seg = tree->nr_leaves;

	if (!per_seg || per_seg > tree->nr_links)
		per_seg = tree->nr_links;
	if (per_seg && nseg > (~0ULL - 1) / per_seg)
		return ~0ULL;
	return nseg * per_seg + 1;
}

static void ev_queue_reset(struct icfab_engine *e);

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
		.epoch = 1,
	};
	ev_queue_reset(e);
	for (i = 0; i < topo->links_cap; i++)
		e->links[i] = (struct icfab_engine_link){ 0 };
	for (i = 0; i < topo->nodes_cap; i++) {
		const struct icfab_mnode *n = &topo->nodes[i];
		struct icfab_engine_ep *ep = &e->eps[i];

		*ep = (struct icfab_engine_ep){
			.first_dma = dma,
			.wait_head = ICFAB_ENGINE_NO_XFER,
			.wait_tail = ICFAB_ENGINE_NO_XFER,
			.sub_head = ICFAB_ENGINE_NO_XFER,
			.sub_tail = ICFAB_ENGINE_NO_XFER,
			.route_dst = ICFAB_ENGINE_NO_NODE,
		};
		if (n->present && n->kind == ICFAB_MODEL_ENDPOINT)
			ep->nr_dma = node_dma_engines(n);
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

/*
 * ---- pending events: a 4-ary min-heap and a sorted run of ordering
 * entries, sharing the front of the caller's array, the events' bodies
 * behind them, and two chains linked through the bodies (see struct
 * icfab_engine) ----
 */

_Static_assert(sizeof(struct icfab_engine_event) ==
	       sizeof(struct icfab_engine_evkey) +
	       sizeof(struct icfab_engine_evbody),
	       "an event's storage is its ordering entry and its body");

/* An event taken off the queue, whole. */
struct ev {
	icfab_u64 time_ps;		/* ps */
	icfab_u64 tail_ps;		/* ps */
	icfab_u64 key;
	icfab_u32 seg;
	icfab_u32 xfer;
	icfab_u32 node;
	icfab_u32 hop;
	icfab_u32 turn;			/* a segment's remaining spray turn */
};

/* Where keys[] and bodies[] are in an array of @cap events. */
static ENGINE_HOT struct icfab_engine_evkey *
ev_keys_of(struct icfab_engine_event *ev)
{
	return (struct icfab_engine_evkey *)ev;
}

static ENGINE_HOT struct icfab_engine_evbody *
ev_bodies_of(struct icfab_engine_event *ev, icfab_u32 cap)
{
	return (struct icfab_engine_evbody *)
	       ((char *)ev + (unsigned long)cap *
			     sizeof(struct icfab_engine_evkey));
}

/* @e's; derived, not kept, so that only events and events_cap say where. */
static ENGINE_HOT struct icfab_engine_evkey *
ev_keys(const struct icfab_engine *e)
{
	return ev_keys_of(e->events);
}

static ENGINE_HOT struct icfab_engine_evbody *
ev_bodies(const struct icfab_engine *e)
{
	return ev_bodies_of(e->events, e->events_cap);
}

/*
 * Of two events that tie in (time, key, seg): (hop, node, xfer). Only
 * events equal in every field tie (a transfer has at most one pending
 * per segment, hop and node), and those are interchangeable.
 */
static int body_before(const struct icfab_engine_evbody *a,
		       const struct icfab_engine_evbody *b)
{
	if (a->hop != b->hop)
		return a->hop < b->hop;
	/* Only a tree has one segment at two nodes of one depth. */
	if (a->node != b->node)
		return a->node < b->node;
	return a->xfer < b->xfer;
}

/*
 * The order events are processed in: (time, key, seg, hop, node, xfer).
 * It is total, so any structure that always yields a smallest pending
 * event processes the same events in the same order.
 */
static ENGINE_HOT int ev_before(const struct icfab_engine *e,
				const struct icfab_engine_evkey *a,
				const struct icfab_engine_evkey *b)
{
	if (a->time_ps != b->time_ps)
		return a->time_ps < b->time_ps;
	if (a->key != b->key)
		return a->key < b->key;
	if (a->seg != b->seg)
		return a->seg < b->seg;
	return body_before(&ev_bodies(e)[a->body], &ev_bodies(e)[b->body]);
}

static void ev_queue_reset(struct icfab_engine *e)
{
	e->nr_events = 0;
	e->nr_deferred = 0;
	e->has_front = 0;
	e->nr_heap = 0;
	e->run_lo = e->events_cap;
	e->run_hi = e->events_cap;
	e->free_body = ICFAB_ENGINE_NO_XFER;
	e->bodies_hi = 0;
	e->chain[0].head.body = ICFAB_ENGINE_NO_XFER;
	e->chain[1].head.body = ICFAB_ENGINE_NO_XFER;
}

/*
 * Move the run to the top of keys[], to open the gap between it and
 * the heap. Only needed once they meet with room left above the run
 * (popped from its top), so rarely, and only when the array is nearly
 * full.
 */
static void ev_run_to_top(struct icfab_engine *e)
{
	icfab_u32 shift = e->events_cap - e->run_hi, i;

	for (i = e->run_hi; i-- > e->run_lo;)
		ev_keys(e)[i + shift] = ev_keys(e)[i];
	e->run_lo += shift;
	e->run_hi += shift;
}

static ENGINE_HOT void ev_heap_push(struct icfab_engine *e,
				    const struct icfab_engine_evkey *k)
{
	struct icfab_engine_evkey *h = ev_keys(e);
	icfab_u32 i = e->nr_heap++;

	while (i) {
		icfab_u32 parent = (i - 1) / 4;

		if (!ev_before(e, k, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = *k;
}

/*
 * Bottom up: the hole at the root goes down by the smaller child to a
 * leaf, and the last entry, which belongs near the bottom, rises from
 * there. One compare per level fewer than sinking it from the root.
 */
static void ev_heap_pop(struct icfab_engine *e,
			struct icfab_engine_evkey *top)
{
	struct icfab_engine_evkey *h = ev_keys(e), last;
	icfab_u64 i = 0, n;

	*top = h[0];
	n = --e->nr_heap;
	if (!n)
		return;
	last = h[n];
	for (;;) {
		icfab_u64 c = 4 * i + 1, best = c;

		if (c + 3 < n) {
			/* Four children: the usual case, unrolled. */
			icfab_u64 b2 = c + 2;

			if (ev_before(e, &h[c + 1], &h[c]))
				best = c + 1;
			if (ev_before(e, &h[c + 3], &h[c + 2]))
				b2 = c + 3;
			if (ev_before(e, &h[b2], &h[best]))
				best = b2;
		} else {
			icfab_u64 j;

			if (c >= n)
				break;
			for (j = c + 1; j < n; j++)
				if (ev_before(e, &h[j], &h[best]))
					best = j;
		}
		h[i] = h[best];
		i = best;
	}
	while (i) {
		icfab_u64 parent = (i - 1) / 4;

		if (!ev_before(e, &last, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = last;
}

/* Where the next event is. */
enum { EV_HEAP, EV_RUN, EV_CHAIN0, EV_CHAIN1, EV_FRONT };

static ENGINE_HOT int chain_empty(const struct icfab_engine *e, int c)
{
	return e->chain[c].head.body == ICFAB_ENGINE_NO_XFER;
}

/*
 * There is a next event: where, of the front, the heap, run and chains.
 * "None yet" is a negative @src, not a NULL @best: the compiler follows
 * the one through the tests below, but not that &keys[i] is not NULL.
 * (With nothing pending it stays negative, which ev_head() and ev_pop()
 * read as the heap, as before.)
 */
static ENGINE_HOT int ev_next_src(const struct icfab_engine *e)
{
	const struct icfab_engine_evkey *best = ICFAB_NULL;
	int src = -1;

	if (e->has_front)
		return EV_FRONT;
	if (e->nr_heap) {
		best = &ev_keys(e)[0];
		src = EV_HEAP;
	}
	if (e->run_lo != e->run_hi &&
	    (src < 0 || ev_before(e, &ev_keys(e)[e->run_hi - 1], best))) {
		best = &ev_keys(e)[e->run_hi - 1];
		src = EV_RUN;
	}
	/* The two chains, written out: a loop of two stays a loop. */
	if (!chain_empty(e, 0) &&
	    (src < 0 || ev_before(e, &e->chain[0].head, best))) {
		best = &e->chain[0].head;
		src = EV_CHAIN0;
	}
	if (!chain_empty(e, 1) &&
	    (src < 0 || ev_before(e, &e->chain[1].head, best)))
		src = EV_CHAIN1;
	return src;
}

/* The next event, from @src (ev_next_src()'s answer). */
static ENGINE_HOT const struct icfab_engine_evkey *
ev_head(const struct icfab_engine *e, int src)
{
	if (src == EV_FRONT)
		return &e->front;
	if (src >= EV_CHAIN0)
		return &e->chain[src - EV_CHAIN0].head;
	return src == EV_RUN ? &ev_keys(e)[e->run_hi - 1] : &ev_keys(e)[0];
}

/* The next event; there is one. */
static ENGINE_HOT const struct icfab_engine_evkey *
ev_peek(const struct icfab_engine *e)
{
	return ev_head(e, ev_next_src(e));
}

/*
 * Whether @k sorts before every event in the heap and the run (there is
 * no front). The heap's head first: it is the usual answer, by time.
 */
static ENGINE_HOT int ev_sorts_first(const struct icfab_engine *e,
				     const struct icfab_engine_evkey *k)
{
	if (e->nr_heap && !ev_before(e, k, &ev_keys(e)[0]))
		return 0;
	if (!chain_empty(e, 0) && !ev_before(e, k, &e->chain[0].head))
		return 0;
	if (!chain_empty(e, 1) && !ev_before(e, k, &e->chain[1].head))
		return 0;
	return e->run_lo == e->run_hi ||
	       ev_before(e, k, &ev_keys(e)[e->run_hi - 1]);
}

/*
 * Whether @k may join chain @c: it is empty, or @k sorts after its last
 * in (time, key, seg). A tie there goes elsewhere: the last's body holds
 * links, not what would break it.
 */
static ENGINE_HOT int chain_fits(const struct icfab_engine *e, int c,
				 const struct icfab_engine_evkey *k)
{
	const struct icfab_engine_evkey *t = &e->chain[c].tail;

	if (chain_empty(e, c))
		return 1;
	if (k->time_ps != t->time_ps)
		return k->time_ps > t->time_ps;
	if (k->key != t->key)
		return k->key > t->key;
	return k->seg > t->seg;
}

/* @k, with its body @b, joins chain @c (chain_fits() said so). */
static ENGINE_HOT void chain_append(struct icfab_engine *e, int c,
				    const struct icfab_engine_evkey *k,
				    struct icfab_engine_evbody *b)
{
	if (chain_empty(e, c)) {
		e->chain[c].head = *k;
		e->chain[c].next = ICFAB_ENGINE_NO_XFER;
	} else {
		/* Not the head: its body keeps its segment and the next. */
		b->node = ICFAB_ENGINE_NO_XFER;
		b->turn = k->seg;
		if (e->chain[c].tail.body == e->chain[c].head.body)
			e->chain[c].next = k->body;
		else
			ev_bodies(e)[e->chain[c].tail.body].node = k->body;
	}
	e->chain[c].tail = *k;
}

/* Chain @c's head has been taken: the next member becomes whole. */
static ENGINE_HOT void chain_advance(struct icfab_engine *e, int c)
{
	icfab_u32 n = e->chain[c].next;
	struct icfab_engine_evbody *b;
	const struct icfab_engine_xfer *x;

	if (n == ICFAB_ENGINE_NO_XFER) {
		e->chain[c].head.body = ICFAB_ENGINE_NO_XFER;
		return;
	}
	b = &ev_bodies(e)[n];
	x = &e->xfers[b->xfer];
	e->chain[c].next = b->node;
	e->chain[c].head.time_ps = b->tail_ps;
	/* A chain holds only events after their submission instant. */
	e->chain[c].head.key = ev_key_after(x);
	e->chain[c].head.seg = b->turn;
	e->chain[c].head.body = n;
	b->node = c ? x->dst : x->src;
	b->turn = 0;
}

/*
 * Cannot fail for lack of room: every push is covered by the submitting
 * transfer's reservation. The check only keeps a bug from writing past
 * the caller's array. @key: ev_key() of the event. @chain: 0, or 1 +
 * the chain that can take the event (hop 0 at @id's source, or hop 1 at
 * its destination; turn 0, its tail at its time; @key ev_key_after()).
 */
static ENGINE_HOT int ev_push_tail(struct icfab_engine *e, icfab_u32 id,
				   icfab_u64 key,
				   icfab_u64 time_ps, icfab_u64 tail_ps,
				   icfab_u32 seg, icfab_u32 hop,
				   icfab_u32 node, icfab_u32 turn, int chain)
{
	struct icfab_engine_evbody *b;
	struct icfab_engine_evkey k;
	int to_run;

	/*
	 * Every pending event in the front, the heap, the run or a chain
	 * holds one body, so nr_events is the bodies in use: with one on
	 * the free list there is room, and only a new one is checked.
	 */
	if (e->free_body != ICFAB_ENGINE_NO_XFER) {
		k.body = e->free_body;
		e->free_body = ev_bodies(e)[k.body].xfer;
	} else if (e->bodies_hi < e->events_cap) {
		k.body = e->bodies_hi++;
	} else {
		return -ICFAB_ENGINE_ENOSPC;
	}
	k.time_ps = time_ps;
	k.key = key;
	k.seg = seg;
	b = &ev_bodies(e)[k.body];
	b->tail_ps = tail_ps;
	b->xfer = id;
	b->node = node;
	b->hop = (icfab_u16)hop;
	b->pad = 0;
	b->turn = turn;
	/*
	 * The next event to process goes to the front; one that sorts
	 * before the front takes its place, and the front goes in below.
	 * Only an event of the instant being processed is worth the
	 * compares: a later one is rarely the next.
	 */
	if (!e->heap_only) {
		if (!e->has_front) {
			if (time_ps <= e->now_ps && ev_sorts_first(e, &k)) {
				e->front = k;
				e->has_front = 1;
				goto pushed;
			}
		} else if (ev_before(e, &k, &e->front)) {
			struct icfab_engine_evkey f = e->front;

			e->front = k;
			k = f;
			chain = 0;
		}
		if (chain && chain_fits(e, chain - 1, &k)) {
			chain_append(e, chain - 1, &k, b);
			goto pushed;
		}
	}
	/* From here on an entry is free: below the run or above it. */
	to_run = !e->heap_only && (e->run_lo == e->run_hi ||
				   !ev_before(e, &k, &ev_keys(e)[e->run_lo]));
	if (e->run_lo == e->nr_heap)
		ev_run_to_top(e);
	if (to_run)
		ev_keys(e)[--e->run_lo] = k;
	else
		ev_heap_push(e, &k);
pushed:
	e->nr_events++;
	if (e->nr_events + e->nr_deferred > e->max_events)
		e->max_events = e->nr_events + e->nr_deferred;
	e->xfers[id].events++;
	return 0;
}

/* An event that is all there at @time_ps: its tail is its head. */
static ENGINE_HOT int ev_push(struct icfab_engine *e, icfab_u32 id,
			      icfab_u64 time_ps, icfab_u32 seg, icfab_u32 hop,
			      icfab_u32 node)
{
	return ev_push_tail(e, id, ev_key(&e->xfers[id], time_ps), time_ps,
			    time_ps, seg, hop, node, 0, 0);
}

/*
 * An event of @id that may fall on the instant it was submitted, where
 * the engine's hot paths expect a later one (ev_key_after()): out of
 * line, with the compare, and never into a chain.
 */
static __attribute__((__noinline__)) int
ev_push_any(struct icfab_engine *e, icfab_u32 id, icfab_u64 time_ps,
	    icfab_u64 tail_ps, icfab_u32 seg, icfab_u32 hop, icfab_u32 node,
	    icfab_u32 turn)
{
	return ev_push_tail(e, id, ev_key(&e->xfers[id], time_ps), time_ps,
			    tail_ps, seg, hop, node, turn, 0);
}

/*
 * The next event the source's injection clocks for @id: its segment
 * @seg (its DMA engine's release when @seg is nr_segs), at the source,
 * after the instant @id was submitted.
 */
static ENGINE_HOT int ev_push_src(struct icfab_engine *e, icfab_u32 id,
				  icfab_u64 time_ps, icfab_u32 seg)
{
	const struct icfab_engine_xfer *x = &e->xfers[id];

	return ev_push_tail(e, id, ev_key_after(x), time_ps, time_ps, seg, 0,
			    x->src, 0, 1);
}

/* @id's last arrival, at its destination, after it was submitted. */
static ENGINE_HOT int ev_push_arrival(struct icfab_engine *e, icfab_u32 id,
				      icfab_u64 time_ps)
{
	const struct icfab_engine_xfer *x = &e->xfers[id];

	return ev_push_tail(e, id, ev_key_after(x), time_ps, time_ps,
			    x->nr_segs, 1, x->dst, 0, 2);
}

/*
 * The last segment of @id is out at its source at @time_ps and lands at
 * its destination at that instant too: its DMA release and its last
 * arrival are (time, key, nr_segs, hop 0) and (..., hop 1), next to each
 * other in the order of events, since nothing but @id's own events falls
 * between them and @id has no other left. So one event carries both: the
 * release, pushed with segment nr_segs + 1 (which sorts where nr_segs
 * would, @id having no event past its last segment), and the arrival,
 * counted as pending (nr_deferred, as in max_events) until the release
 * has run (arrival_carried()). One event fewer, the same order. Not with
 * heap_only, the reference the host tests compare the engine with.
 */
static int release_here(const struct icfab_engine *e, icfab_u32 id,
			icfab_u64 time_ps);

static ENGINE_HOT int release_lands(struct icfab_engine *e, icfab_u32 id,
				    icfab_u64 time_ps)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	int err;

	x->undelivered = 0;
	x->arrive_ps = time_ps;
	if (__builtin_expect(e->carry_open, 0) &&
	    release_here(e, id, time_ps)) {
		/* Pending as the push would have it, but for carried_run(). */
		e->carried_here = 1;
		x->events++;
		e->nr_deferred++;
	} else {
		err = ev_push_src(e, id, time_ps, x->nr_segs + 1);
		if (err)
			return err;
	}
	x->events++;
	e->nr_deferred++;
	if (e->nr_events + e->nr_deferred > e->max_events)
		e->max_events = e->nr_events + e->nr_deferred;
	return 0;
}

/*
 * The release carrying @id's last arrival (release_lands()) has run at
 * @time_ps: the arrival is the next event, unless the release handed
 * the DMA engine to a transfer whose start, at this instant, sorts
 * before it (a key no larger than @id's); then it is pushed to take its
 * turn, as it would have been.
 */
static ENGINE_HOT int arrival_carried(struct icfab_engine *e, icfab_u32 id,
				      icfab_u64 time_ps, icfab_u32 waiter)
{
	struct icfab_engine_xfer *x = &e->xfers[id];

	x->events--;
	e->nr_deferred--;
	if (waiter != ICFAB_ENGINE_NO_XFER &&
	    ev_key(&e->xfers[waiter], time_ps) <= ev_key_after(x))
		return ev_push_arrival(e, id, time_ps);
	return 0;
}

/*
 * Event @k, just taken off the queue, whole into @top; its body goes
 * back to the free list. Read where it lies, not staged in a copy.
 */
static ENGINE_HOT void ev_take(struct icfab_engine *e,
			       const struct icfab_engine_evkey *k,
			       struct ev *top)
{
	icfab_u32 body = k->body;
	struct icfab_engine_evbody *b = &ev_bodies(e)[body];

	top->time_ps = k->time_ps;
	top->key = k->key;
	top->seg = k->seg;
	top->tail_ps = b->tail_ps;
	top->xfer = b->xfer;
	top->node = b->node;
	top->hop = b->hop;
	top->turn = b->turn;
	b->xfer = e->free_body;
	e->free_body = body;
}

/* Pop the next event, from @src (ev_next_src()'s answer). */
static ENGINE_HOT void ev_pop(struct icfab_engine *e, int src,
			      struct ev *top)
{
	struct icfab_engine_evkey k;

	e->nr_events--;
	if (src == EV_FRONT) {
		e->has_front = 0;
		ev_take(e, &e->front, top);
	} else if (src >= EV_CHAIN0) {
		ev_take(e, &e->chain[src - EV_CHAIN0].head, top);
		chain_advance(e, src - EV_CHAIN0);
	} else if (src == EV_RUN) {
		ev_take(e, &ev_keys(e)[--e->run_hi], top);
		if (e->run_hi == e->run_lo) {
			e->run_lo = e->events_cap;
			e->run_hi = e->events_cap;
		}
	} else {
		ev_heap_pop(e, &k);
		ev_take(e, &k, top);
	}
}

/*
 * Two fresh stamps for a tree walk: s (returned) and s + 1. Every stamp
 * handed out is above every mark left in eps[], so no node carries one
 * before the walk sets it. On wrap-around, once in 2^31 walks, the marks
 * are cleared instead.
 */
static icfab_u32 stamp_take(struct icfab_engine *e)
{
	icfab_u32 i;

	if (e->mark >= 0xfffffffdU) {
		for (i = 0; i < e->topo->nodes_cap; i++)
			e->eps[i].mark = 0;
		e->mark = 0;
	}
	e->mark += 2;
	return e->mark - 1;
}

/* ---- partitions (see engine.h) ---- */

static int part_fail(struct icfab_engine *e, int err)
{
	if (!e->part->err)
		e->part->err = err;
	return err;
}

/*
 * Leave to partition of_node[@owner] what this one may not do: the event
 * of segment @seg at @node (or, @node ICFAB_ENGINE_NO_XFER, its arrival
 * at @time_ps). The outbox holds as many messages as the engine events:
 * a segment sends at most one per window, since every message is at
 * least a lookahead later than the event that sent it.
 */
static int part_send(struct icfab_engine *e, icfab_u32 id, icfab_u64 time_ps,
		     icfab_u64 tail_ps, icfab_u32 seg, icfab_u32 hop,
		     icfab_u32 node, icfab_u32 turn, icfab_u32 owner)
{
	struct icfab_engine_part *p = e->part;
	struct icfab_engine_msg *m;

	if (p->nr_out >= p->out_cap)
		return part_fail(e, -ICFAB_ENGINE_ENOSPC);
	m = &p->out[p->nr_out++];
	m->time_ps = time_ps;
	m->tail_ps = tail_ps;
	m->xfer = id;
	m->seg = seg;
	m->node = node;
	m->turn = turn;
	m->hop = (icfab_u16)hop;
	m->to = p->of_node[owner];
	m->pad = 0;
	return 0;
}

/* Transfer @ev->xfer is done: record it for the caller's merge. */
static int part_done(struct icfab_engine *e, const struct ev *ev)
{
	struct icfab_engine_part *p = e->part;
	struct icfab_engine_done *d;

	if (p->nr_done >= p->done_cap)
		return part_fail(e, -ICFAB_ENGINE_ENOSPC);
	d = &p->done[p->nr_done++];
	d->time_ps = ev->time_ps;
	d->key = ev->key;
	d->seg = ev->seg;
	d->hop = ev->hop;
	d->node = ev->node;
	d->xfer = ev->xfer;
	return 0;
}

/* ---- routes and links ---- */

/*
 * Whether link @lid can carry a segment: present, not DOWN, between
 * nodes that exist. Checked at every departure, not trusted from
 * submission, so that a link changed while segments are in flight cannot
 * send one off the end of an array.
 */
static ENGINE_HOT int link_usable(const struct icfab_mtopo *t, icfab_u32 lid)
{
	const struct icfab_mlink *l;

	if (lid >= t->links_cap)
		return 0;
	l = &t->links[lid];
	return l->present && l->state != ICFAB_MODEL_LINK_DOWN &&
	       l->src < t->nr_nodes && l->dst < t->nr_nodes;
}

/* The link leaving @n by @port, or ICFAB_MODEL_NO_LINK if it is not usable. */
static ENGINE_HOT icfab_u32 port_link(const struct icfab_mtopo *t,
				      const struct icfab_mnode *n,
				      icfab_u16 port)
{
	icfab_u32 lid;

	if (port >= n->nr_ports)
		return ICFAB_MODEL_NO_LINK;
	lid = n->port_out[port];
	return link_usable(t, lid) ? lid : ICFAB_MODEL_NO_LINK;
}

/* Fibonacci hashing of a 64-bit key: the high half of the low 64 bits. */
static ENGINE_HOT icfab_u32 key_turn(icfab_u64 key)
{
	return (icfab_u32)((key * 0x9e3779b97f4a7c15ULL) >> 32);
}

/*
 * The link leaving @node towards @x's destination that carries a segment
 * with remaining spray turn *@turn: the route's port, or the member a
 * next-hop set chooses (docs/TIMING.md, "Equal-cost next hops"): by a
 * hash of the key with the node mixed in (flow), or the turn modulo the
 * set's size, which divides the turn (spray). A member that cannot
 * carry it gives its turn to the next, round the set. Without @x (a
 * single-path reader) the set's first usable member from its primary.
 * The link is the first of its ring of parallel links;
 * ICFAB_MODEL_NO_LINK when none is usable. *@spray is set to 1 when a
 * sprayed set chose (with @x), and left alone otherwise.
 */
static ENGINE_HOT icfab_u32 route_choose(const struct icfab_mtopo *t,
					 icfab_u32 node, icfab_u32 dst,
					 const struct icfab_engine_xfer *x,
					 icfab_u32 *turn, int *spray)
{
	const struct icfab_mnode *n = &t->nodes[node];
	icfab_u16 e = icfab_topo_route_entry(t, node, dst);
	const struct icfab_mset *set;
	icfab_u32 i, c, lid;

	if (e < ICFAB_MODEL_SET_BASE)
		return port_link(t, n, e);
	set = icfab_topo_entry_set(t, node, e);
	if (!set || !set->nr)
		return ICFAB_MODEL_NO_LINK;
	if (!x) {
		i = 0;
	} else if (set->mode == ICFAB_MODEL_MULTIPATH_SPRAY) {
		*spray = 1;
		i = *turn % set->nr;
		*turn /= set->nr;
	} else {
		i = key_turn(x->key ^ (node * 0xbf58476d1ce4e5b9ULL)) %
		    set->nr;
	}
	for (c = 0; c < set->nr; c++) {
		lid = port_link(t, n, set->ports[(i + c) % set->nr]);
		if (lid != ICFAB_MODEL_NO_LINK)
			return lid;
	}
	return ICFAB_MODEL_NO_LINK;
}

/*
 * The link leaving @node towards @dst that a single-path reader takes
 * (a set's first usable member), or ICFAB_MODEL_NO_LINK when there is no
 * route or no usable link.
 */
static icfab_u32 route_link(const struct icfab_mtopo *t, icfab_u32 node,
			    icfab_u32 dst)
{
	return route_choose(t, node, dst, ICFAB_NULL, ICFAB_NULL, ICFAB_NULL);
}

/*
 * The turn of a segment with remaining spray turn @turn (without
 * next-hop sets, its index plus the transfer's x->spray: the segment's
 * place in its destination's address space, in segments) of transfer @x
 * among parallel links under
 * @mode: by segment when spraying, by a hash of the transfer's key when
 * the fabric hashes flows (every segment of a transfer takes one link).
 */
static ENGINE_HOT icfab_u32 par_turn(icfab_u8 mode,
				     const struct icfab_engine_xfer *x,
				     icfab_u32 turn)
{
	if (mode == ICFAB_MODEL_MULTIPATH_SPRAY)
		return turn;
	return key_turn(x->key);
}

/*
 * The link taken at @turn among the parallel links of the route's link
 * @lid: @turn modulo their number steps round their ring from @lid. One
 * that cannot carry a segment as @lid does now (down, degraded
 * otherwise, held otherwise) gives its turn back to @lid.
 */
static ENGINE_HOT icfab_u32 par_pick(const struct icfab_mtopo *t,
				     icfab_u32 lid, icfab_u32 turn)
{
	const struct icfab_mlink *l = &t->links[lid], *o;
	icfab_u32 i, oid = lid;

	for (i = turn % l->nr_par; i; i--)
		oid = t->links[oid].par_next;
	if (oid == lid || !link_usable(t, oid))
		return lid;
	o = &t->links[oid];
	if (o->state != l->state || o->permille != l->permille ||
	    o->up_at_ps != l->up_at_ps || o->hold_fail != l->hold_fail)
		return lid;
	return oid;
}

/*
 * Links from @src to @dst, or 0 when the walk fails or loops. The links
 * of its first hops go to @p0 and @p1 (ICFAB_ENGINE_PATH of them; two
 * words, not an array, so that the submission's spec stays in
 * registers), as long as the tables name a port (a next-hop set chooses
 * per segment): *@path_len of them.
 */
_Static_assert(ICFAB_ENGINE_PATH == 2, "route_walk() keeps two links");

static ENGINE_HOT icfab_u32 route_walk(const struct icfab_mtopo *t,
				       icfab_u32 src, icfab_u32 dst,
				       icfab_u32 *p0, icfab_u32 *p1,
				       icfab_u32 *path_len)
{
	icfab_u32 node = src, hops = 0, cached = 0, lid;
	icfab_u16 entry;

	/*
	 * The hops it keeps, written out: as a loop, the test of which
	 * one to keep and the stores behind it came at every hop.
	 */
	if (node != dst) {
		entry = icfab_topo_route_entry(t, node, dst);
		if (entry < ICFAB_MODEL_SET_BASE) {
			lid = port_link(t, &t->nodes[node], entry);
			if (lid == ICFAB_MODEL_NO_LINK || !t->nr_nodes)
				return 0;
			*p0 = lid;
			cached = hops = 1;
			node = t->links[lid].dst;
			entry = node != dst ?
				icfab_topo_route_entry(t, node, dst) :
				ICFAB_MODEL_SET_BASE;
			if (entry < ICFAB_MODEL_SET_BASE) {
				lid = port_link(t, &t->nodes[node], entry);
				if (lid == ICFAB_MODEL_NO_LINK || t->nr_nodes <= 1)
					return 0;
				*p1 = lid;
				cached = hops = 2;
				node = t->links[lid].dst;
			}
		}
	}
	while (node != dst) {
		lid = route_link(t, node, dst);
		/* Validation rules out loops; bound the walk regardless. */
		if (lid == ICFAB_MODEL_NO_LINK || hops >= t->nr_nodes ||
		    hops >= HOP_MAX)
			return 0;
		node = t->links[lid].dst;
		hops++;
	}
	*path_len = cached;
	return hops;
}

/*
 * route_walk() from @src to @dst, by the route @ep (@src's) keeps when it
 * keeps the one to @dst: the walk would read the same tables, ports and
 * links' ends (they change only with icfab_engine_retopo(), which
 * forgets it), so it would find the same links, and only their presence
 * and state are left to look at. @ep keeps a route from the second
 * submission in a row to its destination on, when the walk keeps every
 * link of it: a submission to another destination than the last costs
 * one store more than the walk, not the four of the route.
 */
struct route_found {
	icfab_u32 hops, path_len, path0, path1;
};

static ENGINE_HOT struct route_found
route_walk_from(const struct icfab_mtopo *t, struct icfab_engine_ep *ep,
		icfab_u32 src, icfab_u32 dst)
{
	struct route_found r = { 0 };
	const struct icfab_mlink *l;

	if (ep->route_dst != dst) {
		ep->route_dst = dst;
		ep->route_len = 0;
		r.hops = route_walk(t, src, dst, &r.path0, &r.path1,
				    &r.path_len);
		return r;
	}
	if (ep->route_len) {
		r.path0 = ep->route_path[0];
		r.path1 = ep->route_path[1];
		r.hops = r.path_len = ep->route_len;
		l = &t->links[r.path0];
		if (l->present && l->state != ICFAB_MODEL_LINK_DOWN) {
			if (r.hops < 2)
				return r;
			l = &t->links[r.path1];
			if (l->present && l->state != ICFAB_MODEL_LINK_DOWN)
				return r;
		}
		r = (struct route_found){ 0 };
	}
	r.hops = route_walk(t, src, dst, &r.path0, &r.path1, &r.path_len);
	ep->route_len = r.hops == r.path_len ? r.hops : 0;
	ep->route_path[0] = r.path0;
	ep->route_path[1] = r.path1;
	return r;
}

/*
 * Whether routed transfer @x keeps the link for its hop @hop at @node:
 * the walk at submission reached @node there (a port, not a set: the
 * turn is not touched). The walk found x->path[@hop] usable in this
 * topology, so its id is in range and it joins real nodes until
 * icfab_engine_retopo(), which empties the cache; only its presence and
 * state may have changed since, and the caller checks them.
 */
static ENGINE_HOT int route_kept(const struct icfab_mtopo *t, icfab_u32 node,
				 icfab_u32 hop,
				 const struct icfab_engine_xfer *x)
{
	return hop < x->path_len && t->links[x->path[hop]].src == node;
}

/*
 * A held link whose owner asked for failure rather than waiting refuses
 * a segment ready before it is up. A hold already over is no hold.
 */
static int link_hold_fails(const struct icfab_mlink *l, icfab_u64 now)
{
	return l->hold_fail && l->up_at_ps > now;
}

_Static_assert(__builtin_offsetof(struct icfab_mlink, present) == 0 &&
	       __builtin_offsetof(struct icfab_mlink, state) == 1 &&
	       __builtin_offsetof(struct icfab_mlink, permille) == 2,
	       "link_ser_ps() reads present, state and permille as a word");

/*
 * Fill link @l's serialisation cache @ls, whose @head (the link's first
 * four bytes), bandwidth or efficiency changed: out of line, since it
 * runs once a link and topology change, not once a departure.
 */
static __attribute__((__noinline__)) void
link_ser_fill(const struct icfab_engine *e, const struct icfab_mlink *l,
	      struct icfab_engine_link *ls, icfab_u32 head)
{
	icfab_u64 bw = l->bandwidth;

	if (l->state == ICFAB_MODEL_LINK_DEGRADED)
		bw = icfab_mul_div_floor(bw, l->permille, 1000);
	/* Calibration: only a share of what is left carries payload. */
	if (l->eff_permille && l->eff_permille < 1000)
		bw = icfab_mul_div_floor(bw, l->eff_permille, 1000);
	/* A zero bandwidth is "never done", not a division by 0. */
	ls->cache_eff_bw = bw ? bw : 1;
	ls->cache_full_ps = icfab_serialize_ps(e->segment_size,
					       ls->cache_eff_bw);
	ls->cache_bandwidth = l->bandwidth;
	ls->cache_head = head;
	ls->cache_eff_permille = l->eff_permille;
	ls->cache_part_len = 0;
}

/*
 * ps to serialise @len bytes on link @lid at its effective bandwidth.
 * The cache holds only what the serialisation time depends on and is
 * checked against the topology at its first use in each run_until()
 * call (the topology changes only between engine calls); holds are not
 * in it.
 */
static ENGINE_HOT icfab_u64 link_ser_ps(struct icfab_engine *e, icfab_u32 lid,
					icfab_u64 len)
{
	const struct icfab_mlink *l = &e->topo->links[lid];
	struct icfab_engine_link *ls = &e->links[lid];
	icfab_u32 head;

	if (ls->cache_epoch == e->epoch)
		goto checked;
	ls->cache_epoch = e->epoch;
	/*
	 * Present, state and permille in one compare. Every link that gets
	 * here is present (its segment's route or tree checked it), so a
	 * cache_head of 0 never matches.
	 */
	__builtin_memcpy(&head, l, sizeof(head));
	if (ls->cache_head != head || ls->cache_bandwidth != l->bandwidth ||
	    ls->cache_eff_permille != l->eff_permille)
		link_ser_fill(e, l, ls, head);
checked:
	if (len == e->segment_size)
		return ls->cache_full_ps;
	if (len != ls->cache_part_len) {
		ls->cache_part_ps = icfab_serialize_ps(len, ls->cache_eff_bw);
		ls->cache_part_len = len;
	}
	return ls->cache_part_ps;
}

static ENGINE_HOT icfab_u64 seg_len(const struct icfab_engine *e,
				    const struct icfab_engine_xfer *x,
				    icfab_u32 seg)
{
	if (seg + 1 < x->nr_segs)
		return e->segment_size;
	return x->bytes - (icfab_u64)(x->nr_segs - 1) * e->segment_size;
}

/*
 * Segment @seg of transfer @id, ready at @now, crosses usable link @lid,
 * its hop @hop: the FIFO decides its departure, the link counts it and
 * the tracer sees it. Returns the time its last byte is out: no earlier
 * than @tail, when its last byte arrived at this node (cut-through: it
 * may leave before that, but cannot finish before it; store and forward:
 * @tail is @now, so this never binds). *@headp is when its first byte
 * leaves: the departure, plus the link's per-message overhead when this
 * is the transfer's first segment (calibration).
 */
static ENGINE_HOT icfab_u64 link_xmit(struct icfab_engine *e, icfab_u32 id,
				      icfab_u32 lid, icfab_u32 seg,
				      icfab_u32 hop, icfab_u64 now,
				      icfab_u64 tail, icfab_u64 *headp)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	const struct icfab_mlink *l = &e->topo->links[lid];
	struct icfab_engine_link *ls = &e->links[lid];
	icfab_u64 len = seg_len(e, x, seg);
	icfab_u64 ser = link_ser_ps(e, lid, len);
	icfab_u64 ready, depart, done;

	/*
	 * A circuit still coming up delays the segment, but nobody is
	 * ahead of it: it is ready, for the FIFO and its statistics, when
	 * the link is up.
	 */
	ready = now > l->up_at_ps ? now : l->up_at_ps;
	depart = ready > ls->next_free_ps ? ready : ls->next_free_ps;
	*headp = depart;
	if (!seg && l->msg_overhead_ps) {
		*headp = sat_add(depart, l->msg_overhead_ps);
		ser = sat_add(ser, l->msg_overhead_ps);
	}
	done = sat_add(depart, ser);
	if (tail > done)
		done = tail;
	ls->next_free_ps = done;
	ls->bytes += len;
	ls->segments++;
	ls->busy_ps = sat_add(ls->busy_ps, done - depart);
	if (depart - ready > ls->max_queued_ps)
		ls->max_queued_ps = depart - ready;
	/*
	 * The segment that held the link up to now is still on it, so its
	 * transfer is in flight and keys tell transfers apart.
	 */
	if (ls->last_key != x->key)
		x->queued_ps = sat_add(x->queued_ps, depart - ready);
	ls->last_key = x->key;
	if (e->tracer && e->tracer->xmit) {
		struct icfab_engine_xmit xm = {
			.key = x->key, .bytes = len, .ready_ps = ready,
			.depart_ps = depart, .done_ps = done, .xfer_id = id,
			.link = lid, .seg = seg, .hop = (icfab_u16)hop,
			.pad = 0,
		};

		e->tracer->xmit(e->tracer_arg, &xm);
	}
	return done;
}

/* ---- transfers ---- */

/* What a submission asks for, once checked. */
struct xfer_spec {
	icfab_u64 key, bytes, submit_ps;
	icfab_u64 nr_segs;		/* 0: completes at its start */
	icfab_u32 src, dst;
	icfab_u32 hops, nr_leaves;
	const icfab_u32 *tree;		/* NULL: routed */
	icfab_u32 tree_len;
	icfab_u32 tier_in, tier_out;	/* link ids, or ICFAB_MODEL_NO_LINK */
	icfab_u32 tier_hops;
	int status;
	icfab_u32 path_len;		/* struct icfab_engine_xfer.path */
	icfab_u32 path0, path1;
};

/*
 * A submission must sort after every event processed, or it could have
 * changed what was already decided (icfab_engine_submit_at()); its first
 * events sort with ICFAB_ENGINE_KEY_LATE (ev_key()), which its own @key
 * must leave clear.
 */
static int submit_order_err(const struct icfab_engine *e,
			    icfab_u64 submit_ps, icfab_u64 key)
{
	if (key & ICFAB_ENGINE_KEY_LATE)
		return -ICFAB_ENGINE_EINVAL;
	/* icfab_engine_submit_at() == submit_ps, but not saturated there. */
	if (submit_ps < e->now_ps ||
	    icfab_engine_sorts_before(e, submit_ps, key))
		return -ICFAB_ENGINE_ERANGE;
	return 0;
}

static icfab_u64 xfer_events_reserved(const struct icfab_engine_xfer *x)
{
	return (icfab_u64)x->nr_segs * x->nr_leaves + 1;
}

/*
 * The first event of transfer @id, (submit_ps, key, 0, 0, src): pushed,
 * or, when it sorts after that of the last transfer in its source's
 * list of submissions, left in the list to be pushed once the one
 * before it is processed (sub_next()). It cannot be the next event
 * before then, so the order is the same, and a burst of submissions
 * keeps one pending event per source, not one per transfer.
 */
static ENGINE_HOT int sub_enqueue(struct icfab_engine *e, icfab_u32 id)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	struct icfab_engine_ep *ep = &e->eps[x->src];
	const struct icfab_engine_xfer *t;

	/* One push below, not one per case: this is inlined into each submission. */
	if (e->heap_only) {
		/* Every event in the heap: no list. */
	} else if (ep->sub_tail == ICFAB_ENGINE_NO_XFER) {
		ep->sub_head = id;
		ep->sub_tail = id;
	} else {
		t = &e->xfers[ep->sub_tail];
		if (x->submit_ps > t->submit_ps ||
		    (x->submit_ps == t->submit_ps && x->key > t->key)) {
			e->xfers[ep->sub_tail].next = id;
			ep->sub_tail = id;
			e->nr_deferred++;
			if (e->nr_events + e->nr_deferred > e->max_events)
				e->max_events = e->nr_events + e->nr_deferred;
			return 0;
		}
	}
	return ev_push(e, id, x->submit_ps, 0, 0, x->src);
}

/*
 * The first event of transfer @id is being processed: if it heads its
 * source's list, the next one's goes in, and @id leaves the list.
 */
static ENGINE_HOT int sub_next(struct icfab_engine *e, icfab_u32 id)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	struct icfab_engine_ep *ep = &e->eps[x->src];
	icfab_u32 n;

	if (ep->sub_head != id)
		return 0;
	n = x->next;
	x->next = ICFAB_ENGINE_NO_XFER;
	ep->sub_head = n;
	if (n == ICFAB_ENGINE_NO_XFER) {
		ep->sub_tail = ICFAB_ENGINE_NO_XFER;
		return 0;
	}
	e->nr_deferred--;
	return ev_push(e, n, e->xfers[n].submit_ps, 0, 0, x->src);
}

/*
 * Fill slot @x from @sp. Member by member, every one of them: a compound
 * literal is zeroed first (a rep stos) and then copied, once per
 * transfer.
 */
static ENGINE_HOT void xfer_fill(struct icfab_engine_xfer *x,
				 const struct xfer_spec *sp)
{
	x->key = sp->key;
	x->bytes = sp->bytes;
	x->submit_ps = sp->submit_ps;
	x->undelivered = sp->nr_segs * sp->nr_leaves;
	x->nr_segs = (icfab_u32)sp->nr_segs;
	x->src = sp->src;
	x->dst = sp->dst;
	x->status = sp->status;
	x->hops = (icfab_u16)sp->hops;
	x->state = XFER_PENDING;
	x->tier_hops = (icfab_u8)sp->tier_hops;
	x->path_len = sp->path_len;
	x->path[0] = sp->path0;
	x->path[1] = sp->path1;
	x->tier_in = sp->tier_in;
	x->tier_out = sp->tier_out;
	x->nr_leaves = sp->nr_leaves;
	x->tree_len = sp->tree_len;
	x->tree = sp->tree;
	x->start_ps = 0;
	x->queued_ps = 0;
	x->arrive_ps = 0;
	x->dma = 0;
	x->events = 0;
	x->spray = 0;
	x->next = ICFAB_ENGINE_NO_XFER;
}

/*
 * Tell the tracer of transfer @id, just filled and queued, with the
 * @hops its spec counted (the slot keeps 16 bits of them). Out of line
 * and from the slot, not the spec: with the record built in the
 * submission, the spec's members stayed live across the fill and the
 * queueing only for it, and were spilled to the stack and reloaded on
 * every submission, traced or not.
 */
static __attribute__((__noinline__)) void
xfer_trace_submit(struct icfab_engine *e, icfab_u32 id, icfab_u32 hops)
{
	const struct icfab_engine_xfer *x = &e->xfers[id];
	struct icfab_xfer_result r = {
		.key = x->key, .bytes = x->bytes, .submit_ps = x->submit_ps,
		.start_ps = 0, .finish_ps = 0, .queued_ps = 0, .src = x->src,
		.dst = x->dst, .hops = hops, .status = x->status,
		.nr_leaves = x->nr_leaves, .pad = 0,
	};

	e->tracer->submit(e->tracer_arg, id, &r);
}

/*
 * Admit @sp, or fail with -ENOSPC and change nothing. Inlined into each
 * submission, so that the spec its caller fills is never stored: once
 * per transfer, but the WRITE of one segment is little else.
 */
static ENGINE_HOT int xfer_new(struct icfab_engine *e,
			       const struct xfer_spec *sp,
			       icfab_u32 *xfer_id)
{
	struct icfab_engine_xfer *x;
	icfab_u64 need;
	icfab_u32 id;
	int err;

	if (sp->nr_segs >= e->events_cap)
		return -ICFAB_ENGINE_ENOSPC;
	/*
	 * Under 2^32 segments times under 2^16 leaves cannot overflow, and
	 * events_reserved never exceeds events_cap.
	 */
	need = sp->nr_segs * sp->nr_leaves + 1;
	if (need > e->events_cap - e->events_reserved)
		return -ICFAB_ENGINE_ENOSPC;
	if (e->free_xfer == ICFAB_ENGINE_NO_XFER)
		return -ICFAB_ENGINE_ENOSPC;

	id = e->free_xfer;
	x = &e->xfers[id];
	e->free_xfer = x->next;
	xfer_fill(x, sp);
	e->events_reserved += need;
	e->nr_xfers++;
	/* Another partition's source: its events come here by messages. */
	if (e->part && e->part->of_node[sp->src] != e->part->self)
		err = 0;
	else
		err = sub_enqueue(e, id);
	if (err)
		return err;	/* unreachable: reserved above */
	*xfer_id = id;
	if (e->tracer && e->tracer->submit)
		xfer_trace_submit(e, id, sp->hops);
	return 0;
}

/* Whether @lid is ICFAB_MODEL_NO_LINK or a present tier port. */
static int tier_arg_ok(const struct icfab_mtopo *t, icfab_u32 lid)
{
	return lid == ICFAB_MODEL_NO_LINK ||
	       (lid < t->links_cap && t->links[lid].present &&
		icfab_mlink_is_tier(&t->links[lid]));
}

/*
 * Segments of @bytes: icfab_nr_segments() without its division for a
 * transfer of at most one segment, which most descriptors are.
 */
static ENGINE_HOT icfab_u64 nr_segs_of(icfab_u64 bytes, icfab_u32 seg_size)
{
	if (bytes <= seg_size)
		return bytes != 0;
	return icfab_nr_segments(bytes, seg_size);
}

/*
 * icfab_engine_submit_tiered()'s body. @tiers: whether either side may
 * be a tier port, a constant at each call, so that a submission of
 * plain memory (every one through icfab_engine_submit(), most through
 * the module) has none of their tests.
 */
static ENGINE_HOT int submit_routed(struct icfab_engine *e, icfab_u32 src,
				    icfab_u32 src_tier, icfab_u32 dst,
				    icfab_u32 dst_tier, icfab_u64 bytes,
				    icfab_u64 submit_ps, icfab_u64 key,
				    icfab_u32 *xfer_id, const int tiers)
{
	const struct icfab_mtopo *t = e->topo;
	struct xfer_spec sp = {
		.key = key, .bytes = bytes, .submit_ps = submit_ps,
		.src = src, .dst = dst, .nr_leaves = 1,
		.tier_in = tiers ? src_tier : ICFAB_MODEL_NO_LINK,
		.tier_out = tiers ? dst_tier : ICFAB_MODEL_NO_LINK,
		.tier_hops = tiers ? (src_tier != ICFAB_MODEL_NO_LINK) +
				     (dst_tier != ICFAB_MODEL_NO_LINK) : 0,
	};
	int err;

	/*
	 * A destination @src submitted to last (route_dst) passed its
	 * check then, and which nodes are endpoints never changes.
	 */
	if (!ep_present(e, src) ||
	    (e->eps[src].route_dst != dst && !ep_present(e, dst)) ||
	    (tiers && (!tier_arg_ok(t, src_tier) ||
		       !tier_arg_ok(t, dst_tier))))
		return -ICFAB_ENGINE_EINVAL;
	err = submit_order_err(e, submit_ps, key);
	if (err)
		return err;

	if (src != dst) {
		struct route_found r = route_walk_from(t, &e->eps[src],
						       src, dst);

		sp.hops = r.hops;
		sp.path_len = r.path_len;
		sp.path0 = r.path0;
		sp.path1 = r.path1;
		if (!sp.hops)
			sp.status = -ICFAB_ENGINE_EHOSTUNREACH;
		/* Its hops are numbered from its tier port, if any. */
		if (tiers && sp.tier_in != ICFAB_MODEL_NO_LINK)
			sp.path_len = 0;
	}
	/*
	 * Unroutable, empty and local transfers only need their start; a
	 * local one through a tier port crosses it.
	 */
	if (!sp.status && (sp.hops || sp.tier_hops)) {
		sp.hops += sp.tier_hops;
		sp.nr_segs = nr_segs_of(bytes, e->segment_size);
	}
	return xfer_new(e, &sp, xfer_id);
}

int icfab_engine_submit_tiered(struct icfab_engine *e, icfab_u32 src,
			       icfab_u32 src_tier, icfab_u32 dst,
			       icfab_u32 dst_tier, icfab_u64 bytes,
			       icfab_u64 submit_ps, icfab_u64 key,
			       icfab_u32 *xfer_id)
{
	if (src_tier == ICFAB_MODEL_NO_LINK && dst_tier == ICFAB_MODEL_NO_LINK)
		return submit_routed(e, src, src_tier, dst, dst_tier, bytes,
				     submit_ps, key, xfer_id, 0);
	return submit_routed(e, src, src_tier, dst, dst_tier, bytes,
			     submit_ps, key, xfer_id, 1);
}

int icfab_engine_submit(struct icfab_engine *e, icfab_u32 src, icfab_u32 dst,
			icfab_u64 bytes, icfab_u64 submit_ps, icfab_u64 key,
			icfab_u32 *xfer_id)
{
	return submit_routed(e, src, ICFAB_MODEL_NO_LINK, dst,
			     ICFAB_MODEL_NO_LINK, bytes, submit_ps, key,
			     xfer_id, 0);
}

void icfab_engine_set_spray_offset(struct icfab_engine *e, icfab_u32 xfer_id,
				   icfab_u64 dst_off)
{
	if (xfer_id < e->xfers_cap)
		e->xfers[xfer_id].spray =
			(icfab_u32)(dst_off / e->segment_size);
}

/* Link @i of @tree, or NULL unless it is present between real nodes. */
static const struct icfab_mlink *
tree_mlink(const struct icfab_mtopo *t, const struct icfab_engine_tree *tree,
	   icfab_u32 i)
{
	icfab_u32 lid = tree->links[i];
	const struct icfab_mlink *l;

	if (lid >= t->links_cap)
		return ICFAB_NULL;
	l = &t->links[lid];
	if (!l->present || l->src >= t->nr_nodes || l->dst >= t->nr_nodes)
		return ICFAB_NULL;
	return l;
}

static int tree_shape_ok(const struct icfab_mtopo *t, icfab_u32 src,
			 const struct icfab_engine_tree *tree)
{
	/* Depths must fit an event's hop: a deeper tree has a loop. */
	return is_endpoint(t, src) && tree && tree->links &&
	       tree->nr_links && tree->nr_links < HOP_MAX;
}

/*
 * Without scratch space (the engine is const here) each rule is a scan
 * of the links before, or all links: O(links^2), for the control path.
 * icfab_engine_submit_tree() checks the same rules in O(links).
 */
int icfab_engine_tree_check(const struct icfab_engine *e, icfab_u32 src,
			    struct icfab_engine_tree *tree)
{
	const struct icfab_mtopo *t = e->topo;
	icfab_u32 i, j, leaves = 0;

	if (!tree_shape_ok(t, src, tree))
		return -ICFAB_ENGINE_EINVAL;
	for (i = 0; i < tree->nr_links; i++) {
		const struct icfab_mlink *l = tree_mlink(t, tree, i);
		int leaves_tree, reached;

		if (!l)
			return -ICFAB_ENGINE_EINVAL;
		leaves_tree = l->src == src;
		reached = l->dst == src;
		for (j = 0; j < i; j++) {
			const struct icfab_mlink *p = &t->links[tree->links[j]];

			leaves_tree |= p->dst == l->src;
			reached |= p->dst == l->dst;
		}
		if (!leaves_tree || reached)
			return -ICFAB_ENGINE_EINVAL;
	}
	for (i = 0; i < tree->nr_links; i++) {
		icfab_u32 node = t->links[tree->links[i]].dst;

		for (j = 0; j < tree->nr_links; j++)
			if (t->links[tree->links[j]].src == node)
				break;
		if (j < tree->nr_links)
			continue;
		if (t->nodes[node].kind != ICFAB_MODEL_ENDPOINT)
			return -ICFAB_ENGINE_EINVAL;
		leaves++;
	}
	tree->nr_leaves = leaves;
	return 0;
}

/* What a checked tree looks like, for its submission. */
struct tree_info {
	icfab_u32 nr_leaves;
	icfab_u32 first_leaf;
	icfab_u32 depth;		/* links to the deepest leaf */
	int down;			/* a link on it is DOWN */
};

/*
 * icfab_engine_tree_check()'s rules in one pass, with the nodes marked
 * in eps[]: s for reached, s + 1 for reached and left by a tree link.
 */
static int tree_walk(struct icfab_engine *e, icfab_u32 src,
		     const struct icfab_engine_tree *tree,
		     struct tree_info *ti)
{
	const struct icfab_mtopo *t = e->topo;
	icfab_u32 s = stamp_take(e), i;

	*ti = (struct tree_info){ 0 };
	e->eps[src].mark = s;
	e->eps[src].depth = 0;
	for (i = 0; i < tree->nr_links; i++) {
		const struct icfab_mlink *l = tree_mlink(t, tree, i);
		struct icfab_engine_ep *from, *to;

		if (!l)
			return -ICFAB_ENGINE_EINVAL;
		from = &e->eps[l->src];
		to = &e->eps[l->dst];
		if ((from->mark != s && from->mark != s + 1) ||
		    to->mark == s || to->mark == s + 1)
			return -ICFAB_ENGINE_EINVAL;
		from->mark = s + 1;
		to->mark = s;
		to->depth = from->depth + 1;
		if (l->state == ICFAB_MODEL_LINK_DOWN)
			ti->down = 1;
	}
	for (i = 0; i < tree->nr_links; i++) {
		icfab_u32 node = t->links[tree->links[i]].dst;

		if (e->eps[node].mark != s)
			continue;
		if (t->nodes[node].kind != ICFAB_MODEL_ENDPOINT)
			return -ICFAB_ENGINE_EINVAL;
		if (!ti->nr_leaves++)
			ti->first_leaf = node;
		if (e->eps[node].depth > ti->depth)
			ti->depth = e->eps[node].depth;
	}
	return 0;
}

int icfab_engine_submit_tree(struct icfab_engine *e, icfab_u32 src,
			     const struct icfab_engine_tree *tree,
			     icfab_u64 bytes, icfab_u64 submit_ps,
			     icfab_u64 key, icfab_u32 *xfer_id)
{
	struct tree_info ti;
	struct xfer_spec sp;
	int err;

	if (!tree_shape_ok(e->topo, src, tree))
		return -ICFAB_ENGINE_EINVAL;
	/*
	 * Checked again rather than trusted: a tree that is not one could
	 * copy a segment onto a link twice and outgrow its reservation.
	 */
	err = tree_walk(e, src, tree, &ti);
	if (err)
		return err;
	err = submit_order_err(e, submit_ps, key);
	if (err)
		return err;

	sp = (struct xfer_spec){
		.key = key, .bytes = bytes, .submit_ps = submit_ps,
		.src = src, .dst = ti.first_leaf, .hops = ti.depth,
		.nr_leaves = ti.nr_leaves, .tree = tree->links,
		.tree_len = tree->nr_links, .tier_in = ICFAB_MODEL_NO_LINK,
		.tier_out = ICFAB_MODEL_NO_LINK,
	};
	if (ti.down)
		sp.status = -ICFAB_ENGINE_EHOSTUNREACH;
	else
		sp.nr_segs = icfab_nr_segments(bytes, e->segment_size);
	return xfer_new(e, &sp, xfer_id);
}

/*
 * Transfer @id is done: the observers and the callback see its result.
 * Inlined into carried_run()'s loop, which completes one transfer a
 * turn; every other caller has xfer_complete(), out of line.
 */
static ENGINE_HOT int xfer_complete_at(struct icfab_engine *e, icfab_u32 id,
				       int status, icfab_u64 finish_ps,
				       icfab_engine_complete_fn complete,
				       void *arg)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	/* Every member named, padding too: no zeroing pass first. */
	struct icfab_xfer_result r = {
		.key = x->key, .bytes = x->bytes, .submit_ps = x->submit_ps,
		.start_ps = x->start_ps, .finish_ps = finish_ps,
		.queued_ps = x->queued_ps, .src = x->src, .dst = x->dst,
		.hops = x->hops, .status = status,
		.nr_leaves = x->nr_leaves, .pad = 0,
	};

	if (e->tracer && e->tracer->complete)
		e->tracer->complete(e->tracer_arg, id, &r);
	/* Retire first, so the callback may submit into the freed slot. */
	icfab_engine_part_retire(e, id);
	return complete ? complete(arg, id, &r) : 0;
}

static __attribute__((__noinline__)) int
xfer_complete(struct icfab_engine *e, icfab_u32 id, int status,
	      icfab_u64 finish_ps, icfab_engine_complete_fn complete, void *arg)
{
	return xfer_complete_at(e, id, status, finish_ps, complete, arg);
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
		e->dma_free[x->dma] = dma_idle_since(now);
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

static int sub_wait_run(struct icfab_engine *e, struct icfab_engine_ep *ep,
			icfab_u32 src, icfab_u64 now);

/* First event of a transfer: take the idle engine that freed first. */
static int dma_acquire(struct icfab_engine *e, icfab_u32 id, icfab_u64 now)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	struct icfab_engine_ep *ep = &e->eps[x->src];
	icfab_u32 i, best = ICFAB_ENGINE_NO_XFER;

	/*
	 * Transfers wait only while every engine is busy (a release hands
	 * its engine to the first waiter), so with a waiter there is no
	 * engine to look for.
	 */
	if (ep->wait_tail == ICFAB_ENGINE_NO_XFER)
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
		/* sub_next() has pushed the next in its list of submissions. */
		if (e->has_front && ep->sub_head != ICFAB_ENGINE_NO_XFER)
			return sub_wait_run(e, ep, x->src, now);
		return 0;
	}
	x->dma = best;
	return xfer_start(e, id, now);
}

/*
 * A segment of transfer @id is lost at its hop @hop: the transfer fails
 * with @status (the first failure is the one reported), and every later
 * segment is lost when it reaches a hop, so the first hop stops
 * injecting and releases the DMA engine at once. The transfer completes
 * at its last pending event.
 */
static int seg_lost(struct icfab_engine *e, icfab_u32 id, icfab_u32 hop,
		    icfab_u64 now, int status)
{
	struct icfab_engine_xfer *x = &e->xfers[id];

	/* Other partitions could not see the status: see engine.h. */
	if (e->part)
		return part_fail(e, -ICFAB_ENGINE_EINVAL);
	if (!x->status)
		x->status = status;
	if (hop == 0)
		return ev_push(e, id, now, x->nr_segs, 0, x->src);
	return 0;
}

/*
 * A segment of transfer @id will reach a destination at @arrive. Once
 * every segment is due at every destination, the transfer's last event
 * goes in at the latest of those times.
 */
static ENGINE_HOT int seg_delivered(struct icfab_engine *e, icfab_u32 id,
				    icfab_u64 arrive)
{
	struct icfab_engine_xfer *x = &e->xfers[id];

	if (e->part && e->part->of_node[x->dst] != e->part->self)
		return part_send(e, id, arrive, arrive, 0, 0,
				 ICFAB_ENGINE_NO_XFER, 0, x->dst);
	if (arrive > x->arrive_ps)
		x->arrive_ps = arrive;
	if (--x->undelivered)
		return 0;
	/* Later than now_ps, unless saturated (see ev_key_after()). */
	if (__builtin_expect(x->arrive_ps == x->submit_ps, 0))
		return ev_push_any(e, id, x->arrive_ps, x->arrive_ps,
				   x->nr_segs, 1, x->dst, 0);
	return ev_push_arrival(e, id, x->arrive_ps);
}

/*
 * Segment @seg, out on link @l at @done, is next due at the node @l
 * reaches: whole, at done + L, or, when that node forwards cut-through,
 * head first, at head + L (its first byte left at @head), with its tail
 * there at done + L.
 */
static ENGINE_HOT int seg_forward(struct icfab_engine *e, icfab_u32 id,
				  const struct icfab_mlink *l, icfab_u32 next,
				  icfab_u64 head, icfab_u64 done,
				  icfab_u32 seg, icfab_u32 hop, icfab_u32 turn)
{
	icfab_u64 tail = sat_add(done, l->latency_ps);
	icfab_u64 at = l->cut_through ? sat_add(head, l->latency_ps) : tail;

	if (e->part && e->part->of_node[next] != e->part->self)
		return part_send(e, id, at, tail, seg, hop + 1, next, turn,
				 next);
	/*
	 * Later than the departure, and so than the submission, unless it
	 * came cut-through with no latency or saturated.
	 */
	if (__builtin_expect(at == head, 0))
		return ev_push_any(e, id, at, tail, seg, hop + 1, next, turn);
	return ev_push_tail(e, id, ev_key_after(&e->xfers[id]), at, tail,
			    seg, hop + 1, next, turn, 0);
}

/*
 * When segment @seg of @x, sprayed at the source, is ready there: once
 * the one before has left (at @head; out at @done) and the link @seg
 * takes is free.
 */
static icfab_u64 next_ready(const struct icfab_engine *e,
			    const struct icfab_engine_xfer *x, icfab_u32 seg,
			    icfab_u64 head, icfab_u64 done)
{
	const struct icfab_mtopo *t = e->topo;
	icfab_u32 turn = x->spray + seg, lid;
	icfab_u64 next;
	int spray = 0;

	lid = route_choose(t, x->src, x->dst, x, &turn, &spray);
	if (lid == ICFAB_MODEL_NO_LINK)
		return done;
	if (t->links[lid].nr_par > 1)
		lid = par_pick(t, lid, par_turn(t->links[lid].multipath, x,
						turn));
	next = e->links[lid].next_free_ps;
	return next < head ? head : next;
}

/* Tier port @lid, if it can carry a segment now; else ICFAB_MODEL_NO_LINK. */
static icfab_u32 tier_link(const struct icfab_mtopo *t, icfab_u32 lid)
{
	return link_usable(t, lid) && icfab_mlink_is_tier(&t->links[lid]) ?
	       lid : ICFAB_MODEL_NO_LINK;
}

/*
 * Segment @seg of routed transfer @id is ready at @now at @node, its hop
 * @hop, with its last byte there at @tail and its remaining spray turn
 * @turn (x->spray + @seg at the source): send it on by the route in
 * force now. @tiers: whether the transfer may cross tier ports (a
 * constant at each call, so that a plain transfer's path has none of
 * their tests).
 */
static ENGINE_HOT int seg_serve_at(struct icfab_engine *e, icfab_u32 id,
				   icfab_u32 seg, icfab_u32 hop,
				   icfab_u32 node, icfab_u64 now,
				   icfab_u64 tail, icfab_u32 turn,
				   const int tiers)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	const struct icfab_mtopo *t = e->topo;
	const struct icfab_mlink *l;
	icfab_u64 done, head, next;
	icfab_u32 lid, rlid, to;
	int err, tier = 0, spray = 0;

	if (__builtin_expect(x->status != 0, 0))
		return seg_lost(e, id, hop, now, x->status);
	if (hop == 0)
		turn = x->spray + seg;
	/*
	 * A tiered transfer reads through its source's tier port first and
	 * writes through its destination's last: 1 and 2 in @tier.
	 */
	if (tiers && hop == 0 && x->tier_in != ICFAB_MODEL_NO_LINK) {
		tier = 1;
		rlid = tier_link(t, x->tier_in);
	} else if (tiers && node == x->dst &&
		   x->tier_out != ICFAB_MODEL_NO_LINK) {
		tier = 2;
		rlid = tier_link(t, x->tier_out);
	} else {
		if (route_kept(t, node, hop, x)) {
			/* A kept hop is below the bound: no loop to catch. */
			rlid = x->path[hop];
			l = &t->links[rlid];
			if (!l->present || l->state == ICFAB_MODEL_LINK_DOWN)
				return seg_lost(e, id, hop, now,
						-ICFAB_ENGINE_EHOSTUNREACH);
			goto routed;
		}
		rlid = route_choose(t, node, x->dst, x, &turn, &spray);
	}
	/*
	 * The route broke while in flight (it was checked at submit; the
	 * hop bound catches a loop made since).
	 */
	if (rlid == ICFAB_MODEL_NO_LINK ||
	    hop >= t->nr_nodes + (tiers ? x->tier_hops : 0) || hop >= HOP_MAX)
		return seg_lost(e, id, hop, now, -ICFAB_ENGINE_EHOSTUNREACH);
	l = &t->links[rlid];
routed:
	lid = rlid;
	if (l->nr_par > 1)
		lid = par_pick(t, rlid, par_turn(l->multipath, x, turn));
	if (link_hold_fails(&t->links[lid], now))
		return seg_lost(e, id, hop, now, -ICFAB_ENGINE_ENETDOWN);

	done = link_xmit(e, id, lid, seg, hop, now, tail, &head);
	/*
	 * Self-clocking: the next segment is ready when this one is out,
	 * or, sprayed over parallel links or a next-hop set, when it has
	 * left and the link the next one takes is free (one link: the same
	 * instant).
	 */
	if (hop == 0) {
		next = done;
		if (seg + 1 < x->nr_segs && !tier &&
		    ((l->nr_par > 1 &&
		      l->multipath == ICFAB_MODEL_MULTIPATH_SPRAY) ||
		     spray))
			next = next_ready(e, x, seg + 1, head, done);
		/*
		 * Later than the departure, and so than the submission,
		 * unless sprayed (the next one's link free when this one
		 * left) or saturated.
		 */
		if (__builtin_expect(next == head, 0))
			err = ev_push_any(e, id, next, next, seg + 1, 0,
					  x->src, 0);
		else if (seg + 1 == x->nr_segs && !tier && !e->heap_only &&
			 x->undelivered == 1 &&
			 (!tiers || x->tier_out == ICFAB_MODEL_NO_LINK) &&
			 t->links[lid].dst == x->dst &&
			 sat_add(done, t->links[lid].latency_ps) == next &&
			 x->arrive_ps <= next)
			return release_lands(e, id, next);
		else
			err = ev_push_src(e, id, next, seg + 1);
		if (err)
			return err;
	}
	l = &t->links[lid];
	/* Out of the source's tier, the segment is at the source. */
	to = tier == 1 ? x->src : l->dst;
	if (tier == 2 ||
	    (to == x->dst && (!tiers || x->tier_out == ICFAB_MODEL_NO_LINK)))
		return seg_delivered(e, id, sat_add(done, l->latency_ps));
	return seg_forward(e, id, l, to, head, done, seg, hop, turn);
}

/* seg_serve_at() for a transfer through tier ports, out of line. */
static __attribute__((__noinline__)) int
seg_serve_tiered(struct icfab_engine *e, icfab_u32 id, icfab_u32 seg,
		 icfab_u32 hop, icfab_u32 node, icfab_u64 now, icfab_u64 tail,
		 icfab_u32 turn)
{
	return seg_serve_at(e, id, seg, hop, node, now, tail, turn, 1);
}

static ENGINE_HOT int seg_serve(struct icfab_engine *e, icfab_u32 id,
				icfab_u32 seg, icfab_u32 hop, icfab_u32 node,
				icfab_u64 now, icfab_u64 tail, icfab_u32 turn)
{
	if (e->xfers[id].tier_hops)
		return seg_serve_tiered(e, id, seg, hop, node, now, tail,
					turn);
	return seg_serve_at(e, id, seg, hop, node, now, tail, turn, 0);
}

/*
 * Mark the nodes the tree links leaving @node reach: s for a leaf, s + 1
 * for a node some tree link leaves in turn. Returns 0, or the status that
 * fails the transfer when one of those links cannot carry a segment now.
 */
static int tree_mark_children(struct icfab_engine *e,
			      const struct icfab_engine_xfer *x,
			      icfab_u32 node, icfab_u64 now, icfab_u32 s)
{
	const struct icfab_mtopo *t = e->topo;
	icfab_u32 i;

	for (i = 0; i < x->tree_len; i++) {
		const struct icfab_mlink *l = &t->links[x->tree[i]];

		if (l->src != node)
			continue;
		if (!link_usable(t, x->tree[i]))
			return -ICFAB_ENGINE_EHOSTUNREACH;
		if (link_hold_fails(l, now))
			return -ICFAB_ENGINE_ENETDOWN;
		e->eps[l->dst].mark = s;
	}
	/* Only the marked children can match; the bound guards the index. */
	for (i = 0; i < x->tree_len; i++) {
		const struct icfab_mlink *l = &t->links[x->tree[i]];

		if (l->src < t->nr_nodes && e->eps[l->src].mark == s)
			e->eps[l->src].mark = s + 1;
	}
	return 0;
}

/*
 * Segment @seg of tree transfer @id is ready at @now at @node, @hop links
 * from the source: copy it onto every tree link leaving @node, or onto
 * none if one of them is broken. Submission and icfab_engine_retopo()
 * keep the tree a tree of present links, so the ids index the topology.
 * At the source, the next segment is ready once this one is out on every
 * link the source feeds: one DMA read, as many ports.
 */
static int tree_serve(struct icfab_engine *e, icfab_u32 id, icfab_u32 seg,
		      icfab_u32 hop, icfab_u32 node, icfab_u64 now,
		      icfab_u64 tail)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	const struct icfab_mtopo *t = e->topo;
	icfab_u64 done, head, last_done = now;
	icfab_u32 i, s;
	int err;

	if (x->status)
		return seg_lost(e, id, hop, now, x->status);
	s = stamp_take(e);
	err = tree_mark_children(e, x, node, now, s);
	if (err)
		return seg_lost(e, id, hop, now, err);

	for (i = 0; i < x->tree_len; i++) {
		const struct icfab_mlink *l = &t->links[x->tree[i]];

		if (l->src != node)
			continue;
		done = link_xmit(e, id, x->tree[i], seg, hop, now, tail,
				 &head);
		if (done > last_done)
			last_done = done;
		if (e->eps[l->dst].mark == s)
			err = seg_delivered(e, id,
					    sat_add(done, l->latency_ps));
		else
			err = seg_forward(e, id, l, l->dst, head, done,
					  seg, hop, 0);
		if (err)
			return err;
	}
	if (hop == 0 && last_done == x->submit_ps)
		return ev_push_any(e, id, last_done, last_done, seg + 1, 0,
				   x->src, 0);
	if (hop == 0)
		return ev_push_src(e, id, last_done, seg + 1);
	return 0;
}

/*
 * xfer_start()'s body, inlined into carried_run(), which starts one
 * transfer a turn of its loop: no call, and the queue it runs through
 * keeps its state in registers from one transfer to the next. Every
 * other caller has the one copy out of line.
 */
static ENGINE_HOT int xfer_start_at(struct icfab_engine *e, icfab_u32 id,
				    icfab_u64 now)
{
	struct icfab_engine_xfer *x = &e->xfers[id];

	x->state = XFER_RUNNING;
	x->start_ps = now;
	x->queued_ps = sat_add(x->queued_ps, now - x->submit_ps);
	e->dma_free[x->dma] = DMA_BUSY;
	if (!x->nr_segs)
		return dma_release(e, id, now);
	if (x->tree)
		return tree_serve(e, id, 0, 0, x->src, now, now);
	return seg_serve(e, id, 0, 0, x->src, now, now, 0);
}

static __attribute__((__noinline__)) int
xfer_start(struct icfab_engine *e, icfab_u32 id, icfab_u64 now)
{
	return xfer_start_at(e, id, now);
}

/*
 * Event (@time_ps, @key) has been processed: keep the largest, which is
 * what a submission must sort after (a handed-over DMA engine can push
 * an event of this instant with a smaller key than the one just
 * processed).
 */
static ENGINE_HOT void ev_processed(struct icfab_engine *e, icfab_u64 time_ps,
				    icfab_u64 key)
{
	/*
	 * Events come out at nondecreasing times (none is pending before
	 * now_ps, which is no earlier than last_ps), so another time is a
	 * later one.
	 */
	if (time_ps != e->last_ps) {
		e->last_ps = time_ps;
		e->last_key = key;
		e->processed = 1;
	} else if (key > e->last_key || !e->processed) {
		e->last_key = key;
		e->processed = 1;
	}
}

/* Whether (@time_ps, @key, @seg) sorts strictly before @h in (time, key, seg). */
static ENGINE_HOT int key_seg_before(icfab_u64 time_ps, icfab_u64 key,
				     icfab_u32 seg,
				     const struct icfab_engine_evkey *h)
{
	if (time_ps != h->time_ps)
		return time_ps < h->time_ps;
	if (key != h->key)
		return key < h->key;
	return seg < h->seg;
}

/*
 * Whether an event (@time_ps, @key, @seg) would be the next one out: no
 * front, and it sorts strictly before the heads of the heap, the run
 * and the chains in (time, key, seg). A tie with one of them says no,
 * without reading bodies. Written out, as ev_next_src() is.
 */
static ENGINE_HOT int ev_next_at(const struct icfab_engine *e,
				 icfab_u64 time_ps, icfab_u64 key,
				 icfab_u32 seg)
{
	if (e->has_front)
		return 0;
	if (e->nr_heap &&
	    !key_seg_before(time_ps, key, seg, &ev_keys(e)[0]))
		return 0;
	if (e->run_lo != e->run_hi &&
	    !key_seg_before(time_ps, key, seg, &ev_keys(e)[e->run_hi - 1]))
		return 0;
	if (!chain_empty(e, 0) &&
	    !key_seg_before(time_ps, key, seg, &e->chain[0].head))
		return 0;
	return chain_empty(e, 1) ||
	       key_seg_before(time_ps, key, seg, &e->chain[1].head);
}

/* ev_next_at() of an event of the instant being processed, segment 0. */
static ENGINE_HOT int ev_next_is(const struct icfab_engine *e,
				 icfab_u64 time_ps, icfab_u64 key)
{
	return ev_next_at(e, time_ps, key, 0);
}

/*
 * Whether the release that carries transfer @id's last arrival, at
 * @time_ps (release_lands()), would be the next event the loop of
 * events processes: within the horizon of the run in progress, with
 * room in the run budget, and sorting strictly before every pending
 * event. Events left in a list of submissions, or carried by a release,
 * sort after one that is pushed, so the pushed ones are all to compare
 * with.
 */
static ENGINE_HOT int release_here_at(const struct icfab_engine *e,
				     const struct icfab_engine_xfer *x,
				     icfab_u64 time_ps)
{
	if (e->horizon_ps != ICFAB_ENGINE_NEVER && time_ps >= e->horizon_ps)
		return 0;
	if (e->run_budget && e->run_done == e->run_budget)
		return 0;
	return !e->nr_events ||
	       ev_next_at(e, time_ps, ev_key_after(x), x->nr_segs + 1);
}

/* release_here_at() out of line, for release_lands() in seg_serve_at(). */
static __attribute__((__noinline__)) int
release_here(const struct icfab_engine *e, icfab_u32 id, icfab_u64 time_ps)
{
	return release_here_at(e, &e->xfers[id], time_ps);
}

/*
 * The plain release of transfer @ev->xfer's DMA engine (segment nr_segs,
 * hop 0), which keeps other events pending. When the engine goes to a
 * waiter whose start event would be the next one processed anyway, the
 * start runs here instead: the same work, in the same place in the
 * order of events, without the event (its push, its pop, a turn of the
 * loop). The pending count it would have had comes back to where it
 * was before the release was popped, so max_events is unchanged; a run
 * budget counts it as the event it stands for. @wkey: the key of the
 * waiter's start at this instant (ev_key(): it may have been submitted
 * then), computed once for this test and release_run()'s record of it.
 * In a partition, a waiter @wx of no segments, which would finish at
 * its start, keeps its event, so that release_run() reports only as
 * the sequential engine does (a partition records completions instead).
 */
static ENGINE_HOT int release_inline(const struct icfab_engine *e,
				     const struct icfab_engine_xfer *x,
				     const struct icfab_engine_xfer *wx,
				     const struct ev *ev, icfab_u64 wkey)
{
	return x->events && !e->heap_only && (!e->part || wx->nr_segs) &&
	       (!e->run_budget || e->run_done != e->run_budget) &&
	       ev_next_is(e, ev->time_ps, wkey);
}

/* The release of release_inline()'s case: the waiter starts here. */
static ENGINE_HOT int release_run(struct icfab_engine *e, const struct ev *ev,
				  icfab_u64 wkey,
				  icfab_engine_complete_fn complete,
				  void *arg)
{
	struct icfab_engine_xfer *x = &e->xfers[ev->xfer], *wx;
	struct icfab_engine_ep *ep = &e->eps[x->src];
	icfab_u32 w = ep->wait_head;
	int err;

	wx = &e->xfers[w];
	ep->wait_head = wx->next;
	if (ep->wait_head == ICFAB_ENGINE_NO_XFER)
		ep->wait_tail = ICFAB_ENGINE_NO_XFER;
	wx->next = ICFAB_ENGINE_NO_XFER;
	wx->dma = x->dma;
	if (e->run_budget)
		e->run_done++;
	ev_processed(e, ev->time_ps, wkey);
	err = xfer_start(e, w, ev->time_ps);
	if (err)
		return err;
	if (wx->state == XFER_RUNNING && !wx->events)
		return xfer_complete(e, w, wx->status, ev->time_ps, complete,
				     arg) ? 1 : 0;
	return 0;
}

/*
 * Whether waiter @wx of source @src is a lone transfer of one segment
 * that carried_run() may start and release in place without
 * xfer_start_at(): routed, no tier port, no failure, its kept route one
 * hop to its destination over a link that carries it as is (present,
 * not down, no parallel links, no hold that fails it) and has no
 * latency, so that its last arrival lands with its DMA release, as
 * seg_serve_at() finds for it (release_lands()). *@lid and *@dst: the
 * link last found so and where it leads, or ICFAB_MODEL_NO_LINK. A
 * link's state, latency and hold do not change within a run_until()
 * call (a callback only submits: engine.h) and time only grows there,
 * so a link found so stays so for the call.
 */
static ENGINE_HOT int queue_lone(const struct icfab_engine *e,
				 const struct icfab_engine_xfer *wx,
				 icfab_u32 src, icfab_u64 now, icfab_u32 *lid,
				 icfab_u32 *dst)
{
	const struct icfab_mlink *l;

	if (wx->nr_segs != 1 || wx->tree || wx->tier_hops || wx->status ||
	    !wx->path_len)
		return 0;
	if (wx->path[0] == *lid)
		return wx->dst == *dst;
	l = &e->topo->links[wx->path[0]];
	if (l->src != src || l->dst != wx->dst || !l->present ||
	    l->state == ICFAB_MODEL_LINK_DOWN || l->nr_par > 1 ||
	    l->latency_ps || link_hold_fails(l, now))
		return 0;
	*lid = wx->path[0];
	*dst = l->dst;
	return 1;
}

/*
 * Lone transfer @id (queue_lone()), started by carried_run() and out on
 * its one link at @done (its first byte at @head): its release is not the next event, or it left at its
 * own instant (saturated), so it goes on as seg_serve_at() would go on
 * with it, by pushes.
 */
static __attribute__((__noinline__)) int
queue_pushed(struct icfab_engine *e, icfab_u32 id, icfab_u64 done,
	     icfab_u64 head)
{
	const struct icfab_engine_xfer *x = &e->xfers[id];
	int err;

	if (done != head)
		return release_lands(e, id, done);	/* carry_open is 0 */
	err = ev_push_any(e, id, done, done, 1, 0, x->src, 0);
	return err ? err : seg_delivered(e, id, done);
}

/*
 * A release that carries its transfer's last arrival (release_lands())
 * hands the DMA engine to waiter @w whose start, (@now, @wkey, segment
 * 0), sorts after that arrival: the release, the arrival (transfer @id
 * completes), then the start, here too when it is the next event after
 * whatever the completion's callback submitted, as release_run() does
 * for a plain release; else it is pushed then. While the callback runs,
 * the start is pending but not pushed: counted in nr_deferred in the
 * arrival's place, as the push before the arrival would count it, so
 * max_events is the same; a run budget counts it as the event it
 * stands for. Out of line: the loop of events is compiled around the
 * segment's event, which this would crowd.
 *
 * The waiter started here, when its own release carrying its last
 * arrival would be the next event out (release_here()), keeps it
 * (e->carried_here) and it is processed here too, as the loop of
 * events would process it: so a queue of one-segment transfers behind
 * one DMA engine runs through, each started and completed in turn,
 * without an event of its own pushed or popped. The release is counted
 * as pending while kept, as its push would count it, so max_events is
 * the same; a run budget counts it as the event it is.
 *
 * Such a waiter that is lone (queue_lone(): one segment, one hop over a
 * link with no latency, as desc_cost's WRITEs are) is started here by
 * what xfer_start_at() and seg_serve_at() do for it and nothing else,
 * and its kept release is processed at once, without the carry flags:
 * the run through a queue of them costs its departures, completions and
 * counters, and few tests a transfer.
 */
static __attribute__((__noinline__)) int
carried_run(struct icfab_engine *e, icfab_u32 id, icfab_u64 now,
	    icfab_u32 w, icfab_u64 wkey, icfab_engine_complete_fn complete,
	    void *arg)
{
	struct icfab_engine_xfer *x = &e->xfers[id];
	icfab_u32 src = x->src;
	struct icfab_engine_ep *ep = &e->eps[src];
	struct icfab_engine_part *p = e->part;
	struct icfab_engine_xfer *wx;
	struct icfab_engine_done *d;
	icfab_u32 qlid = ICFAB_MODEL_NO_LINK, qdst = ICFAB_MODEL_NO_LINK;
	icfab_u64 done, head;
	int err, ret;

	for (;;) {
		wx = &e->xfers[w];
		ret = 0;
		ep->wait_head = wx->next;
		if (ep->wait_head == ICFAB_ENGINE_NO_XFER)
			ep->wait_tail = ICFAB_ENGINE_NO_XFER;
		wx->next = ICFAB_ENGINE_NO_XFER;
		wx->dma = x->dma;
		wx->state = XFER_GRANTED;
		/*
		 * The arrival: @x retires, and may be reused by the callback;
		 * a partition records it at the release (release_lands() left
		 * nothing undelivered) as part_done() would at the release's
		 * own turn of the loop. Written out: with a second caller,
		 * part_done() is compiled out of line and the sequential loop
		 * of events 3% longer (callgrind, engine_rate -H, 64
		 * endpoints, 64 KiB).
		 */
		if (!--x->events && p) {
			if (p->nr_done >= p->done_cap)
				return part_fail(e, -ICFAB_ENGINE_ENOSPC);
			d = &p->done[p->nr_done++];
			d->time_ps = now;
			d->key = ev_key_after(x);
			d->seg = x->nr_segs + 1;
			d->hop = 0;
			d->node = src;
			d->xfer = id;
		} else if (!x->events) {
			ret = xfer_complete_at(e, id, x->status, now, complete,
					    arg) ? 1 : 0;
		}
		e->nr_deferred--;
		/* In a partition, a waiter of no segments: see release_inline(). */
		if (ret || (e->run_budget && e->run_done == e->run_budget) ||
		    (p && !wx->nr_segs) ||
		    (e->nr_events && !ev_next_is(e, now, wkey))) {
			err = ev_push(e, w, now, 0, 0, src);
			return err ? err : ret;
		}
		if (e->run_budget)
			e->run_done++;
		if (!p && queue_lone(e, wx, src, now, &qlid, &qdst)) {
			/*
			 * xfer_start_at() and seg_serve_at() for it, knowing
			 * what queue_lone() found: its DMA engine, @x's, is
			 * busy in dma_free[] already.
			 */
			wx->state = XFER_RUNNING;
			wx->start_ps = now;
			wx->queued_ps = sat_add(wx->queued_ps,
						now - wx->submit_ps);
			done = link_xmit(e, w, qlid, 0, 0, now, now, &head);
			if (__builtin_expect(done == head, 0) ||
			    !release_here_at(e, wx, done)) {
				ev_processed(e, now, wkey);
				return queue_pushed(e, w, done, head);
			}
			/*
			 * Its release, kept and processed here at once:
			 * release_lands() and the turn below in one, its
			 * arrival pending. ev_processed() of the start is
			 * left out: the release's, later (done > head >=
			 * now), overwrites all it would set, and nothing
			 * between reads it.
			 */
			wx->undelivered = 0;
			wx->arrive_ps = done;
			wx->events++;
			/* Its push and the arrival's, less the pop. */
			if (e->nr_events + e->nr_deferred + 2 > e->max_events)
				e->max_events = e->nr_events +
						e->nr_deferred + 2;
			e->nr_deferred++;
			id = w;
			x = wx;
			now = done;
			if (e->run_budget)
				e->run_done++;
			ev_processed(e, now, ev_key_after(x));
			if (now > e->now_ps)
				e->now_ps = now;
			goto next;
		}
		ev_processed(e, now, wkey);
		/* a partition records completions: no release kept there */
		e->carry_open = !p;
		err = xfer_start_at(e, w, now);
		e->carry_open = 0;
		if (err)
			return err;
		if (!e->carried_here) {
			if (wx->state == XFER_RUNNING && !wx->events)
				return xfer_complete(e, w, wx->status, now,
						     complete, arg) ? 1 : 0;
			return 0;
		}
		/*
		 * @w's release, as the loop of events would pop it and
		 * ev_process() take it: its time is after @now.
		 */
		e->carried_here = 0;
		id = w;
		x = wx;
		now = x->arrive_ps;
		if (e->run_budget)
			e->run_done++;
		ev_processed(e, now, ev_key_after(x));
		if (now > e->now_ps)
			e->now_ps = now;
		e->nr_deferred--;
		x->events--;
next:
		w = ep->wait_head;
		if (w == ICFAB_ENGINE_NO_XFER)
			break;
		wkey = ev_key(&e->xfers[w], now);
		if (wkey <= ev_key_after(x))
			break;
	}
	/* ev_process()'s way for a release carrying its arrival. */
	err = dma_release(e, id, now);
	if (!err)
		err = arrival_carried(e, id, now, w);
	if (err)
		return err;
	if (x->state == XFER_RUNNING && !x->events)
		return xfer_complete(e, id, x->status, now, complete, arg) ?
		       1 : 0;
	return 0;
}

/* Whether every pending event in the queue is later than @now. */
static ENGINE_HOT int ev_none_at(const struct icfab_engine *e, icfab_u64 now)
{
	return !e->has_front &&
	       (!e->nr_heap || ev_keys(e)[0].time_ps > now) &&
	       (e->run_lo == e->run_hi ||
		ev_keys(e)[e->run_hi - 1].time_ps > now) &&
	       (chain_empty(e, 0) || e->chain[0].head.time_ps > now) &&
	       (chain_empty(e, 1) || e->chain[1].head.time_ps > now);
}

/*
 * A transfer from @src has just joined its DMA wait list at @now, and
 * sub_next() has pushed the first event of the one behind it in its
 * list of submissions (its head now). When that event is the front, the
 * next one out, it is taken back and processed here, and so is each
 * next one of the list while it is the next event of this instant: all
 * of them wait too (the wait list is not empty), so each only records
 * its key (ev_processed(), as the loop of events would), leaves the
 * list and joins the wait list, in the same place in the order of
 * events, without its push, pop and turn of the loop. The first that
 * is not next is pushed as sub_next() would. A push and a pop leave
 * nr_events + nr_deferred where this leaves it, so max_events cannot
 * move; a run budget counts each as the event it stands for. Not with
 * heap_only (the reference the host tests compare with). Out of line,
 * from dma_acquire(): the loop of events is compiled around the
 * segment's event.
 */
static __attribute__((__noinline__)) int
sub_wait_run(struct icfab_engine *e, struct icfab_engine_ep *ep,
	     icfab_u32 src, icfab_u64 now)
{
	icfab_u32 n = ep->sub_head, m;
	struct icfab_engine_evbody *b = &ev_bodies(e)[e->front.body];
	struct icfab_engine_xfer *nx = &e->xfers[n];
	icfab_u64 key = e->front.key;
	int later;

	if (b->xfer != n || nx->state != XFER_PENDING ||
	    e->front.time_ps != now || e->heap_only ||
	    (e->run_budget && e->run_done == e->run_budget))
		return 0;
	/* The front taken back, as ev_pop() and ev_process() would. */
	e->has_front = 0;
	e->nr_events--;
	b->xfer = e->free_body;
	e->free_body = e->front.body;
	nx->events--;
	/*
	 * Nothing is pushed below until the end, so what is pending stays:
	 * when all of it is later than @now, every event of this instant
	 * is the next one.
	 */
	later = ev_none_at(e, now);
	for (;;) {
		if (e->run_budget)
			e->run_done++;
		m = nx->next;
		nx->next = ICFAB_ENGINE_NO_XFER;
		nx->state = XFER_WAITING;
		e->xfers[ep->wait_tail].next = n;
		ep->wait_tail = n;
		ep->sub_head = m;
		if (m == ICFAB_ENGINE_NO_XFER) {
			ep->sub_tail = ICFAB_ENGINE_NO_XFER;
			break;
		}
		/* As sub_next(): @m's first event leaves the list. */
		e->nr_deferred--;
		nx = &e->xfers[m];
		if (nx->submit_ps != now ||
		    (e->run_budget && e->run_done == e->run_budget) ||
		    (!later && !ev_next_is(e, now, ev_key(nx, now)))) {
			ev_processed(e, now, key);
			return ev_push(e, m, nx->submit_ps, 0, 0, src);
		}
		/* Submitted at @now: its first event's key is LATE. */
		key = ev_key(nx, now);
		n = m;
	}
	/*
	 * The keys of a list rise at an instant, so the last one processed
	 * here is what ev_processed() of each in turn would have left.
	 */
	ev_processed(e, now, key);
	return 0;
}

/* <0 on an engine bug, 1 when the completion callback asked to stop. */
static int ev_process(struct icfab_engine *e, const struct ev *ev,
		      icfab_engine_complete_fn complete, void *arg)
{
	struct icfab_engine_xfer *x = &e->xfers[ev->xfer];
	int err;

	x->events--;
	/* The usual event, tested first: a segment of a routed transfer. */
	if (x->state == XFER_RUNNING && ev->seg < x->nr_segs && !x->tree) {
		err = seg_serve(e, ev->xfer, ev->seg, ev->hop, ev->node,
				ev->time_ps, ev->tail_ps, ev->turn);
		if (err)
			return err;
		if (x->events)
			return 0;
		goto done;
	}
	switch (x->state) {
	case XFER_PENDING:
		err = sub_next(e, ev->xfer);
		if (!err)
			err = dma_acquire(e, ev->xfer, ev->time_ps);
		break;
	case XFER_GRANTED:
		err = xfer_start(e, ev->xfer, ev->time_ps);
		break;
	case XFER_RUNNING:
		/*
		 * The transfer's own: hop 1 is the last arrival; segment
		 * nr_segs + 1 a release that carries it (release_lands()).
		 */
		if (ev->seg >= x->nr_segs) {
			icfab_u32 w = e->eps[x->src].wait_head;

			if (w != ICFAB_ENGINE_NO_XFER && !ev->hop) {
				icfab_u64 wkey = ev_key(&e->xfers[w],
							ev->time_ps);

				if (ev->seg == x->nr_segs) {
					if (release_inline(e, x, &e->xfers[w],
							   ev, wkey))
						return release_run(e, ev, wkey,
								   complete,
								   arg);
				} else if (wkey > ev_key_after(x)) {
					return carried_run(e, ev->xfer,
							   ev->time_ps, w,
							   wkey, complete,
							   arg);
				}
			}

			err = ev->hop ? 0 :
			      dma_release(e, ev->xfer, ev->time_ps);
			if (!err && ev->seg > x->nr_segs)
				err = arrival_carried(e, ev->xfer, ev->time_ps,
						      w);
		}
		else
			err = tree_serve(e, ev->xfer, ev->seg, ev->hop,
					 ev->node, ev->time_ps, ev->tail_ps);
		break;
	default:
		return -ICFAB_ENGINE_EINVAL;	/* event for a free slot */
	}
	if (err)
		return err;
	if (x->state == XFER_RUNNING && !x->events) {
done:
		/*
		 * A partition sees only its own events: the transfer is
		 * done where its last arrival is, once every segment has
		 * been delivered (no partition loses one: see engine.h).
		 */
		if (e->part)
			return x->undelivered ? 0 : part_done(e, ev);
		return xfer_complete(e, ev->xfer, x->status, ev->time_ps,
				     complete, arg) ? 1 : 0;
	}
	return 0;
}

int icfab_engine_run_until(struct icfab_engine *e, icfab_u64 horizon_ps,
			   icfab_engine_complete_fn complete, void *arg)
{
	struct ev ev;
	int ret;

	/* The topology may have changed since the last call. */
	e->epoch++;
	e->horizon_ps = horizon_ps;
	while (e->nr_events) {
		/* Where the next is, decided once for the peek and the pop. */
		int src = ev_next_src(e);

		if (horizon_ps != ICFAB_ENGINE_NEVER &&
		    ev_head(e, src)->time_ps >= horizon_ps)
			break;
		if (e->run_budget && e->run_done++ == e->run_budget) {
			e->run_done = 0;
			return ICFAB_ENGINE_YIELD;
		}
		ev_pop(e, src, &ev);
		ev_processed(e, ev.time_ps, ev.key);
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

/* Whether every link of tree transfer @x joins the same nodes in @to. */
static int tree_kept(const struct icfab_mtopo *from,
		     const struct icfab_mtopo *to,
		     const struct icfab_engine_xfer *x)
{
	icfab_u32 i;

	for (i = 0; i < x->tree_len; i++) {
		const struct icfab_mlink *a = &from->links[x->tree[i]];
		const struct icfab_mlink *b = &to->links[x->tree[i]];

		if (!b->present || b->src != a->src || b->dst != a->dst)
			return 0;
	}
	return 1;
}

static int topo_same_shape(const struct icfab_mtopo *a,
			   const struct icfab_mtopo *b)
{
	icfab_u32 i;

	if (a->nodes_cap != b->nodes_cap || a->links_cap != b->links_cap ||
	    a->nr_nodes != b->nr_nodes)
		return 0;
	for (i = 0; i < a->nodes_cap; i++) {
		const struct icfab_mnode *na = &a->nodes[i], *nb = &b->nodes[i];

		if (na->present != nb->present)
			return 0;
		if (!na->present)
			continue;
		if (na->kind != nb->kind)
			return 0;
		if (na->kind == ICFAB_MODEL_ENDPOINT &&
		    node_dma_engines(na) != node_dma_engines(nb))
			return 0;
	}
	return 1;
}

/*
 * Routed segments need nothing: they look their next link up when they
 * reach a node. A tree is the caller's list of link ids, checked once at
 * submission; a link that is gone or now joins other nodes would break
 * that check (a node reached twice, a segment carried twice), so such a
 * tree fails here, as a broken route does, before any segment uses it.
 * The old topology is read here, so it must outlive the call.
 */
int icfab_engine_retopo(struct icfab_engine *e,
			const struct icfab_mtopo *topo)
{
	icfab_u32 i;

	if (!topo_same_shape(e->topo, topo))
		return -ICFAB_ENGINE_EINVAL;

	for (i = 0; i < e->xfers_cap; i++) {
		struct icfab_engine_xfer *x = &e->xfers[i];

		/* The routes may be others: look them up from now on. */
		x->path_len = 0;
		if (x->state == XFER_FREE || !x->tree || x->status ||
		    !x->undelivered)
			continue;
		if (!tree_kept(e->topo, topo, x))
			x->status = -ICFAB_ENGINE_EHOSTUNREACH;
	}
	e->topo = topo;
	/* The cache compares values, but say plainly that it is stale. */
	for (i = 0; i < topo->links_cap; i++)
		e->links[i].cache_head = 0;
	/* So are the routes the sources keep. */
	for (i = 0; i < topo->nodes_cap; i++)
		e->eps[i].route_dst = ICFAB_ENGINE_NO_NODE;
	return 0;
}

int icfab_engine_grow(struct icfab_engine *e,
		      struct icfab_engine_xfer *xfers, icfab_u32 xfers_cap,
		      struct icfab_engine_event *events, icfab_u32 events_cap)
{
	struct icfab_engine_evkey *keys = ev_keys_of(events);
	struct icfab_engine_evbody *bodies = ev_bodies_of(events, events_cap);
	struct icfab_engine_evkey *old_keys = ev_keys(e);
	struct icfab_engine_evbody *old_bodies = ev_bodies(e);
	icfab_u32 i, run_len = e->run_hi - e->run_lo, shift;

	if (xfers_cap < e->xfers_cap || events_cap < e->events_cap ||
	    xfers_cap == ICFAB_ENGINE_NO_XFER)
		return -ICFAB_ENGINE_EINVAL;

	if (xfers != e->xfers)
		for (i = 0; i < e->xfers_cap; i++)
			xfers[i] = e->xfers[i];
	/* The new slots go on the free list ahead of the old free ones. */
	for (i = e->xfers_cap; i < xfers_cap; i++) {
		xfers[i] = (struct icfab_engine_xfer){ 0 };
		xfers[i].next = i + 1 < xfers_cap ? i + 1 : e->free_xfer;
	}
	if (xfers_cap > e->xfers_cap)
		e->free_xfer = e->xfers_cap;
	e->xfers = xfers;
	e->xfers_cap = xfers_cap;

	/*
	 * Bodies first: grown in place, they move up, over nothing that
	 * is still to be read but themselves, so from the highest down.
	 * Then the heap stays at the bottom of keys[] and the run goes to
	 * its top, also from its highest entry down.
	 */
	if (bodies != old_bodies)
		for (i = e->bodies_hi; i-- > 0;)
			bodies[i] = old_bodies[i];
	if (keys != old_keys)
		for (i = 0; i < e->nr_heap; i++)
			keys[i] = old_keys[i];
	shift = events_cap - e->run_hi;
	for (i = e->run_hi; i-- > e->run_lo;)
		keys[i + shift] = old_keys[i];
	e->events = events;
	e->events_cap = events_cap;
	e->run_hi = events_cap;
	e->run_lo = events_cap - run_len;
	return 0;
}

icfab_u64 icfab_engine_room_needed(const struct icfab_engine *e,
				   icfab_u64 events, int *need_xfer)
{
	icfab_u64 cap = sat_add(e->events_reserved, events);

	*need_xfer = e->free_xfer == ICFAB_ENGINE_NO_XFER;
	return cap <= e->events_cap ? 0 : cap;
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
	return e->nr_events ? ev_peek(e)->time_ps : ICFAB_ENGINE_NEVER;
}

void icfab_engine_cancel_all(struct icfab_engine *e,
			     icfab_engine_complete_fn complete, void *arg)
{
	icfab_u32 i;

	/* Drop the events and wait lists first: nothing may refer to a slot. */
	ev_queue_reset(e);
	for (i = 0; i < e->topo->nodes_cap; i++) {
		struct icfab_engine_ep *ep = &e->eps[i];
		icfab_u32 d;

		ep->wait_head = ep->wait_tail = ICFAB_ENGINE_NO_XFER;
		ep->sub_head = ep->sub_tail = ICFAB_ENGINE_NO_XFER;
		for (d = ep->first_dma; d < ep->first_dma + ep->nr_dma; d++)
			if (e->dma_free[d] == DMA_BUSY)
				e->dma_free[d] = dma_idle_since(e->now_ps);
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

void icfab_engine_set_part(struct icfab_engine *e,
			   struct icfab_engine_part *p)
{
	e->part = p;
}

/*
 * A message for a transfer this partition has not seen run makes it
 * run here (its source, elsewhere, has started it). Everything it
 * carries is at or after the window's end, which @e has reached.
 *
 * The segment's event goes in as seg_forward() would have pushed it
 * had the next node been this partition's: by ev_push_tail() in line,
 * not by the out-of-line ev_push_any() with its eight arguments. Its
 * key is compared with the submission all the same (a message crossed a
 * link of the lookahead's latency at least, so it is later than that
 * instant, but the import does not rely on a caller's lookahead).
 */
int icfab_engine_part_import(struct icfab_engine *e,
			     const struct icfab_engine_part *from)
{
	const struct icfab_engine_msg *m = from->out;
	const struct icfab_engine_msg *end = m + from->nr_out;
	icfab_u16 self = e->part->self;
	icfab_u64 now = e->now_ps;
	int err;

	for (; m < end; m++) {
		struct icfab_engine_xfer *x;

		/* Slots are scattered: ask for one a few messages ahead. */
		if (end - m > 8 && m[8].xfer < e->xfers_cap)
			__builtin_prefetch(&e->xfers[m[8].xfer].state, 1);
		if (m->to != self)
			continue;
		if (m->xfer >= e->xfers_cap)
			return -ICFAB_ENGINE_EINVAL;
		x = &e->xfers[m->xfer];
		if (x->state == XFER_FREE)
			return -ICFAB_ENGINE_EINVAL;
		if (m->time_ps < now)
			return -ICFAB_ENGINE_ERANGE;
		if (x->state == XFER_PENDING)
			x->state = XFER_RUNNING;
		if (m->node == ICFAB_ENGINE_NO_XFER)
			err = seg_delivered(e, m->xfer, m->time_ps);
		else
			err = ev_push_tail(e, m->xfer, ev_key(x, m->time_ps),
					   m->time_ps, m->tail_ps, m->seg,
					   m->hop, m->node, m->turn, 0);
		if (err)
			return err;
	}
	return 0;
}

int icfab_engine_part_route(const struct icfab_engine *e, icfab_u32 src,
			    icfab_u32 dst, icfab_u64 bytes,
			    struct icfab_engine_route *r)
{
	if (!ep_present(e, src) || !ep_present(e, dst))
		return -ICFAB_ENGINE_EINVAL;
	/* submit_routed() without tier ports. */
	r->hops = 0;
	r->status = 0;
	r->path_len = 0;
	r->path0 = 0;
	r->path1 = 0;
	r->nr_segs = 0;
	if (src != dst) {
		r->hops = route_walk(e->topo, src, dst, &r->path0, &r->path1,
				     &r->path_len);
		if (!r->hops)
			r->status = -ICFAB_ENGINE_EHOSTUNREACH;
	}
	if (!r->status && r->hops)
		r->nr_segs = nr_segs_of(bytes, e->segment_size);
	r->need = r->nr_segs + 1;
	return 0;
}

/* Slot @x of a transfer routed as @r, as icfab_engine_submit() fills it. */
static ENGINE_HOT void part_fill(struct icfab_engine_xfer *x, icfab_u32 src,
				 icfab_u32 dst, icfab_u64 bytes,
				 icfab_u64 submit_ps, icfab_u64 key,
				 const struct icfab_engine_route *r)
{
	struct xfer_spec sp = {
		.key = key, .bytes = bytes, .submit_ps = submit_ps,
		.nr_segs = r->nr_segs, .src = src, .dst = dst,
		.hops = r->hops, .nr_leaves = 1, .tree = ICFAB_NULL,
		.tier_in = ICFAB_MODEL_NO_LINK,
		.tier_out = ICFAB_MODEL_NO_LINK, .status = r->status,
		.path_len = r->path_len, .path0 = r->path0, .path1 = r->path1,
	};

	xfer_fill(x, &sp);
}

int icfab_engine_part_adopt(struct icfab_engine *e, icfab_u32 id,
			    icfab_u32 src, icfab_u32 dst, icfab_u64 bytes,
			    icfab_u64 submit_ps, icfab_u64 key,
			    const struct icfab_engine_route *r)
{
	part_fill(&e->xfers[id], src, dst, bytes, submit_ps, key, r);
	/* Another partition's source: its events come here by messages. */
	if (e->part->of_node[src] != e->part->self)
		return 0;
	return sub_enqueue(e, id);
}

void icfab_engine_part_slot(struct icfab_engine_xfer *slot, icfab_u32 src,
			    icfab_u32 dst, icfab_u64 bytes,
			    icfab_u64 submit_ps, icfab_u64 key,
			    const struct icfab_engine_route *r)
{
	part_fill(slot, src, dst, bytes, submit_ps, key, r);
}

/*
 * A copy of 128 bytes and a test, where icfab_engine_part_adopt() builds
 * the slot member by member from a spec built from its arguments: every
 * partition takes every transfer, so the building is done once, by the
 * thread that routed it.
 */
int icfab_engine_part_adopt_slots(struct icfab_engine *e, const icfab_u32 *ids,
				  const struct icfab_engine_xfer *slots,
				  icfab_u64 n)
{
	const icfab_u16 *of_node = e->part->of_node;
	icfab_u16 self = e->part->self;
	icfab_u64 i;
	int err;

	for (i = 0; i < n; i++) {
		icfab_u32 id = ids[i];

		/* Slots are scattered: ask for one a few ids ahead. */
		if (i + 8 < n) {
			const char *a = (const char *)&e->xfers[ids[i + 8]];

			__builtin_prefetch(a, 1);
			__builtin_prefetch(a + sizeof(*slots) - 1, 1);
		}
		e->xfers[id] = slots[i];
		/* Another partition's source: its events come here by messages. */
		if (of_node[slots[i].src] != self)
			continue;
		err = sub_enqueue(e, id);
		if (err)
			return err;
	}
	return 0;
}

/* Also the sequential engine's retirement of a completed transfer. */
void icfab_engine_part_retire(struct icfab_engine *e, icfab_u32 id)
{
	struct icfab_engine_xfer *x = &e->xfers[id];

	e->events_reserved -= xfer_events_reserved(x);
	e->nr_xfers--;
	x->state = XFER_FREE;
	x->tree = ICFAB_NULL;
	x->next = e->free_xfer;
	e->free_xfer = id;
}

/*
 * ---- handing a step to the parallel engine and back (engine.h) ----
 */

int icfab_engine_unsubmit(struct icfab_engine *e, const icfab_u32 *ids,
			  icfab_u32 n)
{
	/*
	 * A spray offset where nothing sprays is never read. Whether
	 * anything does is a walk over every link and set: asked only of a
	 * transfer with an offset, once a call (-1: not asked yet).
	 */
	int sprays = -1;
	icfab_u32 i;

	if (n != e->nr_xfers || e->part)
		return -ICFAB_ENGINE_EINVAL;
	/*
	 * Every transfer held is one of @ids (as many, each in flight)
	 * and none has had its first event processed: nothing else in
	 * the engine has changed since the first was submitted.
	 */
	for (i = 0; i < n; i++) {
		const struct icfab_engine_xfer *x;

		if (ids[i] >= e->xfers_cap)
			return -ICFAB_ENGINE_EINVAL;
		x = &e->xfers[ids[i]];
		if (x->state != XFER_PENDING || x->tree ||
		    x->tier_in != ICFAB_MODEL_NO_LINK ||
		    x->tier_out != ICFAB_MODEL_NO_LINK)
			return -ICFAB_ENGINE_EINVAL;
		if (x->spray && sprays < 0)
			sprays = icfab_topo_sprays(e->topo);
		if (x->spray && sprays)
			return -ICFAB_ENGINE_EINVAL;
	}
	/* A repeated id would leave another transfer held: refuse. */
	for (i = 0; i < n; i++) {
		struct icfab_engine_xfer *x = &e->xfers[ids[i]];

		if (x->state == XFER_FREE) {
			while (i-- > 0)
				e->xfers[ids[i]].state = XFER_PENDING;
			return -ICFAB_ENGINE_EINVAL;
		}
		x->state = XFER_FREE;
	}
	ev_queue_reset(e);
	for (i = 0; i < e->topo->nodes_cap; i++) {
		struct icfab_engine_ep *ep = &e->eps[i];

		ep->wait_head = ep->wait_tail = ICFAB_ENGINE_NO_XFER;
		ep->sub_head = ep->sub_tail = ICFAB_ENGINE_NO_XFER;
	}
	/* Back onto the free list last first: it is a stack. */
	for (i = n; i-- > 0;) {
		struct icfab_engine_xfer *x = &e->xfers[ids[i]];

		x->state = XFER_FREE;
		x->tree = ICFAB_NULL;
		x->next = e->free_xfer;
		e->free_xfer = ids[i];
	}
	e->nr_xfers = 0;
	e->events_reserved = 0;
	return 0;
}

int icfab_engine_set_free_list(struct icfab_engine *e, icfab_u32 head,
			       const icfab_u32 *next)
{
	icfab_u32 x, n = 0;

	if (e->nr_xfers || e->nr_events || e->nr_deferred)
		return -ICFAB_ENGINE_EINVAL;
	/* Every slot once, and nothing else. */
	for (x = head; x != ICFAB_ENGINE_NO_XFER; x = next[x])
		if (x >= e->xfers_cap || ++n > e->xfers_cap)
			return -ICFAB_ENGINE_EINVAL;
	if (n != e->xfers_cap)
		return -ICFAB_ENGINE_EINVAL;
	for (x = head; x != ICFAB_ENGINE_NO_XFER; x = next[x])
		e->xfers[x].next = next[x];
	e->free_xfer = head;
	return 0;
}
