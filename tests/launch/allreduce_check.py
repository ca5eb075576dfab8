"""A rank program for the launcher tests: joins the group from the
environment paisoar launch sets (env://, gloo), all-reduces rank+1 and checks
the sum is the triangular number world*(world+1)/2. Prints OK or exits 1.

Usage: allreduce_check.py [EXPECTED_WORLD_SIZE]
"""
import os
import sys

import torch
import torch.distributed as dist


def main() -> int:
    dist.init_process_group("gloo")  # reads MASTER_ADDR/PORT, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()
    expected_world = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ["WORLD_SIZE"])
    if world != expected_world:
        print(f"MISMATCH rank={rank}: world size {world}, expected {expected_world}", flush=True)
        return 1
    t = torch.full((8,), float(rank + 1))
    dist.all_reduce(t)
    expected = world * (world + 1) / 2
    if not bool(torch.all(t == expected)):
        print(f"MISMATCH rank={rank}: got {t.tolist()}, expected {expected}", flush=True)
        return 1
    print(f"OK rank={rank} world={world} sum={int(t[0].item())}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
