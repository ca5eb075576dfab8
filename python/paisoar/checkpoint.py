"""Activation checkpointing by module name: the modules whose dotted path
matches a pattern ("layer*", "blocks.*"; `*` also matches dots, as in
paisoar's config key `activation_checkpointing`) keep no activations
in forward and recompute them in backward (torch.utils.checkpoint,
non-reentrant, RNG state preserved), trading compute for memory.

    wrapped = checkpoint.apply(model, ["layer2", "layer3"])
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.utils.checkpoint

from ._module_wrap import matched_modules, unwrap_all, wrap_forward
from ._native import _C


def apply(model: torch.nn.Module, patterns: Iterable[str], preserve_rng_state: bool = True) -> list[str]:
    """Checkpoints every submodule of `model` whose name matches one of
    `patterns` (the outermost one that is called, when a module and its
    children match: a ModuleList's children, not the list); returns the names
    wrapped. Raises ValueError for a pattern that matches no module, listing
    the names there are. Call it again with other patterns, or `remove(model)`,
    to change the choice."""
    policy = _C.CheckpointPolicy(list(patterns))
    names = [name for name, _ in model.named_modules() if name]
    for pattern in policy.patterns:
        if not any(_C.CheckpointPolicy([pattern]).matches(n) for n in names):
            raise ValueError(f"activation checkpointing: the pattern '{pattern}' matches no module of "
                             f"{type(model).__name__}; its modules are: {', '.join(names)}")
    remove(model)
    chosen = matched_modules(model, policy.matches)
    for _, module in chosen:
        wrap_forward(module, _KIND, _checkpointed, preserve_rng_state)
    return [name for name, _ in chosen]


def remove(model: torch.nn.Module) -> None:
    """Undoes apply(): every module computes and keeps its activations again."""
    unwrap_all(model, _KIND)


_KIND = "_paisoar_checkpointed_forward"


def _checkpointed(forward: Callable[..., Any], preserve_rng_state: bool, *args: Any, **kwargs: Any) -> Any:
    if not torch.is_grad_enabled():
        return forward(*args, **kwargs)
    return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False,
                                             preserve_rng_state=preserve_rng_state, **kwargs)
