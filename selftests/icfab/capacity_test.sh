#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Capacity never changes the clock (docs/TIMING.md, "Capacity"), on the
# module with libfabricdev (TAP). An MoE dispatch and combine, timing
# only, one process driving 16 ranks of h800-pod (two nodes of 8), with
# 1 KiB segments: tens of thousands of segments in flight (512 tokens
# per rank had 350 thousand).
#  - the engine's table starting at 16 events (growing as it must, from
#    far below what is in flight) and at the default (holding everything
#    at once) gives the same dispatch and combine times, to the
#    picosecond, at 128 tokens per rank (make check pays every run on
#    every test kernel, so these three take the smaller size);
#  - so does its transfer table starting at one transfer, where the
#    dispatch has 240 in flight;
#  - at 256 tokens per rank, 1 KiB and 16 KiB segments give times within
#    1% of each other (0.13% and 0.47% apart on 2026-12-06; at 128
#    tokens the fill is a larger share, 0.68% and 0.95%): the
#    segment size changes a time only by what whole segments explain
#    (a few segment times of pipeline fill and interleaving here), not by
#    how much the engine can hold at once. This pair runs the same plan
#    at both sizes (whole transfers, FDEV_INTERLEAVE=0): libfabricdev's
#    default interleaving cuts transfers into one-segment pieces, so its
#    plan, the workload the engine is given, is itself made of segments.

top=${ICFAB_TOP:-$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)}
icfabd=$top/build/bin/icfabd
icfabctl=$top/build/bin/icfabctl
bench=$top/build/bin/moe_bench
knob=/sys/kernel/debug/icfab/engine_events
xknob=/sys/kernel/debug/icfab/engine_xfers
sock=
dpid=
n=0
failed=0
. "$(dirname "$0")/lib.sh"

echo "TAP version 13"
[ -w "$knob" ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
if [ ! -w "$knob" ]; then
	echo "1..0 # SKIP $knob not there (module without it, or no debugfs)"
	exit 4
fi
first=$(cat "$knob")
xfirst=$(cat "$xknob")
seg0=$(segment_size)
trap 'echo "$first" > "$knob"
      echo "$xfirst" > "$xknob"
      [ -z "$seg0" ] || "$icfabctl" fabric set 0 segment-size "$seg0" > /dev/null' EXIT

moe_times() {	# moe_times EVENTS SEGMENT TOKENS [INTERLEAVE]: "dispatch_ps combine_ps" of one run
	echo "$1" > "$knob" &&
	"$icfabctl" fabric set 0 segment-size "$2" > /dev/null &&
	env ${4:+FDEV_INTERLEAVE=$4} "$bench" -n 16 -g 8 -b 160 -B 50 -t "$3" -H 7168 -e 256 -k 8 -m tp 2>/dev/null |
		sed -n 's/.*"dispatch_ps":\([0-9]*\),"combine_ps":\([0-9]*\),.*/\1 \2/p'
}

within_1pct() {	# within_1pct A B
	[ -n "$1" ] && [ -n "$2" ] &&
	[ $(( ($1 > $2 ? $1 - $2 : $2 - $1) * 100 )) -lt "$2" ]
}

"$icfabd" --apply --preset h800-pod > /dev/null || { echo "Bail out! icfabd --apply"; exit 1; }
small=$(moe_times 16 1024 128)
default=$(moe_times "$first" 1024 128)
echo "# 128 tokens, 1 KiB segments: dispatch, combine (ps): table of 16: $small;" \
     "default ($first): $default"
check "the same times with a table of 16 events as with the default" \
	test -n "$small" -a "$small" = "$default"
echo 1 > "$xknob"
one=$(moe_times "$first" 1024 128)
echo "$xfirst" > "$xknob"
echo "# a transfer table of one, growing: $one"
check "the same times with a transfer table of one as with the default" \
	test -n "$one" -a "$one" = "$default"

whole=$(moe_times "$first" 1024 256 0)
big=$(moe_times "$first" 16384 256 0)
echo "# 256 tokens, whole transfers (FDEV_INTERLEAVE=0): 1 KiB segments: $whole; 16 KiB segments: $big"
set -- $whole $big
check "dispatch at 1 KiB and 16 KiB segments within 1%" within_1pct "$1" "$3"
check "combine at 1 KiB and 16 KiB segments within 1%" within_1pct "$2" "$4"

echo "1..$n"
exit $failed
