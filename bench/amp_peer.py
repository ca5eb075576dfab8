#!/usr/bin/env python3
"""The PyTorch (Python) peer of `paisoar bench amp`: one training run of the
reference models in plain torch, timed exactly as the C++ worker times ours.

The models mirror include/paisoar/models/ layer for layer (same names, same
construction order, same initialisation), so with the same seed both sides
start from the same weights and data and their first losses agree. torchvision
is not needed. Prints one JSON line on stdout; run with --help for the flags.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class FashionCnn(nn.Module):
    """models::FashionCnn: conv(1->32)-[bn]-relu-pool, conv(32->64)-[bn]-relu-pool, fc 3136->128->10."""

    def __init__(self, batch_norm=False, num_classes=10):
        super().__init__()
        bias = not batch_norm
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=bias)
        self.bn1 = nn.BatchNorm2d(32) if batch_norm else None
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=bias)
        self.bn2 = nn.BatchNorm2d(64) if batch_norm else None
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = self.conv1(x)
        if self.bn1 is not None:
            x = self.bn1(x)
        x = F.max_pool2d(torch.relu(x), 2)
        x = self.conv2(x)
        if self.bn2 is not None:
            x = self.bn2(x)
        x = F.max_pool2d(torch.relu(x), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def conv(cin, cout, kernel, stride):
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False)


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock (v0.14)."""

    def __init__(self, in_planes, planes, stride, downsample):
        super().__init__()
        self.conv1 = conv(in_planes, planes, 3, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv(planes, planes, 3, 1)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x if self.downsample is None else self.downsample(x)
        return torch.relu(out)


class ResNet(nn.Module):
    """torchvision.models.resnet.ResNet with BasicBlocks (v0.14)."""

    def __init__(self, blocks=(2, 2, 2, 2), num_classes=1000, in_channels=3):
        super().__init__()
        self.in_planes = 64
        self.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.layer1 = self._make_layer(64, blocks[0], 1)
        self.layer2 = self._make_layer(128, blocks[1], 2)
        self.layer3 = self._make_layer(256, blocks[2], 2)
        self.layer4 = self._make_layer(512, blocks[3], 2)
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def _make_layer(self, planes, blocks, stride):
        downsample = None
        if stride != 1 or self.in_planes != planes:
            downsample = nn.Sequential(conv(self.in_planes, planes, 1, stride), nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.in_planes, planes, stride, downsample)]
        self.in_planes = planes
        layers += [BasicBlock(planes, planes, 1, None) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 3, stride=2, padding=1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def proc_status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak_rss():
    """Resets VmHWM to the current RSS (Linux >= 4.0); False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def build(model, classes):
    if model == "cnn":
        return FashionCnn(batch_norm=False, num_classes=classes), (1, 28)
    if model == "cnn_bn":
        return FashionCnn(batch_norm=True, num_classes=classes), (1, 28)
    if model == "resnet18":
        return ResNet(num_classes=classes), (3, None)
    raise SystemExit(f"amp_peer.py: unknown --model {model}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=["cnn", "cnn_bn", "resnet18"])
    p.add_argument("--dtype", required=True, choices=["fp32", "bf16"])
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--size", type=int, required=True, help="image side (the CNN needs 28)")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--warmup", type=int, required=True)
    p.add_argument("--iters", type=int, required=True, help="timed steps, at least")
    p.add_argument("--seconds", type=float, required=True, help="time steps until this much has passed")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model (compilation happens in the warm-up steps, untimed)")
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model, (channels, side) = build(a.model, a.classes)
    model.train()
    x = torch.randn(a.batch, channels, side or a.size, side or a.size)
    y = torch.randint(0, a.classes, (a.batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    forward = torch.compile(model) if a.compile else model
    rss_base = proc_status_kib("VmRSS")
    hwm_reset = reset_peak_rss()

    def step():
        start = time.perf_counter()
        opt.zero_grad()  # set_to_none=True, as LibTorch 2.x's zero_grad() does
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            loss = F.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        elapsed = time.perf_counter() - start
        losses.append(loss.item())
        return elapsed

    losses, steps = [], []
    for _ in range(max(a.warmup, 3) if a.compile else a.warmup):
        step()
    while len(steps) < a.iters or sum(steps) < a.seconds:
        steps.append(step())
    json.dump({"impl": "pytorch-compiled" if a.compile else "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
               "params": sum(p.numel() for p in model.parameters()),
               "step_s": steps, "losses": losses,
               "rss_base_kib": rss_base, "peak_rss_kib": proc_status_kib("VmHWM"),
               "peak_reset": hwm_reset}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
