// SPDX-License-Identifier: GPL-2.0
/*
 * copy_bw: host bandwidth of byte-moving WRITEs, side by side with
 * memcpy() of the same size in the same run (these machines are shared
 * and noisy, so only the ratio means anything).
 *
 * On a two-endpoint fabric with zero-latency links of very high
 * bandwidth, a 4 MiB region on each endpoint; each round is one WRITE of
 * BYTES of it (default all of it; ICFAB_IOC_SUBMIT, ICFAB_IOC_WAIT), the
 * same WRITE timing only, one memcpy() of BYTES between two anonymous
 * buffers and one between the two regions' mappings. Every buffer is faulted in and
 * written before the first round, and two rounds warm up, so no round
 * pays for first touches. Prints the median and best MB/s of each and
 * the median of the per-round ratios WRITE / memcpy (anonymous), and
 * the WRITE's ns (under tools/vm/run --icount, guest instructions).
 * The fabric's segment size is raised to its maximum for the run, so
 * that the engine's per-segment work does not dominate.
 *
 * Needs the module loaded and CAP_NET_ADMIN (it replaces the topology
 * of fabric 0). Build:
 *   cc -O2 -Iuapi -Iselftests/icfab -o build/bench/copy_bw \
 *      tools/bench/copy_bw.c tools/bench/bench.c \
 *      selftests/icfab/genl.c selftests/icfab/fabric_util.c
 * usage: copy_bw [ROUNDS [BYTES]]   (default 30, 4 MiB)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "bench.h"

#define SIZE	(4ULL << 20)	/* bytes, each region */
#define SEGMAX	(1U << 20)	/* bytes, ICFAB_MAX_SEGMENT_SIZE */

static void *region(int fd, uint32_t ep, uint32_t *handle, uint64_t *key)
{
	struct icfab_region_alloc ra = { .endpoint = ep, .size = SIZE };
	struct icfab_region_export re = { .access = ICFAB_ACCESS_ALL };
	void *p;

	if (ioctl(fd, ICFAB_IOC_REGION_ALLOC, &ra))
		return NULL;
	re.region = ra.region;
	if (ioctl(fd, ICFAB_IOC_REGION_EXPORT, &re))
		return NULL;
	/* Faulted in now, so that no round pays for first touches. */
	p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		 fd, ra.mmap_offset);
	if (p == MAP_FAILED)
		return NULL;
	*handle = ra.region;
	*key = re.key;
	return p;
}

static void *anon(void)
{
	void *p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* One descriptor through ICFAB_IOC_SUBMIT and ICFAB_IOC_WAIT: ns, or < 0. */
static double transfer(int fd, const struct icfab_desc *d)
{
	struct icfab_submit s = { .descs = (uintptr_t)d, .nr = 1 };
	struct icfab_cqe c;
	struct icfab_wait w = { .cqes = (uintptr_t)&c, .min = 1, .max = 1 };
	double t0 = bench_now_ns();

	if (ioctl(fd, ICFAB_IOC_SUBMIT, &s) != 1 ||
	    ioctl(fd, ICFAB_IOC_WAIT, &w) || c.status)
		return -1;
	return bench_now_ns() - t0;
}

static unsigned long long len = SIZE;	/* bytes a round */

static double copy(void *dst, const void *src)
{
	double t0 = bench_now_ns();

	memcpy(dst, src, len);
	__asm__ volatile("" : : "r"(dst) : "memory");
	return bench_now_ns() - t0;
}

static double mbs(double ns)
{
	return len / ns * 1e3;
}

enum { T_CPY, T_MAP, T_DEV, T_TIM, T_RATIO, T_NR };

int main(int argc, char **argv)
{
	static const char *const what[T_NR] = {
		"memcpy (anonymous)", "memcpy (the regions)", "icfab WRITE",
		"timing-only WRITE",
	};
	int rounds = argc > 1 ? atoi(argv[1]) : 30;
	struct icfab_queue_create qc = { .endpoint = 0, .depth = 1 };
	unsigned char *a, *b, *x, *y;
	struct icfab_desc d, dt_only;
	double *t[T_NR], best[T_NR];
	struct genl_sock gs;
	uint32_t ha, hb;
	uint64_t ka, kb;
	int fd;

	if (rounds < 1)
		rounds = 1;
	if (argc > 2)
		len = strtoull(argv[2], NULL, 0);
	if (len < 1 || len > SIZE) {
		fprintf(stderr, "copy_bw: BYTES must be 1 to %llu\n", SIZE);
		return 2;
	}
	fd = bench_start("copy_bw", t, best, T_NR, rounds, &gs, SEGMAX);
	if (fd < 0)
		return 1;
	for (uint32_t ep = 0; ep < 2; ep++) {
		struct icfab_attach at = { .endpoint = ep };

		if (ioctl(fd, ICFAB_IOC_ATTACH, &at)) {
			perror("copy_bw: attach");
			return 1;
		}
	}
	if (ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &qc)) {
		perror("copy_bw: queue");
		return 1;
	}
	a = region(fd, 0, &ha, &ka);
	b = region(fd, 1, &hb, &kb);
	x = anon();
	y = anon();
	if (!a || !b || !x || !y) {
		perror("copy_bw: memory");
		return 1;
	}
	/* Every page written once more: present and dirty before round -2. */
	memset(a, 1, SIZE);
	memset(b, 2, SIZE);
	memset(x, 3, SIZE);
	memset(y, 4, SIZE);

	d = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = qc.queue,
		.region = ha, .rkey = kb, .len = len };
	/* The same transfer, timed but not copied: the engine's share. */
	dt_only = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = qc.queue,
		.peer = 1, .len = len, .flags = ICFAB_DESC_F_TIMING_ONLY };
	/*
	 * Rounds -2 and -1 warm up (caches, the request pool, the engine);
	 * then the four are interleaved, so that the host's noise falls on
	 * all of them alike, and each round gives its own ratio.
	 */
	for (int r = -2; r < rounds; r++) {
		double v[T_NR];

		a[(r & 0xfff) % len] = r;
		v[T_DEV] = transfer(fd, &d);
		if (v[T_DEV] < 0 || b[(r & 0xfff) % len] != (unsigned char)r) {
			fprintf(stderr, "copy_bw: the WRITE failed\n");
			return 1;
		}
		v[T_TIM] = transfer(fd, &dt_only);
		if (v[T_TIM] < 0) {
			fprintf(stderr, "copy_bw: the timing-only WRITE failed\n");
			return 1;
		}
		x[r & 0xfff] = r;
		v[T_CPY] = copy(y, x);
		v[T_MAP] = copy(b, a);
		v[T_RATIO] = v[T_CPY] / v[T_DEV];
		if (r < 0)
			continue;
		for (int k = 0; k < T_NR; k++) {
			t[k][r] = v[k];
			if (v[k] < best[k])
				best[k] = v[k];
		}
	}
	printf("copy_bw: %d rounds of %llu bytes (median, best)\n", rounds,
	       len);
	for (int k = 0; k < T_TIM; k++) {
		double m = bench_median(t[k], rounds);

		printf("  %-22s %8.0f MB/s %8.0f MB/s\n", what[k], mbs(m),
		       mbs(best[k]));
	}
	printf("  %-22s %8.0f ns    %8.0f ns   per transfer\n", what[T_DEV],
	       bench_median(t[T_DEV], rounds), best[T_DEV]);
	printf("  %-22s %8.0f us    %8.0f us   per transfer\n", what[T_TIM],
	       bench_median(t[T_TIM], rounds) / 1e3, best[T_TIM] / 1e3);
	printf("  icfab WRITE / memcpy  %8.2fx (median of per-round ratios)\n",
	       bench_median(t[T_RATIO], rounds));
	munmap(a, SIZE);
	munmap(b, SIZE);
	close(fd);
	munmap(x, SIZE);
	munmap(y, SIZE);
	/* Leave the default segment size behind, for whatever runs next. */
	bench_segment_size(&gs, 4096);
	for (int k = 0; k < T_NR; k++)
		free(t[k]);
	genl_close(&gs);
	return 0;
}
