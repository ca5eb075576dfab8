"""`python -m paisoar` and the `paisoar` console script: the CLI (launch,
train, convert, bench, ...) that the package carries in paisoar/bin. Scripts
that `paisoar launch` starts run under this Python unless PAISOAR_PYTHON says
otherwise, so they import this paisoar."""
import os
import sys
from pathlib import Path


def main():
    cli = Path(__file__).resolve().parent / "bin" / "paisoar"
    if not os.access(cli, os.X_OK):
        sys.exit(f"paisoar: the CLI is missing from the package ({cli}); reinstall with `pip install .`")
    os.environ.setdefault("PAISOAR_PYTHON", sys.executable)
    os.execv(str(cli), [str(cli), *sys.argv[1:]])


if __name__ == "__main__":
    main()
