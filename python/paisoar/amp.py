"""Mixed precision with PyTorch's names and PyTorch's behaviour: autocast
(torch.autocast with the device type optional; dtype="auto" opts in to
paisoar's rule), GradScaler (torch.amp.GradScaler over paisoar's C++ scaler,
with an inf/NaN verdict agreed by a process group's ranks when asked for),
custom_fwd/custom_bwd, and the precision policy by module name.

    scaler = amp.GradScaler("cuda")
    with amp.autocast("cuda"):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, overload

import torch

from . import _module_wrap
from ._grad_scaler import GradScaler  # noqa: F401  (amp.GradScaler)
from ._model_device import default_device_type, say_once
from ._native import _C

_F = TypeVar("_F", bound=Callable[..., Any])

_DTYPES = {"Float": torch.float32, "BFloat16": torch.bfloat16, "Half": torch.float16}


def auto_dtype(device_type: str) -> tuple[bool, torch.dtype, str]:
    """(autocast?, dtype, reason) by the `auto` rule of paisoar's amp.dtype:
    bf16 on CUDA and on CPUs with native bf16 kernels, fp32 on other CPUs."""
    enabled, name, reason = _C.autocast_dtype(device_type)
    return enabled, _DTYPES[name], reason


class autocast(torch.autocast):
    """torch.autocast (the same arguments, in the same order), usable as a
    context manager and as a decorator, doing what it is told: dtype=None is
    torch's default for the device (torch.get_autocast_dtype: bfloat16 on the
    CPU, float16 on CUDA), enabled=True turns it on whatever the hardware.

    paisoar's additions: device_type may be left out (the model's device
    type, else 'cuda' when a GPU is visible, else 'cpu'), and a bool first
    argument is `enabled`. dtype="auto" opts in to paisoar's rule (bf16 where
    it runs faster than fp32; autocast off on CPUs without bf16 kernels) and
    says once, as a warning, what it chose and why."""

    def __init__(self, device_type: str | bool | None = None, dtype: torch.dtype | str | None = None,
                 enabled: bool = True, cache_enabled: bool | None = None) -> None:
        if isinstance(device_type, bool):  # autocast(False): the article's positional `enabled`
            enabled = device_type
            device_type = None
        device_type = device_type or default_device_type()
        if isinstance(dtype, str):
            if dtype != "auto":
                raise ValueError(f"autocast(dtype={dtype!r}): pass a torch.dtype, or 'auto' for paisoar's rule")
            fast, chosen, reason = auto_dtype(device_type)
            say_once(("autocast auto", device_type),
                     f"paisoar.amp.autocast(dtype='auto') on {device_type}: "
                     f"{'autocast to ' + str(chosen) if fast else 'autocast off, the model runs in float32'}"
                     f" ({reason}). Pass a dtype to choose yourself.")
            dtype, enabled = (chosen if fast else None), enabled and fast
        super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


@overload
def custom_fwd(fwd: None = None, *, device_type: str | None = None,
               cast_inputs: torch.dtype | None = None) -> Callable[[_F], _F]: ...


@overload
def custom_fwd(fwd: _F, *, device_type: str | None = None, cast_inputs: torch.dtype | None = None) -> _F: ...


def custom_fwd(fwd: Callable[..., Any] | None = None, *, device_type: str | None = None,
               cast_inputs: torch.dtype | None = None) -> Any:
    """torch.amp.custom_fwd with device_type defaulting as autocast's does."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return torch.amp.custom_fwd(fwd, device_type=device_type or default_device_type(),
                                cast_inputs=cast_inputs)


@overload
def custom_bwd(bwd: None = None, *, device_type: str | None = None) -> Callable[[_F], _F]: ...


@overload
def custom_bwd(bwd: _F, *, device_type: str | None = None) -> _F: ...


def custom_bwd(bwd: Callable[..., Any] | None = None, *, device_type: str | None = None) -> Any:
    """torch.amp.custom_bwd with device_type defaulting as autocast's does."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return torch.amp.custom_bwd(bwd, device_type=device_type or default_device_type())


# --- the precision policy by module name -------------------------------------

_PINNED = "_paisoar_pinned_forward"


def precision_policy(model: torch.nn.Module, rules: Mapping[str, Iterable[str]],
                     device_type: str | None = None) -> dict[str, str]:
    """Pins the precision of `model`'s submodules by name, as the config's
    `amp.policy` does for the C++ Trainer: `rules` maps "fp32" (autocast off,
    floating inputs cast to float32: for precision-sensitive layers) or "low"
    (autocast on in the device's low dtype, inputs cast to it) to lists of
    patterns ("head", "*.norm", "blocks.*.mlp"; `*` also matches dots; the
    last matching rule wins). The outermost matching module is pinned.
    Returns {name: precision}. Raises ValueError for a pattern matching no
    module. `remove_precision_policy(model)` undoes it.

        amp.precision_policy(model, {"fp32": ["head", "*.norm"]})
        with amp.autocast():
            loss = criterion(model(x), y)      # the head and the norms in fp32
    """
    policy = _C.PrecisionPolicy()
    names = [name for name, _ in model.named_modules() if name]
    for precision, patterns in rules.items():
        for pattern in patterns:
            policy.add(pattern, precision)
            single = _C.PrecisionPolicy()
            single.add(pattern, precision)
            if not any(single.precision_for(n) != "inherit" for n in names):
                raise ValueError(f"precision policy: the pattern '{pattern}' matches no module of "
                                 f"{type(model).__name__}; its modules are: {', '.join(names)}")
    remove_precision_policy(model)
    device = device_type or default_device_type()
    low = auto_dtype(device)[1] if device == "cuda" else torch.bfloat16
    chosen = _module_wrap.matched_modules(model, lambda name: policy.precision_for(name) != "inherit")
    pinned: dict[str, str] = {}
    for name, module in chosen:
        precision = policy.precision_for(name)
        dtype = torch.float32 if precision == "fp32" else low
        _module_wrap.wrap_forward(module, _PINNED, _pinned_forward, device, dtype)
        pinned[name] = precision
    return pinned


def remove_precision_policy(model: torch.nn.Module) -> None:
    _module_wrap.unwrap_all(model, _PINNED)


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _pinned_forward(forward: Callable[..., Any], device: str, dtype: torch.dtype, *args: Any, **kwargs: Any) -> Any:
    args, kwargs = _cast(args, dtype), {k: _cast(v, dtype) for k, v in kwargs.items()}
    with torch.autocast(device, dtype=None if dtype == torch.float32 else dtype,
                        enabled=dtype != torch.float32):
        return forward(*args, **kwargs)
