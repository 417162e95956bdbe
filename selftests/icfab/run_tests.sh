#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Run the icfab selftests inside the test VM (tools/vm/run starts it with
# the module loaded). Each test binary gets a marker in the kernel log
# first, and a run that left a kernel warning behind fails even when its
# own assertions passed.
#
# usage: run_tests.sh [TEST...]   (default: every *_test beside this script)

dir=$(dirname "$0")
bin=${ICFAB_SELFTEST_BIN:-$dir}
bad='BUG:|WARNING:|Oops|refcount|corruption|Poison|Redzone|lockup|stall'
failed=0

[ $# -gt 0 ] || set -- chardev_test genl_test topo_test queue_test module_test icfabctl_test.sh icfabd_test.sh a2a_test.sh stats_test trace_test.sh contention_test.sh region_test memory_test uring_test circuit_test circuit_test.sh fdev_test.sh live_test paced_test closed_form_test multicast_test fault_test.sh ocs_test.sh

for t in "$@"; do
	marker="icfab-selftest: begin $t $$"
	echo "$marker" > /dev/kmsg
	echo "# ---- $t"
	"$bin/$t"
	rc=$?
	[ $rc -eq 0 ] || failed=1

	if dmesg | sed -n "/$marker/,\$p" | grep -E "$bad"; then
		echo "not ok - $t left a kernel warning in dmesg"
		failed=1
	else
		echo "ok - $t left dmesg clean"
	fi
done
exit $failed
