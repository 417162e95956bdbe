#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The icfab tracepoints and the timeline (icfabctl trace): the events and
# their documented fields exist; a timing-only all-to-all on dgx-h100
# (8 GPUs, 56 transfers of 256 KiB, 2 hops each, 4 KiB segments) gives a
# Perfetto JSON with exactly 56 transfer slices and 56 x 64 x 2 link
# slices, one track per link, whose bytes and busy time agree exactly
# with the link statistics; times are exact ps -> us; its energy
# counters (nvlink at 5 pJ/b, and the total) end at the joules the
# statistics give. libfabricdev's calls are named slices of their own
# (a MoE dispatch and combine). The energy of memory tiers in the trace:
# shift_test.sh.
# TAP output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
ctl=$top/build/bin/icfabctl
icfabd=$top/build/bin/icfabd
a2a=$top/build/bin/icfab-a2a
ev=/sys/kernel/tracing/events/icfab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"	# check

fields() {	# fields EVENT: its own field names, in order, one line
	sed -n 's/^[[:space:]]*field:[^;]* \([a-z_]*\);.*/\1/p' "$ev/$1/format" |
		grep -v '^common_' | tr '\n' ' '
}

echo "TAP version 13"

check "events/icfab has submit, link_xmit, complete, link_state, engine_held" \
	test -d "$ev/icfab_submit" -a -d "$ev/icfab_link_xmit" -a \
	     -d "$ev/icfab_complete" -a -d "$ev/icfab_link_state" -a \
	     -d "$ev/icfab_engine_held"
check "icfab_engine_held has the documented fields" \
	test "$(fields icfab_engine_held)" = "fabric pid held_ps next_ps now_ps "
check "icfab_link_xmit has the documented fields" \
	test "$(fields icfab_link_xmit)" = "fabric link key seg hop bytes ready_ps depart_ps done_ps queued_ps "
check "icfab_complete has the documented fields" \
	test "$(fields icfab_complete)" = "fabric key src dst bytes status submit_ps start_ps finish_ps queued_ps "
check "icfab_submit has the documented fields" \
	test "$(fields icfab_submit)" = "fabric xfer key src dst bytes submit_ps hops "

check "dgx-h100 applied" sh -c "'$icfabd' --apply --preset dgx-h100 > /dev/null"
check "stats reset" "$ctl" stats reset
check "icfabctl trace runs the all-to-all" \
	sh -c "'$ctl' trace -o '$tmp/t.json' -- '$a2a' 256K > /dev/null 2> '$tmp/err'"
check "and removes its tracefs instance" \
	sh -c "! ls /sys/kernel/tracing/instances | grep -q icfabctl"
"$ctl" -j stats > "$tmp/s.json"

check "the timeline is exact" python3 - "$tmp/t.json" "$tmp/s.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
ev = t["traceEvents"]
xf = [e for e in ev if e.get("cat") == "xfer"]
lk = [e for e in ev if e.get("cat") == "link"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
         if e.get("ph") == "M" and e["name"] == "thread_name"}
procs = {e["pid"]: e["args"]["name"] for e in ev
         if e.get("ph") == "M" and e["name"] == "process_name"}
bad = []
def want(what, ok):
    if not ok:
        bad.append(what)
want("56 transfer slices (%d)" % len(xf), len(xf) == 56)
want("7168 link slices (%d)" % len(lk), len(lk) == 56 * 64 * 2)
want("no lost events", t["otherData"]["lost_events"] == 0)
want("processes", procs == {1: "links", 2: "queues", 4: "energy"})
want("16 link tracks", sorted(tid for (p, tid) in names if p == 1) == list(range(16)))
want("8 queues", len({names[(2, e["tid"])].split(" #")[0] for e in xf}) == 8)
want("transfers are 256 KiB, status 0", all(e["args"]["bytes"] == 256 << 10 and e["args"]["status"] == 0 for e in xf))
want("ps -> us exact", all(round(e["ts"] * 1e6) == e["args"]["depart_ps"] and
                           round(e["dur"] * 1e6) == e["args"]["done_ps"] - e["args"]["depart_ps"] for e in lk))
want("transfer ts/dur exact", all(round(e["ts"] * 1e6) == e["args"]["submit_ps"] and
                                  round(e["dur"] * 1e6) == e["args"]["finish_ps"] - e["args"]["submit_ps"] for e in xf))
# Slices on one track never overlap.
by = {}
for e in lk + xf:
    by.setdefault((e["pid"], e["tid"]), []).append(e)
def ps(e):
    return (e["args"].get("depart_ps", e["args"].get("submit_ps")),
            e["args"].get("done_ps", e["args"].get("finish_ps")))
for k, l in by.items():
    l = sorted(map(ps, l))
    want("no overlap on %s" % (k,), all(a[1] <= b[0] for a, b in zip(l, l[1:])))
per = {}
for e in lk:
    p = per.setdefault(e["tid"], [0, 0, 0])
    p[0] += e["args"]["bytes"]; p[1] += e["args"]["done_ps"] - e["args"]["depart_ps"]
    p[2] = max(p[2], e["args"]["queued_ps"])
for l in s["links"]:
    got = per.get(l["id"], [0, 0, 0])
    want("link %d agrees with stats: %s vs %s" % (l["id"], got, l),
         got == [l["bytes"], l["busy_ps"], l["max_queued_ps"]])
want("56 x 256 KiB x 2 hops crossed links", sum(p[0] for p in per.values()) == 56 * 2 * (256 << 10))
# Energy: a counter per class crossed, and the total, sampled at each
# instant a segment is out; they end at the statistics' joules.
cnt = {}
for e in ev:
    if e.get("ph") == "C" and e.get("cat") == "energy":
        cnt.setdefault(e["name"], []).append((round(e["ts"] * 1e6), round(e["args"]["J"] * 1e15)))
want("energy counters nvlink and total (%s)" % sorted(cnt), sorted(cnt) == ["nvlink", "total"])
want("one sample per instant a segment is out",
     [p for p, _ in cnt.get("total", [])] == sorted({e["args"]["done_ps"] for e in lk}))
for k, v in cnt.items():
    want("%s rises" % k, all(a[1] <= b[1] for a, b in zip(v, v[1:])))
fj = 56 * 2 * (256 << 10) * 8 * 5000
nv = [c for c in s["energy"]["classes"] if c["class"] == "nvlink"]
want("nvlink ends at %d fJ, the statistics'" % fj,
     cnt.get("nvlink", [(0, 0)])[-1][1] == fj == nv[0]["energy_fj"] == s["energy"]["energy_fj"])
want("total ends there too", cnt.get("total", [(0, 0)])[-1][1] == fj == t["otherData"]["energy_fj"])
for b in bad[:10]:
    print("# " + b)
sys.exit(1 if bad else 0)
PY

# Library calls by name: moe_bench's dispatch and combine (one process,
# 8 ranks, one context) are two slices of process "ops", exactly as long
# as the fabric times moe_bench reports.
check "icfabctl trace runs a MoE dispatch and combine" \
	sh -c "'$ctl' trace -o '$tmp/m.json' -- '$top/build/bin/moe_bench' -n 8 -t 16 \
		-H 512 -e 8 -k 2 -m tp > '$tmp/m.out' 2> '$tmp/err'"
check "the ops are named, on one track, as long as moe_bench says" \
	python3 - "$tmp/m.json" "$tmp/m.out" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
m = json.loads(open(sys.argv[2]).read())
ev = t["traceEvents"]
ops = sorted((e for e in ev if e.get("cat") == "op"), key=lambda e: e["args"]["start_ps"])
procs = {e["pid"]: e["args"]["name"] for e in ev
         if e.get("ph") == "M" and e["name"] == "process_name"}
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
         if e.get("ph") == "M" and e["name"] == "thread_name"}
bad = []
def want(what, ok):
    if not ok:
        bad.append(what)
want("2 op slices (%d)" % len(ops), len(ops) == 2 and t["otherData"]["ops"] == 2)
want("process 3 is ops (%s)" % procs, procs.get(3) == "ops")
if len(ops) == 2:
    d, c = ops
    want("names %s" % [o["name"] for o in ops], [d["name"], c["name"]] == ["moe_dispatch", "moe_combine"])
    want("ops %s" % [o["args"]["op"] for o in ops], [d["args"]["op"], c["args"]["op"]] == ["moe_dispatch", "moe_combine"])
    want("one track, 8 ranks: %s" % names.get((3, d["tid"])),
         d["tid"] == c["tid"] and names.get((3, d["tid"])) == "ep %d (8 ranks)" % d["tid"])
    want("dispatch %d ps, moe_bench %d" % (d["args"]["end_ps"] - d["args"]["start_ps"], m["dispatch_ps"]),
         d["args"]["end_ps"] - d["args"]["start_ps"] == m["dispatch_ps"])
    want("combine %d ps, moe_bench %d" % (c["args"]["end_ps"] - c["args"]["start_ps"], m["combine_ps"]),
         c["args"]["end_ps"] - c["args"]["start_ps"] == m["combine_ps"])
    want("combine after dispatch", c["args"]["start_ps"] >= d["args"]["end_ps"])
    want("status 0", d["args"]["status"] == 0 and c["args"]["status"] == 0)
    want("ps -> us exact", all(round(o["ts"] * 1e6) == o["args"]["start_ps"] and
                               round(o["dur"] * 1e6) == o["args"]["end_ps"] - o["args"]["start_ps"]
                               for o in ops))
for b in bad[:10]:
    print("# " + b)
sys.exit(1 if bad else 0)
PY

check "trace without a command is a usage error" \
	sh -c "'$ctl' trace -o '$tmp/x.json' 2> /dev/null; test \$? -eq 2"
check "trace passes the command's exit status on" \
	sh -c "'$ctl' trace -o '$tmp/x.json' -- sh -c 'exit 7' 2> /dev/null; test \$? -eq 7"
check "a timeline of nothing still parses" python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
sys.exit(0 if t["otherData"]["transfers"] == 0 else 1)' "$tmp/x.json"

echo "1..$n"
exit $failed
