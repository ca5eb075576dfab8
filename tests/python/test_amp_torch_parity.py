"""paisoar.amp.GradScaler against torch.amp.GradScaler in the same process,
one test per behaviour of torch's documented API: twin runs from the same
seeds (amp_twins.py) compared bit for bit after every step (scale, growth
tracker, whether the optimizer stepped, parameters, optimizer state)."""
import copy
import math
import pickle
import warnings

import pytest
import torch

from paisoar import amp

from amp_twins import assert_same, loss_of, mlp, run_twins

FP32_MAX_1E38 = 9.999999680285692e+37  # 1e38 as a float32


def poisoned_step(poison, unscale_and_clip=False):
    """A step that makes one gradient poison[i] (inf or NaN) at the steps in `poison`."""
    def step(scaler, models, opts, i, g):
        model, opt = models[0], opts[0]
        opt.zero_grad()
        scaler.scale(loss_of(model, g)).backward()
        if i in poison:
            model[0].weight.grad[0, 0] = poison[i]
        if unscale_and_clip:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        scaler.step(opt)
    return step


@pytest.mark.parametrize("unscale_and_clip", [False, True], ids=["step", "unscale_clip_step"])
def test_inf_and_nan_steps_are_skipped_as_torch_skips_them(unscale_and_clip):
    poison = {2: math.inf, 3: -math.inf, 7: math.nan, 8: math.inf}
    # 1000 is no power of two: the unscaling reciprocal rounds, as torch's must.
    runs = run_twins(poisoned_step(poison, unscale_and_clip), 16,
                     scaler_args=dict(init_scale=1000.0, growth_interval=3))
    assert_same(runs)
    assert [r["stepped"] for r in runs["paisoar"]] == [i not in poison for i in range(16)]


def test_the_scale_stays_a_float32_below_its_maximum():
    # 1e38 * 16 is past float32's maximum: torch keeps 1e38 (as a float32) and steps every time.
    runs = run_twins(poisoned_step({}), 5, scaler_args=dict(init_scale=1e38, growth_factor=16.0, growth_interval=1))
    assert_same(runs)
    assert [r["scale"] for r in runs["paisoar"]] == [FP32_MAX_1E38] * 5
    assert all(r["stepped"] for r in runs["paisoar"])


def test_get_scale_is_the_number_given_until_a_loss_is_scaled_then_its_float32():
    for cls in (amp.GradScaler, torch.amp.GradScaler):
        scaler = cls("cpu", init_scale=0.1)
        assert scaler.get_scale() == 0.1, cls
        scaler.scale(torch.ones(()))
        assert scaler.get_scale() == 0.10000000149011612, cls


def test_update_with_a_new_scale_as_torch():
    new_scales = {3: 64.0, 6: 2.0 ** 20, 9: torch.tensor(8.0)}

    def step(scaler, models, opts, i, g):
        poisoned_step({2: math.inf, 6: math.nan})(scaler, models, opts, i, g)
        scaler.update(new_scales.get(i))
        return True

    assert_same(run_twins(step, 12, scaler_args=dict(init_scale=512.0, growth_interval=2)))


def test_getters_and_setters_mid_run_as_torch():
    def step(scaler, models, opts, i, g):
        poisoned_step({1: math.inf, 5: math.inf})(scaler, models, opts, i, g)
        if i == 3:
            scaler.set_growth_factor(4.0)
            scaler.set_backoff_factor(0.25)
            scaler.set_growth_interval(1)
        assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (
            (2.0, 0.5, 2) if i < 3 else (4.0, 0.25, 1))
        assert scaler.is_enabled()

    assert_same(run_twins(step, 9, scaler_args=dict(init_scale=64.0, growth_interval=2)))


def test_several_models_losses_and_optimizers_as_torch():
    # torch's AMP example "multiple models, losses and optimizers".
    def make_models():
        return [mlp(), torch.nn.Sequential(torch.nn.Linear(8, 3))]

    def make_opts(models):
        return [torch.optim.SGD(models[0].parameters(), lr=0.05), torch.optim.Adam(models[1].parameters(), lr=0.01)]

    def step(scaler, models, opts, i, g):
        for opt in opts:
            opt.zero_grad()
        x = torch.randn(4, 8, generator=g)
        out0, out1 = models[0](x), models[1](x)
        loss0 = (2 * out0 + 3 * out1).square().mean()
        loss1 = (3 * out0 - 5 * out1).abs().mean()
        scaler.scale(loss0).backward(retain_graph=True)
        scaler.scale(loss1).backward()
        if i == 2:
            models[1][0].bias.grad[0] = math.inf  # only the second optimizer's gradients
        scaler.unscale_(opts[0])
        scaler.step(opts[0])
        scaler.step(opts[1])

    runs = run_twins(step, 7, make_models=make_models, make_opts=make_opts,
                     scaler_args=dict(init_scale=256.0, growth_interval=2))
    assert_same(runs)
    assert runs["paisoar"][2]["scale"] == runs["paisoar"][1]["scale"] / 2  # backed off for the second's inf


def test_gradient_penalty_as_torch():
    # torch's AMP example: the penalty from unscaled autograd.grad of the scaled loss.
    def step(scaler, models, opts, i, g):
        model, opt = models[0], opts[0]
        opt.zero_grad()
        loss = loss_of(model, g)
        scaled = torch.autograd.grad(scaler.scale(loss), model.parameters(), create_graph=True)
        inv_scale = 1.0 / scaler.get_scale()
        norm = sum((s * inv_scale).pow(2).sum() for s in scaled).sqrt()
        scaler.scale(loss + norm).backward()
        if i == 3:
            model[2].weight.grad[1, 1] = math.nan
        scaler.step(opt)

    assert_same(run_twins(step, 6, scaler_args=dict(init_scale=128.0, growth_interval=2)))


def test_accumulated_gradients_as_torch():
    def step(scaler, models, opts, i, g):
        model, opt = models[0], opts[0]
        opt.zero_grad()
        for _ in range(3):
            scaler.scale(loss_of(model, g) / 3).backward()
        scaler.step(opt)

    assert_same(run_twins(step, 5, scaler_args=dict(init_scale=4096.0, growth_interval=2)))


def embedding_models():
    torch.manual_seed(0)
    return [torch.nn.Embedding(10, 4, sparse=True)]


@pytest.mark.parametrize("optimizer", ["SGD", "SparseAdam"])
def test_sparse_gradients_as_torch(optimizer):
    # Repeated indices make an uncoalesced sparse gradient: torch checks its values as they are.
    def make_opts(models):
        cls = getattr(torch.optim, optimizer)
        return [cls(models[0].parameters(), lr=0.1)]

    def step(scaler, models, opts, i, g):
        opts[0].zero_grad()
        idx = torch.randint(0, 10, (12,), generator=g)
        scaler.scale(models[0](idx).square().sum()).backward()
        grad = models[0].weight.grad
        assert grad.is_sparse and not grad.is_coalesced()
        if i == 2:
            grad._values()[0, 0] = math.inf
        scaler.step(opts[0])

    runs = run_twins(step, 5, make_models=embedding_models, make_opts=make_opts,
                     scaler_args=dict(init_scale=64.0, growth_interval=2))
    assert_same(runs)
    assert [r["stepped"] for r in runs["paisoar"]] == [True, True, False, True, True]


def test_gradients_of_several_dtypes_as_torch():
    # bf16, fp32 and fp64 parameters: one fused unscale per dtype, one found_inf for all.
    class Mixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.a = torch.nn.Parameter(torch.randn(8, dtype=torch.bfloat16))
            self.b = torch.nn.Parameter(torch.randn(8))
            self.c = torch.nn.Parameter(torch.randn(8, dtype=torch.float64))

        def forward(self, x):
            return (x * self.a.float() * self.b * self.c.float()).square().mean()

    def step(scaler, models, opts, i, g):
        opts[0].zero_grad()
        scaler.scale(models[0](torch.randn(4, 8, generator=g))).backward()
        if i == 3:
            models[0].c.grad[2] = math.inf
        scaler.step(opts[0])

    runs = run_twins(step, 6, make_models=lambda: [Mixed()], scaler_args=dict(init_scale=32.0, growth_interval=2))
    assert_same(runs)
    assert not runs["paisoar"][3]["stepped"]


@pytest.mark.parametrize("optimizer", ["Adam", "AdamW"])
@pytest.mark.parametrize("unscale_first", [False, True], ids=["step", "unscale_step"])
def test_fused_optimizers_as_torch(optimizer, unscale_first):
    # Fused Adam(W) has _step_supports_amp_scaling: it unscales inside its kernel
    # from grad_scale and skips on found_inf; unscale_ first leaves grad_scale None.
    def make_opts(models):
        opt = getattr(torch.optim, optimizer)(models[0].parameters(), lr=0.01, fused=True)
        assert opt._step_supports_amp_scaling
        return [opt]

    def step(scaler, models, opts, i, g):
        poisoned_step({2: math.inf, 5: math.nan}, unscale_and_clip=unscale_first)(scaler, models, opts, i, g)

    # Not a power of two: dividing in the kernel and multiplying by the
    # reciprocal beforehand round differently, so the protocol shows in the bits.
    runs = run_twins(step, 8, make_opts=make_opts, scaler_args=dict(init_scale=1000.0, growth_interval=2))
    assert_same(runs)
    assert [r["stepped"] for r in runs["paisoar"]] == [i not in (2, 5) for i in range(8)]


class _Recording(torch.optim.SGD):
    """An optimizer that handles amp scaling itself and records what the scaler gave it."""
    _step_supports_amp_scaling = True

    def step(self, closure=None):
        self.seen = (self.grad_scale, self.found_inf.clone())


def test_step_supports_amp_scaling_gets_grad_scale_and_found_inf_as_torch():
    seen = {}
    for name, cls in (("paisoar", amp.GradScaler), ("torch", torch.amp.GradScaler)):
        model = mlp()
        opt = _Recording(model.parameters(), lr=0.1)
        scaler = cls("cpu", init_scale=8.0)
        got = []
        for i in range(3):
            opt.zero_grad()
            scaler.scale(model(torch.ones(2, 8)).sum()).backward()
            if i == 1:
                model[0].bias.grad[0] = math.inf
            if i == 2:
                opt.grad_scale = torch.tensor(3.0)  # set by the user: torch multiplies it in
            scaler.step(opt)
            got.append((type(opt.seen[0]), float(opt.seen[0]), opt.seen[0].dtype, opt.seen[1].item(),
                        opt.seen[1].dtype))
            assert not hasattr(opt, "grad_scale") and not hasattr(opt, "found_inf"), "left on the optimizer"
            scaler.update()
        seen[name] = got
    assert seen["paisoar"] == seen["torch"]
    assert [s[1] for s in seen["torch"]] == [8.0, 8.0, 12.0] and [s[3] for s in seen["torch"]] == [0.0, 1.0, 0.0]


def test_an_optimizer_taking_grad_scaler_gets_the_scaler_as_torch():
    class TakesScaler(torch.optim.SGD):
        _step_supports_amp_scaling = True

        def step(self, closure=None, *, grad_scaler=None):
            # What such optimizers call: torch's private protocol of the scaler.
            found = grad_scaler._check_inf_per_device(self)
            self.seen = (hasattr(self, "grad_scale"), grad_scaler._get_scale_async().item(),
                         {d.type: t.item() for d, t in found.items()},
                         {d.type: t.item() for d, t in grad_scaler._found_inf_per_device(self).items()})

    seen = {}
    for name, cls in (("paisoar", amp.GradScaler), ("torch", torch.amp.GradScaler)):
        model = mlp()
        opt = TakesScaler(model.parameters(), lr=0.1)
        scaler = cls("cpu", init_scale=4.0)
        got = []
        for i in range(2):
            opt.zero_grad()
            scaler.scale(model(torch.ones(2, 8)).sum()).backward()
            if i == 1:
                model[2].weight.grad[0, 0] = math.nan
            with pytest.warns(FutureWarning, match="stop passing itself"):
                scaler.step(opt)
            scaler.update()
            got.append((opt.seen, scaler.get_scale()))
        seen[name] = got
    assert seen["paisoar"] == seen["torch"]
    assert seen["torch"][1][0][2] == {"cpu": 1.0}


@pytest.mark.parametrize("loss", [torch.tensor(3.0, dtype=torch.float16), torch.tensor([3.0], dtype=torch.float16),
                                  torch.ones(2, dtype=torch.float16), torch.tensor(3.0, dtype=torch.bfloat16),
                                  torch.tensor(3.0, dtype=torch.float64), torch.ones(2, 2)],
                         ids=["fp16_0dim", "fp16_1", "fp16_2", "bf16_0dim", "fp64_0dim", "fp32_2x2"])
def test_scale_of_a_tensor_has_torchs_dtype_shape_and_value(loss):
    ours, theirs = amp.GradScaler("cpu").scale(loss), torch.amp.GradScaler("cpu").scale(loss)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    assert torch.equal(ours, theirs)


def test_an_fp16_loss_is_scaled_to_fp32_without_overflow():
    scaled = amp.GradScaler("cpu").scale(torch.tensor(3.0, dtype=torch.float16))
    assert scaled.dtype == torch.float32 and scaled.item() == 196608.0


def test_scale_takes_any_iterable_as_torch():
    t = [torch.tensor(1.5), torch.ones(2)]
    for cls in (amp.GradScaler, torch.amp.GradScaler):
        scaler = cls("cpu", init_scale=4.0)
        mapped = scaler.scale(x for x in t)
        assert not isinstance(mapped, (list, tuple)), cls  # a lazy map, as torch's
        assert [v.tolist() for v in mapped] == [6.0, [4.0, 4.0]], cls
        nested = scaler.scale((t[0], [t[1], (t[0],)]))
        assert isinstance(nested, tuple) and isinstance(nested[1], list) and isinstance(nested[1][1], tuple), cls
        assert nested[1][1][0].item() == 6.0, cls


def test_disabled_scalers_pass_everything_through_as_torch():
    for cls in (amp.GradScaler, torch.amp.GradScaler):
        scaler = cls("cpu", enabled=False, growth_factor=0.5)  # no checks when disabled
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(torch.ones(2, 8)).sum()
        assert scaler.scale(loss) is loss, cls
        loss.backward()
        before = model[0].weight.detach().clone()
        scaler.unscale_(opt)
        assert scaler.step(opt) is None and not torch.equal(before, model[0].weight), cls
        scaler.update()
        scaler.load_state_dict({})
        assert (scaler.get_scale(), scaler._get_growth_tracker(), scaler.state_dict(), scaler.is_enabled()) == (
            1.0, 0, {}, False), cls


@pytest.mark.parametrize("first, second", [(torch.amp.GradScaler, amp.GradScaler),
                                           (amp.GradScaler, torch.amp.GradScaler)],
                         ids=["torch_into_paisoar", "paisoar_into_torch"])
def test_state_dict_loads_across_the_two_mid_run(first, second):
    # One run starts with `first` and goes on after step 4 with a fresh
    # `second` that loaded its state; the reference is torch's throughout.
    def between(name, scaler, i):
        if name != "paisoar" or i != 4:
            return None
        fresh = second("cpu", init_scale=1.0, growth_interval=99)
        fresh.load_state_dict(scaler.state_dict())
        assert fresh.state_dict() == scaler.state_dict()
        return fresh

    runs = run_twins(poisoned_step({1: math.inf, 6: math.nan}), 10, between=between,
                     scalers={"paisoar": first, "torch": torch.amp.GradScaler},
                     scaler_args=dict(init_scale=256.0, growth_interval=2))
    assert_same(runs)


def test_state_dict_has_torchs_keys_and_values():
    states = []
    for cls in (amp.GradScaler, torch.amp.GradScaler):
        scaler = cls("cpu", init_scale=2.0 ** 10, growth_interval=3)
        states.append(scaler.state_dict())
        scaler.scale(torch.ones(()))
        states.append(scaler.state_dict())
    assert states[0] == states[2] and states[1] == states[3]
    assert [type(v) for v in states[1].values()] == [type(v) for v in states[3].values()]


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_pickled_scaler_continues_as_torchs(how):
    def between(name, scaler, i):
        if i in (2, 5):
            return pickle.loads(pickle.dumps(scaler)) if how == "pickle" else copy.deepcopy(scaler)
        return None

    assert_same(run_twins(poisoned_step({3: math.inf}), 8, between=between,
                          scaler_args=dict(init_scale=128.0, growth_interval=2)))


def test_the_device_argument_as_torch():
    # A 'cuda' scaler without CUDA disables itself with a warning, as torch's does.
    assert not torch.cuda.is_available(), "this test is for a machine without CUDA"
    for cls in (amp.GradScaler, torch.amp.GradScaler):
        with pytest.warns(UserWarning, match="CUDA is not available"):
            scaler = cls("cuda")
        assert not scaler.is_enabled(), cls
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert cls("cpu").is_enabled(), cls
    # update(new_scale) takes a tensor only on the scaler's device type (here 'cpu', not 'meta').
    for cls in (amp.GradScaler, torch.amp.GradScaler):
        scaler = cls("cpu")
        scaler.scale(torch.ones(()))
        with pytest.raises(AssertionError, match="new_scale should be a float"):
            scaler.update(torch.tensor(2.0, device="meta"))


def test_no_device_is_paisoars_choice_and_says_so_once(monkeypatch):
    from paisoar import _model_device

    monkeypatch.setattr(_model_device, "_said", set())
    monkeypatch.setattr(_model_device, "_model_device", "cpu")
    with pytest.warns(UserWarning, match="no device given, so it scales for 'cpu'"):
        assert amp.GradScaler().is_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        amp.GradScaler()  # once
