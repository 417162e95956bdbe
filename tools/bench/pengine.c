// SPDX-License-Identifier: GPL-2.0
/*
 * The parallel engine's shim on the host (kmod/model/pengine.h, struct
 * icfab_pengine_sys): pthreads, calloc(), the thread's CPU clock. The
 * workers spin between commands for a while, then sleep on a condition
 * variable; within one, a window is tens of microseconds, so they spin,
 * yielding the CPU after a while, as the other thread may be off its CPU
 * on a shared machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pengine.h"
#include "host_model.h"

/*
 * The barrier's count, written by every thread as it comes, and its
 * generation, which the spinners read, on lines of their own and away
 * from the rest.
 */
struct host_pe {
	_Alignas(64) atomic_uint count;
	_Alignas(64) atomic_uint gen;
	/* The barrier around commands: the same, and a sleep after a while. */
	_Alignas(64) atomic_uint cmd_count;
	_Alignas(64) atomic_uint cmd_gen;
	_Alignas(64) unsigned int n;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	unsigned int sleepers;		/* under @lock */
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
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->wake, NULL);
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

/*
 * Around each command. The engine_rate loop gives a command every few
 * milliseconds (a batch, then its run): a worker asleep in a futex takes
 * tens of microseconds to wake on a VM, every time, on the critical
 * path; so it spins first (as at the windows' barriers), and sleeps
 * only when no command comes for a while (between passes, when idle).
 */
static void host_cmd_wait(struct icfab_pengine *pe, unsigned int p)
{
	struct host_pe *h = icfab_pengine_priv(pe);
	unsigned int gen = atomic_load_explicit(&h->cmd_gen,
						memory_order_acquire);
	unsigned int spins;

	(void)p;
	if (atomic_fetch_add_explicit(&h->cmd_count, 1,
				      memory_order_acq_rel) + 1 == h->n) {
		atomic_store_explicit(&h->cmd_count, 0, memory_order_relaxed);
		pthread_mutex_lock(&h->lock);
		atomic_fetch_add_explicit(&h->cmd_gen, 1, memory_order_release);
		if (h->sleepers)
			pthread_cond_broadcast(&h->wake);
		pthread_mutex_unlock(&h->lock);
		return;
	}
	for (spins = 0; spins < 20000; spins++) {
		if (atomic_load_explicit(&h->cmd_gen, memory_order_acquire) != gen)
			return;
		/* On a shared machine the other thread may be off its CPU. */
		if (spins >= 2000)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
	pthread_mutex_lock(&h->lock);
	h->sleepers++;
	while (atomic_load_explicit(&h->cmd_gen, memory_order_acquire) == gen)
		pthread_cond_wait(&h->wake, &h->lock);
	h->sleepers--;
	pthread_mutex_unlock(&h->lock);
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
	struct host_pe *h = aligned_alloc(64, sizeof(*h));
	struct icfab_pengine *pe;

	if (h)
		memset(h, 0, sizeof(*h));
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
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
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
