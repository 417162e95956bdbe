#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# libfabricdev's direct all-to-all against the max-channel-load bound,
# with and without FDEV_INTERLEAVE (coll.c), side by side in one run,
# timing only, one process driving every rank. Run it in the test VM:
#
#	tools/vm/run -k 6.12 -t 3600 -- tools/bench/a2a_interleave.sh \
#		[-p PRESET] [-n RANKS] [-k K,K,...] BYTES...
#
# PRESET (default tpu-v4-cube) is applied with its own segment size.
# For each BYTES per pair and each K (default 0,1,2,4; 0 is off), one
# all-to-all (libfabricdev/tests/fdev_dev_test coll alltoall direct).
# The bound is the busiest link's busy time over the run, from
# `icfabctl -j stats` reset before it: the link that must carry the most
# bytes, at its rate. Prints one line per run:
#
#	BYTES K emulated_us bound_us bound/emulated

. "$(dirname "$0")/lib.sh"
t=$top/build/libfabricdev/tests/fdev_dev_test
PRESET=tpu-v4-cube
N=
KS=0,1,2,4
bench_opts "p=PRESET n=N k=KS" \
	"a2a_interleave.sh [-p PRESET] [-n RANKS] [-k K,...] BYTES..." "$@"
shift $bench_shift
[ $# -gt 0 ] || { echo "a2a_interleave.sh: no BYTES given" >&2; exit 2; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

"$icfabd" --apply --preset "$PRESET" > /dev/null || exit 1
[ -n "$N" ] || N=$("$icfabctl" -j node list |
	python3 -c 'import json,sys; print(sum(1 for x in json.load(sys.stdin)["nodes"] if x["kind"] == "endpoint"))') || exit 1
echo "# $PRESET, $N ranks: bytes per pair, FDEV_INTERLEAVE, emulated us, bound us, bound/emulated"
for b in "$@"; do
	for k in $(echo "$KS" | tr , ' '); do
		"$icfabctl" stats reset > /dev/null || exit 1
		FDEV_INTERLEAVE=$k "$t" coll alltoall direct "$N" "$b" > "$tmp/run" || exit 1
		"$icfabctl" -j stats > "$tmp/stats" || exit 1
		python3 - "$b" "$k" "$tmp/run" "$tmp/stats" <<'PY' || exit 1
import json, sys
b, k, run, stats = sys.argv[1:]
t = json.load(open(run))["time_ps"]
bound = max(l["busy_ps"] for l in json.load(open(stats))["links"])
print("%s %s %.3f %.3f %.3f" % (b, k, t / 1e6, bound / 1e6, bound / t))
PY
	done
done
