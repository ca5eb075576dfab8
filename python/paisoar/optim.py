"""Large-batch optimizers and the learning-rate schedule of paisoar's C++ core
as torch.optim classes: LARS and LAMB (layer-wise trust ratios; 1-D
parameters exempt by default), WarmupDecay (linear warmup, then constant,
cosine, step or polynomial decay: a torch LRScheduler), and scaled_lr (the
linear scaling rule). Their state lives in the optimizer's `state` as torch's
optimizers keep it, so state_dict(), load_state_dict() and torch's LR
schedulers work unchanged.

    opt = optim.LAMB(model.parameters(), lr=optim.scaled_lr(1e-3, 4096, 256))
    schedule = optim.WarmupDecay(opt, warmup_steps=500, total_steps=10000, decay="cosine")
    for x, y in loader: ...; opt.step(); schedule.step()
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar, overload

import torch
from torch.optim.optimizer import ParamsT

from ._native import _C


class _Layerwise(torch.optim.Optimizer):
    _KIND: ClassVar[str]  # "lars" or "lamb": the C++ optimizer, set by each subclass
    _OPTIONS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        super().__init__(params, defaults)
        self._core: _C.LayerwiseOptimizer | None = None
        self._core_params: list[int]  # ids of the parameters _core was built over (set with it)

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return {k: (tuple(group[k]) if k == "betas" else group[k]) for k in self._OPTIONS}

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
        params = [p for g in self.param_groups for p in g["params"]]
        if self._core is None or self._core_params != [id(p) for p in params]:
            self._core = _C.LayerwiseOptimizer(self._KIND, [g["params"] for g in self.param_groups],
                                               [self._options(g) for g in self.param_groups])
            self._core_params = [id(p) for p in params]
        for i, group in enumerate(self.param_groups):  # an LR scheduler may have changed them
            self._core.set_options(i, self._options(group))
        for i, p in enumerate(params):  # the state torch holds (loaded, or from the last step)
            self._core.set_state(i, dict(self.state[p]) if p in self.state else {})
        self._core.step()
        for i, p in enumerate(params):
            state = self._core.state(i)
            if state:
                self.state[p].update(state)
        return loss


class LARS(_Layerwise):
    """SGD with momentum, each layer's step scaled by the trust ratio
    eta * ||w|| / (||g|| + weight_decay * ||w||) (You et al. 2017)."""
    _KIND = "lars"
    _OPTIONS = ("lr", "momentum", "weight_decay", "eta", "eps", "exclude_1d")

    def __init__(self, params: ParamsT, lr: float = 0.1, momentum: float = 0.9, weight_decay: float = 0.0,
                 eta: float = 0.001, eps: float = 1e-9, exclude_1d: bool = True) -> None:
        if lr < 0 or momentum < 0 or weight_decay < 0 or eta <= 0:
            raise ValueError(f"LARS: lr={lr}, momentum={momentum}, weight_decay={weight_decay} must be "
                             f">= 0 and eta={eta} > 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, eta=eta, eps=eps,
                                      exclude_1d=exclude_1d))


class LAMB(_Layerwise):
    """Adam whose update for each layer is scaled by ||w|| / ||update||
    (You et al. 2019), with decoupled weight decay in the update."""
    _KIND = "lamb"
    _OPTIONS = ("lr", "betas", "eps", "weight_decay", "bias_correction", "exclude_1d")

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.01, bias_correction: bool = True,
                 exclude_1d: bool = True) -> None:
        if lr < 0 or weight_decay < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"LAMB: lr={lr} and weight_decay={weight_decay} must be >= 0 and betas={betas} "
                             "in [0, 1)")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      bias_correction=bias_correction, exclude_1d=exclude_1d))


class WarmupDecay(torch.optim.lr_scheduler.LambdaLR):
    """lr = base_lr * f(step): linear warmup from warmup_start_factor to 1 over
    warmup_steps, then `decay` ('constant', 'cosine' or 'polynomial' to
    final_factor at total_steps, or 'step': times gamma every step_size steps
    or at each milestone). Call step() after each optimizer.step()."""

    def __init__(self, optimizer: torch.optim.Optimizer, warmup_steps: int = 0, total_steps: int = 0,
                 decay: str = "cosine", warmup_start_factor: float = 0.0, final_factor: float = 0.0,
                 power: float = 1.0, gamma: float = 0.1, step_size: int = 0, milestones: Iterable[int] = (),
                 last_epoch: int = -1) -> None:
        # Checked now; held by the lambda only, so state_dict() (LambdaLR saves
        # every attribute) stays plain numbers that torch.save can write.
        schedule = _C.LrScheduleOptions(int(warmup_steps), float(warmup_start_factor), decay,
                                        int(total_steps), float(final_factor), float(power), float(gamma),
                                        int(step_size), [int(m) for m in milestones])
        super().__init__(optimizer, lambda step: schedule.factor(step), last_epoch=last_epoch)


def scaled_lr(base_lr: float, global_batch: int, base_batch: int) -> float:
    """The linear scaling rule (Goyal et al. 2017): base_lr * global_batch / base_batch."""
    return _C.scaled_lr(float(base_lr), int(global_batch), int(base_batch))
