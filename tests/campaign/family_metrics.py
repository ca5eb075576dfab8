"""A run's metrics.jsonl damaged, read by `paisoar report`: torn at many
offsets, bytes flipped, fields of the wrong type, numbers at the ends of a
double and past them, huge and many lines, and paths that are not regular
files. Exit 0 is right when the report was written and every line that is
not a clean record was reported (the warnings name metrics.jsonl);
otherwise the error must name the file or the run."""
import json
import math
import os

from case import Case, Prepared
from mutate import cut_offsets, flips, junk, with_byte

ACCEPT = ("a report from the records that remain is right, as long as every line it skipped is reported "
          "(a killed run tears its last line)")
NUMERIC = ("step", "epoch", "loss", "lr", "samples_per_s", "time", "world_size")


def clean(line):
    """True for a line paisoar train could have written: a JSON object with an
    integer step and finite numbers or nulls (no value) where numbers belong
    (Python's parser, NaN and Infinity refused)."""
    if not line.strip():
        return True
    try:
        record = json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except RecursionError:
        return True  # valid JSON nested deeper than Python parses: no judgement on it here
    except ValueError:
        return False
    if not isinstance(record, dict) or type(record.get("step")) is not int:
        return False
    for key, value in record.items():
        if key in NUMERIC and value is not None and (type(value) not in (int, float) or not math.isfinite(value)):
            return False
    return True


def report_check(run_dir, data):
    metrics = run_dir / "metrics.jsonl"

    def check(run):
        for out in ("report.html", "report.png"):
            if not (run_dir / out).is_file() or (run_dir / out).stat().st_size == 0:
                return f"it wrote no {out}"
        lines = data.decode("utf-8", errors="replace").split("\n")
        if all(clean(line) for line in lines):
            return None
        text = (run.out + run.err).decode(errors="replace")
        return None if str(metrics) in text else "it skipped or took damaged lines without a warning naming the file"
    return check


def metrics_case(seeds, family, name, what, make, accept=ACCEPT, extra_args=()):
    """`make(path)` writes metrics.jsonl (or something else there) in a copy of the seed run."""
    def prepare(where):
        run_dir = where / "run"
        run_dir.mkdir()
        metrics = run_dir / "metrics.jsonl"
        make(metrics)
        readable = metrics.is_file() and not metrics.is_symlink() and metrics.stat().st_size < 1 << 30
        data = metrics.read_bytes() if readable else b""
        return Prepared(["report", run_dir, *extra_args], [str(metrics), str(run_dir)], check=report_check(run_dir, data))
    return Case(family, name, what, prepare, accept)


def write(data):
    return lambda p: p.write_bytes(data)


def records(seeds):
    return [json.loads(line) for line in (seeds.run / "metrics.jsonl").read_text().splitlines() if line.strip()]


def field_cases(seeds):
    base = records(seeds)
    step = next(i for i, r in enumerate(base) if "loss" in r)
    start = next(i for i, r in enumerate(base) if r.get("event") == "run_start")
    values = {"string": "x", "null": None, "list": [1], "object": {}, "true": True, "minus-1": -1, "1.5": 1.5,
              "2^64": 2**64, "-2^63": -2**63, "1e308": 1e308, "-1e308": -1e308, "5e-324": 5e-324}
    out = []
    for field in ("step", "loss", "lr", "samples_per_s", "epoch"):
        for name, v in values.items():
            rs = [dict(r) for r in base]
            rs[step][field] = v
            text = "".join(json.dumps(r) + "\n" for r in rs)
            out.append(metrics_case(seeds, "metrics/field", f"{field}={name}",
                                    f"metrics.jsonl with {field}: {json.dumps(v)}", write(text.encode())))
    for field, v in (("world_size", "two"), ("world_size", 0), ("world_size", 2**40), ("time", "x"), ("time", -1e308),
                     ("config", 5), ("event", 5), ("event", "unknown")):
        rs = [dict(r) for r in base]
        rs[start][field] = v
        out.append(metrics_case(seeds, "metrics/field", f"run_start.{field}={json.dumps(v)}",
                                f"metrics.jsonl whose run_start has {field}: {json.dumps(v)}",
                                write("".join(json.dumps(r) + "\n" for r in rs).encode())))
    line = json.dumps(base[step])
    loss, step_field = str(base[step]["loss"]), f'"step": {base[step]["step"]}'
    raw = {"nan-token": line.replace(loss, "NaN"), "infinity-token": line.replace(loss, "Infinity"),
           "1e400": line.replace(loss, "1e400"), "step-1e400": line.replace(step_field, '"step": 1e400'),
           "duplicate-step": line.replace("{", '{"step": 999999, ', 1),
           "deep-nesting": '{"step": 1, "x": ' + "[" * 100000 + "]" * 100000 + "}",
           "not-utf8": line[:-1] + ', "note": "\xff"}'}
    for name, text in raw.items():
        added = text.encode("latin-1") if name == "not-utf8" else text.encode()
        data = (seeds.run / "metrics.jsonl").read_bytes() + added + b"\n"
        out.append(metrics_case(seeds, "metrics/field", f"line-{name}", f"metrics.jsonl plus a line: {name}", write(data)))
    return out


def size_cases(seeds):
    seed = (seeds.run / "metrics.jsonl").read_bytes()
    first = seed.split(b"\n")[0]
    big = json.dumps({"step": 1, "loss": 1.0, "note": "n" * (64 << 20)}).encode() + b"\n"
    many = "".join(json.dumps({"step": s, "epoch": 0, "loss": 1.0 / s, "lr": 0.1, "samples_per_s": 100.0}) + "\n"
                   for s in range(1, 200001)).encode()
    return [
        metrics_case(seeds, "metrics/size", "empty", "an empty metrics.jsonl", write(b""), None),
        metrics_case(seeds, "metrics/size", "run-start-only", "metrics.jsonl with only its run_start line",
                     write(first + b"\n"), None),
        metrics_case(seeds, "metrics/size", "line-64MiB", "metrics.jsonl plus one 64 MiB line", write(seed + big)),
        metrics_case(seeds, "metrics/size", "200k-records", "metrics.jsonl of 200000 records (about 16 MB)",
                     write(first + b"\n" + many), "a long run's history is valid; the report must come in bounded time"),
        metrics_case(seeds, "metrics/size", "junk-1MiB", "1 MiB of random bytes", write(junk(1 << 20, 71)), None),
        metrics_case(seeds, "metrics/size", "sparse-6GiB", "a 6 GiB file of zeros (no newline)",
                     lambda p: sparse(p, 6 << 30), None),
        metrics_case(seeds, "metrics/size", "seed-then-sparse-6GiB", "the seed metrics then 6 GiB of zeros",
                     lambda p: (p.write_bytes(seed), sparse(p, 6 << 30, keep=True))),
    ]


def not_regular(seeds):
    kinds = {"directory": lambda p: p.mkdir(), "fifo": lambda p: os.mkfifo(p),
             "dev-zero": lambda p: p.symlink_to("/dev/zero"), "dev-urandom": lambda p: p.symlink_to("/dev/urandom"),
             "dangling-symlink": lambda p: p.symlink_to("/nonexistent"), "missing": lambda p: None}
    out = [metrics_case(seeds, "metrics/not-regular", kind, f"metrics.jsonl: {kind.replace('-', ' ')}", make, None)
           for kind, make in kinds.items()]

    def run_is_file(where):
        (where / "run").write_text("x")
        return Prepared(["report", where / "run"], [str(where / "run")])
    out.append(Case("metrics/not-regular", "run-dir-is-file", "the run directory is a file", run_is_file))
    return out


def sparse(path, size, keep=False):
    with open(path, "r+b" if keep else "wb") as f:
        f.truncate(size)


def cases(seeds):
    seed = (seeds.run / "metrics.jsonl").read_bytes()
    out = [metrics_case(seeds, "metrics/cut", f"@{at}", f"metrics.jsonl cut to {at} bytes", write(seed[:at]),
                        ACCEPT if at >= seed.find(b"\n", seed.find(b'"loss"')) else None)
           for at in cut_offsets(len(seed), 16)]
    for i, (at, value) in enumerate(flips(seed, 16, seed=72)):
        out.append(metrics_case(seeds, "metrics/flip", f"{i}@{at}={value:#04x}",
                                f"metrics.jsonl byte {at} set to {value:#04x}",
                                write(with_byte(seed, at, value))))
    return out + field_cases(seeds) + size_cases(seeds) + not_regular(seeds)
