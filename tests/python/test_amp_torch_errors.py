"""paisoar.amp.GradScaler's misuse errors against torch.amp.GradScaler's: the
same call on both in the same process raises the same exception type, with
torch's words in paisoar's message (plus what to do); and the few inputs
paisoar refuses where torch accepts them, each checked against torch."""
import math
import pickle

import pytest
import torch

from paisoar import amp

from amp_twins import mlp


def scaled_backward(scaler, model):
    scaler.scale(model(torch.ones(2, 8)).sum()).backward()


def setup(cls, **kwargs):
    model = mlp()
    return cls("cpu", **kwargs), model, torch.optim.SGD(model.parameters(), lr=0.1)


def step_before_scale(cls):
    scaler, model, opt = setup(cls)
    model(torch.ones(2, 8)).sum().backward()
    scaler.step(opt)


def unscale_before_scale(cls):
    scaler, model, opt = setup(cls)
    model(torch.ones(2, 8)).sum().backward()
    scaler.unscale_(opt)


def update_before_scale(cls):
    setup(cls)[0].update()


def update_without_step(cls):
    scaler, model, opt = setup(cls)
    scaled_backward(scaler, model)
    scaler.update()


def step_without_gradients(cls):
    scaler, model, opt = setup(cls)
    scaler.scale(torch.ones(()))
    scaler.step(opt)


def unscale_twice(cls):
    scaler, model, opt = setup(cls)
    scaled_backward(scaler, model)
    scaler.unscale_(opt)
    scaler.unscale_(opt)


def unscale_after_step(cls):
    scaler, model, opt = setup(cls)
    scaled_backward(scaler, model)
    scaler.step(opt)
    scaler.unscale_(opt)


def step_twice(cls):
    scaler, model, opt = setup(cls)
    scaled_backward(scaler, model)
    scaler.step(opt)
    scaler.step(opt)


def step_with_a_closure(cls):
    scaler, model, opt = setup(cls)
    scaled_backward(scaler, model)
    scaler.step(opt, closure=lambda: 0.0)


def growth_factor_of_one(cls):
    cls("cpu", growth_factor=1.0)


def backoff_factor_of_one(cls):
    cls("cpu", backoff_factor=1.0)


def unscale_fp16_gradients(cls):
    scaler = cls("cpu")
    w = torch.ones(4, dtype=torch.float16, requires_grad=True)
    scaler.scale(w.float().sum()).backward()
    scaler.unscale_(torch.optim.SGD([w], lr=0.1))


def load_an_empty_state(cls):
    cls("cpu").load_state_dict({})


def load_a_state_without_scale(cls):
    state = cls("cpu").state_dict()
    del state["scale"]
    cls("cpu").load_state_dict(state)


def pickle_mid_iteration(cls):
    scaler, model, opt = setup(cls)
    scaled_backward(scaler, model)
    scaler.unscale_(opt)
    pickle.dumps(scaler)


def update_to_a_tensor_that_requires_grad(cls):
    scaler, model, opt = setup(cls)
    scaled_backward(scaler, model)
    scaler.step(opt)
    scaler.update(torch.tensor(2.0, requires_grad=True))


def update_to_two_numbers(cls):
    scaler, model, opt = setup(cls)
    scaled_backward(scaler, model)
    scaler.step(opt)
    scaler.update(torch.tensor([2.0, 4.0]))


def scale_a_number(cls):
    cls("cpu").scale(5)


def scale_a_list_holding_a_number(cls):
    cls("cpu").scale([torch.ones(()), 5])


# (misuse, torch's words that paisoar's message must hold too, paisoar's advice)
CASES = [
    (step_before_scale, "Attempted step", "scaler.scale(loss"),
    (unscale_before_scale, "Attempted unscale_", "scaler.scale(loss"),
    (update_before_scale, "Attempted update", "scaler.scale(loss"),
    (update_without_step, "No inf checks were recorded prior to update", "scaler.step(optimizer)"),
    (step_without_gradients, "No inf checks were recorded for this optimizer", "backward()"),
    (unscale_twice, "unscale_() has already been called on this optimizer since the last update()", "once per step"),
    (unscale_after_step, "unscale_() is being called after step()", "before step(optimizer)"),
    (step_twice, "step() has already been called since the last update()", "scaler.update()"),
    (step_with_a_closure, "Closure use is not currently supported if GradScaler is enabled", "scaler.step(optimizer)"),
    (growth_factor_of_one, "The growth factor must be > 1.0", "growth_factor=1.0"),
    (backoff_factor_of_one, "The backoff factor must be < 1.0", "backoff_factor=1.0"),
    (unscale_fp16_gradients, "Attempting to unscale FP16 gradients", "float32"),
    (load_an_empty_state, "The source state dict is empty", "disabled"),
    (load_a_state_without_scale, "scale", "state_dict()"),
    (pickle_mid_iteration, "A GradScaler instance may only be pickled at the beginning of an iteration", ""),
    (update_to_a_tensor_that_requires_grad, "new_scale should be a float or a 1-element", "requires_grad=True"),
    (update_to_two_numbers, "new_scale should be a float or a 1-element", "Got 2 elements"),
    (scale_a_number, "outputs must be a Tensor or an iterable of Tensors", "got int"),
    (scale_a_list_holding_a_number, "outputs must be a Tensor or an iterable of Tensors", "got int"),
]


def raised(misuse, cls):
    with pytest.raises(Exception) as info:
        misuse(cls)
    return info.value


@pytest.mark.parametrize("misuse, torchs_words, advice", CASES, ids=[c[0].__name__ for c in CASES])
def test_misuse_raises_as_torch(misuse, torchs_words, advice):
    ours, theirs = raised(misuse, amp.GradScaler), raised(misuse, torch.amp.GradScaler)
    assert type(ours) is type(theirs), (f"paisoar raised {type(ours).__name__}: {ours}; "
                                        f"torch {type(theirs).__name__}: {theirs}")
    assert torchs_words in str(theirs), f"torch's message changed: {theirs}"
    assert torchs_words in str(ours) and advice in str(ours), f"paisoar's message: {ours}"


def test_paisoar_refuses_scales_and_intervals_that_stall_training_where_torch_accepts_them():
    # Documented differences (docs/PYTHON.md): a zero, negative or non-finite
    # scale makes every later step skip (or flip), an interval below 1 never grows.
    for bad in (0.0, -1.0, math.inf, math.nan):
        scaler, model, opt = setup(torch.amp.GradScaler)
        scaled_backward(scaler, model)
        scaler.step(opt)
        scaler.update(bad)  # torch accepts it
        scaler, model, opt = setup(amp.GradScaler)
        scaled_backward(scaler, model)
        scaler.step(opt)
        with pytest.raises(ValueError, match="update\\(new_scale\\).*pass a positive finite number"):
            scaler.update(bad)
    torch.amp.GradScaler("cpu", growth_interval=0)
    with pytest.raises(ValueError, match="growth_interval must be >= 1"):
        amp.GradScaler("cpu", growth_interval=0)
    torch.amp.GradScaler("cpu").set_growth_factor(0.5)
    with pytest.raises(ValueError, match="growth_factor must be > 1"):
        amp.GradScaler("cpu").set_growth_factor(0.5)


def test_a_scaler_with_a_process_group_refuses_pickling():
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        scaler = amp.GradScaler("cpu", process_group=dist.group.WORLD)
        with pytest.raises(TypeError, match="cannot be pickled.*state_dict"):
            pickle.dumps(scaler)
    finally:
        dist.destroy_process_group()
