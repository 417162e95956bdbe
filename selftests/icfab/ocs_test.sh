#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# OCS reconfiguration through icfabd's socket, in the test VM (as root).
# Endpoints a b c d (ids 0..3) on copper pairs a-b and c-d, joined by a
# 2-port OCS: identity = circuits a-c and b-d. Bad requests (an unknown
# OCS, an unknown port, a list that is not a permutation, a user) change
# nothing. Hold policy, delay D = 10 ms: the swap to a-d and b-c reports
# its phases (begin T = FABRIC_COMMIT_PS, circuits up at T + D); a
# transfer a -> d, attached before the commit, crosses the new circuit
# and finishes no earlier than T + D; the routes use the new circuit.
# Fail policy: a transfer meeting a dark circuit fails with ENETDOWN.
# A restarted daemon reads the permutation and the dark period back from
# the module instead of the file's. TAP.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
icfabd=${ICFABD:-$top/build/bin/icfabd}
icfabctl=${ICFABCTL:-$top/build/bin/icfabctl}
tmp=$(mktemp -d)
chmod 755 "$tmp"	# user 65534 reaches the socket
sock=$tmp/icfabd.sock
dpid=
ppid_=
trap 'cleanup' EXIT
n=0
failed=0
D=10000000000		# 10 ms in ps

. "$(dirname "$0")/lib.sh"

cleanup() {
	[ -n "$ppid_" ] && kill "$ppid_" 2>/dev/null
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	rm -rf "$tmp"
}

start_daemon() {	# start_daemon LOG
	"$icfabd" --foreground --config "$tmp/ocs.yaml" --socket "$sock" \
		> "$1" 2>&1 &
	dpid=$!
	wait_for "$1" "serving" 60
}

hops() {	# hops SRC DST: "name:port>name:port class" per hop
	"$icfabctl" -j route show "$1" "$2" |
		python3 -c 'import json,sys; print(" ".join("%s:%d>%s:%d/%s" % (h["src_name"], h["src_port"], h["dst_name"], h["dst_port"], h["class"]) for h in json.load(sys.stdin)["hops"]))'
}

val() {		# val FILE KEY: KEY=value from the first line
	sed -n "1s/.* $2=\([^ ]*\).*/\1/p" "$1"
}

topology() {	# topology POLICY
	cat > "$tmp/ocs.yaml" <<EOF
defaults:
  link: {bandwidth: 50GB/s, latency: 500ns, class: ici}
nodes:
  - {name: a, kind: endpoint, ports: 2}
  - {name: b, kind: endpoint, ports: 2}
  - {name: c, kind: endpoint, ports: 2}
  - {name: d, kind: endpoint, ports: 2}
links:
  - {from: "a:0", to: "b:0"}
  - {from: "c:0", to: "d:0"}
ocs:
  - name: ocs0
    ports: 2
    delay: 10ms
    policy: $1
    permutation: [0, 1]
    bandwidth: 25GB/s
    latency: 1us
    in: ["a:1", "b:1"]
    out: ["c:1", "d:1"]
EOF
}

echo "TAP version 13"

topology hold
check "icfabd --check accepts the OCS topology" "$icfabd" --check "$tmp/ocs.yaml"
check "the OCS topology is applied" sh -c "'$icfabd' --apply '$tmp/ocs.yaml' > '$tmp/apply' 2>&1"
check "icfabd starts and serves its socket" start_daemon "$tmp/log1"
ctl ocs list > "$tmp/list" 2>&1
sed 's/^/# /' "$tmp/list"
check "ocs list: identity, circuits a-c and b-d, hold, 10 ms, none dark" \
	grep -q "ocs name=ocs0 ports=2 delay_ps=$D policy=hold perm=0,1 dark_until_ps=0 circuits=a:1-c:1,b:1-d:1" "$tmp/list"
h=$(hops a d)
check "a -> d takes 2 hops, one over the OCS ($h)" \
	sh -c "[ \$(echo '$h' | wc -w) = 2 ] && echo '$h' | grep -q /ocs"

# ---- refusals ----

gen0=$(generation)
ctl ocs apply ocs9 1 0 > "$tmp/out" 2> "$tmp/err"
check "an unknown OCS: refused, exit 1" [ $? = 1 ]
check "... naming it" grep -q "ocs ocs9: no such OCS" "$tmp/err"
ctl ocs apply ocs0 0:5 > "$tmp/out" 2> "$tmp/err"
check "an unknown port: refused" grep -q "ocs ocs0: port 0 -> 5: no output port 5 (ports 0..1)" "$tmp/err"
ctl ocs apply ocs0 7:0 > "$tmp/out" 2> "$tmp/err"
check "an unknown input port: refused" grep -q "no input port 7" "$tmp/err"
ctl ocs apply ocs0 0 0 > "$tmp/out" 2> "$tmp/err"
check "not a permutation: refused" \
	grep -q "ocs ocs0: port 1 -> 0: output 0 is already the target of port 0" "$tmp/err"
ctl ocs apply ocs0 1 > "$tmp/out" 2> "$tmp/err"
check "too short a permutation: refused" grep -q "the permutation has 1 entries, the OCS has 2 ports" "$tmp/err"
nobody ocs apply ocs0 1 0 > "$tmp/out" 2> "$tmp/err"
check "user 65534: refused" grep -q "needs an administrator" "$tmp/err"
nobody ocs list > "$tmp/out" 2> "$tmp/err"
check "user 65534 may not list either" grep -q "needs an administrator" "$tmp/err"
check "the refusals changed nothing (generation $gen0)" [ "$(generation)" = "$gen0" ]
ctl ocs list > "$tmp/list2" 2>&1
check "... and the permutation is the same" cmp -s "$tmp/list" "$tmp/list2"
ctl ocs apply ocs0 0 1 > "$tmp/out" 2> "$tmp/err"
check "the permutation in place: nothing to do" grep -q "changes=0" "$tmp/out"
check "... no commit" [ "$(generation)" = "$gen0" ]

# ---- hold: the swap, with a transfer a -> d attached before it ----

timeout 120 "$icfabctl" probe -w 5 0 3 > "$tmp/probe0" 2>&1 &
ppid_=$!
sleep 2
ctl ocs apply ocs0 1 0 > "$tmp/apply0" 2> "$tmp/err"
check "ocs apply ocs0 1 0 (hold), with a context attached" [ $? = 0 ]
sed 's/^/# /' "$tmp/apply0" "$tmp/err"
T=$(val "$tmp/apply0" begin_ps)
U=$(val "$tmp/apply0" up_at_ps)
check "2 circuits change, up at begin + 10 ms" \
	sh -c "grep -q 'changes=2 ' '$tmp/apply0' && [ -n '$T' ] && [ '$U' = \$(($T + $D)) ]"
check "the phases: begin, links-down, routes, circuits-up, with fabric times" \
	sh -c "grep -q 'phase name=begin t_ps=$T\$' '$tmp/apply0' &&
	       grep -q 'phase name=links-down t_ps=$T links=' '$tmp/apply0' &&
	       grep -q 'phase name=routes t_ps=$T ' '$tmp/apply0' &&
	       grep -q 'phase name=circuits-up t_ps=$U links=' '$tmp/apply0'"
check "begin is the module's FABRIC_COMMIT_PS" \
	sh -c "'$icfabctl' -j fabric show | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)[0][\"commit_ps\"] != $T)'"
check "the daemon logged the phases" \
	sh -c "grep -q 'ocs ocs0: begin T=$T ps' '$tmp/log1' && grep -q 'ocs ocs0: circuits up at T+$D ps = $U ps' '$tmp/log1'"
"$icfabctl" -j link list > "$tmp/links.json"
# In virtual time the engine's clock may already be past T + D when
# nothing is in flight: then LINK_GET no longer reports the hold.
check "LINK_GET: the new circuit links are dark until $U in hold mode, or up" python3 -c '
import json, sys
ls = [l for l in json.load(open(sys.argv[1]))["links"] if l.get("up_at_ps")]
for l in ls:
    print("# link %d up_at_ps=%d hold_fail=%s" % (l["id"], l["up_at_ps"], l["hold_fail"]))
if not ls:
    print("# LINK_GET reports no dark link: the fabric clock is past T + D")
sys.exit(not (len(ls) in (0, 4) and all(l["up_at_ps"] == int(sys.argv[2]) and not l["hold_fail"] for l in ls)))' "$tmp/links.json" "$U"
wait "$ppid_"
rc=$?
ppid_=
sed 's/^/# /' "$tmp/probe0"
F=$(sed -n 's/.*finish_ps=\([0-9]*\).*/\1/p' "$tmp/probe0")
check "the transfer a -> d completed" sh -c "[ $rc = 0 ] && grep -q 'status=ok' '$tmp/probe0'"
check "... no earlier than T + D ($F >= $U)" sh -c "[ -n '$F' ] && [ '$F' -ge '$U' ]"
check "a -> d now takes the new circuit a:1-d:1" [ "$(hops a d)" = "a:1>d:1/ocs" ]
check "b -> c too" [ "$(hops b c)" = "b:1>c:1/ocs" ]
ctl ocs list > "$tmp/list" 2>&1
check "ocs list: 1,0, circuits a-d and b-c" grep -q "perm=1,0 dark_until_ps=[0-9]* circuits=a:1-d:1,b:1-c:1" "$tmp/list"

# ---- restart: the module's permutation, not the file's ----

gen1=$(generation)
stop_daemon
check "icfabd restarts with the file (identity)" start_daemon "$tmp/log2"
check "... adopts the module's permutation" grep -q "ocs ocs0: the module runs another permutation" "$tmp/log2"
check "... without a commit" [ "$(generation)" = "$gen1" ]
ctl ocs list > "$tmp/list" 2>&1
check "ocs list after the restart: 1,0" grep -q "perm=1,0 .*circuits=a:1-d:1,b:1-c:1" "$tmp/list"
ctl ocs apply ocs0 0:0 1:1 > "$tmp/apply1" 2> "$tmp/err"
check "back to the identity, by pairs" grep -q "changes=2 .*perm=0,1" "$tmp/apply1"

# ---- fail: a transfer meeting a dark circuit ----

stop_daemon
topology fail
check "icfabd starts on the fail-policy file" start_daemon "$tmp/log3"
ctl ocs list > "$tmp/list" 2>&1
check "ocs list: policy fail" grep -q "policy=fail perm=0,1" "$tmp/list"
timeout 120 "$icfabctl" probe -w 5 0 3 > "$tmp/probe1" 2>&1 &
ppid_=$!
sleep 2
ctl ocs apply ocs0 1 0 > "$tmp/apply2" 2> "$tmp/err"
check "ocs apply ocs0 1 0 (fail)" grep -q "changes=2 .*policy=fail" "$tmp/apply2"
wait "$ppid_"
ppid_=
sed 's/^/# /' "$tmp/probe1"
check "a transfer a -> d meeting the dark circuit fails with ENETDOWN" \
	grep -q "status=ENETDOWN" "$tmp/probe1"
"$icfabctl" -j link list > "$tmp/links.json"
check "LINK_GET: the dark circuits fail traffic (HOLD_FAIL)" python3 -c '
import json, sys
ls = [l for l in json.load(open(sys.argv[1]))["links"] if l.get("up_at_ps")]
sys.exit(not (len(ls) == 4 and all(l["hold_fail"] for l in ls)))' "$tmp/links.json"
check "the routes use the new permutation" [ "$(hops a d)" = "a:1>d:1/ocs" ]

echo "1..$n"
exit $failed
