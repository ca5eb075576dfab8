#!/usr/bin/env python3
"""Why paisoar.train calls a Python model back instead of asking for
TorchScript: the same run (configs/fashion_mnist.yaml, 2 ranks) with the
reference CNN in C++ (what TorchScript would at best give: no Python in
forward) and with the identical CNN written in Python (bench/amp_peer.py's
FashionCnn) called back per micro-batch. The two alternate; each run starts
fresh. Rank 0 prints samples/s per run, the medians and their ratio.

Run: paisoar launch --nproc_per_node 2 --master_port 0 -- bench/python/trainer_forward.py \
         --out docs/bench/python_trainer_forward.json
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from amp_peer import FashionCnn  # noqa: E402

import paisoar  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/fashion_mnist.yaml")
    p.add_argument("--samples", type=int, default=6400)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dtype", default="auto")
    p.add_argument("--out")
    a = p.parse_args()
    rank = int(os.environ.get("RANK", 0))
    rates = {"C++ model": [], "Python model (callback)": []}
    for r in range(a.repeats):
        order = list(rates) if r % 2 == 0 else list(reversed(rates))
        for name in order:
            overrides = {"run_dir": f"/tmp/paisoar-bench-trainer/{name[:1]}{r}", "checkpoint.resume": False,
                         "data.train_limit": a.samples, "data.eval_limit": 500, "profiler.memory": False,
                         "amp.dtype": a.dtype}
            torch.manual_seed(0)
            model = FashionCnn() if name.startswith("Python") else None
            result = paisoar.train(a.config, model=model, overrides=overrides)
            rates[name].append(result["samples_per_s"])
    if rank == 0:
        medians = {k: statistics.median(v) for k, v in rates.items()}
        ratio = medians["Python model (callback)"] / medians["C++ model"]
        for name, values in rates.items():
            print(f"{name:26s} samples/s {' '.join(f'{v:7.0f}' for v in values)}  median {medians[name]:7.0f}")
        print(f"Python callback / C++: {ratio:.3f}")
        if a.out:
            with open(a.out, "w") as f:
                json.dump({"samples": a.samples, "repeats": a.repeats, "all": rates, "median": medians,
                           "ratio": ratio, "dtype": a.dtype, "torch": torch.__version__}, f, indent=1)


main()
