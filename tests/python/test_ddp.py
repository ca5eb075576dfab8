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
    with pytest.raises(ValueError, match="device_ids must be None for a module on the CPU"):
        paisoar.DistributedDataParallel(torch.nn.Linear(4, 2), device_ids=[0])


def test_a_module_without_parameters_is_refused():
    with pytest.raises(ValueError, match="no parameter that requires grad"):
        paisoar.DistributedDataParallel(torch.nn.ReLU())
    with pytest.raises(TypeError, match="torch.nn.Module"):
        paisoar.DistributedDataParallel(lambda x: x)


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
    with pytest.raises(NotImplementedError, match="fp16_compress_hook"):
        wrapped.register_comm_hook(None, lambda state, bucket: bucket)
