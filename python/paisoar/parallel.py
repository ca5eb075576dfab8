"""DistributedDataParallel: torch.nn.parallel.DistributedDataParallel's
constructor and behaviour, with paisoar's C++ gradient engine underneath:
gradients averaged in buckets launched during backward (overlapped with it),
buckets rebuilt in arrival order after the first step, no_sync() for
accumulation, and gradient compression (fp16, bf16, int8, PowerSGD). It runs
over the process group the script created with init_process_group (gloo for
CPU models, nccl for CUDA ones), or paisoar's own group (shared memory
between the ranks of one host, Gloo across hosts) when there is none."""
import contextlib

import torch

from . import _comm, amp
from ._native import _C

_COMPRESSIONS = ("none", "fp16", "bf16", "int8", "powersgd")


def _tensors_in(output):
    """The tensors of a forward's output (tensors, lists, tuples, dicts)."""
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (list, tuple)):
        return [t for item in output for t in _tensors_in(item)]
    if isinstance(output, dict):
        return [t for item in output.values() for t in _tensors_in(item)]
    return []


def _check_devices(module, params, device_ids, process_group):
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise ValueError(f"DistributedDataParallel: the module's parameters are on several devices "
                         f"({sorted(map(str, devices))}); move the whole module to one device first")
    device = next(iter(devices))
    if device_ids is not None and device.type == "cpu":
        raise ValueError("DistributedDataParallel: device_ids must be None for a module on the CPU "
                         f"(got {device_ids}); pass device_ids only for a CUDA module")
    if not _comm.serves_device(process_group, device.type):
        wants = {"cpu": "gloo", "cuda": "nccl"}.get(device.type, "a backend for it")
        raise ValueError(f"DistributedDataParallel: the module is on {device}, but the process group "
                         f"(backend '{_comm.process_group_backend(process_group)}') has no backend for "
                         f"{device.type}; call torch.distributed.init_process_group(backend='{wants}') "
                         "(or 'cpu:gloo,cuda:nccl'), or move the module to the device its backend serves")
    return device


class DistributedDataParallel(torch.nn.Module):
    """Wraps `module` so that backward averages its gradients over the ranks.

    Collective: every rank constructs it with the same model; rank 0's
    parameters and buffers are copied to the others, and a model that differs
    (names, shapes, dtypes) raises on every rank, naming the first difference.

    paisoar's own arguments: `gradient_compression` ('fp16', 'bf16', 'int8',
    'powersgd' or None), `first_bucket_mb` (the first bucket, kept small so
    communication starts early), `overlap` (False: all buckets after backward),
    `powersgd_rank`, `error_feedback`."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False,
                 gradient_as_bucket_view=True, static_graph=False, gradient_compression=None,
                 first_bucket_mb=1.0, overlap=True, powersgd_rank=4, error_feedback=True):
        super().__init__()
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"DistributedDataParallel wraps a torch.nn.Module, got {type(module).__name__}")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("DistributedDataParallel: the module has no parameter that requires grad, "
                             "so there is nothing to average; wrap the module that holds the trained "
                             "parameters (or set requires_grad on them)")
        compression = (gradient_compression or "none").lower()
        if compression not in _COMPRESSIONS:
            raise ValueError(f"DistributedDataParallel: gradient_compression={gradient_compression!r}; "
                             f"use one of {', '.join(repr(c) for c in _COMPRESSIONS)} or None")
        device = _check_devices(module, [p for _, p in named], device_ids, process_group)
        amp.note_model_device(device)
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.process_group = process_group
        self._options = dict(bucket_cap_mb=float(bucket_cap_mb), first_bucket_mb=float(first_bucket_mb),
                             overlap=bool(overlap), rebuild_buckets=True,
                             find_unused_parameters=bool(find_unused_parameters),
                             broadcast_buffers=bool(broadcast_buffers), compression=compression,
                             powersgd_rank=int(powersgd_rank), error_feedback=bool(error_feedback),
                             ranks_per_node=0)
        self._comm = _comm.communicator(process_group)
        self._reducer = self._make_reducer()

    def _make_reducer(self):
        params = list(self.module.named_parameters())
        buffers = list(self.module.named_buffers())
        return _C.GradientReducer([n for n, _ in params], [p for _, p in params],
                                  [n for n, _ in buffers], [b for _, b in buffers],
                                  comm=self._comm, **self._options)

    def forward(self, *inputs, **kwargs):
        self._reducer.pre_forward()
        output = self.module(*inputs, **kwargs)
        if torch.is_grad_enabled() and self._options["find_unused_parameters"]:
            self._reducer.post_forward(_tensors_in(output))
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Backward inside accumulates gradients locally; the first backward
        after it averages the accumulated sum."""
        was = self._reducer.sync
        self._reducer.set_sync(False)
        try:
            yield
        finally:
            self._reducer.set_sync(was)

    def register_comm_hook(self, state, hook):
        """torch's built-in compression hooks, run as paisoar's C++ hooks:
        default_hooks.fp16_compress_hook / bf16_compress_hook and
        powerSGD_hook.powerSGD_hook (its state's matrix_approximation_rank).
        Call it before the first forward, as in PyTorch."""
        name = getattr(hook, "__name__", repr(hook))
        mapping = {"fp16_compress_hook": "fp16", "bf16_compress_hook": "bf16",
                   "powerSGD_hook": "powersgd", "allreduce_hook": "none"}
        if name not in mapping:
            raise NotImplementedError(
                f"register_comm_hook({name}): paisoar runs its hooks in C++; pass one of torch's "
                "fp16_compress_hook, bf16_compress_hook, powerSGD_hook or allreduce_hook, or use "
                "gradient_compression='fp16'|'bf16'|'int8'|'powersgd'")
        self._options["compression"] = mapping[name]
        if name == "powerSGD_hook":
            # The rank and error feedback are read; paisoar's PowerSGD always
            # warm-starts and compresses from the first step (torch's
            # start_powerSGD_iter allreduces plainly until then).
            self._options["powersgd_rank"] = int(state.matrix_approximation_rank)
            self._options["error_feedback"] = bool(state.use_error_feedback)
        self._reducer.set_compression(self._options["compression"], self._options["powersgd_rank"],
                                      self._options["error_feedback"])

    def reducer_stats(self):
        """The last synchronised backward: backward_s, exposed_comm_s, bytes, buckets, rebuilt."""
        return self._reducer.last_stats()

    def bucket_assignment(self):
        """Parameter indices (in named_parameters() order) of each bucket, in launch order."""
        return self._reducer.bucket_assignment()
