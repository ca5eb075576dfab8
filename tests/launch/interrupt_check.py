"""A rank program for the launcher tests: waits, and on Ctrl-C (SIGINT, as
KeyboardInterrupt) shuts down gracefully, as PyTorch Lightning's Trainer
does: prints "graceful shutdown" and exits with 3. CPython raises
KeyboardInterrupt only when SIGINT was at its default action at start."""
import sys
import time

try:
    print("READY", flush=True)  # inside the try: a Ctrl-C right after it is caught too
    time.sleep(60)
except KeyboardInterrupt:
    print("graceful shutdown", flush=True)
    sys.exit(3)
print("not interrupted", flush=True)
