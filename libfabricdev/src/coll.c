// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Running plans on the fabric, and the collectives on top.
 *
 * A step posts the transfers whose source is a local rank (WRITE from the
 * rank's workspace into the peer's, by key; or timing-only), waits for
 * them, meets the other processes if there are any (clocks aligned to the
 * latest: a step ends when its last byte lands), then runs the local
 * actions (copies, reductions) of the local ranks. Local actions cost no
 * fabric time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "internal.h"
#include "rings.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void fdev_comm_plan_init(const struct fdev_comm *c, struct fdev_plan *p)
{
	fdev_plan_init(p);
	if (c->multi && !c->proxy)
		fdev_plan_only(p, c->first, c->nlocal);
}

static int is_local(const struct fdev_comm *c, uint32_t r)
{
	return r >= c->first && r < c->first + c->nlocal;
}

static int run_host(struct fdev_comm *c, const struct fdev_plan *p)
{
	uint8_t **ws = malloc(c->nranks * sizeof(*ws));
	int err;

	if (!ws)
		return -ENOMEM;
	for (unsigned int r = 0; r < c->nranks; r++)
		ws[r] = c->ws[r].addr;
	err = fdev_plan_exec_host(p, ws);
	free(ws);
	return err;
}

static int virtual_data_multi(struct fdev_comm *c)
{
	struct fdev_info info;

	if (!c->multi || fdev_comm_timing_only(c) || !c->dev ||
	    c->flags & FDEV_COMM_FREE_RUN)
		return 0;
	if (fdev_query(c->dev, &info) || info.time_mode != 0)
		return 0;
	return 1;
}

/*
 * A step posts all its descriptors in one batch, then waits for them. A
 * wait moves the rank's virtual clock, so holding posts back until
 * completions made room would start them later than the workload says:
 * capacity would change emulated time (docs/TIMING.md, "Capacity"). The
 * module grows its engine to hold what is posted instead. Only a
 * transfer of more segments than FDEV_PIECE_SEGMENTS, which the engine
 * could never hold next to others (its table stops at 8Mi events), goes
 * in pieces; that depends on the workload and the segment size alone.
 */
#define FDEV_PIECE_SEGMENTS	(2ULL << 20)

static uint64_t max_chunk(const struct fdev_comm *c)
{
	return FDEV_PIECE_SEGMENTS * (c->seg ? c->seg : 4096);
}

/*
 * Notify communicators: what the local rank still expects in a step.
 * Each sender tells, in every WRITE's immediate, how many it sends this
 * rank in the step; before the first arrives from a source, one is
 * counted for it.
 */
struct step_recv {
	uint32_t *left;			/* [nranks] to come; NOT_HEARD */
	uint64_t pending;		/* at least this many still to come */
};

#define NOT_HEARD	UINT32_MAX

static int rank_of_endpoint(const struct fdev_comm *c, uint32_t ep)
{
	for (unsigned int r = 0; r < c->nranks; r++)
		if (c->ep[r] == ep)
			return (int)r;
	return -1;
}

static int step_received(const struct fdev_comm *c, struct step_recv *rx,
			 const struct fdev_cqe *cqe)
{
	int src = rank_of_endpoint(c, (uint32_t)(cqe->user_tag >> 32));
	uint32_t total = (uint32_t)cqe->user_tag;

	if (cqe->status)
		return cqe->status;
	if (src < 0 || !rx || !rx->left[src] || !total)
		return -EPROTO;		/* nobody said it would send */
	if (rx->left[src] == NOT_HEARD) {
		/* The first of @total: one was counted for it. */
		rx->left[src] = total - 1;
		rx->pending += (uint64_t)total - 1;
		rx->pending--;
		return 0;
	}
	rx->left[src]--;
	rx->pending--;
	return 0;
}

/*
 * Notify communicators' barrier messages: their immediate has this bit,
 * the epoch's parity (bit 8) and the round (bits 0-7). A data WRITE's
 * immediate is a count, far below it.
 */
#define NOTIFY_BAR		0x80000000u
#define NOTIFY_BAR_BYTES	8
#define FDEV_TAG_BARRIER	0xfdefdefdefdefdeeULL
/*
 * An all-to-all-v's pairwise remainder message (after its slot step,
 * a2av_rest()): bit 30, with bit 29 for a receiver's go-ahead and bit 28
 * for a refusal; the low 28 bits are the go-ahead's offset in 8-byte
 * units, or how many WRITEs carry the remainder. One that comes while
 * its receiver still reaps the slot step waits in c->early.
 */
#define NOTIFY_REST		0x40000000u
#define NOTIFY_REST_GO		0x20000000u
#define NOTIFY_REST_ERR		0x10000000u
#define NOTIFY_REST_VAL		0x0fffffffu

/*
 * A receive completion, wherever a notify rank reaps it: a barrier
 * message is counted for its round; data counts for the step @rx, or
 * without one (in a barrier) it is the next step's, from a rank that
 * left the barrier first, and waits for that step (notify_step()).
 */
static int notify_sort(struct fdev_comm *c, struct step_recv *rx,
		       const struct fdev_cqe *cqe)
{
	uint32_t imm = (uint32_t)cqe->user_tag;

	if (cqe->status)
		return cqe->status;
	if (imm & NOTIFY_BAR) {
		if ((imm & 0xff) >= FDEV_BAR_ROUNDS)
			return -EPROTO;
		c->bar_got[imm >> 8 & 1][imm & 0xff]++;
		return 0;
	}
	if (rx && !(imm & NOTIFY_REST))
		return step_received(c, rx, cqe);
	if (fdev_array_grow((void **)&c->early, &c->early_cap, c->nearly,
			    sizeof(*cqe), 64))
		return -ENOMEM;
	c->early[c->nearly++] = *cqe;
	return 0;
}

/*
 * The barrier of a notify communicator, through the fabric: a
 * dissemination barrier over the live ranks. In round k each rank sends
 * a NOTIFY WRITE to the rank 2^k after it and waits for its own and for
 * the one from the rank 2^k before it: ceil(log2 n) rounds, after which
 * everyone has heard, directly or not, from everyone. Its WAITs ask for
 * exactly what must come and have no timeout that could let them go
 * early (c->timeout_ms ends them with an error), and no rank ever waits
 * on the host meanwhile, so it holds nobody back and every clock move is
 * a function of the workload: a rank leaves at the latest finish of what
 * it sent and received, no earlier than any rank's clock on entry.
 * Costs fabric time, like any barrier on a real fabric.
 */
int fdev_notify_barrier(struct fdev_comm *c)
{
	unsigned int me = c->first, n = 0, mi = 0, par = c->bar_epoch++ & 1;
	uint32_t *live = malloc(c->nranks * sizeof(*live));
	struct fdev_cqe cqe[64];
	int err = 0;

	if (!live)
		return -ENOMEM;
	for (unsigned int r = 0; r < c->nranks; r++) {
		if (fdev_rank_failed(c, r))
			continue;
		if (r == me)
			mi = n;
		live[n++] = r;
	}
	for (unsigned int k = 0, dist = 1; dist < n && !err; k++, dist <<= 1) {
		uint32_t to = live[(mi + dist) % n];
		unsigned int own = 1;
		struct fdev_desc d;
		int ret;

		fdev_prep_timing(&d, FDEV_OP_WRITE, c->queue[0], c->ep[to],
				 NOTIFY_BAR_BYTES, FDEV_TAG_BARRIER);
		d.flags |= FDEV_DESC_NOTIFY;
		d.imm = NOTIFY_BAR | par << 8 | k;
		ret = fdev_post(c->dev, &d, 1);
		if (ret != 1) {
			err = ret < 0 ? ret : -EIO;
			break;
		}
		while (own || !c->bar_got[par][k]) {
			unsigned int need = own + !c->bar_got[par][k];

			ret = fdev_wait(c->dev, cqe, need, 64, c->timeout_ms);
			if (ret < 0) {
				err = ret;
				break;
			}
			for (int i = 0; i < ret; i++) {
				int e = 0;

				if (fdev_cqe_received(c->dev, &cqe[i]))
					e = notify_sort(c, NULL, &cqe[i]);
				else if (cqe[i].user_tag == FDEV_TAG_BARRIER)
					own--, e = cqe[i].status;
				else
					e = -EPROTO;
				if (e && !err)
					err = e;
			}
			if (err && !own)
				break;
		}
		if (!err)
			c->bar_got[par][k]--;
	}
	free(live);
	return err;
}

/* Reap a step's completions: @posted of our own, and what @rx expects. */
static int step_reap(struct fdev_comm *c, unsigned int posted,
		     struct step_recv *rx, int err)
{
	unsigned int timeout = c->notify ? c->timeout_ms : 0, done = 0;
	struct fdev_cqe cqe[256];

	/*
	 * A step posted whole, and nothing to do until all of it is back:
	 * one WAIT for all of it, which the module may run on its parallel
	 * engine (docs/ARCHITECTURE.md, "The parallel engine in the
	 * kernel"). No emulated time changes, as nothing is posted until
	 * the last one. A notify rank's step may bring others' WRITEs
	 * (and is never run in parallel), so it is reaped as it comes.
	 */
	if (!rx && posted) {
		int ret = fdev_wait_stash(c->dev, posted, timeout);

		if (ret < 0)
			return err ? err : ret;
	}
	while (done < posted || (rx && rx->pending && !err)) {
		uint64_t all = posted - done + (rx && !err ? rx->pending : 0);
		int ret = fdev_wait(c->dev, cqe, all < 256 ? (unsigned int)all : 256,
				    256, timeout);

		if (ret < 0)
			return err ? err : ret;
		for (int i = 0; i < ret; i++) {
			int e = cqe[i].status;

			if (fdev_cqe_received(c->dev, &cqe[i]))
				e = notify_sort(c, rx, &cqe[i]);
			else
				done++;
			if (e && !err)
				err = e;
		}
	}
	return err;
}

static int post_window(struct fdev_comm *c, struct fdev_desc *d,
		       unsigned int nd, struct step_recv *rx)
{
	int ret = nd ? fdev_post(c->dev, d, nd) : 0;
	unsigned int posted = ret > 0 ? (unsigned int)ret : 0;
	int err = ret < 0 ? ret : posted < nd ? -EIO : 0;

	/* Reap what went in even after an error, so nothing is left behind. */
	if (err && !posted)
		return err;
	return step_reap(c, posted, rx, err);
}

/*
 * Notify communicators: before posting step @s, every WRITE says how many
 * this rank sends its target in the step (@dst: each descriptor's target
 * rank), and the rank learns whom it hears from.
 */
static void notify_step(struct fdev_comm *c, const struct fdev_plan *p,
			uint32_t s, size_t xi, struct fdev_desc *d,
			const uint32_t *dst, unsigned int nd,
			struct step_recv *rx)
{
	unsigned int me = c->first;

	memset(rx->left, 0, c->nranks * sizeof(*rx->left));
	rx->pending = 0;
	for (unsigned int i = 0; i < nd; i++)
		rx->left[dst[i]]++;
	for (unsigned int i = 0; i < nd; i++) {
		d[i].flags |= FDEV_DESC_NOTIFY;
		d[i].imm = rx->left[dst[i]];
	}
	memset(rx->left, 0, c->nranks * sizeof(*rx->left));
	if (fdev_rank_failed(c, me))
		return;
	for (; xi < p->nx && p->x[xi].step == s; xi++) {
		const struct fdev_xfer *x = &p->x[xi];

		if (x->dst == me && !fdev_rank_failed(c, x->src) &&
		    rx->left[x->src] != NOT_HEARD) {
			rx->left[x->src] = NOT_HEARD;
			rx->pending++;
		}
	}
	for (unsigned int r = 0; p->senders && r < c->nranks; r++)
		if (p->senders[r] && !fdev_rank_failed(c, r) &&
		    rx->left[r] != NOT_HEARD) {
			rx->left[r] = NOT_HEARD;
			rx->pending++;
		}
}

/* What came for this step while the rank was still in the barrier. */
static int notify_early(struct fdev_comm *c, struct step_recv *rx)
{
	int err = 0;

	for (unsigned int i = 0; i < c->nearly; i++) {
		int e = step_received(c, rx, &c->early[i]);

		if (e && !err)
			err = e;
	}
	c->nearly = 0;
	return err;
}

/* A step's descriptors, and each one's target rank. */
struct step_descs {
	struct fdev_desc *d;
	uint32_t *dst;
	size_t cap;
	unsigned int nd;
};

static int step_room(struct step_descs *sd)
{
	size_t capd = sd->cap, capt = sd->cap;

	/* sd->cap starts above 0 (fdev_plan_run()). */
	if (fdev_array_grow((void **)&sd->d, &capd, sd->nd, sizeof(*sd->d),
			    0) ||
	    fdev_array_grow((void **)&sd->dst, &capt, sd->nd,
			    sizeof(*sd->dst), 0))
		return -ENOMEM;
	sd->cap = capd;
	return 0;
}

/*
 * sd->d[sd->nd], prepared for a multicast from @src, over each of the
 * source's circuits: one copy per part of its destinations.
 */
static int mcast_parts(struct fdev_comm *c, uint32_t src,
		       struct step_descs *sd)
{
	unsigned int parts = fdev_mc_parts(c->nranks);
	const uint32_t *ids = c->mc ? c->mc + (size_t)src * parts : NULL;

	for (unsigned int j = 0; j < parts; j++) {
		if (!ids || !ids[j])
			return -ENOLINK;	/* its circuit is not open */
		if (j) {
			int err = step_room(sd);

			if (err)
				return err;
			sd->d[sd->nd] = sd->d[sd->nd - 1];
			sd->d[sd->nd].user_tag = sd->nd;
		}
		sd->d[sd->nd].circuit = ids[j];
		sd->dst[sd->nd++] = FDEV_PLAN_MCAST;
	}
	return 0;
}

/* The descriptors of the local ranks' transfers in step @s, from *@xi on. */
static int build_step(struct fdev_comm *c, const struct fdev_plan *p,
		      uint32_t s, size_t *xi, struct step_descs *sd)
{
	int timing = fdev_comm_timing_only(c), err = 0;

	sd->nd = 0;
	for (; *xi < p->nx && p->x[*xi].step == s; (*xi)++) {
		const struct fdev_xfer *x = &p->x[*xi];
		uint32_t l = x->src - c->first;
		uint64_t chunk = max_chunk(c), off = 0;
		int mcast = x->dst == FDEV_PLAN_MCAST;

		if (!is_local(c, x->src) || fdev_rank_failed(c, x->src) ||
		    (!mcast && fdev_rank_failed(c, x->dst)))
			continue;
		/* What the engine could never hold at once goes in pieces. */
		do {
			uint64_t len = x->len - off < chunk ? x->len - off : chunk;
			struct fdev_desc *d;

			err = step_room(sd);
			if (err)
				return err;
			d = &sd->d[sd->nd];
			if (timing) {
				fdev_prep_timing(d, FDEV_OP_WRITE, c->queue[l],
						 mcast ? 0 : c->ep[x->dst], len, sd->nd);
				if (!mcast)
					fdev_comm_timing_at(c, d,
							    x->dst_off + off);
			} else if (mcast)
				fdev_prep_write(d, c->queue[l], c->ws[l].handle,
						x->src_off + off, 0,
						x->dst_off + off, len, sd->nd);
			else {
				/* Workspace offsets, or callers' buffers (zc.c). */
				uint32_t h;
				uint64_t so, key, dof;

				fdev_zc_local(c, l, x->src_off + off, &h, &so);
				fdev_zc_remote(c, x->dst, x->dst_off + off, &key,
					       &dof);
				fdev_prep_write(d, c->queue[l], h, so, key, dof,
						len, sd->nd);
			}
			/* Every destination bound its workspace at 0. */
			if (mcast) {
				err = mcast_parts(c, x->src, sd);
				if (err)
					return err;
			} else
				sd->dst[sd->nd++] = x->dst;
			off += len;
		} while (off < x->len);
	}
	return 0;
}

/* Processes that each drive their own rank, after a step: clocks aligned to the latest. */
static int step_meet(struct fdev_comm *c)
{
	uint64_t v = fdev_clock(c->dev);
	int err = fdev_shm_barrier(c, &v);

	if (!err || err == -EPIPE) {
		int e2 = fdev_advance_to(c->dev, c->queue[0], v);

		if (e2 && !err)
			err = e2;
	}
	return err;
}

/* Step @s's local copies and reductions, for every local rank. */
static int step_apply(struct fdev_comm *c, const struct fdev_plan *p,
		      uint32_t s)
{
	int err = 0;

	for (unsigned int l = 0; l < c->nlocal && !err; l++)
		err = c->zc_lo ?
		      fdev_plan_apply_map(p, s, c->first + l, &c->zc_loc[l].m) :
		      fdev_plan_apply(p, s, c->first + l, c->ws[l].addr);
	return err;
}

static int run_steps(struct fdev_comm *c, const struct fdev_plan *p,
		     struct step_descs *sd, struct step_recv *rx)
{
	int timing = fdev_comm_timing_only(c), err = 0;
	size_t xi = 0;

	for (uint32_t s = 0; s < p->nsteps && !err; s++) {
		size_t first = xi;

		err = build_step(c, p, s, &xi, sd);
		if (!err && c->notify) {
			notify_step(c, p, s, first, sd->d, sd->dst, sd->nd, rx);
			err = notify_early(c, rx);
		}
		if (!err && (sd->nd || (rx && rx->pending)))
			err = post_window(c, sd->d, sd->nd, c->notify ? rx : NULL);
		/* Even after an error: the others must not wait for us. */
		if (c->multi && !c->notify) {
			int e2 = step_meet(c);

			if (!err)
				err = e2;
			if (err)
				break;
		}
		if (!timing && !err)
			err = step_apply(c, p, s);
		/*
		 * Processes that each drive their own rank: nobody may write
		 * the next step into a workspace whose owner is still reducing
		 * from it. (Free of fabric time where the clocks are aligned;
		 * a notify rank's barrier is through the fabric, after which
		 * everyone is past its owner's actions.)
		 */
		if (c->notify) {
			if (!err && s + 1 < p->nsteps)
				err = fdev_notify_barrier(c);
		} else if (c->multi && !timing && s + 1 < p->nsteps) {
			uint64_t v = 0;
			int e2 = fdev_shm_barrier(c, &v);

			if (!err && e2 && e2 != -EPIPE)
				err = e2;
		}
	}
	return err;
}

/*
 * fdev_plan_run(), then @after(c, @arg) once the steps went well, in the
 * same operation: a notify rank is not yet idle there, its clock not yet
 * read for c->last_ps (the all-to-all-v's pairwise remainders, below).
 */
static int plan_run_then(struct fdev_comm *c, const struct fdev_plan *p,
			 int (*after)(struct fdev_comm *c, void *arg),
			 void *arg)
{
	int timing = fdev_comm_timing_only(c);
	struct step_descs sd = { 0 };
	struct step_recv rx = { 0 };
	uint64_t t0;
	int err = 0;

	if (p->ws_need > c->ws_bytes && !timing)
		return -EMSGSIZE;
	if (after && (p->feeds || c->proxy || !c->dev))
		return -EOPNOTSUPP;
	if (p->feeds)
		return fdev_plan_run_gated(c, p, p->flow_steps, p->feeds, NULL,
					   NULL);
	if (c->proxy)
		return fdev_proxy_run(c, p);
	if (!c->dev)
		return run_host(c, p);
	/* Without receive completions, a rank cannot wait for others' data. */
	if (virtual_data_multi(c) && !c->notify)
		return -EOPNOTSUPP;
	/* A multicast cannot notify: its sender is not the receiver's peer. */
	if (p->mcast_ranks && c->notify)
		return -EOPNOTSUPP;
	if (p->mcast_ranks) {
		err = fdev_comm_circuits_open(c, p);
		if (err)
			return err;
	}
	sd.cap = p->nx + 16;
	sd.d = malloc(sd.cap * sizeof(*sd.d));
	sd.dst = malloc(sd.cap * sizeof(*sd.dst));
	rx.left = c->notify ? calloc(c->nranks, sizeof(*rx.left)) : NULL;
	if (!sd.d || !sd.dst || (c->notify && !rx.left)) {
		err = -ENOMEM;
		goto out;
	}
	/* Everyone is done with what the last call left in the workspaces. */
	if (c->notify) {
		err = fdev_notify_resume(c);
		if (err)
			goto out;
	} else if (c->multi && !timing) {
		uint64_t v = fdev_clock(c->dev);

		err = fdev_shm_barrier(c, &v);
		if (err && err != -EPIPE)
			goto out;
		err = fdev_advance_to(c->dev, c->queue[0], v);
		if (err)
			goto out;
	}
	t0 = fdev_clock(c->dev);
	err = run_steps(c, p, &sd, &rx);
	if (!err && after)
		err = after(c, arg);
	c->last_ps = fdev_clock(c->dev) - t0;
	fdev_op_span(c, t0, t0 + c->last_ps);
out:
	if (c->notify) {
		int e2 = fdev_notify_idle(c);

		if (!err)
			err = e2;
	}
	free(sd.d);
	free(sd.dst);
	free(rx.left);
	return err;
}

int fdev_plan_run(struct fdev_comm *c, const struct fdev_plan *p)
{
	return plan_run_then(c, p, NULL, NULL);
}

/*
 * Gated plans: step 0 goes at once; a later step s goes when every piece
 * of the transfers that feed it has landed (@feeds[i], for the transfer
 * added i-th: up to two steps it feeds, one in each 32-bit half,
 * FDEV_PLAN_NO_GATE where none), after @ready(c, s, @arg)
 * (the host's work on what landed, e.g. packing what a step forwards),
 * for steps 1 to @nsteps - 1 (or the plan's last), with transfers or not.
 * One context drives every rank, so WAIT returns the earliest
 * completions and moves the clock to their finish: a step is posted at
 * the instant its last input landed, whatever the host's speed, and the
 * steps overlap each other and step 0 as their inputs allow. A step fed
 * by nothing goes right after step 0; a step may feed any other but
 * step 0 and itself, and none may wait, through others, for itself.
 * Each step's actions run right after it is posted (their sources must
 * be there by then).
 */
int fdev_plan_gated_ok(const struct fdev_comm *c)
{
	return c->dev && !c->proxy && !c->multi && !c->notify;
}

/* The pieces build_step() cuts @x into, 0 for one it leaves out. */
static uint64_t gated_pieces(const struct fdev_comm *c,
			     const struct fdev_xfer *x)
{
	uint64_t chunk = max_chunk(c);

	if (!is_local(c, x->src) || fdev_rank_failed(c, x->src) ||
	    fdev_rank_failed(c, x->dst))
		return 0;
	return (x->len + chunk - 1) / chunk;
}

/* Post step @s (its transfers from @xi on), tagged with what they feed. */
static int gated_post(struct fdev_comm *c, const struct fdev_plan *p,
		      uint32_t s, size_t xi, const uint64_t *feeds,
		      struct step_descs *sd, uint64_t *outstanding)
{
	int timing = fdev_comm_timing_only(c), err = 0;
	unsigned int di = 0;
	size_t x0 = xi;
	int ret;

	/* A dataflow plan's reductions, before the forwards of their sums. */
	if (p->acts_first && !timing)
		err = step_apply(c, p, s);
	if (!err)
		err = build_step(c, p, s, &xi, sd);
	if (err)
		return err;
	for (; x0 < xi; x0++) {
		uint64_t n = gated_pieces(c, &p->x[x0]);

		for (uint64_t k = 0; k < n && di < sd->nd; k++)
			sd->d[di++].user_tag = feeds[p->x[x0].pad];
	}
	if (di != sd->nd)
		return -EPROTO;
	ret = sd->nd ? fdev_post(c->dev, sd->d, sd->nd) : 0;
	if (ret > 0)
		*outstanding += (unsigned int)ret;
	if (ret < 0)
		return ret;
	if ((unsigned int)ret < sd->nd)
		return -EIO;
	if (!p->acts_first && !timing)
		err = step_apply(c, p, s);
	return err;
}

int fdev_plan_run_gated(struct fdev_comm *c, const struct fdev_plan *p,
			uint32_t nsteps, const uint64_t *feeds,
			int (*ready)(struct fdev_comm *c, uint32_t step,
				     void *arg),
			void *arg)
{
	uint32_t ns = nsteps > p->nsteps ? nsteps : p->nsteps;
	uint32_t nready = 0, ri = 0, *gate, *readyq;
	int timing = fdev_comm_timing_only(c), err = 0;
	struct step_descs sd = { 0 };
	uint64_t t0, outstanding = 0;
	struct fdev_cqe cqe[64];
	size_t *first;

	if (!fdev_plan_gated_ok(c) || p->mcast_ranks)
		return -EOPNOTSUPP;
	if (p->ws_need > c->ws_bytes && !timing)
		return -EMSGSIZE;
	sd.cap = p->nx + 16;
	sd.d = malloc(sd.cap * sizeof(*sd.d));
	sd.dst = malloc(sd.cap * sizeof(*sd.dst));
	gate = calloc(ns + 1, sizeof(*gate));
	readyq = calloc(ns + 1, sizeof(*readyq));
	first = calloc(ns + 1, sizeof(*first));
	if (!sd.d || !sd.dst || !gate || !readyq || !first) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0, s = 0; s <= ns; s++) {
		while (i < p->nx && p->x[i].step < s)
			i++;
		first[s] = i;
	}
	for (size_t i = 0; i < p->nx; i++) {
		for (int half = 0; half < 2; half++) {
			uint32_t f = (uint32_t)(feeds[p->x[i].pad] >> (32 * half));

			if (f == FDEV_PLAN_NO_GATE)
				continue;
			/* No step waits for itself, nor is step 0 waited. */
			if (!f || f == p->x[i].step || f >= ns) {
				err = -EINVAL;
				goto out;
			}
			gate[f] += (uint32_t)gated_pieces(c, &p->x[i]);
		}
	}
	t0 = fdev_clock(c->dev);
	err = gated_post(c, p, 0, first[0], feeds, &sd, &outstanding);
	for (uint32_t s = 1; s < ns; s++)
		if (!gate[s])
			readyq[nready++] = s;
	for (;;) {
		int n;

		while (!err && ri < nready) {
			uint32_t s = readyq[ri++];

			if (ready)
				err = ready(c, s, arg);
			if (!err)
				err = gated_post(c, p, s, first[s], feeds, &sd,
						 &outstanding);
		}
		/* After an error, only what is in flight is reaped. */
		if (!outstanding)
			break;
		n = fdev_wait(c->dev, cqe, 1, 64, 0);
		if (n < 0) {
			if (!err)
				err = n;
			break;
		}
		for (int i = 0; i < n; i++) {
			outstanding--;
			if (cqe[i].status && !err)
				err = cqe[i].status;
			for (int half = 0; half < 2; half++) {
				uint32_t f = (uint32_t)(cqe[i].user_tag >>
							(32 * half));

				if (f < ns && gate[f] && !--gate[f])
					readyq[nready++] = f;
			}
		}
	}
	c->last_ps = fdev_clock(c->dev) - t0;
	fdev_op_span(c, t0, t0 + c->last_ps);
	if (!err && ri < ns - 1)
		err = -EPROTO;	/* a step whose inputs never all landed */
out:
	free(sd.d);
	free(sd.dst);
	free(gate);
	free(readyq);
	free(first);
	return err;
}

static int any_failed(const struct fdev_comm *c)
{
	for (unsigned int w = 0; w < FDEV_FAILED_WORDS; w++)
		if (c->failed[w])
			return -ENOLINK;
	return 0;
}

/* run_coll_zc() flags */
#define RUN_ZC		(1U << 0)	/* callers' buffers in place (zc.c) */
#define RUN_ALIAS	(1U << 1)	/* ... and send may be recv */
#define RUN_INTERNAL	(1U << 2)	/* the library's own bytes: not counted */

/*
 * Stage the local ranks' inputs, run, copy the outputs back; with
 * RUN_ZC, buffers in registered regions are used where they are. @slen
 * and @rlen: the bytes of each local rank's buffers to copy (NULL: the
 * layout's lengths). @built is what building @p returned: a plan that
 * failed is only freed.
 */
static int run_coll_zc(struct fdev_comm *c, struct fdev_plan *p, int built,
		       const struct fdev_coll_layout *lo, const void *send,
		       void *recv, const uint64_t *slen, const uint64_t *rlen,
		       unsigned int flags)
{
	int timing = fdev_comm_timing_only(c), zc = 0;
	uint64_t staged = 0, in_place = 0;
	int err = built;

	if (err)
		goto out;
	if (!timing && (!send || !recv)) {
		err = -EFAULT;
		goto out;
	}
	if (!timing && p->ws_need > c->ws_bytes) {
		err = -EMSGSIZE;
		goto out;
	}
	if (!timing && flags & RUN_ZC) {
		zc = fdev_zc_begin(c, p, lo, send, recv, slen, rlen,
				   !!(flags & RUN_ALIAS));
		if (zc < 0) {
			err = zc;
			goto out;
		}
	}
	for (unsigned int l = 0; !timing && l < c->nlocal; l++) {
		uint64_t n = slen ? slen[l] : lo->send_len;

		if (zc && c->zc_loc[l].m.addr[0]) {
			in_place += n;
			continue;
		}
		memcpy(fdev_ws_addr(c, l, lo->send_off),
		       (const uint8_t *)send + l * lo->send_len, n);
		staged += n;
	}
	err = fdev_plan_run(c, p);
	for (unsigned int l = 0; !err && !timing && l < c->nlocal; l++) {
		uint64_t n = rlen ? rlen[l] : lo->recv_len;

		if (zc && c->zc_loc[l].m.addr[1]) {
			in_place += n;
			continue;
		}
		memcpy((uint8_t *)recv + l * lo->recv_len,
		       fdev_ws_addr(c, l, lo->recv_off), n);
		staged += n;
	}
	if (zc)
		fdev_zc_end(c);
	if (!err && !(flags & RUN_INTERNAL)) {
		c->bytes_staged += staged;
		c->bytes_in_place += in_place;
	}
out:
	fdev_plan_free(p);
	return err;
}

/*
 * FDEV_INTERLEAVE=K: an all-to-all sends each pair's bytes as pieces of K
 * segments, every destination's first piece before any second one. A
 * DMA engine holds a transfer until its last segment has left on the
 * first link (docs/TIMING.md), and an endpoint's engines take its
 * transfers in order: whole transfers in rotated order keep a direct
 * network (a torus, a mesh) on a few directions at a time, while pieces
 * keep every link fed (tools/bench/README.md, "The torus all-to-all").
 * A rank's pieces in a step stay within its queue's depth, so posting
 * them never waits. On by default in pieces of one segment: a switch's
 * single port neither gains nor loses by it (the same time to the ps on
 * dgx-h100), a direct network gains up to 1.6x. 0 turns
 * it off; anything but a decimal number is -EINVAL from the operation,
 * so that a typo is not a silent default.
 */
#define FDEV_INTERLEAVE_DEFAULT	1
#define FDEV_INTERLEAVE_PIECES	4096

static int interleave_segments(uint64_t seg, uint64_t *k)
{
	const char *v = getenv("FDEV_INTERLEAVE");
	char *end;

	*k = FDEV_INTERLEAVE_DEFAULT;
	if (!v || !*v)
		return 0;
	if (*v < '0' || *v > '9')
		return -EINVAL;
	errno = 0;
	*k = strtoull(v, &end, 10);
	if (*end || errno || *k > UINT64_MAX / seg)
		return -EINVAL;
	return 0;
}

int fdev_comm_interleave(struct fdev_comm *c, struct fdev_plan *p)
{
	uint64_t seg = c->seg ? c->seg : 4096, k;
	int err = interleave_segments(seg, &k);

	if (err || !k)
		return err;
	/*
	 * More pieces than the depth: several steps of K-segment pieces,
	 * not one of larger pieces (0.97 of the bound against 0.88 at 8 MiB
	 * per pair on tpu-v4-cube). Only where this process sees every
	 * rank's transfers, so that every process makes the same steps:
	 * one process drives all ranks, and the plan is not a low-latency
	 * one, which names only this process's transfers.
	 */
	if (!c->multi && !p->senders)
		err = fdev_plan_split_steps(p, k * seg, FDEV_INTERLEAVE_PIECES);
	if (err)
		return err;
	/*
	 * Each pair's pieces as many rounds ahead as its route's lead
	 * (lead.c, routes.c): 0.907 of the bound against 0.882 at 64 KiB
	 * per pair on tpu-v4-cube, where the last dimension's links start
	 * and end late. FDEV_NO_LEADS in the environment leaves them out,
	 * to measure the plain order beside it.
	 */
	return fdev_plan_interleave_lead(p, k * seg, FDEV_INTERLEAVE_PIECES,
					 p->keep_order ? NULL : fdev_comm_leads(c),
					 c->nranks);
}

/*
 * The all-to-all-v's order in slots: as fdev_comm_interleave(), then each
 * source's last pieces on each first link dealt out far pairs first
 * (fdev_plan_far_first()). Its largest pairs (twice the mean in
 * a2a_interleave.sh's matrix) are what is left at the end of the step,
 * and where several leave a source by one link the far ones came out
 * last and ended the step their hops later: on tpu-v4-cube at 64 KiB
 * mean, chip3_0_2's pair of six hops left its first link 1.5 us before
 * the source's last piece of one hop and ended the step at 50.064 us
 * (a2a_bound -H -T). Before that, each source's first pieces dealt out
 * over all its first links (fdev_plan_start_fill()): the leads put the
 * pairs of most lead first, which leave by few of its links, while at
 * the step's start no transit has reached any; 48.671 us against 49.391
 * at 64 KiB mean, 0.902 of the bound (FDEV_NO_START_FILL in the
 * environment leaves it out, to measure the order without it). Both
 * order each source's pieces by its own pairs and their routes alone,
 * so processes that each know only their own row (@whole 0) order
 * theirs the same way, and post what one process driving every rank
 * would post for them (FDEV_NO_CRITICAL_FIRST set).
 *
 * With @whole (the plan names every rank's pieces from the counts of
 * every rank: one process driving every rank), then each step played
 * out on the routes, a free DMA engine taking the piece that waits least
 * at its first link and crosses the most load not yet placed, kept where
 * the play finds it faster (fdev_plan_critical_first(); random matrices
 * 0.95 to 0.98 of the bound at 64 KiB mean, from 0.80 to 0.95;
 * FDEV_NO_CRITICAL_FIRST leaves it out). The play needs every source's
 * pieces, the transit on each link: a process that knows only its own
 * row cannot play it, and timing-only processes, which do hold the whole
 * matrix (through the job's file, standing in for the slots' heads),
 * leave it out so as to post what processes on data would.
 * Only where the leads apply (routes read, FDEV_NO_LEADS unset) and
 * pieces are cut.
 */
int fdev_comm_interleave_v(struct fdev_comm *c, struct fdev_plan *p, int whole)
{
	/* A process orders the pieces it posts, not the others' it plans. */
	const struct fdev_src_range own = { c->first, c->nlocal };
	const struct fdev_paths *m;
	uint64_t seg = c->seg ? c->seg : 4096, k;
	size_t n = c->nranks, pairs = n * n;
	uint32_t *hops, *first;
	int err = fdev_comm_interleave(c, p);

	if (err || interleave_segments(seg, &k) || !k || p->keep_order ||
	    !fdev_comm_leads(c))
		return err;
	m = fdev_comm_paths(c);
	if (!m || m->n != n)
		return 0;
	hops = malloc(pairs * sizeof(*hops));
	first = malloc(pairs * sizeof(*first));
	if (!hops || !first) {
		free(hops);
		free(first);
		return -ENOMEM;
	}
	for (size_t q = 0; q < pairs; q++) {
		hops[q] = m->off[q + 1] - m->off[q];
		first[q] = hops[q] ? m->link[m->off[q]] : UINT32_MAX;
	}
	if (!getenv("FDEV_NO_START_FILL"))
		err = fdev_plan_start_fill(p, first, (uint32_t)n,
					   whole ? NULL : &own);
	if (!err)
		err = fdev_plan_far_first(p, hops, first, (uint32_t)n,
					  whole ? NULL : &own);
	if (!err && whole && !getenv("FDEV_NO_CRITICAL_FIRST"))
		err = fdev_plan_critical_first(p, m, m->engines);
	free(hops);
	free(first);
	return err;
}

/*
 * Whether an all-reduce, reduce-scatter or all-gather runs over the
 * communicator's rings (rings.c). "auto" takes them whenever
 * fdev_comm_set_links() found a cycle through every rank: its rings use
 * neighbours' own cables, one transfer per link and step, where the
 * rank-order ring crosses several links per step. FDEV_ALGO_RINGS
 * without them is -EOPNOTSUPP (the plan builder's), said once here;
 * *@algo becomes the ring for auto's fallback.
 */
static int rings_algo(const struct fdev_comm *c, enum fdev_algo *algo)
{
	static int said;

	if (*algo != FDEV_ALGO_AUTO && *algo != FDEV_ALGO_RINGS)
		return 0;
	if (c->nrings >= 2)
		return 1;
	if (*algo == FDEV_ALGO_RINGS) {
		if (!said++)
			fprintf(stderr, "libfabricdev: FDEV_ALGO_RINGS: no ring through every rank over the links fdev_comm_set_links() gave (or none given)\n");
		return 1;
	}
	return 0;
}

static int check(struct fdev_comm *c, enum fdev_dtype dt)
{
	if (!c || !fdev_dtype_size(dt))
		return -EINVAL;
	return any_failed(c);
}

enum coll_op { COLL_AR, COLL_RS, COLL_AG, COLL_A2A, COLL_BC };

/*
 * Whether the rings' collectives run as dataflow
 * (rings.c, fdev_plan_run_gated()): where one context drives every rank,
 * unless FDEV_RINGS_BSP is in the environment (to measure the steps one
 * after the other beside it).
 */
static int rings_flow(const struct fdev_comm *c)
{
	return fdev_plan_gated_ok(c) && !getenv("FDEV_RINGS_BSP");
}

/*
 * @op's plan with @algo: FDEV_ALGO_RINGS over the communicator's rings
 * (and auto too, where it has some), the others by the plan builders.
 */
static int coll_plan(const struct fdev_comm *c, struct fdev_plan *p,
		     enum coll_op op, size_t count, enum fdev_dtype dt,
		     unsigned int root, enum fdev_algo algo,
		     struct fdev_coll_layout *lo)
{
	uint64_t bytes = count * fdev_dtype_size(dt);
	uint64_t seg = c->seg ? c->seg : 4096;
	unsigned int n = c->nranks;
	int rings = op <= COLL_AG && rings_algo(c, &algo);

	switch (op) {
	case COLL_AR:
		return rings ? fdev_plan_rings_all_reduce(p, n, count, dt,
							  c->cycles, c->nrings, lo,
							  rings_flow(c), seg) :
		       fdev_plan_all_reduce(p, n, count, dt, algo,
					    c->node_size, lo);
	case COLL_RS:
		return rings ? fdev_plan_rings_reduce_scatter(p, n, count, dt,
							      c->cycles, c->nrings, lo,
							      rings_flow(c), seg) :
		       fdev_plan_reduce_scatter(p, n, count, dt, algo, lo);
	case COLL_AG:
		return rings ? fdev_plan_rings_all_gather(p, n, bytes,
							  c->cycles, c->nrings, lo,
							  rings_flow(c), seg) :
		       fdev_plan_all_gather(p, n, bytes, algo, lo);
	case COLL_A2A:
		return fdev_plan_all_to_all(p, n, bytes, algo, c->node_size,
					    lo);
	case COLL_BC:
		return fdev_plan_broadcast(p, n, bytes, root, algo, lo);
	}
	return -EINVAL;
}

/* What auto runs without a cost: fdev_coll(3)'s rule. */
static enum fdev_algo auto_rule(const struct fdev_comm *c, enum coll_op op)
{
	switch (op) {
	case COLL_A2A:
		return FDEV_ALGO_DIRECT;
	case COLL_BC:
		return FDEV_ALGO_TREE;
	default:
		return c->nrings >= 2 ? FDEV_ALGO_RINGS : FDEV_ALGO_RING;
	}
}

/*
 * "auto": the algorithm whose plan costs least on this fabric's routes
 * and links (cost.c), among those the operation and the communicator
 * have (and, with memory, whose workspace fits). Every process of a
 * communicator reads the same fabric and builds the same plans, so all
 * choose alike. The rule's choice is costed first and kept on a tie;
 * the rule decides alone where the fabric could not be read (no
 * device, more than 256 ranks, multipath routes) or FDEV_AUTO=rule is
 * in the environment. Remembered per (op, bytes, root).
 */
static enum fdev_algo choose(struct fdev_comm *c, enum coll_op op,
			     size_t count, enum fdev_dtype dt,
			     unsigned int root, enum fdev_algo algo)
{
	static const enum fdev_algo cand[] = {
		FDEV_ALGO_RINGS, FDEV_ALGO_RING, FDEV_ALGO_DIRECT,
		FDEV_ALGO_TREE, FDEV_ALGO_HIER,
	};
	enum fdev_algo rule = auto_rule(c, op), best = rule;
	uint64_t bytes = count * fdev_dtype_size(dt), best_cost = UINT64_MAX;
	const struct fdev_paths *m;
	const char *env;

	c->last_algo = algo == FDEV_ALGO_AUTO ? rule : algo;
	if (algo != FDEV_ALGO_AUTO)
		return algo;
	env = getenv("FDEV_AUTO");
	if (env && !strcmp(env, "rule"))
		return FDEV_ALGO_AUTO;
	m = fdev_comm_paths(c);
	if (!m)
		return FDEV_ALGO_AUTO;
	for (unsigned int i = 0; i < ARRAY_SIZE(c->auto_memo); i++) {
		const struct fdev_auto_memo *e = &c->auto_memo[i];

		if (e->algo && e->op == op && e->bytes == bytes &&
		    e->root == root) {
			c->last_algo = e->algo;
			return e->algo;
		}
	}
	for (int i = -1; i < (int)ARRAY_SIZE(cand); i++) {
		enum fdev_algo a = i < 0 ? rule : cand[i];
		struct fdev_coll_layout lo;
		struct fdev_plan p;
		uint64_t cost;
		int err;

		if ((i >= 0 && a == rule) ||
		    (a == FDEV_ALGO_RINGS && c->nrings < 2))
			continue;
		/* Every rank's transfers, whichever ranks this process runs. */
		fdev_plan_init(&p);
		err = coll_plan(c, &p, op, count, dt, root, a, &lo);
		if (!err && !fdev_comm_timing_only(c) && p.ws_need > c->ws_bytes)
			err = -EMSGSIZE;
		cost = err ? UINT64_MAX : fdev_plan_cost_ps(m, &p);
		fdev_plan_free(&p);
		if (cost < best_cost) {
			best_cost = cost;
			best = a;
		}
	}
	c->auto_memo[c->auto_next] = (struct fdev_auto_memo){
		.bytes = bytes, .op = op, .root = root, .algo = best };
	c->auto_next = (c->auto_next + 1) % ARRAY_SIZE(c->auto_memo);
	c->last_algo = best;
	return best;
}

static int all_to_all(struct fdev_comm *c, const void *send, void *recv,
		      size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err = check(c, dt);

	if (err)
		return err;
	algo = choose(c, COLL_A2A, count, dt, 0, algo);
	fdev_comm_plan_init(c, &p);
	err = coll_plan(c, &p, COLL_A2A, count, dt, 0, algo, &lo);
	if (!err && (algo == FDEV_ALGO_AUTO || algo == FDEV_ALGO_DIRECT))
		err = fdev_comm_interleave(c, &p);
	return run_coll_zc(c, &p, err, &lo, send, recv, NULL, NULL, RUN_ZC);
}

/*
 * Timing only, no bytes move, so the count exchange of an all-to-all-v
 * tells a rank nothing of what other processes' ranks send: a process
 * that drives one rank of independent processes passes its row through
 * the job's file instead (fdev_host_row(), as the MoE counts do), and
 * the plan runs as it would with the counts in it, so every rank builds
 * the whole matrix, as one process driving every rank does.
 */
static int counts_by_host(struct fdev_comm *c)
{
	return fdev_comm_timing_only(c) && c->multi && c->nlocal == 1 &&
	       c->nranks > 1 && fdev_host_row(c, c->first, c->nranks * 8);
}

/* After the exchange: every rank's row into @m [n][n]; zeros for a rank that failed. */
static void counts_from_host(struct fdev_comm *c, uint64_t *m)
{
	size_t n = c->nranks;

	for (unsigned int s = 0; s < n; s++) {
		if (fdev_rank_failed(c, s))
			memset(m + s * n, 0, n * 8);
		else
			memcpy(m + s * n, fdev_host_row(c, s, n * 8), n * 8);
	}
}

/*
 * All-to-all-v in fixed slots, without a count round: rank s writes its
 * bytes for d into d's workspace at slot s, its count (8 bytes) right
 * ahead of them in the same transfer, all in one step; then each
 * receiver reads the counts at its slots' heads and packs the slots into
 * the caller's layout. A sender need not know where its bytes land among
 * the others' (which the two-round algorithm learns from the count
 * all-gather), so the records start at once: the count round's 6.061 us
 * sooner on tpu-v4-cube (tools/bench/README.md, "Item 2, all-to-all-v").
 * The count rides in the pair's first piece (struct fdev_xfer's head):
 * a descriptor of its own per pair would take a rank past its queue's
 * depth and cost the step a second fill and drain at 256 KiB per pair.
 * A pair with nothing to send sends nothing: its receiver set the
 * slot's count to 0 before the step, and the step's end (the one process
 * has every rank's completions) says that all that comes has come.
 *
 * Workspace, per rank: n slots of 8 + @S bytes, then the rank's send
 * area, its pairs as count and bytes. @S is fixed by the communicator
 * alone, workspace / 2n - 8, so that every rank would agree on it
 * without a word; in timing only (no workspace) it is the largest pair.
 * The one process that drives every rank sees every count, so it alone
 * decides whether every pair fits its slot; where one does not, the two
 * rounds run instead (slots_fit() is false). Processes that each drive
 * their own ranks agree on nothing: a pair past its slot sends its rest
 * on its own after the step (slots_procs_notify(), below), also from
 * and into registered regions (zc.c). Where one process drives every
 * rank, registered regions keep the two rounds (its zero copy would
 * need each pair's offset in the receiver's buffer before sending,
 * which only the counts give), as FDEV_A2AV_TWO_ROUNDS in the
 * environment asks everywhere.
 *
 * Emulated time: the counts are 8 bytes more in each pair's first
 * piece, timed as any bytes are; the packing is a host copy, as the
 * all-to-all's copy from its workspace to the caller's buffer and the
 * two rounds' are, and takes no fabric time.
 */
struct a2av_slots {
	uint64_t S, send_off;
};

/* What every slot layout needs: direct, no region, no rank failed. */
static int slots_allowed(const struct fdev_comm *c, enum fdev_algo algo)
{
	return !c->proxy && c->nranks >= 2 &&
	       (algo == FDEV_ALGO_AUTO || algo == FDEV_ALGO_DIRECT) &&
	       !any_failed(c) && !getenv("FDEV_A2AV_TWO_ROUNDS");
}

static int slots_size(const struct fdev_comm *c, const uint64_t *m,
		      struct a2av_slots *sl);

static int slots_fit(const struct fdev_comm *c, const uint64_t *m,
		     enum fdev_algo algo, struct a2av_slots *sl)
{
	if (c->multi || c->notify || c->nreg || !slots_allowed(c, algo))
		return 0;
	return slots_size(c, m, sl);
}

/* @sl for the matrix @m (bytes): whether every pair fits its slot. */
static int slots_size(const struct fdev_comm *c, const uint64_t *m,
		      struct a2av_slots *sl)
{
	size_t n = c->nranks;
	uint64_t big = 0;

	for (size_t i = 0; i < n * n; i++)
		if (i / n != i % n && m[i] > big)
			big = m[i];
	if (fdev_comm_timing_only(c))
		sl->S = (big + 7) & ~7ULL;
	else if (c->ws_bytes / (2 * n) >= 16)
		sl->S = (c->ws_bytes / (2 * n) - 8) & ~7ULL;
	else
		return 0;
	sl->send_off = n * (8 + sl->S);
	/* Every pair fits its slot, so every row its send area. */
	return big <= sl->S;
}

/* The one-step plan of slots_fit()'s layout @sl for the matrix @m (bytes). */
static int slots_plan(const struct fdev_comm *c, struct fdev_plan *p,
		      const uint64_t *m, const struct a2av_slots *sl)
{
	size_t n = c->nranks;
	uint64_t *before = malloc(n * n * sizeof(*before));

	if (!before)
		return -ENOMEM;
	/* Where each pair's count and bytes start in its sender's area. */
	for (size_t s = 0; s < n; s++)
		for (size_t d = 0, so = 0; d < n; d++) {
			before[s * n + d] = so;
			so += d == s || !m[s * n + d] ? 0 : 8 + m[s * n + d];
		}
	fdev_plan_need(p, 2 * n * (8 + sl->S));
	for (unsigned int k = 1; k < n; k++)
		for (unsigned int s = 0; s < n; s++) {
			unsigned int d = (s + k) % n;
			size_t had = p->nx;

			/* Nothing to send: the slot's count stays the 0 it had. */
			if (!m[(size_t)s * n + d])
				continue;
			fdev_plan_xfer(p, 0, s, d,
				       sl->send_off + before[(size_t)s * n + d],
				       s * (8 + sl->S), 8 + m[(size_t)s * n + d]);
			if (p->nx > had)
				p->x[had].head = 8;
		}
	free(before);
	return fdev_plan_finish(p);
}

/*
 * Run it: stage each local rank's counts and bytes, one step, then pack
 * what came by the counts at the slots' heads into @recv (each rank's at
 * @recv_len apart, as the two rounds leave it) and fill @recv_counts.
 */
static int slots_run(struct fdev_comm *c, struct fdev_plan *p,
		     const struct a2av_slots *sl, const uint64_t *m,
		     const void *send, uint64_t send_len, void *recv,
		     uint64_t recv_len, uint64_t *recv_counts, size_t es)
{
	size_t n = c->nranks;
	uint64_t staged = 0;
	int timing = fdev_comm_timing_only(c), err;

	if (!timing && (!send || !recv))
		return -EFAULT;
	for (unsigned int l = 0; !timing && l < c->nlocal; l++) {
		size_t me = c->first + l;
		const uint8_t *from = (const uint8_t *)send + l * send_len;
		uint8_t *to = fdev_ws_addr(c, l, sl->send_off);

		for (size_t d = 0; d < n; d++) {
			uint64_t len = m[me * n + d];

			if (d != me && len) {
				memcpy(to, &len, 8);
				memcpy(to + 8, from, len);
				to += 8 + len;
				staged += len;
			}
			from += len;
		}
		/* A slot nobody writes says 0 when the step is over. */
		for (size_t s = 0; s < n; s++)
			memset(fdev_ws_addr(c, l, s * (8 + sl->S)), 0, 8);
	}
	err = fdev_plan_run(c, p);
	for (unsigned int l = 0; !err && l < c->nlocal; l++) {
		size_t me = c->first + l;
		uint64_t at = 0, mine = 0;

		for (size_t j = 0; j < me; j++)
			mine += m[me * n + j];
		for (size_t s = 0; s < n && !err; s++) {
			uint64_t got = m[s * n + me];
			const uint8_t *from;

			if (s != me && !timing)
				memcpy(&got, fdev_ws_addr(c, l, s * (8 + sl->S)), 8);
			/* A count that does not fit its slot: not a sender's. */
			if (got > sl->S || got % es || at + got > recv_len) {
				err = -EPROTO;
				break;
			}
			recv_counts[l * n + s] = got / es;
			if (timing)
				continue;
			from = s == me ? (const uint8_t *)send + l * send_len + mine :
			       (const uint8_t *)fdev_ws_addr(c, l, s * (8 + sl->S)) + 8;
			memcpy((uint8_t *)recv + l * recv_len + at, from, got);
			at += got;
			staged += got;
		}
	}
	if (!err)
		c->bytes_staged += staged;
	fdev_plan_free(p);
	return err;
}

/*
 * Processes that each drive their own rank, timing only: no bytes move,
 * so what the slots' heads would carry comes through the job's file (as
 * the two rounds' counts do, counts_by_host()), in a host meeting before
 * the step that moves no clock (0 in, and every rank's clock is where
 * the last operation's meeting left it). Every process then has the
 * whole matrix, as one process driving every rank has, and builds the
 * same slots, its own part of them, in the order of each rank's own row
 * (fdev_comm_interleave_v() without the play, which a process on data
 * could not make): one process's emulated time with
 * FDEV_NO_CRITICAL_FIRST set.
 */
#define A2AV_WHOLE_PLAN_RANKS	256

static int slots_procs_timing(struct fdev_comm *c, const uint64_t *send_counts,
			      uint64_t *recv_counts, size_t es,
			      enum fdev_algo algo, uint64_t *m)
{
	size_t n = c->nranks;
	uint64_t *row = fdev_host_row(c, c->first, n * 8), v = 0;
	struct a2av_slots sl;
	struct fdev_plan p;
	int err;

	for (size_t d = 0; d < n; d++)
		row[d] = send_counts[d] * es;
	err = fdev_shm_barrier(c, &v);
	if (!err)
		counts_from_host(c, m);
	fdev_host_rows_done(c);
	if (err)
		return err;
	slots_size(c, m, &sl);
	c->a2av_slots = 1;
	c->last_algo = algo == FDEV_ALGO_AUTO ? FDEV_ALGO_DIRECT : algo;
	/*
	 * Every process holds the whole matrix, so its plan may name every
	 * rank's transfers and be cut, like one process's, into the
	 * consecutive steps whose pieces fit a queue (fdev_plan_split_steps(),
	 * which only such a plan allows: every process makes the same
	 * steps); otherwise its pieces would double instead (0.875 of the
	 * bound against 0.928 at 1 MiB mean per pair on tpu-v4-cube). Up to
	 * 256 ranks: at 1024 a whole plan is a million transfers in each
	 * process.
	 */
	if (n <= A2AV_WHOLE_PLAN_RANKS)
		fdev_plan_init(&p);
	else
		fdev_comm_plan_init(c, &p);
	err = slots_plan(c, &p, m, &sl);
	if (!err && n <= A2AV_WHOLE_PLAN_RANKS) {
		uint64_t seg = c->seg ? c->seg : 4096, k;

		err = interleave_segments(seg, &k);
		if (!err && k)
			err = fdev_plan_split_steps(&p, k * seg,
						    FDEV_INTERLEAVE_PIECES);
	}
	if (!err)
		err = fdev_comm_interleave_v(c, &p, 0);
	if (err) {
		fdev_plan_free(&p);
		return err;
	}
	return slots_run(c, &p, &sl, m, NULL, 0, NULL, UINT64_MAX,
			 recv_counts, es);
}

/*
 * Processes that each drive their own rank, on data (notify ranks): the
 * slots without a count round and without any agreement on a fallback.
 * The slot is min(workspace) / 2n - 8 bytes (every rank read every
 * rank's workspace size at the rendezvous, c->ws_min), so every rank
 * computes it alone. In the one step, every pair sends its count and
 * the first S bytes of its own into its slot, a pair with nothing its
 * count alone (8 bytes): a receiver's step ends when every source's
 * WRITEs have come, which it cannot count for a source that might send
 * nothing. After the step both ends of a pair know whether it went
 * past its slot: the sender by its own count, the receiver by the count
 * in the slot's head. Only those pairs go on, each on its own: the
 * receiver, its slots packed, tells the sender where in its workspace
 * the rest goes (an 8-byte NOTIFY WRITE, NOTIFY_REST | NOTIFY_REST_GO,
 * the offset in the immediate), and the sender writes it there (NOTIFY
 * WRITEs, NOTIFY_REST and their number). A pair that fits needs nothing
 * more, and a rank none of whose pairs overflow is done after the step.
 * The rests land after each other at the front of the receiver's
 * workspace and are staged behind them at the sender's (after the step
 * nothing else is there: the slots are packed, the step's sends done).
 * A rank without room for its rests (what two rounds would also
 * refuse, -EMSGSIZE) still answers every pair, with NOTIFY_REST_ERR, so
 * that nobody waits for what never comes; then every rank that has a
 * pair with it returns the error.
 *
 * Registered buffers (zc.c, fdev_zc_slots_begin()): a pair's first
 * piece, which carries the count, is staged as above; its later pieces
 * are read from the send buffer in place. A receiver whose output is
 * in a region that holds all that came grants each rest its final
 * offset there (rest_go_zc()), and a sender whose send buffer is in a
 * region writes its rest from there: neither stages it nor needs room.
 * Each end decides alone, so ordinary and registered buffers mix.
 */
struct a2av_rest {
	const struct a2av_slots *sl;
	const struct fdev_zc_slots *zs;	/* registered buffers, @zc: areas known */
	const uint64_t *row;		/* [n] this rank's bytes to each */
	const uint8_t *send;
	uint8_t *recv;
	size_t es;
	uint64_t *got;			/* [n] each rank's bytes to this one */
	uint64_t *at;			/* [n] where they start in recv */
	uint64_t *in_off, *out_off;	/* [n] the rests' places here */
	uint32_t *left;			/* [n] rest WRITEs still to come */
	uint8_t *gone;			/* [n] the go-ahead from d came */
	uint64_t pending, staged, in_place;
	unsigned int own, need_go;
	int room, err, zc, recv_zc;
};

/*
 * Where a go-ahead's word lands at the sender, from receiver @d: the
 * first 8 bytes of the sender's send-area slot for @d, whose count @d
 * had before it could answer; a receiver's own word goes out from the
 * next 8 (its slot for the sender is sent too: the step is over).
 */
static uint64_t rest_word_at(const struct a2av_slots *sl, uint32_t d)
{
	return sl->send_off + d * (8 + sl->S);
}

static uint64_t rest_of(uint64_t bytes, uint64_t S)
{
	return bytes > S ? bytes - S : 0;
}

/* One 8-byte timing-only NOTIFY WRITE to @r saying @imm. */
static int rest_say(struct fdev_comm *c, struct a2av_rest *r, uint32_t to,
		    uint32_t imm)
{
	struct fdev_desc d;
	int ret;

	fdev_prep_timing(&d, FDEV_OP_WRITE, c->queue[0], c->ep[to], 8, to);
	d.flags |= FDEV_DESC_NOTIFY;
	d.imm = imm;
	ret = fdev_post(c->dev, &d, 1);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	r->own++;
	return 0;
}

/*
 * The go-ahead from @d came, to @dst_off of its workspace, or with @key
 * (its registered recv buffer's region) of that region: write the rest,
 * from this rank's registered send buffer where it is in one.
 */
static int rest_send(struct fdev_comm *c, struct a2av_rest *r, uint32_t d,
		     uint64_t key, uint64_t dst_off)
{
	uint64_t S = r->sl->S, len = rest_of(r->row[d], S), chunk = max_chunk(c);
	uint64_t before = 0, parts = (len + chunk - 1) / chunk;
	struct fdev_desc *x;
	int ret;

	x = parts && parts <= NOTIFY_REST_VAL ? calloc(parts, sizeof(*x)) : NULL;
	if (!x) {
		/* @d waits for the rest: tell it none comes. */
		int e = rest_say(c, r, d, NOTIFY_REST | NOTIFY_REST_ERR);

		return e ? e : parts && parts <= NOTIFY_REST_VAL ? -ENOMEM :
		       -EMSGSIZE;
	}
	for (uint32_t j = 0; j < d; j++)
		before += r->row[j];
	if (r->zs->handle)
		r->in_place += len;
	else {
		memcpy(fdev_ws_addr(c, 0, r->out_off[d]), r->send + before + S,
		       len);
		r->staged += len;
	}
	for (uint64_t i = 0, off = 0; i < parts; i++, off += chunk) {
		uint64_t l = len - off < chunk ? len - off : chunk, so, k, dof;
		uint32_t h;

		if (r->zs->handle) {
			h = r->zs->handle;
			so = r->zs->src_off + before + S + off;
		} else
			fdev_zc_local(c, 0, r->out_off[d] + off, &h, &so);
		if (key) {
			k = key;
			dof = dst_off + off;
		} else
			fdev_zc_remote(c, d, dst_off + off, &k, &dof);
		fdev_prep_write(&x[i], c->queue[0], h, so, k, dof, l, d);
		x[i].flags |= FDEV_DESC_NOTIFY;
		x[i].imm = NOTIFY_REST | (uint32_t)parts;
	}
	ret = fdev_post(c->dev, x, (unsigned int)parts);
	free(x);
	if (ret > 0)
		r->own += (unsigned int)ret;
	if (ret < 0)
		return ret;
	return (uint64_t)ret < parts ? -EIO : 0;
}

/* A received rest message. An error is kept; the exchange goes on. */
static int rest_received(struct fdev_comm *c, struct a2av_rest *r,
			 const struct fdev_cqe *cqe)
{
	int src = rank_of_endpoint(c, (uint32_t)(cqe->user_tag >> 32));
	uint32_t imm = (uint32_t)cqe->user_tag, val = imm & NOTIFY_REST_VAL;
	uint64_t S = r->sl->S;

	if (cqe->status)
		return cqe->status;
	if (src < 0 || src == (int)c->first || !(imm & NOTIFY_REST))
		return -EPROTO;
	if (imm & NOTIFY_REST_GO) {
		/* For this rank's rest to @src: once. */
		if (!rest_of(r->row[src], S) || r->gone[src])
			return -EPROTO;
		r->gone[src] = 1;
		r->need_go--;
		if (imm & NOTIFY_REST_ERR)
			return -EMSGSIZE;	/* @src has no room: send nothing */
		if (!r->room)
			return rest_say(c, r, (uint32_t)src,
					NOTIFY_REST | NOTIFY_REST_ERR);
		if (val == NOTIFY_REST_VAL) {
			/* Into @src's registered recv buffer: the word says where. */
			uint64_t at;

			memcpy(&at, fdev_ws_addr(c, 0, rest_word_at(r->sl, src)),
			       8);
			if (!r->zc || !c->zc[src].key[1]) {
				int e = rest_say(c, r, (uint32_t)src,
						 NOTIFY_REST | NOTIFY_REST_ERR);

				return e ? e : -EPROTO;
			}
			return rest_send(c, r, (uint32_t)src, c->zc[src].key[1],
					 at);
		}
		return rest_send(c, r, (uint32_t)src, 0, (uint64_t)val * 8);
	}
	/* Part of @src's rest to this rank, or its refusal. */
	if (!r->left[src])
		return -EPROTO;
	if (imm & NOTIFY_REST_ERR || !val) {
		r->pending -= r->left[src] == NOT_HEARD ? 1 : r->left[src];
		r->left[src] = 0;
		return imm & NOTIFY_REST_ERR ? -EMSGSIZE : -EPROTO;
	}
	if (r->left[src] == NOT_HEARD) {
		r->left[src] = val;
		r->pending += val - 1;
	}
	r->left[src]--;
	r->pending--;
	return 0;
}

/*
 * The go-ahead into this rank's registered recv buffer: an 8-byte
 * NOTIFY WRITE, as the one with the workspace offset in its immediate,
 * whose bytes are the offset in the region (its immediate's value all
 * ones, which no workspace offset reaches). The sender has the region's
 * key from the areas exchanged at the start.
 */
static int rest_go_zc(struct fdev_comm *c, struct a2av_rest *r, uint32_t to,
		      uint64_t at)
{
	uint64_t from = rest_word_at(r->sl, to) + 8;
	struct fdev_desc d;
	int ret;

	memcpy(fdev_ws_addr(c, 0, from), &at, 8);
	fdev_prep_write(&d, c->queue[0], c->ws[0].handle, from, c->rkey[to],
			rest_word_at(r->sl, c->first), 8, to);
	d.flags |= FDEV_DESC_NOTIFY;
	d.imm = NOTIFY_REST | NOTIFY_REST_GO | NOTIFY_REST_VAL;
	ret = fdev_post(c->dev, &d, 1);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	r->own++;
	return 0;
}

/* After the slot step (plan_run_then()): pack the slots, then the rests. */
static int a2av_rest(struct fdev_comm *c, void *arg)
{
	struct a2av_rest *r = arg;
	size_t n = c->nranks, me = c->first;
	uint64_t S = r->sl->S, mine = 0, at = 0, in = 0, out = 0;
	unsigned int coming = 0;
	int words;
	struct fdev_cqe cqe[64];
	int err = 0;

	/* The slots were read: later reads are of the workspace. */
	c->zc_slots = NULL;

	for (size_t j = 0; j < me; j++)
		mine += r->row[j];
	for (size_t s = 0; s < n; s++) {
		const uint8_t *slot = fdev_ws_addr(c, 0, s * (8 + S));
		uint64_t got = r->row[me];

		if (s != me)
			memcpy(&got, slot, 8);
		if (got % r->es && !err)
			err = -EPROTO;
		r->got[s] = got;
		r->at[s] = at;
		memcpy(r->recv + at, s == me ? r->send + mine : slot + 8,
		       s == me || got < S ? got : S);
		r->staged += s == me || got < S ? got : S;
		at += got;
	}
	/*
	 * The rests' places: what comes at the front, what goes behind;
	 * none where they come into, or go from, a registered buffer.
	 */
	r->recv_zc = r->zc && r->zs->recv_room && at <= r->zs->recv_room;
	for (size_t s = 0; s < n; s++)
		if (s != me && rest_of(r->got[s], S)) {
			r->in_off[s] = in;
			if (!r->recv_zc)
				in += (rest_of(r->got[s], S) + 7) & ~7ULL;
			coming++;
		}
	for (size_t d = 0; d < n; d++)
		if (d != me && rest_of(r->row[d], S)) {
			r->out_off[d] = in + out;
			if (!r->zs->handle)
				out += (rest_of(r->row[d], S) + 7) & ~7ULL;
			r->need_go++;
		}
	if (!coming && !r->need_go)
		return err;
	/*
	 * Go-aheads' words (rest_go_zc()) land in the send area, and go
	 * out from it: where any may, the rests staged here stay below it.
	 */
	words = r->recv_zc && coming;
	for (size_t d = 0; r->zc && d < n; d++)
		if (d != me && rest_of(r->row[d], S) && c->zc[d].key[1])
			words = 1;
	r->room = !err && in + out <= (words ? r->sl->send_off : c->ws_bytes) &&
		  in / 8 <= NOTIFY_REST_VAL;
	if (!r->room && !err)
		err = -EMSGSIZE;
	for (size_t s = 0; s < n; s++) {
		int e;

		if (s == me || !rest_of(r->got[s], S))
			continue;
		if (r->room && r->recv_zc)
			e = rest_go_zc(c, r, (uint32_t)s,
				       c->zc[me].off[1] + r->at[s] + S);
		else
			e = rest_say(c, r, (uint32_t)s,
				     NOTIFY_REST | NOTIFY_REST_GO |
				     (r->room ? (uint32_t)(r->in_off[s] / 8) :
						NOTIFY_REST_ERR));
		if (e) {
			/* @s would wait for it: nothing more can be done. */
			return e;
		}
		if (r->room) {
			r->left[s] = NOT_HEARD;
			r->pending++;
		}
	}
	/* Go-aheads that came while this rank was still in the step. */
	{
		unsigned int k = 0;

		for (unsigned int i = 0; i < c->nearly; i++) {
			uint32_t imm = (uint32_t)c->early[i].user_tag;

			if (imm & NOTIFY_REST) {
				int e = rest_received(c, r, &c->early[i]);

				if (e && !err)
					err = e;
			} else
				c->early[k++] = c->early[i];
		}
		c->nearly = k;
	}
	while (r->own || r->need_go || r->pending) {
		int ret = fdev_wait(c->dev, cqe, 1, 64, c->timeout_ms);

		if (ret < 0)
			return err ? err : ret;
		for (int i = 0; i < ret; i++) {
			int e;

			if (fdev_cqe_received(c->dev, &cqe[i]))
				e = rest_received(c, r, &cqe[i]);
			else
				r->own--, e = cqe[i].status;
			if (e && !err)
				err = e;
		}
	}
	for (size_t s = 0; !err && s < n; s++)
		if (s != me && rest_of(r->got[s], S)) {
			if (r->recv_zc) {
				r->in_place += rest_of(r->got[s], S);
				continue;
			}
			memcpy(r->recv + r->at[s] + S,
			       fdev_ws_addr(c, 0, r->in_off[s]),
			       rest_of(r->got[s], S));
			r->staged += rest_of(r->got[s], S);
		}
	return err;
}

/* The slot step of a notify rank: its own pairs, and whom it hears from. */
static int slots_plan_notify(const struct fdev_comm *c, struct fdev_plan *p,
			     const uint64_t *row, const struct a2av_slots *sl)
{
	uint32_t n = c->nranks, me = c->first;

	fdev_plan_need(p, 2 * (uint64_t)n * (8 + sl->S));
	for (uint32_t k = 1; k < n; k++) {
		uint32_t d = (me + k) % n, s = (me + n - k) % n;
		size_t had = p->nx;
		uint64_t len = row[d] < sl->S ? row[d] : sl->S;

		fdev_plan_xfer(p, 0, me, d, sl->send_off + d * (8 + sl->S),
			       me * (8 + sl->S), 8 + len);
		if (p->nx > had)
			p->x[had].head = 8;
		/* Only its step counts: it is @s's to post, not ours. */
		fdev_plan_xfer(p, 0, s, me, sl->send_off + me * (8 + sl->S),
			       s * (8 + sl->S), 8);
	}
	return fdev_plan_finish(p);
}

static int slots_procs_notify(struct fdev_comm *c, const void *send,
			      const uint64_t *send_counts, void *recv,
			      uint64_t *recv_counts, size_t es,
			      enum fdev_algo algo)
{
	size_t n = c->nranks, me = c->first;
	struct a2av_slots sl = { 0 };
	struct fdev_zc_slots zs = { 0 };
	struct a2av_rest r = { 0 };
	struct fdev_plan p;
	uint64_t *row, *mem, *before, *first, total = 0;
	uint8_t *to;
	int err;

	if (!send || !recv)
		return -EFAULT;
	sl.S = (c->ws_min / (2 * n) - 8) & ~7ULL;
	sl.send_off = n * (8 + sl.S);
	mem = calloc(8 * n, sizeof(*mem));
	r.left = calloc(n, sizeof(*r.left));
	r.gone = calloc(n, 1);
	if (!mem || !r.left || !r.gone) {
		err = -ENOMEM;
		goto out;
	}
	row = mem;
	r.got = mem + n;
	r.at = mem + 2 * n;
	r.in_off = mem + 3 * n;
	r.out_off = mem + 4 * n;
	before = mem + 6 * n;
	first = mem + 7 * n;
	for (size_t d = 0; d < n; d++) {
		row[d] = send_counts[d] * es;
		before[d] = total;
		total += row[d];
	}
	r.sl = &sl;
	r.zs = &zs;
	r.row = row;
	r.send = send;
	r.recv = recv;
	r.es = es;
	c->a2av_slots = 1;
	c->last_algo = algo == FDEV_ALGO_AUTO ? FDEV_ALGO_DIRECT : algo;
	fdev_comm_plan_init(c, &p);
	err = slots_plan_notify(c, &p, row, &sl);
	if (!err)
		err = fdev_comm_interleave_v(c, &p, 0);
	/*
	 * Registered buffers (zc.c): each pair's pieces after its first
	 * are read from the send buffer in place; the first, which carries
	 * the count, is staged. Its length is the plan's (the interleave's
	 * piece, or the engine's chunk).
	 */
	if (!err) {
		err = fdev_zc_slots_begin(c, &zs, send, total, recv);
		r.zc = err > 0;
		err = err < 0 ? err : 0;
	}
	zs.base = sl.send_off;
	zs.stride = 8 + sl.S;
	zs.n = (uint32_t)n;
	zs.before = before;
	zs.first = first;
	for (size_t d = 0; d < n; d++)
		first[d] = row[d] < sl.S ? row[d] : sl.S;
	for (size_t i = 0; zs.handle && i < p.nx; i++) {
		const struct fdev_xfer *x = &p.x[i];
		uint64_t l = x->len < max_chunk(c) ? x->len : max_chunk(c);

		if (x->src == me && x->src_off >= sl.send_off &&
		    (x->src_off - sl.send_off) % zs.stride == 0 && l >= 8) {
			uint64_t d = (x->src_off - sl.send_off) / zs.stride;

			if (d < n && l - 8 < first[d])
				first[d] = l - 8;
		}
	}
	if (err) {
		fdev_zc_end(c);
		fdev_plan_free(&p);
		goto out;
	}
	/*
	 * Each pair's count and first S bytes at its place in the send
	 * area; from a registered buffer, what its first piece carries.
	 */
	for (size_t d = 0; d < n; d++) {
		uint64_t len = row[d] < sl.S ? row[d] : sl.S;

		if (d == me)
			continue;
		to = fdev_ws_addr(c, 0, sl.send_off + d * (8 + sl.S));
		memcpy(to, &row[d], 8);
		memcpy(to + 8, (const uint8_t *)send + before[d], first[d]);
		r.staged += first[d];
		r.in_place += len - first[d];
	}
	err = plan_run_then(c, &p, a2av_rest, &r);
	fdev_zc_end(c);
	fdev_plan_free(&p);
	for (size_t s = 0; !err && s < n; s++)
		recv_counts[s] = r.got[s] / es;
	if (!err) {
		c->bytes_staged += r.staged;
		c->bytes_in_place += r.in_place;
	}
out:
	free(mem);
	free(r.left);
	free(r.gone);
	return err;
}

/* Which slots processes that each drive their own rank take, if any. */
static int slots_procs(struct fdev_comm *c, enum fdev_algo algo)
{
	if (!c->multi || c->nlocal != 1 || !slots_allowed(c, algo))
		return 0;
	if (fdev_comm_timing_only(c))
		return counts_by_host(c) ? 1 : 0;
	return c->notify && c->dev && c->ws_min / (2 * c->nranks) >= 16 ? 2 : 0;
}

static int all_to_all_v(struct fdev_comm *c, const void *send,
			const uint64_t *send_counts, void *recv,
			uint64_t *recv_counts, enum fdev_dtype dt,
			enum fdev_algo algo)
{
	size_t es = fdev_dtype_size(dt), n;
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	uint64_t *m;
	int err = check(c, dt);

	if (err)
		return err;
	if (!send_counts || !recv_counts)
		return -EFAULT;
	n = c->nranks;
	m = calloc(n * n, sizeof(*m));
	if (!m)
		return -ENOMEM;
	/* One process, every rank's row here: the slots, if they fit. */
	if (!c->multi && c->nlocal == n) {
		struct a2av_slots sl;
		uint64_t smax, rmax;

		for (size_t i = 0; i < n * n; i++)
			m[i] = send_counts[i] * es;
		fdev_a2av_max_rows((unsigned int)n, m, &smax, &rmax);
		c->a2av_slots = slots_fit(c, m, algo, &sl);
		if (c->a2av_slots) {
			c->last_algo = algo == FDEV_ALGO_AUTO ? FDEV_ALGO_DIRECT :
				       algo;
			fdev_comm_plan_init(c, &p);
			err = slots_plan(c, &p, m, &sl);
			if (!err)
				err = fdev_comm_interleave_v(c, &p, 1);
			if (err)
				fdev_plan_free(&p);
			else
				err = slots_run(c, &p, &sl, m, send, smax, recv,
						rmax, recv_counts, es);
			free(m);
			return err;
		}
		memset(m, 0, n * n * sizeof(*m));
	} else {
		int how = slots_procs(c, algo);

		c->a2av_slots = 0;
		if (how) {
			err = how == 1 ?
			      slots_procs_timing(c, send_counts, recv_counts, es,
						 algo, m) :
			      slots_procs_notify(c, send, send_counts, recv,
						 recv_counts, es, algo);
			free(m);
			return err;
		}
	}
	/*
	 * The count exchange: every rank's row goes to every rank (an
	 * all-gather of n words), so each sender knows where its bytes go.
	 */
	{
		struct fdev_coll_layout glo;
		struct fdev_plan g;
		uint64_t *rows = calloc(c->nlocal * n, sizeof(*rows));
		uint64_t *all = calloc(c->nlocal * n * n, sizeof(*all));
		int host = counts_by_host(c);

		if (!rows || !all) {
			free(rows);
			free(all);
			free(m);
			return -ENOMEM;
		}
		for (size_t i = 0; i < c->nlocal * n; i++)
			rows[i] = send_counts[i] * es;
		if (host)
			memcpy(fdev_host_row(c, c->first, n * 8), rows, n * 8);
		fdev_comm_plan_init(c, &g);
		err = fdev_plan_all_gather(&g, c->nranks, n * 8, FDEV_ALGO_DIRECT,
					   &glo);
		/*
		 * The exchange is latency-bound (512 bytes a pair at 64 ranks
		 * against hops of 1 us on tpu-v4-cube): posted by the route
		 * leads, the far rows go first and the near ones last: 6.061
		 * us there against 6.276 in rotated order, which is the six
		 * hops of the diameter at 1.010 us each (a 512-byte row at 50
		 * GB/s, stored and forwarded). Where there are no leads,
		 * nothing moves.
		 */
		if (!err && algo != FDEV_ALGO_RING)
			err = fdev_comm_interleave(c, &g);
		err = run_coll_zc(c, &g, err, &glo, rows, all, NULL, NULL,
				  RUN_INTERNAL);
		if (!err && host)
			counts_from_host(c, m);
		else if (!err && fdev_comm_timing_only(c))
			/* No bytes moved: what the caller knows must do. */
			for (size_t l = 0; l < c->nlocal; l++)
				memcpy(m + (c->first + l) * n, rows + l * n,
				       n * 8);
		else if (!err)
			memcpy(m, all, n * n * 8);
		if (host)
			fdev_host_rows_done(c);
		free(rows);
		free(all);
	}
	if (err) {
		free(m);
		return err;
	}
	{
		uint64_t gather_ps = c->last_ps;
		/* Each local rank's own totals, in bytes. */
		uint64_t *tot = calloc(2 * c->nlocal, sizeof(*tot));

		if (!tot) {
			free(m);
			return -ENOMEM;
		}
		for (size_t l = 0; l < c->nlocal; l++)
			for (size_t s = 0; s < n; s++) {
				recv_counts[l * n + s] = m[s * n + c->first + l] / es;
				tot[l] += m[(c->first + l) * n + s];
				tot[c->nlocal + l] += m[s * n + c->first + l];
			}
		c->last_algo = algo == FDEV_ALGO_AUTO ? FDEV_ALGO_DIRECT : algo;
		fdev_comm_plan_init(c, &p);
		err = fdev_plan_all_to_all_v(&p, c->nranks, m, algo, &lo);
		if (!err && algo != FDEV_ALGO_RING)
			err = fdev_comm_interleave(c, &p);
		free(m);
		if (err) {
			fdev_plan_free(&p);
			free(tot);
			return err;
		}
		err = run_coll_zc(c, &p, 0, &lo, send, recv, tot,
				  tot + c->nlocal, RUN_ZC);
		free(tot);
		c->last_ps += gather_ps;
	}
	return err;
}

static int all_reduce(struct fdev_comm *c, const void *send, void *recv,
		      size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err = check(c, dt);

	if (err)
		return err;
	algo = choose(c, COLL_AR, count, dt, 0, algo);
	fdev_comm_plan_init(c, &p);
	err = coll_plan(c, &p, COLL_AR, count, dt, 0, algo, &lo);
	return run_coll_zc(c, &p, err, &lo, send, recv, NULL, NULL,
			   RUN_ZC | RUN_ALIAS);
}

static int reduce_scatter(struct fdev_comm *c, const void *send,
			  void *recv, size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err = check(c, dt);

	if (err)
		return err;
	algo = choose(c, COLL_RS, count, dt, 0, algo);
	fdev_comm_plan_init(c, &p);
	err = coll_plan(c, &p, COLL_RS, count, dt, 0, algo, &lo);
	return run_coll_zc(c, &p, err, &lo, send, recv, NULL, NULL, RUN_ZC);
}

static int all_gather(struct fdev_comm *c, const void *send, void *recv,
		      size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err = check(c, dt);

	if (err)
		return err;
	algo = choose(c, COLL_AG, count, dt, 0, algo);
	fdev_comm_plan_init(c, &p);
	err = coll_plan(c, &p, COLL_AG, count, dt, 0, algo, &lo);
	return run_coll_zc(c, &p, err, &lo, send, recv, NULL, NULL, RUN_ZC);
}

static int broadcast(struct fdev_comm *c, const void *send, void *recv,
		     size_t count, enum fdev_dtype dt, int root,
		     enum fdev_algo algo)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err = check(c, dt);

	if (err)
		return err;
	if (root < 0 || (unsigned int)root >= c->nranks)
		return -EINVAL;
	algo = choose(c, COLL_BC, count, dt, (unsigned int)root, algo);
	fdev_comm_plan_init(c, &p);
	err = coll_plan(c, &p, COLL_BC, count, dt, (unsigned int)root, algo,
			&lo);
	/*
	 * Only the root's send buffer is read; others may pass recv. Send
	 * may be recv (in place): the root's copy onto itself is skipped.
	 */
	return run_coll_zc(c, &p, err, &lo, send ? send : recv, recv, NULL,
			   NULL, RUN_ZC | RUN_ALIAS);
}

enum fdev_algo fdev_comm_last_algo(const struct fdev_comm *c)
{
	return c ? c->last_algo : FDEV_ALGO_AUTO;
}

/* The public calls: each one operation in the trace (trace.c). */
int fdev_all_to_all(struct fdev_comm *c, const void *send, void *recv,
		    size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	if (!c)
		return -EINVAL;
	fdev_op_begin(c, "all_to_all");
	return fdev_op_end(c, all_to_all(c, send, recv, count, dt, algo));
}

int fdev_all_to_all_v(struct fdev_comm *c, const void *send,
		      const uint64_t *send_counts, void *recv,
		      uint64_t *recv_counts, enum fdev_dtype dt,
		      enum fdev_algo algo)
{
	if (!c)
		return -EINVAL;
	fdev_op_begin(c, "all_to_all_v");
	return fdev_op_end(c, all_to_all_v(c, send, send_counts, recv,
					   recv_counts, dt, algo));
}

int __fdev_comm_a2av_slots(const struct fdev_comm *c)
{
	return c->a2av_slots;
}

int fdev_all_reduce(struct fdev_comm *c, const void *send, void *recv,
		    size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	if (!c)
		return -EINVAL;
	fdev_op_begin(c, "all_reduce");
	return fdev_op_end(c, all_reduce(c, send, recv, count, dt, algo));
}

int fdev_reduce_scatter(struct fdev_comm *c, const void *send, void *recv,
			size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	if (!c)
		return -EINVAL;
	fdev_op_begin(c, "reduce_scatter");
	return fdev_op_end(c, reduce_scatter(c, send, recv, count, dt, algo));
}

int fdev_all_gather(struct fdev_comm *c, const void *send, void *recv,
		    size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	if (!c)
		return -EINVAL;
	fdev_op_begin(c, "all_gather");
	return fdev_op_end(c, all_gather(c, send, recv, count, dt, algo));
}

int fdev_broadcast(struct fdev_comm *c, const void *send, void *recv,
		   size_t count, enum fdev_dtype dt, int root,
		   enum fdev_algo algo)
{
	if (!c)
		return -EINVAL;
	fdev_op_begin(c, "broadcast");
	return fdev_op_end(c, broadcast(c, send, recv, count, dt, root, algo));
}
