#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# What the copier's hand-off costs a memory WRITE of each size: copy_bw
# (one process, SUBMIT + WAIT a WRITE) with the module's copy_unlocked_min
# at 0 (every copy under the fabric lock, in the engine's run) and at MIN
# (copies of MIN bytes or more off it, by the copier's work item), in turn,
# twice, in one boot; with -M, under each module named in turn (rmmod,
# insmod), old new old new. Run it as root in the test VM under
# tools/vm/run --icount, where a guest ns is one instruction:
#
#   tools/bench/copy_handoff.sh [-m MIN] [-r ROUNDS] [-M A.ko]... BYTES...
#
# Prints per module, size and setting the WRITE's median and best ns.
set -u
min=65536
rounds=10
mods=
usage="usage: $0 [-m MIN] [-r ROUNDS] [-M MODULE.ko]... BYTES..."
while getopts m:r:M: o; do
	case $o in
	m) min=$OPTARG ;;
	r) rounds=$OPTARG ;;
	M) [ -r "$OPTARG" ] || { echo "$0: $OPTARG: no such module" >&2; exit 1; }
	   mods="$mods $OPTARG" ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
p=/sys/module/icfab/parameters/copy_unlocked_min
sizes() {
	[ -w $p ] || { echo "$0: $p: not writable (module loaded? root?)" >&2; exit 1; }
	old=$(cat $p)
	for bytes in "$@"; do
		for m in 0 "$min" 0 "$min"; do
			echo "$m" > $p
			out=$(build/bench/copy_bw "$rounds" "$bytes") ||
				{ echo "$out" >&2; echo "$old" > $p; exit 1; }
			echo "$out" | awk -v k="$ko" -v b="$bytes" -v m="$m" \
				'/icfab WRITE .* ns / { print k, b, m, $3, $5 }'
		done
	done
	echo "$old" > $p
}
echo "# module bytes copy_unlocked_min write_ns_median write_ns_best"
if [ -z "$mods" ]; then
	ko=loaded
	sizes "$@"
	exit 0
fi
for ko in $mods; do
	rmmod icfab 2>/dev/null
	insmod "$ko" || { echo "$0: insmod $ko failed" >&2; exit 1; }
	sizes "$@"
done
