"""paisoar.train: the C++ Trainer from a YAML config (the keys of
`paisoar train`, docs/TRAIN.md), with the reference model the config names
or your own torch.nn.Module, and the data set the config names or a paisoar
data set. Data parallelism (DDP, or ZeRO 1-2 by `zero.stage`), amp by
`amp.dtype`, the threaded loader, checkpoints with exact resume, the
profiler's report and metrics are the Trainer's; your module's forward is
called back in Python (one call per micro-batch: measured, docs/PYTHON.md).

    result = paisoar.train("configs/fashion_mnist.yaml", model=MyCnn(),
                           overrides={"train.epochs": 2, "optimizer.lr": 0.1})

Run it on every rank (`paisoar launch --nproc_per_node 2 -- script.py`).
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Union

import torch

from ._native import _C
from ._types import MapDataset

# overrides=: {"key.path": value} or ["key.path=value", ...], as `paisoar train --set`.
Overrides = Union[dict[str, Any], Iterable[str]]
# dataset= and eval_dataset=: a paisoar.data set, a map-style torch Dataset, or None (the config's).
DatasetArg = Union[_C.Dataset, MapDataset, None]


def _flatten(overrides: Overrides) -> list[str]:
    if isinstance(overrides, dict):
        return [f"{key}={_yaml(value)}" for key, value in overrides.items()]
    return [str(o) for o in overrides]


def _yaml(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    return str(value)


class Trainer:
    """The C++ Trainer over a config, your model and your data:
    `Trainer(config, model=MyNet(), dataset=ds).fit()` is `train(...)`.
    `config`: a YAML path (None: the built-in defaults); `overrides`:
    {"key.path": value} or ["key.path=value"], as `--set`. `model` maps a
    batch of inputs to logits; the Trainer moves it to `device` and owns its
    optimizer. `dataset` and `eval_dataset`: paisoar.data sets (ImageFolder,
    RecordShards, IdxDataset), or map-style torch Datasets of (tensor, class
    index), instead of the config's `data.*`. The arguments are checked here;
    the config when fit() reads it."""

    def __init__(self, config: str | os.PathLike[str] | None = None, model: torch.nn.Module | None = None,
                 dataset: DatasetArg = None, eval_dataset: DatasetArg = None, overrides: Overrides = ()) -> None:
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(f"paisoar.train: model must be a torch.nn.Module, got {type(model).__name__}")
        if eval_dataset is not None and dataset is None:
            raise ValueError("paisoar.train: eval_dataset needs dataset too (or neither: the config's data)")
        self.config = config
        self.model = model
        self.dataset = _as_dataset("dataset", dataset)
        self.eval_dataset = _as_dataset("eval_dataset", eval_dataset)
        self.overrides = _flatten(overrides)

    def fit(self) -> dict[str, int | float | str]:
        """Trains and returns {steps, global_step, resumed_from, seconds,
        samples_per_s, final_loss, accuracy, time_to_target_s}. Collective:
        every rank calls it. A run_dir holding a finished run's checkpoint
        resumes it (and takes no step)."""
        model = self.model
        params = list(model.named_parameters()) if model is not None else []
        buffers = list(model.named_buffers()) if model is not None else []
        return _C.train("" if self.config is None else str(self.config), self.overrides, model,
                        [n for n, _ in params], [p for _, p in params], [n for n, _ in buffers],
                        [b for _, b in buffers], self.dataset, self.eval_dataset)


def train(config: str | os.PathLike[str] | None = None, model: torch.nn.Module | None = None,
          dataset: DatasetArg = None, eval_dataset: DatasetArg = None,
          overrides: Overrides = ()) -> dict[str, int | float | str]:
    """Trainer(config, model, dataset, eval_dataset, overrides).fit(): trains
    and returns the result dict. Collective: every rank calls it."""
    return Trainer(config, model, dataset, eval_dataset, overrides).fit()


def _as_dataset(name: str, value: DatasetArg) -> _C.Dataset | None:
    """A paisoar.data set as it is; a map-style torch Dataset through the C++
    adapter (its samples fetched in Python, batched in C++)."""
    if value is None or isinstance(value, _C.Dataset):
        return value
    if isinstance(value, torch.utils.data.IterableDataset) or not (hasattr(value, "__getitem__")
                                                                    and hasattr(value, "__len__")):
        raise TypeError(f"paisoar.train: {name} must be a paisoar.data set (ImageFolder, RecordShards, "
                        f"IdxDataset) or a map-style torch Dataset (__getitem__ and __len__), got "
                        f"{type(value).__name__}")
    return _C.PythonDataset(value)
