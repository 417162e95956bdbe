# SPDX-License-Identifier: GPL-2.0
#
# What the benchmark scripts that drive the module share; each sources it
# with `. "$(dirname "$0")/lib.sh"`. Sets top (the source tree) and the
# paths of icfabd and icfabctl in its build.

top=$(cd "$(dirname "$0")/../.." && pwd)
icfabd=$top/build/bin/icfabd
icfabctl=$top/build/bin/icfabctl

# bench_opts "L=VAR ..." USAGE "$@": each option -L sets VAR to its
# argument; any other option prints "usage: USAGE" and exits 2. Leaves the
# number of words the options took in bench_shift, for `shift`.
bench_opts() {
	bench_spec=$1 bench_usage=$2
	shift 2
	bench_letters=
	for bench_s in $bench_spec; do
		bench_letters=$bench_letters${bench_s%%=*}:
	done
	OPTIND=1
	while getopts "$bench_letters" bench_opt; do
		bench_var=
		for bench_s in $bench_spec; do
			[ "${bench_s%%=*}" = "$bench_opt" ] && bench_var=${bench_s#*=}
		done
		[ -n "$bench_var" ] || { echo "usage: $bench_usage" >&2; exit 2; }
		eval "$bench_var=\$OPTARG"
	done
	bench_shift=$((OPTIND - 1))
}

# bench_tokens "$@", after bench_opts: the words after the options of the
# scripts that run moe_bench, [TOKENS [SEGMENT]]. Sets T (tokens per
# rank, default 4096), SEG (the fabric's segment size in bytes, default
# 64 KiB) and BIG (tokens for the largest cases, their -T, default T).
bench_tokens() {
	shift $bench_shift
	T=${1:-4096}
	SEG=${2:-65536}
	BIG=${BIG:-$T}
}

# bench_segment_keep: remember the fabric's segment size, for
# bench_segment_restore, which a script that sets its own (the MoE ones
# run at 64 KiB) calls from its EXIT trap: whatever runs next in the same
# boot, a selftest's closed forms at the presets' 4 KiB for one, finds the
# fabric as it was. Nothing to restore if the module was not loaded.
bench_segment_keep() {
	bench_seg0=$("$icfabctl" info 2> /dev/null |
		sed -n 's/^segment-size: *\([0-9]*\) bytes$/\1/p')
}

bench_segment_restore() {
	[ -z "$bench_seg0" ] ||
		"$icfabctl" fabric set 0 segment-size "$bench_seg0" > /dev/null
}

# slab_kb: the kernel's slab memory now, in KiB (Slab in /proc/meminfo),
# read by the shell itself: a sampler starts no process of its own.
slab_kb() {
	while read -r k v u; do
		[ "$k" = Slab: ] && echo "$v" && return
	done < /proc/meminfo
}

# icfabd_serve CONFIG DIR: icfabd in the foreground on CONFIG (a topology
# file), its socket and log in DIR; waits up to a minute for it to serve.
# Sets dpid and exports ICFABD_SOCKET; fails, with the log on stderr, if
# it never serves.
icfabd_serve() {
	"$icfabd" --foreground --config "$1" --socket "$2/icfabd.sock" \
		> "$2/icfabd.log" 2>&1 &
	dpid=$!
	serve_i=0
	while [ $serve_i -lt 240 ] && ! grep -q serving "$2/icfabd.log"; do
		sleep 0.25; serve_i=$((serve_i + 1))
	done
	export ICFABD_SOCKET=$2/icfabd.sock
	grep -q serving "$2/icfabd.log" || { cat "$2/icfabd.log" >&2; return 1; }
}
