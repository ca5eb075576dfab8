"""Wrapping a module's forward in place, undoably: what activation
checkpointing and precision pinning by module name both do. A module keeps
its own forward and the list of wrappers applied, so removing one kind
rebuilds the forward from the others and kinds stack in any order."""
import functools

import torch

_BASE = "_paisoar_base_forward"
_LAYERS = "_paisoar_wrappers"


def matched_modules(model, matches):
    """(name, module) of the outermost called modules whose name `matches`:
    a ModuleList's or ModuleDict's children rather than the container, which
    is iterated and never called."""
    chosen = []
    for name, module in model.named_modules():
        if not name or not matches(name) or any(name.startswith(c + ".") for c, _ in chosen):
            continue
        if isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            continue
        chosen.append((name, module))
    return chosen


def wrap_forward(module, kind, wrapper, *args):
    """module.forward becomes wrapper(inner_forward, *args, *call_args), over
    the wrappers already there."""
    if _BASE not in vars(module):
        object.__setattr__(module, _BASE, module.forward)
        object.__setattr__(module, _LAYERS, [])
    vars(module)[_LAYERS].append((kind, wrapper, args))
    _rebuild(module)


def unwrap_all(model, kind):
    """Removes the `kind` wrappers from every module of `model`, keeping the others."""
    for module in model.modules():
        layers = vars(module).get(_LAYERS)
        if layers is None:
            continue
        layers[:] = [layer for layer in layers if layer[0] != kind]
        _rebuild(module)


def _rebuild(module):
    forward = vars(module)[_BASE]
    for _, wrapper, args in vars(module)[_LAYERS]:
        forward = functools.partial(wrapper, forward, *args)
    if vars(module)[_LAYERS]:
        object.__setattr__(module, "forward", forward)
    else:
        for name in ("forward", _BASE, _LAYERS):
            vars(module).pop(name, None)
