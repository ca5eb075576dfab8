#!/usr/bin/env python3
"""The PyTorch peer of `paisoar bench optim`: torch.optim's SGD (momentum) and
AdamW over the same shapes (LAYERS x Linear(WIDTH, WIDTH) weights and biases,
gradients set once), with foreach=True and with fused=True, timed as the C++
side times its steps (bench/measure_pair.h): the two alternate call by call,
each call timed alone, the one going first swapped every call, so each step
finds the cache as the other optimizer left it, as FlatOptimizer's does after
the per-tensor optimizer's; the median over REPEATS samples of ITERS steps.
Prints one JSON line {"sgd_momentum": {"foreach_ms", "fused_ms"}, "adamw": {...}}.
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


def timed_pair(make_a, make_b, iters, repeats):
    a, b = make_a(), make_b()
    a.step()  # state allocated outside the timing, as in the C++ bench's warm calls
    b.step()

    def one(opt):
        t = time.perf_counter()
        opt.step()
        return time.perf_counter() - t

    samples_a, samples_b = [], []
    for r in range(repeats):
        ta = tb = 0.0
        for i in range(iters):
            if (i + r) % 2 == 0:
                ta += one(a)
                tb += one(b)
            else:
                tb += one(b)
                ta += one(a)
        samples_a.append(ta / iters * 1e3)
        samples_b.append(tb / iters * 1e3)
    return statistics.median(samples_a), statistics.median(samples_b)


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
        foreach_ms, fused_ms = timed_pair(lambda: make(model(a.layers, a.width), foreach=True),
                                          lambda: make(model(a.layers, a.width), fused=True), a.iters, a.repeats)
        out[name] = {"foreach_ms": foreach_ms, "fused_ms": fused_ms}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
