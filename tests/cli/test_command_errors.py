"""The other commands with bad input, through the real binary: unknown
commands and flags, `convert` and `zero-consolidate` with missing or wrong
inputs and outputs that would overwrite them, `bench` and `demo` with bad
flags. Each names the input and exits non-zero (2 for the command line)."""
import pytest

from cli_support import ROOT, printable
from data_files import idx_set


def test_unknown_command(paisoar):
    r = paisoar("frobnicate")
    assert r.code == 2 and "frobnicate" in r.err and printable(r.err), r


@pytest.mark.parametrize("command", [["train"], ["report", "."], ["zero-consolidate", ".", "x"],
                                     ["demo"], ["bench", "comm"]])
def test_unknown_flag_is_named_with_exit_code_2(paisoar, command):
    r = paisoar(*command, "--frobnicate")
    assert r.code == 2, r
    assert "--frobnicate" in r.err and printable(r.err), r


def test_convert_unknown_flag_after_valid_options(paisoar, tmp_path):
    root = idx_set(tmp_path / "idx")
    r = paisoar("convert", "idx", "--images", root / "train-images-idx3-ubyte.gz", "--labels",
                root / "train-labels-idx1-ubyte.gz", "--out", tmp_path / "out", "--frobnicate")
    assert r.code == 2 and "--frobnicate" in r.err, r
    assert not (tmp_path / "out").exists()


def test_convert_idx_missing_file(paisoar, tmp_path):
    r = paisoar("convert", "idx", "--images", tmp_path / "no.gz", "--labels", tmp_path / "no2.gz",
                "--out", tmp_path / "out")
    assert r.code == 2 and "no.gz" in r.err, r


def test_convert_idx_labels_that_are_images(paisoar, tmp_path):
    root = idx_set(tmp_path / "idx")
    images = root / "train-images-idx3-ubyte.gz"
    r = paisoar("convert", "idx", "--images", images, "--labels", images, "--out", tmp_path / "out", "--quiet")
    assert r.code == 1, r
    assert "expected integer labels" in r.err or "labels" in r.err, r


def test_convert_bad_number(paisoar, tmp_path):
    root = idx_set(tmp_path / "idx")
    r = paisoar("convert", "idx", "--images", root / "train-images-idx3-ubyte.gz", "--labels",
                root / "train-labels-idx1-ubyte.gz", "--out", tmp_path / "out", "--records-per-shard", "0")
    assert r.code == 2 and "--records-per-shard" in r.err, r


def test_zero_consolidate_without_shards(paisoar, tmp_path):
    r = paisoar("zero-consolidate", tmp_path, tmp_path / "full.safetensors")
    assert r.code == 1 and "holds no ZeRO shard files" in r.err, r


def test_zero_consolidate_missing_dir(paisoar, tmp_path):
    r = paisoar("zero-consolidate", tmp_path / "nope", tmp_path / "full.safetensors")
    assert r.code == 2 and "nope" in r.err, r


def test_zero_consolidate_refuses_to_overwrite_a_shard(paisoar, tmp_path):
    # A real 2-rank ZeRO-1 checkpoint, then its shard given as the output.
    run = tmp_path / "run"
    r = paisoar("train", "--config", ROOT / "configs" / "fashion_mnist.yaml", "--nproc", "2",
                "--set", f"run_dir={run}", "--set", "zero.stage=1", "--set", "model.name=mlp",
                "--set", "data.train_limit=256", "--set", "train.max_steps=2", "--set", "checkpoint.every_steps=1",
                "--set", "profiler.memory=false", "--set", "data.eval_limit=64", timeout=600)
    assert r.code == 0, r
    step_dirs = sorted(p for p in (run / "checkpoints").iterdir() if p.is_dir())
    assert step_dirs, r
    shard = step_dirs[-1] / "zero-0-of-2.safetensors"
    assert shard.exists(), sorted(step_dirs[-1].iterdir())
    before = shard.read_bytes()
    r = paisoar("zero-consolidate", step_dirs[-1], shard)
    assert r.code == 1, r
    assert "would destroy that input" in r.err and "zero-0-of-2.safetensors" in r.err, r
    assert shard.read_bytes() == before
    r = paisoar("zero-consolidate", step_dirs[-1], tmp_path / "full.safetensors")
    assert r.code == 0, r


@pytest.mark.parametrize("args, command, choices", [
    (("convert",), "paisoar convert", "idx, folder"),
    (("bench",), "paisoar bench", "comm"),
])
def test_a_command_without_its_subcommand_names_the_choices(paisoar, args, command, choices):
    r = paisoar(*args)
    assert r.code == 2, r
    assert r.err.startswith(f"{command}: a command is required; give one of: "), r
    assert choices in r.err and f"({command} --help)" in r.err, r


def test_an_unknown_bench_names_the_word_given(paisoar):
    r = paisoar("bench", "nosuch")
    assert r.code == 2, r
    assert "paisoar bench: unknown command 'nosuch'; give one of: comm" in r.err, r


def test_zero_consolidate_with_an_empty_output_path(paisoar, tmp_path):
    r = paisoar("zero-consolidate", tmp_path, "")
    assert r.code == 2, r
    assert "out is empty" in r.err and "full.safetensors" in r.err, r
