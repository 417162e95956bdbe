#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The data path's all-to-all with 1 and 2 engine threads, side by side
# in one boot (tools/bench/README.md, "The data path on the parallel
# engine"). Run in the test VM as root with the module loaded:
#
#	tools/vm/run -k 6.12 --no-debug -m 2G -t 1200 -- tools/bench/pdata_bench.sh [ENDPOINTS [STEPS [ROUNDS [WHAT]]]]
#
# ualink-pod cut to ENDPOINTS (default 512) endpoints; ROUNDS (default
# 2) alternations of 1 and 2 threads. WHAT is "a2a" (default):
# pdata_a2a's steps (ENDPOINTS x (ENDPOINTS - 1) timing-only WRITEs of
# 4096 or 6000 B, submitted whole, one WAIT for all); prints each step's
# wall time (ns, in the guest). Or "fdev": libfabricdev's all-to-all
# (fdev_dev_test coll alltoall direct ENDPOINTS 4096, STEPS of them, one
# process driving every rank, on the completion ring); prints its JSON
# line. Either way, how many steps ran on partitions and whether the
# output and the link statistics were identical with 1 and 2 threads.

top=$(cd "$(dirname "$0")/../.." && pwd)
eps=${1:-512}
steps=${2:-2}
rounds=${3:-2}
what=${4:-a2a}
par=/sys/module/icfab/parameters
a2a=$top/build/selftests/icfab/pdata_a2a
fdev=$top/build/libfabricdev/tests/fdev_dev_test
tmp=$(mktemp -d)
trap 'echo 1 > $par/engine_threads; echo 512 > $par/engine_par_min_endpoints; rm -rf "$tmp"' EXIT

"$top/build/bin/icfabd" --dump --yaml --preset ualink-pod |
	sed "s/endpoints: 1024/endpoints: $eps/; s/name: ualink-pod/name: a2a-$eps/" \
	> "$tmp/t.yaml" && "$top/build/bin/icfabd" --apply "$tmp/t.yaml" > /dev/null || exit 1
echo "$eps" > $par/engine_par_min_endpoints
r=0
while [ $r -lt "$rounds" ]; do
	for j in 1 2; do
		echo $j > $par/engine_threads
		s0=$(cat $par/engine_par_steps)
		"$top/build/bin/icfabctl" stats reset > /dev/null || exit 1
		if [ "$what" = fdev ]; then
			FDEV_COLL_REPEAT=$steps "$fdev" coll alltoall direct "$eps" 4096 \
				> "$tmp/$j-$r" || exit 1
			echo "threads $j round $r par_steps $(($(cat $par/engine_par_steps) - s0))"
			cat "$tmp/$j-$r"
		else
			"$a2a" one "$eps" "$steps" > "$tmp/$j-$r" || exit 1
			echo "threads $j round $r par_steps $(($(cat $par/engine_par_steps) - s0))" \
				$(grep wall_ns "$tmp/$j-$r" | awk '{print "step" $3 "_ns", $5}')
		fi
		"$top/build/bin/icfabctl" stats | grep -v -i joule > "$tmp/$j-$r.links"
	done
	grep -v '^#' "$tmp/1-$r" > "$tmp/a"
	grep -v '^#' "$tmp/2-$r" > "$tmp/b"
	cmp -s "$tmp/a" "$tmp/b" && cmp -s "$tmp/1-$r.links" "$tmp/2-$r.links" &&
		echo "round $r: identical" || echo "round $r: DIFFERENT"
	r=$((r + 1))
done
cat "$tmp/1-0" | grep -v '^#'
