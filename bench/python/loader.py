#!/usr/bin/env python3
"""paisoar.data against torchvision's ImageFolder + torch's DataLoader at
equal workers: an epoch of RandomResizedCrop(224) + horizontal flip +
normalise over a folder of JPEGs (made once, 500x375 photos-like images, in
--photos), batch 64; the two alternate for --repeats rounds and the median
images/s of each is reported with the ratio. paisoar's workers are threads
of this process, torch's are processes.

Run: bench/python/loader.py --workers 2 --out docs/bench/python_loader.json
"""
import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

import torch
import torchvision
from PIL import Image, ImageDraw, ImageFilter
from torchvision import transforms as T

from paisoar import data

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def make_photos(root, count, classes=10):
    """Smooth shapes over gradients with grain: JPEG sizes like photos' (~40 KB)."""
    done = root / ".complete"
    if done.exists() and done.read_text() == str(count):
        return
    rng = random.Random(0)
    for i in range(count):
        folder = root / f"class{i % classes:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        img = Image.linear_gradient("L").resize((500, 375)).convert("RGB")
        draw = ImageDraw.Draw(img)
        for _ in range(12):
            x, y = rng.randrange(500), rng.randrange(375)
            r = rng.randrange(20, 120)
            draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(rng.randrange(256) for _ in range(3)))
        img = img.filter(ImageFilter.GaussianBlur(2))
        noise = Image.effect_noise((500, 375), 24).convert("RGB")
        Image.blend(img, noise, 0.15).save(folder / f"{i:05d}.jpg", quality=90)
    done.write_text(str(count))


def epoch(loader):
    start, images = time.perf_counter(), 0
    for x, _ in loader:
        images += x.shape[0]
    return images / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--photos", default="/tmp/paisoar-bench-photos")
    p.add_argument("--count", type=int, default=1280)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out")
    a = p.parse_args()
    root = Path(a.photos)
    make_photos(root, a.count)
    torch.set_num_threads(1)

    ours = data.DataLoader(data.ImageFolder(root, transform=[
        data.RandomResizedCrop(224), data.RandomHorizontalFlip(), data.Normalize(MEAN, STD)]),
        batch_size=a.batch, shuffle=True, num_workers=a.workers)
    theirs = torch.utils.data.DataLoader(torchvision.datasets.ImageFolder(root, T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])),
        batch_size=a.batch, shuffle=True, num_workers=a.workers, persistent_workers=a.workers > 0)
    rates = {"paisoar.data": [], "torchvision + DataLoader": []}
    epoch(ours), epoch(theirs)  # warm-up: page cache, worker start
    for r in range(a.repeats):
        ours.set_epoch(r + 1)
        pair = [("paisoar.data", ours), ("torchvision + DataLoader", theirs)]
        for name, loader in (pair if r % 2 == 0 else reversed(pair)):
            rates[name].append(epoch(loader))
    medians = {k: statistics.median(v) for k, v in rates.items()}
    ratio = medians["paisoar.data"] / medians["torchvision + DataLoader"]
    print(f"{a.count} JPEGs 500x375, RandomResizedCrop(224)+flip+normalise, batch {a.batch}, "
          f"{a.workers} workers, {os.cpu_count()} CPUs")
    for name, rate in medians.items():
        print(f"{name:28s} {rate:9.1f} images/s")
    print(f"paisoar.data / torchvision: {ratio:.2f}x")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"count": a.count, "workers": a.workers, "batch": a.batch, "images_per_s": medians,
                       "all": rates, "ratio": ratio, "torch": torch.__version__,
                       "torchvision": torchvision.__version__}, f, indent=1)


main()
