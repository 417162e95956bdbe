#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# MoE dispatch/combine on the seeds' systems, emulated, timing only: 4096
# tokens per rank, H = 7168, top-8 of 256 experts (DeepSeek-V3 shapes),
# one process driving every rank (deterministic). Run it in the test VM:
#
#	tools/vm/run -k 6.12 -t 3600 -- tools/bench/moe_bench.sh [TOKENS [SEGMENT]]
#
# The fabric's segment size is set to SEGMENT (default 64 KiB, instead of
# the presets' 4 KiB) so that the engine's event table holds a whole
# dispatch; at these sizes it changes the times by well under 1%.
#
# Prints one JSON line per case (see build/bin/moe_bench) and a table:
# emulated times, bandwidth per rank, and the ratio of the bottleneck
# bound to the emulated time. The bound takes each rank's scale-up and
# scale-out ports (in parallel) as the bottleneck; for the torus it also
# takes the bisection (the larger bound is used).

top=$(cd "$(dirname "$0")/../.." && pwd)
icfabd=$top/build/bin/icfabd
bench=$top/build/bin/moe_bench
T=${1:-4096}
SEG=${2:-65536}
icfabctl=$top/build/bin/icfabctl
out=$(mktemp)
trap 'rm -f "$out" "$out.err"' EXIT

run() {	# run NAME PRESET ARGS...
	name=$1 preset=$2
	shift 2
	"$icfabd" --apply --preset "$preset" > /dev/null || exit 1
	"$icfabctl" fabric set 0 segment-size "$SEG" > /dev/null || exit 1
	for mode in tp ll; do
		r=$("$bench" -t "$T" -H 7168 -e 256 -k 8 -m $mode "$@" 2>"$out.err") || {
			echo "moe_bench failed: $name $mode: $(grep -v '^#' "$out.err")" >&2; continue; }
		echo "{\"case\":\"$name\",$(echo "$r" | cut -c2-)" | tee -a "$out"
	done
}

# H800: 160 GB/s NVLink, 400 Gb/s (50 GB/s) NIC per GPU, 8 per node.
run "h800 1 node"   h800-pod -n 8  -g 8 -b 160 -B 50
run "h800 2 nodes"  h800-pod -n 16 -g 8 -b 160 -B 50
# TPU v4 cube: 4x4x4 torus, 6 ICI links of 50 GB/s per chip.
run "tpu-v4 cube"   tpu-v4-cube -n 64 -b 300
# UALink: 64 accelerators of the pod, 800 Gb/s (100 GB/s) per port.
run "ualink 64"     ualink-pod -n 64 -b 100

python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("%-14s %-3s %12s %12s %10s %10s %8s %8s" % ("case", "mod", "dispatch us",
      "combine us", "disp GB/s", "comb GB/s", "d/bound", "c/bound"))
for r in rows:
    n = r["ranks"]
    d, c = r["dispatch_bound_ps"], r["combine_bound_ps"]
    if r["case"].startswith("tpu"):
        # bisection of a 4x4x4 torus: 2 x 16 links of 50 GB/s each way;
        # a quarter of all bytes cross it in each direction
        cap = 32 * 50e9
        d = max(d, r["dispatch_bytes_per_rank"] * n / 4 / cap * 1e12)
        c = max(c, r["combine_bytes_per_rank"] * n / 4 / cap * 1e12)
    print("%-14s %-3s %12.1f %12.1f %10.1f %10.1f %8.3f %8.3f" % (
        r["case"], r["mode"], r["dispatch_ps"] / 1e6, r["combine_ps"] / 1e6,
        r["dispatch_gbps"], r["combine_gbps"], d / r["dispatch_ps"],
        c / r["combine_ps"]))
PY
