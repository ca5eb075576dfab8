"""Rank 1 alone finds an inf gradient at step 1 (no DDP: each rank its own
model, as with ZeRO's sharded gradients). paisoar's GradScaler given the
torch.distributed group (process_group=) makes both ranks skip that step and
back off, so the scales and parameters stay equal. Without process_group it
does what torch.amp.GradScaler does on each rank: rank 1 alone skips, with
torch's scale and parameters. Prints "SCALER-VERDICT <mode> OK".

Usage: scaler_verdict.py gloo|cudaonly
  gloo      init_process_group("gloo")
  cudaonly  a group with no CPU backend, as init_process_group("nccl") makes,
            on a machine without a GPU: torch's fake backend (which carries
            nothing) registered for CUDA only, over the job's real store.
            paisoar forms its own group of the same ranks through that store.
"""
import math
import sys

import torch

import torch.distributed as dist

import paisoar
from paisoar import amp

from common import finish

MODE = sys.argv[1]
if MODE == "cudaonly":
    from torch.testing._internal.distributed.fake_pg import _create_fake_pg

    dist.Backend.register_backend("cudaonly", _create_fake_pg, extended_api=True, devices=["cuda"])
dist.init_process_group(MODE)
rank = dist.get_rank()


def train(scaler):
    """Three steps; rank 1's gradient is inf at step 1. (stepped per step, model)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
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
    return stepped, model


# torch's semantics unless asked: each rank decides alone, as torch's scaler.
alone, alone_model = train(amp.GradScaler("cpu", init_scale=8.0))
torchs, torchs_model = train(torch.amp.GradScaler("cpu", init_scale=8.0))
if alone != torchs or alone != [True, rank != 1, True] or not torch.equal(alone_model.weight, torchs_model.weight):
    sys.exit(f"SCALER-VERDICT {MODE} FAILED on rank {rank}: without process_group stepped {alone}, "
             f"torch's scaler {torchs}")

scaler = amp.GradScaler("cpu", init_scale=8.0, process_group=dist.group.WORLD)
stepped, model = train(scaler)
if stepped != [True, False, True] or scaler.get_scale() != 4.0:
    sys.exit(f"SCALER-VERDICT {MODE} FAILED on rank {rank}: stepped {stepped}, scale {scaler.get_scale()}")
comm = paisoar.communicator()  # the group the scaler used (torch's fake one carries nothing)
both = model.weight.detach().clone()
comm.allreduce(both)
if comm.size != 2 or not torch.equal(both, 2 * model.weight.detach()):
    sys.exit(f"SCALER-VERDICT {MODE} FAILED: the ranks' weights differ")
print(f"SCALER-VERDICT {MODE} OK rank {rank} on {comm.backend_name}")
dist.destroy_process_group()
finish()
