# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The "icfab" torch.distributed backend.

    import torch.distributed as dist
    import fabricdev.torch as ft                  # registers "icfab"
    dist.init_process_group("icfab", init_method="tcp://127.0.0.1:29500",
                            rank=r, world_size=n)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    ft.emulated_ps()                              # fabric time of this rank's ops

Rank r runs on the committed topology's r-th endpoint. The process group
meets through the c10d Store torch hands it. A new_group() of every rank
shares the default group's communicator; a group of fewer ranks runs over
the Store (on_fabric() is False); see docs/TORCH.md.
"""
import torch
import torch.distributed as dist

try:
    from . import _icfab_torch as _ext
except ImportError as e:
    raise ImportError("fabricdev.torch: the C++ extension is not built (run make and "
                      "use PYTHONPATH=build/python; it needs libtorch-dev and "
                      "pybind11-dev): %s" % e) from e

BACKEND = "icfab"
ProcessGroupIcfab = _ext.ProcessGroupIcfab


def _create(store, rank, size, timeout):
    # The default group is made before dist.is_initialized() turns true;
    # a later group of every rank shares its communicator.
    world = dist.get_world_size() if dist.is_initialized() else -1
    return ProcessGroupIcfab(store, rank, size, int(timeout.total_seconds() * 1000),
                             world)


if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create)


def _pg(group):
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupIcfab):
        raise RuntimeError("fabricdev.torch: the process group is %s, not icfab"
                           % type(pg).__name__)
    return pg


def emulated_ps(group=None):
    """This rank's emulated fabric time, integer ps: the sum of the fabric
    times of every op the group ran (the clock advanced by communication)."""
    return _pg(group).emulated_ps()


def last_ps(group=None):
    """Fabric time, ps, of the group's last op."""
    return _pg(group).last_ps()
