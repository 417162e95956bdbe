#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Kernel memory of a fully submitted all-to-all: icfab-a2a submits every
# transfer (timing only) before it waits for the first, so at its peak
# the module holds all of them at once. Each run is its own memory
# cgroup, and its memory.peak (cgroup v2) is what the run cost the
# machine: the module's engine tables, transfers and requests (charged
# to the submitter, GFP_KERNEL_ACCOUNT) plus icfab-a2a's own few MB (the
# 2-endpoint run shows that floor). Route tables are the fabric's, not
# the submitter's: `icfabd --status` prints them. Run it in the test VM,
# as root, with room and without slub_debug (whose red zones and
# tracking inflate every object):
#
#	tools/vm/run -m 4G --no-debug -k 6.12 -t 1800 -- \
#		tools/bench/a2a_mem.sh [-p PRESET] [-n N,N,...] [BYTES...]
#
# PRESET default ualink-pod (1024 endpoints); N (endpoints, default
# 2,256,1024) and BYTES (per pair, default 4K) give the runs. Prints one
# line per run: endpoints, bytes per pair, transfers, peak bytes, and
# bytes per transfer above the 2-endpoint floor when that ran first.

. "$(dirname "$0")/lib.sh"
a2a=$top/build/bin/icfab-a2a
PRESET=ualink-pod
NS=2,256,1024
bench_opts "p=PRESET n=NS" "a2a_mem.sh [-p PRESET] [-n N,...] [BYTES...]" "$@"
shift $bench_shift
[ $# -gt 0 ] || set -- 4K

cg=/sys/fs/cgroup
[ -f $cg/cgroup.controllers ] || mount -t cgroup2 none $cg || exit 1
grep -qw memory $cg/cgroup.controllers || {
	echo "a2a_mem.sh: no memory controller in $cg" >&2; exit 1; }
echo +memory > $cg/cgroup.subtree_control || exit 1
"$icfabd" --apply --preset "$PRESET" > /dev/null || exit 1
echo "# $PRESET: $("$icfabd" --status | head -1)"
echo "# endpoints, bytes per pair, transfers, memory.peak bytes, bytes per transfer above the floor"
floor=
for b in "$@"; do
	for n in $(echo "$NS" | tr , ' '); do
		g=$cg/icfab-a2a-mem.$$
		mkdir "$g" || exit 1
		r=$(sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" -j -n "$3" "$4"' \
			sh "$g" "$a2a" "$n" "$b") || { rmdir "$g"; exit 1; }
		peak=$(cat "$g/memory.peak")
		rmdir "$g"
		xfers=$(echo "$r" | sed 's/.*"transfers":\([0-9]*\).*/\1/')
		[ "$n" = 2 ] && floor=$peak
		per=-
		[ -n "$floor" ] && [ "$xfers" -gt 2 ] &&
			per=$(( (peak - floor) / xfers ))
		echo "$n $b $xfers $peak $per"
	done
done
