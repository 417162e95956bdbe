#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# topo_bench.sh: how long icfabd takes per preset, and what the module's
# tables cost. A benchmark, not a test: it prints a table and fails only
# when something could not be run.
#
#   make -C daemon TOP=$PWD BUILD=$PWD/build all      (icfabd)
#   tools/bench/topo_bench.sh [-k KERNEL] [PRESET...]  (default: every preset, -k 6.12)
#
# For every preset:
#   check   `icfabd --check --preset P` on this host (load, route, check
#           the tables; built-in limits), best of 3, seconds;
#   apply   `icfabd --apply --preset P` in the test VM (tools/vm/run, one
#           boot, the presets in the order given, each applied over the
#           previous one as a difference), seconds, QEMU TCG;
#   noop    the same again, which reads everything back and finds nothing
#           to change: the cost of a readback plus the comparison;
#   memory  ICFAB_A_FABRIC_MEM_BYTES of the committed configuration
#           (`icfabd --status`), what the module's tables take.
#
# The VM part needs root (tools/vm/run) and the module built for the
# kernel (build/kmod/<kver>/icfab.ko). ICFAB_BENCH_INNER=1 is the part that
# runs inside the VM.

top=$(cd "$(dirname "$0")/../.." && pwd)
icfabd=$top/build/bin/icfabd

now() { date +%s.%N; }
secs() { awk "BEGIN { printf \"%.3f\", $2 - $1 }"; }

if [ "$ICFAB_BENCH_INNER" = 1 ]; then
	# In the VM: one line per preset, "name apply noop memory".
	for p in "$@"; do
		t0=$(now)
		"$icfabd" --apply --preset "$p" > /dev/null || { echo "$p FAILED"; continue; }
		t1=$(now)
		"$icfabd" --apply --preset "$p" > /dev/null
		t2=$(now)
		mem=$("$icfabd" --status | sed -n 's/.*(\([0-9]*\) bytes).*/\1/p')
		echo "BENCH $p $(secs "$t0" "$t1") $(secs "$t1" "$t2") $mem"
	done
	exit 0
fi

kernel=6.12
if [ "$1" = -k ]; then
	kernel=$2
	shift 2
fi
[ $# -gt 0 ] || set -- $("$icfabd" --list-presets | awk '{ print $1 }')
[ -x "$icfabd" ] || { echo "build icfabd first (see the top of $0)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for p in "$@"; do
	best=
	for i in 1 2 3; do
		t0=$(now)
		"$icfabd" --check --preset "$p" > "$tmp/check.$p" || exit 1
		t=$(secs "$t0" "$(now)")
		if [ -z "$best" ] || awk "BEGIN { exit !($t < $best) }"; then
			best=$t
		fi
	done
	echo "$best" > "$tmp/host.$p"
done

ICFAB_BENCH_INNER=1
export ICFAB_BENCH_INNER
"$top/tools/vm/run" -k "$kernel" -t 1800 -- /usr/bin/env ICFAB_BENCH_INNER=1 \
	"$top/tools/bench/topo_bench.sh" "$@" > "$tmp/vm" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -20 "$tmp/vm" >&2; echo "the VM run failed ($rc)" >&2; }

printf '%-16s %6s %6s %5s %9s %9s %11s\n' preset nodes links check apply noop memory
for p in "$@"; do
	line=$(grep "^BENCH $p " "$tmp/vm")
	nodes=$(sed -n 's/.*: \([0-9]*\) endpoints, \([0-9]*\) switches.*/\1 \2/p' "$tmp/check.$p" |
		awk '{ print $1 + $2 }')
	links=$(sed -n 's/.*switches, \([0-9]*\) links.*/\1/p' "$tmp/check.$p")
	set -- $line
	mem=${5:-}
	[ -n "$mem" ] && mem=$(awk "BEGIN { printf \"%.2f MiB\", $mem / 1048576 }")
	printf '%-16s %6s %6s %5s %9s %9s %11s\n' "$p" "$nodes" "$links" \
		"$(cat "$tmp/host.$p")" "${3:-?}" "${4:-?}" "${mem:-?}"
done
echo "check: host, best of 3, s; apply/noop: VM (QEMU TCG, kernel $kernel), s"
exit $rc
