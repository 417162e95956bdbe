/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libfabricdev: what MoE runtimes link to use an icfab fabric.
 *
 * Layers, each usable alone:
 *   device/endpoint   fdev_open(3)    open /dev/icfabN, attach endpoints
 *   regions           fdev_region(3)  device memory: alloc+map, export, import
 *   queues            fdev_queue(3)   post descriptors, poll, wait, clock
 *   communicator      fdev_comm(3)    ranks, rendezvous, region keys, barrier
 *   collectives       fdev_coll(3)    all-to-all(v), all-reduce, ...
 *   MoE               fdev_moe(3)     layout, dispatch, combine
 *
 * Every function that can fail returns 0 (or a count) on success and a
 * negative errno value on failure; errno is never the channel. Public
 * structs carry explicit padding and reserved words that must be zero.
 */
#ifndef FABRICDEV_H
#define FABRICDEV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Device and endpoints: fdev_open(3)                                  */

struct fdev;

/* fdev_open() flags */
#define FDEV_OPEN_NO_URING	(1U << 0)	/* use the ioctl path */
#define FDEV_OPEN_FREE_RUN	(1U << 1)	/* free-running context */

/* Feature bits, as ICFAB_F_* of <linux/icfab.h>. */
#define FDEV_F_NETLINK		(1ULL << 0)
#define FDEV_F_QUEUES		(1ULL << 1)
#define FDEV_F_MEMORY		(1ULL << 2)
#define FDEV_F_URING_CMD	(1ULL << 3)
#define FDEV_F_FREE_RUN		(1ULL << 4)
#define FDEV_F_CIRCUITS		(1ULL << 7)	/* FDEV_MOE_MULTICAST */
#define FDEV_F_RECV_NOTIFY	(1ULL << 8)	/* receive-side completions */
#define FDEV_F_MEMORY_TIERS	(1ULL << 13)	/* fdev_region_alloc_tier() */

struct fdev_info {
	uint64_t features;		/* FDEV_F_* of the module */
	uint32_t fabric_id;		/* N of /dev/icfabN */
	uint32_t time_mode;		/* 0 virtual, 1 paced */
	uint32_t segment_size;		/* bytes */
	uint32_t uring;			/* 1: descriptors go through io_uring */
	uint64_t now_ps;		/* the fabric's clock, ps */
	uint64_t reserved[4];
};

int fdev_open(const char *path, unsigned int flags, struct fdev **out);
void fdev_close(struct fdev *dev);
int fdev_fd(const struct fdev *dev);
int fdev_query(struct fdev *dev, struct fdev_info *info);
/* Node ids of the committed topology's endpoints, in order; returns the count. */
int fdev_endpoints(const char *path, uint32_t *eps, unsigned int max);
int fdev_attach(struct fdev *dev, uint32_t endpoint);

/* ------------------------------------------------------------------ */
/* Regions: fdev_region(3)                                             */

#define FDEV_ACCESS_REMOTE_READ		(1U << 0)
#define FDEV_ACCESS_REMOTE_WRITE	(1U << 1)

struct fdev_region {
	uint32_t handle;		/* per context */
	uint32_t endpoint;
	uint64_t size;			/* bytes, page-rounded */
	void *addr;			/* mapping, or NULL */
	uint64_t key;			/* 0 until exported */
	uint64_t mmap_offset;
};

struct fdev_remote {
	uint64_t key;
	uint32_t endpoint;
	uint32_t access;
	uint64_t size;
};

int fdev_region_alloc(struct fdev *dev, uint32_t endpoint, uint64_t size,
		      struct fdev_region *r);
/*
 * A region in a memory tier of @endpoint (FDEV_F_MEMORY_TIERS): transfers
 * that read or write it cross the tier's port. -ENXIO when no tier of
 * that kind serves the endpoint, -ENOSPC when it does not fit in the
 * tier (the module's log names the tier), -EOPNOTSUPP without tiers.
 * FDEV_TIER_NONE is fdev_region_alloc().
 */
enum { FDEV_TIER_NONE = 0, FDEV_TIER_SRAM = 1, FDEV_TIER_HBM = 2,
       FDEV_TIER_DDR = 3 };
int fdev_region_alloc_tier(struct fdev *dev, uint32_t endpoint, uint32_t tier,
			   uint64_t size, struct fdev_region *r);
int fdev_region_map(struct fdev *dev, struct fdev_region *r);
int fdev_region_export(struct fdev *dev, struct fdev_region *r,
		       uint32_t access);
int fdev_region_import(struct fdev *dev, uint64_t key, struct fdev_remote *out);
int fdev_region_free(struct fdev *dev, struct fdev_region *r);

/* ------------------------------------------------------------------ */
/* Queues and descriptors: fdev_queue(3)                               */

enum {
	FDEV_OP_WRITE = 1, FDEV_OP_READ = 2, FDEV_OP_DELAY = 3, FDEV_OP_FENCE = 4,
};
#define FDEV_DESC_TIMING_ONLY	(1U << 0)
/* WRITE: also complete at the target's receive queue (FDEV_F_RECV_NOTIFY) */
#define FDEV_DESC_NOTIFY	(1U << 1)

/* Same layout as struct icfab_desc (64 bytes). */
struct fdev_desc {
	uint8_t op;
	uint8_t pad;
	uint16_t flags;
	uint32_t queue;
	uint32_t peer;
	uint32_t region;
	uint64_t len;			/* bytes; ps for DELAY */
	uint64_t user_tag;
	uint64_t local_off;
	uint64_t rkey;
	uint64_t remote_off;
	uint32_t circuit;
	uint32_t imm;			/* FDEV_DESC_NOTIFY: to the receiver; else 0 */
};

/* Same layout as struct icfab_cqe (64 bytes). */
struct fdev_cqe {
	uint64_t user_tag;
	int32_t status;
	uint32_t queue;
	uint64_t submit_ps;
	uint64_t start_ps;
	uint64_t finish_ps;
	uint64_t queued_ps;
	uint64_t reserved[2];
};

int fdev_queue_create(struct fdev *dev, uint32_t endpoint, uint32_t depth,
		      uint32_t *queue);
int fdev_queue_destroy(struct fdev *dev, uint32_t queue);

void fdev_prep_write(struct fdev_desc *d, uint32_t queue, uint32_t region,
		     uint64_t local_off, uint64_t rkey, uint64_t remote_off,
		     uint64_t len, uint64_t tag);
void fdev_prep_read(struct fdev_desc *d, uint32_t queue, uint32_t region,
		    uint64_t local_off, uint64_t rkey, uint64_t remote_off,
		    uint64_t len, uint64_t tag);
void fdev_prep_timing(struct fdev_desc *d, int op, uint32_t queue,
		      uint32_t peer, uint64_t len, uint64_t tag);
void fdev_prep_delay(struct fdev_desc *d, uint32_t queue, uint64_t ps,
		     uint64_t tag);
void fdev_prep_fence(struct fdev_desc *d, uint32_t queue, uint64_t tag);

/*
 * Post @nr descriptors in order. A full queue is handled by reaping
 * completions into the context's stash (returned by later polls and
 * waits), so all @nr are posted unless one is invalid: returns the number
 * posted, or -errno when the first fails.
 */
int fdev_post(struct fdev *dev, const struct fdev_desc *d, unsigned int nr);
/* Completions already there (by the context's clock); never blocks. */
int fdev_poll(struct fdev *dev, struct fdev_cqe *cqes, unsigned int max);
/*
 * Block until at least @min completions (tells the module so: in virtual
 * time this is what lets the engine advance), copy up to @max. Returns the
 * number copied, -ETIMEDOUT, -EINTR, or -EDEADLK (fewer in flight).
 */
int fdev_wait(struct fdev *dev, struct fdev_cqe *cqes, unsigned int min,
	      unsigned int max, unsigned int timeout_ms);
/* Descriptors posted and not yet returned by poll/wait. */
unsigned int fdev_inflight(const struct fdev *dev);
/* The context's clock as last reported by the module (ps). */
uint64_t fdev_clock(const struct fdev *dev);
/* Compute for @ps: a DELAY descriptor on @queue, waited for. */
int fdev_compute(struct fdev *dev, uint32_t queue, uint64_t ps);
/* Move the context's clock forward to @ps (no-op when already there). */
int fdev_advance_to(struct fdev *dev, uint32_t queue, uint64_t ps);

/* ------------------------------------------------------------------ */
/* Communicator: fdev_comm(3)                                          */

struct fdev_comm;

/* fdev_comm_* flags */
#define FDEV_COMM_TIMING_ONLY	(1U << 0)	/* no regions, move no bytes */
#define FDEV_COMM_FREE_RUN	(1U << 1)	/* free-running contexts: see fdev_comm(3) */


/*
 * One process drives @nranks ranks, rank i on endpoints[i] (NULL: the
 * first @nranks endpoints). @ws_bytes of device memory per rank for the
 * collectives (ignored with FDEV_COMM_TIMING_ONLY).
 */
int fdev_comm_init_local(const char *path, unsigned int nranks,
			 const uint32_t *endpoints, uint64_t ws_bytes,
			 unsigned int flags, struct fdev_comm **out);
/*
 * Independently started processes, one rank each. @rank/@size < 0: from
 * FDEV_RANK/FDEV_SIZE, else OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE,
 * PMIX_RANK, SLURM_PROCID/NTASKS. @job NULL: FDEV_JOB, else derived from
 * the launcher. See docs/LIBFABRICDEV.md for the rendezvous.
 */
int fdev_comm_init(const char *path, const char *job, int rank, int size,
		   uint64_t ws_bytes, unsigned int flags,
		   struct fdev_comm **out);
/*
 * A communicator of @size ranks of @parent's job (independent processes),
 * this process @rank of it on the endpoint it has in @parent, sharing
 * @parent's context; its own rendezvous @job (unique to it) and
 * workspace. Destroy it before @parent. -EOPNOTSUPP where @parent's
 * context cannot be shared (rank 0's proxy, timing-only). See fdev_comm(3).
 */
int fdev_comm_init_sub(struct fdev_comm *parent, const char *job, int rank,
		       int size, uint64_t ws_bytes, struct fdev_comm **out);
void fdev_comm_destroy(struct fdev_comm *c);
int fdev_comm_size(const struct fdev_comm *c);
/* Ranks this process drives: [first, first + count). */
int fdev_comm_local(const struct fdev_comm *c, int *first, int *count);
uint32_t fdev_comm_endpoint(const struct fdev_comm *c, int rank);
struct fdev *fdev_comm_dev(struct fdev_comm *c);
/* Ranks per scale-up domain, for hierarchical algorithms (default: all). */
int fdev_comm_set_node_size(struct fdev_comm *c, int ranks_per_node);
/*
 * The fabric's cables between ranks, for FDEV_ALGO_RINGS: cable i joins
 * ranks @ends[2i] and @ends[2i + 1] (parallel cables appear once each).
 * Looks (a bounded search) for cycles through every rank that share no
 * cable; returns the number of directed rings found (two per cycle; 0:
 * none, the rings algorithm is then not offered), or -EINVAL for a rank
 * out of range. Replaces what an earlier call gave.
 */
int fdev_comm_set_links(struct fdev_comm *c, unsigned int nlinks,
			const uint32_t *ends);
/*
 * Exclude @rank (a failed rank): later collectives and dispatches skip it
 * and report it in fdev_comm_failed(). A process that dies is detected
 * by the barrier, which then returns -EPIPE once.
 */
int fdev_comm_exclude(struct fdev_comm *c, int rank);
uint64_t fdev_comm_failed(const struct fdev_comm *c, int word);
/* All ranks arrive; the clocks are aligned to the latest of them. */
int fdev_comm_barrier(struct fdev_comm *c);
/* Fabric time, ps, of the last collective or dispatch/combine call. */
uint64_t fdev_comm_last_ps(const struct fdev_comm *c);
/*
 * Name the following calls in the trace (FDEV_TRACE_MARKER, set by
 * icfabctl trace): @label, up to 31 printable characters without blanks
 * or '=', instead of the call's own name; NULL or "" goes back to it.
 * -ENAMETOOLONG, -EINVAL for a label that is not one.
 */
int fdev_comm_set_label(struct fdev_comm *c, const char *label);
/*
 * Zero copy. A region of the communicator's context, mapped, on a local
 * rank's endpoint (fdev_region_alloc(fdev_comm_dev(c),
 * fdev_comm_endpoint(c, rank), ...)), registered here (and exported for
 * remote read and write if it was not): fdev_all_to_all(),
 * fdev_all_to_all_v() and fdev_all_reduce() then read a send buffer and
 * write a recv buffer that lie inside it where they are, instead of
 * through the workspace. The fabric moves the same bytes either way, so
 * the emulated times are the same. Local communicators and independent
 * processes that each drive their own rank (not the proxy: there
 * -EOPNOTSUPP, like timing-only communicators). -EINVAL for a region on
 * no local rank's endpoint, -EEXIST for one registered already.
 * Deregister before fdev_region_free(); -ENOENT if it is not registered.
 */
int fdev_comm_register(struct fdev_comm *c, struct fdev_region *r);
int fdev_comm_deregister(struct fdev_comm *c, const struct fdev_region *r);
/*
 * Bytes of the callers' buffers the collectives copied through the
 * workspace (in and out) and the bytes they read or wrote in place, in
 * registered regions, since the communicator was made.
 */
void fdev_comm_bytes(const struct fdev_comm *c, uint64_t *staged,
		     uint64_t *in_place);

/* ------------------------------------------------------------------ */
/* Collectives: fdev_coll(3)                                           */

enum fdev_dtype {
	FDEV_U8 = 0, FDEV_F32 = 1, FDEV_BF16 = 2, FDEV_F16 = 3,
	FDEV_FP8_E4M3 = 4, FDEV_I32 = 5, FDEV_I64 = 6,
};

enum fdev_algo {
	FDEV_ALGO_AUTO = 0, FDEV_ALGO_RING = 1, FDEV_ALGO_TREE = 2,
	FDEV_ALGO_DIRECT = 3, FDEV_ALGO_HIER = 4,
	/*
	 * All-reduce, reduce-scatter, all-gather over edge-disjoint rings
	 * of the cables fdev_comm_set_links() gave. -EOPNOTSUPP without
	 * them.
	 */
	FDEV_ALGO_RINGS = 5,
};

/*
 * What the communicator's last collective ran: "auto" chooses by the
 * cost of each algorithm's plan on the fabric's routes (fdev_coll(3)).
 */
enum fdev_algo fdev_comm_last_algo(const struct fdev_comm *c);

/*
 * Buffers hold the data of this process's local ranks back to back
 * (local rank 0 first), each as the collective describes for one rank.
 * Counts are elements of @dtype. NULL buffers with FDEV_COMM_TIMING_ONLY.
 */
int fdev_all_to_all(struct fdev_comm *c, const void *send, void *recv,
		    size_t count, enum fdev_dtype dt, enum fdev_algo algo);
/* counts: [local ranks][nranks] elements each rank sends to each rank. */
int fdev_all_to_all_v(struct fdev_comm *c, const void *send,
		      const uint64_t *send_counts, void *recv,
		      uint64_t *recv_counts, enum fdev_dtype dt,
		      enum fdev_algo algo);
int fdev_all_reduce(struct fdev_comm *c, const void *send, void *recv,
		    size_t count, enum fdev_dtype dt, enum fdev_algo algo);
int fdev_reduce_scatter(struct fdev_comm *c, const void *send, void *recv,
			size_t count, enum fdev_dtype dt, enum fdev_algo algo);
int fdev_all_gather(struct fdev_comm *c, const void *send, void *recv,
		    size_t count, enum fdev_dtype dt, enum fdev_algo algo);
int fdev_broadcast(struct fdev_comm *c, const void *send, void *recv,
		   size_t count, enum fdev_dtype dt, int root,
		   enum fdev_algo algo);

/* ------------------------------------------------------------------ */
/* Compute-shift: fdev_shift(3)                                        */

/* Shift while the step computes, instead of after it. */
#define FDEV_SHIFT_OVERLAP	(1U << 0)
/*
 * The partitions in memory tier @t (FDEV_TIER_SRAM, _HBM, _DDR) of each
 * rank's endpoint instead of the workspace: every shift reads through
 * the tier's port and writes through the neighbour's (FDEV_F_MEMORY_TIERS).
 */
#define FDEV_SHIFT_TIER(t)	(((unsigned int)(t) & 3U) << 8)

/*
 * T10's compute-shift loop: @steps times, every rank computes for
 * @compute_ps, then passes its partition of @bytes (in @buf, the local
 * ranks' back to back) to rank (r + @shift) mod n. Local communicators
 * only; the workspace holds two partitions (or, FDEV_SHIFT_TIER, the
 * tier holds two per rank).
 */
int fdev_shift(struct fdev_comm *c, void *buf, size_t bytes, int shift,
	       unsigned int steps, uint64_t compute_ps, unsigned int flags);

size_t fdev_dtype_size(enum fdev_dtype dt);
float fdev_bf16_to_f32(uint16_t v);
uint16_t fdev_f32_to_bf16(float f);
float fdev_f16_to_f32(uint16_t v);
uint16_t fdev_f32_to_f16(float f);
float fdev_fp8_to_f32(uint8_t v);
uint8_t fdev_f32_to_fp8(float f);

/* ------------------------------------------------------------------ */
/* MoE dispatch/combine: fdev_moe(3)                                   */

struct fdev_moe_layout_out {
	uint64_t *tokens_per_rank;	/* [nranks] or NULL */
	uint64_t *tokens_per_expert;	/* [num_experts] or NULL */
	uint8_t *token_in_rank;		/* [tokens][nranks] or NULL */
};

int fdev_moe_layout(const int64_t *topk_idx, uint64_t tokens, unsigned int k,
		    unsigned int num_experts, unsigned int nranks,
		    struct fdev_moe_layout_out *out);

struct fdev_moe_handle;

enum fdev_moe_mode {
	FDEV_MOE_THROUGHPUT = 0,	/* packed per rank, count exchange */
	FDEV_MOE_LOW_LATENCY = 1,	/* fixed per-expert slots, no exchange */
	/*
	 * Scale-out once per (token, remote node) to the peer with the same
	 * local index, which forwards over scale-up; nodes are
	 * fdev_comm_set_node_size() ranks. Same outputs as throughput.
	 */
	FDEV_MOE_HIERARCHICAL = 2,
	/*
	 * Each source sends a token once over its multicast circuit (opened
	 * through icfabd on first use, closed with the communicator), every
	 * rank keeps the tokens routed to its experts. Same outputs as
	 * throughput; combine is throughput's. See fdev_moe(3) for errors.
	 */
	FDEV_MOE_MULTICAST = 3,
};

struct fdev_moe_config {
	uint32_t num_experts;
	uint32_t k;			/* top-k */
	uint32_t hidden;		/* H, elements per token */
	uint32_t dtype;			/* enum fdev_dtype of x */
	uint32_t mode;			/* enum fdev_moe_mode */
	uint32_t align;			/* rows per expert rounded up to this */
	uint32_t max_tokens;		/* LL: tokens per rank at most */
	uint32_t scale_groups;		/* FP8: scales per token (0: none) */
	uint64_t reserved[4];
};

/* Per local rank inputs of one dispatch. */
struct fdev_moe_in {
	uint64_t tokens;		/* number of tokens */
	const void *x;			/* [tokens][H] dtype, or NULL (timing) */
	const float *scales;		/* FP8: [tokens][scale_groups] */
	const int64_t *topk_idx;	/* [tokens][k], -1 = none */
	const float *topk_w;		/* [tokens][k] */
};

/* Per local rank outputs of one dispatch (owned by the handle). */
struct fdev_moe_out {
	uint64_t rows;			/* expert-grouped rows, padded */
	void *x;			/* [rows][H] dtype */
	float *scales;			/* [rows][scale_groups] */
	int64_t *topk_idx;		/* [rows][k] (global expert ids) */
	float *topk_w;			/* [rows][k] */
	uint64_t *expert_count;		/* [local experts] received rows */
	uint64_t *expert_offset;	/* [local experts] first row */
	uint64_t recv_tokens;		/* distinct tokens received */
};

int fdev_moe_dispatch(struct fdev_comm *c, const struct fdev_moe_config *cfg,
		      const struct fdev_moe_in *in, struct fdev_moe_handle *reuse,
		      struct fdev_moe_handle **handle);
/* Outputs of local rank @lrank, valid until the handle is freed. */
int fdev_moe_output(struct fdev_moe_handle *h, int lrank,
		    struct fdev_moe_out *out);
/*
 * Combine: @y[lrank] is [rows][H] of dtype (the layout dispatch gave),
 * @out[lrank] gets [tokens][H]: sum over the token's experts of weight * y.
 */
int fdev_moe_combine(struct fdev_comm *c, struct fdev_moe_handle *h,
		     const void *const *y, void *const *out);
void fdev_moe_handle_free(struct fdev_moe_handle *h);

/* Fabric times (ps) of the last dispatch and combine on this handle. */
struct fdev_moe_stats {
	uint64_t dispatch_ps;
	uint64_t combine_ps;
	uint64_t dispatch_bytes;	/* sent by the local ranks, over the fabric */
	uint64_t combine_bytes;
	uint64_t dropped;		/* token copies to excluded ranks */
	uint64_t reserved[3];
};
int fdev_moe_stats(const struct fdev_moe_handle *h, struct fdev_moe_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* FABRICDEV_H */
