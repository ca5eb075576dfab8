"""Two CUDA devices that are the CPU, so that torch's GPU-gated DDP tests run
on a machine without a GPU, the same for torch's DDP and paisoar's: torch.cuda
reports `world_size` devices, set_device/synchronize do nothing, and a torch
function mode sends every tensor asked for on 'cuda', 'cuda:N' or device N to
the CPU. Tests that need what a GPU really does (streams, events, .is_cuda)
fail with both DDPs and so are not counted."""
import contextlib

import torch
from torch.overrides import TorchFunctionMode


def _is_cuda(device):
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.startswith("cuda")
    return isinstance(device, int) and not isinstance(device, bool)


class _CudaIsCpu(TorchFunctionMode):
    """Rewrites CUDA device arguments to 'cpu' in every torch call."""

    _SELF = (torch.Tensor.cuda, torch.Tensor.pin_memory)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in self._SELF:
            return args[0]
        if func is torch.Tensor.record_stream:
            return None
        if _is_cuda(kwargs.get("device")):
            kwargs["device"] = "cpu"
        if func is torch.Tensor.to and len(args) > 1 and _is_cuda(args[1]):
            args = (args[0], "cpu", *args[2:])
        return func(*args, **kwargs)


def install(world_size):
    """For the rest of this process (and of processes forked from it).

    torch's test modules are imported first, while torch.cuda still tells the
    truth: at import they probe the real devices (Triton, compute capability).
    Their TEST_CUDA flags are then turned on, as on a machine with GPUs."""
    from torch.testing._internal import common_cuda, common_device_type, common_utils  # noqa: F401

    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: world_size
    torch.cuda.set_device = lambda device: None
    torch.cuda.current_device = lambda: 0
    torch.cuda.synchronize = lambda device=None: None
    torch.cuda.device = lambda device: contextlib.nullcontext()
    torch.accelerator.current_device_index = lambda: 0
    torch.accelerator.synchronize = lambda device=None: None
    common_utils.TEST_CUDA = True
    common_cuda.TEST_CUDA = True
    common_cuda.TEST_MULTIGPU = world_size >= 2
    _CudaIsCpu().__enter__()
