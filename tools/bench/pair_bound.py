#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# pair_bound.py ROUNDS MAXSECS LABEL=BINARY:ARGS ...: what this host lets
# two threads gain at best. Each round runs each command alone pinned to
# CPU 0, alone pinned to CPU 1, and then as two copies at once, pinned to
# CPUs 0 and 1, each run begun once both cores look idle
# (hostidle.wait_idle). Two
# copies share nothing but the host, so if each takes S times as long as
# one alone, no split of one job into two threads on these cores can run
# faster than 2 / S times one thread: the bound that a parallel engine's
# wall time is held to, whatever its instruction counts.
#
# A run's time is engine_rate's own wall time a pass (its fifth field,
# when its output starts with "host-"), otherwise the process's wall time
# from fork to exit. Prints every sample, then per label and CPU: alone
# and paired minimum and median, S of the minima and of the medians, the
# median and spread of the per-round S (each paired copy against the same
# round's alone run on its CPU), and 2 / S; then the same over both CPUs. tools/bench/README.md, "What two
# cores of this host give: the bound on any split".
import sys, subprocess, os, time, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostidle import wait_idle, spread, host

if len(sys.argv) < 4:
    sys.exit("usage: pair_bound.py ROUNDS MAXSECS LABEL=BINARY:ARGS ...")
rounds, maxs = int(sys.argv[1]), float(sys.argv[2])
cfgs = []
for a in sys.argv[3:]:
    lab, rest = a.split('=', 1)
    binary, cargs = rest.split(':', 1)
    cfgs.append((lab, [binary] + cargs.split()))


def launch(cmd, cpu):
    t0 = time.perf_counter()
    p = subprocess.Popen(['taskset', '-c', str(cpu)] + cmd,
                         stdout=subprocess.PIPE, text=True)
    return p, t0


def finish(p, t0):
    out = p.communicate()[0]
    t = time.perf_counter() - t0
    if p.returncode:
        sys.exit("%s failed: %d" % (p.args, p.returncode))
    f = out.split()
    return float(f[4]) if f and f[0].startswith('host-') else t


res = {lab: [dict(alone=[], pair=[], s=[]) for _ in (0, 1)]
       for lab, _ in cfgs}
t_end = time.time() + maxs
print("start", time.strftime("%H:%M:%S", time.gmtime()),
      open('/proc/loadavg').read().strip(), flush=True)
print(host(), flush=True)
print("# round label alone_cpu0_s alone_cpu1_s pair_cpu0_s pair_cpu1_s",
      flush=True)
r = 0
while r < rounds and time.time() < t_end:
    for lab, cmd in cfgs:
        alone = []
        for cpu in (0, 1):
            wait_idle(20)
            alone.append(finish(*launch(cmd, cpu)))
        wait_idle(20)
        a, b = launch(cmd, 0), launch(cmd, 1)
        pair = [finish(*a), finish(*b)]
        for cpu in (0, 1):
            x = res[lab][cpu]
            x['alone'].append(alone[cpu])
            x['pair'].append(pair[cpu])
            x['s'].append(pair[cpu] / alone[cpu])
        print(r, lab, "%.4f %.4f %.4f %.4f" % tuple(alone + pair), flush=True)
    r += 1
print("end", time.strftime("%H:%M:%S", time.gmtime()),
      open('/proc/loadavg').read().strip())
for lab, _ in cfgs:
    both = {k: res[lab][0][k] + res[lab][1][k] for k in ('alone', 'pair', 's')}
    for name, x in (("cpu0", res[lab][0]), ("cpu1", res[lab][1]),
                    ("both", both)):
        s_min = min(x['pair']) / min(x['alone'])
        s_med = statistics.median(x['pair']) / statistics.median(x['alone'])
        print(lab, name, "alone:", spread(x['alone']))
        print(lab, name, "paired:", spread(x['pair']))
        print(lab, name, "S of minima %.3f (2/S %.3f), of medians %.3f "
              "(2/S %.3f), per round %s" % (s_min, 2 / s_min, s_med,
                                            2 / s_med, spread(x['s'])))
