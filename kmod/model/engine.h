/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfab fabric model: the timing engine.
 *
 * The engine times transfers over a validated topology by the normative
 * model of docs/TIMING.md: segments cross the links of their route as FIFO
 * servers, store and forward, self-clocked at injection, with DMA engines
 * as servers at the source. It is a discrete-event simulation driven by
 * its caller: transfers are submitted with a fabric time and a stable key,
 * and run_until() processes events in a fixed total order up to a horizon,
 * reporting completions as it reaches them.
 *
 * Determinism: the results are a function of the set of submitted
 * transfers only, not of how submissions and run_until() calls are
 * interleaved, provided every submission sorts after every event already
 * processed (see icfab_engine_submit()). Keys should be unique among
 * transfers in flight; duplicates are ordered by transfer id, which
 * depends on the call pattern.
 *
 * A transfer's events at the instant it was submitted sort after every
 * other event of that instant but those of transfers submitted at it too
 * (ICFAB_ENGINE_KEY_LATE): what is in flight goes first. So a submission
 * at the instant of the last processed event, which a caller makes when
 * a completion there woke it, sorts after what was processed whatever
 * its key, and lands in the same place in the order whether the engine
 * had processed none, some or all of that instant's events in flight.
 *
 * Like the rest of the model it neither allocates nor locks: the caller
 * provides every array (struct icfab_engine_storage) and serialises calls.
 *
 * Capacity: every transfer reserves, at submission, one event per segment
 * plus one (icfab_engine_events_needed()). That is the real worst case:
 * under contention a transfer's segments can all be injected and still be
 * queued downstream (a fast injection link feeding a slower or shared
 * bottleneck), and each queued segment needs its own pending event to be
 * served in FIFO order. So the memory a transfer costs is one
 * struct icfab_engine_xfer plus (segments + 1) struct icfab_engine_event
 * (48 bytes each). A submission that does not fit fails with -ENOSPC and
 * changes nothing; nothing fails for lack of space while running. The
 * caller may then give the engine more room (icfab_engine_grow()) and
 * submit again: storage costs memory, never emulated time.
 *
 * A tree transfer (icfab_engine_submit_tree()) reserves one event per
 * segment per leaf, plus one: a segment's pending events sit at tree
 * nodes none of which is an ancestor of another (an event is consumed
 * before its node's children get theirs, and leaves get none), and a tree
 * has no more such nodes than leaves. A path is the one-leaf case, so a
 * circuit path costs what a routed transfer does.
 */
#ifndef _ICFAB_MODEL_ENGINE_H
#define _ICFAB_MODEL_ENGINE_H

#include "model.h"
#include "topo.h"

/* errno values, positive here, returned negated as in the kernel. */
#define ICFAB_ENGINE_EINVAL		22
#define ICFAB_ENGINE_ENOSPC		28
#define ICFAB_ENGINE_ERANGE		34
#define ICFAB_ENGINE_ENETDOWN		100
#define ICFAB_ENGINE_EHOSTUNREACH	113
#define ICFAB_ENGINE_ECANCELED		125

/*
 * Bit 63 of the key an event is ordered by: set on a transfer's events at
 * its submission instant (see above). Submitted keys leave it clear.
 */
#define ICFAB_ENGINE_KEY_LATE		(1ULL << 63)

/* A time that is never reached; also "no horizon" for run_until(). */
#define ICFAB_ENGINE_NEVER		(~0ULL)

#define ICFAB_ENGINE_NO_XFER		0xffffffffU
/* No node: struct icfab_engine_ep.route_dst when it keeps no route. */
#define ICFAB_ENGINE_NO_NODE		0xffffffffU

/* What a completion reports for one transfer. */
struct icfab_xfer_result {
	icfab_u64 key;			/* as submitted */
	icfab_u64 bytes;
	icfab_u64 submit_ps;		/* ps */
	icfab_u64 start_ps;		/* ps, DMA engine acquired */
	icfab_u64 finish_ps;		/* ps, last segment arrived */
	/*
	 * ps: time spent behind other traffic. The wait for a DMA engine
	 * plus, over every segment and hop, departure - ready when the
	 * segment waited for another transfer's segment. Waiting for its
	 * own (a short last segment catching up with the one before it) is
	 * not contention and is not counted. Summed over segments, so a long
	 * transfer can queue for longer than it took.
	 */
	icfab_u64 queued_ps;
	icfab_u32 src, dst;		/* node ids; a tree's first leaf */
	/* links on the route (a tree: to its deepest leaf), or 0 */
	icfab_u32 hops;
	/* 0, -EHOSTUNREACH, -ENETDOWN (a held link, hold_fail), -ECANCELED */
	int status;
	icfab_u32 nr_leaves;		/* a tree's destinations, else 1 */
	icfab_u32 pad;
};

/* Per link: the FIFO server's state and its statistics. */
struct icfab_engine_link {
	icfab_u64 next_free_ps;		/* ps */
	icfab_u64 bytes;		/* bytes carried */
	icfab_u64 segments;		/* segments carried */
	icfab_u64 busy_ps;		/* ps, sum of serialisation times */
	/*
	 * ps: the longest any one segment waited at this link, departure -
	 * ready, whoever it waited behind (its own transfer included).
	 */
	icfab_u64 max_queued_ps;
	icfab_u64 last_key;		/* of the last segment to depart */
	/*
	 * Serialisation time of a full segment at the link's effective
	 * bandwidth, so that the common case costs no division. Valid while
	 * bandwidth, state, permille and efficiency are what they were when
	 * computed.
	 */
	icfab_u64 cache_bandwidth;	/* bytes/s, as in the topology */
	icfab_u64 cache_eff_bw;		/* bytes/s, of payload, degraded */
	icfab_u64 cache_full_ps;	/* ps */
	/*
	 * The last shorter segment's length and time at cache_eff_bw:
	 * transfers of one size end in segments of one size, and small
	 * transfers are nothing else. A length of 0 is none.
	 */
	icfab_u64 cache_part_len;	/* bytes */
	icfab_u64 cache_part_ps;	/* ps */
	/*
	 * The link's first four bytes (present, state, permille) as they
	 * were, compared as one word; 0 (not present): not computed.
	 */
	icfab_u32 cache_head;
	icfab_u32 cache_eff_permille;
	/*
	 * The icfab_engine.epoch (a run_until() call) in which the cache
	 * was last checked against the topology: the topology changes only
	 * between engine calls, so one check a call is enough.
	 */
	icfab_u64 cache_epoch;
};

/*
 * Links of a transfer's route it keeps (struct icfab_engine_xfer.path):
 * an endpoint's injection link and the next, the whole route through
 * one switch; 128 bytes a transfer with them.
 */
#define ICFAB_ENGINE_PATH		2

/* Per node: its DMA engines and the transfers waiting for one. */
struct icfab_engine_ep {
	icfab_u32 first_dma;		/* index into dma_free[] */
	icfab_u32 nr_dma;		/* 0 for switches */
	icfab_u32 wait_head, wait_tail;	/* xfer ids, FIFO */
	/*
	 * Transfers submitted from this node whose first events would
	 * follow one another in the order of events, (time, key) rising:
	 * only the head's is pending; the next one's is pushed when it is
	 * processed (see sub_enqueue()). xfer ids, linked by next.
	 */
	icfab_u32 sub_head, sub_tail;
	/*
	 * Scratch for walking a tree without allocating: meaningful only
	 * while @mark is one of the two stamps the current walk took from
	 * icfab_engine.mark.
	 */
	icfab_u32 mark;
	icfab_u32 depth;		/* links from the tree's source */
	/*
	 * The route of the last routed submission from this node whose
	 * walk kept every link (struct icfab_engine_xfer.path), for the
	 * next one to the same destination: @route_dst
	 * (ICFAB_ENGINE_NO_NODE: none), its @route_len links, @route_path.
	 * What the walk read to find them changes only with
	 * icfab_engine_retopo(), which forgets it, but the links' presence
	 * and state, which are checked at every use.
	 */
	icfab_u32 route_dst;
	icfab_u32 route_len;
	icfab_u32 route_path[ICFAB_ENGINE_PATH];	/* link ids */
	/* To 64 bytes: eps[] is indexed by a shift, as at 32 before. */
	icfab_u32 pad[4];
};

/* Engine-private; the caller only provides the storage. */
struct icfab_engine_xfer {
	/* What a submission fills from its arguments and its walk first. */
	icfab_u64 key;
	icfab_u64 bytes;
	icfab_u64 submit_ps;		/* ps */
	/*
	 * (segment, leaf) arrivals not decided yet, and the latest decided
	 * (@arrive_ps). Arrivals get no event of their own: the one that
	 * brings @undelivered to zero schedules a single event at
	 * @arrive_ps, so segments that overtake one another (a route or
	 * latency changed under them) still complete the transfer at its
	 * true last arrival.
	 */
	icfab_u64 undelivered;
	icfab_u32 nr_segs;
	icfab_u32 src, dst;
	int status;
	icfab_u16 hops;
	icfab_u8 state;
	icfab_u8 tier_hops;		/* tier ports crossed: 0, 1 or 2 */
	/*
	 * The route cached (a plain routed transfer): path[h] is the link
	 * the routing tables name at its hop h < path_len, as the walk at
	 * submission found it, up to its first next-hop set. The tables
	 * change only with icfab_engine_retopo(), which empties every
	 * transfer's cache; a link's state is checked at every use.
	 */
	icfab_u32 path_len;
	icfab_u32 path[ICFAB_ENGINE_PATH];	/* link ids */
	/*
	 * The rest, constants for a routed submission, together so that
	 * they are written by few wide stores.
	 *
	 * The tier ports a routed transfer reads through before its route
	 * and writes through after it (icfab_engine_submit_tiered()), or
	 * ICFAB_MODEL_NO_LINK.
	 */
	icfab_u32 tier_in, tier_out;
	icfab_u32 nr_leaves;		/* 1 unless a tree */
	icfab_u32 tree_len;		/* links in tree[] */
	const icfab_u32 *tree;		/* the caller's link ids, or NULL */
	icfab_u64 start_ps;		/* ps */
	icfab_u64 queued_ps;		/* ps */
	icfab_u64 arrive_ps;		/* ps */
	icfab_u32 dma;			/* dma_free[] index held */
	icfab_u32 events;		/* pending events */
	/*
	 * The spray turn of segment 0 (segment j's is @spray + j, mod
	 * 2^32): its destination offset over the segment size
	 * (icfab_engine_set_spray_offset()), 0 unless set.
	 */
	icfab_u32 spray;
	icfab_u32 next;			/* free list or DMA wait list */
};

/*
 * One pending event, ordered by (time, key, seg, hop, node, xfer), its key
 * its transfer's with ICFAB_ENGINE_KEY_LATE at the submission instant. A
 * segment event means "segment @seg is ready at @node, @hop links from
 * the source, to leave by the route's link (a tree: by every tree link
 * leaving @node)". A tree reaches each node once, so @node tells its
 * events apart where the tree index of a link would: no wider event.
 * @seg == nr_segs is the transfer's own: at hop 0 the release of the DMA
 * engine, at hop 1 the last arrival; @seg == nr_segs + 1 (hop 0) a
 * release that carries the last arrival of the same instant.
 *
 * An event is kept in two parts: what orders it but for the rarest
 * ties, 24 bytes, in the structure that orders events, and the rest, its
 * body, apart. Moving an event in the heap moves 24 bytes, and comparing
 * two reads their bodies only when they tie in (time, key, seg), which
 * only a tree's copies of a segment and a transfer's own two events do.
 */
struct icfab_engine_evkey {
	icfab_u64 time_ps;		/* ps */
	icfab_u64 key;			/* the transfer's, maybe LATE */
	icfab_u32 seg;
	icfab_u32 body;			/* index into the bodies */
};

struct icfab_engine_evbody {
	/*
	 * ps: when the segment's last byte is at @node; later than the
	 * event's time only when it came cut-through (its head is there
	 * at that time).
	 */
	icfab_u64 tail_ps;
	icfab_u32 xfer;			/* a free body: the next free one */
	icfab_u32 node;
	icfab_u16 hop;
	icfab_u16 pad;
	/*
	 * A segment's remaining spray turn: its index at the source,
	 * divided by the size of each sprayed next-hop set it crossed
	 * (docs/TIMING.md, "Equal-cost next hops").
	 */
	icfab_u32 turn;
};

/*
 * The storage of one pending event, as the caller allocates it: an
 * array of events_cap of these is laid out by the engine as events_cap
 * ordering entries followed by events_cap bodies.
 */
struct icfab_engine_event {
	icfab_u64 storage[(sizeof(struct icfab_engine_evkey) +
			   sizeof(struct icfab_engine_evbody)) / 8];
};

/* The caller's arrays; the engine keeps pointers to them. */
struct icfab_engine_storage {
	struct icfab_engine_link *links;	/* topo->links_cap */
	struct icfab_engine_ep *eps;		/* topo->nodes_cap */
	icfab_u64 *dma_free;			/* ps, or busy */
	icfab_u32 dma_cap;			/* >= icfab_engine_dma_needed */
	icfab_u32 xfers_cap;
	struct icfab_engine_xfer *xfers;
	struct icfab_engine_event *events;	/* the event queue */
	icfab_u32 events_cap;
};

/*
 * Called for each completion, with the transfer already retired (its id
 * may be reused by a submission from inside the callback; submitting is
 * the only engine call a callback may make). Return nonzero
 * to make run_until() return right after this event, for instance because
 * the completion woke a context whose clock now holds the engine back.
 */
typedef int (*icfab_engine_complete_fn)(void *arg, icfab_u32 xfer_id,
					const struct icfab_xfer_result *r);

/*
 * One segment crossing one link, as the engine decided it: ready at the
 * link at @ready_ps, it starts serialising at @depart_ps = max(ready, the
 * link's next free time) and its last byte is out at @done_ps. So
 * depart - ready is its queueing delay at this link and done - depart the
 * link's busy time for it; the link statistics are the sums of these.
 * A segment that reached a held link (mlink.up_at_ps) is ready when the
 * hold ends: waiting for a circuit to come up is not queueing.
 */
struct icfab_engine_xmit {
	icfab_u64 key;			/* of the transfer */
	icfab_u64 bytes;		/* of this segment */
	icfab_u64 ready_ps;		/* ps */
	icfab_u64 depart_ps;		/* ps */
	icfab_u64 done_ps;		/* ps */
	icfab_u32 xfer_id;
	icfab_u32 link;			/* link id */
	icfab_u32 seg;			/* segment index in the transfer */
	icfab_u16 hop;			/* 0: the injection link */
	icfab_u16 pad;
};

/*
 * Observers, each optional, called with the engine's caller's lock held
 * and allowed no engine call. @submit sees an accepted submission (only
 * key, bytes, submit_ps, src, dst, hops and status are set), @xmit every
 * departure of a segment from a link, @complete every completion before
 * the completion callback.
 */
struct icfab_engine_tracer {
	void (*submit)(void *arg, icfab_u32 xfer_id,
		       const struct icfab_xfer_result *r);
	void (*xmit)(void *arg, const struct icfab_engine_xmit *x);
	void (*complete)(void *arg, icfab_u32 xfer_id,
			 const struct icfab_xfer_result *r);
};

/*
 * ---- partitions: the parallel engine's pieces ----
 *
 * The parallel engine (docs/TIMING.md, "The parallel engine") runs one
 * struct icfab_engine per partition of the nodes. Each is a whole engine
 * whose every transfer is submitted to all of them (the same ids), but
 * that processes only the events at its own nodes: the links leaving
 * them, their DMA engines and the last arrivals of transfers to them.
 * A segment leaving for a node of another partition, and the decision
 * that a segment will reach a destination owned by another, go into
 * the partition's outbox instead (struct icfab_engine_msg), to be
 * imported by their owner between windows (icfab_engine_part_import()).
 * A completion is recorded (struct icfab_engine_done), not reported:
 * the caller merges the partitions' records in the order of events,
 * retires the transfers in every partition in that order
 * (icfab_engine_part_retire()) and builds the results
 * (icfab_part_result()), so that transfer ids, completion order and
 * every figure are the sequential engine's. Or, cheaper, the caller
 * keeps the ids, free list and reservations itself, as the sequential
 * engine would, walks each route once (icfab_engine_part_route()) and
 * has every partition adopt the transfer into the slot it gave
 * (icfab_engine_part_adopt()); such partitions are never retired.
 *
 * Supported: routed transfers over a topology that does not change
 * while they run. A segment lost to a broken route or a failing hold
 * would need its status in every partition: the engine stops with
 * -EINVAL (e->part->err) rather than diverge. Trees, tier ports, the
 * tracer's submit and complete observers and run budgets are the
 * sequential engine's only.
 */
struct icfab_engine_msg {
	icfab_u64 time_ps;		/* ps: the event's, or the arrival */
	icfab_u64 tail_ps;		/* ps */
	icfab_u32 xfer;
	icfab_u32 seg;
	icfab_u32 node;			/* ICFAB_ENGINE_NO_XFER: an arrival */
	icfab_u32 turn;
	icfab_u16 hop;
	icfab_u16 to;			/* the partition that owns @node */
	icfab_u32 pad;
};

/* A completion, at the event (time, key, seg, hop, node, xfer) that made it. */
struct icfab_engine_done {
	icfab_u64 time_ps;		/* ps: the transfer's finish */
	icfab_u64 key;
	icfab_u32 seg, hop, node, xfer;
};

struct icfab_engine_part {
	const icfab_u16 *of_node;	/* partition of each node, nodes_cap */
	icfab_u16 self;
	icfab_u16 pad;
	/* Written by the partition's engine during a window. */
	icfab_u32 out_cap, nr_out;
	struct icfab_engine_msg *out;
	icfab_u32 done_cap, nr_done;
	struct icfab_engine_done *done;
	int err;			/* first error, sticky */
};

struct icfab_engine {
	const struct icfab_mtopo *topo;
	icfab_u32 segment_size;		/* bytes */
	struct icfab_engine_link *links;
	struct icfab_engine_ep *eps;
	icfab_u64 *dma_free;		/* ps; busy engines hold ~0 */
	struct icfab_engine_xfer *xfers;
	struct icfab_engine_event *events;
	icfab_u32 xfers_cap, events_cap;
	icfab_u32 free_xfer;		/* head of the free list */
	icfab_u32 nr_xfers;		/* in flight */
	/*
	 * Pending events, in events[] (see struct icfab_engine_event):
	 * their ordering entries in keys[] (the array's front), a 4-ary
	 * min-heap at the
	 * bottom, keys[0, nr_heap), and a run sorted in descending order
	 * at the top, keys[run_lo, run_hi), whose last entry is its
	 * smallest. An event that sorts no earlier than the run's largest
	 * joins the run in O(1); any other goes into the heap. The next
	 * event is the smallest of the minima, so the order is the one
	 * the heap alone would give (see ev_before()), and the common case
	 * (a transfer's own events, a burst of submissions in key order)
	 * never sifts (and the chains below take two more streams). Their
	 * bodies are in bodies[] (behind keys[]):
	 * those below bodies_hi are in use or on the free list from
	 * free_body.
	 *
	 * One more slot, @front, holds (when @has_front) an event that
	 * sorts before every other pending one: an event pushed when it
	 * would be the next anyway (a DMA engine handed to a waiter, at
	 * the instant being processed) goes there and out again without
	 * touching the heap. It counts in nr_events.
	 */
	struct icfab_engine_evkey front;
	icfab_u8 has_front;
	/*
	 * Two more runs, chains, of events that follow one another in the
	 * order of events as a rule but sort below the sorted run's
	 * largest (a segment's later hops), so that without them they
	 * would all go into the heap: [0] what a source's injection clocks
	 * (a transfer's next segment, its DMA engine's release: hop 0, at
	 * the source), [1] last arrivals (hop 1, at the destination). Each
	 * is a FIFO linked through the bodies and needs no ordering entry
	 * of its own: such an event is all there at its time and has no
	 * spray turn, and its node is its transfer's source or
	 * destination, and it comes after its transfer's submission
	 * instant, so its key is its transfer's (no LATE), and a member's
	 * body keeps its time in tail_ps, its segment in turn and the next
	 * member in node. Only the head is
	 * whole, with its body restored and the next member in @next;
	 * @tail orders the chain against what joins: an event sorting
	 * after it in (time, key, seg) joins. Empty when head.body is
	 * ICFAB_ENGINE_NO_XFER.
	 */
	struct {
		struct icfab_engine_evkey head;
		struct icfab_engine_evkey tail;
		icfab_u32 next;
	} chain[2];
	icfab_u32 free_body;
	icfab_u32 bodies_hi;
	icfab_u32 nr_events;		/* pending: front, heap, run, chains */
	icfab_u32 nr_heap;
	icfab_u32 run_lo, run_hi;	/* run_lo == run_hi: empty */
	/*
	 * First events of transfers left in their source's list of
	 * submissions (struct icfab_engine_ep), not pushed yet, and last
	 * arrivals carried by their transfer's DMA release (release_lands()
	 * in engine.c): pending all the same, and reserved, so counted in
	 * max_events.
	 */
	icfab_u32 nr_deferred;
	/* high-water mark of nr_events + nr_deferred */
	icfab_u32 max_events;
	/*
	 * For tests: set after init, every event goes into the heap (not
	 * the run, not @front), so that a run can be compared with the
	 * plain heap's, which must give the same results to the bit.
	 */
	icfab_u8 heap_only;
	icfab_u64 events_reserved;	/* by the transfers in flight */
	/*
	 * Every event before now_ps has been processed. The last processed
	 * event sorts at (last_ps, last_key) at most (last_key with
	 * ICFAB_ENGINE_KEY_LATE when it was of a transfer submitted then); a
	 * submission, whose first events are LATE, must sort after it, or it
	 * could have changed what was already decided.
	 */
	icfab_u64 now_ps;		/* ps */
	icfab_u64 last_ps;		/* ps */
	icfab_u64 last_key;
	int processed;			/* last_ps/last_key are valid */
	icfab_u32 mark;			/* last stamp given to a tree walk */
	const struct icfab_engine_tracer *tracer;	/* may be NULL */
	void *tracer_arg;
	/*
	 * Events icfab_engine_run_until() processes before it returns
	 * ICFAB_ENGINE_YIELD, so that a caller in the kernel can let go of
	 * its lock between calls; 0 (after init): no bound. They are
	 * counted across calls (run_done, since the last YIELD), so that a
	 * caller whose calls end early (@complete asking to stop) still
	 * gets a YIELD every run_budget events.
	 */
	icfab_u32 run_budget;
	icfab_u32 run_done;
	/* The horizon of the icfab_engine_run_until() call in progress. */
	icfab_u64 horizon_ps;		/* ps */
	/*
	 * carried_run() in engine.c starting a waiter: its release, when it
	 * would be the next event, is kept here (@carried_here) instead of
	 * pushed, and processed there.
	 */
	icfab_u8 carry_open;
	icfab_u8 carried_here;
	/*
	 * Counts icfab_engine_run_until() calls, from 1: a link's cache
	 * checked in this one (cache_epoch) is not checked again.
	 */
	icfab_u64 epoch;
	/* The parallel engine's partition this engine is, or NULL. */
	struct icfab_engine_part *part;
};

/* DMA engine entries the topology needs: one per engine per endpoint. */
icfab_u32 icfab_engine_dma_needed(const struct icfab_mtopo *topo);

/* Heap entries a transfer of @bytes reserves, at most, while in flight. */
icfab_u64 icfab_engine_events_needed(icfab_u64 bytes, icfab_u32 segment_size);

/*
 * Bind @e to the validated topology @topo and the caller's storage, with
 * every link idle and time 0. Bandwidth, latency, state and permille of
 * links may change between calls and apply to later departures, and so
 * may holds (up_at_ps, hold_fail); nodes, DMA engine counts and link ids
 * must not change without a new init or icfab_engine_retopo().
 * A route or link that breaks under a transfer in flight fails it with
 * -EHOSTUNREACH (a failing hold: -ENETDOWN): segments reaching the break
 * are lost, no more are injected, and it completes at its last pending
 * event. The first failure is the status reported.
 * Returns 0, -EINVAL for a zero segment size or missing storage, or
 * -ENOSPC when dma_cap is below icfab_engine_dma_needed().
 */
int icfab_engine_init(struct icfab_engine *e, const struct icfab_mtopo *topo,
		      icfab_u32 segment_size,
		      const struct icfab_engine_storage *s);

/*
 * Whether a transfer with @key submitted at @at, no earlier than now_ps,
 * would sort before the last event @e has processed: at its instant,
 * @key with ICFAB_ENGINE_KEY_LATE not above that event's key.
 */
static inline int icfab_engine_sorts_before(const struct icfab_engine *e,
					    icfab_u64 at, icfab_u64 key)
{
	return e->processed && at == e->last_ps &&
	       (key | ICFAB_ENGINE_KEY_LATE) <= e->last_key;
}

/*
 * The earliest time, no earlier than @at, at which a transfer with @key
 * sorts after everything @e has processed: now_ps at least, and when
 * that is the time of the last processed event, @key with
 * ICFAB_ENGINE_KEY_LATE above its key (after every event of a transfer
 * submitted earlier, and after those of transfers submitted at that
 * instant only with a larger key), else one ps later. At
 * ICFAB_ENGINE_NEVER there is no later time: it stays there, and
 * icfab_engine_submit() refuses the transfer (-ERANGE).
 */
static inline icfab_u64 icfab_engine_submit_at(const struct icfab_engine *e,
					       icfab_u64 at, icfab_u64 key)
{
	if (at < e->now_ps)
		at = e->now_ps;
	if (icfab_engine_sorts_before(e, at, key) &&
	    at != ICFAB_ENGINE_NEVER)
		at++;
	return at;
}

/*
 * Submit @bytes from endpoint @src to endpoint @dst at fabric time
 * @submit_ps with the tie-breaking @key (say, queue and sequence). The
 * submission must sort after everything processed: @submit_ps is its own
 * icfab_engine_submit_at() and sorts after them, otherwise -ERANGE (so
 * at ICFAB_ENGINE_NEVER, a @key that sorts before the last event there). @key must leave
 * ICFAB_ENGINE_KEY_LATE clear (-EINVAL). A transfer with no route, or
 * over a DOWN link, is accepted and completes at its start with -EHOSTUNREACH; one of
 * zero bytes or to itself completes at its start with 0. Holds are not
 * looked at here: the segments meet them.
 * Returns 0 and sets *@xfer_id, -EINVAL for a bad endpoint or key, or -ENOSPC
 * when the transfer table or the event heap cannot hold it.
 */
int icfab_engine_submit(struct icfab_engine *e, icfab_u32 src, icfab_u32 dst,
			icfab_u64 bytes, icfab_u64 submit_ps, icfab_u64 key,
			icfab_u32 *xfer_id);

/*
 * Where transfer @xfer_id (just submitted, none of its events processed
 * yet) writes: @dst_off bytes into its destination's address space. Its
 * segments take their spray turns from there, segment j the turn
 * floor(@dst_off / segment_size) + j (docs/TIMING.md, "Parallel
 * cables"), so that pieces of one buffer, submitted as transfers of
 * their own, spread over parallel links as the segments of one transfer
 * would. Not called: 0. Only the sprayed choices of routed transfers
 * read it.
 */
void icfab_engine_set_spray_offset(struct icfab_engine *e, icfab_u32 xfer_id,
				   icfab_u64 dst_off);

/*
 * icfab_engine_submit() for a transfer that reads a region in a memory
 * tier (@src_tier: the link id of the tier's port) or writes one
 * (@dst_tier), or both; ICFAB_MODEL_NO_LINK for plain memory on that
 * side (both: icfab_engine_submit() itself). A tier port is a hop like
 * a link (docs/TIMING.md, "Memory tiers"): the source's comes first, at
 * hop 0, so injection is self-clocked on it and the DMA engine is held
 * while reading; the destination's comes after the route's last link,
 * and the segment arrives when it is out on it plus its latency. A
 * transfer from an endpoint to itself crosses its tier ports only (a
 * copy between tiers), and with none completes at its start as before.
 * One between endpoints that no route joins completes at its start with
 * -EHOSTUNREACH. Returns what icfab_engine_submit() does, and -EINVAL
 * when a tier link is not a present tier port.
 */
int icfab_engine_submit_tiered(struct icfab_engine *e, icfab_u32 src,
			       icfab_u32 src_tier, icfab_u32 dst,
			       icfab_u32 dst_tier, icfab_u64 bytes,
			       icfab_u64 submit_ps, icfab_u64 key,
			       icfab_u32 *xfer_id);

/*
 * An explicit route, for circuit transfers: a tree of links rooted at the
 * source endpoint. links[] lists link ids so that each link leaves the
 * source or the destination of an earlier link, and no node is reached
 * twice; a path is the one-branch case. The leaves (nodes no tree link
 * leaves) must be endpoints: they are the destinations. A segment that
 * reaches a node is forwarded on every tree link leaving it, so routers
 * copy it and each link carries each segment once.
 * The caller owns the array and keeps it unchanged until the transfer
 * has completed.
 */
struct icfab_engine_tree {
	icfab_u32 nr_links;
	icfab_u32 nr_leaves;		/* set by icfab_engine_tree_check() */
	const icfab_u32 *links;
};

/*
 * Check @tree against @e's topology from @src and count its leaves.
 * Returns 0, or -EINVAL (@src not an endpoint, empty, 65535 links or
 * more, a link that is not present, does not leave a node of the tree,
 * reaches a node twice, or a leaf that is not an endpoint).
 * O(links^2), as it may not write to @e: for setting a circuit up, not
 * for every descriptor.
 */
int icfab_engine_tree_check(const struct icfab_engine *e, icfab_u32 src,
			    struct icfab_engine_tree *tree);

/*
 * Heap entries a tree transfer of @bytes reserves, at most: segments *
 * nr_leaves + 1 (see the top of this file), or segments * nr_links + 1
 * for a tree not checked yet.
 */
icfab_u64 icfab_engine_tree_events_needed(icfab_u64 bytes,
					  icfab_u32 segment_size,
					  const struct icfab_engine_tree *tree);

/*
 * Submit a transfer that follows @tree (checked by
 * icfab_engine_tree_check()) instead of the routing tables, under the
 * same rules as icfab_engine_submit(): DMA engine at @src, FIFO links,
 * store and forward. It completes when every leaf has every segment
 * (finish_ps is the last arrival; dst is the first leaf, nr_leaves the
 * number of leaves). A DOWN link on the tree fails it with
 * -EHOSTUNREACH, a held one with hold_fail with -ENETDOWN.
 * The tree is checked again here, in O(links), so an unchecked or stale
 * one is refused with -EINVAL rather than trusted; only the array is kept
 * (not @tree itself, which may live on the caller's stack).
 * Returns 0, -EINVAL, -ERANGE or -ENOSPC as icfab_engine_submit().
 */
int icfab_engine_submit_tree(struct icfab_engine *e, icfab_u32 src,
			     const struct icfab_engine_tree *tree,
			     icfab_u64 bytes, icfab_u64 submit_ps,
			     icfab_u64 key, icfab_u32 *xfer_id);

/*
 * Move @e to @topo, a new validated configuration of the same shape:
 * the same nodes_cap and links_cap, and every node present in one
 * present in the other with the same kind and DMA engine count. Links
 * and routes may differ. Link ids keep their FIFO state and statistics.
 * Segments already departed arrive as decided; every later decision
 * (next hop, link state, bandwidth, holds) uses @topo. A tree transfer
 * one of whose links is gone from @topo, or joins other nodes there,
 * fails with -EHOSTUNREACH. The current topology is read during the call
 * and may be freed after it. Returns 0, or -EINVAL (and changes nothing)
 * when the shapes differ.
 */
int icfab_engine_retopo(struct icfab_engine *e,
			const struct icfab_mtopo *topo);

/*
 * Process every event before @horizon_ps (all of them for
 * ICFAB_ENGINE_NEVER), calling @complete for each transfer that finishes.
 * Returns 0 when the horizon was reached, 1 when @complete asked to stop,
 * ICFAB_ENGINE_YIELD when it processed e->run_budget events (call again
 * to go on: the result is the same as without a budget), or a negative
 * errno on an engine bug (an event the engine cannot place).
 */
#define ICFAB_ENGINE_YIELD	2
int icfab_engine_run_until(struct icfab_engine *e, icfab_u64 horizon_ps,
			   icfab_engine_complete_fn complete, void *arg);

/*
 * Move @e to larger storage: @xfers (@xfers_cap entries) and @events
 * (@events_cap), each at least as large as what @e has now. Either may be
 * the array @e already uses (grown in place, say by a realloc); the
 * engine moves what it keeps in the events array itself. Everything in flight
 * carries over and transfer ids stay; the arrays @e used are not touched
 * afterwards and may be freed. Call it between engine calls, when a
 * submission returned -ENOSPC for instance: capacity costs the caller
 * memory and a copy, never emulated time, since the events are processed
 * in the same total order whatever holds them.
 * Returns 0, or -EINVAL (and changes nothing) when a capacity shrinks or
 * reaches ICFAB_ENGINE_NO_XFER transfers.
 */
int icfab_engine_grow(struct icfab_engine *e,
		      struct icfab_engine_xfer *xfers, icfab_u32 xfers_cap,
		      struct icfab_engine_event *events, icfab_u32 events_cap);

/*
 * What @e lacks to admit a transfer needing @events events at most
 * (icfab_engine_events_needed() or icfab_engine_tree_events_needed()):
 * 0 when it fits, else the smallest events_cap that would hold it with
 * everything already reserved, or ~0 if none can. Sets *@need_xfer when
 * the transfer table is full.
 */
icfab_u64 icfab_engine_room_needed(const struct icfab_engine *e,
				   icfab_u64 events, int *need_xfer);

/* Set (or, with NULL, clear) the observers of @e. */
void icfab_engine_set_tracer(struct icfab_engine *e,
			     const struct icfab_engine_tracer *tracer,
			     void *arg);

/*
 * Zero the statistics of every link (bytes, segments, busy_ps,
 * max_queued_ps) and nothing else: transfers in flight go on as before
 * and what they carry from now on is counted.
 */
void icfab_engine_reset_stats(struct icfab_engine *e);

/* Time of the earliest pending event, or ICFAB_ENGINE_NEVER. */
icfab_u64 icfab_engine_next_ps(const struct icfab_engine *e);

/*
 * Teardown: complete every transfer in flight with -ECANCELED, each once,
 * in transfer id order, finishing at now_ps (or at its start, if later;
 * one still waiting for a DMA engine starts then too), and leave the
 * engine empty with every DMA engine idle. Links keep their state.
 */
void icfab_engine_cancel_all(struct icfab_engine *e,
			     icfab_engine_complete_fn complete, void *arg);

/*
 * Make @e the engine of partition @p->self (NULL: a whole engine again),
 * before the first submission and between windows (a new outbox). While
 * set, icfab_engine_submit() pushes a transfer's first event only in
 * the partition of its source, and run_until() records completions in
 * @p->done and reports none.
 */
void icfab_engine_set_part(struct icfab_engine *e,
			   struct icfab_engine_part *p);

/*
 * Import into @e (a partition's engine, between windows) the messages of
 * outbox @from addressed to it. Returns 0, -ERANGE when one sorts before
 * what @e has processed (the partitions did not keep to the lookahead:
 * the results would differ from the sequential engine's), or -EINVAL.
 */
int icfab_engine_part_import(struct icfab_engine *e,
			     const struct icfab_engine_part *from);

/* Retire transfer @id, which some partition completed, in @e. */
void icfab_engine_part_retire(struct icfab_engine *e, icfab_u32 id);

/*
 * A routed transfer's route, walked once for all partitions
 * (icfab_engine_part_route()) and taken by each (icfab_engine_part_adopt()).
 */
struct icfab_engine_route {
	icfab_u64 nr_segs;		/* 0: completes at its start */
	icfab_u32 hops;
	int status;			/* 0 or -EHOSTUNREACH */
	icfab_u32 path_len, path0, path1;
	/* Events the transfer reserves (icfab_engine_events_needed()). */
	icfab_u64 need;
};

/*
 * What icfab_engine_submit() would decide about a transfer from @src to
 * @dst of @bytes before it takes a slot: -EINVAL when an end is not a
 * present endpoint, else 0 with its route in *@r. Reads only the
 * topology, so any partition may walk any transfer's route, at once.
 */
int icfab_engine_part_route(const struct icfab_engine *e, icfab_u32 src,
			    icfab_u32 dst, icfab_u64 bytes,
			    struct icfab_engine_route *r);

/*
 * Take transfer @id, routed as @r, into partition @e, as
 * icfab_engine_submit() would have filled its slot, its first event
 * pushed only in its source's partition. Nothing is checked: the caller
 * keeps the transfer ids, the reservations and the order of submissions
 * for all partitions (as the sequential engine would), and a partition
 * engine that adopts takes no other submission. Its slots are never
 * retired: a completed transfer's slot is left as it was until adopted
 * again. Returns 0, or -ENOSPC if the caller's reservations did not
 * leave the events the transfer needs.
 */
int icfab_engine_part_adopt(struct icfab_engine *e, icfab_u32 id,
			    icfab_u32 src, icfab_u32 dst, icfab_u64 bytes,
			    icfab_u64 submit_ps, icfab_u64 key,
			    const struct icfab_engine_route *r);

/*
 * The same in two steps, for many partitions: the slot that
 * icfab_engine_part_adopt() would fill, built once into @slot (any
 * memory; reads nothing of an engine), and then taken by each
 * partition: transfers @ids[0..@n) into partition @e from @slots[0..@n),
 * each as icfab_engine_part_adopt() would take it. Returns 0, or -ENOSPC
 * as that does (the transfers before the one refused are taken).
 */
void icfab_engine_part_slot(struct icfab_engine_xfer *slot, icfab_u32 src,
			    icfab_u32 dst, icfab_u64 bytes,
			    icfab_u64 submit_ps, icfab_u64 key,
			    const struct icfab_engine_route *r);
int icfab_engine_part_adopt_slots(struct icfab_engine *e, const icfab_u32 *ids,
				  const struct icfab_engine_xfer *slots,
				  icfab_u64 n);

/*
 * Partition the nodes of @t into @nr_parts (1 to 65535) for the parallel
 * engine: a leaf switch with the endpoints whose first link reaches it,
 * an endpoint with no switch next to it alone, and any other switch
 * alone are the groups; groups go to partitions in the order of their
 * lowest node id, filled by weight (links leaving their nodes), so that
 * neighbours stay together, those with endpoints and those without
 * (spines) shared out apart, so that each partition has both. Writes of_node[nodes_cap]; @scratch holds
 * 2 * nodes_cap entries. Returns the lookahead, the smallest latency of
 * a present link between partitions (ps): ICFAB_ENGINE_NEVER when none
 * crosses, 0 when one has no latency (then there is none: run
 * sequentially).
 */
icfab_u64 icfab_part_plan(const struct icfab_mtopo *t, icfab_u16 nr_parts,
			  icfab_u16 *of_node, icfab_u32 *scratch);

/* Whether completion @a came before @b in the order of events. */
int icfab_part_done_before(const struct icfab_engine_done *a,
			   const struct icfab_engine_done *b);

/*
 * The result of completion @d from the partitions' engines @e[@nr]
 * (of_node their partitioning): what the sequential engine reports.
 * Queueing is summed over the partitions the transfer crossed; the
 * start is its source's.
 */
void icfab_part_result(struct icfab_engine *const *e, icfab_u32 nr,
		       const icfab_u16 *of_node,
		       const struct icfab_engine_done *d,
		       struct icfab_xfer_result *r);
/*
 * The same, built by partition @self: what every partition adopted
 * alike (key, size, ends, hops, status) from its own copy, so that only
 * the queueing and the start are read from the others'.
 */
void icfab_part_result_at(struct icfab_engine *const *e, icfab_u32 nr,
			  const icfab_u16 *of_node, icfab_u32 self,
			  const struct icfab_engine_done *d,
			  struct icfab_xfer_result *r);

/*
 * Handing a step to the parallel engine and back (the module's data
 * path, docs/ARCHITECTURE.md, "The parallel engine in the kernel").
 *
 * icfab_engine_unsubmit(): take back the @n transfers @ids[], in the
 * order they were submitted, when they are all @e holds and none has
 * had an event processed (each still waits for its first): @e is then
 * as it was before the first of them, its free list of transfer ids
 * included, but for the high-water mark of its events. 0, or
 * -ICFAB_ENGINE_EINVAL and nothing changed (one of them has started, is
 * a tree, a tiered transfer, or one given a spray offset on a topology
 * that sprays (icfab_topo_sprays()), or @e holds others). A spray offset
 * where nothing sprays is never read, and is not handed over.
 *
 * icfab_engine_set_free_list(): @e holding nothing, its free list
 * becomes @head, then @next[@head], ... (every slot once), the order in
 * which later submissions take ids. 0 or -ICFAB_ENGINE_EINVAL (nothing
 * changed).
 */
int icfab_engine_unsubmit(struct icfab_engine *e, const icfab_u32 *ids,
			  icfab_u32 n);
int icfab_engine_set_free_list(struct icfab_engine *e, icfab_u32 head,
			       const icfab_u32 *next);

#endif /* _ICFAB_MODEL_ENGINE_H */
