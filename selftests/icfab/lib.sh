# SPDX-License-Identifier: GPL-2.0
#
# Shared by the shell selftests (sourced, not run): TAP checks (the
# sourcing script sets n=0 failed=0); and for those that drive icfabd,
# icfabctl as root and as user 65534 over the daemon's socket, waiting
# for a log line, stopping the daemon, the fabric's generation: those
# set icfabd, icfabctl, sock (the socket), tmp (their temporary
# directory, removed at exit) and dpid (the daemon's pid, or empty). The sourcing script's own definitions, made after sourcing,
# win. A test that changes the fabric's segment size puts it back when
# it exits (segment_size, below): the C fixtures that run later build
# their topologies at whatever size the fabric has, and their closed
# forms assume the default.

check() {	# check DESCRIPTION COMMAND...
	desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n $desc"
	else
		echo "not ok $n $desc"
		failed=1
	fi
}

ctl() {		# icfabctl as root, through $sock
	ICFABD_SOCKET=$sock "$icfabctl" "$@"
}

# for_nobody PROG: print the path of a copy of PROG that user 65534 can
# run: in $tmp/nobody (made mode 755, and $tmp too), removed with $tmp.
# The tree's own binaries may sit under a directory other users cannot
# enter (a clone in root's 0700 home), so the tests never run them as
# another user directly.
for_nobody() {
	mkdir -p "$tmp/nobody" && chmod 755 "$tmp" "$tmp/nobody" &&
		cp "$1" "$tmp/nobody/" && chmod 755 "$tmp/nobody/${1##*/}" &&
		echo "$tmp/nobody/${1##*/}"
}

nobody() {	# icfabctl as user 65534, a member of icfab, through $sock
	[ -n "$icfabctl_nobody" ] || icfabctl_nobody=$(for_nobody "$icfabctl")
	setpriv --reuid=65534 --regid=65534 --groups icfab \
		env ICFABD_SOCKET="$sock" "$icfabctl_nobody" "$@"
}

wait_for() {	# wait_for FILE PATTERN SECONDS
	i=0
	while [ $i -lt $(($3 * 4)) ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.25
		i=$((i + 1))
	done
	return 1
}

# stop_daemon: SIGTERM, and what it is stuck in if it does not leave
stop_daemon() {
	kill "$dpid"
	i=0
	while kill -0 "$dpid" 2>/dev/null && [ $i -lt 40 ]; do
		sleep 0.25
		i=$((i + 1))
	done
	if kill -0 "$dpid" 2>/dev/null; then
		echo "# icfabd $dpid ignored SIGTERM for 10 s; wchan $(cat /proc/$dpid/wchan 2>/dev/null):"
		sed 's/^/#   /' /proc/$dpid/stack 2>/dev/null
		kill -9 "$dpid"
	fi
	wait "$dpid"
	dpid=
}

# Read from icfabctl's text, not its JSON through python3: a python start
# costs seconds under TCG, and the tests ask for the generation often.
generation() {	# the committed generation, from icfabctl info
	"$icfabctl" info | sed -n 's/^generation: *//p'
}

# The fabric's segment size in bytes, from icfabctl info.
segment_size() {
	"$icfabctl" info | sed -n 's/^segment-size: *\([0-9]*\) bytes$/\1/p'
}
