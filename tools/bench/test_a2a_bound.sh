#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Host test of build/bench/a2a_bound: its two ways of running an
# all-to-all on the host engine must give the same emulated time to the
# ps where they post the same transfers. A uniform all-to-all (-b, -c)
# and the same bytes as a matrix (-m, libfabricdev's own plan code) are
# the same pieces in the same order from each source; the module orders
# what happens at one instant by (endpoint, queue, sequence) (kmod/data.c,
# icfab_xfer_submit()), and so must both. With -m keyed by its place in
# the plan instead (round before source), ties at the links went another
# way: 188.190 us against 185.258 at 256 KiB per pair with leads on
# tpu-v4-cube, and on moe_bench's matrices 10 to 30 us off the module's
# times (tools/bench/README.md, "Route leads and uneven exchanges").
# TAP output.

top=$(cd "$(dirname "$0")/../.." && pwd)
bound=$top/build/bench/a2a_bound
icfabd=$top/build/bin/icfabd
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

echo "TAP version 13"
if [ ! -x "$bound" ] || [ ! -x "$icfabd" ]; then
	echo "1..0 # SKIP build/bench/a2a_bound or build/bin/icfabd not built"
	exit 0
fi

# tpu-v4-cube at 64 KiB segments, as moe_bench.sh runs it.
"$icfabd" --dump --yaml --preset tpu-v4-cube |
	sed 's/^  name: tpu-v4-cube$/&\n  segment_size: 64KiB/' > "$tmp/tpu.yaml"

# matrix RANKS BYTES: moe_bench -M's JSON, BYTES from every rank to
# every other one in both phases.
matrix() {
	awk -v n="$1" -v b="$2" 'BEGIN {
		m = "["
		for (i = 0; i < n; i++) {
			m = m (i ? ", [" : "[")
			for (j = 0; j < n; j++)
				m = m (j ? ", " : "") (i == j ? 0 : b)
			m = m "]"
		}
		m = m "]"
		printf "{\"dispatch\": %s, \"combine\": %s}\n", m, m
	}'
}

# The emulated time (the 7th field of a2a_bound's line).
emulated() {
	"$bound" "$@" 2> /dev/null | awk '{ print $7 }'
}

for bytes in 65536 262144; do
	matrix 64 $bytes > "$tmp/m$bytes.json"
	for order in rotate lead; do
		n=$((n + 1))
		u=$(emulated -b $bytes -c $((bytes / 65536)) -o $order "$tmp/tpu.yaml")
		m=$(emulated -m "$tmp/m$bytes.json:dispatch" -o $order "$tmp/tpu.yaml")
		if [ -n "$u" ] && [ "$u" = "$m" ]; then
			echo "ok $n tpu-v4-cube, $bytes bytes per pair, -o $order: -m as -b ($m us)"
		else
			echo "not ok $n tpu-v4-cube, $bytes bytes per pair, -o $order: -m $m us, -b $u us"
			failed=1
		fi
	done
done
echo "1..$n"
exit $failed
