"""ZeRO stages 1-3 (Rajbhandari et al. 2020) for a Python model, over
paisoar's C++ ZeroOptimizer: each rank keeps the optimizer state (stage 1),
the averaged gradients (stage 2) and the parameters (stage 3) of its 1/N
shard only; gradients are reduce-scattered during backward, unit by unit,
and the updated shards are all-gathered after the step (stages 1-2) or each
module's parameters just before it runs (stage 3). Any torch.optim optimizer
runs on the shard; elementwise ones (SGD, Adam, AdamW, ...) give the
unsharded numbers.

    opt = zero.ZeroOptimizer(model, torch.optim.AdamW, stage=2, lr=1e-3)
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()        # no DDP wrapper: ZeRO averages
        opt.step()

Stage 3: each module that holds parameters of its own is a unit, gathered
by a forward pre-hook, released by a forward hook, and gathered again by a
hook on its output's gradient before its backward (the next unit prefetched
each time). Between steps the model's parameters hold no memory: read them
inside `opt.gathered()` (collective) or through `full_parameters()`.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, cast, overload

import torch
from torch.utils.hooks import RemovableHandle

from . import _comm
from ._native import _C
from .parallel import _tensors_in


class ZeroOptimizer(torch.optim.Optimizer):
    """Collective: every rank builds it over the same model (checked, and rank
    0's parameters and buffers broadcast). `param_groups` and `state` are the
    shard optimizer's (`.inner`), so LR schedulers and GradScaler work on it.
    Each rank holds only its shard of the gradients, so a GradScaler stepping
    it must be given the group (`amp.GradScaler(process_group=...)`, the same
    group as here): every rank then agrees on each step's inf/NaN verdict.
    A scaler without one is refused at its first step."""

    def __init__(self, model: torch.nn.Module, optimizer_class: Callable[..., torch.optim.Optimizer],
                 stage: int = 1, process_group: _comm.Group = None, bucket_cap_mb: float = 25.0,
                 first_bucket_mb: float = 1.0, overlap: bool = True, find_unused_parameters: bool = False,
                 **optimizer_kwargs: Any) -> None:
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"ZeroOptimizer shards a torch.nn.Module's parameters, got {type(model).__name__}")
        if stage not in (1, 2, 3):
            raise ValueError(f"ZeroOptimizer: stage={stage}: use 1 (optimizer state sharded), 2 (and "
                             "gradients) or 3 (and parameters)")
        params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not params:
            raise ValueError("ZeroOptimizer: the model has no parameter that requires grad")
        buffers = list(model.named_buffers())
        unit_modules, units = _stage3_units(model) if stage == 3 else ([], [])
        self._comm = _comm.communicator(process_group)
        self._core = _C.ZeroOptimizer([n for n, _ in params], [p for _, p in params],
                                      [n for n, _ in buffers], [b for _, b in buffers], self._comm, int(stage), float(bucket_cap_mb),
                                      float(first_bucket_mb), bool(overlap), bool(find_unused_parameters),
                                      lambda shard: optimizer_class(shard, **optimizer_kwargs), units)
        self._units = len(units)
        self._hooks = [h for k, module in enumerate(unit_modules) for h in _gather_around(module, self._core, k)]
        self.inner = self._core.inner
        self.model = model
        # torch.optim.Optimizer's bookkeeping (hooks, profiling names), then the
        # shard optimizer's groups and state as this optimizer's own.
        super().__init__(self.inner.param_groups, self.inner.defaults)
        self.param_groups = self.inner.param_groups
        self.state = self.inner.state

    @overload
    def step(self, closure: None = None) -> None: ...

    @overload
    def step(self, closure: Callable[[], float]) -> float: ...

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._core.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Zeroes (stage 1) or releases (stages 2-3) every gradient this rank holds."""
        self._core.zero_grad()

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward inside only accumulates full local gradients; the next one averages the sum."""
        was = self._core.sync
        self._core.set_sync(False)
        try:
            yield
        finally:
            self._core.set_sync(was)

    @property
    def stage(self) -> int:
        return self._core.stage

    @property
    def _grads_sharded_over(self) -> _C.Communicator:
        """The Communicator whose ranks each hold a shard of the gradients (read by amp.GradScaler)."""
        return self._comm

    def memory(self) -> dict[str, int]:
        """Bytes this rank holds now: parameters, gradients, optimizer state."""
        held = self._core.memory()
        held["optimizer_state"] = sum(t.numel() * t.element_size() for s in self.inner.state.values()
                                      for t in s.values() if isinstance(t, torch.Tensor))
        return held

    def clip_grad_norm_(self, max_norm: float) -> float:
        """Clips the averaged gradients to a global norm over every rank's
        shard (collective; torch.nn.utils.clip_grad_norm_ on the model's
        parameters would see no gradients at stage 2, and only this rank's
        shard at stage 1). Returns the norm before clipping."""
        return self._core.clip_grad_norm_(float(max_norm))

    def full_parameters(self) -> list[torch.Tensor]:
        """Collective: every parameter whole (fp32), gathered from the shards."""
        return self._core.full_parameters()

    @contextlib.contextmanager
    def gathered(self) -> Iterator[torch.nn.Module]:
        """Stage 3, collective: inside, the model's parameters hold their
        values (to read, evaluate or save them); released on exit. A no-op at
        stages 1-2, whose parameters are always whole."""
        for k in range(self._units):
            self._core.unit_forward_begin(k)
        try:
            yield self.model
        finally:
            for k in range(self._units):
                self._core.unit_forward_end(k)

    def state_dict(self) -> dict[str, Any]:
        """This rank's shard of the optimizer state: save one per rank."""
        return self.inner.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.inner.load_state_dict(state_dict)


def _stage3_units(model: torch.nn.Module) -> tuple[list[torch.nn.Module], list[list[str]]]:
    """Stage 3's units: each module with trainable parameters of its own
    (not its children's), in registration order, and their parameter names
    as the model names them."""
    modules: list[torch.nn.Module] = []
    units: list[list[str]] = []
    owner: dict[int, str] = {}
    for prefix, module in model.named_modules():
        names = []
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            full = f"{prefix}.{name}" if prefix else name
            if id(p) in owner:
                raise ValueError(f"ZeroOptimizer(stage=3): parameter '{full}' is also '{owner[id(p)]}' (shared "
                                 "between modules); stage 3 gathers each module's own parameters around its "
                                 "forward, so a shared one cannot be sharded: use stage 2")
            owner[id(p)] = full
            names.append(full)
        if names:
            modules.append(module)
            units.append(names)
    return modules, units


def _gather_around(module: torch.nn.Module, core: _C.ZeroOptimizer, k: int) -> list[RemovableHandle]:
    """The hooks that bracket unit k's forward with its gather and release,
    and gather it again before its backward (a hook on each output that needs
    a gradient runs before the module's own backward nodes)."""
    def regather(grad: torch.Tensor) -> None:
        core.unit_backward_begin(k)

    def before(_module: torch.nn.Module, _args: tuple[Any, ...]) -> None:
        core.unit_forward_begin(k)

    def after(_module: torch.nn.Module, _args: tuple[Any, ...], output: Any) -> None:
        if torch.is_grad_enabled():
            for t in _tensors_in(output):
                if t.requires_grad:
                    # torch.Tensor.register_hook has no annotations: typed here as it is.
                    register = cast(Callable[[Callable[[torch.Tensor], torch.Tensor | None]], RemovableHandle],
                                    t.register_hook)
                    register(regather)
        core.unit_forward_end(k)

    return [module.register_forward_pre_hook(before), module.register_forward_hook(after)]
