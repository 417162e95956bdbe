#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fdev_shift(3), the compute-shift loop, on 8 tiles of a crossbar
# exchange at 4 GB/s and 100 ns per cable: where the partitions end up
# (with data), and the emulated time against its exact closed form, BSP
# and overlapped (libfabricdev/tests/shift_test.c). TAP output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
icfabd=$top/build/bin/icfabd
t=$top/build/libfabricdev/tests/shift_test
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/xbar.yaml" <<'YAML'
topology:
  exchange: {tiles: 8, mode: crossbar, bandwidth: 4GB/s, latency: 100ns,
             class: ipu}
YAML

echo "TAP version 13"
if ! "$icfabd" --apply "$tmp/xbar.yaml" > "$tmp/apply" 2>&1; then
	sed 's/^/# /' "$tmp/apply"
	echo "not ok 1 crossbar of 8 tiles applied"
	echo "1..1"
	exit 1
fi
echo "# crossbar of 8 tiles applied"
"$t" device 4000000000 100000
