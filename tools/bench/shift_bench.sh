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

top=$(cd "$(dirname "$0")/../.." && pwd)
"$top/build/bin/icfabd" --apply --preset ipu-mk2 > /dev/null || exit 1
exec "$top/build/bin/shift_bench" -b 5500000000 "$@"
