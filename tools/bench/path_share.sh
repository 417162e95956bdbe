#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# What share of the transfers of independently started processes (one
# context each, timing only, as procs_table.sh runs them) the WRITE path
# took off the fabric lock: debugfs fast_writes against every transfer
# the engine took (the icfab_submit tracepoint's events), for a direct
# all-to-all (fdev_dev_test mp, twice) and each MoE mode's dispatch and
# combine (moe_bench -P). Counts, not time. In the test VM, as root:
#
#	tools/vm/run -k 6.12 -m 2G -t 900 -- tools/bench/path_share.sh \
#		[-p PRESET] [-n RANKS] [-m MODES] [-b BYTES] [TOKENS [SEGMENT]]
#
# PRESET (default ualink-pod), RANKS processes (default 16), MODES (MoE
# modes, default tp,ll), BYTES per pair of the all-to-all (default
# 4096), TOKENS per rank (default 16), SEGMENT the fabric's segment size
# (default 64 KiB). One line per operation: its transfers, how many of
# them the path accepted, the share, and of those the NOTIFY WRITEs
# (debugfs fast_notify_writes; "-" for a module without it).
. "$(dirname "$0")/lib.sh"
t=$top/build/libfabricdev/tests/fdev_dev_test
bench=$top/build/bin/moe_bench
PRESET=ualink-pod N=16 MODES=tp,ll BYTES=4096
bench_opts "p=PRESET n=N m=MODES b=BYTES" \
	"path_share.sh [-p PRESET] [-n RANKS] [-m MODES] [-b BYTES] [TOKENS [SEGMENT]]" "$@"
shift $bench_shift
T=${1:-16}
SEG=${2:-65536}
dbg=/sys/kernel/debug/icfab/icfab0
tr=/sys/kernel/tracing
dir=$(mktemp -d)
bench_segment_keep
trap 'echo 0 > $tr/events/icfab/icfab_submit/enable; bench_segment_restore; rm -rf "$dir" /dev/shm/fdev-*-ps$$*' EXIT
[ -w $dbg/fast_writes ] && [ -d $tr/events/icfab/icfab_submit ] ||
	{ echo "path_share.sh: needs debugfs and tracefs (root, the VM)" >&2; exit 1; }
"$icfabd" --dump --yaml --preset "$PRESET" > "$dir/fabric.yaml" &&
	"$icfabd" --apply "$dir/fabric.yaml" > /dev/null &&
	"$icfabctl" fabric set 0 segment-size "$SEG" > /dev/null || exit 1
echo 65536 > $tr/buffer_size_kb

# share NAME CMD...: N processes of CMD (FDEV_RANK/FDEV_SIZE/FDEV_JOB),
# and the line for them.
share() {
	name=$1
	shift
	echo 0 > $dbg/fast_writes
	[ -w $dbg/fast_notify_writes ] && echo 0 > $dbg/fast_notify_writes
	: > $tr/trace
	echo 1 > $tr/events/icfab/icfab_submit/enable
	r=0 pids=
	while [ $r -lt "$N" ]; do
		FDEV_JOB=ps$$-$name FDEV_RANK=$r FDEV_SIZE=$N \
			"$@" > "$dir/$name.$r" 2> "$dir/$name.e$r" &
		pids="$pids $!"
		r=$((r + 1))
	done
	prc=0
	for p in $pids; do wait "$p" || prc=1; done
	echo 0 > $tr/events/icfab/icfab_submit/enable
	fast=$(cat $dbg/fast_writes)
	nfast=$(cat $dbg/fast_notify_writes 2>/dev/null || echo -)
	all=$(grep -c 'icfab_submit:' $tr/trace)
	lost=$(cat $tr/per_cpu/cpu*/stats | awk '/^overrun:/ { s += $2 } END { print s + 0 }')
	[ $prc = 0 ] || { cat "$dir/$name".e* | sort | uniq -c | head -5 >&2; rc=1; }
	[ "$lost" = 0 ] || { echo "path_share.sh: $lost trace events lost" >&2; rc=1; }
	awk -v n="$name" -v p="$N" -v a="$all" -v f="$fast" -v nf="$nfast" 'BEGIN {
		printf "%s by %d processes: %d transfers, %d on the WRITE path (%.1f%%; NOTIFY %s)\n",
			n, p, a, f, a ? 100 * f / a : 0, nf }'
}

rc=0
echo "$PRESET, $N processes, timing only; all-to-all $BYTES bytes a pair; MoE $T tokens a rank, H 7168, top-8"
share alltoall "$t" mp alltoall direct "$BYTES" 2
e=$((N > 256 ? N : 256))
for mode in $(echo "$MODES" | tr , ' '); do
	share "moe-$mode" "$bench" -P -n "$N" -t "$T" -H 7168 -e "$e" -k 8 \
		-m "$mode" -b 100
done
# PATH_SHARE_MPALL=1: also fdev_dev_test mpall, every collective and
# dispatch/combine of a notify communicator (device memory, NOTIFY WRITEs).
[ -n "${PATH_SHARE_MPALL:-}" ] && share mpall "$t" mpall
exit $rc
