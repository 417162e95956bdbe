#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# T10's compute-shift loop (fdev_shift(3)) on ipu-mk2, timing only, one
# process driving the first 1024 tiles (the library's limit), against
# the exchange bound (steps x partition / 5.5 GB/s: every step each tile
# sends its partition out of its own port) and the compute bound (steps
# x compute). Run it in the test VM:
#
#	tools/vm/run -k 6.12 --no-debug -t 900 -- tools/bench/shift_bench.sh \
#		[shift_bench options: -n RANKS -s STEPS -S KIB,...]
#
# For each partition size, the compute per step is 0, the shift's own
# time and twice it; each runs BSP (compute, then shift, as on the IPU)
# and overlapped (FDEV_SHIFT_OVERLAP). One JSON line per run, then a
# table (tools/bench/README.md has one).
#
# -p PRESET first loads another preset; its options then describe it,
# e.g. Elk's HBM (partitions in each IPU's HBM, FDEV_SHIFT_TIER):
#
#	tools/bench/shift_bench.sh -p ipu-pod4-hbm -n 4 -b 96000000000 \
#		-T hbm -H 2000000000000 -S 1024,4096,16384

top=$(cd "$(dirname "$0")/../.." && pwd)
preset=ipu-mk2
if [ "${1:-}" = -p ] && [ $# -ge 2 ]; then
	preset=$2
	shift 2
fi
"$top/build/bin/icfabd" --apply --preset "$preset" > /dev/null || exit 1
[ "$preset" = ipu-mk2 ] && set -- -b 5500000000 "$@"
exec "$top/build/bin/shift_bench" "$@"
