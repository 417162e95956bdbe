// SPDX-License-Identifier: GPL-2.0
/*
 * moe_bench: emulated MoE dispatch/combine times on the committed
 * topology, timing only (no bytes move), one process driving every rank
 * (or, with -P, one rank of independent processes).
 *
 *	moe_bench [-n RANKS] [-t TOKENS] [-H HIDDEN] [-e EXPERTS] [-k TOPK]
 *		  [-d bf16|fp8] [-m tp|ll|hier|mc] [-g RANKS_PER_NODE] [-b GBPS]
 *		  [-B GBPS] [-c XxYxZ:GBPS] [-s SEED] [-G GROUPS] [-x] [-r] [-M FILE]
 *		  [-P] [-R]
 *
 * Routing is uniform random top-k (seeded, so runs are repeatable). It
 * prints the emulated dispatch and combine times, the bytes sent per
 * rank, the bandwidth achieved, and the ratio of the bottleneck bound to
 * the emulated time: the bound is, over all ranks, the largest of the
 * bytes a rank sends or receives within its node over its scale-up port
 * (-b GB/s) and across nodes over its scale-out port (-B GB/s, with -g
 * ranks per node), the ports working in parallel. 1.0 would be a
 * transfer that keeps the busiest port busy from start to end.
 *
 * -m hier is the hierarchical dispatch (nodes of -g ranks): its bound
 * counts the bytes it moves, one record per (token, remote node) over
 * scale-out to the peer with the same local index, then the peer's
 * forwarding and the direct sends over scale-up. FDEV_HIER_CHUNKS sets
 * its pipeline's chunks (docs/LIBFABRICDEV.md). Over several nodes (any
 * mode) it also prints dispatch_rdma_gbps and combine_rdma_gbps: the
 * scale-out bytes a rank sends, on average, over the emulated time
 * (the NIC's rate).
 *
 * -G GROUPS: DeepEP's group-limited routing instead (deepseek-ai/DeepEP,
 * tests/test_internode.py, whose default is min(nodes, 4) groups): each
 * token scores every expert (a seeded draw), each node of -g ranks
 * (E / nodes experts) takes its best score, and the token's top-k
 * experts are the k best among the GROUPS best nodes' experts only, so
 * they lie in at most GROUPS nodes. With GROUPS >= nodes it is uniform
 * top-k again, drawn another way. Over several nodes (any routing) it
 * also prints dispatch_deepep_gbps and combine_deepep_gbps, DeepEP's
 * "RDMA" figure on the emulated times: per token, the distinct nodes
 * its experts lie in, its own node included (whose copy goes over
 * NVLink, not the NIC), times DeepEP's bytes per token (hidden x 2 for
 * BF16; hidden x (1 + 4/128) for FP8 with its scales; no ids or
 * weights), per rank over the emulated time; combine counts BF16 bytes
 * the same way. nodes_per_token is that count's mean.
 *
 * -R: draw the routing, check it (k distinct experts in range per token;
 * with -G, in at most GROUPS nodes) and print its counts as JSON, then
 * exit without opening the device (for host tests).
 *
 * -m mc is the multicast dispatch: a token leaves its source once, over
 * the source's circuit to every other rank (icfabd must serve circuits:
 * ICFABD_SOCKET, and the switches need colour tables), and lands at every
 * other rank; its bound counts one record per leaving token on the
 * source's port and every other source's records on each receiving
 * port. Combine is throughput's.
 *
 * -c DIMS:GBPS: the ranks are a torus of DIMS (for example 4x4x4, the
 * first dimension varying fastest, as icfabd numbers a torus's chips)
 * with links of GBPS per direction; the bound also takes the bisection.
 * For each dimension of even size, the cut between its lower and upper
 * halves is crossed by 2 x n/size links each way (a ring crosses it
 * twice); the bytes that cross it are summed pair by pair from the
 * layout, each way, and the busier way over those links is a bound. Only
 * for tp and ll, whose flows are rank to rank.
 *
 * -x: dispatch only, no combine (for reading the links' byte counters
 * of one dispatch: icfabctl -j stats).
 *
 * -r: then dispatch once more, reusing the first dispatch's handle (the
 * same routing, so no count exchange), and print its time as
 * dispatch_reuse_ps: the records alone, against the same bound (a
 * dispatch's time includes its count exchange; the bound counts only the
 * records).
 *
 * -M FILE: the bytes the bound counts, source rank by destination rank,
 * written to FILE as JSON {"dispatch": [[...]], "combine": [[...]]}
 * (row = source), for a bound over the topology's own cuts and routes
 * (tools/bench/bounds.py). Not for mc, whose one copy per token has no
 * such matrix.
 *
 * -P: this process is one rank of -n independent processes (FDEV_RANK,
 * FDEV_JOB; fdev_comm_init(3)), each driving its own context. Every
 * process draws the whole job's routing, as one process would, and
 * dispatches its own rank's tokens; it prints its rank's times (no
 * bound: that needs every rank's routing kept). The times are the same
 * as one process driving all -n ranks (tools/bench/procs_table.sh).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fabricdev.h>

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * One token's k experts into @out, group-limited (-G): a score per
 * expert, a node's score its best expert's, the @G best nodes kept, and
 * the k best-scored experts among the kept nodes' (@per experts each).
 * xorshift never draws 0, so 0 marks "none yet"; ties (equal 64-bit
 * draws) go to the first found. @score has E entries, @best and @top
 * nodes; G <= nodes, k <= G x per.
 */
static void route_grouped(uint64_t *seed, unsigned int E, unsigned int per,
			  unsigned int G, unsigned int k, uint64_t *score,
			  uint64_t *best, unsigned int *top, int64_t *out)
{
	unsigned int nodes = E / per, m = 0;

	for (unsigned int e = 0; e < E; e++)
		score[e] = rng(seed);
	for (unsigned int N = 0; N < nodes; N++) {
		best[N] = 0;
		for (unsigned int e = N * per; e < (N + 1) * per; e++)
			best[N] = score[e] > best[N] ? score[e] : best[N];
	}
	/* top[0..G): the G best nodes, by insertion */
	for (unsigned int N = 0; N < nodes; N++) {
		unsigned int i = m < G ? m++ : G;

		if (i == G && best[N] <= best[top[G - 1]])
			continue;
		if (i == G)
			i = G - 1;
		for (; i > 0 && best[top[i - 1]] < best[N]; i--)
			top[i] = top[i - 1];
		top[i] = N;
	}
	/* out[0..k): the k best experts of those nodes, by insertion */
	for (unsigned int j = 0; j < k; j++)
		out[j] = -1;
	for (unsigned int q = 0; q < G; q++)
		for (unsigned int e = top[q] * per; e < (top[q] + 1) * per; e++) {
			unsigned int i = k - 1;

			if (out[i] >= 0 && score[e] <= score[out[i]])
				continue;
			for (; i > 0 && (out[i - 1] < 0 || score[out[i - 1]] < score[e]); i--)
				out[i] = out[i - 1];
			out[i] = e;
		}
}

/* "XxYxZ:GBPS", one to three dimensions of at least 2 */
static int parse_torus(const char *s, unsigned int *dims, unsigned int *nd, double *bw)
{
	char *end;

	*nd = 0;
	do {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v < 2 || v > 1024 || *nd == 3)
			return -1;
		dims[(*nd)++] = (unsigned int)v;
		s = end + 1;
	} while (*end == 'x');
	if (*end != ':')
		return -1;
	*bw = strtod(s, &end);
	return *end || *bw <= 0 ? -1 : 0;
}

/*
 * Bytes from @s to @d cross the cut of dimension @i if the two lie in
 * different halves of it; cross[i][0] counts lower to upper, [1] the
 * other way.
 */
static void torus_cross(double (*cross)[2], const unsigned int *dims, unsigned int nd,
			unsigned int s, unsigned int d, double b)
{
	for (unsigned int i = 0, stride = 1; i < nd; stride *= dims[i++]) {
		unsigned int hs = s / stride % dims[i] >= dims[i] / 2;
		unsigned int hd = d / stride % dims[i] >= dims[i] / 2;

		if (dims[i] % 2 == 0 && hs != hd)
			cross[i][hs] += b;
	}
}

int main(int argc, char **argv)
{
	unsigned int n = 8, T = 4096, H = 7168, E = 256, k = 8, mode = 0, g = 0;
	unsigned int groups = 0, nodes;
	int dispatch_only = 0, procs = 0, rank = 0, reuse = 0, route_only = 0;
	uint64_t node_hits = 0;		/* (token, node) pairs, own node too */
	uint64_t *score = NULL, *best = NULL;
	unsigned int *top = NULL;
	uint64_t reuse_ps = 0;
	const char *mfile = NULL;
	double inj = 0, inter = 0, torus_bw = 0;
	double rdma[2] = { 0 };		/* scale-out bytes per rank: d, c */
	unsigned int torus[3] = { 0 }, nd_torus = 0;
	int dt = FDEV_BF16, opt, err;
	uint64_t seed = 1;
	struct fdev_moe_handle *h = NULL;
	struct fdev_moe_stats st;
	struct fdev_comm *c;
	struct fdev_moe_in *in, mine;
	struct fdev_moe_config cfg;

	while ((opt = getopt(argc, argv, "n:t:H:e:k:d:m:b:B:c:g:s:G:xrM:PR")) != -1) {
		switch (opt) {
		case 'n': n = (unsigned int)atoi(optarg); break;
		case 't': T = (unsigned int)atoi(optarg); break;
		case 'H': H = (unsigned int)atoi(optarg); break;
		case 'e': E = (unsigned int)atoi(optarg); break;
		case 'k': k = (unsigned int)atoi(optarg); break;
		case 'd': dt = !strcmp(optarg, "fp8") ? FDEV_FP8_E4M3 : FDEV_BF16; break;
		case 'm':
			mode = !strcmp(optarg, "ll") ? FDEV_MOE_LOW_LATENCY :
			       !strcmp(optarg, "hier") ? FDEV_MOE_HIERARCHICAL :
			       !strcmp(optarg, "mc") ? FDEV_MOE_MULTICAST :
			       FDEV_MOE_THROUGHPUT;
			break;
		case 'b': inj = atof(optarg); break;
		case 'B': inter = atof(optarg); break;
		case 'c':
			if (parse_torus(optarg, torus, &nd_torus, &torus_bw)) {
				fprintf(stderr, "moe_bench: -c %s: want DIMS:GBPS, e.g. 4x4x4:50\n", optarg);
				return 2;
			}
			break;
		case 'g': g = (unsigned int)atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0) | 1; break;
		case 'x': dispatch_only = 1; break;
		case 'r': reuse = 1; break;
		case 'M': mfile = optarg; break;
		case 'P': procs = 1; break;
		case 'G': groups = (unsigned int)atoi(optarg); break;
		case 'R': route_only = 1; break;
		default:
			fprintf(stderr, "usage: moe_bench [-n R] [-t T] [-H H] [-e E] [-k K] [-d bf16|fp8] [-m tp|ll|hier|mc] [-g RANKS_PER_NODE] [-b GBPS] [-B GBPS] [-c XxYxZ:GBPS] [-s SEED] [-G GROUPS] [-x] [-r] [-M FILE] [-P] [-R]\n");
			return 2;
		}
	}
	if (nd_torus) {
		unsigned int prod = 1;

		for (unsigned int i = 0; i < nd_torus; i++)
			prod *= torus[i];
		if (prod != n) {
			fprintf(stderr, "moe_bench: -c: the torus has %u chips, not %u ranks\n", prod, n);
			return 2;
		}
	}
	if (!n || !k || k > E || E % n || (g && n % g)) {
		fprintf(stderr, "moe_bench: bad shape\n");
		return 2;
	}
	if (route_only) {
		err = 0;
	} else if (procs) {
		err = fdev_comm_init(NULL, NULL, -1, (int)n, 0, FDEV_COMM_TIMING_ONLY, &c);
		if (!err)
			fdev_comm_local(c, &rank, NULL);
	} else {
		err = fdev_comm_init_local(NULL, n, NULL, 0, FDEV_COMM_TIMING_ONLY, &c);
	}
	if (!err && g && !route_only)
		err = fdev_comm_set_node_size(c, (int)g);
	if (err) {
		fprintf(stderr, "moe_bench: %s\n", strerror(-err));
		return 1;
	}
	nodes = g ? n / g : 1;
	if (groups > nodes)
		groups = nodes;
	if (groups && (nodes < 2 || k > groups * (E / nodes))) {
		fprintf(stderr, "moe_bench: -G needs -g over several nodes and k <= the groups' experts\n");
		return 2;
	}
	if (groups) {
		score = malloc((size_t)E * sizeof(*score));
		best = malloc(nodes * sizeof(*best));
		top = malloc(nodes * sizeof(*top));
	}
	in = calloc(n, sizeof(*in));
	for (unsigned int r = 0; r < n; r++) {
		int64_t *idx = malloc((size_t)T * k * 8);
		float *w = malloc((size_t)T * k * 4);

		for (unsigned int t = 0; t < T; t++) {
			if (groups)
				route_grouped(&seed, E, E / nodes, groups, k, score, best,
					      top, idx + (size_t)t * k);
			for (unsigned int j = 0; j < k; j++) {
				int64_t e;
				int dup;

				w[t * k + j] = 1.0f / k;
				if (groups)
					continue;
				do {	/* k distinct experts per token */
					e = (int64_t)(rng(&seed) % E);
					dup = 0;
					for (unsigned int q = 0; q < j; q++)
						dup |= idx[t * k + q] == e;
				} while (dup);
				idx[t * k + j] = e;
			}
			/* the distinct nodes of its experts, its own included */
			for (unsigned int N = 0; N < nodes; N++) {
				int hit = 0;

				for (unsigned int j = 0; j < k; j++)
					hit |= idx[t * k + j] / (E / nodes) == N;
				node_hits += hit;
			}
		}
		in[r] = (struct fdev_moe_in){ .tokens = T, .topk_idx = idx, .topk_w = w };
		if (procs && r != (unsigned int)rank && !route_only) {	/* drawn, not kept */
			free(idx);
			free(w);
			in[r].topk_idx = NULL;
		}
	}
	free(score);
	free(best);
	free(top);
	if (route_only) {
		/* checks: k distinct experts in range, in <= groups nodes */
		uint64_t bad = 0, *cnt = calloc(E, sizeof(*cnt)), lo = UINT64_MAX, hi = 0;
		unsigned int most = 0;

		for (unsigned int r = 0; r < n; r++)
			for (unsigned int t = 0; t < T; t++) {
				const int64_t *x = in[r].topk_idx + (size_t)t * k;
				unsigned int used = 0;

				for (unsigned int j = 0; j < k; j++) {
					int dup = x[j] < 0 || x[j] >= (int64_t)E;

					for (unsigned int q = 0; q < j && !dup; q++)
						dup = x[q] == x[j];
					bad += dup;
					if (!dup)
						cnt[x[j]]++;
				}
				for (unsigned int N = 0; N < nodes; N++) {
					int hit = 0;

					for (unsigned int j = 0; j < k; j++)
						hit |= x[j] / (E / nodes) == N;
					used += hit;
				}
				most = used > most ? used : most;
				bad += groups && used > groups;
			}
		for (unsigned int e = 0; e < E; e++) {
			lo = cnt[e] < lo ? cnt[e] : lo;
			hi = cnt[e] > hi ? cnt[e] : hi;
		}
		printf("{\"ranks\":%u,\"tokens\":%u,\"experts\":%u,\"topk\":%u,"
		       "\"nodes\":%u,\"groups\":%u,\"bad\":%" PRIu64
		       ",\"max_nodes_per_token\":%u,\"nodes_per_token\":%.4f,"
		       "\"expert_min\":%" PRIu64 ",\"expert_max\":%" PRIu64 "}\n",
		       n, T, E, k, nodes, groups, bad, most,
		       (double)node_hits / ((double)n * T), lo, hi);
		free(cnt);
		return bad ? 1 : 0;
	}
	mine = in[rank];
	memset(&cfg, 0, sizeof(cfg));
	cfg.num_experts = E;
	cfg.k = k;
	cfg.hidden = H;
	cfg.dtype = (uint32_t)dt;
	cfg.mode = mode;
	cfg.max_tokens = T;
	cfg.scale_groups = dt == FDEV_FP8_E4M3 ? H / 128 : 0;
	err = fdev_moe_dispatch(c, &cfg, procs ? &mine : in, NULL, &h);
	if (!err && !dispatch_only)
		err = fdev_moe_combine(c, h, NULL, NULL);
	if (err) {
		fprintf(stderr, "moe_bench: %s\n", strerror(-err));
		return 1;
	}
	fdev_moe_stats(h, &st);
	if (reuse) {
		struct fdev_moe_handle *h2 = NULL;
		struct fdev_moe_stats st2;

		err = fdev_moe_dispatch(c, &cfg, procs ? &mine : in, h, &h2);
		if (err) {
			fprintf(stderr, "moe_bench: -r: %s\n", strerror(-err));
			return 1;
		}
		fdev_moe_stats(h2, &st2);
		reuse_ps = st2.dispatch_ps;
		fdev_moe_handle_free(h2);
	}
	if (procs) {
		printf("{\"rank\":%d,\"ranks\":%u,\"tokens\":%u,\"mode\":\"%s\","
		       "\"dispatch_ps\":%" PRIu64 ",\"combine_ps\":%" PRIu64 "}\n",
		       rank, n, T,
		       mode == FDEV_MOE_LOW_LATENCY ? "ll" :
		       mode == FDEV_MOE_HIERARCHICAL ? "hier" :
		       mode == FDEV_MOE_MULTICAST ? "mc" : "tp",
		       st.dispatch_ps, st.combine_ps);
		fdev_moe_handle_free(h);
		fdev_comm_destroy(c);
		return 0;
	}
	if (!g)
		g = n;
	if (inter <= 0)
		inter = inj;
	{
		/*
		 * Bytes per (source, destination) rank from the layout: one
		 * record per token and destination rank (throughput) or per
		 * token and expert (low latency); the record is what
		 * libfabricdev/src/moe.c packs: x, scales, k ids and weights.
		 */
		size_t es = dt == FDEV_FP8_E4M3 ? 1 : 2;
		uint64_t rec = ((uint64_t)H * es + (dt == FDEV_FP8_E4M3 ? H / 128 * 4 : 0) + 7) / 8 * 8;
		uint64_t crow = ((uint64_t)H * 2 + 7) / 8 * 8;
		double *su = calloc(n, sizeof(double)), *so = calloc(n, sizeof(double));
		double *ru = calloc(n, sizeof(double)), *ro = calloc(n, sizeof(double));
		double dbound = 0, cbound = 0;
		/* [pass][src * n + dst]: the bytes counted, pair by pair */
		double *pm = calloc(2 * (size_t)n * n, sizeof(double));
#define PAIR(src, dst, b) (pm[(size_t)pass * n * n + (size_t)(src) * n + (dst)] += (b))

		rec = (rec + (uint64_t)k * 12 + 7) / 8 * 8;
		for (int pass = 0; pass < 2; pass++) {
			double bound = 0, cross[3][2] = { { 0 } };

			memset(su, 0, n * sizeof(double)); memset(so, 0, n * sizeof(double));
			memset(ru, 0, n * sizeof(double)); memset(ro, 0, n * sizeof(double));
			for (unsigned int r = 0; r < n; r++) {
				uint64_t *tpr = calloc(n, 8), *tpe = calloc(E, 8);
				uint8_t *tir = calloc((size_t)T * n, 1);
				struct fdev_moe_layout_out lo = { tpr, tpe, tir };

				fdev_moe_layout(in[r].topk_idx, T, k, E, n, &lo);
				if (mode == FDEV_MOE_HIERARCHICAL) {
					/* the scale-out hop, once per remote node */
					for (unsigned int N = 0; N < n / g; N++) {
						unsigned int p = N * g + r % g;
						uint64_t cnt = 0;
						double b;

						if (N == r / g)
							continue;
						for (unsigned int t = 0; t < T; t++) {
							int hit = 0;

							for (unsigned int d = N * g; d < (N + 1) * g; d++)
								hit |= tir[(size_t)t * n + d];
							cnt += hit;
						}
						b = (double)cnt * (pass ? crow : rec);
						PAIR(pass ? p : r, pass ? r : p, b);
						*(pass ? &so[p] : &so[r]) += b;
						*(pass ? &ro[r] : &ro[p]) += b;
					}
				}
				if (mode == FDEV_MOE_MULTICAST && !pass) {
					/* once out of r, into every other rank */
					uint64_t cnt = 0;

					for (unsigned int t = 0; t < T; t++) {
						int hit = 0;

						for (unsigned int d = 0; d < n; d++)
							hit |= d != r && tir[(size_t)t * n + d];
						cnt += hit;
					}
					for (unsigned int d = 0; d < n; d++) {
						double b = (double)cnt * rec;

						if (d == r)
							continue;
						if (d / g == r / g) {
							su[r] = (double)cnt * rec;
							ru[d] += b;
						} else {
							so[r] = (double)cnt * rec;
							ro[d] += b;
						}
					}
					free(tpr);
					free(tpe);
					free(tir);
					continue;
				}
				for (unsigned int d = 0; d < n; d++) {
					uint64_t cnt = 0;
					double b;

					if (mode == FDEV_MOE_LOW_LATENCY)
						for (unsigned int e = d * (E / n); e < (d + 1) * (E / n); e++)
							cnt += tpe[e];
					else
						cnt = tpr[d];
					b = (double)cnt * (pass ? crow : rec);
					if (d == r)
						continue;
					torus_cross(cross, torus, nd_torus, pass ? d : r, pass ? r : d, b);
					if (mode == FDEV_MOE_HIERARCHICAL && d / g != r / g) {
						/* the peer's forwarding over scale-up */
						unsigned int p = (d / g) * g + r % g;

						if (p != d) {
							PAIR(pass ? d : p, pass ? p : d, b);
							*(pass ? &su[d] : &su[p]) += b;
							*(pass ? &ru[p] : &ru[d]) += b;
						}
						continue;
					}
					/* combine flows back: d -> r */
					PAIR(pass ? d : r, pass ? r : d, b);
					if (d / g == r / g) {
						*(pass ? &su[d] : &su[r]) += b;
						*(pass ? &ru[r] : &ru[d]) += b;
					} else {
						*(pass ? &so[d] : &so[r]) += b;
						*(pass ? &ro[r] : &ro[d]) += b;
					}
				}
				free(tpr);
				free(tpe);
				free(tir);
			}
			for (unsigned int i = 0; i < nd_torus && (mode == FDEV_MOE_THROUGHPUT ||
							      mode == FDEV_MOE_LOW_LATENCY); i++) {
				double links = 2.0 * n / torus[i];

				for (int way = 0; way < 2; way++) {
					double t = cross[i][way] / (links * torus_bw * 1e9);

					bound = t > bound ? t : bound;
				}
			}
			for (unsigned int r = 0; r < n; r++) {
				double t[4] = { su[r] / (inj * 1e9), ru[r] / (inj * 1e9),
						so[r] / (inter * 1e9), ro[r] / (inter * 1e9) };

				for (int i = 0; i < 4; i++)
					bound = t[i] > bound ? t[i] : bound;
			}
			*(pass ? &cbound : &dbound) = bound;
			for (unsigned int r = 0; r < n; r++)
				rdma[pass] += so[r] / n;
		}
		if (inj > 0)
			fprintf(stderr, "# bound: dispatch %.3f us, combine %.3f us\n",
				dbound * 1e6, cbound * 1e6);
#undef PAIR
		if (mfile && mode != FDEV_MOE_MULTICAST) {
			FILE *f = fopen(mfile, "w");

			if (!f) {
				perror(mfile);
				return 1;
			}
			for (int pass = 0; pass < 2; pass++) {
				fprintf(f, "%s\"%s\": [", pass ? ", " : "{",
					pass ? "combine" : "dispatch");
				for (unsigned int r = 0; r < n; r++)
					for (unsigned int d = 0; d < n; d++)
						fprintf(f, "%s%.0f", !d ? (r ? "], [" : "[") : ", ",
							pm[(size_t)pass * n * n + (size_t)r * n + d]);
				fprintf(f, "]]");
			}
			fprintf(f, "}\n");
			if (fclose(f)) {
				perror(mfile);
				return 1;
			}
		}
		free(pm);
		st.reserved[0] = (uint64_t)(dbound * 1e12);
		st.reserved[1] = (uint64_t)(cbound * 1e12);
		free(su); free(so); free(ru); free(ro);
	}
	{
		double dsec = st.dispatch_ps / 1e12, csec = st.combine_ps / 1e12;
		double dper = (double)st.dispatch_bytes / n, cper = (double)st.combine_bytes / n;

		printf("{\"ranks\":%u,\"tokens\":%u,\"hidden\":%u,\"experts\":%u,\"topk\":%u,"
		       "\"mode\":\"%s\",\"dtype\":\"%s\",\"dispatch_ps\":%" PRIu64
		       ",\"combine_ps\":%" PRIu64 ",\"dispatch_bytes_per_rank\":%.0f,"
		       "\"combine_bytes_per_rank\":%.0f,\"dispatch_gbps\":%.2f,"
		       "\"combine_gbps\":%.2f",
		       n, T, H, E, k,
		       mode == FDEV_MOE_LOW_LATENCY ? "ll" :
		       mode == FDEV_MOE_HIERARCHICAL ? "hier" :
		       mode == FDEV_MOE_MULTICAST ? "mc" : "tp",
		       dt == FDEV_FP8_E4M3 ? "fp8" : "bf16", st.dispatch_ps,
		       st.combine_ps, dper, cper, dper / dsec / 1e9,
		       csec > 0 ? cper / csec / 1e9 : 0);
		if (inj > 0)
			printf(",\"dispatch_bound_ps\":%" PRIu64 ",\"combine_bound_ps\":%" PRIu64
			       ",\"dispatch_vs_bound\":%.3f,\"combine_vs_bound\":%.3f",
			       st.reserved[0], st.reserved[1],
			       st.reserved[0] / 1e12 / dsec,
			       csec > 0 ? st.reserved[1] / 1e12 / csec : 0);
		if (reuse)
			printf(",\"dispatch_reuse_ps\":%" PRIu64, reuse_ps);
		if (reuse && inj > 0)
			printf(",\"dispatch_reuse_vs_bound\":%.3f",
			       reuse_ps ? st.reserved[0] / (double)reuse_ps : 0);
		/* Over several nodes: scale-out bytes per rank over the time. */
		if (g < n)
			printf(",\"dispatch_rdma_gbps\":%.2f,\"combine_rdma_gbps\":%.2f",
			       rdma[0] / dsec / 1e9,
			       csec > 0 ? rdma[1] / csec / 1e9 : 0);
		if (g < n) {
			/* DeepEP's count: (token, node) pairs x its bytes */
			double pairs = (double)node_hits / n;
			double dbytes = dt == FDEV_FP8_E4M3 ? H + H / 128 * 4.0 : H * 2.0;

			printf(",\"nodes_per_token\":%.4f,\"dispatch_deepep_gbps\":%.2f,"
			       "\"combine_deepep_gbps\":%.2f",
			       pairs / T, pairs * dbytes / dsec / 1e9,
			       csec > 0 ? pairs * H * 2.0 / csec / 1e9 : 0);
		}
		if (groups)
			printf(",\"groups\":%u", groups);
		printf("}\n");
	}
	fdev_moe_handle_free(h);
	fdev_comm_destroy(c);
	return 0;
}
