#!/usr/bin/env python3
"""Whether ATen's _fused_adamw_ / _fused_sgd_ take longer on one flat tensor
(FlatOptimizer's call) than on the same memory split as torch.optim passes it
(16 parameter views) or in chunks: docs/BENCHMARKS.md, optimizer step.
Run: .venv/bin/python bench/fused_kernel_split.py
"""
import statistics
import time

import torch

torch.set_num_threads(2)
n = 8 * (1024 * 1024 + 1024)
sizes = [1024 * 1024, 1024] * 8
def make():
    p = torch.randn(n) * 0.05; g = torch.randn(n) * 1e-3
    return p, g, torch.zeros(n), torch.zeros(n), torch.zeros(())
def views(t): return list(torch.split(t, sizes))
def chunks(t, k): return list(torch.split(t, (n + k - 1) // k))
def time_it(fn, iters=20, reps=9):
    fn(); s = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(iters): fn()
        s.append((time.perf_counter() - t) / iters * 1e3)
    return statistics.median(s)
p, g, m, v, st = make()
for label, split in [("one tensor", lambda t: [t]), ("16 param views", views), ("8 chunks", lambda t: chunks(t, 8)), ("64 chunks", lambda t: chunks(t, 64))]:
    P, G, M, V = split(p), split(g), split(m), split(v)
    S = [torch.zeros(()) for _ in P]
    a = time_it(lambda: torch._fused_adamw_(P, G, M, V, [], S, lr=1e-3, beta1=0.9, beta2=0.999, weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False))
    b = time_it(lambda: torch._fused_sgd_(P, G, M, weight_decay=1e-4, momentum=0.9, lr=0.1, dampening=0.0, nesterov=False, maximize=False, is_first_step=False))
    print(f"{label:16s} adamw {a:7.3f} ms  sgd {b:7.3f} ms")
