/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfab tracepoints: the "icfab" trace system.
 *
 * The fields, their order and the TP_PROTO arguments are a stable
 * interface (docs/TRACING.md): tools read them as tracefs fields, as
 * text from trace_pipe, and as raw tracepoint arguments from BPF
 * (icfab-contention), where argument i is ctx[i], widened to 64 bits.
 * New fields are only appended. Every time is fabric time in ps.
 *
 * Out-of-tree build: define_trace.h includes "./trace.h", which the
 * compiler finds through -I$(src)/kmod (Kbuild).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM icfab

#if !defined(_ICFAB_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _ICFAB_TRACE_H

#include <linux/tracepoint.h>

/* A transfer entered the engine. @key orders ties: ep << 44 | place << 32 | seq. */
TRACE_EVENT(icfab_submit,
	TP_PROTO(u32 fabric, u32 xfer, u64 key, u32 src, u32 dst, u64 bytes,
		 u64 submit_ps, u32 hops),
	TP_ARGS(fabric, xfer, key, src, dst, bytes, submit_ps, hops),
	TP_STRUCT__entry(
		__field(u32, fabric)
		__field(u32, xfer)
		__field(u64, key)
		__field(u32, src)
		__field(u32, dst)
		__field(u64, bytes)
		__field(u64, submit_ps)
		__field(u32, hops)
	),
	TP_fast_assign(
		__entry->fabric = fabric;
		__entry->xfer = xfer;
		__entry->key = key;
		__entry->src = src;
		__entry->dst = dst;
		__entry->bytes = bytes;
		__entry->submit_ps = submit_ps;
		__entry->hops = hops;
	),
	TP_printk("fabric=%u xfer=%u key=0x%llx src=%u dst=%u bytes=%llu submit_ps=%llu hops=%u",
		  __entry->fabric, __entry->xfer, __entry->key, __entry->src,
		  __entry->dst, __entry->bytes, __entry->submit_ps,
		  __entry->hops)
);

/*
 * A segment crossed a link: ready at the link at ready_ps, it started
 * serialising at depart_ps = max(ready, the link's next free time) and its
 * last byte was out at done_ps. queued_ps = depart_ps - ready_ps is its
 * queueing delay at this link, done_ps - depart_ps the link's busy time.
 */
TRACE_EVENT(icfab_link_xmit,
	TP_PROTO(u32 fabric, u32 link, u64 key, u32 seg, u32 hop, u64 bytes,
		 u64 ready_ps, u64 depart_ps, u64 done_ps),
	TP_ARGS(fabric, link, key, seg, hop, bytes, ready_ps, depart_ps,
		done_ps),
	TP_STRUCT__entry(
		__field(u32, fabric)
		__field(u32, link)
		__field(u64, key)
		__field(u32, seg)
		__field(u32, hop)
		__field(u64, bytes)
		__field(u64, ready_ps)
		__field(u64, depart_ps)
		__field(u64, done_ps)
		__field(u64, queued_ps)
	),
	TP_fast_assign(
		__entry->fabric = fabric;
		__entry->link = link;
		__entry->key = key;
		__entry->seg = seg;
		__entry->hop = hop;
		__entry->bytes = bytes;
		__entry->ready_ps = ready_ps;
		__entry->depart_ps = depart_ps;
		__entry->done_ps = done_ps;
		__entry->queued_ps = depart_ps - ready_ps;
	),
	TP_printk("fabric=%u link=%u key=0x%llx seg=%u hop=%u bytes=%llu ready_ps=%llu depart_ps=%llu done_ps=%llu queued_ps=%llu",
		  __entry->fabric, __entry->link, __entry->key, __entry->seg,
		  __entry->hop, __entry->bytes, __entry->ready_ps,
		  __entry->depart_ps, __entry->done_ps, __entry->queued_ps)
);

/* A transfer completed (status 0, -EHOSTUNREACH or -ECANCELED). */
TRACE_EVENT(icfab_complete,
	TP_PROTO(u32 fabric, u64 key, u32 src, u32 dst, u64 bytes, int status,
		 u64 submit_ps, u64 start_ps, u64 finish_ps, u64 queued_ps),
	TP_ARGS(fabric, key, src, dst, bytes, status, submit_ps, start_ps,
		finish_ps, queued_ps),
	TP_STRUCT__entry(
		__field(u32, fabric)
		__field(u64, key)
		__field(u32, src)
		__field(u32, dst)
		__field(u64, bytes)
		__field(int, status)
		__field(u64, submit_ps)
		__field(u64, start_ps)
		__field(u64, finish_ps)
		__field(u64, queued_ps)
	),
	TP_fast_assign(
		__entry->fabric = fabric;
		__entry->key = key;
		__entry->src = src;
		__entry->dst = dst;
		__entry->bytes = bytes;
		__entry->status = status;
		__entry->submit_ps = submit_ps;
		__entry->start_ps = start_ps;
		__entry->finish_ps = finish_ps;
		__entry->queued_ps = queued_ps;
	),
	TP_printk("fabric=%u key=0x%llx src=%u dst=%u bytes=%llu status=%d submit_ps=%llu start_ps=%llu finish_ps=%llu queued_ps=%llu",
		  __entry->fabric, __entry->key, __entry->src, __entry->dst,
		  __entry->bytes, __entry->status, __entry->submit_ps,
		  __entry->start_ps, __entry->finish_ps, __entry->queued_ps)
);

/*
 * A commit changed a link: its state or share, or (OCS) its ends or its
 * hold. It takes effect at fabric time @at_ps; a held link carries
 * nothing before @up_at_ps (0: not held), and with @hold_fail set the
 * traffic that meets it fails instead of waiting.
 */
TRACE_EVENT(icfab_link_state,
	TP_PROTO(u32 fabric, u32 link, u32 old_state, u32 new_state,
		 u32 permille, u64 generation, u64 at_ps, u64 up_at_ps,
		 u32 hold_fail),
	TP_ARGS(fabric, link, old_state, new_state, permille, generation,
		at_ps, up_at_ps, hold_fail),
	TP_STRUCT__entry(
		__field(u32, fabric)
		__field(u32, link)
		__field(u32, old_state)
		__field(u32, new_state)
		__field(u32, permille)
		__field(u32, hold_fail)
		__field(u64, generation)
		__field(u64, at_ps)
		__field(u64, up_at_ps)
	),
	TP_fast_assign(
		__entry->fabric = fabric;
		__entry->link = link;
		__entry->old_state = old_state;
		__entry->new_state = new_state;
		__entry->permille = permille;
		__entry->hold_fail = hold_fail;
		__entry->generation = generation;
		__entry->at_ps = at_ps;
		__entry->up_at_ps = up_at_ps;
	),
	TP_printk("fabric=%u link=%u old_state=%u new_state=%u permille=%u generation=%llu at_ps=%llu up_at_ps=%llu hold_fail=%u",
		  __entry->fabric, __entry->link, __entry->old_state,
		  __entry->new_state, __entry->permille, __entry->generation,
		  __entry->at_ps, __entry->up_at_ps, __entry->hold_fail)
);

/*
 * The engine stopped at the safe time with work pending: it waits for
 * process @pid, whose context's clock (@held_ps) is that time. @next_ps
 * is the engine's next event, @now_ps how far it has run.
 */
TRACE_EVENT(icfab_engine_held,
	TP_PROTO(u32 fabric, u32 pid, u64 held_ps, u64 next_ps, u64 now_ps),
	TP_ARGS(fabric, pid, held_ps, next_ps, now_ps),
	TP_STRUCT__entry(
		__field(u32, fabric)
		__field(u32, pid)
		__field(u64, held_ps)
		__field(u64, next_ps)
		__field(u64, now_ps)
	),
	TP_fast_assign(
		__entry->fabric = fabric;
		__entry->pid = pid;
		__entry->held_ps = held_ps;
		__entry->next_ps = next_ps;
		__entry->now_ps = now_ps;
	),
	TP_printk("fabric=%u pid=%u held_ps=%llu next_ps=%llu now_ps=%llu",
		  __entry->fabric, __entry->pid, __entry->held_ps,
		  __entry->next_ps, __entry->now_ps)
);

/*
 * A circuit was installed (icfab_circuit_alloc) or removed
 * (icfab_circuit_free): it holds @color at each of its @nr_routers
 * routers, from endpoint @src to @nr_dsts destinations, for @owner_pid
 * (0: pinned, no owner process).
 */
DECLARE_EVENT_CLASS(icfab_circuit,
	TP_PROTO(u32 fabric, u32 id, u32 color, u32 src, u32 nr_dsts,
		 u32 nr_routers, u32 owner_pid),
	TP_ARGS(fabric, id, color, src, nr_dsts, nr_routers, owner_pid),
	TP_STRUCT__entry(
		__field(u32, fabric)
		__field(u32, id)
		__field(u32, color)
		__field(u32, src)
		__field(u32, nr_dsts)
		__field(u32, nr_routers)
		__field(u32, owner_pid)
	),
	TP_fast_assign(
		__entry->fabric = fabric;
		__entry->id = id;
		__entry->color = color;
		__entry->src = src;
		__entry->nr_dsts = nr_dsts;
		__entry->nr_routers = nr_routers;
		__entry->owner_pid = owner_pid;
	),
	TP_printk("fabric=%u id=%u color=%u src=%u nr_dsts=%u nr_routers=%u owner_pid=%u",
		  __entry->fabric, __entry->id, __entry->color, __entry->src,
		  __entry->nr_dsts, __entry->nr_routers, __entry->owner_pid)
);

DEFINE_EVENT(icfab_circuit, icfab_circuit_alloc,
	TP_PROTO(u32 fabric, u32 id, u32 color, u32 src, u32 nr_dsts,
		 u32 nr_routers, u32 owner_pid),
	TP_ARGS(fabric, id, color, src, nr_dsts, nr_routers, owner_pid));

DEFINE_EVENT(icfab_circuit, icfab_circuit_free,
	TP_PROTO(u32 fabric, u32 id, u32 color, u32 src, u32 nr_dsts,
		 u32 nr_routers, u32 owner_pid),
	TP_ARGS(fabric, id, color, src, nr_dsts, nr_routers, owner_pid));

#endif /* _ICFAB_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
