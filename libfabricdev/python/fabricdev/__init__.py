# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""ctypes binding of libfabricdev.

    import fabricdev as fd
    comm = fd.Comm.local(8, ws_bytes=64 << 20)         # one process, 8 ranks
    comm = fd.Comm.join(ws_bytes=64 << 20)             # FDEV_RANK/SIZE/JOB or MPI env
    out = comm.all_reduce(x, algo="ring")              # x: numpy [nlocal, ...]
    h = comm.moe_dispatch(cfg, xs, idxs, ws)           # per local rank lists
    ys = comm.moe_combine(h, expert_outputs)

Arrays are numpy or torch CPU tensors (bfloat16 included); a collective
given a torch tensor returns torch tensors that share the result's memory
(no copy). all_to_all_v takes split sizes. Errors are raised as
OSError(errno). The library is found through $FDEV_LIB, then
next to this file's repository build (build/libfabricdev/), then the
system (libfabricdev.so.0).
"""
import ctypes as C
import errno as _errno
import os

import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
# Run from the source tree (libfabricdev/python/fabricdev/) or from the
# built package (build/python/fabricdev/).
_candidates = [os.environ.get("FDEV_LIB", ""),
               os.path.join(_here, "..", "..", "..", "build", "libfabricdev", "libfabricdev.so.0"),
               os.path.join(_here, "..", "..", "libfabricdev", "libfabricdev.so.0"),
               "libfabricdev.so.0"]
for _p in _candidates:
    if not _p:
        continue
    try:
        _lib = C.CDLL(_p)
        break
    except OSError:
        continue
else:
    raise ImportError("libfabricdev.so.0 not found (set FDEV_LIB)")

U8, F32, BF16, F16, FP8_E4M3, I32, I64 = 0, 1, 2, 3, 4, 5, 6
ALGOS = {"auto": 0, "ring": 1, "tree": 2, "direct": 3, "hier": 4, "rings": 5}
TIMING_ONLY = 1
FREE_RUN = 2
THROUGHPUT, LOW_LATENCY, HIERARCHICAL, MULTICAST = 0, 1, 2, 3

_np_dtype = {F32: np.float32, BF16: np.uint16, F16: np.float16, I32: np.int32,
             I64: np.int64, U8: np.uint8, FP8_E4M3: np.uint8}


def _dt_of(a):
    if a.dtype == np.float32:
        return F32
    if a.dtype == np.float16:
        return F16
    if a.dtype == np.int32:
        return I32
    if a.dtype == np.int64:
        return I64
    if a.dtype == np.uint8:
        return U8
    raise ValueError("dtype %s: use float32/float16/int32/int64/uint8, "
                     "or pass dt=BF16 with uint16 bits" % a.dtype)


class MoeConfig(C.Structure):
    _fields_ = [("num_experts", C.c_uint32), ("k", C.c_uint32),
                ("hidden", C.c_uint32), ("dtype", C.c_uint32),
                ("mode", C.c_uint32), ("align", C.c_uint32),
                ("max_tokens", C.c_uint32), ("scale_groups", C.c_uint32),
                ("reserved", C.c_uint64 * 4)]


class _MoeIn(C.Structure):
    _fields_ = [("tokens", C.c_uint64), ("x", C.c_void_p), ("scales", C.c_void_p),
                ("topk_idx", C.c_void_p), ("topk_w", C.c_void_p)]


class _MoeOut(C.Structure):
    _fields_ = [("rows", C.c_uint64), ("x", C.c_void_p), ("scales", C.c_void_p),
                ("topk_idx", C.c_void_p), ("topk_w", C.c_void_p),
                ("expert_count", C.c_void_p), ("expert_offset", C.c_void_p),
                ("recv_tokens", C.c_uint64)]


class MoeStats(C.Structure):
    _fields_ = [("dispatch_ps", C.c_uint64), ("combine_ps", C.c_uint64),
                ("dispatch_bytes", C.c_uint64), ("combine_bytes", C.c_uint64),
                ("dropped", C.c_uint64), ("reserved", C.c_uint64 * 3)]


_vp = C.c_void_p
_lib.fdev_comm_init_local.argtypes = [C.c_char_p, C.c_uint, _vp, C.c_uint64, C.c_uint, C.POINTER(_vp)]
_lib.fdev_comm_init.argtypes = [C.c_char_p, C.c_char_p, C.c_int, C.c_int, C.c_uint64, C.c_uint, C.POINTER(_vp)]
_init_host = getattr(_lib, "__fdev_comm_init_host")
_init_host.argtypes = [C.c_uint, C.c_uint64, C.POINTER(_vp)]
_lib.fdev_comm_destroy.argtypes = [_vp]
_lib.fdev_comm_destroy.restype = None
_lib.fdev_comm_size.argtypes = [_vp]
_lib.fdev_comm_local.argtypes = [_vp, C.POINTER(C.c_int), C.POINTER(C.c_int)]
_lib.fdev_comm_last_ps.argtypes = [_vp]
_lib.fdev_comm_last_ps.restype = C.c_uint64
_lib.fdev_comm_set_node_size.argtypes = [_vp, C.c_int]
_lib.fdev_comm_barrier.argtypes = [_vp]
_lib.fdev_comm_exclude.argtypes = [_vp, C.c_int]
for _f in ("fdev_all_to_all", "fdev_all_reduce", "fdev_reduce_scatter", "fdev_all_gather"):
    getattr(_lib, _f).argtypes = [_vp, _vp, _vp, C.c_size_t, C.c_int, C.c_int]
_lib.fdev_all_to_all_v.argtypes = [_vp, _vp, _vp, _vp, _vp, C.c_int, C.c_int]
_lib.fdev_broadcast.argtypes = [_vp, _vp, _vp, C.c_size_t, C.c_int, C.c_int, C.c_int]
_lib.fdev_moe_dispatch.argtypes = [_vp, C.POINTER(MoeConfig), C.POINTER(_MoeIn), _vp, C.POINTER(_vp)]
_lib.fdev_moe_output.argtypes = [_vp, C.c_int, C.POINTER(_MoeOut)]
_lib.fdev_moe_combine.argtypes = [_vp, _vp, C.POINTER(_vp), C.POINTER(_vp)]
_lib.fdev_moe_handle_free.argtypes = [_vp]
_lib.fdev_moe_handle_free.restype = None
_lib.fdev_moe_stats.argtypes = [_vp, C.POINTER(MoeStats)]
_lib.fdev_f32_to_bf16.argtypes = [C.c_float]
_lib.fdev_f32_to_bf16.restype = C.c_uint16
_lib.fdev_bf16_to_f32.argtypes = [C.c_uint16]
_lib.fdev_bf16_to_f32.restype = C.c_float


def _check(ret, what):
    if ret < 0:
        raise OSError(-ret, "%s: %s" % (what, os.strerror(-ret)))
    return ret


def _is_torch(a):
    return hasattr(a, "detach")


def _is_bf16(a):
    return _is_torch(a) and str(a.dtype) == "torch.bfloat16"


def _np(a):
    """A contiguous numpy array of @a's bytes; bf16 tensors as uint16 bits."""
    if _is_torch(a):
        a = a.detach().cpu()
        if _is_bf16(a):
            import torch
            a = a.contiguous().view(torch.int16).numpy().view(np.uint16)
        else:
            a = a.numpy()
    return np.ascontiguousarray(a)


def _dt_in(x, dt):
    """The library dtype of input @x (before _np), unless @dt names it."""
    if dt is not None:
        return dt
    return BF16 if _is_bf16(x) else _dt_of(_np(x))


def _result(out, like, dt):
    """@out as @like's kind: a torch tensor over the same memory when
    @like is one (bf16 from its uint16 bits), else the numpy array."""
    if not _is_torch(like):
        return out
    import torch
    if dt == BF16:
        return torch.from_numpy(out.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(out)


def _ptr(a):
    return a.ctypes.data_as(_vp) if a is not None else None


class MoeHandle:
    def __init__(self, comm, h, cfg):
        self.comm, self.h, self.cfg = comm, h, cfg

    def output(self, lrank):
        """(x [rows,H], topk_idx [rows,k], topk_w [rows,k], counts, offsets)."""
        o = _MoeOut()
        _check(_lib.fdev_moe_output(self.h, lrank, C.byref(o)), "fdev_moe_output")
        H, k, E = self.cfg.hidden, self.cfg.k, self.cfg.num_experts
        epr = E // self.comm.size
        rows = o.rows

        def arr(p, n, t):
            if not n or not p:
                return np.zeros((n,), dtype=t)
            return np.ctypeslib.as_array(C.cast(p, C.POINTER(np.ctypeslib.as_ctypes_type(t))),
                                         shape=(n,)).copy()
        t = _np_dtype[self.cfg.dtype]
        x = arr(o.x, rows * H, t).reshape(rows, H)
        idx = arr(o.topk_idx, rows * k, np.int64).reshape(rows, k)
        w = arr(o.topk_w, rows * k, np.float32).reshape(rows, k)
        cnt = arr(o.expert_count, epr, np.uint64)
        off = arr(o.expert_offset, epr, np.uint64)
        return x, idx, w, cnt, off

    def stats(self):
        s = MoeStats()
        _check(_lib.fdev_moe_stats(self.h, C.byref(s)), "fdev_moe_stats")
        return s

    def __del__(self):
        if getattr(self, "h", None):
            _lib.fdev_moe_handle_free(self.h)
            self.h = None


class Comm:
    def __init__(self, c):
        self.c = c
        self.size = _lib.fdev_comm_size(c)
        first, count = C.c_int(), C.c_int()
        _lib.fdev_comm_local(c, C.byref(first), C.byref(count))
        self.first, self.nlocal = first.value, count.value

    @classmethod
    def local(cls, nranks, ws_bytes=0, timing_only=False, device=None):
        c = _vp()
        _check(_lib.fdev_comm_init_local(device.encode() if device else None, nranks, None,
                                         ws_bytes, TIMING_ONLY if timing_only else 0,
                                         C.byref(c)), "fdev_comm_init_local")
        return cls(c)

    @classmethod
    def join(cls, ws_bytes=0, timing_only=False, free_run=False, job=None, rank=-1,
             size=-1, device=None):
        c = _vp()
        flags = (TIMING_ONLY if timing_only else 0) | (FREE_RUN if free_run else 0)
        _check(_lib.fdev_comm_init(device.encode() if device else None,
                                   job.encode() if job else None, rank, size, ws_bytes,
                                   flags, C.byref(c)),
               "fdev_comm_init")
        return cls(c)

    @classmethod
    def host(cls, nranks, ws_bytes):
        """Ranks in host memory, no fabric (numerics only)."""
        c = _vp()
        _check(_init_host(nranks, ws_bytes, C.byref(c)), "host comm")
        return cls(c)

    def close(self):
        if self.c:
            _lib.fdev_comm_destroy(self.c)
            self.c = None

    def __del__(self):
        self.close()

    @property
    def last_ps(self):
        return _lib.fdev_comm_last_ps(self.c)

    def set_node_size(self, n):
        _check(_lib.fdev_comm_set_node_size(self.c, n), "fdev_comm_set_node_size")

    def barrier(self):
        _check(_lib.fdev_comm_barrier(self.c), "fdev_comm_barrier")

    def exclude(self, rank):
        _check(_lib.fdev_comm_exclude(self.c, rank), "fdev_comm_exclude")

    def _coll(self, fn, x, out_elems, algo, dt=None, root=None):
        like = x
        dt = _dt_in(x, dt)
        x = _np(x)
        per = x.size // self.nlocal
        out = np.empty((self.nlocal, out_elems(per)), dtype=x.dtype)
        args = [self.c, _ptr(x), _ptr(out)]
        if fn == "fdev_broadcast":
            _check(_lib.fdev_broadcast(*args, per, dt, root, ALGOS[algo]), fn)
        else:
            cnt = per // self.size if fn in ("fdev_all_to_all", "fdev_reduce_scatter") else per
            _check(getattr(_lib, fn)(*args, cnt, dt, ALGOS[algo]), fn)
        return _result(out, like, dt)

    def all_reduce(self, x, algo="auto", dt=None):
        return self._coll("fdev_all_reduce", x, lambda p: p, algo, dt)

    def reduce_scatter(self, x, algo="auto", dt=None):
        return self._coll("fdev_reduce_scatter", x, lambda p: p // self.size, algo, dt)

    def all_gather(self, x, algo="auto", dt=None):
        return self._coll("fdev_all_gather", x, lambda p: p * self.size, algo, dt)

    def all_to_all(self, x, algo="auto", dt=None):
        return self._coll("fdev_all_to_all", x, lambda p: p, algo, dt)

    def broadcast(self, x, root=0, algo="auto", dt=None):
        return self._coll("fdev_broadcast", x, lambda p: p, algo, dt, root)

    def all_to_all_v(self, xs, send_splits, algo="auto", dt=None):
        """All-to-all with split sizes. xs: one array/tensor per local rank,
        [rows, ...] (rows may differ); send_splits: per local rank, the rows
        it sends to each rank. Returns (ys, recv_splits): ys one [rows, ...]
        per local rank, grouped by source rank; recv_splits the rows it got
        from each. ys share one result buffer (no copy per rank)."""
        like = xs[0]
        dt = _dt_in(like, dt)
        arrs = [_np(x) for x in xs]
        row = arrs[0].shape[1:]
        per = int(np.prod(row)) if row else 1
        sc = np.ascontiguousarray(np.asarray(send_splits, dtype=np.uint64)
                                  .reshape(self.nlocal, self.size)) * np.uint64(per)
        for a, c in zip(arrs, sc):
            if a.size != int(c.sum()):
                raise ValueError("all_to_all_v: split sizes add up to %d elements, the "
                                 "input has %d" % (int(c.sum()), a.size))
        # The library reads and writes every local rank at the stride of the
        # largest rank's total, so it needs every rank's counts first.
        if self.nlocal == self.size:
            m = sc
        else:
            m = self.all_gather(sc.astype(np.int64), algo="direct")[0] \
                .reshape(self.size, self.size).astype(np.uint64)
        smax = int(m.sum(1).max())
        rmax = int(m.sum(0).max())
        send = np.zeros((self.nlocal, max(smax, 1)), dtype=arrs[0].dtype)
        for l, a in enumerate(arrs):
            send[l, :a.size] = a.reshape(-1)
        recv = np.empty((self.nlocal, max(rmax, 1)), dtype=arrs[0].dtype)
        rc = np.zeros((self.nlocal, self.size), dtype=np.uint64)
        _check(_lib.fdev_all_to_all_v(self.c, _ptr(send), _ptr(sc), _ptr(recv), _ptr(rc),
                                      dt, ALGOS[algo]), "fdev_all_to_all_v")
        ys = [_result(recv[l, :int(rc[l].sum())].reshape((-1,) + row), like, dt)
              for l in range(self.nlocal)]
        return ys, (rc // np.uint64(per)).astype(np.int64)

    def moe_dispatch(self, cfg, xs, idxs, ws, reuse=None):
        """xs, idxs, ws: one array per local rank ([T,H], [T,k] int64, [T,k] f32)."""
        keep = []
        ins = (_MoeIn * self.nlocal)()
        for l in range(self.nlocal):
            x = _np(xs[l]) if xs is not None else None
            i = _np(idxs[l]).astype(np.int64)
            w = _np(ws[l]).astype(np.float32)
            keep += [x, i, w]
            ins[l] = _MoeIn(i.shape[0], _ptr(x), None, _ptr(i), _ptr(w))
        h = _vp()
        _check(_lib.fdev_moe_dispatch(self.c, C.byref(cfg), ins,
                                      reuse.h if reuse else None, C.byref(h)),
               "fdev_moe_dispatch")
        return MoeHandle(self, h, cfg)

    def moe_combine(self, handle, ys, tokens):
        """ys: per local rank [rows,H]; tokens: per local rank T. Returns [T,H] each."""
        t = _np_dtype[handle.cfg.dtype if handle.cfg.dtype != FP8_E4M3 else BF16]
        keep = [_np(y) for y in ys] if ys is not None else None
        outs = [np.zeros((tokens[l], handle.cfg.hidden), dtype=t) for l in range(self.nlocal)]
        yp = (_vp * self.nlocal)(*[_ptr(y) for y in keep]) if keep else None
        op = (_vp * self.nlocal)(*[_ptr(o) for o in outs])
        _check(_lib.fdev_moe_combine(self.c, handle.h, yp, op), "fdev_moe_combine")
        return outs
