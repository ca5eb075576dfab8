"""The article's section 4.1 (single GPU to many: DDP, DistributedSampler,
rank 0 saves and logs) with section 3.2's amp loop, or with section 3.4's
gradient accumulation loop when run with `accumulate`; pasted as written
except `.cuda()` -> `.to(device)`, 'nccl' -> the device's backend and
device_ids only for a CUDA model. Around it: what the snippets assume, and
checks that every rank ends with the same parameters and the loss fell.
Prints "ARTICLE 4.1 OK" (or "ARTICLE 3.4 OK").

Usage: article_4_1_ddp.py CHECKPOINT_PATH [accumulate]
"""
import sys

import torch

from common import MyCNN, device, dist_backend, image_set, parameter_digest, finish

checkpoint_path = sys.argv[1]
accumulate = len(sys.argv) > 2 and sys.argv[2] == "accumulate"
EPOCHS = 6
criterion = torch.nn.CrossEntropyLoss()
dataset = image_set()
per_gpu_batch = 16
torch.manual_seed(0)

# ---- section 4.1, as written (but .cuda(), nccl and device_ids on the CPU) ----
import os
import torch.distributed as dist
from paisoar import DistributedDataParallel as DDP

dist.init_process_group(backend=dist_backend)
local_rank = int(os.environ["LOCAL_RANK"])
if device == "cuda":
    torch.cuda.set_device(local_rank)
model = MyCNN().to(device)
model = DDP(model, device_ids=[local_rank] if device == "cuda" else None)

from torch.utils.data.distributed import DistributedSampler
from torch.utils.data import DataLoader

rank, world_size = dist.get_rank(), dist.get_world_size()
sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
dataloader = DataLoader(dataset, batch_size=per_gpu_batch, sampler=sampler)
# ---- the training loop: section 3.2's, or 3.4's ----
from paisoar import amp

optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = amp.GradScaler()


def full_loss():
    with torch.no_grad():
        x, y = dataset.tensors
        return criterion(model.module(x), y).item()


before = full_loss()
for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    if not accumulate:
        for data, target in dataloader:
            optimizer.zero_grad()
            with amp.autocast():
                output = model(data)
                loss = criterion(output, target)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    else:
        # section 3.4, as written
        accumulation_steps = 4
        for i, (data, target) in enumerate(dataloader):
            with amp.autocast():
                output = model(data)
                loss = criterion(output, target) / accumulation_steps
            scaler.scale(loss).backward()
            if (i + 1) % accumulation_steps == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
    # section 4.1's third step
    if rank == 0:
        torch.save(model.state_dict(), checkpoint_path)
        print(f"Epoch {epoch}, loss {loss.item()}")
# ---- end of the snippets ----
after = full_loss()
digests = [None] * world_size
dist.all_gather_object(digests, parameter_digest(model))
name = "3.4" if accumulate else "4.1"
if len(set(digests)) != 1:
    sys.exit(f"ARTICLE {name} FAILED: the ranks' parameters differ: {digests}")
if not after < before:
    sys.exit(f"ARTICLE {name} FAILED: the loss did not fall ({before:.4f} -> {after:.4f})")
if rank == 0:
    saved = torch.load(checkpoint_path)
    if not all(k.startswith("module.") for k in saved):
        sys.exit(f"ARTICLE {name} FAILED: the checkpoint's keys are not DDP's: {list(saved)[:3]}")
print(f"ARTICLE {name} OK rank {rank} loss {before:.4f} -> {after:.4f}")
dist.destroy_process_group()
finish()
