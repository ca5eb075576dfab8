#!/usr/bin/env python3
"""The PyTorch (Python) peer of `paisoar bench tta`: time to a target
Fashion-MNIST test accuracy with the reference CNN, fp32, one process, the way
a PyTorch user writes it (the data set held as tensors, batches indexed from a
shuffled permutation).

The recipe is paisoar train's: FashionCnn (same layers and initialisation as
include/paisoar/models/fashion_cnn.h, taken from amp_peer.py), inputs scaled to
[0, 1] and normalised with mean 0.2860 and std 0.3530, SGD with momentum,
the linear scaling rule, linear warmup from 0 then cosine decay to 0, gradient
clipping by global norm, torch's DistributedSampler order (randperm seeded
with seed + epoch), and a test-set evaluation every `--eval_every` steps and
at each epoch's end. Time counts training only: evaluation passes are
excluded, as in the Trainer. Prints one JSON line on stdout.
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from amp_peer import FashionCnn  # noqa: E402

MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(path, part):
    images = read_idx(f"{path}/{part}-images-idx3-ubyte.gz")
    labels = read_idx(f"{path}/{part}-labels-idx1-ubyte.gz")
    x = (torch.from_numpy(images.copy()).float().div_(255.0) - MEAN) / STD
    return x.unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


def lr_factor(step, warmup, total):
    """paisoar::optim::LrSchedule with linear warmup from 0, then cosine to 0."""
    if step < warmup:
        return step / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def accuracy(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 256):
            correct += (model(x[i:i + 256]).argmax(1) == y[i:i + 256]).sum().item()
    model.train()
    return 100.0 * correct / len(x)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="directory with the four Fashion-MNIST .gz files")
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--lr", type=float, required=True, help="for a batch of --lr_batch")
    p.add_argument("--lr_batch", type=int, default=64)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--clip", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target", type=float, required=True, help="test accuracy in percent")
    p.add_argument("--eval_every", type=int, default=0, help="steps between evaluations (0: epochs only)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)

    train_x, train_y = load(a.data, "train")
    test_x, test_y = load(a.data, "t10k")
    torch.manual_seed(a.seed)
    model = FashionCnn()
    lr = a.lr * a.batch / a.lr_batch
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=a.momentum)
    steps_per_epoch = len(train_x) // a.batch
    total = steps_per_epoch * a.epochs

    step, train_s, reached_s, reached_step = 0, 0.0, None, None
    evaluations = []
    for epoch in range(a.epochs):
        g = torch.Generator()
        g.manual_seed(a.seed + epoch)
        order = torch.randperm(len(train_x), generator=g)
        t0 = time.perf_counter()
        for i in range(steps_per_epoch):
            idx = order[i * a.batch:(i + 1) * a.batch]
            for group in opt.param_groups:
                group["lr"] = lr * lr_factor(step, a.warmup, total)
            opt.zero_grad()
            loss = F.cross_entropy(model(train_x[idx]), train_y[idx])
            loss.backward()
            if a.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
            opt.step()
            step += 1
            if (a.eval_every > 0 and step % a.eval_every == 0) or i + 1 == steps_per_epoch:
                train_s += time.perf_counter() - t0
                acc = accuracy(model, test_x, test_y)
                evaluations.append({"step": step, "seconds": train_s, "accuracy": acc})
                print(f"step {step}: test accuracy {acc:.2f}% after {train_s:.1f} s", file=sys.stderr,
                      flush=True)
                if reached_s is None and acc >= a.target:
                    reached_s, reached_step = train_s, step
                t0 = time.perf_counter()
        if reached_s is not None:
            break
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "time_to_target_s": reached_s, "steps_to_target": reached_step,
                      "steps": step, "train_s": train_s, "samples_per_s": step * a.batch / train_s,
                      "evaluations": evaluations}))


if __name__ == "__main__":
    main()
