#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fdev_shift(3), the compute-shift loop, on 8 tiles of a crossbar
# exchange at 4 GB/s and 100 ns per cable: where the partitions end up
# (with data), and the emulated time against its exact closed form, BSP
# and overlapped; fdev_region_alloc_tier() on an HBM tier the tiles
# share (2 GB/s, 50 ns, 1 MiB): its capacity, -ENXIO, and a read and a
# write through its port on their closed forms; and the loop on
# partitions in a tier (FDEV_SHIFT_TIER), in each tile's SRAM (64 GB/s,
# 10 ns) on its closed form, and in the shared HBM
# (libfabricdev/tests/shift_test.c). The ports carried exactly what the
# test moved through them. The tier part runs under icfabctl trace: the
# energy of its run, per link class and per memory tier, is the same in
# icfabctl stats (a port's joules under "tier hbm" or "tier sram", not
# under a class) and in the trace's energy counters, to the femtojoule.
# TAP output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
icfabd=$top/build/bin/icfabd
ctl=$top/build/bin/icfabctl
t=$top/build/libfabricdev/tests/shift_test
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"	# check

cat > "$tmp/xbar.yaml" <<'YAML'
topology:
  exchange: {tiles: 8, mode: crossbar, bandwidth: 4GB/s, latency: 100ns,
             class: ipu, energy: 1pJ/b}
tiers:
  - {kind: hbm, at: tile0, shared_by: all, capacity: 1MiB,
     bandwidth: 2GB/s, latency: 50ns, energy: 4pJ/b}
  - {kind: sram, at: each, capacity: 256KiB, bandwidth: 64GB/s,
     latency: 10ns, energy: 0.1pJ/b}
YAML

echo "TAP version 13"
if ! "$icfabd" --apply "$tmp/xbar.yaml" > "$tmp/apply" 2>&1; then
	sed 's/^/# /' "$tmp/apply"
	echo "not ok 1 crossbar of 8 tiles with tiers applied"
	echo "1..1"
	exit 1
fi
echo "# crossbar of 8 tiles, an HBM they share and an SRAM each, applied"
check "fdev_shift (shift_test device)" \
	sh -c "'$t' device 4000000000 100000 > '$tmp/out' 2>&1"
sed 's/^/# /' "$tmp/out"
check "stats reset" "$ctl" stats reset
check "fdev_region_alloc_tier, fdev_shift in tiers (shift_test tier, under icfabctl trace)" \
	sh -c "'$ctl' trace -o '$tmp/t.json' -- '$t' tier 4000000000 100000 \
		2000000000 50000 1048576 64000000000 10000 \
		> '$tmp/out' 2> '$tmp/err'"
sed 's/^/# /' "$tmp/out" "$tmp/err"
"$ctl" -j stats > "$tmp/s.json"
"$ctl" stats > "$tmp/s.txt"

check "energy per tier in stats and in the trace" \
	python3 - "$tmp/s.json" "$tmp/t.json" "$tmp/s.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
txt = open(sys.argv[3]).read()
bad = []
def want(what, ok):
    if not ok:
        bad.append(what)
e = s.get("energy", {})
tiers = {r["tier"]: r for r in e.get("tiers", [])}
classes = {r["class"]: r for r in e.get("classes", [])}
ports = [l for l in s["links"] if l.get("tier") == "hbm"]
sram = [l for l in s["links"] if l.get("tier") == "sram"]
want("one HBM port (%d), 8 SRAM ports (%d)" % (len(ports), len(sram)),
     len(ports) == 1 and len(sram) == 8)
want("tiers %s" % sorted(tiers), sorted(tiers) == ["hbm", "sram"])
want("classes %s: no port under 'other'" % sorted(classes), sorted(classes) == ["ipu"])
P = 65536
# shift_test tier: a partition read from the HBM and one written to it,
# then 7 steps of the loop in it (5 rotating, 2 timed), each taking 8
# partitions through the port twice; 12 steps in SRAM (5 rotating, 7
# timed), each taking every tile's own partition out of its port and
# its neighbour's in.
if ports and "hbm" in tiers:
    p, h = ports[0], tiers["hbm"]
    want("the HBM port carried (2 + 16 x 7) x 64 KiB (%d)" % p["bytes"],
         p["bytes"] == (2 + 16 * 7) * P)
    want("tier hbm: the port's bytes x 8 x 4000 fJ (%s)" % h,
         h["links"] == 1 and h["bytes"] == p["bytes"] and
         h["energy_fj"] == p["bytes"] * 8 * 4000 == p["energy_fj"])
if len(sram) == 8 and "sram" in tiers:
    h = tiers["sram"]
    want("each SRAM port carried 12 x 2 x 64 KiB (%s)" % [l["bytes"] for l in sram],
         all(l["bytes"] == 12 * 2 * P for l in sram))
    want("tier sram: 8 ports, bytes x 8 x 100 fJ (%s)" % h,
         h["links"] == 8 and h["bytes"] == 8 * 12 * 2 * P and
         h["energy_fj"] == h["bytes"] * 8 * 100)
if "ipu" in classes:
    c = classes["ipu"]
    want("ipu: 16 links, bytes x 8 x 1000 fJ (%s)" % c,
         c["links"] == 16 and c["energy_fj"] == c["bytes"] * 8 * 1000)
    want("the total is the class's and the tiers'",
         e["energy_fj"] == c["energy_fj"] + sum(r["energy_fj"] for r in tiers.values()))
want("text: a 'tier hbm' row", any(l.split()[:2] == ["tier", "hbm"] for l in txt.splitlines()))
# The trace's counters: monotone, and their last values are the stats'.
ev = t["traceEvents"]
procs = {x["pid"]: x["args"]["name"] for x in ev
         if x.get("ph") == "M" and x["name"] == "process_name"}
want("process 4 is energy (%s)" % procs, procs.get(4) == "energy")
cnt = {}
for x in ev:
    if x.get("ph") == "C" and x.get("cat") == "energy":
        cnt.setdefault(x["name"], []).append((x["ts"], x["args"]["J"]))
want("counters %s" % sorted(cnt), sorted(cnt) == ["ipu", "tier hbm", "tier sram", "total"])
for name, v in cnt.items():
    want("%s monotone" % name, all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(v, v[1:])))
def last_fj(name):
    return round(cnt[name][-1][1] * 1e15) if name in cnt else None
want("counter ipu ends at the stats' (%s)" % last_fj("ipu"),
     last_fj("ipu") == classes.get("ipu", {}).get("energy_fj"))
for k in ("hbm", "sram"):
    want("counter tier %s ends at the stats' (%s)" % (k, last_fj("tier " + k)),
         last_fj("tier " + k) == tiers.get(k, {}).get("energy_fj"))
want("counter total ends at the stats' (%s)" % last_fj("total"),
     last_fj("total") == e.get("energy_fj") == t["otherData"]["energy_fj"])
for b in bad[:10]:
    print("# " + b)
sys.exit(1 if bad else 0)
PY

echo "1..$n"
exit $failed
