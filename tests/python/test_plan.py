"""paisoar.plan: the planner's ranking from Python is `paisoar plan --json`'s
(the same layouts and overrides, fastest first, from the same cost cache),
its refusals name the argument, and parallel: auto is refused for a model
the planner does not know."""
import json
import subprocess
from pathlib import Path

import pytest
import torch

import paisoar

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "fashion_mnist.yaml"


def test_python_plans_are_the_clis(tmp_path):
    cache = tmp_path / "costs.json"
    plans = paisoar.plan(CONFIG, nproc=2, cache=cache)
    assert len(plans) >= 10
    assert [p["predicted_step_ms"] for p in plans] == sorted(p["predicted_step_ms"] for p in plans)
    for p in plans:
        assert p["nproc"] == 2 and p["predicted_peak_mib"] > 0
        assert any(o.startswith("zero.stage=") for o in p["overrides"])
    cli = subprocess.run([str(ROOT / "build" / "bin" / "paisoar"), "plan", "--config", str(CONFIG), "--nproc", "2",
                          "--cache", str(cache), "--json", str(tmp_path / "cli.json")],
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    from_cli = json.loads((tmp_path / "cli.json").read_text())
    # The same measurements (the cache) give the same ranking and numbers.
    assert [p["overrides"] for p in from_cli] == [p["overrides"] for p in plans]
    assert [p["predicted_step_ms"] for p in from_cli] == pytest.approx([p["predicted_step_ms"] for p in plans])


def test_a_budget_no_layout_fits_is_a_config_error(tmp_path):
    with pytest.raises(paisoar.ConfigError, match=r"no layout fits 1.0 MiB per rank; the smallest, .* needs"):
        paisoar.plan(CONFIG, nproc=2, memory_budget_mib=1, cache=tmp_path / "costs.json")
    with pytest.raises(ValueError, match="nproc must be a positive int"):
        paisoar.plan(CONFIG, nproc=0)
    with pytest.raises(ValueError, match="memory_budget_mib"):
        paisoar.plan(CONFIG, nproc=2, memory_budget_mib=-1)


def test_parallel_auto_with_your_own_model_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"parallel: auto plans the reference models"):
        paisoar.train(model=torch.nn.Linear(2, 2), overrides=["parallel=auto", f"run_dir={tmp_path}"])
