"""Real scripts, unchanged but for their import lines: the usual training-loop
idioms (ranks/script_idioms.py) under `paisoar launch` on 2 ranks, once with
torch's DistributedDataParallel and GradScaler and once with paisoar's; every
loss, gradient norm, saved tensor and final parameter and buffer must be
bit-equal (2 ranks: averaging is exact either way, halving being exact)."""
import re

import pytest

REPORT = re.compile(r"^(?:\[rank[01]\]: )?((?:step|saved|final) .* rank [01]: .*)$", re.M)
FINALS = 9  # the model's 6 parameters and 3 buffers


def reports(output):
    return sorted(REPORT.findall(output))


@pytest.mark.parametrize("mode, per_step", [("flag", 2), ("no_sync", 2), ("scaler", 3), ("save", 2), ("eval", 3)])
def test_a_script_gives_the_same_numbers_with_paisoars_names(launch, tmp_path, mode, per_step):
    with_torch = reports(launch("script_idioms.py", "torch", mode, tmp_path))
    with_paisoar = reports(launch("script_idioms.py", "paisoar", mode, tmp_path))
    assert len(with_torch) >= 2 * (6 * per_step + FINALS), "\n".join(with_torch)
    differ = sorted(set(with_torch) ^ set(with_paisoar))
    assert with_torch == with_paisoar, "lines in one run only:\n" + "\n".join(differ)
