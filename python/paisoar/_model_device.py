"""The device type paisoar's amp takes where the script names none (autocast's
device_type, GradScaler's device): the wrapped model's, noted by
DistributedDataParallel, else 'cuda' when a GPU is visible, else 'cpu'."""
from __future__ import annotations

import warnings
from collections.abc import Hashable

import torch

_model_device: str | None = None  # where the last DistributedDataParallel's module lives
_said: set[Hashable] = set()  # the choices already announced


def note_model_device(device: torch.device | str) -> None:
    """Called by DistributedDataParallel: amp's default device is the model's."""
    global _model_device
    _model_device = torch.device(device).type


def default_device_type() -> str:
    """The wrapped model's device type, else 'cuda' when a GPU is visible, else 'cpu'."""
    if _model_device is not None:
        return _model_device
    return "cuda" if torch.cuda.is_available() else "cpu"


def say_once(key: Hashable, message: str) -> None:
    """A UserWarning for a choice paisoar made for the script, once per process per `key`."""
    if key not in _said:
        _said.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)
