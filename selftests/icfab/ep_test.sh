#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# MoE beyond 64 ranks (TAP): one process drives 256 ranks, timing only
# (moe_bench), on ualink-pod: the throughput, low-latency and
# hierarchical (nodes of 8) dispatch and combine run, take emulated time
# no shorter than the busiest port's bound (moe_bench's, from the port
# rate), and the throughput run repeats to the picosecond on the other
# submission path (io_uring, then the ioctl path with FDEV_NO_URING=1).
# 16 tokens per rank, H = 7168, top-8 of 256 experts: a step posts 65280
# transfers at once, past the engine's first transfer table.
#
# ICFAB_EP_PRESETS="ualink-pod tpu-v4-pod" also runs the first 256 chips
# of tpu-v4-pod. That preset's 4096 chips take minutes to apply under
# TCG, which `make check` cannot spend on both kernels; the EP table
# (tools/bench/ep_table.sh) covers it.

top=${ICFAB_TOP:-$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)}
icfabd=$top/build/bin/icfabd
icfabctl=$top/build/bin/icfabctl
bench=$top/build/bin/moe_bench
tmp=$(mktemp -d)
n=0
failed=0
. "$(dirname "$0")/lib.sh"
seg0=$(segment_size)
trap '[ -z "$seg0" ] || "$icfabctl" fabric set 0 segment-size "$seg0" > /dev/null
      rm -rf "$tmp"' EXIT

echo "TAP version 13"

ep() {	# ep PRESET MODE BW: moe_bench at EP256 into $tmp/PRESET.MODE
	g=
	[ "$2" = hier ] && g="-g 8 -B $3"
	"$bench" -n 256 -t 16 -H 7168 -e 256 -k 8 -m "$2" -b "$3" $g \
		> "$tmp/$1.$2" 2> "$tmp/$1.$2.err" || { sed 's/^/# /' "$tmp/$1.$2.err"; return 1; }
	python3 - "$tmp/$1.$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d, c = r["dispatch_bound_ps"] / r["dispatch_ps"], r["combine_bound_ps"] / r["combine_ps"]
print("# EP%d %s: dispatch %.1f us (%.3f of the bound), combine %.1f us (%.3f)"
      % (r["ranks"], r["mode"], r["dispatch_ps"] / 1e6, d, r["combine_ps"] / 1e6, c))
sys.exit(0 if r["ranks"] == 256 and 0 < d <= 1 and 0 < c <= 1 else 1)
PY
}

presets=${ICFAB_EP_PRESETS:-ualink-pod}
for preset in $presets; do
	case $preset in
	tpu-v4-pod) bw=300 ;;
	*) bw=100 ;;
	esac
	check "$preset applied, 64 KiB segments" sh -c "
		'$icfabd' --apply --preset $preset > /dev/null &&
		'$icfabctl' fabric set 0 segment-size 65536 > /dev/null"
	for mode in tp ll hier; do
		check "$preset: EP256 $mode dispatch and combine, within the bound" ep $preset $mode $bw
	done
done
last=${presets##* }
case $last in tpu-v4-pod) bw=300 ;; *) bw=100 ;; esac
check "the $last throughput run repeats to the picosecond on the ioctl path" sh -c "
	FDEV_NO_URING=1 '$bench' -n 256 -t 16 -H 7168 -e 256 -k 8 -m tp -b $bw 2> /dev/null |
		cmp -s - '$tmp/$last.tp'"

echo "1..$n"
exit $failed
