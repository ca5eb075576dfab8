"""pytest support for the Python package's tests: `launch` runs a rank
program under `paisoar launch` (the installed console script) and fails the
test with the job's output when any rank fails, so a peer's failure fails the
test instead of skipping it."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

RANKS = Path(__file__).resolve().parent / "ranks"


def run_launched(script, *args, nproc=2, env=None, timeout=300, expect_ok=True):
    command = [sys.executable, "-m", "paisoar", "launch", "--nproc_per_node", str(nproc),
               "--master_port", "0", "--", str(RANKS / script), *map(str, args)]
    full_env = dict(os.environ, PAISOAR_PYTHON=sys.executable, OMP_NUM_THREADS="1", **(env or {}))
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=full_env)
    output = done.stdout + done.stderr
    if expect_ok and done.returncode != 0:
        pytest.fail(f"{script} failed (exit {done.returncode}):\n{output}")
    if not expect_ok and done.returncode == 0:
        pytest.fail(f"{script} was expected to fail but succeeded:\n{output}")
    return output


@pytest.fixture
def launch():
    return run_launched
