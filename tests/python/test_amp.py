"""paisoar.amp against torch.amp: GradScaler step for step (scale, skipped
steps, parameters, state_dict) with inf and NaN gradients injected, the
ranks' shared inf/NaN verdict, the errors of misuse, and autocast's defaults."""
import math

import pytest
import torch

import paisoar
from paisoar import amp


def model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def run(scaler, steps, poison, unscale_first=False, new_scales=None):
    """Trains `steps` steps; at steps in `poison` one gradient becomes inf or
    NaN; at steps in `new_scales` update() is given that scale."""
    model, opt = model_and_optimizer()
    g = torch.Generator().manual_seed(1)
    history = []
    for step in range(steps):
        opt.zero_grad()
        x = torch.randn(4, 8, generator=g)
        loss = model(x).square().mean()
        scaler.scale(loss).backward()
        if step in poison:
            model[0].weight.grad[0, 0] = poison[step]
        if unscale_first:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        before = [p.detach().clone() for p in model.parameters()]
        scaler.step(opt)
        stepped = any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))
        scaler.update((new_scales or {}).get(step))
        history.append((scaler.get_scale(), scaler._get_growth_tracker(),
                        [p.detach().clone() for p in model.parameters()], stepped))
    return history, scaler.state_dict()


@pytest.mark.parametrize("unscale_first", [False, True])
def test_grad_scaler_matches_torch_step_for_step(unscale_first):
    poison = {2: math.inf, 3: -math.inf, 7: math.nan, 8: math.inf}
    kwargs = dict(init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
    ours, our_state = run(amp.GradScaler(**kwargs), 16, poison, unscale_first)
    theirs, their_state = run(torch.amp.GradScaler("cpu", **kwargs), 16, poison, unscale_first)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert a[0] == b[0], f"step {step}: scale {a[0]} vs torch's {b[0]}"
        assert a[1] == b[1], f"step {step}: growth tracker {a[1]} vs torch's {b[1]}"
        assert a[3] == b[3] == (step not in poison), f"step {step}: stepped {a[3]}, torch {b[3]}"
        for p, q in zip(a[2], b[2]):
            assert torch.equal(p, q), f"step {step}: parameters differ from torch's"
    for key in ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"):
        assert our_state[key] == their_state[key], key
    assert our_state["skipped_steps"] == len(poison)


def test_update_with_a_new_scale_matches_torch():
    poison = {2: math.inf, 6: math.nan}
    new_scales = {3: 64.0, 6: 2.0 ** 20, 9: torch.tensor(8.0)}
    ours, _ = run(amp.GradScaler(init_scale=512.0, growth_interval=2), 12, poison, new_scales=new_scales)
    theirs, _ = run(torch.amp.GradScaler("cpu", init_scale=512.0, growth_interval=2), 12, poison,
                    new_scales=new_scales)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert (a[0], a[1], a[3]) == (b[0], b[1], b[3]), f"step {step}: scale, tracker, stepped {a} vs torch's {b}"
        assert all(torch.equal(p, q) for p, q in zip(a[2], b[2])), f"step {step}: parameters differ"
    scaler = amp.GradScaler()
    for bad in (0.0, -1.0, math.inf, torch.tensor([1.0, 2.0])):
        with pytest.raises(ValueError, match="new_scale"):
            scaler.update(bad)


def test_grad_scaler_state_round_trips_through_torchs():
    ours = amp.GradScaler(init_scale=256.0, growth_interval=5)
    theirs = torch.amp.GradScaler("cpu")
    theirs.load_state_dict(run(ours, 7, {1: math.inf})[1])
    assert theirs.get_scale() == ours.get_scale() and theirs._get_growth_tracker() == ours._get_growth_tracker()
    restored = amp.GradScaler()
    restored.load_state_dict(theirs.state_dict())
    assert restored.get_scale() == ours.get_scale()
    assert restored.get_growth_interval() == 5


def test_step_before_backward_says_what_to_do():
    model, opt = model_and_optimizer()
    scaler = amp.GradScaler()
    with pytest.raises(ValueError, match=r"scaler.scale\(loss\).backward\(\)"):
        scaler.step(opt)


def test_unscale_twice_and_bad_arguments_raise():
    model, opt = model_and_optimizer()
    scaler = amp.GradScaler()
    scaler.scale(model(torch.ones(1, 8)).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already called"):
        scaler.unscale_(opt)
    with pytest.raises(ValueError, match="growth_factor"):
        amp.GradScaler(growth_factor=0.5)
    with pytest.raises(TypeError, match="tensor"):
        scaler.scale("loss")


def test_disabled_scaler_passes_through():
    model, opt = model_and_optimizer()
    scaler = amp.GradScaler(enabled=False)
    loss = model(torch.ones(2, 8)).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    before = model[0].weight.detach().clone()
    scaler.step(opt)
    scaler.update()
    assert not torch.equal(before, model[0].weight) and scaler.get_scale() == 1.0 and scaler.state_dict() == {}


def test_autocast_follows_the_auto_rule_and_explicit_dtypes():
    fast, dtype, reason = amp.auto_dtype("cpu")
    with amp.autocast(device_type="cpu"):
        y = torch.nn.functional.linear(torch.ones(2, 4), torch.ones(3, 4))
    assert y.dtype == (dtype if fast else torch.float32), reason
    with amp.autocast(device_type="cpu", dtype=torch.bfloat16):
        assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.bfloat16
        with amp.autocast(enabled=False, device_type="cpu"):
            assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.float32


def test_autocast_takes_torchs_argument_order_and_a_leading_bool():
    with amp.autocast("cpu", torch.bfloat16):
        assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.bfloat16
    with amp.autocast("cpu", torch.bfloat16):
        with amp.autocast(False):
            assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.float32


def test_scaler_state_before_the_first_step_joins_no_group():
    scaler = amp.GradScaler(init_scale=512.0)
    assert scaler.get_scale() == 512.0 and scaler.state_dict()["scale"] == 512.0
    scaler.load_state_dict({"scale": 64.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                            "growth_interval": 10, "_growth_tracker": 3})
    assert scaler.get_scale() == 64.0 and scaler._scaler is None
    model, opt = model_and_optimizer()
    scaler.scale(model(torch.ones(1, 8)).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 64.0 and scaler._get_growth_tracker() == 4


def test_custom_fwd_runs_the_function_in_fp32_under_autocast():
    class Square(torch.autograd.Function):
        @staticmethod
        @amp.custom_fwd(cast_inputs=torch.float32, device_type="cpu")
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.ones(3, dtype=torch.bfloat16, requires_grad=True)
    with amp.autocast(device_type="cpu", dtype=torch.bfloat16):
        y = Square.apply(x)
    assert y.dtype == torch.float32
    y.sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0, dtype=torch.bfloat16))


@pytest.mark.parametrize("backend", ["gloo", "cudaonly"])  # cudaonly: a group without a CPU backend
def test_ranks_agree_on_an_inf_found_by_one(launch, backend):
    out = launch("scaler_verdict.py", backend)
    assert out.count(f"SCALER-VERDICT {backend} OK") == 2, out


def test_precision_policy_pins_modules_by_name():
    model = torch.nn.Sequential()
    model.add_module("body", torch.nn.Linear(4, 8))
    model.add_module("head", torch.nn.Linear(8, 2))
    outputs = {}
    for name in ("body", "head"):
        getattr(model, name).register_forward_hook(lambda m, i, o, name=name: outputs.__setitem__(name, o.dtype))
    assert amp.precision_policy(model, {"fp32": ["head"]}, device_type="cpu") == {"head": "fp32"}
    with amp.autocast(device_type="cpu", dtype=torch.bfloat16):
        y = model(torch.ones(3, 4))
    assert outputs == {"body": torch.bfloat16, "head": torch.float32} and y.dtype == torch.float32
    amp.remove_precision_policy(model)
    with amp.autocast(device_type="cpu", dtype=torch.bfloat16):
        assert model(torch.ones(3, 4)).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="'tail' matches no module"):
        amp.precision_policy(model, {"fp32": ["tail"]})
    with pytest.raises(ValueError, match="fp8"):
        amp.precision_policy(model, {"fp8": ["head"]})
