"""Wrapping a module's forward in place, undoably: what activation
checkpointing and precision pinning by module name both do. A module keeps
its own forward and the list of wrappers applied, so removing one kind
rebuilds the forward from the others and kinds stack in any order."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

_BASE = "_paisoar_base_forward"
_LAYERS = "_paisoar_wrappers"


def matched_modules(model: torch.nn.Module,
                    matches: Callable[[str], bool]) -> list[tuple[str, torch.nn.Module]]:
    """(name, module) of the outermost called modules whose name `matches`:
    a ModuleList's or ModuleDict's children rather than the container, which
    is iterated and never called."""
    chosen: list[tuple[str, torch.nn.Module]] = []
    for name, module in model.named_modules():
        if not name or not matches(name) or any(name.startswith(c + ".") for c, _ in chosen):
            continue
        if isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            continue
        chosen.append((name, module))
    return chosen


def wrap_forward(module: torch.nn.Module, kind: str, wrapper: Callable[..., Any], *args: Any) -> None:
    """module.forward becomes wrapper(inner_forward, *args, *call_args), over
    the wrappers already there."""
    if _BASE not in vars(module):
        object.__setattr__(module, _BASE, module.forward)
        object.__setattr__(module, _LAYERS, [])
    vars(module)[_LAYERS].append((kind, wrapper, args))
    _rebuild(module)


def unwrap_all(model: torch.nn.Module, kind: str) -> None:
    """Removes the `kind` wrappers from every module of `model`, keeping the others."""
    for module in model.modules():
        layers = vars(module).get(_LAYERS)
        if layers is None:
            continue
        layers[:] = [layer for layer in layers if layer[0] != kind]
        _rebuild(module)


def _rebuild(module: torch.nn.Module) -> None:
    forward = vars(module)[_BASE]
    for _, wrapper, args in vars(module)[_LAYERS]:
        forward = functools.partial(wrapper, forward, *args)
    if vars(module)[_LAYERS]:
        object.__setattr__(module, "forward", forward)
    else:
        for name in ("forward", _BASE, _LAYERS):
            vars(module).pop(name, None)
