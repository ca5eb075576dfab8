"""Loads paisoar._C after checking that this environment's torch is the one it
was compiled against: a C++ extension only loads into that torch, and the
failure otherwise is an undefined symbol that names neither."""
import torch

try:
    from . import _build_info
except ImportError as exc:  # a source tree, not an installed package
    raise ImportError(
        "paisoar's native part is not built here: install the package with "
        "`pip install .` from the paisoar repository (it builds with CMake against "
        "this environment's torch), then import it from outside the source tree") from exc

if torch.__version__ != _build_info.TORCH_VERSION:
    raise ImportError(
        f"paisoar was built against torch {_build_info.TORCH_VERSION}, but this environment "
        f"has torch {torch.__version__}; a C++ extension only loads into the torch it was "
        "compiled with. Rebuild paisoar here: `pip install --force-reinstall --no-deps .` "
        "in the paisoar repository, or install torch " + _build_info.TORCH_VERSION)

from . import _C  # noqa: E402  (after the check, on purpose)

__all__ = ["_C"]
