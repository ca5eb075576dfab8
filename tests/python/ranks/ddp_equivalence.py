"""paisoar.DistributedDataParallel against torch.nn.parallel.DistributedDataParallel
on the same process group (gloo), from the same initial weights and the same
per-rank data, 10 SGD steps (momentum, a BatchNorm's buffers broadcast):

  plain      parameters within 1e-6
  no_sync    two micro-batches per step, the first under no_sync(): within 1e-6
             (parameters only: torch skips the buffer broadcast after a no_sync forward)
  own_group  paisoar's own group (no init_process_group when paisoar trains), within 1e-6
  gloo       paisoar's group over torch's forced onto Gloo (the default is shm), within 1e-6
  subgroup   3 ranks; both DDPs over new_group([0, 2]), rank 1 outside: within 1e-6
  fp16, bf16 gradient_compression against torch's fp16/bf16_compress_hook:
             within 1e-4 / 2e-3 (half / bfloat16 rounding of each step's average)
  int8       against torch without compression: each step within half an int8
             quantization step of the largest gradient (times lr), summed
  powersgd   rank 4 against torch's powerSGD_hook at rank 4: both train, and the
             final losses agree within 5%
  hook       register_comm_hook(None, fp16_compress_hook) equals gradient_compression='fp16'

Every rank checks, and exits 1 naming the parameter and the difference.
Prints "DDP-EQUIVALENCE <mode> OK max_diff=...". Usage: ddp_equivalence.py MODE
"""
import gc
import sys

import torch

import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

import paisoar

from common import finish

MODE = sys.argv[1]
STEPS, BATCH, LR = 10, 16, 0.1


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.BatchNorm1d(64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 48), torch.nn.ReLU(), torch.nn.Linear(48, 5))


def batches(rank):
    g = torch.Generator().manual_seed(100 + rank)
    out = []
    for _ in range(STEPS * 2):
        x = torch.randn(BATCH, 20, generator=g)
        out.append((x, (x[:, :5].argmax(1))))
    return out


def train(model, rank, accumulate=False):
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    data = batches(rank)
    grads = []
    loss = None
    for step in range(STEPS):
        opt.zero_grad()
        if accumulate:
            with model.no_sync():
                x, y = data[2 * step]
                torch.nn.functional.cross_entropy(model(x), y).backward()
            x, y = data[2 * step + 1]
        else:
            x, y = data[step]
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        grads.append(max(p.grad.abs().max().item() for p in model.parameters()))
        opt.step()
    return loss.item(), grads


def compare(ours, theirs, tolerance, what):
    worst, where = 0.0, ""
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        diff = (a.detach() - b.detach()).abs().max().item()
        if diff > worst:
            worst, where = diff, name
    # Buffers too, except under no_sync: paisoar broadcasts rank 0's before every
    # forward, torch skips the broadcast in the forward after a no_sync one.
    for (name, a), (_, b) in zip(ours.named_buffers(), theirs.named_buffers()) if MODE != "no_sync" else ():
        if not torch.equal(a, b) and (a.float() - b.float()).abs().max().item() > tolerance:
            sys.exit(f"DDP-EQUIVALENCE {MODE} FAILED: buffer {name} differs from torch's ({what})")
    if worst > tolerance:
        sys.exit(f"DDP-EQUIVALENCE {MODE} FAILED: parameter {where} differs from torch's by {worst:.3g} "
                 f"> {tolerance:.3g} ({what})")
    return worst


def main():
    group = None  # torch's default group, except in subgroup mode
    if MODE == "own_group":
        ours = paisoar.DistributedDataParallel(make_model())
        rank = ours._comm.rank
        loss_ours, _ = train(ours, rank)
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        if MODE == "subgroup":
            group = dist.new_group([0, 2])  # every rank calls it; rank 1 is not a member
            if rank == 1:
                print("DDP-EQUIVALENCE subgroup: rank 1 is outside the group")
                dist.destroy_process_group()
                finish()
        compression = MODE if MODE in ("fp16", "bf16", "int8", "powersgd") else None
        process_group = paisoar.communicator(backend="gloo") if MODE == "gloo" else group
        ours = paisoar.DistributedDataParallel(make_model(), process_group=process_group,
                                               gradient_compression=compression, powersgd_rank=4)
        if MODE == "hook":
            ours.register_comm_hook(None, default_hooks.fp16_compress_hook)
        loss_ours, _ = train(ours, rank, accumulate=MODE == "no_sync")
    torch_ddp = torch.nn.parallel.DistributedDataParallel(make_model(), process_group=group)
    if MODE in ("fp16", "hook"):
        torch_ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif MODE == "bf16":
        torch_ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)
    elif MODE == "powersgd":
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=4,
                                            start_powerSGD_iter=2, use_error_feedback=True)
        torch_ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    loss_torch, grads = train(torch_ddp, rank, accumulate=MODE == "no_sync")

    if MODE in ("plain", "no_sync", "own_group", "gloo", "subgroup"):
        worst = compare(ours, torch_ddp, 1e-6, "fp32")
    elif MODE in ("fp16", "hook"):
        worst = compare(ours, torch_ddp, 1e-4, "half-precision rounding")
    elif MODE == "bf16":
        worst = compare(ours, torch_ddp, 2e-3, "bfloat16 rounding")
    elif MODE == "int8":
        bound = sum(LR * g / 127 / 2 for g in grads) * 10  # momentum carries each step's error ~10x
        worst = compare(ours, torch_ddp, bound, f"half an int8 step per step, summed: {bound:.3g}")
    else:
        worst = abs(loss_ours - loss_torch) / loss_torch
        if worst > 0.05:
            sys.exit(f"DDP-EQUIVALENCE powersgd FAILED: loss {loss_ours:.4f} vs torch's {loss_torch:.4f}")
    digests = [None] * dist.get_world_size(group)
    dist.all_gather_object(digests, [p.detach().sum().item() for p in ours.parameters()], group=group)
    if any(d != digests[0] for d in digests):
        sys.exit(f"DDP-EQUIVALENCE {MODE} FAILED: the ranks' parameters differ")
    print(f"DDP-EQUIVALENCE {MODE} OK rank {rank} max_diff={worst:.3g} loss {loss_ours:.4f} "
          f"(torch {loss_torch:.4f})")
    # torch's DDP holds the group: alive past destroy_process_group, its Gloo
    # backend lives into interpreter shutdown, where a worker thread releasing
    # a Python-owned tensor aborts the process (1 run in ~20 here).
    del torch_ddp
    gc.collect()  # its comm hook's state may hold it in a cycle
    dist.destroy_process_group()
    finish()


main()
