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
# -E, the DMA engines' use, on tpu-v4-cube at its own 4 KiB segments:
# with 65536 bytes from every rank to each of its 63 others, in slots
# (-H, each pair's 8-byte count with its bytes), every source serialises
# 63 x 65544 bytes at 50 GB/s on its first links, 82.585 us, and its
# engines cannot have been held for less; -E must not change the run.
"$icfabd" --dump --yaml --preset tpu-v4-cube > "$tmp/tpu4k.yaml"
for dma in 4 6; do
	n=$((n + 1))
	plain=$(emulated -H -D $dma -m "$tmp/m65536.json:dispatch" -o lead "$tmp/tpu4k.yaml")
	"$bound" -H -E -N 0 -D $dma -m "$tmp/m65536.json:dispatch" -o lead \
		"$tmp/tpu4k.yaml" > "$tmp/e.out" 2> "$tmp/e.err"
	with=$(awk '{ print $7 }' "$tmp/e.out")
	if [ -n "$plain" ] && [ "$plain" = "$with" ] &&
	   awk -v d=$dma '/^engines:/ {
		for (i = 1; i <= NF; i++) {
			if ($i == "held") held = $(i + 1)
			if ($i == "link") ser = $(i + 1)
		}
		ok = $2 == d && ser == "82.585" && held + 0 >= ser + 0
	   } END { exit !ok }' "$tmp/e.err"; then
		echo "ok $n tpu-v4-cube, -E with $dma DMA engines: $(grep '^engines:' "$tmp/e.err" | cut -c1-60)... ($with us either way)"
	else
		echo "not ok $n tpu-v4-cube, -E with $dma DMA engines: $with us against $plain without -E; $(cat "$tmp/e.err")"
		failed=1
	fi
done
echo "1..$n"
exit $failed
