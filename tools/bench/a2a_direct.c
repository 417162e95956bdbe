// SPDX-License-Identifier: GPL-2.0
/*
 * a2a_direct: wall time of one all-to-all through libfabricdev directly,
 * the baseline of torch_overhead.py. Forks RANKS processes, one rank
 * each (fdev_comm_init, as the torch backend does), each exchanging
 * BYTES bytes with every rank ITERS times after WARMUP untimed ones.
 * Rank 0 prints the median wall time per op and the emulated time.
 *
 *	a2a_direct [-n RANKS] [-b BYTES] [-i ITERS] [-w WARMUP]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fabricdev.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run_rank(const char *job, int rank, int n, size_t bytes,
		    int iters, int warmup)
{
	uint8_t *send = malloc(bytes * n), *recv = malloc(bytes * n);
	double *t = calloc(iters, sizeof(*t));
	struct fdev_comm *c = NULL;
	uint64_t ws = 2 * bytes * n + (1 << 20);
	int err;

	if (!send || !recv || !t)
		return 1;
	for (size_t i = 0; i < bytes * n; i++)
		send[i] = (uint8_t)(rank + i);
	err = fdev_comm_init(NULL, job, rank, n, ws, 0, &c);
	if (err) {
		fprintf(stderr, "rank %d: fdev_comm_init: %s\n", rank, strerror(-err));
		return 1;
	}
	for (int i = 0; i < warmup + iters && !err; i++) {
		double t0 = now_s();

		err = fdev_all_to_all(c, send, recv, bytes, FDEV_U8, FDEV_ALGO_AUTO);
		if (i >= warmup)
			t[i - warmup] = now_s() - t0;
	}
	if (err) {
		fprintf(stderr, "rank %d: fdev_all_to_all: %s\n", rank, strerror(-err));
		fdev_comm_destroy(c);
		return 1;
	}
	for (int s = 0; s < n; s++)
		if (recv[s * bytes] != (uint8_t)(s + rank * bytes)) {
			fprintf(stderr, "rank %d: wrong bytes from rank %d\n", rank, s);
			err = 1;
		}
	qsort(t, iters, sizeof(*t), cmp_double);
	if (!rank)
		printf("direct ranks=%d bytes_per_peer=%zu median_us=%.1f emulated_ps=%" PRIu64 "\n",
		       n, bytes, t[iters / 2] * 1e6, fdev_comm_last_ps(c));
	fdev_comm_destroy(c);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	int n = 4, iters = 20, warmup = 3, opt, failed = 0;
	size_t bytes = 64 << 10;
	char job[64];

	while ((opt = getopt(argc, argv, "n:b:i:w:")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 'b': bytes = strtoull(optarg, NULL, 0); break;
		case 'i': iters = atoi(optarg); break;
		case 'w': warmup = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: a2a_direct [-n RANKS] [-b BYTES] [-i ITERS] [-w WARMUP]\n");
			return 2;
		}
	}
	if (n < 1 || iters < 1 || warmup < 0 || !bytes)
		return 2;
	snprintf(job, sizeof(job), "a2a-direct-%d", getpid());
	for (int r = 0; r < n; r++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (!pid) {
			int rc = run_rank(job, r, n, bytes, iters, warmup);

			/* _exit() skips stdio's flush, and stdout may be a pipe. */
			fflush(stdout);
			_exit(rc);
		}
	}
	for (int r = 0; r < n; r++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	return failed;
}
