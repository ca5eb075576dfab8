#!/usr/bin/env python3
"""The PyTorch (Python) peer of `paisoar bench data`: torchvision's ImageFolder
(or FashionMNIST) with the same transforms, read by torch.utils.data.DataLoader
with the same workers and batch size, timed the same way as ours: samples per
second from the first batch received to the last (worker start-up excluded).
Prints one JSON line.
"""
import argparse
import gzip
import json
import os
import shutil
import tempfile
import time

import torch
from torch.utils.data import DataLoader
import torchvision
from torchvision import transforms as T


def fashion_mnist(idx_dir, root):
    # torchvision wants the unpacked files in root/FashionMNIST/raw/.
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw)
    for name in os.listdir(idx_dir):
        src_path = os.path.join(idx_dir, name)
        if name.endswith(".gz"):
            with gzip.open(src_path) as src, open(os.path.join(raw, name[:-3]), "wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            os.symlink(src_path, os.path.join(raw, name))
    tf = T.Compose([T.ToTensor(), T.Normalize((0.2860,), (0.3530,))])
    return torchvision.datasets.FashionMNIST(root, train=True, transform=tf, download=False)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["folder", "idx"], required=True)
    p.add_argument("--root", required=True, help="image folder, or the IDX directory")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cuda: each batch is moved to the GPU (pinned memory)")
    a = p.parse_args()

    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    if a.mode == "folder":
        tf = T.Compose([
            T.RandomResizedCrop(a.size),
            T.RandomHorizontalFlip(),
            T.ToTensor(),
            T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
        ])
        ds = torchvision.datasets.ImageFolder(a.root, transform=tf)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="paisoar_fmnist_")
        ds = fashion_mnist(a.root, tmp.name)
    device = torch.device(a.device)
    loader = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                        drop_last=False, pin_memory=device.type == "cuda")
    samples = 0
    start = None
    first = 0
    for x, y in loader:
        if device.type != "cpu":
            x = x.to(device, non_blocking=True)
        if start is None:
            start = time.perf_counter()
            first = x.shape[0]
            continue
        samples += x.shape[0]
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(json.dumps({"samples": samples + first, "timed_samples": samples, "seconds": seconds,
                      "samples_per_s": samples / seconds if seconds > 0 else 0.0,
                      "torch": torch.__version__, "torchvision": torchvision.__version__}))


if __name__ == "__main__":
    main()
