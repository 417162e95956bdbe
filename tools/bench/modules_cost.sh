#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Count what a descriptor costs under several builds of the module, loaded
# in turn in one boot of the test VM (run it under tools/vm/run --icount,
# where the counts are exact, and name each module twice, old new old new,
# so that a row that differs between its two runs shows itself).
#
#   tools/bench/modules_cost.sh [-m] [-n N] A.ko B.ko A.ko B.ko
#
# For each module: rmmod icfab, insmod it, build/bench/desc_cost N (500).
# -m: then moe_bench.sh -c h800-8 -m tp,ll 256 under each module named,
# once, and the md5 of its output: emulated time must not move.
set -u
moe=0
n=500
while getopts mn: o; do
	case $o in
	m) moe=1 ;;
	n) n=$OPTARG ;;
	*) echo "usage: $0 [-m] [-n N] MODULE.ko..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-m] [-n N] MODULE.ko..." >&2; exit 2; }
for ko in "$@"; do
	[ -r "$ko" ] || { echo "$0: $ko: no such module" >&2; exit 1; }
done
here=$(dirname "$0")
load() {
	rmmod icfab 2>/dev/null
	insmod "$1" || { echo "$0: insmod $1 failed" >&2; exit 1; }
}
for ko in "$@"; do
	load "$ko"
	echo "== $ko"
	build/bench/desc_cost "$n" || exit 1
done
[ $moe = 1 ] || exit 0
seen=" "
for ko in "$@"; do
	case "$seen" in *" $ko "*) continue ;; esac
	seen="$seen$ko "
	load "$ko"
	out=$("$here/moe_bench.sh" -c h800-8 -m tp,ll 256) ||
		{ echo "$0: moe_bench.sh failed under $ko" >&2; exit 1; }
	echo "== moe_bench under $ko: md5 $(printf '%s\n' "$out" | md5sum | cut -d' ' -f1)"
	printf '%s\n' "$out"
done
