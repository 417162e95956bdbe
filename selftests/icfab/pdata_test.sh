#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The data path on the parallel engine (docs/ARCHITECTURE.md, "The
# parallel engine in the kernel"): a step that one context submits
# whole and waits for whole goes to engine_threads partitions on a
# fabric of engine_par_min_endpoints endpoints or more. On ualink-pod
# cut to 128 endpoints, pdata_a2a's steps (every completion of each
# hashed, the context's clock after) and the link statistics must come
# out the same with 1, 2 and 3 threads; engine_par_steps says how many
# steps the partitions ran. libfabricdev's steps (two all-to-alls, one
# process driving the 128 ranks, on the completion ring and on the
# ioctl path) must run on partitions too, with 1 thread's times and
# link statistics. A second context submitting in the middle
# of a step, steps reaped in pieces, and a fabric below the threshold
# run sequentially (or in parallel where allowed) with the same
# results. A process killed, and an rmmod tried, while the partitions
# run a step: no hang (dmesg and rmmod are checked by the runner).
# The parameters go back at exit. TAP output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
icfabd=$top/build/bin/icfabd
icfabctl=$top/build/bin/icfabctl
a2a=$top/build/selftests/icfab/pdata_a2a
fdev=$top/build/libfabricdev/tests/fdev_dev_test
par=/sys/module/icfab/parameters
tmp=$(mktemp -d)
trap 'echo 1 > $par/engine_threads; echo 512 > $par/engine_par_min_endpoints; rm -rf "$tmp"' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"	# check

echo "TAP version 13"

steps() { cat $par/engine_par_steps; }

# run NAME THREADS MODE STEPS: pdata_a2a's lines into $tmp/NAME, the
# link statistics into $tmp/NAME.links, the steps run on partitions
# into $tmp/NAME.par
run() {
	echo "$2" > $par/engine_threads &&
	"$icfabctl" stats reset > /dev/null &&
	s0=$(steps) &&
	"$a2a" "$3" 128 "$4" > "$tmp/$1" &&
	s1=$(steps) &&
	echo $((s1 - s0)) > "$tmp/$1.par" &&
	"$icfabctl" stats | grep -v -i joule > "$tmp/$1.links" &&
	sed 's/^/# /' "$tmp/$1" | grep -v '^# step.*ctx 0' | head -4 &&
	echo "# $1: $(cat "$tmp/$1.par") steps on partitions"
}

# same A B: the completions, clocks and link statistics are identical
same() {
	grep -v '^#' "$tmp/$1" > "$tmp/x" && grep -v '^#' "$tmp/$2" > "$tmp/y" &&
		cmp -s "$tmp/x" "$tmp/y" && cmp -s "$tmp/$1.links" "$tmp/$2.links"
}

none_failed() { ! grep -v '^#' "$tmp/$1" | grep -qv ' failed 0 '; }

check "ualink-pod cut to 128 endpoints applied" sh -c "
	'$icfabd' --dump --yaml --preset ualink-pod |
	sed 's/endpoints: 1024/endpoints: 128/; s/name: ualink-pod/name: a2a-128/' \
		> '$tmp/a2a-128.yaml' &&
	'$icfabd' --apply '$tmp/a2a-128.yaml' > /dev/null"
check "engine_par_min_endpoints is 512 by default" [ "$(cat $par/engine_par_min_endpoints)" = 512 ]
check "below the threshold: 2 threads run it sequentially" run below 2 one 1
check "below the threshold: no step on partitions" [ "$(cat "$tmp/below.par")" = 0 ]
echo 128 > $par/engine_par_min_endpoints
for j in 1 2 3; do
	check "$j threads: three whole steps ran" run one-$j $j one 3
	check "$j threads: none failed" none_failed one-$j
done
check "1 thread: no step on partitions" [ "$(cat "$tmp/one-1.par")" = 0 ]
check "2 threads: all three steps on partitions" [ "$(cat "$tmp/one-2.par")" = 3 ]
check "3 threads: all three steps on partitions" [ "$(cat "$tmp/one-3.par")" = 3 ]
check "2 threads: completions, clocks, links as 1 thread's" same one-1 one-2
check "3 threads: completions, clocks, links as 1 thread's" same one-1 one-3
check "below the threshold: as 1 thread's first step" sh -c "
	head -1 '$tmp/below' > '$tmp/b1' && head -1 '$tmp/one-1' > '$tmp/o1' &&
	cmp -s '$tmp/b1' '$tmp/o1'"

# libfabricdev's steps (fdev_plan_run(): each posted whole, then one
# WAIT for all of it): two all-to-alls of 4 KiB per pair, one process
# driving the 128 ranks, on the ring (CQ_WAIT) and on the ioctl path.
# lib NAME THREADS [VAR=VALUE...]: as run, fdev_dev_test's JSON line
lib() {
	lname=$1 lthreads=$2
	shift 2
	echo "$lthreads" > $par/engine_threads &&
	"$icfabctl" stats reset > /dev/null &&
	s0=$(steps) &&
	env FDEV_COLL_REPEAT=2 "$@" "$fdev" coll alltoall direct 128 4096 \
		> "$tmp/$lname" &&
	s1=$(steps) &&
	echo $((s1 - s0)) > "$tmp/$lname.par" &&
	"$icfabctl" stats | grep -v -i joule > "$tmp/$lname.links" &&
	sed 's/^/# /' "$tmp/$lname" &&
	echo "# $lname: $(cat "$tmp/$lname.par") steps on partitions"
}
check "libfabricdev, 1 thread: two all-to-alls ran" lib fdev-1 1
check "libfabricdev, 2 threads: two all-to-alls ran on the ring" lib fdev-2 2
check "libfabricdev, 2 threads: two all-to-alls ran on the ioctl path" \
	lib fdev-2i 2 FDEV_NO_URING=1
check "libfabricdev, 1 thread: no step on partitions" [ "$(cat "$tmp/fdev-1.par")" = 0 ]
check "libfabricdev on the ring: its steps on partitions" [ "$(cat "$tmp/fdev-2.par")" -ge 2 ]
check "libfabricdev on the ioctl path: its steps on partitions" \
	[ "$(cat "$tmp/fdev-2i.par")" = "$(cat "$tmp/fdev-2.par")" ]
check "libfabricdev on the ring: times and links as 1 thread's" same fdev-1 fdev-2
check "libfabricdev on the ioctl path: times and links as 1 thread's" same fdev-1 fdev-2i

for j in 1 2; do
	check "$j threads: steps reaped whole and in pieces ran" run pieces-$j $j pieces 4
done
check "pieces: the two whole steps on partitions" [ "$(cat "$tmp/pieces-2.par")" = 2 ]
check "pieces: completions, clocks, links as 1 thread's" same pieces-1 pieces-2
for j in 1 2; do
	check "$j threads: a second context submitting mid-step ran" run two-$j $j two 2
	check "$j threads: none failed (two contexts)" none_failed two-$j
done
check "two contexts: no step on partitions" [ "$(cat "$tmp/two-2.par")" = 0 ]
check "two contexts: completions, clocks, links as 1 thread's" same two-1 two-2

# A long run on partitions, killed in its WAIT; rmmod meanwhile.
echo 2 > $par/engine_threads
s0=$(steps)
"$a2a" one 128 160 > "$tmp/kill" &
pid=$!
sleep 6
check "rmmod is refused while a step runs" sh -c "! rmmod icfab 2>/dev/null"
kill -9 $pid
wait $pid
check "the killed run ended" [ $? -ne 0 ]
check "it had run steps on partitions" [ "$(steps)" -gt "$s0" ]
check "the fabric still runs steps afterwards" run after 2 one 1
check "after: as 1 thread's first step" sh -c "
	head -1 '$tmp/after' > '$tmp/a1' && head -1 '$tmp/one-1' > '$tmp/o1' &&
	cmp -s '$tmp/a1' '$tmp/o1'"
check "no step declined" [ "$(cat $par/engine_par_declined)" = 0 ]

echo "1..$n"
exit $failed
