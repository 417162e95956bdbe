#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# libfabricdev on the module (TAP):
#  - the core API and its errors (fdev_dev_test api);
#  - the io_uring fallback is announced once per process;
#  - collectives, timing only, one process driving 8 ranks on dgx-h100
#    (8 GPUs on one switch: alpha = 2 L per step, plus seg/B where the
#    switch stores and forwards, B per GPU, all read from the topology
#    icfabd loads; docs/TIMING.md): ring all-reduce, ring
#    all-gather and direct all-to-all match the alpha-beta closed forms
#    within 1%; every other algorithm runs; a run repeats to the ps;
#  - 8 independently started processes (FDEV_RANK/FDEV_SIZE/FDEV_JOB)
#    form a communicator and run the same all-to-all, twice, with the
#    same emulated times as one process driving all 8 running it twice;
#  - raw posting (__fdev_post_nowait, in the api test): a full queue
#    gives -EAGAIN at once, on io_uring and on the ioctl path, and every
#    descriptor posted completes once;
#  - back-pressure from the module's max_ctx_descs (set to 64 for it,
#    then put back): 200 descriptors in one fdev_post complete once
#    each with their bytes, on io_uring and on the ioctl path, and a raw
#    post stops at the cap;
#  - MoE dispatch/combine, timing only, throughput and low latency; the
#    hierarchical variant on h800-pod, 16 ranks in two nodes of 8, side
#    by side with throughput (it must send fewer bytes over scale-out
#    and finish sooner); on four nodes, gated as its chunks land
#    (FDEV_HIER_GATED=1), every link carries the stepped schedule's bytes;
#  - data (when the module has ICFAB_F_MEMORY): collectives and
#    dispatch/combine element by element (throughput, low latency and
#    hierarchical: skewed routing, -1 slots, T = 0 on some ranks, H not a
#    multiple of 8), the Python binding, 4
#    independent processes moving data through rank 0's proxy
#    (FDEV_PROXY=1) with the same emulated time as one process, and
#    free-running processes. The PyTorch example is
#    fdev_torch_test.sh (slow under TCG: importing torch takes minutes).
#  - a rank that dies is excluded (EPIPE), a missing one times out;
#  - 4 independent processes (each driving its own rank where the module
#    has ICFAB_F_RECV_NOTIFY), nodes of 2: the hierarchical dispatch and
#    combine equal throughput's element by element;
#  - multicast dispatch (FDEV_MOE_MULTICAST, when the module has
#    ICFAB_F_CIRCUITS): icfabd serves circuits on a socket over dgx-h100
#    given 24 colours per switch (the preset has none); without the
#    daemon dispatch fails with ENOTCONN and says where it looked for
#    icfabd's socket; with it the outputs equal
#    throughput's element by element (one process driving 8 ranks, and 4
#    independent processes, through the proxy), the sources' links carry each leaving token
#    once (timing only, 8 ranks), and no circuit is left afterwards;
#  - "auto" runs the fastest of the algorithms on dgx-h100 (8 ranks,
#    1 MiB, every collective);
#  - rings (FDEV_ALGO_RINGS, and auto given the cables) on SuperMesh Bi,
#    Alter and the plain 4x4 mesh, 16 ranks: all-reduce, reduce-scatter
#    and all-gather element by element (device memory), every byte once
#    on the senders' ports, the router-to-router cables and the
#    receivers' ports (icfabctl stats); auto no slower than the rings;
#  - processes without a proxy, repeating to the picosecond:
#    notify_test.sh.

top=${ICFAB_TOP:-$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)}
icfabd=$top/build/bin/icfabd
icfabctl=$top/build/bin/icfabctl
t=$top/build/libfabricdev/tests/fdev_dev_test
unit=$top/build/libfabricdev/tests/unit_test
bench=$top/build/bin/moe_bench
tmp=$(mktemp -d)
sock=$tmp/icfabd.sock
dpid=
capp=/sys/module/icfab/parameters/max_ctx_descs
capold=
trap '[ -n "$dpid" ] && kill "$dpid" 2>/dev/null
	[ -n "$capold" ] && echo "$capold" > "$capp"; rm -rf "$tmp"' EXIT
n=0
failed=0
. "$(dirname "$0")/lib.sh"

echo "TAP version 13"

check "dgx-h100 applied" sh -c "'$icfabd' --apply --preset dgx-h100 > /dev/null"
"$icfabd" --dump --json --preset dgx-h100 > "$tmp/topo.json"

check "core API (fdev_dev_test api)" sh -c "'$t' api > '$tmp/api' 2> '$tmp/api.err'"
sed 's/^/# /' "$tmp/api"
# ICFAB_F_CQ_RING (1 << 17): the completion ring is used, no fallback.
check "the ioctl fallback is announced exactly once, or io_uring or the ring is used" sh -c "
	c=\$(grep -c 'libfabricdev: .*using the ioctl path' '$tmp/api.err')
	f=\$(sed -n 's/^# uring . features //p' '$tmp/api')
	if grep -q '^# uring 1' '$tmp/api' || [ \$(( f & 0x20000 )) != 0 ]; then
		[ \$c = 0 ]; else [ \$c = 1 ]; fi"
if grep -q '^# uring 1' "$tmp/api" && [ -w /proc/sys/kernel/io_uring_disabled ]; then
	check "kernel.io_uring_disabled=2: the ioctl path, said once, and the API still passes" sh -c "
		old=\$(cat /proc/sys/kernel/io_uring_disabled); echo 2 > /proc/sys/kernel/io_uring_disabled
		'$t' api > '$tmp/dis' 2> '$tmp/dis.err'; rc=\$?
		echo \$old > /proc/sys/kernel/io_uring_disabled
		[ \$rc = 0 ] && [ \$(grep -c 'kernel.io_uring_disabled); using the ioctl path' '$tmp/dis.err') = 1 ]"
fi
check "FDEV_NO_URING=1 forces the ioctl path quietly" sh -c "
	FDEV_NO_URING=1 '$t' api > /dev/null 2> '$tmp/nu.err' &&
	! grep -q 'using the ioctl path' '$tmp/nu.err'"
check "FDEV_NO_URING=1 FDEV_DEBUG=1: the ioctl path, said once" sh -c "
	FDEV_NO_URING=1 FDEV_DEBUG=1 '$t' api > /dev/null 2> '$tmp/nud.err' &&
	[ \$(grep -c 'disabled by the caller; using the ioctl path' '$tmp/nud.err') = 1 ]"

if [ -w "$capp" ]; then
	capold=$(cat "$capp")
	echo 64 > "$capp"
	check "max_ctx_descs 64: 200 in one post, default path, none lost" \
		sh -c "'$t' cap 200 64 > '$tmp/cap' 2>&1"
	check "max_ctx_descs 64: 200 in one post, ioctl path, none lost" \
		sh -c "FDEV_NO_URING=1 '$t' cap 200 64 > '$tmp/capi' 2>&1"
	echo "$capold" > "$capp"
	capold=
	sed 's/^/# /' "$tmp/cap" "$tmp/capi"
fi

coll() {	# coll NAME OP ALGO N BYTES [NODE]
	name=$1
	shift
	"$t" coll "$@" > "$tmp/$name" 2> "$tmp/$name.err"
}

closed() {	# closed FILE KIND: compare time_ps with the closed form
	python3 - "$tmp/topo.json" "$1" "$2" <<'PY'
import json, sys
topo = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
kind = sys.argv[3]
seg = topo["fabric"]["segment_size"]
# endpoint -> switch and switch -> endpoint: two hops, the same on every path
up = [l for l in topo["links"] if l["src"] == 0][0]
down = [l for l in topo["links"] if l["dst"] == 1][0]
B = min(up["bandwidth"], down["bandwidth"])
# a cut-through switch forwards a segment's head; one that stores and
# forwards adds a segment time per step (docs/TIMING.md, "Closed forms")
alpha = up["latency_ps"] + down["latency_ps"]
if up["switching"] != "cut-through":
    alpha += seg / B * 1e12
n, S = r["ranks"], r["bytes"]
if kind == "allreduce":
    want = 2 * (n - 1) * alpha + 2 * (n - 1) / n * S / B * 1e12
elif kind == "allgather":
    want = (n - 1) * (alpha + S / B * 1e12)
else:  # direct all-to-all: n-1 pieces of S leave each GPU back to back
    want = alpha + (n - 1) * S / B * 1e12
got = r["time_ps"]
print("# %s %s: %d ps, closed form %.0f ps (alpha %.0f ps, B %.0f GB/s, %s): %+.3f%%"
      % (kind, r["algo"], got, want, alpha, B / 1e9, up["switching"],
         (got - want) / want * 100))
sys.exit(0 if abs(got - want) / want < 0.01 else 1)
PY
}

check "ring all-reduce of 8 MiB over 8 ranks runs" coll ar allreduce ring 8 8388608
check "ring all-reduce = 2(n-1) alpha + 2(n-1)/n S/B within 1%" closed "$tmp/ar" allreduce
check "ring all-gather of 1 MiB per rank runs" coll ag allgather ring 8 1048576
check "ring all-gather = (n-1)(alpha + S/B) within 1%" closed "$tmp/ag" allgather
check "direct all-to-all of 1 MiB per pair runs" coll a2a alltoall direct 8 1048576
check "direct all-to-all = alpha + (n-1) S/B within 1%" closed "$tmp/a2a" alltoall
check "the ring all-reduce repeats to the picosecond" sh -c "
	'$t' coll allreduce ring 8 8388608 > '$tmp/ar2' && cmp -s '$tmp/ar' '$tmp/ar2'"
for spec in "allreduce direct" "allreduce tree" "allreduce hier" \
	    "reducescatter ring" "reducescatter direct" "allgather direct" \
	    "alltoall ring" "alltoall hier" "broadcast tree" "broadcast ring" \
	    "broadcast direct"; do
	set -- $spec
	check "$1 $2 runs" sh -c "'$t' coll $1 $2 8 1048576 4 > '$tmp/x' 2> /dev/null && grep -q time_ps '$tmp/x'"
done
check "tree all-reduce is slower than ring for 8 MiB (bandwidth-bound)" python3 -c "
import json, subprocess, sys
def t(a):
    return json.loads(subprocess.check_output(['$t', 'coll', 'allreduce', a, '8', '8388608'], stderr=subprocess.DEVNULL))['time_ps']
print('# ring %d ps, tree %d ps, direct %d ps' % (t('ring'), t('tree'), t('direct')))
sys.exit(0 if t('tree') > t('ring') else 1)"
# "auto" costs every algorithm's plan on the fabric's routes and runs
# the cheapest (fdev_coll(3)): on one switch, 1 MiB, that is the fastest
# one here (the rule's ring is 3x slower than direct for the all-reduce).
for op in allreduce reducescatter allgather alltoall broadcast; do
	check "auto $op of 1 MiB runs the fastest algorithm" python3 -c "
import json, subprocess, sys
def run(a):
    out = subprocess.run(['$t', 'coll', '$op', a, '8', '1048576', '4'], capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None
times = {a: r['time_ps'] for a in ('ring', 'tree', 'direct', 'hier') for r in [run(a)] if r}
auto = run('auto')
print('# $op: auto ran %s, %d ps; %s' % (auto['ran'], auto['time_ps'], ', '.join('%s %d' % kv for kv in sorted(times.items()))))
sys.exit(0 if auto['ran'] in times and auto['time_ps'] == times[auto['ran']] == min(times.values()) else 1)"
done

# Independently started processes: 8 of them, one rank each.
mp() {	# mp JOB OP ALGO BYTES REPEAT
	job=$1
	shift
	pids=
	for r in 0 1 2 3 4 5 6 7; do
		FDEV_JOB=$job FDEV_RANK=$r FDEV_SIZE=8 FDEV_TIMEOUT_MS=120000 \
			"$t" mp "$@" > "$tmp/mp.$r" 2> "$tmp/mp.$r.err" &
		pids="$pids $!"
	done
	rc=0
	for p in $pids; do wait $p || rc=1; done
	return $rc
}
check "8 independent processes rendezvous and run an all-to-all twice" \
	mp "fdevtest$$" alltoall direct 1048576 2
FDEV_COLL_REPEAT=2 "$t" coll alltoall direct 8 1048576 > "$tmp/a2a2"
check "every rank saw the same emulated times as one process driving all 8" python3 -c "
import json, sys
o = json.load(open('$tmp/a2a2'))
one = (o['time_ps'], o['last_ps'])
rs = [json.load(open('$tmp/mp.%d' % r)) for r in range(8)]
ts = set((r['time_ps'], r['last_ps']) for r in rs)
print('# one process %s ps, 8 processes %s (first, second)' % (one, sorted(ts)))
sys.exit(0 if ts == {one} and all(r['barrier'] == 0 for r in rs) else 1)"
check "the job's rendezvous file is gone afterwards" sh -c "! ls /dev/shm/fdev-*-fdevtest$$ 2>/dev/null"
check "a rank that never comes makes the others fail with a timeout, not hang" sh -c "
	FDEV_JOB=late$$ FDEV_RANK=0 FDEV_SIZE=3 FDEV_TIMEOUT_MS=2000 \
		timeout 60 '$t' mp alltoall direct 4096 > /dev/null 2> '$tmp/late0' & p0=\$!
	FDEV_JOB=late$$ FDEV_RANK=1 FDEV_SIZE=3 FDEV_TIMEOUT_MS=2000 \
		timeout 60 '$t' mp alltoall direct 4096 > /dev/null 2> '$tmp/late1' & p1=\$!
	wait \$p0; r0=\$?; wait \$p1; r1=\$?
	[ \$r0 = 1 ] && [ \$r1 = 1 ] && grep -q 'timed out' '$tmp/late0'"
check "and the job that never formed left no file in /dev/shm" sh -c "! ls /dev/shm/fdev-*-late$$ 2>/dev/null"

check "a rank that dies is excluded: the others get EPIPE once, then carry on" sh -c "
	pids=; for r in 0 1 2; do
		FDEV_JOB=die$$ FDEV_RANK=\$r FDEV_SIZE=3 FDEV_TIMEOUT_MS=60000 \
			timeout 120 '$t' mpdie > /dev/null 2> '$tmp/die.'\$r & pids=\"\$pids \$!\"; done
	set -- \$pids; wait \$1; a=\$?; wait \$2; b=\$?; wait \$3; c=\$?
	! ls /dev/shm/fdev-*-die$$ 2>/dev/null &&
	[ \$a = 4 ] && [ \$b = 4 ] && [ \$c = 0 ] && cat '$tmp'/die.? | grep -q 'rank 2 .* died; excluded'"
# Rank 0 is killed while it waits in the rendezvous, its pid and sequence
# posted: ranks 1 and 2 complete the rendezvous with it, run the
# all-to-all's step and meet after it, where whichever of them first
# waits 750 ms looks for dead ranks (dead_look_turn()), says so and marks
# rank 0 failed for both: both fail with EPIPE, the message is in
# either's stderr.
check "a rank killed (SIGKILL) in the rendezvous: the others fail, no file is left" sh -c "
	FDEV_JOB=kill$$ FDEV_RANK=0 FDEV_SIZE=3 FDEV_TIMEOUT_MS=60000 \
		'$t' mp alltoall direct 4096 > /dev/null 2>&1 & p0=\$!
	i=0; while ! ls /dev/shm/fdev-*-kill$$ > /dev/null 2>&1 && [ \$i -lt 400 ]; do
		sleep 0.05; i=\$((i + 1)); done
	sleep 0.5	# from the file to its pid in it: no system call between
	kill -9 \$p0; wait \$p0
	FDEV_JOB=kill$$ FDEV_RANK=1 FDEV_SIZE=3 FDEV_TIMEOUT_MS=60000 \
		timeout 120 '$t' mp alltoall direct 4096 > /dev/null 2> '$tmp/kill1' & p1=\$!
	FDEV_JOB=kill$$ FDEV_RANK=2 FDEV_SIZE=3 FDEV_TIMEOUT_MS=60000 \
		timeout 120 '$t' mp alltoall direct 4096 > /dev/null 2> '$tmp/kill2' & p2=\$!
	wait \$p1; r1=\$?; wait \$p2; r2=\$?
	[ \$i -lt 400 ] && [ \$r1 = 1 ] && [ \$r2 = 1 ] &&
	cat '$tmp/kill1' '$tmp/kill2' | grep -q 'rank 0 .* died; excluded' &&
	grep -q 'Broken pipe' '$tmp/kill1' && grep -q 'Broken pipe' '$tmp/kill2' &&
	! ls /dev/shm/fdev-*-kill$$ 2>/dev/null"

# MoE, timing only.
check "throughput dispatch/combine, 8 ranks, 512 tokens, H=7168, top-8 of 256" sh -c "
	'$bench' -n 8 -t 512 -H 7168 -e 256 -k 8 -b 450 > '$tmp/moe' && cat '$tmp/moe' | sed 's/^/# /'"
check "low-latency dispatch/combine runs" sh -c "
	'$bench' -n 8 -t 128 -H 7168 -e 256 -k 8 -m ll -b 450 | sed 's/^/# /'"
check "dispatch moves the bytes the layout says, at most at the link rate" python3 -c "
import json, sys
r = json.load(open('$tmp/moe'))
print('# dispatch %.2f GB/s per rank (%.0f%% of 450)' % (r['dispatch_gbps'], r['dispatch_vs_bound'] * 100))
sys.exit(0 if r['dispatch_ps'] > 0 and 0.5 < r['dispatch_vs_bound'] <= 1.0 else 1)"
check "the same dispatch repeats to the picosecond" sh -c "
	'$bench' -n 8 -t 512 -H 7168 -e 256 -k 8 -b 450 | cmp -s - '$tmp/moe'"

# Hierarchical on two nodes of 8 (scale-out to the peer with the same
# local index, then NVLink), next to throughput on the same routing.
check "h800-pod applied" sh -c "'$icfabd' --apply --preset h800-pod > /dev/null"
check "hierarchical dispatch/combine, 16 ranks in 2 nodes, 256 tokens" sh -c "
	'$bench' -n 16 -g 8 -t 256 -H 7168 -e 256 -k 8 -m hier -b 160 -B 50 > '$tmp/hier' &&
	'$bench' -n 16 -g 8 -t 256 -H 7168 -e 256 -k 8 -m tp -b 160 -B 50 > '$tmp/tp16' &&
	sed 's/^/# /' '$tmp/hier' '$tmp/tp16'"
check "hierarchical: fewer bytes over scale-out than throughput, and faster" python3 -c "
import json, sys
h = json.load(open('$tmp/hier')); t = json.load(open('$tmp/tp16'))
print('# dispatch: hier %.1f us (%.3f of its bound), tp %.1f us (%.3f); combine: hier %.1f us, tp %.1f us'
      % (h['dispatch_ps'] / 1e6, h['dispatch_vs_bound'], t['dispatch_ps'] / 1e6,
         t['dispatch_vs_bound'], h['combine_ps'] / 1e6, t['combine_ps'] / 1e6))
sys.exit(0 if h['dispatch_bound_ps'] < t['dispatch_bound_ps'] and
         h['dispatch_ps'] < t['dispatch_ps'] and h['combine_ps'] < t['combine_ps'] else 1)"
check "the hierarchical dispatch repeats to the picosecond" sh -c "
	'$bench' -n 16 -g 8 -t 256 -H 7168 -e 256 -k 8 -m hier -b 160 -B 50 | cmp -s - '$tmp/hier'"
# Four nodes, four chunks: the peers' steps go as their chunks land
# (FDEV_HIER_GATED=1); every link carries the bytes of the stepped
# schedule (the default), count exchange and both directions included.
check "hierarchical gated as chunks land: every link's bytes those of the stepped schedule" sh -c "
	'$icfabctl' stats reset > /dev/null &&
	FDEV_HIER_GATED=1 '$bench' -n 32 -g 8 -t 128 -H 7168 -e 256 -k 8 -m hier -b 160 -B 50 > '$tmp/hg' &&
	'$icfabctl' -j stats > '$tmp/hg.stats' && '$icfabctl' stats reset > /dev/null &&
	FDEV_HIER_GATED=0 '$bench' -n 32 -g 8 -t 128 -H 7168 -e 256 -k 8 -m hier -b 160 -B 50 > '$tmp/hs' &&
	'$icfabctl' -j stats > '$tmp/hs.stats' &&
	python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
ga, gs = (json.load(open(f)) for f in sys.argv[3:5])
la = {l[\"id\"]: l[\"bytes\"] for l in a[\"links\"]}
lb = {l[\"id\"]: l[\"bytes\"] for l in b[\"links\"]}
print(\"# %d links, %.1f MB; gated dispatch %.1f / combine %.1f us, stepped %.1f / %.1f us\" % (
    len(la), sum(la.values()) / 1e6, ga[\"dispatch_ps\"] / 1e6, ga[\"combine_ps\"] / 1e6,
    gs[\"dispatch_ps\"] / 1e6, gs[\"combine_ps\"] / 1e6))
sys.exit(0 if la == lb and sum(la.values()) > 0 and
         ga[\"dispatch_bytes_per_rank\"] == gs[\"dispatch_bytes_per_rank\"] and
         ga[\"combine_bytes_per_rank\"] == gs[\"combine_bytes_per_rank\"] else 1)
' '$tmp/hg.stats' '$tmp/hs.stats' '$tmp/hg' '$tmp/hs'"
check "dgx-h100 applied again" sh -c "'$icfabd' --apply --preset dgx-h100 > /dev/null"

# Data: element by element, when the module moves bytes.
py=/usr/bin/python3
pydir=$top/libfabricdev/python
# The module's feature bits, as fdev_dev_test api printed them.
features=$(sed -n 's/^# uring . features \(0x[0-9a-fA-F]*\)$/\1/p' "$tmp/api")
has_feature() {	# has_feature BIT
	[ -n "$features" ] && [ $((features & $1)) -ne 0 ]
}
mp4() {	# mp4 JOB OKS SECS ARGS...: 4 ranks of "fdev_dev_test ARGS" as
	# independent processes; all must exit 0, with OKS "ok" lines in all.
	# px=1: through rank 0's proxy (FDEV_PROXY=1); otherwise each
	# process drives its own rank where the module can (ICFAB_F_RECV_NOTIFY).
	job=$1 oks=$2 secs=$3
	shift 3
	pids=
	for r in 0 1 2 3; do
		FDEV_PROXY=$px FDEV_JOB=$job FDEV_RANK=$r FDEV_SIZE=4 \
			FDEV_TIMEOUT_MS=120000 \
			timeout "$secs" "$t" "$@" > "$tmp/mp.$job.$r" 2>&1 &
		pids="$pids $!"
	done
	rc=0
	for p in $pids; do wait $p || rc=1; done
	sed 's/^/# /' "$tmp/mp.$job".?
	[ $rc = 0 ] && [ "$(cat "$tmp/mp.$job".? | grep -c '^ok')" = "$oks" ]
}
if has_feature 0x4; then	# ICFAB_F_MEMORY
	check "collectives and dispatch/combine on device memory, element by element" \
		sh -c "'$unit' --device > '$tmp/unit' 2>&1; rc=\$?; grep -c '^ok' '$tmp/unit' | sed 's/^/# passed: /'; grep '^not ok' '$tmp/unit'; exit \$rc"
	# Its torch tensors run in torch_test.sh, which imports torch anyway.
	check "the Python binding's collectives on the fabric equal numpy's" \
		sh -c "'$py' '$pydir/test_binding.py' --device --no-torch > '$tmp/py' 2>&1; rc=\$?; grep -v '^ok' '$tmp/py' | sed 's/^/# /'; exit \$rc"
	px=1
	check "4 independent processes move data in virtual time (rank 0 drives): exact" \
		mp4 pxy$$ 8 300 mpdata 1000
	px=
	check "... with the time of one process driving 4 ranks, on every rank" sh -c "
		'$t' coll allreduce ring 4 4000 2> /dev/null > '$tmp/ar4'
		want=\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"time_ps\"])' '$tmp/ar4')
		got=\$(cat '$tmp'/mp.pxy$$.? | sed -n 's/.*all-reduce time_ps //p' | sort -u)
		echo \"# one process \$want ps, 4 processes \$got ps\"; [ \"\$got\" = \"\$want\" ]"
	if has_feature 0x10; then	# ICFAB_F_FREE_RUN
		check "4 independent free-running processes move data: exact" mp4 free$$ 8 300 mpdata 1000 free
	else
		echo "ok $((n = n + 1)) # SKIP free-running processes: no ICFAB_F_FREE_RUN"
	fi
	check "4 independent processes, nodes of 2: hierarchical dispatch and combine equal throughput's" \
		mp4 hier$$ 16 180 mpmoe hier
else
	echo "ok $((n = n + 1)) # SKIP data tests: the module lacks ICFAB_F_MEMORY"
fi

# Rings (FDEV_ALGO_RINGS) over SuperMesh's cables and the plain mesh's:
# data checked element by element where the module has device memory,
# and every byte once on the senders' ports, once on one router-to-router
# cable (the rings' neighbours are a hop apart) and once on the
# receivers' ports.
ringlinks() {	# ringlinks TOPO.json LINKS: the cables between chiplets as ranks
	python3 - "$1" "$2" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
kind = {n["id"]: n["kind"] for n in t["nodes"]}
ep_of = {l["dst"]: l["src"] for l in t["links"] if kind[l["src"]] == "endpoint"}
with open(sys.argv[2], "w") as f:
    for l in t["links"]:
        if kind[l["src"]] == kind[l["dst"]] == "switch" and l["src"] < l["dst"]:
            f.write("%d %d\n" % (ep_of[l["src"]], ep_of[l["dst"]]))
PY
}
ringrun() {	# ringrun NAME OP ALGO: stats reset, the run, the stats
	"$icfabctl" stats reset > /dev/null &&
	timeout 300 "$t" rings "$tmp/$rtopo.links" 16 $rcnt $2 $3 $rdata > "$tmp/r.$1" 2> "$tmp/r.$1.err" &&
	"$icfabctl" -j stats > "$tmp/rs.$1"
}
ringauto() {	# ringauto OP: auto no slower than the rings; their bytes if it ran them
	python3 - "$tmp/r.$rtopo.$1.auto" "$tmp/r.$rtopo.$1.rings" <<'PY' || return 1
import json, sys
a, r = (json.loads([l for l in open(f) if l.startswith("{")][0]) for f in sys.argv[1:3])
print("# auto ran %s: %d ps, rings %d ps" % (a["ran"], a["time_ps"], r["time_ps"]))
sys.exit(0 if a["time_ps"] <= r["time_ps"] else 1)
PY
	grep -q '"ran":"rings"' "$tmp/r.$rtopo.$1.auto" || return 0
	ringbytes "$rtopo.$1.auto"
}
ringbytes() {	# ringbytes NAME: every byte once per hop class
	python3 - "$tmp/$rtopo.json" "$tmp/r.$1" "$tmp/rs.$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
r = json.loads([l for l in open(sys.argv[2]) if l.startswith("{")][0])
st = {l["id"]: l["bytes"] for l in json.load(open(sys.argv[3]))["links"]}
kind = {n["id"]: n["kind"] for n in t["nodes"]}
got = {"up": 0, "across": 0, "down": 0}
for l in t["links"]:
    c = "up" if kind[l["src"]] == "endpoint" else "down" if kind[l["dst"]] == "endpoint" else "across"
    got[c] += st.get(l["id"], 0)
want = r["sent_bytes"]
print("# %s %s, %d rings: %.3f us; bytes up %d, across %d, down %d (want %d each)"
      % (r["op"], r["algo"], r["rings"], r["time_ps"] / 1e6, got["up"], got["across"], got["down"], want))
sys.exit(0 if r["rings"] >= 2 and got == {"up": want, "across": want, "down": want} else 1)
PY
}
rcnt=300
rdata=
has_feature 0x4 || rdata=timing
for rtopo in supermesh-bi supermesh-alter mesh; do
	if [ $rtopo = mesh ]; then
		cat > "$tmp/mesh.yaml" <<'YAML'
defaults:
  endpoint: {memory: 16GiB, dma_engines: 4}
topology:
  mesh: {dims: [4, 4], routers: true, bandwidth: 64GB/s, latency: 20ns,
         multipath: spray, local: {bandwidth: 256GB/s}}
YAML
		rsrc=$tmp/mesh.yaml
	else
		rsrc="--preset $rtopo"
	fi
	check "$rtopo applied" sh -c "'$icfabd' --apply $rsrc > /dev/null"
	# shellcheck disable=SC2086
	"$icfabd" --dump --json $rsrc > "$tmp/$rtopo.json"
	ringlinks "$tmp/$rtopo.json" "$tmp/$rtopo.links"
	for op in allreduce reducescatter allgather; do
		for algo in rings auto; do
			check "$rtopo: $op $algo over the rings${rdata:+ (timing only)}" ringrun $rtopo.$op.$algo $op $algo
			sed 's/^/# /' "$tmp/r.$rtopo.$op.$algo"
		done
		check "$rtopo: $op rings: every byte once up, across, down" ringbytes $rtopo.$op.rings
		# auto runs the rings where they cost least, else something
		# faster still (at $rcnt elements, direct's single step)
		check "$rtopo: $op auto: no slower than the rings, their bytes if it ran them" ringauto $op
	done
done
check "dgx-h100 applied after the rings" sh -c "'$icfabd' --apply --preset dgx-h100 > /dev/null"

# Multicast over circuits from icfabd's socket (ICFAB_F_CIRCUITS = bit 7).
if has_feature 0x80; then	# ICFAB_F_CIRCUITS
	"$icfabd" --dump --yaml --preset dgx-h100 |
		sed '/^defaults:/a\  switch: {colors: 24}' > "$tmp/dgx-colors.yaml"
	# The daemon follows what the module runs, so the module runs this
	# first (only the colours differ from the preset applied above).
	check "dgx-h100 with 24 colours per switch applied" \
		sh -c "'$icfabd' --apply '$tmp/dgx-colors.yaml' > /dev/null"
	"$icfabd" --foreground --config "$tmp/dgx-colors.yaml" --socket "$sock" \
		> "$tmp/icfabd.log" 2>&1 &
	dpid=$!
	check "icfabd serves circuits over dgx-h100 with 24 colours per switch" \
		wait_for "$tmp/icfabd.log" serving 60
	export ICFABD_SOCKET=$sock
	no_circuit() {	# no circuit is open in the daemon
		out=$("$icfabctl" circuit list) || return 1
		! printf '%s\n' "$out" | grep -q '^circuit '
	}
	check "multicast dispatch/combine on device memory equals throughput element by element" \
		sh -c "timeout 300 '$unit' --device --multicast > '$tmp/unitmc' 2>&1; rc=\$?
			grep -c '^ok' '$tmp/unitmc' | sed 's/^/# passed: /'; grep '^not ok' '$tmp/unitmc'
			grep 'multicast' '$tmp/unitmc' | sed 's/^/# /'; exit \$rc"
	check "no circuit is left after the one-process runs" no_circuit
	px=1	# the multicast dispatch needs every rank's context in one
	check "4 independent processes: multicast dispatch and combine equal throughput's" \
		mp4 mcm$$ 16 180 mpmoe mc
	px=
	# Each process driving its own rank cannot wait for a circuit
	# WRITE (no NOTIFY on one): the slabs go unicast, the outputs and
	# combine (its own rank's rows of the offset tables) are the same.
	if has_feature 0x100; then	# ICFAB_F_RECV_NOTIFY
		check "4 independent processes, each driving its own rank: mc's slabs unicast, dispatch and combine equal throughput's" \
			mp4 mcn$$ 16 180 mpmoe mc
	fi
	check "no circuit is left after the independent processes" no_circuit
	# Timing only, 8 ranks: the bytes each source's link carries.
	mcbytes() {	# mcbytes MODE: moe_bench JSON + the endpoints' outgoing link bytes
		"$icfabctl" stats reset > /dev/null &&
		timeout 300 "$bench" -n 8 -t 256 -H 7168 -e 256 -k 8 -m $1 -b 450 -x > "$tmp/mcb.$1" &&
		"$icfabctl" -j stats > "$tmp/mcs.$1"
	}
	"$icfabd" --dump --json "$tmp/dgx-colors.yaml" > "$tmp/topo-colors.json"
	check "dispatch only, throughput, 8 ranks, 256 tokens, timing only" mcbytes tp
	check "dispatch only, multicast, the same routing" mcbytes mc
	check "the sources' links carry each leaving token once (plus the count exchange)" python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
topo = json.load(open(d + "/topo-colors.json"))
eps = {nd["id"] for nd in topo["nodes"] if nd["kind"] == "endpoint"}
src = {l["id"] for l in topo["links"] if l["src"] in eps}
def link_bytes(mode):
    st = json.load(open(d + "/mcs." + mode))
    return sum(l["bytes"] for l in st["links"] if l["id"] in src)
def bench(mode):
    return json.load(open(d + "/mcb." + mode))
n = 8
tp, mc = bench("tp"), bench("mc")
# throughput's count exchange: two all-to-alls of 2 and 3 words per pair;
# multicast's: an all-gather of every rank's row of n + 1 words
want_tp = tp["dispatch_bytes_per_rank"] * n + n * (n - 1) * (2 + 3) * 8
want_mc = mc["dispatch_bytes_per_rank"] * n + n * (n - 1) * (n + 1) * 8
got_tp, got_mc = link_bytes("tp"), link_bytes("mc")
print("# source links: tp %d bytes (want %d), mc %d bytes (want %d), mc/tp %.3f; dispatch tp %.1f us, mc %.1f us"
      % (got_tp, want_tp, got_mc, want_mc, got_mc / got_tp, tp["dispatch_ps"] / 1e6, mc["dispatch_ps"] / 1e6))
sys.exit(0 if got_tp == want_tp and got_mc == want_mc and got_mc < got_tp else 1)
PY
	check "no circuit is left after the bench" no_circuit
	# A user other than root holds at most max_uid_circuits circuits,
	# icfabd's opened in the requester's name: past 3, EDQUOT, and the
	# dispatch goes in waves of sources (2 at a time) as when the
	# colours run out, so it takes longer than root's in one wave (it
	# failed with EDQUOT).
	uidcap() {
		p=/sys/module/icfab/parameters/max_uid_circuits
		a="-n 8 -t 16 -H 7168 -e 256 -k 8 -m mc -b 450"
		timeout 300 "$bench" $a > "$tmp/uidcap0" || return 1
		was=$(cat $p) && echo 3 > $p || return 1
		setpriv --reuid=65534 --regid=65534 --groups icfab \
			env ICFABD_SOCKET="$sock" timeout 300 "$(for_nobody "$bench")" \
			$a > "$tmp/uidcap" 2> "$tmp/uidcap.err"
		rc=$?
		echo "$was" > $p
		sed 's/^/# /' "$tmp/uidcap.err"
		d0=$(sed -n 's/.*"dispatch_ps":\([0-9]*\).*/\1/p' "$tmp/uidcap0")
		d=$(sed -n 's/.*"dispatch_ps":\([0-9]*\).*/\1/p' "$tmp/uidcap")
		echo "# dispatch: root $d0 ps, user 65534 past the cap ${d:-none} ps"
		[ $rc = 0 ] && [ -n "$d0" ] && [ -n "$d" ] && [ "$d" -gt "$d0" ]
	}
	check "user 65534 with max_uid_circuits 3: a multicast dispatch of 8 sources goes in waves" uidcap
	check "no circuit is left after the waves past the user's cap" no_circuit
	check "icfabd stops" stop_daemon
	# 3 colours at the one switch hold 3 sources' trees, not 8: the
	# dispatch goes in waves of sources (2 at a time), each wave's
	# circuits opened after the last wave's are closed.
	sed 's/switch: {colors: 24}/switch: {colors: 3}/' "$tmp/dgx-colors.yaml" > "$tmp/dgx-3.yaml"
	check "dgx-h100 with 3 colours per switch applied" \
		sh -c "'$icfabd' --apply '$tmp/dgx-3.yaml' > /dev/null"
	"$icfabd" --foreground --config "$tmp/dgx-3.yaml" --socket "$sock" \
		> "$tmp/icfabd3.log" 2>&1 &
	dpid=$!
	check "icfabd serves circuits over dgx-h100 with 3 colours per switch" \
		wait_for "$tmp/icfabd3.log" serving 60
	check "multicast in waves of sources (3 colours for 8 sources) equals throughput element by element" \
		sh -c "timeout 300 '$unit' --device --multicast > '$tmp/unitmc3' 2>&1; rc=\$?
			grep -c '^ok' '$tmp/unitmc3' | sed 's/^/# passed: /'; grep '^not ok' '$tmp/unitmc3'
			grep -c 'circuit [0-9]*: .* color 2,' '$tmp/icfabd3.log' | sed 's/^/# circuits given colour 2: /'
			! grep -q ' color [3-9][0-9]*,' '$tmp/icfabd3.log' && exit \$rc"
	check "no circuit is left after the waves" no_circuit
	check "icfabd stops again" stop_daemon
	unset ICFABD_SOCKET
	check "without icfabd, a multicast dispatch fails and says where it looked" \
		sh -c "ICFABD_SOCKET='$tmp/none.sock' timeout 120 '$bench' -n 8 -t 16 -H 7168 -e 256 -k 8 -m mc -b 450 > /dev/null 2> '$tmp/mcerr'
			rc=\$?; sed 's/^/# /' '$tmp/mcerr'
			[ \$rc != 0 ] && grep -q 'libfabricdev: multicast: its circuits are opened through icfabd, not reachable at $tmp/none.sock' '$tmp/mcerr'"
else
	echo "ok $((n = n + 1)) # SKIP multicast: the module lacks ICFAB_F_CIRCUITS"
fi

echo "1..$n"
exit $failed
