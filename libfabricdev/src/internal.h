/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
#ifndef FDEV_INTERNAL_H
#define FDEV_INTERNAL_H

#include <liburing.h>
#include <pthread.h>
#include <stdint.h>

#include <linux/icfab.h>

#include "array.h"
#include "fabricdev.h"
#include "fabricdev_test.h"
#include "plan.h"

/*
 * Receive-side completions (docs/RECV_ABI, uapi ICFAB_F_RECV_NOTIFY), for
 * building against a uapi header from before them.
 */
#ifndef ICFAB_F_RECV_NOTIFY
#define ICFAB_F_RECV_NOTIFY	(1ULL << 8)
#define ICFAB_QUEUE_F_RECV	(1U << 0)
#define ICFAB_DESC_F_NOTIFY	(1U << 1)
#endif

#define FDEV_TAG_INTERNAL	0xfdefdefdefdefdefULL

/* Ranks of a communicator, at most (issue 14: EP1024, the UALink pod). */
#define FDEV_MAX_RANKS		1024
#define FDEV_FAILED_WORDS	(FDEV_MAX_RANKS / 64)
/* Rounds of a dissemination barrier over FDEV_MAX_RANKS ranks. */
#define FDEV_BAR_ROUNDS		10

struct fdev_slot {
	struct fdev_cqe cqe;		/* the module writes it (cqe_addr) */
	uint64_t tag;
	uint32_t queue;
	int next;			/* free list */
};

struct fdev {
	int fd;
	unsigned int flags;
	uint64_t features;
	char path[64];
	uint64_t clock_ps;		/* the context's clock, as last seen */
	unsigned int inflight;		/* posted, not yet in the stash */
	struct fdev_cqe *stash;		/* reaped, not yet returned */
	unsigned int stash_head, stash_nr;	/* FIFO from head */
	size_t stash_cap;
	/* io_uring */
	int uring;
	struct io_uring ring;
	struct fdev_slot **slot_blocks;	/* never move: the module writes them */
	unsigned int nr_slots;
	int free_slot;
	unsigned int waits_inflight;
	unsigned int uncounted_reaped;	/* reaped, no WAIT counted them */
	unsigned int counted_unreaped;	/* counted by a WAIT, still in ring */
	unsigned int rejected;
	/* The module's max_ctx_descs (0: none); re-read when stale. */
	uint32_t max_descs;
	int cap_stale;
	/* Queues this context made: depth and descriptors not yet reaped. */
	uint32_t *qdepth, *qinfl;	/* [nq], depth 0: no such queue */
	unsigned int nq;
	/* Its receive queue (ICFAB_QUEUE_F_RECV): id + 1, 0 for none. */
	uint32_t recv_queue;
	/*
	 * The completion ring (ICFAB_F_CQ_RING), mapped, or NULL: the
	 * ioctl path then submits with ICFAB_SUBMIT_F_CQ, polls the ring
	 * and sleeps in ICFAB_IOC_CQ_WAIT.
	 */
	struct icfab_cq_ring *cq;
	struct icfab_cqe *cq_cqes;
	size_t cq_size;
	uint32_t cq_overflow;		/* ring->overflow, as last seen */
};

/* Create @dev's receive queue on @endpoint (ioctl path only). */
int fdev_recv_queue_create(struct fdev *dev, uint32_t endpoint,
			   uint32_t depth);
static inline int fdev_cqe_received(const struct fdev *dev,
				    const struct fdev_cqe *cqe)
{
	return dev->recv_queue && cqe->queue == dev->recv_queue - 1;
}

int fdev_reap_tag(struct fdev *dev, uint64_t tag, struct fdev_cqe *out);
/*
 * Wait until @min completions are in the stash, taking none (then
 * fdev_wait() takes them without waiting). A large @min is one WAIT of
 * the module for all of it on the ring and ioctl paths, which is what
 * lets the module run a step on its parallel engine.
 */
int fdev_wait_stash(struct fdev *dev, unsigned int min,
		    unsigned int timeout_ms);
/* A receiver's WAIT for one completion, bounded; the module's clock. */
int fdev_idle_wait(struct fdev *dev, unsigned int timeout_ms);
/* End another thread's fdev_idle_wait() (-ECANCELED), or the next one. */
int fdev_idle_end(struct fdev *dev);
int fdev_sync_clock(struct fdev *dev);

struct fdev_shm;
struct fdev_paths;

/*
 * Zero copy (zc.c): where a rank's send ([0]) and recv ([1]) areas of
 * the running collective are, as its peers address them: key 0 is its
 * workspace, where the plan put them.
 */
struct fdev_zc_area {
	uint64_t key[2], off[2];
};

/* A local rank's areas: addresses for its actions, region handles. */
struct fdev_zc_local {
	struct fdev_plan_map m;
	uint32_t handle[2];
};

struct fdev_comm {
	unsigned int nranks;
	unsigned int first, nlocal;	/* local ranks */
	unsigned int node_size;
	/*
	 * FDEV_ALGO_RINGS (rings.c): @nrings directed rings over the cables
	 * fdev_comm_set_links() gave, as @nrings / 2 cycles [][nranks].
	 */
	uint32_t *cycles;
	unsigned int nrings;
	unsigned int flags;
	uint32_t seg;			/* the fabric's segment size, bytes */
	int multi;			/* one rank per process, shm rendezvous */
	/*
	 * Independent processes, device memory, virtual time, without the
	 * proxy: each rank's WRITEs notify their target's receive queue
	 * (ICFAB_F_RECV_NOTIFY), and a step ends when a rank has its own
	 * completions and every one sent to it (coll.c).
	 */
	int notify;
	uint32_t timeout_ms;		/* notify: a step's wait, at most */
	/*
	 * Notify: the barrier's epoch, and its messages that came ahead of
	 * their round ([epoch parity][round]); receive completions of the
	 * next step that came while this rank was still in a barrier.
	 */
	uint32_t bar_epoch;
	uint32_t bar_got[2][FDEV_BAR_ROUNDS];
	struct fdev_cqe *early;
	unsigned int nearly;
	size_t early_cap;
	/*
	 * Notify: between operations the rank is idle (comm.c): a thread
	 * of its own sits in a receiver's WAIT, so its context does not
	 * hold the engine back while the process waits on the host.
	 * @idle_ps is its clock when it went idle. With ICFAB_F_WAIT_END
	 * (@idle_end) the thread leaves when its WAIT is ended
	 * (@idle_ended); otherwise it polls @idle_stop.
	 */
	pthread_t idle_thread;
	void *idle_stack;		/* its stack, mapped at the first start */
	int idle_on, idle_stop, idle_err, idle_end, idle_ended;
	uint64_t idle_ps;
	/*
	 * Timing only, independent processes, virtual time: the context
	 * has a receive queue that nobody notifies, only so that its idle
	 * thread can sit in a receiver's WAIT while the process meets the
	 * others on the host (fdev_shm_barrier()), instead of leaving the
	 * fabric and attaching again.
	 */
	int idle_meet;
	/*
	 * A sub-communicator (fdev_comm_init_sub()): the communicator whose
	 * context, queue, receive queue and idle thread it shares; NULL
	 * for one that owns its context.
	 */
	struct fdev_comm *parent;
	/*
	 * Route leads (routes.c, lead.c): [nranks][nranks] rounds by which
	 * an interleaved all-to-all posts a pair's pieces ahead; NULL
	 * where the routes could not be read. Read at the first use.
	 */
	uint16_t *lead;
	/*
	 * The routes between ranks and their links' costs (cost.c, read
	 * with the leads), for "auto"; NULL where they could not be read.
	 */
	struct fdev_paths *paths;
	int fabric_tried;
	/* lead and paths' arrays are in the job's file (routes.c) */
	int fabric_shared;
	/*
	 * What "auto" chose lately (coll.c): by operation, bytes and root,
	 * so that a training loop's same collective is costed once.
	 */
	struct fdev_auto_memo {
		uint64_t bytes;
		uint32_t op, root;
		int algo;
	} auto_memo[8];
	unsigned int auto_next;
	enum fdev_algo last_algo;	/* what the last collective ran */
	struct fdev *dev;
	uint32_t *ep;			/* [nranks] endpoint of each rank */
	uint32_t *queue;		/* [nlocal] */
	struct fdev_region *ws;		/* [nlocal] workspaces */
	uint64_t ws_bytes;
	/*
	 * Independent processes (not through a proxy): the smallest
	 * ws_bytes any rank of the job gave, read from the job's file at
	 * the rendezvous, so that every rank computes the same all-to-all-v
	 * slot size alone (coll.c). 0 elsewhere.
	 */
	uint64_t ws_min;
	uint64_t *rkey;			/* [nranks] workspace keys */
	uint64_t failed[FDEV_FAILED_WORDS];	/* excluded ranks (bitmap) */
	uint64_t last_ps;
	int a2av_slots;			/* the last all-to-all-v went in slots */
	struct fdev_shm *shm;
	char path[64];
	/*
	 * Proxy (independent processes, device memory, virtual time): rank
	 * 0 drives every rank from one context (@px, a local communicator)
	 * and the others map their workspace through its file, passed over
	 * a Unix socket. See comm.c.
	 */
	int proxy;
	struct fdev_comm *px;		/* rank 0 only */
	int px_fd;			/* the others: rank 0's device file */
	/*
	 * Multicast circuits (circuit.c): [nranks * fdev_mc_parts()] ids of
	 * the circuits from each local rank to every other rank (part j:
	 * the j-th FDEV_MC_MAX_DSTS of them), 0 where none is open; NULL
	 * until the first multicast plan needs them. Only the sources of
	 * the plan running hold theirs once colours run short.
	 */
	uint32_t *mc;
	/* Sources per multicast wave that fit the colours (moe_mc.c); 0: all. */
	unsigned int mc_wave;
	/*
	 * The trace (trace.c): the public call running (@op_depth deep,
	 * nested calls are part of it), the caller's label, and the fabric
	 * time its plans spanned so far (@op_ran: any).
	 */
	const char *op;
	unsigned int op_depth;
	int op_ran;
	uint64_t op_t0, op_t1;
	char label[32];
	/*
	 * Zero copy (zc.c): the regions the caller registered, the bytes
	 * of callers' buffers staged and used in place, and while a
	 * collective runs on caller buffers (@zc_lo set): its layout,
	 * every rank's areas (@zc, [nranks]; a notify rank learns the
	 * others' when it resumes) and the local ranks' (@zc_loc, [nlocal]).
	 */
	struct fdev_region *reg;
	unsigned int nreg;
	size_t reg_cap;
	uint64_t bytes_staged, bytes_in_place;
	const struct fdev_coll_layout *zc_lo;
	struct fdev_zc_area *zc;
	struct fdev_zc_local *zc_loc;
	/* An all-to-all-v's slot step from a registered send buffer. */
	const struct fdev_zc_slots *zc_slots;
};

static inline int fdev_rank_failed(const struct fdev_comm *c, unsigned int r)
{
	return r < FDEV_MAX_RANKS && (c->failed[r / 64] >> (r % 64)) & 1;
}

/*
 * The trace (trace.c): a public call begins and ends (fdev_op_end()
 * returns @err, after writing its line if tracing); a plan of it ran on
 * the context's clock from @t0 to @t1.
 */
void fdev_op_begin(struct fdev_comm *c, const char *op);
void fdev_op_span(struct fdev_comm *c, uint64_t t0, uint64_t t1);
int fdev_op_end(struct fdev_comm *c, int err);
/* Run a plan on the communicator (coll.c). */
int fdev_plan_run(struct fdev_comm *c, const struct fdev_plan *p);
/*
 * Run a gated plan (coll.c): step 0 at once, step s once everything that
 * feeds it (@feeds, by the order the transfers were added: up to two
 * steps each, one per 32-bit half) has landed,
 * after @ready. Only where one context drives every rank
 * (fdev_plan_gated_ok()); -EOPNOTSUPP otherwise.
 */
#define FDEV_PLAN_NO_GATE	UINT32_MAX
int fdev_plan_gated_ok(const struct fdev_comm *c);
int fdev_plan_run_gated(struct fdev_comm *c, const struct fdev_plan *p,
			uint32_t nsteps, const uint64_t *feeds,
			int (*ready)(struct fdev_comm *c, uint32_t step,
				     void *arg),
			void *arg);
/* FDEV_INTERLEAVE: cut a direct all-to-all plan piece-major (coll.c). */
int fdev_comm_interleave(struct fdev_comm *c, struct fdev_plan *p);
/*
 * The all-to-all-v in slots (coll.c): each source's orders from its own
 * row and the routes; with @whole (every rank's pieces from every rank's
 * counts), the step played out too.
 */
int fdev_comm_interleave_v(struct fdev_comm *c, struct fdev_plan *p, int whole);
/* The communicator's route leads, read at the first call, or NULL. */
const uint16_t *fdev_comm_leads(struct fdev_comm *c);
/* Its paths for "auto" (cost.h), read with the leads, or NULL. */
const struct fdev_paths *fdev_comm_paths(struct fdev_comm *c);
/* Frees them, where they are not in the job's file (fdev_job_fabric()). */
void fdev_comm_fabric_free(struct fdev_comm *c);
/*
 * Bytes of the job's file for the fabric's routes as routes.c shares
 * them, for a job of @nranks (0: none; past the ranks that have leads).
 */
size_t fdev_fabric_share_bytes(unsigned int nranks);
/*
 * Independent processes: the fabric read once per job. 1: the caller is
 * the one to read it, into *@area (*@len bytes at most), and must then
 * call fdev_job_fabric_done() with the bytes it wrote (0: it could not,
 * every rank reads its own). 0: another rank has, *@area holds *@len
 * bytes of it, for as long as the communicator lives. -ENOENT: read your
 * own (one process, no area, or the reader failed, died or left).
 */
int fdev_job_fabric(struct fdev_comm *c, void **area, size_t *len);
void fdev_job_fabric_done(struct fdev_comm *c, size_t len);
/* Local data staging into / out of the workspace of local rank @l. */
void *fdev_ws_addr(struct fdev_comm *c, unsigned int l, uint64_t off);
int fdev_comm_timing_only(const struct fdev_comm *c);
/*
 * A timing-only WRITE @d of the communicator is bound for @dst_off in
 * its destination's workspace: said where the module takes it
 * (ICFAB_F_TIMING_OFFSETS), so that it is sprayed over parallel links as
 * the same WRITE with memory would be (docs/TIMING.md, "Parallel
 * cables").
 */
void fdev_comm_timing_at(const struct fdev_comm *c, struct fdev_desc *d,
			 uint64_t dst_off);
/* Out-of-band barrier of a multi-process communicator; @val in, max out. */
int fdev_shm_barrier(struct fdev_comm *c, uint64_t *val);
/*
 * fdev_plan_init() for @c's collectives: an independent process's plan
 * keeps only its own rank's part (fdev_plan_only()), a proxy's all.
 */
void fdev_comm_plan_init(const struct fdev_comm *c, struct fdev_plan *p);
/*
 * Timing-only independent processes: rank @rank's row of the current
 * host exchange, @bytes at most, in the job's shared file; NULL where
 * there is none (one process, data, or a row too large). A rank writes
 * its own row before an operation that meets the others at least once
 * (a plan of one step or more), reads the others' after it, and then
 * calls fdev_host_rows_done(): rows alternate between two areas, and
 * the next operation's meeting keeps anyone from writing the area a
 * slower rank still reads.
 */
void *fdev_host_row(struct fdev_comm *c, unsigned int rank, size_t bytes);
void fdev_host_rows_done(struct fdev_comm *c);
/*
 * Timing-only independent processes: a table of @bytes for the whole
 * job, in a file of its own named by the current host exchange (the
 * same in every rank), mapped shared; NULL where there is none (as
 * fdev_host_row()) or it could not be made. Every rank maps it before
 * the exchange's meeting and writes only its own part; after it, all
 * read it in place, and fdev_job_table_unlink() (before
 * fdev_host_rows_done(), any rank, as often as it likes) removes the
 * name: every rank has mapped it by then. munmap() frees it. A file
 * left by an earlier job of the same name is reused; its bytes are
 * the writers' to clear.
 */
void *fdev_job_table(struct fdev_comm *c, size_t bytes);
void fdev_job_table_unlink(struct fdev_comm *c);
/*
 * Notify communicators: a barrier of NOTIFY WRITEs through the fabric
 * (coll.c), with no host wait and no timed WAIT, so that every clock
 * move is the workload's.
 */
int fdev_notify_barrier(struct fdev_comm *c);
/*
 * Notify communicators between operations (comm.c): fdev_notify_idle()
 * stops holding the engine back; fdev_notify_resume(), at the start of
 * the next operation of every rank, meets the others on the host and
 * holds it again from the latest of their clocks.
 */
int fdev_notify_idle(struct fdev_comm *c);
int fdev_notify_resume(struct fdev_comm *c);
/*
 * Destinations of one circuit (ICFAB_CIRCUIT_MAX_DSTS: a circuit's
 * netlink message fits one dump skb); a source with more other ranks
 * holds one circuit per part of them.
 */
#define FDEV_MC_MAX_DSTS	256U
static inline unsigned int fdev_mc_parts(unsigned int nranks)
{
	return nranks > 1 ? (nranks - 2) / FDEV_MC_MAX_DSTS + 1 : 1;
}
/*
 * Hold the circuits of every source that multicasts in @p (closing other
 * sources' first); close them all. -ENOSPC: they do not fit the routers'
 * colours at once, and nothing is left open.
 */
int fdev_comm_circuits_open(struct fdev_comm *c, const struct fdev_plan *p);
void fdev_comm_circuits_close(struct fdev_comm *c);
/* Run @p on rank 0's context for everyone (proxy communicators). */
int fdev_proxy_run(struct fdev_comm *c, const struct fdev_plan *p);
/*
 * Zero copy (zc.c). fdev_zc_begin(): a collective of layout @lo on the
 * local ranks' buffers (@send, @recv at the layout's strides, @slen /
 * @rlen bytes of them used, NULL: the layout's lengths); every local
 * rank whose buffer lies in a registered region uses it in place
 * (@alias: send and recv may be the same buffer). Returns 1 when it
 * set up the collective's areas (fdev_zc_end() after it), 0 when the
 * communicator or @p cannot (everything staged), or an error.
 */
int fdev_zc_begin(struct fdev_comm *c, const struct fdev_plan *p,
		  const struct fdev_coll_layout *lo, const void *send,
		  void *recv, const uint64_t *slen, const uint64_t *rlen,
		  int alias);
void fdev_zc_end(struct fdev_comm *c);
/* Where plan offset @off of local rank @l is: its region and offset. */
void fdev_zc_local(const struct fdev_comm *c, unsigned int l, uint64_t off,
		   uint32_t *handle, uint64_t *loff);
/* ... and of rank @r, as its peers write it: key and offset. */
void fdev_zc_remote(const struct fdev_comm *c, unsigned int r, uint64_t off,
		    uint64_t *key, uint64_t *roff);
void fdev_zc_free(struct fdev_comm *c);
/*
 * The all-to-all-v in slots by processes (coll.c, slots_procs_notify()),
 * for its one local rank: pair d's count and bytes at @base + d *
 * @stride of the plan's offsets, the count (8 bytes) first. Where the
 * send buffer is in a registered region (@handle, the buffer at
 * @src_off in it, pair d's bytes @before[d] into the buffer), a piece
 * that starts @first[d] bytes or more into pair d's bytes is read there,
 * in place; what comes before (the count and the bytes riding with it
 * in the pair's first piece) is staged in the workspace. @recv_room:
 * the bytes from the recv buffer to its region's end, 0 when it is in
 * none; its key and offset go to the others with the areas (@zc_lo).
 */
struct fdev_zc_slots {
	uint64_t base, stride, src_off, recv_room;
	const uint64_t *before, *first;
	uint32_t handle, n;
};
/*
 * Set @zs up for the run of the slot step (fdev_zc_end() after it):
 * 1 when every rank's areas are exchanged at the step's start (this
 * rank's recv region, if any, is then known to all), 0 when they are
 * not (nothing in place this time).
 */
int fdev_zc_slots_begin(struct fdev_comm *c, struct fdev_zc_slots *zs,
			const void *send, uint64_t slen, const void *recv);

#endif
