"""Which group paisoar's collectives (DDP's buckets, GradScaler's inf/NaN
verdict) run on: the torch.distributed group the script made, when there is
one, else paisoar's own group joined from the environment that `paisoar
launch` (or torchrun) gives each rank."""
import os

import torch.distributed as dist

from ._native import _C

_adopted = {}  # id(process group) -> (group, Communicator): one per group
_own = None


def communicator(process_group=None):
    """The Communicator over `process_group`, else over torch.distributed's
    default group if it is initialised, else paisoar's own (collective on
    first use: every rank must call it)."""
    global _own
    if process_group is None and dist.is_available() and dist.is_initialized():
        process_group = dist.group.WORLD
    if process_group is not None:
        entry = _adopted.get(id(process_group))
        if entry is None or entry[0] is not process_group:
            entry = (process_group, _C.Communicator.over_process_group(process_group))
            _adopted[id(process_group)] = entry
        return entry[1]
    if _own is None:
        _own = _C.Communicator.from_env(os.environ.get("PAISOAR_COMM_BACKEND", "auto"))
    return _own


def has_group():
    """Whether collectives have more than this rank to agree with."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size() > 1
    return _own is not None and _own.size > 1 or int(os.environ.get("WORLD_SIZE", "1")) > 1


def process_group_backend(process_group=None):
    """torch.distributed's backend name for the group ('gloo', 'nccl', ...), or None."""
    if not (dist.is_available() and dist.is_initialized()):
        return None
    return dist.get_backend(process_group)
