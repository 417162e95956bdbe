#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# libfabricdev's direct all-to-all against the max-channel-load bound,
# with and without FDEV_INTERLEAVE (coll.c), side by side in one run,
# timing only, one process driving every rank. Run it in the test VM:
#
#	tools/vm/run -k 6.12 -t 3600 -- tools/bench/a2a_interleave.sh \
#		[-p PRESET] [-n RANKS] [-k K,K,...] [-o OP] BYTES...
#
# PRESET (default tpu-v4-cube) is applied with its own segment size.
# For each BYTES per pair and each K (default unset,0,1,2,4; 0 is off,
# unset the library's default, one-segment pieces), one
# all-to-all (libfabricdev/tests/fdev_dev_test coll OP direct). OP is
# alltoall (the default), alltoallv (pair s, d sends BYTES x ((3s + d)
# mod 5) / 2: 0 to 2 BYTES, after its count all-gather) or alltoallvskew
# (fdev_dev_test's skewed counts); the bound is the links' own busy
# time whatever the matrix, count exchange included.
# The bound is the busiest link's busy time over the run, from
# `icfabctl -j stats` reset before it: the link that must carry the most
# bytes, at its rate (the max-channel-load bound). The second bound adds
# each link's latency (`icfabctl -j link list`) before the maximum: what
# a link carries last arrives that much later (tools/bench/a2a_bound.c).
# K is unset for the library's default. Prints one line per run:
#
#	BYTES K emulated_us bound_us bound/emulated bound_lat_us bound_lat/emulated

. "$(dirname "$0")/lib.sh"
t=$top/build/libfabricdev/tests/fdev_dev_test
PRESET=tpu-v4-cube
N=
KS=unset,0,1,2,4
OP=alltoall
bench_opts "p=PRESET n=N k=KS o=OP" \
	"a2a_interleave.sh [-p PRESET] [-n RANKS] [-k K,...] [-o OP] BYTES..." "$@"
case $OP in
alltoall|alltoallv|alltoallvskew) ;;
*) echo "a2a_interleave.sh: OP is alltoall, alltoallv or alltoallvskew" >&2; exit 2 ;;
esac
shift $bench_shift
[ $# -gt 0 ] || { echo "a2a_interleave.sh: no BYTES given" >&2; exit 2; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

"$icfabd" --apply --preset "$PRESET" > /dev/null || exit 1
[ -n "$N" ] || N=$("$icfabctl" -j node list |
	python3 -c 'import json,sys; print(sum(1 for x in json.load(sys.stdin)["nodes"] if x["kind"] == "endpoint"))') || exit 1
"$icfabctl" -j link list > "$tmp/links" || exit 1
echo "# $PRESET, $N ranks, $OP: bytes per pair, FDEV_INTERLEAVE, emulated us, bound us, bound/emulated, bound with latency us, bound with latency/emulated"
for b in "$@"; do
	for k in $(echo "$KS" | tr , ' '); do
		"$icfabctl" stats reset > /dev/null || exit 1
		if [ "$k" = unset ]; then
			env -u FDEV_INTERLEAVE "$t" coll "$OP" direct "$N" "$b"
		else
			FDEV_INTERLEAVE=$k "$t" coll "$OP" direct "$N" "$b"
		fi > "$tmp/run" || exit 1
		"$icfabctl" -j stats > "$tmp/stats" || exit 1
		python3 - "$b" "$k" "$tmp/run" "$tmp/stats" "$tmp/links" <<'PY' || exit 1
import json, sys
b, k, run, stats, links = sys.argv[1:]
t = json.load(open(run))["time_ps"]
lat = {l["id"]: l["latency_ps"] for l in json.load(open(links))["links"]}
busy = [(l["busy_ps"], lat.get(l["id"], 0))
        for l in json.load(open(stats))["links"] if l["busy_ps"]]
bound = max(p for p, _ in busy)
bound_lat = max(p + L for p, L in busy)
print("%s %s %.3f %.3f %.3f %.3f %.3f" % (b, k, t / 1e6, bound / 1e6, bound / t,
                                          bound_lat / 1e6, bound_lat / t))
PY
	done
done
