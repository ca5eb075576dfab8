"""paisoar.DistributedDataParallel on 2 launched ranks against torch's DDP
(see ranks/ddp_equivalence.py for each mode's tolerance), and its errors:
each raised on every rank, as a Python exception that says what to do."""
import pytest
import torch

import paisoar


@pytest.mark.parametrize("mode", ["plain", "no_sync", "own_group", "gloo", "fp16", "bf16", "int8", "powersgd",
                                  "hook", "subgroup"])
def test_matches_torch_ddp(launch, mode):
    out = launch("ddp_equivalence.py", mode, nproc=3 if mode == "subgroup" else 2)
    assert out.count(f"DDP-EQUIVALENCE {mode} OK") == 2, out


@pytest.mark.parametrize("mode", ["grad_sync_flag", "pickle", "deepcopy", "reassigned_buffer", "forward_sync_off",
                                  "undefined_grad", "unused_output", "user_hook", "powersgd_hook", "post_localsgd",
                                  "join", "ignored", "static_graph", "unused_error"])
def test_behaves_as_torch_ddp(launch, mode):
    out = launch("ddp_torch_parity.py", mode)
    assert out.count(f"DDP-PARITY {mode} OK") == 2, out


def test_models_that_differ_across_ranks_fail_on_every_rank(launch):
    out = launch("ddp_errors.py", "mismatch")
    assert out.count("DDP-ERRORS mismatch OK") == 2, out


def test_a_process_group_that_does_not_serve_the_device_is_refused():
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore, _create_fake_pg

    # A backend for CUDA only, as NCCL is: a CPU module cannot use it.
    if "cudaonly" not in dist.Backend.backend_list:
        dist.Backend.register_backend("cudaonly", _create_fake_pg, extended_api=True, devices=["cuda"])
    dist.init_process_group("cudaonly", store=FakeStore(), rank=0, world_size=2)
    try:
        with pytest.raises(ValueError, match=r"has no backend for cpu.*init_process_group\(backend='gloo'\)"):
            paisoar.DistributedDataParallel(torch.nn.Linear(4, 2))
    finally:
        dist.destroy_process_group()


def test_device_ids_for_a_cpu_module_are_refused():
    with pytest.raises(ValueError, match="device_ids and output_device arguments only work with .* CUDA module"):
        paisoar.DistributedDataParallel(torch.nn.Linear(4, 2), device_ids=[0])


@pytest.fixture
def one_rank_group():
    """A 1-rank gloo group: torch's DDP needs one to be built at all."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_a_module_without_parameters_is_refused_as_torch_refuses_it(one_rank_group):
    for ddp in (torch.nn.parallel.DistributedDataParallel, paisoar.DistributedDataParallel):
        with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
            ddp(torch.nn.ReLU())
    with pytest.raises(TypeError, match="torch.nn.Module"):
        paisoar.DistributedDataParallel(lambda x: x)


@pytest.mark.parametrize("argument, value", [("delay_all_reduce_named_params", [("w", None)]),
                                             ("skip_all_reduce_unused_params", True),
                                             ("batched_grad_copy", True)])
def test_torch_arguments_paisoar_cannot_honour_are_refused_by_name(argument, value):
    extra = {"param_to_hook_all_reduce": torch.nn.Linear(1, 1)} if argument.startswith("delay") else {}
    with pytest.raises(NotImplementedError, match=f"DistributedDataParallel\\({argument}=.*; "):
        paisoar.DistributedDataParallel(torch.nn.Linear(4, 2), **{argument: value}, **extra)


def test_broadcast_buffers_warns_as_torch_does(one_rank_group):
    for ddp in (torch.nn.parallel.DistributedDataParallel, paisoar.DistributedDataParallel):
        with pytest.warns(FutureWarning, match="`broadcast_buffers` is deprecated"):
            model = ddp(torch.nn.Linear(4, 2), broadcast_buffers=False)
        assert model.forward_sync_buffers is False and model.broadcast_buffers is False
        with pytest.warns(FutureWarning, match="Both `broadcast_buffers` and `forward_sync_buffers`"):
            ddp(torch.nn.Linear(4, 2), broadcast_buffers=False, forward_sync_buffers=True)


def test_unknown_compression_and_hooks_are_refused():
    with pytest.raises(ValueError, match="gradient_compression"):
        paisoar.DistributedDataParallel(torch.nn.Linear(2, 2), gradient_compression="zip")


def test_one_rank_ddp_trains_like_the_bare_module():
    torch.manual_seed(0)
    bare = torch.nn.Linear(4, 2)
    wrapped = paisoar.DistributedDataParallel(torch.nn.Linear(4, 2))
    wrapped.module.load_state_dict(bare.state_dict())
    x = torch.randn(8, 4)
    for m in (bare, wrapped):
        m(x).square().sum().backward()
    assert torch.allclose(bare.weight.grad, wrapped.module.weight.grad, atol=0, rtol=0)
    # torch's hooks talk over a torch.distributed group; paisoar's own group is not one.
    with pytest.raises(RuntimeError, match="init_process_group first, or use paisoar's gradient_compression"):
        wrapped.register_comm_hook(None, lambda state, bucket: bucket)
