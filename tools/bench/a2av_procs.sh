#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The all-to-all-v by independently started processes, one rank and one
# context each (FDEV_RANK/FDEV_SIZE/FDEV_JOB, timing only, no proxy),
# against one process driving every rank, in fixed slots and in two
# rounds (FDEV_A2AV_TWO_ROUNDS=1), each against the max-channel-load
# bound. Run it in the test VM, as root:
#
#	tools/vm/run -k 6.12 --no-debug -m 4G -t 1100 -- \
#		tools/bench/a2av_procs.sh [-p PRESET] [-n RANKS] [-o OP]
#			[-a ALGOS] [-w WHO] BYTES...
#
# PRESET (default tpu-v4-cube) is applied with its own segment size;
# RANKS defaults to its endpoints. OP is alltoallv (default: pair s, d
# sends BYTES x ((3s + d) mod 5) / 2, 0 to 2 BYTES) or alltoallvskew
# (fdev_dev_test's skewed counts). For each BYTES (mean per pair) and
# each of slots and two rounds: one process (fdev_dev_test coll OP
# direct), then RANKS processes (fdev_dev_test mp OP direct); ALGOS
# ("slots two-rounds") and WHO ("one procs") choose fewer runs (-a
# slots -w procs: the processes in slots alone); WHO one-own is one
# process without its play of the step (FDEV_NO_CRITICAL_FIRST=1),
# which orders each rank's pieces as the processes do. The
# bound is the busiest link's busy time over the run (`icfabctl -j
# stats` reset before it), as in a2a_interleave.sh. Prints one line per
# run:
#
#	BYTES ALGORITHM WHO emulated_us bound_us bound/emulated slots
#
# WHO is "one", "one-own" or "procs"; a processes' row gives the latest rank's
# time, and slots whether every process went in slots (1) or none (0).

. "$(dirname "$0")/lib.sh"
t=$top/build/libfabricdev/tests/fdev_dev_test
PRESET=tpu-v4-cube
N=
OP=alltoallv
ALGOS="slots two-rounds"
WHO="one procs"
bench_opts "p=PRESET n=N o=OP a=ALGOS w=WHO" \
	"a2av_procs.sh [-p PRESET] [-n RANKS] [-o OP] [-a ALGOS] [-w WHO] BYTES..." "$@"
case $OP in
alltoallv|alltoallvskew) ;;
*) echo "a2av_procs.sh: OP is alltoallv or alltoallvskew" >&2; exit 2 ;;
esac
shift $bench_shift
[ $# -gt 0 ] || { echo "a2av_procs.sh: no BYTES given" >&2; exit 2; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp" /dev/shm/fdev-*-ap$$*' EXIT

"$icfabd" --apply --preset "$PRESET" > /dev/null || exit 1
[ -n "$N" ] || N=$("$icfabctl" -j node list |
	python3 -c 'import json,sys; print(sum(1 for x in json.load(sys.stdin)["nodes"] if x["kind"] == "endpoint"))') || exit 1

# run WHO BYTES TWO: one run into $tmp/run.*, the stats into $tmp/stats
run() {
	rm -f "$tmp"/run.*
	"$icfabctl" stats reset > /dev/null || return 1
	if [ "$1" != procs ]; then
		own=
		[ "$1" = one-own ] && own=1
		env ${3:+FDEV_A2AV_TWO_ROUNDS=1} ${own:+FDEV_NO_CRITICAL_FIRST=1} \
			"$t" coll "$OP" direct "$N" "$2" > "$tmp/run.0" || return 1
	else
		r=0 pids=
		while [ $r -lt "$N" ]; do
			env ${3:+FDEV_A2AV_TWO_ROUNDS=1} FDEV_JOB=ap$$-$2$3 FDEV_RANK=$r \
				FDEV_SIZE="$N" FDEV_TIMEOUT_MS=600000 \
				"$t" mp "$OP" direct "$2" > "$tmp/run.$r" 2> "$tmp/err.$r" &
			pids="$pids $!"
			r=$((r + 1))
		done
		prc=0
		for p in $pids; do wait "$p" || prc=1; done
		[ $prc = 0 ] || { sort "$tmp"/err.* | uniq -c >&2; return 1; }
	fi
	"$icfabctl" -j stats > "$tmp/stats"
}

echo "# $PRESET, $N ranks, $OP: bytes per pair (mean), algorithm, who, emulated us, bound us, bound/emulated, slots"
for b in "$@"; do
	for algo in $ALGOS; do
		case $algo in
		slots) two= ;;
		two-rounds) two=1 ;;
		*) echo "a2av_procs.sh: ALGOS are slots, two-rounds" >&2; exit 2 ;;
		esac
		for who in $WHO; do
			run $who "$b" "$two" || exit 1
			python3 - "$b" "${two:+two-rounds}" "$who" "$tmp/stats" "$tmp"/run.* <<'PY' || exit 1
import json, sys
b, algo, who, stats = sys.argv[1:5]
runs = [json.loads([l for l in open(f) if l.startswith("{")][0]) for f in sys.argv[5:]]
t = max(r["time_ps"] for r in runs)
sl = sorted({r.get("a2av_slots", -1) for r in runs})
bound = max(l["busy_ps"] for l in json.load(open(stats))["links"])
print("%s %s %s %.3f %.3f %.4f %s" % (b, algo or "slots", who, t / 1e6, bound / 1e6,
                                      bound / t, ",".join(map(str, sl))))
PY
		done
	done
done
