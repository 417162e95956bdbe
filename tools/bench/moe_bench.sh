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
# ualink-64, dgx-mc. MODES, comma-separated (default tp,ll,hier,mc): tp
# throughput, ll low latency, hier hierarchical (scale-out to the peer
# with the same local index, then scale-up; only where a case has several
# nodes, so h800-16), mc multicast (one copy per token over the source's
# circuit tree; only where the switches have colour tables, so dgx-mc).
#
# dgx-mc is dgx-h100 (8 GPUs on one NVSwitch) given 24 colours per switch
# (the preset has none), with icfabd serving circuits on a socket in a
# temporary directory. Its tp and mc rows also give the bytes the eight
# sources' links carried in a dispatch alone (moe_bench -x, link stats of
# icfabctl -j stats, count exchange included) and, for mc, "vs tp" is
# dispatch time and source-link bytes against the tp row.
#
# BIG_TOKENS (default TOKENS) replaces TOKENS for the 64-rank cases
# (tpu-cube, ualink-64), whose runs take longest in the VM; the table
# says when it did.
#
# The fabric's segment size is set to SEGMENT (default 64 KiB, instead of
# the presets' 4 KiB): a sixteenth of the segments takes a third of the
# wall time under TCG, and at these sizes changes the times by well under
# 1% (docs/TIMING.md, "What the segment size may change").
#
# Prints one JSON line per case (see build/bin/moe_bench) and a table:
# emulated times, bandwidth per rank, and the ratio of the bottleneck
# bound to the emulated time. The bound takes each rank's scale-up and
# scale-out ports (in parallel) as the bottleneck; for the torus it also
# takes the bisection (moe_bench -c: the bytes that cross each halving
# cut, summed pair by pair; the larger bound is used). d/route and
# c/route: against the larger of that and tools/bench/bounds.py's bound
# on the bytes the mode moves (moe_bench -M), whose terms include the
# busiest link on the fabric's own routes (the max-channel-load bound);
# not for mc. The hierarchical rows
# also give their time against the throughput row of the same case
# ("vs tp", < 1 is faster), measured in the same run.

. "$(dirname "$0")/lib.sh"
bench=$top/build/bin/moe_bench
CASES=h800-8,h800-16,tpu-cube,ualink-64,dgx-mc
MODES=tp,ll,hier,mc
BIG=
bench_opts "c=CASES m=MODES T=BIG" \
	"moe_bench.sh [-c CASES] [-m MODES] [-T BIG_TOKENS] [TOKENS [SEGMENT]]" "$@"
bench_tokens "$@"
out=$(mktemp)
dir=$(mktemp -d)
dpid=
bench_segment_keep
trap 'bench_segment_restore; [ -n "$dpid" ] && kill "$dpid" 2>/dev/null; rm -rf "$out" "$out.err" "$dir"' EXIT

want() {	# want LIST ITEM
	case ",$1," in *",$2,"*) return 0 ;; esac
	return 1
}

# Bytes on the links leaving endpoints, from icfabctl -j stats and the
# topology's JSON dump.
src_bytes() {	# src_bytes STATS_JSON TOPO_JSON
	python3 -c '
import json, sys
st, topo = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
eps = {n["id"] for n in topo["nodes"] if n["kind"] == "endpoint"}
src = {l["id"] for l in topo["links"] if l["src"] in eps}
print(sum(l["bytes"] for l in st["links"] if l["id"] in src))' "$1" "$2"
}

# bounds.py's bound on the bytes a mode moves (ports, cuts, the busiest
# link on the fabric's routes), as JSON fields, dispatch and combine.
route_bound() {	# route_bound ROUTES_JSON MATRIX_JSON RANKS
	python3 -B - "$top/tools/bench/bounds.py" "$@" <<'PY'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("bounds", sys.argv[1])
B = importlib.util.module_from_spec(spec)
spec.loader.exec_module(B)
f = B.load(sys.argv[2], int(sys.argv[4]))
m, cuts, out = json.load(open(sys.argv[3])), B.cuts_of(f), []
for ph in ("dispatch", "combine"):
    t, why = B.best(B.matrix_terms(f, m[ph], cuts))
    out.append('"%s_route_bound_ps":%d,"%s_route_bound_by":"%s",' %
               (ph, round(t * 1e12), ph, why.replace('"', "'")))
print("".join(out))
PY
}

run() {	# run NAME PRESET|FILE TOKENS MULTINODE COLOURS ARGS...
	name=$1 preset=$2 tokens=$3 multi=$4 colours=$5
	shift 5
	want "$CASES" "$name" || return 0
	if [ "$colours" = 1 ]; then
		# A topology file with colour tables, and the daemon's socket.
		# A daemon started on a file follows what the module already
		# runs, so the module runs the file first.
		"$icfabd" --apply "$preset" > /dev/null || exit 1
		icfabd_serve "$preset" "$dir" || exit 1
		"$icfabd" --dump --json "$preset" > "$dir/topo.json"
	else
		"$icfabd" --apply --preset "$preset" > /dev/null || exit 1
	fi
	"$icfabctl" fabric set 0 segment-size "$SEG" > /dev/null || exit 1
	if [ -f "$preset" ]; then
		"$icfabd" --dump --routes --json "$preset" > "$dir/routes.json"
	else
		"$icfabd" --dump --routes --json --preset "$preset" > "$dir/routes.json"
	fi || exit 1
	for mode in tp ll hier mc; do
		want "$MODES" $mode || continue
		[ $mode = hier ] && [ "$multi" = 0 ] && continue
		[ $mode = mc ] && [ "$colours" = 0 ] && continue
		m=
		[ $mode = mc ] || m="-M $dir/m.json"
		rm -f "$dir/m.json"
		# shellcheck disable=SC2086
		r=$("$bench" -t "$tokens" -H 7168 -e 256 -k 8 -m $mode $m "$@" 2>"$out.err") || {
			echo "moe_bench failed: $name $mode: $(grep -v '^#' "$out.err")" >&2; continue; }
		extra=
		if [ -f "$dir/m.json" ]; then
			extra=$(route_bound "$dir/routes.json" "$dir/m.json" "$(echo "$r" |
				sed 's/.*"ranks":\([0-9]*\).*/\1/')") || exit 1
		fi
		if [ "$colours" = 1 ]; then
			"$icfabctl" stats reset > /dev/null &&
			"$bench" -t "$tokens" -H 7168 -e 256 -k 8 -m $mode -x "$@" > /dev/null 2>&1 &&
			"$icfabctl" -j stats > "$dir/stats.json" &&
			extra="$extra\"src_link_bytes\":$(src_bytes "$dir/stats.json" "$dir/topo.json"),"
		fi
		echo "{\"case\":\"$name\",$extra$(echo "$r" | cut -c2-)" | tee -a "$out"
	done
	if [ -n "$dpid" ]; then
		kill "$dpid" && wait "$dpid"
		dpid=
		unset ICFABD_SOCKET
	fi
}

# H800: 160 GB/s NVLink, 400 Gb/s (50 GB/s) NIC per GPU, 8 per node.
run h800-8    h800-pod    "$T"   0 0 -n 8  -g 8 -b 160 -B 50
run h800-16   h800-pod    "$T"   1 0 -n 16 -g 8 -b 160 -B 50
# TPU v4 cube: 4x4x4 torus, 6 ICI links of 50 GB/s per chip.
run tpu-cube  tpu-v4-cube "$BIG" 0 0 -n 64 -b 300 -c 4x4x4:50
# UALink: 64 accelerators of the pod (two leaves), 800 Gb/s (100 GB/s)
# per port.
run ualink-64 ualink-pod  "$BIG" 0 0 -n 64 -b 100
# DGX H100 with colour tables: multicast next to throughput.
if want "$CASES" dgx-mc; then
	"$icfabd" --dump --yaml --preset dgx-h100 |
		sed '/^defaults:/a\  switch: {colors: 24}' > "$dir/dgx-colors.yaml"
	run dgx-mc "$dir/dgx-colors.yaml" "$T" 0 1 -n 8 -b 450
fi

python3 - "$out" "$T" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
T = int(sys.argv[2])
print("%-10s %-4s %6s %12s %12s %10s %10s %8s %8s %8s %8s %10s %7s" % ("case",
      "mode", "tokens", "dispatch us", "combine us", "disp GB/s", "comb GB/s",
      "d/bound", "c/bound", "d/route", "c/route", "src MB", "vs tp"))
tp = {r["case"]: r for r in rows if r["mode"] == "tp"}
for r in rows:
    d, c = r["dispatch_bound_ps"], r["combine_bound_ps"]
    vs = ""
    t = tp.get(r["case"])
    if r["mode"] == "hier" and t:
        vs = "%.3f/%.3f" % (r["dispatch_ps"] / t["dispatch_ps"],
                            r["combine_ps"] / t["combine_ps"])
    if r["mode"] == "mc" and t and t.get("src_link_bytes"):
        vs = "%.3f/%.3f" % (r["dispatch_ps"] / t["dispatch_ps"],
                            r["src_link_bytes"] / t["src_link_bytes"])
    src = "%10.1f" % (r["src_link_bytes"] / 1e6) if "src_link_bytes" in r else "%10s" % "-"
    rt = ["%8s" % "-"] * 2
    if "dispatch_route_bound_ps" in r:
        rt = ["%8.3f" % (max(r[ph + "_bound_ps"], r[ph + "_route_bound_ps"]) /
                         r[ph + "_ps"]) for ph in ("dispatch", "combine")]
    print("%-10s %-4s %6d %12.1f %12.1f %10.1f %10.1f %8.3f %8.3f %s %s %s %s" % (
        r["case"], r["mode"], r["tokens"], r["dispatch_ps"] / 1e6,
        r["combine_ps"] / 1e6, r["dispatch_gbps"], r["combine_gbps"],
        d / r["dispatch_ps"], c / r["combine_ps"], rt[0], rt[1], src, vs))
print("vs tp: hier dispatch/combine time; mc dispatch time/source-link bytes")
for name in sorted({r["case"] for r in rows if r["tokens"] != T}):
    print("note: %s ran %d tokens per rank instead of %d (VM time budget)"
          % (name, [r for r in rows if r["case"] == name][0]["tokens"], T))
PY
