# SPDX-License-Identifier: GPL-2.0
#
# What wall_pairs.py and pair_bound.py share: the host's CPU time from
# /proc/stat, a wait until both cores look idle, and a summary of samples.
import os, statistics, time

hz = os.sysconf('SC_CLK_TCK')


def stat():
    """(non-idle s, all s, steal s) over every CPU since boot."""
    v = list(map(int, open('/proc/stat').readline().split()[1:]))
    idle = v[3] + v[4]
    return (sum(v) - idle) / hz, sum(v) / hz, v[7] / hz


def wait_idle(limit):
    """Wait up to @limit s for 0.3 s under 10% busy; 1 if it came."""
    t0 = time.time()
    while time.time() - t0 < limit:
        b0, a0, _ = stat(); time.sleep(0.3); b1, a1, _ = stat()
        if a1 > a0 and (b1 - b0) / (a1 - a0) < 0.10:
            return 1
    return 0


def host():
    """The CPU's model and caches, as the kernel shows them: the ratios
    these scripts take depend on the host (tools/bench/README.md, "The
    parallel engine's wall time on another host")."""
    info = {}
    for line in open('/proc/cpuinfo'):
        if not line.strip():
            break
        k, _, v = line.partition(':')
        info[k.strip()] = v.strip()
    model = "%s (family %s model %s stepping %s)" % (
        info.get('model name', '?'), info.get('cpu family', '?'),
        info.get('model', '?'), info.get('stepping', '?'))
    caches = []
    base = '/sys/devices/system/cpu/cpu0/cache'
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            rd = lambda f: open(os.path.join(base, d, f)).read().strip()
            caches.append("L%s%s %s" % (rd('level'),
                                        {'Data': 'd', 'Instruction': 'i'}
                                        .get(rd('type'), ''), rd('size')))
        except OSError:
            pass
    return "host: %s, %d CPUs, %s" % (model, os.cpu_count(), ", ".join(caches))


def spread(v):
    if not v:
        return "none"
    return "min %.3f med %.3f max %.3f (n %d)" % (min(v), statistics.median(v),
                                                 max(v), len(v))
