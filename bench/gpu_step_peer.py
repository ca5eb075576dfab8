#!/usr/bin/env python3
"""The PyTorch peer of `paisoar bench gpu`: one ResNet-50 training step
variant (torchvision's resnet50, SGD with momentum, random data of a fixed
seed) timed the way the C++ side times ours, in eager mode or torch.compile'd,
optionally wrapped in DistributedDataParallel over NCCL on one rank. Prints
one JSON line: {"variant", "ms_per_step", "first_loss", "compile_s"}.
"""
import argparse
import json
import os
import time

import torch
import torch.nn.functional as F
import torchvision

VARIANTS = {  # name: (tf32, autocast dtype, grad scaler, channels_last)
    "fp32": (False, None, False, False),
    "tf32": (True, None, False, False),
    "bf16": (False, torch.bfloat16, False, False),
    "fp16": (False, torch.float16, True, False),
    "bf16_channels_last": (False, torch.bfloat16, False, True),
}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--ddp", action="store_true", help="DistributedDataParallel over one NCCL (or gloo on cpu) rank")
    a = p.parse_args()
    tf32, dtype, scaling, channels_last = VARIANTS[a.variant]
    device = torch.device(a.device)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = torchvision.models.resnet50(num_classes=1000).to(device)
    x = torch.randn(a.batch, 3, a.size, a.size, device=device)
    y = torch.randint(1000, (a.batch,), device=device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    if a.ddp:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "0")
        store = torch.distributed.HashStore()
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo", store=store,
                                             rank=0, world_size=1)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler(device.type, enabled=scaling)
    step_fn = model
    compile_s = 0.0
    if a.compile:
        t = time.perf_counter()
        step_fn = torch.compile(model)
        compile_s = time.perf_counter() - t

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = F.cross_entropy(step_fn(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    first = step().item()
    t = time.perf_counter()
    for _ in range(max(a.warmup - 1, 0)):
        step()
    sync()
    if a.compile:
        compile_s += time.perf_counter() - t  # the first steps compile
    t = time.perf_counter()
    for _ in range(a.iters):
        step()
    sync()
    ms = (time.perf_counter() - t) / a.iters * 1e3
    print(json.dumps({"variant": a.variant, "ms_per_step": ms, "first_loss": first,
                      "compile_s": compile_s, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
