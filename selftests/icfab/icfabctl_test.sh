#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# icfabctl against the real module, in the test VM: the JSON agrees with
# the ioctl and netlink, kernel errors reach the user as text, a changed
# parameter is seen by both interfaces and by a monitor, and an
# unprivileged user is refused. TAP output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
ctl=${ICFABCTL:-$top/build/bin/icfabctl}
tmp=$(mktemp -d)
trap 'kill $mon 2>/dev/null; rm -rf "$tmp"' EXIT
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

json() {	# json FILE EXPR: evaluate a Python expression on FILE's JSON
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}

echo "TAP version 13"

"$ctl" -j info > "$tmp/info.json"
check "info -j: ABI 1, netlink feature, default parameters" \
	json "$tmp/info.json" 'd["abi_version"] == 1 and "netlink" in d["feature_names"] and d["segment_size"] == 4096 and d["time_mode"] == "virtual"'

"$ctl" -j fabric show > "$tmp/show.json"
check "fabric show -j: one fabric, same generation as info" \
	sh -c "python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if len(a) == 1 and a[0][\"generation\"] == b[\"generation\"] else 1)' $tmp/show.json $tmp/info.json"

"$ctl" -j monitor > "$tmp/monitor.json" &
mon=$!
sleep 1

check "fabric set: accepted" "$ctl" fabric set segment-size 8192 dilation 7

"$ctl" -j info > "$tmp/info2.json"
check "info sees the change and a new generation" \
	json "$tmp/info2.json" 'd["segment_size"] == 8192 and d["dilation"] == 7 and d["generation"] >= 1'

"$ctl" fabric set segment-size 10 2> "$tmp/err" > /dev/null
rc=$?
check "out-of-range value: exit 1" test $rc -eq 1
check "out-of-range value: the kernel's message is shown" \
	grep -q "kernel reports: integer out of range" "$tmp/err"
check "out-of-range value: nothing changed" \
	sh -c "'$ctl' -j info | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)[\"segment_size\"] == 8192 else 1)'"

check "unknown keyword: usage error (exit 2), nothing sent" \
	sh -c "'$ctl' fabric set segment-sise 8192 2>/dev/null; test \$? -eq 2"

check "unprivileged fabric set: refused" \
	sh -c "setpriv --reuid=65534 --regid=65534 --clear-groups '$ctl' fabric set segment-size 4096 2>&1 | grep -q 'Operation not permitted'"

"$ctl" fabric set segment-size 4096 dilation 1
sleep 1
kill $mon 2>/dev/null
wait $mon 2>/dev/null
check "monitor saw both changes, in order" \
	python3 -c 'import json,sys
ev=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
seg=[e["segment_size"] for e in ev]
sys.exit(0 if seg[-2:] == [8192, 4096] else 1)' "$tmp/monitor.json"

echo "1..$n"
exit $failed
