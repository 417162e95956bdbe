#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An expert-parallel MoE layer in PyTorch over icfab.

N ranks each own E/N experts (a two-layer FFN each). Every rank routes its
tokens (top-k of a linear gate, softmax weights), dispatches them to the
experts' ranks through libfabricdev, runs its own experts on what it
received, and combines the outputs back. The result is compared with a
dense single-process reference (allclose), and the emulated dispatch and
combine times are printed.

    moe_example.py                 one process drives N ranks (deterministic)
    moe_example.py --procs         N independently started processes, one
                                   rank each (rank 0 drives the fabric for
                                   all: deterministic; --free-run: each
                                   drives its own, free-running contexts)
    moe_example.py --host          no module: ranks in host memory

Needs a committed topology with N endpoints (icfabd --apply --preset ...).
"""
import argparse
import os
import subprocess
import sys
import uuid

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabricdev as fd  # noqa: E402


def make_params(E, H, F, seed):
    g = torch.Generator().manual_seed(seed)
    gate = torch.randn(H, E, generator=g) / H ** 0.5
    w1 = torch.randn(E, H, F, generator=g) / H ** 0.5
    w2 = torch.randn(E, F, H, generator=g) / F ** 0.5
    return gate, w1, w2


def tokens_of(rank, T, H, seed):
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    # rank 1 has no tokens: T = 0 must work
    return torch.randn(0 if rank == 1 else T + rank, H, generator=g)


def route(x, gate, k):
    logits = x @ gate
    w, idx = torch.topk(logits, k, dim=-1)
    return idx.to(torch.int64), torch.softmax(w, dim=-1)


def expert(e, x, w1, w2):
    return torch.relu(x @ w1[e]) @ w2[e]


def dense_reference(x, idx, w, w1, w2):
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(idx.shape[1]):
            e = int(idx[t, j])
            out[t] += w[t, j] * expert(e, x[t:t + 1], w1, w2)[0]
    return out


class ExpertParallelMoE(torch.nn.Module):
    """The layer: gate, dispatch, local experts, combine."""

    def __init__(self, comm, E, k, H, params):
        super().__init__()
        self.comm, self.E, self.k, self.H = comm, E, k, H
        self.gate, self.w1, self.w2 = params
        self.epr = E // comm.size
        self.cfg = fd.MoeConfig(num_experts=E, k=k, hidden=H, dtype=fd.F32,
                                mode=fd.THROUGHPUT, align=1)
        self.last = None

    def forward(self, xs):
        routes = [route(x, self.gate, self.k) for x in xs]
        h = self.comm.moe_dispatch(self.cfg, [x.numpy() for x in xs],
                                   [r[0].numpy() for r in routes],
                                   [r[1].numpy() for r in routes])
        ys = []
        for l in range(self.comm.nlocal):
            rank = self.comm.first + l
            rx, _, _, cnt, off = h.output(l)
            y = torch.zeros(rx.shape[0], self.H)
            for e in range(self.epr):
                a, n = int(off[e]), int(cnt[e])
                if n:
                    y[a:a + n] = expert(rank * self.epr + e,
                                        torch.from_numpy(rx[a:a + n]), self.w1, self.w2)
            ys.append(y.numpy())
        outs = self.comm.moe_combine(h, ys, [x.shape[0] for x in xs])
        self.last = h.stats()
        return [torch.from_numpy(o) for o in outs], routes


def run(comm, args):
    params = make_params(args.experts, args.hidden, args.ffn, args.seed)
    layer = ExpertParallelMoE(comm, args.experts, args.topk, args.hidden, params)
    ranks = range(comm.first, comm.first + comm.nlocal)
    xs = [tokens_of(r, args.tokens, args.hidden, args.seed) for r in ranks]
    with torch.no_grad():
        outs, routes = layer(xs)
        good = True
        for l, r in enumerate(ranks):
            ref = dense_reference(xs[l], routes[l][0], routes[l][1], params[1], params[2])
            close = torch.allclose(outs[l], ref, rtol=1e-4, atol=1e-5)
            good &= close
            print("rank %d: %d tokens, allclose to the dense reference: %s"
                  % (r, xs[l].shape[0], close))
    st = layer.last
    print("rank %s: emulated dispatch %.3f us, combine %.3f us"
          % (",".join(map(str, ranks)), st.dispatch_ps / 1e6, st.combine_ps / 1e6))
    return good


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--topk", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=96)
    ap.add_argument("--ffn", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=24)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--host", action="store_true")
    ap.add_argument("--procs", action="store_true")
    ap.add_argument("--free-run", action="store_true")
    args = ap.parse_args()
    ws = 32 << 20

    if args.procs and "FDEV_RANK" not in os.environ:
        job = "moe-" + uuid.uuid4().hex[:8]
        procs = [subprocess.Popen([sys.executable] + sys.argv,
                                  env=dict(os.environ, FDEV_RANK=str(r),
                                           FDEV_SIZE=str(args.ranks), FDEV_JOB=job))
                 for r in range(args.ranks)]
        rcs = [p.wait() for p in procs]
        return 0 if not any(rcs) else 1
    if args.procs:
        comm = fd.Comm.join(ws_bytes=ws, free_run=args.free_run)
    elif args.host:
        comm = fd.Comm.host(args.ranks, ws)
    else:
        comm = fd.Comm.local(args.ranks, ws_bytes=ws)
    ok = run(comm, args)
    comm.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
