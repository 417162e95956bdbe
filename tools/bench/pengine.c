// SPDX-License-Identifier: GPL-2.0
/*
 * The parallel engine's shim on the host (kmod/model/pengine.h, struct
 * icfab_pengine_sys): pthreads, calloc(), the thread's CPU clock. The
 * workers sleep in a pthread barrier between commands; within one, a
 * window is tens of microseconds, so they spin, yielding the CPU after
 * a while, as the other thread may be off its CPU on a shared machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "pengine.h"
#include "host_model.h"

struct host_pe {
	atomic_uint count;
	atomic_uint gen;
	unsigned int n;
	pthread_barrier_t start;
	pthread_t threads[ICFAB_PENGINE_MAX];
	unsigned int nr;
};

struct host_worker {
	struct icfab_pengine *pe;
	unsigned int p;
};

static void *host_zalloc(icfab_u64 bytes)
{
	return calloc(1, bytes);
}

static int host_storage_sys(struct icfab_engine_storage *st,
			    const struct icfab_mtopo *m, icfab_u32 xfers,
			    icfab_u32 events)
{
	return host_storage(st, m, xfers, events) ? -ENOMEM : 0;
}

static icfab_u64 host_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (icfab_u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void *host_worker_fn(void *arg)
{
	struct host_worker w = *(struct host_worker *)arg;

	free(arg);
	icfab_pengine_worker(w.pe, w.p);
	return NULL;
}

static void host_stop(struct icfab_pengine *pe)
{
	struct host_pe *h = icfab_pengine_priv(pe);
	unsigned int p;

	for (p = 1; p < h->nr; p++)
		pthread_join(h->threads[p], NULL);
	h->nr = 0;
}

static int host_start(struct icfab_pengine *pe, unsigned int nr)
{
	struct host_pe *h = icfab_pengine_priv(pe);
	unsigned int p;

	h->n = nr;
	pthread_barrier_init(&h->start, NULL, nr);
	for (p = 1; p < nr; p++) {
		struct host_worker *w = malloc(sizeof(*w));

		if (!w)
			abort();
		*w = (struct host_worker){ .pe = pe, .p = p };
		if (pthread_create(&h->threads[p], NULL, host_worker_fn, w))
			abort();
	}
	h->nr = nr;
	return 0;
}

static void host_cmd_wait(struct icfab_pengine *pe, unsigned int p)
{
	struct host_pe *h = icfab_pengine_priv(pe);

	(void)p;
	pthread_barrier_wait(&h->start);
}

/* A spinning barrier: a window is tens of microseconds. */
static void host_win_wait(struct icfab_pengine *pe, unsigned int p)
{
	struct host_pe *h = icfab_pengine_priv(pe);
	unsigned int gen = atomic_load_explicit(&h->gen, memory_order_acquire);
	unsigned int spins = 0;

	(void)p;
	if (atomic_fetch_add_explicit(&h->count, 1, memory_order_acq_rel) + 1 ==
	    h->n) {
		atomic_store_explicit(&h->count, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&h->gen, 1, memory_order_release);
		return;
	}
	while (atomic_load_explicit(&h->gen, memory_order_acquire) == gen) {
		/* On a shared machine the other thread may be off its CPU. */
		if (++spins > 2000)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
}

static const struct icfab_pengine_sys host_sys = {
	.zalloc = host_zalloc,
	.free = free,
	.storage = host_storage_sys,
	.storage_free = host_storage_free,
	.start = host_start,
	.stop = host_stop,
	.cmd_wait = host_cmd_wait,
	.win_wait = host_win_wait,
	.cpu_ns = host_cpu_ns,
};

struct icfab_pengine *pengine_host_new(const struct icfab_mtopo *m,
				       icfab_u32 segment_size, unsigned int nr,
				       icfab_u32 xfers, icfab_u32 events,
				       int *err)
{
	struct host_pe *h = calloc(1, sizeof(*h));
	struct icfab_pengine *pe;

	if (!h) {
		*err = -ENOMEM;
		return NULL;
	}
	pe = icfab_pengine_new(&host_sys, h, m, segment_size, nr, xfers,
			       events, err);
	if (!pe)
		free(h);
	return pe;
}

void pengine_host_free(struct icfab_pengine *pe)
{
	struct host_pe *h;

	if (!pe)
		return;
	h = icfab_pengine_priv(pe);
	icfab_pengine_free(pe);
	pthread_barrier_destroy(&h->start);
	free(h);
}

void pengine_host_times(const struct icfab_pengine *pe, double *critical,
			double *busy)
{
	icfab_u64 c, b;

	icfab_pengine_times(pe, &c, &b);
	*critical = c / 1e9;
	*busy = b / 1e9;
}
