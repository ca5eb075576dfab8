"""paisoar.zero.ZeroOptimizer (stage 1, 2 or 3, AdamW on the shard, a
GradScaler over it given the group, global-norm clipping over the shards; a
GradScaler without the group is refused) against torch's DDP
with AdamW and clip_grad_norm_, from the same weights and per-rank data, 10
steps: parameters within 1e-6 (AdamW is elementwise, so sharding changes no
number), and this rank holding about half of AdamW's state (at stage 3, of
the parameters too). The model nests a module with parameters of its own
around a child, and an in-place ReLU follows a unit (stage 3's hooks).
Prints "ZERO-EQUIVALENCE stage<N> OK". Usage: zero_equivalence.py STAGE
"""
import sys

import torch

import torch.distributed as dist

from paisoar import amp, zero

from common import finish

STAGE = int(sys.argv[1])
STEPS = 10


class Gated(torch.nn.Module):
    """A parameter of its own around a child with its own: nested units at stage 3."""

    def __init__(self):
        super().__init__()
        self.gain = torch.nn.Parameter(torch.linspace(0.5, 1.5, 48))
        self.inner = torch.nn.Linear(64, 48)

    def forward(self, x):
        return self.inner(x) * self.gain


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(inplace=True), Gated(),
                               torch.nn.ReLU(), torch.nn.Linear(48, 5))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(16, 20, generator=g)
    return x, x[:, :5].argmax(1)


dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
ours_model = make_model()
ours = zero.ZeroOptimizer(ours_model, torch.optim.AdamW, stage=STAGE, lr=1e-2, weight_decay=0.01,
                          bucket_cap_mb=0.005, first_bucket_mb=0.002)
unagreed = amp.GradScaler("cpu", init_scale=1024.0)  # no process_group: refused, each rank holds a shard
unagreed.scale(torch.ones(()))
try:
    unagreed.step(ours)
    sys.exit(f"ZERO-EQUIVALENCE stage{STAGE} FAILED: a GradScaler without process_group stepped the shards")
except ValueError as e:
    if "process_group=" not in str(e):
        sys.exit(f"ZERO-EQUIVALENCE stage{STAGE} FAILED: the refusal does not say what to pass: {e}")
scaler = amp.GradScaler("cpu", init_scale=1024.0, process_group=dist.group.WORLD)
theirs_model = torch.nn.parallel.DistributedDataParallel(make_model())
theirs = torch.optim.AdamW(theirs_model.parameters(), lr=1e-2, weight_decay=0.01)
for step in range(STEPS):
    x, y = batch(rank, step)
    ours.zero_grad()
    scaler.scale(torch.nn.functional.cross_entropy(ours_model(x), y)).backward()
    scaler.unscale_(ours)
    ours.clip_grad_norm_(0.5)
    scaler.step(ours)
    scaler.update()
    theirs.zero_grad()
    torch.nn.functional.cross_entropy(theirs_model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(theirs_model.parameters(), 0.5)
    theirs.step()
with ours.gathered():  # stage 3's parameters hold memory only inside
    worst = max((a.detach() - b.detach()).abs().max().item()
                for a, b in zip(ours_model.parameters(), theirs_model.parameters()))
if worst > 1e-6:
    sys.exit(f"ZERO-EQUIVALENCE stage{STAGE} FAILED: parameters differ from torch's by {worst:.3g}")
held = ours.memory()["optimizer_state"]
full = sum(2 * p.numel() * 4 for p in theirs_model.parameters())  # exp_avg + exp_avg_sq
if not held < 0.7 * full:
    sys.exit(f"ZERO-EQUIVALENCE stage{STAGE} FAILED: this rank holds {held} bytes of AdamW state, "
             f"unsharded {full}")
params = ours.memory()["parameters"]
full_params = sum(p.numel() * 4 for p in theirs_model.parameters())
if STAGE == 3 and not params < 0.7 * full_params:
    sys.exit(f"ZERO-EQUIVALENCE stage3 FAILED: this rank holds {params} bytes of parameters, "
             f"unsharded {full_params}")
print(f"ZERO-EQUIVALENCE stage{STAGE} OK rank {rank} max_diff={worst:.3g} state {held}/{full} "
      f"parameters {params}/{full_params} bytes")
del theirs_model
dist.destroy_process_group()
finish()
