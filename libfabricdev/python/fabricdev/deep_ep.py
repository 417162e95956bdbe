# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""DeepEP's Python API (deep_ep.Buffer) on CPU tensors over torch.distributed.

    from fabricdev import deep_ep          # instead of: import deep_ep
    buffer = deep_ep.Buffer(group)
    num_tokens_per_rank, _, num_tokens_per_expert, is_token_in_rank, _ = \\
        buffer.get_dispatch_layout(topk_idx, num_experts)
    recv_x, recv_topk_idx, recv_topk_weights, num_recv_tokens_per_expert_list, handle, _ = \\
        buffer.dispatch(x, topk_idx=topk_idx, topk_weights=topk_weights,
                        num_tokens_per_rank=num_tokens_per_rank,
                        is_token_in_rank=is_token_in_rank,
                        num_tokens_per_expert=num_tokens_per_expert)
    combined_x, _, _ = buffer.combine(expert_out, handle)
    recv_x, recv_count, handle, _, _ = buffer.low_latency_dispatch(
        x, topk_idx, num_max_dispatch_tokens_per_rank, num_experts, use_fp8=False)
    combined_x, _, _ = buffer.low_latency_combine(expert_out, topk_idx, topk_weights, handle)

Argument names, return tuples and shapes are DeepEP's; rank r owns experts
[r*E/n, (r+1)*E/n). On an "icfab" group the bytes cross the fabric in the
records of libfabricdev's MoE modes (docs/LIBFABRICDEV.md):

- dispatch/combine (throughput): the counts, then one record per (token,
  destination rank) - x, the k expert ids, the k weights - in one
  all_to_all_single with splits; combine sends one row per record back
  and sums a token's rows (without weights, as DeepEP's combine does).
  A handle from an earlier dispatch skips the count exchange.
- low_latency_dispatch/combine: one record per (token, expert) into the
  expert's fixed slots [local expert][max tokens] of each destination,
  counts in the same exchange (an all_to_all_single of equal splits, no
  count exchange); combine returns each row to its token's rank, which
  sums them with the weights.

Not DeepEP's: events and hooks are complete at return (every op runs to
completion; EventOverlap.current_stream_wait() does nothing, the hook is a
no-op); `config`, `num_sms` and the buffer sizes are accepted and unused;
FP8 (`use_fp8=True`, DeepEP's default) raises ValueError, since torch 1.13
has no float8 dtype: pass use_fp8=False.
"""
import torch
import torch.distributed as dist


class EventOverlap:
    """DeepEP's event wrapper; the ops here have finished when they return."""

    def __init__(self, event=None, extra_tensors=None):
        self.event = event
        self.extra_tensors = extra_tensors

    def current_stream_wait(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Config:
    """DeepEP's performance config: accepted, nothing to tune on the CPU."""

    def __init__(self, num_sms=20, *args):
        self.num_sms = num_sms
        self.args = args


def _no_hook():
    pass


def _rows_bytes(t):
    """@t [rows, ...] as uint8 [rows, bytes per row]."""
    t = t.contiguous()
    rows = t.shape[0]
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    return t.view(torch.uint8).reshape(rows, -1) if t.numel() else \
        torch.zeros((rows, 0), dtype=torch.uint8)


def _from_bytes(b, dtype, shape):
    return b.contiguous().view(dtype).reshape(shape)


class Buffer:
    num_sms = 20

    def __init__(self, group=None, num_nvl_bytes=0, num_rdma_bytes=0,
                 low_latency_mode=False, num_qps_per_rank=24,
                 allow_nvlink_for_low_latency_mode=True, allow_mnnvl=False,
                 explicitly_destroy=False):
        self.group = group if group is not None else dist.group.WORLD
        self.rank = dist.get_rank(self.group)
        self.group_size = dist.get_world_size(self.group)
        self.num_nvl_bytes = num_nvl_bytes
        self.num_rdma_bytes = num_rdma_bytes
        self.low_latency_mode = low_latency_mode

    @staticmethod
    def set_num_sms(new_num_sms):
        Buffer.num_sms = new_num_sms

    @staticmethod
    def get_dispatch_config(num_ranks):
        return Config(Buffer.num_sms)

    @staticmethod
    def get_combine_config(num_ranks):
        return Config(Buffer.num_sms)

    @staticmethod
    def get_low_latency_rdma_size_hint(num_max_dispatch_tokens_per_rank, hidden, num_ranks,
                                       num_experts):
        # one record slot per (expert, token) in each direction, 2 bytes per element
        return 2 * num_experts * num_max_dispatch_tokens_per_rank * (hidden * 2 + 16)

    def destroy(self):
        pass

    def get_local_buffer_tensor(self, *args, **kwargs):
        raise NotImplementedError("fabricdev.deep_ep: no raw buffer (the records are staged "
                                  "by the process group)")

    def _experts_per_rank(self, num_experts):
        if num_experts % self.group_size:
            raise ValueError("deep_ep: %d experts do not split over %d ranks"
                             % (num_experts, self.group_size))
        return num_experts // self.group_size

    def _a2a(self, out, inp, out_splits, in_splits):
        dist.all_to_all_single(out, inp, out_splits, in_splits, group=self.group)

    # ---- layout

    def get_dispatch_layout(self, topk_idx, num_experts, previous_event=None,
                            async_finish=False, allocate_on_comm_stream=False):
        """Returns num_tokens_per_rank [num_ranks] int, None (no RDMA ranks),
        num_tokens_per_expert [num_experts] int, is_token_in_rank
        [num_tokens, num_ranks] bool, event."""
        epr = self._experts_per_rank(num_experts)
        idx = topk_idx.to(torch.int64)
        valid = idx >= 0
        per_expert = torch.bincount(idx[valid].reshape(-1), minlength=num_experts)
        in_rank = torch.zeros((idx.shape[0], self.group_size), dtype=torch.bool)
        if idx.numel():
            rows = torch.arange(idx.shape[0]).unsqueeze(1).expand_as(idx)
            in_rank[rows[valid], (idx[valid] // epr)] = True
        return (in_rank.sum(0).to(torch.int32), None, per_expert.to(torch.int32), in_rank,
                EventOverlap())

    # ---- throughput dispatch/combine

    def dispatch(self, x, handle=None, num_tokens_per_rank=None, num_tokens_per_rdma_rank=None,
                 is_token_in_rank=None, num_tokens_per_expert=None, topk_idx=None,
                 topk_weights=None, expert_alignment=1, num_worst_tokens=0, config=None,
                 previous_event=None, async_finish=False, allocate_on_comm_stream=False):
        """Returns recv_x (a tuple (x, scales) when x is one), recv_topk_idx
        [recv, k] (local expert ids, -1 elsewhere), recv_topk_weights,
        num_recv_tokens_per_expert_list, handle, event. With a handle:
        recv_x, None, None, None, None, event."""
        x, scales = x if isinstance(x, tuple) else (x, None)
        n = self.group_size
        if handle is not None:
            send_idx, send_splits, recv_splits = handle[:3]
            recv = self._exchange(x, scales, send_idx, send_splits, recv_splits)
            rx = recv[0] if scales is None else (recv[0], recv[1])
            return rx, None, None, None, None, EventOverlap()
        if topk_idx is None or is_token_in_rank is None or num_tokens_per_rank is None:
            raise ValueError("deep_ep dispatch: topk_idx, num_tokens_per_rank and "
                             "is_token_in_rank are needed without a handle")
        k = topk_idx.shape[1]
        num_experts = num_tokens_per_expert.numel() if num_tokens_per_expert is not None \
            else None
        if num_experts is None:
            raise ValueError("deep_ep dispatch: num_tokens_per_expert is needed without a handle")
        epr = self._experts_per_rank(num_experts)
        in_rank = is_token_in_rank.to(torch.bool)
        # records in destination order, then token order
        dest, tok = in_rank.t().nonzero(as_tuple=True)
        send_idx = tok
        send_splits = in_rank.sum(0).tolist()
        counts = torch.tensor(send_splits, dtype=torch.int64)
        recv_counts = torch.empty_like(counts)
        self._a2a(recv_counts, counts, None, None)
        recv_splits = recv_counts.tolist()
        # the k ids as the destination's local ids, weights of the others 0
        idx = topk_idx.to(torch.int64)[send_idx]
        lo = (dest * epr).unsqueeze(1)
        mine = (idx >= lo) & (idx < lo + epr)
        lidx = torch.where(mine, idx - lo, torch.full_like(idx, -1))
        w = topk_weights if topk_weights is not None else torch.zeros(idx.shape)
        lw = torch.where(mine, w.to(torch.float32)[send_idx], torch.zeros(idx.shape))
        recv = self._exchange(x, scales, send_idx, send_splits, recv_splits,
                              extra=[(lidx, torch.int64), (lw, torch.float32)])
        rx = recv[0] if scales is None else (recv[0], recv[1])
        ridx, rw = recv[-2], recv[-1]
        per_expert = torch.bincount(ridx[ridx >= 0], minlength=epr)[:epr].tolist()
        a = max(1, expert_alignment)
        per_expert = [(c + a - 1) // a * a for c in per_expert]
        if k == 0:
            ridx = ridx.reshape(-1, 0)
        handle = (send_idx, send_splits, recv_splits, in_rank, x.shape[0])
        return rx, ridx, rw if topk_weights is not None else None, per_expert, handle, \
            EventOverlap()

    def _exchange(self, x, scales, send_idx, send_splits, recv_splits, extra=()):
        """One record per send_idx row: x (and scales, and @extra's rows)
        packed as bytes, one all_to_all_single; the fields back."""
        fields = [(x, x.dtype)] + ([(scales, scales.dtype)] if scales is not None else [])
        parts, widths = [], []
        for t, dt in fields[:1 + (scales is not None)]:
            b = _rows_bytes(t[send_idx])
            parts.append(b)
            widths.append((b.shape[1], dt, t.shape[1:]))
        for t, dt in extra:
            b = _rows_bytes(t.to(dt))
            parts.append(b)
            widths.append((b.shape[1], dt, t.shape[1:]))
        send = torch.cat(parts, 1) if parts else torch.zeros((len(send_idx), 0), dtype=torch.uint8)
        rows = sum(recv_splits)
        recv = torch.empty((rows, send.shape[1]), dtype=torch.uint8)
        self._a2a(recv, send, recv_splits, send_splits)
        out, off = [], 0
        for wbytes, dt, shape in widths:
            out.append(_from_bytes(recv[:, off:off + wbytes], dt, (rows,) + tuple(shape)))
            off += wbytes
        return out

    def combine(self, x, handle, topk_weights=None, bias=None, config=None, previous_event=None,
                async_finish=False, allocate_on_comm_stream=False):
        """x [recv, hidden] back to the tokens' ranks, summed per token
        (no weights). Returns combined_x [num_tokens, hidden],
        combined_topk_weights (the sums of @topk_weights, or None), event."""
        send_idx, send_splits, recv_splits, _, tokens = handle
        extra = [(topk_weights, torch.float32)] if topk_weights is not None else []
        back = self._exchange(x, None, torch.arange(x.shape[0]), recv_splits, send_splits,
                              extra=extra)
        acc = torch.zeros((tokens,) + tuple(x.shape[1:]), dtype=torch.float32)
        acc.index_add_(0, send_idx, back[0].to(torch.float32))
        if bias is not None:
            for b in (bias if isinstance(bias, tuple) else (bias,)):
                if b is not None:
                    acc += b.to(torch.float32)
        cw = None
        if topk_weights is not None:
            cw = torch.zeros((tokens, topk_weights.shape[1]), dtype=torch.float32)
            cw.index_add_(0, send_idx, back[1])
        return acc.to(x.dtype), cw, EventOverlap()

    # ---- low latency

    def clean_low_latency_buffer(self, num_max_dispatch_tokens_per_rank, hidden, num_experts):
        pass

    def low_latency_dispatch(self, x, topk_idx, num_max_dispatch_tokens_per_rank, num_experts,
                             cumulative_local_expert_recv_stats=None,
                             dispatch_wait_recv_cost_stats=None, use_fp8=True,
                             round_scale=False, use_ue8m0=False, async_finish=False,
                             return_recv_hook=False):
        """Returns recv_x [num_local_experts, num_ranks * max_tokens, hidden]
        (the first recv_count[e] rows of expert e valid: source rank, then
        token order), recv_count [num_local_experts] int, handle, event, hook."""
        if use_fp8:
            raise ValueError("fabricdev.deep_ep low_latency_dispatch: torch %s has no float8 "
                             "dtype; pass use_fp8=False" % torch.__version__)
        n, M = self.group_size, num_max_dispatch_tokens_per_rank
        epr = self._experts_per_rank(num_experts)
        T, H = x.shape
        if T > M:
            raise ValueError("deep_ep low_latency_dispatch: %d tokens, more than "
                             "num_max_dispatch_tokens_per_rank %d" % (T, M))
        # slot [dest][local expert][m]: the m-th token for that expert
        idx = topk_idx.to(torch.int64)
        slots = torch.zeros((n * epr, M, H), dtype=x.dtype)
        tok = torch.full((n * epr, M), -1, dtype=torch.int64)
        count = torch.zeros(n * epr, dtype=torch.int64)
        for t in range(T):
            for e in idx[t].tolist():
                if e < 0:
                    continue
                c = int(count[e])
                slots[e, c] = x[t]
                tok[e, c] = t
                count[e] = c + 1
        rec = torch.cat([_rows_bytes(slots.reshape(n * epr * M, H)).reshape(n, -1),
                         _rows_bytes(tok.reshape(n, -1)), _rows_bytes(count.reshape(n, -1))], 1)
        got = torch.empty_like(rec)
        self._a2a(got, rec, None, None)
        xb = epr * M * H * x.element_size()
        rslots = _from_bytes(got[:, :xb], x.dtype, (n, epr, M, H))
        rtok = _from_bytes(got[:, xb:xb + epr * M * 8], torch.int64, (n, epr, M))
        rcount = _from_bytes(got[:, xb + epr * M * 8:], torch.int64, (n, epr))
        recv_x = torch.zeros((epr, n * M, H), dtype=x.dtype)
        src_info = torch.full((epr, n * M), -1, dtype=torch.int64)
        layout_range = torch.zeros((epr, n), dtype=torch.int64)
        recv_count = rcount.sum(0).to(torch.int32)
        for e in range(epr):
            off = 0
            for s in range(n):
                c = int(rcount[s, e])
                recv_x[e, off:off + c] = rslots[s, e, :c]
                src_info[e, off:off + c] = rtok[s, e, :c]
                layout_range[e, s] = (off << 32) | c
                off += c
        if cumulative_local_expert_recv_stats is not None:
            cumulative_local_expert_recv_stats += recv_count
        handle = (src_info, layout_range, M, H, num_experts)
        return recv_x, recv_count, handle, EventOverlap(), _no_hook

    def low_latency_combine(self, x, topk_idx, topk_weights, handle, use_logfmt=False,
                            zero_copy=False, async_finish=False, return_recv_hook=False,
                            out=None, combine_wait_recv_cost_stats=None):
        """x [num_local_experts, num_ranks * max_tokens, hidden] back to the
        tokens' ranks; returns combined_x [num_tokens, hidden] = sum over a
        token's experts of weight * row, event, hook."""
        src_info, layout_range, M, H, num_experts = handle
        n = self.group_size
        epr = self._experts_per_rank(num_experts)
        # slot [source][local expert][m] back, in the order it came
        back = torch.zeros((n, epr, M, H), dtype=x.dtype)
        for e in range(epr):
            for s in range(n):
                off, c = int(layout_range[e, s]) >> 32, int(layout_range[e, s]) & 0xffffffff
                back[s, e, :c] = x[e, off:off + c]
        send = _rows_bytes(back.reshape(n, -1))
        got = torch.empty_like(send)
        self._a2a(got, send, None, None)
        got = _from_bytes(got, x.dtype, (n * epr, M, H))
        idx = topk_idx.to(torch.int64)
        T = idx.shape[0]
        acc = torch.zeros((T, H), dtype=torch.float32)
        seen = torch.zeros(n * epr, dtype=torch.int64)
        for t in range(T):
            for j, e in enumerate(idx[t].tolist()):
                if e < 0:
                    continue
                c = int(seen[e])
                acc[t] += float(topk_weights[t, j]) * got[e, c].to(torch.float32)
                seen[e] = c + 1
        res = acc.to(x.dtype)
        if out is not None:
            out.copy_(res)
            res = out
        return res, EventOverlap(), _no_hook
