#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# bound_table.sh: every collective x every algorithm, and every MoE mode,
# on every preset icfabd ships, emulated time against its lower bound,
# timing only, one process driving every rank (coll_bench, moe_bench).
# Run it in the test VM:
#
#	tools/vm/run -k 6.12 --no-debug -t 2400 --out DIR -- \
#		tools/bench/bound_table.sh [-A] [-p PRESETS] [-T TOKENS] [-o DIR [-n]]
#
# With -A, collectives only, and coll_bench once more with FDEV_AUTO=rule
# (auto by libfabricdev's fixed rule, no costing): the report adds what
# auto runs by cost against the rule and the fastest algorithm, side by
# side from the same run (fdev_coll(3), "AUTO").
#
# and print the table again, from what a run left in DIR, anywhere (-n
# leaves it to that: the bounds of tpu-v4-pod's 4096 chips take a while
# in the VM):
#
#	tools/bench/bound_table.sh -r DIR
#
# PRESETS: comma-separated, default every preset (icfabd --list-presets),
# plus dgx-mc (dgx-h100 given 24 colours per switch, as moe_bench.sh
# does, for the multicast mode). Ranks 0..N-1 are endpoints 0..N-1, N per
# preset below (at most 64; tpu-v4-pod's first 64 chips are a 16x4x1
# slab of its torus, ualink-pod's two leaves, sn40l's first row and a
# bit). Each collective moves S bytes per rank (coll_bench.c says what S
# is per operation): 1 MiB, but 64 KiB on ipu-mk2 and sn40l and 16 KiB
# on wse2 (their memories are KiB), at the preset's own segment size.
# Algorithms: auto (and what it ran: coll_bench's auto_is, checked
# against that algorithm's time), ring, tree, direct, rings (over the
# cables between ranks, found in the topology: a cable between two ranks,
# or between the routers of two ranks that have one each) and hier
# (nodes of 8 ranks where N >= 16, else one node of all). One that an
# operation or the topology does not have prints its -errno instead of a
# time, with libfabricdev's message if it printed one.
#
# MoE: TOKENS per rank (default 256), H = 7168, top-8 of 256 experts,
# bf16, modes tp, ll, hier (nodes of 8, N >= 16) and mc (where the
# switches have colour tables: wse2, dgx-mc), at a segment size of 64 KiB
# (moe_bench.sh's). The h800-pod presets run with 8 ranks per node and
# their ports (moe_bench -g 8 -b 160 -B 50); the others with one node.
#
# The bound (tools/bench/bounds.py has the terms and how each is
# derived): the largest of per-rank injection/ejection (a max-flow out
# of and into each rank), the ranks' total, the minimum cut between
# sets of ranks (a switch's ranks, the halves of every dimension), and
# for fixed traffic (all-to-all, MoE) the busiest link on the fabric's
# own routes; for MoE also moe_bench's own port bound, and for mc only
# that. Rows below 0.9 of their bound are marked "<".

. "$(dirname "$0")/lib.sh"
coll=$top/build/bin/coll_bench
moe=$top/build/bin/moe_bench
bounds=$top/tools/bench/bounds.py
PRESETS=
T=256
DIR=
REPORT=
TABLE=1
AUTO=
while getopts Ap:T:o:r:n opt; do
	case $opt in
	A) AUTO=1 ;;
	p) PRESETS=$OPTARG ;;
	T) T=$OPTARG ;;
	o) DIR=$OPTARG ;;
	r) REPORT=$OPTARG ;;
	n) TABLE= ;;
	*) echo "usage: bound_table.sh [-A] [-p PRESETS] [-T TOKENS] [-o DIR [-n]] | -r DIR" >&2
	   exit 2 ;;
	esac
done

# The table, from DIR: every preset's results with their bounds.
report() {
	python3 -B - "$1" "$bounds" <<'PY'
import glob, importlib.util, json, os, sys
d = sys.argv[1]
spec = importlib.util.spec_from_file_location("bounds", sys.argv[2])
B = importlib.util.module_from_spec(spec)
spec.loader.exec_module(B)
meta = [json.loads(l) for l in open(os.path.join(d, "runs.jsonl"))]
low = []
print("Collectives: emulated time against the bound (us); t/b = bound/time,"
      " '<' below 0.9")
print("%-15s %3s %-4s %8s %-11s %11s %11s %6s  %s" % ("preset", "N", "op", "S",
      "algo", "emulated", "bound", "t/b", "bound by / error"))
for m in meta:
    p, n = m["preset"], m["ranks"]
    f = B.load(os.path.join(d, p + ".topo.json"), n)
    cuts = B.cuts_of(f)
    msg = " ".join(l.strip() for l in open(os.path.join(d, p + ".coll.err"))
                   if l.startswith("libfabricdev:"))
    rows = [json.loads(l) for l in open(os.path.join(d, p + ".coll.jsonl"))
            if l.startswith("{")]
    times = {(r["op"], r["algo"], r["bytes_per_rank"]): r.get("time_ps") for r in rows}
    for r in rows:
        S = r["bytes_per_rank"]
        algo = r["algo"]
        if "auto_is" in r:
            same = times.get((r["op"], r["auto_is"], S))
            # "?": not the time of the algorithm auto should have run.
            # Within 1 ps is the same: two runs of one plan can differ
            # by a picosecond of rounding (tools/bench/README.md).
            algo = "auto=" + r["auto_is"] + (
                "" if same is not None and abs(same - r["time_ps"]) <= 1 else "?")
        head = "%-15s %3d %-4s %4d KiB %-11s" % (p, n, r["op"], S // 1024, algo)
        if "error" in r:
            why = msg if r["algo"] == "rings" and msg else r["message"]
            print("%s %11s %11s %6s  %d (%s): %s" % (head, "-", "-", "-",
                  r["error"], r["errname"], why))
            continue
        t, by = B.best(B.coll_terms(f, r["op"], S, cuts, r.get("auto_is", r["algo"])))
        ratio = t * 1e12 / r["time_ps"]
        mark = "<" if ratio < 0.9 else " "
        print("%s %11.3f %11.3f %5.3f%s %s" % (head, r["time_ps"] / 1e6, t * 1e6,
              ratio, mark, by))
print()
print("MoE dispatch/combine (us): emulated, bound (max of moe_bench's port"
      " bound and bounds.py's), bound/time")
print("%-15s %3s %-4s %6s %10s %10s %6s %10s %10s %6s  %s" % ("preset", "N",
      "mode", "tokens", "dispatch", "d bound", "d t/b", "combine", "c bound",
      "c t/b", "dispatch bound by; combine bound by"))
for m in meta:
    p, n = m["preset"], m["ranks"]
    path = os.path.join(d, p + ".moe.jsonl")
    if not os.path.exists(path):
        continue
    f = None
    for l in open(path):
        r = json.loads(l)
        head = "%-15s %3d %-4s %6s" % (p, n, r["mode"], r.get("tokens", "-"))
        if "error" in r:
            print("%s %s" % (head, r["error"]))
            continue
        out, by = [], []
        for ph in ("dispatch", "combine"):
            t, why = r[ph + "_bound_ps"] / 1e12, "moe_bench ports"
            mp = os.path.join(d, "%s.%s.m.json" % (p, r["mode"]))
            if r["mode"] != "mc" and os.path.exists(mp):
                if f is None:
                    f = B.load(os.path.join(d, p + ".topo.json"), n)
                    cuts = B.cuts_of(f)
                g, gwhy = B.best(B.matrix_terms(f, json.load(open(mp))[ph], cuts))
                if g > t * (1 + 1e-9):
                    t, why = g, gwhy
            e = r[ph + "_ps"]
            ratio = t * 1e12 / e if e else 0
            out += [e / 1e6, t * 1e6, ratio, "<" if ratio < 0.9 else " "]
            by.append(why)
        print("%s %10.1f %10.1f %5.3f%s %10.1f %10.1f %5.3f%s  %s" % (
            (head,) + tuple(out) + ("; ".join(by),)))
auto = [m for m in meta if os.path.exists(os.path.join(d, m["preset"] + ".rule.jsonl"))]
if auto:
    print()
    print("auto by cost against auto by the rule (FDEV_AUTO=rule) and the"
          " fastest algorithm (us); rule/cost: the speedup")
    print("%-15s %3s %-4s %8s %-18s %-18s %-18s %9s" % ("preset", "N", "op", "S",
          "rule", "cost", "fastest", "rule/cost"))
for m in auto:
    p, n = m["preset"], m["ranks"]
    rows = [json.loads(l) for l in open(os.path.join(d, p + ".coll.jsonl"))
            if l.startswith("{") and "time_ps" in l]
    rule = {(r["op"], r["bytes_per_rank"]): r for r in
            (json.loads(l) for l in open(os.path.join(d, p + ".rule.jsonl"))
             if l.startswith("{") and "time_ps" in l)}
    for r in rows:
        if r["algo"] != "auto":
            continue
        k = (r["op"], r["bytes_per_rank"])
        fast = min((x["time_ps"], x["algo"]) for x in rows
                   if (x["op"], x["bytes_per_rank"]) == k and x["algo"] != "auto")
        ru = rule.get(k)
        cell = lambda a, t: "%-7s %10.3f" % (a, t / 1e6)
        print("%-15s %3d %-4s %4d KiB %-18s %-18s %-18s %9s" % (p, n, r["op"],
              k[1] // 1024, cell(ru["auto_is"], ru["time_ps"]) if ru else "-",
              cell(r["auto_is"], r["time_ps"]), cell(fast[1], fast[0]),
              "%.2fx" % (ru["time_ps"] / r["time_ps"]) if ru else "-"))
PY
}

if [ -n "$REPORT" ]; then
	report "$REPORT"
	exit
fi

tmpdir=
[ -n "$DIR" ] || { DIR=$(mktemp -d) && tmpdir=$DIR; }
bench_segment_keep
trap 'bench_segment_restore; [ -z "$tmpdir" ] || rm -rf "$tmpdir"' EXIT
mkdir -p "$DIR" || exit 1
: > "$DIR/runs.jsonl"
[ -n "$PRESETS" ] ||
	PRESETS=$("$icfabd" --list-presets | awk '{printf "%s,", $1}')dgx-mc
dpid=
trap '[ -n "$dpid" ] && kill "$dpid" 2>/dev/null; exit 1' INT TERM

# ranks PRESET: how many ranks; size PRESET: S in KiB
ranks() {
	case $1 in
	ipu-pod4*) echo 4 ;;
	dgx-*|sn40l-node) echo 8 ;;
	supermesh-*) echo 16 ;;
	h800-pod*) echo 32 ;;
	*) echo 64 ;;
	esac
}
size() {
	case $1 in
	wse2) echo 16 ;;
	ipu-mk2|sn40l) echo 64 ;;
	*) echo 1024 ;;
	esac
}

rc=0
for p in $(echo "$PRESETS" | tr , ' '); do
	n=$(ranks "$p")
	yaml=$DIR/$p.yaml
	if [ "$p" = dgx-mc ]; then
		"$icfabd" --dump --yaml --preset dgx-h100 |
			sed '/^defaults:/a\  switch: {colors: 24}' > "$yaml"
	else
		"$icfabd" --dump --yaml --preset "$p" > "$yaml"
	fi || { rc=1; continue; }
	echo "== $p: $n ranks"
	"$icfabd" --apply "$yaml" > /dev/null || { rc=1; continue; }
	"$icfabd" --dump --routes --json "$yaml" > "$DIR/$p.topo.json" || { rc=1; continue; }
	# The cables between ranks (once per cable), directly or router to
	# router where each router has one rank; and coll_bench's -b: the
	# smallest total of a rank's own links out (its own bound only).
	bw=$(python3 - "$DIR/$p.topo.json" "$n" "$DIR/$p.links" <<'PY'
import json, sys
t, n = json.load(open(sys.argv[1])), int(sys.argv[2])
kind = {x["id"]: x["kind"] for x in t["nodes"]}
eps = {}
for l in t["links"]:
    if kind[l["src"]] == "endpoint" and kind[l["dst"]] == "switch":
        eps.setdefault(l["dst"], set()).add(l["src"])
rank = {r: r for r in range(n)}
for sw, e in eps.items():
    if len(e) == 1 and min(e) < n:
        rank[sw] = min(e)
out = [0] * n
with open(sys.argv[3], "w") as f:
    for l in t["links"]:
        if l["src"] < n:
            out[l["src"]] += l["bandwidth"]
        a, b = rank.get(l["src"]), rank.get(l["dst"])
        if a is not None and b is not None and a != b and l["src"] < l["dst"]:
            f.write("%d %d\n" % (a, b))
print(min(out))
PY
) || { rc=1; continue; }
	g=
	[ "$n" -ge 16 ] && g="-g 8"
	echo "{\"preset\": \"$p\", \"ranks\": $n}" >> "$DIR/runs.jsonl"
	t0=$(date +%s)
	# shellcheck disable=SC2086
	"$coll" -n "$n" -b "$bw" -S "$(size "$p")" -L "$DIR/$p.links" $g \
		-a auto,ring,tree,direct,rings,hier > "$DIR/$p.coll.jsonl" \
		2> "$DIR/$p.coll.err" || { rc=1; cat "$DIR/$p.coll.err" >&2; }
	t1=$(date +%s)
	echo "   collectives: $((t1 - t0)) s"
	if [ -n "$AUTO" ]; then
		# shellcheck disable=SC2086
		FDEV_AUTO=rule "$coll" -n "$n" -b "$bw" -S "$(size "$p")" \
			-L "$DIR/$p.links" $g -a auto > "$DIR/$p.rule.jsonl" \
			2>> "$DIR/$p.coll.err" || rc=1
		continue
	fi

	# MoE, at 64 KiB segments
	"$icfabctl" fabric set 0 segment-size 65536 > /dev/null || { rc=1; continue; }
	case $p in
	h800-pod*) ports="-g 8 -b 160 -B 50" ;;
	*) ports="-b $(echo "$bw" | awk '{print $1 / 1e9}')" ;;
	esac
	modes="tp ll"
	[ "$n" -ge 16 ] && modes="$modes hier"
	grep -q 'colors:' "$yaml" && modes="$modes mc"
	if echo "$modes" | grep -q mc; then
		icfabd_serve "$yaml" "$DIR" || true	# mc then fails, and says so
	fi
	: > "$DIR/$p.moe.jsonl"
	for mode in $modes; do
		mg=$ports
		[ "$mode" = hier ] && [ -z "${ports##-b*}" ] && mg="$ports -g 8 -B ${ports#-b }"
		# shellcheck disable=SC2086
		r=$("$moe" -n "$n" -t "$T" -H 7168 -e 256 -k 8 -m "$mode" $mg \
			-M "$DIR/$p.$mode.m.json" 2> "$DIR/$p.$mode.err")
		if [ $? != 0 ] || [ -z "$r" ]; then
			err=$(grep -v '^#' "$DIR/$p.$mode.err" | tr '\n"' ' _')
			echo "{\"mode\": \"$mode\", \"error\": \"moe_bench failed: $err\"}" >> "$DIR/$p.moe.jsonl"
			continue
		fi
		echo "$r" >> "$DIR/$p.moe.jsonl"
	done
	if [ -n "$dpid" ]; then
		kill "$dpid" && wait "$dpid"
		dpid=
		unset ICFABD_SOCKET
	fi
	echo "   moe: $(($(date +%s) - t1)) s"
done
[ -z "$TABLE" ] || report "$DIR"
exit $rc
