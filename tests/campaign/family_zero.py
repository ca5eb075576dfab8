"""A sharded ZeRO checkpoint damaged, read by `paisoar zero-consolidate DIR
OUT`: each rank's file cut at many offsets and flipped, metadata and piece
names lying with the integrity check made right (world, rank, run id,
stage, dtype, parameter list, piece ranges), the set of files wrong
(missing, extra, from another save, not regular), and outputs that cannot
be written. All must be refused naming the file, directory or output; where
exit 0 can be right (a lie in metadata consolidation does not read, an
unrelated file beside the shards) the output must be the intact set's model."""
import os
import shutil

from case import Case, Prepared
from mutate import cut_offsets, flips, with_byte
from safetensors_edit import join, split, tensors

RANK0, RANK1 = "zero-0-of-2.safetensors", "zero-1-of-2.safetensors"
UNUSED_LIE = ("the lie may sit in metadata that consolidation does not need: exit 0 is right only if the output "
              "is the intact set's model")


def zero_case(seeds, family, name, what, damage, file=None, out=None, accept=None, names=None):
    """Copies step 2's shard directory, calls damage(dir), consolidates into
    `out(where)` (default: where/full.safetensors)."""
    def prepare(where):
        shard_dir = where / "shards"
        shutil.copytree(seeds.zero_dirs()[-1], shard_dir)
        damage(shard_dir)
        target = out(where) if out else where / "full.safetensors"
        # A file may be named by its directory (quoted) and base name.
        named = names(where, shard_dir, target) if names else [str(shard_dir / file) if file else str(shard_dir)]
        if file and not names:
            named.append(f"'{shard_dir}'")
        check = same_output(target, seeds.zero_reference) if accept else None
        return Prepared(["zero-consolidate", shard_dir, target], named, check=check)
    return Case(family, name, what, prepare, accept)


def same_output(out, reference):
    def check(run):
        if not out.is_file():
            return f"it wrote no {out}"
        a, b = split(out.read_bytes()), split(reference.read_bytes())
        return None if a[1] == b[1] and tensors(a[0]) == tensors(b[0]) else "its output differs from the intact set's"
    return check


def write(file, data):
    return lambda d: (d / file).write_bytes(data)


def lies(data):
    header, body = split(data)
    meta = header["__metadata__"]
    piece = next(k for k in tensors(header) if k.startswith("model."))
    name, begin = piece.rsplit("@", 1)

    def with_meta(**values):
        m = {**meta, **values}
        return join({**header, "__metadata__": {k: v for k, v in m.items() if v is not None}}, body)

    def renamed(new):
        h = {(new if k == piece else k): v for k, v in header.items()}
        return join(h, body)

    return {
        "world-3": with_meta(**{"zero.world": "3"}), "world-0": with_meta(**{"zero.world": "0"}),
        "world-minus-1": with_meta(**{"zero.world": "-1"}), "world-huge": with_meta(**{"zero.world": "99999999999"}),
        "world-abc": with_meta(**{"zero.world": "abc"}), "world-missing": with_meta(**{"zero.world": None}),
        "rank-0": with_meta(**{"zero.rank": "0"}), "rank-2": with_meta(**{"zero.rank": "2"}),
        "rank-minus-1": with_meta(**{"zero.rank": "-1"}), "run-other": with_meta(**{"zero.run": "1"}),
        "stage-7": with_meta(**{"zero.stage": "7"}), "stage-0": with_meta(**{"zero.stage": "0"}),
        "dtype-half": with_meta(**{"zero.dtype": "Half"}), "dtype-foo": with_meta(**{"zero.dtype": "Foo"}),
        "params-garbage": with_meta(**{"zero.params": "[["}), "params-empty": with_meta(**{"zero.params": "[]"}),
        "params-shape": with_meta(**{"zero.params": meta["zero.params"].replace("[16,784]", "[16,785]")}),
        "params-extra": with_meta(**{"zero.params": meta["zero.params"][:-1] + ',["extra",[3]]]'}),
        "params-huge": with_meta(**{"zero.params": meta["zero.params"].replace("[16,784]", "[4294967296,4294967296]")}),
        "step-other": with_meta(**{"train.step": "1"}),
        "piece-begin-huge": renamed(f"{name}@999999999"), "piece-begin-minus-1": renamed(f"{name}@-1"),
        "piece-begin-abc": renamed(f"{name}@abc"), "piece-begin-shifted": renamed(f"{name}@{int(begin) + 1}"),
        "piece-no-at": renamed(name), "piece-unknown-param": renamed(f"model.nope@{begin}"),
    }


def file_cases(seeds):
    out = []
    shard_dir = seeds.zero_dirs()[-1]
    for file in (RANK0, RANK1):
        data = (shard_dir / file).read_bytes()
        short = file.split("-of")[0]
        for at in cut_offsets(len(data), 8, header=9):
            out.append(zero_case(seeds, "zero/cut", f"{short}@{at}", f"{file} cut to {at} bytes", write(file, data[:at]),
                                 file))
        for i, (at, value) in enumerate(flips(data, 8, seed=81 + len(out))):
            out.append(zero_case(seeds, "zero/flip", f"{short}-{i}@{at}={value:#04x}",
                                 f"{file} byte {at} set to {value:#04x}",
                                 write(file, with_byte(data, at, value)), file))
    for name, damaged in lies((shard_dir / RANK1).read_bytes()).items():
        out.append(zero_case(seeds, "zero/lie", name, f"{RANK1} lying: {name} (CRCs right)", write(RANK1, damaged), RANK1,
                             accept=UNUSED_LIE))
    return out


def set_cases(seeds):
    older = seeds.zero_dirs()[0]

    def replace(file, make):
        def damage(d):
            (d / file).unlink()
            make(d / file)
        return damage

    def swap(d):
        (d / RANK0).rename(d / "tmp")
        (d / RANK1).rename(d / RANK0)
        (d / "tmp").rename(d / RANK1)

    sets = {
        "rank-1-missing": (lambda d: (d / RANK1).unlink(), None),
        "rank-2-of-2-extra": (lambda d: shutil.copy(d / RANK1, d / "zero-2-of-2.safetensors"), "zero-2-of-2.safetensors"),
        "world-3-file-extra": (lambda d: shutil.copy(d / RANK1, d / "zero-0-of-3.safetensors"), "zero-0-of-3.safetensors"),
        "huge-world-name": (lambda d: shutil.copy(d / RANK1, d / "zero-0-of-99999999999999999999.safetensors"),
                            "zero-0-of-99999999999999999999.safetensors"),
        "rank-1-from-older-save": (lambda d: shutil.copy(older / RANK1, d / RANK1), RANK1),
        "ranks-swapped": (swap, RANK0),
        "rank-1-directory": (replace(RANK1, lambda p: p.mkdir()), RANK1),
        "rank-1-fifo": (replace(RANK1, os.mkfifo), RANK1),
        "rank-1-dev-zero": (replace(RANK1, lambda p: p.symlink_to("/dev/zero")), RANK1),
        "rank-1-dangling-symlink": (replace(RANK1, lambda p: p.symlink_to("/nonexistent")), RANK1),
        "rank-1-sparse-6GiB": (replace(RANK1, lambda p: sparse(p, 6 << 30)), RANK1),
        "rank-1-empty": (replace(RANK1, lambda p: p.write_bytes(b"")), RANK1),
        "empty-dir": (lambda d: [f.unlink() for f in d.iterdir()], None),
    }
    harmless = {"huge-world-name": "a name that is no shard's (its world overflows) is not one of this save's files",
                "ranks-swapped": "pieces carry their parameter and range, so the files' order does not matter"}
    out = [zero_case(seeds, "zero/set", name, f"the shard directory: {name.replace('-', ' ')}", damage, file,
                     accept=harmless.get(name)) for name, (damage, file) in sets.items()]
    out.append(zero_case(seeds, "zero/set", "unrelated-file", "a README beside the shards",
                         lambda d: (d / "README").write_text("notes\n"), None, None,
                         "a file that is not named like a shard is not one; the shards are intact"))
    outputs = {
        "missing-dir": lambda w: w / "nope" / "full.safetensors", "a-directory": lambda w: mkdir(w / "outdir"),
        "empty": lambda w: "", "proc": lambda w: "/proc/paisoar-campaign.safetensors",
        "the-shard-dir": lambda w: w / "shards",
    }
    for name, make in outputs.items():
        out.append(zero_case(seeds, "zero/output", name, f"the output path: {name.replace('-', ' ')}", lambda d: None,
                             out=make, names=lambda w, d, t: [str(t)] if str(t) else ["out"]))
    return out


def mkdir(path):
    path.mkdir()
    return path


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)


def cases(seeds):
    return file_cases(seeds) + set_cases(seeds)
