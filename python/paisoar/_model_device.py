"""The device type paisoar's amp takes where the script names none (autocast's
device_type, GradScaler's device): the wrapped model's, noted by
DistributedDataParallel, else 'cuda' when a GPU is visible, else 'cpu'."""
import warnings

import torch

_model_device = None  # where the last DistributedDataParallel's module lives
_said = set()  # the choices already announced


def note_model_device(device):
    """Called by DistributedDataParallel: amp's default device is the model's."""
    global _model_device
    _model_device = torch.device(device).type


def default_device_type():
    """The wrapped model's device type, else 'cuda' when a GPU is visible, else 'cpu'."""
    if _model_device is not None:
        return _model_device
    return "cuda" if torch.cuda.is_available() else "cpu"


def say_once(key, message):
    """A UserWarning for a choice paisoar made for the script, once per process per `key`."""
    if key not in _said:
        _said.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)
