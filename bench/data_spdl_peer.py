#!/usr/bin/env python3
"""The SPDL peer of `paisoar bench data`: Meta's SPDL (PyPI `spdl`) doing the
same work as ours on the same image folder (decode, RandomResizedCrop to
--size with torchvision's box choice, horizontal flip, ToTensor + Normalize,
batches of --batch), built as SPDL's image examples build it: a
spdl.pipeline whose source yields (path, label), aggregated into batches, and
one batch-decoding stage with `concurrency` = --workers on a pool of --workers
threads; each image is demuxed and decoded by SPDL (FFmpeg) with a filter
graph that crops, resizes (swscale bilinear, which widens its filter when it
shrinks) and flips, the frames are batched by spdl.io.convert_frames and
normalised in the stage. Timed as the torchvision peer is: samples per second
from the first batch received to the last. Prints one JSON line.
"""
import argparse
import json
import math
import os
import random
import time
from importlib import metadata

import spdl.io
import torch
from spdl.pipeline import PipelineBuilder

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def image_folder(root):
    """(path, class index) in torchvision ImageFolder's order: sorted classes, sorted files."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    items = []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        items += [(os.path.join(folder, f), label) for f in sorted(os.listdir(folder))]
    return items


def crop_box(rng, height, width, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop.get_params: (top, left, h, w)."""
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(*log_ratio))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif in_ratio > ratio[1]:
        h, w = height, int(round(height * ratio[1]))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def make_decode_batch(size, seed):
    def decode_batch(items):
        rng = random.Random(hash((seed, items[0][0])))
        frames = []
        for path, _ in items:
            packets = spdl.io.demux_image(path)
            top, left, h, w = crop_box(rng, packets.height, packets.width)
            flip = ",hflip" if rng.random() < 0.5 else ""
            desc = (f"crop=w={w}:h={h}:x={left}:y={top},scale=w={size}:h={size}:flags=bilinear"
                    f"{flip},format=pix_fmts=rgb24")
            frames.append(spdl.io.decode_packets(packets, filter_desc=desc))
        batch = spdl.io.to_torch(spdl.io.convert_frames(frames))  # N x H x W x 3 uint8
        x = batch.permute(0, 3, 1, 2).float().div_(255).sub_(MEAN).div_(STD)
        return x, torch.tensor([label for _, label in items])
    return decode_batch


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True, help="image folder (one subfolder per class)")
    p.add_argument("--workers", type=int, default=2, help="decode concurrency and pipeline threads")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    torch.set_num_threads(1)
    items = image_folder(a.root)
    random.Random(a.seed).shuffle(items)
    pipeline = (
        PipelineBuilder()
        .add_source(items)
        .aggregate(a.batch)
        .pipe(make_decode_batch(a.size, a.seed), concurrency=a.workers)
        .add_sink(2 * a.workers)
        .build(num_threads=a.workers)
    )
    samples = first = 0
    start = None
    with pipeline.auto_stop():
        for x, _ in pipeline.get_iterator(timeout=600):
            if start is None:
                start = time.perf_counter()
                first = x.shape[0]
                continue
            samples += x.shape[0]
    seconds = time.perf_counter() - start
    print(json.dumps({"samples": samples + first, "timed_samples": samples, "seconds": seconds,
                      "samples_per_s": samples / seconds if seconds > 0 else 0.0,
                      "torch": torch.__version__, "spdl": metadata.version("spdl")}))


if __name__ == "__main__":
    main()
