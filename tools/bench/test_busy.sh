#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A selftest's guest CPU time under several builds of the module, loaded in
# turn in one boot of the test VM. Run it under tools/vm/run --icount: there
# virtual time is guest instructions, and the busy jiffies of /proc/stat
# (user, nice, system, irq, softirq) count the instructions the test's work
# took, where its wall time, and the guest's uptime (which jumps over idle
# time, -icount sleep=off), measure mostly how long it slept. Name each
# module twice, old new old new: the spread between a module's two runs is
# the test's own noise (polling loops count as busy).
#
#   tools/bench/test_busy.sh TEST A.ko B.ko A.ko B.ko
#
# TEST is a file of build/selftests/icfab (fdev_test.sh, recv_test...).
# Prints, per module: "busy-cs N uptime-s S tests T failed F".
set -u
[ $# -ge 2 ] || { echo "usage: $0 TEST MODULE.ko..." >&2; exit 2; }
t=build/selftests/icfab/$1
shift
[ -x "$t" ] || { echo "$0: $t: no such test" >&2; exit 1; }
for ko in "$@"; do
	[ -r "$ko" ] || { echo "$0: $ko: no such module" >&2; exit 1; }
done
busy() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for ko in "$@"; do
	rmmod icfab 2>/dev/null
	insmod "$ko" || { echo "$0: insmod $ko failed" >&2; exit 1; }
	# A reload gives the nodes root's group; the test VM's users need icfab.
	for n in /dev/icfab*; do chgrp icfab "$n" 2>/dev/null; done
	b0=$(busy)
	read -r u0 _ < /proc/uptime
	"$t" > "$log" 2>&1
	b1=$(busy)
	read -r u1 _ < /proc/uptime
	echo "== $ko: busy-cs $((b1 - b0)) uptime-s $(echo "$u0 $u1" | awk '{ printf "%.0f", $2 - $1 }')" \
		"tests $(grep -c '^ok ' "$log") failed $(grep -c '^not ok ' "$log")"
done
