// SPDX-License-Identifier: GPL-2.0
/*
 * Built-in presets. Each one is an ordinary topology file, so that
 * "icfabd --dump --yaml --preset NAME" prints something a user can copy
 * and edit, and so that presets exercise the same parser as user files.
 * Figures and their sources are in lib/topo/TOPOLOGY.md; values marked
 * "assumed" there are not from the seeds.
 */
#include <errno.h>
#include <string.h>

#include "topo_priv.h"

/*
 * h800-pod and its variants, from one text so that they cannot drift:
 * the fabric's NAME, then what ends each link block: SU_CAL and SO_CAL
 * (calibration lines, or ""), then SU_END and SO_END, the block's last
 * line with its closing brace.
 */
#define H800_POD(NAME, SU_CAL, SU_END, SO_CAL, SO_END)			\
	"fabric:\n"							\
	"  name: " NAME "\n"						\
	"defaults:\n"							\
	"  endpoint: {memory: 80GiB, dma_engines: 8}\n"			\
	"topology:\n"							\
	"  hierarchical:\n"						\
	"    nodes: 4\n"							\
	"    per_node: 8\n"						\
	"    name: gpu\n"							\
	"    switch_name: nvsw\n"						\
	"    radix: 64\n"							\
	"    scale_up: {bandwidth: 160GB/s, latency: 500ns, class: nvlink,\n" \
	"               switching: cut-through,\n"			\
	SU_CAL SU_END							\
	"    scale_out: {bandwidth: 400Gb/s, latency: 2us, class: nic,\n"	\
	"                switching: cut-through,\n"			\
	SO_CAL SO_END

#define H800_SU_ENERGY \
	"               energy: 5pJ/b}  # electrical SerDes, estimate\n"

/*
 * ipu-pod4 and ipu-pod4-hbm, from one text as the h800-pod variants
 * are: the fabric's NAME; ipu-pod4-hbm appends its tiers after it.
 */
#define IPU_POD4(NAME)							\
	"fabric:\n"							\
	"  name: " NAME "\n"						\
	"defaults:\n"							\
	"  endpoint: {memory: 897MiB, dma_engines: 4}\n"		\
	"topology:\n"							\
	"  exchange:\n"							\
	"    tiles: 4\n"							\
	"    name: ipu\n"							\
	"    mode: direct\n"						\
	"    links_per_pair: 3\n"						\
	"    bandwidth: 32GB/s\n"						\
	"    latency: 500ns\n"						\
	"    class: ipu\n"							\
	"    multipath: spray\n"						\
	"    energy: 5pJ/b              # electrical SerDes, estimate\n"

/*
 * The SuperMesh variants: one 4x4 chiplet mesh, fabric "supermesh-VARIANT".
 * The paper's diagnosis (../shared/seeds/specialized-chips-and-future-
 * outlook.txt, section 3.3) is that boundary chiplets, having fewer links,
 * are the collectives' bottleneck, and its remedy four disjoint trees
 * where the mesh has three: so a chiplet drives all its die-to-die links
 * at once. Its port to its router is modelled as fast as four of them
 * (an interior chiplet's, and every collective's rings or trees use at
 * most four at a time), not as one link, which would cap every chiplet
 * at one link's rate and leave nothing for extra cables to gain.
 */
#define SUPERMESH_4X4(VARIANT)						\
	"fabric:\n"							\
	"  name: supermesh-" VARIANT "\n"				\
	"defaults:\n"							\
	"  endpoint: {memory: 16GiB, dma_engines: 4}\n"			\
	"topology:\n"							\
	"  supermesh:\n"						\
	"    dims: [4, 4]\n"						\
	"    variant: " VARIANT "\n"					\
	"    name: chiplet\n"						\
	"    routers: true\n"						\
	"    bandwidth: 64GB/s\n"					\
	"    latency: 20ns\n"						\
	"    class: mesh\n"						\
	"    multipath: spray\n"					\
	"    energy: 0.5pJ/b            # die-to-die, estimate\n"		\
	"    local: {bandwidth: 256GB/s} # 4 x 64 GB/s, see above\n"

static const struct topo_preset presets[] = {
	{
		"ipu-mk2",
		"Graphcore IPU MK2: 1472 tiles on a non-blocking exchange",
		"# Graphcore Colossus MK2: 1472 tiles, 624 KiB SRAM each, every\n"
		"# tile reaches any other at ~5.5 GB/s (1472 x 5.5 = ~8 TB/s).\n"
		"fabric:\n"
		"  name: ipu-mk2\n"
		"defaults:\n"
		"  endpoint: {memory: 624KiB, dma_engines: 1}\n"
		"topology:\n"
		"  exchange:\n"
		"    tiles: 1472\n"
		"    name: tile\n"
		"    mode: crossbar\n"
		"    bandwidth: 5.5GB/s\n"
		"    latency: 50ns\n"
		"    class: ipu\n"
		"    switching: cut-through\n"
		"    energy: 0.5pJ/b            # on-chip wire, estimate\n"
	},
	{
		"ipu-pod4",
		"Graphcore IPU-POD4: 4 IPUs, IPU-Links of 32 GB/s",
		"# 4 x IPU MK2; each IPU has 10 IPU-Links of ~32 GB/s per direction\n"
		"# (320 GB/s). Here 3 cables to each of the other 3 IPUs (9 links).\n"
		IPU_POD4("ipu-pod4")
	},
	{
		"wse2",
		"Cerebras WSE-2 region: 16x16 PEs, one 5-port router each",
		"# A 16x16 region of the WSE-2 mesh: a router per PE (N, S, E, W and\n"
		"# the RAMP link to its PE), 32 bit/cycle per link at ~1.1 GHz,\n"
		"# ~1 ns per hop, 24 colors per router, 48 KiB SRAM per PE.\n"
		"fabric:\n"
		"  name: wse2\n"
		"  segment_size: 64\n"
		"defaults:\n"
		"  endpoint: {memory: 48KiB, dma_engines: 1}\n"
		"  switch: {colors: 24}\n"
		"topology:\n"
		"  mesh:\n"
		"    dims: [16, 16]\n"
		"    name: pe\n"
		"    routers: true\n"
		"    router_name: rt\n"
		"    bandwidth: 4B/cycle@1.1GHz\n"
		"    latency: 1ns\n"
		"    class: mesh\n"
		"    switching: cut-through\n"
		"    energy: 0.1pJ/b            # on-chip wire, estimate\n"
	},
	{
		"tpu-v4-cube",
		"Google TPU v4 cube: 4x4x4 3D torus over ICI",
		"# 64 TPU v4 chips, 6 ICI links each, ~50 GB/s per direction.\n"
		"fabric:\n"
		"  name: tpu-v4-cube\n"
		"defaults:\n"
		"  endpoint: {memory: 32GiB, dma_engines: 4}\n"
		"topology:\n"
		"  torus:\n"
		"    dims: [4, 4, 4]\n"
		"    name: chip\n"
		"    bandwidth: 50GB/s\n"
		"    latency: 1us\n"
		"    class: ici\n"
		"    energy: 5pJ/b              # electrical SerDes, estimate\n"
	},
	{
		"tpu-v4-pod",
		"Google TPU v4 pod: 64 cubes joined by OCS into a 16x16x16 torus",
		"# 4096 chips: 64 4x4x4 cubes whose faces are joined through optical\n"
		"# circuit switches into one 16x16x16 torus. Cables that leave a cube\n"
		"# are class ocs.\n"
		"fabric:\n"
		"  name: tpu-v4-pod\n"
		"defaults:\n"
		"  endpoint: {memory: 32GiB, dma_engines: 4}\n"
		"topology:\n"
		"  torus:\n"
		"    dims: [16, 16, 16]\n"
		"    name: chip\n"
		"    bandwidth: 50GB/s\n"
		"    latency: 1us\n"
		"    class: ici\n"
		"    energy: 5pJ/b              # electrical SerDes, estimate\n"
		"    blocks: [4, 4, 4]\n"
		"    block_link: {class: ocs, latency: 1.5us, energy: 20pJ/b}\n"
	},
	{
		"dgx-h100",
		"NVIDIA DGX H100: 8 GPUs on NVSwitch",
		"# 8 H100 GPUs, 450 GB/s per direction each into the NVSwitch fabric\n"
		"# (its 4 NVSwitch chips modelled as one non-blocking switch).\n"
		"fabric:\n"
		"  name: dgx-h100\n"
		"defaults:\n"
		"  endpoint: {memory: 80GiB, dma_engines: 8}\n"
		"topology:\n"
		"  switch:\n"
		"    endpoints: 8\n"
		"    name: gpu\n"
		"    switch_name: nvswitch\n"
		"    bandwidth: 450GB/s\n"
		"    latency: 500ns\n"
		"    class: nvlink\n"
		"    switching: cut-through\n"
		"    energy: 5pJ/b              # electrical SerDes, estimate\n"
	},
	{
		"h800-pod",
		"H800 pod: 4 nodes of 8 GPUs on NVLink, one RDMA NIC per GPU",
		"# Nodes of 8 H800s on NVSwitch at ~160 GB/s per direction per GPU,\n"
		"# plus one 400 Gb/s (~50 GB/s) RDMA NIC per GPU into the scale-out\n"
		"# network: one switch while the NICs fit on it, leaf/spine beyond.\n"
		H800_POD("h800-pod", "", H800_SU_ENERGY, "",
			 "                energy: 20pJ/b} # pluggable optics, estimate\n")
	},
	{
		"ualink-pod",
		"UALink pod: 1024 accelerators on a leaf/spine of 64-port switches",
		"# UALink 1.0: up to 1024 accelerators, 200 Gb/s lanes (x4 per port\n"
		"# here: 100 GB/s), 100 ns per cable so a path through one switch is\n"
		"# 200 ns and leaf-spine-leaf 400 ns (round trip < 1 us).\n"
		"fabric:\n"
		"  name: ualink-pod\n"
		"defaults:\n"
		"  endpoint: {memory: 192GiB, dma_engines: 8}\n"
		"topology:\n"
		"  switch:\n"
		"    endpoints: 1024\n"
		"    name: acc\n"
		"    radix: 64\n"
		"    bandwidth: 800Gb/s\n"
		"    latency: 100ns\n"
		"    class: ualink\n"
		"    switching: cut-through\n"
		"    energy: 5pJ/b              # electrical SerDes, estimate\n"
	},
	{
		"supermesh-bi",
		"SuperMesh Bi: 4x4 chiplet mesh, every boundary cable doubled",
		"# SuperMesh (MICRO'25) Bi: a parallel cable on every boundary link,\n"
		"# corners go from 2 to 4 mesh links.\n"
		SUPERMESH_4X4("bi")
	},
	{
		"supermesh-alter",
		"SuperMesh Alter: 4x4 chiplet mesh, alternate boundary cables doubled",
		"# SuperMesh (MICRO'25) Alter: extra cables on alternate boundary\n"
		"# links, so no router needs more than 5 ports.\n"
		SUPERMESH_4X4("alter")
	},
	/* Issue 21: a scale-out variant for energy, and SambaNova's RDU. */
	{
		"h800-pod-cpo",
		"h800-pod with co-packaged optics on the scale-out network",
		"# As h800-pod, but the scale-out optics are co-packaged with the\n"
		"# switch and NIC (CPO) instead of pluggable modules: the same\n"
		"# bandwidth and latency, fewer joules per bit.\n"
		H800_POD("h800-pod-cpo", "", H800_SU_ENERGY, "",
			 "                energy: 5pJ/b}  # co-packaged optics, estimate\n")
	},
	/* Issue 15: h800-pod calibrated on DeepEP's published bandwidths. */
	{
		"h800-pod-cal",
		"h800-pod with links calibrated on DeepEP's H800 bandwidths",
		"# As h800-pod, but only a share of NVLink's bandwidth carries\n"
		"# payload, fitted on DeepEP's normal-kernel table (docs/legacy.md):\n"
		"# EP8 dispatch, 153 GB/s counted as DeepEP counts (its own copies\n"
		"# included), is 153 x 7/8 = 134 GB/s on the link, 83.7% of 160.\n"
		"# The NIC carries its 50 GB/s. TOPOLOGY.md and docs/TIMING.md give\n"
		"# the fit and the error on the other rows (tools/bench/fidelity.sh).\n"
		H800_POD("h800-pod-cal",
			 "               efficiency: 83.7%,\n", H800_SU_ENERGY,
			 "                efficiency: 100%,\n",
			 "                energy: 20pJ/b} # pluggable optics, estimate\n")
	},
	{
		"sn40l",
		"SambaNova SN40L RDU: 1040 PCUs and 1040 PMUs on the RDN 2D mesh",
		"# One SN40L socket: 1040 pattern compute units (PCUs) and 1040\n"
		"# pattern memory units (PMUs) on the packet-switched RDN mesh, here\n"
		"# one 52x40 mesh of units that forward (the checkerboard: PCU where\n"
		"# x + y is even, PMU where odd). 520 MiB of SRAM spread as 256 KiB\n"
		"# per unit. Link bandwidth and latency are assumed (TOPOLOGY.md).\n"
		"# The three memory tiers: each unit's share of the SRAM, and the\n"
		"# socket's HBM and DDR, one port each that every unit shares.\n"
		"fabric:\n"
		"  name: sn40l\n"
		"defaults:\n"
		"  endpoint: {memory: 256KiB, dma_engines: 1}\n"
		"topology:\n"
		"  mesh:\n"
		"    dims: [52, 40]\n"
		"    name: u\n"
		"    bandwidth: 32B/cycle@1.6GHz  # assumed\n"
		"    latency: 1ns                 # assumed\n"
		"    class: mesh\n"
		"    energy: 0.1pJ/b              # on-chip wire, estimate\n"
		"tiers:\n"
		"  - {kind: sram, at: each, capacity: 256KiB,   # 520 MiB / 2080\n"
		"     bandwidth: 64B/cycle@1.6GHz, latency: 2ns,  # assumed\n"
		"     energy: 0.1pJ/b}                            # estimate\n"
		"  - {kind: hbm, at: u0_0, shared_by: all, capacity: 64GiB,\n"
		"     bandwidth: 1.6TB/s, latency: 100ns,         # assumed\n"
		"     energy: 4pJ/b}                              # estimate\n"
		"  - {kind: ddr, at: u0_0, shared_by: all, capacity: 1536GiB,\n"
		"     bandwidth: 128GB/s, latency: 150ns,  # > 1 TB/s per 8 sockets\n"
		"     energy: 15pJ/b}                              # estimate\n"
	},
	{
		"sn40l-node",
		"SambaNova SN40L node: 8 RDU sockets, each joined to every other",
		"# 8 SN40L sockets (Samba-CoE's node), each one endpoint with its\n"
		"# 64 GiB of co-packaged HBM; every pair of sockets cabled directly.\n"
		"# The socket-to-socket bandwidth and latency are assumed\n"
		"# (TOPOLOGY.md). Each socket has its three memory tiers: 520 MiB\n"
		"# of SRAM, 64 GiB of HBM and 1.5 TiB of DDR, each with its port.\n"
		"fabric:\n"
		"  name: sn40l-node\n"
		"defaults:\n"
		"  endpoint: {memory: 64GiB, dma_engines: 8}\n"
		"topology:\n"
		"  exchange:\n"
		"    tiles: 8\n"
		"    name: rdu\n"
		"    mode: direct\n"
		"    bandwidth: 50GB/s            # assumed\n"
		"    latency: 1us                 # assumed\n"
		"    class: other\n"
		"    energy: 5pJ/b                # electrical SerDes, estimate\n"
		"tiers:\n"
		"  - {kind: sram, at: each, capacity: 520MiB,\n"
		"     bandwidth: 100TB/s, latency: 2ns,           # assumed\n"
		"     energy: 0.1pJ/b}                            # estimate\n"
		"  - {kind: hbm, at: each, capacity: 64GiB,\n"
		"     bandwidth: 1.6TB/s, latency: 100ns,         # assumed\n"
		"     energy: 4pJ/b}                              # estimate\n"
		"  - {kind: ddr, at: each, capacity: 1536GiB,\n"
		"     bandwidth: 128GB/s, latency: 150ns,  # > 1 TB/s per node\n"
		"     energy: 15pJ/b}                              # estimate\n"
	},
	{
		"ipu-pod4-hbm",
		"Graphcore IPU-POD4 with HBM on every IPU, as Elk assumed",
		"# ipu-pod4 with an HBM tier on each IPU (Elk, MICRO'25, evaluates\n"
		"# preload against execution on an IPU-POD4 with off-chip HBM; the\n"
		"# HBM's figures are assumed, of an A100's order: TOPOLOGY.md).\n"
		"# The IPU's SRAM is its plain memory, as in ipu-pod4.\n"
		IPU_POD4("ipu-pod4-hbm")
		"tiers:\n"
		"  - {kind: hbm, at: each, capacity: 64GiB,\n"
		"     bandwidth: 2TB/s, latency: 100ns,           # assumed\n"
		"     energy: 4pJ/b}                              # estimate\n"
	},
};

const struct topo_preset *topo_presets(size_t *n)
{
	*n = ARRAY_SIZE(presets);
	return presets;
}

const struct topo_preset *topo_preset_find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(presets); i++)
		if (!strcmp(presets[i].name, name))
			return &presets[i];
	return NULL;
}

int topo_load_preset(const char *name, struct topo **tp, struct topo_err *err)
{
	const struct topo_preset *p = topo_preset_find(name);
	char file[64];

	if (!p) {
		snprintf(err->msg, sizeof(err->msg),
			 "no preset named '%s' (see --list-presets)", name);
		return -ENOENT;
	}
	/* diagnostics name the preset: "<preset:wse2>:12: ..." */
	snprintf(file, sizeof(file), "<preset:%s>", name);
	return topo_load_string(p->yaml, strlen(p->yaml), file, tp, err);
}
