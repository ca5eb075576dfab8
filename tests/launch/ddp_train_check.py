"""A rank program for the launcher tests: trains a small MLP with
torch.nn.parallel.DistributedDataParallel over gloo (env://, as paisoar launch
sets it up), each rank on its DistributedSampler shard of a fixed synthetic
data set, then checks that (1) every rank holds the same parameters (an
allgather) and (2) they equal a single-process run over the whole batch on
rank 0, within 1e-5 (fp32 sums in another order), and (3) the loss fell.
Prints "TRAINED rank=R world=W loss A -> B" or exits 1 saying what differs.

Usage: ddp_train_check.py [EXPECTED_WORLD_SIZE]
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

STEPS, GLOBAL_BATCH, LR = 8, 32, 0.2


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))


def data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(STEPS * GLOBAL_BATCH, 16, generator=g)
    return TensorDataset(x, (x[:, :4].sum(1) > 0).long() + 2 * (x[:, 4] > 0).long())


def train(model, loader):
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main() -> int:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    expected_world = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ["WORLD_SIZE"])
    if world != expected_world or GLOBAL_BATCH % world:
        print(f"MISMATCH rank={rank}: world size {world}, expected {expected_world}", flush=True)
        return 1
    ds = data()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    ddp = DDP(make_model())
    losses = train(ddp, DataLoader(ds, batch_size=GLOBAL_BATCH // world, sampler=sampler))
    mine = torch.cat([p.detach().flatten() for p in ddp.module.parameters()])
    everyone = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(everyone, mine)
    for r, theirs in enumerate(everyone):
        if not torch.equal(theirs, mine):
            print(f"MISMATCH rank={rank}: rank {r}'s parameters differ by {(theirs - mine).abs().max()}", flush=True)
            return 1
    if rank == 0:
        # The single-process reference: the same samples, whole batches. With
        # shuffle=False, DistributedSampler gives rank r samples r, r+W, ...;
        # a whole batch of the reference holds each rank's shard of that step.
        reference = make_model()
        order = torch.cat([torch.arange(s * GLOBAL_BATCH, (s + 1) * GLOBAL_BATCH) for s in range(STEPS)])
        ref_losses = train(reference, DataLoader(torch.utils.data.Subset(ds, order.tolist()), batch_size=GLOBAL_BATCH))
        ref = torch.cat([p.detach().flatten() for p in reference.parameters()])
        diff = (ref - mine).abs().max().item()
        if diff > 1e-5:
            print(f"MISMATCH rank=0: DDP's parameters differ from one process's by {diff}", flush=True)
            return 1
        if not ref_losses[-1] < ref_losses[0]:
            print(f"MISMATCH rank=0: the loss did not fall: {ref_losses}", flush=True)
            return 1
    print(f"TRAINED rank={rank} world={world} loss {losses[0]:.4f} -> {losses[-1]:.4f}", flush=True)
    # DDP holds the group: drop it first, so destroy_process_group ends the
    # group's Gloo threads here, while this frame still holds the tensors of
    # the last collectives. Otherwise a thread frees its last collective
    # (whose tensors only it then holds) during interpreter shutdown, and
    # torch 2.14 aborts the rank ("terminate called without an active
    # exception"), more often the busier the machine is.
    del ddp
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
