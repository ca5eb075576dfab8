#!/usr/bin/env python3
"""Python training step: paisoar.DistributedDataParallel against
torch.nn.parallel.DistributedDataParallel over the same gloo process group
(init_process_group), paisoar's on Gloo too (its own Gloo group over the
group's store) and, as a third row, on shared memory (what it picks by
default between the ranks of one host). Same model,
weights, data, SGD with momentum; blocks of steps alternate between the
implementations so the machine's drift hits all alike. Rank 0 prints a table
and writes JSON (medians of per-step times, and ratios to torch's).

Run: paisoar launch --nproc_per_node 2 --master_port 0 -- bench/python/ddp_step.py \
         --model cnn --out docs/bench/python_ddp_cnn.json
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from amp_peer import FashionCnn, ResNet  # noqa: E402

import paisoar  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="cnn", choices=["cnn", "resnet18"])
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--steps", type=int, default=10, help="steps per block")
    p.add_argument("--blocks", type=int, default=6, help="blocks per implementation")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    def model():
        torch.manual_seed(0)
        return FashionCnn() if a.model == "cnn" else ResNet(num_classes=10)

    runs = {
        "torch DDP (gloo)": torch.nn.parallel.DistributedDataParallel(model()),
        "paisoar DDP (gloo)": paisoar.DistributedDataParallel(
            model(), process_group=paisoar.communicator(dist.group.WORLD, backend="gloo")),
        "paisoar DDP (default: " + paisoar.communicator().backend_name + ")":
            paisoar.DistributedDataParallel(model()),
    }
    optimizers = {k: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) for k, m in runs.items()}
    torch.manual_seed(1 + rank)
    shape = (a.batch, 1, 28, 28) if a.model == "cnn" else (a.batch, 3, 64, 64)
    x, y = torch.randn(*shape), torch.randint(0, 10, (a.batch,))
    times = {k: [] for k in runs}

    def step(name):
        opt = optimizers[name]
        opt.zero_grad()
        F.cross_entropy(runs[name](x), y).backward()
        opt.step()

    for name in runs:  # warm-up: buckets rebuilt, allocator primed
        for _ in range(3):
            step(name)
    for block in range(a.blocks):
        order = list(runs) if block % 2 == 0 else list(reversed(runs))
        for name in order:
            dist.barrier()
            for _ in range(a.steps):
                start = time.perf_counter()
                step(name)
                times[name].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    reference = medians["torch DDP (gloo)"]
    if rank == 0:
        print(f"{a.model}, batch {a.batch}/rank, {world} ranks, {a.blocks}x{a.steps} steps each, "
              f"{a.threads} thread(s)/rank")
        print(f"{'implementation':44s} {'median step ms':>15s} {'vs torch':>9s}")
        for name, ms in medians.items():
            print(f"{name:44s} {ms:15.2f} {ms / reference:8.3f}x")
        if a.out:
            with open(a.out, "w") as f:
                json.dump({"model": a.model, "batch_per_rank": a.batch, "world": world,
                           "steps": a.steps * a.blocks, "median_step_ms": medians,
                           "ratio_to_torch": {k: v / reference for k, v in medians.items()},
                           "torch": torch.__version__}, f, indent=1)
    dist.destroy_process_group()


main()
