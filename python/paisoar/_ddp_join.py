"""DistributedDataParallel's side of torch.distributed.algorithms.join
(uneven inputs): while a rank that ran out of inputs waits in Join, it
shadows each forward and backward of the others with the same collectives
(buffers, the backward-sync vote, every bucket with zero gradients), and at
the end every rank takes the model of the last rank to join."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch.distributed.algorithms.join import JoinHook

if TYPE_CHECKING:
    from .parallel import DistributedDataParallel


class DDPJoinHook(JoinHook):
    def __init__(self, ddp: DistributedDataParallel, divide_by_initial_world_size: bool) -> None:
        self.ddp = ddp
        ddp._divide_by_initial_world_size = bool(divide_by_initial_world_size)

    def main_hook(self) -> None:
        """One iteration of the ranks still training, with nothing of this rank's own."""
        ddp = self.ddp
        if ddp._will_sync_buffers():
            ddp._sync_buffers_from(ddp._common_rank(candidate=False))
        should_sync = ddp._vote_backward_sync(joined=True)
        ddp.require_forward_param_sync = should_sync
        if should_sync:
            ddp._reducer.shadow_backward()

    def post_hook(self, is_last_joiner: bool) -> None:
        """Every rank takes the parameters (and buffers) of the last rank to join."""
        ddp = self.ddp
        root = ddp._common_rank(candidate=is_last_joiner)
        tensors = [p.detach() for p in ddp._ddp_parameters()]
        if ddp.forward_sync_buffers:
            tensors += ddp._ddp_buffers()
        with torch.no_grad():
            ddp._reducer.broadcast(tensors, root)
        ddp._reducer.set_gradient_divisor(ddp._comm.size)
