"""`paisoar train` with bad input, through the real binary: each error names
the key, file or flag and what to do, in readable text, with exit code 2 for
a bad config or command line; nothing is trained or written."""
import os
import re

import pytest

from cli_support import ROOT, printable

CONFIG = ROOT / "configs" / "fashion_mnist.yaml"


def config_error(result, *words):
    assert result.code == 2, result
    assert printable(result.err), result
    assert result.err.startswith("paisoar train: "), result
    for w in words:
        assert w in result.err, f"{w!r} not in:\n{result}"


def write(tmp_path, text, name="bad.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_misspelt_key_in_set_names_it_and_the_right_one(paisoar):
    r = paisoar("train", "--config", CONFIG, "--set", "optimizer.lrr=0.1")
    config_error(r, "unknown key 'optimizer.lrr'", "did you mean 'optimizer.lr'")


def test_misspelt_key_in_the_file_names_the_file_and_the_right_one(paisoar, tmp_path):
    r = paisoar("train", "--config", write(tmp_path, "optimizer:\n  lrr: 0.1\n"))
    config_error(r, "bad.yaml", "unknown key 'optimizer.lrr'", "did you mean 'optimizer.lr'")


def test_wrong_type_in_set_names_the_key_and_the_type(paisoar):
    r = paisoar("train", "--config", CONFIG, "--set", "train.epochs=abc")
    config_error(r, "--set train.epochs", "expected an integer, got 'abc'")


def test_wrong_type_in_the_file(paisoar, tmp_path):
    r = paisoar("train", "--config", write(tmp_path, "train:\n  batch_size: [64]\n"))
    config_error(r, "bad.yaml", "train.batch_size", "expected an integer, got a list")


@pytest.mark.parametrize("key, value, words", [
    ("optimizer.lr", ".inf", ["optimizer.lr", "must be a finite number", "got inf"]),
    ("optimizer.lr", "-0.1", ["optimizer.lr", "must be positive", "got -0.1"]),
    ("optimizer.weight_decay", ".inf", ["optimizer.weight_decay", "finite"]),
    ("optimizer.momentum", "1", ["optimizer.momentum", "must be in [0, 1)"]),
    ("distributed.bucket_cap_mb", ".inf", ["distributed.bucket_cap_mb", "finite"]),
    ("distributed.bucket_cap_mb", ".nan", ["distributed.bucket_cap_mb", "finite"]),
    ("profiler.trace_start_step", "-5", ["profiler.trace_start_step", "-1 (no trace) or a step number"]),
    ("model.num_classes", "10000000000000", ["model.num_classes", "between 1 and 1000000"]),
    ("train.batch_size", "0", ["train.batch_size", "between 1 and"]),
    ("amp.init_scale", "1e39", ["amp.init_scale", "got 1e+39"]),
    ("zero.stage", "4", ["zero.stage", "0 (off), 1, 2 or 3", "got 4"]),
    ("memory.budget_mb", "-1", ["memory.budget_mb", "0 (what the device has free) or more", "got -1"]),
    ("data.workers", "-1", ["data.workers", "0 (load in the training thread)"]),
    ("eval.target_accuracy", "101", ["eval.target_accuracy", "percentage"]),
    ("model.hidden", "[512, 0]", ["model.hidden", "between 1 and"]),
])
def test_numbers_out_of_range_or_not_finite_are_refused_with_the_key(paisoar, tmp_path, key, value, words):
    # Through --set and through the file: both name the key (the file also its path).
    r = paisoar("train", "--config", CONFIG, "--set", f"{key}={value}")
    config_error(r, f"--set {key}", *words)
    section, name = key.split(".")
    r = paisoar("train", "--config", write(tmp_path, f"{section}:\n  {name}: {value}\n"))
    config_error(r, "bad.yaml", *words)


def test_duplicated_key_is_refused_with_both_lines(paisoar, tmp_path):
    r = paisoar("train", "--config", write(tmp_path, "optimizer:\n  lr: 0.1\n  lr: 0.2\n"))
    config_error(r, "bad.yaml:3", "'optimizer.lr' is given twice (first on line 2)")


def test_duplicated_section_is_refused(paisoar, tmp_path):
    r = paisoar("train", "--config", write(tmp_path, "optimizer:\n  lr: 0.1\ntrain:\n  epochs: 1\noptimizer:\n  momentum: 0.5\n"))
    config_error(r, "bad.yaml:5", "'optimizer' is given twice (first on line 1)")


def test_list_as_a_key_is_refused(paisoar, tmp_path):
    r = paisoar("train", "--config", write(tmp_path, "optimizer:\n  [lr]: 0.1\n"))
    config_error(r, "bad.yaml:2", "a key must be a name, got a list", "section 'optimizer'")


def test_empty_run_dir_is_refused(paisoar, tmp_path):
    r = paisoar("train", "--config", write(tmp_path, 'run_dir: ""\n'))
    config_error(r, "run_dir", "is empty")
    assert not os.path.exists("/metrics.jsonl")


def test_not_yaml(paisoar, tmp_path):
    r = paisoar("train", "--config", write(tmp_path, "optimizer: [lr: 0.1\n"))
    config_error(r, "bad.yaml", "not valid YAML")


def test_missing_config_file(paisoar, tmp_path):
    r = paisoar("train", "--config", tmp_path / "nope.yaml")
    assert r.code == 2, r
    assert "nope.yaml" in r.err and "does not exist" in r.err.lower(), r


def test_config_that_is_a_directory(paisoar, tmp_path):
    r = paisoar("train", "--config", tmp_path)
    assert r.code == 2, r
    assert str(tmp_path) in r.err and "directory" in r.err, r


def test_config_that_is_a_fifo_is_refused_not_waited_on(paisoar, tmp_path):
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    r = paisoar("train", "--config", fifo, timeout=60)
    config_error(r, str(fifo), "a FIFO", "not a regular file")


def test_unknown_flag(paisoar):
    r = paisoar("train", "--frobnicate")
    assert r.code == 2, r
    assert "--frobnicate" in r.err, r


def test_set_without_equals(paisoar):
    r = paisoar("train", "--set", "optimizer.lr")
    config_error(r, "expected key=value")


def test_print_config_is_a_config_the_binary_reads_back(paisoar, tmp_path):
    r = paisoar("train", "--config", CONFIG, "--print-config")
    assert r.code == 0, r
    path = write(tmp_path, r.out, "printed.yaml")
    again = paisoar("train", "--config", path, "--print-config")
    assert again.code == 0 and again.out == r.out, again


def test_run_dir_that_cannot_be_written(paisoar, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory\n")
    r = paisoar("train", "--config", CONFIG, "--nproc", "1", "--set", f"run_dir={blocker}/run",
                "--set", "train.max_steps=1", "--set", "data.train_limit=128", timeout=300)
    assert r.code != 0, r
    assert f"{blocker}/run/checkpoints" in r.err and "Not a directory" in r.err, r
    assert "a directory you can write to" in r.err and "set run_dir or checkpoint.dir" in r.err, r


@pytest.mark.parametrize("text, words", [
    (b"seed: 1\noptimizer:\n  l\x01r: 0.1\n", "bad.yaml:3:4: byte 0x01 (a control character)"),
    (b"seed: 1\xff\n", "bad.yaml:1:8: byte 0xFF (not UTF-8 text)"),
    (b'run_dir: "runs/x\n', "the text ends inside something it opened"),
    (b"seed: 1\n---\nseed: 2\n", "holds more than one YAML document"),
    (b"optimizer:\n\tlr: 0.1\n", "bad.yaml:2:"),
])
def test_config_text_that_is_not_one_clean_yaml_document(paisoar, tmp_path, text, words):
    path = tmp_path / "bad.yaml"
    path.write_bytes(text)
    r = paisoar("train", "--config", path)
    config_error(r, words)
    assert "yaml-cpp" not in r.err, r


def test_a_set_value_with_a_quote_left_open(paisoar):
    r = paisoar("train", "--config", CONFIG, "--set", 'run_dir="runs/x')
    config_error(r, "--set run_dir: not valid YAML: the text ends inside something it opened")


def test_a_run_over_its_memory_budget_stops_before_training_with_changes_that_fit(paisoar, tmp_path):
    # 2 ranks as processes; 12 MiB each is below the 64-sample micro-batch's
    # predicted peak (about 18 MiB in bf16) and above the 8-sample one's.
    run_dir = tmp_path / "run"
    r = paisoar("train", "--config", CONFIG, "--nproc", "2", "--set", f"run_dir={run_dir}",
                "--set", "data.train_limit=512", "--set", "train.max_steps=2", "--set", "memory.budget_mb=12",
                timeout=300)
    # Raised inside each rank's Trainer, a config error all the same: exit 2,
    # as one found before the ranks start.
    assert r.code == 2, r
    assert printable(r.err), r
    for rank in (0, 1):
        for words in (f"[rank{rank}]: paisoar train: memory: rank {rank}'s predicted peak is",
                      "over its budget of 12.0 MiB (memory.budget_mb)", "stops before the first step",
                      "Changes that fit, cheapest first:", f"[rank{rank}]:   train.grad_accumulation: 8  -> predicted"):
            assert words in r.err, f"{words!r} not in:\n{r}"
    assert "epoch 0 step" not in r.out + r.err, r  # no step was trained
    assert not (run_dir / "checkpoints").exists() or not any((run_dir / "checkpoints").glob("step-*")), r


@pytest.mark.parametrize("sets, nproc, words", [
    (["parallel.pipeline=5"], 5, ["parallel.pipeline: 5 stages", "fashion_cnn has 4 layers", "parallel.pipeline 4 or fewer"]),
    (["parallel.tensor=3"], 3, ["parallel.tensor: 3", "fashion_cnn", "nearest width that works is parallel.tensor 2"]),
    (["model.name=gpt", "data.format=text", "data.path=/usr/share/common-licenses/GPL-3", "model.n_head=6",
      "model.n_embd=96", "parallel.tensor=4"], 4, ["parallel.tensor: 4", "gpt", "model.n_head (6)", "parallel.tensor 2"]),
    (["model.name=resnet18", "parallel.tensor=2"], 2, ["parallel.tensor: 2", "resnet18 has no tensor-parallel layers"]),
], ids=["more-stages-than-layers", "tensor-width-not-dividing", "tensor-width-not-dividing-heads", "no-tensor-layers"])
def test_a_layout_the_model_cannot_take_is_refused_before_any_rank_starts(paisoar, tmp_path, sets, nproc, words):
    args = ["train", "--config", CONFIG, "--nproc", str(nproc), "--set", f"run_dir={tmp_path / 'run'}"]
    for s in sets:
        args += ["--set", s]
    r = paisoar(*args)
    config_error(r, *words)
    assert "[rank" not in r.out + r.err, r  # refused before the launcher started any rank
    assert not (tmp_path / "run").exists(), r
