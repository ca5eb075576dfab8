"""Mixed precision with PyTorch's names: autocast (the device and dtype chosen
by paisoar's `auto` rule when not given), GradScaler (paisoar's C++ scaler:
ATen's fused unscale-and-check, and an inf/NaN verdict agreed by every rank
when a process group is up, so no rank steps while another skips),
custom_fwd/custom_bwd, and the precision policy by module name.

    scaler = amp.GradScaler()
    with amp.autocast():
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""
import functools

import torch

from . import _comm, _module_wrap
from ._native import _C

_DTYPES = {"Float": torch.float32, "BFloat16": torch.bfloat16, "Half": torch.float16}
_model_device = None  # where the last DistributedDataParallel's module lives


def note_model_device(device):
    """Called by DistributedDataParallel: autocast's default device is the model's."""
    global _model_device
    _model_device = torch.device(device).type


def default_device_type():
    """The wrapped model's device type, else 'cuda' when a GPU is visible, else 'cpu'."""
    if _model_device is not None:
        return _model_device
    return "cuda" if torch.cuda.is_available() else "cpu"


def auto_dtype(device_type):
    """(autocast?, dtype, reason) by the `auto` rule of paisoar's amp.dtype:
    bf16 on CUDA and on CPUs with native bf16 kernels, fp32 on other CPUs."""
    enabled, name, reason = _C.autocast_dtype(device_type)
    return enabled, _DTYPES[name], reason


class autocast(torch.autocast):
    """torch.autocast (the same argument order) with the device type and dtype
    optional; a bool first argument is `enabled`. device_type
    defaults to the model's (or cuda when available, else cpu); dtype to the
    `auto` rule, which leaves autocast off where low precision is slower than
    fp32 (CPUs without bf16 kernels). Usable as a context manager and as a
    decorator, like torch.autocast."""

    def __init__(self, device_type=None, dtype=None, enabled=True, cache_enabled=None):
        if isinstance(device_type, bool):  # autocast(False): the article's positional `enabled`
            device_type, enabled = None, device_type
        device_type = device_type or default_device_type()
        if dtype is None:
            fast, dtype, _ = auto_dtype(device_type)
            enabled = enabled and fast
        super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, device_type=None, cast_inputs=None):
    """torch.amp.custom_fwd with device_type defaulting as autocast's does."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return torch.amp.custom_fwd(fwd, device_type=device_type or default_device_type(),
                                cast_inputs=cast_inputs)


def custom_bwd(bwd=None, *, device_type=None):
    """torch.amp.custom_bwd with device_type defaulting as autocast's does."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return torch.amp.custom_bwd(bwd, device_type=device_type or default_device_type())


def _parameters(optimizer):
    return [p for group in optimizer.param_groups for p in group["params"]]


class GradScaler:
    """torch.amp.GradScaler's constructor and methods over paisoar's C++
    scaler. `process_group`: whose ranks agree on each step's inf/NaN verdict
    (default: torch.distributed's group when initialised, else paisoar's own
    when this process has one, else none). `min_scale`: a scale pushed below
    it means gradients overflow at every scale, and update() raises."""

    def __init__(self, device=None, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True, process_group=None, min_scale=1.0):
        self._device = device
        self._options = dict(init_scale=float(init_scale), growth_factor=float(growth_factor),
                             backoff_factor=float(backoff_factor), growth_interval=int(growth_interval),
                             enabled=bool(enabled), min_scale=float(min_scale))
        self._process_group = process_group
        self._scaler = None
        self._loaded = None  # a state loaded before the first step
        # Checks the arguments now, as torch does, with no group needed.
        _C.GradScaler(**self._options, comm=None)

    def _core(self):
        # Created at the first scale/unscale_/step (every rank gets there), when
        # the script's process group, if any, exists: joining a group is collective.
        if self._scaler is None:
            self._comm = None
            if self._process_group is not None or _comm.has_group():
                self._comm = _comm.communicator(self._process_group)
            self._scaler = _C.GradScaler(**self._options, comm=self._comm)
            if self._loaded is not None:
                self._scaler.load_state_dict(self._loaded)
        return self._scaler

    def _state(self):
        """The state as C++ holds it, without joining a group before the first step."""
        if self._scaler is not None:
            return {k: v.item() for k, v in self._scaler.state_dict().items()}
        if self._loaded is not None:
            return {k: v.item() for k, v in self._loaded.items()}
        return {"scale": self._options["init_scale"], "growth_factor": self._options["growth_factor"],
                "backoff_factor": self._options["backoff_factor"],
                "growth_interval": self._options["growth_interval"], "_growth_tracker": 0, "skipped_steps": 0}

    def scale(self, outputs):
        """outputs * scale: a tensor, or (nested) lists and tuples of them."""
        if not self._options["enabled"]:
            return outputs
        core = self._core()
        if isinstance(outputs, torch.Tensor):
            return core.scale(outputs)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale takes a tensor or a list/tuple of tensors, got {type(outputs).__name__}")

    def unscale_(self, optimizer):
        """Divides `optimizer`'s gradients by the scale (once per step) and
        records whether any rank found inf/NaN; e.g. before clipping."""
        if self._options["enabled"]:
            self._core().unscale_(id(optimizer), _parameters(optimizer))

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) unless some rank found inf/NaN in
        the gradients; returns what step returned, or None when skipped."""
        if not self._options["enabled"]:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("GradScaler.step: closures are not supported (as in torch.amp.GradScaler)")
        if self._core().should_step(id(optimizer), _parameters(optimizer)):
            return optimizer.step(*args, **kwargs)
        return None

    def update(self, new_scale=None):
        """Backs the scale off after an inf/NaN step, grows it after
        growth_interval clean ones; `new_scale` (a float or a one-element
        tensor) sets it instead, as in torch."""
        if not self._options["enabled"]:
            return
        if new_scale is None:
            self._core().update()
            return
        if isinstance(new_scale, torch.Tensor):
            if new_scale.numel() != 1:
                raise ValueError(f"GradScaler.update(new_scale): a tensor of {new_scale.numel()} elements; "
                                 "pass a float or a one-element tensor")
            new_scale = new_scale.item()
        self._core().update(float(new_scale))

    def get_scale(self):
        return float(self._state()["scale"]) if self._options["enabled"] else 1.0

    def is_enabled(self):
        return self._options["enabled"]

    def get_growth_factor(self):
        return self._options["growth_factor"]

    def get_backoff_factor(self):
        return self._options["backoff_factor"]

    def get_growth_interval(self):
        return self._options["growth_interval"]

    def _get_growth_tracker(self):
        return int(self._state()["_growth_tracker"]) if self._options["enabled"] else 0

    @property
    def skipped_steps(self):
        return int(self._state()["skipped_steps"])

    def state_dict(self):
        """torch.amp.GradScaler's keys (plus skipped_steps); {} when disabled."""
        if not self._options["enabled"]:
            return {}
        state = self._state()
        state["scale"] = float(state["scale"])
        state["growth_interval"] = int(state["growth_interval"])
        state["_growth_tracker"] = int(state["_growth_tracker"])
        state["skipped_steps"] = int(state["skipped_steps"])
        return state

    def load_state_dict(self, state_dict):
        if not self._options["enabled"]:
            return
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state is empty; it was saved by a "
                               "disabled GradScaler")
        tensors = {k: torch.tensor(v, dtype=torch.float64 if isinstance(v, float) else torch.int64)
                   for k, v in state_dict.items() if isinstance(v, (int, float))}
        _C.GradScaler(**self._options, comm=None).load_state_dict(tensors)  # checks it now
        if self._scaler is not None:
            self._scaler.load_state_dict(tensors)
        else:
            self._loaded = tensors
        for key in ("growth_factor", "backoff_factor", "growth_interval"):
            if key in state_dict:
                self._options[key] = type(self._options[key])(state_dict[key])


# --- the precision policy by module name -------------------------------------

_PINNED = "_paisoar_pinned_forward"


def precision_policy(model, rules, device_type=None):
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
    pinned = {}
    for name, module in chosen:
        precision = policy.precision_for(name)
        dtype = torch.float32 if precision == "fp32" else low
        _module_wrap.wrap_forward(module, _PINNED, _pinned_forward, device, dtype)
        pinned[name] = precision
    return pinned


def remove_precision_policy(model):
    _module_wrap.unwrap_all(model, _PINNED)


def _cast(value, dtype):
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _pinned_forward(forward, device, dtype, *args, **kwargs):
    args, kwargs = _cast(args, dtype), {k: _cast(v, dtype) for k, v in kwargs.items()}
    with torch.autocast(device, dtype=None if dtype == torch.float32 else dtype,
                        enabled=dtype != torch.float32):
        return forward(*args, **kwargs)
