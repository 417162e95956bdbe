// SPDX-License-Identifier: GPL-2.0
/*
 * copy_lock: does a context's copy of its WRITE's bytes hold another
 * context's system calls? A writer process does ROUNDS times a WRITE of
 * LEN bytes between two regions of device memory (endpoint 0 to 3 of an
 * 8-endpoint ring) and a WAIT for it; beside it, a prober process, on a
 * free-running context of its own on endpoint 5, does an
 * ICFAB_IOC_SUBMIT of one 0 ps DELAY and an ICFAB_IOC_WAIT for it, in a
 * loop, with ICFAB_SUBMIT_F_CQ: its completion, at once, in the
 * context's ring, reaped there, until the writer is done. Its SUBMIT
 * takes the fabric lock (a free-running context's DELAY is not on the
 * DELAY path) and is its only system call, so each of its loops that
 * found the lock taken is counted (submit_lock_waits); neither process
 * waits for the other in virtual time.
 *
 * Prints, for the run: the writer's rounds and the prober's loops, two
 * counts that are not wall time (debugfs: the SUBMITs, of either, that
 * found the fabric lock taken and waited for it, submit_lock_waits; the
 * memory transfers copied off the lock, copies_unlocked), and the
 * prober's loop time in wall ns, median, 99th percentile and largest
 * (noise on a shared host under TCG; compare modules or settings side by
 * side in one boot). Whether the copy runs under the lock is the module's
 * (copy_unlocked_min): run it once each way.
 *
 * Needs the module loaded, debugfs mounted, CAP_NET_ADMIN.
 * usage: copy_lock [ROUNDS [LEN]]   (default 200 rounds of 1 MiB)
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

#define MAX_LOOPS	(1 << 20)

struct shared {
	volatile int ready;
	volatile int stop;
	long loops;
	double ns[MAX_LOOPS];
};

static int writer(struct shared *sh, int rounds, uint64_t len)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	unsigned char *am, *bm;
	uint32_t a, b;
	uint64_t akey, bkey;
	struct icfab_desc d;
	struct icfab_cqe c;
	int q;

	if (fd < 0 || ctx_attach(fd, 0) || ctx_attach(fd, 3))
		return 1;
	q = ctx_queue(fd, 0, 4);
	if (q < 0 || region_map(fd, 0, len, ICFAB_ACCESS_ALL, &a, &akey, &am) ||
	    region_map(fd, 3, len, ICFAB_ACCESS_ALL, &b, &bkey, &bm))
		return 2;
	memset(am, 0x5a, len);
	while (!sh->ready)
		usleep(1000);
	for (int i = 0; i < rounds; i++) {
		d = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = q,
			.region = a, .rkey = bkey, .len = len, .user_tag = i };
		if (ctx_submit(fd, &d, 1) != 1 ||
		    ctx_wait(fd, &c, 1, 1, 0, NULL) != 1 || c.status)
			return 3;
	}
	return bm[len - 1] == 0x5a ? 0 : 4;
}

static int prober(struct shared *sh)
{
	int fd = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
	struct icfab_attach at = { .endpoint = 5,
				   .flags = ICFAB_ATTACH_F_FREE_RUN };
	struct icfab_desc d = { .op = ICFAB_OP_DELAY };
	struct icfab_submit s = { .descs = (uintptr_t)&d, .nr = 1,
				  .flags = ICFAB_SUBMIT_F_CQ };
	struct bench_cq r;

	if (fd < 0 || ioctl(fd, ICFAB_IOC_ATTACH, &at))
		return 1;
	d.queue = ctx_queue(fd, 5, 4);
	if ((int)d.queue < 0 || bench_cq_map(fd, 4, &r))
		return 3;
	sh->ready = 1;
	while (!sh->stop && sh->loops < MAX_LOOPS) {
		double t0 = bench_now_ns();

		if (ioctl(fd, ICFAB_IOC_SUBMIT, &s) != 1 ||
		    bench_cq_reap(fd, &r, 1))
			return 2;
		sh->ns[sh->loops++] = bench_now_ns() - t0;
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	uint64_t len = argc > 2 ? strtoull(argv[2], NULL, 0) : 1 << 20;
	long long waits, copies;
	struct genl_sock gs;
	struct shared *sh;
	int st_w, st_p;
	pid_t w, p;
	long n;

	if (ring_fabric_open(&gs, 8)) {
		fprintf(stderr, "copy_lock: no fabric\n");
		return 1;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	double t0;

	waits = fab_count("submit_lock_waits");
	t0 = bench_now_ns();
	copies = fab_count("copies_unlocked");
	w = fork();
	if (!w)
		_exit(writer(sh, rounds, len));
	p = fork();
	if (!p)
		_exit(prober(sh));
	waitpid(w, &st_w, 0);
	t0 = bench_now_ns() - t0;
	sh->stop = 1;
	waitpid(p, &st_p, 0);
	if (!WIFEXITED(st_w) || WEXITSTATUS(st_w) || !WIFEXITED(st_p) ||
	    WEXITSTATUS(st_p)) {
		fprintf(stderr, "copy_lock: writer %d, prober %d\n",
			WEXITSTATUS(st_w), WEXITSTATUS(st_p));
		return 1;
	}
	n = sh->loops;
	qsort(sh->ns, n, sizeof(double), cmp);
	printf("copy_lock: %d WRITEs of %llu bytes in %.0f ms, %ld prober "
	       "loops; SUBMITs that waited for the fabric lock %lld, "
	       "copies off the lock %lld; prober loop ns: median %.0f, "
	       "p99 %.0f, max %.0f\n",
	       rounds, (unsigned long long)len, t0 / 1e6, n,
	       waits < 0 ? -1 : fab_count("submit_lock_waits") - waits,
	       copies < 0 ? -1 : fab_count("copies_unlocked") - copies,
	       n ? sh->ns[n / 2] : 0, n ? sh->ns[n * 99 / 100] : 0,
	       n ? sh->ns[n - 1] : 0);
	fabric_close(&gs);
	return 0;
}
