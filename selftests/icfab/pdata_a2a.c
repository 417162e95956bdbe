// SPDX-License-Identifier: GPL-2.0
/*
 * pdata_a2a: timing-only all-to-all steps through /dev/icfab0, for
 * pdata_test.sh, which runs it with engine_threads 1, 2 and 3 and
 * compares what it prints. One line per step: the number of
 * completions, an FNV-1a hash of every field of every completion in
 * the order WAIT returned them, the context's clock after, and the
 * wall time of the step (ns, not compared).
 *
 *	pdata_a2a one|two|pieces ENDPOINTS STEPS
 *
 * one: one context on ENDPOINTS endpoints submits each step whole
 * (pairs in rounds, 4096 or 6000 B) and then waits for all of it in
 * one WAIT: the case the data path may hand to the parallel engine.
 * pieces: the same, but every other step is reaped 256 at a time
 * (sequential), so that parallel and sequential steps follow each
 * other. two: a second context, on the last endpoint, submits its
 * part of each step in the middle of the first's, each ends with a
 * DELAY of 10 ms, and both wait (the second on a thread): the data path
 * must fall back to the sequential engine.
 */
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

#define MAX_EPS		1024
#define CHUNK		1024

static uint32_t node_of[MAX_EPS], queue_of[MAX_EPS];
static int fd_of[MAX_EPS];

static void die(const char *what)
{
	fprintf(stderr, "pdata_a2a: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void mix(uint64_t *h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		*h ^= (v >> (8 * i)) & 0xff;
		*h *= 0x100000001b3ULL;
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct ctx {
	int fd;
	struct icfab_desc *d;
	unsigned int nd, sent;
	uint64_t hash, clock;
	unsigned int done, failed;
	struct icfab_cqe *c;
};

static void submit(struct ctx *x, unsigned int upto)
{
	while (x->sent < upto) {
		unsigned int k = upto - x->sent < CHUNK ? upto - x->sent : CHUNK;
		struct icfab_submit s = {
			.descs = (uintptr_t)&x->d[x->sent], .nr = k,
		};
		int r = ioctl(x->fd, ICFAB_IOC_SUBMIT, &s);

		if (r <= 0)
			die("submit");
		x->sent += (unsigned int)r;
	}
}

static void reap(struct ctx *x, unsigned int piece)
{
	while (x->done < x->nd) {
		unsigned int want = x->nd - x->done;
		struct icfab_wait w;

		if (piece && want > piece)
			want = piece;
		memset(&w, 0, sizeof(w));
		w.cqes = (uintptr_t)x->c;
		w.min = want;
		w.max = want;
		if (ioctl(x->fd, ICFAB_IOC_WAIT, &w))
			die("wait");
		for (unsigned int i = 0; i < w.nr; i++) {
			const struct icfab_cqe *c = &x->c[i];

			mix(&x->hash, c->user_tag);
			mix(&x->hash, (uint64_t)(uint32_t)c->status << 32 |
				      c->queue);
			mix(&x->hash, c->submit_ps);
			mix(&x->hash, c->start_ps);
			mix(&x->hash, c->finish_ps);
			mix(&x->hash, c->queued_ps);
			x->failed += c->status != 0;
		}
		x->done += w.nr;
		x->clock = w.clock_ps;
	}
}

/* The second context waits on a thread of its own: waiting, it no
 * longer holds the engine back for the first. */
static void *reap_thread(void *arg)
{
	reap(arg, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	struct ctx cx[2];
	unsigned int n = 0, want, steps, nctx;
	int two, pieces, fd[2];

	if (argc != 4 || !(two = !strcmp(argv[1], "two"),
			   pieces = !strcmp(argv[1], "pieces"),
			   two || pieces || !strcmp(argv[1], "one"))) {
		fprintf(stderr, "usage: pdata_a2a one|two|pieces ENDPOINTS STEPS\n");
		return 2;
	}
	want = (unsigned int)atoi(argv[2]);
	steps = (unsigned int)atoi(argv[3]);
	if (want < 3 || want > MAX_EPS)
		return 2;
	nctx = two ? 2 : 1;
	for (unsigned int i = 0; i < nctx; i++) {
		fd[i] = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
		if (fd[i] < 0)
			die("/dev/icfab0");
	}
	/* Endpoints are the node ids ATTACH accepts; the last to the second. */
	for (uint32_t id = 0; n < want && id < 8192; id++) {
		int f = two && n == want - 1 ? fd[1] : fd[0];
		struct icfab_attach a = { .endpoint = id };
		struct icfab_queue_create qc = { .endpoint = id, .depth = 4096 };

		if (ioctl(f, ICFAB_IOC_ATTACH, &a))
			continue;
		if (ioctl(f, ICFAB_IOC_QUEUE_CREATE, &qc))
			die("queue");
		node_of[n] = id;
		fd_of[n] = f;
		queue_of[n++] = qc.queue;
	}
	if (n != want) {
		fprintf(stderr, "pdata_a2a: %u endpoints, not %u\n", n, want);
		return 1;
	}
	for (unsigned int step = 0; step < steps; step++) {
		uint64_t t0 = now_ns();

		for (unsigned int i = 0; i < nctx; i++) {
			cx[i] = (struct ctx){ .fd = fd[i],
					      .hash = 0xcbf29ce484222325ULL };
			cx[i].d = calloc((size_t)n * n, sizeof(*cx[i].d));
			cx[i].c = calloc((size_t)n * n, sizeof(*cx[i].c));
			if (!cx[i].d || !cx[i].c)
				die("calloc");
		}
		for (unsigned int r = 1; r < n; r++) {
			for (unsigned int s = 0; s < n; s++) {
				struct ctx *x = &cx[fd_of[s] == fd[0] ? 0 : 1];
				struct icfab_desc *d = &x->d[x->nd++];

				d->op = ICFAB_OP_WRITE;
				d->flags = ICFAB_DESC_F_TIMING_ONLY;
				d->queue = queue_of[s];
				d->peer = node_of[(s + r) % n];
				d->len = (s + r + step) % 3 ? 4096 : 6000;
				d->user_tag = (uint64_t)step << 48 |
					      (uint64_t)s << 32 | r;
			}
		}
		/*
		 * Two contexts: each ends its part with a DELAY past the
		 * step, so that neither, out of its WAIT, holds the engine
		 * back short of what the other waits for.
		 */
		for (unsigned int i = 0; two && i < nctx; i++) {
			struct icfab_desc *d = &cx[i].d[cx[i].nd++];

			d->op = ICFAB_OP_DELAY;
			d->queue = queue_of[i ? n - 1 : 0];
			d->len = 10000000000ULL;	/* 10 ms */
			d->user_tag = (uint64_t)step << 48 | 0xffff;
		}
		/* The second context's part comes in the middle of the first's. */
		submit(&cx[0], cx[0].nd / 2);
		if (two)
			submit(&cx[1], cx[1].nd);
		submit(&cx[0], cx[0].nd);
		if (two) {
			pthread_t t;

			if (pthread_create(&t, NULL, reap_thread, &cx[1]))
				die("pthread_create");
			reap(&cx[0], 0);
			pthread_join(t, NULL);
		} else {
			reap(&cx[0], pieces && step % 2 ? 256 : 0);
		}
		for (unsigned int i = 0; i < nctx; i++) {
			printf("step %u ctx %u completions %u failed %u hash %016" PRIx64
			       " clock %" PRIu64 "\n", step, i, cx[i].done,
			       cx[i].failed, cx[i].hash, cx[i].clock);
			free(cx[i].d);
			free(cx[i].c);
		}
		printf("# step %u wall_ns %" PRIu64 "\n", step, now_ns() - t0);
		fflush(stdout);
	}
	return 0;
}
