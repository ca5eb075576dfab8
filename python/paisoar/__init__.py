"""paisoar for Python: the C++ training-acceleration core (DDP's gradient
engine, amp's loss scaling, the threaded data pipeline, the launcher) under
PyTorch's own API names, so that

    from paisoar import amp
    from paisoar import DistributedDataParallel as DDP

run existing training scripts on paisoar. `paisoar launch` starts them on
several ranks. See docs/PYTHON.md.
"""
from ._native import _C
from . import amp, checkpoint, data, optim, zero
from ._comm import communicator, own_group
from .parallel import DistributedDataParallel
from .trainer import Trainer, train
from .planner import plan

CommError = _C.CommError
DataError = _C.DataError
ConfigError = _C.ConfigError

__version__ = _C.version
__all__ = ["amp", "checkpoint", "data", "optim", "zero", "Trainer", "train", "plan", "communicator", "own_group", "DistributedDataParallel", "CommError", "DataError",
           "ConfigError", "__version__"]
