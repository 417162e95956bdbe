/* SPDX-License-Identifier: GPL-2.0 */
/*
 * icfab: private header of the kernel module.
 *
 * Lock order (outermost first; a lock is only ever taken with those above
 * it held, never the other way round):
 *
 *	genl_mutex			netlink core, around every doit/dumpit
 *	  icfab_fabric.lock		mutex: configuration, data path, circuits,
 *					stats, region keys; the engine runs under it
 *	    mmap_lock			user copies under fabric->lock may fault
 *	      xa_lock(ctx->regions)	handle -> region (region.c); also taken
 *					under mmap_lock alone, by ->mmap()
 *	    icfab_ctx.lock		spinlock: a context's DELAY and WRITE
 *					paths (data.c), which take it with
 *					no other lock held; outside pool_lock.
 *					A memory WRITE there reads its regions
 *					under RCU, not xa_lock or the key
 *					table's fabric->lock (region.c)
 *	    icfab_ctx.pool_lock		spinlock: a context's spare requests
 *	    icfab_queue.claim_lock	spinlock: a receive queue's count of
 *					reserved and promised receive
 *					completions (data.c); under
 *					icfab_ctx.lock on the WRITE path
 *					(a NOTIFY WRITE's promise), else
 *					under fabric->lock alone
 *	    xa_lock(fabric->circuits)	circuits by id (circuit.c)
 *	    icfab_users_lock		spinlock: per-uid quota counts (main.c);
 *					also taken with no other lock held
 *	    icfab_ctx.wq's lock		wake-ups of a context's WAIT
 *	    hrtimer, workqueue and io_uring task-work locks, inside their
 *	    kernel calls (paced timer, completions to io_uring)
 *
 * Each of the inner locks is a leaf: nothing is taken under it, and no
 * allocation that may sleep happens under a spinlock here.
 * Never under fabric->lock: cancel_work_sync() of a paced engine's work
 * item, which takes fabric->lock itself (icfab_data_stop() runs after
 * unlocking), nor that of a context's reach_work (icfab_ctx_destroy()
 * cancels it before locking); ->mmap() (under mmap_lock) never takes
 * fabric->lock.
 *
 * Checked by lockdep: functions documented "the fabric lock is held"
 * (and the __icfab_* ones) run under fabric->lock and check it with
 * lockdep_assert_held() wherever they can reach the fabric (those handed
 * only a configuration (topo.c), an io_uring command, or a request whose
 * context may be gone rely on their callers' check); the two cancels
 * above assert the lock is not held (lockdep_assert_not_held()); a
 * quota charge, which may allocate, says might_sleep(). The order itself
 * is what a PROVE_LOCKING kernel learns from every path the selftests
 * run (`make check-debug`, docs/SECURITY.md).
 *
 * Below the limits and the types every file shares: one section per .c
 * file, in Kbuild's order.
 */
#ifndef _ICFAB_H
#define _ICFAB_H

#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>
#include <net/genetlink.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "model/engine.h"
#include "model/topo.h"

#define ICFAB_MAX_FABRICS		8

/* Limits of one fabric; reported through ICFAB_IOC_INFO. */
#define ICFAB_MAX_ENDPOINTS		4096
#define ICFAB_MAX_SWITCHES		1024
#define ICFAB_MAX_LINKS			65536
#define ICFAB_MAX_PORTS			2048
#define ICFAB_MAX_COLORS		64
#define ICFAB_MAX_QUEUES		4096		/* per context */
#define ICFAB_MAX_QUEUE_DEPTH		4096
#define ICFAB_MIN_SEGMENT_SIZE		64		/* bytes */
#define ICFAB_MAX_SEGMENT_SIZE		(1U << 20)	/* bytes */
#define ICFAB_DEFAULT_SEGMENT_SIZE	4096		/* bytes */
#define ICFAB_MAX_DILATION		1000000

/*
 * The ICFAB_F_* bits this build implements. A bit joins this mask in the
 * commit that makes it true, never before.
 */
#define ICFAB_F_SUPPORTED		(ICFAB_F_NETLINK | ICFAB_F_QUEUES | \
					 ICFAB_F_MEMORY | ICFAB_F_URING_CMD | \
					 ICFAB_F_FREE_RUN | ICFAB_F_PACED | \
					 ICFAB_F_LIVE_COMMIT | ICFAB_F_CIRCUITS | \
					 ICFAB_F_RECV_NOTIFY | \
					 ICFAB_F_LINK_SWITCHING | \
					 ICFAB_F_LINK_MULTIPATH | \
					 ICFAB_F_LINK_ENERGY | \
					 ICFAB_F_LINK_CALIBRATION | \
					 ICFAB_F_MEMORY_TIERS | \
					 ICFAB_F_CIRCUIT_OWNER | \
					 ICFAB_F_CTX_ADMIN | \
					 ICFAB_F_ROUTE_SETS | ICFAB_F_CQ_RING | \
					 ICFAB_F_TIMING_OFFSETS | \
					 ICFAB_F_WAIT_END | ICFAB_F_TRIGGER)

/* Data path (kmod/data.c). Endpoints per context: every one a fabric has. */
#define ICFAB_MAX_ATTACH		ICFAB_MAX_ENDPOINTS
#define ICFAB_ENGINE_XFERS		16384		/* transfers in flight */
/* The transfer table grows, doubling, up to this (128 bytes each). */
#define ICFAB_ENGINE_XFERS_MAX		(2 * 1024 * 1024)
#define ICFAB_ENGINE_EVENTS		(256 * 1024)	/* pending segment events */
/* Events the engine processes under the fabric lock at a time (data.c). */
#define ICFAB_ENGINE_RUN_BUDGET		4096
/* ...and the pause between two budgets, us, the lock and the CPU free. */
#define ICFAB_ENGINE_RUN_GAP_US		10
/* The event table grows, doubling, up to this (48 bytes each). */
#define ICFAB_ENGINE_EVENTS_MAX		(8 * 1024 * 1024)
/*
 * Segments of the largest unicast transfer: one event per segment plus
 * one must fit in the largest table (icfab_engine_events_needed()).
 */
#define ICFAB_MAX_XFER_SEGMENTS		(ICFAB_ENGINE_EVENTS_MAX - 1)
#define ICFAB_MAX_REGIONS		((1U << 20) - 1) /* handles per context */
#define ICFAB_REQ_POOL			1024		/* requests kept per context */
#define ICFAB_REGION_MMAP_SHIFT		40		/* mmap offset = handle << it */

/* Node ids are shared by endpoints and switches. */
#define ICFAB_MAX_NODES			(ICFAB_MAX_ENDPOINTS + ICFAB_MAX_SWITCHES)

/*
 * A fabric's configuration: its parameters and its topology. A committed
 * one is never modified; staging works on a deep copy (kmod/topo.c).
 */
struct icfab_topo {
	u32 time_mode;			/* enum icfab_time_mode */
	u32 segment_size;		/* bytes */
	u32 dilation;			/* wall ns per fabric ns, paced mode */
	struct icfab_mtopo m;
};

struct icfab_fabric {
	u32 id;				/* N of /dev/icfabN */
	char name[16];			/* "icfabN" */
	struct miscdevice misc;

	struct mutex lock;		/* protects the fields below */
	struct icfab_topo *active;	/* committed configuration, never NULL */
	struct icfab_topo *staged;	/* being edited, or NULL */
	u32 staged_portid;		/* netlink socket that owns staged */
	/*
	 * Beside staged_portid, in what was a hole: so that the counts
	 * below fill 8-byte words and nothing after them moves (a move of
	 * the fields from data on changed the engine's run's registers).
	 */
	u32 change_seq;			/* bumped by every commit or staging edit;
					 * dumps use it to flag NLM_F_DUMP_INTR */
	u64 commit_ps;			/* ps: when the last commit took effect */
	u64 generation;			/* bumped by every commit */

	atomic_t nr_contexts;		/* open files */
	/*
	 * Counts for debugfs (fast_delays, submit_lock_waits), not wall
	 * time: DELAYs the DELAY path took under a context's own lock
	 * (data.c, icfab_submit_fast()), and submissions (a SUBMIT's
	 * chunk, an ICFAB_UCMD_SUBMIT) that found this lock taken and
	 * waited for it. Atomic, outside the lock; they wrap.
	 */
	atomic_t fast_delays;
	atomic_t submit_lock_waits;
	/* WRITEs the WRITE path accepted under a context's own lock. */
	atomic_t fast_writes;
	/* ...of which memory WRITEs (a region and a key, bytes copied). */
	atomic_t fast_mem_writes;
	/* Memory READs it accepted (not in fast_writes). */
	atomic_t fast_mem_reads;
	/* Timing-only READs it accepted (not in fast_writes either). */
	atomic_t fast_timed_reads;
	/* NOTIFY WRITEs it accepted (timing-only or memory; in fast_writes). */
	atomic_t fast_notify_writes;
	/* Memory transfers whose bytes were copied off this lock. */
	atomic_t copies_unlocked;
	/* Of those, copied by a WAIT rather than the copier's work item. */
	atomic_t copies_by_wait;

	/* Data path, under lock. The engine exists while contexts attach. */
	struct icfab_data *data;
	struct list_head attached;	/* icfab_ctx.attached_node */
	u32 nr_attached;
	/*
	 * Who holds the engine back, updated under lock whenever the safe
	 * time is computed: the owner (tgid) of the context whose clock is
	 * the horizon, and that clock; 0 and 0 when nobody does.
	 */
	pid_t held_pid;
	u64 held_ps;			/* ps */
	/*
	 * The id of that context and since when (ktime_get_ns()) it has
	 * been the one, for CTX_GET's HELD_NS; and the last id given to a
	 * context that attached (ids start at 1).
	 */
	u32 held_id;
	u64 held_since_ns;
	u32 ctx_seq;
	/* Device memory (kmod/region.c), with its own locking rules. */
	struct icfab_mem *mem;

	/* Circuits (kmod/circuit.c), under lock. */
	struct xarray circuits;		/* id -> struct icfab_circuit */
	u32 nr_circuits;
	u64 *colors_used;		/* per node id of the committed config:
					 * bit c = color c held there; or NULL */
	u32 colors_used_len;		/* entries in colors_used */
	u32 circuit_seq;		/* bumped by every circuit change and
					 * commit; dumps use it */
	/* By engine transfer id: the tree it follows (a reference), or NULL */
	struct icfab_circuit_tree **tree_xfers;
	u32 tree_xfers_cap;		/* entries in tree_xfers */

	/*
	 * Link statistics (genl_stats.c), under lock: those of engines
	 * gone, plus the live engine's, for configuration stats_generation.
	 */
	struct icfab_engine *stats_engine;	/* data's engine, or NULL */
	struct icfab_link_stats *link_stats;	/* by link id, or NULL */
	u32 nr_link_stats;			/* entries in link_stats */
	bool stats_incomplete;			/* some went uncounted */
	u64 stats_generation;
	u64 stats_elapsed_ps;			/* ps: clocks of engines gone */
	u64 stats_base_ps;			/* ps: the live engine's clock
						 * when its counting began */
};

/* One link's counters, as in struct icfab_engine_link. */
struct icfab_link_stats {
	u64 bytes;
	u64 segments;
	u64 busy_ps;			/* ps */
	u64 max_queued_ps;		/* ps */
};

/* A snapshot of a fabric's state, taken under fabric->lock. */
struct icfab_fabric_state {
	u32 id;
	u32 time_mode;
	u32 segment_size;		/* bytes */
	u32 dilation;
	u64 now_ps;			/* ps */
	u64 generation;
	u32 nr_endpoints;
	u32 nr_switches;
	u32 nr_links;
	u32 nr_contexts;
	bool has_staged;
	u64 mem_bytes;			/* committed configuration's tables */
};

/* ABI reserved words must be zero on input (-EINVAL otherwise). */
static inline bool icfab_reserved_zero(const __u64 *words, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (words[i])
			return false;
	return true;
}

/* main.c */
extern unsigned int icfab_nr_fabrics;
extern unsigned int icfab_max_ctx_descs;
extern unsigned int icfab_max_ctx_queues;

/* Queues one context may have: the parameter, within ICFAB_MAX_QUEUES. */
static inline u32 icfab_ctx_queues_cap(void)
{
	return clamp_t(u32, READ_ONCE(icfab_max_ctx_queues), 1,
		       ICFAB_MAX_QUEUES);
}

/* What a uid holds, charged against the caps of the same names. */
enum icfab_quota {
	ICFAB_QUOTA_CONTEXTS,		/* open files */
	ICFAB_QUOTA_PAGES,		/* device memory, pages */
	ICFAB_QUOTA_CIRCUITS,		/* circuits it owns */
	ICFAB_QUOTA_NR
};
int icfab_quota_charge(u32 uid, enum icfab_quota what, u64 n, bool exempt);
void icfab_quota_uncharge(u32 uid, enum icfab_quota what, u64 n);
struct icfab_fabric *icfab_fabric_get_by_id(u32 id);
void icfab_fabric_snapshot(struct icfab_fabric *fabric,
			   struct icfab_fabric_state *st, bool staged);
void icfab_fill_limits(struct icfab_limits *limits, u32 segment_size);
struct icfab_topo *icfab_fabric_staged(struct icfab_fabric *fabric,
				       u32 portid);
struct icfab_topo *icfab_fabric_unstage(struct icfab_fabric *fabric);
void icfab_fabrics_release_portid(u32 portid);

/* chardev.c */
int icfab_chardev_init(struct icfab_fabric *fabric);
void icfab_chardev_exit(struct icfab_fabric *fabric);

/* data.c: contexts, queues and the engine */
struct file;
struct vm_area_struct;
struct io_uring_cmd;
struct icfab_req;
struct icfab_queue;
struct icfab_uring_result;

/*
 * An open /dev/icfabN: the endpoints it attached, its queues, its
 * regions (region.c) and its clock.
 */
struct icfab_ctx {
	struct icfab_fabric *fabric;
	/*
	 * Its opener's effective uid (in the initial namespace), which its
	 * contexts and device memory are charged to, and whether the opener
	 * had CAP_SYS_RESOURCE, which lifts those per-uid caps.
	 */
	u32 uid;
	bool quota_exempt;
	bool net_admin;			/* opener had CAP_NET_ADMIN */
	struct xarray regions;		/* handle -> struct icfab_region */
	atomic_t uring_holds;		/* io_uring commands not yet done */
	atomic_t nr_vmas;		/* mappings of its regions; they hold
					 * the file: see icfab_ctx_flush() */
	/*
	 * Whether anyone can still submit to it, looked at again after a
	 * close that left it alive (see icfab_ctx_flush()): the file, set
	 * by that close, and the delay before the next look.
	 */
	struct delayed_work reach_work;
	struct file *file;		/* under fabric->lock */
	u32 reach_ms;			/* ms; under fabric->lock */
	/*
	 * Requests to reuse: a slab allocation per descriptor costs more
	 * than the rest of its path (much more with slub_debug). A stack
	 * through pool_next, not a list: with CONFIG_DEBUG_LIST every
	 * list_add() and list_del() makes a checking call, twice per
	 * descriptor here.
	 */
	spinlock_t pool_lock;		/* protects pool, nr_pool */
	struct icfab_req *pool;		/* via pool_next, or NULL */
	u32 nr_pool;
	/*
	 * A SUBMIT's buffer for batches over ICFAB_COPY_CHUNK (data.c),
	 * kept for the next one instead of a kmalloc() and kfree() of 4.5
	 * KiB per call; taken and given back with xchg()/cmpxchg(), so
	 * concurrent SUBMITs allocate their own. NULL when none is kept.
	 */
	struct icfab_batch_buf *batch_buf;
	/*
	 * The DELAY path's own lock (data.c, icfab_submit_fast()). While
	 * ->fast is set, that path may run under this lock alone, and it
	 * alone then touches the context's completion state: its clock
	 * (written; others only read it, WRITE_ONCE/READ_ONCE), its queue
	 * table and queues' inflight counts, nr_inflight, nr_done and the
	 * done list, the ring's tail and the spent stack. ->fast is set
	 * only with fabric->lock and this lock held, when no WAIT is under
	 * way; for DELAYs also only when nothing of the context can
	 * complete from the engine (nothing in flight, no receive queue),
	 * while WRITEs, which touch none of that state, may go with things
	 * in flight and receive completions coming (data.c,
	 * __icfab_ctx_fast_writes()). Anything else that takes fabric->lock
	 * for the context clears it first, under this lock, which waits for
	 * a DELAY or WRITE path under way to finish. Nests inside
	 * fabric->lock, outside pool_lock.
	 */
	spinlock_t lock;
	u8 fast;			/* ICFAB_CTX_FAST_* */
	/*
	 * Room in the engine's tables this context may promise its WRITEs
	 * outside the fabric lock (struct icfab_data, granted_events):
	 * events and transfers. Given with ICFAB_CTX_FAST_WRITE and taken
	 * back when it is cleared; under ->lock while it is set, else
	 * under fabric->lock.
	 */
	u64 credit_events;
	u32 credit_xfers;
	/*
	 * The WRITE path's accepted WRITEs, not yet in the engine: struct
	 * icfab_req chained by pool_next, in order (@accepted_last the
	 * last), their count and the engine's events they took of the
	 * credit. Under ->lock while ICFAB_CTX_FAST_WRITE is set; emptied,
	 * under the fabric lock, by __icfab_ctx_slow() once it cleared it
	 * (data.c).
	 */
	struct icfab_req *accepted;
	struct icfab_req *accepted_last;
	u32 nr_accepted;
	u64 accepted_events;

	/* Under fabric->lock: */
	struct list_head attached_node;	/* in fabric->attached */
	u32 nr_eps;			/* attached endpoints */
	u32 first_ep;			/* the first one, in dumps */
	DECLARE_BITMAP(eps, ICFAB_MAX_NODES);	/* attached, by node id */
	/*
	 * By queue id, grown on demand up to ICFAB_MAX_QUEUES: a context
	 * that drives a thousand endpoints has a queue or more on each, one
	 * with a few has a few.
	 */
	struct icfab_queue **queues;
	u32 queues_cap;			/* entries in queues */
	pid_t owner;			/* tgid of the first attacher */
	u32 id;				/* CTX_GET/CTX_EVICT's, from the first
					 * attach; 0 before */
	bool free_run;			/* never holds the engine back */
	bool dead;			/* can submit no more */
	bool evicted;			/* dead by CTX_EVICT: what it has in
					 * the engine ends -ECANCELED */
	u64 clock_ps;			/* ps */
	bool waiting;			/* in WAIT: does not hold the engine */
	bool in_wait;			/* an ICFAB_IOC_WAIT is under way, woken
					 * or not: no other WAIT may start */
	bool catchup;			/* a receiver's WAIT in step 1: holds
					 * the engine until it reaches clock_ps */
	bool wait_end;			/* ICFAB_IOC_WAIT_END came: the WAIT
					 * under way, or the next, ends */
	u32 wait_min;			/* completions WAIT needs */
	u32 nr_recvqs;			/* receive queues: a receiver if not 0 */
	/*
	 * Its ICFAB_IOC_WAIT sleeps here until ->waiting drops; only that
	 * wakes it, so it is woken where that happens and nowhere else
	 * (a fabric-wide queue woke every waiter on every engine run).
	 */
	wait_queue_head_t wq;
	u32 nr_inflight;		/* ioctl: submitted, not complete */
	u32 nr_done;			/* ioctl: complete, not reaped */
	struct list_head done;		/* of struct icfab_req */
	/* io_uring submissions */
	struct list_head ureqs;		/* of struct icfab_req, in flight */
	u32 u_inflight;			/* submitted, not complete */
	u32 u_uncounted;		/* complete, not counted by a WAIT */
	u64 u_max_finish_ps;		/* ps: latest finish among those */
	u64 u_posts;			/* io_uring WAITs posted */
	struct io_uring_cmd *uwait;	/* pending ICFAB_UCMD_WAIT, or NULL */
	struct icfab_uring_result *uwait_res;
	u32 uwait_min;
	/*
	 * Its completion ring (ICFAB_IOC_CQ_SETUP), or NULL; set once,
	 * under the lock, and gone with the context. cq_wait: the WAIT
	 * under way is an ICFAB_IOC_CQ_WAIT, which counts the ring's entries.
	 */
	struct icfab_cq *cq;
	bool cq_wait;
	/*
	 * Requests whose completions went into the ring, on their way back
	 * to the pool: under the fabric lock, which posting them holds
	 * already, and handed to the pool a batch at a time (one pool lock
	 * per batch, not per descriptor). Via pool_next, spent_last its
	 * last; NULL when empty.
	 */
	struct icfab_req *spent;
	struct icfab_req *spent_last;
	u32 nr_spent;
};
/* icfab_ctx.fast: what may go under the context's own lock. */
#define ICFAB_CTX_FAST_DELAY	0x1	/* DELAYs (nothing in flight) */
#define ICFAB_CTX_FAST_WRITE	0x2	/* timing-only WRITEs, accepted */
struct icfab_ctx *icfab_ctx_create(struct icfab_fabric *fabric);
void icfab_ctx_destroy(struct icfab_ctx *ctx);
int icfab_ctx_evict(struct icfab_fabric *fabric, u32 id);
u32 icfab_ctx_state(const struct icfab_ctx *ctx);
long icfab_ioctl_attach(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_queue_create(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_queue_destroy(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_submit(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_wait(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_cq_setup(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_cq_wait(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_wait_end(struct icfab_ctx *ctx);
long icfab_submit_descs(struct icfab_ctx *ctx,
			const struct icfab_desc __user *udescs, u32 nr,
			u32 flags);
void icfab_ctx_flush(struct icfab_ctx *ctx, struct file *file);
int icfab_data_init(void);
void icfab_data_exit(void);
/* Events and transfers an engine starts with; debugfs sets them for tests. */
extern u32 icfab_engine_events_first;
extern u32 icfab_engine_xfers_first;
/* debugfs: the engine's tables and the credit (icfab_data_room_stat()). */
enum icfab_room_stat {
	ICFAB_ROOM_EVENTS_CAP,
	ICFAB_ROOM_XFERS_CAP,
	ICFAB_ROOM_GRANTED_EVENTS,
	ICFAB_ROOM_GRANTED_XFERS,
};
u64 icfab_data_room_stat(struct icfab_fabric *fabric, enum icfab_room_stat s);
/* With the fabric's lock held: */
u64 icfab_data_now(struct icfab_fabric *fabric);
void icfab_data_kick(struct icfab_fabric *fabric);
int icfab_data_retopo(struct icfab_fabric *fabric, struct icfab_topo *t);
/* for uring.c */
int icfab_uring_submit(struct icfab_ctx *ctx, const struct icfab_desc *dd,
		       u64 cqe_addr, struct io_uring_cmd *cmd);
int icfab_uring_wait(struct icfab_ctx *ctx, u32 min, struct io_uring_cmd *cmd);
void icfab_uring_cancel(struct icfab_ctx *ctx, struct io_uring_cmd *cmd);
/* for region.c and circuit_data.c; with the fabric's lock held */
bool icfab_ctx_attached_to(struct icfab_ctx *ctx, u32 endpoint);

/* cq.c: a context's completion ring */
struct icfab_cq;
struct icfab_cq *icfab_cq_create(u32 *entries);
void icfab_cq_destroy(struct icfab_cq *cq);
void icfab_cq_layout(const struct icfab_cq *cq, struct icfab_cq_setup *s);
/*
 * The ring itself, here rather than in cq.c so that posting a completion,
 * once per descriptor, is inline in data.c.
 */
struct icfab_cq {
	struct icfab_cq_ring *ring;	/* vmalloc_user(), mapped by userspace */
	struct icfab_cqe *cqes;		/* in the same allocation */
	size_t size;			/* bytes, whole pages */
	u32 mask;			/* entries - 1 */
	u32 tail;			/* ours; the shared one is a copy */
	u32 overflow;			/* ours likewise */
};

/*
 * Entries written and not yet consumed. Userspace's head is only read:
 * one further than the ring holds behind our tail (garbage, or a head
 * moved past the tail) makes the ring full, never more than full.
 */
static inline u32 icfab_cq_ready(const struct icfab_cq *cq)
{
	/* Pairs with userspace's store-release: it is done with them. */
	u32 head = smp_load_acquire(&cq->ring->head);
	u32 used = cq->tail - head;

	return min(used, cq->mask + 1);
}

/*
 * The slot at the tail, for the caller to fill and then publish with
 * icfab_cq_publish(); NULL when the ring is full: the caller keeps the
 * completion (on the WAIT list) and it is counted as an overflow. Filled
 * in place, a completion is not built elsewhere first and copied in.
 * Callers serialise (the fabric lock, or the context's own on its DELAY
 * path).
 */
static inline struct icfab_cqe *icfab_cq_slot(struct icfab_cq *cq)
{
	if (icfab_cq_ready(cq) > cq->mask) {
		cq->overflow++;
		WRITE_ONCE(cq->ring->overflow, cq->overflow);
		return NULL;
	}
	return &cq->cqes[cq->tail & cq->mask];
}

/* The slot icfab_cq_slot() gave, filled: userspace may reap it. */
static inline void icfab_cq_publish(struct icfab_cq *cq)
{
	cq->tail++;
	/* The entry before the tail that publishes it. */
	smp_store_release(&cq->ring->tail, cq->tail);
}

int icfab_cq_mmap(struct icfab_cq *cq, struct icfab_ctx *ctx,
		  struct vm_area_struct *vma);

/* uring.c: io_uring passthrough */
/* An io_uring command's result, on its way to the submitter's task. */
struct icfab_uring_result {
	struct icfab_cqe cqe;		/* SUBMIT: written to cqe_addr */
	u64 cqe_addr;			/* user pointer, or 0 */
	s32 res;			/* cqe->res */
	u64 res2;			/* cqe->big_cqe[0] */
	atomic_t *holds;		/* the context's count of commands */
	/* Called once posted, in the task work, before the CQE. */
	void (*release)(struct icfab_uring_result *ures);
};
int icfab_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);
void icfab_uring_post(struct io_uring_cmd *cmd,
		      struct icfab_uring_result *ures);
void icfab_uring_set_req(struct io_uring_cmd *cmd, struct icfab_req *req);
struct icfab_req *icfab_uring_get_req(struct io_uring_cmd *cmd);
bool icfab_uring_posted(struct io_uring_cmd *cmd);

/* region.c: device memory */
struct icfab_region;
int icfab_region_init(struct icfab_fabric *fabric);
void icfab_region_exit(struct icfab_fabric *fabric);
void icfab_regions_ctx_init(struct xarray *regions);
void icfab_regions_ctx_destroy(struct icfab_fabric *fabric,
			       struct xarray *regions);
long icfab_ioctl_region_alloc(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_region_free(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_region_export(struct icfab_ctx *ctx, void __user *uarg);
long icfab_ioctl_region_import(struct icfab_ctx *ctx, void __user *uarg);
int icfab_region_mmap(struct icfab_ctx *ctx, struct vm_area_struct *vma);
struct icfab_region *icfab_region_get_local(struct xarray *regions,
					    u32 handle);
struct icfab_region *icfab_region_get_key(struct icfab_fabric *fabric,
					  u64 key);
bool icfab_region_write_take(struct icfab_ctx *ctx,
			     const struct icfab_desc *dd, u32 endpoint,
			     struct icfab_region **local,
			     struct icfab_region **remote, u32 *dst);
bool icfab_region_read_take(struct icfab_ctx *ctx,
			    const struct icfab_desc *dd, u32 endpoint,
			    struct icfab_region **local,
			    struct icfab_region **remote, u32 *src);
void icfab_region_put(struct icfab_region *r);
u32 icfab_region_endpoint(const struct icfab_region *r);
u32 icfab_region_tier_link(const struct icfab_region *r);
u64 icfab_region_size(const struct icfab_region *r);
u32 icfab_region_access(const struct icfab_region *r);
void icfab_region_copy(struct icfab_region *dst, u64 dst_off,
		       struct icfab_region *src, u64 src_off, u64 len);

/* topo.c; all with the fabric's lock held */
struct icfab_topo *icfab_topo_create(void);
void icfab_topo_destroy(struct icfab_topo *t);
struct icfab_topo *icfab_topo_clone(const struct icfab_topo *src);
struct icfab_mnode *icfab_topo_node(struct icfab_topo *t, u32 id);
struct icfab_mlink *icfab_topo_link(struct icfab_topo *t, u32 id);
int icfab_topo_node_add(struct icfab_topo *t, u32 id,
			const struct icfab_mnode *tmpl);
int icfab_topo_node_del(struct icfab_topo *t, u32 id);
int icfab_topo_link_add(struct icfab_topo *t, u32 id,
			const struct icfab_mlink *tmpl);
int icfab_topo_link_del(struct icfab_topo *t, u32 id);
int icfab_topo_routes_set(struct icfab_topo *t, u32 node, u32 dst_first,
			  const u16 *ports, u32 n);
int icfab_topo_sets_set(struct icfab_topo *t, u32 node, u32 first,
			const struct icfab_route_set *sets, u32 n);
int icfab_topo_validate_commit(struct icfab_topo *t,
			       struct icfab_topo_err *err);
u64 icfab_topo_mem_bytes(const struct icfab_topo *t);
int icfab_topo_live_check(const struct icfab_topo *old,
			  const struct icfab_topo *new, u32 *node);
int icfab_topo_set_caps(struct icfab_topo *t, u32 nodes_cap, u32 links_cap);

/* commit.c: the commit, for netlink and debugfs */
/*
 * Why a commit was refused: a static message (or NULL) and, if
 * has_cookie, the object at fault. Netlink turns it into the extack
 * (message and cookie); debugfs logs the message.
 */
struct icfab_commit_err {
	const char *msg;
	bool has_cookie;
	struct icfab_err_cookie cookie;
};
void icfab_commit_err_set(struct icfab_commit_err *cerr, const char *msg,
			  u32 obj, u32 id, u32 id2);
struct icfab_topo *__icfab_fabric_commit(struct icfab_fabric *fabric,
					 struct icfab_topo *t,
					 struct icfab_commit_err *cerr);

/* circuit.c: circuits and color tables; __ functions with the lock held */
struct icfab_circuit {
	u32 id;
	u32 color;
	u32 owner_pid;			/* 0: none */
	u32 owner_uid;
	bool charged;			/* to owner_uid's max_uid_circuits */
	u32 nr_recv_uids;		/* granted CIRCUIT_RECV besides owner */
	u32 recv_uids[ICFAB_CIRCUIT_MAX_RECV_UIDS];
	u32 src;			/* endpoint node id */
	u32 nr_dsts;
	u32 nr_routers;
	/* Over the committed routes; NULL: a destination has none */
	struct icfab_circuit_tree *tree;
	struct list_head binds;		/* of ICFAB_IOC_CIRCUIT_RECV
					 * (kmod/circuit_data.c) */
	u32 nodes[];			/* nr_dsts destinations, then
					 * nr_routers routers */
};

/*
 * A circuit's links for icfab_engine_submit_tree(), built from the
 * committed routing tables and rebuilt by every commit. Transfers in
 * the engine hold references: neither a commit nor CIRCUIT_DEL frees
 * the array the engine is following.
 */
struct icfab_circuit_tree {
	struct kref ref;
	/* passed icfab_engine_tree_check() on it, or NULL; under lock */
	const struct icfab_mtopo *checked;
	struct icfab_engine_tree t;
	u32 links[];			/* link ids, t.nr_links */
};
void icfab_circuits_init(struct icfab_fabric *fabric);
void icfab_circuits_exit(struct icfab_fabric *fabric);
struct icfab_circuit *icfab_circuit_alloc(u32 nr_dsts, u32 nr_routers);
int __icfab_circuit_insert(struct icfab_fabric *fabric, struct icfab_circuit *c,
			   struct netlink_ext_ack *extack);
struct icfab_circuit *__icfab_circuit_remove(struct icfab_fabric *fabric,
					     u32 id);
u64 __icfab_colors_used(struct icfab_fabric *fabric, u32 node);
int icfab_circuits_commit(struct icfab_fabric *fabric, struct icfab_topo *t,
			  struct icfab_commit_err *cerr);
void icfab_circuit_free(struct icfab_circuit *c);
void icfab_circuit_tree_put(struct icfab_circuit_tree *tree);

/* circuit_data.c: circuits in the data path */
struct icfab_circuit_xfer;
long icfab_ioctl_circuit_recv(struct icfab_ctx *ctx, void __user *uarg);
void icfab_circuit_recv_ctx_gone(struct icfab_ctx *ctx);
void icfab_circuit_recv_prune(struct icfab_ctx *ctx);
void icfab_circuit_binds_release(struct icfab_circuit *c);
int icfab_circuit_desc_check(struct icfab_ctx *ctx,
			     const struct icfab_desc *dd, u32 src,
			     struct icfab_region **local,
			     struct icfab_circuit_xfer **cxp);
int icfab_circuit_xfer_submit(struct icfab_fabric *fabric,
			      struct icfab_engine *e,
			      struct icfab_circuit_xfer *cx, u32 src,
			      u64 bytes, u64 at, u64 key, u32 *xfer);
void icfab_circuit_xfer_copy(const struct icfab_circuit_xfer *cx,
			     struct icfab_region *src, u64 src_off, u64 len);
void icfab_circuit_xfer_put(struct icfab_circuit_xfer *cx);
u64 icfab_circuit_xfer_events(const struct icfab_circuit_xfer *cx, u64 bytes,
			      u32 segment_size);
void icfab_circuit_xfer_done(struct icfab_fabric *fabric, u32 xfer_id);
void icfab_circuit_data_exit(struct icfab_fabric *fabric);

/* genl.c */
void icfab_set_cookie(struct netlink_ext_ack *extack, u32 obj, u32 id, u32 id2);
int icfab_genl_init(void);
void icfab_genl_exit(void);
void icfab_genl_notify_fabric(struct icfab_fabric *fabric);
struct nlattr **icfab_genl_dump_attrs(struct netlink_callback *cb);
struct icfab_fabric *icfab_genl_fabric(struct nlattr **attrs,
				       struct netlink_ext_ack *extack);
extern struct genl_family icfab_genl_family;
void icfab_genl_multicast_events(struct sk_buff *msg);

/* genl_topo.c: policies and handlers, listed in genl.c's ops table */
struct icfab_topo *icfab_lock_staged(struct icfab_fabric *fabric,
				     struct genl_info *info);
extern const struct nla_policy icfab_node_new_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_node_del_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_node_get_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_link_new_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_link_set_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_link_del_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_link_get_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_route_set_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_route_sets_set_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_route_get_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_commit_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_abort_policy[ICFAB_A_MAX + 1];
int icfab_genl_node_new_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_node_del_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_node_get_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_node_get_dumpit(struct sk_buff *skb,
			       struct netlink_callback *cb);
int icfab_genl_link_new_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_link_set_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_link_del_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_link_get_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_link_get_dumpit(struct sk_buff *skb,
			       struct netlink_callback *cb);
int icfab_genl_route_set_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_route_sets_set_doit(struct sk_buff *skb,
				   struct genl_info *info);
int icfab_genl_route_get_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb);
int icfab_genl_commit_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_abort_doit(struct sk_buff *skb, struct genl_info *info);

/* genl_circuit.c: policies and handlers, listed in genl.c's ops table */
extern const struct nla_policy icfab_circuit_new_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_circuit_del_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_circuit_get_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_color_get_policy[ICFAB_A_MAX + 1];
int icfab_genl_circuit_new_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_circuit_del_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_circuit_get_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_circuit_get_dumpit(struct sk_buff *skb,
				  struct netlink_callback *cb);
int icfab_genl_color_get_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb);

/* genl_stats.c; attach and fold with the fabric's lock held */
void icfab_stats_attach(struct icfab_fabric *fabric, struct icfab_engine *e);
void icfab_stats_fold(struct icfab_fabric *fabric, struct icfab_engine *e);
void icfab_stats_keep(struct icfab_fabric *fabric);
void icfab_stats_exit(void);
int icfab_stats_put_held(struct sk_buff *skb, struct icfab_fabric *fabric);
extern const struct nla_policy icfab_stats_get_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_stats_reset_policy[ICFAB_A_MAX + 1];
int icfab_genl_stats_get_doit(struct sk_buff *skb, struct genl_info *info);
int icfab_genl_stats_get_start(struct netlink_callback *cb);
int icfab_genl_stats_get_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb);
int icfab_genl_stats_reset_doit(struct sk_buff *skb, struct genl_info *info);

/* genl_ctx.c */
extern const struct nla_policy icfab_ctx_get_policy[ICFAB_A_MAX + 1];
extern const struct nla_policy icfab_ctx_evict_policy[ICFAB_A_MAX + 1];
int icfab_genl_ctx_get_dumpit(struct sk_buff *skb,
			      struct netlink_callback *cb);
int icfab_genl_ctx_evict_doit(struct sk_buff *skb, struct genl_info *info);

/* trace.c */
void icfab_trace_engine(struct icfab_fabric *fabric, struct icfab_engine *e);
void icfab_trace_circuit(struct icfab_fabric *fabric,
			 const struct icfab_circuit *c, bool alloc);
void icfab_trace_link_states(struct icfab_fabric *fabric,
			     const struct icfab_topo *old,
			     const struct icfab_topo *new);
void icfab_trace_engine_held(struct icfab_fabric *fabric,
			     const struct icfab_engine *e);

/* debugfs.c */
extern u32 icfab_uring_done_delay_ms;	/* ms; test-only, see uring.c */
extern u32 icfab_wait_wake_delay_ms;	/* ms; test-only, see data.c */
void icfab_debugfs_init(struct icfab_fabric **fabrics, unsigned int n);
/*
 * The data path's steps on the parallel engine (par.c; the condition is
 * data.c's, docs/ARCHITECTURE.md, "The parallel engine in the kernel").
 */
struct icfab_par_data;
/* engine_par_min_endpoints goes no lower: smaller fabrics never log a step. */
#define ICFAB_PAR_MIN_ENDPOINTS		64
unsigned int icfab_par_threads(void);
unsigned int icfab_par_min_endpoints(void);
int icfab_par_step(struct icfab_par_data **pdp, struct icfab_engine *e,
		   const u32 *ids, u32 n, icfab_engine_complete_fn complete,
		   void *arg);
void icfab_par_data_free(struct icfab_par_data *pd);

/* debugfs engine_check: the parallel engine against the sequential (par.c). */
extern const struct file_operations icfab_check_fops;
void icfab_debugfs_exit(void);

#endif /* _ICFAB_H */
