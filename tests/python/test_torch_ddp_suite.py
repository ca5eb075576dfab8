"""PyTorch's own DDP tests (distributed_test.py of the installed wheel), run
by torch_ddp_suite/run.py on gloo, 2 ranks, the CPU, with torch's DDP and with
paisoar's in its place: every test that passes with torch's must pass with
paisoar's, but those docs/PYTHON.md excludes (they read torch's internals),
and each exclusion must still be a test that passes with torch and fails
with paisoar."""
import json
import subprocess
import sys
from pathlib import Path

RUN = Path(__file__).resolve().parent / "torch_ddp_suite" / "run.py"
# The control passes this many here (docs/PYTHON.md); far fewer means the harness or the shim broke.
CONTROL_AT_LEAST = 60


def test_every_torch_ddp_test_that_passes_with_torch_passes_with_paisoar(tmp_path):
    results = tmp_path / "results.json"
    done = subprocess.run([sys.executable, str(RUN), "--jobs", "2", "--json", str(results),
                           "--logs", str(tmp_path / "logs")], capture_output=True, text=True, timeout=1500)
    output = done.stdout[-20000:] + done.stderr[-5000:]
    assert results.exists(), output
    verdict = json.loads(results.read_text())["verdict"]
    assert len(verdict["passed_torch"]) >= CONTROL_AT_LEAST, output
    assert not verdict["fail_with_paisoar"], output
    assert not verdict["stale_exclusions"], output
    assert done.returncode == 0, output
