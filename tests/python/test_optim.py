"""paisoar.optim: LARS and LAMB against their formulas (as in the C++ tests),
state_dict resume bit for bit, WarmupDecay against its formula and as a torch
LR scheduler, and bad arguments."""
import io
import math

import pytest
import torch

from paisoar import optim


def params():
    torch.manual_seed(0)
    return [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(3))]


def grads(step):
    g = torch.Generator().manual_seed(step)
    return [torch.randn(4, 3, generator=g), torch.randn(3, generator=g)]


def run(make, steps, start=None):
    ps = params()
    opt = make(ps)
    if start is not None:
        for p, saved in zip(ps, start[0]):
            p.data.copy_(saved)
        opt.load_state_dict(start[1])
    first = 0 if start is None else start[2]
    for step in range(first, first + steps):
        for p, g in zip(ps, grads(step)):
            p.grad = g.clone()
        opt.step()
    return ps, opt


def test_lars_follows_its_formula():
    lr, mom, wd, eta = 0.1, 0.9, 1e-4, 0.001
    ps, _ = run(lambda p: optim.LARS(p, lr=lr, momentum=mom, weight_decay=wd, eta=eta), 3)
    w, b = params()
    vw, vb = torch.zeros_like(w), torch.zeros_like(b)
    for step in range(3):
        gw, gb = grads(step)
        d = gw + wd * w
        trust = eta * w.norm() / (gw.norm() + wd * w.norm() + 1e-9)
        vw = mom * vw + lr * trust * d
        w = w - vw
        vb = mom * vb + lr * gb  # 1-D: exempt from decay and the trust ratio
        b = b - vb
    assert torch.allclose(ps[0], w, rtol=1e-6, atol=1e-7) and torch.allclose(ps[1], b, rtol=1e-6, atol=1e-7)


def test_lamb_follows_its_formula():
    lr, (b1, b2), eps, wd = 0.01, (0.9, 0.999), 1e-6, 0.01
    ps, _ = run(lambda p: optim.LAMB(p, lr=lr, weight_decay=wd), 3)
    w = params()[0]
    m, v = torch.zeros_like(w), torch.zeros_like(w)
    for step in range(3):
        g = grads(step)[0]
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        t = step + 1
        r = (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps) + wd * w
        w = w - lr * (w.norm() / r.norm()) * r
    assert torch.allclose(ps[0], w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [lambda p: optim.LARS(p, lr=0.1, weight_decay=1e-4),
                                  lambda p: optim.LAMB(p, lr=0.01)])
def test_state_dict_resumes_bit_for_bit(make):
    whole, _ = run(make, 5)
    half, opt = run(make, 3)
    state = (([p.detach().clone() for p in half]), opt.state_dict(), 3)
    resumed, _ = run(make, 2, start=state)
    for a, b in zip(whole, resumed):
        assert torch.equal(a, b)


def test_warmup_cosine_follows_its_formula_as_a_torch_scheduler():
    opt = optim.LARS([torch.nn.Parameter(torch.ones(2))], lr=0.4)
    schedule = optim.WarmupDecay(opt, warmup_steps=4, total_steps=20, decay="cosine", final_factor=0.1)
    seen = []
    for _ in range(22):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    for step, lr in enumerate(seen):
        f = step / 4 if step < 4 else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(step - 4, 16) / 16))
        assert lr == pytest.approx(0.4 * f, rel=1e-12, abs=1e-15), step
    saved = io.BytesIO()
    torch.save(schedule.state_dict(), saved)  # plain numbers: torch.save and weights_only loading take it
    saved.seek(0)
    resumed = optim.WarmupDecay(opt, warmup_steps=4, total_steps=20, decay="cosine", final_factor=0.1)
    resumed.load_state_dict(torch.load(saved, weights_only=True))
    assert resumed.last_epoch == schedule.last_epoch


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="total_steps"):
        optim.WarmupDecay(optim.LAMB([torch.nn.Parameter(torch.ones(1))]), warmup_steps=5, decay="cosine")
    with pytest.raises(ValueError, match="decay='linear'"):
        optim.WarmupDecay(optim.LAMB([torch.nn.Parameter(torch.ones(1))]), decay="linear")
    with pytest.raises(ValueError, match="betas"):
        optim.LAMB([torch.nn.Parameter(torch.ones(1))], betas=(0.9, 1.5))
    assert optim.scaled_lr(0.1, 1024, 256) == pytest.approx(0.4)
