"""`paisoar report` with bad input, through the real binary: a metrics file
that is a FIFO, outputs that would overwrite the run's own files, records of
the wrong type, values at the ends of a double's range (bounded memory), and
a missing run. Every run has a timeout, so a hang fails."""
import json
import os
import resource
import subprocess

import pytest

from cli_support import BIN, printable


def write_run(run, records):
    run.mkdir(parents=True, exist_ok=True)
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def records(steps=5, loss=lambda s: 2.0 / (s + 1)):
    out = [{"event": "run_start", "step": 0, "world_size": 2, "time": 0.0, "config": "seed: 0\n"}]
    out += [{"step": s, "epoch": 0, "loss": loss(s), "lr": 0.1, "samples_per_s": 100.0} for s in range(1, steps + 1)]
    return out


def test_missing_run_dir(paisoar, tmp_path):
    r = paisoar("report", tmp_path / "nope")
    assert r.code == 1 and "is not a directory" in r.err and "run_dir" in r.err, r


def test_run_without_metrics(paisoar, tmp_path):
    r = paisoar("report", tmp_path)
    assert r.code == 1 and "metrics.jsonl does not exist" in r.err, r


def test_metrics_fifo_is_refused_not_waited_on(paisoar, tmp_path):
    os.mkfifo(tmp_path / "metrics.jsonl")
    r = paisoar("report", tmp_path, timeout=60)
    assert r.code == 1, r
    assert "metrics.jsonl' is a FIFO" in r.err and "not a regular file" in r.err, r


def test_html_over_the_metrics_is_refused_and_they_survive(paisoar, tmp_path):
    run = write_run(tmp_path / "run", records())
    before = (run / "metrics.jsonl").read_bytes()
    for flag in ("--html", "--png"):
        r = paisoar("report", run, flag, run / "metrics.jsonl")
        assert r.code == 1, r
        assert f"paisoar report: {flag}" in r.err and "would destroy that input" in r.err, r
        assert (run / "metrics.jsonl").read_bytes() == before
    r = paisoar("report", run, "--html", run / "x.html", "--png", run / "x.html")
    assert r.code == 1 and "name the same file" in r.err, r


def test_extreme_values_make_a_report_in_bounded_memory(paisoar, tmp_path):
    run = write_run(tmp_path / "run", records(4, loss=lambda s: 1e308 if s % 2 else -1e308))
    four_gib = 4 << 30

    def cap():  # the report once grew to 16.7 GB on these values
        resource.setrlimit(resource.RLIMIT_DATA, (four_gib, four_gib))

    done = subprocess.run([str(BIN), "report", str(run)], capture_output=True, text=True, timeout=120,
                          preexec_fn=cap)
    assert done.returncode == 0, done.stderr
    assert (run / "report.html").exists() and (run / "report.png").exists()


def test_records_of_the_wrong_type_are_skipped_with_the_line_named(paisoar, tmp_path):
    bad = records(3)
    bad[0]["world_size"] = "two"
    run = write_run(tmp_path / "run", bad)
    r = paisoar("report", run)
    assert r.code == 0, r
    assert printable(r.err), r
    assert f"{run}/metrics.jsonl:1: a record with a field of the wrong type was skipped" in r.err, r
    assert "json.exception" not in r.err, r


# Each field of the wrong type is named in paisoar's words (what it is, what
# it should be), never in the JSON library's ("cannot use value()", "type
# must be ...").
@pytest.mark.parametrize("field, value, words", [
    ("event", 3, '"event" is a number, not a string'),
    ("config", 7, '"config" is a number, not a string'),
    ("loss", "abc", '"loss" is a string, not a number'),
    ("advice", [3], '"advice" entry 1 is a number, not an object'),
    ("advice", "x", '"advice" is a string, not a list'),
])
def test_a_field_of_the_wrong_type_is_named_in_our_words(paisoar, tmp_path, field, value, words):
    bad = records(3)
    target = bad[0] if field in ("event", "config") else bad[1]
    if field == "advice":
        target = {"event": "advice", "step": 2, "advice": value}
        bad.append(target)
    target[field] = value
    run = write_run(tmp_path / "run", bad)
    r = paisoar("report", run)
    assert r.code == 0, r
    assert "a record with a field of the wrong type was skipped (" + words in r.err, r
    for phrase in ("cannot use value()", "type must be", "json.exception", "numbers where numbers belong"):
        assert phrase not in r.err, r


def test_unknown_flag(paisoar, tmp_path):
    r = paisoar("report", tmp_path, "--frobnicate")
    assert r.code == 2 and "--frobnicate" in r.err, r
