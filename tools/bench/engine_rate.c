// SPDX-License-Identifier: GPL-2.0
/*
 * engine_rate: how many segment-hops per second of wall time the timing
 * engine gets through, for a timing-only all-to-all.
 *
 * A segment-hop is one segment crossing one link: the unit of the
 * engine's work. Every endpoint of the topology sends BYTES to every
 * other one, in rounds (round r: endpoint i to endpoint i + r), so the
 * all-to-all of N endpoints is N (N - 1) transfers of
 * ceil(BYTES / segment size) segments over the route's links each.
 *
 * Module mode (the default) drives the topology that is committed on
 * /dev/icfab0 (icfabd --apply FILE): a context may attach 64 endpoints,
 * so there is one context per 64 endpoints, each with a thread of its
 * own, in virtual time. A context submits in batches of up to 64
 * descriptors (ICFAB_IOC_SUBMIT) while it has room in its window, and
 * otherwise waits for a batch of completions (ICFAB_IOC_WAIT); the
 * engine runs whenever every context waits. The windows share the
 * engine's capacity, so that no submission can find the engine full
 * while its own context has nothing in flight (it would hold the engine
 * back with nothing to wait for).
 *
 * Host mode (-H) runs the same all-to-all through the freestanding engine
 * (kmod/model) in this process, with the same capacity: a transfer goes
 * in as soon as one completes. The difference between the two rates is
 * what the module's path costs around the engine: syscalls, locking,
 * requests, wakeups.
 *
 * FILE is the topology file (icfabd's YAML) that was applied; it gives
 * the endpoints, the routes and hence the segment-hops, which are
 * computed, not sampled. In host mode the link statistics are summed
 * too, as a check. Output: one line,
 *   mode N transfers segment_hops wall_s cpu_s hops/wall_s hops/cpu_s failed
 * where cpu_s is the process's CPU time, user and system (the module's
 * engine runs in the submitting threads' system time), which a shared
 * machine disturbs less than wall time. Host mode repeats the all-to-all
 * for a second and reports one pass.
 *
 * -C makes every link cut-through (docs/TIMING.md), whatever FILE says.
 *
 * -I (with -H) checks identity rather than speed: it runs exactly two
 * passes with a tracer and prints, instead of the rates, one FNV-1a hash
 * of every departure (key, bytes, ready, depart, done, transfer id,
 * link, segment, hop), every completion (id, key, bytes, submit, start,
 * finish, queued, status, hops, source, destination, leaves) and, after
 * the passes, every link's counters and the engine's high-water mark of
 * pending events, in the order the engine produced them. A change to the
 * engine that keeps every decision gives the same hash:
 *   identity N transfers segment_hops hash departures completions
 *
 * -p PASSES (with -H) runs that many passes after the first instead of a
 * second's worth, so that a count of instructions (callgrind) covers a
 * known number of all-to-alls: PASSES + 1 with the first.
 *
 * -j THREADS (with -H) runs the all-to-all in batches rather than a
 * transfer per completion, so that the parallel engine (pengine.h), whose
 * completions come a window at a time, can run exactly what the
 * sequential one does: a batch of as many transfers as may be in flight
 * goes in at once, in the order above, and the engine runs until it has
 * completed; then the next. -j 1 is the sequential engine, -j N the
 * parallel one with N partitions and threads (the sequential one, with a
 * note, when some link between partitions has no latency). The rate line
 * gets three more columns: windows, messages between partitions and the
 * lookahead in ps (0 0 0 for -j 1). With -I the hash covers every
 * completion in order, the departures of every link in their order
 * (hashed per link, then over links), and every link's counters, so that
 * -j 1 and -j N print the same line when the results are the same.
 *
 * -v (with -j) also prints to stderr, per pass, the thread CPU time of
 * each phase (ms): for -j 1 the submissions and the runs, for -j N each
 * thread's (icfab_pengine_phases()).
 *
 * -m LEVEL (with -j N) what the parallel engine measures
 * (icfab_pengine_set_meter()): 0 nothing (critical path and work print
 * 0), 1 (the default) the critical path and the work, 2 (the default
 * with -v) also the phases. A thread's CPU clock is a system call on the
 * host, about 2 us on this VM, read two (1) or five (2) times a window.
 *
 *	engine_rate [-H [-I] [-v] [-m LEVEL] [-p PASSES] [-j THREADS]] [-C] [-b BYTES] FILE
 *					(BYTES default 4096, K/M suffix)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/icfab.h>

#include <icfab/parse.h>
#include "host_model.h"
#include "pengine.h"

/*
 * The module's engine capacity (kmod/icfab.h, ICFAB_ENGINE_XFERS and
 * ICFAB_ENGINE_EVENTS), which the ABI does not report.
 */
#define ENGINE_XFERS	16384
#define ENGINE_EVENTS	(256 * 1024)
#define PER_CTX		64		/* ICFAB_MAX_ATTACH */
#define BATCH		64		/* descriptors per SUBMIT */
#define QDEPTH		4096		/* ICFAB_MAX_QUEUE_DEPTH */

struct a2a {
	uint32_t n;			/* endpoints */
	uint32_t *ep;			/* index -> node id */
	uint64_t bytes;			/* per transfer */
	uint64_t segs;			/* per transfer */
	uint64_t window;		/* transfers in flight, per context */
};

struct worker {
	const struct a2a *a;
	pthread_t thread;
	pthread_barrier_t *start;
	int fd;
	uint32_t first, nr;		/* its endpoints: ep[first..first+nr) */
	uint32_t queue[PER_CTX];
	uint64_t done, failed;
	int err;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sum over all ordered pairs of segments x links on the route. */
static int segment_hops(const struct topo *t, const struct a2a *a,
			uint64_t *out)
{
	uint64_t sum = 0;

	for (uint32_t s = 0; s < a->n; s++)
		for (uint32_t d = 0; d < a->n; d++) {
			int h;

			if (s == d)
				continue;
			h = topo_route_hops(t, a->ep[s], a->ep[d]);
			if (h < 0)
				return h;
			sum += a->segs * (uint64_t)h;
		}
	*out = sum;
	return 0;
}

/* ---------------------------------------------------------------- module */

static int reap(struct worker *w, unsigned int min)
{
	struct icfab_cqe cqes[BATCH];
	struct icfab_wait wt = { .cqes = (uintptr_t)cqes, .min = min,
				 .max = BATCH };

	if (ioctl(w->fd, ICFAB_IOC_WAIT, &wt))
		return -errno;
	for (unsigned int i = 0; i < wt.nr; i++)
		w->failed += cqes[i].status != 0;
	w->done += wt.nr;
	return (int)wt.nr;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	const struct a2a *a = w->a;
	uint64_t total = (uint64_t)w->nr * (a->n - 1), sent = 0;
	struct icfab_desc d[BATCH];

	pthread_barrier_wait(w->start);
	while (w->done < total) {
		uint64_t room = a->window - (sent - w->done);
		uint64_t nb = total - sent;
		int ret;

		nb = nb < room ? nb : room;
		nb = nb < BATCH ? nb : BATCH;
		if (nb) {
			struct icfab_submit s = { .descs = (uintptr_t)d,
						  .nr = (uint32_t)nb };

			memset(d, 0, nb * sizeof(d[0]));
			for (uint64_t k = 0; k < nb; k++) {
				/* Transfer sent + k: round r, endpoint i. */
				uint64_t x = sent + k;
				uint32_t i = (uint32_t)(x % w->nr);
				uint32_t r = (uint32_t)(x / w->nr) + 1;
				uint32_t src = w->first + i;

				d[k].op = ICFAB_OP_WRITE;
				d[k].flags = ICFAB_DESC_F_TIMING_ONLY;
				d[k].queue = w->queue[i];
				d[k].peer = a->ep[(src + r) % a->n];
				d[k].len = a->bytes;
			}
			ret = ioctl(w->fd, ICFAB_IOC_SUBMIT, &s);
			if (ret > 0) {
				sent += (uint64_t)ret;
				continue;
			}
			if (ret == 0 || errno != EAGAIN || sent == w->done) {
				w->err = ret ? -errno : -EIO;
				break;
			}
		}
		/* The window is full (or everything is sent): make room. */
		ret = reap(w, sent - w->done < BATCH ?
			      (unsigned int)(sent - w->done) : BATCH);
		if (ret < 0) {
			w->err = ret;
			break;
		}
	}
	/*
	 * Done (or failed): it waits no more, so from now on its clock would
	 * hold the engine back from the others' completions. It leaves.
	 */
	close(w->fd);
	w->fd = -1;
	return NULL;
}

static int run_module(const struct a2a *a, double *wall, double *cpu,
		      uint64_t *failed)
{
	uint32_t nw = (a->n + PER_CTX - 1) / PER_CTX;
	struct worker *w = calloc(nw, sizeof(*w));
	pthread_barrier_t start;
	int err = 0;
	double t0, c0;

	if (!w)
		return -ENOMEM;
	for (uint32_t k = 0; k < nw && !err; k++) {
		w[k].a = a;
		w[k].start = &start;
		w[k].first = k * PER_CTX;
		w[k].nr = a->n - w[k].first < PER_CTX ? a->n - w[k].first :
							 PER_CTX;
		w[k].fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
		if (w[k].fd < 0) {
			err = -errno;
			break;
		}
		for (uint32_t i = 0; i < w[k].nr && !err; i++) {
			struct icfab_attach at = {
				.endpoint = a->ep[w[k].first + i] };
			struct icfab_queue_create qc = {
				.endpoint = at.endpoint,
				.depth = QDEPTH };

			if (ioctl(w[k].fd, ICFAB_IOC_ATTACH, &at) ||
			    ioctl(w[k].fd, ICFAB_IOC_QUEUE_CREATE, &qc))
				err = -errno;
			w[k].queue[i] = qc.queue;
		}
	}
	if (err) {
		fprintf(stderr, "engine_rate: /dev/icfab0: %s (is FILE the "
			"applied topology?)\n", strerror(-err));
		return err;
	}
	pthread_barrier_init(&start, NULL, nw + 1);
	for (uint32_t k = 0; k < nw; k++)
		pthread_create(&w[k].thread, NULL, worker_run, &w[k]);
	pthread_barrier_wait(&start);
	t0 = now_s();
	c0 = cpu_s();
	for (uint32_t k = 0; k < nw; k++)
		pthread_join(w[k].thread, NULL);
	*wall = now_s() - t0;
	*cpu = cpu_s() - c0;
	*failed = 0;
	for (uint32_t k = 0; k < nw; k++) {
		if (w[k].err && !err) {
			err = w[k].err;
			fprintf(stderr, "engine_rate: context %u: %s\n", k,
				strerror(-err));
		}
		*failed += w[k].failed;
	}
	pthread_barrier_destroy(&start);
	free(w);
	return err;
}

/* ------------------------------------------------------------------ host */

/* The library's topology as the model's, the way the module holds it. */
/* -C: every link cut-through. */
struct host_run {
	uint64_t done, failed;
};

/* -I: a hash of everything the engine decides, in its order. */
struct ident {
	uint64_t hash;
	uint64_t xmits, completions;
};

static void ident_mix(struct ident *id, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		id->hash ^= (v >> (8 * i)) & 0xff;
		id->hash *= 0x100000001b3ULL;
	}
}

static void ident_xmit(void *arg, const struct icfab_engine_xmit *x)
{
	struct ident *id = arg;

	id->xmits++;
	ident_mix(id, x->key);
	ident_mix(id, x->bytes);
	ident_mix(id, x->ready_ps);
	ident_mix(id, x->depart_ps);
	ident_mix(id, x->done_ps);
	ident_mix(id, x->xfer_id);
	ident_mix(id, x->link);
	ident_mix(id, x->seg);
	ident_mix(id, x->hop);
}

static void ident_complete(void *arg, icfab_u32 xfer_id,
			   const struct icfab_xfer_result *r)
{
	struct ident *id = arg;

	id->completions++;
	ident_mix(id, xfer_id);
	ident_mix(id, r->key);
	ident_mix(id, r->bytes);
	ident_mix(id, r->submit_ps);
	ident_mix(id, r->start_ps);
	ident_mix(id, r->finish_ps);
	ident_mix(id, r->queued_ps);
	ident_mix(id, (uint64_t)(int64_t)r->status);
	ident_mix(id, r->hops);
	ident_mix(id, (uint64_t)r->src << 32 | r->dst);
	ident_mix(id, r->nr_leaves);
}

static const struct icfab_engine_tracer ident_tracer = {
	.xmit = ident_xmit,
	.complete = ident_complete,
};

/* Stop after each completion, so that the next transfer can go in. */
static int host_complete(void *arg, icfab_u32 xfer_id,
			 const struct icfab_xfer_result *r)
{
	struct host_run *h = arg;

	(void)xfer_id;
	h->done++;
	h->failed += r->status != 0;
	return 1;
}

/* One all-to-all, from the engine's current time; at most @cap in flight. */
static int host_pass(struct icfab_engine *e, const struct a2a *a,
		     uint64_t cap, struct host_run *h)
{
	uint64_t total = (uint64_t)a->n * (a->n - 1), sent = 0;

	h->done = 0;
	while (h->done < total) {
		while (sent < total && sent - h->done < cap) {
			/* Round-major, as the contexts submit. */
			uint32_t i = (uint32_t)(sent % a->n);
			uint32_t r = (uint32_t)(sent / a->n) + 1;
			icfab_u64 key = (icfab_u64)i << 32 | r;
			/* After what was processed, as data.c does. */
			icfab_u64 at = icfab_engine_submit_at(e, e->now_ps,
							      key);
			icfab_u32 id;
			int err;
			err = icfab_engine_submit(e, a->ep[i],
						  a->ep[(i + r) % a->n],
						  a->bytes, at, key, &id);
			if (err == -ICFAB_ENGINE_ENOSPC)
				break;
			if (err) {
				fprintf(stderr, "engine_rate: submit: %d\n",
					err);
				return -EINVAL;
			}
			sent++;
		}
		if (icfab_engine_run_until(e, ICFAB_ENGINE_NEVER,
					   host_complete, h) < 0)
			return -EINVAL;
	}
	return 0;
}

/*
 * Pass 0 warms up (first touches of the storage) and is not timed; then
 * passes follow each other on the same engine, in later fabric time,
 * until a second of wall time has gone. Times are per pass.
 */
static int run_host(const struct topo *t, const struct a2a *a, icfab_u8 cut_through,
		    double *wall, double *cpu, uint64_t *failed, uint64_t *link_segs,
		    struct ident *ident, int npasses)
{
	struct icfab_mtopo *m = host_mtopo(t, cut_through);
	uint64_t cap = a->window * ((a->n + PER_CTX - 1) / PER_CTX);
	struct icfab_engine_storage st;
	struct host_run h = { 0 };
	struct icfab_engine e;
	int passes = 0;

	if (!m)
		return -EINVAL;
	if (host_storage(&st, m, ENGINE_XFERS, ENGINE_EVENTS))
		return -ENOMEM;
	if (icfab_engine_init(&e, m, t->segment_size, &st))
		return -EINVAL;
	if (ident) {
		ident->hash = 0xcbf29ce484222325ULL;
		icfab_engine_set_tracer(&e, &ident_tracer, ident);
	}

	*wall = *cpu = 0;
	for (;;) {
		double w0 = now_s(), c0 = cpu_s();

		if (host_pass(&e, a, cap, &h))
			return -EINVAL;
		if (!passes++) {
			*link_segs = 0;
			for (uint32_t l = 0; l < m->links_cap; l++)
				*link_segs += st.links[l].segments;
			continue;
		}
		*wall += now_s() - w0;
		*cpu += cpu_s() - c0;
		if (ident || (npasses ? passes > npasses : *wall >= 1.0))
			break;
	}
	if (ident) {
		for (uint32_t l = 0; l < m->links_cap; l++) {
			const struct icfab_engine_link *ls = &st.links[l];

			ident_mix(ident, ls->next_free_ps);
			ident_mix(ident, ls->bytes);
			ident_mix(ident, ls->segments);
			ident_mix(ident, ls->busy_ps);
			ident_mix(ident, ls->max_queued_ps);
		}
		ident_mix(ident, e.now_ps);
		ident_mix(ident, e.max_events);
	}
	*wall /= passes - 1;
	*cpu /= passes - 1;
	*failed = h.failed;
	return 0;
}

/* ------------------------------------------------------------ host -j */

/* The engine a batched pass runs on: the sequential one or the parallel. */
struct jrun {
	struct icfab_engine *e;		/* -j 1 */
	struct icfab_pengine *pe;		/* -j 2 or more */
	const struct icfab_mtopo *m;
	struct icfab_engine_storage st;
	uint64_t done, failed;
	struct ident *ident;
	uint64_t *link_hash;		/* -I: per link, FNV-1a */
	uint64_t xmits[64];		/* -I: per partition */
	struct icfab_pengine_sub *subs;	/* a batch, -j 2 or more */
	icfab_u32 *ids;
	void *xmit_args[64];
	double sub_cpu, run_cpu;	/* -j 1, thread CPU s */
};

static int verbose;
static int meter = -1;	/* -m */

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *const phase_names[ICFAB_PENGINE_PH_NR] = {
	"report", "run", "wait1", "import", "results", "merge", "wait2",
	"route", "waits", "adopt",
};

struct jxmit_arg {
	struct jrun *r;
	unsigned int part;
};

static void jmix(uint64_t *h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		*h ^= (v >> (8 * i)) & 0xff;
		*h *= 0x100000001b3ULL;
	}
}

/* A link's departures are made by one partition, in their order. */
static void jxmit(void *arg, const struct icfab_engine_xmit *x)
{
	struct jxmit_arg *a = arg;
	uint64_t *h = &a->r->link_hash[x->link];

	a->r->xmits[a->part]++;
	jmix(h, x->key);
	jmix(h, x->bytes);
	jmix(h, x->ready_ps);
	jmix(h, x->depart_ps);
	jmix(h, x->done_ps);
	jmix(h, x->xfer_id);
	jmix(h, x->seg);
	jmix(h, x->hop);
}

static int jcomplete(void *arg, icfab_u32 xfer_id,
		     const struct icfab_xfer_result *r)
{
	struct jrun *j = arg;

	j->done++;
	j->failed += r->status != 0;
	if (j->ident)
		ident_complete(j->ident, xfer_id, r);
	return 0;
}

static void jnow(const struct jrun *j, icfab_u64 *now, icfab_u64 *last,
		 icfab_u64 *last_key, int *processed)
{
	if (j->pe) {
		icfab_pengine_now(j->pe, now, last, last_key, processed);
		return;
	}
	*now = j->e->now_ps;
	*last = j->e->last_ps;
	*last_key = j->e->last_key;
	*processed = j->e->processed;
}

/*
 * Transfer k of an all-to-all (round k / n + 1, endpoint k % n) and the
 * ones after it, without a division each: in -j N the loop that fills a
 * batch runs on thread 0 alone, between the engine's commands, so two
 * divisions a transfer (about 5 ms a pass at 1024 endpoints) were time
 * every other thread waited. The same transfers in the same order.
 */
struct a2a_pos {
	uint32_t n, i, r, d;	/* d = (i + r) % n */
};

static void a2a_at(struct a2a_pos *q, uint32_t n, uint64_t k)
{
	q->n = n;
	q->i = (uint32_t)(k % n);
	q->r = (uint32_t)(k / n) + 1;
	q->d = (uint32_t)(((uint64_t)q->i + q->r) % n);
}

static void a2a_next(struct a2a_pos *q)
{
	if (++q->d == q->n)
		q->d = 0;
	if (++q->i == q->n) {
		q->i = 0;
		q->d = ++q->r;
	}
}

/* One all-to-all in batches of @cap transfers (see -j at the top). */
static int jpass(struct jrun *j, const struct a2a *a, uint64_t cap)
{
	uint64_t total = (uint64_t)a->n * (a->n - 1), sent = 0, start = j->done;

	while (sent < total) {
		icfab_u64 now, last, last_key;
		uint64_t batch = 0;
		int processed, err;
		struct a2a_pos q;

		jnow(j, &now, &last, &last_key, &processed);
		/* After everything processed, whatever the keys. */
		if (processed && now <= last)
			now = last + 1;
		if (j->pe) {
			icfab_u64 taken;

			a2a_at(&q, a->n, sent);
			for (batch = 0; sent + batch < total && batch < cap; batch++) {
				j->subs[batch] = (struct icfab_pengine_sub){
					.src = a->ep[q.i], .dst = a->ep[q.d],
					.bytes = a->bytes, .submit_ps = now,
					.key = (icfab_u64)q.i << 32 | q.r,
				};
				a2a_next(&q);
			}
			err = icfab_pengine_submit_batch(j->pe, j->subs, batch,
							 j->ids,
							 &taken);
			if (err && (err != -ICFAB_ENGINE_ENOSPC || !taken)) {
				fprintf(stderr, "engine_rate: submit: %d\n", err);
				return -EINVAL;
			}
			sent += taken;
			batch = cap;
		}
		double t0 = thread_cpu_s();

		a2a_at(&q, a->n, sent);
		while (sent < total && batch < cap) {
			icfab_u64 key = (icfab_u64)q.i << 32 | q.r;
			uint32_t src = a->ep[q.i], dst = a->ep[q.d];
			icfab_u32 id;

			err = j->pe ? icfab_pengine_submit(j->pe, src, dst, a->bytes,
						     now, key, &id) :
				      icfab_engine_submit(j->e, src, dst, a->bytes,
							  now, key, &id);
			if (err == -ICFAB_ENGINE_ENOSPC && batch)
				break;
			if (err) {
				fprintf(stderr, "engine_rate: submit: %d\n", err);
				return -EINVAL;
			}
			sent++;
			batch++;
			a2a_next(&q);
		}
		double t1 = thread_cpu_s();

		err = j->pe ? icfab_pengine_run_until(j->pe, ICFAB_ENGINE_NEVER,
						jcomplete, j) :
			      icfab_engine_run_until(j->e, ICFAB_ENGINE_NEVER,
						     jcomplete, j);
		j->sub_cpu += t1 - t0;
		j->run_cpu += thread_cpu_s() - t1;
		if (err < 0) {
			fprintf(stderr, "engine_rate: run: %d\n", err);
			return -EINVAL;
		}
	}
	if (j->done - start != total) {
		fprintf(stderr, "engine_rate: %" PRIu64 " of %" PRIu64
			" transfers completed\n", j->done - start, total);
		return -EINVAL;
	}
	return 0;
}

static const struct icfab_engine_link *jlink(const struct jrun *j, uint32_t l)
{
	return j->pe ? icfab_pengine_link(j->pe, l) : &j->st.links[l];
}

/*
 * As run_host(), in batches, on @jobs threads. @stats: windows and
 * messages over all passes, the lookahead; @times, per pass, s: the
 * critical path and the partitions' work (pengine_host_times()), or the CPU
 * time for the sequential engine.
 */
static int run_host_j(const struct topo *t, const struct a2a *a, icfab_u8 cut_through,
		      unsigned int jobs, double *wall, double *cpu, uint64_t *failed,
		      uint64_t *link_segs, struct ident *ident, int npasses,
		      uint64_t stats[3], double times[2])
{
	struct icfab_mtopo *m = host_mtopo(t, cut_through);
	uint64_t cap = a->window * ((a->n + PER_CTX - 1) / PER_CTX);
	struct jxmit_arg xa[64];
	struct icfab_engine e;
	struct jrun j = { .m = m, .ident = ident };
	int passes = 0, err;

	if (!m || jobs > 64)
		return -EINVAL;
	if (jobs > 1) {
		j.pe = pengine_host_new(m, t->segment_size, jobs, ENGINE_XFERS,
				   ENGINE_EVENTS, &err);
		if (!j.pe && err != -EDOM)
			return err;
		j.subs = calloc(cap, sizeof(*j.subs));
		j.ids = calloc(cap, sizeof(*j.ids));
		if (!j.subs || !j.ids)
			return -ENOMEM;
		if (j.pe)
			icfab_pengine_set_meter(j.pe, meter >= 0 ? meter :
						      verbose ? 2 : 1);
		if (!j.pe)
			fprintf(stderr, "engine_rate: a link between partitions "
				"has no latency: no lookahead, sequential engine\n");
	}
	if (!j.pe) {
		if (host_storage(&j.st, m, ENGINE_XFERS, ENGINE_EVENTS))
			return -ENOMEM;
		if (icfab_engine_init(&e, m, t->segment_size, &j.st))
			return -EINVAL;
		j.e = &e;
	}
	if (ident) {
		ident->hash = 0xcbf29ce484222325ULL;
		j.link_hash = calloc(m->links_cap, sizeof(*j.link_hash));
		if (!j.link_hash)
			return -ENOMEM;
		for (uint32_t l = 0; l < m->links_cap; l++)
			j.link_hash[l] = 0xcbf29ce484222325ULL;
		for (unsigned int p = 0; p < 64; p++) {
			xa[p] = (struct jxmit_arg){ .r = &j, .part = p };
			j.xmit_args[p] = &xa[p];
		}
		if (j.pe)
			icfab_pengine_set_xmit(j.pe, jxmit, j.xmit_args);
		else {
			static const struct icfab_engine_tracer tr = { .xmit = jxmit };

			icfab_engine_set_tracer(&e, &tr, &xa[0]);
		}
	}

	*wall = *cpu = times[0] = times[1] = 0;
	icfab_u64 ph0[64][ICFAB_PENGINE_PH_NR];
	double sub0 = 0, run0 = 0;

	for (;;) {
		double w0 = now_s(), c0 = cpu_s(), k0 = 0, b0 = 0, k1, b1;

		if (j.pe)
			pengine_host_times(j.pe, &k0, &b0);
		if (jpass(&j, a, cap))
			return -EINVAL;
		if (!passes++) {
			for (unsigned int p = 0; j.pe && p < jobs; p++)
				icfab_pengine_phases(j.pe, p, ph0[p]);
			sub0 = j.sub_cpu;
			run0 = j.run_cpu;
			*link_segs = 0;
			for (uint32_t l = 0; l < m->links_cap; l++)
				*link_segs += jlink(&j, l)->segments;
			continue;
		}
		*wall += now_s() - w0;
		*cpu += cpu_s() - c0;
		if (j.pe) {
			pengine_host_times(j.pe, &k1, &b1);
			times[0] += k1 - k0;
			times[1] += b1 - b0;
		}
		if (ident || (npasses ? passes > npasses : *wall >= 1.0))
			break;
	}
	if (ident) {
		icfab_u64 now, last, last_key;
		int processed;

		for (uint32_t l = 0; l < m->links_cap; l++) {
			const struct icfab_engine_link *ls = jlink(&j, l);

			ident_mix(ident, j.link_hash[l]);
			ident_mix(ident, ls->next_free_ps);
			ident_mix(ident, ls->bytes);
			ident_mix(ident, ls->segments);
			ident_mix(ident, ls->busy_ps);
			ident_mix(ident, ls->max_queued_ps);
		}
		jnow(&j, &now, &last, &last_key, &processed);
		ident_mix(ident, now);
		ident_mix(ident, last);
		ident_mix(ident, last_key);
		for (unsigned int p = 0; p < 64; p++)
			ident->xmits += j.xmits[p];
		ident->completions = j.done;
	}
	if (verbose && passes > 1 && !j.pe)
		fprintf(stderr, "phases -j 1: submit %.1f run %.1f (ms a pass)\n",
			(j.sub_cpu - sub0) * 1e3 / (passes - 1),
			(j.run_cpu - run0) * 1e3 / (passes - 1));
	for (unsigned int p = 0; verbose && passes > 1 && j.pe && p < jobs; p++) {
		icfab_u64 ph[ICFAB_PENGINE_PH_NR];

		icfab_pengine_phases(j.pe, p, ph);
		fprintf(stderr, "phases thread %u:", p);
		for (unsigned int k = 0; k < ICFAB_PENGINE_PH_NR; k++)
			fprintf(stderr, " %s %.1f", phase_names[k],
				(ph[k] - ph0[p][k]) / 1e6 / (passes - 1));
		fprintf(stderr, " (ms a pass)\n");
	}
	stats[0] = stats[1] = stats[2] = 0;
	if (j.pe) {
		icfab_pengine_counts(j.pe, &stats[0], &stats[1]);
		stats[2] = icfab_pengine_lookahead(j.pe);
		pengine_host_free(j.pe);
	} else {
		host_storage_free(&j.st);
	}
	free(j.link_hash);
	free(j.subs);
	free(j.ids);
	if (!j.pe)
		times[0] = times[1] = *cpu;
	*wall /= passes - 1;
	*cpu /= passes - 1;
	times[0] /= passes - 1;
	times[1] /= passes - 1;
	*failed = j.failed;
	return 0;
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr, "usage: engine_rate [-H [-I] [-v] [-m LEVEL] [-p PASSES] [-j THREADS]] [-C] [-b BYTES] "
		"FILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	icfab_u8 cut_through = 0;
	uint64_t hops = 0, failed = 0, link_segs = 0, per_seg_events;
	struct a2a a = { .bytes = 4096 };
	struct topo_err terr;
	struct topo *t;
	struct ident ident = { 0 };
	int host = 0, check = 0, npasses = 0, jobs = 0, opt, err;
	uint64_t jstats[3] = { 0 };
	double jtimes[2] = { 0 };
	double wall = 0, cpu = 0;

	while ((opt = getopt(argc, argv, "HICvb:m:p:j:h")) != -1) {
		switch (opt) {
		case 'H': host = 1; break;
		case 'I': check = 1; break;
		case 'v': verbose = 1; break;
		case 'm': meter = atoi(optarg); break;
		case 'p':
			npasses = atoi(optarg);
			if (npasses < 1)
				usage();
			break;
		case 'C': cut_through = 1; break;
		case 'j':
			jobs = atoi(optarg);
			if (jobs < 1 || jobs > 64)
				usage();
			break;
		case 'b':
			if (icfab_parse_bytes(optarg, &a.bytes))
				usage();
			break;
		default: usage();
		}
	}
	if (optind + 1 != argc || ((check || npasses || jobs) && !host))
		usage();
	if (topo_load_file(argv[optind], &t, &terr) ||
	    topo_route(t, &terr)) {
		fprintf(stderr, "engine_rate: %s\n", terr.msg);
		return 1;
	}
	a.ep = calloc(t->nr_nodes, sizeof(*a.ep));
	if (!a.ep)
		return 1;
	for (uint32_t i = 0; i < t->nr_nodes; i++)
		if (t->nodes[i].kind == ICFAB_NODE_ENDPOINT)
			a.ep[a.n++] = i;
	if (a.n < 2) {
		fprintf(stderr, "engine_rate: needs 2 endpoints or more\n");
		return 1;
	}
	a.segs = (a.bytes + t->segment_size - 1) / t->segment_size;
	/* A transfer reserves one event per segment, plus one. */
	per_seg_events = ENGINE_EVENTS / (a.segs + 1);
	a.window = (per_seg_events < ENGINE_XFERS ? per_seg_events :
						    ENGINE_XFERS) /
		   ((a.n + PER_CTX - 1) / PER_CTX);
	if (a.window > QDEPTH)
		a.window = QDEPTH;
	if (segment_hops(t, &a, &hops)) {
		fprintf(stderr, "engine_rate: an endpoint pair has no route\n");
		return 1;
	}
	if (jobs)
		err = run_host_j(t, &a, cut_through, (unsigned int)jobs, &wall, &cpu,
				 &failed, &link_segs, check ? &ident : NULL, npasses,
				 jstats, jtimes);
	else
		err = host ? run_host(t, &a, cut_through, &wall, &cpu, &failed,
				      &link_segs, check ? &ident : NULL, npasses) :
			     run_module(&a, &wall, &cpu, &failed);
	if (err)
		return 1;
	if (host && link_segs != hops) {
		fprintf(stderr, "engine_rate: links carried %" PRIu64
			" segments, the routes say %" PRIu64 "\n",
			link_segs, hops);
		return 1;
	}
	if (check)
		printf("identity %5u %8" PRIu64 " %10" PRIu64 " %016" PRIx64
		       " %" PRIu64 " %" PRIu64 "\n", a.n,
		       (uint64_t)a.n * (a.n - 1), hops, ident.hash,
		       ident.xmits, ident.completions);
	else if (jobs)
		printf("host-j%-2d %5u %8" PRIu64 " %10" PRIu64 " %8.3f %8.3f %10.0f "
		       "%10.0f %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		       " %8.3f %8.3f\n",
		       jobs, a.n, (uint64_t)a.n * (a.n - 1), hops, wall, cpu,
		       hops / wall, hops / cpu, failed, jstats[0], jstats[1],
		       jstats[2], jtimes[0], jtimes[1]);
	else
		printf("%-6s %5u %8" PRIu64 " %10" PRIu64 " %8.3f %8.3f %10.0f %10.0f %"
	       PRIu64 "\n", host ? "host" : "module", a.n,
	       (uint64_t)a.n * (a.n - 1), hops, wall, cpu, hops / wall,
	       hops / cpu, failed);
	topo_free(t);
	free(a.ep);
	return failed ? 1 : 0;
}
