"""paisoar.amp's autocast against torch.autocast (the same dtypes for the
same arguments, whatever the hardware; dtype="auto" as an announced opt-in),
custom_fwd/custom_bwd, the ranks' shared inf/NaN verdict of GradScaler's
process_group, and the precision policy. GradScaler against torch's:
test_amp_torch_parity.py and test_amp_torch_errors.py."""
import warnings

import pytest
import torch

from paisoar import _model_device, amp


def op_dtypes():
    """The dtypes of a matmul, a linear layer and a sum (an fp32 op under autocast)."""
    x = torch.ones(2, 4)
    return (torch.mm(x, x.t()).dtype, torch.nn.functional.linear(x, torch.ones(3, 4)).dtype, x.sum().dtype)


@pytest.mark.parametrize("args, kwargs", [(("cpu",), {}), (("cpu", torch.bfloat16), {}), (("cpu", torch.float16), {}),
                                          (("cpu",), {"enabled": False}), (("cpu",), {"dtype": torch.float16})],
                         ids=["default", "bf16", "fp16", "disabled", "fp16_kw"])
def test_autocast_does_what_torch_autocast_does(args, kwargs):
    with torch.autocast(*args, **kwargs):
        theirs = op_dtypes()
    with amp.autocast(*args, **kwargs):
        ours = op_dtypes()
    assert ours == theirs


def test_autocast_without_a_device_takes_the_models_and_torchs_default_dtype(monkeypatch):
    monkeypatch.setattr(_model_device, "_model_device", "cpu")
    with torch.autocast("cpu"):
        theirs = op_dtypes()
    with amp.autocast():
        assert op_dtypes() == theirs == (torch.bfloat16, torch.bfloat16, torch.float32)
    with amp.autocast("cpu", torch.bfloat16):
        with amp.autocast(False):  # a leading bool is `enabled`
            assert op_dtypes() == (torch.float32,) * 3


def test_auto_dtype_is_an_opt_in_that_says_what_it_chose(monkeypatch):
    monkeypatch.setattr(_model_device, "_said", set())
    fast, dtype, reason = amp.auto_dtype("cpu")
    with pytest.warns(UserWarning, match="dtype='auto'") as said:
        with amp.autocast("cpu", dtype="auto"):
            assert op_dtypes()[0] == (dtype if fast else torch.float32)
    assert reason in str(said[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with amp.autocast("cpu", dtype="auto"):  # said once
            pass
    with pytest.raises(ValueError, match="'fastest'.*torch.dtype, or 'auto'"):
        amp.autocast("cpu", dtype="fastest")


def test_auto_dtype_on_a_cpu_without_bf16_kernels_turns_autocast_off_and_says_so(monkeypatch):
    # The rule's answer on such a CPU (this machine's own answer is tested above).
    monkeypatch.setattr(_model_device, "_said", set())
    monkeypatch.setattr(amp, "auto_dtype", lambda device: (False, torch.float32, "no AVX512-BF16 or AMX"))
    with pytest.warns(UserWarning, match="autocast off, the model runs in float32 \\(no AVX512-BF16 or AMX\\)"):
        with amp.autocast("cpu", dtype="auto"):
            assert op_dtypes() == (torch.float32,) * 3
    with amp.autocast("cpu"):  # without "auto": what it is told, as torch.autocast
        assert op_dtypes()[0] == torch.bfloat16


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


def test_min_scale_is_an_opt_in_floor():
    def overflow_steps(scaler, steps):
        w = torch.ones(4, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for _ in range(steps):
            opt.zero_grad()
            scaler.scale((w * float("inf")).sum()).backward()
            scaler.step(opt)
            scaler.update()
        return scaler.get_scale()

    # Without it, the scale backs off for as long as gradients overflow, as torch's does.
    assert overflow_steps(amp.GradScaler("cpu", init_scale=4.0), 5) == overflow_steps(
        torch.amp.GradScaler("cpu", init_scale=4.0), 5) == 4.0 / 32
    with pytest.raises(RuntimeError, match="fell to 0.5.*after 3 skipped steps.*training is unstable"):
        overflow_steps(amp.GradScaler("cpu", init_scale=4.0, min_scale=1.0), 5)


@pytest.mark.parametrize("backend", ["gloo", "cudaonly"])  # cudaonly: a group without a CPU backend
def test_ranks_agree_on_an_inf_found_by_one_only_when_given_the_group(launch, backend):
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
