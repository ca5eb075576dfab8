#!/usr/bin/env python3
"""The PyTorch (Python) peer of `paisoar bench ddp`: torch.nn.parallel.
DistributedDataParallel over Gloo (or plain local training with --local), the
same models, batch and loop as bench/ddp_worker.cpp, timed the same way.

Run under a launcher that sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
(`paisoar launch` or torchrun). Rank 0 writes one JSON object to --out.
The models come from amp_peer.py next to this file (identical to ours).
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from amp_peer import FashionCnn, ResNet  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="cnn", choices=["cnn", "resnet18"])
    p.add_argument("--precision", default="bf16", choices=["bf16", "fp32"])
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--local", action="store_true", help="no DDP: the 1-rank baseline")
    p.add_argument("--out", required=True)
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if not a.local:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = FashionCnn() if a.model == "cnn" else ResNet(num_classes=10)
    if not a.local:
        model = torch.nn.parallel.DistributedDataParallel(model)
    torch.manual_seed(1 + rank)
    shape = (a.batch, 1, 28, 28) if a.model == "cnn" else (a.batch, 3, 64, 64)
    x, y = torch.randn(*shape), torch.randint(0, 10, (a.batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    samples = []
    for _ in range(a.repeats):
        if not a.local:
            dist.barrier()
        start = time.perf_counter()
        for _ in range(a.steps):
            step()
        samples.append((time.perf_counter() - start) / a.steps)
    if rank == 0:
        name = "local" if a.local else "torch_ddp"
        with open(a.out, "w") as f:
            json.dump({"world_size": world, "threads": torch.get_num_threads(), "torch": torch.__version__,
                       "variants": {name: {"step_ms": 1e3 * statistics.median_high(samples)}}}, f)
    if not a.local:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
