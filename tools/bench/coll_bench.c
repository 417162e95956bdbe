// SPDX-License-Identifier: GPL-2.0
/*
 * coll_bench: libfabricdev's collectives (fdev_coll(3)) on the fabric
 * icfabd loaded, timing only, one process driving every rank, against
 * the injection bound: what a rank must send or receive through its own
 * port, at B bytes/s, that no algorithm can beat. For a buffer of S
 * bytes per rank (the all-reduce's and broadcast's vector, the
 * reduce-scatter's input, the all-gather's output, the all-to-all's
 * send buffer, so that every operation moves S per rank):
 *
 *	all-reduce      2 (n-1)/n S / B	(reduce-scatter, then all-gather)
 *	reduce-scatter    (n-1)/n S / B
 *	all-gather        (n-1)/n S / B
 *	all-to-all        (n-1)/n S / B
 *	broadcast               S / B	(every receiver takes all of it)
 *
 * The bound has no latency term, so small buffers sit below it by the
 * steps' latencies. It prints one JSON line per run, then a table.
 *
 *	coll_bench -n RANKS -b BYTES_PER_S [-S KIB,...] [-o OPS] [-a ALGOS]
 *		[-L LINKS] [-g RANKS_PER_NODE]
 *
 * OPS is a comma-separated list of ar, rs, ag, a2a, bc (default all),
 * ALGOS of auto, ring, tree, direct, rings, hier (default all but
 * hier). An operation an algorithm does not implement, or that the
 * topology cannot run (rings without a ring through every rank over
 * LINKS), prints its JSON line with "error" (-errno) and "errname"
 * instead of a time, and is left out of the table; any other error ends
 * the run. An auto line says, in "auto_is", which algorithm auto ran
 * (fdev_comm_last_algo(): the plan that costs least on the fabric's
 * routes, fdev_coll(3); FDEV_AUTO=rule in the environment for the rule
 * instead). SIZES
 * default 64,1024,16384 KiB. Ranks 0..RANKS-1 are endpoints
 * 0..RANKS-1. LINKS: the cables between ranks, "a b" per line, for
 * fdev_comm_set_links() (rings, and what auto chooses). -g: ranks per
 * node for hier (fdev_comm_set_node_size(); default all ranks).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabricdev.h"

enum op { OP_AR, OP_RS, OP_AG, OP_A2A, OP_BC, NR_OPS };

static const char *const op_names[NR_OPS] = { "ar", "rs", "ag", "a2a", "bc" };

static const struct {
	const char *name;
	enum fdev_algo algo;
} algos[] = {
	{ "auto", FDEV_ALGO_AUTO }, { "ring", FDEV_ALGO_RING },
	{ "tree", FDEV_ALGO_TREE }, { "direct", FDEV_ALGO_DIRECT },
	{ "rings", FDEV_ALGO_RINGS }, { "hier", FDEV_ALGO_HIER },
};

#define NR_ALGOS	(sizeof(algos) / sizeof(algos[0]))

/* S bytes per rank, as the header says; f32 elements. */
static int run(struct fdev_comm *c, enum op op, enum fdev_algo algo,
	       unsigned int n, uint64_t S)
{
	size_t es = fdev_dtype_size(FDEV_F32);

	switch (op) {
	case OP_AR:
		return fdev_all_reduce(c, NULL, NULL, S / es, FDEV_F32, algo);
	case OP_RS:
		return fdev_reduce_scatter(c, NULL, NULL, S / n / es, FDEV_F32,
					   algo);
	case OP_AG:
		return fdev_all_gather(c, NULL, NULL, S / n / es, FDEV_F32, algo);
	case OP_A2A:
		return fdev_all_to_all(c, NULL, NULL, S / n / es, FDEV_F32, algo);
	case OP_BC:
		return fdev_broadcast(c, NULL, NULL, S / es, FDEV_F32, 0, algo);
	default:
		return -EINVAL;
	}
}

static double bound_ps(enum op op, unsigned int n, uint64_t S, uint64_t bw)
{
	double one = (double)S / bw * 1e12, part = one * (n - 1) / n;

	return op == OP_AR ? 2 * part : op == OP_BC ? one : part;
}

/* The index of operation @name in op_names[], or -1. */
static int op_index(const char *name)
{
	for (unsigned int i = 0; i < NR_OPS; i++)
		if (!strcmp(name, op_names[i]))
			return i;
	return -1;
}

/* The index of algorithm @name in algos[], or -1. */
static int algo_index(const char *name)
{
	for (unsigned int i = 0; i < NR_ALGOS; i++)
		if (!strcmp(name, algos[i].name))
			return i;
	return -1;
}

/* A comma-separated list of names into a bit mask of their indexes. */
static int parse_set(const char *arg, int (*index_of)(const char *name),
		     unsigned int *mask)
{
	char buf[128], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", arg);
	*mask = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int i = index_of(tok);

		if (i < 0) {
			fprintf(stderr, "coll_bench: unknown name '%s'\n", tok);
			return -1;
		}
		*mask |= 1U << i;
	}
	return 0;
}

struct row {
	enum op op;
	unsigned int algo;
	uint64_t S, ps;
	double bound;
};

static struct row rows[256];
static unsigned int nrows;

static void table(unsigned int n, uint64_t bw)
{
	printf("%u ranks, injection %.1f GB/s per rank; times in us\n", n,
	       bw / 1e9);
	printf("%-4s %-7s %10s %12s %12s %11s\n", "op", "algo", "S/rank",
	       "emulated", "bound", "bound/time");
	for (unsigned int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];

		printf("%-4s %-7s %6llu KiB %12.3f %12.3f %11.4f\n",
		       op_names[r->op], algos[r->algo].name,
		       (unsigned long long)r->S / 1024, r->ps / 1e6,
		       r->bound / 1e6, r->bound / r->ps);
	}
}

/* The name of what the communicator's last collective ran. */
static const char *ran(const struct fdev_comm *c)
{
	enum fdev_algo a = fdev_comm_last_algo(c);

	for (unsigned int i = 0; i < NR_ALGOS; i++)
		if (algos[i].algo == a)
			return algos[i].name;
	return "?";
}

static int bench(struct fdev_comm *c, unsigned int n, uint64_t S,
		 uint64_t bw, unsigned int ops, unsigned int algo_mask)
{
	for (unsigned int o = 0; o < NR_OPS; o++)
		for (unsigned int a = 0; a < NR_ALGOS; a++) {
			double bound = bound_ps(o, n, S, bw);
			uint64_t ps;
			int err;

			if (!(ops & 1U << o) || !(algo_mask & 1U << a))
				continue;
			err = run(c, o, algos[a].algo, n, S);
			if (err == -EOPNOTSUPP ||
			    (err == -EINVAL && algos[a].algo == FDEV_ALGO_HIER)) {
				printf("{\"ranks\": %u, \"op\": \"%s\", \"algo\": \"%s\", "
				       "\"bytes_per_rank\": %llu, \"error\": %d, "
				       "\"errname\": \"%s\", \"message\": \"%s\"}\n",
				       n, op_names[o], algos[a].name,
				       (unsigned long long)S, err,
				       err == -EINVAL ? "EINVAL" : "EOPNOTSUPP",
				       strerror(-err));
				fflush(stdout);
				continue;
			}
			if (err) {
				fprintf(stderr, "coll_bench: %s %s %llu KiB: %s\n",
					op_names[o], algos[a].name,
					(unsigned long long)S / 1024,
					strerror(-err));
				return err;
			}
			ps = fdev_comm_last_ps(c);
			printf("{\"ranks\": %u, \"op\": \"%s\", \"algo\": \"%s\", "
			       "\"bytes_per_rank\": %llu, \"time_ps\": %llu, "
			       "\"bound_ps\": %.0f, \"bound_over_time\": %.4f",
			       n, op_names[o], algos[a].name,
			       (unsigned long long)S, (unsigned long long)ps,
			       bound, bound / ps);
			if (algos[a].algo == FDEV_ALGO_AUTO)
				printf(", \"auto_is\": \"%s\"", ran(c));
			printf("}\n");
			fflush(stdout);
			if (nrows < sizeof(rows) / sizeof(rows[0]))
				rows[nrows++] = (struct row){ o, a, S, ps, bound };
		}
	return 0;
}

/* The cables in @path ("a b" per line) to the communicator. */
static int set_links(struct fdev_comm *c, const char *path)
{
	FILE *f = fopen(path, "r");
	uint32_t *ends = NULL, *e;
	unsigned int a, b, n = 0;
	int ret;

	if (!f)
		return -errno;
	while (fscanf(f, "%u %u", &a, &b) == 2) {
		e = realloc(ends, (n + 1) * 2 * sizeof(*ends));
		if (!e) {
			fclose(f);
			free(ends);
			return -ENOMEM;
		}
		ends = e;
		ends[2 * n] = a;
		ends[2 * n++ + 1] = b;
	}
	fclose(f);
	ret = fdev_comm_set_links(c, n, ends);
	free(ends);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned int n = 0, ops = (1U << NR_OPS) - 1;
	/* hier only when asked for: it needs nodes (-g) to mean anything */
	unsigned int algo_mask = ((1U << NR_ALGOS) - 1) & ~(1U << (NR_ALGOS - 1));
	int g = 0;
	char sizes[128] = "64,1024,16384", *tok, *save = NULL;
	struct fdev_comm *c = NULL;
	uint64_t bw = 0;
	const char *links = NULL;
	int opt, err = 0;

	while ((opt = getopt(argc, argv, "n:b:S:o:a:L:g:")) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 'b': bw = strtoull(optarg, NULL, 0); break;
		case 'S': snprintf(sizes, sizeof(sizes), "%s", optarg); break;
		case 'L': links = optarg; break;
		case 'g': g = atoi(optarg); break;
		case 'o':
			if (parse_set(optarg, op_index, &ops))
				return 2;
			break;
		case 'a':
			if (parse_set(optarg, algo_index, &algo_mask))
				return 2;
			break;
		default:
			bw = 0;
			optind = argc;
			break;
		}
	}
	if (!n || !bw || optind != argc) {
		fprintf(stderr, "usage: coll_bench -n RANKS -b BYTES_PER_S [-S KIB,...] [-o ar,rs,ag,a2a,bc] [-a auto,ring,tree,direct,rings,hier] [-L LINKS] [-g RANKS_PER_NODE]\n");
		return 2;
	}
	err = fdev_comm_init_local(NULL, n, NULL, 0, FDEV_COMM_TIMING_ONLY,
				   &c);
	if (err) {
		fprintf(stderr, "coll_bench: %u ranks: %s\n", n, strerror(-err));
		return 1;
	}
	if (links) {
		err = set_links(c, links);
		if (err < 0) {
			fprintf(stderr, "coll_bench: %s: %s\n", links, strerror(-err));
			fdev_comm_destroy(c);
			return 1;
		}
		printf("# %s: %d rings\n", links, err);
		err = 0;
	}
	if (g) {
		err = fdev_comm_set_node_size(c, g);
		if (err) {
			fprintf(stderr, "coll_bench: -g %d: %s\n", g, strerror(-err));
			fdev_comm_destroy(c);
			return 1;
		}
	}
	for (tok = strtok_r(sizes, ",", &save); !err && tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t S = strtoull(tok, NULL, 0) * 1024;

		/* Whole f32 elements for every rank's block. */
		S -= S % (4ULL * n);
		if (!S) {
			fprintf(stderr, "coll_bench: %s KiB is too small for %u ranks\n",
				tok, n);
			err = -EINVAL;
			break;
		}
		err = bench(c, n, S, bw, ops, algo_mask);
	}
	fdev_comm_destroy(c);
	if (!err)
		table(n, bw);
	return err ? 1 : 0;
}
