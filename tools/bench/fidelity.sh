#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The fidelity table: DeepEP's published H800 bandwidths next to the
# emulated ones, on h800-pod (ideal links) and h800-pod-cal (links
# calibrated on two of those rows). Timing only, one process driving
# every rank (moe_bench). Run it in the test VM:
#
#	tools/vm/run -k 6.12 -t 3600 -- tools/bench/fidelity.sh \
#		[-j FILE] [-p PRESETS] [-r RANKS] [-T BIG_TOKENS] [-F PRESET] [TOKENS [SEGMENT]]
#
# The published rows are DeepEP's "Normal kernels with NVLink and RDMA
# forwarding" table (deepseek-ai/DeepEP, docs/legacy.md; the V1 README
# before it): H800, ~160 GB/s NVLink, one CX7 400 Gb/s (~50 GB/s) RDMA
# NIC per GPU, 4096 tokens per batch, hidden 7168, top-8 experts, FP8
# dispatch and BF16 combine. Its "bottleneck bandwidth" is NVLink at EP8
# (intranode) and RDMA beyond (internode kernels: a token crosses RDMA
# once per remote node, then NVLink, which is moe_bench's hierarchical
# mode). The emulated figure is the same: the busiest rank port's bytes
# over the emulated time, moe_bench's ratio to its bound times that
# port's nominal bandwidth (160 GB/s NVLink at EP8, 50 GB/s NIC beyond).
# The NIC is the busiest port of the hierarchical rows from EP32 on; at
# EP16 NVLink is, so that row's figure is not the NIC's rate (moe_bench's
# dispatch_rdma_gbps is; docs/TIMING.md, "Fidelity").
# Dispatch rows run -d fp8, combine rows -d bf16, 256 experts, uniform
# random top-8 routing (DeepEP's top-4 groups are not modelled).
#
# EP 8, 16 and 32 run on the presets (nodes of 8; 4 nodes); EP 64 on the
# preset given 8 nodes. PRESETS (default h800-pod,h800-pod-cal) and
# RANKS (default 8,16,32,64), comma-separated, pick rows; each run's
# JSON lines can be joined and given to the table alone with -j FILE
# (no runs, no VM needed). TOKENS per rank default 4096, DeepEP's;
# BIG_TOKENS (default TOKENS) replaces it at EP64, whose runs take
# longest in the VM, and the table says when it did. SEGMENT (default 64 KiB, as moe_bench.sh) is
# the fabric's segment size.
#
# The fit: h800-pod-cal's NVLink efficiency is EP8 dispatch's published
# figure over the ideal emulated one, its NIC efficiency EP16
# dispatch's; the script prints what those ratios come to now, so that
# a change elsewhere shows up as a preset out of date. Every other row
# is held out: "err" is calibrated over published, minus 1.

. "$(dirname "$0")/lib.sh"
bench=$top/build/bin/moe_bench
RANKS=8,16,32,64
PRESETS=h800-pod,h800-pod-cal
BIG=
JSON=
FIT=
bench_opts "j=JSON p=PRESETS r=RANKS T=BIG F=FIT" \
	"fidelity.sh [-j FILE] [-p PRESETS] [-r RANKS] [-T BIG_TOKENS] [-F PRESET] [TOKENS [SEGMENT]]" "$@"
bench_tokens "$@"
out=$(mktemp)
dir=$(mktemp -d)
trap 'rm -rf "$out" "$out.err" "$dir"' EXIT

# -F PRESET: fit PRESET's two efficiencies by solving, not by a ratio.
# The emulated figure is not proportional to a link's efficiency where
# that link is not the only thing the phase waits for (at EP16 the
# hierarchical dispatch pipelines NVLink forwarding with the NIC), so
# "published over ideal" does not land on the published figure. Here
# each is bisected, in permille, on the emulator itself: the scale-up
# (NVLink) efficiency on EP8's dispatch first (no NIC in it), then the
# scale-out (NIC) one on EP16's with the first fixed. Prints the
# smallest efficiency whose figure reaches the published one, and the
# figures on either side.
if [ -n "$FIT" ]; then
	"$icfabd" --dump --yaml --preset "$FIT" > "$dir/fit.yaml" || exit 1
	grep -q "efficiency:" "$dir/fit.yaml" || {
		echo "fidelity: $FIT has no efficiency to fit" >&2; exit 1; }
	# figure SCALE_UP SCALE_OUT N MODE PORT: EP N's FP8 dispatch GB/s
	figure() {
		awk -v up="$1" -v so="$2" '
			/^ *scale_up:/ { k = up } /^ *scale_out:/ { k = so }
			/efficiency: [0-9.]*%/ { sub(/efficiency: [0-9.]*%/, "efficiency: " k / 10 "%") }
			{ print }' "$dir/fit.yaml" |
			sed "s/^    nodes: 4\$/    nodes: $(( $3 > 32 ? $3 / 8 : 4 ))/" > "$dir/try.yaml"
		"$icfabd" --apply "$dir/try.yaml" > /dev/null || exit 1
		"$icfabctl" fabric set 0 segment-size "$SEG" > /dev/null || exit 1
		"$bench" -n "$3" -g 8 -b 160 -B 50 -t "$T" -H 7168 -e 256 -k 8 \
			-m "$4" -d fp8 2> "$out.err" |
			sed 's/.*"dispatch_ps":\([0-9]*\).*"dispatch_bound_ps":\([0-9]*\).*/\2 \1/' |
			awk -v port="$5" '{ printf "%.2f\n", $1 / $2 * port }'
	}
	# bisect WHICH PUB N MODE PORT: sets $e (permille), the efficiency
	# whose figure is nearest the published one
	bisect() {
		lo=500 hi=1000 flo=0 fhi=
		while [ $((hi - lo)) -gt 1 ]; do
			mid=$(((lo + hi) / 2))
			if [ "$1" = up ]; then f=$(figure $mid $so "$3" "$4" "$5")
			else f=$(figure $up $mid "$3" "$4" "$5"); fi
			[ -n "$f" ] || { echo "moe_bench failed: $(cat "$out.err")" >&2; exit 1; }
			echo "  $1 $mid permille: EP$3 dispatch $f GB/s (published $2)"
			if awk -v f="$f" -v p="$2" 'BEGIN { exit !(f >= p) }'; then
				hi=$mid fhi=$f
			else
				lo=$mid flo=$f
			fi
		done
		e=$hi
		[ -n "$fhi" ] ||
			echo "  $1: below the published figure even at 100%"
		[ -n "$fhi" ] && awk -v a="$flo" -v b="$fhi" -v p="$2" \
			'BEGIN { exit !(p - a < b - p) }' && e=$lo
	}
	so=1000
	bisect up 153 8 tp 160
	up=$e
	bisect out 43 16 hier 50
	echo "fit: scale_up (NVLink) efficiency $((up / 10)).$((up % 10))%," \
		"scale_out (NIC) efficiency $((e / 10)).$((e % 10))%"
	exit 0
fi

# apply PRESET NODES: the preset, or its file given NODES nodes of 8.
apply() {
	if [ "$2" = 4 ]; then
		"$icfabd" --apply --preset "$1" > /dev/null || exit 1
	else
		"$icfabd" --dump --yaml --preset "$1" |
			sed "s/^    nodes: 4\$/    nodes: $2/" > "$dir/$1-$2.yaml"
		grep -q "^    nodes: $2\$" "$dir/$1-$2.yaml" || {
			echo "fidelity: $1 has no 'nodes: 4' line to change" >&2
			exit 1; }
		"$icfabd" --apply "$dir/$1-$2.yaml" > /dev/null || exit 1
	fi
	"$icfabctl" fabric set 0 segment-size "$SEG" > /dev/null || exit 1
}

[ -n "$JSON" ] && { cp "$JSON" "$out" || exit 1; PRESETS=; }
for preset in $(echo "$PRESETS" | tr , ' '); do
	for n in $(echo "$RANKS" | tr , ' '); do
		nodes=$(( n > 32 ? n / 8 : 4 ))
		mode=hier tokens=$T
		[ "$n" = 8 ] && mode=tp
		[ "$n" -gt 32 ] && tokens=$BIG
		apply "$preset" "$nodes"
		for dt in fp8 bf16; do
			r=$("$bench" -n "$n" -g 8 -b 160 -B 50 -t "$tokens" -H 7168 \
				-e 256 -k 8 -m $mode -d $dt 2>"$out.err") || {
				echo "moe_bench failed: $preset EP$n $dt: $(grep -v '^#' "$out.err")" >&2
				exit 1; }
			echo "{\"preset\":\"$preset\",$(echo "$r" | cut -c2-)" |
				tee -a "$out"
		done
	done
done

python3 - "$out" "$T" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
T = int(sys.argv[2])
# deepseek-ai/DeepEP, docs/legacy.md, normal kernels: GB/s.
published = {(8, "dispatch"): 153, (8, "combine"): 158,
             (16, "dispatch"): 43, (16, "combine"): 43,
             (32, "dispatch"): 58, (32, "combine"): 57,
             (64, "dispatch"): 51, (64, "combine"): 50}
fitted = {(8, "dispatch"): "NVLink efficiency",
          (16, "dispatch"): "NIC efficiency"}

def emulated(preset, n, phase):
    dt = "fp8" if phase == "dispatch" else "bf16"
    for r in rows:
        if r["preset"] == preset and r["ranks"] == n and r["dtype"] == dt:
            port = 160 if r["mode"] == "tp" else 50
            return (r[phase + "_bound_ps"] / r[phase + "_ps"] * port,
                    r[phase + "_ps"] / 1e6)
    return None, None

print("%-5s %-8s %9s %10s %8s %10s %8s  %s" % ("EP", "phase",
      "published", "ideal", "vs pub", "calibrated", "err", "row"))
held = []
for (n, phase), pub in sorted(published.items(),
                             key=lambda k: (k[0][0], k[0][1] != "dispatch")):
    ideal, _ = emulated("h800-pod", n, phase)
    cal, us = emulated("h800-pod-cal", n, phase)
    if ideal is None or cal is None:
        continue
    role = fitted.get((n, phase))
    err = cal / pub - 1
    if not role:
        held.append(abs(err))
    print("%-5d %-8s %9.1f %10.1f %8.3f %10.1f %+7.1f%%  %s" % (n, phase,
          pub, ideal, ideal / pub, cal, 100 * err,
          "fitted (" + role + ")" if role else "held out"))
    if role:
        print("      fit: %s = %.1f%% of the ideal figure" % (role,
              100.0 * pub / ideal))
for n in sorted({r["ranks"] for r in rows if r["tokens"] != T}):
    print("note: EP%d ran %d tokens per rank instead of %d (VM time budget)"
          % (n, [r for r in rows if r["ranks"] == n][0]["tokens"], T))
if held:
    print("held-out rows: %d, mean |err| %.1f%%, max %.1f%%" % (len(held),
          100 * sum(held) / len(held), 100 * max(held)))
PY
