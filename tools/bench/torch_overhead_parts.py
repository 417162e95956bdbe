#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Where the backend's per-op time goes (tools/bench/torch_overhead.py's
copied path): each rank's CPU time per all_to_all_single, called
through torch.distributed, through the process group's binding (one
pybind call and wait()) and without wait(), against a2a_direct's; and,
with -p DIR, `perf record -a -e cpu-clock` over the
torch.distributed ops only. Under tools/vm/run --icount a CPU
nanosecond is a guest instruction. A benchmark: it prints.

    torch_overhead_parts.py [-n RANKS] [-b BYTES_PER_PEER ...] [-i OPS]
                            [--backend icfab|gloo ...] [--ext DIR ...] [-p DIR [-c NS]]

torch is imported once; every backend (and, for icfab, every --ext
build's fabricdev, imported by the ranks after the fork, so an old and a
new build of the extension run side by side) at every size forks its own
ranks. gloo meets over loopback (GLOO_SOCKET_IFNAME=lo unless set; the
VM's runner brings lo up). It ends with one table: CPU per op summed
over the ranks, and rank 0's wall time per op.
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
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")


def cpu_ns():
    return time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID)


def rank_main(rank, a, tag, backend, ext, b, port, wr):
    if backend == "icfab":
        # This build's extension, in this rank only.
        sys.path.insert(0, ext)
        import fabricdev.torch  # noqa: F401 (registers "icfab")
    dist.init_process_group(backend, init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=a.n, timeout=datetime.timedelta(seconds=300))
    pg = dist.distributed_c10d._get_default_group()
    x = torch.empty(b * a.n, dtype=torch.uint8)
    x.copy_((torch.arange(b * a.n) + rank).to(torch.uint8))
    y = torch.empty(b * a.n, dtype=torch.uint8)
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
              ("dist2", via_dist), ("loop", empty_loop))
    if backend != "icfab":
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
    # The bytes arrived: a path that dropped them is no result.
    want = (torch.arange(a.n).repeat_interleave(b) + torch.arange(b * a.n) % b
            + rank * b).to(torch.uint8)
    if not torch.equal(y, want):
        raise RuntimeError("all_to_all_single's output is wrong")
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
            # --proc-map-timeout: reading the ranks' maps (torch maps hundreds of
            # files) takes longer than perf's default 500 ms under TCG.
            perf = subprocess.Popen(["perf", "record", "-q", "-a", "-D", "-1", "-e", "cpu-clock",
                                     "--proc-map-timeout", "60000",
                                     "-c", str(a.c), "--control", "fifo:%s,%s" % (ctl, ack),
                                     "-o", os.path.join(a.p, "perf-%s-%d.data" % (tag, b))])
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


def run_ranks(a, tag, backend, ext, b, port):
    """{phase: [CPU ns summed over the ranks, rank 0's wall ns]}; None if a rank failed."""
    rd, wr = os.pipe()
    pids = []
    for r in range(a.n):
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            try:
                rank_main(r, a, tag, backend, ext, b, port, wr)
                os._exit(0)
            except BaseException as e:
                print("%s -b %d rank %d: %s" % (tag, b, r, e), file=sys.stderr)
                os._exit(1)
        pids.append(pid)
    os.close(wr)
    with os.fdopen(rd) as f:
        lines = f.read().split("\n")
    ok = all(os.waitpid(p, 0)[1] == 0 for p in pids)
    res = {}
    for l in lines:
        if not l:
            continue
        print("%s -b %d %s" % (tag, b, l))
        w = l.split()
        rank, name = int(w[1]), w[2]
        kv = dict(x.split("=") for x in w[3:])
        e = res.setdefault(name, [0.0, 0.0])
        e[0] += float(kv["cpu_ns_per_op"])
        if rank == 0:
            e[1] = float(kv.get("wall_ns_per_op", 0))
    return res if ok else None


def direct_cpu(a, b):
    """a2a_direct's CPU per op, all ranks: the children's CPU of a long run less a short one's."""
    direct = os.path.join(TOP, "build", "bench", "a2a_direct")
    cpu = []
    wall = None
    for iters in (20, 20 + a.i):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([direct, "-n", str(a.n), "-b", str(b), "-i", str(iters), "-w", "3"],
                             capture_output=True, text=True)
        if out.returncode:
            print("a2a_direct -b %d: rc %d %s" % (b, out.returncode, out.stderr.strip()),
                  file=sys.stderr)
            return None
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e9)
        wall = dict(kv.split("=") for kv in out.stdout.split()[1:]).get("median_us")
    return (cpu[1] - cpu[0]) / a.i, float(wall) * 1000 if wall else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("-b", type=int, nargs="+", default=[4096])
    ap.add_argument("-i", type=int, default=200)
    ap.add_argument("--backend", nargs="+", default=["icfab"],
                    help="icfab and/or gloo (gloo: its binding's and torch's share)")
    ap.add_argument("--ext", nargs="+", default=[os.path.join(TOP, "build", "python")],
                    help="directories holding a fabricdev package (builds of the extension)")
    ap.add_argument("-p", help="directory for perf-BACKEND-BYTES.data")
    ap.add_argument("-c", type=int, default=100000, help="perf's sample period, ns")
    a = ap.parse_args()
    port = 29000 + os.getpid() % 500 * 2
    configs = []
    for be in a.backend:
        for ext in (a.ext if be == "icfab" else [None]):
            tag = (be if ext is None or len(a.ext) == 1
                   else "%s:%s" % (be, os.path.basename(ext.rstrip("/"))))
            configs.append((tag, be, ext))
    rows = []
    ok = True
    for b in a.b:
        for tag, be, ext in configs:
            port += 1
            res = run_ranks(a, tag, be, ext, b, port)
            if res is None:
                ok = False
                continue
            for name in ("dist", "pg", "pg_nowait", "dist2", "loop", "dist(perf)"):
                if name in res:
                    rows.append((b, tag, name, res[name][0], res[name][1]))
        d = direct_cpu(a, b)
        if d is None:
            ok = False
            continue
        print("direct -b %d cpu_ns_per_op(all ranks)=%.0f median_wall_ns=%.0f" % (b, d[0], d[1]))
        rows.append((b, "a2a_direct", "fdev_all_to_all", d[0], d[1]))
    names = {"dist": "dist.all_to_all_single (first)", "dist2": "dist.all_to_all_single (again)",
             "pg": "pg.alltoall_base(...).wait()", "pg_nowait": "pg.alltoall_base(...)",
             "loop": "empty loop", "dist(perf)": "dist.all_to_all_single (under perf)", "fdev_all_to_all": "fdev_all_to_all (C)"}
    print()
    print("| bytes per peer | path | called as | CPU µs per op, %d ranks | rank 0 wall µs per op |"
          % a.n)
    print("|---|---|---|---|---|")
    for b, tag, name, cpu, wall in rows:
        print("| %d | %s | %s | %.1f | %s |" % (b, tag, names[name], cpu / 1000,
                                               "%.1f" % (wall / 1000) if wall else "-"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
