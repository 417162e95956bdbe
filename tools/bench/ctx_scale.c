// SPDX-License-Identifier: GPL-2.0
/*
 * ctx_scale: do submissions from several contexts serialise? One
 * process on its own context against two processes on two contexts,
 * side by side in one run, alternating, each process doing the same
 * work: ROUNDS times an ICFAB_IOC_SUBMIT of 32 descriptors with
 * ICFAB_SUBMIT_F_CQ, reaped from the context's completion ring
 * (ICFAB_IOC_CQ_WAIT only when it has fewer than 32), as desc_cost's
 * "ioctl CQ" rows. Rank p attaches endpoint p of desc_cost's fabric
 * (two endpoints, zero-latency 1 PB/s links).
 *
 *   delay: 0 ps DELAYs, everything a descriptor costs but the engine;
 *          the contexts share nothing but the fabric lock
 *   write: 64-byte timing-only WRITEs to the other endpoint; the
 *          contexts share the engine too, and each one's completions
 *          wait for the other's clock (the safe time)
 *   wfree: the same WRITEs from free-running contexts
 *          (ICFAB_ATTACH_F_FREE_RUN), which hold nobody back: the
 *          lockstep of the safe time gone, what the pair shares is the
 *          fabric lock and the engine, the part a split of the lock for
 *          WRITEs could take apart
 *
 * For each, per repetition: the wall time of one process alone and of
 * two at once, both from the moment all have attached and set up to the
 * last one's end. Two contexts that never wait for each other on a
 * 2-vCPU guest do twice the work in the same wall time (speedup 2);
 * fully serialised, in twice the time (speedup 1). It prints the
 * medians of ns per descriptor (the process's own, and the pair's
 * aggregate: wall / descriptors of both) and of speedup = 2 * wall(1) /
 * wall(2). Wall time under TCG on a shared host: repeat, and compare
 * modules side by side in one boot. Where the module has them (debugfs
 * mounted), two counts that are not wall time follow each op's row:
 * how many of the pair's SUBMITs found the fabric lock taken and
 * waited for it, and how many descriptors the DELAY path took, and
 * (where the module has it) the WRITE path.
 *
 * Needs the module loaded, CAP_NET_ADMIN and ICFAB_F_CQ_RING.
 * usage: ctx_scale [ROUNDS [REPS]]   (default 2000 rounds, 7 repetitions)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "bench.h"
#include "fabric_util.h"

#define BATCH	32
#define LEN	64		/* bytes */
#define MAX_REPS 64

/*
 * Rank @p: attach, set up, say so on @ready, wait for @go to end, then
 * the rounds. Exit status 0 or where it failed.
 */
enum { OP_DELAY, OP_WRITE, OP_WFREE, NR_OPS };

static int rank(int p, int op, int rounds, int ready, int go)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	struct icfab_attach a = { .endpoint = p,
		.flags = op == OP_WFREE ? ICFAB_ATTACH_F_FREE_RUN : 0 };
	struct icfab_queue_create qc = { .endpoint = p, .depth = BATCH };
	struct icfab_desc d[BATCH];
	struct icfab_submit s = { .descs = (uintptr_t)d, .nr = BATCH,
				  .flags = ICFAB_SUBMIT_F_CQ };
	struct bench_cq r;
	char byte;

	if (fd < 0 || ioctl(fd, ICFAB_IOC_ATTACH, &a) ||
	    ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &qc) ||
	    bench_cq_map(fd, 2 * BATCH, &r))
		return 1;
	for (int i = 0; i < BATCH; i++)
		d[i] = op != OP_DELAY ?
			(struct icfab_desc){ .op = ICFAB_OP_WRITE,
				.queue = qc.queue, .peer = 1 - p, .len = LEN,
				.flags = ICFAB_DESC_F_TIMING_ONLY } :
			(struct icfab_desc){ .op = ICFAB_OP_DELAY,
				.queue = qc.queue };
	if (write(ready, "r", 1) != 1 || read(go, &byte, 1) != 0)
		return 2;
	for (int k = 0; k < rounds; k++)
		if (ioctl(fd, ICFAB_IOC_SUBMIT, &s) != BATCH ||
		    bench_cq_reap(fd, &r, BATCH))
			return 3;
	close(fd);
	return 0;
}

/* @nr ranks at once; the wall ns from go to the last one's end, or -1. */
static double run(int nr, int op, int rounds)
{
	int ready[2], go[2], bad = 0;
	pid_t pids[2];
	double t0;
	char byte;

	if (pipe(ready) || pipe(go))
		return -1;
	for (int p = 0; p < nr; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			close(ready[0]);
			close(go[1]);
			_exit(rank(p, op, rounds, ready[1], go[0]));
		}
	}
	close(ready[1]);
	close(go[0]);
	for (int p = 0; p < nr; p++)
		if (read(ready[0], &byte, 1) != 1)
			bad = 1;
	t0 = bench_now_ns();
	close(go[1]);
	for (int p = 0; p < nr; p++) {
		int status;

		if (waitpid(pids[p], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			fprintf(stderr, "ctx_scale: rank %d failed (%d)\n", p,
				WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			bad = 1;
		}
	}
	t0 = bench_now_ns() - t0;
	close(ready[0]);
	return bad ? -1 : t0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 2000;
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	static const char *const name[NR_OPS] = { "DELAY", "WRITE", "WFREE" };
	double one[MAX_REPS], two[MAX_REPS], sp[MAX_REPS];
	long long waits, fast, fw, w0, f0, fw0;
	struct genl_sock gs;
	double n;
	int err;

	if (rounds < 1)
		rounds = 1;
	if (reps < 1 || reps > MAX_REPS)
		reps = 7;
	if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME)) {
		fprintf(stderr, "ctx_scale: netlink: %s\n", strerror(errno));
		return 1;
	}
	err = bench_two_endpoints(&gs, 0);
	if (err) {
		fprintf(stderr, "ctx_scale: fabric: %s\n", strerror(-err));
		return 1;
	}
	n = (double)rounds * BATCH;
	printf("ctx_scale: %d rounds of %d per process, %d repetitions, "
	       "%ld CPUs online\n", rounds, BATCH, reps,
	       sysconf(_SC_NPROCESSORS_ONLN));
	/*
	 * ns per descriptor: of the one process alone; of each of the two
	 * (wall / its descriptors); of the pair together (wall / both's).
	 */
	printf("  %-6s %10s %10s %10s %8s  (medians, ns per descriptor)\n",
	       "op", "1 proc", "2: each", "2: both", "speedup");
	for (int w = 0; w < NR_OPS; w++) {
		/* Warm up: pools, pages, the engine's tables. */
		if (run(1, w, rounds / 10 + 1) < 0 ||
		    run(2, w, rounds / 10 + 1) < 0)
			return 1;
		waits = 0;
		fast = 0;
		fw = 0;
		for (int k = 0; k < reps; k++) {
			one[k] = run(1, w, rounds);
			w0 = fab_count("submit_lock_waits");
			f0 = fab_count("fast_delays");
			fw0 = fab_count("fast_writes");
			two[k] = run(2, w, rounds);
			if (one[k] < 0 || two[k] < 0)
				return 1;
			/* The pair's: SUBMITs that waited for the lock. */
			if (w0 >= 0 && waits >= 0)
				waits += fab_count("submit_lock_waits") - w0;
			else
				waits = -1;
			if (f0 >= 0 && fast >= 0)
				fast += fab_count("fast_delays") - f0;
			else
				fast = -1;
			/* A module without the WRITE path has no count. */
			if (fw0 >= 0 && fw >= 0)
				fw += fab_count("fast_writes") - fw0;
			else
				fw = -1;
			sp[k] = 2 * one[k] / two[k];
			printf("  # %s rep %d: 1 proc %.0f ms, 2 procs %.0f ms, "
			       "speedup %.2f\n", name[w], k, one[k] / 1e6,
			       two[k] / 1e6, sp[k]);
		}
		/* bench_median() sorts: the speedups are medianed apart. */
		printf("  %-6s %10.0f %10.0f %10.0f %8.2f\n", name[w],
		       bench_median(one, reps) / n,
		       bench_median(two, reps) / n,
		       bench_median(two, reps) / (2 * n),
		       bench_median(sp, reps));
		/*
		 * Not wall time: of the pair's SUBMITs (2 x ROUNDS x REPS),
		 * how many found the fabric lock taken and waited; of their
		 * descriptors, how many the DELAY path took.
		 */
		if (waits >= 0 && fast >= 0)
			printf("  # %s, 2 procs: %lld of %d SUBMITs waited "
			       "for the fabric lock; %lld of %.0f descriptors "
			       "on the DELAY path\n", name[w], waits,
			       2 * rounds * reps, fast, 2 * n * reps);
		if (fw >= 0)
			printf("  # %s, 2 procs: %lld of %.0f descriptors "
			       "on the WRITE path\n", name[w], fw, 2 * n * reps);
	}
	genl_close(&gs);
	return 0;
}
