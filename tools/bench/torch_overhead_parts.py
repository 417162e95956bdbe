#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Where the backend's per-op time goes (tools/bench/torch_overhead.py's
copied path): each rank's CPU time per all_to_all_single, called
through torch.distributed, through the process group's binding (one
pybind call and wait()) and without wait(), against a2a_direct's; and,
with -p DIR, `perf record -a -e cpu-clock` over the
torch.distributed ops only. Under tools/vm/run --icount a CPU
nanosecond is a guest instruction. A benchmark: it prints.

    torch_overhead_parts.py [-n RANKS] [-b BYTES_PER_PEER] [-i OPS] [-p DIR [-c NS]]
                            [--backend gloo]
"""
import argparse
import datetime
import os
import resource
import signal
import subprocess
import sys
import time

import torch
import torch.distributed as dist

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "build", "python"))
import fabricdev.torch  # noqa: E402,F401 (registers "icfab")


def cpu_ns():
    return time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID)


def rank_main(rank, a, port, wr):
    dist.init_process_group(a.backend, init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=a.n, timeout=datetime.timedelta(seconds=300))
    pg = dist.distributed_c10d._get_default_group()
    x = torch.empty(a.b * a.n, dtype=torch.uint8)
    x.copy_((torch.arange(a.b * a.n) + rank).to(torch.uint8))
    y = torch.empty(a.b * a.n, dtype=torch.uint8)
    opts = dist.AllToAllOptions()
    no = []

    def via_dist():
        dist.all_to_all_single(y, x)

    def via_pg():
        pg.alltoall_base(y, x, no, no, opts).wait()

    def via_pg_nowait():
        pg.alltoall_base(y, x, no, no, opts)

    def empty_loop():
        pass

    out = []
    phases = (("dist", via_dist), ("pg", via_pg), ("pg_nowait", via_pg_nowait),
              ("dist", via_dist), ("loop", empty_loop))
    if a.backend != "icfab":
        # Its Work completes later: no pg_nowait.
        phases = tuple(p for p in phases if p[0] != "pg_nowait")
    for name, f in phases:
        for _ in range(3):
            f()
        dist.barrier()
        c0, t0 = cpu_ns(), time.monotonic_ns()
        for _ in range(a.i):
            f()
        c1, t1 = cpu_ns(), time.monotonic_ns()
        out.append("%s cpu_ns_per_op=%.0f wall_ns_per_op=%.0f"
                   % (name, (c1 - c0) / a.i, (t1 - t0) / a.i))
    if a.p:
        # perf record -a (nothing else runs) over a.i torch.distributed ops,
        # its events enabled and disabled through its control FIFO by
        # rank 0 (-a: no events inherited into the idle threads' clone3).
        perf = None
        if rank == 0:
            ctl, ack = os.path.join(a.p, "perf.ctl"), os.path.join(a.p, "perf.ack")
            for f in (ctl, ack):
                if os.path.exists(f):
                    os.unlink(f)
                os.mkfifo(f)
            perf = subprocess.Popen(["perf", "record", "-q", "-a", "-D", "-1", "-e", "cpu-clock",
                                     "-c", str(a.c), "--control", "fifo:%s,%s" % (ctl, ack),
                                     "-o", os.path.join(a.p, "perf.data")])
            wctl = open(ctl, "w")
            rack = open(ack, "rb", buffering=0)

            def perf_ctl(cmd):
                wctl.write(cmd + "\n")
                wctl.flush()
                rack.read(5)
        dist.barrier()
        if perf:
            perf_ctl("enable")
        dist.barrier()
        c0 = cpu_ns()
        for _ in range(a.i):
            via_dist()
        c1 = cpu_ns()
        dist.barrier()
        out.append("dist(perf) cpu_ns_per_op=%.0f" % ((c1 - c0) / a.i))
        if perf:
            perf_ctl("disable")
            perf.send_signal(signal.SIGINT)
            perf.wait()
    os.write(wr, "".join("rank %d %s\n" % (rank, l) for l in out).encode())
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("-b", type=int, default=4096)
    ap.add_argument("-i", type=int, default=200)
    ap.add_argument("--backend", default="icfab", help="icfab, or gloo for its binding's share")
    ap.add_argument("-p", help="directory for perf.data")
    ap.add_argument("-c", type=int, default=100000, help="perf's sample period, ns")
    a = ap.parse_args()
    rd, wr = os.pipe()
    port = 29900 + os.getpid() % 90
    pids = []
    for r in range(a.n):
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            try:
                rank_main(r, a, port, wr)
                os._exit(0)
            except BaseException as e:
                print("rank %d: %s" % (r, e), file=sys.stderr)
                os._exit(1)
        pids.append(pid)
    os.close(wr)
    with os.fdopen(rd) as f:
        sys.stdout.write(f.read())
    ok = all(os.waitpid(p, 0)[1] == 0 for p in pids)
    if a.backend != "icfab":
        return 0 if ok else 1
    # a2a_direct's CPU per op: the children's CPU time of a long run less a short one's.
    direct = os.path.join(TOP, "build", "bench", "a2a_direct")
    cpu = []
    for iters in (20, 20 + a.i):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([direct, "-n", str(a.n), "-b", str(a.b), "-i", str(iters), "-w", "3"],
                       check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e9)
    print("direct cpu_ns_per_op(all ranks)=%.0f" % ((cpu[1] - cpu[0]) / a.i))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
