"""`paisoar checkpoint verify` and `inspect` on a real 2-rank ZeRO-2 run's
checkpoints, through the real binary: an intact checkpoint passes (exit 0);
one flipped byte in a shard file, a missing shard and a step file without its
manifest are each named (exit 1); inspect shows the step, the layout, the
files and the config's differences; a resume skips the damaged newest one
and names it. Nothing on disk is changed by either command."""
import shutil
import struct

import pytest

from cli_support import ROOT


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from cli_support import run
    run_dir = tmp_path_factory.mktemp("ckpt") / "run"
    r = run("train", "--config", ROOT / "configs" / "fashion_mnist.yaml", "--nproc", "2",
            "--set", f"run_dir={run_dir}", "--set", "zero.stage=2", "--set", "model.name=mlp",
            "--set", "data.train_limit=512", "--set", "train.max_steps=4", "--set", "checkpoint.every_steps=2",
            "--set", "profiler.memory=false", "--set", "data.eval_limit=64", timeout=600)
    assert r.code == 0, r
    return run_dir / "checkpoints"


def copy(checkpoints, tmp_path):
    out = tmp_path / "checkpoints"
    shutil.copytree(checkpoints, out)
    return out


def snapshot(directory):
    return {p: p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_intact_checkpoints_verify(paisoar, checkpoints):
    before = snapshot(checkpoints)
    r = paisoar("checkpoint", "verify", checkpoints)
    assert r.code == 0, r
    assert "step-000000000004.safetensors: OK, step 4, 3 file(s)" in r.out, r
    assert "step-000000000002.safetensors: OK" in r.out, r
    assert snapshot(checkpoints) == before


def test_one_flipped_byte_is_found(paisoar, checkpoints, tmp_path):
    d = copy(checkpoints, tmp_path)
    shard = d / "zero-000000000004" / "zero-1-of-2.safetensors"
    data = bytearray(shard.read_bytes())
    data[len(data) - 5] ^= 0x01
    shard.write_bytes(bytes(data))
    r = paisoar("checkpoint", "verify", d)
    assert r.code == 1, r
    assert "step-000000000004.safetensors: DAMAGED" in r.out, r
    assert "'zero-000000000004/zero-1-of-2.safetensors' has CRC-32" in r.out, r
    assert "step-000000000002.safetensors: OK" in r.out, r
    assert "1 of 2 checkpoint(s) damaged" in r.err, r
    # One step file only: the other is not looked at.
    r = paisoar("checkpoint", "verify", d / "step-000000000002.safetensors")
    assert r.code == 0 and "DAMAGED" not in r.out, r


def test_a_missing_shard_and_an_extra_file_are_named(paisoar, checkpoints, tmp_path):
    d = copy(checkpoints, tmp_path)
    (d / "zero-000000000004" / "zero-0-of-2.safetensors").unlink()
    (d / "zero-000000000002" / "stray.bin").write_bytes(b"x")
    r = paisoar("checkpoint", "verify", d)
    assert r.code == 1, r
    assert "'zero-000000000004/zero-0-of-2.safetensors' is missing" in r.out, r
    assert "'zero-000000000002/stray.bin' is not in the manifest" in r.out, r


def test_a_step_file_without_its_manifest_is_named(paisoar, checkpoints, tmp_path):
    d = copy(checkpoints, tmp_path)
    step = d / "step-000000000004.safetensors"
    data = step.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = data[8:8 + n].decode()
    stripped = header.replace('"checkpoint.files"', '"checkpoint.filez"', 1)
    assert stripped != header
    step.write_bytes(data[:8] + stripped.encode() + data[8 + n:])
    r = paisoar("checkpoint", "verify", step)
    assert r.code == 1, r
    # The header's own CRC-32 no longer matches: the edit is found before the manifest is read.
    assert "DAMAGED" in r.out and "CRC-32" in r.out, r


def test_inspect_shows_the_layout_files_and_config_differences(paisoar, checkpoints, tmp_path):
    config = tmp_path / "other.yaml"
    config.write_text("zero:\n  stage: 0\ntrain:\n  batch_size: 64\n")
    r = paisoar("checkpoint", "inspect", checkpoints, "--config", config)
    assert r.code == 0, r
    assert "step: 4 (epoch 0, 512 samples into it; train.batch_size 128)" in r.out, r
    assert "written by: 2 rank(s), zero.stage 2; model and optimizer ZeRO shards in zero-000000000004/" in r.out, r
    assert "zero-000000000004/zero-0-of-2.safetensors" in r.out, r
    assert f"zero.stage: 2 in the checkpoint, 0 in {config}" in r.out, r
    assert f"train.batch_size: 128 in the checkpoint, 64 in {config}" in r.out, r


def test_resume_skips_a_damaged_newest_checkpoint_and_names_it(paisoar, checkpoints, tmp_path):
    d = copy(checkpoints, tmp_path)
    shard = d / "zero-000000000004" / "zero-0-of-2.safetensors"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x10
    shard.write_bytes(bytes(data))
    # Resumed on 1 rank without ZeRO: the step-2 ZeRO-2 checkpoint is resharded.
    r = paisoar("train", "--config", ROOT / "configs" / "fashion_mnist.yaml", "--nproc", "1",
                "--set", f"run_dir={tmp_path / 'resumed'}", "--set", f"checkpoint.dir={d}",
                "--set", "model.name=mlp", "--set", "data.train_limit=512", "--set", "train.max_steps=4",
                "--set", "train.batch_size=128", "--set", "profiler.memory=false", "--set", "data.eval_limit=64",
                timeout=600)
    assert r.code == 0, r
    assert "skipping checkpoint" in r.err and "zero-000000000004/zero-0-of-2.safetensors" in r.err, r
    assert "resumed from" in r.out + r.err and "step-000000000002.safetensors at step 2" in r.out + r.err, r


@pytest.mark.parametrize("args, words, code", [
    (("checkpoint",), ["paisoar checkpoint", "verify, inspect, reshard"], 2),
    (("checkpoint", "verify", "/nonexistent/ckpt"), ["/nonexistent/ckpt"], 2),
])
def test_checkpoint_command_errors(paisoar, args, words, code):
    r = paisoar(*args)
    assert r.code == code, r
    for w in words:
        assert w in r.err, r


def test_verify_of_a_directory_without_checkpoints(paisoar, tmp_path):
    r = paisoar("checkpoint", "verify", tmp_path)
    assert r.code == 1 and "holds no checkpoint" in r.err and str(tmp_path) in r.err, r


def losses(run_dir):
    import json
    out = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line) if line.strip() else {}
        if "loss" in record and "step" in record:
            out[record["step"]] = record["loss"]
    return out


def resume_on_one_rank(paisoar, checkpoint_dir, run_dir):
    return paisoar("train", "--config", ROOT / "configs" / "fashion_mnist.yaml", "--nproc", "1",
                   "--set", f"run_dir={run_dir}", "--set", f"checkpoint.dir={checkpoint_dir}",
                   "--set", "model.name=mlp", "--set", "data.train_limit=512", "--set", "train.max_steps=4",
                   "--set", "train.batch_size=128", "--set", "train.log_every=1", "--set", "profiler.memory=false",
                   "--set", "data.eval_limit=64", "--set", "checkpoint.every_steps=0", timeout=600)


@pytest.mark.parametrize("ranks, stage", [(1, 0), (4, 3)])
def test_reshard_writes_a_checkpoint_that_resumes_the_same(paisoar, checkpoints, tmp_path, ranks, stage):
    # The step-2 checkpoint alone, so both runs resume from it and train steps 3 and 4.
    source = copy(checkpoints, tmp_path)
    (source / "step-000000000004.safetensors").unlink()
    shutil.rmtree(source / "zero-000000000004")
    before = snapshot(source)
    target = tmp_path / "resharded"
    r = paisoar("checkpoint", "reshard", source, target, "--ranks", ranks, "--zero_stage", stage)
    assert r.code == 0 and f"({ranks} rank(s), zero.stage={stage})" in r.out, r
    assert snapshot(source) == before
    r = paisoar("checkpoint", "verify", target)
    assert r.code == 0 and "step-000000000002.safetensors: OK" in r.out, r
    r = paisoar("checkpoint", "inspect", target)
    assert f"written by: {ranks} rank(s), zero.stage {stage}" in r.out, r
    a = resume_on_one_rank(paisoar, source, tmp_path / "from_source")
    assert a.code == 0, a
    b = resume_on_one_rank(paisoar, target, tmp_path / "from_resharded")
    assert b.code == 0, b
    assert "at step 2" in b.out + b.err, b
    want, got = losses(tmp_path / "from_source"), losses(tmp_path / "from_resharded")
    assert sorted(want) == [3, 4] and got == want, (want, got)


def test_reshard_refuses_a_layout_the_run_cannot_take(paisoar, checkpoints, tmp_path):
    # 128 samples a step do not split over 3 ranks: the run could not resume there, so neither does reshard.
    r = paisoar("checkpoint", "reshard", checkpoints, tmp_path / "out", "--ranks", "3")
    assert r.code == 2 and "train.batch_size" in r.err and "multiple of 3" in r.err, r
    assert not (tmp_path / "out").exists()


def test_reshard_refuses_a_target_that_holds_files(paisoar, checkpoints, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    r = paisoar("checkpoint", "reshard", checkpoints, tmp_path, "--ranks", "2")
    assert r.code == 1 and "is not an empty directory" in r.err and str(tmp_path) in r.err, r
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_a_second_job_on_the_same_checkpoint_dir_is_refused(paisoar, tmp_path):
    import subprocess
    import time
    from cli_support import BIN
    run_dir = tmp_path / "run"
    first = subprocess.Popen([str(BIN), "train", "--config", str(ROOT / "configs" / "fashion_mnist.yaml"),
                              "--nproc", "1", "--set", f"run_dir={run_dir}", "--set", "model.name=mlp",
                              "--set", "data.train_limit=512", "--set", "train.epochs=100000",
                              "--set", "train.max_steps=1000000", "--set", "eval.every_epochs=0",
                              "--set", "profiler.memory=false"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not (run_dir / "checkpoints" / ".paisoar-lock").exists() and time.time() < deadline:
            assert first.poll() is None, "the first job ended early"
            time.sleep(0.2)
        time.sleep(1)
        r = paisoar("train", "--config", ROOT / "configs" / "fashion_mnist.yaml", "--nproc", "1",
                    "--set", f"run_dir={run_dir}", "--set", "model.name=mlp", "--set", "data.train_limit=512",
                    "--set", "train.max_steps=2", timeout=300)
        assert r.code == 1, r
        assert "is in use by another job" in r.err and str(run_dir / "checkpoints") in r.err, r
        assert "give this run its own checkpoint.dir" in r.err, r
    finally:
        import os
        import signal
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    # The first job is gone (killed): its lock went with it.
    r = paisoar("train", "--config", ROOT / "configs" / "fashion_mnist.yaml", "--nproc", "1",
                "--set", f"run_dir={run_dir}", "--set", "model.name=mlp", "--set", "data.train_limit=512",
                "--set", "train.max_steps=2", "--set", "checkpoint.resume=false", "--set", "profiler.memory=false",
                "--set", "data.eval_limit=64", timeout=300)
    assert r.code == 0, r
