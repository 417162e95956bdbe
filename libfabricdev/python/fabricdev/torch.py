# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The "icfab" torch.distributed backend.

    import torch.distributed as dist
    import fabricdev.torch as ft                  # registers "icfab"
    dist.init_process_group("icfab", init_method="tcp://127.0.0.1:29500",
                            rank=r, world_size=n)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    ft.emulated_ps()                              # fabric time of this rank's ops
    x = ft.empty(4096, 1024, dtype=torch.bfloat16)  # in this rank's device memory:
                                                  # all_to_all_single, all_reduce
                                                  # use it without a copy

Rank r runs on the committed topology's r-th endpoint. The process group
meets through the c10d Store torch hands it. A new_group() of every rank
shares the default group's communicator; a group of fewer ranks opens its
own on the fabric, each rank on its endpoint in the world (on_fabric() is
True; where it cannot, it runs over the Store and store_reason() says
why); see docs/TORCH.md.
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


def empty(*size, dtype=None, group=None):
    """A CPU tensor of @size, uninitialized, whose storage is this rank's
    device memory: a region of the rank's context on its endpoint, mapped
    and registered with the group's communicator, freed when the storage
    dies. all_to_all_single (equal splits or not) and a SUM/AVG all_reduce
    on such tensors read and write them where they are instead of copying
    them through the workspace (copy_stats() shows which). Like
    torch.empty: size as ints or one sequence, dtype default
    torch.get_default_dtype(). On a group over the Store, or with rank 0's
    proxy (FDEV_PROXY=1), the storage is ordinary memory. The tensor keeps
    the communicator open: drop such tensors before destroy_process_group()
    when a new default group follows (else that one runs over the Store)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    dtype = dtype if dtype is not None else torch.get_default_dtype()
    numel = 1
    for s in size:
        if s < 0:
            raise ValueError("fabricdev.torch.empty: negative size %r" % (size,))
        numel *= s
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    return _pg(group).empty_bytes(nbytes).view(dtype).view(size)


def copy_stats(group=None):
    """{"staged": bytes, "in_place": bytes}: of the tensors this process's
    ops on the group's communicator passed, the bytes copied through the
    workspace (in and out) and those read or written where they are, in
    device memory from empty(); since the communicator was made."""
    staged, in_place = _pg(group).copy_stats()
    return {"staged": staged, "in_place": in_place}
