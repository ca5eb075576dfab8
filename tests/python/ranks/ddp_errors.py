"""Bad input to paisoar.DistributedDataParallel on 2 ranks; each rank must get
the exception (not hang, not crash) and print "DDP-ERRORS <mode> OK".

  mismatch  rank 1's model has a wider layer: both ranks raise naming it
"""
import sys

import torch

import torch.distributed as dist

import paisoar

from common import finish

mode = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
try:
    width = 8 if rank == 0 else 9
    paisoar.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(4, width), torch.nn.Linear(width, 2)))
except (RuntimeError, ValueError) as error:
    text = str(error)
    wanted = "0.weight"
    if wanted not in text:
        sys.exit(f"DDP-ERRORS {mode} FAILED: the message does not name {wanted!r}: {text}")
    print(f"DDP-ERRORS {mode} OK rank {rank}: {text.splitlines()[0]}")
else:
    sys.exit(f"DDP-ERRORS {mode} FAILED: no error on rank {rank}")
dist.barrier()
dist.destroy_process_group()
finish()
