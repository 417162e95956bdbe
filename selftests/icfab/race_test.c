// SPDX-License-Identifier: GPL-2.0
/*
 * The WRITE path off the fabric lock against teardown (issue #20): a
 * bounded stress of several processes and threads on one fabric.
 *
 * Counting senders (SENDERS processes, on endpoints 0 and 1) submit, in
 * batches of 1 to BATCH, timing-only WRITEs and READs, NOTIFY WRITEs
 * (timing-only and into a target's region), memory WRITEs and memory
 * READs, by ioctl SUBMIT, SUBMIT with ICFAB_SUBMIT_F_CQ and io_uring's
 * SUBMIT_BATCH, in turn, from two threads on the one context at once
 * (one thread's WRITE path meets the other's taking of the fabric lock,
 * which starts its accepted list). Between batches they destroy one of
 * their send queues (-EBUSY while it has anything in flight) and free
 * and unmap their own region with transfers on it; a third thread ends
 * their WAITs (WAIT_END). Each reaps everything it was told was
 * accepted, from the ring and the WAIT list, and counts: every accepted
 * descriptor (its user_tag) must complete exactly once, whatever its
 * status, and nothing else may. Every memory transfer's bytes go by the
 * copier, off the lock (copy_unlocked_min lowered to their size for the
 * test).
 *
 * Targets (endpoints 2 and 3) have the receive queue the NOTIFY WRITEs
 * go to and the region the memory ones name by key; they reap, destroy
 * their receive queue and make it again (or make one whose QUEUE_CREATE
 * cannot write its answer back: visible to promises, then closed), free
 * and unmap their region and export a new one, send the same mix
 * themselves (a receiver's WRITE path), and now and then close
 * everything and attach again (a receiver gone with promises and
 * reservations on its queue); a thread ends their WAITs. Chaos processes
 * attach to any endpoint, submit the same mix every way (io_uring's
 * single SUBMITs too) and go at once: close, exit, free and unmap their
 * region first, or SIGKILL mid-SUBMIT. The parent makes live commits
 * meanwhile (a link down and up through debugfs' fault file: each one
 * passes every attached context through the path's give-back), and
 * evicts (CTX_EVICT) one chaos process in six mid-flight and now and
 * then a target's context, with NOTIFY WRITEs promised and reserved on
 * its receive queue: the target leaves it, as when it closes, and
 * attaches again (a step of a target that fails while it is evicted is
 * not a failure). How many evictions hit is logged, not asserted.
 *
 * Then, once the senders are gone, each target's receive queue must be
 * destroyable (nothing promised or reserved stays on it); once every
 * process is gone: no credit is left promised (granted_events and
 * granted_xfers 0, with only the parent's free-running context attached,
 * which has none), every page of every region is given back (a region
 * of max_mem_mb, lowered, fits), and the module's reference count is
 * what it was (run_tests.sh checks it again, and dmesg: a promise never
 * given back WARNs there; the VM's rmmod checks the rest). What is
 * asserted does not depend on timing: only counts that hold in every
 * interleaving, and bounds on waits that only a hang reaches. How often
 * each path was taken is logged (debugfs fast_*), not asserted.
 *
 * Each of these breaks of the module fails it: a refused memory WRITE's
 * references not put (icfab_submit_fast()), or taken twice by a loop run
 * again on the descriptor it refused (the leak found on 2026-12-07);
 * the credit's events not given back (__icfab_ctx_slow()); a promise not
 * counted down at its start (__icfab_notify_keep(), by the WARN).
 *
 * RACE_ROUNDS=N in the environment scales the work (default 1: 3 to 10 s
 * under TCG with slub_debug); RACE_SEED=S changes every process's seed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "fabric_util.h"
#include "uring_util.h"
#include "kselftest_harness.h"

#define DEV		"/dev/icfab0"
#define NR_EPS		4
#define SENDERS		4		/* counting senders, on eps 0 and 1 */
#define TARGETS		2		/* eps 2 and 3 */
#define TARGET0		2
#define BATCH		12
#define SQ_DEPTH	16
#define RQ_DEPTH	6		/* small: full receive queues too */
#define RSIZE		(64 * 1024)
#define XLEN		4096
#define ROUNDS		200		/* batches per counting sender */
#define CHAOS		40		/* chaos processes, one after another */
#define MAX_TAGS	(ROUNDS * 2 * BATCH * 20 + 2)
#define WAIT_MS		20000		/* one WAIT: a hang, not timing */

struct shared {
	uint64_t key[NR_EPS];		/* a target's region key, 0: none */
	atomic_int stop;		/* the senders are done */
	atomic_int senders_left;
	struct sres {
		int err;		/* a step that failed unexpectedly */
		int line;
		unsigned long accepted, completed, dup, stray, missing;
		unsigned long plain, cq, batch;	/* accepted by each way */
		unsigned long refused[140];	/* by -errno of a SUBMIT */
	} s[SENDERS];
	struct tres {
		int err, line;
		unsigned long reaped, sent, qdestroyed, qbusy, rfreed;
		unsigned long reopened, efault, evicted;
		/*
		 * 1 while the parent evicts the target's context (CTX_EVICT
		 * of the one it finds attached), 2 once it has: then the
		 * target leaves the context it has and sets it back to 0.
		 */
		atomic_int evicting;
	} t[TARGETS];
	/* CTX_EVICTs that ended a context (0), of chaos and targets. */
	unsigned long chaos_evicted, targets_evicted;
};

static struct shared *sh;

/* RACE_SEED: mixed into every process's seed (0 when unset). */
static uint32_t seed0(void)
{
	const char *v = getenv("RACE_SEED");

	return v ? (uint32_t)strtoul(v, NULL, 0) * 0x9e3779b9u : 0;
}

/* RACE_ROUNDS: how many times the default work (1 when unset or bad). */
static int getenv_rounds(void)
{
	const char *v = getenv("RACE_ROUNDS");
	int n = v ? atoi(v) : 1;

	return n > 0 && n <= 20 ? n : 1;
}

static uint32_t rnd(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static int uring_batch(struct io_uring *ring, int fd, struct icfab_desc *d,
		       unsigned int n)
{
	struct icfab_uring_batch b = { .descs = (uintptr_t)d, .nr = n,
				       .flags = ICFAB_SUBMIT_F_CQ };
	struct io_uring_cqe *c;
	int res;

	if (!ucmd(ring, fd, ICFAB_UCMD_SUBMIT_BATCH, &b, 7))
		return -1000;
	if (io_uring_submit_and_wait(ring, 1) != 1 ||
	    io_uring_wait_cqe(ring, &c) || c->user_data != 7)
		return -1001;
	res = c->res;
	io_uring_cq_advance(ring, 1);
	return res;
}

/* A local region, mapped and (@access) exported. */
struct region {
	uint32_t handle;
	uint64_t key;
	unsigned char *map;
};

static int region_new(int fd, uint32_t ep, uint32_t access, struct region *r)
{
	return region_map(fd, ep, RSIZE, access, &r->handle, &r->key, &r->map);
}

/* Free and unmap, in either order (@unmap_first), transfers on it or not. */
static void region_drop(int fd, struct region *r, bool unmap_first)
{
	if (unmap_first && r->map)
		munmap(r->map, RSIZE);
	if (r->handle)
		ctx_region_free(fd, r->handle);
	if (!unmap_first && r->map)
		munmap(r->map, RSIZE);
	r->map = NULL;
	r->handle = 0;
	r->key = 0;
}

/*
 * One descriptor of the mix from queue @q, tagged @tag: a timing-only
 * WRITE, a timing-only NOTIFY WRITE, a memory NOTIFY WRITE, a memory
 * WRITE or a memory READ (a target's region, its key as last
 * published), now and then a DELAY.
 */
static struct icfab_desc mix(uint32_t *seed, uint32_t q, uint32_t self_ep,
			     struct region *loc, uint64_t tag)
{
	uint32_t k = rnd(seed) % 12;
	uint32_t t = TARGET0 + rnd(seed) % TARGETS;
	uint32_t peer = (self_ep + 1 + rnd(seed) % (NR_EPS - 1)) % NR_EPS;
	uint64_t key = __atomic_load_n(&sh->key[t], __ATOMIC_RELAXED);
	uint64_t loff = (rnd(seed) % (RSIZE / XLEN)) * XLEN;
	uint64_t roff = (rnd(seed) % (RSIZE / XLEN)) * XLEN;
	uint32_t region = loc ? loc->handle : 0;
	struct icfab_desc d;

	switch (k) {
	case 0: case 1: case 2:
		return desc_put(q, peer, XLEN * (1 + k), tag);
	case 3: case 4:
		return desc_notify_put(q, t, XLEN, tag, k);
	case 5:
		d = mv(ICFAB_OP_WRITE, q, region, loff, key, roff, XLEN, tag);
		d.flags = ICFAB_DESC_F_NOTIFY;
		d.imm = 5;
		return d;
	case 6: case 7:
		return mv(ICFAB_OP_WRITE, q, region, loff, key, roff, XLEN,
			  tag);
	case 8: case 9:
		return mv(ICFAB_OP_READ, q, region, loff, key, roff, XLEN,
			  tag);
	case 10:
		/* A timing-only READ from @peer. */
		d = desc_put(q, peer, XLEN, tag);
		d.op = ICFAB_OP_READ;
		return d;
	default:
		return (struct icfab_desc){ .op = ICFAB_OP_DELAY, .queue = q,
					    .len = 1000, .user_tag = tag };
	}
}

static atomic_int ender_stop;

/* WAIT_END on @fd now and then, until ender_stop. */
static void *ender(void *arg)
{
	int fd = (int)(intptr_t)arg;

	while (!atomic_load(&ender_stop)) {
		ioctl(fd, ICFAB_IOC_WAIT_END);
		usleep(3000);
	}
	return NULL;
}

/* @d[0..@n) by way @way: ioctl SUBMIT, with the ring, io_uring's BATCH. */
static int submit_way(int fd, struct io_uring *ring, struct icfab_desc *d,
		      int n, int way)
{
	if (way == 0)
		return ctx_submit(fd, d, n);
	if (way == 1)
		return ctx_submit_flags(fd, d, n, ICFAB_SUBMIT_F_CQ);
	return uring_batch(ring, fd, d, n);
}

/*
 * A second thread of a sender, submitting on the same context at the
 * same time as the first: between two barriers, one batch of its own.
 */
struct twin {
	pthread_t th;
	pthread_barrier_t go, done;
	struct io_uring ring;
	int fd, n, way, ret;
	bool stop;
	struct icfab_desc d[BATCH];
};

static void *twin_fn(void *arg)
{
	struct twin *t = arg;

	for (;;) {
		pthread_barrier_wait(&t->go);
		if (t->stop)
			return NULL;
		t->ret = submit_way(t->fd, &t->ring, t->d, t->n, t->way);
		pthread_barrier_wait(&t->done);
	}
}

/* A completion of tag @t: its one, a stray's or a duplicate's. */
static void saw(struct sres *r, unsigned char *seen, uint64_t t)
{
	if (t >= MAX_TAGS || seen[t] == 0)
		r->stray++;
	else if (seen[t] == 2)
		r->dup++;
	else
		seen[t] = 2;
}

#define SFAIL(e) do { r->err = (e); r->line = __LINE__; goto out; } while (0)

/* Counting sender @i: see the top. 0, or its result says what failed. */
static void sender(int i)
{
	struct sres *r = &sh->s[i];
	uint32_t ep = i % 2, seed = seed0() + 0x5eed0 + i;
	unsigned char *seen = calloc(MAX_TAGS, 1);
	struct icfab_desc d[BATCH];
	struct icfab_cqe c[64];
	struct region loc = { 0 };
	struct io_uring ring;
	struct cq_map m;
	pthread_t th;
	struct twin tw = { 0 };
	uint64_t tag = 1;
	unsigned long out_n = 0;	/* accepted, not completed */
	int fd, q[2], ret, k, n;
	bool th_up = false, tw_up = false;

	fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0 || !seen)
		SFAIL(-1);
	if ((ret = ctx_attach(fd, ep)))
		SFAIL(ret);
	q[0] = ctx_queue(fd, ep, SQ_DEPTH);
	q[1] = ctx_queue(fd, ep, SQ_DEPTH);
	if (q[0] < 0 || q[1] < 0)
		SFAIL(-2);
	if ((ret = cq_setup(fd, 8, &m)) < 0)	/* small: overflows too */
		SFAIL(ret);
	if ((ret = region_new(fd, ep, ICFAB_ACCESS_ALL, &loc)))
		SFAIL(ret);
	if (io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 |
				IORING_SETUP_CQE32))
		SFAIL(-3);
	if (pthread_create(&th, NULL, ender, (void *)(intptr_t)fd))
		SFAIL(-4);
	th_up = true;
	tw.fd = fd;
	if (io_uring_queue_init(8, &tw.ring, IORING_SETUP_SQE128 |
				IORING_SETUP_CQE32) ||
	    pthread_barrier_init(&tw.go, NULL, 2) ||
	    pthread_barrier_init(&tw.done, NULL, 2) ||
	    pthread_create(&tw.th, NULL, twin_fn, &tw))
		SFAIL(-7);
	tw_up = true;

	for (int round = 0; round < ROUNDS * getenv_rounds(); round++) {
		uint64_t first = tag, first2;
		int way = round % 3, ret2;

		n = 1 + rnd(&seed) % BATCH;
		for (k = 0; k < n; k++)
			d[k] = mix(&seed, q[round % 2], ep, &loc, tag++);
		/* The twin's batch, on the other queue, at the same time. */
		first2 = tag;
		tw.n = 1 + rnd(&seed) % BATCH;
		tw.way = (round + 1 + round / 3) % 3;
		for (k = 0; k < tw.n; k++)
			tw.d[k] = mix(&seed, q[1 - round % 2], ep, &loc, tag++);
		pthread_barrier_wait(&tw.go);
		ret = submit_way(fd, &ring, d, n, way);
		pthread_barrier_wait(&tw.done);
		ret2 = tw.ret;
		/* Marked expected before any of this round is reaped. */
		for (int b = 0; b < 2; b++) {
			int got = b ? ret2 : ret, nb = b ? tw.n : n;
			int w = b ? tw.way : way;
			uint64_t t0 = b ? first2 : first;

			if (got < -999 || got > nb)
				SFAIL(got);
			if (got < 0 && -got < 140)
				r->refused[-got]++;
			if (got <= 0)
				continue;
			for (uint64_t t = t0; t < t0 + got; t++) {
				if (t >= MAX_TAGS)
					SFAIL(-5);
				seen[t] = 1;	/* expected */
			}
			r->accepted += got;
			out_n += got;
			*(w == 0 ? &r->plain : w == 1 ? &r->cq :
			  &r->batch) += got;
		}
		/* Tags not accepted are never expected. */

		/* Its queue goes, or is busy; its region goes under it. */
		if (rnd(&seed) % 4 == 0) {
			int j = rnd(&seed) % 2;

			if (!ctx_queue_destroy(fd, q[j])) {
				q[j] = ctx_queue(fd, ep, SQ_DEPTH);
				if (q[j] < 0)
					SFAIL(q[j]);
			}
		}
		if (rnd(&seed) % 8 == 0) {
			region_drop(fd, &loc, rnd(&seed) % 2);
			if ((ret = region_new(fd, ep, ICFAB_ACCESS_ALL, &loc)))
				SFAIL(ret);
		}

		/* Everything accepted, reaped (every few rounds, or last). */
		if (rnd(&seed) % 3 && round + 1 < ROUNDS * getenv_rounds())
			continue;
		while (out_n) {
			struct icfab_cq_wait w = { .min = 1,
						   .timeout_ms = WAIT_MS };
			uint32_t head = m.r->head;
			uint32_t tl = __atomic_load_n(&m.r->tail,
						      __ATOMIC_ACQUIRE);
			unsigned int got = 0;

			for (; head != tl; head++, got++)
				saw(r, seen, m.cqes[head & m.r->mask].user_tag);
			__atomic_store_n(&m.r->head, head, __ATOMIC_RELEASE);
			ret = ctx_wait(fd, c, 0, 64, 0, NULL);
			if (ret < 0 && ret != -ECANCELED)
				SFAIL(ret);
			for (k = 0; k < ret; k++, got++)
				saw(r, seen, c[k].user_tag);
			r->completed += got;
			if (got > out_n)
				SFAIL(-6);
			out_n -= got;
			if (got || !out_n)
				continue;
			if (ioctl(fd, ICFAB_IOC_CQ_WAIT, &w) &&
			    errno != ECANCELED)
				SFAIL(-errno);
		}
	}
	for (uint64_t t = 1; t < tag; t++)
		r->missing += seen[t] == 1;
out:
	atomic_store(&ender_stop, 1);
	if (th_up)
		pthread_join(th, NULL);
	if (tw_up) {
		tw.stop = true;
		pthread_barrier_wait(&tw.go);
		pthread_join(tw.th, NULL);
	}
	free(seen);
	atomic_fetch_sub(&sh->senders_left, 1);
}

/* A receive queue's QUEUE_CREATE from read-only memory: -EFAULT. */
static int recv_queue_efault(int fd, uint32_t ep)
{
	struct icfab_queue_create *qc;
	int ret;

	qc = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (qc == MAP_FAILED)
		return -ENOMEM;
	*qc = (struct icfab_queue_create){ .endpoint = ep, .depth = RQ_DEPTH,
					   .flags = ICFAB_QUEUE_F_RECV };
	ret = mprotect(qc, 4096, PROT_READ) ? -ENOMEM :
	      ioctl(fd, ICFAB_IOC_QUEUE_CREATE, qc) ? -errno : 0;
	munmap(qc, 4096);
	return ret;
}

/*
 * A step of a target failed: the test fails, unless the parent is
 * evicting its context or has (r->evicting), after which any step may
 * fail: then the target leaves as case 5 leaves, and attaches again.
 */
#define TFAIL(e) do {							\
	if (atomic_load(&r->evicting))					\
		goto leave;						\
	r->err = (e);							\
	r->line = __LINE__;						\
	goto out;							\
} while (0)

/*
 * Target @i on endpoint TARGET0 + @i: a receive queue and an exported
 * region, reaped, destroyed, freed and made again, and its context
 * closed and attached again, or evicted by the parent, until the senders
 * are done.
 */
static void target(int i)
{
	struct tres *r = &sh->t[i];
	uint32_t ep = TARGET0 + i, seed = seed0() + 0x7a7e0 + i;
	struct icfab_cqe c[64];
	struct icfab_desc d[BATCH];
	struct region reg = { 0 };
	pthread_t th;
	bool th_up = false;
	int fd = -1, rq = -1, sq = -1, ret, n;

	while (!atomic_load(&sh->stop)) {
		/* Evicted (maybe): nothing it does counts any more. */
		if (fd >= 0 && atomic_load(&r->evicting) == 2)
			goto leave;
		if (fd < 0) {
			fd = open(DEV, O_RDWR | O_CLOEXEC);
			if (fd < 0)
				TFAIL(-1);
			if ((ret = ctx_attach(fd, ep)))
				TFAIL(ret);
			rq = ctx_recv_queue(fd, ep, RQ_DEPTH);
			if (rq < 0)
				TFAIL(rq);
			sq = ctx_queue(fd, ep, SQ_DEPTH);
			if (sq < 0)
				TFAIL(sq);
			if ((ret = region_new(fd, ep, ICFAB_ACCESS_ALL, &reg)))
				TFAIL(ret);
			__atomic_store_n(&sh->key[ep], reg.key,
					 __ATOMIC_RELAXED);
			atomic_store(&ender_stop, 0);
			if (pthread_create(&th, NULL, ender,
					   (void *)(intptr_t)fd))
				TFAIL(-2);
			th_up = true;
		}
		/* Not holding the engine meanwhile: a receiver's WAIT. */
		ret = ctx_wait(fd, c, 1, 64, 2, NULL);
		if (ret > 0)
			r->reaped += ret;
		else if (ret != -ETIMEDOUT && ret != -ECANCELED &&
			 !(ret == -EDEADLK && rq < 0))
			TFAIL(ret);

		switch (rnd(&seed) % 16) {
		case 0: case 1: case 2:
			if (rq < 0 && rnd(&seed) % 3 == 0) {
				/*
				 * Visible to the NOTIFY WRITEs' promises, then
				 * closed: the answer cannot be written back.
				 */
				ret = recv_queue_efault(fd, ep);
				if (ret != -EFAULT)
					TFAIL(ret ? ret : -1000);
				r->efault++;
				break;
			}
			if (rq < 0) {
				rq = ctx_recv_queue(fd, ep, RQ_DEPTH);
				if (rq < 0 && rq != -EBUSY)
					TFAIL(rq);
				break;
			}
			ret = ctx_queue_destroy(fd, rq);
			if (!ret) {
				r->qdestroyed++;
				rq = -1;
			} else if (ret == -EBUSY) {
				r->qbusy++;
			} else {
				TFAIL(ret);
			}
			break;
		case 3: case 4:
			region_drop(fd, &reg, rnd(&seed) % 2);
			r->rfreed++;
			if ((ret = region_new(fd, ep, ICFAB_ACCESS_ALL, &reg)))
				TFAIL(ret);
			__atomic_store_n(&sh->key[ep], reg.key,
					 __ATOMIC_RELAXED);
			break;
		case 6: case 7: case 8: case 9:
			/* A receiver's WRITEs: reaped by its WAITs. */
			n = 1 + rnd(&seed) % BATCH;
			for (ret = 0; ret < n; ret++)
				d[ret] = mix(&seed, sq, ep, &reg, ret + 1);
			ret = ctx_submit(fd, d, n);
			if (ret > 0)
				r->sent += ret;
			break;
		case 5:
			r->reopened++;
			goto leave;
		}
		continue;
leave:
		/*
		 * Gone with whatever is promised and reserved (case 5), or
		 * ended under it by the parent.
		 */
		if (atomic_load(&r->evicting) == 2) {
			/* The parent is done: a context made now stays. */
			atomic_store(&r->evicting, 0);
			r->evicted++;
		}
		atomic_store(&ender_stop, 1);
		if (th_up)
			pthread_join(th, NULL);
		th_up = false;
		if (rnd(&seed) % 2)
			region_drop(fd, &reg, true);
		else if (reg.map)
			munmap(reg.map, RSIZE);
		reg = (struct region){ 0 };
		if (fd >= 0)
			close(fd);
		fd = -1;
		rq = -1;
	}
	/*
	 * The senders are gone: what they sent lands, and its receive
	 * completions are reaped, so the receive queue must go, with
	 * nothing promised or reserved on it left (a hang bound, not a
	 * timing: the engine runs free with nobody holding it). The parent
	 * evicts nobody by now: r->evicting is 0 or 2.
	 */
	atomic_store(&ender_stop, 1);
	if (th_up)
		pthread_join(th, NULL);
	th_up = false;
	if (atomic_load(&r->evicting) && fd >= 0) {
		r->evicted++;
		close(fd);
		fd = -1;
	}
	for (int k = 0; fd >= 0 && rq >= 0; k++) {
		if (k == 2000) {
			r->err = -EBUSY;
			r->line = __LINE__;
			goto out;
		}
		ret = ctx_wait(fd, c, 1, 64, 5, NULL);
		if (ret > 0)
			r->reaped += ret;
		else if (ret != -ETIMEDOUT && ret != -ECANCELED) {
			r->err = ret;
			r->line = __LINE__;
			goto out;
		}
		ret = ctx_queue_destroy(fd, rq);
		if (!ret) {
			rq = -1;
		} else if (ret != -EBUSY) {
			r->err = ret;
			r->line = __LINE__;
			goto out;
		}
	}
out:
	atomic_store(&ender_stop, 1);
	if (th_up)
		pthread_join(th, NULL);
}

/*
 * Chaos process @i: attached anywhere, the same mix submitted every way,
 * then gone with it in flight, one way or another.
 */
static int chaos(int i)
{
	uint32_t seed = seed0() + 0xc4a0 + i, ep = i % NR_EPS;
	struct icfab_desc d[BATCH];
	struct region loc = { 0 };
	struct io_uring ring;
	struct cq_map m;
	int fd, q, n, k;

	fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 1;
	if (ctx_attach(fd, ep))
		return 3;
	q = ctx_queue(fd, ep, SQ_DEPTH);
	if (q < 0 || cq_setup(fd, 4, &m) < 0 ||
	    region_new(fd, ep, ICFAB_ACCESS_ALL, &loc) ||
	    io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 |
				IORING_SETUP_CQE32))
		return 2;
	for (int round = 0; round < 4; round++) {
		n = 1 + rnd(&seed) % BATCH;
		for (k = 0; k < n; k++)
			d[k] = mix(&seed, q, ep, &loc, k + 1);
		switch (round) {
		case 0:
			ctx_submit(fd, d, n);
			break;
		case 1:
			ctx_submit_flags(fd, d, n, ICFAB_SUBMIT_F_CQ);
			break;
		case 2:
			uring_batch(&ring, fd, d, n);
			break;
		default:
			for (k = 0; k < n && k < 4; k++)
				usubmit(&ring, fd, d[k], NULL, 100 + k);
			io_uring_submit(&ring);
		}
	}
	switch (i % 4) {
	case 0:
		close(fd);	/* the mappings still hold the file */
		break;
	case 1:
		region_drop(fd, &loc, i % 8 == 1);
		break;
	case 2:
		ioctl(fd, ICFAB_IOC_WAIT_END);
		break;
	}
	return 0;		/* and exit with everything in flight */
}

/*
 * CTX_EVICT of process @pid's context, once it has one (@tries looks, a
 * millisecond apart): true when an eviction ended it. Its file may close
 * between the look and the eviction (-ENOENT, or -EALREADY while it is
 * listed as ended): nothing to evict then.
 */
static bool evict_pid(struct genl_sock *gs, pid_t pid, int tries)
{
	uint32_t id;

	for (int k = 0; k < tries; k++) {
		if (ctx_id_of_pid(gs, pid, &id) == 0)
			return ctx_evict(gs, id) == 0;
		usleep(1000);
	}
	return false;
}

FIXTURE(race) {
	struct genl_sock gs;
	int fd;			/* free-running: keeps the engine */
	long refs0;
	long copy_min;		/* copy_unlocked_min as it was */
};

static long module_refs(void)
{
	FILE *f = fopen("/sys/module/icfab/refcnt", "r");
	long n = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

FIXTURE_SETUP(race)
{
	struct icfab_attach a = { .endpoint = NR_EPS - 1,
				  .flags = ICFAB_ATTACH_F_FREE_RUN };

	self->fd = -1;
	ASSERT_EQ(0, ring_fabric_open(&self->gs, NR_EPS));
	self->refs0 = module_refs();
	/* Every memory transfer's bytes by the copier, off the lock. */
	self->copy_min = param_get("copy_unlocked_min");
	if (self->copy_min >= 0)
		ASSERT_EQ(0, param_set("copy_unlocked_min", XLEN));
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, ICFAB_IOC_ATTACH, &a));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
}

FIXTURE_TEARDOWN(race)
{
	if (self->fd >= 0)
		close(self->fd);
	fabric_fault("link 1 up");
	if (self->copy_min >= 0)
		param_set("copy_unlocked_min", self->copy_min);
	fabric_close(&self->gs);
	if (sh && sh != MAP_FAILED)
		munmap(sh, sizeof(*sh));
}

static pid_t spawn(void (*fn)(int), int i)
{
	pid_t pid = fork();

	if (!pid) {
		fn(i);
		_exit(0);
	}
	return pid;
}

/*
 * Is every page of every region given back? With max_mem_mb lowered to
 * PROBE_MB, a region of PROBE_MB fits only when no other page is
 * charged (no other test runs meanwhile). 0, or the last -errno.
 */
#define PROBE_MB	2
static int pages_all_back(int fd)
{
	long max = param_get("max_mem_mb");
	struct icfab_region_alloc ra = { .endpoint = NR_EPS - 1,
					 .size = PROBE_MB << 20 };
	struct icfab_region_free rf = { 0 };
	int err = -ENOSPC;

	if (max < 0 || param_set("max_mem_mb", PROBE_MB))
		return -EPERM;
	for (int k = 0; k < 200 && err == -ENOSPC; k++) {
		if (k)
			usleep(50000);
		ra.region = 0;
		ra.mmap_offset = 0;
		ra.size = PROBE_MB << 20;
		err = ioctl(fd, ICFAB_IOC_REGION_ALLOC, &ra) ? -errno : 0;
	}
	if (!err) {
		rf.region = ra.region;
		ioctl(fd, ICFAB_IOC_REGION_FREE, &rf);
	}
	param_set("max_mem_mb", max);
	return err;
}

/* Every process gone, the count of the module's references back. */
static long refs_settled(long want)
{
	long n = module_refs();

	for (int k = 0; k < 200 && n > want; k++) {
		usleep(50000);
		n = module_refs();
	}
	return n;
}

static long long count_settled(const char *name)
{
	long long n = fab_count(name);

	for (int k = 0; k < 200 && n > 0; k++) {
		usleep(50000);
		n = fab_count(name);
	}
	return n;
}

TEST_F_TIMEOUT(race, writes_off_the_lock_against_teardown, 600)
{
	static const char *const counts[] = { "fast_writes",
		"fast_mem_writes", "fast_mem_reads", "fast_notify_writes",
		"fast_delays", "copies_unlocked", "fast_timed_reads" };
	long long before[7];
	pid_t tp[TARGETS], sp[SENDERS];
	int status, i, c, bad = 0;
	unsigned long acc = 0;

	for (i = 0; i < 7; i++)
		before[i] = fab_count(counts[i]);
	atomic_store(&sh->senders_left, SENDERS);
	for (i = 0; i < TARGETS; i++)
		tp[i] = spawn(target, i);
	/* Give the targets their keys first: most memory ones then go. */
	for (c = 0; c < 100 && !(sh->key[TARGET0] && sh->key[TARGET0 + 1]);
	     c++)
		usleep(20000);
	for (i = 0; i < SENDERS; i++)
		sp[i] = spawn(sender, i);

	/* Chaos, one after another, and live commits, while they run. */
	for (c = 0; c < CHAOS * getenv_rounds(); c++) {
		pid_t pid = fork();

		bool ended = false;

		if (!pid)
			_exit(chaos(c));
		if (c % 6 == 5) {
			usleep(2000);
			kill(pid, SIGKILL);
		}
		/* Evicted mid-flight: any of its steps may fail after. */
		if (c % 6 == 2)
			ended = evict_pid(&self->gs, pid, 200);
		if (ended)
			sh->chaos_evicted++;
		/* A target evicted: what it has promised and reserved. */
		if (c % 8 == 4) {
			struct tres *t = &sh->t[(c / 8) % TARGETS];

			if (atomic_load(&t->evicting) == 0) {
				atomic_store(&t->evicting, 1);
				if (evict_pid(&self->gs, tp[(c / 8) % TARGETS],
					      1))
					sh->targets_evicted++;
				atomic_store(&t->evicting, 2);
			}
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (WIFEXITED(status) && WEXITSTATUS(status) && !ended)
			bad++;
		if (c % 3 == 0)
			EXPECT_EQ(0, fabric_fault(c % 2 ? "link 1 down\n" :
					   "link 1 up\n"));
	}
	EXPECT_EQ(0, fabric_fault("link 1 up\n"));
	EXPECT_EQ(0, bad);

	for (i = 0; i < SENDERS; i++) {
		ASSERT_EQ(sp[i], waitpid(sp[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	}
	atomic_store(&sh->stop, 1);
	for (i = 0; i < TARGETS; i++) {
		ASSERT_EQ(tp[i], waitpid(tp[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	}

	for (i = 0; i < SENDERS; i++) {
		struct sres *r = &sh->s[i];

		TH_LOG("sender %d: accepted %lu (plain %lu, cq %lu, batch %lu), completed %lu",
		       i, r->accepted, r->plain, r->cq, r->batch, r->completed);
		for (c = 1; c < 140; c++)
			if (r->refused[c])
				TH_LOG("sender %d: %lu SUBMITs refused, errno %d",
				       i, r->refused[c], c);
		EXPECT_EQ(0, r->err) TH_LOG("sender %d failed at line %d",
					    i, r->line);
		EXPECT_EQ(r->accepted, r->completed);
		EXPECT_EQ(0, r->dup);
		EXPECT_EQ(0, r->stray);
		EXPECT_EQ(0, r->missing);
		acc += r->accepted;
	}
	EXPECT_LT(0, acc);
	for (i = 0; i < TARGETS; i++) {
		struct tres *r = &sh->t[i];

		TH_LOG("target %d: sent %lu, reaped %lu, queue destroyed %lu (busy %lu, created -EFAULT %lu), region freed %lu, reopened %lu, left evicted %lu",
		       i, r->sent, r->reaped, r->qdestroyed, r->qbusy,
		       r->efault, r->rfreed, r->reopened, r->evicted);
		EXPECT_EQ(0, r->err) TH_LOG("target %d failed at line %d",
					    i, r->line);
	}
	TH_LOG("evicted: %lu chaos contexts, %lu targets",
	       sh->chaos_evicted, sh->targets_evicted);
	for (i = 0; i < 7; i++)
		TH_LOG("%s: +%lld", counts[i],
		       fab_count(counts[i]) - before[i]);

	/*
	 * Only this free-running context is left: no credit, whatever the
	 * others had when they went. (A context's last reference may go
	 * after its process, from io_uring's teardown: allowed 10 s.)
	 */
	EXPECT_EQ(0, count_settled("granted_xfers"));
	EXPECT_EQ(0, count_settled("granted_events"));
	/* Every region's pages, whatever held them. */
	EXPECT_EQ(0, pages_all_back(self->fd));
	close(self->fd);
	self->fd = -1;
	if (self->refs0 >= 0)
		EXPECT_EQ(self->refs0, refs_settled(self->refs0));
}

TEST_HARNESS_MAIN
