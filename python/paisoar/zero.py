"""ZeRO stages 1 and 2 (Rajbhandari et al. 2020) for a Python model, over
paisoar's C++ ZeroOptimizer: each rank keeps the optimizer state (stage 1)
and the averaged gradients (stage 2) of its 1/N shard only; gradients are
reduce-scattered during backward, unit by unit, and the updated shards are
all-gathered after the step. Any torch.optim optimizer runs on the shard;
elementwise ones (SGD, Adam, AdamW, ...) give the unsharded numbers.

    opt = zero.ZeroOptimizer(model, torch.optim.AdamW, stage=2, lr=1e-3)
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()        # no DDP wrapper: ZeRO averages
        opt.step()

Stage 3 (parameters sharded too) needs the model as a C++ zero::LayerList
and is not offered from Python.
"""
import contextlib

import torch

from . import _comm
from ._native import _C


class ZeroOptimizer(torch.optim.Optimizer):
    """Collective: every rank builds it over the same model (checked, and rank
    0's parameters and buffers broadcast). `param_groups` and `state` are the
    shard optimizer's (`.inner`), so LR schedulers and GradScaler work on it;
    GradScaler's inf/NaN verdict then covers every rank's shard."""

    def __init__(self, model, optimizer_class, stage=1, process_group=None, bucket_cap_mb=25.0,
                 first_bucket_mb=1.0, overlap=True, find_unused_parameters=False, **optimizer_kwargs):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"ZeroOptimizer shards a torch.nn.Module's parameters, got {type(model).__name__}")
        if stage not in (1, 2):
            raise ValueError(f"ZeroOptimizer: stage={stage} from Python: use 1 (optimizer state sharded) or 2 "
                             "(and gradients); stage 3 needs the model as a C++ zero::LayerList")
        params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not params:
            raise ValueError("ZeroOptimizer: the model has no parameter that requires grad")
        buffers = list(model.named_buffers())
        self._comm = _comm.communicator(process_group)  # kept: released at exit with the others
        self._core = _C.ZeroOptimizer([n for n, _ in params], [p for _, p in params],
                                      [n for n, _ in buffers], [b for _, b in buffers], self._comm, int(stage), float(bucket_cap_mb),
                                      float(first_bucket_mb), bool(overlap), bool(find_unused_parameters),
                                      lambda shard: optimizer_class(shard, **optimizer_kwargs))
        self.inner = self._core.inner
        self.model = model
        # torch.optim.Optimizer's bookkeeping (hooks, profiling names), then the
        # shard optimizer's groups and state as this optimizer's own.
        super().__init__(self.inner.param_groups, self.inner.defaults)
        self.param_groups = self.inner.param_groups
        self.state = self.inner.state

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._core.step()
        return loss

    def zero_grad(self, set_to_none=True):
        """Zeroes (stage 1) or releases (stage 2) every gradient this rank holds."""
        self._core.zero_grad()

    @contextlib.contextmanager
    def no_sync(self):
        """Backward inside only accumulates full local gradients; the next one averages the sum."""
        was = self._core.sync
        self._core.set_sync(False)
        try:
            yield
        finally:
            self._core.set_sync(was)

    @property
    def stage(self):
        return self._core.stage

    def memory(self):
        """Bytes this rank holds now: parameters, gradients, optimizer state."""
        held = self._core.memory()
        held["optimizer_state"] = sum(t.numel() * t.element_size() for s in self.inner.state.values()
                                      for t in s.values() if isinstance(t, torch.Tensor))
        return held

    def clip_grad_norm_(self, max_norm):
        """Clips the averaged gradients to a global norm over every rank's
        shard (collective; torch.nn.utils.clip_grad_norm_ on the model's
        parameters would see no gradients at stage 2, and only this rank's
        shard at stage 1). Returns the norm before clipping."""
        return self._core.clip_grad_norm_(float(max_norm))

    def full_parameters(self):
        """Collective: every parameter whole (fp32), gathered from the shards."""
        return self._core.full_parameters()

    def state_dict(self):
        """This rank's shard of the optimizer state: save one per rank."""
        return self.inner.state_dict()

    def load_state_dict(self, state_dict):
        self.inner.load_state_dict(state_dict)
