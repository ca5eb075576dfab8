"""Resume on another layout through the real binaries: fashion_cnn on
Fashion-MNIST, killed after its step-30 checkpoint (at step 33), resumes on
another layout and ends at step 60 with the test accuracy within 1 point and
the logged loss within 5% of the run that was never stopped; and `paisoar
checkpoint reshard` writes that layout's checkpoint offline, from which the
same layout ends equal to the online resume. The four moves: DDP on 2 ranks
-> ZeRO-3 x pipeline 2 on 4; ZeRO-3 on 2 -> DDP on 1; tensor 2 x data 2 ->
DDP on 4; pipeline 2 x tensor 2 -> one rank."""
import json

import pytest

from cli_support import ROOT, run

COMMON = ["--set", "model.name=fashion_cnn", "--set", "data.train_limit=3840", "--set", "train.batch_size=64",
          "--set", "train.max_steps=60", "--set", "checkpoint.every_steps=10", "--set", "eval.every_epochs=0",
          "--set", "data.eval_limit=2000", "--set", "profiler.memory=false", "--set", "train.log_every=10"]

LAYOUTS = {
    "ddp2": (2, []),
    "zero3_pipeline2_on4": (4, ["parallel.pipeline=2", "parallel.micro_batches=2", "zero.stage=3"]),
    "zero3_on2": (2, ["zero.stage=3"]),
    "ddp1": (1, []),
    "tensor2_data2": (4, ["parallel.tensor=2"]),
    "ddp4": (4, []),
    "pipeline2_tensor2": (4, ["parallel.pipeline=2", "parallel.tensor=2", "parallel.micro_batches=2"]),
    "one_rank": (1, []),
}

MOVES = [("ddp2", "zero3_pipeline2_on4"), ("zero3_on2", "ddp1"), ("tensor2_data2", "ddp4"),
         ("pipeline2_tensor2", "one_rank")]


def sets(layout):
    out = []
    for s in LAYOUTS[layout][1]:
        out += ["--set", s]
    return out


def train(run_dir, layout, *extra, env=None):
    r = run("train", "--config", ROOT / "configs" / "fashion_mnist.yaml", "--nproc", LAYOUTS[layout][0],
            "--set", f"run_dir={run_dir}", *COMMON, *sets(layout), *extra, timeout=600, env=env)
    return r


def outcome(run_dir):
    """The logged loss at step 60 and the final test accuracy, from metrics.jsonl."""
    loss, accuracy = None, None
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("step") == 60 and "loss" in record:
            loss = record["loss"]
        if "accuracy" in record:
            accuracy = record["accuracy"]
    assert loss is not None and accuracy is not None, (run_dir / "metrics.jsonl").read_text()
    return loss, accuracy


@pytest.mark.parametrize("before,after", MOVES, ids=[f"{b}-to-{a}" for b, a in MOVES])
def test_a_killed_run_resumes_on_another_layout(tmp_path, before, after):
    straight = train(tmp_path / "straight", before)
    assert straight.code == 0, straight
    want_loss, want_accuracy = outcome(tmp_path / "straight")

    killed = train(tmp_path / "run", before, env={"PAISOAR_TEST_FAULT": "train.next_batch:33"})
    assert killed.code != 0, killed
    checkpoints = tmp_path / "run" / "checkpoints"
    assert (checkpoints / "step-000000000030.safetensors").exists(), killed

    # Offline first (the source must not change), then online from the same source.
    resharded = tmp_path / "resharded"
    r = run("checkpoint", "reshard", checkpoints, resharded, "--ranks", LAYOUTS[after][0], *sets(after), timeout=600)
    assert r.code == 0, r
    assert "step-000000000030.safetensors" in r.out, r

    online = train(tmp_path / "run", after)
    assert online.code == 0, online
    assert "resumed from" in online.out and "step-000000000030" in online.out, online
    loss, accuracy = outcome(tmp_path / "run")
    assert abs(accuracy - want_accuracy) <= 1.0, (accuracy, want_accuracy, online)
    assert abs(loss - want_loss) <= 0.05 * want_loss, (loss, want_loss, online)

    offline = train(tmp_path / "offline", after, "--set", f"checkpoint.dir={resharded}")
    assert offline.code == 0, offline
    assert "resumed from" in offline.out and "step-000000000030" in offline.out, offline
    offline_loss, offline_accuracy = outcome(tmp_path / "offline")
    assert abs(offline_loss - loss) <= 1e-4 * loss, (offline_loss, loss)
    assert abs(offline_accuracy - accuracy) <= 0.05, (offline_accuracy, accuracy)
