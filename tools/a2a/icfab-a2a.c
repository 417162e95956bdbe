// SPDX-License-Identifier: GPL-2.0
/*
 * icfab-a2a: time an all-to-all on the committed topology.
 *
 * One process attaches to every endpoint (or the first N), gives each a
 * queue, and has every endpoint send BYTES to every other endpoint at
 * fabric time 0, timing only (no bytes move). It reports the emulated
 * time from the first start to the last finish, the bandwidth each
 * endpoint achieved, and the bound set by its busiest injection link, all
 * from the fabric's own timestamps.
 *
 *	icfab-a2a [-d /dev/icfabN] [-n ENDPOINTS] [-j] BYTES
 *
 * BYTES accepts a K/M/G (binary) suffix. The endpoints are found without
 * netlink: the node ids that ICFAB_IOC_ATTACH accepts, in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/icfab.h>

#include <icfab/parse.h>

#define MAX_EPS		1024

/* Reap at least @min completions, folding them into the per-endpoint stats. */
static int reap(int fd, unsigned int min, uint64_t *first_start,
		uint64_t *last_finish, uint64_t *ep_finish, uint64_t *queued,
		unsigned int *errors)
{
	struct icfab_cqe cqes[256];
	struct icfab_wait w = {
		.cqes = (uintptr_t)cqes, .max = 256, .min = min,
	};

	if (ioctl(fd, ICFAB_IOC_WAIT, &w))
		return -errno;
	for (unsigned int i = 0; i < w.nr; i++) {
		const struct icfab_cqe *c = &cqes[i];
		uint32_t src = (uint32_t)(c->user_tag >> 32);

		if (c->status)
			(*errors)++;
		if (c->start_ps < *first_start)
			*first_start = c->start_ps;
		if (c->finish_ps > *last_finish)
			*last_finish = c->finish_ps;
		if (c->finish_ps > ep_finish[src])
			ep_finish[src] = c->finish_ps;
		*queued += c->queued_ps;
	}
	return (int)w.nr;
}

int main(int argc, char **argv)
{
	const char *dev = "/dev/icfab0";
	uint64_t bytes, first_start = ~0ULL, last_finish = 0, queued = 0;
	static uint64_t ep_finish[MAX_EPS];
	static uint32_t queue_of[MAX_EPS], node_of[MAX_EPS];
	struct icfab_desc d;
	unsigned int n = 0, max_n = MAX_EPS, errors = 0, outstanding = 0;
	unsigned int total = 0, done = 0;
	int json = 0, opt, fd, ret;

	while ((opt = getopt(argc, argv, "d:n:jh")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'n': max_n = (unsigned int)atoi(optarg); break;
		case 'j': json = 1; break;
		default:
			fprintf(stderr, "usage: icfab-a2a [-d DEV] [-n ENDPOINTS] [-j] BYTES\n");
			return 2;
		}
	}
	if (optind + 1 != argc || icfab_parse_bytes(argv[optind], &bytes) ||
	    !max_n || max_n > MAX_EPS) {
		fprintf(stderr, "usage: icfab-a2a [-d DEV] [-n ENDPOINTS] [-j] BYTES\n");
		return 2;
	}

	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "icfab-a2a: %s: %s\n", dev, strerror(errno));
		return 1;
	}

	/* Endpoints are the node ids ATTACH accepts; switches come after. */
	for (uint32_t id = 0; n < max_n; id++) {
		struct icfab_attach a = { .endpoint = id };
		struct icfab_queue_create qc = { .endpoint = id, .depth = 4096 };

		if (ioctl(fd, ICFAB_IOC_ATTACH, &a)) {
			if (errno == ENOENT && id < 8192)
				continue;	/* a switch, or the end */
			break;
		}
		if (ioctl(fd, ICFAB_IOC_QUEUE_CREATE, &qc)) {
			fprintf(stderr, "icfab-a2a: queue on %u: %s\n", id,
				strerror(errno));
			return 1;
		}
		node_of[n] = id;
		queue_of[n++] = qc.queue;
	}
	if (n < 2) {
		fprintf(stderr, "icfab-a2a: needs a committed topology with 2 or more endpoints (icfabd --apply)\n");
		return 1;
	}

	/* Round-robin over destinations, so no endpoint floods one peer first. */
	{
		for (unsigned int r = 1; r < n; r++) {
			for (unsigned int s = 0; s < n; s++) {
				memset(&d, 0, sizeof(d));
				d.op = ICFAB_OP_WRITE;
				d.flags = ICFAB_DESC_F_TIMING_ONLY;
				d.queue = queue_of[s];
				d.peer = node_of[(s + r) % n];
				d.len = bytes;
				d.user_tag = (uint64_t)s << 32 | r;
				for (;;) {
					struct icfab_submit sub = {
						.descs = (uintptr_t)&d, .nr = 1,
					};

					ret = ioctl(fd, ICFAB_IOC_SUBMIT, &sub);
					if (ret == 1)
						break;
					if (errno != EAGAIN || !outstanding) {
						fprintf(stderr, "icfab-a2a: submit: %s\n",
							strerror(errno));
						return 1;
					}
					/* Back-pressure: make room, then retry. */
					ret = reap(fd, 1, &first_start, &last_finish,
						   ep_finish, &queued, &errors);
					if (ret < 0)
						goto err_wait;
					outstanding -= ret;
					done += ret;
				}
				outstanding++;
				total++;
			}
		}
	}
	while (done < total) {
		ret = reap(fd, outstanding < 256 ? outstanding : 256,
			   &first_start, &last_finish,
			   ep_finish, &queued, &errors);
		if (ret < 0)
			goto err_wait;
		outstanding -= ret;
		done += ret;
	}

	{
		double secs = (double)(last_finish - first_start) / 1e12;
		double per_ep = (double)bytes * (n - 1);

		if (json) {
			printf("{\"endpoints\":%u,\"bytes_per_pair\":%" PRIu64
			       ",\"transfers\":%u,\"errors\":%u,\"time_ps\":%" PRIu64
			       ",\"per_endpoint_gbps\":%.3f,\"queued_ps\":%" PRIu64 "}\n",
			       n, bytes, total, errors, last_finish - first_start,
			       per_ep / secs / 1e9, queued);
		} else {
			printf("all-to-all: %u endpoints, %" PRIu64 " bytes per pair, %u transfers, %u failed\n",
			       n, bytes, total, errors);
			printf("emulated time: %.3f us (first start to last finish)\n",
			       secs * 1e6);
			printf("per endpoint: %.2f GB/s sent on average\n",
			       per_ep / secs / 1e9);
			printf("time queued behind other traffic (sum over segments): %.3f us\n",
			       (double)queued / 1e6);
		}
	}
	close(fd);
	return errors ? 1 : 0;

err_wait:
	fprintf(stderr, "icfab-a2a: wait: %s\n", strerror(-ret));
	return 1;
}
