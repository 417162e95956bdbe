// SPDX-License-Identifier: GPL-2.0
/*
 * icfab-contention: which links of an icfab fabric are contended.
 *
 *	icfab-contention [-f FABRIC | -a] [-n TOP] [-i SECS] [-H] [-j]
 *			 [-p DIR] [-d SECS | -- CMD [ARGS...]]
 *
 * Attaches BPF programs to the icfab tracepoints (raw tracepoints; see
 * icfab-contention.bpf.c) and keeps, per link, the bytes and segments it
 * carried, its busy time, its total and longest queueing delay and a
 * log2 histogram of the delay. Prints the TOP links with the most
 * queueing every SECS seconds (-i) and once at the end: when CMD exits,
 * after -d SECS, or on ^C. With -p DIR (on a bpf file system, say
 * /sys/fs/bpf/icfab) it pins its maps there, where they outlive it:
 * "bpftool map dump pinned DIR/links".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "icfab-contention.h"
#include "icfab-contention.skel.h"

struct env {
	uint32_t fabric;
	bool all_fabrics;
	unsigned int top;
	unsigned int interval;		/* s, 0: only at the end */
	unsigned int duration;		/* s, 0: until CMD exits or ^C */
	bool hist;
	bool json;
	const char *pin_dir;
	char **cmd;
};

struct row {
	struct icfab_ct_key key;
	struct icfab_ct_link v;
};

static volatile sig_atomic_t stop;
static volatile sig_atomic_t child;

static void on_signal(int sig)
{
	stop = 1;
	if (child > 0)
		kill(child, sig);
}

static void usage(FILE *f)
{
	fputs("Usage: icfab-contention [-f FABRIC | -a] [-n TOP] [-i SECS] [-H] [-j]\n"
	      "                        [-p DIR] [-d SECS | -- CMD [ARGS...]]\n"
	      "  -f FABRIC  count fabric FABRIC (default 0); -a: every fabric\n"
	      "  -n TOP     print the TOP most contended links (default 10; 0: all)\n"
	      "  -i SECS    print every SECS seconds too (counts are cumulative)\n"
	      "  -d SECS    stop after SECS seconds\n"
	      "  -H         print each link's queueing-delay histogram\n"
	      "  -j         JSON: every link, and the totals, at the end\n"
	      "  -p DIR     pin the maps in DIR (bpffs), for bpftool map dump\n"
	      "  -- CMD     run CMD, stop when it exits\n", f);
}

static int parse_uint(const char *s, unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v > 0xffffffffUL)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* Most queueing first; then busiest; then by id, so output is stable. */
static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->v.queued_ps != y->v.queued_ps)
		return x->v.queued_ps > y->v.queued_ps ? -1 : 1;
	if (x->v.busy_ps != y->v.busy_ps)
		return x->v.busy_ps > y->v.busy_ps ? -1 : 1;
	if (x->key.fabric != y->key.fabric)
		return x->key.fabric < y->key.fabric ? -1 : 1;
	return x->key.link < y->key.link ? -1 : x->key.link > y->key.link;
}

/* Every entry of the links map; *@n of them. NULL, errno set, on failure. */
static struct row *read_links(int fd, size_t *n)
{
	struct icfab_ct_key key, next, *prev = NULL;
	struct row *rows = NULL;
	size_t cap = 0;

	*n = 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (*n == cap) {
			void *p;

			cap = cap ? 2 * cap : 256;
			p = realloc(rows, cap * sizeof(*rows));
			if (!p) {
				free(rows);
				errno = ENOMEM;
				return NULL;
			}
			rows = p;
		}
		key = next;
		prev = &key;
		/* Deleted under us is impossible: nobody deletes. */
		if (bpf_map_lookup_elem(fd, &key, &rows[*n].v))
			continue;
		rows[*n].key = key;
		(*n)++;
	}
	if (!rows)
		rows = malloc(sizeof(*rows));	/* an empty, freeable list */
	return rows;
}

static void print_ps(char *buf, size_t len, uint64_t ps)
{
	if (ps >= 1000000000ULL)
		snprintf(buf, len, "%.3f ms", ps / 1e9);
	else if (ps >= 1000000ULL)
		snprintf(buf, len, "%.3f us", ps / 1e6);
	else
		snprintf(buf, len, "%.3f ns", ps / 1e3);
}

static void print_hist(const struct icfab_ct_link *v)
{
	uint64_t max = 0;
	int i, lo = -1, hi = -1;

	/* Slot i counts delays in [2^(i-1), 2^i) ps; slot 0 no delay. */

	for (i = 0; i < ICFAB_CT_SLOTS; i++) {
		if (!v->hist[i])
			continue;
		if (lo < 0)
			lo = i;
		hi = i;
		if (v->hist[i] > max)
			max = v->hist[i];
	}
	if (lo < 0)
		return;
	printf("        %-26s %10s  distribution\n", "queueing delay (ps)",
	       "segments");
	for (i = lo; i <= hi; i++) {
		char range[48];
		int bar = (int)(v->hist[i] * 40 / max);

		if (!i)
			snprintf(range, sizeof(range), "0");
		else
			snprintf(range, sizeof(range), "%" PRIu64 " -> %" PRIu64,
				 (uint64_t)1 << (i - 1),
				 ((uint64_t)1 << i) - 1);
		printf("        %-26s %10" PRIu64 "  |%-40.*s|\n", range,
		       (uint64_t)v->hist[i], bar,
		       "****************************************");
	}
}

/* @fabric's link transmits: the segments its links carried. */
static uint64_t fabric_xmits(const struct row *rows, size_t n,
			     uint32_t fabric)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (rows[i].key.fabric == fabric)
			sum += rows[i].v.segments;
	return sum;
}

static void print_totals(int totals_fd, const struct row *rows, size_t n)
{
	struct icfab_ct_total tot;
	uint32_t fk, *prev = NULL, next;

	while (!bpf_map_get_next_key(totals_fd, prev, &next)) {
		fk = next;
		prev = &fk;
		if (bpf_map_lookup_elem(totals_fd, &fk, &tot))
			continue;
		printf("fabric %" PRIu32 ": %" PRIu64 " transfers completed (%"
		       PRIu64 " failed), %" PRIu64 " bytes, %" PRIu64
		       " link transmits\n", fk, (uint64_t)tot.transfers,
		       (uint64_t)tot.failed, (uint64_t)tot.bytes,
		       fabric_xmits(rows, n, fk));
	}
}

static int print_text(const struct env *env, int links_fd, int totals_fd)
{
	struct row *rows;
	size_t n, i, shown;
	char t[32];

	rows = read_links(links_fd, &n);
	if (!rows)
		return -errno;
	qsort(rows, n, sizeof(*rows), cmp_rows);
	strftime(t, sizeof(t), "%H:%M:%S", localtime(&(time_t){ time(NULL) }));
	printf("%s  %zu links carried traffic\n", t, n);
	shown = env->top && env->top < n ? env->top : n;
	if (shown)
		printf("%3s %6s %12s %8s %13s %13s %13s %13s\n", "fab", "link",
		       "bytes", "segs", "busy", "queued", "avg-queue",
		       "max-queue");
	for (i = 0; i < shown; i++) {
		const struct row *r = &rows[i];
		char busy[24], q[24], avg[24], max[24];

		print_ps(busy, sizeof(busy), r->v.busy_ps);
		print_ps(q, sizeof(q), r->v.queued_ps);
		print_ps(avg, sizeof(avg), r->v.segments ?
			 r->v.queued_ps / r->v.segments : 0);
		print_ps(max, sizeof(max), r->v.max_queued_ps);
		printf("%3" PRIu32 " %6" PRIu32 " %12" PRIu64 " %8" PRIu64
		       " %13s %13s %13s %13s\n", r->key.fabric, r->key.link,
		       (uint64_t)r->v.bytes, (uint64_t)r->v.segments, busy, q,
		       avg, max);
		if (env->hist)
			print_hist(&r->v);
	}
	print_totals(totals_fd, rows, n);
	fflush(stdout);
	free(rows);
	return 0;
}

static int print_json(int links_fd, int totals_fd)
{
	struct icfab_ct_total tot;
	uint32_t fk, *prev = NULL, next;
	struct row *rows;
	size_t n, i;
	bool first = true;
	int s;

	rows = read_links(links_fd, &n);
	if (!rows)
		return -errno;
	qsort(rows, n, sizeof(*rows), cmp_rows);
	printf("{\"links\":[");
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		printf("%s{\"fabric\":%" PRIu32 ",\"link\":%" PRIu32
		       ",\"bytes\":%" PRIu64 ",\"segments\":%" PRIu64
		       ",\"busy_ps\":%" PRIu64 ",\"queued_ps\":%" PRIu64
		       ",\"max_queued_ps\":%" PRIu64 ",\"hist\":[",
		       i ? "," : "", r->key.fabric, r->key.link,
		       (uint64_t)r->v.bytes, (uint64_t)r->v.segments,
		       (uint64_t)r->v.busy_ps, (uint64_t)r->v.queued_ps,
		       (uint64_t)r->v.max_queued_ps);
		for (s = 0; s < ICFAB_CT_SLOTS; s++)
			printf("%s%" PRIu64, s ? "," : "",
			       (uint64_t)r->v.hist[s]);
		printf("]}");
	}
	printf("],\"totals\":[");
	while (!bpf_map_get_next_key(totals_fd, prev, &next)) {
		fk = next;
		prev = &fk;
		if (bpf_map_lookup_elem(totals_fd, &fk, &tot))
			continue;
		printf("%s{\"fabric\":%" PRIu32 ",\"transfers\":%" PRIu64
		       ",\"bytes\":%" PRIu64 ",\"failed\":%" PRIu64
		       ",\"xmits\":%" PRIu64 "}", first ? "" : ",", fk,
		       (uint64_t)tot.transfers, (uint64_t)tot.bytes,
		       (uint64_t)tot.failed, fabric_xmits(rows, n, fk));
		first = false;
	}
	printf("]}\n");
	fflush(stdout);
	free(rows);
	return 0;
}

static int pin_maps(struct icfab_contention_bpf *skel, const char *dir)
{
	struct bpf_map *maps[] = { skel->maps.links, skel->maps.totals };
	char path[4096];
	size_t i;
	int err;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		err = -errno;
		fprintf(stderr, "icfab-contention: mkdir %s: %s\n", dir,
			strerror(errno));
		return err;
	}
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir,
			 bpf_map__name(maps[i]));
		err = bpf_map__pin(maps[i], path);
		if (err) {
			fprintf(stderr, "icfab-contention: pinning %s: %s%s\n",
				path, strerror(-err), err == -EEXIST ?
				" (left by an earlier run? rm it)" : "");
			while (i--)
				bpf_map__unpin(maps[i], NULL);
			return err;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct env env = { .top = 10 };
	struct icfab_contention_bpf *skel = NULL;
	struct timespec start, now;
	unsigned int waited = 0;
	int opt, err, status = 0, ret = 1;
	pid_t pid = 0;

	while ((opt = getopt(argc, argv, "+f:an:i:d:Hjp:h")) != -1) {
		unsigned int v;

		switch (opt) {
		case 'f':
			if (parse_uint(optarg, &v))
				goto bad;
			env.fabric = v;
			break;
		case 'a':
			env.all_fabrics = true;
			break;
		case 'n':
			if (parse_uint(optarg, &env.top))
				goto bad;
			break;
		case 'i':
			if (parse_uint(optarg, &env.interval) || !env.interval)
				goto bad;
			break;
		case 'd':
			if (parse_uint(optarg, &env.duration) || !env.duration)
				goto bad;
			break;
		case 'H':
			env.hist = true;
			break;
		case 'j':
			env.json = true;
			break;
		case 'p':
			env.pin_dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		env.cmd = argv + optind;
	if (env.cmd && env.duration) {
		fprintf(stderr, "icfab-contention: -d and a command exclude each other\n");
		return 2;
	}

	libbpf_set_print(libbpf_print);
	skel = icfab_contention_bpf__open();
	if (!skel) {
		fprintf(stderr, "icfab-contention: opening the BPF object: %s\n",
			strerror(errno));
		return 1;
	}
	skel->rodata->target_fabric = env.fabric;
	skel->rodata->all_fabrics = env.all_fabrics;
	err = icfab_contention_bpf__load(skel);
	if (err) {
		fprintf(stderr, "icfab-contention: loading the BPF programs: %s\n",
			strerror(-err));
		goto cleanup;
	}
	err = icfab_contention_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "icfab-contention: attaching to the icfab tracepoints: %s%s\n",
			strerror(-err), err == -ENOENT ?
			" (is the icfab module loaded?)" : "");
		goto cleanup;
	}
	if (env.pin_dir && pin_maps(skel, env.pin_dir))
		goto cleanup;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (env.cmd) {
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			perror("icfab-contention: fork");
			goto cleanup;
		}
		if (!pid) {
			execvp(env.cmd[0], env.cmd);
			fprintf(stderr, "icfab-contention: %s: %s\n",
				env.cmd[0], strerror(errno));
			_exit(127);
		}
		child = pid;
	} else if (!env.json) {
		if (env.all_fabrics)
			fprintf(stderr, "icfab-contention: tracing every fabric; ^C to stop\n");
		else
			fprintf(stderr, "icfab-contention: tracing fabric %" PRIu32
				"; ^C to stop\n", env.fabric);
	}

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!stop) {
		if (pid) {
			pid_t w = waitpid(pid, &status, WNOHANG);

			if (w == pid)
				break;
			if (w < 0 && errno != EINTR)
				break;
		}
		usleep(20000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (env.duration &&
		    (unsigned long)(now.tv_sec - start.tv_sec) >= env.duration)
			break;
		if (env.interval && !env.json &&
		    (unsigned int)(now.tv_sec - start.tv_sec) / env.interval >
		    waited) {
			waited = (unsigned int)(now.tv_sec - start.tv_sec) /
				 env.interval;
			print_text(&env, bpf_map__fd(skel->maps.links),
				   bpf_map__fd(skel->maps.totals));
		}
	}
	if (pid && stop)
		waitpid(pid, &status, 0);

	err = env.json ? print_json(bpf_map__fd(skel->maps.links),
				    bpf_map__fd(skel->maps.totals)) :
			 print_text(&env, bpf_map__fd(skel->maps.links),
				    bpf_map__fd(skel->maps.totals));
	if (err) {
		fprintf(stderr, "icfab-contention: reading the maps: %s\n",
			strerror(-err));
		goto cleanup;
	}
	ret = 0;
	if (pid)
		ret = WIFEXITED(status) ? WEXITSTATUS(status) :
					  128 + WTERMSIG(status);
cleanup:
	icfab_contention_bpf__destroy(skel);
	return ret;

bad:
	fprintf(stderr, "icfab-contention: invalid -%c '%s'\n", opt, optarg);
	usage(stderr);
	return 2;
}
