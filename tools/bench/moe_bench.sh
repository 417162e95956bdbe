#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# MoE dispatch/combine on the seeds' systems, emulated, timing only: 4096
# tokens per rank, H = 7168, top-8 of 256 experts (DeepSeek-V3 shapes),
# one process driving every rank (deterministic). Run it in the test VM:
#
#	tools/vm/run -k 6.12 -t 3600 -- tools/bench/moe_bench.sh \
#		[-c CASES] [-m MODES] [-T BIG_TOKENS] [TOKENS [SEGMENT]]
#
# CASES, comma-separated (default all): h800-8, h800-16, tpu-cube,
# ualink-64. MODES, comma-separated (default tp,ll,hier): tp throughput,
# ll low latency, hier hierarchical (scale-out to the peer with the same
# local index, then scale-up; only where a case has several nodes, so
# h800-16). BIG_TOKENS (default TOKENS) replaces TOKENS for the 64-rank
# cases (tpu-cube, ualink-64), whose runs take longest in the VM; the
# table says when it did.
#
# The fabric's segment size is set to SEGMENT (default 64 KiB, instead of
# the presets' 4 KiB) so that the engine's event table holds a whole
# dispatch; at these sizes it changes the times by well under 1%.
#
# Prints one JSON line per case (see build/bin/moe_bench) and a table:
# emulated times, bandwidth per rank, and the ratio of the bottleneck
# bound to the emulated time. The bound takes each rank's scale-up and
# scale-out ports (in parallel) as the bottleneck; for the torus it also
# takes the bisection (the larger bound is used). The hierarchical rows
# also give their time against the throughput row of the same case
# ("vs tp", < 1 is faster), measured in the same run.

top=$(cd "$(dirname "$0")/../.." && pwd)
icfabd=$top/build/bin/icfabd
bench=$top/build/bin/moe_bench
icfabctl=$top/build/bin/icfabctl
CASES=h800-8,h800-16,tpu-cube,ualink-64
MODES=tp,ll,hier
BIG=
while getopts c:m:T: opt; do
	case $opt in
	c) CASES=$OPTARG ;;
	m) MODES=$OPTARG ;;
	T) BIG=$OPTARG ;;
	*) echo "usage: moe_bench.sh [-c CASES] [-m MODES] [-T BIG_TOKENS] [TOKENS [SEGMENT]]" >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
T=${1:-4096}
SEG=${2:-65536}
BIG=${BIG:-$T}
out=$(mktemp)
trap 'rm -f "$out" "$out.err"' EXIT

want() {	# want LIST ITEM
	case ",$1," in *",$2,"*) return 0 ;; esac
	return 1
}

run() {	# run NAME PRESET TOKENS MULTINODE ARGS...
	name=$1 preset=$2 tokens=$3 multi=$4
	shift 4
	want "$CASES" "$name" || return 0
	"$icfabd" --apply --preset "$preset" > /dev/null || exit 1
	"$icfabctl" fabric set 0 segment-size "$SEG" > /dev/null || exit 1
	for mode in tp ll hier; do
		want "$MODES" $mode || continue
		[ $mode = hier ] && [ "$multi" = 0 ] && continue
		r=$("$bench" -t "$tokens" -H 7168 -e 256 -k 8 -m $mode "$@" 2>"$out.err") || {
			echo "moe_bench failed: $name $mode: $(grep -v '^#' "$out.err")" >&2; continue; }
		echo "{\"case\":\"$name\",$(echo "$r" | cut -c2-)" | tee -a "$out"
	done
}

# H800: 160 GB/s NVLink, 400 Gb/s (50 GB/s) NIC per GPU, 8 per node.
run h800-8    h800-pod    "$T"   0 -n 8  -g 8 -b 160 -B 50
run h800-16   h800-pod    "$T"   1 -n 16 -g 8 -b 160 -B 50
# TPU v4 cube: 4x4x4 torus, 6 ICI links of 50 GB/s per chip.
run tpu-cube  tpu-v4-cube "$BIG" 0 -n 64 -b 300
# UALink: 64 accelerators of the pod (two leaves), 800 Gb/s (100 GB/s)
# per port.
run ualink-64 ualink-pod  "$BIG" 0 -n 64 -b 100

python3 - "$out" "$T" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
T = int(sys.argv[2])
print("%-10s %-4s %6s %12s %12s %10s %10s %8s %8s %7s" % ("case", "mode",
      "tokens", "dispatch us", "combine us", "disp GB/s", "comb GB/s",
      "d/bound", "c/bound", "vs tp"))
tp = {r["case"]: r for r in rows if r["mode"] == "tp"}
for r in rows:
    n = r["ranks"]
    d, c = r["dispatch_bound_ps"], r["combine_bound_ps"]
    if r["case"].startswith("tpu"):
        # bisection of a 4x4x4 torus: 2 x 16 links of 50 GB/s each way;
        # a quarter of all bytes cross it in each direction
        cap = 32 * 50e9
        d = max(d, r["dispatch_bytes_per_rank"] * n / 4 / cap * 1e12)
        c = max(c, r["combine_bytes_per_rank"] * n / 4 / cap * 1e12)
    vs = ""
    t = tp.get(r["case"])
    if r["mode"] == "hier" and t:
        vs = "%.3f/%.3f" % (r["dispatch_ps"] / t["dispatch_ps"],
                            r["combine_ps"] / t["combine_ps"])
    print("%-10s %-4s %6d %12.1f %12.1f %10.1f %10.1f %8.3f %8.3f %s" % (
        r["case"], r["mode"], r["tokens"], r["dispatch_ps"] / 1e6,
        r["combine_ps"] / 1e6, r["dispatch_gbps"], r["combine_gbps"],
        d / r["dispatch_ps"], c / r["combine_ps"], vs))
for name in sorted({r["case"] for r in rows if r["tokens"] != T}):
    print("note: %s ran %d tokens per rank instead of %d (VM time budget)"
          % (name, [r for r in rows if r["case"] == name][0]["tokens"], T))
PY
