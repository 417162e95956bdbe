#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# MoE dispatch/combine from EP 8 to EP 1024, timing only, one process
# driving every rank (moe_bench), on the 1024-accelerator UALink pod and
# the first 1024 chips of the TPU v4 pod. Run it in the test VM:
#
#	tools/vm/run -k 6.12 -t 3600 -- tools/bench/ep_table.sh \
#		[-p PRESETS] [-m MODES] [-r RANKS] [TOKENS [SEGMENT]]
#
# PRESETS (default ualink-pod,tpu-v4-pod; h800-pod too), MODES (default
# tp,ll,hier; hier with nodes of 8), RANKS (default
# 8,16,32,64,128,256,512,1024), all comma-separated. h800-pod runs every
# mode with nodes of 8 (160 GB/s NVLink, a 50 GB/s NIC per GPU: -g 8 -b
# 160 -B 50), given EP/8 nodes when EP is above 32 (64 at most: the
# NICs' one switch), as fidelity.sh does. TOKENS per rank (default 128), H = 7168, top-8 of
# max(256, EP) experts. The fabric's segment size is set to SEGMENT
# (default 64 KiB).
#
# One row per run: emulated dispatch and combine times; each against the
# bound moe_bench computes (the busiest rank port: -b, 100 GB/s for a
# UALink port, 300 GB/s for a TPU v4 chip's six 50 GB/s links, on
# h800-pod the busier of a GPU's NVLink and NIC ports; the
# torus's bisection is not counted, so on tpu-v4-pod the ratio can only
# be lower than against the true bound); the wall time of the whole run
# (both phases, plan building included); and the peak of the kernel's
# slab memory (Slab in /proc/meminfo, sampled every 100 ms) above what it
# was before the run.
#
# mc (multicast) needs circuits: for it the preset is applied again with
# MC_COLORS colour-table entries per switch (default 64, the module's
# most; the presets have none) and icfabd serves circuits on a socket in
# a temporary directory for the run. On tpu-v4-pod (no switches) every
# multicast is refused, and the row says why.
#
# MOE_BENCH names another moe_bench binary (one built from an earlier
# tree, for before/after figures in one run); FDEV_HIER_CHUNKS reaches
# it (docs/LIBFABRICDEV.md, "Pipelined hierarchical mode").

. "$(dirname "$0")/lib.sh"
bench=${MOE_BENCH:-$top/build/bin/moe_bench}
PRESETS=ualink-pod,tpu-v4-pod
MODES=tp,ll,hier
MC_COLORS=${MC_COLORS:-64}
RANKS=8,16,32,64,128,256,512,1024
while getopts p:m:r: opt; do
	case $opt in
	p) PRESETS=$OPTARG ;;
	m) MODES=$OPTARG ;;
	r) RANKS=$OPTARG ;;
	*) echo "usage: ep_table.sh [-p PRESETS] [-m MODES] [-r RANKS] [TOKENS [SEGMENT]]" >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
T=${1:-128}
SEG=${2:-65536}
out=$(mktemp)
smp=$(mktemp)
dir=$(mktemp -d)
spid=
dpid=
bench_segment_keep
trap 'bench_segment_restore; [ -n "$spid" ] && kill "$spid" 2>/dev/null; [ -n "$dpid" ] && kill "$dpid" 2>/dev/null; rm -rf "$out" "$out.err" "$smp" "$dir"' EXIT

# apply PRESET RANKS: the preset; h800-pod given RANKS/8 nodes past 32.
apply() {
	if [ "$1" = h800-pod ] && [ "$2" -gt 32 ]; then
		"$icfabd" --dump --yaml --preset "$1" |
			sed "s/^    nodes: 4\$/    nodes: $(($2 / 8))/" > "$dir/$1.yaml"
		"$icfabd" --apply "$dir/$1.yaml" > /dev/null || exit 1
	else
		"$icfabd" --apply --preset "$1" > /dev/null || exit 1
	fi
	"$icfabctl" fabric set 0 segment-size "$SEG" > /dev/null || exit 1
}

# serve PRESET: the preset with MC_COLORS colours per switch applied, and
# icfabd serving its circuits at $dir/icfabd.sock (ICFABD_SOCKET).
serve() {
	"$icfabd" --dump --yaml --preset "$1" |
		sed "/^defaults:/a\\  switch: {colors: $MC_COLORS}" > "$dir/$1-mc.yaml"
	"$icfabd" --apply "$dir/$1-mc.yaml" > /dev/null || exit 1
	"$icfabctl" fabric set 0 segment-size "$SEG" > /dev/null || exit 1
	rm -f "$dir/icfabd.sock"
	"$icfabd" --foreground --config "$dir/$1-mc.yaml" \
		--socket "$dir/icfabd.sock" > "$dir/icfabd.log" 2>&1 &
	dpid=$!
	i=0
	until grep -q serving "$dir/icfabd.log"; do
		i=$((i + 1))
		if [ $i -gt 600 ]; then
			echo "icfabd did not serve $1: $(cat "$dir/icfabd.log")" >&2
			exit 1
		fi
		sleep 0.1
	done
	export ICFABD_SOCKET="$dir/icfabd.sock"
}

unserve() {
	kill "$dpid"
	wait "$dpid" 2> /dev/null
	dpid=
	unset ICFABD_SOCKET
}

rc=0
for preset in $(echo "$PRESETS" | tr , ' '); do
	case $preset in
	tpu-v4-pod) bw=300 ;;
	*) bw=100 ;;
	esac
	for n in $(echo "$RANKS" | tr , ' '); do
		e=$((n > 256 ? n : 256))
		apply "$preset" "$n"
		for mode in $(echo "$MODES" | tr , ' '); do
			g=
			[ "$mode" = hier ] && g="-g 8 -B $bw"
			[ "$preset" = h800-pod ] && bw=160 g="-g 8 -B 50"
			[ "$mode" = mc ] && serve "$preset"
			base=$(slab_kb)
			echo "$base" > "$smp"
			(while :; do slab_kb >> "$smp"; sleep 0.1; done) &
			spid=$!
			t0=$(date +%s%N)
			r=$("$bench" -n "$n" -t "$T" -H 7168 -e "$e" -k 8 -m "$mode" \
				-b "$bw" $g 2> "$out.err")
			st=$?
			t1=$(date +%s%N)
			kill "$spid"
			wait "$spid" 2> /dev/null
			spid=
			[ "$mode" = mc ] && unserve
			if [ $st != 0 ]; then
				echo "moe_bench failed: $preset EP$n $mode: $(grep -v '^#' "$out.err")" >&2
				rc=1
				continue
			fi
			peak=$(sort -n "$smp" | tail -1)
			echo "{\"preset\":\"$preset\",\"wall_ms\":$(((t1 - t0) / 1000000)),\"slab_peak_kb\":$((peak - base)),$(echo "$r" | cut -c2-)" |
				tee -a "$out"
		done
	done
done

python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("%-11s %5s %-4s %6s %12s %12s %8s %8s %9s %9s" % ("preset", "EP", "mode",
      "tokens", "dispatch us", "combine us", "d/bound", "c/bound", "wall s", "slab MiB"))
for r in rows:
    print("%-11s %5d %-4s %6d %12.1f %12.1f %8.3f %8.3f %9.1f %9.1f" % (
        r["preset"], r["ranks"], r["mode"], r["tokens"], r["dispatch_ps"] / 1e6,
        r["combine_ps"] / 1e6, r["dispatch_bound_ps"] / r["dispatch_ps"],
        r["combine_bound_ps"] / r["combine_ps"], r["wall_ms"] / 1e3,
        r["slab_peak_kb"] / 1024))
PY
exit $rc
