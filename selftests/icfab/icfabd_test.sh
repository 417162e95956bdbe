#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# icfabd against the real module, in the test VM (as root): --apply is a
# difference applied in one commit and --diff reads it back identical; a
# second --apply changes nothing; a broken file and an unprivileged user
# change nothing and say why; the daemon adopts a running configuration
# after kill -9 without committing, follows a link taken down by another
# client with new routes that avoid it, re-applies its file on SIGHUP and
# leaves on SIGTERM with the module configured; the socket's connection
# limits keep one uid's half-written lines from locking out another uid
# or root, and its timeouts close them; the 4096-endpoint
# tpu-v4-pod loads and reads back; a file's switching mode reaches the
# module, reads back, shows in a diff and in icfabctl link list. TAP
# output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
icfabd=${ICFABD:-$top/build/bin/icfabd}
tmp=$(mktemp -d)
dpid=
trap 'cleanup' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"

cleanup() {
	[ -n "$dpid" ] && kill -9 "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	rm -rf "$tmp"
}

# state PRESET: $gen and $nodes of the module, $same=0 when it runs PRESET
state() {
	"$icfabd" --diff --preset "$1" > "$tmp/diff" 2>&1
	same=$?
	line=$(grep -E '^(identical|different):' "$tmp/diff")
	gen=$(echo "$line" | sed -n 's/.*(generation \([0-9][0-9]*\).*/\1/p')
	nodes=$(echo "$line" | sed -n 's/.*(generation [0-9]*, \([0-9]*\) nodes.*/\1/p')
}

# wait_gen PRESET GENERATION SECONDS: until the module is at GENERATION
wait_gen() {
	i=0
	while [ $i -lt $(($3 * 2)) ]; do
		state "$1"
		[ "$gen" = "$2" ] && return 0
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}

start_daemon() {	# start_daemon LOG
	"$icfabd" --foreground --preset tpu-v4-cube > "$1" 2>&1 &
	dpid=$!
	wait_for "$1" "ready:" 120
}

echo "TAP version 13"

# ---- one-shot apply and diff ----

check "apply dgx-h100 (whatever ran before)" \
	sh -c "'$icfabd' --apply --preset dgx-h100 > '$tmp/out'"
state dgx-h100
g0=$gen
"$icfabd" --apply --preset tpu-v4-cube > "$tmp/out" 2> "$tmp/err"
rc=$?
cat "$tmp/out" "$tmp/err" | sed 's/^/# /'
check "apply tpu-v4-cube over it: exit 0" test $rc -eq 0
check "apply: says what changed" \
	grep -qE "^applied tpu-v4-cube: generation $g0 -> $((g0 + 1)) \(64 nodes, 384 links, 64 route rows changed; nodes \+[0-9]+ -0 ~[0-9]+" "$tmp/out"
state tpu-v4-cube
check "diff: identical after apply (round trip)" test $same -eq 0
check "the generation moved by exactly 1" test "$gen" = $((g0 + 1))
check "64 nodes read back" test "$nodes" = 64
g1=$gen

"$icfabd" --apply --preset tpu-v4-cube > "$tmp/out" 2>&1
rc=$?
check "apply again: exit 0" test $rc -eq 0
check "apply again: nothing to do" grep -q "^unchanged: the module runs tpu-v4-cube already" "$tmp/out"
state tpu-v4-cube
check "apply again: generation unchanged" test "$gen" = "$g1"

"$icfabd" --diff --preset dgx-h100 > "$tmp/out" 2>&1
rc=$?
check "diff against another preset: exit 1" test $rc -eq 1
check "diff: lists nodes and routes" \
	sh -c "grep -q '^- node 9 ' '$tmp/out' && grep -q '^different:' '$tmp/out'"

# ---- rejected changes change nothing ----

cp "$top/lib/tests/bad/port-in-use.yaml" "$tmp/broken.yaml"
"$icfabd" --apply "$tmp/broken.yaml" > "$tmp/out" 2> "$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/err"
check "broken file: exit 1" test $rc -eq 1
check "broken file: reported as file:line" \
	grep -qE "broken.yaml:[0-9]+: " "$tmp/err"
state tpu-v4-cube
check "broken file: module unchanged" \
	test "$same" -eq 0 -a "$gen" = "$g1" -a "$nodes" = 64

setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$(for_nobody "$icfabd")" --apply --preset dgx-h100 > "$tmp/out" 2> "$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/err"
check "unprivileged apply: exit 1" test $rc -eq 1
check "unprivileged apply: EPERM, CAP_NET_ADMIN named" \
	sh -c "grep -q 'Operation not permitted' '$tmp/err' && grep -q CAP_NET_ADMIN '$tmp/err'"
state tpu-v4-cube
check "unprivileged apply: module unchanged" \
	test "$same" -eq 0 -a "$gen" = "$g1" -a "$nodes" = 64

# ---- the daemon ----

start_daemon "$tmp/d1.log"
check "daemon: ready" test $? -eq 0
check "daemon: adopted the running configuration" \
	grep -q "adopted without changes" "$tmp/d1.log"
kill -9 "$dpid"
wait "$dpid" 2>/dev/null
dpid=

start_daemon "$tmp/d2.log"
check "daemon after kill -9: ready again" test $? -eq 0
check "daemon after kill -9: adopted without changes" \
	grep -q "adopted without changes" "$tmp/d2.log"
state tpu-v4-cube
check "daemon after kill -9: no commit (generation unchanged)" \
	test "$same" -eq 0 -a "$gen" = "$g1"

"$icfabd" --link-state 0 down > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out" | sed 's/^/# /'
check "another client takes link 0 down" test $rc -eq 0
check "daemon: recomputed and committed routes (generation +2)" \
	wait_gen tpu-v4-cube $((g1 + 2)) 60
sed 's/^/# /' "$tmp/d2.log"
check "daemon: logged the link-state change" \
	grep -q "1 links changed state: recomputing routes" "$tmp/d2.log"
"$icfabd" --status > "$tmp/status" 2>&1
sed 's/^/# /' "$tmp/status"
check "status: one link down" grep -q "384 links (1 down, 0 degraded)" "$tmp/status"
check "no route leaves by the down link, none is missing" \
	grep -q "routes: 4032 endpoint pairs, 0 unreachable, 0 entries leave by a down link, 0 by a port without a link" "$tmp/status"
state tpu-v4-cube
check "diff: only link state and routes differ from the file" \
	grep -qE "^different: .*nodes \+0 -0 ~0, links \+0 -0 ~0, 1 link states, [1-9][0-9]* route rows" "$tmp/diff"
g2=$gen

kill -HUP "$dpid"
check "SIGHUP: the file is applied again" wait_gen tpu-v4-cube $((g2 + 1)) 60
check "SIGHUP: identical to the file" test "$same" -eq 0

kill -TERM "$dpid"
wait "$dpid"
rc=$?
dpid=
check "SIGTERM: exit 0" test $rc -eq 0
check "SIGTERM: says the module keeps its configuration" \
	grep -q "exiting; the module keeps generation" "$tmp/d2.log"
state tpu-v4-cube
check "SIGTERM: module still configured" test "$same" -eq 0 -a "$nodes" = 64

# ---- the socket's limits and timeouts (docs/SOCKET.md) ----

# 8 slots, the last 2 for administrators, 4 per uid; a line must end
# within 4 s and a connection idle for 6 s is closed.
chmod 755 "$tmp"	# other uids reach the socket
"$icfabd" --foreground --preset tpu-v4-cube --socket "$tmp/limits.sock" \
	--max-clients 8 --admin-slots 2 --max-per-uid 4 \
	--idle-timeout 6 --line-timeout 4 > "$tmp/d3.log" 2>&1 &
dpid=$!
check "limits: the daemon serves a socket with small limits" \
	wait_for "$tmp/d3.log" "serving" 120
python3 - "$tmp/limits.sock" > "$tmp/limits.out" 2>&1 <<'PY'
import os, select, socket, sys, time

def connect(uid):
    """A connection whose SO_PEERCRED is @uid (this script runs as root)."""
    s = socket.socket(socket.AF_UNIX)
    if uid:
        os.setegid(uid)
        os.seteuid(uid)
    try:
        s.connect(sys.argv[1])
    finally:
        os.seteuid(0)
        os.setegid(0)
    s.settimeout(20)
    f = s.makefile('rb')
    return s, f, f.readline().decode().strip()

def ask(who, s, f, req):
    s.sendall(req)
    print('%s %s: %s' % (who, req.decode().strip(), f.readline().decode().strip()))

# nobody leaves half-written lines on as many connections as it may
half = []
for i in range(6):
    s, f, hello = connect(65534)
    print('nobody %d: %s' % (i, hello))
    if hello == 'icfabd 1':
        s.sendall(b'circuit-li')
        half.append((s, f))
t_half = time.time()
# the last one trickles its line a byte at a time, which does not help
trickle = half[-1][0]
# another uid and root are still served
s1, f1, hello = connect(1234)
print('uid1234: %s' % hello)
ask('uid1234', s1, f1, b'circuit-list\n')
t_idle = time.time()
r1, rf1, hello = connect(0)
print('root 1: %s' % hello)
ask('root 1', r1, rf1, b'circuit-list\n')
# 6 held: the last 2 slots are for administrators
s2, f2, hello = connect(1235)
print('uid1235: %s' % hello)
r2, rf2, hello = connect(0)
print('root 2: %s' % hello)
r3, rf3, hello = connect(0)
print('root 3: %s' % hello)
s4, f4, hello = connect(0)
print('root 4: %s' % hello)
r3.close()
# For 10 s: root 2 asks every second (requests keep a connection from
# idling out), the last half line grows a byte every half second (which
# does not keep it), and we note when the others are closed, and how.
watch = {'nobody %d' % i: f for i, (s, f) in enumerate(half)}
watch['uid1234'] = f1
start = {k: t_half for k in watch}
start['uid1234'] = t_idle
served = 0
t_end = time.time() + 10
tick = 0
while time.time() < t_end:
    time.sleep(0.5)
    tick += 1
    try:
        trickle.sendall(b's')
    except OSError:
        pass
    if tick % 2 == 0:
        r2.sendall(b'circuit-list\n')
        served += rf2.readline().decode().startswith('ok ')
    for who, f in list(watch.items()):
        r, _, _ = select.select([f], [], [], 0)
        if r:
            line = f.readline().decode().strip()
            eof = f.readline() == b''
            after = time.time() - start[who]
            print('%s closed=%s after3=%s before9=%s: %s' %
                  (who, eof, after >= 3, after < 9, line))
            del watch[who]
print('root 2: %d of %d requests served%s' %
      (served, tick // 2, ', every one' if served == tick // 2 else ''))
for who in watch:
    print('%s: still open' % who)
s, f, hello = connect(65534)
print('nobody again: %s' % hello)
PY
sed 's/^/# /' "$tmp/limits.out"
check "limits: a uid gets its 4 connections" \
	test "$(grep -c '^nobody [0-3]: icfabd 1$' "$tmp/limits.out")" = 4
check "limits: ... and no fifth, EUSERS" \
	grep -q '^nobody 4: err EUSERS too many connections from this uid (4)$' "$tmp/limits.out"
check "limits: another uid is served meanwhile" \
	grep -q '^uid1234 circuit-list: err EACCES\|^uid1234 circuit-list: ok count=' "$tmp/limits.out"
check "limits: root is served meanwhile" \
	grep -q '^root 1 circuit-list: ok count=' "$tmp/limits.out"
check "limits: the last 2 of 8 slots are refused to users, EBUSY" \
	grep -q '^uid1235: err EBUSY too many connections: the last 2 of 8 are for administrators$' "$tmp/limits.out"
check "limits: ... and taken by root" \
	sh -c "grep -q '^root 2: icfabd 1$' '$tmp/limits.out' && grep -q '^root 3: icfabd 1$' '$tmp/limits.out'"
check "limits: a ninth connection is refused to root too" \
	grep -q '^root 4: err EBUSY too many connections (8)$' "$tmp/limits.out"
check "limits: requests keep a connection from idling out" \
	grep -qE '^root 2: (9|10) of (9|10) requests served, every one$' "$tmp/limits.out"
check "limits: half-written lines are closed after the line timeout" \
	test "$(grep -c '^nobody [0-3] closed=True after3=True before9=True: err ETIMEDOUT a request line must end within 4000 ms$' "$tmp/limits.out")" = 4
check "limits: an idle connection is closed after the idle timeout" \
	grep -q '^uid1234 closed=True after3=True before9=True: err ETIMEDOUT idle for 6000 ms$' "$tmp/limits.out"
check "limits: then the uid may connect again" \
	grep -q '^nobody again: icfabd 1$' "$tmp/limits.out"
stop_daemon

# ---- the largest preset ----

t0=$(date +%s.%N)
"$icfabd" --apply --preset tpu-v4-pod > "$tmp/out" 2> "$tmp/err"
rc=$?
t1=$(date +%s.%N)
cat "$tmp/out" "$tmp/err" | sed 's/^/# /'
echo "# tpu-v4-pod apply: $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s wall"
check "tpu-v4-pod: applied" test $rc -eq 0
t0=$(date +%s.%N)
state tpu-v4-pod
t1=$(date +%s.%N)
sed 's/^/# /' "$tmp/diff"
echo "# tpu-v4-pod diff (readback): $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s wall"
check "tpu-v4-pod: identical on readback, 4096 nodes" \
	test "$same" -eq 0 -a "$nodes" = 4096

# ---- switching modes ----

sf=$tmp/sf.yaml ct=$tmp/ct.yaml
printf 'topology:\n  switch: {endpoints: 4, bandwidth: 100GB/s, latency: 500ns}\n' > "$sf"
printf 'defaults: {link: {switching: cut-through}}\n' | cat - "$sf" > "$ct"
"$icfabd" --apply "$sf" > /dev/null 2>&1
"$icfabd" --apply "$ct" > "$tmp/out" 2> "$tmp/err"
rc=$?
cat "$tmp/out" "$tmp/err" | sed 's/^/# /'
check "cut-through file over the same in store and forward: 8 links replaced" 	test $rc -eq 0 -a -n "$(grep -E 'links \+0 -0 ~8,' "$tmp/out")"
"$icfabd" --diff "$ct" > "$tmp/out" 2>&1
check "cut-through: identical on readback" test $? -eq 0
"$top/build/bin/icfabctl" link list > "$tmp/links.txt" 2>&1
"$top/build/bin/icfabctl" -j link list > "$tmp/links.json" 2>&1
check "icfabctl link list shows cut-through, text and JSON" \
	sh -c "test \$(grep -c ' cut-through ' '$tmp/links.txt') -eq 8 &&
	       python3 -c 'import json, sys; sys.exit(0 if {l[\"switching\"] for l in json.load(open(sys.argv[1]))[\"links\"]} == {\"cut-through\"} else 1)' '$tmp/links.json'"
"$icfabd" --diff "$sf" > "$tmp/out" 2>&1
rc=$?
check "store and forward against it: different, the diff names cut-through" 	test $rc -eq 1 -a -n "$(grep -e '-> .*cut-through' "$tmp/out")"
"$icfabd" --apply "$sf" > /dev/null 2>&1
"$icfabd" --diff "$sf" > /dev/null 2>&1
check "back to store and forward: identical on readback" test $? -eq 0
"$top/build/bin/icfabctl" -j link list > "$tmp/links.json" 2>&1
check "icfabctl link list -j: store-and-forward again" python3 -c '
import json, sys
sys.exit(0 if {l["switching"] for l in json.load(open(sys.argv[1]))["links"]} == {"store-and-forward"} else 1)' "$tmp/links.json"

echo "1..$n"
exit $failed
