"""paisoar.amp.GradScaler: torch.amp.GradScaler's API, numbers and errors over
paisoar's C++ scaler (amp::GradScaler, which holds the float32 scale, the
per-optimizer records and ATen's kernels). This layer adds what is Python's:
iterables in scale(), the `_step_supports_amp_scaling` optimizer protocol,
pickling, and torch's exception types."""
from __future__ import annotations

import inspect
import warnings
from collections import abc
from typing import Any, overload

import torch

from . import _comm
from ._model_device import default_device_type, say_once
from ._native import _C

# What state_dict() holds, as torch.amp.GradScaler's.
_STATE_KEYS: dict[str, type[float] | type[int]] = {
    "scale": float, "growth_factor": float, "backoff_factor": float, "growth_interval": int, "_growth_tracker": int}


def _parameters(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]


class GradScaler:
    """torch.amp.GradScaler (the same arguments, methods, numbers and errors).

    `device`: the device type whose CUDA availability torch checks (a 'cuda'
    scaler without CUDA disables itself with a warning, as torch's does) and
    that update(new_scale)'s tensor must be on. torch defaults to 'cuda';
    left None, paisoar takes the model's device type (else 'cuda' when a GPU
    is visible, else 'cpu') and says so once where that is not 'cuda'.

    paisoar's additions, off unless asked for (keyword-only):
    `process_group` (a torch.distributed group or a paisoar Communicator):
    every rank of it agrees on each step's inf/NaN verdict, so no rank steps
    while another skips. Needed where each rank holds different gradients
    (paisoar.zero.ZeroOptimizer, which refuses a scaler without it); with
    DistributedDataParallel every rank already sees the same averaged
    gradients. Collective: every rank of the group constructs the scaler.
    `min_scale`: a scale pushed below it raises RuntimeError (gradients
    overflow at every scale: training is unstable) instead of skipping forever.
    """

    def __init__(self, device: str | None = None, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True, *,
                 process_group: _comm.Group = None, min_scale: float | None = None) -> None:
        if device is None:
            device = default_device_type()
            if device != "cuda":
                say_once(("GradScaler", device),
                         f"paisoar.amp.GradScaler: no device given, so it scales for '{device}' (the model's "
                         "device type, or no GPU is visible); torch.amp.GradScaler defaults to 'cuda' and "
                         f"would disable itself here. Pass device='{device}' to choose it yourself.")
        enabled = bool(enabled)
        if enabled and device == "cuda" and torch.cuda.amp.common.amp_definitely_not_available():
            warnings.warn("paisoar.amp.GradScaler(device='cuda') is enabled, but CUDA is not available. "
                          "Disabling, as torch.amp.GradScaler does; pass device='cpu' to scale on the CPU.",
                          stacklevel=2)
            enabled = False
        if enabled:  # torch's checks, with torch's exception type
            if growth_factor <= 1.0:
                raise AssertionError(f"The growth factor must be > 1.0. Got growth_factor={growth_factor}.")
            if backoff_factor >= 1.0:
                raise AssertionError(f"The backoff factor must be < 1.0. Got backoff_factor={backoff_factor}.")
        self._device = device
        self._process_group = process_group
        self._min_scale = min_scale
        verdict = _comm.communicator(process_group) if process_group is not None and enabled else None
        self._core = _C.GradScaler(init_scale=float(init_scale), growth_factor=float(growth_factor),
                                   backoff_factor=float(backoff_factor), growth_interval=int(growth_interval),
                                   enabled=enabled, min_scale=float(min_scale or 0.0), verdict_group=verdict)
        self._verdict = verdict

    @overload
    def scale(self, outputs: torch.Tensor) -> torch.Tensor: ...

    @overload
    def scale(self, outputs: list[torch.Tensor]) -> list[torch.Tensor]: ...

    @overload
    def scale(self, outputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]: ...

    @overload
    def scale(self, outputs: abc.Iterable[torch.Tensor]) -> abc.Iterable[torch.Tensor]: ...

    def scale(self, outputs: torch.Tensor | abc.Iterable[Any]) -> torch.Tensor | abc.Iterable[Any]:
        """outputs * scale: a tensor, or an iterable of them (lists and tuples
        keep their type, other iterables come back as a lazy map), as torch's."""
        if not self._core.is_enabled():
            return outputs
        if isinstance(outputs, torch.Tensor):
            return self._core.scale(outputs)

        def apply_scale(value: object) -> torch.Tensor | abc.Iterable[Any]:
            if isinstance(value, torch.Tensor):
                return self._core.scale(value)
            if isinstance(value, abc.Iterable):
                scaled = map(apply_scale, value)
                return type(value)(scaled) if isinstance(value, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors: "
                             f"GradScaler.scale got {type(value).__name__}")

        return apply_scale(outputs)

    def unscale_(self, optimizer: torch.optim.Optimizer) -> None:
        """Divides `optimizer`'s gradients by the scale (once per step) and
        records whether any is inf/NaN; e.g. before clipping."""
        if self._core.is_enabled():
            self._core.unscale_(id(optimizer), _parameters(optimizer))

    def step(self, optimizer: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> float | None:
        """optimizer.step(*args, **kwargs) unless a gradient is inf/NaN (on
        any rank of the process group, when one is given); returns what step
        returned, or None when skipped. An optimizer with
        `_step_supports_amp_scaling` gets `grad_scale` and `found_inf` (or
        `grad_scaler=self` when its step takes it) and unscales itself."""
        # What step() returned: a float or None for torch's optimizers (torch.amp.GradScaler's hint).
        result: float | None
        if not self._core.is_enabled():
            result = optimizer.step(*args, **kwargs)
            return result
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled: evaluate "
                               "the loss, call scaler.scale(loss).backward(), then scaler.step(optimizer)")
        key = id(optimizer)
        self._core.begin_step(key)
        self._check_verdict_group(optimizer)
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            passes_scaler = "grad_scaler" in inspect.signature(optimizer.step).parameters
            if passes_scaler:
                warnings.warn("GradScaler is going to stop passing itself as a keyword argument to the passed "
                              "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                              "`found_inf: Tensor` to the passed optimizer and let the optimizer use them "
                              "directly.", FutureWarning, stacklevel=2)
                kwargs["grad_scaler"] = self
            else:
                unscaled = self._core.unscaled(key)
                if not unscaled:
                    self._core.check_inf(key, _parameters(optimizer))
                scale = self._core.scale_tensor
                assert scale is not None  # begin_step() checked that a scale is placed
                # Attributes torch's protocol adds to the optimizer for its step only.
                setattr(optimizer, "grad_scale", getattr(optimizer, "grad_scale", None) if unscaled
                        else scale * getattr(optimizer, "grad_scale", 1))
                setattr(optimizer, "found_inf", self._core.found_inf(key))
            result = optimizer.step(*args, **kwargs)
            self._core.stepped(key)
            if not passes_scaler:
                delattr(optimizer, "grad_scale")
                delattr(optimizer, "found_inf")
            return result
        result = optimizer.step(*args, **kwargs) if self._core.should_step(key, _parameters(optimizer)) else None
        self._core.stepped(key)
        return result

    def _check_verdict_group(self, optimizer: torch.optim.Optimizer) -> None:
        sharded_over = getattr(optimizer, "_grads_sharded_over", None)
        if self._verdict is None and sharded_over is not None and sharded_over.size > 1:
            raise ValueError(
                f"GradScaler.step: this {type(optimizer).__name__} holds only this rank's shard of the "
                f"gradients ({sharded_over.size} ranks), so an inf/NaN on one rank must skip the step on "
                "every rank: create the scaler with process_group= the group the optimizer shards over, "
                "e.g. amp.GradScaler(process_group=torch.distributed.group.WORLD)")

    def update(self, new_scale: float | torch.Tensor | None = None) -> None:
        """Backs the scale off after an inf/NaN step, grows it after
        growth_interval clean ones (to a finite float32 only); `new_scale` (a
        float or a one-element tensor) sets it instead."""
        if not self._core.is_enabled():
            return
        if new_scale is None:
            self._core.update()
            return
        if isinstance(new_scale, torch.Tensor):
            if (new_scale.device.type != self._device or new_scale.numel() != 1
                    or new_scale.requires_grad):
                raise AssertionError(
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                    f"with requires_grad=False. Got {new_scale.numel()} elements on {new_scale.device.type} "
                    f"(this scaler's device is '{self._device}'), requires_grad={new_scale.requires_grad}.")
        elif not isinstance(new_scale, (int, float)):
            raise TypeError(f"GradScaler.update(new_scale): pass a float or a one-element tensor, "
                            f"got {type(new_scale).__name__}")
        self._core.update(new_scale)

    # torch's private protocol for optimizers whose step takes grad_scaler=.
    def _get_scale_async(self) -> torch.Tensor | None:
        return self._core.scale_tensor

    def _check_inf_per_device(self, optimizer: torch.optim.Optimizer) -> dict[torch.device, torch.Tensor]:
        self._core.check_inf(id(optimizer), _parameters(optimizer))
        return self._found_inf_per_device(optimizer)

    def _found_inf_per_device(self, optimizer: torch.optim.Optimizer) -> dict[torch.device, torch.Tensor]:
        return {found.device: found for found in self._core.found_inf_per_device(id(optimizer))}

    def get_scale(self) -> float:
        """The scale as a Python float (its float32 value once a loss was scaled); 1.0 when disabled."""
        return self._core.get_scale()

    def get_growth_factor(self) -> float:
        return self._core.growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._core.growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._core.backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._core.backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._core.growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._core.growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        return self._core.growth_tracker

    def is_enabled(self) -> bool:
        return self._core.is_enabled()

    @property
    def skipped_steps(self) -> int:
        """paisoar's count of the steps skipped so far (not in state_dict(), as torch's has no such key)."""
        return self._core.skipped_steps

    def state_dict(self) -> dict[str, Any]:
        """torch.amp.GradScaler's five entries; {} when disabled."""
        if not self._core.is_enabled():
            return {}
        return {"scale": self.get_scale(), "growth_factor": self.get_growth_factor(),
                "backoff_factor": self.get_backoff_factor(), "growth_interval": self.get_growth_interval(),
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: abc.Mapping[str, Any]) -> None:
        """Loads a state_dict() of this GradScaler or of torch.amp.GradScaler; a no-op when disabled."""
        if not self._core.is_enabled():
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler. Load it only into a disabled GradScaler, or save an "
                               "enabled one's state.")
        self._core.load_state_dict(_state_tensors(state_dict))

    # Pickled as torch's is: between iterations, the scale as a number (placed
    # again by the next scale()). A process group belongs to its process.
    def __getstate__(self) -> dict[str, Any]:
        if self._process_group is not None:
            raise TypeError("a GradScaler(process_group=...) cannot be pickled: the group belongs to this "
                            "process. Pickle scaler.state_dict() and load it into a GradScaler built with "
                            "the new process's group")
        if self._core.is_enabled() and self._core.mid_iteration:
            raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                 "or at the end after scaler.update().")
        core = {key: value.item() for key, value in self._core.state_dict().items()}
        return {"device": self._device, "enabled": self._core.is_enabled(), "min_scale": self._min_scale, **core}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._device, self._process_group, self._min_scale = state["device"], None, state["min_scale"]
        self._verdict = None
        self._core = _C.GradScaler(init_scale=float(state["scale"]), growth_factor=float(state["growth_factor"]),
                                   backoff_factor=float(state["backoff_factor"]),
                                   growth_interval=int(state["growth_interval"]), enabled=state["enabled"],
                                   min_scale=float(state["min_scale"] or 0.0), verdict_group=None)
        if state["enabled"]:
            self._core.load_state_dict(_state_tensors(state))


def _state_tensors(state_dict: abc.Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The C++ scaler's state from torch's (Python numbers, or one-element tensors)."""
    tensors: dict[str, torch.Tensor] = {}
    for key, kind in (*_STATE_KEYS.items(), ("skipped_steps", int)):
        if key not in state_dict:
            if key == "skipped_steps":
                continue
            raise KeyError(f"GradScaler.load_state_dict: the state has no '{key}'; pass what a "
                           f"GradScaler's state_dict() returned (keys {', '.join(_STATE_KEYS)})")
        value = state_dict[key]
        tensors[key] = torch.tensor(kind(value), dtype=torch.float64 if kind is float else torch.int64)
    return tensors
