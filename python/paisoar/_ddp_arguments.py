"""torch.nn.parallel.DistributedDataParallel's constructor arguments read as
torch reads them (the same defaults, warnings and errors), for paisoar's
DistributedDataParallel; the arguments paisoar cannot honour are refused
here, each naming itself and what to use instead."""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _DEFAULT_FIRST_BUCKET_BYTES

from . import _comm

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh
    from torch.nn.parallel.distributed import _MixedPrecision

_MB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25
_COMPRESSIONS = ("none", "fp16", "bf16", "int8", "powersgd")


def _refuse(argument: str, why: str, instead: str) -> NoReturn:
    raise NotImplementedError(f"DistributedDataParallel({argument}): {why}; {instead}")


def check_unsupported(delay_all_reduce_named_params: Sequence[tuple[str, torch.nn.Parameter]] | None,
                      param_to_hook_all_reduce: torch.nn.Parameter | None,
                      mixed_precision: _MixedPrecision | None, skip_all_reduce_unused_params: bool,
                      batched_grad_copy: bool) -> None:
    """Arguments of torch's that paisoar's reducer does not implement: refused, never ignored."""
    if (delay_all_reduce_named_params is None) != (param_to_hook_all_reduce is None):
        raise ValueError("delay_all_reduce_named_params and param_to_hook_all_reduce "
                         "need to be set at the same time.")
    if delay_all_reduce_named_params is not None:
        _refuse("delay_all_reduce_named_params=...", "paisoar averages every parameter in its buckets",
                "leave it out, or use torch.nn.parallel.DistributedDataParallel for delayed allreduce")
    if mixed_precision is not None:
        _refuse("mixed_precision=...", "torch's private _MixedPrecision (parameters cast on side streams) is "
                "not implemented", "use paisoar.amp.autocast around the forward")
    if skip_all_reduce_unused_params:
        _refuse("skip_all_reduce_unused_params=True", "paisoar allreduces every bucket, unused ones too "
                "(the gradients are the same as with the flag)", "leave the argument out")
    if batched_grad_copy:
        _refuse("batched_grad_copy=True", "paisoar copies each gradient into its bucket as it arrives",
                "leave the argument out")


def process_group_of(process_group: _comm.Group, device_mesh: DeviceMesh | None) -> _comm.Group:
    """torch's choice: process_group, device_mesh's 1-D group, else the default group (None)."""
    if process_group is not None and device_mesh is not None:
        raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
    if device_mesh is None:
        return process_group
    if device_mesh.ndim != 1:
        raise RuntimeError(f"Only 1D device mesh is supported, but got {device_mesh}.")
    if device_mesh._get_root_mesh() != device_mesh:
        _refuse("device_mesh=...", "a mesh sliced out of a larger one (DDP with tensor parallelism) is not "
                "supported", "pass a 1-D mesh of the data-parallel ranks")
    return device_mesh.get_group(mesh_dim=0)


def buffer_sync(broadcast_buffers: bool | None, forward_sync_buffers: bool | None) -> tuple[bool, bool]:
    """(forward_sync_buffers, init_sync_buffers) with torch's FutureWarnings."""
    if broadcast_buffers is not None:
        if forward_sync_buffers is not None:
            warnings.warn("Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                          "`broadcast_buffers` is deprecated and its value is ignored when "
                          "`forward_sync_buffers` is provided.", FutureWarning, stacklevel=3)
        else:
            warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: "
                          "unlike `broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers "
                          "at init. If you rely on buffers NOT being synced at init (e.g. rank-local buffers), "
                          "keep using `broadcast_buffers=False` until `init_sync_buffers` is available.",
                          FutureWarning, stacklevel=3)
    if forward_sync_buffers is not None:
        return bool(forward_sync_buffers), True
    effective = True if broadcast_buffers is None else bool(broadcast_buffers)
    return effective, effective


def bucket_caps(bucket_cap_mb: float | None, bucket_cap_mb_list: Sequence[float] | None,
                first_bucket_mb: float | None) -> tuple[int, list[int], float, float, list[float]]:
    """(bucket_bytes_cap, bucket_bytes_cap_list, first MiB, other MiB, per-bucket MiB) as torch
    computes its caps: with bucket_cap_mb_list, bucket k holds up to its k-th entry (the last
    repeats). Else the first bucket is torch's (1 MiB when bucket_cap_mb is left at its default,
    else bucket_cap_mb) unless paisoar's first_bucket_mb is given, the others bucket_cap_mb."""
    if bucket_cap_mb_list:
        if any(cap <= 0 for cap in bucket_cap_mb_list):
            raise ValueError(f"DistributedDataParallel: every bucket_cap_mb_list entry must be > 0, "
                             f"got {bucket_cap_mb_list}")
        if first_bucket_mb is not None:
            raise ValueError("DistributedDataParallel: pass bucket_cap_mb_list or first_bucket_mb, not both "
                             "(the list's first entry is the first bucket's cap)")
        caps = [float(cap) for cap in bucket_cap_mb_list]
        return (int(max(caps) * _MB), [int(cap * _MB) for cap in caps], caps[0], max(caps), caps)
    cap_mb = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
    if cap_mb <= 0:
        raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be > 0, got {bucket_cap_mb}")
    if first_bucket_mb is None:
        first_bucket_mb = _DEFAULT_FIRST_BUCKET_BYTES / _MB if bucket_cap_mb is None else cap_mb
    if first_bucket_mb <= 0:
        raise ValueError(f"DistributedDataParallel: first_bucket_mb must be > 0, got {first_bucket_mb}")
    return int(cap_mb * _MB), [], float(first_bucket_mb), float(cap_mb), []


def compression_of(gradient_compression: str | None) -> str:
    compression = (gradient_compression or "none").lower()
    if compression not in _COMPRESSIONS:
        raise ValueError(f"DistributedDataParallel: gradient_compression={gradient_compression!r}; "
                         f"use one of {', '.join(repr(c) for c in _COMPRESSIONS)} or None")
    return compression


def devices_of(params: Sequence[torch.Tensor], device_ids: Sequence[int | torch.device] | None,
               output_device: int | torch.device | None,
               process_group: _comm.Group) -> tuple[torch.device, list[int] | None, int | None]:
    """(device, device_ids, output_device) as torch checks them for the module's parameters."""
    devices = {p.device for p in params}
    types = {d.type for d in devices}
    if len(types) != 1:
        raise ValueError("DistributedDataParallel's input module must be on the same type of devices, but "
                         f"input module parameters locate in {types}.")
    if device_ids is not None and len(device_ids) > 1:
        raise ValueError("device_ids can only be None or contain a single element.")
    device = next(iter(params)).device
    if len(devices) > 1:
        _refuse("a module on several devices", f"its parameters are on {sorted(map(str, devices))}",
                "move the whole module to one device first")
    ids: list[int] | None = None
    index: int | None = None
    if not device_ids or device.type == "cpu":
        if device_ids or output_device:
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters {devices}; "
                             "pass device_ids only for a CUDA module")
    else:
        ids = [torch._utils._get_device_index(d, True) for d in device_ids]
        index = torch._utils._get_device_index(ids[0] if output_device is None else output_device, True)
    if not _comm.serves_device(process_group, device.type):
        wants = {"cpu": "gloo", "cuda": "nccl"}.get(device.type, "a backend for it")
        raise ValueError(f"DistributedDataParallel: the module is on {device}, but the process group "
                         f"(backend '{_comm.process_group_backend(process_group)}') has no backend for "
                         f"{device.type}; call torch.distributed.init_process_group(backend='{wants}') "
                         "(or 'cpu:gloo,cuda:nccl'), or move the module to the device its backend serves")
    return device, ids, index


def is_torch_group(process_group: _comm.Group) -> bool:
    """Whether DDP runs over a torch.distributed group (torch's comm hooks need one)."""
    if isinstance(process_group, dist.ProcessGroup):
        return True
    return process_group is None and dist.is_available() and dist.is_initialized()
