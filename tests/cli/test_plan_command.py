"""`paisoar plan` and `parallel: auto` through the real binary: the ranked
table's columns and the JSON list (best first, with the overrides that make
each layout), the chosen plan trained (the run's config is the plan's first
layout), and the bad inputs: a budget no layout fits (the smallest one's
need named, exit 2), a world the model cannot use (its limit named), a
corrupt cost cache (a warning, measured again, the file rewritten)."""
import json

from cli_support import ROOT, run

CONFIG = ROOT / "configs" / "fashion_mnist.yaml"
COLUMNS = ["DxPxT", "micro", "zero", "ckpt", "step ms", "compute", "comm", "bubble", "optim", "peak MiB"]


def plan(tmp_path, *args):
    return run("plan", "--config", CONFIG, "--cache", tmp_path / "costs.json", *args, timeout=300)


def test_the_ranked_table_and_json_list_best_first(tmp_path):
    r = plan(tmp_path, "--nproc", 2, "--json", tmp_path / "plans.json")
    assert r.code == 0, r
    header = next(line for line in r.out.splitlines() if "DxPxT" in line)
    for column in COLUMNS:
        assert column in header, header
    plans = json.loads((tmp_path / "plans.json").read_text())
    assert len(plans) >= 10, plans
    steps = [p["predicted_step_ms"] for p in plans]
    assert steps == sorted(steps)
    for p in plans:
        assert p["nproc"] == 2
        assert p["predicted_peak_mib"] > 0
        parts = (p["predicted_compute_ms"] + p["predicted_exposed_comm_ms"] + p["predicted_bubble_ms"] +
                 p["predicted_optimizer_ms"])
        assert abs(parts - p["predicted_step_ms"]) < 1e-6 * p["predicted_step_ms"]
        keys = {o.split("=")[0] for o in p["overrides"]}
        assert {"parallel.data", "parallel.pipeline", "parallel.tensor", "zero.stage",
                "activation_checkpointing"} <= keys, p
    assert {(p["data"], p["pipeline"], p["tensor"]) for p in plans} == {(2, 1, 1), (1, 2, 1), (1, 1, 2)}
    # The table's first row is the JSON's first plan; its overrides are printed.
    assert " ".join("--set " + o for o in plans[0]["overrides"]) in r.out
    # The second plan reads the cache: the same ranking, nothing measured again.
    again = plan(tmp_path, "--nproc", 2, "--json", "-")
    assert again.code == 0, again
    assert again.err == "", again


def test_a_budget_no_layout_fits_names_the_smallest_ones_need(tmp_path):
    r = plan(tmp_path, "--nproc", 2, "--memory-budget", 1)
    assert r.code == 2, r
    assert "paisoar plan: no layout fits 1.0 MiB per rank; the smallest, " in r.err, r
    assert "on 2 ranks, needs " in r.err and "raise --memory-budget" in r.err, r
    fits = plan(tmp_path, "--nproc", 2, "--memory-budget", 12, "--json", tmp_path / "fit.json")
    assert fits.code == 0, fits
    assert all(p["predicted_peak_mib"] <= 12 for p in json.loads((tmp_path / "fit.json").read_text()))
    assert "over the 12.0 MiB budget" in fits.out, fits


def test_a_world_the_model_cannot_use_names_its_limit(tmp_path):
    r = plan(tmp_path, "--nproc", 5)
    assert r.code == 2, r
    assert "no layout of fashion_cnn fits 5 ranks" in r.err, r
    assert "fashion_cnn has 4 layers" in r.err, r
    nodes = plan(tmp_path, "--nproc", 3, "--nodes", 2)
    assert nodes.code == 2 and "--nproc 3 does not split over --nodes 2" in nodes.err, nodes


def test_a_corrupt_cost_cache_is_measured_again_not_trusted(tmp_path):
    cache = tmp_path / "costs.json"
    cache.write_text('{"format": "paisoar-plan-costs/1", "layers": {"x": [{"time_s": -5}]}, "comm": {}, "numbers": {}}')
    r = plan(tmp_path, "--nproc", 2)
    assert r.code == 0, r
    assert f"ignoring the cost cache {cache}" in r.err and "measuring again" in r.err, r
    assert json.loads(cache.read_text())["format"] == "paisoar-plan-costs/1"
    assert "x" not in json.loads(cache.read_text())["layers"]


def test_parallel_auto_trains_the_first_plan(tmp_path):
    run_dir = tmp_path / "run"
    r = run("train", "--config", CONFIG, "--nproc", 2, "--set", "parallel=auto", "--set", f"run_dir={run_dir}",
            "--set", "train.max_steps=6", "--set", "data.train_limit=1280", "--set", "data.eval_limit=200",
            "--set", "train.log_every=3", timeout=600, env={"PAISOAR_PLAN_CACHE": str(tmp_path / "costs.json")})
    assert r.code == 0, r
    assert "parallel: auto" in r.out and "DxPxT" in r.out, r
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    planned = next(x for x in records if x.get("event") == "plan")
    chosen = dict(o.split("=", 1) for o in planned["chosen"])
    assert planned["plans"][0]["overrides"] == planned["chosen"]
    start = next(x for x in records if x.get("event") == "run_start")
    for key, value in chosen.items():
        section, name = key.split(".") if "." in key else (None, key)
        dumped = dumped_value(start["config"], section, name)
        assert dumped is not None and dumped.replace('"', "") == value.replace('"', ""), (key, value, dumped)
    assert dumped_value(start["config"], "parallel", "auto") == "false"


def dumped_value(config, section, name):
    """A key's value in the config text `--print-config` writes (and
    run_start records): `name: value  # help`, indented under `section:`."""
    inside = section is None
    for line in config.splitlines():
        if not line.startswith(" "):
            inside = section is None or line.split(":")[0] == section
            if section is None and line.split(":")[0] == name:
                return line.split(":", 1)[1].split("#")[0].strip()
            continue
        if inside and section is not None and line.strip().split(":")[0] == name:
            return line.split(":", 1)[1].split("#")[0].strip()
    return None
