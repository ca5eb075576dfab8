#!/usr/bin/env python3
"""The reference side of `paisoar bench crop-quality`: for each JPEG and crop
box the C++ side chose (and the 224x224 uint8 crop it made, fused with a
DCT-scaled region decode and a bilinear resize without antialiasing), make
torchvision's crop of the same box (PIL decode, resized_crop, bilinear with
antialias, what its RandomResizedCrop does on PIL images) and an exact
area-averaged reference (full-precision decode, PIL's BOX filter in float:
each output pixel is the mean of the input area it covers, fractional edges
weighted). Prints one JSON line with the PSNRs, grouped by downscale factor.
"""
import argparse
import json
import math

import numpy as np
import torch
import torchvision.transforms.functional as TF
from PIL import Image


def psnr(mse):
    return float("inf") if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--manifest", required=True)
    a = p.parse_args()
    with open(a.manifest) as f:
        m = json.load(f)
    size = m["size"]
    groups = {}  # name: [sum of squared errors ours-ref, tv-ref, ours-tv, pixels]
    for item in m["crops"]:
        img = Image.open(item["jpeg"]).convert("RGB")
        top, left, h, w = item["top"], item["left"], item["height"], item["width"]
        ours = np.fromfile(item["ours"], dtype=np.uint8).reshape(3, size, size).astype(np.float64)
        tv = TF.resized_crop(TF.pil_to_tensor(img), top, left, h, w, [size, size],
                             interpolation=TF.InterpolationMode.BILINEAR, antialias=True)
        tv = tv.numpy().astype(np.float64)
        planes = [np.asarray(Image.fromarray(np.asarray(img)[:, :, c].astype(np.float32), mode="F")
                             .resize((size, size), Image.BOX, box=(left, top, left + w, top + h)))
                  for c in range(3)]
        ref = np.stack(planes).astype(np.float64)
        factor = min(h, w) / size
        name = "downscale >= 2x" if factor >= 2 else ("downscale 1-2x" if factor >= 1 else "upscale")
        g = groups.setdefault(name, [0.0, 0.0, 0.0, 0])
        g[0] += ((ours - ref) ** 2).sum()
        g[1] += ((tv - ref) ** 2).sum()
        g[2] += ((ours - tv) ** 2).sum()
        g[3] += ref.size
    out = {"torch": torch.__version__, "groups": []}
    for name in ["downscale >= 2x", "downscale 1-2x", "upscale"]:
        if name not in groups:
            continue
        s_or, s_tr, s_ot, n = groups[name]
        out["groups"].append({"group": name, "pixels": n, "psnr_ours_vs_reference": psnr(s_or / n),
                              "psnr_torchvision_vs_reference": psnr(s_tr / n),
                              "psnr_ours_vs_torchvision": psnr(s_ot / n)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
