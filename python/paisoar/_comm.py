"""Which group paisoar's collectives (DDP's buckets, GradScaler's inf/NaN
verdict) run on: paisoar's own group over the ranks of the
torch.distributed group the script made, when there is one, else paisoar's
own group joined from the environment that `paisoar launch` (or torchrun)
gives each rank. Either way the transport is paisoar's: shared memory
between the ranks of one host, Gloo across hosts, NCCL for CUDA tensors."""
from __future__ import annotations

import os
import weakref
from typing import Union

import torch
import torch.distributed as dist

from ._native import _C

# paisoar's groups over each torch.distributed group (by backend), formed on first use. Keyed
# weakly: it must not keep torch's group (and its backends) past
# destroy_process_group(), and a group made again later gets a new one.
_over: weakref.WeakKeyDictionary[dist.ProcessGroup, dict[str, _C.Communicator]] = weakref.WeakKeyDictionary()
_own: _C.Communicator | None = None

# What paisoar's process_group= arguments take (None: the default group, else paisoar's own).
Group = Union[dist.ProcessGroup, _C.Communicator, None]


def communicator(process_group: Group = None, backend: str | None = None) -> _C.Communicator:
    """The Communicator over `process_group` (a torch.distributed group, or a
    Communicator such as own_group()'s), else over torch.distributed's
    default group if it is initialised, else paisoar's own. Collective on
    first use for each group: every rank of it must call it. `backend`
    ('auto', 'shm', 'gloo'; default PAISOAR_COMM_BACKEND, else 'auto') picks
    the transport of a group formed over a torch.distributed group."""
    if isinstance(process_group, _C.Communicator):
        return process_group
    if process_group is None and dist.is_available() and dist.is_initialized():
        process_group = dist.group.WORLD
    if process_group is None:
        return own_group()
    backend = backend or os.environ.get("PAISOAR_COMM_BACKEND", "auto")
    formed = _over.setdefault(process_group, {})
    if backend not in formed:
        # Over the group's own store, so the ranks meet without another
        # address; one group for CPU and CUDA tensors whatever torch's backend.
        formed[backend] = _C.Communicator.over_process_group(
            process_group, dist.get_process_group_ranks(process_group), backend)
    return formed[backend]


def serves_device(process_group: Group, device_type: str) -> bool:
    """Whether torch.distributed's group (or the default one) has a backend
    for tensors on `device_type`, as the script asked of init_process_group;
    True for paisoar's own group and when torch.distributed is not initialised."""
    if isinstance(process_group, _C.Communicator) or not (dist.is_available() and dist.is_initialized()):
        return True
    group = process_group if process_group is not None else dist.group.WORLD
    assert group is not None  # torch.distributed is initialised: its default group exists
    try:
        group._get_backend(torch.device(device_type))
        return True
    except (RuntimeError, ValueError):
        return False


def own_group() -> _C.Communicator:
    """paisoar's own group of this job's ranks, joined from the environment on
    first use (collective): shared memory between the ranks of one host, Gloo
    across hosts (PAISOAR_COMM_BACKEND=gloo|shm forces one). Pass it as
    process_group to use it even where torch.distributed is initialised."""
    global _own
    if _own is None:
        _own = _C.Communicator.from_env(os.environ.get("PAISOAR_COMM_BACKEND", "auto"))
    return _own


def has_group() -> bool:
    """Whether collectives have more than this rank to agree with."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size() > 1
    return _own is not None and _own.size > 1 or int(os.environ.get("WORLD_SIZE", "1")) > 1


def process_group_backend(process_group: Group = None) -> str | None:
    """torch.distributed's backend name for the group ('gloo', 'nccl', ...), or None."""
    if isinstance(process_group, _C.Communicator) or not (dist.is_available() and dist.is_initialized()):
        return None  # paisoar's own group serves CPU and CUDA tensors
    return dist.get_backend(process_group)
