#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# wall_pairs.py PAIRS MAXSECS LABEL=BINARY:ARGS ...: engine_rate runs
# interleaved (A B A B ...), each begun only once both cores look idle
# (at most 10% busy over 0.3 s, waiting up to 20 s), and for each the CPU
# time others used meanwhile (/proc/stat non-idle time minus the run's own
# user+sys). Prints every sample, the medians and the first label's
# median wall time over each other's. tools/bench/README.md, "The parallel
# engine: one barrier a window".
import sys, subprocess, statistics, os, time, resource
pairs, maxs = int(sys.argv[1]), float(sys.argv[2])
cfgs = []
for a in sys.argv[3:]:
    lab, rest = a.split('=', 1)
    binary, args = rest.split(':', 1)
    cfgs.append((lab, [binary] + args.split()))
hz = os.sysconf('SC_CLK_TCK')
def busy():
    f = open('/proc/stat').readline().split()[1:]
    v = list(map(int, f))
    idle = v[3] + v[4]
    return (sum(v) - idle) / hz, sum(v) / hz
def wait_idle(limit):
    t0 = time.time()
    while time.time() - t0 < limit:
        b0, a0 = busy(); time.sleep(0.3); b1, a1 = busy()
        if a1 > a0 and (b1 - b0) / (a1 - a0) < 0.10:
            return 1
    return 0
res = {lab: [] for lab, _ in cfgs}
t_end = time.time() + maxs
print("start", time.strftime("%H:%M:%S", time.gmtime()), open('/proc/loadavg').read().strip(), flush=True)
r = 0
while r < pairs and time.time() < t_end:
    for lab, cmd in cfgs:
        idle = wait_idle(20)
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        b0, _ = busy()
        out = subprocess.run(cmd, capture_output=True, text=True).stdout.split()
        b1, _ = busy()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        mine = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        others = max(0.0, (b1 - b0) - mine)
        wall, cpu = float(out[4]), float(out[5])
        crit = float(out[-2]) if len(out) > 12 else 0
        res[lab].append((wall, cpu, crit, others, idle))
        print(r, lab, wall, cpu, crit, "others %.2f s" % others, "idle-before %d" % idle, flush=True)
    r += 1
print("end", time.strftime("%H:%M:%S", time.gmtime()), open('/proc/loadavg').read().strip())
for lab, _ in cfgs:
    w = [x[0] for x in res[lab]]
    print(lab, "median wall %.4f" % statistics.median(w), "cpu %.4f" % statistics.median([x[1] for x in res[lab]]),
          "crit %.4f" % statistics.median([x[2] for x in res[lab]]), "walls", " ".join("%.3f" % x for x in w))
labs = [l for l, _ in cfgs]
base = statistics.median([x[0] for x in res[labs[0]]])
for l in labs[1:]:
    print("%s / %s wall ratio %.3f" % (labs[0], l, base / statistics.median([x[0] for x in res[l]])))
