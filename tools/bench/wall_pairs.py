#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# wall_pairs.py [-q OTHERS_S] [-s STEAL_S] ROUNDS MAXSECS LABEL=BINARY:ARGS ...:
# engine_rate runs interleaved (A B A B ...), each begun only once both
# cores look idle (at most 10% busy over 0.3 s, waiting up to 20 s). For
# each run it records, besides engine_rate's own wall and CPU time a pass
# and critical path:
#   - the process's user+sys CPU time and its voluntary and involuntary
#     context switches (getrusage of the child);
#   - the CPU time others used meanwhile (/proc/stat non-idle time minus
#     the run's own user+sys) and the time the hypervisor stole from this
#     VM (/proc/stat steal, all CPUs; 0 where the hypervisor reports none).
# A run is "quiet" when others used at most OTHERS_S (default 0.05 s) and
# at most STEAL_S (default 0.02 s) was stolen. Prints every sample, then
# per label the minimum (best of N), the median and the spread (min-max)
# of the wall time, over all runs and over quiet runs, and the ratio of
# the first label's wall time to each other's: of the minima, of the
# medians, and the median and spread of the per-round ratios (each run
# against the first label's run of the same round). tools/bench/README.md,
# "The parallel engine: one barrier a window" and "The parallel engine:
# adoption where routes reach, a cheaper import".
import sys, subprocess, statistics, os, time, resource
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostidle import stat, wait_idle, spread, host

args = sys.argv[1:]
quiet_others, quiet_steal = 0.05, 0.02
while args and args[0] in ('-q', '-s'):
    if args[0] == '-q':
        quiet_others = float(args[1])
    else:
        quiet_steal = float(args[1])
    args = args[2:]
rounds, maxs = int(args[0]), float(args[1])
cfgs = []
for a in args[2:]:
    lab, rest = a.split('=', 1)
    binary, cargs = rest.split(':', 1)
    cfgs.append((lab, [binary] + cargs.split()))

res = {lab: [] for lab, _ in cfgs}
t_end = time.time() + maxs
print("start", time.strftime("%H:%M:%S", time.gmtime()),
      open('/proc/loadavg').read().strip(), flush=True)
print(host(), flush=True)
print("# round label wall_s cpu_s crit_s | proc_cpu_s nvcsw nivcsw others_s "
      "steal_s idle_before quiet", flush=True)
r = 0
while r < rounds and time.time() < t_end:
    for lab, cmd in cfgs:
        idle = wait_idle(20)
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        b0, _, s0 = stat()
        out = subprocess.run(cmd, capture_output=True, text=True).stdout.split()
        b1, _, s1 = stat()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        mine = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        nvcsw = ru1.ru_nvcsw - ru0.ru_nvcsw
        nivcsw = ru1.ru_nivcsw - ru0.ru_nivcsw
        others = max(0.0, (b1 - b0) - mine)
        steal = s1 - s0
        wall, cpu = float(out[4]), float(out[5])
        crit = float(out[-2]) if len(out) > 12 else 0
        quiet = others <= quiet_others and steal <= quiet_steal
        res[lab].append(dict(r=r, wall=wall, cpu=cpu, crit=crit, mine=mine,
                             nvcsw=nvcsw, nivcsw=nivcsw, others=others,
                             steal=steal, idle=idle, quiet=quiet))
        print(r, lab, "%.4f %.4f %.4f | %.3f %d %d %.3f %.3f %d %d" %
              (wall, cpu, crit, mine, nvcsw, nivcsw, others, steal, idle,
               quiet), flush=True)
    r += 1
print("end", time.strftime("%H:%M:%S", time.gmtime()),
      open('/proc/loadavg').read().strip())
for lab, _ in cfgs:
    s = res[lab]
    q = [x for x in s if x['quiet']]
    print(lab, "wall all:", spread([x['wall'] for x in s]))
    print(lab, "wall quiet:", spread([x['wall'] for x in q]))
    print(lab, "cpu a pass (engine_rate):", spread([x['cpu'] for x in s]),
          "| crit:", spread([x['crit'] for x in s]))
    print(lab, "nivcsw:", spread([x['nivcsw'] for x in s]), "| steal s:",
          spread([x['steal'] for x in s]), "| others s:",
          spread([x['others'] for x in s]))
labs = [l for l, _ in cfgs]
base = res[labs[0]]
for l in labs[1:]:
    for kind, pick in (("all", lambda x: True),
                       ("quiet", lambda x: x['quiet'])):
        a = [x['wall'] for x in base if pick(x)]
        b = [x['wall'] for x in res[l] if pick(x)]
        if not a or not b:
            print("%s / %s (%s): no samples" % (labs[0], l, kind))
            continue
        pair = [x['wall'] / y['wall'] for x in base for y in res[l]
                if x['r'] == y['r'] and pick(x) and pick(y)]
        print("%s / %s (%s): of minima %.3f, of medians %.3f, per round %s" %
              (labs[0], l, kind, min(a) / min(b),
               statistics.median(a) / statistics.median(b), spread(pair)))
