"""Checkpoints damaged, read by `paisoar train` resuming a run
(checkpoint.resume): the newest safetensors file cut at many offsets, its
header and data flipped, its header lying with the integrity check made
right (lengths, offsets, shapes, dtypes, missing and extra tensors, metadata),
NaN weights, and entries that are not regular files. With one checkpoint a
damaged file must be refused naming it; with an older intact one beside it,
exit 0 is right only after a warning that names the damaged file."""
import os
import struct

from case import Case, Prepared
from mutate import cut_offsets, flips, with_byte
from safetensors_edit import join, split, tensors, with_raw_header
from seeds import copy_tree, sets, tiny

STEP2 = "step-000000000002.safetensors"
STEP3 = "step-000000000003.safetensors"
FALLS_BACK = "an older intact checkpoint is beside it: resuming from that one, after a warning naming the damaged file"
SKIPPED = "not a regular file, so not a checkpoint: the run resumes from the newest intact one"


def resume_args(seeds, run):
    return ["train", *tiny(), *seeds.run_sets(run), *sets("train.max_steps=3")]


def finished(run):
    text = (run.out + run.err).decode(errors="replace")
    return None if "done:" in text else "it did not finish the run"


def resumed_at(step):
    def check(run):
        text = (run.out + run.err).decode(errors="replace")
        if "done:" not in text:
            return "it did not finish the run"
        return None if f" at step {step}\n" in text else f"it did not resume at step {step}"
    return check


def warned_about(path):
    def check(run):
        text = (run.out + run.err).decode(errors="replace")
        if "done:" not in text:
            return "it did not finish the run"
        return None if str(path) in text else f"no warning names {path}"
    return check


def ckpt_case(seeds, family, name, what, damage, keep_older=False, accept=None, extra_names=(), check=None):
    def prepare(where):
        run = copy_tree(seeds.run, where / "run")
        checkpoints = run / "checkpoints"
        if not keep_older:
            (checkpoints / "step-000000000001.safetensors").unlink()
        target = checkpoints / STEP2
        damage(target)
        names = [str(target), *extra_names]
        return Prepared(resume_args(seeds, run), names, check=(check or warned_about)(target))
    return Case(family, name, what, prepare, accept)


def write(data):
    return lambda p: p.write_bytes(data)


def relaid(header, body, change):
    """The file rebuilt after `change(entries)` edits [name, dtype, shape, bytes]
    entries; offsets laid out again, CRCs right."""
    entries = [[name, info["dtype"], info["shape"], body[info["data_offsets"][0]:info["data_offsets"][1]]]
               for name, info in sorted(tensors(header).items(), key=lambda kv: kv[1]["data_offsets"][0])]
    entries = change(entries)
    out, data = {"__metadata__": header.get("__metadata__", {})}, b""
    for name, dtype, shape, raw in entries:
        out[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return join(out, data)


def edit_entry(entries, tensor, **changes):
    for e in entries:
        if e[0] == tensor:
            for field, value in changes.items():
                e[{"name": 0, "dtype": 1, "shape": 2, "raw": 3}[field]] = value
    return entries


def lies(data):
    header, body = split(data)
    n = struct.unpack("<Q", data[:8])[0]
    weight = "model.hidden.0.weight"
    w = tensors(header)[weight]
    nan = struct.pack("<f", float("nan")) * (16 * 784)

    def meta(**values):  # a value None removes the key
        merged = {**header["__metadata__"], **values}
        h = {**header, "__metadata__": {k: v for k, v in merged.items() if v is not None}}
        return join(h, body)

    def offsets(value):
        h = {**header, weight: {**w, "data_offsets": value}}
        return join(h, body)

    return {
        "length+8": struct.pack("<Q", n + 8) + data[8:], "length-8": struct.pack("<Q", n - 8) + data[8:],
        "length-0": struct.pack("<Q", 0) + data[8:], "length-2^63": struct.pack("<Q", 2**63) + data[8:],
        "length-whole-file": struct.pack("<Q", len(data) - 8) + data[8:],
        "shape-transposed": join({**header, weight: {**w, "shape": [784, 16]}}, body),
        "shape-2^62": join({**header, weight: {**w, "shape": [2**62, 16]}}, body),
        "shape-65-dims": join({**header, weight: {**w, "shape": [1] * 65}}, body),
        "shape-negative": join({**header, weight: {**w, "shape": [-16, -784]}}, body),
        "dtype-I32": join({**header, weight: {**w, "dtype": "I32"}}, body),
        "dtype-F64": join({**header, weight: {**w, "dtype": "F64"}}, body),
        "dtype-unknown": join({**header, weight: {**w, "dtype": "F8_E4M3"}}, body),
        "dtype-number": join({**header, weight: {**w, "dtype": 5}}, body),
        "offsets-overlap": offsets([w["data_offsets"][0] - 4, w["data_offsets"][1] - 4]),
        "offsets-beyond": offsets([w["data_offsets"][0] + 2**40, w["data_offsets"][1] + 2**40]),
        "offsets-reversed": offsets(list(reversed(w["data_offsets"]))),
        "offsets-negative": offsets([-1, w["data_offsets"][1]]),
        "offsets-float": offsets([float(w["data_offsets"][0]), w["data_offsets"][1]]),
        "offsets-one": offsets([w["data_offsets"][0]]),
        "offsets-2^64-1": offsets([w["data_offsets"][0], 2**64 - 1]),
        "tensor-missing": relaid(header, body, lambda es: [e for e in es if e[0] != "model.head.bias"]),
        "tensor-extra": relaid(header, body, lambda es: es + [["model.extra", "F32", [1], b"\0" * 4]]),
        "tensor-renamed": relaid(header, body, lambda es: edit_entry(es, "model.head.bias", name="model.head.bias2")),
        "momentum-missing": relaid(header, body, lambda es: [e for e in es if e[0] != "optim.0.momentum_buffer"]),
        "momentum-shape": relaid(header, body,
                                 lambda es: edit_entry(es, "optim.0.momentum_buffer", shape=[1], raw=b"\0" * 4)),
        "rng-short": relaid(header, body, lambda es: edit_entry(es, "rng.cpu", shape=[10], raw=b"\0" * 10)),
        "weights-nan": relaid(header, body, lambda es: edit_entry(es, weight, raw=nan)),
        "step-abc": meta(**{"paisoar.step": "abc"}), "step-minus-1": meta(**{"paisoar.step": "-1"}),
        "step-huge": meta(**{"paisoar.step": "99999999999999999999"}),
        "step-7": meta(**{"paisoar.step": "7", "train.step": "7"}),
        "train-step-abc": meta(**{"train.step": "abc"}), "loader-epoch-minus-5": meta(**{"train.loader_epoch": "-5"}),
        "loader-batch-huge": meta(**{"train.loader_batch": "999999999"}),
        "loader-samples-huge": meta(**{"train.loader_samples": "999999999"}),
        "loader-samples-odd": meta(**{"train.loader_samples": "7"}),
        "loader-epoch-later": meta(**{"train.loader_epoch": "1"}),
        "batch-size-half": meta(**{"train.batch_size": str(int(header["__metadata__"]["train.batch_size"]) // 2)}),
        "batch-size-missing": meta(**{"train.batch_size": None}),
        "epoch-loss-nan": meta(**{"train.epoch_loss_sum": "nan"}),
        "manifest-garbage": meta(**{"checkpoint.files": "[{"}),
        "manifest-lists-a-file": meta(**{"checkpoint.files": '{"zero-000000000002/zero-0-of-1.safetensors": '
                                                          '{"bytes": 10, "crc32": "00000000"}}'}),
        "manifest-missing": meta(**{"checkpoint.files": None}),
        "optim-groups-garbage": meta(**{"optim.groups": "[{"}), "optim-groups-empty": meta(**{"optim.groups": "[]"}),
        "optim-type-adam": meta(**{"optim.type": "torch::optim::Adam"}),
        "metadata-not-string": with_raw_header(data, split_text(data).replace('"paisoar.step":"2"', '"paisoar.step":2')),
        "tensor-twice": with_raw_header(data, split_text(data).replace(
            '{"__metadata__"', '{"model.head.bias":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__"', 1)),
        "deep-nesting": with_raw_header(data, '{"x":' + "[" * 100000 + "]" * 100000 + "}"),
        "header-list": with_raw_header(data, "[]"),
        "crc-removed": join(header, body, crc=False),
    }


def split_text(data):
    n = struct.unpack("<Q", data[:8])[0]
    return data[8:8 + n].decode().rstrip(" ")


def cases(seeds):
    data = (seeds.run / "checkpoints" / STEP2).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    out = [ckpt_case(seeds, "checkpoint/cut", f"@{at}", f"the only checkpoint, {STEP2}, cut to {at} bytes", write(data[:at]))
           for at in cut_offsets(len(data), 14, header=9)]
    for i, (at, value) in enumerate(flips(data, 10, seed=61, end=8 + n) + flips(data, 6, seed=62, start=8 + n)):
        out.append(ckpt_case(seeds, "checkpoint/flip", f"{i}@{at}={value:#04x}",
                             f"the only checkpoint, {STEP2}, byte {at} set to {value:#04x}",
                             write(with_byte(data, at, value))))
    harmless = {"loader-batch-huge": "train.loader_batch is a record for people, not read on resume (the position is "
                                     "train.loader_samples): it must resume at step 2"}
    for name in ("step-abc", "step-minus-1", "step-huge"):
        harmless[name] = "paisoar.step is a record of the save, not read on resume: it must resume at step 2 (the name's)"
    for name, damaged in lies(data).items():
        names = ("not finite", "non-finite", "NaN") if name == "weights-nan" else ()
        out.append(ckpt_case(seeds, "checkpoint/lie", name, f"the only checkpoint, {STEP2}, lying: {name} (CRCs right)",
                             write(damaged), accept=harmless.get(name), extra_names=names,
                             check=lambda path: resumed_at(2)))
    for at in (0, 8, n // 2, len(data) - 1):
        out.append(ckpt_case(seeds, "checkpoint/fallback", f"cut@{at}", f"{STEP2} cut to {at} bytes, step 1 intact",
                             write(data[:at]), True, FALLS_BACK))
    for i, (at, value) in enumerate(flips(data, 4, seed=63)):
        out.append(ckpt_case(seeds, "checkpoint/fallback", f"flip{i}@{at}={value:#04x}",
                             f"{STEP2} byte {at} set to {value:#04x}, step 1 intact", write(with_byte(data, at, value)),
                             True, FALLS_BACK))
    out += not_regular(seeds)
    out += changed_settings(seeds)
    return out


def changed_settings(seeds):
    """An intact checkpoint resumed with a setting changed since it was made:
    one a resume cannot take is refused naming the key, both values and the
    file; one it can take resumes."""
    def case(name, setting, refused):
        def prepare(where):
            run = copy_tree(seeds.run, where / "run")
            args = resume_args(seeds, run) + list(sets(setting))
            names = [setting.split("=")[0]] if refused else []
            return Prepared(args, names, check=None if refused else resumed_at(2))
        accept = None if refused else "a resume takes this change (the layout, the optimizer, the loader's threads)"
        return Case("checkpoint/changed-setting", name, f"resumed with {setting}", prepare, accept)
    return [case("train-limit", "data.train_limit=32", True), case("batch-size", "train.batch_size=16", True),
            case("model-hidden", "model.hidden=[8]", True), case("seed", "seed=7", True),
            case("workers", "data.workers=2", False), case("lr", "optimizer.lr=0.01", False)]


def not_regular(seeds):
    kinds = {"directory": lambda p: p.mkdir(), "fifo": lambda p: os.mkfifo(p),
             "dev-zero": lambda p: p.symlink_to("/dev/zero"), "dangling-symlink": lambda p: p.symlink_to("/nonexistent"),
             "sparse-6GiB": lambda p: sparse(p, 6 << 30)}
    out = []
    for kind, make in kinds.items():
        accept = FALLS_BACK if kind == "sparse-6GiB" else SKIPPED
        check = None if kind == "sparse-6GiB" else (lambda path: finished)
        out.append(ckpt_case(seeds, "checkpoint/not-regular", f"{STEP3}-{kind}", f"{STEP3} beside intact ones: {kind}",
                             lambda p, m=make: m(p.parent / STEP3), True, accept, check=check))

    def dir_is(make):
        def damage(p):
            checkpoints = p.parent
            for f in checkpoints.iterdir():
                f.unlink()
            checkpoints.rmdir()
            make(checkpoints)
        return damage
    for kind, make in {"file": lambda p: p.write_text("x"), "fifo": lambda p: os.mkfifo(p),
                       "dev-null": lambda p: p.symlink_to("/dev/null")}.items():
        out.append(ckpt_case(seeds, "checkpoint/not-regular", f"checkpoints-dir-{kind}",
                             f"the run's checkpoints directory is a {kind}", dir_is(make), extra_names=("checkpoints",)))
    return out


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)
