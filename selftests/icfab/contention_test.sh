#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# icfab-contention, the libbpf tracer: it attaches to the icfab raw
# tracepoints, counts exactly the bytes a timing-only all-to-all moves on
# dgx-h100 (56 transfers of 256 KiB; every GPU's two links carry 7 x 256 KiB),
# agrees exactly with the link statistics (bytes, segments, busy time,
# longest queueing delay), pins its maps for bpftool, and shows up in
# bpftool prog list while it runs. TAP output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
ctl=$top/build/bin/icfabctl
icfabd=$top/build/bin/icfabd
a2a=$top/build/bin/icfab-a2a
ct=$top/build/bin/icfab-contention
tmp=$(mktemp -d)
pin=/sys/fs/bpf/icfab-test-$$
bg=
trap 'kill $bg 2>/dev/null; rm -rf "$tmp" "$pin"' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"	# check

echo "TAP version 13"

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
check "dgx-h100 applied" sh -c "'$icfabd' --apply --preset dgx-h100 > /dev/null"
check "stats reset" "$ctl" stats reset
check "the tracer runs the all-to-all" \
	sh -c "'$ct' -j -p '$pin' -- sh -c '\"$a2a\" 256K > /dev/null' > '$tmp/c.json'"
"$ctl" -j stats > "$tmp/s.json"

check "it counted exactly what moved, as the stats did" python3 - "$tmp/c.json" "$tmp/s.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
bad = []
def want(what, ok):
    if not ok:
        bad.append(what)
tot = c["totals"]
want("one fabric in totals: %s" % tot, len(tot) == 1 and tot[0]["fabric"] == 0)
tot = tot[0]
want("56 transfers, 56 x 256 KiB, none failed: %s" % tot,
     (tot["transfers"], tot["bytes"], tot["failed"]) == (56, 56 * (256 << 10), 0))
want("7168 link transmits", tot["xmits"] == 56 * 64 * 2)
cl = {l["link"]: l for l in c["links"]}
want("16 links", sorted(cl) == list(range(16)))
want("7 x 256 KiB on every link", all(l["bytes"] == 7 * (256 << 10) for l in cl.values()))
for l in cl.values():
    want("histogram of link %d sums to its segments" % l["link"], sum(l["hist"]) == l["segments"])
for l in s["links"]:
    t = cl.get(l["id"], {})
    for k in ("bytes", "segments", "busy_ps", "max_queued_ps"):
        want("link %d %s: tracer %s, stats %s" % (l["id"], k, t.get(k), l[k]), t.get(k, 0) == l[k])
for b in bad[:10]:
    print("# " + b)
sys.exit(1 if bad else 0)
PY

check "bpftool reads the pinned totals" sh -c "
	bpftool -j map dump pinned '$pin/totals' > '$tmp/b.json' &&
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = [e.get(\"formatted\", e)[\"value\"] for e in d]
sys.exit(0 if len(v) == 1 and v[0][\"transfers\"] == 56 else 1)' '$tmp/b.json'"
check "and the pinned links" sh -c "
	bpftool -j map dump pinned '$pin/links' > '$tmp/l.json' &&
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = [e.get(\"formatted\", e)[\"value\"] for e in d]
sys.exit(0 if len(v) == 16 and sum(x[\"bytes\"] for x in v) == 56 * 2 * (256 << 10) else 1)' '$tmp/l.json'"
check "pinning over an earlier run's maps is refused" \
	sh -c "! '$ct' -p '$pin' -d 1 > /dev/null 2>&1"

"$ct" -d 60 > "$tmp/bg.txt" 2>&1 &
bg=$!
seen=1
for i in $(seq 1 100); do
	if bpftool prog list | grep -q on_link_xmit; then
		seen=0
		break
	fi
	sleep 0.2
done
check "bpftool prog list shows the programs while it runs" test $seen -eq 0
kill -INT $bg
wait $bg
rc=$?
bg=
check "^C ends it cleanly" test $rc -eq 0
check "the text report has its header" grep -q "links carried traffic" "$tmp/bg.txt"

check "text output: the top 3 of 16 links" sh -c "
	'$ct' -n 3 -- sh -c '\"$a2a\" 64K > /dev/null' > '$tmp/t.txt' &&
	grep -q '^.*16 links carried traffic' '$tmp/t.txt' &&
	test \$(grep -c '^ *0 ' '$tmp/t.txt') -eq 3"
check "bad options are usage errors" \
	sh -c "'$ct' -n x > /dev/null 2>&1; test \$? -eq 2"

echo "1..$n"
exit $failed
