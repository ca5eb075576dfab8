"""Twin runs for the GradScaler parity tests: the same training loop with
paisoar.amp.GradScaler and with torch.amp.GradScaler, on models and data from
the same seeds, recording after every step what torch's scaler exposes (scale,
growth tracker) with the parameters and the optimizer state, and the check
that the two records are bit-equal."""
import torch

from paisoar import amp

SCALERS = {"paisoar": amp.GradScaler, "torch": torch.amp.GradScaler}


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def optimizer_state(opt):
    """Each parameter's state, tensors cloned."""
    return [{k: v.clone() if torch.is_tensor(v) else v for k, v in opt.state[p].items()}
            for group in opt.param_groups for p in group["params"]]


def record(scaler, models, opts, stepped):
    return {"scale": scaler.get_scale(), "tracker": scaler._get_growth_tracker(), "stepped": stepped,
            "params": [p.detach().clone() for m in models for p in m.parameters()],
            "state": [s for o in opts for s in optimizer_state(o)]}


def params_changed(before, models):
    return any(not torch.equal(b, p) for b, p in zip(before, (p for m in models for p in m.parameters())))


def run_twins(step, steps, *, make_models=lambda: [mlp()], make_opts=None, scaler_args=None, between=None,
              scalers=None):
    """{"paisoar": [...], "torch": [...]}: per step, record() after
    step(scaler, models, opts, i, generator) and scaler.update() (which step
    may call itself and return True). `between(name, scaler, i)` may replace
    the scaler after a step (pickling, state_dict loading). `scalers` names
    the class each run starts with (default: SCALERS)."""
    make_opts = make_opts or (lambda models: [torch.optim.SGD(models[0].parameters(), lr=0.05, momentum=0.9)])
    runs = {}
    for name, cls in (scalers or SCALERS).items():
        models = make_models()
        opts = make_opts(models)
        scaler = cls("cpu", **(scaler_args or {}))
        g = torch.Generator().manual_seed(1)
        history = []
        for i in range(steps):
            before = [p.detach().clone() for m in models for p in m.parameters()]
            if not step(scaler, models, opts, i, g):
                scaler.update()
            history.append(record(scaler, models, opts, params_changed(before, models)))
            if between is not None:
                scaler = between(name, scaler, i) or scaler
        runs[name] = history
    return runs


def assert_same(runs):
    """paisoar's record equals torch's at every step, bit for bit."""
    for i, (ours, theirs) in enumerate(zip(runs["paisoar"], runs["torch"], strict=True)):
        for key in ("scale", "tracker", "stepped"):
            assert ours[key] == theirs[key], f"step {i}: {key} {ours[key]} vs torch's {theirs[key]}"
        for k, (p, q) in enumerate(zip(ours["params"], theirs["params"], strict=True)):
            assert p.dtype == q.dtype and torch.equal(p, q), f"step {i}: parameter {k} differs from torch's"
        for k, (s, t) in enumerate(zip(ours["state"], theirs["state"], strict=True)):
            assert s.keys() == t.keys(), f"step {i}: optimizer state keys {s.keys()} vs torch's {t.keys()}"
            for key in s:
                same = torch.equal(s[key], t[key]) if torch.is_tensor(s[key]) else s[key] == t[key]
                assert same, f"step {i}: optimizer state '{key}' of parameter {k} differs from torch's"


def loss_of(model, g, rows=4):
    x = torch.randn(rows, 8, generator=g)
    return model(x).square().mean()
