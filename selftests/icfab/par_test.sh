#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The parallel engine in the kernel (kmod/par.c): the debugfs engine
# check times a timing-only all-to-all over the committed topology on
# the sequential engine and on engine_threads partitions (kthreads), and
# hashes every completion (id, key, bytes, submit, start, finish,
# queued, status, hops) and every link's statistics (next free, bytes,
# segments, busy, longest queueing). On ualink-pod cut to 256 endpoints
# (leaves and spines, 100 ns between partitions) the hashes of 2 and 3
# threads must be the sequential engine's, at one segment per pair and
# at two. The module parameter goes back to 1 at the end. TAP output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
icfabd=$top/build/bin/icfabd
param=/sys/module/icfab/parameters/engine_threads
knob=/sys/kernel/debug/icfab/icfab0/engine_check
tmp=$(mktemp -d)
trap 'echo 1 > $param; rm -rf "$tmp"' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"	# check

echo "TAP version 13"

[ -w "$knob" ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null

# run THREADS BYTES: the check's line into $tmp/THREADS-BYTES
run() {
	echo "$1" > $param && echo "$2 4096" > $knob &&
		cat $knob > "$tmp/$1-$2" && sed 's/^/# /' "$tmp/$1-$2"
}

# same FILE: the parallel engine's hashes are the sequential engine's
# (fields 24-25 against 27-28), every transfer of 256 x 255 completed,
# none failed. The line: endpoints N bytes B batch N threads N
# lookahead_ps L windows N messages N transfers N failed N seq_ns NS
# par_ns NS seq COMPLETIONS LINKS par COMPLETIONS LINKS identical|DIFFERENT
same() {
	set -- $(cat "$1")
	[ "$2" = 256 ] && [ "${16}" = 65280 ] && [ "${18}" = 0 ] &&
		[ "${24}" = "${27}" ] && [ "${25}" = "${28}" ] &&
		[ "${29}" = identical ]
}

check "ualink-pod cut to 256 endpoints applied" sh -c "
	'$icfabd' --dump --yaml --preset ualink-pod |
	sed 's/endpoints: 1024/endpoints: 256/; s/name: ualink-pod/name: a2a-256/' \
		> '$tmp/a2a-256.yaml' &&
	'$icfabd' --apply '$tmp/a2a-256.yaml' > /dev/null"
check "engine_threads is 1 by default" [ "$(cat $param)" = 1 ]
for b in 4096 6000; do
	for j in 2 3; do
		check "$j threads, $b B per pair: the check ran" run $j $b
		check "$j threads, $b B: completions and links as the sequential engine's" \
			same "$tmp/$j-$b"
		check "$j threads, $b B: $j partitions, 100 ns lookahead" \
			grep -q "threads $j lookahead_ps 100000 " "$tmp/$j-$b"
	done
	check "$b B: the sequential hashes do not depend on the threads" sh -c "
		cut -d' ' -f24,25 '$tmp/2-$b' > '$tmp/s2' &&
		cut -d' ' -f24,25 '$tmp/3-$b' > '$tmp/s3' && cmp -s '$tmp/s2' '$tmp/s3'"
done
check "4096 B and 6000 B time differently" sh -c "
	[ \"\$(cut -d' ' -f24 '$tmp/2-4096')\" != \"\$(cut -d' ' -f24 '$tmp/2-6000')\" ]"
check "a check refuses 0 bytes" sh -c "! echo 0 > $knob 2>/dev/null"

echo "1..$n"
exit $failed
