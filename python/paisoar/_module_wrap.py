"""Wrapping a module's forward in place, undoably: what activation
checkpointing and precision pinning by module name both do. Each wrapper kind
keeps the forward it replaced under its own attribute, so kinds stack."""
import functools


def matched_modules(model, matches):
    """(name, module) of the outermost called modules whose name `matches`:
    a ModuleList's or ModuleDict's children rather than the container, which
    is iterated and never called."""
    import torch

    chosen = []
    for name, module in model.named_modules():
        if not name or not matches(name) or any(name.startswith(c + ".") for c, _ in chosen):
            continue
        if isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            continue
        chosen.append((name, module))
    return chosen


def wrap_forward(module, kind, wrapper, *args):
    """module.forward becomes wrapper(original_forward, *args, *call_args)."""
    original = module.forward
    setattr(module, kind, original)
    module.forward = functools.partial(wrapper, original, *args)


def unwrap_all(model, kind):
    for module in model.modules():
        if kind in vars(module):
            module.forward = vars(module)[kind]
            delattr(module, kind)
