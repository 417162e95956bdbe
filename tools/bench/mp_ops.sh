#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# mp_ops.sh [-p PRESET] [-n PROCS...] [OP [ALGO [BYTES]]]: guest run time
# per operation of a timing-only collective by independently started
# processes, one rank and one context each (fdev_dev_test mp). In the VM,
# as root; meant for `tools/vm/run --icount` (tools/bench/README.md,
# "Reading the figures"):
#
#     tools/vm/run --icount -k 6.12 --no-debug -t 600 -- tools/bench/mp_ops.sh
#
# For each process count N (default 4 8) it runs the N processes twice,
# one operation each and then 8 each, under busy.sh, and prints
#
#     procs N op OP ALGO BYTES busy1_ns B1 busy8_ns B8 per_op_ns P emulated_ps E
#
# P = (B8 - B1) / 7: the guest's run time of one more operation, all N
# processes together (the rendezvous, starts and exits cancel). E: the
# distinct emulated times (first and last operation) the processes
# printed, which must not depend on N. FDEV_DEV_TEST names another
# fdev_dev_test binary (a build before a change, side by side).

top=${ICFAB_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
t=${FDEV_DEV_TEST:-$top/build/libfabricdev/tests/fdev_dev_test}
busy=$top/tools/bench/busy.sh
preset=dgx-h100
procs=
rep=
while getopts p:n:R: o; do
	case $o in
	p) preset=$OPTARG ;;
	R) rep=$OPTARG ;;	# internal: run the processes once (under busy.sh)
	n) procs="$procs $OPTARG" ;;
	*) echo "usage: mp_ops.sh [-p PRESET] [-n PROCS]... [OP [ALGO [BYTES]]]" >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
op=${1:-alltoall}
algo=${2:-direct}
bytes=${3:-4096}
procs=${procs:-4 8}

if [ -n "$rep" ]; then	# -R REP -n N: N processes, REP operations each, outputs on stdout
	n=$(echo $procs)
	tmp=$(mktemp -d)
	pids=
	for r in $(seq 0 $((n - 1))); do
		FDEV_JOB=mo$$ FDEV_RANK=$r FDEV_SIZE=$n FDEV_TIMEOUT_MS=60000 \
			"$t" mp "$op" "$algo" "$bytes" "$rep" > "$tmp/out.$r" 2> "$tmp/err.$r" &
		pids="$pids $!"
	done
	rc=0
	for p in $pids; do wait "$p" || rc=1; done
	[ $rc = 0 ] || cat "$tmp"/err.* >&2
	cat "$tmp"/out.*
	rm -rf "$tmp" /dev/shm/fdev-*-mo$$*
	exit $rc
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$top/build/bin/icfabd" --apply --preset "$preset" > /dev/null || exit 1

for n in $procs; do
	# Once first, unmeasured: the binary's first start reads it from the host.
	"$0" -n "$n" -R 1 "$op" "$algo" "$bytes" > /dev/null || exit 1
	: > "$tmp/all"
	b1=$("$busy" "$0" -n "$n" -R 1 "$op" "$algo" "$bytes" 2>&1 >> "$tmp/all" |
		sed -n 's/^busy_ns \([0-9]*\).*/\1/p')
	b8=$("$busy" "$0" -n "$n" -R 8 "$op" "$algo" "$bytes" 2>&1 >> "$tmp/all" |
		sed -n 's/^busy_ns \([0-9]*\).*/\1/p')
	[ -n "$b1" ] && [ -n "$b8" ] || { echo "mp_ops.sh: $n processes failed" >&2; exit 1; }
	e=$(sed -n 's/.*"time_ps":\([0-9]*\),"last_ps":\([0-9]*\).*/\1 \2/p' "$tmp/all" |
		tr ' ' '\n' | sort -u | tr '\n' ',' | sed 's/,$//')
	echo "procs $n op $op $algo $bytes busy1_ns $b1 busy8_ns $b8" \
		"per_op_ns $(((b8 - b1) / 7)) emulated_ps $e"
done
