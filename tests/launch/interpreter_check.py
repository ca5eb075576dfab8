"""A rank program for the launcher tests: prints which Python runs it and
the torch it imports (EXECUTABLE=..., TORCH=...); under a Python without
torch it dies with ModuleNotFoundError, as a training script would."""
import sys

print(f"EXECUTABLE={sys.executable}")
import torch  # noqa: E402  (after the print: the interpreter is named either way)

print(f"TORCH={torch.__version__}")
