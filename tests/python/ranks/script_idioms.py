"""The idioms of real training scripts (nanoGPT's train.py and the PyTorch
tutorials), written once and run under `paisoar launch` with torch's names
(torch.nn.parallel.DistributedDataParallel, torch.amp.GradScaler) or with
paisoar's (paisoar.DistributedDataParallel, paisoar.amp.GradScaler); the test
compares what the two runs print, which must be equal:

  flag       gradient accumulation by `model.require_backward_grad_sync = (micro_step == last)`
  no_sync    gradient accumulation with the first micro-steps under `with model.no_sync():`
  scaler     nanoGPT's loop with a GradScaler: scale, unscale_, clip_grad_norm_, step, update
  save       rank 0 saves the model's state_dict, the optimizer's and the wrapper itself (torch.save)
  eval       an evaluation under torch.no_grad() (model.eval()) after each step

Every mode trains a model with a BatchNorm (buffers broadcast) for STEPS
steps; each rank prints every loss and the final parameters and buffers as
exact hex floats. Usage: script_idioms.py torch|paisoar MODE OUT_DIR
"""
import os
import sys

import torch
import torch.distributed as dist

from common import finish

NAMES, MODE, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
STEPS, MICRO, BATCH = 6, 3, 8

if NAMES == "torch":
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.amp import GradScaler
else:
    from paisoar import DistributedDataParallel as DDP
    from paisoar.amp import GradScaler

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
raw = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU(),
                          torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
model = DDP(raw)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scaler = GradScaler("cpu", init_scale=2.0 ** 10) if MODE == "scaler" else None
data = torch.Generator().manual_seed(1000 + rank)


def batch():
    x = torch.randn(BATCH, 12, generator=data)
    return x, x[:, :4].argmax(1)


def loss_of(x, y):
    return torch.nn.functional.cross_entropy(model(x), y)


def report(tag, value):
    print(f"{tag} rank {rank}: {float(value).hex()}", flush=True)


for step in range(STEPS):
    if MODE == "no_sync":
        with model.no_sync():
            for _ in range(MICRO - 1):
                (loss_of(*batch()) / MICRO).backward()
        loss = loss_of(*batch()) / MICRO
        loss.backward()
    else:  # nanoGPT's loop
        for micro_step in range(MICRO):
            model.require_backward_grad_sync = micro_step == MICRO - 1
            loss = loss_of(*batch()) / MICRO
            (scaler.scale(loss) if MODE == "scaler" else loss).backward()
    if MODE == "scaler":
        scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if MODE == "scaler":
        scaler.step(optimizer)
        scaler.update()
        report(f"step {step} scale", scaler.get_scale())
    else:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    report(f"step {step} loss", loss.item())
    report(f"step {step} grad-norm", norm.item())
    if MODE == "eval":
        model.eval()
        with torch.no_grad():
            report(f"step {step} eval", loss_of(*batch()).item())
        model.train()

if MODE == "save" and rank == 0:
    path = os.path.join(OUT, f"checkpoint-{NAMES}.pt")
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)
    torch.save(model, os.path.join(OUT, f"wrapper-{NAMES}.pt"))
    saved = torch.load(path)
    for name, t in saved["model"].items():
        report(f"saved {name}", t.double().sum())
    wrapper = torch.load(os.path.join(OUT, f"wrapper-{NAMES}.pt"), weights_only=False)
    report("saved wrapper", sum(p.double().sum() for p in wrapper.module.parameters()))
    report("saved wrapper's class is the script's", type(wrapper) is DDP)
dist.barrier()
for name, t in list(model.module.named_parameters()) + list(model.module.named_buffers()):
    report(f"final {name}", t.detach().double().sum())
del model
dist.destroy_process_group()
finish()
