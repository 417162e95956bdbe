#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Backend overhead: the wall time of all_to_all_single through the
"icfab" torch.distributed backend against the same exchange through
libfabricdev directly (build/bench/a2a_direct), in the same run, on the
committed topology; through the backend twice, on ordinary tensors
(staged through the workspace) and on tensors from
fabricdev.torch.empty() (in device memory, used in place). A benchmark,
not a test: it prints, it asserts nothing about time.

    torch_overhead.py [-n RANKS] [-b BYTES_PER_PEER ...] [-i ITERS]

Needs the module and a committed topology (icfabd --apply --preset ...).
"""
import argparse
import datetime
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "build", "python"))
import fabricdev.torch as ft  # noqa: E402


def backend_rank(rank, n, sizes, iters, warmup, port, wr):
    dist.init_process_group("icfab", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=120))
    for b in sizes:
        res = []
        for mk in (torch.empty, ft.empty):
            x = mk(b * n, dtype=torch.uint8)
            x.copy_((torch.arange(b * n) + rank).to(torch.uint8))
            y = mk(b * n, dtype=torch.uint8)
            t = []
            for i in range(warmup + iters):
                t0 = time.monotonic()
                dist.all_to_all_single(y, x)
                if i >= warmup:
                    t.append(time.monotonic() - t0)
            t.sort()
            res += [t[len(t) // 2] * 1e6, ft.last_ps()]
            del x, y
        if rank == 0:
            os.write(wr, ("%d %.1f %d %.1f %d %d\n"
                          % (b, res[0], res[1], res[2], res[3],
                             ft.copy_stats()["in_place"])).encode())
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("-b", type=int, nargs="+", default=[4096, 65536, 1 << 20])
    ap.add_argument("-i", type=int, default=20)
    ap.add_argument("-w", type=int, default=3)
    a = ap.parse_args()
    rd, wr = os.pipe()
    port = 29900 + os.getpid() % 90
    pids = []
    for r in range(a.n):
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            try:
                backend_rank(r, a.n, a.b, a.i, a.w, port, wr)
                os._exit(0)
            except BaseException as e:
                print("rank %d: %s" % (r, e), file=sys.stderr)
                os._exit(1)
        pids.append(pid)
    os.close(wr)
    with os.fdopen(rd) as f:
        lines = f.read().split("\n")
    ok = all(os.waitpid(p, 0)[1] == 0 for p in pids)
    got = {int(l.split()[0]): l.split()[1:] for l in lines if l}
    print("| bytes per peer | backend, copied: median µs | backend, zero copy: median µs "
          "| direct median µs | ratio copied | ratio zero copy "
          "| emulated ps (copied / zero copy / direct) |")
    print("|---|---|---|---|---|---|---|")
    for b in a.b:
        out = subprocess.run([os.path.join(TOP, "build", "bench", "a2a_direct"), "-n", str(a.n),
                              "-b", str(b), "-i", str(a.i), "-w", str(a.w)],
                             capture_output=True, text=True)
        d = dict(kv.split("=") for kv in out.stdout.split()[1:]) if out.returncode == 0 else {}
        if not d:
            print("a2a_direct -b %d: rc %d %s" % (b, out.returncode, out.stderr.strip()),
                  file=sys.stderr)
        if b not in got or not d:
            print("| %d | %s | - | %s | - | - | - |" % (b, got.get(b, ["failed"])[0],
                                                        d.get("median_us", "failed")))
            ok = False
            continue
        be, bz, de = float(got[b][0]), float(got[b][2]), float(d["median_us"])
        print("| %d | %.1f | %.1f | %.1f | %.2f | %.2f | %s / %s / %s |"
              % (b, be, bz, de, be / de, bz / de, got[b][1], got[b][3], d["emulated_ps"]))
        # Rank 0's bytes used in place so far: none would mean a silent copy.
        if int(got[b][4]) == 0:
            print("zero copy was not taken for %d bytes per peer" % b, file=sys.stderr)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
