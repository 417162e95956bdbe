#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# A timing-only all-to-all through the data path, against closed forms:
# on dgx-h100 (8 GPUs on one NVSwitch, 450 GB/s per GPU) every GPU sends
# 7 x S over its own link, so the last byte lands at 7 S / B plus the two
# hops' latencies (within 1%); one process drives all 8 endpoints; the
# same run twice gives the same time to the picosecond. TAP output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
icfabd=$top/build/bin/icfabd
a2a=$top/build/bin/icfab-a2a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"	# check

echo "TAP version 13"

check "dgx-h100 applied" sh -c "'$icfabd' --apply --preset dgx-h100 > /dev/null"
check "all-to-all of 1 MiB per pair runs" sh -c "'$a2a' -j 1M > '$tmp/a'"
check "it runs again" sh -c "'$a2a' -j 1M > '$tmp/b'"
check "8 endpoints, 56 transfers, none failed" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if (r["endpoints"], r["transfers"], r["errors"]) == (8, 56, 0) else 1)' "$tmp/a"
check "time = 7 S / 450 GB/s + 2 x 500 ns, within 1%" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
want = 7 * 1048576 / 450e9 * 1e12 + 2 * 500e3
got = r["time_ps"]
print("# time %d ps, closed form %.0f ps (%+.3f%%)" % (got, want, (got - want) / want * 100))
sys.exit(0 if abs(got - want) / want < 0.01 else 1)' "$tmp/a"
check "the second run took exactly as long" cmp -s "$tmp/a" "$tmp/b"

echo "1..$n"
exit $failed
