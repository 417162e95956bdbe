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

#include "internal.h"

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
 * The engine holds a bounded number of segments in flight (its event
 * table) and of transfers; a submission beyond them is pushed back. A
 * step keeps within a budget of both, posting more as completions come,
 * so neither path meets the push-back; when everything fits (the usual
 * case) it is one batch and one wait. FDEV_ENGINE_SEGMENTS sets the
 * segment budget (default 192Ki, below the module's 256Ki).
 */
static uint64_t seg_budget(void)
{
	const char *e = getenv("FDEV_ENGINE_SEGMENTS");
	uint64_t v = e && *e ? strtoull(e, NULL, 0) : 0;

	return v >= 16 ? v : 192 * 1024;
}

#define FDEV_XFER_BUDGET	8192

static uint64_t max_chunk(const struct fdev_comm *c)
{
	return seg_budget() / 2 * (c->seg ? c->seg : 4096);
}

static int post_window(struct fdev_comm *c, struct fdev_desc *d,
		       unsigned int nd)
{
	uint64_t budget = seg_budget(), segs = 0, seg = c->seg ? c->seg : 4096;
	unsigned int next = 0, done = 0;
	struct fdev_cqe cqe[256];
	int err = 0;

	while (done < nd) {
		unsigned int start = next;
		int ret;

		while (next < nd && next - done < FDEV_XFER_BUDGET) {
			uint64_t need = d[next].len / seg + 2;

			if (segs + need > budget && next > done)
				break;
			segs += need;
			next++;
		}
		if (next > start) {
			ret = fdev_post(c->dev, d + start, next - start);
			if (ret >= 0 && (unsigned int)ret < next - start)
				ret = -EIO;
			if (ret < 0) {
				/* Reap what went in, so nothing is left behind. */
				next = start;
				err = ret;
				if (done == next)
					return err;
			}
		}
		ret = fdev_wait(c->dev, cqe, next == nd || err ? (next - done < 256 ?
				next - done : 256) : 1, 256, 0);
		if (ret < 0)
			return err ? err : ret;
		for (int i = 0; i < ret; i++) {
			uint64_t t = cqe[i].user_tag;

			if (cqe[i].status && !err)
				err = cqe[i].status;
			if (t < nd)
				segs -= d[t].len / seg + 2;
		}
		done += (unsigned int)ret;
		if (err && done == next)
			return err;
	}
	return err;
}

int fdev_plan_run(struct fdev_comm *c, const struct fdev_plan *p)
{
	int timing = fdev_comm_timing_only(c);
	struct fdev_desc *d;
	size_t xi = 0, dcap;
	uint64_t t0;
	int err = 0;

	if (p->ws_need > c->ws_bytes && !timing)
		return -EMSGSIZE;
	if (c->proxy)
		return fdev_proxy_run(c, p);
	if (!c->dev)
		return run_host(c, p);
	if (virtual_data_multi(c)) {
		/* Needs a receive-side wait the module does not have yet. */
		return -EOPNOTSUPP;
	}
	if (p->mcast_ranks) {
		err = fdev_comm_circuits_open(c);
		if (err)
			return err;
	}
	dcap = p->nx + 16;
	d = malloc(dcap * sizeof(*d));
	if (!d)
		return -ENOMEM;
	/* Everyone is done with what the last call left in the workspaces. */
	if (c->multi && !timing) {
		uint64_t v = fdev_clock(c->dev);

		err = fdev_shm_barrier(c, &v);
		if (err && err != -EPIPE)
			goto out;
		err = fdev_advance_to(c->dev, c->queue[0], v);
		if (err)
			goto out;
	}
	t0 = fdev_clock(c->dev);
	for (uint32_t s = 0; s < p->nsteps && !err; s++) {
		unsigned int nd = 0;

		for (; xi < p->nx && p->x[xi].step == s; xi++) {
			const struct fdev_xfer *x = &p->x[xi];
			uint32_t l = x->src - c->first;
			uint64_t chunk = max_chunk(c), off = 0;

			int mcast = x->dst == FDEV_PLAN_MCAST;

			if (!is_local(c, x->src) || fdev_rank_failed(c, x->src) ||
			    (!mcast && fdev_rank_failed(c, x->dst)))
				continue;
			/* What the engine could never hold at once goes in pieces. */
			do {
				uint64_t len = x->len - off < chunk ? x->len - off : chunk;

				if (nd == dcap) {
					struct fdev_desc *nd2;

					dcap *= 2;
					nd2 = realloc(d, dcap * sizeof(*d));
					if (!nd2) {
						err = -ENOMEM;
						break;
					}
					d = nd2;
				}
				if (timing)
					fdev_prep_timing(&d[nd], FDEV_OP_WRITE, c->queue[l],
							 mcast ? 0 : c->ep[x->dst], len, nd);
				else
					fdev_prep_write(&d[nd], c->queue[l],
							c->ws[l].handle, x->src_off + off,
							mcast ? 0 : c->rkey[x->dst],
							x->dst_off + off, len, nd);
				/* Every destination bound its workspace at 0. */
				if (mcast)
					d[nd].circuit = c->mc[x->src];
				nd++;
				off += len;
			} while (off < x->len && !err);
		}
		if (nd && !err)
			err = post_window(c, d, nd);
		/* Even after an error: the others must not wait for us. */
		if (c->multi) {
			uint64_t v = fdev_clock(c->dev);
			int e2 = fdev_shm_barrier(c, &v);

			if (!e2 || e2 == -EPIPE) {
				int e3 = fdev_advance_to(c->dev, c->queue[0], v);

				if (e3 && !e2)
					e2 = e3;
			}
			if (!err)
				err = e2;
			if (err)
				break;
		}
		if (!timing && !err)
			for (unsigned int l = 0; l < c->nlocal && !err; l++)
				err = fdev_plan_apply(p, s, c->first + l,
						      c->ws[l].addr);
		/*
		 * Processes that each drive their own rank: nobody may write
		 * the next step into a workspace whose owner is still reducing
		 * from it. (Free of fabric time: the clocks are aligned.)
		 */
		if (c->multi && !timing && s + 1 < p->nsteps) {
			uint64_t v = 0;
			int e2 = fdev_shm_barrier(c, &v);

			if (!err && e2 && e2 != -EPIPE)
				err = e2;
			if (err)
				break;
		}
	}
	c->last_ps = fdev_clock(c->dev) - t0;
out:
	free(d);
	return err;
}

static int any_failed(const struct fdev_comm *c)
{
	for (unsigned int w = 0; w < FDEV_FAILED_WORDS; w++)
		if (c->failed[w])
			return -ENOLINK;
	return 0;
}

/* Stage the local ranks' inputs, run, copy the outputs back. */
static int run_coll(struct fdev_comm *c, struct fdev_plan *p,
		    const struct fdev_coll_layout *lo, const void *send,
		    void *recv)
{
	int timing = fdev_comm_timing_only(c);
	int err;

	if (!timing && (!send || !recv)) {
		err = -EFAULT;
		goto out;
	}
	if (!timing && p->ws_need > c->ws_bytes) {
		err = -EMSGSIZE;
		goto out;
	}
	if (!timing)
		for (unsigned int l = 0; l < c->nlocal; l++)
			memcpy(fdev_ws_addr(c, l, lo->send_off),
			       (const uint8_t *)send + l * lo->send_len,
			       lo->send_len);
	err = fdev_plan_run(c, p);
	if (!err && !timing)
		for (unsigned int l = 0; l < c->nlocal; l++)
			memcpy((uint8_t *)recv + l * lo->recv_len,
			       fdev_ws_addr(c, l, lo->recv_off), lo->recv_len);
out:
	fdev_plan_free(p);
	return err;
}

static int check(struct fdev_comm *c, enum fdev_dtype dt)
{
	if (!c || !fdev_dtype_size(dt))
		return -EINVAL;
	return any_failed(c);
}

int fdev_all_to_all(struct fdev_comm *c, const void *send, void *recv,
		    size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err = check(c, dt);

	if (err)
		return err;
	fdev_plan_init(&p);
	err = fdev_plan_all_to_all(&p, c->nranks, count * fdev_dtype_size(dt),
				   algo, c->node_size, &lo);
	if (err) {
		fdev_plan_free(&p);
		return err;
	}
	return run_coll(c, &p, &lo, send, recv);
}

int fdev_all_to_all_v(struct fdev_comm *c, const void *send,
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
	/*
	 * The count exchange: every rank's row goes to every rank (an
	 * all-gather of n words), so each sender knows where its bytes go.
	 */
	{
		struct fdev_coll_layout glo;
		struct fdev_plan g;
		uint64_t *rows = calloc(c->nlocal * n, sizeof(*rows));
		uint64_t *all = calloc(c->nlocal * n * n, sizeof(*all));

		if (!rows || !all) {
			free(rows);
			free(all);
			free(m);
			return -ENOMEM;
		}
		for (size_t i = 0; i < c->nlocal * n; i++)
			rows[i] = send_counts[i] * es;
		fdev_plan_init(&g);
		err = fdev_plan_all_gather(&g, c->nranks, n * 8, FDEV_ALGO_DIRECT,
					   &glo);
		if (!err)
			err = run_coll(c, &g, &glo, rows, all);
		else
			fdev_plan_free(&g);
		if (!err) {
			if (fdev_comm_timing_only(c)) {
				/* No bytes moved: what the caller knows must do. */
				for (size_t l = 0; l < c->nlocal; l++)
					memcpy(m + (c->first + l) * n,
					       rows + l * n, n * 8);
			} else {
				memcpy(m, all, n * n * 8);
			}
		}
		free(rows);
		free(all);
	}
	if (err) {
		free(m);
		return err;
	}
	{
		uint64_t gather_ps = c->last_ps;

		for (size_t l = 0; l < c->nlocal; l++)
			for (size_t s = 0; s < n; s++)
				recv_counts[l * n + s] = m[s * n + c->first + l] / es;
		fdev_plan_init(&p);
		err = fdev_plan_all_to_all_v(&p, c->nranks, m, algo, &lo);
		free(m);
		if (err) {
			fdev_plan_free(&p);
			return err;
		}
		err = run_coll(c, &p, &lo, send, recv);
		c->last_ps += gather_ps;
	}
	return err;
}

int fdev_all_reduce(struct fdev_comm *c, const void *send, void *recv,
		    size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err = check(c, dt);

	if (err)
		return err;
	fdev_plan_init(&p);
	err = fdev_plan_all_reduce(&p, c->nranks, count, dt, algo,
				   c->node_size, &lo);
	if (err) {
		fdev_plan_free(&p);
		return err;
	}
	return run_coll(c, &p, &lo, send, recv);
}

int fdev_reduce_scatter(struct fdev_comm *c, const void *send, void *recv,
			size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err = check(c, dt);

	if (err)
		return err;
	fdev_plan_init(&p);
	err = fdev_plan_reduce_scatter(&p, c->nranks, count, dt, algo, &lo);
	if (err) {
		fdev_plan_free(&p);
		return err;
	}
	return run_coll(c, &p, &lo, send, recv);
}

int fdev_all_gather(struct fdev_comm *c, const void *send, void *recv,
		    size_t count, enum fdev_dtype dt, enum fdev_algo algo)
{
	struct fdev_coll_layout lo;
	struct fdev_plan p;
	int err = check(c, dt);

	if (err)
		return err;
	fdev_plan_init(&p);
	err = fdev_plan_all_gather(&p, c->nranks, count * fdev_dtype_size(dt),
				   algo, &lo);
	if (err) {
		fdev_plan_free(&p);
		return err;
	}
	return run_coll(c, &p, &lo, send, recv);
}

int fdev_broadcast(struct fdev_comm *c, const void *send, void *recv,
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
	fdev_plan_init(&p);
	err = fdev_plan_broadcast(&p, c->nranks, count * fdev_dtype_size(dt),
				  (unsigned int)root, algo, &lo);
	if (err) {
		fdev_plan_free(&p);
		return err;
	}
	/* Only the root's send buffer is read; others may pass recv. */
	return run_coll(c, &p, &lo, send ? send : recv, recv);
}
