#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Communicators of independent processes without a proxy (TAP), when the
# module has ICFAB_F_RECV_NOTIFY and memory: 4 processes on dgx-h100,
# each driving its own rank from its own context (the default), run
# every collective with each of its algorithms and the throughput,
# low-latency, hierarchical and multicast (a copy per destination) MoE
# modes on data (fdev_dev_test mpall), meeting on the host between some
# of them as a runtime's store would:
#  - every result is right, element by element;
#  - the job runs twice, the second time beside a CPU hog, and every
#    rank's emulated times (each operation's, and its clock after each
#    one since the communicator was made) are bit-identical between the
#    two runs: within an operation the ranks meet only through the
#    fabric (NOTIFY WRITEs and WAITs for exactly what must come), and
#    between operations a rank holds nobody back;
#  - bad input at init (no device, more ranks than endpoints) fails at
#    once with a message that says so, and leaves no rendezvous file.

top=${ICFAB_TOP:-$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)}
icfabd=$top/build/bin/icfabd
t=$top/build/libfabricdev/tests/fdev_dev_test
tmp=$(mktemp -d)
hog=
trap '[ -n "$hog" ] && kill "$hog" 2>/dev/null; rm -rf "$tmp" /dev/shm/fdev-meet-*' EXIT
n=0
failed=0
. "$(dirname "$0")/lib.sh"

echo "TAP version 13"

check "dgx-h100 applied" sh -c "'$icfabd' --apply --preset dgx-h100 > /dev/null"
features=$("$t" api 2> /dev/null | sed -n 's/^# uring . features \(0x[0-9a-fA-F]*\)$/\1/p')
if [ -z "$features" ] || [ $((features & 0x104)) -ne $((0x104)) ]; then
	echo "ok 2 # SKIP the module lacks ICFAB_F_RECV_NOTIFY or ICFAB_F_MEMORY"
	echo "1..2"
	exit 0
fi

badinit() {	# badinit PATTERN ENV...: rank 0 fails at once, says why, leaves nothing
	pat=$1
	shift
	env "$@" FDEV_JOB=bad$$ FDEV_RANK=0 FDEV_TIMEOUT_MS=5000 \
		timeout 60 "$t" mpall > /dev/null 2> "$tmp/bad"
	rc=$?
	sed 's/^/# /' "$tmp/bad"
	[ $rc = 1 ] && grep -q "$pat" "$tmp/bad" && ! ls /dev/shm/fdev-*-bad$$ 2> /dev/null
}
check "no device: a clear error, nothing left" \
	badinit "is the icfab module loaded" FDEV_DEVICE=/dev/icfab-none FDEV_SIZE=4
check "more ranks than endpoints: a clear error, nothing left" \
	badinit "the fabric has 8 endpoints, fewer than the 9 ranks" FDEV_SIZE=9

mpall() {	# mpall RUN [hog]: 4 ranks of "fdev_dev_test mpall", no proxy
	if [ "$2" = hog ]; then
		sh -c 'while :; do :; done' &
		hog=$!
	fi
	pids=
	for r in 0 1 2 3; do
		FDEV_JOB=nt$1$$ FDEV_RANK=$r FDEV_SIZE=4 \
			FDEV_TIMEOUT_MS=300000 \
			timeout 900 "$t" mpall > "$tmp/$1.$r" 2>&1 &
		pids="$pids $!"
	done
	rc=0
	for p in $pids; do wait $p || rc=1; done
	if [ -n "$hog" ]; then
		kill "$hog"
		hog=
	fi
	grep -hv '^# \(time\|at\) ' "$tmp/$1".? | sed 's/^/# /'
	grep -q '^not ok' "$tmp/$1".? && rc=1
	grep -q '^# proxy 0$' "$tmp/$1.0" || rc=1
	return $rc
}

check "4 processes, no proxy: every collective and the MoE modes, element by element" \
	mpall a
check "the same again, beside a CPU hog" mpall b hog
same() {	# every rank's "# time" and "# at" lines, equal between the runs
	rc=0
	for r in 0 1 2 3; do
		grep '^# \(time\|at\) ' "$tmp/a.$r" > "$tmp/ta.$r"
		grep '^# \(time\|at\) ' "$tmp/b.$r" > "$tmp/tb.$r"
		[ -s "$tmp/ta.$r" ] || rc=1
		cmp -s "$tmp/ta.$r" "$tmp/tb.$r" || { rc=1; diff "$tmp/ta.$r" "$tmp/tb.$r" | sed "s/^/# rank $r: /" | head -20; }
	done
	echo "# $(grep -c '^# at ' "$tmp/ta.0") timestamps per rank; rank 0:"
	grep -E '^# at (alltoall-direct|throughput-combine|low-latency-combine|hierarchical-combine|multicast-combine) ' "$tmp/ta.0" | sed 's/^/# /'
	return $rc
}
check "every rank's emulated times are bit-identical between the two runs" same

echo "1..$n"
exit $failed
