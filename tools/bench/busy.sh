#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# busy.sh CMD [ARG...]: run CMD (its output goes where ours does) and
# print, on stderr, the time every CPU spent running tasks meanwhile:
#
#     busy_ns N wall_ns W CMD...
#
# N is the sum over CPUs of /proc/schedstat's run time (the 7th field
# of each cpuN line: ns that tasks, kernel threads included, ran on it;
# idle is not a task). Under `tools/vm/run --icount` that is the guest's
# instructions while CMD ran, and it is the figure to count with:
# QEMU's `-icount sleep=off` moves the guest's clock across idle periods
# by jumps that depend on the host (a `sleep 1` read 41 s of guest wall
# clock on a loaded host), so W, the wall clock, is not a count as soon
# as the guest idles, waiting on a file, a timer or another process.
# Whatever else the guest runs meanwhile is counted too.
#
# Exit status: CMD's. Needs CONFIG_SCHEDSTATS (Debian's kernels have it).

if [ $# -eq 0 ]; then
	echo "usage: busy.sh CMD [ARG...]" >&2
	exit 2
fi
if ! [ -r /proc/schedstat ]; then
	echo "busy.sh: no /proc/schedstat (CONFIG_SCHEDSTATS)" >&2
	exit 2
fi

run_ns() {
	awk '$1 ~ /^cpu[0-9]+$/ { n += $8 } END { printf "%.0f\n", n }' \
		/proc/schedstat
}

a=$(run_ns)
s=$(date +%s%N)
"$@"
rc=$?
e=$(date +%s%N)
b=$(run_ns)
echo "busy_ns $((b - a)) wall_ns $((e - s)) $*" >&2
exit $rc
