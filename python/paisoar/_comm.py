"""Which group paisoar's collectives (DDP's buckets, GradScaler's inf/NaN
verdict) run on: the torch.distributed group the script made, when there is
one, else paisoar's own group joined from the environment that `paisoar
launch` (or torchrun) gives each rank."""
import atexit
import os
import weakref

import torch
import torch.distributed as dist

from ._native import _C

# Communicators over torch.distributed groups, released at exit. Not the
# groups themselves: holding one would keep its backends past
# destroy_process_group().
_adopted = weakref.WeakSet()
_own = None


def communicator(process_group=None):
    """The Communicator over `process_group` (a torch.distributed group, or a
    Communicator such as own_group()'s), else over torch.distributed's
    default group if it is initialised, else paisoar's own (collective on
    first use: every rank must call it)."""
    global _own
    if isinstance(process_group, _C.Communicator):
        return process_group
    if process_group is None and dist.is_available() and dist.is_initialized():
        process_group = dist.group.WORLD
    if process_group is not None:
        if not serves_device(process_group, "cpu"):
            return _own_group_for(process_group)
        comm = _C.Communicator.over_process_group(process_group)  # not collective: cheap
        _adopted.add(comm)
        return comm
    return own_group()


def serves_device(process_group, device_type):
    """Whether torch.distributed's group (or the default one) has a backend
    for tensors on `device_type`; True for paisoar's own group and when
    torch.distributed is not initialised."""
    if isinstance(process_group, _C.Communicator) or not (dist.is_available() and dist.is_initialized()):
        return True
    group = process_group if process_group is not None else dist.group.WORLD
    try:
        group._get_backend(torch.device(device_type))
        return True
    except (RuntimeError, ValueError):
        return False


def _own_group_for(process_group):
    """paisoar's engines agree on small CPU tensors (which gradients arrived,
    the inf/NaN verdict); a group without a CPU backend
    (init_process_group("nccl")) cannot carry them. paisoar's own group of
    the job (its own NCCL for CUDA tensors, shared memory or Gloo for the
    CPU ones) does the work instead when it is the same world: the job's
    environment names this rank and world size. Anything else (a subgroup,
    ranks spawned without RANK/WORLD_SIZE) would average over the wrong
    ranks, so it is refused on every rank alike."""
    same_world = (process_group is dist.group.WORLD
                  and os.environ.get("WORLD_SIZE") == str(dist.get_world_size())
                  and os.environ.get("RANK") == str(dist.get_rank()))
    if not same_world:
        raise ValueError(
            f"paisoar: the torch.distributed group (backend '{dist.get_backend(process_group)}') has no CPU "
            "backend, which paisoar needs for its small agreement collectives; call "
            "init_process_group(backend='cpu:gloo,cuda:nccl')")
    return own_group()


def own_group():
    """paisoar's own group of this job's ranks, joined from the environment on
    first use (collective): shared memory between the ranks of one host, Gloo
    across hosts (PAISOAR_COMM_BACKEND=gloo|shm forces one). Pass it as
    process_group to use it even where torch.distributed is initialised."""
    global _own
    if _own is None:
        _own = _C.Communicator.from_env(os.environ.get("PAISOAR_COMM_BACKEND", "auto"))
    return _own


@atexit.register
def _release_process_groups():
    """At exit, before the interpreter finalises: let go of torch.distributed's
    backends, so they are destroyed (their worker threads joined) while Python
    still runs; one kept past finalisation aborts when its worker thread
    releases a tensor that a Python object owns."""
    for comm in list(_adopted):
        comm.release_process_group()


def has_group():
    """Whether collectives have more than this rank to agree with."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size() > 1
    return _own is not None and _own.size > 1 or int(os.environ.get("WORLD_SIZE", "1")) > 1


def process_group_backend(process_group=None):
    """torch.distributed's backend name for the group ('gloo', 'nccl', ...), or None."""
    if isinstance(process_group, _C.Communicator) or not (dist.is_available() and dist.is_initialized()):
        return None  # paisoar's own group serves CPU and CUDA tensors
    return dist.get_backend(process_group)
