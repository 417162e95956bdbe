#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# One process per rank, up to 1024 of them: independently started
# processes (FDEV_RANK/FDEV_SIZE/FDEV_JOB), each with its own context and
# no proxy, against one process driving every rank, timing only, on the
# same fabric. Run it in the test VM as root (a uid other than 0 may open
# 256 contexts: the module's max_uid_contexts), with memory for the
# processes:
#
#	tools/vm/run -k 6.12 -m 4G -t 3600 -- tools/bench/procs_table.sh \
#		[-p PRESET] [-r RANKS] [-m MODES] [-b BYTES] [-a 0] \
#		[TOKENS [SEGMENT]]
#
# PRESET (default ualink-pod, 1024 accelerators; tpu-v4-pod), RANKS
# (default 64,256,1024), MODES: the MoE modes (default tp,ll; hier, mc;
# "" for none), BYTES per pair of the all-to-all (default 4096; -a 0
# leaves the all-to-all out), TOKENS per rank (default 16), H = 7168,
# top-8 of max(256, EP) experts, hier with nodes of 8, the fabric's
# segment size SEGMENT (default 64 KiB). mc, as in ep_table.sh: the
# preset again with MC_COLORS colour-table entries per switch (default
# 64) and icfabd serving its circuits for the run; a preset without
# switches (tpu-v4-pod: its chips are joined by cables, its optical
# switches are circuit switches with no colour table) has no multicast
# hardware, and mc is not run there: the script says so. Up to 257
# ranks the processes multicast as one process does, each over its own
# rank's circuit; past that they send unicast, and the one process they
# are compared with does too (FDEV_MC_UNICAST=1, the row says "mc
# (unicast)"). FDEV_TIMEOUT_MS
# reaches the processes (default 1800000). FDEV_DEV_TEST names another
# fdev_dev_test (static: another build's library) for the all-to-all
# rows, both runs; MOE_BENCH another moe_bench for the MoE rows.
#
# Per rank count: a direct all-to-all (fdev_dev_test mp, twice in a row)
# and each MoE mode's dispatch and combine (moe_bench -P: every process
# draws the same routing as the one-process run), first by one process
# driving every rank, then by RANKS processes. A row gives the emulated
# time of each, whether every process saw exactly the one-process time
# (the all-to-all: every rank's time; MoE: the latest rank's dispatch and
# combine), the wall time of each (all processes started to all exited),
# and the peak of the kernel's slab (Slab in /proc/meminfo, every 100 ms)
# above its value before, for the processes' run. After the table, for
# each all-to-all run, the longest any process took from its start to
# the end of the rendezvous (fdev_comm_init()) and then for the two
# operations, the operations' time summed over the processes, rank 0's
# peak of anonymous memory (Anonymous in /proc/PID/smaps_rollup, every
# 200 ms; its largest anonymous mappings at that peak on stderr), the
# context switches the whole guest made during the processes' run (ctxt
# in /proc/stat: every sleep and wakeup of a process in a meeting is
# one) and the guest's busy CPU time meanwhile (both CPUs); on stderr at
# once too; and for each MoE mode its emulated times against
# moe_bench's bound (the busiest rank port: 100 GB/s a UALink port,
# 300 GB/s a TPU v4 chip's six links, as ep_table.sh). Exits 1 if any
# run fails or any time differs.

. "$(dirname "$0")/lib.sh"
t=${FDEV_DEV_TEST:-$top/build/libfabricdev/tests/fdev_dev_test}
bench=${MOE_BENCH:-$top/build/bin/moe_bench}
PRESET=ualink-pod RANKS=64,256,1024 MODES=tp,ll BYTES=4096 A2A=1
MC_COLORS=${MC_COLORS:-64}
bench_opts "p=PRESET r=RANKS m=MODES b=BYTES a=A2A" \
	"procs_table.sh [-p PRESET] [-r RANKS] [-m MODES] [-b BYTES] [-a 0] [TOKENS [SEGMENT]]" "$@"
shift $bench_shift
T=${1:-16}
SEG=${2:-65536}
dir=$(mktemp -d)
spid=
dpid=
apid=
bench_segment_keep
trap 'bench_segment_restore; [ -n "$spid" ] && kill "$spid" 2>/dev/null; [ -n "$apid" ] && kill "$apid" 2>/dev/null; [ -n "$dpid" ] && kill "$dpid" 2>/dev/null; rm -rf "$dir" /dev/shm/fdev-*-pt$$*' EXIT
# The processes start from copies in $dir: in the test VM the tree is
# the host's through virtiofs, where a start took 0.25 to 0.62 s, from
# a copy 0.22 s (docs/LIBFABRICDEV.md, "One process per rank"). Their
# dynamic loader and shared libraries are copied too, and the loader
# runs them: under virtiofs with cache=auto (the runner's before
# afdbd89) every open() dropped a file's page cache, so each start (and
# each sed or sleep of this script) took libc and ld.so away from every
# running process, which faulted them in again, each page zeroed: 45% of
# the guest's CPU at 320 processes (same section, "Who zeroed the
# pages"). The copies, in the VM's memory, keep the figures apart from
# how the tree is shared.
cp "$t" "$bench" "$dir/" || exit 1
t=$dir/$(basename "$t")
bench=$dir/$(basename "$bench")
# SLEEP: sleep(1), started like the processes.
SLEEP=sleep
ld=$(ldd "$t" 2> /dev/null | sed -n 's/^[[:space:]]*\(\/[^ ]*ld-linux[^ ]*\) .*/\1/p' | head -1)
if [ -n "$ld" ] && mkdir "$dir/lib" && cp /bin/sleep "$dir/" &&
   cp -L "$ld" $( (ldd "$t"; ldd "$bench"; ldd /bin/sleep) |
		 sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p' | sort -u) "$dir/lib/"; then
	ld="$dir/lib/$(basename "$ld") --library-path $dir/lib"
	SLEEP="$ld $dir/sleep"
else
	ld=
fi

# ctxt: context switches since boot, every CPU (/proc/stat).
ctxt() {
	sed -n 's/^ctxt //p' /proc/stat
}

# busy: the guest's busy CPU time since boot, every CPU, in ticks
# (USER_HZ: user, nice, system, irq, softirq in /proc/stat).
busy() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat
}

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# procs N OUT CMD...: N processes of CMD, rank r's stdout in OUT.r;
# sets wall (ms), peak (slab KiB above the start), csw (context
# switches meanwhile) and cpu (busy CPU ticks meanwhile); fails if any
# does.
procs() {
	np=$1 o=$2
	shift 2
	base=$(slab_kb)
	echo "$base" > "$dir/smp"
	(while :; do slab_kb >> "$dir/smp"; $SLEEP 0.1; done) &
	spid=$!
	job=pt$$-$(basename "$o")
	csw=$(ctxt)
	cpu=$(busy)
	t0=$(now_ms)
	r=0 pids=
	while [ $r -lt "$np" ]; do
		FDEV_JOB=$job FDEV_RANK=$r FDEV_SIZE=$np FDEV_TIMEOUT_MS=${FDEV_TIMEOUT_MS:-1800000} \
			$ld "$@" > "$o.$r" 2> "$o.e$r" &
		pids="$pids $!"
		[ $r = 0 ] && anon_watch $! &&
			apid=$!
		r=$((r + 1))
	done
	prc=0
	for p in $pids; do wait "$p" || prc=1; done
	wall=$(($(now_ms) - t0))
	csw=$(($(ctxt) - csw))
	cpu=$(($(busy) - cpu))
	kill "$spid" "$apid"
	wait "$spid" "$apid" 2> /dev/null
	spid= apid=
	anon=$(cat "$dir/anon" 2> /dev/null || echo 0)
	# Rank 0's largest anonymous mappings at its peak: KiB, size, range.
	: > "$dir/smaps.top"
	[ -s "$dir/smaps" ] && awk '
		/^[0-9a-f]+-[0-9a-f]+ / { m = $1; nm = $6 }
		/^Size:/ { sz = $2 }
		/^Anonymous:/ && $2 >= 64 { printf "  anonymous %d KiB of %d KiB at %s %s\n", $2, sz, m, nm }' \
		"$dir/smaps" | sort -k2,2nr | head -6 > "$dir/smaps.top"
	rm -f "$dir/anon" "$dir/smaps"
	peak=$(($(sort -n "$dir/smp" | tail -1) - base))
	[ $prc = 0 ] || cat "$o".e* | sort | uniq -c | sort -rn | head -5 >&2
	return $prc
}

# anon_watch PID: PID's peak of Anonymous (KiB, smaps_rollup) in
# $dir/anon and its smaps at that peak in $dir/smaps, every 200 ms
# until killed (the sampler's sleep is started like the processes).
anon_watch() {
	(hi=0
	while :; do
		a=$(sed -n 's/^Anonymous: *\([0-9]*\) kB/\1/p' "/proc/$1/smaps_rollup" 2> /dev/null)
		if [ -n "$a" ] && [ "$a" -gt "$hi" ]; then
			hi=$a
			echo "$hi" > "$dir/anon"
			cat "/proc/$1/smaps" > "$dir/smaps" 2> /dev/null
		fi
		$SLEEP 0.2
	done) &
}

# row OP N ONE_PS ONE_WALL_MS "PROCS_PS..." PROCS_WALL_MS PEAK_KB [latest]:
# the processes' times against the one process's: every one of them, or
# with "latest" the largest. ONE_PS "A B": the processes' times come in
# pairs (first and second operation), each against its own.
row() {
	echo "$5" | tr ' ' '\n' | awk -v op="$1" -v n="$2" -v one="$3" \
		-v w1="$4" -v wp="$6" -v kb="$7" -v latest="${8:-}" '
		BEGIN { m = split(one, o, " "); if (m > 1) one = o[1] ", " o[2] }
		NF { want = m > 1 ? o[k % 2 + 1] : one
		     v[k++] = $1; lo = (k == 1 || $1 < lo) ? $1 : lo
		     hi = (k == 1 || $1 > hi) ? $1 : hi; bad += $1 != want }
		END {
			same = k && (latest ? hi == one : !bad)
			printf "| %d | %s | %s | %s | %s | %.1f | %.1f | %.1f |\n", n, op, one,
				lo == hi ? lo : lo ".." hi, same ? "yes" : "NO",
				w1 / 1000, wp / 1000, kb / 1024
			exit !same
		}' || rc=1
}

# apply [COLOURS]: the preset, with COLOURS colour-table entries per
# switch if given (the presets have none).
apply() {
	"$icfabd" --dump --yaml --preset "$PRESET" > "$dir/fabric.yaml" || exit 1
	[ -n "${1:-}" ] &&
		sed -i "/^defaults:/a\\  switch: {colors: $1}" "$dir/fabric.yaml"
	"$icfabd" --apply "$dir/fabric.yaml" > /dev/null || exit 1
	"$icfabctl" fabric set 0 segment-size "$SEG" > /dev/null || exit 1
}

# Multicast needs a switch with a colour table on each source's tree.
has_switches() {
	"$icfabd" --dump --yaml --preset "$PRESET" | sed 's/#.*//' | grep -q 'switch'
}

# unserve: icfabd stopped, the preset without colours again.
unserve() {
	kill "$dpid"
	wait "$dpid" 2> /dev/null
	dpid=
	unset ICFABD_SOCKET
	apply
}

case $PRESET in
tpu-v4-pod) bw=300 ;;
*) bw=100 ;;
esac
rc=0
apply
echo "$PRESET, timing only, all-to-all of $BYTES bytes per pair; MoE $T tokens per rank, H 7168, top-8"
echo
echo "| EP | operation | one process: ps | EP processes: ps | same | one process: wall s | processes: wall s | processes: slab peak MiB |"
echo "|---|---|---|---|---|---|---|---|"
for n in $(echo "$RANKS" | tr , ' '); do
	e=$((n > 256 ? n : 256))
	t0=$(now_ms)
	# Twice, as each process runs it: the second starts elsewhere.
	if [ "$A2A" = 0 ]; then
		:
	elif ! one=$(FDEV_COLL_REPEAT=2 "$t" coll alltoall direct "$n" "$BYTES" 2> "$dir/one.err" |
		sed -n 's/.*"time_ps":\([0-9]*\),"last_ps":\([0-9]*\).*/\1 \2/p') ||
	     [ -z "$one" ]; then
		echo "one process, all-to-all, EP $n: $(cat "$dir/one.err")" >&2
		rc=1
	elif w1=$(($(now_ms) - t0)) && procs "$n" "$dir/a2a$n" "$t" mp alltoall direct "$BYTES" 2; then
		row "all-to-all (twice)" "$n" "$one" "$w1" \
			"$(cat "$dir/a2a$n".[0-9]* | sed -n 's/.*"time_ps":\([0-9]*\),"last_ps":\([0-9]*\).*/\1 \2/p' | tr '\n' ' ')" \
			"$wall" "$peak"
		sed -n 's/.*"init_ms":\([0-9]*\),"ops_ms":\([0-9]*\).*/\1 \2/p' "$dir/a2a$n".[0-9]* |
			awk -v n="$n" -v csw="$csw" -v cpu="$cpu" -v hz="$(getconf CLK_TCK)" -v anon="$anon" '
			{ i = $1 > i ? $1 : i; o = $2 > o ? $2 : o; s += $2 }
			END { printf "EP %d, all-to-all by %d processes: rendezvous up to %.1f s, the two operations up to %.1f s (%.0f s summed over the processes), %.0f context switches, %.1f s of busy guest CPU, rank 0 anonymous peak %d KiB\n", n, n, i / 1000, o / 1000, s / 1000, csw, cpu / hz, anon }' |
			tee -a "$dir/notes" >&2
		tee -a "$dir/notes" < "$dir/smaps.top" >&2
	else
		echo "$n processes, all-to-all: failed" >&2
		rc=1
	fi
	for mode in $(echo "$MODES" | tr , ' '); do
		args="-n $n -t $T -H 7168 -e $e -k 8 -m $mode -b $bw"
		[ "$mode" = hier ] && args="$args -g 8 -B $bw"
		if [ "$mode" = mc ]; then
			if ! has_switches; then
				echo "EP $n, mc on $PRESET: not run: $PRESET has no multicast hardware (no switch, so no colour table to fork a circuit's tree; the library's multicast needs one)" |
					tee -a "$dir/notes" >&2
				continue
			fi
			apply "$MC_COLORS"
			if ! icfabd_serve "$dir/fabric.yaml" "$dir"; then
				unserve
				rc=1
				continue
			fi
		fi
		# mc by processes multicasts up to 257 ranks, as one process
		# does; past that they send each slab unicast to each rank
		# (docs/LIBFABRICDEV.md, "Multicast", Where): so does the one
		# process they are compared with, then (FDEV_MC_UNICAST=1).
		uni=0 label=$mode
		[ "$mode" = mc ] && [ "$n" -gt 257 ] && uni=1 label="mc (unicast)"
		t0=$(now_ms)
		FDEV_MC_UNICAST=$uni "$bench" $args > "$dir/one.json" 2> "$dir/one.err"
		one=$(sed -n 's/.*"dispatch_ps":\([0-9]*\),"combine_ps":\([0-9]*\).*/\1 \2/p' "$dir/one.json")
		w1=$(($(now_ms) - t0))
		if [ -z "$one" ]; then
			echo "one process, $mode, EP $n: $(cat "$dir/one.err")" >&2
			rc=1
		elif ! procs "$n" "$dir/$mode$n" "$bench" -P $args; then
			echo "$n processes, MoE $mode: failed" >&2
			rc=1
			one=
		fi
		[ "$mode" = mc ] && unserve
		[ -n "$one" ] || continue
		tr ',{}' '\n\n\n' < "$dir/one.json" | tr -d '"' | awk -F: -v n="$n" -v mode="$mode" -v w="$wall" -v kb="$peak" -v anon="$anon" '
			{ v[$1] = $2 }
			END { printf "EP %d, MoE %s by %d processes: dispatch %.1f us (bound / emulated %.3f), combine %.1f us (%.3f), wall %.1f s, slab peak %.1f MiB, rank 0 anonymous peak %d KiB\n",
				n, mode, n, v["dispatch_ps"] / 1e6, v["dispatch_bound_ps"] / v["dispatch_ps"],
				v["combine_ps"] / 1e6, v["combine_bound_ps"] / v["combine_ps"], w / 1000, kb / 1024, anon }' |
			tee -a "$dir/notes" >&2
		tee -a "$dir/notes" < "$dir/smaps.top" >&2
		for ph in dispatch combine; do
			v=$(cat "$dir/$mode$n".[0-9]* |
				sed -n "s/.*\"${ph}_ps\":\([0-9]*\).*/\1/p" | tr '\n' ' ')
			[ $ph = dispatch ] && o=${one% *} || o=${one#* }
			row "$label $ph (latest rank)" "$n" "$o" "$w1" "$v" "$wall" "$peak" latest
		done
	done
done
[ -s "$dir/notes" ] && echo && cat "$dir/notes"
exit $rc
