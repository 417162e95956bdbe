#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Circuits through icfabd's socket, in the test VM (as root), on a 3x2
# mesh whose routers have 4 colors: circuits are opened until the budget
# at a router is gone; the next request fails naming the full router;
# the requester's exit frees its circuit and the request then succeeds;
# a circuit to a missing node and a malformed request change nothing;
# user 65534 (in the group icfab) may open and close its own circuits
# but not pin one or close root's; a restarted daemon keeps every
# circuit, frees the one whose owner exited meanwhile, and allocates
# from the module's state. TAP.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
icfabd=${ICFABD:-$top/build/bin/icfabd}
icfabctl=${ICFABCTL:-$top/build/bin/icfabctl}
tmp=$(mktemp -d)
chmod 755 "$tmp"	# user 65534 reaches the socket
sock=$tmp/icfabd.sock
dpid=
holders=
trap 'cleanup' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"

cleanup() {
	for p in $holders; do
		kill "$p" 2>/dev/null
	done
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	# Whatever a failed test left in the module goes with its owners.
	sleep 0.5
	rm -rf "$tmp"
}

count() {
	ctl circuit list | grep -c '^circuit '
}

# wait_count N SECONDS: until the module holds N circuits
wait_count() {
	i=0
	while [ $i -lt $(($2 * 4)) ]; do
		[ "$(count)" = "$1" ] && return 0
		sleep 0.25
		i=$((i + 1))
	done
	return 1
}

# hold NAME [--as-nobody] SRC DST...: a process holding a circuit; sets
# NAME_pid, NAME_id, NAME_color
hold() {
	name=$1
	shift
	# Simple commands, so that $! is icfabctl's pid (setpriv and env exec).
	if [ "$1" = --as-nobody ]; then
		shift
		[ -n "$icfabctl_nobody" ] ||
			icfabctl_nobody=$(for_nobody "$icfabctl") || return 1
		setpriv --reuid=65534 --regid=65534 --groups icfab \
			env ICFABD_SOCKET="$sock" "$icfabctl_nobody" circuit open "$@" \
			> "$tmp/$name.out" 2> "$tmp/$name.err" &
	else
		ICFABD_SOCKET=$sock "$icfabctl" circuit open "$@" \
			> "$tmp/$name.out" 2> "$tmp/$name.err" &
	fi
	eval "${name}_pid=$!"
	holders="$holders $!"
	wait_for "$tmp/$name.out" '^circuit ' 30 || return 1
	eval "${name}_id=$(sed -n 's/^circuit \([0-9]*\):.*/\1/p' "$tmp/$name.out")"
	eval "${name}_color=$(sed -n 's/.*color \([0-9]*\) .*/\1/p' "$tmp/$name.out")"
}

start_daemon() {	# start_daemon LOG
	"$icfabd" --foreground --config "$tmp/mesh.yaml" --socket "$sock" \
		> "$1" 2>&1 &
	dpid=$!
	wait_for "$1" "serving" 60
}

echo "TAP version 13"

cat > "$tmp/mesh.yaml" <<'EOF'
defaults:
  switch: {colors: 4}
topology:
  mesh: {dims: [3, 2], routers: true, bandwidth: 4GB/s, latency: 1ns}
EOF

check "the 3x2 mesh with 4-color routers is applied" \
	sh -c "'$icfabd' --apply '$tmp/mesh.yaml' > '$tmp/apply' 2>&1"
check "icfabd starts and serves its socket" start_daemon "$tmp/log1"
check "no circuits at the start" [ "$(count)" = 0 ]

# The circuit tracepoints, in a tracefs instance of this test's own.
inst=/sys/kernel/tracing/instances/circuit_test$$
check "a tracefs instance with icfab_circuit_alloc/free enabled" sh -c "
	mkdir '$inst' &&
	echo 1 > '$inst/events/icfab/icfab_circuit_alloc/enable' &&
	echo 1 > '$inst/events/icfab/icfab_circuit_free/enable'"

# ---- the budget ----

check "circuit 1 pe0_0 -> pe2_0 (rt0_0 rt1_0 rt2_0)" hold h1 pe0_0 pe2_0
check "circuit 2" hold h2 pe0_0 pe2_0
check "circuit 3" hold h3 pe0_0 pe2_0
check "circuit 4" hold h4 pe0_0 pe2_0
check "icfab_circuit_alloc fired for colors 0..3, 3 routers each" sh -c "
	grep -o 'icfab_circuit_alloc: fabric=0 id=[0-9]* color=[0-9] src=0 nr_dsts=1 nr_routers=3' '$inst/trace' |
		sed 's/.*color=\([0-9]\).*/\1/' | sort | tr '\n' ' ' | grep -qx '0 1 2 3 '"
check "colors 0..3, one each" \
	[ "$(printf '%s\n' $h1_color $h2_color $h3_color $h4_color | sort | tr '\n' ' ')" = "0 1 2 3 " ]
ctl colors > "$tmp/colors"
check "icfabctl colors: rt1_0 at 4/4" grep -q '^rt1_0 .* 4/4 colors in use: 0,1,2,3' "$tmp/colors"
check "icfabctl colors: rt1_1 at 0/4" grep -q '^rt1_1 .* 0/4 colors in use$' "$tmp/colors"
ctl -j colors > "$tmp/colors.json"
check "icfabctl -j colors is JSON with 6 routers" \
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(len(d['routers']) != 6 or d['used'] != 12)" "$tmp/colors.json"
ctl -j circuit list > "$tmp/list.json"
check "icfabctl -j circuit list: 4 circuits with owner pids and 3 routers each" \
	python3 -c "
import json,sys
d = json.load(open(sys.argv[1]))
c = d['circuits']
sys.exit(not (len(c) == 4 and all(x['owner_pid'] > 0 and x['router_names'] == ['rt0_0','rt1_0','rt2_0'] and x['dst_names'] == ['pe2_0'] for x in c)))" "$tmp/list.json"

ctl circuit list > "$tmp/before"
ctl colors > "$tmp/colors_before"
ctl circuit open pe1_0 pe2_0 > "$tmp/out" 2> "$tmp/err"
rc=$?
check "a fifth circuit through rt1_0 is refused (exit 1)" [ $rc = 1 ]
check "... naming the full router: router (1,0): 4/4 colors in use" \
	grep -q 'icfabd reports: router (1,0): 4/4 colors in use' "$tmp/err"
check "... with ENOSPC" grep -q 'No space left on device' "$tmp/err"
ctl circuit list > "$tmp/after"
check "... and nothing changed" cmp -s "$tmp/before" "$tmp/after"

# ---- bad requests ----

ctl circuit open pe0_0 pe9_9 > "$tmp/out" 2> "$tmp/err"
rc=$?
check "a circuit to a missing node is refused" [ $rc = 1 ]
check "... naming it" grep -q "destination 1: no node named 'pe9_9'" "$tmp/err"
ctl circuit open pe0_1 rt1_1 > "$tmp/out" 2> "$tmp/err"
check "a circuit to a router is refused, naming it" \
	grep -q 'rt1_1 is a switch, not an endpoint' "$tmp/err"
python3 - "$sock" > "$tmp/raw" 2>&1 <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile('r')
print(f.readline().strip())
for req in (b'frobnicate 1 2\n', b'circuit-close x\n', b'circuit-open pe0_0\n'):
    s.sendall(req)
    print(f.readline().strip())
EOF
check "raw protocol: greeting 'icfabd 1'" grep -qx 'icfabd 1' "$tmp/raw"
check "raw protocol: unknown request" grep -qx "err EBADMSG unknown request 'frobnicate'" "$tmp/raw"
check "raw protocol: bad id" grep -qx "err EINVAL circuit-close: 'x' is not a circuit id" "$tmp/raw"
check "raw protocol: missing destination" \
	grep -qx "err EINVAL circuit-open: 1 arguments; usage: circuit-open SRC DST \[DST...\]" "$tmp/raw"
ctl circuit list > "$tmp/after"
ctl colors > "$tmp/colors_after"
check "bad requests changed nothing (circuits and colors)" \
	sh -c "cmp -s '$tmp/before' '$tmp/after' && cmp -s '$tmp/colors_before' '$tmp/colors_after'"

# ---- owner exit ----

kill "$h2_pid"
check "the requester of circuit $h2_id exits: its circuit is freed" wait_count 3 10
check "... and the daemon says so" wait_for "$tmp/log1" "owner pid $h2_pid exited: freed its 1 circuit" 5
check "now the fifth circuit gets the freed color $h2_color" hold h5 pe1_0 pe2_0
check "... color $h2_color" [ "$h5_color" = "$h2_color" ]

# ---- permissions ----

nobody circuit open --pin pe0_1 pe1_1 > "$tmp/out" 2> "$tmp/err"
rc=$?
check "user 65534 may not pin a circuit" [ $rc = 1 ]
check "... EPERM, saying who may" \
	sh -c "grep -q 'circuit-pin needs an administrator (uid 0); uid 65534 is a user' '$tmp/err' && grep -q 'Operation not permitted' '$tmp/err'"
nobody circuit close "$h1_id" > "$tmp/out" 2> "$tmp/err"
rc=$?
check "user 65534 may not close root's circuit $h1_id" [ $rc = 1 ]
check "... saying whose it is" grep -q "circuit $h1_id belongs to uid 0" "$tmp/err"
check "user 65534 may open a circuit (a member of icfab)" hold u1 --as-nobody pe0_1 pe2_1
check "... owned by uid 65534" \
	sh -c "ctl() { ICFABD_SOCKET='$sock' '$icfabctl' \"\$@\"; }; ctl circuit list | grep -q '^circuit $u1_id: pe0_1 -> pe2_1, color 0, owner pid $u1_pid uid 65534'"
check "... and close it itself" nobody circuit close "$u1_id"
check "root's circuits are untouched" wait_count 4 5

# ---- restart ----

check "root pins a circuit pe0_1 -> pe1_1" sh -c "ICFABD_SOCKET='$sock' '$icfabctl' circuit open --pin pe0_1 pe1_1 > '$tmp/pin'"
pin_id=$(sed -n 's/^circuit \([0-9]*\):.*/\1/p' "$tmp/pin")
ctl circuit list > "$tmp/before"
check "the daemon stops (SIGTERM)" stop_daemon
ctl circuit list > "$tmp/after"
check "the module keeps every circuit without the daemon" cmp -s "$tmp/before" "$tmp/after"
kill "$h3_pid"
wait "$h3_pid" 2>/dev/null
ctl circuit list > "$tmp/after"
check "circuit $h3_id's owner exits while no daemon runs: still held" cmp -s "$tmp/before" "$tmp/after"
check "icfabd starts again" start_daemon "$tmp/log2"
check "... frees the circuit of the gone owner" wait_for "$tmp/log2" "owner pid $h3_pid (uid 0) is gone: freed its 1 circuit" 5
check "... and keeps the 4 others (pinned one included)" wait_count 4 5
check "... circuit $pin_id still pinned" sh -c "ICFABD_SOCKET='$sock' '$icfabctl' circuit list | grep -q '^circuit $pin_id: pe0_1 -> pe1_1, color 0, pinned (uid 0)'"
check "the restarted daemon gives the freed color $h3_color" hold h6 pe0_0 pe2_0
check "... color $h3_color" [ "$h6_color" = "$h3_color" ]
ctl circuit open pe0_0 pe1_0 > "$tmp/out" 2> "$tmp/err"
check "... and knows rt1_0 is full again: router (1,0): 4/4 colors in use" \
	grep -q 'router (1,0): 4/4 colors in use' "$tmp/err"
check "requester exit still frees circuits after the restart" \
	sh -c "kill $h4_pid"
check "... circuit $h4_id goes (h1 h5 h6 and the pinned one stay)" wait_count 4 10

# ---- cleanup ----

check "root closes the pinned circuit $pin_id by id" ctl circuit close "$pin_id"
ctl circuit close "$pin_id" > "$tmp/out" 2> "$tmp/err"
check "closing it again: no circuit $pin_id" grep -q "no circuit $pin_id" "$tmp/err"
for p in $holders; do
	kill "$p" 2>/dev/null
done
holders=
check "every holder gone: no circuits left" wait_count 0 10
check "icfab_circuit_free fired for circuit $h4_id and the pinned $pin_id" sh -c "
	grep -q 'icfab_circuit_free: fabric=0 id=$h4_id ' '$inst/trace' &&
	grep -q 'icfab_circuit_free: fabric=0 id=$pin_id .* owner_pid=0' '$inst/trace'"
echo 0 > "$inst/events/icfab/enable" 2>/dev/null
rmdir "$inst" 2>/dev/null
check "the daemon stops" stop_daemon

echo "1..$n"
exit $failed
