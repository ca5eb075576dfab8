"""`python -m paisoar` and the `paisoar` console script: the CLI (launch,
train, convert, bench, ...) that the package carries in paisoar/bin. Scripts
that `paisoar launch` starts run under this Python, as torchrun's run under
its own, so they import the torch this paisoar was built for; PAISOAR_PYTHON
(or torchrun's PYTHON_EXEC), when set, says otherwise."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    cli = Path(__file__).resolve().parent / "bin" / "paisoar"
    if not os.access(cli, os.X_OK):
        sys.exit(f"paisoar: the CLI is missing from the package ({cli}); reinstall with `pip install .`")
    if sys.executable and not os.environ.get("PAISOAR_PYTHON") and not os.environ.get("PYTHON_EXEC"):
        os.environ["PAISOAR_PYTHON"] = sys.executable
    os.execv(str(cli), [str(cli), *sys.argv[1:]])


if __name__ == "__main__":
    main()
