"""DistributedDataParallel: torch.nn.parallel.DistributedDataParallel's
constructor and behaviour, with paisoar's C++ gradient engine underneath:
gradients averaged in buckets launched during backward (overlapped with it),
buckets rebuilt in arrival order after the first step, no_sync() and
require_backward_grad_sync for accumulation, join() for uneven inputs,
torch's communication hooks, and paisoar's own gradient compression (fp16,
bf16, int8, PowerSGD). It runs over the process group the script created
with init_process_group, or paisoar's own group (shared memory between the
ranks of one host, Gloo across hosts) when there is none."""
from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, Optional, TypedDict, TypeVar, cast

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import GradBucket
from torch.autograd.grad_mode import _unsafe_preserve_version_counter
from torch.distributed.algorithms.join import Join, Joinable
from torch.nn.parallel.distributed import _BufferCommHook, _BufferCommHookLocation

from . import _comm, _ddp_arguments as arguments
from ._ddp_join import DDPJoinHook
from ._model_device import note_model_device
from ._native import _C

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh
    from torch.nn.parallel.distributed import _MixedPrecision

# torch's register_comm_hook contract: hook(state, bucket) -> a Future of the bucket's reduced gradients.
_CommHook = Callable[[Any, GradBucket], torch.futures.Future[torch.Tensor]]
# torch's _register_buffer_comm_hook contract: hook(state, {name: buffer}) -> futures to await, or None.
_BufferHook = Callable[[Any, dict[str, torch.Tensor]], Optional[list[torch.futures.Future[Any]]]]

_Self = TypeVar("_Self", bound="DistributedDataParallel")


class _ReducerOptions(TypedDict):
    """The keyword arguments of _C.GradientReducer that DDP keeps for rebuilding it."""
    bucket_cap_mb: float
    first_bucket_mb: float
    overlap: bool
    rebuild_buckets: bool
    find_unused_parameters: bool
    broadcast_buffers: bool
    compression: str
    powersgd_rank: int
    error_feedback: bool
    ranks_per_node: int
    gradient_as_bucket_view: bool
    static_graph: bool
    bucket_caps_mb: list[float]


def _tensors_in(output: Any) -> list[torch.Tensor]:
    """The tensors of a forward's output, found as torch's DDP finds them."""
    # torch's _find_tensors has no annotations: typed here as it behaves.
    find = cast(Callable[[Any], Iterable[torch.Tensor]], torch.nn.parallel.distributed._find_tensors)
    return list(find(output))


class DistributedDataParallel(torch.nn.Module, Joinable):
    """Wraps `module` so that backward averages its gradients over the ranks.

    torch's arguments, in torch's order, mean what they mean in torch; those
    paisoar cannot honour raise NotImplementedError naming the argument.
    Collective: every rank constructs it with the same model; with init_sync
    rank 0's parameters (and buffers) are copied to the others, and a model
    that differs (names, shapes, dtypes) raises on every rank.

    paisoar's own keyword arguments: `gradient_compression` ('fp16', 'bf16',
    'int8', 'powersgd' or None), `first_bucket_mb` (the first, small bucket;
    default torch's rule), `overlap` (False: every bucket after backward),
    `powersgd_rank`, `error_feedback`."""

    def __init__(self, module: torch.nn.Module, device_ids: Sequence[int | torch.device] | None = None,
                 output_device: int | torch.device | None = None, dim: int = 0,
                 broadcast_buffers: bool | None = None, init_sync: bool = True,
                 process_group: _comm.Group = None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params: Sequence[tuple[str, torch.nn.Parameter]] | None = None,
                 param_to_hook_all_reduce: torch.nn.Parameter | None = None,
                 mixed_precision: _MixedPrecision | None = None, device_mesh: DeviceMesh | None = None,
                 skip_all_reduce_unused_params: bool = False, bucket_cap_mb_list: Sequence[float] | None = None,
                 batched_grad_copy: bool = False, forward_sync_buffers: bool | None = None, *,
                 gradient_compression: str | None = None, first_bucket_mb: float | None = None,
                 overlap: bool = True, powersgd_rank: int = 4, error_feedback: bool = True) -> None:
        super().__init__()
        Joinable.__init__(self)
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"DistributedDataParallel wraps a torch.nn.Module, got {type(module).__name__}")
        arguments.check_unsupported(delay_all_reduce_named_params, param_to_hook_all_reduce, mixed_precision,
                                    skip_all_reduce_unused_params, batched_grad_copy)
        group = arguments.process_group_of(process_group, device_mesh)
        if device_mesh is not None:
            self.device_mesh = device_mesh
        self.parameters_to_ignore: set[str] = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self._module_parameters = [p for n, p in module.named_parameters() if n not in self.parameters_to_ignore]
        if not any(p.requires_grad for p in self._module_parameters):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self.device, self.device_ids, self.output_device = arguments.devices_of(
            self._module_parameters, device_ids, output_device, group)
        self.device_type = self.device.type
        note_model_device(self.device)
        if check_reduction:
            import warnings
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module is deprecated. "
                          "Please avoid using it.", FutureWarning, stacklevel=2)
        self.forward_sync_buffers, init_sync_buffers = arguments.buffer_sync(broadcast_buffers,
                                                                             forward_sync_buffers)
        self.bucket_bytes_cap, self.bucket_bytes_cap_list, first_mb, cap_mb, caps_mb = arguments.bucket_caps(
            bucket_cap_mb, bucket_cap_mb_list, first_bucket_mb)
        self.module = module
        self.dim = dim  # as in torch, read only by scatter() and gather()
        self.process_group = group
        self.find_unused_parameters = bool(find_unused_parameters)
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        self.static_graph = bool(static_graph)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._divide_by_initial_world_size = True
        self._comm_hook: tuple[_CommHook, object] | None = None
        self._options = _ReducerOptions(
            bucket_cap_mb=cap_mb, first_bucket_mb=first_mb, overlap=bool(overlap), rebuild_buckets=True,
            find_unused_parameters=self.find_unused_parameters, broadcast_buffers=False,
            compression=arguments.compression_of(gradient_compression), powersgd_rank=int(powersgd_rank),
            error_feedback=bool(error_feedback), ranks_per_node=0,
            gradient_as_bucket_view=self.gradient_as_bucket_view, static_graph=self.static_graph,
            bucket_caps_mb=caps_mb)
        self._comm = _comm.communicator(group)
        self._reducer = self._make_reducer(init_sync=bool(init_sync), sync_buffers=init_sync_buffers)

    # --- parameters and buffers DDP owns (torch's ignore list left out) -------

    def _ddp_parameters(self) -> list[torch.nn.Parameter]:
        return [p for n, p in self.module.named_parameters() if n not in self.parameters_to_ignore]

    def _ddp_buffers(self) -> list[torch.Tensor]:
        return [b for n, b in self.module.named_buffers() if n not in self.parameters_to_ignore]

    def _make_reducer(self, init_sync: bool, sync_buffers: bool) -> _C.GradientReducer:
        named = [(n, p) for n, p in self.module.named_parameters() if n not in self.parameters_to_ignore]
        buffers = [(n, b) for n, b in self.module.named_buffers()
                   if n not in self.parameters_to_ignore] if init_sync and sync_buffers else []
        return _C.GradientReducer([n for n, _ in named], [p for _, p in named],
                                  [n for n, _ in buffers], [b for _, b in buffers],
                                  comm=self._comm, init_sync=init_sync, **self._options)

    # --- forward ---------------------------------------------------------------

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        with torch.autograd.profiler.record_function("DistributedDataParallel.forward"):
            inputs, kwargs = self._pre_forward(*inputs, **kwargs)
            return self._post_forward(self.module(*inputs, **kwargs))

    def _pre_forward(self, *inputs: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        grad_sync = torch.is_grad_enabled() and self.require_backward_grad_sync
        if torch.is_grad_enabled():
            self._reducer.set_sync(grad_sync)
        self._reducer.pre_forward()  # raises what the last backward left for this forward
        work = Join.notify_join_context(self)
        if work is not None:
            work.wait()
            active = int(work.result()[0].item())
            self._reducer.set_gradient_divisor(self._comm.size if self._divide_by_initial_world_size else active)
        if self._will_sync_buffers() and self._buffer_hook_at("pre"):
            self._sync_buffers()
        if self._join_config.enable:
            self._vote_backward_sync(joined=False)
        if self.device_ids:
            from torch.distributed.utils import _to_kwargs
            moved, moved_kwargs = _to_kwargs(inputs, kwargs, torch.device(self.device_type, self.device_ids[0]),
                                             True)
            return moved[0], moved_kwargs[0]
        return inputs, kwargs

    def _post_forward(self, output: Any) -> Any:
        if self._will_sync_buffers() and self._buffer_hook_at("post"):
            self._sync_buffers()
        if torch.is_grad_enabled() and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            if self.find_unused_parameters and not self.static_graph:
                self._reducer.post_forward(_tensors_in(output))
        else:
            self.require_forward_param_sync = False
        return output

    # --- buffers ----------------------------------------------------------------

    def will_sync_module_buffers(self) -> bool:
        return self._will_sync_buffers()

    def _will_sync_buffers(self) -> bool:
        return self.require_forward_param_sync and self.forward_sync_buffers and bool(self._ddp_buffers())

    def _buffer_hook_at(self, where: Literal["pre", "post"]) -> bool:
        hook: _BufferCommHook | None = getattr(self, "buffer_hook", None)
        if hook is None:
            return where == "pre"
        pre = hook.buffer_comm_hook_location == _BufferCommHookLocation.PRE_FORWARD
        return pre == (where == "pre")

    def _sync_buffers(self) -> None:
        """The module's buffers as they are now (reassigned ones too) from the authoritative rank."""
        hook: _BufferCommHook | None = getattr(self, "buffer_hook", None)
        if hook is not None:
            named = {n: b for n, b in self.module.named_buffers() if n not in self.parameters_to_ignore}
            futures = hook.buffer_comm_hook(hook.buffer_comm_hook_state, named)
            if futures is not None:
                torch.futures.wait_all(futures)
            return
        self._sync_buffers_from(self._common_rank(candidate=True) if self._join_config.enable else 0)

    def _sync_buffers_from(self, root: int) -> None:
        buffers = self._ddp_buffers()
        with torch.no_grad(), _unsafe_preserve_version_counter(tuple(buffers)):
            self._reducer.broadcast(buffers, root)

    def _register_buffer_comm_hook(self, state: Any, hook: _BufferHook,
                                   comm_hook_location: _BufferCommHookLocation | None = None) -> None:
        """torch's private hook for buffers: hook(state, {name: buffer}) instead of the broadcast."""
        location = comm_hook_location or _BufferCommHookLocation.POST_FORWARD
        if not callable(hook):
            raise AssertionError(f"hook must be callable, got {type(hook).__name__}")
        self.buffer_hook = _BufferCommHook(
            buffer_comm_hook=hook, buffer_comm_hook_state=state, buffer_comm_hook_location=location)

    # --- gradient accumulation ----------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Forward and backward inside accumulate gradients locally; the first
        forward-backward after it averages the accumulated sum. As in torch, it
        sets require_backward_grad_sync, which a script may also set itself."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # --- torch's static graph and ignored parameters --------------------------------

    def _set_static_graph(self) -> None:
        if self.static_graph:
            import warnings
            warnings.warn("You've set static_graph to be True, no need to set it again.")
            return
        self._reducer.set_static_graph()
        self.static_graph = True
        self._options["static_graph"] = True

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module: torch.nn.Module,
                                                    params_and_buffers_to_ignore: Collection[str]) -> None:
        """torch's way to leave parameters and buffers out of DDP (fully qualified names)."""
        # torch's private markers, which its stubs do not declare: set as torch sets them.
        setattr(module, "_ddp_params_and_buffers_to_ignore", params_and_buffers_to_ignore)
        for name, param in module.named_parameters():
            if name in params_and_buffers_to_ignore:
                setattr(param, "_ddp_ignored", True)
        for name, buffer in module.named_buffers():
            if name in params_and_buffers_to_ignore:
                setattr(buffer, "_ddp_ignored", True)

    @staticmethod
    def _get_data_parallel_params(module: torch.nn.Module, named_params: bool = False
                                  ) -> Iterator[torch.nn.Parameter | tuple[str, torch.nn.Parameter]]:
        for param in module.parameters() if not named_params else module.named_parameters():
            if not hasattr(param, "_ddp_ignored"):
                yield param

    # --- communication hooks ----------------------------------------------------------

    def register_comm_hook(self, state: object, hook: _CommHook) -> None:
        """torch's contract: hook(state, bucket: dist.GradBucket) -> Future[Tensor] runs once per
        bucket during backward (over torch's process group, as the hook chooses); the
        bucket is not divided by the world size; the future's tensor becomes its gradients.
        Once per DDP, before the first backward."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        sig = inspect.signature(hook)
        if sig.parameters["bucket"].annotation not in (inspect._empty, GradBucket):
            raise ValueError("Communication hook: bucket annotation should be dist.GradBucket.")
        if sig.return_annotation not in (inspect._empty, torch.futures.Future[torch.Tensor]):
            raise ValueError("Communication hook: return annotation should be torch.futures.Future[torch.Tensor].")
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not arguments.is_torch_group(self.process_group):
            raise RuntimeError("register_comm_hook: torch's communication hooks communicate over a "
                               "torch.distributed group, and this DDP runs over paisoar's own group; call "
                               "torch.distributed.init_process_group first, or use paisoar's "
                               "gradient_compression='fp16'|'bf16'|'int8'|'powersgd'")
        self._reducer.set_torch_comm_hook(state, hook)
        self._comm_hook = (hook, state)

    # --- join (uneven inputs) --------------------------------------------------------------

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """torch's context manager for uneven inputs: ranks that run out of inputs shadow the
        others' collectives until every rank has; then all take the last joiner's model."""
        if enable and not arguments.is_torch_group(self.process_group):
            raise RuntimeError("DistributedDataParallel.join() counts the ranks still training over a "
                               "torch.distributed group, and this DDP runs over paisoar's own group; call "
                               "torch.distributed.init_process_group first")
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs: Any) -> DDPJoinHook:
        return DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self) -> torch.device:
        return self.device

    @property
    def join_process_group(self) -> _comm.Group:
        return self.process_group if self.process_group is not None else dist.group.WORLD

    def _common_rank(self, candidate: bool) -> int:
        """The highest rank that is a candidate (torch: the authoritative copy under join)."""
        rank = torch.tensor([self._comm.rank if candidate else -1], dtype=torch.int64)
        self._comm.allreduce(rank, "max")
        return int(rank.item())

    def _vote_backward_sync(self, joined: bool) -> bool:
        """Tells joined ranks whether the coming backward averages (any training rank's vote)."""
        vote = torch.tensor([0 if joined or not self.require_backward_grad_sync else 1], dtype=torch.int32)
        self._comm.allreduce(vote, "sum")
        return bool(vote.item())

    # --- torch's other public attributes ---------------------------------------------------

    @property
    def broadcast_buffers(self) -> bool:
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value: bool) -> None:
        self.forward_sync_buffers = value

    def scatter(self, inputs: tuple[Any, ...], kwargs: dict[str, Any] | None, device_ids: Sequence[int | torch.device]
                ) -> tuple[tuple[Any, ...], tuple[dict[str, Any], ...]]:
        return torch.nn.parallel.scatter_gather.scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def gather(self, outputs: Any, output_device: int | torch.device) -> Any:
        return torch.nn.parallel.scatter_gather.gather(outputs, output_device, dim=self.dim)

    def train(self: _Self, mode: bool = True) -> _Self:
        super().train(mode)
        return self

    # --- pickling: torch.save(ddp), copy.deepcopy(ddp) -------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        default = dist.group.WORLD if dist.is_available() and dist.is_initialized() else None
        if self.process_group is not None and self.process_group != default:
            raise RuntimeError("DDP Pickling/Unpickling are only supported when using DDP with the default "
                               "process group. That is, when you have called init_process_group and have not "
                               "passed process_group argument to DDP constructor")
        state = dict(self.__dict__)
        state["process_group"] = None
        for runtime in ("_reducer", "_comm", "_comm_hook", "buffer_hook"):
            state.pop(runtime, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Over the default group (or paisoar's own), without the construction's collectives."""
        # torch.nn.Module.__setstate__ has no annotations: typed here as it is.
        cast(Callable[[dict[str, Any]], None], super().__setstate__)(state)
        self.__dict__.setdefault("require_forward_param_sync", True)
        self.__dict__.setdefault("require_backward_grad_sync", True)
        self._comm_hook = None
        self._comm = _comm.communicator(None)
        self._reducer = self._make_reducer(init_sync=False, sync_buffers=False)

    # --- paisoar's own ---------------------------------------------------------------------

    def reducer_stats(self) -> dict[str, float | int | bool]:
        """The last synchronised backward: backward_s, exposed_comm_s, bytes, buckets, rebuilt."""
        return self._reducer.last_stats()

    def bucket_assignment(self) -> list[list[int]]:
        """Parameter indices (in named_parameters() order, ignored ones left out) of each bucket, in launch order."""
        return self._reducer.bucket_assignment()
