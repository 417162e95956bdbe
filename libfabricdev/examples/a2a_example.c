// SPDX-License-Identifier: MIT
/*
 * a2a_example: one process drives every endpoint of the fabric as a rank
 * and runs an all-to-all of 64 KiB per pair, timing only (no device memory
 * needed), then prints the emulated time.
 *
 *	icfabd --apply --preset dgx-h100 && a2a_example [RANKS]
 *
 * Build: cc a2a_example.c $(pkg-config --cflags --libs libfabricdev)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fabricdev.h>

int main(int argc, char **argv)
{
	unsigned int nranks = argc > 1 ? (unsigned int)atoi(argv[1]) : 8;
	struct fdev_comm *comm;
	int err;

	err = fdev_comm_init_local(NULL, nranks, NULL, 0, FDEV_COMM_TIMING_ONLY,
				   &comm);
	if (err) {
		fprintf(stderr, "fdev_comm_init_local: %s\n", strerror(-err));
		return 1;
	}
	err = fdev_all_to_all(comm, NULL, NULL, 65536, FDEV_U8,
			      FDEV_ALGO_DIRECT);
	if (err) {
		fprintf(stderr, "fdev_all_to_all: %s\n", strerror(-err));
		fdev_comm_destroy(comm);
		return 1;
	}
	printf("all-to-all, %u ranks, 64 KiB per pair: %.3f us emulated\n",
	       nranks, fdev_comm_last_ps(comm) / 1e6);
	fdev_comm_destroy(comm);
	return 0;
}
