#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Host test of icfab-plot, icfab-phases and icfab-timeline on data
# recorded in the test VM (tests/: icfabctl -j stats and -j topo show
# after icfab-a2a -j 16K, on supermesh-bi and h800-pod; a moe_bench run;
# an icfabctl trace of icfab-a2a 16K on dgx-h100, cut to its first links
# and transfers). The numbers they print are checked against the same
# JSON computed independently here. TAP output.

dir=$(cd "$(dirname "$0")" && pwd)
plot=$dir/icfab-plot
t=$dir/tests
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

check() {	# check DESCRIPTION COMMAND...
	desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n $desc"
	else
		echo "not ok $n $desc"
		failed=1
	fi
}

is_png() {
	test "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a
}

# Debian's python3 (icfab-plot's #!), not one earlier in PATH.
py=/usr/bin/python3

echo "TAP version 13"
if ! $py -c 'import matplotlib' 2> /dev/null; then
	echo "1..0 # SKIP python3-matplotlib is not installed"
	exit 0
fi

time_of() {
	$py -c 'import json, sys; print(json.load(open(sys.argv[1]))["time_ps"])' "$1"
}

sm=$(time_of "$t/supermesh-bi-a2a.json")
check "supermesh-bi: a grid heat map" sh -c "
	'$plot' --time-ps $sm '$t/supermesh-bi-stats.json' '$t/supermesh-bi-topo.json' '$tmp/sm.png' > '$tmp/sm.txt'"
check "it is a PNG" is_png "$tmp/sm.png"
check "its numbers are the stats'" $py - "$t/supermesh-bi-stats.json" "$t/supermesh-bi-topo.json" "$sm" "$tmp/sm.txt" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2])); T = int(sys.argv[3])
line = open(sys.argv[4]).read().strip()
name = {n["id"]: n["name"] for n in t["nodes"]}
def pos(i):
    m = re.search(r"(\d+)_(\d+)$", name[i])
    return m.groups() if m else None
busy = {l["id"]: l["busy_ps"] for l in s["links"]}
u = [busy[l["id"]] / T for l in t["links"] if pos(l["src"]) and pos(l["dst"]) and pos(l["src"]) != pos(l["dst"])]
want = "grid z=0: 16 points, %d links between points, utilisation max %.6f mean %.6f" % (len(u), max(u), sum(u) / len(u))
print("# " + line)
sys.exit(0 if line == want else 1)
PY

h8=$(time_of "$t/h800-pod-a2a.json")
check "h800-pod: per-tier bars" sh -c "
	'$plot' --time-ps $h8 '$t/h800-pod-stats.json' '$t/h800-pod-topo.json' '$tmp/h8.png' > '$tmp/h8.txt'"
check "it is a PNG" is_png "$tmp/h8.png"
check "four tiers (NVLink and NIC, up and down) holding every byte" $py - "$t/h800-pod-stats.json" "$tmp/h8.txt" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().strip().split("\n")
for l in lines:
    print("# " + l)
got = sum(int(re.search(r" (\d+) bytes", l).group(1)) for l in lines)
sys.exit(0 if len(lines) == 4 and got == sum(l["bytes"] for l in s["links"]) else 1)
PY
check "relative mode: the busiest link is 1" sh -c "
	'$plot' '$t/h800-pod-stats.json' '$t/h800-pod-topo.json' '$tmp/r.png' | grep -q 'max 1.000000'"
$py -c '
import json, sys
d = json.load(open(sys.argv[1])); d["generation"] += 1
json.dump(d, open(sys.argv[2], "w"))' "$t/h800-pod-stats.json" "$tmp/other.json"
check "stats of another configuration are refused" sh -c "
	! '$plot' '$tmp/other.json' '$t/h800-pod-topo.json' '$tmp/x.png' 2> /dev/null && test ! -e '$tmp/x.png'"
check "a grid of a topology without coordinates is refused" sh -c "
	cp '$t/h800-pod-topo.json' '$tmp/t.json' &&
	$py -c 'import json,sys; d=json.load(open(sys.argv[1])); [n.update(name=\"n\") for n in d[\"nodes\"]]; json.dump(d, open(sys.argv[1], \"w\"))' '$tmp/t.json' &&
	! '$plot' --mode grid '$t/h800-pod-stats.json' '$tmp/t.json' '$tmp/y.png' 2> /dev/null"


phases=$dir/icfab-phases
check "icfab-phases: dispatch/combine bars of a recorded moe_bench run" sh -c "
	'$phases' '$t/h800-16-moe.jsonl' '$tmp/ph.png' > '$tmp/ph.txt'"
check "it is a PNG" is_png "$tmp/ph.png"
check "its numbers are the run's: time, bound and their ratio per phase" $py - "$t/h800-16-moe.jsonl" "$tmp/ph.txt" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
got = open(sys.argv[2]).read().strip().split("\n")
want = ["%d ranks %s %s: %.1f us emulated, bound %.1f us, bound/time %.3f" % (
        r["ranks"], r["mode"], p, r[p + "_ps"] / 1e6, r[p + "_bound_ps"] / 1e6,
        r[p + "_bound_ps"] / r[p + "_ps"]) for p in ("dispatch", "combine")]
for l in got:
    print("# " + l)
sys.exit(0 if got == want else 1)
PY
check "a file without runs is refused" sh -c "
	echo 'not json' > '$tmp/none' && ! '$phases' '$tmp/none' '$tmp/z.png' 2> /dev/null && test ! -e '$tmp/z.png'"

timeline=$dir/icfab-timeline
tl=$t/dgx-h100-a2a-timeline.json
check "icfab-timeline: a picture of a recorded icfabctl trace (dgx-h100, a2a 16K)" sh -c "
	'$timeline' --rows 4 '$tl' '$tmp/tl.png' > '$tmp/tl.txt'"
check "it is a PNG" is_png "$tmp/tl.png"
check "its numbers are the trace's: busiest links, segments, queueing, end" $py - "$tl" "$tmp/tl.txt" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
got = open(sys.argv[2]).read().strip().split("\n")
segs = [e for e in ev if e["ph"] == "X" and e["cat"] == "link"]
xf = [e for e in ev if e["ph"] == "X" and e["cat"] == "xfer"]
busy = {}
for e in segs:
    busy[e["tid"]] = busy.get(e["tid"], 0) + e["dur"]
top = sorted(busy, key=lambda t: (-busy[t], t))[:4]
mine = [e for e in segs if e["tid"] in top]
end = max(e["ts"] + e["dur"] for e in segs + xf)
want = ["links: 4 of %d shown, %d segments, busiest %.3f us, longest queueing %.3f us, end %.3f us" % (
        len(busy), len(mine), busy[top[0]], max(e["args"]["queued_ps"] for e in mine) / 1e6, end),
        "transfers: 4 of %d shown, last finishes at %.3f us" % (len(xf), max(e["ts"] + e["dur"] for e in xf))]
for l in got:
    print("# " + l)
sys.exit(0 if got == want else 1)
PY
check "a file without link or transfer events is refused" sh -c "
	echo '{\"traceEvents\": []}' > '$tmp/empty.json' &&
	! '$timeline' '$tmp/empty.json' '$tmp/e.png' 2> /dev/null && test ! -e '$tmp/e.png'"

echo "1..$n"
exit $failed
