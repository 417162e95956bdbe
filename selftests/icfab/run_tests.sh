#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Run the icfab selftests inside the test VM (tools/vm/run starts it with
# the module loaded). Each test gets a marker in the kernel log first, and
# a run that left a kernel warning behind, or the module referenced once
# its processes were gone, fails even when its own assertions passed.
#
# Each test has its own time limit (the list below; `timeout=` in
# settings for a test named on the command line but not listed). A test
# that overruns it is killed with every process it started, fails as
# "not ok - NAME timed out after N s", and the suite goes on with the
# next one. After every test one line says how it ended:
#   # icfab-selftest: done NAME rc=RC time=SECONDS
# which tools/check turns into its progress lines.
#
# usage: run_tests.sh [TEST...]   (default: the run list below;
#                                  ICFAB_SELFTEST_LIMIT=SECS overrides every limit)
#        run_tests.sh --list      print the run list (the Makefile builds it)
#        run_tests.sh --limits    print the sum of its time limits, seconds

# The run list, in order: a test and its time limit in seconds. The limits
# are for hangs, not for timing: about three times the longest run seen on
# a loaded 2-core host under TCG (icfabctl_test.sh took 507 s with five
# other VMs running). This is the only list: selftests/icfab/Makefile
# reads it.
run_list='
chardev_test		600
access_test		600
quota_test		600
genl_test		600
topo_test		600
queue_test		600
module_test		600
icfabctl_test.sh	1500
icfabd_test.sh		1200
a2a_test.sh		600
stats_test		600
energy_test		600
calibration_test	600
ecmp_test		600
tier_test		600
shift_test.sh		600
trace_test.sh		600
contention_test.sh	600
region_test		600
memory_test		600
copy_test		600
uring_test		600
cq_test			600
teardown_test		600
lock_hold_test		600
ctx_test		600
circuit_test		600
circuit_test.sh		600
fdev_test.sh		2400
capacity_test.sh	600
live_test		600
paced_test		600
closed_form_test	600
multicast_test		600
recv_test		600
trigger_test		600
notify_test.sh		1200
procs_test.sh		600
ep_test.sh		1200
scale_test		600
par_test.sh		600
pdata_test.sh		900
fault_test.sh		1500
ocs_test.sh		1500
torch_test.sh		2700
syscall_fuzz		600
race_test		600
'
# Limits of tests that run only when named (not in the run list).
named_only='
fdev_torch_test.sh	3000
torch_dist_suite.py	3000
'

case ${1:-} in
--list)
	echo "$run_list" | awk 'NF { print $1 }'
	exit 0 ;;
--limits)
	echo "$run_list" | awk 'NF { s += $2 } END { print s }'
	exit 0 ;;
esac

dir=$(dirname "$0")
bin=${ICFAB_SELFTEST_BIN:-$dir}
bad='BUG:|WARNING:|Oops|refcount|corruption|Poison|Redzone|lockup|stall'
default_limit=$(sed -n 's/^timeout=//p' "$dir/settings" 2>/dev/null)
default_limit=${default_limit:-300}
failed=0

[ $# -gt 0 ] || set -- $(echo "$run_list" | awk 'NF { print $1 }')

# Under TCG every process costs, so the bookkeeping around a test forks
# nothing it can avoid: limits are looked up and seconds read
# (/proc/uptime) by the shell itself.
limit_of() {	# limit_of TEST: sets $limit
	limit=$default_limit
	while read -r name l; do
		[ "$name" = "$1" ] && limit=$l
	done <<EOF
$run_list$named_only
EOF
}

now() {		# now: sets $now, whole seconds since boot
	read -r now _ < /proc/uptime
	now=${now%.*}
}

# In the test VM no udev gives the nodes their group (tools/vm/init.sh
# does at boot): after a test that reloaded the module, this does.
regroup() {
	[ -n "${ICFAB_VM:-}" ] || return 0
	for n in /dev/icfab*; do
		[ -c "$n" ] && [ "$(stat -c %G "$n")" != icfab ] &&
			chgrp icfab "$n" 2>/dev/null
	done
	return 0
}

# The module's reference count ($refs; empty without the module): what
# userspace holds (open files, mappings, netlink dumps in progress).
refs() {
	refs=
	[ -r /sys/module/icfab/refcnt ] && read -r refs < /sys/module/icfab/refcnt
	return 0
}

# Processes that hold the device open or mapped, as "PID COMM; ...".
holders() {
	for p in /proc/[0-9]*; do
		if ls -l "$p/fd" 2>/dev/null | grep -q /dev/icfab ||
		   grep -q /dev/icfab "$p/maps" 2>/dev/null; then
			printf '%s %s; ' "${p#/proc/}" "$(cat "$p/comm" 2>/dev/null)"
		fi
	done
}

for t in "$@"; do
	regroup
	refs
	refs0=${refs:-0}
	limit_of "$t"
	limit=${ICFAB_SELFTEST_LIMIT:-$limit}
	marker="icfab-selftest: begin $t $$"
	echo "$marker" > /dev/kmsg
	echo "# ---- $t (limit ${limit}s)"
	now
	start=$now
	# timeout runs the test in a process group of its own and, on expiry,
	# signals the whole group: daemons a shell test left behind go too.
	timeout -k 10 "$limit" "$bin/$t"
	rc=$?
	now
	secs=$((now - start))
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "not ok - $t timed out after ${limit}s (killed)"
	fi
	[ $rc -eq 0 ] || failed=1

	if dmesg | sed -n "/$marker/,\$p" | grep -E "$bad"; then
		echo "not ok - $t left a kernel warning in dmesg"
		failed=1
	else
		echo "ok - $t left dmesg clean"
	fi

	# Everything the test started has ended, so its references to the
	# module must go too. The kernel may drop the last of them after the
	# process is gone (io_uring rings are torn down by a workqueue, whose
	# file puts delayed_fput closes later): allow 10 s. A test that leaves
	# a process or a reference behind would make the runner's rmmod fail
	# after the whole suite; here it is named.
	refs
	n=0
	while [ -n "$refs" ] && [ "$refs" -gt "$refs0" ] && [ $n -lt 100 ]; do
		sleep 0.1
		n=$((n + 1))
		refs
	done
	if [ -n "$refs" ] && [ "$refs" -gt "$refs0" ]; then
		echo "not ok - $t left the module referenced ($refs, $refs0 before; holders: $(holders))"
		failed=1
	else
		[ $n -gt 0 ] && echo "# $t: the module's count came back after $n x 0.1 s"
		echo "ok - $t left the module's count as it found it"
	fi
	echo "# icfab-selftest: done $t rc=$rc time=$secs"
done
exit $failed
