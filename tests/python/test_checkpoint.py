"""paisoar.checkpoint: modules matched by name keep fewer activations (counted
through autograd's saved-tensor hooks), gradients equal the unwrapped model's,
nested matches wrap the outermost module, and an unmatched pattern is named."""
import pytest
import torch

from paisoar import checkpoint


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Linear(32, 64)
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64)) for _ in range(4))
        self.head = torch.nn.Linear(64, 3)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def saved_bytes_and_grads(model, x):
    saved = []

    def pack(t):
        saved.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(x).square().mean()
    loss.backward()
    return sum(saved), [p.grad.clone() for p in model.parameters()]


def test_matched_blocks_save_less_and_give_the_same_gradients():
    torch.manual_seed(0)
    model, x = Net(), torch.randn(16, 32)
    plain_bytes, plain_grads = saved_bytes_and_grads(model, x)
    model.zero_grad()
    assert checkpoint.apply(model, ["blocks.*"]) == [f"blocks.{i}" for i in range(4)]
    ckpt_bytes, ckpt_grads = saved_bytes_and_grads(model, x)
    assert ckpt_bytes < plain_bytes / 2, (ckpt_bytes, plain_bytes)
    for a, b in zip(plain_grads, ckpt_grads):
        assert torch.allclose(a, b, rtol=0, atol=0)
    checkpoint.remove(model)
    model.zero_grad()
    assert saved_bytes_and_grads(model, x)[0] == plain_bytes


def test_outermost_match_wins_and_unknown_patterns_are_named():
    model = Net()
    assert checkpoint.apply(model, ["blocks*"]) == [f"blocks.{i}" for i in range(4)]
    assert checkpoint.apply(model, ["blocks.1", "blocks.1.0"]) == ["blocks.1"]
    with pytest.raises(ValueError, match="'layer\\*' matches no module.*blocks.0"):
        checkpoint.apply(model, ["layer*"])


def test_checkpointing_and_precision_pins_stack_and_undo_separately():
    from paisoar import amp

    model = Net()
    checkpoint.apply(model, ["head"])
    amp.precision_policy(model, {"fp32": ["head"]}, device_type="cpu")
    checkpoint.remove(model)
    with amp.autocast(device_type="cpu", dtype=torch.bfloat16):
        assert model(torch.randn(2, 32)).dtype == torch.float32  # the pin survived
    amp.remove_precision_policy(model)
    assert "forward" not in vars(model.head)
