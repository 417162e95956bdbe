// SPDX-License-Identifier: GPL-2.0
/*
 * Every preset loads, checks and routes, and carries the figures that
 * lib/topo/TOPOLOGY.md quotes for it.
 */
#include "topo_test.h"

#define GB	1000000000ULL
#define NS	1000ULL

static struct topo *preset(const char *name, double *ms)
{
	struct topo_err err = { "" };
	struct icfab_limits lim;
	struct topo *t = NULL;
	double t0 = now_ms();

	topo_default_limits(&lim);
	if (topo_load_preset(name, &t, &err) || topo_check(t, &lim, &err) ||
	    topo_route(t, &err) || topo_check(t, &lim, &err)) {
		diag("%s: %s", name, err.msg);
		topo_free(t);
		t = NULL;
	}
	*ms = now_ms() - t0;
	return t;
}

/* All links of a class carry this bandwidth and latency (0: any). */
static unsigned int links_of(const struct topo *t, uint32_t class,
			     uint64_t bw, uint64_t lat_ps)
{
	unsigned int n = 0;
	uint32_t i;

	for (i = 0; i < t->nr_links; i++) {
		const struct topo_link *l = &t->links[i];

		if (l->class == class && (!bw || l->bandwidth == bw) &&
		    (!lat_ps || l->latency_ps == lat_ps))
			n++;
	}
	return n;
}

/* Links of a class that cost fj_per_bit and no static power. */
static unsigned int energy_of(const struct topo *t, uint32_t class,
			      uint32_t fj_per_bit)
{
	unsigned int n = 0;
	uint32_t i;

	for (i = 0; i < t->nr_links; i++)
		n += t->links[i].class == class &&
		     t->links[i].fj_per_bit == fj_per_bit &&
		     !t->links[i].static_mw;
	return n;
}

static uint32_t max_hops(const struct topo *t)
{
	uint32_t s, d, max = 0;

	for (s = 0; s < t->nr_nodes; s++)
		for (d = 0; d < t->nr_nodes; d++)
			if (s != d && t->nodes[s].kind == ICFAB_NODE_ENDPOINT &&
			    t->nodes[d].kind == ICFAB_NODE_ENDPOINT) {
				int h = topo_route_hops(t, s, d);

				if (h < 0)
					return UINT32_MAX;
				if ((uint32_t)h > max)
					max = h;
			}
	return max;
}

static void check_all_load(void)
{
	const struct topo_preset *p;
	size_t n, i;
	double ms;

	p = topo_presets(&n);
	ok(n == 15, "15 presets");
	for (i = 0; i < n; i++) {
		struct topo *t = preset(p[i].name, &ms);
		struct topo_mem m;

		if (t)
			topo_mem(t, &m);
		ok(t != NULL, "preset %s loads, checks, routes (%u nodes, %u links, tables %.1f MiB, %.0f ms under ASan)",
		   p[i].name, t ? t->nr_nodes : 0, t ? t->nr_links : 0,
		   t ? m.route_bytes / 1048576.0 : 0, ms);
		topo_free(t);
	}
}

static void check_figures(void)
{
	struct topo *t;
	uint32_t i, bad;
	double ms;

	t = preset("ipu-mk2", &ms);
	ok(t && t->nr_endpoints == 1472 && t->nr_switches == 1 &&
	   links_of(t, ICFAB_LINK_CLASS_IPU, 5500000000ULL, 50 * NS) == 2944 &&
	   t->nodes[0].mem_bytes == 624 * 1024,
	   "ipu-mk2: 1472 tiles, 624 KiB each, 5.5 GB/s per tile, 50 ns");
	ok(t && 1472 * 5500000000ULL >= 8000 * GB && 1472 * 5500000000ULL < 8200 * GB,
	   "ipu-mk2: aggregate 1472 x 5.5 GB/s = 8.1 TB/s (~8 TB/s)");
	topo_free(t);

	t = preset("ipu-pod4", &ms);
	ok(t && t->nr_endpoints == 4 && t->nodes[0].nr_ports == 9 &&
	   links_of(t, ICFAB_LINK_CLASS_IPU, 32 * GB, 0) == 36 && max_hops(t) == 1,
	   "ipu-pod4: 4 IPUs, 9 IPU-Links of 32 GB/s each, all 1 hop");
	topo_free(t);

	t = preset("wse2", &ms);
	for (bad = 0, i = 0; t && i < t->nr_nodes; i++)
		bad += t->nodes[i].kind == ICFAB_NODE_SWITCH &&
		       (t->nodes[i].colors != 24 || t->nodes[i].nr_ports > 5);
	ok(t && t->nr_endpoints == 256 && t->nr_switches == 256 && !bad &&
	   links_of(t, ICFAB_LINK_CLASS_MESH, 4400000000ULL, 1 * NS) == t->nr_links,
	   "wse2: 16x16 PEs, 5-port routers with 24 colors, 4.4 GB/s (32 bit x 1.1 GHz), 1 ns");
	ok(t && max_hops(t) == 30 + 2, "wse2: corner to corner is 30 mesh hops + 2");
	topo_free(t);

	t = preset("tpu-v4-cube", &ms);
	ok(t && t->nr_endpoints == 64 && t->nr_links == 384 &&
	   links_of(t, ICFAB_LINK_CLASS_ICI, 50 * GB, 1000 * NS) == 384 &&
	   t->nodes[0].nr_ports == 6 && max_hops(t) == 6,
	   "tpu-v4-cube: 64 chips, 6 ICI links of 50 GB/s each, diameter 6");
	topo_free(t);

	t = preset("tpu-v4-pod", &ms);
	ok(t && t->nr_endpoints == 4096 && t->nr_links == 24576 &&
	   links_of(t, ICFAB_LINK_CLASS_OCS, 50 * GB, 1500 * NS) == 6144 &&
	   links_of(t, ICFAB_LINK_CLASS_ICI, 50 * GB, 1000 * NS) == 18432,
	   "tpu-v4-pod: 4096 chips, 24576 links, 6144 of them through OCS (%.0f ms)", ms);
	ok(t && t->routes && t->routed_with == TOPO_ROUTING_DOR &&
	   topo_route_hops(t, 0, topo_find_node(t, "chip8_8_8")) == 24,
	   "tpu-v4-pod: DOR, the farthest chip is 24 hops");
	topo_free(t);

	t = preset("dgx-h100", &ms);
	ok(t && t->nr_endpoints == 8 && t->nr_switches == 1 &&
	   links_of(t, ICFAB_LINK_CLASS_NVLINK, 450 * GB, 0) == 16 && max_hops(t) == 2,
	   "dgx-h100: 8 GPUs, 450 GB/s each way into NVSwitch, 2 hops");
	topo_free(t);

	t = preset("h800-pod", &ms);
	ok(t && t->nr_endpoints == 32 && t->nr_switches == 5 &&
	   links_of(t, ICFAB_LINK_CLASS_NVLINK, 160 * GB, 0) == 64 &&
	   links_of(t, ICFAB_LINK_CLASS_NIC, 50 * GB, 0) == 64,
	   "h800-pod: 4x8 GPUs, 160 GB/s NVLink + one 50 GB/s NIC each");
	topo_free(t);

	t = preset("ualink-pod", &ms);
	ok(t && t->nr_endpoints == 1024 && t->nr_switches == 48 &&
	   links_of(t, ICFAB_LINK_CLASS_UALINK, 100 * GB, 100 * NS) == t->nr_links,
	   "ualink-pod: 1024 accelerators, 32 leaves + 16 spines, 4x200 Gb/s ports, 100 ns (%.0f ms)",
	   ms);
	ok(t && max_hops(t) == 4, "ualink-pod: at most leaf-spine-leaf (4 links)");
	topo_free(t);

	t = preset("supermesh-bi", &ms);
	ok(t && links_of(t, ICFAB_LINK_CLASS_MESH, 0, 0) == 32 + 48 + 24 &&
	   out_links(t, topo_find_node(t, "rt0_0")) == 5,
	   "supermesh-bi: corner router has 4 mesh links + local");
	topo_free(t);

	t = preset("supermesh-alter", &ms);
	for (bad = 0, i = 0; t && i < t->nr_nodes; i++)
		bad += t->nodes[i].nr_ports > 5;
	ok(t && !bad && t->nr_links == 32 + 48 + 16,
	   "supermesh-alter: every router at most 5 ports");
	topo_free(t);
}

/* The energy figures of lib/topo/TOPOLOGY.md's "Energy" table. */
static void check_energy(void)
{
	struct topo *t;
	double ms;

	t = preset("ipu-mk2", &ms);
	ok(t && energy_of(t, ICFAB_LINK_CLASS_IPU, 500) == t->nr_links,
	   "ipu-mk2: on-chip exchange 0.5 pJ/b");
	topo_free(t);
	t = preset("wse2", &ms);
	ok(t && energy_of(t, ICFAB_LINK_CLASS_MESH, 100) == t->nr_links,
	   "wse2: on-chip mesh 0.1 pJ/b per hop");
	topo_free(t);
	t = preset("tpu-v4-pod", &ms);
	ok(t && energy_of(t, ICFAB_LINK_CLASS_ICI, 5000) == 18432 &&
	   energy_of(t, ICFAB_LINK_CLASS_OCS, 20000) == 6144,
	   "tpu-v4-pod: ICI SerDes 5 pJ/b, optical block links 20 pJ/b");
	topo_free(t);
	t = preset("h800-pod", &ms);
	ok(t && energy_of(t, ICFAB_LINK_CLASS_NVLINK, 5000) == 64 &&
	   energy_of(t, ICFAB_LINK_CLASS_NIC, 20000) == 64,
	   "h800-pod: NVLink 5 pJ/b, pluggable-optics NICs 20 pJ/b");
	topo_free(t);
	t = preset("h800-pod-cpo", &ms);
	ok(t && t->nr_endpoints == 32 && t->nr_switches == 5 &&
	   links_of(t, ICFAB_LINK_CLASS_NIC, 50 * GB, 2000 * NS) == 64 &&
	   energy_of(t, ICFAB_LINK_CLASS_NVLINK, 5000) == 64 &&
	   energy_of(t, ICFAB_LINK_CLASS_NIC, 5000) == 64,
	   "h800-pod-cpo: h800-pod's links, CPO NICs at 5 pJ/b");
	topo_free(t);
}

/* Tiers of @kind: how many, their capacity in all, and sharers in all. */
static unsigned int tiers_of(const struct topo *t, uint32_t kind,
			     uint64_t bw, uint64_t *bytes, uint64_t *sharers)
{
	unsigned int n = 0;
	uint32_t i, e;

	*bytes = *sharers = 0;
	for (i = 0; t && i < t->nr_tiers; i++) {
		const struct topo_tier *r = &t->tiers[i];

		if (r->kind != kind || r->bandwidth != bw)
			continue;
		n++;
		*bytes += r->bytes;
		for (e = 0; e < t->nr_nodes; e++)
			*sharers += topo_tier_of(t, e, kind) == r;
	}
	return n;
}

/* SambaNova SN40L: lib/topo/TOPOLOGY.md's rows, assumptions included. */
static void check_sn40l(void)
{
	uint64_t sram = 0, bytes, sharers;
	struct topo *t;
	uint32_t i;
	double ms;

	t = preset("sn40l", &ms);
	for (i = 0; t && i < t->nr_nodes; i++)
		sram += t->nodes[i].mem_bytes;
	ok(t && t->nr_endpoints == 2080 && t->nr_switches == 0 &&
	   t->nr_links == 8136 &&
	   links_of(t, ICFAB_LINK_CLASS_MESH, 51200000000ULL, 1 * NS) == 8136 &&
	   energy_of(t, ICFAB_LINK_CLASS_MESH, 100) == 8136,
	   "sn40l: 1040 PCUs + 1040 PMUs on a 52x40 mesh, 51.2 GB/s, 1 ns, 0.1 pJ/b");
	ok(t && sram == 520ULL << 20, "sn40l: 520 MiB of SRAM in all (%llu)",
	   (unsigned long long)sram);
	ok(t && t->routed_with == TOPO_ROUTING_DOR &&
	   topo_route_hops(t, 0, topo_find_node(t, "u51_39")) == 51 + 39,
	   "sn40l: DOR, corner to corner 90 hops");
	ok(t && t->nr_tiers == 2082 &&
	   tiers_of(t, ICFAB_TIER_SRAM, 102400000000ULL, &bytes, &sharers) ==
	   2080 && bytes == 520ULL << 20 && sharers == 2080,
	   "sn40l: an SRAM tier per unit, 520 MiB in all");
	ok(t && tiers_of(t, ICFAB_TIER_HBM, 1600 * GB, &bytes, &sharers) == 1 &&
	   bytes == 64ULL << 30 && sharers == 2080 &&
	   tiers_of(t, ICFAB_TIER_DDR, 128 * GB, &bytes, &sharers) == 1 &&
	   bytes == 1536ULL << 30 && sharers == 2080,
	   "sn40l: one 64 GiB HBM and one 1.5 TiB DDR port that every unit shares");
	topo_free(t);

	t = preset("sn40l-node", &ms);
	ok(t && t->nr_endpoints == 8 && t->nr_links == 56 && max_hops(t) == 1 &&
	   t->nodes[0].mem_bytes == 64ULL << 30 &&
	   links_of(t, ICFAB_LINK_CLASS_OTHER, 50 * GB, 1000 * NS) == 56 &&
	   energy_of(t, ICFAB_LINK_CLASS_OTHER, 5000) == 56,
	   "sn40l-node: 8 sockets of 64 GiB HBM, each cabled to every other");
	ok(t && t->nr_tiers == 24 &&
	   tiers_of(t, ICFAB_TIER_HBM, 1600 * GB, &bytes, &sharers) == 8 &&
	   bytes == 8 * (64ULL << 30) && sharers == 8 &&
	   tiers_of(t, ICFAB_TIER_DDR, 128 * GB, &bytes, &sharers) == 8 &&
	   bytes == 8 * (1536ULL << 30) &&
	   tiers_of(t, ICFAB_TIER_SRAM, 100000 * GB, &bytes, &sharers) == 8 &&
	   bytes == 8 * (520ULL << 20),
	   "sn40l-node: SRAM, HBM and DDR per socket; 8 DDR ports of 128 GB/s, > 1 TB/s a node");
	topo_free(t);

	t = preset("ipu-pod4-hbm", &ms);
	ok(t && t->nr_endpoints == 4 && t->nr_links == 36 &&
	   links_of(t, ICFAB_LINK_CLASS_IPU, 32 * GB, 500 * NS) == 36 &&
	   tiers_of(t, ICFAB_TIER_HBM, 2000 * GB, &bytes, &sharers) == 4 &&
	   bytes == 4 * (64ULL << 30) && sharers == 4,
	   "ipu-pod4-hbm: ipu-pod4's IPU-Links and a 64 GiB, 2 TB/s HBM per IPU");
	topo_free(t);
}

/*
 * h800-pod's variants are h800-pod's text with other figures: the same
 * fabric link by link but for NIC energy (h800-pod-cpo) and for the
 * calibration of TOPOLOGY.md's "Calibration" (h800-pod-cal).
 */
static void check_h800_variants(void)
{
	struct topo *pod, *cpo, *cal;
	unsigned int same_cpo = 0, same_cal = 0, nvl = 0, nic = 0, ideal = 0;
	double ms;
	uint32_t i;

	pod = preset("h800-pod", &ms);
	cpo = preset("h800-pod-cpo", &ms);
	cal = preset("h800-pod-cal", &ms);
	if (!pod || !cpo || !cal || pod->nr_links != cpo->nr_links ||
	    pod->nr_links != cal->nr_links) {
		ok(0, "h800-pod, -cpo and -cal load with as many links");
		goto out;
	}
	for (i = 0; i < pod->nr_links; i++) {
		const struct topo_link *a = &pod->links[i], *b = &cpo->links[i],
				       *c = &cal->links[i];
		bool alike = a->src_node == c->src_node &&
			     a->dst_node == c->dst_node &&
			     a->src_port == c->src_port &&
			     a->bandwidth == c->bandwidth &&
			     a->latency_ps == c->latency_ps &&
			     a->class == c->class &&
			     a->switching == c->switching &&
			     a->fj_per_bit == c->fj_per_bit &&
			     !c->msg_overhead_ps;

		same_cpo += a->src_node == b->src_node &&
			    a->dst_node == b->dst_node &&
			    a->bandwidth == b->bandwidth &&
			    a->latency_ps == b->latency_ps &&
			    a->switching == b->switching &&
			    (a->class == ICFAB_LINK_CLASS_NIC ||
			     a->fj_per_bit == b->fj_per_bit) &&
			    !b->eff_permille && !b->msg_overhead_ps;
		same_cal += alike;
		ideal += !a->eff_permille && !a->msg_overhead_ps;
		nvl += alike && a->class == ICFAB_LINK_CLASS_NVLINK &&
		       c->eff_permille == 837;
		nic += alike && a->class == ICFAB_LINK_CLASS_NIC &&
		       !c->eff_permille; /* 100%: stored as 0 */
	}
	ok(ideal == pod->nr_links, "h800-pod: ideal links (%u of %u)", ideal,
	   pod->nr_links);
	ok(same_cpo == pod->nr_links,
	   "h800-pod-cpo: h800-pod link by link, but for NIC energy (%u of %u)",
	   same_cpo, pod->nr_links);
	ok(same_cal == pod->nr_links && nvl == 64 && nic == 64,
	   "h800-pod-cal: h800-pod link by link, NVLink at 83.7%%, NICs at 100%% (%u, %u, %u)",
	   same_cal, nvl, nic);
out:
	topo_free(pod);
	topo_free(cpo);
	topo_free(cal);
}

int main(void)
{
	check_all_load();
	check_figures();
	check_energy();
	check_h800_variants();
	check_sn40l();
	return done();
}
