#!/usr/bin/env python3
"""The PyTorch peer of `paisoar bench optim`: torch.optim's SGD (momentum) and
AdamW over the same shapes (LAYERS x Linear(WIDTH, WIDTH) weights and biases,
gradients set once), with foreach=True and with fused=True, timed as the C++
side times its steps: the median over REPEATS samples of ITERS steps. Prints
one JSON line {"sgd_momentum": {"foreach_ms", "fused_ms"}, "adamw": {...}}.
"""
import argparse
import json
import statistics
import time

import torch


def model(layers, width):
    torch.manual_seed(0)
    ps = []
    for _ in range(layers):
        ps += [(torch.randn(width, width) * 0.05).requires_grad_(), torch.zeros(width).requires_grad_()]
    for p in ps:
        p.grad = torch.randn_like(p) * 1e-3
    return ps


def timed(make, iters, repeats):
    opt = make()
    opt.step()  # state allocated outside the timing, as in the C++ bench's warm calls
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(iters):
            opt.step()
        samples.append((time.perf_counter() - t) / iters * 1e3)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--width", type=int, required=True)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    out = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    makers = {
        "sgd_momentum": lambda ps, **k: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-4, **k),
        "adamw": lambda ps, **k: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, **k),
    }
    for name, make in makers.items():
        row = {}
        for mode in ["foreach", "fused"]:
            row[mode + "_ms"] = timed(lambda: make(model(a.layers, a.width), **{mode: True}), a.iters, a.repeats)
        out[name] = row
    print(json.dumps(out))


if __name__ == "__main__":
    main()
