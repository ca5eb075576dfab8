"""paisoar.plan: every layout a config's reference model can take on N
ranks (data x pipeline x tensor, ZeRO stage, micro-batches, activation
checkpointing), ranked by the step time the planner predicts from
measurements made in this process, as `paisoar plan --json` lists them
(docs/PLANNER.md).

    plans = paisoar.plan("configs/fashion_mnist.yaml", nproc=4)
    best = plans[0]      # {"overrides": ["parallel.data=4", ...], "predicted_step_ms": ..., ...}
    paisoar.train("configs/fashion_mnist.yaml", overrides=best["overrides"])

`parallel: auto` in a config trains the first plan by itself.
"""
from __future__ import annotations

import json
import os
from typing import Any

from ._native import _C
from .trainer import Overrides, _flatten


def plan(config: str | os.PathLike[str] | None = None, nproc: int = 2, nodes: int = 1,
         memory_budget_mib: float = 0.0, overrides: Overrides = (),
         cache: str | os.PathLike[str] | None = None, print_table: bool = False) -> list[dict[str, Any]]:
    """The feasible layouts, fastest predicted first: dicts with "overrides"
    (the `--set` strings that turn `config` into that layout), "nproc",
    "predicted_step_ms" and its parts, "predicted_peak_mib". `cache`: the
    measurements kept between plans (None: ~/.cache/paisoar/plan_costs.json;
    "-": none). Raises paisoar.ConfigError when no layout fits (naming the
    smallest one's need) or the model takes none on `nproc` ranks."""
    if not isinstance(nproc, int) or nproc < 1:
        raise ValueError(f"paisoar.plan: nproc must be a positive int, got {nproc!r}")
    if not isinstance(nodes, int) or nodes < 1:
        raise ValueError(f"paisoar.plan: nodes must be a positive int, got {nodes!r}")
    if memory_budget_mib < 0:
        raise ValueError(f"paisoar.plan: memory_budget_mib must be 0 (none) or more, got {memory_budget_mib!r}")
    text, table = _C.plan("" if config is None else str(config), _flatten(overrides), nproc, nodes,
                          float(memory_budget_mib), "" if cache is None else str(cache))
    if print_table:
        print(table, end="")
    plans: list[dict[str, Any]] = json.loads(text)
    return plans
