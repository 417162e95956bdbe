#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""One MoE dispatch/combine step through the installed fabricdev package.

8 ranks in one process on the committed topology (icfabd --apply --preset
dgx-h100), 16 experts, top-2, hidden 64, float32. Expert e multiplies
what it receives by e + 1, so the combined output of a token x is
x * sum_j w_j (idx_j + 1): checked against that, element by element.
Prints TAP and the emulated dispatch/combine times.
"""
import sys

import numpy as np

import fabricdev as fd

N, E, K, H, T = 8, 16, 2, 64, 32
print("1..3")
print("# fabricdev from %s" % fd.__file__)
comm = fd.Comm.local(N, ws_bytes=16 << 20)
cfg = fd.MoeConfig(num_experts=E, k=K, hidden=H, dtype=fd.F32,
                   mode=fd.THROUGHPUT, align=1)
rng = np.random.default_rng(7)
xs = [rng.standard_normal((T, H)).astype(np.float32) for _ in range(N)]
idxs = [np.stack([rng.choice(E, K, replace=False) for _ in range(T)]).astype(np.int64)
        for _ in range(N)]
ws = [rng.random((T, K)).astype(np.float32) for _ in range(N)]

h = comm.moe_dispatch(cfg, xs, idxs, ws)
epr = E // N
ys = []
for l in range(comm.nlocal):
    rx, _, _, cnt, off = h.output(l)
    y = np.zeros_like(rx)
    for e in range(epr):
        a, n = int(off[e]), int(cnt[e])
        y[a:a + n] = rx[a:a + n] * ((comm.first + l) * epr + e + 1)
    ys.append(y)
print("ok 1 - dispatch: %d rows received" % sum(y.shape[0] for y in ys))
outs = comm.moe_combine(h, ys, [T] * N)
want = [x * (w * (i + 1)).sum(axis=1, keepdims=True) for x, i, w in zip(xs, idxs, ws)]
good = all(np.allclose(o, w_, rtol=1e-5, atol=1e-5) for o, w_ in zip(outs, want))
print("%s 2 - combine equals sum_j w_j (idx_j + 1) x" % ("ok" if good else "not ok"))
st = h.stats()
timed = st.dispatch_ps > 0 and st.combine_ps > 0
print("%s 3 - emulated time: dispatch %.3f us, combine %.3f us" %
      ("ok" if timed else "not ok", st.dispatch_ps / 1e6, st.combine_ps / 1e6))
sys.exit(0 if good and timed else 1)
