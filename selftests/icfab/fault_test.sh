#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Faults through icfabd's socket, in the test VM (as root), on the
# tpu-v4-cube preset (4x4x4 torus, chip ids 0..63): with a context
# attached (a live commit), one cable goes down; the routes avoid it, no
# route table entry leaves by a DOWN link and a timing-only all-to-all
# completes with no failure; the cable is degraded and comes back; a
# chip cut off (every link down) is reported unreachable and a transfer
# to it fails with EHOSTUNREACH, while everything else still completes;
# bad requests and an unprivileged user are refused and change nothing;
# a restarted daemon keeps the faults. TAP.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
icfabd=${ICFABD:-$top/build/bin/icfabd}
icfabctl=${ICFABCTL:-$top/build/bin/icfabctl}
a2a=${ICFAB_A2A:-$top/build/bin/icfab-a2a}
tmp=$(mktemp -d)
chmod 755 "$tmp"	# user 65534 reaches the socket
sock=$tmp/icfabd.sock
dpid=
ppid_=
trap 'cleanup' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"

cleanup() {
	[ -n "$ppid_" ] && kill "$ppid_" 2>/dev/null
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	rm -rf "$tmp"
}

start_daemon() {	# start_daemon LOG
	"$icfabd" --foreground --preset tpu-v4-cube --socket "$sock" \
		> "$1" 2>&1 &
	dpid=$!
	wait_for "$1" "serving" 60
}

# hops SRC DST: the link ids of the route, one line, space-separated
hops() {
	"$icfabctl" -j route show "$1" "$2" |
		python3 -c 'import json,sys; print(" ".join(str(h["id"]) for h in json.load(sys.stdin)["hops"]))'
}

# a2a_errors: transfers that failed in a timing-only all-to-all
a2a_errors() {
	"$a2a" -j 16K > "$tmp/a2a.json" 2> "$tmp/a2a.err"
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["transfers"], r["errors"])' "$tmp/a2a.json"
}

echo "TAP version 13"

check "tpu-v4-cube applied" sh -c "'$icfabd' --apply --preset tpu-v4-cube > '$tmp/apply' 2>&1"
check "icfabd starts and serves its socket" start_daemon "$tmp/log1"

h=$(hops chip0_0_0 chip1_0_0)
link=${h%% *}
check "chip0_0_0 -> chip1_0_0 is one hop, link $link" [ -n "$link" -a "$h" = "$link" ]
gen0=$(generation)

# ---- refusals first: nothing may change ----

ctl fault link 99999 down > "$tmp/out" 2> "$tmp/err"
check "fault link 99999: refused, exit 1" [ $? = 1 ]
check "... naming the link" grep -q "link 99999: no such link" "$tmp/err"
ctl fault link "$link" degrade 0 > "$tmp/out" 2> "$tmp/err"
check "degrade 0: refused" grep -q "degrade: permille 0 out of 1..999" "$tmp/err"
ctl fault link "$link" degrade 1000 > "$tmp/out" 2> "$tmp/err"
check "degrade 1000: refused" grep -q "permille 1000 out of 1..999" "$tmp/err"
ctl fault node chip9_9_9 down > "$tmp/out" 2> "$tmp/err"
check "fault node chip9_9_9: refused, naming it" grep -q "no node named 'chip9_9_9'" "$tmp/err"
nobody fault link "$link" down > "$tmp/out" 2> "$tmp/err"
check "user 65534: fault link refused with EPERM" \
	grep -q "needs an administrator" "$tmp/err"
nobody fault node chip0_0_0 down > "$tmp/out" 2> "$tmp/err"
check "user 65534: fault node refused" grep -q "needs an administrator" "$tmp/err"
check "the refusals changed nothing (generation $gen0)" [ "$(generation)" = "$gen0" ]
check "... and the route is the same" [ "$(hops chip0_0_0 chip1_0_0)" = "$link" ]

# ---- one cable down, under a live context ----

timeout 120 "$icfabctl" probe -w 6 0 21 > "$tmp/probe0" 2>&1 &
ppid_=$!
sleep 2
ctl fault link "$link" down > "$tmp/out" 2> "$tmp/err"
check "fault link $link down, with a context attached (live commit)" [ $? = 0 ]
cat "$tmp/out" "$tmp/err" | sed 's/^/# /'
check "... 2 links changed (the cable), nothing unreachable" \
	grep -q "changed=2 .* unreachable=0 newly_unreachable=0" "$tmp/out"
check "... one commit" [ "$(generation)" = "$((gen0 + 1))" ]
wait "$ppid_"
rc=$?
ppid_=
check "the attached context's transfer completed" sh -c "[ $rc = 0 ] && grep -q 'status=ok' '$tmp/probe0'"
h=$(hops chip0_0_0 chip1_0_0)
echo "# route now: $h"
check "chip0_0_0 -> chip1_0_0 avoids link $link (3 hops)" \
	sh -c "[ \$(echo '$h' | wc -w) = 3 ] && ! echo ' $h ' | grep -q ' $link '"
"$icfabd" --status > "$tmp/status" 2>&1
check "no route entry leaves by a DOWN link (icfabd --status)" \
	grep -q "0 unreachable, 0 entries leave by a down link" "$tmp/status"
r=$(a2a_errors)
check "all-to-all over 64 chips: 4032 transfers, 0 failed ($r)" [ "$r" = "4032 0" ]
check "the daemon logged the fault" grep -q "fault: link $link down" "$tmp/log1"

# ---- degraded, then up ----

ctl fault link "$link" degrade 250 > "$tmp/out" 2> "$tmp/err"
check "fault link $link degrade 250" grep -q "changed=2 .*state=degrade permille=250" "$tmp/out"
check "the degraded cable is routed over again" [ "$(hops chip0_0_0 chip1_0_0)" = "$link" ]
ctl fault link "$link" up > "$tmp/out" 2> "$tmp/err"
check "fault link $link up" grep -q "changed=2 " "$tmp/out"
ctl fault link "$link" up > "$tmp/out" 2> "$tmp/err"
check "up again: nothing to change" grep -q "changed=0 " "$tmp/out"

# ---- a chip cut off ----

gen1=$(generation)
ctl fault node chip3_3_3 down > "$tmp/out" 2> "$tmp/err"
cat "$tmp/out" "$tmp/err" | sed 's/^/# /'
check "fault node chip3_3_3 down: its 12 links" grep -q "changed=12 " "$tmp/out"
check "... 126 endpoint pairs newly unreachable, named" \
	grep -q "unreachable=126 newly_unreachable=126 .*pairs=.*chip3_3_3" "$tmp/out"
timeout 120 "$icfabctl" probe 0 63 > "$tmp/probe1" 2>&1
check "a transfer to chip3_3_3 fails with EHOSTUNREACH" grep -q "status=EHOSTUNREACH" "$tmp/probe1"
sed 's/^/# /' "$tmp/probe1"
r=$(a2a_errors)
check "all-to-all: exactly the 126 transfers from and to chip3_3_3 fail ($r)" [ "$r" = "4032 126" ]

# ---- restart: the module keeps the faults ----

stop_daemon
gen2=$(generation)
check "icfabd restarts" start_daemon "$tmp/log2"
check "... without a commit" [ "$(generation)" = "$gen2" ]
ctl fault node chip3_3_3 up > "$tmp/out" 2> "$tmp/err"
check "fault node chip3_3_3 up after the restart: 12 links, 126 pairs back" \
	grep -q "changed=12 .*unreachable=0 .*reachable_again=126" "$tmp/out"
r=$(a2a_errors)
check "all-to-all completes again ($r)" [ "$r" = "4032 0" ]
check "fault changes were single commits ($gen1 -> $((gen1 + 2)))" [ "$(generation)" = "$((gen1 + 2))" ]

echo "1..$n"
exit $failed
