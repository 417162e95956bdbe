// SPDX-License-Identifier: GPL-2.0
/*
 * ctx_room: how large the engine's tables get with many contexts on the
 * WRITE path (docs/ARCHITECTURE.md, "The WRITE path"). For each N given:
 * N contexts in this process on desc_cost's fabric (two endpoints,
 * contexts on 0 and 1 in turn), each with a queue of 32; each SUBMITs 32
 * timing-only 64-byte WRITEs to the other endpoint (a context's first
 * SUBMIT goes under the fabric lock, and its end gives the context
 * credit on the engine's room), then, once all have, 32 more (off the
 * fabric lock where the credit holds them). What the engine holds then is
 * 64 N transfers of 2 events each, whatever the module. It prints the
 * kernel's vmalloc'd memory grown since before the first context opened
 * (VmallocUsed of /proc/meminfo: the tables are kvmalloc'd, 48 bytes an
 * event and 128 a transfer, and are most of it), and where the module has
 * them the debugfs counts (kmod/debugfs.c): the tables' entries
 * (engine_events_cap, engine_xfers_cap), the room promised
 * (granted_events, granted_xfers) and the WRITEs the path took
 * (fast_writes). Then it closes them all, which frees the engine.
 *
 * Needs the module loaded, CAP_NET_ADMIN (it replaces fabric 0's
 * topology) and debugfs mounted for the counts.
 * usage: ctx_room N...   (default 1 16 64)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/icfab.h>
#include <linux/icfab_genl.h>

#include "bench.h"
#include "fabric_util.h"

#define BATCH	32
#define LEN	64		/* bytes */
#define MAX_CTX	1024

/* VmallocUsed of /proc/meminfo, kB, or -1. */
static long long vmalloc_kb(void)
{
	char line[128];
	long long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmallocUsed: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int submit(int fd, uint32_t q, int p)
{
	struct icfab_desc d[BATCH];
	struct icfab_submit s = { .descs = (uintptr_t)d, .nr = BATCH };

	for (int i = 0; i < BATCH; i++)
		d[i] = (struct icfab_desc){ .op = ICFAB_OP_WRITE, .queue = q,
			.peer = 1 - p, .len = LEN,
			.flags = ICFAB_DESC_F_TIMING_ONLY };
	return ioctl(fd, ICFAB_IOC_SUBMIT, &s) == BATCH ? 0 : -1;
}

static int row(int n)
{
	static int fd[MAX_CTX];
	static uint32_t q[MAX_CTX];
	long long vm0 = vmalloc_kb(), fw0 = fab_count("fast_writes");
	long long vm, fw;
	int err = 0, opened = 0;

	for (int i = 0; i < n && !err; i++) {
		struct icfab_attach a = { .endpoint = i % 2 };
		struct icfab_queue_create qc = { .endpoint = i % 2,
						 .depth = 2 * BATCH };

		fd[i] = open("/dev/icfab0", O_RDWR | O_CLOEXEC);
		if (fd[i] < 0)
			break;
		opened++;
		if (ioctl(fd[i], ICFAB_IOC_ATTACH, &a) ||
		    ioctl(fd[i], ICFAB_IOC_QUEUE_CREATE, &qc))
			err = -1;
		q[i] = qc.queue;
	}
	for (int r = 0; r < 2 && !err; r++)
		for (int i = 0; i < n && !err; i++)
			err = submit(fd[i], q[i], i % 2);
	vm = vmalloc_kb();
	fw = fab_count("fast_writes");
	if (err || opened < n)
		fprintf(stderr, "ctx_room: %d contexts: %s\n", n,
			strerror(errno));
	else
		printf("  %4d %12lld %10lld %10lld %10lld %10lld %10lld\n", n,
		       vm - vm0, fab_count("engine_events_cap"),
		       fab_count("engine_xfers_cap"),
		       fab_count("granted_events"), fab_count("granted_xfers"),
		       fw < 0 || fw0 < 0 ? -1 : fw - fw0);
	for (int i = 0; i < opened; i++)
		close(fd[i]);
	return err || opened < n;
}

int main(int argc, char **argv)
{
	static const int def[] = { 1, 16, 64 };
	struct genl_sock gs;
	int err, bad = 0;

	if (genl_open(&gs) || genl_resolve(&gs, ICFAB_GENL_NAME)) {
		fprintf(stderr, "ctx_room: netlink: %s\n", strerror(errno));
		return 1;
	}
	err = bench_two_endpoints(&gs, 0);
	if (err) {
		fprintf(stderr, "ctx_room: fabric: %s\n", strerror(-err));
		return 1;
	}
	printf("ctx_room: per context 2 SUBMITs of %d x %d-byte WRITEs "
	       "(-1: no such count)\n", BATCH, LEN);
	printf("  %4s %12s %10s %10s %10s %10s %10s\n", "ctxs",
	       "vmalloc kB", "events", "xfers", "gr.events", "gr.xfers",
	       "fast_wr");
	for (int i = 1; i < argc || (argc < 2 && i <= 3); i++) {
		int n = argc > 1 ? atoi(argv[i]) : def[i - 1];

		if (n < 1 || n > MAX_CTX) {
			fprintf(stderr, "ctx_room: N in 1..%d\n", MAX_CTX);
			return 2;
		}
		bad |= row(n);
	}
	return bad;
}
