#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""TAP test of the ctypes binding: collectives against numpy, element by
element, on the host communicator, or with --device on the fabric (one
process driving 4 ranks). --no-torch skips the torch tensors: importing
torch takes minutes in the TCG VM, so on the fabric fdev_test.sh passes
it and torch_test.py runs this file in a child of its own, after the
one import it makes anyway."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabricdev as fd  # noqa: E402

n, cnt = 4, 1001
dev = "--device" in sys.argv
comm = fd.Comm.local(n, ws_bytes=4 << 20) if dev else fd.Comm.host(n, 4 << 20)
rng = np.random.default_rng(3)
x = rng.integers(-8, 8, size=(n, n * cnt)).astype(np.float32)
res = []


def ok(cond, what):
    res.append(cond)
    print("%sok %d - %s" % ("" if cond else "not ", len(res), what))


print("TAP version 13")
for algo in ("ring", "direct", "tree"):
    y = comm.all_reduce(x, algo=algo)
    ok(np.array_equal(y, np.tile(x.sum(0), (n, 1))), "all_reduce %s" % algo)
y = comm.reduce_scatter(x, algo="ring")
ok(np.array_equal(y, x.sum(0).reshape(n, cnt)), "reduce_scatter ring")
y = comm.all_gather(x[:, :cnt], algo="ring")
ok(np.array_equal(y, np.tile(x[:, :cnt].reshape(-1), (n, 1))), "all_gather ring")
y = comm.all_to_all(x, algo="direct")
want = x.reshape(n, n, cnt).transpose(1, 0, 2).reshape(n, n * cnt)
ok(np.array_equal(y, want), "all_to_all direct")
y = comm.broadcast(x, root=2, algo="tree")
ok(np.array_equal(y, np.tile(x[2], (n, 1))), "broadcast tree")
comm.set_node_size(2)
y = comm.all_reduce(x, algo="hier")
ok(np.array_equal(y, np.tile(x.sum(0), (n, 1))), "all_reduce hier, 2 nodes of 2")
y = comm.all_to_all(x, algo="hier")
ok(np.array_equal(y, want), "all_to_all hier, 2 nodes of 2")
try:
    comm.set_node_size(3)
    ok(False, "a node size that does not divide the ranks is refused")
except OSError as e:
    ok(e.errno == 22, "a node size that does not divide the ranks: EINVAL")
comm.set_node_size(n)
# All-to-all with split sizes: rank s sends (s + d) % 3 rows of 5 to rank d.
spl = [[(s + d) % 3 for d in range(n)] for s in range(n)]
xs = [rng.integers(-8, 8, size=(sum(spl[s]), 5)).astype(np.float32) for s in range(n)]
ys, rsp = comm.all_to_all_v(xs, spl)
want = [np.concatenate([xs[s][sum(spl[s][:d]):sum(spl[s][:d + 1])] for s in range(n)])
        for d in range(n)]
ok(all(np.array_equal(y, w) for y, w in zip(ys, want)) and
   rsp.tolist() == [[spl[s][d] for s in range(n)] for d in range(n)],
   "all_to_all_v with split sizes")
torch = None
if "--no-torch" not in sys.argv:
    try:
        import torch
    except ImportError:
        pass
if torch is None:
    print("ok %d - # SKIP torch tensors: %s" % (len(res) + 1, "--no-torch" if "--no-torch" in
                                                 sys.argv else "no python3-torch"))
    res.append(True)
else:
    t = torch.from_numpy(x).to(torch.bfloat16)
    y = comm.all_reduce(t, algo="ring")
    ok(isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16 and
       torch.equal(y, t.float().sum(0).to(torch.bfloat16).repeat(n, 1)),
       "bf16 torch tensor all_reduce: a bf16 tensor, exact")
    tys, _ = comm.all_to_all_v([torch.from_numpy(a).to(torch.bfloat16) for a in xs], spl)
    ok(all(ty.dtype == torch.bfloat16 and torch.equal(ty.float(), torch.from_numpy(w))
           for ty, w in zip(tys, want)), "bf16 all_to_all_v with split sizes, as tensors")
    stride = max(sum(spl[s][d] for s in range(n)) for d in range(n)) * 5 * 2
    ok(all(ty.data_ptr() - tys[0].data_ptr() == l * stride for l, ty in enumerate(tys)),
       "the ranks' result tensors are views of one buffer, not copies")
if dev:
    ok(comm.last_ps > 0, "emulated time reported (%d ps)" % comm.last_ps)
comm.close()
print("1..%d" % len(res))
sys.exit(0 if all(res) else 1)
