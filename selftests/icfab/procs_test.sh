#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# One process per rank, timing only (TAP): independently started
# processes (FDEV_RANK/FDEV_SIZE/FDEV_JOB), each with its own context and
# no proxy, against one process driving every rank, on dgx-h100 (8
# accelerators). No bytes move, so what other processes' ranks send a
# rank reaches it through the host rendezvous (libfabricdev/src/moe.c,
# moe_host_counts()):
#  - two all-to-alls by 8 processes take, on every one of them, exactly
#    the times of two by one process, and the second what the first
#    does (it starts at the instant of the first's last event, and its
#    transfers sort after what the engine processed there whatever their
#    keys; docs/TIMING.md, "Order": it took 1 ps more, before);
#  - an all-to-all-v with unequal counts (some pairs none) by 8
#    processes: each learns what every rank sends it (fdev_dev_test
#    checks its receive counts) and takes the one-process time exactly;
#  - the same skewed (rank 0 sends the last rank 256 KiB, every other
#    rank its next one byte): most ranks reach each step's meeting long
#    before rank 0's transfer ends, and must not hold the engine back
#    there meanwhile, or rank 0 never sees it end;
#  - on tpu-v4-cube, 8 processes' all-to-all-v posts each rank's pieces
#    in the order one process posts them without its play of the step
#    (the start fill and far pairs first need only the rank's own row
#    and the routes), with the same time; on data there, every element
#    and count right;
#  - the throughput and low-latency MoE dispatch and combine by 8
#    processes: the latest rank's times are the one-process run's, to
#    the ps (a combine that learnt only its own sources' counts sent
#    nothing: 0). They were 1 or 2 ps apart: a submission at the instant
#    of the last processed event started 1 ps later when its key sorted
#    before that event's, and which event that was, and a rank's key
#    (the context's first endpoint and the queue), differed between one
#    context driving every rank and a process per rank (docs/TIMING.md,
#    "Order");
#  - the same with one token per rank and one expert per rank, so that
#    some ranks get no token: a low-latency combine with nothing to send
#    still meets the others (it had no step, skipped the meeting, and
#    its peers waited for it until the timeout);
#  - the hierarchical dispatch and combine by 8 processes, nodes of 4:
#    each rank's counts go into a table in the job's shared file and
#    every rank reads the matrix in place (libfabricdev/src/moe_hier.c),
#    not a copy per process;
#  - the multicast dispatch and combine by 8 processes, each over the
#    circuit of its own rank that it opens through icfabd (timing-only
#    descriptors need no receive binding), twice: the one-process times
#    (they took unicast WRITEs before, on other routes), also in waves
#    of sources that the processes agree on (libfabricdev/src/moe_mc.c);
#  - of 2 processes, one runs an all-to-all fewer and leaves: the other,
#    waiting for it in a meeting it will never come to, fails at once
#    and says so (it waited to its timeout: a rank that left looked like
#    one not yet started).
#  - of 3 processes, rank 0 is killed (SIGKILL) while its idle thread
#    sits in the receive queue's WAIT of a kept-context meeting, between
#    two all-to-alls: the others fail with EPIPE, not at their timeout,
#    then meet without it; no /dev/shm file and no context is left
#    (ICFAB_IDLE_KILL_RUNS=N runs it N times, default 1).
# Every process has FDEV_TIMEOUT_MS=20000 (the left one: 120000) and 60 s
# (30): an error, not a hang.

top=${ICFAB_TOP:-$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)}
icfabd=$top/build/bin/icfabd
icfabctl=$top/build/bin/icfabctl
t=$top/build/libfabricdev/tests/fdev_dev_test
bench=$top/build/bin/moe_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /dev/shm/fdev-*-pr$$*' EXIT
n=0
failed=0
. "$(dirname "$0")/lib.sh"

echo "TAP version 13"
check "dgx-h100 applied" sh -c "'$icfabd' --apply --preset dgx-h100 > /dev/null"

procs() {	# procs NAME CMD...: 8 processes of CMD, rank r's stdout in NAME.r
	name=$1
	shift
	pids=
	for r in 0 1 2 3 4 5 6 7; do
		FDEV_JOB=pr$$$name FDEV_RANK=$r FDEV_SIZE=8 FDEV_TIMEOUT_MS=20000 \
			timeout 60 "$@" > "$tmp/$name.$r" 2> "$tmp/$name.e$r" &
		pids="$pids $!"
	done
	rc=0
	for p in $pids; do wait "$p" || rc=1; done
	[ $rc = 0 ] || sort "$tmp/$name".e* | uniq -c | sed 's/^/# /'
	return $rc
}

a2a() {		# first and second operation: one process's, on every process
	one=$(FDEV_COLL_REPEAT=2 "$t" coll alltoall direct 8 4096 |
		sed -n 's/.*"time_ps":\([0-9]*\),"last_ps":\([0-9]*\).*/\1 \2/p')
	procs a2a "$t" mp alltoall direct 4096 2 || return 1
	v=$(sed -n 's/.*"time_ps":\([0-9]*\),"last_ps":\([0-9]*\).*/\1 \2/p' "$tmp"/a2a.[0-7] |
		sort -u | tr '\n' ' ')
	echo "# one process: $one ps; 8 processes: $v"
	[ -n "$one" ] && [ "$v" = "$one " ] &&
	[ "${one% *}" = "${one#* }" ]
}
check "all-to-all twice by 8 processes: the one-process times on every one, the second the first's" a2a

# all-to-all-v OP (alltoallv, alltoallvskew) by 8 processes: every
# process's time = the one-process time, in fixed slots without a count
# round (each process's row through the job's file, as the heads would
# carry it on data; libfabricdev/src/coll.c, slots_procs_timing()), and
# in two rounds with TWO=1 (FDEV_A2AV_TWO_ROUNDS=1 for both)
a2av() {
	op=$1
	two=$2
	one=$(env ${two:+FDEV_A2AV_TWO_ROUNDS=1} "$t" coll "$op" direct 8 4096 |
		sed -n 's/.*"time_ps":\([0-9]*\).*/\1/p')
	procs "$op$two" env ${two:+FDEV_A2AV_TWO_ROUNDS=1} "$t" mp "$op" direct 4096 2 || return 1
	v=$(sed -n 's/.*"time_ps":\([0-9]*\),"last_ps":\([0-9]*\).*/\1 \2/p' "$tmp/$op$two".[0-7] |
		tr ' ' '\n' | sort -u | tr '\n' ' ')
	sl=$(sed -n 's/.*"a2av_slots":\([0-9]*\).*/\1/p' "$tmp/$op$two".[0-7] | sort -u | tr '\n' ' ')
	echo "# one process: $one ps; 8 processes: $v; in slots: $sl"
	[ -n "$one" ] && [ "$v" = "$one " ] && [ "$sl" = "$([ -n "$two" ] && echo 0 || echo 1) " ]
}
check "all-to-all-v by 8 processes, unequal counts, in slots: every one learns every row, the one-process time" a2av alltoallv

check "skewed all-to-all-v by 8 processes in slots (rank 0's transfers end long after most ranks' meet): no hang, the one-process time" a2av alltoallvskew

check "the same in two rounds (FDEV_A2AV_TWO_ROUNDS=1): the one-process time" a2av alltoallv 1

# a2avdata CASE: 8 processes on data, each driving its own rank (notify,
# no proxy), two all-to-all-v of f32 each with a 64 KiB workspace (slots
# of 4088 bytes; fdev_dev_test mpa2av): fit, every pair in its slot, some
# empty; over, some pairs one element over their slot and one two slots
# over, the rest empty or small, the rests sent pairwise after the slot
# step. Every element and count right on every rank, and the endpoints'
# links carried exactly the bytes the ranks say they sent: each pair's
# count and slot part (8 bytes for an empty one), a go-ahead (8) and the
# rest for each overflowing pair, nothing twice.
a2avdata() {
	cs=$1
	zc=$2
	"$icfabctl" stats reset > /dev/null || return 1
	procs "d$cs$zc" "$t" mpa2av 65536 "$cs" 2 $zc || return 1
	"$icfabctl" -j stats > "$tmp/d$cs$zc.stats" || return 1
	"$icfabd" --dump --json --preset dgx-h100 > "$tmp/dgx.json" || return 1
	cat "$tmp/d$cs$zc".[0-7] > "$tmp/d$cs$zc.all"
	python3 - "$tmp/dgx.json" "$tmp/d$cs$zc.stats" "$tmp/d$cs$zc.all" "$zc" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
st = {l["id"]: l["bytes"] for l in json.load(open(sys.argv[2]))["links"]}
r = [json.loads(l) for l in open(sys.argv[3]) if l.startswith("{")]
kind = {n["id"]: n["kind"] for n in t["nodes"]}
up = sum(st.get(l["id"], 0) for l in t["links"] if kind[l["src"]] == "endpoint")
down = sum(st.get(l["id"], 0) for l in t["links"] if kind[l["dst"]] == "endpoint")
want = sum(x["sent_bytes"] for x in r)
print("# %d ranks, slots of %d bytes, %s: errors %s, bad %d, in slots %s; bytes up %d, down %d (want %d); %s ps"
      % (len(r), r[0]["slot_bytes"] if r else 0, r[0]["case"] if r else "?",
         sorted({x["err"] for x in r}), sum(x["bad"] for x in r),
         sorted({x["slots"] for x in r}), up, down, want,
         sorted({x["time_ps"] for x in r})))
ok = True
if sys.argv[4] == "zc":
    # Zero copy against the copy path, the same call: no slower on any
    # rank, and every byte either staged or in place that the copy
    # path staged.
    for x in r:
        print("# rank %d: zero copy %d ps, copy %d ps; staged %d + in place %d, copy staged %d"
              % (x["rank"], x["time_ps"], x["copy_ps"], x["zc_staged"],
                 x["zc_in_place"], x["copy_staged"]))
    ok = r[0]["case"] == "roomzc" or \
        all(x["time_ps"] <= x["copy_ps"] and x["copy_in_place"] == 0 and
            x["zc_staged"] + x["zc_in_place"] == x["copy_staged"] for x in r)
# roomzc: the copy runs beside it refuse and stop (their bytes are room's,
# below), so only zero copy's elements, counts and errors are checked.
if r and r[0]["case"] == "roomzc":
    want = up = down
sys.exit(0 if ok and len(r) == 8 and all(x["err"] == 0 and x["bad"] == 0 and x["slots"] == 1 for x in r)
         and up == want and down == want else 1)
PY
}
# room: every rank sends rank 0 three slots more than its slot, more
# than rank 0's workspace holds: every rank returns -EMSGSIZE (rank 0
# refuses each rest, the senders learn it from its go-ahead), none hangs.
a2avroom() {
	procs "droom$1" "$t" mpa2av 65536 room 1 $1 || return 1
	sed 's/^/# /' "$tmp/droom$1.0"
}
features=$("$t" api 2> /dev/null | sed -n 's/^# uring . features \(0x[0-9a-fA-F]*\)$/\1/p')
if [ -n "$features" ] && [ $((features & 0x104)) -eq $((0x104)) ]; then
	check "all-to-all-v by 8 processes on data, every pair within its slot: every element, count and link byte" a2avdata fit
	check "all-to-all-v by 8 processes on data, pairs one element and two slots over theirs, others empty: every element, count and link byte" a2avdata over
	check "all-to-all-v by 8 processes on data, more to rank 0 than its workspace holds: -EMSGSIZE on every rank, no hang" a2avroom
	check "all-to-all-v by 8 processes on registered buffers, every pair within its slot: every element, count and link byte; no slower than the copy path, bytes staged or in place" a2avdata fit zc
	check "all-to-all-v by 8 processes on registered buffers, pairs over their slots: every element, count and link byte; no slower than the copy path, the rests in place" a2avdata over zc
	check "all-to-all-v by 8 processes on registered buffers, more to rank 0 than its workspace holds, its recv buffer in a region: the rests straight into it, every element" a2avdata roomzc zc
	check "all-to-all-v by 8 processes on registered sends, more to rank 0 than its workspace holds, its recv buffer ordinary: -EMSGSIZE on every rank, no hang" a2avroom zc
else
	check "all-to-all-v by processes on data # SKIP the module lacks ICFAB_F_RECV_NOTIFY or ICFAB_F_MEMORY" true
fi

moe() {		# moe NAME MOE_BENCH_ARGS...: latest rank's times = one process's
	name=$1
	shift
	one=$("$bench" "$@" | sed -n 's/.*"dispatch_ps":\([0-9]*\),"combine_ps":\([0-9]*\).*/\1 \2/p')
	procs "$name" "$bench" -P "$@" || return 1
	many=$(sed -n 's/.*"dispatch_ps":\([0-9]*\),"combine_ps":\([0-9]*\).*/\1 \2/p' "$tmp/$name".[0-7] |
		awk '{ d = $1 > d ? $1 : d; c = $2 > c ? $2 : c; k++ }
		     END { if (k == 8) print d + 0, c + 0 }')
	echo "# one process: $one; 8 processes, latest rank: $many (dispatch, combine ps)"
	[ -n "$one" ] && [ "$many" = "$one" ] && [ "${one#* }" != 0 ]
}
for m in tp ll; do
	check "$m dispatch and combine by 8 processes: the one-process times" \
		moe "$m" -n 8 -t 16 -H 7168 -e 256 -k 8 -m $m
	check "$m, 1 token and 1 expert per rank (some ranks get none): the one-process times" \
		moe "${m}1" -n 8 -t 1 -H 7168 -e 8 -k 1 -m $m
done
check "hier dispatch and combine by 8 processes in 2 nodes (counts in the job's table): the one-process times" \
	moe hier -n 8 -g 4 -B 50 -t 16 -H 7168 -e 256 -k 8 -m hier

# mc COLOURS: dgx-h100 with COLOURS colour-table entries per switch and
# icfabd serving circuits; the multicast dispatch and combine by 8
# processes, each over its own rank's circuit, twice: the one-process
# times both times. With 3 colours the 8 sources' trees go in waves of
# 2, which the processes agree on (8 and 4 at once are refused, by
# whichever requests come last).
mc() {
	c=$1
	"$icfabd" --dump --yaml --preset dgx-h100 |
		sed "/^defaults:/a\\  switch: {colors: $c}" > "$tmp/dgx$c.yaml" &&
	"$icfabd" --apply "$tmp/dgx$c.yaml" > /dev/null || return 1
	"$icfabd" --foreground --config "$tmp/dgx$c.yaml" --socket "$tmp/d$c.sock" \
		> "$tmp/icfabd$c.log" 2>&1 &
	dpid=$!
	wait_for "$tmp/icfabd$c.log" serving 60 || { stop_daemon; return 1; }
	export ICFABD_SOCKET=$tmp/d$c.sock
	mrc=0
	for k in 1 2; do
		moe "mc$c$k" -n 8 -t 16 -H 7168 -e 256 -k 8 -m mc || mrc=1
	done
	echo "# circuits opened: $(grep -c 'circuit [0-9]*: ' "$tmp/icfabd$c.log"), the highest colour: $(sed -n 's/.* color \([0-9]*\),.*/\1/p' "$tmp/icfabd$c.log" | sort -n | tail -1)"
	"$icfabctl" circuit list > "$tmp/left$c" 2>&1 || mrc=1
	grep '^circuit ' "$tmp/left$c" | sed 's/^/# left: /'
	grep -q '^circuit ' "$tmp/left$c" && mrc=1
	unset ICFABD_SOCKET
	stop_daemon
	return $mrc
}
check "mc dispatch and combine by 8 processes, each multicasting its rank's slabs over its own circuit, twice: the one-process times" mc 24
check "the same in waves of 2 sources (3 colours per switch), agreed by the 8 processes: the one-process times" mc 3
# a2avorder: on tpu-v4-cube, whose routes' leads order the pieces, 8
# processes' all-to-all-v in slots (fdev_dev_test's unequal counts, 0 to
# 16 pieces a pair): each rank posts its pieces (icfab_submit, in a
# tracefs instance of its own) in exactly the order in which one process
# driving every rank posts that rank's, its play of the step left out
# (FDEV_NO_CRITICAL_FIRST=1): the start fill and far pairs first need
# only a rank's own row and the routes (libfabricdev/src/coll.c,
# fdev_comm_interleave_v()). Processes posted in the leads' order alone
# before. The times agree to the ps; and the order is not the leads'
# alone (FDEV_NO_START_FILL=1 posts otherwise), so the check can fail.
submits() {	# submits OUT CMD...: CMD's transfers as src dst bytes, in order
	out=$1
	shift
	inst=/sys/kernel/tracing/instances/pr$$
	mkdir "$inst" || return 1
	echo 8192 > "$inst/buffer_size_kb"
	echo 1 > "$inst/events/icfab/icfab_submit/enable"
	"$@"
	src=$?
	echo 0 > "$inst/events/icfab/icfab_submit/enable"
	sed -n 's/.* src=\([0-9]*\) dst=\([0-9]*\) bytes=\([0-9]*\) .*/\1 \2 \3/p' \
		"$inst/trace" | sort -s -n -k1,1 > "$out"
	rmdir "$inst"
	return $src
}
a2avorder() {
	t0=$(date +%s)
	"$icfabd" --apply --preset tpu-v4-cube > /dev/null || return 1
	submits "$tmp/ord.one" sh -c "FDEV_NO_CRITICAL_FIRST=1 '$t' coll alltoallv direct 8 32768 > '$tmp/ord.onet'" &&
	submits "$tmp/ord.lead" sh -c "FDEV_NO_CRITICAL_FIRST=1 FDEV_NO_START_FILL=1 '$t' coll alltoallv direct 8 32768 > /dev/null" &&
	submits "$tmp/ord.procs" procs ord "$t" mp alltoallv direct 32768 1 || return 1
	one=$(sed -n 's/.*"time_ps":\([0-9]*\).*/\1/p' "$tmp/ord.onet")
	v=$(sed -n 's/.*"time_ps":\([0-9]*\).*/\1/p' "$tmp"/ord.[0-7] | sort -u | tr '\n' ' ')
	echo "# one process: $one ps; 8 processes: $v; transfers posted: $(wc -l < "$tmp/ord.one") and $(wc -l < "$tmp/ord.procs"); $(($(date +%s) - t0)) s"
	[ -s "$tmp/ord.one" ] && cmp -s "$tmp/ord.one" "$tmp/ord.procs" &&
	! cmp -s "$tmp/ord.one" "$tmp/ord.lead" && [ -n "$one" ] && [ "$v" = "$one " ]
}
check "all-to-all-v by 8 processes on tpu-v4-cube: each posts its pieces in the order one process posts them (own row and routes), the same time" a2avorder
# a2avtorus CASE: the same orders on data (notify processes, fdev_dev_test
# mpa2av with a 1 MiB workspace, slots of 65528 bytes, up to 16 pieces a
# pair) on tpu-v4-cube, where they move each rank's pieces: every
# element and count right on every rank, in slots.
a2avtorus() {
	t0=$(date +%s)
	procs "t$1" "$t" mpa2av 1048576 "$1" 2 || return 1
	echo "# $(($(date +%s) - t0)) s"
	python3 - "$tmp/t$1".[0-7] <<'PY'
import json, sys
r = [json.loads(l) for f in sys.argv[1:] for l in open(f) if l.startswith("{")]
print("# %d ranks, %s: errors %s, bad %d, in slots %s; %s ps"
      % (len(r), r[0]["case"] if r else "?", sorted({x["err"] for x in r}),
         sum(x["bad"] for x in r), sorted({x["slots"] for x in r}),
         sorted({x["time_ps"] for x in r})))
sys.exit(0 if len(r) == 8 and all(x["err"] == 0 and x["bad"] == 0 and x["slots"] == 1 for x in r) else 1)
PY
}
if [ -n "$features" ] && [ $((features & 0x104)) -eq $((0x104)) ]; then
	check "all-to-all-v by 8 processes on data on tpu-v4-cube, every pair within its slot: every element and count" a2avtorus fit
	check "the same with pairs over their slots: every element and count" a2avtorus over
else
	check "all-to-all-v by processes on data on tpu-v4-cube # SKIP the module lacks ICFAB_F_RECV_NOTIFY or ICFAB_F_MEMORY" true
fi
check "dgx-h100 applied again" sh -c "'$icfabd' --apply --preset dgx-h100 > /dev/null"

left() {
	FDEV_JOB=pr$$left FDEV_RANK=1 FDEV_SIZE=2 FDEV_TIMEOUT_MS=120000 \
		timeout 60 "$t" mp alltoall direct 4096 1 > "$tmp/left.1" 2>&1 &
	p1=$!
	FDEV_JOB=pr$$left FDEV_RANK=0 FDEV_SIZE=2 FDEV_TIMEOUT_MS=120000 \
		timeout 30 "$t" mp alltoall direct 4096 3 > "$tmp/left.0" 2>&1
	rc=$?
	wait "$p1"
	sed 's/^/# rank 0: /' "$tmp/left.0"
	[ $rc = 1 ] && grep -q "left before this barrier" "$tmp/left.0"
}
check "a rank that left: the one still waiting for it fails at once, not at its timeout" left

# fdev_dev_test mpidle: rank 0 meets after an all-to-all (a barrier,
# nothing in flight: its idle thread in the receive queue's WAIT) and is
# killed there; ranks 1 and 2 wait on the host until it is dead, then
# run a second all-to-all. They complete the meeting rank 0 had posted,
# miss it in the one after (idle_rejoin()), find it dead there and fail
# with EPIPE, then a barrier without it passes (exit 4). Rank 0 must
# have had its idle thread (2 threads) when it was killed, and died of
# the kill (137), not of timeout's at 60 s. Without the look for dead
# ranks the others would fail at FDEV_TIMEOUT_MS (ETIMEDOUT, exit 1).
idle_kill() {
	go=$tmp/idlego
	rm -f "$go" "$tmp"/idle.?
	for r in 0 1 2; do
		FDEV_JOB=pr$$idle FDEV_RANK=$r FDEV_SIZE=3 FDEV_TIMEOUT_MS=20000 \
			timeout -s KILL 60 "$t" mpidle "$go" > "$tmp/idle.$r" 2>&1 &
		eval p$r=$!
	done
	i=0
	while ! grep -q '^meeting pid' "$tmp/idle.0" && [ $i -lt 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	sleep 0.3	# from the line to its meeting: no system call that waits
	v=$(sed -n 's/^meeting pid //p' "$tmp/idle.0")
	th=$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$v/status" 2>/dev/null)
	[ -n "$v" ] && kill -9 "$v"
	wait "$p0" 2>/dev/null	# not the shell's "Killed" in the TAP
	r0=$?
	touch "$go"
	wait "$p1"
	r1=$?
	wait "$p2"
	r2=$?
	echo "# rank 0: $th threads when killed; exits $r0 $r1 $r2"
	grep -h 'second\|excluded\|left its' "$tmp"/idle.? | sort -u | sed 's/^/# /'
	[ "$th" = 2 ] && [ $r0 = 137 ] && [ $r1 = 4 ] && [ $r2 = 4 ] &&
	grep -q 'rank 1: second: Broken pipe' "$tmp/idle.1" &&
	grep -q 'rank 2: second: Broken pipe' "$tmp/idle.2" &&
	cat "$tmp/idle.1" "$tmp/idle.2" | grep -q 'rank 0 .* died; excluded' &&
	! ls /dev/shm/fdev-*-pr$$idle 2>/dev/null &&
	"$icfabctl" ctx list | grep -qx 'no contexts attached'
}
runs=${ICFAB_IDLE_KILL_RUNS:-1}
for k in $(seq "$runs"); do
	check "a rank killed (SIGKILL) in a kept-context meeting's idle WAIT: the others get EPIPE and go on, no file or context left (run $k of $runs)" idle_kill
done

echo "1..$n"
exit $failed
