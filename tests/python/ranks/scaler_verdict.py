"""Rank 1 alone finds an inf gradient at step 1 (no DDP: each rank its own
model, as with ZeRO's sharded gradients). paisoar's GradScaler over the
torch.distributed group makes both ranks skip that step and back off, so the
scales and parameters stay equal. Prints "SCALER-VERDICT OK"."""
import math
import sys

import torch

import torch.distributed as dist

from paisoar import amp

from common import finish

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = amp.GradScaler(init_scale=8.0)
stepped = []
for step in range(3):
    opt.zero_grad()
    scaler.scale(model(torch.ones(1, 4)).sum()).backward()
    if step == 1 and rank == 1:
        model.weight.grad[0, 0] = math.inf
    before = model.weight.detach().clone()
    scaler.step(opt)
    stepped.append(not torch.equal(before, model.weight))
    scaler.update()
if stepped != [True, False, True] or scaler.get_scale() != 4.0:
    sys.exit(f"SCALER-VERDICT FAILED on rank {rank}: stepped {stepped}, scale {scaler.get_scale()}")
weights = [None, None]
dist.all_gather_object(weights, model.weight.detach().tolist())
if weights[0] != weights[1]:
    sys.exit("SCALER-VERDICT FAILED: the ranks' weights differ")
print(f"SCALER-VERDICT OK rank {rank}")
dist.destroy_process_group()
finish()
