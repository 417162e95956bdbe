#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# engine_rate.sh [-b BYTES] [-r RUNS] [N...]: segment-hops per second of a
# timing-only all-to-all, through the module and through the freestanding
# engine on this CPU, for N endpoints (default 64 128 256 512 1024).
#
# The topologies are the ualink-pod preset (1024 accelerators on a
# leaf/spine of 64-port switches) with N endpoints instead of 1024: one
# switch for N = 64, leaves and spines beyond. Each is applied with
# icfabd --apply; the module's link statistics must then count exactly
# the segment-hops the routes give (the check column).
#
# Needs the module loaded and CAP_NET_ADMIN (it replaces the topology of
# fabric 0), so run it in the VM:
#   tools/vm/run -k 6.12 --no-debug -t 1800 -- build/bench/engine_rate.sh
# Columns: see tools/bench/engine_rate.c. ICFAB_ENGINE_RATE=PATH runs
# another build of engine_rate (the VM runner passes ICFAB_* through).

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/build/bin
bench=$top/build/bench
# Another build of engine_rate (say, against an engine being changed).
rate=${ICFAB_ENGINE_RATE:-$bench/engine_rate}
bytes=4096
runs=1

while getopts b:r: opt; do
	case $opt in
	b) bytes=$OPTARG ;;
	r) runs=$OPTARG ;;
	*) echo "usage: engine_rate.sh [-b BYTES] [-r RUNS] [N...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- 64 128 256 512 1024

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

echo "# all-to-all of $bytes bytes per pair, timing only"
echo "# mode       N transfers seg-hops   wall_s    cpu_s  hops/wall   hops/cpu failed check"
for n in "$@"; do
	f=$tmp/a2a-$n.yaml
	"$bin/icfabd" --dump --yaml --preset ualink-pod |
		sed "s/endpoints: 1024/endpoints: $n/; s/name: ualink-pod/name: a2a-$n/" > "$f"
	if ! "$bin/icfabd" --apply "$f" > /dev/null; then
		echo "engine_rate.sh: could not apply $n endpoints" >&2
		exit 1
	fi
	i=0
	while [ $i -lt "$runs" ]; do
		i=$((i + 1))
		"$bin/icfabctl" stats reset > /dev/null 2>&1
		line=$("$rate" -b "$bytes" "$f") || status=1
		# The module's own count of segments carried, over every link.
		carried=$("$bin/icfabctl" -j stats | python3 -c '
import json, sys
print(sum(l["segments"] for l in json.load(sys.stdin)["links"]))')
		want=$(echo "$line" | awk '{ print $4 }')
		[ "$carried" = "$want" ] && check=ok || { check="links:$carried"; status=1; }
		echo "$line $check"
		"$rate" -H -b "$bytes" "$f" || status=1
	done
done
exit $status
